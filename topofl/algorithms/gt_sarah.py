r"""GT-SARAH: gradient tracking fed SARAH's recursive variance-reduced gradient estimates.

Every $q$ rounds each client takes its full local gradient; in between, its estimate is the
previous one plus a mini-batch's gradient difference between its two latest iterates (SARAH),
and gradient tracking gossips the estimates. No table of per-sample gradients is kept (GT-SAGA
keeps one), at the price of a full pass over the client's data every $q$ rounds.

References
----------
.. [1] R. Xin, U. A. Khan, S. Kar, "Fast decentralized nonconvex finite-sum optimization with
   recursive variance reduction", SIAM J. Optim. 32(1), 2022 (arXiv:2008.07428,
   Algorithm 2.1, GT-SARAH).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch
from torch import Tensor

from topofl._utils.validation import check_int
from topofl.algorithms.base import register_algorithm
from topofl.algorithms.gt_vr import (
    Estimating,
    FiniteSum,
    Holder,
    check_samples,
    described,
    drawn_loss,
    resolve,
)
from topofl.algorithms.hparams import check_decay, check_lr
from topofl.engine.ledger import Flow, dtype_bits, graph_arcs
from topofl.engine.pieces import compose_init, graph_of, hold
from topofl.engine.protocol import Algorithm, LocalUpdate, Phase, Round, Sent, Services, State

__all__ = ["gt_sarah", "GTSarahState"]


@dataclass
class GTSarahState:
    r"""The state GT-SARAH keeps besides the models (``State.own``).

    Attributes
    ----------
    y : Tensor
        ``[n, P]`` the trackers ($y^{0,1} = 0$).
    v : Tensor
        ``[n, P]`` the latest estimates $v_i$ ($v^{-1,1} = 0$).
    dv : Tensor
        ``[n, P]`` within a round, the estimate's change $v_i^{t,s} - v_i^{t-1,s}$.
    x_prev : Tensor
        ``[n, P]`` the models of the round before, $x_i^{t-1,s}$ (the inner steps' second
        point).
    rate : Tensor
        ``[n]`` the round's step $\alpha$ (its rate).
    """

    y: Tensor
    v: Tensor
    dv: Tensor
    x_prev: Tensor
    rate: Tensor


@dataclass(frozen=True, eq=False)
class _Sarah(Estimating, LocalUpdate):
    """The local piece: SARAH's estimate at $x^{t,s}$ (a full gradient every ``q`` rounds)."""

    q: int
    batch: int
    samples: Any
    seed: int
    holder: Holder = field(default_factory=Holder, compare=False, repr=False)

    def init_(self, state: State, env: Services) -> None:
        x = state.x
        self.holder.source = resolve(self.samples, self.seed, env, x, "gt_sarah")
        self.holder.taken = False
        hold(state, GTSarahState(y=torch.zeros_like(x), v=torch.zeros_like(x),
                                 dv=torch.zeros_like(x), x_prev=x.clone(),
                                 rate=x.new_zeros(x.shape[0])))


    def estimate(self, state: State, rnd: Round) -> tuple[Tensor, Tensor]:
        r"""$v_i^{t,s}$ (``[n, P]``) and the loss of the samples it read ``[n]``: the full
        gradient at an outer loop's first round, else SARAH's recursion on a batch."""
        own, src = state.own_as(GTSarahState), self.holder.source
        if src is None:  # "gradient" takes the step's gradient instead
            raise RuntimeError("the estimate is computed only with per-sample gradients")
        x = state.x
        if rnd.t % self.q == 0:  # v^{0,s} = grad f_i(x^{0,s})
            return src.every(x)
        idx = src.draw(rnd.t, 0, self.batch, replace=True, like=x)
        now, losses = src.grads(x, idx)
        before = src.grads(own.x_prev, idx)[0]
        return (now - before).mean(dim=1).add_(own.v), drawn_loss(losses, x)


    def update(self, state: State, grads: Tensor, phase: Phase, lr: Tensor, rnd: Round,
               env: Services) -> None:
        own = state.own_as(GTSarahState)
        grads = self.estimated(state, grads, rnd)
        torch.sub(grads, own.v, out=own.dv)
        own.v.copy_(grads)
        own.rate.copy_(lr)



def _communicate(state: State, rnd: Round, env: Services) -> Sent:
    """$y^{t+1} = W y^t + v^t - v^{t-1}$, then $x^{t+1} = W x^t - \\alpha y^{t+1}$."""
    topo = graph_of(rnd)
    own = state.own_as(GTSarahState)
    x = state.x
    env.mixer.mix_(topo, own.y)
    own.y.add_(own.dv)
    own.x_prev.copy_(x)
    env.mixer.mix_(topo, x)
    x.addcmul_(own.y, own.rate.unsqueeze(1), value=-1.0)
    arcs, size, bits = graph_arcs(topo), int(x.shape[1]), dtype_bits(x.dtype)
    return Sent.of(Flow("model", arcs, size, bits), Flow("tracker", arcs, size, bits))


@register_algorithm("gt_sarah")
def gt_sarah(
    lr: float = 0.1,
    *,
    inner_steps: int = 10,
    sample_batch: int = 1,
    samples: FiniteSum | str | None = None,
    draw_seed: int = 0,
    decay: float = 1.0,
) -> Algorithm:
    r"""GT-SARAH (Xin, Khan & Kar 2022): gradient tracking on SARAH's recursive estimates.

    Client $i$'s cost is $f_i = \frac{1}{m_i} \sum_{j=1}^{m_i} f_{i,j}$; $W = (w_{ir})$ is
    the doubly stochastic mixing matrix, $\alpha$ the step, $q$ the length of an outer loop
    and $B$ the batch. From $x_i^{0,1}$, $y_i^{0,1} = v_i^{-1,1} = 0$, outer loop
    $s = 1, 2, \dots$ of the paper's Algorithm 2.1 is, on every client $i$:

    * $v_i^{0,s} = \nabla f_i(x_i^{0,s})$ (the full local gradient);
    * $y_i^{1,s} = \sum_r w_{ir} y_r^{0,s} + v_i^{0,s} - v_i^{-1,s}$;
    * $x_i^{1,s} = \sum_r w_{ir} x_r^{0,s} - \alpha y_i^{1,s}$;
    * for $t = 1, \dots, q - 1$: draw $\tau_{i,l}^{t,s}$, $l = 1, \dots, B$, uniformly with
      replacement from $\{1, \dots, m_i\}$ and

      - $v_i^{t,s} = \frac1B \sum_{l=1}^B \big(\nabla f_{i,\tau_{i,l}^{t,s}}(x_i^{t,s}) -
        \nabla f_{i,\tau_{i,l}^{t,s}}(x_i^{t-1,s})\big) + v_i^{t-1,s}$;
      - $y_i^{t+1,s} = \sum_r w_{ir} y_r^{t,s} + v_i^{t,s} - v_i^{t-1,s}$;
      - $x_i^{t+1,s} = \sum_r w_{ir} x_r^{t,s} - \alpha y_i^{t+1,s}$;
    * $x_i^{0,s+1} = x_i^{q,s}$, $y_i^{0,s+1} = y_i^{q,s}$, $v_i^{-1,s+1} = v_i^{q-1,s}$.

    $\frac1n \sum_i y_i = \frac1n \sum_i v_i$ at every step (column-stochastic $W$); the
    paper shows convergence to first-order stationary points of nonconvex costs at a
    constant step. One round of a run is one gossip step $t$: round ``r`` is step
    ``r mod q`` of its outer loop, a full gradient where that is 0. With $q = 1$ every round
    takes full gradients and GT-SARAH is DIGing: with $\tilde y^t = y^{t+1}$,
    $x^{t+1} = W x^t - \alpha \tilde y^t$, $\tilde y^t = W \tilde y^{t-1} + \nabla f(x^t) -
    \nabla f(x^{t-1})$ from $\tilde y^0 = \nabla f(x^0)$, the iterates of
    :func:`~topofl.algorithms.dsgt` with ``variant="diging"``.

    Parameters
    ----------
    lr : float, default 0.1
        The step $\alpha > 0$ (``lr * decay**t`` at round ``t``).
    inner_steps : int, default 10
        The paper's $q \ge 1$: rounds per outer loop, the first of which takes the full
        gradients (decent-bench's ``num_local_steps`` $K$ is $q - 1$: one of its ``step``
        calls is $q$ rounds here).
    sample_batch : int, default 1
        $B \ge 1$, the samples of an inner step, drawn with replacement (the paper).
    samples : None, "gradient" or FiniteSum, default None
        Where the per-sample gradients come from (:mod:`topofl.algorithms.gt_vr`). With
        ``"gradient"`` each step's gradient is the client's only sample: SARAH's recursion
        gives it back exactly, $v^t = \nabla f(x^t)$, and GT-SARAH is DIGing as above
        whatever $q$ (with the engine's mini-batches: stochastic DIGing).
    draw_seed : int, default 0
        The seed of the method's index draws (:func:`~topofl.algorithms.gt_vr.draw_indices`,
        round ``t``'s call 0).
    decay : float, default 1

    Returns
    -------
    Algorithm
        One local step a round; ``requires="doubly"``; ``state.own`` is a
        :class:`GTSarahState`; refuses absent clients (``absent="refuse"``) and lost
        messages; does not stack (it reads its run's data outside the engine's batches).

    Notes
    -----
    Work: every client's full pass once per $q$ rounds (per-sample gradients, in blocks),
    $2B$ per-sample gradients in the other rounds; memory: four ``[n, P]`` buffers. Messages:
    the model and the tracker on every arc (ledger kinds ``"model"``, ``"tracker"``). decent-bench's
    ``GT_SARAH`` (``step_size`` $\alpha$, ``num_local_steps`` $q - 1$, its costs'
    ``batch_size`` $B$ as ``sample_batch``) gives these iterates to 1e-10 on its regression
    problems, its draws replayed (``tests/algorithms/test_gt_vr.py``); it draws without
    replacement (epoch by epoch), the paper and this function with replacement.

    References
    ----------
    .. [1] R. Xin, U. A. Khan, S. Kar, "Fast decentralized nonconvex finite-sum optimization
       with recursive variance reduction", SIAM J. Optim. 32(1), 2022 (arXiv:2008.07428,
       Algorithm 2.1).

    Examples
    --------
    Least squares on clients that disagree: with a constant step and one sample an inner
    step GT-SARAH reaches the minimiser of the sum.

    >>> import torch
    >>> g = torch.Generator().manual_seed(0)
    >>> A = torch.randn(4, 6, 2, generator=g, dtype=torch.float64)
    >>> b = torch.randn(4, 6, generator=g, dtype=torch.float64)
    >>> opt = torch.linalg.lstsq(A.reshape(-1, 2), b.reshape(-1, 1)).solution.flatten()
    >>> samples = tf.algorithms.gt_vr.least_squares(A, b)
    >>> algo = tf.algorithms.gt_sarah(lr=0.05, inner_steps=4, samples=samples)
    >>> x = tf.engine.run_rounds(algo, torch.zeros(4, 2, dtype=torch.float64),
    ...     tf.topologies.ring(4), lambda z, ph, rnd: z, rounds=1000).evaluated()
    >>> float((x - opt).abs().max()) < 1e-10
    True
    """
    lr = check_lr(lr)
    q = check_int(inner_steps, "inner_steps", low=1)
    batch = check_int(sample_batch, "sample_batch", low=1)
    samples = check_samples(samples, "gt_sarah")
    seed = check_int(draw_seed, "draw_seed", low=0)
    decay = check_decay(decay)
    local = _Sarah(q, batch, samples, seed)
    return Algorithm(
        name="gt_sarah",
        hparams=dict(lr=lr, inner_steps=q, sample_batch=batch, samples=described(samples),
                     draw_seed=seed, decay=decay),
        phases=(Phase("all", 1, None, lr),),
        init=compose_init(local),
        local=local,
        communicate=_communicate,
        requires="doubly",
        decay=decay,
        absent="refuse",
        stacks="GT-SARAH takes per-sample gradients of its run's own data outside the "
               "engine's batches",
    )
