"""The memory model: what a run allocates, by part, and the refusal of a run that cannot fit.

``topofl.run`` (:func:`topofl.api.prepare`'s checks), sweeps, stacks, ``topofl bench`` and the
planner (:mod:`topofl.workflow.plan`) share it; it imports neither the front door nor the planner,
so that the front door can call it:

* **counted parts** (bytes, :func:`counted_parts` of the run's :func:`run_shapes`): the state
  ``algorithm.init`` builds for the run's ``n`` clients, counted on the ``meta`` device
  (``parameters``: the flat ``[n, P]`` buffer :attr:`State.x <topofl.engine.State.x>`;
  ``optimizer``: the momentum buffers; ``algorithm``: the algorithm's own record and push-sum
  weights), ``gossip`` (the topology's ``W``, the mixer's copy and scratch tile),
  ``gradients`` (the local step's buffers and temporaries: one streamed block of clients,
  :func:`topofl.engine.local.stream_rows`), ``data`` (every client's samples in one tensor,
  :class:`~topofl.data.FederatedData`, their indices; the dataset's loading and splitting
  when that is the larger peak), ``evaluation`` (its largest pass, or the consensus
  distance's two temporaries of a block of rows), ``spectral`` (the summary of a static graph) and
  ``records`` (the per-client rows kept in memory);
* **runtime**: :data:`RUNTIME_BYTES` and :data:`CLIENT_BYTES` a client (the planner measures
  it instead, :func:`topofl.workflow.plan.make_plan`).

The refusal (:func:`check_run`, :func:`check_stack`, :func:`check_before_load`,
:func:`check_fits`) raises :class:`~topofl.exceptions.InsufficientMemoryError`, a
``ValueError`` naming the estimate, the limit and where it comes from, and the largest ``n``
that fits; the environment variable ``TOPOFL_MEMORY_LIMIT`` (bytes) replaces the limit.
``analysis/memory_model.md`` compares the estimate with measured peaks.

The model in three modules, every name of ``__all__`` exported here:
:mod:`~topofl.workflow.memory.shapes` (what the parts depend on, read without training),
:mod:`~topofl.workflow.memory.parts` (the counted parts, by part, at ``n`` clients) and
:mod:`~topofl.workflow.memory.refusal` (the estimate, the largest ``n`` that fits, the checks).
"""

from topofl.exceptions import InsufficientMemoryError
from topofl.workflow.memory.parts import (
    CLIENT_BYTES,
    PARTS,
    ROW_BYTES,
    RUNTIME_BYTES,
    counted_parts,
    transients,
)
from topofl.workflow.memory.refusal import (
    check_batch_memory,
    check_before_load,
    check_fits,
    check_run,
    check_stack,
    estimate,
    largest_n,
    max_clients,
)
from topofl.workflow.memory.shapes import (
    Shapes,
    activation_bytes,
    run_shapes,
    state_bytes,
    state_parts,
)

__all__ = ["Shapes", "counted_parts", "max_clients", "run_shapes", "activation_bytes", "PARTS",
           "RUNTIME_BYTES", "CLIENT_BYTES", "ROW_BYTES", "estimate", "largest_n", "check_fits",
           "check_run", "check_stack", "check_before_load", "check_batch_memory", "transients",
           "state_bytes", "state_parts",
           "InsufficientMemoryError"]
