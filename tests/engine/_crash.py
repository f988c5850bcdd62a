"""A simulated crash for resume tests: data that raises when a given round is sampled."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any


class Crash(Exception):
    """Raised by :class:`CrashingData` in round ``at``."""


class CrashingData:
    """Wraps FederatedData and raises :class:`Crash` when round ``at`` is sampled."""

    def __init__(self, data: Any, at: int) -> None:
        self._d, self._at = data, at

    def __getattr__(self, name: str) -> Any:
        return getattr(self._d, name)

    def to(self, device: Any) -> CrashingData:
        return self

    def sample(self, round: int, step: int, batch_size: int, **kw: Any) -> Any:
        if round == self._at:
            raise Crash(f"simulated crash in round {round}")
        return self._d.sample(round, step, batch_size, **kw)


def crash_then_resume(run: Callable[..., Any], data: Any, folder: Path, rounds: int = 8,
                      at: int = 6, every: int = 4) -> tuple[Any, Any]:
    """``(full, resumed)``: ``run(data, rounds, **kw)`` uninterrupted, then crashed in round
    ``at`` with a checkpoint every ``every`` rounds and resumed from it (records and checkpoint
    under ``folder``); every state tensor of the two is asserted bit-equal."""
    import pytest
    import torch

    full = run(data, rounds)
    ck = dict(checkpoint_every=every, checkpoint_path=str(folder / "ck.pt"),
              records_path=str(folder / "r.jsonl"))
    with pytest.raises(Crash):
        run(data, rounds, run_data=CrashingData(data, at=at), **ck)
    resumed = run(data, rounds, resume=folder / "ck.pt", **ck)
    for k, v in full.state.tensors().items():
        assert torch.equal(v, resumed.state.tensors()[k]), k
    return full, resumed
