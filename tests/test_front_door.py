"""One front door: ``topofl.run(...)``, a config (``config.resolve``) and ``topofl run CONFIG``
make one check of a run (``api.prepare``), with the same exception and the same message, before
any data is read."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import topofl as tf
from topofl.cli import main

BASE: dict[str, Any] = {"algorithm": "dsgd", "topology": "ring", "data": "digits",
                        "n_clients": 10, "rounds": 2, "batch_size": 8}

#: (name, the keys that change BASE (None: the key is left out), the message). Each message is
#: the whole one: both doors must say exactly this.
BAD: list[tuple[str, dict[str, Any], type[Exception], str]] = [
    ("batch_size str", {"batch_size": "32"}, TypeError, "batch_size must be an int, got str '32'"),
    ("n_clients 0", {"n_clients": 0}, ValueError, "n_clients must be >= 1, got 0"),
    ("dsgd without topology", {"topology": None}, ValueError,
     'dsgd communicates over a graph: set topology in the config (a spec such as "ring"; '
     '`topofl list graphs`) or pass a topology to topofl.run'),
    ("rounds -3", {"rounds": -3}, ValueError, "rounds must be >= 0, got -3"),
    ("eval_global str", {"eval_global": "no"}, TypeError,
     "eval_global must be a bool (True or False), got str 'no'"),
    ("unknown graph family", {"topology": "rign:n=10"}, ValueError,
     "graph spec 'rign:n=10': unknown graph family 'rign' (did you mean 'ring'?); known: "),
    ("unknown hyper-parameter", {"lrr": 0.1}, TypeError,
     "unknown key(s) ['lrr'] (did you mean 'lr' for 'lrr'?); accepted: algorithm, data, "),
    ("lr str", {"lr": "0.1"}, TypeError, "dsgd: lr must be a real number, got str '0.1'"),
    ("lr out of range", {"lr": -0.5}, ValueError, "dsgd: lr must be in (0, inf], got -0.5"),
    ("partition param name", {"partition_params": {"shards_per_clients": 2}}, TypeError,
     "unknown key(s) ['shards_per_clients'] in partition_params (did you mean "
     "'shards_per_client' for 'shards_per_clients'?); accepted: ['flip_labels', "
     "'shards_per_client', 'test', 'val']"),
    ("partition param type", {"partition_params": {"shards_per_client": "2"}}, TypeError,
     "partition_params.shards_per_client must be an int, got str '2'"),
    ("partition param missing", {"partition": "dirichlet"}, ValueError,
     "partition_params needs partition_params.alpha"),
    ("federate option type", {"partition_params": {"val": "a tenth"}}, TypeError,
     "partition_params.val must be a real number, got str 'a tenth'"),
    ("model param name", {"model": "mlp", "model_params": {"hiden": [8]}}, TypeError,
     "unknown key(s) ['hiden'] in model_params (did you mean 'hidden' for 'hiden'?); "
     "accepted: ['hidden']"),
    ("model param type", {"model": "mlp", "model_params": {"hidden": [8.5]}}, TypeError,
     "model_params.hidden must be a list of int, got list [8.5]"),
    ("unknown dataset", {"data": "mnits"}, ValueError, "unknown dataset 'mnits'"),
    ("unknown model", {"model": "mpl"}, ValueError, "unknown model 'mpl' (did you mean 'mlp'?)"),
    ("unknown partition", {"partition": "shard"}, ValueError,
     "unknown partition 'shard' (did you mean 'shards'?)"),
    ("unknown algorithm", {"algorithm": "dsgdd"}, ValueError,
     "unknown algorithm 'dsgdd' (did you mean 'dsgd'?)"),
    ("seed negative", {"seed": -1}, ValueError, "seed must be >= 0, got -1"),
    ("run_id int", {"run_id": 3}, TypeError, "run_id must be a str, got int 3"),
    ("records_path int", {"records_path": 3}, TypeError,
     "records_path must be a path (str or os.PathLike) or None, got int 3"),
    ("network", {"network": {"latency": -1}}, ValueError, "latency"),
    ("network key", {"network": {"latncy": 0.1}}, ValueError,
     "unknown key(s) ['latncy'] in [network] (did you mean 'latency' for 'latncy'?); "
     "accepted: ['latency', "),
    ("availability key", {"availability": {"offline": 0.1, "ofline": 0.2}}, ValueError,
     "unknown key(s) ['ofline'] in [availability] with model 'bernoulli' (did you mean "
     "'offline' for 'ofline'?); accepted: "),
    ("byzantine key", {"byzantine": {"attack": "alie", "shar": 0.1}}, ValueError,
     "byzantine has no key 'shar' (did you mean 'share'?); its keys are "),
    ("algorithm with two letters swapped", {"algorithm": "dsdg"}, ValueError,
     "unknown algorithm 'dsdg' (did you mean 'dsgd'?)"),
    ("a graph spec of another size", {"topology": "ring:n=12"}, ValueError,
     "the topology has n=12 nodes but the data has 10 clients (n_clients=10)"),
]


def _call(change: dict[str, Any]) -> dict[str, Any]:
    """BASE with ``change``: the keyword arguments of topofl.run and the table of a config."""
    return {**BASE, **change}


def _config(change: dict[str, Any]) -> dict[str, Any]:
    """The same call as a config file holds it (no key for an absent topology)."""
    return {k: v for k, v in _call(change).items() if not (k == "topology" and v is None)}


@pytest.fixture
def no_data(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Reading data fails the test: every check comes before it."""
    reads: list[str] = []

    def refuse(*args: Any, **kwargs: Any) -> Any:
        reads.append("federate")
        raise AssertionError("the data was read before the call was checked")

    monkeypatch.setattr(tf.data, "federate", refuse)
    monkeypatch.setattr(tf.data, "load", refuse)
    return reads


def _error(fn: Any) -> BaseException:
    with pytest.raises(Exception) as info:
        fn()
    return info.value


def _assert_one_line_error(capsys: pytest.CaptureFixture[str], message: str) -> None:
    """``topofl run c.json`` exits 2 with ``message`` on one line (and, for an unknown name,
    the hint how to add one of yours)."""
    assert main(["run", "c.json"]) == 2
    err = capsys.readouterr().err
    hint = ("; one of yours is known once the module that registers it" in err
            and "unknown " in message)  # the CLI says how to add one
    assert err.startswith(f"topofl run: error: {message}") and err.count("\n") == 1
    assert hint or err == f"topofl run: error: {message}\n", err
    assert not hint or "--import FILE.py" in err


@pytest.mark.parametrize("name, change, kind, message", BAD, ids=[b[0] for b in BAD])
def test_both_doors_refuse_with_the_same_error_before_reading_data(
        name: str, change: dict[str, Any], kind: type[Exception], message: str,
        no_data: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    from_python = _error(lambda: tf.run(**_call(change)))
    from_config = _error(lambda: tf.config.resolve(_config(change)))
    assert not no_data
    assert type(from_python) is type(from_config), (from_python, from_config)
    assert str(from_python) == str(from_config)
    assert isinstance(from_python, kind) and isinstance(from_python, tf.config.ConfigError)
    assert str(from_python).startswith(message) or message in str(from_python), from_python
    assert "\n" not in str(from_python)
    # the command line: the same message, one line, status 2
    monkeypatch.chdir(tmp_path)
    Path("c.json").write_text(json.dumps(_config(change)))
    _assert_one_line_error(capsys, str(from_config))
    assert not no_data and sorted(p.name for p in tmp_path.iterdir()) == ["c.json"]


def test_a_config_only_adds_what_a_file_needs() -> None:
    """A file holds names, not objects, and no command-line flags: refused by the config door
    alone; everything else is the call's check."""
    with pytest.raises(tf.config.ConfigTypeError, match=r"\['resume'\] are not config keys"):
        tf.config.resolve({**BASE, "resume": "x.ckpt"})
    with pytest.raises(tf.config.ConfigError, match="passed to topofl.run as an object"):
        tf.config.resolve({**BASE, "topology": {"object": "Topology"}})


def test_a_graph_spec_is_parsed_once_per_run(monkeypatch: pytest.MonkeyPatch) -> None:
    from topofl.topologies import _registry

    real, parsed = _registry.parse_spec, []

    def counting(spec: str) -> Any:
        parsed.append(spec)
        return real(spec)

    monkeypatch.setattr(_registry, "parse_spec", counting)
    spec = "dcliques:clique_size=5,inter=ring"
    res = tf.run("dsgd", spec, "digits", n_clients=10, rounds=1, batch_size=8, progress=False)
    assert parsed == [spec] and res.last.topology.name == "dcliques"
    parsed.clear()
    tf.config.execute({"topology": spec, "n_clients": 10, "rounds": 1, "batch_size": 8,
                       "progress": False})
    assert parsed == [spec]


def test_run_settings_are_checked_as_one_record() -> None:
    """The settings of a call are a RunConfig built at call time (the engine runs that one)."""
    p = tf.api.prepare("dsgd", "ring", rounds=7, seed=3, batch_size=4, eval_global=False)
    assert isinstance(p.run, tf.engine.RunConfig)
    assert (p.rounds, p.seed, p.run.batch_size, p.run.eval_global) == (7, 3, 4, False)
    assert p.settings == {"batch_size": 4, "eval_global": False}  # what the call named


def test_the_device_is_checked_where_the_run_starts(no_data: list[str], tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """Whether a device exists depends on the machine, not on the call: a config naming one is
    valid anywhere (a sweep planned here may run elsewhere), and the run refuses it before
    reading any data, with the same message from every door."""
    cfg = {**BASE, "device": "gpu"}
    assert tf.config.validate(cfg)["device"] == "gpu"
    from_python = _error(lambda: tf.run(**cfg))
    from_config = _error(lambda: tf.config.execute(cfg))
    assert type(from_python) is type(from_config) is ValueError
    assert str(from_python) == str(from_config)
    assert str(from_python).startswith("device must be a torch device such as 'cpu' or "
                                       "'cuda:0', got 'gpu'")
    monkeypatch.chdir(tmp_path)
    Path("c.json").write_text(json.dumps(cfg))
    _assert_one_line_error(capsys, str(from_config))
    assert not no_data


def test_a_graph_of_another_size_is_refused_before_the_data_is_read(
        no_data: list[str]) -> None:
    """A built Topology (or TimeVarying) whose n is not the clients' number, and a spec whose
    n is: refused by the front door, before any data is read (the engine's check came after
    data and model were built)."""
    for topology in (tf.topologies.ring(12), tf.as_time_varying(tf.topologies.ring(12))):
        with pytest.raises(ValueError, match=r"the topology has n=12 nodes but the data has "
                                             r"10 clients"):
            tf.api.prepare(**{**BASE, "topology": topology})
    assert not no_data
    assert tf.api.prepare(**{**BASE, "topology": tf.topologies.ring(10)}).run.rounds == 2
    assert tf.api.prepare(**{**BASE, "topology": "ring:n=10"}).graph is not None
    # a family built from the labels takes its size from the data: not refused here
    assert tf.api.prepare(**{**BASE, "topology": "dcliques:clique_size=5"}).graph is not None


def _osa(a: str, b: str) -> int:
    """Optimal string alignment distance by its recursive definition (slow, obvious)."""
    import functools

    @functools.cache
    def d(i: int, j: int) -> int:
        if min(i, j) == 0:
            return max(i, j)
        best = min(d(i - 1, j) + 1, d(i, j - 1) + 1,
                   d(i - 1, j - 1) + (a[i - 1] != b[j - 1]))
        if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
            best = min(best, d(i - 2, j - 2) + 1)
        return best

    return d(len(a), len(b))


@given(st.text("abcd_", max_size=7), st.text("abcd_", max_size=7))
def test_edit_distance_is_the_optimal_string_alignment(a: str, b: str) -> None:
    from topofl._utils.validation import edit_distance

    d = edit_distance(a, b)
    assert d == _osa(a, b) == edit_distance(b, a)
    assert (d == 0) == (a == b) and d <= max(len(a), len(b))


def test_a_swapped_pair_of_letters_suggests_a_name_one_edit_away() -> None:
    """Every registered name with two neighbouring letters swapped: the suggestion, when
    there is one, is one edit (a swap counts as one) from the typo; most often the name
    itself (dsdg -> dsgd, not dsgt: both have difflib ratio 0.75)."""
    from topofl._utils.validation import did_you_mean, edit_distance

    registries = [list(tf.algorithms.ALGORITHMS), list(tf.topologies.REGISTRY),
                  list(tf.models.MODELS), list(tf.data.DATASETS), list(tf.data.PARTITIONS)]
    same = total = 0
    for names in registries:
        for name in names:
            for i in range(len(name) - 1):
                typo = name[:i] + name[i + 1] + name[i] + name[i + 2:]
                if typo in names or typo == name:
                    continue
                total += 1
                hint = did_you_mean(typo, names)
                if not hint:
                    continue
                got = hint[len(" (did you mean '"):-len("'?)")]
                assert edit_distance(typo, got) == 1, (typo, got)
                same += got == name
    assert total > 100 and same >= total - 10


# ------------------------------------------------------------------ the run call, written once
_VALUES = {  # a valid value other than the default for each named parameter of a run call
    "algorithm": "sgp", "topology": "random_directed_push:k=2", "data": "synthetic:n_samples=200",
    "model": "mlp", "rounds": 3, "seed": 7, "n_clients": 6, "partition": "iid",
    "partition_params": {"val": 0.1}, "model_params": {"hidden": [4]},
}


def test_the_run_call_is_written_once() -> None:
    """:class:`topofl.api.RunCall` is the one definition: both doors' signatures, the keys of
    a config, the defaults ``topofl list`` shows and the documented parameters follow it; a
    keyword added anywhere else, or added there but read nowhere, fails here."""
    import dataclasses
    import inspect

    fields = [f.name for f in dataclasses.fields(tf.api.RunCall)]
    run_sig = inspect.signature(tf.run).parameters
    prep_sig = inspect.signature(tf.api.prepare).parameters
    assert list(run_sig) == [*[p for p in prep_sig if p != "kwargs"], "overwrite", "kwargs"]
    assert set(prep_sig) - {"kwargs"} == set(fields) == set(tf.api.RUN_KEYS)
    assert {k: p.default for k, p in prep_sig.items() if k != "kwargs"} == \
        tf.api.run_defaults() == dataclasses.asdict(tf.api.RunCall())
    assert [p for p in prep_sig if prep_sig[p].kind is prep_sig[p].POSITIONAL_OR_KEYWORD] == \
        list(tf.api.POSITIONAL)
    # a config's keys: every named parameter, every run setting, the hyper-parameters
    keys = tf.config.run_keys("dsgd")
    assert set(fields) <= set(keys)
    assert {f.name for f in dataclasses.fields(tf.engine.RunConfig)} - {"rounds", "seed"} <= \
        set(keys)
    # the documented parameters (the manual's API page): every named parameter, in the
    # docstrings of run and of RunCall
    run_doc, call_doc = tf.run.__doc__ or "", tf.api.RunCall.__doc__ or ""
    for name in fields:
        assert name in run_doc.split("Returns")[0], name
        assert f"    {name} :" in call_doc, name
    assert set(_VALUES) == set(fields)  # this test's own list follows too


def test_every_named_parameter_of_a_run_call_is_read() -> None:
    # each one, set to a value other than its default, reaches the checked call
    p = tf.api.prepare(*[_VALUES[k] for k in tf.api.POSITIONAL],
                       **{k: v for k, v in _VALUES.items() if k not in tf.api.POSITIONAL})
    seen = {**p.call, "algorithm": p.algorithm.name, "rounds": p.run.rounds, "seed": p.run.seed}
    for name, value in _VALUES.items():
        assert seen[name] == value, (name, seen[name])
    # the signatures are written in source: Python's own errors, one line each
    with pytest.raises(TypeError, match=r"^prepare\(\) takes from 0 to 5 positional "
                                        "arguments but 6 were given$"):
        tf.api.prepare("dsgd", "ring", "digits", "logistic", 3, 4)
    with pytest.raises(TypeError, match=r"^run\(\) got multiple values for argument "
                                        "'algorithm'$"):
        tf.run("dsgd", algorithm="sgp")
