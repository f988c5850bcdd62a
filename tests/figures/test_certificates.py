"""Certificates: written only from a complete, unedited snapshot of committed code; read
strictly; every field that decides their check sealed with their values; verified by
re-running the certified commit (a hand edit cannot pass): bit for bit where the numeric
environment equals the certificate's, and elsewhere within the rounding measured between
environments."""

from __future__ import annotations

import functools
import gzip
import hashlib
import json
import os
import random
import re
import subprocess
import sys
import textwrap
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

import topofl as tf
from topofl._utils import environment as _environment
from topofl._utils.fingerprint import tree_fingerprint
from topofl.figures import certificates, commits, snapshot, verified
from topofl.figures import cli as figure_cli
from topofl.figures import results as figure_results

SMALL = ("topologies", "partitions")
_ALL_PARTS = dict(snapshot.PARTS)
OLD = "0.1.0+000000000000"
COMMIT = "c" * 40


@pytest.fixture(scope="module")
def small() -> dict[str, Any]:
    return snapshot.take(SMALL)


@pytest.fixture(autouse=True)
def _two_parts(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A snapshot of two parts stands for a complete one (the whole takes ~20 s); the cache's
    key is the test's own."""
    monkeypatch.setattr(snapshot, "PARTS", {p: snapshot.PARTS[p] for p in SMALL})
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "home-cache"))


def _other(env: Mapping[str, Any]) -> dict[str, Any]:
    """``env`` on another processor with another numpy: an environment that is not this
    machine's."""
    return {**env, "cpu": "x86_64 OtherVendor AVX2", "cpu_id": "OtherVendor family 1 model 2",
            "numpy": "1.26.4"}


def _before(tmp_path: Path, small: Mapping[str, Any], **change: Any) -> Path:
    before = {**json.loads(json.dumps(small)), "code": OLD, "commit": COMMIT, **change}
    path = tmp_path / "before.json"
    path.write_text(json.dumps(before))
    return path


def _result(folder: Path, name: str, code: str) -> None:
    (folder / f"{name}.json").write_text(json.dumps({"name": name, "code": code,
                                                     "verdict": "holds", "seeds": [0, 1, 2]}))


def test_a_certificate_makes_older_results_current(tmp_path: Path, small: dict) -> None:
    results = tmp_path / "results"
    results.mkdir()
    _result(results, "old", OLD)
    _result(results, "new", small["code"])
    assert list(figure_results.stale(results)) == ["old"]
    cert = certificates.certify(_before(tmp_path, small), results)
    assert (cert["from"], cert["to"], cert["from_commit"]) == (OLD, small["code"], COMMIT)
    assert cert["values"] == len(small["values"]) and cert["seeds"] == list(snapshot.SEEDS)
    assert cert["environment"] == small["environment"] and cert["threads"] == 1
    # the sealed record is committed beside it, under its digest: every field that decides the
    # check, and the values
    record = json.loads(certificates._record_path(results, cert["digest"]).read_text())
    assert snapshot.digest(record) == cert["digest"]
    assert record["certificate"] == {f: cert[f] for f in certificates.SEALED}
    assert record["values"] == snapshot.digest(small["values"])
    assert certificates.values_of(results, cert) == small["values"]
    assert figure_results.stale(results) == {}
    rows = figure_results.index(results)
    assert "current (certified)" in rows and rows.startswith("2 results")  # the file is no result
    assert certificates.equivalent_codes(small["code"], results) == {OLD, small["code"]}
    assert certificates.equivalent_codes(OLD, results) == {OLD}  # one way


def test_a_moved_value_cannot_be_certified(tmp_path: Path, small: dict) -> None:
    values = json.loads(json.dumps(small["values"]))
    values["partitions/dirichlet"]["labels"][0][0] += 1
    path = _before(tmp_path, small, values=values, digest=snapshot.digest(values))
    with pytest.raises(ValueError, match="1 of .* values moved.*partitions/dirichlet"):
        certificates.certify(path, tmp_path)
    assert not (tmp_path / certificates.EQUIVALENCE_FILE).exists()


@pytest.mark.parametrize(("change", "match"), [
    ({"values": {}, "digest": snapshot.digest({})}, "partial snapshot"),
    ({"parts": ["topologies"]}, r"partial snapshot \(parts \['topologies'\]"),
    ({"digest": "0" * 16}, "do not match its digest 0000000000000000: the file was edited"),
    ({"commit": None}, "taken on code that was not committed"),
    ({"values": None}, r"not a snapshot .*\['values'\]"),
    ({"environment": None}, r"\['environment'\]; taken before environments were recorded"),
    ("other", r"taken in another numeric environment \(numpy .* vs .*; cpu x86_64 OtherVendor"),
])
def test_a_partial_edited_or_uncommitted_snapshot_cannot_certify(
        tmp_path: Path, small: dict, change: Any, match: str) -> None:
    if change == "other":
        change = {"environment": _other(small["environment"])}
    with pytest.raises(ValueError, match=match) as err:
        certificates.certify(_before(tmp_path, small, **change), tmp_path)
    assert str(tmp_path / "before.json") in str(err.value)
    assert not (tmp_path / certificates.EQUIVALENCE_FILE).exists()


def test_a_file_that_is_no_snapshot_is_named(tmp_path: Path) -> None:
    bad = tmp_path / "snap.json"
    bad.write_text("{not json")
    with pytest.raises(ValueError, match=r"snap\.json: not a snapshot file"):
        certificates.certify(bad, tmp_path)
    assert figure_cli.main(["snapshot", "--certify", str(bad)]) == 2


def test_the_same_code_needs_no_certificate(tmp_path: Path, small: dict) -> None:
    cert = certificates.certify(_before(tmp_path, small, code=small["code"]), tmp_path)
    assert cert["from"] == cert["to"]
    assert not (tmp_path / certificates.EQUIVALENCE_FILE).exists()


def _cert(small: Mapping[str, Any], **change: Any) -> dict[str, Any]:
    """A certificate of ``small``'s values in its environment (its digest: see :func:`_seal`)."""
    return {"from": OLD, "to": small["code"], "from_commit": COMMIT, "digest": "0" * 16,
            "values": len(small["values"]), "threads": 1,
            "environment": dict(small["environment"]), **change}


def _seal(results: Path, cert: dict[str, Any], values: Mapping[str, Any]) -> dict[str, Any]:
    """Seal ``values`` with ``cert``'s fields (as :func:`certify` does); ``cert`` with the
    digest of its record."""
    cert["digest"] = certificates._seal(results, cert, values)
    return cert


def _commit(results: Path, certs: list[dict[str, Any]], *values: Mapping[str, Any]) -> None:
    """Seal each certificate with the values given for it (none: as sealed already) and write
    ``equivalence.json``."""
    for c, v in zip(certs, values):
        _seal(results, c, v)
    (results / certificates.EQUIVALENCE_FILE).write_text(json.dumps(certs))


@pytest.mark.parametrize(("change", "match"), [
    ({"values": 0}, "certifies 0 values"),
    ({"digest": "xyz"}, "'digest' must be 16 hex digits"),
    ({"from_commit": "HEAD"}, "'from_commit' must be a 40-hex-digit git commit"),
    ({"from": "old"}, "'from' must be a code version"),
    ({"threads": "1"}, "'threads' must be a int"),
    ({"threads": 0}, "'threads' must be at least 1"),
    ({"environment": "x86_64"}, "'environment' must be a dict"),
    ({"environment": {"cpu": "x"}}, "'environment' must name its torch"),
])
def test_a_malformed_certificate_is_refused_naming_the_file(
        tmp_path: Path, small: dict, change: dict, match: str) -> None:
    (tmp_path / certificates.EQUIVALENCE_FILE).write_text(json.dumps([_cert(small, **change)]))
    with pytest.raises(ValueError, match=f"equivalence.json: certificate 0 .*{match}"):
        certificates.equivalent_codes(small["code"], tmp_path)
    (tmp_path / certificates.EQUIVALENCE_FILE).write_text('[{"from": "a", "to": "b"}]')
    with pytest.raises(ValueError, match=r"certificate 0 misses \['digest', 'environment'"):
        figure_results.stale(tmp_path)
    (tmp_path / certificates.EQUIVALENCE_FILE).write_text("{")
    with pytest.raises(ValueError, match="equivalence.json: not a JSON list"):
        certificates.read(tmp_path)


def test_a_certificate_from_before_environments_is_named(tmp_path: Path, small: dict) -> None:
    legacy = {k: v for k, v in _cert(small).items() if k != "environment"}
    legacy.update(torch=small["torch"], cpu=small["cpu"])
    (tmp_path / certificates.EQUIVALENCE_FILE).write_text(json.dumps([legacy]))
    with pytest.raises(ValueError, match=r"misses \['environment'\].*snapshot --rerecord"):
        certificates.read(tmp_path)
    assert certificates.read(tmp_path, legacy=True) == [legacy]


def _fake_commit(result: Mapping[str, Any]) -> Any:
    calls: list[str] = []

    def of_commit(commit: str, threads: int) -> Mapping[str, Any]:
        calls.append(commit)
        return result

    of_commit.calls = calls  # type: ignore[attr-defined]
    return of_commit


def _code_of(code: str = OLD) -> Any:
    """A stand-in for :func:`commits.commit_fingerprint`: every commit's files are ``code``."""
    return lambda commit: code


def test_verify_reruns_the_certified_commit_once(tmp_path: Path, small: dict) -> None:
    _commit(tmp_path, [_cert(small)], small["values"])
    honest = _fake_commit({"code": OLD, "values": small["values"], "torch": small["torch"]})
    kw: dict[str, Any] = dict(current=small, cache=tmp_path / "seen.json", code_of=_code_of())
    assert certificates.verify(tmp_path, of_commit=honest, **kw) == []
    assert certificates.verify(tmp_path, of_commit=honest, **kw) == []
    assert honest.calls == [COMMIT]  # remembered
    # newer code that adds a value (a new algorithm's case) keeps the certificate valid
    grown = {**small, "values": {**small["values"], "runs/new": [1.0]}}
    grown["digest"] = snapshot.digest(grown["values"])
    assert certificates.verify(tmp_path, of_commit=honest, current=grown,
                               cache=tmp_path / "seen.json", code_of=_code_of()) == []
    # no certificate leads to another code: nothing to verify, nothing taken
    assert certificates.verify(tmp_path, "0.1.0+111111111111", of_commit=honest) == []


def _moved(values: Mapping[str, Any]) -> dict[str, Any]:
    out = json.loads(json.dumps(values))
    out["partitions/dirichlet"]["labels"][0][0] += 1
    return out


def _rounded(values: Mapping[str, Any], rel: float) -> dict[str, Any]:
    """``values`` with every float moved by ``rel`` (relative): another environment's last
    bits."""
    def move(v: Any) -> Any:
        if isinstance(v, float):
            return v * (1 + rel)
        if isinstance(v, list):
            return [move(u) for u in v]
        if isinstance(v, dict):
            return {k: move(u) for k, u in v.items()}
        return v
    return {k: move(v) for k, v in values.items()}


#: A float32 run's records beside the small snapshot: an accuracy over 1,000 test samples
#: and a loss (what a forger would edit).
RUN = {"runs/case/float32": {"1|None|test_acc_mean": 0.088, "1|None|test_loss": 2.302585}}


def _with_run(small: Mapping[str, Any], **moved: float) -> dict[str, Any]:
    values = {**small["values"], "runs/case/float32": {**RUN["runs/case/float32"], **moved}}
    return {**small, "values": values, "digest": snapshot.digest(values)}


@pytest.mark.parametrize("env", ["same", "other"])
@pytest.mark.parametrize("forgery", [
    "made-up digest", "other values", "other code", "edited record",
    "values beyond rounding", "one test sample in 1,000", "a loss edited by 1e-4",
    "edited environment field", "edited threads", "swapped values file",
    "another certificate's record", "environment edited to reach the tolerance"])
def test_verify_refuses_a_forged_certificate(tmp_path: Path, small: dict, forgery: str,
                                             env: str) -> None:
    # in the certificate's environment and in another alike
    now = _with_run(small)
    cert, says = _cert(now), {"code": OLD, "values": now["values"]}
    if env == "other":
        cert["environment"] = _other(now["environment"])
    committed = now["values"]
    seal = True
    if forgery == "made-up digest":  # a hand-written line: no record has that digest
        _commit(tmp_path, [dict(cert)], committed)
        seal, match = False, "no committed values have the certificate's"
    elif forgery == "other values":  # a real commit whose code computes other numbers
        says["values"] = committed = _moved(now["values"])
        match = "the current code moves 1 of the"
    elif forgery == "other code":  # a commit of other code
        says["code"], match = "0.1.0+222222222222", "is code 0.1.0+222222222222, not"
    elif forgery == "edited record":  # the committed record changed, the digest kept
        _seal(tmp_path, cert, committed)
        other = _seal(tmp_path, dict(cert), _moved(committed))
        certificates._record_path(tmp_path, other["digest"]).replace(
            certificates._record_path(tmp_path, cert["digest"]))
        seal, match = False, "does not have the certificate's digest"
    elif forgery == "values beyond rounding":  # values and digest forged together
        committed = _rounded(now["values"], 1e-2)
        match = ("although this environment equals the certificate's" if env == "same"
                 else "beyond the rounding measured between environments in")
    elif forgery == "one test sample in 1,000":  # an accuracy moved by 0.001, digest redone
        committed = _with_run(small, **{"1|None|test_acc_mean": 0.089})["values"]
        match = ("although this environment equals" if env == "same"
                 else "beyond the rounding .* in 1 of .*runs/case/float32")
    elif forgery == "a loss edited by 1e-4":
        committed = _with_run(small, **{"1|None|test_loss": 2.302585 * (1 + 1e-4)})["values"]
        match = "although this environment equals" if env == "same" else "beyond the rounding"
    elif forgery == "edited environment field":  # equivalence.json edited after sealing
        _seal(tmp_path, cert, committed)
        cert["environment"] = {**cert["environment"], "cpu": "x86_64 ThirdVendor AVX512"}
        seal, match = False, "edited: 'environment.cpu' says 'x86_64 ThirdVendor AVX512'"
    elif forgery == "edited threads":
        _seal(tmp_path, cert, committed)
        cert["threads"] = 2
        seal, match = False, "edited: 'threads' says 2, its sealed record 1"
    elif forgery == "swapped values file":  # another certificate's values under this name
        _seal(tmp_path, cert, committed)
        moved = certificates._store(tmp_path, _moved(committed))
        certificates._values_path(tmp_path, moved).replace(
            certificates._values_path(tmp_path, snapshot.digest(committed)))
        seal, match = False, "its content does not have the digest"
    elif forgery == "another certificate's record":  # its digest names another's record
        other = _seal(tmp_path, {**cert, "from_commit": "d" * 40}, committed)
        cert["digest"] = other["digest"]
        seal, match = False, "edited: 'from_commit' says 'cccc"
    else:  # the environment edited (and resealed) to reach the tolerant path, a value edited
        cert["environment"] = _other(now["environment"])
        committed = _with_run(small, **{"1|None|test_acc_mean": 0.0884})["values"]
        match = "beyond the rounding measured between environments in 1 of"
    if seal:
        _commit(tmp_path, [cert], committed)
    else:
        (tmp_path / certificates.EQUIVALENCE_FILE).write_text(json.dumps([cert]))
    problems = certificates.verify(tmp_path, current=now, of_commit=_fake_commit(says),
                                   code_of=_code_of(says["code"]), cache=tmp_path / "seen.json")
    assert len(problems) == 1 and "certificate 0" in problems[0], problems
    assert match in problems[0] or re.search(match, problems[0]), problems


def test_another_environment_verifies_within_the_measured_rounding(tmp_path: Path,
                                                                   small: dict) -> None:
    # the certificate was taken in another environment: its values differ from this
    # machine's in the last bits (1e-9 relative; 1e-6 in a float32 run's loss), which verifies
    # and says so, naming both environments; the commit's values here must still equal the
    # current code's here to the last bit
    now = _with_run(small)
    theirs = _rounded(now["values"], 1e-9)
    theirs["runs/case/float32"]["1|None|test_loss"] *= 1 + 1e-6
    cert = _cert(now, environment=_other(now["environment"]))
    _commit(tmp_path, [cert], theirs)
    honest = _fake_commit({"code": OLD, "values": now["values"]})
    notes: list[str] = []
    kw: dict[str, Any] = dict(of_commit=honest, code_of=_code_of(), cache=tmp_path / "seen.json")
    assert certificates.verify(tmp_path, current=now, notes=notes, **kw) == []
    assert len(notes) == 1 and "certificate 0" in notes[0], notes
    assert "differs within this environment's rounding (largest relative difference 1e-06 " \
        "at runs/case/float32:1|None|test_loss" in notes[0]
    assert "numpy 1.26.4 vs " in notes[0] and "cpu x86_64 OtherVendor AVX2 vs" in notes[0]
    # the same certificate in an environment equal to its own: bit for bit, which these are not
    mine = {**now, "environment": _other(now["environment"])}
    problems = certificates.verify(tmp_path, current=mine, **kw)
    assert len(problems) == 1 and "although this environment equals" in problems[0], problems
    # an environment that differs only in a field that does not decide the bits is the same
    informative = {**now, "environment": {**_other(now["environment"]), "cpu_model": "Any",
                                          "blas_threads": {"numpy": 64, "scipy": 64}}}
    assert len(certificates.verify(tmp_path, current=informative, **kw)) == 1
    # an integer (a label count) is never within rounding
    counted = json.loads(json.dumps(theirs))
    counted["partitions/dirichlet"]["labels"][0][0] += 1
    _commit(tmp_path, [_cert(now, environment=_other(now["environment"]))], counted)
    problems = certificates.verify(tmp_path, current=now, **kw)
    assert len(problems) == 1 and "beyond the rounding measured between environments in 1 of" \
        in problems[0] and "partitions/dirichlet" in problems[0], problems


def test_a_discrete_value_is_compared_across_environments_only_in_its_exact_parts(
        tmp_path: Path, small: dict) -> None:
    # STL-FW's matrix takes another edge in another environment (a tie broken by the last
    # bits): its floats are compared only in the same environment
    key = "topologies/stl_fw"
    assert key in snapshot.DISCRETE and key in small["values"]
    theirs = json.loads(json.dumps(small["values"]))
    theirs[key][0][0][1] += 0.25
    cert = _cert(small, environment=_other(small["environment"]))
    _commit(tmp_path, [cert], theirs)
    kw: dict[str, Any] = dict(of_commit=_fake_commit({"values": small["values"]}),
                              code_of=_code_of(), cache=tmp_path / "seen.json")
    notes: list[str] = []
    assert certificates.verify(tmp_path, current=small, notes=notes, **kw) == []
    assert "differs within this environment's rounding (certificate's environment vs this " \
        "one: " in notes[0] and "another branch on a last bit in topologies/stl_fw" in notes[0]
    # its shape still counts
    theirs[key][0].append([0.0] * len(theirs[key][0][0]))
    _commit(tmp_path, [_cert(small, environment=_other(small["environment"]))], theirs)
    problems = certificates.verify(tmp_path, current=small, **kw)
    assert len(problems) == 1 and key in problems[0], problems


def test_rerecord_seals_a_legacy_certificate_with_this_environment(tmp_path: Path,
                                                                   small: dict) -> None:
    # written before environments were recorded: torch and a CPU kind, plain values taken
    # on another machine (1e-9 off), or no values at all
    theirs = _rounded(small["values"], 1e-9)
    plain = certificates._values_path(tmp_path, snapshot.digest(theirs))
    plain.parent.mkdir(parents=True)
    plain.write_bytes(gzip.compress(json.dumps(theirs, sort_keys=True).encode()))
    legacy = {k: v for k, v in _cert(small).items() if k != "environment"}
    legacy.update(digest=snapshot.digest(theirs), torch=small["torch"], cpu="x86_64 Old AVX512",
                  cpu_model="Old CPU", date="2026-11-23")
    moved = {**legacy, "from": "0.1.0+333333333333", "from_commit": "d" * 40,
             "digest": "0123456789abcdef"}
    (tmp_path / certificates.EQUIVALENCE_FILE).write_text(json.dumps([legacy, moved]))

    def of_commit(commit: str, threads: int) -> Mapping[str, Any]:
        if commit == COMMIT:
            return {"code": OLD, "values": small["values"]}
        return {"code": "0.1.0+333333333333", "values": _moved(small["values"])}

    def code_of(commit: str) -> str:
        return OLD if commit == COMMIT else "0.1.0+333333333333"

    with pytest.raises(ValueError, match="certificate 1: 1 values moved here"):
        certificates.rerecord(tmp_path, current=small, of_commit=of_commit, code_of=code_of)
    certs = certificates.read(tmp_path, legacy=True)
    assert certs[0]["environment"] == small["environment"] and "cpu" not in certs[0]
    assert certs[0]["first"] == {"digest": snapshot.digest(theirs), "cpu": "x86_64 Old AVX512",
                                 "cpu_model": "Old CPU", "torch": small["torch"],
                                 "date": "2026-11-23"}
    assert certificates.values_of(tmp_path, certs[0]) == small["values"]
    assert "environment" not in certs[1]  # left as it was
    # the resealed one now verifies here, bit for bit
    (tmp_path / certificates.EQUIVALENCE_FILE).write_text(json.dumps(certs[:1]))
    assert certificates.verify(tmp_path, current=small, of_commit=of_commit, code_of=code_of,
                               cache=tmp_path / "seen.json") == []
    # a legacy certificate whose committed values are off what its commit computes here by
    # more than rounding is not resealed
    far = _rounded(small["values"], 1e-3)
    plain = certificates._values_path(tmp_path, snapshot.digest(far))
    plain.write_bytes(gzip.compress(json.dumps(far, sort_keys=True).encode()))
    (tmp_path / certificates.EQUIVALENCE_FILE).write_text(json.dumps(
        [{**legacy, "digest": snapshot.digest(far)}]))
    with pytest.raises(ValueError, match="certificate 0: its committed values differ"):
        certificates.rerecord(tmp_path, current=small, of_commit=of_commit, code_of=code_of)


def test_newer_code_with_more_values_can_be_certified(tmp_path: Path, small: dict,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    real = snapshot.take

    def more(*args: Any, **kw: Any) -> dict[str, Any]:
        snap = real(*args, **kw)
        snap["values"]["runs/new_algorithm/float64"] = {"x": 1.0}
        return snap

    monkeypatch.setattr(snapshot, "take", more)
    cert = certificates.certify(_before(tmp_path, small), tmp_path)
    assert cert["values"] == len(small["values"])
    assert certificates.values_of(tmp_path, cert) == small["values"]


def test_a_commit_not_in_the_repository_cannot_verify() -> None:
    with pytest.raises(ValueError, match="is not in this repository"):
        commits.snapshot_of_commit("0" * 40)


def _shallow() -> bool:
    root = Path(certificates.__file__).resolve().parents[1]
    out = subprocess.run(["git", "-C", str(root), "rev-parse", "--is-shallow-repository"],
                         capture_output=True, text=True, check=False)
    return out.returncode != 0 or out.stdout.strip() != "false"


#: The slow test's sample of the committed certificates: the newest of the chain (what recent
#: work certified) and a draw of the older ones seeded by the commit under test (each commit
#: draws its own, and the same again when its test is re-run). The whole check had re-run 78
#: of its 86 commits after 37 min with two jobs on a 2-core AMD EPYC (2026-11-30), beyond
#: the time CI has left after the default suite, and it grows with every certificate; a
#: certified commit's re-run is the same code and the same sealed values every time.
#: ``topofl figure index --check`` checks them all.
SAMPLE_NEWEST, SAMPLE_DRAWN = 6, 6


def _sample(used: list[int], *, seed: str) -> list[int]:
    older = used[:-SAMPLE_NEWEST]
    return used[-SAMPLE_NEWEST:] + random.Random(seed).sample(older,
                                                             min(SAMPLE_DRAWN, len(older)))


def test_the_sample_is_the_newest_and_a_draw_seeded_by_the_commit() -> None:
    used = list(range(0, 40, 2))
    a, b = _sample(used, seed="a" * 40), _sample(used, seed="b" * 40)
    assert a == _sample(used, seed="a" * 40) and a != b
    for got in (a, b):
        assert got[:SAMPLE_NEWEST] == used[-SAMPLE_NEWEST:]
        assert len(set(got)) == SAMPLE_NEWEST + SAMPLE_DRAWN and set(got) <= set(used)
    # fewer older ones than the draw: all of them
    assert sorted(_sample(used[:8], seed="a")) == used[:8]


@pytest.mark.slow
@pytest.mark.skipif(_shallow(), reason="needs the repository's history")
def test_the_committed_certificates_verify(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                           ) -> None:
    """Re-run the commits of the newest committed certificates and of a draw of the older ones
    (about 30 s of one core each, two at a time; :data:`SAMPLE_NEWEST`)."""
    monkeypatch.undo()  # the whole snapshot
    results = Path(tf.figures.__file__).resolve().parents[2] / "paper_figures" / "results"
    head = subprocess.run(["git", "-C", str(results), "rev-parse", "HEAD"], capture_output=True,
                          text=True, check=True).stdout.strip()
    assert certificates.verify(results, cache=tmp_path / "seen.json", jobs=2,
                               select=functools.partial(_sample, seed=head)) == []


@pytest.mark.parametrize("which", ["record", "values"])
# gzip's header holds the time (mtime=0: the same bytes, so the same test ids, in every
# process that collects them; pytest-xdist's workers must agree)
@pytest.mark.parametrize("garbage", [b"", b"not gzip", gzip.compress(b"{not json", mtime=0),
                                     gzip.compress(b"[1, 2]", mtime=0), b"[1, 2]",
                                     gzip.compress(b"x" * 64, mtime=0)[:-9] + b"\x00" * 9])
def test_a_damaged_record_or_values_file_is_named(tmp_path: Path, small: dict, garbage: bytes,
                                                  which: str) -> None:
    cert = _cert(small)
    _commit(tmp_path, [cert], small["values"])
    path = (certificates._record_path(tmp_path, cert["digest"]) if which == "record" else
            certificates._values_path(tmp_path, snapshot.digest(small["values"])))
    path.write_bytes(garbage)
    with pytest.raises(ValueError, match=f"{path.name}: (not (gzipped )?JSON|its content does "
                                         "not)"):
        certificates.values_of(tmp_path, cert)
    problems = certificates.verify(tmp_path, current=small, cache=tmp_path / "seen.json",
                                   of_commit=_fake_commit({"values": {}}), code_of=_code_of())
    assert len(problems) == 1 and "cannot be verified" in problems[0], problems


def test_a_record_that_is_no_sealed_record_is_named(tmp_path: Path, small: dict) -> None:
    # JSON with the right digest but not a record of format 2
    cert = _cert(small, digest=snapshot.digest({"values": 3}))
    path = certificates._record_path(tmp_path, cert["digest"])
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"values": 3}))
    with pytest.raises(ValueError, match="not a sealed record of a certificate"):
        certificates.values_of(tmp_path, cert)


# ------------------------------------------------------------------ the verifier's own inputs
def test_tree_fingerprint_is_the_installed_packages_fingerprint() -> None:
    # the same files, hashed by tree_fingerprint from bytes: the fingerprint code_fingerprint
    # computes from the disk (what a commit's tree is held to)
    root = Path(tf.__file__).resolve().parent
    files = {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*.py")}
    assert tree_fingerprint(files) == tf.figures.code_fingerprint()
    # Windows line ends are read as the disk read does (universal newlines)
    crlf = {k: v.replace(b"\n", b"\r\n") for k, v in files.items()}
    assert tree_fingerprint(crlf) == tf.figures.code_fingerprint()


@pytest.mark.parametrize(("change", "match"), [
    ({"_version.py": None}, "the tree has no _version.py"),
    ({"_fingerprint.py": b"NOT_RESULT_CODE = ()\nNOT_RESULT_CODE += ('a.py',)\n"},
     "assigns NOT_RESULT_CODE 2 times"),
    ({"_fingerprint.py": b"NOT_RESULT_CODE = tuple(['a.py'])\n"}, "is not a literal"),
    ({"_fingerprint.py": b"NOT_RESULT_CODE = ('a.py', 3)\n"}, "must be a tuple of strings"),
    ({"_version.py": b"__version__ = 1\n"}, "__version__ must be a string"),
    ({"core.py": b"x = '\xff'\n"}, "core.py is not UTF-8"),
])
def test_a_tree_whose_fingerprint_cannot_be_read_is_named(change: dict, match: str) -> None:
    # a tree from before the internal utilities moved into _utils/ keeps its fingerprint
    # module at _fingerprint.py, which is read then
    tree = {"_version.py": b'__version__ = "1.0"\n', "core.py": b"x = 1\n",
            "_fingerprint.py": b'NOT_RESULT_CODE = ("_fingerprint.py",)\n'}
    tree = {k: v for k, v in {**tree, **change}.items() if v is not None}
    with pytest.raises(ValueError, match=match):
        tree_fingerprint(tree)


def _git(repo: Path, *args: str) -> str:
    out = subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t",
                          *args], capture_output=True, text=True, check=True)
    return out.stdout.strip()


def _self_report(tree: Path) -> str:
    """What a checkout's own fingerprint code says about it (what the check used to ask)."""
    code = ("import sys; sys.meta_path[:] = [f for f in sys.meta_path if 'editable' not in "
            "repr(f).lower()]; from topofl._utils.fingerprint import code_fingerprint; "
            "print(code_fingerprint())")
    out = subprocess.run([sys.executable, "-c", code], cwd=tree, capture_output=True,
                         text=True, env={**os.environ, "PYTHONPATH": str(tree)}, check=True)
    return out.stdout.strip()


@pytest.fixture
def history(tmp_path: Path) -> dict[str, Any]:
    """A tiny repository: commit ``a`` (``x = 1``), then commit ``b``: other numbers
    (``x = 2``) and a ``_utils/fingerprint.py`` edited to report ``a``'s fingerprint."""
    repo = tmp_path / "repo"
    (repo / "topofl" / "_utils").mkdir(parents=True)
    _git(repo, "init", "-q")
    real = Path(tf.__file__).resolve().parent
    (repo / "topofl" / "__init__.py").write_text("")
    (repo / "topofl" / "_utils" / "__init__.py").write_text("")
    for name in ("_version.py", "_utils/fingerprint.py"):
        (repo / "topofl" / name).write_bytes((real / name).read_bytes())
    (repo / "topofl" / "core.py").write_text("x = 1\n")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "a")
    a = _git(repo, "rev-parse", "HEAD")
    fp_a = commits.commit_fingerprint(a, repo)
    assert _self_report(repo) == fp_a  # an honest commit reports what the check computes
    (repo / "topofl" / "core.py").write_text("x = 2\n")
    with (repo / "topofl" / "_utils" / "fingerprint.py").open("a") as fh:
        fh.write(f"\n\ndef code_fingerprint() -> str:\n    return {fp_a!r}\n")
    _git(repo, "commit", "-q", "-am", "b")
    return {"repo": repo, "a": a, "b": _git(repo, "rev-parse", "HEAD"), "fp_a": fp_a}


def test_a_commit_that_describes_itself_fails(tmp_path: Path, small: dict,
                                              history: dict[str, Any]) -> None:
    repo, fp_a = history["repo"], history["fp_a"]
    assert _self_report(repo) == fp_a  # commit b says it is a's code ...
    fp_b = commits.commit_fingerprint(history["b"], repo)
    assert fp_b != fp_a and fp_b.startswith(tf.__version__ + "+")  # ... its files are not
    # a certificate a -> now naming commit b, which computes the current values (it carries
    # the current code): refused without running it
    results = tmp_path / "results"
    results.mkdir()
    runs = _fake_commit({"values": small["values"]})
    code_of = functools.partial(commits.commit_fingerprint, repo=repo)
    kw: dict[str, Any] = dict(current=small, of_commit=runs, code_of=code_of,
                              cache=tmp_path / "seen.json")
    _commit(results, [_cert(small, **{"from": fp_a, "from_commit": history["b"]})],
            small["values"])
    problems = certificates.verify(results, **kw)
    assert len(problems) == 1 and f"is code {fp_b}, not {fp_a}" in problems[0], problems
    assert runs.calls == []
    # the same certificate naming commit a passes the code check
    _commit(results, [_cert(small, **{"from": fp_a, "from_commit": history["a"]})],
            small["values"])
    assert certificates.verify(results, **kw) == [] and runs.calls == [history["a"]]


@pytest.mark.parametrize(("name", "link"), [("core.cpython-311-x86_64-linux-gnu.so", False),
                                            ("__pycache__/core.cpython-311.pyc", False),
                                            ("algorithms.py", True)])
def test_a_commit_with_code_no_fingerprint_covers_is_refused(history: dict[str, Any],
                                                             name: str, link: bool) -> None:
    repo = history["repo"]
    path = repo / "topofl" / name
    path.parent.mkdir(exist_ok=True)
    if link:
        path.symlink_to("core.py")
    else:
        path.write_bytes(b"\x7fELF")
    _git(repo, "add", "-f", "-A")
    _git(repo, "commit", "-q", "-m", "c")
    why = "a link or a submodule" if link else "a file Python imports in place of source"
    with pytest.raises(ValueError, match=f"carries 'topofl/{re.escape(name)}', {why}"):
        commits.commit_fingerprint(_git(repo, "rev-parse", "HEAD"), repo)


def _lie(small: Mapping[str, Any]) -> tuple[dict[str, Any], Any]:
    """A certificate that commits the current values for a commit computing others; the
    commit's stand-in."""
    return _cert(small), _fake_commit({"values": _moved(small["values"])})


def test_a_forged_cache_entry_fails(tmp_path: Path, small: dict) -> None:
    cert, runs = _lie(small)
    _commit(tmp_path, [cert], small["values"])
    cache = tmp_path / "seen.json"
    kw: dict[str, Any] = dict(current=small, code_of=_code_of(), cache=cache)
    lied = "although this environment equals the certificate's"
    env = verified._environment_digest(small["environment"])
    fact = {"commit": COMMIT, "code": OLD, "environment": env, "threads": 1,
            "digest": small["digest"]}
    name = f"{COMMIT}/1/{env}"
    old_key = hashlib.sha256(json.dumps([*(cert[f] for f in certificates.SEALED[:3]),
                                         small["digest"]]).encode()).hexdigest()
    forged = {
        "the key the check used to trust": [old_key],
        "an entry without its HMAC": {"format": 3, "entries": {name: fact}},
        "an HMAC under another key": {"format": 3, "entries": {name: {
            **fact, "mac": verified._Cache._mac(b"k" * 32, fact)}}},
    }
    for what, content in forged.items():
        cache.write_text(json.dumps(content))
        problems = certificates.verify(tmp_path, of_commit=runs, **kw)
        assert len(problems) == 1 and lied in problems[0], (what, problems)
    assert runs.calls == [COMMIT] * 3  # re-run each time
    # an honest entry of another commit, moved to this one, is no entry of it
    honest = _fake_commit({"values": small["values"]})
    other = "d" * 40
    _commit(tmp_path, [{**cert, "from_commit": other}], small["values"])
    assert certificates.verify(tmp_path, of_commit=honest, **kw) == []
    entries = json.loads(cache.read_text())["entries"]
    entry = entries[name.replace(COMMIT, other)]
    assert entry["commit"] == other and len(entry["mac"]) == 64
    cache.write_text(json.dumps({"format": 3, "entries": {
        **entries, name: {**entry, "commit": COMMIT}}}))
    _commit(tmp_path, [cert], small["values"])
    problems = certificates.verify(tmp_path, of_commit=runs, **kw)
    assert len(problems) == 1 and lied in problems[0], problems
    assert runs.calls == [COMMIT] * 4


def test_a_remembered_rerun_is_revalidated(tmp_path: Path, small: dict) -> None:
    _commit(tmp_path, [_cert(small)], small["values"])
    runs = _fake_commit({"values": small["values"]})
    cache = tmp_path / "seen.json"
    kw: dict[str, Any] = dict(of_commit=runs, cache=cache)
    assert certificates.verify(tmp_path, current=small, code_of=_code_of(), **kw) == []
    assert certificates.verify(tmp_path, current=small, code_of=_code_of(), **kw) == []
    assert runs.calls == [COMMIT]  # the second check re-ran nothing
    key = verified._key_path()
    assert key.stat().st_mode & 0o077 == 0  # the key is the user's alone
    # the commit's files now fingerprint to other code (the fingerprint code changed): the
    # entry does not count, and nothing runs
    problems = certificates.verify(tmp_path, current=small, code_of=_code_of("0.1.0+" + "e" * 12),
                                   **kw)
    assert len(problems) == 1 and "is code 0.1.0+eeeeeeeeeeee, not" in problems[0]
    assert runs.calls == [COMMIT]
    # the current code moved a value: the entry's digest is not the current values', so the
    # commit runs again and the move is named
    moved = {**small, "values": _moved(small["values"])}
    problems = certificates.verify(tmp_path, current=moved, code_of=_code_of(), **kw)
    assert len(problems) == 1 and "the current code moves 1 of the" in problems[0], problems
    assert runs.calls == [COMMIT] * 2
    # without the user's key no entry counts (and a new key makes the old entries void)
    key.unlink()
    assert certificates.verify(tmp_path, current=small, code_of=_code_of(), **kw) == []
    assert runs.calls == [COMMIT] * 3
    assert certificates.verify(tmp_path, current=small, code_of=_code_of(), **kw) == []
    assert runs.calls == [COMMIT] * 3


def test_an_interrupted_check_keeps_what_it_verified(tmp_path: Path, small: dict) -> None:
    mid, first, second = "0.1.0+" + "1" * 12, "a" * 40, "b" * 40
    certs = [_cert(small, **{"to": mid, "from_commit": first}),
             _cert(small, **{"from": mid, "from_commit": second})]
    _commit(tmp_path, certs, small["values"], small["values"])
    calls: list[str] = []

    def interrupted(commit: str, threads: int) -> Mapping[str, Any]:
        calls.append(commit)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return {"values": small["values"]}

    def code_of(commit: str) -> str:
        return OLD if commit == first else mid

    kw: dict[str, Any] = dict(current=small, code_of=code_of, cache=tmp_path / "seen.json")
    with pytest.raises(KeyboardInterrupt):
        certificates.verify(tmp_path, of_commit=interrupted, **kw)
    assert calls == [first, second]
    assert [e["commit"] for e in json.loads((tmp_path / "seen.json").read_text())["entries"]
            .values()] == [first]
    assert not [p for p in tmp_path.iterdir() if "tmp" in p.name]  # no temporary file left
    honest = _fake_commit({"values": small["values"]})
    assert certificates.verify(tmp_path, of_commit=honest, **kw) == []
    assert honest.calls == [second]  # resumed


@pytest.mark.skipif(_shallow(), reason="needs the repository's history")
def test_every_committed_certificate_names_its_commits_code() -> None:
    # what the check computes from git, with the current fingerprint code, before any re-run
    results = Path(tf.figures.__file__).resolve().parents[2] / "paper_figures" / "results"
    certs = certificates.read(results)
    codes = {c["from_commit"]: c["from"] for c in certs}
    assert len(certs) >= 25 and {commit: commits.commit_fingerprint(commit)
                                 for commit in codes} == codes


# ------------------------------------------------------------------ a second environment
#: Run in a second numeric environment (lower kernels forced): the snapshot of three parts
#: there, and the verification of the certificates in ``argv[1]`` against it, the certified
#: commit standing as computing there what the current code computes.
_SECOND = textwrap.dedent("""
    import json, sys
    from pathlib import Path
    from topofl.figures import certificates
    from topofl.figures import snapshot
    parts = ("topologies", "partitions", "models")
    snapshot.PARTS = {p: snapshot.PARTS[p] for p in parts}
    here = snapshot.take(parts)
    out = {"environment": here["environment"], "values": here["values"], "checks": []}
    for folder in sys.argv[2:]:
        notes = []
        problems = certificates.verify(Path(folder), current=here, notes=notes,
                                       of_commit=lambda commit, threads: here,
                                       code_of=lambda commit: sys.argv[1],
                                       cache=Path(folder) / "seen.json")
        out["checks"].append({"problems": problems, "notes": notes})
    print(json.dumps(out))
""")


def _lowered(env: Mapping[str, Any]) -> dict[str, str]:
    """Environment variables that make a second numeric environment of this machine: ATen's
    DEFAULT kernels (unless they are already forced) and OpenBLAS's oldest x86 core type."""
    out = {}
    if env["torch_capability"] != "DEFAULT":
        out["ATEN_CPU_CAPABILITY"] = "default"
    if env["cpu"].startswith("x86_64") and "Prescott" not in str(env["numpy_blas"]):
        out["OPENBLAS_CORETYPE"] = "Prescott"
    return out


def test_a_genuine_certificate_verifies_in_a_second_environment_and_an_edited_one_fails(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    parts = ("topologies", "partitions", "models")
    monkeypatch.setattr(snapshot, "PARTS", {p: _ALL_PARTS[p] for p in parts})
    mine = snapshot.take(parts)
    second = _lowered(mine["environment"])
    if not second:
        pytest.skip("no lower kernels to force on this machine")

    def folder(certs: list[dict[str, Any]], values: Mapping[str, Any]) -> str:
        path = tmp_path / f"results{len(list(tmp_path.iterdir()))}"
        path.mkdir()
        _commit(path, certs, values)
        return str(path)

    # in the second environment: a genuine certificate; one whose values were edited (a
    # model's output moved by 1e-4, the digest recomputed); the genuine record claiming the
    # second environment (resealed with it), which must then match it bit for bit
    edited = json.loads(json.dumps(mine["values"]))
    edited["models/mlp"]["out"][0][0] += 1e-4
    folders = [folder([_cert(mine)], mine["values"]), folder([_cert(mine)], edited)]
    out = subprocess.run([sys.executable, "-c", _SECOND, OLD, *folders], cwd=tmp_path,
                         env={**os.environ, **second}, capture_output=True, text=True,
                         check=True, timeout=600)
    there = json.loads(out.stdout.strip().splitlines()[-1])
    genuine, forged = there["checks"]
    apart = _environment.differences(mine["environment"], there["environment"])
    assert apart, "the forced kernels made no second environment"
    assert genuine["problems"] == [], genuine["problems"]
    moved = snapshot.digest(there["values"]) != mine["digest"]  # the last bits moved there
    if moved:
        assert len(genuine["notes"]) == 1 and "within this environment's rounding" in \
            genuine["notes"][0] and apart[0] in genuine["notes"][0], genuine["notes"]
    assert len(forged["problems"]) == 1 and "beyond the rounding measured between " \
        "environments in 1 of" in forged["problems"][0] and "models/mlp" in \
        forged["problems"][0], forged["problems"]
    claimed = folder([_cert(mine, environment=there["environment"])], mine["values"])
    out = subprocess.run([sys.executable, "-c", _SECOND, OLD, claimed], cwd=tmp_path,
                         env={**os.environ, **second}, capture_output=True, text=True,
                         check=True, timeout=600)
    problems = json.loads(out.stdout.strip().splitlines()[-1])["checks"][0]["problems"]
    if moved:
        assert len(problems) == 1 and "although this environment equals the certificate's" \
            in problems[0], problems
    else:
        assert problems == []



def test_a_tree_reads_its_rule_where_it_keeps_its_fingerprint_module() -> None:
    rule = b'NOT_RESULT_CODE = ("cli.py",)\n'
    old = {"_version.py": b'__version__ = "1.0"\n', "_fingerprint.py": rule, "core.py": b"x=1\n",
           "cli.py": b"print(1)\n"}
    new = {**{k: v for k, v in old.items() if k != "_fingerprint.py"},
           "_utils/fingerprint.py": rule}
    # the same rule read from either place: only the path of the (hashed) module differs
    assert tree_fingerprint({**old, "cli.py": b"print(2)\n"}) == tree_fingerprint(old)
    assert tree_fingerprint({**new, "cli.py": b"print(2)\n"}) == tree_fingerprint(new)
    with pytest.raises(ValueError, match="the tree has no _utils/fingerprint.py"):
        tree_fingerprint({"_version.py": old["_version.py"], "core.py": b"x=1\n"})


def test_every_committed_result_is_current() -> None:
    """Each committed result's code leads to the current code through the committed
    certificates (the chain only: ``topofl figure index --check`` also re-runs them). A result
    left stale, as field_single_merge was for a day when its certificates all started from a
    sibling code, fails here."""
    assert figure_results.stale() == {}
