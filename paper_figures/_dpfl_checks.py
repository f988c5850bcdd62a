"""The convergence reading shared by the DPFL results' checks.

A comparison of final accuracies is decided only on curves that flattened
(:func:`topofl.figures.convergence`, tolerance: the result's accuracy margin), and a comparison
of the variance between the clients' accuracies only on curves of that variance that flattened
(its value at each evaluation, tolerance: the result's variance margin, in %²). The paper's
tables report the accuracy after its ``T`` rounds, but reaching the paper's rounds is not
reaching its horizon: the stand-ins keep the paper's local epochs and batch on far fewer
samples a client (e.g. ~200 MNIST-1D signals where CIFAR-10 gives 500 images), so a round does
about 2.5 times fewer local steps than the paper's, and the paper's ``T`` rounds are not its
local work. A check on curves still moving at the paper's rounds is therefore inconclusive (not
converged), not decided at that horizon (issue 42, item 3)."""

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
    with the margin ``kind`` of result ``name``), as the keyword argument of a check: no horizon
    exempts it (see the module; ``configs`` and ``total`` say whether the runs reached the
    paper's rounds, which the notes report).

    ``kind="variance"`` reads the curve a variance check tests: the variance between the
    clients' per-client ``metric`` at each evaluation, in %², against the variance margin (in
    %²; ``topofl.figures.convergence(..., of="variance")``). Any other ``kind`` is an accuracy
    margin, and the curves read are the mean ``metric``'s (in accuracy units).

    >>> from topofl.records import Records
    >>> rows = [{"run": "s0", "round": t, "client": k, "metric": "test_acc",
    ...          "value": 0.8 + (0.01 * t if k else -0.01 * t)}
    ...         for t in range(8) for k in (0, 1)]
    >>> rec = Records(rows=rows, configs={"s0": {"seed": 0}})
    >>> c = reading("dpfl_fig5", {"A": rec}, [], 100, kind="variance")["converged"]
    >>> c.of, c.tolerance, c.flat  # (t points)² at round t: 25, 36, 49 over rounds 6-8
    ('variance', 5.0, False)
    """
    del configs, total  # reaching the paper's rounds does not exempt a check (module doc)
    of = "variance" if kind == "variance" else None
    return {"converged": figures.convergence(cells, metric, tolerance=figures.margin(name, kind),
                                             of=of)}


def convergence_note(readings: Mapping[str, figures.Convergence]) -> str:
    """One note: each compared set of curves flat or not over the last quarter of the rounds
    (the checks' own readings, so the note and the verdicts agree). The readings may mix
    accuracy curves (read with the accuracy margin, in points) and curves of the variance
    between clients (``of == "variance"``: read with the variance margin, in %²); the note
    then says so, and each reading's description names its curve and units.

    >>> over = lambda v: figures.OverSeeds((v,), (0,))
    >>> acc = figures.Convergence((("A", over(0.002)),), (6, 8), 0.01)
    >>> var = figures.Convergence((("A", over(7.5)),), (6, 8), 5.0, "variance")
    >>> print(convergence_note({"A vs B": acc}))
    Convergence: every compared curve moved by less than the accuracy margin over the last
    quarter of its rounds (A vs B: flat (rounds 6-8: every curve moved by less than 1; largest
    A +0.20 ± 0.00)).
    >>> print(convergence_note({"A vs B": acc, "A vs C, variance": var}))
    Convergence: not every compared curve flattened, so those checks are inconclusive (not
    converged; the stand-in does fewer local steps a round than the paper, so its rounds are
    not the paper's horizon; accuracy curves are read with the accuracy margin, in points,
    variance curves (the variance between the clients' accuracies at each evaluation) with the
    variance margin, in %²): A vs C, variance: not converged (rounds 6-8: A (variance) still
    moved by 5 %² or more; largest A +7.50 ± 0.00 %²) (flat: A vs B).
    """
    flat = [k for k, c in readings.items() if c.flat]
    rising = {k: c for k, c in readings.items() if not c.flat}
    mixed = any(c.of == "variance" for c in readings.values())
    units = ("accuracy curves are read with the accuracy margin, in points, variance curves "
             "(the variance between the clients' accuracies at each evaluation) with the "
             "variance margin, in %²")
    if not rising:
        return ("Convergence: every compared curve moved by less than "
                + (f"its check's margin ({units})" if mixed else "the accuracy margin")
                + " over the last quarter of its rounds (" + "; ".join(
                    f"{k}: {c.describe()}" for k, c in readings.items()) + ").")
    return ("Convergence: not every compared curve flattened, so those checks are "
            "inconclusive (not converged; the stand-in does fewer local steps a round than the "
            "paper, so its rounds are not the paper's horizon" + (f"; {units}" if mixed else "")
            + "): " + "; ".join(f"{k}: {c.describe()}" for k, c in rising.items())
            + (f" (flat: {', '.join(flat)})" if flat else "") + ".")
