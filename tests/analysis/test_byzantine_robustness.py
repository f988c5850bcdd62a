"""analysis/byzantine_robustness.py: the Byzantine exposure of a placement counted by hand, the
tolerance rule (seed-paired drop against attack-free plain gossip, the worst attack) and the
table's cells (mean ± std over seeds) on made-up per-run values."""

from __future__ import annotations

import re

import pytest

from tests._analysis import load

B = load("byzantine_robustness")


def test_exposure_of_neighbours_on_a_ring():
    """By degree on a ring (all degrees 2, ties to the lowest ids): nodes 0 and 1; the honest
    nodes 2 and 15 each have one Byzantine of their two neighbours."""
    share, count, trim, delta = B.exposure("ring", 0, "degree", 2)
    assert (share, count, trim) == (0.5, 1, 1)
    assert delta == pytest.approx(1 / 3, rel=2e-6) and delta > 1 / 3  # one neighbour's weight
    share, count, trim, _ = B.exposure("ring", 0, "degree", 3)  # 0, 1, 2: still one each side
    assert (share, count, trim) == (0.5, 1, 1)
    assert B.one_neighbour("ring", 0) == pytest.approx(1 / 3, rel=2e-6)


def test_exposure_on_the_complete_graph_and_the_trim_cap():
    share, count, trim, delta = B.exposure("complete", 5, "random", 3)
    assert count == 3 and share == pytest.approx(3 / 15) and trim == 3
    assert delta == pytest.approx(3 / 16, rel=2e-6)  # three neighbours of weight 1/16
    # a star's leaves have one neighbour: the trim is capped at floor(1 / 2) = 0
    share, count, trim, _ = B.exposure("star", 0, "degree", 1)
    assert (share, count, trim) == (1.0, 1, 0)


def _rows(drops: dict[str, float], seeds=(0, 1, 2)):
    """Made-up values: attack-free plain gossip 0.90 + 0.01 * seed, every attacked cell the
    baseline minus its placement's drop (seed by seed)."""
    rows = {}

    def put(p, d, a, s, acc):
        rows["ring", p, d, a, str(s)] = {"acc": str(acc), "gap": "0.1", "param": "1",
                                          "max_share": "0.5", "seconds": "0.5"}

    for s in seeds:
        base = 0.90 + 0.01 * s
        for d in B.DEFENCES:
            put("none", d, "none", s, base)
            for c, f in B.PLACEMENTS:
                p = f"{c} f={f}"
                for a in B.ATTACKS:
                    put(p, d, a, s, base - drops.get(p, 0.0) * (a == "ipm"))
    return rows


def _tolerance(page: str) -> dict[str, list[str]]:
    out = {}
    for line in page.splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) == 5 and cells[0] == "ring" and cells[2] in B.DEFENCES:
            out[cells[2]] = cells[3:]
    return out


def test_tolerance_is_the_worst_attack_against_the_threshold():
    drops = {"random f=1": 0.01, "random f=2": 0.049, "random f=3": 0.051,
             "degree f=2": 0.2, "degree f=3": 0.0}
    page = B.report(_rows(drops), {"ring": "ring"}, (0, 1, 2),
                    {"ring": (1.0, {1.0: 0.9})}, 1.0, 2.0, False)
    tol = _tolerance(page)
    # f=2 drops just under the tolerance: tolerated; f=3 drops more: the largest f is 2;
    # by degree f=2 fails (and f=3, though tolerated, is not counted past a failure)
    assert tol["mean"] == ["2 (5.1)", "<2 (0.0)"]
    # a cell: mean ± std over the seeds, in %
    ipm = re.search(r"\| random f=1 \| [^|]+ \| [^|]+ \| mean \|([^\n]+)", page)
    assert ipm is not None
    cells = [c.strip() for c in ipm.group(1).strip(" |").split("|")]
    assert cells[list(B.ATTACKS).index("ipm")] == "90.0 ± 1.0"
    assert cells[list(B.ATTACKS).index("alie")] == "91.0 ± 1.0"


def test_all_placements_tolerated_reads_at_least():
    page = B.report(_rows({}), {"ring": "ring"}, (0, 1, 2), {"ring": (1.0, {1.0: 0.9})},
                    1.0, 2.0, False)
    assert _tolerance(page)["median"] == [">=3 (0.0)", ">=3 (0.0)"]
