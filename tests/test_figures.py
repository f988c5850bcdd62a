"""topofl.figures: scales, stand-in datasets, the run cache keyed on the resolved config,
the Markdown/JSON verdict and the index."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import topofl as tf
from topofl import figures

BASE = {"algorithm": "dsgd", "data": "digits", "n_clients": 6,
        "model": "logistic", "rounds": 3, "eval_every": 1, "batch_size": 8,
        "record_clients": False, "spectral": False}


def _args(tmp_path: Path, **kw: object) -> figures.FigureArgs:
    return figures.FigureArgs("toy", "quick", tmp_path / "out", tmp_path / "runs", **kw)  # type: ignore[arg-type]


def test_apply_scale_overrides_base_and_sweep_keys() -> None:
    cfg = {"rounds": 100, "lr": 0.1, "sweep": {"seed": [0, 1, 2], "topology": ["ring"]},
           "scale": {"quick": {"rounds": 2, "sweep": {"seed": [0]}},
                     "full": {"lr": 0.2, "sweep": {"lr": [0.1, 0.2]}}}}
    q = figures.apply_scale(cfg, "quick")
    assert q == {"rounds": 2, "lr": 0.1, "sweep": {"seed": [0], "topology": ["ring"]}}
    f = figures.apply_scale(cfg, "full")
    assert "lr" not in f and f["sweep"]["lr"] == [0.1, 0.2]  # moved into the sweep
    d = figures.apply_scale(cfg, "default")
    assert d["rounds"] == 100 and d["sweep"]["seed"] == [0, 1, 2]
    d = figures.apply_scale({**cfg, "scale": {"default": {"rounds": 7}}}, "default")
    assert d["rounds"] == 7
    # a sweep key overridden by a plain value leaves the sweep
    g = figures.apply_scale({"sweep": {"seed": [0, 1]}, "scale": {"quick": {"seed": 3}}}, "quick")
    assert g == {"seed": 3}


@pytest.mark.parametrize("bad", [{"tiny": {}}, {"quick": 3}, 5, {"default": []}])
def test_apply_scale_refuses_bad_tables(bad: object) -> None:
    with pytest.raises(figures.FigureError):
        figures.apply_scale({"scale": bad}, "quick")
    with pytest.raises(figures.FigureError, match="scale must be one of"):
        figures.apply_scale({}, "huge")


def test_stand_ins_follow_the_model() -> None:
    assert figures.stand_in("mnist", "logistic") == "digits"
    assert figures.stand_in("mnist", "gn_lenet") == "digits28"
    assert figures.stand_in("cifar10", "gn_lenet") == "digits32rgb"
    assert figures.stand_in("digits", "mlp") == "digits"


def test_load_config_swaps_an_absent_dataset_and_notes_it(tmp_path: Path) -> None:
    p = tmp_path / "c.toml"
    p.write_text('model = "logistic"\nbatch_size = 128\n[figure]\npanel = "a"\n'
                 '[stand_in]\nbatch_size = 4\n[scale.quick]\nrounds = 2\n'
                 '[sweep]\ndata = ["mnist", "digits"]\n', encoding="utf-8")
    if tf.figures._available("mnist"):  # pragma: no cover - MNIST files on this machine
        pytest.skip("MNIST files are present")
    cfg = figures.load_config(p, "default")
    assert cfg["sweep"]["data"] == ["digits", "digits"] and cfg["figure"] == {"panel": "a"}
    assert cfg["_name"] == "c" and len(cfg["_notes"]) == 2 and "mnist" in cfg["_notes"][0]
    assert cfg["batch_size"] == 4 and "batch_size = 4" in cfg["_notes"][1]
    assert figures.load_config(p, "quick")["rounds"] == 2
    p.write_text('data = "mnist"\n[stand_in]\ndata = "synthetic:n_samples=90,seed=1"\n',
                 encoding="utf-8")
    cfg = figures.load_config(p)
    assert cfg["data"] == "synthetic:n_samples=90,seed=1" and "synthetic" in cfg["_notes"][0]
    p.write_text('data = "digits"\nbatch_size = 128\n[stand_in]\nbatch_size = 4\n',
                 encoding="utf-8")
    assert figures.load_config(p)["batch_size"] == 128  # no swap: the paper's setting
    with pytest.raises(tf.config.ConfigError, match="stand_in"):
        p.write_text('stand_in = 3\n', encoding="utf-8")
        figures.load_config(p)


def test_full_scale_runs_on_the_gpu_torch_sees(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    import torch

    p = tmp_path / "c.toml"
    p.write_text('data = "digits"\n', encoding="utf-8")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert figures.load_config(p, "full")["device"] == "cuda"
    assert "device" not in figures.load_config(p, "default")
    p.write_text('data = "digits"\ndevice = "cpu"\n', encoding="utf-8")
    assert figures.load_config(p, "full")["device"] == "cpu"  # a config's own choice stays
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    p.write_text('data = "digits"\n', encoding="utf-8")
    assert "device" not in figures.load_config(p, "full")


def test_epochs_per_round_by_hand() -> None:
    cfg = tf.config.validate({**BASE, "topology": "ring", "batch_size": 12})
    m = tf.data.load("digits").x_train.shape[0] / 6
    assert figures.epochs_per_round(cfg) == pytest.approx(12 / m)
    cfg = tf.config.validate({**BASE, "topology": "ring", "local_epochs": 2.5})
    assert figures.epochs_per_round(cfg) == 2.5
    cfg = tf.config.validate({**BASE, "topology": "ring", "local_steps": 3,
                              "batch_size": 10**4})
    assert figures.epochs_per_round(cfg) == 3.0  # a batch larger than the data is the data


def test_sweep_reuses_runs_and_reruns_a_changed_setting(tmp_path: Path) -> None:
    args = _args(tmp_path)
    cfg = {**BASE, "sweep": {"topology": ["ring", "complete"]}, "_name": "toy", "_notes": [],
           "figure": {}}
    rec = figures.sweep(cfg, args)
    assert rec.runs == ["topology=ring", "topology=complete"]
    ring = tmp_path / "runs" / "toy" / "topology=ring.jsonl"
    stamp = ring.stat().st_mtime_ns
    again = figures.sweep(cfg, args)
    assert ring.stat().st_mtime_ns == stamp  # reused, not rerun
    assert again.series("global_acc_mean", run="topology=ring")[1].tolist() == \
        rec.series("global_acc_mean", run="topology=ring")[1].tolist()
    changed = figures.sweep({**cfg, "lr": 0.3}, args)  # another setting: run again
    assert ring.stat().st_mtime_ns != stamp
    assert changed.configs["topology=ring"]["lr"] == 0.3
    direct = tf.run(**{**BASE, "topology": "ring", "lr": 0.3}).records
    assert changed.series("global_acc_mean", run="topology=ring")[1].tolist() == \
        pytest.approx(direct.series("global_acc_mean")[1].tolist())


def test_write_markdown_json_and_index(tmp_path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    args = _args(tmp_path)
    cfg = {**BASE, "sweep": {"topology": ["ring", "complete"]}, "_name": "toy"}
    rec = figures.sweep(cfg, args)
    runs = {r: rec.for_run(r) for r in rec.runs}
    table = figures.curve_table(runs, "global_acc")
    final = rec.series("global_acc_mean", run="topology=complete")[1][-1]
    assert table.set_index("curve").loc["topology=complete", "final global_acc"] == final
    assert table["rounds"].tolist() == [3, 3]
    setting = dict(figures.setting(rec))
    assert setting["topology"] == "ring / complete" and setting["n_clients"] == "6"
    fig = tf.plotting.convergence(runs, "global_acc", band="lines")
    png = figures.write(args, fig, title="Toy", setting=figures.setting(rec), numbers=table,
                        claim="complete beats ring", measured="see table", holds=None,
                        notes=["a note"], dataset="digits")
    plt.close(fig)
    assert png == tmp_path / "out" / "toy.png" and png.stat().st_size > 5000
    md = (tmp_path / "out" / "toy.md").read_text(encoding="utf-8")
    assert "**Holds:** partly" in md and "- a note" in md and f"{final:.4f}" in md
    verdict = json.loads((tmp_path / "out" / "toy.json").read_text(encoding="utf-8"))
    assert verdict["holds"] is None and verdict["scale"] == "quick"
    idx = figures.index(tmp_path / "out")
    assert "[toy](results/toy.md)" in idx and "complete beats ring" in idx
    # a table result: no picture (the stale one is removed), the Markdown path is returned
    md_path = figures.write(args, None, title="Toy table", setting=figures.setting(rec),
                            numbers=table, claim="c", measured="m", holds=True)
    assert md_path == tmp_path / "out" / "toy.md" and not png.exists()
    text = md_path.read_text(encoding="utf-8")
    assert "![toy]" not in text and "**Holds:** yes" in text and f"{final:.4f}" in text


def test_epoch_axis_scales_the_rounds() -> None:
    import matplotlib

    matplotlib.use("Agg")
    rows = [{"run": "a", "round": t, "client": None, "metric": "acc", "value": 0.1 * t}
            for t in range(3)]
    fig = tf.plotting.convergence({"a": tf.records.Records(rows=rows)}, "acc", epochs=0.5)
    ax = fig.axes[0]
    assert ax.lines[0].get_xdata().tolist() == [0.5, 1.0, 1.5]
    assert ax.get_xlabel() == "epochs"
    with pytest.raises(ValueError, match="band"):
        tf.plotting.convergence({"a": tf.records.Records(rows=rows)}, "acc", band="shade")


def test_cli_lists_and_refuses_unknown_figures(capsys: pytest.CaptureFixture[str]) -> None:
    assert tf.figures.main(["list"]) == 0
    out = capsys.readouterr().out
    assert "dcliques_01" in out and "D-Cliques Fig. 1" in out
    from topofl.cli import main

    assert main(["figure", "nope"]) == 2
    assert "no figure 'nope'" in capsys.readouterr().err


def test_panels_label_runs_and_refuse_duplicate_labels(tmp_path: Path) -> None:
    folder = tmp_path / "configs"
    folder.mkdir()
    (folder / "a.toml").write_text(
        'algorithm = "dsgd"\ndata = "digits"\nn_clients = 6\nrounds = 2\nbatch_size = 8\n'
        'record_clients = false\nspectral = false\n[sweep]\ntopology = ["ring", "complete"]\n',
        encoding="utf-8")
    args = _args(tmp_path)
    got = figures.panels(args, {"left": str(folder / "a.toml")},
                         lambda c: f"graph {c['topology']}")
    p = got["left"]
    assert list(p.runs) == ["graph ring", "graph complete"]
    assert p.configs["graph ring"]["n_clients"] == 6
    ring = p.configs["graph ring"]
    assert p.epochs["graph ring"] == pytest.approx(figures.epochs_per_round(ring))
    assert dict(p.setting)["topology"] == "ring / complete"
    with pytest.raises(figures.FigureError, match="both labelled"):
        figures.panels(args, {"left": str(folder / "a.toml")}, lambda c: "same")


def test_a_failed_run_stops_the_figure_with_its_message(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    from topofl import sweep as sw

    def failing(*args: object, **kwargs: object) -> list[sw.Outcome]:
        return [sw.Outcome("topology=ring", "failed", message="CheckpointError: bad file")]

    monkeypatch.setattr(sw, "run_sweep", failing)
    cfg = {**BASE, "sweep": {"topology": ["ring"]}, "_name": "toy"}
    with pytest.raises(figures.FigureError, match="topology=ring: CheckpointError: bad file"):
        figures.sweep(cfg, _args(tmp_path))
