"""The closed-form softmax-regression gradient and the streamed local step.

Both are fast paths: the closed form is checked against autograd (the vmap path and a plain
per-client ``backward``), the streamed step against the unstreamed one, including whole runs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

import topofl as tf
from topofl.engine import ParamLayout, Round, RunConfig, State, toy_services
from topofl.engine.executors import BatchedExecutor, _softmax_regression, make_executor
from topofl.engine.local import LocalStepper
from topofl.engine.pieces import PushSumState
from topofl.exceptions import ConvergenceError


def _flat_and_batch(layout: ParamLayout, n: int, b: int, shape: tuple[int, ...], classes: int,
                    seed: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    flat = torch.randn(n, layout.num_params, dtype=torch.float64, generator=g)
    x = torch.randn(n, b, *shape, dtype=torch.float64, generator=g)
    y = torch.randint(0, classes, (n, b), generator=g)
    return flat, x, y


class _LinearSub(nn.Linear):
    """A subclass may change ``forward``: never treated as plain softmax regression."""


@pytest.mark.parametrize(
    ("model", "expected"),
    [
        (tf.models.build_model("logistic", (1, 3, 3), 4, seed=0), ("head.weight", "head.bias")),
        (nn.Sequential(nn.Flatten(), nn.Linear(9, 4)), ("1.weight", "1.bias")),
        (nn.Sequential(nn.Flatten(), nn.Linear(9, 4, bias=False)), ("1.weight", None)),
        (nn.Linear(9, 4), ("weight", "bias")),
        (nn.Sequential(nn.Linear(9, 4), nn.Flatten()), None),  # linear first: other model
        (nn.Sequential(nn.Flatten(start_dim=2), nn.Linear(9, 4)), None),
        (nn.Sequential(nn.Flatten(), _LinearSub(9, 4)), None),
        (tf.models.build_model("mlp", (1, 3, 3), 4, seed=0, hidden=(5,)), None),
    ],
)
def test_softmax_regression_is_recognised_only_when_exact(model: nn.Module, expected: Any) -> None:
    layout = ParamLayout.from_model(model)
    assert _softmax_regression(model, layout.names) == expected


@settings(max_examples=25, deadline=None)
@given(n=st.integers(1, 6), b=st.integers(1, 7), classes=st.integers(2, 6),
       bias=st.booleans(), part=st.sampled_from(["all", "head"]), chunk=st.integers(1, 4),
       seed=st.integers(0, 10_000))
def test_closed_form_gradient_equals_autograd(n: int, b: int, classes: int, bias: bool,
                                              part: str, chunk: int, seed: int) -> None:
    shape = (2, 3)
    model = nn.Sequential(nn.Flatten(), nn.Linear(6, classes, bias=bias)).double()
    layout = ParamLayout.from_model(model, head=[k for k, _ in model.named_parameters()])
    flat, x, y = _flat_and_batch(layout, n, b, shape, classes, seed)
    fast = BatchedExecutor(model, layout, chunk_size=chunk)
    ref = BatchedExecutor(model, layout, closed_form=False)
    assert fast.linear is not None and ref.linear is None
    ga, gr = torch.full_like(flat, 7.0), torch.full_like(flat, 7.0)
    la = fast.grad(flat, x, y, part, ga)  # type: ignore[arg-type]
    lr = ref.grad(flat, x, y, part, gr)  # type: ignore[arg-type]
    np.testing.assert_allclose(ga.numpy(), gr.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(la.numpy(), lr.numpy(), rtol=1e-12, atol=1e-12)


def test_closed_form_matches_hand_computed_case() -> None:
    # one client, one sample x = (1, 2), W = 0, b = 0, label 0: softmax = (1/2, 1/2), so
    # dL/dW = (p - e_0) x^T = [[-1/2, -1], [1/2, 1]], dL/db = (-1/2, 1/2), loss = log 2
    model = nn.Linear(2, 2).double()
    layout = ParamLayout.from_model(model)
    ex = BatchedExecutor(model, layout)
    flat = torch.zeros(1, layout.num_params, dtype=torch.float64)
    out = torch.zeros_like(flat)
    loss = ex.grad(flat, torch.tensor([[[1.0, 2.0]]], dtype=torch.float64),
                   torch.tensor([[0]]), "all", out)
    views = layout.views(out)
    assert views["weight"][0].tolist() == [[-0.5, -1.0], [0.5, 1.0]]
    assert views["bias"][0].tolist() == [-0.5, 0.5]
    assert float(loss[0]) == pytest.approx(np.log(2.0), abs=1e-15)


def test_closed_form_rejects_bad_labels_and_inputs() -> None:
    model = tf.models.build_model("logistic", (4,), 3, seed=0)
    layout = ParamLayout.from_model(model)
    ex = BatchedExecutor(model, layout)
    flat = torch.zeros(2, layout.num_params)
    with pytest.raises(ValueError, match=r"labels must lie in \[0, 3\)"):
        ex.grad(flat, torch.zeros(2, 5, 4), torch.full((2, 5), 3), "all", torch.zeros_like(flat))
    with pytest.raises(ValueError, match="takes 4 input features"):
        ex.grad(flat, torch.zeros(2, 5, 6), torch.zeros(2, 5, dtype=torch.int64), "all",
                torch.zeros_like(flat))


# ----------------------------------------------------------------------------- streaming
@pytest.fixture(scope="module")
def data() -> Any:
    return tf.data.federate("digits", "dirichlet", 11, alpha=0.5, seed=1)


def _stepper_run(data: Any, algo: Any, model_name: str, executor: str, rows: int,
                 steps: int = 3) -> State:
    model = tf.models.build_model(model_name, data.input_shape, data.num_classes, seed=0,
                                  **({"hidden": (8,)} if model_name == "mlp" else {}))
    model = model.double()
    layout = ParamLayout.from_model(model)
    n = data.num_clients
    ctx = toy_services(n, layout=layout)
    state = algo.init(tf.engine.layout.init_parameters(
        model, layout, n, seed=0, same=True, device=torch.device("cpu"), dtype=torch.float64),
        ctx)
    ex = make_executor(executor, model, layout, torch.device("cpu"))
    step = LocalStepper(ex, algo, data, 5, layout.num_params, torch.float64, rows=rows)
    lr = torch.full((n,), 0.2, dtype=torch.float64)
    lr[3] = 0.0  # a client past its own step count is frozen
    for k in range(steps):
        step(state, Round(2), ctx, algo.phases[0], k, lr)
    return state


@pytest.mark.parametrize("executor", ["batched", "loop"])
@pytest.mark.parametrize("model_name", ["logistic", "mlp"])
@pytest.mark.parametrize("rows", [1, 4, 10])
def test_streamed_step_equals_unstreamed(data: Any, executor: str, model_name: str,
                                         rows: int) -> None:
    algo = tf.algorithms.dsgd(lr=0.2, momentum=0.9, weight_decay=1e-3)
    full = _stepper_run(data, algo, model_name, executor, rows=data.num_clients)
    part = _stepper_run(data, algo, model_name, executor, rows=rows)
    np.testing.assert_allclose(part.x.numpy(), full.x.numpy(), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(part.momentum.numpy(), full.momentum.numpy(),  # type: ignore[union-attr]
                               rtol=1e-12, atol=1e-14)


def _fused_run(data: Any, algo: Any, fuse: bool, rows: int, lr0: float = 0.2) -> State:
    model = nn.Sequential(nn.Flatten(), nn.Linear(64, 10)).double()
    layout = ParamLayout.from_model(model)
    n = data.num_clients
    ctx = toy_services(n, layout=layout)
    g = torch.Generator().manual_seed(3)
    state = algo.init(torch.randn(n, layout.num_params, dtype=torch.float64, generator=g) * 0.1,
                      ctx)
    ex = BatchedExecutor(model, layout, chunk_size=4)
    step = LocalStepper(ex, algo, data, 5, layout.num_params, torch.float64, rows=rows,
                        fuse=fuse)
    assert step.fused == fuse and (step.grads is None) == fuse
    if fuse:  # the kernel that runs is the local-update piece's own fused step
        assert step.kernel == algo.local.fused_step
    lr = torch.full((n,), lr0, dtype=torch.float64)
    lr[3] = 0.0
    before = state.x[3].clone()
    for k in range(4):
        loss = step(state, Round(1), ctx, algo.phases[0], k, lr)
        assert torch.isfinite(loss).all()
    assert torch.equal(state.x[3], before)  # lr 0: the client does not move, fused or not
    return state


@pytest.mark.parametrize("rows", [3, 11])
@pytest.mark.parametrize("name", ["dsgd", "local", "fedavg", "dfedavgm"])
def test_fused_sgd_equals_gradient_then_update(data: Any, rows: int, name: str) -> None:
    kw = {"momentum": 0.0} if name == "dfedavgm" else {}
    algo = tf.algorithms.get_algorithm(name, lr=0.2, **kw)
    assert algo.local.rowwise and algo.local.plain
    a = _fused_run(data, algo, fuse=False, rows=rows)
    b = _fused_run(data, algo, fuse=True, rows=rows)
    np.testing.assert_allclose(b.x.numpy(), a.x.numpy(), rtol=1e-12, atol=1e-14)


def test_the_fast_paths_come_from_the_local_piece() -> None:
    # the engine fuses only the plain-SGD piece and streams only rowwise pieces
    A = tf.algorithms
    model = nn.Sequential(nn.Flatten(), nn.Linear(4, 3))
    ex = BatchedExecutor(model, ParamLayout.from_model(model))

    def fused(algo: Any) -> bool:
        return algo.local.fused(ex) is not None

    assert fused(A.dsgd())
    assert not fused(A.dsgd(momentum=0.9)) and A.dsgd(momentum=0.9).local.rowwise
    assert not fused(A.dsgd(weight_decay=1e-4))
    assert not fused(A.dsgd(clique_averaging=True))
    assert not A.dsgd(clique_averaging=True).local.rowwise  # reads its clique's rows
    assert not fused(A.dfedavgm())  # momentum 0.9 by default
    assert not fused(A.sgp())  # gradient at z = x / w, applied to x
    assert fused(A.local()) and fused(A.fedavg())
    assert not fused(A.fedper())  # sampled participants
    mlp = tf.models.build_model("mlp", (4,), 3, seed=0, hidden=(5,))
    assert A.dsgd().local.fused(BatchedExecutor(mlp, ParamLayout.from_model(mlp))) is not None
    loop = tf.engine.executors.LoopExecutor(mlp, ParamLayout.from_model(mlp))
    assert A.dsgd().local.fused(loop) is None


# name -> (model, sample shape): the batched executor's autograd path
_AUTOGRAD_MODELS: dict[str, tuple[Callable[[], nn.Module], tuple[int, ...]]] = {
    "mlp": (lambda: tf.models.build_model("mlp", (7,), 5, seed=0, hidden=(13, 6)), (7,)),
    "cnn1d": (lambda: tf.models.build_model("cnn1d", (1, 12), 4, seed=0, channels=3), (1, 12)),
    "no head": (lambda: nn.Sequential(nn.Flatten(), nn.Linear(6, 9), nn.Tanh(),
                                      nn.Linear(9, 3, bias=False)), (2, 3)),
}


@pytest.mark.parametrize("name", list(_AUTOGRAD_MODELS))
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("part", ["all", "body", "head"])
def test_fused_autograd_sgd_is_gradient_then_update_bit_for_bit(
        name: str, dtype: torch.dtype, part: Any) -> None:
    """Models without a closed form fuse plain SGD too: each parameter's gradient is applied
    to its view of the buffer with the update's own ``addcmul_``, which gives the very bits
    of ``grad`` into a ``[n, P]`` buffer followed by ``sgd_step`` (clients in chunks or not,
    some clients frozen with a zero rate, float32 and float64)."""
    make, shape = _AUTOGRAD_MODELS[name]
    model = make().to(dtype)
    layout = ParamLayout.from_model(model)
    if part != "all" and not layout.has_split:
        pytest.skip("a model without a body/head split trains 'all' only")
    n, b = 7, 5
    g = torch.Generator().manual_seed(1)
    flat = torch.randn(n, layout.num_params, dtype=dtype, generator=g) * 0.5
    x = torch.randn(n, b, *shape, dtype=dtype, generator=g)
    y = torch.randint(0, 3, (n, b), generator=g)
    lr = torch.rand(n, dtype=dtype, generator=g)
    lr[2] = 0.0
    for chunk in (None, 3):
        ex = BatchedExecutor(model, layout, chunk_size=chunk)
        assert ex.linear is None and ex.fuses_sgd
        ref, fused = flat.clone(), flat.clone()
        grads = torch.zeros_like(flat)
        loss_ref = ex.grad(ref, x, y, part, grads)
        cols = layout.cols(part)
        tf.engine.pieces.sgd_step(ref[:, cols], grads[:, cols], lr)
        loss = ex.sgd_(fused, x, y, part, lr)
        assert torch.equal(loss, loss_ref)
        assert torch.equal(fused, ref)
        assert torch.equal(fused[2], flat[2])  # a zero rate leaves the client where it was
        other = torch.ones(layout.num_params, dtype=torch.bool)
        other[cols] = False
        assert torch.equal(fused[:, other], flat[:, other])  # the other part is not trained


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_fused_autograd_stepper_equals_the_unfused_one(data: Any, dtype: torch.dtype) -> None:
    """The local stepper of an MLP fuses plain SGD (no gradient buffer) and takes the same
    steps as gradient then update, streamed in blocks or not."""
    model = tf.models.build_model("mlp", data.input_shape, data.num_classes, seed=0,
                                  hidden=(9,)).to(dtype)
    layout = ParamLayout.from_model(model)
    algo = tf.algorithms.dsgd(lr=0.3)
    n = data.num_clients
    ctx = toy_services(n, layout=layout, dtype=dtype)
    x0 = tf.engine.layout.init_parameters(model, layout, n, seed=0, same=False,
                                   device=torch.device("cpu"), dtype=dtype)
    lr = torch.full((n,), 0.3, dtype=dtype)
    lr[1] = 0.0
    states = []
    for fuse, rows in ((False, n), (True, n), (True, 3)):
        ex = make_executor("auto", model, layout, torch.device("cpu"))
        step = LocalStepper(ex, algo, data, 4, layout.num_params, dtype, rows=rows,
                            fuse=fuse)
        assert step.fused == fuse and (step.grads is None) == fuse
        state = algo.init(x0.clone(), ctx)
        for k in range(3):
            step(state, Round(2), ctx, algo.phases[0], k, lr)
        states.append(state.x)
    # fused or not on the same rows: the same gradient kernels on the same shapes and the same
    # addcmul_, so the same bits
    assert torch.equal(states[1], states[0])
    assert torch.equal(states[0][1], x0[1])  # a zero rate: the client does not move
    # streamed in blocks of 3 clients: the batched products run other shapes (MKL picks its
    # kernels by shape and CPU), so equal to rounding; a missed or doubled step, or another
    # client's batch, moves the parameters by >1e-3
    if dtype == torch.float64:
        torch.testing.assert_close(states[2], states[0], rtol=1e-12, atol=1e-14)
    else:
        # float32: a few ulps of parameters ~0.1 after 3 steps; 1e-5 relative is ~100 ulps
        torch.testing.assert_close(states[2], states[0], rtol=1e-5, atol=1e-6)
    assert not torch.equal(states[0], x0)


def test_stepper_streams_only_rowwise_algorithms(data: Any) -> None:
    model = tf.models.build_model("logistic", data.input_shape, data.num_classes, seed=0)
    layout = ParamLayout.from_model(model)
    ex = make_executor("auto", model, layout, torch.device("cpu"))
    for algo, rows in ((tf.algorithms.dsgd(), 3), (tf.algorithms.dsgd(clique_averaging=True), 11),
                       (tf.algorithms.sgp(), 3), (tf.algorithms.fedper(), 11),
                       (tf.algorithms.dfedavgm(), 3)):
        step = LocalStepper(ex, algo, data, 4, layout.num_params, torch.float32, rows=3,
                            fuse=False)
        assert step.rows == rows, algo.name
        assert tuple(step.grads.shape) == (rows, layout.num_params)  # type: ignore[union-attr]
        assert tuple(step.batch[0].shape) == (rows, 4, *data.input_shape)


def test_default_blocks_follow_the_executor() -> None:
    big = tf.data.federate(tf.data.synthetic(3000, 784, seed=0), "iid", 300, seed=0)
    model = tf.models.build_model("logistic", big.input_shape, big.num_classes, seed=0)
    layout = ParamLayout.from_model(model)
    algo = tf.algorithms.dsgd()
    batched = LocalStepper(BatchedExecutor(model, layout), algo, big, 64, layout.num_params,
                           torch.float32)
    assert batched.rows == tf.engine.local.stream_rows(300, 64, (784,), torch.device("cpu"))
    assert batched.rows < 300
    loop = LocalStepper(tf.engine.executors.LoopExecutor(model, layout), algo, big, 64,
                        layout.num_params, torch.float32)
    assert loop.rows == 300


def test_stream_rows_by_size() -> None:
    cpu = torch.device("cpu")
    rows = tf.engine.local.stream_rows(1000, 16, (3, 32, 32), cpu)
    assert 1 <= rows < 1000
    blocks = -(-1000 // rows)
    assert rows * 16 * 3 * 32 * 32 * 4 <= 1.2 * tf.engine.local._STREAM_BYTES
    assert blocks * rows - 1000 < blocks  # equal blocks, the last one short by < one per block
    assert tf.engine.local.stream_rows(10, 16, (784,), cpu) == 10
    assert tf.engine.local.stream_rows(1000, 16, (3, 32, 32), torch.device("meta")) == 1000


@pytest.mark.parametrize("algorithm", ["dsgd", "dfedavgm", "fedavg"])
def test_run_records_do_not_depend_on_streaming(data: Any, algorithm: str) -> None:
    kw = dict(topology=None if algorithm == "fedavg" else "ring", data=data, rounds=3,
              lr=0.1, batch_size=6, seed=0, dtype="float64", eval_every=1)
    if algorithm == "dfedavgm":
        kw["local_steps"] = 2
    a = tf.run(algorithm, stream_rows=data.num_clients, **kw)
    b = tf.run(algorithm, stream_rows=4, **kw)
    np.testing.assert_allclose(b.state.x.numpy(), a.state.x.numpy(), rtol=1e-12, atol=1e-14)
    for ra, rb in zip(a.records.rows, b.records.rows):
        assert (ra["metric"], ra["round"]) == (rb["metric"], rb["round"])
        if ra["metric"] != "wall_time" and isinstance(ra["value"], float):
            assert rb["value"] == pytest.approx(ra["value"], rel=1e-10, abs=1e-12)


class _PoisonClient:
    """Data whose client 9 gets NaN inputs from round 1 on (streamed in blocks of 4: the last
    block holds clients 8, 9, 10)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.round = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def to(self, device: Any) -> _PoisonClient:
        return self

    def sample_indices(self, round: int, step: int, batch_size: int) -> torch.Tensor:
        self.round = round
        return self.inner.sample_indices(round, step, batch_size)

    def take(self, indices: torch.Tensor, *, out: Any = None) -> Any:
        x, y = self.inner.take(indices, out=out)
        if self.round >= 1 and indices.shape[0] == 3:
            x[1] = float("nan")
        return x, y


def test_streamed_divergence_names_the_client(data: Any) -> None:
    model = tf.models.build_model("logistic", data.input_shape, data.num_classes, seed=0)
    cfg = RunConfig(rounds=4, batch_size=5, stream_rows=4)
    with pytest.raises(ConvergenceError, match=r"round 1, local step 0: the loss of client 9"):
        tf.engine.run(cfg, tf.topologies.ring(11), tf.algorithms.dsgd(), _PoisonClient(data),
                      model)


def test_take_errors(data: Any) -> None:
    idx = data.sample_indices(0, 0, 3)
    with pytest.raises(TypeError, match="2-d torch.Tensor"):
        data.take(idx.numpy())
    with pytest.raises(ValueError, match="out must have shapes"):
        data.take(idx, out=(torch.empty(2, 3, 1, 8, 8), torch.empty(2, 3, dtype=torch.int64)))
    x, y = data.take(idx[2:5])
    xs, ys = data.sample(0, 0, 3)
    assert torch.equal(x, xs[2:5]) and torch.equal(y, ys[2:5])


class _Record(NamedTuple):
    rows: torch.Tensor  # [n, 2]: one row per client
    flag: torch.Tensor  # []: shared
    absent: torch.Tensor | None = None


@pytest.mark.parametrize("record", ["dataclass", "namedtuple"])
def test_state_rows_are_views(record: str) -> None:
    own: Any = (PushSumState(z=torch.zeros(5, 2)) if record == "dataclass"
                else _Record(torch.zeros(5, 2), torch.tensor(7.0)))
    s = State(x=torch.zeros(5, 2), momentum=torch.zeros(5, 2), weight=torch.ones(5), own=own)
    r = s.rows(slice(1, 3))
    assert type(r.own) is type(own)
    r.x.add_(1.0)
    r.momentum.add_(2.0)  # type: ignore[union-attr]
    r.weight.mul_(3.0)  # type: ignore[union-attr]
    first = r.own.z if record == "dataclass" else r.own.rows
    first.add_(4.0)
    assert s.x[:, 0].tolist() == [0, 1, 1, 0, 0]
    assert s.momentum[:, 1].tolist() == [0, 2, 2, 0, 0]  # type: ignore[index]
    assert s.weight.tolist() == [1, 3, 3, 1, 1]  # type: ignore[union-attr]
    whole = s.own.z if record == "dataclass" else s.own.rows
    assert whole[:, 0].tolist() == [0, 4, 4, 0, 0]
    if record == "namedtuple":  # no client dimension: shared as it is; None stays None
        assert r.own.flag is s.own.flag and r.own.absent is None
        assert sorted(s.tensors()) == ["extra.flag", "extra.rows", "momentum", "weight", "x"]
    else:
        assert r.own.inflight_x is None
        assert sorted(s.tensors()) == ["extra.z", "momentum", "weight", "x"]


def test_run_on_cores_runs_every_worker_and_reraises_the_lowest() -> None:
    from topofl.engine._threads import cpu_workers, run_on_cores

    seen: list[int] = []
    run_on_cores(3, seen.append)
    assert sorted(seen) == [0, 1, 2]
    threads = torch.get_num_threads()

    def fail(w: int) -> None:
        raise KeyError(w)

    with pytest.raises(KeyError, match="0"):
        run_on_cores(3, fail)
    assert torch.get_num_threads() == threads  # restored after the threads ran
    assert cpu_workers(None, 1) == 1 and cpu_workers(4, 2) == 2 and cpu_workers(0, 5) == 1


_STACKS: dict[str, tuple[Callable[[], nn.Module], tuple[int, ...]]] = {
    "mlp 7-13-6-5": (lambda: tf.models.build_model("mlp", (7,), 5, seed=0, hidden=(13, 6)),
                     (7,)),
    "mlp on images": (lambda: tf.models.build_model("mlp", (1, 4, 5), 3, seed=1, hidden=(17,)),
                      (1, 4, 5)),
    "sequential without bias": (lambda: nn.Sequential(
        nn.Flatten(), nn.Linear(6, 40, bias=False), nn.ReLU(), nn.Linear(40, 4)), (2, 3)),
    "no flatten": (lambda: nn.Sequential(nn.Linear(9, 16), nn.ReLU(), nn.ReLU(),
                                         nn.Linear(16, 3)), (9,)),
}


@pytest.mark.parametrize("name", list(_STACKS))
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_plain_mlp_without_vmap_is_the_vmap_path_bit_for_bit(name: str,
                                                             dtype: torch.dtype) -> None:
    """A plain stack of Flatten / Linear / ReLU takes its gradient without ``vmap``
    (``_stack_forward``): the same operations, so the same losses and gradients to the last
    bit as the ``vmap``-ed forward, for every part and in chunks of clients."""
    make, shape = _STACKS[name]
    model = make().to(dtype)
    layout = ParamLayout.from_model(model)
    ex = BatchedExecutor(model, layout, chunk_size=4)
    assert ex.stack is not None and ex.linear is None
    ref = BatchedExecutor(model, layout, chunk_size=4)
    ref.stack = None  # the vmap path
    n, b = 9, 11
    g = torch.Generator().manual_seed(2)
    flat = torch.randn(n, layout.num_params, dtype=dtype, generator=g)
    x = torch.randn(n, b, *shape, dtype=dtype, generator=g)
    y = torch.randint(0, 3, (n, b), generator=g)
    for part in ("all", "body", "head") if layout.has_split else ("all",):
        a, r = torch.zeros_like(flat), torch.zeros_like(flat)
        assert torch.equal(ex.grad(flat, x, y, part, a), ref.grad(flat, x, y, part, r))
        assert torch.equal(a, r)


def test_only_plain_stacks_skip_vmap() -> None:
    from topofl.engine.executors import _plain_stack

    def stack(m: nn.Module) -> Any:
        return _plain_stack(m, [k for k, _ in m.named_parameters()])

    class MyLinear(nn.Linear):
        pass

    assert stack(nn.Sequential(nn.Flatten(), nn.Linear(3, 2))) is not None
    assert stack(nn.Sequential(nn.Linear(3, 2), nn.Tanh())) is None  # another activation
    assert stack(nn.Sequential(nn.Flatten(), MyLinear(3, 2))) is None  # a subclass
    assert stack(nn.Sequential(nn.ReLU(inplace=True), nn.Linear(3, 2))) is None
    assert stack(nn.Sequential(nn.Linear(3, 4), nn.Flatten(), nn.Linear(4, 2))) is None
    assert stack(nn.Sequential(nn.Flatten(start_dim=2), nn.Linear(3, 2))) is None
    assert stack(nn.Sequential(nn.ReLU())) is None  # no parameters
    hooked = nn.Sequential(nn.Flatten(), nn.Linear(3, 2))
    hooked[1].register_forward_hook(lambda *a: None)
    assert stack(hooked) is None
    cnn = tf.models.build_model("cnn1d", (1, 12), 4, seed=0)
    assert BatchedExecutor(cnn, ParamLayout.from_model(cnn)).stack is not None  # 1-d convolutions
    assert stack(nn.Sequential(nn.Conv1d(1, 2, 3), nn.Linear(3, 2))) is None  # no Flatten
    dilated = nn.Sequential(nn.Conv1d(1, 2, 3, dilation=2), nn.Flatten(), nn.Linear(2, 2))
    assert stack(dilated) is None
    assert stack(nn.Sequential(nn.Flatten(), nn.Linear(4, 4), nn.Conv1d(1, 2, 3))) is None
    lin = tf.models.build_model("logistic", (1, 12), 4, seed=0)
    ex = BatchedExecutor(lin, ParamLayout.from_model(lin))
    assert ex.stack is not None and ex.linear is not None  # the closed form comes first
    m = tf.models.build_model("mlp", (5,), 3, seed=0, hidden=(4,))
    assert _plain_stack(m, ["body.fc1.weight", "body.fc1.bias"]) is None  # names it lacks
