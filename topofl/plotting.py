"""Figures read from records and the study's tables; they never compute results or re-run training.

The x axis of every curve is the number of rounds completed (a row's ``round`` + 1), and
legends sit outside the axes, so that they hide no data.

Examples
--------
>>> import matplotlib
>>> matplotlib.use("Agg")
>>> rows = [{"run": "a", "round": t, "client": None, "metric": f"test_acc_{s}", "value": v}
...         for t in range(3) for s, v in (("mean", 0.5 + t / 10), ("min", 0.4), ("max", 0.9))]
>>> fig = tf.plotting.convergence({"ring": tf.records.Records(rows=rows)})
>>> len(fig.axes[0].lines)
1
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from topofl.graph import Topology
from topofl.records import Records

__all__ = ["convergence", "seed_curves", "histogram", "dcliques_drawing", "clique_colours",
           "metric_scatter", "spectrum"]


def _tight(fig: Any) -> None:
    """``tight_layout``, quiet when a legend outside the axes leaves it nothing to do (saving
    with ``bbox_inches="tight"`` keeps that legend in the image)."""
    import warnings

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "Tight layout not applied", UserWarning)
        fig.tight_layout()


def _legend(ax: Any, n: int, where: str | None, own: bool) -> None:
    """Place the legend: ``"auto"`` is outside the axes when the function made the figure,
    and matplotlib's ``"best"`` inside a caller's axes (which may have neighbours)."""
    if where not in ("auto", "outside", "best", None):
        raise ValueError(f"legend must be 'auto', 'outside', 'best' or None, got {where!r}")
    if n == 0 or where is None:
        return
    if where == "best" or (where == "auto" and not own):
        ax.legend(frameon=False, loc="best", fontsize=8)
        return
    _legend_outside(ax, n)


def _legend_outside(ax: Any, n: int) -> None:
    """Legend to the right of the axes (below them when there are many entries)."""
    if n <= 12:
        ax.legend(frameon=False, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)
    else:
        ax.legend(frameon=False, loc="upper center", bbox_to_anchor=(0.5, -0.15),
                  ncol=3, fontsize=7)


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
    legend : {"auto", "outside", "best", None}, default "auto"
        Outside the axes (right, or below for more than 12 entries: it hides no data) when
        the function makes the figure; ``"best"`` inside when drawing into a given ``ax``.
    epochs : float or mapping of label to float, optional
        Local epochs per round (:func:`topofl.figures.epochs_per_round`): the x axis is then
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
        fig, ax = plt.subplots(figsize=(6.4, 4.0))
    else:
        fig = ax.figure
    if band not in (True, False, "lines"):
        raise ValueError(f"band must be True, False or 'lines', got {band!r}")
    for label, rec in runs.items():
        name = f"{metric}_mean" if f"{metric}_mean" in rec.metrics else metric
        rounds, vals = _over_runs(rec, name)
        mean = vals.mean(axis=0)
        factor = 1.0
        if epochs is not None:
            factor = float(epochs[label] if isinstance(epochs, Mapping) else epochs)
        x = (rounds + 1) * factor
        (line,) = ax.plot(x, mean, label=label, lw=1.8)
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
    fig = _finish_curves(fig, ax, ylabel or metric.replace("_", " "), title, len(runs), legend,
                         own)
    if epochs is not None:
        ax.set_xlabel("epochs")
    return fig



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
    legend : {"auto", "outside", "best", None}, default "auto"
        As in :func:`convergence`.

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
        fig, ax = plt.subplots(figsize=(7.0, 4.2))
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
        style = {"color": f"C{k % 10}", "ls": ("-", "--", ":", "-.")[(k // 10) % 4]}
        ax.plot(common + 1, mean, lw=1.6, label=f"{label} ({len(runs)} seeds)", **style)
        if band is not None and len(runs) > 1:
            if band == "minmax":
                lo, hi = vals.min(axis=0), vals.max(axis=0)
            else:
                sd = vals.std(axis=0)
                lo, hi = mean - sd, mean + sd
            ax.fill_between(common + 1, lo, hi, color=style["color"], alpha=0.15, lw=0)
    return _finish_curves(fig, ax, ylabel or metric, title, len(groups), legend, own)


def histogram(
    values_by_label: Mapping[str, Sequence[float]],
    *,
    bins: int | Sequence[float] = 20,
    ax: Any = None,
    title: str | None = None,
    xlabel: str = "value",
    ylabel: str = "count",
    legend: str | None = "auto",
) -> Any:
    """Histograms of several samples on shared bins, bars side by side (Fig. 17 of D-Cliques).

    Parameters
    ----------
    values_by_label : mapping of label to sequence of float
        One sample per entry (e.g. the final clique skew of 100 constructions), drawn in the
        mapping's order; every value must be finite.
    bins : int or sequence of float, default 20
        The number of equal-width bins spanning all the values together (so that the samples
        share their bins), or the bin edges (increasing).
    ax : matplotlib Axes, optional
    title, xlabel, ylabel : str, optional
    legend : {"auto", "outside", "best", None}, default "auto"
        As in :func:`convergence`.

    Returns
    -------
    matplotlib.figure.Figure
        The axes hold one bar per bin and sample (``len(values_by_label) * bins`` patches),
        each as high as its count.

    Raises
    ------
    ValueError
        For an empty mapping, an empty sample, a non-finite value or bad ``bins``.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> fig = tf.plotting.histogram({"random": [0.4, 0.5, 0.5], "greedy": [0.0, 0.0, 0.1]},
    ...                             bins=2)
    >>> [float(p.get_height()) for p in fig.axes[0].patches]
    [0.0, 3.0, 3.0, 0.0]
    """
    import matplotlib.pyplot as plt

    if not values_by_label:
        raise ValueError("values_by_label must hold at least one sample, got none")
    samples = []
    for label, values in values_by_label.items():
        arr = np.asarray(values, dtype=np.float64).ravel()
        if arr.size == 0:
            raise ValueError(f"the sample {label!r} is empty")
        if not np.all(np.isfinite(arr)):
            raise ValueError(f"the sample {label!r} holds a non-finite value")
        samples.append(arr)
    pooled = np.concatenate(samples)
    if isinstance(bins, (int, np.integer)) and not isinstance(bins, bool):
        if bins < 1:
            raise ValueError(f"bins must be >= 1, got {bins}")
        lo, hi = float(pooled.min()), float(pooled.max())
        if hi == lo:  # all values equal: one unit-wide range around them
            lo, hi = lo - 0.5, hi + 0.5
        edges = np.linspace(lo, hi, int(bins) + 1)
    else:
        edges = np.asarray(bins, dtype=np.float64).ravel()
        if edges.size < 2 or not np.all(np.diff(edges) > 0):
            raise ValueError(f"bins must be an int or increasing bin edges, got {bins!r}")
    own = ax is None
    if ax is None:
        fig, ax = plt.subplots(figsize=(6.4, 4.0))
    else:
        fig = ax.figure
    labels = list(values_by_label)
    ax.hist(samples, bins=edges, label=labels, color=[f"C{k % 10}" for k in range(len(labels))])
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title, fontsize=9)
    ax.grid(alpha=0.3, axis="y")
    _legend(ax, len(labels), legend, own)
    _tight(fig)
    return fig


def _clique_layout(groups: Sequence[Sequence[int]], n: int) -> np.ndarray:
    """``(n, 2)`` positions: clique centres on a unit circle, members on a small circle."""
    k = len(groups)
    pos = np.zeros((n, 2))
    radius = 0.0 if k == 1 else 1.0
    small = 0.8 if k == 1 else min(0.35, 0.8 * math.sin(math.pi / k))
    for c, members in enumerate(groups):
        a = 2 * math.pi * c / k
        centre = radius * np.array([math.cos(a), math.sin(a)])
        m = len(members)
        for r, v in enumerate(sorted(members)):
            b = a + math.pi + 2 * math.pi * (r + 0.5) / m
            pos[v] = centre + (small if m > 1 else 0.0) * np.array([math.cos(b), math.sin(b)])
    return pos


def clique_colours(k: int) -> list[Any]:
    """``k`` distinct RGBA colours for cliques: tab10 up to 10, tab20 up to 20, hsv beyond.

    Examples
    --------
    >>> len({tuple(c) for c in tf.plotting.clique_colours(25)})
    25
    """
    import matplotlib

    if k <= 10:
        cmap, xs = matplotlib.colormaps["tab10"], np.arange(k) / 10 + 0.05
    elif k <= 20:
        cmap, xs = matplotlib.colormaps["tab20"], np.arange(k) / 20 + 0.025
    else:
        cmap, xs = matplotlib.colormaps["hsv"], np.arange(k) / k
    return [tuple(float(v) for v in cmap(x)) for x in xs]


def dcliques_drawing(
    topology: Any,
    *,
    ax: Any = None,
    labels: Sequence[Any] | None = None,
    title: str | None = None,
) -> Any:
    """Draw a clique topology as in Fig. 5 of D-Cliques: one colour per clique.

    The cliques sit on a circle, each clique's members on a small circle of its own. Edges
    within a clique are thin and grey, edges between cliques black, so a removed intra-clique
    edge shows as a gap.

    Parameters
    ----------
    topology : Topology
        With ``groups`` (the cliques), e.g. from :func:`topofl.topologies.dcliques`.
    ax : matplotlib Axes, optional
    labels : sequence, optional
        One label per node written on it (e.g. the node's class); none by default.
    title : str, optional

    Returns
    -------
    matplotlib.figure.Figure
        The axes hold one node collection whose ``k``-th face colour is node ``k``'s clique
        colour (:func:`clique_colours` in the order of ``groups``), then the intra- and the
        inter-clique edges as two line collections.

    Raises
    ------
    TypeError
        If ``topology`` is not a Topology.
    ValueError
        If it has no groups, or ``labels`` does not have one entry per node.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> t = tf.topologies.connect_cliques([[0, 1, 2], [3, 4, 5]], inter="ring", seed=0)
    >>> ax = tf.plotting.dcliques_drawing(t).axes[0]
    >>> [len(c.get_segments()) for c in ax.collections[1:]]     # intra, inter edges
    [6, 1]
    """
    import matplotlib.pyplot as plt
    import networkx as nx

    if not isinstance(topology, Topology):
        raise TypeError(f"topology must be a topofl Topology, got {type(topology).__name__}")
    if topology.groups is None:
        raise ValueError(f"topology {topology.name!r} has no groups (cliques) to colour")
    n = topology.n
    if labels is not None and len(labels) != n:
        raise ValueError(f"labels must have one entry per node ({n}), got {len(labels)}")
    if ax is None:
        fig, ax = plt.subplots(figsize=(6.0, 6.0))
    else:
        fig = ax.figure
    groups = topology.groups
    g = topology.group_index
    colours = clique_colours(len(groups))
    xy = _clique_layout(groups, n)
    pos = {v: tuple(xy[v]) for v in range(n)}
    G = nx.Graph(topology.graph.to_undirected())
    G.remove_edges_from(nx.selfloop_edges(G))
    intra = [(u, v) for u, v in G.edges if g[u] == g[v]]
    inter = [(u, v) for u, v in G.edges if g[u] != g[v]]
    size = max(20.0, min(300.0, 6000.0 / n))
    nx.draw_networkx_nodes(G, pos, nodelist=list(range(n)), ax=ax, node_size=size,
                           node_color=[colours[g[v]] for v in range(n)], edgecolors="0.2",
                           linewidths=0.4)
    nx.draw_networkx_edges(G, pos, edgelist=intra, ax=ax, edge_color="0.6", width=0.5,
                           node_size=size)
    nx.draw_networkx_edges(G, pos, edgelist=inter, ax=ax, edge_color="black", width=0.8,
                           node_size=size)
    if labels is not None:
        nx.draw_networkx_labels(G, pos, {v: str(labels[v]) for v in range(n)}, ax=ax,
                                font_size=max(4, min(9, int(200 / n) + 4)))
    ax.set_xticks([])
    ax.set_yticks([])
    for spine in ax.spines.values():
        spine.set_visible(False)
    ax.set_aspect("equal")
    ax.set_xlabel(f"{n} nodes, {len(groups)} cliques (one colour each); grey: within a clique "
                  f"({len(intra)}), black: between cliques ({len(inter)})", fontsize=8)
    ax.set_ylabel("clique layout", fontsize=8)
    if title:
        ax.set_title(title, fontsize=9)
    _tight(fig)
    return fig


def metric_scatter(
    table: Any,
    x: Sequence[str],
    y: str,
    *,
    label: str = "condition",
    titles: Mapping[str, str] | None = None,
    ylabel: str | None = None,
    ncols: int = 3,
) -> Any:
    """One panel per topology metric: ``y`` against it, one point per row of ``table``.

    Parameters
    ----------
    table : pandas.DataFrame
        Columns ``<m>_mean`` (and optionally ``<m>_std``, drawn as error bars) for ``y`` and
        every metric of ``x``, and ``label`` (a study's condition table).
    x : sequence of str
        Topology metrics, one panel each.
    y : str
        The convergence metric. ``inf`` (a target never reached) is drawn as a hollow
        triangle at the top of the panel.
    titles : mapping, optional
        Panel title per metric of ``x`` (the study puts the correlation there).

    A metric whose values are positive and span a factor of 100 or more gets a log axis.

    Examples
    --------
    >>> import matplotlib, pandas as pd
    >>> matplotlib.use("Agg")
    >>> t = pd.DataFrame({"condition": ["ring", "complete"], "gap_mean": [0.1, 1.0],
    ...                   "final_mean": [0.5, float("inf")]})
    >>> fig = tf.plotting.metric_scatter(t, ["gap"], "final")
    >>> [ax.get_xlabel() for ax in fig.axes if ax.get_visible()]
    ['gap']
    """
    import matplotlib.pyplot as plt

    x = list(x)
    if not x:
        raise ValueError("x must name at least one metric")
    cols = min(ncols, len(x))
    rows = math.ceil(len(x) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(3.4 * cols, 2.9 * rows), squeeze=False)
    ys = table[f"{y}_mean"].to_numpy(dtype=np.float64)
    yerr = (table[f"{y}_std"].to_numpy(dtype=np.float64) if f"{y}_std" in table.columns
            else np.full(len(table), np.nan))
    finite = ys[np.isfinite(ys)]
    top = (finite.max() + 0.08 * (np.ptp(finite) or abs(finite.max()) or 1.0)
           if finite.size else 1.0)
    labels = [str(v) for v in table[label]]
    handles: list[Any] = []
    for ax, m in zip(axes.flat, x):
        xs = table[f"{m}_mean"].to_numpy(dtype=np.float64)
        xerr = (table[f"{m}_std"].to_numpy(dtype=np.float64) if f"{m}_std" in table.columns
                else np.full(len(table), np.nan))
        handles = []
        for k in range(len(table)):
            color = f"C{k % 10}"
            never = np.isinf(ys[k])
            h = ax.errorbar(
                xs[k], top if never else ys[k],
                xerr=None if np.isnan(xerr[k]) else xerr[k],
                yerr=None if never or np.isnan(yerr[k]) else yerr[k],
                fmt="^" if never else ("o" if k < 10 else "s"), color=color,
                mfc="none" if never else color, ms=6, capsize=2, lw=1,
            )
            handles.append(h)
        pos = xs[np.isfinite(xs)]
        if pos.size and pos.min() > 0 and pos.max() / pos.min() >= 100:
            ax.set_xscale("log")  # values over orders of magnitude (ranks do not change)
        if np.isinf(ys).any():
            ax.axhline(top, color="0.6", ls=":", lw=0.8)
            ax.annotate("never", (0.01, top), xycoords=("axes fraction", "data"), fontsize=7,
                        color="0.4", va="bottom")
        ax.set_xlabel(m, fontsize=8)
        ax.set_ylabel(ylabel or y, fontsize=8)
        ax.tick_params(labelsize=7)
        ax.grid(alpha=0.3)
        if titles and m in titles:
            ax.set_title(titles[m], fontsize=8)
    for ax in list(axes.flat)[len(x):]:
        ax.set_visible(False)
    _tight(fig)
    fig.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, 0.0),
               ncol=min(3, len(labels)), frameon=False, fontsize=7)
    return fig


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
    for label, ev in eigenvalues.items():
        mod = np.sort(np.abs(np.asarray(ev)))[::-1]
        ax.plot(np.arange(1, mod.size + 1), mod, label=label, lw=1.5)
    ax.set_xlabel("k")
    ax.set_ylabel("|λ_k(W)|")
    ax.grid(alpha=0.3)
    _legend(ax, len(eigenvalues), "auto", own)
    _tight(fig)
    return fig


# ---------------------------------------------------------------- collaboration graphs
__all__ += ["collaboration_graph", "adjacency_matrix", "adjacency_heatmap"]

#: (edges metric, weights metric) of the graphs a run records: the realized graph of every
#: round and DPFL's pre-processing graph Omega (the round in which it ran).
GRAPH_METRICS = {
    "realized": ("realized_edges", "realized_weights"),
    "omega": ("dpfl_omega_edges", "dpfl_omega_weights"),
}
BENIGN_COLOR, MALICIOUS_COLOR = "tab:blue", "tab:red"


def _graph_metrics(graph: str) -> tuple[str, str]:
    if graph not in GRAPH_METRICS:
        raise ValueError(f"graph must be one of {sorted(GRAPH_METRICS)}, got {graph!r}")
    return GRAPH_METRICS[graph]


def _recorded_graph(records: Records, round: int | None, graph: str,
                    run: str | None) -> tuple[int, list[list[int]], list[float]]:
    """``(round, [[sender, receiver], ...], weights)`` of a recorded graph (weights 1.0 when
    the records have none)."""
    e_name, w_name = _graph_metrics(graph)
    rid = records._run(run)
    edges = dict(records._points(rid, e_name, None))
    if not edges:
        raise ValueError(
            f"these records hold no {e_name!r}: only algorithms that choose their own graph "
            "(DPFL, PFedDST) record one"
            + (" (DPFL records Omega in the round it ran)" if graph == "omega" else "")
        )
    if round is None:
        round = max(edges)
    if round not in edges:
        raise ValueError(f"no {e_name!r} at round {round}; recorded rounds: {sorted(edges)}")
    es = [[int(j), int(i)] for j, i in edges[round]]
    weights = dict(records._points(rid, w_name, None)).get(round)
    ws = [1.0] * len(es) if weights is None else [float(w) for w in weights]
    if len(ws) != len(es):
        raise ValueError(f"{w_name!r} at round {round} has {len(ws)} values for {len(es)} edges")
    return int(round), es, ws


def _num_clients(records: Records, run: str | None, edges: list[list[int]],
                 *given: Any) -> int:
    """The run's number of clients (config, else the data's partition), else the length of
    the first of ``given`` (labels), else one more than the largest recorded id."""
    rid = records._run(run)
    cfg = records.configs.get(rid, {}) if rid is not None else {}
    eng = records.engines.get(rid, {}) if rid is not None else {}
    if isinstance(cfg.get("n_clients"), int):
        return int(cfg["n_clients"])
    part = (eng.get("data") or {}).get("partition") or {}
    if isinstance(part.get("num_clients"), int):
        return int(part["num_clients"])
    for g in given:
        if g is not None:
            return int(len(g))
    return 1 + max((max(e) for e in edges), default=-1)


def _malicious_mask(records: Records, run: str | None, n: int,
                    malicious: Sequence[int] | np.ndarray | None) -> np.ndarray:
    """Bool ``(n,)``: the given clients, else the label-flipping clients of the records."""
    if malicious is not None:
        arr = np.asarray(malicious)
        if arr.dtype == bool:
            if arr.shape != (n,):
                raise ValueError(f"malicious as a mask must have shape ({n},), got {arr.shape}")
            return arr
        mask = np.zeros(n, dtype=bool)
        mask[arr.astype(np.int64)] = True
        return mask
    rid = records._run(run)
    eng = records.engines.get(rid, {}) if rid is not None else {}
    info = (eng.get("data") or {}).get("label_flip")
    if not info:
        raise ValueError(
            "color_by='malicious' needs the malicious clients: these records have no "
            "label-flipping clients (federate(..., flip_labels=...)); pass malicious=[ids]"
        )
    mask = np.zeros(n, dtype=bool)
    mask[np.asarray(info["clients"], dtype=np.int64)] = True
    return mask


def _dominant_labels(labels: Any, n: int) -> np.ndarray:
    arr = np.asarray(labels)
    if arr.ndim == 2:
        if arr.shape[0] != n:
            raise ValueError(f"labels as counts must have shape (n={n}, L), got {arr.shape}")
        return np.asarray(arr.argmax(axis=1), dtype=np.int64)
    if arr.ndim == 1 and arr.shape[0] == n:
        return arr.astype(np.int64)
    raise ValueError(
        f"labels must be the (n, L) label counts (e.g. data.label_distributions) or the (n,) "
        f"dominant labels, with n={n}; got shape {arr.shape}"
    )


def collaboration_graph(
    records: Records,
    round: int | None = None,
    *,
    ax: Any = None,
    color_by: str = "label",
    labels: Any = None,
    malicious: Sequence[int] | np.ndarray | None = None,
    graph: str = "realized",
    run: str | None = None,
    layout_seed: int = 0,
) -> Any:
    """Draw a collaboration graph recorded by a run (DPFL Fig. 2 and 4, PFedDST).

    Nodes are the clients; an arrow ``j -> i`` says that client ``i`` used client ``j``'s model
    in that round, with a width proportional to its weight ``W[i, j]`` (``realized_weights``).

    Parameters
    ----------
    records : Records
        Records of one run (or pass ``run``) with ``realized_edges`` (DPFL, PFedDST) or, for
        ``graph="omega"``, DPFL's ``dpfl_omega_edges``.
    round : int, optional
        The round to draw (default: the last one recorded).
    ax : matplotlib Axes, optional
    color_by : {"label", "malicious"}, default "label"
        ``"label"``: each node by its dominant label (``labels`` required; the records hold
        no label counts). ``"malicious"``: benign clients blue and malicious ones red (DPFL's
        colours), read from the records' label-flipping clients or from ``malicious``; an
        arrow from a malicious client is red too.
    labels : array, optional
        ``(n, L)`` label counts (``data.label_distributions``) or ``(n,)`` dominant labels.
    malicious : sequence of int or bool mask, optional
        The malicious clients (default: the records' ``label_flip`` clients).
    graph : {"realized", "omega"}, default "realized"
    run : str, optional
    layout_seed : int, default 0
        Seed of the spring layout (the same seed draws the same picture).

    Returns
    -------
    matplotlib.figure.Figure
        Its axes hold one node collection (``ax.collections[0]``, one face colour per client)
        and one arrow patch per edge (``ax.patches``).

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> rows = [{"run": "r", "round": 0, "client": None, "metric": "realized_edges",
    ...          "value": [[1, 0], [2, 0], [0, 1]]},
    ...         {"run": "r", "round": 0, "client": None, "metric": "realized_weights",
    ...          "value": [0.25, 0.25, 0.5]}]
    >>> fig = tf.plotting.collaboration_graph(tf.records.Records(rows=rows), labels=[0, 0, 1])
    >>> len(fig.axes[0].patches), fig.axes[0].get_title()
    (3, 'realized graph, round 0 (3 edges)')
    """
    import matplotlib.pyplot as plt
    import networkx as nx
    from matplotlib.patches import Patch

    if color_by not in ("label", "malicious"):
        raise ValueError(f"color_by must be 'label' or 'malicious', got {color_by!r}")
    t, edges, weights = _recorded_graph(records, round, graph, run)
    if color_by == "label" and labels is None:
        raise ValueError(
            "color_by='label' needs labels=: the (n, L) label counts of the run's data "
            "(data.label_distributions) or the (n,) dominant label of every client"
        )
    n = _num_clients(records, run, edges, *(() if labels is None else (np.asarray(labels),)))
    if edges and max(max(e) for e in edges) >= n:
        raise ValueError(f"the recorded graph has client ids >= n={n}")
    G = nx.DiGraph()
    G.add_nodes_from(range(n))
    G.add_weighted_edges_from((j, i, w) for (j, i), w in zip(edges, weights))
    pos = nx.spring_layout(G, seed=layout_seed)
    own = ax is None
    if ax is None:
        fig, ax = plt.subplots(figsize=(6.4, 5.2))
    else:
        fig = ax.figure
    if color_by == "label":
        dom = _dominant_labels(labels, n)
        cmap = plt.get_cmap("tab10" if dom.max(initial=0) < 10 else "tab20")
        node_colors: list[Any] = [cmap(int(c) % cmap.N) for c in dom]
        edge_colors: list[Any] = ["0.35"] * len(edges)
        handles = [Patch(color=cmap(int(c) % cmap.N), label=f"label {int(c)}")
                   for c in np.unique(dom)]
    else:
        bad = _malicious_mask(records, run, n, malicious)
        node_colors = [MALICIOUS_COLOR if b else BENIGN_COLOR for b in bad]
        edge_colors = [MALICIOUS_COLOR if bad[j] else "0.35" for j, _ in edges]
        handles = [Patch(color=BENIGN_COLOR, label="benign"),
                   Patch(color=MALICIOUS_COLOR, label="malicious")]
    wmax = max(weights, default=1.0) or 1.0
    widths = [0.3 + 2.7 * w / wmax for w in weights]
    nx.draw_networkx_nodes(G, pos, ax=ax, node_color=node_colors,
                           node_size=max(30, 3000 // max(n, 1)))
    order = list(G.edges())
    by_edge = {(j, i): k for k, (j, i) in enumerate(map(tuple, edges))}
    nx.draw_networkx_edges(G, pos, ax=ax, edgelist=order, arrows=True, arrowsize=6,
                           width=[widths[by_edge[e]] for e in order],
                           edge_color=[edge_colors[by_edge[e]] for e in order],
                           alpha=0.8)
    ax.set_title(f"{graph} graph, round {t} ({len(edges)} edges)")
    ax.set_axis_off()
    if own:
        ax.legend(handles=handles, frameon=False, loc="upper left",
                  bbox_to_anchor=(1.01, 1.0), fontsize=8)
    _tight(fig)
    return fig


def adjacency_matrix(records: Records, round: int | None = None, *, graph: str = "realized",
                     n: int | None = None, run: str | None = None) -> np.ndarray:
    """The ``(n, n)`` weight matrix of a recorded graph: ``A[i, j] = W[i, j]`` for the edge
    ``j -> i`` (receiver row, sender column), 0 elsewhere (the diagonal is not recorded).

    Examples
    --------
    >>> rows = [{"run": "r", "round": 2, "client": None, "metric": "realized_edges",
    ...          "value": [[1, 0], [0, 2]]}]
    >>> tf.plotting.adjacency_matrix(tf.records.Records(rows=rows), n=3).tolist()
    [[0.0, 1.0, 0.0], [0.0, 0.0, 0.0], [1.0, 0.0, 0.0]]
    """
    _, edges, weights = _recorded_graph(records, round, graph, run)
    size = _num_clients(records, run, edges) if n is None else int(n)
    A = np.zeros((size, size))
    for (j, i), w in zip(edges, weights):
        A[i, j] = w
    return A


def adjacency_heatmap(
    records: Records,
    rounds: Sequence[int] | None = None,
    *,
    graph: str = "realized",
    order: Sequence[int] | None = None,
    n: int | None = None,
    run: str | None = None,
    axes: Any = None,
) -> Any:
    """Heat maps of a recorded collaboration graph over rounds (DPFL Figs. 2, 8-15).

    One panel per round: cell ``(i, j)`` is the weight client ``i`` gives to client ``j``'s
    model (:func:`adjacency_matrix`), white where it did not use it.

    Parameters
    ----------
    records : Records
    rounds : sequence of int, optional
        The rounds to show (default: up to 4 evenly spaced recorded rounds).
    graph : {"realized", "omega"}, default "realized"
    order : sequence of int, optional
        A permutation of the clients for rows and columns (e.g. sorted by dominant label, or
        malicious first), so that groups show as blocks.
    n, run
        Number of clients (default: from the records) and the run.
    axes : sequence of matplotlib Axes, optional
        One per round.

    Returns
    -------
    matplotlib.figure.Figure
        Panel ``k`` holds one image whose array is the matrix of ``rounds[k]`` (reordered).

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> rows = [{"run": "r", "round": t, "client": None, "metric": "realized_edges",
    ...          "value": [[1, 0], [0, 1]][: t + 1]} for t in range(2)]
    >>> fig = tf.plotting.adjacency_heatmap(tf.records.Records(rows=rows), [0, 1], n=2)
    >>> [ax.images[0].get_array().data.tolist() for ax in fig.axes[:2]]
    [[[0.0, 1.0], [0.0, 0.0]], [[0.0, 1.0], [1.0, 0.0]]]
    """
    import matplotlib.pyplot as plt

    e_name, _ = _graph_metrics(graph)
    rid = records._run(run)
    recorded = sorted(dict(records._points(rid, e_name, None)))
    if not recorded:
        raise ValueError(f"these records hold no {e_name!r}")
    if rounds is None:
        k = min(4, len(recorded))
        rounds = [recorded[int(i)] for i in np.linspace(0, len(recorded) - 1, k).round()]
    rounds = [int(r) for r in rounds]
    if not rounds:
        raise ValueError("rounds must name at least one round")
    mats = [adjacency_matrix(records, r, graph=graph, n=n, run=run) for r in rounds]
    size = mats[0].shape[0]
    mats = _reorder(mats, order, size)
    vmax = max(float(m.max()) for m in mats) or 1.0
    fig, axes = _panels(axes, len(rounds), (3.2 * len(rounds) + 0.8, 3.4),
                        f"one Axes per round ({len(rounds)})")
    cmap = plt.get_cmap("viridis").with_extremes(bad="white")
    im = None
    for ax, r, m in zip(axes, rounds, mats):
        im = ax.imshow(np.ma.masked_equal(m, 0.0), cmap=cmap, vmin=0.0, vmax=vmax,
                       interpolation="nearest")
        ax.set_title(f"round {r} ({int(np.count_nonzero(m))} edges)", fontsize=9)
        ax.set_xlabel("sender j")
        ax.set_ylabel("receiver i")
    if im is not None:
        fig.colorbar(im, ax=axes, fraction=0.03, pad=0.02, label="weight W[i, j]")
    return fig


# ------------------------------------------------------------------ accuracy vs variance (DPFL)


__all__ += ["client_accuracy_stats", "seed_summary", "accuracy_variance"]


def client_accuracy_stats(records: Records, *, run: str | None = None, metric: str = "test_acc",
                          round: int | None = None) -> tuple[float, float]:
    r"""Mean and variance over clients of a per-client accuracy, in % and %²: the two axes of
    DPFL's "variance between local models" plots (Figs. 1, 5-7).

    With $a_k$ the accuracy of client $k$ (in %) at ``round``, returns
    $\bar a = \frac1n \sum_k a_k$ and $\frac1n \sum_k (a_k - \bar a)^2$ (the population variance).

    Parameters
    ----------
    records : Records
        Records holding the per-client metric (a run with ``record_clients=True``).
    run : str, optional
        The run (needed when the records hold several).
    metric : str, default "test_acc"
        The per-client metric, a fraction in ``[0, 1]``.
    round : int, optional
        The round (default: the last round at which the metric was recorded per client).

    Raises
    ------
    ValueError
        When the records hold no per-client value of ``metric``, or a NaN (a client without
        test samples).

    Examples
    --------
    >>> rows = [{"run": "r", "round": 4, "client": k, "metric": "test_acc", "value": v}
    ...         for k, v in enumerate([0.5, 0.7, 0.9])]
    >>> mean, var = tf.plotting.client_accuracy_stats(tf.records.Records(rows=rows))
    >>> round(mean, 6), round(var, 6)  # ((20^2 + 0 + 20^2) / 3)
    (70.0, 266.666667)
    """
    rid = records._run(run)
    if round is None:
        seen = [r["round"] for r in records.rows
                if r["metric"] == metric and r["client"] is not None and r["run"] == rid]
        if not seen:
            raise ValueError(f"these records hold no per-client {metric!r} (run the algorithm "
                             "with record_clients=True)")
        round = max(seen)
    acc = 100.0 * records.per_client(metric, int(round), run=rid)
    if np.isnan(acc).any():
        raise ValueError(
            f"client(s) {np.flatnonzero(np.isnan(acc)).tolist()} have no {metric!r} at round "
            f"{round} (NaN: no test sample?); build the data so that every client has one")
    return float(acc.mean()), float(acc.var())


def seed_summary(stats: Sequence[tuple[float, float]]) -> dict[str, Any]:
    """Mean +- std over seeds of :func:`client_accuracy_stats` pairs ``(accuracy, variance)``.

    Returns a dict with ``"acc"`` (mean accuracy over seeds), ``"acc_std"`` (their sample
    standard deviation, ``ddof=1``; 0 for one seed), ``"variance"`` (the mean variance between
    clients) and ``"runs"`` (the number of seeds).

    Examples
    --------
    >>> s = tf.plotting.seed_summary([(80.0, 100.0), (82.0, 90.0)])
    >>> s["acc"], round(s["acc_std"], 4), s["variance"], s["runs"]
    (81.0, 1.4142, 95.0, 2)
    """
    if len(stats) == 0:
        raise ValueError("seed_summary needs at least one (accuracy, variance) pair")
    arr = np.asarray(stats, dtype=float)
    if arr.ndim != 2 or arr.shape[1] != 2:
        raise ValueError(f"stats must be (accuracy, variance) pairs, got shape {arr.shape}")
    acc_std = float(arr[:, 0].std(ddof=1)) if len(arr) > 1 else 0.0
    return {"acc": float(arr[:, 0].mean()), "acc_std": acc_std,
            "variance": float(arr[:, 1].mean()), "runs": len(arr)}


def accuracy_variance(
    points: Mapping[str, tuple[float, float]],
    *,
    ax: Any = None,
    highlight: str | None = "DPFL",
    title: str | None = None,
    xlabel: str = "average test accuracy (%)",
    ylabel: str = "variance between clients (%²)",
    errors: Mapping[str, tuple[float, float]] | None = None,
) -> Any:
    """Accuracy against the variance between local models, one labelled point per method
    (DPFL Figs. 1, 5-7: better is the bottom right).

    Parameters
    ----------
    points : mapping of label to (accuracy, variance)
        E.g. :func:`client_accuracy_stats` (or the seed means of :func:`seed_summary`).
    ax : matplotlib Axes, optional
    highlight : str, optional
        Labels starting with this prefix are drawn as larger red dots, the others as grey dots.
    title, xlabel, ylabel : str
    errors : mapping of label to (accuracy std, variance std), optional
        The seeds' spread of each point, drawn as error bars (after the points, so that
        ``ax.collections[0]`` stays the points).

    Returns
    -------
    matplotlib.figure.Figure
        ``ax.collections[0]`` holds every point, in the order of ``points``; each is annotated
        with its label (``ax.texts``).

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> fig = tf.plotting.accuracy_variance({"Local": (78.0, 110.0), "DPFL (5)": (82.0, 90.0)})
    >>> ax = fig.axes[0]
    >>> ax.collections[0].get_offsets().tolist(), [t.get_text() for t in ax.texts]
    ([[78.0, 110.0], [82.0, 90.0]], ['Local', 'DPFL (5)'])
    """
    import matplotlib.pyplot as plt

    if not points:
        raise ValueError("points must hold at least one (accuracy, variance) pair")
    labels = list(points)
    xy = np.asarray([points[k] for k in labels], dtype=float)
    if xy.shape != (len(labels), 2):
        raise ValueError(f"every point must be an (accuracy, variance) pair, got {points!r}")
    if ax is None:
        fig, ax = plt.subplots(figsize=(5.6, 4.2))
    else:
        fig = ax.figure
    hot = np.array([bool(highlight) and k.startswith(str(highlight)) for k in labels])
    colours = np.where(hot, "tab:red", "tab:grey")
    sizes = np.where(hot, 90.0, 36.0)
    ax.scatter(xy[:, 0], xy[:, 1], c=list(colours), s=sizes, zorder=3)
    if errors:
        try:
            err = np.asarray([errors.get(k, (0.0, 0.0)) for k in labels], dtype=float)
        except (TypeError, ValueError):
            err = np.empty(0)
        if err.shape != xy.shape:
            raise ValueError(f"errors must map labels to (accuracy std, variance std) pairs, "
                             f"got {errors!r}")
        ax.errorbar(xy[:, 0], xy[:, 1], xerr=err[:, 0], yerr=err[:, 1], fmt="none",
                    ecolor="0.6", elinewidth=0.8, zorder=2)
    for i, (k, (x, y), h) in enumerate(zip(labels, xy, hot)):
        # alternate above / below so that labels of nearby points overlap less
        ax.annotate(k, (x, y), textcoords="offset points", xytext=(4, 3 if i % 2 else -9),
                    fontsize=7, color="tab:red" if h else "black")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title)
    ax.grid(alpha=0.3)
    return fig


__all__ += ["selection_heatmap", "SELECTION_CODES", "SELECTION_COLORS"]

#: cell codes of :func:`selection_heatmap`: not a candidate, a candidate not chosen in the
#: round, chosen in the round, the client itself (DPFL Figs. 2, 8-11: blue/yellow and red/pink)
SELECTION_CODES = {"none": 0, "candidate": 1, "chosen": 2, "self": 3}
SELECTION_COLORS = ("white", "#9ecae1", "#d62728", "0.15")


def selection_heatmap(
    records: Records,
    rounds: Sequence[int] | None = None,
    *,
    order: Sequence[int] | None = None,
    n: int | None = None,
    run: str | None = None,
    axes: Any = None,
    titles: Sequence[str] | None = None,
    legend: bool = True,
) -> Any:
    r"""DPFL's collaboration-graph panels: the candidate graph $\Omega$, then the collaborators
    chosen in each of ``rounds`` against it (DPFL Fig. 2, Appendix Figs. 8-11 and 15).

    The first panel shows $\Omega$ (``dpfl_omega_edges``): cell ``(k, j)`` is coloured when
    ``j`` is a candidate of client ``k``. Each further panel shows one round's
    ``realized_edges``: red where client ``k`` used client ``j`` in that round (``chosen``),
    light blue where ``j`` is in $\Omega_k$ but was not chosen (``candidate``), so that the two
    together are $\Omega$, as in the paper. The diagonal (every client "collaborates" with
    itself) is dark in every panel.

    Parameters
    ----------
    records : Records
        Records of one DPFL run (or pass ``run``), with ``dpfl_omega_edges`` and
        ``realized_edges``.
    rounds : sequence of int, optional
        Rounds to show after $\Omega$ (default: the last recorded round).
    order : sequence of int, optional
        A permutation of the clients for rows and columns (e.g. sorted by dominant label).
    n, run
        Number of clients (default: from the records) and the run.
    axes : sequence of matplotlib Axes, optional
        ``1 + len(rounds)`` axes.
    titles : sequence of str, optional
        One title per panel (default ``"Omega (...)"``, ``"round t (...)"`` with edge counts).
    legend : bool, default True
        Explain the two colours beside the last panel.

    Returns
    -------
    matplotlib.figure.Figure
        Panel ``p`` holds one image whose array is the ``(n, n)`` matrix of codes
        :data:`SELECTION_CODES` (reordered by ``order``).

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> rows = [{"run": "r", "round": 0, "client": None, "metric": "dpfl_omega_edges",
    ...          "value": [[1, 0], [2, 0], [0, 2]]},
    ...         {"run": "r", "round": 0, "client": None, "metric": "realized_edges",
    ...          "value": [[1, 0]]}]
    >>> fig = tf.plotting.selection_heatmap(tf.records.Records(rows=rows), n=3)
    >>> [ax.images[0].get_array().tolist() for ax in fig.axes[:2]]
    [[[3, 2, 2], [0, 3, 0], [2, 0, 3]], [[3, 2, 1], [0, 3, 0], [1, 0, 3]]]
    """
    from matplotlib.colors import BoundaryNorm, ListedColormap
    from matplotlib.patches import Patch
    from matplotlib.ticker import MaxNLocator

    rid = records._run(run)
    recorded = sorted(dict(records._points(rid, "realized_edges", None)))
    if rounds is None:
        if not recorded:
            raise ValueError("these records hold no 'realized_edges'")
        rounds = [recorded[-1]]
    rounds = [int(r) for r in rounds]
    omega = adjacency_matrix(records, None, graph="omega", n=n, run=run) > 0
    size = omega.shape[0]
    eye = np.eye(size, dtype=bool)
    mats = [np.where(eye, 3, np.where(omega, 2, 0))]
    for r in rounds:
        chosen = adjacency_matrix(records, r, graph="realized", n=size, run=run) > 0
        mats.append(np.where(eye, 3, np.where(chosen, 2, np.where(omega, 1, 0))))
    mats = _reorder(mats, order, size)
    if titles is not None and len(titles) != len(mats):
        raise ValueError(f"titles must hold one title per panel ({len(mats)}), got {len(titles)}")
    fig, axes = _panels(axes, len(mats), (3.0 * len(mats) + 1.2, 3.3),
                        f"one Axes per panel (Omega + {len(rounds)} rounds = {len(mats)})")
    cmap = ListedColormap(list(SELECTION_COLORS))
    norm = BoundaryNorm([-0.5, 0.5, 1.5, 2.5, 3.5], cmap.N)
    for p, (ax, m) in enumerate(zip(axes, mats)):
        ax.imshow(m, cmap=cmap, norm=norm, interpolation="nearest")
        edges = int((m == 2).sum())
        default = (f"Omega ({edges} edges)" if p == 0
                   else f"round {rounds[p - 1]} ({edges} chosen)")
        ax.set_title(titles[p] if titles is not None else default, fontsize=9)
        ax.tick_params(labelsize=7)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    if legend:
        handles = [Patch(color=SELECTION_COLORS[2], label="chosen (Omega in panel 1)"),
                   Patch(color=SELECTION_COLORS[1], label="in Omega, not chosen")]
        axes[-1].legend(handles=handles, frameon=False, fontsize=7, loc="upper left",
                        bbox_to_anchor=(1.02, 1.0))
    return fig


def _reorder(mats: list[Any], order: Sequence[int] | None, size: int) -> list[Any]:
    """``mats`` with rows and columns permuted by ``order`` (``None``: as they are)."""
    if order is None:
        return mats
    perm = np.asarray(order, dtype=np.int64)
    if sorted(perm.tolist()) != list(range(size)):
        raise ValueError(f"order must be a permutation of range({size})")
    return [m[np.ix_(perm, perm)] for m in mats]


def _panels(axes: Any, k: int, figsize: tuple[float, float], what: str) -> tuple[Any, list[Any]]:
    """A figure and ``k`` Axes in a row, or the caller's ``axes`` (``what`` names the count)."""
    import matplotlib.pyplot as plt

    if axes is None:
        fig, axs = plt.subplots(1, k, figsize=figsize, squeeze=False)
        return fig, list(axs[0])
    found = list(np.ravel(axes))
    if len(found) != k:
        raise ValueError(f"axes must hold {what}, got {len(found)}")
    return found[0].figure, found
