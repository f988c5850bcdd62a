"""D-Cliques graph figures: the histogram and clique drawing plot types, and Figs. 5, 17-19."""

from __future__ import annotations

from typing import Any

import matplotlib
import numpy as np
import pytest

import topofl as tf
from tests._figures import assert_readable

matplotlib.use("Agg")


@pytest.fixture(autouse=True)
def _close_figures() -> Any:
    import matplotlib.pyplot as plt

    yield
    plt.close("all")


# ------------------------------------------------------------------------------ histogram


def test_histogram_bars_are_the_counts_on_shared_bins() -> None:
    rng = np.random.default_rng(0)
    a, b = rng.uniform(0.2, 0.6, 100), rng.uniform(0.0, 0.1, 100)
    fig = tf.plotting.histogram({"random": a, "greedy swap": b}, bins=8, xlabel="skew")
    ax = fig.axes[0]
    assert len(ax.patches) == 2 * 8  # one bar per bin and sample
    edges = np.linspace(min(a.min(), b.min()), max(a.max(), b.max()), 9)
    heights = np.array([p.get_height() for p in ax.patches]).reshape(2, 8)
    np.testing.assert_array_equal(heights[0], np.histogram(a, edges)[0])
    np.testing.assert_array_equal(heights[1], np.histogram(b, edges)[0])
    assert heights.sum() == 200
    # side by side: the two bars of a bin share its span, the first one left
    lefts = np.array([p.get_x() for p in ax.patches]).reshape(2, 8)
    assert np.all(lefts[0] < lefts[1]) and np.all(lefts[1] < edges[1:])
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["random", "greedy swap"]
    assert ax.get_xlabel() == "skew" and ax.get_ylabel() == "count"
    assert_readable(fig)


def test_histogram_explicit_edges_and_constant_sample() -> None:
    fig = tf.plotting.histogram({"x": [0.0, 0.0, 0.0]}, bins=3)
    assert sorted(p.get_height() for p in fig.axes[0].patches) == [0.0, 0.0, 3.0]
    fig = tf.plotting.histogram({"x": [0.05, 0.15, 0.15, 0.9]}, bins=[0.0, 0.1, 0.2, 1.0])
    assert [p.get_height() for p in fig.axes[0].patches] == [1.0, 2.0, 1.0]


@pytest.mark.parametrize(("values", "bins", "match"), [
    ({}, 5, "at least one sample"),
    ({"a": []}, 5, "is empty"),
    ({"a": [0.1, float("nan")]}, 5, "non-finite"),
    ({"a": [0.1]}, 0, "bins must be >= 1"),
    ({"a": [0.1]}, [0.3, 0.2], "increasing"),
])
def test_histogram_bad_input(values: Any, bins: Any, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        tf.plotting.histogram(values, bins=bins)


# ------------------------------------------------------------------------- clique drawing


def test_dcliques_drawing_colours_nodes_by_clique() -> None:
    labels = np.eye(10)[np.arange(100) % 10]
    t = tf.topologies.dcliques(labels, 10, inter="fully_connected", seed=0)
    fig = tf.plotting.dcliques_drawing(t, labels=[i % 10 for i in range(100)])
    ax = fig.axes[0]
    nodes, intra, inter = ax.collections[:3]
    colours = nodes.get_facecolors()
    assert colours.shape[0] == 100
    g = t.group_index
    for k, members in enumerate(t.groups or ()):
        own = {tuple(np.round(colours[v], 6)) for v in members}
        assert len(own) == 1  # one colour per clique
        assert np.allclose(colours[members[0]], tf.plotting.clique_colours(10)[k])
    assert len({tuple(np.round(c, 6)) for c in colours}) == 10  # and ten distinct ones
    # 10 complete cliques: 450 grey edges; fully connected inter-clique: 45 black ones
    assert len(intra.get_segments()) == 450 and len(inter.get_segments()) == 45
    for (p, q) in inter.get_segments():  # black edges join different cliques
        offsets = nodes.get_offsets()
        u = int(np.argmin(np.linalg.norm(offsets - p, axis=1)))
        v = int(np.argmin(np.linalg.norm(offsets - q, axis=1)))
        assert g[u] != g[v]
    assert len(ax.texts) == 100  # the labels
    assert_readable(fig)


def test_dcliques_drawing_shows_removed_edges() -> None:
    t = tf.topologies.connect_cliques([range(10), range(10, 20)], remove_intra_edges=5, seed=0)
    ax = tf.plotting.dcliques_drawing(t).axes[0]
    assert [len(c.get_segments()) for c in ax.collections[1:3]] == [2 * 40, 1]


def test_dcliques_drawing_bad_input() -> None:
    with pytest.raises(ValueError, match="no groups"):
        tf.plotting.dcliques_drawing(tf.topologies.ring(5))
    t = tf.topologies.connect_cliques([[0, 1], [2, 3]], seed=0)
    with pytest.raises(ValueError, match="one entry per node"):
        tf.plotting.dcliques_drawing(t, labels=[1, 2])
    with pytest.raises(TypeError, match="Topology"):
        tf.plotting.dcliques_drawing(np.eye(3))
