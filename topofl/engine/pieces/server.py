"""Communication through a server: the (weighted) mean over the round's participants
(:func:`server_average`; :func:`exact_average` with every client), its messages
(:func:`server_flows`: the download and the upload) and the clients' data sizes
(:func:`data_sizes`)."""

from __future__ import annotations

import numpy as np
import torch
from torch import Tensor

from topofl.engine.clients import row
from topofl.engine.layout import Part
from topofl.engine.ledger import Flow, dtype_bits, server_arcs
from topofl.engine.pieces.communication import Communicate, _kind, _width
from topofl.engine.pieces.participation import _mask
from topofl.engine.protocol import Round, Sent, Services, State

__all__ = ["server_flows", "exact_average", "server_average", "data_sizes"]


def server_flows(n: int, active: np.ndarray | None, size: int, bits: int,
                 kind: str = "model") -> tuple[Flow, Flow]:
    """A server round's messages: the server's model to every participant before the local
    work (stage -1, the download), their models to the server after it (stage 0, the upload);
    ``active``: ``(n,)`` bool participants, ``None`` for all.

    Examples
    --------
    >>> from topofl.engine.pieces import server_flows
    >>> down, up = server_flows(3, None, 10, 32)
    >>> down.sent_counts().tolist(), up.received_counts().tolist(), up.bytes
    ([0, 0, 0, 3], [0, 0, 0, 3], 120)
    """
    return (Flow(kind, server_arcs(n, active, "down"), size, bits, stage=-1),
            Flow(kind, server_arcs(n, active, "up"), size, bits, stage=0))


def exact_average(part: Part = "all") -> Communicate:
    """FedAvg with full participation: every client gets the mean of ``part`` (``W = 11^T/n``
    computed as a mean); messages ``2 n`` (:func:`server_flows`: download and upload). With
    clients offline (``rnd.online``), the mean of the online clients (:func:`server_average`).
    """
    partial = server_average(part)

    def communicate(state: State, rnd: Round, env: Services) -> Sent:
        if rnd.online is not None:
            return partial(state, rnd, env)
        block = state.x if part == "all" else state.x[:, env.layout.cols(part)]
        mean = env.clients.mean(block, "exact average")
        block.copy_(mean.unsqueeze(0).expand_as(block))
        return Sent.of(*server_flows(env.n, None, _width(env, part),
                                     dtype_bits(state.x.dtype), _kind(part)))

    return communicate


def server_average(part: Part, *, participation: float = 1.0, sample_seed: int = 0,
                   weighting: str = "uniform", selection: str = "uniform") -> Communicate:
    """Replace ``part`` of every client by the (weighted) mean over the round's participants.

    The participants are :func:`round_active` (sampled by ``selection`` and online). The mean is
    ``x_0 + mean(x_i - x_0)`` (averaging models that agree changes nothing);
    ``weighting="data_size"`` weighs client ``i`` by ``env.train_sizes[i]``. Messages: ``2 m``
    with ``m`` participants (:func:`server_flows`). No participant: nothing changes.
    """

    def communicate(state: State, rnd: Round, env: Services) -> Sent:
        block = state.x[:, env.layout.cols(part)]
        full_mask = _mask(env.n, rnd, participation, sample_seed, state.x, selection)
        clients = env.clients
        mask = None if full_mask is None else clients.own(full_mask)
        ref = row(clients, block, 0)
        if weighting == "uniform" and mask is None:
            avg = clients.mean(block - ref, "server average").add_(ref)
        else:
            w = torch.ones(block.shape[0], dtype=block.dtype, device=block.device)
            if weighting == "data_size":
                w = w * data_sizes(env).to(device=block.device, dtype=block.dtype)
            if mask is not None:
                w = w * mask
            num, den = (w.unsqueeze(1) * (block - ref)).sum(dim=0), w.sum()
            both = clients.reduce_(torch.cat([num, den.view(1)]), "server average")
            if float(both[-1]) <= 0:  # nobody took part: the server's model stays
                avg = None
            else:
                avg = both[:-1].div_(both[-1]).add_(ref)
        if avg is not None:
            block.copy_(avg.unsqueeze(0).expand_as(block))
        active = None if full_mask is None else full_mask.cpu().numpy() > 0
        return Sent.of(*server_flows(env.n, active, _width(env, part),
                                     dtype_bits(state.x.dtype), _kind(part)), active=active)

    return communicate


def data_sizes(env: Services) -> Tensor:
    """``env.train_sizes`` (this process's clients' training-set sizes), or the
    ``ValueError`` of ``weighting='data_size'`` without them (toy services)."""
    sizes = env.train_sizes
    if sizes is None:
        raise ValueError(
            "weighting='data_size' needs the clients' training-set sizes (env.train_sizes, set "
            "by the engine); run through topofl.run or use weighting='uniform'"
        )
    return torch.as_tensor(sizes)
