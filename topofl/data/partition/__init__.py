r"""Non-IID partitions of a labelled dataset over clients.

Every scheme is a pure function ``scheme(labels, n_clients, ..., *, seed) -> Partition``. It
validates its input, decides for every sample which client (if any) holds it, and returns a frozen
:class:`Partition`. No scheme loops until a random draw happens to be acceptable: each one makes a
fixed number of vectorised passes over the labels, so 50,000 labels over 1000 clients take a few
milliseconds whatever ``alpha`` is.

Schemes
-------
- :func:`iid`: a uniformly random split into ``n_clients`` parts whose sizes differ by at most one.
- :func:`shards` (McMahan et al. 2017, the D-Cliques setting): sort by label, cut into
  ``n_clients * shards_per_client`` contiguous shards, deal the shards out at random.
- :func:`dirichlet` (Hsu et al. 2019, DFedPGP's ``Dir(alpha)``): the samples of each class ``c``
  are split over the clients in proportions ``q_c ~ Dir(alpha 1_n)``; small clients are topped up
  to ``min_size`` by a single deterministic water-filling pass (no rejection loop).
- :func:`pathological` (DFedPGP's ``Pathological(c)``): every client holds ``c`` distinct classes,
  every class is held by some client, and a class is split evenly over its holders.
- :func:`dpfl_pathological` (DPFL, Appendix F.5.1): the same class assignment, then each class is
  split over its holders in ``Dir(alpha)`` proportions.
- :func:`natural`: one client per pre-existing group (e.g. the writers of FEMNIST).

Conventions
-----------
Counts are turned into integers with the *largest remainder* rule (Hamilton's method): every
client gets the integer part of its share, the few samples left go to the largest fractional
parts (ties broken at random). So no leftover samples are piled on one client, and every count is
within one of its exact share.

Examples
--------
>>> y = tf.data.load("digits").y_train
>>> p = tf.data.shards(y, 100, shards_per_client=2, seed=0)
>>> p
Partition(name='shards', n_clients=100, samples=1442/1442, classes=10, sizes=14..16)
>>> np.bincount((p.label_distributions > 0).sum(axis=1))  # clients holding 0, 1, 2, 3 classes
array([ 0,  9, 84,  7])
"""


from __future__ import annotations

# Imports written ``_name as _name`` re-export internals that the tests check.
from topofl.data.partition._apportion import _apportion_capped as _apportion_capped
from topofl.data.partition._apportion import _apportion_float as _apportion_float
from topofl.data.partition._apportion import _apportion_int as _apportion_int
from topofl.data.partition.base import Partition, PartitionSplit
from topofl.data.partition.grouped import natural
from topofl.data.partition.label_skew import dirichlet, dpfl_pathological, pathological
from topofl.data.partition.registry import PARTITIONS
from topofl.data.partition.sharding import iid, shards

__all__ = [
    "Partition",
    "PartitionSplit",
    "iid",
    "shards",
    "dirichlet",
    "pathological",
    "dpfl_pathological",
    "natural",
    "PARTITIONS",
]
