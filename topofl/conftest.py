"""pytest configuration of the doctests: the names they use without importing them.

It ships inside the package (as ``networkx/conftest.py`` does), so that the doctests of an
installed topofl run as they do in a clone::

    pytest --doctest-modules --pyargs topofl

Every doctest sees ``tf`` (``topofl``) and ``np`` (``numpy``), and is compared under the
option flags of the repository's ``pyproject.toml`` (:data:`OPTION_FLAGS`), which pytest does
not read outside the clone. The few that need a clone of the repository (:data:`NEEDS_CLONE`)
are skipped elsewhere.
"""

from __future__ import annotations

import doctest
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import topofl

#: Option flags of every doctest of topofl (``doctest_optionflags`` in ``pyproject.toml``):
#: whitespace runs compare equal, and floats compare to the precision the expected output is
#: written with.
#: (``NUMBER`` is pytest's flag: registering its name again returns the flag pytest checks.)
OPTION_FLAGS = doctest.NORMALIZE_WHITESPACE | doctest.register_optionflag("NUMBER")


#: Doctests that read what only a clone has (the figure scripts, their committed results, the
#: git history): skipped where topofl runs from an installed wheel, which carries the figures'
#: configs and claims but not these.
NEEDS_CLONE = ("topofl.figures.results.available", "topofl.figures.results.verdict_changes",
               "topofl.figures.runs.parse_args")


def _in_a_clone() -> bool:
    """Whether topofl runs from a clone: ``paper_figures/`` beside the package."""
    return (Path(__file__).resolve().parents[1] / "paper_figures").is_dir()


@pytest.fixture(autouse=True)
def _doctest_names(doctest_namespace: dict[str, Any], request: pytest.FixtureRequest) -> None:
    doctest_namespace["tf"] = topofl
    doctest_namespace["np"] = np
    runner = getattr(request.node, "runner", None)  # a doctest's item holds its runner
    if isinstance(runner, doctest.DocTestRunner):
        runner.optionflags |= OPTION_FLAGS
        if request.node.name in NEEDS_CLONE and not _in_a_clone():
            pytest.skip("reads the figure scripts or results of a clone of the repository")
