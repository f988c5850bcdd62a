r"""Spectral and connectivity properties of mixing matrices, topologies and time-varying graphs.

Every function accepts a mixing matrix (numpy array or scipy sparse), a :class:`~topofl.Topology`
and, where the quantity is about a sequence, a :class:`~topofl.TimeVarying` (a ``Topology`` is
then the constant sequence). None modifies its input. Scalars are Python ``float``/``int``/
``bool``; "no such value" is ``None``, never ``inf``.

Conventions: one gossip round is $x_{t+1} = W(t) x_t$; ``W[i, j] > 0`` iff the arc ``j -> i``;
$J = \mathbf{1}\mathbf{1}^\top / n$; the product of rounds ``s..t`` is
$W(t{:}s) = W(t) W(t-1) \cdots W(s)$.

===========================  ==================================================================
static graphs                :func:`eigenvalues`, :func:`spectral_gap` (``modulus``,
                             ``lambda2``, ``norm``), :func:`algebraic_connectivity`,
                             :func:`diameter`, :func:`is_strongly_connected`,
                             :func:`neighborhood_skew`, :func:`neighborhood_heterogeneity`
                             (STL-FW), :func:`spectrum` (all eigenvalues of a symmetric ``W``
                             and full-spectrum summaries), :func:`all_eigenvalues_metric`
                             (Takezawa, Koloskova and Stich's topology term)
beyond the gap               :func:`effective_neighbors` and :func:`random_walk_variance`
                             (Vogels et al.: static, periodic and random schedules),
                             :func:`expected_mixing` (exact second moments of the random
                             schedules: EL-Oracle, EL-Local, ...)
sequences                    :func:`b_connectivity`, :func:`is_b_connected`,
                             :func:`pushsum_constants` (bounds ``q``, ``C``, ``delta`` and their
                             measured counterparts), :func:`mixing_product`,
                             :func:`disagreement`, :func:`consensus_rate`,
                             :func:`finite_time_consensus`
everything at once           :func:`summary` (a JSON-serialisable dict)
===========================  ==================================================================

Dense LAPACK is used up to :data:`DENSE_MAX` nodes (half as many for non-symmetric ``W``) and
ARPACK (``scipy.sparse.linalg``) above, on deflated operators (``W - J`` has the eigenvalues of
``W`` with the Perron root 1 replaced by 0, Brauer's theorem), so large graphs never form a
dense ``n x n`` matrix; ``method="dense"`` or ``"sparse"`` forces a path, and both give the same
answer to better than 1e-10 (1e-14 on the graphs of ``analysis/bench_spectral.md``).

The package is split by concept: :mod:`~topofl.spectral.gaps` (eigenvalues, gaps, algebraic
connectivity), :mod:`~topofl.spectral.connectivity` (strong connectivity, diameter,
B-connectivity), :mod:`~topofl.spectral.pushsum` (push-sum constants),
:mod:`~topofl.spectral.consensus` (products, disagreement, consensus rate, finite-time
consensus), :mod:`~topofl.spectral.skew` (neighbourhood skew and heterogeneity),
:mod:`~topofl.spectral.spectrum` (full spectrum), :mod:`~topofl.spectral.neighbors`
(effective number of neighbours, random schedules) and :mod:`~topofl.spectral.summarize`
(:func:`summary`); every name is re-exported here.
"""

from __future__ import annotations

from topofl._utils.validation import arc_pattern

# Imports written ``_name as _name`` re-export internals that analysis/bench_spectral.py and
# the tests use.
from topofl.spectral._common import _BITSET_MAX_LEVELS as _BITSET_MAX_LEVELS
from topofl.spectral._common import (
    DENSE_FALLBACK_MAX as DENSE_FALLBACK_MAX,  # (topofl.workflow.memory)
)
from topofl.spectral._common import DENSE_MAX
from topofl.spectral.connectivity import _diameter_bfs as _diameter_bfs
from topofl.spectral.connectivity import _diameter_bitset as _diameter_bitset
from topofl.spectral.connectivity import (
    b_connectivity,
    diameter,
    is_b_connected,
    is_strongly_connected,
)
from topofl.spectral.consensus import (
    consensus_rate,
    disagreement,
    finite_time_consensus,
    mixing_product,
    period_consensus_error,
)
from topofl.spectral.gaps import algebraic_connectivity, eigenvalues, spectral_gap
from topofl.spectral.neighbors import (
    DEFAULT_GAMMA,
    FULL_SPECTRUM_MAX,
    MixingMoments,
    RandomWalkVariance,
    effective_neighbors,
    expected_mixing,
    random_walk_variance,
)
from topofl.spectral.pushsum import PushSumConstants, pushsum_constants
from topofl.spectral.skew import neighborhood_heterogeneity, neighborhood_skew
from topofl.spectral.spectrum import Spectrum, all_eigenvalues_metric, spectrum
from topofl.spectral.summarize import _SUMMARY_KEYS as _SUMMARY_KEYS
from topofl.spectral.summarize import summary

_pattern = arc_pattern  # the name analysis/bench_spectral.py uses

__all__ = [
    "DENSE_MAX",
    "eigenvalues",
    "spectral_gap",
    "algebraic_connectivity",
    "diameter",
    "is_strongly_connected",
    "b_connectivity",
    "is_b_connected",
    "mixing_product",
    "PushSumConstants",
    "pushsum_constants",
    "disagreement",
    "consensus_rate",
    "finite_time_consensus",
    "period_consensus_error",
    "neighborhood_skew",
    "neighborhood_heterogeneity",
    "Spectrum",
    "spectrum",
    "all_eigenvalues_metric",
    "DEFAULT_GAMMA",
    "FULL_SPECTRUM_MAX",
    "MixingMoments",
    "RandomWalkVariance",
    "effective_neighbors",
    "expected_mixing",
    "random_walk_variance",
    "summary",
]
