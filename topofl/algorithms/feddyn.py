r"""FedDyn: FedAvg whose clients' local objectives carry a dynamic regulariser, and whose server
corrects the average by the accumulated updates.

References
----------
.. [1] D. A. E. Acar, Y. Zhao, R. Matas Navarro, M. Mattina, P. N. Whatmough, V. Saligrama,
   "Federated learning based on dynamic regularization", ICLR 2021 (FedDyn, Algorithm 1).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch
from torch import Tensor

from topofl._utils.validation import check_real
from topofl.algorithms._server import (
    ServerParams,
    fedavg_algorithm,
    server_params,
    server_round,
    server_sums,
)
from topofl.algorithms.base import register_algorithm
from topofl.algorithms.hparams import (
    Keywords,
    LocalSGD,
    LocalSGDKeywords,
    Sampling,
    SamplingKeywords,
)
from topofl.engine.ledger import dtype_bits
from topofl.engine.pieces import SGD, hold, server_flows
from topofl.engine.protocol import Algorithm, Kernel, Phase, Round, Sent, Services, State

if TYPE_CHECKING:  # Unpack is typing's from Python 3.11; only the type checker reads it
    from typing_extensions import Unpack

__all__ = ["feddyn", "FedDynState", "FedDynKeywords"]

#: FedDyn's default alpha (Acar et al. tune it over {0.1, 0.01, 0.001}; decent-bench's default)
ALPHA = 0.01
#: why FedDyn's runs do not stack (``Algorithm.stacks``)
STACKS = ("feddyn does not stack: its server's sums run over every row of the pass, which "
          "would mix the clients of the stacked runs")


@dataclass
class FedDynState:
    r"""FedDyn's state besides the models (``State.own``).

    Attributes
    ----------
    anchor : Tensor
        ``[n, P]`` the server model $\theta^{t-1}$ each client received at the start of the
        round.
    grad : Tensor
        ``[n, P]`` each client's dynamic state $\nabla L_k(\theta_k^{t-1})$ of Algorithm 1
        (0 at the start; changed only in the rounds the client takes part in).
    h : Tensor
        ``[n, P]`` the server's state $h$ (every row the same; 0 at the start).
    """

    anchor: Tensor
    grad: Tensor
    h: Tensor


@dataclass(frozen=True)
class _Regularised:
    r"""FedDyn's local piece: ``inner`` (SGD) on the gradient of the dynamically regularised
    objective, $\nabla L_k(\theta) - g_k + \alpha (\theta - \theta^{t-1})$."""

    inner: SGD
    alpha: float

    @property
    def rowwise(self) -> bool:
        """As the inner piece (the terms read the client's own row)."""
        return self.inner.rowwise

    def init_(self, state: State, env: Services) -> None:
        """The inner piece's buffers and :class:`FedDynState` (all 0 but the anchor)."""
        self.inner.init_(state, env)
        x = state.x
        hold(state, FedDynState(anchor=x.clone(), grad=torch.zeros_like(x),
                                h=torch.zeros_like(x)))

    def round_start(self, state: State, rnd: Round, env: Services) -> None:
        """Remember the model received ($\\theta^{t-1}$) and restart the local momentum."""
        state.own_as(FedDynState).anchor.copy_(state.x)
        if state.momentum is not None:
            state.momentum.zero_()

    def point(self, state: State, phase: Phase, env: Services) -> Tensor:
        """The parameters."""
        return self.inner.point(state, phase, env)

    def update(self, state: State, grads: Tensor, phase: Phase, lr: Tensor, rnd: Round,
               env: Services) -> None:
        """``grads += alpha (x - anchor) - g_k`` on the phase's columns, then the inner
        step."""
        own = state.own_as(FedDynState)
        cols = env.layout.cols(phase.part)
        g = grads[:, cols]
        g.sub_(own.grad[:, cols]).add_(state.x[:, cols], alpha=self.alpha)
        g.sub_(own.anchor[:, cols], alpha=self.alpha)
        self.inner.update(state, grads, phase, lr, rnd, env)

    def fused(self, executor: Any) -> Kernel | None:
        """Never fused (the terms come before the step)."""
        return None


def _server_step(hp: ServerParams[LocalSGD], alpha: float
                 ) -> Callable[[State, Round, Services], Sent]:
    """Algorithm 1's updates of the clients' states, of $h$ and of the server model."""

    def communicate(state: State, rnd: Round, env: Services) -> Sent:
        own = state.own_as(FedDynState)
        x = state.x
        sr = server_round(hp, state, rnd, env)
        took = (sr.weights > 0).unsqueeze(1)
        dx = (x - own.anchor).mul_(took)  # theta_k^t - theta^{t-1}, participants only
        start, (d_x,), den = server_sums(sr, own.anchor, env, "FedDyn's server step", dx)
        if start is not None:  # else nobody took part: nothing moved
            own.grad.sub_(dx, alpha=alpha)
            own.h.sub_(d_x / den[1], alpha=alpha)
            x.copy_(start.add_(d_x / den[0]).sub_(own.h[0] / alpha))
        return Sent.of(*server_flows(env.n, sr.active, x.shape[1], dtype_bits(x.dtype)),
                       active=sr.active)

    return communicate


_SGD, _EVERY_CLIENT = LocalSGD(), Sampling()


class FedDynKeywords(LocalSGDKeywords, SamplingKeywords, total=False):
    """FedDyn's flat keywords: the fields of its groups (FedAvg's)."""


@register_algorithm("feddyn")
def feddyn(sgd: LocalSGD | float = _SGD, sampling: Sampling = _EVERY_CLIENT, *,
           weighting: str = "uniform", alpha: float = ALPHA,
           **keywords: Unpack[FedDynKeywords]) -> Algorithm:
    r"""FedDyn: local steps on a dynamically regularised objective, and a corrected average.

    Client $k$ keeps $g_k = \nabla L_k(\theta_k^{t-1})$ and the server keeps $h$ (all 0 at
    the start). Each round the server sends $\theta^{t-1}$ to the participants $P_t$; each
    approximately minimises (Acar et al., Algorithm 1)

    $$L_k(\theta) - \langle g_k, \theta \rangle
      + \frac{\alpha}{2} \|\theta - \theta^{t-1}\|^2$$

    by local SGD from $\theta^{t-1}$ on the gradient
    $\nabla L_k(\theta) - g_k + \alpha (\theta - \theta^{t-1})$, reaching $\theta_k^t$, then
    updates $g_k \leftarrow g_k - \alpha (\theta_k^t - \theta^{t-1})$ (the first-order
    condition of the exact minimiser) and sends $\theta_k^t$. With $m$ clients in all, the
    server updates

    $$h \leftarrow h - \frac{\alpha}{m} \sum_{k \in P_t} (\theta_k^t - \theta^{t-1}), \qquad
      \theta^t = \frac{1}{|P_t|} \sum_{k \in P_t} \theta_k^t - \frac{1}{\alpha} h,$$

    and sends $\theta^t$ to every client. With ``weighting="data_size"`` the $1/m$ becomes
    $p_k = n_k / \sum_j n_j$ and the mean is weighted by $p_k$ over $P_t$ (so
    $h = \sum_k p_k g_k$, as $h = \frac1m \sum_k g_k$ with the uniform weights).

    A fixed point has $\theta_k^t = \theta^{t-1}$, hence $\nabla L_k(\theta) = g_k$ for
    every $k$ and $h = 0$, i.e. $\sum_k p_k \nabla L_k(\theta) = 0$: the minimiser of the sum
    for any number of local steps and any constant rate, with full or partial participation
    (tested: the exact least-squares minimiser).

    Parameters
    ----------
    sgd : LocalSGD or float, default LocalSGD()
        The local SGD (a number: its ``lr``): ``lr``, ``momentum``, ``weight_decay``,
        ``local_steps``, ``local_epochs``, ``decay``.
    sampling : Sampling, default Sampling()
        The round's participants: ``participation``, ``sample_seed``.
    weighting : {"uniform", "data_size"}, default "uniform"
        As in :func:`~topofl.algorithms.fedavg`, as the groups' fields.
    alpha : float, default 0.01
        The regularisation coefficient $\alpha > 0$ (Acar et al. tune it over 0.1, 0.01 and
        0.001).

    Returns
    -------
    Algorithm
        ``uses_topology=False``: run it with ``topology=None``. ``state.own`` is a
        :class:`FedDynState`.

    Raises
    ------
    ValueError
        For ``alpha <= 0``.

    Notes
    -----
    The same update as decent-bench 0.3.0's ``FedDyn`` (``penalty`` $= \alpha$), equal to
    it to 1e-10 in float64 on its regression problem, a partial selection included
    (``tests/algorithms/test_decentbench.py``). The local momentum restarts every round;
    weight decay acts on the gradient. A client that is not sampled or offline keeps its
    $g_k$.

    FedDyn does not reduce to FedAvg as $\alpha \to 0$: the server's correction
    $h / \alpha = -\frac1m \sum_{s \le t} \sum_{k \in P_s} (\theta_k^s - \theta^{s-1})$ does
    not vanish. With full participation and $D_t$ the mean local update of round $t$, the
    limit is $\theta^t = \theta^{t-1} + D_t + \sum_{s \le t} D_s$; what holds exactly for
    every $\alpha$ is the first round with one local step, $\theta^1 = \theta^0 + 2 D_1$,
    FedAvg's first round with a server rate 2 (both tested).

    Messages: FedAvg's (``2 m`` per round with ``m`` participants, the model each way:
    $g_k$ stays on the client, $h$ on the server). Each client keeps three more ``[P]``
    buffers than FedAvg ($\theta^{t-1}$, $g_k$ and its copy of $h$). Its runs do not stack
    (``Algorithm.stacks`` says why).

    Examples
    --------
    Client $i$ minimises $a_i (x - b_i)^2 / 2$ (the minimiser of the sum is
    $\sum a_i b_i / \sum a_i = 2$) with 5 local steps a round at a constant rate: FedDyn
    reaches it, FedAvg's local drift does not.

    >>> import torch
    >>> a = torch.tensor([[1.0], [2.0], [1.0], [4.0]], dtype=torch.float64)
    >>> b = torch.tensor([[0.0], [1.0], [2.0], [3.0]], dtype=torch.float64)
    >>> grad = lambda z, phase, rnd: a * (z - b)
    >>> run = lambda algo: tf.engine.run_rounds(algo, torch.zeros_like(b), None, grad,
    ...                                         rounds=400).evaluated()[0].item()
    >>> round(run(tf.algorithms.feddyn(lr=0.1, local_steps=5, alpha=0.5)), 8)
    2.0
    >>> round(run(tf.algorithms.fedavg(lr=0.1, local_steps=5)), 4)
    1.7642
    >>> tf.algorithms.feddyn(alpha=0)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: alpha must be ...
    """
    kw = Keywords("feddyn", keywords)
    local, active = kw.take(sgd, _SGD), kw.take(sampling)
    kw.done()
    hp = server_params(local, active, weighting)
    a = check_real(alpha, "alpha", low=0, low_open=True)
    piece = _Regularised(SGD(hp.sgd.momentum, hp.sgd.weight_decay), a)
    algo = fedavg_algorithm("feddyn", hp, hparams=dict(alpha=a), local=piece,
                            round_start=piece.round_start, communicate=_server_step(hp, a))
    return algo._replace(stacks=STACKS)
