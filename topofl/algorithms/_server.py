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
* Messages per round: ``2 m`` with ``m`` participants (upload and download of the communicated
  part: the body, or Ditto's whole global model).
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
from typing import Any

from topofl.algorithms._common import ServerParams, check_server
from topofl.engine.pieces import SGD, Sampled, compose_init, restart_momentum, server_average
from topofl.engine.protocol import Algorithm, Part, Phase, Services, State, parameters


def server_algorithm(name: str, hp: ServerParams, hparams: dict[str, Any],
                     phases: tuple[Phase, ...], *, shared: Part = "body", evaluate: Any = None,
                     local: Any = None, init: Any = None, extra_momentum: str = "") -> Algorithm:
    """A server-based baseline: sampled local SGD (momentum restarted every round), then the
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
        round_start=restart_momentum(*((extra_momentum,) if extra_momentum else ())),
        requires=None,
        shared=shared,
        decay=hp.decay,
        uses_topology=False,
    )


_KW = inspect.Parameter.KEYWORD_ONLY
#: the keywords every server baseline takes, with their defaults, after ``lr`` and its own
_SHARED = (("momentum", 0.0, float), ("weight_decay", 0.0, float), ("decay", 1.0, float),
           ("participation", 1.0, float), ("sample_seed", 0, int), ("weighting", "uniform", str))


def server_factory(build: Callable[..., Algorithm]) -> Callable[..., Algorithm]:
    """Turn ``build(hp: ServerParams, *, <its own keywords>)`` into a factory taking ``lr``, its
    own keywords and the shared ones (``momentum``, ``weight_decay``, ``decay``,
    ``participation``, ``sample_seed``, ``weighting``), checked with :func:`check_server`.

    The factory's ``inspect.signature`` lists every keyword (``topofl.run`` validates against
    it); an unknown keyword is a ``TypeError``.
    """
    own = list(inspect.signature(build).parameters.values())[1:]
    lr = inspect.Parameter("lr", inspect.Parameter.POSITIONAL_OR_KEYWORD, default=0.1,
                           annotation="float")
    shared = [inspect.Parameter(k, _KW, default=d, annotation=t.__name__)
              for k, d, t in _SHARED]
    sig = inspect.Signature([lr, *own, *shared], return_annotation="Algorithm")

    def factory(*args: Any, **kwargs: Any) -> Algorithm:
        bound = sig.bind(*args, **kwargs)
        bound.apply_defaults()
        kw = dict(bound.arguments)
        hp = check_server(kw.pop("lr"), *(kw.pop(k) for k, _, _ in _SHARED))
        return build(hp, **kw)

    factory.__signature__ = sig  # type: ignore[attr-defined]  # read by inspect.signature
    factory.__name__ = factory.__qualname__ = build.__name__
    factory.__doc__, factory.__module__ = build.__doc__, build.__module__
    return factory


def same_head(x0: Any, env: Services) -> None:
    """``init`` check that gives every client the head of client 0 (the server's model)."""
    h = env.layout.cols("head")
    shard = getattr(env, "shard", None)  # a distributed run: client 0 may be on another rank
    head = x0[0, h].clone() if shard is None else shard.row(x0[:, h], 0)
    x0[:, h] = head.unsqueeze(0).expand(x0.shape[0], -1)


__all__ = ["server_algorithm", "server_factory", "same_head", "State"]
