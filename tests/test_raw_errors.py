"""Issue 23, items 8 and 9: no raw Python/numpy/torch error at the boundary, and nothing
silently wrong. Each case failed before (the comment says how)."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from types import MappingProxyType
from typing import Any

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


# ------------------------------------------------------------------ audit: more raw errors
@pytest.mark.parametrize(("paths", "match"), [
    (None, r"paths must be a path \(str or os.PathLike\) or an iterable of paths, got "
           r"NoneType None"),
    (3, r"paths must be a path .* got int 3"),
    (b"runs", r"paths must be a path .* got bytes b'runs'"),
    (["a.jsonl", None], r"paths\[1\] must be a path \(str or os.PathLike\), got NoneType"),
])
def test_load_many_of_what_is_not_paths(paths: object, match: str) -> None:
    # before: TypeError: 'NoneType' object is not iterable (from the loop over paths)
    with pytest.raises(TypeError, match=match):
        tf.records.load_many(paths)  # type: ignore[arg-type]


def test_load_many_still_takes_any_iterable_of_paths(tmp_path: Path) -> None:
    for name in ("a", "b"):
        with tf.records.Recorder(tmp_path / f"{name}.jsonl", run=name) as rec:
            rec.log("acc", 0.5, 0)
    files = (tmp_path / f"{n}.jsonl" for n in ("a", "b"))  # a generator
    assert tf.records.load_many(files).runs == ["a", "b"]
    assert tf.records.load_many([str(tmp_path / "a.jsonl")]).runs == ["a"]


@pytest.mark.parametrize(("levels", "err", "match"), [
    (("a",), TypeError, r"levels\[0\] must be a real number, got str 'a'"),
    ((1, None), TypeError, r"levels\[1\] must be a real number, got NoneType None"),
    (3, TypeError, r"levels must be a sequence \(tuple or list\) of positive epoch counts, "
                   r"got int 3"),
    ("12", TypeError, r"levels must be a sequence .* got str '12'"),
    ((), ValueError, r"levels must be a non-empty sequence of positive epoch counts, got \(\)"),
    ((1, 0), ValueError, r"levels\[1\] must be in \(0, inf\], got 0"),
    ((1, float("nan")), ValueError, r"levels\[1\] must be a number, got nan"),
    ((float("inf"),), ValueError, r"levels\[0\] must be finite, got inf"),
])
def test_heterogeneous_epochs_levels_are_checked(levels: object, err: type, match: str
                                                 ) -> None:
    # before: ValueError: could not convert string to float: 'a' (from float()); nan passed
    with pytest.raises(err, match=match):
        tf.algorithms.heterogeneous_epochs(5, levels)  # type: ignore[arg-type]


def test_heterogeneous_epochs_of_valid_levels_is_unchanged() -> None:
    assert tf.algorithms.heterogeneous_epochs(7, (1, 2, 3)) == (1, 1, 1, 2, 2, 3, 3)
    assert tf.algorithms.heterogeneous_epochs(4, [0.5, 2]) == (0.5, 0.5, 2, 2)
    # the seeded assignment is numpy's default_rng(seed).permutation, as before
    order = np.random.default_rng(3).permutation(10)
    expect = np.empty(10, dtype=object)
    for g, members in enumerate(np.array_split(np.arange(10), 5)):
        expect[order[members]] = g + 1
    got = tf.algorithms.heterogeneous_epochs(10, (1, 2, 3, 4, 5), seed=3)
    assert got == tuple(expect.tolist())
    assert tf.algorithms.heterogeneous_epochs(
        10, (1, 2, 3, 4, 5), seed=np.random.default_rng(3)) == got
    with pytest.raises(TypeError, match="seed must be an int"):
        tf.algorithms.heterogeneous_epochs(10, seed="x")  # type: ignore[arg-type]


@pytest.mark.parametrize("build", [
    lambda p: tf.Topology.from_matrix(np.eye(3), params=p),
    lambda p: tf.Topology.from_networkx(tf.topologies.ring(3).graph, params=p),
    lambda p: tf.Topology.from_adjacency(np.ones((3, 3)) - np.eye(3), params=p),
    lambda p: tf.TimeVarying(3, lambda t: tf.topologies.ring(3), params=p),
], ids=["from_matrix", "from_networkx", "from_adjacency", "TimeVarying"])
@pytest.mark.parametrize("bad", [5, "n=3", [("n", 3)]])
def test_params_must_be_a_mapping(build: Any, bad: object) -> None:
    # before: TypeError: 'int' object is not iterable (from dict(params)); a list of pairs
    # passed as a dict
    with pytest.raises(TypeError, match=r"params must be a mapping \(e.g. \{'n': 8\}\) or "
                       rf"None, got {type(bad).__name__} "):
        build(bad)
    assert dict(build(MappingProxyType({"n": 3})).params) == {"n": 3}
    assert dict(build(None).params) == {}


@pytest.mark.parametrize(("groups", "match"), [
    (5, r"groups must be an iterable of groups of node ids .* got int 5"),
    ([[0, 1], 2], r"groups\[1\] must be an iterable of node ids in \[0, 2\], got int 2"),
    (["012"], r"groups\[0\] must be an iterable of node ids in \[0, 2\], got str '012'"),
])
def test_groups_that_are_not_groups(groups: object, match: str) -> None:
    # before: TypeError: 'int' object is not iterable
    with pytest.raises(TypeError, match=match):
        tf.Topology.from_matrix(np.eye(3), groups=groups)  # type: ignore[arg-type]


@pytest.mark.parametrize("name", ["", "a:b=1", "a,b", "a=b", "two words", " ring", "1st",
                                  "-x", 7, None])
def test_a_graph_family_name_a_spec_cannot_name_is_refused(name: Any) -> None:
    # before: register() added "" and "a:b=1", which no spec can name ("a:b=1" reads as the
    # family "a" with b=1), and they showed in every "known:" list
    fam = tf.topologies.GraphFamily(name, tf.topologies.ring,
                                    (tf.topologies.Param("n", int, "nodes"),),
                                    example=lambda n, rng: {"n": n})
    before = dict(tf.topologies.REGISTRY)
    with pytest.raises(TypeError, match=r"a graph family name must be a non-empty str of "
                       r"letters, digits, '_' and '-' .*e.g. 'my_graph_family': a spec "
                       r"'name:key=value,...' carries it, so no ':', ',', '=' or space\), got "
                       rf"{type(name).__name__} "):
        tf.topologies.register(fam)
    assert dict(tf.topologies.REGISTRY) == before


def test_a_graph_family_with_an_identifier_like_name_is_registered_and_built() -> None:
    fam = tf.topologies.GraphFamily("my-ring_2", tf.topologies.ring,
                                    (tf.topologies.Param("n", int, "nodes"),),
                                    example=lambda n, rng: {"n": n})
    try:
        assert tf.topologies.register(fam) is fam
        assert tf.topologies.build("my-ring_2:n=5").n == 5
    finally:
        tf.topologies.REGISTRY._items.pop("my-ring_2", None)
