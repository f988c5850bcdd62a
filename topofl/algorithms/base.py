"""The algorithm registry: ``ALGORITHMS`` maps a name to its factory, :func:`get_algorithm`
builds one by name.

The protocol algorithms implement (``State``, ``Phase``, ``Algorithm``, ``Round``, ``Sent``, the
services) and the pieces they are composed of (local SGD, gossip, push-sum, server averages)
belong to the engine, :mod:`topofl.engine.protocol` and :mod:`topofl.engine.pieces`;
:mod:`topofl.algorithms` re-exports the protocol's names.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import numpy as np

from topofl._validation import check_bool, check_int, unknown_name
from topofl.engine.protocol import Algorithm

__all__ = ["ALGORITHMS", "Algorithm", "register_algorithm", "get_algorithm", "heterogeneous_epochs"]


ALGORITHMS: dict[str, Callable[..., Algorithm]] = {}


def register_algorithm(name: str) -> Callable[[Callable[..., Algorithm]], Callable[..., Algorithm]]:
    """Decorator adding an algorithm factory to :data:`ALGORITHMS`."""

    def deco(fn: Callable[..., Algorithm]) -> Callable[..., Algorithm]:
        ALGORITHMS[name] = fn
        return fn

    return deco


def get_algorithm(name: str, **hparams: Any) -> Algorithm:
    """Build a registered algorithm from its name and hyper-parameters.

    Raises
    ------
    ValueError
        For an unknown name (the message lists the known ones).
    TypeError
        For a hyper-parameter the algorithm does not take, or a value that is not a ``bool``
        for one whose default is (``nesterov="no"``).

    Examples
    --------
    >>> tf.algorithms.get_algorithm("dsgd", lr=0.5, nesterov=False).hparams["lr"]
    0.5
    >>> tf.algorithms.get_algorithm("dsgd", nesterov="no")
    Traceback (most recent call last):
    ...
    TypeError: nesterov must be a bool (True or False), got str 'no'
    """
    if name not in ALGORITHMS:
        raise ValueError(unknown_name("algorithm", name, ALGORITHMS))
    factory = ALGORITHMS[name]
    for p in inspect.signature(factory).parameters.values():
        if isinstance(p.default, bool) and p.name in hparams:  # "no" is not False
            check_bool(hparams[p.name], p.name)
    return factory(**hparams)


def heterogeneous_epochs(
    n: int, levels: tuple[float, ...] = (1, 2, 3, 4, 5), *, seed: int | None = None
) -> tuple[float, ...]:
    """Per-client local epochs for computation heterogeneity (DFedPGP, Table 3).

    The ``n`` clients are split into ``len(levels)`` groups of (almost) equal size; group ``g``
    does ``levels[g]`` local epochs. With ``seed`` the assignment of clients to groups is a
    random permutation, otherwise clients ``0..n/G-1`` form the first group, and so on.

    Examples
    --------
    >>> tf.algorithms.heterogeneous_epochs(7, (1, 2, 3))
    (1, 1, 1, 2, 2, 3, 3)
    >>> epochs = tf.algorithms.heterogeneous_epochs(4, (1, 5))
    >>> tf.algorithms.dsgd(local_epochs=epochs).phases[0].epochs
    (1.0, 1.0, 5.0, 5.0)
    """
    n = check_int(n, "n", low=1)
    if not levels or any(float(v) <= 0 for v in levels):
        raise ValueError(f"levels must be non-empty positive epoch counts, got {levels!r}")
    groups = np.array_split(np.arange(n), len(levels))
    out = np.empty(n, dtype=object)
    order = np.arange(n) if seed is None else np.random.default_rng(seed).permutation(n)
    for g, members in enumerate(groups):
        out[order[members]] = levels[g]
    return tuple(out.tolist())
