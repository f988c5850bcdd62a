r"""FedProx: FedAvg whose clients minimise their loss plus a proximal term to the global model.

References
----------
.. [1] T. Li, A. K. Sahu, M. Zaheer, M. Sanjabi, A. Talwalkar, V. Smith, "Federated
   optimization in heterogeneous networks", MLSys 2020 (FedProx, Algorithm 2).
.. [2] A. Kharrat, M. Canini, S. Horvath, "Decentralized personalized federated learning"
   (DPFL), Table 1 and Appendix F.6 ($\mu = 0.1$ on every dataset).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from topofl._utils.validation import check_real
from topofl.algorithms._server import ServerParams, fedavg_algorithm, server_params
from topofl.algorithms.base import register_algorithm
from topofl.algorithms.hparams import (
    Keywords,
    LocalSGD,
    LocalSGDKeywords,
    Sampling,
    SamplingKeywords,
)
from topofl.engine.pieces import SGD, Proximal
from topofl.engine.protocol import Algorithm

if TYPE_CHECKING:  # Unpack is typing's from Python 3.11; only the type checker reads it
    from typing_extensions import Unpack

__all__ = ["fedprox", "FedProxKeywords"]

MU = 0.1  # DPFL, Appendix F.6: "For FedProx we use lambda = 0.1 for all datasets"


def prox_algorithm(name: str, hp: ServerParams[LocalSGD], mu: Any, *,
                   hparams: dict[str, Any] | None = None, evaluate: Any = None) -> Algorithm:
    """FedProx's pieces (:func:`fedprox`), shared with :func:`~topofl.algorithms.fedprox_ft`."""
    mu = check_real(mu, "mu", low=0)
    recorded = dict(mu=mu, **(hparams or {}))
    if not mu:  # mu = 0: FedAvg's pieces exactly (the same numbers, the fused path too)
        return fedavg_algorithm(name, hp, hparams=recorded, evaluate=evaluate)
    prox = Proximal(SGD(hp.sgd.momentum, hp.sgd.weight_decay), mu)
    return fedavg_algorithm(name, hp, hparams=recorded, local=prox,
                            round_start=prox.round_start, evaluate=evaluate)


_SGD, _EVERY_CLIENT = LocalSGD(), Sampling()


class FedProxKeywords(LocalSGDKeywords, SamplingKeywords, total=False):
    """FedProx's flat keywords: the fields of its groups (FedAvg's)."""


@register_algorithm("fedprox")
def fedprox(sgd: LocalSGD | float = _SGD, sampling: Sampling = _EVERY_CLIENT, *,
            weighting: str = "uniform", mu: float = MU,
            **keywords: Unpack[FedProxKeywords]) -> Algorithm:
    r"""FedProx: FedAvg whose local steps minimise $F_k(w) + \frac{\mu}{2}\|w - w^t\|^2$.

    Each participating client starts from the global model $w^t$ it received and takes local
    SGD steps on its loss plus the proximal term, i.e. with the gradient
    $\nabla F_k(w) + \mu (w - w^t)$; the server averages the results as
    :func:`~topofl.algorithms.fedavg` does (and takes its keywords: ``lr``, ``momentum``,
    ``weight_decay``, ``local_steps``, ``local_epochs``, ``decay``, ``participation``,
    ``sample_seed``, ``weighting``). ``mu = 0`` is FedAvg exactly.

    Parameters
    ----------
    sgd : LocalSGD or float, default LocalSGD()
        The local SGD (a number: its ``lr``): ``lr``, ``momentum``, ``weight_decay``,
        ``local_steps``, ``local_epochs``, ``decay``.
    sampling : Sampling, default Sampling()
        The round's participants: ``participation``, ``sample_seed``.
    weighting : {"uniform", "data_size"}, default "uniform"
        As in :func:`~topofl.algorithms.fedavg`, as the groups' fields.
    mu : float, default 0.1
        Proximal coefficient $\mu \ge 0$ (DPFL's setting, Appendix F.6, which calls it
        $\lambda$).

    Returns
    -------
    Algorithm
        ``uses_topology=False``; ``state.own.anchor``
        (:class:`~topofl.engine.pieces.ProximalState`) holds each client's $w^t$ (copied in
        ``round_start``).

    Notes
    -----
    Li et al.'s Algorithm 2 lets each device solve its local problem inexactly (a
    $\gamma$-inexact minimiser); here the inexact solver is a fixed amount of local SGD (the
    usual implementation, and the one the DPFL comparison uses: the same local epochs for every
    method). The variable amount of work of stragglers is not modelled. Weight decay and
    momentum act on the gradient with the proximal term added.

    On a quadratic $F_k(w) = \frac{a_k}{2}\|w - c_k\|^2$ with $K$ local gradient steps of size
    $\eta$ from $w^t$ and full participation, the rounds converge to
    $w^\star = \sum_k \frac{(1 - r_k^K) a_k c_k}{a_k + \mu} \big/
    \sum_k \frac{(1 - r_k^K) a_k}{a_k + \mu}$ with $r_k = 1 - \eta (a_k + \mu)$ (tested):
    with heterogeneous $a_k$, $\mu$ biases FedProx away from the minimiser of $\sum_k F_k$.

    Examples
    --------
    >>> algo = tf.algorithms.fedprox(lr=0.05, mu=0.01, local_steps=5)
    >>> algo.hparams["mu"], algo.phases[0].steps, algo.uses_topology
    (0.01, 5, False)
    """
    kw = Keywords("fedprox", keywords)
    local, active = kw.take(sgd, _SGD), kw.take(sampling)
    kw.done()
    return prox_algorithm("fedprox", server_params(local, active, weighting), mu)
