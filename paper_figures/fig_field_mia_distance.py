"""Field claim: membership inference between nodes against their graph distance, on a ring and
on an expander, compared with the pairwise accountant's ordering (Muffliato, Cyffers, Even,
Bellet and Massoulie, NeurIPS 2022; membership inference against mixing: Touat et al., arXiv
2412.12837).

D-SGD without noise on real Fashion-MNIST: 16 clients each holding 100 training images (an IID
seeded subset of the official training set; each client's test split from the official test
set), topofl's MLP, Metropolis weights, step 0.1, 10 local steps of batch 20 a round. Every
evaluation runs the ``membership_attack`` setting (:mod:`topofl.engine.membership`): each
node's loss-threshold attack on every victim's 50 members and 50 held-out samples, averaged by
hop distance. The accountant's side is :func:`topofl.privacy.muffliato` at ``sigma = 1``.

Scales: ``--quick`` 6 rounds, one seed, 10 samples a victim; the default 300 rounds, seeds
0-5 (about 2 CPU minutes a run here).

    python paper_figures/fig_field_mia_distance.py [--quick] [--update-results]
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import numpy as np

import topofl as tf
from topofl import figures

NAME = "field_mia_distance"
N, PER_CLIENT = 16, 100
GRAPHS = {"ring": "ring (n = 16)", "expander": "random 4-regular (n = 16, seed 0)"}
SETTINGS: dict[str, Any] = dict(model="mlp", lr=0.1, local_steps=10, batch_size=20,
                                spectral=False, record_clients=False, progress=False)
#: the accountant's gossip steps read (the claim's range)
ACCOUNTANT_T = (10, 75, 300)


def scale(quick: bool) -> dict[str, Any]:
    """Rounds, evaluation interval, seeds and attack samples of a scale."""
    if quick:
        return {"rounds": 6, "eval_every": 3, "seeds": [0], "samples": 10}
    # seeds 3-5 declared after the 3-seed result (claims.toml's second look)
    return {"rounds": 300, "eval_every": 75, "seeds": [0, 1, 2, 3, 4, 5], "samples": 50}


def topology(graph: str) -> Any:
    """The claim's graphs (``tf.topologies``' weights: Metropolis on a regular graph)."""
    return (tf.topologies.ring(N) if graph == "ring"
            else tf.topologies.random_regular(N, 4, seed=0))


def dataset() -> tuple[Any, str]:
    """The 1,600 training images (a seeded subset, seed 0) and the official test set; the
    offline stand-in where the Fashion-MNIST files are absent."""
    try:
        ds, name = tf.data.load("fashion_mnist"), "fashion_mnist"
    except (FileNotFoundError, OSError, ValueError):
        ds, name = tf.data.load("mnist5k"), "mnist5k"  # the offline stand-in
    idx = np.sort(np.random.default_rng(0).choice(ds.x_train.shape[0], size=N * PER_CLIENT,
                                                  replace=False))
    small = dataclasses.replace(ds, x_train=ds.x_train[idx], y_train=ds.y_train[idx])
    return tf.data.federate(small, "iid", N, seed=0), name


def run(graph: str, seed: int, sc: dict[str, Any], data: Any, folder: Path,
        args: figures.FigureArgs) -> Any:
    """One run's records, read back from ``folder`` when a complete one is there (of this
    code or code certified equivalent to it: the stamp beside it names the code that ran
    it, which the result lists); the run's recorded wall time counts in the result's time to
    regenerate."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{graph}_s{seed}_r{sc['rounds']}_m{sc['samples']}.jsonl"
    stamp = path.with_suffix(".code")
    rec = None
    if path.exists() and stamp.exists() and (
            stamp.read_text(encoding="utf-8").strip() in figures.runs.current_codes()):
        try:
            rec = tf.records.load(path)
            if int(rec.series("test_acc_mean")[0][-1]) != sc["rounds"] - 1:
                rec = None
        except (KeyError, ValueError):
            rec = None
    if rec is None:
        path.unlink(missing_ok=True)  # killed midway or of other code: this script's cache
        stamp.write_text(figures.code_fingerprint() + "\n", encoding="utf-8")
        rec = tf.run("dsgd", topology(graph), data=data, rounds=sc["rounds"],
                     eval_every=sc["eval_every"], seed=seed, records_path=str(path),
                     membership_attack={"samples": sc["samples"]}, **SETTINGS).records
    args.run_codes.add(stamp.read_text(encoding="utf-8").strip())
    args.run_seconds += float(rec.series("wall_time")[1][-1])
    return rec


def far(rec: Any) -> int:
    """The largest hop distance recorded."""
    return max(int(k[len("mia_adv_d"):]) for k in rec.metrics if k.startswith("mia_adv_d"))


def at_end(recs: list[Any], metric: str) -> figures.OverSeeds:
    return figures.OverSeeds(tuple(float(r.series(metric)[1][-1]) for r in recs),
                             tuple(range(len(recs))))


def accountant() -> dict[str, dict[int, dict[int, float]]]:
    """Muffliato's mean pairwise loss by distance at each ``T`` of :data:`ACCOUNTANT_T`."""
    out: dict[str, dict[int, dict[int, float]]] = {}
    for graph in GRAPHS:
        out[graph] = {T: {d: v["mean"] for d, v in
                          tf.privacy.muffliato(topology(graph), 1.0, T).by_distance().items()}
                      for T in ACCOUNTANT_T}
    return out


def checks_of(recs: dict[str, list[Any]], acc: dict[str, Any], horizon: str,
              seeds: list[int]) -> list[figures.Check]:
    ring, exp = recs["ring"], recs["expander"]
    D_ring, D_exp = far(ring[0]), far(exp[0])
    out = []
    for kind, head in (("adv", True), ("auc", False)):
        m = figures.margin(NAME, "advantage" if kind == "adv" else "auc")
        word = "advantage" if kind == "adv" else "AUC"
        near, away = at_end(ring, f"mia_{kind}_d1"), at_end(ring, f"mia_{kind}_d{D_ring}")
        out.append(figures.above(
            f"ring: the mean {word} at distance 1 above distance {D_ring}", near - away,
            margin=m, horizon=horizon, headline=head))
        e_far = at_end(exp, f"mia_{kind}_d{D_exp}")
        out.append(figures.above(
            f"random 4-regular graph: the mean {word} at distance {D_exp} above the ring's at "
            f"distance {D_ring}", e_far - away, margin=m, horizon=horizon, headline=head))
    m = figures.margin(NAME, "advantage")
    for graph, rs in recs.items():
        out.append(figures.above(
            f"{GRAPHS[graph]}: the victim's own model's advantage above the other nodes' mean",
            at_end(rs, "mia_adv_own") - at_end(rs, "mia_adv_others"), margin=m,
            horizon=horizon))
    for T in ACCOUNTANT_T:
        r, e = acc["ring"][T], acc["expander"][T]
        out.append(figures.fact(
            f"accountant (muffliato, sigma 1, T = {T}): ring's loss at d = 1 above d = "
            f"{max(r)}", r[1] > r[max(r)], f"{r[1]:.3g} at d = 1, {r[max(r)]:.3g} at d = "
            f"{max(r)}"))
        out.append(figures.fact(
            f"accountant (muffliato, sigma 1, T = {T}): random 4-regular graph's loss at d = "
            f"{max(e)} above the ring's at d = {max(r)}", e[max(e)] > r[max(r)],
            f"{e[max(e)]:.3g} against {r[max(r)]:.3g}"))
    return out


def _mean_by_distance(rs: list[Any], kind: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    D = far(rs[0])
    vals = np.array([[float(r.series(f"mia_{kind}_d{d}")[1][-1]) for d in range(1, D + 1)]
                     for r in rs])
    return np.arange(1, D + 1), vals.mean(axis=0), vals


def _plot(recs: dict[str, list[Any]]) -> Any:
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4.8))
    colors = {"ring": "tab:blue", "expander": "tab:orange"}
    for graph, rs in recs.items():
        d, mean, vals = _mean_by_distance(rs, "adv")
        axes[0].errorbar(d, mean, yerr=np.clip([mean - vals.min(0), vals.max(0) - mean], 0,
                                               None),
                         marker="o", capsize=3, color=colors[graph], label=GRAPHS[graph])
        rounds = rs[0].series("mia_adv_own")[0] + 1
        for metric, style in (("mia_adv_d1", "-"), (f"mia_adv_d{far(rs[0])}", "--")):
            ys = np.mean([r.series(metric)[1] for r in rs], axis=0)
            axes[1].plot(rounds, ys, style, marker="o", ms=3, color=colors[graph],
                         label=f"{graph}, d = {metric.rsplit('d', 1)[1]}")
    axes[0].axhline(0, color="black", lw=0.8)
    axes[0].set_xlabel("hop distance between victim and attacker")
    axes[0].set_ylabel("attack advantage (TPR - FPR, held out)")
    axes[0].set_title("after the last round (mean over seeds; min-max)")
    axes[1].axhline(0, color="black", lw=0.8)
    axes[1].set_xlabel("round")
    axes[1].set_ylabel("attack advantage")
    axes[1].set_title("over rounds: nearest and farthest attackers")
    fig.tight_layout(rect=(0, 0.14, 1, 1))
    for ax, x in zip(axes, (0.27, 0.76)):  # below each panel: no legend covers the data
        handles, labels = ax.get_legend_handles_labels()
        fig.legend(handles, labels, loc="upper center", bbox_to_anchor=(x, 0.12), ncol=2,
                   fontsize=8, frameon=False)
    return fig


def _tables(recs: dict[str, list[Any]], acc: dict[str, Any], seeds: list[int]) -> dict[str, Any]:
    import pandas as pd

    rows = []
    for graph, rs in recs.items():
        for kind in ("adv", "auc"):
            d, mean, vals = _mean_by_distance(rs, kind)
            for j, dist in enumerate(d):
                rows.append({"graph": GRAPHS[graph], "attack": kind, "d": int(dist),
                             "mean": f"{mean[j]:.4f}",
                             "per seed": ", ".join(f"{v:.4f}" for v in vals[:, j])})
    acc_rows = [{"graph": GRAPHS[g], "T": T, **{f"d = {d}": f"{v:.3g}" for d, v in by.items()}}
                for g in GRAPHS for T, by in acc[g].items()]
    runs = [{"graph": GRAPHS[g], "seed": s, "final test_acc_mean":
             f"{float(r.series('test_acc_mean')[1][-1]):.4f}",
             "final train_loss": f"{float(r.series('train_loss')[1][-1]):.4f}",
             "own advantage": f"{float(r.series('mia_adv_own')[1][-1]):.4f}",
             "others' advantage": f"{float(r.series('mia_adv_others')[1][-1]):.4f}"}
            for g, rs in recs.items() for s, r in zip(seeds, rs)]
    return {"attack by distance after the last round": pd.DataFrame(rows),
            "accountant: muffliato's mean pairwise loss by distance (sigma 1)":
                pd.DataFrame(acc_rows),
            "runs": pd.DataFrame(runs)}


@figures.script
def main(args: figures.FigureArgs) -> figures.Result:
    import torch

    torch.set_num_threads(figures.THREADS)  # as the figures' sweeps run every run
    sc = scale(args.scale == "quick")
    data, data_name = dataset()
    folder = args.runs  # paper_figures/out/runs/<scale>/<name>/
    recs = {g: [run(g, s, sc, data, folder, args) for s in sc["seeds"]] for g in GRAPHS}
    wall = sum(float(r.series("wall_time")[1][-1]) for rs in recs.values() for r in rs)
    acc = accountant()
    finals = {g: [float(r.series("test_acc_mean")[1][-1]) for r in rs] for g, rs in recs.items()}
    horizon = (f"the attack is read after round {sc['rounds']}: the claim is about what a "
               f"run of that length leaks, not a limit")
    checks = checks_of(recs, acc, horizon, sc["seeds"])
    ring, exp = recs["ring"], recs["expander"]
    measured = (f"after {sc['rounds']} rounds, mean advantage: ring d = 1 "
                f"{at_end(ring, 'mia_adv_d1').mean:.3f}, d = {far(ring[0])} "
                f"{at_end(ring, f'mia_adv_d{far(ring[0])}').mean:.3f}; random 4-regular d = 1 "
                f"{at_end(exp, 'mia_adv_d1').mean:.3f}, d = {far(exp[0])} "
                f"{at_end(exp, f'mia_adv_d{far(exp[0])}').mean:.3f}")
    notes = [f"The runs took {wall:.0f} s here, their recorded wall time "
             f"({len(sc['seeds']) * 2} runs, each alone on one thread: a run with the attack "
             "does not stack).",
             "Victim u's 50 members and 50 non-members are drawn once (stream (0, u)) and "
             "attacked at every evaluation, so the curves over rounds are on fixed samples.",
             "Final mean test accuracy over seeds: " + "; ".join(
                 f"{GRAPHS[g]} {np.mean(v):.4f}" for g, v in finals.items()) + "."]
    return figures.Result(
        _plot(recs), measured, checks, _tables(recs, acc, sc["seeds"]), notes=notes,
        setting=[("data", data_name),
                 ("clients' data", f"{N} clients x {PER_CLIENT} training images (IID, a "
                                   "seeded subset of the official training set, seed 0), "
                                   "test splits from the official test set"),
                 ("model", "mlp"), ("model_params", "-"),
                 ("training", f"D-SGD, no noise, Metropolis weights, lr 0.1, 10 local "
                              f"steps of batch 20, {sc['rounds']} rounds"),
                 ("attack", f"membership_attack = {{samples = {sc['samples']}}}, every "
                            f"{sc['eval_every']} rounds; held-out advantage and AUC by hop "
                            "distance")],
        dataset=("Fashion-MNIST" if data_name == "fashion_mnist"
                 else "mnist5k (the offline stand-in: Fashion-MNIST absent)"),
        seeds=sc["seeds"], records=[r for rs in recs.values() for r in rs],
        paper_rounds=[scale(False)["rounds"]])  # the horizon declared before the runs


if __name__ == "__main__":
    raise SystemExit(main())
