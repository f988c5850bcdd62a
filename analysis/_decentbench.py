"""What the decent-bench reference scripts share (``decentbench_reference.py``,
``decentbench_local_tracking.py``, ``decentbench_proxskip_dlm.py``): its regression problems on
4 agents, their data as arrays, the starting points, its three graphs and the rounding that keeps
the committed JSON small. Imported by those scripts only, under decent-bench's Python (>= 3.13)."""

from __future__ import annotations

from typing import Any

import networkx as nx
import numpy as np
from decent_array import interoperability as iop
from decent_bench.benchmark import create_regression_problem
from decent_bench.costs import LinearRegressionCost
from decent_bench.datasets import SyntheticRegressionDatasetHandler
from decent_bench.datasets.utils import split_iid

N_AGENTS = 4
GRAPHS = {"complete": nx.complete_graph(N_AGENTS), "ring": nx.cycle_graph(N_AGENTS),
          "path": nx.path_graph(N_AGENTS)}


def short(v: Any) -> Any:
    """Nested lists of floats to 15 significant digits (1e-15 relative: the file stays small,
    the comparison's 1e-10 is untouched)."""
    if isinstance(v, dict):
        return {k: short(u) for k, u in v.items()}
    if isinstance(v, list):
        return [short(u) for u in v]
    return float(f"{v:.15g}") if isinstance(v, float) else v


def as_numpy(a: Any) -> np.ndarray:
    """A decent-array value as a float64 numpy array."""
    return np.asarray(iop.to_numpy(a), dtype=np.float64)


def data(cost: LinearRegressionCost) -> tuple[np.ndarray, np.ndarray]:
    """An agent's regression data ``(A, b)``."""
    A = np.stack([as_numpy(x) for x, _ in cost.dataset])
    b = np.array([float(as_numpy(y).reshape(-1)[0]) for _, y in cost.dataset])
    return A, b


def problem(name: str) -> tuple[list[LinearRegressionCost], np.ndarray]:
    """``"regression"`` (decent-bench's own, 1 feature) or ``"regression3"`` (3 features, 40
    samples split IID): the agents' costs and the minimiser of their sum."""
    if name == "regression":
        costs, x_opt, _ = create_regression_problem(n_agents=N_AGENTS)
        return list(costs), as_numpy(x_opt)  # type: ignore[arg-type]
    handler = SyntheticRegressionDatasetHandler(n_targets=1, n_features=3, n_samples=40)
    parts = handler.split(partitions=split_iid(handler, n_partitions=N_AGENTS))
    costs3 = [LinearRegressionCost(dataset=p) for p in parts]
    A = np.concatenate([data(c)[0] for c in costs3])
    b = np.concatenate([data(c)[1] for c in costs3])
    # the minimiser of sum_i |A_i x - b_i|^2 / (2 m_i) with equal m_i: least squares on all
    return costs3, np.linalg.lstsq(A, b, rcond=None)[0]


def x0(kind: str, d: int) -> np.ndarray:
    """The agents' starting points: ``"zeros"``, or ``"spread"`` (distinct for every agent)."""
    if kind == "zeros":
        return np.zeros((N_AGENTS, d))
    return np.arange(N_AGENTS * d, dtype=np.float64).reshape(N_AGENTS, d) - 2.0
