r"""FedProx+FT: FedProx, each client fine-tuning the global model on its own data to evaluate.

References
----------
.. [1] T. Li et al., "Federated optimization in heterogeneous networks", MLSys 2020 (FedProx).
.. [2] A. Kharrat, M. Canini, S. Horvath, "Decentralized personalized federated learning"
   (DPFL), Table 1 and Appendix F.6 (FedProx+FT).
"""

from __future__ import annotations

from topofl.algorithms._server import FedAvgParams, Finetune, fedavg_ft_factory
from topofl.algorithms.base import register_algorithm
from topofl.algorithms.fedprox import MU, prox_algorithm
from topofl.engine.protocol import Algorithm

__all__ = ["fedprox_ft"]


@register_algorithm("fedprox_ft")
@fedavg_ft_factory
def fedprox_ft(hp: FedAvgParams, ft: Finetune, *, mu: float = MU) -> Algorithm:
    r"""FedProx+FT: FedProx, each client scored with the global model fine-tuned on its data.

    The training is FedProx's (``mu``, default 0.1, and FedAvg's keywords); the fine-tuning is
    :func:`~topofl.algorithms.fedavg_ft`'s (plain SGD on a copy of the whole model, without the
    proximal term; default twice a round's local work, DPFL's "$2\tau$ local epochs").

    Examples
    --------
    Three local steps a round: six fine-tuning steps before each evaluation.

    >>> algo = tf.algorithms.fedprox_ft(lr=0.05, local_steps=3)
    >>> algo.hparams["mu"], algo.hparams["local_steps"], algo.hparams["finetune_steps"]
    (0.1, 3, 6)
    """
    return prox_algorithm("fedprox_ft", hp, mu, hparams=ft.as_dict(), evaluate=ft.evaluate)
