"""Certificates: written only from a complete, unedited snapshot of committed code; read
strictly; verified by re-running the certified commit (a hand edit cannot pass), on a machine
of the certificate's CPU kind bit for bit and on another within float rounding."""

from __future__ import annotations

import functools
import gzip
import hashlib
import json
import os
import re
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

import topofl as tf
from topofl import certificates, snapshot
from topofl._fingerprint import tree_fingerprint
from topofl.figures import cli as figure_cli
from topofl.figures import results as figure_results

SMALL = ("topologies", "partitions")
OLD = "0.1.0+000000000000"
COMMIT = "c" * 40
OTHER_CPU = "x86_64 OtherVendor AVX2"  # a CPU kind that is not this machine's


@pytest.fixture(scope="module")
def small() -> dict[str, Any]:
    return snapshot.take(SMALL)


@pytest.fixture(autouse=True)
def _two_parts(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A snapshot of two parts stands for a complete one (the whole takes ~10 s); the cache's
    key is the test's own."""
    monkeypatch.setattr(snapshot, "PARTS", {p: snapshot.PARTS[p] for p in SMALL})
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "home-cache"))


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
    assert cert["digest"] == small["digest"] and cert["values"] == len(small["values"])
    assert cert["seeds"] == list(snapshot.SEEDS) and cert["cpu"] == small["cpu"]
    # the values are committed beside it, under their digest
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
    ({"cpu": None}, r"not a snapshot .*\['cpu'\]"),
    ({"cpu": OTHER_CPU}, f"taken on CPU kind {OTHER_CPU}, this is .*: take both on one machine"),
])
def test_a_partial_edited_or_uncommitted_snapshot_cannot_certify(
        tmp_path: Path, small: dict, change: dict, match: str) -> None:
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
    return {"from": OLD, "to": small["code"], "from_commit": COMMIT, "digest": small["digest"],
            "values": len(small["values"]), "torch": small["torch"], "threads": 1,
            "cpu": small["cpu"], **change}


def _commit(results: Path, certs: list[dict[str, Any]], *values: Mapping[str, Any]) -> None:
    """Write ``certs`` and commit ``values`` beside them (as :func:`certify` does)."""
    for v in values:
        certificates._store(results, v)
    (results / certificates.EQUIVALENCE_FILE).write_text(json.dumps(certs))


@pytest.mark.parametrize(("change", "match"), [
    ({"values": 0}, "certifies 0 values"),
    ({"digest": "xyz"}, "'digest' must be 16 hex digits"),
    ({"from_commit": "HEAD"}, "'from_commit' must be a 40-hex-digit git commit"),
    ({"from": "old"}, "'from' must be a code version"),
    ({"threads": "1"}, "'threads' must be a int"),
    ({"cpu": 3}, "'cpu' must be a str"),
])
def test_a_malformed_certificate_is_refused_naming_the_file(
        tmp_path: Path, small: dict, change: dict, match: str) -> None:
    (tmp_path / certificates.EQUIVALENCE_FILE).write_text(json.dumps([_cert(small, **change)]))
    with pytest.raises(ValueError, match=f"equivalence.json: certificate 0 .*{match}"):
        certificates.equivalent_codes(small["code"], tmp_path)
    (tmp_path / certificates.EQUIVALENCE_FILE).write_text('[{"from": "a", "to": "b"}]')
    with pytest.raises(ValueError, match=r"certificate 0 misses \['cpu', 'digest'"):
        figure_results.stale(tmp_path)
    (tmp_path / certificates.EQUIVALENCE_FILE).write_text("{")
    with pytest.raises(ValueError, match="equivalence.json: not a JSON list"):
        certificates.read(tmp_path)


def _fake_commit(result: Mapping[str, Any]) -> Any:
    calls: list[str] = []

    def of_commit(commit: str, threads: int) -> Mapping[str, Any]:
        calls.append(commit)
        return result

    of_commit.calls = calls  # type: ignore[attr-defined]
    return of_commit


def _code_of(code: str = OLD) -> Any:
    """A stand-in for :func:`certificates.commit_fingerprint`: every commit's files are ``code``."""
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
    """``values`` with every float moved by ``rel`` (relative): another CPU's last bits."""
    def move(v: Any) -> Any:
        if isinstance(v, float):
            return v * (1 + rel)
        if isinstance(v, list):
            return [move(u) for u in v]
        if isinstance(v, dict):
            return {k: move(u) for k, u in v.items()}
        return v
    return {k: move(v) for k, v in values.items()}


@pytest.mark.parametrize("cpu", ["same", "other"])
@pytest.mark.parametrize("forgery", ["made-up digest", "other values", "other code",
                                     "edited values", "values beyond rounding"])
def test_verify_refuses_a_forged_certificate(tmp_path: Path, small: dict, forgery: str,
                                             cpu: str) -> None:
    # on the certificate's CPU kind and on another alike
    cert, says = _cert(small), {"code": OLD, "values": small["values"]}
    if cpu == "other":
        cert["cpu"] = OTHER_CPU
    committed = small["values"]
    if forgery == "made-up digest":  # a hand-written line: no values have that digest
        cert["digest"], match = "0123456789abcdef", "no committed values have the certificate's"
    elif forgery == "other values":  # a real commit whose code computes other numbers
        says["values"] = committed = _moved(small["values"])
        cert["digest"] = snapshot.digest(says["values"])
        match = "the current code moves 1 of the"
    elif forgery == "other code":  # a commit of other code
        says["code"], match = "0.1.0+222222222222", "is code 0.1.0+222222222222, not"
    elif forgery == "edited values":  # the committed file changed, the digest kept
        _commit(tmp_path, [], _moved(small["values"]))
        moved = certificates._values_path(tmp_path, snapshot.digest(_moved(small["values"])))
        moved.replace(certificates._values_path(tmp_path, small["digest"]))
        match = "do not have the certificate's digest"
    else:  # values and digest forged together, off by more than rounding
        committed = _rounded(small["values"], 1e-2)
        cert["digest"] = snapshot.digest(committed)
        match = ("does not have the certificate's digest" if cpu == "same"
                 else "beyond float rounding in")
    if forgery != "edited values":
        _commit(tmp_path, [cert], committed)
    else:
        (tmp_path / certificates.EQUIVALENCE_FILE).write_text(json.dumps([cert]))
    problems = certificates.verify(tmp_path, current=small, of_commit=_fake_commit(says),
                                   code_of=_code_of(says["code"]), cache=tmp_path / "seen.json")
    assert len(problems) == 1 and "certificate 0" in problems[0], problems
    assert match in problems[0], problems


def test_another_cpu_kind_verifies_within_float_rounding(tmp_path: Path, small: dict) -> None:
    # the certificate was taken on another CPU kind: its values differ from this machine's in
    # the last bits (here 1e-9 relative), which verifies; the commit's values here must still
    # equal the current code's here to the last bit
    theirs = _rounded(small["values"], 1e-9)
    cert = _cert(small, cpu=OTHER_CPU, digest=snapshot.digest(theirs))
    _commit(tmp_path, [cert], theirs)
    honest = _fake_commit({"code": OLD, "values": small["values"]})
    assert certificates.verify(tmp_path, current=small, of_commit=honest,
                               code_of=_code_of(), cache=tmp_path / "seen.json") == []
    # the same certificate on a machine of its own kind: bit for bit, which these are not
    mine = {**small, "cpu": OTHER_CPU}
    problems = certificates.verify(tmp_path, current=mine, of_commit=honest,
                                   code_of=_code_of(), cache=tmp_path / "seen.json")
    assert len(problems) == 1 and "does not have the certificate's digest" in problems[0]
    # an integer (a label count) is never within rounding
    counted = json.loads(json.dumps(theirs))
    counted["partitions/dirichlet"]["labels"][0][0] += 1
    cert2 = _cert(small, cpu=OTHER_CPU, digest=snapshot.digest(counted))
    _commit(tmp_path, [cert2], counted)
    problems = certificates.verify(tmp_path, current=small, of_commit=honest,
                                   code_of=_code_of(), cache=tmp_path / "seen.json")
    assert len(problems) == 1 and "beyond float rounding in 1 of" in problems[0], problems
    assert "partitions/dirichlet" in problems[0]


def test_rerecord_gives_a_legacy_certificate_this_machines_values(tmp_path: Path,
                                                                  small: dict) -> None:
    # written before CPU kinds were recorded: a digest of another machine's bits, no values
    legacy = {k: v for k, v in _cert(small, digest="0123456789abcdef").items() if k != "cpu"}
    moved = {**legacy, "from": "0.1.0+333333333333", "from_commit": "d" * 40}
    (tmp_path / certificates.EQUIVALENCE_FILE).write_text(json.dumps([legacy, moved]))
    with pytest.raises(ValueError, match=r"misses \['cpu'\]"):
        certificates.read(tmp_path)

    def of_commit(commit: str, threads: int) -> Mapping[str, Any]:
        if commit == COMMIT:
            return {"code": OLD, "values": small["values"]}
        return {"code": "0.1.0+333333333333", "values": _moved(small["values"])}

    def code_of(commit: str) -> str:
        return OLD if commit == COMMIT else "0.1.0+333333333333"

    with pytest.raises(ValueError, match="certificate 1: 1 values moved here"):
        certificates.rerecord(tmp_path, current=small, of_commit=of_commit, code_of=code_of)
    certs = certificates.read(tmp_path, legacy=True)
    assert certs[0]["cpu"] == small["cpu"] and certs[0]["digest"] == small["digest"]
    assert certs[0]["first"] == {"digest": "0123456789abcdef", "cpu": "not recorded"}
    assert "cpu" not in certs[1]  # left as it was
    # the rerecorded one now verifies here, bit for bit
    (tmp_path / certificates.EQUIVALENCE_FILE).write_text(json.dumps(certs[:1]))
    assert certificates.verify(tmp_path, current=small, of_commit=of_commit, code_of=code_of,
                               cache=tmp_path / "seen.json") == []


def test_newer_code_with_more_values_can_be_certified(tmp_path: Path, small: dict,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    real = snapshot.take

    def more(*args: Any, **kw: Any) -> dict[str, Any]:
        snap = real(*args, **kw)
        snap["values"]["runs/new_algorithm/float64"] = {"x": 1.0}
        return snap

    monkeypatch.setattr(snapshot, "take", more)
    cert = certificates.certify(_before(tmp_path, small), tmp_path)
    assert cert["values"] == len(small["values"]) and cert["digest"] == small["digest"]


def test_a_commit_not_in_the_repository_cannot_verify() -> None:
    with pytest.raises(ValueError, match="is not in this repository"):
        certificates.snapshot_of_commit("0" * 40)


def _shallow() -> bool:
    root = Path(certificates.__file__).resolve().parents[1]
    out = subprocess.run(["git", "-C", str(root), "rev-parse", "--is-shallow-repository"],
                         capture_output=True, text=True, check=False)
    return out.returncode != 0 or out.stdout.strip() != "false"


@pytest.mark.slow
@pytest.mark.skipif(_shallow(), reason="needs the repository's history")
def test_the_committed_certificates_verify(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                           ) -> None:
    """Re-run the commit of every committed certificate (about 10 s each)."""
    monkeypatch.undo()  # the whole snapshot
    results = Path(tf.figures.__file__).resolve().parents[2] / "paper_figures" / "results"
    assert certificates.verify(results, cache=tmp_path / "seen.json") == []


@pytest.mark.parametrize("garbage", [b"", b"not gzip", gzip.compress(b"{not json"),
                                     gzip.compress(b"[1, 2]"),
                                     gzip.compress(b"x" * 64)[:-9] + b"\x00" * 9])
def test_a_damaged_values_file_is_named(tmp_path: Path, small: dict, garbage: bytes) -> None:
    _commit(tmp_path, [_cert(small)])
    path = certificates._values_path(tmp_path, small["digest"])
    path.parent.mkdir(parents=True)
    path.write_bytes(garbage)
    with pytest.raises(ValueError, match=f"{path.name}: (not gzipped JSON|its values do not)"):
        certificates.values_of(tmp_path, _cert(small))
    problems = certificates.verify(tmp_path, current=small, cache=tmp_path / "seen.json",
                                   of_commit=_fake_commit({"values": {}}), code_of=_code_of())
    assert len(problems) == 1 and "cannot be verified" in problems[0], problems


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
            "repr(f).lower()]; from topofl._fingerprint import code_fingerprint; "
            "print(code_fingerprint())")
    out = subprocess.run([sys.executable, "-c", code], cwd=tree, capture_output=True,
                         text=True, env={**os.environ, "PYTHONPATH": str(tree)}, check=True)
    return out.stdout.strip()


@pytest.fixture
def history(tmp_path: Path) -> dict[str, Any]:
    """A tiny repository: commit ``a`` (``x = 1``), then commit ``b``: other numbers
    (``x = 2``) and a ``_fingerprint.py`` edited to report ``a``'s fingerprint."""
    repo = tmp_path / "repo"
    (repo / "topofl").mkdir(parents=True)
    _git(repo, "init", "-q")
    real = Path(tf.__file__).resolve().parent
    (repo / "topofl" / "__init__.py").write_text("")
    for name in ("_version.py", "_fingerprint.py"):
        (repo / "topofl" / name).write_bytes((real / name).read_bytes())
    (repo / "topofl" / "core.py").write_text("x = 1\n")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "a")
    a = _git(repo, "rev-parse", "HEAD")
    fp_a = certificates.commit_fingerprint(a, repo)
    assert _self_report(repo) == fp_a  # an honest commit reports what the check computes
    (repo / "topofl" / "core.py").write_text("x = 2\n")
    with (repo / "topofl" / "_fingerprint.py").open("a") as fh:
        fh.write(f"\n\ndef code_fingerprint() -> str:\n    return {fp_a!r}\n")
    _git(repo, "commit", "-q", "-am", "b")
    return {"repo": repo, "a": a, "b": _git(repo, "rev-parse", "HEAD"), "fp_a": fp_a}


def test_a_commit_that_describes_itself_fails(tmp_path: Path, small: dict,
                                              history: dict[str, Any]) -> None:
    repo, fp_a = history["repo"], history["fp_a"]
    assert _self_report(repo) == fp_a  # commit b says it is a's code ...
    fp_b = certificates.commit_fingerprint(history["b"], repo)
    assert fp_b != fp_a and fp_b.startswith(tf.__version__ + "+")  # ... its files are not
    # a certificate a -> now naming commit b, which computes the current values (it carries
    # the current code): refused without running it
    results = tmp_path / "results"
    results.mkdir()
    runs = _fake_commit({"values": small["values"]})
    code_of = functools.partial(certificates.commit_fingerprint, repo=repo)
    kw: dict[str, Any] = dict(current=small, of_commit=runs, code_of=code_of,
                              cache=tmp_path / "seen.json")
    _commit(results, [_cert(small, **{"from": fp_a, "from_commit": history["b"]})],
            small["values"])
    problems = certificates.verify(results, **kw)
    assert len(problems) == 1 and f"is code {fp_b}, not {fp_a}" in problems[0], problems
    assert runs.calls == []
    # the same certificate naming commit a passes the code check
    _commit(results, [_cert(small, **{"from": fp_a, "from_commit": history["a"]})])
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
        certificates.commit_fingerprint(_git(repo, "rev-parse", "HEAD"), repo)


def _lie(small: Mapping[str, Any]) -> tuple[dict[str, Any], Any]:
    """A certificate that commits the current values for a commit computing others; the
    commit's stand-in."""
    return _cert(small), _fake_commit({"values": _moved(small["values"])})


def test_a_forged_cache_entry_fails(tmp_path: Path, small: dict) -> None:
    cert, runs = _lie(small)
    _commit(tmp_path, [cert], small["values"])
    cache = tmp_path / "seen.json"
    kw: dict[str, Any] = dict(current=small, code_of=_code_of(), cache=cache)
    lied = "does not have the certificate's digest"
    fact = {"commit": COMMIT, "code": OLD, "torch": small["torch"], "cpu": small["cpu"],
            "threads": 1, "digest": small["digest"]}
    name = f"{COMMIT}/1/{small['cpu']}/{small['torch']}"
    old_key = hashlib.sha256(json.dumps([*(cert[f] for f in certificates.FIELDS), small["cpu"],
                                         small["digest"]]).encode()).hexdigest()
    forged = {
        "the key the check used to trust": [old_key],
        "an entry without its HMAC": {"format": 2, "entries": {name: fact}},
        "an HMAC under another key": {"format": 2, "entries": {name: {
            **fact, "mac": certificates._Cache._mac(b"k" * 32, fact)}}},
    }
    for what, content in forged.items():
        cache.write_text(json.dumps(content))
        problems = certificates.verify(tmp_path, of_commit=runs, **kw)
        assert len(problems) == 1 and lied in problems[0], (what, problems)
    assert runs.calls == [COMMIT] * 3  # re-run each time
    # an honest entry of another commit, moved to this one, is no entry of it
    honest = _fake_commit({"values": small["values"]})
    other = "d" * 40
    _commit(tmp_path, [{**cert, "from_commit": other}])
    assert certificates.verify(tmp_path, of_commit=honest, **kw) == []
    entries = json.loads(cache.read_text())["entries"]
    entry = entries[name.replace(COMMIT, other)]
    assert entry["commit"] == other and len(entry["mac"]) == 64
    cache.write_text(json.dumps({"format": 2, "entries": {
        **entries, name: {**entry, "commit": COMMIT}}}))
    _commit(tmp_path, [cert])
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
    key = certificates._key_path()
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
    _commit(tmp_path, certs, small["values"])
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
    assert len(certs) >= 25 and {commit: certificates.commit_fingerprint(commit)
                                 for commit in codes} == codes
