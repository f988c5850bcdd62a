r"""FedNova: the server averages the clients' updates normalised by their amounts of local work.

References
----------
.. [1] J. Wang, Q. Liu, H. Liang, G. Joshi, H. V. Poor, "Tackling the objective inconsistency
   problem in heterogeneous federated optimization", NeurIPS 2020 (FedNova: Section 4,
   Eq. (6)-(7), Appendix A's local solvers: SGD, momentum, proximal).
"""

from __future__ import annotations

import dataclasses
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

__all__ = ["fednova", "FedNovaState", "FedNovaKeywords"]

#: why FedNova's runs do not stack (``Algorithm.stacks``)
STACKS = ("fednova does not stack: its server's sums run over every row of the pass, which "
          "would mix the clients of the stacked runs")


@dataclass
class FedNovaState:
    r"""FedNova's state besides the models (``State.own``).

    Attributes
    ----------
    anchor : Tensor
        ``[n, P]`` the server model $x^t$ each client received at the start of the round.
    a : Tensor
        ``[n]`` each client's normaliser $\|a_i\|_1$ over the round's local steps so far
        (0 at the round's start, and for a client that does not train).
    s : Tensor
        ``[n]`` the momentum counter $s_i = \sum_{j < k} \rho^j$ after ``k`` steps (the
        weight of the latest gradient in the steps to come).
    server_momentum : Tensor or None
        ``[n, P]`` the server's momentum buffer (every row the same; 0 at the start);
        ``None`` without server momentum.
    """

    anchor: Tensor
    a: Tensor
    s: Tensor
    server_momentum: Tensor | None = None


@dataclass(frozen=True)
class _Counted:
    """FedNova's local piece: ``inner`` (SGD) on the gradient plus the proximal term
    ``mu (x - x^t)``, counting each client's normaliser $a_i$ step by step."""

    inner: SGD
    mu: float
    gamma: float

    @property
    def rowwise(self) -> bool:
        """As the inner piece (the term and the counts read the client's own row)."""
        return self.inner.rowwise

    def init_(self, state: State, env: Services) -> None:
        """The inner piece's buffers and :class:`FedNovaState`."""
        self.inner.init_(state, env)
        x = state.x
        zeros = torch.zeros(x.shape[0], dtype=x.dtype, device=x.device)
        hold(state, FedNovaState(anchor=x.clone(), a=zeros, s=zeros.clone(),
                                 server_momentum=torch.zeros_like(x) if self.gamma else None))

    def round_start(self, state: State, rnd: Round, env: Services) -> None:
        """Remember the model received ($x^t$), restart the counts and the local momentum
        (FedNova's $a_i$ counts from a momentum buffer at 0)."""
        own = state.own_as(FedNovaState)
        own.anchor.copy_(state.x)
        own.a.zero_()
        own.s.zero_()
        if state.momentum is not None:
            state.momentum.zero_()

    def point(self, state: State, phase: Phase, env: Services) -> Tensor:
        """The parameters."""
        return self.inner.point(state, phase, env)

    def update(self, state: State, grads: Tensor, phase: Phase, lr: Tensor, rnd: Round,
               env: Services) -> None:
        r"""``grads += mu (x - x^t)``; for the rows that step (rate > 0),
        $s \leftarrow \rho s + 1$ and $a \leftarrow (1 - \eta \mu) a + s$; the inner
        step."""
        own = state.own_as(FedNovaState)
        if self.mu:
            cols = env.layout.cols(phase.part)
            grads[:, cols].add_(state.x[:, cols], alpha=self.mu).sub_(own.anchor[:, cols],
                                                                       alpha=self.mu)
        steps = lr > 0
        rho = self.inner.momentum
        s = own.s * rho + 1.0 if rho else torch.ones_like(own.s)
        own.s.copy_(torch.where(steps, s, own.s))
        a = own.a * (1.0 - lr * self.mu) + own.s if self.mu else own.a + own.s
        own.a.copy_(torch.where(steps, a, own.a))
        self.inner.update(state, grads, phase, lr, rnd, env)

    def fused(self, executor: Any) -> Kernel | None:
        """Never fused (the counts and the term come with every step)."""
        return None


def _server_step(hp: ServerParams[LocalSGD], gamma: float
                 ) -> Callable[[State, Round, Services], Sent]:
    """The server's step: the normalised average of the participants' updates (Eq. (6))."""

    def communicate(state: State, rnd: Round, env: Services) -> Sent:
        own = state.own_as(FedNovaState)
        x = state.x
        sr = server_round(hp, state, rnd, env)
        took = sr.weights > 0
        a = torch.where(took, own.a, 1.0)  # a client that did not train sends nothing
        c = (own.anchor - x).div_(a.unsqueeze(1))  # d_i = (x^t - x_i) / |a_i|_1 (eta inside)
        start, (cd, ta), den = server_sums(sr, own.anchor, env, "FedNova's server step",
                                           c, own.a.unsqueeze(1))
        if start is not None:  # else nobody took part: nothing moved
            step = cd.mul_(ta / den[0] / den[0])  # tau_eff sum_i p_i d_i
            if own.server_momentum is not None:
                own.server_momentum.mul_(gamma).add_(step.unsqueeze(0))
                step = own.server_momentum[0]
            x.copy_(start.sub_(step))
        bits = dtype_bits(x.dtype)
        down, up = server_flows(env.n, sr.active, x.shape[1], bits)
        return Sent.of(down, up, dataclasses.replace(up, kind="normalizer", size=1,
                                                     attached=True), active=sr.active)

    return communicate


_SGD, _EVERY_CLIENT = LocalSGD(), Sampling()


class FedNovaKeywords(LocalSGDKeywords, SamplingKeywords, total=False):
    """FedNova's flat keywords: the fields of its groups (FedAvg's)."""


@register_algorithm("fednova")
def fednova(sgd: LocalSGD | float = _SGD, sampling: Sampling = _EVERY_CLIENT, *,
            weighting: str = "uniform", mu: float = 0.0, server_momentum: float = 0.0,
            **keywords: Unpack[FedNovaKeywords]) -> Algorithm:
    r"""FedNova: FedAvg whose server normalises each client's update by its local work.

    Each round the participants $S$ start from the server model $x^t$ and take $\tau_i$ local
    steps each (``local_epochs``: each its own count; with ``local_steps``, the same for all),
    $x_i^{(k+1)} = x_i^{(k)} - \eta\, v_i^{(k+1)}$ with
    $v_i^{(k+1)} = \rho\, v_i^{(k)} + g_i^{(k)}$ (local momentum $\rho$, restarted at 0 every
    round; $\rho = 0$: plain SGD) on the gradient with the optional proximal term,
    $g_i^{(k)} = \nabla F_i(x_i^{(k)}) + \mu (x_i^{(k)} - x^t)$. The cumulative update is
    $x^t - x_i^{(\tau_i)} = \eta\, G_i a_i$, where the stacked gradients $G_i$ are
    weighted by the vector $a_i$; only its norm $\|a_i\|_1$ is needed, which the client
    counts step by step (Wang et al., Appendix A):

    $$s_i^{(k+1)} = \rho\, s_i^{(k)} + 1, \qquad
      \|a_i\|_1^{(k+1)} = (1 - \eta\mu)\, \|a_i\|_1^{(k)} + s_i^{(k+1)},$$

    from 0 (plain SGD: $\|a_i\|_1 = \tau_i$; momentum:
    $\sum_{k=1}^{\tau_i} \frac{1 - \rho^k}{1 - \rho}$; proximal:
    $\sum_{k<\tau_i} (1 - \eta\mu)^k$). Client $i$ sends $x^t - x_i$ and $\|a_i\|_1$; with
    $p_i$ the weight of client $i$ among the participants ($1/|S|$, or $n_i / \sum_{j \in S}
    n_j$ with ``weighting="data_size"``), the server steps (Eq. (6)-(7))

    $$\tau_{\mathrm{eff}} = \sum_{i \in S} p_i \|a_i\|_1, \qquad
      x^{t+1} = x^t - \tau_{\mathrm{eff}} \sum_{i \in S} p_i\,
      \frac{x^t - x_i}{\|a_i\|_1},$$

    and sends $x^{t+1}$ to every client. With server momentum $\gamma$ (the authors' code's
    ``gmf``): $m \leftarrow \gamma m + \Delta^t$, $x^{t+1} = x^t - m$, with $\Delta^t$ the
    normalised step above and $m = 0$ at the start.

    With the same $\|a_i\|_1$ for every participant (equal local work) the normalisation
    cancels and this is FedAvg's average exactly; with unequal work and a falling rate FedAvg
    converges to the minimiser of $\sum_i p_i \|a_i\|_1 F_i$ (the *objective
    inconsistency*), FedNova to that of $\sum_i p_i F_i$; at a constant rate both keep an
    $O(\eta)$ bias (closed forms tested on quadratics).

    Parameters
    ----------
    sgd : LocalSGD or float, default LocalSGD()
        The local SGD (a number: its ``lr``): ``lr`` ($\eta$), ``momentum`` ($\rho$),
        ``weight_decay``, ``local_steps``, ``local_epochs``, ``decay``.
    sampling : Sampling, default Sampling()
        The round's participants: ``participation``, ``sample_seed``.
    weighting : {"uniform", "data_size"}, default "uniform"
        The $p_i$: as in :func:`~topofl.algorithms.fedavg` (the paper's are the data sizes,
        ``"data_size"``).
    mu : float, default 0
        The proximal coefficient $\mu \ge 0$ (FedProx's local objective; 0: none), with
        ``lr * mu <= 1`` (so that $\|a_i\|_1 > 0$).
    server_momentum : float in [0, 1), default 0
        $\gamma$; 0: no server momentum.

    Returns
    -------
    Algorithm
        ``uses_topology=False``: run it with ``topology=None``. ``state.own`` is a
        :class:`FedNovaState`.

    Raises
    ------
    ValueError
        For ``mu < 0``, ``lr * mu > 1``, or ``server_momentum`` outside ``[0, 1)``.

    Notes
    -----
    The same update as decent-bench 0.3.0's ``FedNova`` (its ``use_momentum``, ``use_prox``
    with ``penalty`` $= \mu$, ``use_server_momentum``; it always weighs by data size); equal
    to it to 1e-10 in float64 on its regression problem, unequal local steps and a partial
    selection included (``tests/algorithms/test_decentbench.py``). Weight decay acts on the
    gradient, as in the authors' code, and is not counted in $a_i$. A client past its own
    step count, not sampled or offline takes no step and is not counted. The momentum of the
    local SGD restarts every round (the $a_i$ above count from a buffer at 0).

    Messages: ``2 m`` per round with ``m`` participants, FedAvg's, each upload carrying one
    number more ($\|a_i\|_1$, ledger kind ``"normalizer"`` attached to ``"model"``). Each
    client keeps one more ``[P]`` buffer than FedAvg ($x^t$; two with server momentum); no stacking.

    Examples
    --------
    Client $i$ minimises $(x - b_i)^2 / 2$ (the minimiser of the sum is the mean, 1.5) and
    takes $i + 1$ local steps a round, at a decaying rate: FedNova reaches 1.5, FedAvg the
    mean weighted by the steps, $\sum_i (i + 1) b_i / 10 = 2$.

    >>> import torch
    >>> b = torch.arange(4.0, dtype=torch.float64).unsqueeze(1)
    >>> env = tf.engine.toy_services(4, 1, dtype=torch.float64)
    >>> def run(algo):
    ...     state, ph = algo.init(torch.zeros_like(b), env), algo.phases[0]
    ...     for t in range(600):
    ...         rnd = tf.engine.Round(t)
    ...         algo.round_start(state, rnd, env)
    ...         for k in range(4):  # client i takes i + 1 steps: rate 0 once it is done
    ...             lr = 0.1 * 0.99**t * (torch.arange(4) >= k).to(torch.float64)
    ...             algo.local.update(state, state.x - b, ph, lr, rnd, env)
    ...         algo.communicate(state, rnd, env)
    ...     return round(state.x[0].item(), 3), state
    >>> (x, state), (y, _) = run(tf.algorithms.fednova()), run(tf.algorithms.fedavg())
    >>> x, y, state.own.a.tolist()
    (1.5, 2.0, [1.0, 2.0, 3.0, 4.0])
    >>> tf.algorithms.fednova(mu=-1)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: mu must be ...
    """
    kw = Keywords("fednova", keywords)
    local, active = kw.take(sgd, _SGD), kw.take(sampling)
    kw.done()
    hp = server_params(local, active, weighting)
    m = check_real(mu, "mu", low=0)
    gamma = check_real(server_momentum, "server_momentum", low=0, high=1, high_open=True)
    if hp.sgd.lr * m > 1:
        raise ValueError(f"fednova needs lr * mu <= 1 (so that its normaliser |a_i|_1 stays "
                         f"positive), got lr * mu = {hp.sgd.lr} * {m} = {hp.sgd.lr * m:g}")
    piece = _Counted(SGD(hp.sgd.momentum, hp.sgd.weight_decay), m, gamma)
    algo = fedavg_algorithm("fednova", hp, hparams=dict(mu=m, server_momentum=gamma),
                            local=piece, round_start=piece.round_start,
                            communicate=_server_step(hp, gamma))
    return algo._replace(stacks=STACKS)
