"""A round's file writes: every lane's records to the disk, then its checkpoints.

The round loop (:mod:`topofl.engine.loop`) hands each round's end to :class:`Writes`: in
order before the next round (a run alone, whose sharded checkpoint may be a collective), or in
background threads while the next round computes (a stack in one process), one round in flight.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from topofl.engine.lane import Lane
from topofl.engine.resume import checkpoint_meta
from topofl.engine.state import State, record_replace, record_tensors

__all__ = ["Writes", "wait_all", "lane_writes", "own_rows"]


class Writes:
    """A round's file writes of every lane: its records to the disk, then (every
    ``checkpoint_every`` rounds) its checkpoint.

    In order before the next round (``background=False``: a run alone, whose sharded
    checkpoint may be a collective), or side by side in background threads while the next
    round computes (a stack in one process): a lane's records reach the disk before its
    checkpoint of the round is written, and a round's writes end before the next round's
    begin (one round in flight; an error is raised there, or at the end)."""

    def __init__(self, lanes: Sequence[Lane], background: bool) -> None:
        self.lanes = list(lanes)
        self.io = (ThreadPoolExecutor(max_workers=min(len(lanes), 8),
                                      thread_name_prefix="topofl-writes")
                   if background else None)
        self.pending: list[Future[None]] = []

    def round_end(self, state: State, t: int, t_start: float) -> None:
        """Round ``t``'s writes (started, or done without background threads) of every lane's
        rows of ``state`` (the loop's).

        Every round's rows are handed to the operating system (a process that dies keeps
        them); they are waited onto the disk (``fsync``) before a checkpoint that follows
        them is written, and at the end (:meth:`finish`), not every round: an fsync a round
        was 5 % of a 20-client round (0.26 of 5.5 ms, ``analysis/bench_teleport.md``)."""
        for ln in self.lanes:
            ln.recorder.flush(sync=self.io is None and _checkpoint_due(ln, t))
        if self.io is not None:
            wait_all(self.pending)
            self.pending = []
        for ln in self.lanes:
            cfg = ln.config
            save = None
            if _checkpoint_due(ln, t):
                rows = state if self.io is None else own_rows(state, ln.rows)
                save = (str(cfg.checkpoint_path), rows, checkpoint_meta(
                    t + 1, ln.messages, ln.start.wall + time.perf_counter() - t_start,
                    ln.train_loss, ln.guard.loss_ref, ln.desc,
                    ledger=None if ln.costs.ledger is None else ln.costs.ledger.state(),
                    clock=None if ln.costs.clock is None else ln.costs.clock.state(),
                    client_blocks=ln.recorder.client_blocks))
            if self.io is not None:
                self.pending.append(self.io.submit(lane_writes, ln, save))
            elif save is not None:
                ln.site.checkpointer.save(*save)

    def finish(self, *, quiet: bool, close: bool) -> None:
        """Every lane's records to the disk (after the writes under way), then closed with
        ``close``; ``quiet``: an error of these writes is not raised (the loop stops on
        another)."""
        try:
            if self.io is None:
                for ln in self.lanes:
                    ln.recorder.flush()
            else:
                for ln in self.lanes:
                    ln.recorder.flush(sync=False)
                wait_all(self.pending)
                wait_all([self.io.submit(ln.recorder.sync) for ln in self.lanes])
        except Exception:
            if not quiet:
                raise
        finally:
            if self.io is not None:
                self.io.shutdown(wait=True)
            if close:
                for ln in self.lanes:
                    ln.recorder.close()


def _checkpoint_due(ln: Lane, t: int) -> bool:
    every = ln.config.checkpoint_every
    return bool(every) and (t + 1) % every == 0


def wait_all(jobs: Sequence[Future[None]]) -> None:
    """Wait for every one of ``jobs``; then raise the first one's error (in their order)."""
    errors = [f.exception() for f in jobs]
    for e in errors:
        if e is not None:
            raise e


def lane_writes(ln: Lane, save: tuple[str, State, dict[str, Any]] | None) -> None:
    """A lane's file writes of a round: its records (flushed) waited onto the disk, then its
    checkpoint, when the round writes one (else nothing: :meth:`Writes.round_end`)."""
    if save is not None:
        ln.recorder.sync()
        ln.site.checkpointer.save(*save)


def own_rows(state: State, rows: slice) -> State:
    """A copy of the state of the clients ``rows`` (a lane's checkpoint holds those rows)."""
    part = state.rows(rows)
    own = part.own
    if own is not None:
        own = record_replace(own, {k: v.clone() for k, v in record_tensors(own).items()})
    return State(x=part.x.clone(),
                 momentum=None if part.momentum is None else part.momentum.clone(),
                 weight=None if part.weight is None else part.weight.clone(), own=own,
                 trained=None if part.trained is None else part.trained.clone())
