"""``topofl.privacy.privacy_summary`` and ``topofl spectral --privacy``: the summary's numbers are
the accountants' own, the complete graph's closed form, and the columns the CLI prints."""

from __future__ import annotations

import json
import math

import pytest

import topofl as tf
from topofl.cli import main
from topofl.privacy import (
    PRIVACY_KEYS,
    gdp_epsilon,
    gossip_linear,
    muffliato,
    privacy_summary,
    random_walk_rdp,
)
from topofl.topologies import complete, one_peer_exponential, random_directed_push, ring


def test_the_summary_reads_the_accountants():
    g = ring(12)
    s = privacy_summary(g, sigma=0.8, rounds=4)
    exact = gossip_linear(g, 0.8, 4)
    assert s["gossip_eps_max"] == exact.max() and s["gossip_eps_mean"] == exact.mean()
    assert s["gossip_eps_neighbours"] == exact.neighbours()["neighbours"]
    assert s["muffliato_eps_mean"] == muffliato(g, 0.8, 4).mean()
    assert s["walk_eps_mean"] == random_walk_rdp(g, 0.8, 48).mean()
    assert s["gossip_eps_others"] < s["gossip_eps_neighbours"]


def test_the_complete_graph_closed_form_and_the_cases_without_an_accountant():
    # every message is the mean of the n noisy values: mu = 1 / (sigma sqrt(n - 1))
    s = privacy_summary(complete(10), sigma=2.0, rounds=3)
    assert s["gossip_eps_max"] == pytest.approx(gdp_epsilon(1 / (2.0 * 3.0), 1e-5), rel=1e-9)
    assert s["gossip_eps_others"] is None                    # no non-neighbours
    # push-sum's column-stochastic weights: nothing; a time-varying graph: no walk bound
    assert set(privacy_summary(random_directed_push(8, 2, seed=0)).values()) == {None}
    assert set(privacy_summary(ring(2_001), rounds=1).values()) == {None}   # beyond the dense reach
    with pytest.raises(TypeError, match="takes a Topology or a TimeVarying, got str"):
        privacy_summary("ring")
    tv = privacy_summary(one_peer_exponential(8), rounds=3)
    assert tv["walk_eps_mean"] is None and tv["gossip_eps_mean"] > 0
    assert list(s) == list(PRIVACY_KEYS)


def test_spectral_privacy_columns(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["spectral", "ring:n=8", "complete:n=6", "--privacy", "--privacy-rounds", "3"]) == 0
    lines = capsys.readouterr().out.splitlines()
    head = [c.strip() for c in lines[0].split("|")[1:-1]]
    assert head[-6:] == ["gossip eps max", "gossip eps mean", "gossip eps neighbours",
                         "gossip eps others", "muffliato eps mean", "walk eps mean"]
    ring_row = [c.strip() for c in lines[2].split("|")[1:-1]]
    want = privacy_summary(tf.topologies.ring(8), rounds=3)
    assert ring_row[-6:] == [format(want[k], ".3f") for k in PRIVACY_KEYS]
    assert [c.strip() for c in lines[3].split("|")[1:-1]][-3] == "-"   # complete: no others
    assert any(line.startswith("privacy (sigma=1.0, 3 gossip steps") for line in lines)
    assert main(["spectral", "ring:n=8", "--privacy", "--json", "--metrics", "spectral_gap",
                 "--sigma", "2"]) == 0
    row = json.loads(capsys.readouterr().out)
    assert row["gossip_eps_mean"] == privacy_summary(tf.topologies.ring(8), sigma=2.0)[
        "gossip_eps_mean"]
    assert set(row) == {"spec", "spectral_gap", *PRIVACY_KEYS}


def test_spectral_privacy_refuses_bad_noise(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["spectral", "ring:n=8", "--privacy", "--sigma", "0"]) == 2
    err = capsys.readouterr().err
    assert "sigma must be" in err and "\n" == err[-1] and err.count("\n") == 1
    assert main(["spectral", "ring:n=8", "--privacy", "--privacy-rounds", "0"]) == 2
    assert "rounds must be" in capsys.readouterr().err
    assert not math.isnan(privacy_summary(ring(4))["gossip_eps_max"])
