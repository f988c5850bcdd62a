"""Every Python block of the README and of the manual's pages (``analysis/manual``, where the
README's sections moved: issue 44) runs as written, prints what it shows, and prints the
numbers its comments state (issue 23: a block of bare expressions printed nothing as a script,
and a comment's claim was false). The README stays a front page that links every page it
dropped.

The blocks that train (``tf.run``) take tens of seconds, and the push-sum block a few: they
run under ``-m slow``.
"""

from __future__ import annotations

import ast
import contextlib
import io
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch

import topofl as tf
from topofl.algorithms.base import _REGISTRY as _ALGORITHMS
from topofl.data.datasets.registry import _REGISTRY as _DATASETS
from topofl.models._registry import _REGISTRY as _MODELS

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
MANUAL = ROOT / "analysis" / "manual"
GUIDE = MANUAL / "guide"
#: The README and the manual's own pages (not the copies it generates at build time).
PAGES = [README, *sorted(p for p in MANUAL.rglob("*.md")
                         if not {"_generated", "gallery"} & set(p.relative_to(MANUAL).parts))]
#: ``(page, block)``: every Python block of every page, in page order.
BLOCKS = [(page, block) for page in PAGES
          for block in re.findall(r"```python\n(.*?)```", page.read_text(encoding="utf-8"), re.S)]
_NUMBER = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?(?![/\d])")
#: A comment's number: ``~`` before it states a float32 training outcome whose last digit
#: follows the CPU's kernels (an Intel and an AMD CPU differ there), checked to within one
#: unit of its last stated decimal; a plain number is checked to its stated decimals.
_STATED = re.compile(r"~?" + _NUMBER.pattern)
#: Blocks that train or measure products over long sequences: under ``-m slow``.
_SLOW = ("tf.run(", "pushsum_constants(")


@pytest.fixture(autouse=True)
def _registries_as_they_were() -> Iterator[None]:
    """What a block registers (its own algorithm, graph family, model, dataset) is gone after
    it, so a block runs again and other tests see the built-in registries only."""
    registries = (_ALGORITHMS, _MODELS, _DATASETS)
    saved = [r.snapshot() for r in registries]
    families = dict(tf.topologies.REGISTRY._items)
    yield
    for registry, (table, originals) in zip(registries, saved):
        registry.restore(table, originals)
    tf.topologies.REGISTRY._items.clear()
    tf.topologies.REGISTRY._items.update(families)


def _where(page: Path) -> str:
    return page.relative_to(ROOT).as_posix()


def _ids() -> list[Any]:
    out = []
    counts: dict[Path, int] = {}
    for page, block in BLOCKS:
        k = counts[page] = counts.get(page, -1) + 1
        marks = [pytest.mark.slow] if any(s in block for s in _SLOW) else []
        name = "README" if page == README else page.relative_to(MANUAL).with_suffix("").as_posix()
        out.append(pytest.param(f"{_where(page)} block {k}", block, marks=marks,
                                id=f"{name}-block{k}"))
    return out


def _stated(block: str) -> list[tuple[int, str | None]]:
    """``(line, comment)`` of every ``print(...)`` call of the block, in source order, with
    the comment on its line when that comment starts with a number."""
    lines = block.splitlines()
    out = []
    for node in ast.walk(ast.parse(block)):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                and node.func.id == "print"):
            text = lines[node.lineno - 1]
            comment = text.split("#", 1)[1].strip() if "#" in text else ""
            m = _STATED.match(comment)
            out.append((node.lineno, m.group(0) if m else None))
    return sorted(out)


@pytest.mark.parametrize(("k", "block"), _ids())
def test_readme_block_runs_and_prints_what_it_says(k: str, block: str,
                                                   tmp_path: Path) -> None:
    printed: list[str] = []

    def record(*args: Any, **kwargs: Any) -> None:
        buf = io.StringIO()
        print(*args, **{**kwargs, "file": buf})
        printed.append(buf.getvalue())

    cwd = os.getcwd()
    os.chdir(tmp_path)  # what a block writes (runs/) goes here
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            exec(compile(block, k, "exec"),  # noqa: S102 - the point
                 {"__name__": "__main__", "print": record})
    finally:
        os.chdir(cwd)
    stated = _stated(block)
    assert len(printed) == len(stated) > 0, (
        f"block {k} printed {len(printed)} times for {len(stated)} print calls: a block must "
        "show its results when run as a script")
    for (line, number), out in zip(stated, printed):
        if number is None:
            continue
        got = _NUMBER.search(out)
        assert got is not None, (k, line, out)
        about = number.startswith("~")
        number = number.lstrip("~")
        decimals = len(number.split(".")[1]) if "." in number and "e" not in number.lower() \
            else None
        value = float(got.group(0))
        if about and decimals is not None:
            assert abs(value - float(number)) <= 10.0 ** -decimals * (1 + 1e-9), (
                k, line, number, out)
        elif decimals is None:
            assert value == pytest.approx(float(number), rel=0.05), (k, line, number, out)
        else:
            assert round(value, decimals) == float(number), (k, line, number, out)


def test_the_readme_and_the_manual_have_python_blocks() -> None:
    assert any(page == README for page, _ in BLOCKS)  # the taste
    assert len(BLOCKS) >= 10 and {p.name for p, _ in BLOCKS} >= {
        "graphs.md", "data.md", "training.md", "extending.md"}


def _block(marker: str) -> str:
    (block,) = [b for _, b in BLOCKS if marker in b]
    return block


def test_the_own_algorithm_block_registers_and_tracks_the_optimum() -> None:
    """The README's "Your own algorithm" block up to its training run (which runs under
    ``-m slow`` with every block): the class registers, a config's name builds it, and it
    prints what its comments say (the D-SGD bias, the exact optimum)."""
    block = _block('register_algorithm("my_tracking")')
    head = block.split("\nres = tf.run(")[0]
    printed: list[str] = []
    scope: dict[str, Any] = {"__name__": "__main__",
                             "print": lambda *a: printed.append(" ".join(map(str, a)))}
    exec(compile(head, "README.md own algorithm", "exec"), scope)  # noqa: S102 - the point
    assert printed == ["0.0604", "True"]
    algo = tf.api.prepare("my_tracking", "ring", lr=0.05).algorithm
    assert algo.name == "my_tracking" and algo.phases[0].lr == 0.05
    # gradient tracking by hand on the toy: x_1 = W (x_0 - lr y_1) with y_1 = W g(x_0) ...
    # after one round every tracker averages the gradients it has seen: the mean of y is the
    # mean gradient (W is doubly stochastic), as the method requires
    c = torch.arange(4.0, dtype=torch.float64).unsqueeze(1)
    trace = tf.engine.run_rounds(scope["my_tracking"](lr=0.1), torch.zeros_like(c),
                                 tf.topologies.ring(4), lambda z, ph, rnd: z - c, rounds=1)
    y = trace.state.own.y
    assert float(y.mean()) == pytest.approx(float((trace.state.own.g).mean()), abs=1e-15)
    assert float(y.mean()) == pytest.approx(-1.5, abs=1e-15)  # mean of g(0) = 0 - c


def test_the_manual_names_the_extension_points() -> None:
    text = (GUIDE / "extending.md").read_text(encoding="utf-8")
    for name in ("## Your own algorithm", "register_algorithm", "tf.topologies.register",
                 "register_model", "register_dataset"):
        assert name in text, name
    text = (GUIDE / "graphs.md").read_text(encoding="utf-8")
    for name in ("from_networkx", "from_pyg", "from_adjacency", "to_networkx"):
        assert name in text, name


_LINK = re.compile(r"\]\(([^)\s]+)\)")


def test_the_readme_is_a_front_page_that_links_the_manual() -> None:
    """At most 300 lines, the two commands and the demo kept, every page of the user guide
    linked, and every relative link of the README leads to a file of the clone."""
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 300
    assert text.count("pip install torch==") == 2 and "topofl demo" in text
    targets = {t.split("#")[0] for t in _LINK.findall(text) if "://" not in t}
    for target in targets - {""}:
        assert (ROOT / target).exists(), target
    pages = {p.relative_to(ROOT).as_posix() for p in GUIDE.glob("*.md")}
    assert pages and pages <= targets, sorted(pages - targets)
    assert "analysis/manual/getting_started.md" in targets


def test_the_manual_includes_the_readme_parts_it_shows() -> None:
    """The home and getting-started pages include the README's marked parts (one text, two
    places): every marker they name is in the README, once, start before end."""
    text = README.read_text(encoding="utf-8")
    for page in (MANUAL / "index.md", MANUAL / "getting_started.md"):
        for marker in re.findall(r":(?:start-after|end-before): (<!-- [\w-]+ -->)",
                                 page.read_text(encoding="utf-8")):
            assert text.count(marker) == 1, (page.name, marker)
    for part in ("intro", "setup", "taste"):
        assert text.index(f"<!-- {part}-start -->") < text.index(f"<!-- {part}-end -->")
