"""FedAvg: local SGD, then the server's average, with all clients or a sample each round.

References
----------
.. [1] B. McMahan, E. Moore, D. Ramage, S. Hampson, B. Agüera y Arcas, "Communication-efficient
   learning of deep networks from decentralized data", AISTATS 2017 (FedAvg, Algorithm 1).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from topofl.algorithms._server import fedavg_algorithm, server_params
from topofl.algorithms.base import register_algorithm
from topofl.algorithms.hparams import (
    Keywords,
    LocalSGD,
    LocalSGDKeywords,
    Sampling,
    SamplingKeywords,
)
from topofl.engine.protocol import Algorithm

if TYPE_CHECKING:  # Unpack is typing's from Python 3.11; only the type checker reads it
    from typing_extensions import Unpack

__all__ = ["fedavg", "FedAvgKeywords"]

_SGD, _EVERY_CLIENT = LocalSGD(), Sampling()


class FedAvgKeywords(LocalSGDKeywords, SamplingKeywords, total=False):
    """FedAvg's flat keywords: the fields of its groups (those of the FedAvg family)."""


@register_algorithm("fedavg")
def fedavg(sgd: LocalSGD | float = _SGD, sampling: Sampling = _EVERY_CLIENT, *,
           weighting: str = "uniform", **keywords: Unpack[FedAvgKeywords]) -> Algorithm:
    r"""FedAvg: local SGD step(s), then the server's average of the participants' models.

    With full participation (the default) this is the fully-connected ideal of the D-Cliques
    paper (``W = 11^T/n`` every round), computed as a mean instead of a product; messages
    ``2 n`` (upload and download).

    With ``participation`` $C < 1$ (McMahan et al.'s client fraction; DFedPGP's centralized
    baselines use 0.1), each round the server samples $m = \max(1, \lfloor C n \rfloor)$
    clients without replacement, from the stream ``(sample_seed, t)`` (the same seed gives the
    same participants; a resumed run samples the same). Only they train; the server averages
    their models and sends the average to *every* client (a client that was not sampled holds
    the current global model, which it would receive the next time it is sampled). Messages:
    ``2 m``. A client that is not sampled keeps its momentum buffer as it is.

    Parameters
    ----------
    sgd : LocalSGD or float, default LocalSGD()
        The local SGD (a number: its ``lr``): ``lr``, ``momentum``, ``weight_decay``,
        ``local_steps``, ``local_epochs``, ``decay`` below.
    sampling : Sampling, default Sampling()
        The round's participants: ``participation``, ``sample_seed`` below.
    lr : float, default 0.1
        Learning rate (``lr * decay**t`` at round ``t``).
    momentum : float, default 0
        Heavy-ball momentum of the local SGD (kept across rounds).
    weight_decay : float, default 0
    local_steps, local_epochs
        Local work per round: steps (default 1) or epochs (one value, or one per client).
    decay : float, default 1
    participation : float in (0, 1], default 1
        Fraction $C$ of the clients sampled each round.
    sample_seed : int, default 0
        Seed of the client sampling, indexed by round.
    weighting : {"uniform", "data_size"}, default "uniform"
        Plain mean of the participants, or weighted by their training-set sizes ($n_k / n$ of
        McMahan et al.).

    Returns
    -------
    Algorithm
        ``uses_topology=False``, ``requires=None``: run it with ``topology=None``.

    Examples
    --------
    >>> tf.algorithms.fedavg(lr=0.1, local_steps=2).phases[0].steps
    2

    Client ``i`` minimises ``(x - i)^2 / 2``, two of four clients per round: the model every
    client holds is the same after each round, and converges to the mean 1.5.

    >>> import torch
    >>> algo = tf.algorithms.fedavg(lr=0.1, participation=0.5, sample_seed=1)
    >>> c = torch.arange(4.0, dtype=torch.float64).unsqueeze(1)
    >>> trace = tf.engine.run_rounds(algo, torch.zeros_like(c), None,
    ...     lambda z, phase, rnd: z - c, rounds=600, lr=lambda rnd, ph: 0.1 * 0.99**rnd.t)
    >>> [round(v, 2) for v in trace.evaluated().flatten().tolist()], trace.messages[0]
    ([1.5, 1.5, 1.5, 1.5], 4)
    """
    kw = Keywords("fedavg", keywords)
    local, active = kw.take(sgd, _SGD), kw.take(sampling)
    kw.done()
    return fedavg_algorithm("fedavg", server_params(local, active, weighting))
