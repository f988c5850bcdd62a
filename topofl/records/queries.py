"""The queries of run records: :class:`Records`.

Every question about a run has one name, a method of :class:`Records`: :meth:`Records.rounds_to`,
:meth:`Records.bytes_to`, :meth:`Records.messages_to` and :meth:`Records.time_to` (what reaching
a target cost), :meth:`Records.best` and :meth:`Records.final`, :meth:`Records.series` (the
curve), :meth:`Records.status` (whether the run finished, a :class:`RunStatus`) and
:meth:`Records.summary_table` (one row per run). They read the curves with the functions of
:mod:`topofl.records.curves` (:func:`~topofl.records.curves.area_under_curve`: a curve's mean
height).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from topofl.records._format import _number
from topofl.records._queries_checks import (
    RunStatus,
    _check_metric,
    _check_records_args,
    _planned_rounds,
    _warn_nan,
    _widen,
)
from topofl.records.columns import ClientBlock, block_value, client_table, merged_points, regroup
from topofl.records.curves import _check_target, _first_reach
from topofl.records.tables import rows_frame, summary_frame

__all__ = ["COSTS", "Records", "RunStatus"]

#: The cumulative cost metrics a run records: what :meth:`Records.bytes_to`,
#: :meth:`Records.messages_to` and :meth:`Records.time_to` read.
COSTS = {"bytes": "bytes", "messages": "messages", "time": "sim_time"}


class Records:
    """The rows of one or more runs, with per-run queries.

    Every query (:meth:`series`, :meth:`rounds_to`, :meth:`bytes_to`, :meth:`messages_to`,
    :meth:`time_to`, :meth:`final`, :meth:`best`, :meth:`per_client`, :meth:`status`)
    answers for ONE run: pass ``run=`` when several runs are loaded; without it they raise a
    ``ValueError`` naming the runs rather than mixing them. :meth:`summary_table` answers for
    all runs at once (one row per run); the area under a curve is
    ``area_under_curve(*records.series(metric))`` (:func:`area_under_curve`).

    The ``round`` field of a row is the 0-based index of the training round after which the
    row was recorded: an evaluation at ``round == r`` saw ``r + 1`` completed rounds.

    Parameters
    ----------
    config : dict, optional
        The header config of the run (used for every run of ``rows`` when ``configs`` is not
        given).
    rows : list of dict, optional
        Rows with keys ``run, round, client, metric, value``.
    configs, provenances, engines : dict, optional
        Run id -> the header's ``config``, ``provenance`` and ``engine`` (see :func:`load`).
    provenance, engine : dict, optional
        The header's ``provenance`` and ``engine`` of a single run.
    blocks : iterable of ClientBlock, optional
        Per-client values as columns (:mod:`topofl.records.columns`: what :func:`load` reads
        from a run's client file): each stands for one row a client at its place among
        ``rows``.

    Attributes
    ----------
    rows : list of dict
        Every row, those the blocks stand for included (built from the blocks on first use:
        the queries :meth:`per_client`, :meth:`clients` and :meth:`selected` read the blocks'
        arrays without it).
    configs, provenances, engines : dict
        Run id -> header parts, one entry per loaded run.
    sources : dict
        Run id -> the file it was read from (filled by :func:`load` and :func:`load_many`).
    cut : dict
        Run id -> bytes of a final line (or a last block of its client file) cut short by a
        crash mid-write, which :func:`load` dropped (runs whose file ends cleanly are
        absent): such a run was interrupted.
    unreadable : dict
        File -> why it could not be read, for the files :func:`load_many` skipped with
        ``on_error="skip"``.
    """

    def __init__(
        self,
        config: Mapping[str, Any] | None = None,
        rows: Iterable[dict[str, Any]] | None = None,
        *,
        configs: Mapping[str, Mapping[str, Any]] | None = None,
        provenance: Mapping[str, Any] | None = None,
        provenances: Mapping[str, Mapping[str, Any]] | None = None,
        engine: Mapping[str, Any] | None = None,
        engines: Mapping[str, Mapping[str, Any]] | None = None,
        blocks: Iterable[ClientBlock] | None = None,
    ) -> None:
        _check_records_args(rows, config=config, provenance=provenance, engine=engine,
                            configs=configs, provenances=provenances, engines=engines)
        self._rows: list[dict[str, Any]] = list(rows) if rows is not None else []
        for k, r in enumerate(self._rows):
            if not isinstance(r, Mapping) or "run" not in r:
                raise TypeError(f"rows[{k}] must be a row dict with a 'run' key, got "
                                f"{type(r).__name__} {r!r}"[:200])
        self._blocks: list[ClientBlock] = list(blocks) if blocks is not None else []
        for k, b in enumerate(self._blocks):
            if not isinstance(b, ClientBlock):
                raise TypeError(f"blocks[{k}] must be a ClientBlock, got {type(b).__name__}")
        row_runs = list(dict.fromkeys([*(r["run"] for r in self._rows),
                                       *(b.run for b in self._blocks)]))

        def per_run(
            many: Mapping[str, Mapping[str, Any]] | None, one: Mapping[str, Any] | None
        ) -> dict[str, dict[str, Any]]:
            if many is not None:
                return {str(k): dict(v) for k, v in many.items()}
            return {run: dict(one) for run in row_runs} if one else {}

        self.configs = per_run(configs, config)
        self.provenances = per_run(provenances, provenance)
        self.engines = per_run(engines, engine)
        self._single = (dict(config or {}), dict(provenance or {}), dict(engine or {}))
        self.cut: dict[str, int] = {}
        self.sources: dict[str, str] = {}
        self.unreadable: dict[str, str] = {}
        self._index: dict[tuple[str, str, int | None], list[tuple[int, Any]]] = {}
        self._indexed = -1

    # ------------------------------------------------------------------ rows and blocks
    @property
    def rows(self) -> list[dict[str, Any]]:
        """Every row as a dict, in the order written (the blocks' rows at their places)."""
        if self._blocks:
            self._rows = regroup(self._rows, self._blocks)
            self._blocks = []
        return self._rows

    @rows.setter
    def rows(self, rows: list[dict[str, Any]]) -> None:
        self._rows, self._blocks = rows, []

    @property
    def blocks(self) -> list[ClientBlock]:
        """The per-client values held as columns (:class:`~topofl.records.columns.ClientBlock`,
        ``[]`` once :attr:`rows` has been built from them)."""
        return list(self._blocks)

    # ------------------------------------------------------------------ runs and headers
    @property
    def runs(self) -> list[str]:
        """Run identifiers: those with a header, then those seen in the rows, in order."""
        return list(dict.fromkeys([*self.configs, *(r["run"] for r in self._rows),
                                   *(b.run for b in self._blocks)]))

    def subset(self, runs: Sequence[str]) -> Records:
        """The records of ``runs`` only (rows, headers, sources and cut lines), in that order.

        Examples
        --------
        >>> rec = tf.records.Records(rows=[{"run": r, "round": 0, "client": None,
        ...                                 "metric": "m", "value": 1.0} for r in "abc"])
        >>> rec.subset(["c", "a"]).runs
        ['a', 'c']
        """
        keep = set(runs)

        def pick(d: Mapping[str, Any]) -> dict[str, Any]:
            return {r: d[r] for r in runs if r in d}

        rows, blocks = self._kept(keep)
        out = Records(rows=rows, configs=pick(self.configs), blocks=blocks,
                      provenances=pick(self.provenances), engines=pick(self.engines))
        out.sources = pick(self.sources)
        out.cut = pick(self.cut)
        return out

    @property
    def metrics(self) -> list[str]:
        """Names of the recorded metrics (of all runs), sorted."""
        return sorted({r["metric"] for r in self._rows} | {b.metric for b in self._blocks})

    def _kept(self, runs: set[str]) -> tuple[list[dict[str, Any]], list[ClientBlock]]:
        """The rows and blocks of ``runs``, each block's place counted among the kept rows."""
        kept = np.cumsum([0] + [r["run"] in runs for r in self._rows])
        return ([r for r in self._rows if r["run"] in runs],
                [b.renamed(b.run, int(kept[min(b.at, len(self._rows))]) - b.at)
                 for b in self._blocks if b.run in runs])

    def _header(self, k: int, name: str) -> dict[str, Any]:
        runs = self.runs
        if len(runs) > 1:
            raise ValueError(
                f"{len(runs)} runs are loaded ({', '.join(runs)}): use .{name}s[run]"
            )
        table = (self.configs, self.provenances, self.engines)[k]
        if runs and runs[0] in table:
            return table[runs[0]]
        return self._single[k]

    @property
    def config(self) -> dict[str, Any]:
        """The header config of the (single) run; ``ValueError`` when several are loaded."""
        return self._header(0, "config")

    @property
    def provenance(self) -> dict[str, Any]:
        """The header provenance of the (single) run (``{}`` in files without one)."""
        return self._header(1, "provenance")

    @property
    def engine(self) -> dict[str, Any]:
        """The header's engine description of the (single) run (``{}`` if absent)."""
        return self._header(2, "engine")

    def _run(self, run: str | None) -> str | None:
        """The run a query is about: ``run`` if loaded, else the only run."""
        runs = self.runs
        if run is not None:
            if run not in runs:
                raise ValueError(f"no run {run!r} in these records; runs: {runs}")
            return run
        if len(runs) > 1:
            raise ValueError(
                f"{len(runs)} runs are loaded ({', '.join(runs)}): pass run=... to query one, "
                "or use summary_table() for one row per run"
            )
        return runs[0] if runs else None

    def for_run(self, run: str) -> Records:
        """The records of one run (rows and header), as a single-run :class:`Records`."""
        run = str(self._run(run))
        rows, blocks = self._kept({run})
        out = Records(
            rows=rows, blocks=blocks,
            configs={run: self.configs[run]} if run in self.configs else {},
            provenances={run: self.provenances[run]} if run in self.provenances else {},
            engines={run: self.engines[run]} if run in self.engines else {},
        )
        out.cut = {run: self.cut[run]} if run in self.cut else {}
        out.sources = {run: self.sources[run]} if run in self.sources else {}
        return out

    # ------------------------------------------------------------------ queries
    def _points(self, run: str | None, metric: str, client: int | None) -> list[tuple[int, Any]]:
        if self._indexed != len(self._rows):
            index: dict[tuple[str, str, int | None], list[tuple[int, Any]]] = {}
            for r in self._rows:
                index.setdefault((r["run"], r["metric"], r["client"]), []).append(
                    (r["round"], r["value"]))
            self._index, self._indexed = index, len(self._rows)
        pts = [] if run is None else self._index.get((run, metric, client), [])
        if client is None or not self._blocks or run is None:
            return pts
        return merged_points(self._rows, self._blocks, run, metric, client)

    def run_id(self, run: str | None = None) -> str | None:
        """The run a query is about: ``run`` when it is loaded, else the only run loaded
        (``None`` when none is); a ``ValueError`` for an unknown ``run``, or for ``run=None``
        with several runs loaded.

        Examples
        --------
        >>> rec = tf.records.Records(rows=[{"run": "a", "round": 0, "client": None,
        ...                                 "metric": "m", "value": 1.0}])
        >>> rec.run_id(), rec.run_id("a")
        ('a', 'a')
        """
        return self._run(run)

    def points(self, metric: str, *, client: int | None = None, run: str | None = None
               ) -> list[tuple[int, Any]]:
        """The recorded ``(round, value)`` pairs of one metric of one run, in the rows' order,
        each value as recorded (a list such as ``realized_edges`` too, which :meth:`series`
        refuses); ``[]`` when the metric was never recorded for this run.

        Examples
        --------
        >>> rec = tf.records.Records(rows=[{"run": "a", "round": t, "client": None,
        ...                                 "metric": "edges", "value": [[0, 1]] * t}
        ...                                for t in (1, 2)])
        >>> rec.points("edges"), rec.points("absent")
        ([(1, [[0, 1]]), (2, [[0, 1], [0, 1]])], [])
        """
        return self._points(self._run(run), metric, client)

    def status(self, run: str | None = None) -> RunStatus:
        """Whether a run finished: its rows reach the last round its header plans.

        A run is *complete* when its last row is of round ``rounds - 1`` (the engine always
        evaluates the last round) and its file did not end in a cut line; *incomplete* when
        it stopped earlier (interrupted, killed, or diverged: the rows end at the last
        evaluation before) or its file was cut mid-write. When the header does not say how
        many rounds were planned (a file not written by ``topofl.run``), ``complete`` is
        ``None`` unless the file was cut.

        Examples
        --------
        >>> rows = [{"run": "a", "round": t, "client": None, "metric": "acc", "value": 0.5}
        ...         for t in (4, 9)]
        >>> r = tf.records.Records(rows=rows, config={"rounds": 20})
        >>> s = r.status()
        >>> s.complete, s.rounds, s.planned
        (False, 10, 20)
        >>> s.reason
        'its rows end after round 10 of the 20 its header plans'
        >>> tf.records.Records(rows=rows, config={"rounds": 10}).status().complete
        True
        """
        rid = self._run(run)
        rounds = 0 if rid is None else max(
            [*(int(r["round"]) + 1 for r in self._rows if r["run"] == rid),
             *(b.round + 1 for b in self._blocks if b.run == rid)], default=0)
        planned = _planned_rounds(self.configs.get(rid, {}) if rid is not None else {},
                                  self.engines.get(rid, {}) if rid is not None else {})
        reasons = []
        if rid is not None and rid in self.cut:
            reasons.append(f"its file ends in a line cut short ({self.cut[rid]} bytes, dropped): "
                           "the run was stopped while writing")
        if planned is not None and rounds < planned:
            reasons.append(f"its rows end after round {rounds} of the {planned} its header "
                           "plans" if rounds else f"it has no rows (of the {planned} rounds "
                           "its header plans)")
        complete: bool | None = not reasons if planned is not None or reasons else None
        return RunStatus(run=rid, complete=complete, rounds=rounds, planned=planned,
                         reason="; ".join(reasons))

    def series(
        self, metric: str, *, client: int | None = None, run: str | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """``(rounds, values)`` of one metric of one run, sorted by round.

        ``rounds`` are the rows' ``round`` fields (0-based round indices; ``rounds + 1``
        rounds were completed). ``null`` values are NaN, ``"inf"`` is ``inf``.

        Raises
        ------
        TypeError
            If ``metric`` is not a str.
        KeyError
            If the metric was never recorded for this run (the message lists the recorded ones).
        ValueError
            If several runs are loaded and ``run`` is not given, or ``run`` is unknown; or a
            value is not a number (text, an object, or a list such as ``realized_edges``:
            the message names the run, metric and round).
        """
        _check_metric(metric)
        name = self._run(run)
        pts = self._points(name, metric, client)
        if not pts:
            whole = {r["client"] is None for r in self._rows
                     if r["run"] == name and r["metric"] == metric}
            whole |= {False for b in self._blocks if b.run == name and b.metric == metric}
            if whole and client is None:  # recorded, one value a client: not the run's
                raise KeyError(f"metric {metric!r} of run {name!r} is recorded per client, "
                               f"not as one value of the run: read per_client({metric!r}, "
                               f"round), clients({metric!r}) or series({metric!r}, client=i)")
            hint = ("; a run records global_* only when its data has a global test set "
                    "(a dataset's own test split)" if str(metric).startswith("global_") else "")
            hint += "; it is recorded for the run as a whole (client=None)" if True in whole \
                else ("; it is recorded for other clients" if whole else "")
            raise KeyError(
                f"metric {metric!r} (client={client}) not recorded"
                + ("" if run is None else f" in run {run!r}") + f"; have {self.metrics}{hint}"
            )
        pts = sorted(pts, key=lambda p: p[0])
        rounds = np.array([p[0] for p in pts], dtype=np.int64)
        vals = np.array([_number(v, metric, name, t, client) for t, v in pts],
                        dtype=np.float64)
        return rounds, vals

    def per_client(self, metric: str, round: int, *, run: str | None = None) -> np.ndarray:
        """Values of a per-client metric of one run at one round, indexed by client."""
        _check_metric(metric)
        name = self._run(run)
        pts = sorted(
            ((r["client"], r["value"])
             for r in self._rows
             if r["metric"] == metric and r["round"] == round and r["client"] is not None
             and r["run"] == name), key=lambda p: p[0]
        )
        mine = [b for b in self._blocks
                if b.run == name and b.metric == metric and b.round == round]
        if len(mine) == 1 and not pts:
            return mine[0].values.astype(np.float64)  # the columns: no row built (a copy)
        pts = sorted([*pts, *((i, block_value(v)) for b in mine
                              for i, v in enumerate(b.values.tolist()))], key=lambda p: p[0])
        if not pts:
            raise KeyError(f"per-client metric {metric!r} not recorded at round {round}")
        return np.array([_number(v, metric, name, round, c) for c, v in pts])

    def clients(self, metric: str, *, run: str | None = None) -> tuple[np.ndarray, np.ndarray]:
        """``(rounds, values)`` of a per-client metric of one run: ``values[k, i]`` is client
        ``i``'s value at ``rounds[k]`` (sorted), NaN where it has none (or recorded ``null``).

        Read from the blocks' arrays without building a row (the per-client values of a run
        written since they are columns, :mod:`topofl.records.columns`), or from the rows.

        Raises
        ------
        KeyError
            If ``metric`` was never recorded per client for this run.
        TypeError, ValueError
            As :meth:`series`.

        Examples
        --------
        >>> rows = [{"run": "r", "round": t, "client": c, "metric": "acc", "value": v}
        ...         for t, c, v in [(0, 0, 0.5), (0, 1, 0.25), (4, 1, 0.75)]]
        >>> rounds, values = Records(rows=rows).clients("acc")
        >>> rounds.tolist(), values.tolist()
        ([0, 4], [[0.5, 0.25], [nan, 0.75]])
        """
        _check_metric(metric)
        name = self._run(run)
        rounds, values, _ = client_table(self._rows, self._blocks, name, metric)
        if not rounds.size:
            raise KeyError(f"per-client metric {metric!r} not recorded"
                           + ("" if run is None else f" in run {run!r}"))
        return rounds, values

    def selected(self, metric: str = "test_acc", by: str = "val_loss", *, mode: str = "min",
                 run: str | None = None) -> np.ndarray:
        """Every client's per-client ``metric`` at the evaluation where its own ``by`` was
        best: the best-validation model selection of the personalized-FL papers.

        A run with ``RunConfig(eval_val=True)`` records each client's ``val_loss`` and
        ``val_acc`` beside its ``test_acc`` at every evaluation; this reads, for client
        ``i``, ``metric`` at the round where ``by`` is lowest (``mode="min"``) or highest
        (``"max"``) over the rounds where both are recorded and ``by`` is a finite number
        (a NaN or infinite loss, ``"-inf"`` included, is a diverged model, never the best),
        the earliest such round on a tie (the model a client that keeps its best model so
        far would hold). ``eval_every=1`` selects among every round.

        Returns
        -------
        ndarray of float64, shape (n,)
            Indexed by client (``n``: one more than the largest client recorded); NaN for a
            client with no such round.

        Raises
        ------
        TypeError
            If ``metric`` or ``by`` is not a str.
        KeyError
            If ``metric`` or ``by`` was never recorded per client for this run (``by`` is
            recorded by runs with ``eval_val=True``).
        ValueError
            If ``mode`` is not ``"min"`` or ``"max"``; as :meth:`series` for ``run``.

        Examples
        --------
        >>> rows = [{"run": "r", "round": t, "client": c, "metric": m, "value": v}
        ...         for t, c, m, v in [(0, 0, "val_loss", 0.9), (0, 0, "test_acc", 0.5),
        ...                            (1, 0, "val_loss", 0.4), (1, 0, "test_acc", 0.7),
        ...                            (2, 0, "val_loss", 0.6), (2, 0, "test_acc", 0.8),
        ...                            (0, 1, "val_loss", 0.2), (0, 1, "test_acc", 0.6),
        ...                            (1, 1, "val_loss", 0.2), (1, 1, "test_acc", 0.9)]]
        >>> Records(rows=rows).selected().tolist()  # client 1: the earlier of two ties
        [0.7, 0.6]
        """
        _check_metric(metric)
        _check_metric(by, "by")
        if mode not in ("min", "max"):
            raise ValueError(f"mode must be 'min' or 'max', got {mode!r}")
        name = self._run(run)
        tables = {m: client_table(self._rows, self._blocks, name, m) for m in (metric, by)}
        for m in (metric, by):
            if not tables[m][0].size:
                raise KeyError(
                    f"per-client metric {m!r} not recorded" + ("" if run is None else
                                                               f" in run {run!r}")
                    + ("; a run records val_loss and val_acc per client with "
                       "RunConfig(eval_val=True)" if m.startswith("val_") else ""))
        (t_m, v_m, has_m), (t_b, v_b, has_b) = tables[metric], tables[by]
        n = max(v_m.shape[1], v_b.shape[1])
        rounds = np.intersect1d(t_m, t_b)  # sorted: the earliest round first on a tie
        vm = _widen(v_m[np.searchsorted(t_m, rounds)], n)
        hm = _widen(has_m[np.searchsorted(t_m, rounds)], n, fill=False)
        vb = _widen(v_b[np.searchsorted(t_b, rounds)], n)
        hb = _widen(has_b[np.searchsorted(t_b, rounds)], n, fill=False)
        sign = 1.0 if mode == "min" else -1.0
        # NaN, inf, -inf: no model to select
        score = np.where(hm & hb & np.isfinite(vb), sign * vb, np.inf)
        out = np.full(n, np.nan)
        if rounds.size:
            pick = np.argmin(score, axis=0)
            ok = np.isfinite(score[pick, np.arange(n)])
            out[ok] = vm[pick[ok], np.flatnonzero(ok)]
        return out

    def rounds_to(
        self, target: float, metric: str = "test_acc_mean", *, run: str | None = None
    ) -> int | None:
        """Rounds completed when ``metric`` first reaches ``target`` (``None`` if it never does).

        The one definition of "rounds to target" in topofl. A row recorded at ``round == r``
        (the 0-based index of the round just finished) has seen ``r + 1`` rounds, so the
        answer is ``r + 1`` for the first row whose value is ``>= target``, counted from 1.
        With ``eval_every = k`` it is a multiple of ``k`` (or the last round): the first
        *evaluated* round at which the target holds, never earlier than the truth. A NaN
        value never reaches.

        Parameters
        ----------
        target : float
            A real number (not NaN).
        metric : str, default "test_acc_mean"
        run : str, optional
            Required when several runs are loaded.

        Raises
        ------
        TypeError
            If ``target`` is not a real number (``None``, text, a bool ...).
        ValueError
            If ``target`` is NaN, or as :meth:`series`.
        KeyError
            As :meth:`series`: ``metric`` was not recorded.

        Examples
        --------
        Evaluated every 5 rounds (rows at rounds 4, 9, 14): 0.6 was reached after 10 rounds.

        >>> r = tf.records.Records(rows=[
        ...     {"run": "a", "round": t, "client": None, "metric": "acc", "value": v}
        ...     for t, v in [(4, 0.1), (9, 0.6), (14, 0.9)]])
        >>> r.rounds_to(0.5, "acc"), r.rounds_to(0.9, "acc"), r.rounds_to(0.95, "acc")
        (10, 15, None)
        """
        _check_target(target)
        rounds, vals = self.series(metric, run=run)
        return _first_reach(rounds, vals, target)

    def bytes_to(
        self, target: float, metric: str = "test_acc_mean", *, run: str | None = None
    ) -> float | None:
        """Bytes sent (every node, every kind) until ``metric`` first reached ``target``
        (``None`` if it never did).

        Read from the ledger's running total ``bytes`` at the round :meth:`rounds_to` finds
        (the first evaluation at which the target holds); the arguments are those of
        :meth:`rounds_to`.

        Raises
        ------
        KeyError
            When ``bytes`` was not recorded at that round, or ``metric`` never was.

        Examples
        --------
        >>> rows = [{"run": "a", "round": t, "client": None, "metric": m, "value": v}
        ...         for t, acc in [(4, 0.1), (9, 0.6)]
        ...         for m, v in [("acc", acc), ("bytes", 100 * (t + 1))]]
        >>> r = tf.records.Records(rows=rows)
        >>> r.bytes_to(0.5, "acc"), r.bytes_to(0.9, "acc")
        (1000.0, None)
        """
        return self._spent_to(target, COSTS["bytes"], metric, run)

    def messages_to(
        self, target: float, metric: str = "test_acc_mean", *, run: str | None = None
    ) -> float | None:
        """Messages sent until ``metric`` first reached ``target`` (``None`` if it never did).

        Read from the ledger's running total ``messages`` as :meth:`bytes_to` reads ``bytes``.

        Raises
        ------
        KeyError
            As :meth:`bytes_to`, for ``messages``.

        Examples
        --------
        >>> rows = [{"run": "a", "round": 0, "client": None, "metric": m, "value": v}
        ...         for m, v in [("acc", 0.7), ("messages", 40)]]
        >>> tf.records.Records(rows=rows).messages_to(0.5, "acc")
        40.0
        """
        return self._spent_to(target, COSTS["messages"], metric, run)

    def time_to(
        self, target: float, metric: str = "test_acc_mean", *, run: str | None = None
    ) -> float | None:
        """Simulated seconds until ``metric`` first reached ``target`` (``None`` if never).

        Read from ``sim_time``, the virtual clock a run with a ``network`` records every
        round, as :meth:`bytes_to` reads ``bytes``.

        Raises
        ------
        KeyError
            When ``sim_time`` was not recorded at that round (a run without ``network`` has
            none), or ``metric`` never was.

        Examples
        --------
        >>> rows = [{"run": "a", "round": t, "client": None, "metric": m, "value": v}
        ...         for t, acc in [(0, 0.2), (1, 0.7)]
        ...         for m, v in [("acc", acc), ("sim_time", 1.5 * (t + 1))]]
        >>> tf.records.Records(rows=rows).time_to(0.5, "acc")
        3.0
        """
        return self._spent_to(target, COSTS["time"], metric, run)

    def _spent_to(self, target: float, cost: str, metric: str, run: str | None) -> float | None:
        """The cumulative metric ``cost`` at the round :meth:`rounds_to` finds (``None`` if
        the target is never reached); the one implementation of the cost queries."""
        k = self.rounds_to(target, metric, run=run)
        if k is None:
            return None
        rounds, vals = self.series(cost, run=run)
        hit = np.flatnonzero(rounds == k - 1)
        if hit.size == 0:
            raise KeyError(f"{cost!r} was not recorded at round {k - 1}, where {metric} first "
                           f"reached {target}")
        return float(vals[hit[-1]])

    def best(self, metric: str = "test_acc_mean", *, run: str | None = None) -> float:
        """Largest value of ``metric`` over the run (ignoring NaN).

        NaN only when every recorded value is NaN (``null``), and then with a
        ``RuntimeWarning`` that says so.
        """
        rounds, v = self.series(metric, run=run)
        if np.any(~np.isnan(v)):
            return float(np.nanmax(v))
        _warn_nan(metric, self._run(run), f"at all {v.size} of its recorded rounds")
        return math.nan

    def final(self, metric: str = "test_acc_mean", *, run: str | None = None) -> float:
        """Value of ``metric`` at the run's last recorded round.

        NaN only when that value is NaN (``null``), and then with a ``RuntimeWarning`` that
        says so.
        """
        rounds, v = self.series(metric, run=run)
        if math.isnan(v[-1]):
            _warn_nan(metric, self._run(run), f"at its last recorded round ({rounds[-1]})")
        return float(v[-1])

    def summary_table(
        self, metric: str = "test_acc_mean", *, target: float | None = None
    ) -> Any:
        """One row per run: ``run, rounds, final, best, auc`` (and ``rounds_to`` with a target).

        ``rounds`` is the number of rounds completed at the run's last record of ``metric``;
        ``auc`` is :func:`area_under_curve` of its curve; ``rounds_to`` is :meth:`rounds_to`
        (``NaN`` when the target is never reached). A run without ``metric`` has NaN
        everywhere.

        Raises
        ------
        TypeError, ValueError
            If ``target`` is given and is not a real number, or is NaN (as :meth:`rounds_to`).

        Returns
        -------
        pandas.DataFrame

        Examples
        --------
        >>> rows = [{"run": run, "round": t, "client": None, "metric": "acc", "value": v}
        ...         for run, vals in (("ring", [0.2, 0.5, 0.6]), ("complete", [0.5, 0.8, 0.9]))
        ...         for t, v in zip((9, 19, 29), vals)]
        >>> r = tf.records.Records(rows=rows)
        >>> r.summary_table("acc", target=0.75)
                run  rounds  final  best   auc  rounds_to
        0      ring      30    0.6   0.6  0.45        NaN
        1  complete      30    0.9   0.9  0.75       20.0
        """
        return summary_frame(self, metric, target)

    def to_pandas(self, wide: bool = False) -> Any:
        """The rows as a pandas DataFrame.

        Parameters
        ----------
        wide : bool, default False
            ``False``: long format, columns ``run, round, client, metric, value`` (``client``
            is a nullable integer, ``<NA>`` for aggregate rows; ``value`` is float: ``null``
            becomes NaN, ``"inf"`` inf, and a non-numeric value NaN). ``True``: one row per
            ``(run, round, client)`` and one column per metric (a metric not recorded at that
            round is NaN; a row recorded twice keeps its last value).

        Examples
        --------
        >>> rows = [{"run": "a", "round": 0, "client": None, "metric": "acc", "value": 0.5},
        ...         {"run": "a", "round": 0, "client": None, "metric": "loss", "value": 1.5},
        ...         {"run": "a", "round": 1, "client": None, "metric": "acc", "value": 0.7}]
        >>> r = tf.records.Records(rows=rows)
        >>> r.to_pandas()
          run  round  client metric  value
        0   a      0    <NA>    acc    0.5
        1   a      0    <NA>   loss    1.5
        2   a      1    <NA>    acc    0.7
        >>> r.to_pandas(wide=True)
          run  round  client  acc  loss
        0   a      0    <NA>  0.5   1.5
        1   a      1    <NA>  0.7   NaN
        """
        return rows_frame(self.rows, self.runs, wide)

    def to_rows(self) -> list[dict[str, Any]]:
        """Rows as plain dicts."""
        return [dict(r) for r in self.rows]

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return iter(self.rows)

    def __len__(self) -> int:
        return len(self._rows) + sum(int(b.values.size) for b in self._blocks)

    def __repr__(self) -> str:
        return f"Records(runs={self.runs}, rows={len(self)}, metrics={len(self.metrics)})"
