"""Validation at the boundary.

Public entry points call these helpers once and then trust the canonical form. Every error says
which argument was wrong, what was expected and what was found. One module per kind of input,
every name exported here:

- :mod:`~topofl._utils.validation.scalars`: one value (a bool, an int or a real number in a
  range, one of some names, a path);
- :mod:`~topofl._utils.validation.typecheck`: a value against a type annotation;
- :mod:`~topofl._utils.validation.matrices`: graphs and mixing matrices (the canonical form,
  stochasticity, the pattern of arcs);
- :mod:`~topofl._utils.validation.devices`: a torch device that exists here;
- :mod:`~topofl._utils.validation.memory`: what the process may allocate, and refusing what
  would not fit;
- :mod:`~topofl._utils.validation.durations`: refusing what would take too long;
- :mod:`~topofl._utils.validation.names`: the suggestion and message of a failed lookup by name.
"""

# Imports written ``name as name`` re-export the helpers that other modules import from here
# beside the names of ``__all__``.
from topofl._utils.validation.devices import check_device
from topofl._utils.validation.durations import check_rounds, check_time, max_seconds
from topofl._utils.validation.matrices import StochasticKind as StochasticKind
from topofl._utils.validation.matrices import (
    arc_pattern,
    check_graph,
    check_matrix,
    check_stochastic,
    stochasticity,
)
from topofl._utils.validation.memory import (
    MEMORY_LIMIT_ENV,
    available_memory,
    check_graph_size,
    check_memory,
    graph_bytes,
    memory_limit,
    memory_override,
    memory_total,
)
from topofl._utils.validation.memory import fmt_bytes as fmt_bytes
from topofl._utils.validation.names import (
    check_table,
    did_you_mean,
    did_you_mean_each,
    unknown_name,
)
from topofl._utils.validation.names import edit_distance as edit_distance
from topofl._utils.validation.scalars import (
    check_bool,
    check_choice,
    check_int,
    check_path,
    check_real,
)
from topofl._utils.validation.typecheck import check_type, type_text

__all__ = [
    "check_table",
    "check_bool",
    "check_int",
    "check_real",
    "check_choice",
    "check_type",
    "type_text",
    "check_graph",
    "check_matrix",
    "check_stochastic",
    "stochasticity",
    "arc_pattern",
    "available_memory",
    "memory_limit",
    "memory_override",
    "memory_total",
    "MEMORY_LIMIT_ENV",
    "check_memory",
    "graph_bytes",
    "check_graph_size",
    "check_device",
    "check_path",
    "max_seconds",
    "check_time",
    "check_rounds",
    "unknown_name",
    "did_you_mean",
    "did_you_mean_each",
]
