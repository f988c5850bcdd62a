r"""Differential privacy as an option of a gossip algorithm: :func:`with_noisy_updates`.

Any built algorithm whose state keeps no record of its own (D-SGD, D-SGD with momentum, a
robust aggregator or local epochs, EL, DFedAvgM ...) gets its round update clipped and noised
before it communicates (:class:`~topofl.engine.pieces.privacy.NoisyUpdates`), its
hyper-parameters the ``dp_*`` settings, and its records the spend after every round
(``dp_epsilon``, against any observer: :func:`topofl.privacy.noisy_updates_spend`) and the
fraction of clients clipped (``dp_clipped``). With ``correlated > 0`` the noise is DECOR's
(Allouah et al., ICML 2024): neighbours of the round's graph share pairwise draws that cancel
in the sum over the nodes, and ``dp_epsilon`` is the largest over the nodes of
:func:`topofl.privacy.correlated_noise_spend` against an eavesdropper of every message, no
node colluding. By name, in :func:`topofl.run` or a config file, ``dp_clip`` and ``dp_noise``
(with ``dp_seed``, ``dp_delta`` and ``dp_correlated``) beside a registered algorithm's keys
build the same algorithm (:func:`topofl.algorithms.get_algorithm`): the same run and run hash.

Examples
--------
>>> import topofl as tf
>>> algo = with_noisy_updates(tf.algorithms.dsgd(lr=0.1), clip=1.0, noise=8.0)
>>> res = tf.run(algo, "ring", rounds=16, n_clients=8, spectral=False)
>>> round(float(res.records.series("dp_epsilon")[1][-1]), 3)   # mu = 2 sqrt(16) / 8 = 1
4.377
>>> decor = with_noisy_updates(tf.algorithms.dsgd(lr=0.1), clip=1.0, noise=8.0, correlated=16.0)
>>> res = tf.run(decor, "ring", rounds=16, n_clients=8, spectral=False)
>>> round(float(res.records.series("dp_epsilon")[1][-1]), 3)   # the ring's pair noise: mu 0.502
2.002
"""

from __future__ import annotations

from typing import Any

from topofl._utils.validation import check_int, check_real
from topofl.engine.pieces.privacy import NoisyUpdates
from topofl.engine.protocol import Algorithm, Round, Services, State
from topofl.privacy.conversions import check_delta

__all__ = ["with_noisy_updates"]


def with_noisy_updates(algorithm: Algorithm, clip: Any, noise: Any, *, seed: Any = 0,
                       delta: Any = 1e-5, correlated: Any = 0.0) -> Algorithm:
    r"""``algorithm`` with each client's round update clipped to ``clip`` and noised.

    Parameters
    ----------
    algorithm : Algorithm
        A built algorithm that communicates its models and keeps no state record of its own
        (``State.own``); Clique Averaging, which also sends gradients, is refused.
    clip : float
        ``C > 0``: the l2 norm a client's update of a round is clipped to.
    noise : float
        ``sigma > 0``: the noise multiplier; the noise's standard deviation is ``sigma C``.
    seed : int, default 0
        The noise's seed (row ``r`` of round ``t`` draws from ``(seed, STREAM, t, id_r)``).
    delta : float, default 1e-5
        The ``delta`` of the recorded ``dp_epsilon``.
    correlated : float, default 0.0
        ``sigma_cor >= 0``: DECOR's pair noise, of standard deviation ``sigma_cor C`` per pair
        of neighbours (pair ``(i, j)``, ``i < j``, of round ``t`` draws from
        ``(seed, STREAM_PAIR, t, i, j)``); ``dp_epsilon`` is then the largest over the nodes
        of :func:`topofl.privacy.correlated_noise_spend` against an eavesdropper with no
        colluders. ``0``: none (the algorithm, its draws and its ``hparams`` those without
        the option).

    Returns
    -------
    Algorithm
        Its ``hparams`` followed by ``dp_clip``, ``dp_noise``, ``dp_seed`` and ``dp_delta``
        (and ``dp_correlated`` when above 0); it does not stack (one run per pass).

    Raises
    ------
    TypeError
        ``algorithm`` is not an :class:`~topofl.engine.Algorithm`.
    ValueError
        A non-positive ``clip`` or ``noise``, a negative ``correlated``; ``correlated`` with an
        algorithm that uses no graph; an algorithm with Clique Averaging, or one whose state
        already keeps a record (found when the run builds its state).
    """
    if not isinstance(algorithm, Algorithm):
        raise TypeError(f"with_noisy_updates takes a built Algorithm (tf.algorithms.dsgd(...)), "
                        f"got {type(algorithm).__name__}")
    if algorithm.hparams.get("clique_averaging"):
        raise ValueError("with_noisy_updates does not combine with Clique Averaging: its "
                         "gradients are sent unclipped and without noise")
    cor = check_real(correlated, "correlated", low=0)
    if cor > 0 and not algorithm.uses_topology:
        raise ValueError(f"correlated noise is drawn per edge of the round's graph: "
                         f"{algorithm.name} uses no graph")
    piece = NoisyUpdates(check_real(clip, "clip", low=0, low_open=True),
                         check_real(noise, "noise", low=0, low_open=True),
                         check_int(seed, "seed", low=0), check_delta(delta), cor)
    inner_init, inner_start = algorithm.init, algorithm.round_start

    def init(x0: Any, env: Services) -> State:
        state = inner_init(x0, env)
        piece.init_(state, env)
        return state

    def round_start(state: State, rnd: Round, env: Services) -> None:
        inner_start(state, rnd, env)
        piece.round_start(state, rnd, env)

    hparams = dict(algorithm.hparams, dp_clip=piece.clip, dp_noise=piece.noise,
                   dp_seed=piece.seed, dp_delta=piece.delta)
    if cor > 0:  # only when used: the runs without it keep their hyper-parameters and hash
        hparams["dp_correlated"] = cor
    return algorithm._replace(hparams=hparams, init=init, round_start=round_start,
                              communicate=piece.wrap(algorithm.communicate),
                              stacks="an algorithm with noisy updates does not stack")
