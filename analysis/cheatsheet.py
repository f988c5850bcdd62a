"""Which graph should I use? A cheat sheet of every registered graph family (issue 35, item 5).

For every family of :data:`topofl.topologies.REGISTRY` (iterated, so a family registered later
appears on the next run) and two sizes, the script

* trains the algorithm the family's weights call for (the registry's ``stochastic`` field:
  doubly stochastic -> ``dsgd``, column-stochastic -> ``sgp`` (push-sum), row-stochastic ->
  ``el``, which averages what arrived) with logistic regression on the offline ``digits``
  data, under IID labels and under label skew (one class per client), over several seeds, with
  :func:`topofl.sweep.run_sweep` (runs of one algorithm stack into one batched pass);
* reads, from each run's records, the rounds and the bytes until the mean accuracy of the
  clients' models on the global test set first reaches a target
  (:meth:`~topofl.records.Records.rounds_to`, :meth:`~topofl.records.Records.bytes_to`); the
  target is a stated fraction of the complete graph's mean final accuracy at the same size and
  level;
* measures the graphs the runs used with :mod:`topofl.spectral` (spectral gap, the expected
  contraction of a random schedule, the effective number of neighbours, the neighbourhood
  heterogeneity under the skew, finite-time exact averaging);
* measures what each graph leaks at n = 32 (:func:`topofl.privacy.privacy_summary`: the
  pairwise privacy of noisy gossip averaging, exact and Muffliato's bound, and of a random
  walk), without training;
* writes ``analysis/cheatsheet.md`` (tables, and a "which graph when" section whose sentences
  are computed from the per-seed values: a comparison is stated only when a seed-paired 95 %
  test decides it by more than a practical margin, otherwise it is "inconclusive at this
  scale"), ``analysis/cheatsheet_runs.csv`` (the value of every run) and
  ``analysis/cheatsheet_graphs.csv`` (the graph metrics of every run's graph) and
  ``analysis/cheatsheet_privacy.csv`` (the privacy numbers of every family and seed).

Usage::

    python analysis/cheatsheet.py            # default scale: n = 16 and 64, 3 seeds
    python analysis/cheatsheet.py --quick    # n = 10, 2 seeds, a few rounds (the test's scale)

Records go to ``analysis/out/cheatsheet/<scale>/`` (ignored by git) and are reused when
complete: running the script again only rewrites the page (``--rerun`` trains again).
"""

from __future__ import annotations

import argparse
import csv
import functools
import json
import math
import os
import platform
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

import topofl as tf
from topofl._utils.markdown import table as md_table
from topofl.study.pairs import paired_difference
from topofl.topologies import REGISTRY, GraphFamily

HERE = Path(__file__).resolve().parent

# ------------------------------------------------------------------------------ the setting

DATA = "digits"
MODEL = "logistic"
LR = 0.5
BATCH = 16
METRIC = "global_acc_mean"
#: label level -> (partition, partition_params, words)
LEVELS: dict[str, tuple[str, dict[str, Any], str]] = {
    "iid": ("iid", {}, "IID labels"),
    "skew": ("pathological", {"classes_per_client": 1}, "label skew (one class per client)"),
}
#: the algorithm each kind of mixing matrix calls for (the registry's ``stochastic`` field)
ALGORITHM_FOR = {"doubly": "dsgd", "column": "sgp", "row": "el"}
REFERENCE = "complete"  # the target is a fraction of what this family reaches
TARGET_FRACTION = 0.9
#: practical margin of a comparison of bytes to target: this fraction of the leader's mean
BYTES_MARGIN = 0.10
DEGREE = 4  # neighbours of the families whose degree is a parameter (the torus's degree)
PEERS = 3  # k of k_peer_exponential and base_graph: base k + 1 = 4 (16 and 64 are powers)


@dataclass(frozen=True)
class Scale:
    """Sizes, seeds and rounds of one scale of the cheat sheet."""

    sizes: tuple[int, ...]
    seeds: tuple[int, ...]
    rounds: int
    eval_every: int
    privacy_n: int = 32


SCALES = {
    "default": Scale(sizes=(16, 64), seeds=(0, 1, 2), rounds=200, eval_every=5),
    # 10 clients: the fewest that hold every digit with one class per client; 2 seeds: the
    # fewest a paired comparison takes (a smoke scale: its page states no finding)
    "quick": Scale(sizes=(10,), seeds=(0, 1), rounds=4, eval_every=2, privacy_n=10),
}

#: the privacy section's protocol: noise multiplier, gossip steps, delta (topofl.privacy)
PRIVACY_SIGMA, PRIVACY_ROUNDS, PRIVACY_DELTA = 1.0, 10, 1e-5


# ------------------------------------------------------------------------------ parameters


def _side(n: int) -> int:
    """The largest divisor of ``n`` not above its square root (rows of a near-square torus)."""
    return max(d for d in range(1, math.isqrt(n) + 1) if n % d == 0)


def _even_degree(n: int) -> int:
    """:data:`DEGREE`, lowered so that ``n * d`` is even and ``d < n``."""
    d = min(DEGREE, n - 1)
    return d if (n * d) % 2 == 0 else d - 1


#: family -> its spec parameters at ``n`` nodes with ``classes`` labels (see :func:`spec_of`)
PARAMS: dict[str, Callable[[int, int], dict[str, Any]]] = {
    "ring": lambda n, c: {},
    "torus": lambda n, c: {"rows": _side(n), "cols": n // _side(n)},
    "grid": lambda n, c: {"rows": _side(n), "cols": n // _side(n)},
    "complete": lambda n, c: {},
    "star": lambda n, c: {},
    "circulant": lambda n, c: {"offsets": ";".join(
        str(o) for o in dict.fromkeys((1, _side(n))))},
    "dcliques": lambda n, c: {"clique_size": min(c, n)},
    "connect_cliques": lambda n, c: {"n": n, "clique_size": min(c, n)},
    "random_directed": lambda n, c: {"k": min(DEGREE, n - 1)},
    "random_directed_push": lambda n, c: {"k": min(DEGREE, n - 1)},
    "random_matching": lambda n, c: {},
    "partite_match": lambda n, c: {"k": min(PEERS, n - 1)},
    "random_undirected": lambda n, c: {"k": _even_degree(n)},
    "el_oracle": lambda n, c: {"s": _even_degree(n)},
    "el_local": lambda n, c: {"s": min(DEGREE, n - 1)},
    "exponential": lambda n, c: {},
    "undirected_exponential": lambda n, c: {},
    "one_peer_exponential": lambda n, c: {},
    "k_peer_exponential": lambda n, c: {"k": min(PEERS, n - 1)},
    "base_graph": lambda n, c: {"k": min(PEERS, n - 1)},
    "stl_fw": lambda n, c: {"budget": min(DEGREE, n - 1)},
    "erdos_renyi": lambda n, c: {"p": round(min(1.0, DEGREE / (n - 1)), 4)},
    "random_regular": lambda n, c: {"d": _even_degree(n)},
    "watts_strogatz": lambda n, c: {"k": _even_degree(n) // 2 * 2, "p": 0.1},
    "teleportation": lambda n, c: {"k": math.isqrt(n - 1) + 1, "graph": "ring"},
}

PARAM_NOTES = (
    f"families with a degree take {DEGREE} neighbours (the torus's degree; lowered where "
    f"n x degree must be even); torus, grid and circulant are near-square "
    f"(rows x cols, offsets 1 and rows); D-Cliques and random cliques have cliques of the "
    f"number of classes; k-peer exponential, Base-(k+1) and the (k+1)-partite random match "
    f"take k = {PEERS} (base 4, groups of 4); "
    f"Erdős-Rényi has p = {DEGREE}/(n-1) (expected degree {DEGREE}); Watts-Strogatz rewires "
    f"with p = 0.1; Teleportation activates ceil(sqrt(n)) nodes a round, on a ring"
)


def spec_of(family: GraphFamily, n: int, classes: int) -> tuple[str | None, str]:
    """The spec string of ``family`` at ``n`` nodes, or ``None`` and why it cannot run.

    Families of :data:`PARAMS` take the parameters it gives; another family (one registered
    after this script was written) takes its registry example (``family.example(n, rng)``,
    seed 0) when every value is a number or a string, else it is listed as not run.

    Parameters
    ----------
    family : GraphFamily
    n : int
        Number of clients.
    classes : int
        Number of labels of the data (clique sizes).

    Returns
    -------
    (spec, note)
        ``spec`` is ``None`` when the family is not run; ``note`` then says why.

    Examples
    --------
    >>> spec_of(REGISTRY["torus"], 16, 10)
    ('torus:rows=4,cols=4', '')
    """
    if family.name in PARAMS:
        kwargs = PARAMS[family.name](n, classes)
        note = ""
    else:
        example = family.example(n, np.random.default_rng(0))
        if example is None:
            return None, f"the registry has no example of {family.name} on {n} nodes"
        kwargs = dict(example)
        if family.from_labels is not None:
            kwargs.pop("label_distributions", None)  # the data's labels decide
        kwargs.pop("n", None)
        bad = [k for k, v in kwargs.items()
               if isinstance(v, bool) or not isinstance(v, (int, float, str))]
        if bad:
            return None, (f"no spec parameters known for {family.name} (its example's "
                          f"{', '.join(bad)} cannot be written in a spec): add it to PARAMS "
                          "in analysis/cheatsheet.py")
        note = "parameters of the registry's example (seed 0)"
    spec = family.name + (":" + ",".join(f"{k}={v}" for k, v in kwargs.items())
                          if kwargs else "")
    try:
        tf.topologies.check_spec(spec)
    except ValueError as exc:
        return None, f"spec {spec!r} is refused: {exc}"
    return spec, note


# ------------------------------------------------------------------------------ runs


@dataclass
class Cell:
    """One family at one size: its spec and algorithm, and why it was not run (if so)."""

    family: str
    n: int
    spec: str | None
    algorithm: str | None
    note: str = ""


def plan_cells(scale: Scale, classes: int,
               registry: Mapping[str, GraphFamily] = REGISTRY) -> list[Cell]:
    """Every registered family at every size of ``scale``, in the registry's order."""
    cells = []
    for n in scale.sizes:
        for name, family in registry.items():
            algorithm = ALGORITHM_FOR.get(family.stochastic)
            spec, note = spec_of(family, n, classes)
            if algorithm is None:
                spec, note = None, f"no algorithm for {family.stochastic!r} weights"
            cells.append(Cell(name, n, spec, algorithm if spec else None, note))
    return cells


def sweep_config(level: str, n: int, algorithm: str, specs: Sequence[str],
                 scale: Scale) -> dict[str, Any]:
    """The ``run_sweep`` config of one level, size and algorithm (its specs x the seeds)."""
    partition, params, _ = LEVELS[level]
    cfg: dict[str, Any] = {
        "algorithm": algorithm, "data": DATA, "model": MODEL, "partition": partition,
        "n_clients": n, "rounds": scale.rounds, "lr": LR, "batch_size": BATCH,
        "eval_every": scale.eval_every, "record_clients": False, "spectral": False,
        "sweep": {"topology": list(specs), "seed": list(scale.seeds)},
    }
    if params:
        cfg["partition_params"] = dict(params)
    return cfg


@dataclass
class Run:
    """One run's records file and its outcome, keyed by ``(level, family, n, seed)``."""

    level: str
    family: str
    n: int
    seed: int
    spec: str
    algorithm: str
    path: Path
    status: str
    records: Any = None
    values: dict[str, Any] = field(default_factory=dict)


def run_cells(cells: Sequence[Cell], scale: Scale, out: Path, *, rerun: bool = False,
              say: Callable[[str], None] = print) -> list[Run]:
    """Train every run the cells need (one sweep per level, size and algorithm; finished
    runs are reused) and load their records."""
    runs: list[Run] = []
    for level in LEVELS:
        for n in scale.sizes:
            groups: dict[str, list[Cell]] = {}
            for c in cells:
                if c.n == n and c.spec is not None and c.algorithm is not None:
                    groups.setdefault(c.algorithm, []).append(c)
            for algorithm, group in groups.items():
                cfg = sweep_config(level, n, algorithm, [c.spec for c in group if c.spec],
                                   scale)
                where = out / f"{level}-n{n}-{algorithm}"
                planned = tf.sweep.plan(cfg)
                if rerun:  # run_sweep(overwrite=True) skips finished runs that stack
                    for r in planned:
                        tf.sweep.discard(where, r.name)
                before = sum(tf.sweep.run_files(where, r.name).done.exists() for r in planned)
                t0 = time.perf_counter()
                outcomes = tf.sweep.run_sweep(cfg, where, progress=False,
                                              echo=lambda line: None,
                                              command="python analysis/cheatsheet.py")
                status = {o.name: o.status for o in outcomes}
                failed = [f"{o.name}: {o.message}" for o in outcomes if o.status == "failed"]
                if failed:
                    raise RuntimeError(f"{len(failed)} run(s) of {where} failed (run the script "
                                       "again to retry them): " + "; ".join(failed[:3]))
                took = time.perf_counter() - t0
                timing = where / "cheatsheet_seconds.json"  # the training time of the sweep
                if before < len(planned) or not timing.exists():
                    timing.write_text(json.dumps({"seconds": took, "runs": len(outcomes)}),
                                      encoding="utf-8")
                say(f"{level} n={n} {algorithm}: {len(outcomes)} runs, {took:.0f} s")
                by_spec = {c.spec: c for c in group}
                for r in planned:
                    spec, seed = r.values["topology"], int(r.values["seed"])
                    path = tf.sweep.run_files(where, r.name).records
                    st = status.get(r.name, "missing")
                    if st == "skipped":
                        st = "complete"
                    rec = tf.records.load(path) if path.exists() else None
                    runs.append(Run(level, by_spec[spec].family, n, seed, spec, algorithm,
                                    path, st, rec))
    return runs


def targets(runs: Sequence[Run], fraction: float) -> dict[tuple[str, int], float]:
    """``fraction`` x the reference family's mean final accuracy, per level and size."""
    out = {}
    for level in LEVELS:
        for n in sorted({r.n for r in runs}):
            finals = [r.records.final(METRIC) for r in runs
                      if r.level == level and r.n == n and r.family == REFERENCE
                      and r.records is not None]
            if not finals:
                raise ValueError(f"no run of {REFERENCE!r} at {level}, n={n}: the target is a "
                                 f"fraction of its final accuracy")
            out[(level, n)] = fraction * float(np.mean(finals))
    return out


def measure(run: Run, target: float) -> dict[str, Any]:
    """The values of one run: final and best accuracy (the best: the highest evaluation),
    rounds and bytes to ``target`` (``None``: not reached), messages per node and round, bytes
    per message (the ledger's running totals at the last round)."""
    rec = run.records
    if rec is None:
        return {"final": math.nan, "best": math.nan, "rounds_to_target": None,
                "bytes_to_target": None, "messages_per_node_round": math.nan,
                "bytes_per_message": math.nan, "rounds_run": 0}
    rounds, messages = rec.series("messages")
    done = int(rounds.max()) + 1
    sent = float(messages[-1])
    return {
        "final": rec.final(METRIC),
        "best": rec.best(METRIC),
        "rounds_to_target": rec.rounds_to(target, METRIC),
        "bytes_to_target": rec.bytes_to(target, METRIC),
        "messages_per_node_round": sent / (done * run.n),
        "bytes_per_message": rec.final("bytes") / sent if sent else math.nan,
        "rounds_run": done,
    }


# ------------------------------------------------------------------------------ graph metrics

@functools.cache
def _label_counts(level: str, n: int, seed: int) -> np.ndarray:
    """The clients' label counts of a run's data, ``(n, classes)`` (as the run splits it)."""
    partition, params, _ = LEVELS[level]
    data = tf.data.federate(DATA, partition, n, seed=seed, **params)
    return np.asarray(data.label_distributions, dtype=np.float64)


GRAPH_METRICS = ("spectral_gap", "effective_neighbors", "effective_neighbors_method",
                 "neighborhood_heterogeneity", "finite_time_consensus")


def graph_metrics(spec: str, n: int, seed: int, level: str = "skew") -> dict[str, Any]:
    """The :mod:`topofl.spectral` metrics of the graph a run of ``spec`` used: the graph
    :func:`topofl.topologies.build` makes from the run's seed and its data's label counts
    (the neighbourhood heterogeneity is measured against those label distributions).

    Returns the keys of :data:`GRAPH_METRICS` (:func:`topofl.spectral.summary`),
    ``contraction``: :func:`topofl.spectral.expected_mixing`'s ``consensus_contraction``
    for a random schedule with a closed form, else ``None``; for a graph of cliques
    (``groups``) ``clique_sizes`` and ``clique_classes`` (the classes each clique's clients
    hold, of ``classes``), else ``None``.
    """
    counts = _label_counts(level, n, seed)
    graph = tf.topologies.build(spec, seed=seed, n=n, label_distributions=counts)
    shares = counts / counts.sum(axis=1, keepdims=True)  # each client's label distribution
    out = tf.spectral.summary(graph, label_distributions=shares, metrics=GRAPH_METRICS)
    out["contraction"] = None
    if isinstance(graph, tf.TimeVarying):
        try:
            out["contraction"] = tf.spectral.expected_mixing(graph).consensus_contraction
        except ValueError:  # no closed form for this schedule
            pass
    out["time_varying"] = isinstance(graph, tf.TimeVarying)
    groups = getattr(graph, "groups", None) or ()
    out["clique_sizes"] = [len(g) for g in groups] or None
    out["clique_classes"] = [int((counts[list(g)].sum(axis=0) > 0).sum()) for g in groups] or None
    out["classes"] = int(counts.shape[1])
    return out


def privacy_rows(scale: Scale, classes: int,
                 registry: Mapping[str, GraphFamily] = REGISTRY) -> list[dict[str, Any]]:
    """:func:`topofl.privacy.privacy_summary` of every family at ``scale.privacy_n`` nodes and
    each seed (the graph built as the label-skew runs build theirs); a family without a spec at
    that size gets one row with its ``note``."""
    n = scale.privacy_n
    rows: list[dict[str, Any]] = []
    for name, family in registry.items():
        spec, note = spec_of(family, n, classes)
        if spec is None:
            rows.append({"family": name, "n": n, "seed": None, "spec": None, "note": note})
            continue
        for seed in scale.seeds:
            counts = _label_counts("skew", n, seed)
            graph = tf.topologies.build(spec, seed=seed, n=n, label_distributions=counts)
            rows.append({"family": name, "n": n, "seed": seed, "spec": spec, "note": "",
                         **tf.privacy.privacy_summary(graph, sigma=PRIVACY_SIGMA,
                                                      rounds=PRIVACY_ROUNDS,
                                                      delta=PRIVACY_DELTA)})
    return rows


def privacy_section(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """The page's "What each graph leaks" section: one line per family, means over seeds."""
    keys = tf.privacy.PRIVACY_KEYS
    n = rows[0]["n"] if rows else 0
    doc = [
        f"## What each graph leaks (n = {n})",
        "",
        f"Pairwise privacy (`topofl.privacy`): the epsilon at delta = {PRIVACY_DELTA:g} from one "
        f"node's data to another node's view, when every node adds Gaussian noise of multiplier "
        f"sigma = {PRIVACY_SIGMA:g} to its value once and the graph then averages for "
        f"{PRIVACY_ROUNDS} gossip steps (Muffliato's protocol). *gossip*: exact "
        "(`gossip_linear`, the view as a linear Gaussian system; at most the local level "
        f"{tf.privacy.gdp_epsilon(1 / PRIVACY_SIGMA, PRIVACY_DELTA):.3f}, reached once the "
        "view spans every node), max and mean over pairs, mean between neighbours and between "
        "the others (a neighbour in any round read); *muffliato*: that paper's bound "
        "(`muffliato`), mean over pairs: below the exact value at few steps, far above it "
        f"later; *walk*: a random walk of {PRIVACY_ROUNDS} x n steps (`random_walk_rdp`, "
        "Theorem 3 of arXiv 2402.07471), mean over pairs, for a static symmetric graph. Means "
        "over the seeds' graphs; – : the accountant does not apply (push-sum's weights, a "
        "time-varying or asymmetric walk) or no other pairs. Lower is more private.",
        "",
    ]
    table = []
    for family in dict.fromkeys(r["family"] for r in rows):
        mine = [r for r in rows if r["family"] == family]
        if mine[0]["spec"] is None:
            table.append([f"`{family}`", f"not built: {mine[0]['note']}"] + ["–"] * len(keys))
            continue
        table.append([f"`{family}`", f"`{mine[0]['spec']}`"]
                     + [_num(_mean_of([r[k] for r in mine if r[k] is not None])
                             if all(r[k] is not None for r in mine) else None, ".3f")
                        for k in keys])
    doc += [md_table(["family", "spec", "gossip max", "gossip mean", "gossip neighbours",
                      "gossip others", "muffliato mean", "walk mean"], table), ""]
    return doc


# ------------------------------------------------------------------------------ formatting


def _mean_std(values: Sequence[float]) -> tuple[float, float]:
    v = np.asarray(values, dtype=np.float64)
    return float(v.mean()), float(v.std(ddof=1)) if v.size > 1 else math.nan


def _sig(x: float, digits: int = 3) -> str:
    """``x`` with ``digits`` significant digits (no exponent for everyday magnitudes)."""
    if x == 0 or not math.isfinite(x):
        return f"{x:g}"
    return f"{x:.{max(0, digits - 1 - math.floor(math.log10(abs(x))))}f}"


def reach_text(values: Sequence[float | None], unit: float = 1.0, digits: int = 3) -> str:
    """``mean ± std`` over seeds (divided by ``unit``; the std to the mean's decimals) when
    every seed reached the target, else ``not reached`` with how many seeds did.

    Examples
    --------
    >>> reach_text([20, 30, 25], digits=2), reach_text([20, None, 25]), reach_text([None])
    ('25 ± 5', 'not reached (2/3 seeds)', 'not reached')
    """
    got = [v for v in values if v is not None]
    if len(got) < len(values) or not got:
        return "not reached" + (f" ({len(got)}/{len(values)} seeds)" if got else "")
    m, s = _mean_std([v / unit for v in got])
    mean = _sig(m, digits)
    if not math.isfinite(s):
        return mean
    decimals = len(mean.split(".")[1]) if "." in mean else 0
    return f"{mean} ± {s:.{decimals}f}"


def _num(x: Any, fmt: str = ".3f") -> str:
    return "–" if x is None or (isinstance(x, float) and math.isnan(x)) else format(x, fmt)


def _mean_of(values: Sequence[float]) -> float | None:
    vals = [v for v in values if math.isfinite(v)]
    return float(np.mean(vals)) if vals else None


def _mean_metric(rows: Sequence[Mapping[str, Any]], key: str) -> float | None:
    vals = [r[key] for r in rows]
    if any(v is None for v in vals) or not vals:
        return None
    return float(np.mean(vals))


# ------------------------------------------------------------------------------ which graph when


@dataclass(frozen=True)
class Ranking:
    """Families ranked by a cost to target at one level and size, with the seed-paired
    comparisons of the cheapest with each other family."""

    cost: str
    order: list[tuple[str, float]]  # (family, mean) of the families that reached in every seed
    ahead_of: list[str]  # decided: the leader is cheaper by more than the margin
    undecided: list[str]  # inconclusive at this scale
    never: list[str]  # reached by no seed
    partly: list[str]  # reached by some seeds only
    why: dict[str, str] = field(default_factory=dict)  # undecided family -> the reason


def rank(per_family: Mapping[str, Sequence[float | None]], cost: str,
         margin: Callable[[float], float]) -> Ranking:
    """Rank families by their mean cost over seeds (families that reached in every seed) and
    compare the cheapest with each other family seed by seed.

    Parameters
    ----------
    per_family : mapping family -> per-seed costs
        Aligned by seed; ``None`` where a seed never reached the target.
    cost : str
        ``"rounds"`` or ``"bytes"`` (names the ranking).
    margin : callable
        The practical margin of a comparison, given the leader's mean.

    Notes
    -----
    "The leader is cheaper than B" is stated when :func:`topofl.study.pairs.paired_difference`
    gives ``"A ahead"`` (one-sided at 2.5 % each way: a paired t, or a sign test when B missed
    the target in a seed) and B's mean excess cost over the seeds where B reached the target
    is at least the margin (B reaching it in no seed counts as above the margin); otherwise
    the pair is inconclusive at this scale.
    """
    full = {f: [float(v) for v in vals if v is not None] for f, vals in per_family.items()
            if vals and all(v is not None for v in vals)}
    order = sorted(((f, float(np.mean(v))) for f, v in full.items()), key=lambda t: t[1])
    never = [f for f, vals in per_family.items() if vals and all(v is None for v in vals)]
    partly = [f for f, vals in per_family.items()
              if f not in full and f not in never and vals]
    ahead: list[str] = []
    undecided: list[str] = []
    why: dict[str, str] = {}
    if order:
        leader, best = order[0]
        a = [math.inf if v is None else float(v) for v in per_family[leader]]
        for f, vals in per_family.items():
            if f == leader or f in never or not vals:
                continue
            b = [math.inf if v is None else float(v) for v in vals]
            r = paired_difference(a, b, higher_is_better=False)
            both = [y - x for x, y in zip(a, b, strict=True) if math.isfinite(y)]
            diff = float(np.mean(both)) if both else math.inf
            if r["verdict"] == "A ahead" and diff >= margin(best):
                ahead.append(f)
                continue
            undecided.append(f)
            if r["verdict"] == "A ahead" or r["verdict"] == "equal in every seed":
                why[f] = "within the margin"
            elif r["test"] == "sign (no spread)":
                why[f] = (f"the same difference in every seed: a sign test, which "
                          f"{r['n_pairs']} seeds cannot pass at 95 %")
            elif r["test"] == "sign":
                why[f] = "a seed missed the target: a sign test over the seeds"
            else:
                why[f] = "the seeds' spread covers the difference"
    return Ranking(cost, order, ahead, undecided, never, partly, why)


def _names(fams: Iterable[str]) -> str:
    items = [f"`{f}`" for f in fams]
    return ", ".join(items) if items else "none"


def ranking_text(r: Ranking, unit: str, scale_unit: float, digits: int = 3, *,
                 target: float | None = None, rounds: int | None = None,
                 best: Mapping[str, float] | None = None,
                 why: Mapping[str, str] | None = None) -> list[str]:
    """The sentences of one ranking (every number in them comes from ``r`` and the keywords):
    a family that never reached the target is named with the target, the rounds run, the best
    accuracy it reached (``best``: family -> mean over seeds of each seed's best evaluation)
    and what else explains it (``why``: family -> a clause)."""
    if not r.order:
        return [f"- **{r.cost} to target**: no family reached the target in every seed."]
    leader, lead = r.order[0]
    lines = [f"- **Fewest {r.cost} to target: `{leader}`** ({_sig(lead / scale_unit, digits)} "
             f"{unit}, mean over seeds). Ranked: "
             + ", ".join(f"`{f}` {_sig(m / scale_unit, digits)}" for f, m in r.order) + "."]
    if r.ahead_of:
        lines.append(f"  - `{leader}` needs fewer {r.cost} than {_names(r.ahead_of)} "
                     "(seed-paired test at 95 %, difference above the margin).")
    if r.undecided:
        reasons: dict[str, list[str]] = {}
        for f in r.undecided:
            reasons.setdefault(r.why.get(f, "not decided"), []).append(f)
        lines.append(f"  - Against {_names(r.undecided)}: inconclusive at this scale ("
                     + "; ".join(f"{_names(fs)}: {w}" for w, fs in reasons.items()) + ").")
    if r.partly:
        lines.append(f"  - Reached the target in some seeds only: {_names(r.partly)}.")
    if r.never:
        lines.append(never_text(r.never, target=target, rounds=rounds, best=best, why=why))
    return lines


def never_text(never: Sequence[str], *, target: float | None = None,
               rounds: int | None = None, best: Mapping[str, float] | None = None,
               why: Mapping[str, str] | None = None) -> str:
    """The sentence on the families no seed brought to the target: the target, the rounds
    run, each family's best accuracy (mean over seeds of each seed's best evaluation) and why
    (``why``), where known.

    Examples
    --------
    >>> print(never_text(["ring"], target=0.853, rounds=200, best={"ring": 0.8412}))
    ... # doctest: +NORMALIZE_WHITESPACE
      - Never reached the target (0.853) within the 200 rounds run; the best accuracy each
      reached (mean over seeds of each seed's best evaluation): `ring` 0.841.
    """
    head = "  - Never reached the target" + ("" if target is None else f" ({target:.3f})")
    head += (" within the rounds run" if rounds is None else f" within the {rounds} rounds run")
    if best is None:
        return f"{head}: {_names(never)}."
    parts = []
    for f in never:
        b = best.get(f, math.nan)
        part = f"`{f}` " + (f"{b:.3f}" if math.isfinite(b) else "–")
        if why and f in why:
            part += f" ({why[f]})"
        parts.append(part)
    return (f"{head}; the best accuracy each reached (mean over seeds of each seed's best "
            f"evaluation): " + ", ".join(parts) + ".")


#: What a family's paper pairs it with that this page does not (it trains every family with
#: the algorithm its weights call for, :data:`ALGORITHM_FOR`, at one setting).
PAPER_SETTING = {
    "dcliques": "its paper trains it with Clique Averaging (`dsgd` with `clique_averaging = "
                "true`), on cliques that each hold every class; here plain `dsgd`",
}


def cliques_text(graphs: Sequence[Mapping[str, Any]]) -> str | None:
    """The cliques of a family's graphs under the label skew and the classes each holds
    (``None`` for a graph without cliques), e.g. ``cliques of 8, 8 clients holding 8, 8 of the
    10 classes: no clique holds every class``; the seeds' graphs, when they differ, by seed.

    Examples
    --------
    >>> cliques_text([{"clique_sizes": [8, 8], "clique_classes": [8, 8], "classes": 10}])
    'cliques of 8, 8 clients holding 8, 8 of the 10 classes: no clique holds every class'
    """
    found = {(tuple(g["clique_sizes"]), tuple(g["clique_classes"]), g["classes"])
             for g in graphs if g.get("clique_sizes")}
    if not found:
        return None
    texts = []
    for sizes, classes, total in sorted(found):
        text = (f"cliques of {', '.join(map(str, sizes))} clients holding "
                f"{', '.join(map(str, classes))} of the {total} classes")
        if max(classes) < total:
            text += ": no clique holds every class"
        texts.append(text)
    return "; or ".join(texts)


# ------------------------------------------------------------------------------ the page


def _provenance(runs: Sequence[Run]) -> str:
    prov: Mapping[str, Any] = next(
        (r.records.provenance for r in runs if r.records is not None), {})
    commit = str(prov.get("git_commit") or "unknown")[:12]
    return (f"topofl {tf.__version__}, code fingerprint `{tf.figures.code_fingerprint()}`, "
            f"git commit `{commit}` (of the runs' records), torch {torch.__version__}, "
            f"{prov.get('torch_threads', 1)} torch thread per run")


def _kind(family: GraphFamily) -> str:
    return (f"{family.stochastic}, {'undirected' if family.undirected else 'directed'}"
            + (", time-varying" if family.time_varying else ""))


def render(cells: Sequence[Cell], runs: Sequence[Run], graphs: Mapping[tuple[str, int], list[
        dict[str, Any]]], target: Mapping[tuple[str, int], float], scale: Scale,
        scale_name: str, fraction: float, seconds: float,
        registry: Mapping[str, GraphFamily] = REGISTRY) -> str:
    """The Markdown page."""
    quick = " --quick" if scale_name == "quick" else ""
    seeds = ", ".join(map(str, scale.seeds))
    by: dict[tuple[str, str, int], list[Run]] = {}
    for r in runs:
        by.setdefault((r.level, r.family, r.n), []).append(r)
    for k in by:
        by[k].sort(key=lambda r: r.seed)
    doc = [
        "# Which graph should I use? A cheat sheet of every registered graph family",
        "",
        f"Regenerate: `python analysis/cheatsheet.py` (default scale; `python "
        f"analysis/cheatsheet.py --quick` is the smoke scale the tests run). This page: "
        f"`python analysis/cheatsheet.py{quick}`, {scale_name} scale, "
        f"{time.strftime('%Y-%m-%d')}, {len(runs)} runs (their sweeps trained in "
        f"{seconds / 60:.1f} min on a shared {os.cpu_count()}-CPU {platform.machine()} "
        f"machine); {_provenance(runs)}. Per-run "
        f"values: `{{stem}}_runs.csv`, graph metrics of every run's graph: "
        f"`{{stem}}_graphs.csv`.",
        "",
        f"**Setting.** Every family of `topofl.topologies.REGISTRY` ({len(registry)} families) "
        f"at n = {', '.join(map(str, scale.sizes))} clients. Data: `{DATA}` (scikit-learn's "
        f"8x8 digits, offline; a stand-in, not a benchmark data set), split IID or with label "
        f"skew (`pathological`, one class per client). Model: softmax regression "
        f"(`{MODEL}`). Each family is trained with the algorithm its weights call for "
        f"(registry field `stochastic`: doubly stochastic -> `dsgd`, column-stochastic -> "
        f"`sgp`, push-sum; row-stochastic -> `el`, which averages what arrived): one local "
        f"SGD step of batch {BATCH} at learning rate {LR}, then one communication step, "
        f"{scale.rounds} rounds, evaluated every {scale.eval_every} rounds; seeds {seeds} "
        f"(a seed fixes the split, the random graph and the initialisation). Parameters: "
        f"{PARAM_NOTES}.",
        "",
        f"**Target.** Accuracy of every client's model on the global test set, averaged over "
        f"clients (`{METRIC}`), at least {fraction:g} x the complete graph's mean final "
        f"accuracy at the same size and level: "
        + "; ".join(f"{LEVELS[lv][2]}, n = {n}: {t:.3f}" for (lv, n), t in target.items())
        + f". *Rounds / bytes to target*: rounds completed, and bytes sent by all clients, "
        f"until the first evaluation at or above it (a multiple of {scale.eval_every} "
        f"rounds), mean ± std over the seeds (sample std); *not reached*: some seed (k/"
        f"{len(scale.seeds)} reached) or every seed never reached it in {scale.rounds} rounds.",
        "",
        units_text(runs),
        "",
    ]
    unfinished = [f"{r.level}/{r.spec}/n={r.n}/seed {r.seed}: {r.status}" for r in runs
                  if r.status != "complete"]
    doc += [("Every run completed its rounds." if not unfinished else
             "Runs that did not complete their rounds (their records up to where they stopped "
             "are used): " + "; ".join(unfinished) + "."), ""] if runs else []
    doc += _which_section(cells, by, scale, target, graphs)
    doc += _metrics_section(cells, by, graphs, scale, registry)
    doc += _convergence_section(cells, by, scale)
    return "\n".join(doc) + "\n"


def units_text(runs: Sequence[Run]) -> str:
    """The page's units, with the bytes of one message of each algorithm as its runs' ledgers
    counted them (their ``bytes`` over their ``messages``)."""
    per: dict[str, list[float]] = {}
    for r in runs:
        b = r.values.get("bytes_per_message", math.nan) if r.values else math.nan
        if math.isfinite(b):
            per.setdefault(r.algorithm, []).append(b)
    sizes = ", ".join(f"{_sig(float(np.mean(v)), 4)} bytes with `{a}`"
                      for a, v in sorted(per.items()))
    return (
        "**Units.** *Accuracy* (target, final acc, best): the fraction of the test samples "
        "classified correctly, from 0 to 1. A *round*: one local SGD step, then one "
        "communication step. *Bytes* (bytes to target, kB): what all clients sent, as the run's "
        "ledger counts it (every number a float32 of 4 bytes; one message"
        + (f": {sizes}" if sizes else "") + "; a push-sum message carries its weight too); "
        "kB = 10³ bytes. *messages*: models one node sends per round. *gap*, *1 − β* and "
        "*heterogeneity* have no unit; *n_eff* is a number of neighbours; *exact avg* a number "
        "of rounds."
    )


def _metrics_section(cells: Sequence[Cell], by: Mapping[tuple[str, str, int], list[Run]],
                     graphs: Mapping[tuple[str, int], list[dict[str, Any]]], scale: Scale,
                     registry: Mapping[str, GraphFamily]) -> list[str]:
    doc = [
        "## The graphs",
        "",
        "Measured with `topofl.spectral` on the graphs the label-skew runs used (mean over "
        "the seeds' graphs; a family built from the labels, such as `dcliques` and `stl_fw`, "
        "builds another graph under IID labels). *gap*: `spectral_gap` = 1 − max_{k≥2} "
        "|λ_k(W)|; for a time-varying family (†) the mean over the rounds examined "
        "(`summary`): a round of a random schedule can have gap 0 and still mix in "
        "expectation. *1 − β*: for a random schedule with a closed form, one minus the "
        "expected one-round contraction of a disagreement vector, "
        "`expected_mixing(g).consensus_contraction` = β. *n_eff*: `effective_neighbors` at "
        f"γ = {tf.spectral.DEFAULT_GAMMA} (Vogels et al.; not defined for push-sum). "
        "*heterogeneity*: `neighborhood_heterogeneity` under the label skew (0: every "
        "neighbourhood holds the global label mix). *exact avg*: `finite_time_consensus`, the "
        "rounds after which gossip alone gives the exact average (the largest over the seeds' "
        "graphs; – : not within the summary's horizon). *messages*: models sent per node and "
        "round, from the runs' ledger.",
        "",
    ]
    for n in scale.sizes:
        rows = []
        for c in (c for c in cells if c.n == n):
            fam = registry[c.family]
            if c.spec is None:
                rows.append([f"`{c.family}`", f"not run: {c.note}", _kind(fam), "–", "–",
                             "–", "–", "–", "–", "–"])
                continue
            gs = graphs.get((c.family, n), [])
            tv = any(g["time_varying"] for g in gs)
            gap = _mean_metric(gs, "spectral_gap")
            contraction = _mean_metric(gs, "contraction")
            ftc = [g["finite_time_consensus"] for g in gs]
            exact = ("–" if not ftc or any(v is None for v in ftc)
                     else str(max(ftc)) if len(set(ftc)) > 1 else str(ftc[0]))
            rows.append([
                f"`{c.family}`", f"`{c.spec}`", _kind(fam), f"`{c.algorithm}`",
                _num(_mean_of([r.values["messages_per_node_round"]
                                for lv in LEVELS for r in by.get((lv, c.family, n), [])]),
                     ".2f"),
                _num(gap, ".4f") + (" †" if tv and gap is not None else ""),
                _num(None if contraction is None else 1 - contraction, ".4f"),
                _num(_mean_metric(gs, "effective_neighbors"), ".2f"),
                _num(_mean_metric(gs, "neighborhood_heterogeneity"), ".4f"),
                exact,
            ])
        doc += [f"### n = {n}", "",
                md_table(["family", "spec", "W", "algorithm", "messages", "gap", "1 − β",
                          "n_eff", "heterogeneity", "exact avg"], rows), ""]
    return doc


def _convergence_section(cells: Sequence[Cell], by: Mapping[tuple[str, str, int], list[Run]],
                         scale: Scale) -> list[str]:
    doc = ["## Convergence", "",
           "Rounds and kB (10³ bytes) sent by all clients until the target; final accuracy "
           "after the last round. Mean ± std over the seeds.", ""]
    for n in scale.sizes:
        rows = []
        for c in (c for c in cells if c.n == n):
            if c.spec is None:
                rows.append([f"`{c.family}`", "–", *(["not run"] * 6)])
                continue
            row = [f"`{c.family}`", f"`{c.algorithm}`"]
            for level in LEVELS:
                rs = by.get((level, c.family, n), [])
                vals = [r.values for r in rs]
                row += [reach_text([v["rounds_to_target"] for v in vals], digits=2),
                        reach_text([v["bytes_to_target"] for v in vals], unit=1e3),
                        reach_text([v["final"] for v in vals])]
            rows.append(row)
        header = ["family", "algorithm"]
        for level in LEVELS:
            header += [f"{level}: rounds", f"{level}: kB", f"{level}: final acc"]
        doc += [f"### n = {n}", "", md_table(header, rows), ""]
    return doc


def identical_families(by: Mapping[tuple[str, str, int], list[Run]]) -> list[list[str]]:
    """Groups of families whose runs gave the same final accuracy in every run (same level,
    size and seed): the same graphs under two names."""
    keys = sorted({(lv, n) for lv, _, n in by})
    finals: dict[str, tuple[Any, ...]] = {}
    for fam in dict.fromkeys(f for _, f, _ in by):
        finals[fam] = tuple(tuple(round(r.values["final"], 12) for r in by.get((lv, fam, n), []))
                            for lv, n in keys)
    groups: dict[tuple[Any, ...], list[str]] = {}
    for fam, v in finals.items():
        groups.setdefault(v, []).append(fam)
    return [g for g in groups.values() if len(g) > 1]


_COSTS = (("bytes", "bytes_to_target", "kB", 1e3, 3), ("rounds", "rounds_to_target", "rounds",
                                                        1.0, 2))


def _which_section(cells: Sequence[Cell], by: Mapping[tuple[str, str, int], list[Run]],
                   scale: Scale, target: Mapping[tuple[str, int], float] | None = None,
                   graphs: Mapping[tuple[str, int], list[dict[str, Any]]] | None = None
                   ) -> list[str]:
    doc = [
        "## Which graph when (generated from the numbers below)",
        "",
        "For each level and size, the families that reached the target in every seed are "
        "ranked by their mean bytes to target (the budget of a network-bound deployment) and "
        "by their mean rounds to target (the budget when a round's latency dominates). The "
        "cheapest is compared with every other family seed by seed "
        "(`topofl.study.pairs.paired_difference`: paired t, or a sign test when a seed "
        "missed the target; 95 %, 2.5 % each way). It is called cheaper only when the test "
        f"decides it and the mean difference is at least the practical margin: "
        f"{BYTES_MARGIN:.0%} of the leader's bytes, one evaluation interval "
        f"({scale.eval_every} rounds) for rounds. Anything else is *inconclusive at this "
        f"scale* ({len(scale.seeds)} seeds), with the reason. In the table, *not separated "
        "from it*: the families that reached the target in every seed and that the leader is "
        "not shown to beat.",
        "",
    ]
    glance = []
    details: list[str] = []
    for level in ("skew", "iid"):
        for n in sorted(scale.sizes, reverse=True):
            fams = [c.family for c in cells if c.n == n and c.spec is not None]
            words = LEVELS[level][2]
            details += [f"### {words[0].upper() + words[1:]}, n = {n}", ""]
            row = [words, str(n)]
            for cost, key, unit, scale_unit, digits in _COSTS:
                margin: Callable[[float], float] = (
                    (lambda m: BYTES_MARGIN * m) if cost == "bytes"
                    else (lambda m: float(scale.eval_every)))
                per = {f: [r.values[key] for r in by.get((level, f, n), [])] for f in fams}
                r = rank(per, cost, margin)
                best = {f: float(np.mean([r_.values.get("best", math.nan)
                                          for r_ in by.get((level, f, n), [])] or [math.nan]))
                        for f in r.never}
                why = {f: "; ".join(w for w in (
                    cliques_text((graphs or {}).get((f, n), [])) if level == "skew" else None,
                    PAPER_SETTING.get(f)) if w) for f in r.never}
                details += ranking_text(
                    r, unit, scale_unit, digits, rounds=scale.rounds, best=best,
                    why={f: w for f, w in why.items() if w},
                    target=None if target is None else target.get((level, n)))
                if r.order:
                    row += [f"`{r.order[0][0]}` ({_sig(r.order[0][1] / scale_unit, digits)} "
                            f"{unit})", _names(f for f in r.undecided if f not in r.partly)]
                else:
                    row += ["none reached", "–"]
            reached = sum(all(v is not None for v in per[f]) and bool(per[f]) for f in fams)
            row.append(f"{reached} of {len(fams)}")
            glance.append(row)
            details.append("")
    doc += [md_table(["level", "n", "fewest bytes to target", "not separated from it",
                      "fewest rounds to target", "not separated from it",
                      "families reaching it in every seed"], glance), ""]
    same = identical_families(by)
    if same:
        doc += ["Identical numbers in every run (the same graphs under two names): "
                + "; ".join(" = ".join(f"`{f}`" for f in g) for g in same) + ".", ""]
    return doc + details


# ------------------------------------------------------------------------------ main


def write_csv(path: Path, rows: Sequence[Mapping[str, Any]]) -> None:
    """``rows`` (dicts with the same keys) as CSV; ``None`` is written empty."""
    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]) if rows else [])
        w.writeheader()
        for r in rows:
            w.writerow({k: "" if v is None else v for k, v in r.items()})


def _paths_problem(out: Path, report: Path) -> str | None:
    """Why the records folder ``out`` or the page ``report`` cannot be written, or ``None``.

    Examples
    --------
    >>> import tempfile
    >>> f = Path(tempfile.mkdtemp()) / "a.md"
    >>> _ = f.write_text("mine")
    >>> print(_paths_problem(f, f.parent / "page.md"))  # doctest: +ELLIPSIS
    --out .../a.md is a file, not a folder: --out names the folder of the runs' records ...
    """
    for folder in (out, *out.parents):
        if folder.exists() and not folder.is_dir():
            return (f"--out {out} is a file{'' if folder == out else f' under the file {folder}'}"
                    ", not a folder: --out names the folder of the runs' records (and, with "
                    "--quick, of the page); --report names the page")
        if folder.exists():
            break
    for where in (report, *report.parents):
        if where.exists():
            if where == report and report.is_dir():
                return f"--report {report} is a folder: --report names the page (a .md file)"
            if where != report and not where.is_dir():
                return f"--report {report} lies under the file {where}: it cannot be written"
            break
    return None


def main(argv: Sequence[str] | None = None) -> int:
    """Run (or reuse) the runs, measure the graphs and write the page and its CSV files."""
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--quick", action="store_true", help="the smoke scale (tests)")
    p.add_argument("--out", type=Path, default=None,
                   help="records folder (default analysis/out/cheatsheet/<scale>)")
    p.add_argument("--report", type=Path, default=None,
                   help="the page (default analysis/cheatsheet.md; --quick: in --out)")
    p.add_argument("--target-fraction", type=float, default=TARGET_FRACTION,
                   help=f"target = this x the complete graph's final accuracy "
                        f"(default {TARGET_FRACTION})")
    p.add_argument("--rerun", action="store_true", help="train again, replacing the records")
    args = p.parse_args(argv)
    if not args.target_fraction > 0:
        p.error(f"--target-fraction must be > 0, got {args.target_fraction}")
    name = "quick" if args.quick else "default"
    scale = SCALES[name]
    out = args.out if args.out is not None else HERE / "out" / "cheatsheet" / name
    report = args.report if args.report is not None else (
        out / "cheatsheet.md" if args.quick else HERE / "cheatsheet.md")
    why = _paths_problem(out, report)
    if why is not None:  # one line, before any run
        print(f"cheatsheet: error: {why}", file=sys.stderr)
        return 2
    out.mkdir(parents=True, exist_ok=True)

    def say(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    t0 = time.perf_counter()
    classes = int(tf.data.federate(DATA, "iid", scale.sizes[0], seed=0).num_classes)
    cells = plan_cells(scale, classes)
    runs = run_cells(cells, scale, out, rerun=args.rerun, say=say)
    trained = time.perf_counter() - t0
    # the time the sweeps took when they trained (a later invocation reuses their runs)
    seconds = sum(json.loads(p.read_text(encoding="utf-8"))["seconds"]
                  for p in out.glob("*/cheatsheet_seconds.json"))
    target = targets(runs, args.target_fraction)
    for r in runs:
        r.values = measure(r, target[(r.level, r.n)])
    graphs: dict[tuple[str, int], list[dict[str, Any]]] = {}
    graph_rows = []
    for c in cells:
        if c.spec is None:
            continue
        for seed in scale.seeds:
            g = graph_metrics(c.spec, c.n, seed)
            graphs.setdefault((c.family, c.n), []).append(g)
            graph_rows.append({"family": c.family, "n": c.n, "seed": seed, "spec": c.spec,
                               "level": "skew", **g})
    say(f"graph metrics: {time.perf_counter() - t0 - trained:.0f} s")
    privacy = privacy_rows(scale, classes)
    say(f"privacy: {time.perf_counter() - t0 - trained:.0f} s")
    page = render(cells, runs, graphs, target, scale, name, args.target_fraction, seconds)
    page += "\n" + "\n".join(privacy_section(privacy))
    stem = report.stem
    page = page.replace("{stem}", stem)
    report.parent.mkdir(parents=True, exist_ok=True)
    report.write_text(page, encoding="utf-8")
    write_csv(report.with_name(f"{stem}_runs.csv"), [
        {"level": r.level, "family": r.family, "n": r.n, "seed": r.seed, "spec": r.spec,
         "algorithm": r.algorithm, "status": r.status, "target": target[(r.level, r.n)],
         **r.values, "records": os.path.relpath(r.path, report.parent)} for r in runs])
    write_csv(report.with_name(f"{stem}_graphs.csv"), graph_rows)
    write_csv(report.with_name(f"{stem}_privacy.csv"), privacy)
    say(f"wrote {report} ({time.perf_counter() - t0:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
