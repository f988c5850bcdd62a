r"""PFedDST: personalized federated learning with decentralized selection training.

Every round, each client ``i`` scores every candidate peer ``j`` by (eq. 9)

$$S_{ij} = s_p^{ij}\,\bigl(\alpha\, s_l^{ij} - s_d^{ij} + c_{ij}\bigr),$$

pulls the bodies (feature extraction layers) of its top-scored peers, averages them with its own
body, trains the body with its head frozen, then its head with the body frozen (Section II-A,
Algorithm 1). The head (the personal classifier) never leaves its client. In detail, each round
``t`` (counted from 1 in the paper, ``t + 1`` for the engine's round ``t``), every client ``i``

1. scores its candidate peers, $S_{ij}$ below (see :func:`pfeddst_scores`), and selects the
   ``peers`` best ones, $\mathcal{M}_i$ (line 7);
2. replaces its body by the simple average of its own and its selected peers' bodies,
   $e_i \leftarrow (e_i + \sum_{j \in \mathcal{M}_i} e_j) / (|\mathcal{M}_i| + 1)$
   (line 8; the head $h_i$ is untouched);
3. refreshes its loss array: ``losses[i, j]`` for ``j`` in $\mathcal{M}_i$ becomes the loss of
   its aggregated model on a mini-batch of ``j``'s data (line 9);
4. trains the body with the head frozen (``local_epochs``, eq. 3), then the head with the body
   frozen (``head_epochs``, eq. 4) (lines 10-18);
5. records ``last[i, j] = t`` for the selected peers (line 19).

The terms of the score:

- $s_l^{ij}$, the *loss score* (eq. 6): the loss of client ``i``'s model on peer ``j``'s data,
  read from a per-client loss array that is refreshed for the peers actually selected.
- $s_d^{ij} = 1 - \cos(h_i, h_j)$, the *header distance*, built from the cosine similarity of the
  two heads (eq. 7).
- $s_p^{ij} = 1 - e^{-\lambda (t - t_{0,ij})}$, the *peer recency* (eq. 8), with $t_{0,ij}$ the
  last round in which ``i`` selected ``j``.
- $c_{ij}$, the communication-cost score (a constant when every link costs the same).

The steps of Algorithm 1 are the module's functions: :func:`select_peers` (lines 2, 6-7:
the loss array, the scores, the selection), :func:`aggregate_bodies_` (line 8) and
:func:`refresh_losses_` (line 9), composed by :func:`round_start`. They work on the rows
of the clients this process holds (``env.clients``): in a distributed run (``torchrun``)
each rank scores its own clients (the ``[m, n]`` rows of the loss and recency arrays) with
every client's head (gathered), evaluates them on their peers' batches fetched from the
ranks holding those peers (``env.cross_losses``), and pulls the bodies through the mixer
over the gathered selection graph; the records equal the single-process run's.

Notes
-----
Choices where the paper is silent or ambiguous:

- **Header distance.** $s_d = 1 - \cos(h_i, h_j)$ over the whole flattened head (weights and
  biases): eq. (7) writes the cosine similarity but eq. (9) and its discussion need a
  distance (the score must grow with task similarity).
- **Loss array.** It is initialised (Algorithm 1, line 2) by evaluating every client's
  initial model on a mini-batch of every other client, then refreshed each round only for
  the selected peers, with the aggregated model (line 9: "the loss information calculated
  from aggregated parameters with each peer"). Each evaluation uses one training mini-batch
  of the peer (``env.cross_losses``).
- **Recency.** ``last`` starts at 0 (never selected) and rounds count from 1, so a peer never
  selected has $s_p = 1 - e^{-\lambda t}$; ``last`` is updated with the peers *selected by*
  the client (Section II-C, "the iteration numbers that each peer was last selected by the
  local client").
- **Selection.** Algorithm 1 thresholds the scores ($S_{ij} > s^*$); Section III-A selects
  10 peers, so the threshold is the ``peers``-th best score. Ties go to the lower index.
- **Default alpha = 0.1.** The loss score is a cross-entropy (about 0.1 to 10: large on a
  peer whose classes the client's head never predicts) while $s_d \in [0, 2]$; with
  $\alpha = 1$ the loss term dominates and selection turns to the *least* similar peers.
  Measured on digits, 20 clients, pathological(2), 4 peers, 12 rounds: the share of
  selected peers having a class in common with the client was 0.05-0.36 (falling over the
  rounds) with $\alpha = 1$, 0.34-0.49 with $\alpha = 0.1$, 0.39-0.76 with $\alpha = 0$,
  and 0.21-0.38 with random selection. $\alpha = 0.1$ gives the two terms comparable
  ranges, in line with Section II-B's aim of learning "particularly [from] those
  undertaking similar tasks" while still preferring peers with larger losses.
- **Default c = 2.** It keeps $\alpha s_l - s_d + c \ge 0$ (since $s_d \le 2$), so the score
  always grows with the recency score, as Section II-B requires.
- **Place in the engine's round.** Selection, aggregation and the loss refresh run in
  ``round_start``, because Algorithm 1 aggregates *before* local training (lines 6-9);
  ``communicate`` then reports the round's graph and messages. The model evaluated after a
  round is therefore the trained one, as in the paper.
- **Momentum** restarts each round (a fresh local optimizer; "local momentum"), and the
  random-selection variant skips the loss evaluations it does not use.
- **Messages**, all before the round's local training (:func:`round_flows`): the bodies
  pulled ($\sum_i |\mathcal{M}_i|$, kind ``"body"``); with score selection also every
  candidate's head (kind ``"head"``: ``n - 1`` per client, or its neighbours), for each
  selected peer the client's aggregated model sent to the peer (kind ``"probe"``) and the
  loss sent back (kind ``"loss"``), and in the first round every model to every other
  client with a loss back (the initial loss array). Random selection sends only bodies.
- **Absent clients** (rule ``"stale"``): an offline client's state does not change in the
  round; the others may still select it and read its last body; nothing is sent to it.

Cost per round: the scores are $O(n^2 h)$ ($h$ = head size), the loss refresh is ``peers``
forward passes of all clients on one mini-batch (``n - 1`` in the first round), the
aggregation one sparse product with the realized graph.

References
----------
.. [1] M. Fan, K. Li, T. Zhang, Q. Tian, B. Geng, "PFedDST: Personalized Federated Learning with
   Decentralized Selection Training" (Section II-A partial freezing, eqs. 3-4; Section II-B peer
   scores, eqs. 6-9; Section II-C, Algorithm 1; Section III-A experimental settings).
.. [2] Y. J. Cho, J. Wang, G. Joshi, "Client selection in federated learning: convergence analysis
   and power-of-choice selection strategies", arXiv:2010.01243 (why larger losses are preferred).

Records
-------
Every round (when the data's label counts are known): ``pfeddst_peers`` (``[n][k]``, the
selected peers, best first; ``-1`` where fewer could be chosen),
``pfeddst_shared_class`` (over all valid selections, the fraction of selected peers that
hold at least one training class of the client) and ``pfeddst_shared_class_clients``
(that fraction per client). With ``peer_accuracy``: ``pfeddst_peer_acc`` (``[n][k]``,
aligned with ``pfeddst_peers``, NaN where invalid), ``pfeddst_peer_acc_mean``,
``pfeddst_own_acc`` (``[n]``) and ``pfeddst_own_acc_mean``; all measured on the models
as they are when selected (before the aggregation of line 8).
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
from topofl.algorithms._pfeddst_selection import (
    PeerSelection,
    PeerSelectionKeywords,
    pfeddst_scores,
    pfeddst_select,
    resolve_peers,
)
from topofl.algorithms.base import register_algorithm
from topofl.algorithms.hparams import (
    Group,
    Keywords,
    check_decay,
    check_lr,
    check_momentum,
    check_wd,
    check_work,
)
from topofl.engine.ledger import Arcs, Flow, arcs_of_mask, dtype_bits, graph_arcs
from topofl.engine.pieces import SGD, restart_momentum
from topofl.engine.protocol import Algorithm, Phase, Round, Sent, Services, State
from topofl.graph import Topology

if TYPE_CHECKING:  # Unpack is typing's from Python 3.11; only the type checker reads it
    from typing_extensions import Unpack

__all__ = ["pfeddst", "PFedDSTKeywords", "PFedDSTTraining", "PeerSelection", "pfeddst_scores",
           "pfeddst_select", "PFedDSTParams", "PFedDSTState", "select_peers",
           "aggregate_bodies_", "refresh_losses_"]


# --------------------------------------------------------------------------- helpers


def _realized(selected: Tensor, params: dict[str, Any] | None = None) -> Topology:
    """The round's graph: ``W[i, j] = 1 / (|M_i| + 1)`` for ``j`` in ``M_i`` and for ``j = i``.

    ``W[i, j] > 0`` iff client ``i`` pulled client ``j``'s body (arc ``j -> i``); ``W`` is
    row-stochastic (the simple average of Algorithm 1, line 8), built in float64 on the CPU.
    """
    A = selected.detach().to("cpu", torch.float64).numpy()
    W = A + np.eye(A.shape[0])
    W /= W.sum(axis=1, keepdims=True)
    return Topology.from_matrix(W, name="pfeddst", params=params)


def _others(n: int, device: torch.device, rows: Tensor | None = None) -> Tensor:
    """``[n, n-1]``: row ``i`` lists every client but ``i`` (only the clients ``rows``, when
    given: ``[m, n-1]``)."""
    a = torch.arange(n - 1, device=device).unsqueeze(0)
    ids = torch.arange(n, device=device) if rows is None else rows.to(device)
    return a + (a >= ids.unsqueeze(1)).long()


# --------------------------------------------------------------------------- the algorithm


@dataclass(frozen=True)
class PFedDSTTraining(Group):
    """PFedDST's local training with partial freezing: the body with the head frozen, then
    the head with the body frozen (eqs. 3-4; the fields are documented at :func:`pfeddst`,
    the defaults are Section III-A's).

    Examples
    --------
    >>> from topofl.algorithms.pfeddst import PFedDSTTraining
    >>> PFedDSTTraining(lr=0.2, head_steps=3).checked()["head_work"]
    (3, None)
    >>> PFedDSTTraining(head_epochs=0)
    Traceback (most recent call last):
    ...
    ValueError: head_epochs must be in (0, inf], got 0
    """

    lr: float = 0.1
    head_lr: float | None = None
    momentum: float = 0.9
    weight_decay: float = 5e-3
    local_steps: int | None = None
    local_epochs: float | Sequence[float] | None = None
    head_steps: int | None = None
    head_epochs: float | Sequence[float] | None = None
    decay: float = 1.0

    def __post_init__(self) -> None:
        self.checked()

    def checked(self) -> dict[str, Any]:
        """The checked fields, as :class:`PFedDSTParams` takes them (``head_lr`` resolved,
        the work of the two phases as ``(steps, epochs)``)."""
        lr = check_lr(self.lr)
        return dict(
            lr=lr, head_lr=lr if self.head_lr is None else check_lr(self.head_lr, "head_lr"),
            momentum=check_momentum(self.momentum), weight_decay=check_wd(self.weight_decay),
            decay=check_decay(self.decay),
            body_work=check_work(self.local_steps, self.local_epochs, default_steps=None,
                                 default_epochs=5.0),
            head_work=check_work(self.head_steps, self.head_epochs, steps_name="head_steps",
                                 epochs_name="head_epochs", default_steps=None,
                                 default_epochs=1.0))


class PFedDSTTrainingKeywords(TypedDict, total=False):
    """:class:`PFedDSTTraining`'s fields as flat keywords."""

    lr: float
    head_lr: float | None
    momentum: float
    weight_decay: float
    local_steps: int | None
    local_epochs: float | Sequence[float] | None
    head_steps: int | None
    head_epochs: float | Sequence[float] | None
    decay: float


class PFedDSTKeywords(PFedDSTTrainingKeywords, PeerSelectionKeywords, total=False):
    """PFedDST's flat keywords: the fields of its groups (documented at :func:`pfeddst`)."""


#: PFedDST's default groups: Section III-A's training, selection by score
_TRAINING, _BY_SCORE = PFedDSTTraining(), PeerSelection()


@register_algorithm("pfeddst")
def pfeddst(training: PFedDSTTraining | float = _TRAINING,
            peer_selection: PeerSelection = _BY_SCORE,
            **keywords: Unpack[PFedDSTKeywords]) -> Algorithm:
    r"""PFedDST (Fan et al., Algorithm 1): score-based peer selection and partial freezing.

    The round, the records and the readings of the paper: the module's docstring. The
    communicated graph (``j -> i`` when ``i`` pulls ``j``'s body) is what ``communicate``
    returns as realized, so the engine records its edges, density and reciprocity.

    Parameters
    ----------
    training : PFedDSTTraining or float, optional
        The local training, body then head (:class:`PFedDSTTraining`: the flat keywords
        ``lr`` to ``head_epochs`` and ``decay`` below, with their defaults); a number is
        ``lr`` (``pfeddst(0.05)``).
    peer_selection : PeerSelection, optional
        The peers' scores and selection
        (:class:`~topofl.algorithms._pfeddst_selection.PeerSelection`: the flat keywords
        ``peers`` to ``selection_seed`` and ``peer_accuracy`` below, with their defaults).
    **keywords
        The groups' fields as flat keywords (each replaces the field of its group):
    lr : float, default 0.1
        Learning rate $\eta_e$ of the body (Section III-A: 0.1).
    head_lr : float, optional
        Learning rate $\eta_h$ of the head (default: ``lr``).
    momentum : float, default 0.9
        Local heavy-ball momentum (Section III-A), restarted every round.
    weight_decay : float, default 5e-3
        The "decay rate of 0.005" of Section III-A (the same wording as DFedPGP Section 5.1,
        where the learning-rate decay is given separately).
    local_steps, local_epochs
        Local work on the body: ``K_e`` steps, or epochs (default 5 epochs, Section III-A: the
        body trains "for 5 epochs per round, matching the training duration of other
        baselines"). One value per client gives computation heterogeneity.
    head_steps, head_epochs
        Local work on the head: ``K_h`` steps, or epochs (default 1 epoch, Section III-A).
    peers : int, optional
        Number of peers selected per round (default ``min(10, n - 1)``; the paper selects 10).
        More than ``n - 1`` is an error.
    alpha : float, default 0.1
        Weight $\alpha \ge 0$ of the loss score (eq. 9; the paper gives no value, see Notes).
        ``alpha=0`` selects on header distance and recency only (the paper's Figure 2).
    lam : float, default 1
        Rate $\lambda > 0$ of the recency score (eq. 8; the paper gives no value).
    c : float or array of shape (n, n), default 2
        Communication-cost score $c$ (eq. 9): a constant when all links cost the same (the
        paper's setting), or one value per pair ``c[i, j]``.
    selection : {"score", "random"}, default "score"
        ``"random"`` picks the same number of peers uniformly at random among the candidates
        (the random-selection baseline of the paper's Figure 2); everything else is unchanged.
    candidates : {"all", "neighbors"}, default "all"
        Which clients ``i`` may select: all others (the paper's experiments; the algorithm then
        ignores any topology), or only its in-neighbours in the round's topology (the
        "available clients" $\mathcal{N}_i$ of eq. 5). A client with fewer candidates than
        ``peers`` selects all of them.
    selection_seed : int, default 0
        Seed of the random selection (round ``t`` uses the stream ``(selection_seed, t)``).
    decay : float, default 1
        Learning-rate factor per round (the paper decays none).
    peer_accuracy : {None, "val", "test"}, default None
        Record the selection quality of the paper's Figure 2: in every round, the accuracy of
        each selected peer's model (its body and head, as selected) on the client's own
        ``"val"`` (the paper's "validation result ... in the local data") or ``"test"``
        split, beside the client's own model on the same data. Costs ``peers + 1`` passes
        over that split per round; ``None`` records only the cheap class-sharing rate.

    Returns
    -------
    Algorithm
        Its runs do not stack: ``Algorithm.stacks`` says why (the selection crosses the runs
        of a stacked pass), and a sweep runs them one by one.

    Raises
    ------
    ValueError
        For ``alpha < 0``, ``lam <= 0``, a non-positive learning rate, a bad choice string, and
        (when the run starts) ``peers > n - 1``, a ``c`` matrix of the wrong shape, or a model
        without a body/head split.

    Examples
    --------
    Four clients select one peer each per round; the realized graph has 4 of the 12 possible
    arcs, and each round sends 4 bodies. The scores cost more: every head to each of the 3
    others (12), a probe and a loss per selected peer (8), and in the first round a probe and
    a loss for every pair (24): 48 + 24 messages in the two rounds.

    >>> data = tf.data.federate("digits", "pathological", 4, classes_per_client=3, seed=0)
    >>> model = tf.models.build_model("mlp", data.input_shape, data.num_classes, seed=0,
    ...                               hidden=(8,))
    >>> res = tf.run("pfeddst", data=data, model=model, rounds=2, peers=1, local_steps=2,
    ...              head_steps=1, batch_size=8, spectral=False)
    >>> res.records.series("realized_density")[1].tolist()
    [0.3333333333333333, 0.3333333333333333]
    >>> int(res.records.final("messages.body")), int(res.records.final("messages"))
    (8, 72)
    """
    kw = Keywords("pfeddst", keywords)
    local, selection = kw.take(training, _TRAINING), kw.take(peer_selection)
    kw.done()
    hp = PFedDSTParams(**local.checked(), **selection.checked())
    return _algorithm(hp)


def _algorithm(hp: PFedDSTParams) -> Algorithm:
    """PFedDST's :class:`~topofl.engine.protocol.Algorithm` for checked hyper-parameters: the
    body phase then the head phase, with Algorithm 1's steps bound to ``hp``."""
    (b_steps, b_epochs), (h_steps, h_epochs) = hp.body_work, hp.head_work
    return Algorithm(
        name="pfeddst",
        hparams=hp.as_dict(),
        phases=(
            Phase("body", b_steps, b_epochs, hp.lr, name="body"),
            Phase("head", h_steps, h_epochs, hp.head_lr, name="head"),
        ),
        init=functools.partial(init_state, hp=hp),
        local=hp.sgd,
        communicate=functools.partial(communicate, hp=hp),
        round_start=functools.partial(round_start, hp=hp),
        requires=None,
        shared="body",
        decay=hp.decay,
        uses_topology=hp.candidates == "neighbors",
        absent="stale",
        stacks=_stacks_reason(hp),
    )


def _stacks_reason(hp: PFedDSTParams) -> str:
    """Why PFedDST's runs cannot stack (:mod:`topofl.engine.stack`): the selection crosses
    the runs whose clients a stacked pass holds as the rows of one state."""
    if hp.selection == "random":
        return ("pfeddst(selection='random') draws each client's peers from an [n, n] array "
                "of keys over all the clients of the pass (a stack's rows, not its run's), so "
                "a run would pull bodies from other runs' clients")
    return ("pfeddst scores each client's candidate peers by the loss of its model on a batch "
            "of each peer's data (env.cross_losses, data drawn outside the local phases, which "
            "a stack does not serve) and by the cosine distance of their heads, and selects "
            "among all the clients of the pass (a stack's rows, not its run's), so a run would "
            "pull bodies from other runs' clients")


@dataclass(frozen=True)
class PFedDSTParams:
    """PFedDST's checked hyper-parameters: what :func:`pfeddst` validated and its steps read.

    ``body_work`` and ``head_work`` are the ``(steps, epochs)`` of the two local phases,
    ``cost`` the communication-cost score (a float or an ``[n, n]`` list of lists).
    """

    lr: float
    head_lr: float
    momentum: float
    weight_decay: float
    decay: float
    body_work: tuple[int | None, Any]
    head_work: tuple[int | None, Any]
    peers: int | None
    alpha: float
    lam: float
    cost: float | list[list[float]]
    selection: str
    candidates: str
    selection_seed: int
    peer_accuracy: str | None

    @property
    def sgd(self) -> SGD:
        """The local optimizer: heavy-ball SGD with weight decay (Section III-A)."""
        return SGD(self.momentum, self.weight_decay)

    def k(self, n: int) -> int:
        """Peers selected per round among ``n`` clients."""
        return resolve_peers(self.peers, n)

    def as_dict(self) -> dict[str, Any]:
        """The hyper-parameters as recorded in the run config."""
        return dict(
            lr=self.lr, head_lr=self.head_lr, momentum=self.momentum,
            weight_decay=self.weight_decay, local_steps=self.body_work[0],
            local_epochs=self.body_work[1], head_steps=self.head_work[0],
            head_epochs=self.head_work[1], peers=self.peers, alpha=self.alpha, lam=self.lam,
            c=self.cost, selection=self.selection, candidates=self.candidates,
            selection_seed=self.selection_seed, decay=self.decay,
            peer_accuracy=self.peer_accuracy,
        )


# --------------------------------------------------------------------------- Algorithm 1's steps
#
# Each step works on the rows of the clients this process holds (``env.clients.ids``; every
# client in one process): ``state.x`` and the per-client arrays hold those rows of the
# [n, ...] arrays of one process; the heads, the selection graph and the records gather every
# row, the chosen peers' batches and models are fetched, in the same order on every process.


@dataclass
class PFedDSTState:
    """PFedDST's state besides the models (``State.x``): rows of the clients held here.

    Attributes
    ----------
    losses : Tensor
        ``[n, n]`` the loss array $l$ (Algorithm 1, lines 2 and 9).
    last : Tensor
        ``[n, n]`` the peer recency array (line 19): the round after a peer was last pulled.
    selected : Tensor
        ``[n, n]`` this round's selection $M_i$ (``selected[i, j] = 1``: ``i`` pulls ``j``).
    losses_ready : Tensor
        ``[]`` 0 before the initial loss array, 2 in the round that filled it, 1 after.
    peers : Tensor
        ``[n, k]`` long: the selected peers (-1: none), for the records.
    shared : Tensor
        ``[n, k]`` bool: whether each selected peer shares a training class with its client.
    peer_acc, own_acc : Tensor or None
        With ``peer_accuracy``: ``[n, k]`` the selected peers' and ``[n]`` the client's own
        accuracy on the client's data (float64).
    """

    losses: Tensor
    last: Tensor
    selected: Tensor
    losses_ready: Tensor
    peers: Tensor
    shared: Tensor
    peer_acc: Tensor | None = None
    own_acc: Tensor | None = None


def init_state(x0: Tensor, env: Services, *, hp: PFedDSTParams) -> State:
    """A fresh state: the loss array and the peer recency array of Algorithm 1 (zeros until
    line 2 fills the losses), this round's selection, and the buffers of the records."""
    n, m = env.n, x0.shape[0]
    if not env.layout.has_split:
        raise ValueError(
            "pfeddst shares a body and personalizes a head, but the model's parameters do "
            f"not split into a non-empty body and head ({env.layout.num_body} body of "
            f"{env.layout.num_params}); use a model with a body and a head"
        )
    k = hp.k(n)
    if isinstance(hp.cost, list) and len(hp.cost) != n:
        raise ValueError(f"c must be a scalar or an [n, n] = [{n}, {n}] array, got "
                         f"[{len(hp.cost)}, {len(hp.cost)}]")
    kw: dict[str, Any] = {"dtype": x0.dtype, "device": x0.device}
    accuracy = hp.peer_accuracy is not None
    f64: dict[str, Any] = {"dtype": torch.float64, "device": x0.device}
    state = State(x=x0, own=PFedDSTState(
        losses=torch.zeros(m, n, **kw),    # loss array l (line 2, line 9)
        last=torch.zeros(m, n, **kw),      # peer recency array (line 19)
        selected=torch.zeros(m, n, **kw),  # M_i of this round: A[i, j] = 1
        losses_ready=torch.zeros((), **kw),
        peers=torch.full((m, k), -1, dtype=torch.long, device=x0.device),
        shared=torch.zeros(m, k, dtype=torch.bool, device=x0.device),
        peer_acc=torch.full((m, k), math.nan, **f64) if accuracy else None,
        own_acc=torch.full((m,), math.nan, **f64) if accuracy else None,
    ))
    hp.sgd.init_(state, env)
    return state


def round_start(state: State, rnd: Round, env: Services, *, hp: PFedDSTParams) -> None:
    """The round's peer selection and aggregation, before local training (Algorithm 1, lines
    6-9 and 19): a fresh local optimizer, the scores and the selection, the selection's
    quality for the records, the bodies averaged, the loss array refreshed."""
    _RESTART(state, rnd, env)
    chosen, valid = select_peers(state, rnd, env, hp)  # lines 2, 6-7
    own = state.own_as(PFedDSTState)
    selected = own.selected
    selected.zero_()
    selected.scatter_(1, chosen, valid.to(selected.dtype))
    own.last.masked_fill_(selected > 0, float(rnd.t + 1))  # line 19 (next rounds)
    record_quality_(state, chosen, valid, env, hp)
    aggregate_bodies_(state, rnd, env, hp)  # line 8
    if hp.selection == "score" and hp.k(env.n) > 0:
        refresh_losses_(state, chosen, valid, rnd.t, env)  # line 9


def select_peers(state: State, rnd: Round, env: Services, hp: PFedDSTParams
                 ) -> tuple[Tensor, Tensor]:
    r"""Algorithm 1, lines 6-7 (and line 2 in the first round): each client scores its
    candidates, $S_{ij} = s_p(\alpha s_l - s_d + c)$ (:func:`pfeddst_scores`, from the loss
    array, every client's head and the recency array), and selects the ``peers`` best
    (:func:`pfeddst_select`); ``selection="random"`` draws the scores instead. Returns
    ``(chosen [m, k], valid [m, k])``."""
    x, t, n, own = state.x, rnd.t, env.n, state.own_as(PFedDSTState)
    dev = x.device
    ids = torch.as_tensor(env.clients.ids, device=dev)
    allowed = candidates_of(n, rnd, ids, hp.candidates)
    if hp.selection == "score":
        if not bool(own.losses_ready):  # line 2: initial loss array, every pair
            others = _others(n, dev, ids)
            own.losses.scatter_(1, others, env.cross_losses(x, others, t=t, stream=1))
            own.losses_ready.fill_(2)  # 2: filled in this round (round_flows counts it)
        c_t = (torch.tensor(hp.cost, dtype=x.dtype, device=dev).index_select(0, ids)
               if isinstance(hp.cost, list) else hp.cost)
        heads = env.clients.all_rows(x[:, env.layout.cols("head")].contiguous())
        S = pfeddst_scores(own.losses, heads, own.last, t + 1, alpha=hp.alpha,
                           lam=hp.lam, c=c_t, rows=ids)
    else:
        keys = generator_at(hp.selection_seed, t).random((n, n))
        S = torch.as_tensor(keys, dtype=x.dtype, device=dev).index_select(0, ids)
    return pfeddst_select(S.masked_fill(~allowed, -math.inf), hp.k(n))


def aggregate_bodies_(state: State, rnd: Round, env: Services, hp: PFedDSTParams) -> None:
    r"""Algorithm 1, line 8: $e_i \leftarrow (e_i + \sum_{j \in M_i} e_j) / (|M_i| + 1)$,
    the bodies pulled through the mixer over the round's selection graph; the heads stay."""
    env.mixer.mix_(pulled_graph(state, rnd, env, hp)[0], state.x, env.layout.cols("body"))


def refresh_losses_(state: State, chosen: Tensor, valid: Tensor, t: int, env: Services
                    ) -> None:
    """Algorithm 1, line 9: ``losses[i, j]`` of the selected peers becomes the loss of the
    aggregated model on a mini-batch of ``j``'s data."""
    fresh = env.cross_losses(state.x, chosen, t=t)
    L = state.own_as(PFedDSTState).losses
    L.scatter_(1, chosen, torch.where(valid, fresh, L.gather(1, chosen)))


def pulled_graph(state: State, rnd: Round, env: Services, hp: PFedDSTParams
                 ) -> tuple[Topology, int]:
    """The round's graph, ``j -> i`` when ``i`` pulled ``j``'s body, from the selection kept in
    the state (every client's row of it: a collective where clients are spread), and its
    arcs."""
    full = env.clients.all_rows(state.own_as(PFedDSTState).selected)
    return (_realized(full, {"round": rnd.t, "peers": hp.k(env.n), "selection": hp.selection}),
            int(full.sum().item()))


def round_flows(state: State, rnd: Round, env: Services, hp: PFedDSTParams,
                realized: Topology) -> list[Flow]:
    """What the round sent, in the order of ``round_start``, all before the local training:
    the initial loss array in the first round (each model to every other client, a loss
    back), the heads the scores compare, the bodies pulled (``realized``: ``j -> i`` when
    ``i`` pulled ``j``'s body), the refreshed losses of the selected peers (the aggregated
    model to the peer, the loss back)."""
    n, x, lay = env.n, state.x, env.layout
    bits, size = dtype_bits(x.dtype), int(x.shape[1])
    width = {k: int(lay.cols(k).stop - lay.cols(k).start) for k in ("body", "head")}
    pulled = graph_arcs(realized)
    by_score = hp.selection == "score"
    flows: list[Flow] = []
    ready = state.own_as(PFedDSTState).losses_ready
    if by_score and float(ready) == 2:
        every = arcs_of_mask(~torch.eye(n, dtype=torch.bool))
        flows += [Flow("probe", every, size, bits, stage=-6),
                  Flow("loss", Arcs(n, every.receivers, every.senders), 1, bits, stage=-5)]
        ready.fill_(1)
    if by_score:
        allowed = candidates_of(n, rnd, torch.arange(n), hp.candidates)
        flows.append(Flow("head", arcs_of_mask(allowed), width["head"], bits, stage=-4))
    flows.append(Flow("body", pulled, width["body"], bits, stage=-3))
    if by_score and hp.k(n) > 0:
        flows += [Flow("probe", Arcs(n, pulled.receivers, pulled.senders), size, bits,
                       stage=-2),
                  Flow("loss", pulled, 1, bits, stage=-1)]
    return flows


def communicate(state: State, rnd: Round, env: Services, *, hp: PFedDSTParams) -> Sent:
    """The bodies were pulled at the start of the round (Algorithm 1, line 8, before local
    training); here the round's collaboration graph, what was sent and the records go to the
    engine."""
    realized, _ = pulled_graph(state, rnd, env, hp)
    return Sent.of(*round_flows(state, rnd, env, hp, realized), realized=realized,
                   records=round_records(state, env, hp))


def candidates_of(n: int, rnd: Round, ids: Tensor, candidates: str) -> Tensor:
    """``[m, n]`` bool: the peers each of the clients ``ids`` may select: every other client,
    or its in-neighbours in the round's topology (the "available clients" of eq. 5)."""
    device = ids.device
    m = int(ids.numel())
    me = torch.zeros(m, n, dtype=torch.bool, device=device)
    me[torch.arange(m, device=device), ids] = True
    if candidates == "all":
        return ~me
    topo = rnd.topology
    if topo is None:
        raise ValueError("pfeddst(candidates='neighbors') needs a topology; pass one to run")
    if topo.n != n:
        raise ValueError(f"the topology has n={topo.n} nodes but there are {n} clients")
    W = torch.as_tensor(topo.to_dense() != 0, device=device)  # W[i, j] != 0 iff j -> i
    return W.index_select(0, ids) & ~me


def record_quality_(state: State, chosen: Tensor, valid: Tensor, env: Services,
                    hp: PFedDSTParams) -> None:
    """What the records say of the selection, measured on the models as selected: the peers,
    whether each shares a training class with its client, and with ``peer_accuracy`` the
    selected peers' and the client's own accuracy on the client's data (Fig. 2)."""
    own, x = state.own_as(PFedDSTState), state.x
    own.peers.copy_(torch.where(valid, chosen, torch.full_like(chosen, -1)))
    counts = env.label_counts
    if counts is not None:
        ids = torch.as_tensor(env.clients.ids, device=x.device)
        has = torch.as_tensor(np.asarray(counts) > 0, dtype=torch.float64,
                              device=x.device)  # [n, L]
        share = (has.index_select(0, ids) @ has.T) > 0  # [m, n]: a class in common
        own.shared.copy_(share.gather(1, chosen) & valid)
    if hp.peer_accuracy is not None and own.peer_acc is not None and own.own_acc is not None:
        for j in range(chosen.shape[1]):
            (peer,) = env.clients.fetch(chosen[:, j].cpu().numpy(), x)
            acc = env.accuracies(peer, hp.peer_accuracy)
            own.peer_acc[:, j] = torch.where(valid[:, j], acc, math.nan)
        own.own_acc.copy_(env.accuracies(x, hp.peer_accuracy))


def round_records(state: State, env: Services, hp: PFedDSTParams) -> dict[str, Any]:
    """The round's records (every client's rows): the selected peers, the class-sharing rate
    and, with ``peer_accuracy``, the selected peers' and own accuracies."""
    ex, clients = state.own_as(PFedDSTState), env.clients
    peers_all = clients.all_rows(ex.peers).cpu()
    valid = peers_all >= 0
    out: dict[str, Any] = {"pfeddst_peers": peers_all.tolist()}
    if env.label_counts is not None:
        shared = clients.all_rows(ex.shared.long()).cpu().bool()
        per = shared.sum(1).double() / valid.sum(1).clamp_min(1).double()
        out["pfeddst_shared_class"] = float(shared.sum()) / max(1, int(valid.sum()))
        out["pfeddst_shared_class_clients"] = [
            float(a) if int(b) else math.nan for a, b in zip(per, valid.sum(1))]
    if ex.peer_acc is not None and ex.own_acc is not None:  # peer_accuracy
        pa = clients.all_rows(ex.peer_acc).cpu()
        own = clients.all_rows(ex.own_acc).cpu()
        out["pfeddst_peer_acc"] = pa.tolist()
        out["pfeddst_peer_acc_mean"] = float(pa[valid].mean())
        out["pfeddst_own_acc"] = own.tolist()
        out["pfeddst_own_acc_mean"] = float(own.mean())
    return out


_RESTART = restart_momentum()
