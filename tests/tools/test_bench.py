"""``topofl bench``: the arithmetic of its rows (bytes per client, the shared-weight floor), its
JSON and Markdown, and its errors; not its timings."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
import torch

from topofl import cli
from topofl.engine import ParamLayout
from topofl.engine.executors import BatchedExecutor
from topofl.engine.gossip import Mixer
from topofl.engine.layout import init_parameters
from topofl.models import build_model
from topofl.tools import bench
from topofl.workflow.memory import state_parts


def _tiny(memory: bool = False) -> dict[str, Any]:
    return bench.run_bench(["logistic"], [3], batch=2, rounds=1, memory=memory)


def test_bytes_per_client_of_logistic_regression_by_hand() -> None:
    """784 x 10 + 10 float32 parameters; D-SGD without momentum keeps no optimizer state; the
    mixer's 1 MiB scratch tile and the matrix W (the topology's scipy CSR and the mixer's
    torch copy, value + column index per non-zero, one row pointer per row) are shared by the
    n clients."""
    model = build_model("logistic", (784,), 10, seed=0)
    layout = ParamLayout.from_model(model)
    P = 784 * 10 + 10
    assert layout.num_params == P
    n, nnz_row = 100, 11  # a 10-regular graph and the diagonal
    state = state_parts(bench.algorithms.dsgd(lr=0.1), layout, torch.float32)
    assert state == {"parameters": P * 4, "optimizer": 0, "algorithm": 0}
    got = bench.bytes_per_client(P, n, state=state, row_nnz=nnz_row)
    tile = (1 << 20) // (n * 4)  # columns of the tile: 2621
    scratch = n * tile * 4
    # W: the Topology's scipy CSR (float64 + int64 a non-zero, int64 row pointers), the
    # mixer's torch CSR (float32 + int32) and its float32 diagonal
    topo_w = n * nnz_row * (8 + 8) + 8 * (n + 1)
    torch_w = n * nnz_row * (4 + 4) + 4 * (n + 1)
    w = topo_w + torch_w + 4 * n
    assert got == {"parameters": 31_400, "optimizer": 0, "algorithm": 0,
                   "gossip": math.ceil((scratch + w) / n),
                   "total": 31_400 + math.ceil((scratch + w) / n)}
    assert got["gossip"] == 10_765
    # momentum: one more [P] row per client
    mom = state_parts(bench.algorithms.dsgd(lr=0.1, momentum=0.9), layout, torch.float32)
    assert bench.bytes_per_client(P, n, state=mom, row_nnz=nnz_row)["optimizer"] == P * 4
    # the real mixer's buffers after one gossip step: the scratch tile and W as counted
    topo = bench.gossip_topology(n)
    assert topo.W.data.nbytes + topo.W.indices.nbytes + topo.W.indptr.nbytes == topo_w
    mixer = Mixer(torch.device("cpu"), torch.float32)
    mixer.mix_(topo, torch.zeros(n, P))
    assert sum(b.numel() * b.element_size() for b in mixer._buffers.values()) == scratch
    W = mixer.matrix(topo)
    held = sum(t.numel() * t.element_size()
               for t in (W.values(), W.col_indices(), W.crow_indices()))
    assert held == torch_w
    assert mixer.diagonal(topo).numel() * 4 == 4 * n
    # on CUDA the product is a new [n, P] buffer instead of the tile
    cuda = bench.bytes_per_client(P, n, state=state, row_nnz=nnz_row, device="cuda")
    assert cuda["gossip"] == math.ceil((n * P * 4 + w) / n)


@pytest.mark.parametrize("name, shape", [("logistic", (12,)), ("mlp", (12,))])
def test_floor_does_the_arithmetic_of_one_client(name: str, shape: tuple[int, ...]) -> None:
    """Same weights and batch: the floor's loss is the batched executor's loss of that client
    (and over all clients, the mean of theirs); its SGD step is the client's step."""
    n, b, lr = 3, 4, 0.05
    data = bench.synthetic_data(n, shape, samples_per_client=8)
    kw = {"hidden": (7,)} if name == "mlp" else {}
    model = build_model(name, shape, 10, seed=0, **kw)
    layout = ParamLayout.from_model(model)
    flat = init_parameters(model, layout, n, seed=0, same=True, device=torch.device("cpu"),
                           dtype=torch.float32)
    x, y = data.sample(0, 0, b)
    ex = BatchedExecutor(model, layout)
    grads = torch.zeros_like(flat)
    losses = ex.grad(flat, x, y, bench.algorithms.dsgd(lr=lr).phases[0].part, grads)
    floor = bench.SharedWeightFloor(model, x, y, lr=lr)
    assert floor.x.shape == (n * b, *shape)
    torch.testing.assert_close(floor.loss().detach(), losses.mean(), rtol=1e-6, atol=1e-6)
    for i in range(n):
        one = bench.SharedWeightFloor(model, x[i:i + 1], y[i:i + 1], lr=lr)
        torch.testing.assert_close(one.step(), losses[i], rtol=1e-6, atol=1e-6)
        after = torch.cat([p.detach().reshape(-1) for p in one.model.parameters()])
        torch.testing.assert_close(after, flat[i] - lr * grads[i], rtol=1e-5, atol=1e-6)
    # the copy is the floor's own: the original model is untouched
    before = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
    torch.testing.assert_close(before, flat[0])


def test_rows_json_and_markdown() -> None:
    out = _tiny()
    assert set(out) == {"machine", "settings", "load", "seconds", "rows"}
    assert {"torch", "threads", "cpu"} <= set(out["machine"])
    (row,) = out["rows"]
    assert tuple(row) == bench.ROW_KEYS
    assert row["model"] == "logistic" and row["n"] == 3 and row["num_params"] == 7850
    assert row["executor"].startswith("BatchedExecutor, closed form")
    assert row["peak_bytes"] is None
    # the rates follow from the times
    assert math.isclose(row["client_steps_per_s"], 3 / (row["local_ms"] / 1e3), rel_tol=1e-9)
    assert math.isclose(row["samples_per_s"], 2 * row["client_steps_per_s"], rel_tol=1e-9)
    assert math.isclose(row["floor_samples_per_s"], 6 / (row["floor_ms"] / 1e3), rel_tol=1e-9)
    assert row["local_over_floor"] > 0 and row["gossip_over_copy"] > 0
    assert row["bytes_per_client"]["parameters"] == 7850 * 4
    json.dumps(out)  # JSON as it is
    md = bench.to_markdown(out, "topofl bench --n 3")
    assert "`topofl bench --n 3`" in md and "| logistic | 3 | 784 | 7,850 |" in md
    assert f"torch {torch.__version__}" in md


def test_input_shape_and_errors() -> None:
    out = bench.run_bench(["mlp"], [2], batch=1, rounds=1, memory=False, input_shape=(5,))
    assert out["rows"][0]["input_shape"] == [5]
    with pytest.raises(ValueError, match="unknown model 'nope'; known: .*logistic"):
        bench.run_bench(["nope"], [3], memory=False)
    with pytest.raises(ValueError, match="n must be an integer >= 1, got 0"):
        bench.run_bench(["logistic"], [0], memory=False)
    with pytest.raises(ValueError, match="device must be cpu or cuda"):
        bench.run_bench(["logistic"], [2], device="meta", memory=False)
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="torch sees no CUDA device"):
            bench.run_bench(["logistic"], [2], device="cuda", memory=False)


def test_cli_json_out_and_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    md = tmp_path / "bench.md"
    args = ["bench", "--model", "logistic", "--n", "2", "--batch", "2", "--rounds", "1",
            "--no-memory"]
    assert cli.main([*args, "--json", "--out", str(md)]) == 0
    got = json.loads(capsys.readouterr().out)
    assert [tuple(r) for r in got["rows"]] == [bench.ROW_KEYS]
    assert md.read_text().startswith("# topofl bench")
    assert "topofl bench --model logistic" in md.read_text()
    for bad, says in [(["--model", "nope"], "unknown model 'nope'"),
                      (["--n", "0"], "argument --n: must be >= 1, got 0"),
                      (["--n", "2,x"], "argument --n: expected an integer, got 'x'"),
                      (["--batch", "0"], "argument --batch: must be >= 1"),
                      (["--device", "tpu"], "argument --device: invalid choice")]:
        assert cli.main([*args, *bad]) == 2
        err = capsys.readouterr().err
        assert err.startswith("topofl bench: error: ") and says in err, err
    if not torch.cuda.is_available():
        assert cli.main([*args, "--device", "cuda"]) == 2
        assert "torch sees no CUDA device" in capsys.readouterr().err


def test_peak_memory_is_measured_in_a_child() -> None:
    (row,) = _tiny(memory=True)["rows"]
    assert isinstance(row["peak_bytes"], int) and row["peak_bytes"] > 2 * 7850 * 4


def test_peak_memory_child_imports_nothing_from_the_current_folder(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A ``json.py`` (and a ``torch.py``) of the user's in the current folder: the peak-memory
    child imports the standard library's (it printed a traceback: "module 'json' has no
    attribute 'JSONEncoder'")."""
    for name in ("json", "torch"):
        (tmp_path / f"{name}.py").write_text(
            f"raise ImportError('the {name}.py of the current folder was imported')\n",
            encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    (row,) = _tiny(memory=True)["rows"]
    assert isinstance(row["peak_bytes"], int) and row["peak_bytes"] > 2 * 7850 * 4


def test_hidden_widths_bench_the_issue_workload(capsys: pytest.CaptureFixture[str]) -> None:
    """``--hidden`` builds mlp with those widths (issue 32: 40 inputs, one hidden layer of 64,
    batch 50): its parameter count, its label, the floor on the same model, the peak-memory
    child on the same model; and its errors."""
    args = ["bench", "--model", "mlp", "--input-shape", "40", "--hidden", "64", "--batch", "50",
            "--n", "2", "--rounds", "1", "--no-memory", "--json"]
    assert cli.main(args) == 0
    (row,) = json.loads(capsys.readouterr().out)["rows"]
    assert row["num_params"] == (40 * 64 + 64) + (64 * 10 + 10) == 3274
    assert row["model"] == "mlp 64" and row["input_shape"] == [40]
    out = bench.run_bench(["mlp"], [2], batch=2, rounds=1, memory=True, input_shape=(5,),
                          hidden=(3, 4))
    (row,) = out["rows"]
    assert row["num_params"] == (5 * 3 + 3) + (3 * 4 + 4) + (4 * 10 + 10) == 84
    assert out["settings"]["hidden"] == [3, 4] and row["model"] == "mlp 3-4"
    assert row["bytes_per_client"]["parameters"] == 84 * 4
    assert isinstance(row["peak_bytes"], int) and row["peak_bytes"] > 0  # the child's mlp 3-4
    assert "| mlp 3-4 | 2 | 5 | 84 |" in bench.to_markdown(out)
    case = bench._Case("mlp", 2, 3, torch.device("cpu"), (5,), hidden=(3,))
    assert case.floor is not None
    assert sum(p.numel() for p in case.floor.model.parameters()) == 5 * 3 + 3 + 3 * 10 + 10
    with pytest.raises(ValueError, match="hidden .* is a parameter of mlp only"):
        bench.run_bench(["logistic"], [2], memory=False, hidden=(4,))
    with pytest.raises(ValueError, match="hidden must be one or more integers >= 1"):
        bench.run_bench(["mlp"], [2], memory=False, hidden=())
    assert cli.main([*args[:-1], "--model", "logistic"]) == 2
    assert "is a parameter of mlp only" in capsys.readouterr().err
    assert cli.main([*args[:-1], "--hidden", "0"]) == 2
    assert "argument --hidden: must be >= 1" in capsys.readouterr().err
