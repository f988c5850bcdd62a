"""The reference round driver: the protocol's round order, spelled out, on a given gradient.

:func:`run_rounds` calls an algorithm's pieces in the order :func:`topofl.engine.run` does
(``round_start``, the phases' local steps, ``communicate``), with gradients from a function
instead of data and an executor: no streaming, no fused kernel, a fresh gradient per step. Tests
and docs drive algorithms on toy problems with known optima through it, instead of writing the
round order again.

Examples
--------
FedAvg (exact averaging, no graph) on clients minimising ``(x - i)^2 / 2``: every model
reaches the mean of the optima, 1.5, where local training alone would stay at ``i``.

>>> import torch
>>> opt = torch.arange(4.0, dtype=torch.float64).unsqueeze(1)
>>> grad = lambda z, phase, rnd: z - opt
>>> fedavg = tf.engine.run_rounds(tf.algorithms.fedavg(lr=0.1), torch.zeros_like(opt), None,
...                               grad, rounds=200, lr=lambda rnd, phase: 0.1 * 0.97**rnd.t)
>>> [round(v, 3) for v in fedavg.evaluated().flatten().tolist()]
[1.5, 1.5, 1.5, 1.5]
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import torch
from torch import Tensor

from topofl.engine.availability import Availability, Frozen, local_rates, round_view
from topofl.engine.protocol import Algorithm, Phase, Round, Sent, Services, State, toy_services
from topofl.graph import GraphLike, Topology, as_time_varying

__all__ = ["Trace", "run_rounds"]

Grad = Callable[[Tensor, Phase, Round], Tensor]
Rate = Callable[[Round, Phase], float]


class Trace(NamedTuple):
    """What :func:`run_rounds` returns.

    Attributes
    ----------
    algorithm : Algorithm
    state : State
        The state after the last round (updated in place).
    env : Services
    last : Round
        The last round run.
    messages : list of int
        Messages sent in each round.
    realized : list of Topology or None
        The graph each round's ``communicate`` realized.
    sent : list of Sent
        What each round's ``communicate`` returned (its flows: what was sent to whom).
    """

    algorithm: Algorithm
    state: State
    env: Services
    last: Round
    messages: list[int]
    realized: list[Topology | None]
    sent: list[Sent] = []

    def evaluated(self) -> Tensor:
        """``[n, P]``: the algorithm's evaluated parameters after the last round."""
        return self.algorithm.evaluate(self.state, self.last, self.env)


def run_rounds(
    algorithm: Algorithm,
    x0: Tensor,
    topology: GraphLike | None,
    grad: Grad,
    *,
    rounds: int,
    lr: float | Rate | None = None,
    env: Services | None = None,
    state: State | None = None,
    start: int = 0,
    availability: Availability | None = None,
) -> Trace:
    """Run rounds ``start .. start + rounds - 1`` of ``algorithm`` with gradients from ``grad``.

    Parameters
    ----------
    algorithm : Algorithm
    x0 : Tensor
        ``[n, P]`` initial parameters (copied; ignored when ``state`` is given).
    topology : Topology, TimeVarying or None
        Round ``t`` uses ``topology.at(t)``.
    grad : callable
        ``grad(z, phase, rnd) -> [n, P]``: every client's gradient at the point ``z``.
    rounds : int
    lr : float or callable, optional
        The learning rate of every local step: a constant, ``lr(rnd, phase)``, or by default
        the engine's schedule ``phase.lr * algorithm.decay**t``.
    env : Services, optional
        Default: :func:`~topofl.engine.toy_services` for ``x0``'s shape and dtype.
    state : State, optional
        Continue from this state instead of ``algorithm.init(x0, env)``.
    start : int, default 0
        The first round's index.
    availability : Availability, optional
        Clients offline per round, handled as the engine does: offline clients take no
        local step, the hooks see :func:`~topofl.engine.availability.round_view`'s round,
        and under the ``"stale"`` rule their state is put back after the round.

    Returns
    -------
    Trace

    Raises
    ------
    ValueError
        For a phase given in epochs (they need the clients' data sizes: use the engine).
    """
    n, p = x0.shape
    if env is None:
        env = toy_services(n, p, dtype=x0.dtype)
    if state is None:
        state = algorithm.init(x0.clone(), env)
    tv = None if topology is None else as_time_varying(topology)
    messages: list[int] = []
    realized: list[Topology | None] = []
    sents: list[Sent] = []
    rnd = Round(start, None if tv is None else tv.at(start))
    for t in range(start, start + rounds):
        online = None if availability is None else availability.online(t, n)
        rnd = round_view(algorithm, t, None if tv is None else tv.at(t), online)
        on = None if rnd.online is None else torch.as_tensor(rnd.online, device=x0.device)
        frozen = Frozen(state, ~on) if on is not None and algorithm.absent == "stale" else None
        algorithm.round_start(state, rnd, env)
        for phase in algorithm.phases:
            if phase.steps is None:
                raise ValueError(
                    f"phase {phase.name or phase.part!r} counts local epochs; the reference "
                    "driver runs local steps only (build the algorithm with local steps)"
                )
            if lr is None:
                rate = phase.lr * algorithm.decay**t
            else:
                rate = lr(rnd, phase) if callable(lr) else float(lr)
            for _ in range(phase.steps):
                z = algorithm.local.point(state, phase, env)
                g = grad(z, phase, rnd).clone()
                lrs = local_rates(torch.full((n,), rate, dtype=state.x.dtype,
                                             device=state.x.device), on)
                algorithm.local.update(state, g, phase, lrs, rnd, env)
        sent = algorithm.communicate(state, rnd, env)
        if frozen is not None:
            frozen.restore(state)
        messages.append(int(sent.messages))
        realized.append(sent.realized)
        sents.append(sent)
    return Trace(algorithm, state, env, rnd, messages, realized, sents)
