"""Every registry algorithm on 2 and 3 gloo ranks gives the records of the single-process run.

One launch per world size runs every algorithm in turn (forked processes: no re-import of
torch); the parent runs the same calls in one process. Two ranks run in the default suite,
three behind the ``distributed`` marker (``pytest -m distributed``). float64 throughout: the
records must agree to 1e-10 (they differ only by the order of floating-point sums).
"""

from __future__ import annotations

import functools
import math
from typing import Any

import pytest
import torch

import topofl as tf
from tests.distributed._launch import launch
from topofl.algorithms import ALGORITHMS
from topofl.figures.snapshot import algorithm_cases

N = 6


@functools.lru_cache(maxsize=1)
def _data() -> Any:
    return tf.data.federate("digits", "dirichlet", N, alpha=1.0, seed=0, val=0.1)


@functools.lru_cache(maxsize=1)
def _cases() -> dict[str, tuple[str, Any, dict[str, Any]]]:
    """name -> (algorithm, topology, keywords): every registry algorithm, with the options
    that take the sharded paths (the cases of the behaviour snapshot)."""
    return algorithm_cases(_data())


REFUSED = {"adpsgd", "gossip_learning",  # their events need every client in one process
           "gt_saga", "gt_sarah"}  # their per-sample gradients read every client's data


def _run(name: str) -> tuple[list[dict[str, Any]], int] | str:
    """The records of one case and the number of clients this process held (an error
    message for a refusal)."""
    algo, topo, kw = _cases()[name]
    try:
        res = tf.run(algo, topo, _data(), "mlp", 2, seed=0, dtype="float64", batch_size=8,
                     model_params={"hidden": [8]}, progress=False, **kw)
    except ValueError as exc:
        return f"ValueError: {exc}"
    return [dict(r) for r in res.records.rows], int(res.state.x.shape[0])


def _all(rank: int) -> dict[str, Any]:
    return {name: _run(name) for name in _cases()}


def _table(rows: list[dict[str, Any]]) -> dict[tuple[Any, ...], Any]:
    return {(r["round"], r["client"], r["metric"]): r["value"] for r in rows
            if r["metric"] != "wall_time"}


def _close(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or abs(a - b) <= 1e-10 * max(1.0, abs(a))
    if isinstance(a, list) and isinstance(b, list):  # per-client values, realized weights
        return len(a) == len(b) and all(_close(u, v) for u, v in zip(a, b))
    return bool(a == b)


@pytest.fixture(scope="module")
def single() -> dict[str, Any]:
    torch.set_num_threads(1)
    return {name: _run(name) for name in _cases()}


def test_every_registry_algorithm_has_a_case() -> None:
    assert {c[0] for c in _cases().values()} == set(ALGORITHMS)


@pytest.mark.parametrize("k", [2, pytest.param(3, marks=pytest.mark.distributed)])
def test_records_equal_single_process(k: int, single: dict[str, Any]) -> None:
    out = launch(k, _all, timeout=60.0, wait=600.0)
    assert all(s == "ok" for s, _ in out.values()), out
    for name, ref in single.items():
        got = out[0][1][name]
        if _cases()[name][0] in REFUSED:  # by its algorithm (a case may be a variant)
            assert isinstance(got, str) and "does not run distributed" in got, (name, got)
            assert not isinstance(ref, str), ref  # it does run in one process
            continue
        assert not isinstance(ref, str), (name, ref)
        assert not isinstance(got, str), (name, got)
        assert ref[1] == N
        held = [out[r][1][name][1] for r in range(k)]  # the clients were split, not copied
        assert sum(held) == N and max(held) < N, (name, held)
        a, b = _table(ref[0]), _table(got[0])
        assert set(a) == set(b), (name, set(a) ^ set(b))
        bad = {key: (a[key], b[key]) for key in a if not _close(a[key], b[key])}
        assert not bad, (name, bad)
        # the other ranks hold the same evaluation rows (not the graph rows of rank 0)
        for r in range(1, k):
            other = _table(out[r][1][name][0])
            assert other and all(_close(a[key], v) for key, v in other.items()), (name, r)
