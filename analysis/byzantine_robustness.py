"""Which graphs tolerate how many Byzantine nodes: graph family x attack x defence on digits.

D-SGD (logistic regression, the offline scikit-learn digits split into label shards over
``N`` clients) runs on a few graph families while 1-3 of its nodes are Byzantine (chosen at
random, or by degree), under five attacks of :mod:`topofl.engine.byzantine` and four gossip
rules of :mod:`topofl.engine.pieces.robust`. The metric is the honest nodes' final accuracy on
the global test set (``honest_global_acc_mean``: mean over the honest nodes), mean +- std over
the seeds, beside each graph's spectral gap and the largest share of Byzantine in-neighbours
that an honest node has. The global test set, not each client's own test split: with label
shards a node that ignores its neighbours scores well on its own split, so only the global
accuracy shows whether gossip still carries the other nodes' knowledge.

The rules' parameters follow stated rules, fixed before the attacked runs:

* ``clipped`` (a fixed radius ``tau``): per graph, the smallest ``tau`` of :data:`TAUS`
  whose attack-free run keeps the global accuracy within :data:`TAU_SLACK` of plain
  gossip's, tuned on seed :data:`TUNE_SEED` (not a seed of the table): the tightest clip that
  costs no attack-free accuracy;
* ``clipped_adaptive`` (ClippedGossip's adaptive radius, ``tau="adaptive"``): ``delta`` =
  the largest Byzantine in-neighbour weight of an honest node in that run (the paper's
  ``delta_max``, known as the trimmed mean's bound is), times ``1 + DELTA_SLACK`` so that a
  float32 weight equal to it is within the budget; attack-free: the largest single
  in-neighbour weight (the budget for one attacker);
* ``trimmed_mean``: ``trim`` = the largest number of Byzantine in-neighbours of an honest
  node in that run (BRIDGE's known bound ``b``), capped at ``floor(d_min / 2)`` (every
  neighbourhood of ``d_i + 1`` models must keep one: ``2 trim + 1 <= d_min + 1``);
* ``median``: no parameter; ``mean``: plain gossip.

A (graph, rule, placement) *tolerates* its attackers when, for every attack, the honest
accuracy stays within :data:`TOLERANCE` of the attack-free plain-gossip run of the same graph
(seed-paired mean difference).

Usage::

    nice -n 5 python analysis/byzantine_robustness.py            # writes byzantine_robustness.md
    nice -n 5 python analysis/byzantine_robustness.py --quick    # 1 seed, 2 graphs (smoke test)

Per-run values go to ``analysis/byzantine_robustness.csv`` (committed; an existing row is
reused, so an interrupted run continues).
"""

from __future__ import annotations

import argparse
import csv
import math
import platform
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

import topofl as tf
from topofl.engine.byzantine import Byzantine

HERE = Path(__file__).resolve().parent
N = 16
ROUNDS = 200
LR = 0.5
BATCH = 16
SEEDS = (0, 1, 2)
TUNE_SEED = 99
TAUS = (0.3, 1.0, 3.0, 10.0)
TAU_SLACK = 0.01
TOLERANCE = 0.05
GRAPHS = {
    "complete": "complete",
    "exponential": "exponential",
    "torus 4x4": "torus:rows=4,cols=4",
    "random regular d=4": "random_regular:d=4",
    "ring": "ring",
    "Erdos-Renyi p=0.3": "erdos_renyi:p=0.3",
}
ATTACKS: dict[str, dict[str, Any]] = {
    "sign_flip": {"attack": "sign_flip"},
    "alie": {"attack": "alie", "z": 1.0},
    "ipm": {"attack": "ipm", "eps": 0.1},
    "dissensus": {"attack": "dissensus", "eps": 1.5},
    "gaussian": {"attack": "gaussian", "scale": 1.0},
}
DEFENCES = ("mean", "clipped", "clipped_adaptive", "trimmed_mean", "median")
DELTA_SLACK = 1e-6
#: (choose, number of Byzantine nodes)
PLACEMENTS = (("random", 1), ("random", 2), ("random", 3), ("degree", 2), ("degree", 3))
FIELDS = ("graph", "placement", "defence", "attack", "seed", "acc", "param", "max_share",
          "max_byz", "gap", "seconds")


def run_one(spec: str, seed: int, defence: str, byzantine: dict[str, Any] | None,
            param: float) -> tuple[float, float]:
    """(honest global accuracy at the last round, spectral gap) of one run."""
    kw: dict[str, Any] = {"aggregator": defence}
    if defence == "clipped":
        kw["tau"] = param
    if defence == "clipped_adaptive":
        kw.update(aggregator="clipped", tau="adaptive", delta=param)
    if defence == "trimmed_mean":
        kw["trim"] = int(param)
    try:
        res = tf.run(algorithm="dsgd", topology=spec, data="digits", n_clients=N,
                     rounds=ROUNDS, lr=LR, batch_size=BATCH, eval_every=ROUNDS, seed=seed,
                     progress=False, divergence=None, byzantine=byzantine, **kw)
    except tf.exceptions.ConvergenceError:  # a non-finite loss: the run diverged
        gap = tf.spectral.spectral_gap(tf.topologies.build(spec, n=N, seed=seed))
        return math.nan, float(gap)
    rec = res.records
    acc = rec.final("honest_global_acc_mean" if byzantine else "global_acc_mean")
    return float(acc), float(rec.final("graph.spectral_gap"))


def exposure(spec: str, seed: int, choose: str, f: int) -> tuple[float, int, int, float]:
    """(largest share of Byzantine in-neighbours of an honest node, largest count, the
    trimmed mean's trim, the adaptive clipping's delta) of one placement on the graph the run
    builds."""
    topo = tf.topologies.build(spec, n=N, seed=seed)
    byz = Byzantine.from_config({"attack": "sign_flip", "share": f / N, "choose": choose,
                                 "seed": seed}).nodes_of(topo, N)
    bad = set(byz.tolist())
    g = topo.graph
    W = topo.W.tocsr()
    share, count, weight = 0.0, 0, 0.0
    for i in range(N):
        if i in bad:
            continue
        nbrs = [j for j in g.predecessors(i) if j != i]
        b = sum(j in bad for j in nbrs)
        share, count = max(share, b / len(nbrs)), max(count, b)
        weight = max(weight, sum(float(W[i, j]) for j in nbrs if j in bad))
    d_min = min(len([j for j in g.predecessors(i) if j != i]) for i in range(N))
    return share, count, min(count, d_min // 2), min(1.0, weight * (1 + DELTA_SLACK))


def one_neighbour(spec: str, seed: int) -> float:
    """The adaptive clipping's attack-free delta: the largest in-neighbour weight."""
    W = tf.topologies.build(spec, n=N, seed=seed).W.tocsr().tolil()
    W.setdiag(0)
    return min(1.0, float(W.tocsr().max()) * (1 + DELTA_SLACK))


def byz_spec(attack: str, choose: str, f: int, seed: int) -> dict[str, Any]:
    return dict(ATTACKS[attack], share=f / N, choose=choose, seed=seed)


def load(path: Path) -> dict[tuple[str, ...], dict[str, str]]:
    if not path.exists():
        return {}
    with path.open() as fh:
        return {tuple(r[k] for k in FIELDS[:5]): r for r in csv.DictReader(fh)}


def tune_tau(spec: str) -> tuple[float, dict[float, float]]:
    plain, _ = run_one(spec, TUNE_SEED, "mean", None, 0)
    accs = {tau: run_one(spec, TUNE_SEED, "clipped", None, tau)[0] for tau in TAUS}
    chosen = next((t for t in TAUS if accs[t] >= plain - TAU_SLACK), TAUS[-1])
    accs[math.inf] = plain
    return chosen, accs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out", type=Path, default=HERE / "byzantine_robustness.md")
    ap.add_argument("--csv", type=Path, default=HERE / "byzantine_robustness.csv")
    args = ap.parse_args()
    torch.set_num_threads(1)
    graphs = dict(list(GRAPHS.items())[:2]) if args.quick else GRAPHS
    seeds = SEEDS[:1] if args.quick else SEEDS
    rows = load(args.csv)
    start = time.perf_counter()
    taus: dict[str, tuple[float, dict[float, float]]] = {}
    todo = []
    for gname, spec in graphs.items():
        taus[gname] = tune_tau(spec)
        print(f"{gname}: tau={taus[gname][0]} {taus[gname][1]}", file=sys.stderr)
        for seed in seeds:
            for defence in DEFENCES:
                todo.append((gname, spec, "none", defence, "none", seed))
            for choose, f in PLACEMENTS:
                for defence in DEFENCES:
                    for attack in ATTACKS:
                        todo.append((gname, spec, f"{choose} f={f}", defence, attack, seed))
    tune_s = time.perf_counter() - start
    with args.csv.open("a", newline="") as fh:
        out = csv.DictWriter(fh, FIELDS)
        if not rows:
            out.writeheader()
        for k, (gname, spec, placement, defence, attack, seed) in enumerate(todo):
            key = (gname, placement, defence, attack, str(seed))
            if key in rows:
                continue
            if placement == "none":
                share, count, trim, byz = 0.0, 0, 0, None
                delta = one_neighbour(spec, seed)
            else:
                choose, f = placement.split(" f=")
                share, count, trim, delta = exposure(spec, seed, choose, int(f))
                byz = byz_spec(attack, choose, int(f), seed)
            param = {"clipped": taus[gname][0], "trimmed_mean": trim,
                     "clipped_adaptive": delta}.get(defence, 0.0)
            t0 = time.perf_counter()
            acc, gap = run_one(spec, seed, defence, byz, param)
            row = dict(zip(FIELDS, (gname, placement, defence, attack, seed, f"{acc:.6f}",
                                    param, f"{share:.4f}", count, f"{gap:.6f}",
                                    f"{time.perf_counter() - t0:.3f}")))
            out.writerow(row)
            fh.flush()
            rows[key] = {k2: str(v) for k2, v in row.items()}
            if k % 50 == 0:
                print(f"{k}/{len(todo)} {time.perf_counter() - start:.0f}s", file=sys.stderr)
    total = time.perf_counter() - start
    args.out.write_text(report(rows, graphs, seeds, taus, tune_s, total, args.quick))
    print(f"wrote {args.out} ({total:.0f} s)", file=sys.stderr)


def _stats(vals: list[float]) -> tuple[float, float]:
    a = np.asarray(vals, dtype=np.float64)
    return float(a.mean()), float(a.std(ddof=1)) if a.size > 1 else 0.0


def report(rows: dict[tuple[str, ...], dict[str, str]], graphs: dict[str, str],
           seeds: tuple[int, ...], taus: dict[str, tuple[float, dict[float, float]]],
           tune_s: float, total: float, quick: bool) -> str:
    def vals(g: str, p: str, d: str, a: str, field: str = "acc") -> list[float]:
        got = [float(rows[(g, p, d, a, str(s))][field]) for s in seeds]
        return [v if math.isfinite(v) else 0.0 for v in got]  # diverged: accuracy 0

    def cell(v: list[float]) -> str:
        m, s = _stats(v)
        return f"{100 * m:.1f} ± {100 * s:.1f}"

    def acc_cell(g: str, p: str, d: str, a: str) -> str:
        raw = [float(rows[(g, p, d, a, str(s))]["acc"]) for s in seeds]
        return cell(vals(g, p, d, a)) + ("†" if not all(map(math.isfinite, raw)) else "")

    placements = [f"{c} f={f}" for c, f in PLACEMENTS]
    tol: dict[tuple[str, str, str], bool] = {}
    worst: dict[tuple[str, str, str], float] = {}
    for g in graphs:
        base = np.asarray(vals(g, "none", "mean", "none"))
        for d in DEFENCES:
            for p in placements:
                drops = [float((base - np.asarray(vals(g, p, d, a))).mean()) for a in ATTACKS]
                worst[g, d, p] = max(drops)
                tol[g, d, p] = max(drops) <= TOLERANCE
    rev = subprocess.run(["git", "-C", str(HERE), "rev-parse", "--short", "HEAD"],
                         capture_output=True, text=True, check=False).stdout.strip()
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    run_s = sum(float(r["seconds"]) for k, r in rows.items() if k[0] in graphs
                and int(k[4]) in seeds)
    n_runs = len(graphs) * len(seeds) * (len(DEFENCES) + len(PLACEMENTS) * len(DEFENCES)
                                          * len(ATTACKS)) + len(graphs) * (1 + len(TAUS))
    L: list[str] = []
    L += ["# Which graphs tolerate how many Byzantine nodes (digits, D-SGD)", ""]
    if quick:
        L += ["**Quick smoke run (1 seed, 2 graphs): not a result.**", ""]
    L += [
        f"D-SGD, logistic regression, the offline scikit-learn digits (1,797 images, topofl's "
        f"`digits`: real data, no stand-in) split into label shards (topofl's default "
        f"`shards` partition) over n = {N} clients; {ROUNDS} rounds, lr {LR}, batch {BATCH}, "
        f"one local step a round; seeds {', '.join(map(str, seeds))} (a seed draws the split, "
        f"the random graph, the initial model, the batches and the random Byzantine "
        f"placement). Metric: the honest nodes' final accuracy on the global test set "
        f"(`honest_global_acc_mean`, in %), mean ± std over the seeds (ddof = 1). "
        f"Attack-free plain gossip is the reference.",
        "",
        "Attacks (`[byzantine]`): sign_flip; alie with z = 1 (set explicitly: Baruch et al.'s "
        "default z is negative at n = 16, f <= 3); ipm with eps = 0.1; dissensus with "
        "eps = 1.5; gaussian with scale 1. Placements: f = 1, 2, 3 Byzantine nodes chosen at "
        "random (`choose=\"random\"`, seeded by the run's seed), f = 2, 3 by degree "
        "(`choose=\"degree\"`: the highest degrees, ties to the lowest ids; on the regular "
        "graphs that is nodes 0..f-1, neighbours on the ring, the torus and the exponential "
        "graph; on the Erdos-Renyi graph the hubs).",
        "",
        "Defences (dsgd's `aggregator`), their parameters set by rules fixed before the "
        "attacked runs:",
        f"- `clipped` (self-centred clipping with a fixed radius tau): per graph, the "
        f"smallest tau in {list(TAUS)} whose attack-free global accuracy is within "
        f"{100 * TAU_SLACK:.0f} point of plain gossip's, on seed {TUNE_SEED} (not a table "
        f"seed);",
        f"- `clipped_adaptive` (ClippedGossip's adaptive radius, `tau=\"adaptive\"`: each "
        f"node clips its farthest in-neighbours, of total weight at most delta, to the next "
        f"one's distance): delta = the largest Byzantine in-neighbour weight of an honest "
        f"node in that run (the paper's delta_max, a known bound as the trimmed mean's trim "
        f"is) times 1 + {DELTA_SLACK:g} (so that a float32 weight equal to it is within the "
        f"budget); attack-free: the largest single in-neighbour weight (one attacker's "
        f"budget);",
        "- `trimmed_mean`: trim = the largest number of Byzantine in-neighbours of an honest "
        "node in that run (BRIDGE's known bound), capped at floor(d_min / 2) so that every "
        "neighbourhood keeps a value (d_min the least degree);",
        "- `median`: per coordinate; `mean`: plain gossip.",
        "",
        f"**Tolerance criterion.** A (graph, defence, placement) tolerates its f attackers when "
        f"under every one of the five attacks the honest accuracy is within "
        f"{100 * TOLERANCE:.0f} points of attack-free plain gossip on the same graph "
        f"(seed-paired mean drop <= {100 * TOLERANCE:.0f} points).",
        "",
        "## The graphs",
        "",
        "| graph | degree | spectral gap | tau (clipped) | attack-free acc: mean | clipped | "
        "clipped_adaptive (one neighbour's delta) | trimmed_mean (trim 0) | median |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for g, spec in graphs.items():
        degs = sorted({len([j for j in tf.topologies.build(spec, n=N, seed=s).graph
                            .predecessors(i) if j != i]) for s in seeds for i in range(N)})
        deg = str(degs[0]) if len(degs) == 1 else f"{degs[0]}-{degs[-1]}"
        gap_m, gap_s = _stats(vals(g, "none", "mean", "none", "gap"))
        gap = f"{gap_m:.3f}" if gap_s == 0 else f"{gap_m:.3f} ± {gap_s:.3f}"
        L.append(f"| {g} | {deg} | {gap} | {taus[g][0]:g} | "
                 + " | ".join(cell(vals(g, "none", d, "none")) for d in DEFENCES) + " |")
    L += ["", f"Tau tuning (seed {TUNE_SEED}, attack-free global accuracy %, tau = inf is "
          "plain gossip):", ""]
    for g in graphs:
        L.append(f"- {g}: " + ", ".join(f"tau {t:g}: {100 * a:.1f}"
                                        for t, a in taus[g][1].items()))
    L += ["", "## Tolerance: the largest f tolerated", "",
          "Largest f such that every placement with at most f Byzantine nodes (of that choice) "
          "is tolerated (0: not even one); in brackets the worst attack's mean drop at the "
          "largest f measured (points).", "",
          "| graph | gap | defence | random placement | by degree |", "|---|---|---|---|---|"]
    for g in graphs:
        gap_m, _ = _stats(vals(g, "none", "mean", "none", "gap"))
        for d in DEFENCES:
            parts = []
            for choose in ("random", "degree"):
                fs = [f for c, f in PLACEMENTS if c == choose]
                best = 0
                for f in sorted(fs):
                    if not tol[g, d, f"{choose} f={f}"]:
                        break
                    best = f
                shown = ">=" if best == max(fs) else ""
                if choose == "degree" and best == 0 and tol.get((g, d, "random f=1")):
                    best_s = "<2"
                else:
                    best_s = f"{shown}{best}"
                parts.append(f"{best_s} ({100 * worst[g, d, f'{choose} f={max(fs)}']:.1f})")
            L.append(f"| {g} | {gap_m:.3f} | {d} | {parts[0]} | {parts[1]} |")
    L += ["", "## Worst attack", "",
          "Honest global accuracy (%) under the worst of the five attacks (the lowest seed "
          "mean), per placement; `share`: the largest share of Byzantine in-neighbours of an "
          "honest node (mean over seeds).", "",
          "| graph | gap | placement | share | " + " | ".join(DEFENCES) + " |",
          "|---" * (4 + len(DEFENCES)) + "|"]
    for g in graphs:
        gap_m, _ = _stats(vals(g, "none", "mean", "none", "gap"))
        for p in placements:
            sh = float(np.mean(vals(g, p, "mean", "sign_flip", "max_share")))
            low = []
            for d in DEFENCES:
                means = {a: _stats(vals(g, p, d, a))[0] for a in ATTACKS}
                a_min = min(means, key=lambda a: means[a])
                low.append(f"{100 * means[a_min]:.1f} ({a_min})")
            L.append(f"| {g} | {gap_m:.3f} | {p} | {sh:.2f} | " + " | ".join(low) + " |")
    L += ["", "## All cells", "",
          "Honest global accuracy (%), mean ± std over the seeds; `share` is the largest "
          "share of Byzantine in-neighbours of an honest node (mean over seeds, max in "
          "brackets), `trim` the trimmed mean's trim (per seed). Attack-free plain gossip "
          "is in the first line of each graph. †: a seed diverged (a non-finite loss), "
          "counted as accuracy 0.", ""]
    for g in graphs:
        base = cell(vals(g, "none", "mean", "none"))
        L += [f"### {g} (attack-free plain gossip {base})", "",
              "| placement | share | trim | defence | " + " | ".join(ATTACKS) + " |",
              "|---" * (4 + len(ATTACKS)) + "|"]
        for p in placements:
            sh = vals(g, p, "mean", "sign_flip", "max_share")
            trims = [int(float(v)) for v in vals(g, p, "trimmed_mean", "sign_flip", "param")]
            for d in DEFENCES:
                L.append(f"| {p} | {np.mean(sh):.2f} ({max(sh):.2f}) | "
                         f"{','.join(map(str, trims))} | {d} | "
                         + " | ".join(acc_cell(g, p, d, a) for a in ATTACKS) + " |")
        L.append("")
    L += [
        "## Provenance", "",
        f"`nice -n 5 python analysis/byzantine_robustness.py`: {n_runs} runs, one torch "
        f"thread; their own times (the CSV's `seconds`) sum to {run_s:.0f} s. A row already "
        f"in the CSV is reused, so the rows were computed over several invocations (the "
        f"`clipped_adaptive` rows after the others, by code whose fixed-radius, trimmed-mean, "
        f"median and mean aggregation is unchanged); the last invocation took {total:.0f} s "
        f"(tau tuning {tune_s:.0f} s). Code version "
        f"`{rev}` (git rev-parse --short HEAD; topofl {tf.__version__}, code fingerprint "
        f"`{tf.figures.code_fingerprint()}`), torch {torch.__version__}, Python "
        f"{platform.python_version()}; machine: a 2-core shared VM, {cpu}. Per-run values: "
        "`analysis/byzantine_robustness.csv`.", ""]
    return "\n".join(L)


if __name__ == "__main__":
    main()
