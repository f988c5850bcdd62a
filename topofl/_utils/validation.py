"""Validation at the boundary.

Public entry points call these helpers once and then trust the canonical form. Every error says
which argument was wrong, what was expected and what was found.
"""

from __future__ import annotations

import math
import numbers
import os
import types
from collections.abc import Collection, Mapping, Sequence
from typing import Any, Literal, Union, get_args, get_origin

import networkx as nx
import numpy as np
import scipy.sparse as sp

__all__ = [
    "check_bool",
    "check_int",
    "check_real",
    "check_choice",
    "check_type",
    "type_text",
    "check_graph",
    "check_matrix",
    "check_stochastic",
    "stochasticity",
    "arc_pattern",
    "available_memory",
    "memory_limit",
    "memory_override",
    "MEMORY_LIMIT_ENV",
    "check_memory",
    "graph_bytes",
    "check_graph_size",
    "check_device",
    "check_path",
    "max_seconds",
    "check_time",
    "check_rounds",
    "unknown_name",
    "did_you_mean",
    "did_you_mean_each",
]

StochasticKind = Literal["row", "column", "doubly", "any"]


def _type_name(value: object) -> str:
    return type(value).__name__


def check_int(
    value: Any,
    name: str,
    *,
    low: int | None = None,
    high: int | None = None,
) -> int:
    """Return ``value`` as an ``int`` in ``[low, high]`` or raise.

    Raises
    ------
    TypeError
        If ``value`` is not an integer (``bool`` and non-integral floats are refused).
    ValueError
        If it lies outside ``[low, high]``.

    Examples
    --------
    >>> from topofl._utils.validation import check_int
    >>> check_int(3, "n", low=1)
    3
    >>> check_int(0, "n", low=1)
    Traceback (most recent call last):
    ...
    ValueError: n must be >= 1, got 0
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an int, got {_type_name(value)} {value!r}")
    v = int(value)
    if low is not None and high is not None and not low <= v <= high:
        raise ValueError(f"{name} must be in [{low}, {high}], got {v}")
    if low is not None and v < low:
        raise ValueError(f"{name} must be >= {low}, got {v}")
    if high is not None and v > high:
        raise ValueError(f"{name} must be <= {high}, got {v}")
    return v


def check_bool(value: Any, name: str) -> bool:
    """Return ``value`` if it is a ``bool`` (or ``numpy.bool_``) or raise ``TypeError``.

    Truthy strings such as ``"no"`` are refused rather than read as ``True``.

    Examples
    --------
    >>> from topofl._utils.validation import check_bool
    >>> check_bool(False, "connected")
    False
    >>> check_bool("no", "connected")
    Traceback (most recent call last):
    ...
    TypeError: connected must be a bool (True or False), got str 'no'
    """
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    raise TypeError(f"{name} must be a bool (True or False), got {_type_name(value)} {value!r}")


def check_real(
    value: Any,
    name: str,
    *,
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
    high_open: bool = False,
) -> float:
    """Return ``value`` as a finite ``float`` in the given interval or raise.

    Examples
    --------
    >>> from topofl._utils.validation import check_real
    >>> check_real(0.5, "p", low=0, high=1)
    0.5
    >>> check_real(1.5, "p", low=0, high=1)
    Traceback (most recent call last):
    ...
    ValueError: p must be in [0, 1], got 1.5
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {_type_name(value)} {value!r}")
    v = float(value)
    if math.isnan(v):
        raise ValueError(f"{name} must be a number, got nan")
    lo_ok = low is None or (v > low if low_open else v >= low)
    hi_ok = high is None or (v < high if high_open else v <= high)
    if not (lo_ok and hi_ok):
        lb = "(" if low_open else "["
        rb = ")" if high_open else "]"
        lo_s = "-inf" if low is None else f"{low:g}"
        hi_s = "inf" if high is None else f"{high:g}"
        raise ValueError(f"{name} must be in {lb}{lo_s}, {hi_s}{rb}, got {v:g}")
    if math.isinf(v):
        raise ValueError(f"{name} must be finite, got {v}")
    return v


def check_choice(value: Any, name: str, choices: Collection[str]) -> str:
    """Return ``value`` if it is one of ``choices`` or raise a ``ValueError`` listing them.

    Examples
    --------
    >>> from topofl._utils.validation import check_choice
    >>> check_choice("ring", "inter", ["ring", "fractal"])
    'ring'
    """
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, got {_type_name(value)} {value!r}")
    if value not in choices:
        raise ValueError(f"{name} must be one of {sorted(choices)}, got {value!r}"
                         f"{did_you_mean(value, choices)}")
    return value


def _fits(value: Any, tp: Any) -> bool:
    """Whether ``value`` is of the (evaluated) annotation ``tp``."""
    if tp is Any or tp is object:
        return True
    if tp is None or tp is type(None):
        return value is None
    origin, args = get_origin(tp), get_args(tp)
    if origin is Union or origin is types.UnionType:
        return any(_fits(value, a) for a in args)
    if origin is Literal:
        return any(value == a and type(value) is type(a) for a in args)
    if tp is bool:
        return isinstance(value, (bool, np.bool_))
    if tp is int:
        return isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_))
    if tp is float:
        return isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_))
    if origin is None:  # a plain class, or what cannot be checked (a string, a TypeVar)
        return isinstance(value, tp) if isinstance(tp, type) else True
    if _is_sequence(origin):
        if not isinstance(value, (list, tuple)):
            return False
        if origin is tuple and args and args[-1] is not Ellipsis:  # tuple[int, str]
            return len(value) == len(args) and all(map(_fits, value, args))
        return all(_fits(v, args[0]) for v in value) if args else True
    if isinstance(origin, type) and issubclass(origin, Mapping):
        if not isinstance(value, Mapping):
            return False
        key, val = args if len(args) == 2 else (Any, Any)
        return all(_fits(k, key) and _fits(v, val) for k, v in value.items())
    return isinstance(value, origin) if isinstance(origin, type) else True


def _is_sequence(origin: Any) -> bool:
    return isinstance(origin, type) and origin is not str and issubclass(origin, Sequence)


def type_text(tp: Any) -> str:
    """An annotation in words, for the message of :func:`check_type`.

    Examples
    --------
    >>> from collections.abc import Sequence
    >>> from topofl._utils.validation import type_text
    >>> type_text(float | None), type_text(Sequence[int]), type_text(bool)
    ('a real number or None', 'a list of int', 'a bool (True or False)')
    """
    if tp is Any or tp is object:
        return "anything"
    if tp is None or tp is type(None):
        return "None"
    words = {bool: "a bool (True or False)", int: "an int", float: "a real number",
             str: "a str"}
    if tp in words:
        return words[tp]
    origin, args = get_origin(tp), get_args(tp)
    if origin is Union or origin is types.UnionType:
        parts = [type_text(a) for a in args]
        return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " or " + parts[-1]
    if origin is Literal:
        return "one of " + ", ".join(repr(a) for a in args)
    if origin is not None and _is_sequence(origin):
        elem = args[0] if args and (origin is not tuple or args[-1] is Ellipsis) else None
        noun = getattr(elem, "__name__", None) if isinstance(elem, type) else None
        return f"a list of {noun or type_text(elem)}" if elem is not None else "a list"
    if origin is not None and isinstance(origin, type) and issubclass(origin, Mapping):
        return "a mapping"
    name = getattr(tp, "__name__", str(tp))
    return f"{'an' if name[:1].lower() in 'aeiou' else 'a'} {name}"


def check_type(value: Any, tp: Any, name: str) -> Any:
    """Return ``value`` if it is of the annotation ``tp``, else raise ``TypeError``.

    ``tp`` is an evaluated annotation (:func:`typing.get_type_hints` evaluates the strings of
    ``from __future__ import annotations``): ``int``, ``float`` (an int is a real number),
    ``bool``, ``str``, a class, ``X | None``, ``Literal[...]``, ``tuple[X, ...]``,
    ``Sequence[X]`` (a list or a tuple), ``Mapping[K, V]``; ``Any`` or an annotation it cannot
    read accepts anything. ``bool`` is not an int here.

    Examples
    --------
    >>> from topofl._utils.validation import check_type
    >>> check_type([64, 32], tuple[int, ...], "hidden")
    [64, 32]
    >>> check_type("2", int | None, "shards_per_client")
    Traceback (most recent call last):
    ...
    TypeError: shards_per_client must be an int or None, got str '2'
    """
    if not _fits(value, tp):
        raise TypeError(f"{name} must be {type_text(tp)}, got {_type_name(value)} "
                        f"{value!r}"[:300])
    return value


def check_graph(G: Any, name: str = "G") -> int:
    """Check that ``G`` is a networkx graph on the nodes ``0..n-1``; return ``n``.

    Multigraphs are refused (a mixing matrix has one weight per pair).

    Examples
    --------
    >>> import networkx as nx
    >>> from topofl._utils.validation import check_graph
    >>> check_graph(nx.path_graph(4))
    4
    >>> check_graph(nx.relabel_nodes(nx.path_graph(2), {0: "a", 1: "b"}))
    ... # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: G must have the nodes 0..n-1 (n=2); found nodes that are not, e.g. 'a' ...
    """
    if not isinstance(G, nx.Graph):
        raise TypeError(f"{name} must be a networkx Graph or DiGraph, got {_type_name(G)}")
    if G.is_multigraph():
        raise TypeError(
            f"{name} must be a simple Graph or DiGraph, got a multigraph ({_type_name(G)}); "
            "convert it with networkx.Graph(G) or networkx.DiGraph(G)"
        )
    n = G.number_of_nodes()
    expected = set(range(n))
    bad = [v for v in G.nodes if isinstance(v, bool) or v not in expected]
    if bad:
        raise ValueError(
            f"{name} must have the nodes 0..n-1 (n={n}); found nodes that are not, "
            f"e.g. {bad[0]!r} (use networkx.convert_node_labels_to_integers)"
        )
    return int(n)


def _check_real(values: Any, name: str) -> None:
    """Refuse complex values with a non-zero imaginary part (casting would drop it)."""
    arr = np.asarray(values)
    if np.iscomplexobj(arr):
        imag = np.abs(arr.imag)
        if imag.size and float(imag.max()) > 0:
            k = np.unravel_index(int(np.argmax(imag)), imag.shape)
            where = f" at {tuple(int(i) for i in k)}" if arr.ndim == 2 else ""
            raise ValueError(f"{name} must be real, found the complex entry "
                             f"{complex(arr[k])}{where} (its imaginary part would be dropped)")


def check_matrix(W: Any, name: str = "W") -> sp.csr_array:
    """Return ``W`` as a canonical float64 ``csr_array`` with non-negative finite entries.

    Accepts numpy arrays, scipy sparse arrays or matrices, and torch tensors (dense or sparse).
    Explicit zeros are removed, indices are sorted.

    Raises
    ------
    TypeError
        If ``W`` is not array-like.
    ValueError
        If ``W`` is not square, is empty, has NaN/inf or negative entries.

    Examples
    --------
    >>> from topofl._utils.validation import check_matrix
    >>> check_matrix([[0.5, 0.5], [0.5, 0.5]]).nnz
    4
    >>> check_matrix([[1.0, 0.0, 0.0]])
    Traceback (most recent call last):
    ...
    ValueError: W must be a square (n, n) matrix, got shape (1, 3)
    """
    try:
        import torch

        if isinstance(W, torch.Tensor):
            W = W.to_dense().detach().cpu()
            W = W.numpy() if W.is_complex() else W.double().numpy()
    except ImportError:  # pragma: no cover - torch is a dependency
        pass
    if sp.issparse(W):
        _check_real(W.data if hasattr(W, "data") else W, name)
        M = sp.csr_array(W.real if np.iscomplexobj(W.data) else W, dtype=np.float64)
    else:
        try:
            raw = np.asarray(W)
            if raw.dtype.kind == "O":  # lists of Python numbers with a complex among them
                raw = np.asarray(W, dtype=np.complex128)
            _check_real(raw, name)
            arr = np.asarray(raw.real if np.iscomplexobj(raw) else raw, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            if "must be real" in str(exc):
                raise
            raise TypeError(
                f"{name} must be a numeric (n, n) array or sparse matrix, got {_type_name(W)}"
            ) from exc
        if arr.ndim != 2:
            raise ValueError(f"{name} must be a square (n, n) matrix, got shape {arr.shape}")
        M = sp.csr_array(arr)
    if M.ndim != 2 or M.shape[0] != M.shape[1]:
        raise ValueError(f"{name} must be a square (n, n) matrix, got shape {M.shape}")
    if M.shape[0] == 0:
        raise ValueError(f"{name} must have at least one row, got shape {M.shape}")
    M = M.copy()
    M.sum_duplicates()
    if not np.all(np.isfinite(M.data)):
        k = int(np.flatnonzero(~np.isfinite(M.data))[0])
        row = int(np.searchsorted(M.indptr, k, side="right") - 1)
        raise ValueError(
            f"{name} must have finite entries, found {M.data[k]} at ({row}, {M.indices[k]})"
        )
    if np.any(M.data < 0):
        k = int(np.flatnonzero(M.data < 0)[0])
        row = int(np.searchsorted(M.indptr, k, side="right") - 1)
        raise ValueError(
            f"{name} must have non-negative entries, found {M.data[k]:.6g} at "
            f"({row}, {M.indices[k]})"
        )
    M.eliminate_zeros()
    M.sort_indices()
    return M


def _sums(M: sp.csr_array, axis: int) -> np.ndarray:
    return np.asarray(M.sum(axis=axis)).ravel()


def stochasticity(W: sp.csr_array, *, atol: float = 1e-10) -> str:
    """Which sums of the canonical ``W`` are 1 (to ``atol``): ``"doubly"``, ``"row"``,
    ``"column"`` or ``"none"``.

    The one test of stochasticity that :class:`~topofl.Topology`, :mod:`topofl.spectral` and
    :func:`check_stochastic` share.

    Examples
    --------
    >>> import numpy as np
    >>> from topofl._utils.validation import check_matrix, stochasticity
    >>> stochasticity(check_matrix(np.array([[0.5, 0.5], [0.2, 0.8]])))
    'row'
    >>> stochasticity(check_matrix(np.full((3, 3), 1 / 3)))
    'doubly'
    """
    r = bool(np.all(np.abs(_sums(W, 1) - 1.0) <= atol))
    c = bool(np.all(np.abs(_sums(W, 0) - 1.0) <= atol))
    return "doubly" if r and c else "row" if r else "column" if c else "none"


def arc_pattern(W: sp.csr_array, *, diagonal: bool = False) -> sp.csr_array:
    """The 0/1 float pattern of ``W``: ``P[i, j] = 1`` iff the arc ``j -> i`` (``W[i, j] > 0``).

    The diagonal is dropped, or with ``diagonal=True`` set to 1 everywhere. Canonical CSR
    (sorted indices, no explicit zeros); ``W`` is not modified.

    Examples
    --------
    >>> from topofl._utils.validation import arc_pattern, check_matrix
    >>> W = check_matrix([[0.5, 0.5, 0.0], [0.0, 1.0, 0.0], [0.0, 0.25, 0.75]])
    >>> arc_pattern(W).toarray()
    array([[0., 1., 0.],
           [0., 0., 0.],
           [0., 1., 0.]])
    >>> int(arc_pattern(W, diagonal=True).nnz)
    5
    """
    P = sp.csr_array(W, copy=True)
    P.eliminate_zeros()
    P.data[:] = 1.0
    P = (P - sp.diags_array(P.diagonal())).tocsr()
    if diagonal:
        P = (P + sp.eye_array(P.shape[0], format="csr")).tocsr()
    P.eliminate_zeros()
    P.sort_indices()
    return P


def check_stochastic(
    W: sp.csr_array, kind: StochasticKind, *, atol: float = 1e-10, name: str = "W"
) -> sp.csr_array:
    """Raise unless the canonical ``W`` is stochastic in the sense ``kind``.

    ``"row"``: every row sums to 1 (``x_{t+1} = W x_t`` is a weighted average at each node);
    ``"column"``: every column sums to 1 (mass is preserved, as push-sum needs);
    ``"doubly"``: both; ``"any"``: rows or columns (either kind of gossip matrix).

    The message names the first row (and, for ``"any"``, column) whose sum is off.

    Examples
    --------
    >>> import numpy as np
    >>> from topofl._utils.validation import check_matrix, check_stochastic
    >>> W = check_matrix(np.array([[0.5, 0.5], [0.2, 0.8]]))
    >>> _ = check_stochastic(W, "row")
    >>> check_stochastic(W, "column")
    Traceback (most recent call last):
    ...
    ValueError: W must be column-stochastic: column 0 sums to 0.7 (atol=1e-10)
    >>> check_stochastic(check_matrix(np.zeros((3, 3))), "any")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: W must be row- or column-stochastic: row 0 sums to 0 and column 0 sums to 0 ...
    """
    check_choice(kind, "kind", ("row", "column", "doubly", "any"))
    if kind == "any":
        if stochasticity(W, atol=atol) != "none":
            return W
        r, c = _sums(W, 1), _sums(W, 0)
        i = int(np.argmax(np.abs(r - 1.0)))
        j = int(np.argmax(np.abs(c - 1.0)))
        raise ValueError(
            f"{name} must be row- or column-stochastic: row {i} sums to {r[i]:.6g} and "
            f"column {j} sums to {c[j]:.6g} (atol={atol:g})"
        )
    for axis, what in ((1, "row"), (0, "column")):
        if kind not in (what, "doubly"):
            continue
        s = _sums(W, axis)
        bad = np.flatnonzero(np.abs(s - 1.0) > atol)
        if bad.size:
            i = int(bad[0])
            raise ValueError(
                f"{name} must be {what}-stochastic: {what} {i} sums to {s[i]:.6g} (atol={atol:g})"
            )
    return W


# ============================================================================ memory
#: Peak bytes per node and per arc of building a :class:`~topofl.Topology` (the networkx input
#: graph, the frozen digraph, ``W`` and the temporaries in between). Measured with
#: ``tracemalloc``: ``ring(10**5)`` peaks at 174 MB (1e5 nodes, 2e5 arcs), ``complete(700)`` at
#: 184 MB (489,300 arcs), ``random_regular(20000, 10, seed=0)`` at 79 MB (2e5 arcs),
#: ``torus(100, 100)`` at 28.6 MB (1e4 nodes, 4e4 arcs); these two constants bound all four
#: from above (``tests/topologies/test_size.py`` checks it).
BYTES_PER_NODE = 1500
BYTES_PER_ARC = 400


def _meminfo_available() -> int | None:
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return int(os.sysconf("SC_AVPHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (AttributeError, OSError, ValueError):
        return None


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
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith(key + ":"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


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


def memory_override() -> int | None:
    """The bytes :data:`MEMORY_LIMIT_ENV` sets, or ``None`` when it is unset or empty.

    Raises
    ------
    ValueError
        When it is set to something other than a number of bytes ``>= 0``.

    Examples
    --------
    >>> import os
    >>> from topofl._utils.validation import memory_override
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
    text = os.environ.get(MEMORY_LIMIT_ENV, "").strip()
    if not text:
        return None
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"{MEMORY_LIMIT_ENV} must be a number of bytes >= 0 (e.g. 8e9), "
                         f"got {text!r}")
    return int(value)


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
    >>> from topofl._utils.validation import memory_limit
    >>> os.environ["TOPOFL_MEMORY_LIMIT"] = "1000000"
    >>> memory_limit()
    (1000000, 'TOPOFL_MEMORY_LIMIT')
    >>> del os.environ["TOPOFL_MEMORY_LIMIT"]
    """
    forced = memory_override()
    if forced is not None:
        return forced, MEMORY_LIMIT_ENV
    dev = str(device)
    if dev.startswith("cuda"):
        import torch

        if torch.cuda.is_available():
            free, _total = torch.cuda.mem_get_info(torch.device(dev))
            return int(free), f"free memory of {dev} (torch.cuda.mem_get_info)"
        return None, "unknown"
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


def available_memory() -> int | None:
    """Bytes of memory this process can still allocate on the CPU, or ``None`` if unknown
    (:func:`memory_limit`: :data:`MEMORY_LIMIT_ENV` when set, else the smallest of the cgroup
    limit, the resource limits and ``MemAvailable``)."""
    return memory_limit("cpu")[0]


def fmt_bytes(b: float) -> str:
    """A byte count for people, in binary units to 3 significant digits.

    Examples
    --------
    >>> from topofl._utils.validation import fmt_bytes
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
    >>> from topofl._utils.validation import check_memory
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
    from topofl.exceptions import InsufficientMemoryError

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
    >>> from topofl._utils.validation import check_graph_size
    >>> check_graph_size(10**9, 2 * 10**9, "ring(n=1000000000)")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    topofl.exceptions.InsufficientMemoryError: ring(n=1000000000) needs about 2.09 TiB ...
    """
    check_memory(graph_bytes(n, arcs), what)


def check_path(value: Any, name: str, *, optional: bool = True) -> Any:
    """Return ``value`` if it is a path (``str`` or ``os.PathLike``; ``None`` if optional).

    Examples
    --------
    >>> from topofl._utils.validation import check_path
    >>> check_path("runs/a.jsonl", "records_path")
    'runs/a.jsonl'
    >>> check_path(123, "records_path")
    Traceback (most recent call last):
    ...
    TypeError: records_path must be a path (str or os.PathLike) or None, got int 123
    """
    if value is None and optional:
        return value
    if isinstance(value, (str, os.PathLike)) and not isinstance(value, bytes):
        if isinstance(value, str) and "\x00" in value:
            raise ValueError(f"{name} must not contain a NUL character, got {value!r}")
        return value
    what = "a path (str or os.PathLike)" + (" or None" if optional else "")
    raise TypeError(f"{name} must be {what}, got {_type_name(value)} {value!r}"[:300])


def check_device(device: Any, name: str = "device") -> Any:
    """Return ``torch.device(device)`` if that device exists here, else raise.

    Raises
    ------
    TypeError
        If ``device`` is not a str, int or ``torch.device``.
    ValueError
        If torch does not know the string, the device is CUDA/MPS and not available, or it is
        not one topofl computes on (``"meta"``, ``"xla"`` ...).

    Examples
    --------
    >>> from topofl._utils.validation import check_device
    >>> check_device("cpu")
    device(type='cpu')
    >>> check_device("gpu")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: device must be a torch device such as 'cpu' or 'cuda:0', got 'gpu' ...
    """
    import torch

    if isinstance(device, bool) or not isinstance(device, (str, int, torch.device)):
        raise TypeError(
            f"{name} must be a str such as 'cpu' or 'cuda:0' or a torch.device, got "
            f"{_type_name(device)} {device!r}"
        )
    if isinstance(device, int) and device < 0:
        raise ValueError(f"{name} index must be >= 0, got {device}")
    try:
        d = torch.device(device)
    except (RuntimeError, ValueError, TypeError) as exc:
        raise ValueError(
            f"{name} must be a torch device such as 'cpu' or 'cuda:0', got {device!r} ({exc})"
        ) from None
    if d.type == "cuda":
        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if count == 0:
            raise ValueError(f"{name}={device!r} needs CUDA, which is not available here")
        if d.index is not None and d.index >= count:
            raise ValueError(f"{name}={device!r}: only {count} CUDA device(s) here")
    elif d.type == "mps" and not torch.backends.mps.is_available():
        raise ValueError(f"{name}={device!r} needs MPS, which is not available here")
    elif d.type not in ("cpu", "cuda", "mps"):
        what = " (the meta device holds shapes, not numbers)" if d.type == "meta" else ""
        raise ValueError(f"{name}={device!r}: topofl runs on 'cpu', 'cuda' or 'mps'{what}")
    return d


# ============================================================================ time
#: Default limit on the work one call of an analysis function (``topofl.spectral``, a sweep's
#: plan) may be estimated to need: beyond it the call is refused at once, with the estimate,
#: rather than left running. The environment variable :data:`MAX_SECONDS_ENV` overrides it.
MAX_SECONDS = 60.0
MAX_SECONDS_ENV = "TOPOFL_MAX_SECONDS"


def max_seconds() -> float:
    """The limit of :func:`check_time`: ``$TOPOFL_MAX_SECONDS`` if set (``inf`` or a number
    of seconds), else :data:`MAX_SECONDS`."""
    raw = os.environ.get(MAX_SECONDS_ENV, "").strip()
    if not raw:
        return MAX_SECONDS
    try:
        v = float(raw)
    except ValueError:
        raise ValueError(f"{MAX_SECONDS_ENV} must be a number of seconds (or inf), got "
                         f"{raw!r}") from None
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
    >>> from topofl._utils.validation import check_time
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
    >>> from topofl._utils.validation import check_rounds
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


# ============================================================================ names
def did_you_mean(value: Any, known: Collection[str]) -> str:
    """``" (did you mean 'ring'?)"`` for the known name closest to ``value``, or ``""``.

    The one place every lookup by name (graph families, algorithms, models, datasets,
    partitions, choices) finds its suggestion. The candidates are :mod:`difflib`'s (similarity
    ratio at least 0.6); the closest is the one of highest ratio, ties broken by the fewest
    edits counting a swap of two neighbouring letters as one (:func:`edit_distance`: ``dsdg``
    is one swap from ``dsgd``, two substitutions from ``dsgt``, both of ratio 0.75), then by
    name.

    Examples
    --------
    >>> from topofl._utils.validation import did_you_mean
    >>> did_you_mean("rnig", ["ring", "torus", "complete"])
    " (did you mean 'ring'?)"
    >>> did_you_mean("xyz", ["ring", "torus"])
    ''
    >>> did_you_mean("dsdg", ["dsgt", "dsgd", "adpsgd"])
    " (did you mean 'dsgd'?)"
    """
    import difflib

    if not isinstance(value, str) or not value:
        return ""
    names = [k for k in known if isinstance(k, str)]
    low = {k.lower(): k for k in names}
    if value.lower() in low and low[value.lower()] != value:
        return f" (did you mean {low[value.lower()]!r}?)"
    word = value.lower()
    close = difflib.get_close_matches(word, list(low), n=max(1, len(low)), cutoff=0.6)
    if not close:
        return ""

    def rank(k: str) -> tuple[float, int, str]:
        return (-difflib.SequenceMatcher(None, word, k).ratio(), edit_distance(word, k), k)

    return f" (did you mean {low[min(close, key=rank)]!r}?)"


def edit_distance(a: str, b: str) -> int:
    """The fewest insertions, deletions, substitutions and swaps of two neighbouring
    characters that turn ``a`` into ``b`` (optimal string alignment: Damerau-Levenshtein
    without editing a substring twice); O(len(a) len(b)).

    Examples
    --------
    >>> from topofl._utils.validation import edit_distance
    >>> edit_distance("dsdg", "dsgd"), edit_distance("dsdg", "dsgt"), edit_distance("", "ab")
    (1, 2, 2)
    >>> edit_distance("kitten", "sitting"), edit_distance("ca", "abc")
    (3, 3)
    """
    prev2: list[int] = []
    prev = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        cur = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cost = 0 if a[i - 1] == b[j - 1] else 1
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                cur[j] = min(cur[j], prev2[j - 2] + 1)
        prev2, prev = prev, cur
    return prev[len(b)]


def did_you_mean_each(values: Collection[Any], known: Collection[str]) -> str:
    """:func:`did_you_mean` for several unknown names at once (keys of a config ...).

    Examples
    --------
    >>> from topofl._utils.validation import did_you_mean_each
    >>> did_you_mean_each(["lrr", "xyz", "momentm"], ["lr", "momentum", "seed"])
    " (did you mean 'lr' for 'lrr', 'momentum' for 'momentm'?)"
    """
    pairs = []
    for v in values:
        hint = did_you_mean(v, known)
        if hint:
            pairs.append(hint[len(" (did you mean "):-len("?)")] + f" for {v!r}")
    return f" (did you mean {', '.join(pairs)}?)" if pairs else ""


def unknown_name(what: str, value: Any, known: Collection[str], *, sort: bool = True) -> str:
    """The message of a failed lookup by name: what was asked, the likely name, the known ones.

    Examples
    --------
    >>> from topofl._utils.validation import unknown_name
    >>> unknown_name("graph family", "rnig", ["torus", "ring"])
    "unknown graph family 'rnig' (did you mean 'ring'?); known: ring, torus"
    """
    names = sorted(known) if sort else list(known)
    return f"unknown {what} {value!r}{did_you_mean(value, names)}; known: {', '.join(names)}"
