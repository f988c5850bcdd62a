"""Drawings of graphs: a clique topology one colour per clique (D-Cliques), and the
collaboration graph a run recorded (DPFL, PFedDST), with its weight matrix."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from topofl.graph import Topology
from topofl.plotting._layout import _tight
from topofl.records import Records

__all__ = ["dcliques_drawing", "clique_colours", "collaboration_graph", "adjacency_matrix",
           "GRAPH_METRICS", "BENIGN_COLOR", "MALICIOUS_COLOR"]

#: (edges metric, weights metric) of the graphs a run records: the realized graph of every
#: round and DPFL's pre-processing graph Omega (the round in which it ran).
GRAPH_METRICS = {
    "realized": ("realized_edges", "realized_weights"),
    "omega": ("dpfl_omega_edges", "dpfl_omega_weights"),
}
BENIGN_COLOR, MALICIOUS_COLOR = "tab:blue", "tab:red"


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


def _graph_metrics(graph: str) -> tuple[str, str]:
    if graph not in GRAPH_METRICS:
        raise ValueError(f"graph must be one of {sorted(GRAPH_METRICS)}, got {graph!r}")
    return GRAPH_METRICS[graph]


def _recorded_graph(records: Records, round: int | None, graph: str,
                    run: str | None) -> tuple[int, list[list[int]], list[float]]:
    """``(round, [[sender, receiver], ...], weights)`` of a recorded graph (weights 1.0 when
    the records have none)."""
    e_name, w_name = _graph_metrics(graph)
    rid = records.run_id(run)
    edges = dict(records.points(e_name, run=rid))
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
    weights = dict(records.points(w_name, run=rid)).get(round)
    ws = [1.0] * len(es) if weights is None else [float(w) for w in weights]
    if len(ws) != len(es):
        raise ValueError(f"{w_name!r} at round {round} has {len(ws)} values for {len(es)} edges")
    return int(round), es, ws


def _num_clients(records: Records, run: str | None, edges: list[list[int]],
                 *given: Any) -> int:
    """The run's number of clients (config, else the data's partition), else the length of
    the first of ``given`` (labels), else one more than the largest recorded id."""
    rid = records.run_id(run)
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
    rid = records.run_id(run)
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
