"""Collaboration graphs drawn from records: what is drawn, not only that a figure exists.

Checks: one arrow per recorded edge with widths ordered as the weights, one node per client
coloured by its dominant label (same label, same colour) or benign/malicious (from the records'
label-flipping clients), the adjacency matrix of a round (receiver row, sender column), and the
heat map panels holding those matrices (reordered when asked).
"""

from __future__ import annotations

from typing import Any

import matplotlib
import numpy as np
import pytest
from matplotlib.colors import to_rgba

import topofl as tf
from topofl.plotting import BENIGN_COLOR, MALICIOUS_COLOR
from topofl.records import Records

matplotlib.use("Agg")


@pytest.fixture(autouse=True)
def _close_figures() -> Any:
    import matplotlib.pyplot as plt

    yield
    plt.close("all")


def _rec(graphs: dict[int, list[tuple[int, int, float]]], *, n: int = 5,
         flipped: list[int] | None = None) -> Records:
    rows = []
    for t, es in graphs.items():
        rows.append({"run": "r", "round": t, "client": None, "metric": "realized_edges",
                     "value": [[j, i] for j, i, _ in es]})
        rows.append({"run": "r", "round": t, "client": None, "metric": "realized_weights",
                     "value": [w for _, _, w in es]})
    engine: dict[str, Any] = {"data": {"partition": {"num_clients": n}}}
    if flipped is not None:
        engine["data"]["label_flip"] = {"fraction": len(flipped) / n, "clients": flipped,
                                        "permutation": [1, 0]}
    return Records(rows=rows, config={"n_clients": n}, engine=engine)


GRAPHS = {0: [(1, 0, 0.5), (2, 0, 0.25), (0, 3, 0.1), (4, 3, 0.8)],
          3: [(1, 2, 0.5), (3, 4, 0.5)]}


def test_edges_drawn_with_widths_by_weight_and_nodes_by_label() -> None:
    rec = _rec(GRAPHS)
    labels = np.array([[5, 1], [4, 0], [0, 3], [1, 9], [7, 2]])  # dominant 0, 0, 1, 1, 0
    fig = tf.plotting.collaboration_graph(rec, 0, labels=labels)
    ax = fig.axes[0]
    assert len(ax.patches) == 4  # one arrow per recorded edge
    widths = sorted(p.get_linewidth() for p in ax.patches)
    assert widths == sorted(widths) and widths[0] < widths[-1]
    # widths are affine in the weights: 0.1 < 0.25 < 0.5 < 0.8
    w = np.array([0.1, 0.25, 0.5, 0.8])
    np.testing.assert_allclose(widths, 0.3 + 2.7 * w / 0.8, rtol=1e-6)
    faces = ax.collections[0].get_facecolors()
    assert faces.shape[0] == 5
    dom = labels.argmax(1)
    for i in range(5):
        for j in range(5):
            assert np.allclose(faces[i], faces[j]) == (dom[i] == dom[j])
    assert ax.get_title() == "realized graph, round 0 (4 edges)"
    # the default round is the last one recorded
    last = tf.plotting.collaboration_graph(rec, labels=dom).axes[0]
    assert len(last.patches) == 2 and "round 3" in last.get_title()


def test_malicious_colours_from_the_records() -> None:
    rec = _rec(GRAPHS, flipped=[1, 4])
    ax = tf.plotting.collaboration_graph(rec, 0, color_by="malicious").axes[0]
    faces = ax.collections[0].get_facecolors()
    for i in range(5):
        want = MALICIOUS_COLOR if i in (1, 4) else BENIGN_COLOR
        np.testing.assert_allclose(faces[i][:3], to_rgba(want)[:3])
    # arrows from a malicious sender are red: edges 1->0 and 4->3
    red_rgb = to_rgba(MALICIOUS_COLOR)[:3]
    red = [p for p in ax.patches if np.allclose(p.get_edgecolor()[:3], red_rgb)]
    assert len(red) == 2
    labels = {t.get_text() for t in ax.get_legend().get_texts()}
    assert labels == {"benign", "malicious"}
    # explicit ids override; without either, a clear error
    ax2 = tf.plotting.collaboration_graph(rec, 0, color_by="malicious", malicious=[0]).axes[0]
    n_red = sum(np.allclose(f[:3], to_rgba(MALICIOUS_COLOR)[:3])
                for f in ax2.collections[0].get_facecolors())
    assert n_red == 1
    with pytest.raises(ValueError, match="malicious"):
        tf.plotting.collaboration_graph(_rec(GRAPHS), 0, color_by="malicious")


def test_bad_input() -> None:
    rec = _rec(GRAPHS)
    with pytest.raises(ValueError, match="labels="):
        tf.plotting.collaboration_graph(rec, 0)
    with pytest.raises(ValueError, match="no 'realized_edges' at round 1"):
        tf.plotting.collaboration_graph(rec, 1, labels=[0] * 5)
    with pytest.raises(ValueError, match="color_by"):
        tf.plotting.collaboration_graph(rec, 0, color_by="degree")
    with pytest.raises(ValueError, match="dpfl_omega_edges"):
        tf.plotting.collaboration_graph(rec, 0, graph="omega", labels=[0] * 5)
    with pytest.raises(ValueError, match=r"labels as counts must have shape \(n=5, L\)"):
        tf.plotting.collaboration_graph(rec, 0, labels=[[0, 1, 2]])
    with pytest.raises(ValueError, match="labels must be"):
        tf.plotting.collaboration_graph(rec, 0, labels=[0, 1])


def test_adjacency_matrix_and_heatmap_panels() -> None:
    rec = _rec(GRAPHS)
    A = tf.plotting.adjacency_matrix(rec, 0)
    expected = np.zeros((5, 5))
    expected[0, 1], expected[0, 2], expected[3, 0], expected[3, 4] = 0.5, 0.25, 0.1, 0.8
    np.testing.assert_array_equal(A, expected)
    fig = tf.plotting.adjacency_heatmap(rec, [0, 3])
    panels = [ax for ax in fig.axes if ax.images]
    assert len(panels) == 2
    shown = np.ma.filled(panels[0].images[0].get_array(), 0.0)
    np.testing.assert_array_equal(shown, expected)
    assert panels[0].get_title() == "round 0 (4 edges)"
    assert panels[0].get_xlabel() == "sender j" and panels[0].get_ylabel() == "receiver i"
    np.testing.assert_array_equal(np.ma.filled(panels[1].images[0].get_array(), 0.0),
                                  tf.plotting.adjacency_matrix(rec, 3))
    # a reordering permutes rows and columns alike
    order = [4, 3, 2, 1, 0]
    fig = tf.plotting.adjacency_heatmap(rec, [0], order=order)
    np.testing.assert_array_equal(np.ma.filled(fig.axes[0].images[0].get_array(), 0.0),
                                  expected[np.ix_(order, order)])
    with pytest.raises(ValueError, match="permutation"):
        tf.plotting.adjacency_heatmap(rec, [0], order=[0, 0, 1, 2, 3])


@pytest.mark.slow
def test_dpfl_run_draws_its_omega_and_realized_graphs() -> None:
    data = tf.data.federate("digits", "pathological", 6, classes_per_client=2, seed=0,
                            val=0.2, flip_labels=0.5)
    model = tf.models.build_model("mlp", data.input_shape, data.num_classes, seed=0,
                                  hidden=(8,))
    res = tf.run("dpfl", data=data, model=model, rounds=2, seed=0, budget=2, tau_init=0.5,
                 local_steps=1, batch_size=16, spectral=False)
    rec = res.records
    omega = res.state.own.omega
    ax = tf.plotting.collaboration_graph(rec, 0, graph="omega", color_by="malicious").axes[0]
    assert len(ax.patches) == int(omega.sum())
    n_red = sum(np.allclose(f[:3], to_rgba(MALICIOUS_COLOR)[:3])
                for f in ax.collections[0].get_facecolors())
    assert n_red == int(data.flipped.sum()) == 3
    ax = tf.plotting.collaboration_graph(rec, 1, labels=data.label_distributions).axes[0]
    assert len(ax.patches) == int(res.state.own.collab.sum())
    A = tf.plotting.adjacency_matrix(rec, 0, graph="omega")
    assert np.array_equal(A > 0, omega.numpy())
    np.testing.assert_allclose(A.sum(1)[omega.sum(1).numpy() > 0] < 1, True)
