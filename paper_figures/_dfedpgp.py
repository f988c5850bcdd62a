"""The runs of DFedPGP's Table 1 grid (methods x data splits, ``configs/dfedpgp_table1.toml``)
and what its tables and figures read from them: each method's personalized test accuracy per
split over the seeds, and whether a method is the best of a column."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from topofl import figures

TABLE1 = "dfedpgp_table1"


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


def accuracy(found: Mapping[str, figures.Panel], how: str = "final"
             ) -> dict[tuple[str, str], figures.OverSeeds]:
    """``(method, split) ->`` the mean personalized test accuracy over clients at the last
    round (``how="final"``) or the mean over the rounds (``"area"``), per seed."""
    stat = figures.final if how == "final" else figures.mean_over_rounds
    return {(m, s): stat(rec, "test_acc") for s, p in found.items() for m, rec in p.runs.items()}


def best(acc: Mapping[tuple[str, str], figures.OverSeeds], split: str, claimed: str,
         what: str = "accuracy") -> tuple[figures.Check, str]:
    """The check that ``claimed`` beats the best other method of ``split`` (the other method
    with the highest mean), and that method."""
    others = [m for (m, s) in acc if s == split and m != claimed]
    rival = max(others, key=lambda m: acc[(m, split)].mean)
    where = f"{split}: " if split else ""
    return (figures.above(f"{where}{claimed} above the best other ({rival}), {what}",
                          acc[(claimed, split)] - acc[(rival, split)], fmt=".4f"), rival)


def pct(x: figures.OverSeeds) -> str:
    """A table cell: the accuracy in %, mean ± std over the seeds."""
    return f"{100 * x:.2f}"


def short_run_note(cfg: Mapping[str, Any], scale: str, *, server: bool = True
                   ) -> list[str]:
    """The note of a run shorter than the paper's 500 rounds (``server``: with the server
    methods' sampling)."""
    if scale == "full":
        return []
    if not server:
        return [f"{cfg['rounds']} rounds instead of the paper's 500: the curves are the start "
                "of the paper's."]
    return [f"{cfg['rounds']} rounds instead of the paper's 500 (the CPU budget of the "
            "default scale; `--full` runs the paper's setting); the server methods sample 10% "
            f"of the clients per round, so a client trains about {int(cfg['rounds']) // 10} "
            "times: far from converged."]
