"""Where a run comes from: its provenance (:func:`provenance`: versions, the numeric
environment of :mod:`topofl._utils.environment`, git commit, command line, start time).

What a run was called with, its resolved call and the keywords the registries accept, is the
call's schema, :mod:`topofl.workflow.schema` (its names are importable from here too, as
before).

Examples
--------
>>> from topofl.workflow.provenance import provenance
>>> sorted(provenance())[:3]
['command', 'cpu', 'cpu_model']
"""
from __future__ import annotations

import contextvars
import datetime
import functools
import os
import subprocess
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import torch

from topofl._utils.cpu import cpu_kind, cpu_model
from topofl._utils.environment import BIT_FIELDS, numeric_environment
from topofl._version import __version__
from topofl.workflow.schema import (  # the call's schema, importable from here as before
    NOT_RECORDED,
    describe_run,
    hparam_signature,
    model_signature,
    partition_signature,
    plain,
    replaced_entries,
)

__all__ = ["describe_run", "replaced_entries", "provenance", "numeric_environment", "BIT_FIELDS",
           "command_line", "launched_command",
           "plain", "hparam_signature", "partition_signature", "model_signature", "NOT_RECORDED"]


_COMMAND: contextvars.ContextVar[str | None] = contextvars.ContextVar("topofl_command",
                                                                     default=None)


@functools.lru_cache(maxsize=1)
def _git_commit() -> str | None:
    """The commit of the checkout topofl is imported from, if it is one (else ``None``)."""
    here = Path(__file__).resolve().parent
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=here, capture_output=True,
                             text=True, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    commit = out.stdout.strip()
    return commit if out.returncode == 0 and len(commit) == 40 else None


def provenance() -> dict[str, Any]:
    """Where a run comes from: topofl and torch versions, thread count, CPU kind, the numeric
    environment, git commit, command line, start time.

    ``torch_threads`` is torch's intra-op thread count, ``cpu`` the CPU kind
    (:func:`topofl._utils.cpu.cpu_kind`: architecture, vendor and the instruction set torch's
    kernels dispatch to; ``cpu_model`` names the processor) and ``environment`` the whole numeric
    environment (:func:`topofl._utils.environment.numeric_environment`: torch's build, BLAS and
    MKL path, numpy, scipy and networkx releases and their BLAS core types, Python, the
    processor's family and model): float sums may round differently with another count or in
    another environment, so a bitwise replay needs the same thread count and the same
    environment in every field of :data:`topofl._utils.environment.BIT_FIELDS` (elsewhere: the same
    counts and verdicts, float values within rounding).
    ``command`` is the
    ``topofl ...`` command line when the run was started by the command line (``None`` from
    Python; under ``torchrun`` the ``torchrun ... -m topofl ...`` line,
    :func:`launched_command`); ``started`` is the UTC start time in ISO 8601. A run on a
    CUDA device adds ``accelerator`` (:func:`topofl._utils.environment.accelerator`: the
    GPU's name and compute capability, torch's CUDA and cuDNN versions, TF32), which decides
    its bits there as well.
    """
    return {
        "topofl": str(__version__),
        "torch": str(torch.__version__),
        "torch_threads": torch.get_num_threads(),
        "cpu": cpu_kind(),
        "cpu_model": cpu_model(),
        "environment": numeric_environment(),
        "git_commit": _git_commit(),
        "command": launched_command(_COMMAND.get()),
        "started": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    }


def launched_command(command: str | None,
                     environ: Mapping[str, str] | None = None) -> str | None:
    """``command`` as it was launched: under ``torchrun`` (its ``TORCHELASTIC_RUN_ID`` in the
    environment) the ``torchrun`` line that starts it on every rank, rebuilt from the
    environment torchrun sets (``--nnodes`` from ``WORLD_SIZE / LOCAL_WORLD_SIZE``,
    ``--nproc-per-node`` from ``LOCAL_WORLD_SIZE``); else ``command`` itself.

    Examples
    --------
    >>> from topofl.workflow.provenance import launched_command
    >>> env = {"TORCHELASTIC_RUN_ID": "none", "WORLD_SIZE": "4", "LOCAL_WORLD_SIZE": "2"}
    >>> launched_command("topofl run run.toml", env)
    'torchrun --nnodes 2 --nproc-per-node 2 -m topofl run run.toml'
    >>> launched_command("topofl run run.toml", {})
    'topofl run run.toml'
    """
    env = os.environ if environ is None else environ
    if command is None or "TORCHELASTIC_RUN_ID" not in env:
        return command
    try:
        world = int(env.get("WORLD_SIZE", "1"))
        local = int(env.get("LOCAL_WORLD_SIZE", str(world)))
    except ValueError:
        return f"torchrun -m {command}"
    nodes = max(1, world // max(1, local))
    return f"torchrun --nnodes {nodes} --nproc-per-node {local} -m {command}"


@contextmanager
def command_line(command: str | None) -> Iterator[None]:
    """Within this block, runs record ``command`` as their provenance's command line."""
    token = _COMMAND.set(command)
    try:
        yield
    finally:
        _COMMAND.reset(token)
