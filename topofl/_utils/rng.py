"""Explicit, indexed randomness.

Every random function of topofl takes a keyword-only ``seed`` (an ``int`` or a
``numpy.random.Generator``) and normalises it here. The library never touches global RNG state
(``np.random.seed``, ``torch.manual_seed``, ``random.seed``).

Randomness over time and across clients is *indexed*, not consumed: the generator of round ``t``
(or of client ``i`` at round ``t``) is derived from ``(seed, t, i)`` alone with
:func:`generator_at`, so that any round can be recomputed in isolation and a resumed run equals an
uninterrupted one.
"""

from __future__ import annotations

import numbers
from typing import TYPE_CHECKING, Any, TypeAlias, Union

import numpy as np

if TYPE_CHECKING:
    import torch

Seed: TypeAlias = Union[int, np.integer, np.random.Generator, np.random.SeedSequence]  # noqa: UP007

__all__ = ["Seed", "as_generator", "as_seed_sequence", "generator_at", "torch_generator_at"]


def _check_seed(seed: object) -> None:
    if isinstance(seed, bool) or not isinstance(
        seed, (numbers.Integral, np.random.Generator, np.random.SeedSequence)
    ):
        raise TypeError(
            "seed must be an int, a numpy.random.Generator or a numpy.random.SeedSequence, "
            f"got {type(seed).__name__} {seed!r}; pass an explicit integer (e.g. seed=0) "
            "so that the result is reproducible"
        )
    if isinstance(seed, numbers.Integral) and int(seed) < 0:
        raise ValueError(f"seed must be a non-negative int, got {int(seed)}")


def as_generator(seed: Seed) -> np.random.Generator:
    """Return a ``numpy.random.Generator`` for ``seed``.

    Parameters
    ----------
    seed : int, numpy.random.Generator or numpy.random.SeedSequence
        An int or a SeedSequence gives a fresh generator (``np.random.default_rng(seed)``); a
        Generator is returned as it is (and is consumed by the caller).

    Returns
    -------
    numpy.random.Generator

    Raises
    ------
    TypeError
        If ``seed`` is ``None`` or of another type.

    Examples
    --------
    >>> from topofl._utils.rng import as_generator
    >>> int(as_generator(0).integers(100)) == int(as_generator(0).integers(100))
    True
    """
    _check_seed(seed)
    if isinstance(seed, np.random.Generator):
        return seed
    if isinstance(seed, np.random.SeedSequence):
        return np.random.default_rng(seed)
    return np.random.default_rng(int(seed))


def as_seed_sequence(seed: Seed) -> np.random.SeedSequence:
    """Return a ``SeedSequence`` from which indexed streams are derived.

    An int gives ``SeedSequence(seed)``. A Generator is consumed once (128 bits are drawn from
    it) to make the root entropy, so the streams derived afterwards do not depend on how the
    Generator is used later.

    Examples
    --------
    >>> from topofl._utils.rng import as_seed_sequence
    >>> as_seed_sequence(3).entropy
    3
    """
    _check_seed(seed)
    if isinstance(seed, np.random.SeedSequence):
        return seed
    if isinstance(seed, np.random.Generator):
        words = seed.integers(0, 2**32, size=4, dtype=np.uint64)
        return np.random.SeedSequence([int(w) for w in words])
    return np.random.SeedSequence(int(seed))


def generator_at(seed: Seed, *index: int) -> np.random.Generator:
    """Generator of the stream ``(seed, *index)``, independent of any other index.

    ``generator_at(seed, t)`` is the generator of round ``t``; ``generator_at(seed, t, i)``
    the one of client ``i`` at round ``t``. The streams are children of the seed's
    ``SeedSequence`` (its ``spawn_key`` extended by ``index``), so they are statistically
    independent and each is a pure function of its index.

    Examples
    --------
    >>> from topofl._utils.rng import generator_at
    >>> a = generator_at(7, 3).random()
    >>> b = generator_at(7, 3).random()
    >>> a == b, a == generator_at(7, 4).random()
    (True, False)
    """
    root = as_seed_sequence(seed)
    for k in index:
        if isinstance(k, bool) or not isinstance(k, numbers.Integral) or int(k) < 0:
            raise ValueError(f"stream index must be a non-negative int, got {k!r}")
    child = np.random.SeedSequence(
        entropy=root.entropy,
        spawn_key=tuple(root.spawn_key) + tuple(int(k) for k in index),
        pool_size=root.pool_size,
    )
    return np.random.default_rng(child)


def torch_generator_at(seed: Seed, *index: int, device: Any = "cpu") -> torch.Generator:
    """A ``torch.Generator`` on ``device`` seeded from the stream ``(seed, *index)``.

    Examples
    --------
    >>> import torch
    >>> from topofl._utils.rng import torch_generator_at
    >>> g1, g2 = torch_generator_at(0, 5), torch_generator_at(0, 5)
    >>> bool(torch.equal(torch.rand(3, generator=g1), torch.rand(3, generator=g2)))
    True
    """
    import torch

    value = int(generator_at(seed, *index).integers(0, 2**63 - 1))
    gen = torch.Generator(device=device)
    gen.manual_seed(value)
    return gen
