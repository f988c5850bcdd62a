"""With the ledger, the clock and availability on, 2 gloo ranks give the records of one process.

The cases are test_equivalence's (every registry algorithm, with the options that take the
sharded paths), run with a ``network`` (per-link latencies, shared uplinks, per-node speeds)
and an ``availability`` (Markov on/off clients and stragglers): who is online, the graph of
the present clients, the frozen state of the ``"stale"`` rule, every message of the ledger and
the simulated time must be the same in every placement. A subset, one case per absent rule
and kind of message, runs in the default suite; all of them behind ``-m distributed``.
"""

from __future__ import annotations

from typing import Any

import pytest
import torch

import topofl as tf
from tests.distributed._launch import launch
from tests.distributed.test_equivalence import REFUSED, N, _cases, _close, _data, _table

NET = {"latency": {"dist": "uniform", "low": 0.01, "high": 0.05}, "uplink": 1e5,
       "downlink": 2e5, "speed": {"dist": "lognormal", "median": 1e7, "sigma": 0.5},
       "server_downlink": 5e5, "seed": 3}
AVAIL = {"model": "markov", "p_off": 0.3, "p_on": 0.5, "straggle": 0.3, "slowdown": 2.5,
         "seed": 2}
QUICK = ("dsgd_cliques_removed", "osgp", "dfedpgp", "fedper", "pfedgraph", "dpfl", "pfeddst",
         "dis_pfl")


# an algorithm that chooses a round's clients itself (absent="refuse") runs with stragglers
STRAGGLERS = {"model": "always", "straggle": 0.3, "slowdown": 2.5, "seed": 2}


def _run(name: str) -> tuple[list[dict[str, Any]], int] | str:
    algo, topo, kw = _cases()[name]
    avail = STRAGGLERS if tf.algorithms.ALGORITHMS[algo]().absent == "refuse" else AVAIL
    try:
        res = tf.run(algo, topo, _data(), "mlp", 3, seed=0, dtype="float64", batch_size=8,
                     model_params={"hidden": [8]}, progress=False, network=NET,
                     availability=avail, **kw)
    except ValueError as exc:
        return f"ValueError: {exc}"
    return [dict(r) for r in res.records.rows], int(res.state.x.shape[0])


def _some(rank: int, names: tuple[str, ...]) -> dict[str, Any]:
    return {name: _run(name) for name in names}


def _check(names: tuple[str, ...], k: int) -> None:
    torch.set_num_threads(1)
    single = {name: _run(name) for name in names}
    out = launch(k, _some, names, timeout=60.0, wait=600.0)
    assert all(s == "ok" for s, _ in out.values()), out
    for name, ref in single.items():
        got = out[0][1][name]
        if _cases()[name][0] in REFUSED:  # by its algorithm: it runs in one process and
            # refuses ranks in one line (or, as adpsgd and gossip learning keep their own event
            # time, refuses the network clock in one process too)
            assert isinstance(got, str), (name, got)
            assert "does not run distributed" in got or got == ref, (name, got, ref)
            continue
        assert not isinstance(ref, str), (name, ref)
        assert not isinstance(got, str), (name, got)
        a, b = _table(ref[0]), _table(got[0])
        assert {key[2] for key in a} >= {"sim_time", "round_bytes", "online_clients",
                                         "bytes_sent"}, name
        assert set(a) == set(b), (name, set(a) ^ set(b))
        bad = {key: (a[key], b[key]) for key in a if not _close(a[key], b[key])}
        assert not bad, (name, bad)
        held = [out[r][1][name][1] for r in range(k)]
        assert sum(held) == N and max(held) < N, (name, held)


def test_cases_exist() -> None:
    assert set(QUICK) <= set(_cases())


def test_two_ranks_equal_one_process_with_every_account_on() -> None:
    _check(QUICK, 2)


@pytest.mark.distributed
def test_every_case_on_two_ranks_with_every_account_on() -> None:
    _check(tuple(sorted(set(_cases()) - set(QUICK))), 2)
