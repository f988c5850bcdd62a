r"""Privacy per topology: what each graph leaks to whom.

Accountants that take a graph and return a pairwise privacy matrix
(:class:`PairwisePrivacy`, ``epsilon[u, v]``: ``u``'s data from ``v``'s view):

- gossip averaging with local noise: :func:`muffliato` (Cyffers et al. 2022, pairwise network
  RDP, plain or Chebyshev-accelerated gossip; :func:`muffliato_rounds` its number of steps)
  and :func:`gossip_linear` (the exact Gaussian view of noise added once, read as a linear
  system in the manner of Koskela and Kulkarni 2025, whose main case adds noise every round);
- DECOR's pairwise-correlated noise (Allouah et al., ICML 2024): :func:`correlated_noise_spend`,
  each node's spend against an eavesdropper and colluding nodes;
- DP-SGD in the local step (Abadi et al. 2016, :func:`topofl.algorithms.with_dp_sgd`):
  :func:`dp_sgd_spend`, the subsampled Gaussian mechanism composed over the local steps;
- random-walk (token) algorithms: :func:`random_walk_rdp` (Cyffers et al. 2024, arXiv
  2402.07471, Theorem 3) and :func:`random_walk_fdp` (PN-f-DP, Li et al. NeurIPS 2025: a mixture
  of Gaussian mechanisms over the walk's first-hitting times, composed by the PRV accountant of
  ``prv-accountant``).

The empirical side: :func:`membership_attack`, every node's loss-threshold membership-inference
attack on every other node, on a run's models (AUC and held-out advantage by graph distance).
:func:`privacy_summary` puts one graph's privacy in a few numbers (the cheat sheet's column,
``topofl spectral --privacy``). The conversions to ``(epsilon, delta)`` are in
:mod:`topofl.privacy.conversions`.

Examples
--------
>>> from topofl import privacy
>>> from topofl.topologies import ring
>>> round(privacy.muffliato(ring(8), sigma=2.0, rounds=10).max(), 3) > 0
True
"""

from topofl.privacy.attack import MembershipAttack, membership_attack
from topofl.privacy.conversions import gdp_epsilon, zcdp_epsilon
from topofl.privacy.correlated import CorrelatedSpend, correlated_noise_spend
from topofl.privacy.dpsgd import dp_sgd_spend
from topofl.privacy.gossip import (
    chebyshev_gamma,
    gossip_linear,
    gossip_views,
    muffliato,
    muffliato_rounds,
    noisy_updates_spend,
)
from topofl.privacy.pairwise import PairwisePrivacy
from topofl.privacy.summarize import PRIVACY_KEYS, privacy_summary
from topofl.privacy.walks import first_hitting, random_walk_fdp, random_walk_rdp

__all__ = ["PRIVACY_KEYS", "CorrelatedSpend", "MembershipAttack", "PairwisePrivacy",
           "chebyshev_gamma", "correlated_noise_spend", "dp_sgd_spend", "first_hitting",
           "gdp_epsilon",
           "gossip_linear", "gossip_views", "membership_attack",
           "muffliato", "muffliato_rounds",
           "noisy_updates_spend", "privacy_summary",
           "random_walk_fdp", "random_walk_rdp", "zcdp_epsilon"]
