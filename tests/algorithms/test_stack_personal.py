"""Stacking the personalized algorithms of DFedPGP, PFedDST and DPFL (topofl.engine.stack).

DFedPGP's pieces change a client's row from that row alone (its head, its local steps, the
push-sum de-biasing) or through the mixer (the body's and the weights' push-sum), so a sweep
of its runs stacks: a stacked pass records what each run alone records (float64 to 1e-10,
float32 to 1e-5: the stack's kernels run other shapes than the run alone, so the bits are not
promised on every CPU), also when the runs' epochs take different numbers of local steps (a
Dirichlet split per seed, as the figures run it). PFedDST selects its peers and DPFL builds
its graph over every client they are given, so their runs run alone and say why.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch

import topofl as tf
from tests.engine.test_stack import assert_same_records
from topofl.engine.local import steps_per_client
from topofl.engine.stack import Member, alone_reason, run_stacked, stack_problem

TOL = {"float64": 1e-10, "float32": 1e-5}


def _member(algorithm: tf.engine.Algorithm, seed: int, n: int, dtype: str = "float64",
            rounds: int = 3, **cfg: Any) -> Member:
    data = tf.data.federate("digits", "dirichlet", n, seed=seed, alpha=0.5)
    topology = (tf.topologies.random_directed(n, 2, seed=seed, mode="push")
                if algorithm.requires == "column" else tf.topologies.erdos_renyi(n, 0.6,
                                                                                 seed=seed))
    config = tf.engine.RunConfig(rounds=rounds, seed=seed, dtype=dtype, batch_size=32,
                                 eval_every=1, **cfg)
    model = tf.models.build_model("mlp", data.input_shape, 10, seed=seed, hidden=(8,))
    return Member(config, topology if algorithm.uses_topology else None, algorithm, data,
                  model)


def _steps(m: Member) -> list[int]:
    sizes = torch.as_tensor(np.array(m.data.sizes("train")))
    return [int(steps_per_client(p.steps, p.epochs, sizes, m.config.batch_size).max())
            for p in m.algorithm.phases]


def _equal_alone(members: list[Member], dtype: str) -> None:
    assert stack_problem(members) is None
    for m, res in zip(members, run_stacked(members)):
        alone = tf.engine.run(*m[:5])
        assert_same_records(res.records, alone.records, TOL[dtype])
        torch.testing.assert_close(res.state.x, alone.state.x, rtol=TOL[dtype],
                                   atol=TOL[dtype])


def _dfedpgp(lr: float) -> tf.engine.Algorithm:
    return tf.algorithms.dfedpgp(lr_u=lr, lr_v=lr / 2, local_epochs_u=0.5, local_epochs_v=0.3)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_dfedpgp_stacked_runs_equal_their_runs_alone(dtype: str) -> None:
    # 3 seeds (their own Dirichlet splits, graphs and models) and 3 learning rates; the
    # epochs take different numbers of local steps in each run, in both phases (head, body)
    members = [_member(_dfedpgp(lr), seed, n, dtype)
               for seed, lr, n in ((0, 0.1, 6), (1, 0.05, 5), (2, 0.2, 7))]
    assert [_steps(m) for m in members] == [[4, 6], [5, 7], [4, 6]]
    assert tf.algorithms.dfedpgp().stacks is True
    _equal_alone(members, dtype)


def test_dfedpgp_stacks_beside_a_run_with_other_steps_per_phase_and_a_clock() -> None:
    # a longer body phase and a shorter head phase than its neighbours' (the stack's phase
    # lasts its longest run's; a run past its own steps rests), one run under [network]
    members = [_member(_dfedpgp(0.1), 3, 4), _member(_dfedpgp(0.1), 4, 8, rounds=3,
                                                     network={"latency": 0.01, "seed": 1}),
               _member(_dfedpgp(0.1), 5, 6)]
    steps = [_steps(m) for m in members]
    assert len({s[0] for s in steps}) > 1 and len({s[1] for s in steps}) > 1
    _equal_alone(members, "float64")


@pytest.mark.parametrize("name", ["dsgd", "dfedavgm_p"])
def test_epoch_runs_with_other_steps_per_phase_stack(name: str) -> None:
    # the relaxed condition holds for every stacking algorithm, not only DFedPGP's
    algo = {"dsgd": lambda lr: tf.algorithms.dsgd(lr=lr, momentum=0.5, local_epochs=0.3),
            "dfedavgm_p": lambda lr: tf.algorithms.dfedavgm_p(
                lr=lr, local_epochs_u=0.4, local_epochs_v=0.2)}[name]
    members = [_member(algo(lr), seed, n) for seed, lr, n in ((0, 0.1, 6), (1, 0.3, 4))]
    assert _steps(members[0]) != _steps(members[1])
    _equal_alone(members, "float64")


def test_dfedpgp_with_partial_participation_runs_alone() -> None:
    algo = tf.algorithms.dfedpgp(participation=0.5)
    assert isinstance(algo.stacks, str) and algo.stacks.startswith("participation=0.5")


@pytest.mark.parametrize("name, kwargs, says", [
    ("pfeddst", {}, "env.cross_losses"),
    ("pfeddst", {"selection": "random"}, "[n, n] array of keys"),
    ("dpfl", {}, "greedily (BGGC, GGC)"),
    ("dpfl", {"graph": "random", "tau_init": 0}, "at random among all the clients"),
])
def test_pfeddst_and_dpfl_say_why_they_run_alone(name: str, kwargs: dict[str, Any],
                                                 says: str) -> None:
    algo = tf.algorithms.ALGORITHMS[name](**kwargs)
    assert isinstance(algo.stacks, str) and says in algo.stacks
    assert "of the pass (a stack's rows, not its run's)" in algo.stacks
    members = [_member(algo, s, 5, rounds=1) for s in (0, 1)]
    why = stack_problem(members)
    assert why == f"run 0: {alone_reason(members[0].config, algo)}"
    assert why == f"run 0: {algo.stacks}: it runs alone"


def test_dpfl_names_only_the_data_it_draws() -> None:
    plain = tf.algorithms.dpfl(graph="random", tau_init=0).stacks
    assert isinstance(plain, str) and "env." not in plain and "budget" not in plain
    pre = tf.algorithms.dpfl(graph="random", budget=0.2).stacks
    assert isinstance(pre, str) and "env.local_train" in pre and "env.losses" not in pre
    assert "budget resolved from their number" in pre
    best = tf.algorithms.dpfl(graph="random", tau_init=0, select="best_val").stacks
    assert isinstance(best, str) and "env.losses" in best


def test_a_dfedpgp_sweep_over_seeds_stacks_and_equals_stack_off(tmp_path: Any) -> None:
    cfg = {"algorithm": "dfedpgp", "data": "digits", "n_clients": 5, "rounds": 2,
           "partition": "dirichlet", "partition_params": {"alpha": 0.5},
           "topology": "random_directed_push:k=2", "model": "mlp",
           "model_params": {"hidden": [8]}, "batch_size": 32, "dtype": "float64",
           "local_epochs_u": 0.5, "local_epochs_v": 0.2, "spectral": False,
           "sweep": {"seed": [0, 1, 2]}}
    said: list[str] = []
    on = tf.sweep.run_sweep(cfg, tmp_path / "on", progress=False, echo=said.append)
    assert any(line.startswith("stacked: 3 runs") for line in said), said
    assert all(o.status == "complete" and "stacked" in o.message for o in on)
    off = tf.sweep.run_sweep({**cfg, "stack": False}, tmp_path / "off", progress=False,
                             echo=said.append)
    assert all("stacked" not in o.message for o in off)
    for r in tf.sweep.plan(cfg):
        assert_same_records(tf.records.load(tmp_path / "on" / f"{r.name}.jsonl"),
                            tf.records.load(tmp_path / "off" / f"{r.name}.jsonl"), 1e-10)


def test_a_shared_global_test_set_is_scored_in_blocks_of_parameter_bytes() -> None:
    # small rows share one pass; rows over _GLOBAL_BYTES (an MLP's) score it lane by lane
    from types import SimpleNamespace

    from topofl.engine import stack

    def lanes(n: int, p: int, k: int) -> tuple[list[Any], list[torch.Tensor]]:
        due = [SimpleNamespace(rows=slice(i * n, (i + 1) * n)) for i in range(k)]
        return due, [torch.zeros(n, p) for _ in range(k)]

    due, xs = lanes(16, 650, 6)  # logistic on digits: 2.6 KB a row
    assert stack._blocks(list(range(6)), due, xs) == [list(range(6))]
    due, xs = lanes(16, 4810, 3)  # MLP of 64 hidden units: 19 KB a row
    assert stack._blocks([0, 1, 2], due, xs) == [[0], [1], [2]]
    due, xs = lanes(4, 4810, 9)
    assert stack._blocks(list(range(9)), due, xs) == [[0, 1, 2, 3, 4, 5], [6, 7, 8]]
