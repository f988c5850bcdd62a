r"""Full batches: every local step on each client's whole training set, in order.

:func:`topofl.run` draws each client's mini-batch with replacement
(:meth:`~topofl.data.FederatedData.sample`). Optimisation benchmarks step on full gradients
instead: decent-bench's agents take $\nabla f_i(x) = \frac{1}{m} A_i^\top (A_i x - b_i)$ over
all their $m$ rows, and the decentralized methods' theory (gradient tracking, EXTRA, exact
diffusion reaching the exact optimum) is written for them. :func:`full_batches` gives data
whose every batch is each client's training rows, so that a run through the batched engine
takes those steps: ``batch_size`` is then the clients' common sample count, and a step of
``local_epochs=1`` is one full gradient.

Examples
--------
Four clients of 6 samples each: every batch is a client's rows, in order.

>>> import numpy as np
>>> rng = np.random.default_rng(0)
>>> pairs = [(rng.normal(size=(6, 2)), rng.normal(size=6)) for _ in range(4)]
>>> data = tf.data.full_batches(tf.data.from_clients(pairs, seed=0))
>>> data.sample_indices(round=5, step=3, batch_size=6)[1].tolist()
[6, 7, 8, 9, 10, 11]
>>> data.params["sampling"]
'full'
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from types import MappingProxyType

import numpy as np
import torch

from topofl._utils.validation import check_int
from topofl.data.federated import FederatedData

__all__ = ["full_batches"]


@dataclass(frozen=True, eq=False, repr=False)
class FullBatches(FederatedData):
    """A :class:`~topofl.data.FederatedData` whose every batch is each client's whole
    training set, in order (:func:`full_batches`); all else as the data it was made from."""

    def sample_indices(self, round: int, step: int, batch_size: int) -> torch.Tensor:
        """``[n_clients, m]``: every client's ``m`` training rows, whatever the round and
        step (``batch_size`` must be ``m``)."""
        check_int(round, "round", low=0)
        check_int(step, "step", low=0)
        b = check_int(batch_size, "batch_size", low=1)
        seg = self._segments["train"]
        m = int(seg.sizes[0])
        if b != m:
            raise ValueError(f"full batches: a client's batch is its {m} training samples, so "
                             f"batch_size must be {m}, got {b}")
        idx = seg.offsets[:, None] + np.arange(m, dtype=np.int64)[None, :]
        return torch.from_numpy(idx).to(self.device)


def full_batches(data: FederatedData) -> FederatedData:
    """``data`` with every batch each client's whole training set, in order.

    Parameters
    ----------
    data : FederatedData
        Every client holds the same number ``m >= 1`` of training samples (a batch is one
        ``[n_clients, m]`` block).

    Returns
    -------
    FederatedData
        The same samples, splits and evaluation; :meth:`~FederatedData.sample` returns every
        client's ``m`` rows at every round and step (``batch_size`` must be ``m``), and
        ``params["sampling"]`` is ``"full"``, so a run's hash tells it from the mini-batch
        run of the same data.

    Raises
    ------
    TypeError
        ``data`` is not a :class:`FederatedData`.
    ValueError
        Clients of unequal (or no) training samples.

    Examples
    --------
    >>> data = tf.data.federate("digits", "iid", 4, seed=0)
    >>> tf.data.full_batches(data)
    Traceback (most recent call last):
    ...
    ValueError: full batches need equal training sizes (at least one sample), found 360 to 361
    """
    if not isinstance(data, FederatedData):
        raise TypeError(f"data must be a FederatedData, got {type(data).__name__}")
    sizes = np.asarray(data.sizes("train"))
    lo, hi = (int(sizes.min()), int(sizes.max())) if sizes.size else (0, 0)
    if lo != hi or not lo:
        raise ValueError("full batches need equal training sizes (at least one "
                         f"sample), found {lo} to {hi}")
    kw = {f.name: getattr(data, f.name) for f in fields(FederatedData) if f.init}
    kw["params"] = MappingProxyType({**data.params, "sampling": "full"})
    kw["_dev"] = {}
    return FullBatches(**kw)
