r"""FedOpt: FedAvg whose server applies an optimizer (Adam, Yogi, Adagrad, SGD) to the mean update.

References
----------
.. [1] S. J. Reddi, Z. Charles, M. Zaheer, Z. Garrett, K. Rush, J. Konečný, S. Kumar,
   H. B. McMahan, "Adaptive federated optimization", ICLR 2021 (Algorithm 2: FedAdagrad,
   FedYogi, FedAdam).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypedDict

import torch
from torch import Tensor

from topofl._utils.validation import check_choice, check_real
from topofl.algorithms._server import (
    ServerParams,
    fedavg_algorithm,
    server_params,
    server_round,
    server_sums,
)
from topofl.algorithms.base import register_algorithm
from topofl.algorithms.hparams import (
    Group,
    Keywords,
    LocalSGD,
    LocalSGDKeywords,
    Sampling,
    SamplingKeywords,
)
from topofl.engine.ledger import dtype_bits
from topofl.engine.pieces import hold, server_flows
from topofl.engine.protocol import Algorithm, Round, Sent, Services, State

if TYPE_CHECKING:  # Unpack is typing's from Python 3.11; only the type checker reads it
    from typing_extensions import Unpack

__all__ = ["fedopt", "FedOptState", "OPTIMIZERS", "VARIANTS", "FedOptServer",
           "FedOptKeywords"]

#: The server optimizers (Reddi et al., Algorithm 2, and SGD: FedAvg with a server rate).
OPTIMIZERS = ("adam", "yogi", "adagrad", "sgd")
#: Whose server moments: Reddi et al.'s Algorithm 2 ($v_{-1} = \tau^2$), FL-bench's
#: ($v_{-1} = 0$), Flower's ($v_{-1} = 0$, FedAdam's rate bias-corrected); :func:`fedopt`.
VARIANTS = ("reddi", "fl_bench", "flower")


@dataclass
class FedOptState:
    r"""FedOpt's state besides the models (``State.own``); every row of ``m`` and ``v`` holds
    the server's (the same for every client).

    Attributes
    ----------
    anchor : Tensor
        ``[n, P]`` the server model $x_t$ each client received at the start of the round.
    m : Tensor or None
        ``[n, P]`` the first moment $m_t$ (0 at the start); ``None`` for ``"sgd"``.
    v : Tensor or None
        ``[n, P]`` the second moment $v_t$ ($v_{-1} = \tau^2$, or 0 for the ``"fl_bench"``
        and ``"flower"`` variants); ``None`` for ``"sgd"``.
    """

    anchor: Tensor
    m: Tensor | None = None
    v: Tensor | None = None


@dataclass(frozen=True)
class _ServerOptimizer:
    """FedOpt's communicate piece: the mean update of the participants, then the server's
    optimizer step from the round's starting model."""

    hp: ServerParams[LocalSGD]
    optimizer: str
    lr: float
    beta1: float
    beta2: float
    tau: float
    variant: str = "reddi"

    def init_(self, state: State, env: Services) -> None:
        """:class:`FedOptState`: ``m = 0`` and ``v = tau**2`` (0 but for ``"reddi"``; none
        for ``"sgd"``)."""
        x = state.x
        adaptive = self.optimizer != "sgd"
        v0 = self.tau**2 if self.variant == "reddi" else 0.0
        hold(state, FedOptState(
            anchor=x.clone(), m=torch.zeros_like(x) if adaptive else None,
            v=torch.full_like(x, v0) if adaptive else None))

    def round_start(self, state: State, rnd: Round, env: Services) -> None:
        """Remember the model received ($x_t$)."""
        state.own_as(FedOptState).anchor.copy_(state.x)

    def rate(self, t: int) -> float:
        r"""The server's rate in round ``t`` (from 0): $\eta$, or Flower's FedAdam's
        $\eta \sqrt{1 - \beta_2^{t+2}} / (1 - \beta_1^{t+2})$."""
        if self.variant != "flower" or self.optimizer != "adam":
            return self.lr
        k = t + 2.0  # Flower numbers rounds from 1 and raises the betas to server_round + 1
        return float(self.lr * math.sqrt(1 - self.beta2**k) / (1 - self.beta1**k))

    def step_(self, own: FedOptState, delta: Tensor, t: int = 0) -> Tensor:
        """The server's step $x_{t+1} - x_t$ in round ``t`` for the pseudo-gradient
        ``delta`` ``[P]``, updating the moments in place (Algorithm 2)."""
        if own.m is None or own.v is None:  # sgd
            return delta * self.lr
        own.m.mul_(self.beta1).add_(delta, alpha=1 - self.beta1)
        d2 = delta * delta
        if self.optimizer == "adam":
            own.v.mul_(self.beta2).add_(d2, alpha=1 - self.beta2)
        elif self.optimizer == "adagrad":
            own.v.add_(d2)
        else:  # yogi: v - (1 - beta2) d^2 sign(v - d^2)
            own.v.sub_(torch.sign(own.v - d2).mul_(d2), alpha=1 - self.beta2)
        return own.m / own.v.sqrt().add_(self.tau) * self.rate(t)

    def __call__(self, state: State, rnd: Round, env: Services) -> Sent:
        """The participants' (weighted) mean update, the server step, the model to all."""
        own = state.own_as(FedOptState)
        x = state.x
        sr = server_round(self.hp, state, rnd, env)
        start, (delta,), den = server_sums(sr, own.anchor, env, "FedOpt's server step",
                                           x - own.anchor)
        if start is not None:  # else nobody took part: nothing moved
            x.copy_(start).add_(self.step_(own, delta / den[0], rnd.t))
        return Sent.of(*server_flows(env.n, sr.active, x.shape[1], dtype_bits(x.dtype)),
                       active=sr.active)


@dataclass(frozen=True)
class FedOptServer(Group):
    r"""FedOpt's server optimizer and its settings (:func:`fedopt`).

    Attributes
    ----------
    optimizer : {"adam", "yogi", "adagrad", "sgd"}, default "adam"
    server_lr : float, optional
        $\eta > 0$; default 1 for ``"sgd"``, 0.1 for the adaptive optimizers.
    beta1, beta2 : float in [0, 1), default 0.9 and 0.99
    tau : float, default 1e-3
        The adaptivity $\tau > 0$.
    variant : {"reddi", "fl_bench", "flower"}, default "reddi"
        Whose server moments (:func:`fedopt`'s Notes).
    """

    optimizer: str = "adam"
    server_lr: float | None = None
    beta1: float = 0.9
    beta2: float = 0.99
    tau: float = 1e-3
    variant: str = "reddi"

    def __post_init__(self) -> None:
        self.checked()

    def checked(self) -> tuple[str, float, float, float, float, str]:
        """``(optimizer, server_lr, beta1, beta2, tau, variant)`` checked, ``server_lr``'s
        default filled in."""
        name = check_choice(self.optimizer, "optimizer", OPTIMIZERS)
        default_lr = 1.0 if name == "sgd" else 0.1
        eta = default_lr if self.server_lr is None else check_real(
            self.server_lr, "server_lr", low=0, low_open=True)
        b1 = check_real(self.beta1, "beta1", low=0, high=1, high_open=True)
        variant = check_choice(self.variant, "variant", VARIANTS)
        if variant == "flower" and name == "adagrad" and b1 != 0:
            raise ValueError("variant='flower' with optimizer='adagrad' needs beta1=0 (Flower's "
                             f"FedAdagrad keeps no first moment; 'fl_bench' keeps one), got "
                             f"beta1={b1:g}")
        return (name, eta, b1, check_real(self.beta2, "beta2", low=0, high=1, high_open=True),
                check_real(self.tau, "tau", low=0, low_open=True), variant)


class FedOptServerKeywords(TypedDict, total=False):
    """:class:`FedOptServer`'s fields as flat keywords."""

    optimizer: str
    server_lr: float | None
    beta1: float
    beta2: float
    tau: float
    variant: str


class FedOptKeywords(LocalSGDKeywords, SamplingKeywords, FedOptServerKeywords, total=False):
    """FedOpt's flat keywords: the fields of its groups."""


_SGD, _EVERY_CLIENT, _ADAM = LocalSGD(), Sampling(), FedOptServer()


@register_algorithm("fedopt")
def fedopt(sgd: LocalSGD | float = _SGD, sampling: Sampling = _EVERY_CLIENT,
           server: FedOptServer = _ADAM, *, weighting: str = "uniform",
           **keywords: Unpack[FedOptKeywords]) -> Algorithm:
    r"""FedOpt: FedAvg whose server takes an optimizer step on the clients' mean update.

    Each round the participants $S$ take local SGD steps from the server model $x_t$, as in
    :func:`~topofl.algorithms.fedavg`, and send their updates $\Delta_i = x_i - x_t$; the
    server treats their mean $\Delta_t = \frac1{|S|} \sum_{i \in S} \Delta_i$ as a
    pseudo-gradient (Reddi et al., Algorithm 2, with $m_{-1} = 0$, $v_{-1} = \tau^2$; the
    peers' variants in the Notes):

    * $m_t = \beta_1 m_{t-1} + (1 - \beta_1) \Delta_t$;
    * ``"adagrad"``: $v_t = v_{t-1} + \Delta_t^2$; ``"adam"``:
      $v_t = \beta_2 v_{t-1} + (1 - \beta_2) \Delta_t^2$; ``"yogi"``:
      $v_t = v_{t-1} - (1 - \beta_2) \Delta_t^2 \operatorname{sign}(v_{t-1} - \Delta_t^2)$;
    * $x_{t+1} = x_t + \eta \frac{m_t}{\sqrt{v_t} + \tau}$ (per coordinate),

    and sends $x_{t+1}$ to every client. ``"sgd"`` is $x_{t+1} = x_t + \eta \Delta_t$: at
    $\eta = 1$, FedAvg exactly (its pieces, the same numbers).

    It takes FedAvg's keywords (``lr`` is the clients' rate $\eta_l$; ``momentum``,
    ``weight_decay``, ``local_steps``, ``local_epochs``, ``decay``, ``participation``,
    ``sample_seed``, ``weighting``: the mean is weighted by training-set size with
    ``"data_size"``), and its partial participation: the sampled (and online) clients train.

    Parameters
    ----------
    sgd : LocalSGD or float, default LocalSGD()
        The clients' local SGD (a number: its ``lr``): ``lr``, ``momentum``,
        ``weight_decay``, ``local_steps``, ``local_epochs``, ``decay``.
    sampling : Sampling, default Sampling()
        The round's participants: ``participation``, ``sample_seed``.
    server : FedOptServer, default FedOptServer()
        The server's optimizer: ``optimizer``, ``server_lr``, ``beta1``, ``beta2``, ``tau``,
        ``variant`` below.
    weighting : {"uniform", "data_size"}, default "uniform"
        As in :func:`~topofl.algorithms.fedavg`, as the groups' other fields.
    optimizer : {"adam", "yogi", "adagrad", "sgd"}, default "adam"
        FedAdam, FedYogi, FedAdagrad, or SGD with a server rate.
    server_lr : float, optional
        The server's rate $\eta > 0$; default 1 for ``"sgd"`` (FedAvg), 0.1 for the adaptive
        optimizers (tune it, as Reddi et al. do per task).
    beta1 : float in [0, 1), default 0.9
        $\beta_1$ (not used by ``"sgd"``).
    beta2 : float in [0, 1), default 0.99
        $\beta_2$ (used by ``"adam"`` and ``"yogi"``).
    tau : float, default 1e-3
        The adaptivity $\tau > 0$ (not used by ``"sgd"``).
    variant : {"reddi", "fl_bench", "flower"}, default "reddi"
        Whose server moments, to replay a peer's runs as it ships them (Notes; not used by
        ``"sgd"``): Reddi et al.'s Algorithm 2, FL-bench's or Flower's.

    Returns
    -------
    Algorithm
        ``uses_topology=False``: run it with ``topology=None``. ``state.own`` is a
        :class:`FedOptState`.

    Notes
    -----
    Algorithm 2 applies no bias correction to $m_t$ and $v_t$ (Adam's would), and neither
    does the default. The server's rate does not decay (``decay`` acts on the clients' rate).
    Messages: ``2 m`` per round with ``m`` participants, the model down and the update up,
    as FedAvg's. Each client keeps three more ``[P]`` buffers than FedAvg ($x_t$ and its
    copies of $m_t$, $v_t$; one for ``"sgd"``).

    The peers' code ships other moments; ``variant`` replays each (rounds $t$ from 0; the
    updates of $m_t$ and $v_t$ above unchanged):

    * ``"reddi"``: $v_{-1} = \tau^2$ and $x_{t+1} = x_t + \eta m_t / (\sqrt{v_t} + \tau)$,
      Algorithm 2 as written (the default).
    * ``"fl_bench"``: $v_{-1} = 0$, the same step: FL-bench's ``AdaptiveOptimizer``
      (``src/server/fedopt.py``) for its three optimizers, which weighs the mean update by
      training-set size (``weighting="data_size"``).
    * ``"flower"``: $v_{-1} = 0$ (flwr 1.42.0, ``flwr/server/strategy/fedadam.py``,
      ``fedyogi.py``, ``fedadagrad.py``; the same maths in ``flwr/serverapp/strategy/``);
      ``"adam"`` steps $x_{t+1} = x_t + \eta_t m_t / (\sqrt{v_t} + \tau)$ with
      $\eta_t = \eta \sqrt{1 - \beta_2^{t+2}} / (1 - \beta_1^{t+2})$ (Flower's FedAdam,
      whose ``server_round`` counts from 1 and enters as ``server_round + 1``), ``"yogi"``
      and ``"adagrad"`` as ``"fl_bench"`` (Flower's FedYogi, FedAdagrad). Flower's FedAdagrad
      has no first moment ($\beta_1 = 0$ fixed), so this variant with ``"adagrad"`` refuses
      ``beta1`` other than 0. Flower's mean weighs by ``num_examples``
      (``weighting="data_size"``).

    Each peer's defaults differ from these (Flower: FedAdam's and FedAdagrad's ``tau=1e-9``
    in ``flwr.server``, ``1e-3`` in ``flwr.serverapp``, FedYogi's ``eta=1e-2``; FL-bench:
    ``beta2=0.999``): pass its numbers as keywords. The default's run hash is the one it
    had before ``variant`` existed (recorded only when it is not ``"reddi"``).

    Examples
    --------
    Client $i$ minimises $(x - i)^2 / 2$ (the optimum of the sum is 1.5); FedAdam's steps of
    about $\eta$ per round reach it:

    >>> import torch
    >>> c = torch.arange(4.0, dtype=torch.float64).unsqueeze(1)
    >>> algo = tf.algorithms.fedopt(lr=0.1, optimizer="adam", server_lr=0.05)
    >>> trace = tf.engine.run_rounds(algo, torch.zeros_like(c), None,
    ...                              lambda z, phase, rnd: z - c, rounds=300)
    >>> round(trace.evaluated()[0].item(), 3), trace.messages[0]
    (1.5, 8)
    >>> tf.algorithms.fedopt(optimizer="lamb")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: optimizer must be one of ...
    """
    kw = Keywords("fedopt", keywords)
    local, active, opt = kw.take(sgd, _SGD), kw.take(sampling), kw.take(server)
    kw.done()
    hp = server_params(local, active, weighting)
    name, eta, b1, b2, t, variant = opt.checked()
    recorded: dict[str, Any] = dict(optimizer=name, server_lr=eta, beta1=b1, beta2=b2, tau=t)
    if variant != "reddi":  # recorded only when set: a default run's header and hash as before
        recorded["variant"] = variant
    if name == "sgd" and eta == 1.0:  # FedAvg's pieces exactly (the fused path too)
        return fedavg_algorithm("fedopt", hp, hparams=recorded)
    step = _ServerOptimizer(hp, name, eta, b1, b2, t, variant)
    return fedavg_algorithm("fedopt", hp, hparams=recorded, communicate=step,
                            init=(step,), round_start=step.round_start)
