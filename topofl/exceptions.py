"""The few domain exceptions of topofl.

Each derives from the built-in exception a user would catch for the same mistake, so code that
catches ``ValueError`` keeps working.
"""

from __future__ import annotations

__all__ = ["NotConnectedError", "ConvergenceError", "CheckpointError", "ConfigError",
           "ConfigTypeError", "OutputExistsError", "InsufficientMemoryError",
           "MissingDependencyError"]


class NotConnectedError(ValueError):
    """A graph is not (strongly) connected where connectivity is required."""


class ConvergenceError(RuntimeError):
    """An iterative computation or a training run did not converge (or diverged)."""


class CheckpointError(ValueError):
    """A checkpoint cannot be read, or cannot continue the run asked for.

    Raised for a missing, truncated or corrupted checkpoint file (its checksum does not match),
    one written by another run (the message names the differing settings, expected and
    found), and a records file that does not belong with it (another run's, missing, or with
    fewer rows than the checkpoint covers). The message names the file and what is wrong;
    nothing on disk has been changed when it is raised.
    """


class ConfigError(ValueError):
    """A config (file, key or value) that cannot be run; the message is one line."""


class ConfigTypeError(ConfigError, TypeError):
    """An unknown key, or a value of the wrong type, in a config."""


class OutputExistsError(FileExistsError):
    """A run would replace an existing records file without ``overwrite``."""


class InsufficientMemoryError(ValueError):
    """A run (or a benchmark) that cannot fit in the memory this process may use, refused
    before it allocates: the message names the estimate, the limit and where it comes from,
    and the largest number of clients that fits.

    A ``ValueError`` (a request that cannot be met here; ``topofl`` exits 2), not a
    ``MemoryError``: nothing ran out, nothing was allocated. The estimate is
    :func:`topofl.workflow.memory.counted_parts`'s; the limit
    :func:`topofl._utils.validation.memory_limit`'s,
    which the environment variable ``TOPOFL_MEMORY_LIMIT`` (bytes) replaces.

    Attributes
    ----------
    need, limit : int
        The estimated peak and the bytes available, in bytes.
    max_clients : int or None
        The largest number of clients whose estimate fits (``None``: not computed).
    """

    def __init__(self, message: str, *, need: int = 0, limit: int = 0,
                 max_clients: int | None = None) -> None:
        super().__init__(message)
        self.need, self.limit, self.max_clients = need, limit, max_clients


class MissingDependencyError(ModuleNotFoundError, ValueError):
    """An optional package that what was asked for needs is not installed; the message names
    the package and the ``pip install`` command that installs it.

    A ``ModuleNotFoundError`` (its ``name`` is the package), so ``except ImportError`` catches
    it, and a ``ValueError``, as :class:`InsufficientMemoryError`: a request that cannot be met
    in this environment, which ``topofl`` reports in one line (exit status 2) rather than with
    a traceback.

    Examples
    --------
    >>> from topofl.exceptions import MissingDependencyError
    >>> err = MissingDependencyError("needs mlxtend: pip install mlxtend", name="mlxtend")
    >>> err.name, isinstance(err, ImportError), isinstance(err, ValueError)
    ('mlxtend', True, True)
    """
