r"""What the centralized personalized baselines share: FedPer, FedRep, FedBABU and Ditto.

The personalized decentralized papers topofl implements compare against these server-based
methods (DFedPGP Tables 1-3, PFedDST Table I, DPFL Table 2). Each keeps something on every
client (a head, or a whole personal model) and lets a server average the rest; none uses the
communication graph (``uses_topology=False``, run them with ``topology=None``).

=========  =====================================  ==================  ========================
name       local work per round                   server average of   evaluated model
=========  =====================================  ==================  ========================
fedper     body and head together                 body                averaged body + own head
fedrep     head (body frozen), then body          body                averaged body + own head
           (head frozen)
fedbabu    body only; the head stays the random   body                a copy fine-tuned on the
           initial one                                                client's data
ditto      personal $v_k$ (proximal to $w$),     global model $w$    personal model $v_k$
           then global $w$ (FedAvg)
=========  =====================================  ==================  ========================

Conventions shared by the four (see each factory for the paper passages):

* The server average is the exact mean over the participating clients (``weighting="uniform"``,
  as :func:`~topofl.algorithms.fedavg`), or weighted by the clients' training-set sizes
  (``weighting="data_size"``, FedAvg's $n_k / n$). The average is then written back to *every*
  client, so that a client that did not take part in the round is evaluated with the current
  global part (it would receive it the next time it is sampled). The mean is computed as
  ``x_0 + mean(x_i - x_0)``, so averaging models that already agree changes nothing.
* ``participation`` < 1 samples ``max(1, floor(participation * n))`` clients per round without
  replacement (McMahan et al.'s ``m = max(C K, 1)``) from the stream ``(sample_seed, t)``, so a
  round's participants depend on ``(sample_seed, t)`` only and a resumed run samples the same.
  The others take no local step (their learning rate is 0) and send nothing.
* Messages per round: ``2 m`` with ``m`` participants (the communicated part: the body, or
  Ditto's whole global model, sent down to each participant before its local work and up
  after it: :func:`~topofl.engine.pieces.server_flows`).
* Absent clients (rule ``"server"``): the participants of a round are those sampled *and*
  online (:func:`~topofl.engine.pieces.round_active`); a sampled client that is offline drops
  out of the average and trains nothing.
* Local optimisers restart each round (momentum buffers are zeroed in ``round_start``), as a
  client that builds its SGD optimizer when it receives the server's model does.

References
----------
.. [1] M. G. Arivazhagan, V. Aggarwal, A. K. Singh, S. Choudhary, "Federated learning with
   personalization layers", arXiv:1912.00818, 2019 (FedPer).
.. [2] L. Collins, H. Hassani, A. Mokhtari, S. Shakkottai, "Exploiting shared representations
   for personalized federated learning", ICML 2021, Algorithm 1 (FedRep).
.. [3] J. Oh, S. Kim, S.-Y. Yun, "FedBABU: Toward enhanced representation for federated image
   classification", ICLR 2022 (FedBABU).
.. [4] T. Li, S. Hu, A. Beirami, V. Smith, "Ditto: Fair and robust federated learning through
   personalization", ICML 2021, Algorithm 1 (Ditto).
.. [5] B. McMahan et al., "Communication-efficient learning of deep networks from
   decentralized data", AISTATS 2017 (FedAvg, client sampling).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np
import torch
from torch import Tensor

from topofl._utils.validation import check_choice, check_int, check_real
from topofl.algorithms._common import (
    WEIGHTINGS,
    Epochs,
    ServerParams,
    SGDParams,
    check_lr,
    check_server,
    check_sgd,
    check_work,
)
from topofl.engine.clients import row
from topofl.engine.pieces import (
    SGD,
    Sampled,
    compose_init,
    data_sizes,
    exact_average,
    restart_momentum,
    round_active,
    server_average,
)
from topofl.engine.protocol import Algorithm, Part, Phase, Round, Services, State, parameters


def server_algorithm(name: str, hp: ServerParams, hparams: dict[str, Any],
                     phases: tuple[Phase, ...], *, shared: Part = "body", evaluate: Any = None,
                     local: Any = None, init: Any = None, round_start: Any = None
                     ) -> Algorithm:
    """A server-based baseline: sampled local SGD (momentum restarted every round: by
    default :func:`~topofl.engine.pieces.restart_momentum`, or ``round_start``), then the
    server's average of ``shared``; it ignores the graph."""
    sgd = Sampled(SGD(hp.momentum, hp.weight_decay), hp.participation, hp.sample_seed)
    local = sgd if local is None else local
    return Algorithm(
        name=name,
        hparams=dict(hparams, participation=hp.participation, sample_seed=hp.sample_seed,
                     weighting=hp.weighting),
        phases=phases,
        init=compose_init(local) if init is None else init,
        local=local,
        communicate=server_average(shared, participation=hp.participation,
                                   sample_seed=hp.sample_seed, weighting=hp.weighting),
        evaluate=parameters if evaluate is None else evaluate,
        round_start=restart_momentum() if round_start is None else round_start,
        requires=None,
        shared=shared,
        decay=hp.decay,
        uses_topology=False,
        absent="server",
    )


_KW = inspect.Parameter.KEYWORD_ONLY
#: the keywords every server baseline takes, with their defaults, after ``lr`` and its own
_SHARED = (("momentum", 0.0, float), ("weight_decay", 0.0, float), ("decay", 1.0, float),
           ("participation", 1.0, float), ("sample_seed", 0, int), ("weighting", "uniform", str))


#: the local work of :func:`server_work_factory`'s baselines, right after ``lr``
_WORK = (("local_steps", "int | None"), ("local_epochs", "float | tuple[float, ...] | None"))

#: checked local work: ``(steps, None)`` or ``(None, epochs)`` (:func:`check_work`)
Work = tuple[int | None, Epochs]


def server_factory(build: Callable[..., Algorithm]) -> Callable[..., Algorithm]:
    """Turn ``build(hp: ServerParams, *, <its own keywords>)`` into a factory taking ``lr``, its
    own keywords and the shared ones (``momentum``, ``weight_decay``, ``decay``,
    ``participation``, ``sample_seed``, ``weighting``), checked with :func:`check_server`.

    The factory's ``inspect.signature`` lists every keyword (``topofl.run`` validates against
    it); an unknown keyword is a ``TypeError``.
    """
    return _server_factory(build, work=False)


def server_work_factory(build: Callable[..., Algorithm]) -> Callable[..., Algorithm]:
    """:func:`server_factory` for a baseline whose local work is one phase's: the factory also
    takes ``local_steps`` and ``local_epochs`` right after ``lr`` (one step by default), and
    ``build(hp: ServerParams, work: Work, *, <its own keywords>)`` gets them checked."""
    return _server_factory(build, work=True)


def _server_factory(build: Callable[..., Algorithm], *, work: bool) -> Callable[..., Algorithm]:
    own = list(inspect.signature(build).parameters.values())[2 if work else 1:]
    lr = inspect.Parameter("lr", inspect.Parameter.POSITIONAL_OR_KEYWORD, default=0.1,
                           annotation="float")
    local = [inspect.Parameter(k, _KW, default=None, annotation=t) for k, t in _WORK]
    shared = [inspect.Parameter(k, _KW, default=d, annotation=t.__name__)
              for k, d, t in _SHARED]
    sig = inspect.Signature([lr, *(local if work else []), *own, *shared],
                            return_annotation="Algorithm")

    def factory(*args: Any, **kwargs: Any) -> Algorithm:
        bound = sig.bind(*args, **kwargs)
        bound.apply_defaults()
        kw = dict(bound.arguments)
        hp = check_server(kw.pop("lr"), *(kw.pop(k) for k, _, _ in _SHARED))
        if work:
            return build(hp, check_work(kw.pop("local_steps"), kw.pop("local_epochs")), **kw)
        return build(hp, **kw)

    factory.__signature__ = sig  # type: ignore[attr-defined]  # read by inspect.signature
    factory.__name__ = factory.__qualname__ = build.__name__
    factory.__doc__, factory.__module__ = build.__doc__, build.__module__
    return factory


def sgd_hparams(hp: ServerParams, work: Work) -> dict[str, Any]:
    """The local SGD's hyper-parameters as a one-phase baseline records them (``lr``,
    ``momentum``, ``weight_decay``, ``local_steps``, ``local_epochs``, ``decay``)."""
    return dict(lr=hp.lr, momentum=hp.momentum, weight_decay=hp.weight_decay,
                local_steps=work[0], local_epochs=work[1], decay=hp.decay)


def same_head(x0: Any, env: Services) -> None:
    """``init`` check that gives every client the head of client 0 (the server's model)."""
    h = env.layout.cols("head")
    head = row(env.clients, x0[:, h], 0)  # from the process that holds client 0
    x0[:, h] = head.unsqueeze(0).expand(x0.shape[0], -1)


class FedAvgParams(NamedTuple):
    """Checked hyper-parameters of the FedAvg family (FedAvg, FedProx and their +FT)."""

    sgd: SGDParams
    participation: float
    sample_seed: int
    weighting: str

    def as_dict(self) -> dict[str, Any]:
        """The hyper-parameters as recorded in the run config."""
        return dict(self.sgd.as_dict(), participation=self.participation,
                    sample_seed=self.sample_seed, weighting=self.weighting)


#: FedAvg's keywords after ``lr``, with their defaults (``local_*``: one step by default)
_FEDAVG = (("momentum", 0.0, "float"), ("weight_decay", 0.0, "float"),
           ("local_steps", None, "int | None"),
           ("local_epochs", None, "float | tuple[float, ...] | None"), ("decay", 1.0, "float"),
           ("participation", 1.0, "float"), ("sample_seed", 0, "int"),
           ("weighting", "uniform", "str"))


#: the fine-tuning keywords of :func:`fedavg_ft_factory`'s baselines, after their own
_FINETUNE = (("finetune_steps", "int | None"), ("finetune_epochs", "float | None"),
             ("finetune_lr", "float | None"))


def fedavg_factory(build: Callable[..., Algorithm]) -> Callable[..., Algorithm]:
    """Turn ``build(hp: FedAvgParams, *, <its own keywords>)`` into a factory taking ``lr``,
    FedAvg's keywords (``momentum``, ``weight_decay``, ``local_steps``, ``local_epochs``,
    ``decay``, ``participation``, ``sample_seed``, ``weighting``) and its own, with an ordinary
    ``inspect.signature``; an unknown keyword is a ``TypeError``."""
    return _fedavg_factory(build, finetune=False)


def fedavg_ft_factory(build: Callable[..., Algorithm]) -> Callable[..., Algorithm]:
    """:func:`fedavg_factory` for a +FT baseline: the factory also takes ``finetune_steps``,
    ``finetune_epochs`` and ``finetune_lr`` after its own keywords, and
    ``build(hp: FedAvgParams, ft: Finetune, *, <its own keywords>)`` gets them checked with
    :func:`check_finetune`."""
    return _fedavg_factory(build, finetune=True)


def _fedavg_factory(build: Callable[..., Algorithm], *, finetune: bool
                    ) -> Callable[..., Algorithm]:
    own = list(inspect.signature(build).parameters.values())[2 if finetune else 1:]
    lr = inspect.Parameter("lr", inspect.Parameter.POSITIONAL_OR_KEYWORD, default=0.1,
                           annotation="float")
    shared = [inspect.Parameter(k, _KW, default=d, annotation=t) for k, d, t in _FEDAVG]
    tuning = [inspect.Parameter(k, _KW, default=None, annotation=t) for k, t in _FINETUNE]
    sig = inspect.Signature([lr, *shared, *own, *(tuning if finetune else [])],
                            return_annotation="Algorithm")

    def factory(*args: Any, **kwargs: Any) -> Algorithm:
        bound = sig.bind(*args, **kwargs)
        bound.apply_defaults()
        kw = dict(bound.arguments)
        sgd = check_sgd(kw.pop("lr"), kw.pop("momentum"), kw.pop("weight_decay"),
                        kw.pop("decay"), kw.pop("local_steps"), kw.pop("local_epochs"))
        hp = FedAvgParams(
            sgd,
            check_real(kw.pop("participation"), "participation", low=0, high=1,
                       low_open=True),
            check_int(kw.pop("sample_seed"), "sample_seed", low=0),
            check_choice(kw.pop("weighting"), "weighting", WEIGHTINGS),
        )
        if finetune:
            ft = check_finetune(hp, *(kw.pop(k) for k, _ in _FINETUNE))
            return build(hp, ft, **kw)
        return build(hp, **kw)

    factory.__signature__ = sig  # type: ignore[attr-defined]  # read by inspect.signature
    factory.__name__ = factory.__qualname__ = build.__name__
    factory.__doc__, factory.__module__ = build.__doc__, build.__module__
    return factory


def fedavg_algorithm(name: str, hp: FedAvgParams, *, hparams: dict[str, Any] | None = None,
                     local: Any = None, evaluate: Any = None, round_start: Any = None,
                     communicate: Any = None, init: tuple[Any, ...] = ()) -> Algorithm:
    """The FedAvg family: local SGD on the whole model (``local``, by default
    :class:`~topofl.engine.pieces.SGD` with momentum kept across rounds), then the server's
    average written to every client.

    Full participation with the plain mean is :func:`~topofl.engine.pieces.exact_average`
    (the historical ``fedavg``, unchanged to the bit); otherwise the round's participants
    (``participation``, ``sample_seed``) train (:class:`~topofl.engine.pieces.Sampled`) and
    :func:`~topofl.engine.pieces.server_average` averages them. A server step of its own
    (SCAFFOLD, FedOpt) is ``communicate``; ``init`` lists further pieces that add state.
    """
    sgd = SGD(hp.sgd.momentum, hp.sgd.weight_decay) if local is None else local
    sampled = hp.participation < 1.0
    if communicate is None and (sampled or hp.weighting != "uniform"):
        communicate = server_average("all", participation=hp.participation,
                                     sample_seed=hp.sample_seed, weighting=hp.weighting)
    elif communicate is None:
        communicate = exact_average()
    piece = Sampled(sgd, hp.participation, hp.sample_seed) if sampled else sgd
    fields: dict[str, Any] = {}
    if round_start is not None:
        fields["round_start"] = round_start
    return Algorithm(
        name=name,
        hparams=dict(hp.as_dict(), **(hparams or {})),
        phases=(Phase("all", hp.sgd.steps, hp.sgd.epochs, hp.sgd.lr),),
        init=compose_init(piece, *init),
        local=piece,
        communicate=communicate,
        evaluate=parameters if evaluate is None else evaluate,
        requires=None,
        decay=hp.sgd.decay,
        uses_topology=False,
        absent="server",
        **fields,
    )


class ServerRound(NamedTuple):
    """Who the server hears from in a round, and how much each counts (:func:`server_round`).

    Attributes
    ----------
    weights : Tensor
        ``[m]`` each of this process's clients' weight in the mean over the round's
        participants: its training-set size (``weighting="data_size"``) or 1, and 0 for a
        client that does not take part.
    base : Tensor
        ``[m]`` the same weights, participating or not (SCAFFOLD's $p_i$ before
        normalisation over every client).
    active : ndarray or None
        ``(n,)`` bool: the round's participants, ``None`` when every client takes part.
    """

    weights: Tensor
    base: Tensor
    active: np.ndarray | None


def server_round(hp: FedAvgParams, state: State, rnd: Round, env: Services) -> ServerRound:
    """The round's participants (:func:`~topofl.engine.pieces.round_active`: sampled and
    online) and their weights in the server's mean, on ``state.x``'s device and dtype."""
    x = state.x
    active = round_active(rnd, env.n, hp.participation, hp.sample_seed)
    base = torch.ones(x.shape[0], dtype=x.dtype, device=x.device)
    if hp.weighting == "data_size":
        base = data_sizes(env).to(device=x.device, dtype=x.dtype)
    if active is None:
        return ServerRound(base, base, None)
    mask = env.clients.own(torch.as_tensor(active, device=x.device)).to(x.dtype)
    return ServerRound(base * mask, base, active)


def server_sums(sr: ServerRound, anchor: Tensor, env: Services, what: str, *blocks: Tensor
                ) -> tuple[Tensor | None, list[Tensor], Tensor]:
    """What a server step reads, over every process in one collective (``what`` names it):
    ``(start, sums, den)``.

    ``start`` ``[P]`` is the server's model at the round's start: client 0's row of ``anchor``
    (``[m, P]``, each client's model at the round's start) plus the participants' mean
    difference to it (0 but in a first round from clients' own initial models,
    ``init="independent"``, where it is the participants' mean, FedAvg's); ``None`` when
    nobody took part (nothing moves). ``sums`` are the sums over the round's participants of
    each ``[m, P_k]`` block's rows, weighted by ``sr.weights``; ``den`` ``[2]`` the sum of the
    weights and of ``sr.base`` (every client's).
    """
    ref = row(env.clients, anchor, 0)  # from the process that holds client 0
    parts = [*blocks, anchor - ref]
    w = sr.weights
    total = torch.cat([w @ b for b in parts] + [w.sum().view(1), sr.base.sum().view(1)])
    total = env.clients.reduce_(total, what)
    *sums, shift = torch.split(total[:-2], [b.shape[1] for b in parts])
    den = total[-2:]
    start = ref.add_(shift / den[0]) if float(den[0]) > 0 else None
    return start, sums, den


_FINETUNE_STREAM = 11  # local_train stream of the +FT baselines' evaluation-time fine-tuning


class Finetune(NamedTuple):
    """Checked evaluation-time fine-tuning (the +FT baselines, FedBABU): steps or epochs,
    learning rate, the part of the model it trains and the ``local_train`` stream of its
    batches."""

    steps: int | None
    epochs: float | None
    lr: float
    part: Part = "all"
    stream: int = _FINETUNE_STREAM

    def as_dict(self) -> dict[str, Any]:
        """The hyper-parameters as recorded in the run config."""
        return dict(finetune_steps=self.steps, finetune_epochs=self.epochs,
                    finetune_lr=self.lr)

    def evaluate(self, state: State, rnd: Round, env: Services) -> Tensor:
        """A fine-tuned copy of every client's model: plain SGD on ``part``, on its own
        training batches (stream ``stream``, indexed by the round); the state is untouched."""
        x = state.x.clone()
        if self.steps == 0 or self.epochs == 0:
            return x
        env.local_train(x, self.part, self.lr, t=rnd.t, steps=self.steps, epochs=self.epochs,
                        stream=self.stream)
        return x

    @classmethod
    def check(cls, steps: Any, epochs: Any, lr: Any, *, default_lr: float,
              default_steps: int = 1, part: Part = "all",
              stream: int = _FINETUNE_STREAM) -> Finetune:
        """``finetune_steps``, ``finetune_epochs`` (one number; 0: no fine-tuning) and
        ``finetune_lr`` checked; neither steps nor epochs: ``default_steps`` steps."""
        fs, fe = check_work(steps, epochs, steps_name="finetune_steps",
                            epochs_name="finetune_epochs", default_steps=default_steps,
                            allow_zero=True)
        if isinstance(fe, tuple):
            raise TypeError("finetune_epochs must be one number, not one per client")
        flr = default_lr if lr is None else check_lr(lr, "finetune_lr")
        return cls(fs, fe, flr, part, stream)


def check_finetune(hp: FedAvgParams, steps: Any, epochs: Any, lr: Any) -> Finetune:
    """Fine-tuning defaults to twice a round's local work (DPFL's "2 * tau local epochs")."""
    if steps is None and epochs is None:
        if isinstance(hp.sgd.epochs, tuple):
            raise ValueError(
                "with local_epochs given per client, give finetune_steps or finetune_epochs "
                "explicitly (the default is twice a round's local work)"
            )
        if hp.sgd.epochs is not None:
            epochs = 2 * hp.sgd.epochs
        else:
            steps = 2 * (hp.sgd.steps or 1)
    return Finetune.check(steps, epochs, lr, default_lr=hp.sgd.lr)


__all__ = ["server_algorithm", "server_factory", "server_work_factory", "Work", "sgd_hparams",
           "same_head", "State", "FedAvgParams", "fedavg_factory", "fedavg_ft_factory",
           "fedavg_algorithm", "ServerRound", "server_round", "server_sums", "Finetune",
           "check_finetune"]
