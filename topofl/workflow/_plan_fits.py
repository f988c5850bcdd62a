"""The plan's fits (:mod:`topofl.workflow.plan` imports them back): the runtime part's line
through the probes' memory (:func:`fit_runtime`), the seconds of a training round and of an
evaluation at the run's ``n`` from the probes' (:func:`fit_time`, in ``n`` and in the samples
an evaluation scores, :func:`eval_samples`), and the first evaluation's extra.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from topofl.engine.config import global_samples
from topofl.spectral.summarize import SUMMARY_DENSE_MAX
from topofl.workflow.memory import CLIENT_BYTES, Shapes

#: The most bytes a client the runtime part's fitted slope may take (:func:`fit_runtime`).
RUNTIME_SLOPE_MAX = 4 * CLIENT_BYTES

#: The exponents ``e`` :func:`fit_time` tries by default (``a + b * n ** e``).
TIME_EXPONENTS = tuple(0.75 + 0.01 * i for i in range(51))

#: The smallest probe the plan's time line is fitted to (the smaller ones are left out
#: where at least two probes reach it).
TIME_FIT_FROM = 1024


def fit_runtime(points: list[tuple[int, float]]) -> tuple[float, float]:
    """``(constant, slope)`` of the runtime part from ``(n, bytes)`` probes: the median of
    the pairwise slopes (Theil-Sen: one noisy probe does not set it), clipped to
    ``[0, RUNTIME_SLOPE_MAX]``, and the median of ``bytes - slope * n``, at least 0.

    Examples
    --------
    >>> line = [(m, 100e6 + 500 * m) for m in (2, 64, 256, 1024)]
    >>> line[2] = (256, line[2][1] + 5e6)  # a probe 5 MB high: neither fit moves
    >>> fit_runtime(line)
    (100000000.0, 500.0)
    >>> fit_runtime([(2, 100e6), (64, 200e6)])  # a steep slope: held to RUNTIME_SLOPE_MAX
    (149932416.0, 2048.0)
    """
    slopes = sorted((r2 - r1) / (m2 - m1) for i, (m1, r1) in enumerate(points)
                    for m2, r2 in points[i + 1:] if m2 != m1)
    slope = float(np.median(slopes)) if slopes else 0.0
    slope = min(max(0.0, slope), float(RUNTIME_SLOPE_MAX))
    const = float(np.median([r - slope * m for m, r in points])) if points else 0.0
    return max(0.0, const), slope


def fit_time(points: Sequence[tuple[float, float]], exponents: Sequence[float] = TIME_EXPONENTS
             ) -> tuple[float, float, float]:
    """``(a, b, e)`` of ``seconds = a + b * n ** e`` fitted to ``(n, seconds)`` probes:
    least squares in relative error with ``a, b >= 0`` (never a negative prediction) for each
    ``e`` of ``exponents`` (the closest to 1 among equals; the plan passes ``(1.0,)``). One
    probe: ``b * n``.

    Examples
    --------
    >>> a, b, e = fit_time([(64, 0.002 + 64e-5), (256, 0.002 + 256e-5), (1024, 0.002 + 1024e-5)])
    >>> round(a, 6), round(b, 8), e
    (0.002, 1e-05, 1.0)
    >>> a, b, e = fit_time([(1024, 0.0033), (4096, 0.0120)], exponents=(1.0,))
    >>> round(a + b * 10**5, 3)  # the line through both probes, at 10**5 clients
    0.284
    """
    if not exponents or any(not 0 < float(e) <= 4 for e in exponents):
        raise ValueError(f"exponents must be a non-empty sequence of numbers in (0, 4], "
                         f"got {exponents!r}")
    pts = [(float(m), float(t)) for m, t in points if t > 0]
    if not pts:
        return 0.0, 0.0, 1.0
    if len(pts) == 1:
        return 0.0, pts[0][1] / pts[0][0], 1.0
    best: tuple[float, float, float, float] | None = None
    for e in sorted(map(float, exponents), key=lambda v: abs(v - 1.0)):
        cols = np.array([[1.0 / t, m ** e / t] for m, t in pts])
        ones = np.ones(len(pts))
        a, b = np.linalg.lstsq(cols, ones, rcond=None)[0]
        if a < 0 or b < 0:  # one of them at 0: the better of the two
            fits = [(0.0, float(ones @ cols[:, 1] / (cols[:, 1] @ cols[:, 1]))),
                    (float(ones @ cols[:, 0] / (cols[:, 0] @ cols[:, 0])), 0.0)]
            a, b = min(fits, key=lambda ab: float(np.sum((cols @ ab - 1) ** 2)))
        err = float(np.sum((cols @ np.array([a, b]) - 1.0) ** 2))
        if best is None or err < best[0] - 1e-12:
            best = (err, float(a), float(b), float(e))
    assert best is not None
    return best[1], best[2], best[3]


def eval_samples(s: Shapes) -> float:
    """The samples an evaluation scores at ``s.n`` clients, the unit the plan's evaluation
    seconds are a line in: each client's local test and validation splits (at most
    ``longest_test`` and ``longest_val`` samples) and the global test samples it is scored on
    (:func:`topofl.engine.config.global_samples`: all of them up to 2 x 10^7 pairs, a
    subsample beyond, so that an evaluation's seconds are not linear in ``n``).

    Examples
    --------
    >>> from topofl.workflow.plan import Shapes, eval_samples
    >>> s = Shapes(n=1000, num_params=650, dtype_bytes=4, sample_bytes=256, num_classes=10,
    ...            batch_size=32, input_shape=(64,), per_client_state={}, dataset_bytes=0,
    ...            data_bytes=0, longest_test=20, w_row_nnz=3.0, global_test=10_000)
    >>> eval_samples(s)  # 1000 clients x (20 local + all 10,000 global): 10^7 pairs
    10020000.0
    >>> eval_samples(Shapes(**{**s.__dict__, "n": 10**5}))  # the global test subsampled
    102000000.0
    """
    scored = (global_samples(s.eval_global_samples, s.n, s.global_test)
              if s.global_test else 0)
    return float(s.n) * (scored + s.longest_test + s.longest_val)


def _eval_fit(evs: list[tuple[int, float]], probed: Mapping[int, Shapes], s: Shapes,
              n: int) -> tuple[float, dict[str, Any]]:
    """``(seconds, fit)`` of an evaluation at ``n`` clients from the probes' ``(m, seconds)``:
    the probe itself at its own ``n``, else the line ``a + b * samples`` (:func:`fit_time` in
    :func:`eval_samples`) through the probes of at least :data:`TIME_FIT_FROM` clients."""
    pts = [(eval_samples(probed[m]), ev, m) for m, ev in evs]
    upper = [(x, ev) for x, ev, m in pts if m >= TIME_FIT_FROM]
    a, b, _ = fit_time(upper if len(upper) >= 2 else [(x, ev) for x, ev, _ in pts],
                       exponents=(1.0,))
    at = eval_samples(s)
    seconds = dict(evs)[n] if n in dict(evs) else a + b * at
    return seconds, {"constant_s": a, "seconds_per_sample": b, "samples": at,
                     "probe": [[m, x, ev] for x, ev, m in pts]}


def _line_at(points: Sequence[tuple[int, float]], n: int) -> tuple[float, dict[str, Any]]:
    """``(seconds, fit)`` at ``n`` clients from probes' ``(m, seconds)``: the probe at ``n``
    itself, else the line ``a + b * n`` (:func:`fit_time`) through the probes of at least
    :data:`TIME_FIT_FROM` clients (all of them where fewer than two are)."""
    upper = [(m, t) for m, t in points if m >= TIME_FIT_FROM]
    a, b, e = fit_time(upper if len(upper) >= 2 else points, exponents=(1.0,))
    at = dict(points)
    return (at[n] if n in at else a + b * n ** e), {"constant_s": a, "coefficient_s": b,
                                                    "exponent": e}


def _time_fits(rows: Sequence[tuple[int, Any, Any, Any]], firsts: list[tuple[int, float]],
               scored: Mapping[int, Shapes], s: Shapes
               ) -> tuple[float | None, dict[str, Any], float | None, dict[str, Any]]:
    """``(seconds_per_round, time_fit, eval_seconds, eval_fit)`` at the run's ``s.n`` from the
    probes' rows ``(m, peak, train, evaluation)`` and first evaluations' extras."""
    n, spr, eval_s = s.n, None, None
    tfit: dict[str, Any] = {}
    efit: dict[str, Any] = {}
    pts = [(m, t) for m, _, t, _ in rows if t is not None]
    if pts:
        spr, tfit = _line_at(pts, n)
        tfit["probe"] = [list(p) for p in pts]
    evs = [(m, ev) for m, _, _, ev in rows if ev is not None]
    if evs:
        eval_s, efit = _eval_fit(evs, scored, s, n)
    if firsts:  # the first evaluation's one-time extra, a line in n as a round's, through the
        # probes whose spectral summary is computed as the run's (dense or sparse)
        firsts = [(m, t) for m, t in firsts
                  if (m > SUMMARY_DENSE_MAX) == (n > SUMMARY_DENSE_MAX)] or firsts
        efit["first_extra_s"] = _line_at(firsts, n)[0]
    return spr, tfit, eval_s, efit
