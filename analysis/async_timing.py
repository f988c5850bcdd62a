"""Asynchronous timing against its peers: gossipy's ticks and its shuffled node order, the
sacs-epfl simulator's offsets and delays, and its bandwidth queueing and training time
replayed by topofl's ``bandwidth`` timing (issue 59, item 6; issue 84, item 3).

Writes ``analysis/async_timing.md``. gossipy is run itself where it can be imported (its
PyPI release ``gossipy-dfl`` 0.0.1, whose ``GossipSimulator.start`` is the GitHub one's;
``GOSSIPY_PATH`` names a folder holding it): nodes minimising ``(x - c_i)^2 / 2`` (a model
handler whose merge is its ``TorchModelHandler``'s mean and whose update is one SGD step),
the node order of a tick fixed to the ids, then shuffled every round as gossipy ships it
(NumPy's global generator) with the orders it drew given to topofl (``timing``'s
``node_order``), and each node's peer drawn by topofl's ``partners`` (gossipy draws it from
Python's global generator): the same inputs, so the two runs must agree to the bit. The
sacs-epfl simulator cannot run here (it needs its dask workers); its gossip is replayed
from its code (``tests/algorithms/test_async_timing.py``: ``sacs_gossip``, and
``SacsGossip`` with its bandwidth scheduler and training time, which topofl's ``bandwidth``
timing replays: the report measures the difference, and the gap of the nearest timing
without the schedule).

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
from tests.algorithms.test_async_timing import sacs_gaps, sacs_gossip  # noqa: E402
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
                sync: bool, delay: int, rounds: int, round_len: int,
                shuffle_seed: int | None = None) -> dict[str, Any]:
    """gossipy's own simulator on the quadratic nodes; its models, its messages and the node
    order of each round. ``shuffle_seed``: its node order shuffled every round as it ships
    (NumPy's global generator, seeded with it here); ``None``: the ids."""

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
    drawn: list[list[int]] = []

    def shuffle(ids: np.ndarray) -> None:  # its own shuffle, the orders it drew recorded
        order(ids)
        drawn.append(ids.tolist())

    if shuffle_seed is None:
        g.simul.shuffle = lambda ids: None  # the node order of a tick: the ids
    else:
        np.random.seed(shuffle_seed)  # noqa: NPY002 (gossipy draws from the global one)
        g.simul.shuffle = shuffle
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            sim.start(rounds)
    finally:
        g.simul.shuffle = order
    x = torch.stack([nodes[i].model_handler.model for i in range(len(periods))])
    return dict(start=start, x=x, sent=sent, ticks=rounds * round_len, orders=drawn)


def compare_gossipy(g: Any, sync: bool, delay: int, seed: int,
                    shuffled: bool = False) -> dict[str, Any]:
    """gossipy against topofl's tick timing on one setup; ``shuffled``: gossipy as it
    ships (its node order shuffled every round), topofl given the orders it drew
    (``node_order``) and, for the difference of today's default, in id order."""
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
    peer = run_gossipy(g, topo, c, x0, periods, sync, delay, rounds, round_len,
                       shuffle_seed=seed if shuffled else None)
    windows = shift + peer["ticks"] - 1  # tick tau is time tau + shift
    timing: dict[str, Any] = dict(order="tick", delay=float(delay), offsets=offsets)

    def ours(how: dict[str, Any]) -> Any:
        algo = tf.algorithms.gossip_learning(LR, durations=durations, window=1.0,
                                             layers=2 * N, timing=how)
        return run_rounds(algo, peer["start"], topo, lambda z, phase, rnd: z - c,
                          rounds=windows)

    out: dict[str, Any] = {}
    if shuffled:  # gossipy's tick tau runs at topofl's time tau + shift: tick tau + shift
        ids = ours(timing)
        out["diff_ids"] = float((ids.state.x - peer["x"]).abs().max())
        rows = [list(range(N))] * shift + [peer["orders"][tau // round_len]
                                           for tau in range(peer["ticks"])]
        timing = dict(timing, node_order=rows)
    run = ours(timing)
    own = run.state.own
    kind = "shuffled every round (seed " if shuffled else "in id order (seed "
    return dict(out, setup=f"{'sync' if sync else 'async'} nodes, ConstantDelay({delay}), "
                f"node order {kind}{seed})",
                sends=len(peer["sent"]), sends_ours=int(own.steps.sum()),
                receives_ours=int(own.updates.sum()),
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


def sacs_schedule_table() -> list[str]:
    """The sacs section's second table: topofl's ``bandwidth`` timing against the full
    restatement of the simulator (its queueing alone, and with its training time), and
    the gap of topofl's nearest timing without the schedule."""
    out = ["", "### Its bandwidth queueing and training time: topofl's `bandwidth` timing", "",
           "The full restatement of its code (`SacsGossip` in "
           "`tests/algorithms/test_async_timing.py`: its event queue, `BWScheduler`, "
           "`GossipClient`; 8 clients, period 10 s, 1 MB/s everywhere, lr 0.1) against "
           "topofl's `timing={\"offsets\": shifts, \"bandwidth\": 1e6, \"model_bytes\": "
           "size}` (queueing alone: the simulator with a training time of 0, topofl from the "
           "models after its first training; age-weighted rows with `\"train_time\": 0` "
           "from the initial models) and with `\"train_time\"` (from the initial models, "
           "topofl's first training at time 0 too), windows of one period, "
           "`layers = 4 n`; and the gap of topofl's nearest timing without the schedule "
           "(the shifts as `offsets`, a free link's transfer time as `delay`, every receive "
           "merged and trained at once). 'waited': transfers that started after they were "
           "asked for (a busy link); 'replaced': models received during a training and "
           "replaced, unmerged, by a later one; 'held': operations topofl held to a later "
           "window.", "",
           "| graph, merge | model transfer | training | seed | its merges | topofl's | "
           "waited | replaced | held | replay: queueing alone | with training | equal to the "
           "bit | nearest timing: queueing alone | with training |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    cases = [("complete", "mean", 2_345_678, 3_000_000), ("complete", "mean", 500_000,
                                                           8_000_000),
             ("ring", "age", 2_345_678, 3_000_000)]
    for graph, merge, size, train in cases:
        for seed in (0, 1, 2):
            r = sacs_gaps(seed, size=size, train_time=train, graph=graph, merge=merge)
            held = r["replay queueing held"] + r["replay queueing+training held"]
            equal = r["replay queueing equal"] and r["replay queueing+training equal"]
            out.append(f"| {graph}, {merge} | {size / 1e6:g} s | {train / 1e6:g} s | {seed} | "
                       f"{r['queueing+training receives']} | "
                       f"{r['replay queueing+training merges']} | {r['queueing waited']} | "
                       f"{r['queueing+training replaced']} | {held} | "
                       f"{r['replay queueing']:.3g} | {r['replay queueing+training']:.3g} | "
                       f"{equal} | {r['queueing']:.3g} | {r['queueing+training']:.3g} |")
    return out


def _provenance() -> str:
    """The line saying when, from what code and in what environment the report was made."""
    import datetime
    import platform
    import subprocess

    root = Path(__file__).resolve().parents[1]
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root, text=True,
                              capture_output=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--", "topofl", "analysis",
                                "tests"], cwd=root, text=True, capture_output=True,
                               check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        head, dirty = "unknown", ""
    code = f"`{head}`" + (" with uncommitted changes" if dirty else "")
    return (f"Run on {datetime.date.today().isoformat()} from the code at {code} (topofl "
            f"{tf.__version__}), torch {torch.__version__}, numpy {np.__version__}, Python "
            f"{platform.python_version()}, {platform.machine()} ({os.cpu_count()} cores); "
            "deterministic (float64, fixed draws: no seeds to average), so the counts and "
            "differences below are exact, not estimates.")


def main() -> None:
    lines = ["# Asynchronous timing against its peers", "",
             "Generated by `analysis/async_timing.py` (issue 59, item 6; issue 84, item 3). "
             f"float64, {N} clients, `(x - c_i)^2 / 2`, lr {LR}.", _provenance(), ""]
    g = _gossipy()
    lines += ["## gossipy (its own simulator, `gossipy-dfl` 0.0.1)", ""]
    if g is None:
        lines += ["gossipy could not be imported here: not measured.", ""]
    else:
        lines += ["| setup | gossipy sends | topofl sends | topofl receives | held | "
                  "max abs difference | equal to the bit | topofl in id order: difference |",
                  "|---|---|---|---|---|---|---|---|"]
        for shuffled in (False, True):
            for sync, delay, seed in [(False, 0, 0), (False, 2, 1), (True, 0, 2),
                                      (True, 3, 3)]:
                r = compare_gossipy(g, sync, delay, seed, shuffled)
                by_id = f"{r['diff_ids']:.3g}" if shuffled else "(the same run)"
                lines.append(f"| {r['setup']} | {r['sends']} | {r['sends_ours']} | "
                             f"{r['receives_ours']} | {r['held']} | {r['diff']:.3g} | "
                             f"{r['equal']} | {by_id} |")
        lines.append("")
    lines += ["## sacs-epfl decentralized-learning-simulator (its gossip, replayed)", "",
              "| setup | its receives | topofl receives | held | max abs difference |",
              "|---|---|---|---|---|"]
    for seed, merge in [(0, "age"), (1, "mean"), (2, "age")]:
        r = compare_sacs(seed, merge)
        lines.append(f"| {r['setup']} | {r['receives']} | {r['receives_ours']} | {r['held']} | "
                     f"{r['diff']:.3g} |")
    lines += sacs_schedule_table()
    lines += ["", "Notes. gossipy: peers drawn by topofl's `partners` (the same inputs); the "
              "node order of a tick fixed to the ids in the first four rows, and in the last "
              "four shuffled as gossipy ships it (`shuffle(node_ids)` at every round's first "
              "tick, from NumPy's global generator, seeded with the row's seed) and given to "
              "topofl as `timing`'s `node_order` (the orders gossipy drew, one per tick; "
              "topofl's id order, today's default, is the last column's difference); its "
              "global message cache is cleared before each "
              "run (keyed by node and update count, it keeps a message still in flight at the "
              "end of one simulation, and a later simulation in the same process was handed "
              "that stale model: 0.136 max difference before clearing). sacs-epfl, first "
              "table: replayed with no training time and no bandwidth contention (a transfer "
              "takes the model size over the bandwidth, the same for every message); with its "
              "initial training, its ages start at 1, so the age-weighted rows start from "
              "the post-training models with ages 0 on both sides. Second table: the "
              "schedule (`topofl.engine.bandwidth`) is the simulator's event queue without "
              "models, so the `bandwidth` timing starts where the simulator does; with "
              "`train_time` its first training gives the ages the simulator's (1), so the "
              "age-weighted ring rows start from the same models and ages.", ""]
    OUT.write_text("\n".join(lines))
    print(OUT.read_text())


if __name__ == "__main__":
    main()
