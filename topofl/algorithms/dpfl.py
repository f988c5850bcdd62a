r"""DPFL: decentralized personalized FL over a budgeted, directed collaboration graph.

Each client $k$ keeps its own model $w_k$ and chooses, from the validation loss of candidate
averages, the clients it averages with: its collaborators $C_k \subseteq \Omega_k$,
$|C_k| \le B_c$. The client's model becomes the data-size weighted average (eq. 4)

.. math:: \hat w_k = \frac{1}{\sum_{i \in C_k \cup \{k\}} p_i} \sum_{i \in C_k \cup \{k\}} p_i w_i,

and $C_k$ is picked by the randomized greedy rule of GGC (Algorithm 2) that maximizes the reward
$R(S) = -F_k^V\big(\sum_{i \in S} p_i w_i / \sum_{i \in S} p_i\big)$, $k \in S$. The candidate
set $\Omega_k$ is built once, after $\tau_{init}$ local epochs, by BGGC (Algorithm 3), which
reaches the same set as GGC over all clients (Theorem 1) while receiving at most $B_c$ models at a
time.

Algorithm 1: pre-processing (once, at the start of round 0): every client trains
$\tau_{init}$ local epochs from the common initialisation, BGGC over all other clients gives
its candidate set $\Omega_k$ ($|\Omega_k| \le B_c$), and its model becomes the weighted
average over $\Omega_k \cup \{k\}$ (lines 1-5). Every round $t$: $\tau_{train}$ local epochs
of SGD (line 8), then, every ``refresh_every`` rounds, GGC over $\Omega_k$ on the client's
validation loss picks $C_k \subseteq \Omega_k$ (line 10), and the model becomes the weighted
average over $C_k \cup \{k\}$ (line 11, eq. 4). $\Omega$ never changes (Section 3.1: a
client skipped in one round may help later).

GGC and BGGC themselves, per client and batched over the clients, live in
:mod:`topofl.algorithms.ggc` (no engine there: plain functions of models, weights and a loss
oracle). This module is the algorithm (Algorithm 1) for the engine, registered as
``"dpfl"``: its checked hyper-parameters (:class:`DPFLParams`), its state
(:class:`DPFLState`) and the paper's steps as functions of them, :func:`preprocess` (lines
1-5), :func:`select_collaborators` (lines 9-10) and :func:`aggregate_` (line 11, eq. 4),
composed by :func:`communicate`.

The steps (:func:`preprocess`: local training, BGGC, the first averaging;
:func:`select_collaborators`: GGC over $\Omega_k$ every ``refresh_every`` rounds;
:func:`aggregate_`) work on the rows of the clients this process holds
(``env.clients``): in a distributed run (``torchrun``) each rank runs BGGC and GGC for its
own clients on their validation data, with every client's model for pre-processing (all
are candidates) and afterwards only its clients' candidates' models (at most $B_c$ each),
fetched from their ranks; the state (:class:`DPFLState`) then holds the rank's rows
(``[m, n]`` masks), and the records equal the single-process run's.

Notes
-----
Choices where the paper is silent or ambiguous:

- *Budget.* Counted on the collaborators, $|C_k| \le B_c$ and $|\Omega_k| \le B_c$ (eq. 3,
  Section 2.2), not on $X \ni k$ as Algorithm 2's stopping test reads (which never stops
  for $B_c = 1$). BGGC's stop at the budget ends its scan (not only the current batch).
- *Pre-processing* trains with ``env.local_train`` (plain SGD at ``lr``, no momentum or
  weight decay: the engine service), on the data stream ``PRE_STREAM`` of round 0; it runs
  in ``round_start`` of round 0 (not in ``init``): keyed on the round, so a resumed run does
  not redo it. BGGC is simulated exactly (running sums, batches of $B_c$).
- *Local optimizer.* ``LocalOpt(w_k, tau_train)`` is a fresh SGD call per round: its
  momentum buffer restarts at zero every round (after the averaging).
- *Messages* (whole models, kind ``"model"``, as :class:`~topofl.engine.ledger.Flow`\ s).
  Pre-processing: BGGC receives every other model once, then the batches it scans (counted
  in round 0, before its local work). A GGC round: client $k$ receives its $|\Omega_k|$
  candidates (line 9); a round between refreshes: only its $|C_k|$ collaborators.
- *Absent clients* (rule ``"stale"``): an offline client's state does not change in the
  round; the others may still pick it and read its last model; nothing is sent to it. A
  client offline in the pre-processing round keeps an empty $\Omega_k$.
- *Clients without validation samples.* A client of a few samples, one of each of its
  classes, keeps them all for training (:meth:`~topofl.data.Partition.split` never holds out
  the last sample of a class), so its validation share is empty: GGC, BGGC and
  ``select="best_val"`` score its candidates on its training samples instead, and
  :func:`~topofl.algorithms.client_accuracy_stats`'s best-validation selection scores it at
  its last evaluation. (The authors'
  split, ``sklearn``'s ``train_test_split``, rounds the validation share up and gives such a
  client one validation sample of a class it then does not train on.)
- *Model selection.* The paper reports the test accuracy of each client's model with the
  best validation score over the rounds (Section 4, Appendix F: "we preserve the best model
  based on the validation dataset, and the reported test results are obtained by performing
  inference on this best validation model"): ``select="best_val"``. "Best" is read as the
  lowest validation *loss*, the quantity DPFL's rewards use; ties keep the earlier model. By default
  ``evaluate`` returns the current models, as for every topofl algorithm, so that all
  algorithms are scored alike; ``records.best("test_acc_mean")`` is the best *mean* over
  rounds, not that protocol.
- *Randomness.* ``graph_seed`` seeds BGGC's shuffles and coin flips (stream
  ``(graph_seed, 0, k)`` of client ``k``), GGC's in round ``t`` (``(graph_seed, 1, t, k)``)
  and, with ``graph="random"``, the random collaborators (``(graph_seed, 2, t, k)``).
- *Rounds.* The paper counts pre-processing as 2 rounds (98 DPFL rounds against 100 for
  the baselines); pass ``rounds`` accordingly.

Complexity per GGC round: $2 + 2\max_k |\Omega_k|$ calls of ``env.losses`` (each scores one
candidate average per client on its validation split) and as many ``[n, n] @ [n, P]``
averages; pre-processing: $2 + 2(n-1)$ calls at most, $O(nP)$ each.

References
----------
.. [1] S. Kharrat, M. Canini, S. Horvath, "Decentralized Personalized Federated Learning",
   arXiv:2406.06520, 2024: eq. (4), (6)-(8); Algorithm 1 (DPFL), Algorithm 2 (GGC), Algorithm 3
   (BGGC); Theorem 1 and Appendix D (GGC = BGGC for the same seed); Section 4.3 (sparsity and
   symmetry of the graph); Table 3 (refresh period $P$); Appendix F.3 (hyper-parameters).
.. [2] F. Fourati, V. Aggarwal, C. Quinn, M.-S. Alouini, "Randomized greedy learning for
   non-monotone stochastic submodular maximization under full-bandit feedback", AISTATS 2023
   (the randomized greedy rule GGC adapts).

Records
-------
Besides the realized graph of every round (``realized_edges`` ``[j, k]`` for $j \in C_k$
with ``realized_weights`` the weights of eq. 4), the round in which pre-processing ran
records ``dpfl_omega_edges`` and ``dpfl_omega_weights`` (the candidate graph $\Omega$ and
the weights of the averaging of line 4), ``dpfl_budget`` (the resolved $B_c$, ``None``
without budget) and ``dpfl_no_greedy`` (the resolved client ids); with
``select="best_val"`` every round records ``dpfl_best_round`` (per client, the round of
the model ``evaluate`` scores).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
import torch
from torch import Tensor

from topofl._utils.rng import generator_at
from topofl._utils.validation import check_choice
from topofl.algorithms._dpfl_hparams import (
    EPOCHS,
    DPFLTraining,
    DPFLTrainingKeywords,
    GraphLearning,
    GraphLearningKeywords,
    resolve_budget,
)
from topofl.algorithms._one_phase import local_training, whole_model_algorithm
from topofl.algorithms.base import register_algorithm
from topofl.algorithms.ggc import aggregation_matrix, aggregation_rows, bggc_received, greedy_rows
from topofl.algorithms.hparams import Keywords
from topofl.engine.ledger import Flow, arcs_of_mask, dtype_bits
from topofl.engine.pieces import SGD, restart_momentum
from topofl.engine.protocol import Algorithm, Round, Sent, Services, State
from topofl.graph import Topology

if TYPE_CHECKING:  # Unpack is typing's from Python 3.11; only the type checker reads it
    from typing_extensions import Unpack

__all__ = ["dpfl", "DPFLKeywords", "DPFLTraining", "GraphLearning", "resolve_budget",
           "DPFLParams", "DPFLState", "PRE_ROUND", "preprocess", "select_collaborators",
           "aggregate_"]

#: stream index of the pre-processing draws (BGGC); the rounds use ``(seed, _ROUND_TAG, t, k)``
_PRE_TAG = 0
_ROUND_TAG = 1
_RANDOM_TAG = 2
#: ``env.local_train`` stream of the tau_init pre-processing epochs
PRE_STREAM = 0
#: the round whose start runs the pre-processing (lines 1-5), and whose messages and records
#: carry it
PRE_ROUND = 0


def _edge_list(mask: Tensor, W: Tensor) -> tuple[list[list[int]], list[float]]:
    """``mask[k, j]`` (``j -> k``) as sorted ``[j, k]`` pairs and their weights ``W[k, j]``."""
    ks, js = torch.nonzero(mask.cpu(), as_tuple=True)
    pairs = sorted(zip(js.tolist(), ks.tolist()))
    Wc = W.detach().cpu()
    return [[j, k] for j, k in pairs], [float(Wc[k, j]) for j, k in pairs]


# --------------------------------------------------------------------------- the algorithm


class DPFLKeywords(DPFLTrainingKeywords, GraphLearningKeywords, total=False):
    """DPFL's flat keywords: the fields of its groups (documented at :func:`dpfl`)."""


#: DPFL's default groups: Appendix F.3.3's local training, the greedy graph with B_c = 10
_SGD, _GREEDY = DPFLTraining(), GraphLearning()


@register_algorithm("dpfl")
def dpfl(sgd: DPFLTraining | float = _SGD, graph_learning: GraphLearning = _GREEDY, *,
         select: str = "last", **keywords: Unpack[DPFLKeywords]) -> Algorithm:
    r"""DPFL (Algorithm 1): greedy, budgeted, directed collaboration for personalized models.

    Pre-processing (BGGC picks each client's candidates $\Omega_k$), then every round local
    epochs and, every ``refresh_every`` rounds, GGC picks its collaborators $C_k \subseteq
    \Omega_k$ for the weighted average. Steps, records, readings of the paper: module docstring.

    Parameters
    ----------
    sgd : DPFLTraining or float, optional
        The local training (:class:`DPFLTraining`: the flat keywords ``lr``,
        ``local_epochs``, ``local_steps``, ``momentum``, ``weight_decay`` and ``decay`` below,
        with their defaults); a number is ``lr`` (``dpfl(0.05)``).
    graph_learning : GraphLearning, optional
        The collaboration graph's learning (:class:`GraphLearning`: the flat keywords
        ``budget``, ``tau_init``, ``refresh_every``, ``weighting``, ``graph``,
        ``graph_seed`` and ``no_greedy`` below, with their defaults).
    select : {"last", "best_val"}, default "last"
        What ``evaluate`` scores. ``"last"``: the current models, as for every topofl
        algorithm. ``"best_val"``: DPFL's protocol (module docstring, *Model selection*):
        after each round's averaging, a client whose validation loss is below its best so far
        keeps a copy of its model, and that copy is scored.
    **keywords
        The groups' fields as flat keywords (each replaces the field of its group):
    lr : float, default 0.01
        SGD learning rate $\eta$ (Appendix F.3.3), of the local epochs and of pre-processing.
    budget : int, float, None or math.inf, default 10
        $B_c \ge 1$, the most collaborators of a client (``None``/``inf``: no budget). A float
        in ``(0, 1]`` is a fraction of the number of clients $N$, resolved when the run starts
        as ``max(1, round(budget * N))`` (:func:`resolve_budget`): the paper's $B_c \in
        \{\infty, 0.2N, 0.1N, 0.05N\}$ are ``None, 0.2, 0.1, 0.05``; its figures use 10 of 100.
    tau_init : float, default 10
        $\tau_{init} \ge 0$ local epochs before BGGC (0: BGGC on the initial models).
    local_epochs, local_steps : float or sequence of float, default 5; int, optional
        $\tau_{train} > 0$ local epochs per round (the default: Appendix F.3.3; one value per
        client for computation heterogeneity, :func:`~topofl.algorithms.heterogeneous_epochs`),
        or instead the same number of local SGD steps for every client.
    refresh_every : int, default 1
        $P$ of Table 3: GGC runs in rounds $t$ with $t \bmod P = 0$; in between, clients
        average over the last $C_k$.
    momentum : float, default 0.9
    weight_decay : float, default 1e-3
        Appendix F.3.3: "SGD optimizer with 1e-3 decay, 0.9 momentum", read as the SGD weight
        decay (the learning rate is not said to decay).
    weighting : {"size", "uniform"}, default "size"
        $p_i$: the number of training samples of client $i$ (eq. 1, "proportional to device
        k's dataset size", read from ``env.train_sizes``), or 1 for every client.
    graph : {"greedy", "random"}, default "greedy"
        ``"random"`` replaces BGGC and GGC by a randomly constructed collaboration graph with
        the same budget (DPFL Section 4.4, Fig. 3): at pre-processing and at every refresh each
        client draws ``min(B_c, n - 1)`` collaborators uniformly among the other clients; no
        validation loss is evaluated.
    graph_seed : int, default 0
        Seeds the shuffles and coin flips of BGGC and GGC and the random graph (the streams:
        module docstring). The run's ``seed`` does not reach it: vary both over seeds.
    decay : float, default 1
        Learning-rate factor per round.
    no_greedy : None, "flipped" or sequence of int, default None
        Clients that never run BGGC or GGC and never average (the malicious clients of DPFL's
        Fig. 4a and Appendix Fig. 12: "they only train locally", "consistently maintained their
        models"), yet stay candidates of the others and send their model whenever asked.
        ``"flipped"`` names the label-flipping clients of the data (``federate(...,
        flip_labels=0.4)``, read from ``env.flipped``), a sequence names client ids. Their
        $\Omega_k$ and $C_k$ are empty and they receive no messages.

    Returns
    -------
    Algorithm
        ``uses_topology=False`` (DPFL builds its own graph; ``communicate`` returns as realized
        graph the round's collaboration graph with the weights of eq. 4, so the engine records
        its edges ``j -> k`` for ``j`` in ``C_k``, density and reciprocity).
        ``state.own`` is a :class:`DPFLState` (the masks $\Omega$ and $C$, the weights, the
        best models with ``select="best_val"``), checkpointed with the models.
        Its runs do not stack: ``Algorithm.stacks`` says why (the graph crosses the runs of
        a stacked pass), and a sweep runs them one by one.

    Raises
    ------
    ValueError
        ``budget < 1``, ``tau_init < 0``, ``local_epochs <= 0``, both ``local_epochs`` and
        ``local_steps``, ``refresh_every < 1``, a bad ``lr``/``momentum``/``weight_decay``/
        ``weighting``; when run, data without a validation split.

    References
    ----------
    Kharrat, Canini, Horvath, "Decentralized Personalized Federated Learning", 2024:
    Algorithm 1, Section 3, Table 3, Appendix F.

    Examples
    --------
    >>> data = tf.data.federate("digits", "dpfl_pathological", 4, classes_per_client=3,
    ...                         alpha=0.5, seed=0, val=0.2)
    >>> model = tf.models.build_model("mlp", data.input_shape, data.num_classes, seed=0,
    ...                               hidden=(8,))
    >>> res = tf.run("dpfl", data=data, model=model, rounds=2, budget=2, tau_init=1,
    ...              local_epochs=1, batch_size=64, seed=0, spectral=False)
    >>> omega, collab = res.state.own.omega, res.state.own.collab
    >>> bool((omega.sum(1) <= 2).all()), bool((collab <= omega).all())
    (True, True)
    >>> len(res.records.series("realized_density")[0])  # one realized graph per round
    2
    """
    kw = Keywords("dpfl", keywords)
    local, learning = kw.take(sgd, _SGD), kw.take(graph_learning)
    kw.done()
    hp = DPFLParams(**local_training(local, default_epochs=EPOCHS), **learning.checked(),
                    select=check_choice(select, "select", ("last", "best_val")))
    return whole_model_algorithm(
        "dpfl", hp, init=init_state, local=hp.sgd, communicate=communicate,
        evaluate=functools.partial(evaluate, hp=hp),
        round_start=functools.partial(round_start, hp=hp), uses_topology=False, absent="stale",
        stacks=_stacks_reason(hp))


def _stacks_reason(hp: DPFLParams) -> str:
    """Why DPFL's runs cannot stack (:mod:`topofl.engine.stack`): it builds its own graph
    over every client it is given, outside the mixer. A stacked pass holds several runs'
    clients as the rows of one state, and the graph would cross them.

    Examples
    --------
    >>> print(tf.algorithms.dpfl(graph="random", tau_init=0, budget=0.1).stacks)
    ... # doctest: +NORMALIZE_WHITESPACE
    dpfl(graph='random') draws each client's collaborators at random among all the clients of
    the pass (a stack's rows, not its run's) with a budget resolved from their number, so a run
    would average with other runs' clients
    """
    if hp.graph == "greedy":
        how = ("dpfl picks each client's candidates and collaborators greedily (BGGC, GGC) "
               "from the validation losses of candidate averages")
    else:
        how = "dpfl(graph='random') draws each client's collaborators at random"
    data = [what for what, used in (
        ("validation losses (env.losses)", hp.graph == "greedy" or hp.select == "best_val"),
        ("pre-processing epochs (env.local_train)", hp.tau_init > 0)) if used]
    served = ("" if not data else f"; its {' and '.join(data)} draw data outside the local "
              "phases, which a stack does not serve")
    budget = " with a budget resolved from their number" if isinstance(hp.budget, float) else ""
    return (f"{how} among all the clients of the pass (a stack's rows, not its run's){budget}, "
            f"so a run would average with other runs' clients{served}")


@dataclass(frozen=True)
class DPFLParams:
    """DPFL's checked hyper-parameters: what :func:`dpfl` validated and its steps read.

    ``budget`` is the spec (an int, a fraction of ``N`` or ``None``; :meth:`cap` resolves it),
    ``work`` the ``(local_steps, local_epochs)`` of the local training, ``no_greedy`` ``None``,
    ``"flipped"`` or the sorted client ids.
    """

    lr: float
    budget: int | float | None
    tau_init: float
    work: tuple[int | None, Any]
    refresh_every: int
    momentum: float
    weight_decay: float
    weighting: str
    graph_seed: int
    decay: float
    graph: str
    no_greedy: str | tuple[int, ...] | None
    select: str

    @property
    def sgd(self) -> SGD:
        """``LocalOpt``: SGD with the momentum and weight decay of Appendix F.3.3."""
        return SGD(self.momentum, self.weight_decay)

    def cap(self, n: int) -> int | None:
        """$B_c$ for ``n`` clients (:func:`resolve_budget`)."""
        return resolve_budget(self.budget, n)

    def as_dict(self) -> dict[str, Any]:
        """The hyper-parameters as recorded in the run config."""
        steps, epochs = self.work
        return dict(lr=self.lr, budget=self.budget, tau_init=self.tau_init,
                    local_epochs=epochs, local_steps=steps, refresh_every=self.refresh_every,
                    momentum=self.momentum, weight_decay=self.weight_decay,
                    weighting=self.weighting, graph_seed=self.graph_seed, decay=self.decay,
                    graph=self.graph,
                    no_greedy=(list(self.no_greedy) if isinstance(self.no_greedy, tuple)
                               else self.no_greedy),
                    select=self.select)


@dataclass
class DPFLState:
    r"""DPFL's state besides the models (``State.x``): the rows of the clients held here.

    Attributes
    ----------
    p : Tensor
        ``[n]`` the weights $p_i$ of eq. (4).
    omega, collab : Tensor
        ``[n, n]`` bool: the candidate sets $\Omega_k$ and the collaborators $C_k$ (row
        ``k``; ``[k, j]``: ``j -> k``).
    pending_messages : Tensor
        ``[n, n]`` uint8: the models each client's pre-processing received from each other
        client, counted in the messages of its round (0 after).
    passive : Tensor
        ``[n]`` bool: the clients that never run BGGC/GGC and never average (``no_greedy``).
    best_x, best_val, best_round : Tensor or None
        With ``select="best_val"``: ``[n, P]`` each client's model with the best validation
        loss so far, ``[n]`` that loss (float64) and ``[n]`` its round (long).
    """

    #: older checkpoints' pre-processing flags: pre-processing is keyed on the round now
    RETIRED: ClassVar[frozenset[str]] = frozenset({"ready", "fresh"})

    p: Tensor
    omega: Tensor
    collab: Tensor
    pending_messages: Tensor
    passive: Tensor
    best_x: Tensor | None = None
    best_val: Tensor | None = None
    best_round: Tensor | None = None


# --------------------------------------------------------------------------- Algorithm 1's steps
#
# Each step works on the rows of the clients this process holds (``env.clients.ids``; every
# client in one process): ``state.x`` and every per-client array of the DPFLState hold those
# rows ([m, n] rows of the [n, n] masks); the candidates' models are fetched (every row for
# pre-processing), the weights, the graphs and the records gathered, in the same order on
# every process (they are collectives in a distributed run).


def init_state(x0: Tensor, env: Services, *, hp: DPFLParams) -> State:
    r"""A fresh state: the weights $p_i$ (eq. 1), empty $\Omega$ and $C$, the clients that
    never run the greedy steps, the momentum buffers and, for ``select="best_val"``, the best
    model so far."""
    n, m = env.n, x0.shape[0]
    if hp.weighting == "size":
        if env.train_sizes is None:
            raise ValueError(
                "dpfl weights models by training-set size (eq. 4) and reads them from "
                "env.train_sizes, which the engine sets; give them to the services when "
                "driving the pieces by hand, or use weighting='uniform'"
            )
        p = env.train_sizes.to(device=x0.device, dtype=x0.dtype).clone()
        if tuple(p.shape) != (m,) or not bool((p > 0).all()):
            raise ValueError(f"env.train_sizes must be [n] = [{m}] positive sizes, got {p}")
    else:
        p = torch.ones(m, dtype=x0.dtype, device=x0.device)
    dev, best = x0.device, hp.select == "best_val"
    state = State(x=x0, own=DPFLState(
        p=p,
        omega=torch.zeros(m, n, dtype=torch.bool, device=dev),
        collab=torch.zeros(m, n, dtype=torch.bool, device=dev),
        pending_messages=torch.zeros(m, n, dtype=torch.uint8, device=dev),
        passive=passive_clients(n, env, hp.no_greedy, dev)[torch.as_tensor(env.clients.ids)],
        best_x=x0.clone() if best else None,
        best_val=torch.full((m,), math.inf, dtype=torch.float64, device=dev) if best else None,
        best_round=torch.full((m,), -1, dtype=torch.long, device=dev) if best else None,
    ))
    hp.sgd.init_(state, env)
    return state


def preprocess(state: State, rnd: Round, env: Services, hp: DPFLParams) -> None:
    r"""Algorithm 1, lines 1-5: $\tau_{init}$ local epochs (line 2), BGGC over all other
    clients for the candidate sets $\Omega_k$ (line 3; or a random graph), and each model
    averaged over $\Omega_k \cup \{k\}$ (line 4). The models BGGC received are kept for the
    round's messages (:attr:`DPFLState.pending_messages`)."""
    clients, x, n, own = env.clients, state.x, env.n, state.own_as(DPFLState)
    ids = clients.ids
    if hp.tau_init > 0:  # line 2
        env.local_train(x, "all", hp.lr, t=rnd.t, epochs=hp.tau_init, stream=PRE_STREAM)
    active = ~own.passive
    everyone = ~own_columns(ids, n, x.device) & active.unsqueeze(1)
    cap = hp.cap(n)
    p_all = clients.all_rows(own.p)
    if hp.graph == "random":
        omega = random_graph(n, 0, ids, cap, hp.graph_seed, x.device) & active.unsqueeze(1)
        pending = omega.to(torch.uint8)
    else:  # line 3
        seeds = [generator_at(hp.graph_seed, _PRE_TAG, int(k)) for k in ids]
        # every client is a candidate of every active one: a dense need, all rows
        src = clients.all_rows(x)
        omega, decisions = greedy_rows(x, ids, src, np.arange(n), everyone, p_all,
                                       _val_losses(env), cap, seeds,
                                       running_sums=True)
        pending = bggc_received(everyone, decisions, cap, [
            generator_at(hp.graph_seed, _PRE_TAG, int(k)) for k in ids])
    own.omega.copy_(omega)
    aggregate_(x, omega, p_all, env)  # line 4
    own.pending_messages.copy_(pending)


def select_collaborators(state: State, t: int, p_all: Tensor, env: Services,
                         hp: DPFLParams) -> Tensor:
    r"""Algorithm 1, lines 9-10, into :attr:`DPFLState.collab`: every ``refresh_every``
    rounds each client receives its candidates' models and GGC picks $C_k \subseteq
    \Omega_k$ on its validation loss (or a fresh random graph); in between, the last $C_k$
    stays. Returns the models the round receives: ``[n, n]`` bool, row ``k`` marks the
    clients whose model client ``k`` receives (every client's row)."""
    clients, x, n = env.clients, state.x, env.n
    own = state.own_as(DPFLState)
    ids, omega, collab = clients.ids, own.omega, own.collab
    if t % hp.refresh_every != 0:
        return clients.all_rows(collab.to(torch.uint8)).bool()
    if hp.graph == "random":
        collab.copy_(random_graph(n, t + 1, ids, hp.cap(n), hp.graph_seed, x.device)
                     & ~own.passive.unsqueeze(1))
        return clients.all_rows(collab.to(torch.uint8)).bool()
    seeds = [generator_at(hp.graph_seed, _ROUND_TAG, t, int(k)) for k in ids]
    # the candidates' models (at most B_c per client) and this process's own
    need = np.union1d(torch.nonzero(omega.cpu().any(dim=0)).flatten().numpy(), ids)
    (src,) = clients.fetch(need, x)
    val = _val_losses(env)  # takes rows: scores the deciding ones
    chosen, _ = greedy_rows(x, ids, src, need, omega, p_all, val, hp.cap(n), seeds,
                            running_sums=False)
    collab.copy_(chosen)
    return clients.all_rows(omega.to(torch.uint8)).bool()  # every candidate's model


def _val_losses(env: Services) -> Callable[..., Tensor]:
    """``losses(z, rows=None)``: each client's validation loss of its row of ``z``, a client
    without validation samples (e.g. one of a few samples, one per class, whose share rounds
    to none) scored on its training samples instead; the greedy steps and ``best_val`` read
    it."""
    return functools.partial(env.losses, split="val", fallback="train")


def aggregate_(x: Tensor, mask: Tensor, p_all: Tensor, env: Services) -> None:
    r"""Eq. (4) on this process's rows, in place: $w_k \leftarrow \sum_{i \in C_k \cup
    \{k\}} p_i w_i / \sum p_i$ with ``mask`` the rows of $C$ (or $\Omega$), the
    collaborators' models fetched from the processes that hold them."""
    clients = env.clients
    ids = clients.ids
    need = np.union1d(torch.nonzero(mask.cpu().any(dim=0)).flatten().numpy(), ids)
    (src,) = clients.fetch(need, x)
    A = aggregation_rows(mask, p_all.to(x.dtype), own_columns(ids, env.n, x.device))
    x.copy_(A.index_select(1, torch.as_tensor(need, device=x.device)) @ src)


def communicate(state: State, rnd: Round, env: Services, *, hp: DPFLParams) -> Sent:
    r"""One round's communication: in the pre-processing round (:data:`PRE_ROUND`, whose
    ``round_start`` ran lines 1-5) the records of $\Omega$ and BGGC's messages, then
    collaborator selection (lines 9-10) and the averaging (line 11); the realized graph is the
    aggregation matrix of $C$."""
    clients, x, n, own = env.clients, state.x, env.n, state.own_as(DPFLState)
    p_all = clients.all_rows(own.p)
    records: dict[str, Any] = {}
    flows: list[Flow] = []
    size, bits = int(x.shape[1]), dtype_bits(x.dtype)
    if rnd.t == PRE_ROUND:  # pre-processing ran in this round: its graph Omega
        records.update(omega_records(state, p_all, env, hp))
        # BGGC's models: every candidate's once (w^Y), then the batches scanned again
        pend = clients.all_rows(own.pending_messages).cpu()
        flows += [Flow("model", arcs_of_mask(pend >= 1), size, bits, stage=-2),
                  Flow("model", arcs_of_mask(pend >= 2), size, bits, stage=-1)]
        own.pending_messages.zero_()
    received = select_collaborators(state, rnd.t, p_all, env, hp)
    flows.append(Flow("model", arcs_of_mask(received), size, bits))
    collab = own.collab
    collab_all = clients.all_rows(collab.to(torch.uint8)).bool()
    W = aggregation_matrix(collab_all, p_all.to(x.dtype))
    aggregate_(x, collab, p_all, env)  # line 11
    realized = Topology.from_matrix(
        W.detach().to(device="cpu", dtype=torch.float64).numpy(), name="dpfl",
        params={"round": rnd.t, "budget": hp.cap(n)},
    )
    if hp.select == "best_val":
        records["dpfl_best_round"] = keep_best_(state, rnd.t, env)
    return Sent.of(*flows, realized=realized, records=records or None)


def omega_records(state: State, p_all: Tensor, env: Services, hp: DPFLParams
                  ) -> dict[str, Any]:
    r"""The records of the pre-processing graph $\Omega$: its edges and the weights of the
    averaging of line 4, the resolved budget and the clients that never ran the greedy
    steps."""
    clients, own = env.clients, state.own_as(DPFLState)
    omega_all = clients.all_rows(own.omega.to(torch.uint8)).bool()
    e, w = _edge_list(omega_all, aggregation_matrix(omega_all, p_all))
    passive_all = clients.all_rows(own.passive.to(torch.uint8)).bool()
    return {"dpfl_omega_edges": e, "dpfl_omega_weights": w, "dpfl_budget": hp.cap(env.n),
            "dpfl_no_greedy": torch.nonzero(passive_all.cpu()).flatten().tolist()}


def keep_best_(state: State, t: int, env: Services) -> list[int]:
    """``select="best_val"``: keep each client's model with the best validation loss so far
    (Appendix F's protocol); returns every client's round of that model."""
    own, x = state.own_as(DPFLState), state.x
    best_val, best_round, best_x = own.best_val, own.best_round, own.best_x
    if best_val is None or best_round is None or best_x is None:
        raise ValueError("keep_best_ needs the state of dpfl(select='best_val')")
    vl = _val_losses(env)(x).to(torch.float64)
    better = torch.isfinite(vl) & (vl < best_val)  # a NaN or -inf loss is never the best
    best_val.copy_(torch.where(better, vl, best_val))
    best_round.masked_fill_(better, t)
    best_x.copy_(torch.where(better.unsqueeze(1), x, best_x))
    best: list[int] = env.clients.all_rows(best_round).cpu().tolist()
    return best


def round_start(state: State, rnd: Round, env: Services, *, hp: DPFLParams) -> None:
    """A fresh local optimizer every round (its momentum restarts), and pre-processing at the
    start of round :data:`PRE_ROUND` (before its local epochs)."""
    _RESTART(state, rnd, env)
    if rnd.t == PRE_ROUND:
        preprocess(state, rnd, env, hp)


def evaluate(state: State, rnd: Round, env: Services, *, hp: DPFLParams) -> Tensor:
    """The models scored: the current ones, or each client's best on validation."""
    best_x = state.own_as(DPFLState).best_x
    return best_x if hp.select == "best_val" and best_x is not None else state.x


_RESTART = restart_momentum()


def passive_clients(n: int, env: Services, no_greedy: str | tuple[int, ...] | None,
                    device: torch.device) -> Tensor:
    """``[n]`` bool: the clients that never run BGGC/GGC and never average (``no_greedy``:
    the label-flipping clients of the data, ``env.flipped``, or the given ids)."""
    mask = torch.zeros(n, dtype=torch.bool)
    if no_greedy == "flipped":
        flipped = env.flipped
        if flipped is None:
            raise ValueError(
                "dpfl(no_greedy='flipped') reads the label-flipping clients from the data "
                "(env.flipped); these services have no data: pass client ids instead"
            )
        mask[torch.as_tensor(np.asarray(flipped, dtype=bool))] = True
    elif isinstance(no_greedy, tuple):
        if no_greedy and no_greedy[-1] >= n:
            raise ValueError(
                f"no_greedy must hold client ids in [0, {n - 1}], found {no_greedy[-1]}")
        mask[list(no_greedy)] = True
    return mask.to(device)


def random_graph(n: int, t: int, ids: np.ndarray, cap: int | None, graph_seed: int,
                 device: torch.device) -> Tensor:
    """The rows ``ids`` of round ``t``'s random collaboration graph (Section 4.4): each client
    draws ``min(B_c, n - 1)`` others from its stream ``(graph_seed, 2, t, k)``."""
    k = n - 1 if cap is None else min(int(cap), n - 1)
    mask = torch.zeros(len(ids), n, dtype=torch.bool)
    for r, i in enumerate(ids.tolist()):
        others = np.array([j for j in range(n) if j != i], dtype=np.int64)
        pick = generator_at(graph_seed, _RANDOM_TAG, t, i).choice(others, size=k, replace=False)
        mask[r, torch.as_tensor(pick)] = True
    return mask.to(device)


def own_columns(ids: np.ndarray, n: int, device: torch.device) -> Tensor:
    """``[m, n]`` bool: row ``r`` marks its own client ``ids[r]``."""
    me = torch.zeros(len(ids), n, dtype=torch.bool, device=device)
    me[torch.arange(len(ids), device=device), torch.as_tensor(ids, device=device)] = True
    return me
