"""Load an ``analysis/`` script as a module (the scripts are not a package)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]


def load(name: str) -> ModuleType:
    """The module ``analysis/<name>.py``, executed once per call (and registered in
    ``sys.modules`` under ``name``, as ``import`` would: dataclasses look their module up)."""
    spec = importlib.util.spec_from_file_location(name, ROOT / "analysis" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
