"""decent-bench's own client selections (``FairSelection``, ``HighLossSelection``,
``UniformSelection``'s size rule) on fixed inputs, written for
``tests/algorithms/test_selection.py`` to compare topofl's with.

decent-bench needs Python >= 3.13 (topofl's environment here is 3.11), so this script runs in an
environment of its own and writes what the test reads (a small JSON file); it imports nothing
of topofl. Made with decent-bench 0.3.0 (decent-array 0.2.7)::

    ~/.pyenv/versions/3.13.0/bin/python -m venv /tmp/dbenv
    /tmp/dbenv/bin/pip install decent-bench==0.3.0
    /tmp/dbenv/bin/python analysis/decentbench_selection.py

The clients handed to ``select`` are the integers ``0 .. n-1`` in that order (decent-bench
only hashes and orders them, and asks ``_client_loss`` for their losses, which this script
answers from its fixed table), every client in the pool every round (no activation scheme).
It writes ``tests/algorithms/data/decentbench_selection.json``:

- ``size_rule``: ``[n, fraction, k]``, the number of clients ``UniformSelection`` (and the
  others) select from ``fraction_selected_clients`` over a pool of ``n``.
- ``fair``: ``{n, fraction, rounds, selected}``: one ``FairSelection`` object called once a
  round for ``rounds`` rounds, ``selected[t]`` its list in the order it returns.
- ``high_loss``: ``{n, k, losses, tie_break, selected}``: one ``HighLossSelection.select``
  with ``num_selected_clients=k``, the clients' losses ``losses`` and the random permutation
  it draws for its tie-breaks (``iop.get_numpy_rng().permutation``) replaced by
  ``tie_break``; ``selected`` in the order it returns (highest loss first).
"""

from __future__ import annotations

import json
import platform
from importlib.metadata import version
from pathlib import Path
from typing import Any

import numpy as np
from decent_bench.schemes import FairSelection, HighLossSelection, UniformSelection
from decent_bench.schemes import _selection as selection_module

OUT = Path(__file__).resolve().parents[1] / "tests" / "algorithms" / "data" / (
    "decentbench_selection.json")


class _FixedPermutation:
    """Stands in for decent-array's numpy generator: ``permutation`` returns the given one."""

    def __init__(self, perm: list[int]) -> None:
        self.perm = perm

    def permutation(self, k: int) -> np.ndarray:
        assert k == len(self.perm), (k, self.perm)
        return np.asarray(self.perm)


def size_rule() -> list[list[Any]]:
    rows = []
    for n in (1, 2, 3, 5, 7, 10, 16, 33, 100):
        for f in (0.01, 0.1, 0.2, 0.25, 0.3, 1 / 3, 0.5, 0.6, 0.7, 0.75, 0.9, 0.99, 1.0):
            k = UniformSelection(fraction_selected_clients=f)._resolve_num_selected_clients(
                list(range(n)), None, f)
            rows.append([n, f, int(k)])
    return rows


def fair() -> list[dict[str, Any]]:
    out = []
    for n, f, rounds in [(5, 0.4, 12), (7, 0.3, 15), (10, 0.3, 14), (6, 0.5, 8),
                         (9, 1 / 3, 10), (4, 0.25, 9), (8, 0.99, 6), (3, 1.0, 3)]:
        scheme = FairSelection(fraction_selected_clients=f)
        selected = [[int(c) for c in scheme.select(list(range(n)), t)] for t in range(rounds)]
        out.append(dict(n=n, fraction=f, rounds=rounds, selected=selected))
    return out


def high_loss() -> list[dict[str, Any]]:
    rng = np.random.default_rng(84)
    cases = []
    for n, k in [(6, 2), (8, 3), (10, 5), (12, 4), (5, 1), (9, 8)]:
        for ties in (False, True):
            losses = rng.random(n)
            if ties:  # a few distinct values, so that the tie-breaks decide
                losses = np.round(rng.integers(0, 3, size=n) * 0.5, 1)
            cases.append((n, k, [float(v) for v in losses],
                          [int(v) for v in rng.permutation(n)]))
    out = []
    original_rng = selection_module.iop.get_numpy_rng
    original_loss = HighLossSelection._client_loss
    try:
        for n, k, losses, perm in cases:
            table = dict(enumerate(losses))
            selection_module.iop.get_numpy_rng = lambda perm=perm: _FixedPermutation(perm)
            HighLossSelection._client_loss = staticmethod(lambda c, table=table: table[c])
            picked = HighLossSelection(num_selected_clients=k).select(list(range(n)), 0)
            out.append(dict(n=n, k=k, losses=losses, tie_break=perm,
                            selected=[int(c) for c in picked]))
    finally:
        selection_module.iop.get_numpy_rng = original_rng
        HighLossSelection._client_loss = original_loss
    return out


def main() -> None:
    data = dict(
        decent_bench=version("decent-bench"), decent_array=version("decent-array"),
        python=platform.python_version(), numpy=np.__version__,
        command="python analysis/decentbench_selection.py",
        size_rule=size_rule(), fair=fair(), high_loss=high_loss(),
    )
    OUT.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
