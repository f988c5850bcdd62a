r"""DPFL's own analyses of a run's records: how often benign clients pick malicious ones,
and the spread of the clients' accuracies.

DPFL (Fig. 14 of the paper) asks whether the collaboration graph its clients choose avoids
label-flipping clients: :func:`malicious_share` answers from the recorded graph. DPFL (Figs. 1,
5-7) plots each method's mean test accuracy against the variance of the clients' accuracies
("variance between local models"): :func:`client_accuracy_stats` reads both from a run's
per-client records (:func:`topofl.figures.per_seed` summarises it over seeds,
:func:`topofl.plotting.accuracy_variance` draws it). Both read :mod:`topofl.records`; they
compute nothing of the run itself.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from topofl._utils.validation import check_choice, check_int, check_memory
from topofl.records import Records

__all__ = ["malicious_share", "client_accuracy_stats"]


def _flipped_clients(records: Records, rid: str | None) -> list[int]:
    """The label-flipping clients of a run, from its header (``engine.data.label_flip``)."""
    eng = records.engines.get(rid, {}) if rid is not None else {}
    info = (eng.get("data") or {}).get("label_flip") if isinstance(eng, Mapping) else None
    if not info or "clients" not in info:
        raise ValueError(
            "these records name no label-flipping clients (a run on data built with "
            "flip_labels=... records them in its header): pass malicious=[client ids]"
        )
    return [int(c) for c in info["clients"]]


def _malicious_ids(malicious: Iterable[int] | np.ndarray,
                   n: int | None) -> tuple[list[int], int | None]:
    """The ids of ``malicious`` (client ids, or a bool mask that also gives ``n`` when it is
    ``None``), and ``n``."""
    arr = np.asarray(malicious)
    if arr.dtype == bool:
        if n is None:
            n = int(arr.size)
        elif arr.size != n:
            raise ValueError(f"malicious as a mask must have n={n} entries, got {arr.size}")
        return np.flatnonzero(arr).tolist(), n
    if arr.size and not np.issubdtype(arr.dtype, np.integer):
        raise TypeError(f"malicious must hold client ids (ints) or be a bool mask, got "
                        f"dtype {arr.dtype}")
    return [int(c) for c in arr.ravel()], n


def _recorded_clients(records: Records, rid: str | None, seen: int) -> int:
    """The number of clients of a run: its config's ``n_clients``, else its data's partition's,
    else ``seen`` (one more than the largest id seen)."""
    cfg = records.configs.get(rid, {}) if rid is not None else {}
    eng = records.engines.get(rid, {}) if rid is not None else {}
    part = (eng.get("data") or {}).get("partition") or {}
    if isinstance(cfg.get("n_clients"), int):
        return int(cfg["n_clients"])
    if isinstance(part.get("num_clients"), int):
        return int(part["num_clients"])
    return seen


def _share_row(t: int, e: np.ndarray, bad: np.ndarray, benign: int) -> dict[str, Any]:
    """A row of :func:`malicious_share`: round ``t``'s ``[m, 2]`` edges ``e`` counted into the
    benign clients (``bad``: the ``[n]`` mask of malicious ones, ``benign`` their count)."""
    n = bad.shape[0]
    into = e[~bad[e[:, 1]]] if e.size else e
    deg = np.bincount(into[:, 1], minlength=n) if into.size else np.zeros(n, np.int64)
    mal = (np.bincount(into[:, 1], weights=bad[into[:, 0]], minlength=n)
           if into.size else np.zeros(n))
    picked = deg > 0
    return {
        "round": t,
        "edges": int(deg.sum()),
        "from_malicious": int(mal.sum()),
        "share": float(mal.sum() / deg.sum()) if deg.sum() else math.nan,
        "client_share": float(np.mean(mal[picked] / deg[picked])) if picked.any()
        else math.nan,
        "picking": float((mal > 0).sum() / benign) if benign else math.nan,
    }


def malicious_share(
    records: Records,
    *,
    malicious: Iterable[int] | np.ndarray | None = None,
    n: int | None = None,
    graph: str = "realized",
    run: str | None = None,
) -> Any:
    r"""How often benign clients pick malicious collaborators, round by round (DPFL Fig. 14).

    Reads a recorded collaboration graph: ``realized_edges`` (the collaborators $C_k$ of every
    round, an edge ``[j, k]`` meaning that client ``k`` used client ``j``'s model) or, with
    ``graph="omega"``, DPFL's candidate graph $\Omega$ (``dpfl_omega_edges``, recorded in the
    round its pre-processing ran). Only edges *into* benign clients count: for a benign
    client $k$ with collaborators $C_k$, the malicious share is
    $|C_k \cap M| / |C_k|$ with $M$ the malicious clients.

    Parameters
    ----------
    records : Records
        Records of one run (or pass ``run``).
    malicious : iterable of int or bool mask, optional
        The malicious clients; by default the label-flipping clients the run's header records
        (data built with ``flip_labels=...``).
    n : int, optional
        Number of clients (default: the run's ``n_clients``, else the data's partition, else
        one more than the largest id seen); only needed to count the benign clients.
    graph : {"realized", "omega"}, default "realized"
    run : str, optional

    Returns
    -------
    pandas.DataFrame
        One row per recorded round, with columns ``round``; ``edges`` (collaborators picked
        by benign clients, all of them counted); ``from_malicious`` (of those, how many are
        malicious); ``share`` (``from_malicious / edges``, NaN when benign clients picked no
        one); ``client_share`` (the mean over benign clients with at least one collaborator
        of $|C_k \cap M| / |C_k|$, NaN if there are none); ``picking`` (the fraction of all
        benign clients that picked at least one malicious client).

    Raises
    ------
    TypeError
        ``records`` not a :class:`~topofl.records.Records`, ``malicious`` not client ids or a
        bool mask, ``graph`` not a str, ``run`` neither a str nor ``None``.
    ValueError
        Records without the graph, without recorded label-flipping clients and no
        ``malicious``, a client id out of range, or an unknown ``graph``.

    Examples
    --------
    Clients 2 and 3 are malicious. In round 0, benign client 0 uses clients 1 and 2, benign
    client 1 uses client 3 (client 2's pick of client 0 does not count); in round 1 only client
    0 picks anyone, the benign client 1.

    >>> rows = [{"run": "r", "round": 0, "client": None, "metric": "realized_edges",
    ...          "value": [[2, 0], [1, 0], [3, 1], [0, 2]]},
    ...         {"run": "r", "round": 1, "client": None, "metric": "realized_edges",
    ...          "value": [[1, 0], [3, 2]]}]
    >>> df = tf.algorithms.malicious_share(tf.records.Records(rows=rows), malicious=[2, 3], n=4)
    >>> df.round(4).values.tolist()
    [[0.0, 3.0, 2.0, 0.6667, 0.75, 1.0], [1.0, 1.0, 0.0, 0.0, 0.0, 0.0]]
    """
    import pandas as pd

    names = {"realized": "realized_edges", "omega": "dpfl_omega_edges"}
    if not isinstance(graph, str) or graph not in names:
        raise (ValueError if isinstance(graph, str) else TypeError)(
            f"graph must be one of {sorted(names)}, got {type(graph).__name__} {graph!r}"[:200])
    if not isinstance(records, Records):
        raise TypeError(f"records must be a topofl.records.Records, got {type(records).__name__}")
    if run is not None and not isinstance(run, str):
        raise TypeError(f"run must be a run id (str) or None, got {type(run).__name__} "
                        f"{run!r}"[:200])
    rid = records.run_id(run)
    points = sorted(records.points(names[graph], run=rid), key=lambda p: p[0])
    if not points:
        raise ValueError(
            f"these records hold no {names[graph]!r}: only algorithms that choose their own "
            "graph (DPFL, PFedDST) record one")
    if malicious is None:
        bad_ids = _flipped_clients(records, rid)
    else:
        bad_ids, n = _malicious_ids(malicious, n)
    edges = [np.asarray(v, dtype=np.int64).reshape(-1, 2) for _, v in points]
    seen = max([int(e.max()) for e in edges if e.size] + bad_ids + [-1]) + 1
    if n is not None:
        n = check_int(n, "n (number of clients)", low=1)
        check_memory(16.0 * n, f"malicious_share(n={n})")
    if n is None:
        n = _recorded_clients(records, rid, seen)
    outside = [c for c in bad_ids if not 0 <= c < n]
    if outside:
        raise ValueError(f"malicious must hold client ids in [0, {n - 1}] (n = {n} clients), "
                         f"got {outside[0]}")
    lo = min([int(e.min()) for e in edges if e.size] + [0])
    if seen > n or lo < 0:
        hi = max([int(e.max()) for e in edges if e.size] + [0])
        raise ValueError(f"client ids must lie in [0, {n - 1}] (n = {n} clients), but the "
                         f"recorded {names[graph]!r} holds ids from {lo} to {hi}")
    bad = np.zeros(n, dtype=bool)
    bad[bad_ids] = True
    benign = int((~bad).sum())
    rows = [_share_row(int(t), e, bad, benign) for (t, _), e in zip(points, edges)]
    return pd.DataFrame(rows, columns=["round", "edges", "from_malicious", "share",
                                       "client_share", "picking"])


def client_accuracy_stats(records: Records, *, run: str | None = None, metric: str = "test_acc",
                          round: int | None = None, select: str = "last"
                          ) -> tuple[float, float]:
    r"""Mean and variance over clients of a per-client accuracy, in % and %²: the two axes of
    DPFL's "variance between local models" plots (Figs. 1, 5-7).

    With $a_k$ the accuracy of client $k$ (in %) at ``round``, returns
    $\bar a = \frac1n \sum_k a_k$ and $\frac1n \sum_k (a_k - \bar a)^2$ (the population variance).

    Parameters
    ----------
    records : Records
        Records holding the per-client metric (a run with ``record_clients=True``).
    run : str, optional
        The run (needed when the records hold several).
    metric : str, default "test_acc"
        The per-client metric, a fraction in ``[0, 1]``.
    round : int, optional
        The round (default: the last round at which the metric was recorded per client).
    select : {"last", "best_val"}, default "last"
        ``"best_val"``: each client's ``metric`` at the evaluation where its validation loss
        was lowest (:meth:`~topofl.records.Records.selected`; a run with
        ``RunConfig(eval_val=True)``), the papers' best-validation model selection, instead
        of its value at ``round``. A client with no finite validation loss at any evaluation
        (no validation sample: one sample of each of its classes, which a split keeps for
        training; or a model diverged from the start) cannot validate and keeps its current
        model: its value at the last evaluation.

    Raises
    ------
    ValueError
        When the records hold no per-client value of ``metric``, or a NaN (a client without
        test samples).

    Examples
    --------
    >>> rows = [{"run": "r", "round": 4, "client": k, "metric": "test_acc", "value": v}
    ...         for k, v in enumerate([0.5, 0.7, 0.9])]
    >>> from topofl.algorithms import client_accuracy_stats
    >>> mean, var = client_accuracy_stats(tf.records.Records(rows=rows))
    >>> round(mean, 6), round(var, 6)  # ((20^2 + 0 + 20^2) / 3)
    (70.0, 266.666667)
    """
    check_choice(select, "select", ("last", "best_val"))
    rid = records.run_id(run)
    if select == "best_val":
        if round is not None:
            raise ValueError("select='best_val' chooses each client's round: pass round=None")
        acc = 100.0 * records.selected(metric, "val_loss", run=rid)
        where = "at its best validation loss (or its last evaluation, without one)"
        if np.isnan(acc).any():  # no validation loss: the client's last evaluation
            last = int(records.clients(metric, run=rid)[0][-1])
            now = 100.0 * records.per_client(metric, last, run=rid)
            acc = np.where(np.isnan(acc), now[:acc.size], acc)
    else:
        if round is None:
            try:
                round = int(records.clients(metric, run=rid)[0][-1])
            except KeyError:
                raise ValueError(f"these records hold no per-client {metric!r} (run the "
                                 "algorithm with record_clients=True)") from None
        acc = 100.0 * records.per_client(metric, int(round), run=rid)
        where = f"at round {round}"
    if np.isnan(acc).any():
        raise ValueError(
            f"client(s) {np.flatnonzero(np.isnan(acc)).tolist()} have no {metric!r} {where} "
            "(NaN: no test sample?); build the data so that every client has one")
    return float(acc.mean()), float(acc.var())
