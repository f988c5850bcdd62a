r"""GGC and BGGC: the greedy construction of a client's collaborators in DPFL.

Client $k$ picks the clients it averages with by the randomized greedy rule of GGC
(Algorithm 2 of Kharrat et al.), which maximizes the reward
$R(S) = -F_k^V\big(\sum_{i \in S} p_i w_i / \sum_{i \in S} p_i\big)$, $k \in S$, over
subsets of its candidates; BGGC (Algorithm 3) reaches the same set (Theorem 1) while holding at
most $B_c$ received models at a time, through the running sums $w^X, w^Y$.

Two layers, both free of the engine (plain functions of models, weights and a loss oracle):

- :func:`ggc` and :func:`bggc`: Algorithms 2 and 3 for one client, as plain Python over a loss
  oracle (a set oracle ``f(S) -> float`` for GGC; the models, weights and a model-loss oracle
  ``f(w) -> float`` for BGGC);
- :func:`ggc_batched` and :func:`bggc_batched`: the same two algorithms for all clients at once,
  one candidate per client per step, so that one call of a batched loss (the engine's
  ``env.losses(x, "val")``) scores one candidate average for every client; :func:`greedy_rows`
  runs them for some clients only (a distributed rank's), from the models of the clients
  their candidates name.

:func:`topofl.algorithms.dpfl` composes them into the algorithm.

References
----------
.. [1] S. Kharrat, M. Canini, S. Horvath, "Decentralized Personalized Federated Learning",
   arXiv:2406.06520, 2024: Algorithm 2 (GGC), Algorithm 3 (BGGC); Theorem 1 and Appendix D
   (GGC = BGGC for the same seed).
.. [2] F. Fourati, V. Aggarwal, C. Quinn, M.-S. Alouini, "Randomized greedy learning for
   non-monotone stochastic submodular maximization under full-bandit feedback", AISTATS 2023
   (the randomized greedy rule GGC adapts).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np
import torch
from torch import Tensor

from topofl._utils.callables import takes_keyword
from topofl._utils.rng import Seed, as_generator
from topofl._utils.validation import check_int

__all__ = ["ggc", "bggc", "ggc_batched", "bggc_batched", "aggregation_matrix", "greedy_rows",
           "aggregation_rows", "bggc_received", "check_budget"]


# --------------------------------------------------------------------------- validation


def check_budget(budget: Any) -> int | None:
    """The budget $B_c$ checked: a positive int, or ``None`` (also for ``inf``) for no
    budget (the paper's $B_c = \\infty$)."""
    if budget is None:
        return None
    if isinstance(budget, float) and math.isinf(budget) and budget > 0:
        return None
    if isinstance(budget, bool) or not isinstance(budget, (int, np.integer)):
        raise TypeError(
            f"budget (B_c) must be a positive int, None or math.inf, got "
            f"{type(budget).__name__} {budget!r}"
        )
    if int(budget) < 1:
        raise ValueError(
            f"budget (B_c, the most collaborators a client may use) must be >= 1, got "
            f"{int(budget)}"
        )
    return int(budget)


def _check_candidates(client: int, candidates: Iterable[int]) -> list[int]:
    client = check_int(client, "client", low=0)
    out = sorted({check_int(j, "candidates[i]", low=0) for j in candidates})
    if client in out:
        raise ValueError(
            f"candidates must be the other clients (a client always keeps itself), but they "
            f"contain client {client}"
        )
    return out


def _draws(rng: np.random.Generator, m: int) -> tuple[np.ndarray, np.ndarray]:
    """The shuffle of the ``m`` sorted candidates and one uniform per decision, in this order.

    GGC and BGGC (and their batched forms) draw exactly these, so that the same seed gives the
    same visiting order and the same coin flips (Theorem 1).
    """
    return rng.permutation(m), rng.random(m)


def _add_probability(a: float, b: float) -> float:
    # p = a / (a + b); both gains zero: add (p = 1), Section 3.2 and Appendix B
    return a / (a + b) if a + b > 0 else 1.0


# --------------------------------------------------------------------------- pure, per client


def ggc(
    client: int,
    candidates: Iterable[int],
    loss: Callable[[frozenset[int]], float],
    *,
    budget: int | float | None = None,
    seed: Seed,
) -> frozenset[int]:
    r"""Greedy Graph Construction (Algorithm 2) for one client: its collaborators $C_k$.

    Starting from $X = \{k\}$ and $Y = S \cup \{k\}$, the candidates $j \in S$ are visited in a
    seeded random order; with the marginal gains $a = \max(R(X \cup \{j\}) - R(X), 0)$ of adding
    $j$ to $X$ and $b = \max(R(Y \setminus \{j\}) - R(Y), 0)$ of removing it from $Y$
    ($R = -$``loss``), $j$ joins $X$ with probability $a / (a + b)$ (1 when $a = b = 0$) and
    leaves $Y$ otherwise. The scan stops when the budget is reached.

    Parameters
    ----------
    client : int
        The client $k$ running GGC.
    candidates : iterable of int
        $S$: the clients it may collaborate with ($\Omega_k$ during training), not ``client``.
    loss : callable
        ``loss(X) -> float``: the validation loss $F_k^V$ of client $k$ at the ``p``-weighted
        average of the models of the clients in ``X`` (a frozenset that always holds ``client``).
    budget : int, None or math.inf, default None
        $B_c \ge 1$: the most collaborators $|C_k|$ (``None``/``inf``: no budget).
    seed : int or numpy.random.Generator
        Draws the visiting order (one permutation of the sorted candidates), then one uniform
        per candidate for the coin flips.

    Returns
    -------
    frozenset of int
        $C_k = X \setminus \{k\}$, a subset of ``candidates`` of size at most ``budget``.

    Raises
    ------
    ValueError
        ``budget < 1`` or ``candidates`` containing ``client``.

    Notes
    -----
    Algorithm 2 stops when $|X| = B_c$ with $k \in X$; read literally this never triggers for
    $B_c = 1$ (X jumps from 1 to 2 members), so the budget is read as eq. (3) states it, on the
    collaborators: the scan stops once $|C_k| = |X \setminus \{k\}| = B_c$. Cost: $4|S|$ calls
    of ``loss``, as written in Algorithm 2 (lines 3-6).

    References
    ----------
    Kharrat, Canini, Horvath, "Decentralized Personalized Federated Learning", Algorithm 2 and
    Section 3.2.

    Examples
    --------
    The synergy of Appendix A: each of clients 1 and 2 alone hurts client 0, both together
    help. GGC keeps both, whatever the order it visits them in.

    >>> L = {frozenset({0}): 1.0, frozenset({0, 1}): 1.1, frozenset({0, 2}): 1.1,
    ...      frozenset({0, 1, 2}): 0.8}
    >>> sorted(tf.algorithms.ggc(0, [1, 2], L.__getitem__, seed=0))
    [1, 2]

    With $B_c = 1$ it stops after its first addition: both gains of the first client it
    visits are zero, so that one is added (with probability 1).

    >>> sorted(tf.algorithms.ggc(0, [1, 2], L.__getitem__, budget=1, seed=0))
    [1]
    """
    S = _check_candidates(client, candidates)
    cap = check_budget(budget)
    order, u = _draws(as_generator(seed), len(S))
    X, Y = {client}, set(S) | {client}
    for step, idx in enumerate(order.tolist()):
        if cap is not None and len(X) - 1 >= cap:
            break
        j = S[idx]
        r_x = -float(loss(frozenset(X)))
        r_xj = -float(loss(frozenset(X | {j})))
        r_y = -float(loss(frozenset(Y)))
        r_yj = -float(loss(frozenset(Y - {j})))
        a = max(r_xj - r_x, 0.0)
        b = max(r_yj - r_y, 0.0)
        if u[step] < _add_probability(a, b):
            X.add(j)
        else:
            Y.discard(j)
    return frozenset(X - {client})


def bggc(
    client: int,
    candidates: Iterable[int],
    models: Tensor,
    weights: Tensor,
    loss: Callable[[Tensor], float],
    *,
    budget: int | float | None = None,
    seed: Seed,
) -> frozenset[int]:
    r"""Batched Greedy Graph Construction (Algorithm 3) for one client: its set $\Omega_k$.

    The same decisions as :func:`ggc`, but the client never holds more than $B_c$ received
    models: it first streams all candidates in batches of at most $B_c$ to accumulate
    $w^Y = p_k w_k + \sum_{j \in S} p_j w_j$ (lines 1-7), then streams them again in the
    shuffled order and keeps only the running sums $w^X = \sum_{i \in X} p_i w_i$ and $w^Y$,
    updated as $w^X \mathrel{+}= p_j w_j$ when $j$ is added and $w^Y \mathrel{-}= p_j w_j$ when
    it is removed (lines 8-27). The rewards are $R(X) = -F_k^V(w^X / \sum_X p_i)$,
    $R(X \cup \{j\}) = -F_k^V((w^X + p_j w_j)/(\sum_X p_i + p_j))$, and likewise for $Y$.

    Parameters
    ----------
    client : int
    candidates : iterable of int
        $S$ (all other clients, ``[N] \ {k}``, in the pre-processing of Algorithm 1).
    models : Tensor
        ``[n, P]``: row ``i`` is $w_i$.
    weights : Tensor
        ``[n]`` positive $p_i$ (training-set sizes in DPFL).
    loss : callable
        ``loss(w) -> float``: client $k$'s validation loss at the parameter vector ``w [P]``.
    budget : int, None or math.inf, default None
        $B_c$: the batch size of the streams and the most collaborators kept.
    seed : int or numpy.random.Generator
        As in :func:`ggc`; the same seed gives the same set (Theorem 1).

    Returns
    -------
    frozenset of int

    Notes
    -----
    When the budget is reached inside a batch (line 23) the whole scan ends: continuing with the
    next batch could push $|X|$ past $B_c$. Theorem 1 (Appendix D): $w^X$ and $w^Y$ always equal
    the weighted sums of $X$ and $Y$, so every reward, hence every decision, is the one of GGC;
    in floating point the running sums can differ from fresh sums in the last bits.

    References
    ----------
    Kharrat, Canini, Horvath, "Decentralized Personalized Federated Learning", Algorithm 3,
    Section 3.3, Appendix C and D.

    Examples
    --------
    With one-hot "models" the weighted average of a set is supported exactly on that set, so a
    loss table over sets becomes a loss over vectors, and BGGC returns what GGC returns.

    >>> import torch
    >>> L = {frozenset({0}): 1.0, frozenset({0, 1}): 1.1, frozenset({0, 2}): 1.1,
    ...      frozenset({0, 1, 2}): 0.8}
    >>> support = lambda w: frozenset(torch.nonzero(w).flatten().tolist())
    >>> w, p = torch.eye(3, dtype=torch.float64), torch.tensor([3.0, 1.0, 2.0], dtype=torch.float64)
    >>> sorted(tf.algorithms.bggc(0, [1, 2], w, p, lambda v: L[support(v)], seed=0))
    [1, 2]
    """
    S = _check_candidates(client, candidates)
    cap = check_budget(budget)
    n = int(models.shape[0])
    if S and S[-1] >= n:
        raise ValueError(f"candidates must be client ids in [0, {n - 1}], found {S[-1]}")
    batch = max(1, len(S)) if cap is None else cap
    order, u = _draws(as_generator(seed), len(S))
    k = client
    # lines 1-7: w^Y <- p_k w_k + sum over the batches of p_s w_s
    w_y = weights[k] * models[k]
    p_y = weights[k]
    for start in range(0, len(S), batch):
        for s in S[start:start + batch]:
            w_y = w_y + weights[s] * models[s]
            p_y = p_y + weights[s]
    # line 8
    X, Y = {k}, set(S) | {k}
    w_x, p_x = weights[k] * models[k], weights[k]
    shuffled = [S[i] for i in order.tolist()]
    step = 0
    for start in range(0, len(shuffled), batch):  # lines 10-11: batches in the shuffled order
        for j in shuffled[start:start + batch]:
            pw = weights[j] * models[j]
            r_x = -float(loss(w_x / p_x))
            r_xj = -float(loss((w_x + pw) / (p_x + weights[j])))
            r_y = -float(loss(w_y / p_y))
            r_yj = -float(loss((w_y - pw) / (p_y - weights[j])))
            a = max(r_xj - r_x, 0.0)
            b = max(r_yj - r_y, 0.0)
            if u[step] < _add_probability(a, b):
                X.add(j)
                w_x, p_x = w_x + pw, p_x + weights[j]
            else:
                Y.discard(j)
                w_y, p_y = w_y - pw, p_y - weights[j]
            step += 1
            if cap is not None and len(X) - 1 >= cap:
                return frozenset(X - {k})
    return frozenset(X - {k})


# --------------------------------------------------------------------------- batched, all clients


def aggregation_matrix(collaborators: Tensor, weights: Tensor) -> Tensor:
    r"""Row-stochastic ``[n, n]`` matrix of eq. (4): $M_{kj} = p_j / \sum_{i \in C_k \cup
    \{k\}} p_i$ for $j \in C_k \cup \{k\}$, 0 elsewhere.

    ``M @ x`` replaces each client's model by the weighted average over its collaborators and
    itself; ``M[k, j] > 0`` iff ``j -> k`` (the :class:`~topofl.Topology` convention).

    Parameters
    ----------
    collaborators : Tensor
        ``[n, n]`` bool, ``collaborators[k, j]``: $j \in C_k$ (the diagonal is always added).
    weights : Tensor
        ``[n]`` positive $p_i$; the result has their dtype and device.

    Examples
    --------
    >>> import torch
    >>> C = torch.tensor([[False, True, False], [False, False, False], [True, True, False]])
    >>> from topofl.algorithms.ggc import aggregation_matrix
    >>> aggregation_matrix(C, torch.tensor([1.0, 3.0, 4.0]))
    tensor([[0.2500, 0.7500, 0.0000],
            [0.0000, 1.0000, 0.0000],
            [0.1250, 0.3750, 0.5000]])
    """
    n = weights.shape[0]
    eye = torch.eye(n, dtype=torch.bool, device=collaborators.device)
    return aggregation_rows(collaborators, weights, eye)


def _check_batched(x: Tensor, candidates: Tensor, weights: Tensor,
                   seeds: Sequence[Seed]) -> int:
    if x.dim() != 2:
        raise ValueError(f"x must be [n, P], got shape {tuple(x.shape)}")
    n = int(x.shape[0])
    if tuple(candidates.shape) != (n, n):
        raise ValueError(f"candidates must be [n, n] = [{n}, {n}], got {tuple(candidates.shape)}")
    if tuple(weights.shape) != (n,) or not bool((weights > 0).all()):
        raise ValueError(f"weights must be [n] = [{n}] positive values, got {weights!r}")
    if bool(torch.diagonal(candidates.to(torch.bool)).any()):
        raise ValueError("candidates[k, k] must be False: a client always keeps itself")
    if len(seeds) != n:
        raise ValueError(f"seeds must hold one seed per client ({n}), got {len(seeds)}")
    return n


def _greedy_batched(
    x: Tensor,
    candidates: Tensor,
    weights: Tensor,
    losses: Callable[[Tensor], Tensor],
    budget: int | None,
    seeds: Sequence[Seed],
    running_sums: bool,
) -> tuple[Tensor, Tensor]:
    """GGC (fresh averages) or BGGC (running sums) for every client; ``(C mask, decisions)``."""
    n = _check_batched(x, candidates, weights, seeds)
    everyone = np.arange(n, dtype=np.int64)
    return greedy_rows(x, everyone, x, everyone, candidates, weights, losses, budget, seeds,
                       running_sums)


def aggregation_rows(mask: Tensor, p: Tensor, me: Tensor) -> Tensor:
    """Rows of :func:`aggregation_matrix` for some clients: ``mask``, ``me`` ``[m, n]`` (``me``
    marks each row's own client), ``p`` ``[n]``."""
    w = (mask.to(torch.bool) | me).to(p.dtype) * p.unsqueeze(0)
    return w / w.sum(dim=1, keepdim=True)


def _rewards(losses: Callable[..., Tensor], z: Tensor, active: Tensor, some: bool) -> Tensor:
    """``-losses(z)`` in float64 on the rows ``active``; with ``some`` (``losses`` takes
    ``rows``) only those rows are scored and the others hold 0 (no decision reads them)."""
    if not some or bool(active.all()):
        return -losses(z).double()
    out = torch.zeros(z.shape[0], dtype=torch.float64, device=z.device)
    idx = torch.nonzero(active).flatten()
    if idx.numel():
        out[idx] = -losses(z, rows=idx).double()
    return out


def greedy_rows(
    x: Tensor,
    ids: np.ndarray,
    src: Tensor,
    src_ids: np.ndarray,
    candidates: Tensor,
    weights: Tensor,
    losses: Callable[..., Tensor],
    budget: int | None,
    seeds: Sequence[Seed],
    running_sums: bool,
) -> tuple[Tensor, Tensor]:
    """GGC or BGGC for the clients ``ids`` only (the rows ``x`` ``[m, P]``, e.g. a distributed
    rank's): ``candidates`` are their ``[m, n]`` rows, ``weights`` every client's ``[n]``,
    ``src`` ``[R, P]`` the models of the clients ``src_ids`` (increasing; every candidate and,
    for GGC, every client of ``ids``), ``seeds`` one per row. ``(C rows [m, n], decisions
    [m])``; with every client (``ids = src_ids = 0..n-1``) it is :func:`ggc_batched`'s and
    :func:`bggc_batched`'s computation.

    A step scores only the clients still deciding (a candidate left, the budget not reached)
    where ``losses`` takes the keyword ``rows`` (``losses(z, rows=r) -> [len(r)]``, the losses
    of the rows ``r`` of ``z``, e.g. ``env.losses(z, "val", rows=r)``); the others' losses
    would decide nothing. Where it does not, every row is scored at every step."""
    m, n = int(x.shape[0]), int(weights.shape[0])
    dev, dt = x.device, x.dtype
    cand = candidates.to(device=dev, dtype=torch.bool)
    ids_t = torch.as_tensor(ids, dtype=torch.long, device=dev)
    rows = torch.arange(m, device=dev)
    me = torch.zeros(m, n, dtype=torch.bool, device=dev)
    me[rows, ids_t] = True
    p = weights.to(device=dev, dtype=dt)
    cols = torch.as_tensor(src_ids, dtype=torch.long, device=dev)
    pos = torch.zeros(n, dtype=torch.long, device=dev)  # row of src holding client j
    pos[cols] = torch.arange(cols.numel(), device=dev)

    def average(mask: Tensor) -> Tensor:
        return aggregation_rows(mask, p, me).index_select(1, cols) @ src

    some = takes_keyword(losses, "rows")

    # every client's visiting order and coins, exactly as in ggc/bggc
    cand_cpu = cand.cpu()
    lists = [torch.nonzero(cand_cpu[r]).flatten().tolist() for r in range(m)]
    steps = max((len(c) for c in lists), default=0)
    order = torch.zeros(m, max(steps, 1), dtype=torch.long)
    coins = torch.ones(m, max(steps, 1), dtype=torch.float64)
    for r, c in enumerate(lists):
        perm, u = _draws(as_generator(seeds[r]), len(c))
        order[r, :len(c)] = torch.as_tensor([c[i] for i in perm.tolist()], dtype=torch.long)
        coins[r, :len(c)] = torch.as_tensor(u, dtype=torch.float64)
    order, coins = order.to(dev), coins.to(dev)
    lens = torch.as_tensor([len(c) for c in lists], device=dev)
    cap = n if budget is None else budget

    X, Y = me.clone(), cand | me
    p_own = p.index_select(0, ids_t)
    if running_sums:  # Algorithm 3, lines 1-8
        w_x = p_own.unsqueeze(1) * x
        p_x = p_own.clone()
        w_y, p_y = w_x.clone(), p_own.clone()
        for i in range(n):  # ascending ids: the order bggc accumulates in
            coef = cand[:, i].to(dt) * p[i]
            if bool(cand[:, i].any()):
                w_y = w_y + coef.unsqueeze(1) * src[pos[i]].unsqueeze(0)
                p_y = p_y + coef
        r_x = -losses(w_x / p_x.unsqueeze(1)).double()
        r_y = -losses(w_y / p_y.unsqueeze(1)).double()
    else:
        r_x = -losses(average(X)).double()
        r_y = -losses(average(Y)).double()

    decisions = torch.zeros(m, dtype=torch.long, device=dev)
    for s in range(steps):
        active = (lens > s) & (X.sum(dim=1) - 1 < cap)
        if not bool(active.any()):
            break
        js = order[:, s]  # every client's s-th candidate
        if running_sums:
            pj = torch.where(active, p[js], torch.zeros_like(p_own))
            pw = pj.unsqueeze(1) * src.index_select(0, pos[js])
            cand_add = (w_x + pw) / (p_x + pj).unsqueeze(1)
            cand_rem = (w_y - pw) / (p_y - pj).unsqueeze(1)
        else:
            ra, ja = rows[active], js[active]
            add_m, rem_m = X.clone(), Y.clone()
            add_m[ra, ja] = True
            rem_m[ra, ja] = False
            cand_add = average(add_m)
            cand_rem = average(rem_m)
        r_add = _rewards(losses, cand_add, active, some)
        r_rem = _rewards(losses, cand_rem, active, some)
        a = (r_add - r_x).clamp_min(0.0)
        b = (r_rem - r_y).clamp_min(0.0)
        total = a + b
        prob = torch.where(total > 0, a / torch.where(total > 0, total, 1.0), 1.0)
        take = coins[:, s] < prob
        add, rem = active & take, active & ~take
        X[rows[add], js[add]] = True
        Y[rows[rem], js[rem]] = False
        r_x = torch.where(add, r_add, r_x)
        r_y = torch.where(rem, r_rem, r_y)
        if running_sums:
            w_x = torch.where(add.unsqueeze(1), w_x + pw, w_x)
            p_x = torch.where(add, p_x + pj, p_x)
            w_y = torch.where(rem.unsqueeze(1), w_y - pw, w_y)
            p_y = torch.where(rem, p_y - pj, p_y)
        decisions += active.long()
    return X & ~me, decisions


def ggc_batched(
    x: Tensor,
    candidates: Tensor,
    weights: Tensor,
    losses: Callable[[Tensor], Tensor],
    *,
    budget: int | float | None = None,
    seeds: Sequence[Seed],
) -> Tensor:
    r"""GGC (Algorithm 2) for every client at once: the ``[n, n]`` collaborator mask $C$.

    Step $s$ takes the $s$-th candidate of every client's shuffled $\Omega_k$ and scores the two
    candidate averages $X_k \cup \{j_k\}$ and $Y_k \setminus \{j_k\}$ of all clients with two
    calls ``losses(z) -> [n]`` (row ``k`` of ``z`` scored by client ``k``), each average
    computed afresh as in Algorithm 2 (``aggregation_matrix(mask, weights) @ x``). $R(X)$ and
    $R(Y)$ are carried over from the step that produced them (the same values Algorithm 2
    recomputes). Client ``k``'s decisions are those of ``ggc(k, ..., seed=seeds[k])``.

    Parameters
    ----------
    x : Tensor
        ``[n, P]`` models.
    candidates : Tensor
        ``[n, n]`` bool, ``candidates[k, j]``: $j \in \Omega_k$ (False on the diagonal).
    weights : Tensor
        ``[n]`` positive $p_i$.
    losses : callable
        ``losses(z [n, P]) -> [n]``: client ``k``'s validation loss of row ``k``
        (``lambda z: env.losses(z, "val")`` in the engine).
    budget : int, None or math.inf, default None
    seeds : sequence of seeds, one per client

    Returns
    -------
    Tensor
        ``[n, n]`` bool, ``C[k, j]``: $j \in C_k$; ``C <= candidates`` and every row has at most
        ``budget`` entries.

    Examples
    --------
    Client ``k`` is scored by $(\bar w - k)^2$: clients 0 and 1 want a small average and keep
    each other, client 2 is best alone.

    >>> import torch
    >>> x = torch.tensor([[0.0], [1.0], [2.0]], dtype=torch.float64)
    >>> target = torch.tensor([0.4, 0.6, 2.0], dtype=torch.float64)
    >>> from topofl.algorithms.ggc import ggc_batched
    >>> C = ggc_batched(x, ~torch.eye(3, dtype=torch.bool),
    ...     torch.ones(3, dtype=torch.float64), lambda z: (z[:, 0] - target) ** 2,
    ...     seeds=[0, 1, 2])
    >>> C.int().tolist()
    [[0, 1, 0], [1, 0, 0], [0, 0, 0]]
    """
    cap = check_budget(budget)
    return _greedy_batched(x, candidates, weights, losses, cap, seeds, running_sums=False)[0]


def bggc_batched(
    x: Tensor,
    candidates: Tensor,
    weights: Tensor,
    losses: Callable[[Tensor], Tensor],
    *,
    budget: int | float | None = None,
    seeds: Sequence[Seed],
) -> Tensor:
    r"""BGGC (Algorithm 3) for every client at once: the ``[n, n]`` candidate-set mask $\Omega$.

    As :func:`ggc_batched`, but the candidate averages come from the running sums $w^X, w^Y$ of
    Algorithm 3 (``[n, P]`` each, $O(nP)$ per step instead of a fresh ``[n, n] @ [n, P]``).
    Client ``k``'s decisions are those of ``bggc(k, ..., seed=seeds[k])`` and, by Theorem 1,
    of ``ggc(k, ..., seed=seeds[k])``.

    Examples
    --------
    The problem of :func:`ggc_batched`: the same sets (Theorem 1).

    >>> import torch
    >>> target = torch.tensor([0.4, 0.6, 2.0], dtype=torch.float64)
    >>> args = (torch.tensor([[0.0], [1.0], [2.0]], dtype=torch.float64),
    ...         ~torch.eye(3, dtype=torch.bool), torch.ones(3, dtype=torch.float64),
    ...         lambda z: (z[:, 0] - target) ** 2)
    >>> from topofl.algorithms.ggc import bggc_batched, ggc_batched
    >>> O = bggc_batched(*args, seeds=[0, 1, 2])
    >>> torch.equal(O, ggc_batched(*args, seeds=[0, 1, 2])), O.int().tolist()
    (True, [[0, 1, 0], [1, 0, 0], [0, 0, 0]])
    """
    cap = check_budget(budget)
    return _greedy_batched(x, candidates, weights, losses, cap, seeds, running_sums=True)[0]


def bggc_received(candidates: Tensor, decisions: Tensor, budget: int | None,
                  seeds: Sequence[Seed]) -> Tensor:
    """``[m, n]`` uint8: how many times each client's BGGC received each candidate's model: 1
    for every candidate (the running sum $w^Y$), 2 for those of the batches it then scanned
    (the first ones of its visiting order, which fresh ``seeds`` replay as ``greedy_rows``
    draws it)."""
    cand = candidates.to(torch.bool).cpu()
    out = cand.to(torch.uint8)
    for r in range(cand.shape[0]):
        c = torch.nonzero(cand[r]).flatten()
        size, d = int(c.numel()), int(decisions[r])
        if not size or not d:
            continue
        perm, _ = _draws(as_generator(seeds[r]), size)
        batch = size if budget is None else int(budget)
        scanned = min(size, -(-d // batch) * batch)
        out[r, c[torch.as_tensor(perm[:scanned])]] += 1
    return out.to(candidates.device)

