"""Stacking is a property an algorithm declares (``Algorithm.stacks``), checked here over
every registered algorithm and a user's: a stack of the runs of one that declares it equals
its runs alone (float64, to 1e-10: the stack's kernels run other shapes than the run alone,
so the bits are not promised on every CPU), and a stack of one that does not is refused with
its reason. A stack runs the one round loop, so availability, the network clock and lost
messages apply to its runs as to the run alone."""

from __future__ import annotations

from typing import Any

import pytest
import torch

import topofl as tf
from tests.engine.test_stack import assert_same_records
from topofl.engine import pieces
from topofl.engine.stack import Member, alone_reason, run_stacked, stack_problem

NAMES = sorted(tf.algorithms.ALGORITHMS)


def _member(algorithm: tf.engine.Algorithm, seed: int, n: int, rounds: int = 2,
            **cfg: Any) -> Member:
    # iid: equal local datasets, so that epoch-based phases take equal numbers of steps
    data = tf.data.federate("digits", "iid", n, seed=seed)
    model = "mlp" if algorithm.shared == "body" else "logistic"
    topology = (tf.topologies.erdos_renyi(n, 0.6, seed=seed) if algorithm.uses_topology
                else None)
    config = tf.engine.RunConfig(rounds=rounds, seed=seed, dtype="float64", batch_size=8,
                                 eval_every=1, **cfg)
    return Member(config, topology, algorithm, data,
                  tf.models.build_model(model, data.input_shape, 10, seed=seed))


def _equal_alone(members: list[Member]) -> None:
    for m, res in zip(members, run_stacked(members)):
        alone = tf.engine.run(*m[:5])
        assert_same_records(res.records, alone.records, 1e-10)
        torch.testing.assert_close(res.state.x, alone.state.x, rtol=1e-10, atol=1e-12)


def test_the_registry_holds_stacking_and_lone_algorithms() -> None:
    stacks = [n for n in NAMES if tf.algorithms.ALGORITHMS[n]().stacks is True]
    assert {"dsgd", "sgp", "el", "choco"} <= set(stacks)
    assert {"fedavg", "dpfl", "pfeddst"}.isdisjoint(stacks)


@pytest.mark.parametrize("name", NAMES)
def test_every_registered_algorithm_stacks_as_it_declares(name: str) -> None:
    algorithm = tf.algorithms.ALGORITHMS[name]()
    members = [_member(algorithm, 0, 6), _member(algorithm, 1, 6)]
    if algorithm.stacks is True and algorithm.predict is None:
        assert stack_problem(members) is None
        _equal_alone(members)
    else:
        why = stack_problem(members)
        assert why is not None and "runs alone" in why
        assert why == f"run 0: {alone_reason(members[0].config, algorithm)}"
        if isinstance(algorithm.stacks, str):
            assert algorithm.stacks in why
        with pytest.raises(ValueError, match="cannot stack"):
            run_stacked(members)


def _users(stacks: bool) -> tf.engine.Algorithm:
    sgd = pieces.SGD(momentum=0.5)
    return tf.engine.check_algorithm(tf.engine.Algorithm(
        "users_gossip", {"lr": 0.1}, (tf.engine.Phase(lr=0.1, steps=2),),
        pieces.compose_init(sgd), sgd, pieces.gossip(), stacks=stacks))


def test_a_users_algorithm_stacks_when_it_declares_so() -> None:
    _equal_alone([_member(_users(True), 0, 6), _member(_users(True), 1, 4)])
    why = stack_problem([_member(_users(False), 0, 6)] * 2)
    assert why == "run 0: users_gossip does not stack (Algorithm.stacks is False): it runs alone"


def test_stacks_must_be_a_bool_or_a_reason() -> None:
    for bad in ("", "  ", 1, None):
        with pytest.raises(TypeError, match="Algorithm.stacks must be True, False or a"):
            tf.engine.check_algorithm(_users(True)._replace(stacks=bad))


def test_partial_participation_declares_why_it_runs_alone() -> None:
    algo = tf.algorithms.dfedavgm(lr=0.1, participation=0.5)
    assert isinstance(algo.stacks, str) and algo.stacks.startswith("participation=0.5")
    assert tf.algorithms.dfedavgm(lr=0.1, participation=1.0).stacks is True


@pytest.mark.parametrize("name", ["dsgd", "sgp", "el"])
def test_availability_clock_and_drops_apply_to_each_run_of_a_stack(name: str) -> None:
    algorithm = tf.algorithms.ALGORITHMS[name](lr=0.1)
    members = [
        _member(algorithm, 0, 7, rounds=3, availability={"offline": 0.3, "seed": 1},
                network={"latency": 0.01, "speed": 1e9, "drop": 0.3, "seed": 4}),
        _member(algorithm, 1, 5, rounds=3),  # none of it: a plain run beside them
        _member(algorithm, 2, 6, rounds=3, network={"latency": 0.02, "drop": 0.5, "seed": 9}),
    ]
    assert stack_problem(members) is None
    _equal_alone(members)
    res = run_stacked(members)
    metrics = {r["metric"] for r in res[0].records.rows}
    assert {"online_clients", "sim_time", "round_messages_dropped"} <= metrics
    assert "sim_time" not in {r["metric"] for r in res[1].records.rows}
    dropped = res[2].records.series("round_messages_dropped")[1]
    assert float(dropped.sum()) > 0


def test_clocked_must_be_true_or_a_reason() -> None:
    for bad in ("", "  ", False, 1, None):
        with pytest.raises(TypeError, match="Algorithm.clocked must be True or a non-empty"):
            tf.engine.check_algorithm(_users(True)._replace(clocked=bad))
