"""The algorithm registry: ``ALGORITHMS`` maps a name to its factory, :func:`get_algorithm`
builds one by name.

The protocol algorithms implement (``State``, ``Phase``, ``Algorithm``, ``Round``, ``Sent``, the
services) and the pieces they are composed of (local SGD, gossip, push-sum, server averages)
belong to the engine, :mod:`topofl.engine.protocol` and :mod:`topofl.engine.pieces`;
:mod:`topofl.algorithms` re-exports the protocol's names.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

import numpy as np

from topofl._utils.registries import Extensible
from topofl._utils.rng import Seed, as_generator
from topofl._utils.validation import check_bool, check_int, check_real, unknown_name
from topofl.algorithms.hparams import flat_parameters
from topofl.engine.protocol import Algorithm

__all__ = ["ALGORITHMS", "Algorithm", "register_algorithm", "unregister_algorithm",
           "get_algorithm", "heterogeneous_epochs"]

Factory = Callable[..., Algorithm]
A = TypeVar("A", bound=Factory)

#: The registry: topofl's own algorithms (defined in ``topofl.algorithms``) are built in.
_REGISTRY: Extensible[Factory] = Extensible("algorithm", {}, home="topofl.algorithms.")

#: Name -> factory ``(**hparams) -> Algorithm``. Read-only: add one with
#: :func:`register_algorithm`.
ALGORITHMS: Mapping[str, Factory] = _REGISTRY.view


def register_algorithm(name: str, *, replace: bool = False) -> Callable[[A], A]:
    """Decorator adding an algorithm factory to :data:`ALGORITHMS`, so ``topofl.run(name)``
    and a config's ``algorithm = "name"`` build it (with the run's hyper-parameters as its
    keywords).

    Parameters
    ----------
    name : str
        Non-empty and identifier-like (letters, digits, ``_`` and ``-``).
    replace : bool, default False
        Replace the factory registered under ``name`` (a built-in one too), with a
        ``UserWarning``: a run that names it then runs the new factory, and its records
        header says so (``"replaced": true`` in its algorithm description, ``replaced`` in
        its provenance). :func:`unregister_algorithm` restores the previous factory.

    Raises
    ------
    TypeError
        ``name`` is not a non-empty identifier-like str, or the factory is not callable.
    ValueError
        Another factory is registered under ``name`` and ``replace`` is false (the same
        factory again is a no-op).

    Examples
    --------
    >>> register_algorithm("dsgd")(lambda lr=0.1: None)
    Traceback (most recent call last):
    ...
    ValueError: algorithm 'dsgd' is already registered (built in): pass replace=True to replace it
    >>> register_algorithm("")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    TypeError: an algorithm name must be a non-empty str of letters, digits, ... got str ''
    """
    add = _REGISTRY.register(name, "factory", replace=replace)

    def register(factory: A) -> A:  # the factory's own type kept, for mypy and editors
        add(factory)
        return factory

    return register


def unregister_algorithm(name: str) -> None:
    """Remove a factory :func:`register_algorithm` added; for a replaced name, put back the
    factory it replaced (the built-in one).

    Raises
    ------
    ValueError
        ``name`` is a built-in algorithm that was not replaced, or not registered.
    """
    _REGISTRY.unregister(name)


#: The keys that give any registered algorithm differentially private updates (a config's or
#: :func:`topofl.run`'s route to :func:`~topofl.algorithms.with_noisy_updates`): ``dp_clip``
#: and ``dp_noise`` together turn it on; ``dp_seed``, ``dp_delta`` and ``dp_correlated``
#: (DECOR's pair noise) take its defaults.
DP_KEYS = ("dp_clip", "dp_noise", "dp_seed", "dp_delta", "dp_correlated")
#: What a resolved config records for the keys of :data:`DP_KEYS` it does not give (when it
#: gives one): those of :func:`~topofl.algorithms.with_noisy_updates`
DP_DEFAULTS: dict[str, Any] = {"dp_clip": None, "dp_noise": None, "dp_seed": 0,
                               "dp_delta": 1e-5, "dp_correlated": 0.0}
#: The keys that give any registered algorithm DP-SGD in its local step (a config's or
#: :func:`topofl.run`'s route to :func:`~topofl.algorithms.with_dp_sgd`): ``dpsgd_clip`` and
#: ``dpsgd_noise`` together turn it on; ``dpsgd_seed`` and ``dpsgd_delta`` take its defaults.
DPSGD_KEYS = ("dpsgd_clip", "dpsgd_noise", "dpsgd_seed", "dpsgd_delta")
#: What a resolved config records for the keys of :data:`DPSGD_KEYS` it does not give (when it
#: gives one): those of :func:`~topofl.algorithms.with_dp_sgd`
DPSGD_DEFAULTS: dict[str, Any] = {"dpsgd_clip": None, "dpsgd_noise": None, "dpsgd_seed": 0,
                                  "dpsgd_delta": 1e-5}


def get_algorithm(name: str, **hparams: Any) -> Algorithm:
    """Build a registered algorithm from its name and hyper-parameters.

    ``dp_clip`` and ``dp_noise`` (with ``dp_seed``, ``dp_delta`` and ``dp_correlated``
    optional, :data:`DP_KEYS`) build it with noisy updates:
    :func:`~topofl.algorithms.with_noisy_updates` of the algorithm the other keys build;
    ``dpsgd_clip`` and ``dpsgd_noise`` (with ``dpsgd_seed`` and ``dpsgd_delta`` optional,
    :data:`DPSGD_KEYS`) build it with DP-SGD in its local step:
    :func:`~topofl.algorithms.with_dp_sgd`.

    Raises
    ------
    ValueError
        For an unknown name (the message lists the known ones); ``dp_seed``, ``dp_delta`` or
        ``dp_correlated`` without ``dp_clip`` and ``dp_noise``, or one of these two without
        the other (and alike for the ``dpsgd_*`` keys); keys of both groups together (their
        spends do not add up).
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
    >>> noisy = tf.algorithms.get_algorithm("dsgd", lr=0.1, dp_clip=1.0, dp_noise=8.0)
    >>> noisy.hparams["dp_noise"], noisy.hparams["dp_seed"]
    (8.0, 0)
    >>> get_algorithm("dsgd", lr=0.1, dpsgd_clip=1.0, dpsgd_noise=1.2).hparams["dpsgd_noise"]
    1.2
    """
    if name not in ALGORITHMS:
        raise ValueError(unknown_name("algorithm", name, ALGORITHMS))
    dp = {k: hparams.pop(k) for k in DP_KEYS if k in hparams}
    dpsgd = {k: hparams.pop(k) for k in DPSGD_KEYS if k in hparams}
    if dp and dpsgd:
        raise ValueError(f"noisy updates ({', '.join(sorted(dp))}) and DP-SGD "
                         f"({', '.join(sorted(dpsgd))}) together: their spends do not add up "
                         "here; give one of the two")
    factory = ALGORITHMS[name]
    for p in flat_parameters(factory).values():
        if isinstance(p.default, bool) and p.name in hparams:  # "no" is not False
            check_bool(hparams[p.name], p.name)
    algo = factory(**hparams)
    if dpsgd:
        return _with_dp_sgd(algo, dpsgd)
    if not dp:
        return algo
    missing = [k for k in ("dp_clip", "dp_noise") if k not in dp]
    if missing:
        raise ValueError(f"noisy updates need dp_clip and dp_noise together, got "
                         f"{sorted(dp)} without {missing}")
    from topofl.algorithms.private import with_noisy_updates  # it builds on this module

    seed = check_int(dp.get("dp_seed", DP_DEFAULTS["dp_seed"]), "dp_seed", low=0)
    delta = check_real(dp.get("dp_delta", DP_DEFAULTS["dp_delta"]), "dp_delta", low=0,
                       high=1, low_open=True, high_open=True)
    correlated = check_real(dp.get("dp_correlated", DP_DEFAULTS["dp_correlated"]),
                            "dp_correlated", low=0)
    return with_noisy_updates(algo, check_real(dp["dp_clip"], "dp_clip", low=0, low_open=True),
                              check_real(dp["dp_noise"], "dp_noise", low=0, low_open=True),
                              seed=seed, delta=delta, correlated=correlated)


def _with_dp_sgd(algo: Algorithm, dp: dict[str, Any]) -> Algorithm:
    """``algo`` with DP-SGD from the ``dpsgd_*`` keys of a config (:data:`DPSGD_KEYS`)."""
    missing = [k for k in ("dpsgd_clip", "dpsgd_noise") if k not in dp]
    if missing:
        raise ValueError(f"DP-SGD needs dpsgd_clip and dpsgd_noise together, got "
                         f"{sorted(dp)} without {missing}")
    from topofl.algorithms.private import with_dp_sgd  # it builds on this module

    seed = check_int(dp.get("dpsgd_seed", DPSGD_DEFAULTS["dpsgd_seed"]), "dpsgd_seed", low=0)
    delta = check_real(dp.get("dpsgd_delta", DPSGD_DEFAULTS["dpsgd_delta"]), "dpsgd_delta",
                       low=0, high=1, low_open=True, high_open=True)
    return with_dp_sgd(algo, check_real(dp["dpsgd_clip"], "dpsgd_clip", low=0, low_open=True),
                       check_real(dp["dpsgd_noise"], "dpsgd_noise", low=0, low_open=True),
                       seed=seed, delta=delta)


def takers(key: str, *, but: str | None = None) -> list[str]:
    """The names of the algorithms of :data:`ALGORITHMS` (``but`` apart) whose factory takes
    the keyword ``key``: what to say about a key one algorithm does not take (another one's
    hyper-parameter is not a misspelling, it is the wrong algorithm).

    Examples
    --------
    >>> from topofl.algorithms.base import takers
    >>> takers("timing")
    ['gossip_learning']
    >>> takers("no_such_key")
    []
    """
    return sorted(name for name, factory in ALGORITHMS.items()
                  if name != but and key in flat_parameters(factory))


def heterogeneous_epochs(
    n: int, levels: tuple[float, ...] = (1, 2, 3, 4, 5), *, seed: Seed | None = None
) -> tuple[float, ...]:
    """Per-client local epochs for computation heterogeneity (DFedPGP, Table 3).

    The ``n`` clients are split into ``len(levels)`` groups of (almost) equal size; group ``g``
    does ``levels[g]`` local epochs. With ``seed`` the assignment of clients to groups is a
    random permutation, otherwise clients ``0..n/G-1`` form the first group, and so on.

    Parameters
    ----------
    n : int
        The number of clients, ``>= 1``.
    levels : sequence of positive real numbers, default ``(1, 2, 3, 4, 5)``
        The local epochs of each group, in group order (each finite and ``> 0``).
    seed : int, Generator or SeedSequence, optional
        Draws the assignment of clients to groups; ``None`` keeps the clients in order.

    Returns
    -------
    tuple
        ``n`` epoch counts, the elements of ``levels`` themselves.

    Raises
    ------
    TypeError
        If ``n`` is not an int, ``levels`` is not a sequence (a tuple or a list) or one of
        its entries is not a real number, or ``seed`` is not a seed.
    ValueError
        If ``n < 1``, ``levels`` is empty, one of its entries is not finite and ``> 0``, or
        ``seed`` is negative.

    Examples
    --------
    >>> tf.algorithms.heterogeneous_epochs(7, (1, 2, 3))
    (1, 1, 1, 2, 2, 3, 3)
    >>> epochs = tf.algorithms.heterogeneous_epochs(4, (1, 5))
    >>> tf.algorithms.dsgd(local_epochs=epochs).phases[0].epochs
    (1.0, 1.0, 5.0, 5.0)
    >>> tf.algorithms.heterogeneous_epochs(5, ("a",))
    Traceback (most recent call last):
    ...
    TypeError: levels[0] must be a real number, got str 'a'
    """
    n = check_int(n, "n", low=1)
    if isinstance(levels, (str, bytes)) or not isinstance(levels, (Sequence, np.ndarray)):
        raise TypeError(f"levels must be a sequence (tuple or list) of positive epoch counts, "
                        f"got {type(levels).__name__} {levels!r}"[:300])
    if len(levels) == 0:
        raise ValueError(f"levels must be a non-empty sequence of positive epoch counts, got "
                         f"{levels!r}")
    for g, v in enumerate(levels):
        check_real(v, f"levels[{g}]", low=0, low_open=True)
    groups = np.array_split(np.arange(n), len(levels))
    out = np.empty(n, dtype=object)
    order = np.arange(n) if seed is None else as_generator(seed).permutation(n)
    for g, members in enumerate(groups):
        out[order[members]] = levels[g]
    return tuple(out.tolist())
