"""Names: the suggestion of a failed lookup by name (graph families, algorithms, models,
datasets, partitions, choices, config keys) and its message.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

__all__ = ["did_you_mean", "edit_distance", "did_you_mean_each", "unknown_name", "check_table"]


def did_you_mean(value: Any, known: Collection[str]) -> str:
    """``" (did you mean 'ring'?)"`` for the known name closest to ``value``, or ``""``.

    The one place every lookup by name (graph families, algorithms, models, datasets,
    partitions, choices) finds its suggestion. The candidates are :mod:`difflib`'s (similarity
    ratio at least 0.6); the closest is the one of highest ratio, ties broken by the fewest
    edits counting a swap of two neighbouring letters as one (:func:`edit_distance`: ``dsdg``
    is one swap from ``dsgd``, two substitutions from ``dsgt``, both of ratio 0.75), then by
    name.

    Examples
    --------
    >>> from topofl._utils.validation.names import did_you_mean
    >>> did_you_mean("rnig", ["ring", "torus", "complete"])
    " (did you mean 'ring'?)"
    >>> did_you_mean("xyz", ["ring", "torus"])
    ''
    >>> did_you_mean("dsdg", ["dsgt", "dsgd", "adpsgd"])
    " (did you mean 'dsgd'?)"
    """
    import difflib

    if not isinstance(value, str) or not value:
        return ""
    names = [k for k in known if isinstance(k, str)]
    low = {k.lower(): k for k in names}
    if value.lower() in low and low[value.lower()] != value:
        return f" (did you mean {low[value.lower()]!r}?)"
    word = value.lower()
    close = difflib.get_close_matches(word, list(low), n=max(1, len(low)), cutoff=0.6)
    if not close:
        return ""

    def rank(k: str) -> tuple[float, int, str]:
        return (-difflib.SequenceMatcher(None, word, k).ratio(), edit_distance(word, k), k)

    return f" (did you mean {low[min(close, key=rank)]!r}?)"


def edit_distance(a: str, b: str) -> int:
    """The fewest insertions, deletions, substitutions and swaps of two neighbouring
    characters that turn ``a`` into ``b`` (optimal string alignment: Damerau-Levenshtein
    without editing a substring twice); O(len(a) len(b)).

    Examples
    --------
    >>> from topofl._utils.validation.names import edit_distance
    >>> edit_distance("dsdg", "dsgd"), edit_distance("dsdg", "dsgt"), edit_distance("", "ab")
    (1, 2, 2)
    >>> edit_distance("kitten", "sitting"), edit_distance("ca", "abc")
    (3, 3)
    """
    prev2: list[int] = []
    prev = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        cur = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cost = 0 if a[i - 1] == b[j - 1] else 1
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                cur[j] = min(cur[j], prev2[j - 2] + 1)
        prev2, prev = prev, cur
    return prev[len(b)]


def did_you_mean_each(values: Collection[Any], known: Collection[str]) -> str:
    """:func:`did_you_mean` for several unknown names at once (keys of a config ...).

    Examples
    --------
    >>> from topofl._utils.validation.names import did_you_mean_each
    >>> did_you_mean_each(["lrr", "xyz", "momentm"], ["lr", "momentum", "seed"])
    " (did you mean 'lr' for 'lrr', 'momentum' for 'momentm'?)"
    """
    pairs = []
    for v in values:
        hint = did_you_mean(v, known)
        if hint:
            pairs.append(hint[len(" (did you mean "):-len("?)")] + f" for {v!r}")
    return f" (did you mean {', '.join(pairs)}?)" if pairs else ""


def unknown_name(what: str, value: Any, known: Collection[str], *, sort: bool = True) -> str:
    """The message of a failed lookup by name: what was asked, the likely name, the known ones.

    Examples
    --------
    >>> from topofl._utils.validation.names import unknown_name
    >>> unknown_name("graph family", "rnig", ["torus", "ring"])
    "unknown graph family 'rnig' (did you mean 'ring'?); known: ring, torus"
    """
    names = sorted(known) if sort else list(known)
    return f"unknown {what} {value!r}{did_you_mean(value, names)}; known: {', '.join(names)}"


def check_table(table: Any, name: str, keys: Collection[str]) -> Mapping[str, Any]:
    """``table`` checked as a setting's table of ``keys``: a ``TypeError`` for a value that is
    not a mapping, a one-line ``ValueError`` naming the first unknown key (with the likely
    one) and the known ones.

    Examples
    --------
    >>> from topofl._utils.validation.names import check_table
    >>> check_table({"seed": 1}, "attack", ("seed", "samples"))
    {'seed': 1}
    >>> check_table({"sample": 1}, "attack", ("seed", "samples"))
    Traceback (most recent call last):
    ...
    ValueError: attack has no key 'sample' (did you mean 'samples'?); its keys are seed, samples
    """
    if not isinstance(table, Mapping):
        raise TypeError(f"{name} must be a table (a mapping) or None, got "
                        f"{type(table).__name__}")
    unknown = sorted(set(table) - set(keys))
    if unknown:
        raise ValueError(f"{name} has no key {unknown[0]!r}{did_you_mean(unknown[0], keys)}; "
                         f"its keys are {', '.join(keys)}")
    return table
