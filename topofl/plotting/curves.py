"""Curves against rounds completed: a run's (or its seeds' mean) convergence, the seeds of
every condition of a study, and the eigenvalue spectra of mixing matrices."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from topofl.plotting._layout import _legend, _tight
from topofl.plotting.style import Style, metric_label, style
from topofl.records import Records

__all__ = ["convergence", "seed_curves", "spectrum"]


def convergence(
    runs: Mapping[str, Records],
    metric: str = "test_acc",
    *,
    band: bool | str = True,
    ax: Any = None,
    title: str | None = None,
    ylabel: str | None = None,
    legend: str | None = "auto",
    epochs: float | Mapping[str, float] | None = None,
    seed_band: bool = True,
) -> Any:
    """Mean curve of ``{metric}_mean`` per run, with a shaded ``{metric}_min``..``_max`` band.

    Parameters
    ----------
    runs : mapping of label to Records
        One line per entry, in the mapping's order. An entry whose Records hold several runs
        (the seeds of one curve) is drawn as their mean, at the rounds every run evaluated.
    metric : str, default "test_acc"
        Prefix of the ``_mean``/``_min``/``_max`` metrics (``"global_acc"``, ...), or a full
        metric name without band.
    band : bool or "lines", default True
        Shade min..max; ``"lines"`` draws them as thin lines of the curve's colour (the
        D-Cliques paper's style: bold mean, thin min and max); False draws the mean only.
    ax : matplotlib Axes, optional
    legend : {"auto", "outside", "below", "best", None}, default "auto"
        Outside the axes (right, or below for more than 12 entries: it hides no data) when
        the function makes the figure; ``"best"`` inside when drawing into a given ``ax``;
        ``"below"``: a row of its own under the axes, which keep the figure's width.
    epochs : float or mapping of label to float, optional
        Local epochs per round (:func:`topofl.figures.panel.epochs_per_round`): the x axis is then
        epochs (rounds completed times the factor) instead of rounds completed.
    seed_band : bool, default True
        For an entry of several runs: shade the mean +- one sample standard deviation over
        the runs (``ddof=1``; the spread the verdicts of :mod:`topofl.figures` use). The
        ``_min``/``_max`` band of such an entry (the seeds' mean of each) is then drawn as thin
        lines whatever ``band`` says (True or ``"lines"``), so that the two bands stay apart.

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> seeds = tf.records.Records(rows=[  # two runs (seeds) of one curve
    ...     {"run": run, "round": 0, "client": None, "metric": "acc", "value": v}
    ...     for run, v in (("seed0", 0.25), ("seed1", 0.75))])
    >>> ax = tf.plotting.convergence({"ring": seeds}, "acc").axes[0]
    >>> ax.lines[0].get_xydata().tolist(), len(ax.collections)  # the mean, and its band
    ([[1.0, 0.5]], 1)
    """
    import matplotlib.pyplot as plt

    own = ax is None
    if ax is None:
        fig, ax = plt.subplots(figsize=(6.4, 4.0), **_layout_for(legend))
    else:
        fig = ax.figure
    if band not in (True, False, "lines"):
        raise ValueError(f"band must be True, False or 'lines', got {band!r}")
    for k, (label, rec) in enumerate(runs.items()):
        name = f"{metric}_mean" if f"{metric}_mean" in rec.metrics else metric
        rounds, vals = _over_runs(rec, name)
        mean = vals.mean(axis=0)
        factor = 1.0
        if epochs is not None:
            factor = float(epochs[label] if isinstance(epochs, Mapping) else epochs)
        x = (rounds + 1) * factor
        (line,) = ax.plot(x, mean, label=label, lw=1.8, **style(k).line())
        several = vals.shape[0] > 1
        if several and seed_band:
            sd = vals.std(axis=0, ddof=1)
            ax.fill_between(x, mean - sd, mean + sd, color=line.get_color(), alpha=0.2, lw=0)
        if band and f"{metric}_min" in rec.metrics and f"{metric}_max" in rec.metrics:
            lo = _over_runs(rec, f"{metric}_min", rounds)[1].mean(axis=0)
            hi = _over_runs(rec, f"{metric}_max", rounds)[1].mean(axis=0)
            if band == "lines" or (several and seed_band):
                for v in (lo, hi):
                    ax.plot(x, v, color=line.get_color(), lw=0.5, alpha=0.8)
            else:
                ax.fill_between(x, lo, hi, color=line.get_color(), alpha=0.15, lw=0)
    fig = _finish_curves(fig, ax, ylabel or metric_label(metric), title, len(runs), legend, own)
    if epochs is not None:
        ax.set_xlabel("epochs")
    return fig


def _layout_for(legend: str | None) -> dict[str, Any]:
    """``plt.subplots`` keywords of a figure whose legend is a row of its own below the axes
    (constrained layout gives that row its height)."""
    return {"layout": "constrained"} if legend == "below" else {}


def _over_runs(rec: Records, metric: str, at: np.ndarray | None = None
               ) -> tuple[np.ndarray, np.ndarray]:
    """``(rounds, values[run, round])`` of ``metric`` over the runs of ``rec`` at the rounds
    every run recorded (or at ``at``)."""
    series = [rec.series(metric, run=r) for r in rec.runs] if len(rec.runs) > 1 else [
        rec.series(metric)]
    common = series[0][0] if at is None else at
    for rounds, _ in series[1:]:
        common = np.intersect1d(common, rounds)
    vals = np.stack([v[np.searchsorted(r, common)] for r, v in series])
    return common, vals


def _finish_curves(fig: Any, ax: Any, ylabel: str, title: str | None, entries: int,
                   legend: str | None, own: bool) -> Any:
    """Axis labels, title, grid and legend of a curves plot (against rounds completed)."""
    ax.set_xlabel("rounds completed")
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title, fontsize=9)
    ax.grid(alpha=0.3)
    _legend(ax, entries, legend, own)
    _tight(fig)
    return fig


def seed_curves(
    records: Records,
    groups: Mapping[str, Sequence[str]],
    metric: str = "test_acc_mean",
    *,
    band: str | None = "minmax",
    ax: Any = None,
    title: str | None = None,
    ylabel: str | None = None,
    legend: str | None = "auto",
    styles: Mapping[str, Style] | None = None,
) -> Any:
    """One curve per condition: the mean over its runs (seeds) of ``metric``, with a band.

    Parameters
    ----------
    records : Records
        Holds every run named in ``groups``.
    groups : mapping of label to run ids
        One curve per entry (a condition and its seeds).
    metric : str, default "test_acc_mean"
    band : {"minmax", "std", None}, default "minmax"
        Shade min..max over the runs, mean +- one standard deviation (ddof=0), or nothing.
        A condition with one run has no band.
    legend : {"auto", "outside", "below", "best", None}, default "auto"
        As in :func:`convergence`.
    styles : mapping of label to Style, optional
        Colour, line style and marker per entry of ``groups``
        (:func:`~topofl.plotting.condition_styles`, so that other figures of the same
        conditions draw them alike); default: by position in ``groups``.

    Notes
    -----
    The curves are drawn at the rounds every run of the condition evaluated (rounds completed
    on the x axis).

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> rows = [{"run": f"s{s}", "round": t, "client": None, "metric": "acc", "value": v + s}
    ...         for s in (0, 1) for t, v in ((0, 0.1), (1, 0.3))]
    >>> fig = tf.plotting.seed_curves(tf.records.Records(rows=rows), {"ring": ["s0", "s1"]},
    ...                               "acc")
    >>> fig.axes[0].lines[0].get_xydata().tolist()
    [[1.0, 0.6], [2.0, 0.8]]
    """
    import matplotlib.pyplot as plt

    if band not in ("minmax", "std", None):
        raise ValueError(f"band must be 'minmax', 'std' or None, got {band!r}")
    own = ax is None
    if ax is None:
        fig, ax = plt.subplots(figsize=(7.0, 4.2), **_layout_for(legend))
    else:
        fig = ax.figure
    for k, (label, runs) in enumerate(groups.items()):
        series = [records.series(metric, run=run) for run in runs]
        if not series:
            continue
        common = series[0][0]
        for rounds, _ in series[1:]:
            common = np.intersect1d(common, rounds)
        vals = np.stack([v[np.searchsorted(r, common)] for r, v in series])
        mean = vals.mean(axis=0)
        line = (styles[label] if styles is not None and label in styles else style(k)).line()
        ax.plot(common + 1, mean, lw=1.6, label=f"{label} ({len(runs)} seeds)", **line)
        if band is not None and len(runs) > 1:
            if band == "minmax":
                lo, hi = vals.min(axis=0), vals.max(axis=0)
            else:
                sd = vals.std(axis=0)
                lo, hi = mean - sd, mean + sd
            ax.fill_between(common + 1, lo, hi, color=line["color"], alpha=0.15, lw=0)
    return _finish_curves(fig, ax, ylabel or metric_label(metric), title, len(groups), legend,
                          own)


def spectrum(eigenvalues: Mapping[str, Sequence[float]], *, ax: Any = None) -> Any:
    """Sorted eigenvalue moduli of several mixing matrices, one line each.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> ev = {"ring": tf.spectral.eigenvalues(tf.topologies.ring(8))}
    >>> len(tf.plotting.spectrum(ev).axes[0].lines)
    1
    """
    import matplotlib.pyplot as plt

    own = ax is None
    if ax is None:
        fig, ax = plt.subplots(figsize=(6.4, 4.0))
    else:
        fig = ax.figure
    for k, (label, ev) in enumerate(eigenvalues.items()):
        mod = np.sort(np.abs(np.asarray(ev)))[::-1]
        ax.plot(np.arange(1, mod.size + 1), mod, label=label, lw=1.5, **style(k).line())
    ax.set_xlabel("k (eigenvalues by decreasing modulus)")
    ax.set_ylabel("|λ_k(W)| (unitless)")
    ax.grid(alpha=0.3)
    _legend(ax, len(eigenvalues), "auto", own)
    _tight(fig)
    return fig
