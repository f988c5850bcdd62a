"""The engine's :class:`~topofl.engine.Services`: local training and losses on the clients' data.

Data-driven algorithms choose their peers from losses (PFedDST, DPFL) or train outside the
phases (DPFL's pre-processing, FedBABU's fine-tuning before evaluation); they do it through these
services. Their batches come from steps ``>= 2**20`` of the round, disjoint from the phases'.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import Tensor

from topofl._utils.validation import check_choice
from topofl.engine.clients import Clients, LocalClients
from topofl.engine.evaluation import eval_chunk, split_sums
from topofl.engine.executors import BatchedExecutor, LoopExecutor
from topofl.engine.layout import ParamLayout
from topofl.engine.local import steps_per_client
from topofl.engine.objectives import objective_of
from topofl.engine.protocol import Part

__all__ = ["DataServices", "AUX_STEP", "batch_losses"]

AUX_STEP = 1 << 20  # auxiliary draws use steps >= 2**20 of a round: disjoint from the phases'


def batch_losses(executor: Any, x: Tensor, xb: Tensor, yb: Tensor, idx: Tensor) -> Tensor:
    """``[n, k]``: mean loss (the executor's objective) of row ``i`` of ``x`` on the batch
    ``xb[idx[i, j]]``, ``yb[idx[i, j]]`` (``xb``: ``[q, b, ...]`` batches, ``yb``: ``[q, b]``
    labels or ``[q, b(, K)]`` regression targets)."""
    n, k = idx.shape
    objective = objective_of(executor)
    xb = xb.to(x.dtype)
    out = torch.empty(n, k, dtype=x.dtype, device=x.device)
    for j in range(k):
        sel = idx[:, j]
        logits = executor.logits(x, xb.index_select(0, sel))
        yy = yb.index_select(0, sel)
        out[:, j] = objective.per_sample(logits, yy).mean(dim=1)
    return out


class DataServices:
    """:class:`~topofl.engine.Services` backed by an executor and federated data.

    Parameters
    ----------
    layout : ParamLayout
    mixer : Mixer
    executor : Executor
    data : FederatedData
        The data of the clients held here (all of them in one process; a rank's
        ``ShardData`` in a distributed run). Its ``label_distributions`` and ``flipped`` are
        those of every client of the run.
    batch_size : int
        Mini-batch size of ``local_train`` and ``cross_losses``.
    clients : Clients, optional
        Where the clients live (default: all ``data.num_clients`` in this process).

    Examples
    --------
    >>> import torch
    >>> data = tf.data.federate("digits", "iid", 4, seed=0, val=0.2)
    >>> model = tf.models.build_model("logistic", data.input_shape, 10, seed=0)
    >>> layout = tf.engine.ParamLayout.from_model(model)
    >>> mixer = tf.engine.gossip.Mixer(torch.device("cpu"), torch.float32)
    >>> env = tf.engine.services.DataServices(layout, mixer,
    ...     tf.engine.executors.BatchedExecutor(model, layout), data, batch_size=8)
    >>> x = torch.zeros(4, layout.num_params)
    >>> [round(v, 4) for v in env.losses(x, "val").tolist()]  # log(10) at zero parameters
    [2.3026, 2.3026, 2.3026, 2.3026]
    """

    def __init__(self, layout: ParamLayout, mixer: Any, executor: Any, data: Any,
                 batch_size: int, clients: Clients | None = None) -> None:
        self.layout, self.mixer, self.executor, self.data = layout, mixer, executor, data
        self.batch_size = int(batch_size)
        self.clients: Clients = (LocalClients(int(data.num_clients)) if clients is None
                                 else clients)
        self.n = self.clients.n
        self.train_sizes: Tensor | None = torch.as_tensor(np.array(data.sizes("train")),
                                                          device=data.device)
        # regression data has no labels (its label_distributions raise): no counts
        self.label_counts: np.ndarray | None = None if getattr(
            data, "objective", "cross_entropy") != "cross_entropy" else np.asarray(
            data.label_distributions)
        self.flipped: np.ndarray | None = np.asarray(data.flipped, dtype=bool)
        #: ``(n,)`` bool: the Byzantine nodes of a ``[byzantine]`` run (``None``: none)
        self.byzantine: np.ndarray | None = None
        self._g: Tensor | None = None
        self._body: Any = None  # (body module, its executor or None), built on first use

    def local_train(self, x: Tensor, part: Part, lr: float, *, t: int, steps: int | None = None,
                    epochs: float | None = None, stream: int = 0) -> Tensor:
        """Plain SGD on the ``[n, P]`` buffer ``x`` in place, on each client's own training
        batches of round ``t``'s auxiliary ``stream``; returns each client's mean loss ``[n]``.
        ``steps`` for every client, or ``epochs`` (``ceil(epochs * m_i / batch_size)``)."""
        if (steps is None) == (epochs is None):
            raise ValueError("local_train needs exactly one of steps or epochs")
        g = self._g
        if g is None or g.shape != x.shape or g.dtype != x.dtype:
            g = self._g = torch.zeros_like(x)
        sizes = torch.as_tensor(np.array(self.data.sizes("train")), device=x.device)
        todo = steps_per_client(steps, epochs, sizes, self.batch_size)
        cols = self.layout.cols(part)
        total = torch.zeros(x.shape[0], dtype=x.dtype, device=x.device)
        count = torch.zeros_like(total)
        for k in range(int(todo.max())):
            xb, yb = self.data.sample(t, AUX_STEP * (1 + stream) + k, self.batch_size)
            loss = self.executor.grad(x, xb.to(x.dtype), yb, part, g)
            active = (todo > k).to(x.dtype)
            x[:, cols].addcmul_(g[:, cols], (active * lr).unsqueeze(1), value=-1.0)
            total += loss.detach() * active
            count += active
        return total / count.clamp_min(1)

    def _score(self, x: Tensor, split: str, rows: Tensor | None = None,
               fallback: str | None = None) -> tuple[Tensor, Tensor, Tensor]:
        sums = split_sums(self.executor, x, self.data, split, rows=rows)
        some = int(np.sum(self.data.sizes(split))) > 0
        if fallback is not None and bool((sums[:, 2] == 0).any()) and some:
            # only the clients without ``split`` samples read ``fallback``'s sums (of data
            # with a ``split`` split: without one, every client lacks it and that is an error)
            sums = torch.where((sums[:, 2] == 0).unsqueeze(1),
                               split_sums(self.executor, x, self.data, fallback, rows=rows), sums)
        correct, loss, count = sums.unbind(1)
        if bool((count == 0).any()):
            i = int(torch.nonzero(count == 0)[0, 0])
            i = i if rows is None else int(rows[i])
            who = f"client {i} has no {split!r} samples" + (
                (f" nor {fallback!r} samples (the fallback)" if fallback else "") if some
                else " (the data has none)")
            raise ValueError(f"{who}; build the data with a {split} split (e.g. "
                             f"federate(..., {split}=0.1), or from_clients(..., {split}=pairs))")
        return correct, loss, count

    def losses(self, x: Tensor, split: str = "val", *, rows: Tensor | None = None,
               fallback: str | None = None) -> Tensor:
        """``[n]``: mean loss of row ``i`` of ``x`` on client ``i``'s ``split`` (``"train"``,
        ``"val"`` or ``"test"``). With ``rows`` (increasing row indices) only those rows'
        losses, ``[len(rows)]``, the same numbers: only their rows are scored where the
        executor computes a client's loss alike whatever the others
        (:func:`~topofl.engine.scoring.rows_independent`), else every row is. With
        ``fallback`` (another split), a client without ``split`` samples is scored on its
        ``fallback`` samples instead (e.g. a client of a few samples whose validation share
        rounds to none), where the data has a ``split`` split at all (some client holds such
        samples); otherwise such a client is an error."""
        if fallback is not None:
            check_choice(fallback, "fallback", ("train", "val", "test"))
        _, loss, count = self._score(x, split, rows, fallback)
        return (loss / count).to(x.dtype)

    def accuracies(self, x: Tensor, split: str = "val") -> Tensor:
        """``[n]`` float64: accuracy of row ``i`` of ``x`` on client ``i``'s ``split``."""
        correct, _, count = self._score(x, split)
        return correct / count

    def cross_losses(self, x: Tensor, peers: Tensor, *, t: int, stream: int = 0) -> Tensor:
        """``[m, k]``: loss of row ``r``'s model (``x[r]``) on a training batch of client
        ``peers[r, j]`` (a global id; round ``t``'s auxiliary ``stream``), the batch that
        client draws wherever it lives.

        Each process draws its own clients' batches and fetches those of the peers its rows
        name (``clients.fetch``; a batch is smaller than a model, so the data travels, not the
        models); a collective where the clients are spread over processes.
        """
        m = self.clients.m
        if peers.dim() != 2 or peers.shape[0] != m:
            raise ValueError(f"peers must be [m, k] with this process's m={m} rows, got "
                             f"{tuple(peers.shape)}")
        xb, yb = self.data.sample(t, AUX_STEP * (100 + stream), self.batch_size)
        ids = np.unique(peers.detach().cpu().numpy())
        fx, fy = self.clients.fetch(ids, xb, yb, what="fetching peers' batches")
        pos = torch.searchsorted(torch.as_tensor(ids, device=peers.device), peers.contiguous())
        return batch_losses(self.executor, x, fx, fy, pos)

    def _body_executor(self) -> tuple[Any, Any]:
        """``(body, executor over the body's parameters or None)`` for :meth:`features`.

        The executor is of the engine executor's kind, on the body of its model; ``None`` for a
        body without parameters (e.g. ``logistic``'s ``Flatten``), which is called directly.
        """
        if self._body is not None:
            return self._body  # type: ignore[no-any-return]
        model = getattr(self.executor, "model", None)
        body = getattr(model, "body", None)
        if not isinstance(body, torch.nn.Module):
            raise ValueError(
                "features need the model's features before its last layer: the model must be "
                "a topofl.models.SplitModel (a body and a head), got "
                f"{type(model).__name__}"
            )
        if self.layout.num_body == 0:
            self._body = (body, None)
            return self._body  # type: ignore[no-any-return]
        lay = ParamLayout.from_model(body, head=[])
        if tuple(f"body.{k}" for k in lay.names) != self.layout.names_of("body"):
            raise ValueError(
                "the model's body parameters are not the layout's body columns: "
                f"{list(lay.names)} vs {list(self.layout.names_of('body'))}"
            )
        ex = self.executor
        body_ex: Any
        if isinstance(ex, LoopExecutor):
            body_ex = LoopExecutor(body, lay, threads=ex.threads, channels_last=ex.channels_last,
                                   objective=ex.objective)
        else:
            body_ex = BatchedExecutor(body, lay, getattr(ex, "chunk_size", None),
                                      objective=objective_of(ex))
        self._body = (body, body_ex)
        return self._body  # type: ignore[no-any-return]

    def features(self, x: Tensor, inputs: Tensor, *, shared_input: bool = False) -> Tensor:
        """``[n, m, d]``: the body's output (the head's input) with row ``i`` of ``x`` on
        ``inputs[i]`` (``[n, m, ...]``), or on the shared ``inputs`` (``[m, ...]``)."""
        body, ex = self._body_executor()
        n = x.shape[0]
        if ex is None:  # no parameters: the same map for every client
            with torch.no_grad():
                if shared_input:
                    f = body(inputs)
                    return f.unsqueeze(0).expand(n, *f.shape)  # type: ignore[no-any-return]
                f = body(inputs.reshape(-1, *inputs.shape[2:]))
                return f.reshape(inputs.shape[0], inputs.shape[1], -1)  # type: ignore[no-any-return]
        out: Tensor = ex.logits(x[:, self.layout.cols("body")], inputs, shared_input=shared_input)
        return out

    def split_features(self, x: Tensor, split: str = "train") -> tuple[Tensor, Tensor, Tensor]:
        """Features of every client's own ``split`` samples under row ``i`` of ``x``:
        ``(features [n, M, d], labels [n, M], mask [n, M] bool)``, padded to the largest client
        (``mask`` marks its real samples)."""
        data, n = self.data, x.shape[0]
        chunk = eval_chunk(n, int(data.num_classes), 4 * int(np.prod(data.input_shape)))
        chunk = min(chunk, max(1, int(np.max(data.sizes(split)))))
        feats, labels, masks = [], [], []
        for b in data.eval_batches(split, batch_size=chunk):
            feats.append(self.features(x, b.x.to(x.dtype)))
            labels.append(b.y)
            masks.append(torch.ones_like(b.y, dtype=torch.bool) if b.mask is None
                         else b.mask.to(torch.bool))
        return torch.cat(feats, dim=1), torch.cat(labels, dim=1), torch.cat(masks, dim=1)
