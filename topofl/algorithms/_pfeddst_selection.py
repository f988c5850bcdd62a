"""PFedDST's peer selection (:func:`~topofl.algorithms.pfeddst`): the communication score of
eq. (9) (:func:`pfeddst_scores`), the selection of the best-scored peers (:func:`pfeddst_select`,
Algorithm 1, line 7) and the hyper-parameters of both as a group that checks itself
(:class:`PeerSelection`). The round's steps that use them live in
:mod:`topofl.algorithms.pfeddst`, which re-exports the two functions."""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import Any, TypedDict

import numpy as np
import torch
from torch import Tensor

from topofl._utils.validation import check_choice, check_int, check_real
from topofl.algorithms.hparams import Group

__all__ = ["pfeddst_scores", "pfeddst_select", "PeerSelection", "PeerSelectionKeywords",
           "resolve_peers"]

_DEFAULT_PEERS = 10  # Section III-A: "10 clients are also chosen at each communication round"


# --------------------------------------------------------------------------- the score (eq. 6-9)


def _header_distance(heads: Tensor, rows: Tensor | None = None, eps: float = 1e-12) -> Tensor:
    """``[m, n]`` matrix of ``1 - cos(h_i, h_j)`` for ``i`` in ``rows`` (all by default) and
    every ``j`` (a zero head has cosine 0 with everything)."""
    norms = heads.norm(dim=1).clamp_min(eps)
    unit = heads / norms.unsqueeze(1)
    mine = unit if rows is None else unit.index_select(0, rows)
    dist: Tensor = 1.0 - mine @ unit.T
    return dist


def pfeddst_scores(
    losses: Tensor,
    heads: Tensor,
    last: Tensor,
    round: float,
    *,
    alpha: float,
    lam: float,
    c: float | Tensor,
    rows: Tensor | None = None,
) -> Tensor:
    r"""PFedDST's communication score of every peer for every client (eq. 9).

    $S_{ij} = s_p^{ij}(\alpha s_l^{ij} - s_d^{ij} + c_{ij})$ with $s_l^{ij}$ = ``losses[i, j]``
    (eq. 6), $s_d^{ij} = 1 - \cos(h_i, h_j)$ (eq. 7 turned into a distance) and
    $s_p^{ij} = 1 - \exp(-\lambda(\text{round} - \text{last}_{ij}))$ (eq. 8).

    Parameters
    ----------
    losses : Tensor
        ``[n, n]`` loss array: ``losses[i, j]`` is the loss of client ``i``'s model on client
        ``j``'s data (the loss score $s_l$; non-negative, it is a norm of a loss in eq. 6).
    heads : Tensor
        ``[n, h]`` flattened head (classifier) parameters of every client.
    last : Tensor
        ``[n, n]`` peer recency array: ``last[i, j]`` is the round in which ``i`` last selected
        ``j`` (0 when never).
    round : float
        The current round, counted from 1 as in Algorithm 1.
    alpha : float
        Weight $\alpha \ge 0$ of the loss score.
    lam : float
        Rate $\lambda > 0$ of the exponential CDF of the recency score.
    c : float or Tensor
        Communication-cost score: a constant, or an ``[n, n]`` matrix ``c[i, j]``.
    rows : Tensor, optional
        ``[m]`` int64: score only the clients ``rows`` (a distributed rank's own). ``losses``,
        ``last`` and a matrix ``c`` then hold their ``[m, n]`` rows; ``heads`` stays every
        client's ``[n, h]``.

    Returns
    -------
    Tensor
        ``[n, n]`` (``[m, n]``) scores in the dtype of ``losses``; entry ``[r, rows[r]]`` (the
        diagonal) is ``-inf`` (a client never selects itself).

    Notes
    -----
    Eq. (7) of the paper is the cosine *similarity* of the two heads, yet eq. (9) subtracts
    $s_d$ and the text says the score must grow as $s_d$ decreases, "reflecting a higher task
    similarity" (Section II-B). A similarity would do the opposite, so $s_d$ is the cosine
    *distance* $1 - \cos(h_i, h_j) \in [0, 2]$. Cost: $O(n^2 h)$.

    Examples
    --------
    Three clients; with $\lambda = \ln 2$ at round 1 every recency score is $1 - 1/2$:

    >>> import math, torch
    >>> L = torch.tensor([[0.0, 2.0, 1.0], [1.0, 0.0, 1.0], [3.0, 1.0, 0.0]])
    >>> H = torch.tensor([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    >>> S = tf.algorithms.pfeddst_scores(L, H, torch.zeros(3, 3), 1, alpha=1.0,
    ...                                  lam=math.log(2), c=2.0)
    >>> S.tolist()
    [[-inf, 2.0, 1.0], [1.5, -inf, 1.0], [2.0, 1.0, -inf]]
    """
    n = heads.shape[0] if heads.dim() == 2 else -1
    m = n if rows is None else int(rows.numel())
    what = "[n, n]" if rows is None else "[m, n] (the rows' rows)"
    if losses.dim() != 2 or tuple(losses.shape) != (m, n) or tuple(last.shape) != (m, n):
        raise ValueError(
            f"losses and last must both have shape {what} = [{m}, {n}], got "
            f"{tuple(losses.shape)} and {tuple(last.shape)}"
        )
    if heads.dim() != 2 or heads.shape[0] != n:
        raise ValueError(f"heads must have shape [n={n}, h], got {tuple(heads.shape)}")
    alpha = check_real(alpha, "alpha", low=0)
    lam = check_real(lam, "lam", low=0, low_open=True)
    dtype = losses.dtype
    s_l = losses
    s_d = _header_distance(heads.to(dtype), rows)
    age = (float(round) - last.to(dtype)).clamp_min(0)
    s_p = -torch.expm1(-lam * age)  # 1 - exp(-lam * age), accurate for small ages
    cost = c if isinstance(c, Tensor) else torch.tensor(float(c), dtype=dtype)
    S = s_p * (alpha * s_l - s_d + cost.to(device=losses.device, dtype=dtype))
    if rows is None:
        S.fill_diagonal_(-math.inf)
    else:
        S[torch.arange(m, device=S.device), rows.to(S.device)] = -math.inf
    return S


def pfeddst_select(scores: Tensor, k: int) -> tuple[Tensor, Tensor]:
    """The ``k`` best-scored peers of every client (Algorithm 1, line 7).

    Parameters
    ----------
    scores : Tensor
        ``[n, n]`` scores (or some clients' ``[m, n]`` rows); ``-inf`` marks a peer that may
        not be chosen (the client itself, a client outside its candidates).
    k : int
        Number of peers, ``0 <= k <= n - 1``.

    Returns
    -------
    peers : Tensor
        ``[n, k]`` (``[m, k]``) int64 indices, best first; ties go to the lower index.
    valid : Tensor
        ``[n, k]`` (``[m, k]``) bool: false where fewer than ``k`` peers could be chosen
        (their ``peers`` entries are then meaningless).

    Examples
    --------
    >>> import torch
    >>> S = torch.tensor([[-float("inf"), 1.0, 3.0, 1.0],
    ...                   [2.0, -float("inf"), -float("inf"), -float("inf")],
    ...                   [0.0, 0.0, -float("inf"), 0.0],
    ...                   [5.0, 4.0, 6.0, -float("inf")]])
    >>> peers, valid = tf.algorithms.pfeddst_select(S, 2)
    >>> peers.tolist(), valid.tolist()
    ([[2, 1], [0, 1], [0, 1], [2, 0]], [[True, True], [True, False], [True, True], [True, True]])
    """
    if scores.dim() != 2 or scores.shape[0] > scores.shape[1]:
        raise ValueError(f"scores must have shape [n, n] (or [m, n] rows, m <= n), got "
                         f"{tuple(scores.shape)}")
    n = scores.shape[1]
    k = check_int(k, "k", low=0, high=max(0, n - 1))
    vals, order = torch.sort(scores, dim=1, descending=True, stable=True)
    return order[:, :k], torch.isfinite(vals[:, :k])


# --------------------------------------------------------------------------- the hyper-parameters


def _check_cost(c: Any) -> float | list[list[float]]:
    if isinstance(c, numbers.Real) and not isinstance(c, bool):
        return check_real(c, "c")
    if isinstance(c, bool) or not (isinstance(c, (list, tuple, Tensor)) or hasattr(c, "__array__")):
        raise TypeError(f"c must be a real number or an [n, n] array, got {type(c).__name__}")
    arr = np.asarray(c.detach().cpu() if isinstance(c, Tensor) else c, dtype=np.float64)
    if arr.ndim != 2 or arr.shape[0] != arr.shape[1]:
        raise ValueError(f"c must be a real number or a square [n, n] array, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError("c must be finite")
    return [[float(v) for v in row] for row in arr]


def resolve_peers(peers: int | None, n: int) -> int:
    """The peers a client selects per round among ``n`` clients: ``peers``, by default
    ``min(10, n - 1)``; more than ``n - 1`` is an error."""
    if n < 2:
        raise ValueError(f"pfeddst needs at least 2 clients to select peers from, got n={n}")
    if peers is None:
        return min(_DEFAULT_PEERS, n - 1)
    if peers > n - 1:
        raise ValueError(
            f"peers={peers} requested, but a client has only n-1={n - 1} other clients to "
            "select from"
        )
    return peers


@dataclass(frozen=True)
class PeerSelection(Group):
    """How each PFedDST client selects the peers whose bodies it pulls: how many, the terms of
    the score (eq. 9) or a random draw, among which candidates, and what the records measure
    of the selection (the fields are documented at :func:`~topofl.algorithms.pfeddst`).

    Examples
    --------
    >>> from topofl.algorithms._pfeddst_selection import PeerSelection
    >>> PeerSelection(c=[[0, 1], [1, 0]]).checked()["cost"]
    [[0.0, 1.0], [1.0, 0.0]]
    >>> PeerSelection(lam=0)
    Traceback (most recent call last):
    ...
    ValueError: lam must be in (0, inf], got 0
    """

    peers: int | None = None
    alpha: float = 0.1
    lam: float = 1.0
    c: float | Any = 2.0
    selection: str = "score"
    candidates: str = "all"
    selection_seed: int = 0
    peer_accuracy: str | None = None

    def __post_init__(self) -> None:
        self.checked()

    def checked(self) -> dict[str, Any]:
        """The checked fields, as :class:`~topofl.algorithms.pfeddst.PFedDSTParams` takes
        them (``c`` as ``cost``: a float or an ``[n, n]`` list of lists)."""
        return dict(
            peers=None if self.peers is None else check_int(self.peers, "peers", low=1),
            alpha=check_real(self.alpha, "alpha", low=0),
            lam=check_real(self.lam, "lam", low=0, low_open=True), cost=_check_cost(self.c),
            selection=check_choice(self.selection, "selection", ("score", "random")),
            candidates=check_choice(self.candidates, "candidates", ("all", "neighbors")),
            selection_seed=check_int(self.selection_seed, "selection_seed", low=0),
            peer_accuracy=(None if self.peer_accuracy is None else
                           check_choice(self.peer_accuracy, "peer_accuracy", ("val", "test"))))


class PeerSelectionKeywords(TypedDict, total=False):
    """:class:`PeerSelection`'s fields as flat keywords."""

    peers: int | None
    alpha: float
    lam: float
    c: float | Any
    selection: str
    candidates: str
    selection_seed: int
    peer_accuracy: str | None
