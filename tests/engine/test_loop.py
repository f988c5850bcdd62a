"""The round loop end to end: records, resume, divergence, executors, errors, the demo."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

import topofl as tf
from tests.engine._crash import Crash, CrashingData
from topofl.engine import RunConfig
from topofl.exceptions import ConvergenceError


@pytest.fixture(scope="module")
def data() -> Any:
    return tf.data.federate("digits", "shards", 12, shards_per_client=2, seed=0)


def _strip(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for r in rows if r["metric"] != "wall_time"]


def test_records_written_and_round_trip(data: Any, tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    res = tf.run("dsgd", topology="ring", data=data, rounds=4, lr=0.2, batch_size=8,
                 eval_every=2, records_path=str(path), seed=1)
    rec = tf.records.load(path)
    assert rec.rows == res.records.rows
    assert rec.config["algorithm"] == "dsgd" and rec.config["rounds"] == 4
    assert rec.provenance["torch"] == torch.__version__
    rounds, acc = rec.series("test_acc_mean")
    assert rounds.tolist() == [1, 3]
    assert np.all((acc >= 0) & (acc <= 1))
    assert len(rec.per_client("test_acc", 3)) == 12
    # messages: 2 arcs per node per round on a ring
    _, msgs = rec.series("messages")
    assert msgs.tolist() == [2 * 12 * 2, 2 * 12 * 4]
    _, nbytes = rec.series("bytes")
    assert nbytes[-1] == msgs[-1] * res.layout.num_params * 4
    assert rec.final("graph.spectral_gap") == pytest.approx(
        tf.spectral.spectral_gap(tf.topologies.ring(12)))
    header = json.loads(path.read_text().splitlines()[0])
    assert header["header"] is True


def test_same_seed_same_records(data: Any) -> None:
    a = tf.run("dsgd", topology="ring", data=data, rounds=3, lr=0.2, batch_size=8, seed=3)
    b = tf.run("dsgd", topology="ring", data=data, rounds=3, lr=0.2, batch_size=8, seed=3)
    assert _strip(a.records.rows) == _strip(b.records.rows)
    assert torch.equal(a.state.x, b.state.x)





@pytest.mark.parametrize("algorithm", ["dsgd", "sgp"])
def test_resume_equals_uninterrupted(data: Any, tmp_path: Path, algorithm: str) -> None:
    model = tf.models.build_model("logistic", data.input_shape, data.num_classes, seed=0)
    algo = tf.algorithms.get_algorithm(algorithm, lr=0.3, momentum=0.5)
    topo = tf.topologies.random_regular(12, 3, seed=0)
    full = tf.engine.run(RunConfig(rounds=7, batch_size=8, eval_every=2, seed=2), topo, algo,
                         data, model)
    cfg = RunConfig(rounds=7, batch_size=8, eval_every=2, seed=2, checkpoint_every=3,
                    checkpoint_path=str(tmp_path / "ck.pt"),
                    records_path=str(tmp_path / "r.jsonl"))
    with pytest.raises(Crash):
        tf.engine.run(cfg, topo, algo, CrashingData(data, at=4), model)
    partial = tf.records.load(tmp_path / "r.jsonl")
    assert max(r["round"] for r in partial.rows) == 3  # rounds 0..3 were recorded
    resumed = tf.engine.run(cfg, topo, algo, data, model, resume=tmp_path / "ck.pt")
    assert _strip(tf.records.load(tmp_path / "r.jsonl").rows) == _strip(full.records.rows)
    assert _strip(resumed.records.rows) == _strip(full.records.rows)
    assert torch.equal(resumed.state.x, full.state.x)


def test_resume_refuses_other_config(data: Any, tmp_path: Path) -> None:
    kw = dict(topology="ring", data=data, batch_size=8, seed=0, checkpoint_every=1,
              checkpoint_path=str(tmp_path / "ck.pt"))
    tf.run("dsgd", rounds=2, lr=0.2, **kw)
    with pytest.raises(ValueError, match=r"other settings .*algorithm\.lr: expected 0\.2, "
                                         r"found 0\.3"):
        tf.run("dsgd", rounds=3, lr=0.3, resume=str(tmp_path / "ck.pt"), **kw)


class _PoisonedData(CrashingData):
    """Client 5's features become NaN from round ``at`` on (a diverging client)."""

    def sample(self, round: int, step: int, batch_size: int, **kw: Any) -> Any:
        x, y = self._d.sample(round, step, batch_size, **kw)
        if round >= self._at:
            x = x.clone()
            x[5] = float("nan")
        return x, y


def test_divergence_names_round_and_client_and_keeps_records(data: Any, tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    model = tf.models.build_model("logistic", data.input_shape, data.num_classes, seed=0)
    cfg = RunConfig(rounds=10, batch_size=8, records_path=str(path), eval_every=1)
    with pytest.raises(ConvergenceError, match=r"round 3, local step 0: the loss of client 5"):
        tf.engine.run(cfg, tf.topologies.ring(12), tf.algorithms.dsgd(), _PoisonedData(data, 3),
                      model)
    rec = tf.records.load(path)
    assert rec.series("test_acc_mean")[0].tolist() == [0, 1, 2]


def test_executors_give_the_same_run(data: Any) -> None:
    kw = dict(topology="ring", data=data, rounds=3, lr=0.2, batch_size=8, seed=0,
              dtype="float64", model="mlp", model_params={"hidden": (16,)})
    a = tf.run("dsgd", executor="batched", **kw)
    b = tf.run("dsgd", executor="loop", **kw)
    np.testing.assert_allclose(a.state.x.numpy(), b.state.x.numpy(), rtol=1e-10, atol=1e-12)
    for ra, rb in zip(_strip(a.records.rows), _strip(b.records.rows)):
        assert ra["metric"] == rb["metric"] and ra["round"] == rb["round"]
        if isinstance(ra["value"], float):
            assert ra["value"] == pytest.approx(rb["value"], rel=1e-9, abs=1e-12)


def test_local_epochs_give_each_client_its_own_step_count(data: Any) -> None:
    sizes = data.sizes("train")
    assert len(set(sizes.tolist())) > 1
    from topofl.engine.local import steps_per_client

    steps = steps_per_client(None, 1.0, torch.as_tensor(np.array(sizes)), 8)
    assert steps.tolist() == [int(np.ceil(s / 8)) for s in sizes]
    # a client frozen after its own count: compare with a run where everyone does 1 step
    res = tf.run("local", data=data, rounds=1, lr=0.1, local_epochs=1.0, batch_size=8, seed=0)
    assert res.records.final("train_loss") > 0


def test_unpersonalized_algorithms_train_logistic(data: Any) -> None:
    push = tf.topologies.ring(12, weights="push_sum")
    for name in ("dsgd", "dfedavgm", "sgp", "osgp", "local", "fedavg"):
        topo = push if name in ("sgp", "osgp") else tf.topologies.ring(12)
        res = tf.run(name, topology=topo, data=data, rounds=15, lr=0.3, batch_size=8, seed=0,
                     eval_every=15, record_clients=False, spectral=False)
        first = res.records
        assert first.final("train_loss") < np.log(10), name


def test_run_errors(data: Any) -> None:
    with pytest.raises(ValueError, match="n=5 nodes but the data has 12"):
        tf.run("dsgd", topology=tf.topologies.ring(5), data=data, rounds=1)
    with pytest.raises(TypeError, match=r"unknown key\(s\) \['learning_rate'\]"):
        tf.run("dsgd", topology="ring", data=data, rounds=1, learning_rate=0.1)
    with pytest.raises(ValueError, match="unknown algorithm"):
        tf.run("gossip-magic", topology="ring", data=data, rounds=1)
    with pytest.raises(ValueError, match="pass a topology"):
        tf.run("dsgd", topology=None, data=data, rounds=1)
    import networkx as nx

    directed = tf.Topology.from_networkx(
        nx.DiGraph([(i, (i + 1) % 12) for i in range(12)] + [(0, 5)]), weights="push_sum")
    with pytest.raises(ValueError, match="doubly-stochastic"):
        tf.run("dsgd", topology=directed, data=data, rounds=1)
    with pytest.raises(ValueError, match="batch_size must be >= 1"):
        tf.run("dsgd", topology="ring", data=data, rounds=1, batch_size=0)
    with pytest.raises(ValueError, match="checkpoint_path"):
        tf.run("dsgd", topology="ring", data=data, rounds=1, checkpoint_every=2)
    with pytest.raises(TypeError, match="topology must be"):
        tf.run("dsgd", topology=np.eye(12), data=data, rounds=1)


def test_global_rng_untouched(data: Any) -> None:
    torch.manual_seed(123)
    before = torch.rand(3)
    torch.manual_seed(123)
    tf.run("dsgd", topology="ring", data=data, rounds=2, seed=0, init="independent")
    assert torch.equal(torch.rand(3), before)


def test_independent_init_differs_per_client(data: Any) -> None:
    res = tf.run("local", data=data, rounds=1, lr=1e-9, seed=0, init="independent")
    x = res.state.x
    assert not torch.allclose(x[0], x[1])


def test_demo_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from topofl.tools.demo import run_demo

    rows = run_demo(tmp_path / "demo", rounds=4, n_clients=20, eval_every=2, figure=True)
    assert [r["topology"] for r in rows] == ["ring", "d-cliques", "complete"]
    assert (tmp_path / "demo" / "convergence.png").stat().st_size > 1000
    assert (tmp_path / "demo" / "ring.jsonl").exists()
    assert "| ring |" in capsys.readouterr().out


def _graph_rounds(rows: list[dict[str, Any]]) -> list[int]:
    return [r["round"] for r in rows if r["metric"] == "graph.spectral_gap"]


def test_static_graph_rows_once_per_run_time_varying_every_evaluation(data: Any,
                                                                      tmp_path: Path) -> None:
    kw = dict(data=data, rounds=6, lr=0.2, batch_size=8, eval_every=2, seed=0)
    static = tf.run("dsgd", topology="ring", **kw)
    assert _graph_rounds(static.records.rows) == [1]  # the first evaluation of the run
    assert static.records.final("graph.spectral_gap") == pytest.approx(
        tf.spectral.spectral_gap(tf.topologies.ring(12)))
    varying = tf.run("dsgd", topology=tf.topologies.one_peer_exponential(12), **kw)
    assert _graph_rounds(varying.records.rows) == [1, 3, 5]
    # a resumed run does not write the static graph's rows again
    model = tf.models.build_model("logistic", data.input_shape, data.num_classes, seed=0)
    cfg = RunConfig(rounds=6, batch_size=8, eval_every=2, seed=0, checkpoint_every=4,
                    checkpoint_path=str(tmp_path / "ck.pt"),
                    records_path=str(tmp_path / "r.jsonl"))
    ring, algo = tf.topologies.ring(12), tf.algorithms.dsgd(lr=0.2)
    with pytest.raises(Crash):
        tf.engine.run(cfg, ring, algo, CrashingData(data, at=5), model)
    tf.engine.run(cfg, ring, algo, data, model, resume=tmp_path / "ck.pt")
    assert _graph_rounds(tf.records.load(tmp_path / "r.jsonl").rows) == [1]


class _Idle(tf.engine.LocalUpdate):
    """A local update that trains no client (as an event-time window without an event)."""

    def update(self, state: Any, grads: Any, phase: Any, lr: Any, rnd: Any, env: Any) -> None:
        pass


def _nobody(state: Any, rnd: Any, env: Any) -> tf.engine.Sent:
    return tf.engine.Sent.of(active=np.zeros(env.n, dtype=bool))  # no message, nobody acted


def test_a_run_in_which_nothing_happened_ends_with_a_warning(data: Any) -> None:
    # before: a run with no event, step or message in any round ended silently
    still = tf.algorithms.dsgd(0.1)._replace(name="still", local=_Idle(), communicate=_nobody)
    x0 = tf.run(still, topology="ring", data=data, rounds=0, batch_size=8).state.x.clone()
    with pytest.warns(UserWarning, match=r"^still: the run did nothing in rounds 0\.\.2 \(run "
                      r"'still-ring'\): no client trained and no message was sent \(every "
                      r"round's Sent.messages was 0 and no client was active\)"):
        res = tf.run(still, topology="ring", data=data, rounds=3, batch_size=8)
    assert torch.equal(res.state.x, x0)
    # one round that does something is enough: no warning
    some = [False] * 3

    def once(state: Any, rnd: Any, env: Any) -> tf.engine.Sent:
        active = np.zeros(env.n, dtype=bool)
        active[0] = some[rnd.t] = rnd.t == 1
        return tf.engine.Sent.of(active=active)

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tf.run(still._replace(communicate=once), topology="ring", data=data, rounds=3,
               batch_size=8)
        tf.run("dsgd", topology="ring", data=data, rounds=2, batch_size=8)  # every round acts
        tf.run("local", data=data, rounds=2, batch_size=8)  # no message, but every client trains
    assert some == [False, True, False]


def test_algorithm_idle_refuses_a_run_before_it_reads_data(data: Any) -> None:
    def idle(rounds: int) -> str | None:
        return f"needs at least 5 rounds, got {rounds}" if rounds < 5 else None

    algo = tf.algorithms.dsgd(0.1)._replace(name="slow_start", idle=idle)
    with pytest.raises(ValueError, match=r"^slow_start: needs at least 5 rounds, got 3$"):
        tf.run(algo, topology="ring", data="no_such_dataset", rounds=3)
    tf.run(algo, topology="ring", data=data, rounds=0)  # no round asked for: no check
    with pytest.raises(TypeError, match=r"slow_start: Algorithm.idle must be None or callable "
                       r"rounds -> str \| None, got str 'never'"):
        tf.engine.check_algorithm(algo._replace(idle="never"))
