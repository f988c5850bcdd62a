"""``topofl plan``: how much memory and time a run needs, before it runs; and the memory
model ``topofl.run``, sweeps, stacks and ``topofl bench`` refuse a run by.

A plan is built from a config, checked by the one front door (:func:`topofl.config.resolve`,
i.e. :func:`topofl.api.prepare`), without training:

* **counted parts** (bytes, :func:`counted_parts` of the run's :func:`run_shapes`): the
  parameters, optimizer and algorithm state, gossip, gradients, data, evaluation, spectral
  and records parts of the memory model, each as :mod:`topofl.workflow.memory` describes it;
* **runtime** (bytes): what the process needs besides them (code imported by the run, the
  allocator's arenas, small per-client objects). Measured by a probe: in a fresh subprocess,
  the config is run at the fewest clients its algorithm accepts (2, or Teleportation's ``k``)
  and at ``n = 64, 256, 1024, 4096`` (:data:`PROBE_N`, each capped by the plan's ``n``), in
  that order; after each, the peak resident memory above the resident size after importing
  topofl and torch (:data:`PEAK_METER`) less the counted parts at that ``n`` is a point of
  the runtime part, and a constant plus a per-client slope is fitted to them robustly
  (:func:`fit_runtime`: the median of the pairwise slopes, clipped to ``[0,
  RUNTIME_SLOPE_MAX]``, since a few MB of allocator noise at a few thousand clients is
  hundreds of bytes a client). Without the probe (and in the checks of
  :func:`topofl.run`): :data:`RUNTIME_BYTES` and :data:`CLIENT_BYTES` a client;
* **seconds per round** (a training round: local steps and gossip, the evaluations left out, as
  the text and the JSON say): the probe's runs at ``n >= 64`` last :func:`probe_rounds` rounds,
  evaluated every third of them, with each round clocked (:data:`ROUND_CLOCK`: the process's CPU
  time at one torch thread, so that a shared machine's load does not stretch it; the median
  round but the first and the evaluated ones). Where the plan's ``n`` is one of the probe's
  sizes, that probe is the answer; above them, a line ``a + b * n`` (:func:`fit_time` with the
  exponent 1: least squares in relative error, ``a, b >= 0``) through the probes of at least
  :data:`TIME_FIT_FROM` clients, extrapolated. Every part of a training round is linear in ``n``
  (``analysis/bench_scale.md``); the smaller probes carry the round's fixed cost and step
  through the caches, and an exponent fitted to them (0.99-1.16 in ``analysis/plan_scale.md``'s
  runs) was their noise, which extrapolating 25x turned into a +33 % error at 10^5 clients. When
  its counted parts take at most :data:`LARGE_PROBE_BYTES`, a probe of :data:`LARGE_PROBE_N`
  clients (capped by ``n``) is added, so that a cheap model is timed with its state out of the
  caches, as at large ``n``. The full ``n`` is never run (but where it is one of the probe's
  sizes).
* **seconds an evaluation** (every client's test splits, its global test samples and the
  records they write): the probes' second evaluation less a training round (a warm one),
  a line in the samples an evaluation scores (:func:`eval_samples`, which the global test
  subsample of ``eval_global_samples="auto"`` bends in ``n``) through the same probes; the
  first evaluation's extra (a static graph's spectral summary, first allocations) a line in
  ``n``, counted once. ``run_seconds`` is the run's rounds of training, its evaluations
  and that extra: what a user waits for, where ``seconds_per_round`` is a training round.

The probes' data: a ``"synthetic:..."`` dataset is drawn with its samples scaled by the
probe's share of the clients (:func:`scaled_data`: as many samples a client as the run), and
the shapes at the plan's ``n`` are extrapolated from the largest probe's (the data's sizes in
proportion; the topology built at ``n``), so that a plan at 10^6 clients draws no more than
the data of 4096 clients (16,384 where the large probe runs); any other dataset is loaded as
it is, and federated over the plan's ``n``.
``analysis/plan_scale.md`` compares the plans with measured runs from 10^3 to 10^6 clients.

``peak_bytes`` is the sum of the parts; ``max_clients`` the largest ``n`` whose predicted peak
fits in :func:`topofl._utils.validation.memory_limit`; a plan that does not fit is refused.
``analysis/memory_model.md`` compares the static estimate with measured peaks.

The refusal (:func:`check_run`, :func:`check_stack`, :func:`check_before_load`,
:func:`check_fits`) raises :class:`~topofl.exceptions.InsufficientMemoryError`, a
``ValueError`` naming the estimate, the limit and where it comes from, and the largest ``n``
that fits; the environment variable ``TOPOFL_MEMORY_LIMIT`` (bytes) replaces the limit.

The fits of the runtime part and of the seconds (:func:`fit_runtime`, :func:`fit_time`,
:func:`eval_samples`) are written in ``topofl/workflow/_plan_fits.py``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import torch

from topofl import config as config_mod
from topofl import topologies
from topofl._utils.spec import parse_spec
from topofl._utils.validation import check_device, fmt_bytes, memory_limit, memory_total
from topofl.data import load
from topofl.data.datasets.bundled import synthetic_bytes
from topofl.data.federated import federate
from topofl.engine import ParamLayout, toy_services
from topofl.engine.config import DTYPES, EVAL_GLOBAL_BUDGET, global_samples
from topofl.engine.evaluation import check_eval_val
from topofl.exceptions import ConfigError, InsufficientMemoryError
from topofl.models import build_model
from topofl.workflow._plan_fits import RUNTIME_SLOPE_MAX as RUNTIME_SLOPE_MAX
from topofl.workflow._plan_fits import TIME_EXPONENTS as TIME_EXPONENTS
from topofl.workflow._plan_fits import TIME_FIT_FROM, _time_fits, fit_runtime, fit_time
from topofl.workflow._plan_fits import eval_samples as eval_samples
from topofl.workflow.limits import MAX_PROBE_TIMEOUT
from topofl.workflow.memory import (
    CLIENT_BYTES,
    PARTS,
    ROW_BYTES,
    RUNTIME_BYTES,
    Shapes,
    activation_bytes,
    check_batch_memory,
    check_before_load,
    check_fits,
    check_run,
    check_stack,
    counted_parts,
    estimate,
    largest_n,
    max_clients,
    run_shapes,
    transients,
)
from topofl.workflow.memory.refusal import _peak, _refusal, _synthetic_shapes, ways_to_fit
from topofl.workflow.memory.shapes import _row_nnz_of
from topofl.workflow.probe import PEAK_METER, ROUND_CLOCK, ProbeError, _probe, probe_rounds

__all__ = ["Plan", "Shapes", "counted_parts", "make_plan", "max_clients", "run_shapes",
           "activation_bytes", "PlanError", "ProbeError", "PARTS", "PROBE_N", "PROBE_TIMEOUT",
           "RUNTIME_BYTES", "CLIENT_BYTES", "ROW_BYTES", "scaled_data", "fit_runtime", "fit_time",
           "estimate",
           "largest_n", "check_fits", "check_run", "TIME_FIT_FROM", "LARGE_PROBE_N",
           "LARGE_PROBE_BYTES",
           "check_stack", "check_before_load", "transients", "InsufficientMemoryError",
           "PEAK_METER", "ROUND_CLOCK", "probe_rounds"]

#: The numbers of clients of the probe, each capped by the plan's ``n`` (and the fewest
#: clients the algorithm accepts probed first): its memory at each, its time at each.
PROBE_N = (64, 256, 1024, 4096)

#: A further probe size, run where its counted parts take at most :data:`LARGE_PROBE_BYTES`
#: (and half the memory available): a cheap model timed out of the caches.
LARGE_PROBE_N = 16384

#: The most counted bytes a probe of :data:`LARGE_PROBE_N` clients may take.
LARGE_PROBE_BYTES = 1 << 30



class PlanError(RuntimeError):
    """A plan that does not fit in the memory this machine has (``topofl plan`` exits 1)."""


@dataclass
class Plan:
    """A run's predicted memory (bytes by part), time per round and the clients that fit.

    Attributes
    ----------
    n_clients, num_params : int
        Clients and parameters per client ``P``.
    parts : dict
        Bytes by part (:data:`PARTS`); they add up to :attr:`peak_bytes`.
    seconds_per_round : float or None
        Seconds of a training round (local steps and gossip; the evaluations left out),
        measured over real rounds of the config (``None`` when not timed).
    eval_seconds : float or None
        Seconds of one evaluation (every client's test splits and its global test samples,
        and the records they write), a warm one measured in the probes' runs and
        extrapolated in the samples an evaluation scores (:func:`eval_samples`); the first
        evaluation's extra (a static graph's spectral summary) is ``eval_fit
        ["first_extra_s"]``, counted once in :attr:`run_seconds`; ``None`` when not timed.
    rounds, evaluations : int
        The run's rounds and evaluations (every ``eval_every`` rounds and the last).
    available_bytes : int or None
        :func:`~topofl._utils.validation.available_memory` when the plan was made.
    max_clients : int or None
        The largest ``n`` whose predicted peak fits in ``available_bytes`` (``None``: unknown):
        what fits now, beside the other processes.
    machine_bytes : int or None
        :func:`~topofl._utils.validation.memory_total`: the memory this machine gives a
        process, whatever the others hold (``available_bytes`` when the caller gave it).
    machine_max_clients : int or None
        The largest ``n`` whose process peak (the predicted peak and the interpreter with its
        imports, where measured) fits in ``machine_bytes``: one number a config and machine,
        where ``max_clients`` follows the memory free at the call.
    """

    n_clients: int
    num_params: int
    parts: dict[str, int]
    seconds_per_round: float | None
    available_bytes: int | None
    max_clients: int | None
    runtime_fit: dict[str, Any] = field(default_factory=dict)
    time_fit: dict[str, Any] = field(default_factory=dict)
    eval_seconds: float | None = None
    rounds: int = 0
    evaluations: int = 0
    eval_fit: dict[str, Any] = field(default_factory=dict)
    interpreter_bytes: int | None = None
    machine_bytes: int | None = None
    machine_max_clients: int | None = None

    @property
    def peak_bytes(self) -> int:
        """The predicted peak of what the run allocates: the sum of the parts."""
        return sum(self.parts.values())

    @property
    def process_peak_bytes(self) -> int | None:
        """The process's predicted peak resident memory, what ``top`` shows: :attr:`peak_bytes`
        and the interpreter with its imports (``interpreter_bytes``, the resident memory of
        the plan's probe process once ``torch`` and ``topofl`` are imported, measured);
        ``None`` when no probe ran."""
        if self.interpreter_bytes is None:
            return None
        return self.peak_bytes + self.interpreter_bytes

    @property
    def run_seconds(self) -> float | None:
        """Seconds of the whole run: its rounds' training and its evaluations (``None`` when
        either was not timed)."""
        if self.seconds_per_round is None or self.eval_seconds is None:
            return None
        return (self.rounds * self.seconds_per_round + self.evaluations * self.eval_seconds
                + float(self.eval_fit.get("first_extra_s", 0.0)))

    def as_json(self) -> dict[str, Any]:
        """The plan as one JSON object (``peak_bytes``, its parts, ``seconds_per_round``,
        ``max_clients`` ...)."""
        return {"peak_bytes": self.peak_bytes, "parts": dict(self.parts),
                "interpreter_bytes": self.interpreter_bytes,
                "process_peak_bytes": self.process_peak_bytes,
                "n_clients": self.n_clients, "num_params": self.num_params,
                "seconds_per_round": self.seconds_per_round,
                "seconds_per_round_means": "a training round: local steps and gossip, the "
                                           "evaluations left out (see eval_seconds)",
                "eval_seconds": self.eval_seconds, "rounds": self.rounds,
                "evaluations": self.evaluations, "run_seconds": self.run_seconds,
                "available_bytes": self.available_bytes, "max_clients": self.max_clients,
                "machine_bytes": self.machine_bytes,
                "machine_max_clients": self.machine_max_clients,
                "runtime_fit": dict(self.runtime_fit), "time_fit": dict(self.time_fit),
                "eval_fit": dict(self.eval_fit)}

    def summary(self) -> str:
        """The plan as a few lines of text."""
        lines = [f"plan: {self.n_clients} clients x {self.num_params:,} parameters",
                 f"peak memory of the run: {fmt_bytes(self.peak_bytes)} "
                 f"({self.peak_bytes:,} bytes)"]
        lines += [f"    {k}: {fmt_bytes(v)}" for k, v in self.parts.items()]
        if self.process_peak_bytes is not None:
            lines.append(f"peak memory of the process (what top shows: the run and the "
                         f"interpreter with its imports, {fmt_bytes(self.interpreter_bytes or 0)}"
                         f" measured): {fmt_bytes(self.process_peak_bytes)}")
        if self.seconds_per_round is not None:
            lines.append(f"seconds a training round (local steps and gossip, evaluations "
                         f"left out): {self.seconds_per_round:.4g}")
        if self.eval_seconds is not None:
            lines.append(f"seconds an evaluation: {self.eval_seconds:.4g} "
                         f"({self.evaluations:,} in the run; the first "
                         f"{float(self.eval_fit.get('first_extra_s', 0.0)):.3g} s more)")
        if self.run_seconds is not None:
            share = 1 - self.rounds * (self.seconds_per_round or 0.0) / max(self.run_seconds,
                                                                          1e-300)
            lines.append(f"seconds the run ({self.rounds:,} rounds, evaluations included): "
                         f"{self.run_seconds:.4g}, {100 * share:.0f} % of it evaluating")
        avail = "unknown" if self.available_bytes is None else fmt_bytes(self.available_bytes)
        lines.append(f"available memory: {avail}; largest n that fits: {self.max_clients}")
        if self.machine_bytes is not None:
            lines.append(f"largest n that fits in this machine's {fmt_bytes(self.machine_bytes)}"
                         f" (the process's peak, whatever other processes hold now): "
                         f"{self.machine_max_clients}")
        return "\n".join(lines)


def shapes(resolved: config_mod.Resolved, *, n: int | None = None,
           data_spec: Any = None) -> Shapes:
    """The sizes the counted parts need, from a resolved config (data built, nothing trained).

    With ``n``, the data is federated over ``n`` clients instead of the config's; with
    ``data_spec``, that dataset is loaded instead of the config's (:func:`scaled_data`).
    """
    cfg = resolved.config
    n = int(cfg["n_clients"]) if n is None else n
    ds = load(cfg["data"] if data_spec is None else data_spec)
    return _shapes_of(resolved, ds, _split(resolved, ds, n))


def _split(resolved: config_mod.Resolved, ds: Any, n: int) -> Any:
    """The config's partition of the dataset ``ds`` over ``n`` clients (its ``ValueError``
    when they cannot be)."""
    cfg = resolved.config
    return federate(ds, cfg["partition"], n, seed=cfg["seed"],
                    **dict(cfg["partition_params"] or {}))


def _shapes_of(resolved: config_mod.Resolved, ds: Any, data: Any) -> Shapes:
    """:func:`shapes` of the dataset ``ds`` split into ``data``."""
    cfg, prepared = resolved.config, resolved.prepared
    check_eval_val(prepared.run, data)  # what a run of the config refuses, before it starts
    check_batch_memory(prepared.run.batch_size, data)
    model = build_model(cfg["model"], tuple(data.input_shape), int(data.num_classes),
                        seed=cfg["seed"], **dict(cfg["model_params"] or {}))
    topo = None
    if isinstance(cfg["topology"], str) and prepared.algorithm.uses_topology:
        topo = topologies.build(cfg["topology"], seed=cfg["seed"], n=data.num_clients,
                                label_distributions=data.label_distributions)
    return run_shapes(prepared, model=model, data=data, dataset=ds, topology=topo)


def _min_clients(prepared: Any, resolved: config_mod.Resolved) -> int:
    """The fewest clients (2, 4, ... up to 64) the algorithm's ``init`` accepts (Teleportation
    needs ``n >= k``): the size of the plan's smallest probe."""
    cfg = resolved.config
    n = int(cfg["n_clients"])
    ds = load(scaled_data(cfg["data"], min(n, 64), n))  # its shapes: a few clients' data
    model = build_model(cfg["model"], tuple(ds.input_shape), int(ds.num_classes),
                        seed=cfg["seed"], **dict(cfg["model_params"] or {}))
    layout = ParamLayout.from_model(model)
    dtype = DTYPES[prepared.run.dtype]
    m = min(n, 2)
    while m < min(n, 64):
        ctx = toy_services(m, layout=layout, dtype=dtype,
                           train_sizes=torch.ones(m, dtype=torch.int64))
        try:
            prepared.algorithm.init(torch.zeros(m, layout.num_params, dtype=dtype), ctx)
            return m
        except ValueError:
            m = min(n, 64, 2 * m)
    return m


#: The most bytes the whole of a ``"synthetic:..."`` dataset may take for a plan to draw it
#: only to say, in the config's own numbers, why the data of a probe was refused.
CHECK_LOAD_BYTES = 1 << 30


def _split_refusal(resolved: config_mod.Resolved) -> tuple[bool, str | None]:
    """``(checked, why)``: whether the config's own data could be split over its own ``n``
    clients here, and why not (the partition's message, what ``topofl run`` would say, and
    what its ``N`` is), or ``None`` when it can. A ``"synthetic:..."`` dataset larger than
    :data:`CHECK_LOAD_BYTES` is not drawn for it: ``(False, None)``."""
    cfg = resolved.config
    spec, n = cfg["data"], int(cfg["n_clients"])
    known = _synthetic_shapes(spec) if isinstance(spec, str) else None
    if known is not None:
        try:
            samples = int(parse_spec(spec, "dataset")[1].get("n_samples", 1000))
        except (TypeError, ValueError):
            return False, None
        if synthetic_bytes(samples, int(np.prod(known[0])), known[1]) > CHECK_LOAD_BYTES:
            return False, None
    ds = load(spec)
    try:
        _split(resolved, ds, n)
    except ValueError as exc:
        train, total = ds.y_train.size, ds.y_train.size + ds.y_test.size
        return True, (f"{exc} (the config asks for {n:,} clients; data {spec!r} has "
                      f"{total:,} samples, N = {train:,} of them in its training split)")
    return True, None


def _probe_shapes(resolved: config_mod.Resolved, m: int, *, fewest: bool = False
                  ) -> tuple[int, Shapes]:
    """``(m, shapes)`` of a probe of ``m`` of the config's ``n`` clients, on its data
    scaled by ``m / n`` (:func:`scaled_data`).

    A probe whose data the partition refuses is not what the user asked for: the config's
    own data is split over its own ``n`` clients (:func:`_split_refusal`) and, refused, its
    message (the user's numbers) is raised; accepted, the probe's size is the problem, and
    with ``fewest`` (the smallest probe: too small for some splits, graphs) it doubles to n.

    Raises
    ------
    topofl.exceptions.ConfigError
        The config's own data cannot be split over its ``n`` clients (or a probe's cannot,
        and the config's was not checked: the message names the probe).
    """
    n, spec = int(resolved.config["n_clients"]), resolved.config["data"]
    checked: tuple[bool, str | None] | None = None
    while True:
        ds = load(scaled_data(spec, m, n))
        try:
            data = _split(resolved, ds, m)
        except ValueError as exc:
            if m >= n:
                raise  # the config's own size: the message has its numbers
            checked = _split_refusal(resolved) if checked is None else checked
            if checked[1] is not None:
                raise ConfigError(checked[1]) from None
            if not (checked[0] and fewest):
                raise ConfigError(f"{exc} (the plan's probe of {m:,} of the config's {n:,} "
                                  f"clients, on data {scaled_data(spec, m, n)!r})") from exc
            m = min(n, 2 * m)
            continue
        try:
            return m, _shapes_of(resolved, ds, data)
        except ValueError:
            if m >= n or not fewest:
                raise
            m = min(n, 2 * m)  # a graph with no member this small (random_regular:d=10 at 2)


def scaled_data(spec: Any, m: int, n: int, *, least_test: int = 0) -> Any:
    """The dataset of a probe of ``m`` of the config's ``n`` clients: a ``"synthetic:..."``
    spec with its samples (``n_samples``, and ``n_test`` when given) scaled by ``m / n``
    (rounded up), so that a probe's client holds as many samples as the run's; any other
    dataset as it is (its size does not grow with ``n``). With ``least_test``, a scaled
    spec's ``n_test`` is raised to that many samples where it is smaller or not given (the
    plan passes it only where the scaled set is smaller).

    Examples
    --------
    >>> scaled_data("synthetic:n_samples=50000,dim=40,seed=0", 64, 1000)
    'synthetic:n_samples=3200,dim=40,seed=0'
    >>> scaled_data("synthetic:n_samples=50000,n_test=10000,dim=40", 64, 1000, least_test=1000)
    'synthetic:n_samples=3200,n_test=1000,dim=40'
    >>> scaled_data("digits", 64, 1000)
    'digits'
    """
    if m >= n or not isinstance(spec, str) or spec.partition(":")[0].strip() != "synthetic":
        return spec
    try:
        _, opts = parse_spec(spec, "dataset")
    except ValueError:
        return spec  # the loader says what is wrong, when it runs
    for key, default in (("n_samples", 1000), ("n_test", None)):
        v = opts.get(key, default)
        if isinstance(v, int) and not isinstance(v, bool) and v > 0:
            opts[key] = -(-v * m // n)
    if least_test:
        opts["n_test"] = max(int(least_test), int(opts.get("n_test") or 0))
    return "synthetic:" + ",".join(f"{k}={v}" for k, v in opts.items())


def _scaled(s: Shapes, n: int, nnz: float | None = None, w_row: float | None = None
            ) -> Shapes:
    """``s`` at ``n`` clients for data that grows with ``n`` (:func:`scaled_data`): the
    dataset's and the federated data's sizes scaled by ``n / s.n``, a client's as they are
    (and the topology's rows, ``nnz`` and ``w_row`` bytes, when given)."""
    f = n / s.n
    samples = int(round(s.samples * f))
    load = synthetic_bytes(samples, int(np.prod(s.input_shape))) if s.load_bytes else 0
    return replace(s, n=n, dataset_bytes=int(round(s.dataset_bytes * f)),
                   data_bytes=int(round(s.data_bytes * f)), samples=samples,
                   global_test=int(round(s.global_test * f)), load_bytes=load,
                   w_row_nnz=s.w_row_nnz if nnz is None else nnz,
                   w_row_bytes=s.w_row_bytes if w_row is None else w_row)


def _extrapolated(resolved: config_mod.Resolved, s: Shapes, n: int) -> Shapes:
    """The shapes at ``n`` clients from those ``s`` of a probe of ``s.n`` clients on data
    scaled by ``s.n / n`` (:func:`_scaled`), with the topology's rows as built at ``n`` (as
    at ``s.n`` for a graph built from the data)."""
    cfg = resolved.config
    nnz = w_row = None
    if s.w_row_nnz and isinstance(cfg["topology"], str):
        try:
            topo = topologies.build(cfg["topology"], seed=cfg["seed"], n=n)
            nnz = _row_nnz_of(topo)
            W = topo.W if hasattr(topo, "W") else topo.at(0).W
            if hasattr(W, "indptr"):
                w_row = (W.data.nbytes + W.indices.nbytes + W.indptr.nbytes) / W.shape[0]
        except Exception:  # noqa: BLE001 - a graph built from the data: its rows as probed
            pass
    return _scaled(s, n, nnz, w_row)


#: The most (client, sample) pairs a probe of the plan may score on the global test set when
#: it scores as many samples a client as the run (:func:`_scored_like_the_run`).
PROBE_SCORED_PAIRS = 4 * EVAL_GLOBAL_BUDGET


def _scored_like_the_run(resolved: config_mod.Resolved, probed: Mapping[int, Shapes], s: Shapes,
                         sizes: Sequence[int]
                         ) -> tuple[dict[str, Any], dict[int, Any], dict[int, Shapes]]:
    """``(config, data, shapes)`` of the probes, whose clients are scored on as many global
    test samples as a client of the run (``g``, :func:`~topofl.engine.config.global_samples`
    at the run's ``n``): the config with ``eval_global_samples = g``, each probe's data (a
    ``"synthetic:..."`` set scaled down with its global test set raised to ``g`` samples
    where it has fewer, ``g + 1`` where the run scores a subsample: the probe then scores one
    as well, in the run's blocked pass) and its shapes.

    A probe of ``m`` clients scored as its own size would score them (its global test set
    scaled by ``m / n``, or the whole of a fixed one) costs another mix of work a client and
    work a sample than the run: a line through such probes, in the samples scored, took the
    clients' own work for the samples' and missed the run's evaluation by +183 % at 10^6
    clients (``analysis/plan_eval_large.md``), and so did probes that scored their whole set
    where the run scored a subsample (+157 %). Where scoring ``g`` samples a client would
    take a probe past :data:`PROBE_SCORED_PAIRS` pairs (the run's own setting is ``"all"``
    or a large number), the probes are scored as before.
    """
    n, spec = s.n, resolved.config["data"]
    specs = {m: scaled_data(spec, m, n) for m in sizes}
    g = global_samples(s.eval_global_samples, n, s.global_test) if s.global_test else 0
    if not g or g * max(sizes) > PROBE_SCORED_PAIRS:
        return dict(resolved.config), specs, dict(probed)
    # a run that scores a subsample does it in blocks (shared_sums), 2.3x faster a sample
    # than the whole set's pass (score_chunks): its probes score a subsample too
    need = g + 1 if g < s.global_test else g
    shapes_at: dict[int, Shapes] = {}
    for m in sizes:
        if probed[m].global_test < need and specs[m] != spec:
            specs[m] = scaled_data(spec, m, n, least_test=need)
            shapes_at[m] = shapes(resolved, n=m, data_spec=specs[m])
        shapes_at[m] = replace(shapes_at.get(m, probed[m]), eval_global_samples=g)
    return {**resolved.config, "eval_global_samples": g}, specs, shapes_at


#: Seconds the probe's child process may take before the plan stops it (``make_plan``'s
#: ``probe_timeout``, ``topofl plan --probe-timeout``): a plan answers in seconds to a minute
#: at every n on a laptop-sized machine, so a probe still running after ten minutes holds a
#: config whose round alone takes minutes at a few thousand clients.
PROBE_TIMEOUT: float = 600.0


def make_plan(cfg: Mapping[str, Any], *, timed: bool = True, probe: bool = True,
              available: int | None = -1,
              probe_timeout: float | None = PROBE_TIMEOUT) -> Plan:
    """Plan a config: predicted peak memory by part, seconds per round, the clients that fit.

    Parameters
    ----------
    cfg : mapping
        A run config (what ``topofl run`` reads).
    timed : bool, default True
        Time training rounds at the probe's sizes (seconds per round).
    probe : bool, default True
        Measure the runtime part in a subprocess (else the static estimate's:
        :data:`RUNTIME_BYTES` and :data:`CLIENT_BYTES` a client).
    available : int or None
        Bytes available (default: :func:`~topofl._utils.validation.memory_limit` on the config's
        device).
    probe_timeout : float or None, default :data:`PROBE_TIMEOUT`
        Seconds the probe's subprocess may run (``None``: no limit), at most
        :data:`~topofl.workflow.limits.MAX_PROBE_TIMEOUT` (a week); past them it is stopped
        and :class:`ProbeError` says so.

    Raises
    ------
    topofl.exceptions.ConfigError
        A ``ValueError``: what a run of the config would refuse before it starts (a device
        that is not here, ``eval_val`` without validation splits, a batch that cannot fit ...),
        found before anything is probed.
    PlanError
        When the counted parts alone, or the whole predicted peak, exceed the memory
        available: nothing is run (only the data of a few clients is built) in the first case.
    ProbeError
        When the probe run failed, or did not end within ``probe_timeout`` seconds.
    """
    if probe_timeout is not None and (
            isinstance(probe_timeout, bool) or not isinstance(probe_timeout, (int, float))
            or not 0 < probe_timeout <= MAX_PROBE_TIMEOUT):  # NaN and inf too
        raise ValueError(f"probe_timeout must be a positive number of seconds, at most "
                         f"{MAX_PROBE_TIMEOUT:.0f} (a week: topofl.workflow.limits."
                         f"MAX_PROBE_TIMEOUT), or None, got {probe_timeout!r}"[:300])
    resolved = config_mod.resolve(cfg)
    prepared = resolved.prepared
    n = int(resolved.config["n_clients"])
    if "device" in prepared.settings:  # as a run checks it, before probing anything
        try:
            check_device(prepared.settings["device"])
        except (TypeError, ValueError) as exc:
            raise ConfigError(str(exc)) from None
    avail = memory_limit(prepared.run.device)[0] if available == -1 else available
    spec = resolved.config["data"]
    first, at_first = _probe_shapes(resolved, _min_clients(prepared, resolved), fewest=True)
    sizes = sorted({first, *(max(first, min(n, k)) for k in PROBE_N)})
    small = max(first, min(n, PROBE_N[0]))
    probed = {first: at_first}
    if small not in probed:
        probed[small] = _probe_shapes(resolved, small)[1]
    if avail is not None:  # refuse before building anything more (the data of 64 clients)
        state = sum(probed[small].per_client_state.values()) * n
        if state > avail:
            raise PlanError(_refusal(n, state, avail, "the per-client state alone",
                                     max_clients(probed[small], avail, (0.0, 0.0))))
    probed.update({m: _probe_shapes(resolved, m)[1] for m in sizes if m not in probed})
    big = min(n, LARGE_PROBE_N)
    if timed and big > sizes[-1]:  # a cheap model timed out of the caches, as at large n
        large = _probe_shapes(resolved, big)[1]
        cost = sum(counted_parts(replace(large, runtime=False)).values())
        if cost <= LARGE_PROBE_BYTES and (avail is None or 2 * cost <= avail):
            probed[big] = large
            sizes.append(big)
    top = probed[sizes[-1]]  # the data of at most LARGE_PROBE_N clients: cheap at any n
    grows = scaled_data(spec, top.n, n) != spec  # data that grows with n: extrapolated
    if n in probed:
        s = probed[n]
    else:
        s = _extrapolated(resolved, top, n) if grows else shapes(resolved)
    runtime: tuple[float, float] | None = None
    interpreter: int | None = None
    spr = eval_s = None
    tfit: dict[str, Any] = {}
    efit: dict[str, Any] = {}
    if probe or timed:
        timed_at = {m for m in sizes if m >= PROBE_N[0] or m == sizes[-1]} if timed else set()
        probe_cfg, specs, scored = _scored_like_the_run(resolved, probed, s, sizes)
        probed_out = _probe(probe_cfg, [(m, specs[m], probe_rounds(m) if m in timed_at else 0)
                                        for m in sizes], probe_timeout)
        got = probed_out["probe"]
        if isinstance(probed_out.get("baseline"), int):
            interpreter = int(probed_out["baseline"])
        rows = [(r[0], r[1], r[2], r[3] if len(r) > 3 else None) for r in got]
        firsts = [(r[0], r[4]) for r in got if len(r) > 4 and r[4] is not None]
        if probe:
            residual = [(m, grow - sum(counted_parts(replace(scored[m], runtime=False))
                                       .values())) for m, grow, _, _ in rows]
            runtime = fit_runtime(residual)
        spr, tfit, eval_s, efit = _time_fits(rows, firsts, scored, s)
    parts = counted_parts(replace(s, runtime=False))
    if runtime is None:
        parts["runtime"] = RUNTIME_BYTES + CLIENT_BYTES * n
        fit: dict[str, Any] = {"constant_bytes": float(RUNTIME_BYTES),
                               "bytes_per_client": float(CLIENT_BYTES)}
    else:
        parts["runtime"] = int(round(runtime[0] + runtime[1] * n))
        fit = {"constant_bytes": runtime[0], "bytes_per_client": runtime[1],
               "probe": [list(p) for p in residual]}
    def peak_at(k: int) -> float:
        return _peak(_scaled(s, k), k, runtime) if grows else _peak(s, k, runtime)

    total = memory_total(prepared.run.device)[0] if available == -1 else available
    fits = largest_n(peak_at, avail)
    whole = (None if total is None
             else largest_n(lambda k: peak_at(k) + (interpreter or 0), total))
    plan = Plan(n_clients=n, num_params=s.num_params, parts=parts, seconds_per_round=spr,
                available_bytes=avail, max_clients=fits, runtime_fit=fit, time_fit=tfit,
                eval_seconds=eval_s, rounds=int(resolved.config["rounds"]),
                evaluations=int(s.evaluations), eval_fit=efit, interpreter_bytes=interpreter,
                machine_bytes=total, machine_max_clients=whole)
    if avail is not None and plan.peak_bytes > avail:
        raise PlanError(_refusal(n, plan.peak_bytes, avail, "the run", plan.max_clients,
                                 ways_to_fit(s, parts, plan.peak_bytes, avail)))
    return plan
