r"""The virtual clock: what a round costs in (simulated) seconds.

The engine stays batched: time is *accounted*, not simulated with processes. Every node
(clients ``0..n-1`` and a server ``n``) keeps its own clock $T_i$, the time at which it
finished its last round. A :class:`Network` says how fast nodes compute and how fast messages
travel; :class:`Clock` advances the clocks by one round from what the round did (each client's
local work in FLOPs, the algorithm's :class:`~topofl.engine.ledger.Flow`\ s).

The rule (synchronous rounds, per-node clocks, no global barrier):

1. A node is *ready* at $R_i = T_i$ when the round starts.
2. The flows of each negative stage, in increasing order, then the node's local computation
   ($R_i \mathrel{+}= c_i$, $c_i = \text{slowdown}_i \cdot \text{FLOPs}_i / \text{speed}_i$),
   then the flows of each non-negative stage. In a stage, the message on arc $j \to i$
   leaves when $j$ is ready and arrives at
   $$a_{ji} = R_j + r\,\Bigl(L_{ji} + \max\bigl(\tfrac{b_{ji}}{B_{ji}},
   \tfrac{\text{out}_j}{U_j}, \tfrac{\text{in}_i}{D_i}\bigr)\Bigr),$$
   with $L$ the link's latency, $B$ its bandwidth, $b$ the message's bytes, $U_j$ and $D_i$
   the sender's uplink and the receiver's downlink, shared by all of the stage's messages
   out of $j$ (``out_j`` bytes) and into $i$ (``in_i`` bytes), and $r$ the flow's ``repeat``
   (its exchanges one after the other). A node is ready for the next stage at
   $R_i \leftarrow \max(R_i, \max_j a_{ji})$: it waits for every message it receives and
   for nothing else (a synchronous round that waits for the neighbours it needs, stragglers
   included).
3. Messages of a flow with ``lag = 1`` (OSGP's overlap) are waited for at the end of the next
   round instead.
4. $T_i \leftarrow R_i$. The round's time (``sim_time``, recorded) is $\max_i T_i$: when every
   node has finished the round. A node that takes no part (offline, or not sampled) computes
   nothing and receives nothing: its clock stands still until it takes part again.

The sharing term is the fluid bound of a fair-share link: exact when a node's messages of a
stage start together and have equal sizes, a lower bound otherwise. Not modelled: compute
beside the local SGD steps (evaluation, DPFL's and PFedDST's loss evaluations, the server's
averaging), a node's computation overlapping its communication. Messages lost
(``drop``, :mod:`topofl.engine.drops`) are not timed: the clock times the delivered ones only
(a lost message takes no share of its sender's uplink and nobody waits for it).

Examples
--------
A ring of 4 with one slow node (node 0: 4 s to compute, the others 1 s) and 0.5 s of latency.
After one round node 0's neighbours have waited for it (4 + 0.5 s) and node 2 has not (its
neighbours' models came at 1 + 0.5 s); after two, node 2 waits for them (4.5 + 1 + 0.5 s).

>>> from topofl.engine.clock import Clock, Network
>>> from topofl.engine.ledger import Flow, graph_arcs
>>> net = Network(latency=0.5, speed=1.0)
>>> clock = Clock(net, 4)
>>> flow = Flow("model", graph_arcs(tf.topologies.ring(4)), size=1, bits=32)
>>> flops = np.array([4.0, 1.0, 1.0, 1.0])
>>> clock.advance(0, flops, [flow]), clock.T[:4].tolist()
(4.5, [4.0, 4.5, 1.5, 4.5])
>>> clock.advance(1, flops, [flow]), clock.T[:4].tolist()
(8.5, [8.0, 8.5, 6.0, 8.5])
"""

from __future__ import annotations

import hashlib
import math
import numbers
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Self

import numpy as np

from topofl._utils.rng import generator_at
from topofl._utils.validation import check_int, did_you_mean_each
from topofl.engine.ledger import Arcs, Flow

__all__ = ["Values", "Network", "Clock", "pair_uniform", "check_clocked"]

_DISTS = {
    "uniform": ("low", "high"),
    "lognormal": ("median", "sigma"),
    "exponential": ("mean",),
}

_TAGS = {"latency": 0x1A7, "bandwidth": 0xBA4D, "uplink": 0x0B, "downlink": 0xD0,
         "speed": 0x5BEED}


def _mix64(x: np.ndarray) -> np.ndarray:
    """SplitMix64's finaliser on a uint64 array (wrapping arithmetic)."""
    x = x + np.uint64(0x9E3779B97F4A7C15)
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    out: np.ndarray = x ^ (x >> np.uint64(31))
    return out


def pair_uniform(seed: int, tag: int, a: Any, b: Any) -> np.ndarray:
    """Uniform numbers in ``(0, 1)``, one per pair ``(a[k], b[k])``, a pure function of
    ``(seed, tag, {a, b})`` (symmetric: ``(a, b)`` and ``(b, a)`` give the same number), drawn
    without a loop: a counter-based hash (SplitMix64) of the pair.

    Examples
    --------
    >>> from topofl.engine.clock import pair_uniform
    >>> u = pair_uniform(0, 1, [0, 2, 1], [1, 1, 0])
    >>> bool(u[0] == u[2]), bool(0 < u.min() and u.max() < 1)
    (True, True)
    >>> bool((pair_uniform(1, 1, [0], [1]) != u[:1]).all())
    True
    """
    a = np.asarray(a, dtype=np.int64)
    b = np.asarray(b, dtype=np.int64)
    lo, hi = np.minimum(a, b).astype(np.uint64), np.maximum(a, b).astype(np.uint64)
    with np.errstate(over="ignore"):
        key = _mix64(np.full(lo.shape, np.uint64(int(seed) & (2**64 - 1)), dtype=np.uint64)
                     ^ np.uint64(int(tag) & (2**64 - 1)))
        h = _mix64(_mix64(key + lo) + hi)
    return ((h >> np.uint64(11)).astype(np.float64) + 0.5) * 2.0**-53


def real_number(value: Any, what: str) -> float:
    """``value`` as a float: a real number (not a bool), not NaN, within the float range.

    Examples
    --------
    >>> from topofl.engine.clock import real_number
    >>> real_number(3, "network.speed")
    3.0
    >>> real_number(10**400, "network.speed")
    Traceback (most recent call last):
    ...
    ValueError: network.speed must be a number within the float range, got an integer of 401 digits
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"{what} must be a number, got {type(value).__name__} {value!r:.60}")
    try:
        f = float(value)
    except OverflowError:
        digits = len(str(abs(value))) if isinstance(value, int) else "many"
        raise ValueError(f"{what} must be a number within the float range, got an integer of "
                         f"{digits} digits") from None
    if math.isnan(f):
        raise ValueError(f"{what} must be a number, got {value!r}")
    return f


def trace_text(path: str, what: str, expected: Any = None) -> tuple[str, str]:
    """``(text, sha256)`` of a trace file: its content and the first 16 hex digits of its
    SHA-256 (part of a run's config, hence of its run hash: a trace edited after a run is
    caught by its resume, replay and sweep rerun). ``expected``: the digest a run recorded,
    checked against the file's."""
    p = Path(path)
    if not p.is_file():
        raise ValueError(f"{what}: trace file {path!r} does not exist")
    raw = p.read_bytes()
    digest = hashlib.sha256(raw).hexdigest()[:16]
    if expected is not None and expected != digest:
        raise ValueError(f"{what}: trace file {path!r} changed since the run that recorded it "
                         f"(content sha256 {digest}, the run read {expected!r}): restore the "
                         "file the run read, or start a new run")
    try:
        return raw.decode("utf-8"), digest
    except UnicodeDecodeError:
        raise ValueError(f"{what}: trace file {path!r} is not UTF-8 text") from None


def _read_trace(path: str, what: str, expected: Any = None) -> tuple[np.ndarray, str]:
    text, digest = trace_text(path, what, expected)
    lines = [ln for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
    if not lines:
        raise ValueError(f"{what}: trace file {path!r} holds no numbers")
    sep = "," if "," in lines[0] else None
    try:
        rows = [[float(v) for v in ln.split(sep) if v.strip()] for ln in lines]
    except ValueError:
        raise ValueError(f"{what}: trace file {path!r} must hold numbers only "
                         "(comma or space separated, '#' comments)") from None
    if len({len(r) for r in rows}) != 1:
        raise ValueError(f"{what}: trace file {path!r} has rows of different lengths")
    arr = np.array(rows, dtype=np.float64)
    return arr[:, 0] if arr.shape[1] == 1 else (arr[0] if arr.shape[0] == 1 else arr), digest


@dataclass(frozen=True, eq=False)
class Values:
    """A positive quantity of the network: a constant, a distribution or a trace file.

    Config forms (TOML): a number; ``{dist = "uniform", low = .., high = ..}``,
    ``{dist = "lognormal", median = .., sigma = ..}``, ``{dist = "exponential", mean = ..}``
    (one draw per node, or per link, from ``(seed, quantity, node)`` or ``(seed, quantity,
    {i, j})``: the same for the whole run); ``{trace = "file.csv"}``: numbers, comma or space
    separated, one per client (``n`` values, or ``n + 1`` with the server's last, which then
    overrides ``server_uplink`` / ``server_downlink``), a ``rounds x
    nodes`` table (round ``t`` reads row ``t mod rows``), or for a link quantity a
    ``nodes x nodes`` matrix (entry ``[j, i]`` for the link ``j -> i``).

    Examples
    --------
    >>> from topofl.engine.clock import Values
    >>> Values.parse(2.5, "latency").per_node(3, seed=0, t=0).tolist()
    [2.5, 2.5, 2.5]
    >>> v = Values.parse({"dist": "uniform", "low": 1, "high": 2}, "speed")
    >>> x = v.per_node(4, seed=0, t=0)
    >>> bool(((1 <= x) & (x <= 2)).all()), x.tolist() == v.per_node(4, seed=0, t=9).tolist()
    (True, True)
    """

    name: str
    kind: str
    params: tuple[float, ...] = ()
    table: np.ndarray | None = None
    source: Any = None
    zero_ok: bool = False
    _arc_cache: weakref.WeakKeyDictionary[Arcs, np.ndarray] = field(
        default_factory=weakref.WeakKeyDictionary, repr=False)
    _node_cache: dict[tuple[Any, ...], np.ndarray] = field(default_factory=dict, repr=False)

    @classmethod
    def parse(cls, value: Any, name: str, *, zero_ok: bool = False) -> Values:
        """Check a config value (see the class docstring); ``zero_ok`` allows 0."""
        def positive(v: Any, what: str) -> float:
            f = real_number(v, what)
            if f < 0 or (f == 0 and not zero_ok):
                raise ValueError(f"{what} must be {'>= 0' if zero_ok else '> 0'}, got {f:g}")
            return f

        if isinstance(value, Values):
            return value
        if isinstance(value, (numbers.Real, str)) and not isinstance(value, bool):
            if isinstance(value, str):
                if value not in ("inf", "Infinity"):
                    raise ValueError(f"network.{name} must be a number, a table {{dist = ...}} "
                                     f"or {{trace = ...}}, got str {value!r}")
                value = math.inf
            return cls(name, "const", (positive(value, f"network.{name}"),), source=value,
                       zero_ok=zero_ok)
        if not isinstance(value, Mapping):
            raise ValueError(f"network.{name} must be a number, a table {{dist = ...}} or "
                             f"{{trace = ...}}, got {type(value).__name__} {value!r}")
        if "trace" in value:
            extra = sorted(set(value) - {"trace", "sha256"})
            if extra:
                raise ValueError(f"network.{name}: a trace takes no other key than the "
                                 f"sha256 a run recorded, got {extra}")
            path = value["trace"]
            if not isinstance(path, str):
                raise ValueError(f"network.{name}.trace must be a file path, got {path!r}")
            arr, digest = _read_trace(path, f"network.{name}", value.get("sha256"))
            if not np.all(np.isfinite(arr) | np.isposinf(arr)) or np.any(arr < 0) or (
                    not zero_ok and np.any(arr == 0)):
                raise ValueError(f"network.{name}: trace {path!r} must hold numbers "
                                 f"{'>= 0' if zero_ok else '> 0'}")
            return cls(name, "trace", (), arr, {"trace": path, "sha256": digest}, zero_ok)
        dist = value.get("dist")
        if dist not in _DISTS:
            raise ValueError(f"network.{name}.dist must be one of {sorted(_DISTS)}, got "
                             f"{dist!r} (or give a number, or {{trace = ...}})")
        keys = _DISTS[dist]
        extra = sorted(set(value) - {"dist", *keys})
        missing = [k for k in keys if k not in value]
        if extra or missing:
            raise ValueError(f"network.{name}: dist {dist!r} takes {list(keys)}; "
                             f"missing {missing}, unknown {extra}")
        params: tuple[float, ...]
        if dist == "lognormal":
            params = (positive(value["median"], f"network.{name}.median"),
                      real_number(value["sigma"], f"network.{name}.sigma"))
            if not params[1] >= 0:
                raise ValueError(f"network.{name}.sigma must be >= 0, got {value['sigma']!r}")
        else:
            params = tuple(positive(value[k], f"network.{name}.{k}") for k in keys)
            if dist == "uniform" and params[0] > params[1]:
                raise ValueError(f"network.{name}: low must be <= high, got {params}")
        return cls(name, str(dist), params, source=dict(value), zero_ok=zero_ok)

    @property
    def constant(self) -> float | None:
        """The value when it is one number for every node and link, else ``None``."""
        return self.params[0] if self.kind == "const" else None

    def _from_uniform(self, u: np.ndarray) -> np.ndarray:
        if self.kind == "uniform":
            lo, hi = self.params
            return lo + (hi - lo) * u
        if self.kind == "lognormal":
            from scipy.special import ndtri

            med, sigma = self.params
            return np.asarray(med * np.exp(sigma * ndtri(u)), dtype=np.float64)
        (mean,) = self.params
        out: np.ndarray = -mean * np.log1p(-u)
        return out

    def per_node(self, nodes: int, *, seed: int, t: int) -> np.ndarray:
        """``(nodes,)``: the value of each of ``nodes`` clients at round ``t``, or
        ``(nodes + 1,)`` when a trace gives the server's value last (read-only; cached unless
        a trace varies over rounds)."""
        key = ("node", nodes, seed)
        got = self._node_cache.get(key)
        if got is not None:
            return got
        out = self._per_node(nodes, seed=seed, t=t)
        if not (self.kind == "trace" and self.table is not None and self.table.ndim == 2):
            out.setflags(write=False)
            self._node_cache[key] = out
        return out

    def _per_node(self, nodes: int, *, seed: int, t: int) -> np.ndarray:
        if self.kind == "const":
            return np.full(nodes, self.params[0])
        if self.kind == "trace":
            assert self.table is not None
            tab = self.table if self.table.ndim == 2 else self.table[None, :]
            if tab.shape[1] not in (nodes, nodes + 1):
                raise ValueError(
                    f"network.{self.name}: the trace has {tab.shape[1]} values per row, "
                    f"expected one per client ({nodes}), or {nodes + 1} with the server last")
            row: np.ndarray = tab[t % tab.shape[0]]
            return row
        u = generator_at(seed, _TAGS.get(self.name, 0), 0).random(nodes)
        return self._from_uniform(np.clip(u, 2.0**-54, 1 - 2.0**-54))

    def per_arc(self, arcs: Arcs, *, seed: int) -> np.ndarray | float:
        """``(E,)`` values of the links of ``arcs`` (cached per ``arcs``), or one number."""
        if self.kind == "const":
            return self.params[0]
        got = self._arc_cache.get(arcs)
        if got is not None:
            return got
        if self.kind == "trace":
            assert self.table is not None
            nodes = arcs.n + 1
            if self.table.ndim != 2 or self.table.shape[0] != self.table.shape[1] or \
                    self.table.shape[0] not in (nodes, nodes - 1):
                raise ValueError(
                    f"network.{self.name}: a link trace is a square matrix, one row and column "
                    f"per node ({nodes - 1} clients, or {nodes} with the server), got "
                    f"{self.table.shape}")
            if self.table.shape[0] == nodes - 1 and (arcs.senders.max(initial=0) >= nodes - 1
                                                     or arcs.receivers.max(initial=0)
                                                     >= nodes - 1):
                raise ValueError(f"network.{self.name}: the trace has no row for the server")
            out: np.ndarray = self.table[arcs.senders, arcs.receivers]
        else:
            u = pair_uniform(seed, _TAGS.get(self.name, 0), arcs.senders, arcs.receivers)
            out = self._from_uniform(u)
        self._arc_cache[arcs] = out
        return out

    def to_config(self) -> Any:
        """The config form this was parsed from."""
        return self.source


class ConfigTable:
    """A class read from a table of a run's config (``[network]``, ``[availability]``):
    :meth:`from_config` takes ``None`` (the defaults), an instance (returned as it is) or the
    table, which the class's ``_read`` checks and reads."""

    _TABLE: ClassVar[str]

    @classmethod
    def from_config(cls, table: Mapping[str, Any] | None) -> Self:
        """An instance from its config table (unknown keys are an error)."""
        if table is None:
            return cls()
        if isinstance(table, cls):
            return table
        if not isinstance(table, Mapping):
            raise TypeError(f"{cls._TABLE} must be a table, got {type(table).__name__}")
        return cls._read(table)

    @classmethod
    def _read(cls, table: Mapping[str, Any]) -> Self:
        raise NotImplementedError


_NETWORK_KEYS = ("latency", "bandwidth", "uplink", "downlink", "speed", "server_uplink",
                 "server_downlink", "seed", "drop")


@dataclass(frozen=True, init=False, eq=False)
class Network(ConfigTable):
    """How fast the nodes compute and the messages travel (the ``[network]`` table).

    Parameters
    ----------
    latency : number, table or trace, default 0
        Seconds per message on a link (per link: ``{dist = ...}`` draws one per pair of
        nodes).
    bandwidth : default inf
        Bytes per second of a link.
    uplink, downlink : default inf
        Bytes per second of a client's connection, shared by the messages it sends
        (receives) in one stage.
    speed : default inf
        FLOP per second of a client (one per client; a trace may vary it over rounds).
    server_uplink, server_downlink : number, default inf
        The server's connection (server-based algorithms).
    seed : int, default 0
        Seeds the draws of the distributions and of the drops (the run's seed does not reach
        them).
    drop : float in [0, 1], default 0
        Probability that a message is lost, each message independently (drawn from
        ``(seed, round, sender, receiver)`` on a stream of its own:
        :mod:`topofl.engine.drops`). A lost message counts as sent, not as received, and is
        not timed; each algorithm's ``lost`` rule says what it does without it (an
        algorithm without one refuses ``drop > 0``). ``to_config`` leaves ``drop = 0`` out:
        a run at 0 is the run without the key (same header and run hash).

    Examples
    --------
    >>> from topofl.engine.clock import Network
    >>> net = Network.from_config({"latency": 0.05, "uplink": 1.25e6,
    ...                            "speed": {"dist": "uniform", "low": 1e9, "high": 2e9}})
    >>> net.to_config()["uplink"], net.latency.constant
    (1250000.0, 0.05)
    >>> Network.from_config({"latency": -1})
    Traceback (most recent call last):
    ...
    ValueError: network.latency must be >= 0, got -1
    >>> Network.from_config({"drop": 0.1}).to_config()["drop"], "drop" in Network().to_config()
    (0.1, False)
    >>> Network.from_config({"drop": 1.5})
    Traceback (most recent call last):
    ...
    ValueError: network.drop must be in [0, 1] (the probability that a message is lost), got 1.5
    """

    latency: Values
    bandwidth: Values
    uplink: Values
    downlink: Values
    speed: Values
    server_uplink: float
    server_downlink: float
    seed: int
    drop: float

    def __init__(self, latency: Any = 0.0, bandwidth: Any = math.inf, uplink: Any = math.inf,
                 downlink: Any = math.inf, speed: Any = math.inf,
                 server_uplink: Any = math.inf, server_downlink: Any = math.inf,
                 seed: Any = 0, drop: Any = 0.0) -> None:
        set_ = object.__setattr__
        set_(self, "latency", Values.parse(latency, "latency", zero_ok=True))
        set_(self, "bandwidth", Values.parse(bandwidth, "bandwidth"))
        set_(self, "uplink", Values.parse(uplink, "uplink"))
        set_(self, "downlink", Values.parse(downlink, "downlink"))
        set_(self, "speed", Values.parse(speed, "speed"))
        for k, v in (("server_uplink", server_uplink), ("server_downlink", server_downlink)):
            c = Values.parse(v, k).constant
            if c is None:
                raise ValueError(f"network.{k} must be a number (the one server's), got {v!r}")
            set_(self, k, c)
        set_(self, "seed", check_int(seed, "network.seed", low=0))
        p = real_number(drop, "network.drop")
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"network.drop must be in [0, 1] (the probability that a message "
                             f"is lost), got {drop!r}")
        set_(self, "drop", p)

    _TABLE = "network"

    @classmethod
    def _read(cls, table: Mapping[str, Any]) -> Network:
        """A network from its ``[network]`` table (unknown keys are an error)."""
        unknown = sorted(set(table) - set(_NETWORK_KEYS))
        if unknown:
            raise ValueError(f"unknown key(s) {unknown} in [network]"
                             f"{did_you_mean_each(unknown, _NETWORK_KEYS)}; accepted: "
                             f"{list(_NETWORK_KEYS)}")
        return cls(**dict(table))

    def to_config(self) -> dict[str, Any]:
        """The table, every key filled in (floats; ``inf`` as a float), but ``drop`` only when
        it is above 0 (a run without drops describes itself as runs before the key did)."""
        out: dict[str, Any] = {}
        for k in ("latency", "bandwidth", "uplink", "downlink", "speed"):
            v = getattr(self, k)
            out[k] = float(v.params[0]) if v.kind == "const" else v.to_config()
        out.update(server_uplink=float(self.server_uplink),
                   server_downlink=float(self.server_downlink), seed=self.seed)
        if self.drop > 0:
            out["drop"] = self.drop
        return out


def _max_into(out: np.ndarray, arcs: Arcs, values: np.ndarray) -> None:
    """``out[r] = max(out[r], max of values[e] over the arcs e into r)``, by segments of the
    arcs sorted by receiver (cached per arcs)."""
    order, uniq, starts = arcs.segments()
    v = values if order is None else values[order]
    if v.size:
        seg = np.maximum.reduceat(v, starts)
        np.maximum(out[uniq], seg, out=seg)
        out[uniq] = seg


def _stages(flows: Sequence[Flow]) -> dict[int, list[Flow]]:
    out: dict[int, list[Flow]] = {}
    for f in flows:
        if len(f.arcs) and f.repeat:
            out.setdefault(int(f.stage), []).append(f)
    return dict(sorted(out.items()))


class Clock:
    """Per-node clocks of a run advanced round by round (see the module docstring).

    Parameters
    ----------
    network : Network
    n : int
        Number of clients (the server is node ``n``).

    Attributes
    ----------
    T : ndarray, (n + 1,)
        Each node's clock (seconds), the server last.
    pending : ndarray, (n + 1,)
        Arrival times of lagged messages, waited for at the end of the next round.
    """

    def __init__(self, network: Network, n: int) -> None:
        self.network = network
        self.n = int(n)
        self.T = np.zeros(self.n + 1)
        self.pending = np.zeros(self.n + 1)
        self._links: tuple[int, np.ndarray, np.ndarray] | None = None

    def node_values(self, t: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(speed [n], uplink [n+1], downlink [n+1])`` at round ``t``."""
        net, n = self.network, self.n
        speed = net.speed.per_node(n, seed=net.seed, t=t)
        up = net.uplink.per_node(n, seed=net.seed, t=t)
        down = net.downlink.per_node(n, seed=net.seed, t=t)
        key = (t if up.flags.writeable or down.flags.writeable else -1)
        if self._links is None or self._links[0] != key:  # the same every round, mostly
            self._links = (key, np.append(up[:n], up[n] if up.size > n else net.server_uplink),
                           np.append(down[:n],
                                     down[n] if down.size > n else net.server_downlink))
        return speed[:n], self._links[1], self._links[2]

    def compute_time(self, t: int, flops: np.ndarray) -> np.ndarray:
        """``(n,)`` seconds of each client's local work of ``flops`` (0 work takes 0 s: a
        speed is positive, an infinite one computes in no time)."""
        out: np.ndarray = np.asarray(flops, dtype=np.float64) / self.node_values(t)[0]
        return out

    def _stage(self, R: np.ndarray, flows: list[Flow], up: np.ndarray, down: np.ndarray,
               pending: np.ndarray) -> np.ndarray:
        net = self.network
        # one entry per message: its flow and its bytes (a number, or one per arc)
        parts: list[tuple[Flow, float | np.ndarray]] = []
        for f in flows:
            b: float | np.ndarray = (float((int(f.size) * int(f.bits) + 7) // 8)
                                     if not isinstance(f.size, np.ndarray)
                                     else f.message_bytes().astype(np.float64))
            if f.attached and parts and len(parts[-1][0].arcs) == len(f.arcs):
                parts[-1] = (parts[-1][0], parts[-1][1] + b)  # one message carries both
            else:
                parts.append((f, b))
        out_b = np.zeros(self.n + 1)
        in_b = np.zeros(self.n + 1)
        for f, b in parts:
            if isinstance(b, np.ndarray):
                out_b += np.bincount(f.arcs.senders, b, minlength=self.n + 1)
                in_b += np.bincount(f.arcs.receivers, b, minlength=self.n + 1)
            else:
                out_b += f.arcs.sent_counts() * b
                in_b += f.arcs.received_counts() * b
        # speeds are positive, so x / inf = 0 and 0 / x = 0: no division needs a guard
        share_out, share_in = out_b / up, in_b / down
        new = R.copy()
        for f, b in parts:
            s, r = f.arcs.senders, f.arcs.receivers
            lat = net.latency.per_arc(f.arcs, seed=net.seed)
            bw = net.bandwidth.per_arc(f.arcs, seed=net.seed)
            dur = np.maximum(share_out[s], share_in[r])
            np.maximum(dur, b / bw, out=dur)
            dur += lat
            arrive = R[s] + float(f.repeat) * dur if f.repeat != 1 else R[s] + dur
            _max_into(pending if f.lag else new, f.arcs, arrive)
        return new

    def advance(self, t: int, flops: Any, flows: Sequence[Flow]) -> float:
        """Advance every clock by round ``t``: clients did ``flops`` (``(n,)``, 0 for those
        that took no part; multiplied by their slowdown already) and the algorithm sent
        ``flows``. Returns the round's time, ``max(T)``."""
        work = np.asarray(flops, dtype=np.float64)
        if work.shape != (self.n,):
            raise ValueError(f"flops must be ({self.n},), got {work.shape}")
        _, up, down = self.node_values(t)
        stages = _stages(flows)
        R = self.T.copy()
        lagged = np.zeros(self.n + 1)
        for s, fl in stages.items():
            if s < 0:
                R = self._stage(R, fl, up, down, lagged)
        R[:self.n] += self.compute_time(t, work)
        for s, fl in stages.items():
            if s >= 0:
                R = self._stage(R, fl, up, down, lagged)
        R = np.maximum(R, self.pending)  # what was sent a round ago with lag 1
        self.pending = lagged
        self.T = R
        return float(R.max())

    @property
    def time(self) -> float:
        """The latest clock: when every node has finished its last round."""
        return float(self.T.max())

    def state(self) -> dict[str, Any]:
        """What a checkpoint keeps."""
        return {"T": self.T.tolist(), "pending": self.pending.tolist()}

    def load(self, state: Mapping[str, Any]) -> None:
        """Continue from :meth:`state`'s output."""
        T = np.asarray(state["T"], dtype=np.float64)
        P = np.asarray(state["pending"], dtype=np.float64)
        if T.shape != (self.n + 1,) or P.shape != (self.n + 1,):
            raise ValueError(f"clock state must hold {self.n + 1} clocks, got {T.shape}")
        self.T, self.pending = T.copy(), P.copy()


def check_clocked(algorithm: Any, network: Any) -> None:
    """A ``ValueError`` when a ``[network]`` clock is set (``network``: a ``[network]`` table
    or a :class:`Network`; ``None``: none) and ``algorithm`` keeps a virtual time of its own
    (``Algorithm.clocked`` is a string saying why the clock cannot time its rounds).

    Examples
    --------
    >>> from topofl.engine.clock import check_clocked
    >>> check_clocked(tf.algorithms.dsgd(), {"latency": 0.1})
    >>> check_clocked(tf.algorithms.adpsgd(0.1, durations=1.0), {"latency": 0.1})
    ... # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: adpsgd cannot run with a [network] clock: ...
    >>> check_clocked(tf.algorithms.adpsgd(0.1, durations=1.0), None)
    """
    clocked = getattr(algorithm, "clocked", True)
    if network is None or clocked is True:
        return
    raise ValueError(f"{algorithm.name} cannot run with a [network] clock: {clocked}")
