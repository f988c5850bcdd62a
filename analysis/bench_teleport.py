"""Teleportation's rounds at the scale of ``field_teleportation_fmnist``, this code against
another checkout's (``--before DIR``), in one run: the CPU seconds a round and whether the
records are the same, bit for bit.

Each case runs ``--rounds`` rounds of a config of ``paper_figures/configs/
field_teleportation_fmnist*.toml`` (Fashion-MNIST where Debian's package is installed, else
its stand-in ``mnist5k``; logistic regression, lr 0.02, batch 16, evaluation every 500 rounds
as the committed runs) in a fresh interpreter, one torch thread, alternating the two
checkouts, best of ``--repeat``. It reads the run's own ``wall_time`` record (the training
rounds and evaluations: what a result's time to regenerate adds up) and the child's
``time.process_time()`` around ``topofl.run`` (data loading included, the same in both), and
compares the two checkouts' records. Writes ``analysis/bench_teleport.md``.

Usage: ``python analysis/bench_teleport.py --before /tmp/wt_before [--rounds 1000]
[--repeat 2]``; without ``--before`` only this checkout is timed.
"""

from __future__ import annotations

import argparse
import os
import platform
import tempfile
import time
from pathlib import Path
from typing import Any

from _checkouts import record_rows, run_child  # beside this script

ROOT = Path(__file__).resolve().parents[1]

#: (algorithm, n): Teleportation at the result's three sizes and the D-SGD ring it is
#: compared with at the largest (a round of all n clients: what Teleportation is not).
CASES = [("teleport", 20), ("teleport", 80), ("teleport", 320), ("dsgd", 320)]

CHILD = r"""
import json, sys, time, torch
torch.set_num_threads(1)
import topofl
alg, n, rounds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
data, out = sys.argv[4], sys.argv[5]
kw = dict(data=data, partition="shards", partition_params={"shards_per_client": 1},
          model="logistic", lr=0.02, batch_size=16, rounds=rounds, eval_every=500,
          seed=0, record_clients=False, spectral=False, n_clients=n,
          records_path=out)
if alg == "teleport":
    kw.update(algorithm="teleport", k=4, graph="ring", sample_seed=0)
else:
    kw.update(algorithm="dsgd", topology="ring")
c = time.process_time()
topofl.run(**kw)
print(json.dumps({"cpu": time.process_time() - c, "code": topofl.figures.code_fingerprint()}))
"""


def _data() -> str:
    import topofl as tf

    try:
        tf.data.load("fashion_mnist")
        return "fashion_mnist"
    except Exception:  # noqa: BLE001  # the package is absent: the configs' stand-in
        return "mnist5k:seed=0"




def _once(code: Path, alg: str, n: int, rounds: int, data: str, out: Path) -> dict[str, Any]:
    return run_child(code, CHILD, [alg, str(n), str(rounds), data, str(out)], out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", type=Path, default=None)
    ap.add_argument("--rounds", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=2)
    args = ap.parse_args()
    data = _data()
    codes = [("after", ROOT)] + ([("before", args.before.resolve())] if args.before else [])
    best: dict[tuple[str, str, int], dict[str, Any]] = {}
    same: dict[tuple[str, int], bool] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for alg, n in CASES:
            for rep in range(args.repeat):
                paths = {}
                for name, code in (codes if rep % 2 == 0 else codes[::-1]):
                    out = Path(tmp) / f"{name}-{alg}-{n}-{rep}.jsonl"
                    r = _once(code, alg, n, args.rounds, data, out)
                    paths[name] = out
                    key = (name, alg, n)
                    if key not in best or r["wall_time"] < best[key]["wall_time"]:
                        best[key] = r
                    print(name, alg, n, rep, r, flush=True)
                if len(paths) == 2:
                    same[(alg, n)] = record_rows(paths["after"]) == record_rows(paths["before"])
    lines = [
        "# Teleportation's rounds: k rows of work, not n",
        "",
        f"`python analysis/bench_teleport.py --rounds {args.rounds} --repeat {args.repeat}"
        + (" --before DIR`" if args.before else "`") + f" on {platform.processor() or 'x86_64'} "
        f"({os.cpu_count()} cores, one torch thread), {time.strftime('%Y-%m-%d')}; data "
        f"`{data}`, logistic regression (7,850 parameters), batch 16, lr 0.02, evaluation every "
        f"500 rounds (the configs of `field_teleportation_fmnist`), {args.rounds} rounds a run, "
        f"best of {args.repeat}, the two checkouts alternating in one run.",
        "",
        "Training seconds are the run's `wall_time` record (the rounds, evaluations included: "
        "what a result's time to regenerate adds up); CPU seconds are the child process's "
        "around `topofl.run` (data loading included, the same in both).",
        "",
    ]
    if args.before:
        lines += [
            f"Code after: `{best[('after',) + CASES[0]]['code']}`; before: "
            f"`{best[('before',) + CASES[0]]['code']}`.",
            "",
            "| run | n | training s before | after | after / before | CPU s before | after "
            "| records equal, bit for bit |",
            "|---|---:|---:|---:|---:|---:|---:|---|",
        ]
        for alg, n in CASES:
            b, a = best[("before", alg, n)], best[("after", alg, n)]
            lines.append(
                f"| {alg} | {n} | {b['wall_time']:.2f} | {a['wall_time']:.2f} | "
                f"{a['wall_time'] / b['wall_time']:.2f} | {b['cpu']:.2f} | {a['cpu']:.2f} | "
                f"{'yes' if same[(alg, n)] else 'NO'} |")
    else:
        lines += ["| run | n | training s | CPU s |", "|---|---:|---:|---:|"]
        for alg, n in CASES:
            a = best[("after", alg, n)]
            lines.append(f"| {alg} | {n} | {a['wall_time']:.2f} | {a['cpu']:.2f} |")
    (ROOT / "analysis" / "bench_teleport.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
