"""Valid values that ask for unbounded work are refused at once, with the estimate (issue 23,
item 7): training rounds beyond int64, records that cannot fit, training that cannot end."""

from __future__ import annotations

import time

import pytest

import topofl as tf
from topofl._utils.validation import check_rounds, did_you_mean, unknown_name


@pytest.mark.parametrize(("rounds", "eval_every", "match"), [
    (2**63 - 1, 1, r"rounds=9223372036854775807 with eval_every=1 \(the records of "
                   r"9223372036854775807 evaluations, kept in memory\) needs about .* of memory"),
    (2**63 - 1, 2**62, r"rounds=9223372036854775807 needs at least 2.92e\+07 years of training "
                       r"\(at >= 0.1 ms a round\) \(estimated\), more than the limit of 1 year"),
    (2**64, 1, r"rounds must be <= 2\*\*63 - 1 = 9223372036854775807 \(round counters are "
               r"int64\), got 18446744073709551616"),
    (10**20, 10**19, r"rounds must be <= 2\*\*63 - 1"),
])
def test_unbounded_rounds_are_refused_at_once(rounds: int, eval_every: int, match: str) -> None:
    # before: rounds = 2**63 - 1 (or beyond int64) was accepted and the run started
    t0 = time.perf_counter()
    with pytest.raises(ValueError, match=match):
        check_rounds(rounds, eval_every)
    with pytest.raises(ValueError, match=match):
        tf.config.validate({"topology": "ring", "rounds": rounds, "eval_every": eval_every})
    with pytest.raises(ValueError, match=match):
        tf.run("dsgd", topology="ring", n_clients=4, rounds=rounds, eval_every=eval_every)
    assert time.perf_counter() - t0 < 10


def test_long_but_finite_training_is_accepted() -> None:
    assert check_rounds(10**6, 1) == 10**6
    assert check_rounds(10**11, 10**9) == 10**11  # 4 months at 0.1 ms a round
    assert check_rounds(0) == 0


def test_the_command_line_refuses_them_in_one_line(tmp_path: object,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    from topofl.cli import main

    assert main(["run", "--topology", "ring", "--set", f"rounds={2**63 - 1}",
                 "--set", "n_clients=4", "--out", "r.jsonl"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "of memory (estimated)" in err


# ------------------------------------------------------------------ names
@pytest.mark.parametrize(("value", "known", "hint"), [
    ("rnig", ["ring", "torus", "complete"], "ring"),
    ("Ring", ["ring", "torus"], "ring"),
    ("dgsd", ["dsgd", "sgp", "fedavg"], "dsgd"),
    ("mnsit", ["mnist", "cifar10"], "mnist"),
    ("zzzz", ["ring", "torus"], None),
    ("", ["ring"], None),
])
def test_did_you_mean(value: str, known: list[str], hint: str | None) -> None:
    assert did_you_mean(value, known) == ("" if hint is None else f" (did you mean {hint!r}?)")
    msg = unknown_name("thing", value, known)
    assert msg.startswith(f"unknown thing {value!r}") and msg.endswith(", ".join(sorted(known)))
