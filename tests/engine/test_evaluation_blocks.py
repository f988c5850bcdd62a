"""The evaluation's check of the parameters and its consensus distance, block of rows by block
above :data:`~topofl.engine.evaluation.EVAL_BLOCK_ENTRIES` entries: the blocks cover the rows
once (no block of one row), the values equal a slow per-row reference, and a run whose
evaluation goes by blocks records what the one-block evaluation records."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import topofl as tf
from topofl.engine import evaluation as ev
from topofl.engine.clients import LocalClients
from topofl.exceptions import ConvergenceError
from topofl.records import Recorder


@settings(max_examples=200, deadline=None)
@given(n=st.integers(0, 3000), cols=st.integers(1, 5000), budget=st.integers(1, 20000))
def test_row_blocks_cover_every_row_once(n: int, cols: int, budget: int) -> None:
    old = ev.EVAL_BLOCK_ENTRIES
    ev.EVAL_BLOCK_ENTRIES = budget
    try:
        blocks = ev.row_blocks(n, cols)
        largest = ev.eval_block_rows(n, cols)  # the closed form the memory model uses
    finally:
        ev.EVAL_BLOCK_ENTRIES = old
    assert largest == (max(b - a for a, b in blocks) if n > 0 else 0)
    assert blocks[0][0] == 0 and blocks[-1][1] == n
    assert all(a < b or n == 0 for a, b in blocks)
    assert all(b == a2 for (_, b), (a2, _) in zip(blocks, blocks[1:]))
    if n * cols <= budget or n < 4:
        assert blocks == [(0, n)]
    else:
        rows = max(2, budget // cols)
        assert all(b - a >= 2 for a, b in blocks)  # never a single row
        assert max(b - a for a, b in blocks) <= rows + 1


def test_row_blocks_bound_the_temporaries() -> None:
    # 10^6 logistic clients (P = 650): blocks of 1,613 rows, 1 Mi entries at most
    assert ev.eval_block_rows(10**6, 650) == 1613
    assert ev.eval_block_rows(10**6, 650) * 650 <= ev.EVAL_BLOCK_ENTRIES
    assert ev.eval_block_rows(100, 650) == 100  # small runs: one block, as before
    # asked at any n by the memory model: closed form, no list of 6 * 10**8 blocks
    assert ev.eval_block_rows(10**12, 650) == 1613


def _small_blocks(monkeypatch: pytest.MonkeyPatch, entries: int) -> None:
    monkeypatch.setattr(ev, "EVAL_BLOCK_ENTRIES", entries)


@pytest.mark.parametrize("entries", [7, 64, 500])
def test_squared_distances_by_blocks_equal_the_per_row_reference(
        monkeypatch: pytest.MonkeyPatch, entries: int) -> None:
    g = torch.Generator().manual_seed(0)
    x = torch.randn(53, 11, generator=g, dtype=torch.float64)
    center = x.mean(dim=0)
    _small_blocks(monkeypatch, entries)
    assert len(ev.row_blocks(53, 11)) > 1
    got = ev.squared_distances(x, center)
    slow = torch.tensor([sum((float(v) - float(c)) ** 2 for v, c in zip(row, center))
                         for row in x], dtype=torch.float64)
    torch.testing.assert_close(got, slow, rtol=1e-12, atol=0)
    # float32: the same as the one-block path within float32 rounding
    x32, c32 = x.float(), center.float()
    one = ((x32 - c32) ** 2).sum(dim=1)
    torch.testing.assert_close(ev.squared_distances(x32, c32), one, rtol=1e-6, atol=0)


def test_squared_distances_of_a_view_of_columns(monkeypatch: pytest.MonkeyPatch) -> None:
    x = torch.arange(60, dtype=torch.float64).reshape(10, 6)
    view = x[:, 2:5]  # the shared columns of a body-only algorithm: not contiguous
    _small_blocks(monkeypatch, 8)
    center = view.mean(dim=0)
    torch.testing.assert_close(ev.squared_distances(view, center),
                               ((view - center) ** 2).sum(dim=1), rtol=1e-12, atol=0)


@pytest.mark.parametrize("bad_row", [0, 4, 5, 17, 18])
def test_check_finite_by_blocks_names_the_first_bad_client(
        monkeypatch: pytest.MonkeyPatch, bad_row: int) -> None:
    _small_blocks(monkeypatch, 20)  # blocks of 2 rows of 9 entries (and a last one of 3)
    x = torch.zeros(19, 9)
    ev.check_finite(LocalClients(19), x, 3, Recorder(None))  # finite: nothing raised
    x[bad_row, 4] = float("nan")
    x[18, 0] = float("inf")
    with pytest.raises(ConvergenceError, match=f"client {bad_row} are not finite"):
        ev.check_finite(LocalClients(19), x, 3, Recorder(None))


def _run(**kw: Any) -> Any:
    data = tf.data.federate("synthetic:n_samples=400,dim=6,num_classes=3,seed=0", "iid", 20,
                            seed=0)
    return tf.run("dsgd", tf.topologies.ring(20), data, "logistic", 2, seed=1,
                  dtype="float64", batch_size=4, lr=0.3, progress=False, **kw)


def test_a_run_evaluated_by_blocks_records_the_same_numbers(
        monkeypatch: pytest.MonkeyPatch) -> None:
    whole = _run()
    _small_blocks(monkeypatch, 50)  # P = 21: blocks of 2 rows
    assert len(ev.row_blocks(20, 21)) == 10
    blocked = _run()
    a = {(r["round"], r["client"], r["metric"]): r["value"] for r in whole.records.rows}
    b = {(r["round"], r["client"], r["metric"]): r["value"] for r in blocked.records.rows}
    assert a.keys() == b.keys()
    for k, v in a.items():
        if isinstance(v, float) and not k[2].endswith("time"):  # wall times differ
            assert np.isclose(b[k], v, rtol=1e-12, atol=0), k
    assert any(k[2] == "consensus_distance" for k in a)
