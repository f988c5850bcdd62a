r"""Differential privacy as an option of a gossip algorithm: :func:`with_noisy_updates` (a
round's update clipped and noised) and :func:`with_dp_sgd` (DP-SGD in every local step).

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
from topofl.engine.pieces.dpsgd import DPSGD, guard_data
from topofl.engine.pieces.privacy import NoisyUpdates
from topofl.engine.protocol import Algorithm, Round, Sent, Services, State
from topofl.privacy.conversions import check_delta

__all__ = ["with_dp_sgd", "with_noisy_updates"]


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
        algorithm that uses no graph; an algorithm with DP-SGD (:func:`with_dp_sgd`); one with
        Clique Averaging, or one whose state
        already keeps a record (found when the run builds its state).
    """
    if not isinstance(algorithm, Algorithm):
        raise TypeError(f"with_noisy_updates takes a built Algorithm (tf.algorithms.dsgd(...)), "
                        f"got {type(algorithm).__name__}")
    if algorithm.hparams.get("clique_averaging"):
        raise ValueError("with_noisy_updates does not combine with Clique Averaging: its "
                         "gradients are sent unclipped and without noise")
    if "dpsgd_clip" in algorithm.hparams:
        raise ValueError(f"{algorithm.name} has DP-SGD already (with_dp_sgd): the two "
                         "spends do not add up here")
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


def with_dp_sgd(algorithm: Algorithm, clip: Any, noise: Any, *, seed: Any = 0,
                delta: Any = 1e-5) -> Algorithm:
    r"""``algorithm`` with DP-SGD's gradient in every local step (Abadi et al., CCS 2016).

    Each client's gradient of a local step becomes ``(sum_j clip_C(g_j) + N(0, sigma^2 C^2
    I)) / b`` over its batch's ``b`` per-sample gradients ``g_j``, each clipped to l2 norm
    ``C`` (:class:`~topofl.engine.pieces.dpsgd.DPSGD`); the algorithm's own local update (SGD,
    momentum, a proximal term ...) applies it, and its communication is unchanged
    (post-processing). After every round the records hold ``dp_epsilon``, the record-level
    spend of every local step so far (:func:`topofl.privacy.dp_sgd_spend`, the PRV
    accountant, within 0.1), and ``dp_clipped``, the fraction of the round's per-sample
    gradients that were clipped. Batches (``b`` draws with replacement from a client's ``m``
    samples) are accounted as Poisson subsampling at rate ``q = b / m``, the usual
    approximation (opacus does the same for shuffled batches), at the largest rate of any
    client (the smallest ``m``); the spend is against an observer of everything a client
    sends, every round.

    Parameters
    ----------
    algorithm : Algorithm
        A built algorithm whose local update applies a gradient (``update``).
    clip : float
        ``C > 0``: the l2 norm each per-sample gradient is clipped to.
    noise : float
        ``sigma > 0``: the noise multiplier; the summed gradient's noise has std ``sigma C``.
    seed : int, default 0
        The noise's seed (row ``r`` of round ``t``, local step ``s`` draws from
        ``(seed, STREAM, t, s, id_r)``: the same under resumption).
    delta : float, default 1e-5
        The ``delta`` of the recorded ``dp_epsilon``.

    Returns
    -------
    Algorithm
        Its ``hparams`` followed by ``dpsgd_clip``, ``dpsgd_noise``, ``dpsgd_seed`` and
        ``dpsgd_delta``; it does not stack (one run per pass).

    Raises
    ------
    TypeError
        ``algorithm`` is not an :class:`~topofl.engine.Algorithm`.
    ValueError
        A non-positive ``clip`` or ``noise``; an algorithm with DP already
        (:func:`with_noisy_updates` or this); a local update without ``update`` (a fused
        kernel alone). When the run starts: a model with batch normalization (its loss is not
        a sum over the samples), a batch larger than the smallest client's training set (no
        rate ``q <= 1``), and an algorithm that reads its clients' data outside the local
        step (``env.local_train``, ``env.losses`` ...: DPFL, GGC, the evaluation-time
        fine-tuning of the ``+FT`` baselines ...), whose reads DP-SGD does not account.

    Examples
    --------
    >>> import topofl as tf
    >>> algo = with_dp_sgd(tf.algorithms.dsgd(lr=0.1), clip=1.0, noise=1.0)
    >>> res = tf.run(algo, "ring", rounds=4, n_clients=4, spectral=False)
    >>> eps = res.records.series("dp_epsilon")[1]
    >>> bool(eps[0] < eps[-1]), 0.0 <= float(res.records.series("dp_clipped")[1][-1]) <= 1.0
    (True, True)
    """
    if not isinstance(algorithm, Algorithm):
        raise TypeError(f"with_dp_sgd takes a built Algorithm (tf.algorithms.dsgd(...)), "
                        f"got {type(algorithm).__name__}")
    local = algorithm.local
    if "dp_clip" in algorithm.hparams or "dpsgd_clip" in algorithm.hparams \
            or getattr(local, "take_gradient", None) is not None:
        raise ValueError(f"{algorithm.name} already has differential privacy "
                         "(with_noisy_updates or with_dp_sgd): their spends do not add up here")
    if not callable(getattr(local, "update", None)):
        raise ValueError(f"with_dp_sgd needs a local update that applies a gradient "
                         f"(update): {type(local).__name__} of {algorithm.name} has none")
    name = algorithm.name
    piece = DPSGD(local, check_real(clip, "clip", low=0, low_open=True),
                  check_real(noise, "noise", low=0, low_open=True),
                  check_int(seed, "seed", low=0), check_delta(delta), name)
    inner_init, inner_start = algorithm.init, algorithm.round_start
    inner_comm, inner_eval = algorithm.communicate, algorithm.evaluate

    def init(x0: Any, env: Services) -> State:
        piece.start_run()
        return inner_init(x0, guard_data(env, name))

    def round_start(state: State, rnd: Round, env: Services) -> None:
        piece.round_start(rnd)
        inner_start(state, rnd, guard_data(env, name))

    def communicate(state: State, rnd: Round, env: Services) -> Sent:
        sent: Sent = inner_comm(state, rnd, guard_data(env, name))
        return sent._replace(records={**(sent.records or {}), **piece.records(rnd, env)})

    def evaluate(state: State, rnd: Round, env: Services) -> Any:
        return inner_eval(state, rnd, guard_data(env, name))

    extra: dict[str, Any] = {}
    if algorithm.predict is not None:
        inner_predict = algorithm.predict

        def predict(x: Any, rnd: Round, env: Services) -> Any:
            return inner_predict(x, rnd, guard_data(env, name))

        extra["predict"] = predict
    hparams = dict(algorithm.hparams, dpsgd_clip=piece.clip, dpsgd_noise=piece.noise,
                   dpsgd_seed=piece.seed, dpsgd_delta=piece.delta)
    return algorithm._replace(hparams=hparams, init=init, round_start=round_start,
                              local=piece, communicate=communicate, evaluate=evaluate,
                              stacks="an algorithm with DP-SGD does not stack", **extra)
