"""What a callable accepts, read from its signature."""

from __future__ import annotations

import inspect
from typing import Any

__all__ = ["takes_keyword"]


def takes_keyword(fn: Any, name: str) -> bool:
    """Whether ``fn`` can be called with the keyword argument ``name`` (a parameter of that
    name, or ``**kwargs``); ``False`` where no signature can be read (some builtins).

    Examples
    --------
    >>> from topofl._utils.callables import takes_keyword
    >>> takes_keyword(lambda z, rows=None: z, "rows"), takes_keyword(lambda z, **kw: z, "rows")
    (True, True)
    >>> takes_keyword(lambda z: z, "rows"), takes_keyword(len, "rows")
    (False, False)
    """
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):  # a builtin or C callable: no signature to read
        return False
    return name in params or any(p.kind is p.VAR_KEYWORD for p in params.values())
