r"""D-SGD (+ Clique Averaging, + momentum): local SGD, then one gossip step.

References
----------
.. [1] X. Lian et al., "Can decentralized algorithms outperform centralized algorithms?",
   NeurIPS 2017 (D-SGD).
.. [2] A. Bellet, A.-M. Kermarrec, E. Lavoie, "D-Cliques", Fig. 2 (D-SGD), Fig. 7 (Clique
   Averaging), eq. (4)-(5) (momentum with Clique Averaging).
.. [3] A. Koloskova, S. U. Stich, M. Jaggi, "Decentralized stochastic optimization and gossip
   algorithms with compressed communication", ICML 2019 (Algorithm 2, CHOCO-SGD: D-SGD's
   gossip compressed, with error feedback; ``compressor=``).

Clique Averaging (``dsgd(clique_averaging=True)``, D-Cliques Fig. 7): each node replaces its
gradient by the average gradient of its clique (the topology's ``groups``) before stepping, and
models are still averaged with ``W`` over all neighbours; with ``momentum > 0`` the momentum
then acts on the clique-averaged gradient (eq. 4-5): $v \leftarrow m v + g$,
$\theta \leftarrow \theta - \gamma v$. With intra-clique edges removed, a node averages over
itself and its remaining clique neighbours (:func:`~topofl.topologies.clique_averaging_matrix`).
Clique Averaging sends gradients separately from models: the ledger counts, at every local
step, one gradient on every arc between two members of a clique (the gradients Fig. 7 uses; the
paper's own count, one gradient per arc of the graph, is
:func:`~topofl.topologies.messages_per_node`), then the models on every arc.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from topofl._utils.validation import check_bool
from topofl.algorithms._common import sgd_algorithm
from topofl.algorithms.base import register_algorithm
from topofl.algorithms.hparams import (
    Aggregation,
    AggregationKeywords,
    CompressionParams,
    Compressor,
    CompressorKeywords,
    Keywords,
    LocalSGD,
    LocalSGDKeywords,
)
from topofl.engine.ledger import Flow, clique_arcs
from topofl.engine.pieces import (
    SGD,
    CliqueAveraged,
    CompressedGossip,
    CompressedMessages,
    FromStart,
    MessageNoise,
    clique_index,
    compose_init,
    gossip,
    no_round_start,
    robust_gossip,
)
from topofl.engine.protocol import Algorithm, Phase, Round, Sent, Services, State

if TYPE_CHECKING:  # Unpack is typing's from Python 3.11; only the type checker reads it
    from typing_extensions import Unpack

__all__ = ["dsgd", "DSGDKeywords"]


def _require_groups(state: State, rnd: Round, env: Services) -> None:
    clique_index(rnd.topology)  # raises for a topology without groups


def _gossip_and_gradients(state: State, rnd: Round, env: Services) -> Sent:
    # Clique Averaging also sends gradients, at every local step, to the clique neighbours
    # (what Fig. 7, line 4 reads); the models then go on every arc
    sent = gossip()(state, rnd, env)
    assert rnd.topology is not None and sent.flows is not None  # gossip raised otherwise
    (model,) = sent.flows
    grads = Flow("gradient", clique_arcs(rnd.topology), model.size, model.bits, stage=0,
                 per_step=True)
    return Sent.of(grads, Flow(model.kind, model.arcs, model.size, model.bits, stage=1))


def _compressed(hp: LocalSGD, sgd: SGD, cp: CompressionParams, aggregator: str,
                ca: bool) -> Algorithm:
    """D-SGD with a ``compressor``: local SGD, then CHOCO-Gossip (CHOCO-SGD, as
    :func:`~topofl.algorithms.choco` builds it, D-SGD's hyper-parameters recorded first), or
    without error feedback the compressed models mixed (:class:`CompressedMessages`)."""
    c = cp.compression.compressor
    if aggregator != "mean":
        raise ValueError(f"aggregator={aggregator!r} does not combine with compressor={c!r}: "
                         "compressed gossip mixes public copies by W (aggregator='mean')")
    if ca:
        raise ValueError(f"clique_averaging=True does not combine with compressor={c!r}: "
                         "expected clique_averaging=False")
    comm = (CompressedGossip(cp.compression, cp.gamma) if cp.feedback
            else CompressedMessages(cp.compression))
    return sgd_algorithm("dsgd", hp, comm, local=sgd, init=(comm,), requires="doubly",
                         extra_hparams=dict(nesterov=sgd.nesterov, clique_averaging=False,
                                            **cp.as_dict()), stacks=True)


#: D-SGD's default groups (D-SGD proper: one local step, exact gossip)
_SGD, _EXACT, _NO_COMPRESSION = LocalSGD(), Aggregation(), Compressor()


class DSGDKeywords(LocalSGDKeywords, AggregationKeywords, CompressorKeywords, total=False):
    """D-SGD's flat keywords: the fields of its groups (documented at :func:`dsgd`)."""


def _exact(agg: Aggregation, ca: bool
           ) -> tuple[Callable[[State, Round, Services], Sent],
                      Callable[[State, Round, Services], None]]:
    """D-SGD's communication without a compressor, and its round hook."""
    robust, lost = agg.robust, agg.lost
    other = "clique_averaging" if ca else f"aggregator={agg.aggregator!r}"
    if lost != "renormalise" and (ca or robust):
        raise ValueError(f"lost={lost!r} does not combine with {other}, which refuses lost "
                         "messages: expected lost='renormalise'")
    if agg.noisy and (ca or robust):
        raise ValueError(f"message_noise={agg.message_noise!r}, noise_mean="
                         f"{agg.noise_mean!r} do not combine with {other}: expected 0")
    comm: Callable[[State, Round, Services], Sent]
    if robust:
        comm = robust_gossip(agg.aggregator, tau=agg.tau, trim=agg.trim, delta=agg.delta)
    else:
        noise = (MessageNoise(agg.message_noise, agg.noise_mean, agg.noise_seed) if agg.noisy
                 else None)
        comm = _gossip_and_gradients if ca else gossip(lost=lost, noise=noise)
    if agg.order == "adapt_then_combine":
        return comm, _require_groups if ca else no_round_start
    start = FromStart(comm)

    def round_start(state: State, rnd: Round, env: Services) -> None:
        if ca:
            _require_groups(state, rnd, env)
        start.round_start(state, rnd, env)

    return start, round_start


@register_algorithm("dsgd")
def dsgd(sgd: LocalSGD | float = _SGD, aggregation: Aggregation = _EXACT,
         compression: Compressor = _NO_COMPRESSION, *, nesterov: bool = False,
         clique_averaging: bool = False, **keywords: Unpack[DSGDKeywords]) -> Algorithm:
    r"""Decentralized SGD: local SGD step(s), then one gossip step ``X <- W_t X``.

    With ``clique_averaging=True`` (D-Cliques, Fig. 7; the module docstring) each node steps
    along the average gradient of its clique (the topology's ``groups``).

    Parameters
    ----------
    lr : float, default 0.1
        Learning rate $\gamma$ (``lr * decay**t`` at round ``t``).
    momentum, weight_decay : float, default 0
        Heavy-ball momentum (kept across rounds) and weight decay.
    nesterov, clique_averaging : bool, default False
    local_steps, local_epochs
        Local work per round: a number of steps (default 1: D-SGD proper), or local epochs
        (``ceil(epochs * m_i / batch_size)`` steps for client ``i``).
    decay : float, default 1
    order : {"adapt_then_combine", "parallel"}, default "adapt_then_combine"
        ``"adapt_then_combine"``: the local steps, then gossip, $W_t (x^t - \gamma g(x^t))$.
        ``"parallel"``: D-PSGD's order (Lian et al. 2017), the models the round started from
        gossiped and the local update added, $W_t x^t - \gamma g(x^t)$ for one step
        (decentralized gradient descent; decent-bench's ``DGD``;
        :class:`~topofl.engine.pieces.FromStart`); not with a ``compressor``. Recorded only
        when ``"parallel"``.
    absent : {"renormalise", "lose"}, default "renormalise"
        A client absent from a round (``[availability]``): the round's graph without it,
        its weight renormalised onto the diagonal, or lost (a row sums to less than 1, as
        decent-bench combines; :data:`~topofl.engine.availability.ABSENT_RULES`).
    lost : {"renormalise", "mass"}, default "renormalise"
        A message lost in the network (``[network] drop``): each receiver's row renormalised
        over what arrived, or the weight of a lost message lost with it
        (:func:`~topofl.engine.pieces.gossip`); ``"mass"`` not with Clique Averaging or a
        robust ``aggregator`` (they refuse drops).
    message_noise, noise_mean, noise_seed : optional
        A noisy channel, each delivered copy noised (:class:`~topofl.engine.pieces.MessageNoise`;
        decent-bench's message noise). These and ``absent``, ``lost`` are recorded only off
        their defaults (the runs before them keep their run hash).
    aggregator : {"mean", "clipped", "trimmed_mean", "median"}, default "mean"
        ``"mean"`` is gossip ``X <- W_t X``; the others are the robust rules of
        :mod:`topofl.engine.pieces.robust` (ClippedGossip's clipping at radius ``tau``, the
        coordinate-wise mean without the ``trim`` largest and smallest values, the median).
        Under ``[byzantine]`` the Byzantine senders' messages are the attack's vectors. A
        robust rule runs alone (no stack), in one process, without lost messages or Clique
        Averaging; at ``"mean"`` the header and run hash are those of a run without them.
    tau, trim, delta : optional
        ``"clipped"``'s radius (``>= 0``; ``"adaptive"``,
        :func:`~topofl.engine.pieces.robust.adaptive_radii` with budget ``delta``; ``"rank"``,
        :func:`~topofl.engine.pieces.robust.rank_radii`), ``"trimmed_mean"``'s trim.
    compressor : {"topk", "randk", "qsgd"}, optional
        Compressed gossip with error feedback through public copies (CHOCO-Gossip): D-SGD is
        then CHOCO-SGD, :func:`~topofl.algorithms.choco` (the same pieces and numbers, named
        ``"dsgd"``), without lost messages, Byzantine nodes, a robust ``aggregator`` or Clique
        Averaging. ``None``: exact gossip (recorded hyper-parameters and run hash as before).
    ratio, levels, gamma, compress_seed, rescale : optional
        The compressor's settings, as :func:`~topofl.algorithms.choco`'s.
    feedback : bool, optional
        ``False``: no error feedback, the neighbours' compressed models mixed as they arrive
        (:class:`~topofl.engine.pieces.CompressedMessages`; decent-bench's compression
        impairment), without ``gamma``.

    Returns
    -------
    Algorithm
        :class:`~topofl.engine.pieces.SGD` (or ``CliqueAveraged``) composed with
        :func:`~topofl.engine.pieces.gossip` (or ``FromStart``, ``CompressedGossip``).

    Examples
    --------
    D-SGD on a toy consensus problem: client ``i`` minimises ``(x - i)^2 / 2`` and gossips on a
    ring; every model approaches the global optimum, the mean of ``0..3`` = 1.5.

    >>> import torch
    >>> c = torch.arange(4.0, dtype=torch.float64).unsqueeze(1)
    >>> trace = tf.engine.run_rounds(tf.algorithms.dsgd(lr=0.1), torch.zeros_like(c),
    ...     tf.topologies.ring(4), lambda z, phase, rnd: z - c, rounds=300,
    ...     lr=lambda rnd, phase: 0.1 * 0.98**rnd.t)
    >>> [round(v, 3) for v in trace.evaluated().flatten().tolist()]
    [1.5, 1.5, 1.5, 1.5]
    """
    kw = Keywords("dsgd", keywords)
    local, agg, comp = kw.take(sgd, _SGD), kw.take(aggregation), kw.take(compression)
    kw.done()
    hp = local.resolved()
    nesterov = check_bool(nesterov, "nesterov")
    ca = check_bool(clique_averaging, "clique_averaging")
    if agg.robust and ca:
        raise ValueError(f"aggregator={agg.aggregator!r} does not combine with clique_averaging")
    opt = SGD(hp.momentum, hp.weight_decay, nesterov)
    hparams = dict(hp.as_dict(), nesterov=nesterov, clique_averaging=ca)
    cp = comp.checked()
    if cp is not None:
        if agg.rules():
            raise ValueError(f"compressor={cp.compression.compressor!r} combines with the "
                             "defaults order='adapt_then_combine', absent='renormalise' and "
                             f"lost='renormalise' only, got {agg.rules()}")
        return _compressed(hp, opt, cp, agg.aggregator, ca)
    if agg.robust:  # at "mean": the header (and run hash) of runs recorded before the rules
        hparams.update(aggregator=agg.aggregator, tau=agg.tau, trim=agg.trim)
        if agg.delta is not None:  # tau="adaptive" only (check_aggregator)
            hparams.update(delta=agg.delta)
    hparams.update(agg.rules())  # off their defaults only: older runs keep their hash
    communicate, round_start = _exact(agg, ca)
    return Algorithm(
        name="dsgd",
        hparams=hparams,
        phases=(Phase("all", hp.local_steps, hp.local_epochs, hp.lr),),
        init=(compose_init(opt, communicate) if agg.order == "parallel"
              else compose_init(opt)),
        local=CliqueAveraged(opt) if ca else opt,
        communicate=communicate,
        round_start=round_start,
        requires="doubly",
        lost=None if ca or agg.robust else agg.lost,
        absent=agg.absent,
        decay=hp.decay,
        stacks="dsgd with a robust aggregator does not stack" if agg.robust else True,
        byzantine=not ca,
    )
