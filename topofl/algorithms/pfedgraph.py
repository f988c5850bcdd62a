r"""pFedGraph: a server infers a collaboration graph from model similarity and aggregates along it.

Each round the server compares the clients' model updates (cosine similarity of
$\theta_i - \theta^0$), solves one small quadratic programme per client over the simplex for its
row of the collaboration graph, and sends client $i$ its personalized aggregate
$\sum_j a_{ij}\theta_j$; clients then train locally with a term that pulls their model towards
the direction of their collaborators' models.

Notes
-----
In the notation of :func:`pfedgraph`: the similarity is taken between the updates from each
client's initial model $\theta^0_i$ (the released code: from the initial global model; they
agree with ``init="same"``, the engine's default). Since every update is measured from
$\theta^0$, the part the clients share grows over the rounds; once all pairwise cosines
exceed ``similarity_clip`` every row becomes the projection of $p + 1/(2\alpha)$, i.e.
$p$ (FedAvg's weights): watch ``state.own.graph`` or the recorded realized edges.
The released code adds $+\lambda\langle\theta, u_i\rangle/\|\theta\|$ to the loss; topofl
follows the paper's objective, which maximises the similarity with the collaborators (the
minus sign). The quadratic programme is solved in closed form (projection onto the simplex)
instead of with a generic solver; tests check it against ``scipy.optimize.minimize``.
Messages per round with ``m`` participants (sampled and online; absent clients follow the
``"server"`` rule): ``m`` models up and ``m`` personalized models down, with ``lam > 0`` each
with the pull direction $u_i$ attached (kind ``"cluster"``).

Cost per round at the server: one ``[m, P] @ [P, m]`` product for the similarities, one sort
per row, and one ``[m, m] @ [m, P]`` product for the aggregates; ``state`` holds three
``[n, P]`` buffers (models, initial models, pull directions). Distributed
(:mod:`topofl.distributed`): every rank gathers the participants' updates and solves the
whole graph (the same on every rank), then averages its own clients from the models their
rows weigh (fetched); ``state.own.graph`` holds the rank's ``[m, n]`` rows.

References
----------
.. [1] R. Ye, Z. Ni, F. Wu, S. Chen, Y. Wang, "Personalized Federated Learning with Inferred
   Collaboration Graphs", ICML 2023 (pFedGraph).
.. [2] J. Duchi, S. Shalev-Shwartz, Y. Singer, T. Chandra, "Efficient projections onto the
   l1-ball for learning in high dimensions", ICML 2008 (projection onto the simplex).
.. [3] S. Kharrat, M. Canini, S. Horvath, "Decentralized Personalized Federated Learning"
   (DPFL), Table 1 and Appendix F.6 (pFedGraph as a baseline).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypedDict, cast

import numpy as np
import torch
from torch import Tensor

from topofl._utils.validation import check_choice, check_real
from topofl.algorithms._one_phase import WholeModelParams, local_training, whole_model_algorithm
from topofl.algorithms.base import register_algorithm
from topofl.algorithms.hparams import (
    WEIGHTINGS,
    Group,
    Keywords,
    LocalSGD,
    LocalSGDKeywords,
    Sampling,
    SamplingKeywords,
)
from topofl.engine.ledger import Flow, dtype_bits
from topofl.engine.pieces import (
    SGD,
    Sampled,
    compose_init,
    data_sizes,
    round_active,
    server_flows,
)
from topofl.engine.protocol import Algorithm, Kernel, Part, Phase, Round, Sent, Services, State
from topofl.graph import Topology

if TYPE_CHECKING:  # Unpack is typing's from Python 3.11; only the type checker reads it
    from typing_extensions import Unpack

__all__ = ["pfedgraph", "PFedGraphKeywords", "SimilarityGraph", "SimilarityGraphKeywords",
           "project_simplex", "collaboration_weights", "cosine_dissimilarity",
           "PFedGraphParams", "PFedGraphState", "infer_graph", "aggregate_"]


@dataclass
class PFedGraphState:
    r"""pFedGraph's state besides the models (``State.x``): rows of the clients held here.

    Attributes
    ----------
    initial : Tensor
        ``[n, P]`` the initial models $\theta^0_i$ (the updates are measured from them).
    cluster : Tensor
        ``[n, P]`` the pull directions $u_i = \sum_j a_{ij} \theta_j / \|\theta_j\|$ (0
        before the first aggregation).
    graph : Tensor
        ``[n, n]`` the learned collaboration graph, row ``i`` the weights client ``i`` gives.
    """

    initial: Tensor
    cluster: Tensor
    graph: Tensor


def project_simplex(v: Tensor) -> Tensor:
    r"""Euclidean projection of each row of ``v`` onto the probability simplex.

    $\arg\min_{a \ge 0,\ \sum a = 1} \|a - v\|^2$ by the sort-based rule of Duchi et al.:
    $a = \max(v - \tau, 0)$ with $\tau$ the threshold found from the sorted entries.

    Parameters
    ----------
    v : Tensor
        ``[m, k]`` (or ``[k]``).

    Returns
    -------
    Tensor
        The projections, same shape.

    Examples
    --------
    >>> import torch
    >>> from topofl.algorithms.pfedgraph import project_simplex
    >>> a = project_simplex(torch.tensor([[0.5, 0.5, 0.5], [2.0, 0.0, 0.0], [0.6, 0.2, 0.0]],
    ...                                  dtype=torch.float64))
    >>> [[round(v, 4) for v in row] for row in a.tolist()]
    [[0.3333, 0.3333, 0.3333], [1.0, 0.0, 0.0], [0.6667, 0.2667, 0.0667]]
    """
    flat = v.unsqueeze(0) if v.dim() == 1 else v
    u = torch.sort(flat, dim=1, descending=True).values
    css = u.cumsum(dim=1) - 1.0
    k = torch.arange(1, flat.shape[1] + 1, dtype=flat.dtype, device=flat.device)
    rho = (u - css / k > 0).sum(dim=1, keepdim=True)  # >= 1: the largest entry always counts
    tau = css.gather(1, rho - 1) / rho.to(flat.dtype)
    out = (flat - tau).clamp_min(0.0)
    return out.squeeze(0) if v.dim() == 1 else out


def cosine_dissimilarity(delta: Tensor, clip: float = 0.9) -> Tensor:
    r"""``[m, m]`` $d_{ij} = -\cos(\Delta_i, \Delta_j)$, set to $-1$ where $\cos > $ ``clip``.

    A zero update has cosine 0 with everything (itself included).

    Examples
    --------
    >>> import torch
    >>> from topofl.algorithms.pfedgraph import cosine_dissimilarity
    >>> d = cosine_dissimilarity(torch.tensor([[1.0, 0.0], [1.0, 0.1], [0.0, 1.0]]))
    >>> [[round(v, 3) for v in row] for row in d.tolist()]
    [[-1.0, -1.0, 0.0], [-1.0, -1.0, -0.1], [0.0, -0.1, -1.0]]
    """
    norms = delta.norm(dim=1, keepdim=True)
    unit = torch.where(norms > 0, delta / norms.clamp_min(torch.finfo(delta.dtype).tiny),
                       torch.zeros_like(delta))
    cos = unit @ unit.T
    d = -cos
    return torch.where(cos > clip, torch.full_like(d, -1.0), d)


def collaboration_weights(d: Tensor, p: Tensor, alpha: float) -> Tensor:
    r"""pFedGraph's graph rows: for each client $i$,
    $a_i = \arg\min_{a \in \Delta} \sum_j a_j d_{ij} + \alpha \|a - p\|^2$.

    The objective equals $\alpha\|a - (p - d_i / 2\alpha)\|^2$ up to a constant, so the
    solution is the projection of $p - d_i / (2\alpha)$ onto the simplex
    (:func:`project_simplex`): exact, one sort per row.

    Parameters
    ----------
    d : Tensor
        ``[m, m]`` dissimilarities (:func:`cosine_dissimilarity`).
    p : Tensor
        ``[m]`` the clients' data-size proportions (sum 1).
    alpha : float
        $\alpha > 0$: the larger, the closer each row stays to ``p`` (FedAvg's weights).

    Returns
    -------
    Tensor
        ``[m, m]`` row-stochastic, non-negative.

    Examples
    --------
    Two similar clients and one apart, equal sizes: with a small ``alpha`` the first two only
    average each other.

    >>> import torch
    >>> from topofl.algorithms.pfedgraph import collaboration_weights
    >>> d = torch.tensor([[-1.0, -1.0, 0.0], [-1.0, -1.0, 0.0], [0.0, 0.0, -1.0]])
    >>> collaboration_weights(d, torch.full((3,), 1 / 3), 0.5).tolist()
    [[0.5, 0.5, 0.0], [0.5, 0.5, 0.0], [0.0, 0.0, 1.0]]
    """
    if alpha <= 0:
        raise ValueError(f"alpha must be > 0, got {alpha}")
    return project_simplex(p.unsqueeze(0) - d / (2.0 * alpha))


@dataclass(frozen=True)
class _Pulled:
    r"""Local SGD on $F_i(\theta) - \lambda \langle \theta, u_i \rangle / \|\theta\|$, where
    $u_i = \sum_j a_{ij} \theta_j / \|\theta_j\|$ (:attr:`PFedGraphState.cluster`, 0 before the
    first aggregation): the gradient of the term is
    $-\lambda (u_i / \|\theta\| - \langle\theta, u_i\rangle \theta / \|\theta\|^3)$."""

    sgd: Any  # Sampled(SGD)
    lam: float

    rowwise = False  # the participants' mask is over all clients

    def init_(self, state: State, env: Services) -> None:
        self.sgd.init_(state, env)

    def point(self, state: State, phase: Phase, env: Services) -> Tensor:
        return state.x

    def update(self, state: State, grads: Tensor, phase: Phase, lr: Tensor, rnd: Round,
               env: Services) -> None:
        if self.lam:
            x, u = state.x, state.own_as(PFedGraphState).cluster
            norm = x.norm(dim=1, keepdim=True)
            safe = norm > 0  # the term is not differentiable at 0: no pull there
            nc = norm.clamp_min(torch.finfo(x.dtype).tiny)
            xh = x / nc
            pull = (u - (xh * u).sum(dim=1, keepdim=True) * xh) / nc
            grads.add_(torch.where(safe, pull, torch.zeros_like(pull)), alpha=-self.lam)
        self.sgd.update(state, grads, phase, lr, rnd, env)

    def fused(self, executor: Any) -> Kernel | None:
        return None


@dataclass(frozen=True)
class SimilarityGraph(Group):
    """pFedGraph's collaboration graph, inferred from the similarity of the clients' updates,
    and the local pull towards it (the fields are documented at :func:`pfedgraph`).

    Examples
    --------
    >>> from topofl.algorithms.pfedgraph import SimilarityGraph
    >>> SimilarityGraph(alpha=1).checked()["alpha"]
    1.0
    >>> SimilarityGraph(similarity="fc")
    Traceback (most recent call last):
    ...
    ValueError: similarity must be one of ['all', 'head'], got 'fc'
    """

    alpha: float = 0.8
    lam: float = 0.01
    similarity: str = "all"
    similarity_clip: float = 0.9
    weighting: str = "data_size"

    def __post_init__(self) -> None:
        self.checked()

    def checked(self) -> dict[str, Any]:
        """The checked fields, as :class:`PFedGraphParams` takes them."""
        return dict(alpha=check_real(self.alpha, "alpha", low=0, low_open=True),
                    lam=check_real(self.lam, "lam", low=0),
                    similarity=cast(Part, check_choice(self.similarity, "similarity",
                                                       ("all", "head"))),
                    similarity_clip=check_real(self.similarity_clip, "similarity_clip", low=0,
                                               high=1),
                    weighting=check_choice(self.weighting, "weighting", WEIGHTINGS))


class SimilarityGraphKeywords(TypedDict, total=False):
    """:class:`SimilarityGraph`'s fields as flat keywords."""

    alpha: float
    lam: float
    similarity: str
    similarity_clip: float
    weighting: str


class PFedGraphKeywords(LocalSGDKeywords, SimilarityGraphKeywords, SamplingKeywords,
                        total=False):
    """pFedGraph's flat keywords: the fields of its groups (documented at :func:`pfedgraph`)."""


#: pFedGraph's default groups: the released code's optimiser (200 local steps), graph and pull,
#: every client active
_SGD = LocalSGD(lr=0.01, momentum=0.9, weight_decay=1e-5)
_GRAPH, _EVERY_CLIENT = SimilarityGraph(), Sampling()


@register_algorithm("pfedgraph")
def pfedgraph(sgd: LocalSGD | float = _SGD, collaboration: SimilarityGraph = _GRAPH,
              sampling: Sampling = _EVERY_CLIENT, **keywords: Unpack[PFedGraphKeywords]
              ) -> Algorithm:
    r"""pFedGraph: personalized aggregation along a collaboration graph inferred by the server.

    Each round $t$, every participating client $i$ (all of them by default):

    1. trains locally from its personalized model on
       $F_i(\theta) - \lambda\,\langle\theta, u_i\rangle / \|\theta\|$, with
       $u_i = \sum_j a_{ij}\theta_j / \|\theta_j\|$ from the previous aggregation (no term in
       round 0): the term is $-\lambda\sum_j a_{ij}\cos(\theta, \theta_j)$, a pull towards the
       collaborators' models;
    2. the server computes $d_{ij} = -\cos(\theta_i - \theta^0_i, \theta_j - \theta^0_j)$ over
       the participants (set to $-1$ where the cosine exceeds ``similarity_clip``) and, for each
       $i$, the graph row
       $a_i = \arg\min_{a \in \Delta} \sum_j a_j d_{ij} + \alpha\|a - p\|^2$ with $p$ the
       participants' data-size proportions (:func:`collaboration_weights`, exact);
    3. client $i$ receives $\theta_i \leftarrow \sum_j a_{ij}\theta_j$.

    Parameters
    ----------
    sgd : LocalSGD or float, optional
        The local training (:class:`~topofl.algorithms.hparams.LocalSGD`: the flat keywords
        ``lr``, ``momentum``, ``weight_decay``, ``decay``, ``local_steps`` and
        ``local_epochs`` below, with their defaults); a number is ``lr`` (``pfedgraph(0.1)``).
    collaboration : SimilarityGraph, optional
        The inferred graph and the pull towards it (:class:`SimilarityGraph`: the flat
        keywords ``alpha`` to ``weighting`` below, with their defaults).
    sampling : Sampling, optional
        The clients sampled per round (:class:`~topofl.algorithms.hparams.Sampling`: the
        flat keywords ``participation`` and ``sample_seed`` below; default every client).
    **keywords
        The groups' fields as flat keywords (each replaces the field of its group):
    lr : float, default 0.01
        Local learning rate (``lr * decay**t`` at round ``t``).
    alpha : float, default 0.8
        $\alpha > 0$: weight of the pull of each row towards $p$ (against concentrating on
        the most similar clients).
    lam : float, default 0.01
        $\lambda \ge 0$: strength of the local pull towards the collaborators (0: plain local
        SGD from the personalized aggregate).
    similarity : {"all", "head"}, default "all"
        The parameters the cosine similarity is computed on: all, or the classifier head
        only (the released code's ``difference_measure="fc"``).
    similarity_clip : float in [0, 1], default 0.9
        Cosines above this count as 1 (as in the released code); 1 disables the clipping.
    weighting : {"data_size", "uniform"}, default "data_size"
        $p$: the participants' training-set sizes normalised (the paper), or uniform.
    participation : float in (0, 1], default 1
        Fraction of clients sampled per round (:func:`~topofl.engine.pieces.participants`);
        the others neither train nor change, and keep their last graph row.
    sample_seed : int, default 0
    momentum : float, default 0.9
        Local heavy-ball momentum, restarted every round.
    weight_decay : float, default 1e-5
    decay : float, default 1
    local_steps, local_epochs
        Local work per round: steps (default 200) or epochs.

    Returns
    -------
    Algorithm
        ``shared="all"``, ``requires=None``, ``uses_topology=False``. The learned graph is
        ``state.own.graph`` (:class:`PFedGraphState`, ``[n, n]``, row ``i`` = the weights
        client ``i`` gives) and each round's graph over the participants is returned as the
        realized graph, so the records hold its edges (``realized_edges``), density and
        reciprocity.

    Notes
    -----
    The defaults are those of the released code (lr 0.01, SGD with momentum 0.9 and weight
    decay 1e-5, $\alpha = 0.8$, $\lambda = 0.01$, 200 local iterations per round, cosine on all
    parameters). The readings of the paper and of the released code, the messages and the
    cost per round: the module docstring.

    References
    ----------
    .. [1] R. Ye, Z. Ni, F. Wu, S. Chen, Y. Wang, "Personalized Federated Learning with
       Inferred Collaboration Graphs", ICML 2023.

    Examples
    --------
    Clients 0, 1 pull towards target +1 and clients 2, 3 towards -1 (``f_i = |x - c_i|^2/2``
    from 0): the updates of each pair point the same way, so the learned graph joins the pairs.

    >>> import torch
    >>> c = torch.tensor([[1.0, 1.0], [1.0, 0.9], [-1.0, -1.0], [-0.9, -1.0]],
    ...                  dtype=torch.float64)
    >>> algo = tf.algorithms.pfedgraph(0.1, alpha=0.1, weighting="uniform", momentum=0.0,
    ...                                local_steps=3)
    >>> tr = tf.engine.run_rounds(algo, torch.zeros_like(c), None,
    ...                           lambda z, phase, rnd: z - c, rounds=1)
    >>> [[round(v, 2) for v in row] for row in tr.state.own.graph.tolist()]
    [[0.5, 0.5, 0.0, 0.0], [0.5, 0.5, 0.0, 0.0], [0.0, 0.0, 0.5, 0.5], [0.0, 0.0, 0.5, 0.5]]
    """
    kw = Keywords("pfedgraph", keywords)
    local, graph, active = kw.take(sgd, _SGD), kw.take(collaboration), kw.take(sampling)
    kw.done()
    participation, sample_seed = active.checked()
    hp = PFedGraphParams(**local_training(local, default_steps=200), **graph.checked(),
                         participation=participation, sample_seed=sample_seed)
    return whole_model_algorithm("pfedgraph", hp, init=init_state, local=hp.local,
                                 communicate=communicate,
                                 uses_topology=False, absent="server")


@dataclass(frozen=True)
class PFedGraphParams(WholeModelParams):
    """pFedGraph's checked hyper-parameters (what :func:`pfedgraph` validated and its steps
    read): its own, after the local training's (:class:`WholeModelParams`)."""

    alpha: float
    lam: float
    similarity: Part
    similarity_clip: float
    weighting: str
    participation: float
    sample_seed: int

    @property
    def local(self) -> _Pulled:
        """The local update: SGD of the round's participants, pulled towards the clients'
        cluster models."""
        return _Pulled(Sampled(SGD(self.momentum, self.weight_decay), self.participation,
                               self.sample_seed), self.lam)


# --------------------------------------------------------------------------- the round's steps
#
# Every process infers the whole graph over the participants from every client's update (a
# dense need: all_rows where the clients are spread), then aggregates its own rows from the
# rows their graph rows weigh (fetch: only the non-zero columns).


def init_state(x0: Tensor, env: Services, *, hp: PFedGraphParams) -> State:
    """A fresh state: the models' starting point (the updates are measured from it), the
    cluster models $u_i$ (0 before the first aggregation) and this process's rows of the
    graph (uniform)."""
    if hp.similarity == "head" and not env.layout.has_split:
        raise ValueError(
            "pfedgraph with similarity='head' compares the classifier heads, but the "
            "model's parameters do not split into a body and a head; use similarity='all' "
            "or a model with a head"
        )
    state = compose_init(hp.local)(x0, env)
    n = env.n
    state.own = PFedGraphState(
        initial=x0.clone(), cluster=torch.zeros_like(x0),
        # this process's rows of the [n, n] graph (all of them in one process)
        graph=torch.full((x0.shape[0], n), 1.0 / n, dtype=x0.dtype, device=x0.device))
    return state


def infer_graph(state: State, t: int, env: Services, hp: PFedGraphParams,
                online: np.ndarray | None = None) -> tuple[np.ndarray, Tensor]:
    r"""The server's collaboration graph of round ``t``: the participants (sorted ids: the
    sampled clients that are ``online``, :func:`~topofl.engine.pieces.round_active`) and
    their ``[s, s]`` rows $a$, from the cosine dissimilarity of the updates
    $\theta_i - \theta^0$ and the weights $p$ (:func:`collaboration_weights`); the same on
    every process."""
    n, x = env.n, state.x
    dev = x.device
    sel = round_active(Round(t, None, online), n, hp.participation, hp.sample_seed)
    idx = np.arange(n, dtype=np.int64) if sel is None else np.flatnonzero(sel)
    idx_t = torch.as_tensor(idx, device=dev)
    cols = env.layout.cols(hp.similarity)
    initial = state.own_as(PFedGraphState).initial
    delta = env.clients.all_rows((x - initial)[:, cols]).index_select(0, idx_t)
    d = cosine_dissimilarity(delta, hp.similarity_clip)
    if hp.weighting == "data_size":
        sizes = data_sizes(env).to(device=dev, dtype=x.dtype)
        p = env.clients.all_rows(sizes).index_select(0, idx_t)
    else:
        p = torch.ones(idx.size, dtype=x.dtype, device=dev)
    return idx, collaboration_weights(d, p / p.sum(), hp.alpha)


def aggregate_(state: State, idx: np.ndarray, a: Tensor, env: Services) -> None:
    r"""Each participant held here gets its personalized aggregate $\sum_j a_{ij}\theta_j$
    and its cluster model $u_i = \sum_j a_{ij} \theta_j / \|\theta_j\|$; its row of the graph
    is kept."""
    n, x = env.n, state.x
    dev = x.device
    where = np.full(n, -1, dtype=np.int64)
    where[idx] = np.arange(idx.size)
    at = where[env.clients.ids]
    rows = torch.as_tensor(np.flatnonzero(at >= 0), device=dev)
    a_mine = a.index_select(0, torch.as_tensor(at[at >= 0], device=dev))
    nz = np.flatnonzero((a_mine != 0).any(dim=0).cpu().numpy())
    (Xn,) = env.clients.fetch(idx[nz], x)
    w = a_mine[:, torch.as_tensor(nz, device=dev)]
    norms = Xn.norm(dim=1, keepdim=True).clamp_min(torch.finfo(x.dtype).tiny)
    own = state.own_as(PFedGraphState)
    own.cluster.index_copy_(0, rows, w @ (Xn / norms))
    x.index_copy_(0, rows, w @ Xn)
    own.graph[rows.unsqueeze(1), torch.as_tensor(idx, device=dev).unsqueeze(0)] = a_mine


def communicate(state: State, rnd: Round, env: Services, *, hp: PFedGraphParams) -> Sent:
    """One round of the server: the graph (:func:`infer_graph`), the personalized aggregates
    (:func:`aggregate_`); the realized graph is the participants' rows of $a$, and each
    participant downloads its personalized model (with its pull direction $u_i$ attached
    when ``lam > 0``) before its local work and uploads its model after it."""
    n = env.n
    active = round_active(rnd, n, hp.participation, hp.sample_seed)
    if active is not None and not active.any():  # nobody online among the sampled
        return Sent.of(active=active)
    idx, a = infer_graph(state, rnd.t, env, hp, rnd.online)
    aggregate_(state, idx, a, env)
    W = torch.zeros(n, n, dtype=torch.float64)
    W[torch.as_tensor(idx).unsqueeze(1), torch.as_tensor(idx).unsqueeze(0)] = (
        a.detach().cpu().double())
    realized = Topology.from_matrix(W.numpy(), name="pfedgraph",
                                    params={"round": rnd.t, "alpha": hp.alpha})
    size, bits = int(state.x.shape[1]), dtype_bits(state.x.dtype)
    down, up = server_flows(n, active, size, bits)
    flows = (down, up) if not hp.lam else (
        down, Flow("cluster", down.arcs, size, bits, stage=-1, attached=True), up)
    return Sent.of(*flows, realized=realized, active=active)
