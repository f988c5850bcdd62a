"""Certificates that a refactor kept the result code's numbers, and their verification.

A committed paper result names the code fingerprint that computed it
(:func:`topofl._utils.fingerprint.code_fingerprint`). A refactor changes the fingerprint without
moving a number; a **certificate** ``{from, to, ...}`` in
``paper_figures/results/equivalence.json`` says so, and a result of code ``from`` then counts as
computed by code ``to`` (:func:`equivalent_codes`).

A certificate is written only by :func:`certify`, from a complete behaviour snapshot
(:func:`topofl.figures.snapshot.take`: every part) of the committed code ``from``, taken again on
the code ``to`` in the same numeric environment and equal to it on every value ``from`` computed
(newer code may add values: a new algorithm's case). It names the git commit of ``from``
(``from_commit``), torch's thread count (``threads``), the **numeric environment** the values
were computed in (``environment``: :func:`topofl._utils.environment.numeric_environment`; torch,
numpy, scipy, networkx and Python releases and builds, BLAS libraries and their core types,
ATen's instruction set, MKL's code path, the processor's vendor, family and model) and the
digest of its **sealed record** (``digest``), committed beside it as
``certified/<digest>.json``: ``{"format": 2, "certificate": {every field that decides how the
certificate is checked}, "values": <the digest of its values>}``; the values themselves are kept
once by their own digest (``certified/<values digest>.json.gz``, shared by the certificates of
equal values). Editing any of those fields in ``equivalence.json`` fails, naming the field (the
sealed record says otherwise); editing the record or the values changes their digest.

:func:`verify` (``topofl figure index --check``) does not trust the files: for every
certificate the committed results rely on, it reads the ``topofl/`` of its ``from_commit``
from git's objects, re-runs that tree's snapshot in a fresh interpreter on this machine and
checks

1. that its code fingerprint is ``from``, computed from those files by the *current*
   fingerprint code (:func:`topofl._utils.fingerprint.tree_fingerprint`), never by the commit's
   own (an edited ``_fingerprint.py`` in it could report any fingerprint);
2. that the sealed values are those of that commit: bit for bit where this environment equals
   the certificate's in every field that decides the bits
   (:data:`topofl._utils.environment.BIT_FIELDS`); elsewhere within the rounding measured between
   environments (:func:`topofl.figures.snapshot.env_rtol`: 2e-5 relative for float32 runs and
   models,
   1e-7 for the rest; integers, counts, strings and accuracies alike; the floats of the
   values that pass through a discrete choice on float ties,
   :data:`topofl.figures.snapshot.DISCRETE`,
   only in the same environment). A difference within that rounding is reported as such
   (``notes``), naming both environments; beyond it, as an edit;
3. that the current code computes every one of those values here exactly as the commit does
   here (the same kernels in the same process environment: to the last bit). This is the
   check that carries the meaning, and it is bitwise everywhere.

A hand-written or edited certificate therefore fails in any environment: a made-up digest has
no sealed record, an edited field disagrees with its record, an edited value (its digest
recomputed, whatever environment the certificate is made to name) is off what the commit
computes by more than any environment rounds, and the certified change must really leave the
values unmoved.

Certificates written before environments were recorded (``cpu`` and ``torch`` only) are read
by :func:`rerecord` alone, which verifies each here and seals its commit's values with this
machine's environment (the earlier digest kept as ``first``).

Reading a commit from git and taking its snapshot is :mod:`topofl.figures.commits`. The re-runs
are what a check costs (~17 s of one core a commit; :func:`check` runs each commit once, however
many certificates name it, ``jobs`` at a time); what each established is remembered, and
re-validated before it counts, by :mod:`topofl.figures.verified`. :func:`check` reports each
certificate's :class:`Verdict` as soon as it is decided, saying which path it took: its
sealed values equal its commit's here ``bitwise``, or ``within rounding`` because its
environment differs from this one in the fields named (an environment is a field of the
certificate: anyone who edits it and reseals the record moves the certificate to that path,
so :data:`BIT_VARIABLES` set in the shell are warned of and ``--strict`` fails what is not
bitwise), or ``failed``.

A seal (the digest) makes an accidental edit evident: it covers every field that decides the
check and the values. It is no signature (an unkeyed hash: anyone can edit and reseal); what
protects the results is checks 1 and 3, which no edit of the files changes: the commit's files
are the code ``from`` and compute here, to the last bit, what the current code computes. What
a check still trusts: the certified commit's own snapshot module and the rest of its
non-result code, which it runs, and whoever can read the key of that memory (delete its file,
or the key, to re-run every commit).

Examples
--------
>>> import json, tempfile, pathlib
>>> d = pathlib.Path(tempfile.mkdtemp())
>>> cert = {"from": "0.1+aaaaaaaaaaaa", "to": "0.1+bbbbbbbbbbbb", "from_commit": "c" * 40,
...         "digest": "0123456789abcdef", "values": 135, "threads": 1,
...         "environment": {"torch": "2.13.0+cpu", "cpu": "x86_64 GenuineIntel AVX512"}}
>>> _ = (d / EQUIVALENCE_FILE).write_text(json.dumps([cert]))
>>> sorted(equivalent_codes("0.1+bbbbbbbbbbbb", d))
['0.1+aaaaaaaaaaaa', '0.1+bbbbbbbbbbbb']
>>> _ = (d / EQUIVALENCE_FILE).write_text(json.dumps([{"from": "0.1+a", "to": "0.1+b"}]))
>>> equivalent_codes("0.1+b", d)  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
ValueError: .../equivalence.json: certificate 0 misses ['digest', 'environment', ...
"""

from __future__ import annotations

import gzip
import json
import os
import re
import subprocess
import time
import zlib
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from topofl._utils.environment import bits, differences, numeric_environment
from topofl._utils.files import replace_text
from topofl._utils.fingerprint import code_fingerprint
from topofl.figures import snapshot
from topofl.figures.commits import _COMMIT, Reruns, commit_fingerprint, snapshot_of_commit
from topofl.figures.verified import (
    BIT_VARIABLES,
    Verdict,
    _Cache,
    _cache_path,
    _environment_digest,
    summary,
    variable_warnings,
)

__all__ = ["BIT_VARIABLES", "EQUIVALENCE_FILE", "VALUES_DIR", "Verdict", "certify", "check",
           "environment_of", "equivalent_codes", "read", "rerecord", "summary", "values_of",
           "variable_warnings", "verify"]

EQUIVALENCE_FILE = "equivalence.json"  # beside the committed results
#: The folder beside it that holds the sealed records, ``<digest>.json.gz``.
VALUES_DIR = "certified"
#: What a certificate holds (``date``, ``code``, ``seeds``, ``cpu_model`` and ``first`` are
#: informative).
FIELDS = {"from": str, "to": str, "from_commit": str, "digest": str, "values": int,
          "threads": int, "environment": dict}
#: The fields that decide how a certificate is checked: its sealed record holds them too.
SEALED = ("from", "to", "from_commit", "values", "threads", "environment")
#: What a certificate written before environments were recorded holds (:func:`rerecord`).
LEGACY_FIELDS = {"from": str, "to": str, "from_commit": str, "digest": str, "values": int,
                 "threads": int, "torch": str}
_FORMAT = 2  # of a sealed record
_CODE = re.compile(r"^\S+\+[0-9a-f]{12}$")
_DIGEST = re.compile(r"^[0-9a-f]{16}$")


def _problem(cert: Any, fields: Mapping[str, type] = FIELDS) -> str | None:
    """Why ``cert`` is not a well-formed certificate (of ``fields``), or ``None``."""
    if not isinstance(cert, Mapping):
        return f"is a {type(cert).__name__}, not a table"
    missing = sorted(set(fields) - set(cert))
    if missing:
        return f"misses {missing} (a certificate is written by `topofl figure snapshot --certify`)"
    for key, kind in fields.items():
        v = cert[key]
        if isinstance(v, bool) or not isinstance(v, kind):
            return f"{key!r} must be a {kind.__name__}, got {type(v).__name__} {v!r:.40}"
    for key, pattern, what in (("from", _CODE, "a code version 'VERSION+12 hex digits'"),
                               ("to", _CODE, "a code version 'VERSION+12 hex digits'"),
                               ("from_commit", _COMMIT, "a 40-hex-digit git commit"),
                               ("digest", _DIGEST, "16 hex digits")):
        if not pattern.match(cert[key]):
            return f"{key!r} must be {what}, got {cert[key]!r:.60}"
    if cert["values"] < 1:
        return f"certifies {cert['values']} values: a certificate rests on a complete snapshot"
    if cert["threads"] < 1:
        return f"'threads' must be at least 1, got {cert['threads']}"
    env = cert.get("environment")
    if env is not None and not isinstance(env.get("torch"), str):
        return "'environment' must name its torch (a string), got " + repr(env.get("torch"))[:40]
    if cert["from"] == cert["to"]:
        return "certifies a code equivalent to itself"
    return None


def read(results: str | os.PathLike[str], *, legacy: bool = False) -> list[dict[str, Any]]:
    """The certificates of ``results/equivalence.json`` (none when the file is absent);
    ``legacy``: certificates written before environments were recorded are read too (what
    :func:`rerecord` takes).

    Raises
    ------
    ValueError
        One line naming the file and the certificate when the file is not JSON, not a list,
        or holds a malformed certificate (see :data:`FIELDS`).
    """
    path = Path(results) / EQUIVALENCE_FILE
    if not path.exists():
        return []
    try:
        certs = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise ValueError(f"{path}: not a JSON list of certificates "
                         f"({exc if not isinstance(exc, RecursionError) else 'nested too deep'})"
                         ) from None
    if not isinstance(certs, list):
        raise ValueError(f"{path}: must hold a JSON list of certificates, got "
                         f"{type(certs).__name__}")
    for k, cert in enumerate(certs):
        old = legacy and isinstance(cert, Mapping) and "environment" not in cert
        why = _problem(cert, LEGACY_FIELDS if old else FIELDS)
        if why and not old and isinstance(cert, Mapping) and "environment" not in cert \
                and _problem(cert, LEGACY_FIELDS) is None:
            why += (" (written before environments were recorded: `topofl figure snapshot "
                    "--rerecord` verifies it here and seals its values with this environment)")
        if why:
            raise ValueError(f"{path}: certificate {k} {why}")
    return certs


def environment_of(cert: Mapping[str, Any]) -> dict[str, Any]:
    """The numeric environment a certificate's values were computed in (for one written
    before environments were recorded: its torch and CPU kind, the rest ``None``).

    Examples
    --------
    >>> environment_of({"torch": "2.13.0+cpu", "cpu": "x86_64 GenuineIntel AVX512"})["numpy"]
    >>> environment_of({"environment": {"numpy": "2.4.6"}})["numpy"]
    '2.4.6'
    """
    if isinstance(cert.get("environment"), Mapping):
        return dict(cert["environment"])
    return {**dict.fromkeys(bits({})), "torch": cert.get("torch"), "cpu": cert.get("cpu"),
            "cpu_model": cert.get("cpu_model")}


def _chain(code: str, certs: list[dict[str, Any]]) -> tuple[set[str], list[int]]:
    """The codes a chain of certificates leads to ``code`` from, and the certificates used."""
    found, used = {code}, []
    grew = True
    while grew:
        grew = False
        for k, c in enumerate(certs):
            if c["to"] in found and k not in used:
                used.append(k)
                if c["from"] not in found:
                    found.add(c["from"])
                grew = True
    return found, sorted(used)


def equivalent_codes(code: str, results: str | os.PathLike[str]) -> set[str]:
    """``code`` and every fingerprint a chain of certificates in ``results`` leads to it from
    (the certificates are read with :func:`read`: a malformed one is an error; :func:`verify`
    checks what they claim)."""
    return _chain(code, read(results))[0]


def certify(before: str | os.PathLike[str], results: str | os.PathLike[str]
            ) -> dict[str, Any]:
    """Take the snapshot of the current code and, when it equals ``before`` exactly, append
    the certificate ``before's code -> current code`` to ``results/equivalence.json``.

    ``before`` must be a complete snapshot (every part of :data:`topofl.figures.snapshot.PARTS`)
    taken on committed code (it names its commit) in this numeric environment (every field of
    :data:`topofl._utils.environment.BIT_FIELDS` equal), its values unedited (its digest
    recomputed).

    Raises
    ------
    ValueError
        One line naming ``before`` and the reason: not a snapshot, partial, edited, taken on
        uncommitted code or in another environment (naming the fields that differ), or a
        value moved (the change cannot be certified).
    """
    where = str(before)
    try:
        old = json.loads(Path(before).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{where}: not a snapshot file ({exc})") from None
    need = {"code": str, "torch": str, "threads": int, "parts": list, "values": dict,
            "digest": str, "environment": dict}
    bad = [k for k, t in need.items() if not isinstance(old, dict) or not isinstance(old.get(k), t)]
    if bad:
        raise ValueError(f"{where}: not a snapshot of `topofl figure snapshot --out` (missing "
                         f"or mistyped {bad}" + ("; taken before environments were recorded: "
                                                 "take it again" if bad == ["environment"]
                                                 else "") + ")")
    if sorted(old["parts"]) != sorted(snapshot.PARTS) or not old["values"]:
        raise ValueError(f"{where}: a partial snapshot (parts {old['parts']}, "
                         f"{len(old['values'])} values) cannot certify: take one of every part "
                         f"({', '.join(snapshot.PARTS)})")
    if snapshot.digest(old["values"]) != old["digest"]:
        raise ValueError(f"{where}: its values do not match its digest {old['digest']}: the "
                         "file was edited")
    commit = old.get("commit")
    if not isinstance(commit, str) or not _COMMIT.match(commit):
        raise ValueError(f"{where}: taken on code that was not committed (no commit): take "
                         "the 'before' snapshot on a clean checkout, so the certificate names "
                         "the commit that `topofl figure index --check` re-runs")
    apart = differences(old["environment"], numeric_environment())
    if apart:
        raise ValueError(f"{where} was taken in another numeric environment ({'; '.join(apart)}):"
                         " take both in one (float sums round by the kernels and libraries)")
    now = snapshot.take(threads=old["threads"])
    diff = snapshot.compare(old, now, kept_only=True)
    if diff:
        raise ValueError(f"{len(diff)} of {len(old['values'])} snapshot values moved, so the "
                         f"change cannot be certified: {', '.join(diff[:8])}"
                         + (" ..." if len(diff) > 8 else ""))
    cert: dict[str, Any] = {
        "from": old["code"], "to": now["code"], "from_commit": commit,
        "values": len(old["values"]), "threads": old["threads"],
        "environment": old["environment"], "code": now["code"], "seeds": list(snapshot.SEEDS),
        "cpu_model": old["environment"].get("cpu_model"),
        "date": time.strftime("%Y-%m-%d", time.gmtime())}
    if cert["from"] == cert["to"]:
        return cert  # nothing changed: nothing to certify
    certs = read(results)
    cert["digest"] = _seal(results, cert, old["values"])  # the record first: never missing
    path = Path(results) / EQUIVALENCE_FILE
    path.write_text(json.dumps([*certs, cert], indent=1) + "\n", encoding="utf-8")
    return cert


def _values_path(results: str | os.PathLike[str], digest: str) -> Path:
    """Where the values of digest ``digest`` are kept (``certified/<digest>.json.gz``)."""
    return Path(results) / VALUES_DIR / f"{digest}.json.gz"


def _record_path(results: str | os.PathLike[str], digest: str) -> Path:
    """Where the sealed record of digest ``digest`` is kept (``certified/<digest>.json``)."""
    return Path(results) / VALUES_DIR / f"{digest}.json"


def _record(cert: Mapping[str, Any], values_digest: str) -> dict[str, Any]:
    """The sealed record of a certificate: the fields that decide its check, and the digest
    of its values."""
    return {"format": _FORMAT, "certificate": {f: cert[f] for f in SEALED},
            "values": values_digest}


def _store(results: str | os.PathLike[str], values: Mapping[str, Any]) -> str:
    """Keep a snapshot's values in ``results/certified/<digest>.json.gz`` (kept if there: the
    digest names its content; certificates of equal values share one file); the digest."""
    digest = snapshot.digest(values)
    path = _values_path(results, digest)
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        text = json.dumps(values, sort_keys=True, allow_nan=True)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_bytes(gzip.compress(text.encode(), compresslevel=9, mtime=0))
        os.replace(tmp, path)
    return digest


def _seal(results: str | os.PathLike[str], cert: Mapping[str, Any],
          values: Mapping[str, Any]) -> str:
    """Keep ``values`` (:func:`_store`) and the sealed record of ``cert`` (its :data:`SEALED`
    fields and the values' digest) in ``results/certified/<digest>.json``; the digest."""
    record = _record(cert, _store(results, values))
    digest = snapshot.digest(record)
    path = _record_path(results, digest)
    if not path.exists():
        replace_text(path, [json.dumps(record, indent=1, sort_keys=True), "\n"])
    return digest


def _open(path: Path, digest: str, *, gz: bool = True) -> Any:
    try:
        raw = path.read_bytes()
        return json.loads((gzip.decompress(raw) if gz else raw).decode())
    except FileNotFoundError:
        raise ValueError(f"no committed values have the certificate's digest {digest} "
                         f"({path} is absent): written by hand or edited") from None
    except (OSError, EOFError, zlib.error, UnicodeDecodeError, json.JSONDecodeError,
            RecursionError) as exc:
        raise ValueError(f"{path}: not {'gzipped ' if gz else ''}JSON of a certificate "
                         f"({exc})") from None


def _edited_fields(cert: Mapping[str, Any], sealed: Mapping[str, Any]) -> list[str]:
    """The fields (``environment.<field>`` inside the environment) where a certificate and
    its sealed record disagree, each with both values."""
    out = []
    for f in SEALED:
        mine, theirs = cert.get(f), sealed.get(f)
        if f == "environment" and isinstance(mine, Mapping) and isinstance(theirs, Mapping):
            out += [f"'environment.{k}' says {mine.get(k)!r:.60}, its sealed record "
                    f"{theirs.get(k)!r:.60}" for k in sorted(set(mine) | set(theirs))
                    if mine.get(k) != theirs.get(k)]
        elif mine != theirs:
            out.append(f"{f!r} says {mine!r:.60}, its sealed record {theirs!r:.60}")
    return out


def values_of(results: str | os.PathLike[str], cert: Mapping[str, Any]) -> dict[str, Any]:
    """The snapshot values a certificate names: its sealed record
    (``results/certified/<digest>.json``) checked against its digest and against every field
    of the certificate it seals, then the values it names (``<values digest>.json.gz``)
    against their digest and count (for a certificate written before environments were
    recorded: its values, ``<digest>.json.gz``).

    Raises
    ------
    ValueError
        Naming the file: absent (no committed values have the certificate's digest), not
        JSON, holding another content than its digest says, or sealing other fields than the
        certificate says (each edited field named with both values).
    """
    digest = cert["digest"]
    if "environment" in cert:
        path = _record_path(results, digest)
        record = _open(path, digest, gz=False)
        if not isinstance(record, dict) or snapshot.digest(record) != digest:
            raise ValueError(f"{path}: its content does not have the certificate's digest "
                             f"{digest}: edited")
        sealed = record.get("certificate")
        if (record.get("format") != _FORMAT or not isinstance(sealed, dict)
                or not isinstance(record.get("values"), str)):
            raise ValueError(f"{path}: not a sealed record of a certificate (format {_FORMAT}:"
                             " certificate and the digest of its values)")
        edited = _edited_fields(cert, sealed)
        if edited:
            raise ValueError(f"edited: {'; '.join(edited)} ({path})")
        digest = record["values"]
    path = _values_path(results, digest)
    values = _open(path, digest)
    if not isinstance(values, dict) or snapshot.digest(values) != digest:
        raise ValueError(f"{path}: its content does not have the digest {digest}: edited")
    if len(values) != cert["values"]:
        raise ValueError(f"{path} holds {len(values)} values, the certificate says "
                         f"{cert['values']}: edited")
    return values


def verify(results: str | os.PathLike[str], code: str | None = None, *,
           current: Mapping[str, Any] | None = None,
           of_commit: Callable[[str, int], Mapping[str, Any]] | None = None,
           code_of: Callable[[str], str] | None = None,
           cache: str | os.PathLike[str] | None = None,
           notes: list[str] | None = None, jobs: int = 1,
           select: Callable[[list[int]], Iterable[int]] | None = None) -> list[str]:
    """Check the certificates the results of code ``code`` rely on (:func:`check`, and its
    ``select``); the problems, one line each (empty: every one verified). ``notes`` gets a line
    per certificate verified within the rounding measured between environments (naming both)."""
    where = Path(results) / EQUIVALENCE_FILE
    problems = []
    for v in check(results, code, current=current, of_commit=of_commit, code_of=code_of,
                   cache=cache, jobs=jobs, select=select):
        head = f"{where}: certificate {v.index} ({v.cert['from']} -> {v.cert['to']})"
        if v.outcome == "failed":
            problems.append(f"{head}: {v.detail}")
        elif v.outcome == "rounding" and notes is not None:
            notes.append(f"{head}: {v.detail}")
    return problems


def check(results: str | os.PathLike[str], code: str | None = None, *,
          current: Mapping[str, Any] | None = None,
          of_commit: Callable[[str, int], Mapping[str, Any]] | None = None,
          code_of: Callable[[str], str] | None = None,
          cache: str | os.PathLike[str] | None = None, jobs: int = 1,
          report: Callable[[Verdict], None] | None = None,
          progress: Callable[[str], None] | None = None,
          select: Callable[[list[int]], Iterable[int]] | None = None) -> list[Verdict]:
    """Check every certificate the results of code ``code`` rely on: one :class:`Verdict`
    each, in the order of ``equivalence.json``. See the module docstring for the three
    checks and the cache.

    Each commit is re-run once however many certificates name it, ``jobs`` at a time
    (:class:`~topofl.figures.commits.Reruns`); those this machine never verified start at
    once, while the others are read and the current snapshot is taken. A certificate is
    decided as soon as its commit's re-run finishes (``report`` receives its verdict then),
    and a verified re-run is remembered at once, by this process alone.

    Parameters
    ----------
    results : path
        The folder of ``equivalence.json`` (and of ``certified/``).
    code : str, optional
        The code the chains lead to (default: the current fingerprint).
    current : mapping, optional
        The snapshot of that code in this environment (default: taken now, ~20 s); its
        ``environment`` is the one the check runs in (default: this process's).
    of_commit : callable, optional
        ``(commit, threads) -> {values, ...}``: default
        :func:`~topofl.figures.commits.snapshot_of_commit`, called from ``jobs`` threads.
    code_of : callable, optional
        ``commit -> fingerprint`` by the current code: default
        :func:`~topofl.figures.commits.commit_fingerprint`.
    cache : path, optional
        Where re-runs are remembered (default: ``paper_figures/out/``).
    jobs : int, default 1
        How many commits are re-run at once (each in an interpreter of its own).
    report : callable, optional
        Receives each verdict as it is decided.
    progress : callable, optional
        Receives a line on what the check does next (the current snapshot, the re-runs).
    select : callable, optional
        From the indices of the certificates the chain uses, those to check (default: all).
    """
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise ValueError(f"jobs must be an integer of at least 1, got {jobs!r}")
    certs = read(results)
    if code is None:
        code = current["code"] if current is not None else code_fingerprint()
    used = _chain(code, certs)[1]
    chosen = used if select is None else sorted(set(select(list(used))))
    if stray := sorted(set(chosen) - set(used)):
        raise ValueError(f"select must return indices of certificates the chain uses "
                         f"({len(used)} of them), got {stray[:5]}")
    used = chosen
    if not used:
        return []
    tell = progress or (lambda line: None)
    here = (current or {}).get("environment") or numeric_environment()
    store = _Cache(Path(cache) if cache is not None else _cache_path())
    found: list[Verdict] = []

    def decided(v: Verdict) -> None:
        found.append(v)
        if report is not None:
            report(v)

    waiting: dict[tuple[str, int], list[tuple[int, dict[str, Any], dict[str, Any]]]] = {}
    later = []
    tell(f"checking {len(used)} certificate(s), one line each as it is decided; the commits "
         f"not remembered re-run {jobs} at a time (~20 s of one core each)")
    with Reruns(jobs=jobs, of_commit=of_commit) as runs:
        for k in used:  # what needs no run; a commit this machine never verified runs now
            ready = _prepare(results, certs[k], current or {}, here,
                             code_of or commit_fingerprint)
            if isinstance(ready, str):
                decided(Verdict(k, certs[k], "failed", len(used), detail=ready))
            elif current is None and not store.named(ready[1]):
                key = (certs[k]["from_commit"], certs[k]["threads"])
                waiting.setdefault(key, []).append((k, *ready))
                runs.add(*key)
            else:
                later.append((k, *ready))
        if current is None:
            tell("taking the current code's snapshot" + (
                f" while {len(waiting)} commit(s) this machine never verified re-run"
                if waiting else "") + " (every certified commit must compute its values here "
                "bit for bit)")
        now = current if current is not None else snapshot.take()
        for k, recorded, fact in later:  # remembered, unless the current code moved
            key = (certs[k]["from_commit"], certs[k]["threads"])
            mine = {v: now["values"][v] for v in recorded if v in now["values"]}
            if key not in waiting and len(mine) == len(recorded) and store.holds(
                    {**fact, "digest": snapshot.digest(mine)}):
                decided(_decide(k, certs[k], len(used), recorded, mine, now, here, cached=True))
            else:
                waiting.setdefault(key, []).append((k, recorded, fact))
                runs.add(*key)
        for key, got in runs.finished():
            if isinstance(got, Exception) and not isinstance(
                    got, (ValueError, OSError, subprocess.SubprocessError)):
                raise got
            for k, recorded, fact in waiting[key]:
                if isinstance(got, Exception):
                    decided(Verdict(k, certs[k], "failed", len(used),
                                    detail=f"cannot be verified: {got}"))
                    continue
                v = _decide(k, certs[k], len(used), recorded, got.get("values"), now, here)
                if v.outcome != "failed":  # remembered at once: an interrupted check resumes
                    store.add({**fact, "digest": snapshot.digest(got["values"])})
                decided(v)
    return sorted(found, key=lambda v: v.index)


def _prepare(results: str | os.PathLike[str], c: Mapping[str, Any], now: Mapping[str, Any],
             here: Mapping[str, Any], code_of: Callable[[str], str]
             ) -> str | tuple[dict[str, Any], dict[str, Any]]:
    """What can be checked of certificate ``c`` before its commit runs (its torch, its sealed
    values, its commit's code); why it fails, or its sealed values and the fact a re-run
    would establish (:mod:`topofl.figures.verified`)."""
    theirs = environment_of(c)
    if theirs.get("torch") != here.get("torch", now.get("torch")):
        return (f"taken with torch {theirs.get('torch')}, this is {here.get('torch')}: verify "
                "with the torch that took it")
    try:
        recorded = values_of(results, c)
        code = code_of(c["from_commit"])
    except (ValueError, OSError, subprocess.SubprocessError) as exc:
        return f"cannot be verified: {exc}"
    if code != c["from"]:
        return (f"commit {c['from_commit'][:12]} is code {code}, not {c['from']} (its files, "
                "fingerprinted by the current code)")
    return recorded, {"commit": c["from_commit"], "code": code,
                      "environment": _environment_digest(here), "threads": c["threads"]}


def _decide(k: int, c: Mapping[str, Any], of: int, recorded: Mapping[str, Any], values: Any,
            now: Mapping[str, Any], here: Mapping[str, Any], *, cached: bool = False
            ) -> Verdict:
    """Checks 2 and 3 of the module docstring on the values of ``c``'s commit here."""
    commit = c["from_commit"][:12]
    if not isinstance(values, dict):
        return Verdict(k, c, "failed", of, cached,
                       detail=f"the snapshot of commit {commit} holds no values")
    theirs = environment_of(c)
    why, note, largest = _against_record(recorded, values, theirs, here, commit)
    if why is None:
        moved = snapshot.compare({"values": values}, now, kept_only=True)
        if moved:
            why = (f"the current code moves {len(moved)} of the {len(values)} values of "
                   f"{c['from']}: {', '.join(moved[:5])}{' ...' if len(moved) > 5 else ''}")
    if why is not None:
        return Verdict(k, c, "failed", of, cached, detail=why)
    fields = tuple(d.split(" ", 1)[0] for d in differences(theirs, here))
    if note is None:
        return Verdict(k, c, "bitwise", of, cached, fields)
    return Verdict(k, c, "rounding", of, cached, fields, detail=note, largest=largest)


def _against_record(recorded: Mapping[str, Any], values: Mapping[str, Any],
                    theirs: Mapping[str, Any], here: Mapping[str, Any], commit: str
                    ) -> tuple[str | None, str | None, str]:
    """Check 2: the sealed values against the commit's here (bitwise in the certificate's
    environment, else within the measured rounding): ``(why not, None, "")``; ``(None, None,
    "")`` when they are the same bits; ``(None, a note, the largest difference)`` when they
    differ within rounding."""
    if snapshot.digest(dict(recorded)) == snapshot.digest(
            {k: values[k] for k in recorded if k in values}):
        return None, None, ""  # the same bits
    apart = differences(theirs, here)
    worst, at = snapshot.largest_difference(
        {k: v for k, v in recorded.items() if k not in snapshot.DISCRETE}, values)
    branched = sorted(k for k in snapshot.DISCRETE
                      if k in recorded and k in values and recorded[k] != values[k])
    envs = (f"certificate's environment vs this one: {'; '.join(apart)}"
            + (f"; another branch on a last bit in {', '.join(branched)}, compared in its "
               "integers, accuracies and shape only (topofl.figures.snapshot.DISCRETE)"
               if branched else ""))
    if not apart:
        worst, at = snapshot.largest_difference(recorded, values)
        moved = snapshot.compare({"values": recorded}, {"values": values})
        return (f"the snapshot of commit {commit} differs from its sealed values in {len(moved)}"
                f" of {len(recorded)} ({', '.join(moved[:5])}{' ...' if len(moved) > 5 else ''};"
                f" largest relative difference {worst:.3g} at {at}) although this environment "
                "equals the certificate's in every field that decides the bits: edited, or the "
                "environments differ in something they do not record"), None, ""
    off = snapshot.compare({"values": recorded}, {"values": values}, rounding=True)
    if off:
        return (f"the snapshot of commit {commit} here differs from its sealed values beyond "
                f"the rounding measured between environments in {len(off)} of {len(recorded)}: "
                f"{', '.join(off[:5])}{' ...' if len(off) > 5 else ''} (largest relative "
                f"difference {worst:.3g} at {at}; {envs}; topofl.figures.snapshot.env_rtol): "
                "edited"), None, ""
    largest = (f"largest relative difference {worst:.3g} at {at}" if worst else "") + (
        f"{'; ' if worst else ''}another branch on a last bit in {', '.join(branched)}"
        if branched else "")
    return None, ("differs within this environment's rounding ("
                  + (f"largest relative difference {worst:.3g} at {at}; " if worst else "")
                  + f"{envs})"), largest


def rerecord(results: str | os.PathLike[str], *,
             current: Mapping[str, Any] | None = None,
             of_commit: Callable[[str, int], Mapping[str, Any]] | None = None,
             code_of: Callable[[str], str] | None = None) -> list[dict[str, Any]]:
    """Seal, with this environment, the certificates written before environments were
    recorded; the certificates rewritten.

    Each one is first checked here as :func:`verify` would: its commit's code is ``from``;
    its committed values (when it has them) are within the rounding measured between
    environments of what its commit computes here (they were taken in an environment not
    recorded: never bit for bit); and the current code computes every value of that commit
    here to the last bit. Then its commit's values here are sealed with this environment
    (:func:`topofl._utils.environment.numeric_environment`), and the certificate names that digest
    and environment; what it had is kept as ``first`` (informative). A certificate that does
    not pass is left as it is, and the error names it.

    Raises
    ------
    ValueError
        One line per certificate that could not be checked, after the others are rewritten.
    """
    certs = read(results, legacy=True)
    now = current if current is not None else snapshot.take()
    here = dict(now.get("environment") or numeric_environment())
    run = of_commit or snapshot_of_commit
    code_of = code_of or commit_fingerprint
    taken: dict[tuple[str, int], Any] = {}  # a commit certified twice runs once

    def once(commit: str, threads: int) -> Mapping[str, Any]:
        if (commit, threads) not in taken:
            taken[commit, threads] = run(commit, threads)
        found: Mapping[str, Any] = taken[commit, threads]
        return found

    done, problems = [], []
    for k, c in enumerate(certs):
        if "environment" in c:
            continue
        code = code_of(c["from_commit"])
        if code != c["from"]:
            problems.append(f"certificate {k}: commit {c['from_commit'][:12]} is code "
                            f"{code}, not {c['from']}")
            continue
        values = once(c["from_commit"], c["threads"]).get("values")
        if not isinstance(values, dict) or len(values) != c["values"]:
            problems.append(f"certificate {k}: the snapshot of commit {c['from_commit'][:12]} "
                            f"holds {len(values) if isinstance(values, dict) else 'no'} values "
                            f"for {c['values']}")
            continue
        if _values_path(results, c["digest"]).exists():  # its plain values
            try:
                off = snapshot.compare({"values": values_of(results, c)}, {"values": values},
                                       rounding=True)
            except ValueError as exc:
                problems.append(f"certificate {k}: {exc}")
                continue
            if off:
                problems.append(f"certificate {k}: its committed values differ from its "
                                f"commit's here beyond rounding: {', '.join(off[:5])}")
                continue
        moved = snapshot.compare({"values": values}, now, kept_only=True)
        if moved:
            problems.append(f"certificate {k}: {len(moved)} values moved here: "
                            f"{', '.join(moved[:5])}")
            continue
        first = {f: c[f] for f in ("digest", "cpu", "cpu_model", "torch", "date") if f in c}
        for f in ("cpu", "cpu_model", "torch", "first"):
            c.pop(f, None)
        c.update(environment=here, cpu_model=here.get("cpu_model"), first=first)
        c["digest"] = _seal(results, c, values)
        done.append(c)
    if done:
        path = Path(results) / EQUIVALENCE_FILE
        path.write_text(json.dumps(certs, indent=1) + "\n", encoding="utf-8")
    if problems:
        raise ValueError("; ".join(problems))
    return done
