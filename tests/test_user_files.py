"""Issue 81, item 2: a user's files are theirs. A run replaces nothing it did not make
without ``overwrite=True``, resolving ``..`` and links before it looks (DESIGN.md).

Before: ``records_path="g/../f/keep.jsonl"`` (and ``topofl run --out g/../f/keep.jsonl``,
exit 0) replaced ``f/keep.jsonl`` when ``g/`` did not exist yet (``Path.exists`` saw no file,
the writer made ``g`` and wrote through it); the same with ``checkpoint_path``.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import topofl as tf
from topofl.cli import main
from topofl.exceptions import OutputExistsError

RUN = {"topology": "ring", "n_clients": 4, "rounds": 1, "batch_size": 4, "spectral": False}
MINE = {"keep.jsonl": b"my notes, not records\n", "keep.pt": b"my weights, not a checkpoint",
        "keep.md": b"# mine\n"}

# Each route reaches the folder f/ of the user's files from the working folder: through a
# folder that does not exist and `..` (the case that got through), a real folder, a link to
# f/ (its `..` is the working folder, f/'s parent), or f/ itself.
FOLDER = st.sampled_from(["f", "link_dir", "g/../f", "g/h/../../f", "sub/../f",
                          "link_dir/../f", "g/../link_dir", "sub/../link_dir/../f"])
DETOUR = st.lists(st.sampled_from(["g/..", "sub/..", "link_dir/..", "g/h/../.."]),
                  max_size=2).map("/".join)


@contextlib.contextmanager
def _user_folder() -> Iterator[Path]:
    """A working folder holding the user's files in f/, a folder sub/, a link to f/ and
    links to each file; made the current folder."""
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp).resolve()
        (base / "f").mkdir()
        (base / "sub").mkdir()
        for name, content in MINE.items():
            (base / "f" / name).write_bytes(content)
            os.utime(base / "f" / name, (1_000_000_000, 1_000_000_000))  # an old file
            (base / f"link_{name}").symlink_to(base / "f" / name)
        (base / "link_dir").symlink_to(base / "f", target_is_directory=True)
        here = os.getcwd()
        os.chdir(base)
        try:
            yield base
        finally:
            os.chdir(here)


def _snapshot(base: Path) -> dict[str, tuple[bytes | str, int]]:
    """Every entry under ``base``: a file's bytes and mtime, a link's target."""
    out: dict[str, tuple[bytes | str, int]] = {}
    for root, dirs, files in os.walk(base):
        for name in dirs + files:
            p = Path(root) / name
            st_ = p.lstat()
            out[str(p.relative_to(base))] = ((os.readlink(p), 0) if p.is_symlink() else
                                              (p.read_bytes(), st_.st_mtime_ns) if p.is_file()
                                              else ("dir", 0))
    return out


def _path(detour: str, folder: str, name: str, via_link: bool, absolute: bool,
          base: Path) -> str:
    """A path to the user's file ``name``: through ``folder``, or the link to it beside f/."""
    parts = [detour] if detour else []
    parts += [f"link_{name}"] if via_link else [folder, name]
    path = "/".join(parts)
    return str(base / path) if absolute else path


ROUTES = st.tuples(DETOUR, FOLDER, st.booleans(), st.booleans())


def _refused(kind: str, path: str) -> None:
    if kind == "records_path":
        with pytest.raises(OutputExistsError, match=r"exists; pass overwrite=True"):
            tf.run("dsgd", **RUN, records_path=path)
    elif kind == "checkpoint_path":
        with pytest.raises(OutputExistsError, match=r"is not a topofl checkpoint; pass "
                           r"overwrite=True"):
            tf.run("dsgd", **RUN, checkpoint_path=path, checkpoint_every=1)
    else:
        assert main(["run", "--topology", "ring", "--set", "rounds=1", "--set", "n_clients=4",
                     "--set", "spectral=false", "--out", path]) == 2


@pytest.mark.parametrize("kind,name", [("records_path", "keep.jsonl"),
                                       ("checkpoint_path", "keep.pt"), ("--out", "keep.jsonl")])
@settings(max_examples=8, deadline=None, suppress_health_check=list(HealthCheck))
@given(route=ROUTES)
def test_a_users_file_is_never_touched_without_overwrite(
        kind: str, name: str, route: tuple[str, str, bool, bool]) -> None:
    detour, folder, via_link, absolute = route
    with _user_folder() as base:
        before = _snapshot(base)
        _refused(kind, _path(detour, folder, name, via_link, absolute, base))
        # nothing written, replaced or made: not g/ either
        assert _snapshot(base) == before


@pytest.mark.parametrize("kind,name", [("records_path", "keep.jsonl"),
                                       ("checkpoint_path", "keep.pt")])
@settings(max_examples=3, deadline=None, suppress_health_check=list(HealthCheck))
@given(route=ROUTES)
def test_with_overwrite_the_run_proceeds_and_writes_the_file_the_path_names(
        kind: str, name: str, route: tuple[str, str, bool, bool]) -> None:
    detour, folder, via_link, absolute = route
    with _user_folder() as base:
        path = _path(detour, folder, name, via_link, absolute, base)
        extra = {"checkpoint_every": 1} if kind == "checkpoint_path" else {}
        res = tf.run("dsgd", **RUN, **{kind: path}, **extra, overwrite=True)
        assert res.records.final("test_acc_mean") >= 0
        target = base / "f" / name
        assert target.read_bytes() != MINE[name]  # replaced, as asked
        if kind == "records_path":
            assert target.read_bytes().startswith(b'{"header"')
            assert res.records.config["records_path"] == path  # the header: as given
        if via_link:  # the link is the user's too: written through, kept
            assert (base / f"link_{name}").is_symlink()
        assert not (base / "g").exists()  # the folder a `..` leaves is not made


@settings(max_examples=8, deadline=None, suppress_health_check=list(HealthCheck))
@given(route=ROUTES)
def test_bench_out_is_resolved_before_it_is_looked_at(route: tuple[str, str, bool, bool]
                                                      ) -> None:
    detour, folder, via_link, absolute = route
    with _user_folder() as base:
        before = _snapshot(base)
        path = _path(detour, folder, "keep.md", via_link, absolute, base)
        assert main(["bench", "--model", "logistic", "--n", "2", "--rounds", "1",
                     "--no-memory", "--out", path]) == 2
        assert _snapshot(base) == before


def test_the_per_client_file_beside_a_new_records_path_is_the_users() -> None:
    # before: the records writer removed f/new.clients.arrows ("another run's values")
    with _user_folder() as base:
        (base / "f" / "new.clients.arrows").write_bytes(b"mine")
        before = _snapshot(base)
        with pytest.raises(OutputExistsError, match=r"new\.clients\.arrows, the per-client "
                           r"file of records_path g/\.\./f/new\.jsonl .*exists"):
            tf.run("dsgd", **RUN, records_path="g/../f/new.jsonl")
        assert _snapshot(base) == before
        tf.run("dsgd", **RUN, records_path="g/../f/new.jsonl", overwrite=True)
        assert (base / "f" / "new.jsonl").is_file() and not (base / "g").exists()


@pytest.mark.parametrize("path", ["f", "link_dir", "g/../f", "g/../link_dir"])
def test_a_folder_is_never_a_checkpoint_even_with_overwrite(path: str) -> None:
    with _user_folder() as base:
        before = _snapshot(base)
        with pytest.raises(OutputExistsError, match="is a folder that is not a topofl "
                           "checkpoint; it is never replaced"):
            tf.run("dsgd", **RUN, checkpoint_path=path, checkpoint_every=1, overwrite=True)
        assert _snapshot(base) == before


def test_another_runs_old_checkpoint_beside_checkpoint_path_is_kept_without_overwrite() -> None:
    # before: the first save removed f/ck.pt.old, a sharded checkpoint folder of another run
    # (the copy an interrupted save leaves), without overwrite
    import json

    from topofl.distributed.checkpoint import FORMAT, META

    with _user_folder() as base:
        old = base / "f" / "ck.pt.old"
        old.mkdir()
        (old / META).write_text(json.dumps({"format": FORMAT}))
        before = _snapshot(base)
        with pytest.raises(OutputExistsError, match=r"ck\.pt\.old, beside checkpoint_path "
                           r"g/\.\./f/ck\.pt .* holds a topofl checkpoint"):
            tf.run("dsgd", **RUN, checkpoint_path="g/../f/ck.pt", checkpoint_every=1)
        assert _snapshot(base) == before
        tf.run("dsgd", **RUN, checkpoint_path="g/../f/ck.pt", checkpoint_every=1,
               overwrite=True)
        assert (base / "f" / "ck.pt").is_file() and not old.exists()
