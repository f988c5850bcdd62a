"""Field claim: asynchronous against synchronous D-SGD in virtual time, heterogeneous speeds.

Logistic regression on 20 nodes of MNIST (5,000 digits, two shards a node); client i computes
one local step in ``durations[i]`` units of virtual time (a heavy-tailed draw, fixed for every
seed). Synchronous D-SGD: one step and one gossip step a round, a round lasting as long as its
slowest client (max of the durations). Asynchronous D-SGD (AD-PSGD, topofl's ``adpsgd``): each
client steps in its own time and averages with a random neighbour when it finishes, run in
windows of the fastest duration (the exact event order). On a ring, an exponential graph and
D-Cliques. Left: mean test accuracy of the nodes on the global test set against virtual time
(mean over the seeds, shaded: +- one std; dotted: the target); right: virtual time to the
target, seed by seed.

    python paper_figures/fig_field_async.py [--quick | --full] [--update-results]
"""

from __future__ import annotations

from typing import Any

import numpy as np

from topofl import figures

GRAPHS = {"ring": "ring", "exponential": "exponential",
          "dcliques:clique_size=5,inter=ring": "D-Cliques"}
MODES = {"dsgd": "sync", "adpsgd": "async"}
CONFIGS = ["field_async_sync", "field_async_async"]
METRIC = "global_acc_mean"


def label(cfg: Any) -> str:
    """A curve's label: ``"<graph>, <sync|async>"``."""
    return f"{GRAPHS[cfg['topology']]}, {MODES[cfg['algorithm']]}"


def round_time(cfg: Any) -> float:
    """Virtual time one round of a run lasts: the window of an asynchronous run; for a
    synchronous one its slowest client's computation, ``max(durations)`` (the durations of
    the asynchronous config, which the synchronous one's ``[figure]`` table repeats)."""
    if cfg["algorithm"] == "adpsgd":
        return float(cfg["window"])
    return float(max(figures.load_config(CONFIGS[1])["durations"]))


def times(one: Any, cfg: Any) -> tuple[np.ndarray, np.ndarray]:
    """``(virtual time at the end of each evaluated round, METRIC)`` of a one-run record."""
    x, y = one.series(METRIC)
    return (np.asarray(x, dtype=float) + 1.0) * round_time(cfg), np.asarray(y, dtype=float)


def time_to(one: Any, cfg: Any, target: float) -> float:
    """Virtual time at the first evaluation where ``METRIC`` reached ``target``; a run that
    never reached it counts its whole run plus one evaluation interval (a lower bound)."""
    t, y = times(one, cfg)
    hit = np.nonzero(y >= target)[0]
    if len(hit):
        return float(t[hit[0]])
    step = float(np.diff(t).max()) if len(t) > 1 else round_time(cfg)
    return float(t[-1] + step)


@figures.script
def main(args: figures.FigureArgs) -> figures.Result:
    import matplotlib.pyplot as plt
    import pandas as pd

    sync_cfg = figures.load_config(CONFIGS[0], args.scale)
    target = float(sync_cfg["figure"]["target"])
    title = "20 nodes, MNIST, two shards a node, heavy-tailed speeds"
    found = figures.panels(args, {title: CONFIGS}, label)
    panel = found[title]
    runs, cfgs = panel.runs, panel.configs
    acc, ratio_margin = figures.margin(args.name, "accuracy"), figures.margin(args.name, "time")
    d = [float(v) for v in cfgs["ring, async"]["durations"]]
    if d != [float(v) for v in sync_cfg["figure"]["durations"]]:
        raise figures.FigureError("field_async: the two configs' durations differ")
    to = {k: figures.per_seed(r, lambda one, k=k: time_to(one, cfgs[k], target))
          for k, r in runs.items()}
    # a ratio's grid: one evaluation interval of each curve, carried to first order
    step = {k: round_time(c) * int(c["eval_every"]) for k, c in cfgs.items()}
    ratio, final = {}, {}
    for g in GRAPHS.values():
        a, s = to[f"{g}, async"], to[f"{g}, sync"]
        res = max(step[f"{g}, async"] / y + x * step[f"{g}, sync"] / y ** 2
                  for x, y in zip(a.values, s.values))
        ratio[g] = figures.OverSeeds((a / s).values, a.seeds, res)
        final[g] = (figures.final(runs[f"{g}, async"], "global_acc")
                    - figures.final(runs[f"{g}, sync"], "global_acc"))
    horizon = (f"virtual time until the mean accuracy first reaches the target {target:g} (a "
               "claim about the way there, read at the evaluations)")

    def reading(*keys: str) -> dict[str, Any]:
        return {"converged": figures.convergence({k: runs[k] for k in keys}, "global_acc",
                                                 tolerance=acc)}

    checks = [figures.below(f"{g}: virtual time to the target, async / sync, below 1",
                            ratio[g], 1.0, margin=ratio_margin, horizon=horizon, headline=True)
              for g in GRAPHS.values()]
    checks += [figures.above(f"{g}: async's final accuracy at least as good as sync's",
                             final[g], margin=acc, tie="pass",
                             **reading(f"{g}, async", f"{g}, sync"))
               for g in GRAPHS.values()]
    checks.append(figures.below(
        "the gain depends on the graph: async / sync time ratio lower on the ring than on "
        "the exponential graph", ratio["ring"] - ratio["exponential"], 0.0,
        margin=ratio_margin, horizon=horizon))

    fig, (left, right) = plt.subplots(1, 2, figsize=(11.0, 4.2),
                                      gridspec_kw={"width_ratios": [1.6, 1.0]})
    colors = dict(zip(GRAPHS.values(), ("C0", "C1", "C2")))
    for k, rec in runs.items():
        g, mode = k.split(", ")
        xs, ys = zip(*(times(rec.for_run(r), cfgs[k]) for r in rec.runs))
        m = min(len(y) for y in ys)
        x, y = xs[0][:m], np.stack([v[:m] for v in ys])
        mu, sd = y.mean(axis=0), y.std(axis=0, ddof=min(1, len(ys) - 1))
        left.plot(x, mu, color=colors[g], ls="-" if mode == "async" else "--", label=k)
        left.fill_between(x, mu - sd, mu + sd, color=colors[g], alpha=0.15, lw=0)
    left.axhline(target, color="grey", ls=":", lw=1.0)
    left.set_xscale("log")
    left.set_xlabel("virtual time (units of the fastest client's step, log)")
    left.set_ylabel("test accuracy (global test set)")
    left.set_title(panel.title, fontsize=10)
    left.set_ylim(max(0.0, target - 0.4), None)
    left.legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=3, frameon=False,
                fontsize=8)
    for i, g in enumerate(GRAPHS.values()):
        for j, mode in enumerate(("sync", "async")):
            v = to[f"{g}, {mode}"]
            right.plot([i + (j - 0.5) * 0.3] * v.n, v.values, "o" if mode == "async" else "s",
                       color=colors[g], alpha=0.7, label=mode if i == 0 else None,
                       mfc="none" if mode == "sync" else colors[g])
    right.set_xticks(range(len(GRAPHS)), list(GRAPHS.values()))
    right.set_yscale("log")
    right.set_xlabel("graph (left: sync, right: async)")
    right.set_ylabel(f"virtual time to accuracy {target:g} (log)")
    right.set_title("time to the target, seed by seed", fontsize=10)
    right.legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2, frameon=False,
                 fontsize=8)
    fig.tight_layout()

    reached = {k: sum(time_to(r.for_run(x), cfgs[k], target) <= times(r.for_run(x), cfgs[k])[0][-1]
                      for x in r.runs) for k, r in runs.items()}
    numbers = {panel.title: panel.table("global_acc"), "time to the target": pd.DataFrame([
        {"graph": g, f"sync: time to {target:g}": to[f"{g}, sync"],
         f"async: time to {target:g}": to[f"{g}, async"], "async / sync": ratio[g],
         "seeds that reached it (sync, async)":
             f"{reached[f'{g}, sync']}, {reached[f'{g}, async']} of {ratio[g].n}",
         "async - sync, final accuracy (points)": 100 * final[g]} for g in GRAPHS.values()]),
        "durations": pd.DataFrame([{"client": i, "duration": v} for i, v in enumerate(d)])}
    measured = (f"virtual time to a mean accuracy of {target:g}, async / sync: " + ", ".join(
        f"{g} {to[f'{g}, async']:.0f} / {to[f'{g}, sync']:.0f} (ratio {ratio[g]:.3f})"
        for g in GRAPHS.values()) + "; final accuracy async - sync (points): " + ", ".join(
        f"{g} {100 * final[g].mean:+.2f} ± {100 * final[g].std:.2f}" for g in GRAPHS.values())
        + f"; durations min {min(d):g}, max {max(d):g} (a sync round lasts {max(d):g})")
    notes = [f"Virtual time: a synchronous round lasts max(durations) = {max(d):g}, the time "
             f"of its slowest client's step; the asynchronous run's window is "
             f"{cfgs['ring, async']['window']:g} = min(durations), and its records' "
             "event_time is each window's end. Both axes count the same durations (no "
             "communication time on either)."]
    if min(reached.values()) < max(v.n for v in to.values()):
        notes.append("A seed that never reached the target counts its whole run plus one "
                     "evaluation interval (a lower bound of its time).")
    return figures.Result(fig, measured, checks, numbers, panels=found, notes=notes)


if __name__ == "__main__":
    raise SystemExit(main())
