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
) -> Any:
    """Mean curve of ``{metric}_mean`` per run, with a shaded ``{metric}_min``..``_max`` band.

    Parameters
    ----------
    runs : mapping of label to Records
        One line per run, in the mapping's order.
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

    Returns
    -------
    matplotlib.figure.Figure
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
        rounds, mean = rec.series(name)
        factor = 1.0
        if epochs is not None:
            factor = float(epochs[label] if isinstance(epochs, Mapping) else epochs)
        x = (rounds + 1) * factor
        (line,) = ax.plot(x, mean, label=label, lw=1.8)
        if band and f"{metric}_min" in rec.metrics and f"{metric}_max" in rec.metrics:
            _, lo = rec.series(f"{metric}_min")
            _, hi = rec.series(f"{metric}_max")
            if band == "lines":
                for v in (lo, hi):
                    ax.plot(x, v, color=line.get_color(), lw=0.5, alpha=0.8)
            else:
                ax.fill_between(x, lo, hi, color=line.get_color(), alpha=0.15, lw=0)
    fig = _finish_curves(fig, ax, ylabel or metric.replace("_", " "), title, len(runs), legend,
                         own)
    if epochs is not None:
        ax.set_xlabel("epochs")
    return fig



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

    from topofl.graph import Topology

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
