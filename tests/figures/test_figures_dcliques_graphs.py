"""D-Cliques graph figures: the histogram and clique drawing plot types, and Figs. 5, 17-19."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import matplotlib
import numpy as np
import pytest

import topofl as tf
from tests._figures import (
    assert_readable,
    quick_out_fixture,  # noqa: F401  (the quick_out fixture)
    verdict,
)

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
    labels = np.eye(10)[np.arange(40) % 10]
    t = tf.topologies.dcliques(labels, 10, inter="fully_connected", seed=0)
    fig = tf.plotting.dcliques_drawing(t, labels=[i % 10 for i in range(40)])
    ax = fig.axes[0]
    nodes, intra, inter = ax.collections[:3]
    colours = nodes.get_facecolors()
    assert colours.shape[0] == 40
    g = t.group_index
    for k, members in enumerate(t.groups or ()):
        own = {tuple(np.round(colours[v], 6)) for v in members}
        assert len(own) == 1  # one colour per clique
        assert np.allclose(colours[members[0]], tf.plotting.clique_colours(4)[k])
    assert len({tuple(np.round(c, 6)) for c in colours}) == 4  # and four distinct ones
    # 4 complete cliques: 180 grey edges; fully connected inter-clique: 6 black ones
    assert len(intra.get_segments()) == 180 and len(inter.get_segments()) == 6
    for (p, q) in inter.get_segments():  # black edges join different cliques
        offsets = nodes.get_offsets()
        u = int(np.argmin(np.linalg.norm(offsets - p, axis=1)))
        v = int(np.argmin(np.linalg.norm(offsets - q, axis=1)))
        assert g[u] != g[v]
    assert sorted(int(x.get_text()) for x in ax.texts) == sorted(i % 10 for i in range(40))
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


# ------------------------------------------------------------------------- figure scripts

FIGS = Path(__file__).resolve().parents[2] / "paper_figures"


def _script(name: str, monkeypatch: pytest.MonkeyPatch) -> Any:
    """Import ``paper_figures/fig_<name>.py`` as a module (its folder on ``sys.path``)."""
    monkeypatch.syspath_prepend(str(FIGS))
    spec = importlib.util.spec_from_file_location(f"fig_{name}", FIGS / f"fig_{name}.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _quick(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
           capsys: pytest.CaptureFixture[str]) -> tuple[Any, Any, str, dict[str, Any]]:
    """Run a script at --quick into ``tmp_path``: (module, figure, Markdown, verdict)."""
    import matplotlib.pyplot as plt

    mod = _script(name, monkeypatch)
    assert mod.main(["--quick", "--out", str(tmp_path)]) == 0
    png = Path(capsys.readouterr().out.strip().splitlines()[-1])
    assert png == tmp_path / f"{name}.png" and png.stat().st_size > 5000
    assert png.stat().st_size < 150_000
    md, got = verdict(name, tmp_path)
    return mod, plt.gcf(), md, got


def test_fig_05_drawing_and_numbers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    _, fig, md, got = _quick("dcliques_05", tmp_path, monkeypatch, capsys)
    ax = fig.axes[0]
    nodes, intra, inter = ax.collections[:3]
    assert nodes.get_facecolors().shape[0] == 100
    assert len({tuple(np.round(c, 6)) for c in nodes.get_facecolors()}) == 10
    assert (len(intra.get_segments()), len(inter.get_segments())) == (450, 45)
    assert "| 100 | 495 | 9.9000 | 0.0000 | 19.8000 |" in md  # 2 x 9.9 messages per node
    assert got["verdict"] == "holds" and got["seeds"] == []
    assert_readable(fig)


def test_fig_17_histograms_match_the_constructions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    mod, fig, md, got = _quick("dcliques_17", tmp_path, monkeypatch, capsys)
    runs, steps = mod.EXPERIMENTS["quick"], mod.STEPS["quick"]
    assert len(fig.axes) == 2
    for ax, (name, counts) in zip(fig.axes, mod.CLASS_COUNTS.items()):
        values = mod.skews(counts, runs, steps)
        heights = np.array([p.get_height() for p in ax.patches]).reshape(2, -1)
        assert heights.sum(axis=1).tolist() == [runs, runs]  # one count per experiment
        g, r = values["Greedy Swap"], values["random cliques"]
        assert f"{name}: Greedy Swap median {np.median(g):.3f}" in got["measured"]
        assert f"random median {np.median(r):.3f}" in got["measured"]
        assert f"| Greedy Swap | {runs} | {g.mean():.4f} |" in md
    assert sum(mod.CLASS_COUNTS["MNIST"]) == 50_000 == sum(mod.CLASS_COUNTS["CIFAR-10"])
    assert_readable(fig)


def test_fig_18_curves_match_the_traces(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    mod, fig, md, _ = _quick("dcliques_18", tmp_path, monkeypatch, capsys)
    runs, steps = mod.EXPERIMENTS["quick"], mod.STEPS["quick"]
    for ax, counts in zip(fig.axes, mod.CLASS_COUNTS.values()):
        tr, _ = mod.traces(counts, runs, steps)
        mean, lo, hi = (line.get_ydata() for line in ax.lines)  # bold mean, thin min and max
        np.testing.assert_allclose(mean, tr.mean(axis=0))
        np.testing.assert_allclose(lo, tr.min(axis=0))
        np.testing.assert_allclose(hi, tr.max(axis=0))
        assert ax.lines[0].get_linewidth() > ax.lines[1].get_linewidth()
        assert f"| {steps} | {tr.mean(axis=0)[-1]:.4f} |" in md
    assert_readable(fig)


@pytest.mark.figures
def test_fig_19_numbers_match_the_records(
    quick_out: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _, fig, md, _ = _quick("dcliques_19", quick_out, monkeypatch, capsys)
    for ax, panel in zip(fig.axes, ("mnist", "cifar10")):
        rec = tf.records.load_many(quick_out / "runs" / "dcliques_19" / f"dcliques_19_{panel}")
        assert len(rec.runs) == 2
        assert len(ax.lines) == 2 * 3  # per curve: bold mean, thin min and max
        for run in rec.runs:
            final = rec.series("global_acc_mean", run=run)[1][-1]
            assert f"{final:.4f}" in md
            assert rec.configs[run]["clique_averaging"] is True
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert labels == ["random cliques", "Greedy Swap (1000 steps)"]
    assert_readable(fig)
