"""DPFL Table 3: period P of refreshing the collaborators C_k (GGC every P rounds).

CIFAR-10 (or its offline stand-in), 100 clients, Dir(0.1), P = 1, 5, 10, 20 against the
budgets B_c = inf, 0.2N, 0.1N, 0.05N, from seed 42 as in the paper (and the seeds after it):
the clients' average test accuracy of their best-validation models.

    python paper_figures/fig_dpfl_table3.py [--quick | --full] [--update-results]
"""

from __future__ import annotations

import dataclasses

import _dpfl_budgets  # beside this script

from topofl import figures

# the paper's Table 3 (B_c = inf, 20, 10, 5 with N = 100), seed 42 (%)
PAPER = {1: (84.20, 83.67, 84.20, 84.33), 5: (83.83, 84.01, 83.31, 83.73),
         10: (83.24, 84.17, 83.31, 83.03), 20: (82.34, 82.59, 82.08, 82.73)}
ROBUST = 2.0  # "maintains good performance": the P rows' averages within 2 points


PAPER_ROUNDS = 98  # Appendix F.3.3: T = 100 rounds, 2 of them the pre-processing


def refreshes(rounds: int, period: int) -> int:
    """How many of rounds 0 .. rounds - 1 run GGC with period P (the rounds t with t mod P = 0).

    >>> [refreshes(18, p) for p in (1, 5, 10, 20)], [refreshes(98, p) for p in (1, 5, 10, 20)]
    ([18, 4, 2, 1], [98, 20, 10, 5])
    """
    return -(-rounds // period)


def work_notes(result: figures.Result) -> list[str]:
    """How many GGC refreshes each P had at this scale, against the paper's 98 rounds, and
    whether the seed-mean curves flattened (points gained over the last quarter of the rounds,
    flat: under 1 point)."""
    assert result.panels is not None
    panel = result.panels[""]
    rounds = sorted({int(c["rounds"]) for c in panel.configs.values()})
    periods = sorted({int(c["refresh_every"]) for c in panel.configs.values()})
    notes = [f"{', '.join(map(str, rounds))} of the paper's {PAPER_ROUNDS} rounds: GGC refreshed "
             "the collaborators in " + ", ".join(str(refreshes(rounds[-1], p)) for p in periods)
             + " rounds for P = " + ", ".join(map(str, periods)) + " (the paper's run: "
             + ", ".join(str(refreshes(PAPER_ROUNDS, p)) for p in periods) + ")."]
    gains, spans = {}, set()
    for label, rec in panel.runs.items():
        gains[label], *span_ = figures.late_gain(rec, "test_acc_mean")
        spans.add(tuple(span_))
    rising = sorted(label for label, g in gains.items() if round(g, 1) >= 1)
    span = ", ".join(f"rounds {a} to {b}" for a, b in sorted(spans))
    verdict = ("flat (under 1 point) in every cell" if not rising else
               "not flat in any cell" if len(rising) == len(gains) else
               f"not flat in {len(rising)} ({'; '.join(rising)}), flat in the others")
    notes.append(f"The seed-mean accuracy of the {len(gains)} cells gained "
                 f"{min(gains.values()):+.1f} to {max(gains.values()):+.1f} points from the last "
                 f"evaluation before the last quarter of the rounds to the end ({span}): "
                 f"{verdict}.")
    return notes


@figures.script
def main(args: figures.FigureArgs) -> figures.Result:
    result = _dpfl_budgets.build(args, "dpfl_table3", "refresh_every", "P", PAPER,
                                 tolerance=ROBUST, best="first")
    return dataclasses.replace(result, notes=[*result.notes, *work_notes(result)])


if __name__ == "__main__":
    raise SystemExit(main())
