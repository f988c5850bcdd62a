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

from topofl.engine.evaluation import eval_chunk, score_chunks
from topofl.engine.gossip import Mixer
from topofl.engine.layout import ParamLayout
from topofl.engine.local import steps_per_client
from topofl.engine.protocol import Part

__all__ = ["DataServices", "AUX_STEP"]

AUX_STEP = 1 << 20  # auxiliary draws use steps >= 2**20 of a round: disjoint from the phases'


class DataServices:
    """:class:`~topofl.engine.Services` backed by an executor and federated data.

    Parameters
    ----------
    layout : ParamLayout
    mixer : Mixer
    executor : Executor
    data : FederatedData
    batch_size : int
        Mini-batch size of ``local_train`` and ``cross_losses``.

    Examples
    --------
    >>> import torch
    >>> data = tf.data.federate("digits", "iid", 4, seed=0, val=0.2)
    >>> model = tf.models.build_model("logistic", data.input_shape, 10, seed=0)
    >>> layout = tf.engine.ParamLayout.from_model(model)
    >>> env = tf.engine.DataServices(layout, tf.engine.Mixer(torch.device("cpu"), torch.float32),
    ...     tf.engine.BatchedExecutor(model, layout), data, batch_size=8)
    >>> x = torch.zeros(4, layout.num_params)
    >>> [round(v, 4) for v in env.losses(x, "val").tolist()]  # log(10) at zero parameters
    [2.3026, 2.3026, 2.3026, 2.3026]
    """

    def __init__(self, layout: ParamLayout, mixer: Mixer, executor: Any, data: Any,
                 batch_size: int) -> None:
        self.layout, self.mixer, self.executor, self.data = layout, mixer, executor, data
        self.batch_size = int(batch_size)
        self.n = int(data.num_clients)
        self.train_sizes: Tensor | None = torch.as_tensor(np.array(data.sizes("train")),
                                                          device=data.device)
        self._g: Tensor | None = None

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

    def _score(self, x: Tensor, split: str) -> tuple[Tensor, Tensor, Tensor]:
        data, n = self.data, x.shape[0]
        chunk = eval_chunk(n, int(data.num_classes), 4 * int(np.prod(data.input_shape)))
        # never pad beyond the largest client: padding costs forward passes
        chunk = min(chunk, max(1, int(np.max(data.sizes(split)))))
        batches = ((b.x, b.y, b.mask) for b in data.eval_batches(split, batch_size=chunk))
        correct, loss, count = score_chunks(self.executor, x, batches, n, shared=False)
        if bool((count == 0).any()):
            i = int(torch.nonzero(count == 0)[0, 0])
            raise ValueError(
                f"client {i} has no {split!r} samples; build the data with a {split} split "
                f"(e.g. federate(..., {split}=0.1))"
            )
        return correct, loss, count

    def losses(self, x: Tensor, split: str = "val") -> Tensor:
        """``[n]``: mean loss of row ``i`` of ``x`` on client ``i``'s ``split`` (``"train"``,
        ``"val"`` or ``"test"``)."""
        _, loss, count = self._score(x, split)
        return (loss / count).to(x.dtype)

    def accuracies(self, x: Tensor, split: str = "val") -> Tensor:
        """``[n]`` float64: accuracy of row ``i`` of ``x`` on client ``i``'s ``split``."""
        correct, _, count = self._score(x, split)
        return correct / count

    def cross_losses(self, x: Tensor, peers: Tensor, *, t: int, stream: int = 0) -> Tensor:
        """``[n, k]``: loss of client ``i``'s model (row ``i`` of ``x``) on a training batch of
        client ``peers[i, j]`` (round ``t``'s auxiliary ``stream``)."""
        n, k = peers.shape
        xb, yb = self.data.sample(t, AUX_STEP * (100 + stream), self.batch_size)
        xb = xb.to(x.dtype)
        out = torch.empty(n, k, dtype=x.dtype, device=x.device)
        for j in range(k):
            idx = peers[:, j]
            logits = self.executor.logits(x, xb.index_select(0, idx))
            yy = yb.index_select(0, idx)
            ls = torch.nn.functional.cross_entropy(
                logits.reshape(-1, logits.shape[-1]), yy.reshape(-1), reduction="none"
            ).reshape(yy.shape)
            out[:, j] = ls.mean(dim=1)
        return out
