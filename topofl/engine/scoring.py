"""The per-client sums of an evaluation pass over padded batches (:func:`score_chunks`),
scoring in each batch only the clients with a real sample in it (:func:`live_rows`)."""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from topofl._utils.callables import takes_keyword
from topofl.engine.executors import BatchedExecutor, LoopExecutor
from topofl.engine.objectives import objective_of
from topofl.engine.protocol import Adjust

__all__ = ["live_rows", "rows_independent", "score_chunks", "takes_rows"]


def score_chunks(executor: Any, x_eval: Tensor, batches: Any, n: int, shared: bool,
                 adjust: Adjust | None = None, clients: Tensor | None = None
                 ) -> tuple[Tensor, Tensor, Tensor]:
    """Sum correct predictions, losses and counts per client over padded batches.

    ``clients`` names the run's client of each row of ``x_eval`` and of the batches (default:
    row ``i`` is client ``i``), what an ``adjust`` hook's ``rows`` names: a call on some
    clients' rows (:func:`~topofl.engine.evaluation.split_sums`' ``rows``).

    ``adjust(inputs, logits, shared)`` (an algorithm's ``predict`` hook) replaces the logits
    by the scores the algorithm predicts with.

    A batch of the clients' own samples (``shared`` False, with a ``mask``) scores only the clients
    with a real sample in it (:func:`live_rows`), where the executor computes each client's
    logits alike whatever the other clients of the call (:func:`rows_independent`): at the end
    of a padded split, where only the largest clients still hold samples, the others' rows are
    padding that adds nothing to any sum. Each scored client's sums are then those of the whole
    batch (the clients left out would add ``0``): bit for bit where torch's batched kernels
    compute a client's entry alike whatever the number of clients (measured with the AVX-512
    kernels of the machine the committed results ran on, float32 included:
    ``analysis/bench_live_rows.md``), else within float32 rounding (ATen's default kernels: 5e-9
    of the largest sum; ``tests/engine/test_eval_live_rows.py``). With an ``adjust`` hook it
    applies only when the hook takes the keyword ``rows`` (the clients its inputs and logits are
    the rows of, :data:`~topofl.engine.protocol.Adjust`); a hook without it sees every client's
    rows.
    """
    correct = torch.zeros(n, dtype=torch.float64, device=x_eval.device)
    loss = torch.zeros_like(correct)
    count = torch.zeros_like(correct)
    subsets = (not shared and (adjust is None or takes_rows(adjust))
               and rows_independent(executor, x_eval.device))
    for x, y, mask in batches:
        inputs = x.to(x_eval.dtype)
        rows = live_rows(mask) if subsets and mask is not None else None
        if rows is None:
            sums = _batch_sums(executor, x_eval, inputs, y, mask, shared, adjust, clients)
            correct += sums[0]
            loss += sums[1]
            count += sums[2]
            continue
        if rows.numel() == 0:
            continue
        sums = _batch_sums(executor, x_eval.index_select(0, rows), inputs.index_select(0, rows),
                           y.index_select(0, rows), mask.index_select(0, rows), shared, adjust,
                           rows if clients is None else clients.index_select(0, rows))
        correct.index_add_(0, rows, sums[0])
        loss.index_add_(0, rows, sums[1])
        count.index_add_(0, rows, sums[2])
    return correct, loss, count


def live_rows(mask: Tensor) -> Tensor | None:
    """The clients (rows of a padded batch's ``mask`` ``[n, b]``) with a real sample in the
    batch, ``[k]`` int64 increasing, or ``None`` when every client has one.

    Examples
    --------
    >>> import torch
    >>> from topofl.engine.scoring import live_rows
    >>> live_rows(torch.tensor([[True, False], [False, False], [True, True]])).tolist()
    [0, 2]
    >>> live_rows(torch.tensor([[True], [True]])) is None
    True
    """
    live = mask.any(dim=1)
    if bool(live.all()):
        return None
    return live.nonzero().flatten()


def rows_independent(executor: Any, device: torch.device) -> bool:
    """Whether ``executor`` computes a client's logits with the same operations whatever the other
    clients of the call (the same bits where the batched kernels are alike for any number of
    clients, :func:`score_chunks`): the per-client loop
    (:class:`~topofl.engine.executors.LoopExecutor`), and on the CPU the batched executor of a
    plain stack of linear layers (logistic regression, an MLP: batched matrix products, one per
    client). Not the batched executor's convolutions (``vmap``'s grouped convolutions pick their
    algorithm by the number of groups: cnn1d's float32 logits moved in their last bits), nor a
    GPU's batched products, nor an executor this function does not know.

    Examples
    --------
    >>> import torch
    >>> from topofl.engine import ParamLayout
    >>> from topofl.engine.executors import BatchedExecutor
    >>> from topofl.engine.scoring import rows_independent
    >>> cpu = torch.device("cpu")
    >>> def batched(name, shape):
    ...     model = tf.models.build_model(name, shape, 10, seed=0)
    ...     return BatchedExecutor(model, ParamLayout.from_model(model))
    >>> mlp, cnn1d = batched("mlp", (40,)), batched("cnn1d", (1, 40))
    >>> rows_independent(mlp, cpu), rows_independent(cnn1d, cpu)
    (True, False)
    """
    if isinstance(executor, LoopExecutor):
        return True
    if not isinstance(executor, BatchedExecutor) or torch.device(device).type != "cpu":
        return False
    if executor.linear is not None:
        return True
    return executor.stack is not None and all(k != "conv1d" for k, _, _, _ in executor.stack)


def takes_rows(fn: Any) -> bool:
    """Whether the callable ``fn`` (an ``adjust`` hook, a losses function) takes the keyword
    ``rows`` (the clients of its rows).

    Examples
    --------
    >>> from topofl.engine.scoring import takes_rows
    >>> takes_rows(lambda z, rows=None: z), takes_rows(lambda z: z), takes_rows(len)
    (True, False, False)
    """
    return takes_keyword(fn, "rows")


def _batch_sums(executor: Any, x_eval: Tensor, inputs: Tensor, y: Tensor, mask: Tensor | None,
                shared: bool, adjust: Adjust | None, rows: Tensor | None
                ) -> tuple[Tensor, Tensor, Tensor]:
    """One batch's ``(correct, loss, count)`` sums of the clients of ``x_eval``'s rows (the
    clients ``rows`` of the run, or all of them for ``None``)."""
    logits = executor.logits(x_eval, inputs, shared_input=shared)
    if adjust is not None:
        hook: Any = adjust  # a hook that takes ``rows`` (takes_rows) when rows is given
        logits = hook(inputs, logits, shared) if rows is None else \
            hook(inputs, logits, shared, rows=rows)
    yy = y.unsqueeze(0).expand(logits.shape[0], *y.shape) if shared else y
    objective = objective_of(executor)
    ok = objective.correct(logits, yy)
    ls = objective.per_sample(logits, yy).double()
    m = torch.ones_like(ok) if mask is None else mask.double()
    return (ok * m).sum(dim=1), (ls * m).sum(dim=1), m.sum(dim=1)
