"""Reading a config file: the table of :func:`topofl.run` keyword arguments and its
``[sweep]`` table, as written (no registry is consulted, so reading stays light: checking a
config is :func:`topofl.config.validate`'s), and its ``[labels]`` table: how ``topofl study``
names the conditions (``SPEC = "NAME"``), which no run reads.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from topofl.exceptions import ConfigError, ConfigTypeError

__all__ = ["read_config", "read_labels", "split_sweep"]


def _kind(value: Any) -> str:
    return f"{type(value).__name__} {value!r}"


def read_config(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read a config file: TOML (``.toml``, or any other suffix) or JSON (``.json``).

    Parameters
    ----------
    path : str or PathLike

    Returns
    -------
    dict
        The table as written (not yet validated; a ``[sweep]`` table is kept under ``"sweep"``;
        a ``[labels]`` table is checked and left out: :func:`read_labels` reads it).

    Raises
    ------
    ConfigError
        If the file does not exist, cannot be read, is not valid TOML/JSON, or is not a table.
    """
    obj = _load(Path(path))
    _labels(obj, Path(path))
    return {k: v for k, v in obj.items() if k != "labels"}


def _load(p: Path) -> dict[str, Any]:
    """The file's top-level table, as written (the errors of :func:`read_config`)."""
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{p}: no such config file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{p}: cannot read the config: {exc}") from None
    if p.suffix.lower() == ".json":
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{p}: invalid JSON: {exc}") from None
    else:
        try:
            import tomllib
        except ModuleNotFoundError:  # pragma: no cover - Python < 3.11
            import tomli as tomllib  # type: ignore[no-redef]
        try:
            obj = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{p}: invalid TOML: {exc}") from None
    if not isinstance(obj, dict):
        raise ConfigError(f"{p}: expected a table of topofl.run keyword arguments, got "
                          f"{type(obj).__name__}")
    return obj


def _labels(cfg: Mapping[str, Any], where: Path) -> dict[str, str]:
    labels = cfg.get("labels", {})
    if not isinstance(labels, Mapping) or not all(
            isinstance(k, str) and isinstance(v, str) and v.strip() for k, v in labels.items()):
        raise ConfigTypeError(f"{where}: [labels] must be a table of condition = \"name\" "
                              f"strings, got {_kind(labels)}"[:300])
    return {str(k): str(v).strip() for k, v in labels.items()}


def read_labels(path: str | os.PathLike[str]) -> dict[str, str]:
    """The ``[labels]`` table of a config file (``{}`` if none): condition -> display name.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> from topofl._utils.configfiles import read_config, read_labels
    >>> f = pathlib.Path(tempfile.mkdtemp()) / "s.toml"
    >>> _ = f.write_text('rounds = 5\\n[labels]\\nring = "Ring (n=100)"\\n')
    >>> read_labels(f), read_config(f)
    ({'ring': 'Ring (n=100)'}, {'rounds': 5})
    """
    p = Path(path)
    obj = _load(p)
    return _labels(obj, p)


def split_sweep(cfg: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, list[Any]]]:
    """Split a config into its base keys and its ``[sweep]`` table (``{}`` if none).

    Raises
    ------
    ConfigError
        If ``sweep`` is not a table of non-empty lists.

    Examples
    --------
    >>> tf.config.split_sweep({"rounds": 5, "sweep": {"seed": [0, 1]}})
    ({'rounds': 5}, {'seed': [0, 1]})
    """
    base = {k: v for k, v in cfg.items() if k != "sweep"}
    sweep = cfg.get("sweep", {})
    if not isinstance(sweep, Mapping):
        raise ConfigTypeError(f"sweep must be a table of lists, got {_kind(sweep)}")
    out: dict[str, list[Any]] = {}
    for key, values in sweep.items():
        if not isinstance(values, list):
            raise ConfigTypeError(
                f"sweep.{key} must be a list of values, got {_kind(values)}")
        if not values:
            raise ConfigError(f"sweep.{key} is an empty list")
        if key in base:
            raise ConfigError(f"{key!r} is both a key of the config and of [sweep]; keep one")
        out[str(key)] = list(values)
    return base, out
