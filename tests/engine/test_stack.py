"""Stacked runs (topofl.engine.stack): each run's records equal the run alone's, to rounding."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
import torch

import topofl as tf
from topofl.engine.stack import Member, block_topology, run_stacked, stack_problem


def _rows(records: Any) -> list[dict[str, Any]]:
    return [r for r in records.rows if r["metric"] != "wall_time"]


def assert_same_records(a: Any, b: Any, rtol: float) -> None:
    """Same rows (round, client, metric) in the same order; integers equal, floats within
    ``rtol`` (relative, with an absolute floor of ``rtol``)."""
    ra, rb = _rows(a), _rows(b)
    assert len(ra) == len(rb)
    for x, y in zip(ra, rb):
        assert (x["round"], x["client"], x["metric"]) == (y["round"], y["client"], y["metric"])
        u, v = x["value"], y["value"]
        if isinstance(u, bool) or u is None or isinstance(u, str):
            assert u == v, (x, y)
        elif isinstance(u, int) and isinstance(v, int):
            assert u == v, (x, y)  # every count identical
        elif isinstance(u, float):
            assert (math.isnan(u) and math.isnan(v)) or math.isclose(
                u, v, rel_tol=rtol, abs_tol=rtol), (x, y)
        else:
            np.testing.assert_allclose(np.asarray(u, float), np.asarray(v, float),
                                       rtol=rtol, atol=rtol)


ALGORITHMS = {
    "dsgd": lambda lr: tf.algorithms.dsgd(lr=lr),
    "dsgd-momentum": lambda lr: tf.algorithms.dsgd(lr=lr, momentum=0.9, local_steps=2),
    "dsgd-message-noise": lambda lr: tf.algorithms.dsgd(lr=lr, message_noise=0.05,
                                                        noise_mean=0.01, noise_seed=3),
    "dsgd-parallel": lambda lr: tf.algorithms.dsgd(lr=lr, momentum=0.5, local_steps=2,
                                                   order="parallel"),
    "dfedavgm": lambda lr: tf.algorithms.dfedavgm(lr=lr, local_steps=2),
    "sgp": lambda lr: tf.algorithms.sgp(lr=lr),
    "local": lambda lr: tf.algorithms.get_algorithm("local", lr=lr),
    "osgp": lambda lr: tf.algorithms.osgp(lr=lr, momentum=0.5, restart_momentum=True),
    "dfedavgm_p": lambda lr: tf.algorithms.dfedavgm_p(lr=lr, local_steps_u=2, local_steps_v=1),
    "dsgt": lambda lr: tf.algorithms.dsgt(lr=lr),
    "dsgt-adapt-first": lambda lr: tf.algorithms.dsgt(lr=lr, variant="dsgt", weight_decay=1e-3),
    "dsgt-augdgm": lambda lr: tf.algorithms.dsgt(lr=lr, variant="augdgm", weight_decay=1e-3),
    "extra": lambda lr: tf.algorithms.extra(lr=lr, weight_decay=1e-3),
    "exact_diffusion": lambda lr: tf.algorithms.exact_diffusion(lr=lr, weight_decay=1e-3),
    "nids": lambda lr: tf.algorithms.nids(lr=lr, gamma=0.8),
    "kgt": lambda lr: tf.algorithms.kgt(lr=lr, local_steps=2, outer_lr=0.8,
                                        weight_decay=1e-3),
    "led": lambda lr: tf.algorithms.led(lr=lr, local_steps=2, beta=0.3, gamma=0.8),
    "proxskip": lambda lr: tf.algorithms.proxskip(lr=lr, comm_probability=0.5, chi=1.5,
                                                  coin_seed=1, weight_decay=1e-3),
    "dlm": lambda lr: tf.algorithms.dlm(lr=lr, penalty=0.5),
    "dlm-uniform": lambda lr: tf.algorithms.dlm(lr=lr, penalty=0.5, step="uniform"),
    "choco-topk": lambda lr: tf.algorithms.choco(lr=lr, ratio=0.3, gamma=0.5),
    "choco-randk": lambda lr: tf.algorithms.choco(lr=lr, compressor="randk", ratio=0.3,
                                                  compress_seed=3, momentum=0.5),
    "choco-qsgd": lambda lr: tf.algorithms.choco(lr=lr, compressor="qsgd", levels=4),
    "dsgd-randk": lambda lr: tf.algorithms.dsgd(lr=lr, compressor="randk", ratio=0.3,
                                                compress_seed=2, nesterov=True, momentum=0.5),
    "dsgd-randk-no-feedback": lambda lr: tf.algorithms.dsgd(lr=lr, compressor="randk",
                                                            ratio=0.3, compress_seed=2,
                                                            feedback=False),
    "dsgt-beer-qsgd": lambda lr: tf.algorithms.dsgt(lr=lr, compressor="qsgd", levels=4,
                                                    compress_seed=1),
    "el": lambda lr: tf.algorithms.el(lr=lr, local_steps=2, momentum=0.5),
}
GRAPHS = {
    "ring": lambda n, s: tf.topologies.ring(n),
    "complete": lambda n, s: tf.topologies.complete(n),
    "erdos_renyi": lambda n, s: tf.topologies.erdos_renyi(n, 0.5, seed=s),
    "exponential": lambda n, s: tf.topologies.exponential(n),
}


#: The model of an algorithm that needs a body and a head (others: the logistic model).
MODELS = {"dfedavgm_p": "mlp"}


def _member(algo: str, graph: str, seed: int, lr: float, dtype: str, n: int = 6,
            model: str | None = None, rounds: int = 3) -> Member:
    data = tf.data.federate("digits", "dirichlet", n, seed=seed, alpha=0.5)
    algorithm = ALGORITHMS[algo](lr)
    topology = GRAPHS[graph](n, seed) if algorithm.uses_topology else None
    config = tf.engine.RunConfig(rounds=rounds, seed=seed, dtype=dtype, batch_size=8,
                                 eval_every=1 if seed % 2 else 2)
    return Member(config, topology, algorithm, data,
                  tf.models.build_model(model or MODELS.get(algo, "logistic"),
                                        data.input_shape, 10, seed=seed))


def _check(members: list[Member], dtype: str) -> None:
    stacked = run_stacked(members)
    for m, res in zip(members, stacked):
        alone = tf.engine.run(*m[:5])
        assert_same_records(res.records, alone.records,
                            1e-10 if dtype == "float64" else 1e-5)
        assert torch.allclose(res.state.x, alone.state.x,
                              rtol=1e-10 if dtype == "float64" else 1e-5, atol=1e-7)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("algo", sorted(ALGORITHMS))
def test_every_stackable_algorithm_equals_its_runs_alone(algo: str, dtype: str) -> None:
    members = [_member(algo, "ring", 0, 0.1, dtype), _member(algo, "complete", 1, 0.05, dtype),
               _member(algo, "erdos_renyi", 2, 0.2, dtype, n=5)]
    _check(members, dtype)


@pytest.mark.parametrize("case", range(4))
def test_graphs_seeds_and_rates_equal_their_runs_alone(case: int) -> None:
    rng = np.random.default_rng(case)
    graphs = sorted(GRAPHS)
    members = [_member("dsgd", graphs[int(rng.integers(len(graphs)))], int(rng.integers(100)),
                       float(rng.choice([0.02, 0.1, 0.3])), "float64",
                       n=int(rng.integers(4, 9)), model="mlp", rounds=2)
               for _ in range(int(rng.integers(2, 5)))]
    _check(members, "float64")


def test_stack_checkpoints_resume_as_the_run_alone(tmp_path: Any) -> None:
    members = []
    for s in (0, 1):
        m = _member("dsgd-momentum", "ring", s, 0.1, "float64", rounds=4)
        cfg = tf.engine.RunConfig(**{**m.config.__dict__, "checkpoint_every": 2,
                                     "checkpoint_path": str(tmp_path / f"{s}.ckpt"),
                                     "records_path": str(tmp_path / f"{s}.jsonl")})
        members.append(m._replace(config=cfg))
    run_stacked(members)
    from topofl.engine.checkpoint import load_checkpoint
    for s in (0, 1):  # each lane's checkpoint counts its own blocks (written in a thread)
        blocks = tf.records.load(tmp_path / f"{s}.jsonl").blocks
        assert blocks and load_checkpoint(tmp_path / f"{s}.ckpt")["client_blocks"] == len(
            blocks)
    for s, m in enumerate(members):
        alone_cfg = tf.engine.RunConfig(**{**m.config.__dict__, "checkpoint_every": 0,
                                           "checkpoint_path": None, "records_path": None})
        alone = tf.engine.run(alone_cfg, *m[1:5])
        resumed = tf.engine.run(m.config, *m[1:5], resume=tmp_path / f"{s}.ckpt")
        last = [r for r in _rows(alone.records) if r["round"] == 3 and r["metric"] != "bytes"]
        again = [r for r in _rows(resumed.records) if r["round"] == 3]
        got = {(r["metric"], r["client"]): r["value"] for r in again}
        for r in last:
            if isinstance(r["value"], float) and not r["metric"].startswith("graph."):
                assert math.isclose(got[(r["metric"], r["client"])], r["value"],
                                    rel_tol=1e-10, abs_tol=1e-10), r


def test_block_topology_is_the_block_diagonal() -> None:
    a, b = tf.topologies.ring(4), tf.topologies.complete(3)
    t = block_topology([a, b])
    dense = t.to_dense()
    assert np.array_equal(dense[:4, :4], a.to_dense())
    assert np.array_equal(dense[4:, 4:], b.to_dense())
    assert not dense[:4, 4:].any() and not dense[4:, :4].any()


def test_runs_that_cannot_stack_say_why() -> None:
    m = _member("dsgd", "ring", 0, 0.1, "float32")
    fedavg = m._replace(algorithm=tf.algorithms.fedavg(), topology=None)
    assert "fedavg does not stack" in str(stack_problem([m, fedavg]))
    other = m._replace(algorithm=tf.algorithms.dsgd(lr=0.1, momentum=0.5))
    assert "differs from run 0" in str(stack_problem([m, other]))
    with pytest.raises(ValueError, match="cannot stack"):
        run_stacked([m, fedavg])


def test_sweep_stacks_by_default_and_equals_stack_off(tmp_path: Any) -> None:
    cfg = {"algorithm": "dsgd", "data": "digits", "n_clients": 5, "rounds": 3,
           "batch_size": 8, "dtype": "float64",
           "sweep": {"topology": ["ring", "complete"], "seed": [0, 1], "lr": [0.05, 0.2]}}
    said: list[str] = []
    on = tf.sweep.run_sweep(cfg, tmp_path / "on", progress=False, echo=said.append)
    assert any(line.startswith("stacked: 8 runs") for line in said)
    assert all(o.status == "complete" for o in on)
    off = tf.sweep.run_sweep({**cfg, "stack": False}, tmp_path / "off", progress=False,
                             echo=said.append)
    assert all("stacked" not in o.message for o in off)
    for r in tf.sweep.plan(cfg):
        assert_same_records(tf.records.load(tmp_path / "on" / f"{r.name}.jsonl"),
                            tf.records.load(tmp_path / "off" / f"{r.name}.jsonl"), 1e-10)
    again = tf.sweep.run_sweep(cfg, tmp_path / "on", progress=False, echo=said.append)
    assert {o.status for o in again} == {"skipped"}


def test_sweep_runs_alone_what_cannot_stack(tmp_path: Any) -> None:
    cfg = {"data": "digits", "n_clients": 4, "rounds": 2, "topology": "ring",
           "sweep": {"algorithm": ["dsgd", "fedavg"], "seed": [0, 1]}}
    said: list[str] = []
    out = tf.sweep.run_sweep(cfg, tmp_path, progress=False, echo=said.append)
    assert all(o.status == "complete" for o in out)
    assert any("not stacked" in line and "fedavg does not stack" in line for line in said)


def test_batched_evaluation_in_small_chunks_equals_the_runs_alone(monkeypatch: Any) -> None:
    # tiny evaluation chunks: the lanes' test splits take several batches (a lane with fewer
    # adds masked rows) and the global test sets several chunks; one run without the global
    # test set, one with per-client rows, different evaluation rounds and client counts
    monkeypatch.setattr(tf.engine.stack, "eval_chunk", lambda *a: 3)
    members = [_member("dsgd", "ring", 0, 0.1, "float64", n=4),
               _member("sgp", "complete", 1, 0.05, "float64", n=7),
               _member("dsgd", "exponential", 0, 0.2, "float64", n=5)]
    members[1] = members[1]._replace(algorithm=tf.algorithms.dsgd(lr=0.05))
    members[0] = members[0]._replace(config=tf.engine.RunConfig(
        **{**members[0].config.__dict__, "eval_global": False}))
    members[2] = members[2]._replace(config=tf.engine.RunConfig(
        **{**members[2].config.__dict__, "record_clients": True}))
    _check(members, "float64")


def test_lanes_share_a_global_test_set_only_when_it_is_equal() -> None:
    from types import SimpleNamespace

    from topofl.engine.stack import _share_global_sets

    x, y = torch.arange(12.0).reshape(4, 3), torch.tensor([0, 1, 2, 1])
    sets = [(x, y), (x.clone(), y.clone()), (x, y.flip(0)), (x + 1, y), (x, y), (x[:0], y[:0]),
            (x.double(), y), (x[:3], y[:3])]
    lanes = [SimpleNamespace(index=i, global_set=None,
                             env=SimpleNamespace(data=SimpleNamespace(global_test=g)),
                             config=tf.engine.RunConfig(1, eval_global=i != 4))
             for i, g in enumerate(sets)]
    _share_global_sets(lanes)  # type: ignore[arg-type]
    assert [ln.global_set for ln in lanes] == [0, 0, 2, 3, None, None, 6, 7]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("algo", ["dsgd-momentum", "el", "choco-randk", "dsgt", "extra",
                                  "dsgt-beer-qsgd"])
def test_stacked_gossip_is_the_runs_own_product(algo: str, dtype: str) -> None:
    # each run's rows are mixed with its own W (dense or sparse as alone); EL's re-weighted
    # graph (Erdos-Renyi's Metropolis weights are not uniform) block by block; EXTRA needs a
    # symmetric W, which the (directed) exponential graph is not. The stack's batched steps
    # and block products run other shapes (and slices of a larger buffer) than the run alone,
    # whose kernels MKL and ATen pick by shape and CPU: equal to rounding, not bit for bit
    third = "erdos_renyi" if algo == "extra" else "exponential"
    members = [_member(algo, g, s, 0.1, dtype, n=n, model="mlp")
               for g, s, n in (("ring", 0, 6), ("complete", 1, 5), (third, 2, 8),
                               ("erdos_renyi", 3, 12))]
    for m, res in zip(members, run_stacked(members)):
        alone = tf.engine.run(*m[:5]).state.x
        if dtype == "float64":
            torch.testing.assert_close(res.state.x, alone, rtol=1e-10, atol=1e-12)
        else:
            # float32: parameters ~0.1 differ by 1-2 ulps (~3e-8) between the two paths on
            # some CPUs; another run's W, a wrong weight or a missed step moves them by >1e-4
            torch.testing.assert_close(res.state.x, alone, rtol=1e-5, atol=1e-6)


def test_el_stacks_on_time_varying_graphs() -> None:
    # EL-Local: a new graph every round, its weights EL's own; beside a re-weighted one
    members = [_member("el", "ring", s, lr, "float64", n=n)._replace(
        topology=tf.topologies.el_local(n, 2, seed=s)) for s, lr, n in ((0, 0.1, 6), (1, 0.2, 7))]
    members.append(_member("el", "erdos_renyi", 2, 0.05, "float64", n=5))
    _check(members, "float64")


def test_a_derived_graph_is_cut_into_the_runs_blocks() -> None:
    from topofl.algorithms.el import arrival_average
    from topofl.engine.stack import _BlockMixer

    graphs = [tf.topologies.erdos_renyi(9, 0.4, seed=0), tf.topologies.star(4)]
    block = block_topology(graphs)
    rows = [slice(0, 9), slice(9, 13)]
    mixer = _BlockMixer(torch.device("cpu"), torch.float64)
    mixer.blocks(block, list(zip(rows, graphs)))
    x = torch.as_tensor(np.random.default_rng(0).normal(size=(13, 4)))
    got = x.clone()
    mixer.mix_(arrival_average(block), got)  # a graph the mixer was not told of
    for r, g in zip(rows, graphs):
        want = x[r].clone()
        tf.engine.gossip.Mixer(torch.device("cpu"), torch.float64).mix_(arrival_average(g), want)
        # the same product on a slice of the stack's rows: to rounding (another run's block
        # or a wrong weight is off by >1e-2)
        torch.testing.assert_close(got[r], want, rtol=1e-12, atol=1e-12)
    across = tf.Topology.from_matrix(np.full((13, 13), 1 / 13), name="everyone")
    with pytest.raises(ValueError, match="'everyone' mixes rows of different runs"):
        mixer.mix_(across, x.clone())


@pytest.mark.parametrize("algo", ["sgp", "osgp", "dfedavgm"])
def test_partial_participation_runs_alone(algo: str) -> None:
    # the active clients are drawn among all the rows of the pass: it would not be the runs'
    m = _member(algo, "ring", 0, 0.1, "float64")
    sampled = m._replace(algorithm=tf.algorithms.get_algorithm(algo, lr=0.1, participation=0.5))
    assert "participation=0.5" in str(stack_problem([sampled, sampled]))
    assert stack_problem([m, m]) is None


def test_partial_algorithms_stack_with_their_own_phase_rates() -> None:
    members = [_member("dfedavgm_p", "ring", s, 0.1, "float64") for s in (0, 1)]
    members[1] = members[1]._replace(algorithm=tf.algorithms.dfedavgm_p(
        lr_u=0.2, lr_v=0.05, local_steps_u=2, local_steps_v=1))
    _check(members, "float64")


def test_a_failing_checkpoint_write_stops_the_stack(tmp_path: Any) -> None:
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "a user's file").write_text("x")
    members = []
    for s, path in ((0, tmp_path / "ok.ckpt"), (1, tmp_path / "taken")):
        m = _member("dsgd", "ring", s, 0.1, "float64", rounds=4)
        members.append(m._replace(config=tf.engine.RunConfig(**{
            **m.config.__dict__, "checkpoint_every": 2, "checkpoint_path": str(path),
            "records_path": str(tmp_path / f"{s}.jsonl")})))
    with pytest.raises(IsADirectoryError):
        run_stacked(members)
    assert (tmp_path / "taken" / "a user's file").read_text() == "x"
    assert tf.records.load(tmp_path / "1.jsonl").rows  # the records written so far are kept


def test_a_diverging_run_stops_the_stack_with_its_records_saved(tmp_path: Any) -> None:
    members = []
    for s, lr in ((0, 0.1), (1, 1e30)):
        m = _member("dsgd", "ring", s, lr, "float64", rounds=4)
        members.append(m._replace(config=tf.engine.RunConfig(**{
            **m.config.__dict__, "checkpoint_every": 1,
            "checkpoint_path": str(tmp_path / f"{s}.ckpt"),
            "records_path": str(tmp_path / f"{s}.jsonl")})))
    with pytest.raises(tf.engine.stack.StackDiverged) as info:
        run_stacked(members)
    assert info.value.member == 1
    for s in (0, 1):
        assert tf.records.load(tmp_path / f"{s}.jsonl").configs  # header and rows on disk


def test_stacked_sampler_draws_each_datas_own_rows() -> None:
    from topofl.data.sampling import StackedSampler

    datas = [tf.data.federate("digits", part, n, seed=s, **kw)
             for part, n, s, kw in (("dirichlet", 5, 0, {"alpha": 0.3}), ("iid", 3, 7, {}),
                                    ("shards", 8, 2, {"shards_per_client": 2}))]
    sampler = StackedSampler(datas)
    for r, s, b in ((0, 0, 1), (3, 2, 16), (40, 7, 33)):
        want = torch.cat([d.sample_indices(r, s, b) for d in datas])
        assert torch.equal(sampler.indices(r, s, b), want)
    with pytest.raises(ValueError, match="one or more"):
        StackedSampler([])
