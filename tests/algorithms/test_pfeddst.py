"""PFedDST: the peer score on hand-computed inputs, top-k selection, one engine round against a
per-client reference, the head staying on its client, the realized graph, random selection,
neighbour candidates, resume, and bad input."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

import topofl as tf
from tests.engine._crash import Crash, CrashingData
from topofl.engine import RunConfig

D = torch.float64
AUX = 1 << 20  # the engine's auxiliary sampling steps (topofl.engine.services.AUX_STEP)
INF = math.inf


@pytest.fixture(scope="module")
def data() -> Any:
    return tf.data.federate("digits", "pathological", 5, classes_per_client=2, seed=0)


def _model(data: Any, hidden: tuple[int, ...] = (4,)) -> Any:
    return tf.models.build_model("mlp", data.input_shape, data.num_classes, seed=0,
                                 hidden=hidden)


def _strip(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for r in rows if r["metric"] != "wall_time"]


def _edges(res: Any) -> list[set[tuple[int, int]]]:
    """The realized ``(sender, receiver)`` arcs of every round, in round order."""
    rows = sorted((r["round"], r["value"]) for r in res.records.rows
                  if r["metric"] == "realized_edges")
    return [{(int(j), int(i)) for j, i in v} for _, v in rows]


# --------------------------------------------------------------------------- the score


def test_score_matches_formula_on_hand_computed_inputs() -> None:
    # heads: h0 = (1, 0), h1 = (3, 4) (cos with h0 = 3/5), h2 = (0, -2) (cos with h0 = 0,
    # with h1 = -4/5)
    H = torch.tensor([[1.0, 0.0], [3.0, 4.0], [0.0, -2.0]], dtype=D)
    L = torch.tensor([[0.0, 2.0, 0.5], [1.0, 0.0, 3.0], [4.0, 1.5, 0.0]], dtype=D)
    last = torch.tensor([[0.0, 2.0, 0.0], [1.0, 0.0, 3.0], [0.0, 0.0, 0.0]], dtype=D)
    lam, alpha, c = math.log(2), 0.5, 1.0
    S = tf.algorithms.pfeddst_scores(L, H, last, 3, alpha=alpha, lam=lam, c=c)
    # s_p = 1 - 2^-(3 - last): age 3 -> 7/8, age 1 -> 1/2, age 2 -> 3/4, age 0 -> 0
    # s_d = 1 - cos: (0,1) 2/5, (0,2) 1, (1,2) 9/5
    expected = [
        [-INF, 0.5 * (0.5 * 2.0 - 0.4 + 1.0), 7 / 8 * (0.5 * 0.5 - 1.0 + 1.0)],
        [3 / 4 * (0.5 * 1.0 - 0.4 + 1.0), -INF, 0.0 * (0.5 * 3.0 - 1.8 + 1.0)],
        [7 / 8 * (0.5 * 4.0 - 1.0 + 1.0), 7 / 8 * (0.5 * 1.5 - 1.8 + 1.0), -INF],
    ]
    np.testing.assert_allclose(S.numpy(), np.array(expected), rtol=1e-14, atol=1e-15)
    # exact values: 0.8, 0.21875, 0.825, 0, 1.75, -0.04375
    assert S[0, 1].item() == pytest.approx(0.8, abs=1e-15)
    assert S[1, 0].item() == pytest.approx(0.825, abs=1e-15)
    assert S[2, 0].item() == pytest.approx(1.75, abs=1e-15)
    # a per-pair cost matrix enters as c[i, j]
    C = torch.tensor([[0.0, 1.0, 2.0], [3.0, 0.0, 4.0], [5.0, 6.0, 0.0]], dtype=D)
    S2 = tf.algorithms.pfeddst_scores(L, H, last, 3, alpha=alpha, lam=lam, c=C)
    assert S2[0, 2].item() == pytest.approx(7 / 8 * (0.25 - 1.0 + 2.0), abs=1e-15)
    assert S2[2, 1].item() == pytest.approx(7 / 8 * (0.75 - 1.8 + 6.0), abs=1e-15)


def test_score_grows_with_loss_similarity_and_recency() -> None:
    H = torch.tensor([[1.0, 0.0], [1.0, 0.1], [0.0, 1.0], [1.0, 0.1]], dtype=D)
    L = torch.ones(4, 4, dtype=D)
    last = torch.zeros(4, 4, dtype=D)
    S = tf.algorithms.pfeddst_scores(L, H, last, 5, alpha=1.0, lam=1.0, c=2.0)
    assert S[0, 1] > S[0, 2]  # the more similar head wins (s_d is a distance)
    L2 = L.clone()
    L2[0, 2] = 3.0
    assert tf.algorithms.pfeddst_scores(L2, H, last, 5, alpha=1.0, lam=1.0, c=2.0)[0, 2] > S[0, 2]
    last2 = last.clone()
    last2[0, 1] = 4.0  # selected in the previous round: lower recency score
    S3 = tf.algorithms.pfeddst_scores(L, H, last2, 5, alpha=1.0, lam=1.0, c=2.0)
    assert S3[0, 1] < S3[0, 3] == S[0, 3]
    # only s_p changed: from 1 - e^-5 (never selected, round 5) to 1 - e^-1
    assert S3[0, 1].item() == pytest.approx(
        (1 - math.exp(-1)) * S[0, 1].item() / (1 - math.exp(-5)), rel=1e-12)


def test_select_takes_top_k_and_breaks_ties_by_index() -> None:
    S = torch.tensor([[-INF, 0.5, 2.0, 0.5, 1.0],
                      [1.0, -INF, 1.0, 1.0, 1.0],
                      [3.0, -INF, -INF, -INF, -INF],
                      [0.1, 0.2, 0.3, -INF, 0.4],
                      [9.0, 8.0, 7.0, 6.0, -INF]], dtype=D)
    peers, valid = tf.algorithms.pfeddst_select(S, 3)
    assert peers.tolist()[0] == [2, 4, 1]
    assert peers.tolist()[1] == [0, 2, 3]
    assert peers[2, 0].item() == 0 and valid[2].tolist() == [True, False, False]
    assert peers.tolist()[3] == [4, 2, 1]
    assert peers.tolist()[4] == [0, 1, 2]
    assert valid[[0, 1, 3, 4]].all()
    # against a brute-force reference: the k best by (score desc, index asc)
    rng = np.random.default_rng(0)
    M = torch.tensor(rng.integers(0, 4, size=(6, 6)).astype(float), dtype=D)
    M.fill_diagonal_(-INF)
    p, v = tf.algorithms.pfeddst_select(M, 4)
    for i in range(6):
        ref = sorted((j for j in range(6) if j != i), key=lambda j: (-M[i, j].item(), j))[:4]
        assert p[i].tolist() == ref and v[i].all()
    with pytest.raises(ValueError, match="k must be in"):
        tf.algorithms.pfeddst_select(M, 6)


# --------------------------------------------------------------------------- reference


def _reference(data: Any, model: Any, layout: Any, x0: torch.Tensor, rounds: int, *,
               k: int, alpha: float, lam: float, c: float, lr: float, head_lr: float,
               momentum: float, wd: float, local_steps: int, head_steps: int,
               b: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """PFedDST written plainly, client by client (Algorithm 1)."""
    n = x0.shape[0]
    body, head = layout.cols("body"), layout.cols("head")
    x = x0.clone()
    L = torch.zeros(n, n, dtype=D)
    last = torch.zeros(n, n, dtype=D)

    def fwd(row: torch.Tensor, xs: torch.Tensor) -> torch.Tensor:
        params = {k_: v[0] for k_, v in layout.views(row.unsqueeze(0)).items()}
        return torch.func.functional_call(model, params, (xs.double(),))

    def loss(row: torch.Tensor, xs: torch.Tensor, ys: torch.Tensor) -> float:
        with torch.no_grad():
            return float(torch.nn.functional.cross_entropy(fwd(row, xs), ys))

    def grad(row: torch.Tensor, xs: torch.Tensor, ys: torch.Tensor) -> torch.Tensor:
        r = row.clone().requires_grad_(True)
        (g,) = torch.autograd.grad(torch.nn.functional.cross_entropy(fwd(r, xs), ys), r)
        return g

    for t in range(rounds):
        if t == 0:  # initial loss array: every client's model on every other client's batch
            xb, yb = data.sample(0, AUX * 101, b)
            for i in range(n):
                for j in range(n):
                    if j != i:
                        L[i, j] = loss(x[i], xb[j], yb[j])
        selected: list[list[int]] = []
        for i in range(n):
            scores = {}
            for j in range(n):
                if j == i:
                    continue
                hi, hj = x[i, head], x[j, head]
                cos = float(hi @ hj) / (float(hi.norm()) * float(hj.norm()))
                s_p = 1 - math.exp(-lam * (t + 1 - float(last[i, j])))
                scores[j] = s_p * (alpha * float(L[i, j]) - (1 - cos) + c)
            selected.append(sorted(scores, key=lambda j: (-scores[j], j))[:k])
        new_bodies = torch.stack([
            (x[i, body] + sum(x[j, body] for j in selected[i])) / (len(selected[i]) + 1)
            for i in range(n)
        ])
        x[:, body] = new_bodies
        xb, yb = data.sample(t, AUX * 100, b)
        for i in range(n):
            for j in selected[i]:
                last[i, j] = t + 1
                L[i, j] = loss(x[i], xb[j], yb[j])
        for i in range(n):
            m = torch.zeros(x.shape[1], dtype=D)
            step = 0
            for part, steps, eta in (("body", local_steps, lr), ("head", head_steps, head_lr)):
                cols = layout.cols(part)
                for _ in range(steps):
                    xs, ys = data.sample(t, step, b)
                    g = grad(x[i], xs[i], ys[i])[cols] + wd * x[i, cols]
                    m[cols] = momentum * m[cols] + g
                    x[i, cols] = x[i, cols] - eta * m[cols]
                    step += 1
    return x, L, last


def test_rounds_equal_per_client_reference(data: Any) -> None:
    model = _model(data).double()
    layout = tf.engine.ParamLayout.from_model(model)
    # learning rates exact in float32: the engine builds its [n] learning-rate vector through
    # torch's default dtype
    hp = dict(k=2, alpha=0.7, lam=0.8, c=1.5, lr=0.25, head_lr=0.375, momentum=0.9, wd=1e-2,
              local_steps=2, head_steps=3)
    algo = tf.algorithms.pfeddst(lr=hp["lr"], head_lr=hp["head_lr"], peers=hp["k"],
                                 alpha=hp["alpha"], lam=hp["lam"], c=hp["c"],
                                 momentum=hp["momentum"], weight_decay=hp["wd"],
                                 local_steps=hp["local_steps"], head_steps=hp["head_steps"])
    cfg = RunConfig(rounds=2, batch_size=4, dtype="float64", init="independent", seed=1,
                    spectral=False, eval_global=False, record_clients=False)
    res = tf.engine.run(cfg, None, algo, data, model)
    x0 = tf.engine.layout.init_parameters(model, layout, 5, seed=1, same=False,
                                   device=torch.device("cpu"), dtype=D)
    assert not torch.equal(x0[0, layout.cols("head")], x0[1, layout.cols("head")])
    x, L, last = _reference(data, model, layout, x0, 2, b=4, **hp)  # type: ignore[arg-type]
    np.testing.assert_allclose(res.state.x.numpy(), x.numpy(), rtol=1e-9, atol=1e-11)
    np.testing.assert_allclose(res.state.own.losses.numpy(), L.numpy(), rtol=1e-9,
                               atol=1e-11)
    assert torch.equal(res.state.own.last, last)
    # the last round's selection is what the engine recorded as the realized graph
    A = res.state.own.selected
    assert _edges(res)[-1] == {  # (sender j, receiver i)
        (j, i) for i in range(5) for j in range(5) if A[i, j] > 0}
    assert A.sum(dim=1).tolist() == [2.0] * 5


def test_head_never_leaves_its_client(data: Any) -> None:
    model = _model(data)
    layout = tf.engine.ParamLayout.from_model(model)
    algo = tf.algorithms.pfeddst(peers=2, local_steps=1, head_steps=1)
    res = tf.run(algo, data=data, model=model, rounds=1, batch_size=4, init="independent",
                 dtype="float64", spectral=False)
    state, ctx = res.state, res.services
    before = state.x.clone()
    algo.round_start(state, tf.engine.Round(1), ctx)  # selection + aggregation of the bodies
    head, body = layout.cols("head"), layout.cols("body")
    assert torch.equal(state.x[:, head], before[:, head])
    A = state.own.selected
    W = (A + torch.eye(5, dtype=D)) / (A.sum(dim=1, keepdim=True) + 1)
    np.testing.assert_allclose(state.x[:, body].numpy(), (W @ before[:, body]).numpy(),
                               rtol=1e-13, atol=1e-15)
    assert not torch.equal(state.x[:, body], before[:, body])
    snap = {k: v.clone() for k, v in state.tensors().items()}
    sent = algo.communicate(state, tf.engine.Round(1), ctx)
    msgs, realized = sent.messages, sent.realized
    # per client: the heads of its 4 candidates, 2 bodies pulled, 2 probes out, 2 losses back
    assert msgs == 5 * (4 + 2 + 2 + 2)
    assert sum(f.messages for f in sent.flows if f.kind == "body") == 10
    assert all(torch.equal(v, state.tensors()[k]) for k, v in snap.items())
    assert realized is not None and realized.graph.number_of_edges() == 10


def test_records_realized_graph_and_messages(data: Any) -> None:
    res = tf.run("pfeddst", data=data, model=_model(data), rounds=3, peers=3, local_steps=1,
                 head_steps=1, batch_size=4, spectral=False, eval_global=False)
    _, density = res.records.series("realized_density")
    np.testing.assert_allclose(density, [3 / 4] * 3)
    assert [len(e) for e in _edges(res)] == [15, 15, 15]
    assert int(res.records.final("messages.body")) == 3 * 5 * 3
    assert int(res.records.final("bytes.body")) == 45 * res.layout.num_body * 4
    # each round: 4 heads, 3 bodies, 3 probes, 3 losses per client; round 0 also a probe and
    # a loss for each of the 4 others (the initial loss array)
    assert int(res.records.final("messages")) == 3 * 5 * (4 + 3 + 3 + 3) + 5 * 8
    num_head = res.layout.num_params - res.layout.num_body
    assert int(res.records.final("bytes.head")) == 3 * 20 * num_head * 4
    # default peers: min(10, n - 1) = 4 -> every client pulls from all others
    res = tf.run("pfeddst", data=data, model=_model(data), rounds=1, local_steps=1,
                 head_steps=1, batch_size=4, spectral=False)
    assert res.algorithm.hparams["peers"] is None
    assert res.records.final("realized_density") == 1.0
    assert res.records.final("realized_reciprocity") == 1.0


def test_recency_discourages_reselecting_the_same_peers(data: Any) -> None:
    # with a tiny alpha and equal heads the loss barely matters: the recency score rotates
    # the peers, so that nobody is selected twice in a row
    algo = tf.algorithms.pfeddst(peers=2, alpha=1e-6, lam=1.0, local_steps=1, head_steps=1,
                                 lr=1e-9, head_lr=1e-9)
    res = tf.run(algo, data=data, model=_model(data), rounds=2, batch_size=4, spectral=False)
    e0, e1 = _edges(res)
    assert not e0 & e1
    last = res.state.own.last
    assert set(last.unique().tolist()) == {0.0, 1.0, 2.0}


# --------------------------------------------------------------------------- variants


def test_random_selection_is_uniform_reproducible_and_skips_losses(data: Any) -> None:
    algo = tf.algorithms.pfeddst(selection="random", peers=2, local_steps=1, head_steps=1,
                                 selection_seed=3)
    kw = dict(data=data, model=_model(data), rounds=2, batch_size=4, spectral=False,
              eval_every=2, eval_global=False)
    a, b = tf.run(algo, **kw), tf.run(algo, **kw)
    assert _strip(a.records.rows) == _strip(b.records.rows)
    edges = _edges(a)
    assert all(len(e) == 10 for e in edges) and edges[0] != edges[1]
    assert not a.state.own.losses.any()  # no loss evaluation in random mode
    # the same draw as the documented stream (selection_seed, t)
    from topofl._utils.rng import generator_at

    keys = generator_at(3, 0).random((5, 5))
    np.fill_diagonal(keys, -np.inf)
    expected = {(int(j), i) for i in range(5) for j in np.argsort(-keys[i], kind="stable")[:2]}
    assert edges[0] == expected
    # frequencies over many rounds are close to uniform (2 of 4 others: 1/2 each)
    counts = np.zeros((5, 5))
    for t in range(400):
        k = generator_at(3, t).random((5, 5))
        np.fill_diagonal(k, -np.inf)
        for i in range(5):
            counts[i, np.argsort(-k[i])[:2]] += 1
    off = counts[~np.eye(5, dtype=bool)] / 400
    assert np.all(np.abs(off - 0.5) < 0.1)
    kw["rounds"] = 1
    c = tf.run(tf.algorithms.pfeddst(selection="random", peers=2, local_steps=1, head_steps=1,
                                     selection_seed=4), **kw)
    assert _edges(c)[0] != edges[0]


def test_neighbour_candidates_follow_the_topology(data: Any) -> None:
    ring = tf.topologies.ring(5)
    algo = tf.algorithms.pfeddst(candidates="neighbors", peers=3, local_steps=1, head_steps=1)
    assert algo.uses_topology
    res = tf.run(algo, topology=ring, data=data, model=_model(data), rounds=2, batch_size=4,
                 spectral=False)
    allowed = {(j, i) for j, i in ring.graph.edges()}
    for edges in _edges(res):
        # fewer neighbours (2) than peers (3): every neighbour is selected
        assert edges == allowed
    with pytest.raises(ValueError, match="pass a topology"):
        tf.run(algo, data=data, model=_model(data), rounds=1, batch_size=4)
    assert not tf.algorithms.pfeddst().uses_topology


# --------------------------------------------------------------------------- resume





@pytest.mark.parametrize("selection", ["score", "random"])
def test_resume_equals_uninterrupted(data: Any, tmp_path: Path, selection: str) -> None:
    model = _model(data)
    algo = tf.algorithms.pfeddst(peers=2, local_steps=2, head_steps=1, lr=0.2,
                                 selection=selection)
    full = tf.engine.run(RunConfig(rounds=5, batch_size=4, eval_every=2, seed=2,
                                   eval_global=False), None, algo, data, model)
    cfg = RunConfig(rounds=5, batch_size=4, eval_every=2, seed=2, eval_global=False,
                    checkpoint_every=2,
                    checkpoint_path=str(tmp_path / "ck.pt"),
                    records_path=str(tmp_path / "r.jsonl"))
    with pytest.raises(Crash):
        tf.engine.run(cfg, None, algo, CrashingData(data, at=3), model)
    resumed = tf.run(algo, data=data, model=model, rounds=5, batch_size=4, eval_every=2,
                     seed=2, eval_global=False, checkpoint_every=2,
                     checkpoint_path=str(tmp_path / "ck.pt"),
                     records_path=str(tmp_path / "r.jsonl"), run_id="run",
                     resume=str(tmp_path / "ck.pt"))
    assert _strip(tf.records.load(tmp_path / "r.jsonl").rows) == _strip(full.records.rows)
    assert _strip(resumed.records.rows) == _strip(full.records.rows)
    for k, v in full.state.tensors().items():
        assert torch.equal(resumed.state.tensors()[k], v), k


# --------------------------------------------------------------------------- bad input


def test_defaults_follow_the_paper() -> None:
    algo = tf.algorithms.pfeddst()
    assert [(p.part, p.steps, p.epochs, p.lr) for p in algo.phases] == [
        ("body", None, 5.0, 0.1), ("head", None, 1.0, 0.1)]
    hp = algo.hparams
    assert (hp["momentum"], hp["weight_decay"], hp["alpha"], hp["lam"], hp["c"]) == (
        0.9, 5e-3, 0.1, 1.0, 2.0)
    assert algo.shared == "body" and algo.requires is None
    assert tf.algorithms.ALGORITHMS["pfeddst"] is tf.algorithms.pfeddst


@pytest.mark.parametrize("kw, err, match", [
    (dict(alpha=-0.1), ValueError, "alpha must be in"),
    (dict(lam=-1.0), ValueError, "lam must be in"),
    (dict(lam=0.0), ValueError, "lam must be in"),
    (dict(peers=0), ValueError, "peers must be >= 1"),
    (dict(peers=2.5), TypeError, "peers must be an int"),
    (dict(selection="best"), ValueError, "selection must be one of"),
    (dict(candidates="ring"), ValueError, "candidates must be one of"),
    (dict(local_steps=2, local_epochs=1.0), ValueError, "either local_steps or local_epochs"),
    (dict(head_epochs=0), ValueError, "head_epochs must be in"),
    (dict(c=float("nan")), ValueError, "c must be a number"),
    (dict(c="cheap"), TypeError, "c must be a real number"),
    (dict(c=[[1.0, 2.0]]), ValueError, "square"),
    (dict(lr=0.0), ValueError, "lr must be in"),
])
def test_bad_hyper_parameters(kw: dict[str, Any], err: type, match: str) -> None:
    with pytest.raises(err, match=match):
        tf.algorithms.pfeddst(**kw)


def test_bad_input_found_when_the_run_starts(data: Any) -> None:
    kw = dict(data=data, rounds=1, batch_size=4, local_steps=1, head_steps=1)
    with pytest.raises(ValueError, match=r"peers=5 requested, but a client has only n-1=4"):
        tf.run("pfeddst", model=_model(data), peers=5, **kw)
    with pytest.raises(ValueError, match=r"c must be a scalar or an \[n, n\] = \[5, 5\]"):
        tf.run("pfeddst", model=_model(data), c=np.ones((3, 3)), **kw)
    with pytest.raises(ValueError, match="body and .*head"):
        tf.run("pfeddst", model="logistic", **kw)
    with pytest.raises(ValueError, match="cross_losses"):  # no engine services attached
        algo = tf.algorithms.pfeddst(peers=1)
        model = _model(data)
        layout = tf.engine.ParamLayout.from_model(model)
        ctx = tf.engine.toy_services(2, layout=layout)
        state = algo.init(torch.zeros(2, layout.num_params, dtype=D), ctx)
        algo.round_start(state, tf.engine.Round(0), ctx)


def test_cost_matrix_is_accepted(data: Any) -> None:
    # a prohibitive cost on every link to client 0 keeps everybody away from it
    C = np.zeros((5, 5))
    C[:, 0] = -1e3
    res = tf.run("pfeddst", data=data, model=_model(data), rounds=1, batch_size=4, peers=2,
                 local_steps=1, head_steps=1, c=C, spectral=False)
    assert all(j != 0 for j, _ in _edges(res)[0])
    assert res.algorithm.hparams["c"][1][0] == -1e3
