r"""Morph: decentralized learning whose graph each node rewires towards dissimilar models.

Every node keeps a fixed number ``degree`` of *in-neighbours* (the nodes it pulls a model
from). Each round it trains locally, then replaces its model by the uniform average of its
own and its in-neighbours' models, $x_i \leftarrow \frac{1}{d+1}(x_i + \sum_{j \in N_i} x_j)$.
Every ``every`` rounds, before that average, each node swaps one in-neighbour:

- it *adds* a node ``a`` drawn among the nodes not yet in $N_i$ (nor ``i``) with probability
  $\propto \exp(-\beta\, s_{ia})$: the **least similar** models are the likeliest;
- it *removes* a node ``r`` drawn among its current in-neighbours with probability
  $\propto \exp(\beta\, s_{ir})$: the **most similar** in-neighbour is the likeliest to go;

where $s_{ij}$ is the layer-wise cosine similarity of the two models: the mean, over the
model's parameter tensors (every weight and every bias apart), of the cosine of the two
flattened tensors (:func:`layer_similarity`). The in-degree stays ``degree``; the graph
becomes directed and changes with the models, a learned time-varying graph that
``communicate`` reports as realized (the engine records its arcs and spectrum).

Notes
-----
The facts come from the authors' code (the ``DissDL`` node of the ``bacox/Morph`` fork of
decentralizepy, ``update_wanted_senders``, ``compute_similarity`` and the tutorial configs);
the paper's own text was not read. Read there:

- **Similarity**: per parameter tensor of ``named_parameters``, the cosine of the two
  flattened tensors; tensors where either norm is zero are skipped; the mean over the rest
  (``-1`` when none is left).
- **Direction**: the node to add is drawn by a softmax of ``-beta * s`` (dissimilar preferred),
  the node to remove by a softmax of ``+beta * s`` over the current in-neighbours (similar
  removed first). The two draws are independent; the node just added cannot be removed in the
  same swap (removal draws among the in-neighbours before the addition).
- **Temperature**: ``beta = 500`` in every tutorial config (the code's fallback is 1).
- **How often**: at iterations ``t > 0`` with ``t % change_topology_iter == 0``, with
  ``change_topology_iter = 5``; after the local training of that iteration, before the
  averaging.
- **In-degree**: a node swaps only when it has at least two in-neighbours and one node to add;
  ``degree = 1`` is refused here (its graph would never change), ``degree = n - 1`` is the
  complete graph, which never changes either.
- **First graph**: the in-neighbours are the neighbours of a random ``degree``-regular graph
  (the experiments read ``regular_<n>_<d>.edges`` files written from
  ``networkx.random_regular_graph``; degrees 3 and 7 in the README); here
  :func:`topofl.topologies.random_regular` (connected) of ``graph_seed``.
- **Averaging**: uniform, ``1 / (|N_i| + 1)`` on the node itself and on each model received
  (``PlainAverageSharing``: "does not use Metropolis-Hastings"); row-stochastic, not doubly.
- **Local work**: plain SGD, learning rate 0.05, 10 local steps per round of batches of 5
  (CIFAR-10 tutorial configs): this factory's defaults are ``lr=0.05`` and ``local_steps=10``.

Where the simulation differs from the code (choices, not facts):

- **Models compared.** The code compares a node's model with the last model it *received*
  from each peer, and for a peer it never heard from estimates the similarity transitively
  from its neighbours' gossiped similarities (``estimate_similarity``). Here every node
  compares its model with every other node's current model (after this round's local
  training): the similarity the code approximates, computed exactly. The gossip of
  similarity tables and peer lists that feeds the estimate is not counted in the ledger.
- **Peer discovery.** The code adds only peers it has heard of (its known nodes grow through
  the peer lists its in-neighbours send); here every node may add any other node.
- **Handshake.** The code connects to a newly added peer with a handshake and pulls from it
  from a later round (the in-degree may dip by one meanwhile); here the new in-neighbour's
  model is averaged in the round of the swap.
- **Randomness.** The code draws with Python's ``random.Random(random_seed + uid)``, consumed;
  here the two uniforms of client ``i`` at round ``t`` are row ``i`` of the stream
  ``(graph_seed, t)`` (:func:`topofl._utils.rng.generator_at`), so a resumed run draws the same
  swaps. A draw is the inverse CDF of the softmax in float64 (candidates in client order).

Distributed (``torchrun``): each rank scores its own clients against every client's model
(gathered: ``n`` rows of ``P`` per rank), draws their swaps, and mixes through the mixer over
the gathered graph; the records equal the single-process run's. Absent clients follow the
``"stale"`` rule: an offline client neither trains nor rewires nor receives, and the others
read its last model.

Cost per rewiring round: the similarity of the ``m`` clients held here with all ``n``,
$O(m n P)$ time and $O(L m n)$ memory for ``L`` parameter tensors (one matrix product per
tensor, no loop over clients); every round one sparse product with the realized graph.

References
----------
.. [1] Code of Morph ("Decentralized Learning with Dissimilarity-Driven Peer Selection"):
   github.com/bacox/Morph, ``src/decentralizepy/node/DissDL/DissDL.py`` and
   ``tutorial/DissDL/config_*.ini``.

Records
-------
On every rewiring round: ``morph_added`` and ``morph_removed`` (``[n]``, the node each client
added and removed; ``-1`` where it did not swap) and ``morph_similarity`` (the mean over
clients of the mean similarity to their in-neighbours, after the swap).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypedDict

import numpy as np
import scipy.sparse as sp
import torch
from torch import Tensor

from topofl._utils.rng import generator_at
from topofl._utils.validation import check_int, check_real
from topofl.algorithms.base import register_algorithm
from topofl.algorithms.hparams import Group, Keywords, LocalSGD, LocalSGDKeywords
from topofl.engine.layout import ParamLayout
from topofl.engine.ledger import Flow, arcs_of_mask, dtype_bits
from topofl.engine.pieces import SGD
from topofl.engine.protocol import Algorithm, Phase, Round, Sent, Services, State, run_ids
from topofl.graph import Topology
from topofl.topologies import random_regular

if TYPE_CHECKING:  # Unpack is typing's from Python 3.11; only the type checker reads it
    from typing_extensions import Unpack

__all__ = ["morph", "layer_similarity", "morph_swap", "MorphParams", "MorphState", "Rewiring",
           "RewiringKeywords", "MorphKeywords"]

_STACKS = ("morph compares each client's model with every other model of its run, outside "
           "the mixer: it runs alone")


# --------------------------------------------------------------------------- the similarity


def layer_similarity(rows: Tensor, everyone: Tensor, layout: ParamLayout) -> Tensor:
    r"""Layer-wise cosine similarity of ``rows``' models with ``everyone``'s: ``[m, n]``.

    $s_{ij} = \frac{1}{|L_{ij}|}\sum_{l \in L_{ij}} \cos(x_i^{(l)}, x_j^{(l)})$, over the
    parameter tensors ``l`` of the layout (each weight and bias apart) where neither
    flattened tensor is zero, and $s_{ij} = -1$ when there is none.

    Parameters
    ----------
    rows : Tensor
        ``[m, P]`` the flat models of the clients to score.
    everyone : Tensor
        ``[n, P]`` the flat models they are compared with.
    layout : ParamLayout
        Where each parameter tensor lies in the ``P`` columns.

    Returns
    -------
    Tensor
        ``[m, n]`` in the dtype of ``rows``.

    Notes
    -----
    One matrix product per parameter tensor, $O(m n P)$ in all; no loop over clients.

    Examples
    --------
    Two tensors (a weight of 2 and a bias of 1): the weights of clients 0 and 1 are
    orthogonal, their biases equal; client 2's bias is zero, so only its weight counts.

    >>> import torch
    >>> from torch import nn
    >>> from topofl.algorithms.morph import layer_similarity
    >>> lay = tf.engine.ParamLayout.from_model(nn.Linear(2, 1))
    >>> x = torch.tensor([[1.0, 0.0, 1.0], [0.0, 1.0, 2.0], [1.0, 0.0, 0.0]])
    >>> layer_similarity(x, x, lay).tolist()
    [[1.0, 0.5, 1.0], [0.5, 1.0, 0.0], [1.0, 0.0, 1.0]]
    """
    if rows.dim() != 2 or everyone.dim() != 2 or rows.shape[1] != everyone.shape[1]:
        raise ValueError(f"rows and everyone must be [m, P] and [n, P] with the same P, got "
                         f"{tuple(rows.shape)} and {tuple(everyone.shape)}")
    if rows.shape[1] != layout.num_params:
        raise ValueError(f"the models must have P={layout.num_params} columns (the layout's), "
                         f"got {rows.shape[1]}")
    a, b = layout.views(rows), layout.views(everyone)
    total = torch.zeros(rows.shape[0], everyone.shape[0], dtype=rows.dtype, device=rows.device)
    count = torch.zeros_like(total)
    for name in layout.names:
        u = a[name].reshape(rows.shape[0], -1)
        v = b[name].reshape(everyone.shape[0], -1).to(rows.dtype)
        nu, nv = u.norm(dim=1), v.norm(dim=1)
        ok = (nu > 0).unsqueeze(1) & (nv > 0).unsqueeze(0)
        cos = (u / nu.clamp_min(torch.finfo(u.dtype).tiny).unsqueeze(1)) @ (
            v / nv.clamp_min(torch.finfo(v.dtype).tiny).unsqueeze(1)).T
        total += torch.where(ok, cos, 0.0)
        count += ok.to(total.dtype)
    return torch.where(count > 0, total / count.clamp_min(1), -1.0)


# --------------------------------------------------------------------------- one swap


def _draw(logits: Tensor, u: Tensor) -> Tensor:
    """``[m]`` index drawn from each row's softmax of ``logits`` (``-inf``: not a candidate)
    by the inverse CDF at ``u`` ``[m]`` in ``[0, 1)``; rows without a candidate get 0."""
    p = torch.softmax(logits, dim=1).nan_to_num(0.0)
    cum = torch.cumsum(p, dim=1)
    idx = torch.searchsorted(cum, (u * cum[:, -1]).unsqueeze(1).contiguous(), right=True)
    last = (torch.arange(p.shape[1], device=p.device) * (p > 0)).amax(dim=1, keepdim=True)
    return torch.minimum(idx, last).squeeze(1)


def morph_swap(peers: Tensor, sim: Tensor, ids: Tensor, beta: float, u: Tensor
               ) -> tuple[Tensor, Tensor, Tensor]:
    r"""One rewiring step of Morph for the clients ``ids``: each adds a dissimilar node and
    removes a similar in-neighbour.

    Client ``i`` adds ``a`` (not in ``peers[i]``, not ``i``) with probability
    $\propto e^{-\beta s_{ia}}$ and removes ``r`` in ``peers[i]`` with probability
    $\propto e^{\beta s_{ir}}$; the added node takes the removed one's slot. A client swaps
    only when it has at least two in-neighbours and a node to add.

    Parameters
    ----------
    peers : Tensor
        ``[m, d]`` int64: the in-neighbours of each client (distinct, never itself).
    sim : Tensor
        ``[m, n]`` similarities of each client's model with every client's
        (:func:`layer_similarity`); computed with in float64.
    ids : Tensor
        ``[m]`` int64: each row's client id.
    beta : float
        Inverse temperature of the two softmaxes (``>= 0``).
    u : Tensor
        ``[m, 2]`` uniforms in ``[0, 1)``: column 0 draws the node added, column 1 the one
        removed (the inverse CDF of the softmax, candidates in client order).

    Returns
    -------
    new_peers : Tensor
        ``[m, d]`` int64.
    added, removed : Tensor
        ``[m]`` int64: the nodes added and removed (``-1`` where the client did not swap).

    Examples
    --------
    Client 0 of four pulls from 1 and 2; 1's model is its twin, 3's its opposite. With a
    large ``beta`` it drops 1 and takes 3 whatever the uniforms:

    >>> import torch
    >>> from topofl.algorithms.morph import morph_swap
    >>> sim = torch.tensor([[1.0, 1.0, 0.0, -1.0]], dtype=torch.float64)
    >>> new, added, removed = morph_swap(torch.tensor([[1, 2]]), sim, torch.tensor([0]),
    ...                                  50.0, torch.tensor([[0.5, 0.5]]))
    >>> new.tolist(), added.tolist(), removed.tolist()
    ([[3, 2]], [3], [1])
    """
    m, d = peers.shape
    n = sim.shape[1]
    if tuple(sim.shape) != (m, n) or tuple(u.shape) != (m, 2) or tuple(ids.shape) != (m,):
        raise ValueError(f"peers [m, d], sim [m, n], ids [m] and u [m, 2] must agree on m, got "
                         f"{tuple(peers.shape)}, {tuple(sim.shape)}, {tuple(ids.shape)}, "
                         f"{tuple(u.shape)}")
    s = sim.to(torch.float64)
    dev = s.device
    ids = ids.to(dev)
    peers = peers.to(dev)
    taken = torch.zeros(m, n, dtype=torch.bool, device=dev)
    taken.scatter_(1, peers, True)
    taken[torch.arange(m, device=dev), ids] = True
    inf = torch.tensor(-torch.inf, dtype=torch.float64, device=dev)
    add_logits = torch.where(taken, inf, -beta * s)
    rem_logits = beta * s.gather(1, peers)
    uu = u.to(device=dev, dtype=torch.float64)
    added = _draw(add_logits, uu[:, 0])
    slot = _draw(rem_logits, uu[:, 1])
    swaps = (~taken).any(dim=1) & (d >= 2)
    removed = peers.gather(1, slot.unsqueeze(1)).squeeze(1)
    new = peers.clone()
    new.scatter_(1, slot.unsqueeze(1), torch.where(swaps, added, removed).unsqueeze(1))
    none = torch.full_like(added, -1)
    return new, torch.where(swaps, added, none), torch.where(swaps, removed, none)


# --------------------------------------------------------------------------- the algorithm


@dataclass(frozen=True)
class Rewiring(Group):
    """Morph's graph: each node's in-degree and how it rewires (documented at :func:`morph`).

    Attributes
    ----------
    degree : int, default 3
        In-degree ``d >= 2`` of every node.
    beta : float, default 500
        Inverse temperature of the swaps' softmaxes (``>= 0``).
    every : int, default 5
        Rounds between swaps (``>= 1``).
    graph_seed : int, default 0
        Seed of the first graph and of the swaps (``>= 0``).

    Examples
    --------
    >>> from topofl.algorithms.morph import Rewiring
    >>> Rewiring(degree=7).checked()
    (7, 500.0, 5, 0)
    >>> Rewiring(degree=1)
    Traceback (most recent call last):
    ...
    ValueError: degree must be >= 2, got 1
    """

    degree: int = 3
    beta: float = 500.0
    every: int = 5
    graph_seed: int = 0

    def __post_init__(self) -> None:
        self.checked()

    def checked(self) -> tuple[int, float, int, int]:
        """``(degree, beta, every, graph_seed)`` as checked numbers."""
        return (check_int(self.degree, "degree", low=2), check_real(self.beta, "beta", low=0),
                check_int(self.every, "every", low=1),
                check_int(self.graph_seed, "graph_seed", low=0))

    def resolved(self) -> Rewiring:
        """The group as the record Morph builds from: its numbers checked (:meth:`checked`)."""
        return Rewiring(*self.checked())


class RewiringKeywords(TypedDict, total=False):
    """:class:`Rewiring`'s fields as flat keywords."""

    degree: int
    beta: float
    every: int
    graph_seed: int


class MorphKeywords(LocalSGDKeywords, RewiringKeywords, total=False):
    """Morph's flat keywords: the fields of its groups (documented at :func:`morph`)."""


@dataclass(frozen=True)
class MorphParams:
    """Morph's checked hyper-parameters: its two groups, resolved."""

    local_sgd: LocalSGD
    rewiring: Rewiring

    @property
    def degree(self) -> int:
        """In-degree of every node."""
        return self.rewiring.degree

    @property
    def beta(self) -> float:
        """Inverse temperature of the swaps."""
        return self.rewiring.beta

    @property
    def every(self) -> int:
        """Rounds between swaps."""
        return self.rewiring.every

    @property
    def graph_seed(self) -> int:
        """Seed of the first graph and of the swaps."""
        return self.rewiring.graph_seed

    @property
    def sgd(self) -> SGD:
        """The local optimizer."""
        return SGD(self.local_sgd.momentum, self.local_sgd.weight_decay)

    def as_dict(self) -> dict[str, Any]:
        """The hyper-parameters as recorded in the run config."""
        return dict(self.local_sgd.as_dict(), degree=self.degree, beta=self.beta,
                    every=self.every, graph_seed=self.graph_seed)


@dataclass
class MorphState:
    """Morph's state besides the models: rows of the clients held here.

    Attributes
    ----------
    peers : Tensor
        ``[m, d]`` int64: each client's in-neighbours (the graph, learned).
    added, removed : Tensor
        ``[m]`` int64: the last swap (``-1``: none), for the records.
    """

    peers: Tensor
    added: Tensor
    removed: Tensor


def first_graph(n: int, degree: int, seed: int) -> np.ndarray:
    """``(n, degree)`` int64: the in-neighbours of each node in the random ``degree``-regular
    graph of ``seed`` (:func:`topofl.topologies.random_regular`, connected), increasing."""
    W = sp.csr_array(random_regular(n, degree, seed=seed).W)
    out = np.empty((n, degree), dtype=np.int64)
    for i in range(n):  # once per run, at its start
        row = W.indices[W.indptr[i]:W.indptr[i + 1]]
        out[i] = np.sort(row[row != i])
    return out


def init_state(x0: Tensor, env: Services, *, hp: MorphParams) -> State:
    """A fresh state: the first graph's in-neighbours of the clients held here."""
    n = env.n
    if hp.degree > n - 1:
        raise ValueError(f"morph's degree must be at most n - 1 = {n - 1} (each node pulls "
                         f"from distinct other nodes), got {hp.degree}")
    if (n * hp.degree) % 2:
        raise ValueError(f"morph's first graph is {hp.degree}-regular on n={n} nodes, which "
                         f"needs n * degree even, got {n * hp.degree}")
    rows = torch.as_tensor(first_graph(n, hp.degree, hp.graph_seed)[env.clients.ids],
                           device=x0.device)
    m = x0.shape[0]
    none = torch.full((m,), -1, dtype=torch.long, device=x0.device)
    state = State(x=x0, own=MorphState(peers=rows, added=none, removed=none.clone()))
    hp.sgd.init_(state, env)
    return state


def realized_graph(peers: Tensor, t: int) -> Topology:
    """The round's graph from every client's in-neighbours ``[n, d]``: ``W[i, j] = 1/(d+1)``
    for ``j`` in ``peers[i]`` and for ``j = i`` (arc ``j -> i``), built on the CPU."""
    P = peers.detach().cpu().numpy()
    n, d = P.shape
    cols = np.concatenate([np.arange(n, dtype=np.int64)[:, None], P], axis=1)
    W = sp.csr_array((np.full(n * (d + 1), 1.0 / (d + 1)),
                      (np.repeat(np.arange(n), d + 1), cols.ravel())), shape=(n, n))
    return Topology.from_matrix(W, name="morph", params={"round": t, "degree": d})


def rewire_(state: State, rnd: Round, env: Services, hp: MorphParams) -> Tensor:
    """Every client held here swaps one in-neighbour (:func:`morph_swap`) from its model's
    similarity with every client's (:func:`layer_similarity`); returns that ``[m, n]``
    similarity."""
    x, own = state.x, state.own_as(MorphState)
    ids = torch.as_tensor(env.clients.ids, device=x.device)
    sim = layer_similarity(x, env.clients.all_rows(x), env.layout)
    keys = generator_at(hp.graph_seed, rnd.t).random((env.n, 2))[run_ids(env)]
    new, added, removed = morph_swap(own.peers, sim, ids, hp.beta,
                                     torch.as_tensor(keys, device=x.device))
    own.peers.copy_(new)
    own.added.copy_(added)
    own.removed.copy_(removed)
    return sim


def communicate(state: State, rnd: Round, env: Services, *, hp: MorphParams) -> Sent:
    """After the local training: the swap on rewiring rounds, then the uniform average of each
    client's model and its in-neighbours' (through the mixer over the realized graph)."""
    own = state.own_as(MorphState)
    records: dict[str, Any] | None = None
    if rnd.t > 0 and rnd.t % hp.every == 0:
        sim = rewire_(state, rnd, env, hp)
        mean = sim.to(torch.float64).gather(1, own.peers).mean(dim=1)
        clients = env.clients
        records = {"morph_added": clients.all_rows(own.added).cpu().tolist(),
                   "morph_removed": clients.all_rows(own.removed).cpu().tolist(),
                   "morph_similarity": float(clients.all_rows(mean).mean())}
    realized = realized_graph(env.clients.all_rows(own.peers), rnd.t)
    env.mixer.mix_(realized, state.x)
    arcs = realized.to_dense() != 0
    np.fill_diagonal(arcs, False)
    if rnd.online is not None:  # an offline client receives nothing ("stale")
        arcs &= np.asarray(rnd.online, dtype=bool)[:, None]
    flow = Flow("model", arcs_of_mask(arcs), int(state.x.shape[1]), dtype_bits(state.x.dtype))
    return Sent.of(flow, realized=realized, records=records)


#: Morph's default groups: the code's configs (plain SGD at 0.05, 10 local steps when neither
#: ``local_steps`` nor ``local_epochs`` is given; in-degree 3, ``beta = 500``, a swap every 5
#: rounds)
_SGD, _REWIRING = LocalSGD(lr=0.05), Rewiring()

#: The local steps of a round when neither ``local_steps`` nor ``local_epochs`` is given
_DEFAULT_STEPS = 10


@register_algorithm("morph")
def morph(sgd: LocalSGD | float = _SGD, rewiring: Rewiring = _REWIRING,
          **keywords: Unpack[MorphKeywords]) -> Algorithm:
    r"""Morph: local SGD, uniform averaging with ``degree`` in-neighbours, and every ``every``
    rounds one in-neighbour swapped for a dissimilar model.

    What each round does, and the facts read from the authors' code: the module's docstring.

    Parameters
    ----------
    sgd : LocalSGD or float, default ``LocalSGD(lr=0.05)``
        The local SGD of a round (a number: its learning rate, ``morph(0.1)``); its fields are
        also taken flat: ``lr``, ``momentum``, ``weight_decay``, ``local_steps``,
        ``local_epochs``, ``decay`` below.
    rewiring : Rewiring, default ``Rewiring()``
        The graph and its swaps; its fields are also taken flat: ``degree``, ``beta``,
        ``every``, ``graph_seed`` below.
    lr : float, default 0.05
        Local learning rate (the code's configs: 0.05).
    momentum, weight_decay, local_steps, local_epochs, decay
        Local SGD as in :func:`~topofl.algorithms.dsgd`; default 10 local steps a round (the
        code's configs: ``rounds = 10``), plain SGD.
    degree : int, default 3
        In-degree ``d >= 2`` of every node (the code's experiments: 3 and 7); the first graph
        is a random ``d``-regular graph, so ``n * d`` must be even and ``d <= n - 1``.
    beta : float, default 500
        Inverse temperature of the softmaxes (the code's configs: 500); ``beta = 0`` swaps
        uniformly at random.
    every : int, default 5
        Rounds between swaps (the code's ``change_topology_iter``): rounds ``t > 0`` with
        ``t % every == 0``.
    graph_seed : int, default 0
        Seed of the first graph and of the swaps (round ``t``: the stream
        ``(graph_seed, t)``).

    Returns
    -------
    Algorithm
        Ignores the run's topology (``uses_topology=False``: the graph is its own); does not
        stack (a string says why); runs distributed; absent clients are ``"stale"``.

    Raises
    ------
    ValueError
        For ``degree < 2``, ``beta < 0``, ``every < 1`` or a bad local-SGD value; when the run
        starts, for ``degree > n - 1`` or ``n * degree`` odd.

    Examples
    --------
    Six clients with in-degree 2: every round sends 12 models (36 in three rounds); at round
    2 each client swaps one in-neighbour, and the in-degree stays 2.

    >>> data = tf.data.federate("digits", "pathological", 6, classes_per_client=2, seed=0)
    >>> res = tf.run("morph", data=data, model="logistic", rounds=3, degree=2, every=2,
    ...              local_steps=2, batch_size=8, spectral=False)
    >>> int(res.records.final("messages"))
    36
    >>> res.records.series("morph_similarity")[0].tolist()
    [2]
    >>> tuple(res.state.own.peers.shape)
    (6, 2)
    """
    kw = Keywords("morph", keywords)
    params = kw.take(sgd, _SGD).resolved(default_steps=_DEFAULT_STEPS)
    graph = kw.take(rewiring)
    kw.done()
    hp = MorphParams(params, graph.resolved())
    return Algorithm(
        name="morph",
        hparams=hp.as_dict(),
        phases=(Phase("all", params.local_steps, params.local_epochs, params.lr),),
        init=functools.partial(init_state, hp=hp),
        local=hp.sgd,
        communicate=functools.partial(communicate, hp=hp),
        requires=None,
        decay=params.decay,
        uses_topology=False,
        absent="stale",
        stacks=_STACKS,
    )
