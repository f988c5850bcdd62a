"""Partial participation: who takes part in a round (:func:`participants`, sampled;
:func:`round_active`, sampled and online), the local update only they take
(:class:`Sampled`), and an algorithm with a fraction of its clients active each round
(:func:`with_participation`).

A server method draws its round's clients by one of :data:`SELECTIONS` (``selection``):
uniformly (the default), by participation count (``"fair"``), or by local loss among
candidates (``"loss"``, power-of-choice: :func:`highest_losses` ranks them).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

from topofl._utils.rng import generator_at
from topofl._utils.validation import check_choice, check_int
from topofl.engine.pieces.communication import graph_of
from topofl.engine.pieces.local import _Wrapper
from topofl.engine.protocol import Algorithm, LocalUpdate, Phase, Round, Sent, Services, State
from topofl.topologies.derived import active_topology

__all__ = ["SELECTIONS", "participants", "highest_losses", "loss_candidates", "round_active",
           "online_rows", "Sampled", "with_participation"]


_SAMPLE_STREAM = 0x5A3D  # tag of the client-sampling stream: (sample_seed, tag, t)
_LOSS_STREAM = 0x5A3E  # tag of the loss selection's candidates and tie-breaks

#: How a round's clients are chosen (:func:`participants`): ``"uniform"`` (without
#: replacement), ``"fair"`` (the least selected so far first: round-robin over blocks of ``m``)
#: and ``"loss"`` (the highest local losses among ``d`` candidates: power-of-choice).
SELECTIONS = ("uniform", "fair", "loss")


def participants(n: int, t: int, participation: float, sample_seed: int,
                 selection: str = "uniform", *, losses: Sequence[float] | np.ndarray | None = None,
                 candidates: int | None = None) -> list[int] | None:
    r"""Clients taking part in round ``t`` (sorted), or ``None`` when all of them do.

    ``m = max(1, floor(participation * n))`` clients (McMahan et al.'s ``max(C K, 1)``,
    decent-bench's ``fraction_selected_clients`` rule), chosen by ``selection``:

    * ``"uniform"``: drawn without replacement from the stream ``(sample_seed, t)``.
    * ``"fair"``: decent-bench's ``FairSelection`` (after Shi et al.'s fairness-aware
      selection) with every client in the pool: the ``m`` clients selected the fewest times
      in rounds ``0 .. t-1``, ties in client order. Its counts never differ by more than one,
      so it is round-robin over blocks of ``m``: $S_t = \{(t m + j) mod n : 0 \le j < m\}$
      (no randomness; every client is selected in any ``ceil(n / m)`` consecutive rounds).
    * ``"loss"``: power-of-choice (Cho, Wang & Joshi 2022): ``candidates`` (``d``, by default
      ``n``) clients drawn uniformly without replacement from the stream
      ``(sample_seed, t)``, then the ``m`` of them with the highest ``losses``
      (:func:`highest_losses`, ties broken by a random permutation of the candidates drawn
      from the same stream). ``losses`` ``(n,)`` holds every client's current local loss
      (only the candidates' entries are read). With ``d = n`` it is decent-bench's
      ``HighLossSelection`` on every client.

    A pure function of its arguments (and, for ``"loss"``, of the candidates' losses).

    Parameters
    ----------
    n : int
        Number of clients.
    t : int
        The round, from 0.
    participation : float
        In ``(0, 1]``; ``>= 1``: every client (``None``).
    sample_seed : int
        Seed of the streams.
    selection : {"uniform", "fair", "loss"}, default "uniform"
    losses : array-like of float, optional
        ``(n,)``: ``"loss"``'s losses (required there, ignored otherwise).
    candidates : int, optional
        ``"loss"``'s ``d``, in ``[m, n]`` (default ``n``).

    Returns
    -------
    list of int or None

    Raises
    ------
    ValueError
        An unknown ``selection``; ``"loss"`` without ``losses`` of ``n`` entries, with a NaN
        among the candidates', or ``candidates`` outside ``[m, n]``.

    References
    ----------
    .. [1] Y. J. Cho, J. Wang, G. Joshi, "Towards understanding biased client selection in
       federated learning", AISTATS 2022 (power-of-choice).
    .. [2] decent-bench 0.3.0, ``decent_bench.schemes`` (``FairSelection``,
       ``HighLossSelection``, ``UniformSelection``).

    Examples
    --------
    >>> from topofl.engine.pieces import participants
    >>> participants(10, 3, 0.3, 0) == participants(10, 3, 0.3, 0)
    True
    >>> len(participants(10, 3, 0.3, 0)), participants(10, 3, 1.0, 0)
    (3, None)
    >>> [participants(5, t, 0.4, 0, "fair") for t in range(3)]
    [[0, 1], [2, 3], [0, 4]]
    >>> participants(4, 0, 0.5, 0, "loss", losses=[0.1, 0.9, 0.5, 0.3])
    [1, 2]
    """
    if participation >= 1.0:
        return None
    m = max(1, int(participation * n))
    if selection == "uniform":
        rng = generator_at(sample_seed, _SAMPLE_STREAM, t)
        return sorted(int(i) for i in rng.choice(n, size=m, replace=False))
    if selection == "fair":
        start = (int(t) * m) % n
        return sorted((start + j) % n for j in range(m))
    check_choice(selection, "selection", SELECTIONS)
    if losses is None:
        raise ValueError("selection='loss' needs every client's current local loss (losses, "
                         "(n,)), got none")
    values = np.asarray(losses, dtype=np.float64).reshape(-1)
    if values.shape[0] != n:
        raise ValueError(f"losses must hold one loss per client ({n}), got {values.shape[0]}")
    d = n if candidates is None else check_int(candidates, "candidates", low=m, high=n)
    pool, tie_break = loss_candidates(n, t, d, sample_seed)
    ranked = highest_losses(values[pool], m, tie_break)
    return sorted(int(pool[k]) for k in ranked)


def loss_candidates(n: int, t: int, d: int, sample_seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Round ``t``'s power-of-choice draw: ``(candidates, tie_break)``, both ``(d,)`` int64.

    ``candidates`` are ``d`` distinct clients drawn uniformly without replacement (all ``n``
    in client order when ``d = n``), ``tie_break`` a random permutation of ``range(d)`` (the
    order among candidates of equal loss), both from the stream ``(sample_seed, t)`` (apart
    from the uniform sample's).

    Examples
    --------
    >>> from topofl.engine.pieces.participation import loss_candidates
    >>> c, b = loss_candidates(6, 2, 3, 0)
    >>> len(set(c.tolist())), sorted(b.tolist())
    (3, [0, 1, 2])
    >>> loss_candidates(4, 0, 4, 0)[0].tolist()
    [0, 1, 2, 3]
    """
    rng = generator_at(sample_seed, _LOSS_STREAM, t)
    pool = (np.arange(n, dtype=np.int64) if d == n
            else rng.choice(n, size=d, replace=False).astype(np.int64))
    return pool, rng.permutation(d).astype(np.int64)


def highest_losses(losses: Sequence[float] | np.ndarray, m: int,
                   tie_break: Sequence[int] | np.ndarray) -> list[int]:
    """The positions of the ``m`` highest ``losses``, highest first; among equal losses the
    smaller ``tie_break`` first (decent-bench's ``HighLossSelection`` ranks by
    ``(-loss, tie_break)``, its tie-breaks a random permutation).

    Examples
    --------
    >>> from topofl.engine.pieces.participation import highest_losses
    >>> highest_losses([0.5, 2.0, 0.5, 1.0], 3, [3, 2, 0, 1])
    [1, 3, 2]
    >>> highest_losses([float("nan"), 1.0], 1, [0, 1])
    Traceback (most recent call last):
    ...
    ValueError: losses must not be NaN: position 0 is
    """
    values = np.asarray(losses, dtype=np.float64).reshape(-1)
    ties = np.asarray(tie_break, dtype=np.int64).reshape(-1)
    if ties.shape != values.shape:
        raise ValueError(f"tie_break must hold one entry per loss ({values.shape[0]}), got "
                         f"{ties.shape[0]}")
    bad = np.flatnonzero(np.isnan(values))
    if bad.size:
        raise ValueError(f"losses must not be NaN: position {int(bad[0])} is")
    order = np.lexsort((ties, -values))  # last key first: by -loss, then by tie_break
    return [int(k) for k in order[:m]]


def round_active(rnd: Round, n: int, participation: float = 1.0, sample_seed: int = 0,
                 selection: str = "uniform", *,
                 losses: Sequence[float] | np.ndarray | None = None,
                 candidates: int | None = None) -> np.ndarray | None:
    """``(n,)`` bool: the clients that take part in round ``rnd``, or ``None`` when all do.

    One notion for partial participation and availability: a client takes part when it is
    sampled (:func:`participants` of ``(n, t, participation, sample_seed, selection)``) and
    online (``rnd.online``). The sample is drawn among all clients, then the offline ones drop
    out, so the sample sequence does not depend on who is online (decent-bench selects among
    the online clients only: the two agree when every client is online).

    Examples
    --------
    >>> import numpy as np
    >>> from topofl.engine.pieces import round_active
    >>> rnd = tf.engine.Round(0, None, np.array([True, False, True, True]))
    >>> round_active(rnd, 4).tolist(), round_active(tf.engine.Round(0), 4)
    ([True, False, True, True], None)
    """
    sel = participants(n, rnd.t, participation, sample_seed, selection, losses=losses,
                       candidates=candidates)
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

def _mask(n: int, rnd: Round, participation: float, sample_seed: int, like: Tensor,
          selection: str = "uniform") -> Tensor | None:
    """``[n]`` 0/1 mask of round ``rnd``'s participants (:func:`round_active`), or None when
    everyone takes part."""
    sel = round_active(rnd, n, participation, sample_seed, selection)
    if sel is None:
        return None
    return torch.as_tensor(sel, device=like.device).to(like.dtype)


@dataclass(frozen=True)
class Sampled(_Wrapper):
    """A local update that only the round's participants take (sampled by ``selection`` and
    online: :func:`round_active`; the others' learning rate is 0), for server-based baselines
    with partial participation."""

    inner: LocalUpdate
    participation: float = 1.0
    sample_seed: int = 0
    selection: str = "uniform"
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
        mask = _mask(env.n, rnd, self.participation, self.sample_seed, state.x, self.selection)
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
