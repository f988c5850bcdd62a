"""Run records: long-format rows ``(run, round, client, metric, value)`` in a JSONL file.

One file per run. The first line is the header ``{"header": true, "config": ..., "provenance":
..., "engine": ...}``: the resolved ``topofl.run`` keyword arguments, the versions, commit,
command and start time, and the engine's own description (files written before provenance was
recorded have only ``config``, then the engine's description). Every following line is one row::

    {"run": "dsgd-ring", "round": 10, "client": null, "metric": "test_acc_mean", "value": 0.83}

``client`` is ``null`` for aggregate metrics and the client index for per-client ones. A run's
per-client values are written as columns, one array a metric an evaluation, to the *client
file* ``<stem>.clients.arrows`` beside the ``.jsonl`` file (:mod:`~topofl.records.columns`);
:func:`load` reads both, and every query and ``Records.rows`` answer for them as for rows (so
a run's records are the two files: :func:`copy_records` copies both). The writer appends and
flushes after every round, so a crash loses nothing already computed; figures and reports
read these files and never re-run training. Every line carries a checksum, the client file
the run's identity and a checksum per block (:mod:`~topofl.records._seal`): :func:`load`
refuses records that do not match them (the message names the lines or blocks and their
rounds) and warns (:class:`DamagedRecordsWarning`) when a client file the rows count on is
missing, so damage is never read as data; a crash's cut is still read, and said so.

Examples
--------
>>> import tempfile, os
>>> path = os.path.join(tempfile.mkdtemp(), "run.jsonl")
>>> with tf.records.Recorder(path, run="demo") as rec:
...     rec.log_config({"rounds": 3})
...     for t, acc in enumerate([0.5, 0.8, 0.7]):
...         rec.log("test_acc_mean", acc, t)
>>> r = tf.records.load(path)
>>> r.config["rounds"], r.rounds_to(0.75), r.best("test_acc_mean"), r.final("test_acc_mean")
(3, 2, 0.8, 0.7)

``round`` is the 0-based index of the round after which a row was recorded, so ``round + 1``
rounds were completed: above, 0.8 was first reached after 2 rounds (:meth:`Records.rounds_to`).
Several files load with :func:`load_many`; every query then names its run (``run=``), and
:meth:`Records.summary_table` gives one row per run.

The package
-----------
- :mod:`~topofl.records.writer`: :class:`Recorder` (append, flush, resume).
- :mod:`~topofl.records.reader`: :func:`load`, :func:`load_many` (and the checks of every line).
- :mod:`~topofl.records.columns`: the per-client values as columns (the client file).
- :mod:`~topofl.records.queries`: :class:`Records`, whose methods are the queries, one name per
  question (:meth:`~Records.rounds_to`, :meth:`~Records.bytes_to`, :meth:`~Records.messages_to`,
  :meth:`~Records.time_to`, :meth:`~Records.best`, :meth:`~Records.final`,
  :meth:`~Records.status` ...), and :class:`RunStatus`.
- :mod:`~topofl.records.curves`: :func:`area_under_curve`, a curve's mean height.

Aliases
-------
The one place of the names kept for callers of an earlier layout; each calls the one
implementation and answers exactly as it does:

- ``rounds_to(records, target, metric, run=run)`` is ``records.rounds_to(target, metric,
  run=run)`` (:meth:`Records.rounds_to`);
- ``cost_to(records, target, cost, metric, run=run)`` is ``records.bytes_to``,
  ``records.messages_to`` or ``records.time_to`` for ``cost`` = ``"bytes"``, ``"messages"``
  or ``"time"`` (another ``cost`` names a cumulative metric of its own).

Retired (issue 30): the functions ``bytes_to``, ``messages_to`` and ``time_to`` (use the
methods), ``Records.last`` (use :meth:`Records.final`), ``Records.auc`` (use
``area_under_curve(*records.series(metric))``); DPFL's ``malicious_share`` lives beside its
algorithm, :func:`topofl.algorithms.malicious_share`.
"""

from __future__ import annotations

from topofl.records._integrity import DamagedRecordsWarning
from topofl.records.columns import copy_records
from topofl.records.curves import area_under_curve
from topofl.records.queries import COSTS, Records, RunStatus
from topofl.records.reader import load, load_many
from topofl.records.writer import Recorder
from topofl.records.writer import (
    header_run_hash as header_run_hash,  # (topofl._utils.runhash's docs)
)

__all__ = ["COSTS", "DamagedRecordsWarning", "Recorder", "Records", "RunStatus",
           "area_under_curve", "copy_records", "cost_to", "load", "load_many", "rounds_to"]


def _records(records: Records) -> Records:
    if not isinstance(records, Records):
        raise TypeError(f"records must be a Records (topofl.records.load), got "
                        f"{type(records).__name__}")
    return records


def rounds_to(
    records: Records, target: float, metric: str = "test_acc_mean", *, run: str | None = None
) -> int | None:
    """Alias of :meth:`Records.rounds_to`: ``records.rounds_to(target, metric, run=run)``.

    Raises
    ------
    TypeError
        If ``records`` is not a :class:`Records`, or as :meth:`Records.rounds_to`.
    ValueError, KeyError
        As :meth:`Records.rounds_to`.

    Examples
    --------
    >>> r = tf.records.Records(rows=[
    ...     {"run": "a", "round": t, "client": None, "metric": "acc", "value": v}
    ...     for t, v in [(4, 0.1), (9, 0.6), (14, 0.9)]])
    >>> tf.records.rounds_to(r, 0.5, "acc") == r.rounds_to(0.5, "acc") == 10
    True
    """
    return _records(records).rounds_to(target, metric, run=run)


def cost_to(
    records: Records, target: float, cost: str = "bytes", metric: str = "test_acc_mean", *,
    run: str | None = None
) -> float | None:
    """Alias of the cost queries: what the run had spent when ``metric`` first reached
    ``target`` (``None`` if never).

    ``cost`` ``"bytes"``, ``"messages"`` or ``"time"`` is :meth:`Records.bytes_to`,
    :meth:`Records.messages_to` or :meth:`Records.time_to` (:data:`COSTS` names the metric
    each reads); another name is read as a cumulative metric of its own, the same way.

    Raises
    ------
    TypeError
        If ``records`` is not a :class:`Records`, or ``target`` is not a real number.
    ValueError
        If ``target`` is NaN.
    KeyError
        When the cost metric was not recorded at that round (a run without ``network`` has
        no ``sim_time``), or ``metric`` never was.

    Examples
    --------
    >>> rows = [{"run": "a", "round": t, "client": None, "metric": m, "value": v}
    ...         for t, acc in [(4, 0.1), (9, 0.6)]
    ...         for m, v in [("acc", acc), ("bytes", 100 * (t + 1)), ("sim_time", 2.0 * t)]]
    >>> r = tf.records.Records(rows=rows)
    >>> tf.records.cost_to(r, 0.5, "bytes", "acc"), tf.records.cost_to(r, 0.5, "time", "acc")
    (1000.0, 18.0)
    >>> tf.records.cost_to(r, 0.5, "time", "acc") == r.time_to(0.5, "acc")
    True
    """
    return _records(records)._spent_to(target, COSTS.get(cost, cost), metric, run)
