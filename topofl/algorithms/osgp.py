r"""Overlap SGP (OSGP): push-sum whose messages arrive one round late.

References
----------
.. [1] M. Assran, N. Loizou, N. Ballas, M. Rabbat, "Stochastic Gradient Push for Distributed Deep
   Learning", ICML 2019 (OSGP, Algorithm 2 with one round of overlap).
.. [2] Y. Liu et al., "Decentralized directed collaboration for personalized federated learning"
   (DFedPGP), CVPR 2024: OSGP is the "full personalization, directed" cell of its Table 4.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from topofl._utils.validation import check_bool
from topofl.algorithms.base import register_algorithm
from topofl.algorithms.hparams import Keywords, LocalSGD, Sampling
from topofl.algorithms.sgp import SGPKeywords, push_sum_sgd
from topofl.engine.pieces import restart_momentum as _restart
from topofl.engine.pieces import with_participation
from topofl.engine.protocol import Algorithm

if TYPE_CHECKING:  # Unpack is typing's from Python 3.11; only the type checker reads it
    from typing_extensions import Unpack

__all__ = ["osgp"]

#: OSGP's default groups (SGP's: one local step, no momentum, every client active)
_SGD, _EVERY_CLIENT = LocalSGD(), Sampling()


@register_algorithm("osgp")
def osgp(sgd: LocalSGD | float = _SGD, sampling: Sampling = _EVERY_CLIENT, *,
         restart_momentum: bool = False, **keywords: Unpack[SGPKeywords]) -> Algorithm:
    r"""Overlap SGP: messages sent at round ``t`` are received at round ``t + 1``.

    A node never waits for its in-neighbours: it keeps $W_{jj} x_j$ at once and adds what it
    received from the previous round's sends. The total mass $\sum_i x_i$ plus the mass in
    flight is preserved, and so is $\sum_i w_i$ plus the weights in flight (which sum to ``n``).
    Takes the local-SGD keywords of :func:`~topofl.algorithms.dsgd`.
    ``participation`` < 1 makes a sampled fraction of the clients active per round (the
    others neither train nor communicate: :func:`~topofl.engine.pieces.with_participation`).

    Parameters
    ----------
    sgd : LocalSGD or float, default ``LocalSGD()``
        The local SGD of a round (a number: its learning rate, ``osgp(0.5)``); its fields are
        also taken flat, as below.
    sampling : Sampling, default ``Sampling()``
        The clients active per round (default: all); its fields are also taken flat.
    lr, momentum, weight_decay, local_steps, local_epochs, decay
        As in :func:`~topofl.algorithms.sgp` (default: one local step, no momentum).
    participation, sample_seed
        The fraction of clients active per round and the seed of its draws (default: all).
    restart_momentum : bool, default False
        Zero the momentum buffers at the start of every round, as a client that builds a
        fresh local optimizer each round does (DFedPGP's "local momentum", the rule of
        :func:`~topofl.algorithms.dfedpgp`, :func:`~topofl.algorithms.dfedavgm` and
        :func:`~topofl.algorithms.dfedavgm_p`: use it for the four cells of DFedPGP's Table 4
        to share one optimizer rule). ``False`` keeps one optimizer across rounds, as SGP's
        Algorithm 1 (one step per round) does.

    Notes
    -----
    **Instability with several local steps per round.** The gradient is taken at
    $z = x / w$ and applied to the numerator $x$ (Assran et al., Algorithm 1, line 5), so a
    step of size $\eta$ moves $z$ by $\eta / w$. SGP keeps the mean weight at 1. With the
    overlap, a node with $k$ out-neighbours keeps only $1/(k+1)$ of its mass and weight and
    receives the rest of its mass one round later. After round 0 nothing has arrived yet:
    every $w = 1/(k+1)$ and every local step of round 1 moves $z$ by $(k+1)\eta$. The resident
    weight then oscillates (the recursion $R' = R/(k+1) + F$, $F' = kR/(k+1)$ has eigenvalues
    1 and $-k/(k+1)$: $1/(k+1)$, $1/(k+1)^2 + k/(k+1)$, ...) and settles at
    $(k+1)/(2k+1)$, about 0.52 for $k = 10$, hence steps about $1.9\times$ larger than SGP's.
    With one step per round (Assran et al.'s setting, $k = 1$: $w = 1/2$ once, then
    $2/3$) this is harmless; with $k = 10$ and 5 local epochs with momentum 0.9 per round
    (DFedPGP's Table 4 setting) round 1 takes about 5 epochs at $11\eta$, and a momentum
    kept across rounds carries that step on. Both are properties of the algorithm (tested
    with hand-computed steps in ``tests/algorithms/test_osgp_delay.py``), not an error of
    the implementation: mass and weight are conserved exactly.

    Measured with ``python analysis/osgp_instability.py`` (digits, 100 clients,
    pathological(2), MLP(64), ``random_directed_push:k=10``, lr 0.1 decayed 0.99 per round,
    weight decay 5e-3, momentum 0.9, batch 16; mean personalized test accuracy after 30
    rounds, seeds 0, 1, 2; ``analysis/osgp_instability.md``): with 5 local epochs per round
    SGP reaches 0.929, 0.904, 0.936, while OSGP falls from 0.66-0.68 after round 1 (the
    local models: nothing has arrived) to 0.17-0.18 after round 2, stays below 0.3 up to
    round 8 and recovers only to 0.625, 0.468, 0.742, its accuracy alternating from round to
    round with the weights; restarting the momentum every round lifts it to 0.816, 0.811,
    0.785. With 1 local step per round the gap shrinks (SGP 0.820, 0.795,
    0.785; OSGP 0.728, 0.708, 0.720). So the one-round delay is the cause when a round is
    several local epochs, amplified by a momentum kept across rounds.

    Examples
    --------
    >>> tf.algorithms.osgp(lr=0.1).requires
    'column'
    >>> tf.algorithms.osgp(momentum=0.9, restart_momentum=True).hparams["restart_momentum"]
    True
    """
    kw = Keywords("osgp", keywords)
    hp, active = kw.take(sgd, _SGD).resolved(), kw.take(sampling)
    kw.done()
    restart = check_bool(restart_momentum, "restart_momentum")
    algo = push_sum_sgd("osgp", True, hp)
    algo = algo._replace(hparams={**hp.as_dict(), "restart_momentum": restart})
    if restart:
        algo = algo._replace(round_start=_restart())
    return with_participation(algo, *active.checked())
