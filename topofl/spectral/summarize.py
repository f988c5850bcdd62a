r"""Every scalar metric of :mod:`topofl.spectral` for one graph, as one dict.

The keys of :func:`summary`, in the order it returns them:

====================================  =================================================
key                                   meaning
====================================  =================================================
``name``, ``n``                       family name, number of nodes
``time_varying``, ``period``          whether a sequence, its period (``1`` if static)
``horizon``                           rounds used by the sequence metrics
``directed``, ``stochastic``          any round directed; ``"doubly"``, ``"row"``,
                                      ``"column"`` or ``"none"`` for all rounds
``edges_per_node``,                   mean over rounds (:class:`~topofl.Topology`)
``messages_per_round``
``spectral_gap``,                     :func:`spectral_gap` kinds ``modulus``,
``spectral_gap_lambda2``,             ``lambda2`` (``None`` unless symmetric) and
``spectral_gap_norm``                 ``norm``; per-round mean for a sequence;
                                      ``None`` if a round is neither row- nor
                                      column-stochastic (``stochastic`` is then
                                      ``"none"``): such a gap means nothing
``algebraic_connectivity``            :func:`algebraic_connectivity`, per-round mean
``spectrum_mean_sq``,                 :func:`~topofl.spectral.spectrum`'s
``spectrum_relaxation``               ``mean_sq`` and ``relaxation`` (all
                                      eigenvalues), per-round mean; ``None`` unless
                                      every round is symmetric and doubly stochastic
                                      (and ``n <= 1024``, see ``measured``)
``all_eigenvalues_metric``            :func:`~topofl.spectral.all_eigenvalues_metric`
                                      (Takezawa, Koloskova and Stich), per-round mean;
                                      ``None`` where ``spectrum_relaxation`` is, and
                                      if a round has a mode of modulus 1 (infinite);
                                      above ``SUMMARY_DENSE_MAX`` nodes only if every
                                      round is circulant (closed form). **Only when
                                      asked for** (``metrics=``): it is not in the
                                      default row, whose keys committed records and
                                      the behaviour snapshot hold
``diameter``                          :func:`diameter`, max over rounds (``None`` if a
                                      round is not strongly connected)
``strongly_connected``                :func:`is_strongly_connected` (the union over
                                      the horizon for a sequence)
``b_connectivity``                    :func:`b_connectivity` over the horizon
``pushsum_*``                         :func:`pushsum_constants`: bounds ``a``,
                                      ``diameter``, ``B``, ``q``, ``one_minus_q``,
                                      ``C`` (``None`` if it overflows), ``log10_C``,
                                      ``delta``; measured ``q_measured``,
                                      ``C_measured``. Only for directed graphs (some
                                      round's ``W`` not symmetric): on an undirected
                                      graph push-sum reduces to plain gossip and its
                                      constants are not data (all ``None``; also if
                                      undefined)
``consensus_rate``                    :func:`consensus_rate` over the horizon
``finite_time_consensus``             :func:`finite_time_consensus` within the horizon
``period_consensus_error``            :func:`period_consensus_error`: how far one
                                      period's product is from ``J`` (spectral
                                      norm; a static ``W``: ``W - J``); ``None`` for a
                                      random sequence or a round that is not
                                      stochastic. **Only when asked for**
                                      (``metrics=``), as ``all_eigenvalues_metric``
``rounds_to_1e-6_bound``              $\lceil \ln 10^6 / -\ln(1 - \gamma) \rceil$ with
                                      $\gamma$ = ``spectral_gap``: the rounds after
                                      which $(1 - \gamma)^t \le 10^{-6}$, a guaranteed
                                      bound on the disagreement of a static symmetric
                                      ``W``, only indicative otherwise (``1`` if
                                      $\gamma \ge 1$, ``None`` if $\gamma \le 0$)
``rounds_to_1e-6_measured``           ``finite_time_consensus`` if reached, else
                                      $\lceil \ln 10^{-6} / \ln r \rceil$ with $r$ =
                                      ``consensus_rate`` (``None`` if $r$ is unknown
                                      or ``>= 1``)
``effective_neighbors``               :func:`~topofl.spectral.effective_neighbors` at
                                      ``gamma`` (mode ``"mean"``): exact for a static
                                      or periodic graph and for the random schedules
                                      of :func:`~topofl.spectral.expected_mixing`;
                                      a Monte-Carlo estimate over 2000 rounds of any
                                      other random schedule (only with ``measured``
                                      and if it is cheap enough); ``None`` if a round
                                      is not row-stochastic (push-sum) or it was
                                      not computed (``n``, see ``measured``)
``effective_neighbors_method``        how it was computed: ``"eigenvalues"``,
                                      ``"lyapunov"``, ``"periodic"``,
                                      ``"closed_form"``, ``"monte_carlo"`` or ``None``
``neighborhood_skew``                 :func:`neighborhood_skew` (per-round mean), or
                                      ``None`` without ``label_distributions`` or if
                                      a round is not row-stochastic
``neighborhood_heterogeneity``        :func:`neighborhood_heterogeneity` (STL-FW's,
                                      per-round mean), with the same conditions
``spectral_method``, ``estimated``    only above ``SUMMARY_EXACT_MAX`` (1024) nodes, when a
                                      gap, the algebraic connectivity or the diameter
                                      was computed: ``"closed_form"`` (every round's
                                      ``W`` circulant: exact) or ``"lanczos"``, and
                                      whether a value is an estimate (Lanczos
                                      eigenvalues, a lower bound of the diameter, the
                                      measured push-sum spread of one start round on
                                      16 columns; see :mod:`topofl.spectral.large`)
====================================  =================================================

Up to ``SUMMARY_EXACT_MAX`` nodes (or with ``method`` other than ``"auto"``) the eigenvalue
quantities come from LAPACK or ARPACK and the diameter from breadth-first searches of every
node, whose costs grow faster than the graph (ARPACK's iterations on a ring about as
$n^2$); above it, from :mod:`topofl.spectral.large` at a cost linear in the graph: closed
forms for a circulant ``W``, Lanczos with a tolerance and a cap on its steps otherwise.

The keys, the check of those a call asks for and the arithmetic of the row (the rounds to
``1e-6``) are written in ``topofl/spectral/_summary_keys.py``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp

from topofl._utils.validation import (
    arc_pattern,
    check_bool,
    check_int,
    check_real,
    stochasticity,
)
from topofl.graph import TimeVarying, Topology, as_time_varying
from topofl.spectral._common import (
    DENSE_MAX,
    STOCHASTIC_ATOL,
    GapKind,
    Method,
    _check_horizon,
    _check_method,
    _check_rounds_time,
    _is_symmetric,
)
from topofl.spectral._summary_keys import (
    _ALL_KEYS,
    _NEFF_KEYS,
    _PUSHSUM_KEYS,
    _PUSHSUM_MEASURED_KEYS,
    _SPECTRUM_KEYS,
    _check_metrics,
    _finite,
    _mean_or_none,
    _rounds_bound,
    _rounds_measured,
    _try,
)
from topofl.spectral._summary_keys import _SUMMARY_KEYS as _SUMMARY_KEYS
from topofl.spectral.connectivity import _diameter_of_pattern, b_connectivity, is_strongly_connected
from topofl.spectral.consensus import (
    consensus_rate,
    finite_time_consensus,
    period_consensus_error,
)
from topofl.spectral.gaps import algebraic_connectivity, spectral_gap
from topofl.spectral.large import LargeSpectra, bounded_diameter, circulant_row
from topofl.spectral.neighbors import (
    DEFAULT_GAMMA,
    _closed_form,
    _default_burn_in,
    random_walk_variance,
)
from topofl.spectral.pushsum import _constants as _pushsum_constants
from topofl.spectral.pushsum import pushsum_constants
from topofl.spectral.skew import neighborhood_heterogeneity, neighborhood_skew
from topofl.spectral.spectrum import (
    Spectrum,
    _from_eigenvalues,
    _metric_of_circulant,
    _metric_of_eigenvalues,
)

#: The Monte-Carlo effective number of neighbours runs in summary() only if its rounds cost at
#: most this many multiply-adds (rounds x nnz x n); above, it is None.
_MC_BUDGET = 2e9
_MC_ROUNDS = 2000
#: Largest ``n`` for which summary() computes the dense O(n^3) metrics (the full spectrum and
#: the exact effective number of neighbours); call :func:`~topofl.spectral.spectrum` or
#: :func:`~topofl.spectral.effective_neighbors` directly for larger graphs (up to 4096).
SUMMARY_DENSE_MAX = 1024
#: Largest ``n`` for which summary() computes the gaps, the algebraic connectivity and the
#: diameter with LAPACK / ARPACK and all-pairs breadth-first search (as it always did); above,
#: with the linear-cost methods of :mod:`topofl.spectral.large` (``method="auto"`` only).
SUMMARY_EXACT_MAX = SUMMARY_DENSE_MAX
# Above SUMMARY_EXACT_MAX the measured push-sum spread follows one start round on this many
# columns (pushsum_constants' default: 4 starts, 128 columns; 32x the products).
_BOUNDED_PUSHSUM_COLUMNS = 16


def summary(
    graph: Any,
    *,
    horizon: int | None = None,
    label_distributions: Any = None,
    gamma: float = DEFAULT_GAMMA,
    spectral_rounds: int = 10,
    seed: int = 0,
    method: Method = "auto",
    measured: bool = True,
    metrics: Iterable[str] | str | None = None,
    progress: bool = False,
) -> dict[str, Any]:
    r"""Every scalar metric of this module for one graph, as a JSON-serialisable dict.

    The row that training records and reports store: the same keys for a ``Topology`` and a
    ``TimeVarying`` (a metric that does not apply is ``None``).

    Parameters
    ----------
    graph : Topology or TimeVarying
    horizon : int, optional
        Rounds examined by the sequence metrics; default ``max(50, 2 * period)`` (``50`` for an
        aperiodic sequence).
    label_distributions : array_like, optional
        ``(n, c)`` per-node label distributions for ``neighborhood_skew`` and
        ``neighborhood_heterogeneity``.
    gamma : float, default 0.95
        Decay of ``effective_neighbors`` (:func:`~topofl.spectral.effective_neighbors`).
    spectral_rounds : int, default 10
        For a ``TimeVarying``, the per-round metrics are averaged over rounds
        ``0..r-1`` with ``r = min(horizon, period or spectral_rounds)``.
    seed : int, default 0
        Seed of the random initial vectors of ``consensus_rate``.
    method : {"auto", "dense", "sparse"}, default "auto"
        Eigensolver path.
    measured : bool, default True
        ``False`` skips the simulated quantities (``consensus_rate``,
        ``finite_time_consensus``, ``rounds_to_1e-6_measured``, ``pushsum_q_measured``,
        ``pushsum_C_measured`` and a Monte-Carlo ``effective_neighbors`` are then ``None``)
        and, above ``DENSE_MAX`` (256) nodes, the dense $O(n^3)$ ones (``spectrum_*`` and
        ``effective_neighbors`` unless in closed form): the cheap row to log for every round
        of a training run. With ``measured=True`` the dense ones are computed up to
        ``SUMMARY_DENSE_MAX`` (1024) nodes.
    metrics : iterable of str or str, optional
        The keys to compute and return (a str is a comma-separated list), e.g.
        ``["spectral_gap", "b_connectivity"]``; only the work they need is done. ``None``
        (default) computes every key of the default row. Each value is the one the full
        summary would give. ``all_eigenvalues_metric`` is computed only when named here.
    progress : bool, default False
        Show a ``tqdm`` progress bar on stderr, one step per metric group (the sequence metrics
        of a large time-varying graph -- products of mixing matrices over the horizon -- can
        take seconds each).

    Returns
    -------
    dict
        The keys of ``metrics`` (all of them by default), in the order and with the meaning
        given by the table of :mod:`topofl.spectral.summarize`.

    Raises
    ------
    TypeError
        If ``graph`` is not a ``Topology`` or ``TimeVarying``, ``metrics`` is not names, or
        ``measured`` or ``progress`` is not a bool.
    ValueError
        For an unknown metric name (the message lists the valid ones) or a bad ``horizon``;
        or when the per-round metrics over the rounds examined (a whole period: e.g.
        ``periodic_averaging`` with a huge ``every``) would take longer than
        ``TOPOFL_MAX_SECONDS`` (default 60 s, by a lower-bound estimate).

    Notes
    -----
    Sparse eigensolvers and bit-parallel BFS keep it fast: a 10,000-node random regular graph
    of degree 10 takes a few seconds, as do the sequence metrics of a 1000-node time-varying
    graph over 100 rounds (see ``analysis/bench_spectral.py``).

    The two "rounds to 1e-6" differ on purpose: the bound follows from the spectral gap
    alone, the measured one from simulated gossip. On the 64-node ring the bound is 4297
    rounds and the measured value 1103: over the default horizon of 50 rounds the measured
    rate still includes the faster-fading modes.

    Examples
    --------
    >>> s = tf.spectral.summary(tf.topologies.ring(8))
    >>> round(s["spectral_gap"], 4), s["diameter"], s["b_connectivity"], s["stochastic"]
    (0.1953, 4, 1, 'doubly')
    >>> s = tf.spectral.summary(tf.topologies.base_graph(12, k=2))
    >>> s["period"], s["finite_time_consensus"], s["strongly_connected"], s["diameter"]
    (3, 3, True, None)
    >>> s["rounds_to_1e-6_measured"]
    3
    >>> import json
    >>> len(json.dumps(s)) > 0
    True

    A matrix that is not stochastic has no gap (here the edgeless graph with zero weights):

    >>> s = tf.spectral.summary(tf.Topology.from_matrix(np.zeros((3, 3))))
    >>> s["stochastic"], s["spectral_gap"], s["strongly_connected"], s["rounds_to_1e-6_bound"]
    ('none', None, False, None)

    Only some metrics (here no eigenvalue is computed):

    >>> tf.spectral.summary(tf.topologies.ring(8), metrics=["diameter", "b_connectivity"])
    {'diameter': 4, 'b_connectivity': 1}
    >>> tf.spectral.summary(tf.topologies.ring(64), metrics="rounds_to_1e-6_bound,diameter")
    {'diameter': 32, 'rounds_to_1e-6_bound': 4297}
    """
    _check_method(method)
    keys = _check_metrics(metrics)
    measured = check_bool(measured, "measured")
    progress = check_bool(progress, "progress")
    run = _start(graph, keys, horizon=horizon, label_distributions=label_distributions,
                 gamma=gamma, spectral_rounds=spectral_rounds, seed=seed, method=method,
                 measured=measured)
    run.compute(progress)
    return run.result(keys)


def _start(
    graph: Any,
    keys: Sequence[str],
    *,
    horizon: int | None,
    label_distributions: Any,
    gamma: float,
    spectral_rounds: int,
    seed: int,
    method: Method,
    measured: bool,
) -> _Summary:
    """A :func:`summary` call with its arguments checked (the keywords of :func:`summary`;
    ``keys``: the checked metrics), the rounds it examines drawn and its row started."""
    is_tv = isinstance(graph, TimeVarying)
    if not is_tv and not isinstance(graph, Topology):
        raise TypeError(f"graph must be a Topology or a TimeVarying, got {type(graph).__name__}")
    g = as_time_varying(graph)
    period = g.period
    if horizon is None:
        h = max(50, 2 * period) if period is not None else 50
    else:
        h = _check_horizon(horizon, n=g.n, tv=g if period is None else None)
    spectral_rounds = check_int(spectral_rounds, "spectral_rounds", low=1)
    gamma = check_real(gamma, "gamma", low=0.0, high=1.0, high_open=True)
    r = min(h, period if period is not None else spectral_rounds)
    _check_rounds_time(g, r, keys, exact=not (g.n > SUMMARY_EXACT_MAX and method == "auto"),
                       measured=measured, labels=label_distributions is not None)
    tops = [g.at(t) for t in range(r)]
    out: dict[str, Any] = dict.fromkeys(_ALL_KEYS)
    out.update(
        name=g.name if is_tv else graph.name, n=g.n, time_varying=is_tv, period=period, horizon=h
    )
    run = _Summary(g, is_tv, h, tops, [t.W for t in tops], set(keys), method, measured, seed,
                   gamma, label_distributions, out)
    return run


def _if_stochastic(
    fn: Callable[[sp.csr_array], float | None], rows: bool = False
) -> Callable[[sp.csr_array], float | None]:
    """``fn``, or ``None`` for a round that is not (row-, or with ``rows=False`` column-)
    stochastic: a gap (or a skew) of a matrix whose sums are not 1 means nothing."""
    ok = ("row", "doubly") if rows else ("row", "column", "doubly")
    return lambda M: fn(M) if stochasticity(M, atol=STOCHASTIC_ATOL) in ok else None


@dataclass
class _Summary:
    """One :func:`summary` call: its graph and options, the keys asked for, the row it fills
    (``out``), the stages of work they need and the progress bar over them."""

    g: TimeVarying
    is_tv: bool
    h: int
    tops: list[Topology]
    Ws: list[sp.csr_array]
    need: set[str]
    method: Method
    measured: bool
    seed: int
    gamma: float
    label_distributions: Any
    out: dict[str, Any]
    stages: list[str] = field(default_factory=list)
    bar: Any = None
    eig_cache: dict[int, np.ndarray | None] = field(default_factory=dict)
    #: the bounded-cost quantities of each round's W (above SUMMARY_EXACT_MAX), by id
    large: dict[int, LargeSpectra] = field(default_factory=dict)
    #: windows of the push-sum constants whose diameter is an estimate (large graphs)
    window_estimates: int = 0

    def compute(self, progress: bool) -> None:
        """Fill ``out`` with every stage the keys asked for need, in order (with a progress
        bar when ``progress``)."""
        need_stoch = self.plan()
        self.bar = _progress_bar(progress, len(self.stages), f"summary {self.out['name']}")
        self.round_rows(need_stoch)
        self.gap_rows()
        self.spectrum_rows()
        self.connectivity_rows()
        self.pushsum_rows()
        self.sequence_rows()
        if self.bar is not None:
            self.bar.update(1 if self.stages else 0)
            self.bar.close()

    def result(self, keys: Sequence[str]) -> dict[str, Any]:
        """The row of the keys asked for (above ``SUMMARY_EXACT_MAX``, with how its spectra
        were computed and whether any value is an estimate)."""
        result = {k: self.out[k] for k in keys}
        if self.large or self.window_estimates:  # above SUMMARY_EXACT_MAX only: smaller
            # graphs' rows keep their keys
            spectra = list(self.large.values())
            result["spectral_method"] = ("closed_form" if all(s.circulant for s in spectra)
                                         else "lanczos")
            result["estimated"] = bool(self.window_estimates) or any(
                s.estimated for s in spectra)
        return result

    @property
    def bounded(self) -> bool:
        """Whether the gaps and the diameter take :mod:`topofl.spectral.large`'s methods."""
        return self.g.n > SUMMARY_EXACT_MAX and self.method == "auto"

    def spectra(self, M: sp.csr_array) -> LargeSpectra:
        """The bounded-cost quantities of round matrix ``M`` (one object per matrix)."""
        if id(M) not in self.large:
            self.large[id(M)] = LargeSpectra(M)
        return self.large[id(M)]

    def window_diameter(self, P: sp.csr_array) -> int | None:
        """The diameter of a window's union pattern ``P`` for the push-sum constants, by
        :func:`~topofl.spectral.large.bounded_diameter` (an estimate is remembered)."""
        d, estimated = bounded_diameter(P)
        if estimated:
            self.window_estimates += 1
        return d

    def gap_of(self, kind: GapKind) -> Callable[[sp.csr_array], float | None]:
        """The spectral gap ``kind`` of one round's matrix, by the summary's method."""
        if self.bounded:
            return lambda M: self.spectra(M).gap(kind)
        return lambda M: spectral_gap(M, kind, method=self.method)

    def want(self, *names: str) -> bool:
        """Whether any of ``names`` was asked for."""
        return not self.need.isdisjoint(names)

    def per_round(self, fn: Callable[[sp.csr_array], float | None]) -> float | None:
        """The mean of ``fn`` over the rounds examined (``None`` if a round gives ``None``)."""
        return _mean_or_none([fn(M) for M in self.Ws])

    def stage(self, name: str) -> bool:
        """Whether to run stage ``name``; advances the progress bar past the previous one."""
        if name not in self.stages:
            return False
        if self.bar is not None:
            if self.stages.index(name):
                self.bar.update(1)
            self.bar.set_postfix_str(name)
        return True

    def sym_eigs(self, M: sp.csr_array) -> np.ndarray | None:
        """All eigenvalues of a symmetric doubly stochastic round (``None`` for other rounds)."""
        if id(M) not in self.eig_cache:
            ok = (_is_symmetric(M)
                  and stochasticity(M, atol=STOCHASTIC_ATOL) == "doubly")
            A = M.toarray() if ok else None
            self.eig_cache[id(M)] = None if A is None else np.linalg.eigvalsh((A + A.T) / 2.0)
        return self.eig_cache[id(M)]

    def plan(self) -> bool:
        """Set :attr:`stages`, the groups of work the requested keys need (a key can need
        another: the push-sum bounds need B, the round counts need the gap or the measured
        rate); return whether the ``stochastic`` kind is needed."""
        want, g, is_tv, measured = self.want, self.g, self.is_tv, self.measured
        need_gap = want("spectral_gap", "rounds_to_1e-6_bound")
        need_rate = measured and want("consensus_rate", "rounds_to_1e-6_measured")
        need_ftc = measured and want("finite_time_consensus", "rounds_to_1e-6_measured")
        need_stoch = want("stochastic") or need_rate or need_ftc
        # Push-sum's constants describe directed gossip; on an undirected graph with symmetric
        # weights push-sum is plain gossip and they would be reported as if they were data.
        need_pushsum = (want(*_PUSHSUM_KEYS) and g.n >= 2
                        and not all(_is_symmetric(M) for M in self.Ws))
        # The full spectrum and the exact effective number of neighbours are dense O(n^3): the
        # summary computes them up to SUMMARY_DENSE_MAX nodes (DENSE_MAX for the cheap row).
        dense_ok = g.n <= (SUMMARY_DENSE_MAX if measured else DENSE_MAX)
        need_spectrum = want(*_SPECTRUM_KEYS) and dense_ok
        need_neff = want(*_NEFF_KEYS) and (dense_ok or (
            is_tv and g.period is None and _closed_form(g) is not None))
        need_b = want("b_connectivity") or need_pushsum
        need_diams = want("diameter") or (not is_tv and (need_b or want("strongly_connected")))
        skews = self.label_distributions is not None
        self.stages = [
            name for name, needed in (
                ("spectral_gap", need_gap),
                ("spectral_gap_lambda2", want("spectral_gap_lambda2")),
                ("spectral_gap_norm", want("spectral_gap_norm")),
                ("algebraic_connectivity", want("algebraic_connectivity")),
                ("spectrum", need_spectrum),
                ("all_eigenvalues_metric", want("all_eigenvalues_metric")),
                ("diameter", need_diams),
                ("strongly_connected", is_tv and want("strongly_connected")),
                ("b_connectivity", is_tv and need_b),
                ("pushsum", need_pushsum),
                ("consensus_rate", need_rate),
                ("finite_time_consensus", need_ftc),
                ("period_consensus_error", want("period_consensus_error")),
                ("effective_neighbors", need_neff),
                ("neighborhood_skew", skews and want("neighborhood_skew")),
                ("neighborhood_heterogeneity", skews and want("neighborhood_heterogeneity")),
            ) if needed
        ]
        return need_stoch

    def round_rows(self, need_stoch: bool) -> None:
        """``directed``, ``stochastic``, ``edges_per_node`` and ``messages_per_round``."""
        out, tops = self.out, self.tops
        if self.want("directed"):
            out["directed"] = any(t.is_directed for t in tops)
        if need_stoch:
            kinds = {stochasticity(M) for M in self.Ws}
            out["stochastic"] = kinds.pop() if len(kinds) == 1 else (
                "row" if kinds <= {"row", "doubly"} else "column" if kinds <= {"column", "doubly"}
                else "none"
            )
        if self.want("edges_per_node"):
            out["edges_per_node"] = float(np.mean([t.edges_per_node for t in tops]))
        if self.want("messages_per_round"):
            out["messages_per_round"] = float(np.mean([t.messages_per_round for t in tops]))

    def gap_rows(self) -> None:
        """The three spectral gaps and the algebraic connectivity (per-round means)."""
        out, method = self.out, self.method
        if self.stage("spectral_gap"):
            out["spectral_gap"] = self.per_round(_if_stochastic(self.gap_of("modulus")))
        if self.stage("spectral_gap_lambda2") and all(_is_symmetric(M) for M in self.Ws):
            out["spectral_gap_lambda2"] = self.per_round(_if_stochastic(self.gap_of("lambda2")))
        if self.stage("spectral_gap_norm"):
            out["spectral_gap_norm"] = self.per_round(_if_stochastic(self.gap_of("norm")))
        if self.stage("algebraic_connectivity"):
            if self.bounded:
                out["algebraic_connectivity"] = self.per_round(
                    lambda M: self.spectra(M).algebraic_connectivity())
            else:
                out["algebraic_connectivity"] = self.per_round(
                    lambda M: algebraic_connectivity(M, method=method) if self.g.n >= 2
                    else None)

    def spectrum_rows(self) -> None:
        """``spectrum_mean_sq`` and ``spectrum_relaxation`` (per-round means)."""
        if self.stage("spectrum"):
            specs: list[Spectrum | None] = []
            for M in self.Ws:
                ev = self.sym_eigs(M)
                specs.append(None if ev is None else _from_eigenvalues(ev))
            self.out["spectrum_mean_sq"] = _mean_or_none(
                [None if sp_ is None else sp_.mean_sq for sp_ in specs])
            self.out["spectrum_relaxation"] = _mean_or_none(
                [None if sp_ is None else sp_.relaxation for sp_ in specs])
        if self.stage("all_eigenvalues_metric"):
            self.out["all_eigenvalues_metric"] = self.per_round(self.all_eigenvalues_metric)

    def all_eigenvalues_metric(self, M: sp.csr_array) -> float | None:
        """One round's :func:`~topofl.spectral.all_eigenvalues_metric` (``None`` where it is
        undefined or infinite): from the eigenvalues the spectrum keys use up to
        ``SUMMARY_DENSE_MAX`` nodes (``DENSE_MAX`` without ``measured``), in closed form
        above for a symmetric doubly stochastic circulant round, else ``None``."""
        n = self.g.n
        if n <= (SUMMARY_DENSE_MAX if self.measured else DENSE_MAX):
            ev = self.sym_eigs(M)
            return None if ev is None else _metric_of_eigenvalues(ev)
        if not (_is_symmetric(M) and stochasticity(M, atol=STOCHASTIC_ATOL) == "doubly"):
            return None
        row = circulant_row(M)
        return None if row is None else _metric_of_circulant(n, *row)

    def connectivity_rows(self) -> None:
        """``diameter``, ``strongly_connected`` and ``b_connectivity``."""
        out = self.out
        diams: list[int | None] = []
        if self.stage("diameter"):
            diams = [self.spectra(M).diameter() if self.bounded
                     else _diameter_of_pattern(arc_pattern(M, diagonal=False)) for M in self.Ws]
            out["diameter"] = None if any(d is None for d in diams) else int(
                max(d for d in diams if d is not None)
            )
        # Sequence metrics over the horizon.
        if not self.is_tv:
            out["strongly_connected"] = diams[0] is not None if diams else None
            out["b_connectivity"] = (1 if diams[0] is not None else None) if diams else None
        if self.stage("strongly_connected"):
            out["strongly_connected"] = is_strongly_connected(self.g, horizon=self.h)
        if self.stage("b_connectivity"):
            out["b_connectivity"] = b_connectivity(self.g, self.h)

    def pushsum_rows(self) -> None:
        """The ``pushsum_*`` keys (measured ones only if asked for, with ``measured``)."""
        out = self.out
        if self.stage("pushsum") and out["b_connectivity"] is not None:
            cheap = not (self.measured and self.want(*_PUSHSUM_MEASURED_KEYS))
            extra: dict[str, Any] = {"starts": 1, "max_columns": 1} if cheap else {}
            if self.bounded:  # the windows' diameters at a linear cost
                extra["diameter_of"] = self.window_diameter
                if not cheap:  # the measured spread on fewer products: a lower estimate
                    extra.update(starts=1, max_columns=_BOUNDED_PUSHSUM_COLUMNS)
                    self.window_estimates += 1
            constants = _pushsum_constants if self.bounded else pushsum_constants
            c = _try(
                lambda: constants(self.g, horizon=self.h, B=out["b_connectivity"], **extra),
                ValueError,
            )
            if c is not None:
                out.update(
                    pushsum_a=c.a, pushsum_diameter=c.diameter, pushsum_B=c.B, pushsum_q=c.q,
                    pushsum_one_minus_q=c.one_minus_q, pushsum_C=_finite(c.C),
                    pushsum_log10_C=c.log10_C, pushsum_delta=c.delta,
                    pushsum_q_measured=None if cheap else c.q_measured,
                    pushsum_C_measured=None if cheap else c.C_measured,
                )

    def sequence_rows(self) -> None:
        """Consensus, effective neighbours, neighbourhood skews and the round counts."""
        out, g, h, L = self.out, self.g, self.h, self.label_distributions
        if self.stage("consensus_rate") and out["stochastic"] != "none":
            out["consensus_rate"] = consensus_rate(g, h, seed=self.seed)
        if self.stage("finite_time_consensus") and out["stochastic"] != "none":
            static = self.spectra(self.Ws[0]) if self.bounded and not self.is_tv else None
            if static is not None and (static.symmetric or static.circulant):
                out["finite_time_consensus"] = _static_finite_time(self.Ws[0])
            else:
                out["finite_time_consensus"] = finite_time_consensus(g, h)
        if self.stage("period_consensus_error"):
            stochastic = all(stochasticity(M, atol=STOCHASTIC_ATOL) != "none" for M in self.Ws)
            out["period_consensus_error"] = (period_consensus_error(g) if stochastic and (
                not self.is_tv or g.period is not None) else None)
        if self.stage("effective_neighbors"):
            out["effective_neighbors"], out["effective_neighbors_method"] = _effective_neighbors(
                g, self.is_tv, self.Ws, self.gamma, self.measured, self.sym_eigs)
        if self.stage("neighborhood_skew"):
            out["neighborhood_skew"] = self.per_round(
                _if_stochastic(lambda M: neighborhood_skew(M, L), rows=True)
            )
        if self.stage("neighborhood_heterogeneity"):
            out["neighborhood_heterogeneity"] = self.per_round(_if_stochastic(
                lambda M: neighborhood_heterogeneity(M, L), rows=True))
        out["rounds_to_1e-6_bound"] = _rounds_bound(out["spectral_gap"])
        out["rounds_to_1e-6_measured"] = _rounds_measured(
            out["consensus_rate"], out["finite_time_consensus"]
        )


def _static_finite_time(M: sp.csr_array) -> int | None:
    """:func:`finite_time_consensus` of a static normal ``W`` (symmetric or circulant): its
    powers reach ``J`` only if every eigenvalue but the first is 0, i.e. ``W = J`` (then after
    one round; tolerance 1e-12 as there), else never: no product to simulate."""
    n = M.shape[0]
    if M.nnz != n * n:
        return None
    return 1 if n * float(np.max(np.abs(M.data - 1.0 / n))) <= 1e-12 else None


def _effective_neighbors(
    g: TimeVarying,
    is_tv: bool,
    Ws: Sequence[sp.csr_array],
    gamma: float,
    measured: bool,
    sym_eigs: Callable[[sp.csr_array], np.ndarray | None],
) -> tuple[float | None, str | None]:
    """The summary's ``effective_neighbors`` and how it was computed (``None, None`` if not)."""
    try:
        if not is_tv or g.period == 1:
            ev = sym_eigs(Ws[0])
            if ev is not None:  # the eigenvalues the spectrum keys use
                mean = float(np.mean(ev * ev / (1.0 - gamma * ev * ev)))
                return 1.0 / ((1.0 - gamma) * mean), "eigenvalues"
            r = random_walk_variance(Ws[0], gamma, per_node=False)
        elif g.period is not None or _closed_form(g) is not None:
            r = random_walk_variance(g, gamma, per_node=False)
        else:
            rounds = _MC_ROUNDS + _default_burn_in(gamma)
            if not measured or 2.0 * rounds * max(Ws[0].nnz, g.n) * g.n > _MC_BUDGET:
                return None, None
            r = random_walk_variance(g, gamma, rounds=_MC_ROUNDS, per_node=False)
    except ValueError:
        return None, None
    return float(r.effective_neighbors("mean")), r.method


def _progress_bar(show: bool, total: int, desc: str) -> Any:
    if not show:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, unit="metric", leave=False)
