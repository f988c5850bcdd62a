"""What a run may write over: the checks :func:`topofl.api.build` makes on its output paths
(resolved when the call was checked: :func:`topofl._utils.files.real_path`) before anything
is read or written. A run replaces nothing it did not make without ``overwrite=True``: not a
file at ``records_path`` (a link to a file is that file), not the per-client file beside it,
not another run's checkpoint that a save would remove beside ``checkpoint_path``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from topofl import distributed
from topofl.distributed.checkpoint import is_topofl_checkpoint, stored_run_hash
from topofl.records.columns import client_path

__all__ = ["records_target_problem", "old_checkpoint_problem"]


def _shown(given: Any, path: Path) -> str:
    return str(given) if str(given) == str(path) else f"{given} ({path})"


def records_target_problem(given: Any, path: Path) -> str | None:
    """Why a fresh run must not write its records to ``path`` (``given``, resolved), or
    ``None``: a file is there, or the per-client file that goes beside it
    (:func:`topofl.records.columns.client_path`), which the run would replace.

    Examples
    --------
    >>> import os, tempfile
    >>> from pathlib import Path
    >>> from topofl.workflow.outputs import records_target_problem
    >>> folder = Path(os.path.realpath(tempfile.mkdtemp()))
    >>> _ = (folder / "r.clients.arrows").write_text("mine")
    >>> print(records_target_problem("r.jsonl", folder / "r.jsonl"))  # doctest: +ELLIPSIS
    /.../r.clients.arrows, the per-client file of records_path r.jsonl (/.../r.jsonl), exists ...
    """
    shown = _shown(given, path)
    if os.path.lexists(path):
        return f"{shown} exists"
    beside = client_path(path)
    if os.path.lexists(beside):
        return (f"{beside}, the per-client file of records_path {shown}, exists (a run writes "
                "its own there)")
    return None


def old_checkpoint_problem(given: Any, path: Path, run_hash: str) -> str | None:
    """Why a run of ``run_hash`` must not save checkpoints at ``path`` (``given``, resolved)
    without ``overwrite``, or ``None``: a save there removes the ``<path>.old`` copy an
    interrupted save left (a sharded checkpoint's folder, or any copy where the save is
    sharded), and the one there is a topofl checkpoint that is not this run's (another run's,
    or one whose run hash cannot be read). A ``.old`` that is not a topofl checkpoint is never
    removed (:func:`topofl.distributed.checkpoint.checkpoint_target_problem` refuses it where
    a save would need its place).

    Examples
    --------
    >>> import json, os, tempfile
    >>> from pathlib import Path
    >>> from topofl.distributed.checkpoint import FORMAT, META
    >>> from topofl.workflow.outputs import old_checkpoint_problem
    >>> folder = Path(os.path.realpath(tempfile.mkdtemp()))
    >>> old_checkpoint_problem("ck.pt", folder / "ck.pt", "abc") is None
    True
    >>> (folder / "ck.pt.old").mkdir()
    >>> _ = (folder / "ck.pt.old" / META).write_text(json.dumps({"format": FORMAT}))
    >>> print(old_checkpoint_problem("ck.pt", folder / "ck.pt", "abc"))  # doctest: +ELLIPSIS
    /.../ck.pt.old, beside checkpoint_path ck.pt (/.../ck.pt), holds a topofl checkpoint ...
    """
    old = path.with_name(path.name + ".old")
    if not os.path.lexists(old) or not is_topofl_checkpoint(old):
        return None
    if not (old.is_dir() or path.is_dir() or distributed.is_distributed()):
        return None  # a file beside a file checkpoint: no save removes it
    stored = stored_run_hash(old)
    if stored == run_hash:
        return None  # this run's own copy, left by one of its saves
    whose = f"of another run (run hash {stored})" if stored else "whose run hash cannot be read"
    return (f"{old}, beside checkpoint_path {_shown(given, path)}, holds a topofl checkpoint "
            f"{whose}, which a save there removes; pass overwrite=True (topofl run "
            "--overwrite) to let it, or choose another checkpoint_path")
