r"""Least squares on every client: the linear model with a squared loss, for the reference
round driver.

Client $i$ holds $m_i$ samples, the rows of $A_i$ (``[m_i, d]``), with targets $b_i$
(``[m_i]``), and minimises

$$f_i(x) = \frac{1}{2 m_i} \|A_i x - b_i\|^2, \qquad
\nabla f_i(x) = \frac{1}{m_i} A_i^\top (A_i x - b_i),$$

decent-bench's ``LinearRegressionCost`` (the regression problems its benchmark and its test
suite run). :class:`LeastSquares` gives what :func:`~topofl.engine.run_rounds` and the pieces
read: the clients' full gradients (:meth:`LeastSquares.grad`, ``run_rounds``' ``grad``), their
losses at their own rows (:meth:`LeastSquares.losses`, what a selection by loss ranks) in
services that also know each client's sample count (:meth:`LeastSquares.services`:
``weighting="data_size"``, FedNova's weights), and the minimiser of the (weighted) sum
(:meth:`LeastSquares.minimiser`), the exact optimum that gradient tracking, EXTRA or exact
diffusion reach and D-SGD misses by its heterogeneity bias. The batched engine trains the
same cost on mini-batches: :func:`topofl.data.from_clients` with floating targets, whose
runs use the squared error (:mod:`topofl.engine.objectives`).

Examples
--------
Two clients of one feature whose optima are 1 and 3 (equal sample counts): gradient tracking
reaches the optimum of the sum, 2, exactly.

>>> import torch
>>> A = [torch.ones(2, 1, dtype=torch.float64), torch.ones(2, 1, dtype=torch.float64)]
>>> b = [torch.tensor([1.0, 1.0], dtype=torch.float64),
...      torch.tensor([3.0, 3.0], dtype=torch.float64)]
>>> ls = tf.engine.LeastSquares.of(A, b)
>>> ls.minimiser().tolist()
[2.0]
>>> run = tf.engine.run_rounds(tf.algorithms.dsgt(lr=0.2), torch.zeros(2, 1, dtype=torch.float64),
...                            tf.topologies.complete(2), ls.grad, rounds=200)
>>> [round(v, 10) for v in run.evaluated().flatten().tolist()]
[2.0, 2.0]
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from topofl.engine.protocol import ToyServices, toy_services

__all__ = ["LeastSquares", "LeastSquaresServices"]


def _rows_of(value: Any, name: str) -> tuple[Tensor, ...]:
    if isinstance(value, Tensor):
        return tuple(value.unbind(0))
    if not isinstance(value, Sequence) or isinstance(value, str):
        raise TypeError(f"{name} must be a sequence of per-client tensors (or one stacked "
                        f"tensor), got {type(value).__name__}")
    for i, t in enumerate(value):
        if not isinstance(t, Tensor):
            raise TypeError(f"{name}[{i}] must be a tensor, got {type(t).__name__}")
    return tuple(value)


@dataclass(frozen=True)
class LeastSquares:
    r"""Every client's least-squares cost $f_i(x) = \|A_i x - b_i\|^2 / (2 m_i)$ (module
    docstring); build it with :meth:`of`, which checks the shapes.

    Attributes
    ----------
    A : tuple of Tensor
        ``A[i]`` ``[m_i, d]``: client ``i``'s samples (floating point, one dtype for all).
    b : tuple of Tensor
        ``b[i]`` ``[m_i]``: their targets.
    """

    A: tuple[Tensor, ...]
    b: tuple[Tensor, ...]

    @classmethod
    def of(cls, A: Sequence[Tensor] | Tensor, b: Sequence[Tensor] | Tensor) -> LeastSquares:
        """The problem of the clients' samples ``A`` (``A[i]`` ``[m_i, d]``, or one
        ``[n, m, d]`` tensor) and targets ``b`` (``b[i]`` ``[m_i]``, or ``[n, m]``).

        Raises
        ------
        TypeError
            ``A`` or ``b`` not tensors, or not of one floating-point dtype.
        ValueError
            No client, unequal numbers of clients, a client without a sample, a sample of
            another width ``d``, or targets that do not match their samples.
        """
        As, bs = _rows_of(A, "A"), _rows_of(b, "b")
        if not As:
            raise ValueError("a least-squares problem needs at least one client, got none")
        if len(As) != len(bs):
            raise ValueError(f"A and b must hold the same clients, got {len(As)} and {len(bs)}")
        d = As[0].shape[-1] if As[0].dim() == 2 else None
        for i, (a, y) in enumerate(zip(As, bs, strict=True)):
            if a.dim() != 2 or a.shape[0] < 1 or a.shape[1] != d or d < 1:
                raise ValueError(f"A[{i}] must be [m_i, d] with m_i >= 1 and the d of A[0] "
                                 f"({d}), got {tuple(a.shape)}")
            if y.shape != (a.shape[0],):
                raise ValueError(f"b[{i}] must be [m_i] = [{a.shape[0]}] (one target per "
                                 f"sample of A[{i}]), got {tuple(y.shape)}")
            if not (a.is_floating_point() and a.dtype == y.dtype == As[0].dtype):
                raise TypeError(f"A and b must share one floating-point dtype, got A[{i}] "
                                f"{a.dtype} and b[{i}] {y.dtype} (A[0] {As[0].dtype})")
        return cls(As, bs)

    @property
    def n(self) -> int:
        """The number of clients."""
        return len(self.A)

    @property
    def d(self) -> int:
        """The model's size (the samples' width)."""
        return int(self.A[0].shape[1])

    @property
    def sizes(self) -> Tensor:
        """``[n]`` int64: each client's sample count $m_i$."""
        return torch.tensor([a.shape[0] for a in self.A], dtype=torch.int64)

    def _check(self, x: Tensor, rows: Sequence[int]) -> None:
        if x.dim() != 2 or x.shape != (len(rows), self.d):
            raise ValueError(f"the points must be [{len(rows)}, {self.d}] (one row per client "
                             f"asked for), got {tuple(x.shape)}")

    def grad(self, z: Tensor, *_: Any) -> Tensor:
        r"""``[n, d]``: every client's full gradient at its own row of ``z`` ``[n, d]``,
        $\nabla f_i(z_i)$ (extra arguments ignored: it is :func:`~topofl.engine.run_rounds`'
        ``grad(z, phase, rnd)``)."""
        self._check(z, range(self.n))
        return torch.stack([a.T @ (a @ z[i] - y) / a.shape[0]
                            for i, (a, y) in enumerate(zip(self.A, self.b, strict=True))])

    def losses(self, x: Tensor, rows: Sequence[int] | Tensor | None = None) -> Tensor:
        r"""``[k]``: $f_i(x_i)$ of the clients ``rows`` (all by default) at the rows of ``x``
        (``[k, d]``, row ``r`` client ``rows[r]``'s)."""
        ids = list(range(self.n)) if rows is None else [int(i) for i in rows]
        self._check(x, ids)
        return torch.stack([((self.A[i] @ x[r] - self.b[i]) ** 2).sum()
                            / (2 * self.A[i].shape[0]) for r, i in enumerate(ids)])

    def minimiser(self, weights: Sequence[float] | Tensor | None = None) -> Tensor:
        r"""``[d]``: the minimiser of $\sum_i w_i f_i$ (``weights`` $w_i \ge 0$, by default 1:
        the sum decentralized methods minimise), from its normal equations
        $\sum_i \frac{w_i}{m_i} A_i^\top A_i\, x = \sum_i \frac{w_i}{m_i} A_i^\top b_i$
        (least squares, for a singular system the minimiser of least norm)."""
        w = (torch.ones(self.n, dtype=self.A[0].dtype) if weights is None
             else torch.as_tensor(weights, dtype=self.A[0].dtype))
        if w.shape != (self.n,) or not bool(torch.isfinite(w).all() & (w >= 0).all()):
            raise ValueError(f"weights must be {self.n} finite non-negative numbers, got "
                             f"{w.tolist()}"[:300])
        H = torch.stack([w[i] * a.T @ a / a.shape[0] for i, a in enumerate(self.A)]).sum(0)
        c = torch.stack([w[i] * a.T @ y / a.shape[0]
                         for i, (a, y) in enumerate(zip(self.A, self.b, strict=True))]).sum(0)
        out: Tensor = torch.linalg.lstsq(H, c.unsqueeze(1)).solution[:, 0]
        return out

    def services(self) -> LeastSquaresServices:
        """Services for driving an algorithm by hand on this problem: toy services
        (:func:`~topofl.engine.toy_services`, ``[n, d]`` in the samples' dtype) whose
        ``train_sizes`` are the clients' sample counts and whose ``losses`` are
        :meth:`losses`."""
        toy = toy_services(self.n, self.d, dtype=self.A[0].dtype, train_sizes=self.sizes)
        return LeastSquaresServices(toy.layout, toy.mixer, self.n, train_sizes=self.sizes,
                                    problem=self)


@dataclass
class LeastSquaresServices(ToyServices):
    """:class:`~topofl.engine.protocol.ToyServices` of a :class:`LeastSquares` problem
    (:meth:`LeastSquares.services`): the clients' losses are its costs, on its one split,
    ``"train"``."""

    problem: LeastSquares | None = None

    def losses(self, x: Tensor, split: str = "val", *, rows: Tensor | None = None,
               fallback: str | None = None) -> Tensor:
        """``[k]``: the clients' costs at their rows of ``x`` (those of ``rows``, or all);
        ``split`` must be ``"train"``: the problem has no other samples (a ``fallback``
        applies only to data that has the split asked for)."""
        if self.problem is None:
            raise ValueError("LeastSquaresServices needs its problem (LeastSquares.services)")
        if split != "train":
            raise ValueError(f"a least-squares problem has one split, 'train', got "
                             f"split={split!r}")
        return self.problem.losses(x, rows)
