"""Field claim: the null-cascade paper's Test 1, the consensus error of its six graphs at
(n, k) = (15, 2), (17, 2), (30, 2) (Niwa, Zhang, Takezawa, Kleijn, NeurIPS 2025, Sec. 5.1, Fig. 3).

Graph math, no training. Every node holds one scalar ``x_i(0) ~ N(0, 1)``, every round applies
``x <- W(t) x``, and the consensus error is the paper's
$\\Delta(t) = \\frac1n \\sum_i (x_i(t) - \\bar x)^2$, averaged over 100 independent trials
(``x(0)`` and, for the random graphs, the graph drawn anew: trial ``s`` takes column ``s`` of
one ``(n, 100)`` standard normal draw, ``numpy.random.default_rng(0)``, and draws its graph
with ``seed=s``; every graph sees the same 100 starting vectors, so a comparison of two
graphs is paired trial by trial). The graphs, as topofl builds them:

* (C1) ring -- :func:`topofl.topologies.ring` (weights 1/3, the paper's ``k = 2``);
* (C2) Base-(k+1) -- :func:`topofl.topologies.base_graph` ``(n, k)``;
* (C3) random -- the paper's "Erdős-Rényi random graph, adjusted to ensure k" read as
  :func:`topofl.topologies.erdos_renyi` with ``p = k / (n - 1)`` (expected degree ``k``),
  Metropolis weights, as drawn (``connected=False``: a disconnected draw is kept, as an
  Erdős-Rényi graph with this ``p`` often is; the text does not say more);
* (C4) (k+1)-partite random match -- :func:`topofl.topologies.partite_match` ``(n, k)``;
* (P1) k-peer exponential -- :func:`topofl.topologies.k_peer_exponential` ``(n, k)``, the
  paper's period ``floor(log_{k+1} n)``;
* (P2) null-cascade -- :func:`topofl.topologies.null_cascade` ``(n, k)``.

For (C4) the expected error is known exactly: every round contracts a disagreement vector by
``beta = (ceil(n/(k+1)) - 1) / (n - 1)`` in expectation
(:func:`topofl.spectral.expected_mixing`), so ``E[Delta(t) | x(0)] = beta^t Delta(0)``; the
page compares its Monte Carlo mean with this. The checks are the paper's statements about
Fig. 3 (the orderings its text states; the figure itself is not in the text). ``--quick`` runs
10 trials of the same 30 rounds; ``--full`` is the default (the paper's 100 trials).

    python paper_figures/fig_field_consensus_test1.py [--quick | --full] [--update-results]
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from topofl import figures

CONFIGS = ((15, 2), (17, 2), (30, 2))
TRIALS = 100  # the paper's "100 independent trials"
QUICK_TRIALS = 10  # --quick: a smoke run of the same code
ROUNDS = 30
X0_SEED = 0  # the starting vectors: np.random.default_rng(X0_SEED), shape (n, trials)
#: Delta(t) at or below this (relative to Delta(0)) is exact averaging up to rounding
EXACT = 1e-24
#: rounds over which C4's Monte Carlo mean is compared with beta^t Delta(0): later, the mean
#: of 100 products of random contractions is carried by a few slow draws (their mean beta^t
#: is far above their typical value), and the sample's standard error understates the spread
Z_ROUNDS = 5
#: the round at which P1's error is read against C4's across the configurations: after every
#: finite-time graph's period here (at most 8)
P1_ROUND = 10
#: the periods the paper prints in Table 2: (n, k) -> tau
PAPER_TAU = {"C2": {(15, 2): 4, (17, 2): 5, (30, 2): 5},
             "P2": {(15, 2): 3, (17, 2): 8, (30, 2): 4},
             "P1": {(15, 2): 2, (17, 2): 2, (30, 2): 3}}
#: why the Monte Carlo checks are read at a stated round, not at convergence
HORIZON = "the paper's Fig. 3 (consensus error over rounds 0..30, read at the rounds named)"

GraphOf = Callable[[int, int, int], Any]  # (n, k, seed) -> Topology or TimeVarying


def _graphs() -> dict[str, tuple[GraphOf, bool]]:
    """label -> (builder, random?)."""
    import topofl as tf

    T = tf.topologies
    return {
        "C1": (lambda n, k, s: T.ring(n), False),
        "C2": (lambda n, k, s: T.base_graph(n, k), False),
        "C3": (lambda n, k, s: T.erdos_renyi(n, k / (n - 1), seed=s, connected=False), True),
        "C4": (lambda n, k, s: T.partite_match(n, k, seed=s), True),
        "P1": (lambda n, k, s: T.k_peer_exponential(n, k), False),
        "P2": (lambda n, k, s: T.null_cascade(n, k), False),
    }


#: the graphs' labels in the paper, and their names
NAMES = {"C1": "ring", "C2": "Base-(k+1)", "C3": "random (Erdős-Rényi, p = k/(n-1))",
         "C4": "(k+1)-partite random match", "P1": "k-peer exponential", "P2": "null-cascade"}
LABELS = tuple(NAMES)


def consensus_errors(label: str, n: int, k: int, trials: int, rounds: int) -> np.ndarray:
    """``(rounds + 1, trials)``: the paper's Delta(t) of every trial, t = 0..rounds."""
    from topofl.graph import as_time_varying

    build, random = _graphs()[label]
    X = np.random.default_rng(X0_SEED).standard_normal((n, trials))
    out = np.empty((rounds + 1, trials))

    def delta(Y: np.ndarray) -> np.ndarray:
        return np.asarray(np.mean((Y - Y.mean(axis=0)) ** 2, axis=0), dtype=np.float64)

    out[0] = delta(X)
    if not random:  # one graph for every trial: all of them in one product
        tv = as_time_varying(build(n, k, 0))
        for t in range(rounds):
            X = tv.at(t).W @ X
            out[t + 1] = delta(X)
        return out
    for s in range(trials):
        tv = as_time_varying(build(n, k, s))
        x = X[:, s]
        for t in range(rounds):
            x = tv.at(t).W @ x
            out[t + 1, s] = np.mean((x - x.mean()) ** 2)
    return out


def first_exact(mean: Sequence[float]) -> int | None:
    """The first round whose mean Delta is at or below ``EXACT`` times Delta(0)."""
    m = np.asarray(mean, dtype=np.float64)
    hit = np.flatnonzero(m <= EXACT * m[0])
    return int(hit[0]) if hit.size else None


def measure(n: int, k: int, trials: int, rounds: int) -> dict[str, Any]:
    """Every graph's Delta(t) per trial, its mean, standard error and first exact round at one
    ``(n, k)``, with C4's prediction ``beta^t Delta(0)``."""
    import topofl as tf

    out: dict[str, Any] = {"n": n, "k": k, "trials": trials, "graphs": {}}
    for label in LABELS:
        d = consensus_errors(label, n, k, trials, rounds)
        mean = d.mean(axis=1)
        out["graphs"][label] = {
            "errors": d, "mean": mean,
            "stderr": d.std(axis=1, ddof=1) / math.sqrt(trials) if trials > 1
            else np.full(rounds + 1, np.nan),
            "first_exact": first_exact(mean)}
    beta = tf.spectral.expected_mixing(tf.topologies.partite_match(n, k, seed=0))
    c4 = out["graphs"]["C4"]
    predicted = np.array([beta.consensus_contraction ** t * c4["mean"][0]
                          for t in range(rounds + 1)])
    z = [abs(c4["mean"][t] - predicted[t]) / c4["stderr"][t]
         for t in range(1, min(Z_ROUNDS, rounds) + 1)]
    out["C4_beta"] = float(beta.consensus_contraction)
    out["C4_predicted"] = predicted
    out["C4_max_z"] = float(max(z))  # largest |MC mean - beta^t Delta(0)| in standard errors
    return out


def ranking(res: dict[str, Any], t: int) -> str:
    """The graphs by mean Delta(t), lowest first (``=`` between graphs both exact)."""
    g = res["graphs"]
    exact = EXACT * g["C1"]["mean"][0]
    order: list[str] = sorted(g, key=lambda lab: (max(g[lab]["mean"][t], exact), lab))
    text = order[0]
    for a, b in zip(order, order[1:]):
        tie = g[a]["mean"][t] <= exact and g[b]["mean"][t] <= exact
        text += (" = " if tie else " < ") + b
    return text


def relative(res: dict[str, Any], a: str, b: str, t: int) -> figures.OverSeeds:
    """Trial by trial, ``(Delta_a(t) - Delta_b(t)) / mean Delta_b(t)``: its mean is
    ``mean_a / mean_b - 1``, below 0 where ``a``'s mean error is below ``b``'s (paired:
    both graphs start every trial from the same ``x(0)``)."""
    ea, eb = res["graphs"][a]["errors"][t], res["graphs"][b]["errors"][t]
    scale = float(np.mean(eb))
    vals = (ea - eb) / scale
    return figures.OverSeeds(tuple(float(v) for v in vals), tuple(range(len(vals))))


def lower(name: str, res: dict[str, Any], a: str, b: str, t: int, margin: float,
          headline: bool = False) -> figures.Check:
    """The check that ``a``'s mean Delta(t) is below ``b``'s by more than the margin (a
    relative difference below ``-margin``: a factor ``1 / (1 - margin)``)."""
    return figures.below(name, relative(res, a, b, t), 0.0, margin=margin, horizon=HORIZON,
                         headline=headline)


_RANK = {"fail": 0, "inconclusive": 1, "no effect": 2, "pass": 3}


def weakest(found: Sequence[tuple[str, figures.Check]]) -> tuple[str, figures.Check]:
    """Of the parts of a conjunction, the one that decides it: the worst outcome, then the
    least room between its claimed bound and the claim's edge (``found``: (where, check))."""
    def room(c: figures.Check) -> float:
        d = dict(c.detail or {})
        hi = d.get("high")
        return math.inf if hi is None else -float(hi) - float(d["margin"])

    return min(found, key=lambda wc: (_RANK[wc[1].outcome], room(wc[1])))


def every_round(name: str, res: dict[str, Any], pairs: Sequence[tuple[str, str]],
                rounds: Sequence[int], margin: float) -> figures.Check:
    """The conjunction "each ``a`` below its ``b`` at every round": the weakest part, named
    by ``name``, its measured value saying where it is."""
    found = [(f"{a} vs {b}, round {t}", lower(name, res, a, b, t, margin))
             for a, b in pairs for t in rounds]
    where, c = weakest(found)
    passed = sum(ch.outcome == "pass" for _, ch in found)
    return dataclasses.replace(
        c, measured=f"closest: {where}, {c.measured} ({passed} of {len(found)} pass)")


def checks_of(res: dict[str, Any], rounds: int, margin: float) -> list[figures.Check]:
    """The paper's statements about Fig. 3 at one ``(n, k)``."""
    n, k, g = res["n"], res["k"], res["graphs"]
    key, cfg = (n, k), f"({n}, {k})"
    out: list[figures.Check] = []
    first, second = ("C2", "P2") if n == 17 else ("P2", "C2")
    fe = {lab: g[lab]["first_exact"] for lab in ("C2", "P2")}
    out.append(figures.fact(
        f"{cfg}: {first} ({NAMES[first]}) reaches zero error before {second} "
        f"({NAMES[second]}) (Sec. 5.1: "
        + ("\"base-(k+1) graph is preferable in Figure 3(b)\")" if n == 17 else
           "\"null-cascade graph performs well in Figures 3(a) and (c)\")"),
        fe[first] is not None and fe[second] is not None and fe[first] < fe[second],
        f"{first}: round {fe[first]}, {second}: round {fe[second]}", headline=True))
    for lab in ("C2", "P2"):
        tau = PAPER_TAU[lab][key]
        out.append(figures.fact(
            f"{cfg}: {lab} averages exactly after its tau = {tau} rounds (Table 2)",
            fe[lab] == tau, f"exact from round {fe[lab]}"))
    horizon = max(fe["C2"] or rounds, fe["P2"] or rounds)
    d0 = {lab: g[lab]["errors"][0] for lab in g}
    zero = {lab: int(np.sum(g[lab]["errors"][horizon] <= EXACT * d0[lab])) for lab in g}
    trials = res["trials"]
    follow = (zero["C2"] == zero["P2"] == trials and zero["C4"] == zero["P1"] == 0)
    out.append(figures.fact(
        f"{cfg}: C4 and P1 follow C2 and P2 (Sec. 5.1): above them once C2 and P2 are exact "
        f"(round {horizon})", follow,
        f"round {horizon}: C2 and P2 exact in {zero['C2']} and {zero['P2']} of {trials} "
        f"trials; C4 {g['C4']['mean'][horizon]:.3g}, P1 {g['P1']['mean'][horizon]:.3g} "
        f"(mean), exact in {zero['C4']} and {zero['P1']}"))
    out.append(every_round(
        f"{cfg}: C4 and P1 below C1 and C3 at every round from {horizon} to {rounds} (they "
        "follow C2 and P2, the others come after): each mean error below the other's by more "
        "than the margin (relative difference of the means)", res,
        [(a, b) for a in ("C4", "P1") for b in ("C1", "C3")], range(horizon, rounds + 1),
        margin))
    return out


def p1_check(results: Sequence[dict[str, Any]], t: int, margin: float) -> figures.Check:
    """Sec. 5.1: at (30, 2), n just above (k+1)^3 = 27, P1's error "becomes small". Read as:
    at round ``t``, P1's mean error below C4's at (30, 2) and above it at (15, 2) and
    (17, 2), each by more than the margin."""
    found = []
    for r in results:
        a, b = ("P1", "C4") if (r["n"], r["k"]) == (30, 2) else ("C4", "P1")
        found.append((f"({r['n']}, {r['k']}): {a} below {b}",
                      lower("", r, a, b, t, margin)))
    where, c = weakest(found)
    ratios = ", ".join(
        f"({r['n']}, {r['k']}): "
        f"{r['graphs']['P1']['mean'][t] / r['graphs']['C4']['mean'][t]:.3g}" for r in results)
    return dataclasses.replace(
        c, name=f"P1's error becomes small where n slightly exceeds (k+1)^3 (Sec. 5.1, "
                f"Theorem 2): at round {t}, P1's mean error below C4's at (30, 2) and above it "
                "at (15, 2) and (17, 2), each by more than the margin",
        measured=f"closest: {where}, {c.measured}; P1 / C4 means {ratios}")


def _fmt(v: float, d0: float) -> str:
    return "0 (exact)" if v <= EXACT * d0 else f"{v:.3g}"


def _tables(results: Sequence[dict[str, Any]], rounds: int) -> dict[str, Any]:
    import pandas as pd

    shown = [t for t in (0, 1, 2, 3, 4, 5, 6, 8, 10, 15, 20, 30) if t <= rounds]
    out: dict[str, Any] = {}
    for r in results:
        d0 = r["graphs"]["C1"]["mean"][0]
        rows = []
        for lab in LABELS:
            g = r["graphs"][lab]
            row = {"graph": f"({lab}) {NAMES[lab]}", "exact from": str(g["first_exact"] or "-")}
            row.update({f"t={t}": _fmt(float(g["mean"][t]), d0) for t in shown})
            rows.append(row)
        row = {"graph": "(C4) predicted, beta^t Delta(0)", "exact from": "-"}
        row.update({f"t={t}": f"{r['C4_predicted'][t]:.3g}" for t in shown})
        rows.append(row)
        out[f"({r['n']}, {r['k']}): mean Delta(t) over the trials"] = pd.DataFrame(rows)
    out["the graphs by mean Delta(t), lowest first"] = pd.DataFrame(
        [{"(n, k)": f"({r['n']}, {r['k']})",
          **{f"round {t}": ranking(r, t) for t in (3, 5, 10, rounds) if t <= rounds}}
         for r in results])
    out["(C4) against its expectation"] = pd.DataFrame(
        [{"(n, k)": f"({r['n']}, {r['k']})", "beta": f"{r['C4_beta']:.6f}",
          f"largest |mean - beta^t Delta(0)| / stderr, rounds 1..{min(Z_ROUNDS, rounds)}":
              f"{r['C4_max_z']:.2f}"} for r in results])
    return out


def _plot(results: Sequence[dict[str, Any]], rounds: int) -> Any:
    import matplotlib.pyplot as plt

    floor = 1e-24  # the plot's floor: exact averaging (Delta <= EXACT * Delta(0)) is drawn here
    colours = {"C1": "tab:gray", "C2": "tab:blue", "C3": "tab:brown", "C4": "tab:green",
               "P1": "tab:purple", "P2": "tab:red"}
    styles = {"C1": "-", "C2": "--", "C3": ":", "C4": "-.", "P1": "-", "P2": "-"}
    fig, axes = plt.subplots(1, len(results), figsize=(12.5, 4.2), squeeze=False)
    t = np.arange(rounds + 1)
    for ax, r in zip(axes[0], results):
        for lab in LABELS:
            m = np.asarray(r["graphs"][lab]["mean"], dtype=np.float64)
            shown = np.where(m <= EXACT * m[0], floor, m)
            ax.plot(t, shown, styles[lab], color=colours[lab], lw=1.6 if lab == "P2" else 1.2,
                    marker="o" if lab in ("C2", "P2") else None, ms=3,
                    label=f"({lab}) {NAMES[lab]}")
        ax.plot(t, r["C4_predicted"], ":", color="k", lw=0.8,
                label="(C4) expected, beta^t Delta(0)")
        ax.set_yscale("log")
        ax.set_ylim(floor / 3, 3.0)
        ax.set_xlim(0, rounds)
        ax.set_title(f"(n, k) = ({r['n']}, {r['k']})")
        ax.set_xlabel("round t")
        ax.set_ylabel("mean consensus error Delta(t) (bottom: exactly 0)")
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=4, frameon=False,
               bbox_to_anchor=(0.5, -0.13))
    fig.tight_layout()
    return fig


@figures.script
def main(args: figures.FigureArgs) -> figures.Result:
    trials = QUICK_TRIALS if args.scale == "quick" else TRIALS
    rounds = ROUNDS
    margin = figures.margin(args.name, "relative")
    results = [measure(n, k, trials, rounds) for n, k in CONFIGS]
    checks = [c for r in results for c in checks_of(r, rounds, margin)]
    checks.append(p1_check(results, min(P1_ROUND, rounds), margin))
    fe = {f"({r['n']}, {r['k']})": (r["graphs"]["P2"]["first_exact"],
                                    r["graphs"]["C2"]["first_exact"]) for r in results}
    measured = ("rounds to zero error, null-cascade / Base-(k+1): "
                + ", ".join(f"{c} {a} / {b}" for c, (a, b) in fe.items())
                + f"; at round {rounds} the mean error of C4, P1, C1, C3: "
                + "; ".join(f"({r['n']}, {r['k']}) "
                            + ", ".join(f"{r['graphs'][lab]['mean'][rounds]:.2g}"
                                        for lab in ("C4", "P1", "C1", "C3"))
                            for r in results)
                + f" ({trials} trials)")
    notes = [
        f"The Monte Carlo checks pair the graphs trial by trial (the same x(0)); their "
        f"\"seeds\" are the {trials} trials (trial s draws its random graphs with seed s). A "
        "check of \"at every round\" or over several configurations is the conjunction of "
        "one check per round or configuration; the row shows its weakest part (the worst "
        "outcome, then the least room to the claim's edge) and how many parts pass.",
        "C4's Monte Carlo mean is within "
        + ", ".join(f"{r['C4_max_z']:.2f}" for r in results)
        + f" standard errors of beta^t Delta(0) at rounds 1 to {min(Z_ROUNDS, rounds)} at "
        "(15, 2), (17, 2), (30, 2); later the mean of the trials is carried by a few slow "
        "draws and strays from its expectation by more than its standard error shows (the "
        "unit tests check the expectation with 3000 draws).",
    ]
    return figures.Result(
        _plot(results, rounds), measured, checks, _tables(results, rounds), notes=notes,
        setting=[("configurations", "(n, k) = " + ", ".join(f"({n}, {k})" for n, k in CONFIGS)),
                 ("trials", f"{trials}: x(0) = column s of default_rng({X0_SEED})."
                            f"standard_normal((n, {trials})); random graphs drawn with "
                            "seed = s"),
                 ("rounds", f"{rounds} (Delta(t) at t = 0..{rounds})"),
                 ("graphs", "; ".join(f"({lab}) {NAMES[lab]}" for lab in LABELS)),
                 ("consensus error", "Delta(t) = mean_i (x_i(t) - mean x)^2, mean over the "
                                     "trials"),
                 ("exact", f"Delta(t) <= {EXACT:g} Delta(0)"),
                 ("P1 against C4 across (n, k)", f"read at round {min(P1_ROUND, rounds)}")],
        dataset="none (graph math)", seeds=[])


if __name__ == "__main__":
    raise SystemExit(main())
