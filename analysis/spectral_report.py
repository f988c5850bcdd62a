"""Spectral comparison report of communication graphs: a thin wrapper of ``topofl report``.

The report lives in the package (:mod:`topofl.report`, ``topofl report SPEC ...``); this script
keeps the repository's old entry point and output folder::

    python analysis/spectral_report.py ring:n=64 exponential:n=64 \\
        dcliques:n=100,inter=small_world random_directed:n=100,k=10

writes ``analysis/out/spectral_report.md`` (+ ``spectral_report.json``) and
``analysis/out/figures/spectral_*.png``; ``--out DIR`` writes elsewhere. The committed
``analysis/spectral_report.md`` and ``analysis/figures/spectral_*.png`` are a copy of the output
of the default run.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from topofl.report import DEFAULT_SPECS, check_specs, consensus_rounds, resize  # noqa: F401
from topofl.report import main as _main


def main(argv: Sequence[str] | None = None) -> int:
    """Run the report with output in ``analysis/out``; returns the exit status."""
    return _main(argv, prog="python analysis/spectral_report.py", default_out="analysis/out")


if __name__ == "__main__":
    sys.exit(main())
