"""The package as ``python -m build`` makes it, checked without building it: the version is
written once, the metadata is complete, the wheel holds the package, its ``py.typed`` and the
figures' configs and claims (where :data:`topofl.figures.config.INSTALLED_PRESETS` reads them)
and nothing of the repository's own, and the doctests' ``conftest.py`` that ships with it
works outside a clone.

The file lists and the metadata are the build backend's own (hatchling's builders asked what
they would write); ``.ci/run`` builds the wheel and the sdist, checks them with
``twine check --strict`` and runs the demo and the doctests from the wheel installed in a
fresh environment.
"""

from __future__ import annotations

import doctest
import importlib
import re
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

import topofl as tf
from tests import _figures
from topofl import conftest as package_conftest
from topofl.figures import config as figure_config
from topofl.figures import results as figure_results

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
PROJECT = PYPROJECT["project"]
HATCH = PYPROJECT["tool"]["hatch"]


def _name(requirement: str) -> str:
    """``"pytest>=7.4"`` -> ``"pytest"``."""
    return re.split(r"[<>=!~;\[ ]", requirement, maxsplit=1)[0].lower()


# ----------------------------------------------------------------------------- the version


def test_the_version_is_written_once() -> None:
    assert "version" not in PROJECT and PROJECT["dynamic"] == ["version"]
    path = ROOT / HATCH["version"]["path"]
    assert path == ROOT / "topofl" / "_version.py"
    literal = re.findall(r'^__version__ = "([^"]+)"$', path.read_text(encoding="utf-8"), re.M)
    assert literal == [tf.__version__] == ["0.1.0"]
    assert tf.figures.code_fingerprint().startswith("0.1.0+")


# ----------------------------------------------------------------------------- metadata


def test_the_metadata_is_complete() -> None:
    assert PROJECT["license"] == "MIT"
    assert PROJECT["readme"] == {"file": "README.md", "content-type": "text/markdown"}
    assert PROJECT["requires-python"] == ">=3.10" and PROJECT["authors"]
    classifiers = PROJECT["classifiers"]
    assert "Typing :: Typed" in classifiers and (ROOT / "topofl" / "py.typed").is_file()
    assert not [c for c in classifiers if c.startswith("License ::")]  # the SPDX field says it
    extras = {k: {_name(r) for r in v} for k, v in PROJECT["optional-dependencies"].items()}
    assert set(extras) == {"mnist", "test", "package", "docs", "dev"}
    assert extras["test"] | extras["package"] <= extras["dev"]
    assert {"build", "twine", "hatchling"} <= extras["package"]
    assert {"sphinx", "numpydoc", "myst-parser", "sphinx-gallery",
            "pydata-sphinx-theme"} <= extras["docs"]
    module, _, func = PROJECT["scripts"]["topofl"].partition(":")
    assert callable(getattr(importlib.import_module(module), func))


def _core_metadata() -> str:
    hatchling = pytest.importorskip("hatchling.builders.wheel")
    from hatchling.metadata.spec import get_core_metadata_constructors

    builder = hatchling.WheelBuilder(str(ROOT))
    versions = get_core_metadata_constructors()
    newest = max(versions, key=lambda v: tuple(map(int, v.split("."))))
    return str(versions[newest](builder.metadata))


def test_the_core_metadata_the_wheel_carries() -> None:
    text = _core_metadata()
    head, _, description = text.partition("\n\n")
    fields: dict[str, list[str]] = {}
    for line in head.splitlines():
        key, _, value = line.partition(": ")
        fields.setdefault(key, []).append(value)
    assert fields["Name"] == ["topofl"] and fields["Version"] == [tf.__version__]
    assert fields["License-Expression"] == ["MIT"]
    assert fields["Description-Content-Type"] == ["text/markdown"]
    assert fields["Requires-Python"] == [">=3.10"]
    assert sorted(fields["Provides-Extra"]) == ["dev", "docs", "mnist", "package", "test"]
    assert len(fields["Classifier"]) == len(PROJECT["classifiers"])
    assert any(r.startswith("torch>=") for r in fields["Requires-Dist"])
    assert description.strip() == (ROOT / "README.md").read_text(encoding="utf-8").strip()


# ----------------------------------------------------------------------------- contents


def _wheel_files() -> dict[str, str]:
    """``{path in the wheel: path in the clone}`` of every file the wheel would hold."""
    hatchling = pytest.importorskip("hatchling.builders.wheel")
    builder = hatchling.WheelBuilder(str(ROOT))
    return {f.distribution_path.replace("\\", "/"): f.path
            for f in builder.recurse_included_files()}


def test_the_wheel_holds_the_package_and_the_presets_only() -> None:
    files = _wheel_files()
    package = ROOT / "topofl"
    sources = {p.relative_to(ROOT).as_posix() for p in package.rglob("*.py")
               if "__pycache__" not in p.parts}
    configs = sorted((ROOT / "paper_figures" / "configs").glob("*.toml"))
    assert configs
    presets = {f"topofl/figures/paper/configs/{p.name}": str(p) for p in configs}
    presets["topofl/figures/paper/claims.toml"] = str(ROOT / "paper_figures" / "claims.toml")
    expected = sources | {"topofl/py.typed", "topofl/conftest.py"} | set(presets)
    assert set(files) == expected, sorted(set(files) ^ expected)
    for inside, outside in presets.items():  # copied from paper_figures/
        assert Path(files[inside]) == Path(outside)
    # where the installed package looks for them
    here = figure_config.INSTALLED_PRESETS.relative_to(package.resolve().parent).as_posix()
    assert f"{here}/claims.toml" in files


def test_the_sdist_holds_what_the_wheel_is_built_from() -> None:
    sdist = pytest.importorskip("hatchling.builders.sdist")
    builder = sdist.SdistBuilder(str(ROOT))
    paths = {f.distribution_path.replace("\\", "/") for f in builder.recurse_included_files()}
    tops = {p.split("/")[0] for p in paths}
    # (the built sdist adds PKG-INFO and the .gitignore that hatchling always copies)
    assert tops == {"topofl", "paper_figures", "README.md", "pyproject.toml"}
    assert {p for p in paths if p.startswith("paper_figures/")} == {
        f"paper_figures/configs/{p.name}"
        for p in (ROOT / "paper_figures" / "configs").glob("*.toml")
    } | {"paper_figures/claims.toml"}


# ----------------------------------------------------------------------------- installed


def test_an_installed_topofl_reads_the_presets_it_carries(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Where no clone is beside the package, the configs and claims come from the copy the
    wheel installs; the figure scripts and results stay a clone's."""
    installed = tmp_path / "paper"
    shutil.copytree(ROOT / "paper_figures" / "configs", installed / "configs")
    shutil.copy(ROOT / "paper_figures" / "claims.toml", installed / "claims.toml")
    clone: dict[str, Any] = {
        "config": tf.figures.load_config("dcliques_09_mnist", "quick"),
        "claim": tf.figures.claim_of("dcliques_09"),
        "bars": tf.figures.gate_bars(),
    }

    def no_clone() -> Path:
        raise figure_config.FigureError("the figure scripts are not installed with the package")

    _figures.patch_figures(monkeypatch, "_root", no_clone)
    monkeypatch.setattr(figure_config, "INSTALLED_PRESETS", installed)
    assert tf.figures.load_config("dcliques_09_mnist", "quick") == clone["config"]
    assert tf.figures.claim_of("dcliques_09") == clone["claim"]
    assert tf.figures.gate_bars() == clone["bars"]
    assert tf.figures.margin("dcliques_09", "accuracy") == 0.01
    with pytest.raises(figure_config.FigureError, match="not installed"):
        figure_results.available()  # the scripts: a clone's
    monkeypatch.setattr(figure_config, "INSTALLED_PRESETS", tmp_path / "absent")
    with pytest.raises(figure_config.FigureError, match="not installed"):
        tf.figures.claim_of("dcliques_09")


def test_the_doctests_conftest_matches_the_repository() -> None:
    flags = PYPROJECT["tool"]["pytest"]["ini_options"]["doctest_optionflags"]
    expected = 0
    for flag in flags:
        expected |= doctest.register_optionflag(flag)  # returns the registered flag
    assert package_conftest.OPTION_FLAGS == expected
    assert package_conftest._in_a_clone()
    for name in package_conftest.NEEDS_CLONE:  # each names a function with a doctest
        module, _, attr = name.rpartition(".")
        obj = getattr(importlib.import_module(module), attr)
        assert ">>>" in (obj.__doc__ or ""), name
