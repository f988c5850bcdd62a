"""Time: the refusal, at once and with its estimate, of a call or a run that would take too
long (an analysis beyond ``TOPOFL_MAX_SECONDS``, training that cannot end, records that
cannot fit).
"""

from __future__ import annotations

from typing import Any

from topofl._utils.validation.memory import _env_number, check_memory
from topofl._utils.validation.scalars import check_int

__all__ = ["max_seconds", "check_time", "check_rounds", "MAX_SECONDS", "MAX_SECONDS_ENV",
           "INT64_MAX", "ROUND_SECONDS_MIN", "TRAINING_MAX_SECONDS", "ROWS_PER_EVALUATION_MIN",
           "BYTES_PER_ROW"]

#: Default limit on the work one call of an analysis function (``topofl.spectral``, a sweep's
#: plan) may be estimated to need: beyond it the call is refused at once, with the estimate,
#: rather than left running. The environment variable :data:`MAX_SECONDS_ENV` overrides it.
MAX_SECONDS = 60.0
MAX_SECONDS_ENV = "TOPOFL_MAX_SECONDS"


def max_seconds() -> float:
    """The limit of :func:`check_time`: ``$TOPOFL_MAX_SECONDS`` if set (``inf`` or a number
    of seconds), else :data:`MAX_SECONDS`."""
    got = _env_number(MAX_SECONDS_ENV)
    if got is None:
        return MAX_SECONDS
    v, raw = got
    if v is None:
        raise ValueError(f"{MAX_SECONDS_ENV} must be a number of seconds (or inf), got "
                         f"{raw!r}")
    if not v > 0:
        raise ValueError(f"{MAX_SECONDS_ENV} must be > 0, got {raw!r}")
    return v


def _fmt_seconds(s: float) -> str:
    for unit, size in (("years", 365.25 * 86400), ("days", 86400.0), ("hours", 3600.0),
                       ("min", 60.0)):
        if s >= size:
            v = f"{s / size:.3g}"
            return f"{v} {unit[:-1] if v == '1' and unit.endswith('s') else unit}"
    return f"{s:.3g} s"


def check_time(seconds: float, what: str, *, limit: float | None = None,
               activity: str = "computation") -> None:
    """Raise ``ValueError`` at once if ``what`` needs at least ``seconds`` (an estimated lower
    bound) and that exceeds ``limit`` (default :func:`max_seconds`).

    Examples
    --------
    >>> from topofl._utils.validation.durations import check_time
    >>> check_time(1.0, "a short thing")
    >>> check_time(3e9, "a long thing", limit=float("inf"))  # a caller's own limit
    >>> check_time(3e9, "a long thing")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: a long thing needs at least 95.1 years of computation (estimated), more than ...
    """
    cap = max_seconds() if limit is None else limit
    if seconds > cap:
        env = (f" (set the environment variable {MAX_SECONDS_ENV} to allow more)"
               if limit is None else "")
        raise ValueError(
            f"{what} needs at least {_fmt_seconds(seconds)} of {activity} (estimated), more "
            f"than the limit of {_fmt_seconds(cap)}{env}")


#: Largest number of training rounds: round indices are int64 in checkpoints and tensors.
INT64_MAX = 2**63 - 1
#: A lower bound on the time of one training round: a round of the smallest run (D-SGD,
#: 2 clients on a ring, logistic regression on digits, batch size 1, no evaluation, one torch
#: thread) takes 0.83 ms of CPU time (best of 3; 600 rounds minus 100); this is 8x below.
ROUND_SECONDS_MIN = 1e-4
#: Training longer than this (by the lower bound above) is refused: not a run that ends.
TRAINING_MAX_SECONDS = 365.25 * 86400
#: Rows one evaluation records at least (test accuracy mean/min/max/std, test loss,
#: consensus distance, train loss, messages, bytes, wall time), and the bytes one row holds in
#: memory (every row is kept: ``Recorder.rows``): 192 measured with ``tracemalloc`` over the
#: 20,000 rows of a 2,000-round run.
ROWS_PER_EVALUATION_MIN = 10
BYTES_PER_ROW = 192


def check_rounds(rounds: Any, eval_every: Any = 1, name: str = "rounds") -> int:
    """Return ``rounds`` (an int ``>= 0``) unless the run cannot end or its records cannot fit.

    Refused: more than ``2**63 - 1`` rounds (int64 round counters); records of more
    evaluations than memory holds (every row is kept in memory, at least
    :data:`ROWS_PER_EVALUATION_MIN` rows of :data:`BYTES_PER_ROW` each); and training that
    would take more than a year at :data:`ROUND_SECONDS_MIN` a round.

    Examples
    --------
    >>> from topofl._utils.validation.durations import check_rounds
    >>> check_rounds(100, 10)
    100
    >>> check_rounds(2**63 - 1, 2**62)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: rounds=9223372036854775807 needs at least 2.92e+07 years of training ...
    """
    r = check_int(rounds, name, low=0)
    if r > INT64_MAX:
        raise ValueError(f"{name} must be <= 2**63 - 1 = {INT64_MAX} (round counters are "
                         f"int64), got {r}")
    e = eval_every if isinstance(eval_every, int) and not isinstance(eval_every, bool) \
        and eval_every >= 1 else 1
    evaluations = -(-r // e)
    check_memory(float(evaluations) * ROWS_PER_EVALUATION_MIN * BYTES_PER_ROW,
                 f"{name}={r} with eval_every={e} (the records of {evaluations} evaluations, "
                 "kept in memory)")
    check_time(float(r) * ROUND_SECONDS_MIN, f"{name}={r}", limit=TRAINING_MAX_SECONDS,
               activity=f"training (at >= {ROUND_SECONDS_MIN * 1e3:g} ms a round)")
    return r
