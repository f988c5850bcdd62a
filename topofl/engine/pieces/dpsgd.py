r"""DP-SGD in the local step (Abadi et al., CCS 2016): :class:`DPSGD`, a local update around
another whose gradients are the clipped and noised per-sample gradients.

In every local step, client ``i``'s batch of ``b`` samples gives ``b`` per-sample gradients
$g_j$ at the piece's point (on the phase's columns); each is clipped to l2 norm ``C``, they are
summed, Gaussian noise is added and the sum is divided by ``b``:

$$\tilde g = \frac1b\Big(\sum_{j=1}^b g_j \min\big(1, C / \|g_j\|\big)
+ \mathcal N(0, \sigma^2 C^2 I)\Big),$$

which the wrapped piece then applies as it applies a gradient (SGD, momentum, FedProx's term
...: post-processing). The per-sample gradients come from the run's executor on the rows
repeated once per sample (``point.repeat_interleave(b, 0)``, batches of one), in blocks of
clients whose ``[rows * b, P]`` gradients take at most :data:`BLOCK_BYTES`. Row ``r``'s noise
of round ``t``, local step ``s`` (the round's step counter over its phases) is drawn from the
stream ``(seed, STREAM, t, s, id_r)`` (``id_r``: :func:`~topofl.engine.protocol.run_ids`), so a
run, resumed or not, draws the same noise.

The engine takes these gradients through the optional member :meth:`DPSGD.take_gradient`
(:class:`~topofl.engine.local.LocalStepper`: in place of ``executor.grad``, never fused, never
on few rows). The piece counts, per round, the per-sample gradients clipped and the local steps
taken (:meth:`DPSGD.records`: ``dp_clipped`` and ``dp_epsilon``, the spend of ``(t + 1) S``
steps, ``S`` the steps of a round, at the rate ``q = b / m_min`` of the smallest client:
:func:`topofl.privacy.dp_sgd_spend`).

Examples
--------
>>> import torch
>>> from topofl.engine.pieces import SGD
>>> from topofl.engine.pieces.dpsgd import DPSGD
>>> piece = DPSGD(SGD(), clip=1.0, noise=1.0, seed=0, delta=1e-5)
>>> piece.rowwise, piece.fused(None), piece.skips_idle
(True, None, False)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from torch import Tensor

from topofl._utils.rng import generator_at
from topofl.engine.protocol import Kernel, Phase, Round, Services, State, run_ids
from topofl.privacy.dpsgd import dp_sgd_spend

__all__ = ["BLOCK_BYTES", "DPSGD", "STREAM", "clip_sum", "guard_data"]

#: the tag of the noise's streams ``(seed, STREAM, t, step, id)``
STREAM = 7_413
#: bytes of per-sample gradients taken at once (a block of clients)
BLOCK_BYTES = 64 << 20

#: the services that read the clients' data outside the local step (``DataServices``)
_DATA_SERVICES = frozenset({"local_train", "losses", "cross_losses", "accuracies", "features",
                            "split_features"})


def clip_sum(grads: Tensor, clip: float, batch: int) -> tuple[Tensor, Tensor]:
    """Each row of ``grads`` ``[k * batch, p]`` clipped to l2 norm ``clip`` and summed per
    block of ``batch`` rows: ``([k, p] sums, [k * batch] norms before clipping)``.

    Examples
    --------
    >>> import torch
    >>> from topofl.engine.pieces.dpsgd import clip_sum
    >>> s, norms = clip_sum(torch.tensor([[3.0, 4.0], [0.3, 0.4]]), 1.0, 2)
    >>> s.tolist(), norms.tolist()
    ([[0.9000000357627869, 1.2000000476837158]], [5.0, 0.5])
    """
    norms = torch.linalg.vector_norm(grads, dim=1)
    scale = torch.clamp(clip / torch.clamp(norms, min=torch.finfo(norms.dtype).tiny), max=1.0)
    sums = (grads * scale.unsqueeze(1)).view(-1, batch, grads.shape[1]).sum(dim=1)
    return sums, norms


class _Guarded:
    """``env`` with the services that read the clients' data refused (the rest as ``env``)."""

    def __init__(self, env: Services, name: str) -> None:
        self._env, self._name = env, name

    def __getattr__(self, key: str) -> Any:
        if key in _DATA_SERVICES:
            raise ValueError(f"with_dp_sgd cannot account {self._name}: it reads its clients' "
                             f"data outside the local step (env.{key}), which DP-SGD does not "
                             "privatize")
        return getattr(self._env, key)


def guard_data(env: Services, name: str) -> Services:
    """``env`` whose data services (``local_train``, ``losses`` ...) raise a ``ValueError``
    naming the algorithm ``name``: what DP-SGD's account would miss is refused.

    Examples
    --------
    >>> from topofl.engine.pieces.dpsgd import guard_data
    >>> env = guard_data(tf.engine.toy_services(3), "dpfl")
    >>> env.n
    3
    >>> env.losses  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: with_dp_sgd cannot account dpfl: it reads its clients' data outside ...
    """
    return _Guarded(env, name)  # a proxy: the protocol is structural


@dataclass
class _Tally:
    """The round's counts: per-sample gradients clipped and taken, local steps, batch."""

    clipped: int = 0
    samples: int = 0
    steps: set[int] = field(default_factory=set)
    batch: int = 0
    checked: bool = False


@dataclass(frozen=True, eq=False)
class DPSGD:
    """The local update ``inner`` fed DP-SGD's gradients (see the module).

    Parameters
    ----------
    inner : LocalUpdate
        The piece that applies the gradients (its ``update``, ``point`` and buffers).
    clip : float
        ``C > 0``, the l2 bound of a per-sample gradient.
    noise : float
        ``sigma > 0``, the noise multiplier: the summed gradient's noise has std ``sigma C``.
    seed : int
        The noise's seed.
    delta : float
        The ``delta`` of the recorded ``dp_epsilon``.
    name : str, default "the algorithm"
        The algorithm's name, for the refusals.
    """

    inner: Any
    clip: float
    noise: float
    seed: int
    delta: float
    name: str = "the algorithm"
    _tally: _Tally = field(default_factory=_Tally, compare=False, repr=False)

    @property
    def rowwise(self) -> bool:
        """As the inner piece (a row's gradient is its own client's)."""
        return bool(getattr(self.inner, "rowwise", False))

    @property
    def skips_idle(self) -> bool:
        """Never: every row's gradient is taken through :meth:`take_gradient`."""
        return False

    def fused(self, executor: Any) -> Kernel | None:
        """Never fused."""
        return None

    def init_(self, state: State, env: Services) -> None:
        """The inner piece's buffers."""
        init_ = getattr(self.inner, "init_", None)
        if init_ is not None:
            init_(state, env)

    def point(self, state: State, phase: Phase, env: Services) -> Tensor:
        """As the inner piece (``state.x`` by default)."""
        point = getattr(self.inner, "point", None)
        if point is None:
            return state.x
        out: Tensor = point(state, phase, guard_data(env, self.name))
        return out

    def update(self, state: State, grads: Tensor, phase: Phase, lr: Tensor, rnd: Round,
               env: Services) -> None:
        """The inner piece's update of the DP-SGD gradients."""
        self.inner.update(state, grads, phase, lr, rnd, guard_data(env, self.name))

    def start_run(self) -> None:
        """Forget the checks of a run before (a new state is built)."""
        self._tally.checked = False

    def round_start(self, rnd: Round) -> None:
        """Reset the round's counts."""
        tally = self._tally
        tally.clipped = tally.samples = 0
        tally.steps.clear()

    def take_gradient(self, executor: Any, point: Tensor, batch: tuple[Tensor, Tensor],
                      phase: Phase, out: Tensor, rnd: Round, step: int, env: Services,
                      first: int) -> Tensor:
        """DP-SGD's gradients at ``point`` of the rows ``first ..`` on their ``batch``
        ``(x [m, b, ...], y [m, b])`` into ``out[:, cols]``; their losses ``[m]``."""
        x, y = batch
        m, b = int(x.shape[0]), int(x.shape[1])
        tally = self._tally
        if not tally.checked:
            self._check(executor, b, env)
        cols = env.layout.cols(phase.part)
        width = cols.stop - cols.start
        ids = run_ids(env)[first: first + m]
        p = point.shape[1]
        per = max(1, BLOCK_BYTES // max(1, b * p * point.element_size()))
        losses = torch.empty(m, dtype=point.dtype, device=point.device)
        for a in range(0, m, per):
            c = slice(a, min(m, a + per))
            k = c.stop - a
            rows = point[c].repeat_interleave(b, dim=0)
            g = torch.zeros(k * b, p, dtype=point.dtype, device=point.device)
            loss = executor.grad(rows, x[c].reshape(k * b, 1, *x.shape[2:]),
                                 y[c].reshape(k * b, 1, *y.shape[2:]), phase.part, g)
            sums, norms = clip_sum(g[:, cols], self.clip, b)
            draws = np.stack([generator_at(self.seed, STREAM, rnd.t, step, int(i))
                              .standard_normal(width) for i in ids[c]])
            eta = torch.as_tensor(draws, dtype=sums.dtype, device=sums.device)
            sums.add_(eta, alpha=self.noise * self.clip).div_(b)
            out[c, cols] = sums
            losses[c] = loss.view(k, b).mean(dim=1)
            tally.clipped += int((norms > self.clip).sum())
            tally.samples += k * b
        tally.steps.add(int(step))
        tally.batch = b
        return losses

    def _check(self, executor: Any, batch: int, env: Services) -> None:
        """Refuse a model whose loss is not a sum over the samples, a batch larger than the
        smallest client's training set; once per run."""
        model = getattr(executor, "model", None)
        if model is not None:
            norms = [type(mod).__name__ for mod in model.modules()
                     if isinstance(mod, torch.nn.modules.batchnorm._BatchNorm)]
            if norms:
                raise ValueError(f"DP-SGD needs a loss that is a sum over the samples: the "
                                 f"model's {norms[0]} mixes a batch's samples (use GroupNorm "
                                 "or none)")
        sizes = env.train_sizes
        if sizes is None or not sizes.numel():
            raise ValueError("DP-SGD's accountant needs the clients' training-set sizes")
        if batch > int(sizes.min()):
            raise ValueError(f"DP-SGD's accountant needs batches no larger than the smallest "
                             f"client's training set: batch {batch} > {int(sizes.min())} "
                             "samples")
        self._tally.checked = True

    def records(self, rnd: Round, env: Services) -> dict[str, float]:
        """The round's ``dp_epsilon`` (after ``(t + 1) S`` steps) and ``dp_clipped``."""
        tally = self._tally
        sizes = env.train_sizes
        if not tally.steps or sizes is None:  # no local step: nothing spent in this round
            return {"dp_epsilon": 0.0, "dp_clipped": 0.0}
        q = tally.batch / float(sizes.min())
        eps = dp_sgd_spend(self.noise, q, (rnd.t + 1) * len(tally.steps), delta=self.delta)
        clipped = tally.clipped / tally.samples if tally.samples else 0.0
        return {"dp_epsilon": eps, "dp_clipped": clipped}
