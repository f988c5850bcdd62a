"""The numeric environment: what decides the last bits of a float computation here.

The same seed and code give the same bits only where the kernels that run and the order in
which they sum are the same. On a CPU that is decided by more than torch's version and the CPU
kind (:func:`topofl._utils.cpu.cpu_kind`):

- **torch**: its version and build, the instruction set ATen dispatches its vectorized
  kernels to (``AVX512``, ``AVX2``, ``DEFAULT``; ``ATEN_CPU_CAPABILITY`` lowers it), its BLAS
  (MKL in the PyPI and pytorch.org CPU wheels) and MKL's code path (``MKL_CBWR``), and its
  thread count;
- **numpy and scipy**: their versions, the OpenBLAS each bundles and the core type it
  dispatches to (``Haswell``, ``SkylakeX``, ``Zen`` ...: chosen by the CPU's family and model,
  not only its instruction set; ``OPENBLAS_CORETYPE`` forces one), and numpy's own SIMD
  targets (``__cpu_dispatch__``; ``NPY_DISABLE_CPU_FEATURES`` turns them off);
- **networkx**, whose random graph generators draw from the seed (their algorithms change
  across versions), and **Python** (its ``random`` module, which networkx drives);
- **the processor**: vendor, family and model, which MKL and OpenBLAS read to choose their
  code (two AVX512 machines of one vendor and two generations can run different kernels);
- **Numba and its LLVM** (``llvmlite``), which compile the band gossip kernel
  (:mod:`topofl.engine._band_jit`, buffers of 1 GiB and more by default): LLVM chooses the
  instructions and may fuse a product into the next sum. Recorded since that kernel exists
  (:data:`LATER_BIT_FIELDS`), without importing Numba.

:func:`numeric_environment` records all of it, :func:`bits` keeps the part that decides the
bits (:data:`BIT_FIELDS`; the rest names things for a reader) and :func:`differences` says
in words where two environments differ. What each field was *measured* to move, on the
snapshot of every algorithm, graph family and model, is in ``analysis/environment_bits.md``
(``analysis/environment_bits.py`` reruns it).

Examples
--------
>>> from topofl._utils.environment import numeric_environment, bits, differences
>>> env = numeric_environment()
>>> env["torch"] == __import__("torch").__version__, sorted(bits(env)) == sorted(BIT_FIELDS)
(True, True)
>>> differences(env, {**env, "numpy": "1.26.4"})  # doctest: +ELLIPSIS
['numpy ... vs 1.26.4']
>>> differences(env, {k: v for k, v in env.items() if k != "numba"})  # recorded before it
[]
"""

from __future__ import annotations

import functools
import importlib
import importlib.metadata
import os
import platform
import re
from collections.abc import Mapping
from typing import Any

import networkx
import numpy as np
import scipy
import torch

from topofl._utils.cpu import _cpuinfo, cpu_kind, cpu_model

__all__ = ["numeric_environment", "bits", "differences", "summary", "accelerator",
           "BIT_FIELDS", "LATER_BIT_FIELDS", "INFORMATIVE_FIELDS"]

#: The fields of :func:`numeric_environment` that decide the bits of a computation (two
#: environments equal on all of them compute the same bits for the same code and seed).
BIT_FIELDS = ("python", "torch", "torch_build", "torch_capability", "torch_blas", "mkl_cbwr",
              "numpy", "numpy_simd", "numpy_blas", "scipy", "scipy_blas", "networkx",
              "cpu", "cpu_id", "numba")
#: The fields of :data:`BIT_FIELDS` recorded only since a later version, which decide the bits
#: of a part of the library that did not exist before them (``numba``: the compiled band
#: kernel). :func:`differences` compares them only where both environments recorded them: an
#: environment recorded before the field ran no code whose bits it decides, so its absence
#: is not a difference (which would be a false "environment differs" on every older record).
#: A field that decided bits before it was recorded is not one of these.
LATER_BIT_FIELDS = ("numba",)
#: The fields that name things for a reader, or that were measured not to move the bits
#: (``blas_threads``: one OpenBLAS thread instead of two moved no value of the snapshot,
#: ``analysis/environment_bits.md``; the count follows the machine's cores). torch's thread
#: count is recorded apart (a certificate's ``threads``, a run's ``torch_threads``): it
#: decides the bits.
INFORMATIVE_FIELDS = ("cpu_model", "blas_threads")


def _torch_blas() -> str:
    """torch's BLAS and its version, e.g. ``"MKL 2024.2"`` (read from its build config)."""
    text = torch.__config__.show()
    mkl = re.search(r"Math Kernel Library Version (\S+?)(?:-|\s)", text)
    if mkl:
        return f"MKL {mkl.group(1)}"
    found = re.search(r"BLAS_INFO=(\w+)", text)
    return found.group(1) if found else "unknown"


def _numpy_simd() -> str:
    """numpy's SIMD targets on this CPU: its baseline and the dispatched targets the CPU
    supports (what ``NPY_DISABLE_CPU_FEATURES`` has left on), e.g. ``"X86_V2 + X86_V3"``."""
    try:
        umath = importlib.import_module("numpy._core._multiarray_umath")  # numpy >= 2
    except ImportError:  # pragma: no cover - numpy 1.x
        umath = importlib.import_module("numpy.core._multiarray_umath")
    features = getattr(umath, "__cpu_features__", {})
    baseline = list(getattr(umath, "__cpu_baseline__", []))
    on = [t for t in getattr(umath, "__cpu_dispatch__", []) if features.get(t)]
    return " + ".join([" ".join(baseline) or "none", *on])


def _blas_of(package: str) -> tuple[str, int | None]:
    """The BLAS a package bundles, as loaded here: ``"<library> <version> <core type>"`` and
    its thread count (threadpoolctl reads them from the loaded library)."""
    import scipy.linalg  # noqa: F401  (loads scipy's BLAS, so that it can be read)
    from threadpoolctl import threadpool_info

    for lib in threadpool_info():
        path = str(lib.get("filepath", ""))
        if lib.get("user_api") == "blas" and f"{os.sep}{package}" in path:
            parts = [str(lib.get("internal_api")), str(lib.get("version")),
                     str(lib.get("architecture") or "")]
            return " ".join(p for p in parts if p and p != "None"), lib.get("num_threads")
    return "not loaded", None


def _version(dist: str) -> str | None:
    """An installed distribution's version from its metadata (without importing it)."""
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def _numba() -> str:
    """Numba's version and its LLVM binding's, e.g. ``"0.62.1 (llvmlite 0.45.1)"``, or
    ``"not installed"`` (the compiled kernel then never runs: torch's kernel does)."""
    numba, llvmlite = _version("numba"), _version("llvmlite")
    if numba is None:
        return "not installed"
    return f"{numba} (llvmlite {llvmlite or 'not installed'})"


@functools.lru_cache(maxsize=1)
def _cpu_id() -> str:
    """The processor's vendor, family, model and stepping (what MKL and OpenBLAS read)."""
    info = _cpuinfo()
    fields = [("family", "cpu family"), ("model", "model"), ("stepping", "stepping")]
    known = [f"{name} {info[key]}" for name, key in fields if info.get(key)]
    vendor = info.get("vendor_id") or info.get("CPU implementer") or platform.machine()
    return " ".join([vendor or "unknown", *known])


def numeric_environment() -> dict[str, Any]:
    """The numeric environment of this process: every field that decides the bits of a float
    computation (:data:`BIT_FIELDS`) and a few that name it for a reader
    (:data:`INFORMATIVE_FIELDS`). See the module docstring for what each field is.

    Returns
    -------
    dict
        Plain strings (JSON-ready); ``blas_threads`` is ``{"numpy": n, "scipy": n}``.

    Notes
    -----
    Read at each call (about 10 ms: threadpoolctl inspects the loaded libraries): an
    environment variable set before torch or numpy started, or a thread count changed since,
    shows.
    """
    numpy_blas, numpy_threads = _blas_of("numpy")
    scipy_blas, scipy_threads = _blas_of("scipy")
    return {
        "python": platform.python_version(),
        "torch": str(torch.__version__),
        "torch_build": str(torch.version.git_version)[:12],
        "torch_capability": torch.backends.cpu.get_cpu_capability(),
        "torch_blas": _torch_blas(),
        "mkl_cbwr": os.environ.get("MKL_CBWR", "") or "auto",
        "numpy": np.__version__,
        "numpy_simd": _numpy_simd(),
        "numpy_blas": numpy_blas,
        "scipy": scipy.__version__,
        "scipy_blas": scipy_blas,
        "networkx": networkx.__version__,
        "cpu": cpu_kind(),
        "cpu_id": _cpu_id(),
        "numba": _numba(),
        "cpu_model": cpu_model(),
        "blas_threads": {"numpy": numpy_threads, "scipy": scipy_threads},
    }


def accelerator(device: Any) -> dict[str, Any] | None:
    """What decides the bits of a computation on ``device`` beyond the process's numeric
    environment: for a CUDA device, its name and compute capability (which kernels run),
    torch's CUDA and cuDNN versions, and whether matrix products and convolutions may round
    their inputs to TF32; ``None`` for the CPU and any other device (the CPU's part is
    :func:`numeric_environment`).

    Examples
    --------
    >>> from topofl._utils.environment import accelerator
    >>> accelerator("cpu") is None
    True
    """
    dev = torch.device(device)
    if dev.type != "cuda":
        return None
    index = dev.index if dev.index is not None else torch.cuda.current_device()
    major, minor = torch.cuda.get_device_capability(index)
    cudnn_ = torch.backends.cudnn
    cudnn = cudnn_.version() if cudnn_.is_available() else None  # type: ignore[no-untyped-call]
    return {"name": torch.cuda.get_device_name(index), "capability": f"{major}.{minor}",
            "cuda": str(torch.version.cuda), "cudnn": str(cudnn) if cudnn else "not available",
            "tf32_matmul": bool(torch.backends.cuda.matmul.allow_tf32),
            "tf32_cudnn": bool(torch.backends.cudnn.allow_tf32)}


def bits(env: Mapping[str, Any]) -> dict[str, Any]:
    """The part of an environment that decides the bits (:data:`BIT_FIELDS`; a field it
    lacks is ``None``: an environment recorded before that field was)."""
    return {f: env.get(f) for f in BIT_FIELDS}


def differences(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[str]:
    """Where two environments differ in a field that decides the bits, in words
    (``"numpy 2.2.6 vs 2.4.6"``); empty: they compute the same bits.

    A field of :data:`LATER_BIT_FIELDS` counts only where both environments recorded it (a
    value, not ``None``); any other field missing on one side is a difference
    (``"not recorded"``).

    Examples
    --------
    >>> differences({"numpy": "2.2.6", "cpu_model": "A"}, {"numpy": "2.4.6", "cpu_model": "B"})
    ['numpy 2.2.6 vs 2.4.6']
    >>> differences({"numba": "0.61.0 (llvmlite 0.44.0)"}, {}), differences({"numba": "0.61.0"},
    ...                                                               {"numba": "0.62.1"})
    ([], ['numba 0.61.0 vs 0.62.1'])
    """
    out = []
    for f in BIT_FIELDS:
        x, y = a.get(f), b.get(f)
        if f in LATER_BIT_FIELDS and (x is None or y is None):
            continue
        if x != y:
            out.append(f"{f} {x if x is not None else 'not recorded'} vs "
                       f"{y if y is not None else 'not recorded'}")
    return out


def summary(env: Mapping[str, Any]) -> str:
    """One line naming an environment for a reader (a result's Provenance table).

    Examples
    --------
    >>> summary({"torch": "2.13.0+cpu", "torch_capability": "AVX2", "numpy": "2.4.6",
    ...          "scipy": "1.17.1", "networkx": "3.6.1", "python": "3.11.7",
    ...          "cpu_id": "AuthenticAMD family 25 model 1"}).split(", ")
    ['torch 2.13.0+cpu (AVX2)', 'numpy 2.4.6', 'scipy 1.17.1', 'networkx 3.6.1', 'Python 3.11.7',
     'AuthenticAMD family 25 model 1']
    """
    def get(f: str) -> str:
        v = env.get(f)
        return str(v) if v is not None else "?"

    blas = [f"{p} {get(p)}" + (f" ({env[p + '_blas']})" if env.get(p + "_blas") else "")
            for p in ("numpy", "scipy")]
    torch_text = f"torch {get('torch')} ({get('torch_capability')}" + (
        f", {env['torch_blas']}, MKL_CBWR {env['mkl_cbwr']}" if env.get("torch_blas") else "")
    return ", ".join([torch_text + ")", *blas, f"networkx {get('networkx')}",
                      f"Python {get('python')}", get("cpu_id")])
