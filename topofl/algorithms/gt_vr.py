r"""Finite sums for the variance-reduced gradient-tracking methods, GT-SAGA and GT-SARAH.

Client $i$'s cost is a finite sum $f_i = \frac{1}{m_i} \sum_{j=1}^{m_i} f_{i,j}$ and both
methods (:func:`~topofl.algorithms.gt_saga`, :func:`~topofl.algorithms.gt_sarah`) take
gradients of single components $\nabla f_{i,j}$ at points of their choosing, at indices they
draw. Where those come from (the factories' ``samples``):

* ``None`` (the default), in the engine (``topofl.run``, ``topofl.engine.run``): the clients'
  training data; $\nabla f_{i,j}$ is the gradient of the model's loss on client $i$'s $j$-th
  training sample, taken by the run's executor one sample per row (as DP-SGD's per-sample
  gradients are). The engine's own mini-batches are not used (their loss is not recorded
  either: the round's ``train_loss`` is the mean loss of the samples the method drew).
* a :class:`FiniteSum`: the per-sample gradients as a function (``tf.engine.run_rounds``, or
  the engine on a problem of one's own), e.g. :func:`least_squares`; with ``draws`` it also
  says which indices each round uses (a replay of another code's draws).
* ``"gradient"``: each local step's gradient (the engine's mini-batch gradient, or
  ``run_rounds``' ``grad``) is the client's only component, $m_i = 1$: the variance reduction
  is then void and both methods are gradient tracking (each factory says in which form).

The methods' own draws are indexed, not consumed: round $t$'s ``call`` of a run draws from the
stream ``(draw_seed, STREAM, t, call)`` (:func:`draw_indices`), so a resumed run draws the same
indices.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from torch import Tensor

from topofl._utils.rng import generator_at
from topofl.engine.event_time import one_process
from topofl.engine.protocol import Phase, Round, Services, State

__all__ = ["FiniteSum", "least_squares", "draw_indices", "STREAM", "MAX_TABLE_BYTES",
           "Estimating"]

#: the tag of the methods' index streams ``(draw_seed, STREAM, t, call)``
STREAM = 8_411
#: the most bytes GT-SAGA's table of per-sample gradients may take (``n * max m_i * P``)
MAX_TABLE_BYTES = 2 << 30
#: bytes of per-sample gradients taken at once (a block of clients or of samples)
_BLOCK_BYTES = 64 << 20


@dataclass(frozen=True)
class FiniteSum:
    r"""Every client's cost as a finite sum, by its per-sample gradients.

    Parameters
    ----------
    grads : callable
        ``grads(z, idx) -> [n, B, P]``: at the points ``z`` ``[n, P]`` (row ``i`` client
        $i$'s), the gradients $\nabla f_{i, idx[i, l]}(z_i)$ of the components ``idx``
        ``[n, B]`` (int64, ``0 <= idx[i, l] < sizes[i]``).
    sizes : tuple of int
        $m_i \ge 1$, the number of components of each client.
    draws : callable, optional
        ``draws(t, call) -> [n, B]`` int64: the indices round ``t``'s ``call`` uses (GT-SAGA:
        call 0 the estimator's, call 1 the table's with ``refresh="redrawn"``; GT-SARAH: call
        0), in place of the method's own draws; ``None``: the method draws
        (:func:`draw_indices`).

    Examples
    --------
    >>> import torch
    >>> s = tf.algorithms.gt_vr.FiniteSum(lambda z, idx: z.unsqueeze(1) - idx.unsqueeze(2),
    ...                                   sizes=(3, 3))
    >>> s.grads(torch.zeros(2, 1), torch.tensor([[0], [2]])).flatten().tolist()
    [0.0, -2.0]
    >>> tf.algorithms.gt_vr.FiniteSum(lambda z, idx: z, sizes=(3, 0))
    Traceback (most recent call last):
    ...
    ValueError: every client needs at least one component: sizes[1] = 0
    """

    grads: Callable[[Tensor, Tensor], Tensor]
    sizes: tuple[int, ...]
    draws: Callable[[int, int], Tensor] | None = None

    def __post_init__(self) -> None:
        if not callable(self.grads):
            raise TypeError(f"grads must be callable (z, idx) -> [n, B, P], got "
                            f"{type(self.grads).__name__}")
        sizes = tuple(int(m) for m in self.sizes)
        for i, m in enumerate(sizes):
            if m < 1:
                raise ValueError(f"every client needs at least one component: sizes[{i}] = {m}")
        object.__setattr__(self, "sizes", sizes)


def least_squares(A: Tensor, b: Tensor, *,
                  draws: Callable[[int, int], Tensor] | None = None) -> FiniteSum:
    r"""Least squares on every client: $f_{i,j}(x) = (a_{i,j}^\top x - b_{i,j})^2 / 2$.

    $f_i = \frac{1}{2 m} \|A_i x - b_i\|^2$, decent-bench's ``LinearRegressionCost``;
    $\nabla f_{i,j}(x) = (a_{i,j}^\top x - b_{i,j})\, a_{i,j}$.

    Parameters
    ----------
    A : Tensor
        ``[n, m, d]`` the clients' samples (the same number ``m`` each).
    b : Tensor
        ``[n, m]`` their targets.
    draws : callable, optional
        As :class:`FiniteSum`'s.

    Returns
    -------
    FiniteSum

    Examples
    --------
    >>> import torch
    >>> A = torch.tensor([[[1.0], [2.0]]], dtype=torch.float64)
    >>> s = tf.algorithms.gt_vr.least_squares(A, torch.tensor([[1.0, 0.0]], dtype=torch.float64))
    >>> s.grads(torch.ones(1, 1, dtype=torch.float64), torch.tensor([[0, 1]])).flatten().tolist()
    [0.0, 4.0]
    """
    if A.dim() != 3 or b.shape != A.shape[:2]:
        raise ValueError(f"A must be [n, m, d] and b [n, m], got {tuple(A.shape)} and "
                         f"{tuple(b.shape)}")

    def grads(z: Tensor, idx: Tensor) -> Tensor:
        a = torch.gather(A, 1, idx.unsqueeze(2).expand(-1, -1, A.shape[2]))  # [n, B, d]
        r = torch.einsum("nbd,nd->nb", a, z) - torch.gather(b, 1, idx)
        return r.unsqueeze(2) * a

    return FiniteSum(grads, tuple([int(A.shape[1])] * int(A.shape[0])), draws)


def draw_indices(sizes: np.ndarray, batch: int, *, seed: int, t: int, call: int,
                 replace: bool) -> np.ndarray:
    r"""``(n, batch)`` int64: each client's indices of round ``t``'s ``call``, uniform over
    its ``sizes[i]`` components, with or without replacement within a batch.

    Drawn from the stream ``(seed, STREAM, t, call)`` for every client at once (a pure
    function of its arguments). Without replacement, each row is the first ``batch`` of a
    uniform random order of ``0 .. sizes[i] - 1`` (``batch <= min(sizes)``).

    Examples
    --------
    >>> import numpy as np
    >>> from topofl.algorithms.gt_vr import draw_indices
    >>> idx = draw_indices(np.array([3, 5]), 3, seed=0, t=4, call=0, replace=False)
    >>> [sorted(set(r)) == sorted(r) and max(r) < m for r, m in zip(idx.tolist(), (3, 5))]
    [True, True]
    >>> bool((idx == draw_indices(np.array([3, 5]), 3, seed=0, t=4, call=0,
    ...                           replace=False)).all())
    True
    """
    sizes = np.asarray(sizes, dtype=np.int64)
    rng = generator_at(seed, STREAM, t, call)
    if replace:
        u = rng.random((sizes.size, batch))
        out: np.ndarray = np.minimum((u * sizes[:, None]).astype(np.int64), sizes[:, None] - 1)
        return out
    keys = rng.random((sizes.size, int(sizes.max())))
    keys[np.arange(keys.shape[1])[None, :] >= sizes[:, None]] = np.inf
    return np.argsort(keys, axis=1, kind="stable")[:, :batch].astype(np.int64)


@dataclass
class _Source:
    """Where a run's per-sample gradients come from (built by :func:`resolve` at ``init_``):
    a :class:`FiniteSum`, or the engine's data and executor."""

    sizes: Tensor  # [n] int64
    seed: int
    given: FiniteSum | None = None
    env: Any = None  # the engine's services, with ``data`` and ``executor``
    offsets: Tensor | None = None

    @property
    def longest(self) -> int:
        """The largest client's number of components."""
        return int(self.sizes.max())

    def draw(self, t: int, call: int, batch: int, *, replace: bool, like: Tensor) -> Tensor:
        """``[n, batch]`` int64 on ``like``'s device: the indices of round ``t``'s ``call``."""
        if self.given is not None and self.given.draws is not None:
            idx = torch.as_tensor(self.given.draws(t, call), dtype=torch.int64)
            if idx.dim() != 2 or idx.shape[0] != self.sizes.numel() or bool(
                    ((idx < 0) | (idx >= self.sizes.cpu().unsqueeze(1))).any()):
                raise ValueError(f"draws({t}, {call}) must be [n, B] indices within each "
                                 f"client's sizes, got {tuple(idx.shape)}: {idx.tolist()}")
            return idx.to(like.device)
        if not replace and batch > int(self.sizes.min()):
            raise ValueError(f"sample_batch must be in [1, min m_i]=[1, {int(self.sizes.min())}] "
                             f"to draw without replacement, got {batch}")
        drawn = draw_indices(self.sizes.cpu().numpy(), batch, seed=self.seed, t=t, call=call,
                             replace=replace)
        return torch.as_tensor(drawn, device=like.device)

    def grads(self, z: Tensor, idx: Tensor) -> tuple[Tensor, Tensor | None]:
        """``([n, B, P] per-sample gradients, [n, B] their losses or None)`` at ``z``."""
        if self.given is not None:
            return self.given.grads(z, idx).to(z.dtype), None
        data, ex = self.env.data, self.env.executor
        if self.offsets is None:  # with env: set by resolve
            raise RuntimeError("the engine's data path needs the offsets resolve sets")
        n, b = idx.shape
        p = z.shape[1]
        out = torch.empty(n, b, p, dtype=z.dtype, device=z.device)
        losses = torch.empty(n, b, dtype=z.dtype, device=z.device)
        per = max(1, _BLOCK_BYTES // max(1, b * p * z.element_size()))
        for a in range(0, n, per):
            c = slice(a, min(n, a + per))
            k = c.stop - a
            xb, yb = data.take(idx[c] + self.offsets[c].unsqueeze(1))
            g = torch.zeros(k * b, p, dtype=z.dtype, device=z.device)
            loss = ex.grad(z[c].repeat_interleave(b, dim=0),
                           xb.reshape(k * b, 1, *xb.shape[2:]).to(z.dtype),
                           yb.reshape(k * b, 1, *yb.shape[2:]), "all", g)
            out[c] = g.view(k, b, p)
            losses[c] = loss.view(k, b)
        return out, losses

    def every(self, z: Tensor) -> tuple[Tensor, Tensor]:
        """Each client's full gradient $\\nabla f_i(z_i)$ ``[n, P]`` and mean loss ``[n]``
        (0 where the source gives no loss), over all its components, in blocks."""
        n, p = z.shape
        m = self.sizes.to(z.device)
        per = max(1, _BLOCK_BYTES // max(1, n * p * z.element_size()))
        total = torch.zeros(n, p, dtype=z.dtype, device=z.device)
        loss = torch.zeros(n, dtype=z.dtype, device=z.device)
        for a in range(0, self.longest, per):
            cols = torch.arange(a, min(self.longest, a + per), device=z.device)
            real = cols.unsqueeze(0) < m.unsqueeze(1)  # [n, k]
            idx = torch.minimum(cols.unsqueeze(0), (m - 1).unsqueeze(1))
            g, ls = self.grads(z, idx)
            total.add_((g * real.unsqueeze(2)).sum(dim=1))
            if ls is not None:
                loss.add_((ls * real).sum(dim=1))
        return total.div_(m.unsqueeze(1)), loss.div_(m)


@dataclass
class Holder:
    """The run's :class:`_Source` (``None``: ``samples="gradient"``) and whether the engine's
    gradient hook has taken this step's estimate; kept by the pieces (not state: rebuilt by
    ``init_`` on every run and resume)."""

    source: _Source | None = None
    taken: bool = False
    extra: dict[str, Any] = field(default_factory=dict)


def check_samples(samples: Any, name: str) -> Any:
    """``samples`` if it is ``None``, ``"gradient"`` or a :class:`FiniteSum`, else a
    ``TypeError`` naming ``name``."""
    if samples is None or isinstance(samples, FiniteSum) or (
            isinstance(samples, str) and samples == "gradient"):
        return samples
    raise TypeError(f"{name}'s samples must be None (the run's data), 'gradient' or a "
                    f"FiniteSum, got {samples!r:.60}")


def described(samples: Any) -> str:
    """How ``samples`` is recorded in a run's hyper-parameters: ``"data"``, ``"gradient"`` or
    ``"finite_sum"``."""
    if samples is None:
        return "data"
    return "gradient" if isinstance(samples, str) else "finite_sum"


def resolve(samples: Any, seed: int, env: Any, x: Tensor, name: str) -> _Source | None:
    """The run's source of per-sample gradients (see the module); ``None`` for
    ``"gradient"``."""
    n = x.shape[0]
    if isinstance(samples, str):  # "gradient" (check_samples)
        return None
    if isinstance(samples, FiniteSum):
        if len(samples.sizes) != n:
            raise ValueError(f"{name}'s samples have {len(samples.sizes)} clients, the run "
                             f"{n}")
        return _Source(torch.as_tensor(samples.sizes, dtype=torch.int64), seed, given=samples)
    if hasattr(env, "clients"):  # the engine's services: every client in this process
        one_process(env, name, "per-sample gradients (read from the clients' data where the "
                               "state is)")
    data, ex = getattr(env, "data", None), getattr(env, "executor", None)
    if data is None or ex is None or not hasattr(data, "segments_of"):
        raise ValueError(f"{name} takes per-sample gradients of its clients' data, which "
                         "these services do not hold: run it in the engine (topofl.run), or "
                         "pass samples=FiniteSum(...) or samples='gradient'")
    seg = data.segments_of("train")
    sizes = torch.tensor(np.array(seg.sizes, dtype=np.int64))
    if int(sizes.numel()) != n or int(sizes.min()) < 1:
        raise ValueError(f"{name} needs every one of the run's {n} clients to hold a "
                         f"training sample, got sizes {sizes.tolist()[:8]}")
    offsets = torch.tensor(np.array(seg.offsets, dtype=np.int64), device=x.device)
    return _Source(sizes, seed, env=env, offsets=offsets)


def take_estimate(holder: Holder, estimate: Callable[[Any, Any], tuple[Tensor, Tensor]],
                  executor: Any, point: Tensor, batch: tuple[Tensor, Tensor], out: Tensor,
                  rnd: Any) -> Tensor:
    """The pieces' gradient hook in the engine (``LocalUpdate.take_gradient``): the method's
    estimate ``estimate(state, rnd)`` into ``out``, the loss of the samples it read; with
    ``samples="gradient"`` the engine's mini-batch gradient."""
    if holder.source is None:
        loss: Tensor = executor.grad(point, batch[0].to(point.dtype), batch[1], "all", out)
        return loss
    g, losses = estimate(holder.extra["state"], rnd)
    out.copy_(g)
    holder.taken = True
    return losses


def drawn_loss(losses: Tensor | None, like: Tensor) -> Tensor:
    """``[n]``: the mean of a step's per-sample losses (``0`` where the source gives none)."""
    if losses is None:
        return torch.zeros(like.shape[0], dtype=like.dtype, device=like.device)
    return losses.mean(dim=1)


class Estimating:
    """The hooks GT-SAGA's and GT-SARAH's local pieces share (each defines ``holder`` and
    ``estimate(state, rnd) -> (estimate [n, P], loss [n])``): the engine's point and gradient
    hook, and the functional path's estimate where no hook ran."""

    holder: Holder

    def estimate(self, state: State, rnd: Round) -> tuple[Tensor, Tensor]:
        raise NotImplementedError

    def point(self, state: State, phase: Phase, env: Services) -> Tensor:
        """``state.x``; the state is kept for the gradient hook that follows (the engine
        gives the hook the point, not the state)."""
        self.holder.extra["state"] = state
        return state.x

    def take_gradient(self, executor: Any, point: Tensor, batch: tuple[Tensor, Tensor],
                      phase: Phase, out: Tensor, rnd: Round, step: int, env: Services,
                      first: int) -> Tensor:
        """The engine's gradient hook: the estimate into ``out``, the drawn samples' loss."""
        return take_estimate(self.holder, self.estimate, executor, point, batch, out, rnd)

    def estimated(self, state: State, grads: Tensor, rnd: Round) -> Tensor:
        """The step's estimate: the hook's (``grads``), else computed here (the functional
        path, where the engine calls no gradient hook)."""
        if self.holder.source is not None and not self.holder.taken:
            grads = self.estimate(state, rnd)[0]
        self.holder.taken = False
        return grads

    def fused(self, executor: Any) -> None:
        return None
