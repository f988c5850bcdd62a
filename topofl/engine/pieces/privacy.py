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

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import Tensor

from topofl._utils.rng import generator_at
from topofl.engine.pieces.state import hold
from topofl.engine.protocol import Round, Sent, Services, State, run_ids
from topofl.privacy import noisy_updates_spend

__all__ = ["NoisyState", "NoisyUpdates", "STREAM"]

#: the tag of the noise's streams ``(seed, STREAM, t, id)``
STREAM = 7_411


@dataclass
class NoisyState:
    """What :class:`NoisyUpdates` keeps (``State.own``).

    Attributes
    ----------
    anchor : Tensor
        ``[n, P]`` each client's model at the start of the round.
    """

    anchor: Tensor


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
    """

    clip: float
    noise: float
    seed: int
    delta: float

    def init_(self, state: State, env: Services) -> None:
        """The anchor buffer."""
        hold(state, NoisyState(torch.zeros_like(state.x)))

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
        _, eps = noisy_updates_spend(self.noise, rnd.t + 1, delta=self.delta)
        return {"dp_epsilon": eps, "dp_clipped": clipped}

    def wrap(self, communicate: Any) -> Any:
        """``communicate`` after the noise; its ``Sent`` with the round's records added."""

        def noisy(state: State, rnd: Round, env: Services) -> Sent:
            records = self.noise_(state, rnd, env)
            sent: Sent = communicate(state, rnd, env)
            return sent._replace(records={**(sent.records or {}), **records})

        return noisy
