"""Resuming a run: the entries a round-loop checkpoint holds, and the checks that it belongs
to this run before its state is loaded (every placement: one process, or one rank's rows)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from torch import Tensor

from topofl.engine.config import RunConfig, config_diff
from topofl.engine.state import State, tensor_names_problem
from topofl.exceptions import CheckpointError

__all__ = ["Resumed", "resume_from", "checkpoint_meta"]


@dataclass
class Resumed:
    """Where a run starts: round 0 with nothing counted, or a checkpoint's round and counters.

    Attributes
    ----------
    round, messages : int
    wall : float
        Seconds the run had taken before.
    train_loss : list
        ``[sum, count]`` of the mean training losses since the last evaluation.
    loss_ref : float or None
        The first local step's mean loss (:class:`Divergence`), once known.
    evaluated : list of int or None
        The rounds the checkpoint's run evaluated (the records file must hold their rows).
    ledger, clock : dict or None
        The bytes ledger's and the virtual clock's state at the checkpoint
        (:meth:`topofl.engine.ledger.Ledger.state`, :meth:`topofl.engine.clock.Clock.state`),
        when the run kept them.
    client_blocks : int or None
        The per-client blocks the run's recorder held at the checkpoint (its client file must
        hold them; ``None``: a checkpoint written before it was stored).
    """

    round: int = 0
    messages: int = 0
    wall: float = 0.0
    train_loss: list[Any] = field(default_factory=lambda: [0.0, 0])
    loss_ref: float | None = None
    evaluated: list[int] | None = None
    ledger: dict[str, Any] | None = None
    clock: dict[str, Any] | None = None
    client_blocks: int | None = None


def resume_from(ck: Mapping[str, Any], path: Any, desc: Mapping[str, Any], state: State,
                config: RunConfig) -> Resumed:
    """Check a loaded checkpoint against this run (its run hash and result-affecting fields,
    :data:`~topofl.engine.config.RESUME_FREE` aside, its round, counters and state tensors),
    load its state tensors into ``state``, and return its round and counters.

    ``ck``'s state holds the rows of this process's clients (all of them in one process).

    Raises
    ------
    CheckpointError
        When the checkpoint does not belong to this run; the message names the differing
        fields (``expected`` the checkpoint's value, ``found`` this run's).
    """
    evaluated = _check_checkpoint(ck, path, desc, state, config)
    state.load_tensors(state.upgrade(ck["state"]))
    ref = ck.get("loss_ref")
    return Resumed(int(ck["round"]), int(ck["messages"]), float(ck["wall"]),
                   [float(ck["train_loss_sum"]), int(ck["train_loss_count"])],
                   None if ref is None else float(ref), evaluated,
                   ck.get("ledger"), ck.get("clock"), _client_blocks(ck, path))


def _client_blocks(ck: Mapping[str, Any], path: Any) -> int | None:
    """The checkpoint's ``client_blocks`` (``None`` when it has none), or raise."""
    k = ck.get("client_blocks")
    if k is None:
        return None
    if isinstance(k, bool) or not isinstance(k, int) or k < 0:
        raise CheckpointError(f"checkpoint {path}: client_blocks must be a count (an int >= "
                              f"0), found {k!r}: not written by topofl's round loop")
    return k


def checkpoint_meta(round_: int, messages: int, wall: float, train_loss: list[Any],
                    loss_ref: float | None, desc: Mapping[str, Any], *,
                    ledger: Mapping[str, Any] | None = None,
                    clock: Mapping[str, Any] | None = None,
                    client_blocks: int | None = None) -> dict[str, Any]:
    """A round-loop checkpoint's entries besides ``state`` (what :func:`resume_from` reads)."""
    out = {
        "round": round_,
        "messages": messages,
        "wall": wall,
        "train_loss_sum": train_loss[0],
        "train_loss_count": train_loss[1],
        "loss_ref": loss_ref,
        "config": dict(desc),
        "run_hash": desc["run_hash"],
    }
    if ledger is not None:
        out["ledger"] = dict(ledger)
    if clock is not None:
        out["clock"] = dict(clock)
    if client_blocks is not None:
        out["client_blocks"] = int(client_blocks)
    return out


_CHECKPOINT_KEYS: dict[str, tuple[type, ...]] = {
    "round": (int,), "state": (dict,), "messages": (int,), "wall": (int, float),
    "train_loss_sum": (int, float), "train_loss_count": (int,), "config": (dict,),
    "run_hash": (str,),
}


def _check_checkpoint(ck: Mapping[str, Any], path: Any, desc: Mapping[str, Any], state: State,
                      config: RunConfig) -> list[int]:
    """Check a loaded checkpoint against this run, or raise :class:`CheckpointError`.

    Returns the rounds before the checkpoint's round that its run evaluated (whose rows the
    records file must hold).
    """
    where = f"checkpoint {path}"
    missing = sorted(set(_CHECKPOINT_KEYS) - set(ck))
    if missing:
        raise CheckpointError(
            f"{where} misses the entries {missing} (a round-loop checkpoint has "
            f"{sorted(_CHECKPOINT_KEYS)}): not written by topofl's round loop")
    for key, types in _CHECKPOINT_KEYS.items():
        v = ck[key]
        if isinstance(v, bool) or not isinstance(v, types):
            raise CheckpointError(
                f"{where}: {key!r} must be {' or '.join(t.__name__ for t in types)}, found "
                f"{type(v).__name__} {v!r:.60}")
    ref = ck.get("loss_ref")
    if ref is not None and (isinstance(ref, bool) or not isinstance(ref, (int, float))
                            or not np.isfinite(ref)):
        raise CheckpointError(f"{where}: 'loss_ref' must be a finite float or None, found "
                              f"{ref!r:.60}")
    if ck["run_hash"] != desc["run_hash"]:
        diff = config_diff(ck["config"], desc)
        what = "; ".join(diff) if diff else (
            f"run hash {ck['run_hash']}, this run's is {desc['run_hash']}")
        raise CheckpointError(
            f"{where} was written by a run with other settings (expected: the checkpoint's, "
            f"found: this run's): {what}; resume with the checkpoint's settings, or start a "
            "new run (only rounds, records_path, checkpoint_path, checkpoint_every, "
            "stream_rows, progress and divergence may change)")
    k, run = ck["round"], ck["config"].get("run")
    old_rounds = run.get("rounds") if isinstance(run, dict) else None
    if not 0 <= k <= config.rounds:
        raise CheckpointError(
            f"{where} is at round {k}, expected 0 <= round <= rounds={config.rounds}"
            + (": rounds can be extended, not cut below the checkpoint" if k > 0 else ""))
    if isinstance(run, dict) and "records_path" in run and run["records_path"] is None \
            and config.records_path is not None and k > 0:
        raise CheckpointError(
            f"{where} belongs to a run that kept its records in memory (records_path=None): "
            f"a records file {config.records_path} would miss its rounds 0..{k - 1}; resume "
            "with records_path=None, or start the run anew to record every round")
    for key in ("messages", "train_loss_count"):
        if ck[key] < 0:
            raise CheckpointError(f"{where}: {key!r} must be >= 0, found {ck[key]}")
    for key in ("ledger", "clock"):
        if key in ck and not isinstance(ck[key], dict):
            raise CheckpointError(f"{where}: {key!r} must be a dict, found "
                                  f"{type(ck[key]).__name__}")
    mine, theirs = state.tensors(), state.upgrade(ck["state"])
    problem = tensor_names_problem(mine, theirs)
    if problem:
        raise CheckpointError(f"{where} does not hold this algorithm's state: it {problem}")
    for name, v in mine.items():
        w = theirs[name]
        if not isinstance(w, Tensor) or w.shape != v.shape or w.dtype != v.dtype:
            found = (f"{tuple(w.shape)} {w.dtype}" if isinstance(w, Tensor)
                     else type(w).__name__)
            raise CheckpointError(f"{where}: state tensor {name!r} is {found}, expected "
                                  f"{tuple(v.shape)} {v.dtype}")
    ee = config.interval  # the same as the checkpoint's: it is in the run hash
    evaluated = set(range(ee - 1, k, ee))
    if isinstance(old_rounds, int) and 0 < old_rounds <= k:
        evaluated.add(old_rounds - 1)  # the last round of the run that wrote it
    return sorted(evaluated)
