"""Memory: what this process may still allocate (the limit and where it comes from), and
the early refusal of what would not fit in it (a graph, a buffer, a run's records).
"""

from __future__ import annotations

import math
import os
from typing import Any

from topofl.exceptions import InsufficientMemoryError

__all__ = ["available_memory", "memory_limit", "memory_override", "MEMORY_LIMIT_ENV",
           "check_memory", "fmt_bytes", "graph_bytes", "check_graph_size", "BYTES_PER_NODE",
           "BYTES_PER_ARC"]

#: Peak bytes per node and per arc of building a :class:`~topofl.Topology` (the networkx input
#: graph, the frozen digraph, ``W`` and the temporaries in between). Measured with
#: ``tracemalloc``: ``ring(10**5)`` peaks at 174 MB (1e5 nodes, 2e5 arcs), ``complete(700)`` at
#: 184 MB (489,300 arcs), ``random_regular(20000, 10, seed=0)`` at 79 MB (2e5 arcs),
#: ``torus(100, 100)`` at 28.6 MB (1e4 nodes, 4e4 arcs); these two constants bound all four
#: from above (``tests/topologies/test_size.py`` checks it).
BYTES_PER_NODE = 1500
BYTES_PER_ARC = 400


def _proc_kib(path: str, key: str) -> int | None:
    """The ``kB`` field ``key`` of the ``/proc`` file ``path`` (``key: <number> kB`` lines) in
    bytes; ``None`` when the file cannot be read or has no such field."""
    try:
        with open(path, encoding="ascii") as fh:
            for line in fh:
                if line.startswith(key + ":"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def _meminfo(key: str, pages: str) -> int | None:
    """``/proc/meminfo``'s ``key`` (``MemAvailable``, ``MemTotal``) in bytes, else the
    ``os.sysconf`` page count ``pages`` times the page size."""
    found = _proc_kib("/proc/meminfo", key)
    if found is not None:
        return found
    try:
        return int(os.sysconf(pages)) * int(os.sysconf("SC_PAGE_SIZE"))
    except (AttributeError, OSError, ValueError):
        return None


def _meminfo_available() -> int | None:
    return _meminfo("MemAvailable", "SC_AVPHYS_PAGES")


#: Environment variable that sets the bytes a run may allocate, in place of what
#: :func:`memory_limit` reads from the machine (an int, or a float such as ``2e9``): a lower
#: value makes topofl refuse what would not fit in it, a higher one lets a run past a limit
#: the machine reports but does not enforce.
MEMORY_LIMIT_ENV = "TOPOFL_MEMORY_LIMIT"

_NO_CGROUP_V1_LIMIT = 1 << 62  # cgroup v1 writes "no limit" as a number near 2**63


def _read_int(path: str) -> int | None:
    try:
        with open(path, encoding="ascii") as fh:
            text = fh.read().strip()
        return None if text == "max" else int(text)
    except (OSError, ValueError):
        return None


def _cgroup_available() -> int | None:
    """What the cgroup memory limit leaves: v2 ``memory.max - memory.current``, else v1
    ``memory.limit_in_bytes - memory.usage_in_bytes``; ``None`` without a limit."""
    for limit_file, used_file in (("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"),
                                  ("/sys/fs/cgroup/memory/memory.limit_in_bytes",
                                   "/sys/fs/cgroup/memory/memory.usage_in_bytes")):
        limit = _read_int(limit_file)
        if limit is None or limit >= _NO_CGROUP_V1_LIMIT:
            continue
        used = _read_int(used_file)
        return max(0, limit - (used or 0))
    return None


def _status_bytes(key: str) -> int | None:
    """A ``kB`` field of ``/proc/self/status`` (``VmSize``, ``VmData`` ...) in bytes."""
    return _proc_kib("/proc/self/status", key)


def _rlimit_available() -> tuple[int, str] | None:
    """What ``RLIMIT_AS`` (less ``VmSize``) or ``RLIMIT_DATA`` (less ``VmData``) leaves, the
    smaller, when either is set."""
    try:
        import resource
    except ImportError:  # pragma: no cover - not on POSIX
        return None
    found = []
    for name, key in (("RLIMIT_AS", "VmSize"), ("RLIMIT_DATA", "VmData")):
        soft = resource.getrlimit(getattr(resource, name))[0]
        if soft == resource.RLIM_INFINITY or soft < 0:
            continue
        found.append((max(0, soft - (_status_bytes(key) or 0)), name))
    return min(found) if found else None


def _env_number(name: str) -> tuple[float | None, str] | None:
    """The environment variable ``name`` read as a number: ``(value, text)``, ``text`` its
    stripped value and ``value`` what ``float`` makes of it (``None`` when it is not a number);
    ``None`` when the variable is unset or blank. The caller checks the range and words the
    error.

    Examples
    --------
    >>> import os
    >>> from topofl._utils.validation.memory import _env_number
    >>> os.environ["TOPOFL_EXAMPLE"] = " 2e9 "
    >>> _env_number("TOPOFL_EXAMPLE")
    (2000000000.0, '2e9')
    >>> os.environ["TOPOFL_EXAMPLE"] = "lots"
    >>> _env_number("TOPOFL_EXAMPLE")
    (None, 'lots')
    >>> del os.environ["TOPOFL_EXAMPLE"]
    >>> _env_number("TOPOFL_EXAMPLE") is None
    True
    """
    text = os.environ.get(name, "").strip()
    if not text:
        return None
    try:
        return float(text), text
    except ValueError:
        return None, text


def memory_override() -> int | None:
    """The bytes :data:`MEMORY_LIMIT_ENV` sets, or ``None`` when it is unset or empty.

    Raises
    ------
    ValueError
        When it is set to something other than a number of bytes ``>= 0``.

    Examples
    --------
    >>> import os
    >>> from topofl._utils.validation.memory import memory_override
    >>> os.environ["TOPOFL_MEMORY_LIMIT"] = "2e9"
    >>> memory_override()
    2000000000
    >>> os.environ["TOPOFL_MEMORY_LIMIT"] = "lots"
    >>> memory_override()
    Traceback (most recent call last):
    ...
    ValueError: TOPOFL_MEMORY_LIMIT must be a number of bytes >= 0 (e.g. 8e9), got 'lots'
    >>> del os.environ["TOPOFL_MEMORY_LIMIT"]
    """
    got = _env_number(MEMORY_LIMIT_ENV)
    if got is None:
        return None
    value, text = got
    if value is None or not math.isfinite(value) or value < 0:
        raise ValueError(f"{MEMORY_LIMIT_ENV} must be a number of bytes >= 0 (e.g. 8e9), "
                         f"got {text!r}")
    return int(value)


def _forced_or_cuda(device: Any, *, total: bool) -> tuple[int | None, str] | None:
    """:func:`memory_limit`'s and :func:`memory_total`'s answer before the CPU's: the
    :data:`MEMORY_LIMIT_ENV` override, else a CUDA device's free (or ``total``) memory;
    ``None`` on the CPU."""
    forced = memory_override()
    if forced is not None:
        return forced, MEMORY_LIMIT_ENV
    dev = str(device)
    if not dev.startswith("cuda"):
        return None
    import torch

    if not torch.cuda.is_available():
        return None, "unknown"
    free, whole = torch.cuda.mem_get_info(torch.device(dev))
    if total:
        return int(whole), f"total memory of {dev} (torch.cuda.mem_get_info)"
    return int(free), f"free memory of {dev} (torch.cuda.mem_get_info)"


def memory_limit(device: Any = "cpu") -> tuple[int | None, str]:
    """``(bytes, source)``: what this process may still allocate on ``device``, and where the
    figure comes from; ``(None, "unknown")`` when nothing says.

    :data:`MEMORY_LIMIT_ENV` (``TOPOFL_MEMORY_LIMIT``), when set, is the answer. Otherwise, on
    the CPU, the smallest of what the cgroup memory limit leaves (v2 ``memory.max``, v1
    ``memory.limit_in_bytes``), what ``RLIMIT_AS`` / ``RLIMIT_DATA`` leave when set, and the
    kernel's ``MemAvailable`` (``/proc/meminfo``; else the free pages of ``os.sysconf``); on
    a CUDA device, its free memory (``torch.cuda.mem_get_info``).

    Examples
    --------
    >>> import os
    >>> from topofl._utils.validation.memory import memory_limit
    >>> os.environ["TOPOFL_MEMORY_LIMIT"] = "1000000"
    >>> memory_limit()
    (1000000, 'TOPOFL_MEMORY_LIMIT')
    >>> del os.environ["TOPOFL_MEMORY_LIMIT"]
    """
    early = _forced_or_cuda(device, total=False)
    if early is not None:
        return early
    found: list[tuple[int, str]] = []
    meminfo = _meminfo_available()
    if meminfo is not None:
        found.append((meminfo, "MemAvailable"))
    cgroup = _cgroup_available()
    if cgroup is not None:
        found.append((cgroup, "the cgroup memory limit"))
    rlimit = _rlimit_available()
    if rlimit is not None:
        found.append(rlimit)
    if not found:
        return None, "unknown"
    return min(found)


def memory_total(device: Any = "cpu") -> tuple[int | None, str]:
    """``(bytes, source)``: the memory this machine gives one process on ``device``, whatever
    other processes hold now (:func:`memory_limit` is what is left of it at the call).

    :data:`MEMORY_LIMIT_ENV`, when set, is the answer; otherwise, on the CPU, the smallest of
    the kernel's ``MemTotal``, the cgroup's memory limit and the soft ``RLIMIT_AS`` /
    ``RLIMIT_DATA``; on a CUDA device, its total memory. ``(None, "unknown")`` when nothing
    says. The same at every call on one machine: the plan's largest ``n`` against it is one
    number a config.

    Examples
    --------
    >>> from topofl._utils.validation.memory import memory_limit, memory_total
    >>> total, source = memory_total()
    >>> total is None or total >= (memory_limit()[0] or 0)
    True
    """
    early = _forced_or_cuda(device, total=True)
    if early is not None:
        return early
    found: list[tuple[int, str]] = []
    total = _meminfo("MemTotal", "SC_PHYS_PAGES")
    if total is not None:
        found.append((total, "MemTotal"))
    for limit_file in ("/sys/fs/cgroup/memory.max",
                       "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        limit = _read_int(limit_file)
        if limit is not None and limit < _NO_CGROUP_V1_LIMIT:
            found.append((limit, "the cgroup memory limit"))
            break
    try:
        import resource

        for name in ("RLIMIT_AS", "RLIMIT_DATA"):
            soft = resource.getrlimit(getattr(resource, name))[0]
            if soft != resource.RLIM_INFINITY and soft >= 0:
                found.append((int(soft), name))
    except ImportError:  # pragma: no cover - not on POSIX
        pass
    return min(found) if found else (None, "unknown")


def available_memory() -> int | None:
    """Bytes of memory this process can still allocate on the CPU, or ``None`` if unknown
    (:func:`memory_limit`: :data:`MEMORY_LIMIT_ENV` when set, else the smallest of the cgroup
    limit, the resource limits and ``MemAvailable``)."""
    return memory_limit("cpu")[0]


def fmt_bytes(b: float) -> str:
    """A byte count for people, in binary units to 3 significant digits.

    Examples
    --------
    >>> from topofl._utils.validation.memory import fmt_bytes
    >>> fmt_bytes(512), fmt_bytes(3 * 2**20)
    ('512 B', '3 MiB')
    """
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if b < 1024 or unit == "PiB":
            return f"{b:.3g} {unit}"
        b /= 1024
    return f"{b:.3g} PiB"  # pragma: no cover


def check_memory(nbytes: float, what: str, *, per_client: float = 0.0) -> None:
    """Raise :class:`~topofl.exceptions.InsufficientMemoryError` (a ``ValueError``) early if
    ``what`` needs an estimated ``nbytes`` that do not fit in :func:`available_memory`.

    Nothing is raised when the available memory is unknown. ``per_client`` (when ``nbytes``
    is that many bytes a client and nothing else): the message names the largest number of
    clients that fits, and the error's ``max_clients`` holds it.

    Examples
    --------
    >>> from topofl._utils.validation.memory import check_memory
    >>> check_memory(1e3, "a tiny thing")
    >>> check_memory(1e17, "a huge thing")  # doctest: +ELLIPSIS +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    ...
    topofl.exceptions.InsufficientMemoryError: a huge thing needs about 88.8 PiB of memory
    (estimated), but only ... is available
    >>> import os
    >>> os.environ["TOPOFL_MEMORY_LIMIT"] = "1000000"
    >>> check_memory(400.0 * 10**6, "10**6 clients", per_client=400.0)
    ... # doctest: +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    ...
    topofl.exceptions.InsufficientMemoryError: 10**6 clients needs about 381 MiB of memory
    (estimated), but only 977 KiB is available; at most 2,500 clients fit
    >>> del os.environ["TOPOFL_MEMORY_LIMIT"]
    """
    avail = available_memory()
    if avail is not None and nbytes > avail:
        fits = int(avail // per_client) if per_client > 0 else None
        tail = ("" if fits is None else "; not even one client fits" if fits == 0
                else f"; at most {fits:,} clients fit")
        raise InsufficientMemoryError(
            f"{what} needs about {fmt_bytes(nbytes)} of memory (estimated), but only "
            f"{fmt_bytes(avail)} is available{tail}", need=int(nbytes), limit=int(avail),
            max_clients=fits)


def graph_bytes(n: int, arcs: float) -> float:
    """Estimated peak bytes of building a topology with ``n`` nodes and ``arcs`` arcs."""
    return float(BYTES_PER_NODE) * n + float(BYTES_PER_ARC) * arcs


def check_graph_size(n: int, arcs: float, what: str) -> None:
    """Refuse a graph of ``n`` nodes and ``arcs`` arcs (each direction counted) that would not
    fit in memory, before networkx or scipy start allocating it.

    Every constructor of :mod:`topofl.topologies` calls it with its exact arc count, and
    :func:`topofl.topologies.build` with a lower bound for any family with an ``n``.

    Examples
    --------
    >>> from topofl._utils.validation.memory import check_graph_size
    >>> check_graph_size(10**9, 2 * 10**9, "ring(n=1000000000)")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    topofl.exceptions.InsufficientMemoryError: ring(n=1000000000) needs about 2.09 TiB ...
    """
    check_memory(graph_bytes(n, arcs), what)
