"""The checksums a run's records carry, so that a reader tells damage from a crash's cut.

Written by :class:`~topofl.records.Recorder`, checked by :func:`topofl.records.load`
(:mod:`topofl.records._integrity`). Every field is one a plain JSON, pandas or Arrow reader
reads as data; none changes a value.

- **The header line** ends with ``"crc": "<8 hex>"``: the CRC-32 of the line's JSON text
  without that field.
- **Every row** ends with ``"crc": "<blocks>:<8 hex>"``: ``blocks`` is how many per-client
  blocks the run had written before the row, and the 8 hex digits are the CRC-32 of
  ``"<blocks>:"`` and the row's JSON text without the field, *chained*: started from the
  previous row's CRC (the first row's from :func:`seed`, the run id and run hash). A row
  edited, removed, moved or duplicated breaks the chain at that place; a row's count names
  the blocks the client file must hold before it.
- **The client file** (an Arrow stream) carries the run's identity in its schema metadata
  (``topofl:run``, ``topofl:run_hash``, ``topofl:checks``); every block's record batch its
  number ``topofl:seq`` (0, 1, ...) and ``topofl:crc``, the CRC-32 of what it holds
  (:func:`block_crc`); a writer that closes the file ends it with an empty batch whose
  ``topofl:blocks`` is how many blocks it holds.

A file without them was written before records carried checksums; it is read as then.
"""

from __future__ import annotations

import re
import struct
import zlib

import numpy as np

__all__ = ["seed", "seal_row", "seal_header", "unseal", "block_crc", "torn_seal",
           "SEQ", "CRC", "BLOCKS", "RUN", "RUN_HASH", "CHECKS", "CHECKS_VALUE"]

#: Batch metadata keys of a block: its number and its checksum; of the closing batch: the count.
SEQ, CRC, BLOCKS = b"topofl:seq", b"topofl:crc", b"topofl:blocks"
#: Schema metadata keys of a client file: the run id, its run hash, the checks it carries.
RUN, RUN_HASH, CHECKS = b"topofl:run", b"topofl:run_hash", b"topofl:checks"
CHECKS_VALUE = b"crc32/1"

#: Where a seal begins: a sealed line ends ``, "crc": "[<blocks>:]<8 hex>"}`` (spaces after
#: it tolerated); in a line cut short, what follows it must be a prefix of that.
_START = b', "crc": "'
_SEAL = re.compile(rb'((?:\d+:)?[0-9a-f]{8})"\}[ \t\r]*')
_TAIL = re.compile(rb'\d*|\d+:[0-9a-f]{0,8}|\d+:[0-9a-f]{8}"')


def seed(run: str, run_hash: str | None) -> int:
    """The start of a run's row chain: the CRC-32 of its run id and run hash.

    Examples
    --------
    >>> from topofl.records._seal import seed
    >>> seed("a", None) == seed("a", ""), seed("a", None) == seed("b", None)
    (True, False)
    """
    return zlib.crc32(f"{run}\0{run_hash or ''}".encode())


def seal_row(text: str, blocks: int, prev: int) -> tuple[str, int]:
    """The row ``text`` (``json.dumps`` of a row) with its ``crc`` field, and its CRC (the
    next row's ``prev``).

    Examples
    --------
    >>> from topofl.records._seal import seal_row, unseal
    >>> line, crc = seal_row('{"run": "a", "value": 1}', 2, 0)
    >>> line == '{"run": "a", "value": 1, "crc": "2:%08x"}' % crc
    True
    >>> unseal(line.encode()) == (b'{"run": "a", "value": 1}', "2:%08x" % crc)
    True
    """
    crc = zlib.crc32(text.encode(), zlib.crc32(b"%d:" % blocks, prev))
    return f'{text[:-1]}, "crc": "{blocks}:{crc:08x}"}}', crc


def seal_header(text: str) -> str:
    """The header line ``text`` (``json.dumps`` of the header) with its ``crc`` field.

    Examples
    --------
    >>> from topofl.records._seal import seal_header
    >>> seal_header('{"header": true}')
    '{"header": true, "crc": "46f0c9d7"}'
    """
    return f'{text[:-1]}, "crc": "{zlib.crc32(text.encode()):08x}"}}'


def unseal(raw: bytes) -> tuple[bytes, str] | None:
    """``(text, seal)`` of a sealed line ``raw`` (no newline): the JSON text it was sealed
    from and its ``crc`` field's value; ``None`` when the line does not end in one."""
    k = raw.rfind(_START)
    m = None if k < 0 else _SEAL.fullmatch(raw, k + len(_START))
    if m is None:
        return None
    return raw[:k] + b"}", m.group(1).decode("ascii")


def torn_seal(raw: bytes) -> bool:
    """Whether a final line ``raw`` that does not parse holds more than a sealed line cut
    short can: a complete line's end (``}``), or after the seal's start bytes that are not a
    prefix of ``<blocks>:<8 hex>"}``. Such a line was damaged, not cut by a crash."""
    if raw.rstrip().endswith(b"}"):
        return True
    k = raw.rfind(_START)
    return k >= 0 and _TAIL.fullmatch(raw[k + len(_START):]) is None


def block_crc(metric: str, round: int, at: int, integer: bool, values: np.ndarray) -> int:
    """The CRC-32 of what a block holds: its metric, round, place, kind and float64 values.

    Examples
    --------
    >>> import numpy as np
    >>> from topofl.records._seal import block_crc
    >>> a = block_crc("acc", 0, 1, False, np.array([0.5, 0.25]))
    >>> a == block_crc("acc", 0, 1, False, np.array([0.5, 0.25])), a == block_crc(
    ...     "acc", 0, 1, False, np.array([0.5, 0.75]))
    (True, False)
    """
    head = metric.encode() + b"\0" + struct.pack("<qq?", round, at, integer)
    data = np.ascontiguousarray(values, dtype="<f8")
    return zlib.crc32(data.data, zlib.crc32(head))
