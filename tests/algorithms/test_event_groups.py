"""The event-time factories' hyper-parameter groups (``topofl.algorithms._event``): AD-PSGD
and gossip learning take the local SGD of an event (:class:`EventSGD`) and the clients' clocks
(:class:`EventClocks`), as groups, as flat keywords, or the learning rate as a number."""

from __future__ import annotations

from typing import Any

import pytest

import topofl as tf
from topofl.algorithms._event import EventClocksKeywords, EventSGDKeywords
from topofl.algorithms.adpsgd import ADPSGDKeywords, EventClocks, EventSGD
from topofl.algorithms.gossip_learning import GossipLearningKeywords
from topofl.algorithms.hparams import flat_parameters

FACTORIES = ["adpsgd", "gossip_learning"]

#: the flat keywords both take: (default, annotation)
SHARED = {"lr": (0.1, "float"), "durations": (1.0, "float | Sequence[float]"),
          "window": (1.0, "float"), "local_steps": (1, "int"), "pair_seed": (0, "int"),
          "decay": (1.0, "float")}
OWN = {"adpsgd": {"offsets": (None, "float | Sequence[float] | None"),
                  "split": (None, "str | None")},
       "gossip_learning": {"layers": (1, "int"), "merge": ("mean", "str"),
                           "timing": ("continuous", "str | Mapping[str, Any]")}}


@pytest.mark.parametrize("name", FACTORIES)
def test_flat_keywords_keep_their_names_defaults_and_annotations(name: str) -> None:
    params = flat_parameters(tf.algorithms.ALGORITHMS[name])
    got = {k: (p.default, str(p.annotation)) for k, p in params.items()}
    assert got == {**SHARED, **OWN[name]}


def test_the_keywords_typeddicts_are_the_groups_fields() -> None:
    assert set(EventSGDKeywords.__annotations__) == set(EventSGD.field_names())
    assert set(EventClocksKeywords.__annotations__) == set(EventClocks.field_names())
    for td in (ADPSGDKeywords, GossipLearningKeywords):
        assert set(td.__optional_keys__) == {*EventSGD.field_names(), *EventClocks.field_names()}


@pytest.mark.parametrize("name", FACTORIES)
def test_groups_flat_keywords_and_a_positional_lr_make_the_same_algorithm(name: str) -> None:
    f = tf.algorithms.ALGORITHMS[name]
    flat = f(lr=0.05, local_steps=2, decay=0.9, durations=[1.0, 2.0], window=0.5, pair_seed=3)
    grouped = f(EventSGD(lr=0.05, local_steps=2, decay=0.9),
                EventClocks(durations=[1.0, 2.0], window=0.5, pair_seed=3))
    mixed = f(0.05, EventClocks(window=0.5), local_steps=2, decay=0.9, durations=[1.0, 2.0],
              pair_seed=3)
    assert flat.hparams == grouped.hparams == mixed.hparams
    assert list(flat.hparams)[:4] == ["lr", "durations", "window", "local_steps"]
    assert flat.hparams["durations"] == [1.0, 2.0] and flat.phases == grouped.phases
    # a flat keyword overrides the field of the group it belongs to
    assert f(EventSGD(lr=0.05), lr=0.2).hparams["lr"] == 0.2


@pytest.mark.parametrize("name", FACTORIES)
@pytest.mark.parametrize(("args", "kw", "exc", "match"), [
    ((0.1,), dict(lr=0.2), TypeError, r"\(\) got multiple values for argument 'lr'"),
    ((), dict(momentum=0.9), TypeError, r"\(\) got an unexpected keyword argument 'momentum'"),
    ((), dict(windw=0.5), TypeError, r"unexpected keyword argument 'windw' \(did you mean "
                                     r"'window'\?\)"),
    ((0.0,), {}, ValueError, r"lr must be in \(0, inf\], got 0$"),
    ((), dict(local_steps=0), ValueError, "local_steps must be >= 1, got 0"),
    ((), dict(pair_seed=-1), ValueError, "pair_seed must be >= 0, got -1"),
    ((), dict(decay=0.0), ValueError, "decay"),
    ((), dict(durations=[1.0, -2.0]), ValueError, "durations must be positive finite times"),
    ((EventSGD(), 1.0), {}, TypeError,
     r"takes clocks=: a EventClocks \(or its fields as keywords\), got float 1.0"),
    ((EventSGD(), "fast"), {}, TypeError,
     r"takes clocks=: a EventClocks \(or its fields as keywords\), got str 'fast'"),
])
def test_bad_calls_are_refused_in_one_line(name: str, args: tuple[Any, ...], kw: dict[str, Any],
                                           exc: type[Exception], match: str) -> None:
    with pytest.raises(exc, match=match) as info:
        tf.algorithms.ALGORITHMS[name](*args, **kw)
    assert "\n" not in str(info.value)


def test_a_bad_field_fails_where_the_group_is_made() -> None:
    with pytest.raises(ValueError, match="window must be a positive finite time, got 0.0"):
        EventClocks(window=0.0)
    with pytest.raises(ValueError, match=r"lr must be in \(0, inf\], got -1"):
        EventSGD(lr=-1)
