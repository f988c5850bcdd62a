"""Deterministic initialisation: a function of the seed alone, global RNG left untouched."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import topofl.models as tm

SMALL = [
    ("logistic", (1, 8, 8), {}),
    ("mlp", (1, 8, 8), {"hidden": (16,)}),
    ("gn_lenet", (1, 15, 15), {}),
    ("cnn", (1, 16, 16), {}),
    ("resnet18_gn", (1, 8, 8), {"width": 8, "num_groups": 2}),
]


def _params(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in model.named_parameters()}


@pytest.mark.parametrize(("name", "shape", "kwargs"), SMALL, ids=[c[0] for c in SMALL])
def test_same_seed_same_parameters_different_seed_different(
    name: str, shape: tuple[int, ...], kwargs: dict[str, object]
) -> None:
    torch.manual_seed(123)
    a = _params(tm.build_model(name, shape, 5, seed=7, **kwargs))
    torch.manual_seed(456)  # the global state does not matter
    torch.rand(10)
    b = _params(tm.build_model(name, shape, 5, seed=7, **kwargs))
    c = _params(tm.build_model(name, shape, 5, seed=8, **kwargs))
    assert a.keys() == b.keys() == c.keys()
    for k in a:
        assert torch.equal(a[k], b[k]), k
    # every randomly initialised tensor (weights; GroupNorm's are constants) differs
    for k in a:
        if a[k].dim() >= 2:
            assert not torch.equal(a[k], c[k]), k


def test_global_torch_rng_untouched() -> None:
    torch.manual_seed(2024)
    state = torch.get_rng_state()
    expected = torch.rand(5)
    torch.set_rng_state(state)
    for name, shape, kwargs in SMALL:
        tm.build_model(name, shape, 5, seed=1, **kwargs)
    assert torch.equal(torch.get_rng_state(), state)
    assert torch.equal(torch.rand(5), expected)
    # a failing build restores it too
    torch.set_rng_state(state)
    with pytest.raises(ValueError):
        tm.build_model("cnn", (1, 8, 8), 5, seed=1)
    assert torch.equal(torch.get_rng_state(), state)


def test_numpy_global_rng_untouched() -> None:
    np.random.seed(5)
    expected = np.random.random(3)
    np.random.seed(5)
    tm.build_model("mlp", 64, 10, seed=0)
    assert np.array_equal(np.random.random(3), expected)


def test_seed_types_and_required() -> None:
    ss = np.random.SeedSequence(11)
    a = tm.build_model("logistic", 8, 2, seed=ss)
    b = tm.build_model("logistic", 8, 2, seed=np.random.SeedSequence(11))
    assert torch.equal(a.head.weight, b.head.weight)
    tm.build_model("logistic", 8, 2, seed=np.random.default_rng(0))
    with pytest.raises(TypeError, match="seed"):
        tm.build_model("logistic", 8, 2)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="seed must be"):
        tm.build_model("logistic", 8, 2, seed=None)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="non-negative"):
        tm.build_model("logistic", 8, 2, seed=-1)


def test_dtype_and_device() -> None:
    a = tm.build_model("cnn", (1, 16, 16), 3, seed=4)
    b = tm.build_model("cnn", (1, 16, 16), 3, seed=4, dtype=torch.float64, device="cpu")
    for (ka, pa), (kb, pb) in zip(a.named_parameters(), b.named_parameters()):
        assert ka == kb and pb.dtype == torch.float64
        assert torch.equal(pa.double(), pb)
    with pytest.raises(TypeError, match="floating torch.dtype"):
        tm.build_model("cnn", (1, 16, 16), 3, seed=4, dtype=torch.int64)
    with pytest.raises(TypeError, match="floating torch.dtype"):
        tm.build_model("cnn", (1, 16, 16), 3, seed=4, dtype="float64")  # type: ignore[arg-type]


def test_init_stream_is_not_the_root_stream() -> None:
    # the torch seed comes from generator_at(seed, INIT_STREAM), not from default_rng(seed)
    from topofl._utils.rng import generator_at

    s = int(generator_at(3, tm._registry.INIT_STREAM).integers(0, 2**63 - 1))
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(s)
        ref = tm.logistic(8, 2)
    assert torch.equal(ref.head.weight, tm.build_model("logistic", 8, 2, seed=3).head.weight)
