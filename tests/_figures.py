"""Helpers shared by the figure tests: readable figures, running a script of ``paper_figures/``
in this process, and the checks every result's Markdown and JSON verdict must pass."""

from __future__ import annotations

import json
import runpy
import sys
from pathlib import Path
from typing import Any

import pytest

from topofl import figures

FIGS = Path(__file__).resolve().parents[1] / "paper_figures"


def assert_readable(fig: Any) -> None:
    """Every visible axes has both labels; no legend overlaps the area of any axes."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    axes = [ax for ax in fig.axes if ax.get_visible() and ax.axison]
    assert axes, "the figure has no visible axes"
    boxes = [ax.get_window_extent(renderer) for ax in axes]
    for ax in axes:
        assert ax.get_xlabel().strip(), f"unlabelled x axis in {ax.get_title()!r}"
        assert ax.get_ylabel().strip(), f"unlabelled y axis in {ax.get_title()!r}"
    legends = [ax.get_legend() for ax in axes] + list(fig.legends)
    for leg in legends:
        if leg is None:
            continue
        lb = leg.get_window_extent(renderer)
        for ax, ab in zip(axes, boxes):
            assert not lb.overlaps(ab), f"a legend covers the axes {ax.get_title()!r}"


def script(name: str) -> dict[str, Any]:
    """The globals of ``paper_figures/fig_<name>.py``, run as a module (not as ``__main__``)
    with its folder on ``sys.path`` for its sibling modules."""
    sys.path.insert(0, str(FIGS))
    try:
        return runpy.run_path(str(FIGS / f"fig_{name}.py"), run_name="topofl_figure_test")
    finally:
        sys.path.remove(str(FIGS))


def run_quick(name: str, out: Path) -> Any:
    """Run a script's ``main`` at ``--quick`` into ``out``; the last figure it drew (or None)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.close("all")
    mod = script(name)
    sys.path.insert(0, str(FIGS))
    try:
        assert mod["main"](["--quick", "--out", str(out)]) == 0
    finally:
        sys.path.remove(str(FIGS))
    nums = plt.get_fignums()
    return plt.figure(nums[-1]) if nums else None


def patch_figures(monkeypatch: pytest.MonkeyPatch, name: str, value: Any) -> None:
    """Replace ``name`` wherever ``topofl.figures`` looks it up: in the package and in each of
    its modules that holds it (``_root``, ``code_fingerprint``, ``current_codes``, ...)."""
    holders = [m for key, m in sorted(sys.modules.items())
               if (key == "topofl.figures" or key.startswith("topofl.figures."))
               and hasattr(m, name)]
    assert holders, f"no module of topofl.figures holds {name!r}"
    for module in holders:
        monkeypatch.setattr(module, name, value)


def verdict(name: str, out: Path, scale: str = "quick") -> tuple[str, dict[str, Any]]:
    """The Markdown and the JSON verdict of a result, checked against each other: a verdict of
    the four, the checks that decide it, the claim, seeds, data and code fingerprint."""
    md = (out / f"{name}.md").read_text(encoding="utf-8")
    v = json.loads((out / f"{name}.json").read_text(encoding="utf-8"))
    assert v["name"] == name and v["scale"] == scale
    assert v["verdict"] in figures.checks.VERDICTS and f"**Verdict:** {v['verdict']}" in md
    assert v["verdict"] == figures.verdict(
        figures.Check(c["name"], c["outcome"], "", "", headline=c.get("headline", False))
        for c in v["checks"])
    # the Markdown's Measured line names the stand-ins that ran (the JSON keeps the words)
    measured = figures.config.mark_stand_ins(v["measured"], v["stand_in"])
    assert v["claim"] and v["claim"] in md and v["measured"] and measured in md
    for c in v["checks"]:
        assert f"| {c['outcome']} |" in md
    assert v["code"] in figures.runs.current_codes() and v["code"] in md
    assert isinstance(v["seeds"], list) and isinstance(v["stand_in"], dict)
    assert isinstance(v["optimizer_state"], list) and "optimizer state (momentum_state)" in md
    assert bool(v["optimizer_state"]) == bool(v["seeds"])  # stated for every training result
    return md, v


_QUICK_OUT: list[Path] = []  # the session's folder, shared by every module importing the fixture


@pytest.fixture(name="quick_out", scope="session")
def quick_out_fixture(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One output folder for every ``--quick`` run of the session (import this fixture into a
    test module): a script run by two tests, or whose runs another script shares, runs once;
    the second reuses the cached runs (same config, same code)."""
    if not _QUICK_OUT:  # each importing module instantiates the fixture: one folder for all
        _QUICK_OUT.append(tmp_path_factory.mktemp("figures_quick"))
    return _QUICK_OUT[0]


def raw_config(config: str) -> dict[str, Any]:
    """The TOML of ``paper_figures/configs/<config>.toml`` as written (no scale applied)."""
    import tomllib

    return tomllib.loads((FIGS / "configs" / f"{config}.toml").read_text(encoding="utf-8"))


@pytest.fixture(name="close_figures")
def close_figures_fixture() -> Any:
    """Close every matplotlib figure a test left open (``@pytest.mark.usefixtures``)."""
    import matplotlib.pyplot as plt

    yield
    plt.close("all")
