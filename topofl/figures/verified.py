"""The remembered re-runs of :func:`topofl.figures.certificates.check`: what a re-run of a
certified commit established, kept so that the next check need not re-run it.

The re-runs are what a check costs (~25 s of one core a commit; 26 CPU minutes for the 64
commits of the committed certificates, 40 min with ``--jobs 2`` on this project's shared
2-core VM while other jobs held its cores); what it found is remembered in
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

Only the checking process writes the file (never the interpreters it runs), once for each
commit as soon as its re-run verified, under a lock beside it (two checks at once keep each
other's entries).

What a check found is reported one :class:`Verdict` a certificate, as soon as it is decided:
``bitwise`` (its sealed values are its commit's here to the last bit), ``within rounding``
(they differ within the rounding measured between environments, because its environment
differs from this one in the fields named), ``failed`` (why), each ``cached`` when its
commit's re-run was remembered; :func:`summary` counts them. :func:`variable_warnings` names
the environment variables set in the shell that move this machine's own certificates to the
rounding path.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import os
import secrets
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from topofl._utils.environment import bits
from topofl._utils.files import replace_text
from topofl.figures import snapshot
from topofl.figures.commits import _repo

__all__ = ["BIT_VARIABLES", "Verdict", "summary", "variable_warnings"]


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
        # written whole under a private name, then linked in: another thread or check never
        # reads a key half written, and the first link wins (``link`` refuses an existing name)
        tmp = path.with_name(f"{path.name}.{os.getpid()}.{secrets.token_hex(8)}")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as fh:
                fh.write(secrets.token_bytes(32))
            os.link(tmp, path)
        except FileExistsError:
            pass  # made by another check meanwhile
        except OSError:
            return None
        finally:
            with contextlib.suppress(OSError):
                tmp.unlink()
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

    def named(self, fact: Mapping[str, Any]) -> bool:
        """Whether an entry is kept under the name of ``fact`` (its commit, threads and
        environment), whatever it states: without one, the commit must run."""
        return self._name(fact) in self._entries()

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
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with _locked(self.path.with_name(self.path.name + ".lock")):
                entries = self._entries()  # again: another check may have added some
                entries[self._name(fact)] = {**{f: fact[f] for f in _FACT},
                                             "mac": self._mac(key, fact)}
                replace_text(self.path, [json.dumps({"format": _CACHE_FORMAT,
                                                     "entries": entries},
                                                    indent=1, sort_keys=True), "\n"])
        except OSError:
            pass


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """Hold an exclusive lock on the file ``path`` (made if absent) while inside; where the
    platform has no ``fcntl``, no lock."""
    with open(path, "a", encoding="utf-8") as fh:
        try:
            import fcntl
        except ImportError:  # pragma: no cover - not POSIX
            yield
            return
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


#: The environment variables that change what decides the bits on this machine (ATen's
#: instruction set, MKL's code path, OpenBLAS's core type, numpy's SIMD targets). Set in the
#: shell, they make this environment differ from the one this machine's own certificates
#: recorded, which moves those certificates from the bitwise comparison to the rounding one.
BIT_VARIABLES = ("ATEN_CPU_CAPABILITY", "MKL_CBWR", "OPENBLAS_CORETYPE",
                 "NPY_DISABLE_CPU_FEATURES")


def variable_warnings(environ: Mapping[str, str] | None = None) -> list[str]:
    """One warning for each variable of :data:`BIT_VARIABLES` set in ``environ`` (default:
    this process's environment), naming it and what it does to a check.

    Examples
    --------
    >>> for line in variable_warnings({"ATEN_CPU_CAPABILITY": "avx2", "HOME": "/home/me"}):
    ...     print(line)  # doctest: +ELLIPSIS
    ATEN_CPU_CAPABILITY=avx2 is set: it changes ... to the rounding path ...
    >>> variable_warnings({"MKL_CBWR": ""})
    []
    """
    env = os.environ if environ is None else environ
    return [f"{name}={env[name]} is set: it changes the kernels that decide the bits, which "
            "moves the certificates of this machine's environment to the rounding path "
            "(compared within rounding, not bit for bit); unset it, or check with --strict"
            for name in BIT_VARIABLES if env.get(name)]


@dataclass(frozen=True)
class Verdict:
    """What :func:`check` found for one certificate.

    Attributes
    ----------
    index : int
        The certificate's place in ``equivalence.json``.
    cert : mapping
        The certificate.
    outcome : {"bitwise", "rounding", "failed"}
        Its sealed values equal its commit's here to the last bit; or differ from them
        within the rounding measured between environments (the certificate's environment
        differs from this one in ``fields``); or it failed (``detail`` says why).
    of : int
        How many certificates the check verifies.
    cached : bool
        The commit's re-run was remembered (:mod:`topofl.figures.verified`), not run now.
    fields : tuple of str
        The fields that decide the bits in which the certificate's environment differs from
        this one (:func:`topofl._utils.environment.differences`).
    detail : str
        Why it failed; for ``"rounding"``, the largest difference and both environments.
    largest : str
        For ``"rounding"``: the largest relative difference and where.
    """

    index: int
    cert: Mapping[str, Any]
    outcome: str
    of: int
    cached: bool = False
    fields: tuple[str, ...] = ()
    detail: str = ""
    largest: str = ""

    def line(self) -> str:
        """One line: the certificate, its fingerprints and commit, and what was found.

        Examples
        --------
        >>> cert = {"from": "0.1+aaaaaaaaaaaa", "to": "0.1+bbbbbbbbbbbb", "from_commit": "c" * 40}
        >>> Verdict(3, cert, "rounding", 9, fields=("cpu", "numpy_blas")).line().split(": ")
        ['certificate 3 (0.1+aaaaaaaaaaaa -> 0.1+bbbbbbbbbbbb, commit cccccccccccc)',
         'within rounding (because', 'cpu, numpy_blas)']
        >>> Verdict(3, cert, "bitwise", 9, cached=True).line().split(": ", 1)[1]
        'cached, bitwise'
        """
        head = (f"certificate {self.index} ({self.cert['from']} -> {self.cert['to']}, commit "
                f"{str(self.cert.get('from_commit'))[:12]})")
        if self.outcome == "failed":
            return f"{head}: failed: {self.detail}"
        found = ("bitwise" if self.outcome == "bitwise" else
                 f"within rounding (because: {', '.join(self.fields)}"
                 + (f"; {self.largest}" if self.largest else "") + ")")
        return f"{head}: {'cached, ' if self.cached else ''}{found}"


def summary(verdicts: Sequence[Verdict], *, strict: bool = False) -> str:
    """``"N bitwise, M within rounding (because: fields), K failed"``, with how many were
    remembered (cached) and, with ``strict``, how many fail for not being bitwise.

    Examples
    --------
    >>> cert = {"from": "0.1+aaaaaaaaaaaa", "to": "0.1+bbbbbbbbbbbb", "from_commit": "c" * 40}
    >>> found = [Verdict(0, cert, "bitwise", 3, cached=True),
    ...          Verdict(1, cert, "rounding", 3, fields=("cpu", "numpy")),
    ...          Verdict(2, cert, "rounding", 3, fields=("cpu",), cached=True)]
    >>> summary(found).split("; ")
    ['1 bitwise, 2 within rounding (because: cpu, numpy), 0 failed',
     'cached: 1 bitwise, 1 within rounding']
    >>> summary(found[1:2], strict=True).split("; ")[1]
    '1 not bitwise: failed under --strict'
    """
    count = {k: sum(v.outcome == k for v in verdicts) for k in ("bitwise", "rounding", "failed")}
    fields = sorted({f for v in verdicts if v.outcome == "rounding" for f in v.fields})
    text = (f"{count['bitwise']} bitwise, {count['rounding']} within rounding"
            + (f" (because: {', '.join(fields)})" if fields else "")
            + f", {count['failed']} failed")
    cached = {k: sum(v.cached and v.outcome == k for v in verdicts) for k in count}
    if any(cached.values()):
        text += (f"; cached: {cached['bitwise']} bitwise, {cached['rounding']} within "
                 "rounding")
    if strict and count["rounding"]:
        text += f"; {count['rounding']} not bitwise: failed under --strict"
    return text
