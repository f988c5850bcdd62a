r"""Hyper-parameter groups: typed records that check themselves, shared by the algorithms.

An algorithm factory's signature names *groups*, not fields: ``dsgd(sgd: LocalSGD = ...,
aggregation: Aggregation = ..., compressor: Compressor = ..., *, nesterov, clique_averaging,
**keywords)``. Each group is a frozen dataclass (:class:`Group`) whose ``__post_init__`` runs
the checks, so a bad value fails where the group is made, with the field's name. The flat
keywords users write (``dsgd(lr=0.5, momentum=0.9)``, a config's ``lr = 0.5``, ``--set
lr=0.5``) are the groups' field names: :class:`Keywords` routes each to the group that has the
field (``dataclasses.replace`` on the factory's default, checked again), and refuses an
unknown one as Python refuses an unknown keyword. The factories type ``**keywords`` with a
``TypedDict`` of those field names (``Unpack[DSGDKeywords]``), so mypy and editors check a
call's keywords too; a test holds each ``TypedDict`` to its factory's groups' fields. What an
algorithm builds from is the group itself, resolved (:meth:`LocalSGD.resolved`: its numbers
checked, its local work the default where none is given).

:func:`flat_parameters` lists a factory's flat keywords with their defaults (its groups
expanded, its other keywords as they are): what ``topofl.run`` accepts, what a config's
schema, the resolved config and ``topofl list algorithms`` read.

The groups:

======================  ========================================================================
:class:`LocalSGD`       ``lr``, ``momentum``, ``weight_decay``, ``local_steps`` or
                        ``local_epochs``, ``decay`` (the local SGD of one phase)
:class:`Optimizer`      ``lr``, ``momentum``, ``weight_decay``, ``decay`` (the local
                        optimiser of an algorithm whose phases count their own work)
:class:`Sampling`       ``participation``, ``sample_seed``, ``selection`` (a fraction of
                        the clients active per round, drawn from the stream
                        ``(sample_seed, t)``; a server method's may be chosen otherwise)
:class:`Aggregation`    ``aggregator``, ``tau``, ``trim``, ``delta``, ``order``,
                        ``absent``, ``lost`` (how a node combines its neighbourhood's
                        models: gossip's mean, or a robust rule; when in the round; without
                        an absent client or a lost message)
:class:`Compressor`     ``compressor``, ``ratio``, ``levels``, ``gamma``,
                        ``compress_seed`` (compressed gossip with error feedback, CHOCO-Gossip)
:class:`Finetune`       ``finetune_steps``, ``finetune_epochs``, ``finetune_lr``
                        (evaluation-time fine-tuning of the +FT baselines)
======================  ========================================================================

Gossip is one of three: exact (the default :class:`Aggregation` and no :class:`Compressor`),
robust (an :class:`Aggregation` rule other than ``"mean"``) or compressed (a
:class:`Compressor`); an algorithm that takes both groups refuses a robust rule with a
compressor.

Examples
--------
>>> from topofl.algorithms.hparams import LocalSGD
>>> LocalSGD(lr=0.5, local_epochs=2).work()
(None, 2.0)
>>> LocalSGD(lr=-1)
Traceback (most recent call last):
...
ValueError: lr must be in (0, inf], got -1
>>> tf.algorithms.dsgd(lr=0.5, momentum=0.9).hparams["momentum"]
0.9
>>> tf.algorithms.dsgd(sgd=LocalSGD(lr=0.5), momentum=0.9).hparams["lr"]
0.5
>>> tf.algorithms.dsgd(lrr=0.5)
Traceback (most recent call last):
...
TypeError: dsgd() got an unexpected keyword argument 'lrr' (did you mean 'lr'?)
"""

from __future__ import annotations

import dataclasses
import difflib
import inspect
import numbers
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypedDict, TypeVar

from topofl._utils.validation import check_choice, check_int, check_real

# the checks of single values, re-exported here (``__all__``), where the algorithms import them
from topofl.algorithms._checks import (
    COMPRESSION_DEFAULTS,
    CompressionParams,
    Epochs,
    check_compression,
    check_decay,
    check_lr,
    check_momentum,
    check_optional_compression,
    check_wd,
    check_work,
    with_feedback,
)
from topofl.engine.drops import LOST_RULES
from topofl.engine.pieces.robust import check_aggregator

__all__ = ["Group", "LocalSGD", "Optimizer", "Sampling", "Aggregation", "Compressor",
           "Finetune", "Keywords", "flat_parameters", "LocalSGDKeywords", "OptimizerKeywords",
           "SamplingKeywords", "AggregationKeywords", "CompressorKeywords", "FinetuneKeywords",
           "WEIGHTINGS", "SERVER_SELECTIONS", "LOSS_AT", "ORDERS", "Epochs", "check_lr",
           "check_momentum", "check_decay", "check_wd", "check_work", "CompressionParams",
           "COMPRESSION_DEFAULTS", "check_compression", "check_optional_compression",
           "with_feedback", "group_parameters", "flatten_groups"]

G = TypeVar("G", bound="Group")

#: The two orders of a gossip round (:class:`Aggregation`'s ``order``)
ORDERS = ("adapt_then_combine", "parallel")

#: How a server weighs the participants in its mean: equally, or by training-set size.
WEIGHTINGS = ("uniform", "data_size")

#: How a server method chooses its round's clients (:class:`Sampling`'s ``selection``; the
#: schemes of :func:`~topofl.engine.pieces.participants` the server methods run).
SERVER_SELECTIONS = ("uniform", "fair", "loss")

#: Which model of a client ``selection="loss"`` scores (:class:`Sampling`'s ``loss_at``):
#: its row at the round's start (the server's model), or the model it last trained.
LOSS_AT = ("server", "trained")



class Group:
    """Base of the hyper-parameter groups (each a frozen dataclass): the flat keywords a group
    answers to are its fields; :meth:`with_keywords` is ``dataclasses.replace`` (the checks of
    ``__post_init__`` run again)."""

    def with_keywords(self: G, **keywords: Any) -> G:
        """A copy with the fields ``keywords`` names changed (checked again)."""
        return dataclasses.replace(self, **keywords)  # type: ignore[type-var]

    @classmethod
    def field_names(cls) -> tuple[str, ...]:
        """The fields, in order: the flat keywords this group answers to."""
        return tuple(f.name for f in dataclasses.fields(cls))  # type: ignore[arg-type]


# ------------------------------------------------------------------------------ the groups


def _check_optimizer(group: Any) -> None:
    """The checks of the optimiser's fields every SGD group has."""
    check_lr(group.lr)
    check_momentum(group.momentum)
    check_wd(group.weight_decay)
    check_decay(group.decay)


@dataclass(frozen=True)
class LocalSGD(Group):
    """The local SGD of one phase.

    Attributes
    ----------
    lr : float, default 0.1
        The learning rate, ``lr * decay**t`` at round ``t`` (``> 0``).
    momentum : float, default 0
        Heavy-ball momentum, in ``[0, 1)``.
    weight_decay : float, default 0
        ``>= 0``.
    local_steps, local_epochs
        The local work of a round: a number of steps, or local epochs (a number, or one per
        client: ``ceil(epochs * m_i / batch_size)`` steps for client ``i``); not both. Neither:
        the algorithm's default (one step for most).
    decay : float, default 1
        The learning rate's decay per round, in ``(0, 1]``.
    """

    lr: float = 0.1
    momentum: float = 0.0
    weight_decay: float = 0.0
    local_steps: int | None = None
    local_epochs: float | tuple[float, ...] | None = None
    decay: float = 1.0

    def __post_init__(self) -> None:
        _check_optimizer(self)
        check_work(self.local_steps, self.local_epochs)

    def work(self, default_steps: int | None = 1, default_epochs: float | None = None
             ) -> tuple[int | None, Epochs]:
        """The checked ``(steps, epochs)`` of a round (neither given: the defaults)."""
        return check_work(self.local_steps, self.local_epochs, default_steps=default_steps,
                          default_epochs=default_epochs)

    def resolved(self, default_steps: int | None = 1, default_epochs: float | None = None
                 ) -> LocalSGD:
        """The group as the record an algorithm builds from: its numbers checked (``lr=1``:
        ``1.0``) and its local work resolved (:meth:`work`: neither ``local_steps`` nor
        ``local_epochs`` given, ``default_steps``, or ``default_epochs`` when that is None).

        >>> hp = LocalSGD(lr=1, local_epochs=[1, 2]).resolved()
        >>> hp.lr, hp.local_steps, hp.local_epochs, LocalSGD().resolved().local_steps
        (1.0, None, (1.0, 2.0), 1)
        """
        steps, epochs = self.work(default_steps, default_epochs)
        return LocalSGD(check_lr(self.lr), check_momentum(self.momentum),
                        check_wd(self.weight_decay), steps, epochs, check_decay(self.decay))

    def as_dict(self) -> dict[str, Any]:
        """The hyper-parameters as a run config records them (of the :meth:`resolved` group):
        ``lr``, ``momentum``, ``weight_decay``, ``local_steps``, ``local_epochs``, ``decay``."""
        return dict(lr=self.lr, momentum=self.momentum, weight_decay=self.weight_decay,
                    local_steps=self.local_steps, local_epochs=self.local_epochs,
                    decay=self.decay)


@dataclass(frozen=True)
class Optimizer(Group):
    """The local optimiser of an algorithm whose local work is its own (phases with their own
    step counts: APFL, Ditto, FedRep, Per-FedAvg, ...): :class:`LocalSGD` without
    ``local_steps`` and ``local_epochs``.

    Attributes
    ----------
    lr : float, default 0.1
    momentum : float, default 0
    weight_decay : float, default 0
    decay : float, default 1
    """

    lr: float = 0.1
    momentum: float = 0.0
    weight_decay: float = 0.0
    decay: float = 1.0

    def __post_init__(self) -> None:
        _check_optimizer(self)

    def resolved(self) -> Optimizer:
        """The group as the record an algorithm builds from: its numbers checked (``lr=1``:
        ``1.0``)."""
        return Optimizer(check_lr(self.lr), check_momentum(self.momentum),
                         check_wd(self.weight_decay), check_decay(self.decay))


class OptimizerKeywords(TypedDict, total=False):
    """:class:`Optimizer`'s fields as flat keywords."""

    lr: float
    momentum: float
    weight_decay: float
    decay: float


class LocalSGDKeywords(TypedDict, total=False):
    """:class:`LocalSGD`'s fields as flat keywords (for ``**keywords: Unpack[...]``)."""

    lr: float
    momentum: float
    weight_decay: float
    local_steps: int | None
    local_epochs: float | tuple[float, ...] | None
    decay: float


@dataclass(frozen=True)
class Sampling(Group):
    """A fraction of the clients active per round, and how they are chosen.

    Attributes
    ----------
    participation : float, default 1
        In ``(0, 1]``: ``max(1, floor(participation * n))`` clients a round (a resumed run
        draws the same).
    sample_seed : int, default 0
    selection : {"uniform", "fair", "loss"}, default "uniform"
        How a server method chooses them (:func:`~topofl.engine.pieces.participants`):
        ``"uniform"``, without replacement from the stream ``(sample_seed, t)``; ``"fair"``,
        the clients selected the fewest times so far first (decent-bench's
        ``FairSelection``: round-robin over blocks of ``m``); ``"loss"``, the clients of
        highest loss on their training data at the round's start, ties broken by the stream
        ``(sample_seed, t)`` (power-of-choice among ``candidates`` or every client, at the server's
        model: :class:`~topofl.engine.pieces.participation.LossSelection`; one forward pass
        over every client's training data per round; with ``participation = 1`` every
        client takes part and no loss is computed). Recorded in the run's hyper-parameters
        only when not ``"uniform"``. Only the server methods choose: the decentralized ones
        (their :meth:`checked`) refuse another than ``"uniform"``.
    candidates : int, optional
        ``selection="loss"``'s ``d``: the round's choice is among ``d`` clients drawn
        uniformly from the stream ``(sample_seed, t)`` (Cho et al.'s power-of-choice), in
        ``[m, n]``; ``None``: every client (recorded only when given).
    loss_at : {"server", "trained"}, default "server"
        Which model of a client ``selection="loss"`` scores: ``"server"``, its row as the
        round starts (a server method wrote the server's model there: power-of-choice's
        $F_i(\bar x^t)$); ``"trained"``, the model the client last trained (its starting
        model before it first takes part: decent-bench's ``HighLossSelection``, whose clients
        keep their last local model), kept in ``State.trained`` (one more ``[n, P]`` buffer).
        Recorded only when ``"trained"``.

    Examples
    --------
    >>> Sampling(0.5, selection="fair").resolved().selection
    'fair'
    >>> Sampling(0.5, selection="loss").resolved().selection
    'loss'
    >>> Sampling(selection="highest")
    Traceback (most recent call last):
    ...
    ValueError: selection must be one of ['fair', 'loss', 'uniform'], got 'highest'
    """

    participation: float = 1.0
    sample_seed: int = 0
    selection: str = "uniform"
    candidates: int | None = None
    loss_at: str = "server"

    def __post_init__(self) -> None:
        check_real(self.participation, "participation", low=0, high=1, low_open=True)
        check_int(self.sample_seed, "sample_seed", low=0)
        check_choice(self.selection, "selection", SERVER_SELECTIONS)
        if self.candidates is not None:
            check_int(self.candidates, "candidates", low=1)
            if self.selection != "loss":
                raise ValueError(f"candidates is selection='loss''s d (power-of-choice), got "
                                 f"candidates={self.candidates!r} with selection="
                                 f"{self.selection!r}")
        check_choice(self.loss_at, "loss_at", LOSS_AT)
        if self.loss_at != "server" and self.selection != "loss":
            raise ValueError(f"loss_at is the model selection='loss' scores, got loss_at="
                             f"{self.loss_at!r} with selection={self.selection!r}")

    def checked(self) -> tuple[float, int]:
        """``(participation, sample_seed)`` as checked numbers, for an algorithm that samples
        uniformly (a ``ValueError`` for another ``selection``)."""
        if self.selection != "uniform":
            raise ValueError(
                f"selection={self.selection!r} is offered by the server methods (fedavg, "
                "fedprox, scaffold, fedopt, fednova, feddyn, ...); this algorithm samples its "
                "clients uniformly: leave selection='uniform'")
        return (check_real(self.participation, "participation", low=0, high=1, low_open=True),
                check_int(self.sample_seed, "sample_seed", low=0))

    def resolved(self) -> Sampling:
        """The group as the record a server method builds from: its numbers checked."""
        return Sampling(
            check_real(self.participation, "participation", low=0, high=1, low_open=True),
            check_int(self.sample_seed, "sample_seed", low=0),
            check_choice(self.selection, "selection", SERVER_SELECTIONS),
            None if self.candidates is None else check_int(self.candidates, "candidates",
                                                           low=1),
            check_choice(self.loss_at, "loss_at", LOSS_AT))


class SamplingKeywords(TypedDict, total=False):
    """:class:`Sampling`'s fields as flat keywords."""

    participation: float
    sample_seed: int
    selection: str
    candidates: int | None
    loss_at: str


@dataclass(frozen=True)
class Aggregation(Group):
    """How a node combines its neighbourhood's models
    (:mod:`topofl.engine.pieces.robust`), when in the round, and without what it misses.

    Attributes
    ----------
    aggregator : {"mean", "clipped", "trimmed_mean", "median"}, default "mean"
        ``"mean"`` is gossip ``X <- W_t X``; the others are robust rules.
    tau : float, "adaptive" or "rank", optional
        ``"clipped"``'s clipping radius.
    trim : int, default 0
        ``"trimmed_mean"``'s values dropped at each end, per coordinate.
    delta : float, optional
        ``tau="adaptive"``'s budget.
    order : {"adapt_then_combine", "parallel"}, default "adapt_then_combine"
        Combine after the local steps, or combine the models the round started from and
        add the local update (D-PSGD's order, :class:`~topofl.engine.pieces.FromStart`).
    absent : {"renormalise", "lose"}, default "renormalise"
        An absent client's weight renormalised onto the diagonal, or lost
        (:data:`~topofl.engine.availability.ABSENT_RULES`).
    lost : {"renormalise", "mass"}, default "renormalise"
        A lost message's weight renormalised over what arrived, or lost with it
        (:func:`~topofl.engine.pieces.gossip`).
    message_noise, noise_mean : float, default 0
        A noisy channel: each delivered copy gets its own Gaussian noise of this standard
        deviation and mean (:class:`~topofl.engine.pieces.MessageNoise`).
    noise_seed : int, default 0
        The seed of that noise's streams.
    """

    aggregator: str = "mean"
    tau: float | str | None = None
    trim: int = 0
    delta: float | None = None
    order: str = "adapt_then_combine"
    absent: str = "renormalise"
    lost: str = "renormalise"
    message_noise: float = 0.0
    noise_mean: float = 0.0
    noise_seed: int = 0

    def __post_init__(self) -> None:
        check_aggregator(self.aggregator, self.tau, self.trim, self.delta)
        check_choice(self.order, "order", ORDERS)
        check_choice(self.absent, "absent", ("renormalise", "lose"))
        check_choice(self.lost, "lost", LOST_RULES)
        check_real(self.message_noise, "message_noise", low=0)
        check_real(self.noise_mean, "noise_mean")
        check_int(self.noise_seed, "noise_seed", low=0)

    @property
    def robust(self) -> bool:
        """Whether the rule is a robust one (not gossip's mean)."""
        return self.aggregator != "mean"

    def rules(self) -> dict[str, Any]:
        """``order``, ``absent``, ``lost`` and the message noise where they are not their
        defaults (what a run records: the runs before them keep their hash; the noise's seed
        with a noise)."""
        out = {k: getattr(self, k) for k, d in (("order", ORDERS[0]), ("absent", "renormalise"),
                                                ("lost", "renormalise"), ("message_noise", 0.0),
                                                ("noise_mean", 0.0))
               if getattr(self, k) != d}
        if self.noisy:
            out["noise_seed"] = self.noise_seed
        return out

    @property
    def noisy(self) -> bool:
        """Whether the messages carry noise (a ``message_noise`` or a ``noise_mean``)."""
        return bool(self.message_noise or self.noise_mean)


class AggregationKeywords(TypedDict, total=False):
    """:class:`Aggregation`'s fields as flat keywords."""

    aggregator: str
    tau: float | str | None
    trim: int
    delta: float | None
    order: str
    absent: str
    lost: str
    message_noise: float
    noise_mean: float
    noise_seed: int


@dataclass(frozen=True)
class Compressor(Group):
    """Compressed gossip, with error feedback through public copies (CHOCO-Gossip) or,
    ``feedback=False``, without.

    Attributes
    ----------
    compressor : {"topk", "randk", "qsgd"}, optional
        ``None``: no compression (then the settings below must be ``None`` too).
    ratio : float, optional
        The fraction of coordinates ``topk``/``randk`` keep, in ``(0, 1]`` (default 0.1).
    levels : int, optional
        ``qsgd``'s quantisation levels, ``>= 1`` (default 16).
    gamma : float, optional
        The consensus step size, in ``(0, 1]`` (default 0.2).
    compress_seed : int, optional
        The seed of the random compressors' draws, ``>= 0`` (default 0).
    rescale : bool, optional
        ``qsgd`` only: ``False`` leaves out CHOCO's $1/\tau$ (the unbiased QSGD of
        ChocoSGD's deep-learning code and BEER's ``gsgd``; default ``True``, recorded only
        when ``False``).
    feedback : bool, optional
        ``False``: no error feedback, each client mixes its neighbours' compressed models
        themselves (D-SGD only, without ``gamma``; default ``True``, recorded only when
        ``False``).
    """

    compressor: str | None = None
    ratio: float | None = None
    levels: int | None = None
    gamma: float | None = None
    compress_seed: int | None = None
    rescale: bool | None = None
    feedback: bool | None = None

    def __post_init__(self) -> None:
        self.checked()

    def checked(self) -> CompressionParams | None:
        """The checked settings (a :class:`CompressionParams`), ``None`` without a compressor; a
        setting given without one is a ``ValueError``."""
        return check_optional_compression(self.compressor, self.ratio, self.levels,
                                          self.gamma, self.compress_seed, self.rescale,
                                          self.feedback)


class CompressorKeywords(TypedDict, total=False):
    """:class:`Compressor`'s fields as flat keywords."""

    compressor: str | None
    ratio: float | None
    levels: int | None
    gamma: float | None
    compress_seed: int | None
    rescale: bool | None
    feedback: bool | None


@dataclass(frozen=True)
class Finetune(Group):
    """Evaluation-time fine-tuning (the +FT baselines, FedBABU).

    Attributes
    ----------
    finetune_steps, finetune_epochs
        Steps or epochs (one number; 0: no fine-tuning); neither: the algorithm's default.
    finetune_lr : float, optional
        Its learning rate (default: the local SGD's).
    """

    finetune_steps: int | None = None
    finetune_epochs: float | None = None
    finetune_lr: float | None = None

    def __post_init__(self) -> None:
        check_work(self.finetune_steps, self.finetune_epochs, steps_name="finetune_steps",
                   epochs_name="finetune_epochs", allow_zero=True)
        if self.finetune_lr is not None:
            check_lr(self.finetune_lr, "finetune_lr")


class FinetuneKeywords(TypedDict, total=False):
    """:class:`Finetune`'s fields as flat keywords."""

    finetune_steps: int | None
    finetune_epochs: float | None
    finetune_lr: float | None


# ------------------------------------------------------------------------------ flat keywords


class Keywords:
    """Route a factory's flat keywords to its groups: ``take`` each group, then ``done``.

    A flat keyword refines the group it belongs to, the default or one given:
    ``dsgd(sgd=LocalSGD(momentum=0.9), lr=0.5)`` trains with ``LocalSGD(momentum=0.9,
    lr=0.5)`` (a preset, tweaked). A config refuses the same field in its ``[sgd]`` table and
    as a key of its own (:func:`flatten_groups`): both are the value, given twice.

    Parameters
    ----------
    factory : str
        The factory's name, for the messages.
    given : mapping
        The flat keywords of the call (its ``**keywords``).

    Examples
    --------
    >>> kw = Keywords("toy", {"lr": 0.5, "participation": 0.5})
    >>> kw.take(LocalSGD()).lr, kw.take(Sampling()).participation
    (0.5, 0.5)
    >>> kw.done()
    >>> kw = Keywords("toy", {"lrr": 0.5})
    >>> kw.take(LocalSGD()).lr
    0.1
    >>> kw.done()
    Traceback (most recent call last):
    ...
    TypeError: toy() got an unexpected keyword argument 'lrr' (did you mean 'lr'?)
    """

    def __init__(self, factory: str, given: Mapping[str, Any]) -> None:
        self.factory = factory
        self.left = dict(given)
        self.seen: set[str] = set()

    def take(self, group: G | float, default: G | None = None) -> G:
        """``group`` with the flat keywords that name its fields applied. A real number for
        ``group`` is the learning rate of ``default`` (``dsgd(0.5)``: ``lr=0.5``)."""
        if (isinstance(group, numbers.Real) and not isinstance(group, bool)
                and default is not None and "lr" in default.field_names()):
            if "lr" in self.left:
                raise TypeError(f"{self.factory}() got multiple values for argument 'lr'")
            try:
                group = default.with_keywords(lr=group)
            except (TypeError, ValueError) as exc:  # named as given: a number for the group
                raise type(exc)(f"{self.factory}() takes {_parameter_of(group)} as a number: "
                                f"its learning rate, and {exc}") from None
        if not isinstance(group, Group):
            expected = (type(default).__name__ if default is not None
                        else "hyper-parameter group")
            raise TypeError(f"{self.factory}() takes {_parameter_of(group)}: a {expected} "
                            f"(or its fields as keywords), got {type(group).__name__} "
                            f"{group!r}"[:300])
        names = group.field_names()
        self.seen.update(names)
        mine = {k: self.left.pop(k) for k in names if k in self.left}
        return group.with_keywords(**mine) if mine else group

    def done(self) -> None:
        """Refuse the keywords no group took, as Python refuses an unknown keyword."""
        if not self.left:
            return
        key = sorted(self.left)[0]
        near = difflib.get_close_matches(key, sorted(self.seen), n=1)
        hint = f" (did you mean {near[0]!r}?)" if near else ""
        raise TypeError(f"{self.factory}() got an unexpected keyword argument {key!r}{hint}")


def _parameter_of(value: Any) -> str:
    """The name of the factory's parameter that holds ``value``, for the messages of a value
    given for a group: among the callers of :meth:`Keywords.take` (three frames up), the first
    whose function takes it as a group parameter, else the first that takes it at all."""
    frame = inspect.currentframe()
    caller = frame.f_back.f_back if frame is not None and frame.f_back is not None else None
    fallback = None
    for _ in range(3):
        if caller is None:
            break
        code = caller.f_code
        names = code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]
        given = [n for n in names if caller.f_locals.get(n) is value]
        fn = caller.f_globals.get(code.co_name)
        groups = group_parameters(fn) if inspect.isfunction(fn) else {}
        for n in given:
            if n in groups:
                return f"{n}="
        fallback = fallback or (given[0] if given else None)
        caller = caller.f_back
    return f"{fallback}=" if fallback else "a group"


def flat_parameters(factory: Callable[..., Any]) -> dict[str, inspect.Parameter]:
    """The flat keywords of an algorithm factory, with their defaults: each parameter whose
    default is a :class:`Group` expanded into its fields (the default's values), the others as
    they are (``**keywords`` left out).

    Examples
    --------
    >>> list(flat_parameters(tf.algorithms.local))
    ['lr', 'momentum', 'weight_decay', 'local_steps', 'local_epochs', 'decay']
    """
    out: dict[str, inspect.Parameter] = {}
    kind = inspect.Parameter.KEYWORD_ONLY
    for p in inspect.signature(factory).parameters.values():
        if p.kind in (p.VAR_KEYWORD, p.VAR_POSITIONAL):
            continue
        if isinstance(p.default, Group):
            for f in dataclasses.fields(p.default):  # type: ignore[arg-type]
                out[f.name] = inspect.Parameter(f.name, kind, default=getattr(p.default, f.name),
                                                annotation=f.type)
        else:
            out[p.name] = p
    return out


def group_parameters(factory: Callable[..., Any]) -> dict[str, Group]:
    """The group parameters of an algorithm factory: name -> default group."""
    return {p.name: p.default for p in inspect.signature(factory).parameters.values()
            if isinstance(p.default, Group)}


def flatten_groups(factory: Callable[..., Any], given: Mapping[str, Any]) -> dict[str, Any]:
    """A call's (or a config's) hyper-parameters with its groups flattened into their fields:
    a key naming a group parameter of ``factory`` (``sgd``, ``aggregation`` ...) holds a table
    of that group's fields (a config's ``[sgd]``: only the keys it gives) or the group itself
    (every field). What :func:`topofl.run` records is the flat form, so a table and the flat
    keys it holds make one run, one run hash.

    Raises
    ------
    TypeError
        A table key that is not a field of the group, a field given both in its table and
        flat, or a group value that is neither a table nor the group.

    Examples
    --------
    >>> flatten_groups(tf.algorithms.dsgd, {"sgd": {"lr": 0.5}, "compressor": "topk"})
    {'lr': 0.5, 'compressor': 'topk'}
    >>> flatten_groups(tf.algorithms.dsgd, {"sgd": {"rate": 0.5}})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    TypeError: [sgd] holds the fields of LocalSGD (lr, momentum, ..., decay), got 'rate'
    """
    groups = group_parameters(factory)
    flat = {k for k in given if k not in groups}
    out: dict[str, Any] = {}
    for name, value in given.items():
        if name not in groups:
            out[name] = value
            continue
        kind = type(groups[name])
        fields = kind.field_names()
        if isinstance(value, Group):
            if not isinstance(value, kind):
                raise TypeError(f"{name} must be a {kind.__name__}, got "
                                f"{type(value).__name__} {value!r}"[:300])
            table = {f: getattr(value, f) for f in fields}
        elif isinstance(value, Mapping):
            table = dict(value)
            for key in table:
                if key not in fields:
                    raise TypeError(f"[{name}] holds the fields of {kind.__name__} "
                                    f"({', '.join(fields)}), got {key!r}")
        else:
            raise TypeError(f"{name} must be a {kind.__name__} or a table of its fields "
                            f"({', '.join(fields)}), got {type(value).__name__} {value!r}"[:300])
        for key, v in table.items():
            if key in flat or key in out:
                raise TypeError(f"{key} is given twice: in [{name}] and as a key of its own")
            out[key] = v
    return out


def check_weighting(weighting: Any) -> str:
    """``weighting`` checked: one of :data:`WEIGHTINGS`."""
    return check_choice(weighting, "weighting", WEIGHTINGS)
