"""The tables of run records: the pandas frames :meth:`Records.summary_table
<topofl.records.Records.summary_table>` and :meth:`Records.to_pandas
<topofl.records.Records.to_pandas>` return (documented there)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from topofl.records._format import _as_float
from topofl.records.curves import _check_target, _first_reach, area_under_curve

if TYPE_CHECKING:
    from topofl.records.queries import Records

__all__ = ["summary_frame", "rows_frame"]


def summary_frame(records: Records, metric: str, target: float | None) -> Any:
    """:meth:`Records.summary_table <topofl.records.Records.summary_table>`'s frame."""
    import pandas as pd

    if target is not None:
        _check_target(target)
    out = []
    for run in records.runs:
        row: dict[str, Any] = {"run": run}
        try:
            rounds, vals = records.series(metric, run=run)
        except KeyError:
            rounds, vals = np.zeros(0, dtype=np.int64), np.zeros(0)
        have = rounds.size > 0
        row["rounds"] = int(rounds[-1]) + 1 if have else math.nan
        row["final"] = float(vals[-1]) if have else math.nan
        row["best"] = float(np.nanmax(vals)) if np.any(~np.isnan(vals)) else math.nan
        row["auc"] = area_under_curve(rounds + 1, vals) if have else math.nan
        if target is not None:
            k = _first_reach(rounds, vals, target)
            row["rounds_to"] = math.nan if k is None else k
        out.append(row)
    cols = ["run", "rounds", "final", "best", "auc"] + (["rounds_to"] if target is not None
                                                        else [])
    return pd.DataFrame(out, columns=cols)


def rows_frame(rows: Sequence[dict[str, Any]], runs: Sequence[str], wide: bool) -> Any:
    """:meth:`Records.to_pandas <topofl.records.Records.to_pandas>`'s frame of ``rows``
    (``runs``: the runs in their order)."""
    import pandas as pd

    long = pd.DataFrame({
        "run": pd.Series([str(r["run"]) for r in rows], dtype=object),
        "round": pd.Series([int(r["round"]) for r in rows], dtype="int64"),
        "client": pd.array([r["client"] for r in rows], dtype="Int64"),
        "metric": pd.Series([str(r["metric"]) for r in rows], dtype=object),
        "value": pd.Series([_as_float(r["value"]) for r in rows], dtype="float64"),
    })
    if not wide:
        return long
    keys = ["run", "round", "client"]
    dedup = long.drop_duplicates(subset=[*keys, "metric"], keep="last")
    out = dedup.pivot(index=keys, columns="metric", values="value")
    out.columns.name = None
    out = out.reset_index()
    order = {run: k for k, run in enumerate(runs)}
    out["_order"] = out["run"].map(order)
    out = out.sort_values(["_order", "round", "client"], na_position="first", kind="stable")
    return out.drop(columns="_order").reset_index(drop=True)
