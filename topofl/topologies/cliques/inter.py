"""Complete cliques joined by an inter-clique topology (Sec. III-C of D-Cliques)."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable
from typing import Any

import networkx as nx
import numpy as np

from topofl._utils.rng import Seed, as_generator
from topofl._utils.validation import (
    check_choice,
    check_int,
    check_memory,
    check_time,
    max_seconds,
)
from topofl.exceptions import NotConnectedError
from topofl.graph import Topology
from topofl.topologies.cliques._input import (
    INTER_CLIQUE,
    _check_removal,
    _partition,
    _seed_param,
)

# Rejection sampling of the intra-clique edges to remove: draws per clique before giving up.
_REMOVE_TRIES = 1000
#: Lower bounds on what one link of the paper's small world (:func:`_small_world_paper_links`)
#: costs before its edge is added: listing it and attaching it to two members. Measured
#: (process CPU time): 1.8-4.7 us a link (2 cliques of 2 at c = 2e5, 50 of 10 at c = 2000,
#: 64 of 1 at c = 2000), and 128-160 bytes a link at the peak (``tracemalloc``).
_LINK_SECONDS = 6e-7
_LINK_BYTES = 100.0


def _small_world_offsets(k: int, c: int) -> list[int]:
    # Clockwise distances d in [1, k-1] among the c closest of their set [2^s, 2^(s+1)).
    return [d for d in range(1, k) if d - (1 << (d.bit_length() - 1)) < c]


def _small_world_paper_links(k: int, c: int) -> list[tuple[int, int]]:
    """Links ``(a, b)``, in the order made: each clique ``a`` adds its own (Sec. III-C, [20]).

    For every distance scale ``s`` in ``[0, ceil(log2 k))`` and ``j`` in ``[0, c)``, clique
    ``a`` links to ``a - (2^s + j)`` then ``a + (2^s + j)`` (mod ``k``); a link that would
    reach ``a`` itself (only when ``2^s + j`` is a multiple of ``k``) is skipped. A pair is
    listed once per time it is reached, from either side.
    """
    scales = (k - 1).bit_length()  # ceil(log2 k) for k >= 1
    links = []
    for a in range(k):
        for s in range(scales):
            for j in range(c):
                d = (1 << s) + j
                for b in ((a - d) % k, (a + d) % k):
                    if b != a:
                        links.append((a, b))
    return links


def _check_small_world(inter: str, k: int, c: int, what: str) -> None:
    """With ``inter="small_world"``: refuse at once a ``c`` for which the paper's small world
    on ``k`` cliques would list and attach more links, one by one, than the time limit
    (:func:`~topofl._utils.validation.max_seconds`) or the memory allows. Every clique adds
    ``2 c ceil(log2 k)`` links, each attached to members drawn afresh, so no larger ``c``
    gives the same graph; the message names the largest ``c`` within the time limit."""
    if inter != "small_world" or k < 2:
        return
    per_c = 2 * k * (k - 1).bit_length()  # links added by each unit of c
    links = per_c * c
    c_max = max(1, int(max_seconds() // (_LINK_SECONDS * per_c)))
    about = (f"{what} with inter='small_world' and c={c} on {k} cliques, which attaches "
             f"{links:,} inter-clique links one by one ({per_c:,} per unit of c; c={c_max:,} at "
             "most within the time limit, and the paper uses c=2),")
    check_time(links * _LINK_SECONDS, about)
    check_memory(links * _LINK_BYTES, about)


def _clique_links(k: int, inter: str, c: int) -> list[tuple[int, int]]:
    """Clique pairs to link, one entry per inter-clique edge to attach.

    Ring, single-edge small world and fully connected give each linked pair once, as
    ``(a, b)`` with ``a < b``, sorted; the paper's small world gives ``(a, b)`` from the clique
    ``a`` that adds it, a pair as many times as it is reached.
    """
    if k < 2:
        return []
    if inter == "fully_connected":
        return list(itertools.combinations(range(k), 2))
    if inter == "small_world":
        return _small_world_paper_links(k, c)
    offsets = [1] if inter == "ring" else _small_world_offsets(k, c)
    links = {(min(a, (a + d) % k), max(a, (a + d) % k)) for a in range(k) for d in offsets}
    return sorted(links)


def _allocate(
    parts: list[np.ndarray], links: list[tuple[int, int]], rng: np.random.Generator
) -> list[tuple[int, int]]:
    # "The member with the fewest inter-clique edges so far, ties at random" is, within one
    # clique, a pass through a uniformly random order of its members; once every member has
    # one more edge the ties are broken afresh, so each pass draws a new order (as the
    # authors' simulator does, which shuffles the least-connected members at every pick).
    # Reusing one order for every pass would make the graph the same for every seed up to
    # relabelling inside the cliques. The first orders are drawn up front, clique by clique,
    # the later ones when a pass ends.
    order = [rng.permutation(m) for m in parts]
    used = [0] * len(parts)

    def pick(a: int) -> int:
        size = order[a].size
        if used[a] and used[a] % size == 0:
            order[a] = rng.permutation(parts[a])
        x = int(order[a][used[a] % size])
        used[a] += 1
        return x

    edges = []
    for a, b in links:
        x = pick(a)
        y = pick(b)
        edges.append((x, y))
    return edges


def _fractal(
    parts: list[np.ndarray], group: int, n: int, rng: np.random.Generator
) -> list[tuple[int, int]]:
    load = np.zeros(n, dtype=np.int64)

    def least_loaded(unit: np.ndarray) -> int:
        lu = load[unit]
        cand = unit[lu == lu.min()]
        return int(cand[rng.integers(cand.size)])

    edges = []
    units = list(parts)
    while len(units) > 1:
        merged = []
        for start in range(0, len(units), group):
            block = units[start : start + group]
            for u, v in itertools.combinations(block, 2):
                x, y = least_loaded(u), least_loaded(v)
                load[x] += 1
                load[y] += 1
                edges.append((x, y))
            merged.append(np.concatenate(block))
        units = merged
    return edges


def _remove_intra(
    G: nx.Graph, clique: np.ndarray, k: int, rng: np.random.Generator, index: int
) -> None:
    pairs = list(itertools.combinations(clique.tolist(), 2))
    for _ in range(_REMOVE_TRIES):
        drop = {pairs[i] for i in rng.choice(len(pairs), size=k, replace=False).tolist()}
        H = nx.Graph()
        H.add_nodes_from(clique.tolist())
        H.add_edges_from(e for e in pairs if e not in drop)
        if nx.is_connected(H):
            G.remove_edges_from(drop)
            return
    raise NotConnectedError(
        f"removing {k} of the {len(pairs)} edges of clique {index} ({clique.size} nodes) "
        f"disconnected it in all {_REMOVE_TRIES} draws; remove fewer edges"
    )


def _build(
    parts: list[np.ndarray],
    n: int,
    inter: str,
    c: int,
    remove: int,
    rng: np.random.Generator,
) -> nx.Graph:
    G = nx.Graph()
    G.add_nodes_from(range(n))
    for m in parts:
        G.add_edges_from(itertools.combinations(m.tolist(), 2))
    if inter == "fractal":
        group = max(2, max(m.size for m in parts))
        G.add_edges_from(_fractal(parts, group, n, rng))
    else:
        G.add_edges_from(_allocate(parts, _clique_links(len(parts), inter, c), rng))
    if remove:
        for index, m in enumerate(parts):
            _remove_intra(G, m, remove, rng, index)
    return G


_INTER_DOC = """\
    inter : str, default "fully_connected"
        Inter-clique topology (Sec. III-C), one of ``"ring"``, ``"fractal"``,
        ``"small_world_single"``, ``"small_world"``, ``"fully_connected"``, on the cliques in
        the order of ``groups``:

        * ``"ring"``: clique ``k`` is linked to clique ``k + 1 mod K`` ($K$ edges; one edge for
          two cliques).
        * ``"fractal"``: consecutive cliques form groups of ``g`` (the paper's $M$, here the
          size of the largest clique) fully interconnected by one edge per pair of cliques;
          the groups form groups of ``g`` at the next level, one edge per pair of groups, and
          so on until one group remains. An edge between groups goes to the member of each
          group with the fewest inter-clique edges so far.
        * ``"small_world"`` (the paper's construction, Sec. III-C and its extended
          version): the cliques sit on a ring and *each clique adds its own edges*: for every
          distance scale $s = 0, \\dots, \\lceil \\log_2 K \\rceil - 1$ and ``j = 0..c-1``,
          clique ``a`` adds one edge to clique ``a - (2^s + j)`` and one to clique
          ``a + (2^s + j)`` (mod ``K``; a link back to ``a`` itself is skipped). A pair of
          cliques is thus linked once from each side, and once more per extra way the
          offsets $2^s + j$ reach it: with ``c = 2`` two cliques at distance 1 get two edges
          and two cliques at distance 2 (offsets $1 + 1$ and $2 + 0$) up to four. Two edges
          that land on the same two nodes count once. Each clique adds $2 c \\lceil \\log_2 K
          \\rceil$ edges, so there are at most $2 c K \\lceil \\log_2 K \\rceil$,
          $O(c \\frac{n}{M} \\log \\frac{n}{M})$: at ``n = 1000``, ``M = 10``, ``c = 2``
          about 14.5 edges per node (9 inside the clique, at most 5.6 outside), the paper's
          number.
        * ``"small_world_single"``: the same ring and distance scales with one edge per
          linked pair of cliques: clique ``k`` is linked to cliques ``k ± d mod K`` for
          every clockwise distance ``d`` in ``[1, K-1]`` among the ``c`` closest of its set
          $[2^s, 2^{s+1})$, i.e. with $d - 2^{\\lfloor \\log_2 d \\rfloor} < c$. At
          ``n = 1000``, ``M = 10``, ``c = 2`` it links the same 1300 pairs of cliques as
          ``"small_world"``, with 11.6 edges per node instead of about 14.5.
        * ``"fully_connected"``: one edge between every pair of cliques ($K(K-1)/2$ edges).
    c : int, default 2
        Small world only (both variants): how many of the closest cliques of each distance
        scale to link (``>= 1``); the paper uses 2. With ``"small_world"`` each unit of ``c``
        adds $2 K \\lceil \\log_2 K \\rceil$ links, attached one by one: a ``c`` whose links
        would take longer than ``TOPOFL_MAX_SECONDS`` (default 60 s, by a lower-bound
        estimate; about ``c = 2.5e7`` for two cliques) or not fit in memory is refused.
    remove_intra_edges : int, default 0
        Remove this many intra-clique edges from every clique (Sec. IV-F, Fig. 15-16), drawn
        uniformly among the choices that keep the clique connected (so the graph stays
        connected). At most $(s-1)(s-2)/2$ for the smallest clique of ``s`` nodes. The paper
        removes 1 and 5 of the 45 edges of each clique of 10; removing fewer edges than a
        clique's edge connectivity $s - 1$ never disconnects it, so there the draw is uniform
        over all sets of that many edges, as in the authors' simulator. Clique Averaging then
        averages each node's gradient over itself and its remaining clique neighbours only
        (:func:`clique_averaging_matrix`)."""


def connect_cliques(
    cliques: Iterable[Iterable[int]],
    *,
    inter: str = "fully_connected",
    c: int = 2,
    remove_intra_edges: int = 0,
    seed: Seed,
    weights: str | Callable[[nx.Graph], Any] = "metropolis",
) -> Topology:
    r"""The D-Cliques topology on given cliques: complete cliques and inter-clique edges.

    Use it to compare inter-clique topologies on the same cliques, or to build D-Cliques from
    cliques made some other way (e.g. :func:`random_cliques`). :func:`dcliques` is Greedy Swap
    followed by this function.

    Parameters
    ----------
    cliques : iterable of iterables of int
        A partition of the nodes ``0..n-1`` (``n`` is the number of ids given); not modified.
        Cliques may have any sizes, including 1.
{inter}
    seed : int or numpy.random.Generator
        Keyword-only: breaks ties among the least-connected members and draws the removed
        edges.
    weights : str or callable, default ``"metropolis"``
        Weight scheme (:mod:`topofl.mixing`); ``"metropolis"`` is eq. (2) of the paper.

    Returns
    -------
    Topology
        Named ``"connect_cliques"``, with ``groups`` the cliques (in the given order) and
        ``params`` ``n``, ``num_cliques``, ``inter``, ``c``, ``remove_intra_edges``, ``seed``.

    Raises
    ------
    ValueError
        If ``cliques`` is not a partition of ``0..n-1``, ``inter`` is unknown, ``c < 1``, or
        ``remove_intra_edges`` is negative or too large for the smallest clique; or, with
        ``inter="small_world"``, if ``c`` is too large for its links to be attached within
        ``TOPOFL_MAX_SECONDS`` (the message names the largest ``c`` that is).
    InsufficientMemoryError
        With ``inter="small_world"``, if the links of ``c`` would not fit in memory.
    NotConnectedError
        If no connected way to remove the edges was found (only when the removal is close to
        its maximum on large cliques).

    Notes
    -----
    Every option gives a connected graph: each clique is connected and the clique-level graph is
    (it contains a ring, or is built by merging connected groups). In each clique of ``s`` nodes
    and ``e`` inter-clique edges (``ring``, both small worlds, ``fully_connected``), ``e mod s``
    members have $\lceil e/s \rceil$ of them and the others $\lfloor e/s \rfloor$ (for
    ``small_world``, ``e`` counts the edges attached, before two that join the same two nodes
    merge into one).

    Examples
    --------
    Three cliques of three on a ring of cliques: every clique uses two of its members for the
    two inter-clique edges.

    >>> t = tf.topologies.connect_cliques([[0, 1, 2], [3, 4, 5], [6, 7, 8]], inter="ring", seed=0)
    >>> t.num_edges, sorted(t.in_degree.tolist())
    (12, [2, 2, 2, 3, 3, 3, 3, 3, 3])
    >>> t.groups
    ((0, 1, 2), (3, 4, 5), (6, 7, 8))
    """
    parts, n = _partition(cliques)
    inter = check_choice(inter, "inter", INTER_CLIQUE)
    c = check_int(c, "c", low=1)
    _check_small_world(inter, len(parts), c, "connect_cliques")
    remove = _check_removal(remove_intra_edges, (m.size for m in parts))
    rng = as_generator(seed)
    G = _build(parts, n, inter, c, remove, rng)
    params = {
        "n": n,
        "num_cliques": len(parts),
        "inter": inter,
        "c": c,
        "remove_intra_edges": remove,
        "seed": _seed_param(seed),
    }
    return Topology.from_networkx(
        G, weights, name="connect_cliques", params=params, groups=[m.tolist() for m in parts]
    )


connect_cliques.__doc__ = (connect_cliques.__doc__ or "").replace("{inter}", _INTER_DOC)
