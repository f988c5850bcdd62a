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
  round's participants depend on ``(sample_seed, t)`` only and a resumed run samples the same;
  ``selection="fair"`` takes the clients selected the fewest times first instead
  (decent-bench's ``FairSelection``: round-robin over blocks of ``m``, a function of ``t``),
  ``selection="loss"`` the ``m`` clients of highest loss on their training data at the
  round's start (:class:`~topofl.engine.pieces.participation.LossSelection`: chosen once
  in ``round_start``, read by every hook of the round; a client's row then holds the server's
  model, so it is power-of-choice's loss at the server's model, one forward pass over every
  client's training data per round, or over the ``candidates``' only, the losses logged as
  ``selection_loss``; with ``loss_at="trained"`` the model each client last trained instead,
  kept in ``State.trained``: decent-bench's ``HighLossSelection``).
  The others take no local step (their learning rate is 0) and send nothing.
* Messages per round: ``2 m`` with ``m`` participants (the communicated part: the body, or
  Ditto's whole global model, sent down to each participant before its local work and up
  after it: :func:`~topofl.engine.pieces.server_flows`).
* Absent clients (rule ``"server"``): the participants of a round are those sampled *and*
  online (:func:`~topofl.engine.pieces.round_active`); a sampled client that is offline drops
  out of the average and trains nothing.
* Local optimisers restart each round (momentum buffers are zeroed in ``round_start``), as a
  client that builds its SGD optimizer when it receives the server's model does.

Their factories, and the FedAvg family's (:func:`fedavg_algorithm`), name hyper-parameter
groups (:mod:`topofl.algorithms.hparams`): the local optimiser (``sgd``, a
:class:`~topofl.algorithms.hparams.LocalSGD` where a round is one phase of local work, an
:class:`~topofl.algorithms.hparams.Optimizer` where the phases count their own), the round's
participants (``sampling``, a :class:`~topofl.algorithms.hparams.Sampling`), the server's
``weighting`` (a plain keyword), the fine-tuning of the +FT baselines and FedBABU
(``finetune``, a :class:`~topofl.algorithms.hparams.Finetune`), and a group of their own where
they have many settings. :func:`server_params` gathers the first three into the record the
builders read (:class:`ServerParams`: the groups themselves, resolved), and
:func:`check_finetune` checks the fourth (:class:`Tuning`).

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

from dataclasses import dataclass
from typing import Any, Generic, NamedTuple, TypeVar

import numpy as np
import torch
from torch import Tensor

from topofl.algorithms.hparams import (
    Epochs,
    Finetune,
    LocalSGD,
    Optimizer,
    Sampling,
    check_lr,
    check_weighting,
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
from topofl.engine.pieces.communication import Communicate
from topofl.engine.pieces.participation import LossSelection
from topofl.engine.protocol import (
    Algorithm,
    Part,
    Phase,
    Round,
    Sent,
    Services,
    State,
    parameters,
)

#: the local optimiser of a server baseline: a :class:`~topofl.algorithms.hparams.LocalSGD`
#: (a round is one phase of local work) or an :class:`~topofl.algorithms.hparams.Optimizer`
#: (the phases count their own)
S = TypeVar("S", LocalSGD, Optimizer)


@dataclass(frozen=True)
class ServerParams(Generic[S]):
    """What a server baseline builds from (:func:`server_params`): its groups, checked.

    Attributes
    ----------
    sgd : LocalSGD or Optimizer
        The local optimiser, :meth:`~topofl.algorithms.hparams.LocalSGD.resolved` (its
        numbers checked, a :class:`~topofl.algorithms.hparams.LocalSGD`'s work resolved).
    sampling : Sampling
        The round's participants, resolved.
    weighting : str
        How the server weighs them, one of :data:`~topofl.algorithms.hparams.WEIGHTINGS`.
    selector : LossSelection or None
        ``selection="loss"`` with ``participation < 1``: the run's choice of each round's
        clients (made in ``round_start``, read by every piece that asks who takes part).
    """

    sgd: S
    sampling: Sampling
    weighting: str
    selector: LossSelection | None = None

    def sampled(self, piece: Any = None) -> Sampled:
        """``piece`` (by default :class:`~topofl.engine.pieces.SGD` with the local optimiser's
        momentum and weight decay) run by the round's participants only."""
        piece = SGD(self.sgd.momentum, self.sgd.weight_decay) if piece is None else piece
        s = self.sampling
        return Sampled(piece, s.participation, s.sample_seed, s.selection, self.selector)

    def server_dict(self) -> dict[str, Any]:
        """The server's hyper-parameters as recorded in the run config (``participation``,
        ``sample_seed``, ``selection`` when not ``"uniform"``, so that a uniform run keeps
        its hash, and ``weighting``: after the algorithm's own)."""
        s = self.sampling
        chosen: dict[str, Any] = {} if s.selection == "uniform" else {"selection": s.selection}
        if s.candidates is not None:  # recorded only when given: earlier runs keep their hash
            chosen["candidates"] = s.candidates
        if s.loss_at != "server":  # recorded only off its default, likewise
            chosen["loss_at"] = s.loss_at
        return dict(participation=s.participation, sample_seed=s.sample_seed, **chosen,
                    weighting=self.weighting)

    def as_dict(self: ServerParams[LocalSGD]) -> dict[str, Any]:
        """The hyper-parameters of a one-phase baseline (the FedAvg family) as recorded in
        the run config: the local SGD's, then the server's."""
        return dict(self.sgd.as_dict(), **self.server_dict())


def server_params(sgd: S, sampling: Sampling, weighting: Any) -> ServerParams[S]:
    """The checked record a server baseline builds from: its local optimiser ``sgd``
    (resolved; a :class:`~topofl.algorithms.hparams.LocalSGD` without ``local_steps`` or
    ``local_epochs``: one step), its ``sampling`` and its ``weighting`` (one of
    :data:`~topofl.algorithms.hparams.WEIGHTINGS`); with ``selection="loss"`` and
    ``participation < 1``, a fresh :class:`~topofl.engine.pieces.participation.LossSelection`
    (its ``selector``)."""
    s = sampling.resolved()
    selector = (LossSelection(s.participation, s.sample_seed, candidates=s.candidates,
                              at=s.loss_at)
                if s.selection == "loss" and s.participation < 1.0 else None)
    return ServerParams(sgd.resolved(), s, check_weighting(weighting), selector)


def _choosing(hp: ServerParams[Any], round_start: Any, communicate: Any, *,
              average: bool) -> tuple[Any, Any]:
    """``(round_start, communicate)`` that choose the round's clients by loss first
    (``hp.selector``'s ``start``, before ``round_start``: at the state the round starts from)
    and log the losses with what ``communicate`` sent; unchanged without a selector.

    ``average``: ``communicate`` is :func:`~topofl.engine.pieces.server_average` built with
    every client sampled (``participation=1``), whose participants are then the round's
    online clients: it is handed the round with ``online`` = the chosen clients that are
    online. A server step of its own reads them through :func:`server_round`."""
    sel = hp.selector
    if sel is None:
        return round_start, communicate

    def start(state: State, rnd: Round, env: Services) -> None:
        sel.start(state, rnd, env)
        if round_start is not None:
            round_start(state, rnd, env)

    def chosen(state: State, rnd: Round, env: Services) -> Sent:
        sel.keep(state, rnd, env)  # loss_at="trained": the trained rows, before the average
        sent: Sent = communicate(state, rnd._replace(online=sel.active(rnd, env.n))
                                 if average else rnd, env)
        return sent._replace(records={**(sent.records or {}), **sel.records(rnd)})

    return start, chosen


def _keeping(hp: ServerParams[Any], init: Any) -> Any:
    """``init``, followed with ``loss_at="trained"`` by the selector's ``init_`` (the copy of
    the starting rows it scores a client at until it takes part); unchanged otherwise."""
    sel = hp.selector
    if sel is None or sel.at == "server":
        return init

    def keeping(x0: Tensor, env: Services) -> State:
        state: State = init(x0, env)
        sel.init_(state)
        return state

    return keeping


def server_algorithm(name: str, hp: ServerParams[Any], hparams: dict[str, Any],
                     phases: tuple[Phase, ...], *, shared: Part = "body", evaluate: Any = None,
                     local: Any = None, init: Any = None, round_start: Any = None
                     ) -> Algorithm:
    """A server-based baseline: sampled local SGD (momentum restarted every round: by
    default :func:`~topofl.engine.pieces.restart_momentum`, or ``round_start``), then the
    server's average of ``shared``; it ignores the graph."""
    local = hp.sampled() if local is None else local
    s = hp.sampling
    average: Communicate = (
        server_average(shared, weighting=hp.weighting) if hp.selector is not None
        else server_average(shared, participation=s.participation,
                            sample_seed=s.sample_seed, weighting=hp.weighting,
                            selection=s.selection))
    start, communicate = _choosing(hp, restart_momentum() if round_start is None
                                   else round_start, average, average=True)
    return Algorithm(
        name=name,
        hparams=dict(hparams, **hp.server_dict()),
        phases=phases,
        init=_keeping(hp, compose_init(local) if init is None else init),
        local=local,
        communicate=communicate,
        evaluate=parameters if evaluate is None else evaluate,
        round_start=start,
        requires=None,
        shared=shared,
        decay=hp.sgd.decay,
        uses_topology=False,
        absent="server",
    )


#: checked local work: ``(steps, None)`` or ``(None, epochs)`` (:func:`check_work`)
Work = tuple[int | None, Epochs]


def same_head(x0: Any, env: Services) -> None:
    """``init`` check that gives every client the head of client 0 (the server's model)."""
    h = env.layout.cols("head")
    head = row(env.clients, x0[:, h], 0)  # from the process that holds client 0
    x0[:, h] = head.unsqueeze(0).expand(x0.shape[0], -1)


def fedavg_algorithm(name: str, hp: ServerParams[LocalSGD], *,
                     hparams: dict[str, Any] | None = None, local: Any = None,
                     evaluate: Any = None, round_start: Any = None, communicate: Any = None,
                     init: tuple[Any, ...] = ()) -> Algorithm:
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
    p, seed = hp.sampling.participation, hp.sampling.sample_seed
    sampled = p < 1.0
    average = communicate is None
    if average and hp.selector is not None:  # the chosen clients come as rnd.online
        communicate = server_average("all", weighting=hp.weighting)
    elif average and (sampled or hp.weighting != "uniform"):
        communicate = server_average("all", participation=p, sample_seed=seed,
                                     weighting=hp.weighting, selection=hp.sampling.selection)
    elif average:
        communicate = exact_average()
    round_start, communicate = _choosing(hp, round_start, communicate, average=average)
    piece = hp.sampled(sgd) if sampled else sgd
    fields: dict[str, Any] = {}
    if round_start is not None:
        fields["round_start"] = round_start
    return Algorithm(
        name=name,
        hparams=dict(hp.as_dict(), **(hparams or {})),
        phases=(Phase("all", hp.sgd.local_steps, hp.sgd.local_epochs, hp.sgd.lr),),
        init=_keeping(hp, compose_init(piece, *init)),
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


def server_round(hp: ServerParams[Any], state: State, rnd: Round, env: Services
                 ) -> ServerRound:
    """The round's participants (:func:`~topofl.engine.pieces.round_active`: sampled and
    online; with ``selection="loss"`` the ones ``hp.selector`` chose at the round's start)
    and their weights in the server's mean, on ``state.x``'s device and dtype."""
    x = state.x
    s = hp.sampling
    active = (hp.selector.active(rnd, env.n) if hp.selector is not None
              else round_active(rnd, env.n, s.participation, s.sample_seed, s.selection))
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


class Tuning(NamedTuple):
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
    def check(cls, finetune: Finetune, *, default_lr: float, default_steps: int = 1,
              part: Part = "all", stream: int = _FINETUNE_STREAM) -> Tuning:
        """A :class:`~topofl.algorithms.hparams.Finetune` group's ``finetune_steps``,
        ``finetune_epochs`` (one number; 0: no fine-tuning) and ``finetune_lr`` checked;
        neither steps nor epochs: ``default_steps`` steps, no ``finetune_lr``:
        ``default_lr``."""
        fs, fe = check_work(finetune.finetune_steps, finetune.finetune_epochs,
                            steps_name="finetune_steps", epochs_name="finetune_epochs",
                            default_steps=default_steps, allow_zero=True)
        if isinstance(fe, tuple):
            raise TypeError("finetune_epochs must be one number, not one per client")
        lr = finetune.finetune_lr
        flr = default_lr if lr is None else check_lr(lr, "finetune_lr")
        return cls(fs, fe, flr, part, stream)


def check_finetune(hp: ServerParams[LocalSGD], finetune: Finetune) -> Tuning:
    """The +FT baselines' fine-tuning: by default twice a round's local work (DPFL's
    "2 * tau local epochs"), at the local SGD's learning rate."""
    if finetune.finetune_steps is None and finetune.finetune_epochs is None:
        if isinstance(hp.sgd.local_epochs, tuple):
            raise ValueError(
                "with local_epochs given per client, give finetune_steps or finetune_epochs "
                "explicitly (the default is twice a round's local work)"
            )
        if hp.sgd.local_epochs is not None:
            finetune = finetune.with_keywords(finetune_epochs=2 * hp.sgd.local_epochs)
        else:
            finetune = finetune.with_keywords(finetune_steps=2 * (hp.sgd.local_steps or 1))
    return Tuning.check(finetune, default_lr=hp.sgd.lr)


__all__ = ["ServerParams", "server_params", "server_algorithm", "Work", "same_head", "State",
           "fedavg_algorithm", "ServerRound", "server_round", "server_sums", "Tuning",
           "check_finetune"]
