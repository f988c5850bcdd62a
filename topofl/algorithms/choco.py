r"""CHOCO-SGD: decentralized SGD with compressed gossip and error feedback.

Each client keeps, besides its model $x_i$, a public estimate $\hat x_i$ of it that its
neighbours hold too; a round sends only the compressed change $q_i = Q(x_i - \hat x_i)$ of
that estimate, and the models move towards the neighbours' estimates.

References
----------
.. [1] A. Koloskova, S. U. Stich, M. Jaggi, "Decentralized stochastic optimization and gossip
   algorithms with compressed communication", ICML 2019 (Algorithm 2, CHOCO-SGD).
.. [2] D. Alistarh, D. Grubic, J. Li, R. Tomioka, M. Vojnovic, "QSGD: communication-efficient
   SGD via gradient quantization and encoding", NeurIPS 2017.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

from topofl._utils.rng import generator_at
from topofl._utils.validation import check_choice, check_int, check_real
from topofl.algorithms._common import check_sgd, sgd_algorithm
from topofl.algorithms.base import keywords, register_algorithm
from topofl.engine.ledger import Arcs, Flow, dtype_bits, graph_arcs
from topofl.engine.pieces import graph_of, hold, online_rows
from topofl.engine.protocol import (
    Algorithm,
    Communicate,
    Round,
    Sent,
    Services,
    State,
    run_ids,
)

__all__ = ["choco", "ChocoKeywords", "ChocoState", "COMPRESSORS", "INDEX_BITS", "kept",
           "qsgd_scale", "qsgd_bits", "compress"]

#: The compressors ``Q`` (see :func:`choco`).
COMPRESSORS = ("topk", "randk", "qsgd")

#: Bits of one coordinate index in a top-k / rand-k message (an int32).
INDEX_BITS = 32

_STREAM = 0xC40C  # tag of the compressors' random streams: (seed, tag, t, client)


@dataclass
class ChocoState:
    r"""The state CHOCO-SGD keeps besides the models (``State.own``).

    Attributes
    ----------
    public : Tensor
        ``[n, P]`` the public estimates $\hat x_i$ ($\hat x_i^0 = 0$); client ``i``'s
        neighbours hold the same copy of it (see :func:`choco`'s Notes).
    """

    public: Tensor


def kept(ratio: float, size: int) -> int:
    """The ``k`` of top-k / rand-k: ``max(1, ceil(ratio * size))`` coordinates of ``size``
    (the product rounded to 9 decimals first, so that ``0.1 * 30`` keeps 3).

    Examples
    --------
    >>> from topofl.algorithms.choco import kept
    >>> kept(0.1, 30), kept(0.1, 31), kept(0.001, 30), kept(1.0, 7)
    (3, 4, 1, 7)
    """
    return max(1, min(int(size), math.ceil(round(float(ratio) * int(size), 9))))


def qsgd_scale(levels: int, size: int) -> float:
    r"""CHOCO's rescaling of QSGD, $1/\tau$ with $\tau = 1 + \min(d / s^2, \sqrt d / s)$
    ($d$ = ``size`` coordinates, $s$ = ``levels``): it makes the quantizer a contraction,
    $E\|Q(v) - v\|^2 \le (1 - 1/\tau) \|v\|^2$ (Koloskova et al., Section 5).

    Examples
    --------
    >>> from topofl.algorithms.choco import qsgd_scale
    >>> qsgd_scale(16, 256), round(qsgd_scale(4, 10_000), 4)
    (0.5, 0.0385)
    """
    s, d = int(levels), int(size)
    return 1.0 / (1.0 + min(d / s**2, math.sqrt(d) / s))


def qsgd_bits(levels: int) -> int:
    """Bits of one quantized coordinate: its level in ``0..levels`` (``ceil(log2(levels +
    1))`` bits) and its sign (1 bit).

    Examples
    --------
    >>> from topofl.algorithms.choco import qsgd_bits
    >>> qsgd_bits(1), qsgd_bits(15), qsgd_bits(16)
    (2, 5, 6)
    """
    return max(1, math.ceil(math.log2(int(levels) + 1))) + 1


def _uniforms(seed: int, t: int, ids: np.ndarray, size: int, like: Tensor) -> Tensor:
    """``[m, size]``: row ``r`` the uniforms of client ``ids[r]`` at round ``t``."""
    u = np.stack([generator_at(seed, _STREAM, t, int(i)).random(size) for i in ids])
    return torch.from_numpy(u).to(device=like.device, dtype=like.dtype)


def _random_indices(seed: int, t: int, ids: np.ndarray, size: int, k: int,
                    device: torch.device) -> Tensor:
    """``[m, k]``: row ``r`` the ``k`` distinct coordinates client ``ids[r]`` keeps at ``t``."""
    idx = np.stack([generator_at(seed, _STREAM, t, int(i)).choice(size, k, replace=False)
                    for i in ids])
    return torch.from_numpy(idx.astype(np.int64)).to(device)


def compress(v: Tensor, compressor: str, *, ratio: float = 0.1, levels: int = 16,
             t: int = 0, ids: np.ndarray | None = None, seed: int = 0) -> Tensor:
    r"""``Q(v)`` row by row: each row of ``v`` (``[m, P]``) compressed as one vector.

    * ``"topk"``: the ``k`` = :func:`kept` ``(ratio, P)`` entries of largest magnitude kept,
      the others 0 (deterministic).
    * ``"randk"``: ``k`` distinct coordinates drawn uniformly kept, unscaled (the paper's
      biased rand-k, $E[Q(v)] = (k/P)\, v$).
    * ``"qsgd"``: QSGD with ``levels`` $= s$ levels, rescaled by :func:`qsgd_scale`:
      $Q(v)_j = \frac{1}{\tau} \|v\|_2\, \mathrm{sign}(v_j)\, \xi_j / s$ with $\xi_j$ the
      level $\lfloor s |v_j| / \|v\| \rfloor$ rounded up with probability its fractional
      part, so $E[\tau\, Q(v)] = v$.

    The random ones draw row ``r`` from the stream ``(seed, t, ids[r])`` (``ids``: the rows'
    client ids, default ``0..m-1``): a pure function of the seed, the round and the client.

    Examples
    --------
    >>> import torch
    >>> from topofl.algorithms.choco import compress
    >>> v = torch.tensor([[0.5, -3.0, 1.0, 2.0]], dtype=torch.float64)
    >>> compress(v, "topk", ratio=0.5).tolist()
    [[0.0, -3.0, 0.0, 2.0]]
    >>> q = compress(v, "randk", ratio=0.5, t=3, seed=1)
    >>> int((q != 0).sum()), bool(((q == 0) | (q == v)).all())
    (2, True)
    >>> torch.equal(q, compress(v, "randk", ratio=0.5, t=3, seed=1))
    True
    """
    m, p = v.shape
    if ids is None:
        ids = np.arange(m, dtype=np.int64)
    if m == 0 or p == 0:
        return torch.zeros_like(v)
    if compressor == "qsgd":
        s = float(levels)
        norm = torch.linalg.vector_norm(v, dim=1, keepdim=True)
        safe = torch.where(norm > 0, norm, torch.ones_like(norm))
        scaled = v.abs() * (s / safe)
        low = torch.floor(scaled)
        up = _uniforms(seed, t, ids, p, v) < (scaled - low)
        level = low + up.to(v.dtype)
        return torch.sign(v) * level * (safe * (qsgd_scale(levels, p) / s))
    k = kept(ratio, p)
    if compressor == "topk":
        idx = v.abs().topk(k, dim=1, sorted=False).indices
    elif compressor == "randk":
        idx = _random_indices(seed, t, ids, p, k, v.device)
    else:
        raise ValueError(f"compressor must be one of {list(COMPRESSORS)}, got {compressor!r}")
    return torch.zeros_like(v).scatter_(1, idx, v.gather(1, idx))


@dataclass(frozen=True)
class _ChocoGossip(Communicate):
    """The communication piece: compress, update the public estimates, gossip them."""

    compressor: str
    ratio: float
    levels: int
    gamma: float
    seed: int

    def init_(self, state: State, env: Services) -> None:
        hold(state, ChocoState(public=torch.zeros_like(state.x)))

    def flows(self, arcs: Arcs, size: int, bits: int) -> tuple[Flow, ...]:
        """One message per arc: the compressed difference (and its indices or its norm)."""
        if self.compressor == "qsgd":
            return (Flow("compressed", arcs, size, qsgd_bits(self.levels)),
                    Flow("norm", arcs, 1, bits, attached=True))
        k = kept(self.ratio, size)
        if k * (bits + INDEX_BITS) >= size * bits:  # the dense difference is no larger
            return (Flow("compressed", arcs, size, bits),)
        return (Flow("compressed", arcs, k, bits),
                Flow("indices", arcs, k, INDEX_BITS, attached=True))

    def message(self, state: State, rnd: Round, env: Services) -> Tensor:
        r"""``[m, P]`` what each client sends, $q_i = Q(x_i - \hat x_i)$; 0 from a client
        absent from the round (it sends nothing: its estimate stays)."""
        q = compress(state.x - state.own_as(ChocoState).public, self.compressor,
                     ratio=self.ratio, levels=self.levels, t=rnd.t, ids=run_ids(env),
                     seed=self.seed)
        on = online_rows(rnd, env)
        if on is not None:
            q.mul_(on.to(device=q.device, dtype=q.dtype).unsqueeze(1))
        return q

    def __call__(self, state: State, rnd: Round, env: Services) -> Sent:
        topo = graph_of(rnd)
        public = state.own_as(ChocoState).public
        public.add_(self.message(state, rnd, env))  # x^_j <- x^_j + q_j, at every holder of x^_j
        mixed = public.clone()
        env.mixer.mix_(topo, mixed)  # sum_j w_ij x^_j
        # x_i += gamma sum_j w_ij (x^_j - x^_i)
        state.x.add_(mixed.sub_(public), alpha=self.gamma)
        size, bits = int(state.x.shape[1]), dtype_bits(state.x.dtype)
        return Sent.of(*self.flows(graph_arcs(topo), size, bits))


@dataclass(frozen=True)
class ChocoKeywords:
    """The hyper-parameters of :func:`choco` as a call gives them (documented there)."""

    lr: float = 0.1
    compressor: str = "topk"
    ratio: float = 0.1
    levels: int = 16
    gamma: float = 0.2
    momentum: float = 0.0
    weight_decay: float = 0.0
    local_steps: int | None = None
    local_epochs: float | None = None
    decay: float = 1.0
    compress_seed: int = 0


@register_algorithm("choco")
@keywords(ChocoKeywords)
def choco(kw: ChocoKeywords) -> Algorithm:
    r"""CHOCO-SGD (Koloskova, Stich & Jaggi 2019, Algorithm 2): D-SGD with compressed gossip.

    Every client keeps its model $x_i$ and a public estimate $\hat x_i$ ($\hat x_i^0 = 0$),
    which its neighbours hold too. A round, with $W$ the round's mixing matrix:

    1. local SGD: $x_i^{t+1/2} = x_i^t - \eta\, g_i(x_i^t)$;
    2. compression: $q_i = Q(x_i^{t+1/2} - \hat x_i^t)$, sent to every neighbour;
    3. estimates: $\hat x_j^{t+1} = \hat x_j^t + q_j$ for ``i`` and its neighbours;
    4. consensus: $x_i^{t+1} = x_i^{t+1/2} + \gamma \sum_j w_{ij} (\hat x_j^{t+1} -
       \hat x_i^{t+1})$.

    With no compression ($Q$ the identity: ``ratio=1`` top-k) and $\gamma = 1$,
    $\hat x^{t+1} = x^{t+1/2}$ and step 4 is $x^{t+1} = W x^{t+1/2}$: D-SGD exactly.

    Parameters
    ----------
    lr : float, default 0.1
        The SGD step $\eta$ (``lr * decay**t`` at round ``t``).
    compressor : {"topk", "randk", "qsgd"}, default "topk"
        $Q$, applied to each client's whole flattened difference (one vector of ``P``
        numbers, not layer by layer): ``"topk"`` keeps the ``k`` entries of largest
        magnitude, ``"randk"`` ``k`` uniformly drawn entries, unscaled (the paper's biased
        rand-k: $E[Q(v)] = (k/P) v$), ``"qsgd"`` QSGD with ``levels`` levels rescaled by
        $1/\tau$ as the paper does (:func:`compress`, :func:`qsgd_scale`).
    ratio : float in (0, 1], default 0.1
        Top-k / rand-k: the fraction of coordinates kept, ``k = max(1, ceil(ratio * P))``
        (:func:`kept`). Not used by ``"qsgd"``.
    levels : int, default 16
        QSGD's number of levels $s$ (``>= 1``). Not used by top-k / rand-k.
    gamma : float in (0, 1], default 0.2
        The consensus step size $\gamma$.
    momentum, weight_decay, local_steps, local_epochs, decay
        The local SGD of step 1, as :func:`~topofl.algorithms.dsgd`'s.
    compress_seed : int, default 0
        Seed of rand-k's and QSGD's draws: client ``i`` at round ``t`` draws from the stream
        ``(compress_seed, t, i)``, a pure function of them (so a resumed, distributed or
        stacked run draws the same; named apart from the run's ``seed``, as ``sample_seed``
        is).

    Returns
    -------
    Algorithm
        :class:`~topofl.engine.pieces.SGD` composed with the compressed gossip;
        ``requires="doubly"``; ``state.own`` is a :class:`ChocoState`.

    Notes
    -----
    Messages: one per arc of the round's graph, kind ``"compressed"``: top-k / rand-k send
    ``k`` values of the model's precision with ``k`` 32-bit indices attached (kind
    ``"indices"``), ``ceil(k b / 8) + 4k`` bytes for ``b``-bit numbers (the dense ``P``
    values instead, without indices, when that is no larger: ``k (b + 32) >= P b``); QSGD
    sends ``P`` coordinates of :func:`qsgd_bits` ``(levels)`` bits (a sign and a level in
    ``0..s``), ``ceil(P (ceil(log2(s + 1)) + 1) / 8)`` bytes, with the norm attached (kind
    ``"norm"``, one ``b``-bit number).

    Every holder of $\hat x_j$ updates it with the same $q_j$, so the run keeps one copy per
    client: exact on a static graph with every client present (the paper's setting). A client
    absent from a round (``[availability]``) takes no step and sends nothing (its $q$ is 0,
    its estimate stays); on a time-varying graph, or after a client was absent, a client is
    taken to hold its (new) neighbours' current estimates: the catch-up this would need is
    neither simulated nor counted. The paper's theory needs $Q$ to be a contraction
    ($E\|Q(v) - v\|^2 \le (1 - \omega)\|v\|^2$): top-k and unscaled rand-k are, with
    $\omega = k/P$, and rescaled QSGD with $\omega = 1/\tau$; a compressor scaled to be
    unbiased is not and may diverge.

    With a constant step and full gradients, CHOCO's fixed point has $q = 0$, so
    $\hat x = x^{t+1/2}$ and $x = ((1 - \gamma) I + \gamma W)\, x^{t+1/2}$: D-SGD's fixed
    point on the lazier $W_\gamma = (1 - \gamma) I + \gamma W$, whatever the compressor
    (measured to 1e-14 on the example below and in the tests). The theory's $\gamma$ shrinks
    with $\omega$ and the spectral gap; on the 8-ring toy of the tests (``P = 30``) top-k and
    QSGD at 10 % converge for $\gamma \le 0.3$ and diverge at 0.5, rand-k at 0.3.

    Examples
    --------
    Client ``i`` minimises $a_i |x - b_i|^2 / 2$ on 3 coordinates; CHOCO sending the top 1
    of 3 reaches D-SGD's point on $W_\gamma$.

    >>> import torch
    >>> a = torch.tensor([[1.0], [2.0], [1.0], [4.0]], dtype=torch.float64)
    >>> b = torch.tensor([[0.0, 1.0, 2.0], [1.0, 0.0, 1.0], [2.0, 2.0, 0.0], [3.0, 1.0, 2.0]],
    ...                  dtype=torch.float64)
    >>> grad = lambda z, phase, rnd: a * (z - b)
    >>> ring = tf.topologies.ring(4)
    >>> lazy = tf.Topology.from_matrix(0.7 * np.eye(4) + 0.3 * ring.to_dense())
    >>> run = lambda algo, topo: tf.engine.run_rounds(algo, torch.zeros_like(b), topo, grad,
    ...                                               rounds=2000).evaluated()
    >>> x = run(tf.algorithms.choco(lr=0.05, ratio=0.3, gamma=0.3), ring)
    >>> float((x - run(tf.algorithms.dsgd(lr=0.05), lazy)).abs().max()) < 1e-12
    True
    """
    (lr, compressor, ratio, levels, gamma, momentum, weight_decay, local_steps, local_epochs, decay,
     compress_seed) = (
        kw.lr, kw.compressor, kw.ratio, kw.levels, kw.gamma, kw.momentum, kw.weight_decay,
        kw.local_steps, kw.local_epochs, kw.decay, kw.compress_seed)
    hp = check_sgd(lr, momentum, weight_decay, decay, local_steps, local_epochs)
    compressor = check_choice(compressor, "compressor", COMPRESSORS)
    ratio = check_real(ratio, "ratio", low=0, high=1, low_open=True)
    levels = check_int(levels, "levels", low=1)
    gamma = check_real(gamma, "gamma", low=0, high=1, low_open=True)
    seed = check_int(compress_seed, "compress_seed", low=0)
    comm = _ChocoGossip(compressor, ratio, levels, gamma, seed)
    return sgd_algorithm("choco", hp, comm, init=(comm,), requires="doubly",
                         extra_hparams=dict(compressor=compressor, ratio=ratio, levels=levels,
                                            gamma=gamma, compress_seed=seed), stacks=True)
