r"""Dis-PFL: personalized sparse models trained and averaged over a decentralized graph.

Every client keeps a personal binary mask $m_i$ of fixed density over all its parameters and
trains only the masked model $m_i \odot \theta_i$. Each round, after local training, it prunes
the smallest-magnitude weights of its mask and regrows as many elsewhere, sends its sparse
model to its neighbours, and averages each coordinate over the neighbours (itself included)
whose masks hold that coordinate; the result is restricted to its new mask.

Notes
-----
Choices where the papers leave room: the masks cover every parameter, biases included (ERK
makes the small layers dense), as in the released code; layer $l$ keeps
$\lfloor d_l \cdot \mathrm{numel}_l \rfloor$ entries (at least 1); prune/regrow happens at
the end of each round, before the exchange, so that the averaged model is restricted to
the new mask (the released code does it at the start of the next round, the same order);
gradient clipping (norm 10 in the released code) is not applied.

Messages: one on every arc of the round's graph, the sender's kept entries (kind
``"values"``: as many numbers as its mask holds, the mask it trained under) with its mask
attached (kind ``"mask"``: one bit per parameter). An offline client (``rnd.online``) keeps
its model and mask; the graph the round gets has lost its arcs (rule ``"renormalise"``),
so the others average over their present neighbours.

Cost per round: one gossip product of the neighbourhood pattern (the 0/1 ``W`` with its
diagonal) with the ``[n, 2P]`` numerators and counts (``env.mixer``, so a distributed run
exchanges only the rows its neighbours' ranks need), plus a sort per layer for pruning.

References
----------
.. [1] R. Dai, L. Shen, F. He, X. Tian, D. Tao, "DisPFL: Towards communication-efficient
   personalized federated learning via decentralized sparse training", ICML 2022.
.. [2] U. Evci, T. Gale, J. Menick, P. S. Castro, E. Elsen, "Rigging the lottery: making all
   tickets winners", ICML 2020 (the ERK layer-wise densities).
.. [3] Y. Liu et al., "Decentralized Directed Collaboration for Personalized Federated
   Learning", CVPR 2024 (DFedPGP: Dis-PFL as a baseline of Tables 1-3, Section 5.1).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypedDict

import numpy as np
import torch
from torch import Tensor

from topofl._utils.rng import generator_at
from topofl._utils.validation import check_choice, check_int, check_real
from topofl.algorithms._one_phase import WholeModelParams, local_training, whole_model_algorithm
from topofl.algorithms._partial import DECAY, EPOCHS_U, LR, MOMENTUM, WEIGHT_DECAY
from topofl.algorithms.base import register_algorithm
from topofl.algorithms.hparams import Group, Keywords, LocalSGD, LocalSGDKeywords
from topofl.engine.ledger import Flow, dtype_bits, graph_arcs
from topofl.engine.pieces import (
    SGD,
    compose_init,
    neighbourhood_sum_,
    online_rows,
)
from topofl.engine.protocol import Algorithm, Kernel, Phase, Round, Sent, Services, State
from topofl.graph import Topology

if TYPE_CHECKING:  # Unpack is typing's from Python 3.11; only the type checker reads it
    from typing_extensions import Unpack

__all__ = ["dis_pfl", "DisPFLKeywords", "SparseMasks", "SparseMasksKeywords", "DisPFLState",
           "erk_densities", "layer_sizes",
           "masked_average", "prune_regrow_"]

_MASK_TAG = 0xD15  # stream of the initial masks: (mask_seed, tag, client)
_REGROW_TAG = 0xD16  # stream of the random regrowth: (mask_seed, tag, round)
_GRAD_STREAM = 11  # local_train stream of the gradient used by regrow="gradient"


def erk_densities(shapes: Sequence[Sequence[int]], density: float, *,
                  power: float = 1.0) -> list[float]:
    r"""Per-layer densities of the Erdős-Rényi-Kernel rule at overall ``density``.

    Layer $l$ of shape $(s_1, \dots, s_k)$ gets density $\varepsilon\,(\sum_a s_a /
    \prod_a s_a)^{power}$, with $\varepsilon$ chosen so that the kept parameters total
    ``density`` times all parameters; a layer whose density would exceed 1 is made dense (the
    largest first) and $\varepsilon$ is solved again for the others. Scalars (shape ``()``) are
    dense.

    Parameters
    ----------
    shapes : sequence of shapes
    density : float in (0, 1]
    power : float, default 1

    Returns
    -------
    list of float
        One density in ``(0, 1]`` per layer.

    Examples
    --------
    A ``10 x 10`` weight and its bias at overall density 0.5: the bias is dense (its raw
    score 1 beats the weight's 0.2), the weight keeps the rest, ``(55 - 10) / 100``.

    >>> from topofl.algorithms.dis_pfl import erk_densities
    >>> erk_densities([(10, 10), (10,)], 0.5)
    [0.45, 1.0]
    """
    density = check_real(density, "density", low=0, high=1, low_open=True)
    numel = [int(np.prod(s)) if len(s) else 1 for s in shapes]
    raw = [(sum(s) / int(np.prod(s))) ** power if len(s) else math.inf for s in shapes]
    total = float(sum(numel))
    dense = {i for i, s in enumerate(shapes) if not len(s)}
    while True:
        sparse = [i for i in range(len(shapes)) if i not in dense]
        if not sparse:
            break
        rhs = density * total - sum(numel[i] for i in dense)
        eps = rhs / sum(raw[i] * numel[i] for i in sparse)
        top = max(raw[i] for i in sparse)
        if eps * top <= 1.0:
            break
        dense |= {i for i in sparse if raw[i] == top}
    return [1.0 if i in dense else eps * raw[i] for i in range(len(shapes))]


def layer_sizes(shapes: Sequence[Sequence[int]], densities: Sequence[float]) -> list[int]:
    """Number of kept entries of each layer: ``floor(density * numel)``, at least 1.

    Examples
    --------
    >>> from topofl.algorithms.dis_pfl import layer_sizes
    >>> layer_sizes([(10, 10), (10,), (3,)], [0.45, 1.0, 0.1])
    [45, 10, 1]
    """
    out = []
    for s, d in zip(shapes, densities):
        n = int(np.prod(s)) if len(s) else 1
        out.append(min(n, max(1, int(d * n + 1e-9))))
    return out


def masked_average(x: Tensor, mask: Tensor, A: Tensor) -> Tensor:
    r"""Coordinate-wise average over neighbours that hold the coordinate.

    $\bar\theta_{i,c} = \sum_j A_{ij} m_{j,c}\theta_{j,c} / \sum_j A_{ij} m_{j,c}$, and 0
    where no neighbour holds coordinate $c$.

    Parameters
    ----------
    x : Tensor
        ``[n, P]`` models.
    mask : Tensor
        ``[n, P]`` 0/1 masks.
    A : Tensor
        ``[n, n]`` 0/1 matrix: ``A[i, j] = 1`` iff client ``i`` averages client ``j``'s
        model (its in-neighbours and itself).

    Returns
    -------
    Tensor
        ``[n, P]`` averages (a new tensor).

    Examples
    --------
    >>> import torch
    >>> from topofl.algorithms.dis_pfl import masked_average
    >>> x = torch.tensor([[1.0, 2.0], [3.0, 0.0]])
    >>> m = torch.tensor([[1.0, 1.0], [1.0, 0.0]])
    >>> masked_average(x, m, torch.ones(2, 2)).tolist()
    [[2.0, 2.0], [2.0, 2.0]]
    """
    num = A @ (mask * x)
    cnt = A @ mask
    return torch.where(cnt > 0, num / cnt.clamp_min(1.0), torch.zeros_like(num))


def _drop_rate(t: int, anneal: float, rounds: int) -> float:
    """Cosine-annealed drop rate of round ``t``: ``anneal / 2 * (1 + cos(pi t / T))``, 0 after T."""
    return anneal / 2.0 * (1.0 + math.cos(math.pi * min(t, rounds) / rounds))


def prune_regrow_(mask: Tensor, x: Tensor, offsets: Sequence[int], numels: Sequence[int],
                  rate: float, keys: Tensor) -> None:
    """In place, for each layer of every client: drop the ``ceil(rate * nnz)`` kept entries of
    smallest ``|x|`` (ties: lowest index first), then switch on as many of the entries that are
    off (the just-dropped ones included) with the largest ``keys``.

    ``keys`` ``[n, P]`` ranks the candidates for regrowth: uniform random numbers (random
    regrowth) or gradient magnitudes. Every layer of every row keeps its number of ones.

    Examples
    --------
    >>> import torch
    >>> from topofl.algorithms.dis_pfl import prune_regrow_
    >>> m = torch.tensor([[1.0, 1.0, 0.0, 0.0]])
    >>> x = torch.tensor([[0.1, -2.0, 0.0, 0.0]])
    >>> prune_regrow_(m, x, [0], [4], 0.5, torch.tensor([[0.0, 0.0, 0.3, 0.7]]))
    >>> m.tolist()
    [[0.0, 1.0, 0.0, 1.0]]
    """
    for off, k in zip(offsets, numels):
        mb = mask[:, off:off + k]
        nnz = int(mb[0].sum()) if mb.shape[0] else 0  # every client keeps as many per layer
        r = math.ceil(rate * nnz)  # rate <= 1: at most the kept entries
        if r == 0:
            continue
        score = torch.where(mb > 0, x[:, off:off + k].abs(), torch.full_like(mb, math.inf))
        drop = torch.argsort(score, dim=1, stable=True)[:, :r]
        mb.scatter_(1, drop, 0.0)
        cand = torch.where(mb > 0, torch.full_like(mb, -math.inf), keys[:, off:off + k])
        grow = torch.topk(cand, r, dim=1).indices
        mb.scatter_(1, grow, 1.0)


@dataclass
class DisPFLState:
    """Dis-PFL's state besides the models (``State.x``).

    Attributes
    ----------
    mask : Tensor
        ``[n, P]`` each client's 0/1 mask.
    trained : Tensor or None
        ``[n, P]`` the models as trained in the round (``evaluate="trained"``).
    """

    mask: Tensor
    trained: Tensor | None = None


@dataclass(frozen=True)
class _Masked:
    """Local SGD on the masked model: after each step, the parameters outside the client's mask
    are set to 0 again (the released code multiplies the parameters by the mask after every
    optimizer step)."""

    sgd: SGD

    rowwise = True  # each client's step reads its own row (and its own mask row)

    def init_(self, state: State, env: Services) -> None:
        self.sgd.init_(state, env)

    def point(self, state: State, phase: Phase, env: Services) -> Tensor:
        return self.sgd.point(state, phase, env)  # the parameters (no de-biasing)

    def update(self, state: State, grads: Tensor, phase: Phase, lr: Tensor, rnd: Round,
               env: Services) -> None:
        self.sgd.update(state, grads, phase, lr, rnd, env)
        cols = env.layout.cols(phase.part)
        state.x[:, cols].mul_(state.own_as(DisPFLState).mask[:, cols])

    def fused(self, executor: Any) -> Kernel | None:
        return None


def _regrow_keys(mask_seed: int, t: int, ids: np.ndarray, like: Tensor) -> Tensor:
    """Uniform keys of the random regrowth of round ``t``, ``[m, P]``: row ``r`` from the
    stream ``(mask_seed, tag, t, ids[r])`` of its client, whichever process holds it."""
    keys = torch.empty_like(like)
    p = like.shape[1]
    for r, i in enumerate(ids.tolist()):
        row = generator_at(mask_seed, _REGROW_TAG, t, int(i)).random(p)
        keys[r] = torch.as_tensor(row, dtype=like.dtype, device=like.device)
    return keys


def _masked_sums_(topo: Topology, x: Tensor, mask: Tensor, env: Services) -> Tensor:
    """:func:`masked_average` over ``topo``'s neighbourhoods through ``env.mixer`` (this
    process's rows; the neighbours' rows arrive through the mixer's exchange in a distributed
    run): numerators and counts in one product ``[m, 2P]``."""
    p = x.shape[1]
    both = torch.cat([mask * x, mask], dim=1)
    neighbourhood_sum_(env, topo, both)
    num, cnt = both[:, :p], both[:, p:]
    return torch.where(cnt > 0, num / cnt.clamp_min(1.0), torch.zeros_like(num))


@dataclass(frozen=True)
class SparseMasks(Group):
    """Dis-PFL's personal sparse masks: their density, their layer-wise distribution and
    their prune-and-regrow schedule (the fields are documented at :func:`dis_pfl`).

    Examples
    --------
    >>> from topofl.algorithms.dis_pfl import SparseMasks
    >>> SparseMasks(density=0.2).checked()["density"]
    0.2
    >>> SparseMasks(regrow="magnitude")
    Traceback (most recent call last):
    ...
    ValueError: regrow must be one of ['gradient', 'random'], got 'magnitude'
    """

    density: float = 0.5
    distribution: str = "erk"
    anneal: float = 0.5
    anneal_rounds: int = 500
    regrow: str = "random"
    mask_seed: int = 0

    def __post_init__(self) -> None:
        self.checked()

    def checked(self) -> dict[str, Any]:
        """The checked fields, as :class:`DisPFLParams` takes them."""
        return dict(density=check_real(self.density, "density", low=0, high=1, low_open=True),
                    distribution=check_choice(self.distribution, "distribution",
                                              ("erk", "uniform")),
                    anneal=check_real(self.anneal, "anneal", low=0, high=1),
                    anneal_rounds=check_int(self.anneal_rounds, "anneal_rounds", low=1),
                    regrow=check_choice(self.regrow, "regrow", ("random", "gradient")),
                    mask_seed=check_int(self.mask_seed, "mask_seed", low=0))


class SparseMasksKeywords(TypedDict, total=False):
    """:class:`SparseMasks`'s fields as flat keywords."""

    density: float
    distribution: str
    anneal: float
    anneal_rounds: int
    regrow: str
    mask_seed: int


class DisPFLKeywords(LocalSGDKeywords, SparseMasksKeywords, total=False):
    """Dis-PFL's flat keywords: the fields of its groups (documented at :func:`dis_pfl`)."""


#: Dis-PFL's default groups: DFedPGP's Section 5.1 optimiser (5 local epochs), and the masks
#: of Dai et al.'s released CIFAR-10 script
_SGD = LocalSGD(lr=LR, momentum=MOMENTUM, weight_decay=WEIGHT_DECAY, decay=DECAY)
_MASKS = SparseMasks()


@register_algorithm("dis_pfl")
def dis_pfl(sgd: LocalSGD | float = _SGD, masks: SparseMasks = _MASKS, *,
            evaluate: str = "trained", **keywords: Unpack[DisPFLKeywords]) -> Algorithm:
    r"""Dis-PFL: personalized sparse masks, decentralized masked averaging, prune and regrow.

    Client $i$ holds a model $\theta_i$ and a 0/1 mask $m_i$ over all its parameters; its
    model is zero outside the mask. Each round $t$:

    1. local SGD on the masked model (the parameters outside $m_i$ are zeroed after each step);
    2. prune and regrow: in every layer, drop the $\lceil r_t\,\mathrm{nnz}\rceil$ kept weights
       of smallest magnitude, $r_t = \frac{a}{2}(1 + \cos(\pi t / T))$, and switch on as many
       entries that are off, at random (``regrow="random"``) or of largest gradient magnitude
       (``regrow="gradient"``), giving the new mask $m_i'$ of the same density;
    3. exchange the sparse models with the in-neighbours $\mathcal{N}_i$ of the round's graph
       and average each coordinate over $\mathcal{N}_i \cup \{i\}$ restricted to the clients
       whose (training) mask holds it:
       $\theta_{i,c} \leftarrow m'_{i,c} \sum_j m_{j,c}\theta_{j,c} / \sum_j m_{j,c}$ (0 where
       no one holds $c$).

    Parameters
    ----------
    sgd : LocalSGD or float, optional
        The local training (:class:`~topofl.algorithms.hparams.LocalSGD`: the flat keywords
        ``lr``, ``momentum``, ``weight_decay``, ``decay``, ``local_steps`` and
        ``local_epochs`` below, with their defaults); a number is ``lr`` (``dis_pfl(0.1)``).
    masks : SparseMasks, optional
        The sparse masks (:class:`SparseMasks`: the flat keywords ``density`` to
        ``mask_seed`` below, with their defaults).
    evaluate : {"trained", "aggregated"}, default "trained"
        The model scored: the locally trained sparse model of the round (the personalized
        model; kept in ``state.own.trained``, one more ``[n, P]`` buffer), or the
        aggregated model restricted to the new mask (the start of the next round).
    **keywords
        The groups' fields as flat keywords (each replaces the field of its group):
    lr : float, default 0.1
        Local learning rate (``lr * decay**t`` at round ``t``).
    density : float in (0, 1], default 0.5
        Fraction of the parameters each mask keeps (the released scripts' ``dense_ratio``).
    distribution : {"erk", "uniform"}, default "erk"
        Per-layer densities: Erdős-Rényi-Kernel (:func:`erk_densities`, the released code's
        default) or ``density`` in every layer.
    anneal : float in [0, 1], default 0.5
        $a$: the drop rate at round 0 (the released scripts' ``anneal_factor``); 0 keeps the
        masks fixed.
    anneal_rounds : int, default 500
        $T$ of the cosine schedule (the papers' 500 rounds): set it to the run's rounds. From
        round $T$ on the drop rate is 0.
    regrow : {"random", "gradient"}, default "random"
        How dropped entries are regrown (the released CIFAR scripts pass
        ``--dis_gradient_check``: random). ``"gradient"`` ranks the entries that are off by the
        magnitude of the dense gradient of the trained model on one training batch.
    mask_seed : int, default 0
        Seed of the initial masks (client $i$'s from the stream ``(mask_seed, i)``) and of the
        random regrowth (client $i$'s at round $t$ from ``(mask_seed, t, i)``): a client's
        mask does not depend on the other clients, nor on how a distributed run places them.
    momentum : float, default 0.9
        Local heavy-ball momentum, restarted every round.
    weight_decay : float, default 5e-3
    decay : float, default 0.99
    local_steps, local_epochs
        Local work per round: steps, or epochs (default 5 epochs).

    Returns
    -------
    Algorithm
        ``shared="all"``, ``requires=None`` (only the pattern of ``W`` is used: client $i$
        averages the clients $j$ with ``W[i, j] > 0``), ``uses_topology=True``. The masks are
        ``state.own.mask`` ``[n, P]`` (:class:`DisPFLState`).

    Notes
    -----
    The defaults of the optimiser (lr 0.1, 5 local epochs, momentum 0.9, weight decay 5e-3,
    learning-rate decay 0.99 per round) are DFedPGP's Section 5.1, which runs every baseline
    with these; density 0.5, $a = 0.5$, ERK masks, different random masks per client and random
    regrowth are the settings of Dai et al.'s released CIFAR-10 script. DFedPGP's graph: every
    client exchanges with 10 random peers per round (a time-varying graph,
    ``topofl.topologies`` ``random_directed(n, 10, ...)`` or its undirected counterpart).

    Choices where the papers leave room, the messages and the cost per round: the module
    docstring.

    References
    ----------
    .. [1] R. Dai, L. Shen, F. He, X. Tian, D. Tao, "DisPFL: Towards communication-efficient
       personalized federated learning via decentralized sparse training", ICML 2022.

    Examples
    --------
    With density 1 nothing is masked and Dis-PFL is neighbour averaging: on a toy consensus
    problem over a ring every model reaches the mean of the targets.

    >>> import torch
    >>> c = torch.arange(4.0, dtype=torch.float64).unsqueeze(1)
    >>> algo = tf.algorithms.dis_pfl(0.1, density=1.0, anneal=0.0, momentum=0.0,
    ...                              weight_decay=0.0, decay=1.0, local_steps=1)
    >>> trace = tf.engine.run_rounds(algo, torch.zeros_like(c), tf.topologies.ring(4),
    ...     lambda z, phase, rnd: z - c, rounds=300, lr=lambda rnd, ph: 0.1 * 0.98**rnd.t)
    >>> [round(v, 3) for v in trace.evaluated().flatten().tolist()]
    [1.5, 1.5, 1.5, 1.5]
    """
    kw = Keywords("dis_pfl", keywords)
    local, sparse = kw.take(sgd, _SGD), kw.take(masks)
    kw.done()
    hp = DisPFLParams(**local_training(local, default_epochs=EPOCHS_U), **sparse.checked(),
                      evaluate=check_choice(evaluate, "evaluate", ("trained", "aggregated")))
    return whole_model_algorithm("dis_pfl", hp, init=init_state, local=hp.local,
                                 communicate=communicate,
                                 evaluate=functools.partial(scored, hp=hp))


@dataclass(frozen=True)
class DisPFLParams(WholeModelParams):
    """Dis-PFL's checked hyper-parameters (what :func:`dis_pfl` validated and its steps
    read): its own, after the local training's (:class:`WholeModelParams`)."""

    density: float
    distribution: str
    anneal: float
    anneal_rounds: int
    regrow: str
    mask_seed: int
    evaluate: str

    @property
    def local(self) -> _Masked:
        """Local SGD on the masked model."""
        return _Masked(SGD(self.momentum, self.weight_decay))


# --------------------------------------------------------------------------- the round's steps


def mask_geometry(env: Services, hp: DisPFLParams) -> tuple[list[int], list[int], list[int]]:
    """Per layer of the model: its offset in the flat buffer, its size, and the entries a
    mask keeps (ERK or uniform densities at ``hp.density``)."""
    lay = env.layout
    shapes = [tuple(s) for s in lay.shapes]
    dens = (erk_densities(shapes, hp.density) if hp.distribution == "erk"
            else [hp.density] * len(shapes))
    numels = [int(np.prod(s)) if len(s) else 1 for s in shapes]
    return list(lay.offsets), numels, layer_sizes(shapes, dens)


def init_state(x0: Tensor, env: Services, *, hp: DisPFLParams) -> State:
    """Each client's random initial mask (stream ``(mask_seed, client)``, the layer
    densities of :func:`mask_geometry`), applied to its model."""
    state = compose_init(hp.local)(x0, env)
    offsets, numels, keep = mask_geometry(env, hp)
    mask = torch.zeros_like(x0)
    for r, i in enumerate(env.clients.ids.tolist()):  # row r holds client i
        rng = generator_at(hp.mask_seed, _MASK_TAG, int(i))
        row = np.zeros(x0.shape[1])
        for off, k, m in zip(offsets, numels, keep):
            row[off + rng.permutation(k)[:m]] = 1.0
        mask[r] = torch.as_tensor(row, dtype=x0.dtype, device=x0.device)
    state.x.mul_(mask)
    state.own = DisPFLState(mask=mask,
                            trained=state.x.clone() if hp.evaluate == "trained" else None)
    return state


def communicate(state: State, rnd: Round, env: Services, *, hp: DisPFLParams) -> Sent:
    """One round's communication: the masked average over each client's neighbourhood
    (with the masks the models were trained under), then, while the drop rate is positive,
    each mask pruned and regrown (randomly, or by the gradient's magnitude), and the
    average kept on the new mask."""
    if rnd.topology is None:
        raise ValueError(f"dis_pfl: round {rnd.t} has no topology to communicate over")
    topo = rnd.topology
    own = state.own_as(DisPFLState)
    x, mask = state.x, own.mask
    if own.trained is not None:  # evaluate="trained"
        own.trained.copy_(x)
    # what each client sends: its kept entries (the mask it trained under) and the mask
    kept = env.clients.all_rows(mask.sum(dim=1).round().long()).cpu().numpy()
    arcs = graph_arcs(topo)
    flows = (Flow("values", arcs, kept[arcs.senders], dtype_bits(x.dtype)),
             Flow("mask", arcs, int(x.shape[1]), 1, attached=True))
    on = online_rows(rnd, env, x.device)
    absent = None if on is None else ~on
    keep = None if absent is None else (x[absent].clone(), mask[absent].clone())
    avg = _masked_sums_(topo, x, mask, env)  # with the masks the models were trained under
    rate = _drop_rate(rnd.t, hp.anneal, hp.anneal_rounds)
    if rate > 0:
        offsets, numels, _ = mask_geometry(env, hp)
        if hp.regrow == "random":
            keys = _regrow_keys(hp.mask_seed, rnd.t, env.clients.ids, x)
        else:
            y = x.clone()
            env.local_train(y, "all", 1.0, t=rnd.t, steps=1, stream=_GRAD_STREAM)
            keys = (x - y).abs_()  # one SGD step of rate 1: the gradient at x
        prune_regrow_(mask, x, offsets, numels, rate, keys)
    x.copy_(avg.mul_(mask))
    if keep is not None and absent is not None:  # an offline client keeps model and mask
        x[absent], mask[absent] = keep
    return Sent.of(*flows)


def scored(state: State, rnd: Round, env: Services, *, hp: DisPFLParams) -> Tensor:
    """The models scored: as trained in the round, or as aggregated."""
    trained = state.own_as(DisPFLState).trained
    return trained if hp.evaluate == "trained" and trained is not None else state.x
