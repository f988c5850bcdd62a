"""Running work on several cores from Python threads, one intra-op thread each.

Small torch operations (a convolution on one client's 16 images) do not speed up with intra-op
threads, but they release the GIL: running independent clients in a few Python threads, each
with ``torch.set_num_threads(1)``, uses the cores better (``LoopExecutor(threads=...)``;
measured in ``analysis/bench_engine.md``). Tried and not used for the gossip: its column tiles
on two such threads were faster alone (6.1 vs 7.7 ms for 1000 x 7,850 float32) but slower
inside a D-SGD round (10.5 vs 8.1 ms), where ``X`` is not in cache.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import torch

__all__ = ["cpu_workers", "run_on_cores"]

_LOCK = threading.Lock()
_POOL: ThreadPoolExecutor | None = None  # shared, grown to the largest worker count asked for
_POOL_SIZE = 0


def cpu_workers(requested: int | None, tasks: int) -> int:
    """Number of threads to use: ``requested`` (``None``: torch's intra-op thread count),
    at most ``tasks``, at least 1."""
    t = torch.get_num_threads() if requested is None else int(requested)
    return max(1, min(t, int(tasks)))


def _pool(workers: int) -> ThreadPoolExecutor:
    global _POOL, _POOL_SIZE
    with _LOCK:
        if _POOL is None or _POOL_SIZE < workers:
            _POOL = ThreadPoolExecutor(workers, thread_name_prefix="topofl-core")
            _POOL_SIZE = workers
        return _POOL


def run_on_cores(workers: int, fn: Callable[[int], None]) -> None:
    """Call ``fn(w)`` for ``w = 0 .. workers-1``, in parallel threads with one intra-op thread.

    ``workers == 1`` calls ``fn(0)`` in the calling thread with the current thread settings.
    The intra-op thread count is restored afterwards, and an exception raised by ``fn`` is
    re-raised in the calling thread (the one of the lowest ``w`` if several failed).

    Examples
    --------
    >>> from topofl.engine._threads import run_on_cores
    >>> out = [0, 0]
    >>> def work(w):
    ...     out[w] = w + 1
    >>> run_on_cores(2, work)
    >>> out
    [1, 2]
    """
    if workers <= 1:
        fn(0)
        return
    errors: list[tuple[int, BaseException]] = []

    def guarded(w: int) -> None:
        try:
            if torch.get_num_threads() != 1:
                torch.set_num_threads(1)
            fn(w)
        except BaseException as exc:  # re-raised below, in the calling thread
            errors.append((w, exc))

    pool = _pool(workers)
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        list(pool.map(guarded, range(workers)))
    finally:
        torch.set_num_threads(previous)
    if errors:
        raise min(errors, key=lambda e: e[0])[1]
