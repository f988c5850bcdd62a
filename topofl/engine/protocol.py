"""The contract between the round loop and the algorithms it runs.

An :class:`Algorithm` is a ``NamedTuple`` of pieces that :func:`topofl.engine.run` calls in a
fixed order, with an immutable :class:`Round` (the round index and its graph) and the engine's
:class:`Services` (``env``)::

    round_start(state, rnd, env)
    for phase in phases:                       # e.g. (head, K_v steps), (body, K_u steps)
        for each local step:
            grads = executor.grad(local.point(state, phase, env), batch, phase.part)
            local.update(state, grads, phase, lr, rnd, env)
    sent = communicate(state, rnd, env)        # -> Sent(messages, realized graph or None)
    evaluate(state, rnd, env)                  # the parameters to score
    predict(x_eval, rnd, env)                  # optional: how they predict (kNN-Per)

Everything an algorithm carries from one hook or round to the next lives in :class:`State`
(so a checkpoint holds it; :mod:`topofl.engine.state`, exported here too); constants live in
the factory's closure. The engine owns the
``[n_clients, P]`` buffers of ``State``; pieces update them in place (fresh allocations of that
size cost more than the arithmetic). :mod:`topofl.engine.pieces` holds the pieces algorithms
are composed of; :func:`topofl.engine.reference.run_rounds` is the obvious round driver.

Examples
--------
>>> import torch
>>> env = tf.engine.toy_services(3, 2)
>>> s = tf.engine.State(x=torch.zeros(3, 2, dtype=torch.float64))
>>> env.n, env.layout.num_params, sorted(s.tensors())
(3, 2, ['x'])
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Protocol

import numpy as np
import torch
from torch import Tensor

from topofl.engine.byzantine import Attack
from topofl.engine.clients import Clients, LocalClients
from topofl.engine.drops import Drops, LaneDrops
from topofl.engine.gossip import Mixer
from topofl.engine.layout import ParamLayout, Part
from topofl.engine.ledger import Flow
from topofl.engine.state import (
    OWN_PREFIX,
    State,
    record_replace,
    record_tensors,
    tensor_names_problem,
)
from topofl.graph import Topology

__all__ = [
    "Part",
    "State",
    "OWN_PREFIX",
    "record_tensors",
    "record_replace",
    "tensor_names_problem",
    "Phase",
    "Round",
    "Sent",
    "Services",
    "ToyServices",
    "toy_services",
    "run_ids",
    "LocalUpdate",
    "Communicate",
    "Algorithm",
    "Adjust",
]


@dataclass(frozen=True)
class Phase:
    """A block of local steps on one part of the model.

    Attributes
    ----------
    part : {"all", "body", "head"}
        Which parameters the steps train (the others are frozen).
    steps : int or None
        Number of local steps, the same for every client.
    epochs : float, tuple of float, or None
        Alternatively, local epochs: client ``i`` takes ``ceil(epochs_i * m_i / batch_size)``
        steps (``m_i`` its number of training samples; ``epochs_i`` the same for all clients or
        one value per client for computation heterogeneity, see
        ``tf.algorithms.heterogeneous_epochs``); the engine runs the largest count and
        freezes each client once its own count is reached.
    lr : float
        Learning rate of this phase (decayed per round by the algorithm's ``decay``).
    name : str
        Optional label the local-update piece may use (e.g. Ditto's ``"global"`` and
        ``"personal"`` phases train different parameter buffers).
    """

    part: Part = "all"
    steps: int | None = 1
    epochs: float | tuple[float, ...] | None = None
    lr: float = 0.1
    name: str = ""


class Round(NamedTuple):
    """What every hook knows of the current round (immutable).

    Attributes
    ----------
    t : int
        The round index, from 0.
    topology : Topology or None
        The round's graph (``None`` for algorithms that ignore the graph). With clients
        offline, an algorithm whose ``absent`` rule is ``"renormalise"`` gets the graph of the
        present clients (:func:`topofl.engine.availability.round_view`).
    online : ndarray or None
        ``(n,)`` bool: the clients online in this round (every client's entry, whichever
        process holds it); ``None`` when every client is.
    drop : Drops, LaneDrops or None
        The round's lost messages (``[network] drop > 0``; :mod:`topofl.engine.drops`),
        given to ``communicate`` only: the pieces that communicate apply it to the graph
        they mix with (:func:`~topofl.engine.drops.lossy`, by the algorithm's ``lost``
        rule). ``None``: every message arrives.
    byzantine : Attack or None
        The round's Byzantine attack (``[byzantine]``; :mod:`topofl.engine.byzantine`),
        given to ``communicate`` only: :func:`~topofl.engine.pieces.gossip` and
        :func:`~topofl.engine.pieces.robust_gossip` replace the Byzantine senders' messages
        by the attack's vectors. ``None``: every node is honest.
    """

    t: int
    topology: Topology | None = None
    online: np.ndarray | None = None
    drop: Drops | LaneDrops | None = None
    byzantine: Attack | None = None


class Sent(NamedTuple):
    """What ``communicate`` realized in a round.

    Attributes
    ----------
    messages : int
        Messages sent (with ``flows``: their number, :meth:`of` computes it).
    realized : Topology or None
        The graph the algorithm actually used, when it chooses its own (its collaboration
        graph); the engine records its edges, their weights, density, reciprocity and spectrum.
    records : Mapping or None
        Metrics the algorithm measured in this round (``name -> JSON-able value``, e.g.
        DPFL's pre-processing graph, PFedDST's peer-selection quality); the engine logs each
        one at the round's index, after the realized graph.
    flows : tuple of Flow or None
        What was sent, from whom to whom, of what size and when
        (:class:`~topofl.engine.ledger.Flow`): the engine's bytes ledger and clock read them.
        ``None`` (an algorithm that does not say): the ledger counts ``messages`` models of
        the shared part's size, with no senders, and the clock cannot time the round.
    active : ndarray or None
        ``(n,)`` bool: the clients that took part in the round (trained), when not every
        online client did (a server's sample); the clock times the others' work as 0.
    dropped : tuple of Flow or None
        The messages sent and lost (``rnd.drop``): ``flows`` then holds the delivered ones
        only. The ledger counts the lost ones as sent and dropped, the clock does not time
        them.
    """

    messages: int
    realized: Topology | None = None
    records: Mapping[str, Any] | None = None
    flows: tuple[Flow, ...] | None = None
    active: np.ndarray | None = None
    dropped: tuple[Flow, ...] | None = None

    @classmethod
    def of(cls, *flows: Flow, realized: Topology | None = None,
           records: Mapping[str, Any] | None = None, active: np.ndarray | None = None,
           dropped: tuple[Flow, ...] | None = None) -> Sent:
        """The ``Sent`` of these flows (``messages`` is their number of messages, delivered
        ones: ``dropped`` holds those sent and lost).

        Examples
        --------
        >>> from topofl.engine.ledger import Flow, graph_arcs
        >>> f = Flow("model", graph_arcs(tf.topologies.ring(3)), size=2, bits=32)
        >>> tf.engine.Sent.of(f, f).messages
        12
        """
        if dropped is None:
            return cls(int(sum(f.messages for f in flows)), realized, records, tuple(flows),
                       active)
        return cls(int(sum(f.messages for f in flows)), realized, records, tuple(flows),
                   active, tuple(dropped))


class Services(Protocol):
    """What the engine gives every hook (``env``): layout, mixer, the run's clients, facts
    about their data, and data-driven services.

    The ``[m, P]`` buffers the hooks get hold the rows of the clients this process owns
    (``env.clients.ids``; all of them in one process): other clients are reached through
    ``env.mixer`` and ``env.clients`` only. ``local_train``, ``losses`` and ``cross_losses``
    draw on the clients' data; batches are indexed by the round ``t`` and a ``stream``
    distinct from the local phases' streams, so a resumed run draws the same ones.
    """

    @property
    def layout(self) -> ParamLayout:
        """Columns of the body and the head in the ``[n, P]`` buffers."""

    @property
    def mixer(self) -> Mixer:
        """Applies ``W`` to buffers: ``env.mixer.mix_(topology, X, cols)``."""

    @property
    def n(self) -> int:
        """Number of clients of the run."""

    @property
    def clients(self) -> Clients:
        """Where the clients live: this process's rows and the sums over every client."""

    @property
    def train_sizes(self) -> Tensor | None:
        """``[m]`` number of training samples of each client held here (``None`` without
        data)."""

    @property
    def label_counts(self) -> np.ndarray | None:
        """``(n, L)`` training label counts of every client (``None`` without data)."""

    @property
    def flipped(self) -> np.ndarray | None:
        """``(n,)`` bool: the clients whose labels are permuted (``None`` without data)."""

    def local_train(self, x: Tensor, part: Part, lr: float, *, t: int, steps: int | None = None,
                    epochs: float | None = None, stream: int = 0) -> Tensor:
        """Plain SGD on ``x`` [n, P] in place on each client's training batches; losses [n]."""

    def losses(self, x: Tensor, split: str = "val", *, rows: Tensor | None = None,
               fallback: str | None = None) -> Tensor:
        """Mean loss of row ``i`` of ``x`` on client ``i``'s ``split``: ``[n]`` (with ``rows``,
        increasing row indices, those rows' alone: ``[len(rows)]``); a client without
        ``split`` samples is scored on its ``fallback`` split if one is named."""

    def accuracies(self, x: Tensor, split: str = "val") -> Tensor:
        """Accuracy of row ``i`` of ``x`` on client ``i``'s ``split``: ``[n]`` float64."""

    def cross_losses(self, x: Tensor, peers: Tensor, *, t: int, stream: int = 0) -> Tensor:
        """``[n, k]``: loss of row ``i`` of ``x`` on a training batch of client ``peers[i, j]``."""

    def features(self, x: Tensor, inputs: Tensor, *, shared_input: bool = False) -> Tensor:
        """``[n, m, d]``: the model's features before its last layer (the output of a
        :class:`~topofl.models.SplitModel`'s ``body``) with row ``i`` of ``x`` on
        ``inputs[i]`` (``[n, m, ...]``), or on the shared ``inputs`` (``[m, ...]``)."""

    def split_features(self, x: Tensor, split: str = "train") -> tuple[Tensor, Tensor, Tensor]:
        """Features of every client's own ``split`` samples under row ``i`` of ``x``:
        ``(features [n, M, d], labels [n, M], mask [n, M] bool)``, padded to the largest
        client (``mask`` marks the real samples)."""


def run_ids(env: Services) -> np.ndarray:
    """``(m,)`` int64: the id of each row's client in its run, what per-client random streams
    are indexed by (CHOCO's rand-k and QSGD draws, say).

    It is ``env.clients.ids`` (one process, or a rank's rows of a distributed run), except in
    a stacked pass (:mod:`topofl.engine.stack`), whose rows are the clients of several runs:
    there each row is named by its client's id in its own run (the services' ``run_ids``), so
    a stacked run draws what the run alone draws.

    Examples
    --------
    >>> from topofl.engine.protocol import run_ids
    >>> run_ids(tf.engine.toy_services(3)).tolist()
    [0, 1, 2]
    """
    ids = getattr(env, "run_ids", None)
    out: np.ndarray = env.clients.ids if ids is None else ids
    return out


@dataclass
class ToyServices:
    """:class:`Services` without data, for driving pieces by hand (tests, docs).

    The data-driven services raise a ``ValueError`` that says what is missing.
    """

    layout: ParamLayout
    mixer: Mixer
    n: int
    train_sizes: Tensor | None = None
    label_counts: np.ndarray | None = None
    flipped: np.ndarray | None = None
    clients: Clients = field(init=False)

    def __post_init__(self) -> None:
        self.clients = LocalClients(self.n)

    def _no_data(self, what: str) -> ValueError:
        return ValueError(
            f"{what} needs the clients' data: these services have none (toy_services); run the "
            "algorithm through topofl.run or topofl.engine.run"
        )

    def local_train(self, x: Tensor, part: Part, lr: float, *, t: int, steps: int | None = None,
                    epochs: float | None = None, stream: int = 0) -> Tensor:
        """Not available without data (raises)."""
        raise self._no_data("local_train")

    def losses(self, x: Tensor, split: str = "val", *, rows: Tensor | None = None,
               fallback: str | None = None) -> Tensor:
        """Not available without data (raises)."""
        raise self._no_data("losses")

    def accuracies(self, x: Tensor, split: str = "val") -> Tensor:
        """Not available without data (raises)."""
        raise self._no_data("accuracies")

    def cross_losses(self, x: Tensor, peers: Tensor, *, t: int, stream: int = 0) -> Tensor:
        """Not available without data (raises)."""
        raise self._no_data("cross_losses")

    def features(self, x: Tensor, inputs: Tensor, *, shared_input: bool = False) -> Tensor:
        """Not available without a model (raises)."""
        raise self._no_data("features")

    def split_features(self, x: Tensor, split: str = "train") -> tuple[Tensor, Tensor, Tensor]:
        """Not available without data (raises)."""
        raise self._no_data("split_features")


def toy_services(n: int, p: int = 1, *, layout: ParamLayout | None = None,
                 dtype: torch.dtype = torch.float64,
                 train_sizes: Tensor | None = None, label_counts: np.ndarray | None = None,
                 flipped: np.ndarray | None = None) -> ToyServices:
    """Services for driving an algorithm by hand on ``[n, p]`` parameters (tests, docs).

    The default layout has one parameter ``"x"`` of ``p`` entries (all body, no head); the mixer
    works on CPU in ``dtype``; every client is in this process (:class:`LocalClients`).

    Examples
    --------
    >>> env = tf.engine.toy_services(3, 2)
    >>> env.n, env.layout.num_params, env.layout.has_split
    (3, 2, False)
    """
    if layout is None:
        layout = ParamLayout(("x",), (torch.Size([p]),), (0,), p, p, ())
    return ToyServices(layout=layout, mixer=Mixer(torch.device("cpu"), dtype), n=int(n),
                       train_sizes=train_sizes, label_counts=label_counts, flipped=flipped)


Kernel = Callable[[Any, State, Tensor, Tensor, Phase, Tensor], Tensor]
#: ``adjust(inputs, logits, shared_input) -> scores``: see ``Algorithm.predict``; a hook that
#: also takes the keyword ``rows`` (``[k]`` int64, the clients its inputs and logits are the
#: rows of; ``None``: every client) lets the evaluation score only the clients with a sample in
#: a padded batch (:func:`topofl.engine.scoring.score_chunks`)
Adjust = Callable[[Tensor, Tensor, bool], Tensor]


class LocalUpdate(Protocol):
    """The local-update piece (``Algorithm.local``): where a client's gradients are taken and
    how they are applied, one local step at a time.

    The engine calls, in every local step of every phase of a round (all clients at once)::

        point = local.point(state, phase, env)           # [n, P]
        grads = gradient of each client's loss at point  # [n, P], on its own mini-batch
        local.update(state, grads, phase, lr, rnd, env)  # in place

    Subclass it (``class Mine(tf.engine.LocalUpdate)``) to inherit the defaults of the optional
    members: then :meth:`update` is all a simple method writes (a subclass without it cannot
    be instantiated, and the error names the class and ``update``). A class of your own that
    does not subclass it needs :meth:`point` and :meth:`update`; the engine reads the optional
    members with the defaults below when they are missing, and
    :func:`topofl.engine.check_algorithm` (called by ``topofl.run`` when it builds the
    algorithm) names a missing required member and the class.

    Members
    -------
    point(state, phase, env) -> Tensor
        Optional, default ``state.x``. ``[n, P]``: where the phase's gradients are taken
        (push-sum takes them at the de-biased ``x / w``). Called before every local step.
    update(state, grads, phase, lr, rnd, env) -> None
        Required. Apply the gradients ``grads`` (``[n, P]``, the gradient at :meth:`point`
        on every column; the columns outside ``env.layout.cols(phase.part)`` are to be left
        alone, and ``grads`` may be overwritten) with the per-client learning rates ``lr``
        (``[n]``: the phase's rate times ``decay**t``; ``0`` for a client that has finished
        its own number of local steps, which must then not move) to ``state``, in place.
        Called after every local step's gradients.
    init_(state, env) -> None
        Optional, default nothing. Add the buffers this piece needs (e.g. momentum) to a fresh
        state; :func:`topofl.engine.pieces.compose_init` calls it when ``Algorithm.init``
        is built from the pieces.
    rowwise : bool
        Optional, default ``False``. ``True`` when :meth:`update` changes each client's row
        from that row alone (no mixing of clients): the engine may then apply it block by
        block of clients, ``update(state.rows(c), grads[c], phase, lr[c], rnd, env)`` (see
        :class:`topofl.engine.local.LocalStepper`; the numbers are the same). Read once per run.
    fused(executor) -> Kernel or None
        Optional, default ``None``: a method returning a kernel or ``None``, or the attribute
        ``fused = None``. A kernel ``kernel(executor, state, x, y, phase, lr) -> losses [n]``
        computes the same numbers as ``point``, the gradient and ``update`` in one executor
        pass, without a gradient buffer. Read once per run.
    take_gradient(executor, point, (x, y), phase, out, rnd, step, env, first) -> losses
        Optional, default none. The gradients the step applies, taken the piece's own way
        into ``out`` (``[m, P]``) in place of the executor's mean gradient (DP-SGD's clipped
        and noised per-sample gradients, :class:`~topofl.engine.pieces.dpsgd.DPSGD`;
        ``step`` the round's local step, ``first`` the block's first row); a piece with it
        is never fused and never stepped on few rows. Read once per run.
    moving(rnd, env) -> ndarray or None
        Optional, default ``None`` (every row may move). The rows (sorted int64 indices into
        the ``n`` rows) that the step of round ``rnd.t`` can move, when they are few: every
        other row's learning rate is then ``0`` for this piece whatever ``lr`` says. The
        engine then takes the gradients of these rows only (the losses of every row still,
        from the same forward pass) and calls ``update_rows`` instead of :meth:`update`
        (the same numbers; :func:`topofl.algorithms.teleport`'s ``k`` active rows of ``n``).
        Called before every local step that is neither fused nor streamed, on an executor
        with ``losses`` (both of topofl's); with more than half the rows, the engine takes
        the full step (:meth:`update`), which is then cheaper.
    skips_idle : bool
        Optional, default ``False``. ``True`` when :meth:`update` reads a row's gradient
        only to move that row, so that the gradient of a row whose rate is ``0`` is never
        needed. Where few rows have a rate (clients past their own number of steps), the
        engine may then take the gradients of the others only, on a copy of their rows that
        gives the same numbers (``BatchedExecutor.residue_period``), the losses of every row
        still (from the executor's forward pass); the gradients of the rows at rate ``0``
        then hold anything. Read once per run.
    rates(state, lr, rnd, env) -> Tensor
        Optional, read with ``skips_idle`` only. The ``[n]`` rates :meth:`update` applies
        given ``lr`` (``lr`` times its own mask: :class:`~topofl.engine.pieces.Sampled`'s
        non-participants at 0), so that the engine also leaves out the gradients of the
        rows this piece will not move. Default: ``lr``.
    update_rows(state, grads, rows, phase, lr, rnd, env) -> None
        Required with ``moving``. :meth:`update` on the rows ``rows`` (an int64 tensor)
        only: their gradients are the rows ``rows`` of ``grads`` (``[n, P]``; its other rows
        hold anything), ``lr`` the ``[n]`` rates.

    Examples
    --------
    Plain SGD written by hand: only ``update``.

    >>> import torch
    >>> class PlainSGD(tf.engine.LocalUpdate):
    ...     def update(self, state, grads, phase, lr, rnd, env):
    ...         cols = env.layout.cols(phase.part)
    ...         state.x[:, cols] -= lr.unsqueeze(1) * grads[:, cols]
    >>> env = tf.engine.toy_services(2)
    >>> s = tf.engine.State(x=torch.ones(2, 1, dtype=torch.float64))
    >>> PlainSGD().update(s, s.x.clone(), tf.engine.Phase(), torch.tensor([0.5, 0.0],
    ...     dtype=torch.float64), tf.engine.Round(0), env)
    >>> s.x.flatten().tolist(), PlainSGD().rowwise, PlainSGD().fused(None)
    ([0.5, 1.0], False, None)
    >>> class Forgot(tf.engine.LocalUpdate):
    ...     pass
    >>> Forgot()  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    TypeError: Can't instantiate abstract class Forgot ... update...
    """

    @property
    def rowwise(self) -> bool:
        """Whether :meth:`update` changes each client's row from that row alone (default
        ``False``: the engine then never splits the step into blocks of clients)."""
        return False

    def init_(self, state: State, env: Services) -> None:
        """Add the buffers this piece needs (e.g. momentum) to a fresh state (default:
        nothing)."""
        return None  # a body: not abstract, a subclass need not define it

    def point(self, state: State, phase: Phase, env: Services) -> Tensor:
        """``[n, P]``: where the phase's gradients are taken (default ``state.x``)."""
        return state.x

    @abstractmethod
    def update(self, state: State, grads: Tensor, phase: Phase, lr: Tensor, rnd: Round,
               env: Services) -> None:
        """Apply ``grads`` [n, P] (may be overwritten) with per-client rates ``lr`` [n], in
        place, on the columns of ``phase.part``."""

    def fused(self, executor: Any) -> Kernel | None:
        """This piece's step as one executor pass without a gradient buffer, or ``None``
        (the default).

        A kernel ``kernel(executor, state, x, y, phase, lr) -> losses [n]`` computes the same
        numbers as ``point``, ``executor.grad`` and ``update`` (to rounding).
        """
        return None


class Communicate(Protocol):
    """The communication piece (``Algorithm.communicate``): what clients send each other after
    their local steps, and what that cost.

    Any callable ``communicate(state, rnd, env) -> Sent`` is one (a function, a closure such as
    :func:`topofl.engine.pieces.gossip` ``()``); subclass this for a class with state of its
    own (then :meth:`__call__` is required: a subclass without it cannot be instantiated).
    The engine calls it once per round, after the last local step and before the evaluation,
    with the round's graph in ``rnd.topology`` (``None`` when ``Algorithm.uses_topology`` is
    false). It updates ``state`` in place, reaching other clients only through ``env.mixer``
    (``env.mixer.mix_(rnd.topology, X, cols)`` is ``X[:, cols] <- W_t X[:, cols]``) and
    ``env.clients``, and returns a :class:`Sent`: ``Sent.of(*flows)`` says what was sent
    (the bytes ledger and the clock read it), or ``Sent(messages)`` a bare count.

    Members
    -------
    __call__(state, rnd, env) -> Sent
        Required.
    init_(state, env) -> None
        Optional, default nothing: the buffers this piece needs on a fresh state, for
        :func:`topofl.engine.pieces.compose_init`.

    Examples
    --------
    Gossip of the parameters and of a second buffer, counted as two models per arc:

    >>> import torch
    >>> from topofl.engine.ledger import Flow, graph_arcs
    >>> class TwoBuffers(tf.engine.Communicate):
    ...     def __call__(self, state, rnd, env):
    ...         cols = env.layout.cols("all")
    ...         env.mixer.mix_(rnd.topology, state.x, cols)
    ...         env.mixer.mix_(rnd.topology, state.momentum, cols)
    ...         f = Flow("model", graph_arcs(rnd.topology), size=env.layout.num_params, bits=64)
    ...         return tf.engine.Sent.of(f, f)
    >>> env = tf.engine.toy_services(3)
    >>> s = tf.engine.State(x=torch.tensor([[0.0], [3.0], [6.0]], dtype=torch.float64),
    ...                     momentum=torch.zeros(3, 1, dtype=torch.float64))
    >>> TwoBuffers()(s, tf.engine.Round(0, tf.topologies.ring(3)), env).messages
    12
    >>> s.x.flatten().tolist()
    [3.0, 3.0, 3.0]
    """

    @abstractmethod
    def __call__(self, state: State, rnd: Round, env: Services) -> Sent:
        """Communicate in place; what was sent."""

    def init_(self, state: State, env: Services) -> None:
        """Add the buffers this piece needs to a fresh state (default: nothing)."""
        return None  # a body: not abstract, a subclass need not define it


def _noop(state: State, rnd: Round, env: Services) -> None:
    """The default ``round_start``: nothing."""


def parameters(state: State, rnd: Round, env: Services) -> Tensor:
    """The evaluate piece of most algorithms: the parameters ``state.x`` themselves."""
    return state.x


class Algorithm(NamedTuple):
    """A decentralized algorithm as a tuple of pieces (see the module docstring).

    Build one with the pieces of :mod:`topofl.engine.pieces` or your own (subclasses of
    :class:`LocalUpdate` and :class:`Communicate`, any callables for the hooks), return it
    from a factory and register the factory
    (:func:`topofl.algorithms.register_algorithm`) so a config or ``topofl.run`` can name it.
    The first six fields are required; the others have the defaults shown.
    :func:`topofl.engine.check_algorithm` checks every field (``topofl.run`` calls it when it
    builds the algorithm, before any data is read) and names the one that is wrong.

    Attributes
    ----------
    name : str
        The algorithm's name (the records' run id starts with it).
    hparams : Mapping
        Every hyper-parameter, recorded in the run config.
    phases : tuple of Phase
        The blocks of local steps of a round, in order (at least one): which part of the
        model each trains, how many steps, at which learning rate.
    init : ``(x0 [n, P], env) -> State``
        Called once when the run starts, with the initial parameters (the same model on
        every client; on resume the checkpoint's tensors are then loaded into its buffers):
        the state with every buffer the algorithm keeps (:class:`State`: ``x``, ``momentum``,
        ``weight``, and its own typed record in ``own``).
    local : LocalUpdate
        The local-update piece: ``point`` and ``update`` at every local step (see
        :class:`LocalUpdate` for its optional members and their defaults).
    communicate : ``(state, rnd, env) -> Sent``
        Called once per round after the local steps (:class:`Communicate`).
    evaluate : ``(state, rnd, env) -> Tensor [n, P]``, default the parameters ``state.x``
        Called at every evaluation (after ``communicate``, every ``eval_every`` rounds): the
        parameters to score (push-sum's de-biased ``x / w``; a personalized model).
    round_start : ``(state, rnd, env) -> None``, default nothing
        Called at the start of every round, before the local steps.
    requires : str or None, default "doubly"
        Stochasticity ``W_t`` must have: ``"doubly"``, ``"column"``, ``"row"`` or ``None``
        (checked on every graph of the run).
    shared : {"all", "body"}, default "all"
        What is communicated (personalized algorithms keep the head); the ledger's model
        size and the consensus distance read it.
    decay : float, default 1
        Learning-rate factor per round: ``lr_t = lr * decay**t``.
    uses_topology : bool, default True
        False for algorithms that ignore the graph (local training, FedAvg): they are run
        with ``topology=None`` (``topofl.run`` warns when it is given one).
    absent : {"renormalise", "lose", "server", "stale", "refuse"}, default "renormalise"
        What the algorithm does with a client absent from a round
        (:data:`topofl.engine.availability.ABSENT_RULES`): ``"renormalise"`` (the round's
        graph without it, weights renormalised as ``requires`` says), ``"lose"`` (the round's
        graph without it, the weight given to it lost: decent-bench's combine), ``"server"``
        (a server averages over the present participants: the pieces read ``rnd.online``),
        ``"stale"`` (its state stands still; the others read its last model) or ``"refuse"``
        (the algorithm picks a round's clients itself: offline clients are refused).
    lost : {"renormalise", "mass"} or None, default None
        What the algorithm does with a message lost in the network (``[network] drop``;
        :data:`topofl.engine.drops.LOST_RULES`): ``"renormalise"`` (a receiver averages what
        arrived, its own model included), ``"mass"`` (push-sum: the mass of a lost message
        is lost with it), or ``None``: it refuses ``drop > 0``. Its ``communicate`` applies
        the rule (``rnd.drop``), as :func:`~topofl.engine.pieces.gossip` and
        :class:`~topofl.engine.pieces.PushSum` do.
    predict : ``(x_eval [n, P], rnd, env) -> adjust`` or None, default None
        How the evaluated parameters predict, when not by their model's logits alone
        (kNN-Per mixes in a nearest-neighbour classifier): called once per evaluation, it
        returns ``adjust(inputs, logits, shared_input) -> scores [n, m, C]``, which maps a
        batch's inputs (``[n, m, ...]``, or ``[m, ...]`` shared by every client) and the
        model's logits on them (``[n, m, C]``) to the scores evaluation uses instead: the
        argmax is the prediction and the cross-entropy of the scores the loss (so
        log-probabilities are right). An ``adjust`` that also takes the keyword ``rows``
        (the clients the batch's rows belong to, ``None`` for all) is called on the clients
        with a sample in each padded batch only (kNN-Per's does); one without it on every
        client's rows. ``None``: the logits.
    scored : ``(rnd, env) -> ndarray (n,) bool`` or None, default None
        Which clients hold a model the evaluation of round ``rnd.t`` scores, when not all
        of them do (Teleportation: only the ``k`` rows that hold its ``k`` models, the
        others hold none): called at every evaluation with every client's entry (whichever
        process holds it), it restricts the records' statistics over clients (``test_acc_*``,
        ``test_loss``, ``global_acc_*``, ``global_loss``, ``consensus_distance``) to those
        clients, and the per-client ``test_acc`` of the others is NaN. ``None``: every client.
    stacks : bool or str, default False
        Whether several runs of the algorithm may run as one stacked pass
        (:mod:`topofl.engine.stack`): ``True`` when its pieces change each client's row from
        that row alone or through the mixer (block-diagonal over the runs), draw no data
        outside the local phases, draw per-client random numbers by the client's id in its run
        (:func:`run_ids`), evaluate ``state.x`` (or a row-wise function of the state) and say
        what they send (``Sent.flows``). ``False``, or a string saying why not (a factory
        whose hyper-parameters forbid it: a sample drawn among all the rows of the pass), runs
        each run alone.
    byzantine : bool, default False
        Whether its ``communicate`` sends models on the graph's arcs through
        :func:`~topofl.engine.pieces.gossip` or :func:`~topofl.engine.pieces.robust_gossip`,
        which apply a ``[byzantine]`` attack (``rnd.byzantine``); ``False``: it refuses
        ``[byzantine]``.
    clocked : bool or str, default True
        Whether the ``[network]`` clock (:mod:`topofl.engine.clock`) can time its rounds as
        synchronous rounds from what they send (``Sent.flows``). ``True``, or a string saying
        why not (an algorithm that keeps a virtual time of its own: AD-PSGD's event time),
        with which a run under ``[network]`` is refused.
    idle : ``rounds -> str or None``, or None, default None
        Why a run of ``rounds`` rounds (``>= 1``) would do nothing at all under the
        algorithm's own settings (no client trains, no message is sent: AD-PSGD's clients
        all finish their first computation after the run's virtual time), or ``None`` when
        it would do something. ``topofl.run`` refuses such a run with that reason before it
        reads any data (:func:`~topofl.engine.extend.check_idle`). ``None``: any number of
        rounds does something. (A run that did nothing in any of its rounds, as its
        ``Sent.messages`` and ``Sent.active`` say, ends with a ``UserWarning``.)

    Examples
    --------
    D-SGD from the pieces: local SGD, then gossip.

    >>> from topofl.engine import pieces
    >>> sgd = pieces.SGD()
    >>> algo = tf.engine.Algorithm("mine", {"lr": 0.1}, (tf.engine.Phase(lr=0.1),),
    ...                            pieces.compose_init(sgd), sgd, pieces.gossip())
    >>> tf.engine.check_algorithm(algo).requires
    'doubly'
    """

    name: str
    hparams: Mapping[str, Any]
    phases: tuple[Phase, ...]
    init: Callable[[Tensor, Services], State]
    local: LocalUpdate
    communicate: Callable[[State, Round, Services], Sent]
    evaluate: Callable[[State, Round, Services], Tensor] = parameters
    round_start: Callable[[State, Round, Services], None] = _noop
    requires: str | None = "doubly"
    shared: Part = "all"
    decay: float = 1.0
    uses_topology: bool = True
    predict: Callable[[Tensor, Round, Services], Adjust] | None = None
    absent: str = "renormalise"
    lost: str | None = None
    scored: Callable[[Round, Services], np.ndarray] | None = None
    stacks: bool | str = False
    byzantine: bool = False
    clocked: bool | str = True
    idle: Callable[[int], str | None] | None = None

    def point(self, state: State, phase: Phase, env: Services) -> Tensor:
        """``local.point``: where the phase's gradients are taken."""
        return self.local.point(state, phase, env)

    def update(self, state: State, grads: Tensor, phase: Phase, lr: Tensor, rnd: Round,
               env: Services) -> None:
        """``local.update``: one local step."""
        self.local.update(state, grads, phase, lr, rnd, env)
