r"""Compressed gossip with error feedback: the compressors, their messages, CHOCO-Gossip.

A compressor $Q$ (:func:`compress`: top-k, rand-k, rescaled QSGD) shrinks what a client sends;
error feedback keeps, for every client, a *public copy* $\hat v_i$ of a vector $v_i$ that its
neighbours hold too: a round sends only $q_i = Q(v_i - \hat v_i)$, every holder adds it,
$\hat v_i \leftarrow \hat v_i + q_i$, and the client moves towards its neighbours' copies,
$v_i \leftarrow v_i + \gamma \sum_j w_{ij} (\hat v_j - \hat v_i)$
(:func:`consensus_step_`). :class:`Compression` is a compressor with its settings, what a
round sends (:meth:`Compression.message`) and how the ledger counts it
(:meth:`Compression.flows`); :class:`CompressedGossip` is CHOCO-Gossip on the model (CHOCO-SGD,
and D-SGD with a ``compressor``); :class:`CompressedMessages` mixes compressed models without
error feedback (D-SGD with ``feedback=False``); BEER's gradient tracking runs the same two steps
on the model and on the tracker (:func:`topofl.algorithms.dsgt`).

References
----------
.. [1] A. Koloskova, S. U. Stich, M. Jaggi, "Decentralized stochastic optimization and gossip
   algorithms with compressed communication", ICML 2019 (Algorithm 1, CHOCO-Gossip;
   Algorithm 2, CHOCO-SGD).
.. [2] D. Alistarh, D. Grubic, J. Li, R. Tomioka, M. Vojnovic, "QSGD: communication-efficient
   SGD via gradient quantization and encoding", NeurIPS 2017.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

from topofl._utils.rng import generator_at
from topofl.engine.ledger import Arcs, Flow, dtype_bits, graph_arcs
from topofl.engine.pieces.communication import graph_of
from topofl.engine.pieces.participation import online_rows
from topofl.engine.pieces.state import hold
from topofl.engine.protocol import Communicate, Round, Sent, Services, State, run_ids
from topofl.graph import Topology

__all__ = ["COMPRESSORS", "ORDERS", "INDEX_BITS", "STREAM", "kept", "qsgd_scale", "qsgd_bits",
           "compress", "Compression", "consensus_step_", "ChocoState", "CompressedGossip",
           "CompressedMessages"]

#: The compressors ``Q`` (see :func:`compress`).
COMPRESSORS = ("topk", "randk", "qsgd")

#: The orders of CHOCO-Gossip's two steps (see :class:`CompressedGossip`): the paper's
#: (compress, then the consensus step on the updated copies) and the one of the authors'
#: code (the consensus step on the copies as they stand, then compress).
ORDERS = ("compress_first", "consensus_first")

#: Bits of one coordinate index in a top-k / rand-k message (an int32).
INDEX_BITS = 32

#: Tag of the compressors' random streams: client ``i`` at round ``t`` draws from
#: ``(seed, STREAM, t, i)`` (a second compressed vector of the round adds 1 to the tag).
STREAM = 0xC40C


def kept(ratio: float, size: int) -> int:
    """The ``k`` of top-k / rand-k: ``max(1, ceil(ratio * size))`` coordinates of ``size``
    (the product rounded to 9 decimals first, so that ``0.1 * 30`` keeps 3).

    Examples
    --------
    >>> from topofl.engine.pieces.compression import kept
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
    >>> from topofl.engine.pieces.compression import qsgd_scale
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
    >>> from topofl.engine.pieces.compression import qsgd_bits
    >>> qsgd_bits(1), qsgd_bits(15), qsgd_bits(16)
    (2, 5, 6)
    """
    return max(1, math.ceil(math.log2(int(levels) + 1))) + 1


def _uniforms(seed: int, stream: int, t: int, ids: np.ndarray, size: int, like: Tensor
              ) -> Tensor:
    """``[m, size]``: row ``r`` the uniforms of client ``ids[r]`` at round ``t``."""
    u = np.stack([generator_at(seed, stream, t, int(i)).random(size) for i in ids])
    return torch.from_numpy(u).to(device=like.device, dtype=like.dtype)


def _random_indices(seed: int, stream: int, t: int, ids: np.ndarray, size: int, k: int,
                    device: torch.device) -> Tensor:
    """``[m, k]``: row ``r`` the ``k`` distinct coordinates client ``ids[r]`` keeps at ``t``."""
    idx = np.stack([generator_at(seed, stream, t, int(i)).choice(size, k, replace=False)
                    for i in ids])
    return torch.from_numpy(idx.astype(np.int64)).to(device)


def compress(v: Tensor, compressor: str, *, ratio: float = 0.1, levels: int = 16,
             t: int = 0, ids: np.ndarray | None = None, seed: int = 0,
             stream: int = STREAM, draws: np.ndarray | Tensor | None = None,
             parts: Sequence[int] | None = None, rescale: bool = True) -> Tensor:
    r"""``Q(v)`` row by row: each row of ``v`` (``[m, P]``) compressed as one vector, or, with
    ``parts``, each of its consecutive pieces on its own.

    * ``"topk"``: the ``k`` = :func:`kept` ``(ratio, P)`` entries of largest magnitude kept,
      the others 0 (deterministic).
    * ``"randk"``: ``k`` distinct coordinates drawn uniformly kept, unscaled (the paper's
      biased rand-k, $E[Q(v)] = (k/P)\, v$).
    * ``"qsgd"``: QSGD with ``levels`` $= s$ levels, rescaled by :func:`qsgd_scale`:
      $Q(v)_j = \frac{1}{\tau} \|v\|_2\, \mathrm{sign}(v_j)\, \xi_j / s$ with $\xi_j$ the
      level $\lfloor s |v_j| / \|v\| \rfloor$ rounded up with probability its fractional
      part, so $E[\tau\, Q(v)] = v$. ``rescale=False`` leaves out the $1/\tau$: the unbiased
      QSGD of Alistarh et al., $E[Q(v)] = v$ (what BEER's experiments code runs as ``gsgd``
      with $s = 2^{b-1}$, and CHOCO's deep-learning code by default, ``is_biased=False``).

    The random ones draw row ``r`` from the stream ``(seed, stream, t, ids[r])`` (``ids``:
    the rows' client ids, default ``0..m-1``): a pure function of the seed, the round and the
    client. ``draws`` replaces those draws by given ones (to replay another code's): rand-k's
    kept coordinates, ``[m, k]`` distinct integers in ``[0, P)`` per row, or QSGD's uniforms,
    ``[m, P]`` in ``[0, 1)`` (a level is rounded up where its uniform is below its
    fractional part); ``None`` (the default) draws from the streams. Top-k draws nothing
    and takes none.

    ``parts`` (sizes summing to ``P``, e.g. the numbers of entries of a model's parameter
    tensors in their order in the flat buffer) compresses each piece as a vector of its own,
    as CHOCO's deep-learning code compresses each parameter tensor: top-k and rand-k keep
    :func:`kept` ``(ratio, size)`` of each piece, QSGD takes each piece's norm and its
    $\tau$ from the piece's size. Rand-k's draws are then ``[m, k_1 + k_2 + ...]``, each
    piece's coordinates counted within it (drawn from the row's stream piece after piece);
    QSGD's uniforms are the same ``[m, P]`` as without pieces. One piece is the whole row.

    Examples
    --------
    >>> import torch
    >>> from topofl.engine.pieces.compression import compress
    >>> v = torch.tensor([[0.5, -3.0, 1.0, 2.0]], dtype=torch.float64)
    >>> compress(v, "topk", ratio=0.5).tolist()
    [[0.0, -3.0, 0.0, 2.0]]
    >>> q = compress(v, "randk", ratio=0.5, t=3, seed=1)
    >>> int((q != 0).sum()), bool(((q == 0) | (q == v)).all())
    (2, True)
    >>> torch.equal(q, compress(v, "randk", ratio=0.5, t=3, seed=1))
    True

    Given draws: rand-k keeps coordinates 0 and 3; QSGD with 2 levels rounds every level up
    (uniforms 0), to ``||v|| sign(v_j) ceil(2 |v_j| / ||v||) / 2`` times CHOCO's ``1/tau``
    (here ``||v|| = 3.775`` and ``1/tau = 0.5``), or without it:

    >>> compress(v, "randk", ratio=0.5, draws=np.array([[0, 3]])).tolist()
    [[0.5, 0.0, 0.0, 2.0]]
    >>> [round(x, 4) for x in compress(v, "qsgd", levels=2, draws=np.zeros((1, 4)))[0].tolist()]
    [0.9437, -1.8875, 0.9437, 1.8875]
    >>> [round(x, 4) for x in compress(v, "qsgd", levels=2, draws=np.zeros((1, 4)),
    ...                                rescale=False)[0].tolist()]
    [1.8875, -3.775, 1.8875, 3.775]

    Two pieces of 2: the top 1 of each, where the whole row's top 2 are both in the second:

    >>> compress(v, "topk", ratio=0.5, parts=(2, 2)).tolist()
    [[0.0, -3.0, 0.0, 2.0]]
    >>> compress(torch.tensor([[0.5, 0.1, 3.0, 2.0]]), "topk", ratio=0.5, parts=(2, 2)).tolist()
    [[0.5, 0.0, 3.0, 0.0]]
    """
    m, p = v.shape
    if ids is None:
        ids = np.arange(m, dtype=np.int64)
    if parts is not None:
        sizes = _checked_parts(parts, p)
        if len(sizes) > 1:
            return _compress_parts(v, compressor, sizes, (t, ids, seed, stream), ratio=ratio,
                                   levels=levels, draws=draws, rescale=rescale)
    if draws is not None:
        draws = _checked_draws(draws, compressor, m, p, kept(ratio, p))
    if m == 0 or p == 0:
        return torch.zeros_like(v)
    if compressor == "qsgd":
        s = float(levels)
        norm = torch.linalg.vector_norm(v, dim=1, keepdim=True)
        safe = torch.where(norm > 0, norm, torch.ones_like(norm))
        scaled = v.abs() * (s / safe)
        low = torch.floor(scaled)
        u = (_uniforms(seed, stream, t, ids, p, v) if draws is None
             else draws.to(device=v.device, dtype=v.dtype))
        up = u < (scaled - low)
        level = low + up.to(v.dtype)
        scale = qsgd_scale(levels, p) if rescale else 1.0
        return torch.sign(v) * level * (safe * (scale / s))
    k = kept(ratio, p)
    if compressor == "topk":
        idx = v.abs().topk(k, dim=1, sorted=False).indices
    elif compressor == "randk":
        idx = (_random_indices(seed, stream, t, ids, p, k, v.device) if draws is None
               else draws.to(device=v.device, dtype=torch.int64))
    else:
        raise ValueError(f"compressor must be one of {list(COMPRESSORS)}, got {compressor!r}")
    return torch.zeros_like(v).scatter_(1, idx, v.gather(1, idx))


def _checked_parts(parts: Sequence[int], p: int) -> tuple[int, ...]:
    """:func:`compress`'s ``parts`` as a tuple of sizes, or the error naming what they should
    have been (positive whole numbers summing to the row's ``P``)."""
    try:
        sizes = tuple(int(s) for s in parts)
        whole = all(int(s) == s and not isinstance(s, bool) for s in parts)
    except (TypeError, ValueError):
        raise TypeError(f"parts must be a sequence of whole numbers, got {parts!r}") from None
    if not whole or not sizes or min(sizes) < 1 or sum(sizes) != p:
        raise ValueError(f"parts must be sizes >= 1 summing to the row's P={p}, got "
                         f"{list(parts)}")
    return sizes


def _compress_parts(v: Tensor, compressor: str, sizes: tuple[int, ...],
                    at: tuple[int, np.ndarray, int, int], *, ratio: float, levels: int,
                    draws: np.ndarray | Tensor | None, rescale: bool) -> Tensor:
    """:func:`compress` with ``parts=sizes`` (two or more): each piece as a row of its own;
    ``at``: the draws' stream address ``(t, ids, seed, stream)``."""
    t, ids, seed, stream = at
    m, p = v.shape
    ks = [kept(ratio, s) for s in sizes]
    if m == 0:
        if draws is not None:
            _checked_draws(draws, compressor, m, p, sum(ks))
        return torch.zeros_like(v)
    d: Tensor | None = None
    if compressor == "randk":
        if draws is None:
            rows = [np.concatenate([g.choice(s, k, replace=False) for s, k in zip(sizes, ks)])
                    for g in (generator_at(seed, stream, t, int(i)) for i in ids)]
            d = torch.from_numpy(np.stack(rows).astype(np.int64).reshape(m, sum(ks)))
        else:
            d = torch.as_tensor(np.asarray(draws) if not isinstance(draws, Tensor) else draws)
            if tuple(d.shape) != (m, sum(ks)):
                raise ValueError(f"rand-k's draws by parts must be [m, k_1 + k_2 + ...] = "
                                 f"[{m}, {sum(ks)}] coordinates, got shape {list(d.shape)}")
    elif compressor == "qsgd":
        d = (_uniforms(seed, stream, t, ids, p, v) if draws is None
             else _checked_draws(draws, compressor, m, p, 0))
    elif draws is not None:
        _checked_draws(draws, compressor, m, p, 0)  # says which compressors take draws
    out = torch.empty_like(v)
    off = koff = 0
    for s, k in zip(sizes, ks):
        piece = None if d is None else (d[:, koff:koff + k] if compressor == "randk"
                                        else d[:, off:off + s])
        out[:, off:off + s] = compress(v[:, off:off + s], compressor, ratio=ratio,
                                       levels=levels, draws=piece, rescale=rescale)
        off, koff = off + s, koff + k
    return out


def _checked_draws(draws: np.ndarray | Tensor, compressor: str, m: int, p: int, k: int
                   ) -> Tensor:
    """:func:`compress`'s given ``draws`` as a CPU tensor, or the error naming what they
    should have been."""
    d = torch.as_tensor(np.asarray(draws) if not isinstance(draws, Tensor) else draws)
    if compressor == "randk":
        if tuple(d.shape) != (m, k) or d.is_floating_point() or d.is_complex():
            raise ValueError(f"rand-k's draws must be [m, k] = [{m}, {k}] integer coordinates, "
                             f"got shape {list(d.shape)} of {d.dtype}")
        d = d.to(torch.int64)
        if m and k and (int(d.min()) < 0 or int(d.max()) >= p
                        or bool((d.sort(dim=1).values.diff(dim=1) == 0).any())):
            raise ValueError(f"rand-k's draws must be distinct coordinates in [0, {p}) per row")
        return d
    if compressor == "qsgd":
        if tuple(d.shape) != (m, p):
            raise ValueError(f"QSGD's draws must be [m, P] = [{m}, {p}] uniforms, got shape "
                             f"{list(d.shape)}")
        d = d.to(torch.float64)
        if d.numel() and not (float(d.min()) >= 0.0 and float(d.max()) < 1.0):
            raise ValueError("QSGD's draws must be uniforms in [0, 1)")
        return d
    raise ValueError(f"draws are rand-k's or QSGD's, got them for compressor={compressor!r}")


@dataclass(frozen=True)
class Compression:
    """A compressor with its settings (checked by the factory that builds it): ``compressor``
    one of :data:`COMPRESSORS`, top-k / rand-k's ``ratio``, QSGD's ``levels``, the ``seed``
    of rand-k's and QSGD's draws, whether each parameter tensor of the model is compressed on
    its own (``per_tensor``, the pieces of ``env.layout``) and whether QSGD carries CHOCO's
    ``1/tau`` (``rescale``, :func:`qsgd_scale`); see :func:`compress`."""

    compressor: str
    ratio: float = 0.1
    levels: int = 16
    seed: int = 0
    per_tensor: bool = False
    rescale: bool = True

    def parts(self, env: Services) -> tuple[int, ...] | None:
        """The sizes of the pieces compressed on their own: the model's parameter tensors
        (``env.layout``, body first) when ``per_tensor``, else ``None`` (the whole row)."""
        if not self.per_tensor:
            return None
        return tuple(int(torch.Size(shape).numel()) for shape in env.layout.shapes)

    def message(self, v: Tensor, rnd: Round, env: Services, *, stream: int = STREAM
                ) -> Tensor:
        """``[m, P]`` what each of this process's clients sends, ``Q(v)`` row by row (drawn
        by the client's id in its run, :func:`~topofl.engine.protocol.run_ids`); 0 from a
        client absent from the round (it sends nothing: its public copy stays)."""
        q = compress(v, self.compressor, ratio=self.ratio, levels=self.levels, t=rnd.t,
                     ids=run_ids(env), seed=self.seed, stream=stream, parts=self.parts(env),
                     rescale=self.rescale)
        on = online_rows(rnd, env)
        if on is not None:
            q.mul_(on.to(device=q.device, dtype=q.dtype).unsqueeze(1))
        return q

    def flows(self, arcs: Arcs, size: int, bits: int, kind: str = "compressed",
              parts: Sequence[int] | None = None) -> tuple[Flow, ...]:
        """One message per arc, kind ``kind``: top-k / rand-k send ``k`` values of ``bits``
        bits with their ``k`` indices attached (kind ``"indices"``), or the dense ``size``
        values when that is no larger; QSGD ``size`` levels of :func:`qsgd_bits` bits with
        the norm attached (kind ``"norm"``, one ``bits``-bit number). With ``parts`` (the
        pieces compressed on their own, :meth:`parts`): ``k`` is the sum of the pieces'
        and QSGD attaches one norm per piece.

        Examples
        --------
        >>> from topofl.engine.pieces.compression import Compression
        >>> from topofl.engine.ledger import graph_arcs
        >>> arcs = graph_arcs(tf.topologies.ring(3))
        >>> [(f.kind, f.bytes) for f in Compression("topk", 0.1).flows(arcs, 100, 32)]
        [('compressed', 240), ('indices', 240)]
        >>> [(f.kind, f.bytes) for f in Compression("qsgd", levels=16).flows(arcs, 100, 32)]
        [('compressed', 450), ('norm', 24)]

        Pieces of 95 and 5 entries: top-k keeps 10 + 1 of them, QSGD sends two norms:

        >>> [(f.kind, f.bytes) for f in Compression("topk", 0.1).flows(arcs, 100, 32,
        ...                                                            parts=(95, 5))]
        [('compressed', 264), ('indices', 264)]
        >>> [(f.kind, f.bytes) for f in Compression("qsgd").flows(arcs, 100, 32, parts=(95, 5))]
        [('compressed', 450), ('norm', 48)]
        """
        sizes = (size,) if parts is None else tuple(int(s) for s in parts)
        if self.compressor == "qsgd":
            return (Flow(kind, arcs, size, qsgd_bits(self.levels)),
                    Flow("norm", arcs, len(sizes), bits, attached=True))
        k = sum(kept(self.ratio, s) for s in sizes)
        if k * (bits + INDEX_BITS) >= size * bits:  # the dense difference is no larger
            return (Flow(kind, arcs, size, bits),)
        return (Flow(kind, arcs, k, bits),
                Flow("indices", arcs, k, INDEX_BITS, attached=True))


def consensus_step_(env: Services, topology: Topology, v: Tensor, public: Tensor,
                    gamma: float) -> None:
    r"""In place: $v_i \leftarrow v_i + \gamma \sum_j w_{ij} (\hat v_j - \hat v_i)$, i.e.
    ``v += gamma * (W public - public)`` with ``W`` the ``topology``'s mixing matrix (through
    ``env.mixer``: the rows of other ranks arrive through its exchange).

    Examples
    --------
    >>> import torch
    >>> from topofl.engine.pieces.compression import consensus_step_
    >>> v = torch.zeros(3, 1, dtype=torch.float64)
    >>> public = torch.tensor([[0.0], [3.0], [6.0]], dtype=torch.float64)
    >>> consensus_step_(tf.engine.toy_services(3), tf.topologies.ring(3), v, public, 0.5)
    >>> v.flatten().tolist()
    [1.5, 0.0, -1.5]
    """
    mixed = public.clone()
    env.mixer.mix_(topology, mixed)  # sum_j w_ij v^_j
    v.add_(mixed.sub_(public), alpha=gamma)


@dataclass
class ChocoState:
    r"""The state CHOCO-Gossip keeps besides the models (``State.own``).

    Attributes
    ----------
    public : Tensor
        ``[n, P]`` the public estimates $\hat x_i$ ($\hat x_i^0 = 0$); client ``i``'s
        neighbours hold the same copy of it (see :func:`topofl.algorithms.choco`'s Notes).
    """

    public: Tensor


@dataclass(frozen=True)
class CompressedGossip(Communicate):
    r"""CHOCO-Gossip on the model (Koloskova et al. 2019, Algorithm 2, lines 4-8): with
    $W$ the round's mixing matrix,

    1. $q_i = Q(x_i - \hat x_i)$, sent to every neighbour;
    2. $\hat x_j \leftarrow \hat x_j + q_j$ for ``i`` and its neighbours;
    3. $x_i \leftarrow x_i + \gamma \sum_j w_{ij} (\hat x_j - \hat x_i)$.

    ``order="consensus_first"`` takes step 3 first, on the copies as they stand, then
    compresses the model it reached (steps 1-2), as the authors' code does
    (``epfml/ChocoSGD``: ``convex_code/logistic.py``'s ``choco`` method and
    ``dl_code``'s ``ParallelCHOCO``); the paper's order ``"compress_first"`` is the default.

    Messages: one per arc of the round's graph, kind ``"compressed"``
    (:meth:`Compression.flows`). ``state.own`` is a :class:`ChocoState`.

    Examples
    --------
    Without compression (``ratio=1`` top-k) and with $\gamma = 1$, one round is gossip
    ``X <- W X`` (here on a 3-ring, whose Metropolis weights are all 1/3):

    >>> import torch
    >>> from topofl.engine.pieces.compression import Compression, CompressedGossip
    >>> env = tf.engine.toy_services(3)
    >>> comm = CompressedGossip(Compression("topk", ratio=1.0), gamma=1.0)
    >>> state = tf.engine.State(x=torch.tensor([[0.0], [3.0], [6.0]], dtype=torch.float64))
    >>> comm.init_(state, env)
    >>> comm(state, tf.engine.Round(0, tf.topologies.ring(3)), env).messages
    6
    >>> state.x.flatten().tolist()
    [3.0, 3.0, 3.0]

    The consensus step first, on copies still 0, leaves the models where they were; the
    copies then take them:

    >>> comm = CompressedGossip(Compression("topk", ratio=1.0), 1.0, order="consensus_first")
    >>> state = tf.engine.State(x=torch.tensor([[0.0], [3.0], [6.0]], dtype=torch.float64))
    >>> comm.init_(state, env)
    >>> _ = comm(state, tf.engine.Round(0, tf.topologies.ring(3)), env)
    >>> state.x.flatten().tolist(), state.own.public.flatten().tolist()
    ([0.0, 3.0, 6.0], [0.0, 3.0, 6.0])
    """

    compression: Compression
    gamma: float
    order: str = "compress_first"

    def __post_init__(self) -> None:
        if self.order not in ORDERS:
            raise ValueError(f"order must be one of {list(ORDERS)}, got {self.order!r}")

    def init_(self, state: State, env: Services) -> None:
        hold(state, ChocoState(public=torch.zeros_like(state.x)))

    def __call__(self, state: State, rnd: Round, env: Services) -> Sent:
        topo = graph_of(rnd)
        public = state.own_as(ChocoState).public
        if self.order == "consensus_first":  # x += gamma (W - I) x^, then x^ += Q(x - x^)
            consensus_step_(env, topo, state.x, public, self.gamma)
            public.add_(self.compression.message(state.x - public, rnd, env))
        else:
            public.add_(self.compression.message(state.x - public, rnd, env))  # x^_j += q_j
            consensus_step_(env, topo, state.x, public, self.gamma)
        size, bits = int(state.x.shape[1]), dtype_bits(state.x.dtype)
        return Sent.of(*self.compression.flows(graph_arcs(topo), size, bits,
                                               parts=self.compression.parts(env)))


@dataclass(frozen=True)
class CompressedMessages(Communicate):
    r"""Gossip of compressed models, without error feedback: each client sends its neighbours
    $Q(x_j)$ and keeps its own model exact,

    $$x_i \leftarrow w_{ii} x_i + \sum_{j \ne i} w_{ij} Q(x_j)
        = (W Q(x))_i + w_{ii} (x_i - Q(x_i)).$$

    What a compressed message is when nothing corrects it (decent-bench's compression
    impairment on its peer-to-peer methods): the compression error enters every step, so a
    biased compressor (top-k) leaves the models off consensus where CHOCO-Gossip
    (:class:`CompressedGossip`) reaches it. An absent client sends nothing (its row of the
    round's graph is its own). Messages: one per arc, as :meth:`Compression.flows` counts them.

    Examples
    --------
    With ``ratio=1`` top-k every message is the model itself: one round is gossip ``X <- W X``.

    >>> import torch
    >>> from topofl.engine.pieces.compression import Compression, CompressedMessages
    >>> env = tf.engine.toy_services(3)
    >>> state = tf.engine.State(x=torch.tensor([[0.0], [3.0], [6.0]], dtype=torch.float64))
    >>> _ = CompressedMessages(Compression("topk", ratio=1.0))(
    ...     state, tf.engine.Round(0, tf.topologies.ring(3)), env)
    >>> state.x.flatten().tolist()
    [3.0, 3.0, 3.0]
    """

    compression: Compression

    def __call__(self, state: State, rnd: Round, env: Services) -> Sent:
        topo = graph_of(rnd)
        x = state.x
        q = self.compression.message(x, rnd, env)
        own = (x - q).mul_(env.mixer.diagonal(topo).to(x.dtype).unsqueeze(1))
        env.mixer.mix_(topo, q)
        x.copy_(q.add_(own))
        size, bits = int(x.shape[1]), dtype_bits(x.dtype)
        return Sent.of(*self.compression.flows(graph_arcs(topo), size, bits,
                                               parts=self.compression.parts(env)))
