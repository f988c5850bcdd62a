"""Gossip's CSR kernel on one thread (issue 85, item 3: ``Mixer(..., serial_min_n)``): the dense
product ``W @ X`` as reference (float64 to 1e-12, float32 to 1e-5 of the largest entry) on
random graphs (regular, Erdős–Rényi with isolated nodes, self-loops, weighted and directed
column-stochastic ``W``, a time-varying graph's rounds), the same bits as on torch's threads,
and torch's thread count restored after."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np
import pytest
import scipy.sparse as sp
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import topofl as tf
from topofl.engine.gossip import Mixer

CPU = torch.device("cpu")


@pytest.fixture(autouse=True)
def two_threads() -> Iterator[None]:
    """Two torch threads (the serial path switches to one only from more than one)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(2)
    yield
    torch.set_num_threads(threads)


def _x(n: int, p: int, dtype: torch.dtype, seed: int = 0) -> torch.Tensor:
    return torch.randn(n, p, dtype=dtype, generator=torch.Generator().manual_seed(seed))


def _sparse(n: int, density: float, seed: int, *, loops: bool, empty: int = 0,
            column_stochastic: bool = False) -> tf.Topology:
    """A random weighted directed ``W`` (self-loops or not, the last ``empty`` rows and
    columns without entries: isolated nodes), column-stochastic on request."""
    rng = np.random.default_rng(seed)
    A = sp.random_array((n, n), density=density, rng=rng, format="lil")
    if loops:
        A.setdiag(rng.uniform(0.1, 1.0, n))
    A = sp.csr_array(A)
    if empty:
        keep = np.r_[np.ones(n - empty), np.zeros(empty)]
        A = sp.csr_array(sp.diags_array(keep) @ A @ sp.diags_array(keep))
    A.eliminate_zeros()
    if column_stochastic:
        s = np.asarray(A.sum(axis=0)).ravel()
        A = sp.csr_array(A @ sp.diags_array(np.where(s > 0, 1 / np.where(s > 0, s, 1), 0)))
    return tf.Topology.from_matrix(A, name="random")


GRAPHS: dict[str, Callable[[], tf.Topology]] = {
    "random_regular": lambda: tf.topologies.random_regular(300, 6, seed=0),
    "erdos_renyi, isolated nodes": lambda: tf.topologies.erdos_renyi(
        400, 2 / 400, seed=0, connected=False),
    "weighted, self-loops, empty rows": lambda: _sparse(257, 0.02, 1, loops=True, empty=9),
    "weighted, no self-loops": lambda: _sparse(130, 0.05, 2, loops=False),
    "column-stochastic": lambda: _sparse(200, 0.03, 3, loops=True, column_stochastic=True),
}


def _check(topo: tf.Topology, X: torch.Tensor, dtype: torch.dtype) -> None:
    mixer = Mixer(CPU, dtype, serial_min_n=0)
    assert mixer.kernel(topo) == "csr"
    ref = topo.to_dense() @ X.numpy().astype(np.float64)
    mixer.mix_(topo, X)
    if dtype == torch.float64:
        np.testing.assert_allclose(X.numpy(), ref, rtol=1e-12, atol=1e-12)
    else:
        assert np.abs(X.numpy() - ref).max() <= 1e-5 * max(1.0, np.abs(ref).max())


@pytest.mark.parametrize("name", list(GRAPHS))
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_serial_csr_equals_the_dense_product(name: str, dtype: torch.dtype) -> None:
    topo = GRAPHS[name]()
    _check(topo, _x(topo.n, 70, dtype), dtype)  # 70 columns: tiles of 32, 32 and 6


def test_time_varying_rounds_equal_the_dense_product() -> None:
    graph = tf.topologies.random_directed(150, 3, seed=0)
    for t in range(4):
        topo = graph.at(t)
        _check(topo, _x(topo.n, 40, torch.float64, seed=t), torch.float64)


def test_column_slice_and_threads_restored() -> None:
    topo = GRAPHS["random_regular"]()
    X = _x(topo.n, 50, torch.float64)
    ref = X.numpy().copy()
    ref[:, 10:30] = topo.to_dense() @ ref[:, 10:30]
    Mixer(CPU, torch.float64, serial_min_n=0).mix_(topo, X, slice(10, 30))
    np.testing.assert_allclose(X.numpy(), ref, rtol=1e-12, atol=1e-12)
    assert torch.get_num_threads() == 2


def test_threads_restored_on_error(monkeypatch: pytest.MonkeyPatch) -> None:
    topo = GRAPHS["random_regular"]()
    mixer = Mixer(CPU, torch.float64, serial_min_n=0)
    seen: list[int] = []

    def fail(*args: object) -> None:
        seen.append(torch.get_num_threads())
        raise RuntimeError("boom")

    monkeypatch.setattr(mixer, "_tiles_", fail)
    with pytest.raises(RuntimeError, match="boom"):
        mixer.mix_(topo, _x(topo.n, 3, torch.float64))
    assert seen == [1] and torch.get_num_threads() == 2


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_serial_bits_equal_threaded_bits(dtype: torch.dtype) -> None:
    """One thread or two, MKL's CSR product gives every row the same sum (the rows are split
    between the threads, a row's sum is not): the knob does not move a bit."""
    topo = tf.topologies.random_regular(3000, 6, seed=1)
    X = _x(topo.n, 100, dtype)
    a, b = X.clone(), X.clone()
    Mixer(CPU, dtype).mix_(topo, a)  # default: one thread from 2,048 clients
    Mixer(CPU, dtype, serial_min_n=None).mix_(topo, b)
    assert torch.equal(a, b)


def test_threshold(monkeypatch: pytest.MonkeyPatch) -> None:
    """Below ``serial_min_n`` (every committed result), dense ``W`` and band plans: torch's
    threads are left alone; from it, the CSR kernel runs on one."""
    calls: list[int] = []
    real = torch.set_num_threads
    monkeypatch.setattr(torch, "set_num_threads", lambda k: (calls.append(k), real(k)))
    mixer = Mixer(CPU, torch.float64)
    for topo in (tf.topologies.random_regular(1000, 6, seed=0), tf.topologies.ring(3000),
                 tf.topologies.complete(50)):
        mixer.mix_(topo, _x(topo.n, 4, torch.float64))
    assert calls == []
    mixer.mix_(tf.topologies.random_regular(2048, 4, seed=0), _x(2048, 4, torch.float64))
    assert calls == [1, 2]


def test_bad_serial_min_n() -> None:
    with pytest.raises(ValueError, match="serial_min_n must be >= 0 or None, got -1"):
        Mixer(CPU, torch.float32, serial_min_n=-1)


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 40), p=st.integers(1, 70), density=st.floats(0.0, 0.3),
       loops=st.booleans(), seed=st.integers(0, 2**16))
def test_serial_csr_property(n: int, p: int, density: float, loops: bool, seed: int) -> None:
    """Any sparse ``W`` (empty rows, self-loops or not, any weights) that takes the CSR kernel
    gives ``W @ X`` on one thread."""
    topo = _sparse(n, density, seed, loops=loops)
    mixer = Mixer(CPU, torch.float64, serial_min_n=0, dense_max=0)
    X = _x(n, p, torch.float64, seed)
    ref = topo.to_dense() @ X.numpy()
    mixer.mix_(topo, X)
    np.testing.assert_allclose(X.numpy(), ref, rtol=1e-12, atol=1e-12)


def test_more_threads_than_measured_keep_torchs(monkeypatch: pytest.MonkeyPatch) -> None:
    """With more torch threads than ``SERIAL_MAX_THREADS`` (the two measured), the CSR kernel
    keeps torch's threads at every size: one thread was not measured against many."""
    from topofl.engine.gossip import SERIAL_MAX_THREADS

    torch.set_num_threads(SERIAL_MAX_THREADS + 2)
    calls: list[int] = []
    real = torch.set_num_threads
    monkeypatch.setattr(torch, "set_num_threads", lambda k: (calls.append(k), real(k)))
    topo = tf.topologies.random_regular(2048, 4, seed=0)
    X = _x(2048, 4, torch.float64)
    expected = topo.W.toarray() @ X.numpy() if hasattr(topo.W, "toarray") else None
    Mixer(CPU, torch.float64).mix_(topo, X)
    assert calls == []
    if expected is not None:
        np.testing.assert_allclose(X.numpy(), expected, rtol=1e-12, atol=1e-12)
