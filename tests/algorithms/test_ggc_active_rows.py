"""GGC and BGGC score, at each step, only the clients still deciding (``greedy_rows`` with a
losses function that takes ``rows``; ``env.losses(z, "val", rows=...)`` and
``split_sums(..., rows=...)`` underneath): the same decisions as scoring every client.

The reference is the obvious path: ``losses(z)`` on every row at every step (a losses function
without the keyword). Stated tolerance: float64 bit for bit (decisions, records and losses);
float32 losses of some rows within ``1e-6`` of the largest (bit for bit with this AVX-512
machine's kernels; a batched product over another number of clients may round otherwise on
another CPU, ``tests/engine/test_eval_live_rows.py``), and where the executor is not
``rows_independent`` (cnn1d's batched convolutions) every row is scored and the call picks,
bit for bit.
"""

from __future__ import annotations

import importlib
from typing import Any

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import topofl as tf
from topofl.engine import ParamLayout
from topofl.engine.evaluation import split_sums
from topofl.engine.executors import BatchedExecutor, LoopExecutor
from topofl.engine.layout import init_parameters

ggc_module = importlib.import_module("topofl.algorithms.ggc")  # tf.algorithms.ggc: the function


def _counting(ex: Any, seen: list[int]) -> None:
    """Record the clients of every ``logits`` call of ``ex`` (an instance attribute: the
    executor keeps its class)."""
    logits = ex.logits

    def spy(flat: torch.Tensor, *args: Any, **kw: Any) -> torch.Tensor:
        seen.append(int(flat.shape[0]))
        return logits(flat, *args, **kw)

    ex.logits = spy


CASES = [("logistic", "batched"), ("mlp", "batched"), ("mlp", "loop"), ("cnn1d", "batched")]


@pytest.mark.parametrize(("name", "kind"), CASES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_split_sums_of_some_rows_are_those_of_every_row(name: str, kind: str,
                                                        dtype: torch.dtype) -> None:
    shape = (1, 40) if name == "cnn1d" else (40,)
    data = tf.data.federate("mnist1d:n_samples=600,n_test=300,seed=0", "dirichlet", 6, seed=0,
                            val=0.2, alpha=0.5)
    model = tf.models.build_model(name, shape, 10, seed=0).to(dtype)
    layout = ParamLayout.from_model(model)
    flat = init_parameters(model, layout, 6, seed=0, same=False, device=torch.device("cpu"),
                           dtype=dtype)
    ex = BatchedExecutor(model, layout) if kind == "batched" else LoopExecutor(model, layout)
    every = split_sums(ex, flat, data, "val")
    seen: list[int] = []
    _counting(ex, seen)
    rows = torch.tensor([0, 2, 5])
    some = split_sums(ex, flat, data, "val", rows=rows)
    assert some.shape == (3, 3)
    independent = tf.engine.scoring.rows_independent(ex, torch.device("cpu"))
    assert independent is (name != "cnn1d")
    if kind == "batched":  # the loop scores one client a call either way
        assert max(seen) == (3 if independent else 6)
    picked = every.index_select(0, rows)
    assert torch.equal(some[:, 2], picked[:, 2])  # counts
    if dtype == torch.float64 or not independent:
        assert torch.equal(some, picked)
    else:
        assert float((some - picked).abs().max()) <= 1e-6 * float(picked.abs().max())


def test_losses_name_the_client_without_samples() -> None:
    data = tf.data.federate("digits", "iid", 3, seed=0)  # no validation split
    model = tf.models.build_model("logistic", (1, 8, 8), 10, seed=0)
    layout = ParamLayout.from_model(model)
    env = tf.engine.services.DataServices(layout, None, BatchedExecutor(model, layout), data,
                                          batch_size=8)
    with pytest.raises(ValueError, match="client 2 has no 'val' samples"):
        env.losses(torch.zeros(3, layout.num_params), "val", rows=torch.tensor([2]))


def _problem(n: int, seed: int) -> tuple[torch.Tensor, torch.Tensor, Any]:
    """Models, weights and a validation loss per client: client ``k`` scores a row by its
    squared distance to a target (float64)."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 3, generator=g, dtype=torch.float64)
    target = torch.randn(n, 3, generator=g, dtype=torch.float64)
    p = torch.rand(n, generator=g, dtype=torch.float64) + 0.5
    calls: list[int] = []

    def every(z: torch.Tensor) -> torch.Tensor:
        calls.append(int(z.shape[0]))
        return ((z - target) ** 2).sum(1)

    def some(z: torch.Tensor, rows: torch.Tensor | None = None) -> torch.Tensor:
        if rows is None:
            return every(z)
        calls.append(-int(rows.numel()))
        return ((z.index_select(0, rows) - target.index_select(0, rows)) ** 2).sum(1)

    return x, p, (every, some, calls)


@settings(max_examples=30, deadline=None)
@given(st.integers(2, 9), st.integers(0, 10_000), st.sampled_from([None, 1, 2, 3]),
       st.booleans(), st.floats(0.2, 1.0))
def test_scoring_the_deciding_rows_gives_the_same_decisions(
        n: int, seed: int, budget: int | None, running: bool, density: float) -> None:
    x, p, (every, some, calls) = _problem(n, seed)
    g = torch.Generator().manual_seed(seed + 1)
    cand = (torch.rand(n, n, generator=g) < density) & ~torch.eye(n, dtype=torch.bool)
    seeds = list(range(seed, seed + n))
    ids = np.arange(n)
    args = (x, ids, x, ids, cand, p)
    C1, d1 = ggc_module.greedy_rows(*args, every, budget, seeds, running)
    full = list(calls)
    calls.clear()
    C2, d2 = ggc_module.greedy_rows(*args, some, budget, seeds, running)
    assert torch.equal(C1, C2) and torch.equal(d1, d2)
    assert all(c == n for c in full)
    # the steps where some client had stopped score only the others
    scored = sum(abs(c) for c in calls)
    assert scored <= sum(full)
    if len(set(cand.sum(1).tolist())) > 1 and int(cand.sum(1).max()) > 0 and budget is None:
        assert any(c < 0 for c in calls) and scored < sum(full)


def test_dpfl_runs_the_same_scoring_only_the_deciding_clients(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A DPFL run (BGGC pre-processing, then GGC at every round, a budget) records the same
    collaborators and numbers whether the steps score every client or the deciding ones
    (float64), and the deciding ones are fewer."""
    data = tf.data.federate("digits", "dirichlet", 8, seed=0, val=0.2, alpha=0.3)
    scored: list[int] = []
    orig = tf.engine.services.DataServices.losses

    def spy(self: Any, x: torch.Tensor, split: str = "val", *,
            rows: torch.Tensor | None = None, fallback: str | None = None) -> torch.Tensor:
        scored.append(int(x.shape[0]) if rows is None else int(rows.numel()))
        return orig(self, x, split, rows=rows, fallback=fallback)

    monkeypatch.setattr(tf.engine.services.DataServices, "losses", spy)

    def run() -> list[tuple[Any, ...]]:
        res = tf.run(tf.algorithms.dpfl(lr=0.1, local_epochs=1, tau_init=1, budget=3), None,
                     data, "logistic", 3, seed=0, dtype="float64", batch_size=8,
                     progress=False, record_clients=True, eval_every=1)
        return [(r["round"], r.get("client"), r["metric"], r["value"])
                for r in res.records.rows if r["metric"] != "wall_time"]

    fast = run()
    some = sum(scored)
    scored.clear()
    monkeypatch.setattr(ggc_module, "takes_keyword", lambda fn, name: False)
    slow = run()
    assert fast == slow
    assert some < sum(scored)
