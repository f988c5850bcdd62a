"""The row forms the data-driven algorithms use on a rank (no process group needed): each
equals the rows of the whole single-process computation, the slow obvious reference."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import topofl as tf
from topofl.algorithms.ggc import _greedy_batched, greedy_rows
from topofl.algorithms.pfeddst import _others, pfeddst_scores, pfeddst_select
from topofl.distributed.data import ShardData
from topofl.engine.clients import LocalClients, first_bad, row, total


@settings(max_examples=25, deadline=None)
@given(n=st.integers(2, 9), seed=st.integers(0, 10_000), data=st.data())
def test_pfeddst_scores_of_some_rows_are_those_rows_of_the_whole(n: int, seed: int,
                                                                  data: st.DataObject) -> None:
    g = torch.Generator().manual_seed(seed)
    L = torch.rand(n, n, generator=g, dtype=torch.float64) * 3
    H = torch.randn(n, 4, generator=g, dtype=torch.float64)
    last = torch.randint(0, 5, (n, n), generator=g).double()
    c = torch.rand(n, n, generator=g, dtype=torch.float64)
    rows = torch.as_tensor(sorted(data.draw(st.sets(st.integers(0, n - 1), min_size=1))))
    whole = pfeddst_scores(L, H, last, 6, alpha=0.3, lam=0.7, c=c)
    part = pfeddst_scores(L[rows], H, last[rows], 6, alpha=0.3, lam=0.7, c=c[rows],
                          rows=rows)
    # the same numbers up to the rounding of a [m, h] @ [h, n] product against [n, h] @ ...
    torch.testing.assert_close(part, whole[rows], rtol=1e-13, atol=1e-13)
    assert bool(torch.isinf(part[torch.arange(rows.numel()), rows]).all())
    k = data.draw(st.integers(0, n - 1))
    p_w, v_w = pfeddst_select(whole, k)
    p_r, v_r = pfeddst_select(whole[rows], k)  # selection is row by row
    assert torch.equal(p_r, p_w[rows]) and torch.equal(v_r, v_w[rows])
    assert torch.equal(_others(n, torch.device("cpu"), rows), _others(n, torch.device("cpu"))[rows])


def test_pfeddst_scores_rows_are_checked() -> None:
    H = torch.zeros(4, 2)
    with pytest.raises(ValueError, match=r"\[m, n\] \(the rows' rows\) = \[2, 4\]"):
        pfeddst_scores(torch.zeros(4, 4), H, torch.zeros(4, 4), 1, alpha=1, lam=1, c=0,
                       rows=torch.tensor([0, 1]))
    with pytest.raises(ValueError, match="m <= n"):
        pfeddst_select(torch.zeros(5, 4), 1)


@settings(max_examples=15, deadline=None)
@given(n=st.integers(2, 8), seed=st.integers(0, 10_000), budget=st.one_of(st.none(),
       st.integers(1, 4)), running=st.booleans(), data=st.data())
def test_greedy_on_some_rows_decides_as_for_everyone(n: int, seed: int, budget: int | None,
                                                     running: bool, data: st.DataObject
                                                     ) -> None:
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 3, generator=g, dtype=torch.float64)
    target = torch.randn(n, 3, generator=g, dtype=torch.float64)
    p = torch.randint(1, 5, (n,), generator=g).double()
    cand = (torch.rand(n, n, generator=g) < 0.6) & ~torch.eye(n, dtype=torch.bool)
    seeds = [seed + k for k in range(n)]

    def losses_of(ids: np.ndarray):  # row r is scored by client ids[r]
        return lambda z: ((z - target[torch.as_tensor(ids)]) ** 2).sum(dim=1)

    everyone = np.arange(n)
    C, dec = _greedy_batched(x, cand, p, losses_of(everyone), budget, seeds, running)
    ids = np.array(sorted(data.draw(st.sets(st.integers(0, n - 1), min_size=1))))
    # the source rows a rank would fetch: its clients' candidates and its clients
    need = np.union1d(torch.nonzero(cand[ids].any(dim=0)).flatten().numpy(), ids)
    Cr, dr = greedy_rows(x[ids], ids, x[need], need, cand[ids], p, losses_of(ids), budget,
                         [seeds[k] for k in ids], running)
    assert torch.equal(Cr, C[ids]) and torch.equal(dr, dec[ids])
    assert bool((Cr <= cand[ids]).all())


def test_local_clients_index_in_one_process() -> None:
    clients = tf.engine.toy_services(5, 2).clients
    assert isinstance(clients, LocalClients)
    x = torch.arange(10.0).reshape(5, 2)
    assert clients.ids.tolist() == [0, 1, 2, 3, 4] and clients.m == clients.n == 5
    assert clients.all_rows(x) is x and clients.own(x) is x
    (got,) = clients.fetch([4, 0, 4], x)
    assert got.tolist() == [[8.0, 9.0], [0.0, 1.0], [8.0, 9.0]]
    assert total(clients, torch.ones(5, 3, dtype=torch.bool)) == 15.0
    assert torch.equal(clients.mean(x), x.mean(dim=0)) and row(clients, x, 3).tolist() == [6, 7]
    assert first_bad(clients, None, "check") is None
    assert first_bad(clients, (2, 0.5), "check") == (2, 0.5)
    assert clients.agree("check", lambda: 7) == 7


def test_shard_data_knows_every_flipped_client() -> None:
    data = tf.data.federate("digits", "iid", 8, seed=0, flip_labels=0.3)
    part = ShardData(data, [1, 5, 6])
    assert part.flipped.tolist() == data.flipped.tolist() and int(data.flipped.sum()) == 2

