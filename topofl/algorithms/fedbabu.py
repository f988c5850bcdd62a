"""FedBABU: train and average only the body under a fixed random head; fine-tune to evaluate."""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from topofl._utils.validation import check_choice
from topofl.algorithms._server import Tuning, same_head, server_algorithm, server_params
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
from topofl.engine.pieces import compose_init
from topofl.engine.protocol import Algorithm, Part, Phase

if TYPE_CHECKING:  # Unpack is typing's from Python 3.11; only the type checker reads it
    from typing_extensions import Unpack

__all__ = ["fedbabu", "FedBABUKeywords"]

_FINETUNE_STREAM = 7  # local_train stream of the evaluation-time fine-tuning

_SGD, _EVERY_CLIENT, _FINETUNE = LocalSGD(), Sampling(), Finetune()


class FedBABUKeywords(LocalSGDKeywords, SamplingKeywords, FinetuneKeywords, total=False):
    """FedBABU's flat keywords: the fields of its groups."""


@register_algorithm("fedbabu")
def fedbabu(sgd: LocalSGD | float = _SGD, sampling: Sampling = _EVERY_CLIENT,
            finetune: Finetune = _FINETUNE, *, weighting: str = "uniform",
            finetune_part: str = "head", **keywords: Unpack[FedBABUKeywords]) -> Algorithm:
    r"""FedBABU: train and average only the body under a fixed random head; fine-tune to evaluate.

    During training the head keeps its random initial value on every client (it is never
    updated nor communicated) and the body is trained locally and averaged by the server. To
    evaluate, each client fine-tunes a *copy* of the global model on its own training data and
    is scored with the fine-tuned copy; the training state is left untouched.

    Parameters
    ----------
    sgd : LocalSGD or float, default LocalSGD()
        The local SGD of the body (a number: its ``lr``): ``lr``, ``momentum``,
        ``weight_decay``, ``local_steps``, ``local_epochs``, ``decay`` below.
    sampling : Sampling, default Sampling()
        The round's participants: ``participation``, ``sample_seed`` below.
    finetune : Finetune, default Finetune()
        The fine-tuning before each evaluation: ``finetune_steps``, ``finetune_epochs``,
        ``finetune_lr`` below.
    lr : float, default 0.1
        Learning rate of the body (``lr * decay**t`` at round ``t``).
    momentum : float, default 0
        Heavy-ball momentum of the local SGD (restarted every round).
    weight_decay : float, default 0
    local_steps, local_epochs
        Local body updates per round: steps (default 1) or epochs.
    decay : float, default 1
    participation : float in (0, 1], default 1
    sample_seed : int, default 0
    weighting : {"uniform", "data_size"}, default "uniform"
    finetune_steps, finetune_epochs
        Fine-tuning before each evaluation: steps (default 5), or epochs (the paper's
        $\tau_f$ is 5 epochs: ``finetune_epochs=5``); 0 evaluates the global model with the
        random head as it is.
    finetune_lr : float, optional
        Learning rate of the fine-tuning (default ``lr``, not decayed).
    finetune_part : {"head", "all"}, default "head"
        What the fine-tuning trains: the head (the method as its abstract states it) or the
        whole model (the paper also reports full fine-tuning).

    Returns
    -------
    Algorithm
        One ``"body"`` phase; ``shared="body"``, ``uses_topology=False``.

    Notes
    -----
    Oh et al.: "only updates the body of the model during federated training (i.e., the head is
    randomly initialized and never updated), and the head is fine-tuned for personalization
    during the evaluation process". The head is part of the server's initial model, so ``init``
    gives every client the head of client 0 (they already agree with the engine's default
    ``init="same"``).

    Fine-tuning is plain SGD through ``ctx.local_train`` on a copy of the ``[n, P]`` parameters,
    on training batches of a stream distinct from the training phases' (indexed by the round,
    so evaluating twice gives the same numbers). Cost per evaluation: one extra ``[n, P]``
    buffer and ``finetune_steps`` batched forward/backward passes over all clients (with
    epochs, ``ceil(finetune_epochs * m_i / batch_size)`` for client ``i``, the largest count for
    the batch): the paper's 5 epochs cost five local epochs of every client at *each*
    evaluation, so evaluate less often (``eval_every``) on large runs. The default counts steps,
    the unit of every other topofl default, to keep evaluation cheap. Messages: ``2 m`` per
    round of ``P_body`` numbers each.

    References
    ----------
    .. [1] J. Oh, S. Kim, S.-Y. Yun, "FedBABU: Toward enhanced representation for federated
       image classification", ICLR 2022.

    Examples
    --------
    >>> algo = tf.algorithms.fedbabu(lr=0.05, finetune_steps=3)
    >>> algo.phases[0].part, algo.shared, algo.hparams["finetune_part"]
    ('body', 'body', 'head')
    """
    kw = Keywords("fedbabu", keywords)
    local, active, tune = kw.take(sgd, _SGD), kw.take(sampling), kw.take(finetune)
    kw.done()
    hp = server_params(local, active, weighting)
    o = hp.sgd
    ft = Tuning.check(tune, default_lr=o.lr, default_steps=5, stream=_FINETUNE_STREAM)
    ft = ft._replace(part=cast(Part, check_choice(finetune_part, "finetune_part",
                                                  ("head", "all"))))
    opt = hp.sampled()
    return server_algorithm(
        "fedbabu", hp, dict(o.as_dict(), **ft.as_dict(), finetune_part=ft.part),
        (Phase("body", o.local_steps, o.local_epochs, o.lr, name="body"),),
        evaluate=ft.evaluate,
        local=opt,
        init=compose_init(opt, check=same_head),
    )
