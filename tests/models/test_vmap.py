"""The property the batched engine needs: vmap(grad) over stacked parameters = per-client autograd.

Each client has its own parameters (built from its own seed) and its own mini-batch; the
batched gradients of ``torch.func.vmap(torch.func.grad(loss))`` over the stacked parameters
``[n_clients, *shape]`` must equal the gradients of one ``functional_call`` + autograd per client.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
import torch
import torch.nn.functional as F
from torch.func import functional_call, grad, vmap

import topofl.models as tm

N_CLIENTS, BATCH, CLASSES = 3, 4, 5

FAST = [
    ("logistic", (1, 8, 8), {}),
    ("logistic", (784,), {}),
    ("mlp", (1, 8, 8), {"hidden": (16, 8)}),
    ("gn_lenet", (3, 15, 15), {}),
    ("cnn", (3, 32, 32), {}),
    ("cnn", (1, 16, 16), {}),
    ("resnet18_gn", (1, 8, 8), {"width": 8, "num_groups": 2}),
    ("cnn1d", (1, 40), {}),
    ("cnn1d", (3, 9), {"channels": 4}),
]
SLOW = [
    ("gn_lenet", (3, 32, 32), {}),
    ("resnet18_gn", (3, 32, 32), {}),
]
TOL = {torch.float32: (1e-5, 1e-5), torch.float64: (1e-10, 1e-10)}  # (atol, rtol)
#: A float32 client whose two paths disagree must be on a kink: one of them departs from the
#: float64 gradient itself (rounding moved a ReLU's input across 0, or a GroupNorm's statistics
#: of a near-constant group), by at most this relative L2 error of the whole gradient (2.7e-3
#: measured: the full-size ResNet-18, client 1 of seed 0, on an AMD EPYC with AVX2 kernels; a
#: client mix-up or a wrong dtype moves it by O(1)), and at most one client of three may be.
FLIP_RTOL = 1e-2


def _ids(cases: list[tuple[str, tuple[int, ...], dict[str, Any]]]) -> list[str]:
    return [f"{n}-{'x'.join(map(str, s))}" for n, s, _ in cases]


def _stacked(
    name: str, shape: tuple[int, ...], kwargs: dict[str, Any], dtype: torch.dtype
) -> tuple[torch.nn.Module, dict[str, torch.Tensor]]:
    models = [
        tm.build_model(name, shape, CLASSES, seed=c, dtype=dtype, **kwargs)
        for c in range(N_CLIENTS)
    ]
    stacked = {
        k: torch.stack([dict(m.named_parameters())[k].detach() for m in models])
        for k, _ in models[0].named_parameters()
    }
    return models[0], stacked


def _agree(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor], atol: float,
           rtol: float) -> bool:
    return all(torch.allclose(a[k].double(), b[k].double(), atol=atol, rtol=rtol) for k in b)


def _relative_l2(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> float:
    diff = torch.cat([(a[k].double() - b[k].double()).flatten() for k in b])
    return float(diff.norm() / torch.cat([b[k].double().flatten() for k in b]).norm())


def _float64_grads(model: torch.nn.Module, stacked: dict[str, torch.Tensor], x: torch.Tensor,
                   y: torch.Tensor, c: int) -> dict[str, torch.Tensor]:
    """Client ``c``'s gradient in float64 at its float32 parameters and inputs: the truth
    both float32 paths round."""
    model64 = copy.deepcopy(model).double()
    params = {k: v[c].double().requires_grad_(True) for k, v in stacked.items()}
    value = F.cross_entropy(functional_call(model64, params, (x[c].double(),)), y[c])
    return dict(zip(params, torch.autograd.grad(value, list(params.values()))))


def _check(name: str, shape: tuple[int, ...], kwargs: dict[str, Any], dtype: torch.dtype) -> None:
    model, stacked = _stacked(name, shape, kwargs, dtype)
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(N_CLIENTS, BATCH, *shape, generator=gen, dtype=dtype)
    y = torch.randint(0, CLASSES, (N_CLIENTS, BATCH), generator=gen)

    def loss(params: dict[str, torch.Tensor], xb: torch.Tensor, yb: torch.Tensor) -> torch.Tensor:
        return F.cross_entropy(functional_call(model, params, (xb,)), yb)

    batched = vmap(grad(loss))(stacked, x, y)
    batched_loss = vmap(loss)(stacked, x, y)

    atol, rtol = TOL[dtype]
    flips = []
    for c in range(N_CLIENTS):
        params = {k: v[c].clone().requires_grad_(True) for k, v in stacked.items()}
        value = loss(params, x[c], y[c])
        grads = dict(zip(params, torch.autograd.grad(value, list(params.values()))))
        torch.testing.assert_close(batched_loss[c], value.detach(), atol=atol, rtol=rtol)
        assert all(batched[k].shape == stacked[k].shape for k in stacked)
        vmapped = {k: batched[k][c] for k in stacked}
        if _agree(vmapped, grads, atol, rtol) or dtype != torch.float32:
            for k, g in grads.items():
                torch.testing.assert_close(vmapped[k], g, atol=atol, rtol=rtol, msg=k)
            continue
        truth = _float64_grads(model, stacked, x, y, c)
        errors = (_relative_l2(vmapped, truth), _relative_l2(grads, truth))
        assert not (_agree(vmapped, truth, atol, rtol) and _agree(grads, truth, atol, rtol))
        assert max(errors) <= FLIP_RTOL, (c, errors)
        flips.append(c)
    assert len(flips) <= 1, f"clients {flips} disagree in float32: more than one kink"
    # the stacked parameters are not modified
    _, again = _stacked(name, shape, kwargs, dtype)
    for k in stacked:
        assert torch.equal(stacked[k], again[k])


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["f32", "f64"])
@pytest.mark.parametrize(("name", "shape", "kwargs"), FAST, ids=_ids(FAST))
def test_vmap_grad_equals_per_client_autograd(
    name: str, shape: tuple[int, ...], kwargs: dict[str, Any], dtype: torch.dtype
) -> None:
    _check(name, shape, kwargs, dtype)


@pytest.mark.slow
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["f32", "f64"])
@pytest.mark.parametrize(("name", "shape", "kwargs"), SLOW, ids=_ids(SLOW))
def test_vmap_grad_equals_per_client_autograd_full_size(
    name: str, shape: tuple[int, ...], kwargs: dict[str, Any], dtype: torch.dtype
) -> None:
    _check(name, shape, kwargs, dtype)


def test_vmap_shared_body_personal_head() -> None:
    # personalized use: body shared by every client (in_dims=None), heads stacked; the gradient
    # with respect to the head only, as when the body is frozen (PFedDST, FedRep).
    model = tm.build_model("mlp", (1, 8, 8), CLASSES, hidden=(16,), seed=0, dtype=torch.float64)
    body_names, head_names = tm.split_parameters(model)
    body = {k: v.detach() for k, v in model.named_parameters() if k in body_names}
    heads = {
        k: torch.stack(
            [
                dict(
                    tm.build_model(
                        "mlp", (1, 8, 8), CLASSES, hidden=(16,), seed=c, dtype=torch.float64
                    ).named_parameters()
                )[k].detach()
                for c in range(N_CLIENTS)
            ]
        )
        for k in head_names
    }
    gen = torch.Generator().manual_seed(1)
    x = torch.randn(N_CLIENTS, BATCH, 1, 8, 8, generator=gen, dtype=torch.float64)
    y = torch.randint(0, CLASSES, (N_CLIENTS, BATCH), generator=gen)

    def head_loss(
        head: dict[str, torch.Tensor],
        body: dict[str, torch.Tensor],
        xb: torch.Tensor,
        yb: torch.Tensor,
    ) -> torch.Tensor:
        return F.cross_entropy(functional_call(model, {**body, **head}, (xb,)), yb)

    g = vmap(grad(head_loss), in_dims=(0, None, 0, 0))(heads, body, x, y)
    for c in range(N_CLIENTS):
        h = {k: v[c].clone().requires_grad_(True) for k, v in heads.items()}
        ref = torch.autograd.grad(head_loss(h, body, x[c], y[c]), list(h.values()))
        for k, r in zip(h, ref):
            torch.testing.assert_close(g[k][c], r, atol=1e-12, rtol=1e-12)
