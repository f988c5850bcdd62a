"""Run a function on k gloo ranks in forked processes (a FileStore on a temporary file)."""

from __future__ import annotations

import os
import queue
import tempfile
import time
import traceback
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def _child(rank: int, k: int, store: str, fn: Callable[..., Any], args: tuple[Any, ...],
           q: Any, timeout: float) -> None:
    code = 0
    try:
        torch.set_num_threads(1)
        os.environ["TOPOFL_DIST_TIMEOUT"] = str(timeout)
        dist.init_process_group("gloo", store=dist.FileStore(store, k), rank=rank,
                                world_size=k, timeout=timedelta(seconds=timeout))
        # every rank finishes connecting before any may exit: a rank whose fn makes no
        # collective (or fails early) would otherwise close its sockets while a slower peer
        # is still inside gloo's connectFullMesh ("Connection closed by peer")
        dist.barrier()
        q.put((rank, "ok", fn(rank, *args)))
    except BaseException:  # noqa: BLE001 - reported to the parent
        q.put((rank, "error", traceback.format_exc()))
        code = 1
    finally:
        q.close()
        q.join_thread()
        os._exit(code)  # no atexit, no destroy: a dead peer must not hang the exit


def launch(k: int, fn: Callable[..., Any], *args: Any, timeout: float = 30.0,
           wait: float = 120.0, grace: float = 30.0) -> dict[int, tuple[str, Any]]:
    """``{rank: ("ok", fn(rank, *args)) or ("error", traceback)}`` from ``k`` forked ranks; a
    rank that exits without a report is ``("exit", exitcode)``, one still running ``grace``
    seconds after another's error is killed (``("exit", -9)``).

    ``timeout`` is the process group's (and ``TOPOFL_DIST_TIMEOUT``); ``wait`` bounds the wait
    for each report."""
    ctx = mp.get_context("fork")
    q = ctx.Queue()
    with tempfile.TemporaryDirectory() as tmp:
        store = os.path.join(tmp, "store")
        procs = [ctx.Process(target=_child, args=(r, k, store, fn, args, q, timeout))
                 for r in range(k)]
        for p in procs:
            p.start()
        out: dict[int, tuple[str, Any]] = {}
        try:
            deadline = time.monotonic() + wait
            while len(out) < k and time.monotonic() < deadline:
                try:
                    rank, status, value = q.get(timeout=0.5)
                except queue.Empty:
                    if all(not p.is_alive() for p in procs):
                        break  # every rank exited; what they reported is in
                    continue
                out[rank] = (status, value)
                if status != "ok":
                    deadline = min(deadline, time.monotonic() + grace)
        finally:
            for p in procs:
                p.join(timeout=5)
                if p.is_alive():
                    p.kill()
                    p.join()
        for r, p in enumerate(procs):
            out.setdefault(r, ("exit", p.exitcode))
    return out
