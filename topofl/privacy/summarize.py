r"""One graph's privacy in a few numbers, for tables (the cheat sheet, ``topofl spectral
--privacy``, the spectral report).

Examples
--------
>>> from topofl.privacy import privacy_summary
>>> from topofl.topologies import complete, ring
>>> r, c = privacy_summary(ring(32)), privacy_summary(complete(16))
>>> r["gossip_eps_others"] < r["gossip_eps_neighbours"]      # the ring hides far nodes
True
>>> round(c["gossip_eps_max"], 4) == round(c["gossip_eps_mean"], 4)   # complete: one value
True
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from topofl._utils.validation import check_int
from topofl.graph import TimeVarying, Topology
from topofl.privacy.gossip import gossip_linear, muffliato
from topofl.privacy.pairwise import MAX_ENTRIES, MAX_NODES
from topofl.privacy.walks import random_walk_rdp

__all__ = ["PRIVACY_KEYS", "privacy_summary"]

#: the keys of :func:`privacy_summary`, in table order
PRIVACY_KEYS: tuple[str, ...] = (
    "gossip_eps_max", "gossip_eps_mean", "gossip_eps_neighbours", "gossip_eps_others",
    "muffliato_eps_mean", "walk_eps_mean",
)


def privacy_summary(topology: Any, *, sigma: float = 1.0, rounds: int = 10,
                    delta: float = 1e-5) -> dict[str, float | None]:
    r"""The pairwise privacy of noisy gossip averaging (and of a random walk) on one graph.

    ``gossip_*``: :func:`~topofl.privacy.gossip_linear`, the exact pairwise ``epsilon`` after
    ``rounds`` gossip steps with noise multiplier ``sigma`` added once (max, mean over pairs,
    mean between neighbours, mean between the others); ``muffliato_eps_mean``: Muffliato's bound
    (:func:`~topofl.privacy.muffliato`), mean over pairs; ``walk_eps_mean``:
    :func:`~topofl.privacy.random_walk_rdp` over ``rounds * n`` walk steps (as many local steps
    as the gossip run takes), ``None`` for a time-varying or asymmetric graph. Every value is
    ``None`` for a graph whose matrices are not row-stochastic (push-sum's column-stochastic
    weights: its messages carry a weight the accountants do not model), and for a graph
    beyond the dense accountants' reach (more than 2,000 nodes, or ``rounds * n^2`` above
    250 million: ``topofl.privacy.pairwise.MAX_NODES`` and ``MAX_ENTRIES``), which a report
    skips rather than fails on.

    Parameters
    ----------
    topology : Topology or TimeVarying
    sigma : float, default 1
    rounds : int, default 10
    delta : float, default 1e-5

    Returns
    -------
    dict
        The keys of :data:`PRIVACY_KEYS`.
    """
    if not isinstance(topology, Topology | TimeVarying):
        raise TypeError(f"privacy_summary takes a Topology or a TimeVarying, got "
                        f"{type(topology).__name__}")
    out: dict[str, float | None] = dict.fromkeys(PRIVACY_KEYS)
    first = topology.at(0) if isinstance(topology, TimeVarying) else topology
    if isinstance(first, Topology) and not first.is_row_stochastic:
        return out
    n = int(topology.n)
    if n > MAX_NODES or check_int(rounds, "rounds", low=1) * n * n > MAX_ENTRIES:
        return out
    g = gossip_linear(topology, sigma, rounds, delta=delta)
    nb = g.neighbours()
    out.update(gossip_eps_max=g.max(), gossip_eps_mean=g.mean(),
               gossip_eps_neighbours=nb["neighbours"],
               gossip_eps_others=None if math.isnan(nb["others"]) else nb["others"],
               muffliato_eps_mean=muffliato(topology, sigma, rounds, delta=delta).mean())
    if isinstance(topology, Topology):
        W = topology.to_dense()
        if np.abs(W - W.T).max() <= 1e-10:
            try:
                out["walk_eps_mean"] = random_walk_rdp(topology, sigma, rounds * topology.n,
                                                       delta=delta).mean()
            except ValueError:  # a disconnected walk: no bound
                pass
    return out
