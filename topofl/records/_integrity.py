"""Checking a run's records against the checksums they carry (:mod:`topofl.records._seal`).

:func:`check_rows` checks the lines of a ``.jsonl`` file (its header's CRC, every row's link
in the chain), :func:`check_blocks` its client file against them (the run's identity, every
block's CRC and number, the blocks the rows count). Each returns the :class:`Damage` it
found: one whose data would be wrong or partly missing is *refused*
(:func:`topofl.records.load` raises it); a client file that is missing, empty or a folder
leaves the per-client values out, every one of them, with a
:class:`DamagedRecordsWarning` (the queries then say they were not recorded). A resumed run
refuses every damage that touches the rounds it keeps.

A crash leaves a *prefix* of each file, never anything else: the writer hands every block
to the operating system before the next row, so a complete row on disk has every block it
counts complete on disk, and only a last block that no row counts may be cut short. A file
without checksums (written before they were) is read as it was then.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from topofl.records._seal import RUN, RUN_HASH, seed
from topofl.records.columns import ClientStream

__all__ = ["Damage", "DamagedRecordsWarning", "Line", "check_rows", "check_blocks",
           "identity_damage"]

#: What a message says to do about a damaged file.
_FIX = "restore it from a copy, or run again"


class DamagedRecordsWarning(UserWarning):
    """Records loaded without values they should hold: their client file is missing, empty
    or a folder (the message names the rows and rounds whose per-client values are left
    out)."""


@dataclass(frozen=True)
class Damage:
    """A place where records do not match their checksums.

    Attributes
    ----------
    message : str
        One line naming the file, the lines or blocks and their rounds, what was expected and
        what was found.
    refuse : bool
        Whether data read from it would be wrong or partly missing (:func:`load` raises it);
        else values are left out, all of a kind, and :func:`load` warns.
    since : int or None
        The earliest round it touches (``None``: the whole run, such as another run's file).
    missing : bool
        Whether it is blocks missing (or unreadable) from the client file, which a resumed
        run's count of blocks decides when its checkpoint stored one.
    """

    message: str
    refuse: bool
    since: int | None
    missing: bool = False


class Line(NamedTuple):
    """A header or row line as read: its 1-based ``number``, the JSON ``text`` it was sealed
    from and its ``seal`` (both ``None``: it ends in none), and whether its object ``claims``
    a ``crc`` field."""

    number: int
    text: bytes | None
    seal: str | None
    claims: bool


def _row_seal(seal: str | None) -> tuple[int, int | None]:
    """``(blocks, crc)`` of a row's seal (``crc`` ``None``: not a row's seal)."""
    if seal is None or ":" not in seal:
        return 0, None
    k, crc = seal.split(":")
    return int(k), int(crc, 16)


def _row(rows: Sequence[dict[str, Any]], lines: Sequence[Line], i: int) -> str:
    return f"{lines[i].number} (round {rows[i]['round']}, {rows[i]['metric']!r})"


def _named(rows: Sequence[dict[str, Any]], lines: Sequence[Line], idx: Sequence[int]) -> str:
    """``line 7 (round 3, 'acc')`` or ``lines 7 (...), 9 (...)``, eight at most."""
    shown = ", ".join(_row(rows, lines, i) for i in idx[:8])
    more = "" if len(idx) <= 8 else f", ... ({len(idx)} in all)"
    return f"line {shown}" if len(idx) == 1 else f"lines {shown}{more}"


def _round_before(rows: Sequence[dict[str, Any]], i: int) -> int:
    """The round of the row before row ``i`` (what comes after it is of that round or later;
    0 at the start)."""
    if not rows or i <= 0:
        return 0
    return int(rows[min(i, len(rows)) - 1]["round"])


def check_rows(p: Path, head: Line | None, rows: Sequence[dict[str, Any]],
               lines: Sequence[Line], run: str, run_hash: str | None
               ) -> tuple[bool, list[Damage], list[int]]:
    """Check the header and rows of the records file ``p`` against their checksums.

    Returns
    -------
    sealed : bool
        Whether the file carries checksums (its first line does).
    damages : list of Damage
    counts : list of int
        Per row, the per-client blocks written before it (empty when not ``sealed``).
    """
    first = head if head is not None else (lines[0] if lines else None)
    if first is None or first.seal is None:
        claim = next((ln for ln in ([head] if head else []) + list(lines) if ln.claims), None)
        if claim is None or first is None:
            return False, [], []
        what = "the header" if first is head else "the first row"
        return False, [Damage(
            f"{p}: line {claim.number} carries a checksum ('crc') but {what}, line "
            f"{first.number}, carries none: {what} was replaced or edited; {_FIX}", True,
            None)], []
    damages: list[Damage] = []
    if head is not None and head.text is not None and head.seal is not None:
        crc = f"{zlib.crc32(head.text):08x}"
        if head.seal != crc:
            damages.append(Damage(
                f"{p}: line {head.number}: the header does not match its checksum (it carries "
                f"{head.seal}, its text gives {crc}): it was edited or damaged, so its config "
                f"and run hash are not the run's; {_FIX}", True, None))
    prev = seed(run, run_hash)
    counts: list[int] = []
    unsealed: list[int] = []
    broken: list[int] = []
    for i, ln in enumerate(lines):
        k, stored = _row_seal(ln.seal)
        if stored is None or ln.text is None:
            unsealed.append(i)
            counts.append(counts[-1] if counts else 0)
            continue
        if zlib.crc32(ln.text, zlib.crc32(b"%d:" % k, prev)) != stored:
            broken.append(i)
        prev = stored
        counts.append(k)
    if unsealed:
        one = len(unsealed) == 1
        damages.append(Damage(
            f"{p}: {_named(rows, lines, unsealed)} {'has' if one else 'have'} no checksum "
            f"('crc': '<blocks>:<8 hex>'), but the file's line {first.number} has one: "
            f"{'the row was' if one else 'rows were'} inserted or edited; {_FIX}", True,
            _round_before(rows, unsealed[0])))
    if broken:
        one = len(broken) == 1
        damages.append(Damage(
            f"{p}: {_named(rows, lines, broken)} {'does' if one else 'do'} not match "
            f"{'its checksum' if one else 'their checksums'}: "
            f"{'the row was' if one else 'rows were'} edited, or a row before "
            f"{'it' if one else 'each'} removed, moved or duplicated; {_FIX}", True,
            _round_before(rows, broken[0])))
    damages.sort(key=lambda d: 0 if d.since is None else 1)
    return True, damages, counts


def _block(s: ClientStream, j: int) -> str:
    b = s.blocks[j]
    return f"block {j} ({b.metric!r}, round {b.round})"


def identity_damage(p: Path, c: Path, s: ClientStream, run: str,
                     run_hash: str | None) -> Damage | None:
    """Refusal of a client file that is not run ``run``'s (run hash ``run_hash``)."""
    if not s.sealed:
        if not s.blocks:
            return None  # holds nothing (empty, or its schema cut short by a crash)
        return Damage(
            f"{p}: its client file {c} carries no run identity and no checksums (written "
            f"before records carried them, or not by a run), but {p.name} carries them: it is "
            "not this run's client file; put the run's own beside it, or remove it", True, None)
    ident = s.identity or {}
    theirs = (ident.get(RUN, b"").decode("utf-8", "replace"),
              ident.get(RUN_HASH, b"").decode("utf-8", "replace"))
    if theirs == (run, run_hash or ""):
        return None
    return Damage(
        f"{p}: its client file {c} belongs to another run (run id {theirs[0]!r}, run hash "
        f"{theirs[1] or 'none'}), expected run id {run!r}, run hash {run_hash or 'none'} as "
        f"{p.name} says: its per-client values are not this run's; put the run's own client "
        "file beside it, or remove that one", True, None)


def _absent(p: Path, c: Path, state: str, rows: Sequence[dict[str, Any]],
            lines: Sequence[Line], counts: Sequence[int]) -> list[Damage]:
    """The warning of a client file that holds nothing (``state``) though rows count blocks."""
    expected = counts[-1] if counts else 0
    if expected <= 0:
        return []
    first = next(i for i, k in enumerate(counts) if k > 0)
    last = next(i for i, k in enumerate(counts) if k == expected)
    rounds = sorted({int(rows[i]["round"]) for i, k in enumerate(counts)
                     if k > (counts[i - 1] if i else 0)})
    shown = ", ".join(map(str, rounds[:8])) + (", ..." if len(rounds) > 8 else "")
    return [Damage(
        f"{p}: its client file {c} {state}, but its rows count {expected} per-client "
        f"block(s) written before them (from line {_row(rows, lines, first)} to line "
        f"{_row(rows, lines, last)}): the per-client values of round(s) {shown} are not "
        f"loaded; put the client file back beside {p.name} to read them", False,
        _round_before(rows, first), missing=True)]


def check_blocks(p: Path, c: Path, state: str, s: ClientStream | None,
                 rows: Sequence[dict[str, Any]], lines: Sequence[Line], counts: Sequence[int],
                 run: str, run_hash: str | None) -> tuple[list[Damage], int]:
    """Check the client file ``c`` of the sealed records file ``p`` against its rows.

    ``state`` says what is at ``c`` when ``s`` (the stream read) is ``None``: ``"is
    missing"`` or ``"is a folder"``. Returns the damages and the bytes of a last block cut
    short by a crash (dropped; 0: none).
    """
    if s is None:
        return _absent(p, c, state, rows, lines, counts), 0
    wrong = identity_damage(p, c, s, run, run_hash)
    if wrong is not None:
        return [wrong], 0
    expected = counts[-1] if counts else 0
    if not s.sealed and not s.cut:
        return _absent(p, c, "is empty", rows, lines, counts), 0
    need = max(expected, s.end or 0)
    damages: list[Damage] = []
    last = len(s.blocks) - 1
    since = _round_before(rows, s.blocks[-1].at + 1) if s.blocks else 0
    after = "" if last < 0 else f" after {_block(s, last)}"
    if s.cut and (s.eos or s.end is not None or need > len(s.blocks)):
        why = ("the file ends with its end-of-stream marker" if s.eos or s.end is not None
               else f"its rows count {need} block(s), {need - len(s.blocks)} of them past "
               "that point (a crash cuts only a last block no row counts)")
        damages.append(Damage(
            f"{p}: its client file {c} cannot be read{after} ({s.why}) for its last {s.cut} "
            f"bytes, but {why}: the file is damaged there, not cut by a crash; {_FIX}", True,
            min(since, s.blocks[-1].round) if s.blocks else 0, missing=True))
        return damages, 0
    damages += _block_damages(p, c, s, rows, lines, counts, need)
    return damages, s.cut


def _block_damages(p: Path, c: Path, s: ClientStream, rows: Sequence[dict[str, Any]],
                   lines: Sequence[Line], counts: Sequence[int], need: int) -> list[Damage]:
    """Blocks that fail their CRC, are out of their order, missing, or not where the rows
    count them; and a closing count that is not the blocks'."""
    out: list[Damage] = []
    bad = [j for j, (seal, crc) in enumerate(zip(s.seals, s.crcs))
           if seal is None or seal[1] != crc]
    if bad:
        shown = ", ".join(_block(s, j) for j in bad[:8]) + (", ..." if len(bad) > 8 else "")
        out.append(Damage(
            f"{p}: its client file {c}: {shown} {'does' if len(bad) == 1 else 'do'} not match "
            "the checksum it carries: its values are damaged; " + _FIX, True,
            min(min(s.blocks[j].round, _round_before(rows, s.blocks[j].at)) for j in bad)))
    prev = -1
    present: set[int] = set()
    for j, seal in enumerate(s.seals):
        if seal is None:
            continue
        if seal[0] <= prev:
            out.append(Damage(
                f"{p}: its client file {c}: {_block(s, j)} is numbered {seal[0]}, expected "
                f"{prev + 1} or more after block number {prev}: a block was duplicated or "
                f"moved; {_FIX}", True, _round_before(rows, s.blocks[j].at)))
        present.add(seal[0])
        prev = max(prev, seal[0])
    missing = [k for k in range(max(need, prev + 1)) if k not in present]
    if missing:
        out.append(_missing(p, c, s, rows, lines, counts, missing, max(need, prev + 1)))
    if s.end is not None and s.end != prev + 1:
        out.append(Damage(
            f"{p}: its client file {c} ends with a count of {s.end} block(s), but holds blocks "
            f"numbered up to {prev}: blocks were added or removed; {_FIX}", True,
            _round_before(rows, len(rows))))
    for j, (seal, crc) in enumerate(zip(s.seals, s.crcs)):
        b = s.blocks[j]
        if seal is None or seal[1] != crc or not 0 <= b.at <= len(rows):
            continue  # refused above (its place cannot be trusted), or past the rows
        lo = counts[b.at - 1] if b.at > 0 else 0
        hi = counts[b.at] if b.at < len(rows) else None
        if lo <= seal[0] and (hi is None or seal[0] < hi):
            continue
        where = (f"before line {_row(rows, lines, b.at)}" if b.at < len(rows)
                 else "after the last row")
        out.append(Damage(
            f"{p}: its client file {c}: {_block(s, j)}, block number {seal[0]}, stands "
            f"{where}, whose rows count {lo}{'' if hi is None else f' and {hi}'} block(s) "
            f"around it: the client file does not belong with these rows; {_FIX}", True,
            _round_before(rows, b.at)))
        break
    return out


def _missing(p: Path, c: Path, s: ClientStream, rows: Sequence[dict[str, Any]],
             lines: Sequence[Line], counts: Sequence[int], missing: Sequence[int],
             total: int) -> Damage:
    """The refusal of blocks the rows (or the file's closing count) count that it lacks."""
    first = missing[0]
    at = next((i for i, k in enumerate(counts) if k > first), None)
    where = ("after the last row" if at is None
             else f"before line {_row(rows, lines, at)}")
    prior = [b for b, seal in zip(s.blocks, s.seals) if seal is not None and seal[0] < first]
    after = "" if not prior else f", after block {first - 1} ({prior[-1].metric!r}, round " \
                                 f"{prior[-1].round})"
    shown = ", ".join(map(str, missing[:8])) + (", ..." if len(missing) > 8 else "")
    since = _round_before(rows, len(rows) if at is None else at)
    if prior:
        since = min(since, prior[-1].round)
    return Damage(
        f"{p}: its client file {c} lacks block(s) number {shown} of the {total} the run "
        f"wrote (block {first} stands {where}{after}): the per-client values of those rounds "
        f"are missing, the file was cut or blocks removed; {_FIX}", True, since, missing=True)
