r"""FedAvg+FT: FedAvg, each client fine-tuning the global model on its own data to evaluate.

References
----------
.. [1] B. McMahan et al., "Communication-efficient learning of deep networks from
   decentralized data", AISTATS 2017 (FedAvg).
.. [2] A. Kharrat, M. Canini, S. Horvath, "Decentralized personalized federated learning"
   (DPFL), Table 1 and Appendix F.6 (FedAvg+FT: "2 * tau local epochs" of fine-tuning).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from topofl.algorithms._server import check_finetune, fedavg_algorithm, server_params
from topofl.algorithms.base import register_algorithm
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

__all__ = ["fedavg_ft", "FedAvgFTKeywords"]

_SGD, _EVERY_CLIENT, _FINETUNE = LocalSGD(), Sampling(), Finetune()


class FedAvgFTKeywords(LocalSGDKeywords, SamplingKeywords, FinetuneKeywords, total=False):
    """FedAvg+FT's flat keywords: the fields of its groups."""


@register_algorithm("fedavg_ft")
def fedavg_ft(sgd: LocalSGD | float = _SGD, sampling: Sampling = _EVERY_CLIENT,
              finetune: Finetune = _FINETUNE, *, weighting: str = "uniform",
              **keywords: Unpack[FedAvgFTKeywords]) -> Algorithm:
    r"""FedAvg+FT: FedAvg, each client scored with the global model fine-tuned on its data.

    Training is :func:`~topofl.algorithms.fedavg` exactly (same keywords, same state, same
    numbers). To evaluate, each client fine-tunes a *copy* of the global model with plain SGD
    on the whole model, on its own training batches, and is scored with the copy; the training
    state is untouched.

    Parameters
    ----------
    sgd : LocalSGD or float, default LocalSGD()
        The local SGD (a number: its ``lr``): ``lr``, ``momentum``, ``weight_decay``,
        ``local_steps``, ``local_epochs``, ``decay``.
    sampling : Sampling, default Sampling()
        The round's participants: ``participation``, ``sample_seed``.
    finetune : Finetune, default Finetune()
        The fine-tuning before each evaluation: ``finetune_steps``, ``finetune_epochs``,
        ``finetune_lr`` below.
    weighting : {"uniform", "data_size"}, default "uniform"
        As in :func:`~topofl.algorithms.fedavg`, as the groups' other fields (``lr``,
        ``momentum``, ``weight_decay``, ``local_steps``, ``local_epochs``, ``decay``,
        ``participation``, ``sample_seed``).
    finetune_steps, finetune_epochs
        Fine-tuning before each evaluation. Default: twice a round's local work (DPFL's
        "$2\tau$ local epochs" with $\tau$ the local epochs of a round): ``2 * local_epochs``
        epochs, or ``2 * local_steps`` steps. 0: no fine-tuning (the scores of FedAvg).
    finetune_lr : float, optional
        Learning rate of the fine-tuning (default ``lr``, not decayed).

    Notes
    -----
    DPFL fine-tunes, after training, the global model that scored best on the validation sets;
    here the current global model is fine-tuned at every evaluation, so the learning curve is
    that of the fine-tuned models (evaluate once at the end, ``eval_every=rounds``, for the
    paper's single number; choosing the best validation round is the evaluation protocol's
    business). Fine-tuning draws its batches from an auxiliary stream indexed by the round, so
    evaluating twice gives the same numbers. Cost per evaluation: one ``[n, P]`` copy and the
    fine-tuning's forward/backward passes over every client.

    Examples
    --------
    >>> algo = tf.algorithms.fedavg_ft(lr=0.05, local_epochs=5)
    >>> algo.hparams["finetune_epochs"], algo.hparams["finetune_lr"]
    (10.0, 0.05)
    """
    kw = Keywords("fedavg_ft", keywords)
    local, active, tune = kw.take(sgd, _SGD), kw.take(sampling), kw.take(finetune)
    kw.done()
    hp = server_params(local, active, weighting)
    ft = check_finetune(hp, tune)
    return fedavg_algorithm("fedavg_ft", hp, hparams=ft.as_dict(), evaluate=ft.evaluate)
