"""The shape every algorithm has: a small object of pure pieces over explicit state.

An :class:`Algorithm` is a ``NamedTuple`` of functions that the engine's round loop calls in a
fixed order (see :func:`topofl.engine.run`)::

    round_start(state, t, ctx)
    for phase in phases:                   # e.g. (head, K_v steps), (body, K_u steps)
        for each local step:
            grads, loss = executor.grad(point(state, ctx, phase), batch, phase.part)
            update(state, grads, phase, lr, ctx)   # or block by block: see rowwise
    communicate(state, W_t, t, ctx)        # gossip, push-sum, exact averaging, nothing ...
    evaluate(state, ctx)                   # the parameters to score (de-biased for push-sum)

Data-driven algorithms (that choose their peers from losses, or train outside the phases) use
the services the engine puts on :class:`Context`: ``ctx.local_train``, ``ctx.losses`` and
``ctx.cross_losses``; an algorithm that builds its own communication graph stores it as
``ctx.realized`` (a :class:`~topofl.Topology`) in ``communicate`` and the engine records it.

Algorithms are built by composing these pieces (:func:`sgd_step`, :func:`clique_average_`,
gossip through ``ctx.mixer``), never by subclassing. The pieces update the engine-owned tensors
of :class:`State` in place (preallocated ``[n_clients, P]`` buffers: fresh allocations of that
size cost more than the arithmetic), and depend on nothing else.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

import torch
from torch import Tensor

from topofl.graph import Topology

if TYPE_CHECKING:  # the engine imports this module; keep the import graph acyclic
    from topofl.engine.gossip import Mixer
    from topofl.engine.layout import ParamLayout

Part = Literal["all", "body", "head"]

__all__ = [
    "State",
    "Context",
    "Phase",
    "Algorithm",
    "sgd_step",
    "clique_average_",
    "ALGORITHMS",
    "register_algorithm",
    "get_algorithm",
    "toy_context",
    "heterogeneous_epochs",
]


@dataclass
class State:
    """Per-client optimisation state; every tensor has a leading client dimension.

    Attributes
    ----------
    x : Tensor
        ``[n, P]`` parameters (for push-sum: the biased numerators).
    momentum : Tensor or None
        ``[n, P]`` momentum buffers.
    weight : Tensor or None
        ``[n]`` push-sum weights (they sum to ``n``).
    extra : dict of str to Tensor
        Algorithm-specific buffers (e.g. messages in flight for OSGP).
    """

    x: Tensor
    momentum: Tensor | None = None
    weight: Tensor | None = None
    extra: dict[str, Tensor] = field(default_factory=dict)

    def tensors(self) -> dict[str, Tensor]:
        """All tensors by name (for checkpoints)."""
        out = {"x": self.x}
        if self.momentum is not None:
            out["momentum"] = self.momentum
        if self.weight is not None:
            out["weight"] = self.weight
        out.update({f"extra.{k}": v for k, v in self.extra.items()})
        return out

    def rows(self, rows: slice) -> State:
        """The state of the clients ``rows``: views, so updating them updates this state.

        Examples
        --------
        >>> import torch
        >>> s = tf.algorithms.State(x=torch.zeros(4, 2), momentum=torch.zeros(4, 2))
        >>> s.rows(slice(1, 3)).x.add_(1.0).shape
        torch.Size([2, 2])
        >>> s.x[:, 0].tolist()
        [0.0, 1.0, 1.0, 0.0]
        """
        return State(
            x=self.x[rows],
            momentum=None if self.momentum is None else self.momentum[rows],
            weight=None if self.weight is None else self.weight[rows],
            extra={k: v[rows] for k, v in self.extra.items()},
        )

    def push_weights(self) -> Tensor:
        """The ``[n]`` push-sum weights; a ``ValueError`` if this state has none."""
        if self.weight is None:
            raise ValueError("this algorithm state has no push-sum weights (State.weight)")
        return self.weight

    def load_tensors(self, tensors: Mapping[str, Tensor]) -> None:
        """Copy checkpointed tensors into this state's buffers (same names and shapes)."""
        mine = self.tensors()
        if set(mine) != set(tensors):
            raise ValueError(
                f"checkpoint holds the state tensors {sorted(tensors)}, expected {sorted(mine)}"
            )
        for k, v in mine.items():
            if tuple(v.shape) != tuple(tensors[k].shape):
                raise ValueError(
                    f"checkpoint tensor {k!r} has shape {tuple(tensors[k].shape)}, "
                    f"expected {tuple(v.shape)}"
                )
            v.copy_(tensors[k])


@dataclass
class Context:
    """What the pieces may read and use.

    Attributes
    ----------
    layout : ParamLayout
        Columns of the body and the head in the ``[n, P]`` buffers.
    mixer : Mixer
        Applies ``W`` to buffers (``ctx.mixer.mix_(topology, X, cols)``).
    n : int
        Number of clients.
    topology : Topology or None
        The round's graph (set by the engine before ``round_start``).
    round : int
        The current round.
    realized : Topology or None
        Set by ``communicate`` to the graph an algorithm actually used (its collaboration
        graph); the engine records its edges, sparsity and symmetry, then resets it.
    local_train : callable, optional
        ``local_train(x, part, lr, *, steps=None, epochs=None, stream=0) -> loss [n]``: plain
        SGD on the ``[n, P]`` buffer ``x`` in place, on each client's own training batches
        (drawn from a stream of the round distinct from the phases'). Set by the engine.
    losses : callable, optional
        ``losses(x, split="val") -> [n]``: mean loss of row ``i`` of ``x`` on client ``i``'s
        ``split`` (``"train"``, ``"val"`` or ``"test"``). Set by the engine.
    cross_losses : callable, optional
        ``cross_losses(x, peers, *, stream=0) -> [n, k]``: loss of client ``i``'s model (row
        ``i`` of ``x``) on a training batch of client ``peers[i, j]``. Set by the engine.
    train_sizes : Tensor or None
        ``[n]`` number of training samples of each client (for data-size weighted averages).
        Set by the engine.
    extra : dict
        Scratch space of the algorithm (cached index tensors and the like).
    """

    layout: ParamLayout
    mixer: Mixer
    n: int
    topology: Topology | None = None
    round: int = 0
    realized: Topology | None = None
    local_train: Callable[..., Tensor] | None = None
    losses: Callable[..., Tensor] | None = None
    cross_losses: Callable[..., Tensor] | None = None
    train_sizes: Tensor | None = None
    extra: dict[str, Any] = field(default_factory=dict)


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
        one value per client for computation heterogeneity, see :func:`heterogeneous_epochs`);
        the engine runs the largest count and freezes each client once its own count is reached.
    lr : float
        Learning rate of this phase (decayed per round by the algorithm's ``decay``).
    name : str
        Optional label the algorithm's ``point``/``update`` may use (e.g. Ditto's
        ``"global"`` and ``"personal"`` phases train different parameter buffers).
    """

    part: Part = "all"
    steps: int | None = 1
    epochs: float | tuple[float, ...] | None = None
    lr: float = 0.1
    name: str = ""


def _noop(*args: Any) -> None:
    return None


class Algorithm(NamedTuple):
    """A decentralized algorithm as a tuple of pure pieces (see the module docstring).

    Attributes
    ----------
    name : str
    hparams : Mapping
        Every hyper-parameter, recorded in the run config.
    phases : tuple of Phase
    init : ``(x0 [n, P], ctx) -> State``
    point : ``(state, ctx, phase) -> Tensor [n, P]``, where the phase's gradients are taken.
    update : ``(state, grads [n, P], phase, lr [n], ctx) -> None``, the local step.
    communicate : ``(state, topology, t, ctx) -> int``, returns the messages sent.
    evaluate : ``(state, ctx) -> Tensor [n, P]``, the parameters to score.
    round_start : ``(state, t, ctx) -> None``.
    requires : str or None
        Stochasticity ``W_t`` must have: ``"doubly"``, ``"column"``, ``"row"`` or ``None``.
    shared : {"all", "body"}
        What is communicated (personalized algorithms keep the head).
    decay : float
        Learning-rate factor per round: ``lr_t = lr * decay**t``.
    uses_topology : bool
        False for algorithms that ignore the graph (local training, FedAvg).
    rowwise : bool
        True when ``update`` changes each client's row from that row alone (no mixing of
        clients, as in plain SGD with or without momentum; Clique Averaging is not). The engine
        may then run a local step over blocks of clients, ``update(state.rows(c),
        grads[c], phase, lr[c], ctx)``, drawing each block's batches just before its gradient
        while they are in cache (see :class:`topofl.engine.LocalStepper`).
    plain_sgd : bool
        True when ``point`` returns ``state.x`` itself and ``update`` is exactly
        ``state.x[:, cols] -= lr * grads[:, cols]`` on the phase's columns (no momentum, weight
        decay or mixing of gradients; implies ``rowwise``). An executor that can (softmax
        regression in closed form) then applies each block's gradient as it computes it,
        without a gradient buffer.
    """

    name: str
    hparams: Mapping[str, Any]
    phases: tuple[Phase, ...]
    init: Callable[[Tensor, Context], State]
    point: Callable[[State, Context, Phase], Tensor]
    update: Callable[[State, Tensor, Phase, Tensor, Context], None]
    communicate: Callable[[State, Topology, int, Context], int]
    evaluate: Callable[[State, Context], Tensor]
    round_start: Callable[[State, int, Context], None] = _noop
    requires: str | None = "doubly"
    shared: Part = "all"
    decay: float = 1.0
    uses_topology: bool = True
    rowwise: bool = False
    plain_sgd: bool = False


def sgd_step(
    x: Tensor,
    g: Tensor,
    lr: Tensor,
    *,
    momentum_buf: Tensor | None = None,
    momentum: float = 0.0,
    weight_decay: float = 0.0,
    nesterov: bool = False,
    decay_point: Tensor | None = None,
) -> None:
    r"""One fused SGD step on ``[n, p]`` column blocks, in place.

    $g \leftarrow g + \lambda\, x_{wd}$; $m \leftarrow \mu m + g$;
    $x \leftarrow x - \eta_i (g + \mu m)$ (Nesterov) or $x - \eta_i m$ (heavy ball), with
    $\eta$ the ``[n]`` per-client learning rates (0 freezes a client: neither its parameters
    nor its momentum move). ``decay_point`` is where
    weight decay is evaluated (``x`` by default; the de-biased ``z`` for push-sum). ``g`` is
    overwritten.
    """
    if weight_decay:
        g.add_(x if decay_point is None else decay_point, alpha=weight_decay)
    if momentum_buf is not None and momentum:
        if bool((lr == 0).any()):  # clients past their own step count keep their momentum
            frozen = (lr == 0).unsqueeze(1)
            momentum_buf.copy_(torch.where(frozen, momentum_buf, momentum_buf * momentum + g))
        else:
            momentum_buf.mul_(momentum).add_(g)
        step = g.add_(momentum_buf, alpha=momentum) if nesterov else momentum_buf
    else:
        step = g
    x.addcmul_(step, lr.unsqueeze(1), value=-1.0)


def clique_average_(g: Tensor, group_index: Tensor, group_sizes: Tensor) -> None:
    """In place: replace each row of ``g`` by the mean of its group's rows (Clique Averaging)."""
    sums = torch.zeros(int(group_sizes.numel()), g.shape[1], dtype=g.dtype, device=g.device)
    sums.index_add_(0, group_index, g)
    sums.div_(group_sizes.unsqueeze(1))
    torch.index_select(sums, 0, group_index, out=g)


ALGORITHMS: dict[str, Callable[..., Algorithm]] = {}


def register_algorithm(name: str) -> Callable[[Callable[..., Algorithm]], Callable[..., Algorithm]]:
    """Decorator adding an algorithm factory to :data:`ALGORITHMS`."""

    def deco(fn: Callable[..., Algorithm]) -> Callable[..., Algorithm]:
        ALGORITHMS[name] = fn
        return fn

    return deco


def get_algorithm(name: str, **hparams: Any) -> Algorithm:
    """Build a registered algorithm from its name and hyper-parameters.

    Raises
    ------
    ValueError
        For an unknown name (the message lists the known ones).
    TypeError
        For a hyper-parameter the algorithm does not take.
    """
    if name not in ALGORITHMS:
        raise ValueError(f"unknown algorithm {name!r}; known: {sorted(ALGORITHMS)}")
    return ALGORITHMS[name](**hparams)


def toy_context(n: int, p: int = 1, *, dtype: torch.dtype = torch.float64) -> Context:
    """A context for driving an algorithm by hand on ``[n, p]`` parameters (tests, docs).

    The layout has one parameter ``"x"`` of ``p`` entries (all body, no head) and the mixer
    works on CPU in ``dtype``.

    Examples
    --------
    >>> ctx = tf.algorithms.toy_context(3, 2)
    >>> ctx.n, ctx.layout.num_params
    (3, 2)
    """
    from topofl.engine.gossip import Mixer
    from topofl.engine.layout import ParamLayout

    layout = ParamLayout(("x",), (torch.Size([p]),), (0,), p, p, ())
    return Context(layout=layout, mixer=Mixer(torch.device("cpu"), dtype), n=n)


def heterogeneous_epochs(
    n: int, levels: tuple[float, ...] = (1, 2, 3, 4, 5), *, seed: int | None = None
) -> tuple[float, ...]:
    """Per-client local epochs for computation heterogeneity (DFedPGP, Table 3).

    The ``n`` clients are split into ``len(levels)`` groups of (almost) equal size; group ``g``
    does ``levels[g]`` local epochs. With ``seed`` the assignment of clients to groups is a
    random permutation, otherwise clients ``0..n/G-1`` form the first group, and so on.

    Examples
    --------
    >>> tf.algorithms.heterogeneous_epochs(7, (1, 2, 3))
    (1, 1, 1, 2, 2, 3, 3)
    >>> epochs = tf.algorithms.heterogeneous_epochs(4, (1, 5))
    >>> tf.algorithms.dsgd(local_epochs=epochs).phases[0].epochs
    (1.0, 1.0, 5.0, 5.0)
    """
    import numpy as np

    from topofl._validation import check_int

    n = check_int(n, "n", low=1)
    if not levels or any(float(v) <= 0 for v in levels):
        raise ValueError(f"levels must be non-empty positive epoch counts, got {levels!r}")
    groups = np.array_split(np.arange(n), len(levels))
    out = np.empty(n, dtype=object)
    order = np.arange(n) if seed is None else np.random.default_rng(seed).permutation(n)
    for g, members in enumerate(groups):
        out[order[members]] = levels[g]
    return tuple(out.tolist())
