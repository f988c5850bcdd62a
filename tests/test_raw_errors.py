"""Issue 23, items 8 and 9: no raw Python/numpy/torch error at the boundary, and nothing
silently wrong. Each case failed before (the comment says how)."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
import torch

import topofl as tf

RUN = {"topology": "ring", "n_clients": 4, "rounds": 1, "batch_size": 4}


# ------------------------------------------------------------------ item 8: raw errors
@pytest.mark.parametrize("algorithm", [123, None, object(), 1.5, ["dsgd"]])
def test_run_with_an_algorithm_that_is_not_one(algorithm: object) -> None:
    # before: AttributeError: 'int' object has no attribute 'name'
    with pytest.raises(TypeError, match="algorithm must be a name of topofl.algorithms."
                       "ALGORITHMS or an Algorithm, got "):
        tf.run(algorithm, **RUN)  # type: ignore[arg-type]


@pytest.mark.parametrize("key", ["records_path", "checkpoint_path", "resume"])
@pytest.mark.parametrize("bad", [123, 1.5, b"r.jsonl", ["r.jsonl"]])
def test_run_paths_that_are_not_paths(key: str, bad: object) -> None:
    # before: TypeError: expected str, bytes or os.PathLike object, not int (from pathlib)
    with pytest.raises(TypeError, match=rf"{key} must be a path \(str or os.PathLike\) or "
                       "None, got "):
        tf.run("dsgd", **RUN, **{key: bad})


@pytest.mark.parametrize("bad", [123, 1.5, b"/tmp", ["x"]])
def test_dataset_root_that_is_not_a_path(bad: object) -> None:
    # before: pathlib's TypeError
    with pytest.raises(TypeError, match=r"root must be a path \(str or os.PathLike\) or None"):
        tf.data.load("mnist", root=bad)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"root must be a path"):
        tf.data.mnist(bad)  # type: ignore[arg-type]


def test_meta_device_is_refused_at_the_boundary() -> None:
    # before: RuntimeError: Tensor.item() cannot be called on meta tensors (from torch)
    with pytest.raises(ValueError, match=r"device='meta': topofl runs on 'cpu', 'cuda' or 'mps' "
                       r"\(the meta device holds shapes, not numbers\)"):
        tf.run("dsgd", **RUN, device="meta")
    with pytest.raises(ValueError, match="device='meta'"):
        tf.models.build_model("logistic", 4, 2, seed=0, device="meta")


@pytest.mark.parametrize("spec", ["torus:rows=5", "torus:cols=3", "random_regular:n=8"])
def test_a_spec_missing_a_required_parameter(spec: str) -> None:
    # before: TypeError: torus() missing 1 required positional argument: 'cols'
    name = spec.split(":")[0]
    with pytest.raises(ValueError, match=rf"{name} needs the parameter\(s\) .* \(a spec such as "
                       rf"{name}:.*=\.\.\.\); parameters of {name}: "):
        tf.topologies.build(spec, seed=0)
    with pytest.raises(ValueError, match=rf"{name} needs the parameter\(s\)"):
        tf.run("dsgd", **{**RUN, "topology": spec})
    with pytest.raises(ValueError, match=rf"{name} needs the parameter\(s\)"):
        tf.config.execute({**RUN, "topology": spec})


@pytest.mark.parametrize("bad", [object(), "ring", None, tf.topologies.ring])
def test_register_refuses_what_is_not_a_family(bad: object) -> None:
    # before: AttributeError: 'object' object has no attribute 'name'
    with pytest.raises(TypeError, match="family must be a topofl.topologies.GraphFamily, got "):
        tf.topologies.register(bad)  # type: ignore[arg-type]


def _leaf(tmp_path: Path, docs: dict[str, object]) -> None:
    for split, doc in docs.items():
        (tmp_path / "femnist" / split).mkdir(parents=True, exist_ok=True)
        (tmp_path / "femnist" / split / "all.json").write_text(json.dumps(doc))


@pytest.mark.parametrize(("train", "match"), [
    ({"users": [], "num_samples": [], "user_data": {}}, "the train files .* hold no user"),
    ([1, 2, 3], "is not a LEAF JSON file"),
    ({"users": "u1", "user_data": {}}, "is not a LEAF JSON file"),
])
def test_femnist_without_users(tmp_path: Path, train: object, match: str) -> None:
    # before: ValueError: need at least one array to concatenate (numpy)
    good = {"users": ["u"], "num_samples": [1], "user_data": {"u": {"x": [[0.0] * 784],
                                                                    "y": [3]}}}
    _leaf(tmp_path, {"train": train, "test": good})
    with pytest.raises(ValueError, match=match):
        tf.data.femnist(tmp_path)


@pytest.mark.parametrize(("meta", "match"), [
    (b"\xff\xfe\x00junk" * 10, r"batches.meta.txt is not a text file of class names \(byte "
                               r"0xff at offset 0 is not UTF-8\)"),
    (b"a\nb\n", r"batches.meta.txt names 2 classes, expected 10"),
])
def test_cifar_meta_junk(tmp_path: Path, meta: bytes, match: str) -> None:
    # before: UnicodeDecodeError (the codec's), or silently the standard names
    sub = tmp_path / "cifar10" / "cifar-10-batches-bin"
    sub.mkdir(parents=True)
    rec = np.zeros((2, 3073), dtype=np.uint8).tobytes()
    for i in range(1, 6):
        (sub / f"data_batch_{i}.bin").write_bytes(rec)
    (sub / "test_batch.bin").write_bytes(rec)
    (sub / "batches.meta.txt").write_bytes(meta)
    with pytest.raises(ValueError, match=match):
        tf.data.cifar10(tmp_path)
    (sub / "batches.meta.txt").unlink()
    assert tf.data.cifar10(tmp_path).classes[0] == "airplane"


# ------------------------------------------------------------------ item 9: silently wrong
@pytest.mark.parametrize("W", [
    np.array([[0.5 + 1j, 0.5], [0.5, 0.5]]),
    [[0.5, 0.5 - 0.25j], [0.5, 0.5]],
    sp.csr_array(np.array([[0.5, 0.5], [0.5 + 1e-3j, 0.5]])),
    torch.tensor([[0.5 + 1j, 0.5], [0.5, 0.5]]),
], ids=["numpy", "list", "sparse", "torch"])
def test_complex_W_is_refused_not_made_real(W: object) -> None:
    # before: a ComplexWarning, and W with the imaginary parts dropped
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match=r"W must be real, found the complex entry .* "
                           r"\(its imaginary part would be dropped\)"):
            tf.Topology.from_matrix(W)


def test_complex_W_with_zero_imaginary_parts_is_its_real_part() -> None:
    W = np.array([[0.5 + 0j, 0.5], [0.5, 0.5]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert tf.Topology.from_matrix(W).W.toarray().tolist() == [[0.5, 0.5], [0.5, 0.5]]


@pytest.mark.parametrize(("kw", "err", "match"), [
    ({"graph": 1, "W": 2}, TypeError, "graph must be a networkx.DiGraph, got int"),
    ({"graph": tf.topologies.ring(3).graph, "W": 2}, TypeError,
     "W must be a scipy.sparse.csr_array, got int"),
    ({"graph": tf.topologies.ring(3).graph, "W": np.eye(3)}, TypeError,
     "W must be a scipy.sparse.csr_array, got ndarray"),
    ({"graph": tf.topologies.ring(3).graph, "W": sp.csr_array(np.eye(4))}, ValueError,
     r"W must have shape \(n, n\) = \(3, 3\) for a graph of 3 nodes, got \(4, 4\)"),
    ({"graph": tf.topologies.ring(3).graph, "W": tf.topologies.ring(3).W, "params": 5},
     TypeError, "params must be a mapping"),
])
def test_topology_called_directly_is_checked(kw: dict[str, object], err: type,
                                             match: str) -> None:
    # before: Topology(graph=1, W=2) built an object that failed later, somewhere else
    with pytest.raises(err, match=match):
        tf.Topology(**kw)  # type: ignore[arg-type]


def test_from_pyg_without_self_loops_says_the_diagonal_is_zero() -> None:
    from torch_geometric.data import Data

    # before: a zero diagonal, silently (edge_weight gives W; self-loops give its diagonal)
    ei = torch.tensor([[0, 1, 1, 2], [1, 0, 2, 1]])
    with pytest.warns(UserWarning, match=r"self-loops at 0 of 3 nodes: W\[i, i\] = 0 at the "
                      r"other 3"):
        t = tf.Topology.from_pyg(Data(edge_index=ei, edge_weight=torch.full((4,), 0.5),
                                      num_nodes=3))
    assert t.W.diagonal().tolist() == [0.0, 0.0, 0.0]
    # the documented ways to get a diagonal: self-loops with weights, or a scheme
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ring = tf.topologies.ring(5)
        assert (tf.Topology.from_pyg(ring.to_pyg()).W != ring.W).nnz == 0
        m = tf.Topology.from_pyg(Data(edge_index=ei, edge_weight=torch.ones(4), num_nodes=3),
                                 weights="metropolis")
        assert np.all(m.W.diagonal() > 0)


@pytest.mark.parametrize("loader", ["mnist", "fashion_mnist", "cifar10", "cifar100",
                                    "femnist", "cinic10", "tiny_imagenet"])
@pytest.mark.parametrize("bad", ["no", "abc", 1, 1.5, [True]])
def test_download_must_be_a_bool(tmp_path: Path, loader: str, bad: object) -> None:
    # before: a truthy download="no" started a download (found by the fuzz: 5 s a call here)
    with pytest.raises(TypeError, match="download must be a bool"):
        tf.data.DATASETS[loader](tmp_path, download=bad)
