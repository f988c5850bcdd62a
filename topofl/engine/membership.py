r"""Membership inference measured during a run: the ``membership_attack`` setting.

With ``membership_attack = {samples = 50, seed = 0}`` (a table of
:class:`~topofl.engine.RunConfig`, ``[membership_attack]`` in a config file), every evaluation
runs :func:`topofl.privacy.membership_attack`'s loss-threshold attack (Yeom et al., CSF 2018)
by every node against every victim on the models it scores, and records:

- ``mia_auc_own``, ``mia_adv_own``: the mean over victims of the attack by the victim's own
  model (the diagonal);
- ``mia_auc_others``, ``mia_adv_others``: the mean over the other (victim, attacker) pairs;
- on a static graph, ``mia_auc_d{d}`` and ``mia_adv_d{d}`` for every hop distance
  ``d >= 1`` between victim and attacker (the mean over the pairs at that distance; pairs
  that no path joins are left out).

``adv`` is the held-out advantage ``TPR - FPR`` (0 on average without signal), ``auc`` the
area under the attack's ROC curve (0.5 without signal). Victim ``u``'s members and
non-members are drawn once from the stream ``(seed, u)``, the same samples at every
evaluation, so the rows over rounds are the attack over rounds on fixed samples.

The setting's keys: ``samples`` (members and non-members per victim; default 50, or the
smallest train or test split of a client if smaller), ``seed`` (default 0), ``victims``
(a list of client ids, or a number ``k`` of them drawn from the stream ``(seed, STREAM)``;
default every client). It needs every client in one process and an algorithm that scores
its models' own forward pass (no ``predict`` hook). A run with it does not stack.

Examples
--------
>>> from topofl.engine.membership import Membership
>>> Membership.from_config({"samples": 20, "victims": 3}).to_config()
{'samples': 20, 'seed': 0, 'victims': 3}
>>> res = tf.run("dsgd", "ring", rounds=4, n_clients=6, data="digits", seed=0,
...              membership_attack={"samples": 8}, spectral=False)
>>> sorted(k for k in res.records.metrics if k.startswith("mia_adv"))
['mia_adv_d1', 'mia_adv_d2', 'mia_adv_d3', 'mia_adv_others', 'mia_adv_own']
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from torch import Tensor

from topofl._utils.rng import generator_at
from topofl._utils.validation import check_int, check_table
from topofl.privacy.attack import attack_matrices, attack_samples
from topofl.privacy.pairwise import by_distance

__all__ = ["Membership", "STREAM", "check_membership", "membership_rows"]

#: the tag of the stream ``(seed, STREAM)`` that draws ``victims = k``
STREAM = 9_127

_KEYS = ("samples", "seed", "victims")


@dataclass(frozen=True)
class Membership:
    """The ``membership_attack`` setting, checked (see the module).

    Attributes
    ----------
    samples : int or None
        Members and non-members per victim (``None``: 50 or the smallest split).
    seed : int
    victims : tuple of int, int or None
        The victims' ids, their number, or ``None`` for every client.
    """

    samples: int | None = None
    seed: int = 0
    victims: tuple[int, ...] | int | None = None

    @classmethod
    def from_config(cls, table: Mapping[str, Any]) -> Membership:
        """The checked table (one-line ``ValueError``/``TypeError`` for a bad key or value)."""
        table = check_table(table, "membership_attack", _KEYS)
        samples = table.get("samples")
        if samples is not None:
            samples = check_int(samples, "membership_attack samples", low=4)
        seed = check_int(table.get("seed", 0), "membership_attack seed", low=0)
        victims = table.get("victims")
        if victims is not None and not isinstance(victims, (int, np.integer)):
            if isinstance(victims, (str, bytes)) or not isinstance(victims, Sequence):
                raise TypeError(f"membership_attack victims must be a list of client ids or "
                                f"a number of clients, got {type(victims).__name__}")
            ids = tuple(check_int(v, "membership_attack victims", low=0) for v in victims)
            if not ids or len(set(ids)) != len(ids):
                raise ValueError(f"membership_attack victims must be distinct ids, at least "
                                 f"one, got {list(ids)}"[:300])
            victims = tuple(sorted(ids))
        elif victims is not None:
            victims = check_int(victims, "membership_attack victims", low=1)
        return cls(samples, seed, victims)

    def to_config(self) -> dict[str, Any]:
        """The canonical table (what the records header holds)."""
        out: dict[str, Any] = {}
        if self.samples is not None:
            out["samples"] = self.samples
        out["seed"] = self.seed
        if self.victims is not None:
            out["victims"] = (self.victims if isinstance(self.victims, int)
                              else list(self.victims))
        return out

    def victims_of(self, n: int) -> list[int]:
        """The victims among ``n`` clients (``ValueError`` for an id or a number above)."""
        if self.victims is None:
            return list(range(n))
        if isinstance(self.victims, int):
            if self.victims > n:
                raise ValueError(f"membership_attack victims = {self.victims} is more than the "
                                 f"run's {n} clients")
            rng = generator_at(self.seed, STREAM)
            return sorted(int(v) for v in rng.choice(n, size=self.victims, replace=False))
        if max(self.victims) >= n:
            raise ValueError(f"membership_attack victims must be client ids below {n}, got "
                             f"{max(self.victims)}")
        return list(self.victims)


def check_membership(table: Mapping[str, Any] | None, data: Any, algorithm: Any,
                     held: int) -> Membership | None:
    """The run's setting, checked against its data (``samples`` within every client's
    splits, ``victims`` among its clients), its algorithm (no ``predict`` hook) and
    ``held``, the clients this process holds (all of them)."""
    if table is None:
        return None
    setting = Membership.from_config(table)
    n = int(data.num_clients)
    if held != n:
        raise ValueError(f"membership_attack needs every client in one process: this one "
                         f"holds {held} of {n}")
    if getattr(algorithm, "predict", None) is not None:
        raise ValueError(f"membership_attack scores the models' own forward pass; "
                         f"{algorithm.name} changes its predictions (a predict hook)")
    attack_samples(data, setting.samples)
    setting.victims_of(n)
    return setting


def membership_rows(setting: Membership, executor: Any, x_eval: Tensor, data: Any,
                    distance: np.ndarray | None) -> dict[str, float]:
    """One evaluation's ``mia_*`` rows (see the module) for the models ``x_eval``
    ``[n, P]``; ``distance`` the ``(n, n)`` hop distances of a static graph, or ``None``."""
    n = int(x_eval.shape[0])
    victims = setting.victims_of(n)
    m = attack_samples(data, setting.samples)
    auc, adv = attack_matrices(executor, x_eval.detach(), data, victims, m, setting.seed)
    own = np.zeros((n, n), dtype=bool)
    own[victims, victims] = True
    rows: dict[str, float] = {}
    for name, values in (("auc", auc), ("adv", adv)):
        diag = values[own]
        others = values[~np.eye(n, dtype=bool)]
        others = others[~np.isnan(others)]
        rows[f"mia_{name}_own"] = float(diag.mean())
        if others.size:
            rows[f"mia_{name}_others"] = float(others.mean())
        if distance is not None:
            for d, stats in by_distance(values, distance).items():
                if d >= 1:
                    rows[f"mia_{name}_d{d}"] = stats["mean"]
    return rows
