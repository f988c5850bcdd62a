"""Partial participation: who takes part in a round (:func:`participants`, sampled;
:func:`round_active`, sampled and online), the local update only they take
(:class:`Sampled`), and an algorithm with a fraction of its clients active each round
(:func:`with_participation`)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

from topofl._utils.rng import generator_at
from topofl.engine.pieces.communication import graph_of
from topofl.engine.pieces.local import _Wrapper
from topofl.engine.protocol import Algorithm, LocalUpdate, Phase, Round, Sent, Services, State
from topofl.topologies.derived import active_topology

__all__ = ["participants", "round_active", "online_rows", "Sampled", "with_participation"]


_SAMPLE_STREAM = 0x5A3D  # tag of the client-sampling stream: (sample_seed, tag, t)


def participants(n: int, t: int, participation: float, sample_seed: int) -> list[int] | None:
    """Clients taking part in round ``t`` (sorted), or ``None`` when all of them do.

    ``max(1, floor(participation * n))`` clients drawn without replacement from the stream
    ``(sample_seed, t)``: a pure function of its arguments.

    Examples
    --------
    >>> from topofl.engine.pieces import participants
    >>> participants(10, 3, 0.3, 0) == participants(10, 3, 0.3, 0)
    True
    >>> len(participants(10, 3, 0.3, 0)), participants(10, 3, 1.0, 0)
    (3, None)
    """
    if participation >= 1.0:
        return None
    m = max(1, int(participation * n))
    rng = generator_at(sample_seed, _SAMPLE_STREAM, t)
    return sorted(int(i) for i in rng.choice(n, size=m, replace=False))


def round_active(rnd: Round, n: int, participation: float = 1.0, sample_seed: int = 0
                 ) -> np.ndarray | None:
    """``(n,)`` bool: the clients that take part in round ``rnd``, or ``None`` when all do.

    One notion for partial participation and availability: a client takes part when it is
    sampled (:func:`participants` of ``(n, t, participation, sample_seed)``) and online
    (``rnd.online``). The sample is drawn among all clients, then the offline ones drop out,
    so the sample sequence does not depend on who is online.

    Examples
    --------
    >>> import numpy as np
    >>> from topofl.engine.pieces import round_active
    >>> rnd = tf.engine.Round(0, None, np.array([True, False, True, True]))
    >>> round_active(rnd, 4).tolist(), round_active(tf.engine.Round(0), 4)
    ([True, False, True, True], None)
    """
    sel = participants(n, rnd.t, participation, sample_seed)
    if sel is None and rnd.online is None:
        return None
    mask = np.ones(n, dtype=bool) if sel is None else np.zeros(n, dtype=bool)
    if sel is not None:
        mask[np.asarray(sel, dtype=np.int64)] = True
    if rnd.online is not None:
        mask &= np.asarray(rnd.online, dtype=bool)
    return mask


def online_rows(rnd: Round, env: Services, device: torch.device | str = "cpu"
                ) -> Tensor | None:
    """``[m]`` bool on ``device``: which of this process's clients (``env.clients``) are online
    in round ``rnd`` (``rnd.online``), or ``None`` when every client is.

    Examples
    --------
    >>> import numpy as np
    >>> from topofl.engine.pieces import online_rows
    >>> env = tf.engine.toy_services(3)
    >>> online_rows(tf.engine.Round(0, None, np.array([True, False, True])), env).tolist()
    [True, False, True]
    >>> online_rows(tf.engine.Round(0), env) is None
    True
    """
    if rnd.online is None:
        return None
    return env.clients.own(torch.as_tensor(np.asarray(rnd.online, dtype=bool), device=device))

def _mask(n: int, rnd: Round, participation: float, sample_seed: int, like: Tensor
          ) -> Tensor | None:
    """``[n]`` 0/1 mask of round ``rnd``'s participants (:func:`round_active`), or None when
    everyone takes part."""
    sel = round_active(rnd, n, participation, sample_seed)
    if sel is None:
        return None
    return torch.as_tensor(sel, device=like.device).to(like.dtype)


@dataclass(frozen=True)
class Sampled(_Wrapper):
    """A local update that only the round's participants take (sampled and online:
    :func:`round_active`; the others' learning rate is 0), for server-based baselines with
    partial participation."""

    inner: LocalUpdate
    participation: float = 1.0
    sample_seed: int = 0
    rowwise = False  # the mask is over all clients

    @property
    def wrapped(self) -> LocalUpdate:
        """The inner piece."""
        return self.inner

    @property
    def skips_idle(self) -> bool:
        """As the inner piece (the mask only sets more rates to 0)."""
        return bool(getattr(self.inner, "skips_idle", False))

    def update(self, state: State, grads: Tensor, phase: Phase, lr: Tensor, rnd: Round,
               env: Services) -> None:
        """The inner update with the non-participants' rates set to 0."""
        mask = _mask(env.n, rnd, self.participation, self.sample_seed, state.x)
        if mask is not None:
            mask = env.clients.own(mask)
        self.inner.update(state, grads, phase, lr if mask is None else lr * mask, rnd, env)


def with_participation(algorithm: Algorithm, participation: float, sample_seed: int = 0
                       ) -> Algorithm:
    """``algorithm`` (a gossip or push-sum algorithm) with a fraction of its clients active
    each round.

    Round ``t``'s active clients are :func:`participants` ``(n, t, participation,
    sample_seed)``: ``max(1, floor(participation * n))`` of them, a pure function of
    ``(sample_seed, t)``. The others take no local step (:class:`Sampled`: learning rate 0,
    momentum frozen) and neither send nor receive: the algorithm's ``communicate`` runs on
    :func:`active_topology` of the round's graph (``keep`` = what the algorithm ``requires``:
    column renormalisation for push-sum, the dropped weights kept on the diagonal for a doubly
    stochastic ``W``), so an inactive client keeps its model and the messages counted are the
    arcs between active clients (with OSGP's overlap, what was already in flight towards a
    client that becomes inactive still arrives). ``participation`` and ``sample_seed`` go into
    the recorded hyper-parameters. With ``participation >= 1`` the pieces are returned
    unchanged (the same run, fused and streamed paths included).

    Examples
    --------
    >>> from topofl.engine.pieces import with_participation
    >>> algo = with_participation(tf.algorithms.dsgd(lr=0.1), 0.5, sample_seed=3)
    >>> algo.hparams["participation"], algo.hparams["sample_seed"], algo.local.rowwise
    (0.5, 3, False)
    """
    hparams = dict(algorithm.hparams, participation=float(participation),
                   sample_seed=int(sample_seed))
    if participation >= 1.0:
        return algorithm._replace(hparams=hparams)
    keep = algorithm.requires if algorithm.requires in ("row", "column") else "doubly"
    inner = algorithm.communicate

    def communicate(state: State, rnd: Round, env: Services) -> Sent:
        sel = round_active(rnd, env.n, participation, sample_seed)
        sent = inner(state, rnd._replace(topology=active_topology(graph_of(rnd), sel,
                                                                  keep=keep)), env)
        return sent._replace(active=sel)

    stacks = algorithm.stacks
    if stacks is True:  # the sample is drawn among every row of a pass, not the run's
        stacks = (f"participation={participation:g} draws the round's active clients among "
                  "all the clients of the pass (a stack's rows, not the run's)")
    return algorithm._replace(
        hparams=hparams,
        local=Sampled(algorithm.local, participation, sample_seed),
        communicate=communicate,
        stacks=stacks,
    )
