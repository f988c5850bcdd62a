"""Graphs from anywhere through ``topofl.run``, and the frictions of issue 34 (item 5): advice
that can be followed, ``rounds`` consistent, a graph given to an algorithm that uses none, a
heartbeat in logs, one summary under torchrun, CLI records of a sensible size."""

from __future__ import annotations

import io
import json
import os
import time
import warnings
from pathlib import Path
from typing import Any

import networkx as nx
import pytest

import topofl as tf
from topofl._utils.heartbeat import elapsed_text, heartbeat
from topofl.cli import main
from topofl.exceptions import ConfigError
from topofl.workflow.provenance import command_line, launched_command, provenance

_RUN = dict(data="digits", n_clients=8, partition="iid", rounds=2, batch_size=8, seed=0)


def _values(res: Any) -> list[tuple[Any, ...]]:
    return [(r["round"], r["client"], r["metric"], r["value"]) for r in res.records.rows
            if r["metric"] != "wall_time"]


@pytest.mark.parametrize("graph", ["networkx", "networkx-digraph", "pyg", "pyg-no-weights"])
def test_a_networkx_graph_or_pyg_data_runs_as_its_topology(graph: str) -> None:
    ring = tf.topologies.ring(8)
    given: Any = {
        "networkx": nx.cycle_graph(8),
        "networkx-digraph": nx.DiGraph(nx.cycle_graph(8)),  # every arc both ways: undirected
        "pyg": ring.to_pyg(),
        "pyg-no-weights": tf.Topology.from_networkx(nx.cycle_graph(8)).to_pyg(),
    }[graph]
    if graph == "pyg-no-weights":
        del given.edge_weight
    res = tf.run("dsgd", topology=given, **_RUN)
    ref = tf.run("dsgd", topology=ring, **_RUN)  # Metropolis on a ring: every weight 1/3
    assert _values(res) == _values(ref)


def test_a_networkx_graph_gets_metropolis_weights_in_prepare() -> None:
    G = nx.star_graph(3)  # hub 0 of degree 3, leaves of degree 1: 1/(1 + max(d_i, d_j)) = 1/4
    p = tf.api.prepare("dsgd", G, n_clients=4)  # the graph's n: another n is refused up front
    t = p.call["topology"]
    assert isinstance(t, tf.Topology)
    assert t.W[0, 1] == pytest.approx(0.25) and t.W[1, 1] == pytest.approx(0.75)


@pytest.mark.parametrize("make", [
    lambda: nx.DiGraph([(0, 1), (1, 2), (2, 0)]),
    lambda: tf.Topology.from_networkx(nx.DiGraph([(0, 1), (1, 2), (2, 0)]),
                                      weights="push_sum").to_pyg(),
])
def test_a_directed_graph_is_refused_naming_the_way_out(make: Any) -> None:
    given = make()
    if hasattr(given, "edge_weight"):
        del given.edge_weight
    with pytest.raises(ConfigError, match='weights=\\"push_sum\\".*sgp, osgp'):
        tf.api.prepare("sgp", given)


def test_the_directed_graph_advice_can_be_followed() -> None:
    # before: "build it with weights='metropolis'", which neither the spec nor
    # random_directed() accepts
    with pytest.raises(ConfigError) as info:
        tf.run("dsgd", topology="random_directed:k=2", **_RUN)
    msg = str(info.value)
    assert "metropolis'" not in msg and 'algorithm "sgp" or "osgp"' in msg
    spec = msg.split('with topology "')[1].split('"')[0]
    assert spec == "random_directed_push:k=2"
    for algo in ("sgp", "osgp"):  # the advice, followed, runs
        res = tf.run(algo, topology=spec, **_RUN)
        assert res.records.final("messages") > 0


def test_a_push_sum_algorithm_on_a_pull_graph_is_told_to_keep_itself() -> None:
    # before: dfedpgp on random_directed was told to switch to "sgp" or "osgp"
    with pytest.raises(ConfigError) as info:
        tf.run("dfedpgp", topology="random_directed:k=2", **_RUN)
    msg = str(info.value)
    assert "keep dfedpgp with topology" in msg and '"sgp"' not in msg
    spec = msg.split('with topology "')[1].split('"')[0]
    assert spec == "random_directed_push:k=2"
    assert tf.run("dfedpgp", topology=spec, model="mlp", **_RUN).records.final("messages") > 0


def test_push_sum_on_a_row_stochastic_graph_names_the_push_variant() -> None:
    why = tf.engine.extend.stochasticity_problem(tf.algorithms.sgp(),
                                       tf.topologies.random_directed(10, 3, seed=0))
    assert why is not None and 'random_directed_push:k=3' in why
    assert tf.engine.extend.stochasticity_problem(tf.algorithms.sgp(),
                                        tf.topologies.random_directed(10, 3, seed=0,
                                                                      mode="push")) is None


@pytest.mark.parametrize("name", sorted(n for n in tf.algorithms.ALGORITHMS
                                        if not tf.algorithms.get_algorithm(n).uses_topology))
def test_an_algorithm_without_a_graph_warns_when_given_one(name: str) -> None:
    with pytest.warns(UserWarning, match=f"^{name} uses no graph: the topology 'ring' is "
                                         "ignored"):
        tf.api.prepare(name, "ring")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tf.api.prepare(name, None)  # no graph: no warning
        tf.api.prepare("dsgd", "ring")  # a graph for an algorithm that uses one: none


def test_rounds_has_one_default_shown_by_topofl_list(capsys: pytest.CaptureFixture[str]
                                                     ) -> None:
    # before: `topofl list` said "rounds (required)" and a config without it ran 100 rounds
    assert main(["list", "settings"]) == 0
    out = capsys.readouterr().out
    default = tf.api.run_defaults()["rounds"]
    assert f"    rounds: int = {default}\n" in out and "(required)" not in out
    cfg = {"algorithm": "dsgd", "topology": "ring", "n_clients": 8, "partition": "iid"}
    assert tf.config.resolve(cfg).prepared.rounds == default


def test_the_command_line_writes_no_per_client_rows_by_default(tmp_path: Path) -> None:
    base = ["run", "--algorithm", "dsgd", "--topology", "ring", "--set", "rounds=3",
            "--set", "n_clients=10", "--set", "partition=iid"]
    assert main([*base, "--out", str(tmp_path / "a.jsonl")]) == 0
    assert main([*base, "--set", "record_clients=true", "--out", str(tmp_path / "b.jsonl")]) == 0
    a, b = tf.records.load(tmp_path / "a.jsonl"), tf.records.load(tmp_path / "b.jsonl")
    assert a.config["record_clients"] is False and b.config["record_clients"] is True
    assert not [r for r in a.rows if r["client"] is not None]
    # the mean rows are the same either way; the per-client ones are what b adds
    mean = [(r["round"], r["metric"], r["value"]) for r in a.rows if r["metric"] != "wall_time"]
    assert mean == [(r["round"], r["metric"], r["value"]) for r in b.rows
                    if r["client"] is None and r["metric"] != "wall_time"]
    per_client = [r for r in b.rows if r["client"] is not None]
    assert {r["client"] for r in per_client} == set(range(10))


def test_a_heartbeat_line_every_period_when_not_on_a_terminal() -> None:
    out = io.StringIO()
    with heartbeat("topofl figure", every=0.05, stream=out):
        time.sleep(0.28)
    lines = out.getvalue().splitlines()
    assert 3 <= len(lines) <= 6
    assert all(ln.startswith("topofl figure: still running, ") and ln.endswith(" s elapsed")
               for ln in lines)

    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    tty = Tty()
    with heartbeat("topofl figure", every=0.02, stream=tty):
        time.sleep(0.1)
    assert tty.getvalue() == ""  # a terminal has its progress bars
    assert (elapsed_text(59), elapsed_text(61), elapsed_text(7200)) == ("59 s", "1 min 1 s",
                                                                       "2 h 0 min")


def test_topofl_run_prints_the_heartbeat_to_stderr(monkeypatch: pytest.MonkeyPatch,
                                                   tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("TOPOFL_HEARTBEAT", "0.05")
    assert main(["run", "--algorithm", "dsgd", "--topology", "ring", "--set", "rounds=20",
                 "--set", "n_clients=10", "--set", "partition=iid",
                 "--out", str(tmp_path / "r.jsonl")]) == 0
    err = capsys.readouterr().err
    assert "topofl run: still running, 0 s elapsed" in err


def test_only_rank_0_prints_the_summary(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    args = ["run", "--algorithm", "dsgd", "--topology", "ring", "--set", "rounds=1",
            "--set", "n_clients=6", "--set", "partition=iid"]
    monkeypatch.setenv("RANK", "1")  # what torchrun sets on the second rank
    assert main([*args, "--out", str(tmp_path / "a.jsonl")]) == 0
    assert capsys.readouterr().out == ""
    monkeypatch.setenv("RANK", "0")
    assert main([*args, "--out", str(tmp_path / "b.jsonl")]) == 0
    assert capsys.readouterr().out.startswith("records: ")


def test_the_provenance_says_torchrun(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TORCHELASTIC_RUN_ID", "none")
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "2")
    with command_line("topofl run run.toml"):
        assert provenance()["command"] == ("torchrun --nnodes 1 --nproc-per-node 2 -m topofl "
                                           "run run.toml")
    assert launched_command(None, os.environ) is None  # from Python: no command line
    monkeypatch.delenv("TORCHELASTIC_RUN_ID")
    with command_line("topofl run run.toml"):
        assert provenance()["command"] == "topofl run run.toml"
    json.dumps(provenance())  # JSON-able as ever
