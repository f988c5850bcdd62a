"""FedRep: many local updates of the head, then a few of the shared representation."""

from __future__ import annotations

from topofl.algorithms._common import ServerParams, check_lr, check_work
from topofl.algorithms._server import server_algorithm, server_factory
from topofl.algorithms.base import register_algorithm
from topofl.engine.protocol import Algorithm, Phase

__all__ = ["fedrep"]


@register_algorithm("fedrep")
@server_factory
def fedrep(
    hp: ServerParams,
    *,
    head_lr: float | None = None,
    head_steps: int | None = None,
    head_epochs: float | tuple[float, ...] | None = None,
    body_steps: int | None = None,
    body_epochs: float | tuple[float, ...] | None = None,
) -> Algorithm:
    r"""FedRep: many local updates of the head, then a few of the shared representation.

    Each round a participating client first trains its head $h_i$ with the body frozen at the
    server's representation $\phi^t$, then trains the body with its new head frozen; the server
    averages the bodies (Collins et al., Algorithm 1).

    Parameters
    ----------
    lr : float, default 0.1
        Learning rate of the body (``lr * decay**t`` at round ``t``).
    head_lr : float, optional
        Learning rate of the head (default ``lr``: Algorithm 1 uses one step size $\alpha$).
    momentum : float, default 0
        Heavy-ball momentum of the local SGD (restarted every round).
    weight_decay : float, default 0
    head_steps, head_epochs
        Head updates per round $\tau_h$: steps (default 10) or epochs.
    body_steps, body_epochs
        Body updates per round: steps (default 1) or epochs.
    decay : float, default 1
    participation : float in (0, 1], default 1
        Fraction of clients sampled each round (Algorithm 1's participation rate $r$).
    sample_seed : int, default 0
    weighting : {"uniform", "data_size"}, default "uniform"
        Algorithm 1 averages uniformly, $\phi^{t+1} = \frac{1}{rn}\sum_i \phi_i^{t}$.

    Returns
    -------
    Algorithm
        Two phases, ``"head"`` then ``"body"``; ``shared="body"``, ``uses_topology=False``.

    Notes
    -----
    In their experiments Collins et al. run ten local epochs of SGD with momentum on the head,
    then one or five epochs on the representation; ``head_epochs=10, body_epochs=1`` gives that
    setting. The defaults keep the same 10 : 1 ratio in *steps*, the unit of every other topofl
    algorithm's default. The head keeps its value across rounds (it starts round ``t`` where
    round ``t - 1`` left it); messages: ``2 m`` per round of ``P_body`` numbers each.

    References
    ----------
    .. [1] L. Collins, H. Hassani, A. Mokhtari, S. Shakkottai, "Exploiting shared
       representations for personalized federated learning", ICML 2021.

    Examples
    --------
    >>> algo = tf.algorithms.fedrep(lr=0.05)
    >>> [(p.name, p.part, p.steps) for p in algo.phases]
    [('head', 'head', 10), ('body', 'body', 1)]
    >>> algo.shared, algo.uses_topology
    ('body', False)
    """
    hlr = hp.lr if head_lr is None else check_lr(head_lr, "head_lr")
    hs, he = check_work(head_steps, head_epochs, steps_name="head_steps",
                        epochs_name="head_epochs", default_steps=10)
    bs, be = check_work(body_steps, body_epochs, steps_name="body_steps",
                        epochs_name="body_epochs")
    return server_algorithm(
        "fedrep", hp,
        dict(lr=hp.lr, head_lr=hlr, momentum=hp.momentum, weight_decay=hp.weight_decay,
             head_steps=hs, head_epochs=he, body_steps=bs, body_epochs=be, decay=hp.decay),
        (Phase("head", hs, he, hlr, name="head"), Phase("body", bs, be, hp.lr, name="body")),
    )
