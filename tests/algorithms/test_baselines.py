"""FedPer, FedRep, FedBABU and Ditto against plain per-client reference implementations.

The engine-level tests run the algorithms through ``topofl.run`` in float64 on a tiny problem
and replay the same rounds with obvious loops over clients and steps (same mini-batches:
``data.sample(t, step, b)``), written from the papers' algorithms, not from topofl's pieces.
The toy-level tests drive the pieces by hand on quadratics with known answers.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import topofl as tf
from topofl.algorithms import ALGORITHMS, get_algorithm
from topofl.engine import ParamLayout, Round, Services, run_rounds, toy_services
from topofl.engine.pieces import participants
from topofl.engine.services import AUX_STEP as _AUX_STEP

D = torch.float64
N = 4
B = 5  # batch size
NAMES = ("fedper", "fedrep", "fedbabu", "ditto")


# ----------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def data() -> Any:
    return tf.data.federate("digits", "pathological", N, classes_per_client=3, seed=0)


def _model(data: Any) -> Any:
    return tf.models.build_model("mlp", data.input_shape, data.num_classes, seed=0,
                                 hidden=(6,)).double()


def _engine(name: str, data: Any, rounds: int = 2, **hp: Any) -> Any:
    model = _model(data)
    return tf.run(name, data=data, model=model, rounds=rounds, batch_size=B, dtype="float64",
                  eval_every=100, record_clients=False, spectral=False, eval_global=False,
                  **hp)


def _x0(data: Any) -> tuple[Any, ParamLayout, torch.Tensor]:
    model = _model(data)
    layout = ParamLayout.from_model(model)
    flat = layout.flatten({k: v.detach() for k, v in model.named_parameters()})
    return model, layout, flat.expand(N, -1).clone()


# ----------------------------------------------------------------------------- reference


def _grad(model: Any, layout: ParamLayout, row: torch.Tensor, xb: torch.Tensor,
          yb: torch.Tensor, part: str) -> torch.Tensor:
    """Gradient of the mean cross-entropy of one client at ``row`` [P], zero outside ``part``."""
    row = row.detach().clone().requires_grad_(True)
    params = {k: v[0] for k, v in layout.views(row.unsqueeze(0)).items()}
    loss = F.cross_entropy(torch.func.functional_call(model, params, (xb.to(D),)), yb)
    (g,) = torch.autograd.grad(loss, row)
    keep = torch.zeros_like(g)
    cols = layout.cols(part)  # type: ignore[arg-type]
    keep[cols] = g[cols]
    return keep


def _sgd(x: torch.Tensor, g: torch.Tensor, m: torch.Tensor, lr: float, mu: float,
         wd: float, cols: slice) -> None:
    """Heavy-ball SGD with weight decay on the columns ``cols`` of one client (in place)."""
    d = g[cols] + wd * x[cols]
    m[cols] = mu * m[cols] + d
    x[cols] -= lr * m[cols]


def _reference(name: str, data: Any, rounds: int, *, lr: float, mu: float = 0.0,
               wd: float = 0.0, decay: float = 1.0, steps: int = 1, head_steps: int = 0,
               lam: float = 0.0, personal_steps: int = 0, personal_lr: float = 0.0,
               sel_fn: Any = None, weights: Any = None) -> dict[str, torch.Tensor]:
    """The four algorithms as in their papers, one client at a time."""
    model, layout, x = _x0(data)
    body, head, allc = layout.cols("body"), layout.cols("head"), layout.cols("all")
    v = x.clone()  # Ditto's personal models, v_k^0 = w^0
    for t in range(rounds):
        lr_t = lr * decay**t
        sel = list(range(N)) if sel_fn is None else sel_fn(t)
        w_t = x.clone()  # what every client received from the server
        for i in sel:
            xi, m = w_t[i].clone(), torch.zeros_like(w_t[i])  # a fresh optimizer each round
            step = 0
            if name == "ditto":
                vi = v[i].clone()
                mv = torch.zeros_like(vi)
                for _ in range(personal_steps):
                    xb, yb = data.sample(t, step, B)
                    g = _grad(model, layout, vi, xb[i], yb[i], "all") + lam * (vi - w_t[i])
                    _sgd(vi, g, mv, personal_lr * decay**t, mu, wd, allc)
                    step += 1
                v[i] = vi
            if name == "fedrep":  # head with the body frozen, then body with the head frozen
                for _ in range(head_steps):
                    xb, yb = data.sample(t, step, B)
                    _sgd(xi, _grad(model, layout, xi, xb[i], yb[i], "head"), m, lr_t, mu, wd,
                         head)
                    step += 1
            part = {"fedper": "all", "fedrep": "body", "fedbabu": "body", "ditto": "all"}[name]
            for _ in range(steps):
                xb, yb = data.sample(t, step, B)
                _sgd(xi, _grad(model, layout, xi, xb[i], yb[i], part), m, lr_t, mu, wd,
                     layout.cols(part))  # type: ignore[arg-type]
                step += 1
            x[i] = xi
        shared = allc if name == "ditto" else body
        wts = torch.ones(N, dtype=D) if weights is None else weights.clone()
        avg = sum(wts[i] * x[i, shared] for i in sel) / sum(float(wts[i]) for i in sel)
        for i in range(N):  # the server sends the average to every client
            x[i, shared] = avg
    return {"x": x, "v": v, "head": x[:, head], "model": model, "layout": layout}


# ----------------------------------------------------------------------------- one engine round
# Learning rates are exact in float32: the engine builds its per-client learning-rate tensor in
# float32 before casting it to the run's dtype.


@pytest.mark.parametrize("mu,wd", [(0.0, 0.0), (0.5, 0.01)])
def test_fedper_equals_per_client_reference(data: Any, mu: float, wd: float) -> None:
    res = _engine("fedper", data, lr=0.25, momentum=mu, weight_decay=wd, local_steps=3,
                  decay=0.75)
    ref = _reference("fedper", data, 2, lr=0.25, mu=mu, wd=wd, decay=0.75, steps=3)
    np.testing.assert_allclose(res.state.x.numpy(), ref["x"].numpy(), rtol=0, atol=1e-12)
    assert res.records.final("messages") == 2 * 2 * N


def test_fedrep_equals_per_client_reference(data: Any) -> None:
    res = _engine("fedrep", data, lr=0.25, momentum=0.5, head_steps=4, body_steps=2)
    ref = _reference("fedrep", data, 2, lr=0.25, mu=0.5, head_steps=4, steps=2)
    np.testing.assert_allclose(res.state.x.numpy(), ref["x"].numpy(), rtol=0, atol=1e-12)


def test_fedbabu_equals_per_client_reference(data: Any) -> None:
    res = _engine("fedbabu", data, lr=0.25, momentum=0.5, local_steps=3, finetune_steps=4,
                  finetune_lr=0.2)
    ref = _reference("fedbabu", data, 2, lr=0.25, mu=0.5, steps=3)
    np.testing.assert_allclose(res.state.x.numpy(), ref["x"].numpy(), rtol=0, atol=1e-12)
    # evaluation: each client fine-tunes a copy of its head with plain SGD on its own data
    model, layout = ref["model"], ref["layout"]
    expected = ref["x"].clone()
    for i in range(N):
        for k in range(4):
            xb, yb = data.sample(1, _AUX_STEP * (1 + 7) + k, B)
            expected[i] -= 0.2 * _grad(model, layout, expected[i], xb[i], yb[i], "head")
    got = res.evaluated()
    np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=0, atol=1e-12)


def test_ditto_equals_per_client_reference(data: Any) -> None:
    res = _engine("ditto", data, lr=0.25, lam=0.5, personal_lr=0.125, momentum=0.5,
                  local_steps=2, personal_steps=3, decay=0.75)
    ref = _reference("ditto", data, 2, lr=0.25, mu=0.5, decay=0.75, steps=2, lam=0.5,
                     personal_steps=3, personal_lr=0.125)
    np.testing.assert_allclose(res.state.x.numpy(), ref["x"].numpy(), rtol=0, atol=1e-12)
    v = res.evaluated()
    np.testing.assert_allclose(v.numpy(), ref["v"].numpy(), rtol=0, atol=1e-12)
    assert not torch.allclose(v, res.state.x)


@pytest.mark.parametrize("name", ["fedper", "ditto"])
def test_partial_participation_and_size_weighting_equal_reference(data: Any, name: str
                                                                  ) -> None:
    hp: dict[str, Any] = dict(lr=0.25, participation=0.5, sample_seed=3, weighting="data_size",
                              local_steps=2)
    if name == "ditto":
        hp.update(lam=0.5, personal_steps=2)
    res = _engine(name, data, rounds=3, **hp)
    sizes = torch.as_tensor(np.array(data.sizes("train")), dtype=D)
    ref = _reference(name, data, 3, lr=0.25, steps=2, lam=0.5, personal_steps=2,
                     personal_lr=0.25, sel_fn=lambda t: participants(N, t, 0.5, 3),
                     weights=sizes)
    np.testing.assert_allclose(res.state.x.numpy(), ref["x"].numpy(), rtol=0, atol=1e-12)
    if name == "ditto":
        v = res.evaluated()
        np.testing.assert_allclose(v.numpy(), ref["v"].numpy(), rtol=0, atol=1e-12)
    assert res.records.final("messages") == 3 * 2 * 2  # 3 rounds, 2 participants


def test_participants_are_a_pure_function_of_seed_and_round() -> None:
    a = [participants(20, t, 0.25, 5) for t in range(10)]
    assert a == [participants(20, t, 0.25, 5) for t in range(10)]
    assert all(len(s) == 5 and len(set(s)) == 5 and s == sorted(s) for s in a)
    assert len({tuple(s) for s in a}) > 1  # changes with the round
    assert a != [participants(20, t, 0.25, 6) for t in range(10)]
    assert participants(20, 0, 0.01, 0) is not None and len(participants(20, 0, 0.01, 0)) == 1
    assert participants(20, 0, 1.0, 0) is None


# ----------------------------------------------------------------------------- heads stay home


def _split_ctx(n: int, p_body: int, p_head: int) -> Services:
    layout = ParamLayout(("b", "h"), (torch.Size([p_body]), torch.Size([p_head])),
                         (0, p_body), p_body, p_body + p_head, ("h",))
    return toy_services(n, layout=layout)


@pytest.mark.parametrize("name", ["fedper", "fedrep", "fedbabu"])
@pytest.mark.parametrize("participation", [1.0, 0.5])
def test_communicate_averages_the_body_and_never_moves_a_head(name: str,
                                                              participation: float) -> None:
    n = 6
    ctx = _split_ctx(n, 3, 2)
    algo = get_algorithm(name, participation=participation, sample_seed=1)
    x0 = torch.tensor(np.random.default_rng(0).normal(size=(n, 5)), dtype=D)
    state = algo.init(x0.clone(), ctx)
    heads = state.x[:, 3:].clone()
    before = state.x.clone()
    msgs = algo.communicate(state, Round(4), ctx).messages
    assert torch.equal(state.x[:, 3:], heads)
    sel = participants(n, 4, participation, 1) or list(range(n))
    assert msgs == 2 * len(sel)
    np.testing.assert_allclose(state.x[:, :3].numpy(),
                               before[sel, :3].mean(0).expand(n, 3).numpy(), atol=1e-15)
    assert algo.shared == "body" and not algo.uses_topology and algo.requires is None


# ----------------------------------------------------------------------------- FedBABU


def test_fedbabu_head_is_the_fixed_initial_head_of_the_server(data: Any) -> None:
    res = _engine("fedbabu", data, rounds=3, local_steps=2, momentum=0.5,
                  init="independent", finetune_steps=0)
    layout = res.layout
    h = res.state.x[:, layout.cols("head")]
    # one head for everyone (the server's initial one), never trained
    assert bool((h == h[0]).all())
    model = _model(data)
    fresh = tf.engine.layout.init_parameters(model, layout, N, seed=0, same=False,
                                           device=torch.device("cpu"), dtype=D)
    assert torch.equal(h[0], fresh[0, layout.cols("head")])
    assert not torch.equal(res.state.x[:, layout.cols("body")], fresh[:, layout.cols("body")])


def test_fedbabu_finetuning_leaves_the_training_state_alone(data: Any) -> None:
    res = _engine("fedbabu", data, rounds=2, finetune_steps=5)
    ctx, algo, layout, last = res.services, res.algorithm, res.layout, res.last
    before = {k: v.clone() for k, v in res.state.tensors().items()}
    ev1 = algo.evaluate(res.state, last, ctx)
    ev2 = algo.evaluate(res.state, last, ctx)
    for k, v in res.state.tensors().items():
        assert torch.equal(v, before[k]), k
    assert torch.equal(ev1, ev2)  # deterministic: indexed by the round
    body, head = layout.cols("body"), layout.cols("head")
    assert torch.equal(ev1[:, body], res.state.x[:, body])  # only the head is fine-tuned
    assert not torch.equal(ev1[:, head], res.state.x[:, head])
    assert ev1.data_ptr() != res.state.x.data_ptr()
    # fine-tuning helps each client on its own data
    assert bool((ctx.losses(ev1, "train") < ctx.losses(res.state.x, "train")).all())
    # the whole model when asked; none at all with 0 steps
    full = get_algorithm("fedbabu", finetune_steps=5, finetune_part="all")
    assert not torch.equal(full.evaluate(res.state, last, ctx)[:, body], res.state.x[:, body])
    none = get_algorithm("fedbabu", finetune_steps=0)
    assert torch.equal(none.evaluate(res.state, last, ctx), res.state.x)


def test_fedbabu_finetuning_needs_the_engine() -> None:
    algo = get_algorithm("fedbabu")
    ctx = _split_ctx(2, 2, 1)
    state = algo.init(torch.zeros(2, 3, dtype=D), ctx)
    with pytest.raises(ValueError, match="local_train"):
        algo.evaluate(state, Round(0), ctx)


# ----------------------------------------------------------------------------- Ditto


def _drive_ditto(algo: Any, c: torch.Tensor, rounds: int) -> tuple[Any, Any, list[Any]]:
    n, p = c.shape
    env = toy_services(n, p)
    state = algo.init(torch.zeros(n, p, dtype=D), env)
    received = []
    for t in range(rounds):  # round by round, to keep the global model each round receives
        received.append(state.x.clone())
        trace = run_rounds(algo, state.x, None, lambda z, ph, rnd: (z - c) * (1 + z**2),
                           rounds=1, start=t, state=state, env=env)  # nonlinear grads
    return state, trace, received


def test_ditto_with_lambda_zero_is_local_training() -> None:
    c = torch.tensor(np.random.default_rng(0).normal(size=(5, 3)), dtype=D)
    algo = tf.algorithms.ditto(lr=0.05, lam=0.0, personal_lr=0.03, local_steps=2,
                               personal_steps=3)
    state, ctx, _ = _drive_ditto(algo, c, 6)
    local = tf.algorithms.local(lr=0.03, local_steps=3)
    lctx = toy_services(5, 3)
    lst = local.init(torch.zeros(5, 3, dtype=D), lctx)
    for _ in range(6):
        for _ in range(3):
            z = local.point(lst, local.phases[0], lctx)
            local.update(lst, (z - c) * (1 + z**2), local.phases[0],
                         torch.full((5,), 0.03, dtype=D), Round(0), lctx)
    assert torch.equal(ctx.evaluated(), lst.x)
    assert not torch.allclose(state.x, lst.x)  # the global model is another model


def test_ditto_with_large_lambda_pins_personal_to_global() -> None:
    c = torch.tensor(np.random.default_rng(1).normal(size=(4, 2)), dtype=D)
    lam = 1e4
    algo = tf.algorithms.ditto(lr=0.05, lam=lam, personal_lr=0.5 / lam, local_steps=3,
                               personal_steps=60)
    state, ctx, received = _drive_ditto(algo, c, 5)
    v = ctx.evaluated()
    w_t = received[-1]  # v minimises F_k(v) + lam/2 |v - w^t|^2: v = w^t - grad F_k(v) / lam
    gmax = float(((w_t - c) * (1 + w_t**2)).abs().max())
    assert float((v - w_t).abs().max()) <= 1.01 * gmax / lam
    assert float((v - w_t).abs().max()) < 1e-3
    small = tf.algorithms.ditto(lr=0.05, lam=0.1, personal_lr=0.05, local_steps=3,
                                personal_steps=60)
    s2, ctx2, rec2 = _drive_ditto(small, c, 5)
    assert float((ctx2.evaluated() - rec2[-1]).abs().max()) > 10 * gmax / lam


def test_ditto_phases_train_different_buffers() -> None:
    algo = tf.algorithms.ditto(lam=1.0)
    ctx = toy_services(2, 3)
    state = algo.init(torch.ones(2, 3, dtype=D), ctx)
    names = [p.name for p in algo.phases]
    assert names == ["personal", "global"]
    personal, glob = algo.phases
    assert algo.point(state, personal, ctx) is state.own.personal
    assert algo.point(state, glob, ctx) is state.x
    assert algo.evaluate(state, Round(0), ctx) is state.own.personal
    assert algo.shared == "all" and not algo.uses_topology


# ----------------------------------------------------------------------------- registry & errors


def test_registered_and_run_without_topology(data: Any) -> None:
    for name in NAMES:
        assert name in ALGORITHMS
        algo = get_algorithm(name)
        assert algo.name == name and not algo.uses_topology and algo.requires is None


def test_personalized_baselines_refuse_a_model_without_a_body(data: Any) -> None:
    model = tf.models.build_model("logistic", data.input_shape, data.num_classes, seed=0)
    for name in ("fedper", "fedrep", "fedbabu"):
        with pytest.raises(ValueError, match="body and a head"):
            tf.run(name, data=data, model=model, rounds=1)


@pytest.mark.parametrize("name,kw,exc,match", [
    ("ditto", dict(lam=-0.1), ValueError, "lam"),
    ("ditto", dict(lam="big"), TypeError, "lam"),
    ("ditto", dict(personal_steps=2, personal_epochs=1.0), ValueError, "either"),
    ("ditto", dict(personal_lr=0.0), ValueError, "personal_lr"),
    ("fedper", dict(participation=0.0), ValueError, "participation"),
    ("fedper", dict(participation=1.5), ValueError, "participation"),
    ("fedper", dict(weighting="median"), ValueError, "weighting"),
    ("fedper", dict(sample_seed=-1), ValueError, "sample_seed"),
    ("fedper", dict(local_steps=0), ValueError, "local_steps"),
    ("fedper", dict(local_steps=2, local_epochs=1.0), ValueError, "either"),
    ("fedper", dict(lr=-1.0), ValueError, "lr"),
    ("fedper", dict(momentum=1.0), ValueError, "momentum"),
    ("fedrep", dict(head_steps=0), ValueError, "head_steps"),
    ("fedrep", dict(body_epochs=-1.0), ValueError, "body_epochs"),
    ("fedrep", dict(head_lr=0.0), ValueError, "head_lr"),
    ("fedrep", dict(head_steps=1.5), TypeError, "head_steps"),
    ("fedbabu", dict(finetune_steps=-1), ValueError, "finetune_steps"),
    ("fedbabu", dict(finetune_part="body"), ValueError, "finetune_part"),
    ("fedbabu", dict(finetune_epochs=(1.0, 2.0)), TypeError, "finetune_epochs"),
    ("fedbabu", dict(finetune_steps=1, finetune_epochs=1.0), ValueError, "either"),
])
def test_bad_input(name: str, kw: dict[str, Any], exc: type, match: str) -> None:
    with pytest.raises(exc, match=match):
        get_algorithm(name, **kw)


def test_data_size_weighting_needs_the_sizes() -> None:
    algo = get_algorithm("fedper", weighting="data_size")
    ctx = _split_ctx(3, 2, 1)
    state = algo.init(torch.zeros(3, 3, dtype=D), ctx)
    with pytest.raises(ValueError, match="train_sizes"):
        algo.communicate(state, Round(0), ctx)
