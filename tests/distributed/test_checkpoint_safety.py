"""Sharded checkpoints are read without unpickling anything, every file checked first.

A crafted folder whose pickles would create a file is refused with a clear error by every
entry point (``load_any``, ``topofl.run(resume=...)``, ``topofl run --resume``, the
ranks of a distributed run), and the file is never created. A truncated or corrupted rank
file, or an edited manifest, is refused on every rank, naming the file; a save interrupted
between rank 0's two renames leaves a ``.old`` copy that the loaders fall back to.
"""

from __future__ import annotations

import json
import math
import os
import pickle
import shutil
import warnings
from pathlib import Path
from typing import Any

import pytest
import torch

import topofl as tf
from tests.distributed._launch import launch
from topofl.cli import main
from topofl.distributed import checkpoint as sharded
from topofl.distributed.checkpoint import load_any
from topofl.exceptions import CheckpointError
from topofl.records.columns import copy_records

N = 6
KW: dict[str, Any] = dict(n_clients=N, seed=0, dtype="float64", batch_size=8, progress=False,
                          spectral=False, run_id="s", checkpoint_every=1, lr=0.1, momentum=0.5,
                          eval_every=1)


def _run(rounds: int, tmp: str, tag: str, **kw: Any) -> Any:
    return tf.run("dsgd", "ring", "digits", "logistic", rounds, **KW,
                  checkpoint_path=os.path.join(tmp, f"ck{tag}"),
                  records_path=os.path.join(tmp, f"r{tag}.jsonl"), **kw)


def _write(rank: int, tmp: str) -> str:
    _run(1, tmp, "1")
    _run(2, tmp, "2")
    return "ok"


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two sharded checkpoints of one run, written on 2 gloo ranks: ``ck1`` (round 1) and
    ``ck2`` (round 2), with their records files ``r1.jsonl`` and ``r2.jsonl``."""
    tmp = tmp_path_factory.mktemp("sharded")
    out = launch(2, _write, str(tmp), timeout=60.0, wait=600.0)
    assert all(s == "ok" for s, _ in out.values()), out
    return tmp


@pytest.fixture
def ck(written: Path, tmp_path: Path) -> Path:
    """A fresh copy of the round-2 checkpoint (and both records files) in ``tmp_path``."""
    shutil.copytree(written / "ck2", tmp_path / "ck")
    for name in ("r1.jsonl", "r2.jsonl"):
        shutil.copy(written / name, tmp_path / name)
    return tmp_path / "ck"


class _Payload:
    """Unpickled, it creates the file ``marker`` (what a crafted checkpoint could do)."""

    def __init__(self, marker: Path) -> None:
        self.marker = str(marker)

    def __reduce__(self) -> tuple[Any, ...]:
        return (open, (self.marker, "w"))


def _entry_points(folder: Path, tmp: Path) -> list[str]:
    """The message each entry point raises for ``folder`` (none may succeed)."""
    msgs = []
    with pytest.raises(CheckpointError) as e1:
        load_any(folder)
    msgs.append(str(e1.value))
    with pytest.raises(CheckpointError) as e2:
        sharded.load_full(folder, torch.device("cpu"))
    msgs.append(str(e2.value))
    with pytest.raises(CheckpointError) as e3:
        tf.run("dsgd", "ring", "digits", "logistic", 2, n_clients=4, batch_size=4,
               progress=False, spectral=False, resume=str(folder))
    msgs.append(str(e3.value))
    (tmp / "c.toml").write_text('topology = "ring"\nn_clients = 4\nrounds = 2\nbatch_size = 4\n')
    assert main(["run", str(tmp / "c.toml"), "--out", str(tmp / "cli.jsonl"),
                 "--resume", str(folder)]) == 2
    return msgs


def test_a_pickled_metadata_folder_is_never_unpickled(tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """The torch.distributed.checkpoint layout earlier versions wrote: ``.metadata`` is a
    pickle that ``FileSystemReader.read_metadata`` loaded with ``pickle.load``."""
    marker = tmp_path / "PWNED"
    folder = tmp_path / "evil"
    folder.mkdir()
    (folder / ".metadata").write_bytes(pickle.dumps(_Payload(marker)))
    (folder / "__0_0.distcp").write_bytes(pickle.dumps(_Payload(marker)))
    (folder / "topofl.json").write_text(json.dumps({"round": 1, "n": 4, "kinds": {}}))
    capsys.readouterr()
    msgs = _entry_points(folder, tmp_path)
    err = capsys.readouterr().err
    assert not marker.exists()
    for m in [*msgs, err]:
        assert str(folder) in m and "pickle" in m and "not read" in m, m
    assert err.count("\n") == 1 and "Traceback" not in err, err


def test_a_crafted_rank_file_with_matching_checksums_is_refused(
        ck: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Checksums are no defence against a crafted folder (its author computes them): a rank
    file that unpickles a payload, listed with its true SHA-256 in a re-checksummed manifest,
    is still never unpickled (``weights_only``)."""
    marker = tmp_path / "PWNED"
    evil = ck / "rank1.pt"
    torch.save({"tensors": {"x": _Payload(marker)}}, evil)
    man = json.loads((ck / "topofl.json").read_text())
    man.pop("checksum")
    man["files"]["rank1.pt"].update(bytes=evil.stat().st_size,
                                    sha256=sharded._file_sha256(evil))
    (ck / "topofl.json").write_text(json.dumps({**man, "checksum": sharded._digest(man)}))
    capsys.readouterr()
    msgs = _entry_points(ck, tmp_path)
    err = capsys.readouterr().err
    assert not marker.exists()
    for m in [*msgs, err]:
        assert "has a file rank1.pt that cannot be read as tensors" in m, m


def test_the_manifest_and_every_rank_file_are_checked(ck: Path) -> None:
    full = sharded.load_full(ck, torch.device("cpu"))
    assert full["round"] == 2 and full["state"]["x"].shape[0] == N
    man = json.loads((ck / "topofl.json").read_text())
    assert man["format"] == sharded.FORMAT and sorted(man["files"]) == ["rank0.pt", "rank1.pt"]
    assert not [p.name for p in ck.iterdir() if p.name not in {*man["files"], "topofl.json"}]
    backup = ck.with_name("backup")
    shutil.copytree(ck, backup)

    def restore() -> None:
        shutil.rmtree(ck)
        shutil.copytree(backup, ck)

    # an edited manifest (the round), even with valid JSON
    (ck / "topofl.json").write_text(json.dumps({**man, "round": 1}))
    with pytest.raises(CheckpointError, match=r"topofl.json does not match its checksum"):
        load_any(ck)
    restore()
    # one flipped byte in a rank file: same size, another SHA-256
    raw = bytearray((ck / "rank0.pt").read_bytes())
    raw[len(raw) // 2] ^= 0x01
    (ck / "rank0.pt").write_bytes(bytes(raw))
    with pytest.raises(CheckpointError, match=r"its file rank0.pt does not match its checksum"):
        load_any(ck)
    restore()
    # a missing rank file, a truncated one, a manifest naming a file outside the folder
    (ck / "rank1.pt").unlink()
    with pytest.raises(CheckpointError, match=r"misses its file rank1.pt"):
        load_any(ck)
    restore()
    raw = (ck / "rank1.pt").read_bytes()
    (ck / "rank1.pt").write_bytes(raw[: len(raw) // 2])
    with pytest.raises(CheckpointError, match=rf"truncated or damaged file rank1.pt: "
                                              rf"{len(raw) // 2} bytes, {len(raw)} written"):
        load_any(ck)
    restore()
    body = {k: v for k, v in man.items() if k != "checksum"}
    body["files"] = {"../../r2.jsonl": body["files"]["rank0.pt"]}
    (ck / "topofl.json").write_text(json.dumps({**body, "checksum": sharded._digest(body)}))
    with pytest.raises(CheckpointError, match=r"malformed topofl.json entry for '../../r2"):
        load_any(ck)
    restore()
    assert load_any(ck)["round"] == 2


def _resume(rank: int, folder: str, records: str) -> str:
    try:
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            res = tf.run("dsgd", "ring", "digits", "logistic", 2, **KW, resume=folder,
                         checkpoint_path=folder, records_path=records)
    except CheckpointError as exc:
        return f"refused: {exc}"
    fell_back = any("an interrupted save left" in str(w.message) for w in seen)
    return f"rounds {sorted({r['round'] for r in res.records.rows})}, warned {fell_back}"


def test_a_truncated_rank_file_is_a_clear_error_on_every_rank(ck: Path, tmp_path: Path) -> None:
    raw = (ck / "rank1.pt").read_bytes()
    (ck / "rank1.pt").write_bytes(raw[:100])
    before = (tmp_path / "r2.jsonl").read_bytes()
    out = launch(2, _resume, str(ck), str(tmp_path / "r2.jsonl"), timeout=60.0, wait=600.0)
    assert all(s == "ok" for s, _ in out.values()), out
    for r in range(2):
        msg = out[r][1]
        assert msg.startswith("refused: ") and f"{ck} has a truncated or damaged file " \
            f"rank1.pt: 100 bytes, {len(raw)} written" in msg, msg
    assert (tmp_path / "r2.jsonl").read_bytes() == before  # nothing written


def test_a_corrupted_rank_file_read_by_one_rank_is_refused_on_every_rank(
        ck: Path, tmp_path: Path) -> None:
    # 3 ranks: one of them reads only rank0.pt's clients, one only rank1.pt's
    raw = bytearray((ck / "rank1.pt").read_bytes())
    raw[-200] ^= 0x01
    (ck / "rank1.pt").write_bytes(bytes(raw))
    out = launch(3, _resume, str(ck), str(tmp_path / "r2.jsonl"), timeout=60.0, wait=600.0)
    assert all(s == "ok" for s, _ in out.values()), out
    msgs = {out[r][1] for r in range(3)}
    assert len(msgs) == 1, msgs
    msg = msgs.pop()
    assert msg.startswith("refused: ") and "rank1.pt does not match its checksum" in msg, msg


def _rows(rows: list[dict[str, Any]]) -> dict[tuple[Any, ...], Any]:
    return {(r["round"], r["client"], r["metric"]): r["value"] for r in rows
            if r["metric"] != "wall_time"}


def _close(a: dict[tuple[Any, ...], Any], b: dict[tuple[Any, ...], Any]) -> bool:
    assert set(a) == set(b), set(a) ^ set(b)
    return all((abs(a[k] - b[k]) <= 1e-10 * max(1.0, abs(a[k])) or
                (math.isnan(a[k]) and math.isnan(b[k]))) if isinstance(a[k], float)
               else a[k] == b[k] for k in a)


def test_a_crash_between_the_renames_falls_back_to_the_old_copy(
        written: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # rank 0's publication of ck2 over ck1, crashing between its two renames
    gone = tmp_path / "gone"
    shutil.copytree(written / "ck1", gone)
    shutil.copytree(written / "ck2", tmp_path / "gone.tmp")
    real = os.replace
    calls: list[str] = []

    def crash_second(src: Any, dst: Any) -> None:
        calls.append(str(dst))
        if len(calls) == 2:
            raise KeyboardInterrupt("killed between the renames")
        real(src, dst)

    monkeypatch.setattr(os, "replace", crash_second)
    with pytest.raises(KeyboardInterrupt):
        sharded.swap_into_place(tmp_path / "gone.tmp", gone)
    monkeypatch.setattr(os, "replace", real)
    assert not gone.exists() and (tmp_path / "gone.old").is_dir()
    assert sharded.is_sharded(gone)

    # one process: the round-1 copy, with a warning; the run continues as if uninterrupted
    with pytest.warns(UserWarning, match=r"gone does not exist; loading .*gone.old instead"):
        assert load_any(gone)["round"] == 1
    copy_records(written / "r1.jsonl", tmp_path / "one.jsonl")
    with pytest.warns(UserWarning, match="an interrupted save left"):
        one = tf.run("dsgd", "ring", "digits", "logistic", 2, **KW, resume=str(gone),
                     checkpoint_path=str(gone), records_path=str(tmp_path / "one.jsonl"))
    assert _close(_rows(tf.records.load(written / "r2.jsonl").rows), _rows(one.records.rows))
    # its own checkpoint (a file, one process) replaced the pair; no .old is left
    assert gone.is_file() and not (tmp_path / "gone.old").exists()
    assert load_any(gone)["round"] == 2


@pytest.mark.distributed
def test_two_ranks_fall_back_to_the_old_copy(written: Path, tmp_path: Path) -> None:
    gone = tmp_path / "gone"  # what a crash between rank 0's renames leaves
    shutil.copytree(written / "ck1", tmp_path / "gone.old")
    shutil.copytree(written / "ck2", tmp_path / "gone.tmp")
    copy_records(written / "r1.jsonl", tmp_path / "two.jsonl")
    out = launch(2, _resume, str(gone), str(tmp_path / "two.jsonl"), timeout=60.0, wait=600.0)
    assert all(s == "ok" for s, _ in out.values()), out
    rounds = sorted({r["round"] for r in tf.records.load(written / "r2.jsonl").rows})
    assert out[0][1] == f"rounds {rounds}, warned True", out  # rank 0 warns
    assert out[1][1].endswith("warned False"), out
    assert _close(_rows(tf.records.load(written / "r2.jsonl").rows),
                  _rows(tf.records.load(tmp_path / "two.jsonl").rows))
    assert sharded.load_full(gone, torch.device("cpu"))["round"] == 2
    # gone.tmp is no name of topofl's (its temporaries are .gone.topofl-tmp-...): a user's
    # folder there, even one holding a checkpoint, is left as it was
    assert sorted(p.name for p in tmp_path.iterdir()) == ["gone", "gone.tmp",
                                                          "two.clients.arrows", "two.jsonl"]
    assert sharded.load_full(tmp_path / "gone.tmp", torch.device("cpu"))["round"] == 2


def test_an_incomplete_checkpoint_falls_back_to_a_whole_old_copy(written: Path,
                                                                 tmp_path: Path) -> None:
    ck = tmp_path / "ck"
    shutil.copytree(written / "ck2", ck)
    shutil.copytree(written / "ck1", tmp_path / "ck.old")
    assert load_any(ck)["round"] == 2  # whole: the .old copy is not read
    (ck / "rank0.pt").unlink()
    with pytest.warns(UserWarning, match=r"misses its file rank0.pt; loading .*ck.old"):
        assert load_any(ck)["round"] == 1
    (tmp_path / "ck.old" / "rank1.pt").unlink()  # no whole copy left: ck's own problem
    with pytest.raises(CheckpointError, match=r"ck misses its file rank0.pt"):
        load_any(ck)


def test_a_save_after_a_crash_keeps_the_old_copy_until_the_new_one_is_in_place(
        written: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """After a crash between the renames (no ``ck``, a whole ``ck.old``), the next save must
    not remove ``ck.old`` before its own checkpoint is in place."""
    shutil.copytree(written / "ck1", tmp_path / "ck.old")
    shutil.copytree(written / "ck2", tmp_path / "ck.tmp")
    real = os.replace

    def crash(src: Any, dst: Any) -> None:
        raise KeyboardInterrupt("killed before the rename")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(KeyboardInterrupt):
        sharded.swap_into_place(tmp_path / "ck.tmp", tmp_path / "ck")
    monkeypatch.setattr(os, "replace", real)
    with pytest.warns(UserWarning, match="interrupted save"):
        assert load_any(tmp_path / "ck")["round"] == 1
    sharded.swap_into_place(tmp_path / "ck.tmp", tmp_path / "ck")
    assert load_any(tmp_path / "ck")["round"] == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ck"]


class _State:
    """What ``save_sharded`` reads of a state: its named tensors."""

    def __init__(self, tensors: dict[str, torch.Tensor]) -> None:
        self._t = tensors

    def tensors(self) -> dict[str, torch.Tensor]:
        return self._t


# clients of 2 ranks, interleaved (runs of 1 and 2 ids); rank 1 is rank 0 of the reload
OWNER = [0, 1, 1, 0, 0, 1, 0]


def _full_state() -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    # "server" has a leading 4 = rank 0's client count: shared all the same (rank 1 has 3)
    return {"x": torch.randn(len(OWNER), 3, generator=g, dtype=torch.float64),
            "count": torch.arange(len(OWNER)),
            "server": torch.randn(4, generator=g), "step": torch.tensor(7)}


def _shard(owner: list[int]) -> Any:
    import numpy as np

    from topofl.distributed import join
    from topofl.distributed.comm import Shard
    from topofl.distributed.placement import Placement

    return Shard(join("cpu"), Placement(np.array(owner, dtype=np.int64), 2, "blocks"))


def _save_and_reload(rank: int, folder: str) -> dict[str, list[Any]]:
    shard = _shard(OWNER)
    full = _full_state()
    mine = torch.as_tensor(shard.clients)
    state = {k: v[mine] if k in ("x", "count") else v for k, v in full.items()}
    sharded.save_sharded(folder, shard, _State(state), {"round": 5})  # type: ignore[arg-type]
    other = _shard([1 - o for o in OWNER])  # the other placement: each reads the other's rows
    back = sharded.load_rows(folder, other, torch.device("cpu"))
    assert back["round"] == 5
    return {"clients": other.clients.tolist(),
            **{k: v.tolist() for k, v in back["state"].items()}}


def test_rows_and_shared_tensors_come_back_exactly(tmp_path: Path) -> None:
    folder = tmp_path / "ck"
    out = launch(2, _save_and_reload, str(folder), timeout=60.0, wait=600.0)
    assert all(s == "ok" for s, _ in out.values()), out
    full = _full_state()
    for r in range(2):
        got = out[r][1]
        ids = got["clients"]
        assert ids == [i for i, o in enumerate(OWNER) if 1 - o == r]
        assert got["x"] == full["x"][ids].tolist() and got["count"] == full["count"][ids].tolist()
        assert got["server"] == full["server"].tolist() and got["step"] == 7
    man = json.loads((folder / "topofl.json").read_text())
    assert sorted(man["files"]) == ["rank0.pt", "rank1.pt", "shared.pt"]
    assert man["files"]["shared.pt"]["keys"] == ["server/all", "step/all"]
    assert man["files"]["rank0.pt"]["keys"] == ["count/0:1", "count/3:5", "count/6:7",
                                                "x/0:1", "x/3:5", "x/6:7"]
    one = sharded.load_full(folder, torch.device("cpu"))
    assert all(torch.equal(one["state"][k], v) for k, v in full.items())
    assert one["state"]["x"].dtype == torch.float64


def test_the_sweep_reads_the_resume_round_of_a_sharded_folder(ck: Path, tmp_path: Path) -> None:
    """``topofl sweep`` states the round a run resumes from for a sharded checkpoint too (it
    read it with ``torch.load``, which fails on a folder), and ``None`` for a damaged one."""
    from topofl.sweep._resumption import _checkpoint_round

    assert _checkpoint_round(ck) == 2
    shutil.rmtree(ck)
    assert _checkpoint_round(ck) is None
    (tmp_path / "junk.ckpt").write_bytes(b"not a checkpoint")
    assert _checkpoint_round(tmp_path / "junk.ckpt") is None
