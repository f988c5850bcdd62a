"""Communication between clients over the round's graph: :func:`gossip` (``X <- W_t X``),
:class:`PushSum` (numerators and weights, optionally one round of overlap), :class:`FromStart`
(the models the round started from are mixed, the local update added after: D-PSGD's order),
:func:`neighbourhood_sum_`, :func:`no_communication`, and :func:`graph_of` (the round's
graph, or the error of a round without one)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

from topofl._utils.rng import generator_at
from topofl.engine.drops import LOST_RULES, lossy
from topofl.engine.layout import Part
from topofl.engine.ledger import Arcs, Flow, dtype_bits, graph_arcs
from topofl.engine.pieces.robust import robust_gossip
from topofl.engine.pieces.state import ProximalState, PushSumState, debias_, hold
from topofl.engine.protocol import Round, Sent, Services, State, run_ids
from topofl.graph import Topology
from topofl.topologies.derived import neighbourhood

__all__ = ["graph_of", "gossip", "MessageNoise", "STREAM_NOISE", "PushSum", "FromStart",
           "neighbourhood_sum_", "no_communication"]

Communicate = Callable[[State, Round, Services], Sent]


def graph_of(rnd: Round) -> Topology:
    """The round's graph (``rnd.topology``); a ``ValueError`` for a round without one."""
    if rnd.topology is None:
        raise ValueError(f"round {rnd.t} has no topology to communicate over")
    return rnd.topology


def _width(env: Services, part: Part) -> int:
    cols = env.layout.cols(part)
    return int(cols.stop - cols.start)


def _kind(part: Part) -> str:
    return "model" if part == "all" else part


def gossip(part: Part = "all", lost: str = "renormalise",
           noise: MessageNoise | None = None) -> Communicate:
    """``X[:, cols(part)] <- W_t X[:, cols(part)]``; messages: the arcs of ``W_t``, each
    carrying the ``part`` (kind ``"model"``, or ``"body"``).

    With lost messages (``rnd.drop``) it mixes with the round's ``W_t`` after the drops,
    by the rule ``lost`` (:func:`~topofl.engine.drops.lossy`): ``"renormalise"`` (the
    default, D-SGD's: each receiver's row renormalised over itself and what arrived) or
    ``"mass"`` (the weight ``W_ij`` of a lost message is lost with it: receiver ``i`` keeps
    ``W_ii x_i + sum_{j delivered} W_ij x_j`` and its row sums to less than 1, as
    decent-bench's peer-to-peer algorithms combine what arrived). An algorithm that gossips
    with ``lost="mass"`` declares ``Algorithm.lost="mass"``. It returns the delivered
    messages as its flows, the lost ones as ``Sent.dropped``.

    Under a Byzantine attack (``rnd.byzantine``) the Byzantine senders' messages are the
    attack's vectors: ``robust_gossip("mean")`` (:mod:`topofl.engine.pieces.robust`).

    With ``noise`` (a :class:`MessageNoise`, a noisy channel) every delivered copy carries
    its own noise: receiver ``i`` adds ``W_ij xi_ij`` for each message ``j -> i`` it mixed.

    Examples
    --------
    A 3-ring (every weight 1/3) whose message ``1 -> 0`` is lost (network seed 17, round
    0, ``drop = 0.3``; :mod:`topofl.engine.drops`' example loses it and ``0 -> 2``): node
    0 averages itself and node 2, or keeps only their shares.

    >>> import torch
    >>> from topofl.engine.drops import Drops
    >>> from topofl.engine.pieces import gossip
    >>> rnd = tf.engine.Round(0, tf.topologies.ring(3), drop=Drops(0.3, seed=17, t=0))
    >>> for rule in ("renormalise", "mass"):
    ...     state = tf.engine.State(x=torch.tensor([[3.0], [6.0], [9.0]], dtype=torch.float64))
    ...     _ = gossip(lost=rule)(state, rnd, tf.engine.toy_services(3))
    ...     print(rule, [round(v, 6) for v in state.x.flatten().tolist()])
    renormalise [6.0, 6.0, 7.5]
    mass [4.0, 6.0, 5.0]
    """
    if lost not in LOST_RULES:
        raise ValueError(f"lost must be one of {sorted(LOST_RULES)}, got {lost!r}")
    attacked = robust_gossip("mean", part=part)

    def communicate(state: State, rnd: Round, env: Services) -> Sent:
        if rnd.byzantine is not None:
            if noise is not None:
                raise ValueError("message noise does not combine with Byzantine nodes")
            return attacked(state, rnd, env)
        topo = graph_of(rnd)
        if rnd.drop is not None:
            lo = lossy(topo, rnd.drop, lost)
            topo = lo.topology
        cols = env.layout.cols(part)
        env.mixer.mix_(topo, state.x, None if part == "all" else cols)
        if noise is not None:  # on the messages mixed: the delivered ones
            noise.add_(state.x, topo, graph_arcs(topo), rnd.t, env, cols)
        size, bits = _width(env, part), dtype_bits(state.x.dtype)
        if rnd.drop is not None:
            return Sent.of(Flow(_kind(part), lo.delivered, size, bits),
                           dropped=(Flow(_kind(part), lo.dropped, size, bits),))
        return Sent.of(Flow(_kind(part), graph_arcs(topo), size, bits))

    return communicate


#: Tag of the message-noise streams: the copy ``j -> i`` at round ``t`` draws from
#: ``(seed, STREAM_NOISE, t, j, i)``, by the clients' ids in their run.
STREAM_NOISE = 7_414


@dataclass(frozen=True)
class MessageNoise:
    r"""A noisy channel: every delivered copy of a message carries its own Gaussian noise,
    ``x_j + xi_ij`` with ``xi_ij ~ N(mean, std^2 I)``, while the sender keeps ``x_j`` clean.

    Mixed by :func:`gossip`, receiver ``i`` gets
    $x_i \leftarrow \sum_j w_{ij} x_j + \sum_{j \ne i,\, j \to i} w_{ij} \xi_{ij}$ (the
    weights of the round's matrix as mixed, after lost messages). The copy ``j -> i`` of round
    ``t`` draws from the stream ``(seed, STREAM_NOISE, t, j, i)`` (the clients' ids in their run):
    a run, resumed or stacked, draws the same noise. decent-bench's ``GaussianNoise`` message
    noise; topofl's :class:`~topofl.engine.pieces.NoisyUpdates` instead noises a node's own
    update once, which every receiver and the node itself then see. Every client in one
    process (the copies of one round are drawn together).

    Examples
    --------
    A 3-ring: each node mixes its two neighbours' copies with weight 1/3, each noised.

    >>> import torch
    >>> from topofl.engine.pieces import MessageNoise, gossip
    >>> state = tf.engine.State(x=torch.zeros(3, 2, dtype=torch.float64))
    >>> comm = gossip(noise=MessageNoise(std=0.0, mean=0.3))
    >>> _ = comm(state, tf.engine.Round(0, tf.topologies.ring(3)), tf.engine.toy_services(3, 2))
    >>> state.x.tolist()                                  # 2 copies x 1/3 x 0.3
    [[0.2, 0.2], [0.2, 0.2], [0.2, 0.2]]
    """

    std: float
    mean: float = 0.0
    seed: int = 0

    def draws(self, senders: np.ndarray, receivers: np.ndarray, t: int,
              width: int) -> np.ndarray:
        """``[E, width]`` standard normal draws, one row per copy ``senders[e] ->
        receivers[e]`` (run ids) at round ``t``."""
        if not len(senders):
            return np.zeros((0, width))
        return np.stack([generator_at(self.seed, STREAM_NOISE, t, int(j), int(i))
                         .standard_normal(width) for j, i in zip(senders, receivers, strict=True)])

    def add_(self, x: Tensor, topo: Topology, arcs: Arcs, t: int, env: Services,
             cols: slice) -> None:
        """``x[i, cols] += sum_j W_ij xi_ij`` over the delivered ``arcs`` ``j -> i``."""
        if len(env.clients.ids) != int(env.n):
            raise ValueError(f"message noise does not run distributed: its copies need every "
                             f"client in one process, this one holds {len(env.clients.ids)} "
                             f"of {int(env.n)}")
        if not len(arcs) or (self.std == 0 and self.mean == 0):
            return
        ids = run_ids(env)
        width = int(cols.stop - cols.start)
        z = self.draws(ids[arcs.senders], ids[arcs.receivers], t, width)
        w = np.asarray(topo.W[arcs.receivers, arcs.senders]).ravel()
        xi = torch.as_tensor((self.mean + self.std * z) * w[:, None], dtype=x.dtype,
                             device=x.device)
        x[:, cols].index_add_(0, torch.as_tensor(arcs.receivers, device=x.device), xi)


@dataclass(frozen=True)
class PushSum:
    r"""Push-sum over column-stochastic ``W_t``: the numerators ``x`` (on ``part``) and the
    weights ``w`` are both mixed, ``x <- W x``, ``w <- W w``; the evaluated point is the
    de-biased ``z = x / w`` (Kempe et al.; SGP, Assran et al.).

    With ``overlap`` (OSGP, one round of overlap): node ``j`` keeps ``W_jj x_j`` at once and
    what it sends (``W_ij x_j``, ``i != j``) arrives one round later; mass in flight is in
    :attr:`PushSumState.inflight_x` and ``inflight_w`` until received.

    Messages: one on every arc of ``W_t``, the ``part`` (kind ``"model"`` or ``"body"``) with
    its push-sum weight attached (kind ``"weight"``, one number); with ``overlap`` both have
    ``lag=1``.

    With lost messages (``rnd.drop``) the mass of a lost message, numerator and weight, is
    lost with it: ``W_t``'s entries on the lost arcs become 0
    (:func:`~topofl.engine.drops.lossy`, rule ``"mass"``); the flows are the delivered
    messages and ``Sent.dropped`` the lost ones.
    """

    part: Part = "all"
    overlap: bool = False

    def init_(self, state: State, env: Services) -> None:
        """Weights 1, the de-biased buffer ``z`` and the in-flight buffers."""
        x0 = state.x
        n = x0.shape[0]
        if self.overlap and self.part != "all":
            raise ValueError("overlapped push-sum communicates all the parameters (part='all')")
        state.weight = torch.ones(n, dtype=x0.dtype, device=x0.device)
        hold(state, PushSumState(
            z=torch.empty_like(x0),
            inflight_x=torch.zeros_like(x0) if self.overlap else None,
            inflight_w=(torch.zeros(n, dtype=x0.dtype, device=x0.device) if self.overlap
                        else None)))
        debias_(state, self.part, env.layout)

    def __call__(self, state: State, rnd: Round, env: Services) -> Sent:
        """One push-sum round, then de-bias."""
        topo = graph_of(rnd)
        lost = None
        if rnd.drop is not None:
            lost = lossy(topo, rnd.drop, "mass")
            topo = lost.topology
        weight = state.push_weights()
        if not self.overlap:
            cols = None if self.part == "all" else env.layout.cols(self.part)
            env.mixer.mix_(topo, state.x, cols)
            env.mixer.mix_vector_(topo, weight)
        else:
            d = env.mixer.diagonal(topo)
            own = state.own_as(PushSumState)
            fx, fw = own.inflight_x, own.inflight_w
            assert fx is not None and fw is not None  # init_ made them (overlap)
            kept_x = state.x * d.unsqueeze(1)
            env.mixer.mix_(topo, state.x)          # x <- W x  (= kept + sent)
            state.x.sub_(kept_x)                   # x <- sent now
            state.x, fx_new = fx, state.x          # swap: receive last round's messages
            state.x.add_(kept_x)
            own.inflight_x = fx_new
            kept_w = weight * d
            sent_w = weight.clone()
            env.mixer.mix_vector_(topo, sent_w)
            sent_w.sub_(kept_w)
            weight.copy_(kept_w + fw)
            fw.copy_(sent_w)
        debias_(state, self.part, env.layout)
        if lost is not None:
            return Sent.of(*self._flows(lost.delivered, state, env),
                           dropped=self._flows(lost.dropped, state, env))
        arcs, bits, lag = graph_arcs(topo), dtype_bits(state.x.dtype), int(self.overlap)
        return Sent.of(Flow(_kind(self.part), arcs, _width(env, self.part), bits, lag=lag),
                       Flow("weight", arcs, 1, bits, lag=lag, attached=True))

    def _flows(self, arcs: Arcs, state: State, env: Services) -> tuple[Flow, Flow]:
        """The messages on ``arcs``: the ``part`` with its weight attached."""
        bits, lag = dtype_bits(state.x.dtype), int(self.overlap)
        return (Flow(_kind(self.part), arcs, _width(env, self.part), bits, lag=lag),
                Flow("weight", arcs, 1, bits, lag=lag, attached=True))

    def evaluate(self, state: State, rnd: Round, env: Services) -> Tensor:
        """The de-biased parameters ``z``."""
        return debias_(state, self.part, env.layout)


@dataclass(frozen=True)
class FromStart:
    r"""D-PSGD's order (Lian et al. 2017, Algorithm 1): the models the round started from are
    mixed, and each client's local update is added to its mixed model,
    $x^{t+1} = W_t x^t + (x' - x^t)$, where $x'$ is the model after the round's local steps.

    With one plain SGD step $x' - x^t = -\gamma g(x^t)$, so
    $x^{t+1} = W_t x^t - \gamma g(x^t)$: the gradient is taken at the model that was sent
    (decentralized gradient descent, Nedić & Ozdaglar 2009; decent-bench's ``DGD``), where
    :func:`gossip` after the local steps gives $W_t (x^t - \gamma g(x^t))$ (adapt, then
    combine). ``inner`` is any communication piece that mixes ``state.x`` in place
    (:func:`gossip`, :func:`~topofl.engine.pieces.robust_gossip`, or a piece of your own):
    it runs on the round's starting models, so its messages, lost messages and Byzantine
    vectors are theirs, and its flows are returned as they are (the ledger counts the same
    messages; the clock does not overlap them with the local computation). The starting
    models are kept in :attr:`~topofl.engine.pieces.ProximalState.anchor` (``State.own``), copied by
    :meth:`round_start`; an absent client takes no local step, so its update is 0.

    Examples
    --------
    Client ``i`` minimises $(x - c_i)^2 / 2$ on a 3-ring (every weight 1/3), from
    $x^0 = 0$ with $\gamma = 0.5$: one round gives $W x^0 - 0.5\,(x^0 - c) = c / 2$, where
    adapting first gives $W (c / 2)$, the mean of $c / 2$.

    >>> import torch
    >>> c = torch.tensor([[0.0], [3.0], [6.0]], dtype=torch.float64)
    >>> grad = lambda z, phase, rnd: z - c
    >>> run = lambda algo: tf.engine.run_rounds(algo, torch.zeros_like(c),
    ...     tf.topologies.ring(3), grad, rounds=1).evaluated().flatten().tolist()
    >>> run(tf.algorithms.dsgd(lr=0.5, order="parallel"))
    [0.0, 1.5, 3.0]
    >>> run(tf.algorithms.dsgd(lr=0.5))
    [1.5, 1.5, 1.5]
    """

    inner: Communicate

    def init_(self, state: State, env: Services) -> None:
        """The buffer of the starting models."""
        init = getattr(self.inner, "init_", None)
        if init is not None:
            raise ValueError("FromStart keeps the starting models in State.own: its inner "
                             "piece must keep no state of its own (a plain communicate "
                             f"function), got {type(self.inner).__name__}")
        hold(state, ProximalState(anchor=state.x.clone()))

    def round_start(self, state: State, rnd: Round, env: Services) -> None:
        """Keep the models the clients start the round from."""
        state.own_as(ProximalState).anchor.copy_(state.x)

    def __call__(self, state: State, rnd: Round, env: Services) -> Sent:
        """``x <- inner(x^t) + (x - x^t)``: the starting models mixed, the update added."""
        start = state.own_as(ProximalState).anchor
        update = state.x - start
        state.x.copy_(start)
        sent = self.inner(state, rnd, env)
        state.x.add_(update)
        return sent


def neighbourhood_sum_(env: Services, topology: Topology, X: Tensor) -> None:
    """In place: each row of ``X`` (this process's clients) becomes the sum of the rows of its
    client and its in-neighbours in ``topology`` (:func:`neighbourhood`), through
    ``env.mixer`` (rows on other ranks arrive through the mixer's exchange)."""
    env.mixer.mix_(neighbourhood(topology), X)


def no_communication(state: State, rnd: Round, env: Services) -> Sent:
    """Local training: nothing is sent."""
    return Sent.of()
