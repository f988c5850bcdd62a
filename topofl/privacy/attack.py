r"""Membership inference between nodes: the empirical side of the accountants.

A loss-threshold attack (Yeom, Giacomelli, Fredrikson and Jha, "Privacy risk in machine learning:
analyzing the connection to overfitting", CSF 2018): node ``v`` holds a model; to tell whether a
sample was in node ``u``'s training set it thresholds the model's loss on it (members tend to have
lower loss). For every pair ``(u, v)`` the attack scores, with ``v``'s model, ``samples`` of
``u``'s training samples (members) and as many of ``u``'s held-out test samples (non-members,
from the same local distribution, trained on by no node):

- ``auc[u, v]``: the area under the attack's ROC curve, ``P(loss(member) < loss(non-member))``
  (ties count one half): 0.5 is no signal;
- ``advantage[u, v]``: ``TPR - FPR`` of a threshold chosen on one half of the samples and
  measured on the other half (held out, so that no signal reads 0 on average, not the maximum
  of noise); the attack's advantage of Yeom et al. in ``[-1, 1]``.

``u == v`` (the diagonal) is the victim's own model. The matrices have the orientation of the
accountants' ``epsilon[u, v]`` (``u``'s data, ``v``'s view), so :class:`MembershipAttack` reads
by graph distance as :class:`~topofl.privacy.PairwisePrivacy` does.

Examples
--------
>>> import numpy as np
>>> from topofl.privacy.attack import auc, held_out_advantage
>>> auc(np.array([0.1, 0.2]), np.array([0.3, 0.4])), auc(np.array([1.0]), np.array([1.0]))
(1.0, 0.5)
>>> held_out_advantage(np.array([0.1, 0.2, 0.1, 0.2]), np.array([0.5, 0.6, 0.5, 0.6]))
1.0
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from scipy.stats import rankdata

from topofl._utils.rng import generator_at
from topofl._utils.validation import check_choice, check_int
from topofl.privacy.pairwise import adjacency_of, by_distance, hop_distances

__all__ = ["MembershipAttack", "attack_matrices", "attack_samples", "auc", "held_out_advantage",
           "membership_attack"]


def auc(member: np.ndarray, nonmember: np.ndarray) -> float:
    """``P(member loss < non-member loss)``, ties one half (the Mann-Whitney statistic over
    ``len(member) * len(nonmember)``)."""
    a, b = np.asarray(member, dtype=float), np.asarray(nonmember, dtype=float)
    if a.size == 0 or b.size == 0:
        raise ValueError(f"auc needs samples on both sides, got {a.size} and {b.size}")
    ranks = rankdata(np.concatenate([a, b]))  # average ranks: ties one half
    u_stat = ranks[a.size:].sum() - b.size * (b.size + 1) / 2  # non-members above members
    return float(u_stat / (a.size * b.size))


def _fitted_rule(member: np.ndarray, nonmember: np.ndarray) -> tuple[float, bool]:
    """The loss-threshold rule maximising ``P(member flagged) - P(non-member flagged)`` on
    these samples: ``(bound, strict)``, a loss is flagged a member when below ``bound``
    (``strict``) or at most it. The gain is constant between consecutive observed losses; the
    rule takes the whole first best interval, up to the next observed loss, so it depends on the
    losses' order only (a monotone transform of the losses changes nothing)."""
    cands = np.unique(np.concatenate([member, nonmember]))
    tpr = np.searchsorted(np.sort(member), cands, side="right") / member.size
    fpr = np.searchsorted(np.sort(nonmember), cands, side="right") / nonmember.size
    i = int(np.argmax(tpr - fpr))
    return (float(cands[i]), False) if i + 1 == cands.size else (float(cands[i + 1]), True)


def held_out_advantage(member: np.ndarray, nonmember: np.ndarray) -> float:
    """``TPR - FPR`` of the loss-threshold rule fitted on the even-indexed samples
    (:func:`_fitted_rule`), measured on the odd-indexed ones (each side needs at least 2
    samples)."""
    a, b = np.asarray(member, dtype=float), np.asarray(nonmember, dtype=float)
    if a.size < 2 or b.size < 2:
        raise ValueError(f"held_out_advantage needs at least 2 samples a side, got {a.size} "
                         f"and {b.size}")
    bound, strict = _fitted_rule(a[0::2], b[0::2])

    def flagged(x: np.ndarray) -> float:
        return float(np.mean(x < bound if strict else x <= bound))

    return flagged(a[1::2]) - flagged(b[1::2])


@dataclass(frozen=True)
class MembershipAttack:
    """The attack's matrices (``[u, v]``: victim ``u``, attacker ``v``) and how it ran.

    Attributes
    ----------
    auc, advantage : numpy.ndarray
        ``(n, n)``, the diagonal the victim's own model.
    samples : int
        Members (and non-members) per victim.
    adjacency : numpy.ndarray
        ``(n, n)`` bool, the run's graph (an edge either way), or ``None`` without one.
    """

    auc: np.ndarray
    advantage: np.ndarray
    samples: int
    adjacency: np.ndarray | None

    def by_distance(self, of: str = "advantage") -> dict[int, dict[str, float]]:
        """Mean, min, max and count of ``of`` (``"advantage"`` or ``"auc"``) over the pairs at
        each hop distance ``d >= 1`` (``0``: the diagonal, the victim's own model)."""
        values = {"advantage": self.advantage, "auc": self.auc}[check_choice(
            of, "of", ("advantage", "auc"))]
        if self.adjacency is None:
            raise ValueError("by_distance needs the run's graph; this attack has none")
        out = by_distance(values, hop_distances(self.adjacency))
        diag = np.diag(values)
        out[0] = {"mean": float(diag.mean()), "min": float(diag.min()),
                  "max": float(diag.max()), "pairs": int(diag.size)}
        return dict(sorted(out.items()))


def membership_attack(result: Any, *, samples: int | None = None, seed: int = 0,
                      victims: Sequence[int] | None = None) -> MembershipAttack:
    r"""Every node's loss-threshold membership attack on every other node, on a run's models.

    Parameters
    ----------
    result : topofl.engine.Result
        What :func:`topofl.run` returns (its evaluated models, its data and its graph); every
        client in this process.
    samples : int, optional
        Members and non-members per victim, ``>= 4`` and at most the smallest train or test
        split of a client (default: 50, or that split if smaller).
    seed : int, default 0
        Draws which samples: victim ``u``'s from the stream ``(seed, u)``, so the same seed
        picks the same samples whichever victims are attacked.
    victims : sequence of int, optional
        Only these victims' rows (the others ``nan``): a sample of pairs at scale.

    Returns
    -------
    MembershipAttack

    Raises
    ------
    TypeError
        ``result`` is not a run's result trained on data.
    ValueError
        ``samples`` below 4 or above a victim's train or test split.

    Notes
    -----
    The losses are the engine's own (its executor's mean cross-entropy on a batch of one
    sample). The models are those after the run's last round; an attack over rounds runs on
    shorter runs of the same seed (a run of ``r`` rounds is the first ``r`` of a longer one).
    """
    services = getattr(result, "services", None)
    executor, data = getattr(services, "executor", None), getattr(services, "data", None)
    if executor is None or data is None or not hasattr(result, "evaluated"):
        raise TypeError("membership_attack needs what topofl.run returns (a run trained on "
                        f"data), got {type(result).__name__}")
    check_int(seed, "seed", low=0)
    n = int(data.num_clients)
    rows = list(range(n)) if victims is None else [check_int(v, "victims", low=0, high=n - 1)
                                                   for v in victims]
    m = attack_samples(data, samples)
    flat = result.evaluated().detach()
    if flat.shape[0] != n:
        raise TypeError(f"membership_attack needs every client's model in this process, got "
                        f"{flat.shape[0]} of {n}")
    A, V = attack_matrices(executor, flat, data, rows, m, seed)
    topology = getattr(getattr(result, "last", None), "topology", None)
    adjacency = None
    if topology is not None and hasattr(topology, "to_dense"):
        adjacency = adjacency_of([np.asarray(topology.to_dense())])
    return MembershipAttack(A, V, m, adjacency)


def attack_samples(data: Any, samples: int | None) -> int:
    """The members (and non-members) per victim: ``samples``, or by default 50 or the
    smallest train or test split of a client if smaller; ``ValueError`` below 4 or above that
    split.

    Examples
    --------
    >>> from types import SimpleNamespace as NS
    >>> data = NS(sizes=lambda split: [30, 80] if split == "train" else [12, 40])
    >>> attack_samples(data, None), attack_samples(data, 8)
    (12, 8)
    """
    small = min(int(np.min(data.sizes("train"))), int(np.min(data.sizes("test"))))
    m = min(50, small) if samples is None else check_int(samples, "samples", low=4)
    if m > small or m < 4:
        raise ValueError(f"samples must be at most the smallest split ({small}) and >= 4, "
                         f"got {m}")
    return m


def attack_matrices(executor: Any, flat: torch.Tensor, data: Any, victims: Sequence[int],
                    samples: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``(auc, advantage)``, ``(n, n)`` each: the attack of every model (a row of ``flat``,
    ``[n, P]``) on each victim ``u`` of ``victims`` (row ``u``; the other rows ``nan``), with
    ``samples`` members and non-members of ``u`` drawn from the stream ``(seed, u)``.
    :func:`membership_attack` on a run's result, and the engine's per-run attack
    (``membership_attack`` setting of :class:`topofl.engine.RunConfig`), are this."""
    n = int(flat.shape[0])
    A, V = np.full((n, n), math.nan), np.full((n, n), math.nan)
    for u in victims:
        rng = generator_at(seed, u)  # victim u's samples, whichever victims are attacked
        member = _losses(executor, flat, *_pick(data, u, "train", samples, rng))
        nonmember = _losses(executor, flat, *_pick(data, u, "test", samples, rng))
        for v in range(n):
            A[u, v] = auc(member[v], nonmember[v])
            V[u, v] = held_out_advantage(member[v], nonmember[v])
    return A, V


def _pick(data: Any, u: int, split: str, m: int, rng: np.random.Generator
          ) -> tuple[torch.Tensor, torch.Tensor]:
    x, y = data.client(u, split)
    idx = torch.as_tensor(np.sort(rng.choice(x.shape[0], size=m, replace=False)),
                          device=x.device)
    return x[idx], y[idx]


def _losses(executor: Any, flat: torch.Tensor, x: torch.Tensor, y: torch.Tensor) -> np.ndarray:
    """``(n, m)``: the loss of every row's model on each of the ``m`` samples (the
    executor's forward pass on samples every model shares, blocks of rows of about
    ``2**20`` logits; the cross-entropy ``logsumexp - logit[y]``, computed in float64)."""
    n, m = flat.shape[0], x.shape[0]
    out = np.empty((n, m))
    if m == 0 or n == 0:
        return out
    xs, at = x.to(flat.dtype), torch.arange(m, device=y.device)
    with torch.no_grad():
        classes = int(executor.logits(flat[:1], xs[:1], shared_input=True).shape[-1])
        rows = max(1, (1 << 20) // (m * classes))
        for a in range(0, n, rows):
            z = executor.logits(flat[a:a + rows], xs, shared_input=True).double()  # [r, m, C]
            loss = torch.logsumexp(z, dim=-1) - z[:, at, y]
            out[a:a + loss.shape[0]] = loss.cpu().numpy()
    return out
