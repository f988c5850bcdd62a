r"""The static exponential graph of Ying et al. (2021): node ``i`` sends to ``i + 2^k mod n``
for ``k = 0..tau-1``, ``tau = ceil(log2 n)``.
"""

from __future__ import annotations

from topofl._utils.validation import check_int
from topofl.graph import Topology
from topofl.graph.checks import check_w_size
from topofl.topologies.exponential._common import _ceil_log2, _circulant, _with_weights

__all__ = ["exponential"]


def exponential(n: int) -> Topology:
    r"""Static exponential graph: node ``i`` sends to ``i + 2^k mod n``, ``k = 0..tau-1``.

    With ``tau = ceil(log2 n)`` out-neighbours per node, every weight (the self-weight included)
    is ``1 / (tau + 1)``, so ``W`` is a circulant, doubly stochastic, non-symmetric matrix
    (the graph is directed for ``n >= 4``: ``i -> i + 1`` has no reverse arc).

    Parameters
    ----------
    n : int
        Number of nodes, ``n >= 2``; each sends to ``tau = ceil(log2 n)`` others.

    Returns
    -------
    Topology
        ``name="exponential"``, ``weights="uniform"`` (each node averages itself and its ``tau``
        in-neighbours uniformly; in- and out-degrees are all ``tau``).

    Raises
    ------
    TypeError, ValueError
        If ``n`` is not an int ``>= 2``.

    Notes
    -----
    The eigenvalues of a circulant matrix are $\lambda_\ell = (1 + \sum_k \omega^{\ell 2^k})
    / (\tau + 1)$ with $\omega = e^{-2\pi i / n}$. For even ``n`` the largest modulus after
    $\lambda_0 = 1$ is attained at $\ell = n/2$, $\lambda_{n/2} = (\tau - 1)/(\tau + 1)$, so the
    spectral gap is $2 / (1 + \lceil\log_2 n\rceil)$ [1]_: it decays only logarithmically with
    ``n`` for ``O(log n)`` messages per node and round.

    References
    ----------
    .. [1] B. Ying et al., "Exponential graph is provably efficient for decentralized deep
       training", NeurIPS 2021, Lemma 1.

    Examples
    --------
    >>> t = tf.topologies.exponential(8)
    >>> t.in_degree.tolist(), float(t.W[0, 7]), t.is_doubly_stochastic
    ([3, 3, 3, 3, 3, 3, 3, 3], 0.25, True)
    >>> tf.spectral.spectral_gap(t)  # 2 / (1 + log2 8)
    0.5
    """
    n = check_int(n, "n", low=2)
    tau = _ceil_log2(n)
    check_w_size(n, n * tau, f"exponential(n={n})")
    w = 1.0 / (tau + 1)  # every arc and, what the row leaves, the node itself
    W = _circulant(n, [*(1 << k for k in range(tau)), 0], [w] * tau + [1.0 - tau * w])
    top = Topology.from_matrix(W, name="exponential", params={"n": n})
    return _with_weights(top, "uniform")
