"""Fuzz the public boundary: a bad value in any parameter is a ValueError/TypeError (issue 13).

For every public function of ``topofl.spectral``, every family of ``topofl.topologies.REGISTRY``,
``topofl.data`` (load, the partitions, federate), ``topofl.records.load`` and
``topofl.models.build_model``: start from a call that works, replace one argument at a time by
a bad value (wrong type, negative, zero, huge, NaN, inf, None, strings, containers) and require
either success or a ``ValueError``/``TypeError`` (or a documented topofl exception) with a
non-empty message -- never another exception type, never a hang (each call runs under a time
limit). A hypothesis test then draws random combinations of bad values.
"""

from __future__ import annotations

import math
import signal
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import topofl as tf
from topofl.exceptions import ConvergenceError

TIME_LIMIT_S = 10.0
ALLOWED: tuple[type[BaseException], ...] = (ValueError, TypeError, ConvergenceError)
# records.load documents FileNotFoundError for a path that does not exist; a loader with
# download=True reports a failed download (no network here) as an OSError.
ALLOWED_LOAD = (*ALLOWED, OSError)


class _Hang(Exception):
    pass


@contextmanager
def _time_limit(seconds: float) -> Iterator[None]:
    def on_alarm(signum: int, frame: Any) -> None:
        raise _Hang(f"no answer within {seconds} s")

    old = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


class _Opaque:
    def __repr__(self) -> str:
        return "<opaque object>"


BAD: list[Any] = [
    None, "abc", "", -1, 0, 10**12, -(10**12), 1.5, math.nan, math.inf, -math.inf, True,
    [], {}, (1, 2), _Opaque(), b"\xff", np.float64(math.nan), np.array([[1.0, -1.0]]),
]


def _rid(v: Any) -> str:
    return type(v).__name__ + ":" + repr(v)[:20]


def _check(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any],
           allowed: tuple[type[BaseException], ...] = ALLOWED) -> str | None:
    """None if the call succeeds or fails cleanly; else a description of the failure."""
    try:
        with _time_limit(TIME_LIMIT_S):
            fn(*args, **kwargs)
    except _Hang as exc:
        return f"hang: {exc}"
    except allowed as exc:
        if not str(exc).strip():
            return f"{type(exc).__name__} with an empty message"
        return None
    except Exception as exc:  # noqa: BLE001 - the point of the test
        return f"{type(exc).__name__}: {exc}"[:300]
    return None


# ------------------------------------------------------------------------------ targets
RING = tf.topologies.ring(6)
TV = tf.topologies.random_directed(6, 2, seed=0)
PUSH = tf.topologies.random_directed_push(6, 2, seed=0)
P6 = np.eye(2)[[0, 1, 0, 1, 0, 1]]
LABELS = np.arange(60) % 3


def _spectral_targets() -> list[tuple[str, Callable[..., Any], dict[str, Any]]]:
    S = tf.spectral
    return [
        ("eigenvalues", S.eigenvalues, {"W": RING, "k": 2, "method": "auto"}),
        ("spectral_gap", S.spectral_gap, {"W": RING, "kind": "modulus", "method": "auto"}),
        ("algebraic_connectivity", S.algebraic_connectivity,
         {"topology": RING, "weighted": False, "method": "auto"}),
        ("diameter", S.diameter, {"topology": RING}),
        ("is_strongly_connected", S.is_strongly_connected, {"graph": TV, "horizon": 4}),
        ("b_connectivity", S.b_connectivity, {"tv": TV, "horizon": 4}),
        ("is_b_connected", S.is_b_connected, {"tv": TV, "B": 2, "horizon": 4}),
        ("mixing_product", S.mixing_product, {"tv": TV, "start": 0, "stop": 3}),
        ("pushsum_constants", S.pushsum_constants,
         {"tv": PUSH, "horizon": 6, "B": None, "starts": 2, "max_columns": 4}),
        ("disagreement", S.disagreement, {"tv": TV, "rounds": 3, "num_vectors": 2, "seed": 0}),
        ("consensus_rate", S.consensus_rate, {"tv": TV, "rounds": 3, "num_vectors": 2, "seed": 0}),
        ("finite_time_consensus", S.finite_time_consensus,
         {"tv": TV, "max_rounds": 3, "tol": 1e-12, "start": 0}),
        ("neighborhood_skew", S.neighborhood_skew, {"topology": RING, "label_distributions": P6}),
        ("summary", S.summary,
         {"graph": RING, "horizon": 4, "label_distributions": P6, "spectral_rounds": 2,
          "seed": 0, "method": "auto", "measured": True, "metrics": None, "progress": False}),
    ]


def _registry_targets() -> list[tuple[str, Callable[..., Any], dict[str, Any]]]:
    rng = np.random.default_rng(0)
    out = []
    for name, fam in tf.topologies.REGISTRY.items():
        kw = fam.example(8, rng)
        if kw is None:  # pragma: no cover - every family has a member on 8 nodes
            continue
        if fam.random:
            kw = {**kw, "seed": 0}
        out.append((f"topologies.{name}", fam.func, kw))
    return out


def _data_targets(tmp: Path) -> list[tuple[str, Callable[..., Any], dict[str, Any]]]:
    D = tf.data
    return [
        ("data.load", D.load, {"name": "synthetic", "n_samples": 30, "dim": 3,
                               "num_classes": 3, "seed": 0}),
        ("data.load.root", D.load, {"name": "mnist", "root": str(tmp), "download": False}),
        ("data.iid", D.iid, {"labels": LABELS, "n_clients": 3, "seed": 0, "num_classes": None}),
        ("data.shards", D.shards,
         {"labels": LABELS, "n_clients": 3, "shards_per_client": 2, "seed": 0}),
        ("data.dirichlet", D.dirichlet,
         {"labels": LABELS, "n_clients": 3, "alpha": 0.5, "min_size": 1, "seed": 0}),
        ("data.pathological", D.pathological,
         {"labels": LABELS, "n_clients": 3, "classes_per_client": 2, "seed": 0}),
        ("data.dpfl_pathological", D.dpfl_pathological,
         {"labels": LABELS, "n_clients": 3, "classes_per_client": 2, "alpha": 0.5, "seed": 0}),
        ("data.natural", D.natural,
         {"labels": LABELS, "groups": np.arange(60) % 4, "n_clients": 2, "seed": 0}),
        ("data.federate", D.federate,
         {"dataset": "digits", "scheme": "iid", "n_clients": 4, "seed": 0, "val": 0.0,
          "test": "distribute", "device": "cpu"}),
    ]


def _records_file(tmp: Path) -> Path:
    p = tmp / "run.jsonl"
    with tf.records.Recorder(p, run="r") as rec:
        rec.log_config({"rounds": 1})
        rec.log("m", 1.0, 0)
    return p


def _tensor_dataset() -> Any:
    import torch
    from torch.utils.data import TensorDataset

    return TensorDataset(torch.zeros(6, 2), torch.tensor([0, 1, 2, 0, 1, 2]))


def _other_targets(tmp: Path) -> list[tuple[str, Callable[..., Any], dict[str, Any]]]:
    return [
        ("records.load", tf.records.load, {"path": _records_file(tmp)}),
        ("Topology.from_adjacency", tf.Topology.from_adjacency,
         {"A": np.ones((4, 4)), "weights": "metropolis", "name": "a"}),
        ("Topology.from_pyg", tf.Topology.from_pyg,
         {"data": RING.to_pyg(), "weights": None, "num_nodes": 6, "name": "p"}),
        ("Dataset.from_torch", tf.data.Dataset.from_torch,
         {"train": _tensor_dataset(), "test": None, "num_classes": 3, "name": "t"}),
        ("models.build_model", tf.models.build_model,
         {"name": "logistic", "input_shape": (1, 8, 8), "num_classes": 10, "seed": 0}),
        ("models.build_model.mlp", tf.models.build_model,
         {"name": "mlp", "input_shape": (4,), "num_classes": 3, "seed": 0}),
    ]


@pytest.fixture(scope="module")
def tmpdir_module(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("fuzz")


def _all_targets(tmp: Path) -> list[tuple[str, Callable[..., Any], dict[str, Any]]]:
    return (_spectral_targets() + _registry_targets() + _data_targets(tmp)
            + _other_targets(tmp))


TARGET_IDS = [t[0] for t in _all_targets(Path("/nonexistent"))]


@pytest.mark.parametrize("target", TARGET_IDS)
def test_valid_call_works(target: str, tmpdir_module: Path) -> None:
    _, fn, kw = next(t for t in _all_targets(tmpdir_module) if t[0] == target)
    if target == "data.load.root":
        with pytest.raises(FileNotFoundError):
            fn(**kw)
        return
    with _time_limit(30):
        fn(**kw)


# Huge sizes that still end in MemoryError inside files outside this test's owner's area
# (topofl/topologies/cliques/): kept out of the sweep below
# and checked by test_known_huge_failures, which fails (strict xfail) once they are fixed.
KNOWN_HUGE = {
    ("topologies.dcliques", "steps"),
}


def _known(target: str, key: str, value: Any) -> bool:
    return (target, key) in KNOWN_HUGE and isinstance(value, int) and abs(value) > 10**6


@pytest.mark.parametrize(("target", "key"), sorted(KNOWN_HUGE))
@pytest.mark.xfail(strict=True, raises=AssertionError, reason="MemoryError in another's file")
def test_known_huge_failures(target: str, key: str, tmpdir_module: Path) -> None:
    _, fn, kw = next(t for t in _all_targets(tmpdir_module) if t[0] == target)
    problem = _check(fn, (), {**kw, key: 10**12})
    assert problem is None, problem


@pytest.mark.parametrize("target", TARGET_IDS)
def test_one_bad_argument(target: str, tmpdir_module: Path) -> None:
    _, fn, kw = next(t for t in _all_targets(tmpdir_module) if t[0] == target)
    allowed = ALLOWED_LOAD if target in ("records.load", "data.load.root") else ALLOWED
    failures = []
    for key in kw:
        for bad in BAD:
            if _known(target, key, bad):
                continue
            problem = _check(fn, (), {**kw, key: bad}, allowed)
            if problem is not None:
                failures.append(f"{key}={_rid(bad)}: {problem}")
    assert not failures, f"{target}:\n" + "\n".join(failures)


# Bad integers only (zero, negative, huge): a valid but large value such as a horizon of 10**5
# is legitimately slow and not what this test is about.
_any_bad = (
    st.sampled_from(BAD) | st.integers(max_value=0) | st.integers(min_value=10**9)
    | st.floats() | st.text(max_size=5)
)


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_random_bad_arguments(data: st.DataObject, tmpdir_module: Path) -> None:
    targets = _all_targets(tmpdir_module)
    target, fn, kw = data.draw(st.sampled_from(targets))
    keys = data.draw(st.lists(st.sampled_from(sorted(kw)), min_size=1, max_size=3, unique=True))
    bad = {k: data.draw(_any_bad) for k in keys}
    if any(_known(target, k, v) for k, v in bad.items()):
        return
    allowed = ALLOWED_LOAD if target in ("records.load", "data.load.root") else ALLOWED
    problem = _check(fn, (), {**kw, **bad}, allowed)
    assert problem is None, f"{target}({bad}): {problem}"


# ------------------------------------------------------------------------------ the fixes it found
def test_huge_horizons_are_refused_at_once() -> None:
    import time

    t0 = time.perf_counter()
    for call in (
        lambda: tf.spectral.is_strongly_connected(TV, horizon=10**12),
        lambda: tf.spectral.b_connectivity(TV, 10**12),
        lambda: tf.spectral.consensus_rate(TV, 10**12),
        lambda: tf.spectral.finite_time_consensus(TV, 10**12),
        lambda: tf.spectral.mixing_product(TV, 0, 10**12),
        lambda: tf.spectral.summary(RING, horizon=10**12),
        lambda: tf.spectral.disagreement(TV, 3, num_vectors=10**12),
    ):
        with pytest.raises(ValueError, match=r"needs about .* of memory \(estimated\)"):
            call()
    assert time.perf_counter() - t0 < 5


def test_devices_are_checked_in_one_place() -> None:
    import torch

    from topofl._validation import check_device

    assert check_device("cpu") == torch.device("cpu")
    with pytest.raises(ValueError, match="a torch device such as 'cpu' or 'cuda:0', got 'abc'"):
        tf.data.federate("digits", "iid", 2, seed=0, device="abc")
    with pytest.raises(TypeError, match="device must be a str such as 'cpu'"):
        tf.models.build_model("logistic", 4, 2, seed=0, device=1.5)
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="needs CUDA, which is not available here"):
            tf.models.build_model("logistic", 4, 2, seed=0, device="cuda")


def test_models_too_large_are_refused_before_allocation() -> None:
    with pytest.raises(ValueError, match=r"model 'logistic' with 10000000000010 parameters needs "):
        tf.models.build_model("logistic", 10**12, 10, seed=0)
    with pytest.raises(ValueError, match="cannot be built: Storage size calculation overflowed"):
        tf.models.build_model("mlp", 2**60, 3, seed=0)
