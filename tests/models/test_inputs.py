"""The rule for a model's inputs: a real forward pass of two zero samples that changes nothing.

The reference is the rule as it was (the model run on the ``meta`` device, a copy run for
real only when that fails), kept verbatim in ``analysis/bench_startup.py`` (``old_rule``):
both accept the same models and refuse the others with the same message.
"""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import Tensor, nn

from tests._analysis import load
from topofl.models import check_model_input

_old_rule = load("bench_startup").old_rule  # the rule before issue 85, kept verbatim there


def _outcome(rule: Any, *args: Any, **kwargs: Any) -> str | None:
    try:
        rule(*args, **kwargs)
    except ValueError as exc:
        return str(exc)
    return None


class _Item(nn.Module):
    """``.item()`` in forward: no meta forward pass."""

    def __init__(self, n_in: int = 4) -> None:
        super().__init__()
        self.fc = nn.Linear(n_in, 3)

    def forward(self, x: Tensor) -> Tensor:
        out: Tensor = self.fc(x) * (1.0 + 0.0 * x.abs().max().item())
        return out


class _Counts(nn.Module):
    """A buffer written in place by forward, and a draw from the global generator."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 3)
        self.calls: Tensor
        self.register_buffer("calls", torch.zeros((), dtype=torch.int64))

    def forward(self, x: Tensor) -> Tensor:
        self.calls.add_(1)
        out: Tensor = self.fc(x + torch.randn_like(x))
        return out


class _Tuple(nn.Module):
    def forward(self, x: Tensor) -> tuple[Tensor, Tensor]:
        return x, x


class _Tied(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Linear(4, 4, bias=False)
        self.b = nn.Linear(4, 4, bias=False)
        self.b.weight = self.a.weight

    def forward(self, x: Tensor) -> Tensor:
        out: Tensor = self.b(torch.relu(self.a(x)))
        return out


def _bn_dropout() -> nn.Sequential:
    torch.manual_seed(0)
    return nn.Sequential(nn.Flatten(), nn.Linear(64, 32), nn.BatchNorm1d(32), nn.ReLU(),
                         nn.Dropout(0.5), nn.Linear(32, 10))


def _snapshot(model: nn.Module) -> dict[str, Any]:
    return {
        "state": {k: v.clone() for k, v in model.state_dict(keep_vars=True).items()},
        "ids": {k: (id(p), p.data_ptr(), p.requires_grad, p.dtype, p.device)
                for k, p in model.named_parameters()},
        "grads": {k: None if p.grad is None else p.grad.clone()
                  for k, p in model.named_parameters()},
        "training": [m.training for m in model.modules()],
        "rng": torch.get_rng_state(),
    }


def _assert_same(a: dict[str, Any], b: dict[str, Any]) -> None:
    assert a["state"].keys() == b["state"].keys()
    for k in a["state"]:
        assert a["state"][k].dtype == b["state"][k].dtype, k
        assert torch.equal(a["state"][k], b["state"][k]), k
    assert a["ids"] == b["ids"]
    assert a["grads"].keys() == b["grads"].keys()
    for k, g in a["grads"].items():
        h = b["grads"][k]
        assert (g is None) == (h is None), k
        assert g is None or torch.equal(g, h), k
    assert a["training"] == b["training"]
    assert torch.equal(a["rng"], b["rng"])


# ------------------------------------------------------------------ nothing of the model moves
@pytest.mark.parametrize("training", [True, False])
def test_batchnorm_and_dropout_change_nothing(training: bool) -> None:
    model = _bn_dropout().train(training)
    model(torch.randn(8, 1, 8, 8)).sum().backward()  # gradients to keep, stats moved once
    before = _snapshot(model)
    check_model_input(model, (1, 8, 8), 10)
    check_model_input(model, (1, 8, 8), 10, dtype=torch.float64)
    _assert_same(before, _snapshot(model))


def test_the_run_draws_the_same_numbers_after_a_check() -> None:
    model = _Counts()
    torch.manual_seed(3)
    check_model_input(model, (4,), 3)
    after_check = torch.rand(6)
    torch.manual_seed(3)
    assert torch.equal(after_check, torch.rand(6))
    assert int(model.calls) == 0  # the pass wrote to a clone of the buffer


def test_the_check_runs_the_models_own_parameters_in_the_given_dtype() -> None:
    seen: list[tuple[torch.dtype, tuple[int, ...]]] = []

    class Spy(nn.Linear):
        def forward(self, x: Tensor) -> Tensor:
            seen.append((x.dtype, tuple(x.shape)))
            assert self.weight.dtype == x.dtype
            return super().forward(x)

    model = Spy(4, 3)
    check_model_input(model, (4,), 3)
    check_model_input(model, (4,), 3, dtype=torch.float64)
    assert seen == [(torch.float32, (2, 4)), (torch.float64, (2, 4))]
    assert model.weight.dtype == torch.float32


def test_tied_parameters_and_parameterless_models() -> None:
    model = _Tied()
    before = _snapshot(model)
    check_model_input(model, (4,), 4)
    _assert_same(before, _snapshot(model))
    check_model_input(nn.Flatten(), (2, 3), 6)  # no parameters: float32 zeros on the CPU
    with pytest.raises(ValueError, match=r"returns 6 logits per sample.*7 classes"):
        check_model_input(nn.Flatten(), (2, 3), 7)


def test_item_in_forward_is_checked_for_real() -> None:
    check_model_input(_Item(), (4,), 3)
    with pytest.raises(ValueError, match=r"input_shape=\(5,\).*takes 4 input features"):
        check_model_input(_Item(), (5,), 3)


# ------------------------------------------------------------------ the run's process
_IMPORTS = """
import sys, warnings
warnings.simplefilter("ignore")
import topofl as tf
data = tf.data.federate(tf.data.load("digits"), "iid", 16, seed=0, val=0.2)  # DPFL's val
tf.run(sys.argv[1], "ring", data=data, model="logistic", rounds=2, spectral=False)
print(" ".join(m for m in ("sympy", "torch._dynamo") if m in sys.modules) or "none")
"""


@pytest.mark.parametrize("algorithm", ["dsgd", "sgp", "dpfl"])
def test_a_run_imports_neither_sympy_nor_dynamo(algorithm: str) -> None:
    """Issue 85, item 2: torch's Python meta kernels import sympy (36 MB) and their
    type-promotion wrapper ``torch._dynamo`` (38 MB more); neither the input check (the
    model's real forward pass) nor the memory planner's count of the state on the ``meta``
    device (push-sum's ``*_like`` buffers and de-biasing, DPFL's ``clone``, comparison and
    ``all``) runs them in a process of ``topofl.run`` on the CPU. In a fresh interpreter."""
    out = subprocess.run([sys.executable, "-c", _IMPORTS, algorithm], capture_output=True,
                         text=True, check=True)
    assert out.stdout.split()[-1] == "none", out.stdout


# ------------------------------------------------------------------ a model on the meta device
def test_a_model_on_meta_is_checked_there() -> None:
    with torch.device("meta"):
        model = _bn_dropout()
    check_model_input(model, (1, 8, 8), 10)
    assert all(p.device.type == "meta" for p in model.parameters())
    with pytest.raises(ValueError, match=r"input_shape=\(1, 8, 9\).*72 values"):
        check_model_input(model, (1, 8, 9), 10)
    with pytest.raises(ValueError, match=r"returns 10 logits per sample.*11 classes"):
        check_model_input(model, (1, 8, 8), 11)
    with pytest.raises(ValueError, match=r"input_shape=\(1, 8, 8\).*wrap it as"):
        check_model_input(model[1:], (1, 8, 8), 10)


# ------------------------------------------------------------------ the same verdicts as before
def _cases() -> list[tuple[str, nn.Module, tuple[int, ...], int | None]]:
    torch.manual_seed(0)
    conv = nn.Sequential(nn.Conv2d(3, 4, 3), nn.Flatten(), nn.LazyLinear(10))
    conv(torch.zeros(1, 3, 8, 8))  # materialise the lazy layer: 4 * 6 * 6 inputs
    return [
        ("flatten-linear", nn.Sequential(nn.Flatten(), nn.Linear(64, 10)), (1, 8, 8), 10),
        ("bare linear, images", nn.Linear(64, 10), (1, 8, 8), 10),
        ("bare linear, wrong width", nn.Linear(65, 10), (64,), 10),
        ("flatten, wrong width", nn.Sequential(nn.Flatten(), nn.Linear(63, 10)), (1, 8, 8),
         10),
        ("too few classes", nn.Linear(64, 9), (64,), 10),
        ("three-d output", nn.Conv1d(1, 4, 3), (1, 8), None),
        ("tuple output", _Tuple(), (4,), None),
        ("item, ok", _Item(), (4,), 3),
        ("item, wrong width", _Item(), (6,), 3),
        ("batchnorm-dropout", _bn_dropout(), (1, 8, 8), 10),
        ("batchnorm-dropout, flat", _bn_dropout(), (64,), 10),
        ("conv, ok", conv, (3, 8, 8), 10),
        ("conv, wrong channels", conv, (1, 8, 8), 10),
        ("conv, wrong size", conv, (3, 9, 9), 10),
        ("tied", _Tied(), (4,), 4),
    ]


@pytest.mark.parametrize("case", _cases(), ids=lambda c: c[0])
def test_the_same_verdict_and_message_as_the_meta_rule(
        case: tuple[str, nn.Module, tuple[int, ...], int | None]) -> None:
    _, model, shape, num_classes = case
    old = _outcome(_old_rule, model, shape, num_classes)
    new = _outcome(check_model_input, model, shape, num_classes)
    assert new == old


@settings(max_examples=25, deadline=None)
@given(n_in=st.integers(1, 12), shape=st.lists(st.integers(1, 4), min_size=1, max_size=3),
       n_out=st.integers(1, 5), num_classes=st.integers(1, 5), flatten=st.booleans())
def test_mlps_of_any_width_get_the_old_verdict(n_in: int, shape: list[int], n_out: int,
                                               num_classes: int, flatten: bool) -> None:
    layers: list[nn.Module] = [nn.Flatten()] if flatten else []
    model = nn.Sequential(*layers, nn.Linear(n_in, 8), nn.ReLU(), nn.Linear(8, n_out))
    args = (model, tuple(shape), num_classes)
    assert _outcome(check_model_input, *args) == _outcome(_old_rule, *args)


def test_bad_arguments_keep_their_type_errors() -> None:
    with pytest.raises(TypeError, match="model must be a torch.nn.Module, got int"):
        check_model_input(3, (4,))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="dtype must be a torch.dtype or None, got str"):
        check_model_input(nn.Linear(4, 3), (4,), dtype="float32")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="must contain positive sizes"):
        check_model_input(nn.Linear(4, 3), (0,))


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_on_cuda_the_devices_generator_is_left_as_it_was() -> None:
    model = _bn_dropout().cuda()
    before = _snapshot(model)
    cuda_rng = torch.cuda.get_rng_state()
    check_model_input(model, (1, 8, 8), 10)
    _assert_same(before, _snapshot(model))
    assert torch.equal(cuda_rng, torch.cuda.get_rng_state())
