r"""CHOCO-SGD: decentralized SGD with compressed gossip and error feedback.

Each client keeps, besides its model $x_i$, a public estimate $\hat x_i$ of it that its
neighbours hold too; a round sends only the compressed change $q_i = Q(x_i - \hat x_i)$ of
that estimate, and the models move towards the neighbours' estimates.

Messages: one per arc of the round's graph, kind ``"compressed"``: top-k / rand-k send
``k`` values of the model's precision with ``k`` 32-bit indices attached (kind
``"indices"``), ``ceil(k b / 8) + 4k`` bytes for ``b``-bit numbers (the dense ``P``
values instead, without indices, when that is no larger: ``k (b + 32) >= P b``); QSGD
sends ``P`` coordinates of :func:`qsgd_bits` ``(levels)`` bits (a sign and a level in
``0..s``), ``ceil(P (ceil(log2(s + 1)) + 1) / 8)`` bytes, with the norm attached (kind
``"norm"``, one ``b``-bit number).

As shipped, the authors' code differs besides the order (:func:`choco`'s ``order``):
``convex_code`` starts its estimates at the models, $\hat x^0 = x^0$ (topofl's $\hat x^0 =
0$ is theirs when $x^0 = 0$; ``dl_code`` starts them at 0); ``dl_code``'s top-k / rand-k
keep ``max(1, int(size * (1 - compress_ratio)))`` entries of a tensor (rounded down where
:func:`kept` rounds up: the same where ``ratio * size`` is whole), its QSGD has $s = 2^b -
1$ levels for ``quantize_level`` $b$ and by default (``is_biased=False``) no $1/\tau$:
``choco(compressor="qsgd", rescale=False)``. Replayed on the toy quadratics of
``tests/algorithms/test_choco_replay.py`` (given the same random draws),
``order="consensus_first"`` equals ``convex_code``'s loop (top, random-biased, qsgd-biased
and -unbiased) to 1.3e-15 over 20 rounds and, with ``per_tensor=True``, ``dl_code``'s
``ParallelCHOCO_V`` (top-k, QSGD with and without $1/\tau$) to 1.8e-15; after 20 rounds the
paper's order is 0.21-0.36 away from the code's, and the whole vector compressed at once
0.013-0.046 from the tensors compressed one by one.

In the paper's order, with a constant step and full gradients, CHOCO's fixed point has
$q = 0$, so
$\hat x = x^{t+1/2}$ and $x = ((1 - \gamma) I + \gamma W)\, x^{t+1/2}$: D-SGD's fixed
point on the lazier $W_\gamma = (1 - \gamma) I + \gamma W$, whatever the compressor
(measured to 1e-14 on :func:`choco`'s example and in the tests). The theory's $\gamma$ shrinks
with $\omega$ and the spectral gap; on the 8-ring toy of the tests (``P = 30``) top-k and
QSGD at 10 % converge for $\gamma \le 0.3$ and diverge at 0.5, rand-k at 0.3.

References
----------
.. [1] A. Koloskova, S. U. Stich, M. Jaggi, "Decentralized stochastic optimization and gossip
   algorithms with compressed communication", ICML 2019 (Algorithm 2, CHOCO-SGD).
.. [2] D. Alistarh, D. Grubic, J. Li, R. Tomioka, M. Vojnovic, "QSGD: communication-efficient
   SGD via gradient quantization and encoding", NeurIPS 2017.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from topofl._utils.validation import check_bool, check_choice
from topofl.algorithms._common import sgd_algorithm
from topofl.algorithms.base import register_algorithm
from topofl.algorithms.hparams import (
    Compressor,
    CompressorKeywords,
    Keywords,
    LocalSGD,
    LocalSGDKeywords,
    with_feedback,
)
from topofl.engine.pieces.compression import (
    COMPRESSORS,
    INDEX_BITS,
    ORDERS,
    ChocoState,
    CompressedGossip,
    compress,
    kept,
    qsgd_bits,
    qsgd_scale,
)
from topofl.engine.protocol import Algorithm

if TYPE_CHECKING:  # Unpack is typing's from Python 3.11; only the type checker reads it
    from typing_extensions import Unpack

__all__ = ["choco", "ChocoKeywords", "ChocoState", "COMPRESSORS", "ORDERS", "INDEX_BITS",
           "kept", "qsgd_scale", "qsgd_bits", "compress"]

#: CHOCO-SGD's default groups: one local SGD step, top-10 % compression with ``gamma=0.2``
_SGD, _TOPK = LocalSGD(), Compressor("topk", 0.1, 16, 0.2, 0)


class ChocoKeywords(LocalSGDKeywords, CompressorKeywords, total=False):
    """CHOCO-SGD's flat keywords: the fields of its groups (documented at :func:`choco`)."""


@register_algorithm("choco")
def choco(sgd: LocalSGD | float = _SGD, compression: Compressor = _TOPK, *,
          order: str = "compress_first", per_tensor: bool = False,
          **keywords: Unpack[ChocoKeywords]) -> Algorithm:
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

    ``order="consensus_first"`` runs the authors' code's order instead (``epfml/ChocoSGD``:
    ``convex_code/logistic.py``, ``fit``'s ``choco`` method, and ``dl_code``'s
    ``ParallelCHOCO`` / ``ParallelCHOCO_V``): the consensus step on the estimates as they
    stand, $x_i^{t+1} = x_i^{t+1/2} + \gamma \sum_j w_{ij} (\hat x_j^t - \hat x_i^t)$, then
    $q_i = Q(x_i^{t+1} - \hat x_i^t)$ and $\hat x^{t+1} = \hat x^t + q$.

    Parameters
    ----------
    sgd : LocalSGD or float, default ``LocalSGD()``
        The local SGD of step 1 (a number: its learning rate, ``choco(0.5)``); its fields are
        also taken flat: ``lr``, ``momentum``, ``weight_decay``, ``local_steps``,
        ``local_epochs``, ``decay`` below.
    compression : Compressor, default ``Compressor("topk", 0.1, 16, 0.2, 0)``
        $Q$ and the consensus step; its fields are also taken flat: ``compressor``, ``ratio``,
        ``levels``, ``gamma``, ``compress_seed`` below (a setting left ``None``: the default
        written there). Its ``compressor`` may not be ``None``: CHOCO always compresses.
    lr : float, default 0.1
        The SGD step $\eta$ (``lr * decay**t`` at round ``t``).
    compressor : {"topk", "randk", "qsgd"}, default "topk"
        $Q$, applied to each client's whole flattened difference (one vector of ``P``
        numbers; each parameter tensor on its own with ``per_tensor``): ``"topk"`` keeps
        the ``k`` entries of largest magnitude, ``"randk"`` ``k`` uniformly drawn entries,
        unscaled (the paper's biased rand-k: $E[Q(v)] = (k/P) v$), ``"qsgd"`` QSGD with
        ``levels`` levels rescaled by $1/\tau$ as the paper does (:func:`compress`,
        :func:`qsgd_scale`; ``rescale=False``: without it, see the module).
    ratio : float in (0, 1], default 0.1
        Top-k / rand-k: the fraction of coordinates kept, ``k = max(1, ceil(ratio * P))``
        (:func:`kept`). Not used by ``"qsgd"``.
    levels : int, default 16
        QSGD's number of levels $s$ (``>= 1``). Not used by top-k / rand-k.
    gamma : float in (0, 1], default 0.2
        The consensus step size $\gamma$.
    order : {"compress_first", "consensus_first"}, default "compress_first"
        The paper's order (steps 2-4) or the authors' code's (above); recorded only when
        not the default.
    per_tensor : bool, default False
        Compress each parameter tensor on its own (``env.layout``'s pieces), as CHOCO's
        ``dl_code`` does: :func:`kept` ``(ratio, size)`` of each, or each one's QSGD norm
        and $\tau$ (:func:`compress`'s ``parts``); recorded only when ``True``.
    momentum, weight_decay, local_steps, local_epochs, decay
        The local SGD of step 1, as :func:`~topofl.algorithms.dsgd`'s.
    compress_seed : int, default 0
        Seed of rand-k's and QSGD's draws: client ``i`` at round ``t`` draws from the stream
        ``(compress_seed, t, i)`` (a resumed, distributed or stacked run draws the same).

    Returns
    -------
    Algorithm
        :class:`~topofl.engine.pieces.SGD` composed with CHOCO-Gossip
        (:class:`~topofl.engine.pieces.CompressedGossip`); ``requires="doubly"``;
        ``state.own`` is a :class:`ChocoState`. ``dsgd(compressor=..., ...)`` is this
        algorithm (the same pieces, named ``"dsgd"``: :func:`~topofl.algorithms.dsgd`).

    Notes
    -----
    Every holder of $\hat x_j$ updates it with the same $q_j$, so the run keeps one copy per
    client: exact on a static graph with every client present (the paper's setting). A client
    absent from a round (``[availability]``) takes no step and sends nothing (its $q$ is 0,
    its estimate stays); on a time-varying graph, or after a client was absent, a client is
    taken to hold its (new) neighbours' current estimates: the catch-up this would need is
    neither simulated nor counted. The paper's theory needs $Q$ to be a contraction
    ($E\|Q(v) - v\|^2 \le (1 - \omega)\|v\|^2$): top-k and unscaled rand-k are, with
    $\omega = k/P$, and rescaled QSGD with $\omega = 1/\tau$; a compressor scaled to be
    unbiased is not and may diverge.

    The authors' code as shipped, CHOCO's fixed point and its messages: see the module.

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
    kw = Keywords("choco", keywords)
    hp, comp = kw.take(sgd, _SGD).resolved(), kw.take(compression)
    kw.done()
    order = check_choice(order, "order", ORDERS)
    per_tensor = check_bool(per_tensor, "per_tensor")
    cp = with_feedback(comp.checked(), "choco")
    if cp is None:  # Compressor() given: no compressor, what dsgd runs
        raise TypeError(f"choco() compresses its gossip: compressor must be one of "
                        f"{list(COMPRESSORS)}, got None (exact gossip: dsgd)")
    comm = CompressedGossip(dataclasses.replace(cp.compression, per_tensor=per_tensor),
                            cp.gamma, order)
    extra = cp.as_dict()  # the options below recorded only away from their defaults, so
    if order != ORDERS[0]:  # that the runs before them keep their hyper-parameters and hash
        extra["order"] = order
    if per_tensor:
        extra["per_tensor"] = True
    return sgd_algorithm("choco", hp, comm, init=(comm,), requires="doubly",
                         extra_hparams=extra, stacks=True)
