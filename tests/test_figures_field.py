"""The field results (issue 35): the exact-averaging math by hand, the bytes and accuracy
readings of CHOCO's result, and every script at ``--quick`` with its numbers checked against
its records (opt in: ``pytest -m figures``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp

import topofl as tf
from tests._figures import (
    assert_readable,
    quick_out_fixture,  # noqa: F401  (the quick_out fixture)
    run_quick,
    script,
    verdict,
)
from topofl import figures

FIELD = ("field_tracking", "field_choco", "field_teleportation", "field_exact_averaging")


@pytest.fixture(autouse=True)
def _close_figures() -> Any:
    import matplotlib.pyplot as plt

    yield
    plt.close("all")


def test_field_scripts_are_listed_with_their_claims() -> None:
    names = figures.results.available()
    for name in FIELD:
        assert names[name].startswith("Field claim"), name
        meta = figures.claim_of(name)
        assert meta["title"].startswith("Field: ") and meta["claim"], name
    assert figures.margin("field_choco", "bytes") == pytest.approx(0.1)


# ------------------------------------------------------------------ exact averaging (math)


@pytest.mark.parametrize(("n", "k", "tau", "exact"), [
    (2, 1, 1, True), (3, 1, 2, False), (4, 1, 2, True), (6, 1, 3, False), (16, 1, 4, True),
    (9, 2, 2, True), (10, 2, 3, False), (27, 2, 3, True), (8, 3, 2, True), (12, 3, 2, False),
    (12, 5, 2, True), (8, 5, 2, False), (36, 5, 2, True), (200, 1, 8, False),
])
def test_tau_and_the_family_statement_by_hand(n: int, k: int, tau: int, exact: bool) -> None:
    mod = script("field_exact_averaging")
    assert mod["tau_of"](n, k) == tau
    assert mod["family_says_exact"](n, k) is exact
    # the statement agrees with the product of one period of the library's matrices
    tv = tf.topologies.k_peer_exponential(n, k)
    prod = np.eye(n)
    for t in range(tau):
        prod = tv.at(t).W.toarray() @ prod
    assert np.allclose(prod, np.full((n, n), 1 / n), atol=1e-12) is exact


def test_rounds_to_tolerance_on_hand_made_sequences() -> None:
    mod = script("field_exact_averaging")
    rounds_to = mod["rounds_to"]
    opts = {"tol": 1e-12, "vectors": 4, "seed": 0, "max_rounds": 50}
    J = sp.csr_array(np.full((5, 5), 0.2))
    assert rounds_to([J], 5, **opts) == 1  # the complete graph averages in one round
    assert rounds_to([sp.csr_array(np.eye(5))], 5, **opts) is None  # the identity never does
    # W = (1 - a) I + a J contracts every disagreement by exactly (1 - a) a round: the first
    # t with (1 - a)^t <= 1e-12 is the count, whatever the start vectors
    a = 0.5
    W = sp.csr_array((1 - a) * np.eye(6) + a * np.full((6, 6), 1 / 6))
    want = int(np.ceil(np.log(1e-12) / np.log(1 - a)))
    assert rounds_to([W], 6, **{**opts, "max_rounds": 100}) == want
    # a periodic sequence: two rounds of the 4-node hypercube average exactly after 2
    pair = [tf.topologies.base_graph(4, k=1).at(t).W for t in range(2)]
    assert rounds_to(pair, 4, **opts) == 2


def test_measure_reads_every_graph_at_small_n() -> None:
    mod = script("field_exact_averaging")
    rows = {(r["k"], r["n"]): r for r in mod["measure"](9)}
    assert (1, 8) in rows and (5, 9) in rows and (5, 5) not in rows  # k <= n - 1 only
    r = rows[(1, 8)]
    assert r["family_exact"] and r["kp_exact"] == 3 and r["kp"] == 3 and r["base_exact"] == 3
    r = rows[(2, 6)]  # 6 does not divide 3^2: never exact, yet Base-3 is (2 x 3)
    assert not r["family_exact"] and r["kp_exact"] is None and r["base_exact"] == 2
    assert r["kp"] is not None and r["kp"] > r["base"]
    assert rows[(1, 2)]["static"] == 1  # two nodes: the exponential graph is complete


# ------------------------------------------------------------------ CHOCO: bytes readings


def _one(acc: list[float], sent: list[float]) -> Any:
    rows = [{"run": "a", "round": t, "client": None, "metric": m, "value": v}
            for t, (x, b) in enumerate(zip(acc, sent))
            for m, v in (("global_acc_mean", x), ("bytes", b))]
    return tf.records.Records(rows=rows, configs={"a": {"seed": 0}})


def test_bytes_to_the_target_and_accuracy_at_a_budget() -> None:
    mod = script("field_choco")
    rec = _one([0.2, 0.5, 0.9, 0.95], [100.0, 200.0, 300.0, 400.0])
    assert mod["bytes_to"](rec, 0.85) == 300.0
    # never reached: the whole run plus one round (400 bytes over 4 rounds: 100 a round)
    assert mod["bytes_to"](rec, 0.99) == 500.0
    assert mod["accuracy_at_bytes"](rec, 250.0) == 0.5
    assert mod["accuracy_at_bytes"](rec, 400.0) == 0.95
    assert np.isnan(mod["accuracy_at_bytes"](rec, 50.0))


# ------------------------------------------------------------------ scripts at --quick


@pytest.mark.figures
@pytest.mark.parametrize("name", FIELD)
def test_field_quick_content(name: str, quick_out: Path) -> None:
    fig = run_quick(name, quick_out)
    assert fig is not None
    assert_readable(fig)
    png = quick_out / f"{name}.png"
    assert 5000 < png.stat().st_size < 150_000
    md, v = verdict(name, quick_out)
    heads = [c for c in v["checks"] if c["headline"]]
    assert heads and set(v["headline"]) == {c["name"] for c in heads}
    if name == "field_exact_averaging":  # graph math: no seeds, decided at every scale
        assert v["seeds"] == [] and v["verdict"] != "inconclusive at this scale"
        assert all(c["outcome"] in ("pass", "fail") for c in v["checks"])
        return
    assert v["seeds"] == [0] and v["verdict"] == "inconclusive at this scale"  # one seed
    for c in v["checks"]:
        assert "values" in c and ("convergence" in c or "horizon" in c), c["name"]
    # every curve's final mean accuracy in the Markdown is the one its records hold
    runs = quick_out / "runs" / name
    for folder in sorted(p for p in runs.iterdir() if p.is_dir()):
        rec = tf.records.load_many(folder)
        for run in rec.runs:
            final = float(rec.series("global_acc_mean", run=run)[1][-1])
            assert f"{final:.4f}" in md, (folder.name, run)


@pytest.mark.figures
def test_field_choco_bytes_match_the_ledger(quick_out: Path) -> None:
    run_quick("field_choco", quick_out)
    v = json.loads((quick_out / "field_choco.json").read_text(encoding="utf-8"))
    folder = quick_out / "runs" / "field_choco"
    per_round = {}
    for cfg in ("field_choco_dsgd", "field_choco_topk", "field_choco_qsgd"):
        rec = tf.records.load_many(folder / cfg)
        (run,) = rec.runs
        x, b = rec.series("bytes", run=run)
        per_round[cfg] = float(b[-1]) / (int(x[-1]) + 1)
    # D-SGD sends the float32 model (650 numbers) on each of the ring's 2 x 16 arcs a round
    assert per_round["field_choco_dsgd"] == 650 * 4 * 32
    # the compressors cut the bytes a message several-fold
    assert per_round["field_choco_topk"] < per_round["field_choco_dsgd"] / 4
    assert per_round["field_choco_qsgd"] < per_round["field_choco_dsgd"] / 4
    head = next(c for c in v["checks"] if c["headline"])
    assert head["kind"] == "below" and head["threshold"] == 1.0 and "horizon" in head
