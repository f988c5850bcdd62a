"""The settings of a study, grouped by job (:func:`topofl.study.study` takes each as one record):
which runs it reads (:class:`Selection`), how it draws its bootstrap (:class:`Bootstrap`) and
what it writes (:class:`Output`). Each record's defaults are the study's defaults, so a study
states only what it changes.

Examples
--------
>>> from topofl.study import Bootstrap, Output, Selection
>>> Selection(where={"partition_params.classes_per_client": 1}, strict=True).include_incomplete
False
>>> Bootstrap(n_boot=200), Output(figures=False).formats
(Bootstrap(n_boot=200, seed=0), ('png',))
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["Selection", "Bootstrap", "Output"]


@dataclass(frozen=True)
class Selection:
    """Which runs of the records a study reads.

    Attributes
    ----------
    where : mapping, optional
        Keep only the runs whose config has these values (keys as in
        :func:`~topofl.study.tables.normalize_config`:
        ``{"partition_params.classes_per_client": 1}``; a value matches when it is equal or,
        as text, equal to the config's value as text: ``"1"`` matches ``1``). One folder of
        records can then hold several studies, e.g. one per heterogeneity level.
    strict : bool, default False
        Refuse (``IncompleteRunsError``) when a run is incomplete or a file unreadable,
        instead of leaving them out and naming them.
    include_incomplete : bool, default False
        Keep incomplete runs in the tables (still named in ``incomplete`` and ``study.md``):
        their final value is then that of the round they stopped at.
    """

    where: Mapping[str, Any] | None = None
    strict: bool = False
    include_incomplete: bool = False


@dataclass(frozen=True)
class Bootstrap:
    """The bootstrap over seeds of the correlations' intervals
    (:func:`~topofl.study.statistics.correlation_table`).

    Attributes
    ----------
    n_boot : int, default 1000
        Bootstrap draws.
    seed : int, default 0
        Seeds the bootstrap; the same seed gives the same tables.
    """

    n_boot: int = 1000
    seed: int = 0


@dataclass(frozen=True)
class Output:
    """What a study draws and how ``study.md`` presents it (the tables are the same whatever
    it says).

    Attributes
    ----------
    figures : bool, default True
        Draw the figures (with an ``out_dir``).
    band : {"minmax", "std"}, default "minmax"
        Band of the seed-averaged curves: min..max over seeds, or mean +- one std.
    formats : sequence of {"png", "pdf", "svg"}, default ("png",)
        Each figure is written in each of these formats (``study.md`` shows the first).
    command : str, optional
        The command line quoted at the top of ``study.md``.
    """

    figures: bool = True
    band: str = "minmax"
    formats: Sequence[str] = ("png",)
    command: str | None = None

