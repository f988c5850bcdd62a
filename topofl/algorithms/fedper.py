"""FedPer: FedAvg on the body (base layers), the head (personalization layers) kept local."""

from __future__ import annotations

from typing import TYPE_CHECKING

from topofl.algorithms._server import server_algorithm, server_params
from topofl.algorithms.base import register_algorithm
from topofl.algorithms.hparams import (
    Keywords,
    LocalSGD,
    LocalSGDKeywords,
    Sampling,
    SamplingKeywords,
)
from topofl.engine.protocol import Algorithm, Phase

if TYPE_CHECKING:  # Unpack is typing's from Python 3.11; only the type checker reads it
    from typing_extensions import Unpack

__all__ = ["fedper", "FedPerKeywords"]

_SGD, _EVERY_CLIENT = LocalSGD(), Sampling()


class FedPerKeywords(LocalSGDKeywords, SamplingKeywords, total=False):
    """FedPer's flat keywords: the fields of its groups."""


@register_algorithm("fedper")
def fedper(sgd: LocalSGD | float = _SGD, sampling: Sampling = _EVERY_CLIENT, *,
           weighting: str = "uniform", **keywords: Unpack[FedPerKeywords]) -> Algorithm:
    r"""FedPer: FedAvg on the *base* (body) layers, *personalization* (head) layers kept local.

    Every round each participating client trains its whole model (body and head together) with
    SGD on its own data, then the server averages the bodies and sends the average back; the
    head never leaves its client.

    Parameters
    ----------
    sgd : LocalSGD or float, default LocalSGD()
        The local SGD (a number: its ``lr``): ``lr``, ``momentum``, ``weight_decay``,
        ``local_steps``, ``local_epochs``, ``decay`` below.
    sampling : Sampling, default Sampling()
        The round's participants: ``participation``, ``sample_seed`` below.
    lr, momentum, weight_decay, local_steps, local_epochs, decay, participation, sample_seed
        As in :func:`~topofl.algorithms.fedavg` (same defaults), except that the momentum
        restarts every round. DFedPGP's centralized baselines use ``participation=0.1``.
    weighting : {"uniform", "data_size"}, default "uniform"
        Mean of the bodies, or FedAvg's mean weighted by training-set sizes.

    Returns
    -------
    Algorithm
        ``shared="body"``, ``uses_topology=False``; evaluates each client's body (the server
        average) with its own head.

    Notes
    -----
    Arivazhagan et al. split the network into base layers, aggregated with FedAvg, and
    personalization layers that stay on the device; both are trained jointly in the local
    epochs. topofl's *body* is the base and its *head* (the last linear layer, see
    :mod:`topofl.models`) the personalization layers. The paper aggregates like FedAvg (weights
    $n_k/n$); the default here is the plain mean, as :func:`~topofl.algorithms.fedavg` (equal
    for equal-sized clients), and ``weighting="data_size"`` gives the paper's. Messages: ``2 m``
    per round with ``m`` participants, each of ``P_body`` numbers.

    References
    ----------
    .. [1] M. G. Arivazhagan et al., "Federated learning with personalization layers",
       arXiv:1912.00818, 2019.

    Examples
    --------
    Four clients, three classes each: after one round the bodies are the same, the heads are not.

    >>> import torch
    >>> data = tf.data.federate("digits", "pathological", 4, classes_per_client=3, seed=0)
    >>> model = tf.models.build_model("mlp", data.input_shape, data.num_classes, seed=0,
    ...                               hidden=(8,))
    >>> res = tf.run("fedper", data=data, model=model, rounds=1, local_steps=2, batch_size=8)
    >>> body, head = res.layout.cols("body"), res.layout.cols("head")
    >>> x = res.state.x
    >>> bool((x[:, body] == x[0, body]).all()), bool((x[:, head] == x[0, head]).all())
    (True, False)
    >>> int(res.records.final("messages"))
    8
    """
    kw = Keywords("fedper", keywords)
    local, active = kw.take(sgd, _SGD), kw.take(sampling)
    kw.done()
    hp = server_params(local, active, weighting)
    o = hp.sgd
    return server_algorithm("fedper", hp, o.as_dict(),
                            (Phase("all", o.local_steps, o.local_epochs, o.lr, name="local"),))
