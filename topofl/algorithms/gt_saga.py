r"""GT-SAGA: gradient tracking fed SAGA's variance-reduced gradient estimates.

Each client keeps a table of the last gradient of every one of its samples; its estimate is a
sampled gradient corrected by the table (SAGA), so that its variance vanishes as the iterates
settle, and gradient tracking removes the clients' disagreement: with a constant step GT-SAGA
reaches the exact minimiser of $\sum_i f_i$ where D-SGD and stochastic gradient tracking keep
an error that the step and the gradients' variance set.

References
----------
.. [1] R. Xin, U. A. Khan, S. Kar, "Variance-reduced decentralized stochastic optimization
   with accelerated convergence", IEEE Trans. Signal Process. 68, 2020 (arXiv:1912.04230,
   Algorithm 2, GT-SAGA).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import Tensor

from topofl._utils.validation import check_choice, check_int
from topofl.algorithms.base import register_algorithm
from topofl.algorithms.gt_vr import (
    MAX_TABLE_BYTES,
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

__all__ = ["gt_saga", "GTSagaState", "REFRESH"]

#: how the table is refreshed: the sampled entries at the step's point (the paper), or a
#: second batch's at the new point (decent-bench 0.3.0)
REFRESH = ("sampled", "redrawn")


@dataclass
class GTSagaState:
    r"""The state GT-SAGA keeps besides the models (``State.own``).

    Attributes
    ----------
    y : Tensor
        ``[n, P]`` the trackers $y_i^k$ ($y^0 = 0$).
    g : Tensor
        ``[n, P]`` the last estimates $g_i^{k-1}$ ($g^{-1} = 0$).
    table : Tensor
        ``[n, M, P]`` the table of per-sample gradients $\nabla f_{i,j}(z_{i,j}^k)$, ``M``
        the largest client's number of samples (a smaller client's rows past its own hold
        anything); ``[n, 0, P]`` with ``samples="gradient"``.
    mean : Tensor
        ``[n, P]`` the table's mean over each client's own samples.
    rate : Tensor
        ``[n]`` the round's step $\alpha$ (its rate).
    """

    y: Tensor
    g: Tensor
    table: Tensor
    mean: Tensor
    rate: Tensor


@dataclass(frozen=True, eq=False)
class _Saga(Estimating, LocalUpdate):
    """The local piece: the SAGA estimate at $x^k$ updates the tracker."""

    batch: int
    refresh: str
    samples: Any
    seed: int
    holder: Holder = field(default_factory=Holder, compare=False, repr=False)

    def init_(self, state: State, env: Services) -> None:
        x = state.x
        n, p = x.shape
        src = self.holder.source = resolve(self.samples, self.seed, env, x, "gt_saga")
        self.holder.taken = False
        if src is None:
            table, mean = x.new_zeros(n, 0, p), x.new_zeros(n, p)
        else:
            m = src.longest
            need = n * m * p * x.element_size()
            if need > MAX_TABLE_BYTES:
                raise ValueError(
                    f"gt_saga keeps a table of {n} clients x {m} samples x {p} parameters "
                    f"= {need / 2**30:.2f} GiB of gradients, over the limit of "
                    f"{MAX_TABLE_BYTES / 2**30:.0f} GiB: use gt_sarah, fewer samples per "
                    "client or a smaller model")
            table = x.new_empty(n, m, p)
            for a in range(0, m, 64):  # z_{i,j}^0 = x_i^0 for every j
                cols = torch.arange(a, min(m, a + 64), device=x.device)
                idx = torch.minimum(cols.unsqueeze(0), (src.sizes.to(x.device) - 1
                                                        ).unsqueeze(1))
                table[:, a: a + cols.numel()] = src.grads(x, idx)[0]
            mean = _masked_mean(table, src.sizes.to(x.device))
        hold(state, GTSagaState(y=torch.zeros_like(x), g=torch.zeros_like(x), table=table,
                                mean=mean, rate=x.new_zeros(n)))

    def estimate(self, state: State, rnd: Round) -> tuple[Tensor, Tensor]:
        r"""$g^k$ at $x^k$ (``[n, P]``) and the drawn samples' mean loss ``[n]``; with
        ``refresh="sampled"`` the drawn entries of the table take their new gradients."""
        own, src = state.own_as(GTSagaState), self.holder.source
        if src is None:  # "gradient" takes the step's gradient instead
            raise RuntimeError("the estimate is computed only with per-sample gradients")
        x = state.x
        idx = src.draw(rnd.t, 0, self.batch, replace=False, like=x)
        new, losses = src.grads(x, idx)
        pick = idx.unsqueeze(2).expand(-1, -1, x.shape[1])
        old = torch.gather(own.table, 1, pick)
        g = new.mean(dim=1) - old.mean(dim=1) + own.mean
        if self.refresh == "sampled":  # z_{i,tau}^{k+1} = x_i^k
            _replace(own, idx, pick, new, old, src.sizes.to(x.device))
        return g, drawn_loss(losses, x)



    def update(self, state: State, grads: Tensor, phase: Phase, lr: Tensor, rnd: Round,
               env: Services) -> None:
        own = state.own_as(GTSagaState)
        grads = self.estimated(state, grads, rnd)
        own.y.add_(grads).sub_(own.g)  # y^k + g^k - g^{k-1}, mixed in communicate
        own.g.copy_(grads)
        own.rate.copy_(lr)



def _masked_mean(table: Tensor, sizes: Tensor) -> Tensor:
    """``[n, P]``: each client's mean over its own ``sizes[i]`` rows of ``table``."""
    real = torch.arange(table.shape[1], device=table.device).unsqueeze(0) < sizes.unsqueeze(1)
    return (table * real.unsqueeze(2)).sum(dim=1).div_(sizes.unsqueeze(1))


def _replace(own: GTSagaState, idx: Tensor, pick: Tensor, new: Tensor, old: Tensor,
             sizes: Tensor) -> None:
    """The table's entries ``idx`` (distinct within a row) take ``new``; its mean follows."""
    own.mean.add_((new - old).sum(dim=1).div_(sizes.unsqueeze(1)))
    own.table.scatter_(1, pick, new)


def _communicate(piece: _Saga) -> Callable[[State, Round, Services], Sent]:
    def communicate(state: State, rnd: Round, env: Services) -> Sent:
        topo = graph_of(rnd)
        own = state.own_as(GTSagaState)
        x = state.x
        env.mixer.mix_(topo, own.y)  # y^{k+1} = W (y^k + g^k - g^{k-1})
        x.addcmul_(own.y, own.rate.unsqueeze(1), value=-1.0)
        env.mixer.mix_(topo, x)  # x^{k+1} = W (x^k - alpha y^{k+1})
        src = piece.holder.source
        if piece.refresh == "redrawn" and src is not None:  # a second batch at x^{k+1}
            idx = src.draw(rnd.t, 1, piece.batch, replace=False, like=x)
            pick = idx.unsqueeze(2).expand(-1, -1, x.shape[1])
            _replace(own, idx, pick, src.grads(x, idx)[0], torch.gather(own.table, 1, pick),
                     src.sizes.to(x.device))
        arcs, size, bits = graph_arcs(topo), int(x.shape[1]), dtype_bits(x.dtype)
        return Sent.of(Flow("model", arcs, size, bits), Flow("tracker", arcs, size, bits))

    return communicate


@register_algorithm("gt_saga")
def gt_saga(
    lr: float = 0.1,
    *,
    sample_batch: int = 1,
    refresh: str = "sampled",
    samples: FiniteSum | str | None = None,
    draw_seed: int = 0,
    decay: float = 1.0,
) -> Algorithm:
    r"""GT-SAGA (Xin, Khan & Kar 2020): gradient tracking on SAGA's estimates.

    Client $i$'s cost is $f_i = \frac{1}{m_i} \sum_{j=1}^{m_i} f_{i,j}$ (its samples); $W =
    (w_{ir})$ is the doubly stochastic mixing matrix and $\alpha$ the step. From $x_i^0$,
    $y_i^0 = g_i^{-1} = 0$ and the table $z_{i,j}^0 = x_i^0$ for every $j$, iteration $k$ of
    the paper's Algorithm 2 is, on every client $i$:

    * draw $\tau_i^k$ uniformly from $\{1, \dots, m_i\}$;
    * $g_i^k = \nabla f_{i,\tau_i^k}(x_i^k) - \nabla f_{i,\tau_i^k}(z_{i,\tau_i^k}^k) +
      \frac{1}{m_i} \sum_{j=1}^{m_i} \nabla f_{i,j}(z_{i,j}^k)$;
    * $z_{i,\tau_i^k}^{k+1} = x_i^k$, the other entries kept (the table stores the
      gradients $\nabla f_{i,j}(z_{i,j}^k)$, not the points);
    * $y_i^{k+1} = \sum_r w_{ir} \big(y_r^k + g_r^k - g_r^{k-1}\big)$;
    * $x_i^{k+1} = \sum_r w_{ir} \big(x_r^k - \alpha y_r^{k+1}\big)$.

    $E[g_i^k] = \nabla f_i(x_i^k)$, and $\frac1n \sum_i y_i^{k+1} = \frac1n \sum_i g_i^k$
    (column-stochastic $W$); with a constant step the method converges linearly to the
    exact minimiser of $\sum_i f_i$ on smooth strongly convex costs (the paper's Theorem 2).
    One round of a run is one iteration $k$: a local step (the estimate) and one
    communication.

    Parameters
    ----------
    lr : float, default 0.1
        The step $\alpha > 0$ (``lr * decay**t`` at round ``t``).
    sample_batch : int, default 1
        $B \ge 1$ samples a step, distinct within a client's batch (the paper: 1): the
        estimate's terms are their means; ``<=`` the smallest client's number of samples.
    refresh : {"sampled", "redrawn"}, default "sampled"
        Which table entries a step renews: ``"sampled"``, the drawn ones with their
        gradients at $x_i^k$ (the paper; no gradient beyond the estimate's), or
        ``"redrawn"``, a second batch drawn after the communication, its entries at
        $x_i^{k+1}$ (decent-bench 0.3.0's ``GT_SAGA``: one more batch gradient a round).
    samples : None, "gradient" or FiniteSum, default None
        Where the per-sample gradients come from (:mod:`topofl.algorithms.gt_vr`): the run's
        data (the engine), a :class:`~topofl.algorithms.gt_vr.FiniteSum`, or ``"gradient"``:
        each step's gradient is the client's only sample ($m_i = 1$), and GT-SAGA is then
        gradient tracking in the adapt-then-combine form above, $g^k = \nabla f(x^k)$
        (the engine's mini-batch gradient there: stochastic gradient tracking).
    draw_seed : int, default 0
        The seed of the method's index draws (:func:`~topofl.algorithms.gt_vr.draw_indices`,
        round ``t``'s estimate call 0, ``"redrawn"``'s batch call 1).
    decay : float, default 1

    Returns
    -------
    Algorithm
        One local step a round; ``requires="doubly"``; ``state.own`` is a
        :class:`GTSagaState`; refuses absent clients (``absent="refuse"``) and lost
        messages; does not stack (it reads its run's data outside the engine's batches).

    Notes
    -----
    Memory: the table holds $n \cdot M \cdot P$ numbers ($M = \max_i m_i$, $P$ the model's
    parameters), one gradient per training sample of every client: 8 clients of 200 samples
    and a 1,210-parameter model take 7.7 MB in float32; above
    :data:`~topofl.algorithms.gt_vr.MAX_TABLE_BYTES` (2 GiB) a run is refused (GT-SARAH
    keeps no table). Work: building the table takes a gradient of every sample once; a
    round takes $B$ per-sample gradients ($2B$ with ``"redrawn"``). Messages: the model and
    the tracker on every arc, as gradient tracking's (ledger kinds ``"model"`` and
    ``"tracker"``). decent-bench's ``GT_SAGA`` (``step_size`` $\alpha$, its costs'
    ``batch_size`` $B$ as ``sample_batch``, ``refresh="redrawn"``) gives this function's
    iterates to 1e-10 on its regression problems, its index draws replayed
    (``tests/algorithms/test_gt_vr.py``).

    References
    ----------
    .. [1] R. Xin, U. A. Khan, S. Kar, "Variance-reduced decentralized stochastic
       optimization with accelerated convergence", IEEE Trans. Signal Process. 68, 2020
       (arXiv:1912.04230, Algorithm 2).

    Examples
    --------
    Client ``i`` holds the samples $(a_{ij}, b_{ij})$ and minimises their least squares; the
    clients disagree, and GT-SAGA with a constant step, one sample a step, reaches the
    minimiser of the sum exactly.

    >>> import torch
    >>> g = torch.Generator().manual_seed(0)
    >>> A = torch.randn(4, 6, 2, generator=g, dtype=torch.float64)
    >>> b = torch.randn(4, 6, generator=g, dtype=torch.float64)
    >>> opt = torch.linalg.lstsq(A.reshape(-1, 2), b.reshape(-1, 1)).solution.flatten()
    >>> algo = tf.algorithms.gt_saga(lr=0.05, samples=tf.algorithms.gt_vr.least_squares(A, b))
    >>> x = tf.engine.run_rounds(algo, torch.zeros(4, 2, dtype=torch.float64),
    ...     tf.topologies.ring(4), lambda z, ph, rnd: z, rounds=1000).evaluated()
    >>> float((x - opt).abs().max()) < 1e-10
    True
    """
    lr = check_lr(lr)
    batch = check_int(sample_batch, "sample_batch", low=1)
    refresh = check_choice(refresh, "refresh", REFRESH)
    samples = check_samples(samples, "gt_saga")
    seed = check_int(draw_seed, "draw_seed", low=0)
    decay = check_decay(decay)
    local = _Saga(batch, refresh, samples, seed)
    return Algorithm(
        name="gt_saga",
        hparams=dict(lr=lr, sample_batch=batch, refresh=refresh, samples=described(samples),
                     draw_seed=seed, decay=decay),
        phases=(Phase("all", 1, None, lr),),
        init=compose_init(local),
        local=local,
        communicate=_communicate(local),
        requires="doubly",
        decay=decay,
        absent="refuse",
        stacks="GT-SAGA takes per-sample gradients of its run's own data outside the "
               "engine's batches",
    )
