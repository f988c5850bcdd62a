r"""From a privacy curve to ``(epsilon, delta)``: Rényi DP, zero-concentrated DP and Gaussian DP.

Every accountant of :mod:`topofl.privacy` ends in one of three kinds of guarantee, and these
functions turn each into the ``epsilon`` at a given ``delta``:

- ``rho``-zCDP, i.e. ``(alpha, alpha * rho)``-RDP for every order ``alpha > 1`` (the random-walk
  and Muffliato bounds): :func:`zcdp_epsilon`, with the conversion of Bun and Steinke
  (``"zcdp"``) or the tighter one of Balle et al. (``"balle2020"``, optimal over ``alpha``);
- ``mu``-GDP, a Gaussian mechanism of sensitivity-to-noise ratio ``mu`` (the linear-systems
  bound of gossip): :func:`gdp_epsilon`, exact (Balle and Wang 2018);
- a privacy random variable composed ``k`` times (PN-f-DP's mixture of Gaussians): in
  :mod:`topofl.privacy.walks`, through the PRV accountant.

Examples
--------
>>> from topofl.privacy.conversions import gdp_epsilon, zcdp_epsilon
>>> round(zcdp_epsilon(0.5, 1e-5, method="zcdp"), 6)         # rho + 2 sqrt(rho log(1/delta))
5.298526
>>> zcdp_epsilon(0.5, 1e-5) < zcdp_epsilon(0.5, 1e-5, method="zcdp")
True
>>> round(gdp_epsilon(1.0, 1e-5), 4)                          # the Gaussian mechanism, mu = 1
4.3772
"""

from __future__ import annotations

import math
from typing import Any, Literal

import numpy as np
from scipy.optimize import brentq
from scipy.special import log_ndtr, ndtr

from topofl._utils.validation import check_choice, check_real

Conversion = Literal["balle2020", "zcdp"]
#: the ``mu`` from which :func:`gdp_epsilon` says ``inf`` (epsilon would be above ``mu^2 / 2``,
#: half a million)
GDP_MU_MAX = 1000.0
CONVERSIONS: tuple[str, ...] = ("balle2020", "zcdp")

__all__ = ["CONVERSIONS", "Conversion", "GDP_MU_MAX", "check_delta", "gdp_delta", "gdp_epsilon",
           "zcdp_epsilon"]


def _numbers(value: Any, name: str) -> np.ndarray:
    """``value`` as a float array, or a ``TypeError`` naming ``name``."""
    if isinstance(value, str | bytes) or (isinstance(value, np.ndarray) and value.dtype.kind
                                          not in "biuf"):
        raise TypeError(f"{name} must be a number or an array of numbers, got "
                        f"{type(value).__name__} {value!r}"[:200])
    try:
        out: np.ndarray = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a number or an array of numbers, got "
                        f"{type(value).__name__}") from None
    return out


def check_delta(delta: Any) -> float:
    """``delta`` as a float in ``(0, 1)``."""
    return check_real(delta, "delta", low=0, high=1, low_open=True, high_open=True)


def _balle2020(rho: np.ndarray, log_inv_delta: float) -> np.ndarray:
    # Balle et al. (2020), Theorem 21: (alpha, eps_a)-RDP gives (eps, delta)-DP with
    # eps = eps_a + log((alpha - 1) / alpha) - (log delta + log alpha) / (alpha - 1). With
    # eps_a = alpha * rho the derivative in alpha vanishes where rho (alpha - 1)^2 =
    # log(1/delta) - log(alpha): one root in (1, 1 + sqrt(log(1/delta) / rho)] (the slope is
    # negative just above 1 and log(high) > 0 at the top), found for every entry at once by
    # bisection on s = alpha - 1 to the last bit.
    low = np.zeros_like(rho)
    high = np.sqrt(log_inv_delta / rho)
    for _ in range(200):
        mid = (low + high) / 2
        if not np.any((mid > low) & (mid < high)):
            break
        neg = rho * mid * mid - log_inv_delta + np.log1p(mid) < 0
        low = np.where(neg, mid, low)
        high = np.where(neg, high, mid)
    s = (low + high) / 2
    a = 1.0 + s
    out: np.ndarray = rho * a + np.log(s / a) + (log_inv_delta - np.log(a)) / s
    return out


def zcdp_epsilon(rho: Any, delta: Any, *, method: Conversion = "balle2020") -> Any:
    r"""The ``epsilon`` of a ``rho``-zCDP guarantee (``(alpha, alpha rho)``-RDP at every order).

    Parameters
    ----------
    rho : float or array_like
        ``>= 0``; an array is converted entry by entry (``0`` stays ``0``).
    delta : float
        In ``(0, 1)``.
    method : {"balle2020", "zcdp"}, default "balle2020"
        ``"zcdp"``: Bun and Steinke (2016), Proposition 1.3,
        ``epsilon = rho + 2 sqrt(rho log(1/delta))``. ``"balle2020"``: Balle, Barthe,
        Gaboardi, Hsu and Sato (2020), Theorem 21, minimised over ``alpha`` (a root of
        ``rho (alpha - 1)^2 = log(1/delta) - log(alpha)``); never larger than ``"zcdp"``.

    Returns
    -------
    float or numpy.ndarray
        Of ``rho``'s shape.

    Raises
    ------
    ValueError
        If ``rho`` has a negative or non-finite entry, ``delta`` is outside ``(0, 1)`` or
        ``method`` is unknown.

    Examples
    --------
    >>> import numpy as np
    >>> zcdp_epsilon(np.array([0.0, 2.0]), 1e-5, method="zcdp").round(4).tolist()
    [0.0, 11.5971]
    """
    how = check_choice(method, "method", CONVERSIONS)
    d = check_delta(delta)
    r = _numbers(rho, "rho")
    if not np.all(np.isfinite(r)) or np.any(r < 0):
        bad = r[~np.isfinite(r) | (r < 0)].reshape(-1)[0]
        raise ValueError(f"rho must be finite and >= 0, got {bad!r}"
                         + (f" (one of {r.size} entries)" if r.size > 1 else ""))
    log_inv = math.log(1.0 / d)
    flat = r.reshape(-1)
    out = np.zeros_like(flat)
    pos = flat > 0
    x = flat[pos]
    out[pos] = x + 2.0 * np.sqrt(x * log_inv) if how == "zcdp" else _balle2020(x, log_inv)
    return float(out[0]) if r.ndim == 0 else out.reshape(r.shape)


def gdp_delta(mu: float, epsilon: float) -> float:
    r"""The ``delta`` of a ``mu``-GDP mechanism at ``epsilon`` (Balle and Wang 2018, Theorem 8):
    ``Phi(-epsilon/mu + mu/2) - e^epsilon Phi(-epsilon/mu - mu/2)``."""
    if mu <= 0:
        return 0.0
    # the second term in logs: e^epsilon overflows long before the product does
    power = epsilon + float(log_ndtr(-epsilon / mu - mu / 2))
    return float(ndtr(-epsilon / mu + mu / 2) - (math.exp(power) if power < 700 else math.inf))


def gdp_epsilon(mu: Any, delta: Any) -> Any:
    r"""The smallest ``epsilon`` of a ``mu``-GDP mechanism at ``delta``: exact, the analytic
    Gaussian mechanism of Balle and Wang (2018), by root finding on :func:`gdp_delta`.

    Parameters
    ----------
    mu : float or array_like
        ``>= 0`` (``0``: no leak, ``epsilon = 0``); from :data:`GDP_MU_MAX` on (``inf``
        too), ``inf``: no guarantee worth a number (and beyond double precision's reach).
    delta : float
        In ``(0, 1)``.

    Returns
    -------
    float or numpy.ndarray

    Examples
    --------
    >>> round(gdp_epsilon(0.5, 1e-5), 4), gdp_epsilon(0.0, 1e-5)
    (1.9931, 0.0)
    """
    d = check_delta(delta)
    m = _numbers(mu, "mu")
    if np.any(np.isnan(m)) or np.any(m < 0):
        bad = m[np.isnan(m) | (m < 0)].reshape(-1)[0]
        raise ValueError(f"mu must be >= 0, got {bad!r}"
                         + (f" (one of {m.size} entries)" if m.size > 1 else ""))
    flat = m.reshape(-1)
    out = np.zeros_like(flat)
    for i, x in enumerate(flat):
        if x >= GDP_MU_MAX:
            out[i] = math.inf
        elif x > 0 and gdp_delta(x, 0.0) > d:
            high = 1.0
            while gdp_delta(x, high) > d:
                high *= 2.0
            out[i] = brentq(lambda e, x=x: gdp_delta(x, e) - d, 0.0, high, xtol=1e-13,
                            rtol=1e-15, maxiter=500)
    return float(out[0]) if m.ndim == 0 else out.reshape(m.shape)
