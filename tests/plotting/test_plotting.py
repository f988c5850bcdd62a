"""Figures read from records: the numbers drawn, labelled axes, legends off the data."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib
import numpy as np
import pandas as pd
import pytest

import topofl as tf
from tests._figures import assert_readable
from topofl.records import Records

matplotlib.use("Agg")


@pytest.fixture(autouse=True)
def _close_figures() -> Any:
    import matplotlib.pyplot as plt

    yield
    plt.close("all")


def _rows(run: str, metric: str, pts: list[tuple[int, float]]) -> list[dict[str, Any]]:
    return [{"run": run, "round": t, "client": None, "metric": metric, "value": v}
            for t, v in pts]


def test_seed_curves_mean_and_bands_hand_computed() -> None:
    rec = Records(rows=_rows("a0", "acc", [(0, 0.1), (1, 0.5), (2, 0.6)])
                  + _rows("a1", "acc", [(0, 0.3), (2, 0.8)])  # no evaluation at round 1
                  + _rows("b0", "acc", [(0, 0.9), (1, 0.9), (2, 0.9)]))
    fig = tf.plotting.seed_curves(rec, {"A": ["a0", "a1"], "B": ["b0"]}, "acc")
    ax = fig.axes[0]
    a, b = ax.lines
    assert a.get_xydata().tolist() == [[1.0, pytest.approx(0.2)], [3.0, pytest.approx(0.7)]]
    assert b.get_xydata()[:, 1].tolist() == [0.9, 0.9, 0.9]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["A (2 seeds)", "B (1 seeds)"]
    assert len(ax.collections) == 1  # a band for A only (B has one run)
    band = ax.collections[0].get_paths()[0].vertices
    ys = {round(float(y), 10) for y in band[:, 1]}
    assert {0.1, 0.3, 0.6, 0.8} <= ys  # min..max over the seeds
    assert ax.get_xlabel() == "rounds completed"
    assert_readable(fig)
    std = tf.plotting.seed_curves(rec, {"A": ["a0", "a1"]}, "acc", band="std")
    ys = {round(float(y), 10) for y in std.axes[0].collections[0].get_paths()[0].vertices[:, 1]}
    assert {0.1, 0.3, 0.6, 0.8} <= ys  # two seeds: mean -+ (population) std = min, max
    with pytest.raises(ValueError, match="band must be"):
        tf.plotting.seed_curves(rec, {"A": ["a0"]}, "acc", band="iqr")


def test_convergence_and_spectrum_are_readable() -> None:
    rows = [r for s, v in (("mean", 0.5), ("min", 0.4), ("max", 0.9))
            for r in _rows("a", f"test_acc_{s}", [(0, v), (4, v + 0.05)])]
    fig = tf.plotting.convergence({f"run {k}": Records(rows=rows) for k in range(14)})
    assert fig.axes[0].lines[0].get_xydata()[:, 0].tolist() == [1.0, 5.0]
    assert_readable(fig)
    fig = tf.plotting.spectrum({"ring": tf.spectral.eigenvalues(tf.topologies.ring(8))})
    assert_readable(fig)


def test_legend_placement_in_a_callers_axes() -> None:
    import matplotlib.pyplot as plt

    rows = _rows("a", "acc", [(0, 0.5), (1, 0.6)])
    fig, (left, right) = plt.subplots(1, 2)
    tf.plotting.convergence({"a": Records(rows=rows)}, "acc", ax=left)
    legend = left.get_legend()
    assert legend is not None
    fig.canvas.draw()
    r = fig.canvas.get_renderer()
    box, own = legend.get_window_extent(r), left.get_window_extent(r)
    assert own.x0 <= box.x0 and box.x1 <= own.x1  # inside its own axes ("best") ...
    assert not box.overlaps(right.get_window_extent(r))  # ... never over the neighbour
    tf.plotting.convergence({"a": Records(rows=rows)}, "acc", ax=right, legend=None)
    assert right.get_legend() is None
    with pytest.raises(ValueError, match="legend must be"):
        tf.plotting.convergence({"a": Records(rows=rows)}, "acc", legend="left")


def test_metric_scatter_points_and_never_reached() -> None:
    table = pd.DataFrame({"condition": ["ring", "torus", "complete"],
                          "gap_mean": [0.1, 0.3, 1.0], "gap_std": [0.0, 0.05, 0.0],
                          "rounds_mean": [np.inf, 40.0, 20.0], "rounds_std": [np.nan, 5.0, 0.0],
                          "skew_mean": [0.5, 0.2, 0.0]})
    fig = tf.plotting.metric_scatter(table, ["gap", "skew"], "rounds",
                                     titles={"gap": "ρ = -1.00"}, ylabel="rounds to 80%")
    axes = [ax for ax in fig.axes if ax.get_visible()]
    assert len(axes) == 2 and axes[0].get_title() == "ρ = -1.00"
    assert axes[0].get_xlabel() == "gap" and axes[1].get_ylabel() == "rounds to 80%"
    points = [line.get_xydata()[0].tolist() for line in axes[0].lines if len(line.get_xydata())
              == 1 and line.get_marker() in ("o", "^")]
    # the never-reached ring sits above every finite point; the others at their means
    assert [0.3, 40.0] in points and [1.0, 20.0] in points
    ring = [p for p in points if p[0] == 0.1]
    assert ring and ring[0][1] > 40.0
    assert [ax.get_xscale() for ax in axes] == ["linear", "linear"]
    assert_readable(fig)
    wide = table.assign(gap_mean=[0.001, 0.03, 1.0])
    fig = tf.plotting.metric_scatter(wide, ["gap", "skew"], "rounds")
    assert [ax.get_xscale() for ax in fig.axes if ax.get_visible()] == ["log", "linear"]
    with pytest.raises(ValueError, match="at least one metric"):
        tf.plotting.metric_scatter(table, [], "rounds")


def test_study_figures_are_readable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import matplotlib.pyplot as plt

    from topofl import study
    from topofl.records import Recorder

    for topo, gap in (("ring", 0.1), ("torus", 0.3), ("complete", 1.0)):
        for seed in (0, 1):
            with Recorder(tmp_path / f"{topo}{seed}.jsonl", run=f"{topo}{seed}") as rec:
                rec.log_config({"topology": topo, "seed": seed})
                rec.log("graph.spectral_gap", gap, 0)
                for t in range(3):
                    rec.log("test_acc_mean", gap * (t + 1) / 3 + 0.01 * seed, t)
    figures: list[Any] = []
    monkeypatch.setattr(plt, "close", figures.append)
    res = study.study(tmp_path, tmp_path / "out", bootstrap=study.Bootstrap(n_boot=20))
    assert len(figures) == 1 + len(res.convergence_metrics)
    for fig in figures:
        assert_readable(fig)


def test_condition_styles_are_stable_and_distinct() -> None:
    from topofl.plotting import condition_styles, metric_label, style

    s = condition_styles([f"c{k}" for k in range(25)])
    assert len({(v.color, v.linestyle, v.marker) for v in s.values()}) == 25
    assert s["c3"] == style(3) and s["c13"].linestyle == "--" and s["c23"].marker == "D"
    assert all(v.marker != "^" for v in s.values())  # the triangle means "never reached"
    assert condition_styles(["b", "a"])["a"] == style(1)
    with pytest.raises(ValueError, match="k must be an integer >= 0"):
        style(-1)
    with pytest.raises(TypeError, match="single str"):
        condition_styles("ring")
    assert metric_label("global_acc_mean") == "global_acc_mean (fraction correct)"
    assert metric_label("consensus_distance") == "consensus_distance (mean squared distance)"


def test_legend_below_keeps_the_axes_width() -> None:
    rows = [{"run": f"s{s}", "round": t, "client": None, "metric": "acc", "value": 0.1 * t + s}
            for s in range(6) for t in range(3)]
    groups = {f"a rather long condition name number {k}": [f"s{k}"] for k in range(6)}
    fig = tf.plotting.seed_curves(Records(rows=rows), groups, "acc", legend="below")
    fig.canvas.draw()
    ax = fig.axes[0]
    box = ax.get_position()
    frame = fig.legends[0].get_window_extent().transformed(fig.transFigure.inverted())
    assert box.width > 0.8 and frame.y1 <= box.y0 and frame.x0 >= 0 and frame.x1 <= 1
    assert fig.legends[0]._ncols == 1  # labels of 48 characters: one per row
    assert ax.get_ylabel() == "acc (fraction correct)"
