"""Morph: the layer-wise similarity and one rewiring step against a per-client reference, the
in-degree invariant, the softmaxes' direction, the same graph for the same seed, resume,
training on digits, and bad input."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from torch import nn

import topofl as tf
from tests.engine._crash import Crash, CrashingData
from topofl.algorithms.morph import first_graph, layer_similarity, morph_swap
from topofl.engine import RunConfig

D = torch.float64


@pytest.fixture(scope="module")
def data() -> Any:
    return tf.data.federate("digits", "pathological", 8, classes_per_client=2, seed=0)


def _strip(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for r in rows if r["metric"] != "wall_time"]


# --------------------------------------------------------------------------- the reference


def _ref_similarity(layers_i: list[list[float]], layers_j: list[list[float]]) -> float:
    """The code's rule, per pair: the mean of the cosines of the tensors with nonzero norms
    (-1 when none)."""
    sims = []
    for a, b in zip(layers_i, layers_j):
        na = math.sqrt(sum(v * v for v in a))
        nb = math.sqrt(sum(v * v for v in b))
        if na == 0 or nb == 0:
            continue
        sims.append(sum(p * q for p, q in zip(a, b)) / (na * nb))
    return sum(sims) / len(sims) if sims else -1.0


def _ref_pick(cands: list[int], scores: list[float], u: float) -> int:
    """Softmax of ``scores`` over ``cands``, drawn by the inverse CDF at ``u``."""
    top = max(scores)
    w = [math.exp(s - top) for s in scores]
    z = sum(w)
    acc, target = 0.0, u * z
    for c, wi in zip(cands, w):
        acc += wi
        if acc > target:
            return c
    return cands[-1]


def _ref_step(models: list[list[list[float]]], peers: list[list[int]], beta: float,
              u: np.ndarray) -> tuple[list[list[int]], list[int], list[int], list[list[float]]]:
    n = len(models)
    sim = [[_ref_similarity(models[i], models[j]) for j in range(n)] for i in range(n)]
    new, added, removed = [], [], []
    for i in range(n):
        mine = list(peers[i])
        add = [j for j in range(n) if j != i and j not in mine]
        if len(mine) < 2 or not add:
            new.append(mine)
            added.append(-1)
            removed.append(-1)
            continue
        a = _ref_pick(add, [-beta * sim[i][j] for j in add], float(u[i, 0]))
        r = _ref_pick(mine, [beta * sim[i][j] for j in mine], float(u[i, 1]))
        new.append([a if j == r else j for j in mine])
        added.append(a)
        removed.append(r)
    return new, added, removed, sim


def _layout() -> tf.engine.ParamLayout:
    return tf.engine.ParamLayout.from_model(nn.Sequential(nn.Linear(4, 3), nn.Linear(3, 2)))


@pytest.mark.parametrize(("seed", "beta"), [(0, 500.0), (1, 3.0), (2, 0.0), (3, 40.0)])
def test_one_step_equals_the_per_client_reference(seed: int, beta: float) -> None:
    lay = _layout()
    n, d = 10, 3
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, lay.num_params, generator=g, dtype=D)
    x[2, lay.offsets[1]:lay.offsets[2]] = 0.0  # a zero bias: that tensor is skipped
    x[5, :] = 0.0  # every tensor zero: similarity -1
    peers = torch.as_tensor(first_graph(n, d, seed))
    u = np.random.default_rng(seed).random((n, 2))
    views = lay.views(x)
    models = [[views[k][i].flatten().tolist() for k in lay.names] for i in range(n)]
    want_new, want_add, want_rem, want_sim = _ref_step(models, peers.tolist(), beta, u)
    sim = layer_similarity(x, x, lay)
    torch.testing.assert_close(sim, torch.tensor(want_sim, dtype=D), rtol=0, atol=1e-12)
    new, added, removed = morph_swap(peers, sim, torch.arange(n), beta, torch.as_tensor(u))
    assert new.tolist() == want_new
    assert added.tolist() == want_add and removed.tolist() == want_rem


def test_rows_of_a_rank_score_as_in_the_whole() -> None:
    lay = _layout()
    x = torch.randn(7, lay.num_params, generator=torch.Generator().manual_seed(0), dtype=D)
    rows = torch.tensor([1, 4, 6])
    torch.testing.assert_close(layer_similarity(x[rows], x, lay),
                               layer_similarity(x, x, lay)[rows], rtol=0, atol=1e-15)


# --------------------------------------------------------------------------- invariants


@pytest.mark.parametrize("seed", range(6))
def test_the_in_degree_stays_and_peers_stay_distinct(seed: int) -> None:
    n, d = 12, 4
    peers = torch.as_tensor(first_graph(n, d, seed))
    rng = np.random.default_rng(seed)
    for _ in range(30):
        sim = torch.as_tensor(rng.uniform(-1, 1, (n, n)))
        peers, added, removed = morph_swap(peers, sim, torch.arange(n), 5.0,
                                           torch.as_tensor(rng.random((n, 2))))
        for i, row in enumerate(peers.tolist()):
            assert len(row) == d and len(set(row)) == d and i not in row
        assert bool((added >= 0).all()) and bool((added != removed).all())


def test_the_first_graph_is_regular_and_undirected() -> None:
    P = first_graph(10, 3, seed=4)
    A = np.zeros((10, 10), dtype=bool)
    A[np.repeat(np.arange(10), 3), P.ravel()] = True
    assert (A == A.T).all() and (A.sum(1) == 3).all() and not A.diagonal().any()


def test_the_complete_graph_never_swaps() -> None:
    n = 5
    peers = torch.tensor([[j for j in range(n) if j != i] for i in range(n)])
    new, added, removed = morph_swap(peers, torch.zeros(n, n, dtype=D), torch.arange(n), 1.0,
                                     torch.full((n, 2), 0.5, dtype=D))
    assert torch.equal(new, peers) and (added == -1).all() and (removed == -1).all()


# --------------------------------------------------------------------------- direction


def test_the_softmaxes_add_the_dissimilar_and_drop_the_similar() -> None:
    # client 0 pulls from 1 (its twin) and 2; 3 is its opposite, 4 orthogonal
    sim = torch.tensor([[1.0, 0.9, 0.1, -0.9, 0.0]], dtype=D)
    peers, ids = torch.tensor([[1, 2]]), torch.tensor([0])
    rng = np.random.default_rng(0)
    draws = [morph_swap(peers, sim, ids, 500.0, torch.as_tensor(rng.random((1, 2))))
             for _ in range(200)]
    assert all(a.item() == 3 and r.item() == 1 for _, a, r in draws)
    # at a mild temperature, the frequencies follow the softmax of -s (added), +s (removed)
    beta = 2.0
    draws = [morph_swap(peers, sim, ids, beta, torch.as_tensor(rng.random((1, 2))))
             for _ in range(4000)]
    adds = np.array([a.item() for _, a, _ in draws])
    p3 = math.exp(beta * 0.9) / (math.exp(beta * 0.9) + 1.0)  # 3 against 4
    assert abs(float((adds == 3).mean()) - p3) < 0.03
    rems = np.array([r.item() for _, _, r in draws])
    p1 = math.exp(beta * 0.9) / (math.exp(beta * 0.9) + math.exp(beta * 0.1))
    assert abs(float((rems == 1).mean()) - p1) < 0.03


# --------------------------------------------------------------------------- the engine


def _peers_over(res: Any) -> list[list[tuple[int, int]]]:
    rows = sorted((r["round"], r["value"]) for r in res.records.rows
                  if r["metric"] == "realized_edges")
    return [sorted((int(j), int(i)) for j, i in v) for _, v in rows]


def _run(data: Any, rounds: int = 4, **kw: Any) -> Any:
    return tf.run("morph", data=data, model="logistic", rounds=rounds, batch_size=8,
                  local_steps=2, degree=3, every=1, dtype="float64", spectral=False,
                  eval_global=False, **kw)


def test_same_seed_same_graph_another_seed_another(data: Any) -> None:
    a, b = _run(data, seed=0), _run(data, seed=0)
    assert _peers_over(a) == _peers_over(b)
    other = _run(data, seed=0, graph_seed=5)
    assert _peers_over(other)[0] != _peers_over(a)[0]  # another first graph
    same_graph = _run(data, seed=5)  # another run seed: same first graph, other swaps
    assert _peers_over(same_graph)[0] == _peers_over(a)[0]
    assert _peers_over(same_graph) != _peers_over(a)
    graphs = _peers_over(a)
    assert graphs[0] != graphs[1]  # it rewires (a swap every round after the first)
    for arcs in graphs:  # in-degree 3 every round
        indeg = np.bincount([i for _, i in arcs], minlength=8)
        assert (indeg == 3).all()


def test_one_round_of_the_engine_is_the_uniform_average(data: Any) -> None:
    # rounds=1: no swap (t = 0); the model after the round is the average over the first graph
    algo = tf.algorithms.morph(local_steps=1, degree=3)
    res = tf.run(algo, data=data, model="logistic", rounds=1, batch_size=8, seed=1,
                 dtype="float64", spectral=False, eval_global=False)
    P = first_graph(8, 3, 0)
    W = np.zeros((8, 8))
    W[np.repeat(np.arange(8), 3), P.ravel()] = 0.25
    np.fill_diagonal(W, 0.25)
    rows = sorted((r["round"], r["value"]) for r in res.records.rows
                  if r["metric"] == "realized_edges")
    got = {(int(j), int(i)) for j, i in rows[0][1]}
    assert got == {(int(j), int(i)) for i, j in zip(*np.nonzero(W)) if i != j}


def test_resume_equals_uninterrupted(data: Any, tmp_path: Path) -> None:
    model = tf.models.build_model("logistic", data.input_shape, data.num_classes, seed=0)
    algo = tf.algorithms.morph(local_steps=2, degree=3, every=1, lr=0.1)
    full = tf.engine.run(RunConfig(rounds=6, batch_size=4, eval_every=1, seed=2,
                                   eval_global=False), None, algo, data, model)
    cfg = RunConfig(rounds=6, batch_size=4, eval_every=1, seed=2, eval_global=False,
                    checkpoint_every=3, checkpoint_path=str(tmp_path / "ck.pt"),
                    records_path=str(tmp_path / "r.jsonl"))
    with pytest.raises(Crash):
        tf.engine.run(cfg, None, algo, CrashingData(data, at=4), model)
    resumed = tf.run(algo, data=data, model=model, rounds=6, batch_size=4, eval_every=1,
                     seed=2, eval_global=False, checkpoint_every=3,
                     checkpoint_path=str(tmp_path / "ck.pt"),
                     records_path=str(tmp_path / "r.jsonl"), run_id="run",
                     resume=str(tmp_path / "ck.pt"))
    assert _strip(resumed.records.rows) == _strip(full.records.rows)
    for k, v in full.state.tensors().items():
        assert torch.equal(resumed.state.tensors()[k], v), k


def test_it_trains_on_digits() -> None:
    data = tf.data.federate("digits", "pathological", 16, classes_per_client=3, seed=0)
    res = tf.run("morph", data=data, model="logistic", rounds=30, batch_size=16, seed=0,
                 degree=3, every=5, local_steps=5, lr=0.1, spectral=False, eval_every=10)
    acc = res.records.final("test_acc_mean")
    assert acc > 0.5, acc  # chance is 0.1


def test_stacking_is_refused_with_its_reason() -> None:
    why = tf.algorithms.morph().stacks
    assert isinstance(why, str) and "runs alone" in why


# --------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(("kw", "match"), [
    (dict(degree=1), "degree"),
    (dict(beta=-1.0), "beta"),
    (dict(every=0), "every"),
    (dict(graph_seed=-1), "graph_seed"),
    (dict(lr=0.0), "lr"),
])
def test_bad_hyper_parameters_are_refused(kw: dict[str, Any], match: str) -> None:
    with pytest.raises(ValueError, match=match) as err:
        tf.algorithms.morph(**kw)
    assert "\n" not in str(err.value)


@pytest.mark.parametrize(("n", "degree", "match"), [(4, 4, "at most n - 1"),
                                                    (5, 3, "n \\* degree even")])
def test_bad_degree_for_n_is_refused_at_the_start(n: int, degree: int, match: str) -> None:
    data = tf.data.federate("digits", "iid", n, seed=0)
    with pytest.raises(ValueError, match=match) as err:
        tf.run("morph", data=data, model="logistic", rounds=1, degree=degree, batch_size=8)
    assert "\n" not in str(err.value)
