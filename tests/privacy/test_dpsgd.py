"""DP-SGD in the local step: :func:`topofl.algorithms.with_dp_sgd`, its piece
(:mod:`topofl.engine.pieces.dpsgd`) and its accountant (:func:`topofl.privacy.dp_sgd_spend`).

Per-sample gradients against a slow loop of ``torch.autograd`` per sample, clipping, the
noise (exactly its stream, and its std ``sigma C / b``), reproducibility under the seed and
resumption, the spend's monotonicity and its closed form at ``q = 1``, and the refusals."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st
from torch.func import functional_call

import topofl as tf
from topofl._utils.rng import generator_at
from topofl.algorithms import with_dp_sgd, with_noisy_updates
from topofl.engine.executors import make_executor
from topofl.engine.layout import ParamLayout
from topofl.engine.local import LocalStepper
from topofl.engine.pieces import SGD
from topofl.engine.pieces.dpsgd import DPSGD, STREAM, clip_sum
from topofl.engine.protocol import Phase, Round, toy_services
from topofl.privacy import dp_sgd_spend, gdp_epsilon

N = 4
DATA = tf.data.federate("digits", "iid", N, seed=0)


def _setup(name: str) -> tuple[Any, ParamLayout, Any, Any, torch.Tensor]:
    model = tf.models.build_model(name, DATA.input_shape, 10, seed=0)
    layout = ParamLayout.from_model(model)
    ex = make_executor("auto", model, layout, torch.device("cpu"))
    env = toy_services(N, layout=layout, dtype=torch.float64,
                       train_sizes=torch.as_tensor(DATA.sizes("train").copy()))
    point = 0.1 * torch.randn(N, layout.num_params, dtype=torch.float64,
                              generator=torch.Generator().manual_seed(1))
    return model, layout, ex, env, point


def _slow_grad(model: Any, layout: ParamLayout, row: torch.Tensor, xj: torch.Tensor,
               yj: torch.Tensor) -> torch.Tensor:
    """One sample's gradient by autograd, the obvious way."""
    params = {k: v[0].clone().requires_grad_(True)
              for k, v in layout.views(row.unsqueeze(0)).items()}
    out = functional_call(model, params, (xj.unsqueeze(0).to(row.dtype),))
    loss = F.cross_entropy(out, yj.unsqueeze(0))
    grads = torch.autograd.grad(loss, list(params.values()))
    return layout.flatten({k: g.unsqueeze(0) for k, g in zip(params, grads)})[0]


def _dp_grad(piece: DPSGD, ex: Any, point: torch.Tensor, x: torch.Tensor, y: torch.Tensor,
             env: Any, t: int = 0, step: int = 0) -> torch.Tensor:
    out = torch.zeros_like(point)
    piece.round_start(Round(t))
    piece.take_gradient(ex, point, (x.to(point.dtype), y), Phase(), out, Round(t), step, env,
                        0)
    return out


@pytest.mark.parametrize("name", ["logistic", "mlp"])
def test_clipped_sums_equal_a_loop_of_autograd_per_sample(name: str) -> None:
    model, layout, ex, env, point = _setup(name)
    x, y = DATA.sample(0, 0, 6)
    for clip in (0.05, 1e9):  # every row clipped / none
        piece = DPSGD(SGD(), clip=clip, noise=0.0, seed=0, delta=1e-5)
        got = _dp_grad(piece, ex, point, x, y, env)
        want = torch.zeros_like(point)
        for i in range(N):
            for j in range(x.shape[1]):
                g = _slow_grad(model, layout, point[i], x[i, j].double(), y[i, j])
                want[i] += g * min(1.0, clip / float(g.norm()))
        want /= x.shape[1]
        torch.testing.assert_close(got, want, rtol=1e-9, atol=1e-12)
    # no clipping, no noise: the mean gradient the executor takes of the whole batch
    mean = torch.zeros_like(point)
    ex.grad(point, x.double(), y, "all", mean)
    torch.testing.assert_close(got, mean, rtol=1e-9, atol=1e-12)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 6), st.integers(1, 5), st.floats(1e-3, 10.0),
       st.integers(0, 2**31 - 1))
def test_clipping_bounds_clipped_rows_and_keeps_the_others(k: int, p: int, clip: float,
                                                           seed: int) -> None:
    g = torch.randn(k, p, dtype=torch.float64,
                    generator=torch.Generator().manual_seed(seed)) * 3.0
    rows, norms = clip_sum(g, clip, 1)  # batches of one: the clipped rows themselves
    torch.testing.assert_close(norms, g.norm(dim=1))
    assert bool((rows.norm(dim=1) <= clip * (1 + 1e-12)).all())
    keep = norms <= clip
    assert torch.equal(rows[keep], g[keep])
    torch.testing.assert_close(rows[~keep].norm(dim=1),
                               torch.full((int((~keep).sum()),), clip, dtype=torch.float64))


def test_the_noise_is_its_stream_with_std_sigma_c_over_b() -> None:
    _, _, ex, env, point = _setup("logistic")
    x, y = DATA.sample(2, 3, 8)
    clip, sigma, b = 1e9, 0.5, 8
    plain = _dp_grad(DPSGD(SGD(), clip, 0.0, 0, 1e-5), ex, point, x, y, env, 2, 3)
    noisy = _dp_grad(DPSGD(SGD(), clip, sigma, 7, 1e-5), ex, point, x, y, env, 2, 3)
    eta = np.stack([generator_at(7, STREAM, 2, 3, i).standard_normal(point.shape[1])
                    for i in range(N)])
    want = plain + torch.as_tensor(eta) * sigma * clip / b
    torch.testing.assert_close(noisy, want, rtol=1e-12, atol=1e-12 * sigma * clip / b)
    # the empirical std of the noise over clients x parameters x 20 steps
    clip = 1.0
    base = _dp_grad(DPSGD(SGD(), clip, 0.0, 0, 1e-5), ex, point, x, y, env)
    diffs = [_dp_grad(DPSGD(SGD(), clip, sigma, 3, 1e-5), ex, point, x, y, env, 0, s) - base
             for s in range(20)]
    std = float(torch.stack(diffs).std())
    assert std == pytest.approx(sigma * clip / b, rel=0.03)


def test_streamed_blocks_take_the_gradients_of_the_whole_step() -> None:
    _, layout, ex, env, _ = _setup("logistic")
    algo = with_dp_sgd(tf.algorithms.dsgd(lr=0.1), clip=0.5, noise=1.0, seed=3)
    x0 = 0.01 * torch.ones(N, layout.num_params)
    lr = torch.full((N,), 0.1)
    states = []
    for rows in (N, 1, 3):
        state = algo.init(x0.clone(), env)
        step = LocalStepper(ex, algo, DATA, 8, layout.num_params, torch.float32, rows=rows)
        assert step.rows == rows and not step.fused
        for s in range(3):
            algo.round_start(state, Round(0), env)
            step(state, Round(0), env, algo.phases[0], s, lr)
        states.append(state.x)
    torch.testing.assert_close(states[1], states[0], rtol=1e-5, atol=1e-7)
    torch.testing.assert_close(states[2], states[0], rtol=1e-5, atol=1e-7)


def _run(algo: Any, rounds: int = 4, **kw: Any) -> Any:
    topo = tf.topologies.ring(N) if algo.uses_topology else None
    return tf.run(algo, topo, DATA, "logistic", rounds, seed=1,
                  batch_size=8, spectral=False, progress=False, **kw)


def _values(res: Any) -> list[Any]:
    """The records but the clocks."""
    return [r for r in res.records.rows if "time" not in r["metric"]]


def test_the_same_seed_gives_the_same_run_bit_for_bit_and_another_seed_another() -> None:
    a = _run(with_dp_sgd(tf.algorithms.dsgd(lr=0.1), clip=1.0, noise=1.0, seed=5))
    b = _run(with_dp_sgd(tf.algorithms.dsgd(lr=0.1), clip=1.0, noise=1.0, seed=5))
    c = _run(with_dp_sgd(tf.algorithms.dsgd(lr=0.1), clip=1.0, noise=1.0, seed=6))
    assert _values(a) == _values(b) and _values(a) != _values(c)
    assert torch.equal(a.state.x, b.state.x)
    assert not torch.equal(a.state.x, c.state.x)


def test_a_resumed_run_equals_the_run_uninterrupted(tmp_path: Path) -> None:
    def algo() -> Any:
        return with_dp_sgd(tf.algorithms.dsgd(lr=0.1, momentum=0.5), clip=0.5, noise=0.8)

    whole = _run(algo(), rounds=6, eval_every=1)
    ck, rec = tmp_path / "c.ckpt", tmp_path / "r.jsonl"
    _run(algo(), rounds=3, checkpoint_every=3, checkpoint_path=str(ck), records_path=str(rec),
         eval_every=1)
    again = _run(algo(), rounds=6, checkpoint_every=3, checkpoint_path=str(ck),
                 records_path=str(rec), resume=str(ck), eval_every=1)
    assert torch.equal(again.state.x, whole.state.x)
    for key in ("dp_epsilon", "dp_clipped", "test_acc_mean"):
        np.testing.assert_array_equal(tf.records.load(rec).series(key)[1],
                                      whole.records.series(key)[1])


def test_the_recorded_spend_grows_with_the_rounds_and_falls_with_the_noise() -> None:
    eps = {s: _run(with_dp_sgd(tf.algorithms.dsgd(lr=0.1), clip=1.0, noise=s),
                   rounds=3).records.series("dp_epsilon")[1] for s in (0.8, 1.6)}
    assert bool(np.all(np.diff(eps[0.8]) > 0)) and bool(np.all(np.diff(eps[1.6]) > 0))
    assert bool(np.all(eps[1.6] < eps[0.8]))
    # the record is the accountant's at (t + 1) x the round's steps, at b / smallest client
    q = 8 / int(DATA.sizes("train").min())
    phase = tf.algorithms.dsgd(lr=0.1).phases[0]
    per_round = int(tf.engine.local.steps_per_client(
        phase.steps, phase.epochs, torch.as_tensor(DATA.sizes("train").copy()), 8).max())
    assert eps[0.8][-1] == pytest.approx(dp_sgd_spend(0.8, q, 3 * per_round))


@pytest.mark.parametrize(("sigma", "steps"), [(1.0, 1), (4.0, 16), (2.0, 50), (8.0, 100)])
def test_the_accountant_at_rate_one_is_the_gaussian_mechanism_composed(sigma: float,
                                                                       steps: int) -> None:
    # q = 1: sqrt(steps) / sigma - GDP (Dong, Roth and Su 2022), within the accountant's error
    want = float(gdp_epsilon(np.sqrt(steps) / sigma, 1e-5))
    assert dp_sgd_spend(sigma, 1.0, steps) == pytest.approx(want, abs=0.1)


def test_the_accountant_is_monotone() -> None:
    by_steps = [dp_sgd_spend(1.0, 0.02, k) for k in (0, 1, 10, 100, 1000)]
    assert by_steps[0] == 0.0 and all(a < b for a, b in zip(by_steps, by_steps[1:]))
    by_noise = [dp_sgd_spend(s, 0.02, 200) for s in (0.6, 0.8, 1.0, 2.0)]
    assert all(a > b for a, b in zip(by_noise, by_noise[1:]))
    by_rate = [dp_sgd_spend(1.0, q, 200) for q in (0.01, 0.05, 0.2)]
    assert all(a < b for a, b in zip(by_rate, by_rate[1:]))


def test_bad_settings_are_refused_in_one_line() -> None:
    dsgd = tf.algorithms.dsgd(lr=0.1)
    for clip, noise in ((0.0, 1.0), (-1.0, 1.0), (1.0, 0.0), (1.0, -2.0)):
        with pytest.raises(ValueError):
            with_dp_sgd(dsgd, clip=clip, noise=noise)
    with pytest.raises(TypeError, match="built Algorithm"):
        with_dp_sgd("dsgd", clip=1.0, noise=1.0)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="already has differential privacy"):
        with_dp_sgd(with_dp_sgd(dsgd, clip=1.0, noise=1.0), clip=1.0, noise=1.0)
    with pytest.raises(ValueError, match="already has differential privacy"):
        with_dp_sgd(with_noisy_updates(dsgd, clip=1.0, noise=1.0), clip=1.0, noise=1.0)
    with pytest.raises(ValueError, match="has DP-SGD already"):
        with_noisy_updates(with_dp_sgd(dsgd, clip=1.0, noise=1.0), clip=1.0, noise=1.0)
    with pytest.raises(ValueError, match="applies a gradient"):
        with_dp_sgd(dsgd._replace(local=object()), clip=1.0, noise=1.0)
    small = int(DATA.sizes("train").min())
    with pytest.raises(ValueError, match="batches no larger than the smallest client"):
        tf.run(with_dp_sgd(dsgd, clip=1.0, noise=1.0), tf.topologies.ring(N), DATA,
               "logistic", 1, batch_size=small + 1, spectral=False, progress=False)
    for q, steps in ((0.0, 1), (1.5, 1), (0.1, -1)):
        with pytest.raises(ValueError):
            dp_sgd_spend(1.0, q, steps)


def test_a_model_with_batch_norm_is_refused() -> None:
    class Stub:
        model = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.BatchNorm1d(2))

    env = toy_services(2, train_sizes=torch.tensor([10, 10]))
    with pytest.raises(ValueError, match="BatchNorm1d mixes a batch's samples"):
        DPSGD(SGD(), 1.0, 1.0, 0, 1e-5)._check(Stub(), 4, env)


def test_an_algorithm_that_reads_data_outside_the_local_step_is_refused() -> None:
    algo = with_dp_sgd(tf.algorithms.dpfl(lr=0.01, local_epochs=1), clip=1.0, noise=1.0)
    with pytest.raises(ValueError, match="cannot account dpfl: it reads its clients' data"):
        _run(algo, rounds=1)
