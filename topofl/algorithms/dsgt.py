r"""Gradient tracking: DIGing and DSGT, a tracker of the average gradient gossiped beside the model.

D-SGD with a constant step on heterogeneous objectives stops at a biased point: each client
steps along its own gradient, not the average one. Gradient tracking replaces the gradient by a
tracker $y_i$ that each client gossips beside its model and corrects with its newest gradient
difference, so that $\frac1n \sum_i y_i$ stays the average of the clients' latest gradients;
at a fixed point every $y_i$ is that average, and it vanishes only at the optimum.

With a ``compressor``, :func:`dsgt` is BEER: the update of the authors' numerical experiments
(``liboyue/beer``, ``experiments/BEER.py``) with topofl's compressors in it, not theirs. Their
script takes its compressors from ``nda.optimizers.compressor``
(``liboyue/Network-Distributed-Algorithm``), whose ``top`` keeps the ``a`` smallest *signed*
entries of each agent's vector (numpy's ``argpartition``; topofl's ``"topk"`` keeps the largest
magnitudes) and whose QSGD (``gsgd``, $s = 2^{b-1}$ levels) is unscaled, $E[Q(v)] = v$
(topofl's ``"qsgd"`` carries CHOCO's $1/\tau$,
:func:`~topofl.engine.pieces.compression.qsgd_scale`); rand-k is unscaled in both, drawn from
other random streams. Their QSGD is ``dsgt(compressor="qsgd", rescale=False)`` (given the
same uniforms, BEER with it equals their loop to 1.3e-15 over 20 rounds,
``tests/algorithms/test_choco_replay.py``). Their
``top`` is not offered: it ranks signed values where top-k ranks magnitudes, and on that
test's toy it takes BEER 24 away from the optimum in 200 rounds, where top-k reaches it to
1.1e-4. Public copies $H^0 = G^0 = 0$, tracker $V^0 = g(x^0)$ (the first round's
gradient, a mini-batch's in a stochastic run, where their script takes each agent's full local
gradient), and with $C$ the compressor, $W$ the round's mixing matrix and rows the clients,

* $x^{t+1} = x^t + \gamma (W - I) H^t - \eta V^t$, $\;H^{t+1} = H^t + C(x^{t+1} - H^t)$;
* $V^{t+1} = V^t + \gamma (W - I) G^t + g(x^{t+1}) - g(x^t)$,
  $\;G^{t+1} = G^t + C(V^{t+1} - G^t)$.

Round ``t`` of a run takes the gradient $g(x^t)$ (completing $V^t$), compresses
$V^t - G^{t-1}$ into $G^t$ (from the second round: the first sends no tracker, $G^0 = 0$), then
steps the model and compresses $x^{t+1} - H^t$; the tracker keeps $V^t + \gamma (W - I) G^t$
for the next gradient. Its messages: the compressed model difference (kind ``"compressed"``)
and the compressed tracker difference (``"compressed_tracker"``) on every arc, each counted as
CHOCO's (:meth:`~topofl.engine.pieces.Compression.flows`); rand-k and QSGD draw the model's
from CHOCO's stream ``(compress_seed, t, i)`` and the tracker's from the next tag. With the
identity compressor and $\gamma = 1$, $H^t = x^t$ and $G^t = V^t$ from round 1 on: BEER is DIGing
restarted after one gradient step (DIGing from $x^1 = x^0 - \eta g(x^0)$). At a fixed point
(full gradients, constant step) the messages are 0, so $H = x$ and $G = V$: the trackers are
the average gradient and the models agree at the exact optimum, whatever the compressor.
As for CHOCO (:func:`~topofl.algorithms.choco`'s Notes), every holder of a public copy adds
the same message, so the run keeps one copy per client; on a time-varying graph a client is
taken to hold its new neighbours' copies, and an absent client sends nothing and stands still.

References
----------
.. [1] A. Nedić, A. Olshevsky, W. Shi, "Achieving geometric convergence for distributed
   optimization over time-varying graphs", SIAM J. Optim. 27(4), 2017 (DIGing).
.. [2] S. Pu, A. Nedić, "Distributed stochastic gradient tracking methods", Math. Program.
   187, 2021 (DSGT).
.. [3] H. Zhao, B. Li, Z. Li, P. Richtárik, Y. Chi, "BEER: Fast O(1/T) rate for decentralized
   nonconvex optimization with communication compression", NeurIPS 2022 (Algorithm 1,
   BEER: gradient tracking with the model and the tracker gossiped compressed, each with
   error feedback through its public copy; ``compressor=``).
.. [4] J. Xu, S. Zhu, Y. C. Soh, L. Xie, "Augmented distributed gradient methods for
   multi-agent optimization under uncoordinated constant stepsizes", IEEE CDC 2015 (Aug-DGM,
   ``variant="augdgm"``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch
from torch import Tensor

from topofl._utils.validation import check_choice
from topofl.algorithms.base import register_algorithm
from topofl.algorithms.hparams import (
    Compressor,
    CompressorKeywords,
    Keywords,
    check_decay,
    check_lr,
    check_wd,
    with_feedback,
)
from topofl.engine.ledger import Flow, dtype_bits, graph_arcs
from topofl.engine.pieces import Compression, compose_init, consensus_step_, graph_of, hold
from topofl.engine.pieces.compression import STREAM
from topofl.engine.protocol import (
    Algorithm,
    Communicate,
    LocalUpdate,
    Phase,
    Round,
    Sent,
    Services,
    State,
)

if TYPE_CHECKING:  # Unpack is typing's from Python 3.11; only the type checker reads it
    from typing_extensions import Unpack

__all__ = ["dsgt", "TrackingState", "BeerState", "VARIANTS"]

#: The three forms of the update (see :func:`dsgt`).
VARIANTS = ("diging", "dsgt", "augdgm")


@dataclass
class TrackingState:
    """The state gradient tracking keeps besides the models (``State.own``).

    Attributes
    ----------
    y : Tensor
        ``[n, P]`` the trackers $y_i$ (between rounds: $W y_t$, the mixed part of
        $y_{t+1}$; a client's latest gradient is added at its next step).
    grad : Tensor
        ``[n, P]`` each client's gradient at its latest step, $g_i(x_t)$ (0 before the first).
    lr : Tensor
        ``[n]`` each client's step size in the round (0: an absent client, which stands
        still); DIGing applies it after the mix.
    """

    y: Tensor
    grad: Tensor
    lr: Tensor


@dataclass
class BeerState(TrackingState):
    r"""The state of gradient tracking with a ``compressor`` (BEER): a :class:`TrackingState`
    whose tracker ``y`` holds BEER's $V$, and the public copies.

    Attributes
    ----------
    h : Tensor
        ``[n, P]`` the models' public copies $H$ ($H^0 = 0$).
    g : Tensor
        ``[n, P]`` the trackers' public copies $G$ ($G^0 = 0$).
    """

    h: Tensor
    g: Tensor


def standing(lr: Tensor) -> Tensor | None:
    """``[m, 1]`` bool: the clients whose rate is 0 this round (absent: they stand still), or
    ``None`` when every client moves (the common case, no masking)."""
    still = lr == 0
    return still.unsqueeze(1) if bool(still.any()) else None


@dataclass(frozen=True)
class _Tracking(LocalUpdate):
    """The local piece: the gradient at ``x`` updates the tracker (and, for DSGT, the model)."""

    weight_decay: float
    adapt_first: bool  # DSGT: x <- x - lr y before the mix
    public_copies: bool = False  # BEER: the state is a BeerState

    @property
    def rowwise(self) -> bool:
        return True

    def init_(self, state: State, env: Services) -> None:
        x = state.x
        zero = dict(y=torch.zeros_like(x), grad=torch.zeros_like(x),
                    lr=torch.zeros(x.shape[0], dtype=x.dtype, device=x.device))
        hold(state, BeerState(h=torch.zeros_like(x), g=torch.zeros_like(x), **zero)
             if self.public_copies else TrackingState(**zero))

    def update(self, state: State, grads: Tensor, phase: Phase, lr: Tensor, rnd: Round,
               env: Services) -> None:
        own = state.own_as(TrackingState)
        if self.weight_decay:
            grads.add_(state.x, alpha=self.weight_decay)
        still = standing(lr)
        if still is None:
            own.y.add_(grads).sub_(own.grad)  # y_t = W y_{t-1} + g(x_t) - g(x_{t-1})
            own.grad.copy_(grads)
        else:  # an absent client's tracker and gradient stay as they were
            own.y.copy_(torch.where(still, own.y, own.y + grads - own.grad))
            own.grad.copy_(torch.where(still, own.grad, grads))
        own.lr.copy_(lr)
        if self.adapt_first:
            state.x.addcmul_(own.y, lr.unsqueeze(1), value=-1.0)

    def fused(self, executor: Any) -> None:
        return None


def _communicate(variant: str) -> Callable[[State, Round, Services], Sent]:
    def communicate(state: State, rnd: Round, env: Services) -> Sent:
        topo = graph_of(rnd)
        own = state.own_as(TrackingState)
        arcs, size, bits = graph_arcs(topo), int(state.x.shape[1]), dtype_bits(state.x.dtype)
        if variant == "augdgm":  # y_t = W (y_{t-1} + g_t - g_{t-1}), y_0 = g_0 unmixed
            tracker = rnd.t > 0
            if tracker:
                env.mixer.mix_(topo, own.y)
            state.x.addcmul_(own.y, own.lr.unsqueeze(1), value=-1.0)
            env.mixer.mix_(topo, state.x)  # x_{t+1} = W (x_t - lr y_t)
            model = Flow("model", arcs, size, bits, stage=1)
            return Sent.of(Flow("tracker", arcs, size, bits), model) if tracker else Sent.of(model)
        env.mixer.mix_(topo, state.x)
        if variant == "diging":  # x_{t+1} = W x_t - lr y_t
            state.x.addcmul_(own.y, own.lr.unsqueeze(1), value=-1.0)
        env.mixer.mix_(topo, own.y)
        return Sent.of(Flow("model", arcs, size, bits), Flow("tracker", arcs, size, bits))

    return communicate


@dataclass(frozen=True)
class _Beer(Communicate):
    """BEER's round after the gradient (see the module docstring): the tracker's compressed
    difference, the model's step and its compressed difference, the tracker's mix."""

    compression: Compression
    gamma: float

    def __call__(self, state: State, rnd: Round, env: Services) -> Sent:
        topo = graph_of(rnd)
        own = state.own_as(BeerState)
        c, arcs = self.compression, graph_arcs(topo)
        size, bits = int(state.x.shape[1]), dtype_bits(state.x.dtype)
        flows: tuple[Flow, ...] = ()
        if rnd.t > 0:  # G^t = G^{t-1} + C(V^t - G^{t-1}); G^0 = 0: none in the first round
            own.g.add_(c.message(own.y - own.g, rnd, env, stream=STREAM + 1))
            flows = c.flows(arcs, size, bits, kind="compressed_tracker")
        # x^{t+1} = x^t + gamma (W - I) H^t - eta V^t, then H^{t+1} = H^t + C(x^{t+1} - H^t)
        consensus_step_(env, topo, state.x, own.h, self.gamma)
        state.x.addcmul_(own.y, own.lr.unsqueeze(1), value=-1.0)
        own.h.add_(c.message(state.x - own.h, rnd, env))
        # V^t + gamma (W - I) G^t: the next step adds g(x^{t+1}) - g(x^t)
        consensus_step_(env, topo, own.y, own.g, self.gamma)
        return Sent.of(*c.flows(arcs, size, bits), *flows)


#: Gradient tracking's default: exact gossip (no compressor; BEER with one)
_NO_COMPRESSION = Compressor()


@register_algorithm("dsgt")
def dsgt(lr: float = 0.1, compression: Compressor = _NO_COMPRESSION, *,
         variant: str = "diging", weight_decay: float = 0.0, decay: float = 1.0,
         **keywords: Unpack[CompressorKeywords]) -> Algorithm:
    r"""Gradient tracking: each client gossips a tracker of the average gradient with its model.

    With $g_i$ client $i$'s (stochastic) gradient, $W$ the round's mixing matrix, $\gamma$ the
    step and $y_0 = g(x_0)$, every round is one gradient per client and one gossip step:

    * ``variant="diging"`` (DIGing, Nedić, Olshevsky & Shi 2017; combine, then step):
      $x_{t+1} = W x_t - \gamma\, y_t$, $\;y_{t+1} = W y_t + g(x_{t+1}) - g(x_t)$.
    * ``variant="dsgt"`` (DSGT, Pu & Nedić 2021; step, then combine):
      $x_{t+1} = W (x_t - \gamma\, y_t)$, $\;y_{t+1} = W y_t + g(x_{t+1}) - g(x_t)$.
    * ``variant="augdgm"`` (Aug-DGM, Xu, Zhu, Soh & Xie 2015, also ATC-DIGing; the tracker
      combined after its correction): $x_{t+1} = W (x_t - \gamma\, y_t)$,
      $\;y_{t+1} = W (y_t + g(x_{t+1}) - g(x_t))$, $y_0 = g(x_0)$ unmixed. The tracker
      travels before the model in a round (ledger stages 0 and 1; none in round 0);
      decent-bench's ``AugDGM``.

    With a column-stochastic $W$ the trackers' sum is the sum of the latest gradients at every
    round, so with full gradients and a constant step the fixed point is consensus at the exact
    optimum of $\sum_i f_i$ (D-SGD's keeps a bias of order $\gamma$ under heterogeneity).

    Parameters
    ----------
    lr : float, default 0.1
        The step $\gamma$ (``lr * decay**t`` at round ``t``).
    variant : {"diging", "dsgt", "augdgm"}, default "diging"
    weight_decay : float, default 0
        Added to the gradient ($g_i + \lambda x_i$: the tracked objective is regularised).
    decay : float, default 1
    compression : Compressor, default ``Compressor()``
        The compressed gossip (default: none, exact gossip); its fields are also taken flat:
        ``compressor``, ``ratio``, ``levels``, ``gamma``, ``compress_seed`` below.
    compressor : {"topk", "randk", "qsgd"}, optional
        Gossip the model and the tracker compressed, each with error feedback through its
        public copy: BEER (Zhao et al. 2022, the module docstring), whose model update is
        DIGing's (``variant="diging"`` only). No lost messages (as without). ``None``: exact
        gossip (recorded hyper-parameters and run hash as before).
    ratio, levels, gamma, compress_seed : optional
        The compressor's settings as :func:`~topofl.algorithms.choco` reads them (defaults
        0.1, 16, 0.2 and 0; ``gamma`` is BEER's consensus step, ``lr`` its $\eta$), given
        only with a ``compressor``.

    Returns
    -------
    Algorithm
        One local step (one gradient) per gossip step; ``state.own`` is a
        :class:`TrackingState` (a :class:`BeerState` with a ``compressor``).

    Notes
    -----
    Messages: the model and the tracker travel on every arc of the round's graph, two
    messages of ``P`` numbers each: twice D-SGD's messages and bytes (ledger kinds
    ``"model"`` and ``"tracker"``). A client absent from a round (``[availability]``) neither
    steps nor updates its tracker; the round's graph without it stays doubly stochastic, so
    the trackers still sum to the latest gradients. Combining before the step makes DIGing's
    stable steps smaller: on the example below (``L = 4``) DIGing diverges at ``lr=0.2``
    where ``variant="dsgt"`` converges. BEER's consensus step ``gamma`` must shrink with the
    compression: on the 8-ring toy of the tests (``P = 30``, ``lr=0.05``, 4000 rounds) top-k
    at 10 % reaches the optimum to 1e-13 for ``gamma`` 0.2 and 0.3 and diverges at 0.5,
    rand-k at 10 % needs 0.1 (diverges at 0.2), QSGD with 16 levels converges up to 1.

    Examples
    --------
    Client ``i`` minimises $a_i (x - b_i)^2 / 2$; the optimum of the sum is
    $\sum a_i b_i / \sum a_i = 2$. With a constant step DIGing reaches it exactly, where
    D-SGD stays off by its heterogeneity bias.

    >>> import torch
    >>> a = torch.tensor([[1.0], [2.0], [1.0], [4.0]], dtype=torch.float64)
    >>> b = torch.tensor([[0.0], [1.0], [2.0], [3.0]], dtype=torch.float64)
    >>> grad = lambda z, phase, rnd: a * (z - b)
    >>> ring = tf.topologies.ring(4)
    >>> run = lambda algo: tf.engine.run_rounds(algo, torch.zeros_like(b), ring, grad,
    ...                                         rounds=400).evaluated().flatten().tolist()
    >>> [round(v, 8) for v in run(tf.algorithms.dsgt(lr=0.05))]
    [2.0, 2.0, 2.0, 2.0]
    >>> [round(v, 3) for v in run(tf.algorithms.dsgd(lr=0.05))]
    [1.977, 1.906, 2.026, 2.046]

    BEER, the model and the tracker sent QSGD-quantized, reaches the same exact optimum:

    >>> [round(v, 8) for v in run(tf.algorithms.dsgt(lr=0.05, compressor="qsgd", levels=4))]
    [2.0, 2.0, 2.0, 2.0]
    """
    kw = Keywords("dsgt", keywords)
    comp = kw.take(compression)
    kw.done()
    lr = check_lr(lr)
    variant = check_choice(variant, "variant", VARIANTS)
    wd = check_wd(weight_decay)
    decay = check_decay(decay)
    adapt_first = variant != "diging"
    cp = with_feedback(comp.checked(), "dsgt")
    hparams = dict(lr=lr, variant=variant, weight_decay=wd, decay=decay)
    if cp is not None:  # without: the hparams (and run hash) recorded before BEER
        if adapt_first:
            raise ValueError(f"variant={variant!r} does not combine with compressor="
                             f"{cp.compression.compressor!r}: BEER steps as DIGing does, "
                             "expected variant='diging'")
        hparams.update(cp.as_dict())
    local = _Tracking(wd, variant == "dsgt", public_copies=cp is not None)
    return Algorithm(
        name="dsgt",
        hparams=hparams,
        phases=(Phase("all", 1, None, lr),),
        init=compose_init(local),
        local=local,
        communicate=(_communicate(variant) if cp is None
                     else _Beer(cp.compression, cp.gamma)),
        requires="doubly",
        decay=decay,
        stacks=True,
    )
