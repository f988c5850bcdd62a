"""Where a run's memory goes, phase by phase (issue 43, item 2): one ``topofl.run`` of D-SGD on a
ring with logistic regression (the setting of ``analysis/bench_scale.py``), its resident size
and high-water mark (``/proc/self/status``, above the size after importing torch and topofl)
at the entry and exit of each phase, then the arrays and tensors the result still reaches, by
bytes a client, and the resident size after ``malloc_trim`` (the heap freed but kept by the
allocator). The phases are timed by wrapping, in this process only, the functions the run
calls (as ``bench_scale.py`` does); ``tracemalloc`` does not see torch's memory, hence the
resident size.

Usage::

    OMP_NUM_THREADS=1 python analysis/memory_phases.py 100000
    OMP_NUM_THREADS=1 PYTHONPATH=../other python analysis/memory_phases.py 100000  # another
"""

from __future__ import annotations

import ctypes
import sys
from typing import Any

import numpy as np
import torch

import topofl
import topofl.api as api
import topofl.data as data_mod
import topofl.engine.loop as loop


def _status() -> dict[str, int]:
    out = {}
    with open("/proc/self/status") as fh:
        for line in fh:
            key = line.split(":")[0]
            if key in ("VmRSS", "VmHWM"):
                out[key] = int(line.split()[1]) * 1024
    return out


def reachable_arrays(root: Any) -> dict[tuple[str, int], tuple[int, str, str]]:
    """Every numpy array and torch storage reachable from ``root`` through attributes,
    mappings and sequences (their first 50 items): ``{key: (bytes, path, shape and dtype)}``."""
    seen: set[int] = set()
    found: dict[tuple[str, int], tuple[int, str, str]] = {}
    stack: list[tuple[Any, str]] = [(root, "res")]
    while stack:
        o, path = stack.pop()
        if id(o) in seen or isinstance(o, (type, type(sys), type(len))):
            continue
        seen.add(id(o))
        if isinstance(o, torch.Tensor):
            s = o.untyped_storage()
            found.setdefault(("t", s.data_ptr()), (s.nbytes(), path, f"{tuple(o.shape)} {o.dtype}"))
            continue
        if isinstance(o, np.ndarray):
            b = o
            while isinstance(b.base, np.ndarray):
                b = b.base
            found.setdefault(("n", id(b)), (b.nbytes, path, f"{o.shape} {o.dtype}"))
            continue
        items: list[tuple[Any, str]] = []
        try:
            if isinstance(o, type(type.__dict__)):
                o = dict(o)
            if isinstance(o, dict):
                items = [(v, f"{path}[{k!r}]"[:100]) for k, v in list(o.items())[:1000]]
            elif isinstance(o, (list, tuple)):
                items = [(v, f"{path}[{i}]") for i, v in enumerate(o[:50])]
            elif hasattr(o, "__dict__") or hasattr(o, "__slots__"):
                d = dict(vars(o)) if hasattr(o, "__dict__") else {}
                for name in getattr(type(o), "__slots__", ()):
                    if hasattr(o, name):
                        d[name] = getattr(o, name)
                items = [(v, f"{path}.{k}") for k, v in d.items()]
        except Exception:  # noqa: BLE001 - an object we cannot walk: skipped
            items = []
        stack.extend(items)
    return found


def main(n: int) -> None:
    torch.set_num_threads(1)
    base = _status()["VmRSS"]
    with open("/proc/self/clear_refs", "w") as fh:
        fh.write("5")  # the high-water mark from here
    log: list[tuple[str, float, float]] = []

    def note(tag: str) -> None:
        s = _status()
        log.append((tag, (s["VmRSS"] - base) / n, (s["VmHWM"] - base) / n))

    def wrap(name: str, fn: Any) -> Any:
        def inner(*a: Any, **k: Any) -> Any:
            note(name + " >")
            try:
                return fn(*a, **k)
            finally:
                note(name + " <")
        return inner

    data_mod.federate = wrap("split (federate)", data_mod.federate)
    api.build_model = wrap("model", api.build_model)
    loop._local_phases = wrap("local step", loop._local_phases)
    loop._communicate = wrap("gossip", loop._communicate)
    loop.evaluate = wrap("evaluation", loop.evaluate)
    loop.spectral_row = wrap("spectral", loop.spectral_row)
    spec = f"synthetic:n_samples={10 * n},dim=64,num_classes=10,seed=0"
    note("start")
    res = topofl.run("dsgd", "ring", spec, "logistic", 1, n_clients=n, partition="iid",
                     lr=0.1, batch_size=8, seed=0, progress=False)
    note("end")
    print(f"topofl {topofl.__file__}, n = {n:,}: bytes a client above the process after "
          "import (resident, high-water mark)")
    for tag, rss, hwm in log:
        print(f"  {tag:22s} {rss:9,.0f} {hwm:9,.0f}")
    before = _status()["VmRSS"]
    ctypes.CDLL("libc.so.6").malloc_trim(0)
    after = _status()["VmRSS"]
    print(f"resident at the end {(before - base) / n:,.0f}, after malloc_trim "
          f"{(after - base) / n:,.0f} bytes a client; records rows {len(res.records.rows):,}")
    found = reachable_arrays(res)
    print(f"arrays and tensors the result reaches: {sum(v[0] for v in found.values()) / n:,.0f} "
          "bytes a client")
    for nbytes, path, what in sorted(found.values(), reverse=True):
        if nbytes / n >= 1:
            print(f"  {nbytes / n:8,.1f}  {path[:80]}  {what}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 100_000)
