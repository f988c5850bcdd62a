r"""Availability: clients that are offline in a round, and stragglers.

An :class:`Availability` (the ``[availability]`` table of a config) says, for every round
``t``, which clients are online (a pure function of ``(seed, t)``: a resumed run draws the
same) and how much slower than usual each client computes (its *slowdown*, which only the
clock reads: a synchronous round waits for its stragglers).

Models of being offline:

* ``"bernoulli"``: each client is offline with probability ``offline`` in each round,
  independently (stream ``(seed, tag, t)``, one draw per client).
* ``"markov"``: each client is an on/off Markov chain, online -> offline with probability
  ``p_off`` and offline -> online with ``p_on`` per round, starting from the stationary law
  (offline with probability ``p_off / (p_off + p_on)``); the chain's state at ``t`` is computed
  from the draws of rounds ``0..t``, so it is still a function of ``(seed, t)``.
* ``"trace"``: a file of availability windows, one ``client,start,end`` line each (rounds,
  ``end`` excluded): a client listed in the file is online exactly in its windows, a client
  not listed is always online.

Stragglers: in each round each client straggles with probability ``straggle``; a straggler's
local work takes ``slowdown`` times longer (a number, or a distribution drawn per straggling
client and round).

What an algorithm does with an absent client is its ``absent`` rule (:data:`ABSENT_RULES`);
the engine applies it through :func:`round_view` (the graph the algorithm sees),
:func:`local_rates` (offline clients take no local step) and :class:`Frozen` (the state of
offline clients under the ``"stale"`` rule).

Examples
--------
>>> from topofl.engine.availability import Availability
>>> a = Availability.from_config({"model": "bernoulli", "offline": 0.25, "seed": 1})
>>> on = a.online(7, 1000)
>>> on.dtype, round(1 - float(on.mean()), 2), bool((a.online(7, 1000) == on).all())
(dtype('bool'), 0.24, True)
>>> Availability.from_config({"model": "bernoulli", "offline": 1.5})
Traceback (most recent call last):
...
ValueError: availability.offline must be in [0, 1), got 1.5
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from torch import Tensor

from topofl._utils.rng import generator_at
from topofl._utils.validation import check_int, did_you_mean_each
from topofl.engine.clock import ConfigTable, Values, real_number, trace_text
from topofl.engine.protocol import Algorithm, Round, State
from topofl.graph import Topology
from topofl.topologies.derived import active_topology

__all__ = ["Availability", "ABSENT_RULES", "round_view", "local_rates", "Frozen",
           "check_absent"]

#: What an algorithm does with a client that is absent from a round (``Algorithm.absent``).
ABSENT_RULES = {
    "renormalise": (
        "skip and renormalise: the round's graph loses every arc into or out of an absent "
        "client and the weights are renormalised as the algorithm requires (doubly "
        "stochastic: a client keeps for itself the weight it gave an absent neighbour; "
        "column stochastic, push-sum: a sender splits its mass over its present "
        "out-neighbours; row stochastic: a receiver averages its present in-neighbours); the "
        "absent client neither trains nor sends nor receives, and keeps its model"),
    "lose": (
        "skip and lose: the round's graph loses every arc into or out of an absent client "
        "and nothing is redistributed, so a present client's row sums to less than 1 by the "
        "weight it gave absent neighbours (it adds up what arrived: decent-bench's "
        "peer-to-peer combine; active_topology(keep='none')); the absent client neither "
        "trains nor sends nor receives, and keeps its model"),
    "server": (
        "the server averages over the round's present participants (sampled and online), "
        "weights renormalised over them; an absent client does not train and gets the "
        "server's model when it next takes part"),
    "stale": (
        "use the last published model: an absent client's state does not change in the "
        "round (it neither trains nor updates), and the others read its last model (the "
        "one it held when it went offline) as if from a store; nothing is sent to it"),
    "refuse": (
        "none: the algorithm chooses which clients take part in a round itself (Teleportation "
        "draws its active nodes), so a run whose availability puts a client offline is "
        "refused at its start (:func:`check_absent`); stragglers alone are fine"),
}

_TAG_OFF = 0xA7A1
_TAG_MARKOV = 0xA7A2
_TAG_STRAGGLE = 0xA7A3
_TAG_SLOW = 0xA7A4

_KEYS = {
    "always": (),
    "bernoulli": ("offline",),
    "markov": ("p_off", "p_on"),
    "trace": ("path",),
}
_OPTIONAL = {"trace": ("sha256",)}  # the windows file's digest, which a run records
_COMMON = ("model", "straggle", "slowdown", "seed")


def _prob(value: Any, name: str, *, high_open: bool = False) -> float:
    v = real_number(value, f"availability.{name}")
    if not (0.0 <= v < 1.0 if high_open else 0.0 <= v <= 1.0):
        raise ValueError(f"availability.{name} must be in [0, 1{')' if high_open else ']'}, "
                         f"got {value!r}")
    return v


#: Largest round or client number of a window: rounds are int64 in the engine.
_WINDOW_MAX = 2**62


def _read_windows(path: str, expected: Any = None
                  ) -> tuple[tuple[np.ndarray, np.ndarray, np.ndarray], str]:
    """``((clients, starts, ends), sha256)`` of a windows file (see :func:`trace_text`)."""
    text, digest = trace_text(path, "availability.path", expected)
    clients, starts, ends = [], [], []
    for k, line in enumerate(text.splitlines(), start=1):
        text = line.split("#", 1)[0].strip()
        if not text or text.replace(" ", "").lower() == "client,start,end":
            continue
        parts = [v.strip() for v in text.replace(",", " ").split()]
        try:
            c, s, e = (int(v) for v in parts)
        except ValueError:
            raise ValueError(f"availability.path: {path}:{k}: expected 'client,start,end' "
                             f"(three integers), got {line!r}") from None
        if c < 0 or s < 0 or e < s:
            raise ValueError(f"availability.path: {path}:{k}: need client >= 0 and "
                             f"0 <= start <= end, got {line!r}")
        if max(c, e) > _WINDOW_MAX:
            raise ValueError(f"availability.path: {path}:{k}: client and rounds must be at "
                             f"most 2**62, got {line!r}")
        clients.append(c)
        starts.append(s)
        ends.append(e)
    return (np.asarray(clients, dtype=np.int64), np.asarray(starts, dtype=np.int64),
            np.asarray(ends, dtype=np.int64)), digest


@dataclass(frozen=True, eq=False)
class Availability(ConfigTable):
    """Which clients are online in each round, and their slowdowns (see the module
    docstring).

    Build it with :meth:`from_config` from the ``[availability]`` table: ``model`` (``"always"``,
    ``"bernoulli"``, ``"markov"`` or ``"trace"``) with its parameters (``offline``; ``p_off``
    and ``p_on``; ``path``), ``straggle`` (default 0), ``slowdown`` (default 1; a number or a
    ``{dist = ...}`` table as in ``[network]``) and ``seed`` (default 0; the run's seed does
    not reach it).
    """

    model: str = "always"
    offline: float = 0.0
    p_off: float = 0.0
    p_on: float = 1.0
    path: str | None = None
    straggle: float = 0.0
    slowdown: Values = field(default_factory=lambda: Values.parse(1.0, "slowdown"))
    seed: int = 0
    windows: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
    sha256: str | None = None
    _chain: dict[str, Any] = field(default_factory=dict, repr=False)

    _TABLE = "availability"

    @classmethod
    def _read(cls, table: Mapping[str, Any]) -> Availability:
        """An availability from its ``[availability]`` table (unknown keys are an error)."""
        model = table.get("model", "bernoulli" if "offline" in table else "always")
        if model not in _KEYS:
            raise ValueError(f"availability.model must be one of {sorted(_KEYS)}, got {model!r}")
        accepted = set(_COMMON) | set(_KEYS[model]) | set(_OPTIONAL.get(model, ()))
        unknown = sorted(set(table) - accepted)
        if unknown:
            raise ValueError(f"unknown key(s) {unknown} in [availability] with model "
                             f"{model!r}{did_you_mean_each(unknown, accepted)}; accepted: "
                             f"{sorted(accepted)}")
        missing = [k for k in _KEYS[model] if k not in table]
        if missing:
            raise ValueError(f"availability model {model!r} needs {missing}")
        kw: dict[str, Any] = {"model": model}
        if model == "bernoulli":
            kw["offline"] = _prob(table["offline"], "offline", high_open=True)
        elif model == "markov":
            kw["p_off"] = _prob(table["p_off"], "p_off")
            kw["p_on"] = _prob(table["p_on"], "p_on")
            if kw["p_on"] == 0.0 and kw["p_off"] > 0:
                raise ValueError("availability.p_on must be > 0 (a client that goes offline "
                                 "must be able to come back)")
        elif model == "trace":
            if not isinstance(table["path"], str):
                raise ValueError(f"availability.path must be a file path, got "
                                 f"{table['path']!r}")
            kw["path"] = table["path"]
            kw["windows"], kw["sha256"] = _read_windows(table["path"], table.get("sha256"))
        kw["straggle"] = _prob(table.get("straggle", 0.0), "straggle")
        slow = Values.parse(table.get("slowdown", 1.0), "slowdown")
        if slow.kind == "trace":
            raise ValueError("availability.slowdown must be a number or a {dist = ...} table")
        kw["slowdown"] = slow
        kw["seed"] = check_int(table.get("seed", 0), "availability.seed", low=0)
        return cls(**kw)

    def to_config(self) -> dict[str, Any]:
        """The table, every key of its model filled in."""
        out: dict[str, Any] = {"model": self.model}
        if self.model == "bernoulli":
            out["offline"] = self.offline
        elif self.model == "markov":
            out.update(p_off=self.p_off, p_on=self.p_on)
        elif self.model == "trace":
            out.update(path=self.path, sha256=self.sha256)
        c = self.slowdown.constant
        out.update(straggle=self.straggle,
                   slowdown=float(c) if c is not None else self.slowdown.to_config(),
                   seed=self.seed)
        return out

    @property
    def everyone(self) -> bool:
        """True when every client is online in every round."""
        return (self.model == "always" or (self.model == "bernoulli" and self.offline == 0)
                or (self.model == "markov" and self.p_off == 0))

    def check_run(self, n: int, rounds: int) -> None:
        """Check a windows trace against a run of ``n`` clients and ``rounds`` rounds.

        A window of a client ``>= n`` is an error (the trace is of other clients); a window
        that starts at or after ``rounds`` is one the run never reaches (a warning: a trace
        may serve runs of several lengths); rounds in which no client is online are a warning,
        and an error when that is every round.

        Examples
        --------
        >>> import pathlib, tempfile
        >>> f = pathlib.Path(tempfile.mkdtemp()) / "w.csv"
        >>> _ = f.write_text("0,0,5\\n1,3,9\\n")
        >>> a = Availability.from_config({"model": "trace", "path": str(f)})
        >>> a.check_run(2, 8)
        >>> a.check_run(1, 8)
        Traceback (most recent call last):
        ...
        ValueError: availability.path: the trace names client 1, the run has 1 client(s) (0..0)
        """
        if self.model != "trace" or self.windows is None:
            return
        c, s, e = self.windows
        where = f"availability.path: {self.path}" if self.path else "availability.path"
        if c.size and int(c.max()) >= n:
            raise ValueError(f"availability.path: the trace names client {int(c.max())}, the "
                             f"run has {n} client(s) (0..{n - 1})")
        late = int((s >= rounds).sum())
        if late:
            warnings.warn(f"{where}: {late} window(s) start at or after round {rounds}, past "
                          "the end of the run", stacklevel=2)
        if len(np.unique(c)) < n:
            return  # a client without windows is always online
        # the rounds covered by at least one window: merge the intervals [s, e) within [0, rounds)
        covered, reach = 0, 0
        for a, b in sorted(zip(np.minimum(s, rounds).tolist(), np.minimum(e, rounds).tolist())):
            if b > reach:
                covered += b - max(a, reach)
                reach = b
        empty = rounds - covered
        if empty == rounds:
            raise ValueError(f"{where}: no client is online in any of the {rounds} rounds")
        if empty:
            warnings.warn(f"{where}: no client is online in {empty} of the {rounds} rounds "
                          "(those rounds change nothing)", stacklevel=2)

    def online(self, t: int, n: int) -> np.ndarray:
        """``(n,)`` bool: the clients online in round ``t``."""
        if self.everyone:
            return np.ones(n, dtype=bool)
        if self.model == "bernoulli":
            return bool_of(generator_at(self.seed, _TAG_OFF, t).random(n) >= self.offline)
        if self.model == "markov":
            return self._markov(t, n)
        assert self.windows is not None
        c, s, e = self.windows
        listed = np.zeros(n, dtype=bool)
        inside = np.zeros(n, dtype=bool)
        ok = c < n
        listed[c[ok]] = True
        hit = ok & (s <= t) & (t < e)
        inside[c[hit]] = True
        return ~listed | inside

    def _markov(self, t: int, n: int) -> np.ndarray:
        cache = self._chain
        if cache.get("n") == n and cache.get("t", -1) <= t:
            s, state = cache["t"], cache["state"].copy()
        else:
            s = 0
            pi_off = self.p_off / (self.p_off + self.p_on)
            state = generator_at(self.seed, _TAG_MARKOV, 0).random(n) >= pi_off
        for k in range(s + 1, t + 1):
            u = generator_at(self.seed, _TAG_MARKOV, k).random(n)
            state = np.where(state, u >= self.p_off, u < self.p_on)
        cache.update(n=n, t=t, state=state.copy())
        out: np.ndarray = state
        return out

    def slowdowns(self, t: int, n: int) -> np.ndarray:
        """``(n,)`` factors of the clients' compute time in round ``t`` (1: on time)."""
        out = np.ones(n)
        if self.straggle <= 0:
            return out
        late = generator_at(self.seed, _TAG_STRAGGLE, t).random(n) < self.straggle
        if self.slowdown.kind == "const":
            out[late] = self.slowdown.params[0]
        else:
            u = generator_at(self.seed, _TAG_SLOW, t).random(n)
            out[late] = self.slowdown._from_uniform(np.clip(u, 2.0**-54, 1 - 2.0**-54))[late]
        return out


def check_absent(algorithm: Algorithm, availability: Mapping[str, Any] | None) -> None:
    """A ``ValueError`` when ``algorithm`` refuses absent clients (``absent="refuse"``) and
    ``availability`` (an ``[availability]`` table, or ``None``) can put a client offline.

    Examples
    --------
    >>> from topofl.engine.availability import check_absent
    >>> check_absent(tf.algorithms.teleport(k=2), {"model": "always", "straggle": 0.5})
    >>> check_absent(tf.algorithms.teleport(k=2), {"model": "bernoulli", "offline": 0.1})
    ... # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: teleport chooses the clients of a round itself (absent='refuse'), so it ...
    """
    if availability is None or algorithm.absent != "refuse":
        return
    avail = Availability.from_config(availability)
    if not avail.everyone:
        raise ValueError(f"{algorithm.name} chooses the clients of a round itself "
                         "(absent='refuse'), so it cannot run with an availability that puts "
                         f"clients offline (model {avail.model!r}); run it without "
                         "[availability], or with stragglers only")


def bool_of(x: Any) -> np.ndarray:
    """``x`` as a numpy bool array."""
    return np.asarray(x, dtype=bool)


# ----------------------------------------------------------------------------- the rules


def round_view(algorithm: Algorithm, t: int, topology: Topology | None,
               online: np.ndarray | None) -> Round:
    """The round the algorithm's hooks see when only the ``online`` clients are present.

    Everyone online (``online`` ``None`` or all true): ``Round(t, topology)``. Otherwise the
    round carries ``online``, and under the ``"renormalise"`` rule an algorithm that uses the
    graph sees the graph of the present clients (:func:`~topofl.topologies.derived.active_topology`
    with ``keep`` = what the algorithm requires; under ``"lose"``, ``keep="none"``).

    Examples
    --------
    >>> import numpy as np
    >>> from topofl.engine.availability import round_view
    >>> rnd = round_view(tf.algorithms.dsgd(), 0, tf.topologies.ring(4),
    ...                  np.array([True, True, True, False]))
    >>> rnd.topology.messages_per_round, rnd.topology.is_doubly_stochastic, rnd.online.tolist()
    (4, True, [True, True, True, False])
    """
    if online is None or bool(np.all(online)):
        return Round(t, topology)
    online = np.asarray(online, dtype=bool)
    if topology is not None and algorithm.uses_topology and algorithm.absent == "lose":
        topology = active_topology(topology, online, keep="none")
    elif topology is not None and algorithm.uses_topology and algorithm.absent == "renormalise":
        keep = algorithm.requires if algorithm.requires in ("row", "column") else "doubly"
        topology = active_topology(topology, online, keep=keep)
    return Round(t, topology, online)


def local_rates(lr: Tensor, online_rows: Tensor | None) -> Tensor:
    """Per-client learning rates with the offline clients' set to 0 (they take no step)."""
    return lr if online_rows is None else lr * online_rows.to(lr.dtype)


class Frozen:
    """The state of the clients absent from a round, kept aside and put back (the
    ``"stale"`` rule): every per-client tensor's offline rows are copied before the round and
    restored after it; tensors without a client dimension are left alone.

    Examples
    --------
    >>> import torch
    >>> from topofl.engine.availability import Frozen
    >>> own = tf.engine.pieces.ProximalState(anchor=torch.zeros(3, 2))
    >>> s = tf.engine.State(x=torch.zeros(3, 2), own=own)
    >>> keep = Frozen(s, torch.tensor([False, True, False]))
    >>> _ = s.x.add_(5.0)
    >>> keep.restore(s)
    >>> s.x[:, 0].tolist()
    [5.0, 0.0, 5.0]
    """

    def __init__(self, state: State, offline_rows: Tensor) -> None:
        self.rows = torch.nonzero(offline_rows).flatten()
        m = int(offline_rows.numel())
        self.saved = {k: v.index_select(0, self.rows.to(v.device)).clone()
                      for k, v in state.tensors().items() if v.dim() and v.shape[0] == m}

    def restore(self, state: State) -> None:
        """Put the saved rows back."""
        if not self.rows.numel():
            return
        tensors = state.tensors()
        for k, v in self.saved.items():
            tensors[k].index_copy_(0, self.rows.to(v.device), v)
