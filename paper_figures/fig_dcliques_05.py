"""D-Cliques Fig. 5: D-Cliques with n = 100, M = 10 and a fully-connected inter-clique topology.

Sec. III-C of the paper: 100 nodes holding one class each (10 classes, 10 nodes per class),
Greedy Swap cliques of 10 (the default number of steps), one edge between every pair of cliques,
spread equally among the nodes of each clique. Each node is coloured by its clique and labelled
with its class; grey edges lie within a clique, black edges between cliques. No training: the
same graph at every scale (seed 0).

    python paper_figures/fig_dcliques_05.py [--quick | --full]
"""

from __future__ import annotations

import sys

import numpy as np

from topofl import figures

SETTING = {"n": 100, "classes": 10, "clique_size": 10, "inter": "fully_connected", "seed": 0}


def main(argv: list[str] | None = None) -> int:
    args = figures.parse_args(__doc__, "dcliques_05", argv)
    import matplotlib

    matplotlib.use("Agg")
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
    table = pd.DataFrame(rows)
    k = len(t.groups or ())
    every_class = bool((table["classes"] == classes).all())
    one_per_pair = t.num_edges - k * 45 == k * (k - 1) // 2
    spread = bool(inter.max() <= 1)
    measured = (f"{k} cliques of 10, each holding all {classes} classes: {every_class} (mean "
                f"skew {t.params['skew']:.3g}); {t.num_edges - k * 45} inter-clique edges, one per "
                f"pair of cliques: {one_per_pair}; every node has at most one of them: {spread}; "
                f"{t.edges_per_node:.1f} edges per node")
    png = figures.write(
        args, fig, title="D-Cliques Fig. 5: D-Cliques on 100 nodes, fully-connected inter-clique",
        setting=[(key, str(v)) for key, v in SETTING.items()]
        + [("Greedy Swap steps", str(t.params["steps"])), ("weights", "Metropolis (eq. 2)")],
        numbers={"cliques": table, "graph": pd.DataFrame([{
            "nodes": n, "edges": t.num_edges, "edges per node": t.edges_per_node,
            "mean clique skew": t.params["skew"],
            "messages per node and round (Clique Averaging)": tf.topologies.messages_per_node(t),
        }])},
        claim=("each clique holds every class; a fully-connected inter-clique topology gives each "
               "clique exactly one edge with each other clique, spread equally among its nodes"),
        measured=measured, holds=every_class and one_per_pair and spread,
        dataset="one class per node (labels only)",
    )
    print(png)
    return 0


if __name__ == "__main__":
    sys.exit(main())
