"""cross_entropy_rows: F.cross_entropy's bits and gradient, through the transposed kernel where
it is taken (AVX-512, a row shorter than a vector), checked on the machine the tests run on."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from topofl.engine.crossentropy import PAD, cross_entropy_rows, takes_transposed

AVX512 = torch.backends.cpu.get_cpu_capability() == "AVX512"


def _case(n: int, c: int, dtype: torch.dtype, scale: float, seed: int):
    g = torch.Generator().manual_seed(seed)
    z = (torch.randn(n, c, generator=g) * torch.rand(n, 1, generator=g) * scale).to(dtype)
    y = torch.randint(0, c, (n,), generator=g)
    w = torch.rand(n, generator=g).to(dtype)
    return z, y, w


def _loss_and_grad(fn, z, y, w):
    z = z.clone().requires_grad_(True)
    out = fn(z, y)
    (g,) = torch.autograd.grad((out * w).sum(), z)
    return out.detach(), g


def _reference(z, y):
    return F.cross_entropy(z, y, reduction="none")


@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 700), c=st.integers(1, 20),
       dtype=st.sampled_from([torch.float32, torch.float64]),
       scale=st.sampled_from([0.0, 1e-3, 1.0, 30.0, 300.0]), seed=st.integers(0, 2**31 - 1))
def test_same_bits_and_gradient_as_torch(n, c, dtype, scale, seed):
    z, y, w = _case(n, c, dtype, scale, seed)
    a, ga = _loss_and_grad(_reference, z, y, w)
    b, gb = _loss_and_grad(cross_entropy_rows, z, y, w)
    assert torch.equal(a, b)
    assert torch.equal(ga, gb)


@pytest.mark.parametrize("n", [1, PAD - 1, PAD, PAD + 1, 5000, 5120])
@pytest.mark.parametrize("dtype,c", [(torch.float32, 10), (torch.float32, 15),
                                     (torch.float64, 7), (torch.float32, 2)])
def test_the_padding_leaves_no_remainder(n, dtype, c):
    """Around the multiples of PAD (the remainder the padding removes) and at a local step's
    5,000 rows: the same bits, with the transposed path taken on AVX-512."""
    z, y, w = _case(n, c, dtype, 20.0, n)
    assert takes_transposed(z) == AVX512
    a, ga = _loss_and_grad(_reference, z, y, w)
    b, gb = _loss_and_grad(cross_entropy_rows, z, y, w)
    assert torch.equal(a, b) and torch.equal(ga, gb)


def test_matches_a_float64_reference_by_the_definition():
    """log(sum(exp(z))) - z[y], summed in float64 row by row: the slow obvious reference."""
    z, y, _ = _case(257, 10, torch.float32, 10.0, 3)
    got = cross_entropy_rows(z, y)
    want = [math.log(sum(math.exp(float(v)) for v in row)) - float(row[int(t)])
            for row, t in zip(z.double(), y)]
    assert torch.allclose(got.double(), torch.tensor(want, dtype=torch.float64),
                          rtol=1e-6, atol=1e-6)


def test_the_path_is_taken_only_where_the_bits_are_the_same():
    f32, f64 = torch.zeros(3, 15), torch.zeros(3, 7, dtype=torch.float64)
    assert takes_transposed(f32) == AVX512 and takes_transposed(f64) == AVX512
    # a row of a full vector or more: the last-dimension kernel's vector reduction differs
    assert not takes_transposed(torch.zeros(3, 16))
    assert not takes_transposed(torch.zeros(3, 8, dtype=torch.float64))
    assert not takes_transposed(torch.zeros(3, 10, dtype=torch.bfloat16))
    assert not takes_transposed(torch.zeros(2, 3, 10))


@pytest.mark.skipif(not AVX512, reason="the transposed path runs with the AVX-512 kernels")
@pytest.mark.parametrize("label", [-1, 10])
def test_a_label_out_of_range_is_a_value_error(label):
    y = torch.tensor([0, label, 3])
    with pytest.raises(ValueError, match=r"labels must lie in \[0, 10\)"):
        cross_entropy_rows(torch.zeros(3, 10), y)


def test_no_samples():
    out = cross_entropy_rows(torch.zeros(0, 10), torch.zeros(0, dtype=torch.long))
    assert out.shape == (0,)



@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("hidden,b", [([8], 8), ([64], 50), ([32, 16], 7)])
def test_the_executors_gradients_are_the_same_bits(monkeypatch, dtype, hidden, b):
    """The batched executor's gradients of an MLP (its products' backward passes run on the
    gradient of the logits) with the loss against F.cross_entropy's: the same bits. A
    gradient handed back transposed, though of the same values, moved them (the backward
    of ``_PaddedTranspose`` makes it contiguous)."""
    import topofl as tf
    from topofl.engine import executors, objectives
    from topofl.engine.layout import ParamLayout

    model = tf.models.build_model("mlp", (40,), 10, seed=0, hidden=hidden)
    layout = ParamLayout.from_model(model)
    gen = torch.Generator().manual_seed(b)
    n = 12
    flat = (torch.randn(n, layout.num_params, generator=gen) * 0.3).to(dtype)
    x = torch.randn(n, b, 40, generator=gen).to(dtype)
    y = torch.randint(0, 10, (n, b), generator=gen)
    out = []
    for fn in (cross_entropy_rows, _reference):
        monkeypatch.setattr(objectives, "cross_entropy_rows", fn)
        g = torch.zeros(n, layout.num_params, dtype=dtype)
        loss = executors.BatchedExecutor(model, layout).grad(flat, x, y, "all", g)
        out.append((loss, g))
    assert torch.equal(out[0][0], out[1][0]) and torch.equal(out[0][1], out[1][1])


@settings(max_examples=30, deadline=None)
@given(n=st.integers(0, 3000), c=st.integers(1, 20),
       dtype=st.sampled_from([torch.float32, torch.float64]), seed=st.integers(0, 2**31 - 1))
def test_without_a_gradient_the_same_bits(n, c, dtype, seed):
    """The evaluation's path (no gradient: log_softmax in place in the padded copy)."""
    z, y, _ = _case(n, c, dtype, 30.0, seed)
    with torch.no_grad():
        assert torch.equal(cross_entropy_rows(z, y), _reference(z, y))
    assert torch.equal(cross_entropy_rows(z, y), _reference(z, y))  # z needs no gradient
