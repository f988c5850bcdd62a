r"""Teleportation (Takezawa and Stich, ICLR 2025): ``k`` models teleport between random nodes.

Only ``k`` models exist, one per *slot* ``s = 0..k-1``. Round ``t`` draws ``k`` distinct nodes
$A_t = (a^t_0, \dots, a^t_{k-1})$ uniformly without replacement (the draw of
:func:`topofl.topologies.teleportation`, pure in ``(sample_seed, t)``). Slot ``s``'s model,
which was at node $a^{t-1}_s$, is *teleported* to node $a^t_s$, trained there with local SGD
on that node's data, then the ``k`` models gossip on a fixed graph over the slots (a ring
$s \sim s \pm 1$ with Metropolis weights, the complete graph, or a connected random
``d``-regular graph, ``d`` about $\log_2 k$, drawn once from ``sample_seed``). The other
``n - k`` nodes hold no model and do nothing. This is Algorithm 1 of [1]_; the sacs-epfl
``decentralized-learning-simulator`` (``dasklearn/simulation/teleportation``) runs the same
order: a node of the sample receives its slot's model, trains, gossips with the slots' graph
neighbours, and sends the aggregate to the node of the same slot in the next sample.

Which graph the paper's slots gossip on is not known here: its full text is not reachable
from this project. The simulator draws one ``random_regular_graph(log2 k, k)`` per run,
unseeded (it accepts only ``k`` a power of 2), which can be disconnected;
``graph="random_regular"`` is that graph seeded from ``sample_seed`` and connected
(:func:`topofl.topologies.teleportation_slot_graph`). The default, ``"ring"``, is the graph
the committed results use.

On the engine's ``n`` rows
--------------------------
Slot ``s``'s model lives in row $a^t_s$ of ``state.x`` while it is trained there. The local
steps move only the rows of $A_t$ (the learning rate of every other row is 0). The round's
communication is one linear map of the rows, applied with the services' mixer:

.. math:: (X)_{a^{t+1}_s} \leftarrow (G_t X)_{a^t_s} \quad (s = 0..k-1), \qquad
          X_i \leftarrow X_i \quad (i \notin A_{t+1}),

where $G_t$ is the round's gossip among the rows of $A_t$ (the mixing matrix of
``teleportation(n, k, seed=sample_seed, graph=graph).at(t)``): slot ``s``'s gossiped model is
fetched into row $a^{t+1}_s$, and every row that holds no model next round keeps what it
had (what an idle row holds is never used nor scored). After round ``t`` the ``k`` models
are the rows $A_{t+1}$, the models the next round trains, which is also what the simulator
tests (a model after its gossip).

A round works on ``k`` rows, not ``n``: the engine takes the gradients of the rows of $A_t$
only (``ActiveSGD.moving``), the communication writes only the ``k`` rows that receive a
model (:func:`teleport_rows`, ``Mixer.mix_rows_``) and the evaluation scores the global test
set with the ``k`` models only. Each gives the bits of the full-row form it replaces (the
same kernels on the same rows at the same addresses; ``tests/algorithms/test_teleport.py``).
What still costs ``n`` rows: every row's batch is drawn and its loss taken, since
``train_loss`` (below) is their mean. At ``n = 320`` on Fashion-MNIST a round took 0.47 of
its time before (``analysis/bench_teleport.md``).

What the records mean
---------------------
The evaluation scores the ``k`` models only (``Algorithm.scored``: the rows $A_{t+1}$):
``global_acc_mean`` is the mean over the ``k`` models of their accuracy on the global test set
(the paper's and the simulator's measure: each model's test accuracy, averaged),
``test_acc_mean`` the mean over the ``k`` models of their accuracy on the local test split of
the node that holds them, ``consensus_distance`` the mean squared distance of the ``k``
models to their mean. ``train_loss`` is the engine's mean over all ``n`` rows of the local
steps' losses, so it includes the idle rows' stale models: read the accuracies. The bytes
ledger counts what is sent: the gossip messages among the active nodes (``2k`` on a ring of
``k >= 3``, ``k(k-1)`` on the complete graph, ``k d`` on the ``d``-regular slot graph) and
the teleports (one model from $a^t_s$ to $a^{t+1}_s$ for every slot whose node changes).

References
----------
.. [1] Y. Takezawa, S. U. Stich, "Scalable decentralized learning with teleportation",
   ICLR 2025 (arXiv:2501.15259), Algorithm 1.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypedDict

import numpy as np
import scipy.sparse as sp
import torch
from torch import Tensor

from topofl._utils.rng import as_seed_sequence
from topofl._utils.validation import check_choice, check_int
from topofl.algorithms.base import register_algorithm
from topofl.algorithms.hparams import (
    Group,
    Keywords,
    LocalSGD,
    check_decay,
    check_lr,
    check_wd,
    check_work,
)
from topofl.engine.gossip import Mixer
from topofl.engine.ledger import Arcs, Flow, dtype_bits
from topofl.engine.pieces import SGD
from topofl.engine.protocol import (
    Algorithm,
    Communicate,
    LocalUpdate,
    Phase,
    Round,
    Sent,
    Services,
    State,
    run_ids,
)
from topofl.graph import Topology
from topofl.topologies.teleportation import active_round_matrix, draw_active, slot_pairs

if TYPE_CHECKING:  # Unpack is typing's from Python 3.11; only the type checker reads it
    from typing_extensions import Unpack

__all__ = ["teleport", "teleport_map", "teleport_rows", "slot_matrix", "SlotSGD",
           "SlotSGDKeywords"]

_GRAPHS = ("ring", "complete", "random_regular")


def teleport_map(n: int, active: np.ndarray, following: np.ndarray,
                 graph: str, pairs: np.ndarray | None = None) -> sp.csr_array:
    r"""The ``(n, n)`` row map $M$ of one Teleportation round: gossip, then fetch.

    $G$ mixes the rows ``active`` (slot ``s`` is row ``active[s]``) on the slots' ``graph``,
    as :func:`topofl.topologies.teleportation` does; row ``following[s]`` of $M$ is row
    ``active[s]`` of $G$ (slot ``s``'s gossiped model moves to its next node), and every row
    not in ``following`` is $e_i$ (it keeps itself).

    Parameters
    ----------
    n : int
        Number of rows (nodes).
    active, following : ndarray of int, shape (k,)
        This round's and the next round's active nodes, in slot order.
    graph : {"ring", "complete", "random_regular"}
    pairs : ndarray of int, shape (2, m), optional
        The slot graph's edges ``s < r`` (:func:`topofl.topologies.teleportation_slot_graph`),
        needed for ``"random_regular"``.

    Returns
    -------
    scipy.sparse.csr_array
        Row-stochastic, float64, canonical (sorted indices, no duplicates).

    Examples
    --------
    Three slots on 5 nodes: slot ``s`` moves from ``(0, 1, 2)[s]`` to ``(4, 0, 3)[s]``, the
    three models are averaged on the way (a ring of 3 is complete); rows 1 and 2 keep
    themselves.

    >>> import numpy as np
    >>> from topofl.algorithms.teleport import teleport_map
    >>> M = teleport_map(5, np.array([0, 1, 2]), np.array([4, 0, 3]), "ring").toarray()
    >>> (M * 3).round(6).tolist()
    [[1.0, 1.0, 1.0, 0.0, 0.0], [0.0, 3.0, 0.0, 0.0, 0.0], [0.0, 0.0, 3.0, 0.0, 0.0], [1.0, 1.0, 1.0, 0.0, 0.0], [1.0, 1.0, 1.0, 0.0, 0.0]]
    """  # noqa: E501
    active, following = np.asarray(active), np.asarray(following)
    G = sp.csr_array(active_round_matrix(n, active, graph, pairs)[active])  # slot s: row s
    eye = sp.eye_array(n, format="csr")
    keep = np.setdiff1d(np.arange(n), following)
    rows = np.empty(n, dtype=np.int64)  # stacked [G[active]; eye[keep]] -> output order
    rows[following] = np.arange(active.size)
    rows[keep] = active.size + np.arange(keep.size)
    M = sp.csr_array(sp.vstack([G, eye[keep]], format="csr")[rows])
    M.sum_duplicates()
    M.sort_indices()
    return M


@functools.lru_cache(maxsize=64)
def _slot_matrix(k: int, graph: str, edges: tuple[tuple[int, int], ...]) -> sp.csr_array:
    pairs = np.array(edges, dtype=np.int64).reshape(-1, 2).T if edges else None
    return active_round_matrix(k, np.arange(k), graph, pairs)


def slot_matrix(k: int, graph: str, pairs: np.ndarray | None = None) -> sp.csr_array:
    """The ``(k, k)`` gossip among the slots: row ``s`` is what slot ``s``'s model becomes
    from the ``k`` models (row ``a_s`` of the round's matrix restricted to the active nodes,
    in slot order); ``pairs`` as :func:`teleport_map`'s. Canonical CSR, float64, cached
    (do not modify it).

    Examples
    --------
    >>> from topofl.algorithms.teleport import slot_matrix
    >>> (slot_matrix(4, "ring").toarray() * 3).round(6).tolist()[0]
    [1.0, 1.0, 0.0, 1.0]
    """
    edges = () if pairs is None else tuple(zip(*(np.asarray(pairs).tolist())))
    return _slot_matrix(int(k), graph, edges)


def teleport_rows(n: int, active: np.ndarray, graph: str,
                  pairs: np.ndarray | None = None) -> sp.csr_array:
    r"""The rows that move in one Teleportation round, ``(k, n)``: row ``s`` is what slot
    ``s``'s model becomes, row ``active[s]`` of the round's gossip $G$ (the rows
    ``following`` of :func:`teleport_map`, whose other rows are $e_i$): ``O(k)``, where the
    map is ``O(n)``.

    Examples
    --------
    >>> import numpy as np
    >>> from topofl.algorithms.teleport import teleport_rows, teleport_map
    >>> a, f = np.array([5, 0, 2, 3]), np.array([1, 5, 0, 4])
    >>> R = teleport_rows(6, a, "ring")
    >>> bool((R.toarray() == teleport_map(6, a, f, "ring").toarray()[f]).all())
    True
    """
    active = np.asarray(active, dtype=np.int64)
    S = slot_matrix(active.size, graph, pairs)  # canonical: no duplicate within a row
    cols = active[S.indices]
    order = np.lexsort((cols, np.repeat(np.arange(active.size), np.diff(S.indptr))))
    return sp.csr_array((S.data[order], cols[order], S.indptr.copy()), shape=(active.size, n))


def _gossip_arcs(n: int, active: np.ndarray, graph: str,
                 edges: np.ndarray | None = None) -> Arcs:
    """The gossip messages among the active nodes: ``a_r -> a_s`` for neighbouring slots
    (``edges``: the random regular slot graph's, :func:`teleport_map`'s ``pairs``)."""
    k = active.size
    if graph == "random_regular" and k > 3:
        if edges is None:
            raise ValueError("graph='random_regular' needs the slot graph's edges (pairs)")
        u, v = edges
        return Arcs.from_pairs(n, active[np.concatenate([u, v])],
                               active[np.concatenate([v, u])])
    if graph != "ring" or k <= 3:
        s, r = np.meshgrid(np.arange(k), np.arange(k), indexing="ij")
        off = s != r
        pairs = (s[off], r[off])
    else:
        slots = np.arange(k)
        pairs = (np.concatenate([slots, slots]),
                 np.concatenate([(slots + 1) % k, (slots - 1) % k]))
    return Arcs.from_pairs(n, active[pairs[0]], active[pairs[1]])


@dataclass(frozen=True)
class Slots:
    """The active nodes of each round: ``draw(t)`` is $A_t$, pure in ``(seed, t)``."""

    k: int
    seed: int
    _root: np.random.SeedSequence = field(init=False, repr=False, compare=False)

    _drawn: dict[tuple[int, int], np.ndarray] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_root", as_seed_sequence(self.seed))
        object.__setattr__(self, "_drawn", {})

    def draw(self, n: int, t: int) -> np.ndarray:
        """``(k,)`` int64: the nodes of slots ``0..k-1`` at round ``t`` (the last few
        rounds' draws are kept: a round reads its own and the next one's several times)."""
        if self.k > n:
            raise ValueError(f"teleport: k must be in [1, n]=[1, {n}] (the run's clients), "
                             f"got k={self.k}")
        key = (n, t)
        out = self._drawn.get(key)
        if out is None:
            out = draw_active(self._root, n, self.k, t).astype(np.int64)
            out.flags.writeable = False
            if len(self._drawn) >= 4:
                self._drawn.pop(next(iter(self._drawn)))
            self._drawn[key] = out
        return out

    def mask(self, n: int, t: int) -> np.ndarray:
        """``(n,)`` bool: the nodes active at round ``t``."""
        out = np.zeros(n, dtype=bool)
        out[self.draw(n, t)] = True
        return out


@dataclass(frozen=True)
class ActiveSGD(LocalUpdate):
    """Local SGD on the round's active rows only (the learning rate of the others is 0)."""

    sgd: SGD
    slots: Slots

    def update(self, state: State, grads: Tensor, phase: Phase, lr: Tensor, rnd: Round,
               env: Services) -> None:
        """One SGD step of the rows of $A_t$."""
        on = self.slots.mask(env.n, rnd.t)[run_ids(env)]
        self.sgd.update(state, grads, phase, lr * torch.as_tensor(on, dtype=lr.dtype,
                                                                  device=lr.device), rnd, env)

    def moving(self, rnd: Round, env: Services) -> np.ndarray:
        """The rows of $A_t$ (sorted): the engine takes their gradients only."""
        return np.flatnonzero(self.slots.mask(env.n, rnd.t)[run_ids(env)])

    def update_rows(self, state: State, grads: Tensor, rows: Tensor, phase: Phase, lr: Tensor,
                    rnd: Round, env: Services) -> None:
        """:meth:`update` on the rows ``rows`` (of $A_t$) alone, their gradients the rows
        ``rows`` of ``grads``: the same element-wise step on a copy of those rows, written
        back."""
        part = State(x=state.x.index_select(0, rows))
        self.sgd.update(part, grads.index_select(0, rows), phase, lr.index_select(0, rows),
                        rnd, env)
        state.x.index_copy_(0, rows, part.x)


@dataclass(frozen=True)
class Teleport(Communicate):
    """Gossip among the active rows, then teleport every slot to its next node."""

    slots: Slots
    graph: str
    #: the slot graph's edges for ``"random_regular"`` (``(s, r)`` pairs, ``s < r``), else ()
    edges: tuple[tuple[int, int], ...] = ()

    def _pairs(self) -> np.ndarray | None:
        if self.graph != "random_regular":
            return None
        return np.array(self.edges, dtype=np.int64).reshape(-1, 2).T

    def __call__(self, state: State, rnd: Round, env: Services) -> Sent:
        """``X <- F_t G_t X`` (:func:`teleport_map`); what was sent."""
        n, t = env.n, rnd.t
        active, following = self.slots.draw(n, t), self.slots.draw(n, t + 1)
        pairs = self._pairs()
        k = active.size
        mixer = env.mixer
        if (type(mixer) is Mixer and k < n
                and not mixer.takes_dense(n, n - k + slot_matrix(k, self.graph, pairs).nnz)):
            # only the k rows that receive a model change: O(k) rows, the CSR kernel's bits
            mixer.mix_rows_(teleport_rows(n, active, self.graph, pairs), following,
                            state.x)
        else:
            M = Topology.from_matrix(teleport_map(n, active, following, self.graph, pairs),
                                     name="teleport", params={"round": t})
            mixer.mix_(M, state.x)
        size, bits = env.layout.num_params, dtype_bits(state.x.dtype)
        moved = active != following
        flows = (Flow("model", _gossip_arcs(n, active, self.graph, pairs), size, bits,
                      stage=0),
                 Flow("model", Arcs.from_pairs(n, active[moved], following[moved]), size,
                      bits, stage=1))
        return Sent.of(*flows, active=self.slots.mask(n, t))


@dataclass(frozen=True)
class SlotSGD(Group):
    """The local SGD of an active node (documented at :func:`teleport`):
    :class:`~topofl.algorithms.hparams.LocalSGD` without ``momentum``, which would have to
    teleport with its model.

    Attributes
    ----------
    lr : float, default 0.1
    weight_decay : float, default 0
    local_steps, local_epochs
        Steps or local epochs a round, not both (neither: one step).
    decay : float, default 1

    Examples
    --------
    >>> from topofl.algorithms.teleport import SlotSGD
    >>> SlotSGD(lr=0.5, local_steps=2).with_keywords(decay=0.99).decay
    0.99
    >>> SlotSGD(weight_decay=-1)
    Traceback (most recent call last):
    ...
    ValueError: weight_decay must be in [0, inf], got -1
    """

    lr: float = 0.1
    weight_decay: float = 0.0
    local_steps: int | None = None
    local_epochs: float | None = None
    decay: float = 1.0

    def __post_init__(self) -> None:
        check_work(self.local_steps, self.local_epochs)  # the work first, as teleport always did
        check_lr(self.lr)
        check_wd(self.weight_decay)
        check_decay(self.decay)


class SlotSGDKeywords(TypedDict, total=False):
    """:class:`SlotSGD`'s fields as flat keywords: teleport's (documented at :func:`teleport`)."""

    lr: float
    weight_decay: float
    local_steps: int | None
    local_epochs: float | None
    decay: float


#: Teleportation's default local SGD: one step a round, no momentum
_SGD = SlotSGD()


def _init(x0: Tensor, env: Services, *, slots: Slots) -> State:
    slots.draw(env.n, 0)  # k <= n
    return State(x=x0.clone())


@register_algorithm("teleport")
def teleport(sgd: SlotSGD | float = _SGD, *, k: int = 8, graph: str = "ring",
             sample_seed: int = 0, **keywords: Unpack[SlotSGDKeywords]) -> Algorithm:
    r"""Teleportation: ``k`` models teleport to ``k`` random nodes, train there and gossip.

    See the module docstring for the algorithm, how it lives on the engine's rows and what
    the records mean (the ``k`` models only). Every node starts from the same model, so the
    ``k`` models start equal.

    Parameters
    ----------
    sgd : SlotSGD or float, default ``SlotSGD()``
        The local SGD of an active node (a number: its learning rate, ``teleport(0.2)``); its
        fields are also taken flat: ``lr``, ``weight_decay``, ``local_steps``,
        ``local_epochs``, ``decay`` below.
    lr : float, default 0.1
        Learning rate (``lr * decay**t`` at round ``t``).
    k : int, default 8
        Number of models (active nodes per round), ``1 <= k <= n``; ``k > n`` raises when the
        run starts.
    graph : {"ring", "complete", "random_regular"}, default "ring"
        The graph over the slots: a ring with Metropolis weights (``1/3``; ``1/2`` for a
        pair), the complete graph (exact average), or a connected random ``d``-regular graph
        with weights ``1/(d + 1)``, ``d = topofl.topologies.teleportation_slot_degree(k)``
        (about ``log2 k``), drawn once from ``sample_seed``
        (:func:`topofl.topologies.teleportation_slot_graph`; the sacs-epfl simulator's
        graph, seeded and connected). The paper's own choice is not known here (its full
        text is not reachable from this project); the default stays the ring, which the
        committed results use.
    sample_seed : int, default 0
        Keyword-only: round ``t``'s active nodes are
        ``topofl.topologies.teleportation_active(n, k, t, seed=sample_seed)``, the nodes of
        ``teleportation(n, k, seed=sample_seed).at(t)``. A hyper-parameter of the algorithm,
        as the server baselines' ``sample_seed`` (the run's ``seed`` is the data's split,
        batches and initialisation; it does not change the draws).
    weight_decay : float, default 0
    local_steps, local_epochs
        Local work of an active node per round: a number of steps (default 1), or local
        epochs of its data.
    decay : float, default 1

    Returns
    -------
    Algorithm
        It uses no run topology (its graph is over the slots): run it with ``topology=None``.

    Raises
    ------
    ValueError
        ``k < 1``, an unknown ``graph``, a negative ``sample_seed``; ``k > n`` when the run
        starts.

    Notes
    -----
    With ``k = n`` and ``graph="complete"`` every round ends with every row at the average
    of the trained models, and every node trains it on its own data: the records equal
    D-SGD's on ``complete(n)`` (the tests check it). Momentum is not offered: a slot's
    momentum would have to teleport with its model.

    Examples
    --------
    Four models on 8 nodes, where node ``i`` minimises ``(x - i)^2 / 2``: the models approach
    the global optimum, the mean of ``0..7`` = 3.5, and exactly 4 rows move each round.

    >>> import torch
    >>> c = torch.arange(8.0, dtype=torch.float64).unsqueeze(1)
    >>> algo = tf.algorithms.teleport(k=4, graph="complete", sample_seed=0)
    >>> trace = tf.engine.run_rounds(algo, torch.zeros_like(c), None,
    ...     lambda z, phase, rnd: z - c, rounds=400, lr=lambda rnd, phase: 0.2 * 0.99**rnd.t)
    >>> rows = tf.topologies.teleportation_active(8, 4, 400, seed=0)
    >>> [round(v, 2) for v in trace.evaluated()[rows].flatten().tolist()]
    [3.5, 3.5, 3.5, 3.5]
    """
    kw = Keywords("teleport", keywords)
    local = kw.take(sgd, _SGD)
    kw.done()
    hp = LocalSGD(local.lr, 0.0, local.weight_decay, local.local_steps, local.local_epochs,
                  local.decay).resolved()
    k = check_int(k, "k", low=1)
    check_choice(graph, "graph", _GRAPHS)
    sample_seed = check_int(sample_seed, "sample_seed", low=0)
    slots = Slots(k, sample_seed)
    opt = SGD(0.0, hp.weight_decay)
    edges: tuple[tuple[int, int], ...] = ()
    if graph == "random_regular":
        s, r = slot_pairs(as_seed_sequence(sample_seed), k)
        edges = tuple(zip(s.tolist(), r.tolist()))

    def init(x0: Tensor, env: Services) -> State:
        return _init(x0, env, slots=slots)

    def scored(rnd: Round, env: Services) -> np.ndarray:
        return slots.mask(env.n, rnd.t + 1)  # the k models, after the round's teleport

    hparams: dict[str, Any] = dict(lr=hp.lr, weight_decay=hp.weight_decay, decay=hp.decay,
                                   local_steps=hp.local_steps, local_epochs=hp.local_epochs, k=k,
                                   graph=graph, sample_seed=sample_seed)
    return Algorithm(
        name="teleport",
        hparams=hparams,
        phases=(Phase("all", hp.local_steps, hp.local_epochs, hp.lr),),
        init=init,
        local=ActiveSGD(opt, slots),
        communicate=Teleport(slots, graph, edges),
        requires=None,
        decay=hp.decay,
        uses_topology=False,
        absent="refuse",  # it draws the round's active nodes itself
        scored=scored,
    )
