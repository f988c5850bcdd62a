"""D-Cliques Fig. 5: D-Cliques with n = 100, M = 10 and a fully-connected inter-clique topology.

Sec. III-C of the paper: 100 nodes holding one class each (10 classes, 10 nodes per class),
Greedy Swap cliques of 10 (the default number of steps), one edge between every pair of cliques,
spread equally among the nodes of each clique. Each node is coloured by its clique and labelled
with its class; grey edges lie within a clique, black edges between cliques. No training: the
same graph at every scale (seed 0).

    python paper_figures/fig_dcliques_05.py [--quick | --full] [--update-results]
"""

from __future__ import annotations

import numpy as np

from topofl import figures

SETTING = {"n": 100, "classes": 10, "clique_size": 10, "inter": "fully_connected", "seed": 0}


@figures.script
def main(args: figures.FigureArgs) -> figures.Result:
    import pandas as pd

    import topofl as tf

    n, classes = SETTING["n"], SETTING["classes"]
    cls = np.arange(n) % classes
    t = tf.topologies.dcliques(np.eye(classes)[cls], SETTING["clique_size"],
                               inter=SETTING["inter"], seed=SETTING["seed"])
    fig = tf.plotting.dcliques_drawing(
        t, labels=cls.tolist(),
        title=f"D-Cliques, n = {n}, M = {SETTING['clique_size']}, fully-connected "
              "inter-clique topology, 1 class/node (labels: class)")
    for edges in fig.axes[0].collections[1:3]:  # 495 edges drawn aliased: a PNG under 150 KB
        edges.set_antialiased(False)
    g = t.group_index
    inter = np.zeros(n, dtype=int)
    for u, v in t.graph.to_undirected().edges:
        if u != v and g[u] != g[v]:
            inter[u] += 1
            inter[v] += 1
    rows = []
    for k, members in enumerate(t.groups or ()):
        m = list(members)
        by_count = [int((inter[m] == 0).sum()), int((inter[m] == 1).sum()),
                    int((inter[m] >= 2).sum())]
        rows.append({"clique": k, "nodes": len(m), "classes": len(set(cls[m].tolist())),
                     "inter-clique edges": int(inter[m].sum()),
                     "members with 0 / 1 / 2+ inter edges": " / ".join(map(str, by_count))})
    cliques = pd.DataFrame(rows)
    k = len(t.groups or ())
    n_inter = t.num_edges - k * 45
    checks = [figures.fact("every clique holds every class",
                           bool((cliques["classes"] == classes).all()),
                           f"mean skew {t.params['skew']:.3g}", headline=True),
              figures.fact("one inter-clique edge per pair of cliques",
                           n_inter == k * (k - 1) // 2, f"{n_inter} edges, {k} cliques",
                           headline=True),
              figures.fact("every node has at most one inter-clique edge",
                           bool(inter.max() <= 1), f"at most {int(inter.max())}",
                           headline=True)]
    yes = [("yes" if c.outcome == "pass" else "no") for c in checks]
    measured = (f"{k} cliques of 10, each holding all {classes} classes: {yes[0]} (mean skew "
                f"{t.params['skew']:.3g}); {n_inter} inter-clique edges, one per pair of "
                f"cliques: {yes[1]}; every node has at most one of them: {yes[2]}; "
                f"{t.edges_per_node:.1f} edges per node")
    graph = pd.DataFrame([{
        "nodes": n, "edges": t.num_edges, "edges per node": t.edges_per_node,
        "mean clique skew": t.params["skew"],
        "messages per node and round (Clique Averaging)": tf.topologies.messages_per_node(t)}])
    return figures.Result(
        fig, measured, checks, {"cliques": cliques, "graph": graph},
        setting=[(key, str(v)) for key, v in SETTING.items()]
        + [("Greedy Swap steps", str(t.params["steps"])), ("weights", "Metropolis (eq. 2)")],
        dataset="one class per node (labels only)", seeds=[])


if __name__ == "__main__":
    raise SystemExit(main())
