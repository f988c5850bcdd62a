"""Limits the command line checks its arguments with before it imports anything heavy (this
module imports nothing), and the library checks the same arguments with."""

from __future__ import annotations

__all__ = ["MAX_PROBE_TIMEOUT"]

#: The most seconds a plan's probe may be given (``make_plan(probe_timeout=...)``, ``topofl
#: plan --probe-timeout``): a week. A longer wait is refused in one line, where it would reach
#: the longest wait ``subprocess`` takes (``2**31 - 1`` ms, about 2.1e6 s) as an
#: ``OverflowError``; a probe that runs a week holds a config no plan should wait for.
MAX_PROBE_TIMEOUT = 7 * 86400.0
