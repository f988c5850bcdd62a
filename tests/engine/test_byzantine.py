"""Byzantine attacks and robust gossip: the batched rules against slow per-node references,
their identities, a robustness property, bad inputs, and runs with ``[byzantine]``."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import topofl as tf
from topofl.engine.byzantine import Attack, Byzantine, alie_z, check_byzantine
from topofl.engine.config import RunConfig, config_header
from topofl.engine.pieces.robust import (
    adaptive_radii,
    aggregate,
    neighbourhoods,
    rank_radii,
    robust_gossip,
)

RULES = [("mean", {}), ("clipped", {"tau": 0.7}), ("trimmed_mean", {"trim": 1}),
         ("median", {})]
ATTACKS = ["sign_flip", "gaussian", "alie", "ipm", "dissensus", "label_flip"]


# ------------------------------------------------------------------ slow, obvious references
def ref_messages(x, W, byz, attack):
    """{(i, j): the message j sends i} for every arc j -> i, one node at a time."""
    n = x.shape[0]
    noise = attack.noise(x.shape[1], x.device, x.dtype) if attack.attack == "gaussian" else None
    out = {}
    for i in range(n):
        nbrs = [j for j in range(n) if j != i and W[i, j] != 0]
        honest = [x[i]] + [x[j] for j in nbrs if not byz[j]]
        S = torch.stack(honest)
        mean = S.mean(dim=0)
        std = S.std(dim=0) if len(honest) > 1 else torch.zeros_like(mean)
        for j in nbrs:
            if not byz[j] or attack.attack == "label_flip":
                out[i, j] = x[j]
            elif attack.attack == "sign_flip":
                out[i, j] = -x[j]
            elif attack.attack == "gaussian":
                out[i, j] = noise[j]
            elif attack.attack == "alie":
                out[i, j] = mean - attack.z * std
            elif attack.attack == "ipm":
                out[i, j] = -attack.eps * mean
            else:
                pull = sum((W[i, k] * (x[k] - x[i]) for k in nbrs if not byz[k]),
                           torch.zeros_like(x[i]))
                wb = sum(W[i, k] for k in nbrs if byz[k])
                out[i, j] = x[i] - attack.eps * pull / wb
    return out


def ref_aggregate(x, W, msgs, rule, tau=math.inf, trim=0):
    n = x.shape[0]
    out = torch.empty_like(x)
    for i in range(n):
        nbrs = [j for j in range(n) if j != i and W[i, j] != 0]
        if rule == "mean":
            out[i] = W[i, i] * x[i] + sum(W[i, j] * msgs[i, j] for j in nbrs)
        elif rule == "clipped":
            acc = x[i].clone()
            for j in nbrs:
                d = msgs[i, j] - x[i]
                norm = float(torch.linalg.vector_norm(d))
                acc = acc + W[i, j] * d * (min(1.0, tau / norm) if norm > 0 else 1.0)
            out[i] = acc
        else:
            vals = torch.stack([x[i]] + [msgs[i, j] for j in nbrs])
            for p in range(x.shape[1]):
                col = sorted(vals[:, p].tolist())
                if rule == "trimmed_mean":
                    kept = col[trim:len(col) - trim]
                    out[i, p] = sum(kept) / len(kept)
                else:
                    m = len(col)
                    out[i, p] = (col[(m - 1) // 2] + col[m // 2]) / 2
    return out


def _case(topo, f, P=3, seed=0):
    n = topo.n
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, P, generator=g, dtype=torch.float64)
    byz = np.zeros(n, dtype=bool)
    byz[np.random.default_rng(seed).choice(n, f, replace=False)] = True
    return x, torch.as_tensor(topo.to_dense()), byz


def _attack(name, byz, t=3):
    spec = {"attack": name}
    if name != "label_flip":
        spec["nodes"] = np.flatnonzero(byz).tolist()
    if name == "alie":
        spec["z"] = 1.3
    if name == "gaussian":
        spec["scale"] = 2.0
    return Attack.of(Byzantine.from_config(spec), byz, t)


GRAPHS = [tf.topologies.complete(7), tf.topologies.ring(8),
          tf.topologies.erdos_renyi(9, 0.5, seed=1), tf.topologies.star(6)]


@pytest.mark.parametrize("topo", GRAPHS, ids=lambda t: t.name)
@pytest.mark.parametrize("name", ATTACKS)
@pytest.mark.parametrize("rule,kw", RULES, ids=[r for r, _ in RULES])
def test_batched_equals_reference(topo, name, rule, kw):
    x, W, byz = _case(topo, 2)
    attack = _attack(name, byz)
    nb = neighbourhoods(topo, x.device, x.dtype)
    trim = kw.get("trim", 0)
    if rule == "trimmed_mean" and 2 * trim + 1 > int(nb.valid.sum(dim=1).min()):
        with pytest.raises(ValueError, match="trimmed_mean with trim=1 needs"):
            aggregate(x, nb, rule, trim=trim, attack=attack)
        return
    got = aggregate(x, nb, rule, tau=kw.get("tau", math.inf), trim=trim, attack=attack)
    want = ref_aggregate(x, W, ref_messages(x, W, byz, attack), rule,
                         tau=kw.get("tau", math.inf), trim=trim)
    assert torch.allclose(got, want, rtol=0, atol=1e-12)


def test_blocks_of_receivers_give_the_same_numbers(monkeypatch):
    topo = tf.topologies.erdos_renyi(12, 0.4, seed=3)
    x, _, byz = _case(topo, 3, P=5)
    nb = neighbourhoods(topo, x.device, x.dtype)
    whole = aggregate(x, nb, "median", attack=_attack("alie", byz))
    monkeypatch.setattr("topofl.engine.pieces.robust.BLOCK_ELEMENTS", 7)
    assert torch.equal(aggregate(x, nb, "median", attack=_attack("alie", byz)), whole)


def test_clipped_with_infinite_radius_is_gossip():
    topo = tf.topologies.erdos_renyi(10, 0.4, seed=0)
    x, W, _ = _case(topo, 0, P=4)
    got = aggregate(x, neighbourhoods(topo, x.device, x.dtype), "clipped", tau=math.inf)
    assert torch.allclose(got, W @ x, rtol=0, atol=1e-12)
    assert torch.allclose(aggregate(x, neighbourhoods(topo, x.device, x.dtype), "mean"),
                          W @ x, rtol=0, atol=1e-12)


def test_trimmed_mean_without_trim_is_the_neighbourhood_mean():
    topo = tf.topologies.ring(6)
    x, W, _ = _case(topo, 0)
    A = (W != 0).to(x.dtype)  # the node and its neighbours, unweighted
    want = (A @ x) / A.sum(dim=1, keepdim=True)
    got = aggregate(x, neighbourhoods(topo, x.device, x.dtype), "trimmed_mean", trim=0)
    assert torch.allclose(got, want, rtol=0, atol=1e-12)


def test_median_of_odd_neighbourhoods():
    topo = tf.topologies.ring(7)  # every neighbourhood holds 3 models
    x, W, _ = _case(topo, 0, P=4)
    got = aggregate(x, neighbourhoods(topo, x.device, x.dtype), "median")
    for i in range(7):
        rows = torch.stack([x[(i - 1) % 7], x[i], x[(i + 1) % 7]])
        assert torch.equal(got[i], rows.median(dim=0).values)


def test_dissensus_scales_the_honest_pull_under_gossip():
    topo = tf.topologies.erdos_renyi(9, 0.6, seed=2)
    x, W, byz = _case(topo, 2)
    attack = _attack("dissensus", byz)
    got = aggregate(x, neighbourhoods(topo, x.device, x.dtype), "mean", attack=attack)
    for i in np.flatnonzero(~byz):
        nbrs = [j for j in range(9) if j != i and W[i, j] != 0]
        if not any(byz[j] for j in nbrs):
            continue
        pull = sum(W[i, k] * (x[k] - x[i]) for k in nbrs if not byz[k])
        assert torch.allclose(got[i], x[i] + (1 - attack.eps) * pull, rtol=0, atol=1e-12)


def test_gaussian_noise_is_indexed_by_seed_and_round():
    byz = np.array([False, True, False, True])
    a, b = _attack("gaussian", byz, t=3), _attack("gaussian", byz, t=4)
    n1 = a.noise(5, torch.device("cpu"), torch.float64)
    assert torch.equal(n1, a.noise(5, torch.device("cpu"), torch.float64))
    assert not torch.equal(n1, b.noise(5, torch.device("cpu"), torch.float64))
    assert bool((n1[[0, 2]] == 0).all()) and bool((n1[[1, 3]] != 0).all())


def test_sign_flip_pulls_gossip_but_not_median_or_trimmed_mean():
    topo = tf.topologies.complete(10)
    g = torch.Generator().manual_seed(0)
    x = 5.0 + 0.1 * torch.randn(10, 4, generator=g, dtype=torch.float64)
    byz = np.zeros(10, dtype=bool)
    byz[3] = True
    honest = torch.as_tensor(~byz)
    target = x[honest].mean(dim=0)
    attack = _attack("sign_flip", byz)
    nb = neighbourhoods(topo, x.device, x.dtype)
    dist = {}
    for rule, kw in (("mean", {}), ("median", {}), ("trimmed_mean", {"trim": 1})):
        y = aggregate(x, nb, rule, attack=attack, **kw)[honest]
        dist[rule] = float((y - target).abs().max())
    assert dist["mean"] > 0.9  # one of ten sends -x: about 2 * 5 / 10 away
    assert dist["median"] < 0.2 and dist["trimmed_mean"] < 0.2


@settings(max_examples=30, deadline=None)
@given(n=st.integers(5, 12), p=st.floats(0.3, 1.0), seed=st.integers(0, 10_000),
       name=st.sampled_from(["sign_flip", "gaussian", "alie", "ipm", "dissensus"]))
def test_trimmed_mean_stays_within_the_honest_values(n, p, seed, name):
    """BRIDGE's screening: with at most ``trim`` Byzantine neighbours, each honest node's
    aggregate lies, per coordinate, within its honest neighbourhood's values."""
    topo = tf.topologies.erdos_renyi(n, p, seed=seed)
    x, W, _ = _case(topo, 0, seed=seed)
    byz = np.zeros(n, dtype=bool)
    byz[np.random.default_rng(seed).choice(n, 1)] = True
    nb = neighbourhoods(topo, x.device, x.dtype)
    if int(nb.valid.sum(dim=1).min()) < 3:
        return
    got = aggregate(x, nb, "trimmed_mean", trim=1, attack=_attack(name, byz))
    med = aggregate(x, nb, "median", attack=_attack(name, byz))
    for i in np.flatnonzero(~byz):
        rows = [i] + [j for j in range(n) if j != i and W[i, j] != 0 and not byz[j]]
        lo, hi = x[rows].min(dim=0).values, x[rows].max(dim=0).values
        for y in (got[i], med[i]):
            assert bool((y >= lo - 1e-12).all() and (y <= hi + 1e-12).all())


# ------------------------------------------------------------------------------- bad inputs
@pytest.mark.parametrize("table,match", [
    ({"attack": "ipm", "share": 1.0}, r"share must be in \[0, 0.5\)"),
    ({"attack": "ipm", "share": -0.1}, "share"),
    ({"attack": "bogus", "share": 0.1}, "attack must be one of"),
    ({"share": 0.1}, "needs an attack"),
    ({"attack": "ipm"}, "exactly one of share"),
    ({"attack": "ipm", "share": 0.1, "nodes": [1]}, "exactly one of share"),
    ({"attack": "ipm", "nodes": [1, 1]}, "distinct"),
    ({"attack": "sign_flip", "share": 0.1, "scale": 2.0}, "scale is a parameter of"),
    ({"attack": "gaussian", "share": 0.1, "scale": 0.0}, "scale must be > 0"),
    ({"attack": "ipm", "share": 0.1, "choose": "nearest"}, "choose"),
    ({"attack": "label_flip", "share": 0.1}, "takes its nodes from the data"),
    ({"attack": "ipm", "share": 0.1, "colour": 1}, "no key 'colour'"),
])
def test_bad_tables(table, match):
    with pytest.raises((ValueError, TypeError), match=match) as info:
        Byzantine.from_config(table)
    assert "\n" not in str(info.value)


def test_node_out_of_range_and_no_honest_node():
    spec = Byzantine.from_config({"attack": "ipm", "nodes": [2, 10]})
    with pytest.raises(ValueError, match=r"node 10 does not exist: the run has n=10"):
        spec.nodes_of(tf.topologies.ring(10), 10)
    spec = Byzantine.from_config({"attack": "ipm", "nodes": list(range(10))})
    with pytest.raises(ValueError, match="at least one must stay honest"):
        spec.nodes_of(tf.topologies.ring(10), 10)


@pytest.mark.parametrize("kw,match", [
    ({"aggregator": "clipped", "tau": -1.0}, "tau must be >= 0"),
    ({"aggregator": "clipped"}, "needs tau"),
    ({"aggregator": "median", "tau": 1.0}, "tau is the clipping radius"),
    ({"aggregator": "mode"}, "aggregator must be one of"),
    ({"aggregator": "trimmed_mean", "trim": -1}, "trim must be >= 0"),
    ({"aggregator": "median", "clique_averaging": True}, "does not combine"),
])
def test_bad_aggregators(kw, match):
    with pytest.raises(ValueError, match=match):
        tf.algorithms.dsgd(**kw)


def test_trim_too_large_for_the_smallest_neighbourhood():
    env = tf.engine.toy_services(6)
    state = tf.engine.State(x=torch.zeros(6, 2, dtype=torch.float64))
    comm = robust_gossip("trimmed_mean", trim=2)
    with pytest.raises(ValueError, match="at least 5 models; the smallest holds 3"):
        comm(state, tf.engine.Round(0, tf.topologies.ring(6)), env)


def test_choice_by_position():
    star = tf.topologies.star(8)
    assert Byzantine.from_config({"attack": "ipm", "share": 0.1, "choose": "betweenness"}
                                 ).nodes_of(star, 8).tolist() == [0]
    r = Byzantine.from_config({"attack": "ipm", "share": 0.3, "seed": 4}).nodes_of(None, 10)
    assert r.tolist() == Byzantine.from_config({"attack": "ipm", "share": 0.3, "seed": 4}
                                               ).nodes_of(None, 10).tolist()
    assert len(r) == 3
    assert round(alie_z(10, 1), 6) == round(float(
        __import__("scipy").stats.norm.ppf(4 / 9)), 6)


def test_algorithms_without_gossip_refuse():
    with pytest.raises(ValueError, match="sgp does not send its models through gossip"):
        check_byzantine(tf.algorithms.sgp(), {"attack": "ipm", "share": 0.1})
    with pytest.raises(ValueError, match="lost messages"):
        check_byzantine(tf.algorithms.dsgd(), {"attack": "ipm", "share": 0.1},
                        {"drop": 0.1})


# ------------------------------------------------------------------------- runs and headers
def test_headers_without_byzantine_are_unchanged():
    data = tf.data.federate("digits", n_clients=4, seed=0) if hasattr(
        tf.data, "federate") else None
    model = torch.nn.Linear(3, 2)
    topo = tf.topologies.ring(4)
    plain = config_header(RunConfig(rounds=3), tf.algorithms.dsgd(), topo, data, model)
    same = config_header(RunConfig(rounds=3, byzantine=None),
                         tf.algorithms.dsgd(aggregator="mean"), topo, data, model)
    assert plain == same
    assert "byzantine" not in plain["run"] and "aggregator" not in plain["algorithm"]
    other = config_header(RunConfig(rounds=3, byzantine={"attack": "ipm", "share": 0.25}),
                          tf.algorithms.dsgd(), topo, data, model)
    assert other["run_hash"] != plain["run_hash"]
    assert other["run"]["byzantine"] == {"attack": "ipm", "share": 0.25, "choose": "random",
                                         "seed": 0, "eps": 0.1}


def _run(**kw):
    return tf.run(algorithm="dsgd", topology="complete", data="digits", n_clients=10,
                  rounds=4, lr=0.5, batch_size=8, progress=False, **kw)


def test_a_run_records_the_honest_nodes_apart():
    res = _run(byzantine={"attack": "sign_flip", "nodes": [3]})
    rec = res.records
    assert rec.final("byzantine_clients") == 1
    per = rec.per_client("test_acc", 3)
    honest = np.delete(per, 3)
    assert rec.final("honest_test_acc_mean") == pytest.approx(float(np.mean(honest)),
                                                               abs=1e-12)
    assert "honest_consensus_distance" in rec.metrics
    assert tf.engine.stack.alone_reason(res.config, res.algorithm) is not None


def test_an_attack_with_no_byzantine_node_changes_nothing():
    a = _run()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # share 0: an attack-free reference, on purpose
        b = _run(byzantine={"attack": "ipm", "share": 0.0})
    assert np.array_equal(a.state.x.numpy(), b.state.x.numpy())
    assert b.records.final("byzantine_clients") == 0


def test_robust_rule_without_attack_runs_and_refuses_stacking():
    res = _run(aggregator="trimmed_mean", trim=1)
    assert "stack" in str(res.algorithm.stacks)
    assert 0 <= res.records.final("test_acc_mean") <= 1


def test_a_config_table_is_checked_by_the_same_code():
    cfg = tf.config.validate({"topology": "ring", "n_clients": 10, "rounds": 3,
                              "aggregator": "clipped", "tau": 1.0,
                              "byzantine": {"attack": "dissensus", "nodes": [2]}})
    assert cfg["byzantine"] == {"attack": "dissensus", "nodes": [2], "seed": 0, "eps": 1.5}
    with pytest.raises(ValueError, match=r"share must be in \[0, 0.5\)"):
        tf.config.validate({"topology": "ring", "rounds": 3,
                            "byzantine": {"attack": "ipm", "share": 1}})


# ----------------------------------------------------- ClippedGossip's adaptive radius
def ref_radius(x, W, msgs, i, delta):
    """Node i's adaptive radius, literally: the smallest candidate (0 or a neighbour's
    distance) with at most delta of neighbour weight strictly beyond it."""
    n = x.shape[0]
    nbrs = [j for j in range(n) if j != i and W[i, j] != 0]
    dist = {j: float(torch.linalg.vector_norm(msgs[i, j] - x[i])) for j in nbrs}
    ok = [c for c in [0.0] + list(dist.values())
          if sum(float(W[i, j]) for j in nbrs if dist[j] > c) <= delta]
    return min(ok)


def ref_adaptive(x, W, msgs, delta):
    n = x.shape[0]
    out = torch.empty_like(x)
    radii = []
    for i in range(n):
        tau = ref_radius(x, W, msgs, i, delta)
        radii.append(tau)
        acc = x[i].clone()
        for j in range(n):
            if j == i or W[i, j] == 0:
                continue
            d = msgs[i, j] - x[i]
            norm = float(torch.linalg.vector_norm(d))
            acc = acc + W[i, j] * d * (min(1.0, tau / norm) if norm > 0 else 1.0)
        out[i] = acc
    return out, torch.tensor(radii, dtype=x.dtype)


# budgets away from every partial sum of the weights (exact ties are decided by rounding)
DELTAS = [0.0, 0.1, 0.26, 0.3, 0.55, 1.0]


@pytest.mark.parametrize("topo", GRAPHS + [tf.topologies.exponential(8)],
                         ids=lambda t: t.name)
@pytest.mark.parametrize("name", ["sign_flip", "alie", "dissensus", "gaussian"])
@pytest.mark.parametrize("delta", DELTAS)
def test_adaptive_clipping_equals_reference(topo, name, delta):
    x, W, byz = _case(topo, 2)
    attack = _attack(name, byz)
    nb = neighbourhoods(topo, x.device, x.dtype)
    msgs = ref_messages(x, W, byz, attack)
    want, want_r = ref_adaptive(x, W, msgs, delta)
    got = aggregate(x, nb, "clipped", tau="adaptive", delta=delta, attack=attack)
    assert torch.allclose(got, want, rtol=0, atol=1e-12)
    radii = adaptive_radii(x, nb, delta, attack=attack)
    assert torch.allclose(radii, want_r, rtol=0, atol=1e-12)


def authors_scp(x, W, msgs):
    """The authors' ``SelfCenteredClipping`` with ``tau=None`` (epfml/byzantine-robust-
    decentralized-optimizer, ``codes/aggregator.py``), one node at a time: tau the second
    largest of the distances to the in-neighbours (``sorted(distances)[-2]``, the only one's
    with one neighbour), each neighbour's message clipped around the node, then the node's
    row of W applied to itself and the clipped messages (``DecentralizedAggregator``)."""
    n = x.shape[0]
    out = torch.empty_like(x)
    radii = []
    for i in range(n):
        nbrs = [j for j in range(n) if j != i and W[i, j] != 0]
        distances = [(msgs[i, j] - x[i]).norm() for j in nbrs]
        tau = (sorted(distances)[-2] if len(distances) >= 2 else distances[-1]
               if distances else torch.tensor(0.0, dtype=x.dtype))
        radii.append(float(tau))
        zs = []
        for j in nbrs:
            v = msgs[i, j] - x[i]
            v_norm = torch.norm(v)
            scale = min(1, tau / v_norm)
            zs.append(x[i] + v * scale)
        out[i] = W[i, i] * x[i] + sum((W[i, j] * z for j, z in zip(nbrs, zs)),
                                      torch.zeros_like(x[i]))
    return out, torch.tensor(radii, dtype=x.dtype)


IRREGULAR = [tf.topologies.erdos_renyi(10, 0.35, seed=s) for s in (1, 2, 3)] + [
    tf.topologies.star(7), tf.topologies.grid(3, 4), tf.topologies.exponential(9)]


@pytest.mark.parametrize("topo", GRAPHS + IRREGULAR, ids=lambda t: f"{t.name}{t.n}")
@pytest.mark.parametrize("name", ["sign_flip", "alie", "dissensus", "gaussian"])
def test_rank_clipping_equals_the_authors_code_on_any_graph(topo, name):
    """Issue 59, item 5: tau="rank" is the authors' rule on irregular graphs too, where the
    weight budget of tau="adaptive" clips other neighbours."""
    x, W, byz = _case(topo, 2)
    attack = _attack(name, byz)
    nb = neighbourhoods(topo, x.device, x.dtype)
    msgs = ref_messages(x, W, byz, attack)
    want, want_r = authors_scp(x, W, msgs)
    got = aggregate(x, nb, "clipped", tau="rank", attack=attack)
    assert torch.allclose(got, want, rtol=0, atol=1e-12)
    assert torch.allclose(rank_radii(x, nb, attack=attack), want_r, rtol=0, atol=1e-12)


def test_rank_and_a_weight_budget_differ_on_an_irregular_graph():
    """The two per-node rules agree on a regular graph with a budget of one neighbour's
    weight, and not on the star, whose hub weighs its leaves 1/6 each and whose leaves weigh
    the hub 5/6."""
    ring = tf.topologies.ring(8)
    x, _, _ = _case(ring, 0)
    nb = neighbourhoods(ring, x.device, x.dtype)
    assert torch.equal(rank_radii(x, nb), adaptive_radii(x, nb, 1 / 3))
    star = tf.topologies.star(6)
    x, _, _ = _case(star, 0)
    nb = neighbourhoods(star, x.device, x.dtype)
    assert not torch.equal(rank_radii(x, nb), adaptive_radii(x, nb, 1 / 6))
    # a leaf has one in-neighbour, the hub: the rank rule leaves it unclipped
    d = torch.linalg.vector_norm(x - x[0], dim=1)
    assert torch.allclose(rank_radii(x, nb)[1:], d[1:], rtol=0, atol=0)


def test_a_rank_run_and_its_header():
    res = _run(aggregator="clipped", tau="rank", byzantine={"attack": "alie", "nodes": [3]})
    assert res.algorithm.hparams["tau"] == "rank" and "delta" not in res.algorithm.hparams
    assert 0 <= res.records.final("honest_test_acc_mean") <= 1
    cfg = tf.config.validate({"topology": "ring", "n_clients": 10, "rounds": 3,
                              "aggregator": "clipped", "tau": "rank"})
    assert cfg["tau"] == "rank"


def test_adaptive_radius_with_tied_distances():
    # node 0 of complete(5): neighbours at distances 1, 3, 3, 3 (weights 1/5)
    x = torch.tensor([[0.0], [1.0], [3.0], [-3.0], [3.0]], dtype=torch.float64)
    nb = neighbourhoods(tf.topologies.complete(5), x.device, x.dtype)
    # the three at 3 weigh 0.6: a budget below that cannot clip any of them
    assert adaptive_radii(x, nb, 0.5)[0].item() == 3.0
    assert adaptive_radii(x, nb, 0.65)[0].item() == 1.0
    assert adaptive_radii(x, nb, 0.85)[0].item() == 0.0


def test_adaptive_radius_of_a_node_without_neighbours():
    topo = tf.Topology.from_matrix(np.eye(3))
    x = torch.randn(3, 2, dtype=torch.float64)
    nb = neighbourhoods(topo, x.device, x.dtype)
    assert adaptive_radii(x, nb, 0.3).tolist() == [0.0, 0.0, 0.0]
    assert torch.equal(aggregate(x, nb, "clipped", tau="adaptive", delta=0.3), x)


@settings(max_examples=40, deadline=None)
@given(n=st.integers(4, 12), p=st.floats(0.3, 1.0), seed=st.integers(0, 10_000),
       delta=st.floats(0.0, 1.0), tau=st.floats(0.0, 5.0),
       name=st.sampled_from(["sign_flip", "gaussian", "alie", "ipm", "dissensus"]))
def test_clipping_moves_a_node_at_most_tau_times_its_neighbour_weight(n, p, seed, delta,
                                                                       tau, name):
    """Each clipped step has norm <= tau_i, so ||x_i' - x_i|| <= tau_i sum_{j != i} W_ij,
    for a fixed and an adaptive radius, under any attack."""
    topo = tf.topologies.erdos_renyi(n, p, seed=seed)
    x, W, _ = _case(topo, 0, seed=seed)
    byz = np.zeros(n, dtype=bool)
    byz[np.random.default_rng(seed).choice(n, 2, replace=False)] = True
    attack = _attack(name, byz)
    nb = neighbourhoods(topo, x.device, x.dtype)
    out_w = (W.sum(dim=1) - W.diagonal())
    fixed = aggregate(x, nb, "clipped", tau=tau, attack=attack)
    step = torch.linalg.vector_norm(fixed - x, dim=1)
    assert bool((step <= tau * out_w * (1 + 1e-12) + 1e-12).all())
    adapt = aggregate(x, nb, "clipped", tau="adaptive", delta=delta, attack=attack)
    radii = adaptive_radii(x, nb, delta, attack=attack)
    step = torch.linalg.vector_norm(adapt - x, dim=1)
    assert bool((step <= radii * out_w * (1 + 1e-12) + 1e-12).all())


@settings(max_examples=30, deadline=None)
@given(n=st.integers(3, 12), p=st.floats(0.3, 1.0), seed=st.integers(0, 10_000))
def test_clipping_without_attack_and_with_a_large_radius_is_gossip(n, p, seed):
    """No Byzantine node and a radius beyond every distance (or a zero budget): plain
    gossip ``W x``."""
    topo = tf.topologies.erdos_renyi(n, p, seed=seed)
    x, W, _ = _case(topo, 0, seed=seed)
    nb = neighbourhoods(topo, x.device, x.dtype)
    big = float(2 * torch.cdist(x, x).max()) + 1.0
    for got in (aggregate(x, nb, "clipped", tau=big),
                aggregate(x, nb, "clipped", tau="adaptive", delta=0.0)):
        assert torch.allclose(got, W @ x, rtol=0, atol=1e-12)


def test_adaptive_clipping_in_blocks_gives_the_same_numbers(monkeypatch):
    topo = tf.topologies.erdos_renyi(12, 0.4, seed=3)
    x, _, byz = _case(topo, 3, P=5)
    nb = neighbourhoods(topo, x.device, x.dtype)
    kw = {"tau": "adaptive", "delta": 0.3, "attack": _attack("alie", byz)}
    whole = aggregate(x, nb, "clipped", **kw)
    monkeypatch.setattr("topofl.engine.pieces.robust.BLOCK_ELEMENTS", 7)
    assert torch.equal(aggregate(x, nb, "clipped", **kw), whole)


@pytest.mark.parametrize("kw,match", [
    ({"aggregator": "clipped", "tau": "auto"}, "tau must be a number >= 0, 'adaptive' or 'rank'"),
    ({"aggregator": "clipped", "tau": "rank", "delta": 0.2}, "delta is the clipped weight"),
    ({"aggregator": "clipped", "tau": "adaptive"}, "needs delta"),
    ({"aggregator": "clipped", "tau": "adaptive", "delta": 1.5}, r"delta must be in \[0, 1\]"),
    ({"aggregator": "clipped", "tau": "adaptive", "delta": "x"}, "delta must be a number"),
    ({"aggregator": "clipped", "tau": 1.0, "delta": 0.2}, "delta is the clipped weight"),
    ({"aggregator": "median", "delta": 0.2}, "delta is the clipped weight"),
])
def test_bad_adaptive_settings(kw, match):
    with pytest.raises((ValueError, TypeError), match=match) as info:
        tf.algorithms.dsgd(**kw)
    assert "\n" not in str(info.value)


def test_an_adaptive_run_and_its_header():
    res = _run(aggregator="clipped", tau="adaptive", delta=0.15,
               byzantine={"attack": "alie", "nodes": [3]})
    assert res.algorithm.hparams["tau"] == "adaptive"
    assert res.algorithm.hparams["delta"] == 0.15
    assert 0 <= res.records.final("honest_test_acc_mean") <= 1
    fixed = tf.algorithms.dsgd(aggregator="clipped", tau=1.0)
    assert "delta" not in fixed.hparams
    cfg = tf.config.validate({"topology": "ring", "n_clients": 10, "rounds": 3,
                              "aggregator": "clipped", "tau": "adaptive", "delta": 0.3})
    assert cfg["tau"] == "adaptive" and cfg["delta"] == 0.3


# ------------------------------------------------------- an honest majority, an attacker
@pytest.mark.parametrize("share", [0.5, 0.6, 0.99])
def test_a_share_of_half_or_more_is_refused_when_the_table_is_read(share):
    # before: share 0.6 ran with 6 of 10 nodes attacking, and exited 0
    with pytest.raises(ValueError, match=rf"byzantine share must be in \[0, 0.5\) \(robust "
                       rf"aggregation needs an honest majority\), got {share}"):
        Byzantine.from_config({"attack": "ipm", "share": share})
    with pytest.raises(ValueError, match=r"share must be in \[0, 0.5\)"):
        _run(byzantine={"attack": "sign_flip", "share": share})


@pytest.mark.parametrize(("table", "n", "f", "how"), [
    ({"attack": "ipm", "nodes": [0, 1, 2, 3, 4]}, 10, 5, r"nodes=\[0, 1, 2, 3, 4\]"),
    ({"attack": "ipm", "nodes": [1, 2]}, 3, 2, r"nodes=\[1, 2\]"),
    ({"attack": "ipm", "share": 0.45}, 2, 1, r"share=0.45: floor\(0.45 \* 2 \+ 1/2\) = 1"),
    ({"attack": "ipm", "share": 0.4}, 4, 2, r"share=0.4: floor\(0.4 \* 4 \+ 1/2\) = 2"),
])
def test_half_or_more_nodes_byzantine_is_refused_with_the_count_and_n(table, n, f, how):
    spec = Byzantine.from_config(table)
    with pytest.raises(ValueError, match=rf"^byzantine: {f} of the n={n} nodes would be "
                       rf"Byzantine \({how}\), half or more; robust aggregation needs an honest "
                       rf"majority: at most {(n - 1) // 2} Byzantine node\(s\) among {n}$"):
        spec.nodes_of(tf.topologies.ring(n) if n >= 3 else None, n)


def test_a_minority_still_runs_as_before():
    spec = Byzantine.from_config({"attack": "ipm", "nodes": [0, 1, 2, 3]})
    assert spec.nodes_of(tf.topologies.ring(9), 9).tolist() == [0, 1, 2, 3]
    assert Byzantine.from_config({"attack": "ipm", "share": 0.49}).nodes_of(None, 100).size == 49
    with pytest.raises(ValueError, match="4 of the n=8 nodes"):
        spec.nodes_of(tf.topologies.ring(8), 8)
    with pytest.raises(ValueError, match=r"5 of the n=10 nodes would be Byzantine \(nodes="):
        _run(byzantine={"attack": "sign_flip", "nodes": [0, 1, 2, 3, 4]})


@pytest.mark.parametrize(("table", "how"), [
    ({"attack": "sign_flip", "share": 0.04}, r"share=0.04: floor\(0.04 \* 10 \+ 1/2\) = 0"),
    ({"attack": "ipm", "share": 0.02}, r"share=0.02: floor\(0.02 \* 10 \+ 1/2\) = 0"),
])
def test_a_run_with_no_attacker_warns_and_records_it(table, how):
    # before: no word; the run equals one without [byzantine]
    with pytest.warns(UserWarning, match=rf"^byzantine: the run has no attacker: 0 of the n=10 "
                      rf"nodes are Byzantine \({how}\), so attack '{table['attack']}' never "
                      r"acts and the run equals one without \[byzantine\] .* for one attacker "
                      r"set share >= 1/\(2n\) = 1/20, or list its id in nodes$"):
        res = _run(byzantine=table)
    assert res.records.final("byzantine_clients") == 0
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # one attacker: no warning
        _run(byzantine={"attack": "ipm", "share": 0.05})


def test_a_record_built_without_share_or_nodes_is_refused_with_a_value_error() -> None:
    # from_config requires one of them; a record built directly reached an assert before
    with pytest.raises(ValueError, match="needs its nodes: a share .* got neither"):
        Byzantine(attack="sign_flip").nodes_of(None, 10)
    assert Byzantine(attack="sign_flip", share=0.2).nodes_of(None, 10).size == 2
