"""The remembered re-runs of :func:`topofl.figures.certificates.verify`: what a re-run of a
certified commit established, kept so that the next check need not re-run it.

The re-runs are what a check costs (16 s a commit; 6 min 16 s for the 21 commits of the
committed certificates, on this session's shared 2-core VM); what it found is remembered in
``paper_figures/out/.verified-certificates.json``, one entry a commit, written (atomically) as
soon as its certificate verified, so an interrupted check keeps what it did. The entry is not
trusted, it is re-validated: it holds the fact a re-run established -- commit ``C``, whose
files the current fingerprint code make code ``F``, computes in this environment (the digest
of its bit-deciding fields) at ``T`` threads values of digest ``D`` -- and counts only when
``F`` is what the commit's files give now, ``D`` is the digest of the current snapshot's values
on the certificate's keys (so the current code still computes them) and its HMAC under this
user's key (``~/.cache/topofl/``, outside the checkout) is right. Every check of
:func:`~topofl.figures.certificates.verify` then runs again on those values; a stale, edited or
hand-written entry is discarded and the commit re-run. Whoever can read the key can write an
entry (delete the cache file, or the key, to re-run every commit).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from topofl._utils.environment import bits
from topofl._utils.files import replace_text
from topofl.figures import snapshot
from topofl.figures.commits import _repo

__all__: list[str] = []


def _cache_path() -> Path:
    """Where the re-runs are remembered by default (``paper_figures/out/``, not committed)."""
    return _repo() / "paper_figures" / "out" / ".verified-certificates.json"


def _key_path() -> Path:
    """This user's key of the cache's HMACs (outside every checkout)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "topofl" / "certificate-cache.key"


def _key(*, create: bool) -> bytes | None:
    """The cache's key (made, private to this user, when ``create``); ``None``: none to use."""
    path = _key_path()
    try:
        key = path.read_bytes()
    except FileNotFoundError:
        if not create:
            return None
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as fh:
                fh.write(secrets.token_bytes(32))
        except FileExistsError:
            pass  # made by another check meanwhile
        except OSError:
            return None
        return _key(create=False)
    except OSError:
        return None
    return key if len(key) >= 32 else None


#: What a cache entry states (see the module docstring); with its ``mac``. ``environment`` is
#: the digest of the bit-deciding fields of the environment the re-run ran in.
_FACT = ("commit", "code", "environment", "threads", "digest")
_CACHE_FORMAT = 3


def _environment_digest(env: Mapping[str, Any]) -> str:
    return snapshot.digest(bits(env))


class _Cache:
    """The remembered re-runs: ``{"format": 3, "entries": {commit/threads/environment:
    fact}}``."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def _entries(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError, RecursionError):
            return {}
        ok = isinstance(data, dict) and data.get("format") == _CACHE_FORMAT
        return data["entries"] if ok and isinstance(data.get("entries"), dict) else {}

    @staticmethod
    def _name(fact: Mapping[str, Any]) -> str:
        return f"{fact['commit']}/{fact['threads']}/{fact['environment']}"

    @staticmethod
    def _mac(key: bytes, fact: Mapping[str, Any]) -> str:
        text = json.dumps([f"topofl verified certificate {_CACHE_FORMAT}",
                           [fact[f] for f in _FACT]])
        return hmac.new(key, text.encode(), hashlib.sha256).hexdigest()

    def holds(self, fact: Mapping[str, Any]) -> bool:
        """Whether an entry states ``fact``, under this user's key."""
        entry, key = self._entries().get(self._name(fact)), _key(create=False)
        return (key is not None and isinstance(entry, dict)
                and all(entry.get(f) == fact[f] for f in _FACT)
                and isinstance(entry.get("mac"), str)
                and hmac.compare_digest(entry["mac"], self._mac(key, fact)))

    def add(self, fact: Mapping[str, Any]) -> None:
        """Remember ``fact`` now (the file replaced atomically; a read-only checkout or home
        only verifies again next time)."""
        key = _key(create=True)
        if key is None:
            return
        entries = self._entries()  # again: another check may have added some
        entries[self._name(fact)] = {**{f: fact[f] for f in _FACT}, "mac": self._mac(key, fact)}
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            replace_text(self.path, [json.dumps({"format": _CACHE_FORMAT, "entries": entries},
                                                indent=1, sort_keys=True), "\n"])
        except OSError:
            pass
