"""Partial participation: who takes part in a round (:func:`participants`, sampled;
:func:`round_active`, sampled and online), the local update only they take
(:class:`Sampled`), and an algorithm with a fraction of its clients active each round
(:func:`with_participation`).

A server method draws its round's clients by one of :data:`SELECTIONS` (``selection``):
uniformly (the default), by participation count (``"fair"``), or by local loss among
candidates (``"loss"``, power-of-choice: :func:`highest_losses` ranks them). ``"loss"`` reads
the state, so a run chooses once per round, at the round's start (:class:`LossSelection`), and
every hook of the round reads that choice.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

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
           "online_rows", "current_losses", "LossSelection", "Sampled", "with_participation"]


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
      so it is round-robin over blocks of ``m``: $S_t = \{(t m + j) \bmod n : 0 \le j < m\}$
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
    return _sampled_and_online(n, sel, rnd.online)


def _sampled_and_online(n: int, sel: list[int] | None, online: np.ndarray | None
                        ) -> np.ndarray | None:
    """``(n,)`` bool: the clients of ``sel`` (``None``: all) that are ``online`` (``None``:
    all), or ``None`` when that is every client."""
    if sel is None and online is None:
        return None
    mask = np.ones(n, dtype=bool) if sel is None else np.zeros(n, dtype=bool)
    if sel is not None:
        mask[np.asarray(sel, dtype=np.int64)] = True
    if online is not None:
        mask &= np.asarray(online, dtype=bool)
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

def current_losses(x: Tensor, env: Services, split: str = "train",
                   among: np.ndarray | None = None) -> np.ndarray:
    """``(n,)`` float64: every client's mean loss on its whole ``split`` at its own row of
    ``x`` (``[m, P]``, this process's clients), gathered over the processes
    (``env.losses``: one forward pass over the clients' ``split``; no mini-batch drawn).
    With ``among`` (global client ids) only those clients' losses are computed, the others
    NaN.

    Examples
    --------
    >>> import torch
    >>> from topofl.engine.pieces.participation import current_losses
    >>> data = tf.data.federate("digits", "iid", 3, seed=0, val=0.2)
    >>> model = tf.models.build_model("logistic", data.input_shape, 10, seed=0)
    >>> layout = tf.engine.ParamLayout.from_model(model)
    >>> env = tf.engine.services.DataServices(
    ...     layout, tf.engine.gossip.Mixer(torch.device("cpu"), torch.float32),
    ...     tf.engine.executors.BatchedExecutor(model, layout), data, batch_size=8)
    >>> current_losses(torch.zeros(3, layout.num_params), env).round(4).tolist()
    [2.3026, 2.3026, 2.3026]
    >>> current_losses(torch.zeros(3, layout.num_params), env, among=np.array([2])).round(4)
    array([   nan,    nan, 2.3026])
    """
    ids = torch.as_tensor(env.clients.ids, device=x.device)
    full = torch.zeros(env.n, dtype=torch.float64, device=x.device)
    if among is None:
        full[ids] = env.losses(x, split).detach().to(torch.float64)
    else:
        rows = torch.nonzero(torch.isin(ids, torch.as_tensor(among, device=x.device)))[:, 0]
        if len(rows):
            full[ids[rows]] = env.losses(x, split, rows=rows).detach().to(torch.float64)
    full = env.clients.reduce_(full, "the clients' losses of selection='loss'")
    out: np.ndarray = full.cpu().numpy()
    if among is not None:
        out[np.setdiff1d(np.arange(env.n), among)] = np.nan
    return out


@dataclass(eq=False)
class LossSelection:
    r"""``selection="loss"`` in a run: round ``t``'s participants chosen once, at the
    round's start, from every client's current local loss, and kept for the round's hooks.

    :meth:`start` (the algorithm's ``round_start`` calls it first) computes
    $F_i(x_i)$, client ``i``'s mean loss on its whole training split at its row ``x_i`` of
    ``state.x`` as the round starts (:func:`current_losses`), and keeps
    :func:`participants` ``(n, t, participation, sample_seed, "loss", losses=...)``: the
    ``max(1, floor(participation * n))`` clients of highest loss, ties broken by the seeded
    permutation of round ``t``. The local update (:class:`Sampled`), the server's average and
    the server steps then read that set (:meth:`chosen`, :meth:`active`: sampled and
    online), so the round's hooks agree whatever else they recompute. The choice is a pure
    function of ``(sample_seed, t)`` and the losses, and the losses of the state the round
    starts from: a run resumed from a checkpoint (which holds that state) chooses the same
    clients. :meth:`records` are the losses, logged with the round.

    Which loss that is depends on what a client's row holds between rounds: a server method
    writes the server's model back to every client after each round, so it is the loss of
    the model the server would send (power-of-choice's $F_i(\bar x^t)$, Cho et al., with
    ``candidates`` or all $n$ as $d$; FedPer's, FedRep's and FedBABU's rows hold the
    server's body with the client's own head, Ditto's and APFL's the global model beside
    the personal one; a first round from the clients' own initial models,
    ``init="independent"``, reads those). With ``at="trained"`` it is the model the client
    last trained instead, which decent-bench's ``HighLossSelection`` reads (its clients keep
    their last local model): :meth:`init_` keeps a copy of every starting row in
    ``state.trained`` and :meth:`keep`, called with the round's local work done and before
    the server writes its model, copies the rows of the round's participants there (a
    client chosen but offline trained nothing and keeps its copy).
    Cost: one forward pass over every client's training data per round (with ``candidates``,
    over the ``d`` candidates' only; no gradient), on top of the local work; the losses
    travel to the server as numbers, not counted by the ledger.
    ``participation >= 1``: every client takes part and nothing is computed.

    Attributes
    ----------
    participation : float
    sample_seed : int
    split : str, default "train"
        The split the losses are computed on.
    candidates : int, optional
        Power-of-choice's ``d``: the choice is among ``d`` clients drawn from the stream
        ``(sample_seed, t)`` (:func:`participants`); ``None``: every client. Only the
        candidates' losses are computed (the method's saving); the others are logged as NaN.
    at : {"server", "trained"}, default "server"
        The model scored: the client's row as the round starts, or ``state.trained``.

    Examples
    --------
    >>> import numpy as np, torch
    >>> from topofl.engine.pieces.participation import LossSelection
    >>> class Quadratic(tf.engine.protocol.ToyServices):
    ...     def losses(self, x, split="val", *, rows=None):
    ...         return 0.5 * ((x - torch.arange(4.0).unsqueeze(1)) ** 2).sum(1)
    >>> env = Quadratic(tf.engine.toy_services(4).layout, tf.engine.toy_services(4).mixer, 4)
    >>> sel = LossSelection(0.5)
    >>> sel.start(tf.engine.State(x=torch.zeros(4, 1)), tf.engine.Round(0), env)
    >>> sel.chosen(tf.engine.Round(0)), sel.records(tf.engine.Round(0))
    ([2, 3], {'selection_loss': [0.0, 0.5, 2.0, 4.5]})
    >>> sel.active(tf.engine.Round(0, None, np.array([True, True, False, True])), 4).tolist()
    [False, False, False, True]
    >>> sel.chosen(tf.engine.Round(1))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    RuntimeError: selection='loss' chose the clients of round 0, not of round 1: ...
    """

    participation: float
    sample_seed: int = 0
    split: str = "train"
    candidates: int | None = None
    at: str = "server"
    _t: int | None = field(default=None, init=False, repr=False)
    _chosen: list[int] | None = field(default=None, init=False, repr=False)
    _losses: np.ndarray | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        check_choice(self.at, "at", ("server", "trained"))

    def start(self, state: State, rnd: Round, env: Services) -> None:
        """Choose round ``rnd.t``'s clients from the losses at ``state.x`` (at
        ``state.trained`` with ``at="trained"``; the ``round_start`` hook)."""
        self._t = None
        chosen, losses = None, None
        if self.participation < 1.0:
            among = (None if self.candidates is None or self.candidates >= env.n else
                     loss_candidates(env.n, rnd.t, self.candidates, self.sample_seed)[0])
            losses = current_losses(self._scored(state), env, self.split, among)
            chosen = participants(env.n, rnd.t, self.participation, self.sample_seed, "loss",
                                  losses=losses, candidates=self.candidates)
        self._t, self._chosen, self._losses = int(rnd.t), chosen, losses

    def _scored(self, state: State) -> Tensor:
        if self.at == "server":
            return state.x
        if state.trained is None:
            raise ValueError("LossSelection(at='trained') scores state.trained, which this "
                             "state does not hold: build the state with the selection's "
                             "init_ (the server method's init does)")
        return state.trained

    def init_(self, state: State) -> None:
        """With ``at="trained"``: ``state.trained``, a copy of the starting rows (what a
        client that has not taken part yet is scored at)."""
        if self.at == "trained" and self.participation < 1.0:
            state.trained = state.x.clone()

    def keep(self, state: State, rnd: Round, env: Services) -> None:
        """With ``at="trained"``: copy the rows of round ``rnd.t``'s participants (chosen
        and online: :meth:`active`) into ``state.trained``, their models as they trained
        them (call it before the server writes its model back)."""
        if self.at != "trained" or self.participation >= 1.0:
            return
        active = self.active(rnd, env.n)
        trained = self._scored(state)
        if active is None:
            trained.copy_(state.x)
            return
        rows = env.clients.own(torch.as_tensor(active, device=state.x.device))
        trained[rows] = state.x[rows]

    def chosen(self, rnd: Round) -> list[int] | None:
        """Round ``rnd.t``'s participants (sorted; ``None``: every client), as :meth:`start`
        chose them; a ``RuntimeError`` when it did not run for this round."""
        if self._t != rnd.t:
            done = "no round" if self._t is None else f"round {self._t}"
            raise RuntimeError(
                f"selection='loss' chose the clients of {done}, not of round {rnd.t}: its "
                "start(state, rnd, env) must run at the start of every round (the "
                "algorithm's round_start)")
        return self._chosen

    def active(self, rnd: Round, n: int) -> np.ndarray | None:
        """``(n,)`` bool: the round's participants that are online (``rnd.online``), or
        ``None`` when every client takes part (:func:`round_active`'s rule)."""
        return _sampled_and_online(n, self.chosen(rnd), rnd.online)

    def mask(self, rnd: Round, n: int, like: Tensor) -> Tensor | None:
        """:meth:`active` as a ``[n]`` 0/1 tensor on ``like``'s device and dtype."""
        sel = self.active(rnd, n)
        return None if sel is None else torch.as_tensor(sel, device=like.device).to(like.dtype)

    def records(self, rnd: Round) -> dict[str, list[float]]:
        """What the round logs: ``selection_loss``, every client's loss the choice read, NaN
        where a client was not among the candidates (nothing with every client taking
        part)."""
        self.chosen(rnd)
        if self._losses is None:
            return {}
        return {"selection_loss": [float(v) for v in self._losses]}


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
    with partial participation. With ``selection="loss"`` the participants are those its
    ``chooser`` (:class:`LossSelection`) chose at the round's start."""

    inner: LocalUpdate
    participation: float = 1.0
    sample_seed: int = 0
    selection: str = "uniform"
    chooser: LossSelection | None = None
    rowwise = False  # the mask is over all clients

    def __post_init__(self) -> None:
        if self.selection == "loss" and self.participation < 1.0 and self.chooser is None:
            raise ValueError("Sampled(selection='loss') needs the run's LossSelection "
                             "(chooser), which chooses the clients at each round's start")

    @property
    def wrapped(self) -> LocalUpdate:
        """The inner piece."""
        return self.inner

    @property
    def skips_idle(self) -> bool:
        """As the inner piece (the mask only sets more rates to 0)."""
        return bool(getattr(self.inner, "skips_idle", False))

    def rates(self, state: State, lr: Tensor, rnd: Round, env: Services) -> Tensor:
        """The rates :meth:`update` applies: ``lr`` with the non-participants' set to 0
        (``LocalUpdate.rates``), so that the engine takes no gradient of a client that does
        not take part in round ``rnd.t``."""
        mask = (self.chooser.mask(rnd, env.n, state.x) if self.chooser is not None
                else _mask(env.n, rnd, self.participation, self.sample_seed, state.x,
                           self.selection))
        if mask is not None:
            mask = env.clients.own(mask)
        return lr if mask is None else lr * mask

    def update(self, state: State, grads: Tensor, phase: Phase, lr: Tensor, rnd: Round,
               env: Services) -> None:
        """The inner update with the non-participants' rates set to 0 (:meth:`rates`)."""
        self.inner.update(state, grads, phase, self.rates(state, lr, rnd, env), rnd, env)


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
