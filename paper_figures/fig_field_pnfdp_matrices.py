"""Field claim: PN-f-DP's committed pairwise privacy matrices of random walks, recomputed from
topofl's own graphs (Li, Su, Wang, Long and Su, NeurIPS 2025; code ``lx10077/PN-f-DP``).

Graph math, no training, no seed. The authors commit, for two graphs, two ``n x n`` matrices
of ``epsilon[u, v]``, the privacy of node ``u``'s data from node ``v``'s view when a random
walk of ``T`` steps carries a model and every visited node takes a local step with Gaussian
noise ``sigma`` (``K = 1``, the non-convex case ``c = 1``):

* the 5-dimensional hypercube (``nx.hypercube_graph(5)``, ``n = 32``), ``sigma = 1``,
  ``delta = 1e-5``, ``T = 275``;
* the ring of 3 cliques of 6 (``nx.ring_of_cliques(3, 6)``, ``n = 18``), ``sigma = 1``,
  ``delta = 1e-4``, ``T = 1300``.

The RDP matrix is Theorem 3 of arXiv 2402.07471 in the infinite-horizon closed form the
authors' code evaluates (:func:`topofl.privacy.random_walk_rdp` with ``form="pnfdp"``),
converted to ``(epsilon, delta)``-DP by the conversion each graph's numbers pin (Balle et al.
2020 on the hypercube, zCDP on the ring of cliques: the claim's note); the f-DP matrix is the
first-hitting mixture of Gaussian mechanisms composed by the PRV accountant
(:func:`topofl.privacy.random_walk_fdp`, every pair). Both on
``Topology.from_networkx(G, weights="metropolis")``. The committed upper triangles are in
``tests/privacy/data/pnfdp_reference.json``. ``--quick`` recomputes the f-DP matrix on a few
pairs at each graph distance (the RDP matrices whole); ``--full`` (the default) every pair.

    python paper_figures/fig_field_pnfdp_matrices.py [--quick | --full] [--update-results]
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from topofl import figures

HERE = Path(__file__).resolve().parent
REFERENCE = HERE.parent / "tests" / "privacy" / "data" / "pnfdp_reference.json"
#: the agreement the claim asks for, in epsilon
TOLERANCE = 1e-9
#: the conversion from RDP each graph's committed numbers pin (the claim's note)
CONVERSION = {"hypercube": "balle2020", "ring_of_cliques": "zcdp"}
OTHER = {"balle2020": "zcdp", "zcdp": "balle2020"}
NAMES = {"hypercube": "hypercube, n = 32", "ring_of_cliques": "ring of 3 cliques of 6, n = 18"}


def _graph(name: str) -> Any:
    import networkx as nx

    from topofl.graph import Topology

    g = nx.hypercube_graph(5) if name == "hypercube" else nx.ring_of_cliques(3, 6)
    return Topology.from_networkx(nx.convert_node_labels_to_integers(g), weights="metropolis")


def _committed(ref: dict[str, Any], key: str) -> np.ndarray:
    n = int(ref["n"])
    out = np.zeros((n, n))
    out[np.triu_indices(n, 1)] = [float(x) for x in ref[key]]
    return out + out.T


def measure(name: str, ref: dict[str, Any], quick: bool) -> dict[str, Any]:
    """The four matrices of one graph (the committed two and topofl's two) and their gaps."""
    from topofl.privacy import random_walk_fdp, random_walk_rdp
    from topofl.privacy.pairwise import hop_distances

    topo = _graph(name)
    n = int(ref["n"])
    kw = dict(sigma=float(ref["sigma"]), rounds=int(ref["rounds"]), delta=float(ref["delta"]))
    rdp = random_walk_rdp(topo, method=CONVERSION[name], form="pnfdp", **kw).epsilon
    other = random_walk_rdp(topo, method=OTHER[CONVERSION[name]], form="pnfdp", **kw).epsilon
    hops = hop_distances((topo.W != 0).astype(float).toarray())
    pairs = [(u, v) for u in range(n) for v in range(u)]  # the authors compute i > j
    if quick:  # the first pair at each distance from node 0
        pairs = sorted({int(hops[0, v]): (v, 0) for v in range(1, n)}.values())
    fdp_p = random_walk_fdp(topo, pairs=pairs, **kw)
    c_rdp, c_fdp = _committed(ref, "rdp_eps"), _committed(ref, "fdp_eps")
    rows = np.array([u for u, _ in pairs])
    cols = np.array([v for _, v in pairs])
    fdp = fdp_p.epsilon[rows, cols]
    off = ~np.eye(n, dtype=bool)
    return dict(
        name=name, n=n, file=ref["file"], sigma=kw["sigma"], delta=kw["delta"],
        rounds=kw["rounds"], conversion=CONVERSION[name], pairs=len(pairs),
        rdp_gap=float(np.abs(rdp - c_rdp)[off].max()),
        other_gap=float(np.abs(other - c_rdp)[off].max()),
        fdp_gap=float(np.abs(fdp - c_fdp[rows, cols]).max()),
        fdp_below_rdp=int(np.sum(fdp < rdp[rows, cols])),
        ratio=[float(np.min(fdp / rdp[rows, cols])), float(np.max(fdp / rdp[rows, cols]))],
        by_distance=[dict(distance=int(d),
                          pairs=int(np.sum(hops[rows, cols] == d)),
                          rdp=float(np.mean(rdp[rows, cols][hops[rows, cols] == d])),
                          fdp=float(np.mean(fdp[hops[rows, cols] == d])))
                     for d in sorted(set(int(h) for h in hops[rows, cols]))],
        rdp_range=[float(rdp[off].min()), float(rdp[off].max())],
        fdp_range=[float(fdp.min()), float(fdp.max())])


def checks_of(results: list[dict[str, Any]]) -> list[figures.Check]:
    out = []
    for r in results:
        for what, gap in (("RDP", r["rdp_gap"]), ("f-DP", r["fdp_gap"])):
            out.append(figures.fact(
                f"{NAMES[r['name']]}: topofl's {what} matrix equals the committed one within "
                f"{TOLERANCE:g} in epsilon",
                gap <= TOLERANCE,
                f"largest |difference| {gap:.2g} over "
                f"{r['n'] * (r['n'] - 1) // 2 if what == 'RDP' else r['pairs']} pairs",
                headline=True))
    for r in results:
        out.append(figures.fact(
            f"{NAMES[r['name']]}: the f-DP epsilon below the RDP epsilon for every pair (the "
            "f-DP analysis is the tighter)",
            r["fdp_below_rdp"] == r["pairs"],
            f"{r['fdp_below_rdp']} of {r['pairs']} pairs; f-DP / RDP from {r['ratio'][0]:.3f} "
            f"to {r['ratio'][1]:.3f}"))
    return out


def _tables(results: list[dict[str, Any]]) -> dict[str, Any]:
    import pandas as pd

    out: dict[str, Any] = {}
    out["topofl against the committed matrices"] = pd.DataFrame(
        [{"graph": NAMES[r["name"]], "file": r["file"], "sigma": r["sigma"],
          "delta": f"{r['delta']:g}", "T": r["rounds"], "conversion": r["conversion"],
          "RDP: largest |diff|": f"{r['rdp_gap']:.2g}",
          "RDP, the other conversion: largest |diff|": f"{r['other_gap']:.3g}",
          "f-DP pairs": r["pairs"], "f-DP: largest |diff|": f"{r['fdp_gap']:.2g}"}
         for r in results])
    out["epsilon by graph distance (mean over the pairs)"] = pd.DataFrame(
        [{"graph": NAMES[r["name"]], "hops": d["distance"], "pairs": d["pairs"],
          "RDP epsilon": f"{d['rdp']:.4f}", "f-DP epsilon": f"{d['fdp']:.4f}",
          "f-DP / RDP": f"{d['fdp'] / d['rdp']:.3f}"}
         for r in results for d in r["by_distance"]])
    return out


def _plot(results: list[dict[str, Any]]) -> Any:
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(results), figsize=(10, 3.8), squeeze=False)
    for ax, r in zip(axes[0], results):
        d = [x["distance"] for x in r["by_distance"]]
        ax.plot(d, [x["rdp"] for x in r["by_distance"]], "o-", label="RDP (Theorem 3)")
        ax.plot(d, [x["fdp"] for x in r["by_distance"]], "s-", label="f-DP (PN-f-DP)")
        ax.set_title(NAMES[r["name"]])
        ax.set_xlabel("graph distance between u and v (hops)")
        ax.set_ylabel(f"epsilon at delta = {r['delta']:g} (mean over pairs)")
        ax.set_xticks(d)
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=2, frameon=False,
               bbox_to_anchor=(0.5, -0.08))
    fig.tight_layout()
    return fig


@figures.script
def main(args: figures.FigureArgs) -> figures.Result:
    reference = json.loads(REFERENCE.read_text(encoding="utf-8"))
    quick = args.scale == "quick"
    results = [measure(name, reference["graphs"][name], quick)
               for name in ("hypercube", "ring_of_cliques")]
    checks = checks_of(results)
    measured = "; ".join(
        f"{NAMES[r['name']]}: largest |difference| RDP {r['rdp_gap']:.2g}, f-DP "
        f"{r['fdp_gap']:.2g} ({r['pairs']} pairs), f-DP / RDP {r['ratio'][0]:.2f}-"
        f"{r['ratio'][1]:.2f}" for r in results)
    notes = [
        "The committed matrices are read from " + reference["source"] + ".",
        "The conversion the other graph's numbers pin misses each graph's RDP matrix by "
        + " and ".join(f"{r['other_gap']:.3g} ({NAMES[r['name']]})" for r in results)
        + ": the committed numbers tell which conversion made them.",
    ]
    return figures.Result(
        _plot(results), measured, checks, _tables(results), notes=notes,
        setting=[("graphs", "; ".join(NAMES.values()) + " (networkx, Metropolis weights)"),
                 ("parameters", "; ".join(f"{NAMES[r['name']]}: sigma {r['sigma']:g}, delta "
                                          f"{r['delta']:g}, T {r['rounds']}" for r in results)),
                 ("local steps", "K = 1, c = 1 (the non-convex case)"),
                 ("f-DP accountant", "prv-accountant, eps_error 0.1, delta_error 1e-10, "
                                     "eps_max 30"),
                 ("pairs", ("a few at each distance (--quick)" if quick else
                            "every pair u > v, as the authors compute"))],
        dataset="none (graph math)", seeds=[])


if __name__ == "__main__":
    raise SystemExit(main())
