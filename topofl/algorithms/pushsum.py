r"""Stochastic Gradient Push (SGP) and its overlap variant (OSGP).

Push-sum handles directed, time-varying graphs whose mixing matrices are only *column*
stochastic: every node keeps a scalar weight $w_i$ (initially 1) mixed with the same matrix as the
parameters, and evaluates gradients at the de-biased parameters $z_i = x_i / w_i$. The sum of the
weights stays $n$ and $z_i$ converges to the true average, which row-stochastic mixing misses.

References
----------
.. [1] M. Assran, N. Loizou, N. Ballas, M. Rabbat, "Stochastic Gradient Push for Distributed Deep
   Learning", ICML 2019 (SGP, Algorithm 1; OSGP, Algorithm 2 with one round of overlap).
.. [2] D. Kempe, A. Dobra, J. Gehrke, "Gossip-based computation of aggregate information",
   FOCS 2003 (push-sum).
"""

from __future__ import annotations

import torch
from torch import Tensor

from topofl.algorithms._common import check_sgd
from topofl.algorithms.base import Algorithm, Context, Phase, State, register_algorithm, sgd_step
from topofl.graph import Topology

__all__ = ["sgp", "osgp"]


def _debias(state: State, ctx: Context) -> Tensor:
    z = state.extra["z"]
    torch.div(state.x, state.push_weights().unsqueeze(1), out=z)
    return z


def _pieces(momentum: float, weight_decay: float, overlap: bool):  # type: ignore[no-untyped-def]
    def init(x0: Tensor, ctx: Context) -> State:
        n = x0.shape[0]
        st = State(
            x=x0,
            momentum=torch.zeros_like(x0) if momentum else None,
            weight=torch.ones(n, dtype=x0.dtype, device=x0.device),
            extra={"z": torch.empty_like(x0)},
        )
        if overlap:
            st.extra["inflight_x"] = torch.zeros_like(x0)
            st.extra["inflight_w"] = torch.zeros(n, dtype=x0.dtype, device=x0.device)
        return st

    def point(state: State, ctx: Context, phase: Phase | None = None) -> Tensor:
        return _debias(state, ctx)

    def update(state: State, grads: Tensor, phase: Phase, lr: Tensor, ctx: Context) -> None:
        cols = ctx.layout.cols(phase.part)
        # the gradient is taken at z = x / w and applied to the numerator x (Assran et al., l. 5)
        sgd_step(
            state.x[:, cols], grads[:, cols], lr,
            momentum_buf=None if state.momentum is None else state.momentum[:, cols],
            momentum=momentum, weight_decay=weight_decay,
            decay_point=state.extra["z"][:, cols],
        )

    def communicate(state: State, topology: Topology, t: int, ctx: Context) -> int:
        weight = state.push_weights()
        if not overlap:
            ctx.mixer.mix_(topology, state.x)
            ctx.mixer.mix_vector_(topology, weight)
            return topology.messages_per_round
        # One round of overlap: node j keeps W_jj x_j now; what it sends (W_ij x_j, i != j)
        # arrives one round later. Mass in flight is counted in neither x nor w until received.
        d = ctx.mixer.diagonal(topology)
        fx, fw = state.extra["inflight_x"], state.extra["inflight_w"]
        kept_x = state.x * d.unsqueeze(1)
        ctx.mixer.mix_(topology, state.x)          # x <- W x  (= kept + sent)
        state.x.sub_(kept_x)                       # x <- sent now
        state.x, fx_new = fx, state.x              # swap: receive last round's messages
        state.x.add_(kept_x)
        state.extra["inflight_x"] = fx_new
        kept_w = weight * d
        sent_w = weight.clone()
        ctx.mixer.mix_vector_(topology, sent_w)
        sent_w.sub_(kept_w)
        weight.copy_(kept_w + fw)
        fw.copy_(sent_w)
        return topology.messages_per_round

    return init, point, update, communicate


def _eval(state: State, ctx: Context) -> Tensor:
    return _debias(state, ctx)


def _build(name: str, overlap: bool, lr: float, momentum: float, weight_decay: float,
           local_steps: int | None, local_epochs: float | None, decay: float) -> Algorithm:
    hp = check_sgd(lr, momentum, weight_decay, decay, local_steps, local_epochs)
    lr, momentum, weight_decay, decay, steps, epochs = hp
    init, point, update, communicate = _pieces(momentum, weight_decay, overlap)
    return Algorithm(
        name=name,
        hparams=hp.as_dict(),
        phases=(Phase("all", steps, epochs, lr),),
        init=init,
        point=point,
        update=update,
        communicate=communicate,
        evaluate=_eval,
        requires="column",
        decay=decay,
        rowwise=True,
    )


@register_algorithm("sgp")
def sgp(
    lr: float = 0.1,
    *,
    momentum: float = 0.0,
    weight_decay: float = 0.0,
    local_steps: int | None = None,
    local_epochs: float | None = None,
    decay: float = 1.0,
) -> Algorithm:
    r"""Stochastic Gradient Push over column-stochastic, possibly directed time-varying ``W_t``.

    Per round: gradient at $z_i = x_i / w_i$, step on $x_i$, then $x \leftarrow W_t x$,
    $w \leftarrow W_t w$.

    Examples
    --------
    Push-sum reaches the exact average over a directed graph where row-stochastic mixing is
    biased. Client ``i`` minimises ``(x - c_i)^2 / 2`` with ``c = (0, 4, 8)``; the optimum of the
    sum is 4.

    >>> import networkx as nx, torch
    >>> G = nx.DiGraph([(0, 1), (1, 2), (2, 0), (0, 2)])
    >>> push = tf.Topology.from_networkx(G, weights="push_sum")
    >>> algo, ctx = tf.algorithms.sgp(lr=0.1), tf.algorithms.toy_context(3)
    >>> state = algo.init(torch.zeros(3, 1, dtype=torch.float64), ctx)
    >>> c = torch.tensor([[0.0], [4.0], [8.0]], dtype=torch.float64)
    >>> for t in range(400):
    ...     z = algo.point(state, ctx, algo.phases[0])
    ...     algo.update(state, z - c, algo.phases[0],
    ...                 torch.full((3,), 0.1 * 0.98**t, dtype=torch.float64), ctx)
    ...     _ = algo.communicate(state, push, t, ctx)
    >>> [round(v, 3) for v in algo.evaluate(state, ctx).flatten().tolist()]
    [4.0, 4.0, 4.0]
    >>> round(float(state.weight.sum()), 12)
    3.0
    """
    return _build("sgp", False, lr, momentum, weight_decay, local_steps, local_epochs, decay)


@register_algorithm("osgp")
def osgp(
    lr: float = 0.1,
    *,
    momentum: float = 0.0,
    weight_decay: float = 0.0,
    local_steps: int | None = None,
    local_epochs: float | None = None,
    decay: float = 1.0,
) -> Algorithm:
    r"""Overlap SGP: messages sent at round ``t`` are received at round ``t + 1``.

    A node never waits for its in-neighbours: it keeps $W_{jj} x_j$ at once and adds what it
    received from the previous round's sends. The total mass $\sum_i x_i$ plus the mass in
    flight is preserved, and so is $\sum_i w_i$ plus the weights in flight (which sum to ``n``).

    Examples
    --------
    >>> tf.algorithms.osgp(lr=0.1).requires
    'column'
    """
    return _build("osgp", True, lr, momentum, weight_decay, local_steps, local_epochs, decay)
