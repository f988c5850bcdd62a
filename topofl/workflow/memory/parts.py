"""The counted parts: the bytes a run holds and allocates, by part, at ``n`` clients, from
its :class:`~topofl.workflow.memory.Shapes` (:func:`counted_parts`), and the three
transient peaks of a round (the local step, the evaluation, the spectral summary:
:func:`transients`), with the closed forms of the evaluation's passes.

The constants are measured (``analysis/memory_model.md`` compares the sum with measured
peaks).
"""

from __future__ import annotations

import torch

from topofl.data.assembly import GATHER_BLOCK_VALUES
from topofl.engine.config import global_samples
from topofl.engine.evaluation import (
    EVAL_BLOCK_BYTES,
    EVAL_BLOCK_ENTRIES,
    eval_block_rows,
    eval_chunk,
    shared_block,
)
from topofl.engine.gossip import JIT_MIN_BYTES, Mixer
from topofl.engine.local import stream_rows
from topofl.records.writer import SPILL_BYTES
from topofl.spectral import DENSE_FALLBACK_MAX
from topofl.spectral.summarize import SUMMARY_DENSE_MAX as _SUMMARY_DENSE_MAX
from topofl.workflow.memory.shapes import Shapes

__all__ = ["counted_parts", "transients", "PARTS", "RUNTIME_BYTES", "CLIENT_BYTES", "ROW_BYTES",
           "HEAP_BLOCK_MAX", "SPECTRAL_DENSE_COPIES", "SPECTRAL_FIXED_BYTES",
           "SPECTRAL_NNZ_BYTES", "JIT_BYTES", "jit_bytes"]

#: The parts of a plan's peak, in the order they are reported.
PARTS = ("parameters", "optimizer", "algorithm", "gossip", "gradients", "data", "evaluation",
         "spectral", "records", "runtime")

#: The block of source rows :class:`~topofl.data.FederatedData` gathers at once while it is
#: built (its values, at most 8 bytes each).
_GATHER_BLOCK_BYTES = 8 * GATHER_BLOCK_VALUES

#: The mixer's default scratch tile (its columns hold about this many bytes).
_TILE_BYTES: int = (Mixer.__init__.__kwdefaults__ or {}).get("tile_bytes", 1 << 20)
_BAND_MIN_N: int = (Mixer.__init__.__kwdefaults__ or {}).get("band_min_n", 2048)


#: Bytes the process grows by whatever the config (code imported and initialised by a run:
#: torch's kernels, scipy, the records machinery; the allocator's arenas): the measured peak
#: growth above the resident size after ``import torch, topofl`` less the counted parts, of
#: runs of ``synthetic`` data (64 features, 20 samples a client, a ring, 2 rounds), each in a
#: fresh process (2026-11-28, two loaded cores, torch 2.13; the cases of
#: ``tests/workflow/test_memory_refusal.py``): logistic regression at 100 clients (D-SGD)
#: 22 to 32 MB over 8 processes; at 1,000, 24 to 62 MB (D-SGD 7, SGP 8), 43 to 65 MB
#: (Ditto, 3), 9 to 13 MB (Teleportation, 8); at 10,000, 20 to 97 MB (the same run's peak
#: moves by up to 73 MB from one process to the next); the MLP's counted parts exceed its
#: peaks. 44 MiB puts the estimates of those tests at 0.81 to 1.74 of their peaks (two runs of
#: each). It was 100 MiB while every run imported sympy and ``torch._dynamo`` (74 MB: 36 and
#: 38) through torch's Python meta kernels: the model's input check ran on the ``meta``
#: device, and the count of the state there
#: (:func:`~topofl.workflow.memory.shapes.state_bytes`) now stays clear of those kernels.
RUNTIME_BYTES = 44 * 2**20
#: Numba and LLVM loaded and the band kernel compiled, once a process (measured: 109 MB
#: imported, 286 MB more at the first compile; :mod:`topofl.engine._band_jit`)
JIT_BYTES = 395 * 2**20

#: Bytes per client the process holds besides the counted parts (Python objects and small
#: arrays per client: the ledger's counters, the batch sizes, the evaluation's per-client
#: lists ...): a round figure between what the runs of 10,000 clients left unexplained and
#: what those of 100,000 left over (``analysis/memory_model.md``).
CLIENT_BYTES = 512

#: Bytes of one per-client value a run without a records file holds in memory: a float64 in
#: the array of its evaluation (:class:`topofl.records.columns.ClientBlock`; 232 when they
#: were one ``dict`` a client). With ``records_path`` the values go to the client file beside
#: it as they are computed and the run holds none (:func:`~topofl.workflow.memory.shapes`
#: counts no per-client rows then); without, it holds at most
#: :data:`~topofl.records.writer.SPILL_BYTES` of them (the rest in a temporary file).
ROW_BYTES = 8

#: The dense spectral summary's working set, in ``n x n`` float64 matrices (up to
#: :data:`topofl.spectral.summarize.SUMMARY_DENSE_MAX` nodes; one matrix up to 4096 nodes,
#: where ARPACK falls back to dense LAPACK when it does not converge), and above that the
#: sparse one's: a fixed part and bytes per nonzero of ``W``. The peak the summary adds to a
#: process that holds the graph (``VmHWM``, 2026-11-24, Intel Xeon): ring 3.9 MB at 5,000
#: nodes, 3.5 MB at 10^4, 18 MB at 10^5, 137 MB at 10^6 (3 nonzeros a row); exponential
#: graph 14 MB at 10^4 (15 a row), 145 MB at 10^5 (18 a row); random 10-regular 8.0 MB at
#: 10^4 (11 a row): at most 96 bytes a nonzero above 4 MB. (The count was 4096 bytes a node
#: before, 4.1 GB at 10^6 nodes where a ring's summary adds 0.14 GB.)
SPECTRAL_DENSE_COPIES = 2
SPECTRAL_FIXED_BYTES = 4 * 10**6
SPECTRAL_NNZ_BYTES = 96


def _rows(s: Shapes, n: int) -> int:
    """Clients of one block of the local step at ``n`` clients."""
    if s.stream_rows is not None:
        return max(1, min(n, int(s.stream_rows)))
    if not s.streams:
        return n
    return stream_rows(n, s.batch_size, s.input_shape, torch.device(s.device))


#: The largest block glibc's ``malloc`` keeps in its heap once freed, on 64-bit Linux (its
#: dynamic mmap threshold, ``DEFAULT_MMAP_THRESHOLD_MAX``; larger blocks are mapped and
#: unmapped on their own).
HEAP_BLOCK_MAX = 32 << 20


def _eval_bytes(s: Shapes, n: int) -> int:
    """The peak of an evaluation (:func:`topofl.engine.evaluate`) above what the run holds:
    its largest pass, the check of the parameters (``isfinite``: ``3 + dtype_bytes`` bytes an
    entry) or their consensus distance (two ``[rows, P_shared]`` temporaries), each over one
    block of rows (:func:`topofl.engine.evaluation.row_blocks`: every row up to 1 Mi
    entries), whichever is larger.

    The passes (:func:`_eval_passes`): the local test split, the global test set and the
    validation split, each over one chunk of samples for every client, or, on a subsample of
    the global test set (``eval_global_samples``), one block of clients and samples of
    :func:`~topofl.engine.evaluation.shared_sums` (:func:`_shared_pass`)."""
    shared = s.num_params if s.shared_params < 0 else s.shared_params
    # isfinite(x_eval) of a block of rows: x == x, |x|, |x| != inf and their product (3 bytes
    # and one value an entry), freed before the distance
    check = _block_rows(n, s.num_params) * s.num_params * (3 + s.dtype_bytes)
    consensus = 2 * _block_rows(n, shared) * shared * s.dtype_bytes  # its two temporaries
    return max(*_eval_passes(s, n), check, consensus)


def _block_rows(n: int, cols: int) -> int:
    """The rows of the largest block of :func:`~topofl.engine.evaluation.row_blocks` of an
    ``[n, cols]`` tensor, counted monotone in ``n``: ``n`` in one block, else a block's rows
    and one (a lone last row joins the block before it: one row more for some ``n``, not the
    next)."""
    k = eval_block_rows(n, cols)
    return k if k == n else max(2, EVAL_BLOCK_ENTRIES // max(1, int(cols))) + 1


def _eval_passes(s: Shapes, n: int) -> tuple[int, int, int]:
    """Bytes of the evaluation's passes at ``n`` clients: ``(test, global, val)``.

    A pass over ``k`` samples a client (the chunk,
    :func:`~topofl.engine.evaluation.eval_chunk`: ``max(1, 64 MiB // (n * q))`` with ``q =
    8 * num_classes + sample_bytes``, at most the split's largest) holds, per (client,
    sample), the logits, what their loss and prediction take and the float64 sums' factors
    (``5 * num_classes + 24`` bytes: measured 70.2 and 520.7 a pair with 10 and 100 classes,
    logistic regression, one batch's temporaries freed before the next batch's logits), the
    client's input (its own split: not the global
    set, shared), and the forward pass's activations (3/4 of every leaf's output, measured
    2,406 bytes for the 64-200-200-10 MLP whose leaves hold 3,240): of every client at once
    with the batched executor, of one client a thread with the per-client loop
    (``s.loop_threads``). Its ``n * k`` pairs are counted as ``min(n * largest, max(64 MiB //
    q, n))``, their most (``n * k`` itself is not monotone in ``n``: 3 samples for ``n``
    clients, 2 for ``n + 1``).

    On a subsample of the global test set without a ``predict`` hook, the global pass is
    :func:`~topofl.engine.evaluation.shared_sums`' (:func:`_shared_pass`).
    """
    C = s.num_classes
    q = 8 * C + s.sample_bytes
    chunk = eval_chunk(n, C, s.sample_bytes)
    act = 3 * s.activation_bytes // 4
    per = 5 * C + 24

    def chunked(largest: int, inputs: int) -> int:
        pairs = min(n * largest, max(EVAL_BLOCK_BYTES // max(1, q), n))
        if not s.loop_threads:
            return pairs * (per + inputs + act)
        # the per-client loop: the activations of one client a thread, on its chunk
        return pairs * (per + inputs) + min(n, s.loop_threads) * min(chunk, largest) * act

    scored = global_samples(s.eval_global_samples, n, s.global_test)  # a subsample at scale
    if 0 < scored < s.global_test and not s.predicts:
        glob = sum(_shared_pass(s, n, scored))
    else:
        glob = chunked(scored, 0)
    return chunked(s.longest_test, s.sample_bytes), glob, chunked(s.longest_val, s.sample_bytes)


def _shared_pass(s: Shapes, n: int, scored: int) -> tuple[int, int]:
    """``(live, heap)``: bytes :func:`~topofl.engine.evaluation.shared_sums` allocates at its
    peak, scoring ``n`` clients on the same ``scored`` samples, and those the allocator keeps
    besides.

    It scores one block of ``rows`` clients x ``cols`` samples at a time
    (:func:`~topofl.engine.evaluation.shared_block`), whatever ``n``. Per (client, sample),
    the batched executor holds the previous block's logits beside the forward pass (its
    activations and its output; or its output, the executor's copy and the previous block's
    logits: ``3 * num_classes`` values at least), and the reduction's rows (an int64
    prediction and the log-sum-exp's largest logit and sum: 16 bytes); the per-client loop
    holds the previous block's logits and the clients' outputs beside one client's
    activations a thread, or beside the outputs' stacked copy, and the reduction's 16 bytes
    a pair.

    The blocks of logits come and go at every block: one of at most :data:`HEAP_BLOCK_MAX`
    is then reused from glibc's heap, which keeps up to twice that block free at its top
    (``M_TRIM_THRESHOLD`` follows twice the mmap threshold, which a freed block raises to its
    size): ``heap`` is two blocks of logits, else 0. Measured at 10,000 logistic-regression
    clients (40 inputs, 10 classes, 2,000 samples): 74.5 MB of torch allocations (``live``:
    76.7 MB), and a resident peak above the pass's start of 81 to 212 MB over six runs.
    """
    C, d = s.num_classes, s.dtype_bytes
    act = 3 * s.activation_bytes // 4
    rows, cols = shared_block(scored, C)
    r = min(n, rows)
    logits = r * cols * C * d  # one block of logits
    if s.loop_threads:
        live = max(2 * logits + min(r, s.loop_threads) * cols * act, 3 * logits) + r * cols * 16
    else:
        live = r * cols * (max(act + C * d, 3 * C * d) + 16)
    return live, 2 * logits if logits <= HEAP_BLOCK_MAX else 0


def counted_parts(s: Shapes, n: int | None = None) -> dict[str, int]:
    """The counted parts (bytes) for ``n`` clients (default ``s.n``); data as built for
    ``s.n`` (its size depends on the dataset and the partition, not on ``n``).

    * ``parameters``, ``optimizer``, ``algorithm``: the state, ``n`` times its bytes a client;
    * ``gossip``: the topology's ``W`` (scipy CSR: float64 values and int64 indices), the
      mixer's torch copy (dense for ``n <= 8``, else CSR with int32 indices) and its diagonal,
      and the mixer's scratch tile (on a GPU, the product ``W @ X``: one ``[n, P]`` buffer);
    * ``gradients``: the local step's buffers (the batch of one block of clients, and its
      gradient rows when the update is not fused) and its temporaries: the block's gradient
      rows from autograd (or the closed form), its activations (autograd keeps 7/5 of the
      forward's) and every client's int64 sample indices;
    * ``data``: the federated samples, every client's int64 sample indices, label counts and
      offsets; before the state exists, loading the dataset (``s.load_bytes``), then the
      dataset's arrays and one block of its rows gathered while it is split: when that is
      the larger peak, ``data`` holds the excess;
    * ``evaluation``: its largest pass, the check of the parameters or their consensus
      distance, whichever is larger (:func:`_eval_bytes`);
    * ``spectral``: the spectral summary of a static graph (dense up to 1024 nodes);
    * ``records``: the per-client rows the records keep in memory (at the end of the run);
    * ``runtime`` (static estimate only, ``s.runtime``): :data:`RUNTIME_BYTES` and
      :data:`CLIENT_BYTES` a client.

    The local step's temporaries, the evaluation's and the spectral summary's come one after
    the other, yet are added up: blocks freed by one stay resident in the allocator's heap
    (glibc keeps freed blocks below its mmap threshold, up to 32 MiB), so that the peak of a
    run is close to their sum (``analysis/memory_model.md``: a bound taken as their largest
    fell to 0.67 of the measured peak).

    Examples
    --------
    >>> s = Shapes(n=100, num_params=650, dtype_bytes=4, sample_bytes=256, num_classes=10,
    ...            batch_size=16, input_shape=(1, 8, 8), per_client_state={"parameters": 2600,
    ...            "optimizer": 0, "algorithm": 0}, dataset_bytes=0, data_bytes=0,
    ...            longest_test=4, w_row_nnz=3.0)
    >>> counted_parts(s)["parameters"] == 100 * 650 * 4
    True
    """
    n = s.n if n is None else n
    rows = _rows(s, n)
    st = s.per_client_state
    P, d = s.num_params, s.dtype_bytes
    gossip = 0
    if s.w_row_nnz:
        nnz = int(min(float(n), s.w_row_nnz) * n)
        # the Topology's scipy CSR: as held when known, else float64 values, int64 indices
        topo_w = (int(s.w_row_bytes * n) if s.w_row_bytes else nnz * 16 + (n + 1) * 8)
        torch_w = n * n * d if n <= 8 else nnz * (d + 4) + (n + 1) * 4
        if s.device.startswith("cpu"):
            tile = max(32, _TILE_BYTES // max(1, n * d))  # the mixer scratch's columns
            scratch = min(n * P, n * tile) * d
        else:
            scratch = n * P * d
        gossip = topo_w + torch_w + n * d + scratch + jit_bytes(s, n)
    buffers = rows * ((0 if s.fused else P * d) + s.batch_size * (s.sample_bytes + 8))
    data = _data_held(s, n)
    local, evaluation, spectral = transients(s, n)
    out = {"parameters": n * st["parameters"], "optimizer": n * st["optimizer"],
           "algorithm": n * st["algorithm"], "gossip": gossip, "gradients": buffers + local,
           "data": data, "evaluation": evaluation, "spectral": spectral,
           "records": min(n * s.client_rows * s.evaluations * ROW_BYTES, SPILL_BYTES)}
    # before the state exists: loading the dataset, then splitting it (the dataset's arrays,
    # the samples of every client written into one array, and one block of rows gathered
    # from the source before its cast): the peak when larger
    built = max(s.load_bytes, data + s.dataset_bytes + min(s.data_bytes, _GATHER_BLOCK_BYTES))
    out["data"] += max(0, built - sum(out.values()))
    if s.runtime:
        out["runtime"] = RUNTIME_BYTES + CLIENT_BYTES * n
    return out


def jit_bytes(s: Shapes, n: int) -> int:
    """:data:`JIT_BYTES` where the run's gossip takes the compiled band kernel (a band plan,
    on the CPU, from the mixer's ``band_min_n`` clients and its 1 GiB buffer), else 0.

    Examples
    --------
    >>> from topofl.workflow.memory.parts import jit_bytes
    >>> s = Shapes(n=10**6, num_params=650, dtype_bytes=4, sample_bytes=256, num_classes=10,
    ...            batch_size=16, input_shape=(64,), per_client_state={}, dataset_bytes=0,
    ...            data_bytes=0, longest_test=4, w_row_nnz=3.0, band=True)
    >>> jit_bytes(s, 10**6) == JIT_BYTES, jit_bytes(s, 10**5)  # 2.6 GB, then 260 MB of X
    (True, 0)
    """
    if not (s.band and s.device.startswith("cpu") and n >= _BAND_MIN_N):
        return 0
    return JIT_BYTES if n * s.num_params * s.dtype_bytes >= JIT_MIN_BYTES else 0


def _data_held(s: Shapes, n: int) -> int:
    """The data a run holds: the federated samples, every client's int64 sample indices,
    label counts (three splits) and offsets."""
    return s.data_bytes + 8 * s.samples + n * (24 * s.num_classes + 48)


def transients(s: Shapes, n: int | None = None) -> tuple[int, int, int]:
    """Bytes of the three peaks that follow each other in a round, above what the run holds:
    the local step's temporaries, the evaluation's (:func:`_eval_bytes`) and the spectral
    summary's (:func:`counted_parts` adds them up)."""
    n = s.n if n is None else n
    rows = _rows(s, n)
    act_rows = min(rows, s.loop_threads) if s.loop_threads else rows
    if s.moving:  # every row's forward pass without a graph (the evaluation's 3/4 of the
        # activations); a few rows' gradients, counted in the buffers
        local = act_rows * s.batch_size * (3 * s.activation_bytes // 4) + n * s.batch_size * 8
    else:
        local = (rows * s.num_params * s.dtype_bytes
                 + act_rows * s.batch_size * (7 * s.activation_bytes // 5)
                 + n * s.batch_size * 8)
    spectral = 0
    if s.spectral:
        if n <= _SUMMARY_DENSE_MAX:
            spectral = SPECTRAL_DENSE_COPIES * n * n * 8
        elif n <= DENSE_FALLBACK_MAX:  # ARPACK, or dense LAPACK where it does not converge
            spectral = n * n * 8
        else:
            spectral = (SPECTRAL_FIXED_BYTES
                        + SPECTRAL_NNZ_BYTES * int(min(float(n), s.w_row_nnz or 3.0) * n))
    return local, _eval_bytes(s, n), spectral
