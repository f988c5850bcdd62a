"""The exchange of peer rows (``Shard.fetch``, ``Shard.all_rows``) on 2 and 3 gloo ranks,
against the slow obvious reference: build the whole ``[n, ...]`` tensor, index it."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch

from tests.distributed._launch import launch
from topofl.distributed import World
from topofl.distributed.comm import Shard
from topofl.distributed.placement import Placement

N = 11


def _owner(k: int) -> np.ndarray:
    # scrambled owners: a rank's clients are not one block of ids
    return np.random.default_rng(k).permutation(np.arange(N) % k).astype(np.int64)


def _whole(seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The reference tensors every rank can rebuild: float rows [N, 2, 3], int rows [N]."""
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(N, 2, 3, generator=g, dtype=torch.float64),
            torch.randint(0, 100, (N,), generator=g))


def _wants(rank: int, k: int) -> list[np.ndarray]:
    """The ids each rank asks for, in several calls: repeats, own rows, nothing, everything."""
    rng = np.random.default_rng([rank, k])
    return [rng.integers(0, N, size=7), np.zeros(0, np.int64), np.arange(N)[::-1].copy(),
            np.flatnonzero(_owner(k) == rank), rng.integers(0, N, size=rank + 1)]


def _ranks(rank: int, k: int) -> dict[str, Any]:
    shard = Shard(World(rank, k, "gloo", torch.device("cpu"), 30.0), Placement(_owner(k), k,
                                                                             "test"))
    a, b = _whole(0)
    la, lb = a[shard.rows], b[shard.rows]
    out: dict[str, Any] = {"fetch": [], "bytes": []}
    for want in _wants(rank, k):
        before = shard.bytes_sent
        fa, fb = shard.fetch(want, la, lb)
        out["fetch"].append((want, fa.numpy(), fb.numpy()))  # tensors do not cross the queue
        out["bytes"].append(shard.bytes_sent - before)
    out["all"] = shard.all_rows(la).numpy()
    out["single"] = shard.fetch([3], la)[0].numpy()
    return out


@pytest.mark.parametrize("k", [2, 3])
def test_fetch_and_all_rows_equal_indexing_the_whole_tensor(k: int) -> None:
    res = launch(k, _ranks, k, timeout=30.0, wait=120.0)
    assert all(s == "ok" for s, _ in res.values()), res
    a, b = _whole(0)
    owner = _owner(k)
    for r in range(k):
        got = res[r][1]
        for want, fa, fb in got["fetch"]:
            assert fa.shape == (want.size, 2, 3) and fb.shape == (want.size,)
            assert np.array_equal(fa, a.numpy()[want]) and np.array_equal(fb, b.numpy()[want])
        assert np.array_equal(got["all"], a.numpy())
        assert np.array_equal(got["single"], a.numpy()[[3]])
    # each call sends every distinct (row, asking rank) pair once, nothing for own rows
    row_bytes = 2 * 3 * 8 + 8  # one float64 [2, 3] row and one int64 entry
    for call in range(len(_wants(0, k))):
        pairs = {(int(j), r) for r in range(k) for j in _wants(r, k)[call] if owner[j] != r}
        assert sum(res[r][1]["bytes"][call] for r in range(k)) == len(pairs) * row_bytes


def _bad(rank: int, k: int) -> str:
    shard = Shard(World(rank, k, "gloo", torch.device("cpu"), 30.0), Placement(_owner(k), k,
                                                                             "test"))
    msgs = []
    for call in (lambda: shard.fetch([N], torch.zeros(shard.m)),
                 lambda: shard.fetch([0], torch.zeros(shard.m + 1)),
                 lambda: shard.all_rows(torch.zeros(shard.m + 1))):
        try:
            call()
        except ValueError as exc:
            msgs.append(str(exc))
    return " | ".join(msgs)


def test_bad_requests_are_refused_before_any_collective() -> None:
    res = launch(2, _bad, 2, timeout=30.0, wait=60.0)
    msg = res[0][1]
    assert "ids must be client ids in [0, 10]" in msg
    assert msg.count("rows, got shape") == 2


# ----------------------------------------------------------------------------- cross_losses
def _services(shard: Shard | None) -> tuple[Any, torch.Tensor]:
    """Services over all clients (``shard=None``) or one rank's, and the rows they hold of the
    same ``[N, P]`` models."""
    import topofl as tf
    from topofl.distributed.data import ShardData
    from topofl.distributed.mixer import ShardMixer
    from topofl.engine import ParamLayout
    from topofl.engine.executors import BatchedExecutor
    from topofl.engine.gossip import Mixer
    from topofl.engine.services import DataServices

    data = tf.data.federate("digits", "dirichlet", N, alpha=1.0, seed=0)
    model = tf.models.build_model("mlp", data.input_shape, data.num_classes, seed=0,
                                  hidden=(4,)).double()
    layout = ParamLayout.from_model(model)
    x = torch.randn(N, layout.num_params, generator=torch.Generator().manual_seed(1),
                    dtype=torch.float64) * 0.3
    ex = BatchedExecutor(model, layout)
    if shard is None:
        return DataServices(layout, Mixer(torch.device("cpu"), torch.float64), ex, data, 5), x
    env = DataServices(layout, ShardMixer(shard, torch.float64), ex,
                       ShardData(data, shard.clients), 5, shard)
    return env, x[shard.rows]


def _peers() -> torch.Tensor:
    return torch.as_tensor(np.random.default_rng(3).integers(0, N, size=(N, 3)))


def _cross(rank: int, k: int) -> list[Any]:
    shard = Shard(World(rank, k, "gloo", torch.device("cpu"), 30.0), Placement(_owner(k), k,
                                                                             "test"))
    env, x = _services(shard)
    return [shard.clients.tolist(),
            env.cross_losses(x, _peers()[shard.rows], t=2, stream=1).numpy()]


@pytest.mark.parametrize("k", [2, 3])
def test_cross_losses_on_a_rank_equal_the_single_process_rows(k: int) -> None:
    env, x = _services(None)
    whole = env.cross_losses(x, _peers(), t=2, stream=1).numpy()
    res = launch(k, _cross, k, timeout=30.0, wait=120.0)
    assert all(s == "ok" for s, _ in res.values()), res
    seen = []
    for r in range(k):
        clients, got = res[r][1]
        np.testing.assert_allclose(got, whole[clients], rtol=1e-12, atol=1e-12)
        seen += clients
    assert sorted(seen) == list(range(N))
