"""What a user's pieces return is checked where they return (issue 47, the extension surface):
before, a ``Communicate`` returning ``None`` failed at round 0 with ``'NoneType' object has
no attribute 'flows'``, an ``init`` returning ``None`` with ``... no attribute 'tensors'``, a
float64 state in a float32 run with ``expected scalar type Float but found Double`` and a
NaN message size with ``cannot convert float NaN to integer``. Now each names the algorithm,
the piece and the fix."""

from __future__ import annotations

from typing import Any

import pytest
import torch

import topofl as tf
from topofl.engine.extend import check_sent, check_state, checked_pieces
from topofl.engine.ledger import Flow, FlowError, graph_arcs

_RUN = dict(topology="ring", data="digits", n_clients=4, partition="iid", rounds=2,
            batch_size=8, seed=0, spectral=False)
BASE = tf.algorithms.dsgd(lr=0.1)


def returns_none(state: Any, rnd: Any, env: Any) -> None:
    BASE.communicate(state, rnd, env)


def nan_size(state: Any, rnd: Any, env: Any) -> tf.engine.Sent:
    BASE.communicate(state, rnd, env)
    return tf.engine.Sent.of(Flow("model", graph_arcs(rnd.topology), float("nan"), 32))


def nan_count(state: Any, rnd: Any, env: Any) -> tf.engine.Sent:
    BASE.communicate(state, rnd, env)
    return tf.engine.Sent(float("nan"))  # type: ignore[arg-type]


def init_none(x0: torch.Tensor, env: Any) -> None:
    return None


def init_float64(x0: torch.Tensor, env: Any) -> tf.engine.State:
    return tf.engine.State(x=x0.double())


def momentum_float64(x0: torch.Tensor, env: Any) -> tf.engine.State:
    return tf.engine.State(x=x0, momentum=torch.zeros(x0.shape, dtype=torch.float64))


def init_wrong_shape(x0: torch.Tensor, env: Any) -> tf.engine.State:
    return tf.engine.State(x=x0[:, :1].clone())


@pytest.mark.parametrize(("field", "piece", "exc", "message"), [
    ("communicate", returns_none, TypeError,
     "mine's communicate (returns_none) returned NoneType None: it must return a "
     "topofl.engine.Sent saying what was sent, `return tf.engine.Sent.of(*flows)`"),
    ("communicate", nan_size, FlowError,
     "mine's communicate (nan_size): a 'model' flow's size must be a finite number >= 0, got "
     "float nan (the numbers each message carries, e.g. env.layout.num_params"),
    ("communicate", nan_count, ValueError,
     "mine's communicate (nan_count) returned Sent(messages=nan): messages must be a whole "
     "number >= 0"),
    ("init", init_none, TypeError,
     "mine's init (init_none) returned NoneType None: it must return a topofl.engine.State "
     "holding the parameters, e.g. `return tf.engine.State(x=x0)`"),
    ("init", init_float64, TypeError,
     "mine's init (init_float64) returned a state whose x is torch.float64, but the run is "
     "torch.float32: create the algorithm's buffers with x0's dtype and device "
     "(torch.zeros_like(x0)"),
    ("init", momentum_float64, TypeError,
     "mine's init (momentum_float64) returned a state whose momentum is torch.float64, but "
     "the run is torch.float32"),
    ("init", init_wrong_shape, ValueError,
     "mine's init (init_wrong_shape) returned a state whose x has shape (4, 1), expected "
     "x0's (4, 650)"),
])
def test_a_piece_that_returns_the_wrong_thing_is_named_with_its_fix(
        field: str, piece: Any, exc: type[Exception], message: str) -> None:
    algo = BASE._replace(name="mine", **{field: piece})
    with pytest.raises(exc) as info:
        tf.run(algo, **_RUN)
    assert str(info.value).startswith(message), str(info.value)
    assert "\n" not in str(info.value)


def test_the_engine_s_dtype_follows_the_run() -> None:
    """A float64 state is right in a float64 run: the check compares with the run's x0."""
    res = tf.run(BASE._replace(name="mine", init=init_float64), dtype="float64", **_RUN)
    assert res.state.x.dtype == torch.float64


def test_buffers_on_another_device_are_named() -> None:
    x0 = torch.zeros(3, 2, device="meta")
    with pytest.raises(TypeError, match="whose momentum is on cpu, but the run is on meta: "
                                        "create the algorithm's buffers on x0's device"):
        check_state(tf.engine.State(x=x0, momentum=torch.zeros(3, 2)), x0, "mine")


@pytest.mark.parametrize(("sent", "exc", "match"), [
    (tf.engine.Sent(-1), ValueError, r"Sent\(messages=-1\): messages must be a whole number"),
    (tf.engine.Sent(1.5), ValueError, r"Sent\(messages=1.5\)"),  # type: ignore[arg-type]
    (tf.engine.Sent(float("inf")), ValueError, r"messages=inf"),  # type: ignore[arg-type]
    (tf.engine.Sent("3"), TypeError, r"messages='3'"),  # type: ignore[arg-type]
    (tf.engine.Sent(2, flows=[1]), TypeError,  # type: ignore[list-item]
     r"whose flows is list \[1\]: it must be None or a tuple of topofl.engine.ledger.Flow"),
    (tf.engine.Sent(2, records=3), TypeError,  # type: ignore[arg-type]
     r"whose records is int 3: it must be None or a mapping"),
    ((2, None), TypeError, r"returned tuple \(2, None\): it must return a topofl.engine.Sent"),
])
def test_check_sent_refuses_what_the_ledger_cannot_count(sent: Any, exc: type[Exception],
                                                         match: str) -> None:
    with pytest.raises(exc, match=match):
        check_sent(sent, "mine")


@pytest.mark.parametrize("size", [float("nan"), float("inf"), -1, "8", None])
def test_a_flow_of_a_size_that_is_not_a_count_is_refused(size: Any) -> None:
    arcs = graph_arcs(tf.topologies.ring(4))
    with pytest.raises(FlowError, match="'model' flow's size must be a finite number >= 0"):
        Flow("model", arcs, size, 32)
    with pytest.raises(FlowError, match="per-arc sizes must be finite numbers >= 0"):
        Flow("model", arcs, torch.full((8,), float("nan")).numpy(), 32)


def test_checked_pieces_give_the_same_numbers_and_keep_the_piece_s_members() -> None:
    """The check only reads what the pieces return: the same records as the bare algorithm
    run through the engine directly (which does not wrap it)."""
    algo = tf.algorithms.sgp(lr=0.1)
    checked = checked_pieces(algo)
    assert checked_pieces(checked) is checked
    assert checked.communicate.init_ == algo.communicate.init_  # type: ignore[attr-defined]
    ring = tf.topologies.ring(4)
    c = torch.arange(4.0, dtype=torch.float64).unsqueeze(1)
    runs = [tf.engine.run_rounds(a, torch.zeros_like(c), ring, lambda z, ph, rnd: z - c,
                                 rounds=20).evaluated() for a in (algo, checked)]
    assert torch.equal(runs[0], runs[1])  # the same calls on the same numbers


@pytest.mark.parametrize("stacked", [False, True])
def test_the_engine_checks_a_user_s_pieces_alone_and_stacked(stacked: bool) -> None:
    """``tf.engine.run`` and a stack check the pieces as ``topofl.run`` does (Lane.build)."""
    from topofl.engine.stack import Member, run_stacked

    algo = BASE._replace(name="mine", communicate=returns_none, stacks=True)
    data = tf.data.federate("digits", "iid", 4, seed=0)
    m = Member(tf.engine.RunConfig(rounds=2, spectral=False), tf.topologies.ring(4), algo, data,
               tf.models.build_model("logistic", data.input_shape, 10, seed=0))
    with pytest.raises(TypeError, match=r"^mine's communicate \(returns_none\) returned "
                                        "NoneType None"):
        if stacked:
            run_stacked([m, m])
        else:
            tf.engine.run(*m[:5])
