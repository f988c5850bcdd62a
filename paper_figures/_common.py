"""Shared plumbing of the figure scripts: output folder, cached runs, dataset choice."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

OUT = Path(__file__).resolve().parent / "out"


def parser(doc: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=doc.strip().splitlines()[0])
    p.add_argument("--out", type=Path, default=OUT, help=f"output folder (default {OUT})")
    p.add_argument("--quick", action="store_true", help="a few rounds only (smoke test)")
    p.add_argument("--rerun", action="store_true", help="ignore cached records")
    return p


def dataset(name: str) -> tuple[str, str]:
    """``(dataset to use, note)``: the paper's dataset if its files are present, else digits."""
    from topofl import data

    if name == "digits":
        return "digits", ""
    try:
        data.load(name)
        return name, ""
    except (FileNotFoundError, ValueError, OSError):
        return "digits", (
            f"{name} files not found under ~/.cache/topofl: using the offline digits data "
            f"instead (put the {name} files there to reproduce the paper's setting)"
        )


def cached_run(path: Path, rerun: bool, **kwargs: Any) -> Any:
    """Records of ``topofl.run(**kwargs)``, read from ``path`` if a complete run is cached."""
    import topofl as tf

    if path.exists() and not rerun:
        rec = tf.records.load(path)
        rounds = kwargs.get("rounds", 0)
        if rec.rows and max(r["round"] for r in rec.rows) == rounds - 1:
            return rec
    path.parent.mkdir(parents=True, exist_ok=True)
    return tf.run(records_path=str(path), run_id=path.stem, overwrite=True, **kwargs).records
