"""Registry entries (``dcliques``, ``connect_cliques``) with their spec builders and examples."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from topofl._utils.rng import Seed, as_generator
from topofl._utils.validation import check_int
from topofl.graph import Topology
from topofl.topologies._registry import GraphFamily, Param, register
from topofl.topologies.cliques._input import INTER_CLIQUE, _clique_sizes, _max_removable
from topofl.topologies.cliques.assembly import dcliques
from topofl.topologies.cliques.inter import connect_cliques
from topofl.topologies.cliques.swap import random_cliques


def _one_class_per_node(n: int, classes: int) -> np.ndarray:
    """Spec labels: node ``i`` holds only class ``i mod classes`` (one count)."""
    out = np.zeros((n, classes))
    out[np.arange(n), np.arange(n) % classes] = 1.0
    return out


def _dcliques_spec(n: int, *, classes: int = 10, seed: Seed, **kwargs: Any) -> Topology:
    n = check_int(n, "n", low=1)
    classes = check_int(classes, "classes", low=1)
    return dcliques(_one_class_per_node(n, classes), seed=seed, **kwargs)


def _connect_cliques_spec(
    n: int, clique_size: int = 10, *, seed: Seed, **kwargs: Any
) -> Topology:
    rng = as_generator(seed)
    return connect_cliques(random_cliques(n, clique_size, seed=rng), seed=rng, **kwargs)


def _small_removal(sizes: Iterable[int], rng: np.random.Generator) -> int:
    return int(rng.integers(0, min(_max_removable(min(sizes)), 3) + 1))


def _dcliques_example(n: int, rng: np.random.Generator) -> dict[str, Any] | None:
    if n < 2:
        return None
    num_classes = int(rng.integers(1, 11))
    labels = rng.integers(0, 4, size=(n, num_classes)).astype(np.float64)
    labels[np.arange(n), rng.integers(num_classes, size=n)] += 1.0  # no zero row
    m = int(rng.integers(2, min(n, 12) + 1))
    kwargs: dict[str, Any] = {
        "label_distributions": labels,
        "clique_size": m,
        "inter": str(rng.choice(INTER_CLIQUE)),
        "c": int(rng.integers(1, 4)),
        "steps": int(rng.integers(0, 30)),
        "remove_intra_edges": _small_removal(_clique_sizes(n, m), rng),
    }
    if rng.random() < 0.25:
        kwargs["epsilon"] = float(rng.choice([0.5, 1.0, 10.0]))
    return kwargs


def _connect_cliques_example(n: int, rng: np.random.Generator) -> dict[str, Any]:
    perm = rng.permutation(n).tolist()
    cliques: list[list[int]] = []
    while perm:
        s = int(rng.integers(1, 9))
        cliques.append(perm[:s])
        perm = perm[s:]
    return {
        "cliques": cliques,
        "inter": str(rng.choice(INTER_CLIQUE)),
        "c": int(rng.integers(1, 4)),
        "remove_intra_edges": _small_removal((len(x) for x in cliques), rng),
    }


_INTER_PARAMS = (
    Param("inter", str, "inter-clique topology", choices=INTER_CLIQUE),
    Param("c", int, "small_world(_single): closest cliques linked per distance scale", low=1),
    Param("remove_intra_edges", int, "intra-clique edges removed per clique", low=0),
)

register(GraphFamily(
    "dcliques", dcliques,
    (Param("n", int, "number of nodes (spec: node i holds only class i mod classes)", low=2),
     Param("classes", int, "spec only: number of classes L", low=1),
     Param("clique_size", int, "largest clique size M", low=2, high="n"),
     *_INTER_PARAMS,
     Param("steps", int, "Greedy Swap steps (default auto_steps(n, clique_size))", low=0),
     Param("epsilon", float, "differential privacy of the shared histograms", low=0)),
    _dcliques_example, random=True,
    description="D-Cliques: Greedy Swap cliques joined by an inter-clique topology",
    from_spec=_dcliques_spec, from_labels=dcliques))
register(GraphFamily(
    "connect_cliques", connect_cliques,
    (Param("cliques", list, "partition of 0..n-1 (spec: random cliques of n, clique_size)"),
     *_INTER_PARAMS),
    _connect_cliques_example, random=True,
    description="complete cliques joined by an inter-clique topology",
    from_spec=_connect_cliques_spec))
