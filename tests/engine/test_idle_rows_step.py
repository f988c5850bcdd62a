"""The local step of a piece that ``skips_idle`` where few clients have a rate: every row's
loss from the forward pass, the moving rows' gradients from a copy laid out by
``residue_slots``; against the full step (``_step_moving`` answering ``None``).

float64 runs are compared bit for bit; float32 within a stated tolerance (the copy keeps each
row's address modulo 64 bytes, which gave the same bits on the AVX512 EPYC this was written
on, but another CPU's kernels may round otherwise)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import topofl as tf
from topofl.engine.executors import BatchedExecutor
from topofl.engine.layout import ParamLayout
from topofl.engine.local import LocalStepper
from topofl.engine.residues import residue_slots


@settings(max_examples=80, deadline=None)
@given(rows=st.sets(st.integers(0, 300), min_size=0, max_size=60),
       q=st.sampled_from([1, 2, 4, 8, 16]))
def test_residue_slots_keep_each_row_modulo_q(rows, q):
    rows = np.array(sorted(rows), dtype=np.int64)
    out = residue_slots(rows, q)
    filled = out[out >= 0]
    assert sorted(filled.tolist()) == rows.tolist()  # every row once
    slots = np.flatnonzero(out >= 0)
    assert np.all(slots % q == out[slots] % q)
    counts = np.bincount(rows % q, minlength=q) if rows.size else np.zeros(q, int)
    assert len(out) == q * int(counts.max())  # no longer than the largest class needs
    # within a class, rows keep their order
    for r in range(q):
        cls = out[r::q]
        cls = cls[cls >= 0]
        assert np.all(np.diff(cls) > 0)


def _aligned_copy(like, rows):
    el = like.element_size()
    raw = torch.empty(len(rows) * like[0].numel() + 64 // el, dtype=like.dtype)
    off = ((like.data_ptr() - raw.data_ptr()) % 64) // el
    out = raw[off: off + len(rows) * like[0].numel()].view(len(rows), *like.shape[1:])
    torch.index_select(like, 0, torch.as_tensor(rows), out=out)
    return out


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("hidden,inp,b", [([64], (40,), 16), ([32], (1, 28, 28), 5),
                                          ([100, 20], (40,), 7)])
def test_gradients_of_the_residue_copy_equal_the_full_call(dtype, hidden, inp, b):
    """The executor's gradients and losses of a copy laid out by ``residue_slots`` with the
    executor's ``residue_period``, against the same clients' in the full call."""
    model = tf.models.build_model("mlp", inp, 10, seed=0, hidden=hidden)
    layout = ParamLayout.from_model(model)
    ex = BatchedExecutor(model, layout)
    gen = torch.Generator().manual_seed(b)
    n, P = 60, layout.num_params
    flat = (torch.randn(n, P, generator=gen) * 0.1).to(dtype)
    x = torch.randn(n, b, *inp, generator=gen).to(dtype)
    y = torch.randint(0, 10, (n, b), generator=gen)
    full = torch.zeros(n, P, dtype=dtype)
    loss = ex.grad(flat, x, y, "all", full)
    q = ex.residue_period(x)
    assert q is not None and 64 % q == 0
    moving = np.sort(np.random.default_rng(b).choice(n, 17, replace=False))
    slots = residue_slots(moving, q)
    src = np.where(slots < 0, moving[0], slots)
    out = torch.zeros(len(src), P, dtype=dtype)
    loss2 = ex.grad(_aligned_copy(flat, src), _aligned_copy(x, src), y[src], "all", out)
    real = slots >= 0
    if dtype == torch.float64:
        assert torch.equal(out[real], full[slots[real]])
        assert torch.equal(loss2[real], loss[slots[real]])
    else:
        torch.testing.assert_close(out[real], full[slots[real]], rtol=1e-5, atol=1e-7)
        torch.testing.assert_close(loss2[real], loss[slots[real]], rtol=1e-6, atol=0)


def test_residue_period_is_none_off_the_plain_mlp():
    """Softmax regression in closed form and convolutions keep the full step."""
    lin = tf.models.build_model("logistic", (1, 8, 8), 10, seed=0)
    conv = tf.models.build_model("cnn1d", (1, 40), 10, seed=0)
    for m, x in ((lin, torch.zeros(2, 4, 1, 8, 8)), (conv, torch.zeros(2, 4, 1, 40))):
        ex = BatchedExecutor(m, ParamLayout.from_model(m))
        assert ex.residue_period(x) is None


#: heterogeneous runs (Dirichlet sizes, epochs): clients finish their steps at different
#: times, most rows idle late in a round
RUNS = {
    "dpfl": dict(algorithm="dpfl", momentum=0.9, weight_decay=1e-3, local_epochs=2.0),
    "ditto": dict(algorithm="ditto", momentum=0.9, local_epochs=2.0, personal_epochs=2.0),
    "fedprox": dict(algorithm="fedprox", momentum=0.9, local_epochs=2.0, mu=0.1),
    "dfedpgp": dict(algorithm="dfedpgp", topology="ring", momentum=0.9, weight_decay=1e-3,
                    local_epochs_u=2.0, local_epochs_v=1.0),
}


#: server methods with partial participation: the non-participants' rates are 0 by the
#: piece's mask (``Sampled.rates``), so their gradients are left out too
PARTIAL = {
    "fedavg-sampled": dict(algorithm="fedavg", momentum=0.9, local_epochs=2.0,
                           participation=0.05),
    "ditto-sampled": dict(algorithm="ditto", momentum=0.9, local_epochs=2.0,
                          personal_epochs=2.0, participation=0.05),
    "fedrep-sampled": dict(algorithm="fedrep", momentum=0.9, body_epochs=2.0,
                           head_epochs=1.0, participation=0.05),
}


def _run(kind, dtype, monkeypatch=None, counts=None, n_clients=16):
    cfg = dict(data="mnist1d:n_samples=3000,n_test=600,seed=0", model="mlp",
               model_params={"hidden": [16]}, n_clients=n_clients, partition="dirichlet",
               partition_params={"alpha": 0.2, "val": 0.2, "min_size": 20}, rounds=2,
               batch_size=8, lr=0.05, dtype=dtype, seed=0, progress=False,
               record_clients=True)
    cfg.update({**RUNS, **PARTIAL}[kind])
    res = tf.run(**cfg)
    rows = [r for r in res.records.rows if r["metric"] != "wall_time"]
    return rows, res.state.x.clone()


@pytest.mark.parametrize("kind", sorted(RUNS))
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_runs_equal_the_full_step(kind, dtype, monkeypatch):
    used = []
    orig = LocalStepper._step_moving

    def spy(self, *a, **k):
        out = orig(self, *a, **k)
        used.append(out is not None)
        return out

    monkeypatch.setattr(LocalStepper, "_step_moving", spy)
    rows, x = _run(kind, dtype)
    assert any(used), "the idle-rows path was never taken: the test would prove nothing"
    monkeypatch.setattr(LocalStepper, "_step_moving", lambda self, *a, **k: None)
    ref_rows, ref_x = _run(kind, dtype)
    assert [(r["round"], r["client"], r["metric"]) for r in rows] == \
        [(r["round"], r["client"], r["metric"]) for r in ref_rows]
    if dtype == "float64":
        assert torch.equal(x, ref_x)
        assert [r["value"] for r in rows] == [r["value"] for r in ref_rows]
    else:
        torch.testing.assert_close(x, ref_x, rtol=1e-4, atol=1e-5)
        def numbers(rs):
            return np.array([np.nan if r["value"] is None else r["value"] for r in rs
                             if r["value"] is None or isinstance(r["value"], float)], float)

        np.testing.assert_allclose(numbers(rows), numbers(ref_rows), rtol=1e-4, atol=1e-5)
        # the rest (DPFL's collaborators, counts) as they are
        assert [r["value"] for r in rows if not isinstance(r["value"], float | None)] == \
            [r["value"] for r in ref_rows if not isinstance(r["value"], float | None)]


@pytest.mark.parametrize("kind", sorted(PARTIAL))
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_partial_participation_takes_the_participants_gradients_alone(kind, dtype,
                                                                      monkeypatch):
    """4 clients of 80 take part in a round: the steps take the gradients of a copy of
    their rows (never of all 80), and the run is the full step's (float64 bit for bit)."""
    rows_taken = []
    grad = BatchedExecutor.grad

    def spy(self, flat, *a, **k):
        rows_taken.append(flat.shape[0])
        return grad(self, flat, *a, **k)

    monkeypatch.setattr(BatchedExecutor, "grad", spy)
    rows, x = _run(kind, dtype, n_clients=80)
    assert rows_taken and max(rows_taken) <= 80 / 2
    taken = sum(rows_taken)
    rows_taken.clear()
    monkeypatch.setattr(LocalStepper, "_step_moving", lambda self, *a, **k: None)
    ref_rows, ref_x = _run(kind, dtype, n_clients=80)
    assert taken < 0.5 * sum(rows_taken)  # the full step: every row, every step
    assert [(r["round"], r["client"], r["metric"]) for r in rows] == \
        [(r["round"], r["client"], r["metric"]) for r in ref_rows]
    values = [r["value"] for r in rows]
    ref_values = [r["value"] for r in ref_rows]
    if dtype == "float64":
        assert torch.equal(x, ref_x)
        assert values == ref_values
    else:
        torch.testing.assert_close(x, ref_x, rtol=1e-4, atol=1e-5)
        num = [(a, b) for a, b in zip(values, ref_values) if isinstance(a, float)]
        np.testing.assert_allclose(*np.array(num).T, rtol=1e-4, atol=1e-5)


def test_a_piece_without_skips_idle_keeps_the_full_step():
    """CliqueAveraging reads its clique's gradients: never the copy; SGD on the same
    executor takes it, and the logistic model's executor (closed form) never does."""
    data = tf.data.federate("mnist1d:n_samples=600,n_test=100,seed=0", "iid", 6, seed=0)
    mlp = tf.models.build_model("mlp", data.input_shape, 10, seed=0, hidden=[8])
    layout = ParamLayout.from_model(mlp)
    ex = BatchedExecutor(mlp, layout)

    def stepper(algo):
        return LocalStepper(ex, algo, data, 8, layout.num_params, torch.float32)

    assert not stepper(tf.algorithms.dsgd(lr=0.1, clique_averaging=True)).skips_idle
    assert stepper(tf.algorithms.dsgd(lr=0.1, momentum=0.9)).skips_idle
    assert not stepper(tf.algorithms.dsgd(lr=0.1)).skips_idle  # plain SGD: the fused kernel
