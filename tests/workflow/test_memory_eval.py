"""The memory model's evaluation part against what the evaluation allocates.

The closed forms of :mod:`topofl.workflow.memory.parts` (:func:`_eval_passes`,
:func:`_shared_pass`) are compared with the peak of the torch allocations of the evaluation's
own passes, measured with the profiler's allocation events (the allocator's requests: the same
on every run of one torch version, unlike the resident size, which glibc's heap makes vary from
run to run).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import pytest
import torch
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from topofl.engine import ParamLayout
from topofl.engine.config import global_samples
from topofl.engine.evaluation import eval_chunk, score_chunks, shared_block, shared_sums
from topofl.engine.executors import make_executor
from topofl.models import build_model
from topofl.workflow.memory import Shapes, activation_bytes, counted_parts
from topofl.workflow.memory.parts import (
    HEAP_BLOCK_MAX,
    _eval_bytes,
    _eval_passes,
    _shared_pass,
)

#: The model counts at least what the pass allocates and at most this much more (it counts
#: every temporary of a pair at once, and the int64 predictions beside the blocks of logits).
OVER = 1.15


def _torch_peak(fn: Callable[[], object]) -> int:
    """Bytes: the peak of torch's allocations while ``fn`` runs, above those at its start."""
    try:
        from torch._C._profiler import _EventType
    except ImportError:  # pragma: no cover - another torch: no allocation events to read
        pytest.skip("torch's profiler has no allocation events here")
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU],
                                profile_memory=True) as prof:
        fn()
    events, todo = [], list(prof.profiler.kineto_results.experimental_event_tree())
    while todo:
        e = todo.pop()
        if e.tag == _EventType.Allocation:
            events.append((e.start_time_ns, int(e.extra_fields.alloc_size)))
        todo.extend(e.children)
    cur = top = 0
    for _, size in sorted(events):
        cur += size
        top = max(top, cur)
    return top


def _setup(name: str, shape: tuple[int, ...], kind: str, m: int, samples: int,
           **model_params: object) -> tuple[object, torch.Tensor, torch.Tensor, torch.Tensor,
                                            Shapes]:
    """An executor, ``m`` clients' parameters, ``samples`` shared samples and the
    :class:`Shapes` the model reads."""
    torch.manual_seed(0)  # the test's own numbers; the library never seeds
    model = build_model(name, shape, 10, seed=0, **model_params)
    layout = ParamLayout.from_model(model)
    executor = make_executor(kind, model, layout, torch.device("cpu"))
    x_eval = 0.1 * torch.randn(m, layout.num_params)
    x = torch.randn(samples, *shape)
    y = torch.arange(samples) % 10
    sample_bytes = 4 * int(torch.tensor(shape).prod())
    s = Shapes(n=m, num_params=layout.num_params, dtype_bytes=4, sample_bytes=sample_bytes,
               num_classes=10, batch_size=1, input_shape=shape,
               per_client_state={"parameters": 0, "optimizer": 0, "algorithm": 0},
               dataset_bytes=0, data_bytes=0, longest_test=0, w_row_nnz=0.0,
               activation_bytes=activation_bytes(model, shape),
               loop_threads=1 if kind == "loop" else 0)
    return executor, x_eval, x, y, s


@pytest.mark.parametrize(("name", "shape", "kind", "m", "samples", "params"), [
    ("logistic", (40,), "batched", 300, 512, {}),
    ("mlp", (40,), "batched", 100, 512, {"hidden": (64, 64)}),
    ("mlp", (40,), "loop", 20, 512, {"hidden": (64, 64)}),
    ("gn_lenet", (3, 32, 32), "loop", 4, 64, {}),
])
def test_shared_pass_counts_what_shared_sums_allocates(
        name: str, shape: tuple[int, ...], kind: str, m: int, samples: int,
        params: dict[str, object]) -> None:
    # the global subsample's pass: blocks of clients x samples (two full blocks of 256
    # samples each for 512: the previous block's logits beside a full one)
    ex, x_eval, x, y, s = _setup(name, shape, kind, m, samples, **params)
    torch.set_num_threads(1)
    shared_sums(ex, x_eval, x[:4], y[:4])  # the input check and the kernels' first call
    measured = _torch_peak(lambda: shared_sums(ex, x_eval, x, y))
    live, heap = _shared_pass(s, m, samples)
    assert measured <= live <= OVER * measured, (measured, live)
    rows, cols = shared_block(samples, 10)
    logits = min(m, rows) * cols * 10 * 4
    assert heap == (2 * logits if logits <= HEAP_BLOCK_MAX else 0)
    # and it is the global pass of the evaluation on a subsample of a larger set
    sub = replace(s, global_test=samples + 1, eval_global_samples=samples)
    assert _eval_passes(sub, m)[1] == live + heap


@pytest.mark.parametrize(("name", "shape", "kind", "m", "samples"), [
    ("gn_lenet", (3, 32, 32), "loop", 8, 200),  # one chunk of 200 samples
    ("logistic", (40,), "batched", 1000, 2000),  # chunks of 279 samples
])
def test_global_pass_counts_what_score_chunks_allocates(
        name: str, shape: tuple[int, ...], kind: str, m: int, samples: int) -> None:
    # the whole global test set, every client on the same chunk of samples: the per-client
    # loop holds one client's activations (a thread), not every client's
    ex, x_eval, x, y, s = _setup(name, shape, kind, m, samples)
    torch.set_num_threads(1)
    chunk = eval_chunk(m, 10, s.sample_bytes)

    def run() -> None:
        batches = ((x[a:a + chunk], y[a:a + chunk], None) for a in range(0, samples, chunk))
        score_chunks(ex, x_eval, batches, m, shared=True)

    run()
    measured = _torch_peak(run)
    counted = _eval_passes(replace(s, global_test=samples, eval_global_samples="all"), m)[1]
    assert measured <= counted <= OVER * measured, (measured, counted)


def test_loop_counts_the_activations_of_one_client_a_thread() -> None:
    # GN-LeNet on 3 x 32 x 32 inputs, 50 clients scored on 355 global samples (chunks of
    # 108): the batched executor's count holds every client's activations, the loop's one
    # client's (the closed form, by hand)
    model = build_model("gn_lenet", (3, 32, 32), 10, seed=0)
    act = activation_bytes(model, (3, 32, 32))
    s = Shapes(n=50, num_params=1, dtype_bytes=4, sample_bytes=3 * 32 * 32 * 4,
               num_classes=10, batch_size=16, input_shape=(3, 32, 32),
               per_client_state={"parameters": 0, "optimizer": 0, "algorithm": 0},
               dataset_bytes=0, data_bytes=0, longest_test=0, w_row_nnz=0.0,
               activation_bytes=act, global_test=355)
    q = 8 * 10 + 3 * 32 * 32 * 4  # the chunk's bytes a pair: 64 MiB // (50 * q) samples
    assert eval_chunk(50, 10, 3 * 32 * 32 * 4) == (64 << 20) // (50 * q) == 108
    pairs = (64 << 20) // q  # 5,426: the most pairs of a chunk near 50 clients (50 x 108 here)
    per = 5 * 10 + 24
    assert _eval_passes(s, 50)[1] == pairs * (per + 3 * act // 4)
    for threads in (1, 2):
        loop = replace(s, loop_threads=threads)
        assert _eval_passes(loop, 50)[1] == pairs * per + threads * 108 * (3 * act // 4)


_SIZES = st.tuples(st.integers(1, 400), st.integers(1, 400)).map(sorted)


@settings(max_examples=200, deadline=None)
@given(ns=_SIZES, classes=st.integers(2, 100), inputs=st.integers(8, 4096),
       act=st.integers(0, 10**6), params=st.integers(1, 10**5),
       tests=st.integers(0, 300), global_test=st.integers(0, 10**5),
       subsample=st.sampled_from(["auto", "all", 1000]), scale=st.integers(1, 1000))
def test_evaluation_part_is_monotone_in_n(ns: list[int], classes: int, inputs: int, act: int,
                                          params: int, tests: int, global_test: int,
                                          subsample: int | str, scale: int) -> None:
    # the batched executor's evaluation part, and the whole count (the local step
    # unstreamed), never fall as n grows (what max_clients' bisection relies on): n and n' in
    # [1, 400] times a scale (up to 400,000 clients); inputs of 8 floats at least (the shared
    # pass then holds at least the whole set's pairs where the subsample starts)
    n1, n2 = (v * scale for v in ns)
    # across the switch to a subsample of the global set the count may fall: the shared
    # pass holds 8 bytes and 1-3 logits a pair where the whole set's chunks hold 8 C + 48
    # (found by the ci profile at 1,000 -> 4,000 clients, 5,001 -> 5,000 samples): compare
    # two sizes on one side of it
    whole_set = [global_samples(subsample, m, global_test) >= global_test for m in (n1, n2)]
    assume(whole_set[0] == whole_set[1])
    s = Shapes(n=n1, num_params=params, dtype_bytes=4, sample_bytes=4 * inputs,
               num_classes=classes, batch_size=16, input_shape=(inputs,),
               per_client_state={"parameters": 4 * params, "optimizer": 0, "algorithm": 0},
               dataset_bytes=0, data_bytes=0, longest_test=tests, w_row_nnz=3.0,
               activation_bytes=act, global_test=global_test,
               eval_global_samples=subsample, longest_val=tests // 2)
    assert _eval_bytes(s, n1) <= _eval_bytes(s, n2)
    if n1 > 8:  # the mixer's W is dense up to 8 clients; the local step over every client
        # (a streamed block's rows follow n, up and down)
        whole = replace(s, streams=False)
        assert sum(counted_parts(whole, n1).values()) <= sum(counted_parts(whole, n2).values())


def test_plan_of_gn_lenet_counts_the_loop() -> None:
    # analysis/plan_accuracy.py's GN-LeNet config: the loop executor on the CPU
    from topofl.workflow.plan import make_plan

    cfg = {"algorithm": "dsgd", "topology": "ring", "data": "digits32rgb", "n_clients": 50,
           "model": "gn_lenet", "rounds": 10, "lr": 0.05, "batch_size": 16, "eval_every": 5}
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        plan = make_plan(cfg, timed=False, probe=False, available=None)
    finally:
        torch.set_num_threads(before)
    act = 3 * 317_352 // 4  # GN-LeNet's activations a sample (3/4 of its leaves' outputs)
    # the global test set (355 samples) in chunks of 108: the scores of the most pairs of a
    # chunk (64 MiB // (8 * 10 + 12,288) = 5,426), one client's activations; it was 1,286 MB
    # with every client's activations (analysis/plan_accuracy.md, before)
    assert plan.parts["evaluation"] == 5_426 * (5 * 10 + 24) + 108 * act == 26_107_036


@pytest.mark.parametrize("family", ["ring", "exponential"])
def test_sparse_spectral_part_bounds_what_the_summary_allocates(family: str) -> None:
    """Above the dense sizes the spectral summary's count (a fixed part and bytes a nonzero of
    ``W``) holds what :func:`topofl.spectral.summary` allocates (numpy and scipy's arrays, as
    ``tracemalloc`` sees them) and is not far above it (its old count, 4096 bytes a node,
    was 8-20x these)."""
    import tracemalloc

    import topofl as tf
    from topofl.spectral import summary
    from topofl.workflow.memory import transients

    n = 20_000
    g = getattr(tf.topologies, family)(n)
    nnz = g.W.nnz
    tracemalloc.start()
    try:
        summary(g)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    s = Shapes(n=n, num_params=10, dtype_bytes=4, sample_bytes=4, num_classes=2, batch_size=1,
               input_shape=(1,), per_client_state={"parameters": 40, "optimizer": 0,
                                                    "algorithm": 0},
               dataset_bytes=0, data_bytes=0, longest_test=1, w_row_nnz=nnz / n, spectral=True)
    counted = transients(s)[2]
    assert peak <= counted <= 3 * peak + 4 * 10**6, (family, peak, counted)
