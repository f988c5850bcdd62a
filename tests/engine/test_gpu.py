"""The engine on CUDA (opt in: ``pytest -m gpu``; skipped without a CUDA device)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import topofl as tf

pytestmark = pytest.mark.gpu


@pytest.fixture(autouse=True)
def _need_cuda() -> None:
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")


@pytest.mark.parametrize("name", ["dsgd", "sgp", "dfedpgp", "pfeddst"])
def test_cuda_run_matches_cpu(name: str) -> None:
    data = tf.data.federate("digits", "pathological", 8, classes_per_client=3, seed=0, val=0.2)
    topo = {"dsgd": "ring", "sgp": "random_directed_push:k=2",
            "dfedpgp": "random_directed_push:k=2", "pfeddst": None}[name]
    kw = dict(topology=topo, data=data, model="mlp", model_params={"hidden": (16,)}, rounds=3,
              seed=0, batch_size=8, dtype="float64", spectral=False)
    extra = {"dfedpgp": {"local_epochs": 1}, "pfeddst": {"local_epochs": 1}}.get(name, {})
    cpu = tf.run(name, device="cpu", **kw, **extra)
    gpu = tf.run(name, device="cuda", **kw, **extra)
    assert gpu.state.x.device.type == "cuda"
    np.testing.assert_allclose(gpu.state.x.cpu().numpy(), cpu.state.x.numpy(), rtol=1e-7,
                               atol=1e-9)


def test_the_probes_clock_waits_for_the_gpu() -> None:
    """The planner's round clock (``ROUND_CLOCK``) counts a GPU's asynchronous work: a kernel
    that spins for about 2e9 GPU cycles (about a second) lies between two readings, where the
    process's CPU time would read almost nothing (the launch returns at once)."""
    import topofl.engine.loop as loop
    from topofl.workflow.probe import ROUND_CLOCK

    scope: dict[str, object] = {}
    round_of = loop._round
    try:
        exec(ROUND_CLOCK, scope)  # it also wraps the loop's round function: put back below
    finally:
        loop._round = round_of
    clock = scope["_clock"]
    torch.zeros(1, device="cuda")  # CUDA initialized, as in a run on the GPU
    t0 = clock()  # type: ignore[operator]
    torch.cuda._sleep(2 * 10**9)
    t1 = clock()  # type: ignore[operator]
    assert t1 - t0 > 0.2


def test_teleport_on_cuda_matches_cpu() -> None:
    """Teleportation's k-row rounds (the moving rows' gradients, ``Mixer.mix_rows_``'s dense
    product of the rows read on a GPU, the k models' global scores) equal the CPU's to
    rounding."""
    data = tf.data.federate("digits", "shards", 30, shards_per_client=1, seed=0)
    kw = dict(data=data, model="logistic", rounds=6, seed=0, batch_size=8, dtype="float64",
              spectral=False, eval_every=2, k=4, sample_seed=1, local_steps=2)
    cpu = tf.run("teleport", device="cpu", **kw)
    gpu = tf.run("teleport", device="cuda", **kw)
    np.testing.assert_allclose(gpu.state.x.cpu().numpy(), cpu.state.x.numpy(), rtol=1e-7,
                               atol=1e-9)
    assert gpu.records.final("global_acc_mean") == pytest.approx(
        cpu.records.final("global_acc_mean"), abs=1e-9)


def test_a_cuda_runs_header_names_its_gpu(tmp_path) -> None:
    """A run on CUDA records the GPU that computed it (name, capability, CUDA, cuDNN, TF32) in
    its provenance; a CPU run records none."""
    kw = dict(data="digits", n_clients=4, model="logistic", rounds=1, seed=0, spectral=False)
    tf.run("dsgd", "ring", device="cuda", records_path=tmp_path / "g.jsonl", **kw)
    tf.run("dsgd", "ring", device="cpu", records_path=tmp_path / "c.jsonl", **kw)
    gpu = tf.records.load(tmp_path / "g.jsonl").provenances
    cpu = tf.records.load(tmp_path / "c.jsonl").provenances
    (acc,) = [p["accelerator"] for p in gpu.values()]
    assert acc["name"] == torch.cuda.get_device_name(0)
    assert acc["cuda"] == torch.version.cuda
    assert all("accelerator" not in p for p in cpu.values())
