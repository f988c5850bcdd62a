"""``topofl plan``: the predicted parts, the refusal, the JSON output, the accuracy."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from topofl import cli
from topofl import config as config_mod
from topofl.exceptions import ConfigError
from topofl.workflow import plan as plan_mod
from topofl.workflow.plan import (
    CLIENT_BYTES,
    PARTS,
    ROW_BYTES,
    RUNTIME_BYTES,
    Plan,
    PlanError,
    make_plan,
    max_clients,
    shapes,
    transients,
)

LOGISTIC = {"algorithm": "dsgd", "topology": "ring", "data": "digits", "n_clients": 100,
            "model": "logistic", "rounds": 20, "lr": 0.1, "batch_size": 16}


def _plan(**over: object) -> Plan:
    return make_plan({**LOGISTIC, **over}, timed=False, probe=False, available=None)


def test_parameters_part_is_n_times_p_times_bytes() -> None:
    plan = _plan()
    assert plan.num_params == 64 * 10 + 10
    assert plan.parts["parameters"] == 100 * (64 * 10 + 10) * 4
    assert _plan(dtype="float64").parts["parameters"] == 100 * 650 * 8


def test_parts_add_up_and_hand_computed_buffers() -> None:
    plan = _plan(eval_every=1)
    assert list(plan.parts) == list(PARTS)
    assert sum(plan.parts.values()) == plan.peak_bytes == plan.as_json()["peak_bytes"]
    # D-SGD keeps no momentum and no record of its own
    assert plan.parts["optimizer"] == plan.parts["algorithm"] == 0
    # momentum: one [n, P] buffer more
    assert _plan(momentum=0.9).parts["optimizer"] == 100 * 650 * 4
    # gradients: one block of 100 clients (fused SGD: no gradient buffer): the batches
    # [100, 16, 1, 8, 8] float32 and [100, 16] int64 labels, the closed form's [100, 650]
    # float32 gradient rows, 7/5 of the activations (10 float32 logits a sample) and every
    # client's int64 sample indices
    assert plan.parts["gradients"] == (100 * 16 * (64 * 4 + 8) + 100 * 650 * 4
                                       + 100 * 16 * (7 * 40 // 5) + 100 * 16 * 8)
    # gossip: W of a ring as the Topology's scipy CSR (float64 value + int64 column a non-zero,
    # 101 int64 row pointers) and the mixer's torch CSR (float32 + int32), its diagonal, and
    # the whole [100, 650] buffer as the scratch tile (it fits in 1 MiB)
    assert plan.parts["gossip"] == (300 * 16 + 101 * 8) + (300 * 8 + 101 * 4) + 100 * 4 \
        + 100 * 650 * 4
    # records: test_acc, bytes_sent and bytes_received of every client at each of 20 rounds
    assert plan.parts["records"] == 100 * 3 * 20 * ROW_BYTES
    assert _plan(record_clients=False).parts["records"] == 0
    # the static runtime part without a probe
    assert plan.parts["runtime"] == RUNTIME_BYTES + 100 * CLIENT_BYTES


def test_transients_follow_the_model() -> None:
    # the MLP's evaluation: the consensus distance's two [n, P] float32 temporaries or a
    # pass over the global test set, whichever is larger
    mlp = _plan(model="mlp")
    s = shapes(config_mod.resolve({**LOGISTIC, "model": "mlp"}))
    local, evaluation, spectral = transients(s)
    assert mlp.parts["evaluation"] == evaluation >= 2 * 100 * mlp.num_params * 4
    assert spectral == mlp.parts["spectral"] == 2 * 100 * 100 * 8  # dense, two n x n
    assert _plan(spectral=False).parts["spectral"] == 0


def test_max_clients_is_the_largest_that_fits() -> None:
    iid = {**LOGISTIC, "partition": "iid"}  # the same data bytes at every n
    have = _plan(partition="iid").peak_bytes + 2_000_000
    plan = make_plan(iid, timed=False, probe=False, available=have)
    assert plan.max_clients is not None and 100 < plan.max_clients < 1442
    fits = make_plan({**iid, "n_clients": plan.max_clients}, timed=False, probe=False,
                     available=have)
    assert fits.peak_bytes <= have
    # extrapolated from the data of 100 clients (their larger local test sets): conservative
    with pytest.raises(PlanError, match="do not fit"):
        make_plan({**iid, "n_clients": 2 * plan.max_clients}, timed=False, probe=False,
                  available=have)


def test_huge_plan_is_refused_with_what_it_needs_and_has() -> None:
    with pytest.raises(PlanError, match=r"10000000000 clients do not fit: .* needs .* "
                                        r"\(26,000,000,000,000 bytes\), .* available"):
        make_plan({**LOGISTIC, "n_clients": 10**10}, timed=False, probe=False,
                  available=10**9)


def test_cli_refusal_exits_1_with_one_line(tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    cfg = tmp_path / "c.json"
    cfg.write_text(json.dumps({**LOGISTIC, "n_clients": 10**12}))
    assert cli.main(["plan", str(cfg), "--no-time"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "do not fit" in err[0] and "available" in err[0]


def test_cli_bad_config_before_torch(tmp_path: Path) -> None:
    out = subprocess.run([sys.executable, "-c", "import sys; from topofl.cli import main; "
                          "r = main(['plan', 'missing.toml']); "
                          "print(r, 'torch' in sys.modules)"],
                         capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["2", "False"]


@pytest.mark.slow
def test_cli_json_parses_and_probe_is_within_25_percent(tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]
                                                         ) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "analysis"))
    from plan_accuracy import measured_peak

    cfg = tmp_path / "c.json"
    cfg.write_text(json.dumps(LOGISTIC))
    assert cli.main(["plan", str(cfg), "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert sum(got["parts"].values()) == got["peak_bytes"]
    assert got["seconds_per_round"] > 0 and got["max_clients"] >= 100
    measured = measured_peak({**LOGISTIC, "records_path": None})
    assert abs(got["peak_bytes"] / measured - 1) <= 0.25


# ----------------------------------------------------------------- what a new user meets
DIGITS = "(the config asks for 1,000,000 clients; data 'digits' has 1,797 samples, N = 1,442 " \
    "of them in its training split)"
SYNTH = "synthetic:n_samples=1000,dim=40,seed=0"


@pytest.mark.parametrize(("over", "says"), [
    ({"n_clients": 10**6, "partition": "iid"},
     f"more clients than samples: n_clients=1000000 > N=1442 {DIGITS}"),
    ({"n_clients": 10**6, "partition": "shards"},
     "more shards than samples: n_clients * shards_per_client = 1000000 * 2 = 2000000 > "
     f"N=1442 {DIGITS}"),
    ({"n_clients": 10**9, "partition": "iid", "data": SYNTH},
     "more clients than samples: n_clients=1000000000 > N=1000 (the config asks for "
     f"1,000,000,000 clients; data '{SYNTH}' has 1,200 samples, N = 1,000 of them in its "
     "training split)"),
], ids=["iid", "shards", "synthetic"])
def test_data_too_small_for_the_clients_is_refused_in_the_configs_numbers(
        over: dict[str, object], says: str, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    """10^6 clients on digits, 10^9 on 1,000 samples: the plan said "n_clients=4096 > N=1442"
    and "n_clients=64 > N=1", its probe's sizes; it names the config's, as the run does."""
    with pytest.raises(ConfigError) as info:
        make_plan({**LOGISTIC, **over}, timed=False, probe=False, available=None)
    assert str(info.value) == says
    cfg = tmp_path / "c.json"
    cfg.write_text(json.dumps({**LOGISTIC, **over}))
    assert cli.main(["plan", str(cfg), "--no-time"]) == 2
    assert capsys.readouterr().err == f"topofl plan: error: {says}\n"


def test_the_plan_refuses_as_the_run_does(monkeypatch: pytest.MonkeyPatch) -> None:
    # the run checks memory before the data: on a loaded machine (CI beside other jobs, 10.2
    # GiB free) a million clients were refused for memory before the sample count was read;
    # the limit raised, both refuse for the samples, which is what this compares
    monkeypatch.setenv("TOPOFL_MEMORY_LIMIT", str(10**14))
    with pytest.raises(ValueError) as run:
        config_mod.execute({**LOGISTIC, "n_clients": 10**6, "partition": "iid",
                            "records_path": None})
    with pytest.raises(ConfigError) as plan:
        make_plan({**LOGISTIC, "n_clients": 10**6, "partition": "iid"}, timed=False,
                  probe=False, available=None)
    assert str(plan.value).startswith(str(run.value) + " (the config asks for")


def test_a_probe_the_partition_finds_too_small_grows_until_it_takes_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """One class a client over digits' 10 classes needs 10 clients: a run of 100 clients
    runs, and its plan was refused at its first probe ("2 * 1 = 2 < 10 classes present");
    the smallest probe is now the fewest clients (doubling from 2) the partition takes."""
    cfg = {**LOGISTIC, "partition": "pathological",
           "partition_params": {"classes_per_client": 1}}
    asked: list[list[int]] = []

    def probe(run_cfg: object, ns: list[tuple[int, object, int]],
              timeout: float | None = None) -> dict[str, object]:
        asked.append([m for m, _, _ in ns])
        return {"probe": [[m, 150e6 + 1000 * m, None] for m, _, _ in ns]}

    monkeypatch.setattr(plan_mod, "_probe", probe)
    got = make_plan(cfg, timed=False, available=None)
    assert asked == [[16, 64, 100]]
    assert got.n_clients == 100 and got.parts["parameters"] == 100 * 650 * 4
    assert got.runtime_fit["probe"][0][0] == 16
    with pytest.raises(ConfigError, match=r"every class must be used: n_clients \* "
                       r"classes_per_client = 8 \* 1 = 8 < 10 classes present"):
        make_plan({**cfg, "n_clients": 8}, timed=False, probe=False, available=None)


def test_a_probe_of_data_too_large_to_check_names_the_probe() -> None:
    """A synthetic set of 10^8 samples is not drawn to check the config's own split: the
    probe's refusal names the probe, its size and its data."""
    data = "synthetic:n_samples=100000000,dim=16,seed=0"
    with pytest.raises(ConfigError) as info:
        make_plan({**LOGISTIC, "data": data, "n_clients": 10**9, "partition": "iid"},
                  timed=False, probe=False, available=None)
    assert str(info.value) == (
        "more clients than samples: n_clients=2 > N=1 (the plan's probe of 2 of the config's "
        "1,000,000,000 clients, on data 'synthetic:n_samples=1,dim=16,seed=0')")


def test_the_probe_imports_nothing_from_the_current_folder_but_the_configs_imports(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """A ``json.py`` and a ``torch.py`` beside the config broke ``topofl plan`` (its probe
    child imported them); the module the config imports from that folder is still imported,
    by the plan and by its probe (each leaves a file named by its process id)."""
    for name in ("json", "torch"):
        (tmp_path / f"{name}.py").write_text(
            f"raise ImportError('the {name}.py of the current folder was imported')\n",
            encoding="utf-8")
    (tmp_path / "marks_mod.py").write_text(
        "import os\nopen(f'imported-by-{os.getpid()}', 'w').close()\n", encoding="utf-8")
    (tmp_path / "c.json").write_text(json.dumps({**LOGISTIC, "n_clients": 8}))
    monkeypatch.chdir(tmp_path)
    try:
        assert cli.main(["plan", "c.json", "--no-time", "--json", "--import", "marks_mod"]) == 0
    finally:
        sys.modules.pop("marks_mod", None)
    assert json.loads(capsys.readouterr().out)["n_clients"] == 8
    marks = sorted(p.name for p in tmp_path.glob("imported-by-*"))
    assert len(marks) == 2 and f"imported-by-{os.getpid()}" in marks


def test_a_graph_without_a_member_at_the_smallest_probe_is_probed_larger() -> None:
    """random_regular:d=10 has no member on 2 clients: the smallest probe doubles until it
    has one, and the plan counts the graph's 11 entries a row (a ring's 3)."""
    cfg = dict(algorithm="dsgd", n_clients=5_000, rounds=4, seed=0, model="logistic",
               data="synthetic:n_samples=20000,dim=8,num_classes=4,seed=0", batch_size=8)
    regular = plan_mod.make_plan({**cfg, "topology": "random_regular:d=10"}, timed=False,
                                 probe=False)
    ring = plan_mod.make_plan({**cfg, "topology": "ring"}, timed=False, probe=False)
    assert regular.parts["gossip"] > 1.5 * ring.parts["gossip"]  # W and scratch


def test_one_largest_n_a_config_whatever_is_free_at_the_call(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 58, item 3: two calls gave 3.8 M and 5.6 M clients, the memory free at each call
    being another. The largest n against the machine's memory is one number; the one against
    what is free follows it, and both are the largest n whose peak fits."""
    cfg = {**LOGISTIC, "data": SYNTH, "n_clients": 100}
    monkeypatch.setattr(plan_mod, "memory_total", lambda device="cpu": (8 * 2**30, "MemTotal"))
    got = []
    for free in (3 * 2**30, 5 * 2**30):
        monkeypatch.setattr(plan_mod, "memory_limit", lambda device="cpu", f=free: (f, "test"))
        got.append(make_plan(cfg, timed=False, probe=False))
    assert got[0].machine_max_clients == got[1].machine_max_clients
    assert got[0].machine_bytes == 8 * 2**30
    assert got[0].max_clients < got[1].max_clients < got[0].machine_max_clients
    s = shapes(config_mod.resolve(cfg))
    for plan, limit in ((got[0], 3 * 2**30), (got[1], 5 * 2**30), (got[0], 8 * 2**30)):
        k = plan.max_clients if limit < 8 * 2**30 else plan.machine_max_clients
        assert max_clients(s, limit) == k
    assert "in this machine's 8 GiB" in got[0].summary()
    assert got[0].as_json()["machine_max_clients"] == got[0].machine_max_clients


def test_a_probe_that_does_not_end_is_stopped_and_named(tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]
                                                        ) -> None:
    """A round of 10^12 local steps never ends: the plan stops its probe after
    ``probe_timeout`` seconds and says why and what to do (before: ``topofl plan`` hung,
    even with ``--no-time``); the probe's child is gone."""
    import time

    slow = {**LOGISTIC, "n_clients": 8, "local_steps": 10**12}
    t0 = time.monotonic()
    with pytest.raises(plan_mod.ProbeError, match=r"did not end within 5 s, so it was "
                       r"stopped: .*local_steps.*--probe-timeout SECONDS"):
        make_plan(slow, timed=False, available=None, probe_timeout=5)
    assert time.monotonic() - t0 < 60
    ps = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True, check=True)
    assert "1000000000000" not in ps.stdout  # the child holding the config was killed
    cfg = tmp_path / "c.json"
    cfg.write_text(json.dumps(slow))
    assert cli.main(["plan", str(cfg), "--no-time", "--probe-timeout", "3"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "did not end within 3 s" in err[0]
    for bad in ("0", "-1", "nan", "inf", "soon"):
        assert cli.main(["plan", str(cfg), "--probe-timeout", bad]) == 2
        assert "--probe-timeout" in capsys.readouterr().err
    for bad_value in (0, -1.0, float("nan"), True, "5"):
        with pytest.raises(ValueError, match="probe_timeout must be a positive number"):
            make_plan(slow, probe_timeout=bad_value)  # type: ignore[arg-type]
