"""A local update that moves few rows a step (``LocalUpdate.moving``/``update_rows``): the
engine takes those rows' gradients only and every row's loss, with the numbers of the full
step; and when the records are waited onto the disk (before a checkpoint, at the end)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

import topofl as tf
from topofl.engine import RunConfig
from topofl.engine.local import LocalStepper, row_runs
from topofl.engine.pieces import SGD


@dataclass(frozen=True)
class EveryThird(tf.engine.LocalUpdate):
    """Plain SGD on the rows ``i % 3 == t % 3`` of round ``t``; the others rest."""

    sgd: SGD

    def _on(self, n: int, t: int) -> np.ndarray:
        return np.arange(n) % 3 == t % 3

    def update(self, state: Any, grads: Any, phase: Any, lr: Any, rnd: Any, env: Any) -> None:
        on = torch.as_tensor(self._on(env.n, rnd.t), dtype=lr.dtype)
        self.sgd.update(state, grads, phase, lr * on, rnd, env)

    def moving(self, rnd: Any, env: Any) -> np.ndarray:
        return np.flatnonzero(self._on(env.n, rnd.t))

    def update_rows(self, state: Any, grads: Any, rows: Any, phase: Any, lr: Any, rnd: Any,
                    env: Any) -> None:
        part = tf.engine.State(x=state.x.index_select(0, rows))
        self.sgd.update(part, grads.index_select(0, rows), phase, lr.index_select(0, rows),
                        rnd, env)
        state.x.index_copy_(0, rows, part.x)


@dataclass(frozen=True)
class AllRows(EveryThird):
    """The same update, every row's gradient taken (no ``moving``)."""

    moving = None  # type: ignore[assignment]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize(("model", "n"), [("logistic", 14), ("mlp", 10), ("logistic", 2)])
@pytest.mark.parametrize("executor", ["batched", "loop"])
def test_moving_rows_step_equals_the_full_step(dtype: torch.dtype, model: str, n: int,
                                               executor: str) -> None:
    data = tf.data.federate("digits", "shards", n, shards_per_client=2, seed=0)
    m = tf.models.build_model(model, data.input_shape, data.num_classes, seed=0)
    layout = tf.engine.ParamLayout.from_model(m)
    ex = tf.engine.executors.make_executor(executor, m, layout, torch.device("cpu"))
    env = tf.engine.toy_services(n, layout=layout, dtype=dtype)
    gen = torch.Generator().manual_seed(0)
    x0 = 0.1 * torch.randn(n, layout.num_params, generator=gen, dtype=torch.float64).to(dtype)
    states, losses = [], []
    for piece in (EveryThird(SGD(0.0, 1e-3)), AllRows(SGD(0.0, 1e-3))):
        algo = tf.algorithms.dsgd(lr=0.1)._replace(local=piece)
        step = LocalStepper(ex, algo, data, 8, layout.num_params, dtype)
        assert (step.moving is None) == isinstance(piece, AllRows)
        s = tf.engine.State(x=x0.clone())
        out = []
        for t in range(4):
            lr = torch.full((n,), 0.3, dtype=dtype)
            out.append(step(s, tf.engine.Round(t), env, algo.phases[0], 0, lr))
        states.append(s.x)
        losses.append(torch.stack(out))
    if dtype == torch.float64:
        assert torch.equal(states[0], states[1])
        assert torch.equal(losses[0], losses[1])
    else:  # bit for bit here; another CPU's float32 kernels: within rounding
        torch.testing.assert_close(states[0], states[1], rtol=1e-6, atol=1e-7)
        torch.testing.assert_close(losses[0], losses[1], rtol=1e-6, atol=1e-7)
    # the rows that rested did not move
    assert not torch.equal(states[0], x0)


def test_moving_without_update_rows_is_refused() -> None:
    @dataclass(frozen=True)
    class Half(tf.engine.LocalUpdate):
        def update(self, state: Any, grads: Any, phase: Any, lr: Any, rnd: Any,
                   env: Any) -> None:
            pass

        def moving(self, rnd: Any, env: Any) -> np.ndarray:
            return np.array([0])

    data = tf.data.federate("digits", "iid", 4, seed=0)
    m = tf.models.build_model("logistic", data.input_shape, data.num_classes, seed=0)
    layout = tf.engine.ParamLayout.from_model(m)
    ex = tf.engine.executors.make_executor("batched", m, layout, torch.device("cpu"))
    algo = tf.algorithms.dsgd(lr=0.1)._replace(local=Half())
    with pytest.raises(TypeError, match="Half has moving but no update_rows"):
        LocalStepper(ex, algo, data, 8, layout.num_params, torch.float32)


def test_row_runs_cover_the_rows_with_runs_of_two() -> None:
    gen = np.random.default_rng(0)
    for _ in range(200):
        n = int(gen.integers(1, 30))
        rows = np.sort(gen.choice(n, int(gen.integers(0, n + 1)), replace=False))
        runs = row_runs(rows, n)
        covered = set()
        for a, b in runs:
            assert 0 <= a < b <= n
            assert b - a >= 2 or n == 1
            covered.update(range(a, b))
        assert set(rows.tolist()) <= covered
        assert len(runs) <= max(1, rows.size)


# ------------------------------------------------------------------ when the records are synced

def _count_fsyncs(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls: list[int] = []
    real = os.fsync

    def counted(fd: int) -> None:
        calls.append(fd)
        real(fd)

    monkeypatch.setattr(os, "fsync", counted)
    return calls


@pytest.mark.parametrize("every", [0, 4])
def test_records_are_synced_before_each_checkpoint_and_at_the_end(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, every: int) -> None:
    data = tf.data.federate("digits", "shards", 6, shards_per_client=2, seed=0)
    kw: dict[str, Any] = dict(rounds=12, batch_size=8, eval_every=3, spectral=False,
                              records_path=str(tmp_path / "r.jsonl"))
    if every:
        kw.update(checkpoint_every=every, checkpoint_path=str(tmp_path / "ck.pt"))
    cfg = RunConfig(**kw)
    model = tf.models.build_model("logistic", data.input_shape, data.num_classes, seed=0)
    calls = _count_fsyncs(monkeypatch)
    res = tf.engine.run(cfg, tf.topologies.ring(6), tf.algorithms.dsgd(lr=0.1), data, model)
    # not one a round (12 or more before): the records and the client file once at the end,
    # and before each of the 12 / every checkpoints (with the checkpoint's file and folder)
    rounds = 12
    if every:
        assert rounds // every <= len(calls) <= 3 + 5 * (rounds // every)
    else:
        assert 1 <= len(calls) <= 3
    # every row on the disk (the per-client ones in the columnar file beside it)
    assert tf.records.load(tmp_path / "r.jsonl").rows == res.records.rows
