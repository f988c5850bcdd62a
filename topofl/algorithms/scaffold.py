r"""SCAFFOLD: FedAvg whose local steps are corrected by control variates against client drift.

References
----------
.. [1] S. P. Karimireddy, S. Kale, M. Mohri, S. J. Reddi, S. U. Stich, A. T. Suresh,
   "SCAFFOLD: Stochastic controlled averaging for federated learning", ICML 2020
   (Algorithm 1, option II).
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
from topofl.engine.ledger import Flow, dtype_bits
from topofl.engine.pieces import SGD, hold, server_flows
from topofl.engine.protocol import Algorithm, Kernel, Phase, Round, Sent, Services, State

if TYPE_CHECKING:  # Unpack is typing's from Python 3.11; only the type checker reads it
    from typing_extensions import Unpack

__all__ = ["scaffold", "ScaffoldState", "ScaffoldKeywords"]


@dataclass
class ScaffoldState:
    r"""SCAFFOLD's state besides the models (``State.own``).

    Attributes
    ----------
    anchor : Tensor
        ``[n, P]`` the server model $x$ each client received at the start of the round.
    control : Tensor
        ``[n, P]`` the client control variates $c_i$ (0 at the start).
    server_control : Tensor
        ``[n, P]`` each client's copy of the server control variate $c$ (every row the same;
        0 at the start).
    lr_sum : Tensor
        ``[n]`` the sum of the learning rates of the client's local steps in the round:
        $K \eta_l$ for $K$ steps of rate $\eta_l$ (0 for a client that did not train).
    """

    anchor: Tensor
    control: Tensor
    server_control: Tensor
    lr_sum: Tensor


@dataclass(frozen=True)
class _Corrected:
    """SCAFFOLD's local piece: ``inner`` (SGD) on the corrected gradient ``g - c_i + c``."""

    inner: SGD

    @property
    def rowwise(self) -> bool:
        """As the inner piece (the correction reads the client's own row)."""
        return self.inner.rowwise

    def init_(self, state: State, env: Services) -> None:
        """The inner piece's buffers and :class:`ScaffoldState` (control variates 0)."""
        self.inner.init_(state, env)
        x = state.x
        hold(state, ScaffoldState(anchor=x.clone(), control=torch.zeros_like(x),
                                  server_control=torch.zeros_like(x),
                                  lr_sum=torch.zeros(x.shape[0], dtype=x.dtype,
                                                     device=x.device)))

    def round_start(self, state: State, rnd: Round, env: Services) -> None:
        """Remember the model received ($x$) and restart the sum of the rates."""
        own = state.own_as(ScaffoldState)
        own.anchor.copy_(state.x)
        own.lr_sum.zero_()

    def point(self, state: State, phase: Phase, env: Services) -> Tensor:
        """The parameters."""
        return self.inner.point(state, phase, env)

    def update(self, state: State, grads: Tensor, phase: Phase, lr: Tensor, rnd: Round,
               env: Services) -> None:
        """``grads += c - c_i`` on the phase's columns, then the inner step."""
        own = state.own_as(ScaffoldState)
        cols = env.layout.cols(phase.part)
        grads[:, cols].add_(own.server_control[:, cols]).sub_(own.control[:, cols])
        own.lr_sum.add_(lr)
        self.inner.update(state, grads, phase, lr, rnd, env)

    def fused(self, executor: Any) -> Kernel | None:
        """Never fused (the correction comes before the step)."""
        return None


def _server_step(hp: ServerParams[LocalSGD], server_lr: float
                 ) -> Callable[[State, Round, Services], Sent]:
    """The server's step of Algorithm 1: its two updates from the participants' rows."""

    def communicate(state: State, rnd: Round, env: Services) -> Sent:
        own = state.own_as(ScaffoldState)
        x = state.x
        sr = server_round(hp, state, rnd, env)
        took = (sr.weights > 0).unsqueeze(1)
        dy = x - own.anchor  # y_i - x
        # option II: c_i+ - c_i = -c + (x - y_i) / (K lr)
        dc = dy.div(torch.where(took, own.lr_sum.unsqueeze(1), 1.0)).neg_()
        dc.sub_(own.server_control).mul_(took)
        start, (d_x, d_c), den = server_sums(sr, own.anchor, env, "SCAFFOLD's server step",
                                             dy, dc)
        if start is not None:  # else nobody took part: nothing moved
            own.control.add_(dc)
            own.server_control.add_(d_c / den[1])
            x.copy_(start.add_(d_x / den[0], alpha=server_lr))
        flows: list[Flow] = []
        for f in server_flows(env.n, sr.active, x.shape[1], dtype_bits(x.dtype)):
            flows += [f, dataclasses.replace(f, kind="control", attached=True)]
        return Sent.of(*flows, active=sr.active)

    return communicate


_SGD, _EVERY_CLIENT = LocalSGD(), Sampling()


class ScaffoldKeywords(LocalSGDKeywords, SamplingKeywords, total=False):
    """SCAFFOLD's flat keywords: the fields of its groups (FedAvg's)."""


@register_algorithm("scaffold")
def scaffold(sgd: LocalSGD | float = _SGD, sampling: Sampling = _EVERY_CLIENT, *,
             weighting: str = "uniform", server_lr: float = 1.0,
             **keywords: Unpack[ScaffoldKeywords]) -> Algorithm:
    r"""SCAFFOLD: FedAvg with control variates that correct each client's local drift.

    The server holds the model $x$ and a control variate $c$, client $i$ a control variate
    $c_i$ (all 0 at the start). Each round the server sends $(x, c)$ to the round's
    participants $S$; each takes $K$ local steps from $y_i = x$ on the corrected gradient,
    $y_i \leftarrow y_i - \eta_l (g_i(y_i) - c_i + c)$, updates its control variate
    (option II) $c_i^+ = c_i - c + \frac{1}{K \eta_l}(x - y_i)$ and sends back
    $(\Delta y_i, \Delta c_i) = (y_i - x, c_i^+ - c_i)$. The server steps
    $x \leftarrow x + \eta_g \frac{1}{|S|}\sum_{i \in S} \Delta y_i$ and
    $c \leftarrow c + \frac{1}{N} \sum_{i \in S} \Delta c_i$ (Karimireddy et al.,
    Algorithm 1), and sends $x$ to every client.

    It takes :func:`~topofl.algorithms.fedavg`'s keywords (``lr`` is $\eta_l$; ``momentum``,
    ``weight_decay``, ``local_steps``, ``local_epochs``, ``decay``, ``participation``,
    ``sample_seed``, ``weighting``) and its partial participation: the sampled (and online)
    clients train, the others neither train nor change their $c_i$.

    Parameters
    ----------
    sgd : LocalSGD or float, default LocalSGD()
        The local SGD (a number: its ``lr``): ``lr``, ``momentum``, ``weight_decay``,
        ``local_steps``, ``local_epochs``, ``decay``.
    sampling : Sampling, default Sampling()
        The round's participants: ``participation``, ``sample_seed``.
    weighting : {"uniform", "data_size"}, default "uniform"
        As in :func:`~topofl.algorithms.fedavg`, as the groups' fields.
    server_lr : float, default 1
        The global step size $\eta_g > 0$.

    Returns
    -------
    Algorithm
        ``uses_topology=False``: run it with ``topology=None``. ``state.own`` is a
        :class:`ScaffoldState`.

    Notes
    -----
    $K \eta_l$ is the sum of the rates of the steps the client took in the round (with
    ``local_epochs``, each client's own count of steps; with ``decay``, the round's rate).
    Without momentum or weight decay, option II makes $c_i^+$ the mean of the gradients
    along the client's local path. Momentum (kept across rounds, as FedAvg's) and weight
    decay act on the corrected gradient. With ``weighting="data_size"`` the means weigh
    client $i$ by $p_i = n_i / \sum_j n_j$: $\Delta x$ is the $p$-weighted mean over $S$ and
    $c \leftarrow c + \sum_{i \in S} p_i \Delta c_i$, which keeps $c = \sum_i p_i c_i$
    (uniform: $c$ is the mean of the $c_i$, as in the paper).

    Messages: ``2 m`` per round with ``m`` participants (a download and an upload each), as
    FedAvg's, but each carries two vectors of ``P`` numbers, the model and a control variate
    (ledger kind ``"control"`` attached to ``"model"``): twice FedAvg's bytes. Each client
    keeps three more ``[P]`` buffers than FedAvg: $x$ at the round's start, $c_i$ and its
    copy of $c$.

    In the first round every control variate is 0, so it is FedAvg's first round. With one
    local step, full participation and $\eta_g = 1$ it is FedAvg (gradient descent on the
    mean objective) in every round; with several local steps and heterogeneous clients it
    reaches the minimiser of $\frac1N\sum_i f_i$ with a constant step, where FedAvg stays
    biased (tested on quadratics).

    Examples
    --------
    Client $i$ minimises $a_i (x - b_i)^2 / 2$ (the optimum of the sum is
    $\sum a_i b_i / \sum a_i = 2$) with 5 local steps a round at a constant rate: SCAFFOLD
    reaches it, FedAvg's local drift does not.

    >>> import torch
    >>> a = torch.tensor([[1.0], [2.0], [1.0], [4.0]], dtype=torch.float64)
    >>> b = torch.tensor([[0.0], [1.0], [2.0], [3.0]], dtype=torch.float64)
    >>> grad = lambda z, phase, rnd: a * (z - b)
    >>> run = lambda algo: tf.engine.run_rounds(algo, torch.zeros_like(b), None, grad,
    ...                                         rounds=300).evaluated()[0].item()
    >>> round(run(tf.algorithms.scaffold(lr=0.1, local_steps=5)), 8)
    2.0
    >>> round(run(tf.algorithms.fedavg(lr=0.1, local_steps=5)), 4)
    1.7642
    """
    kw = Keywords("scaffold", keywords)
    local, active = kw.take(sgd, _SGD), kw.take(sampling)
    kw.done()
    hp = server_params(local, active, weighting)
    eta_g = check_real(server_lr, "server_lr", low=0, low_open=True)
    corrected = _Corrected(SGD(hp.sgd.momentum, hp.sgd.weight_decay))
    return fedavg_algorithm("scaffold", hp, hparams=dict(server_lr=eta_g), local=corrected,
                            round_start=corrected.round_start,
                            communicate=_server_step(hp, eta_g))
