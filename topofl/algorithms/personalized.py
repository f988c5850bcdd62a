r"""Partially personalized decentralized learning: DFedPGP and its ablation DFedAvgM-P.

Every client keeps a personal *head* $v_i$ (the model's last linear layers, columns
``ctx.layout.cols("head")``) and learns a shared *body* $u$ (columns ``cols("body")``) with its
neighbours. Each round trains the two parts alternately, head first (Algorithm 1 of [1]_,
lines 5-12), then communicates the body only: the heads never leave their clients.

Table 4 of [1]_ ablates the two ingredients of DFedPGP; the four cells are four topofl
algorithms:

==========  =======================  ======================  ==================================
Table 4     partial personalization  directed communication  topofl
==========  =======================  ======================  ==================================
DFedAvgM    no                       no (doubly stochastic)  :func:`~topofl.algorithms.dfedavgm`
DFedAvgM-P  yes (head/body split)    no (doubly stochastic)  :func:`dfedavgm_p`
OSGP        no                       yes (push-sum)          :func:`~topofl.algorithms.osgp`
DFedPGP     yes (head/body split)    yes (push-sum)          :func:`dfedpgp`
==========  =======================  ======================  ==================================

:func:`dfedpgp` and :func:`dfedavgm_p` share their defaults (those of Section 5.1 of [1]_),
so the two differ only in the communication. ``dfedavgm`` and ``osgp`` have library-wide
defaults: for Table 4, give them ``momentum=0.9, weight_decay=5e-3, decay=0.99,
local_epochs=5`` too.

References
----------
.. [1] Y. Liu, Y. Shi, Q. Li, B. Wu, X. Wang, L. Shen, "Decentralized Directed Collaboration
   for Personalized Federated Learning", CVPR 2024 (DFedPGP: Algorithm 1; Section 5.1;
   Tables 3-4; Appendix B).
.. [2] M. Assran, N. Loizou, N. Ballas, M. Rabbat, "Stochastic Gradient Push for Distributed
   Deep Learning", ICML 2019 (SGP/OSGP: gradients at the de-biased parameters).
.. [3] T. Sun, D. Li, B. Wang, "Decentralized Federated Averaging", IEEE TPAMI 2022
   (DFedAvgM: local momentum SGD, then gossip with a doubly stochastic matrix).
.. [4] D. Kempe, A. Dobra, J. Gehrke, "Gossip-based computation of aggregate information",
   FOCS 2003 (push-sum).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor

from topofl._validation import check_int, check_real
from topofl.algorithms._common import check_decay, check_lr, check_momentum, check_wd
from topofl.algorithms.base import Algorithm, Context, Phase, State, register_algorithm, sgd_step
from topofl.graph import Topology

__all__ = ["dfedpgp", "dfedavgm_p"]

# Section 5.1 of DFedPGP: "train the shared part for 5 epochs per round [...] and train 1 epoch
# for the personal part", "learning rate eta_u = 0.1", "decreasing by 0.99x exponentially",
# "a decay rate of 0.005 and a local momentum of 0.9".
_LR = 0.1
_EPOCHS_U = 5.0
_EPOCHS_V = 1.0
_DECAY = 0.99
_WEIGHT_DECAY = 5e-3
_MOMENTUM = 0.9

Epochs = float | tuple[float, ...] | None


# ------------------------------------------------------------------ hyper-parameters
def _resolve_lrs(lr_u: Any, lr_v: Any, lr: Any) -> tuple[float, float]:
    """``(eta_u, eta_v)``: ``lr`` is the library-wide alias of ``lr_u`` that also sets ``lr_v``."""
    if lr is not None and lr_u is not None:
        raise ValueError(f"give lr_u or its alias lr, not both (got lr_u={lr_u!r}, lr={lr!r})")
    if lr_u is not None:
        eta_u = check_lr(lr_u, "lr_u")
    elif lr is not None:
        eta_u = check_lr(lr, "lr")
    else:
        eta_u = _LR
    eta_v = eta_u if lr_v is None else check_lr(lr_v, "lr_v")
    return eta_u, eta_v


def _resolve_work(
    steps: Any, epochs: Any, part: str, default_epochs: float,
    steps_alias: Any = None, epochs_alias: Any = None,
) -> tuple[int | None, Epochs]:
    """Local work of one phase: ``(steps, None)`` or ``(None, epochs)``."""
    names = f"local_steps_{part} or local_epochs_{part}"
    if steps_alias is not None or epochs_alias is not None:
        if steps is not None or epochs is not None:
            raise ValueError(
                f"give the shared part's local work as {names} or as their aliases local_steps "
                "or local_epochs, not both"
            )
        steps, epochs = steps_alias, epochs_alias
        names = (f"local_steps_{part} (alias local_steps) or local_epochs_{part} "
                 "(alias local_epochs)")
    if steps is not None and epochs is not None:
        raise ValueError(f"give either {names}, not both")
    if steps is not None:
        return check_int(steps, f"local_steps_{part}", low=1), None
    if epochs is None:
        return None, default_epochs
    ename = f"local_epochs_{part}"
    if isinstance(epochs, (list, tuple)) or hasattr(epochs, "__array__"):
        vals = tuple(check_real(e, f"{ename}[i]", low=0, low_open=True) for e in list(epochs))
        if not vals:
            raise ValueError(f"{ename} must not be an empty sequence")
        return None, vals
    return None, check_real(epochs, ename, low=0, low_open=True)


def _phases(
    eta_u: float, eta_v: float, steps_u: int | None, epochs_u: Epochs, steps_v: int | None,
    epochs_v: Epochs,
) -> tuple[Phase, Phase]:
    # Algorithm 1: K_v steps on the personal part v (lines 5-8), then K_u on the shared u (9-12)
    return (Phase("head", steps_v, epochs_v, eta_v, name="v"),
            Phase("body", steps_u, epochs_u, eta_u, name="u"))


def _hparams(eta_u: float, eta_v: float, momentum: float, weight_decay: float, decay: float,
             steps_u: int | None, epochs_u: Epochs, steps_v: int | None,
             epochs_v: Epochs) -> dict[str, Any]:
    return dict(lr_u=eta_u, lr_v=eta_v, momentum=momentum, weight_decay=weight_decay,
                decay=decay, local_steps_u=steps_u, local_epochs_u=epochs_u,
                local_steps_v=steps_v, local_epochs_v=epochs_v)


def _check_split(name: str, ctx: Context) -> None:
    lay = ctx.layout
    if not lay.has_split:
        raise ValueError(
            f"{name} personalizes a head and shares a body, but the model's parameters do not "
            f"split into a non-empty body and head ({lay.num_body} body of {lay.num_params}); "
            "use a model with a body and a head (e.g. topofl.models.build_model('mlp', ...))"
        )


def _restart_momentum(state: State, t: int, ctx: Context) -> None:
    # local momentum: a fresh SGD optimizer per client and round (DFedAvgM [3], Algorithm 1)
    if state.momentum is not None:
        state.momentum.zero_()


# ------------------------------------------------------------------ DFedPGP pieces
def _debias_(state: State, ctx: Context) -> Tensor:
    """``z = (u / mu, v)`` into ``state.extra["z"]`` (the de-biased point), returned."""
    z = state.extra["z"]
    body, head = ctx.layout.cols("body"), ctx.layout.cols("head")
    torch.div(state.x[:, body], state.push_weights().unsqueeze(1), out=z[:, body])
    z[:, head].copy_(state.x[:, head])
    return z


def _pgp_pieces(momentum: float, weight_decay: float) -> tuple[
    Callable[[Tensor, Context], State],
    Callable[[State, Context, Phase], Tensor],
    Callable[[State, Tensor, Phase, Tensor, Context], None],
    Callable[[State, Topology, int, Context], int],
]:
    def init(x0: Tensor, ctx: Context) -> State:
        _check_split("dfedpgp", ctx)
        n = x0.shape[0]
        # line 1: u_i^0 random, z_i^0 = u_i^0, v_i^0 random, mu_i^0 = 1
        state = State(
            x=x0,
            momentum=torch.zeros_like(x0) if momentum else None,
            weight=torch.ones(n, dtype=x0.dtype, device=x0.device),
            extra={"z": torch.empty_like(x0)},
        )
        _debias_(state, ctx)
        return state

    def point(state: State, ctx: Context, phase: Phase) -> Tensor:
        # head phase: grad_v F_i(z_i^{t,0}, v_i^{t,k}) (line 6); body phase: grad_u F_i(z_i^{t,k},
        # v_i^{t+1}) with z_i^{t,k} = u_i^{t,k} / mu_i^t (lines 10-11). Both are (u / mu, v).
        return _debias_(state, ctx)

    def update(state: State, grads: Tensor, phase: Phase, lr: Tensor, ctx: Context) -> None:
        cols = ctx.layout.cols(phase.part)
        # the gradient taken at z is applied to the biased numerator u (line 10); the weight
        # decay term is part of that gradient, so it is evaluated at z as well
        sgd_step(
            state.x[:, cols], grads[:, cols], lr,
            momentum_buf=None if state.momentum is None else state.momentum[:, cols],
            momentum=momentum, weight_decay=weight_decay,
            decay_point=state.extra["z"][:, cols],
        )

    def communicate(state: State, topology: Topology, t: int, ctx: Context) -> int:
        # lines 14-16: push p_ji u_i^{t+1/2} and p_ji mu_i^t; u_i^{t+1} = sum_j p_ij u_j^{t+1/2},
        # mu_i^{t+1} = sum_j p_ij mu_j^t. Only the body columns move.
        ctx.mixer.mix_(topology, state.x, cols=ctx.layout.cols("body"))
        ctx.mixer.mix_vector_(topology, state.push_weights())
        _debias_(state, ctx)  # line 17: z_i^{t+1} = u_i^{t+1} / mu_i^{t+1}
        return topology.messages_per_round

    return init, point, update, communicate


def _evaluate_pgp(state: State, ctx: Context) -> Tensor:
    # output of Algorithm 1: the personalized model (z_i^T, v_i^T)
    return _debias_(state, ctx)


@register_algorithm("dfedpgp")
def dfedpgp(
    lr_u: float | None = None,
    lr_v: float | None = None,
    *,
    momentum: float = _MOMENTUM,
    weight_decay: float = _WEIGHT_DECAY,
    decay: float = _DECAY,
    local_epochs_u: float | tuple[float, ...] | None = None,
    local_steps_u: int | None = None,
    local_epochs_v: float | tuple[float, ...] | None = None,
    local_steps_v: int | None = None,
    lr: float | None = None,
    local_steps: int | None = None,
    local_epochs: float | tuple[float, ...] | None = None,
) -> Algorithm:
    r"""DFedPGP: partial personalization with push-sum over directed time-varying graphs.

    Algorithm 1 of Liu et al. [1]_. Client $i$ holds the biased shared body $u_i$, its push-sum
    weight $\mu_i$ (initially 1), the de-biased body $z_i = u_i / \mu_i$ and its personal head
    $v_i$. Each round $t$:

    1. $K_v$ steps on the head at the de-biased body of the round's start:
       $v_i \leftarrow v_i - \eta_v \nabla_v F_i(z_i^{t,0}, v_i)$;
    2. $K_u$ steps on the body with the new head, the gradient taken at
       $z_i^{t,k} = u_i^{t,k} / \mu_i^t$ and applied to the numerator:
       $u_i \leftarrow u_i - \eta_u \nabla_u F_i(z_i^{t,k}, v_i^{t+1})$;
    3. push $p_{ji}^t u_i$ and $p_{ji}^t \mu_i^t$ to the out-neighbours and sum what arrives:
       $u \leftarrow P^t u$, $\mu \leftarrow P^t \mu$ with $P^t$ column stochastic, then
       de-bias $z_i = u_i / \mu_i$.

    The heads never leave their clients; the evaluated model of client $i$ is $(z_i, v_i)$.

    Parameters
    ----------
    lr_u : float, default 0.1
        Learning rate $\eta_u$ of the shared body (``lr_u * decay**t`` at round ``t``).
    lr_v : float, optional
        Learning rate $\eta_v$ of the personal head; defaults to ``lr_u``.
    momentum : float, default 0.9
        Local heavy-ball momentum, restarted every round.
    weight_decay : float, default 5e-3
        L2 coefficient ("a decay rate of 0.005", Section 5.1), added to the gradient at the
        de-biased point.
    decay : float, default 0.99
        Learning-rate factor per round.
    local_epochs_u, local_steps_u
        Local work on the body, $K_u$: epochs (default 5), one value for all clients or one
        per client (computation heterogeneity, Table 3: see
        :func:`~topofl.algorithms.heterogeneous_epochs`), or a number of steps.
    local_epochs_v, local_steps_v
        Local work on the head, $K_v$: epochs (default 1) or steps.
    lr, local_steps, local_epochs
        Library-wide aliases, so that every algorithm runs with the same keywords: ``lr`` sets
        ``lr_u`` (and ``lr_v`` unless given); ``local_steps``/``local_epochs`` set the body's
        local work (the work Table 3 varies).

    Returns
    -------
    Algorithm
        ``requires="column"`` (push-sum; doubly stochastic matrices are column stochastic too),
        ``shared="body"``: the engine refuses a model without a head/body split.

    Raises
    ------
    ValueError
        Non-positive learning rates, momentum outside ``[0, 1)``, negative weight decay, decay
        outside ``(0, 1]``, non-positive local work, or the same quantity given twice (``lr``
        with ``lr_u``, steps with epochs).

    Notes
    -----
    Section 5.1 fixes $\eta_u = 0.1$, 5 local epochs on the shared part and 1 on the personal
    part, SGD with momentum 0.9, weight decay 0.005 and a learning rate decayed by 0.99 per
    round; these are the defaults. Where the paper is silent:

    * $\eta_v$ is not given separately ("a learning rate $\eta_u = 0.1$ to update the model
      parameters"): it defaults to $\eta_u$.
    * Momentum is "local": each client restarts it every round, as a fresh SGD optimizer per
      round would (and as DFedAvgM does); head and body have separate buffers (different
      columns), as with one optimizer per phase.
    * Weight decay is part of the gradient of $F_i$, which Algorithm 1 evaluates at $z_i$, so
      the decay term is $\lambda z_i$, applied to $u_i$ like the rest of the gradient (as in
      :func:`~topofl.algorithms.sgp`); on the head it is $\lambda v_i$.
    * The experiments' graph (Section 5.1, Appendix B): every client exchanges with 10 random
      peers per round. Push-sum needs the column-stochastic push form of Algorithm 1
      ($p_{j,i}^t = 1 / |\mathcal{N}^{out}_{i,t}|$, the sender splitting its mass over itself
      and its out-neighbours): ``topofl.topologies.random_directed(n, 10, seed=s,
      mode="push")``. Appendix B's pull form with uniform in-weights is row stochastic and would
      make push-sum biased; it is not accepted (``requires="column"``).
    * With a doubly stochastic ``W`` the weights stay 1 and DFedPGP is exactly
      :func:`dfedavgm_p` (tested).

    Cost per round: one ``[n, P_body]`` gossip and one ``[n]`` weight gossip, plus an
    ``O(n P)`` de-biasing before each local step (negligible next to the gradients).

    References
    ----------
    .. [1] Y. Liu, Y. Shi, Q. Li, B. Wu, X. Wang, L. Shen, "Decentralized Directed
       Collaboration for Personalized Federated Learning", CVPR 2024.

    Examples
    --------
    A toy problem with a one-number body and a one-number head: client ``i`` minimises
    ``(u - a_i)^2 / 2 + (v - b_i)^2 / 2``. Over a directed graph (push-sum weights) the
    de-biased bodies reach the average of ``a`` (= 4), each head its own ``b_i``.

    >>> import networkx as nx, torch
    >>> push = tf.Topology.from_networkx(nx.DiGraph([(0, 1), (1, 2), (2, 0), (0, 2)]),
    ...                                  weights="push_sum")
    >>> algo = tf.algorithms.dfedpgp(0.1, momentum=0.0, weight_decay=0.0, local_steps_u=1,
    ...                              local_steps_v=1)
    >>> ctx = tf.algorithms.toy_context(3, 2)
    >>> ctx.layout = tf.engine.ParamLayout.from_model(torch.nn.Linear(1, 1), head=["bias"])
    >>> target = torch.tensor([[0.0, -1.0], [4.0, 0.0], [8.0, 1.0]], dtype=torch.float64)
    >>> state = algo.init(torch.zeros(3, 2, dtype=torch.float64), ctx)
    >>> for t in range(400):
    ...     lr = torch.full((3,), 0.1 * 0.98**t, dtype=torch.float64)
    ...     for phase in algo.phases:  # head, then body
    ...         z = algo.point(state, ctx, phase)
    ...         algo.update(state, z - target, phase, lr, ctx)
    ...     _ = algo.communicate(state, push, t, ctx)
    >>> [[round(v, 3) for v in row] for row in algo.evaluate(state, ctx).tolist()]
    [[4.0, -1.0], [4.0, 0.0], [4.0, 1.0]]
    >>> round(float(state.weight.sum()), 12)
    3.0
    """
    eta_u, eta_v = _resolve_lrs(lr_u, lr_v, lr)
    momentum = check_momentum(momentum)
    weight_decay = check_wd(weight_decay)
    decay = check_decay(decay)
    steps_u, epochs_u = _resolve_work(local_steps_u, local_epochs_u, "u", _EPOCHS_U,
                                      local_steps, local_epochs)
    steps_v, epochs_v = _resolve_work(local_steps_v, local_epochs_v, "v", _EPOCHS_V)
    init, point, update, communicate = _pgp_pieces(momentum, weight_decay)
    return Algorithm(
        name="dfedpgp",
        hparams=_hparams(eta_u, eta_v, momentum, weight_decay, decay, steps_u, epochs_u,
                         steps_v, epochs_v),
        phases=_phases(eta_u, eta_v, steps_u, epochs_u, steps_v, epochs_v),
        init=init,
        point=point,
        update=update,
        communicate=communicate,
        evaluate=_evaluate_pgp,
        round_start=_restart_momentum,
        requires="column",
        shared="body",
        decay=decay,
        rowwise=True,
    )


# ------------------------------------------------------------------ DFedAvgM-P pieces
def _avgm_p_pieces(momentum: float, weight_decay: float) -> tuple[
    Callable[[Tensor, Context], State],
    Callable[[State, Tensor, Phase, Tensor, Context], None],
    Callable[[State, Topology, int, Context], int],
]:
    def init(x0: Tensor, ctx: Context) -> State:
        _check_split("dfedavgm_p", ctx)
        return State(x=x0, momentum=torch.zeros_like(x0) if momentum else None)

    def update(state: State, grads: Tensor, phase: Phase, lr: Tensor, ctx: Context) -> None:
        cols = ctx.layout.cols(phase.part)
        sgd_step(
            state.x[:, cols], grads[:, cols], lr,
            momentum_buf=None if state.momentum is None else state.momentum[:, cols],
            momentum=momentum, weight_decay=weight_decay,
        )

    def communicate(state: State, topology: Topology, t: int, ctx: Context) -> int:
        ctx.mixer.mix_(topology, state.x, cols=ctx.layout.cols("body"))
        return topology.messages_per_round

    return init, update, communicate


def _parameters(state: State, ctx: Context, phase: Phase | None = None) -> Tensor:
    return state.x


@register_algorithm("dfedavgm_p")
def dfedavgm_p(
    lr_u: float | None = None,
    lr_v: float | None = None,
    *,
    momentum: float = _MOMENTUM,
    weight_decay: float = _WEIGHT_DECAY,
    decay: float = _DECAY,
    local_epochs_u: float | tuple[float, ...] | None = None,
    local_steps_u: int | None = None,
    local_epochs_v: float | tuple[float, ...] | None = None,
    local_steps_v: int | None = None,
    lr: float | None = None,
    local_steps: int | None = None,
    local_epochs: float | tuple[float, ...] | None = None,
) -> Algorithm:
    r"""DFedAvgM-P: DFedAvgM with a personal head and undirected gossip of the body only.

    The "partial personalization, undirected communication" cell of Table 4 of [1]_: DFedPGP
    without the directed push-sum. Each round: $K_v$ momentum-SGD steps on the head $v_i$,
    then $K_u$ on the body $u_i$ (the same alternation as :func:`dfedpgp`), then one gossip
    step of the bodies with a doubly stochastic $W_t$, $u \leftarrow W_t u$; the heads stay.

    Parameters
    ----------
    lr_u, lr_v, momentum, weight_decay, decay, local_epochs_u, local_steps_u, local_epochs_v,
    local_steps_v, lr, local_steps, local_epochs
        As in :func:`dfedpgp`, with the same defaults (Section 5.1 of [1]_), so that the
        ablation changes the communication only.

    Returns
    -------
    Algorithm
        ``requires="doubly"``, ``shared="body"``.

    Raises
    ------
    ValueError
        As :func:`dfedpgp`.

    Notes
    -----
    [1]_ names the ablation but does not spell it out. Removing the directed communication
    from DFedPGP leaves the alternating head-then-body local updates and a symmetric gossip of
    the shared part; DFedAvgM's own ingredients (local momentum SGD restarted every round, one
    gossip step with a doubly stochastic matrix, Sun et al. [3]_) are what that gossip is.
    Weight decay is evaluated at $u_i$ (no push-sum weights here). On a doubly stochastic
    graph :func:`dfedpgp` computes exactly this.

    References
    ----------
    .. [1] Y. Liu et al., "Decentralized Directed Collaboration for Personalized Federated
       Learning", CVPR 2024, Table 4.
    .. [3] T. Sun, D. Li, B. Wang, "Decentralized Federated Averaging", IEEE TPAMI 2022.

    Examples
    --------
    The toy problem of :func:`dfedpgp` on an undirected ring: the bodies reach the average of
    ``a``, each head its own ``b_i``.

    >>> import torch
    >>> algo = tf.algorithms.dfedavgm_p(0.1, momentum=0.0, weight_decay=0.0, local_steps_u=1,
    ...                                 local_steps_v=1)
    >>> ctx = tf.algorithms.toy_context(3, 2)
    >>> ctx.layout = tf.engine.ParamLayout.from_model(torch.nn.Linear(1, 1), head=["bias"])
    >>> target = torch.tensor([[0.0, -1.0], [4.0, 0.0], [8.0, 1.0]], dtype=torch.float64)
    >>> state = algo.init(torch.zeros(3, 2, dtype=torch.float64), ctx)
    >>> for t in range(400):
    ...     lr = torch.full((3,), 0.1 * 0.98**t, dtype=torch.float64)
    ...     for phase in algo.phases:
    ...         algo.update(state, algo.point(state, ctx, phase) - target, phase, lr, ctx)
    ...     _ = algo.communicate(state, tf.topologies.ring(3), t, ctx)
    >>> [[round(v, 3) for v in row] for row in algo.evaluate(state, ctx).tolist()]
    [[4.0, -1.0], [4.0, 0.0], [4.0, 1.0]]
    >>> [p.part for p in algo.phases], algo.shared, algo.requires
    (['head', 'body'], 'body', 'doubly')
    """
    eta_u, eta_v = _resolve_lrs(lr_u, lr_v, lr)
    momentum = check_momentum(momentum)
    weight_decay = check_wd(weight_decay)
    decay = check_decay(decay)
    steps_u, epochs_u = _resolve_work(local_steps_u, local_epochs_u, "u", _EPOCHS_U,
                                      local_steps, local_epochs)
    steps_v, epochs_v = _resolve_work(local_steps_v, local_epochs_v, "v", _EPOCHS_V)
    init, update, communicate = _avgm_p_pieces(momentum, weight_decay)
    return Algorithm(
        name="dfedavgm_p",
        hparams=_hparams(eta_u, eta_v, momentum, weight_decay, decay, steps_u, epochs_u,
                         steps_v, epochs_v),
        phases=_phases(eta_u, eta_v, steps_u, epochs_u, steps_v, epochs_v),
        init=init,
        point=_parameters,
        update=update,
        communicate=communicate,
        evaluate=_parameters,
        round_start=_restart_momentum,
        requires="doubly",
        shared="body",
        decay=decay,
        rowwise=True,
    )
