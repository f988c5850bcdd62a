"""One declared shape for every algorithm (issue 82): a factory's signature is written in its
source and names hyper-parameter groups; its flat keywords are the groups' fields, typed for
mypy by a ``TypedDict`` that must list exactly those fields; the groups check themselves; a
config's ``[sgd]`` table and a group object make the same run as the flat keys."""

from __future__ import annotations

import ast
import dataclasses
import inspect
import re
import textwrap
from pathlib import Path

import pytest

import topofl as tf
from topofl.algorithms.hparams import (
    Aggregation,
    Compressor,
    Finetune,
    Group,
    LocalSGD,
    Optimizer,
    Sampling,
    flat_parameters,
    flatten_groups,
    group_parameters,
)

ROOT = Path(tf.__file__).parent
ALGOS = sorted(n for n, f in tf.algorithms.ALGORITHMS.items()
               if f.__module__.startswith("topofl.algorithms."))
MAX_PARAMETERS = 6


@pytest.fixture(params=ALGOS)
def name(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def test_the_built_in_algorithms_are_all_seen() -> None:
    assert len(ALGOS) == 42 and {"dsgd", "dfedpgp", "dpfl", "pfeddst", "fedavg"} <= set(ALGOS)


def test_a_factory_signature_is_its_source(name: str) -> None:
    f = tf.algorithms.ALGORITHMS[name]
    assert inspect.isfunction(f) and "__signature__" not in vars(f) and not hasattr(
        f, "__wrapped__"), f"{name}: its signature is built, not written"
    assert f.__name__ == name or name in ("bggc",)
    params = inspect.signature(f).parameters
    assert len(params) <= MAX_PARAMETERS, (name, list(params))


def _decorators(node: ast.FunctionDef) -> list[str]:
    out = []
    for d in node.decorator_list:
        target = d.func if isinstance(d, ast.Call) else d
        out.append(ast.unparse(target))
    return out


def test_register_algorithm_is_the_only_factory_decorator() -> None:
    found = {}
    for path in sorted((ROOT / "algorithms").glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef) and "register_algorithm" in _decorators(node):
                found[node.name] = _decorators(node)
        assert "__signature__" not in path.read_text(encoding="utf-8"), path.name
    assert len(found) >= 32
    assert {k: v for k, v in found.items() if v != ["register_algorithm"]} == {}


def _keywords_typed_dict(name: str) -> type | None:
    f = tf.algorithms.ALGORITHMS[name]
    var = [p for p in inspect.signature(f).parameters.values() if p.kind is p.VAR_KEYWORD]
    if not var:
        return None
    m = re.fullmatch(r"Unpack\[(\w+)\]", str(var[0].annotation))
    assert m, f"{name}: **{var[0].name} is typed {var[0].annotation!r}, not Unpack[<TypedDict>]"
    module = inspect.getmodule(f)
    return getattr(module, m.group(1))  # type: ignore[no-any-return]


def test_the_typed_keywords_are_the_groups_fields(name: str) -> None:
    groups = group_parameters(tf.algorithms.ALGORITHMS[name])
    td = _keywords_typed_dict(name)
    fields: dict[str, str] = {}
    for g in groups.values():
        for f in dataclasses.fields(g):  # type: ignore[arg-type]
            assert f.name not in fields, f"{name}: {f.name} is a field of two of its groups"
            fields[f.name] = str(f.type)
    if td is None:
        assert not groups, f"{name} takes groups but no **keywords: flat keys would fail"
        return
    keys = set(td.__required_keys__) | set(td.__optional_keys__)  # type: ignore[attr-defined]
    assert keys == set(fields), (name, keys ^ set(fields))
    annotations: dict[str, str] = {}
    for klass in reversed(td.__mro__):
        annotations.update({k: v if isinstance(v, str) else getattr(v, "__forward_arg__", v)
                            for k, v in vars(klass).get("__annotations__", {}).items()})
    assert {k: str(annotations[k]) for k in fields} == fields, name


def test_a_group_parameter_never_shadows_a_flat_keyword(name: str) -> None:
    f = tf.algorithms.ALGORITHMS[name]
    groups = group_parameters(f)
    flat = flat_parameters(f)
    assert not set(groups) & set(flat), name
    plain = [p for p in inspect.signature(f).parameters.values()
             if p.name not in groups and p.kind is not p.VAR_KEYWORD]
    assert all(p.name in flat for p in plain)


def test_every_flat_keyword_at_its_default_builds_the_default(name: str) -> None:
    f = tf.algorithms.ALGORITHMS[name]
    base = f()
    for key, p in flat_parameters(f).items():
        built = f(**{key: p.default})
        assert built.hparams == base.hparams and built.phases == base.phases, (name, key)


def test_a_misspelled_keyword_is_a_one_line_type_error(name: str) -> None:
    f = tf.algorithms.ALGORITHMS[name]
    with pytest.raises(TypeError, match=rf"^{name}\(\) got an unexpected keyword argument "
                                        r"'no_such_key'") as info:
        f(no_such_key=1)
    assert "\n" not in str(info.value)


def test_a_group_given_as_an_object_or_flat_builds_the_same(name: str) -> None:
    f = tf.algorithms.ALGORITHMS[name]
    for param, default in group_parameters(f).items():
        fields = {k: getattr(default, k) for k in default.field_names()}
        assert f(**{param: default}).hparams == f(**fields).hparams == f().hparams, name


# ------------------------------------------------------------------------------ the groups


@pytest.mark.parametrize(("make", "match"), [
    (lambda: LocalSGD(lr=0), "lr"),
    (lambda: LocalSGD(momentum=1.0), "momentum"),
    (lambda: LocalSGD(weight_decay=-1), "weight_decay"),
    (lambda: LocalSGD(decay=0), "decay"),
    (lambda: LocalSGD(local_steps=2, local_epochs=1), "either local_steps or local_epochs"),
    (lambda: LocalSGD(local_epochs=[]), "local_epochs"),
    (lambda: Optimizer(lr=-1), "lr"),
    (lambda: Sampling(participation=0), "participation"),
    (lambda: Sampling(sample_seed=-1), "sample_seed"),
    (lambda: Aggregation("clipped"), "tau"),
    (lambda: Aggregation("median", tau=1.0), "tau"),
    (lambda: Compressor(None, ratio=0.5), "ratio"),
    (lambda: Compressor("topk", ratio=2.0), "ratio"),
    (lambda: Finetune(finetune_steps=1, finetune_epochs=1.0), "finetune_steps"),
])
def test_a_group_checks_itself(make: object, match: str) -> None:
    with pytest.raises((ValueError, TypeError), match=match):
        make()  # type: ignore[operator]


def test_a_group_is_frozen_and_replaced_with_its_checks() -> None:
    g = LocalSGD(lr=0.5)
    with pytest.raises(dataclasses.FrozenInstanceError):
        g.lr = 1.0  # type: ignore[misc]
    assert g.with_keywords(momentum=0.5) == LocalSGD(lr=0.5, momentum=0.5)
    with pytest.raises(ValueError, match="momentum"):
        g.with_keywords(momentum=2.0)
    assert isinstance(g, Group) and g.field_names() == (
        "lr", "momentum", "weight_decay", "local_steps", "local_epochs", "decay")


def test_a_number_for_the_first_group_is_its_learning_rate() -> None:
    assert tf.algorithms.dsgd(0.5).hparams == tf.algorithms.dsgd(lr=0.5).hparams
    with pytest.raises(TypeError, match="multiple values for argument 'lr'"):
        tf.algorithms.dsgd(0.5, lr=0.2)


# ------------------------------------------------------------------------------ configs and run


def test_a_config_table_and_a_group_object_make_the_flat_run() -> None:
    base = {"topology": "ring", "n_clients": 8, "rounds": 2}
    flat = tf.config.validate({**base, "lr": 0.5, "momentum": 0.5, "compressor": "topk"})
    table = tf.config.validate({**base, "sgd": {"lr": 0.5, "momentum": 0.5},
                                "compression": {"compressor": "topk"}})
    assert table == flat
    p = tf.api.prepare("dsgd", "ring", n_clients=8, rounds=2,
                       sgd=LocalSGD(lr=0.5, momentum=0.5), compression=Compressor("topk"))
    q = tf.api.prepare("dsgd", "ring", n_clients=8, rounds=2, lr=0.5, momentum=0.5,
                       compressor="topk")
    assert p.algorithm.hparams == q.algorithm.hparams


def test_a_config_table_refuses_what_its_group_lacks() -> None:
    base = {"topology": "ring", "n_clients": 8, "rounds": 2}
    with pytest.raises(tf.config.ConfigTypeError, match=r"\[sgd\] holds the fields of LocalSGD"):
        tf.config.validate({**base, "sgd": {"rate": 0.5}})
    with pytest.raises(tf.config.ConfigTypeError, match="lr is given twice"):
        tf.config.validate({**base, "sgd": {"lr": 0.5}, "lr": 0.1})
    with pytest.raises(tf.config.ConfigTypeError, match="sgd must be a LocalSGD"):
        tf.config.validate({**base, "sgd": 0.5})


def test_flatten_groups_keeps_other_keys() -> None:
    assert flatten_groups(tf.algorithms.dsgd, {"nesterov": True}) == {"nesterov": True}


# ------------------------------------------------------------------------------ mypy


SNIPPET = """
import topofl as tf

tf.algorithms.dsgd(lr=0.1, momentum=0.9, compressor="topk")
tf.algorithms.dsgd(lrr=0.1)
tf.algorithms.fedavg(lr=0.1, participation=0.5, weighting="data_size")
tf.algorithms.fedavg(participatoin=0.5)
tf.algorithms.pfeddst(lr=0.1, peers=3, alpha=0.1)
tf.algorithms.pfeddst(peer=3)
tf.algorithms.dsgd(momentum="high")
"""


def test_mypy_rejects_a_misspelled_keyword_of_three_algorithms(tmp_path: Path) -> None:
    api = pytest.importorskip("mypy.api")
    snippet = tmp_path / "snippet.py"
    snippet.write_text(textwrap.dedent(SNIPPET), encoding="utf-8")
    out, err, status = api.run([str(snippet), "--strict", "--no-error-summary",
                                "--cache-dir", str(ROOT.parent / ".mypy_cache")])
    errors = {int(m.group(1)): m.group(2) for m in
              re.finditer(r"snippet\.py:(\d+): error: (.*)", out)}
    assert status == 1, (out, err)
    assert sorted(errors) == [5, 7, 9, 10], out
    assert "lrr" in errors[5] and "participatoin" in errors[7] and "peer" in errors[9]
    assert "momentum" in errors[10]
