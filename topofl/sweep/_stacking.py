"""The sweep's runs as units of work: the runs that share an algorithm and a model shape run as
one stacked pass (:mod:`topofl.engine.stack`), under the locks of all their runs; a run that
cannot stack, or a stack that cannot fit or stops, runs alone, and the sweep says why.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from topofl import api
from topofl._utils.processes import lock
from topofl.config import command_line, resolve
from topofl.engine.stack import Member, alone_reason, run_stacked, stack_key, stack_problem
from topofl.exceptions import InsufficientMemoryError
from topofl.sweep._execution import Outcome, _execute, _execute_locked, _summary, _write_json
from topofl.sweep._planning import SweepRun, _text
from topofl.sweep._resumption import _paths

__all__: list[str] = []

#: A run still to do: the run, its config for :func:`topofl.config.execute` and its mode
#: (``"fresh"``, ``"resume"`` or ``"overwrite"``).
_Item = tuple[SweepRun, dict[str, Any], str]


def _stack_group(rcfg: Mapping[str, Any]) -> tuple[Any, ...] | str:
    """The group of runs a run may stack with, or why it runs alone."""
    prepared = resolve(rcfg).prepared
    why = alone_reason(prepared.run, prepared.algorithm)
    key = stack_key(prepared.run, prepared.algorithm)
    if why is not None or key is None:
        return why or "it cannot stack"
    call = prepared.call
    if not all(isinstance(call[k], str) for k in ("data", "model")):
        return "its data or model is an object, not a name"
    return (key, call["data"], call["model"], _text(call.get("model_params") or {}),
            _text(call.get("partition_params") or {}))


def _stack_units(todo: Sequence[_Item], say: Callable[[str], None],
                 jobs: int = 1) -> list[list[_Item]]:
    """The sweep's runs as units of work: stacks of runs that share a group (in the sweep's
    order, at the first member's place) and runs alone; says why a run runs alone.

    With ``jobs`` workers, a group of more than ``ceil(runs / jobs)`` runs is cut into as
    many consecutive stacks as it needs of that size, of near-equal work (clients x rounds,
    :func:`_work`), so that one stack does not keep one worker busy while the others have
    nothing to run: 15 ring runs of 20, 80 and 320 clients cut by count into 8 and 7 runs held
    340 and 1,760 clients, and one of two workers waited 1,609 of 2,096 s."""
    cap = max(1, -(-len(todo) // jobs))
    units: list[list[_Item]] = []
    groups: dict[Any, list[_Item]] = {}
    alone: dict[str, list[str]] = {}
    for item in todo:
        run, rcfg, mode = item
        group: tuple[Any, ...] | str = ("resumes from its checkpoint" if mode == "resume"
                                        else _stack_group(rcfg))
        if isinstance(group, str):
            alone.setdefault(group, []).append(run.name)
            units.append([item])
        elif group in groups:
            groups[group].append(item)
        else:
            groups[group] = [item]
            units.append(groups[group])
    units = [part for unit in units
             for part in _cut(unit, cap, [_work(rcfg) for _, rcfg, _ in unit])]
    for why, names in alone.items():
        shown = ", ".join(names[:3]) + (", ..." if len(names) > 3 else "")
        say(f"not stacked ({len(names)} run{'s' if len(names) > 1 else ''}: {shown}): {why}")
    for unit in units:
        if len(unit) > 1:
            say(f"stacked: {len(unit)} runs as one pass ({unit[0][0].name}, ...)")
    return units


def _work(rcfg: Mapping[str, Any]) -> float:
    """A run's work as a stack counts it: clients x rounds (1 where either is not a number
    in its config, e.g. a data object)."""
    n, rounds = rcfg.get("n_clients", 100), rcfg.get("rounds", 100)
    ok = all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in (n, rounds))
    return float(n * rounds) if ok else 1.0


def _cut(unit: list[_Item], cap: int,
         work: Sequence[float] | None = None) -> list[list[_Item]]:
    """``unit`` as ``ceil(len(unit) / cap)`` consecutive parts of near-equal ``work`` (each
    run's; equal by default: then parts of near-equal size, none longer than ``cap``), each
    part at least one run: every cut where the work done so far comes nearest its share."""
    parts = -(-len(unit) // cap)
    w = [1.0] * len(unit) if work is None else [float(v) for v in work]
    done = [0.0]
    for v in w:
        done.append(done[-1] + v)
    bounds = [0]
    for i in range(1, parts):
        share = done[-1] * i / parts
        first, last = bounds[-1] + 1, len(unit) - (parts - i)
        bounds.append(min(range(first, last + 1), key=lambda b: abs(done[b] - share)))
    bounds.append(len(unit))
    return [unit[a:b] for a, b in zip(bounds, bounds[1:])]


def _execute_unit(unit: Sequence[_Item], out: str, command: str | None) -> list[Outcome]:
    """Run one unit of work: a run alone (:func:`_execute`), or a stack under the locks of its
    runs (a run another process holds, or that finished meanwhile, leaves the stack)."""
    if len(unit) == 1:
        run, rcfg, mode = unit[0]
        return [_execute(rcfg, run.name, mode, out, command)]
    from contextlib import ExitStack

    outcomes: list[Outcome] = []
    with ExitStack() as held:
        mine: list[tuple[dict[str, Any], str]] = []
        for run, rcfg, mode in unit:
            name = run.name
            if not held.enter_context(lock(Path(out) / f"{name}.lock")):
                outcomes.append(Outcome(name, "busy", message="another process is running it: "
                                        "left alone; run the sweep again once it has finished"))
                continue
            done = _paths(Path(out), name)[2]
            if mode != "overwrite" and done.exists():  # finished meanwhile by another process
                try:
                    marker = json.loads(done.read_text(encoding="utf-8"))
                    outcomes.append(Outcome(name, "skipped", summary=marker.get("summary", {}),
                                            message=f"({marker.get('status', 'complete')} "
                                            "before)"))
                    continue
                except (OSError, json.JSONDecodeError):
                    pass
            mine.append((rcfg, name))
        if len(mine) == 1:
            outcomes.append(_execute_locked(mine[0][0], mine[0][1], "fresh", out, command))
        elif mine:
            outcomes.extend(_execute_stack_locked(mine, out, command))
    return outcomes


def _stack_memory_problem(prepared: Sequence[Any], members: Sequence[Any]) -> str | None:
    """Why the runs cannot run stacked for memory (:func:`topofl.workflow.memory.check_stack`), else
    ``None``: they then run one by one."""
    from topofl.workflow import memory as plan  # the memory model

    try:
        plan.check_stack([plan.run_shapes(p, model=m.model, data=m.data,
                                          topology=m.topology if p.algorithm.uses_topology
                                          else None)
                          for p, m in zip(prepared, members)])
    except InsufficientMemoryError as exc:
        return str(exc)
    return None


def _execute_stack_locked(mine: Sequence[tuple[dict[str, Any], str]], out: str,
                          command: str | None) -> list[Outcome]:
    """Run the runs ``mine`` (their locks held) as one stacked pass. A run that cannot be
    built runs alone (and reports its error); when the others cannot stack, or the pass
    stops (a run diverges), each of them runs alone instead, from round 0, which gives each
    its own outcome."""
    outcomes: list[Outcome] = []
    built: list[tuple[dict[str, Any], str, Member]] = []
    prepared: list[Any] = []
    t0 = time.perf_counter()
    for rcfg, name in mine:
        _, ckpt, done = _paths(Path(out), name)
        try:
            with command_line(command):
                p = resolve(rcfg).prepared
                member = Member(*api.build(p, overwrite=True))
        except Exception:  # noqa: BLE001 - it runs alone, and reports its error there
            outcomes.append(_execute_locked(rcfg, name, "fresh", out, command))
            continue
        ckpt.unlink(missing_ok=True)
        done.unlink(missing_ok=True)
        built.append((rcfg, name, member))
        prepared.append(p)
    why = stack_problem([m for _, _, m in built]) if len(built) > 1 else "one run left"
    if why is None:  # each run fits alone (api.build checked it); together?
        why = _stack_memory_problem(prepared, [m for _, _, m in built])
    if why is None:
        try:
            results = run_stacked([m for _, _, m in built], placement=api.placement())
        except Exception as exc:  # noqa: BLE001 - each run then runs alone: its own outcome
            why = f"the stack stopped: {type(exc).__name__}: {exc}"
    if why is not None:
        for rcfg, name, _ in built:
            o = _execute_locked(rcfg, name, "fresh", out, command)
            if len(built) > 1:
                o.message = f"{o.message} (ran alone: {why})".strip()
            outcomes.append(o)
        return outcomes
    seconds = time.perf_counter() - t0
    summaries = [_summary(res.records) for res in results]
    # the runs' done markers side by side (each written and synced as a run alone writes it)
    with ThreadPoolExecutor(max_workers=min(len(built), 8)) as pool:
        list(pool.map(lambda item: _write_json(
            _paths(Path(out), item[0][1])[2],
            {"status": "complete", "summary": item[1], "message": "", "stacked": len(built)}),
            zip(built, summaries)))
    for (_, name, _), summary in zip(built, summaries):
        outcomes.append(Outcome(name, "complete", seconds, None, summary,
                                f"(stacked with {len(built) - 1} other runs)"))
    return outcomes
