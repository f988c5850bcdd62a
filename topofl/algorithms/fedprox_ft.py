r"""FedProx+FT: FedProx, each client fine-tuning the global model on its own data to evaluate.

References
----------
.. [1] T. Li et al., "Federated optimization in heterogeneous networks", MLSys 2020 (FedProx).
.. [2] A. Kharrat, M. Canini, S. Horvath, "Decentralized personalized federated learning"
   (DPFL), Table 1 and Appendix F.6 (FedProx+FT).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from topofl.algorithms._server import check_finetune, server_params
from topofl.algorithms.base import register_algorithm
from topofl.algorithms.fedprox import MU, prox_algorithm
from topofl.algorithms.hparams import (
    Finetune,
    FinetuneKeywords,
    Keywords,
    LocalSGD,
    LocalSGDKeywords,
    Sampling,
    SamplingKeywords,
)
from topofl.engine.protocol import Algorithm

if TYPE_CHECKING:  # Unpack is typing's from Python 3.11; only the type checker reads it
    from typing_extensions import Unpack

__all__ = ["fedprox_ft", "FedProxFTKeywords"]

_SGD, _EVERY_CLIENT, _FINETUNE = LocalSGD(), Sampling(), Finetune()


class FedProxFTKeywords(LocalSGDKeywords, SamplingKeywords, FinetuneKeywords, total=False):
    """FedProx+FT's flat keywords: the fields of its groups."""


@register_algorithm("fedprox_ft")
def fedprox_ft(sgd: LocalSGD | float = _SGD, sampling: Sampling = _EVERY_CLIENT,
               finetune: Finetune = _FINETUNE, *, weighting: str = "uniform", mu: float = MU,
               **keywords: Unpack[FedProxFTKeywords]) -> Algorithm:
    r"""FedProx+FT: FedProx, each client scored with the global model fine-tuned on its data.

    The training is FedProx's (``mu``, default 0.1, and FedAvg's keywords); the fine-tuning is
    :func:`~topofl.algorithms.fedavg_ft`'s (plain SGD on a copy of the whole model, without the
    proximal term; default twice a round's local work, DPFL's "$2\tau$ local epochs").

    Parameters
    ----------
    sgd : LocalSGD or float, default LocalSGD()
        The local SGD (a number: its ``lr``): ``lr``, ``momentum``, ``weight_decay``,
        ``local_steps``, ``local_epochs``, ``decay``.
    sampling : Sampling, default Sampling()
        The round's participants: ``participation``, ``sample_seed``.
    finetune : Finetune, default Finetune()
        The fine-tuning before each evaluation: ``finetune_steps``, ``finetune_epochs``,
        ``finetune_lr`` (default twice a round's local work, at ``lr``).
    weighting : {"uniform", "data_size"}, default "uniform"
        As in :func:`~topofl.algorithms.fedavg`, as the groups' fields.
    mu : float, default 0.1
        As in :func:`~topofl.algorithms.fedprox`.

    Examples
    --------
    Three local steps a round: six fine-tuning steps before each evaluation.

    >>> algo = tf.algorithms.fedprox_ft(lr=0.05, local_steps=3)
    >>> algo.hparams["mu"], algo.hparams["local_steps"], algo.hparams["finetune_steps"]
    (0.1, 3, 6)
    """
    kw = Keywords("fedprox_ft", keywords)
    local, active, tune = kw.take(sgd, _SGD), kw.take(sampling), kw.take(finetune)
    kw.done()
    hp = server_params(local, active, weighting)
    ft = check_finetune(hp, tune)
    return prox_algorithm("fedprox_ft", hp, mu, hparams=ft.as_dict(), evaluate=ft.evaluate)
