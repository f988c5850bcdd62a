"""decent-bench's own iterates of ATC (topofl's D-SGD) and ATC-Tracking (topofl's DSGT) under
its network impairments, with every random draw recorded, written for
``tests/algorithms/test_decentbench_impair.py`` to replay in topofl (issue 84 item 1).

Runs under decent-bench's Python (>= 3.13), like ``decentbench_reference.py``, and imports
nothing of topofl. Made with decent-bench 0.3.0 (decent-array 0.2.7, numpy backend,
float64)::

    ~/.pyenv/versions/3.13.0/bin/python -m venv /tmp/dbenv
    /tmp/dbenv/bin/pip install decent-bench==0.3.0
    /tmp/dbenv/bin/python analysis/decentbench_impair.py

What decent-bench does (read from ``decent_bench/networks/_networks.py``, ``agents/_agents.py``,
``algorithms/p2p/_atc.py``, ``_atc_tracking.py``, ``schemes/``): every iteration starts by
clearing every agent's received messages; only the *active* agents (``Agent``'s
``AgentActivationScheme``, asked once per iteration) compute, send and combine; a sender's
message goes to its active neighbours, each copy dropped by the sender's ``DropScheme``
(one draw per receiver), the message compressed once by the sender's
``CompressionScheme`` and each delivered copy given its own noise (``NoiseScheme``). A
receiver combines ``W_ii`` times its own (uncompressed, noiseless) value and ``W_ij`` times
each message that arrived: a neighbour that was inactive, or whose message was dropped,
contributes nothing and its weight ``W_ij`` is *not* given to anyone (the row of the
effective matrix sums to less than 1). An inactive agent's variables do not change.

Map of decent-bench's impairments to topofl (``topofl/engine/availability.py``,
``topofl/engine/drops.py``, ``topofl/engine/pieces/{participation,compression,privacy}.py``):

============================  ==============================================================
decent-bench                  topofl
============================  ==============================================================
UniformActivationRate(p)      ``[availability] model="bernoulli", offline=1-p``; absent
                              client's arcs removed and its weight kept on the receiver's
                              diagonal (``active_topology(keep="doubly")``), decent-bench
                              loses it: replayed, both rules
MarkovChainActivation         ``[availability] model="markov"`` (decent-bench starts every
                              chain active, topofl at the stationary law): replayed
PoissonActivation             none (a trace file can hold any windows)
CyclicActivation              ``[availability] model="trace"`` (windows): replayed
UniformDropRate(p)            ``[network] drop = p``; D-SGD renormalises its row over what
                              arrived, decent-bench loses the weight (topofl's ``"mass"``
                              rule): replayed, both rules; gradient tracking refuses drops
GilbertElliott                none (topofl's drops are independent per arc and round):
                              its draws replayed as drops
GaussianNoise (per message)   ``dsgd(message_noise=std, noise_mean=mean)``: each delivered
                              copy its own noise (``gossip(noise=...)``), replayed; topofl's
                              ``NoisyUpdates`` instead noises a node's own update
                              once before it communicates (itself and every receiver see
                              the same noise); decent-bench noises each delivered copy
                              independently and the sender keeps its clean value
Quantization (rounding)       none
StochasticQuantization(s)     ``compressor="qsgd", levels=s, rescale=False``
TopK(k)                       ``compressor="topk", ratio=k/d``
RandK(k)                      ``compressor="randk", ratio=k/d`` (unscaled in both)
============================  ==============================================================

decent-bench compresses the message itself (``x_i <- W_ii y_i + sum_j W_ij Q(y_j)``), without
error feedback: topofl's ``dsgd(compressor=..., feedback=False)``
(:class:`~topofl.engine.pieces.CompressedMessages`), compared iterate by iterate with the
draws replayed; topofl's default compressed gossip feeds the error back (CHOCO-SGD, BEER: a
public copy per client, the *difference* compressed).

It writes ``tests/algorithms/data/decentbench_impair.json``: the problems, the ``W``
decent-bench computes on the 4-ring and the 4-path, and ``runs``, one per case (step 0.1,
15 iterations, agents ``0..3`` in the graph's node order):

- ``iterates`` ``[K][n][d]``: every agent's ``x`` after each ``step`` (``run``'s progress
  callback, which runs before the next iteration clears the messages);
- ``active`` ``[K][n]``: the agents active in each iteration (``network.active_agents()``);
- ``delivered`` ``[K][C][n][n]``: 1 where the message of sender ``j`` reached receiver ``i``
  on channel ``c`` (``channels``: ATC's ``"default"``, ATC-Tracking's ``"state"`` then
  ``"gradient_tracker"``), read from the receivers' message boxes;
- compression cases, ``messages`` ``[K][n]``: each sender's message before (``sent``) and
  after (``compressed``) compression, and the compressor's draws (``draws``: RandK's kept
  indices, StochasticQuantization's uniforms; read from decent-array's numpy generator
  before the compressor draws them, the generator then put back, and checked against what
  the compressor returned);
- noise cases, ``messages`` ``[K][n]``: each sender's noise (``noise`` ``[r][d]``, one row per
  delivered copy) and the receivers those rows went to (``receivers``), in sending order.

Numbers are written to 15 significant digits. Seeded with ``iop.set_seed(0)`` and
``random.seed(0)`` (the draws are written out: the test depends on neither).
"""

from __future__ import annotations

import json
import platform
import random
import sys
from importlib.metadata import version
from pathlib import Path
from typing import Any

import numpy as np
from _decentbench import GRAPHS, N_AGENTS  # beside this script
from _decentbench import as_numpy as _np
from _decentbench import data as _data
from _decentbench import problem as _problem
from _decentbench import short as _short
from _decentbench import x0 as _x0
from decent_array import Array
from decent_array import interoperability as iop
from decent_bench.agents import Agent
from decent_bench.algorithms.p2p import ATC, ATC_Tracking
from decent_bench.costs import LinearRegressionCost
from decent_bench.networks import P2PNetwork
from decent_bench.schemes import (
    CompressionScheme,
    CyclicActivation,
    GaussianNoise,
    GilbertElliott,
    MarkovChainActivation,
    NoiseScheme,
    Quantization,
    RandK,
    StochasticQuantization,
    TopK,
    UniformActivationRate,
    UniformDropRate,
)

OUT = Path(__file__).resolve().parents[1] / "tests" / "algorithms" / "data" / (
    "decentbench_impair.json")
STEP = 0.1
ITERATIONS = 15
ALGORITHMS = {"ATC": ATC, "ATC_Tracking": ATC_Tracking}
CHANNELS = {"ATC": ["default"], "ATC_Tracking": ["state", "gradient_tracker"]}

#: (algorithm, problem, graph, kind, scheme, its keyword arguments); x0 "spread" throughout
CASES: list[tuple[str, str, str, str, str, dict[str, Any]]] = [
    *[(a, p, g, "activation", "UniformActivationRate", {"activation_probability": 0.6})
      for a in ALGORITHMS for p, g in (("regression", "ring"), ("regression3", "ring"),
                                       ("regression3", "path"))],
    *[(a, "regression3", "path", "activation", "MarkovChainActivation",
       {"inactive_to_active": 0.5, "active_to_inactive": 0.3}) for a in ALGORITHMS],
    *[(a, "regression3", "ring", "activation", "CyclicActivation",
       {"active_for": 2, "inactive_for": 1}) for a in ALGORITHMS],  # offset = the agent
    *[("ATC", p, g, "drop", "UniformDropRate", {"drop_rate": 0.3})
      for p, g in (("regression", "ring"), ("regression3", "ring"), ("regression3", "path"))],
    ("ATC", "regression3", "ring", "drop", "GilbertElliott",
     {"drop_rate": 0.8, "bad_to_good": 0.4, "good_to_bad": 0.4}),
    ("ATC", "regression3", "ring", "compression", "TopK", {"k": 1}),
    ("ATC", "regression3", "ring", "compression", "RandK", {"k": 1}),
    ("ATC", "regression3", "ring", "compression", "StochasticQuantization", {"n_levels": 4}),
    ("ATC", "regression3", "path", "compression", "Quantization", {"quantization_step": 0.25}),
    # last, so that the cases above draw what they drew before these were added
    ("ATC", "regression3", "ring", "noise", "GaussianNoise", {"mean": 0.0, "std": 0.5}),
    ("ATC", "regression3", "path", "noise", "GaussianNoise", {"mean": 0.1, "std": 0.2}),
]

SCHEMES: dict[str, Any] = {
    "UniformActivationRate": UniformActivationRate, "MarkovChainActivation":
    MarkovChainActivation, "CyclicActivation": CyclicActivation,
    "UniformDropRate": UniformDropRate, "GilbertElliott": GilbertElliott, "TopK": TopK,
    "RandK": RandK, "StochasticQuantization": StochasticQuantization,
    "Quantization": Quantization, "GaussianNoise": GaussianNoise}


class _Recorded(CompressionScheme):
    """A sender's compression scheme that logs what it is given, what it returns and the
    draws it makes (peeked from decent-array's numpy generator, which is then put back)."""

    def __init__(self, inner: CompressionScheme, sender: int, log: list[dict[str, Any]]):
        self.inner, self.sender, self.log = inner, sender, log

    def compress(self, msg: Array) -> Array:
        v = _np(msg).reshape(-1)
        rng = iop.get_numpy_rng()
        saved = rng.bit_generator.state
        draws: list[float] | list[int] | None = None
        if isinstance(self.inner, RandK):
            k = min(int(self.inner.k), v.size)  # an int k (this script's cases)
            draws = [int(i) for i in rng.choice(v.size, size=k, replace=False)]
        elif isinstance(self.inner, StochasticQuantization) and float(np.linalg.norm(v)):
            draws = rng.random(size=v.shape).tolist()
        rng.bit_generator.state = saved
        out = self.inner.compress(msg)
        q = _np(out).reshape(-1)
        if isinstance(self.inner, RandK):  # the draws peeked are the ones it used
            assert draws is not None and set(np.flatnonzero(q)) <= set(draws)
        self.log.append({"sender": self.sender, "sent": v.tolist(), "compressed": q.tolist(),
                         "draws": draws})
        return out

    def compressed_msg_size(self, msg: Array) -> int:
        return self.inner.compressed_msg_size(msg)


class _Noted(NoiseScheme):
    """A sender's noise scheme that logs the noise it returns and the receivers its rows go
    to, in the order decent-bench sends (``send``'s ``active_connected_agents``; no drops in
    these cases, so every one is confirmed)."""

    def __init__(self, inner: NoiseScheme, sender: Agent, k: int, log: list[dict[str, Any]]):
        self.inner, self.sender, self.k, self.log = inner, sender, k, log
        self.net: P2PNetwork | None = None

    def make_noise(self, shape: tuple[int, ...]) -> Array | None:
        out = self.inner.make_noise(shape)
        assert self.net is not None and out is not None
        receivers = [a.index for a in self.net.active_connected_agents(self.sender)]
        assert len(receivers) == shape[0]
        self.log.append({"sender": self.k, "receivers": receivers,
                         "noise": _np(out).reshape(shape[0], -1).tolist()})
        return out


def _run(algorithm: str, costs: list[LinearRegressionCost], graph: str, x0: np.ndarray,
         kind: str, scheme: str, kw: dict[str, Any]) -> dict[str, Any]:
    make = SCHEMES[scheme]
    if kind == "activation":
        agents = [Agent(c, activation=make(**kw, offset=k) if scheme == "CyclicActivation"
                        else make(**kw)) for k, c in enumerate(costs)]
    else:
        agents = [Agent(c) for c in costs]
    log: list[dict[str, Any]] = []
    net_kw: dict[str, Any] = {}
    if kind == "drop":
        net_kw["message_drop"] = make(**kw)  # decent-bench copies it for every sender
    if kind == "compression":
        net_kw["message_compression"] = {a: _Recorded(make(**kw), k, log)
                                         for k, a in enumerate(agents)}
    if kind == "noise":
        net_kw["message_noise"] = {a: _Noted(make(**kw), a, k, log)
                                   for k, a in enumerate(agents)}
    net = P2PNetwork(graph=GRAPHS[graph], agents=agents, **net_kw)
    for scheme_ in net_kw.get("message_noise", {}).values():
        scheme_.net = net
    assert [a.index for a in net.agents()] == list(range(N_AGENTS))
    start = {a: iop.from_numpy(x0[k].copy()) for k, a in enumerate(net.agents())}
    algo = ALGORITHMS[algorithm](step_size=STEP, x0=start)
    channels = CHANNELS[algorithm]
    out: dict[str, Any] = {"iterates": [], "active": [], "delivered": [], "messages": []}

    def record(k: int) -> None:
        out["iterates"].append([_np(a.x).tolist() for a in net.agents()])
        active = set(net.active_agents())  # this iteration's (cached until the next)
        out["active"].append([a in active for a in net.agents()])
        boxes = np.zeros((len(channels), N_AGENTS, N_AGENTS), dtype=int)
        for c, ch in enumerate(channels):
            for a in net.agents():
                for sender in a.messages(ch):
                    boxes[c, a.index, sender.index] = 1
        out["delivered"].append(boxes.tolist())
        if kind in ("compression", "noise"):
            assert sorted(m["sender"] for m in log) == [a.index for a in net.active_agents()]
            out["messages"].append(sorted(log, key=lambda m: m["sender"]))
            log.clear()

    algo.run(net, ITERATIONS, progress_callback=record)
    out["W"] = _np(net.weights).tolist()
    for a in agents:
        a.index = -1
    if kind not in ("compression", "noise"):
        del out["messages"]
    return out


def main() -> None:
    iop.set_backend("numpy")
    iop.set_seed(0)
    random.seed(0)
    problems: dict[str, Any] = {}
    built: dict[str, list[LinearRegressionCost]] = {}
    for name in ("regression", "regression3"):
        costs, x_opt = _problem(name)
        built[name] = costs
        problems[name] = {"A": [_data(c)[0].tolist() for c in costs],
                          "b": [_data(c)[1].tolist() for c in costs],
                          "x_optimal": x_opt.reshape(-1).tolist()}
    graphs: dict[str, Any] = {}
    runs = []
    for algorithm, problem, graph, kind, scheme, kw in CASES:
        x0 = _x0("spread", len(problems[problem]["x_optimal"]))
        got = _run(algorithm, built[problem], graph, x0, kind, scheme, kw)
        W = got.pop("W")
        graphs.setdefault(graph, W)
        assert graphs[graph] == W
        runs.append({"algorithm": algorithm, "problem": problem, "graph": graph,
                     "kind": kind, "scheme": scheme, "options": kw,
                     "channels": CHANNELS[algorithm], "x0": x0.tolist(), **got})
    out = {"decent_bench": version("decent-bench"), "decent_array": version("decent-array"),
           "python": platform.python_version(), "numpy": np.__version__, "seed": 0,
           "command": "python analysis/decentbench_impair.py",
           "step_size": STEP, "iterations": ITERATIONS, "n_agents": N_AGENTS,
           "gradient": "(A_i^T A_i x - A_i^T b_i) / m_i",
           "problems": _short(problems), "graphs": _short(graphs), "runs": _short(runs)}
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(out, separators=(",", ":")) + "\n")
    print(f"wrote {OUT} ({OUT.stat().st_size} bytes, {len(runs)} runs)", file=sys.stderr)


if __name__ == "__main__":
    main()
