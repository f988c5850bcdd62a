r"""DLM: the decentralized linearized ADMM, one gradient and one exchange of models a round.

Decentralized ADMM solves the consensus problem $\min \sum_i f_i(x_i)$ subject to
$x_i = x_j$ on every edge with one exact minimisation of $f_i$ per round; DLM (Ling, Shi, Wu &
Ribeiro 2015) linearizes $f_i$ at the current point and adds a proximal term, so the primal
step is one gradient step corrected by the neighbours' disagreement and a dual variable. Its
neighbour sums are over the graph's edges, unweighted (the graph Laplacian $L = D - A$): the
weights of ``W`` are not used. With one step size for every client it is EXTRA
(:func:`~topofl.algorithms.extra`) on the mixing matrix $I - 2 \mu c L$, from a common start.

References
----------
.. [1] Q. Ling, W. Shi, G. Wu, A. Ribeiro, "DLM: Decentralized linearized alternating
   direction method of multipliers", IEEE Trans. Signal Process. 63(15), 2015,
   doi:10.1109/TSP.2015.2436358.
.. [2] S. A. Alghunaim, E. K. Ryu, K. Yuan, A. H. Sayed, "Decentralized proximal gradient
   algorithms with linear convergence rates", IEEE Trans. Automat. Control 66(6), 2021.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import Tensor

from topofl._utils.validation import arc_pattern, check_real
from topofl.algorithms.base import register_algorithm
from topofl.algorithms.dsgt import standing
from topofl.algorithms.hparams import check_decay, check_lr, check_wd
from topofl.engine.ledger import Flow, dtype_bits, graph_arcs
from topofl.engine.pieces import compose_init, graph_of, hold
from topofl.engine.protocol import Algorithm, LocalUpdate, Phase, Round, Sent, Services, State
from topofl.graph import Topology

__all__ = ["dlm", "DLMState", "neighbour_sums", "STEPS"]

#: The step rules of :func:`dlm`.
STEPS = ("degree", "uniform")


@dataclass
class DLMState:
    r"""The state DLM keeps besides the models (``State.own``).

    Attributes
    ----------
    y : Tensor
        ``[n, P]`` the dual variables $\alpha_i^k$ ($\alpha^0 = 0$; their rows sum to 0 at
        every round).
    s : Tensor
        ``[n, P]`` the disagreement $s_i^k = \sum_{j \in N_i} (x_i^k - x_j^k)$ of the last
        exchange, what the next primal step uses. It starts at 0, which is $L x^0$ when every
        client starts from the same model (``topofl.run``'s default ``init="same"``); a
        caller that drives the clients from distinct models and wants the first step's
        disagreement term sets it to $L x^0$ itself.
    """

    y: Tensor
    s: Tensor


@dataclass(frozen=True)
class _Graph:
    """A round's graph as DLM reads it: its 0/1 adjacency (a topology, for the mixer) and
    every node's number of neighbours."""

    adjacency: Topology
    degree: np.ndarray  # (n,) float64
    undirected: bool


_GRAPHS: weakref.WeakKeyDictionary[Topology, _Graph] = weakref.WeakKeyDictionary()


def _graph(topology: Topology) -> _Graph:
    g = _GRAPHS.get(topology)
    if g is None:
        A = arc_pattern(topology.W)  # A[i, j] = 1 iff the arc j -> i
        D = A - A.T
        g = _GRAPHS[topology] = _Graph(
            Topology.from_matrix(A, name=topology.name, params=topology.params),
            np.diff(A.indptr).astype(np.float64), bool(D.nnz == 0 or not np.any(D.data)))
    return g


def _degrees(env: Services, topology: Topology, like: Tensor) -> Tensor:
    """``[m, 1]``: the number of neighbours of each of this process's clients."""
    deg = _graph(topology).degree[env.clients.ids]
    return torch.as_tensor(deg, dtype=like.dtype, device=like.device).unsqueeze(1)


def neighbour_sums(env: Services, topology: Topology, x: Tensor) -> Tensor:
    r"""``[m, P]``: $\sum_{j \in N_i} (x_i - x_j) = (L x)_i$, $L = D - A$ the Laplacian of
    the graph of ``topology`` (its arcs, unweighted; the rows of other clients through
    ``env.mixer``).

    Examples
    --------
    On the path 0 - 1 - 2 - 3 (Metropolis weights, which are not used):

    >>> import networkx as nx
    >>> import torch
    >>> from topofl.algorithms.dlm import neighbour_sums
    >>> x = torch.tensor([[0.0], [3.0], [6.0], [3.0]], dtype=torch.float64)
    >>> path = tf.Topology.from_networkx(nx.path_graph(4))
    >>> neighbour_sums(tf.engine.toy_services(4), path, x).flatten().tolist()
    [-3.0, 0.0, 6.0, -3.0]
    """
    g = _graph(topology)
    ax = x.clone()
    env.mixer.mix_(g.adjacency, ax)  # sum_j x_j
    return x.mul(_degrees(env, topology, x)).sub_(ax)


def _require_undirected(state: State, rnd: Round, env: Services) -> None:
    topo = graph_of(rnd)
    if not _graph(topo).undirected:
        raise ValueError(
            f"dlm needs an undirected graph (every arc both ways: its neighbour sums are a "
            f"graph Laplacian), but the topology {topo.name!r} at round {rnd.t} has an arc "
            "without its reverse; use an undirected graph, or algorithm='dsgt' (gradient "
            "tracking) on a directed one")


@dataclass(frozen=True)
class _Linearized(LocalUpdate):
    r"""The local piece: $x_i \leftarrow x_i - \mu_i (g_i + c s_i + y_i)$ with
    $\mu_i$ = the rate (``"uniform"``) or $1 / (1/\text{rate} + 2 c d_i)$ (``"degree"``);
    an absent client (rate 0) stands still."""

    penalty: float
    step: str
    weight_decay: float

    @property
    def rowwise(self) -> bool:
        return False  # the "degree" rule reads the round's graph

    def init_(self, state: State, env: Services) -> None:
        hold(state, DLMState(y=torch.zeros_like(state.x), s=torch.zeros_like(state.x)))

    def update(self, state: State, grads: Tensor, phase: Phase, lr: Tensor, rnd: Round,
               env: Services) -> None:
        own, x = state.own_as(DLMState), state.x
        if self.weight_decay:
            grads.add_(x, alpha=self.weight_decay)
        direction = grads.add_(own.s, alpha=self.penalty).add_(own.y)  # g + c s + y
        mu = lr.unsqueeze(1)
        if self.step == "degree":
            # 1 / (rho + 2 c d_i) with rho = 1 / rate: rate / (1 + 2 c d_i rate)
            deg = _degrees(env, graph_of(rnd), x)
            mu = mu / (1.0 + 2.0 * self.penalty * deg * mu)
        still = standing(lr)
        if still is None:
            x.sub_(direction.mul_(mu))
        else:
            x.copy_(torch.where(still, x, x - direction * mu))

    def fused(self, executor: Any) -> None:
        return None


def _communicate(penalty: float) -> Callable[[State, Round, Services], Sent]:
    def communicate(state: State, rnd: Round, env: Services) -> Sent:
        r"""$s \leftarrow L x$ (each client's model to its neighbours) and
        $y \leftarrow y + c\, s$."""
        topo = graph_of(rnd)
        own, x = state.own_as(DLMState), state.x
        own.s.copy_(neighbour_sums(env, topo, x))
        own.y.add_(own.s, alpha=penalty)
        return Sent.of(Flow("model", graph_arcs(topo), int(x.shape[1]), dtype_bits(x.dtype)))

    return communicate


@register_algorithm("dlm")
def dlm(
    lr: float = 0.1,
    *,
    penalty: float = 1.0,
    step: str = "degree",
    weight_decay: float = 0.0,
    decay: float = 1.0,
) -> Algorithm:
    r"""DLM, the decentralized linearized ADMM (Ling et al. 2015): a gradient step corrected
    by the neighbours' disagreement and a dual variable, one exchange of models a round.

    With $\nabla f_i$ client $i$'s (stochastic) gradient, $N_i$ its neighbours in the round's
    graph ($d_i = |N_i|$), $c$ the penalty, $\rho$ the proximal coefficient and
    $\alpha_i^0 = 0$, iteration $k$ of the paper is, on every client $i$:

    * $x_i^{k+1} = x_i^k - \frac{1}{\rho + 2 c d_i}\Big(\nabla f_i(x_i^k)
      + c \sum_{j \in N_i} (x_i^k - x_j^k) + \alpha_i^k\Big)$;
    * one communication (of $x_i^{k+1}$):
      $\alpha_i^{k+1} = \alpha_i^k + c \sum_{j \in N_i} (x_i^{k+1} - x_j^{k+1})$.

    The primal step is the minimiser of $f_i$ linearized at $x_i^k$ plus
    $\langle \alpha_i^k, x \rangle + c \sum_{j \in N_i} \|x - \frac{x_i^k + x_j^k}{2}\|^2
    + \frac{\rho}{2} \|x - x_i^k\|^2$, the decentralized ADMM's subproblem with $f_i$
    linearized. ``step="degree"`` is this step, $\mu_i = 1/(\rho + 2 c d_i)$ with
    $\rho = 1/$``lr``; ``step="uniform"`` takes $\mu_i = $ ``lr`` for every client (the form of
    Alghunaim et al.'s unified analysis and of decent-bench's ``DLM``). In matrix form, with
    $L = D - A$ the graph's Laplacian,
    $x^{k+1} = x^k - M(\nabla f(x^k) + c L x^k + \alpha^k)$ and
    $\alpha^{k+1} = \alpha^k + c L x^{k+1}$, $M = \mathrm{diag}(\mu_i)$. Since
    $\mathbf{1}^\top L = 0$, $\sum_i \alpha_i^k = 0$ at every round; with the uniform step
    the clients' average moves by $-\mu$ times their average gradient. At a fixed point
    (full gradients, constant steps) $L x = 0$ (consensus on a connected graph) and
    $\nabla f_i(x^\star) + \alpha_i = 0$, so $\sum_i \nabla f_i(x^\star) = 0$: the exact
    minimiser of $\sum_i f_i$. Eliminating $\alpha$ with the uniform step gives
    $x^{k+1} = (2I - 2\mu c L) x^k - (I - \mu c L) x^{k-1} - \mu(\nabla f(x^k) -
    \nabla f(x^{k-1}))$: EXTRA (:func:`~topofl.algorithms.extra`) with
    $W = I - 2 \mu c L$, $\tilde W = (I + W)/2$ and step $\mu$, whose first step
    $W x^0 - \mu \nabla f(x^0)$ is DLM's when the clients start together ($L x^0 = 0$).

    Parameters
    ----------
    lr : float, default 0.1
        ``"degree"``: $1/\rho$, the inverse of the proximal coefficient;
        ``"uniform"``: the step $\mu$ itself (``lr * decay**t`` at round ``t``).
    penalty : float, default 1
        The penalty $c > 0$ (decent-bench's ``penalty`` $\rho$).
    step : {"degree", "uniform"}, default "degree"
        Each client's step: $1/(\rho + 2 c d_i)$ (the paper's own, smaller at clients with
        more neighbours) or ``lr``.
    weight_decay : float, default 0
        Added to the gradient ($\nabla f_i + \lambda x$).
    decay : float, default 1

    Returns
    -------
    Algorithm
        One local step per round; ``requires=None`` (only the graph's edges count, its
        weights are not used) and an undirected graph at every round (checked: a
        ``ValueError`` otherwise); ``state.own`` is a :class:`DLMState`.

    Notes
    -----
    Messages: $x_i^{k+1}$ on every arc, one per arc and round, as D-SGD's model. The primal
    step uses the disagreement $s_i = \sum_{j \in N_i}(x_i - x_j)$ of the previous round's
    exchange (kept in :class:`DLMState`; on a graph that changes, the previous round's
    graph's), started at 0: $L x^0$ when every client starts from the same model (the
    default ``init="same"``); under ``init="independent"`` the first primal step lacks the
    disagreement term (the invariants and the fixed point are unchanged).
    decent-bench 0.3.0's ``DLM`` (``step_size`` $\mu$, ``penalty`` $c$) spends its first
    step on exchanging $x^0$; at ``step="uniform"`` this gives its iterates one round
    earlier, to 1e-10, wherever its code computes its own update (as shipped, its neighbour
    sum adds in place into a message array shared by every receiver: wrong on the complete
    graph and the 4-cycle; ``tests/algorithms/test_proxskip_dlm.py``). With the uniform
    step DLM is stable when $\tilde W = I - \mu c L \succ 0$ ($\mu c \lambda_{\max}(L) < 1$,
    $\lambda_{\max}(L) \le 2 d_{\max}$) and $\mu$ is small enough for $f$ (EXTRA's
    condition); the paper's step shrinks with the degree by itself. A client absent from a
    round (``[availability]``) takes no step, and the present ones exchange on the graph
    without it; a lost message (``[network] drop``) is refused.

    References
    ----------
    .. [1] Q. Ling, W. Shi, G. Wu, A. Ribeiro, "DLM: Decentralized linearized alternating
       direction method of multipliers", IEEE Trans. Signal Process. 63(15), 2015.
    .. [2] S. A. Alghunaim, E. K. Ryu, K. Yuan, A. H. Sayed, "Decentralized proximal
       gradient algorithms with linear convergence rates", IEEE Trans. Automat. Control
       66(6), 2021.

    Examples
    --------
    Client ``i`` minimises $a_i (x - b_i)^2 / 2$; the optimum of the sum is
    $\sum a_i b_i / \sum a_i = 2$, reached exactly with a constant step.

    >>> import torch
    >>> a = torch.tensor([[1.0], [2.0], [1.0], [4.0]], dtype=torch.float64)
    >>> b = torch.tensor([[0.0], [1.0], [2.0], [3.0]], dtype=torch.float64)
    >>> algo = tf.algorithms.get_algorithm("dlm", lr=0.2, penalty=1.0)
    >>> trace = tf.engine.run_rounds(algo, torch.zeros_like(b), tf.topologies.ring(4),
    ...                              lambda z, phase, rnd: a * (z - b), rounds=400)
    >>> [round(v, 8) for v in trace.evaluated().flatten().tolist()]
    [2.0, 2.0, 2.0, 2.0]
    """
    lr = check_lr(lr)
    c = check_real(penalty, "penalty", low=0, low_open=True)
    if not isinstance(step, str) or step not in STEPS:
        raise ValueError(f"step must be one of {', '.join(map(repr, STEPS))}, got {step!r}")
    wd = check_wd(weight_decay)
    decay = check_decay(decay)
    local = _Linearized(c, step, wd)
    return Algorithm(
        name="dlm",
        hparams=dict(lr=lr, penalty=c, step=step, weight_decay=wd, decay=decay),
        phases=(Phase("all", 1, None, lr),),
        init=compose_init(local),
        local=local,
        communicate=_communicate(c),
        round_start=_require_undirected,
        requires=None,
        decay=decay,
        stacks=True,
    )
