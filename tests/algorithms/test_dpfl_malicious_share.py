"""DPFL's malicious-collaborator share (algorithms.malicious_share) and the selection heat map
(plotting.selection_heatmap): hand-computed toys, a slow dense reference under hypothesis, the
label-flipping clients read from a real run's header, and bad input."""

from __future__ import annotations

import math
from typing import Any

import matplotlib
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import topofl as tf
from topofl.algorithms import malicious_share
from topofl.plotting.heatmaps import SELECTION_CODES
from topofl.records import Records

matplotlib.use("Agg")


@pytest.fixture(autouse=True)
def _close_figures() -> Any:
    import matplotlib.pyplot as plt

    yield
    plt.close("all")


def _rows(graphs: dict[int, list[list[int]]],
          metric: str = "realized_edges") -> list[dict[str, Any]]:
    return [{"run": "r", "round": t, "client": None, "metric": metric, "value": e}
            for t, e in graphs.items()]


def test_hand_computed_toy() -> None:
    # 5 clients, 3 and 4 malicious. Round 2: client 0 uses {1, 3, 4} (2 of 3 malicious),
    # client 1 uses {0} (0 of 1), client 2 uses {4} (1 of 1), malicious 3 uses {0} (ignored).
    # edges into benign clients: 5, from malicious: 3 -> share 0.6; per-client shares
    # 2/3, 0, 1 -> mean 5/9; benign clients picking a malicious one: 0 and 2 -> 2/3.
    rec = Records(rows=_rows({2: [[1, 0], [3, 0], [4, 0], [0, 1], [4, 2], [0, 3]],
                              5: []}))
    df = malicious_share(rec, malicious=[3, 4], n=5)
    assert df["round"].tolist() == [2, 5]
    first = df.iloc[0]
    assert (first["edges"], first["from_malicious"]) == (5, 3)
    assert first["share"] == pytest.approx(0.6)
    assert first["client_share"] == pytest.approx(5 / 9)
    assert first["picking"] == pytest.approx(2 / 3)
    # a round where nobody collaborates: no share (NaN), nobody picks a malicious client
    last = df.iloc[1]
    assert last["edges"] == 0 and math.isnan(last["share"]) and math.isnan(last["client_share"])
    assert last["picking"] == 0.0


def test_mask_and_omega_graph() -> None:
    rows = _rows({0: [[2, 0], [2, 1], [1, 0]]}, "dpfl_omega_edges") + _rows({0: [[1, 0]]})
    rec = Records(rows=rows)
    mask = np.array([False, False, True])
    om = malicious_share(rec, malicious=mask, graph="omega")
    assert om[["edges", "from_malicious"]].values.tolist() == [[3, 2]]
    assert om["client_share"].tolist() == pytest.approx([(1 / 2 + 1) / 2])
    assert malicious_share(rec, malicious=mask)["share"].tolist() == [0.0]


def _dense_reference(edges: list[list[int]], bad: np.ndarray) -> tuple[float, float, float]:
    """The obvious way: an (n, n) 0/1 matrix A[k, j] = 1 when k uses j, loops over clients."""
    n = bad.size
    A = np.zeros((n, n), dtype=int)
    for j, k in edges:
        A[k, j] = 1
    num = den = 0
    shares, picking = [], 0
    for k in range(n):
        if bad[k]:
            continue
        row = A[k]
        m = sum(row[j] for j in range(n) if bad[j])
        num, den = num + m, den + row.sum()
        if row.sum():
            shares.append(m / row.sum())
        picking += m > 0
    return (num / den if den else math.nan, float(np.mean(shares)) if shares else math.nan,
            picking / int((~bad).sum()))


@settings(max_examples=40, deadline=None)
@given(st.integers(2, 9).flatmap(lambda n: st.tuples(
    st.just(n),
    st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=30),
    st.lists(st.booleans(), min_size=n, max_size=n))))
def test_matches_dense_reference(case: tuple[int, list[tuple[int, int]], list[bool]]) -> None:
    n, pairs, flags = case
    bad = np.asarray(flags)
    if bad.all():
        bad[0] = False  # at least one benign client
    edges = sorted({(j, k) for j, k in pairs if j != k})
    df = malicious_share(Records(rows=_rows({0: [list(e) for e in edges]})), malicious=bad)
    share, client_share, picking = _dense_reference([list(e) for e in edges], bad)
    got = df.iloc[0]
    for a, b in ((got["share"], share), (got["client_share"], client_share),
                 (got["picking"], picking)):
        assert (math.isnan(a) and math.isnan(b)) or a == pytest.approx(b)


def test_reads_flipped_clients_from_a_run() -> None:
    data = tf.data.federate("digits", "iid", 6, seed=0, val=0.2, flip_labels=0.5)
    flipped = np.flatnonzero(data.flipped)
    model = tf.models.build_model("logistic", data.input_shape, data.num_classes, seed=0)
    res = tf.run("dpfl", data=data, model=model, rounds=2, budget=None, tau_init=0,
                 local_steps=1, batch_size=16, seed=0, spectral=False, weighting="uniform")
    rec = res.records
    df = malicious_share(rec)
    pd_ref = malicious_share(rec, malicious=flipped.tolist())
    assert df.equals(pd_ref) and len(df) == 2
    # the same numbers straight from the recorded edges
    edges = dict(rec.points("realized_edges", run=rec.runs[0]))
    for t, row in zip(df["round"], df.itertuples()):
        into = [(j, k) for j, k in edges[t] if k not in flipped]
        assert row.edges == len(into)
        assert row.from_malicious == sum(j in flipped for j, _ in into)


def test_bad_input() -> None:
    rec = Records(rows=_rows({0: [[1, 0]]}))
    with pytest.raises(ValueError, match="label-flipping"):
        malicious_share(rec)
    with pytest.raises(ValueError, match="graph must be"):
        malicious_share(rec, malicious=[1], graph="random")
    with pytest.raises(ValueError, match="dpfl_omega_edges"):
        malicious_share(rec, malicious=[1], graph="omega")
    with pytest.raises(ValueError, match=r"malicious must hold client ids in \[0, 2\].*got 5"):
        malicious_share(rec, malicious=[5], n=3)
    with pytest.raises(ValueError, match=r"malicious must hold client ids in \[0, 1\].*got -1"):
        malicious_share(rec, malicious=[-1])  # n = 2: the ids the graph holds
    with pytest.raises(ValueError, match=r"\[0, 0\].*'realized_edges' holds ids from 0 to 1"):
        malicious_share(rec, malicious=[0], n=1)
    with pytest.raises(TypeError, match="graph must be one of"):
        malicious_share(rec, malicious=[1], graph=["realized"])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="run must be a run id"):
        malicious_share(rec, malicious=[1], run=0)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="client ids"):
        malicious_share(rec, malicious=[0.5])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="Records"):
        malicious_share({"rows": []}, malicious=[1])  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="mask"):
        malicious_share(rec, malicious=np.array([True, False]), n=3)


# ------------------------------------------------------------------------ selection_heatmap
def test_selection_heatmap_codes_and_order() -> None:
    # Omega: 0 <- {1, 2}, 1 <- {0}, 2 <- {} ; round 3 chose 0 <- {2} and 1 <- {0}
    rows = (_rows({0: [[1, 0], [2, 0], [0, 1]]}, "dpfl_omega_edges")
            + _rows({0: [[1, 0], [2, 0]], 3: [[2, 0], [0, 1]]}))
    fig = tf.plotting.selection_heatmap(Records(rows=rows), [3], n=3)
    c = SELECTION_CODES
    omega, r3 = (np.asarray(ax.images[0].get_array()) for ax in fig.axes[:2])
    S, X, C, N = c["self"], c["chosen"], c["candidate"], c["none"]
    assert omega.tolist() == [[S, X, X], [X, S, N], [N, N, S]]
    assert r3.tolist() == [[S, C, X], [X, S, N], [N, N, S]]
    assert fig.axes[1].get_title() == "round 3 (2 chosen)"
    # reordering permutes rows and columns alike
    fig2 = tf.plotting.selection_heatmap(Records(rows=rows), [3], n=3, order=[2, 0, 1])
    got = np.asarray(fig2.axes[1].images[0].get_array())
    assert got.tolist() == r3[np.ix_([2, 0, 1], [2, 0, 1])].tolist()
    with pytest.raises(ValueError, match="permutation"):
        tf.plotting.selection_heatmap(Records(rows=rows), [3], n=3, order=[0, 0, 1])
    with pytest.raises(ValueError, match="no 'realized_edges' at round 7"):
        tf.plotting.selection_heatmap(Records(rows=rows), [7], n=3)
