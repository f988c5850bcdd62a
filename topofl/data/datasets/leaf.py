"""FEMNIST from the LEAF JSON files."""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from topofl.data.datasets.base import Dataset, PathLike, as_labels
from topofl.data.datasets.files import _folder, _missing

_LEAF_HELP = (
    " FEMNIST has no official pre-built download: clone https://github.com/TalwalkarLab/leaf, "
    "run data/femnist/preprocess.sh (e.g. -s niid --sf 1.0 -k 0 -t sample), then copy "
    "data/femnist/data/train/*.json and data/femnist/data/test/*.json into the train/ and test/ "
    "folders above."
)


def femnist(root: PathLike | None = None, *, download: bool = False) -> Dataset:
    """FEMNIST (62 classes, 28x28) from the LEAF JSON files, with the natural writer split.

    Reads every ``root/femnist/train/*.json`` and ``root/femnist/test/*.json`` (LEAF's format:
    ``{"users": [...], "num_samples": [...], "user_data": {user: {"x": [[784 floats]], "y":
    [...]}}}``). Pixels are kept as LEAF stores them (floats in ``[0, 1]``). The writer of every
    sample is ``groups_train`` / ``groups_test`` (ids into ``group_names``, the sorted LEAF user
    names), for :func:`topofl.data.natural`. ``download=True`` is refused: LEAF publishes no
    pre-built files.
    """
    folder = _folder("femnist", root, download)
    files = {s: sorted((folder / s).glob("*.json")) for s in ("train", "test")}
    if not files["train"] or not files["test"]:
        msg = " (download=True is not available for FEMNIST.)" if download else ""
        raise _missing("femnist", folder, ["train/*.json", "test/*.json"], _LEAF_HELP + msg)
    raw: dict[str, list[tuple[str, list[Any], list[Any]]]] = {"train": [], "test": []}
    for split, paths in files.items():
        for p in paths:
            try:
                doc = json.loads(p.read_text(encoding="utf-8"))
                if not isinstance(doc, dict) or not isinstance(doc.get("users"), list):
                    raise TypeError(f"expected an object with a 'users' list, found "
                                    f"{type(doc).__name__}")
                for user in doc["users"]:
                    ud = doc["user_data"][user]
                    raw[split].append((str(user), ud["x"], ud["y"]))
            except (KeyError, TypeError, UnicodeDecodeError, json.JSONDecodeError,
                    RecursionError) as exc:
                raise ValueError(f"{p} is not a LEAF JSON file: {exc!r}") from exc
        if not raw[split]:
            raise ValueError(
                f"femnist: the {split} files ({', '.join(p.name for p in paths)}) hold no user "
                "(every 'users' list is empty): no samples to load")
    users = sorted({u for split in raw.values() for u, _, _ in split})
    uid = {u: i for i, u in enumerate(users)}
    arrays = {}
    for split, entries in raw.items():
        xs, ys = [], []
        for u, x_raw, y_raw in entries:
            try:
                xs.append(np.asarray(x_raw, dtype=np.float32).reshape(-1, 784))
            except (TypeError, ValueError) as exc:
                raise ValueError(
                    f"femnist {split} user {u}: 'x' must be a list of 784 numbers per image "
                    f"({exc})"
                ) from None
            ys.append(as_labels(y_raw, f"femnist {split} labels of user {u}"))
        for (u, _, _), x, y in zip(entries, xs, ys):
            if x.shape[0] != y.shape[0]:
                raise ValueError(
                    f"femnist {split} user {u}: {x.shape[0]} images, {y.shape[0]} labels"
                )
        g = np.concatenate([np.full(y.shape[0], uid[u]) for (u, _, _), y in zip(entries, ys)])
        arrays[split] = (
            np.concatenate(xs).reshape(-1, 1, 28, 28),
            np.concatenate(ys),
            g.astype(np.int64),
        )
    return Dataset(
        name="femnist",
        x_train=arrays["train"][0],
        y_train=arrays["train"][1],
        x_test=arrays["test"][0],
        y_test=arrays["test"][1],
        num_classes=62,
        input_shape=(1, 28, 28),
        classes=tuple("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"),
        groups_train=arrays["train"][2],
        groups_test=arrays["test"][2],
        group_names=tuple(users),
        params={"root": str(folder)},
    )
