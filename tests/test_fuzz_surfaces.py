"""Fuzz and fault tests of the surfaces added since the API fuzz (issue 33, item 6): the
``[network]`` and ``[availability]`` tables with their trace files, the certificates of
``paper_figures/results/equivalence.json`` and the snapshot a certificate is written from,
and the records a study reads.

Every garbage value (of every key, hypothesis-drawn, bounded examples) must end in a
``ValueError`` or ``TypeError`` with a one-line message, or be accepted and then behave: never
a raw ``KeyError``/``IndexError``/``OverflowError``/``ZeroDivisionError``/``RecursionError``,
never a hang (each call runs under the fuzz suite's time limit). What is accepted is checked
against a slow reference (windows: the clients online in a round; traces: the values a node
reads).

Two holes it found are pinned by plain tests: integers beyond the float range (``10**400``,
only reachable from Python, TOML's integers are 64-bit) in ``[network]`` / ``[availability]``
numbers, and a certificates file nested thousands deep.
"""

from __future__ import annotations

import itertools
import json
import math
import tempfile
import warnings
from pathlib import Path
from typing import Any
from unittest import mock

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import topofl as tf
from tests.test_fuzz import CONFIG, _time_limit
from topofl.engine.availability import Availability
from topofl.engine.clock import Network, Values
from topofl.engine.ledger import Arcs
from topofl.figures import certificates, snapshot

ALLOWED = (ValueError, TypeError)
LIMIT_S = 10.0
FUZZ = settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
_DIR = Path(tempfile.mkdtemp(prefix="topofl-fuzz-surfaces-"))
_COUNTER = itertools.count()

#: JSON-like values as a config (TOML, JSON) can hold them: 64-bit integers, any float.
_SCALARS = (st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1)
            | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=8)
            | st.sampled_from(["inf", "Infinity", "-inf", "nan", "1e3", "", "uniform",
                               "lognormal", "exponential", "trace", "bernoulli", "markov"]))
_JSON = st.recursive(_SCALARS, lambda c: st.lists(c, max_size=3)
                     | st.dictionaries(st.text(max_size=6), c, max_size=3), max_leaves=8)
_NUM = (st.floats(allow_nan=True, allow_infinity=True) | st.integers(-(2**63), 2**63 - 1)
        | _SCALARS)


def _file(text: str | bytes, suffix: str = ".csv") -> str:
    """A new file holding ``text`` (a fresh name per hypothesis example)."""
    p = _DIR / f"f{next(_COUNTER)}{suffix}"
    if isinstance(text, bytes):
        p.write_bytes(text)
    else:
        p.write_text(text, encoding="utf-8")
    return str(p)


def _clean(fn: Any, *args: Any, **kwargs: Any) -> tuple[Any, BaseException | None]:
    """``(result, None)``, or ``(None, exc)`` for a ``ValueError``/``TypeError`` with a
    one-line message; anything else (another exception, a hang) fails the test."""
    try:
        with _time_limit(LIMIT_S), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = fn(*args, **kwargs)
        event(f"{getattr(fn, '__name__', fn)}: accepted")
        return out, None
    except ALLOWED as exc:
        msg = str(exc)
        assert msg.strip() and "\n" not in msg.strip(), f"{type(exc).__name__}: {msg!r}"
        event(f"{getattr(fn, '__name__', fn)}: refused")
        return None, exc


# ------------------------------------------------------------------ trace file contents
_TRACE_TOKENS = st.sampled_from(["1", "2.5", "0", "-1", "1e3", "1e999", "inf", "nan", "abc",
                                 "0x10", "", " "])
_TRACE_TEXT = st.lists(st.tuples(st.sampled_from([",", " ", ", "]),
                                  st.lists(_TRACE_TOKENS, max_size=6))
                       .map(lambda sep_row: sep_row[0].join(sep_row[1])),
                       max_size=5).map("\n".join)
_TRACE_FILE = (_TRACE_TEXT.map(_file)
               | st.sampled_from([b"\xff\xfe1,2\n", b"", b"# only a comment\n", b"1\x002\n"])
               .map(_file))
_DIST = st.fixed_dictionaries(
    {"dist": st.sampled_from(["uniform", "lognormal", "exponential", "normal"]) | _SCALARS},
    optional={k: _NUM for k in ("low", "high", "median", "sigma", "mean", "extra")})
_TRACE = st.fixed_dictionaries(
    {"trace": _TRACE_FILE | _SCALARS | st.just(str(_DIR))},
    optional={"sha256": st.sampled_from(["0" * 16, "x"]) | _SCALARS, "other": _SCALARS})
_VALUE = _NUM | _DIST | _TRACE | _JSON
_NETWORK_KEYS = ("latency", "bandwidth", "uplink", "downlink", "speed", "server_uplink",
                 "server_downlink", "seed")


def _reference_row(value: Values, nodes: int, t: int) -> np.ndarray:
    """What a trace gives ``nodes`` clients at round ``t``, read again from its file."""
    rows = [[float(x) for x in ln.replace(",", " ").split()]
            for ln in Path(value.source["trace"]).read_text().splitlines()
            if ln.strip() and not ln.lstrip().startswith("#")]
    row = rows[0] if len(rows) == 1 else (
        [r[0] for r in rows] if all(len(r) == 1 for r in rows) else rows[t % len(rows)])
    return np.asarray(row)


@FUZZ
@given(table=st.dictionaries(st.sampled_from([*_NETWORK_KEYS, "bogus"]), _VALUE, max_size=4),
       nodes=st.integers(1, 6), t=st.integers(0, 7))
def test_network_tables_are_refused_cleanly_or_read_as_documented(
        table: dict[str, Any], nodes: int, t: int) -> None:
    net, exc = _clean(Network.from_config, table)
    if exc is not None:
        return
    # what is accepted round-trips through its config, and gives every node a value
    assert Network.from_config(net.to_config()).to_config() == net.to_config()
    for key in ("latency", "bandwidth", "uplink", "downlink", "speed"):
        v: Values = getattr(net, key)
        got, exc = _clean(v.per_node, nodes, seed=net.seed, t=t)
        if exc is not None:  # only a trace of another number of nodes is refused
            assert v.kind == "trace" and "values per row" in str(exc), exc
            continue
        assert got.shape in ((nodes,), (nodes + 1,)) and not np.isnan(got).any()
        assert (got >= 0).all() and (key == "latency" or (got > 0).all())
        if v.kind == "trace":
            ref = _reference_row(v, nodes, t)
            assert ref.size in (nodes, nodes + 1) and np.array_equal(got, ref)
        elif v.kind == "const":
            assert (got == v.constant).all()
        else:  # a distribution: one draw per node, the same in every round
            assert np.array_equal(got, v.per_node(nodes, seed=net.seed, t=t + 5))
        arcs = Arcs(nodes, np.arange(nodes), (np.arange(nodes) + 1) % nodes)
        links, exc = _clean(v.per_arc, arcs, seed=net.seed)
        if exc is None:
            links = np.broadcast_to(links, (nodes,))
            assert not np.isnan(links).any() and (links >= 0).all()


@FUZZ
@given(key=st.sampled_from(_NETWORK_KEYS), value=_VALUE)
def test_network_values_through_the_front_door(key: str, value: Any) -> None:
    """``topofl.config.validate`` (what ``topofl run`` checks before any data is read)."""
    _clean(tf.config.validate, {**CONFIG, "network": {key: value}})


# ------------------------------------------------------------------ availability
def _reference_online(windows: list[tuple[int, int, int]], t: int, n: int) -> list[bool]:
    listed = {c for c, _, _ in windows}
    return [c not in listed or any(w == c and s <= t < e for w, s, e in windows)
            for c in range(n)]


_WINDOW_LINE = st.one_of(
    st.tuples(st.integers(-2, 6), st.integers(-2, 12), st.integers(-2, 14))
    .map(lambda w: f"{w[0]},{w[1]},{w[2]}"),
    st.sampled_from(["client,start,end", "# comment", "", "1,2", "1,2,3,4", "a,b,c", "1.5,0,2",
                     "0 0 3", "0,0,99999999999999999999999", "0,0," + "9" * 5000]))
_WINDOWS = st.lists(_WINDOW_LINE, max_size=8).map("\n".join)
_AV_KEYS = ("model", "offline", "p_off", "p_on", "path", "straggle", "slowdown", "seed",
            "sha256", "bogus")


@FUZZ
@given(table=st.dictionaries(
    st.sampled_from(_AV_KEYS),
    _NUM | _DIST | _JSON | _WINDOWS.map(_file) | st.sampled_from(
        ["always", "bernoulli", "markov", "trace"]), max_size=5),
    n=st.integers(1, 6), rounds=st.integers(1, 12))
def test_availability_tables_are_refused_cleanly_or_behave(table: dict[str, Any], n: int,
                                                           rounds: int) -> None:
    av, exc = _clean(Availability.from_config, table)
    if exc is not None:
        return
    assert Availability.from_config(av.to_config()).to_config() == av.to_config()
    for t in range(rounds):
        on = av.online(t, n)
        assert on.shape == (n,) and on.dtype == bool
        assert np.array_equal(on, av.online(t, n))  # a function of (seed, t)
        slow = av.slowdowns(t, n)
        assert slow.shape == (n,) and not np.isnan(slow).any() and (slow >= 0).all()
        if av.straggle == 0:
            assert (slow == 1).all()


@FUZZ
@given(text=_WINDOWS, n=st.integers(1, 6), rounds=st.integers(1, 12))
def test_windows_files_are_refused_cleanly_or_read_as_documented(text: str, n: int,
                                                                 rounds: int) -> None:
    av, exc = _clean(Availability.from_config, {"model": "trace", "path": _file(text)})
    if exc is not None:
        return
    windows = [(int(c), int(s), int(e)) for c, s, e in zip(*av.windows)]
    _, refused = _clean(av.check_run, n, rounds)
    if refused is not None:  # a client beyond the run's, or no client online in any round
        assert (any(c >= n for c, _, _ in windows)
                or not any(any(_reference_online(windows, t, n)) for t in range(rounds))), \
            refused
        return
    assert all(c < n for c, _, _ in windows)
    for t in range(rounds):
        assert av.online(t, n).tolist() == _reference_online(windows, t, n)


@FUZZ
@given(key=st.sampled_from(_AV_KEYS), value=_NUM | _DIST | _JSON)
def test_availability_values_through_the_front_door(key: str, value: Any) -> None:
    model = {"offline": "bernoulli", "p_off": "markov", "p_on": "markov", "path": "trace",
             "sha256": "trace"}.get(key, "bernoulli")
    base = {"model": model, "offline": 0.1, "p_off": 0.1, "p_on": 0.5,
            "path": _file("0,0,1\n")}
    keep = {"bernoulli": ("offline",), "markov": ("p_off", "p_on"), "trace": ("path",)}[model]
    table = {"model": model, **{k: base[k] for k in keep}, key: value}
    _clean(tf.config.validate, {**CONFIG, "availability": table})


@pytest.mark.parametrize("make", [
    lambda: Network.from_config({"latency": 10**400}),
    lambda: Network.from_config({"speed": {"dist": "lognormal", "median": 1,
                                           "sigma": 10**400}}),
    lambda: Availability.from_config({"offline": 10**400}),
    lambda: Availability.from_config({"straggle": 10**400}),
], ids=["latency", "sigma", "offline", "straggle"])
def test_integers_beyond_the_float_range(make: Any) -> None:
    with pytest.raises(ALLOWED):
        make()


# ------------------------------------------------------------------ certificates
_CERT = st.fixed_dictionaries(
    {}, optional={"from": st.sampled_from(["0.1+" + "a" * 12, "0.1+" + "b" * 12]) | _SCALARS,
                  "to": st.sampled_from(["0.1+" + "b" * 12, "x"]) | _SCALARS,
                  "from_commit": st.sampled_from(["c" * 40, "c" * 39]) | _SCALARS,
                  "digest": st.sampled_from(["0" * 16, "0" * 15]) | _SCALARS,
                  "values": st.integers(-2, 200) | _SCALARS,
                  "torch": st.just("2.0") | _SCALARS, "threads": st.integers(-1, 4) | _SCALARS,
                  "environment": st.fixed_dictionaries({"torch": st.just("2.0") | _SCALARS})
                  | _JSON,
                  "extra": _JSON})
_CERTS_FILE = (st.lists(_CERT | _JSON, max_size=3).map(json.dumps) | _JSON.map(json.dumps)
               | st.binary(max_size=40).map(lambda b: b.decode("latin-1"))
               | st.sampled_from(["", "[", "[{}", "NaN", "[NaN]", "\ufeff[]"]))


@FUZZ
@given(text=_CERTS_FILE)
def test_certificate_files_are_refused_naming_the_file_or_read(text: str) -> None:
    folder = _DIR / f"results{next(_COUNTER)}"
    folder.mkdir()
    (folder / certificates.EQUIVALENCE_FILE).write_text(text, encoding="utf-8")
    certs, exc = _clean(certificates.read, folder)
    if exc is not None:
        assert str(folder / certificates.EQUIVALENCE_FILE) in str(exc), exc
        assert isinstance(exc, ValueError)
        _, again = _clean(certificates.equivalent_codes, "0.1+" + "b" * 12, folder)
        assert again is not None and str(again) == str(exc)  # every reader refuses it alike
        return
    for c in certs:  # what is read is well formed, field by field
        assert all(isinstance(c[k], t) and not isinstance(c[k], bool)
                   for k, t in certificates.FIELDS.items())
        assert c["values"] >= 1 and c["threads"] >= 1 and c["from"] != c["to"]
        assert isinstance(c["environment"]["torch"], str)
    codes = certificates.equivalent_codes("0.1+" + "b" * 12, folder)
    assert "0.1+" + "b" * 12 in codes


def test_a_certificates_file_nested_deep() -> None:
    folder = _DIR / "deep"
    folder.mkdir(exist_ok=True)
    (folder / certificates.EQUIVALENCE_FILE).write_text("[" * 100_000)
    with pytest.raises(ValueError, match="equivalence.json"):
        certificates.read(folder)


_SNAP = st.fixed_dictionaries(
    {}, optional={"code": st.just("0.1+" + "a" * 12) | _SCALARS,
                  "torch": st.just("2.0") | _SCALARS, "threads": st.integers(-1, 3) | _SCALARS,
                  "parts": st.just(list(snapshot.PARTS)) | st.lists(_SCALARS, max_size=3),
                  "values": st.dictionaries(st.text(max_size=5), _JSON, max_size=3) | _JSON,
                  "digest": st.just("DIGEST") | _SCALARS,
                  "commit": st.sampled_from(["c" * 40, "dirty"]) | _SCALARS})


@FUZZ
@given(snap=_SNAP | _JSON, raw=st.booleans())
def test_snapshots_that_cannot_certify_are_refused_before_any_run(snap: Any,
                                                                 raw: bool) -> None:
    if isinstance(snap, dict) and snap.get("digest") == "DIGEST" and isinstance(
            snap.get("values"), dict):
        try:  # a digest that matches its values: only the rest can refuse it
            snap["digest"] = snapshot.digest(snap["values"])
        except (TypeError, ValueError):
            pass
    text = json.dumps(snap) if not raw else json.dumps(snap)[:-1]
    path = _file(text, ".json")
    folder = _DIR / f"results{next(_COUNTER)}"
    folder.mkdir()
    # a garbage snapshot must be refused before the snapshot of the current code is taken
    # (minutes); an equal complete one is taken here (a commit, all parts, its digest): the
    # run is replaced by a refusal, so that case too is a clean error
    with mock.patch.object(snapshot, "take", side_effect=ValueError("snapshot taken")):
        cert, exc = _clean(certificates.certify, path, folder)
    assert cert is None and isinstance(exc, ValueError)
    if str(exc) == "snapshot taken":  # it passed every check: complete, unedited, committed
        assert sorted(snap["parts"]) == sorted(snapshot.PARTS) and snap["values"]
        assert snap["digest"] == snapshot.digest(snap["values"])
        assert isinstance(snap["commit"], str) and len(snap["commit"]) == 40
    else:
        assert path in str(exc) or "snapshot values moved" in str(exc), exc
    assert not (folder / certificates.EQUIVALENCE_FILE).exists()  # nothing certified


# ------------------------------------------------------------------ study inputs
def _study_folder(bad: Any, where: str) -> Path:
    """Two conditions x two seeds; one run's ``test_acc_mean`` row replaced by ``bad``."""
    folder = _DIR / f"study{next(_COUNTER)}"
    folder.mkdir()
    for topo, gap in (("ring", 0.1), ("complete", 1.0)):
        for seed in (0, 1):
            run = f"{topo}-{seed}"
            with tf.records.Recorder(folder / f"{run}.jsonl", run=run) as rec:
                rec.log_config({"topology": topo, "seed": seed, "rounds": 3})
                rec.log("graph.spectral_gap", gap, 0)
                for t in range(3):
                    rec.log("test_acc_mean", 0.2 * (t + 1) + 0.01 * seed + gap / 10, t)
    p = folder / "ring-0.jsonl"
    lines = p.read_text().splitlines()
    rows = [k for k, ln in enumerate(lines) if '"test_acc_mean"' in ln]
    k = rows[-1] if where == "last" else rows[0]
    row = json.loads(lines[k])
    lines[k] = json.dumps({**row, "value": bad}) if where != "raw" else lines[k].replace(
        json.dumps(row["value"]), str(bad), 1)
    p.write_text("\n".join(lines) + "\n")
    return folder


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(bad=_JSON | st.sampled_from([10**30, -1e308, float("nan")]),
       where=st.sampled_from(["last", "first", "raw"]),
       target=st.none() | st.floats(allow_nan=True, allow_infinity=True))
def test_study_of_garbage_values_is_refused_or_leaves_the_run_out(bad: Any, where: str,
                                                                   target: Any) -> None:
    folder = _study_folder(bad, where)
    res, exc = _clean(tf.study.study, folder, target=target, n_boot=20, figures=False)
    if exc is not None:
        return
    # nothing averaged away: every run is in a condition's seeds or named as left out
    kept = int(res.conditions["n_seeds"].sum())
    named = set(res.incomplete) | {Path(f).stem for f in res.unreadable}
    assert kept + len(named - set(res.runs["run"])) == 4, (kept, named)
    assert not res.conditions["final_mean"].isna().any()
    assert math.isfinite(res.target)
