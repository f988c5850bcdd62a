"""What moves the last bits: the snapshot of the result code taken in environments that differ
in one field each (issue 60).

A certificate (``topofl.figures.certificates``) compares committed values bit for bit only where the
whole numeric environment that decides the bits matches (``topofl.workflow.provenance.BIT_FIELDS``),
and elsewhere within the tolerance ``topofl.figures.snapshot.ROUNDING``. This script measures both:
it takes the behaviour snapshot (``topofl.figures.snapshot.take``: 2 rounds of every algorithm case
in float64 and float32, every graph family's matrix and spectrum, every partition, the
stand-in datasets, every model's output) in a fresh interpreter per environment, each
differing from this machine's in one field,

- ``torch_capability``: ATen's kernels forced to ``ATEN_CPU_CAPABILITY=default``;
- ``mkl_cbwr``: MKL's compatible code path, ``MKL_CBWR=COMPATIBLE``;
- ``numpy_blas`` / ``scipy_blas``: OpenBLAS forced to another core type
  (``OPENBLAS_CORETYPE``, both libraries at once);
- ``numpy_simd``: numpy's dispatched SIMD targets off (``NPY_DISABLE_CPU_FEATURES``);
- ``blas_threads``: OpenBLAS on one thread (``OPENBLAS_NUM_THREADS=1``);
- ``numpy``, ``scipy``, ``networkx``: another release of each, installed with
  ``pip install --no-deps --target`` into a cache folder and put first on the path;
- ``threads``: torch on 2 threads instead of 1;

and compares each with this machine's (the base) value by value. It also compares the
certified values committed by other machines (``paper_figures/results/certified``) with the
same commit's snapshot re-run here: the differences between CPU vendors, generations and the
numpy/scipy those sessions had. Differences are relative with a floor of 1,
``|a - b| / max(1, |a|, |b|)`` (``topofl.figures.snapshot.compare``), in classes: float32 values
(the float32 runs and the models' outputs), float64 values (the rest), accuracies (every
``*acc*`` metric but a spread), and integers, strings and the structure (exact).

    python analysis/environment_bits.py [--numpy 2.2.6] [--scipy 1.15.3] [--networkx 3.4.2]
                                        [--coretype Sandybridge] [--no-machines]

writes ``analysis/environment_bits.json`` and ``analysis/environment_bits.md``.
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from topofl._utils.environment import differences, numeric_environment  # noqa: E402
from topofl.figures import certificates, commits, snapshot  # noqa: E402

CHILD = r"""
import json, sys
from topofl.figures.snapshot import take
from topofl._utils.environment import numeric_environment
snap = take(threads=int(sys.argv[1]))
with open(sys.argv[2], "w", encoding="utf-8") as fh:
    json.dump({"environment": numeric_environment(), "code": snap["code"],
               "values": snap["values"]}, fh)
"""
CLASSES = ("float32", "float64", "accuracy", "discrete", "exact")


def leaves(value: Any, path: str = "") -> Iterator[tuple[str, Any]]:
    """``(path, leaf)`` of a nested snapshot value, in a fixed order."""
    if isinstance(value, dict):
        for k in sorted(value):
            yield from leaves(value[k], f"{path}/{k}")
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from leaves(v, f"{path}[{i}]")
    else:
        yield path, value


def leaf_class(key: str, path: str, value: Any) -> str:
    """Which class a leaf's difference counts in (see the module docstring): the snapshot's
    own rule (``topofl.figures.snapshot.env_rtol``), accuracies apart."""
    if not isinstance(value, float):
        return "exact"
    if snapshot._is_accuracy(key, path):
        return "accuracy"
    tol = snapshot.env_rtol(key, path)
    return ("discrete" if tol is None
            else "float32" if tol == snapshot.ROUNDING["float32"] else "float64")


def difference(a: Any, b: Any) -> float:
    """The floored relative difference of two leaves (``inf`` for unequal non-floats)."""
    if isinstance(a, float) and isinstance(b, float):
        if math.isnan(a) or math.isnan(b):
            return 0.0 if math.isnan(a) and math.isnan(b) else math.inf
        return abs(a - b) / max(1.0, abs(a), abs(b))
    return 0.0 if a == b and type(a) is type(b) else math.inf


def compare(base: Mapping[str, Any], other: Mapping[str, Any]) -> dict[str, Any]:
    """Per class: the largest difference, where, and how many leaves moved; and the keys."""
    out: dict[str, Any] = {c: {"max": 0.0, "where": None, "moved": 0, "leaves": 0}
                           for c in CLASSES}
    moved_keys = []
    for key in sorted(set(base) & set(other)):
        la, lb = list(leaves(base[key])), list(leaves(other[key]))
        if [p for p, _ in la] != [p for p, _ in lb]:
            c = out["exact"]
            c.update(max=math.inf, where=key, moved=c["moved"] + 1)
            moved_keys.append(key)
            continue
        moved = False
        for (path, a), (_, b) in zip(la, lb):
            c = out[leaf_class(key, path, a)]
            c["leaves"] += 1
            d = difference(a, b)
            if d > 0:
                moved = True
                c["moved"] += 1
                if d > c["max"]:
                    c["max"], c["where"] = d, f"{key}{path}"
        if moved:
            moved_keys.append(key)
    return {"classes": out, "keys_moved": len(moved_keys),
            "keys": len(set(base) & set(other)), "moved": moved_keys}


def target(package: str, version: str, cache: Path) -> Path:
    """A folder holding ``package==version`` alone (pip ``--no-deps --target``), cached."""
    where = cache / f"{package}-{version}"
    if not (where / package).exists():
        subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
                        "--target", str(where), f"{package}=={version}"], check=True)
    return where


def take(threads: int = 1, env: Mapping[str, str] | None = None,
         path: Path | None = None) -> dict[str, Any]:
    """The snapshot and the numeric environment of a fresh interpreter."""
    environ = {k: v for k, v in os.environ.items()
               if k not in ("ATEN_CPU_CAPABILITY", "MKL_CBWR", "OPENBLAS_CORETYPE",
                            "NPY_DISABLE_CPU_FEATURES", "OPENBLAS_NUM_THREADS")}
    environ.update(env or {})
    environ["PYTHONPATH"] = os.pathsep.join([*([str(path)] if path else []), str(ROOT)])
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "snap.json"
        done = subprocess.run([sys.executable, "-c", CHILD, str(threads), str(out)],
                              env=environ, cwd=tmp, capture_output=True, text=True, check=False)
        if done.returncode:
            raise RuntimeError(done.stderr.strip().splitlines()[-1])
        got: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
    return got


def variations(args: argparse.Namespace, cache: Path) -> list[dict[str, Any]]:
    """The environments, each one field away from this machine's."""
    return [
        {"name": "torch_capability", "how": "ATEN_CPU_CAPABILITY=default",
         "env": {"ATEN_CPU_CAPABILITY": "default"}},
        {"name": "mkl_cbwr", "how": "MKL_CBWR=COMPATIBLE", "env": {"MKL_CBWR": "COMPATIBLE"}},
        {"name": "numpy_blas, scipy_blas", "how": f"OPENBLAS_CORETYPE={args.coretype}",
         "env": {"OPENBLAS_CORETYPE": args.coretype}},
        {"name": "numpy_simd", "how": f"NPY_DISABLE_CPU_FEATURES={args.simd}",
         "env": {"NPY_DISABLE_CPU_FEATURES": args.simd}},
        {"name": "blas_threads", "how": "OPENBLAS_NUM_THREADS=1",
         "env": {"OPENBLAS_NUM_THREADS": "1"}},
        {"name": "numpy", "how": f"numpy {args.numpy}",
         "path": target("numpy", args.numpy, cache)},
        {"name": "scipy", "how": f"scipy {args.scipy}",
         "path": target("scipy", args.scipy, cache)},
        {"name": "networkx", "how": f"networkx {args.networkx}",
         "path": target("networkx", args.networkx, cache)},
        {"name": "torch threads", "how": "2 torch threads (the snapshot's are 1)", "threads": 2},
    ]


def machines() -> list[dict[str, Any]]:
    """The certified values committed by other machines against their commit re-run here:
    the newest certificate of each CPU kind and model, as first committed (a certificate
    sealed again with this machine's environment keeps what it had as ``first``)."""
    results = ROOT / "paper_figures" / "results"
    newest: dict[tuple[str, str], tuple[dict[str, Any], dict[str, Any]]] = {}
    for cert in certificates.read(results, legacy=True):
        first = cert.get("first", cert if "environment" not in cert else None)
        if not first or "cpu" not in first:
            continue
        path = results / certificates.VALUES_DIR / f"{first['digest']}.json.gz"
        if not path.exists():
            continue
        env = {"torch": first.get("torch"), "cpu": first["cpu"],
               "cpu_model": first.get("cpu_model")}
        newest[(env["cpu"], str(env["cpu_model"]))] = (cert, env)
    rows = []
    for (cpu, model), (cert, env) in sorted(newest.items()):
        digest = (cert.get("first") or cert)["digest"]
        path = results / certificates.VALUES_DIR / f"{digest}.json.gz"
        theirs = json.loads(gzip.decompress(path.read_bytes()))
        t0 = time.perf_counter()
        here = commits.snapshot_of_commit(cert["from_commit"], cert["threads"])["values"]
        rows.append({"name": f"{model} ({cpu})", "commit": cert["from_commit"][:12],
                     "their environment": env, "seconds": round(time.perf_counter() - t0, 1),
                     **compare(theirs, here)})
    return rows


def fmt(x: float) -> str:
    return "0" if x == 0 else "moved" if math.isinf(x) else f"{x:.2g}"


def report(data: Mapping[str, Any]) -> str:
    base = data["base"]
    lines = [
        "# What moves the last bits: one environment field at a time",
        "",
        "`python analysis/environment_bits.py` (issue 60): the behaviour snapshot of the result "
        f"code ({base['keys']} values: 2 rounds of every algorithm case in float64 and "
        "float32, every graph family's matrix and spectrum, every partition, the stand-in "
        "datasets, every model's output) taken in a fresh interpreter per environment, each "
        "one field away from this machine's, and compared value by value with this machine's. "
        "Differences are relative with a floor of 1, `|a - b| / max(1, |a|, |b|)`; classes: "
        "float32 (float32 runs, models), float64 (float64 runs, graphs, spectra, partitions, "
        "data), accuracies (every `*acc*` metric of a run but a spread; any dtype) and exact "
        "(integers, counts, strings, the structure).",
        "",
        f"This machine: {data['machine']}; code `{data['code']}`; measured {data['date']}.",
        "",
        "| field changed | how | values moved | float32 max | float64 max | accuracies max "
        "| exact | fields that differ (numeric_environment) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row in [*data["variations"], *data["machines"]]:
        c = row["classes"]
        lines.append(
            f"| {row['name']} | {row.get('how', 'their certified values vs re-run here')} "
            f"| {row['keys_moved']} of {row['keys']} | {fmt(c['float32']['max'])} "
            f"| {fmt(c['float64']['max'])} | {fmt(c['accuracy']['max'])} "
            f"| {'equal' if c['exact']['moved'] == 0 else 'moved'} "
            f"| {'; '.join(row.get('differs', [])) or '-'} |")
    tol = data["tolerance"]
    lines += [
        "",
        "Where each largest difference is (`discrete`: the floats of "
        "`topofl.figures.snapshot.DISCRETE`, compared only within one environment):",
        "",
    ]
    for row in [*data["variations"], *data["machines"]]:
        worst = [f"{k} {fmt(v['max'])} at `{v['where']}`"
                 for k, v in row["classes"].items() if v["max"]]
        lines.append(f"- {row['name']}: " + ("; ".join(worst) or "no value moved"))
    lines += [
        "",
        "## What decides the bits",
        "",
        "Every field whose change moved a value above decides the bits, and "
        "`topofl.workflow.provenance.BIT_FIELDS` holds it. Fields measured to move nothing here "
        "(those rows with 0 values moved) are kept in `BIT_FIELDS` all the same where they "
        "may decide other code's bits (numpy's SIMD targets and release, networkx's "
        "generators): a field too many only sends a check to the tolerant comparison, a "
        "field too few makes a false \"edited\". `blas_threads` is informative: one OpenBLAS "
        "thread instead of two moved nothing here, and the count follows the machine's cores, "
        "which would send every check between two machines of different sizes to the "
        "tolerant comparison for nothing. torch's thread count decides the bits and is "
        "recorded beside the environment (a certificate's `threads`, a run's "
        "`torch_threads`). Python's release could not be varied here (torch's CPU wheel on "
        "this machine is for Python 3.11 only); it stays in `BIT_FIELDS`.",
        "",
        "## The tolerance",
        "",
        f"Largest measured, over every row above (the `discrete` class apart): float32 "
        f"{fmt(tol['measured']['float32'])}, float64 {fmt(tol['measured']['float64'])}, "
        f"accuracies {fmt(tol['measured']['accuracy'])}. The rule: the first of 1, 2 or 5 "
        f"times a power of ten at or above five times the largest measured, which gives "
        f"float32 {tol['suggested']['float32']:g} and float64 {tol['suggested']['float64']:g}; "
        f"`topofl.figures.snapshot.ROUNDING` is float32 {tol['rounding']['float32']:g}, float64 "
        f"{tol['rounding']['float64']:g}"
        + (" (the rule's)." if tol["rounding"] == tol["suggested"] else
           " (NOT the rule's: update it).")
        + " An accuracy moved by one test sample in 1,000 (1e-3) is 50x the float32 bound.",
        "",
    ]
    return "\n".join(lines) + "\n"


def suggested(measured: float) -> float:
    """The first of 1, 2 or 5 times a power of ten at or above five times ``measured``."""
    if measured <= 0:
        return 0.0
    exp = math.floor(math.log10(5 * measured))
    bound = min(c * 10.0 ** e for e in (exp, exp + 1) for c in (1, 2, 5)
                if c * 10.0 ** e >= 5 * measured * (1 - 1e-12))
    return float(f"{bound:.1g}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--numpy", default="2.2.6")
    parser.add_argument("--scipy", default="1.15.3")
    parser.add_argument("--networkx", default="3.4.2")
    parser.add_argument("--coretype", default="Sandybridge",
                        help="the OpenBLAS core type forced (OPENBLAS_CORETYPE)")
    parser.add_argument("--simd", default="X86_V3",
                        help="numpy's SIMD targets turned off (NPY_DISABLE_CPU_FEATURES)")
    parser.add_argument("--no-machines", action="store_true",
                        help="skip the committed values of other machines (a re-run each)")
    parser.add_argument("--cache", type=Path,
                        default=Path.home() / ".cache" / "topofl" / "environment_bits")
    parser.add_argument("--out", type=Path, default=ROOT / "analysis" / "environment_bits")
    args = parser.parse_args()
    t0 = time.perf_counter()
    here = numeric_environment()
    print("base ...", flush=True)
    base = take()
    rows = []
    for var in variations(args, args.cache):
        print(f"{var['name']}: {var['how']} ...", flush=True)
        snap = take(var.get("threads", 1), var.get("env"), var.get("path"))
        row = {k: v for k, v in var.items() if k in ("name", "how")}
        row["differs"] = differences(base["environment"], snap["environment"]) + (
            ["torch threads 1 vs 2"] if var.get("threads") else [])
        row.update(compare(base["values"], snap["values"]))
        rows.append(row)
    found = [] if args.no_machines else machines()
    for row in found:
        row["differs"] = differences(row["their environment"], base["environment"])
    measured = {c: max((r["classes"][c]["max"] for r in [*rows, *found]
                        if not math.isinf(r["classes"][c]["max"])), default=0.0)
                for c in ("float32", "float64", "accuracy")}
    data = {"machine": f"{here['cpu_model']} ({here['cpu_id']}, {here['cpu']})",
            "code": base["code"], "date": time.strftime("%Y-%m-%d"),
            "environment": base["environment"],
            "base": {"keys": len(base["values"])}, "variations": rows, "machines": found,
            "tolerance": {"measured": measured, "rounding": dict(snapshot.ROUNDING),
                          "suggested": {c: suggested(measured[c])
                                        for c in ("float32", "float64")}},
            "seconds": round(time.perf_counter() - t0, 1)}
    args.out.with_suffix(".json").write_text(json.dumps(data, indent=1, default=str) + "\n",
                                             encoding="utf-8")
    args.out.with_suffix(".md").write_text(report(data), encoding="utf-8")
    print(report(data))


if __name__ == "__main__":
    main()
