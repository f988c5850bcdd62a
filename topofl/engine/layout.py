"""Where every parameter of every client lives: one flat ``[n_clients, P]`` buffer.

The parameters of a model are laid out body first, head last, so that the shared part of a
personalized model is the contiguous column range ``[0, P_body)`` and the personal head is
``[P_body, P)``. Each parameter is a view ``[n_clients, *shape]`` into the buffer; the engine never
holds ``n`` copies of the module.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import torch
from torch import Tensor, nn

from topofl._utils.rng import generator_at
from topofl.models import split_parameters

__all__ = ["ParamLayout", "Part", "init_parameters"]

#: The parts of a model's parameters: all of them, the shared body, or the personal head.
Part = Literal["all", "body", "head"]



@dataclass(frozen=True)
class ParamLayout:
    """Names, shapes and column offsets of a model's parameters in the flat buffer.

    Attributes
    ----------
    names : tuple of str
        Parameter names, body first then head (each group in ``named_parameters`` order).
    shapes : tuple of torch.Size
    offsets : tuple of int
        First column of each parameter.
    num_body : int
        ``P_body``: number of scalar body parameters (columns ``[0, P_body)``).
    num_params : int
        ``P``: total number of scalar parameters.
    head_names : tuple of str
        Names of the head parameters (empty when the model has no head/body split).

    Examples
    --------
    >>> from torch import nn
    >>> m = nn.Sequential(nn.Linear(3, 4), nn.Linear(4, 2))
    >>> lay = tf.engine.ParamLayout.from_model(m, head=["1.weight", "1.bias"])
    >>> lay.num_params, lay.num_body, lay.cols("head")
    (26, 16, slice(16, 26, None))
    """

    names: tuple[str, ...]
    shapes: tuple[torch.Size, ...]
    offsets: tuple[int, ...]
    num_body: int
    num_params: int
    head_names: tuple[str, ...]

    @classmethod
    def from_model(cls, model: nn.Module, head: Sequence[str] | None = None) -> ParamLayout:
        """Build the layout of ``model``.

        Parameters
        ----------
        model : torch.nn.Module
        head : sequence of str, optional
            Names of the head parameters. By default they are found with
            :func:`topofl.models.split_parameters` (the ``head`` submodule of topofl models);
            a model without a split gets an empty head (everything is body).
        """
        params = dict(model.named_parameters())
        if not params:
            raise ValueError("model has no parameters to train")
        if head is None:
            try:
                _, head_list = split_parameters(model)
            except ValueError:
                head_list = []
        else:
            head_list = list(head)
        unknown = [h for h in head_list if h not in params]
        if unknown:
            raise ValueError(
                f"head names {unknown} are not parameters of the model; have {list(params)}"
            )
        body_list = [k for k in params if k not in head_list]
        head_ordered = [k for k in params if k in head_list]
        names = tuple(body_list + head_ordered)
        shapes = tuple(params[k].shape for k in names)
        offsets = []
        off = 0
        for s in shapes:
            offsets.append(off)
            off += int(torch.Size(s).numel())
        num_body = sum(int(params[k].numel()) for k in body_list)
        return cls(names, shapes, tuple(offsets), num_body, off, tuple(head_ordered))

    @property
    def has_split(self) -> bool:
        """True iff both the body and the head are non-empty."""
        return 0 < self.num_body < self.num_params

    def cols(self, part: Part) -> slice:
        """Column range of ``"all"``, ``"body"`` or ``"head"``."""
        if part == "all":
            return slice(0, self.num_params)
        if part == "body":
            return slice(0, self.num_body)
        if part == "head":
            return slice(self.num_body, self.num_params)
        raise ValueError(f"part must be one of ['all', 'body', 'head'], got {part!r}")

    def names_of(self, part: Part) -> tuple[str, ...]:
        """Parameter names in ``part``."""
        if part == "all":
            return self.names
        heads = set(self.head_names)
        if part == "head":
            return tuple(k for k in self.names if k in heads)
        if part == "body":
            return tuple(k for k in self.names if k not in heads)
        raise ValueError(f"part must be one of ['all', 'body', 'head'], got {part!r}")

    def views(self, flat: Tensor) -> dict[str, Tensor]:
        """Views ``[n_clients, *shape]`` of every parameter into ``flat`` (``[n_clients, P]``)."""
        if flat.dim() != 2 or flat.shape[1] != self.num_params:
            raise ValueError(
                f"flat must have shape [n_clients, {self.num_params}], got {tuple(flat.shape)}"
            )
        out = {}
        for name, shape, off in zip(self.names, self.shapes, self.offsets):
            k = int(torch.Size(shape).numel())
            block = flat[:, off : off + k]
            out[name] = block.view(flat.shape[0], *shape) if len(shape) else flat[:, off]
        return out

    def flatten(self, params: dict[str, Tensor], out: Tensor | None = None) -> Tensor:
        """Stack per-parameter tensors ``[n, *shape]`` (or ``[*shape]``) into a flat buffer."""
        first = params[self.names[0]]
        lead = first.shape[: first.dim() - len(self.shapes[0])]
        n = int(lead[0]) if len(lead) else 1
        if out is None:
            out = torch.empty(n, self.num_params, dtype=first.dtype, device=first.device)
        views = self.views(out)
        for k in self.names:
            views[k].copy_(params[k].reshape(views[k].shape) if not len(lead) else params[k])
        return out


def init_parameters(
    model: nn.Module, layout: ParamLayout, n: int, *, seed: int, same: bool,
    device: torch.device, dtype: torch.dtype, rows: Sequence[int] | np.ndarray | None = None,
) -> Tensor:
    """Initial ``[n, P]`` parameters (or their rows ``rows``).

    ``same=True``: every client starts from the model's current parameters (build the model
    with :func:`topofl.models.build_model` and a seed to make them reproducible, or load
    pretrained weights into it). ``same=False``: client ``i`` re-initialises the model with its
    modules' ``reset_parameters`` under torch's RNG seeded from ``(seed, i)`` inside
    ``torch.random.fork_rng``, so the caller's global RNG state is restored afterwards.
    ``rows`` (client ids) builds only those clients' rows, in that order, without the
    others: a process that holds some of the clients (``env.clients.ids``).

    Examples
    --------
    >>> import numpy as np, torch
    >>> model = tf.models.build_model("mlp", (4,), 3, seed=0, hidden=(2,))
    >>> layout = tf.engine.ParamLayout.from_model(model)
    >>> kw = dict(seed=0, same=False, device=torch.device("cpu"), dtype=torch.float64)
    >>> whole = tf.engine.layout.init_parameters(model, layout, 5, **kw)
    >>> part = tf.engine.layout.init_parameters(model, layout, 5, rows=np.array([1, 4]), **kw)
    >>> bool(torch.equal(part, whole[[1, 4]]))
    True
    """
    ids = range(n) if rows is None else [int(i) for i in rows]
    flat = torch.empty(len(ids), layout.num_params, dtype=dtype, device=device)
    views = layout.views(flat)
    if same:
        params = dict(model.named_parameters())
        for k in layout.names:
            views[k].copy_(params[k].detach().to(device=device, dtype=dtype).expand_as(views[k]))
        return flat
    template = copy.deepcopy(model).to("cpu")
    for r, i in enumerate(ids):
        s = int(generator_at(seed, 0xC11E, i).integers(0, 2**63 - 1))
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(s)
            for m in template.modules():
                reset = getattr(m, "reset_parameters", None)
                if callable(reset):
                    reset()
        params = dict(template.named_parameters())
        for k in layout.names:
            views[k][r].copy_(params[k].detach())
    return flat
