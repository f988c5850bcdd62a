"""Checkpoints: the round, the algorithm's state and the running counters, written atomically."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import torch

__all__ = ["save_checkpoint", "load_checkpoint"]


def save_checkpoint(path: str | os.PathLike[str], payload: dict[str, Any]) -> None:
    """``torch.save`` to a temporary file, then rename it over ``path`` (never half-written)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    torch.save(payload, tmp)
    os.replace(tmp, path)


def load_checkpoint(path: str | os.PathLike[str], device: torch.device) -> dict[str, Any]:
    """A checkpoint written by :func:`save_checkpoint`, tensors on ``device``."""
    ck: dict[str, Any] = torch.load(path, map_location=device, weights_only=True)
    return ck
