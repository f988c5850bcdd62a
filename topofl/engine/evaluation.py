"""Scoring every client's model, the divergence guard (:class:`Divergence`, written in
``topofl/engine/_evaluation_divergence.py``), and the graph rows of the records."""

from __future__ import annotations

import functools
import math
from typing import Any, NamedTuple

import numpy as np
import torch
from torch import Tensor

from topofl._utils.rng import as_generator
from topofl.engine._evaluation_divergence import Divergence, nonfinite_parameters_error
from topofl.engine._evaluation_divergence import nonfinite_loss_error as nonfinite_loss_error
from topofl.engine.clients import Clients, first_bad
from topofl.engine.config import RunConfig, global_samples
from topofl.engine.local import row_runs
from topofl.engine.objectives import objective_of
from topofl.engine.protocol import Adjust, Algorithm, Round, Services, State
from topofl.engine.scoring import rows_independent, score_chunks, takes_rows
from topofl.graph import Topology
from topofl.records import Recorder
from topofl.spectral import summary

__all__ = ["evaluate", "check_finite", "evaluation_row", "EvalSums", "score_chunks",
           "eval_chunk", "split_sums", "check_eval_val", "record_realized", "spectral_row",
           "Divergence", "global_subsample", "global_scored", "shared_sums",
           "GLOBAL_SUBSAMPLE_SEED", "row_blocks", "eval_block_rows", "shared_block",
           "squared_distances", "EVAL_BLOCK_ENTRIES"]

#: The seed of the global test subsample (:func:`global_subsample`): one subsample per test
#: set and size, whatever the run's seed, so that runs compared seed by seed or across seeds
#: are scored on the same samples.
GLOBAL_SUBSAMPLE_SEED = 0


def _stats(prefix: str, v: np.ndarray) -> dict[str, float]:
    return {
        f"{prefix}_mean": float(v.mean()),
        f"{prefix}_min": float(v.min()),
        f"{prefix}_max": float(v.max()),
        f"{prefix}_std": float(v.std()),
    }


def record_realized(recorder: Recorder, realized: Topology, t: int) -> None:
    """Edges (sender, receiver), their weights, sparsity and symmetry of a round's realized graph.

    ``realized_weights[e]`` is ``W[i, j]`` of ``realized_edges[e] = [j, i]`` (the weight the
    receiver ``i`` gives to the sender ``j``).
    """
    g = realized.graph
    edges = sorted([int(j), int(i)] for j, i in g.edges())
    n = realized.n
    recorder.log("realized_edges", edges, t)
    e = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
    weights = (np.asarray(realized.W[e[:, 1], e[:, 0]], dtype=np.float64).ravel() if e.size
               else np.zeros(0))
    recorder.log("realized_weights", weights.tolist(), t)
    recorder.log("realized_density", len(edges) / max(1, n * (n - 1)), t)
    recip = sum(1 for j, i in g.edges() if g.has_edge(i, j))
    recorder.log("realized_reciprocity", recip / max(1, len(edges)), t)


#: Entries of the ``[rows, P]`` temporaries that the check of the parameters
#: (:func:`check_finite`) and the consensus distance (:func:`squared_distances`) hold at once:
#: above it they go block of rows by block (1 Mi entries: 4 MiB of float32; small, so that
#: the heap they leave when freed is small).
EVAL_BLOCK_ENTRIES = 1 << 20


def row_blocks(n: int, cols: int) -> list[tuple[int, int]]:
    """The blocks of rows ``(start, stop)`` in which :func:`check_finite` and
    :func:`squared_distances` read an ``[n, cols]`` tensor: one block ``(0, n)`` up to
    :data:`EVAL_BLOCK_ENTRIES` entries, else blocks of ``EVAL_BLOCK_ENTRIES // cols`` rows (at
    least 2; a last block of one row joins the one before it, so that no block is a single
    row, whose reduction may take another order).

    Examples
    --------
    >>> from topofl.engine.evaluation import row_blocks
    >>> row_blocks(10, 650)
    [(0, 10)]
    >>> row_blocks(4_000, 650)  # 1,613 rows of 650 entries a block
    [(0, 1613), (1613, 3226), (3226, 4000)]
    """
    n, cols = int(n), max(1, int(cols))
    if n * cols <= EVAL_BLOCK_ENTRIES or n < 4:
        return [(0, n)]
    rows = max(2, EVAL_BLOCK_ENTRIES // cols)
    starts = list(range(0, n, rows))
    if n - starts[-1] == 1:
        starts.pop()
    return [(a, starts[i + 1] if i + 1 < len(starts) else n) for i, a in enumerate(starts)]


def eval_block_rows(n: int, cols: int) -> int:
    """Rows of the largest block of :func:`row_blocks` (what the memory model counts), in
    closed form: the memory model asks it at any ``n`` (``10**12`` clients included), where
    listing the blocks would itself exhaust the memory.

    Examples
    --------
    >>> from topofl.engine.evaluation import eval_block_rows
    >>> eval_block_rows(4_000, 650), eval_block_rows(10**12, 650)
    (1613, 1613)
    """
    n, cols = int(n), max(1, int(cols))
    if n <= 0:
        return 0
    if n * cols <= EVAL_BLOCK_ENTRIES or n < 4:
        return n
    rows = max(2, EVAL_BLOCK_ENTRIES // cols)
    if n <= rows:
        return n
    last = n - ((n - 1) // rows) * rows  # the last block's rows, before a lone row joins
    return rows + 1 if last == 1 else rows


def squared_distances(x: Tensor, center: Tensor) -> Tensor:
    """``[m]``: ``((x - center) ** 2).sum(dim=1)`` of ``x`` ``[m, P]`` and ``center`` ``[P]``,
    block of rows by block (:func:`row_blocks`): each row's sum is the same reduction of the
    same row, and the temporaries hold one block instead of two ``[m, P]`` tensors.

    Examples
    --------
    >>> import torch
    >>> from topofl.engine.evaluation import squared_distances
    >>> squared_distances(torch.tensor([[1.0, 2.0], [3.0, 4.0]]), torch.tensor([1.0, 0.0]))
    tensor([ 4., 20.])
    """
    blocks = row_blocks(int(x.shape[0]), int(x.shape[1]))
    if len(blocks) == 1:
        return ((x - center.unsqueeze(0)) ** 2).sum(dim=1)
    out = torch.empty(int(x.shape[0]), dtype=x.dtype, device=x.device)
    for a, b in blocks:
        out[a:b] = ((x[a:b] - center.unsqueeze(0)) ** 2).sum(dim=1)
    return out


#: Bytes an evaluation pass aims to hold at once (the logits and inputs of a chunk of samples
#: for every client): the evaluation's chunks, and the planner's model of them
#: (:mod:`topofl.workflow.memory`), are sized by it.
EVAL_BLOCK_BYTES = 64 << 20


def eval_chunk(n_clients: int, num_classes: int, sample_bytes: int) -> int:
    # samples per forward pass so that logits and inputs of all clients stay around 64 MB
    per = n_clients * (num_classes * 8 + sample_bytes)
    return max(1, EVAL_BLOCK_BYTES // max(1, per))


@functools.lru_cache(maxsize=8)
def _subsample(n_test: int, size: int, seed: int) -> np.ndarray:
    idx = np.sort(as_generator(seed).choice(n_test, size=size, replace=False))
    idx.setflags(write=False)
    return idx


def global_subsample(n_test: int, size: int, *, seed: int) -> np.ndarray:
    """``size`` distinct indices of a global test set of ``n_test`` samples, drawn uniformly
    without replacement with ``numpy.random.default_rng(seed)`` and sorted: the subsample
    ``eval_global_samples`` scores every client on (read-only; the same array for the same
    arguments).

    Examples
    --------
    >>> from topofl.engine.evaluation import global_subsample
    >>> idx = global_subsample(10, 4, seed=0)
    >>> idx.tolist() == sorted(set(idx.tolist())), len(idx), int(idx.max()) < 10
    (True, 4, True)
    >>> bool((idx == global_subsample(10, 4, seed=0)).all())
    True
    """
    n_test, size = int(n_test), int(size)
    if not 0 <= size <= n_test:
        raise ValueError(f"size must be in [0, n_test]=[0, {n_test}], got {size}")
    return _subsample(n_test, size, int(seed))


def global_scored(config: RunConfig, n_clients: int, data: Any) -> tuple[Tensor, Tensor] | None:
    """The global test samples ``(x, y)`` every client is scored on when
    ``config.eval_global_samples`` asks for a subsample of ``data.global_test``
    (:func:`~topofl.engine.config.global_samples` for ``n_clients`` clients); ``None`` when
    the whole set is scored."""
    xg, yg = data.global_test
    g = int(xg.shape[0])
    k = global_samples(config.eval_global_samples, n_clients, g)
    if k >= g:
        return None
    idx = torch.tensor(global_subsample(g, k, seed=GLOBAL_SUBSAMPLE_SEED), device=xg.device)
    return xg[idx], yg[idx]


#: Bytes a (client, sample) pair of :func:`shared_sums` holds at once per class (its float32
#: logits and float64 scores) and beside them, for the size of its blocks.
_PAIR_BYTES_PER_CLASS, _PAIR_BYTES = 8, 32
_SHARED_COLS = 256


def shared_block(samples: int, classes: int) -> tuple[int, int]:
    """``(rows, cols)``: the clients and samples of one block of :func:`shared_sums` on
    ``samples`` shared samples of ``classes`` classes (at most ``rows`` clients, what the
    memory model counts): up to 256 samples, and clients for about 64 MiB at
    ``8 * classes + 32`` bytes a (client, sample) pair.

    Examples
    --------
    >>> from topofl.engine.evaluation import shared_block
    >>> shared_block(2_000, 10)  # 2,340 clients x 256 samples
    (2340, 256)
    """
    cols = max(1, min(int(samples), _SHARED_COLS))
    per = cols * (_PAIR_BYTES_PER_CLASS * max(int(classes), 2) + _PAIR_BYTES)
    return max(1, EVAL_BLOCK_BYTES // per), cols


def logsumexp_argmax(logits: Tensor) -> tuple[Tensor, Tensor]:
    """``(torch.logsumexp(logits, -1), logits.argmax(-1))`` from one pass for the largest logit.

    The cross-entropy of a sample is the log-sum-exp of its logits less its label's logit,
    its prediction the first largest logit: :func:`torch.max` finds both the largest value,
    which the log-sum-exp subtracts, and its first index, where ``logsumexp`` and ``argmax``
    make a pass each (the last dimension, ten classes, is the slow axis of both: the fused
    form saves about a third of the reduction). The steps are ``logsumexp``'s own (an
    infinite largest value subtracted as 0), so the bits are the same.

    Examples
    --------
    >>> import torch
    >>> from topofl.engine.evaluation import logsumexp_argmax
    >>> logits = torch.tensor([[1.0, 3.0, 3.0], [0.0, -1.0, float("inf")]])
    >>> lse, pred = logsumexp_argmax(logits)
    >>> pred.tolist()  # the first largest
    [1, 2]
    >>> torch.equal(lse, torch.logsumexp(logits, dim=-1))
    True
    """
    largest, pred = logits.max(dim=-1)
    shift = largest.masked_fill(largest.abs() == float("inf"), 0)
    lse = (logits - shift.unsqueeze(-1)).exp_().sum(dim=-1).log_().add_(shift)
    return lse, pred


def shared_sums(executor: Any, x_eval: Tensor, x: Tensor, y: Tensor,
                adjust: Adjust | None = None) -> Tensor:
    """``[m, 3]`` sums (correct, loss, count) of every client's model ``x_eval`` on the same
    samples ``x`` ``[s, ...]`` with labels ``y`` ``[s]``, in blocks of clients and samples of
    about 64 MB: the parameters of a block of clients are read once for up to 256 samples
    (:func:`score_chunks` over all clients at once reads every client's parameters for each
    chunk of samples, one sample a chunk at a million clients). With an ``adjust`` hook (which
    sees every client's rows) it is :func:`score_chunks`' pass.

    Examples
    --------
    >>> import torch
    >>> from topofl.engine.evaluation import shared_sums
    >>> class Linear:  # the executor's forward pass: one weight matrix a client
    ...     def logits(self, flat, x, shared_input):
    ...         return torch.einsum("sd,ncd->nsc", x, flat.view(flat.shape[0], 2, 2))
    >>> w = torch.tensor([[1.0, 0, 0, 1], [0, 1, 1, 0]])  # identity, swap
    >>> x, y = torch.eye(2), torch.tensor([0, 1])
    >>> shared_sums(Linear(), w, x, y)[:, 0].tolist()  # correct predictions of each client
    [2.0, 0.0]
    """
    m, s = int(x_eval.shape[0]), int(x.shape[0])
    fused = objective_of(executor).classifies  # the cross-entropy's pass from the largest logit
    if not fused:  # regression targets [s] or [s, K]: K outputs a sample
        classes = int(y[0].numel()) if s else 1
    else:
        classes = int(y.max()) + 1 if s else 1
    if adjust is not None or m == 0 or not fused:
        chunk = max(1, EVAL_BLOCK_BYTES // max(1, m * (classes * 8 + int(x[0].numel()) * 4)))
        gb = ((x[a:a + chunk], y[a:a + chunk], None) for a in range(0, s, chunk))
        return torch.stack(score_chunks(executor, x_eval, gb, m, shared=True, adjust=adjust),
                           dim=1)
    rows, cols = shared_block(s, classes)
    out = torch.zeros((m, 3), dtype=torch.float64, device=x_eval.device)
    for c in range(0, s, cols):
        xc, yc = x[c:c + cols].to(x_eval.dtype), y[c:c + cols]
        at = torch.arange(int(yc.shape[0]), device=yc.device)
        for a in range(0, m, rows):
            b = min(m, a + rows)
            logits = executor.logits(x_eval[a:b], xc, shared_input=True)  # [rows, cols, C]
            lse, pred = logsumexp_argmax(logits)
            out[a:b, 0] += (pred == yc).sum(dim=1).double()
            out[a:b, 1] += (lse - logits[:, at, yc]).double().sum(dim=1)
    out[:, 2] = float(s)
    return out


def global_row(config: RunConfig, n_clients: int, data: Any) -> dict[str, Any]:
    """``{"global_samples": k}`` when the ``global_*`` rows score a subsample of ``k``
    samples of the global test set (``config.eval_global_samples``), else ``{}``."""
    xg = data.global_test[0]
    g = int(xg.shape[0])
    if not config.eval_global or g == 0:
        return {}
    k = global_samples(config.eval_global_samples, n_clients, g)
    return {"global_samples": k} if k < g else {}


def evaluate(executor: Any, algorithm: Algorithm, state: State, rnd: Round, env: Services,
             data: Any, config: RunConfig, recorder: Recorder, *,
             x_eval: Tensor | None = None) -> dict[str, Any]:
    """Score ``algorithm.evaluate`` of every client: the evaluation row of round ``rnd.t``.

    Test accuracy statistics over clients (each on its own test split; per-client values go to
    the records when ``config.record_clients``), the accuracy on the global test set, and the
    consensus distance of the shared part. Each process scores the clients it holds (``data``
    is theirs) and the per-client sums are gathered through ``env.clients``, so every process
    computes the same row. A non-finite parameter raises ``ConvergenceError`` (naming the
    lowest such client, on every process). ``x_eval``: what ``algorithm.evaluate`` returned
    for this round, when the caller has it already.
    """
    t, clients = rnd.t, env.clients
    if x_eval is None:
        x_eval = algorithm.evaluate(state, rnd, env)
    check_finite(clients, x_eval, t, recorder)
    m = clients.m
    adjust = None if algorithm.predict is None else algorithm.predict(x_eval, rnd, env)
    chunk = eval_chunk(m, int(data.num_classes), 4 * int(np.prod(data.input_shape)))
    parts = [split_sums(executor, x_eval, data, "test", chunk, adjust)]
    # without a global test set (a torch dataset split with test=0.2) global_* is not recorded:
    # it cannot be computed (0/0), and a column of NaN says nothing (issue 23)
    with_global = config.eval_global and int(data.global_test[0].shape[0]) > 0
    sub = global_scored(config, env.n, data) if with_global else None
    if sub is not None:  # a fixed subsample, the same for every client (the row says so)
        parts.append(shared_sums(executor, x_eval, sub[0], sub[1], adjust))
    elif with_global:
        xg, yg = data.global_test
        g = int(xg.shape[0])
        rows = None if adjust is not None else _scored_rows(algorithm, rnd, env)
        if rows is None:
            gb = ((xg[a:a + chunk], yg[a:a + chunk], None) for a in range(0, g, chunk))
            parts.append(torch.stack(score_chunks(executor, x_eval, gb, m, shared=True,
                                                  adjust=adjust), dim=1))
        else:  # the global test set's sums of the scored rows only (the others unread)
            parts.append(_rows_global_sums(executor, x_eval, xg, yg, chunk, rows))
    if config.eval_val:  # gathered with the rest: one collective
        parts.append(split_sums(executor, x_eval, data, "val", chunk, adjust))
    full = clients.all_rows(torch.cat(parts, dim=1), "evaluation")  # [n, 3, 6 (, +3)] sums
    val = None
    if config.eval_val:
        full, val = full[:, :-3], full[:, -3:]
    balanced = None
    if config.balanced_accuracy:
        balanced = clients.all_rows(class_sums(executor, x_eval, data, "test", adjust),
                                    "evaluation")
    scored = None if algorithm.scored is None else scored_clients(algorithm, rnd, env)
    row = evaluation_row(clients, algorithm, env, x_eval, EvalSums(full, val, balanced), config,
                         recorder, t, scored=scored)
    row.update(global_row(config, env.n, data))
    return row


def split_sums(executor: Any, x_eval: Tensor, data: Any, split: str, chunk: int | None = None,
               adjust: Adjust | None = None, *, rows: Tensor | None = None) -> Tensor:
    """``[m, 3]`` sums (correct, loss, count) of every client's model ``x_eval`` on its own
    ``split`` (``"train"``, ``"val"`` or ``"test"``) of ``data``, ``chunk`` samples a client at
    most in one forward pass (default :func:`eval_chunk`'s; never more than the largest
    client holds: padding costs forward passes). Where the executor allows it
    (:func:`~topofl.engine.scoring.rows_independent`), a chunk scores only the clients with
    a sample in it (:func:`~topofl.engine.scoring.score_chunks`). ``rows`` (increasing row
    indices) asks for those clients' sums, ``[len(rows), 3]``: only their rows are scored
    where the executor allows it (in the whole call's chunks), else every row is.

    Examples
    --------
    >>> import torch
    >>> data = tf.data.federate("digits", "iid", 4, seed=0, val=0.2)
    >>> ex = tf.engine.executors.BatchedExecutor(m := tf.models.build_model(
    ...     "logistic", (1, 8, 8), 10, seed=0), tf.engine.ParamLayout.from_model(m))
    >>> x, sums = torch.randn(4, 650), tf.engine.evaluation.split_sums
    >>> some, every = sums(ex, x, data, "val", rows=torch.tensor([1, 3])), sums(ex, x, data, "val")
    >>> bool((some == every[[1, 3]]).all())
    True
    """
    m = int(x_eval.shape[0])
    if chunk is None:
        chunk = eval_chunk(m, int(data.num_classes), 4 * int(np.prod(data.input_shape)))
    size = min(chunk, max(1, int(np.max(data.sizes(split)))))
    batches = ((b.x, b.y, b.mask) for b in data.eval_batches(split, batch_size=size))
    if rows is not None and rows_independent(executor, x_eval.device) and (
            adjust is None or takes_rows(adjust)):
        rows = rows.to(device=x_eval.device, dtype=torch.long)
        picked = ((x.index_select(0, rows.to(x.device)), y.index_select(0, rows.to(y.device)),
                   None if mask is None else mask.index_select(0, rows.to(mask.device)))
                  for x, y, mask in batches)
        return torch.stack(score_chunks(executor, x_eval.index_select(0, rows), picked,
                                        int(rows.numel()), shared=False, adjust=adjust,
                                        clients=rows), dim=1)
    sums = torch.stack(score_chunks(executor, x_eval, batches, m, shared=False,
                                    adjust=adjust), dim=1)
    return sums if rows is None else sums.index_select(0, rows.to(sums.device))


def class_sums(executor: Any, x_eval: Tensor, data: Any, split: str,
               adjust: Adjust | None = None) -> Tensor:
    """``[m, 2 C]`` per-class sums of every client's model ``x_eval`` on its own ``split`` of
    ``data``: the right predictions of each class, then the samples of each class (for
    :func:`balanced_row`).

    Examples
    --------
    >>> import torch
    >>> from types import SimpleNamespace as NS
    >>> from topofl.engine.evaluation import class_sums
    >>> swap = NS(logits=lambda flat, x, shared_input: torch.tensor([[[0.0, 1], [1, 0]]]))
    >>> batch = NS(x=torch.zeros(1, 2, 1), y=torch.tensor([[0, 1]]), mask=None)  # 1 client
    >>> data = NS(num_classes=2, input_shape=(1,), sizes=lambda split: [2],
    ...           eval_batches=lambda split, batch_size: [batch])
    >>> class_sums(swap, torch.zeros(1, 1), data, "test").tolist()  # both wrong, one a class
    [[0.0, 0.0, 1.0, 1.0]]
    """
    if not objective_of(executor).classifies:
        raise ValueError("per-class sums (balanced accuracy) need class labels: the executor "
                         f"trains with {objective_of(executor).name!r}")
    m, C = int(x_eval.shape[0]), int(data.num_classes)
    chunk = eval_chunk(m, C, 4 * int(np.prod(data.input_shape)))
    size = min(chunk, max(1, int(np.max(data.sizes(split)))))
    out = torch.zeros((m, 2 * C), dtype=torch.float64, device=x_eval.device)
    for b in data.eval_batches(split, batch_size=size):
        inputs = b.x.to(x_eval.dtype)
        logits = executor.logits(x_eval, inputs, shared_input=False)
        if adjust is not None:
            logits = adjust(inputs, logits, False)
        w = torch.ones(b.y.shape, dtype=torch.float64, device=out.device) if b.mask is None \
            else b.mask.to(torch.float64)
        y = b.y.to(out.device).long()
        out[:, :C].scatter_add_(1, y, (logits.argmax(dim=-1) == y).double() * w)
        out[:, C:].scatter_add_(1, y, w)
    return out


def balanced_row(sums: Tensor, keep: Tensor | None, config: RunConfig, recorder: Recorder,
                 t: int) -> dict[str, Any]:
    """``test_bacc_*`` over the clients ``keep`` (``None``: every client) with test samples,
    from :func:`class_sums` ``[n, 2 C]``: a client's balanced accuracy is the mean over the
    classes it holds of the share of that class predicted right; per client ``test_bacc``
    (NaN without test samples or not kept) to ``recorder`` with ``config.record_clients``."""
    C = sums.shape[1] // 2
    right, count = sums[:, :C], sums[:, C:]
    held = count > 0
    classes = held.sum(dim=1)
    bacc = torch.where(held, right / count.clamp_min(1), 0.0).sum(dim=1) / classes.clamp_min(1)
    has = classes > 0 if keep is None else (classes > 0) & keep
    row: dict[str, Any] = {}
    if bool(has.any()):
        row.update(_stats("test_bacc", bacc[has].cpu().numpy()))
    if config.record_clients:
        recorder.log_clients("test_bacc", torch.where(has, bacc, torch.nan).cpu().numpy(), t)
    return row


def check_eval_val(config: RunConfig, data: Any) -> None:
    """``ValueError`` when ``config.eval_val`` asks for validation scores that ``data``
    cannot give (no client holds a validation sample)."""
    if config.eval_val and int(np.sum(data.sizes("val"))) == 0:
        raise ValueError("eval_val=True scores every client on its validation split, but no "
                         "client of the data has one: federate the data with a validation "
                         "share (e.g. partition parameter val=0.2) or set eval_val=False")


def _rows_global_sums(executor: Any, x_eval: Tensor, xg: Tensor, yg: Tensor, chunk: int,
                      rows: np.ndarray) -> Tensor:
    """``[m, 3]`` the global test set's sums (correct, loss, count) of the rows ``rows`` of
    ``x_eval`` (zeros in the others), as :func:`score_chunks` of every row gives them: taken
    on views of runs of adjacent rows (:func:`topofl.engine.local.row_runs`), each row at
    its own address (a gathered copy moves a row's parameters, and a matrix product may
    then round otherwise)."""
    m, g = int(x_eval.shape[0]), int(xg.shape[0])
    sums = torch.zeros(m, 3, dtype=torch.float64, device=x_eval.device)
    for a, b in row_runs(rows, m):
        gb = ((xg[c:c + chunk], yg[c:c + chunk], None) for c in range(0, g, chunk))
        sums[a:b] = torch.stack(score_chunks(executor, x_eval[a:b], gb, b - a, shared=True),
                                dim=1)
    out = torch.zeros_like(sums)
    idx = torch.as_tensor(rows, device=x_eval.device)
    return out.index_copy_(0, idx, sums.index_select(0, idx))


def _scored_rows(algorithm: Algorithm, rnd: Round, env: Services) -> np.ndarray | None:
    """Sorted ``int64``: this process's rows that ``algorithm.scored`` scores at round
    ``rnd.t``, when they are not all of them (``None``: every row is scored, or the
    algorithm scores every client)."""
    if algorithm.scored is None:
        return None
    mine = scored_clients(algorithm, rnd, env)[env.clients.ids]
    if bool(mine.all()):
        return None
    return np.flatnonzero(mine).astype(np.int64)


def scored_clients(algorithm: Algorithm, rnd: Round, env: Services) -> np.ndarray:
    """``(n,)`` bool: the clients whose models ``algorithm`` has scored at round ``rnd.t``
    (its ``scored`` hook, checked: every client's entry, at least one of them)."""
    assert algorithm.scored is not None
    mask = np.asarray(algorithm.scored(rnd, env))
    if mask.shape != (env.n,) or mask.dtype != np.bool_ or not mask.any():
        raise ValueError(f"{algorithm.name}: Algorithm.scored must return a (n,)=({env.n},) "
                         f"bool array with at least one True, got {mask.dtype} of shape "
                         f"{mask.shape} ({int(mask.sum()) if mask.dtype == np.bool_ else '?'} "
                         "True)")
    return mask


def check_finite(clients: Clients, x_eval: Tensor, t: int, recorder: Recorder) -> None:
    """Raise the run's error (on every process) when a client's parameters are not finite
    (``isfinite`` block of rows by block, :func:`row_blocks`: its temporaries hold
    ``3 + itemsize`` bytes an entry)."""
    blocks = row_blocks(int(x_eval.shape[0]), int(x_eval.shape[1]))
    if len(blocks) == 1:
        finite = torch.isfinite(x_eval).all(dim=1)
    else:
        finite = torch.cat([torch.isfinite(x_eval[a:b]).all(dim=1) for a, b in blocks])
    bad = None if bool(finite.all()) else (int(torch.nonzero(~finite)[0, 0]), math.nan)
    found = first_bad(clients, bad, "the divergence check")
    if found is not None:
        recorder.flush()
        raise nonfinite_parameters_error(t, found[0])


class EvalSums(NamedTuple):
    """Every client's evaluation sums, as :func:`evaluation_row` reads them.

    ``full`` ``[n, 3 or 6]``: correct, loss, count on the client's test split, then on the
    global test set when scored; ``val`` (``[n, 3]``, with ``config.eval_val``): the same sums
    on every client's validation split, for the ``val_*`` rows; ``balanced`` (``[n, 2 C]``,
    with ``config.balanced_accuracy``): :func:`class_sums` on the test splits, for the
    ``test_bacc_*`` rows.
    """

    full: Tensor
    val: Tensor | None = None
    balanced: Tensor | None = None


def evaluation_row(clients: Clients, algorithm: Algorithm, env: Services, x_eval: Tensor,
                   sums: EvalSums, config: RunConfig, recorder: Recorder, t: int, *,
                   scored: np.ndarray | None = None) -> dict[str, Any]:
    """The evaluation row of round ``t`` from every client's :class:`EvalSums`; the
    per-client accuracies go to ``recorder`` when ``config.record_clients``.

    ``scored`` (``(n,)`` bool, the algorithm's ``scored`` hook) restricts every statistic
    over clients to those clients (the others hold no model: their per-client accuracy is
    NaN); ``None``: every client.
    """
    full, val, balanced = sums
    if scored is not None:
        row = _scored_row(clients, algorithm, env, x_eval, full, config, recorder, t, scored)
        if val is not None:
            row.update(_val_row(val, torch.as_tensor(scored, device=val.device), recorder, t))
    else:
        row = _accuracy_row(full, None, config, recorder, t)
        if val is not None:
            row.update(_val_row(val, None, recorder, t))
        shared = x_eval[:, env.layout.cols(algorithm.shared)]
        mean = clients.mean(shared, "consensus distance")
        dist = squared_distances(shared, mean)
        row["consensus_distance"] = float(clients.mean(dist, "consensus distance"))
    if balanced is not None:
        keep = None if scored is None else torch.as_tensor(scored, device=balanced.device)
        row.update(balanced_row(balanced, keep, config, recorder, t))
    byzantine = getattr(env, "byzantine", None)
    if byzantine is not None:
        row.update(honest_row(np.asarray(byzantine, dtype=bool), algorithm, env, x_eval, full,
                              scored))
    return row


def honest_row(byzantine: np.ndarray, algorithm: Algorithm, env: Services, x_eval: Tensor,
               full: Tensor, scored: np.ndarray | None = None) -> dict[str, Any]:
    """The honest nodes' statistics of a ``[byzantine]`` run (every client in one process):
    ``honest_test_acc_*``, ``honest_test_loss``, ``honest_global_acc_*``,
    ``honest_global_loss`` (as the rows without the prefix, over the clients not in
    ``byzantine``, ``(n,)`` bool, and ``scored``), ``honest_consensus_distance`` (the
    honest models' mean squared distance to their mean) and ``byzantine_clients`` (how many
    nodes are Byzantine)."""
    keep = ~byzantine if scored is None else ~byzantine & np.asarray(scored, dtype=bool)
    mask = torch.as_tensor(keep, device=full.device)
    stats = _accuracy_row(full, mask, None, None, 0)
    row: dict[str, Any] = {f"honest_{k}": v for k, v in stats.items()}
    shared = x_eval[:, env.layout.cols(algorithm.shared)][torch.as_tensor(keep,
                                                                          device=x_eval.device)]
    if shared.shape[0]:
        dist = ((shared - shared.mean(dim=0, keepdim=True)) ** 2).sum(dim=1)
        row["honest_consensus_distance"] = float(dist.mean())
    row["byzantine_clients"] = int(byzantine.sum())
    return row


def _accuracy_row(full: Tensor, keep: Tensor | None, config: RunConfig | None,
                  recorder: Recorder | None, t: int) -> dict[str, Any]:
    """The accuracy and loss statistics of the clients ``keep`` (``None``: every client)
    from their sums ``full`` ``[n, 3 or 6]``; the per-client accuracies (NaN for a client
    not kept or without test samples) go to ``recorder`` when ``config.record_clients``
    (``config`` ``None``: nowhere). Sums without right predictions (NaN: a regression
    objective, :meth:`~topofl.engine.objectives.Objective.correct`) give the losses only,
    and the per-client test losses are recorded instead."""
    correct, loss, count = full[:, 0], full[:, 1], full[:, 2]
    accuracy = not _regression(full)
    has = count > 0 if keep is None else (count > 0) & keep
    acc = (correct[has] / count[has]).cpu().numpy()
    row: dict[str, Any] = {}
    if acc.size:
        if accuracy:
            row.update(_stats("test_acc", acc))
        row["test_loss"] = float((loss[has] / count[has]).mean())
    if config is not None and recorder is not None and config.record_clients:
        per_client = torch.where(has, (correct if accuracy else loss) / count.clamp_min(1),
                                 torch.nan).cpu().numpy()
        recorder.log_clients("test_acc" if accuracy else "test_loss", per_client, t)
    if full.shape[1] > 3:
        g = full if keep is None else full[keep]
        gc, gl, gn = g[:, 3], g[:, 4], g[:, 5]
        if accuracy:
            row.update(_stats("global_acc", (gc / gn).cpu().numpy()))
        row["global_loss"] = float((gl / gn).mean())
    return row


def _regression(sums: Tensor) -> bool:
    """Whether evaluation sums ``[n, 3k]`` hold no right predictions (their correct column
    NaN: a regression objective's)."""
    return bool(sums.shape[0]) and bool(sums[:, 0].isnan().all())


def _val_row(val: Tensor, keep: Tensor | None, recorder: Recorder, t: int) -> dict[str, Any]:
    """``val_acc_*`` and ``val_loss`` over the clients ``keep`` (``None``: every client) with
    validation samples, from their sums ``val`` ``[n, 3]``; per client ``val_loss`` and
    ``val_acc`` (NaN for a client not kept or without validation samples) to ``recorder``."""
    correct, loss, count = val[:, 0], val[:, 1], val[:, 2]
    accuracy = not _regression(val)
    has = count > 0 if keep is None else (count > 0) & keep
    row: dict[str, Any] = {}
    if bool(has.any()):
        if accuracy:
            row.update(_stats("val_acc", (correct[has] / count[has]).cpu().numpy()))
        row["val_loss"] = float((loss[has] / count[has]).mean())
    per = count.clamp_min(1)
    recorder.log_clients("val_loss", torch.where(has, loss / per, torch.nan).cpu().numpy(), t)
    if accuracy:
        recorder.log_clients("val_acc", torch.where(has, correct / per, torch.nan).cpu().numpy(),
                             t)
    return row


def _scored_row(clients: Clients, algorithm: Algorithm, env: Services, x_eval: Tensor,
                full: Tensor, config: RunConfig, recorder: Recorder, t: int,
                scored: np.ndarray) -> dict[str, Any]:
    """:func:`evaluation_row` over the clients ``scored`` only."""
    row = _accuracy_row(full, torch.as_tensor(scored, device=full.device), config, recorder, t)
    # the consensus distance of the scored models: sums over this process's scored rows,
    # completed over the processes
    shared = x_eval[:, env.layout.cols(algorithm.shared)]
    mine = torch.as_tensor(scored[clients.ids], device=shared.device)
    k = float(scored.sum())
    total = clients.reduce_(shared[mine].sum(dim=0), "consensus distance")
    mean = total / k
    dist = ((shared[mine] - mean.unsqueeze(0)) ** 2).sum()
    row["consensus_distance"] = float(clients.reduce_(dist, "consensus distance") / k)
    return row


def _label_proportions(labels: Any) -> np.ndarray | None:
    """Row-normalised label counts, or ``None`` without them (or if a client holds none)."""
    if labels is None:
        return None
    counts = np.asarray(labels, dtype=np.float64)
    tot = counts.sum(axis=1, keepdims=True)
    return counts / np.where(tot > 0, tot, 1.0) if np.all(tot > 0) else None


def spectral_row(topo: Topology, tv: Any, cache: dict[int, dict[str, Any]],
                 labels: Any = None, *, measured: bool | None = None) -> dict[str, Any]:
    """``topofl.spectral.summary`` of the run's graph, prefixed ``graph.``.

    A static graph (``tv`` is ``None`` or of period 1) is summarised as the round's graph
    ``topo``, with the measured consensus quantities. A time-varying graph is summarised as a
    *schedule*, once per run (``cache`` keeps it): ``summary(tv)``, whose per-round metrics
    are averaged over one period (or over ``spectral_rounds`` draws of a random schedule) and
    whose sequence metrics -- the effective number of neighbours (exact, or the closed form
    of a random schedule's expectation), the measured consensus rate, B-connectivity, the
    push-sum constants -- are those of the sequence, not of one draw: a single round of
    EL-Oracle or of a one-peer exponential graph has far fewer effective neighbours, and is
    often not connected. Every evaluation of the run then records the same row, so a reader
    that averages a run's rows (:func:`topofl.study.run_table`) reads the schedule's values.
    ``labels`` (the clients' label counts) adds the neighbourhood skew and heterogeneity.
    ``measured`` (default: True) says whether the simulated quantities are computed.

    Examples
    --------
    >>> from topofl.engine.evaluation import spectral_row
    >>> tv = tf.topologies.el_oracle(16, 3, seed=0)
    >>> row = spectral_row(tv.at(5), tv, {})
    >>> round(row["graph.effective_neighbors"], 6), row["graph.time_varying"]
    (13.5, True)
    >>> round(tf.spectral.expected_mixing(tv).effective_neighbors(0.95), 6)
    13.5
    """
    static = tv is None or tv.period == 1
    key = id(topo) if static else id(tv)
    if key not in cache:
        props = _label_proportions(labels)
        graph = topo if static else tv
        s = summary(graph, label_distributions=props,
                    measured=True if measured is None else measured)
        s = {f"graph.{k}": v for k, v in s.items()
             if isinstance(v, (int, float, bool)) or v is None}
        if static:
            s["graph.edges_per_node"] = topo.edges_per_node
        cache[key] = s
    return cache[key]
