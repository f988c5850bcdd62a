"""Evaluation scores, in each padded batch, only the clients with a real sample in it
(:func:`topofl.engine.scoring.live_rows`): the same sums as scoring every client's rows.

The reference is the obvious pass: every batch scored for every client, padding included
(``live_rows`` patched to say "every client"), for the executors that compute a client's logits
alike whatever the other clients of the call (``rows_independent``: the per-client loop, the
batched executor of a linear stack on the CPU); the others (cnn1d's batched convolutions, whose
float32 logits moved in their last bits when scored on some clients) score every row, as
before. Stated tolerance: float64 bit for bit; float32 within ``1e-6`` of the largest sum
(measured: bit for bit with this AVX-512 machine's kernels, which the committed results ran;
under ATen's default kernels, ``ATEN_CPU_CAPABILITY=default``, logistic regression and the MLP
moved by 2e-9 and 5e-9 of the largest sum, batched products of another number of clients).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import topofl as tf
from topofl.engine import ParamLayout, evaluation, scoring
from topofl.engine.evaluation import split_sums
from topofl.engine.executors import BatchedExecutor, LoopExecutor
from topofl.engine.layout import init_parameters


def _all_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(scoring, "live_rows", lambda mask: None)


class _Data:
    """Clients' own padded batches from per-client sample counts (the shape of
    ``FederatedData.eval_batches``)."""

    def __init__(self, sizes: list[int], shape: tuple[int, ...], seed: int,
                 dtype: torch.dtype = torch.float32) -> None:
        g = torch.Generator().manual_seed(seed)
        self.sizes_ = np.asarray(sizes)
        self.num_classes, self.input_shape = 10, shape
        top = max(1, max(sizes))
        self.x = torch.randn(len(sizes), top, *shape, generator=g, dtype=dtype)
        self.y = torch.randint(0, 10, (len(sizes), top), generator=g)
        self.mask = torch.arange(top).unsqueeze(0) < torch.as_tensor(sizes).unsqueeze(1)
        self.x[~self.mask] = 0.0
        self.y[~self.mask] = 0

    def sizes(self, split: str) -> np.ndarray:
        return self.sizes_

    def eval_batches(self, split: str, batch_size: int) -> Any:
        from types import SimpleNamespace as NS
        for a in range(0, self.x.shape[1], batch_size):
            yield NS(x=self.x[:, a:a + batch_size], y=self.y[:, a:a + batch_size],
                     mask=self.mask[:, a:a + batch_size])


CASES = [("logistic", (40,), "batched"), ("mlp", (40,), "batched"), ("mlp", (40,), "loop"),
         ("cnn1d", (1, 40), "batched"), ("gn_lenet", (3, 32, 32), "loop")]


@pytest.mark.parametrize(("name", "shape", "kind"), CASES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_live_rows_give_every_clients_sums(name: str, shape: tuple[int, ...], kind: str,
                                           dtype: torch.dtype,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    if name == "gn_lenet" and dtype == torch.float64:
        pytest.skip("one dtype is enough for the slow convolutional case")
    model = tf.models.build_model(name, shape, 10, seed=0).to(dtype)
    layout = ParamLayout.from_model(model)
    sizes = [1, 0, 23, 5, 40, 7] if name != "gn_lenet" else [1, 0, 9, 3]
    n = len(sizes)
    flat = init_parameters(model, layout, n, seed=0, same=False, device=torch.device("cpu"),
                           dtype=dtype)
    ex = BatchedExecutor(model, layout) if kind == "batched" else LoopExecutor(model, layout)
    assert scoring.rows_independent(ex, torch.device("cpu")) is (name != "cnn1d")
    data = _Data(sizes, shape, seed=1, dtype=dtype)
    fast = split_sums(ex, flat, data, "test", chunk=4)
    assert scoring.live_rows(data.mask[:, 36:40]) is not None  # the case skips clients
    _all_rows(monkeypatch)
    slow = split_sums(ex, flat, data, "test", chunk=4)
    assert torch.equal(fast[:, 2], torch.as_tensor(sizes, dtype=torch.float64))
    if dtype == torch.float64 or name == "cnn1d":  # cnn1d: the same pass, every row
        assert torch.equal(fast, slow)
    else:
        assert float((fast - slow).abs().max()) <= 1e-6 * float(slow.abs().max())


@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(0, 12), min_size=1, max_size=7), st.integers(1, 6))
def test_any_sizes_and_chunks(sizes: list[int], chunk: int) -> None:
    """float64 logistic regression: bit for bit against scoring every row, whatever the
    clients' sizes and the chunk."""
    model = tf.models.build_model("logistic", (5,), 10, seed=0).double()
    layout = ParamLayout.from_model(model)
    flat = init_parameters(model, layout, len(sizes), seed=0, same=False,
                           device=torch.device("cpu"), dtype=torch.float64)
    ex = BatchedExecutor(model, layout)
    data = _Data(sizes, (5,), seed=2, dtype=torch.float64)
    fast = split_sums(ex, flat, data, "test", chunk=chunk)
    with pytest.MonkeyPatch.context() as mp:
        _all_rows(mp)
        slow = split_sums(ex, flat, data, "test", chunk=chunk)
    assert torch.equal(fast, slow)


def test_a_hook_without_rows_sees_every_client() -> None:
    seen: list[int] = []

    def hook(inputs: torch.Tensor, logits: torch.Tensor, shared: bool) -> torch.Tensor:
        seen.append(int(logits.shape[0]))
        return logits

    def with_rows(inputs: torch.Tensor, logits: torch.Tensor, shared: bool,
                  rows: torch.Tensor | None = None) -> torch.Tensor:
        seen.append(-int(logits.shape[0]))
        assert rows is None or rows.numel() == logits.shape[0]
        return logits

    model = tf.models.build_model("logistic", (5,), 10, seed=0)
    layout = ParamLayout.from_model(model)
    flat = init_parameters(model, layout, 3, seed=0, same=False, device=torch.device("cpu"),
                           dtype=torch.float32)
    data = _Data([1, 6, 2], (5,), seed=0)
    ex = BatchedExecutor(model, layout)
    a = split_sums(ex, flat, data, "test", chunk=2, adjust=hook)
    assert seen == [3, 3, 3]
    seen.clear()
    b = split_sums(ex, flat, data, "test", chunk=2, adjust=with_rows)
    assert seen == [-3, -1, -1]  # batch 0: all three; batches 1, 2: only the client of 6
    assert torch.equal(a, b)


def test_knn_per_runs_the_same_with_and_without_live_rows(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """kNN-Per's hook takes ``rows``; its queries are sliced for the run's clients, so the
    records of a run with unequal test splits are those of scoring every row (float64)."""
    data = tf.data.federate("digits", "dirichlet", 6, seed=0, val=0.2, alpha=0.3)
    assert len(set(data.sizes("test").tolist())) > 1
    # chunks of 5 samples a client (the default would score every split in one chunk)
    monkeypatch.setattr(evaluation, "EVAL_BLOCK_BYTES", 5 * 6 * (10 * 8 + 4 * 64))
    skipped = []
    live = scoring.live_rows

    def spy(mask: torch.Tensor) -> torch.Tensor | None:
        rows = live(mask)
        skipped.append(rows is not None)
        return rows

    monkeypatch.setattr(scoring, "live_rows", spy)

    def run() -> list[tuple[Any, ...]]:
        res = tf.run(tf.algorithms.knn_per(lr=0.1, k=3, local_steps=2), None, data, "mlp",
                     2, seed=0, dtype="float64", batch_size=8, progress=False,
                     eval_val=True, record_clients=True, eval_every=1)
        return [(r["round"], r["metric"], r["value"]) for r in res.records.rows
                if r["metric"] != "wall_time"]

    fast = run()
    assert any(skipped)  # some chunks scored only some clients
    _all_rows(monkeypatch)
    assert fast == run()
