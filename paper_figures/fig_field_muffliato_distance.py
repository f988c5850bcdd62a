"""Field claim: Muffliato's pairwise privacy loss decays with the graph distance between two
nodes (Cyffers, Even, Bellet and Massoulie, NeurIPS 2022, Fig. 1a; code ``totilas/muffliato``,
``figa.py``).

Graph math, no training. Noisy gossip averaging with the figure's settings: local privacy
``eps_local = 1``, Renyi order ``alpha = 2``, noise ``sigma = sqrt(alpha eps_local / 2) = 1``,
``T = ceil(log(n max(1/4, sigma^2) / sigma^2) / sqrt(lambda_W))`` gossip steps
(:func:`topofl.privacy.muffliato_rounds`), Metropolis weights. The loss of node 0's data in node
``v``'s view is ``alpha rho[0, v]`` of :func:`topofl.privacy.muffliato`, clipped at
``eps_local`` as the figure clips it, averaged (and its min and max taken) over the nodes at
each shortest-path distance from node 0. The headline counts the loss on the plain powers
``W^t`` (what the figure's script counts); the secondary checks count it on the Chebyshev
polynomials the accelerated gossip sends (``accelerate=True``, the paper's Algorithm 1).

Scales: ``--quick`` the four families at about 128 nodes (the geometric radius scaled to keep
the expected degree); the default and ``--full`` the figure's graphs (n = 2048; the grid 45 x
45).

    python paper_figures/fig_field_muffliato_distance.py [--quick | --full] [--update-results]
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np

from topofl import figures

EPS_LOCAL, ALPHA = 1.0, 2.0
SIGMA = math.sqrt(ALPHA / 2 * EPS_LOCAL)
#: the headline's decay: a factor of 10 (one decade of the figure's log axis)
DECADE = 10.0
#: the Erdos-Renyi draws (the script's five trials)
ER_DRAWS = 5
LABELS = {"hypercube": "hypercube", "er": "Erdos-Renyi", "geometric": "random geometric",
          "grid": "grid"}


def graphs(quick: bool) -> list[tuple[str, int, Any, dict[str, Any]]]:
    """``(family, draw, networkx graph, facts)`` for the figure's graphs (or small ones)."""
    import networkx as nx

    n = 128 if quick else 2048
    out: list[tuple[str, int, Any, dict[str, Any]]] = []
    dim = int(math.log2(n))
    out.append(("hypercube", 0, nx.convert_node_labels_to_integers(nx.hypercube_graph(dim)),
                {"construction": f"nx.hypercube_graph({dim})"}))
    p = math.log(n) / n
    for draw in range(ER_DRAWS):
        seed, redraws = 1000 * draw, 0
        g = nx.gnp_random_graph(n, p, seed=seed)
        while not nx.is_connected(g):
            seed, redraws = seed + 1, redraws + 1
            g = nx.gnp_random_graph(n, p, seed=seed)
        out.append(("er", draw, g, {"construction": f"nx.gnp_random_graph({n}, log(n)/n, "
                                                    f"seed={seed})", "redraws": redraws}))
    radius = 0.07 * math.sqrt(2048 / n)
    seed, redraws = 0, 0
    while True:
        rng = np.random.default_rng(seed)
        pos = {i: tuple(rng.random(2)) for i in range(n)}
        g = nx.random_geometric_graph(n, radius, pos=pos)
        if nx.is_connected(g):
            break
        seed, redraws = seed + 1, redraws + 1
    out.append(("geometric", 0, g, {"construction": f"nx.random_geometric_graph({n}, "
                                                    f"{radius:.4g}), positions of "
                                                    f"default_rng({seed})", "redraws": redraws}))
    side = 11 if quick else 45
    out.append(("grid", 0, nx.convert_node_labels_to_integers(nx.grid_2d_graph(side, side)),
                {"construction": f"nx.grid_2d_graph({side}, {side})"}))
    return out


def by_distance(loss: np.ndarray, distance: np.ndarray) -> list[dict[str, float]]:
    """Mean, min and max of ``loss`` over the nodes at each distance ``1 .. D - 1``."""
    D = int(distance.max())
    return [dict(d=d, nodes=int(np.sum(distance == d)), mean=float(loss[distance == d].mean()),
                 min=float(loss[distance == d].min()), max=float(loss[distance == d].max()))
            for d in range(1, D)]


def decays(rows: list[dict[str, float]]) -> tuple[bool, float, int | None]:
    """``(non-increasing, first / last ratio, first distance where the mean rises)``."""
    means = [r["mean"] for r in rows]
    rise = next((rows[i + 1]["d"] for i in range(len(means) - 1) if means[i + 1] > means[i]),
                None)
    ratio = means[0] / means[-1] if means[-1] > 0 else math.inf
    return rise is None, ratio, (None if rise is None else int(rise))


def measure(family: str, draw: int, g: Any, facts: dict[str, Any]) -> dict[str, Any]:
    import networkx as nx

    from topofl.graph import Topology
    from topofl.privacy import muffliato, muffliato_rounds

    start = time.process_time()
    topo = Topology.from_networkx(g, weights="metropolis")
    T = muffliato_rounds(topo, SIGMA)
    lengths = nx.single_source_shortest_path_length(g, 0)
    distance = np.array([lengths[v] for v in range(g.number_of_nodes())])
    out = dict(family=family, draw=draw, n=g.number_of_nodes(), edges=g.number_of_edges(),
               T=T, D=int(distance.max()), **facts)
    for kind, accelerate in (("plain", False), ("accelerated", True)):
        p = muffliato(topo, SIGMA, T, accelerate=accelerate)
        loss = np.minimum(ALPHA * p.curve[0], EPS_LOCAL)   # clipped as the figure clips it
        rows = by_distance(loss, distance)
        ok, ratio, rise = decays(rows)
        far = distance >= 3
        out[kind] = dict(rows=rows, non_increasing=ok, ratio=ratio, rise=rise,
                         beyond_2_below=int(np.sum(ALPHA * p.curve[0][far] < EPS_LOCAL)),
                         beyond_2=int(far.sum()), gamma=p.params.get("gamma"))
    out["cpu_s"] = time.process_time() - start
    return out


def _name(r: dict[str, Any]) -> str:
    base = f"{LABELS[r['family']]} (n = {r['n']})"
    return f"{base}, draw {r['draw']}" if r["family"] == "er" else base


def checks_of(results: list[dict[str, Any]]) -> list[figures.Check]:
    out = []
    for kind, head in (("plain", True), ("accelerated", False)):
        what = "" if head else " (Chebyshev polynomials)"
        for r in results:
            k = r[kind]
            last = k["rows"][-1]["d"]
            out.append(figures.fact(
                f"{_name(r)}{what}: the mean loss non-increasing in the distance, d = 1 to "
                f"{last}", k["non_increasing"],
                "non-increasing" if k["non_increasing"] else f"rises at d = {k['rise']}",
                headline=head))
            out.append(figures.fact(
                f"{_name(r)}{what}: the mean loss at d = {last} below d = 1's by more than "
                f"a factor of {DECADE:g}", k["ratio"] > DECADE,
                f"{k['rows'][0]['mean']:.3g} at d = 1, {k['rows'][-1]['mean']:.3g} at d = "
                f"{last}: a factor of {k['ratio']:.3g}", headline=head))
    for r in results:
        k = r["plain"]
        out.append(figures.fact(
            f"{_name(r)}: every node at distance 3 or more below the local loss eps_local",
            k["beyond_2_below"] == k["beyond_2"],
            f"{k['beyond_2_below']} of {k['beyond_2']} nodes"))
    return out


def _tables(results: list[dict[str, Any]]) -> dict[str, Any]:
    import pandas as pd

    out: dict[str, Any] = {}
    out["graphs"] = pd.DataFrame(
        [{"graph": _name(r), "construction": r["construction"], "edges": r["edges"],
          "redraws": r.get("redraws", 0), "T": r["T"], "largest distance D": r["D"],
          "gamma": f"{r['accelerated']['gamma']:.4f}", "CPU s": f"{r['cpu_s']:.1f}"}
         for r in results])
    for kind in ("plain", "accelerated"):
        out[f"loss by distance from node 0 ({kind})"] = pd.DataFrame(
            [{"graph": _name(r), "d": row["d"], "nodes": row["nodes"],
              "mean": f"{row['mean']:.3g}", "min": f"{row['min']:.3g}",
              "max": f"{row['max']:.3g}"}
             for r in results for row in r[kind]["rows"]])
    return out


def _plot(results: list[dict[str, Any]]) -> Any:
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4.4), sharey=True)
    colors = {"hypercube": "tab:red", "er": "tab:purple", "geometric": "tab:orange",
              "grid": "tab:brown"}
    for ax, kind in zip(axes, ("plain", "accelerated")):
        for fam in ("hypercube", "er", "geometric", "grid"):
            rs = [r for r in results if r["family"] == fam]
            D = min(len(r[kind]["rows"]) for r in rs)
            d = np.arange(1, D + 1)
            mean = np.mean([[row["mean"] for row in r[kind]["rows"][:D]] for r in rs], axis=0)
            lo = np.min([[row["min"] for row in r[kind]["rows"][:D]] for r in rs], axis=0)
            hi = np.max([[row["max"] for row in r[kind]["rows"][:D]] for r in rs], axis=0)
            err = np.clip([mean - lo, hi - mean], 0.0, None)  # rounding of the mean
            ax.errorbar(d, mean, yerr=err, label=LABELS[fam],
                        color=colors[fam], capsize=3, lw=1.5, marker="o", ms=3)
        ax.axhline(EPS_LOCAL, color="black", lw=1.5, label="local (LDP) loss")
        ax.set_yscale("log")
        ax.set_ylim(1e-5, 1.5)
        ax.set_xlim(0, 25.5)
        ax.set_xlabel("shortest path length from node 0")
        ax.set_title("loss on W^t (the figure's count)" if kind == "plain"
                     else "loss on the Chebyshev polynomials")
    axes[0].set_ylabel("privacy loss (alpha rho, clipped at eps_local)")
    axes[0].legend(loc="lower left", fontsize=8)
    fig.tight_layout()
    return fig


@figures.script
def main(args: figures.FigureArgs) -> figures.Result:
    quick = args.scale == "quick"
    results = [measure(*g) for g in graphs(quick)]
    checks = checks_of(results)
    hyper = next(r for r in results if r["family"] == "hypercube")
    measured = "; ".join(
        f"{_name(r)}: T {r['T']}, mean loss {r['plain']['rows'][0]['mean']:.3g} at d = 1 -> "
        f"{r['plain']['rows'][-1]['mean']:.3g} at d = {r['plain']['rows'][-1]['d']}"
        + ("" if r["plain"]["non_increasing"] else f" (rises at d = {r['plain']['rise']})")
        for r in results if r["family"] != "er" or r["draw"] == 0)
    notes = [
        "The figure's script counts the loss on the plain powers W^t while it runs the "
        "accelerated iterates; the right panel counts it on the polynomials the accelerated "
        f"gossip sends (gamma {hyper['accelerated']['gamma']:.4f} on the hypercube).",
        "Mean loss at the largest distance read, on W^t -> on the polynomials: " + "; ".join(
            f"{_name(r)}: {r['plain']['rows'][-1]['mean']:.3g} -> "
            f"{r['accelerated']['rows'][-1]['mean']:.3g}"
            for r in results if r["family"] != "er" or r["draw"] == 0) + ".",
        "Distances beyond 25 are computed (the grid's reach D - 1 from its corner) but drawn "
        "only to 25, the figure's axis.",
    ]
    return figures.Result(
        _plot(results), measured, checks, _tables(results), notes=notes,
        setting=[("graphs", "; ".join(
                     f"{_name(r)}: {r['construction']}" + (f" ({ER_DRAWS} draws)" if
                                                           r["family"] == "er" else "")
                     for r in results if r["family"] != "er" or r["draw"] == 0)),
                 ("privacy", f"eps_local {EPS_LOCAL:g}, alpha {ALPHA:g}, sigma {SIGMA:g}, "
                             "T = muffliato_rounds (accelerated rate), Metropolis weights"),
                 ("read", "node 0's loss in every other node's view, clipped at eps_local, by "
                          "shortest-path distance d = 1 .. D - 1")],
        dataset="none (graph math)", seeds=[])


if __name__ == "__main__":
    raise SystemExit(main())
