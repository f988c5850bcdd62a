"""Full batches (``tf.data.full_batches``): every step on each client's whole training set.
Through ``tf.run``, every method of decent-bench's that topofl has takes the iterates of the
full-gradient round driver on ``LeastSquares`` (which ``tests/algorithms/test_decentbench*``
hold to decent-bench's own to 1e-10); D-SGD also against the update written by hand."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import topofl as tf
from topofl.data.sampling import StackedSampler
from topofl.distributed.data import ShardData

N, M, D = 5, 8, 3
#: decent-bench's methods that topofl has (decentralized on the ring; server ones without a
#: graph), with their local work
METHODS = {"dsgd": {}, "dsgt": {}, "extra": {}, "exact_diffusion": {}, "nids": {}, "dlm": {},
           "proxskip": {}, "kgt": {"local_steps": 3}, "led": {"local_steps": 3},
           "fedavg": {"local_steps": 3}, "scaffold": {"local_steps": 3},
           "fednova": {"local_steps": 3}, "feddyn": {"local_steps": 3}}
SERVER = {"fedavg", "scaffold", "fednova", "feddyn"}


def _problem(seed: int = 0, sizes: list[int] | None = None):
    """Clients' ``A_i``, ``b_i`` (float64 values float32 holds exactly, as the data stores
    them), optima apart."""
    rng = np.random.default_rng(seed)
    sizes = sizes or [M] * N
    A = [rng.normal(size=(m, D)).astype(np.float32).astype(np.float64) for m in sizes]
    b = [(a @ rng.normal(size=D) + i).astype(np.float32).astype(np.float64)
         for i, a in enumerate(A)]
    return A, b


def _run(name: str, data, rounds: int, lr: float = 0.05, **kw):
    model = torch.nn.Linear(D, 1, bias=False).double()
    torch.nn.init.zeros_(model.weight)
    topo = None if name in SERVER else tf.topologies.ring(N)
    return tf.run(name, topo, data, model, rounds, seed=0, batch_size=M, lr=lr,
                  dtype="float64", **kw)


@settings(max_examples=25, deadline=None)
@given(n=st.integers(1, 6), m=st.integers(1, 7), rnd=st.integers(0, 50), step=st.integers(0, 50))
def test_every_batch_is_each_clients_rows_in_order(n, m, rnd, step):
    A, b = _problem(rnd, [m] * n)
    data = tf.data.full_batches(tf.data.from_clients(list(zip(A, b)), seed=rnd))
    x, y = data.sample(rnd, step, m)
    for i in range(n):
        np.testing.assert_array_equal(x[i].numpy(), A[i])
        np.testing.assert_array_equal(y[i].numpy(), b[i])
    # a rank's share draws the whole data's rows for its clients
    keep = np.arange(0, n, 2)
    shard = ShardData(data, keep)
    torch.testing.assert_close(shard.take(shard.sample_indices(rnd, step, m))[0], x[keep])
    # a stacked pass's sampler: each data's own rows, beside another data's draws
    other = tf.data.from_clients(list(zip(*_problem(rnd + 1, [m] * 2))), seed=rnd)
    stacked = StackedSampler([data, other]).indices(rnd, step, m)
    assert torch.equal(stacked, torch.cat([data.sample_indices(rnd, step, m),
                                           other.sample_indices(rnd, step, m)]))


@pytest.mark.parametrize("name", sorted(METHODS))
def test_runs_take_the_full_gradient_rounds_iterates(name):
    rounds, lr = 20, 0.05
    A, b = _problem()
    data = tf.data.full_batches(tf.data.from_clients(list(zip(A, b)), seed=0))
    res = _run(name, data, rounds, lr, **METHODS[name])
    ls = tf.engine.LeastSquares.of([torch.tensor(a) for a in A], [torch.tensor(t) for t in b])
    algo = tf.algorithms.ALGORITHMS[name](lr=lr, **METHODS[name])
    x0 = torch.zeros(N, D, dtype=torch.float64)
    ref = tf.engine.run_rounds(algo, x0, None if name in SERVER else tf.topologies.ring(N),
                               ls.grad, rounds=rounds, env=ls.services())
    assert float(ref.state.x.abs().max()) > 0.1  # it moved
    torch.testing.assert_close(res.state.x, ref.state.x, rtol=1e-12, atol=1e-12)


def test_dsgd_is_the_full_gradient_update_written_by_hand():
    rounds, lr = 15, 0.05
    A, b = _problem(1)
    data = tf.data.full_batches(tf.data.from_clients(list(zip(A, b)), seed=0))
    res = _run("dsgd", data, rounds, lr)
    W = torch.as_tensor(tf.topologies.ring(N).W.toarray(), dtype=torch.float64)
    x = torch.zeros(N, D, dtype=torch.float64)
    At, bt = [torch.tensor(a) for a in A], [torch.tensor(t) for t in b]
    for _ in range(rounds):
        g = torch.stack([At[i].T @ (At[i] @ x[i] - bt[i]) / M for i in range(N)])
        x = W @ (x - lr * g)
    torch.testing.assert_close(res.state.x, x, rtol=1e-12, atol=1e-12)


def test_the_sampling_is_recorded_and_bad_input_refused():
    A, b = _problem()
    plain = tf.data.from_clients(list(zip(A, b)), seed=0)
    full = tf.data.full_batches(plain)
    assert full.params["sampling"] == "full" and "sampling" not in plain.params
    assert repr(full) == repr(plain) and full.sizes("test").tolist() == [M] * N
    assert tf.data.full_batches(full.to("cpu")).params["sampling"] == "full"
    res = _run("dsgd", full, 2)
    assert res.records.config["data"]["params"]["sampling"] == "full"  # in the run's hash
    with pytest.raises(ValueError, match="batch_size must be 8, got 4"):
        full.sample(0, 0, 4)
    uneven = tf.data.from_clients(list(zip(*_problem(0, [3, 4]))), seed=0)
    with pytest.raises(ValueError, match=r"equal training sizes .* found 3 to 4"):
        tf.data.full_batches(uneven)
    with pytest.raises(TypeError, match="must be a FederatedData"):
        tf.data.full_batches([(A[0], b[0])])
