"""The runs of DFedPGP's Table 1 grid (methods x data splits, ``configs/dfedpgp_table1.toml``)
and what its tables and figures read from them: each method's personalized test accuracy per
split over the seeds, whether a method is the best of a column (against the rows of the
paper's own table only), and the columns whose stand-in does not meet its calibration."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from topofl import figures
from topofl.figures import diverged as _diverged
from topofl.figures.config import FigureError

TABLE1 = "dfedpgp_table1"
PAPER_ROUNDS = [500]  # Section 5.1: "500 communication rounds"

# Table 1's columns, in the paper's order, and its rows (%): DFedAvgM-P is NOT a row of Table 1
# (it is Table 4's partial-personalization cell, run in the same grid so that Table 4 reads the
# same runs), so no Table 1 check compares DFedPGP with it.
COLUMNS = ["CIFAR-10 Dir-0.1", "CIFAR-10 Dir-0.3", "CIFAR-10 Pat-2", "CIFAR-10 Pat-5",
           "CIFAR-100 Dir-0.1", "CIFAR-100 Dir-0.3", "CIFAR-100 Pat-5", "CIFAR-100 Pat-10"]
PAPER = {  # Table 1, in the order of COLUMNS (%)
    "Local": (78.96, 63.20, 85.16, 68.56, 39.38, 22.59, 71.34, 53.15),
    "FedAvg": (84.17, 79.66, 85.04, 81.18, 57.43, 55.06, 69.05, 66.37),
    "FedPer": (88.57, 84.06, 90.94, 86.97, 54.23, 34.07, 78.48, 70.38),
    "FedRep": (88.78, 84.50, 91.09, 86.22, 44.02, 26.88, 78.77, 67.65),
    "FedBABU": (87.79, 83.26, 91.28, 83.90, 60.23, 52.37, 77.50, 69.81),
    "Ditto": (80.22, 73.51, 84.96, 75.59, 48.85, 48.65, 69.48, 60.77),
    "DFedAvgM": (86.94, 82.49, 90.23, 85.26, 58.80, 54.89, 75.89, 70.55),
    "OSGP": (87.39, 83.14, 90.72, 84.69, 59.76, 54.98, 76.70, 71.08),
    "Dis-PFL": (87.77, 82.71, 88.19, 84.18, 56.06, 46.65, 71.79, 65.35),
    "DFedPGP": (88.85, 85.61, 91.26, 87.12, 66.26, 57.66, 78.78, 72.19),
}
ROWS = list(PAPER)

# Columns whose offline stand-in does not meet the calibration's criterion (Local at least 5
# points below the label-masked pooled ceiling, analysis/standins.md): a comparison there has
# too little room to discriminate, so its checks are inconclusive (only on a stand-in).
UNCALIBRATED = {
    "CIFAR-10 Dir-0.1": (
        "its stand-in fails its calibration: the column runs the MLP on the default MNIST-1D "
        "signals (the calibrated 1-D CNN on noisier signals costs ~20x the CPU a round), on "
        "which Local is within ~1 point of the label-masked pooled ceiling (75.6 vs 76.8 %, "
        "3 seeds; the criterion is a gap of 5 points, analysis/standins.md)"),
    "CIFAR-100 Pat-5": (
        "its stand-in fails its calibration: on the 100-class mixture + MLP Local is 1.3 "
        "points below the label-masked pooled ceiling (88.6 vs 90.0 %, 3 seeds; the criterion "
        "is a gap of 5 points, analysis/standins.md)"),
}


def grid_panels(args: figures.FigureArgs, config: str = TABLE1, *,
                keep: Mapping[str, Sequence[str]] | None = None, share: str | None = None
                ) -> tuple[dict[str, Any], dict[str, figures.Panel]]:
    """The config and one panel per data split (column), one curve per method, of a grid
    config (``keep``: labels of each axis to run; ``share``: whose cached runs these are)."""
    cfg = figures.load_config(config, args.scale)
    cells = figures.grid(cfg, keep=keep)
    methods = list(dict.fromkeys(m for m, _ in cells))
    splits = list(dict.fromkeys(s for _, s in cells))
    found = figures.panels(args, {s: {m: cells[(m, s)] for m in methods} for s in splits},
                           share=share)
    return cfg, found


def kept(axis: str, wanted: Sequence[str], scale: str, config: str = TABLE1) -> list[str]:
    """The labels of ``wanted`` that the grid config runs at ``scale`` (its ``grid_keep``)."""
    keep = figures.load_config(config, scale).get("grid_keep", {})
    return [x for x in wanted if x in keep.get(axis, list(wanted))]


def accuracy(found: Mapping[str, figures.Panel], how: str = "final"
             ) -> dict[tuple[str, str], figures.OverSeeds]:
    """``(method, split) ->`` the mean personalized test accuracy over clients at the last
    round (``how="final"``) or the mean over the rounds (``"area"``), per seed."""
    stat = figures.final if how == "final" else figures.mean_over_rounds
    return {(m, s): stat(rec, "test_acc") for s, p in found.items() for m, rec in p.runs.items()}


def scored(found: Mapping[str, figures.Panel],
           stops: Mapping[str, Mapping[str, Sequence[_diverged.Stop]]], how: str = "final"
           ) -> dict[tuple[str, str], figures.OverSeeds]:
    """:func:`accuracy`, each seed whose run stopped on divergence scored 0 (never its last
    evaluation before the stop): the rule a result declared for a control that diverges
    (``claims.toml`` ``[dfedpgp_gate_fmnist]``). ``stops``: split -> method -> its runs that
    diverged (:func:`topofl.figures.diverged.by_curve` of the split's panel); a method with
    none reads as :func:`accuracy` reads it."""
    stat = figures.final if how == "final" else figures.mean_over_rounds

    def one_seed(gone: set[str], one: Any) -> float:  # ``one``: a single run's records
        return 0.0 if one.runs[0] in gone else stat(one, "test_acc").values[0]

    out = {}
    for s, p in found.items():
        for m, rec in p.runs.items():
            gone = {x.run for x in stops.get(s, {}).get(m, ())}
            out[(m, s)] = figures.per_seed(rec, functools.partial(one_seed, gone))
    return out


def best_trained(found: Mapping[str, figures.Panel],
                 acc: Mapping[tuple[str, str], figures.OverSeeds], split: str, claimed: str,
                 stops: Mapping[str, Sequence[_diverged.Stop]], *, margin: float,
                 tie: str = "inconclusive", what: str = "final accuracy",
                 headline: bool = False) -> tuple[figures.Check, str | None]:
    """:func:`best` with the rival read among the rows of the paper's table that did not
    diverge (``stops``: method -> its runs of ``split`` that diverged), and that rival (``None``
    when every other row diverged). Where ``claimed`` itself diverged in a seed the check is
    inconclusive, naming its seeds and rounds: the declared rule scores a diverged seed for
    the gate and reads the rival among the methods that did not diverge, but says nothing of
    the tested method diverging."""
    others = [m for m in ROWS if m != claimed and m not in stops and (m, split) in acc]
    rival = max(others, key=lambda m: acc[(m, split)].mean) if others else None
    name = f"{split}: {claimed} above the best other ({rival or 'none trained'}), {what}"
    if claimed in stops:
        why = (f"{claimed} diverged ({_diverged.describe(stops[claimed])}): the rule declared "
               "for a diverging method (claims.toml) scores its seeds for the gate and reads "
               "the rival among the methods that did not diverge, but does not say how the "
               "tested method's divergence decides the headline, so it is not decided")
        return figures.Check(name, "inconclusive", "diverged", "-", why, headline), rival
    if rival is None:
        why = (f"every other row of the paper's table diverged ({', '.join(sorted(stops))}): "
               "no rival among the methods that did not diverge")
        return figures.Check(name, "inconclusive", "no rival", "-", why, headline), None
    return best(found, acc, split, claimed, what, among=others, margin=margin, tie=tie,
                headline=headline)


def diverged_note(stops: Mapping[str, Sequence[_diverged.Stop]], panel: figures.Panel
                  ) -> list[str]:
    """The page's note naming each method of ``panel`` that diverged (``stops``), its seeds
    and the round each stopped at, and how the declared rule reads them (none: no note)."""
    if not stops:
        return []
    who = "; ".join(f"{m} in {len(x)} of its {len(panel.runs[m].runs)} seed(s): "
                    f"{_diverged.describe(x)}" for m, x in stops.items())
    return [f"Stopped on divergence (each run's sweep marker; the engine names the round): "
            f"{who}. By the rule declared before these runs (claims.toml), a diverged seed "
            "scores 0 for the gate (not its last evaluation before the stop), a control "
            "diverged in every seed stays in the gate ranked last (tied with any other), and "
            "the headline's rival is read among the methods that did not diverge."]


def rounds_run(found: Mapping[str, figures.Panel]) -> int:
    """The rounds the runs of ``found`` ran (the largest, should they differ)."""
    return max(int(c["rounds"]) for p in found.values() for c in p.configs.values())


def best(found: Mapping[str, figures.Panel], acc: Mapping[tuple[str, str], figures.OverSeeds],
         split: str, claimed: str, what: str = "final accuracy", *,
         among: Iterable[str] | None = None, margin: float, tie: str = "inconclusive",
         horizon: str | None = None, headline: bool = False, metric: str = "test_acc",
         where: str | None = None) -> tuple[figures.Check, str]:
    """The check that ``claimed`` beats the best other method of ``split`` (of ``among``, the
    rows of the paper's table: the other with the highest mean), and that method.

    Unless ``horizon`` says why the claim is read at this horizon, the check carries the
    convergence reading of the two compared curves (``claimed`` and the rival, ``metric``,
    the margin as tolerance). ``where`` prefixes the check's name (default: the split)."""
    pool = set(among) if among is not None else None
    others = [m for (m, s) in acc if s == split and m != claimed
              and (pool is None or m in pool)]
    rival = max(others, key=lambda m: acc[(m, split)].mean)
    where = f"{split}: " if where is None else where
    runs = found[split].runs
    converged = None if horizon is not None else figures.convergence(
        {claimed: runs[claimed], rival: runs[rival]}, metric, tolerance=margin)
    check = figures.above(f"{where}{claimed} above the best other ({rival}), {what}",
                          acc[(claimed, split)] - acc[(rival, split)], margin=margin, tie=tie,
                          converged=converged, horizon=horizon, headline=headline, fmt=".4f")
    return check, rival


def paper_tie(paper_gap: float, margin: float) -> str:
    """How a tie decides a check of the paper's "DFedPGP is best": where the paper's own lead
    is smaller than the margin its claim is "at least as good" (a tie passes), else "better"
    (a tie is inconclusive)."""
    return "pass" if paper_gap < 100 * margin else "inconclusive"


def uncalibrated(check: figures.Check, split: str, panel: figures.Panel) -> figures.Check:
    """``check`` made inconclusive when ``split`` ran on a stand-in that fails its
    calibration (:data:`UNCALIBRATED`), with what it would have been."""
    if split not in UNCALIBRATED or not panel.stand_in:
        return check
    why = UNCALIBRATED[split]
    was = f"; would be {check.outcome} ({check.reason})" if check.outcome != "inconclusive" \
        else f" ({check.reason})"
    return dataclasses.replace(check, outcome="inconclusive", reason=f"{why}{was}")


def gate(acc: Mapping[tuple[str, str], figures.OverSeeds], split: str, *,
         paper: Mapping[str, float | None] | None = None, among: Iterable[str] | None = None,
         result: str = TABLE1) -> figures.Gate:
    """The fidelity gate of a column (:func:`topofl.figures.fidelity_gate`): the paper's other
    rows (every one but DFedPGP; ``paper`` their values, default Table 1's column ``split``;
    ``among`` limits them to those a figure runs) ordered on the stand-in as in the paper."""
    bars = figures.gate_bars(result)
    if paper is None:
        i = COLUMNS.index(split)
        paper = {m: PAPER[m][i] for m in ROWS}
    pool = set(among) if among is not None else None
    controls = {m: v for m, v in paper.items()
                if m != "DFedPGP" and (pool is None or m in pool)}
    return figures.fidelity_gate(split, controls,  # the stand-in in % as the paper's table
                                 {m: 100 * acc[(m, split)] for m in controls
                                  if (m, split) in acc},
                                 tau_min=bars["tau"], top_share=bars["top_share"],
                                 p_max=bars["p_max"])


def declared_gate(result: str) -> tuple[str, dict[str, float]]:
    """The column of Table 1 and the paper's values of its controls that ``result``'s gate
    was declared against, before any of its runs (``claims.toml`` ``[<result>.gates]``:
    ``column``, one of :data:`COLUMNS`, and ``paper``, control -> %, DFedPGP not among them)."""
    bars = figures.gate_bars(result)
    column, paper = bars.get("column"), bars.get("paper")
    if column not in COLUMNS or not isinstance(paper, Mapping) or "DFedPGP" in paper \
            or not all(isinstance(v, (int, float)) and not isinstance(v, bool)
                       for v in paper.values()):
        raise FigureError(
            f"claims.toml [{result}.gates] must declare column = one of {COLUMNS} and paper = "
            f"{{control = the paper's %}} (DFedPGP is the tested method, not a control), got "
            f"column {column!r}, paper {paper!r}")
    return str(column), {str(m): float(v) for m, v in paper.items()}


def on_its_data(config: str, scale: str) -> None:
    """Refuse to run ``config`` at the default or full scale on anything but its own data:
    a result whose gate was declared for one data set (a gate is a claim about that data)
    does not decide on the offline stand-in that replaces it where its files are absent
    (``--quick``, a smoke run, may)."""
    if scale == "quick":
        return
    cells = figures.grid(figures.load_config(config, scale))
    swapped = {k: v for c in cells.values() for k, v in c.get("_stand_in", {}).items()}
    if swapped:
        raise FigureError(
            f"{config}: the {scale} scale runs only on its own data, whose gate was declared "
            f"(claims.toml); its files are absent here ({', '.join(swapped)} would run as "
            f"{', '.join(sorted(set(swapped.values())))}): put them in place (`topofl list "
            "datasets`; analysis/manual/guide/data.md says where they are looked for)")


def not_run(name: str, why: str = "not run at this scale", *, headline: bool = False
            ) -> figures.Check:
    """The inconclusive check of a part of the paper's claim (a column, a row) that did not
    run at this scale."""
    return figures.Check(name, "inconclusive", "not run", "-", why, headline)


def still_rising(found: Mapping[str, figures.Panel], margin: float,
                 skip: Iterable[str] = ()) -> list[str]:
    """One note per column listing the methods (other than ``skip``) whose seed-mean curve
    still moved by the margin or more over the last quarter of the rounds."""
    notes = []
    for s, p in found.items():
        labels = [m for m in p.runs if m not in set(skip)]
        if not labels:
            continue
        c = figures.convergence({m: p.runs[m] for m in labels}, "test_acc", tolerance=margin)
        if not c.flat:
            notes.append(f"{s}: {', '.join(c.rising)} still moved by {100 * margin:g} point(s) "
                         f"or more over rounds {c.span[0]}-{c.span[1]} (not flat; the checks "
                         "read only the curves they compare).")
    return notes


def pct(x: figures.OverSeeds) -> str:
    """A table cell: the accuracy in %, mean ± std over the seeds."""
    return f"{100 * x:.2f}"


def short_run_note(cfg: Mapping[str, Any], scale: str, *, server: bool = True
                   ) -> list[str]:
    """The note of a run shorter than the paper's 500 rounds (``server``: with the server
    methods' sampling). Whether the compared curves flattened is each check's convergence
    reading, not this note."""
    if scale == "full":
        return []
    text = (f"{cfg['rounds']} rounds instead of the paper's 500 (the CPU budget of this scale; "
            "`--full` runs the paper's setting); the lr decays 0.99x a round, so the last "
            f"round's is {0.99 ** int(cfg['rounds']):.2f}x the first.")
    if server:
        text += (" The server methods sample 10% of the clients per round: a client of theirs "
                 f"trains about {int(cfg['rounds']) / 10:g} times.")
    return [text]
