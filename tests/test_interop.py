"""Users' own objects: PyG data, adjacency matrices, torch datasets (issue 13)."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp
import torch
from torch.utils.data import Dataset as TorchDataset
from torch.utils.data import TensorDataset
from torch_geometric.data import Data

import topofl as tf
from topofl import Topology


def _same_W(a: Topology, b: Topology) -> bool:
    return (a.W != b.W).nnz == 0 and a.W.shape == b.W.shape


# ------------------------------------------------------------------------------ from_pyg
@pytest.mark.parametrize("make", [
    lambda: tf.topologies.ring(7),
    lambda: tf.topologies.random_directed(9, 3, seed=2).at(4),
    lambda: tf.topologies.random_directed_push(9, 2, seed=1).at(0),
    lambda: tf.topologies.exponential(16),
    lambda: tf.topologies.complete(1),
])
def test_pyg_roundtrip_is_exact(make) -> None:  # type: ignore[no-untyped-def]
    t = make()
    u = Topology.from_pyg(t.to_pyg())
    assert _same_W(t, u)
    assert sorted(u.graph.edges()) == sorted(t.graph.edges())


def test_pyg_orientation_by_hand() -> None:
    # One edge 0 -> 1 with weight 0.5, self-loops 1 and 0.5: W[1, 0] = 0.5.
    d = Data(edge_index=torch.tensor([[0, 0, 1], [1, 0, 1]]),
             edge_weight=torch.tensor([0.5, 1.0, 0.5]), num_nodes=2)
    t = Topology.from_pyg(d)
    assert t.W.toarray().tolist() == [[1.0, 0.0], [0.5, 0.5]]
    assert list(t.graph.edges()) == [(0, 1)] and t.is_row_stochastic
    # A scheme ignores edge_weight: a directed edge needs a directed scheme.
    u = Topology.from_pyg(d, weights="push_sum")
    assert u.W.toarray().tolist() == [[0.5, 0.0], [0.5, 1.0]]
    with pytest.raises(ValueError, match="metropolis weights need an undirected graph"):
        Topology.from_pyg(d, weights="metropolis")
    # Without edge_weight the default scheme is metropolis.
    ring = tf.topologies.ring(5).to_pyg()
    assert _same_W(Topology.from_pyg(Data(edge_index=ring.edge_index, num_nodes=5)),
                   tf.topologies.ring(5))


def test_pyg_bad_inputs() -> None:
    with pytest.raises(TypeError, match="must have an edge_index tensor"):
        Topology.from_pyg(object())
    with pytest.raises(ValueError, match=r"edge_index must have shape \[2, E\], got \[3, 1\]"):
        Topology.from_pyg(Data(edge_index=torch.zeros(3, 1, dtype=torch.long), num_nodes=3))
    with pytest.raises(TypeError, match="edge_index must hold integers, got torch.float32"):
        Topology.from_pyg(Data(edge_index=torch.zeros(2, 1), num_nodes=3))
    with pytest.raises(ValueError, match=r"node ids in \[0, 2\] \(num_nodes=3\), found 0..5"):
        Topology.from_pyg(Data(edge_index=torch.tensor([[0], [5]]), num_nodes=3))
    with pytest.raises(ValueError, match="holds an edge more than once"):
        Topology.from_pyg(Data(edge_index=torch.tensor([[0, 0], [1, 1]]), num_nodes=2))
    with pytest.raises(ValueError, match=r"edge_weight must be a tensor of shape \[E\] = \[1\]"):
        Topology.from_pyg(Data(edge_index=torch.tensor([[0], [1]]),
                               edge_weight=torch.ones(2), num_nodes=2))
    with pytest.raises(ValueError, match="non-negative entries"):
        Topology.from_pyg(Data(edge_index=torch.tensor([[0], [1]]),
                               edge_weight=torch.tensor([-1.0]), num_nodes=2))


# ------------------------------------------------------------------------------ from_adjacency
def test_adjacency_orientation_on_an_asymmetric_example() -> None:
    # A[u, v] != 0 is u -> v: 0 -> 1, 0 -> 2, 1 -> 2.
    A = np.array([[0, 1, 1], [0, 0, 1], [0, 0, 0]])
    t = Topology.from_adjacency(A, weights="uniform")
    assert sorted(t.graph.edges()) == [(0, 1), (0, 2), (1, 2)]
    # uniform: W[i, j] = 1 / (1 + in-degree(i)) for every j -> i and j == i.
    expected = np.array([[1, 0, 0], [1 / 2, 1 / 2, 0], [1 / 3, 1 / 3, 1 / 3]])
    assert np.array_equal(t.to_dense(), expected)
    # W has the sparsity of A.T off the diagonal.
    assert np.array_equal(t.to_dense() * (1 - np.eye(3)) > 0, A.T > 0)
    with pytest.raises(ValueError, match="metropolis weights need an undirected graph.*'uniform'"):
        Topology.from_adjacency(A)


@pytest.mark.parametrize("convert", [
    lambda A: A,
    lambda A: sp.csr_array(A),
    lambda A: sp.coo_matrix(A),
    lambda A: torch.as_tensor(A),
    lambda A: torch.as_tensor(A).to_sparse(),
    lambda A: 3.5 * A,  # weighted: only the nonzero pattern matters
])
def test_adjacency_formats_agree(convert) -> None:  # type: ignore[no-untyped-def]
    G = nx.petersen_graph()
    A = nx.to_numpy_array(G)
    for scheme in ("metropolis", "metropolis_hastings", "max_degree"):
        t = Topology.from_adjacency(convert(A), weights=scheme)
        assert _same_W(t, Topology.from_networkx(G, scheme))


def test_adjacency_bad_inputs() -> None:
    with pytest.raises(ValueError, match="square"):
        Topology.from_adjacency(np.ones((2, 3)))
    with pytest.raises(ValueError, match="finite"):
        Topology.from_adjacency(np.array([[0, np.nan], [1, 0]]))
    with pytest.raises(ValueError, match="unknown weight scheme|must be one of"):
        Topology.from_adjacency(np.ones((2, 2)), weights="nope")


# ------------------------------------------------------------------------------ torch datasets
class _Pairs(TorchDataset):  # type: ignore[type-arg]
    """A map-style dataset that is not a TensorDataset (the slow path)."""

    def __init__(self, x: torch.Tensor, y: list[int]) -> None:
        self.x, self.y = x, y

    def __len__(self) -> int:
        return len(self.y)

    def __getitem__(self, i: int) -> tuple[torch.Tensor, int]:
        return self.x[i], self.y[i]


def test_torch_dataset_read_exactly() -> None:
    g = torch.Generator().manual_seed(0)
    x = torch.rand(12, 1, 3, 3, generator=g)
    y = torch.tensor([0, 1, 2, 3] * 3)
    a = tf.data.Dataset.from_torch(TensorDataset(x, y))
    b = tf.data.Dataset.from_torch(_Pairs(x, y.tolist()))
    for ds in (a, b):
        assert np.array_equal(ds.x_train, x.numpy()) and ds.y_train.tolist() == y.tolist()
        assert ds.num_classes == 4 and ds.input_shape == (1, 3, 3)
        assert ds.x_test.shape == (0, 1, 3, 3)


def test_federate_accepts_torch_datasets() -> None:
    g = torch.Generator().manual_seed(1)
    tr = TensorDataset(torch.rand(80, 5, generator=g), torch.arange(80) % 4)
    te = TensorDataset(torch.rand(20, 5, generator=g), torch.arange(20) % 4)
    d = tf.data.federate((tr, te), "shards", 4, seed=0)
    ref = tf.data.federate(tf.data.Dataset.from_torch(tr, te), "shards", 4, seed=0)
    assert d.sizes("train").tolist() == ref.sizes("train").tolist()
    assert int(d.sizes("train").sum()) == 80 and int(d.sizes("test").sum()) == 20
    d1 = tf.data.federate(tr, "iid", 4, seed=0, test=0.25)
    assert int(d1.sizes("train").sum()) + int(d1.sizes("test").sum()) == 80
    with pytest.raises(ValueError, match="no test split to distribute: pass test=<fraction>"):
        tf.data.federate(tr, "iid", 4, seed=0)


def test_torch_dataset_bad_samples() -> None:
    with pytest.raises(ValueError, match="train labels must be whole numbers, found 1.5"):
        tf.data.Dataset.from_torch(_Pairs(torch.zeros(2, 3), [0, 1.5]))  # type: ignore[list-item]
    with pytest.raises(ValueError, match="x_train must be finite, found nan"):
        tf.data.Dataset.from_torch(TensorDataset(torch.full((2, 3), float("nan")),
                                                 torch.tensor([0, 1])))
    with pytest.raises(ValueError, match="train labels must be >= 0, found -1"):
        tf.data.Dataset.from_torch(TensorDataset(torch.zeros(2, 3), torch.tensor([0, -1])))
    with pytest.raises(TypeError, match=r"x must be a tensor or array, got str .*ToTensor"):
        tf.data.Dataset.from_torch(_Pairs(["a", "b"], [0, 1]))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="dataset must be a topofl Dataset, a dataset name"):
        tf.data.federate(123, "iid", 2, seed=0)
    with pytest.raises(ValueError, match="train dataset is empty"):
        tf.data.Dataset.from_torch(_Pairs(torch.zeros(0, 3), []))
