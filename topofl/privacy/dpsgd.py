r"""The spend of DP-SGD (Abadi et al., CCS 2016): :func:`dp_sgd_spend`.

Every local step of a client clips each sample's gradient to l2 norm ``C``, sums the batch's
clipped gradients, adds Gaussian noise ``N(0, sigma^2 C^2 I)`` and divides by the batch size
``b`` (:func:`topofl.algorithms.with_dp_sgd`): one application of the subsampled Gaussian
mechanism of noise multiplier ``sigma`` to the client's records per step. Its ``(epsilon,
delta)`` over ``steps`` steps is composed by the PRV accountant of Gopi, Lee and Wutschitz
(NeurIPS 2021, package ``prv-accountant``) on ``PoissonSubsampledGaussianMechanism``: batches
drawn with a fixed size (topofl's are ``b`` draws with replacement from the client's ``m``
records) are accounted as Poisson subsampling at rate ``q = b / m``, the usual approximation
(opacus and TensorFlow Privacy account shuffled batches so too).

Examples
--------
>>> from topofl.privacy import dp_sgd_spend
>>> round(dp_sgd_spend(1.0, 0.05, 100), 1)
3.5
"""

from __future__ import annotations

import math
import warnings
from functools import lru_cache
from typing import Any

from prv_accountant import PRVAccountant
from prv_accountant.privacy_random_variables import PoissonSubsampledGaussianMechanism

from topofl._utils.validation import check_int, check_real
from topofl.privacy.conversions import check_delta

__all__ = ["dp_sgd_spend"]


def dp_sgd_spend(noise: Any, sample_rate: Any, steps: Any, *, delta: Any = 1e-5,
                 eps_error: Any = 0.1) -> float:
    r"""``epsilon`` of ``steps`` DP-SGD steps at noise multiplier ``noise`` and rate ``q``.

    The PRV accountant (Gopi et al. 2021) composes ``steps`` Poisson-subsampled Gaussian
    mechanisms (sampling probability ``q``, noise multiplier ``sigma``); the value returned is
    its estimate, within ``eps_error`` of the true ``epsilon`` of the composition at ``delta``
    (its ``delta_error`` is ``delta / 1000``). At ``q = 1`` the composition is the Gaussian
    mechanism's: ``sqrt(steps) / sigma``-GDP (Dong, Roth and Su 2022), whose ``epsilon``
    :func:`topofl.privacy.gdp_epsilon` gives exactly. Results are memoised, and one
    accountant answers for every count up to the next power of 8 (a run's rounds cost one
    accountant per factor 8 of its steps). ``inf`` where the package's discretisation fails
    (far out, at ``epsilon`` in the hundreds: no guarantee worth a number).

    Parameters
    ----------
    noise : float
        ``sigma > 0``, the noise multiplier (noise std over the clip norm).
    sample_rate : float
        ``q`` in ``(0, 1]``: the chance that a record is in a step's batch (``b / m``).
    steps : int
        ``>= 0`` steps composed (``0``: ``epsilon = 0``).
    delta : float, default 1e-5
        In ``(0, 1)``.
    eps_error : float, default 0.1
        In ``(0, 1]``: the accountant's accuracy on ``epsilon``.

    Returns
    -------
    float
        ``epsilon``.

    Raises
    ------
    ValueError
        An argument out of its range.

    Examples
    --------
    At ``q = 1`` the Gaussian mechanism composed, ``mu = sqrt(16) / 4 = 1``-GDP:

    >>> from topofl.privacy import dp_sgd_spend, gdp_epsilon
    >>> round(dp_sgd_spend(4.0, 1.0, 16), 2), round(float(gdp_epsilon(1.0, 1e-5)), 2)
    (4.38, 4.38)
    >>> dp_sgd_spend(1.0, 0.01, 1000) < dp_sgd_spend(0.8, 0.01, 1000)
    True
    """
    sigma = check_real(noise, "noise", low=0, low_open=True)
    q = check_real(sample_rate, "sample_rate", low=0, high=1, low_open=True)
    k = check_int(steps, "steps", low=0)
    d = check_delta(delta)
    err = check_real(eps_error, "eps_error", low=0, high=1, low_open=True)
    if k == 0:
        return 0.0
    return _spend(sigma, q, k, d, err)


@lru_cache(maxsize=4096)
def _spend(sigma: float, q: float, steps: int, delta: float, err: float) -> float:
    # the accountant of the next power of 8 of compositions answers for every count up to
    # it (the same estimates as an accountant of exactly `steps` to about 0.005, measured at
    # q = 0.01 .. 1 up to 50 times fewer steps than its cap): a run asks for every round's
    # count, and each accountant costs about 2 s of CPU (its RDP domain bound), one per
    # factor 8. Where the package cannot discretise that far out (large q, small sigma),
    # the next power of 2, then exactly `steps`. A pure function of its arguments, so a
    # resumed run records the same spend.
    caps = (8 ** max(1, math.ceil(math.log(steps, 8) - 1e-12)),
            2 ** math.ceil(math.log2(steps) - 1e-12), steps)
    for cap in dict.fromkeys(caps):
        acc = _accountant(sigma, q, cap, delta, err)
        if acc is not None:
            with warnings.catch_warnings():  # the package's exp overflows harmlessly
                warnings.simplefilter("ignore", RuntimeWarning)
                eps = acc.compute_epsilon(delta=delta, num_self_compositions=[steps])[1]
            return max(0.0, float(eps))
    return math.inf


@lru_cache(maxsize=64)
def _accountant(sigma: float, q: float, cap: int, delta: float,
                err: float) -> PRVAccountant | None:
    """The PRV accountant of up to ``cap`` steps; ``None`` where the package's discretisation
    fails (far out, where epsilon is huge)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        prv = PoissonSubsampledGaussianMechanism(sampling_probability=q,
                                                 noise_multiplier=sigma)
        try:
            return PRVAccountant(prvs=[prv], max_self_compositions=[cap], eps_error=err,
                                 delta_error=delta / 1000)
        except RuntimeError:
            return None
