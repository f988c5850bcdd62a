"""One sweep run executed under its lock (in this process or a worker): fresh, or resumed
from its checkpoint; its :class:`Outcome` and its finished marker.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from topofl._utils.files import replace_text
from topofl._utils.processes import lock
from topofl.config import execute
from topofl.exceptions import ConvergenceError
from topofl.records import load
from topofl.sweep._resumption import _checkpoint_round, _paths

__all__ = ["Outcome"]


#: The honest nodes' statistics of a ``[byzantine]`` run: its summary line shows them.
_HONEST = ("honest_test_acc_mean", "honest_global_acc_mean")


@dataclass
class Outcome:
    """What happened to one run: ``status`` is ``"complete"``, ``"diverged"`` (a finished run
    whose training diverged), ``"skipped"`` (finished before), ``"busy"`` (another process was
    running it: left alone) or ``"failed"`` (an error; the run is retried by the next
    invocation)."""

    name: str
    status: str
    seconds: float = 0.0
    resumed_from: int | None = None
    summary: dict[str, Any] = field(default_factory=dict)
    message: str = ""

    def line(self) -> str:
        """One line for the console: the final and best mean accuracies (of the honest
        nodes only, named ``honest_*``, for a ``[byzantine]`` run)."""
        parts = [self.name, self.status]
        if self.resumed_from is not None:
            parts[-1] += f" (resumed at round {self.resumed_from})"
        honest = [k for k in _HONEST if k in self.summary]
        for k in honest or ("test_acc_mean", "global_acc_mean"):
            if k in self.summary:
                s = self.summary[k]
                parts.append(f"{k} final {s['final']:.4f} best {s['best']:.4f}")
        if self.status in ("complete", "diverged", "failed") and self.seconds:
            parts.append(f"{self.seconds:.1f} s")
        if self.message:
            parts.append(self.message)
        return "  ".join(parts)


def _summary(records: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for metric in ("test_acc_mean", "global_acc_mean", "train_loss", *_HONEST):
        if metric in records.metrics:
            _, v = records.series(metric)
            if v.size:
                finite = v[v == v]
                out[metric] = {"final": float(v[-1]),
                               "best": float(finite.max()) if finite.size else float("nan")}
    return out


def _write_json(path: Path, obj: Any) -> None:
    replace_text(path, [json.dumps(obj) + "\n"])


def _execute(cfg: dict[str, Any], name: str, mode: str, out: str,
             command: str | None) -> Outcome:
    """Run one sweep run (in this process or a worker) under its lock and mark it done."""
    with lock(Path(out) / f"{name}.lock") as mine:
        if not mine:
            return Outcome(name, "busy", message=f"another process is running it (it holds "
                           f"{Path(out) / (name + '.lock')}): left alone; run the sweep "
                           "again once that process has finished")
        records, ckpt, done = _paths(Path(out), name)
        if mode != "overwrite":  # what the files hold now: another sweep may have run it
            if done.exists():
                try:
                    marker = json.loads(done.read_text(encoding="utf-8"))
                    return Outcome(name, "skipped", summary=marker.get("summary", {}),
                                   message=f"({marker.get('status', 'complete')} before)")
                except (OSError, json.JSONDecodeError):
                    pass
            mode = "resume" if ckpt.exists() and records.exists() else "fresh"
        return _execute_locked(cfg, name, mode, out, command)


def _execute_locked(cfg: dict[str, Any], name: str, mode: str, out: str,
                    command: str | None) -> Outcome:

    records, ckpt, done = _paths(Path(out), name)
    t0 = time.perf_counter()
    resumed_from = None
    try:
        if mode == "resume":
            resumed_from = _checkpoint_round(ckpt)
            res = execute(cfg, resume=ckpt, command=command)
        else:
            for stale in (ckpt, done):
                stale.unlink(missing_ok=True)
            res = execute(cfg, overwrite=True, command=command)
        summary, status, message = _summary(res.records), "complete", ""
    except ConvergenceError as exc:
        summary = _summary(load(records)) if records.exists() else {}
        status, message = "diverged", str(exc)
    except Exception as exc:  # noqa: BLE001 - reported, and retried by the next invocation
        return Outcome(name, "failed", time.perf_counter() - t0, resumed_from,
                       message=f"{type(exc).__name__}: {exc}")
    outcome = Outcome(name, status, time.perf_counter() - t0, resumed_from, summary, message)
    _write_json(done, {"status": status, "summary": summary, "message": message})
    return outcome
