"""User code from the command line: ``--import MODULE`` and a config's ``imports``.

A graph family registered in a module of the user's is named by a config run from the command
line (a sweep's worker processes import the module too), the imports are recorded in the
records header, a replay imports them again and refuses a module that changed or is missing,
a resume refuses other imports, and a bad import is one line.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import topofl as tf
from topofl._utils.userimports import load_imports
from topofl.cli import main

_FAMILY = '''import networkx as nx
import topofl as tf


def {name}(n: int) -> tf.Topology:
    return tf.Topology.from_networkx(nx.cycle_graph(n), name="{name}", params={{"n": n}})


tf.topologies.register(tf.topologies.GraphFamily(
    "{name}", {name}, (tf.topologies.Param("n", int, "number of nodes", low=3),),
    example=lambda n, rng: {{"n": n}} if n >= 3 else None, description="a ring of mine"))
'''

_CONFIG = '''algorithm = "dsgd"
topology = "{family}"
data = "digits"
n_clients = 4
partition = "iid"
rounds = {rounds}
eval_every = 1
batch_size = 8
lr = 0.1
spectral = false
'''


def _env() -> dict[str, str]:
    root = str(Path(__file__).resolve().parents[2])
    return {**os.environ, "PYTHONPATH": root + os.pathsep + os.environ.get("PYTHONPATH", "")}


def _header(path: Path) -> dict[str, Any]:
    with path.open(encoding="utf-8") as fh:
        out: dict[str, Any] = json.loads(fh.readline())
    return out


@pytest.fixture
def family(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A module ``<name>_mod.py`` in ``tmp_path`` (the current directory, not on sys.path)
    registering the graph family ``<name>``; unregistered and forgotten afterwards."""
    name = f"fam{abs(hash(str(tmp_path))) % 10**8}"
    (tmp_path / f"{name}_mod.py").write_text(_FAMILY.format(name=name), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    assert str(tmp_path) not in sys.path
    yield name
    tf.topologies.REGISTRY._items.pop(name, None)
    sys.modules.pop(f"{name}_mod", None)


def test_a_sweep_naming_a_registered_family_runs_with_import_in_workers(tmp_path: Path
                                                                         ) -> None:
    """``python -m topofl sweep CONFIG --import MODULE`` with two worker processes (spawned:
    each imports the module before it checks its run); without ``--import`` the family is
    unknown, in one line."""
    name = "myfam"
    (tmp_path / "my_graphs.py").write_text(_FAMILY.format(name=name), encoding="utf-8")
    cfg = tmp_path / "sweep.toml"
    cfg.write_text(_CONFIG.format(family=name, rounds=1) + "[sweep]\nseed = [0, 1]\n",
                   encoding="utf-8")

    def sweep(*extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "topofl", "sweep", "sweep.toml", *extra],
                              cwd=tmp_path, capture_output=True, text=True, env=_env(),
                              timeout=600, check=False)

    bad = sweep("--out", "out0", "--dry-run")
    assert bad.returncode == 2, bad.stderr
    assert len(bad.stderr.strip().splitlines()) == 1
    assert f"unknown graph family '{name}'" in bad.stderr
    ok = sweep("--out", "out", "--import", "my_graphs", "--jobs", "2", "--stack", "off")
    assert ok.returncode == 0, ok.stderr
    assert "2 runs (2 complete)" in ok.stdout
    digest = hashlib.sha256((tmp_path / "my_graphs.py").read_bytes()).hexdigest()
    for seed in (0, 1):
        header = _header(tmp_path / "out" / f"seed={seed}.jsonl")
        assert header["config"]["topology"] == name
        assert header["config"]["imports"] == ["my_graphs"]
        [rec] = header["provenance"]["imports"]
        assert rec["module"] == "my_graphs" and rec["sha256"] == digest
        assert rec["file"] == str((tmp_path / "my_graphs.py").resolve())


def test_run_and_replay_import_the_module_and_refuse_a_changed_or_missing_one(
        family: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """In process, from a current directory that is not on sys.path; the config's
    ``imports`` and ``--import`` both work; a replay imports the header's modules again."""
    (tmp_path / "run.toml").write_text(_CONFIG.format(family=family, rounds=2),
                                       encoding="utf-8")
    assert main(["run", "run.toml", "--out", "a.jsonl", "--import", f"{family}_mod"]) == 0
    header = _header(tmp_path / "a.jsonl")
    assert header["config"]["imports"] == [f"{family}_mod"]
    assert main(["run", "--replay", "a.jsonl"]) == 0
    assert "reproduced" in capsys.readouterr().out
    # the same module by the config's key, as a path: recorded as written
    (tmp_path / "run2.toml").write_text(
        _CONFIG.format(family=family, rounds=2) + f'imports = ["./{family}_mod.py"]\n',
        encoding="utf-8")
    assert main(["run", "run2.toml", "--out", "b.jsonl"]) == 0
    assert _header(tmp_path / "b.jsonl")["config"]["imports"] == [f"./{family}_mod.py"]
    capsys.readouterr()
    # the module's source changed since the run: the same names would run other code
    with open(tmp_path / f"{family}_mod.py", "a", encoding="utf-8") as fh:
        fh.write("# edited\n")
    assert main(["run", "--replay", "a.jsonl"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1
    assert f"the source of module '{family}_mod'" in err and "not replayed" in err
    # the module is gone
    sys.modules.pop(f"{family}_mod")
    (tmp_path / f"{family}_mod.py").unlink()
    assert main(["run", "--replay", "a.jsonl"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1
    assert "cannot replay: its header imports" in err
    assert f"no module named '{family}_mod'" in err
    assert main(["run", "--replay", "a.jsonl", "--import", "x"]) == 2
    assert "--import" in capsys.readouterr().err


def test_a_resume_with_other_imports_is_refused(family: str, tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "run.toml").write_text(
        _CONFIG.format(family=family, rounds=2)
        + 'checkpoint_every = 1\ncheckpoint_path = "c.ckpt"\n', encoding="utf-8")
    assert main(["run", "run.toml", "--out", "a.jsonl", "--import", f"{family}_mod"]) == 0
    capsys.readouterr()

    def last_round() -> int:
        rows = [json.loads(ln) for ln in (tmp_path / "a.jsonl").read_text().splitlines()]
        return max(int(r["round"]) for r in rows if not r.get("header"))

    before = last_round()
    # resumed without the module (it is still registered in this process)
    assert main(["run", "run.toml", "--out", "a.jsonl", "--resume", "c.ckpt",
                 "--set", "rounds=3"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1
    assert f"cannot resume a.jsonl: its records imported ['{family}_mod']" in err
    assert "this run imports none" in err
    assert main(["run", "run.toml", "--out", "a.jsonl", "--resume", "c.ckpt",
                 "--set", "rounds=3", "--import", f"{family}_mod"]) == 0
    assert last_round() == before + 1  # the run went on, with the module


def test_plan_takes_import(family: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                           capsys: pytest.CaptureFixture[str]) -> None:
    """The plan's probe (a child process) imports the module too."""
    monkeypatch.setenv("PYTHONPATH", _env()["PYTHONPATH"])  # the child's topofl: this one
    (tmp_path / "run.toml").write_text(_CONFIG.format(family=family, rounds=2),
                                       encoding="utf-8")
    assert main(["plan", "run.toml", "--no-time", "--json"]) == 2
    assert f"unknown graph family '{family}'" in capsys.readouterr().err
    assert main(["plan", "run.toml", "--no-time", "--json", "--import", f"{family}_mod"]) == 0
    assert json.loads(capsys.readouterr().out)


@pytest.mark.parametrize(("files", "given", "message"), [
    ({}, "no_such_mod_here", "imports: no module named 'no_such_mod_here' (looked in the "
     "current directory"),
    ({"notes.txt": "x"}, "notes.txt", "imports: 'notes.txt' is a path but not a .py file"),
    ({}, "sub/none.py", "imports: no such file 'sub/none.py'"),
    ({"boom_mod.py": "raise RuntimeError('no GPU here')\n"}, "boom_mod",
     "imports: importing 'boom_mod' raised RuntimeError: no GPU here"),
    ({"boom2.py": "1 / 0\n"}, "./boom2.py",
     "imports: importing './boom2.py' raised ZeroDivisionError: division by zero"),
    ({"dep_mod.py": "import not_installed_dep_xyz\n"}, "dep_mod",
     "imports: importing 'dep_mod' raised ModuleNotFoundError: No module named "
     "'not_installed_dep_xyz'"),
    ({}, "my-graphs", "imports: 'my-graphs' is neither a module name"),
])
def test_bad_imports_are_one_line_and_exit_2(files: dict[str, str], given: str, message: str,
                                             tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    for name, text in files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    (tmp_path / "run.toml").write_text(_CONFIG.format(family="ring", rounds=1),
                                       encoding="utf-8")
    try:
        assert main(["run", "run.toml", "--out", "a.jsonl", "--import", given]) == 2
    finally:
        for name in ("boom_mod", "boom2", "dep_mod"):
            sys.modules.pop(name, None)
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1, err
    assert err.startswith("topofl run: error: ") and message in err, err
    assert not (tmp_path / "a.jsonl").exists()


def test_imports_of_a_config_are_checked_as_its_other_keys() -> None:
    with pytest.raises(TypeError, match="imports must be a list of module names"):
        tf.config.validate({"topology": "ring", "n_clients": 4, "imports": "json"})
    with pytest.raises(TypeError, match="did you mean 'imports' for 'import'"):
        tf.config.validate({"topology": "ring", "n_clients": 4, "import": ["json"]})


def test_no_imports_leave_a_config_and_its_run_hash_as_they_were(tmp_path: Path) -> None:
    """A config without imports (or with none) resolves to the same config as before the key
    (no ``imports`` entry); a run that imports a module registering nothing has the same run
    hash and numbers as the run without it."""
    cfg = {"topology": "ring", "n_clients": 4, "rounds": 2, "partition": "iid",
           "batch_size": 8, "spectral": False}
    plain = tf.config.validate(cfg)
    assert "imports" not in plain
    assert tf.config.validate({**cfg, "imports": []}) == plain
    assert tf.config.validate({**cfg, "imports": ["json"]}) == {**plain, "imports": ["json"]}
    a = tf.run(**cfg, records_path=str(tmp_path / "a.jsonl"))
    b = tf.run(**cfg, records_path=str(tmp_path / "b.jsonl"), imports=["json"])
    ha, hb = _header(tmp_path / "a.jsonl"), _header(tmp_path / "b.jsonl")
    assert ha["engine"]["run_hash"] == hb["engine"]["run_hash"]
    assert "imports" not in ha["config"] and "imports" not in ha["provenance"]
    assert hb["provenance"]["imports"][0]["module"] == "json"
    assert a.records.final("test_acc_mean") == b.records.final("test_acc_mean")


def test_importing_twice_runs_a_module_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                            ) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "counted_mod.py").write_text(
        "import builtins\nbuiltins.counted_mod_runs = getattr(builtins, 'counted_mod_runs', 0)"
        " + 1\n", encoding="utf-8")
    import builtins

    try:
        first = load_imports(["counted_mod", "counted_mod"])
        again = load_imports(["./counted_mod.py"])
        assert len(first) == 1 and first[0]["sha256"] == again[0]["sha256"]
        assert builtins.counted_mod_runs == 1  # type: ignore[attr-defined]
    finally:
        sys.modules.pop("counted_mod", None)
        if hasattr(builtins, "counted_mod_runs"):
            del builtins.counted_mod_runs


def test_a_stacked_sweep_in_process_records_the_imports(family: str, tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]
                                                        ) -> None:
    """``jobs = 1``, runs stacked (the default): each run's header lists the module, and the
    sweep run again finds its runs finished (the same resolved config, imports included)."""
    (tmp_path / "s.toml").write_text(
        _CONFIG.format(family=family, rounds=1) + f'imports = ["{family}_mod"]\n'
        "[sweep]\nseed = [0, 1]\n", encoding="utf-8")
    assert main(["sweep", "s.toml", "--out", "o"]) == 0
    assert "2 runs (2 complete)" in capsys.readouterr().out
    for seed in (0, 1):
        header = _header(tmp_path / "o" / f"seed={seed}.jsonl")
        assert header["config"]["imports"] == [f"{family}_mod"]
        assert header["provenance"]["imports"][0]["module"] == f"{family}_mod"
    assert main(["sweep", "s.toml", "--out", "o", "--import", f"{family}_mod"]) == 0
    assert "2 runs (2 skipped)" in capsys.readouterr().out


def test_spectral_and_list_take_import(family: str, tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    """The manual shows ``topofl spectral`` and ``topofl list`` with a family of the user's:
    they take ``--import`` (a name or a path), as ``run`` does; without it the unknown family
    says how to add one from the command line."""
    assert main(["spectral", f"{family}:n=8"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1
    assert f"unknown graph family '{family}'" in err and "--import FILE.py" in err
    assert "topofl.topologies.register" in err
    assert main(["spectral", f"{family}:n=8", "--import", f"{family}_mod", "--json"]) == 0
    row = json.loads(capsys.readouterr().out)
    assert row["spec"] == f"{family}:n=8" and row["n"] == 8
    assert row["spectral_gap"] == pytest.approx(tf.spectral.spectral_gap(tf.topologies.ring(8)))
    assert main(["list", "graphs", "--import", f"./{family}_mod.py"]) == 0
    assert f"{family}: a ring of mine" in capsys.readouterr().out.splitlines()
    assert main(["list", "--import", "no_such_mod_here"]) == 2
    assert "imports: no module named 'no_such_mod_here'" in capsys.readouterr().err


@pytest.mark.parametrize(("argv", "register"), [
    (["spectral", "nosuch:n=4"], "topofl.topologies.register"),
    (["run", "--topology", "nosuch:n=4"], "topofl.topologies.register"),
    (["run", "--algorithm", "nosuch"], "topofl.algorithms.register_algorithm"),
    (["plan", "@CFG", "--set", "model=nosuch"], "topofl.models.register_model"),
    (["run", "@CFG", "--set", "data=nosuch"], "topofl.data.register_dataset"),
    (["run", "@CFG", "--set", "partition=nosuch"], None),  # not one a user adds
    (["bench", "--model", "nosuch"], None),  # bench takes no --import
    (["report", "nosuch:n=4"], None),  # report neither
])
def test_an_unknown_name_says_how_to_add_one_from_the_command_line(
        argv: list[str], register: str | None, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "c.toml").write_text('topology = "ring"\nn_clients = 4\n', encoding="utf-8")
    argv = ["c.toml" if a == "@CFG" else a for a in argv]
    assert main([*argv, *(["--out", "x"] if argv[0] in ("run", "report") else [])]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "unknown " in err and "known: " in err
    hint = ("; one of yours is known once the module that registers it ({}) is imported: "
            "--import FILE.py (or imports = ['FILE.py'] in a config)\n")
    if register is None:
        assert "--import" not in err
    else:
        assert err.endswith(hint.format(register)), err
    with pytest.raises(ValueError) as info:  # from Python, where there is no --import
        tf.config.validate({"topology": "nosuch:n=4", "n_clients": 4})
    assert "--import" not in str(info.value)


def test_a_run_with_a_relative_import_replays_from_another_folder(
        family: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """``--import lib/mod.py`` from ``proj/``, replayed from ``elsewhere/``: the replay imports
    the absolute file its header records (after checking its SHA-256): reproduced; a changed
    or missing file is refused in one line, before it is imported."""
    proj, elsewhere = tmp_path / "proj", tmp_path / "elsewhere"
    (proj / "lib").mkdir(parents=True)
    elsewhere.mkdir()
    module = proj / "lib" / f"{family}_mod.py"
    module.write_text(_FAMILY.format(name=family), encoding="utf-8")
    (proj / "run.toml").write_text(_CONFIG.format(family=family, rounds=2), encoding="utf-8")
    monkeypatch.chdir(proj)
    assert main(["run", "run.toml", "--out", "a.jsonl", "--import",
                 f"lib/{family}_mod.py"]) == 0
    assert _header(proj / "a.jsonl")["config"]["imports"] == [f"lib/{family}_mod.py"]
    monkeypatch.chdir(elsewhere)
    capsys.readouterr()
    assert main(["run", "--replay", "../proj/a.jsonl", "--out", "b.jsonl"]) == 0
    assert "../proj/a.jsonl: reproduced" in capsys.readouterr().out
    assert _header(elsewhere / "b.jsonl")["config"]["imports"] == [str(module.resolve())]
    assert main(["run", "--replay", "b.jsonl"]) == 0  # the replay's header replays too
    capsys.readouterr()
    source = module.read_text(encoding="utf-8")
    module.write_text(source + "# edited\n", encoding="utf-8")
    assert main(["run", "--replay", "../proj/a.jsonl"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"topofl run: error: ../proj/a.jsonl: the source of module "
                          f"'{family}_mod' ({module.resolve()}) is not the one its records "
                          "were made with (sha256 ")
    assert err.endswith("now); it is not replayed\n") and len(err.splitlines()) == 1
    module.unlink()
    assert main(["run", "--replay", "../proj/a.jsonl"]) == 2
    assert capsys.readouterr().err == (
        f"topofl run: error: ../proj/a.jsonl: the file of module '{family}_mod' "
        f"('lib/{family}_mod.py' when it ran, {module.resolve()}) is missing; it is not "
        "replayed\n")


def test_a_replay_imports_a_module_by_its_recorded_file_in_a_fresh_process(
        tmp_path: Path) -> None:
    """``--import my_graphs`` (a name, found in the current folder) replayed by a new process
    in another folder: the module is imported from the file its header records."""
    (tmp_path / "proj").mkdir()
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "proj" / "my_graphs.py").write_text(_FAMILY.format(name="myfam"),
                                                    encoding="utf-8")
    (tmp_path / "proj" / "run.toml").write_text(_CONFIG.format(family="myfam", rounds=1),
                                                encoding="utf-8")

    def topofl(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "topofl", *args], cwd=cwd,
                              capture_output=True, text=True, env=_env(), timeout=600,
                              check=False)

    ran = topofl(tmp_path / "proj", "run", "run.toml", "--out", "a.jsonl", "--import",
                 "my_graphs")
    assert ran.returncode == 0, ran.stderr
    again = topofl(tmp_path / "elsewhere", "run", "--replay", "../proj/a.jsonl")
    assert again.returncode == 0, again.stderr
    assert "reproduced" in again.stdout
