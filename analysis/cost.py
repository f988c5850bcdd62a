"""Convergence against rounds, bytes and simulated time at n = 1000 (issue 25): which graph is
fastest depends on the axis.

D-SGD on five graphs of 1000 clients (the complete graph, D-Cliques, an EL-Oracle-style random
10-regular graph drawn anew every round, the static exponential graph, the ring), each with
every client online and with each client offline with probability 0.1 in every round, three
seeds: the config ``analysis/configs/cost.toml`` (stand-in data, model, the stated network),
run once per seed with ``topofl.sweep`` (resumable; the seed also seeds who is offline). The
report reads the records: the global test accuracy of the clients' models against rounds,
against bytes sent (the ledger) and against simulated seconds (the virtual clock), the
rounds, bytes and seconds each graph needs to reach a target accuracy, and how the graphs rank
on each axis.

Run ``nice -n 5 python analysis/cost.py`` (writes ``analysis/cost.md``,
``analysis/cost.png`` and ``analysis/cost_runs.csv``; the records go to ``analysis/out/cost``,
not committed). ``--report-only`` rebuilds the report from existing records.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

import topofl as tf

HERE = Path(__file__).resolve().parent
CONFIG = HERE / "configs" / "cost.toml"
SEEDS = (0, 1, 2)
LABELS = {"complete": "complete", "dcliques:clique_size=10": "D-Cliques",
          "el_oracle:s=10": "EL-Oracle (s = 10)", "exponential": "exponential",
          "ring": "ring"}
AVAIL = {"always": "all online", "bernoulli": "10 % offline"}


def run(out: Path, jobs: int, rounds: int | None = None,
        seeds: Sequence[int] = SEEDS) -> float:
    """Run the sweep of the config once per seed into ``out/seed=<s>``; seconds taken."""
    t0 = time.perf_counter()
    cfg = tf.config.read_config(CONFIG)
    if rounds is not None:
        cfg["rounds"] = rounds
    for seed in seeds:
        c = json.loads(json.dumps(cfg))
        c["seed"] = seed
        c["sweep"]["availability"] = [dict(a, seed=seed) if a.get("model") != "always" else a
                                      for a in c["sweep"]["availability"]]
        tf.sweep.run_sweep(c, out / f"seed={seed}", jobs=jobs, progress=False,
                           echo=lambda s: print(s, file=sys.stderr, flush=True))
    return time.perf_counter() - t0


def _runs(out: Path) -> list[dict[str, Any]]:
    """One entry per run: its condition, seed and curves (at the evaluated rounds)."""
    rows = []
    for path in sorted(out.glob("seed=*/*.jsonl")):
        r = tf.records.load(path)
        cfg = r.config
        rounds, acc = r.series("global_acc_mean")
        _, nbytes = r.series("bytes")
        t_all, sim = r.series("sim_time")
        sim_at = sim[np.searchsorted(t_all, rounds)]
        _, msgs = r.series("messages")
        online = r.series("online_clients")[1] if "online_clients" in r.metrics else None
        rows.append({
            "graph": LABELS.get(cfg["topology"], cfg["topology"]),
            "avail": AVAIL[cfg["availability"]["model"]],
            "seed": int(cfg["seed"]), "records": r, "rounds": rounds + 1, "acc": acc,
            "bytes": nbytes, "time": sim_at, "messages": msgs,
            "online": None if online is None else float(np.mean(online)),
            "n": int(cfg["n_clients"]),
        })
    return rows


def _reach(x: np.ndarray, acc: np.ndarray, target: float) -> float:
    hit = np.flatnonzero(acc >= target)
    return math.inf if hit.size == 0 else float(x[hit[0]])


def _mean_std(v: Sequence[float]) -> tuple[float, float]:
    a = np.asarray(v, dtype=float)
    if np.isinf(a).any():
        return math.inf, math.nan
    return float(a.mean()), float(a.std(ddof=1)) if a.size > 1 else math.nan


def _fmt(m: float, s: float, scale: float = 1.0, digits: int = 3, reached: str = "") -> str:
    if math.isinf(m):
        return "never" + reached
    body = f"{m / scale:.{digits}g}"
    noise = math.isnan(s) or s <= 1e-9 * abs(m)  # float noise of equal runs: no spread
    return body + ("" if noise else f" ± {s / scale:.2g}")


def _ranking(table: dict[str, dict[str, Any]], key: str) -> list[str]:
    """Graphs by increasing mean of ``key`` (never reached = inf, ties by name)."""
    return sorted(table, key=lambda g: (table[g][key][0], g))


def _consistent(a: Sequence[float], b: Sequence[float]) -> bool:
    """Every seed orders the two graphs the same way (paired by seed: the same data, the
    same initial model and the same batches on both graphs), strictly."""
    d = [x - y for x, y in zip(a, b)]
    return all(v < 0 for v in d) or all(v > 0 for v in d)


def report(out: Path, seconds: float | None, target: float | None, where: Path = HERE) -> str:
    runs = _runs(out)
    if not runs:
        raise SystemExit(f"no records under {out}: run without --report-only first")
    n = runs[0]["n"]
    # target: 90 % of the median, over all runs, of the final accuracy
    if target is None:
        target = round(0.9 * float(np.median([r["acc"][-1] for r in runs])), 3)
    for r in runs:
        r["to"] = {axis: _reach(r[axis], r["acc"], target)
                   for axis in ("rounds", "bytes", "time")}
        r["to"]["early"] = -float(r["acc"][0])  # the rounds axis at full resolution
    tables: dict[str, dict[str, dict[str, Any]]] = {}
    for avail in AVAIL.values():
        tab: dict[str, dict[str, Any]] = {}
        for g in LABELS.values():
            rs = sorted((r for r in runs if r["graph"] == g and r["avail"] == avail),
                        key=lambda r: r["seed"])
            if not rs:
                continue
            rounds_done = rs[0]["rounds"][-1]
            tab[g] = {
                "seeds": len(rs),
                "final": _mean_std([r["acc"][-1] for r in rs]),
                "per_node": _mean_std([r["messages"][-1] / n / rounds_done for r in rs]),
                "round_time": _mean_std([r["time"][-1] / rounds_done for r in rs]),
                "rounds": _mean_std([r["to"]["rounds"] for r in rs]),
                "bytes": _mean_std([r["to"]["bytes"] for r in rs]),
                "time": _mean_std([r["to"]["time"] for r in rs]),
                "early": _mean_std([r["to"]["early"] for r in rs]),
                "raw": {axis: [r["to"][axis] for r in rs] for axis in ("rounds", "bytes",
                                                                        "time", "early")},
                "reached": sum(not math.isinf(r["to"]["rounds"]) for r in rs),
                "online": rs[0]["online"],
            }
        tables[avail] = tab
    _figure(runs, target, where)
    _csv(runs, where)
    return _markdown(tables, runs, target, seconds)


def _figure(runs: list[dict[str, Any]], target: float, where: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 3, figsize=(13, 7), sharey=True)
    colors = dict(zip(LABELS.values(), plt.get_cmap("tab10").colors))
    xs = {"rounds": ("rounds", 1.0), "bytes": ("bytes sent, all clients (GB)", 1e9),
          "time": ("simulated time (s)", 1.0)}
    for row, avail in enumerate(AVAIL.values()):
        for col, (axis, (label, scale)) in enumerate(xs.items()):
            ax = axes[row, col]
            for g in LABELS.values():
                rs = [r for r in runs if r["graph"] == g and r["avail"] == avail]
                if not rs:
                    continue
                x = np.mean([r[axis] for r in rs], axis=0) / scale
                ys = np.array([r["acc"] for r in rs])
                ax.plot(x, ys.mean(0), color=colors[g], label=g, lw=1.5)
                ax.fill_between(x, ys.min(0), ys.max(0), color=colors[g], alpha=0.2, lw=0)
            ax.axhline(target, color="grey", lw=0.8, ls=":")
            if axis in ("bytes", "time"):
                ax.set_xscale("log")
            ax.set_xlabel(label)
            if col == 0:
                ax.set_ylabel(f"global test accuracy ({avail})")
            ax.grid(alpha=0.3)
    axes[0, 0].legend(fontsize=8, loc="lower right")
    fig.suptitle("D-SGD, n = 1000 (mean over 3 seeds, band min..max); dotted: the target",
                 fontsize=10)
    fig.tight_layout()
    fig.savefig(where / "cost.png", dpi=80)
    plt.close(fig)


def _csv(runs: list[dict[str, Any]], where: Path) -> None:
    lines = ["graph,availability,seed,round,global_acc_mean,bytes,messages,sim_time"]
    for r in runs:
        for k in range(len(r["rounds"])):
            lines.append(f"{r['graph']},{r['avail']},{r['seed']},{int(r['rounds'][k])},"
                         f"{r['acc'][k]:.6f},{int(r['bytes'][k])},{int(r['messages'][k])},"
                         f"{r['time'][k]:.6f}")
    (where / "cost_runs.csv").write_text("\n".join(lines) + "\n")


_WORDS = {"early": "rounds (accuracy after the first evaluated rounds)",
          "rounds": "rounds to target", "bytes": "bytes to target",
          "time": "simulated time to target"}


def _changes(tab: dict[str, dict[str, Any]]) -> list[str]:
    """Pairs of graphs whose order differs between two axes, with whether the seeds
    separate them on both."""
    out = []
    axes = ("rounds", "bytes", "time")
    names = list(tab)
    for i, a in enumerate(axes):
        for b in axes[i + 1:]:
            for x in range(len(names)):
                for y in range(x + 1, len(names)):
                    g, h = names[x], names[y]
                    with np.errstate(invalid="ignore"):
                        da = tab[g][a][0] - tab[h][a][0]  # NaN when both never reach
                        db = tab[g][b][0] - tab[h][b][0]
                    if da * db < 0:  # opposite strict orders (ties and NaN are no change)
                        sep = (_consistent(tab[g]["raw"][a], tab[h]["raw"][a])
                               and _consistent(tab[g]["raw"][b], tab[h]["raw"][b]))
                        first, second = (g, h) if da < 0 else (h, g)
                        out.append(f"{first} before {second} in {_WORDS[a]}, after it in "
                                   f"{_WORDS[b]}"
                                   + (" (every seed)" if sep else " (inconclusive at this "
                                      "scale: not every seed orders the pair so)"))
    return out


def _markdown(tables: dict[str, dict[str, dict[str, Any]]], runs: list[dict[str, Any]],
              target: float, seconds: float | None) -> str:
    cfg = tf.config.read_config(CONFIG)
    net = cfg["network"]
    first = cfg["eval_every"]
    n_test = dict(kv.split("=") for kv in cfg["data"].split(":", 1)[1].split(","))["n_test"]
    r0 = runs[0]["records"]
    prov = r0.provenance
    P = int(r0.engine.get("model", "x[0]").split("[")[-1].rstrip("]")) if r0.engine else None
    lines = [
        "# Convergence against rounds, bytes and simulated time (n = 1000)",
        "",
        f"Generated by `python analysis/cost.py` (config `analysis/configs/cost.toml`, run "
        f"once per seed with `topofl sweep`) with topofl {prov.get('topofl')}, git commit "
        f"`{str(prov.get('git_commit'))[:12]}`, torch {prov.get('torch')}; seeds "
        f"{', '.join(map(str, SEEDS))}"
        + (f"; the {len(runs)} runs took {seconds / 60:.1f} min on a shared 2-CPU machine"
           if seconds else "") + ".",
        "",
        f"**Setting.** D-SGD (one local SGD step of batch {cfg['batch_size']} at learning "
        f"rate {cfg['lr']}, then one gossip step) on {cfg['n_clients']} clients. "
        "**Stand-in data** (not a real dataset): a seeded "
        "10-class Gaussian mixture in 32 dimensions (`synthetic`, separation 2, noise 1), 60 "
        "training samples per client, each client holding a single class (shards of the "
        "label-sorted data, the D-Cliques paper's extreme label skew); softmax regression "
        f"({P} parameters, float32: {P * 4 if P else '?'} bytes a model). Accuracy: every "
        f"client's model on the global test set ({n_test} samples), averaged over clients, "
        f"every {cfg['eval_every']} rounds, {cfg['rounds']} rounds. Graphs: the complete "
        "graph, D-Cliques (cliques of 10 balanced by Greedy "
        "Swap, fully connected inter-clique edges; D-SGD without Clique Averaging), EL-Oracle "
        "with s = 10 (`el_oracle:s=10`: a random 10-regular undirected graph drawn anew every "
        "round, weights 1/11), the static exponential graph (`exponential`: node i sends "
        "to i + 2^k), the ring; Metropolis weights for the static undirected ones.",
        "",
        "**Network model** (`[network]` of the config; `topofl.engine.clock`): every link "
        f"has a latency drawn once per pair of nodes, uniform in [{net['latency']['low']}, "
        f"{net['latency']['high']}] s; every client has a {net['uplink'] * 8 / 1e6:g} Mbit/s "
        "uplink and downlink, shared by the messages it sends (receives) in one exchange; "
        "clients compute at a speed drawn once per client, lognormal with median "
        f"{net['speed']['median'] / 1e9:g} GFLOP/s and sigma {net['speed']['sigma']}, "
        "local work = FLOPs of the forward and backward pass of the samples processed. "
        "Rounds are synchronous with per-node clocks: a client finishes a round when it has "
        "computed and received the models of every in-neighbour; a message leaves when its "
        "sender has computed and takes latency + max(its bytes over the sender's uplink "
        "share, over the receiver's downlink share); the round's time is when the last "
        "client finishes. **Availability**: each client is offline with probability 0.1 in "
        "each round, independently (`[availability] model = \"bernoulli\"`, seeded by the "
        "run's seed); an offline client neither trains nor sends nor receives and its "
        "neighbours keep the weight they gave it (D-SGD's \"renormalise\" rule: Metropolis "
        "weights stay doubly stochastic).",
        "",
        f"**Target**: global test accuracy >= {target:g} (90 % of the median final "
        "accuracy over all runs, a rule fixed before the runs). *to target*: rounds, bytes "
        "sent by all clients, and simulated seconds until the first evaluation at or above "
        "it, mean ± std over the seeds (never: some seed never reached it within the rounds "
        f"run), to the resolution of the evaluations (every {first} rounds). The rankings "
        "below compare the graphs per round by rounds to target (the accuracy after the "
        "first evaluation is also shown: this early all graphs but the ring are within "
        "each other's seed spread).",
        "",
        "![accuracy against rounds, bytes and simulated time](cost.png)",
        "",
    ]
    for avail, tab in tables.items():
        lines += [f"## {avail[0].upper() + avail[1:]}", "",
                  "| graph | messages per client and round | simulated s per round | "
                  f"accuracy after {first} rounds | final accuracy | rounds to target | GB to "
                  "target | simulated s to target |", "|---|---:|---:|---:|---:|---:|---:|---:|"]
        for g, row in tab.items():
            miss = "" if row["reached"] == row["seeds"] else \
                f" ({row['seeds'] - row['reached']}/{row['seeds']} seeds)"
            lines.append(
                f"| {g} | {_fmt(*row['per_node'])} | {_fmt(*row['round_time'])} | "
                f"{_fmt(-row['early'][0], row['early'][1])} | {_fmt(*row['final'])} | "
                f"{_fmt(*row['rounds'], reached=miss)} | "
                f"{_fmt(*row['bytes'], scale=1e9, reached=miss)} | "
                f"{_fmt(*row['time'], reached=miss)} |")
        lines += [""]
        for axis, word in (("early", f"accuracy after {first} rounds (best first)"),
                           ("rounds", "rounds to target"), ("bytes", "bytes to target"),
                           ("time", "simulated time to target")):
            order = _ranking(tab, axis)
            text = _ranking_text(tab, axis)
            lines.append(f"- ranking by {word}, mean over seeds: {text}"
                         + ("" if not any(math.isinf(tab[g][axis][0]) for g in order)
                            else " (never reached: "
                            + ", ".join(g for g in order if math.isinf(tab[g][axis][0]))
                            + ")"))
        changes = _changes(tab)
        lines += ["", "Pairs ordered one way on one axis and the other way on another "
                  "(\"every seed\": each of the seeds, paired, orders the pair so on both "
                  "axes):", ""] + ([f"- {c}" for c in changes] if changes else ["- none"])
        lines += [""]
    lines += _observations(tables)
    up = float(net["uplink"])
    dim = int(dict(kv.split("=") for kv in cfg["data"].split(":", 1)[1].split(","))["dim"])
    model = tf.models.build_model(cfg["model"], (dim,), 10, seed=0)
    work = (tf.models.flops_per_sample(model, backward=True) * cfg["batch_size"]
            / float(net["speed"]["median"]))
    per = [f"{g} {tables[AVAIL['always']][g]['per_node'][0]:.3g} x {P * 4} B = "
           f"{tables[AVAIL['always']][g]['per_node'][0] * P * 4 / up:.3g} s"
           for g in tables.get(AVAIL["always"], {})] if P else []
    if per:
        lines.append("- why: a client's models of one round through its uplink, all online "
                     "(messages x bytes over " + f"{up * 8 / 1e6:g}" + " Mbit/s): "
                     + "; ".join(per) + f"; the links' latencies are at most "
                     f"{net['latency']['high']} s and a client's local step takes "
                     f"{work * 1e6:.0f} µs at the median speed, so "
                     "the complete graph's rounds are bound by its uplinks, the others' by "
                     "their slowest link.")
    lines += ["", "Per-run curves: `cost_runs.csv` (graph, availability, seed, round, "
              "accuracy, bytes, messages, simulated seconds at every evaluation).", ""]
    return "\n".join(lines)


def _ranking_text(tab: dict[str, dict[str, Any]], axis: str) -> str:
    """``a < b = c``: the graphs by increasing mean of ``axis`` (``>`` for the accuracy
    after the first rounds, where larger is better), ties as ``=``."""
    order = _ranking(tab, axis)
    text = order[0]
    for prev, g in zip(order, order[1:]):
        text += (" = " if tab[g][axis][0] == tab[prev][axis][0] else
                 (" > " if axis == "early" else " < ")) + g
    return text


def _ends(tab: dict[str, dict[str, Any]], axis: str) -> tuple[str, str]:
    """The graphs with the smallest and the largest finite mean of ``axis`` (ties joined by
    =)."""
    means = {g: tab[g][axis][0] for g in tab if not math.isinf(tab[g][axis][0])}
    lo, hi = min(means.values()), max(means.values())
    return (" = ".join(g for g in means if means[g] == lo),
            " = ".join(g for g in means if means[g] == hi))


def _observations(tables: dict[str, dict[str, dict[str, Any]]]) -> list[str]:
    """The findings, computed from the tables (no hand-written numbers)."""
    out = ["## Observations", ""]
    on, off = tables.get(AVAIL["always"], {}), tables.get(AVAIL["bernoulli"], {})
    for name, tab in ((AVAIL["always"], on), (AVAIL["bernoulli"], off)):
        if not tab:
            continue
        best = {axis: _ends(tab, axis) for axis in ("early", "rounds", "bytes", "time")}
        never = [g for g in tab if math.isinf(tab[g]["rounds"][0])]
        lo_b, hi_b = min(tab[g]["bytes"][0] for g in tab if g not in never), \
            max(tab[g]["bytes"][0] for g in tab if g not in never)
        lo_t, hi_t = min(tab[g]["time"][0] for g in tab if g not in never), \
            max(tab[g]["time"][0] for g in tab if g not in never)
        out.append(
            f"- {name}: per round, {best['rounds'][0]} reaches the target first "
            f"(rounds to target). To reach it, {best['bytes'][1]} sends "
            f"{hi_b / lo_b:.0f}x the bytes of {best['bytes'][0]} and takes "
            f"{hi_t / lo_t:.1f}x the simulated time of {best['time'][0]}"
            + (f"; {', '.join(never)} never reaches it" if never else "") + ".")
    if on and off:
        diffs = []
        for g in on:
            if g in off:
                a, b = on[g]["final"][0], off[g]["final"][0]
                diffs.append(f"{g} {a:.3f} -> {b:.3f}")
        same = all(_ranking_text(on, k) == _ranking_text(off, k)
                   for k in ("early", "rounds", "bytes", "time"))
        out.append("- final accuracy, all online -> 10 % offline: " + "; ".join(diffs) + ".")
        out.append("- with 10 % of the clients offline the rankings on every axis are "
                   + ("the same as with all online." if same else
                      "not all the same as with all online (see the rankings above)."))
    return out


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=str(HERE / "out" / "cost"), help="records folder")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--report-only", action="store_true")
    ap.add_argument("--target", type=float, default=None)
    ap.add_argument("--rounds", type=int, default=None, help="override (a smoke test)")
    ap.add_argument("--seeds", default=None, help="comma-separated (a smoke test)")
    ap.add_argument("--doc", default=str(HERE / "cost.md"), help="where the report goes")
    args = ap.parse_args(argv)
    out = Path(args.out)
    seconds = None
    if not args.report_only:
        seeds = SEEDS if args.seeds is None else tuple(int(s) for s in args.seeds.split(","))
        seconds = run(out, args.jobs, args.rounds, seeds)
        (out / "seconds.txt").write_text(f"{seconds:.1f}\n")
    elif (out / "seconds.txt").exists():
        seconds = float((out / "seconds.txt").read_text())
    text = report(out, seconds, args.target, Path(args.doc).parent)
    Path(args.doc).write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    raise SystemExit(main())
