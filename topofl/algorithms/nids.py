r"""NIDS: a decentralized (proximal-)gradient method whose step sizes do not depend on the network.

Without the non-smooth term, NIDS is exact diffusion's recursion
(:mod:`topofl.algorithms.exact_diffusion`, whose pieces it shares) started by a plain
gradient step with no mix.

References
----------
.. [1] Z. Li, W. Shi, M. Yan, "A decentralized proximal-gradient method with network
   independent step-sizes and separated convergence rates", IEEE Trans. Signal Process.
   67(17), 2019.
"""

from __future__ import annotations

from topofl.algorithms.base import register_algorithm
from topofl.algorithms.exact_diffusion import DiffusionState, diffusion_algorithm
from topofl.engine.protocol import Algorithm

__all__ = ["nids", "DiffusionState"]


@register_algorithm("nids")
def nids(
    lr: float = 0.1,
    *,
    gamma: float = 0.5,
    weight_decay: float = 0.0,
    decay: float = 1.0,
) -> Algorithm:
    r"""NIDS (Li, Shi & Yan 2019): network-independent step sizes, exact with a constant step.

    With $g$ the clients' (stochastic) gradients, $\alpha$ the step (the same on every
    client), $W$ symmetric and doubly stochastic and $\tilde W = I - \gamma (I - W)$ (the
    paper's $I - c\alpha (I - W)$ with $\gamma = c \alpha$; the default $\gamma = 1/2$ is
    $(I + W)/2$), the paper's algorithm without its non-smooth term ($r_i = 0$, so its
    proximal step is the identity and $x = z$) is

    $x_1 = x_0 - \alpha\, g(x_0)$,
    $\;x_{t+1} = \tilde W \big(2 x_t - x_{t-1} - \alpha\,(g(x_t) - g(x_{t-1}))\big)$.

    It is computed as exact diffusion is (:func:`~topofl.algorithms.exact_diffusion`):
    $\psi_{t+1} = x_t - \alpha g(x_t)$ and $x_{t+1} = \tilde W (x_t + \psi_{t+1} - \psi_t)$
    from $\psi_0 = x_0$, except that round 0 does not combine ($x_1 = \psi_1$, nothing
    sent). Summed over clients $\sum_i (x_{t,i} - \psi_{t,i}) = 0$ at every round, so with
    full gradients and a constant step the fixed point is consensus at the exact optimum of
    $\sum_i f_i$; the paper's step bound $\alpha < 2/L$ does not depend on $W$ (with
    $\tilde W \succeq 0$, i.e. $\gamma \le 1/(1 - \lambda_{\min}(W))$).

    Parameters
    ----------
    lr : float, default 0.1
        The step $\alpha$ (``lr * decay**t`` at round ``t``).
    gamma : float in (0, 1], default 0.5
        The combination $\tilde W = I - \gamma (I - W)$, the paper's $c\alpha$.
    weight_decay : float, default 0
        Added to the gradient ($g_i + \lambda x_i$).
    decay : float, default 1

    Returns
    -------
    Algorithm
        One local step per round; ``requires="doubly"`` and a symmetric ``W`` at every round
        (checked: a ``ValueError`` otherwise); ``state.own`` is a
        :class:`~topofl.algorithms.exact_diffusion.DiffusionState`.

    Notes
    -----
    Messages: none in round 0, then $2 x_t - x_{t-1} - \alpha (g(x_t) - g(x_{t-1}))$ on
    every arc, one per arc and round, as D-SGD's model. decent-bench 0.3.0's ``NIDS``
    (uniform steps, $(I + W)/2$) gives this function's iterates at ``gamma=0.5`` to 1e-10 on
    its regression problem (``tests/algorithms/test_decentbench.py``). The paper's
    uncoordinated per-client steps $\alpha_i$ and its proximal term are not offered. A
    client absent from a round (``[availability]``) keeps its model and $\psi$.

    References
    ----------
    .. [1] Z. Li, W. Shi, M. Yan, "A decentralized proximal-gradient method with network
       independent step-sizes and separated convergence rates", IEEE Trans. Signal Process.
       67(17), 2019 (NIDS with $r_i = 0$ and a step common to all agents).

    Examples
    --------
    Client ``i`` minimises $a_i (x - b_i)^2 / 2$; the optimum of the sum is
    $\sum a_i b_i / \sum a_i = 2$, reached exactly with a constant step.

    >>> import torch
    >>> a = torch.tensor([[1.0], [2.0], [1.0], [4.0]], dtype=torch.float64)
    >>> b = torch.tensor([[0.0], [1.0], [2.0], [3.0]], dtype=torch.float64)
    >>> trace = tf.engine.run_rounds(tf.algorithms.nids(lr=0.1), torch.zeros_like(b),
    ...     tf.topologies.ring(4), lambda z, phase, rnd: a * (z - b), rounds=400)
    >>> [round(v, 8) for v in trace.evaluated().flatten().tolist()]
    [2.0, 2.0, 2.0, 2.0]
    """
    return diffusion_algorithm("nids", lr, gamma, weight_decay, decay,
                               first_round_mixes=False)
