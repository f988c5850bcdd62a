"""Field claim: exact diffusion's transient stage against D-SGD's as the graph gets sparser
(Yuan, Alghunaim & Huang, JMLR 2023).

A strongly convex least-squares problem on 32 nodes: node ``i`` holds 50 samples
``b_i = A_i (x^o + zeta u_i) + noise`` around its own optimum (heterogeneous data), so
``f_i(x) = |A_i x - b_i|^2 / (2 m)`` and every stochastic gradient is the exact local one
plus ``N(0, sigma^2 I)`` noise. D-SGD (adapt then combine, :func:`topofl.algorithms.dsgd`),
exact diffusion (:func:`topofl.algorithms.exact_diffusion`, ``W-bar = (I + W) / 2``) and
centralized SGD (D-SGD on the complete graph from one shared start, which *is* centralized
SGD on the mean of the n noisy gradients) run at the same decaying step
``alpha_t = theta / (mu (t + K))`` from ``x = 0`` on four undirected graphs (ring, grid, torus,
undirected exponential). Every method sees the same gradient noise (64 realisations, batched),
so the comparisons are paired draw by draw. The error is ``mean_i |x_i - x*|^2`` averaged over
the realisations; a method's transient stage is the first of 80 log-spaced iterations from
which its error stays within 1.25 times centralized SGD's to the end of the run.

The recursions run batched here (every graph and method in one tensor); the page checks them
against topofl's own ``dsgd`` and ``exact_diffusion`` driven through
:func:`topofl.engine.run_rounds` on the same problem and noise.

    python paper_figures/fig_field_exact_diffusion.py [--quick | --full] [--update-results]
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from topofl import figures
from topofl.workflow.provenance import provenance

SETTING: dict[str, Any] = {
    "n": 32, "d": 10, "m": 50, "zeta": 1.0, "observation_noise": 0.1, "sigma": 3.0,
    "theta": 2.0, "horizon": 100_000, "realisations": 64, "checkpoints": 80, "within": 1.25,
    "seeds": (0, 1, 2, 3, 4),
}
QUICK = {"horizon": 2000, "realisations": 4, "checkpoints": 30, "seeds": (0, 1)}
GRAPHS = {"ring": "ring", "grid 4 x 8": "grid:rows=4,cols=8",
          "torus 4 x 8": "torus:rows=4,cols=8", "undirected exponential": "undirected_exponential"}
METHODS = ("D-SGD", "exact diffusion")
NOISE_STREAM = 1  # the gradient noise's generator: SeedSequence([seed, NOISE_STREAM])
REPLAY_ROUNDS = 40


@dataclass(frozen=True)
class Problem:
    """The least-squares problem of one seed (float64 tensors)."""

    H: Any  # [n, d, d] local Hessians A_i^T A_i / m
    c: Any  # [n, d] A_i^T b_i / m
    x_star: Any  # [d] the minimiser of the mean cost
    mu: float  # smallest eigenvalue of the mean Hessian
    L: float  # largest eigenvalue of the local Hessians


def problem(seed: int, setting: dict[str, Any]) -> Problem:
    """Draw seed ``seed``'s samples: ``A_i`` standard normal ``[m, d]``, ``b_i = A_i (x^o +
    zeta u_i) + observation noise`` with ``x^o, u_i`` standard normal."""
    import torch

    n, d, m = setting["n"], setting["d"], setting["m"]
    g = torch.Generator().manual_seed(seed)
    f64 = torch.float64
    A = torch.randn(n, m, d, generator=g, dtype=f64)
    x_o = torch.randn(d, generator=g, dtype=f64)
    u = torch.randn(n, d, generator=g, dtype=f64)
    b = (torch.einsum("nmd,nd->nm", A, x_o + setting["zeta"] * u)
         + setting["observation_noise"] * torch.randn(n, m, generator=g, dtype=f64))
    H = A.transpose(1, 2) @ A / m
    c = torch.einsum("nmd,nm->nd", A, b) / m
    x_star = torch.linalg.solve(H.mean(0), c.mean(0))
    return Problem(H, c, x_star, float(torch.linalg.eigvalsh(H.mean(0)).min()),
                   float(torch.linalg.eigvalsh(H).max()))


def step_size(p: Problem, theta: float) -> tuple[int, Any]:
    """``K = ceil(2 theta L / mu)`` (so ``alpha_0 <= 1 / (2 L)``) and the
    schedule ``t -> theta / (mu (t + K))``."""
    K = math.ceil(2 * theta * p.L / p.mu)
    return K, lambda t: theta / (p.mu * (t + K))


def mixing(n: int) -> tuple[dict[str, Any], dict[str, float]]:
    """Each graph's mixing matrix (float64 ``[n, n]``) and spectral gap ``1 - beta``."""
    import torch

    import topofl as tf

    Ws, gaps = {}, {}
    for label, spec in GRAPHS.items():
        topo = tf.topologies.build(spec, n=n)
        Ws[label] = torch.as_tensor(topo.to_dense(), dtype=torch.float64)
        gaps[label] = float(tf.spectral.spectral_gap(topo))
    return Ws, gaps


def noise_stream(seed: int, shape: tuple[int, ...], sigma: float) -> Any:
    """``t -> [n, R, d]`` gradient noise of round ``t`` (drawn in round order)."""
    import torch

    state = int(np.random.SeedSequence([seed, NOISE_STREAM]).generate_state(1)[0])
    g = torch.Generator().manual_seed(state)
    return lambda t: sigma * torch.randn(shape, generator=g, dtype=torch.float64)


def trajectories(p: Problem, Ws: dict[str, Any], rate: Any, noise: Any, realisations: int,
                 checkpoints: list[int], on_point: Any = None) -> np.ndarray:
    """``[len(checkpoints), 1 + 2 G]``: the error ``mean_i |x_i - x*|^2`` (mean over the
    realisations) after each checkpoint's iteration, of centralized SGD, D-SGD on each graph,
    exact diffusion on each graph (in ``GRAPHS``' order). ``on_point(t, xd, xe)`` sees the
    iterates after every round (the replay check)."""
    import torch

    n, d = p.c.shape
    f64 = torch.float64
    eye = torch.eye(n, dtype=f64)
    Wd = torch.stack([torch.full((n, n), 1.0 / n, dtype=f64), *Ws.values()])
    We = torch.stack([(eye + W) / 2 for W in Ws.values()])
    xd = torch.zeros(len(Wd), n, realisations, d, dtype=f64)
    xe = torch.zeros(len(We), n, realisations, d, dtype=f64)
    psi = xe.clone()

    def grad(x: Any, xi: Any) -> Any:
        return torch.einsum("nde,knre->knrd", p.H, x) - p.c[None, :, None, :] + xi

    out, t = [], 0
    for stop in checkpoints:
        while t < stop:
            a, xi = rate(t), noise(t)
            xd = torch.einsum("kij,kjrd->kird", Wd, xd - a * grad(xd, xi))
            adapted = xe - a * grad(xe, xi)
            xe, psi = torch.einsum("kij,kjrd->kird", We, adapted + xe - psi), adapted
            t += 1
            if on_point is not None:
                on_point(t, xd, xe)
        err = [((x - p.x_star) ** 2).sum(-1).mean((1, 2)) for x in (xd, xe)]
        out.append(torch.cat(err).numpy())
    return np.asarray(out)


def transient(ratio: np.ndarray, checkpoints: list[int], within: float) -> tuple[int, bool]:
    """The first checkpoint from which ``ratio <= within`` at every later one, and whether
    it was never reached (then the last checkpoint, a lower bound: censored)."""
    ok = ratio <= within
    for k in range(len(ok)):
        if ok[k:].all():
            return checkpoints[k], False
    return checkpoints[-1], True


def exponent(T: np.ndarray, gaps: np.ndarray) -> float:
    """The least-squares slope of ``log T`` against ``log 1 / (1 - beta)``."""
    return float(np.polyfit(np.log(1.0 / gaps), np.log(T), 1)[0])


def measure(seed: int, setting: dict[str, Any]) -> dict[str, Any]:
    """One seed: the error curves, each method's transient stage on every graph."""
    p = problem(seed, setting)
    K, rate = step_size(p, setting["theta"])
    Ws, gaps = mixing(setting["n"])
    cps = sorted({int(round(v)) for v in np.geomspace(10, setting["horizon"],
                                                     setting["checkpoints"])})
    shape = (setting["n"], setting["realisations"], setting["d"])
    E = trajectories(p, Ws, rate, noise_stream(seed, shape, setting["sigma"]),
                     setting["realisations"], cps)
    G = len(GRAPHS)
    ratio = {(g, m): E[:, 1 + j + G * i] / E[:, 0]
             for i, m in enumerate(METHODS) for j, g in enumerate(GRAPHS)}
    T = {key: transient(r, cps, setting["within"]) for key, r in ratio.items()}
    return {"seed": seed, "mu": p.mu, "L": p.L, "K": K, "checkpoints": cps, "gaps": gaps,
            "central": E[:, 0], "ratio": ratio, "T": T}


def replay_gap(setting: dict[str, Any]) -> float:
    """The largest difference between the batched recursions and topofl's own ``dsgd`` and
    ``exact_diffusion`` (and ``dsgd`` on the complete graph for centralized SGD), driven
    through :func:`topofl.engine.run_rounds` with the same problem (seed 0), step and noise,
    over the first rounds, two realisations, every graph."""
    import torch

    import topofl as tf
    from topofl.engine import run_rounds

    p, R = problem(0, setting), 2
    _, rate = step_size(p, setting["theta"])
    Ws, _ = mixing(setting["n"])
    n, d = p.c.shape
    draws = noise_stream(0, (n, R, d), setting["sigma"])
    xi = [draws(t) for t in range(REPLAY_ROUNDS)]
    seen: dict[int, tuple[Any, Any]] = {}
    trajectories(p, Ws, rate, lambda t: xi[t], R, [REPLAY_ROUNDS],
                 lambda t, xd, xe: seen.__setitem__(t, (xd.clone(), xe.clone())))
    worst = 0.0
    graphs = {"complete": tf.topologies.complete(n),
              **{g: tf.topologies.build(s, n=n) for g, s in GRAPHS.items()}}
    for k, (label, topo) in enumerate(graphs.items()):
        algos = [("dsgd", tf.algorithms.dsgd(lr=1.0), k)]
        if label != "complete":
            algos.append(("ed", tf.algorithms.exact_diffusion(lr=1.0, gamma=0.5), k - 1))
        for kind, algo, row in algos:
            def grad(z: Any, phase: Any, rnd: Any) -> Any:
                zz = z.view(n, R, d)
                g = torch.einsum("nde,nre->nrd", p.H, zz) - p.c[:, None, :] + xi[rnd.t]
                return g.reshape(n, R * d)

            state = None
            x0 = torch.zeros(n, R * d, dtype=torch.float64)
            for t in range(REPLAY_ROUNDS):
                tr = run_rounds(algo, x0, topo, grad, rounds=1, state=state, start=t,
                                lr=lambda rnd, phase: rate(rnd.t))
                state = tr.state
                mine = seen[t + 1][0 if kind == "dsgd" else 1][row].reshape(n, R * d)
                worst = max(worst, float((tr.evaluated() - mine).abs().max()))
    return worst


def over_seeds(values: list[float], seeds: list[int], censored: list[bool],
               resolution: float = 0.0) -> figures.OverSeeds:
    return figures.OverSeeds(tuple(values), tuple(seeds), resolution, tuple(censored))


@figures.script
def main(args: figures.FigureArgs) -> figures.Result:
    import torch

    setting = {**SETTING, **(QUICK if args.scale == "quick" else {})}
    threads = torch.get_num_threads()
    torch.set_num_threads(figures.THREADS)  # the runs' count: small tensors, bits fixed by it
    try:
        found = [measure(s, setting) for s in setting["seeds"]]
        replay = replay_gap(setting)
        ran = provenance()  # the thread count, CPU kind and numeric environment they ran in
    finally:
        torch.set_num_threads(threads)
    seeds = [r["seed"] for r in found]
    gaps = found[0]["gaps"]
    gap_arr = np.array([gaps[g] for g in GRAPHS])
    cps = found[0]["checkpoints"]
    step = math.log2(cps[-1] / cps[-2])
    horizon = (f"the error curves are read to iteration {setting['horizon']} (the declared "
               "horizon); a transient stage is where a curve joins centralized SGD's for good")

    def T(g: str, m: str) -> list[tuple[int, bool]]:
        return [r["T"][(g, m)] for r in found]

    ring_d, ring_e = T("ring", "D-SGD"), T("ring", "exact diffusion")
    lg = over_seeds([math.log2(a[0] / b[0]) for a, b in zip(ring_d, ring_e)], seeds,
                    [a[1] or b[1] for a, b in zip(ring_d, ring_e)], step)
    slopes = {m: [exponent(np.array([r["T"][(g, m)][0] for g in GRAPHS]), gap_arr)
                  for r in found] for m in METHODS}
    cens_any = [any(r["T"][(g, m)][1] for g in GRAPHS for m in METHODS) for r in found]
    slope_diff = over_seeds([a - b for a, b in zip(slopes["D-SGD"], slopes["exact diffusion"])],
                            seeds, cens_any)
    checks = [
        figures.above("ring (the sparsest graph): exact diffusion's transient stage shorter "
                      "than D-SGD's (log2 of D-SGD's over exact diffusion's)", lg,
                      margin=figures.margin(args.name, "factor"), horizon=horizon,
                      headline=True, fmt=".2f"),
        figures.above("the transient stage grows faster with 1 / (1 - beta) for D-SGD than "
                      "for exact diffusion (fitted exponent over the four graphs, D-SGD's "
                      "minus exact diffusion's)", slope_diff,
                      margin=figures.margin(args.name, "exponent"), horizon=horizon, fmt=".2f"),
        figures.fact("the batched recursions are topofl's dsgd and exact_diffusion (and "
                     "centralized SGD is dsgd on the complete graph), driven through "
                     f"run_rounds on seed 0's problem and noise for {REPLAY_ROUNDS} rounds on "
                     "every graph, to 1e-10", replay <= 1e-10,
                     f"largest difference {replay:.1e}"),
    ]
    return figures.Result(
        _plot(found, gaps, slopes, setting), _measured(found, slopes), checks,
        _tables(found, gaps, slopes), notes=_notes(found, setting),
        setting=[("problem", f"least squares, n = {setting['n']} nodes, d = {setting['d']}, "
                             f"m = {setting['m']} samples a node, zeta = {setting['zeta']}, "
                             f"observation noise {setting['observation_noise']}"),
                 ("gradient_noise", f"N(0, {setting['sigma']}^2 I), "
                                    f"{setting['realisations']} realisations shared by every "
                                    "method"),
                 ("step", f"theta / (mu (t + K)), theta = {setting['theta']}, "
                          "K = ceil(2 theta L / mu)"),
                 ("horizon", f"{setting['horizon']} iterations, the error read at "
                             f"{len(cps)} log-spaced iterations from 10"),
                 ("transient_stage", f"error within {setting['within']} times centralized "
                                     "SGD's from then on"),
                 ("graphs", "; ".join(f"{g} (1 - beta = {gaps[g]:.4f})" for g in GRAPHS))],
        dataset="synthetic least squares (no data set)", seeds=seeds,
        paper_rounds=[setting["horizon"]], rounds=[setting["horizon"]],
        optimizer_state=["none (plain gradient steps, no momentum)"], provenance=[ran])


def _measured(found: list[dict[str, Any]], slopes: dict[str, list[float]]) -> str:
    def cell(g: str, m: str) -> str:
        v = [r["T"][(g, m)] for r in found]
        mark = "+" if any(c for _, c in v) else ""
        return f"{np.mean([t for t, _ in v]):.0f}{mark}"

    parts = [f"{g} {cell(g, 'D-SGD')} / {cell(g, 'exact diffusion')}" for g in GRAPHS]
    return ("transient stage (iterations, mean over the seeds, D-SGD / exact diffusion; + "
            "where a seed never reached it): " + ", ".join(parts)
            + "; fitted exponent of 1 / (1 - beta): D-SGD "
            + f"{np.mean(slopes['D-SGD']):.2f} ± {np.std(slopes['D-SGD'], ddof=1):.2f}, "
            + f"exact diffusion {np.mean(slopes['exact diffusion']):.2f} ± "
            + f"{np.std(slopes['exact diffusion'], ddof=1):.2f} (the paper's orders: 2 and 1)")


def _tables(found: list[dict[str, Any]], gaps: dict[str, float],
            slopes: dict[str, list[float]]) -> dict[str, Any]:
    import pandas as pd

    rows = []
    for g in GRAPHS:
        row: dict[str, Any] = {"graph": g, "1 - beta": round(gaps[g], 4)}
        for m in METHODS:
            v = [r["T"][(g, m)] for r in found]
            row[f"{m}: transient stage (seed by seed)"] = ", ".join(
                f"{t}{'+' if c else ''}" for t, c in v)
        row["log2 ratio (mean)"] = round(float(np.mean(
            [math.log2(r["T"][(g, 'D-SGD')][0] / r["T"][(g, 'exact diffusion')][0])
             for r in found])), 2)
        rows.append(row)
    per_seed = pd.DataFrame([{"seed": r["seed"], "mu": round(r["mu"], 4), "L": round(r["L"], 4),
                              "K": r["K"], "D-SGD exponent": round(slopes["D-SGD"][i], 3),
                              "exact diffusion exponent": round(slopes["exact diffusion"][i], 3)}
                             for i, r in enumerate(found)])
    return {"transient stages": pd.DataFrame(rows), "per seed": per_seed}


def _notes(found: list[dict[str, Any]], setting: dict[str, Any]) -> list[str]:
    end = max(float(r["ratio"][key][-1]) for r in found for key in r["ratio"])
    return [f"At the horizon every method's error is within {end:.3f} times centralized "
            f"SGD's on every graph and seed (the transient stages ended inside the run unless "
            "marked +).",
            "A seed draws the problem (torch.Generator(seed)) and the gradient noise "
            f"(SeedSequence([seed, {NOISE_STREAM}])); every method sees the same noise, so the "
            "comparisons are paired within a seed as well as across seeds.",
            f"The recursions run in float64 on {figures.THREADS} torch thread (the count the "
            "figure runs use)."]


def _plot(found: list[dict[str, Any]], gaps: dict[str, float],
          slopes: dict[str, list[float]], setting: dict[str, Any]) -> Any:
    import matplotlib.pyplot as plt
    from matplotlib.ticker import NullFormatter

    fig, (left, right) = plt.subplots(1, 2, figsize=(11.5, 4.2))
    cps = found[0]["checkpoints"]
    styles = {"D-SGD": "-", "exact diffusion": "--"}
    for j, g in enumerate(("ring", "torus 4 x 8")):
        for m in METHODS:
            mean = np.exp(np.mean([np.log(r["ratio"][(g, m)]) for r in found], axis=0))
            left.plot(cps, mean, styles[m], color=f"C{j}", label=f"{g}, {m}")
    left.axhline(setting["within"], color="grey", lw=0.8, ls=":")
    left.set_xscale("log")
    left.set_yscale("log")
    left.set_xlabel("iteration (log)")
    left.set_ylabel("error / centralized SGD's (geometric mean, seeds)")
    left.set_title("joining centralized SGD")
    left.legend(fontsize=8)
    inv = np.array([1.0 / gaps[g] for g in GRAPHS])
    for k, m in enumerate(METHODS):
        Ts = np.array([[r["T"][(g, m)][0] for g in GRAPHS] for r in found])
        right.plot(np.tile(inv, (len(found), 1)).ravel(), Ts.ravel(), "o", color=f"C{k + 2}",
                   alpha=0.5, label=f"{m} (exponent {np.mean(slopes[m]):.2f})")
        right.plot(inv, np.exp(np.mean(np.log(Ts), axis=0)), "-", color=f"C{k + 2}")
    right.set_xscale("log")
    right.xaxis.set_minor_formatter(NullFormatter())
    right.set_yscale("log")
    right.set_xlabel("1 / (1 - beta) (log)")
    right.set_ylabel("transient stage (iterations, log)")
    right.set_title("transient stage against the graph")
    right.legend(fontsize=8)
    fig.tight_layout()
    return fig


if __name__ == "__main__":
    raise SystemExit(main())
