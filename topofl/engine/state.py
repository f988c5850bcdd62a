"""The state of an algorithm's clients: :class:`State`, the engine-owned ``[n, P]`` buffers
(parameters, momentum, push-sum weights) and the algorithm's own typed record beside them.

An algorithm declares what it keeps between hooks and rounds as a typed record (a dataclass or
``NamedTuple`` of tensors, as optax gives each transformation its state type) and stores it in
``State.own``; :func:`record_tensors` and :func:`record_replace` read and copy such a record, and a
checkpoint names its tensors ``extra.<field>`` (:data:`OWN_PREFIX`). Every tensor with a leading
client dimension holds one row per client, so :meth:`State.rows` is the state of a block of
clients (views). The protocol the state is handed through is :mod:`topofl.engine.protocol`.

Examples
--------
>>> import torch
>>> s = tf.engine.State(x=torch.zeros(3, 2, dtype=torch.float64))
>>> sorted(s.tensors()), s.rows(slice(0, 2)).x.shape
(['x'], torch.Size([2, 2]))
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from torch import Tensor

__all__ = ["State", "OWN_PREFIX", "record_tensors", "record_replace", "tensor_names_problem"]


#: How a checkpoint names the tensors of an algorithm's own record: ``extra.<field>`` (the
#: names of the string-keyed layout the records replaced, so its checkpoints still read).
OWN_PREFIX = "extra."

R = TypeVar("R")


def _record_names(record: Any) -> tuple[str, ...]:
    if dataclasses.is_dataclass(record) and not isinstance(record, type):
        return tuple(f.name for f in dataclasses.fields(record))
    if isinstance(record, tuple) and hasattr(record, "_fields"):
        return tuple(record._fields)
    raise TypeError(f"an algorithm's state record must be a dataclass or NamedTuple of tensors, "
                    f"got {type(record).__name__}")


def record_tensors(record: Any) -> dict[str, Tensor]:
    """The tensors of a state record (a dataclass or ``NamedTuple`` whose fields hold tensors
    or ``None``), by field name; fields holding ``None`` are left out, ``None`` has none.

    Examples
    --------
    >>> import torch
    >>> from typing import NamedTuple
    >>> from topofl.engine.state import record_tensors
    >>> class Mine(NamedTuple):
    ...     a: torch.Tensor
    ...     b: torch.Tensor | None = None
    >>> record_tensors(Mine(torch.zeros(2))), record_tensors(None)
    ({'a': tensor([0., 0.])}, {})
    """
    if record is None:
        return {}
    out: dict[str, Tensor] = {}
    for name in _record_names(record):
        v = getattr(record, name)
        if v is None:
            continue
        if not isinstance(v, Tensor):
            raise TypeError(f"{type(record).__name__}.{name} must be a Tensor or None, got "
                            f"{type(v).__name__}")
        out[name] = v
    return out


def record_replace(record: R, changes: Mapping[str, Tensor]) -> R:
    """A copy of the state record ``record`` with the fields ``changes`` replaced (the other
    fields are the same objects)."""
    if isinstance(record, tuple) and hasattr(record, "_fields"):
        out: R = record._replace(**changes)  # type: ignore[attr-defined]  # a NamedTuple
        return out
    return dataclasses.replace(record, **changes)  # type: ignore[type-var]


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
    own : record or None
        The state of the algorithm itself, as the typed record its factory declares beside
        it (a dataclass or ``NamedTuple`` whose fields hold tensors or ``None``: OSGP's
        messages in flight, :class:`~topofl.engine.pieces.PushSumState`; DPFL's
        collaboration graph, ``DPFLState`` ...), checkpointed with the rest
        (``extra.<field>``). Read it with :meth:`own_as`, which checks its type. A field
        whose tensor has a leading client dimension holds one row per client; the others
        (scalars, flags) are shared. One piece of an algorithm keeps its state here: an
        algorithm of your own declares its record the same way (a record type may list in
        a ``RETIRED`` class attribute the field names older checkpoints of its algorithm
        hold and it no longer keeps: :meth:`upgrade` leaves them out).
    trained : Tensor or None
        ``[n, P]`` each client's model as it last trained it (its starting model before its
        first round), kept by a server method whose loss selection scores that model
        (``Sampling(selection="loss", loss_at="trained")``: decent-bench's
        ``HighLossSelection``, whose clients keep their last local model while every row of
        :attr:`x` holds the server's); ``None`` otherwise. Checkpointed as ``trained``.

    Examples
    --------
    An algorithm's record, declared beside its factory (as optax gives each transformation
    its state type):

    >>> import torch
    >>> from typing import NamedTuple
    >>> class AnchorState(NamedTuple):
    ...     anchor: torch.Tensor  # [n, P]: one row per client
    ...     step: torch.Tensor    # []: shared by every client
    >>> s = tf.engine.State(x=torch.zeros(3, 2),
    ...                     own=AnchorState(torch.ones(3, 2), torch.tensor(0)))
    >>> sorted(s.tensors())
    ['extra.anchor', 'extra.step', 'x']
    >>> part = s.rows(slice(0, 1)).own_as(AnchorState)
    >>> part.anchor.shape, part.step is s.own.step
    (torch.Size([1, 2]), True)
    """

    x: Tensor
    momentum: Tensor | None = None
    weight: Tensor | None = None
    own: Any = None
    trained: Tensor | None = None

    def own_as(self, kind: type[R]) -> R:
        """:attr:`own`, checked to be a ``kind`` (the record type of the algorithm's pieces).

        Raises
        ------
        TypeError
            When this state's record is of another type (or there is none): the state was
            not made by the algorithm reading it.

        Examples
        --------
        >>> import torch
        >>> from topofl.engine.pieces import PushSumState
        >>> s = tf.engine.State(x=torch.zeros(2, 1), own=PushSumState(z=torch.ones(2, 1)))
        >>> s.own_as(PushSumState).z.flatten().tolist()
        [1.0, 1.0]
        >>> tf.engine.State(x=torch.zeros(2, 1)).own_as(PushSumState)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        TypeError: this state's own record is None, expected a PushSumState: the state was ...
        """
        own = self.own
        if not isinstance(own, kind):
            found = "None" if own is None else f"a {type(own).__name__}"
            raise TypeError(f"this state's own record is {found}, expected a {kind.__name__}: "
                            "the state was not made by the algorithm reading it (its init)")
        return own

    def tensors(self) -> dict[str, Tensor]:
        """All tensors by name (for checkpoints): ``x``, ``momentum``, ``weight``,
        ``trained`` and the fields of :attr:`own` as ``extra.<field>``."""
        out = {"x": self.x}
        if self.momentum is not None:
            out["momentum"] = self.momentum
        if self.weight is not None:
            out["weight"] = self.weight
        if self.trained is not None:
            out["trained"] = self.trained
        out.update({OWN_PREFIX + k: v for k, v in record_tensors(self.own).items()})
        return out

    def rows(self, rows: slice) -> State:
        """The state of the clients ``rows``: views, so updating them updates this state.

        Fields of :attr:`own` without a leading client dimension (scalars, flags) are shared
        as they are.

        Examples
        --------
        >>> import torch
        >>> s = tf.engine.State(x=torch.zeros(4, 2), momentum=torch.zeros(4, 2))
        >>> s.rows(slice(1, 3)).x.add_(1.0).shape
        torch.Size([2, 2])
        >>> s.x[:, 0].tolist()
        [0.0, 1.0, 1.0, 0.0]
        """
        n = self.x.shape[0]
        own = self.own
        if own is not None:
            own = record_replace(own, {k: v[rows] for k, v in record_tensors(own).items()
                                       if v.dim() and v.shape[0] == n})
        return State(
            x=self.x[rows],
            momentum=None if self.momentum is None else self.momentum[rows],
            weight=None if self.weight is None else self.weight[rows],
            own=own,
            trained=None if self.trained is None else self.trained[rows],
        )

    def push_weights(self) -> Tensor:
        """The ``[n]`` push-sum weights; a ``ValueError`` if this state has none."""
        if self.weight is None:
            raise ValueError("this algorithm state has no push-sum weights (State.weight)")
        return self.weight

    def upgrade(self, stored: Mapping[str, Any]) -> dict[str, Any]:
        """A checkpoint's state tensors as this state names them: the tensors an older layout
        kept that the record of :attr:`own` retired (its type's ``RETIRED`` field names, e.g.
        DPFL's pre-processing flags) are left out; the others as they are.

        Examples
        --------
        >>> import torch
        >>> s = tf.engine.State(x=torch.zeros(2, 1))
        >>> sorted(s.upgrade({"x": torch.ones(2, 1)}))
        ['x']
        """
        retired = {OWN_PREFIX + k for k in getattr(type(self.own), "RETIRED", ())}
        return {k: v for k, v in stored.items() if k not in retired}

    def load_tensors(self, tensors: Mapping[str, Tensor]) -> None:
        """Copy checkpointed tensors into this state's buffers (same names and shapes; the
        names :meth:`upgrade` retires are ignored)."""
        mine, theirs = self.tensors(), self.upgrade(tensors)
        problem = tensor_names_problem(mine, theirs)
        if problem:
            raise ValueError(f"the checkpoint's state {problem}")
        for k, v in mine.items():
            if tuple(v.shape) != tuple(theirs[k].shape):
                raise ValueError(
                    f"checkpoint tensor {k!r} has shape {tuple(theirs[k].shape)}, "
                    f"expected {tuple(v.shape)}"
                )
            v.copy_(theirs[k])


def tensor_names_problem(mine: Mapping[str, Any], theirs: Mapping[str, Any]) -> str:
    """What differs between the state tensors a checkpoint holds (``theirs``) and those this
    state has (``mine``), in words; ``""`` when they are the same names.

    Examples
    --------
    >>> from topofl.engine.state import tensor_names_problem
    >>> print(tensor_names_problem({"x": 0, "extra.z": 0}, {"x": 0, "extra.w": 0}))
    lacks the tensor(s) ['extra.z'] and holds unknown tensor(s) ['extra.w'] (this algorithm's
    state has ['extra.z', 'x'])
    """
    missing, unknown = sorted(set(mine) - set(theirs)), sorted(set(theirs) - set(mine))
    if not missing and not unknown:
        return ""
    parts = ([f"lacks the tensor(s) {missing}"] if missing else []) + (
        [f"holds unknown tensor(s) {unknown}"] if unknown else [])
    return f"{' and '.join(parts)} (this algorithm's state has {sorted(mine)})"
