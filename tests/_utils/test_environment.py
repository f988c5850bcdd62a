"""The numeric environment's fields: the later bit fields (Numba) and how two environments
are compared (``topofl._utils.environment``)."""

from __future__ import annotations

import importlib.metadata
import json
import subprocess
import sys
from pathlib import Path

import pytest

from topofl._utils.environment import (
    BIT_FIELDS,
    LATER_BIT_FIELDS,
    bits,
    differences,
    numeric_environment,
)
from topofl.figures.certificates import environment_of

ROOT = Path(__file__).resolve().parents[2]


def test_numba_field_names_the_installed_versions():
    env = numeric_environment()
    try:
        numba = importlib.metadata.version("numba")
    except importlib.metadata.PackageNotFoundError:  # an install without it: torch's kernel
        assert env["numba"] == "not installed"
    else:
        llvmlite = importlib.metadata.version("llvmlite")
        assert env["numba"] == f"{numba} (llvmlite {llvmlite})"
    assert "numba" in BIT_FIELDS and set(LATER_BIT_FIELDS) <= set(BIT_FIELDS)
    assert bits(env)["numba"] == env["numba"]


def test_reading_the_environment_does_not_import_numba():
    code = ("import sys; from topofl._utils.environment import numeric_environment; "
            "e = numeric_environment(); print(e['numba']); print('numba' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=ROOT).stdout.split("\n")
    assert out[0] == numeric_environment()["numba"] and out[1] == "False"


@pytest.mark.parametrize("older", [{}, {"numba": None}])
def test_a_record_made_before_the_numba_field_is_not_a_difference(older):
    env = numeric_environment()
    before = {**{k: v for k, v in env.items() if k != "numba"}, **older}
    assert differences(env, before) == [] and differences(before, env) == []


def test_numba_versions_that_differ_are_a_difference():
    env = numeric_environment()
    other = {**env, "numba": "0.59.0 (llvmlite 0.42.0)"}
    assert differences(env, other) == [f"numba {env['numba']} vs 0.59.0 (llvmlite 0.42.0)"]


def test_other_missing_fields_still_count():
    env = numeric_environment()
    for f in BIT_FIELDS:
        if f in LATER_BIT_FIELDS:
            continue
        missing = {k: v for k, v in env.items() if k != f}
        assert differences(env, missing) == [f"{f} {env[f]} vs not recorded"], f


def test_committed_certificates_differ_here_in_no_later_field():
    """Every committed certificate was written before the Numba field: comparing its
    environment with this one names no field of LATER_BIT_FIELDS."""
    here = numeric_environment()
    paths = sorted((ROOT / "paper_figures" / "results" / "certified").glob("*.json"))
    certs = [json.loads(p.read_text(encoding="utf-8")) for p in paths]
    certs = [(p, c["certificate"]) for p, c in zip(paths, certs) if "certificate" in c]
    assert certs
    for path, cert in certs:
        env = environment_of(cert)
        named = {d.split(" ")[0] for d in differences(env, here)}
        assert not named & set(LATER_BIT_FIELDS), (path.name, named)


def test_accelerator_names_what_decides_a_gpu_runs_bits(monkeypatch: pytest.MonkeyPatch) -> None:
    """A CUDA device's record: its name and compute capability (from the device asked for,
    the current one for a bare ``"cuda"``), torch's CUDA and cuDNN versions and TF32; none
    for the CPU. torch's CUDA queries are replaced here (no GPU on this machine); the real
    ones are ``tests/engine/test_gpu.py``'s."""
    import torch

    from topofl._utils.environment import accelerator

    assert accelerator("cpu") is None and accelerator(torch.device("cpu")) is None
    asked: list[int] = []
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 1)
    monkeypatch.setattr(torch.cuda, "get_device_capability",
                        lambda i: (asked.append(i), (9, 0))[1])
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda i: f"GPU {i}")
    monkeypatch.setattr(torch.version, "cuda", "13.0")
    monkeypatch.setattr(torch.backends.cudnn, "is_available", lambda: True)
    monkeypatch.setattr(torch.backends.cudnn, "version", lambda: 91300)
    got = accelerator("cuda")
    assert got == {"name": "GPU 1", "capability": "9.0", "cuda": "13.0", "cudnn": "91300",
                   "tf32_matmul": bool(torch.backends.cuda.matmul.allow_tf32),
                   "tf32_cudnn": bool(torch.backends.cudnn.allow_tf32)}
    assert accelerator("cuda:3")["name"] == "GPU 3" and asked == [1, 3]
    monkeypatch.setattr(torch.backends.cudnn, "is_available", lambda: False)
    assert accelerator("cuda:0")["cudnn"] == "not available"
