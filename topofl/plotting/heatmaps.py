"""Collaboration graphs as matrices over rounds: the weights a run's clients gave each other,
and DPFL's chosen collaborators against its candidate graph Omega."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from topofl.plotting._layout import _panels, _reorder
from topofl.plotting.graphs import _graph_metrics, adjacency_matrix
from topofl.records import Records

__all__ = ["adjacency_heatmap", "selection_heatmap", "SELECTION_CODES", "SELECTION_COLORS"]

#: cell codes of :func:`selection_heatmap`: not a candidate, a candidate not chosen in the
#: round, chosen in the round, the client itself (DPFL Figs. 2, 8-11: blue/yellow and red/pink)
SELECTION_CODES = {"none": 0, "candidate": 1, "chosen": 2, "self": 3}
SELECTION_COLORS = ("white", "#9ecae1", "#d62728", "0.15")


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
    recorded = sorted(dict(records.points(e_name, run=run)))
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
    >>> rows = [{"run": "r", "round": 0, "client": None, "metric": m, "value": v} for m, v in
    ...         [("dpfl_omega_edges", [[1, 0], [2, 0], [0, 2]]), ("realized_edges", [[1, 0]])]]
    >>> fig = tf.plotting.selection_heatmap(tf.records.Records(rows=rows), n=3)
    >>> [ax.images[0].get_array().tolist() for ax in fig.axes[:2]]
    [[[3, 2, 2], [0, 3, 0], [2, 0, 3]], [[3, 2, 1], [0, 3, 0], [1, 0, 3]]]
    """
    from matplotlib.colors import BoundaryNorm, ListedColormap
    from matplotlib.patches import Patch
    from matplotlib.ticker import MaxNLocator

    recorded = sorted(dict(records.points("realized_edges", run=run)))
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
