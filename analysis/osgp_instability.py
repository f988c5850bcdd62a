"""Why OSGP is unstable in DFedPGP's Table 4 setting: a measurement.

OSGP (push-sum with one round of overlap) against SGP, in the setting of DFedPGP's Table 4 in
miniature: digits, 100 clients, pathological split with 2 classes per client, MLP(64),
``random_directed_push:k=10``, lr 0.1 decayed by 0.99 per round, weight decay 5e-3, momentum 0.9,
5 local epochs per round, batch 16, 30 rounds, seeds 0-2. Variants isolate the suspects:

* the one-round delay (OSGP vs SGP, with 5 local epochs and with 1 local step per round);
* the momentum kept across rounds (``restart_momentum=True`` zeroes it every round);

and every round records the push-sum weights (their minimum and mean over clients), since the
gradient taken at ``z = x / w`` and applied to ``x`` moves ``z`` by ``lr / w``.

Usage::

    python analysis/osgp_instability.py            # writes analysis/osgp_instability.md
    python analysis/osgp_instability.py --quick    # 1 seed, 6 rounds, prints only
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

import topofl as tf
from topofl.engine.protocol import Sent

HERE = Path(__file__).resolve().parent
BASE: dict[str, Any] = dict(lr=0.1, momentum=0.9, weight_decay=5e-3, decay=0.99,
                            local_epochs=5.0)
# label -> (algorithm, k, hyper-parameters over BASE)
VARIANTS: dict[str, tuple[str, int, dict[str, Any]]] = {
    "SGP": ("sgp", 10, {}),
    "OSGP": ("osgp", 10, {}),
    "OSGP, momentum restarted each round": ("osgp", 10, {"restart_momentum": True}),
    "SGP, 1 local step": ("sgp", 10, {"local_epochs": None, "local_steps": 1}),
    "OSGP, 1 local step": ("osgp", 10, {"local_epochs": None, "local_steps": 1}),
}


def _with_weight_records(algo: tf.engine.Algorithm) -> tf.engine.Algorithm:
    """The same algorithm, recording the push-sum weights after every communication."""
    inner = algo.communicate

    def communicate(state: Any, rnd: Any, env: Any) -> Sent:
        sent = inner(state, rnd, env)
        w = state.weight
        return Sent(sent.messages, sent.realized,
                    {"w_min": float(w.min()), "w_mean": float(w.mean()),
                     "z_absmax": float(state.own.z.abs().max())})

    return algo._replace(communicate=communicate)


def run_one(label: str, seed: int, rounds: int) -> dict[str, Any]:
    name, k, over = VARIANTS[label]
    hp = {**BASE, **over}
    data = tf.data.federate("digits", "pathological", 100, classes_per_client=2, seed=seed,
                            val=0.15)
    model = tf.models.build_model("mlp", data.input_shape, data.num_classes, seed=seed,
                                  hidden=(64,))
    algo = _with_weight_records(tf.algorithms.get_algorithm(name, **hp))
    topo = tf.topologies.random_directed(100, k, seed=seed, mode="push")
    cfg = tf.engine.RunConfig(rounds=rounds, seed=seed, batch_size=16, eval_every=1,
                              record_clients=False, eval_global=False, spectral=False,
                              run_id=label)
    rec = tf.engine.run(cfg, topo, algo, data, model).records
    acc = rec.series("test_acc_mean")[1]
    return {"label": label, "seed": seed, "acc": acc.tolist(),
            "w_min": rec.series("w_min")[1].tolist(), "w_mean": rec.series("w_mean")[1].tolist(),
            "z_absmax": rec.series("z_absmax")[1].tolist()}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true")
    p.add_argument("--out", type=Path, default=HERE / "out" / "osgp")
    p.add_argument("--report", type=Path, default=HERE / "osgp_instability.md")
    args = p.parse_args(argv)
    rounds, seeds = (6, [0]) if args.quick else (30, [0, 1, 2])
    args.out.mkdir(parents=True, exist_ok=True)
    t0 = time.time()
    results: dict[str, list[dict[str, Any]]] = {}
    for label in VARIANTS:
        for s in seeds:
            stem = label.replace(" ", "_").replace(",", "").replace("=", "")
            f = args.out / f"{stem}-s{s}-r{rounds}.json"
            if f.exists():
                r = json.loads(f.read_text())
            else:
                r = run_one(label, s, rounds)
                f.write_text(json.dumps(r))
            results.setdefault(label, []).append(r)
            print(f"{label} seed {s}: final {r['acc'][-1]:.3f}", file=sys.stderr)
    lines = [
        "| variant | final acc per seed | mean | min over rounds 5-30 of the mean acc | "
        "w after round 0 | min w (all rounds) | mean w, rounds 20-30 | max abs z, round 3 |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for label, rs in results.items():
        finals = [r["acc"][-1] for r in rs]
        curve = np.mean([r["acc"] for r in rs], axis=0)
        lines.append(
            f"| {label} | {', '.join(f'{a:.3f}' for a in finals)} | {np.mean(finals):.3f} | "
            f"{curve[4:].min():.3f} | {np.mean([r['w_mean'][0] for r in rs]):.3f} | "
            f"{min(min(r['w_min']) for r in rs):.3f} | "
            f"{np.mean([np.mean(r['w_mean'][19:]) for r in rs]):.3f} | "
            f"{np.mean([r['z_absmax'][min(2, rounds - 1)] for r in rs]):.2f} |")
    curves = ["| round | " + " | ".join(results) + " |", "|---" * (len(results) + 1) + "|"]
    for t in range(rounds):
        row = [f"{np.mean([r['acc'][t] for r in rs]):.3f}" for rs in results.values()]
        curves.append(f"| {t + 1} | " + " | ".join(row) + " |")
    report = (
        "# OSGP in DFedPGP's Table 4 setting: why it stalls\n\n"
        f"{__doc__.split('Usage::')[0].split(chr(10), 2)[2].strip()}\n\n"
        f"Generated by `python analysis/osgp_instability.py` on {time.strftime('%Y-%m-%d')} "
        f"({time.time() - t0:.0f} s on a shared CPU). Accuracy: every client's de-biased model "
        "z on its own test split, averaged over clients. w: the push-sum weights of the "
        "clients after each round's communication (the mass in flight excluded).\n\n"
        + "\n".join(lines) + "\n\n## Mean accuracy over seeds, per round\n\n"
        + "\n".join(curves) + "\n"
    )
    if not args.quick:
        old = args.report.read_text() if args.report.exists() else ""
        keep = old[old.index("## Reading"):] if "## Reading" in old else ""
        args.report.write_text(report + ("\n" + keep if keep else ""))
    print(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
