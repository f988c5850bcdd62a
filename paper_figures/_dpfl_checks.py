"""The convergence reading and the horizon shared by the DPFL results' checks.

A comparison of final accuracies is decided only on curves that flattened
(:func:`topofl.figures.convergence`, tolerance: the result's accuracy margin), unless the runs
reached the paper's own rounds: the paper's tables report the accuracy after its ``T`` rounds
(DPFL counts its pre-processing as 2 of them), so a check there is read at that horizon (the
convergence reading is still recorded beside it)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from topofl import figures


def paper_rounds_reached(configs: Iterable[Mapping[str, Any]], total: int) -> bool:
    """Whether every run reached the paper's ``total`` rounds (a DPFL run's pre-processing
    counts as 2 of them, Appendix F.3.3).

    >>> paper_rounds_reached([{"algorithm": "dpfl", "rounds": 98},
    ...                       {"algorithm": "local", "rounds": 100}], 100)
    True
    >>> paper_rounds_reached([{"algorithm": "dpfl", "rounds": 58}], 100)
    False
    """
    return all(int(c["rounds"]) + (2 if c.get("algorithm") == "dpfl" else 0) >= total
               for c in configs)


def reading(name: str, cells: Mapping[str, Any], configs: Iterable[Mapping[str, Any]],
            total: int, metric: str = "test_acc", kind: str = "accuracy") -> dict[str, Any]:
    """``converged=`` (the compared curves ``cells``, label -> Records over the seeds, read
    with the margin ``kind`` of result ``name``, in accuracy units) and ``horizon=`` (only when
    every run in ``configs`` reached the paper's ``total`` rounds), as keyword arguments of a
    check."""
    conv = figures.convergence(cells, metric, tolerance=figures.margin(name, kind))
    horizon = (f"the paper's own {total} rounds (DPFL: {total - 2} after its 2 of "
               "pre-processing)" if paper_rounds_reached(configs, total) else None)
    return {"converged": conv, "horizon": horizon}


def convergence_note(readings: Mapping[str, figures.Convergence]) -> str:
    """One note: each compared set of curves flat or not over the last quarter of the rounds
    (the checks' own readings, so the note and the verdicts agree)."""
    flat = [k for k, c in readings.items() if c.flat]
    rising = {k: c for k, c in readings.items() if not c.flat}
    if not rising:
        return ("Convergence: every compared curve moved by less than the accuracy margin over "
                "the last quarter of its rounds (" + "; ".join(
                    f"{k}: {c.describe()}" for k, c in readings.items()) + ").")
    return ("Convergence: not every compared curve flattened, so those checks are "
            "inconclusive unless read at the paper's rounds: " + "; ".join(
                f"{k}: {c.describe()}" for k, c in rising.items())
            + (f" (flat: {', '.join(flat)})" if flat else "") + ".")
