"""Field claim: the k-peer exponential graph averages exactly where its family says it does.

Deterministic graph math, no training. For every ``n`` in ``2..200`` and ``k`` in
``{1, 2, 3, 5}``: the k-peer exponential graph (Niwa, Takezawa et al., NeurIPS 2025;
:func:`topofl.topologies.k_peer_exponential`), Base-(k+1) (Takezawa et al., NeurIPS 2023;
:func:`topofl.topologies.base_graph`), the one-peer exponential graph and the static exponential
graph (Ying et al., NeurIPS 2021). Two readings per graph: the rounds after which the product of
its mixing matrices *is* ``11^T / n`` (:func:`topofl.spectral.finite_time_consensus`, exact
averaging) and the rounds until ``||x_t - mean|| / ||x_0 - mean|| <= 1e-12`` for every one of 8
random start vectors (``x_{t+1} = W(t) x_t``; seed 0). The k-peer family's statement: exact
average after ``tau = ceil(log_{k+1} n)`` rounds iff ``n`` divides ``(k+1)^tau``. The same
numbers at every scale (``--quick`` runs ``n <= 40``).

    python paper_figures/fig_field_exact_averaging.py [--quick | --full] [--update-results]
"""

from __future__ import annotations

from typing import Any

import numpy as np

from topofl import figures

SETTING: dict[str, Any] = {"n": (2, 200), "k": (1, 2, 3, 5), "tol": 1e-12, "vectors": 8,
                           "seed": 0, "max_rounds": 600}
QUICK_N = 40  # --quick: n = 2..40 only (a smoke run of the same code)


def tau_of(n: int, k: int) -> int:
    """The smallest ``tau`` with ``(k+1)^tau >= n`` (integer arithmetic, no logarithm)."""
    tau, p = 0, 1
    while p < n:
        p *= k + 1
        tau += 1
    return tau


def family_says_exact(n: int, k: int) -> bool:
    """The k-peer family's statement: exact after ``tau`` rounds iff ``n | (k+1)^tau``."""
    return bool((k + 1) ** tau_of(n, k) % n == 0)


def rounds_to(mats: list[Any], n: int, *, tol: float, vectors: int, seed: int,
              max_rounds: int) -> int | None:
    """Rounds ``t`` until ``||x_t - mean|| <= tol ||x_0 - mean||`` for every one of ``vectors``
    random start vectors (columns, drawn from ``(seed, n)``), with ``x_{t+1} = W(t) x_t`` and
    ``W(t) = mats[t mod len(mats)]``; ``None`` when not within ``max_rounds``."""
    x = np.random.default_rng([seed, n]).standard_normal((n, vectors))
    mean = x.mean(axis=0, keepdims=True)
    start = np.linalg.norm(x - mean, axis=0)
    for t in range(1, max_rounds + 1):
        x = mats[(t - 1) % len(mats)] @ x
        if np.all(np.linalg.norm(x - mean, axis=0) <= tol * start):
            return t
    return None


def _period_mats(g: Any) -> list[Any]:
    """The mixing matrices of one period of a periodic graph (or of a static one)."""
    period = getattr(g, "period", None)
    if period is None:  # a static Topology
        return [g.W]
    return [g.at(t).W for t in range(int(period))]


def measure(n_max: int) -> list[dict[str, Any]]:
    """One row per ``(k, n)``: the family's statement and both readings of every graph."""
    import topofl as tf

    s = SETTING
    opts = {"tol": s["tol"], "vectors": s["vectors"], "seed": s["seed"],
            "max_rounds": s["max_rounds"]}
    shared: dict[int, dict[str, Any]] = {}
    for n in range(s["n"][0], n_max + 1):  # the graphs that do not depend on k
        one, exp = tf.topologies.one_peer_exponential(n), tf.topologies.exponential(n)
        shared[n] = {"one": rounds_to(_period_mats(one), n, **opts),
                     "static": rounds_to(_period_mats(exp), n, **opts),
                     "one_exact": tf.spectral.finite_time_consensus(
                         one, 3 * int(one.period or 1) + 2),
                     "static_peers": int(exp.in_degree.max())}
    rows = []
    for k in s["k"]:
        for n in range(max(s["n"][0], k + 1), n_max + 1):
            kp, base = tf.topologies.k_peer_exponential(n, k), tf.topologies.base_graph(n, k)
            tau = tau_of(n, k)
            rows.append({
                "k": k, "n": n, "tau": tau, "family_exact": family_says_exact(n, k),
                "kp_exact": tf.spectral.finite_time_consensus(kp, 3 * int(kp.period or 1) + 2),
                "kp": rounds_to(_period_mats(kp), n, **opts),
                "base_exact": tf.spectral.finite_time_consensus(
                    base, 3 * int(base.period or 1) + 2),
                "base": rounds_to(_period_mats(base), n, **opts),
                **shared[n]})
    return rows


def _text(v: Any) -> str:
    """A round count, or "never" (not within the cap, or never exactly)."""
    return "never" if v is None or (isinstance(v, float) and np.isnan(v)) else str(int(v))


@figures.script
def main(args: figures.FigureArgs) -> figures.Result:
    import matplotlib.pyplot as plt
    import pandas as pd

    n_max = QUICK_N if args.scale == "quick" else SETTING["n"][1]
    rows = measure(n_max)
    df = pd.DataFrame(rows)
    ks = list(SETTING["k"])
    exact = df[df["family_exact"]]
    other = df[~df["family_exact"]]
    # 1. the family's statement, both ways: exact after tau rounds where n | (k+1)^tau, never
    # exactly elsewhere (finite_time_consensus over three periods)
    as_said = exact["kp_exact"].eq(exact["tau"]).sum()
    never = other["kp_exact"].isna().sum()
    bad = [f"k={r.k}, n={r.n}" for r in df.itertuples()
           if (r.family_exact and r.kp_exact != r.tau)
           or (not r.family_exact and not pd.isna(r.kp_exact))]
    # 2. where exact: no more rounds than Base-(k+1)'s exact averaging
    vs_base = exact[exact["kp_exact"] > exact["base_exact"]]
    # 3. where exact: fewer rounds to 1e-12 than the static and the one-peer exponential graph
    #    (the one-peer graph is the k-peer graph itself at k = 1: compared for k >= 2 only)
    def fewer(col: str, frame: Any) -> Any:
        other_rounds = frame[col].fillna(np.inf)
        return frame[~(frame["kp"] < other_rounds)]

    # at n = k + 1 the k-peer and the static exponential graphs are both the complete graph
    # (one round each): "fewer" is read where the two graphs differ, "no more" where they are one
    differ = exact[exact["n"] > exact["k"] + 1]
    same = exact[exact["n"] == exact["k"] + 1]
    vs_static = fewer("static", differ)
    same_slower = same[~(same["kp"] <= same["static"].fillna(np.inf))]
    vs_one = fewer("one", exact[exact["k"] >= 2])
    checks = [
        figures.fact("the k-peer graph averages exactly after tau = ceil(log_{k+1} n) rounds "
                     "for every n with n | (k+1)^tau, and never exactly for the other n",
                     not bad, f"{as_said} of {len(exact)} (k, n) exact after tau; {never} of "
                     f"{len(other)} others never exact"
                     + (f"; wrong: {', '.join(bad[:6])}" if bad else ""), headline=True),
        figures.fact("where it is exact, in no more rounds than Base-(k+1)", vs_base.empty,
                     f"{len(exact) - len(vs_base)} of {len(exact)} (k, n)"
                     + ("" if vs_base.empty else "; more rounds at " + ", ".join(
                         f"k={r.k}, n={r.n}" for r in vs_base.itertuples())), headline=True),
        figures.fact("where it is exact, fewer rounds to 1e-12 than the static exponential "
                     "graph (where the two graphs differ, n > k + 1; at n = k + 1 both are the "
                     "complete graph: no more rounds)", vs_static.empty and same_slower.empty,
                     f"{len(differ) - len(vs_static)} of {len(differ)} (k, n) with n > k + 1 "
                     f"fewer; {len(same) - len(same_slower)} of {len(same)} with n = k + 1 no "
                     "more" + ("" if vs_static.empty and same_slower.empty else "; not at "
                               + ", ".join(f"k={r.k}, n={r.n} ({_text(r.kp)} vs "
                                           f"{_text(r.static)})" for r in
                                           pd.concat([vs_static, same_slower]).itertuples())),
                     headline=True),
        figures.fact("where it is exact (k >= 2), fewer rounds to 1e-12 than the one-peer "
                     "exponential graph", vs_one.empty,
                     f"{len(exact[exact['k'] >= 2]) - len(vs_one)} of "
                     f"{len(exact[exact['k'] >= 2])} (k, n)"
                     + ("" if vs_one.empty else "; not at " + ", ".join(
                         f"k={r.k}, n={r.n}" for r in vs_one.itertuples())), headline=True),
    ]
    base_all = df["base_exact"].notna().all()
    checks.append(figures.fact("Base-(k+1) averages exactly for every n", bool(base_all),
                               f"{int(df['base_exact'].notna().sum())} of {len(df)} (k, n)"))
    slower = other[other["kp"].fillna(np.inf) > other["base"].fillna(np.inf)]
    checks.append(figures.fact("where the k-peer graph is not exact, Base-(k+1) reaches 1e-12 in "
                               "fewer rounds", slower.shape[0] == len(other),
                               f"{len(slower)} of {len(other)} (k, n)"))

    # the figure: rounds to 1e-12 against n, one panel per k
    fig, axes = plt.subplots(2, 2, figsize=(8.4, 6.0), sharey=True, squeeze=False)
    cap = SETTING["max_rounds"]
    for ax, k in zip(axes.ravel(), ks):
        part = df[df["k"] == k]
        for col, label, style in (("static", "static exponential", ":"),
                                  ("one", "one-peer exponential", "--"),
                                  ("base", "Base-(k+1)", "-"),
                                  ("kp", "k-peer exponential", "-")):
            y = part[col].fillna(cap).to_numpy(dtype=float)
            ax.plot(part["n"], y, style, lw=1.0, label=label, antialiased=False)
        ex = part[part["family_exact"]]
        ax.plot(ex["n"], ex["kp"], "o", ms=4, mfc="none", color="k",
                label="n | (k+1)^tau (k-peer exact)")
        ax.set_yscale("log")
        ax.set_title(f"k = {k}")
        ax.set_xlabel("nodes n")
        ax.set_ylabel("rounds to 1e-12 (relative)")
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=3, frameon=False,
               bbox_to_anchor=(0.5, -0.1))
    fig.tight_layout()

    per_k = []
    for k in ks:
        part = df[df["k"] == k]
        ex, ot = part[part["family_exact"]], part[~part["family_exact"]]
        per_k.append({
            "k": k, "n": f"{int(part['n'].min())}..{int(part['n'].max())}",
            "n with n | (k+1)^tau": ", ".join(map(str, ex["n"])),
            "k-peer exact (n)": int(part["kp_exact"].notna().sum()),
            "Base-(k+1) exact (n)": int(part["base_exact"].notna().sum()),
            "k-peer rounds to 1e-12 elsewhere (median / max)":
                f"{ot['kp'].median():.0f} / {_text(ot['kp'].max())}" if len(ot) else "-",
            "Base-(k+1) exact rounds elsewhere (median / max)":
                f"{ot['base_exact'].median():.0f} / {_text(ot['base_exact'].max())}"
                if len(ot) else "-"})
    at_exact = pd.DataFrame([{
        "k": r.k, "n": r.n, "tau": r.tau, "k-peer exact after": _text(r.kp_exact),
        "Base-(k+1) exact after": _text(r.base_exact), "k-peer to 1e-12": _text(r.kp),
        "Base-(k+1) to 1e-12": _text(r.base), "one-peer exp to 1e-12": _text(r.one),
        "static exp to 1e-12": _text(r.static), "static exp peers": r.static_peers}
        for r in exact.itertuples()])
    measured = (f"k in {{{', '.join(map(str, ks))}}}, n = 2..{n_max}: {as_said} of "
                f"{len(exact)} (k, n) with n | (k+1)^tau exact after tau rounds, {never} of "
                f"{len(other)} others never exact; where exact, no more rounds than "
                f"Base-(k+1) at {len(exact) - len(vs_base)} of {len(exact)}, fewer rounds to "
                f"1e-12 than the static exponential graph at {len(differ) - len(vs_static)} of "
                f"the {len(differ)} where the graphs differ (n > k + 1; at n = k + 1 both are "
                f"complete: no more rounds at {len(same) - len(same_slower)} of {len(same)}) "
                f"and than the one-peer exponential graph (k >= 2) at "
                f"{len(exact[exact['k'] >= 2]) - len(vs_one)} of {len(exact[exact['k'] >= 2])}")
    notes = []
    if not vs_static.empty:
        notes.append("Where the k-peer graph is exact but not faster than the static "
                     "exponential graph (n > k + 1): the static graph's in-degree a round is "
                     "in the 'static exp peers' column (about log2 n peers, against k).")
    return figures.Result(
        fig, measured, checks,
        {"per k": pd.DataFrame(per_k), "where the k-peer graph is exact": at_exact},
        setting=[("n", f"2..{n_max}"), ("k", ", ".join(map(str, ks))),
                 ("tolerance", f"{SETTING['tol']:g} (relative, every start vector)"),
                 ("start vectors", f"{SETTING['vectors']} standard normal, seed "
                                   f"(seed={SETTING['seed']}, n)"),
                 ("rounds cap", str(cap)),
                 ("exact averaging", "topofl.spectral.finite_time_consensus over 3 periods"),
                 ("weights", "k-peer: 1/(k+1) circulant; Base-(k+1): its own; exponential: "
                             "Metropolis")],
        dataset="none (graph math)", seeds=[])


if __name__ == "__main__":
    raise SystemExit(main())
