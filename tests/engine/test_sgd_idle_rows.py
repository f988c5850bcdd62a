"""``sgd_step`` with idle rows (rate 0): the step of the moving rows alone, on copies of them.

The reference is the step as it was written before, every row through the full arithmetic
and the idle rows' momentum kept by ``torch.where``. An idle row's parameters then became
``x - 0 * step``: the same value wherever the step is finite (the tests keep ``-0.0`` out of
the parameters, whose sign that write could flip).
"""

from __future__ import annotations

import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import topofl as tf
from topofl.engine.pieces.local import sgd_step


def _full_rows_step(x, g, lr, *, momentum_buf=None, momentum=0.0, weight_decay=0.0,
                    nesterov=False, decay_point=None):
    """The slow reference: every row through the arithmetic, idle ones at rate 0."""
    if weight_decay:
        g.add_(x if decay_point is None else decay_point, alpha=weight_decay)
    if momentum_buf is not None and momentum:
        if bool((lr == 0).any()):
            frozen = (lr == 0).unsqueeze(1)
            momentum_buf.copy_(torch.where(frozen, momentum_buf, momentum_buf * momentum + g))
        else:
            momentum_buf.mul_(momentum).add_(g)
        step = g.add_(momentum_buf, alpha=momentum) if nesterov else momentum_buf
    else:
        step = g
    x.addcmul_(step, lr.unsqueeze(1), value=-1.0)


def _case(seed, n, p, dtype, idle_frac):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(n, p, generator=gen, dtype=torch.float64).to(dtype)
    x[x == 0] = 1.0  # no -0.0 (see the module docstring)
    g = torch.randn(n, p, generator=gen, dtype=torch.float64).to(dtype)
    buf = torch.randn(n, p, generator=gen, dtype=torch.float64).to(dtype)
    z = torch.randn(n, p, generator=gen, dtype=torch.float64).to(dtype)
    lr = torch.rand(n, generator=gen, dtype=torch.float64).to(dtype) * 0.1 + 0.01
    lr[torch.rand(n, generator=gen) < idle_frac] = 0.0
    return x, g, buf, z, lr


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(1, 40), p=st.integers(1, 300),
       dtype=st.sampled_from([torch.float32, torch.float64]),
       idle=st.sampled_from([0.0, 0.3, 0.8, 1.0]),
       momentum=st.sampled_from([0.0, 0.9]), weight_decay=st.sampled_from([0.0, 1e-3]),
       nesterov=st.booleans(), decay=st.booleans(), cols=st.sampled_from(["all", "head", "mid"]))
def test_moving_rows_equal_the_full_step(seed, n, p, dtype, idle, momentum, weight_decay,
                                         nesterov, decay, cols):
    """Parameters and momentum equal the full step's, element for element, on whole rows and
    on column blocks (a phase's columns are a strided view of the buffer): float64 bit for
    bit, float32 within a stated tolerance."""
    x, g, buf, z, lr = _case(seed, n, p, dtype, idle)
    c = {"all": slice(0, p), "head": slice(0, max(1, p // 3)),
         "mid": slice(p // 4, max(p // 4 + 1, 3 * p // 4))}[cols]
    ref_x, ref_buf = x.clone(), buf.clone()
    kw = dict(momentum=momentum, weight_decay=weight_decay, nesterov=nesterov)
    _full_rows_step(ref_x[:, c], g.clone()[:, c], lr, momentum_buf=ref_buf[:, c],
                    decay_point=z[:, c] if decay else None, **kw)
    sgd_step(x[:, c], g.clone()[:, c], lr, momentum_buf=buf[:, c],
             decay_point=z[:, c] if decay else None, **kw)
    if dtype == torch.float64:
        assert torch.equal(x, ref_x)
        assert torch.equal(buf, ref_buf)
    else:  # bit for bit on the AVX512 EPYC this was written on; another CPU may round otherwise
        torch.testing.assert_close(x, ref_x, rtol=1e-6, atol=1e-7)
        torch.testing.assert_close(buf, ref_buf, rtol=1e-6, atol=1e-7)


def test_idle_rows_are_not_written():
    """A client at rate 0 keeps its parameters and momentum bit for bit, even where its
    gradient is not finite (the full step wrote NaN there) and where a parameter is -0.0."""
    x = torch.tensor([[1.0, -0.0], [2.0, 3.0], [-0.0, 5.0]])
    buf = torch.ones(3, 2)
    g = torch.tensor([[float("nan"), 1.0], [1.0, 1.0], [-1.0, float("inf")]])
    lr = torch.tensor([0.0, 0.5, 0.0])
    sgd_step(x, g, lr, momentum_buf=buf, momentum=0.9, weight_decay=0.1)
    assert x[0].tolist() == [1.0, -0.0] and torch.signbit(x[0, 1])
    assert x[2].tolist() == [-0.0, 5.0] and torch.signbit(x[2, 0])
    assert buf[0].tolist() == [1.0, 1.0] and buf[2].tolist() == [1.0, 1.0]
    # the moving row: g + 0.1 x = [1.2, 1.3]; m = 0.9 + g = [2.1, 2.2]; x - 0.5 m
    assert torch.allclose(buf[1], torch.tensor([2.1, 2.2]))
    assert torch.allclose(x[1], torch.tensor([2.0 - 1.05, 3.0 - 1.1]))


def test_every_row_idle_moves_nothing():
    x, g, buf, _, _ = _case(0, 6, 7, torch.float32, 0.0)
    before, bbefore = x.clone(), buf.clone()
    sgd_step(x, g, torch.zeros(6), momentum_buf=buf, momentum=0.9, weight_decay=0.1)
    assert torch.equal(x, before) and torch.equal(buf, bbefore)


def test_heterogeneous_run_matches_the_full_rows_step(monkeypatch):
    """A whole run whose clients take different numbers of steps a round (Dirichlet sizes,
    epochs: most rows idle in the late steps of a round) with momentum and weight decay:
    its records and final state equal those of the full-rows step, float64."""
    cfg = dict(algorithm="dpfl", data="mnist1d:n_samples=2000,n_test=500,seed=0",
               model="mlp", model_params={"hidden": [16]}, n_clients=12,
               partition="dirichlet", partition_params={"alpha": 0.3, "val": 0.2},
               rounds=3, batch_size=8, lr=0.05, momentum=0.9, weight_decay=1e-3,
               local_epochs=1.0, dtype="float64", seed=0, progress=False)

    def run():
        res = tf.run(**cfg)
        rows = [r for r in res.records.rows if r["metric"] != "wall_time"]
        assert any(r["metric"] == "train_loss" for r in rows)
        return rows, res.state.x.clone()

    rec_new, x_new = run()
    monkeypatch.setattr(tf.engine.pieces.local, "sgd_step", _full_rows_step)
    rec_old, x_old = run()
    assert torch.equal(x_new, x_old)
    assert rec_new == rec_old
