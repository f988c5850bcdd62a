"""Local SGD: the fused step :func:`sgd_step`, the piece :class:`SGD`, and the local
updates that wrap another one (:class:`Proximal`; Clique Averaging and client sampling wrap it
in :mod:`~topofl.engine.pieces.cliques` and :mod:`~topofl.engine.pieces.participation`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from topofl.engine.layout import Part
from topofl.engine.pieces.state import ProximalState, PushSumState, debias_, hold
from topofl.engine.protocol import Kernel, LocalUpdate, Phase, Round, Services, State

__all__ = ["sgd_step", "SGD", "Proximal"]


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
    nor its momentum move, and its rows are neither read nor written: where some rates are 0
    the moving rows step on copies of themselves, the same numbers). ``decay_point`` is where
    weight decay is evaluated (``x`` by default; the de-biased ``z`` for push-sum). ``g`` may
    be overwritten.

    Examples
    --------
    $g = 1 + 0.5 \cdot 2 = 2$, $m = 2$, Nesterov step $2 + 0.9 \cdot 2 = 3.8$:

    >>> import torch
    >>> x, m = torch.tensor([[2.0]]), torch.zeros(1, 1)
    >>> tf.engine.pieces.sgd_step(x, torch.tensor([[1.0]]), torch.tensor([0.1]),
    ...     momentum_buf=m, momentum=0.9, weight_decay=0.5, nesterov=True)
    >>> round(float(x), 6), float(m)
    (1.62, 2.0)
    """
    idle = lr == 0
    if bool(idle.any()):
        _moving_rows_step(x, g, lr, torch.nonzero(~idle).flatten(), momentum_buf=momentum_buf,
                          momentum=momentum, weight_decay=weight_decay, nesterov=nesterov,
                          decay_point=decay_point)
        return
    if weight_decay:
        g.add_(x if decay_point is None else decay_point, alpha=weight_decay)
    if momentum_buf is not None and momentum:
        momentum_buf.mul_(momentum).add_(g)
        step = g.add_(momentum_buf, alpha=momentum) if nesterov else momentum_buf
    else:
        step = g
    x.addcmul_(step, lr.unsqueeze(1), value=-1.0)


def _moving_rows_step(x: Tensor, g: Tensor, lr: Tensor, rows: Tensor, *,
                      momentum_buf: Tensor | None, momentum: float, weight_decay: float,
                      nesterov: bool, decay_point: Tensor | None) -> None:
    """:func:`sgd_step` where some rates are 0: the step of the ``rows`` whose rate is not,
    on copies of them, written back; the other rows (clients past their own step count,
    offline or not sampled) keep their parameters and their momentum untouched.

    The arithmetic of a moving row is the element-wise arithmetic of the full step, so its
    numbers are the same (element-wise kernels give an element the same bits wherever it
    sits, ``tests/engine/test_pieces.py``); an idle row costs nothing, where the full step
    took every row through about six passes (the momentum kept by ``torch.where``) and wrote
    an idle row ``x - 0 * step``: the same value, except where the step was not finite (NaN)
    or the parameter was ``-0.0`` (``+0.0`` after a negative step)."""
    if not rows.numel():
        return

    def pick(t: Tensor | None) -> Tensor | None:
        return None if t is None else t.index_select(0, rows)

    xs, bs = x.index_select(0, rows), pick(momentum_buf)
    sgd_step(xs, g.index_select(0, rows), lr.index_select(0, rows), momentum_buf=bs,
             momentum=momentum, weight_decay=weight_decay, nesterov=nesterov,
             decay_point=pick(decay_point))
    x.index_copy_(0, rows, xs)
    if momentum_buf is not None and bs is not None:
        momentum_buf.index_copy_(0, rows, bs)


@dataclass(frozen=True)
class SGD:
    r"""Local SGD on the phase's columns: the local-update piece of most algorithms.

    Parameters
    ----------
    momentum : float, default 0
        Heavy-ball coefficient (buffers in ``state.momentum``, kept across steps; restart them
        with :func:`restart_momentum`).
    weight_decay : float, default 0
    nesterov : bool, default False
    debias : {"all", "body"} or None, default None
        Push-sum: take the gradient (and the weight decay) at the de-biased point
        $z = x / w$ on these columns and apply it to the numerators $x$ (Assran et al.,
        Algorithm 1, line 5). ``None``: at the parameters.
    """

    momentum: float = 0.0
    weight_decay: float = 0.0
    nesterov: bool = False
    debias: Part | None = None

    @property
    def rowwise(self) -> bool:
        """Each client's step reads its own row only."""
        return True

    @property
    def skips_idle(self) -> bool:
        """A row's gradient moves that row alone, and a row at rate 0 does not move: the
        engine may leave such rows' gradients out (``LocalUpdate.skips_idle``)."""
        return True

    @property
    def plain(self) -> bool:
        """``x <- x - lr * grad(x)`` exactly: no momentum, no weight decay, no de-biasing."""
        return self.debias is None and not self.momentum and not self.weight_decay

    def init_(self, state: State, env: Services) -> None:
        """Momentum buffers when there is momentum."""
        if self.momentum:
            state.momentum = torch.zeros_like(state.x)

    def point(self, state: State, phase: Phase, env: Services) -> Tensor:
        """``state.x``, or the de-biased ``z`` for push-sum."""
        return state.x if self.debias is None else debias_(state, self.debias, env.layout)

    def update(self, state: State, grads: Tensor, phase: Phase, lr: Tensor, rnd: Round,
               env: Services) -> None:
        """One SGD step on the phase's columns."""
        cols = env.layout.cols(phase.part)
        sgd_step(
            state.x[:, cols], grads[:, cols], lr,
            momentum_buf=None if state.momentum is None else state.momentum[:, cols],
            momentum=self.momentum, weight_decay=self.weight_decay, nesterov=self.nesterov,
            decay_point=(None if self.debias is None
                         else state.own_as(PushSumState).z[:, cols]),
        )

    def fused(self, executor: Any) -> Kernel | None:
        """For plain SGD and an executor that ``fuses_sgd``: :meth:`fused_step`."""
        if self.plain and getattr(executor, "fuses_sgd", False):
            return self.fused_step
        return None

    def fused_step(self, executor: Any, state: State, x: Tensor, y: Tensor, phase: Phase,
                   lr: Tensor) -> Tensor:
        """Plain SGD as one pass of ``executor.sgd_``: each block's gradient applied in cache,
        without a gradient buffer (the same numbers as ``grad`` then :meth:`update`)."""
        loss: Tensor = executor.sgd_(state.x, x, y, phase.part, lr)
        return loss


class _Wrapper:
    """A local update around another (:attr:`wrapped`), whose buffers and evaluation point it
    keeps; never fused (its update does more than the inner kernel)."""

    @property
    def wrapped(self) -> LocalUpdate:
        """The inner piece."""
        raise NotImplementedError

    def init_(self, state: State, env: Services) -> None:
        """As the inner piece."""
        self.wrapped.init_(state, env)

    def point(self, state: State, phase: Phase, env: Services) -> Tensor:
        """As the inner piece."""
        return self.wrapped.point(state, phase, env)

    def fused(self, executor: Any) -> Kernel | None:
        """Never fused."""
        return None


@dataclass(frozen=True)
class Proximal(_Wrapper):
    r"""A local update with FedProx's proximal term: the gradient of
    $F_i(x) + \frac{\mu}{2}\|x - x^t\|^2$, i.e. ``g + mu * (x - anchor)``, fed to ``inner``.

    The anchor $x^t$ is each client's model at the start of the round, kept in
    :attr:`ProximalState.anchor` (:meth:`round_start` copies it); rowwise when ``inner`` is.
    """

    inner: SGD
    mu: float

    @property
    def rowwise(self) -> bool:
        """As the inner piece (the term reads the client's own row)."""
        return self.inner.rowwise

    def init_(self, state: State, env: Services) -> None:
        """The inner piece's buffers and the anchor."""
        self.inner.init_(state, env)
        hold(state, ProximalState(anchor=state.x.clone()))

    def round_start(self, state: State, rnd: Round, env: Services) -> None:
        """Anchor the round at the models the clients hold now."""
        state.own_as(ProximalState).anchor.copy_(state.x)

    @property
    def wrapped(self) -> SGD:
        """The inner :class:`SGD`."""
        return self.inner

    @property
    def skips_idle(self) -> bool:
        """As the inner piece (the term reads the client's own row)."""
        return self.inner.skips_idle

    def update(self, state: State, grads: Tensor, phase: Phase, lr: Tensor, rnd: Round,
               env: Services) -> None:
        """``grads += mu * (x - anchor)`` on the phase's columns, then the inner step."""
        cols = env.layout.cols(phase.part)
        g = grads[:, cols]
        anchor = state.own_as(ProximalState).anchor
        g.add_(state.x[:, cols], alpha=self.mu).sub_(anchor[:, cols], alpha=self.mu)
        self.inner.update(state, grads, phase, lr, rnd, env)
