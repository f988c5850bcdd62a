"""Gossip equals the dense product; the batched and per-client executors agree."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

import topofl as tf
from topofl.engine import ParamLayout
from topofl.engine.executors import BatchedExecutor, LoopExecutor
from topofl.engine.gossip import Mixer


@pytest.mark.parametrize("dense_max", [0, 10_000])
@settings(max_examples=20, deadline=None)
@given(n=st.integers(4, 40), p=st.integers(1, 300), s=st.integers(0, 1000))
def test_mix_equals_dense_reference(dense_max: int, n: int, p: int, s: int) -> None:
    topo = tf.topologies.random_regular(n, 3 - (n % 2), seed=s)
    X = torch.randn(n, p, dtype=torch.float64, generator=torch.Generator().manual_seed(s))
    ref = topo.to_dense() @ X.numpy()
    # tile_bytes small so that several column tiles are used
    mixer = Mixer(torch.device("cpu"), torch.float64, dense_max=dense_max, tile_bytes=n * 8 * 32)
    Y = X.clone()
    mixer.mix_(topo, Y)
    np.testing.assert_allclose(Y.numpy(), ref, rtol=1e-12, atol=1e-12)
    # only some columns
    Z = X.clone()
    mixer.mix_(topo, Z, cols=slice(0, p // 2))
    np.testing.assert_allclose(Z[:, : p // 2].numpy(), ref[:, : p // 2], rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(Z[:, p // 2 :].numpy(), X[:, p // 2 :].numpy())
    w = torch.ones(n, dtype=torch.float64)
    mixer.mix_vector_(topo, w)
    np.testing.assert_allclose(w.numpy(), topo.to_dense().sum(axis=1), rtol=1e-12)


def test_mix_directed_orientation() -> None:
    import networkx as nx

    topo = tf.Topology.from_networkx(nx.DiGraph([(0, 1)]), weights="push_sum")
    X = torch.tensor([[1.0], [0.0]], dtype=torch.float64)
    Mixer(torch.device("cpu"), torch.float64).mix_(topo, X)
    assert X.flatten().tolist() == [0.5, 0.5]  # node 0 pushed half its mass to node 1


class TinyCNN(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(1, 3, 3, padding=1), nn.GroupNorm(1, 3), nn.ReLU(), nn.Flatten()
        )
        self.head = nn.Linear(3 * 4 * 4, 5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.body(x))


def _setup(model: nn.Module, n: int, dtype: torch.dtype):  # type: ignore[no-untyped-def]
    model = model.to(dtype)
    layout = ParamLayout.from_model(model, head=["head.weight", "head.bias"])
    g = torch.Generator().manual_seed(0)
    flat = torch.randn(n, layout.num_params, dtype=dtype, generator=g) * 0.3
    x = torch.randn(n, 6, 1, 4, 4, dtype=dtype, generator=g)
    y = torch.randint(0, 5, (n, 6), generator=g)
    return model, layout, flat, x, y


@pytest.mark.parametrize(("dtype", "tol"), [(torch.float64, 1e-10), (torch.float32, 1e-4)])
@pytest.mark.parametrize("part", ["all", "body", "head"])
def test_executors_agree_after_several_steps(dtype: torch.dtype, tol: float, part: str) -> None:
    model, layout, flat, x, y = _setup(TinyCNN(), 5, dtype)
    ex_b, ex_l = BatchedExecutor(model, layout, chunk_size=2), LoopExecutor(model, layout)
    a, b = flat.clone(), flat.clone()
    ga, gb = torch.zeros_like(a), torch.zeros_like(b)
    cols = layout.cols(part)  # type: ignore[arg-type]
    for _ in range(4):
        la = ex_b.grad(a, x, y, part, ga)  # type: ignore[arg-type]
        lb = ex_l.grad(b, x, y, part, gb)  # type: ignore[arg-type]
        np.testing.assert_allclose(la.numpy(), lb.numpy(), rtol=tol, atol=tol)
        a[:, cols] -= 0.1 * ga[:, cols]
        b[:, cols] -= 0.1 * gb[:, cols]
    np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=tol, atol=tol)
    # columns outside the trained part never move
    other = [c for c in range(layout.num_params) if not cols.start <= c < cols.stop]
    np.testing.assert_array_equal(a[:, other].numpy(), flat[:, other].numpy())
    la_ = ex_b.logits(a, x)
    lb_ = ex_l.logits(b, x)
    np.testing.assert_allclose(la_.numpy(), lb_.numpy(), rtol=tol, atol=tol)


def test_executor_matches_plain_autograd_per_client() -> None:
    model, layout, flat, x, y = _setup(TinyCNN(), 3, torch.float64)
    out = torch.zeros_like(flat)
    BatchedExecutor(model, layout).grad(flat, x, y, "all", out)
    for i in range(3):
        ref = TinyCNN().to(torch.float64)
        views = layout.views(flat)
        with torch.no_grad():
            for k, p in ref.named_parameters():
                p.copy_(views[k][i])
        loss = torch.nn.functional.cross_entropy(ref(x[i]), y[i])
        loss.backward()
        gv = layout.views(out)
        for k, p in ref.named_parameters():
            np.testing.assert_allclose(gv[k][i].numpy(), p.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_loop_executor_names_the_client() -> None:
    model, layout, flat, x, y = _setup(TinyCNN(), 3, torch.float64)
    y = y.clone()
    y[1, 0] = 99  # invalid class for client 1
    with pytest.raises(tf.engine.executors.ClientError, match="client=1"):
        LoopExecutor(model, layout).grad(flat, x, y, "all", torch.zeros_like(flat))


def test_layout_views_and_flatten_round_trip() -> None:
    model = TinyCNN()
    layout = ParamLayout.from_model(model, head=["head.weight", "head.bias"])
    assert layout.names[-2:] == ("head.weight", "head.bias")
    assert layout.num_params == sum(p.numel() for p in model.parameters())
    params = {k: v.detach().unsqueeze(0).repeat(2, *([1] * v.dim()))
              for k, v in model.named_parameters()}
    flat = layout.flatten(params)
    views = layout.views(flat)
    for k in layout.names:
        assert torch.equal(views[k], params[k])
        assert views[k].data_ptr() >= flat.data_ptr()  # a view, not a copy
    with pytest.raises(ValueError, match="head names"):
        ParamLayout.from_model(model, head=["nope"])
    with pytest.raises(ValueError, match="part must be"):
        layout.cols("neck")  # type: ignore[arg-type]


def test_threaded_loop_equals_sequential_loop_and_names_lowest_bad_client() -> None:
    model, layout, flat, x, y = _setup(TinyCNN(), 6, torch.float64)
    seq, thr = LoopExecutor(model, layout), LoopExecutor(model, layout, threads=3)
    ga, gb = torch.zeros_like(flat), torch.zeros_like(flat)
    la = seq.grad(flat, x, y, "all", ga)
    lb = thr.grad(flat, x, y, "all", gb)
    np.testing.assert_allclose(ga.numpy(), gb.numpy(), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(la.numpy(), lb.numpy(), rtol=1e-12)
    bad = y.clone()
    bad[4, 0] = 99
    bad[2, 1] = 99
    with pytest.raises(tf.engine.executors.ClientError, match="client=2"):
        thr.grad(flat, x, bad, "all", gb)


@pytest.mark.parametrize("name", ["logistic", "mlp"])
def test_batched_linear_path_equals_loop(name: str) -> None:
    kw = {"hidden": (7,)} if name == "mlp" else {}
    model = tf.models.build_model(name, (1, 4, 4), 5, seed=0, dtype=torch.float64, **kw)
    layout = ParamLayout.from_model(model)
    g = torch.Generator().manual_seed(1)
    flat = torch.randn(4, layout.num_params, dtype=torch.float64, generator=g)
    x = torch.randn(4, 6, 1, 4, 4, dtype=torch.float64, generator=g)
    y = torch.randint(0, 5, (4, 6), generator=g)
    ga, gb = torch.zeros_like(flat), torch.zeros_like(flat)
    BatchedExecutor(model, layout).grad(flat, x, y, "all", ga)
    LoopExecutor(model, layout).grad(flat, x, y, "all", gb)
    np.testing.assert_allclose(ga.numpy(), gb.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(BatchedExecutor(model, layout).logits(flat, x).numpy(),
                               LoopExecutor(model, layout).logits(flat, x).numpy(), rtol=1e-12)
