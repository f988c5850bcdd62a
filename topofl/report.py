"""Spectral comparison report of communication graphs given as specs (``topofl report``).

Builds every graph with :func:`topofl.topologies.build`, computes :func:`topofl.spectral.summary`
for each, and writes a self-contained Markdown report with PNG figures:

* a comparison table (every ``summary`` metric, edges per node, messages per round),
* how loose the push-sum bounds q and C are against what the products of W actually do,
* eigenvalue spectra, disagreement vs rounds, spectral gap vs n for each family.

Command line::

    topofl report ring:n=64 exponential:n=64 dcliques:n=100,inter=small_world \\
        random_directed:n=100,k=10 --out spectral-report

writes ``spectral-report/spectral_report.md`` (+ ``spectral_report.json``, the raw rows) and
``spectral-report/figures/spectral_*.png``. Without specs, a default comparison of ten families
is used (:data:`DEFAULT_SPECS`). Every number in the report comes from ``topofl.spectral``; this
module only formats and plots. ``analysis/spectral_report.py`` is a thin wrapper (output in
``analysis/out``).

Examples
--------
>>> import tempfile
>>> from topofl.report import report
>>> res = report(["ring:n=8", "complete:n=8"], tempfile.mkdtemp(), rounds=10, sizes=(8,))
>>> [r["spec"] for r in res.rows], sorted(p.name for p in res.files)[:2]
(['ring:n=8', 'complete:n=8'], ['spectral_disagreement.png', 'spectral_gap_vs_n.png'])
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from topofl import spectral
from topofl._utils.markdown import Document
from topofl._utils.validation import did_you_mean
from topofl._version import __version__
from topofl.graph import GraphLike, Topology
from topofl.plotting.style import style as _plot_style
from topofl.privacy import PRIVACY_KEYS, privacy_summary
from topofl.topologies import REGISTRY, build, parse_spec

__all__ = ["SpectralReport", "report", "main", "DEFAULT_SPECS", "consensus_rounds", "resize",
           "check_specs", "family_label"]

DEFAULT_SPECS = [
    "ring:n=64",
    "torus:rows=8,cols=8",
    "random_regular:n=64,d=4",
    "exponential:n=64",
    "one_peer_exponential:n=64",
    "base_graph:n=64,k=1",
    "dcliques:n=100,inter=small_world",
    "random_directed:n=100,k=10",
    "random_directed_push:n=100,k=3",
    "random_matching:n=64",
]
SIZES = (16, 32, 64, 128, 256)

# Rows of the full table: (summary key, label, format).
METRICS: list[tuple[str, str, str]] = [
    ("n", "nodes n", "d"),
    ("time_varying", "time-varying", "s"),
    ("period", "period (rounds)", "d"),
    ("directed", "directed", "s"),
    ("stochastic", "W is ... stochastic", "s"),
    ("edges_per_node", "edges per node", ".2f"),
    ("messages_per_round", "messages per round", ".0f"),
    ("spectral_gap", "spectral gap 1-max|λ_k|, k≥2", ".4g"),
    ("spectral_gap_lambda2", "spectral gap 1-λ_2", ".4g"),
    ("spectral_gap_norm", "1-‖W-J‖₂", ".4g"),
    ("algebraic_connectivity", "algebraic connectivity μ_2(L)", ".4g"),
    ("diameter", "diameter (per round)", "d"),
    ("strongly_connected", "strongly connected (union)", "s"),
    ("b_connectivity", "B (B-connectivity)", "d"),
    ("pushsum_a", "a: smallest weight", ".4g"),
    ("pushsum_diameter", "Δ: diameter of B-window unions", "d"),
    ("pushsum_q", "q bound", ".10g"),
    ("pushsum_one_minus_q", "1-q bound", ".3e"),
    ("pushsum_log10_C", "log10 C bound", ".2f"),
    ("pushsum_delta", "δ: smallest push-sum weight", ".4g"),
    ("pushsum_q_measured", "q measured", ".4f"),
    ("pushsum_C_measured", "C measured", ".4g"),
    ("consensus_rate", "consensus rate (measured)", ".4f"),
    ("finite_time_consensus", "finite-time consensus (rounds)", "d"),
    ("neighborhood_skew", "neighbourhood skew", ".4f"),
    ("horizon", "horizon (rounds examined)", "d"),
]

GLOSSARY = r"""\
## How to read the metrics

One gossip round is `x ← W x`; `W[i, j] > 0` iff node `i` receives from node `j`;
`J = 11ᵀ/n` is exact averaging. For a time-varying graph the per-round quantities (gap,
algebraic connectivity, edges, messages) are averaged over the first rounds (one period, or 10
rounds), the diameter is the largest over them, and the sequence quantities use the horizon.

| metric | meaning | larger is |
|---|---|---|
| spectral gap `1-max\|λ_k\|` | asymptotic per-round contraction of gossip with a fixed `W`: disagreement shrinks like `(1-gap)^t` | faster |
| `1-λ_2` | the same with the second largest *real* eigenvalue (symmetric `W` only) | faster |
| `1-‖W-J‖₂` | worst one-round contraction; meaningful for non-symmetric `W`, negative when a round can increase disagreement | faster |
| algebraic connectivity | `μ_2` of the Laplacian of the undirected underlying graph; 0 iff disconnected | better connected |
| diameter | most hops between two nodes (per round; `-` if a round alone is not strongly connected) | slower |
| B | smallest window such that the union of any `B` consecutive rounds is strongly connected (Assumption 1 of DFedPGP) | slower |
| a, Δ, q, C | push-sum bound (SGP, Assran et al. 2019, Lemma 3): `\|W(t:s) - φ1ᵀ\| ≤ C q^(t-s)` with `q = (1-a^(ΔB))^(1/(ΔB+1))`, `C = 2(1+a^(-ΔB))/(1-a^(ΔB))` — worst case over all graphs with the same `a`, `Δ`, `B` | — |
| δ | smallest push-sum weight, min over t of the row sums of `W(t)…W(0)` (the δ of DFedPGP's Theorem 1); 1 for row-stochastic `W` | better |
| q, C measured | fitted on this graph: `q` = decay rate of the largest column difference of `W(t:s)`, `C` = the smallest constant making `2 C q^(t-s)` an envelope of it over the horizon | — |
| consensus rate | measured per-round contraction of the disagreement from random starts (push-sum de-biased for column-stochastic `W`); 0 = exact | slower |
| finite-time consensus | rounds after which the product of `W` is exactly `J` (every node holds the exact average) | — |
| neighbourhood skew | `(1/n) Σ_i ‖Σ_j W_ij p_j − p̄‖₁` for given label distributions (not computed here) | worse |
"""  # noqa: E501 (Markdown table rows cannot wrap)


# ---------------------------------------------------------------------------- helpers
def fmt(value: Any, spec: str) -> str:
    if value is None:
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if spec == "s":
        return str(value)
    if spec == "d":
        return str(int(value))
    return format(float(value), spec)


def check_specs(specs: Sequence[str]) -> list[str]:
    """Fail early and clearly on an unknown family or a malformed spec."""
    errors = []
    for spec in specs:
        try:
            name, _ = parse_spec(spec)
        except ValueError as exc:
            errors.append(str(exc))
            continue
        if name not in REGISTRY:
            errors.append(
                f"unknown graph family {name!r} in spec {spec!r}{did_you_mean(name, REGISTRY)}; "
                f"known: {', '.join(sorted(REGISTRY))}"
            )
    return errors


def resize(spec: str, n: int) -> str | None:
    """The same family and parameters with ``n`` nodes (None if the family has no size)."""
    name, kwargs = parse_spec(spec)
    params = {p.name for p in REGISTRY[name].params}
    if "n" in params:
        kwargs["n"] = n
    elif {"rows", "cols"} <= params:
        side = round(math.sqrt(n))
        kwargs["rows"] = kwargs["cols"] = side
    else:
        return None
    return name + ":" + ",".join(f"{k}={v}" for k, v in kwargs.items())


def first_round(g: GraphLike) -> Topology:
    """The graph itself, or round 0 of a time-varying one."""
    return g if isinstance(g, Topology) else g.at(0)


# ---------------------------------------------------------------------------- figures
def plot_spectra(graphs: list[tuple[str, Any]], path: Path) -> None:
    import matplotlib.pyplot as plt

    cols = min(5, len(graphs))
    rows = math.ceil(len(graphs) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(2.6 * cols, 3.0 * rows), squeeze=False)
    theta = np.linspace(0, 2 * np.pi, 200)
    for ax, (label, g) in zip(axes.flat, graphs):
        ev = np.asarray(spectral.eigenvalues(first_round(g)), dtype=complex)
        ax.plot(np.cos(theta), np.sin(theta), color="0.8", lw=0.8)
        ax.scatter(ev.real, ev.imag, s=6, color="C0")
        ax.set_xlim(-1.1, 1.1)
        ax.set_ylim(-1.1, 1.1)
        ax.set_aspect("equal")
        title = label if isinstance(g, Topology) else f"{label}\n(round 0)"
        ax.set_title(title, fontsize=7)
        ax.set_xlabel("Re λ", fontsize=6, labelpad=1)
        ax.set_ylabel("Im λ", fontsize=6, labelpad=1)
        ax.tick_params(labelsize=6)
    for ax in list(axes.flat)[len(graphs):]:
        ax.axis("off")
    fig.suptitle("Eigenvalues of W in the complex plane (unit circle in grey)", fontsize=9)
    fig.tight_layout(h_pad=1.5)
    fig.savefig(path, dpi=90)
    plt.close(fig)


FLOOR = 1e-15  # relative disagreement below this is float64 round-off (reported as 0)


def style(k: int) -> dict[str, Any]:
    """The same colour and line style for graph number ``k`` in every figure (the one style
    of :func:`topofl.plotting.style`)."""
    return _plot_style(k).line()


def plot_disagreement(curves: list[tuple[str, np.ndarray]], path: Path) -> None:
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7.5, 4.2))
    for k, (label, curve) in enumerate(curves):
        t = np.arange(curve.size)
        ax.semilogy(t, np.maximum(curve, FLOOR), label=label, lw=1.3, **style(k))
    ax.set_xlabel("round t (gossip rounds)")
    ax.set_ylabel("relative disagreement ‖x_t − x̄‖ / ‖x_0 − x̄‖ (unitless)")
    ax.set_ylim(FLOOR / 2, 2)
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    ax.set_title("Gossip from random starts (bottom edge: float64 round-off, 1e-15)", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=90, bbox_inches="tight")
    plt.close(fig)


def plot_gap_vs_n(
    series: dict[str, list[tuple[int, float, float]]], sizes: Sequence[int], path: Path
) -> None:
    import matplotlib.pyplot as plt

    markers = "osd^v<>phX"
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(10, 5))
    for k, (label, pts) in enumerate(series.items()):
        kw = dict(marker=markers[k % len(markers)], ms=4, lw=1.2, mfc="none", **style(k))
        gap = [(n, g) for n, g, _ in pts if g > 0]  # log axis: a disconnected round has gap 0
        if gap:
            a1.loglog(*zip(*gap), label=label, **kw)
        if pts:
            a2.loglog([p[0] for p in pts], [max(p[2], 1e-6) for p in pts], label=label, **kw)
    a1.set_title("spectral gap 1 − max|λ_k| of one round (gap 0 not shown)", fontsize=9)
    a2.set_title("effective gap 1 − measured consensus rate (1 = exact)", fontsize=9)
    a1.set_ylabel("spectral gap (unitless)")
    a2.set_ylabel("1 − consensus rate (unitless)")
    for ax in (a1, a2):
        ax.set_xlabel("n (nodes)")
        ax.set_xticks(list(sizes), [str(s) for s in sizes])
        ax.minorticks_off()
        ax.grid(True, which="major", alpha=0.3)
    handles, labels = a2.get_legend_handles_labels()
    fig.legend(handles, labels, fontsize=7, loc="lower center", ncol=4, frameon=False)
    fig.tight_layout(rect=(0, 0.16, 1, 1))
    fig.savefig(path, dpi=90)
    plt.close(fig)


def plot_bounds(items: list[tuple[int, str, spectral.PushSumConstants]], path: Path) -> None:
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7.5, 4.2))
    for k, label, c in items:
        D = np.asarray(c.spread)
        m = np.arange(1, D.size + 1)
        color = style(k)["color"]
        ax.semilogy(m, np.maximum(D, 1e-16), color=color, lw=1.4, label=label)
        if c.q_measured > 0:
            env = 2 * c.C_measured * c.q_measured ** (m - 1)
            ax.semilogy(m, np.maximum(env, 1e-16), color=color, lw=0.8, ls=":")
        bound = [min(2 * c.bound(int(s)), 1e300) for s in m - 1]
        ax.semilogy(m, bound, color=color, lw=0.8, ls="--")
    ax.set_xlabel("m = number of rounds in the product W(s+m−1)···W(s)")
    ax.set_ylabel("largest difference between two columns")
    top = max((2 * c.C for _, _, c in items if math.isfinite(c.C)), default=1e12)
    ax.set_ylim(1e-16, min(max(top * 10, 10.0), 1e60))
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    ax.set_title("Push-sum: measured spread (solid), fitted envelope (dotted), bound 2Cq^(m−1) "
                 "(dashed)", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=90, bbox_inches="tight")
    plt.close(fig)


# ---------------------------------------------------------------------------- report
def consensus_rounds(row: dict[str, Any], factor: float = 1e-6) -> int | None:
    """Rounds for gossip to shrink the disagreement by ``factor``, from a ``summary`` row.

    The finite-time consensus round when there is one, else
    ``ceil(log(factor) / log(consensus_rate))`` with the *measured* rate; ``None`` when the
    rate is unknown or does not contract.

    Examples
    --------
    >>> from topofl.report import consensus_rounds
    >>> consensus_rounds({"finite_time_consensus": None, "consensus_rate": 0.5})  # 2^-20 < 1e-6
    20
    >>> consensus_rounds({"finite_time_consensus": 6, "consensus_rate": 0.0})
    6
    """
    if row["finite_time_consensus"] is not None:
        return int(row["finite_time_consensus"])
    rate = row["consensus_rate"]
    if rate is None or rate >= 1:
        return None
    return 1 if rate == 0 else math.ceil(math.log(factor) / math.log(rate))


def observations(rows: list[dict[str, Any]]) -> list[str]:
    """A few sentences computed from the rows (the report's findings)."""
    out = []
    reach: list[tuple[int, dict[str, Any]]] = []
    for r in rows:
        k = consensus_rounds(r)
        if k is not None:
            reach.append((k, r))
    if reach:
        k, r = min(reach, key=lambda x: x[0])
        out.append(f"Fewest rounds to shrink the disagreement 10^6-fold: `{r['spec']}` ({k}).")
        cost = [(k * r["edges_per_node"], k, r) for k, r in reach]
        c, k, r = min(cost, key=lambda x: x[0])
        out.append(
            f"Fewest messages per node for the same: `{r['spec']}` ({c:.0f} = {k} rounds x "
            f"{r['edges_per_node']:.2f} messages per node and round)."
        )
    exact = [r for r in rows if r["finite_time_consensus"] is not None]
    if exact:
        out.append(
            "Exact (finite-time) consensus: "
            + ", ".join(f"`{r['spec']}` after {r['finite_time_consensus']} rounds" for r in exact)
            + "."
        )
    gaps = [
        math.log10(max(1 - r["pushsum_q_measured"], 1e-300) / r["pushsum_one_minus_q"])
        for r in rows
        if r["pushsum_q_measured"] is not None and r["pushsum_one_minus_q"]
    ]
    if gaps:
        out.append(
            f"The push-sum bound on the per-round contraction 1 − q is loose by {min(gaps):.1f} "
            f"to {max(gaps):.1f} orders of magnitude against the measured 1 − q."
        )
    single = [r for r in rows if r["time_varying"] and r["diameter"] is None]
    if single:
        out.append(
            "Single rounds are not strongly connected for "
            + ", ".join(f"`{r['spec']}` (B = {r['b_connectivity']})" for r in single)
            + ": only windows of B rounds are, which is all push-sum needs (Assumption 1)."
        )
    return out


@dataclass(frozen=True)
class SpectralReport:
    """What :func:`report` computed and wrote.

    Attributes
    ----------
    rows : list of dict
        ``{"spec": ..., **topofl.spectral.summary(graph), "seconds": ...}`` per spec.
    files : list of Path
        ``spectral_report.md``, ``spectral_report.json`` and the figures.
    markdown : str
    """

    rows: list[dict[str, Any]]
    files: list[Path] = field(default_factory=list)
    markdown: str = ""


def _summaries(specs: Sequence[str], *, seed: int, horizon: int | None,
               verbose: bool) -> tuple[list[tuple[str, Any]], list[dict[str, Any]]]:
    """Each spec's graph and its :func:`topofl.spectral.summary` row (with its seconds)."""
    graphs: list[tuple[str, Any]] = []
    rows: list[dict[str, Any]] = []
    for spec in specs:
        try:
            g = build(spec, seed=seed)
            t0 = time.perf_counter()
            s = spectral.summary(g, horizon=horizon, seed=seed)
            s.update(privacy_summary(g))
        except (ValueError, TypeError) as exc:
            raise ValueError(f"{spec}: {exc}") from None
        s["seconds"] = round(time.perf_counter() - t0, 3)
        graphs.append((spec, g))
        rows.append({"spec": spec, **s})
        if verbose:
            print(f"{spec}: gap={s['spectral_gap']}, rate={s['consensus_rate']} "
                  f"({s['seconds']} s)", flush=True)

    return graphs, rows


def family_label(spec: str) -> str:
    """A graph family with the parameters a figure over ``n`` keeps fixed (its size, ``n`` or
    ``rows``/``cols``, varies along the axis, so the label leaves it out).

    Examples
    --------
    >>> from topofl.report import family_label
    >>> family_label("ring:n=64"), family_label("random_directed:n=100,k=10")
    ('ring', 'random_directed (k=10)')
    >>> family_label("torus:rows=8,cols=8")
    'torus'
    """
    name, kwargs = parse_spec(spec)
    fixed = {k: v for k, v in kwargs.items() if k not in ("n", "rows", "cols")}
    return name + (f" ({', '.join(f'{k}={v}' for k, v in fixed.items())})" if fixed else "")


def _gap_series(specs: Sequence[str], sizes: Sequence[int], *,
                seed: int) -> dict[str, list[tuple[int, float, float]]]:
    """Per family: (n, spectral gap, 1 - measured consensus rate) at each size of ``sizes``."""
    series: dict[str, list[tuple[int, float, float]]] = {}
    for spec in specs:
        key = family_label(spec)
        if key in series:  # two specs of one family and parameters: keep them apart
            key = spec
        pts: list[tuple[int, float, float]] = []
        for n in sizes:
            sized = resize(spec, n)
            if sized is None:
                break
            try:
                g = build(sized, seed=seed)
            except (ValueError, TypeError):
                continue  # e.g. k >= n, or no member of this size
            first = first_round(g)
            gaps = [spectral.spectral_gap(first)] if isinstance(g, Topology) else [
                spectral.spectral_gap(g.at(t)) for t in range(min(g.period or 10, 10))
            ]
            period = getattr(g, "period", 1) or 1
            rate = spectral.consensus_rate(g, max(200, 2 * period), seed=seed)
            pts.append((first.n, float(np.mean(gaps)), 1.0 - rate))
        series[key] = pts
    return series


def _draw(graphs: list[tuple[str, Any]], rows: Sequence[Mapping[str, Any]], figdir: Path,
          *, rounds: int, sizes: Sequence[int], seed: int) -> bool:
    """Draw the report's figures into ``figdir``; whether the push-sum figure was drawn."""
    import matplotlib

    matplotlib.use("Agg")
    figdir.mkdir(parents=True, exist_ok=True)
    plot_spectra(graphs, figdir / "spectral_spectra.png")
    curves = [(spec, spectral.disagreement(g, rounds, seed=seed)) for spec, g in graphs]
    plot_disagreement(curves, figdir / "spectral_disagreement.png")
    series = _gap_series([spec for spec, _ in graphs], sizes, seed=seed)
    plot_gap_vs_n(series, sizes, figdir / "spectral_gap_vs_n.png")
    # At most six curves on the bounds figure, time-varying graphs first (the bound's subject).
    eligible = [k for k, s in enumerate(rows) if s["pushsum_q"] is not None]
    eligible.sort(key=lambda k: not rows[k]["time_varying"])
    pushsum = [
        (k, graphs[k][0],
         spectral.pushsum_constants(graphs[k][1], horizon=min(rows[k]["horizon"], 60)))
        for k in sorted(eligible[:6])
    ]
    bounds_png = figdir / "spectral_bounds.png"
    if pushsum:
        plot_bounds(pushsum, bounds_png)
    else:  # every graph undirected: push-sum's constants do not apply, no figure to draw
        bounds_png.unlink(missing_ok=True)  # nor a stale one from an earlier report

    return bool(pushsum)


def _markdown(rows: list[dict[str, Any]], specs: Sequence[str], *, command: str,
              seed: int, sizes: Sequence[int], pushsum: bool, seconds: float) -> str:
    """The text of ``spectral_report.md``."""
    labels = [f"`{spec}`" for spec in specs]
    short = []
    for r in rows:
        k = consensus_rounds(r)
        short.append([
            f"`{r['spec']}`", fmt(r["edges_per_node"], ".2f"), fmt(r["messages_per_round"], ".0f"),
            fmt(r["spectral_gap"], ".4f"), fmt(r["b_connectivity"], "d"),
            fmt(r["consensus_rate"], ".4f"), fmt(r["finite_time_consensus"], "d"),
            fmt(k, "d"), fmt(None if k is None else k * r["edges_per_node"], ".0f"),
        ])
    full = [[label] + [fmt(r[key], spec) for r in rows] for key, label, spec in METRICS]
    loose = []
    for r in rows:
        if r["pushsum_q"] is None or r["pushsum_q_measured"] is None:
            continue
        omq_b, omq_m = r["pushsum_one_minus_q"], 1 - r["pushsum_q_measured"]
        ratio = "∞" if omq_b == 0 else f"{math.log10(max(omq_m, 1e-300) / omq_b):.1f}"
        cm = r["pushsum_C_measured"]
        c_ratio = "–" if not cm else f"{r['pushsum_log10_C'] - math.log10(cm):.1f}"
        loose.append([
            f"`{r['spec']}`", fmt(omq_b, ".2e"), fmt(omq_m, ".3f"), ratio,
            fmt(r["pushsum_log10_C"], ".1f"), fmt(cm, ".3g"), c_ratio,
        ])
    doc = Document().heading("Spectral comparison of communication graphs")
    doc.paragraph(
        f"Generated by `{command.strip()}` with topofl {__version__} (Python "
        f"{platform.python_version()}, seed {seed}) in "
        f"{seconds:.0f} s. Every number comes from `topofl.spectral`. "
        "The script also writes the raw rows to `spectral_report.json` beside the report.")
    doc.heading("At a glance", 2).paragraph(
        "Faster mixing = larger spectral gap, smaller consensus rate, fewer rounds. Time-varying "
        "graphs send far fewer messages per round; their per-round spectral gap says little "
        "(a single round is often disconnected) — compare them by the *measured* consensus rate "
        "and finite-time consensus instead.")
    doc.table(["graph", "edges/node", "messages/round", "spectral gap", "B", "consensus rate",
               "finite-time", "rounds to 1e-6", "messages/node to 1e-6"], short)
    doc.caption(
        "Rounds to 1e-6: the finite-time consensus round, or log(1e-6) / log(consensus rate). "
        "Messages/node: those rounds times the edges per node and round. The consensus rate is "
        f"measured over the horizon ({rows[0]['horizon'] if rows else '-'} rounds for the first "
        "graph): for slowly mixing graphs such as the ring the fast modes are still fading, and "
        "the asymptotic rate 1 − spectral gap is slower still.")
    doc.bullets(observations(rows))
    doc.heading("Every metric", 2).table(["metric", *labels], full)
    doc.heading("What each graph leaks", 2).paragraph(
        "Pairwise privacy (`topofl.privacy.privacy_summary`): the epsilon at delta = 1e-5 from "
        "one node's data to another node's view, when every node adds Gaussian noise of "
        "multiplier 1 to its value once and the graph then averages for 10 gossip steps "
        "(*gossip*: exact, the observer's view as one linear Gaussian system; at most the local "
        "level 4.377), Muffliato's bound for the same protocol, and a random walk of 10 x n "
        "steps (Theorem 3 of arXiv 2402.07471; – for a time-varying or asymmetric graph). "
        "Lower is more private.")
    doc.table(["graph", "gossip max", "gossip mean", "gossip neighbours", "gossip others",
               "muffliato mean", "walk mean"],
              [[f"`{r['spec']}`", *(fmt(r.get(k), ".3f") for k in PRIVACY_KEYS)] for r in rows])
    doc.heading("How loose the push-sum bounds are", 2).paragraph(
        "The constants of Theorem 1 of DFedPGP come from the worst case over every graph with "
        "the same smallest weight `a`, window `B` and diameter `Δ`. The measured contraction of "
        "the actual products is orders of magnitude faster: `1−q` measured vs bound, and the "
        "constant `C`.")
    if loose:
        doc.table(["graph", "1−q bound", "1−q measured", "log10 ratio", "log10 C bound",
                   "C measured", "log10 C bound/measured"], loose)
    else:
        doc.paragraph("(no graph here satisfies the premises of the bound)")
    if pushsum:
        doc.image("figures/spectral_bounds.png", "push-sum bounds vs measured", caption=(
            "Solid: the largest difference between two columns of a product of m consecutive "
            "mixing matrices (what push-sum needs to vanish). Dotted: the fitted envelope "
            "`2 C_measured q_measured^(m−1)`. Dashed: the bound `2 C q^(m−1)`; it stays near "
            "its start because `q` is within `1e-6` or less of 1."))
    else:
        doc.caption("No figure: every graph here is undirected with a symmetric `W`, for which "
                    "push-sum is plain gossip and its constants are not computed.")
    doc.heading("Spectra", 2).image("figures/spectral_spectra.png", "eigenvalues", caption=(
        "Eigenvalues of `W` (round 0 for a time-varying graph). Symmetric `W` have real "
        "spectra; the gap is the distance from the second largest modulus to the unit circle. "
        "Directed graphs (exponential, random directed) have complex spectra."))
    doc.heading("Disagreement vs rounds", 2).image(
        "figures/spectral_disagreement.png", "disagreement", caption=(
            "Relative distance to consensus over rounds, 8 random starts. Straight lines are "
            "geometric convergence (slope = log of the consensus rate); a vertical drop to the "
            "bottom edge (float64 round-off) is finite-time exact consensus (one-peer "
            "exponential with n a power of two, Base-(k+1)). Random time-varying graphs wiggle "
            "around a line."))
    doc.heading("Spectral gap vs n", 2).image("figures/spectral_gap_vs_n.png", "gap vs n", caption=(
        f"Each family at n ∈ {{{', '.join(map(str, sizes))}}} with its other parameters "
        "unchanged (families without a size parameter are skipped; a torus uses the nearest "
        "square). Left: the spectral gap of one round (mean over the first rounds of a "
        "time-varying graph; absent when single rounds are disconnected, gap 0). Right: "
        "1 − the consensus rate measured over 200 rounds, comparable across static and "
        "time-varying graphs (1 = exact consensus). Only the families whose gap does not "
        "vanish with n scale."))
    doc.paragraph(GLOSSARY)
    return doc.text()


def report(
    specs: Sequence[str] | None = None,
    out_dir: str | os.PathLike[str] = "spectral-report",
    *,
    seed: int = 0,
    horizon: int | None = None,
    rounds: int = 100,
    sizes: Sequence[int] = SIZES,
    command: str | None = None,
    verbose: bool = False,
) -> SpectralReport:
    """Write the spectral comparison report of ``specs`` to ``out_dir``.

    Parameters
    ----------
    specs : sequence of str, optional
        Graph specs (``"ring:n=64"``); default :data:`DEFAULT_SPECS`.
    out_dir : path, default "spectral-report"
        Receives ``spectral_report.md``, ``spectral_report.json`` and ``figures/spectral_*.png``.
    seed : int, default 0
        Seed of the random graphs and of the random starts of the measured quantities.
    horizon : int, optional
        Rounds examined by the sequence metrics (see :func:`topofl.spectral.summary`).
    rounds : int, default 100
        Rounds of the disagreement figure.
    sizes : sequence of int
        Values of n of the gap-vs-n figure.
    command : str, optional
        The command line quoted in the report (default: the ``topofl report`` equivalent).
    verbose : bool, default False
        Print one line per graph as it is summarised.

    Raises
    ------
    ValueError
        For an unknown family or a malformed spec (every error of the list, one per line), or
        parameters a family rejects.
    """
    specs = list(specs) if specs else [s for s in DEFAULT_SPECS if parse_spec(s)[0] in REGISTRY]
    errors = check_specs(specs)
    if errors:
        raise ValueError("\n".join(errors))
    sizes = sorted({int(n) for n in sizes})
    if not sizes or sizes[0] < 1:
        raise ValueError(f"sizes must be positive integers, got {sizes}")
    out = Path(out_dir)
    figdir = out / "figures"
    if command is None:
        command = "topofl report " + " ".join(
            [*specs, f"--out {out}"] + ([f"--seed {seed}"] if seed else [])
            + ([f"--horizon {horizon}"] if horizon else []))
    t_start = time.perf_counter()
    graphs, rows = _summaries(specs, seed=seed, horizon=horizon, verbose=verbose)
    pushsum = _draw(graphs, rows, figdir, rounds=rounds, sizes=sizes, seed=seed)
    markdown = _markdown(rows, specs, command=command, seed=seed, sizes=sizes, pushsum=pushsum,
                         seconds=time.perf_counter() - t_start)
    (out / "spectral_report.md").write_text(markdown, encoding="utf-8")
    (out / "spectral_report.json").write_text(json.dumps(rows, indent=1), encoding="utf-8")
    files = [out / "spectral_report.md", out / "spectral_report.json",
             *sorted(figdir.glob("spectral_*.png"))]
    return SpectralReport(rows=rows, files=files, markdown=markdown)


def main(
    argv: Sequence[str] | None = None,
    *,
    prog: str = "topofl report",
    default_out: str = "spectral-report",
) -> int:
    """``topofl report [SPEC ...] [--out DIR]``: write the report; returns the exit status.

    Bad specs or options print one line per error on stderr and return 2.
    """
    parser = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n\n")[0])
    parser.add_argument("specs", nargs="*", help="graph specs such as ring:n=64 (default: ten)")
    parser.add_argument("--out", default=default_out, help=f"output folder ({default_out})")
    parser.add_argument("--seed", type=int, default=0, help="seed of random graphs (0)")
    parser.add_argument("--horizon", type=int, default=None, help="rounds of sequence metrics")
    parser.add_argument("--rounds", type=int, default=100, help="rounds of the disagreement plot")
    parser.add_argument(
        "--sizes", default=",".join(map(str, SIZES)), help="n values of the gap-vs-n figure"
    )
    args = parser.parse_args(argv)
    name = prog
    try:
        sizes = [int(v) for v in args.sizes.split(",") if v.strip()]
    except ValueError:
        print(f"{name}: error: --sizes must be integers, got {args.sizes!r}", file=sys.stderr)
        return 2
    command = " ".join(
        [prog, *args.specs]
        + ([f"--out {args.out}"] if args.out != default_out else [])
        + ([f"--seed {args.seed}"] if args.seed else [])
        + ([f"--horizon {args.horizon}"] if args.horizon else [])
    )
    t0 = time.perf_counter()
    try:
        res = report(args.specs, args.out, seed=args.seed, horizon=args.horizon,
                     rounds=args.rounds, sizes=sizes, command=command, verbose=True)
    except (ValueError, TypeError) as exc:
        for line in str(exc).splitlines():
            print(f"{name}: error: {line}", file=sys.stderr)
        return 2
    figs = [f for f in res.files if f.suffix == ".png"]
    print(f"wrote {res.files[0]} and {len(figs)} figures in {Path(args.out) / 'figures'} "
          f"({time.perf_counter() - t0:.0f} s)")
    return 0
