"""The fidelity gates of the D-Cliques results (:func:`topofl.figures.gate.ordinal_gate`).

The D-Cliques paper gives curves, not numbers, so there is no table of its controls to rank.
What its *text* states about them is the gate: each order the paper asserts between two of a
figure's controls (the graphs and variants the figure compares the tested one against), with
the sentence it comes from, is checked on the stand-in's seed means, against the bars of
``claims.toml`` ``[gates.ordinal]`` (declared before any gate was computed). A check comparing
the tested one with a control reads "inconclusive at this scale" on a stand-in whose gate fails
(:func:`cover`). A figure whose text states no order among its controls is not gated
(:data:`NOT_GATED` says why).

The scripts compute their gates from their runs' per-seed values (:func:`values`);
``analysis/standins_gates.py`` reads them back from the committed results (or, for a result
committed before its script computed them, from the seed means of its committed tables).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from topofl import figures

FINAL, AREA, SPREAD = ("final accuracy", "mean accuracy over the run",
                       "final spread between nodes")

Ord = figures.gate.Order

# the paper's sentences (Bellet, Kermarrec, Lavoie: D-Cliques), word for word
_SKEW = ("we observe that under label distribution skew, using a sparse topology clearly "
         "jeopardizes the convergence speed of decentralized SGD [Sec. I, on Fig. 1; Fig. 8's "
         "text: 'significantly better than with a ring or a grid (see Figure 1)']")
_IID = ("In the homogeneous setting where data is independent and identically distributed "
        "(IID) across nodes, recent work has shown both empirically [6], [7] and theoretically "
        "[8] that sparse topologies like rings or grids do not significantly affect the "
        "convergence speed compared to using denser topologies. [Sec. I, Fig. 1's IID panel]")
_MOMENTUM = ("Without Clique Averaging, the use of momentum is actually detrimental. "
             "[Sec. IV-C, Fig. 10]")
_CA = ("The effect of Clique Averaging is much more pronounced on CIFAR10, as can be seen in "
       "Figure 10, especially when used in combination with momentum. [Sec. IV-C]")
_RANDOM = ("Furthermore, the use of momentum in a random graph is detrimental, similar to "
           "D-Cliques without the use of Clique Averaging (see Figure 10a). [Sec. IV-D, Fig. 11]")
_IDEAL = ("compared to the ideal baseline of a fully-connected network representing the "
          "fastest convergence speed achievable if topology had no impact [Sec. IV-E, Figs. "
          "13-14]")
_REMOVE15 = ("when not using Clique Averaging, removing edges decreases slightly the "
             "convergence speed and increases the variance between nodes. [Sec. IV-F, Fig. 15]")
_ONE16 = ("With Clique Averaging, removing a single edge has a small but noticeable effect. "
          "[Sec. IV-F, Fig. 16]")
_REMOVE16 = ("Without Clique Averaging, removing edges has a small effect on convergence speed "
             "and variance, but the convergence speed is too slow to be practical. [Sec. IV-F, "
             "Fig. 16]")

NO_CA, CA = "without Clique Averaging", "with Clique Averaging"
FULL, ONE, FIVE = "full cliques", "1 edge removed per clique", "5 edges removed per clique"
FC_NET = "fully-connected network"
FC_INTER, RING_INTER = ("D-Cliques, fully connected inter-clique",
                        "D-Cliques, ring inter-clique")
A_NO, B_NO = "(a) without Clique Averaging", "(b) with Clique Averaging"
MOM, NO_MOM = "with momentum", "without momentum"
RND, RND_MOM = "random 10 edges/node", "random 10 edges/node w/ momentum"


def _removal(sentence: str, *, close: bool) -> list[figures.gate.Order]:
    """Fig. 15 (``close=False``): without Clique Averaging, removing edges slows convergence
    slightly and widens the spread; Fig. 16 (``close=True``): it has a small effect on both."""
    full = f"{NO_CA}: {FULL}"
    out = []
    for k in (ONE, FIVE):
        cut = f"{NO_CA}: {k}"
        if close:
            out += [Ord(full, "close", cut, AREA, sentence),
                    Ord(full, "close", cut, SPREAD, sentence)]
        else:
            out += [Ord(full, "above", cut, AREA, sentence),
                    Ord(cut, "above", full, SPREAD, sentence)]
    return out


#: result -> gate (a column or setting) -> the orders its text states among its controls.
ORDERS: dict[str, dict[str, list[figures.gate.Order]]] = {
    # Fig. 1: the label-skew comparison's bar is 3x the IID spread, so the IID panel is its
    # control: the paper's ring and grid match the fully-connected network there (read on the
    # final accuracy, the quantity the bar is made of; issue 56's referee)
    "dcliques_01": {"IID": [Ord("fully connected", "close", "ring", FINAL, _IID),
                            Ord("fully connected", "close", "grid", FINAL, _IID)]},
    # Fig. 8 compares D-Cliques with Fig. 1's ring and grid under label skew (MNIST only)
    "dcliques_08": {"MNIST": [Ord("fully connected", "far above", "ring", AREA, _SKEW),
                              Ord("fully connected", "far above", "grid", AREA, _SKEW)]},
    "dcliques_10": {"CIFAR-10": [Ord(f"{A_NO}: {NO_MOM}", "above", f"{A_NO}: {MOM}", FINAL,
                                   _MOMENTUM),
                                 Ord(f"{B_NO}: {NO_MOM}", "above", f"{A_NO}: {NO_MOM}", FINAL,
                                     _CA)]},
    "dcliques_11": {"CIFAR-10": [Ord(RND, "above", RND_MOM, FINAL, _RANDOM)]},
    "dcliques_13": {"1000 nodes": [Ord(FC_NET, "at least", FC_INTER, AREA, _IDEAL),
                                   Ord(FC_NET, "at least", RING_INTER, AREA, _IDEAL)]},
    "dcliques_14": {"1000 nodes": [Ord(FC_NET, "at least", FC_INTER, AREA, _IDEAL),
                                   Ord(FC_NET, "at least", RING_INTER, AREA, _IDEAL)]},
    "dcliques_15": {"MNIST": [*_removal(_REMOVE15, close=False),
                              Ord(f"{NO_CA}: {FULL}", "close", f"{NO_CA}: {FIVE}", AREA,
                                _REMOVE15)]},
    "dcliques_16": {"CIFAR-10": [Ord(f"{CA}: {FULL}", "above", f"{CA}: {ONE}", AREA, _ONE16),
                                 Ord(f"{CA}: {FULL}", "close", f"{CA}: {ONE}", AREA, _ONE16),
                                 *_removal(_REMOVE16, close=True),
                                 Ord(f"{CA}: {FULL}", "above", f"{NO_CA}: {FULL}", AREA,
                                   _REMOVE16)]},
}

_NONE = "not gated: the paper states no order among its controls"
#: result (or result and column) -> why it is not gated.
NOT_GATED: dict[str, str] = {
    "dcliques_05": "not gated: no training and no controls (the structure of one D-Cliques "
                   "graph)",
    "dcliques_08 CIFAR-10": f"{_NONE} (one control, fully connected; the ring and grid that "
                            "Fig. 8's text compares with are Fig. 1's, on MNIST only)",
    "dcliques_09": f"{_NONE} (one control: D-Cliques without Clique Averaging)",
    "dcliques_11 MNIST": f"{_NONE} (one control here: the random graph)",
    "dcliques_12": f"{_NONE} (one control: the exponential graph)",
    "dcliques_17": f"{_NONE} (no training; one control: random cliques)",
    "dcliques_18": "not gated: no controls (Greedy Swap's skew over its steps)",
    "dcliques_19": f"{_NONE} (one control: random cliques)",
}


def values(curves: Mapping[str, Any], metric: str = "global_acc"
           ) -> dict[tuple[str, str], figures.OverSeeds]:
    """Each curve's (label: Records, one run a seed) final accuracy, mean accuracy over the
    run and final spread between nodes, per seed: what the orders read."""
    out: dict[tuple[str, str], figures.OverSeeds] = {}
    for label, rec in curves.items():
        out[(label, FINAL)] = figures.final(rec, metric)
        out[(label, AREA)] = figures.mean_over_rounds(rec, metric)
        out[(label, SPREAD)] = figures.final_spread(rec, metric)
    return out


def of_panels(found: Mapping[str, figures.Panel], metric: str = "global_acc"
              ) -> dict[tuple[str, str], figures.OverSeeds]:
    """:func:`values` of every curve of several panels, labelled ``"<panel>: <curve>"``."""
    return values({f"{t}: {k}": r for t, p in found.items() for k, r in p.runs.items()}, metric)


def from_table(rows: Sequence[Mapping[str, str]], prefix: str = ""
               ) -> dict[tuple[str, str], float]:
    """The orders' values from a committed result's table of curves (seed means, its
    columns ``final global_acc``, ``final min``, ``final max`` and ``mean over rounds``,
    cells ``"mean ± std"``); ``prefix`` (``"<panel>: "``) names the curves as :func:`of_panels`
    does."""
    def mean(cell: str) -> float:
        return float(cell.split("±")[0])

    out: dict[tuple[str, str], float] = {}
    for r in rows:
        label = f"{prefix}{r['curve']}"
        out[(label, FINAL)] = mean(r["final global_acc"])
        out[(label, AREA)] = mean(r["mean over rounds"])
        out[(label, SPREAD)] = mean(r["final max"]) - mean(r["final min"])
    return out


def gate(result: str, name: str, vals: Mapping[tuple[str, str], Any]) -> figures.gate.OrdinalGate:
    """The gate ``name`` of ``result`` (:data:`ORDERS`) on the stand-in's values ``vals``,
    with the declared bars."""
    bars = figures.gate.ordinal_bars()
    return figures.gate.ordinal_gate(name, ORDERS[result][name], vals, far=bars["far"],
                                close=bars["close"])


def cover(checks: Sequence[figures.Check], g: figures.gate.OrdinalGate,
          covered: Callable[[str], bool]) -> list[figures.Check]:
    """``checks`` with those whose name ``covered`` accepts (the comparisons of the tested one
    with a control) gated by ``g`` (:func:`topofl.figures.gated`: unchanged where it passes)."""
    return [figures.gated(c, g) if covered(c.name) else c for c in checks]


#: result -> which of its checks (by name) compare the tested one with a control: the checks
#: a failed gate makes inconclusive (the orders among the controls themselves stay as measured).
COVERED: dict[str, Callable[[str], bool]] = {
    "dcliques_01": lambda n: n.startswith("label skew: "),
    "dcliques_08": lambda n: n.startswith("MNIST: "),
    "dcliques_10": lambda n: not n.startswith("momentum hurts"),
    "dcliques_11": lambda n: n.startswith("CIFAR-10: ") and "momentum" not in n,
    "dcliques_13": lambda n: n.startswith(("ring inter-clique much", "small-world inter-clique "
                                           "almost", "small-world inter-clique within")),
    "dcliques_14": lambda n: n.startswith(("ring inter-clique much", "small-world inter-clique "
                                           "almost", "small-world inter-clique within")),
    "dcliques_15": lambda n: n.startswith("with Clique Averaging"),
    "dcliques_16": lambda n: n.startswith("with Clique Averaging"),
}


def not_gated_note(result: str) -> str:
    """The sentence a result's notes give for each of its columns that is not gated."""
    parts = [f"{k.partition(' ')[2]}: {v}" if " " in k else v for k, v in NOT_GATED.items()
             if k.split(" ")[0] == result]
    return "Fidelity gate: " + "; ".join(parts) + "."
