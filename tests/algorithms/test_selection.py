"""Client selection beyond uniform sampling (issue 84 item 2): the server methods'
``selection`` (:class:`~topofl.algorithms.hparams.Sampling`).

The schemes of :func:`~topofl.engine.pieces.participants` are held to decent-bench 0.3.0's own
``FairSelection``, ``HighLossSelection`` and ``UniformSelection`` size rule on fixed inputs
(``tests/algorithms/data/decentbench_selection.json``, written by
``analysis/decentbench_selection.py`` under decent-bench's Python 3.13), to slow obvious
references, and to their invariants; ``"uniform"`` is today's sample to the bit; every server
method runs a fair round, and a loss round, as it runs a uniform round that draws the same
clients. ``"loss"`` in a run (:class:`~topofl.engine.pieces.participation.LossSelection`):
each round's clients are those of highest loss at the state the round starts from (a slow
per-client reference recomputes the losses), read back from the ledger, and a run resumed
from a checkpoint chooses as the uninterrupted one.
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
from topofl.engine import RunConfig, run_rounds
from topofl.engine.lane import init_parameters
from topofl.engine.pieces import SGD, Sampled, participants, round_active
from topofl.engine.pieces.participation import LossSelection, highest_losses, loss_candidates
from topofl.engine.protocol import ToyServices

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
    assert f(participation=0.5, selection="loss").hparams == dict(
        base.hparams, selection="loss")


@pytest.mark.parametrize("name", SERVER)
@pytest.mark.parametrize("selection", ["uniform", "fair"])
def test_uniform_and_fair_build_the_pieces_they_built_before(name: str, selection: str) -> None:
    # no loss selector: the round start and the communication are the factory's own pieces,
    # not the wrappers that choose by loss (so their runs are today's to the bit)
    algo = tf.algorithms.ALGORITHMS[name](participation=0.5, selection=selection)
    for hook in (algo.round_start, algo.communicate):
        assert "_choosing" not in getattr(hook, "__qualname__", ""), (name, hook)
    assert getattr(algo.local, "chooser", None) is None


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
    (lambda: Sampling(selection="highest"), ValueError,
     r"selection must be one of \['fair', 'loss', 'uniform'\], got 'highest'"),
    (lambda: tf.algorithms.sgp(participation=0.5, selection="loss"), ValueError,
     "selection='loss' is offered by the server methods"),
    (lambda: Sampled(SGD(), 0.5, 0, "loss"), ValueError, "needs the run's LossSelection"),
    (lambda: LossSelection(0.5).chosen(tf.engine.Round(3)), RuntimeError,
     "chose the clients of no round, not of round 3"),
    (lambda: run_rounds(tf.algorithms.fedavg(lr=0.1, participation=0.5, selection="loss"),
                        torch.zeros(4, 1, dtype=D), None, lambda z, ph, r: z, rounds=1),
     ValueError, "losses needs the clients' data"),
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
    (lambda: tf.algorithms.fedavg(participation=0.5, candidates=3), ValueError,
     "candidates is selection='loss''s d"),
    (lambda: tf.algorithms.fedavg(participation=0.5, selection="loss", candidates=0),
     ValueError, "candidates must be"),
    (lambda: tf.algorithms.fedavg(participation=0.5, loss_at="trained"), ValueError,
     "loss_at is the model selection='loss' scores"),
    (lambda: tf.algorithms.fedavg(participation=0.5, selection="loss", loss_at="last"),
     ValueError, "loss_at must be one of"),
    (lambda: LossSelection(0.5, at="client"), ValueError, "at must be one of"),
    (lambda: LossSelection(0.5, at="trained").start(
        tf.engine.State(x=torch.zeros(2, 1)), tf.engine.Round(0), tf.engine.toy_services(2)),
     ValueError, "scores state.trained, which this state does not hold"),
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


@pytest.mark.parametrize("selection", ["uniform", "fair", "loss"])
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


# ------------------------------------------------------------------------------ loss in a run


class _Quadratic(ToyServices):
    """Toy services whose client ``i`` has the loss $F_i(x) = a_i \\|x - c_i\\|^2 / 2$."""

    def __init__(self, a: torch.Tensor, c: torch.Tensor) -> None:
        toy = tf.engine.toy_services(c.shape[0], c.shape[1])
        super().__init__(toy.layout, toy.mixer, c.shape[0])
        self.a, self.c = a, c

    def losses(self, x: torch.Tensor, split: str = "val", *,
               rows: torch.Tensor | None = None) -> torch.Tensor:
        assert split == "train" and rows is None
        return 0.5 * self.a[:, 0] * ((x - self.c) ** 2).sum(dim=1)


def _quadratic_losses_slowly(x: torch.Tensor, a: torch.Tensor, c: torch.Tensor) -> list[float]:
    """$F_i(x_i)$ client by client, entry by entry, in Python floats."""
    out = []
    for i in range(x.shape[0]):
        sq = sum((float(x[i, k]) - float(c[i, k])) ** 2 for k in range(x.shape[1]))
        out.append(0.5 * float(a[i, 0]) * sq)
    return out


@pytest.mark.parametrize("name", SERVER)
def test_a_loss_round_is_the_uniform_round_that_draws_the_highest_losses(name: str) -> None:
    # every piece that reads the round's participants reads the clients of highest loss at
    # the state the round starts from: round by round, the run equals (to the bit) the
    # uniform run whose seed draws them, and it logs the losses it read
    n, p, frac, rounds = 6, 3, 0.5, 4
    f = tf.algorithms.ALGORITHMS[name]
    rng = np.random.default_rng(1)
    c = torch.tensor(rng.normal(size=(n, p)), dtype=D)
    a = torch.tensor(rng.uniform(0.5, 1.5, size=(n, 1)), dtype=D)
    env = _Quadratic(a, c)

    def grad(z: torch.Tensor, phase: Any, rnd: Any) -> torch.Tensor:
        return a * (z - c)

    x0 = torch.tensor(rng.normal(size=(n, p)), dtype=D)
    chosen = f(lr=0.1, participation=frac, selection="loss")
    state_l = state_u = None
    seen = set()
    for t in range(rounds):
        start = x0 if state_l is None else state_l.x
        slow = _quadratic_losses_slowly(start, a, c)
        ranked = sorted(slow, reverse=True)
        assert ranked[2] - ranked[3] > 1e-9  # no near-tie at the cut
        target = participants(n, t, frac, 0, "loss", losses=slow)
        assert target is not None and len(target) == 3
        assert set(target) == {i for i in range(n) if slow[i] >= ranked[2]}
        seen.add(tuple(target))
        uniform = f(lr=0.1, participation=frac, sample_seed=_seed_drawing(n, t, frac, target))
        tl = run_rounds(chosen, x0, None, grad, rounds=1, start=t, state=state_l, env=env)
        tu = run_rounds(uniform, x0, None, grad, rounds=1, start=t, state=state_u, env=env)
        state_l, state_u = tl.state, tu.state
        for k, v in state_l.tensors().items():
            assert torch.equal(v, state_u.tensors()[k]), (name, t, k)
        sent = tl.sent[0]
        assert sent.active is not None and np.flatnonzero(sent.active).tolist() == target
        assert sent.records is not None
        assert sent.records["selection_loss"] == pytest.approx(slow, rel=1e-13, abs=1e-15)
        assert tl.messages == tu.messages
    assert state_l is not None and not torch.equal(state_l.x, x0)
    assert len(seen) >= 2, (name, seen)  # the losses move the choice from round to round


def test_loss_fedavg_by_hand() -> None:
    # F_i(x) = (x - c_i)^2 / 2 from x = 0: the losses are c_i^2 / 2, so the m = 2 clients of
    # highest loss are {2, 3}; one step of lr 1 takes a client to c_i: the model is
    # (4 + 8) / 2 = 6, whose losses (25, 16, 2, 2) / 2 pick {0, 1}: then (1 + 2) / 2
    c = torch.tensor([[1.0], [2.0], [4.0], [8.0]], dtype=D)
    env = _Quadratic(torch.ones(4, 1, dtype=D), c)
    algo = tf.algorithms.fedavg(lr=1.0, participation=0.5, selection="loss")
    trace = run_rounds(algo, torch.zeros(4, 1, dtype=D), None, lambda z, ph, r: z - c,
                       rounds=2, env=env)
    assert [np.flatnonzero(s.active).tolist() for s in trace.sent] == [[2, 3], [0, 1]]
    assert [s.records["selection_loss"] for s in trace.sent] == [[0.5, 2.0, 8.0, 32.0],
                                                                  [12.5, 8.0, 2.0, 2.0]]
    assert trace.state.x.flatten().tolist() == [1.5] * 4 and trace.messages == [4, 4]


def test_loss_with_every_client_taking_part_computes_nothing() -> None:
    algo = tf.algorithms.fedavg(lr=0.1, selection="loss")  # participation 1: all, no losses
    assert algo.hparams["selection"] == "loss"
    trace = run_rounds(algo, torch.zeros(3, 1, dtype=D), None, lambda z, ph, r: z - 1.0,
                       rounds=1)  # toy services: a loss asked for would raise
    assert trace.sent[0].active is None


def _digits_run(data: Any, rounds: int, candidates: int | None = None,
                loss_at: str = "server", **kw: Any) -> Any:
    algo = tf.algorithms.fedavg(lr=0.1, local_steps=3, participation=0.5, selection="loss",
                                candidates=candidates, loss_at=loss_at)
    model = tf.models.build_model("logistic", data.input_shape, data.num_classes, seed=0)
    resume = kw.pop("resume", None)
    cfg = RunConfig(rounds=rounds, seed=0, batch_size=16, eval_every=1, dtype="float64",
                    spectral=False, record_clients=True, **kw)
    return tf.engine.run(cfg, None, algo, data, model, resume=resume)


def _chosen_and_losses(records: Any) -> tuple[list[list[int]], list[list[float]]]:
    """Each round's clients as the ledger counted them (those the server's model went to)
    and the losses the run logged."""
    rounds, received = records.clients("bytes_received")
    assert rounds.tolist() == list(range(len(rounds)))
    got = np.diff(np.vstack([np.zeros(received.shape[1]), received]), axis=0)
    chosen = [np.flatnonzero(row > 0).tolist() for row in got]
    losses = {r["round"]: r["value"] for r in records.rows
              if r["metric"] == "selection_loss"}
    return chosen, [losses[t] for t in sorted(losses)]


def _digits_losses_slowly(x: torch.Tensor, data: Any, layout: Any, model: Any) -> list[float]:
    """Client ``i``'s mean cross-entropy on its whole training split at row ``i`` of ``x``,
    one client at a time through the plain module."""
    out = []
    for i in range(x.shape[0]):
        params = {k: v[0] for k, v in layout.views(x[i:i + 1]).items()}
        xi, yi = data.client(i, "train")
        logits = torch.func.functional_call(model.double(), params, (xi.to(D),))
        out.append(float(torch.nn.functional.cross_entropy(logits, yi.long())))
    return out


def _loss_runs(factory: pytest.TempPathFactory, rounds: int, part: int, **kw: Any
               ) -> dict[str, Any]:
    """Digits runs of ``rounds`` rounds with selection by loss: uninterrupted, ``part`` rounds,
    and checkpointed after 2 then resumed to ``rounds``."""
    data = tf.data.federate("digits", "dirichlet", 6, alpha=0.5, seed=0, val=0.1)
    folder = factory.mktemp("loss")
    ck = dict(checkpoint_every=2, checkpoint_path=str(folder / "ck.pt"),
              records_path=str(folder / "r.jsonl"))
    first = _digits_run(data, 2, **kw, **ck)
    return dict(data=data, full=_digits_run(data, rounds, **kw),
                part=first if part == 2 else _digits_run(data, part, **kw),
                resumed=_digits_run(data, rounds, resume=folder / "ck.pt", **kw, **ck),
                records=folder / "r.jsonl")


@pytest.fixture(scope="module")
def digits_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return _loss_runs(tmp_path_factory, 4, 2)


def test_loss_fedavg_on_digits_takes_the_highest_losses_of_the_state(
        digits_runs: dict[str, Any]) -> None:
    data, full, part = digits_runs["data"], digits_runs["full"], digits_runs["part"]
    chosen, losses = _chosen_and_losses(full.records)
    assert len(chosen) == len(losses) == 4
    for t in range(4):  # the ledger's clients are participants() of the logged losses
        assert chosen[t] == participants(6, t, 0.5, 0, "loss", losses=losses[t]), t
    assert len({tuple(s) for s in chosen}) >= 2
    # between rounds every client holds the server's model (the loss read is at it)
    assert torch.equal(part.state.x, part.state.x[:1].expand_as(part.state.x))
    # round 2's losses, recomputed client by client from the state round 2 starts from
    model = tf.models.build_model("logistic", data.input_shape, data.num_classes, seed=0)
    slow = _digits_losses_slowly(part.state.x, data, part.layout, model)
    assert losses[2] == pytest.approx(slow, rel=1e-10)
    assert participants(6, 2, 0.5, 0, "loss", losses=slow) == chosen[2]


@pytest.mark.parametrize("runs", ["digits_runs", "trained_runs"])
def test_loss_fedavg_resumed_chooses_as_the_uninterrupted_run(
        runs: str, request: pytest.FixtureRequest) -> None:
    got = request.getfixturevalue(runs)
    full, resumed = got["full"], got["resumed"]
    continued = tf.records.load(got["records"])  # rounds 0-1, then the rest resumed
    assert _chosen_and_losses(continued) == _chosen_and_losses(full.records)
    assert ("trained" in resumed.state.tensors()) == (runs == "trained_runs")
    for k, v in full.state.tensors().items():
        assert torch.equal(v, resumed.state.tensors()[k]), k


@pytest.fixture(scope="module")
def trained_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return _loss_runs(tmp_path_factory, 5, 3, loss_at="trained")


def test_loss_at_trained_scores_each_clients_last_trained_model(
        trained_runs: dict[str, Any]) -> None:
    """decent-bench's ``HighLossSelection`` in the engine: a client is scored at the model it
    trained the last time it took part (``state.trained``), at its start before that."""
    data, full, part = trained_runs["data"], trained_runs["full"], trained_runs["part"]
    chosen, losses = _chosen_and_losses(full.records)
    for t in range(5):
        assert chosen[t] == participants(6, t, 0.5, 0, "loss", losses=losses[t]), t
    # round 3's losses, recomputed client by client from the kept models
    model = tf.models.build_model("logistic", data.input_shape, data.num_classes, seed=0)
    trained = part.state.trained
    slow = _digits_losses_slowly(trained, data, part.layout, model)
    assert losses[3] == pytest.approx(slow, rel=1e-10)
    # the kept rows: the server's model of no client that took part (it trained away from
    # it), the starting model of a client never chosen in rounds 0-2
    start = init_parameters(model, part.layout, 6, seed=0, same=True,
                            device=torch.device("cpu"), dtype=D)[0]
    for i in range(6):
        took_part = any(i in chosen[t] for t in range(3))
        assert torch.equal(trained[i], start) != took_part, i
        assert not torch.equal(trained[i], part.state.x[i])
    # power-of-choice (at the server's model) chooses otherwise on this run
    server, _ = _chosen_and_losses(_digits_run(data, 5).records)
    assert server[0] == chosen[0] and server != chosen


def test_power_of_choice_chooses_among_its_candidates(digits_runs: dict[str, Any]) -> None:
    # d = 4 of 6 candidates drawn from the stream (sample_seed, t): the m = 3 highest losses
    # among them, which may leave out a higher loss outside the draw
    data = digits_runs["data"]
    algo = tf.algorithms.fedavg(lr=0.1, participation=0.5, selection="loss", candidates=4)
    assert algo.hparams["candidates"] == 4 and algo.hparams["selection"] == "loss"
    run = _digits_run(data, 4, candidates=4)
    chosen, losses = _chosen_and_losses(run.records)
    full_chosen, full_losses = _chosen_and_losses(digits_runs["full"].records)
    for t in range(4):
        assert chosen[t] == participants(6, t, 0.5, 0, "loss", losses=losses[t],
                                         candidates=4), t
        pool, _ = loss_candidates(6, t, 4, 0)
        assert set(chosen[t]) <= set(pool.tolist())
        # only the candidates' losses are computed; the others are logged as NaN (null)
        outside = sorted(set(range(6)) - set(pool.tolist()))
        missing = [v is None or np.isnan(v) for v in losses[t]]  # a NaN is stored as null
        assert [i for i in range(6) if missing[i]] == outside
    # round 0 starts from the same state as the run without candidates: the candidates'
    # losses are its losses, to the bit (a client's loss does not depend on the others')
    pool0, _ = loss_candidates(6, 0, 4, 0)
    assert [losses[0][i] for i in pool0] == [full_losses[0][i] for i in pool0]
    assert chosen != full_chosen  # the draw changed the run's choices
    # d = n is every client a candidate: the run of selection="loss" alone, to the bit
    every = _digits_run(data, 4, candidates=6)
    assert torch.equal(every.state.x, digits_runs["full"].state.x)
    assert "candidates" not in tf.algorithms.fedavg(participation=0.5,
                                                    selection="loss").hparams


def test_power_of_choice_refuses_candidates_outside_m_to_n(
        digits_runs: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="candidates must be"):
        _digits_run(digits_runs["data"], 1, candidates=2)  # m = 3 of 6

