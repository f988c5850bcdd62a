r"""ProxSkip, decentralized: a local step every round, a gossip step only when a coin says so.

ProxSkip (Mishchenko, Malinovsky, Stich & Richtárik 2022) skips the expensive proximal step
of proximal gradient descent in most iterations and corrects the local steps with a control
variate, so that skipping costs no accuracy. Decentralized, the proximal step of the consensus
constraint is replaced by one gossip step with $W_a = I - \frac{1}{2\chi}(I - W)$, taken with
probability $p$ (one coin a round for every client); with $p = 1$ and $\beta = 1$ it is exact
diffusion (:func:`~topofl.algorithms.exact_diffusion` with ``gamma`` $= 1/(2\chi)$).

References
----------
.. [1] K. Mishchenko, G. Malinovsky, S. Stich, P. Richtárik, "ProxSkip: Yes! Local gradient
   steps provably lead to communication acceleration! Finally!", ICML 2022
   (arXiv:2202.09357).
.. [2] L. Guo, S. A. Alghunaim, K. Yuan, L. Condat, J. Cao, "Achieving linear speedup with
   ProxSkip in distributed stochastic optimization" (arXiv:2310.07983).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from topofl._utils.rng import generator_at
from topofl._utils.validation import check_int, check_real
from topofl.algorithms.base import register_algorithm
from topofl.algorithms.dsgt import standing
from topofl.algorithms.extra import require_symmetric
from topofl.algorithms.hparams import check_lr, check_wd
from topofl.engine.ledger import Flow, dtype_bits, graph_arcs
from topofl.engine.pieces import compose_init, graph_of, hold
from topofl.engine.protocol import Algorithm, LocalUpdate, Phase, Round, Sent, Services, State

__all__ = ["proxskip", "ProxSkipState", "coin"]


@dataclass
class ProxSkipState:
    r"""The state ProxSkip keeps besides the models (``State.own``).

    Attributes
    ----------
    y : Tensor
        ``[n, P]`` the control variates $y_i^t$ ($y^0 = 0$; their rows sum to 0 at every
        round). ProxSkip's $h_i$ is $-y_i / \alpha$.
    """

    y: Tensor


def coin(p: float, coin_seed: int, t: int) -> bool:
    r"""ProxSkip's coin of round ``t``: $\theta_t = 1$ (communicate) with probability ``p``,
    a pure function of ``(coin_seed, t)``.

    $\theta_t$ is ``u < p`` with ``u`` the first uniform draw of the stream
    ``(coin_seed, t)`` (:func:`topofl._utils.rng.generator_at`); at ``p = 1`` every round
    communicates.

    Examples
    --------
    >>> from topofl.algorithms.proxskip import coin
    >>> [coin(0.5, 0, t) for t in range(8)] == [coin(0.5, 0, t) for t in range(8)]
    True
    >>> all(coin(1.0, 3, t) for t in range(20))
    True
    """
    return p >= 1.0 or float(generator_at(coin_seed, t).random()) < p


@dataclass(frozen=True)
class _Predict(LocalUpdate):
    r"""The local piece: $z \leftarrow x - \alpha g(x) - y$ (in ``state.x``); an absent
    client (rate 0) stands still."""

    weight_decay: float

    @property
    def rowwise(self) -> bool:
        return True

    def init_(self, state: State, env: Services) -> None:
        hold(state, ProxSkipState(y=torch.zeros_like(state.x)))

    def update(self, state: State, grads: Tensor, phase: Phase, lr: Tensor, rnd: Round,
               env: Services) -> None:
        y, x = state.own_as(ProxSkipState).y, state.x
        if self.weight_decay:
            grads.add_(x, alpha=self.weight_decay)
        step = grads.mul_(lr.unsqueeze(1)).add_(y)  # alpha g + y
        still = standing(lr)
        if still is None:
            x.sub_(step)
        else:
            x.copy_(torch.where(still, x, x - step))

    def fused(self, executor: Any) -> None:
        return None


def _communicate(beta: float, chi: float, communicates: Callable[[int], bool]
                 ) -> Callable[[State, Round, Services], Sent]:
    gamma = 1.0 / (2.0 * chi)

    def communicate(state: State, rnd: Round, env: Services) -> Sent:
        r"""On a coin round: $x \leftarrow W_a z = z + \frac{1}{2\chi}(W z - z)$ and
        $y \leftarrow y + \beta (z - W_a z)$; otherwise $x = z$, nothing sent."""
        if not communicates(rnd.t):
            return Sent.of()
        topo = graph_of(rnd)
        x, y = state.x, state.own_as(ProxSkipState).y
        moved = x.clone()
        env.mixer.mix_(topo, moved)
        moved.sub_(x)  # W z - z
        x.add_(moved, alpha=gamma)
        y.sub_(moved, alpha=beta * gamma)  # z - W_a z = -gamma (W z - z)
        return Sent.of(Flow("model", graph_arcs(topo), int(x.shape[1]), dtype_bits(x.dtype)))

    return communicate


def build(lr: float, beta: float, comm_probability: float, chi: float, weight_decay: float,
          coin_seed: int, communicates: Callable[[int], bool]) -> Algorithm:
    """ProxSkip from checked settings and the rounds it communicates in (``communicates(t)``:
    :func:`coin` for :func:`proxskip`; a recorded sequence in a test that replays another
    library's coins)."""
    local = _Predict(weight_decay)
    return Algorithm(
        name="proxskip",
        hparams=dict(lr=lr, beta=beta, comm_probability=comm_probability, chi=chi,
                     weight_decay=weight_decay, coin_seed=coin_seed),
        phases=(Phase("all", 1, None, lr),),
        init=compose_init(local),
        local=local,
        communicate=_communicate(beta, chi, communicates),
        round_start=require_symmetric("proxskip"),
        requires="doubly",
        stacks=True,
    )


@register_algorithm("proxskip")
def proxskip(
    lr: float = 0.1,
    *,
    comm_probability: float = 0.5,
    beta: float | None = None,
    chi: float = 1.0,
    coin_seed: int = 0,
    weight_decay: float = 0.0,
) -> Algorithm:
    r"""ProxSkip, decentralized (Mishchenko et al. 2022): a local step every round, a gossip
    step with probability $p$.

    With $\nabla F_i$ client $i$'s (stochastic) gradient, $\alpha$ the step, $\beta$ the
    dual step, $W$ the round's symmetric doubly stochastic matrix,
    $W_a = (w^a_{ij}) = I - \frac{1}{2\chi}(I - W)$ and $y_i^0 = 0$, round $t$ is, on every
    client $i$:

    * local step: $z_i^t = x_i^t - \alpha \nabla F_i(x_i^t) - y_i^t$;
    * one coin for all clients, $\theta_t = 1$ with probability $p$
      (:func:`coin`, pure in ``(coin_seed, t)``);
    * if $\theta_t = 1$, one communication (of $z_i^t$):
      $x_i^{t+1} = \sum_j w^a_{ij} z_j^t$ and $y_i^{t+1} = y_i^t + \beta (z_i^t - x_i^{t+1})$;
    * if $\theta_t = 0$: $x_i^{t+1} = z_i^t$, $y_i^{t+1} = y_i^t$, nothing sent.

    This is ProxSkip's own recursion (the paper's Algorithm 1,
    $\hat x_{t+1} = x_t - \gamma (\nabla f(x_t) - h_t)$, then with probability $p$
    $x_{t+1} = \mathrm{prox}_{\frac{\gamma}{p}\psi}(\hat x_{t+1} - \frac{\gamma}{p} h_t)$,
    else $x_{t+1} = \hat x_{t+1}$, and $h_{t+1} = h_t + \frac{p}{\gamma}(x_{t+1} -
    \hat x_{t+1})$) written with $\alpha = \gamma$, $y = -\gamma h$ and $\beta = p$, the prox
    of the consensus constraint replaced by one gossip step with $W_a$ applied to $z$. With
    $W_a = J$ (the complete graph's Metropolis $W = \frac1n \mathbf{1}\mathbf{1}^\top$ and
    $\chi = 1/2$) and $\beta = p$ it is the paper's Scaffnew (its Algorithm 2: the average of
    $\hat x - \frac{\gamma}{p} h$ is the average of $z$, since the $h_i$ sum to 0). With a
    column-stochastic $W_a$, $\sum_i y_i^t = 0$ at every round, so the clients' average
    moves by $-\alpha$ times their average gradient whether the round communicates or not;
    at a fixed point (full gradients, constant steps) $x = z$ on every round, so
    $\alpha \nabla F_i(x^\star) + y_i = 0$ and the clients agree on the exact minimiser of
    $\sum_i f_i$. With $p = 1$ and $\beta = 1$, eliminating $y$ gives
    $x^1 = W_a(x^0 - \alpha \nabla F(x^0))$ and
    $x^{t+1} = W_a\big(2 x^t - x^{t-1} - \alpha(\nabla F(x^t) - \nabla F(x^{t-1}))\big)$:
    exact diffusion with $\tilde W = W_a$ (:func:`~topofl.algorithms.exact_diffusion` with
    ``gamma`` $= 1/(2\chi)$).

    Parameters
    ----------
    lr : float, default 0.1
        The step $\alpha$ of the local steps, constant over rounds: at a fixed point
        $y_i = -\alpha \nabla F_i(x^\star)$, so a decaying step would leave the control
        variates behind (no ``decay``, as ProxSkip's analysis).
    comm_probability : float in (0, 1], default 0.5
        $p$, the probability that a round communicates.
    beta : float or None, default None
        The dual step $\beta > 0$; ``None``: $\beta = p$ (ProxSkip's own
        $h \leftarrow h + \frac{p}{\gamma}(x - \hat x)$).
    chi : float, default 1
        $\chi \ge 1/2$: the combination $W_a = I - \frac{1}{2\chi}(I - W)$ ($(I + W)/2$ at 1,
        $W$ itself at 1/2).
    coin_seed : int, default 0
        The seed of the coins: round $t$'s is a pure function of ``(coin_seed, t)``, so a
        resumed run communicates in the same rounds. A hyper-parameter of the algorithm (the
        run's ``seed`` is its data's), as the server baselines' ``sample_seed``.
    weight_decay : float, default 0
        Added to the gradient ($\nabla F_i + \lambda x$).

    Returns
    -------
    Algorithm
        One local step per round; ``requires="doubly"`` and a symmetric ``W`` at every round
        (checked: a ``ValueError`` otherwise); ``state.own`` is a :class:`ProxSkipState`.

    Notes
    -----
    Messages: $z_i^t$ on every arc in the rounds whose coin is 1, nothing in the others
    (the ledger counts 0 messages there): $p$ times D-SGD's messages on average, for one
    gradient a round. decent-bench 0.3.0's ``ProxSkip`` (``step_size`` $\alpha$,
    ``aux_step_size`` $\beta$, ``comm_probability`` $p$, ``chi``, one coin a step from
    Python's global ``random``) gives this function's iterates to 1e-10 on its regression
    problem when both follow the same coins (``tests/algorithms/test_proxskip_dlm.py``
    replays decent-bench's); decent-bench asks $\chi \ge 1$, topofl $\chi \ge 1/2$ (exact
    diffusion's range: $W_a = W$ at 1/2). The control variates start at 0 (as
    decent-bench's); any start whose rows sum to 0 keeps the invariant above. A client
    absent from a round (``[availability]``) takes no step and keeps its model and $y_i$;
    a lost message (``[network] drop``) is refused.

    References
    ----------
    .. [1] K. Mishchenko, G. Malinovsky, S. Stich, P. Richtárik, "ProxSkip: Yes! Local
       gradient steps provably lead to communication acceleration! Finally!", ICML 2022
       (arXiv:2202.09357), Algorithms 1 and 2.
    .. [2] L. Guo, S. A. Alghunaim, K. Yuan, L. Condat, J. Cao, "Achieving linear speedup
       with ProxSkip in distributed stochastic optimization" (arXiv:2310.07983).

    Examples
    --------
    Client ``i`` minimises $a_i (x - b_i)^2 / 2$; the optimum of the sum is
    $\sum a_i b_i / \sum a_i = 2$, reached exactly while about half the rounds send nothing.

    >>> import torch
    >>> a = torch.tensor([[1.0], [2.0], [1.0], [4.0]], dtype=torch.float64)
    >>> b = torch.tensor([[0.0], [1.0], [2.0], [3.0]], dtype=torch.float64)
    >>> algo = tf.algorithms.get_algorithm("proxskip", lr=0.05, comm_probability=0.5)
    >>> trace = tf.engine.run_rounds(algo, torch.zeros_like(b), tf.topologies.ring(4),
    ...                              lambda z, phase, rnd: a * (z - b), rounds=600)
    >>> [round(v, 8) for v in trace.evaluated().flatten().tolist()]
    [2.0, 2.0, 2.0, 2.0]
    >>> sum(s.messages > 0 for s in trace.sent), len(trace.sent)
    (320, 600)
    """
    lr = check_lr(lr)
    p = check_real(comm_probability, "comm_probability", low=0, high=1, low_open=True)
    b = p if beta is None else check_real(beta, "beta", low=0, low_open=True)
    chi = check_real(chi, "chi", low=0.5)
    seed = check_int(coin_seed, "coin_seed", low=0)
    wd = check_wd(weight_decay)
    return build(lr, b, p, chi, wd, seed, lambda t: coin(p, seed, t))
