"""Bad inputs a fuzzer found getting through, each refused now with a message that names the
parameter (a ``ValueError`` or ``TypeError``, never a raw internal error), and the valid inputs
next to them still giving what they gave.

Checked: ``Topology.to_torch``'s ``device`` and ``dtype``; ``topologies.build``'s ``n`` (an
integer, numpy integers included, as the families' constructors take it); a key repeated in a
spec (parser, ``build``, ``check_spec``, ``topofl spectral``); ``messages_per_node``'s
``clique_averaging`` flag; ``stl_fw_objective``'s ``W`` (square of the right size, finite,
non-negative, rows summing to 1).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import topofl.topologies as T
from topofl._utils.spec import parse_spec
from topofl.cli import main
from topofl.graph import Topology

# ------------------------------------------------------------------ Topology.to_torch


@pytest.mark.parametrize("device", ["bogus", "CPU", 5, "meta"])
def test_to_torch_refuses_an_unknown_or_unavailable_device(device: Any) -> None:
    torch = pytest.importorskip("torch")
    if isinstance(device, int) and torch.cuda.is_available() \
            and device < torch.cuda.device_count():
        pytest.skip("that CUDA device exists here")
    with pytest.raises(ValueError, match=r"^device"):
        T.ring(5).to_torch(device=device)


@pytest.mark.parametrize("device", [True, 1.5, ["cpu"]])
def test_to_torch_refuses_a_device_of_the_wrong_type(device: Any) -> None:
    pytest.importorskip("torch")
    with pytest.raises(TypeError, match=r"^device must be a str"):
        T.ring(5).to_torch(device=device)


@pytest.mark.parametrize("dtype", ["float32", float, np.float32, 1])
def test_to_torch_refuses_a_dtype_that_is_not_a_torch_dtype(dtype: Any) -> None:
    pytest.importorskip("torch")
    with pytest.raises(TypeError, match=r"^dtype must be a torch\.dtype"):
        T.ring(5).to_torch(dtype=dtype)


def test_to_torch_valid_arguments_unchanged() -> None:
    torch = pytest.importorskip("torch")
    t = T.ring(5)
    for kw in ({}, {"device": None}, {"device": "cpu"}, {"device": torch.device("cpu")},
               {"dtype": torch.float32}, {"dtype": torch.int64}):
        x = t.to_torch(**kw)
        assert x.layout == torch.sparse_csr and x.device.type == "cpu"
        assert x.dtype == kw.get("dtype", torch.float64)
        np.testing.assert_array_equal(x.to_dense().double().numpy(),
                                      t.to_dense().astype(x.to_dense().numpy().dtype))


# ------------------------------------------------------------------ build(..., n=...)


def _W(g: Any) -> Any:
    assert isinstance(g, Topology)
    return g.W


@pytest.mark.parametrize("n", [10.7, 7.9, 10.0, True, "10", float("inf"), float("nan"), None])
def test_build_refuses_an_n_that_is_not_an_int(n: Any) -> None:
    if n is None:  # None means "not given": the spec's own n
        assert T.build("ring:n=4", n=n).n == 4
        return
    with pytest.raises(TypeError, match=r"^n must be an int"):
        T.build("ring", n=n)
    with pytest.raises(TypeError, match=r"^n must be an int"):
        T.build("random_regular:d=2", n=n, seed=0)


def test_build_integer_n_unchanged() -> None:
    i64: Any = np.int64(10)
    i32: Any = np.int32(6)
    i8: Any = np.int64(8)
    assert T.build("ring", n=10).n == 10
    assert T.build("ring", n=i64).n == 10
    assert T.build("ring", n=i64).params == T.ring(10).params
    assert (_W(T.build("ring", n=i32)) != T.ring(6).W).nnz == 0
    a = T.build("random_regular:d=2", n=i8, seed=0)
    b = T.build("random_regular:d=2", n=8, seed=0)
    assert (_W(a) != _W(b)).nnz == 0
    with pytest.raises(ValueError, match=r"n must be >= 1"):
        T.build("ring", n=0)


# ------------------------------------------------------------------ repeated spec keys


def test_parse_spec_refuses_a_repeated_key() -> None:
    with pytest.raises(ValueError, match=r"'ring:n=5,n=6'.*'n' is given twice"):
        T.parse_spec("ring:n=5,n=6")
    with pytest.raises(ValueError, match=r"'seed' is given twice"):
        parse_spec("synthetic:seed=0,n_samples=50,seed=1", "dataset")
    with pytest.raises(ValueError, match=r"'n' is given twice"):
        T.build("ring:n=5,n=6")
    with pytest.raises(ValueError, match=r"'n' is given twice"):
        T.check_spec("ring:n=5, n =5")


def test_cli_spectral_refuses_a_repeated_key(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["spectral", "ring:n=5,n=6"]) == 2
    assert "'n' is given twice" in capsys.readouterr().err


def test_spec_keys_nested_or_distinct_unchanged() -> None:
    assert T.parse_spec("ring:n=5") == ("ring", {"n": 5})
    # the same key inside two nested specs is not a repeat
    assert T.parse_spec("switch:first=(ring:n=5),then=(ring:n=6),at=3") == (
        "switch", {"first": "ring:n=5", "then": "ring:n=6", "at": 3})


# ------------------------------------------------------------------ messages_per_node


def _cliques() -> Topology:
    return T.connect_cliques([list(range(4)), list(range(4, 8))], seed=0)


@pytest.mark.parametrize("flag", ["x", None, 1, 0.0, "False"])
def test_messages_per_node_refuses_a_flag_that_is_not_a_bool(flag: Any) -> None:
    with pytest.raises(TypeError, match=r"^clique_averaging must be a bool"):
        T.messages_per_node(_cliques(), clique_averaging=flag)


def test_messages_per_node_bool_flags_unchanged() -> None:
    t = _cliques()
    models = t.out_degree.sum() / t.n
    assert T.messages_per_node(t) == 2 * models
    assert T.messages_per_node(t, clique_averaging=True) == 2 * models
    yes: Any = np.bool_(True)
    no: Any = np.bool_(False)
    assert T.messages_per_node(t, clique_averaging=yes) == 2 * models
    assert T.messages_per_node(t, clique_averaging=False) == models
    assert T.messages_per_node(t, clique_averaging=no) == models


# ------------------------------------------------------------------ stl_fw_objective's W


P20 = np.eye(10)[np.arange(20) % 10]


@pytest.mark.parametrize("W, match", [
    (np.full((20, 20), np.nan), "finite"),
    (np.full((20, 20), np.inf), "finite"),
    (-np.eye(20), "non-negative"),
    (np.zeros((20, 20)), "row-stochastic"),
    (2 * np.eye(20), "row-stochastic"),
    (np.eye(20)[:, :19], "square"),
    (np.eye(3), r"\(20, 20\)"),
])
def test_stl_fw_objective_refuses_a_bad_w(W: Any, match: str) -> None:
    with pytest.raises(ValueError, match=rf"^W .*{match}"):
        T.stl_fw_objective(W, P20, 0.1)


@pytest.mark.parametrize("W", ["x", [[1.0, 0.0], [1.0]]])
def test_stl_fw_objective_refuses_a_w_that_is_not_a_matrix(W: Any) -> None:
    with pytest.raises(TypeError, match=r"^W must be a numeric"):
        T.stl_fw_objective(W, P20, 0.1)


def test_stl_fw_objective_valid_w_unchanged() -> None:
    import scipy.sparse as sp

    assert T.stl_fw_objective(np.eye(2), np.eye(2), 0.0) == 0.5
    assert T.stl_fw_objective(np.full((2, 2), 0.5), np.eye(2), 1.0) == 0.0
    t = T.stl_fw(P20, 3)
    assert T.stl_fw_objective(t, P20, 0.1) == pytest.approx(t.params["objective"], abs=1e-12)
    # dense, sparse and Topology forms of one W give the same value
    W = T.ring(20).W
    v = T.stl_fw_objective(W.toarray(), P20, 0.1)
    assert T.stl_fw_objective(sp.csr_matrix(W), P20, 0.1) == v
    assert T.stl_fw_objective(T.ring(20), P20, 0.1) == v
    # row sums off by rounding only (a convex combination, as Frank-Wolfe's line search makes)
    a = 0.3
    S = np.eye(20)[np.roll(np.arange(20), 1)]
    T.stl_fw_objective((1 - a) * np.eye(20) + a * S, P20, 0.1)


@pytest.mark.parametrize("bad", [{"a": 1}, object(), "abc"])
def test_check_matrix_refuses_a_non_numeric_object_in_its_own_words(bad: object) -> None:
    # before: a dict or an object gave numpy's raw "must be real number, not dict", which
    # the check took for its own complex-entry message and re-raised
    from topofl._utils.validation.matrices import check_matrix

    with pytest.raises(TypeError, match=r"^W must be a numeric \(n, n\) array or sparse "
                       r"matrix, got "):
        check_matrix(bad)
    with pytest.raises(ValueError, match=r"^W must be real, found the complex entry"):
        check_matrix([[1 + 1j, 0], [0, 1]])
