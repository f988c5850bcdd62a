"""The run hash: what identifies a run's numbers in its records header and checkpoints.

:func:`run_hash` is computed over the engine's description of a run
(:func:`topofl.engine.config.config_header`) without the settings that do not change the
numbers (:data:`RESUME_FREE`); :func:`header_hash_problem` checks a records header's stored
hash against it. Kept apart from the engine (plain JSON and hashlib) so that the records
module, which reads headers, stays light.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

__all__ = ["RESUME_FREE", "run_hash", "header_hash_problem"]


#: RunConfig fields that do not change a run's numbers: a checkpoint resumes with other values.
RESUME_FREE = frozenset({"rounds", "records_path", "checkpoint_path", "checkpoint_every",
                         "stream_rows", "progress", "divergence"})


def identity(desc: Mapping[str, Any]) -> dict[str, Any]:
    """The part of an engine description (``config_header``) that changes the numbers."""
    out = {k: v for k, v in desc.items() if k != "run_hash"}
    run = out.get("run")
    if isinstance(run, Mapping):
        out["run"] = {k: v for k, v in run.items() if k not in RESUME_FREE}
    return out


def run_hash(desc: Mapping[str, Any]) -> str:
    """16 hex digits of SHA-256 over what changes a run's numbers in an engine description
    (:func:`topofl.engine.config.config_header`).

    Everything but the ``run_hash`` entry itself and the ``run`` fields of
    :data:`RESUME_FREE`, as canonical JSON (sorted keys).

    Examples
    --------
    >>> from topofl._utils.runhash import run_hash
    >>> a = run_hash({"run": {"seed": 0, "rounds": 10}, "algorithm": {"lr": 0.1}})
    >>> a == run_hash({"run": {"seed": 0, "rounds": 20}, "algorithm": {"lr": 0.1}}), len(a)
    (True, 16)
    >>> a == run_hash({"run": {"seed": 1, "rounds": 10}, "algorithm": {"lr": 0.1}})
    False
    """
    text = json.dumps(identity(desc), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def header_hash_problem(header: Mapping[str, Any]) -> str | None:
    """Why a records header's run hash is not the hash of the run it describes, or ``None``.

    The hash a header carries (``engine.run_hash``, else ``config.run_hash``: the part
    :func:`topofl.records.header_run_hash` reads) is recomputed with :func:`run_hash` from
    the description beside it (its ``distributed`` entry aside, which the hash never covers).
    A header without a run hash has nothing to check (``None``).

    Examples
    --------
    >>> from topofl._utils.runhash import header_hash_problem, run_hash
    >>> desc = {"run": {"seed": 0}, "algorithm": {"lr": 0.1}}
    >>> header = {"header": True, "engine": {**desc, "run_hash": run_hash(desc)}}
    >>> header_hash_problem(header) is None
    True
    >>> header["engine"]["run_hash"] = "0123456789abcdef"
    >>> print(header_hash_problem(header))  # doctest: +ELLIPSIS
    its header's run hash 0123456789abcdef is not the hash of the run the header describes ...
    """
    for part in ("engine", "config"):
        desc = header.get(part)
        if isinstance(desc, Mapping) and isinstance(desc.get("run_hash"), str):
            stored = desc["run_hash"]
            found = run_hash({k: v for k, v in desc.items() if k != "distributed"})
            if found == stored:
                return None
            return (f"its header's run hash {stored} is not the hash of the run the header "
                    f"describes ({found}, recomputed from its {part!r} entry): the header was "
                    "edited or damaged")
    return None
