r"""Noisy updates: each node's round update clipped and noised before anything leaves it.

The defence of DP decentralized learning at the level of a node's whole dataset (user-level
DP; the local-noise gossip of Muffliato, Cyffers et al. 2022, with the round's update as the
value): at the start of a round :meth:`NoisyUpdates.round_start` keeps each client's model
$x^t$; after its local steps, before the communication, the update $\Delta = x - x^t$ is
clipped to l2 norm ``clip`` and Gaussian noise of standard deviation ``noise * clip`` is added,
$x \leftarrow x^t + \Delta \min(1, C / \|\Delta\|) + \mathcal N(0, (\sigma C)^2 I)$; then the
algorithm communicates as before. Row ``r``'s noise is drawn from the stream
``(seed, STREAM, t, id_r)`` (``id_r``: its client's id in its run), so a run, resumed or not, draws
the same noise. What this spends is :func:`topofl.privacy.noisy_updates_spend` (against any
observer), recorded each round as ``dp_epsilon`` with ``dp_clipped``, the fraction of clients
whose update was clipped.

With ``correlated = sigma_cor > 0`` it is DECOR's defence (Allouah et al., ICML 2024): each
pair of neighbours ``{i, j}`` of the round's graph (``rnd.topology``, an edge either way counted
once) shares the draw ``z_ij`` of the stream ``(seed, STREAM_PAIR, t, min(i, j), max(i, j))``,
and node ``i`` adds ``sigma_cor C sum_{j ~ i} s_ij z_ij`` (``s_ij = +1`` for ``i < j``, else
``-1``: :func:`pair_noise`) on top of its independent noise; the pair terms cancel in the sum
over the nodes. The spend recorded is then that of
:func:`topofl.privacy.correlated_noise_spend` against an eavesdropper of every message with no
colluders, its largest over the nodes (each node's ``sum_t 4 (Sigma_t^{-1})_uu`` is kept in
:attr:`NoisyState.spent`, so a resumed run records the same). ``correlated = 0`` draws and
keeps nothing more.

Examples
--------
>>> import torch
>>> from topofl.engine.pieces.privacy import NoisyUpdates
>>> env = tf.engine.toy_services(2)
>>> piece = NoisyUpdates(clip=1.0, noise=8.0, seed=0, delta=1e-5)
>>> state = tf.engine.State(x=torch.zeros(2, 2, dtype=torch.float64))
>>> piece.init_(state, env)
>>> rnd = tf.engine.Round(0, None)
>>> piece.round_start(state, rnd, env)
>>> state.x += torch.tensor([[3.0, 4.0], [0.3, 0.4]], dtype=torch.float64)  # the local steps
>>> rec = piece.noise_(state, rnd, env)      # [3, 4] clipped to norm 1, then noise 8 * 1
>>> rec["dp_clipped"], round(rec["dp_epsilon"], 3)            # one round: mu = 2 / 8
(0.5, 0.926)
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from torch import Tensor

from topofl._utils.rng import generator_at
from topofl.engine.pieces.state import hold
from topofl.engine.protocol import Round, Sent, Services, State, run_ids
from topofl.graph import Topology
from topofl.privacy import noisy_updates_spend
from topofl.privacy.conversions import gdp_epsilon
from topofl.privacy.correlated import inverse_diagonal, pair_edges
from topofl.privacy.pairwise import MAX_NODES

__all__ = ["NoisyState", "NoisyUpdates", "STREAM", "STREAM_PAIR", "pair_noise"]

#: the tag of the noise's streams ``(seed, STREAM, t, id)``
STREAM = 7_411
#: the tag of the pair noise's streams ``(seed, STREAM_PAIR, t, i, j)``, ``i < j``
STREAM_PAIR = 7_412


def pair_noise(seed: int, t: int, edges: np.ndarray, ids: np.ndarray, width: int) -> np.ndarray:
    """``(len(ids), width)`` float64: each row's sum of its pairs' draws, signed, at round ``t``.

    Row ``r`` (client ``ids[r]``) gets ``sum_{j ~ ids[r]} s z_{ids[r] j}``: the pair
    ``(i, j)`` of ``edges`` (``i < j``) draws ``z`` from ``(seed, STREAM_PAIR, t, i, j)``,
    once, and gives ``+z`` to ``i`` and ``-z`` to ``j`` (the rows held; the others' share is
    drawn where they are held). Over every client the rows sum to zero.

    Examples
    --------
    >>> import numpy as np
    >>> from topofl.engine.pieces.privacy import pair_noise
    >>> z = pair_noise(0, 3, np.array([[0, 1], [1, 2]]), np.arange(3), 2)
    >>> bool(np.allclose(z.sum(axis=0), 0.0)), bool(np.array_equal(z[0], -z[1] - z[2]))
    (True, True)
    """
    out = np.zeros((len(ids), width))
    row = {int(c): r for r, c in enumerate(ids)}
    for i, j in edges.tolist():
        ri, rj = row.get(i), row.get(j)
        if ri is None and rj is None:
            continue
        z = generator_at(seed, STREAM_PAIR, t, i, j).standard_normal(width)
        if ri is not None:
            out[ri] += z
        if rj is not None:
            out[rj] -= z
    return out


@dataclass
class NoisyState:
    """What :class:`NoisyUpdates` keeps (``State.own``).

    Attributes
    ----------
    anchor : Tensor
        ``[n, P]`` each client's model at the start of the round.
    spent : Tensor or None
        With correlated noise, ``[N]`` float64 (``N`` the run's clients): each client's
        ``sum_t (Sigma_t^{-1})_uu`` so far, the composed spend over 4; ``None`` without.
    """

    anchor: Tensor
    spent: Tensor | None = None


@dataclass(frozen=True)
class NoisyUpdates:
    """Clip each client's round update and add Gaussian noise (see the module).

    Parameters
    ----------
    clip : float
        ``C > 0``, the l2 bound of a round's update.
    noise : float
        ``sigma > 0``, the noise multiplier: the noise's standard deviation is ``sigma C``.
    seed : int
        The noise's seed.
    delta : float
        The ``delta`` of the recorded ``dp_epsilon``.
    correlated : float, default 0.0
        ``sigma_cor >= 0``: DECOR's pair noise multiplier (see the module); ``0``: none.
    """

    clip: float
    noise: float
    seed: int
    delta: float
    correlated: float = 0.0
    _memo: dict[tuple[int, bytes], np.ndarray] = field(default_factory=dict, compare=False,
                                                       repr=False)

    def init_(self, state: State, env: Services) -> None:
        """The anchor buffer (and, with correlated noise, the spend so far)."""
        spent = None
        if self.correlated > 0:
            if env.n > MAX_NODES:
                raise ValueError(f"correlated noise's accountant is dense: it needs at most "
                                 f"{MAX_NODES} clients, got {env.n}")
            spent = torch.zeros(env.n, dtype=torch.float64)  # on the CPU: an accountant's sum
        hold(state, NoisyState(torch.zeros_like(state.x), spent))

    def round_start(self, state: State, rnd: Round, env: Services) -> None:
        """Keep each client's model at the start of the round."""
        state.own_as(NoisyState).anchor.copy_(state.x)

    def noise_(self, state: State, rnd: Round, env: Services) -> dict[str, Any]:
        """Clip the round's updates and add the noise, in place; the round's records."""
        anchor = state.own_as(NoisyState).anchor
        delta = state.x - anchor
        norms = torch.linalg.vector_norm(delta, dim=1)
        scale = torch.clamp(self.clip / torch.clamp(norms, min=torch.finfo(norms.dtype).tiny),
                            max=1.0)
        ids = run_ids(env)
        width = state.x.shape[1]
        draws = np.stack([generator_at(self.seed, STREAM, rnd.t, int(i)).standard_normal(width)
                          for i in ids]) if len(ids) else np.zeros((0, width))
        eta = torch.as_tensor(draws, dtype=state.x.dtype, device=state.x.device)
        torch.addcmul(anchor, delta, scale.unsqueeze(1), out=state.x)
        state.x.add_(eta, alpha=self.noise * self.clip)
        clipped = float((norms > self.clip).double().mean()) if norms.numel() else 0.0
        if self.correlated > 0:
            return {"dp_epsilon": self._correlated_(state, rnd, env, ids), "dp_clipped": clipped}
        _, eps = noisy_updates_spend(self.noise, rnd.t + 1, delta=self.delta)
        return {"dp_epsilon": eps, "dp_clipped": clipped}

    def _correlated_(self, state: State, rnd: Round, env: Services, ids: np.ndarray) -> float:
        """Add the round's pair noise; the largest spend over the clients after the round."""
        topo = rnd.topology
        if not isinstance(topo, Topology):
            raise ValueError(f"correlated noise needs the round's graph, round {rnd.t} has none "
                             "(an algorithm that uses no topology)")
        if topo.n != env.n:
            raise ValueError(f"correlated noise needs the graph of the run's {env.n} clients, "
                             f"got one of {topo.n} nodes in round {rnd.t}")
        edges = pair_edges(topo)
        width = state.x.shape[1]
        draws = pair_noise(self.seed, rnd.t, edges, ids, width)
        state.x.add_(torch.as_tensor(draws, dtype=state.x.dtype, device=state.x.device),
                     alpha=self.correlated * self.clip)
        key = (env.n, edges.tobytes())
        inv = self._memo.get(key)
        if inv is None:
            if len(self._memo) >= 64:
                self._memo.clear()
            inv = self._memo[key] = inverse_diagonal(edges, env.n, self.noise, self.correlated)
        spent = state.own_as(NoisyState).spent
        assert spent is not None  # init_ made it
        spent.add_(torch.as_tensor(inv, dtype=spent.dtype, device=spent.device))
        mu = 2.0 * math.sqrt(float(spent.max()))
        return float(gdp_epsilon(mu, self.delta))

    def wrap(self, communicate: Any) -> Any:
        """``communicate`` after the noise; its ``Sent`` with the round's records added."""

        def noisy(state: State, rnd: Round, env: Services) -> Sent:
            records = self.noise_(state, rnd, env)
            sent: Sent = communicate(state, rnd, env)
            return sent._replace(records={**(sent.records or {}), **records})

        return noisy
