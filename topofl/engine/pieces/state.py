"""What pieces keep in a state and the helpers that build and reset it: the records of
:class:`~topofl.engine.pieces.PushSum`, :class:`~topofl.engine.pieces.Proximal` and
:class:`~topofl.engine.pieces.FromStart`,
:func:`hold` (a piece's record into ``State.own``), :func:`compose_init` (a state with every
piece's buffers), the round hooks :func:`restart_momentum` and :func:`no_round_start`, and
:func:`require_split`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from torch import Tensor

from topofl.engine.layout import ParamLayout, Part
from topofl.engine.protocol import Round, Services, State

__all__ = [
    "PushSumState",
    "ProximalState",
    "hold",
    "debias_",
    "compose_init",
    "require_split",
    "restart_momentum",
    "no_round_start",
]


@dataclass
class PushSumState:
    """The state :class:`PushSum` keeps (``State.own``; the weights are ``State.weight``).

    Attributes
    ----------
    z : Tensor
        ``[n, P]`` the de-biased point ``x / w`` (:func:`debias_`).
    inflight_x, inflight_w : Tensor or None
        With ``overlap``: ``[n, P]`` and ``[n]``, the mass sent in the round and received in
        the next one.
    """

    z: Tensor
    inflight_x: Tensor | None = None
    inflight_w: Tensor | None = None


@dataclass
class ProximalState:
    """The state :class:`Proximal` and :class:`FromStart` keep (``State.own``).

    Attributes
    ----------
    anchor : Tensor
        ``[n, P]`` each client's model at the start of the round, $x^t$.
    """

    anchor: Tensor


def hold(state: State, record: Any) -> None:
    """Put a piece's state record into ``state.own``; a ``ValueError`` when another piece's
    record is there already (one piece of an algorithm keeps its state in ``State.own``)."""
    if state.own is not None:
        raise ValueError(
            f"this state already holds a {type(state.own).__name__} (State.own): a "
            f"{type(record).__name__} cannot be added; compose at most one piece that keeps "
            "state of its own, or declare one record for the algorithm")
    state.own = record


def debias_(state: State, part: Part, layout: ParamLayout) -> Tensor:
    """Push-sum's de-biased point into :attr:`PushSumState.z`, returned: ``x / w`` on the
    columns of ``part``, ``x`` on the others."""
    z = state.own_as(PushSumState).z
    w = state.push_weights().unsqueeze(1)
    # In place (copy, then divide), not ``torch.div(..., out=z)``: the same elementwise
    # quotients, and on the ``meta`` device (the memory planner's count of the state) no
    # ``out=`` wrapper, whose first call imports ``torch._dynamo`` into the run's process.
    if part == "all":
        z.copy_(state.x).div_(w)
        return z
    cols = layout.cols(part)  # a slice: ``z[:, cols]`` is a view of ``z``
    z[:, cols].copy_(state.x[:, cols]).div_(w)
    other = layout.cols("head" if part == "body" else "body")
    z[:, other].copy_(state.x[:, other])
    return z


def compose_init(*pieces: Any, check: Callable[[Tensor, Services], None] | None = None
                 ) -> Callable[[Tensor, Services], State]:
    """``init(x0, env)``: a state on ``x0`` with the buffers each piece adds (``init_``)."""

    def init(x0: Tensor, env: Services) -> State:
        if check is not None:
            check(x0, env)
        state = State(x=x0)
        for p in pieces:
            p.init_(state, env)
        return state

    return init


def require_split(name: str, env: Services) -> None:
    """A ``ValueError`` unless the model splits into a non-empty body and head."""
    lay = env.layout
    if not lay.has_split:
        raise ValueError(
            f"{name} personalizes a head and shares a body, but the model's parameters do not "
            f"split into a non-empty body and head ({lay.num_body} body of {lay.num_params}); "
            "use a model with a body and a head (e.g. topofl.models.build_model('mlp', ...))"
        )


def restart_momentum(*also: Callable[[State], Tensor | None]
                     ) -> Callable[[State, Round, Services], None]:
    """``round_start`` piece: zero the momentum buffers (and those ``also`` reads from the
    state, e.g. a personal model's momentum in the algorithm's record; ``None``: none), as
    a client that builds a fresh local optimizer every round does."""

    def round_start(state: State, rnd: Round, env: Services) -> None:
        if state.momentum is not None:
            state.momentum.zero_()
        for buffer in also:
            b = buffer(state)
            if b is not None:
                b.zero_()

    return round_start


def no_round_start(state: State, rnd: Round, env: Services) -> None:
    """``round_start`` piece that does nothing."""
