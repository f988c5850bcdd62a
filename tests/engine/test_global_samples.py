"""The global metric on a fixed, seeded subsample of the global test set
(``RunConfig.eval_global_samples``): the size rule, the subsample, the rows against a slow
per-client scoring of the same samples, the records header, stacks, and nothing changed when
the whole set is scored."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import topofl as tf
from topofl.engine import config as config_mod
from topofl.engine.config import (
    EVAL_GLOBAL_BUDGET,
    EVAL_GLOBAL_MIN_SAMPLES,
    config_header,
    global_samples,
    run_hash,
)
from topofl.engine.evaluation import (
    GLOBAL_SUBSAMPLE_SEED,
    global_subsample,
    logsumexp_argmax,
    shared_sums,
)
from topofl.engine.layout import ParamLayout
from topofl.engine.stack import Member, run_stacked

SPEC = "synthetic:n_samples=600,n_test=150,dim=6,num_classes=4,seed=0"
DATA = tf.data.federate(SPEC, "iid", 6, seed=0)
G = int(DATA.global_test[0].shape[0])  # 150


def _run(**kw: Any) -> Any:
    return tf.run("dsgd", tf.topologies.ring(6), DATA, "mlp", 3, seed=1, dtype="float64",
                  batch_size=8, lr=0.2, model_params={"hidden": [5]}, progress=False, **kw)


def _slow_global(res: Any, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every client's accuracy and mean cross-entropy on the samples ``idx`` of the global
    test set: its own model (rebuilt from its row of the parameters), one client and one
    sample at a time."""
    xg, yg = DATA.global_test
    model = tf.models.build_model("mlp", tuple(DATA.input_shape), 4, hidden=[5],
                                   seed=0).double()
    layout = ParamLayout.from_model(model)
    views = layout.views(res.state.x)
    acc, loss = [], []
    for i in range(res.state.x.shape[0]):
        params = {k: v[i] for k, v in views.items()}
        ok, ls = 0, 0.0
        for j in idx.tolist():
            logits = torch.func.functional_call(model, params, (xg[j:j + 1].double(),))[0]
            ok += int(int(logits.argmax()) == int(yg[j]))
            ls += float(torch.nn.functional.cross_entropy(logits, yg[j]))
        acc.append(ok / len(idx))
        loss.append(ls / len(idx))
    return np.array(acc), np.array(loss)


# ----------------------------------------------------------------------------- the rule
def test_auto_keeps_the_whole_set_within_the_budget() -> None:
    assert EVAL_GLOBAL_BUDGET >= 1000 * 10_000  # paper_figures' largest: 1000 x 10,000
    assert global_samples("auto", 1000, 10_000) == 10_000
    assert global_samples("auto", 10_000, 20_000) == EVAL_GLOBAL_BUDGET // 10_000
    assert global_samples("auto", 10**6, 2 * 10**6) == EVAL_GLOBAL_MIN_SAMPLES
    assert global_samples("all", 10**6, 2 * 10**6) == 2 * 10**6
    assert global_samples(40, 6, G) == 40 and global_samples(10**6, 6, G) == G


@given(st.integers(1, 10**7), st.integers(1, 10**7), st.integers(1, 10**9),
       st.integers(1, 5000))
def test_auto_is_the_whole_set_or_a_subsample_whose_cost_is_linear(
        n: int, g: int, budget: int, minimum: int) -> None:
    k = global_samples("auto", n, g, budget=budget, minimum=minimum)
    assert 1 <= k <= g
    if n * g <= budget:
        assert k == g
    else:
        # the pairs scored: within the budget, or the minimum per client (linear in n)
        assert n * k <= max(budget, n * minimum)
        assert k == min(g, max(minimum, budget // n))


def test_the_setting_is_checked() -> None:
    for bad in (0, -3):
        with pytest.raises(ValueError, match="eval_global_samples"):
            tf.engine.RunConfig(rounds=1, eval_global_samples=bad)
    with pytest.raises(ValueError, match="must be 'auto', 'all' or an int >= 1, got 'some'"):
        tf.engine.RunConfig(rounds=1, eval_global_samples="some")
    for bad in (True, 2.5, None):
        with pytest.raises(TypeError, match="eval_global_samples must be 'auto', 'all' or an"):
            tf.engine.RunConfig(rounds=1, eval_global_samples=bad)  # type: ignore[arg-type]
    with pytest.raises(tf.exceptions.ConfigError, match="eval_global_samples"):
        tf.api.prepare("dsgd", "ring", eval_global_samples=0)


# ----------------------------------------------------------------------------- the subsample
@given(st.integers(1, 5000), st.data())
@settings(max_examples=50)
def test_the_subsample_is_seeded_distinct_sorted_and_reproducible(g: int, data: Any) -> None:
    k = data.draw(st.integers(0, g))
    seed = data.draw(st.integers(0, 2**32 - 1))
    idx = global_subsample(g, k, seed=seed)
    assert idx.shape == (k,) and np.all(np.diff(idx) > 0)
    assert k == 0 or (idx[0] >= 0 and idx[-1] < g)
    np.testing.assert_array_equal(idx, global_subsample(g, k, seed=seed))
    np.testing.assert_array_equal(
        idx, np.sort(np.random.default_rng(seed).choice(g, size=k, replace=False)))
    assert not idx.flags.writeable


def test_the_subsample_size_is_checked() -> None:
    with pytest.raises(ValueError, match=r"size must be in \[0, n_test\]=\[0, 5\], got 6"):
        global_subsample(5, 6, seed=0)


# ----------------------------------------------------------------------------- the rows
def test_a_subsample_scores_every_client_on_the_same_samples() -> None:
    res = _run(eval_global_samples=40)
    idx = global_subsample(G, 40, seed=GLOBAL_SUBSAMPLE_SEED)
    acc, loss = _slow_global(res, idx)
    rec = res.records
    assert rec.final("global_samples") == 40
    assert math.isclose(rec.final("global_acc_mean"), float(acc.mean()), rel_tol=1e-12)
    assert rec.final("global_acc_min") == pytest.approx(float(acc.min()), rel=1e-12)
    assert rec.final("global_acc_max") == pytest.approx(float(acc.max()), rel=1e-12)
    assert rec.final("global_acc_std") == pytest.approx(float(acc.std()), rel=1e-9, abs=1e-12)
    assert math.isclose(rec.final("global_loss"), float(loss.mean()), rel_tol=1e-10)
    # and they are not the whole set's numbers
    whole_acc, _ = _slow_global(res, np.arange(G))
    assert not np.allclose(acc, whole_acc)
    # the header says what was scored, and the hash is that of the size asked for
    assert res.records.engine["run"]["eval_global_samples"] == 40


def test_shared_sums_blocks_equal_one_pass() -> None:
    res = _run(eval_global=False)
    xg, yg = DATA.global_test
    ex = res.services.executor
    from topofl.engine.evaluation import score_chunks
    one = torch.stack(score_chunks(ex, res.state.x, [(xg, yg, None)], 6, shared=True), dim=1)
    blocked = shared_sums(ex, res.state.x, xg, yg)
    torch.testing.assert_close(blocked, one, rtol=1e-12, atol=1e-12)


def test_auto_above_the_budget_subsamples_and_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    # a budget below 6 clients x 150 samples: auto takes max(minimum, budget // 6) samples
    monkeypatch.setattr(config_mod.global_samples, "__kwdefaults__",
                        {"budget": 300, "minimum": 20})
    auto = _run()
    fixed = _run(eval_global_samples=50)
    assert auto.records.final("global_samples") == 50
    assert auto.records.engine["run"]["eval_global_samples"] == 50
    assert auto.records.engine["run_hash"] == fixed.records.engine["run_hash"]
    rows = [(r["round"], r["metric"], r["value"]) for r in auto.records.rows
            if r["metric"] != "wall_time"]
    assert rows == [(r["round"], r["metric"], r["value"]) for r in fixed.records.rows
                    if r["metric"] != "wall_time"]


def test_the_whole_set_changes_nothing() -> None:
    # within the budget: the rows of "auto" are those of the whole set ("all", and an int
    # at least the set's size), and no global_samples row
    base = _run()
    for other in (_run(eval_global_samples="all"), _run(eval_global_samples=G)):
        assert [r for r in other.records.rows if r["metric"] != "wall_time"] == [
            r for r in base.records.rows if r["metric"] != "wall_time"]
    assert not any(r["metric"] == "global_samples" for r in base.records.rows)
    # the header (and the run hash) of a run at the default is that of a run before the
    # field: the hash below was computed by the code before it (versions normalised)
    algo, model = tf.algorithms.dsgd(), tf.models.build_model("logistic", (1, 8, 8), 10, seed=0)
    digits = tf.data.federate("digits", "shards", 8, seed=0, val=0.2)
    # (eval_every=1: "auto" resolved to 1 at 8 clients when the hash was computed)
    for cfg in (tf.engine.RunConfig(rounds=2, eval_every=1),
                tf.engine.RunConfig(rounds=2, eval_every=1, eval_global_samples="all"),
                tf.engine.RunConfig(rounds=2, eval_every=1, eval_global_samples=10**6)):
        head = config_header(cfg, algo, tf.topologies.ring(8), digits, model)
        assert "eval_global_samples" not in head["run"]
        head["versions"] = {"topofl": "v", "torch": "t"}
        assert run_hash(head) == "acf884a8eda758b2"
    sub = config_header(tf.engine.RunConfig(rounds=2, eval_global_samples=100), algo,
                        tf.topologies.ring(8), digits, model)
    assert sub["run"]["eval_global_samples"] == 100  # 100 of digits' 360 test samples


def test_stacked_runs_score_the_subsample_of_their_runs_alone() -> None:
    members = []
    for s, k in ((0, 30), (1, 30), (2, 60)):
        cfg = tf.engine.RunConfig(rounds=2, seed=s, dtype="float64", batch_size=8,
                                  eval_global_samples=k)
        members.append(Member(cfg, tf.topologies.ring(6), tf.algorithms.dsgd(lr=0.1), DATA,
                              tf.models.build_model("logistic", DATA.input_shape, 4, seed=s)))
    for m, res in zip(members, run_stacked(members)):
        alone = tf.engine.run(*m[:5])
        for metric in ("global_acc_mean", "global_acc_min", "global_loss", "global_samples"):
            np.testing.assert_allclose(res.records.series(metric)[1],
                                       alone.records.series(metric)[1], rtol=1e-10)


_LOGIT = st.one_of(st.floats(-30, 30, width=32), st.sampled_from([0.0, 1.0, float("inf"),
                                                                   float("-inf")]))


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 5), st.integers(1, 7), st.integers(2, 12), st.data())
def test_fused_reduction_equals_logsumexp_and_argmax(rows: int, cols: int, classes: int,
                                                     data: Any) -> None:
    """The one-pass loss and prediction are ``torch.logsumexp``'s and ``argmax``'s to the bit,
    ties (the first largest) and infinite logits included."""
    flat = data.draw(st.lists(_LOGIT, min_size=rows * cols * classes,
                              max_size=rows * cols * classes))
    logits = torch.tensor(flat, dtype=torch.float32).view(rows, cols, classes)
    lse, pred = logsumexp_argmax(logits)
    ref = torch.logsumexp(logits, dim=-1)
    assert torch.equal(pred, logits.argmax(dim=-1))
    assert torch.equal(lse.isnan(), ref.isnan())
    assert torch.equal(lse.nan_to_num(0.0), ref.nan_to_num(0.0))
    loss = torch.nn.functional.cross_entropy(
        logits.reshape(-1, classes), torch.zeros(rows * cols, dtype=torch.long),
        reduction="none").view(rows, cols)
    finite = torch.isfinite(logits).all(dim=-1)
    assert torch.allclose((lse - logits[..., 0])[finite], loss[finite], rtol=1e-6, atol=1e-6)
