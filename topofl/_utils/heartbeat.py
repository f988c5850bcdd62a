"""A periodic "still running" line on stderr for long commands whose output is not a terminal.

On a terminal the commands show progress bars; in a log file (a batch job, ``nohup``, a pipe)
those are off, and ``topofl run``, ``topofl figure`` or ``topofl demo`` would print nothing for
minutes. :func:`heartbeat` prints one line every ``TOPOFL_HEARTBEAT`` seconds (default 30; 0
turns it off) while its block runs, from rank 0 only under ``torchrun``. Standard library
only: the command line imports it before torch.

Examples
--------
>>> import io, time
>>> from topofl._utils.heartbeat import heartbeat
>>> out = io.StringIO()
>>> with heartbeat("topofl demo", every=0.05, stream=out, force=True):
...     time.sleep(0.18)
>>> lines = out.getvalue().splitlines()
>>> len(lines) >= 2, lines[0].startswith("topofl demo: still running, ")
(True, True)
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
from collections.abc import Iterator
from typing import TextIO

__all__ = ["heartbeat", "interval", "elapsed_text", "HEARTBEAT_ENV"]

HEARTBEAT_ENV = "TOPOFL_HEARTBEAT"
DEFAULT_EVERY = 30.0


def interval() -> float:
    """Seconds between two lines: ``TOPOFL_HEARTBEAT`` (default 30; 0 or less: off).

    Examples
    --------
    >>> from topofl._utils.heartbeat import interval
    >>> interval() > 0
    True
    """
    raw = os.environ.get(HEARTBEAT_ENV, "")
    if not raw.strip():
        return DEFAULT_EVERY
    try:
        return float(raw)
    except ValueError:
        raise ValueError(f"{HEARTBEAT_ENV} must be a number of seconds (0: off), got "
                         f"{raw!r}") from None


def elapsed_text(seconds: float) -> str:
    """``"45 s"``, ``"2 min 5 s"``, ``"1 h 3 min"``.

    Examples
    --------
    >>> from topofl._utils.heartbeat import elapsed_text
    >>> elapsed_text(45.2), elapsed_text(125), elapsed_text(3790)
    ('45 s', '2 min 5 s', '1 h 3 min')
    """
    s = int(seconds)
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60} s"
    return f"{s // 3600} h {s % 3600 // 60} min"


def _main_rank() -> bool:
    """Rank 0 of a ``torchrun`` launch, or a process that is not one of several."""
    try:
        return int(os.environ.get("RANK", "0")) == 0
    except ValueError:
        return True


@contextlib.contextmanager
def heartbeat(what: str | None, *, every: float | None = None, stream: TextIO | None = None,
              force: bool = False) -> Iterator[None]:
    """While the block runs, print ``"<what>: still running, <elapsed> elapsed"`` every
    ``every`` seconds (default :func:`interval`) to ``stream`` (default stderr).

    Nothing when ``what`` is ``None``, when the stream is a terminal (unless ``force``), on a
    rank other than 0, or when the interval is 0 or less.
    """
    out = sys.stderr if stream is None else stream
    period = interval() if every is None else float(every)
    on_tty = bool(getattr(out, "isatty", lambda: False)())
    if what is None or period <= 0 or (on_tty and not force) or not _main_rank():
        yield
        return
    stop = threading.Event()
    start = time.monotonic()

    def beat() -> None:
        while not stop.wait(period):
            print(f"{what}: still running, {elapsed_text(time.monotonic() - start)} elapsed",
                  file=out, flush=True)

    thread = threading.Thread(target=beat, name="topofl-heartbeat", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
