"""``topofl figure index --check``: each certificate's verdict (bitwise, within rounding and
why, failed and why, cached) printed as it is decided, the commits re-run ``--jobs`` at a time
with the same verdicts, a summary that counts them, ``--strict``, the warning on a variable
that moves this machine's certificates to the rounding path, and the remembered re-runs kept
by the checking process alone when it is killed."""

from __future__ import annotations

import functools
import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from tests.figures import test_certificates as base
from topofl.figures import certificates, commits, snapshot, verified
from topofl.figures import cli as figure_cli
from topofl.figures import results as figure_results

A, B, C, D = ("a" * 40, "b" * 40, "c" * 40, "d" * 40)
CODES = {A: "0.1.0+" + "a" * 12, B: "0.1.0+" + "b" * 12, C: "0.1.0+" + "c" * 12,
         D: "0.1.0+" + "d" * 12}


@pytest.fixture(scope="module")
def small() -> dict[str, Any]:
    return snapshot.take(base.SMALL)


@pytest.fixture(autouse=True)
def _own_key(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The cache's key is the test's own; no variable of the shell moves the bits."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "home-cache"))
    for name in certificates.BIT_VARIABLES:
        monkeypatch.delenv(name, raising=False)


def _three(results: Path, small: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Three certificates of the current code ``now``: commit A's values are its sealed ones
    bit for bit, B's differ from them within rounding (B was certified in another
    environment), C's moved (its certificate was edited). The snapshot ``now`` and each
    commit's values here."""
    now = base._with_run(small)
    values = now["values"]
    certs = [base._cert(now, **{"from": CODES[A], "from_commit": A}),
             base._cert(now, **{"from": CODES[B], "from_commit": B,
                                "environment": base._other(now["environment"])}),
             base._cert(now, **{"from": CODES[C], "from_commit": C})]
    base._commit(results, certs, values, base._rounded(values, 1e-9), values)
    return now, {A: values, B: values, C: base._moved(values)}


class _Commits:
    """A stand-in for the re-runs: each commit's values, the calls in order; ``gate[commit]``
    (an event) holds that commit's run until it is set."""

    def __init__(self, values: Mapping[str, Any]) -> None:
        self.values, self.calls = values, []  # type: ignore[var-annotated]
        self.gate: dict[str, threading.Event] = {}

    def __call__(self, commit: str, threads: int) -> Mapping[str, Any]:
        self.calls.append(commit)
        if commit in self.gate:
            assert self.gate[commit].wait(20), f"{commit[:4]}: not released"
        return {"values": self.values[commit]}


def _kw(tmp_path: Path, now: Mapping[str, Any], runs: _Commits) -> dict[str, Any]:
    return dict(current=now, of_commit=runs, code_of=CODES.__getitem__,
                cache=tmp_path / "seen.json")


def _found(verdicts: list[certificates.Verdict]) -> list[tuple[Any, ...]]:
    return [(v.index, v.outcome, v.cached, v.fields) for v in verdicts]


def test_each_verdict_is_reported_as_it_is_decided(tmp_path: Path, small: dict) -> None:
    now, values = _three(tmp_path, small)
    runs = _Commits(values)
    events: list[str] = []
    # B's re-run waits until A's verdict is out: a check that reported at its end would hang
    runs.gate[B] = threading.Event()

    def report(v: certificates.Verdict) -> None:
        events.append(f"verdict {v.index}")
        if v.index == 0:
            runs.gate[B].set()

    found = certificates.check(tmp_path, report=report, **_kw(tmp_path, now, runs))
    assert events[0] == "verdict 0" and sorted(events) == ["verdict 0", "verdict 1",
                                                           "verdict 2"]
    assert runs.calls == [A, B, C]
    assert _found(found) == [(0, "bitwise", False, ()),
                             (1, "rounding", False, ("numpy", "cpu", "cpu_id")),
                             (2, "failed", False, ())]
    assert "although this environment equals the certificate's" in found[2].detail
    assert f"commit {B[:12]}): within rounding (because: numpy, cpu, cpu_id; largest " \
        "relative difference 1e-09 at " in found[1].line()
    assert found[2].line().startswith(
        f"certificate 2 ({CODES[C]} -> {now['code']}, commit {C[:12]}): failed: ")
    assert certificates.summary(found) == (
        "1 bitwise, 1 within rounding (because: cpu, cpu_id, numpy), 1 failed")
    # the two that verified are remembered: a second check runs nothing for them, says so
    again = certificates.check(tmp_path, **_kw(tmp_path, now, runs))
    assert _found(again) == [(0, "bitwise", True, ()),
                             (1, "rounding", True, ("numpy", "cpu", "cpu_id")),
                             (2, "failed", False, ())]
    assert runs.calls == [A, B, C, C]
    assert certificates.summary(again).endswith("; cached: 1 bitwise, 1 within rounding")
    assert found[0].line().endswith("): bitwise") and again[0].line().endswith(
        "): cached, bitwise")


def test_jobs_give_the_same_verdicts_and_run_a_commit_once(tmp_path: Path,
                                                           small: dict) -> None:
    now, values = _three(tmp_path, small)
    certs = certificates.read(tmp_path)
    # a fourth certificate on A's commit (a chain through another code): A runs once
    certs.append({**certs[0], "to": CODES[D]})
    certs.append(base._cert(now, **{"from": CODES[D], "from_commit": D}))
    base._commit(tmp_path, certs, *[certificates.values_of(tmp_path, c) for c in certs[:3]],
                 values[A], values[A])
    values = {**values, D: values[A]}
    seen = {}
    for jobs in (1, 2, 3):
        runs = _Commits(values)
        kw = {**_kw(tmp_path, now, runs), "cache": tmp_path / f"seen{jobs}.json"}
        seen[jobs] = _found(certificates.check(tmp_path, jobs=jobs, **kw))
        assert sorted(runs.calls) == [A, B, C, D], (jobs, runs.calls)
    assert seen[1] == seen[2] == seen[3]
    assert [outcome for _, outcome, _, _ in seen[1]] == ["bitwise", "rounding", "failed",
                                                         "bitwise", "bitwise"]
    with pytest.raises(ValueError, match="jobs must be an integer of at least 1, got 0"):
        certificates.check(tmp_path, jobs=0, **_kw(tmp_path, now, _Commits(values)))


def test_select_checks_only_the_chosen_certificates(tmp_path: Path, small: dict) -> None:
    """``select`` narrows the check to the certificates it returns (what the slow test's sample
    does): only their commits re-run and their verdicts are those of the whole check; an index
    the chain does not use is refused before anything runs."""
    now, values = _three(tmp_path, small)
    whole = _found(certificates.check(tmp_path, **_kw(tmp_path, now, _Commits(values))))
    runs = _Commits(values)
    asked: list[list[int]] = []

    def two(used: list[int]) -> list[int]:
        asked.append(used)
        return [used[2], used[0], used[2]]  # any order, repeats

    kw = {**_kw(tmp_path, now, runs), "cache": tmp_path / "other.json"}
    found = _found(certificates.check(tmp_path, select=two, **kw))
    assert asked == [[0, 1, 2]] and sorted(runs.calls) == [A, C]
    assert found == [whole[0], whole[2]] and [f[1] for f in found] == ["bitwise", "failed"]
    problems = certificates.verify(tmp_path, select=lambda used: used[:1], **kw)
    assert problems == []  # certificate 0 verifies; 2, which fails, was not chosen
    runs.calls.clear()
    with pytest.raises(ValueError, match=r"select must return indices of certificates the "
                                         r"chain uses \(3 of them\), got \[7\]"):
        certificates.check(tmp_path, select=lambda used: [0, 7], **kw)
    assert runs.calls == []
    assert certificates.check(tmp_path, select=lambda used: [], **kw) == []


def test_two_jobs_run_at_once(tmp_path: Path, small: dict) -> None:
    now, values = _three(tmp_path, small)
    runs = _Commits(values)
    # A's run is held until B's starts: with one job at a time this would never release
    runs.gate[A] = threading.Event()

    def b_started(commit: str, threads: int) -> Mapping[str, Any]:
        if commit == B:
            runs.gate[A].set()
        return runs(commit, threads)

    kw = {**_kw(tmp_path, now, runs), "of_commit": b_started}
    assert [v.outcome for v in certificates.check(tmp_path, jobs=2, **kw)] == [
        "bitwise", "rounding", "failed"]


def test_the_commits_run_while_the_current_snapshot_is_taken(
        tmp_path: Path, small: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    # a first check (nothing remembered): the current snapshot waits until A's re-run has
    # started, which a check that ran the commits only after it would never do
    values = small["values"]
    certs = [base._cert(small, **{"from": CODES[k], "from_commit": k}) for k in (A, B)]
    base._commit(tmp_path, certs, values, values)
    runs = _Commits({A: values, B: values})
    a_started = threading.Event()
    take = snapshot.take

    def of_commit(commit: str, threads: int) -> Mapping[str, Any]:
        a_started.set()
        return runs(commit, threads)

    def taken(*args: Any, **kw: Any) -> dict[str, Any]:
        assert a_started.wait(20), "no commit ran while the current snapshot was taken"
        return take(*args, **kw)

    monkeypatch.setattr(snapshot, "PARTS", {p: snapshot.PARTS[p] for p in base.SMALL})
    monkeypatch.setattr(snapshot, "take", taken)
    said: list[str] = []
    kw = {**_kw(tmp_path, small, runs), "current": None, "of_commit": of_commit}
    found = certificates.check(tmp_path, small["code"], jobs=2, progress=said.append, **kw)
    assert _found(found) == [(0, "bitwise", False, ()), (1, "bitwise", False, ())]
    assert sorted(runs.calls) == [A, B]
    assert said[0].startswith("checking 2 certificate(s), one line each as it is decided; "
                              "the commits not remembered re-run 2 at a time")
    assert said[1].startswith("taking the current code's snapshot while 2 commit(s) this "
                              "machine never verified re-run")
    # a second check: both remembered, nothing runs
    found = certificates.check(tmp_path, small["code"], jobs=2, **kw)
    assert _found(found) == [(0, "bitwise", True, ()), (1, "bitwise", True, ())]
    assert sorted(runs.calls) == [A, B]


@pytest.fixture
def checked(tmp_path: Path, small: dict, monkeypatch: pytest.MonkeyPatch) -> Any:
    """``topofl figure index --check`` on a folder of the three certificates (no result),
    the re-runs stood in for; ``(argv) -> (exit status, stdout lines, stderr lines)``."""
    root = tmp_path / "root"
    (root / "results").mkdir(parents=True)
    now, values = _three(root / "results", small)
    for mod in (figure_cli, figure_results):
        monkeypatch.setattr(mod, "_root", lambda: root)

    def run(argv: list[str], capsys: pytest.CaptureFixture[str], keep: list[int] | None = None
            ) -> tuple[int, list[str], list[str]]:
        if keep is not None:  # only these certificates
            certs = certificates.read(root / "results")
            (root / "results" / certificates.EQUIVALENCE_FILE).write_text(
                json.dumps([certs[k] for k in keep]))
        monkeypatch.setattr(figure_cli, "check", functools.partial(
            certificates.check, **_kw(tmp_path, now, _Commits(values))))
        code = figure_cli.main(["index", "--check", *argv])
        out, err = capsys.readouterr()
        return code, out.splitlines(), err.splitlines()

    return run


def test_the_check_prints_a_line_a_certificate_and_a_summary(
        checked: Any, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = checked(["--jobs", "2"], capsys)
    assert code == 1  # one failed
    assert sorted(line[:17] for line in out) == ["[1/3] certificate", "[2/3] certificate",
                                                 "[3/3] certificate"]
    by_index = {line.split()[2]: line for line in out}
    assert by_index["0"].endswith("): bitwise")
    assert "): within rounding (because: numpy, cpu, cpu_id; largest" in by_index["1"]
    assert "): failed: the snapshot of commit cccccccccccc differs" in by_index["2"]
    assert err[-1].startswith("certificates: 1 bitwise, 1 within rounding (because: cpu, "
                              "cpu_id, numpy), 1 failed; 0 of 0 committed results are stale")
    assert not any("warning" in line for line in err)
    # without the edited one it passes; --strict fails the one that is not bitwise
    code, out, err = checked(["--jobs=2"], capsys, keep=[0, 1])
    assert code == 0 and err[-1].startswith("certificates: 1 bitwise, 1 within rounding")
    code, out, err = checked(["--strict"], capsys)
    assert code == 1 and [line for line in out if "certificate 1 " in line][0].endswith(
        " (not bitwise: fails under --strict)")
    assert "; 1 not bitwise: failed under --strict;" in err[-1]
    code, out, err = checked(["--strict"], capsys, keep=[0])
    assert code == 0 and err[-1].startswith("certificates: 1 bitwise, 0 within rounding, "
                                            "0 failed; cached: 1 bitwise, 0 within rounding; "
                                            "0 of 0")


@pytest.mark.parametrize("argv", [["--jobs"], ["--jobs", "0"], ["--jobs=two"], ["--fast"]])
def test_a_wrong_argument_is_named(checked: Any, capsys: pytest.CaptureFixture[str],
                                   argv: list[str]) -> None:
    code, out, err = checked(argv, capsys)
    assert code == 2 and out == [] and len(err) == 1 and "error:" in err[0], err


def test_a_variable_that_moves_the_bits_is_warned_of(
        checked: Any, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ATEN_CPU_CAPABILITY", "avx2")
    code, out, err = checked([], capsys, keep=[0])
    warned = [line for line in err if "warning" in line]
    assert code == 0 and warned == [
        "topofl figure index --check: warning: ATEN_CPU_CAPABILITY=avx2 is set: it changes "
        "the kernels that decide the bits, which moves the certificates of this machine's "
        "environment to the rounding path (compared within rounding, not bit for bit); "
        "unset it, or check with --strict"]
    for name in certificates.BIT_VARIABLES:
        monkeypatch.setenv(name, "1")
    code, out, err = checked([], capsys, keep=[0])
    assert [line.split(": warning: ")[1].split("=")[0] for line in err if "warning" in line
            ] == list(certificates.BIT_VARIABLES)


#: A check in a process of its own, the re-runs stood in for: commit A's returns at once,
#: B's never (the test kills the process once A's is remembered).
_KILLED = textwrap.dedent("""
    import json, sys, time
    from pathlib import Path
    from topofl.figures import certificates
    folder, now = Path(sys.argv[1]), json.loads(Path(sys.argv[2]).read_text())
    codes = json.loads(sys.argv[3])

    def of_commit(commit, threads):
        if commit != min(codes):
            time.sleep(600)
        return {"values": now["values"]}

    certificates.check(folder, current=now, of_commit=of_commit, code_of=codes.__getitem__,
                       cache=folder / "seen.json", jobs=2)
""")


def test_a_killed_check_keeps_what_it_verified(tmp_path: Path, small: dict) -> None:
    now = base._with_run(small)
    certs = [base._cert(now, **{"from": CODES[k], "from_commit": k}) for k in (A, B)]
    base._commit(tmp_path, certs, now["values"], now["values"])
    (tmp_path / "now.json").write_text(json.dumps(now))
    cache = tmp_path / "seen.json"
    proc = subprocess.Popen([sys.executable, "-c", _KILLED, str(tmp_path),
                             str(tmp_path / "now.json"), json.dumps({A: CODES[A], B: CODES[B]})],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 120
        while not cache.exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        assert proc.poll() is None, proc.communicate()[1].decode()[-2000:]
        assert cache.exists(), "A's re-run was not remembered while B's ran"
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.communicate()
    entries = json.loads(cache.read_text())["entries"]
    assert [e["commit"] for e in entries.values()] == [A]
    assert sorted(p.name for p in tmp_path.iterdir() if "seen" in p.name) == [
        "seen.json", "seen.json.lock"]  # no temporary file left
    runs = _Commits({A: now["values"], B: now["values"]})
    found = certificates.check(tmp_path, jobs=2, **_kw(tmp_path, now, runs))
    assert runs.calls == [B]  # resumed
    assert _found(found) == [(0, "bitwise", True, ()), (1, "bitwise", False, ())]


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
def test_an_interrupted_batch_ends_its_interpreters(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    sleeper = (f"import os, time; open({str(pid_file)!r}, 'w').write(str(os.getpid())); "
               "time.sleep(120)")

    def of_commit(commit: str, threads: int) -> Mapping[str, Any]:
        if commit == A:
            return {"values": {}}
        with open(tmp_path / "err", "wb") as err:
            code = commits._run_probe([sys.executable, "-c", sleeper], tmp_path, os.environ,
                                      err)
        return {"values": {}, "code": code}

    started = 0.0
    with pytest.raises(KeyboardInterrupt):
        with commits.Reruns(jobs=2, of_commit=of_commit) as runs:
            runs.add(A, 1)
            runs.add(B, 1)
            assert next(runs.finished())[0] == (A, 1)
            deadline = time.monotonic() + 60
            while not pid_file.exists() or not pid_file.read_text():
                assert time.monotonic() < deadline
                time.sleep(0.05)
            started = time.monotonic()
            raise KeyboardInterrupt  # Ctrl-C while B runs: its interpreter is ended
    pid = int(pid_file.read_text())
    while _alive(pid):
        assert time.monotonic() - started < 20, "the interpreter outlived its check"
        time.sleep(0.05)


def _alive(pid: int) -> bool:
    """Whether process ``pid`` still runs (a zombie, ended but not yet reaped, does not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


#: A tree whose snapshot takes ``SLEEP`` seconds (after writing its process id to
#: ``PID_FILE``).
_TREE = {"topofl/__init__.py": "", "topofl/figures/__init__.py": "",
         "topofl/figures/snapshot.py": textwrap.dedent("""
             import os, sys, time
             def take(threads):
                 open(os.environ["PID_FILE"], "w").write(str(os.getpid()))
                 time.sleep(float(os.environ["SLEEP"]))
                 return {"torch": "t", "values": {"x": [threads]}}
         """)}


def _tree(tmp_path: Path) -> Path:
    tree = tmp_path / "tree"
    for rel, text in _TREE.items():
        (tree / rel).parent.mkdir(parents=True, exist_ok=True)
        (tree / rel).write_text(text)
    return tree


def test_a_snapshot_interpreter_that_finishes_exits_cleanly(tmp_path: Path) -> None:
    # the thread that watches its caller must not keep it from exiting (an abort at exit,
    # signal 6, failed every re-run once)
    tree, out = _tree(tmp_path), tmp_path / "out.json"
    env = {**os.environ, "PYTHONPATH": str(tree), "PID_FILE": str(tmp_path / "pid"),
           "SLEEP": "0"}
    with open(tmp_path / "err", "wb") as err:
        code = commits._run_probe([sys.executable, "-c", commits._PROBE, "1", str(out)], tree,
                                  env, err)
    assert code == 0, (tmp_path / "err").read_text()[-2000:]
    assert json.loads(out.read_text()) == {"torch": "t", "values": {"x": [1]}}


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
def test_a_snapshot_interpreter_ends_when_its_check_is_killed(tmp_path: Path) -> None:
    tree = _tree(tmp_path)
    pid_file = tmp_path / "pid"
    parent = textwrap.dedent(f"""
        import os, subprocess, sys
        from pathlib import Path
        from topofl.figures import commits
        env = {{**os.environ, "PYTHONPATH": {str(tree)!r}, "PID_FILE": {str(pid_file)!r},
               "SLEEP": "120"}}
        commits._run_probe([sys.executable, "-c", commits._PROBE, "1", "out.json"],
                           Path({str(tree)!r}), env, subprocess.DEVNULL)
    """)
    proc = subprocess.Popen([sys.executable, "-c", parent], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 120
        while not pid_file.exists() or not pid_file.read_text():
            assert proc.poll() is None, proc.communicate()[1].decode()[-2000:]
            assert time.monotonic() < deadline
            time.sleep(0.1)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.communicate()
    pid, started = int(pid_file.read_text()), time.monotonic()
    while _alive(pid):
        assert time.monotonic() - started < 20, "the snapshot interpreter outlived its check"
        time.sleep(0.05)


def test_the_cache_is_written_under_a_lock(tmp_path: Path) -> None:
    store = verified._Cache(tmp_path / "seen.json")
    facts = [{"commit": c, "code": CODES[c], "environment": "e" * 16, "threads": 1,
              "digest": "f" * 16} for c in (A, B, C, D)]
    threads = [threading.Thread(target=store.add, args=(f,)) for f in facts]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(store.holds(f) for f in facts)


def test_the_key_is_made_once_and_never_read_half_written(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # the race CI met: a thread reading the key between another's create and write found it
    # empty and remembered nothing; every thread must get the one whole key
    for attempt in range(20):
        monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / f"cache-{attempt}"))
        got: list[bytes | None] = []
        barrier = threading.Barrier(8)

        def make(barrier: threading.Barrier = barrier, got: list[bytes | None] = got) -> None:
            barrier.wait()
            got.append(verified._key(create=True))

        threads = [threading.Thread(target=make) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len(got) == 8 and got[0] is not None and len(got[0]) == 32
        assert all(k == got[0] for k in got)
        assert [p.name for p in verified._key_path().parent.iterdir()] == [
            verified._key_path().name]  # no private name left behind
