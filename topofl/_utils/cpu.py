"""The CPU kind: the third condition of a bitwise replay, beside torch's version and threads.

torch's CPU kernels are chosen by the processor: ATen dispatches each vectorized kernel to
the widest instruction set it supports (``torch.backends.cpu.get_cpu_capability()``:
``DEFAULT``, ``AVX2``, ``AVX512`` ...; ``ATEN_CPU_CAPABILITY`` lowers it) and MKL picks its
matrix-product code path by vendor and instruction set. Two machines of one kind run the same
kernels, so the same seed gives the same float32 bits there; on another kind float32 (and
float64) sums round differently in the last bits, while counts, verdicts and rounded tables
stay the same. :func:`cpu_kind` names the kind (what decides the kernels);
:func:`cpu_model` names the processor for a reader.

Examples
--------
>>> from topofl._utils.cpu import cpu_kind
>>> arch, vendor, capability = cpu_kind().split()  # e.g. x86_64 AuthenticAMD AVX512
>>> import torch
>>> capability == torch.backends.cpu.get_cpu_capability()
True
"""

from __future__ import annotations

import functools
import platform
from pathlib import Path

import torch

__all__ = ["cpu_kind", "cpu_model", "cpu_vendor"]


@functools.lru_cache(maxsize=1)
def _cpuinfo() -> dict[str, str]:
    """The first processor's fields of ``/proc/cpuinfo`` (empty off Linux)."""
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return {}
    out: dict[str, str] = {}
    for line in text.splitlines():
        if not line.strip():
            if out:
                break
            continue
        key, _, value = line.partition(":")
        out.setdefault(key.strip(), value.strip())
    return out


def cpu_vendor() -> str:
    """The processor's vendor string (``GenuineIntel``, ``AuthenticAMD`` ...), or the machine
    architecture where the system does not tell it."""
    info = _cpuinfo()
    return info.get("vendor_id") or info.get("CPU implementer") or platform.machine() or "unknown"


def cpu_kind() -> str:
    """``"<architecture> <vendor> <torch CPU capability>"``: what decides which kernels torch
    runs, e.g. ``"x86_64 AuthenticAMD AVX512"``.

    Two machines of the same kind give the same float32 bits for the same seed, torch version
    and thread count; the capability is read at each call, so ``ATEN_CPU_CAPABILITY`` set
    before torch starts shows.
    """
    arch = platform.machine() or "unknown"
    return f"{arch} {cpu_vendor()} {torch.backends.cpu.get_cpu_capability()}"


def cpu_model() -> str:
    """The processor's model name for a reader (``"AMD EPYC"``; informative, not a kind)."""
    info = _cpuinfo()
    return info.get("model name") or platform.processor() or "unknown"
