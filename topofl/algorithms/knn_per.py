r"""kNN-Per: a FedAvg global model interpolated with a local nearest-neighbour classifier.

References
----------
.. [1] O. Marfoq, G. Neglia, R. Vidal, L. Kameni, "Personalized Federated Learning through
   Local Memorization", ICML 2022 (kNN-Per).
.. [2] S. Kharrat, M. Canini, S. Horvath, "Decentralized Personalized Federated Learning"
   (DPFL), Table 1 and Appendix F.6 (kNN-Per as a baseline: k = 10, interpolation 0.5).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypedDict

import torch
from torch import Tensor

from topofl._utils.validation import check_int, check_real
from topofl.algorithms._server import server_algorithm, server_params
from topofl.algorithms.base import register_algorithm
from topofl.algorithms.hparams import (
    Group,
    Keywords,
    LocalSGD,
    LocalSGDKeywords,
    Sampling,
    SamplingKeywords,
)
from topofl.engine.objectives import objective_of
from topofl.engine.protocol import Adjust, Algorithm, Phase, Round, Services

if TYPE_CHECKING:  # Unpack is typing's from Python 3.11; only the type checker reads it
    from typing_extensions import Unpack

__all__ = ["knn_per", "knn_probabilities", "KNN", "KNNPerKeywords"]


def knn_probabilities(query: Tensor, keys: Tensor, labels: Tensor, valid: Tensor, *, k: int,
                      num_classes: int, temperature: float, slice_clients: int | None = None
                      ) -> Tensor:
    r"""Class probabilities of a kernel-weighted k-nearest-neighbour vote, per client.

    For client $i$ and query $q$, with $\mathcal{N}_k(q)$ the $k$ stored features of client
    $i$ closest to $q$ (Euclidean distance $d$):
    $p(c \mid q) = \sum_{j \in \mathcal{N}_k} e^{-d(q, f_j)/T}\,1[y_j = c] /
    \sum_{j \in \mathcal{N}_k} e^{-d(q, f_j)/T}$. A client with fewer than $k$ stored samples
    votes with all of them; one with none gives the uniform distribution.

    Parameters
    ----------
    query : Tensor
        ``[n, m, d]`` features to classify.
    keys : Tensor
        ``[n, M, d]`` each client's stored features (its datastore).
    labels : Tensor
        ``[n, M]`` their labels.
    valid : Tensor
        ``[n, M]`` bool: which stored entries are real (the others are padding).
    k : int
    num_classes : int
    temperature : float
        $T > 0$ (the larger, the closer to a plain majority vote).
    slice_clients : int or None, default None
        The number of clients the slices of queries are sized for (below); ``None``: the
        ``n`` of ``query``. The evaluation passes the run's when it scores only some of its
        clients (those with a sample in a padded batch), so that their slices, and so their
        numbers, are the ones of the whole batch.

    Returns
    -------
    Tensor
        ``[n, m, num_classes]``, rows summing to 1.

    Notes
    -----
    The queries are scored in slices of rows so that the ``[n, rows, M]`` distance tensor stays
    under :data:`DISTANCE_ELEMENTS` elements (an evaluation batch of 10 clients x 28,000 test
    samples against 4,000 stored ones is 1.1e9 distances, 4.5 GB in float32). Every row's
    numbers are those of the unsliced computation to rounding: a slice has at least 32 rows,
    so ``torch.cdist`` takes the same matrix-product path for it, but that product (MKL) is
    blocked by its shape and the CPU, so the slices' distances may differ from the whole's in
    the last bits: in float64 the probabilities agree to ~1e-12, in float32 within its
    rounding (~1e-6), and the neighbours are the same except at near-ties (a query whose
    k-th and (k+1)-th stored features are at near-equal distances may take either).

    Examples
    --------
    One client, three stored points on a line (labels 0, 0, 1) and a query at 1.4 with
    ``k = 2``: the neighbours are 1.0 (label 0, distance 0.4) and 2.0 (label 1, distance 0.6),
    so $p(0) = 1 / (1 + e^{-0.2}) = 0.5498$.

    >>> import torch
    >>> from topofl.algorithms.knn_per import knn_probabilities
    >>> keys = torch.tensor([[[0.0], [1.0], [2.0]]], dtype=torch.float64)
    >>> p = knn_probabilities(torch.tensor([[[1.4]]], dtype=torch.float64), keys,
    ...     torch.tensor([[0, 0, 1]]), torch.ones(1, 3, dtype=torch.bool), k=2,
    ...     num_classes=2, temperature=1.0)
    >>> [round(v, 4) for v in p.flatten().tolist()]
    [0.5498, 0.4502]
    """
    n, m = query.shape[0], query.shape[1]
    if keys.shape[1] == 0:
        return torch.full((n, m, num_classes), 1.0 / num_classes, dtype=query.dtype,
                          device=query.device)
    keys = keys.to(query.dtype)
    clients = n if slice_clients is None else int(slice_clients)
    rows = max(_MIN_ROWS, DISTANCE_ELEMENTS // max(1, clients * keys.shape[1]))
    if m <= rows:
        return _vote(query, keys, labels, valid, k, num_classes, temperature)
    # slices of near-equal size, each of at least rows / 2 >= 32 queries
    return torch.cat([_vote(q, keys, labels, valid, k, num_classes, temperature)
                      for q in torch.tensor_split(query, -(-m // rows), dim=1)], dim=1)


#: the most elements of one ``[n, rows, M]`` distance tensor of :func:`knn_probabilities`
DISTANCE_ELEMENTS = 1 << 24
_MIN_ROWS = 64


def _vote(query: Tensor, keys: Tensor, labels: Tensor, valid: Tensor, k: int,
          num_classes: int, temperature: float) -> Tensor:
    """:func:`knn_probabilities` of one slice of queries (``keys`` non-empty, of
    ``query``'s dtype)."""
    n, m = query.shape[0], query.shape[1]
    probs = torch.zeros(n, m, num_classes, dtype=query.dtype, device=query.device)
    dist = torch.cdist(query, keys)  # [n, m, M]
    dist = dist.masked_fill(~valid.unsqueeze(1), math.inf)
    kk = min(k, keys.shape[1])
    near, idx = torch.topk(dist, kk, dim=2, largest=False)  # [n, m, kk]
    ok = torch.isfinite(near)
    # shift by the nearest distance: the normalisation cancels it and exp cannot underflow
    shifted = near - near[:, :, :1].masked_fill(~ok[:, :, :1], 0.0)
    w = torch.where(ok, torch.exp(-shifted / temperature), torch.zeros_like(near))
    lab = torch.gather(labels.unsqueeze(1).expand(n, m, labels.shape[1]), 2, idx)
    probs.scatter_add_(2, lab, w)
    total = probs.sum(dim=2, keepdim=True)
    return torch.where(total > 0, probs / total.clamp_min(torch.finfo(probs.dtype).tiny),
                       torch.full_like(probs, 1.0 / num_classes))


@dataclass(frozen=True)
class KNN(Group):
    r"""kNN-Per's nearest-neighbour classifier and its interpolation with the model.

    Attributes
    ----------
    k : int, default 10
        Neighbours per query.
    interpolation : float in [0, 1], default 0.5
        $\lambda$: the kNN classifier's weight.
    temperature : float, default 1
        $T > 0$ of the kernel weights $e^{-d/T}$.
    """

    k: int = 10
    interpolation: float = 0.5
    temperature: float = 1.0

    def __post_init__(self) -> None:
        self.checked()

    def checked(self) -> tuple[int, float, float]:
        """``(k, interpolation, temperature)`` checked."""
        return (check_int(self.k, "k", low=1),
                check_real(self.interpolation, "interpolation", low=0, high=1),
                check_real(self.temperature, "temperature", low=0, low_open=True))


class KNNKeywords(TypedDict, total=False):
    """:class:`KNN`'s fields as flat keywords."""

    k: int
    interpolation: float
    temperature: float


class KNNPerKeywords(LocalSGDKeywords, SamplingKeywords, KNNKeywords, total=False):
    """kNN-Per's flat keywords: the fields of its groups."""


_SGD, _EVERY_CLIENT, _KNN = LocalSGD(), Sampling(), KNN()


def _predictor(k: int, lam: float, temperature: float
               ) -> Callable[[Tensor, Round, Services], Adjust]:
    """kNN-Per's ``predict`` hook: the datastores of the clients' training splits, then the
    model's softmax mixed with the kNN vote (:func:`knn_per`)."""

    def predict(x_eval: Tensor, rnd: Round, env: Services) -> Adjust:
        objective = objective_of(getattr(env, "executor", None))
        if not objective.classifies:
            raise ValueError("knn_per mixes the model's class probabilities with a vote of "
                             "its neighbours' labels: it needs class labels, and this run "
                             f"trains with {objective.name!r} (regression targets)")
        keys, labels, valid = env.split_features(x_eval, "train")

        def adjust(inputs: Tensor, logits: Tensor, shared_input: bool,
                   rows: Tensor | None = None) -> Tensor:
            # rows: the clients the batch's rows belong to (the evaluation scores only those
            # with a sample in a padded batch); None: every client
            xe, ks, ls, vs = (x_eval, keys, labels, valid) if rows is None else (
                x_eval.index_select(0, rows), keys.index_select(0, rows),
                labels.index_select(0, rows), valid.index_select(0, rows))
            q = env.features(xe, inputs, shared_input=shared_input)
            p_knn = knn_probabilities(q, ks, ls, vs, k=k, num_classes=logits.shape[-1],
                                      temperature=temperature,
                                      slice_clients=int(x_eval.shape[0]))
            p = torch.softmax(logits, dim=-1).mul_(1.0 - lam).add_(p_knn.to(logits.dtype),
                                                                    alpha=lam)
            return p.clamp_min_(torch.finfo(p.dtype).tiny).log_()

        return adjust

    return predict


@register_algorithm("knn_per")
def knn_per(sgd: LocalSGD | float = _SGD, sampling: Sampling = _EVERY_CLIENT,
            knn: KNN = _KNN, *, weighting: str = "uniform",
            **keywords: Unpack[KNNPerKeywords]) -> Algorithm:
    r"""kNN-Per: FedAvg's global model, interpolated at prediction time with a local kNN.

    Training is FedAvg (local SGD, server average of the whole model). To predict, client $i$
    embeds its own training samples with the global model's feature extractor $\phi$ (the
    output of the model's body, the input of its last layer) into a datastore, and mixes the
    model's softmax with a $k$-nearest-neighbour vote over that datastore:
    $p_i(y \mid x) = \lambda\, p_{\mathrm{kNN},i}(y \mid \phi(x)) +
    (1 - \lambda)\, \mathrm{softmax}(h(\phi(x)))_y$ (:func:`knn_probabilities`).

    Parameters
    ----------
    sgd : LocalSGD or float, default LocalSGD()
        The local SGD (a number: its ``lr``): ``lr``, ``momentum``, ``weight_decay``,
        ``local_steps``, ``local_epochs``, ``decay`` below.
    sampling : Sampling, default Sampling()
        The round's participants: ``participation``, ``sample_seed`` below.
    knn : KNN, default KNN()
        The kNN classifier: ``k``, ``interpolation``, ``temperature`` below.
    lr : float, default 0.1
        Local learning rate (``lr * decay**t`` at round ``t``).
    k : int, default 10
        Neighbours per query (DPFL's setting, Appendix F.6).
    interpolation : float in [0, 1], default 0.5
        $\lambda$: 0 is the global model, 1 the kNN classifier alone (DPFL's setting 0.5).
    temperature : float, default 1
        $T > 0$ of the kernel weights $e^{-d/T}$ on the neighbours' Euclidean distances
        (the larger, the closer to a plain majority vote).
    local_steps, local_epochs
        Local work per round: steps (default 1) or epochs.
    momentum : float, default 0
        Heavy-ball momentum of the local SGD (restarted every round).
    weight_decay, decay, participation, sample_seed, weighting
        As in :func:`~topofl.algorithms.fedavg` (same defaults).

    Returns
    -------
    Algorithm
        FedAvg with a ``predict`` hook (:class:`~topofl.engine.Algorithm`): every evaluation
        builds the datastores from the clients' training splits
        (``env.split_features(x, "train")``) and scores with $\log p_i$, so the recorded
        accuracy is the interpolated classifier's and the loss its cross-entropy.
        ``shared="all"``, ``uses_topology=False``.

    Notes
    -----
    The datastore holds all of the client's training samples and is rebuilt from the current
    global model at every evaluation. Log-probabilities are clipped at the smallest positive
    float (with $\lambda = 1$ a class no neighbour votes for has probability 0). The model
    must be a :class:`~topofl.models.SplitModel` (its ``body`` gives $\phi$; a body without
    parameters, e.g. ``logistic``'s ``Flatten``, gives the raw inputs). Cost per evaluation:
    one forward pass of the body over every client's training split, and per test batch of
    ``m`` samples a ``[n, m, M]`` distance tensor (``M`` the largest training split).
    Messages: ``2 m`` per round with ``m`` participants.

    References
    ----------
    .. [1] O. Marfoq, G. Neglia, R. Vidal, L. Kameni, "Personalized Federated Learning through
       Local Memorization", ICML 2022.

    Examples
    --------
    >>> algo = tf.algorithms.knn_per(0.05, k=5, interpolation=0.3)
    >>> algo.hparams["k"], algo.hparams["interpolation"], algo.predict is not None
    (5, 0.3, True)
    """
    kw = Keywords("knn_per", keywords)
    local, active, vote = kw.take(sgd, _SGD), kw.take(sampling), kw.take(knn)
    kw.done()
    hp = server_params(local, active, weighting)
    o, steps, epochs = hp.sgd, hp.sgd.local_steps, hp.sgd.local_epochs
    k, lam, temperature = vote.checked()
    algo = server_algorithm(
        "knn_per", hp,
        dict(lr=o.lr, k=k, interpolation=lam, temperature=temperature,
             momentum=o.momentum, weight_decay=o.weight_decay, local_steps=steps,
             local_epochs=epochs, decay=o.decay),
        (Phase("all", steps, epochs, o.lr, name="global"),),
        shared="all",
    )
    return algo._replace(predict=_predictor(k, lam, temperature))
