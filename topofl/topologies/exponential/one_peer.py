r"""The one-peer exponential graph of Ying et al. (2021): at round ``t`` node ``i`` sends only to
``i + 2^(t mod tau)``; the product of ``tau`` rounds is exactly $\mathbf{1}\mathbf{1}^\top/n$
when ``n`` is a power of two.
"""

from __future__ import annotations

from topofl._utils.validation import check_int
from topofl.graph import TimeVarying, Topology
from topofl.graph.checks import check_w_size
from topofl.topologies.exponential._common import _ceil_log2, _circulant, _with_weights

__all__ = ["one_peer_exponential"]


def one_peer_exponential(n: int) -> TimeVarying:
    r"""One-peer exponential graph: at round ``t`` node ``i`` sends to ``i + 2^(t mod tau)``.

    ``tau = ceil(log2 n)`` and the period of the sequence is ``tau``. Each round every node
    averages itself and its single in-neighbour ``i - 2^(t mod tau)`` with weights 1/2, so each
    ``W(t) = (I + P_t)/2`` is doubly stochastic (``P_t`` a cyclic shift) and each node sends
    and receives exactly one message per round.

    Parameters
    ----------
    n : int
        Number of nodes, ``n >= 2``; the sequence repeats every ``tau = ceil(log2 n)`` rounds.

    Returns
    -------
    TimeVarying
        Period ``tau``; ``at(t)`` has ``name="one_peer_exponential"``.

    Raises
    ------
    TypeError
        If ``n`` is not an int.
    ValueError
        If ``n < 2``.
    InsufficientMemoryError
        If one round's ``W`` on ``n`` nodes would not fit in memory.

    Notes
    -----
    When ``n = 2^tau``, the product $W(\tau-1) \cdots W(0) = \prod_k (I + P^{2^k})/2 =
    \frac{1}{n}\sum_{m=0}^{n-1} P^m = \mathbf{1}\mathbf{1}^\top / n$: exact averaging after
    ``tau`` rounds [1]_ (and after any ``tau`` consecutive rounds, since the factors commute).
    For other ``n`` the entries of every product are dyadic rationals, so the average ``1/n`` is
    never reached exactly (only geometrically).

    References
    ----------
    .. [1] B. Ying et al., NeurIPS 2021, Lemma 2.

    Examples
    --------
    >>> tv = tf.topologies.one_peer_exponential(8)
    >>> tv.period, [float(tv.at(t).W[0, (0 - 2**t) % 8]) for t in range(3)]  # 0 hears -2^t
    (3, [0.5, 0.5, 0.5])
    >>> tf.spectral.finite_time_consensus(tv, 10)
    3
    """
    n = check_int(n, "n", low=2)
    check_w_size(n, n, f"one_peer_exponential(n={n})")
    tau = _ceil_log2(n)

    def at(t: int) -> Topology:
        k = t % tau
        W = _circulant(n, [1 << k, 0], [0.5, 0.5])  # the peer i - 2^k and the node itself
        top = Topology.from_matrix(W, name="one_peer_exponential", params={"n": n, "round": t})
        return _with_weights(top, "uniform")

    return TimeVarying(n, at, name="one_peer_exponential", params={"n": n}, period=tau)
