"""Asynchronous timing against its peers: gossipy's ticks, the sacs-epfl simulator's offsets
and delays, Lian et al.'s active/passive split (issue 59, item 6).

Writes ``analysis/async_timing.md``. gossipy is run itself where it can be imported (its
PyPI release ``gossipy-dfl`` 0.0.1, whose ``GossipSimulator.start`` is the GitHub one's;
``GOSSIPY_PATH`` names a folder holding it): nodes minimising ``(x - c_i)^2 / 2`` (a model
handler whose merge is its ``TorchModelHandler``'s mean and whose update is one SGD step),
the node order of a tick fixed to the ids (gossipy shuffles it every round from NumPy's
global generator; topofl orders ties by id) and each node's peer drawn by topofl's
``partners`` (gossipy draws it from Python's global generator): the same inputs, so the two
runs must agree to the bit. The sacs-epfl simulator cannot run here (it needs its dask
workers); its gossip is replayed from its code (``tests/algorithms/test_async_timing.py``,
``sacs_gossip``).

Run: ``GOSSIPY_PATH=... python analysis/async_timing.py``.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
import types
from pathlib import Path
from typing import Any

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import topofl as tf  # noqa: E402
from tests.algorithms.test_async_timing import sacs_gossip  # noqa: E402
from topofl.engine import run_rounds  # noqa: E402
from topofl.engine.event_time import partners  # noqa: E402

OUT = Path(__file__).with_suffix(".md")
N, P, LR = 16, 3, 0.1


def _gossipy() -> Any:
    """gossipy's modules, or ``None`` where it cannot be imported."""
    for folder in reversed(os.environ.get("GOSSIPY_PATH", "").split(os.pathsep)):
        if folder:
            sys.path.insert(0, folder)
    sys.modules.setdefault("torchvision", types.ModuleType("torchvision"))  # unused by it
    try:
        import gossipy.core as core
        import gossipy.model.handler as handler
        import gossipy.node as node
        import gossipy.simul as simul
    except ImportError as e:
        print(f"gossipy not imported: {e}", file=sys.stderr)
        return None
    return types.SimpleNamespace(core=core, handler=handler, node=node, simul=simul)


def run_gossipy(g: Any, topo: Any, c: torch.Tensor, x0: torch.Tensor, periods: list[int],
                sync: bool, delay: int, rounds: int, round_len: int) -> dict[str, Any]:
    """gossipy's own simulator on the quadratic nodes; its models and its messages."""

    class Quadratic(g.handler.ModelHandler):
        def __init__(self, x: torch.Tensor, target: torch.Tensor) -> None:
            super().__init__(g.core.CreateModelMode.MERGE_UPDATE)
            self.model, self.target = x.clone(), target

        def init(self) -> None:
            pass

        def _update(self, data: Any) -> None:
            self.model = self.model - LR * (self.model - self.target)
            self.n_updates += 1

        def _merge(self, other: Any) -> None:
            self.model = (self.model + other.model) / 2  # TorchModelHandler's mean
            self.n_updates = max(self.n_updates, other.n_updates)

        def evaluate(self, *a: Any, **k: Any) -> dict[str, float]:
            return {}

    sent: list[tuple[int, int, int]] = []

    class Node(g.node.GossipNode):
        def get_peer(self) -> int:
            k = sum(1 for s in sent if s[1] == self.idx)
            j = int(partners(topo, 0, [self.idx], [k])[0])
            return j

        def send(self, t: int, peer: int, protocol: Any) -> Any:
            sent.append((t, self.idx, peer))
            return super().send(t, peer, protocol)

    nodes = {}
    for i in range(len(periods)):
        nd = Node(i, (c[i], None), round_len, Quadratic(x0[i], c[i]), None, sync=sync)
        nd.delta = periods[i]
        nodes[i] = nd
    dispatcher = types.SimpleNamespace(has_test=lambda: False)
    sim = g.simul.GossipSimulator(nodes, dispatcher, round_len, g.core.AntiEntropyProtocol.PUSH,
                                  delay=g.core.ConstantDelay(delay))
    import gossipy

    # gossipy's global cache is keyed by (node, updates): a message still in flight when a
    # simulation ends stays in it, and a later simulation's message with the same key would
    # be handed the stale model. Each run here starts from an empty cache.
    gossipy.CACHE.clear()
    sim.init_nodes()
    start = torch.stack([nodes[i].model_handler.model for i in range(len(periods))])
    order = g.simul.shuffle
    g.simul.shuffle = lambda ids: None  # the node order of a tick: the ids
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            sim.start(rounds)
    finally:
        g.simul.shuffle = order
    x = torch.stack([nodes[i].model_handler.model for i in range(len(periods))])
    return dict(start=start, x=x, sent=sent, ticks=rounds * round_len)


def compare_gossipy(g: Any, sync: bool, delay: int, seed: int) -> dict[str, Any]:
    """gossipy against topofl's tick timing on one setup."""
    rng = np.random.default_rng(seed)
    topo = tf.topologies.random_regular(N, 4, seed=seed)
    c = torch.as_tensor(rng.normal(size=(N, P)))
    x0 = torch.as_tensor(rng.normal(size=(N, P)))
    round_len = 5
    if sync:  # a send a round, delta_i ticks into it: durations R, offsets delta_i
        periods = rng.integers(0, round_len, size=N).tolist()
        durations, offsets = [float(round_len)] * N, [float(p) for p in periods]
        shift = round_len
    else:  # a send every delta_i ticks from tick 0: offsets shift - delta_i
        periods = rng.integers(2, 8, size=N).tolist()
        shift = max(periods)
        durations, offsets = [float(p) for p in periods], [float(shift - p) for p in periods]
    rounds = 40
    peer = run_gossipy(g, topo, c, x0, periods, sync, delay, rounds, round_len)
    windows = shift + peer["ticks"] - 1  # tick tau is time tau + shift
    algo = tf.algorithms.gossip_learning(LR, durations=durations, window=1.0, layers=2 * N,
                                         timing=dict(order="tick", delay=float(delay),
                                                     offsets=offsets))
    run = run_rounds(algo, peer["start"], topo, lambda z, phase, rnd: z - c, rounds=windows)
    ours = run.state.own
    return dict(setup=f"{'sync' if sync else 'async'} nodes, ConstantDelay({delay}), seed {seed}",
                sends=len(peer["sent"]), sends_ours=int(ours.steps.sum()),
                receives_ours=int(ours.updates.sum()),
                diff=float((run.state.x - peer["x"]).abs().max()),
                equal=bool(torch.equal(run.state.x, peer["x"])),
                held=sum(s.records["async_held"] for s in run.sent))


def compare_sacs(seed: int, merge: str) -> dict[str, Any]:
    """The sacs-epfl gossip replay against topofl's continuous timing."""
    rng = np.random.default_rng(seed)
    topo = tf.topologies.complete(N)
    c = torch.as_tensor(rng.normal(size=(N, P)))
    x0 = torch.as_tensor(rng.normal(size=(N, P)))
    period, transfer = 10_000_000, 2_345_678  # microseconds, as the simulator counts
    shifts = rng.integers(0, period + 1, size=N).tolist()
    end = 40 * period
    ref = sacs_gossip(x0, c, topo, shifts, period, transfer, end, LR, merge)
    unit = 1e6
    algo = tf.algorithms.gossip_learning(LR, durations=period / unit, window=period / unit,
                                         layers=2 * N, merge=merge,
                                         timing=dict(offsets=[s / unit for s in shifts],
                                                     delay=transfer / unit))
    run = run_rounds(algo, x0, topo, lambda z, phase, rnd: z - c,
                     rounds=int(end // period))
    return dict(setup=f"merge={merge}, seed {seed}", receives=ref["receives"],
                receives_ours=int(run.state.own.updates.sum()),
                diff=float((run.state.x - ref["x"]).abs().max()),
                held=sum(s.records["async_held"] for s in run.sent))


def main() -> None:
    lines = ["# Asynchronous timing against its peers", "",
             "Generated by `analysis/async_timing.py` (issue 59, item 6). float64, "
             f"{N} clients, `(x - c_i)^2 / 2`, lr {LR}.", ""]
    g = _gossipy()
    lines += ["## gossipy (its own simulator, `gossipy-dfl` 0.0.1)", ""]
    if g is None:
        lines += ["gossipy could not be imported here: not measured.", ""]
    else:
        lines += ["| setup | gossipy sends | topofl sends | topofl receives | held | "
                  "max abs difference | equal to the bit |", "|---|---|---|---|---|---|---|"]
        for sync, delay, seed in [(False, 0, 0), (False, 2, 1), (True, 0, 2), (True, 3, 3)]:
            r = compare_gossipy(g, sync, delay, seed)
            lines.append(f"| {r['setup']} | {r['sends']} | {r['sends_ours']} | "
                         f"{r['receives_ours']} | {r['held']} | {r['diff']:.3g} | "
                         f"{r['equal']} |")
        lines.append("")
    lines += ["## sacs-epfl decentralized-learning-simulator (its gossip, replayed)", "",
              "| setup | its receives | topofl receives | held | max abs difference |",
              "|---|---|---|---|---|"]
    for seed, merge in [(0, "age"), (1, "mean"), (2, "age")]:
        r = compare_sacs(seed, merge)
        lines.append(f"| {r['setup']} | {r['receives']} | {r['receives_ours']} | {r['held']} | "
                     f"{r['diff']:.3g} |")
    lines += ["", "Notes. gossipy: node order of a tick fixed to the ids and peers drawn by "
              "topofl's "
              "`partners` (the same inputs); its global message cache is cleared before each "
              "run (keyed by node and update count, it keeps a message still in flight at the "
              "end of one simulation, and a later simulation in the same process was handed "
              "that stale model: 0.136 max difference before clearing). sacs-epfl: replayed "
              "with no training time and no bandwidth contention (a transfer takes the "
              "model size over the bandwidth, the same for every message); with its "
              "initial training, its ages start at 1, so the age-weighted rows start from "
              "the post-training models with ages 0 on both sides.", ""]
    OUT.write_text("\n".join(lines))
    print(OUT.read_text())


if __name__ == "__main__":
    main()
