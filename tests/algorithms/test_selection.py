"""Client selection beyond uniform sampling (issue 84 item 2): the server methods'
``selection`` (:class:`~topofl.algorithms.hparams.Sampling`).

The schemes of :func:`~topofl.engine.pieces.participants` are held to decent-bench 0.3.0's own
``FairSelection``, ``HighLossSelection`` and ``UniformSelection`` size rule on fixed inputs
(``tests/algorithms/data/decentbench_selection.json``, written by
``analysis/decentbench_selection.py`` under decent-bench's Python 3.13), to slow obvious
references, and to their invariants; ``"uniform"`` is today's sample to the bit; every server
method runs a fair round as it runs a uniform round that draws the same clients.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import topofl as tf
from topofl._utils.rng import generator_at
from topofl.algorithms.hparams import Sampling, group_parameters
from topofl.engine import run_rounds
from topofl.engine.pieces import participants, round_active
from topofl.engine.pieces.participation import highest_losses, loss_candidates

D = torch.float64
REFERENCE = json.loads((Path(__file__).parent / "data" / "decentbench_selection.json")
                       .read_text(encoding="utf-8"))
#: the server methods: the registered factories whose Sampling group chooses its clients
SERVER = sorted(name for name, f in tf.algorithms.ALGORITHMS.items()
                if any(isinstance(g, Sampling) for g in group_parameters(f).values())
                and name not in ("dfedavgm", "dfedavgm_p", "dfedpgp", "osgp", "sgp",
                                 "pfedgraph"))


def _uniform_as_before(n: int, t: int, participation: float, seed: int) -> list[int] | None:
    """``participants`` as it was before the selection schemes (the stream's tag written out)."""
    if participation >= 1.0:
        return None
    m = max(1, int(participation * n))
    rng = generator_at(seed, 0x5A3D, t)
    return sorted(int(i) for i in rng.choice(n, size=m, replace=False))


def _fair_by_counts(n: int, m: int, rounds: int) -> list[list[int]]:
    """decent-bench's FairSelection written out: the m least selected, ties in client order."""
    counts, out = [0] * n, []
    for _ in range(rounds):
        chosen = sorted(range(n), key=lambda i: counts[i])[:m]  # a stable sort
        for i in chosen:
            counts[i] += 1
        out.append(sorted(chosen))
    return out


# ------------------------------------------------------------------------------ uniform


@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 300), frac=st.floats(0.001, 1.0), t=st.integers(0, 10**6),
       seed=st.integers(0, 2**31))
def test_uniform_is_todays_sample_to_the_bit(n: int, frac: float, t: int, seed: int) -> None:
    expected = _uniform_as_before(n, t, frac, seed)
    assert participants(n, t, frac, seed) == expected
    assert participants(n, t, frac, seed, "uniform") == expected
    mask = round_active(tf.engine.Round(t), n, frac, seed, "uniform")
    assert (mask is None) == (expected is None)
    if mask is not None:
        assert np.flatnonzero(mask).tolist() == expected


@pytest.mark.parametrize("name", SERVER)
def test_uniform_keeps_the_hyper_parameters_and_the_run_hash(name: str) -> None:
    f = tf.algorithms.ALGORITHMS[name]
    base = f(participation=0.5)
    assert "selection" not in base.hparams
    assert f(participation=0.5, selection="uniform").hparams == base.hparams
    assert f(participation=0.5, selection="fair").hparams == dict(
        base.hparams, selection="fair")


def test_the_size_rule_is_decent_benchs() -> None:
    for n, frac, k in REFERENCE["size_rule"]:
        sel = participants(n, 0, frac, 0) if frac < 1 else list(range(n))
        assert sel is not None and len(sel) == k, (n, frac)
        fair = participants(n, 0, frac, 0, "fair") if frac < 1 else list(range(n))
        assert fair is not None and len(fair) == k


# ------------------------------------------------------------------------------ fair


def test_fair_is_decent_benchs_fair_selection() -> None:
    assert len(REFERENCE["fair"]) == 8
    for case in REFERENCE["fair"]:
        n, frac = case["n"], case["fraction"]
        for t, chosen in enumerate(case["selected"]):
            ours = participants(n, t, frac, 0, "fair")
            assert (list(range(n)) if ours is None else ours) == sorted(chosen), (case, t)


@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 40), frac=st.floats(0.01, 0.99), rounds=st.integers(1, 30),
       seed=st.integers(0, 2**31))
def test_fair_is_the_count_rule_and_balances_participation(n: int, frac: float, rounds: int,
                                                           seed: int) -> None:
    m = max(1, int(frac * n))
    drawn = [participants(n, t, frac, seed, "fair") for t in range(rounds)]
    sel = [s for s in drawn if s is not None]
    assert sel == drawn == _fair_by_counts(n, m, rounds)
    counts = np.zeros(n, dtype=np.int64)
    for s in sel:
        assert len(s) == m == len(set(s))
        counts[s] += 1
        assert counts.max() - counts.min() <= 1  # balanced after every round
    window = math.ceil(n / m)  # every client in any ceil(n/m) consecutive rounds
    for t0 in range(max(0, rounds - window + 1)):
        assert set().union(*sel[t0:t0 + window]) == set(range(n))


def test_fair_does_not_depend_on_the_seed_and_resumes() -> None:
    assert participants(10, 7, 0.3, 0, "fair") == participants(10, 7, 0.3, 99, "fair") == [
        1, 2, 3]


# ------------------------------------------------------------------------------ loss


def test_loss_ranks_as_decent_benchs_high_loss_selection() -> None:
    assert len(REFERENCE["high_loss"]) == 12
    for case in REFERENCE["high_loss"]:
        got = highest_losses(case["losses"], case["k"], case["tie_break"])
        assert got == case["selected"], case


@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 30), frac=st.floats(0.01, 0.99), t=st.integers(0, 10**5),
       seed=st.integers(0, 2**31), extra=st.integers(0, 30), data=st.data())
def test_loss_keeps_the_highest_losses_among_its_candidates(
        n: int, frac: float, t: int, seed: int, extra: int, data: Any) -> None:
    m = max(1, int(frac * n))
    d = min(n, m + extra)
    losses = np.asarray(data.draw(st.lists(st.sampled_from([0.0, 0.5, 1.0, 2.5, np.inf]),
                                           min_size=n, max_size=n)))
    sel = participants(n, t, frac, seed, "loss", losses=losses, candidates=d)
    assert sel == participants(n, t, frac, seed, "loss", losses=losses, candidates=d)
    pool, ties = loss_candidates(n, t, d, seed)
    assert len(set(pool.tolist())) == d and sorted(ties.tolist()) == list(range(d))
    assert sel is not None and len(sel) == m and set(sel) <= set(pool.tolist())
    rest = set(pool.tolist()) - set(sel)
    if rest:
        assert losses[sel].min() >= losses[sorted(rest)].max()
    # the slow reference: rank the candidates by (-loss, tie-break) one by one
    ranked = sorted(range(d), key=lambda k: (-losses[pool[k]], int(ties[k])))
    assert sel == sorted(int(pool[k]) for k in ranked[:m])


def test_loss_with_every_client_as_candidate_is_high_loss_selection() -> None:
    losses = [0.3, 0.9, 0.1, 0.9, 0.5, 0.2]
    assert participants(6, 4, 0.5, 1, "loss", losses=losses) == [1, 3, 4]
    pool, _ = loss_candidates(6, 4, 6, 1)
    assert pool.tolist() == list(range(6))


# ------------------------------------------------------------------------------ refusals


@pytest.mark.parametrize(("call", "error", "match"), [
    (lambda: Sampling(selection="loss"), ValueError, r"selection must be one of \['fair', "
                                                     r"'uniform'\], got 'loss'"),
    (lambda: Sampling(selection=1),  # type: ignore[arg-type]
     TypeError, "selection must be a str"),
    (lambda: tf.algorithms.fedavg(selection="fiar"), ValueError, "did you mean 'fair'"),
    (lambda: tf.algorithms.sgp(participation=0.5, selection="fair"), ValueError,
     "selection='fair' is offered by the server methods"),
    (lambda: tf.algorithms.dfedavgm(selection="fair"), ValueError, "samples its clients"),
    (lambda: participants(5, 0, 0.4, 0, "random"), ValueError, "selection must be one of"),
    (lambda: participants(5, 0, 0.4, 0, "loss"), ValueError, "needs every client's"),
    (lambda: participants(5, 0, 0.4, 0, "loss", losses=[1.0] * 4), ValueError,
     r"one loss per client \(5\), got 4"),
    (lambda: participants(5, 0, 0.4, 0, "loss", losses=[1.0] * 5, candidates=1), ValueError,
     "candidates"),
    (lambda: participants(5, 0, 0.4, 0, "loss", losses=[1.0] * 5, candidates=6), ValueError,
     "candidates"),
    (lambda: participants(3, 0, 0.4, 0, "loss", losses=[1.0, np.nan, 0.0]), ValueError,
     "must not be NaN"),
])
def test_bad_selections_are_refused_in_one_line(call: Any, error: type, match: str) -> None:
    with pytest.raises(error, match=match) as info:
        call()
    assert "\n" not in str(info.value)


# ------------------------------------------------------------------------------ the methods


def _seed_drawing(n: int, t: int, frac: float, target: list[int]) -> int:
    """A sample_seed whose uniform draw of round ``t`` is ``target``."""
    for seed in range(100_000):
        if participants(n, t, frac, seed) == target:
            return seed
    raise AssertionError(f"no seed below 100000 draws {target}")


@pytest.mark.parametrize("name", SERVER)
def test_a_fair_round_is_the_uniform_round_that_draws_the_same_clients(name: str) -> None:
    # every piece that reads the round's participants (the local update, the server's
    # average or step) reads the fair ones: round by round, the run equals the uniform run
    # whose seed draws that round's fair set, to the bit
    n, p, frac, rounds = 6, 3, 0.5, 4
    f = tf.algorithms.ALGORITHMS[name]
    rng = np.random.default_rng(0)
    c = torch.tensor(rng.normal(size=(n, p)), dtype=D)
    a = torch.tensor(rng.uniform(0.5, 1.5, size=(n, 1)), dtype=D)

    def grad(z: torch.Tensor, phase: Any, rnd: Any) -> torch.Tensor:
        return a * (z - c)

    x0 = torch.tensor(rng.normal(size=(n, p)), dtype=D)
    fair = f(lr=0.1, participation=frac, selection="fair")
    state_f = state_u = None
    for t in range(rounds):
        target = participants(n, t, frac, 0, "fair")
        assert target is not None
        uniform = f(lr=0.1, participation=frac, sample_seed=_seed_drawing(n, t, frac, target))
        tf_ = run_rounds(fair, x0, None, grad, rounds=1, start=t, state=state_f)
        tu = run_rounds(uniform, x0, None, grad, rounds=1, start=t, state=state_u)
        state_f, state_u = tf_.state, tu.state
        for k, v in state_f.tensors().items():
            assert torch.equal(v, state_u.tensors()[k]), (name, t, k)
        active = tf_.sent[0].active
        assert active is not None and np.flatnonzero(active).tolist() == target
        assert tf_.messages == tu.messages
    assert state_f is not None and not torch.equal(state_f.x, x0)


def test_fair_fedavg_by_hand() -> None:
    # F_i(x) = (x - c_i)^2 / 2, one step of lr 1 takes a client to c_i; fair with m = 2 of 4
    # averages clients {0, 1}, then {2, 3}: the model is (c0 + c1) / 2, then (c2 + c3) / 2
    c = torch.tensor([[1.0], [2.0], [4.0], [8.0]], dtype=D)
    algo = tf.algorithms.fedavg(lr=1.0, participation=0.5, selection="fair")
    trace = run_rounds(algo, torch.zeros(4, 1, dtype=D), None, lambda z, ph, r: z - c,
                       rounds=1)
    assert trace.state.x.flatten().tolist() == [1.5] * 4
    trace = run_rounds(algo, torch.zeros(4, 1, dtype=D), None, lambda z, ph, r: z - c,
                       rounds=2)
    assert trace.state.x.flatten().tolist() == [6.0] * 4 and trace.messages == [4, 4]


@pytest.fixture(scope="module")
def base() -> dict[str, Any]:
    return dict(algorithm="fedavg", topology=None, data="digits", n_clients=6, rounds=3,
                batch_size=16, spectral=False, local_steps=5, lr=0.1, participation=0.5,
                eval_every=1)


@pytest.mark.parametrize("selection", ["uniform", "fair"])
def test_fedavg_on_digits_trains_with_each_selection(base: dict[str, Any],
                                                     selection: str) -> None:
    res = tf.config.execute({**base, "selection": selection})
    rounds = sorted({r["round"] for r in res.records.rows if r["metric"] == "test_acc_mean"})
    acc = {r["round"]: r["value"] for r in res.records.rows
           if r["metric"] == "test_acc_mean" and r["client"] is None}
    assert len(rounds) >= 2 and acc[rounds[-1]] > acc[rounds[0]], acc


def test_a_config_records_the_selection_and_replays_it(base: dict[str, Any],
                                                       tmp_path: Path) -> None:
    assert tf.config.validate(base)["selection"] == "uniform"
    assert "selection" not in tf.config.resolve(base).prepared.algorithm.hparams
    r = tf.config.resolve({**base, "selection": "fair"})
    assert r.config["selection"] == "fair"
    assert r.prepared.algorithm.hparams["selection"] == "fair"
    path = tmp_path / "fair.jsonl"
    res = tf.config.execute({**base, "selection": "fair", "records_path": str(path)})
    assert tf.records.load(path).config["selection"] == "fair"
    again = tf.config.replay(path)
    assert tf.config.compare_rows(res.records.rows, again.records.rows) is None
    other = tf.config.execute(base)  # uniform draws other clients
    assert tf.config.compare_rows(res.records.rows, other.records.rows) is not None
