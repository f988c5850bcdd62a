r"""Fidelity gates: a stand-in decides a comparison only after it reproduces the paper's controls.

A result that compares a tested method with the paper's other rows (its *controls*: every
method but the one tested) measures the tested method against those rows. If the stand-in
orders the controls unlike the paper (a full-model method first where the paper has it
last ...), a "does not hold" says more about the stand-in than about the method. The gate
(:func:`fidelity_gate`) compares the controls' order on the stand-in (their seed means) with
the paper's table before the tested method is looked at:

* **Kendall's tau** (tau-b, ties counted) between the paper's values and the stand-in's means
  over the controls, at least the declared bar ``tau``;
* the paper's **best control** among the stand-in's top ``ceil(top_share x k)`` of the ``k``
  controls.

Both bars are declared once in ``paper_figures/claims.toml`` (``[gates]``, with their reason;
a result's own ``[<name>.gates]`` overrides them), not tuned on what a result gave. A gate needs
at least :data:`MIN_CONTROLS` controls; with fewer it cannot pass. A headline check that
compares the tested method with the controls (:func:`gated`) keeps its outcome where the gate
passes and reads *inconclusive at this scale (the stand-in does not reproduce the paper's
baselines: tau = ...)* where it fails, what it would have been kept in its reason.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from topofl._configfile import read_config
from topofl.figures.checks import Check, OverSeeds
from topofl.figures.config import FigureError, _presets_root

__all__ = ["MIN_CONTROLS", "Gate", "fidelity_gate", "gate_bars", "gated"]

#: The fewest controls a gate decides on (Kendall's tau over 3 items takes 4 values only).
MIN_CONTROLS = 4


@dataclass(frozen=True)
class Gate:
    """The fidelity gate of one stand-in (one column or setting of a result).

    ``controls`` are in the paper's order (best first); ``paper`` and ``standin`` hold their
    values (the stand-in's: seed means), ``tau`` Kendall's tau-b between the two and ``p`` its
    two-sided p, ``best_rank`` the rank (1 = best) on the stand-in of the paper's best control,
    ``top`` how many of the stand-in's best controls it must be among, ``tau_min`` the declared
    bar; :attr:`passed` says whether both bars hold.
    """

    name: str
    controls: tuple[str, ...]
    paper: tuple[float, ...]
    standin: tuple[float, ...]
    tau: float
    p: float
    best_rank: int
    top: int
    tau_min: float
    higher_is_better: bool = True

    @property
    def passed(self) -> bool:
        """At least :data:`MIN_CONTROLS` controls, ``tau >= tau_min`` and the paper's best
        control among the stand-in's top :attr:`top`."""
        return (len(self.controls) >= MIN_CONTROLS and math.isfinite(self.tau)
                and self.tau >= self.tau_min and self.best_rank <= self.top)

    def describe(self) -> str:
        """One line: passed or not, tau, where the paper's best control ranks."""
        k = len(self.controls)
        if k < MIN_CONTROLS:
            return (f"{self.name}: gate fails: {k} control(s) with the paper's values, fewer "
                    f"than {MIN_CONTROLS}")
        word = "passes" if self.passed else "fails"
        return (f"{self.name}: gate {word}: tau = {self.tau:+.2f} (p = {self.p:.2f}, bar "
                f"{self.tau_min:+.2f}) over {k} controls; the paper's best control "
                f"({self.controls[0]}) ranks {self.best_rank} of {k} here (bar: top {self.top})")

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Gate:
        """The gate of its JSON form (:meth:`as_dict`)."""
        controls = dict(d["controls"])
        nan = float("nan")
        return cls(str(d["name"]), tuple(controls),
                   tuple(float(v["paper"]) for v in controls.values()),
                   tuple(float(v["standin"]) for v in controls.values()),
                   nan if d.get("tau") is None else float(d["tau"]),
                   nan if d.get("p") is None else float(d["p"]), int(d["best_rank"]),
                   int(d["top"]), float(d["tau_min"]), bool(d.get("higher_is_better", True)))

    def as_dict(self) -> dict[str, Any]:
        """The JSON form: every control's paper value and stand-in mean, tau, the bars."""
        return {"name": self.name, "passed": self.passed, "tau": _num(self.tau),
                "p": _num(self.p), "best_rank": self.best_rank, "top": self.top,
                "tau_min": self.tau_min, "higher_is_better": self.higher_is_better,
                "controls": {c: {"paper": p, "standin": s} for c, p, s in
                             zip(self.controls, self.paper, self.standin)}}


def _num(x: float) -> float | None:
    return None if not math.isfinite(x) else float(x)


def gate_bars(result: str | None = None, claims: Any = None) -> dict[str, Any]:
    """The declared bars ``{"tau", "top_share", "reason"}``: ``claims.toml``'s ``[gates]``,
    updated by ``[<result>.gates]``.

    Examples
    --------
    >>> bars = tf.figures.gate_bars()
    >>> bars["tau"], bars["top_share"]
    (0.4, 0.34)
    """
    path = claims if claims is not None else _presets_root() / "claims.toml"
    table = read_config(path)
    bars = dict(table.get("gates", {}))
    if result is not None and isinstance(table.get(result), Mapping):
        bars.update(table[result].get("gates", {}))
    for key in ("tau", "top_share"):
        v = bars.get(key)
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise FigureError(f"{path}: [gates] needs {key} = a number, got {v!r}")
    if not -1 <= bars["tau"] <= 1 or not 0 < bars["top_share"] <= 1:
        raise FigureError(f"{path}: [gates] needs tau in [-1, 1] and top_share in (0, 1], got "
                          f"{bars['tau']!r} and {bars['top_share']!r}")
    return bars


def fidelity_gate(name: str, paper: Mapping[str, float | None],
                  standin: Mapping[str, float | OverSeeds], *, tau_min: float,
                  top_share: float, higher_is_better: bool = True) -> Gate:
    """The gate of one stand-in: its controls' order against the paper's.

    Parameters
    ----------
    name : str
        What the gate is of (a column, a setting).
    paper : mapping of control to number or None
        The paper's values of the controls (the tested method left out by the caller);
        ``None`` for a cell the paper does not give (the control is then left out).
    standin : mapping of control to number or OverSeeds
        The stand-in's values (an OverSeeds counts by its mean); controls missing here are
        left out. An infinite value is allowed (rounds to a target never reached); NaN is
        not.
    tau_min, top_share : float
        The declared bars (:func:`gate_bars`).
    higher_is_better : bool, default True
        ``False`` for a metric where less is better (rounds to a target, a variance).

    Returns
    -------
    Gate

    Examples
    --------
    The paper's order reproduced but for one swap among 5 controls:

    >>> paper = {"A": 85.0, "B": 84.0, "C": 80.0, "D": 70.0, "E": 60.0}
    >>> here = {"A": 66.0, "B": 67.0, "C": 60.0, "D": 55.0, "E": 50.0}
    >>> g = tf.figures.fidelity_gate("col", paper, here, tau_min=0.4, top_share=0.34)
    >>> round(g.tau, 2), g.best_rank, g.top, g.passed
    (0.8, 2, 2, True)

    A stand-in that puts the paper's last control first fails:

    >>> here = {"A": 60.0, "B": 61.0, "C": 62.0, "D": 63.0, "E": 90.0}
    >>> g = tf.figures.fidelity_gate("col", paper, here, tau_min=0.4, top_share=0.34)
    >>> round(g.tau, 2), g.best_rank, g.passed
    (-1.0, 5, False)
    """
    from scipy import stats

    if not isinstance(name, str):
        raise TypeError(f"name must be a str, got {type(name).__name__}")
    if not -1 <= float(tau_min) <= 1 or not 0 < float(top_share) <= 1:
        raise ValueError(f"tau_min must be in [-1, 1] and top_share in (0, 1], got {tau_min!r} "
                         f"and {top_share!r}")
    sign = 1.0 if higher_is_better else -1.0
    def mean(v: float | OverSeeds) -> float:
        return v.mean if isinstance(v, OverSeeds) else float(v)

    rows = [(c, float(p), mean(standin[c])) for c, p in paper.items()
            if p is not None and c in standin]
    rows.sort(key=lambda r: -sign * r[1])  # the paper's best first
    for c, p, s in rows:
        if math.isnan(p) or math.isnan(s):
            raise ValueError(f"control {c!r}: values must be numbers (infinite for "
                             f"'never'), got paper {p}, stand-in {s}")
    k = len(rows)
    if k >= 2:
        res = stats.kendalltau([r[1] for r in rows], [r[2] for r in rows])
        tau, p_value = float(res.statistic), float(res.pvalue)
    else:
        tau = p_value = math.nan
    here = sorted(rows, key=lambda r: -sign * r[2])
    best_rank = 1 + [r[0] for r in here].index(rows[0][0]) if rows else 0
    return Gate(name, tuple(r[0] for r in rows), tuple(r[1] for r in rows),
                tuple(r[2] for r in rows), tau, p_value, best_rank,
                max(1, math.ceil(top_share * k)), float(tau_min), higher_is_better)


def gated(check: Check, gate: Gate) -> Check:
    """``check`` (a comparison of the tested method with the controls) as the gate allows:
    unchanged when the gate passes, else *inconclusive*, what it would have been kept in its
    reason.

    Examples
    --------
    >>> paper = {"A": 85.0, "B": 84.0, "C": 80.0, "D": 70.0}
    >>> bad = tf.figures.fidelity_gate("col", paper, {"A": 1.0, "B": 2.0, "C": 3.0, "D": 4.0},
    ...                                tau_min=0.4, top_share=0.34)
    >>> c = tf.figures.gated(tf.figures.fact("X beats every control", False), bad)
    >>> c.outcome, c.reason.split(" (")[0]
    ('inconclusive', 'inconclusive at this scale')
    """
    if gate.passed:
        return check
    tau = "n/a" if not math.isfinite(gate.tau) else f"{gate.tau:+.2f}"
    why = (f"inconclusive at this scale (the stand-in does not reproduce the paper's "
           f"baselines: tau = {tau} over {len(gate.controls)} controls, the paper's best "
           f"ranks {gate.best_rank})")
    was = (f"; would be {check.outcome} ({check.reason})" if check.outcome in ("pass", "fail")
           else f"; {check.reason}")
    detail = dict(check.detail or {})
    detail["gate"] = gate.name
    return replace(check, outcome="inconclusive", reason=why + was, detail=detail)
