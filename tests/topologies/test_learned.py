"""topofl.topologies.learned: STL-FW (Le Bars et al., AISTATS 2023) against its objective.

Checked: the learned ``W`` is feasible (non-negative, doubly stochastic: a point of the
Birkhoff polytope), within the degree budget, its reported objective is the objective of the
returned matrix, each Frank-Wolfe step is the one the definition asks for (the linear
minimisation oracle against every permutation, the exact line search against a grid), more
budget never hurts, and it lowers neighbourhood heterogeneity against random regular graphs of
the same budget.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import topofl as tf
from topofl.spectral import neighborhood_heterogeneity
from topofl.topologies import REGISTRY, random_regular, stl_fw, stl_fw_objective


def one_class_per_node(n: int, classes: int = 10) -> np.ndarray:
    return np.eye(classes)[np.arange(n) % classes]


def dirichlet_labels(n: int, classes: int, alpha: float, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.dirichlet(np.full(classes, alpha), size=n)


def check_feasible(t: tf.Topology, budget: int) -> None:
    W = t.W.toarray()
    assert np.all(W >= 0)
    np.testing.assert_allclose(W.sum(axis=1), 1.0, atol=1e-12)
    np.testing.assert_allclose(W.sum(axis=0), 1.0, atol=1e-12)
    assert t.in_degree.max() <= budget and t.out_degree.max() <= budget
    assert t.params["max_degree"] == max(t.in_degree.max(), t.out_degree.max())


@settings(max_examples=25, deadline=None)
@given(n=st.integers(2, 24), classes=st.integers(1, 8), budget=st.integers(1, 8),
       lam=st.sampled_from([0.0, 0.01, 0.1, 1.0]), seed=st.integers(0, 2**16))
def test_learned_w_is_feasible_and_within_budget(n: int, classes: int, budget: int, lam: float,
                                                 seed: int) -> None:
    budget = min(budget, n - 1)
    counts = np.random.default_rng(seed).integers(0, 5, size=(n, classes)).astype(float)
    counts[np.arange(n), np.arange(n) % classes] += 1
    t = stl_fw(counts, budget, lam=lam)
    check_feasible(t, budget)
    P = counts / counts.sum(axis=1, keepdims=True)
    assert t.params["objective"] == pytest.approx(stl_fw_objective(t, counts, lam), abs=1e-12)
    assert t.params["heterogeneity"] == pytest.approx(neighborhood_heterogeneity(t, P), abs=1e-12)
    # Frank-Wolfe from I with exact line search never increases the objective
    assert t.params["objective"] <= stl_fw_objective(np.eye(n), counts, lam) + 1e-12


def test_objective_hand_computed() -> None:
    # n = 2 nodes, one class each: g(I) = 1/2 (||I P - J P||^2 = 4 * 1/4) + lam/2 * 4 * 1/4
    P = np.eye(2)
    assert stl_fw_objective(np.eye(2), P, 0.0) == pytest.approx(0.5)
    assert stl_fw_objective(np.eye(2), P, 2.0) == pytest.approx(0.5 + 2.0 * 0.5)
    # and STL-FW reaches J with one step (the swap permutation, step 1/2)
    t = stl_fw(P, 1, lam=0.0)
    np.testing.assert_allclose(t.W.toarray(), 0.5)
    assert t.params["iterations"] == 1 and t.params["objective"] == pytest.approx(0.0)


def replay_first_step(P: np.ndarray, lam: float) -> tuple[np.ndarray, float]:
    """The first Frank-Wolfe step from I by brute force: the best permutation among all n!,
    then the best step on a fine grid of [0, 1]."""
    n = P.shape[0]

    def g(W: np.ndarray) -> float:
        return stl_fw_objective(W, P, lam)

    W0 = np.eye(n)
    R = W0 @ P - P.mean(axis=0)
    grad = (2 / n) * (R @ P.T + lam * (W0 - 1 / n))
    best = min(itertools.permutations(range(n)),
               key=lambda p: float(sum(grad[i, p[i]] for i in range(n))))
    S = np.eye(n)[list(best)]
    steps = np.linspace(0, 1, 2001)
    k = int(np.argmin([g((1 - a) * W0 + a * S) for a in steps]))
    return (1 - steps[k]) * W0 + steps[k] * S, float(g((1 - steps[k]) * W0 + steps[k] * S))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_first_step_is_the_definition(seed: int) -> None:
    P = dirichlet_labels(6, 3, 0.3, seed)
    lam = 0.1
    _, g_ref = replay_first_step(P, lam)
    t = stl_fw(P, 1, lam=lam, max_iter=1)
    assert t.params["iterations"] == 1
    # the objective after one step equals the brute-force optimum of the step (grid 5e-4)
    assert t.params["objective"] == pytest.approx(g_ref, abs=1e-6)
    assert t.params["objective"] <= g_ref + 1e-12


def test_more_budget_never_hurts() -> None:
    P = dirichlet_labels(60, 10, 0.1, 3)
    objs = [stl_fw(P, b, lam=0.1).params["objective"] for b in range(1, 11)]
    assert all(b <= a + 1e-12 for a, b in zip(objs, objs[1:]))
    assert objs[-1] < objs[0]


@pytest.mark.parametrize(("labels", "budgets"), [
    (one_class_per_node(100), (2, 4, 6, 9)),
    (dirichlet_labels(100, 10, 0.1, 0), (2, 4, 6)),
], ids=["one_class_per_node", "dirichlet_0.1"])
def test_lowers_heterogeneity_against_random_graphs_of_the_same_budget(
    labels: np.ndarray, budgets: tuple[int, ...]
) -> None:
    P = labels / labels.sum(axis=1, keepdims=True)
    for b in budgets:
        t = stl_fw(labels, b, lam=0.1)
        check_feasible(t, b)
        learned = neighborhood_heterogeneity(t, P)
        rand = [neighborhood_heterogeneity(random_regular(100, b, seed=s), P) for s in range(5)]
        assert learned < min(rand), (b, learned, rand)


def test_removes_heterogeneity_when_the_budget_lets_every_node_see_every_class() -> None:
    # one class per node, ten classes: nine neighbours suffice to hold the global balance
    labels = one_class_per_node(100)
    assert neighborhood_heterogeneity(stl_fw(labels, 9, lam=0.1), labels) < 1e-12
    assert neighborhood_heterogeneity(np.eye(100), labels) == pytest.approx(0.9)


def test_deterministic_and_inputs_untouched() -> None:
    labels = dirichlet_labels(30, 5, 0.5, 1)
    before = labels.copy()
    a, b = stl_fw(labels, 3), stl_fw(labels, 3)
    assert (a.W != b.W).nnz == 0
    np.testing.assert_array_equal(labels, before)
    # counts and proportions give the same objective (ties between permutations may be broken
    # differently by the rounding of the normalised rows)
    c = stl_fw(labels * 7, 3)
    assert c.params["objective"] == pytest.approx(a.params["objective"], rel=1e-9)


def test_registry_spec_and_params() -> None:
    fam = REGISTRY["stl_fw"]
    assert fam.stochastic == "doubly" and not fam.undirected and not fam.random
    t = tf.topologies.build("stl_fw:n=40,budget=4")
    assert t.name == "stl_fw" and t.n == 40 and t.is_doubly_stochastic
    assert {"n", "num_classes", "labels_sha1", "budget", "lam", "iterations", "objective",
            "heterogeneity", "max_degree"} <= set(t.params)


def test_a_run_learns_it_from_its_clients_label_counts() -> None:
    # build() with the run's label counts (what topofl.run passes) learns W from them, as
    # dcliques is built from them; the spec's "node i holds class i mod classes" is not used.
    rng = np.random.default_rng(3)
    counts = np.zeros((30, 10))
    counts[np.arange(30), rng.integers(0, 10, size=30)] = 50.0
    t = tf.topologies.build("stl_fw:budget=3,lam=0.2", seed=0, n=30,
                            label_distributions=counts)
    want = stl_fw(counts, 3, lam=0.2)
    np.testing.assert_array_equal(t.W.toarray(), want.W.toarray())
    assert t.params["labels_sha1"] == want.params["labels_sha1"]
    spec_only = tf.topologies.build("stl_fw:budget=3,lam=0.2", n=30)
    assert t.params["labels_sha1"] != spec_only.params["labels_sha1"]
    P = counts / counts.sum(axis=1, keepdims=True)
    assert neighborhood_heterogeneity(t, P) < neighborhood_heterogeneity(spec_only, P)


def test_bad_input() -> None:
    with pytest.raises(ValueError, match=r"budget must be in \[1, 3\]"):
        stl_fw(one_class_per_node(4, 2), 4)
    with pytest.raises(ValueError, match="at least 2 nodes"):
        stl_fw(np.ones((1, 3)), 1)
    with pytest.raises(ValueError, match="lam"):
        stl_fw(one_class_per_node(4, 2), 1, lam=-1.0)
    with pytest.raises(ValueError, match="non-negative"):
        stl_fw(-np.ones((4, 2)), 1)
    with pytest.raises(ValueError, match=r"\(3, 3\)"):
        stl_fw_objective(np.eye(2), np.eye(3), 0.1)
