r"""Byzantine nodes: a ``[byzantine]`` run setting, which nodes attack and what they send.

``[byzantine]`` (:attr:`~topofl.engine.RunConfig.byzantine`) names the Byzantine nodes and
their attack (:class:`Byzantine`). The nodes are a ``share`` of the ``n`` nodes
(``floor(share * n + 1/2)`` of them), chosen by ``choose``:
``"random"`` (uniformly without replacement, from ``seed``), ``"degree"`` (the highest
in-degrees of the run's graph at round 0, ties to the lowest id) or ``"betweenness"`` (the
highest betweenness centrality, ties to the lowest id); or they are listed by id
(``nodes``). Under ``attack = "label_flip"`` they are the data's label-flipping clients
(``federate(..., flip_labels=share)``, :mod:`topofl.data.corrupt`: the data layer chooses
them and permutes their labels; they then train and send their models as honest nodes do).

The honest nodes must be a strict majority: a run with half or more of its nodes Byzantine is
refused (``share >= 0.5`` when the table is read; a count ``f`` with ``2 f >= n`` when the
run's ``n`` is known, :meth:`Byzantine.nodes_of`), since the robust rules'
guarantees (:mod:`topofl.engine.pieces.robust`) assume one. A run with no Byzantine node runs
as without the table, with ``byzantine_clients = 0`` in its records: deliberately so with
``share = 0`` or ``nodes = []`` (an attack-free reference whose ``honest_*`` metrics carry the
attacked runs' names), with a ``UserWarning`` (:func:`no_attacker`) where a positive share
rounds to 0 nodes.

On every message of a D-SGD-style gossip (:func:`~topofl.engine.pieces.gossip`, or a
robust rule of :mod:`topofl.engine.pieces.robust`) a Byzantine sender $b$ sends, to the
receiver $i$, the attack's vector $m_{bi}$ instead of its model $x_b$
(:func:`attack_messages`). With $S_i$ the models of $i$ and its honest in-neighbours
($|S_i|$ of them), $\bar{x}_{S_i}$ their mean and $\sigma_{S_i}$ their standard deviation
per coordinate (with $|S_i| - 1$ in the denominator; 0 for one model), $H_i$ and $B_i$ the
honest and Byzantine in-neighbours of $i$:

* ``"sign_flip"``: $m_{bi} = -x_b$ (its own model, negated);
* ``"gaussian"``: $m_{bi} = g_b \sim \mathcal{N}(0, \text{scale}^2 I)$, drawn per sender and
  round from ``(seed, t)`` (the same vector to every receiver);
* ``"alie"`` ("a little is enough", Baruch et al. 2019): $m_{bi} = \bar{x}_{S_i} - z\,
  \sigma_{S_i}$; ``z`` defaults to Baruch et al.'s $z_{\max} = \Phi^{-1}((n - f - s) /
  (n - f))$ with $s = \lfloor n/2 + 1 \rfloor - f$, $f$ the number of Byzantine nodes;
* ``"ipm"`` (inner-product manipulation, Xie et al. 2020): $m_{bi} = -\varepsilon\,
  \bar{x}_{S_i}$, ``eps`` default 0.1;
* ``"dissensus"`` (He, Karimireddy and Jaggi 2022): $m_{bi} = x_i - \varepsilon \sum_{k \in
  H_i} W_{ik} (x_k - x_i) / \sum_{b' \in B_i} W_{ib'}$, ``eps`` default 1.5 (our default):
  under plain gossip node $i$ then moves by $(1 - \varepsilon) \sum_{k \in H_i} W_{ik}
  (x_k - x_i)$, away from its honest neighbours for $\varepsilon > 1$;
* ``"label_flip"``: the messages are the models (the attack is in the data).

The vectors of ``alie``, ``ipm`` and ``dissensus`` are crafted for each receiver (an
omniscient attacker that knows its target's honest neighbourhood: the dissensus attack's own
setting); the same formula is applied to Byzantine receivers, whose rows nobody scores.
The models the Byzantine nodes keep themselves play no part beyond ``sign_flip``'s $x_b$;
the records give the honest nodes' statistics apart (``honest_*`` rows,
:func:`topofl.engine.evaluation.evaluation_row`).

References
----------
.. [1] G. Baruch, M. Baruch, Y. Goldberg, "A little is enough: circumventing defenses for
   distributed learning", NeurIPS 2019.
.. [2] C. Xie, O. Koyejo, I. Gupta, "Fall of empires: breaking Byzantine-tolerant SGD by
   inner product manipulation", UAI 2020.
.. [3] L. He, S. P. Karimireddy, M. Jaggi, "Byzantine-robust decentralized learning via
   ClippedGossip" (self-centered clipping), 2022.

Examples
--------
>>> from topofl.engine.byzantine import Byzantine
>>> spec = Byzantine.from_config({"attack": "sign_flip", "share": 0.2, "choose": "degree"})
>>> spec.nodes_of(tf.topologies.star(10), 10).tolist()  # the hub, then the lowest id
[0, 1]
>>> Byzantine.from_config({"attack": "ipm", "share": 1.0})  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
ValueError: byzantine share must be in [0, 0.5) (robust aggregation needs an honest ...
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
import torch
from torch import Tensor

from topofl._utils.validation import check_choice, check_int, check_real, check_table

__all__ = ["ATTACKS", "CHOICES", "Byzantine", "Attack", "attack_messages", "alie_z",
           "check_byzantine", "no_attacker"]

#: The attacks of ``[byzantine] attack``, with the parameters each takes.
ATTACKS: dict[str, tuple[str, ...]] = {
    "sign_flip": (), "gaussian": ("scale",), "alie": ("z",), "ipm": ("eps",),
    "dissensus": ("eps",), "label_flip": (),
}
#: How ``[byzantine] share`` chooses its nodes.
CHOICES = ("random", "degree", "betweenness")
_KEYS = ("attack", "share", "nodes", "choose", "seed", "scale", "z", "eps")
_DEFAULT_EPS = {"ipm": 0.1, "dissensus": 1.5}
#: The stream of the Gaussian attack's draws.
GAUSSIAN_TAG = 0xB12A_7711


def alie_z(n: int, f: int) -> float:
    r"""Baruch et al.'s $z_{\max}$ for ``f`` Byzantine nodes among ``n``:
    $\Phi^{-1}((n - f - s)/(n - f))$, $s = \lfloor n/2 + 1 \rfloor - f$.

    Examples
    --------
    >>> from topofl.engine.byzantine import alie_z
    >>> round(alie_z(50, 12), 4)
    0.336
    """
    from scipy.stats import norm

    s = math.floor(n / 2 + 1) - f
    z = float(norm.ppf((n - f - s) / (n - f)))
    if not math.isfinite(z):
        raise ValueError(f"alie's default z is not finite for f={f} Byzantine nodes among "
                         f"n={n}: set [byzantine] z")
    return z


@dataclass(frozen=True)
class Byzantine:
    """The ``[byzantine]`` table, checked (see the module docstring).

    Attributes
    ----------
    attack : str
        One of :data:`ATTACKS`.
    share : float or None
        The share of Byzantine nodes, in ``[0, 0.5)`` (with ``choose``).
    nodes : tuple of int or None
        The Byzantine nodes by id (instead of ``share``).
    choose : {"random", "degree", "betweenness"}
    seed : int
        Seeds the random choice and the Gaussian attack's draws.
    scale : float or None
        ``gaussian``: the standard deviation (default 1).
    z : float or None
        ``alie``: the number of standard deviations (default :func:`alie_z`).
    eps : float or None
        ``ipm`` (default 0.1) and ``dissensus`` (default 1.5).
    """

    attack: str
    share: float | None = None
    nodes: tuple[int, ...] | None = None
    choose: str = "random"
    seed: int = 0
    scale: float | None = None
    z: float | None = None
    eps: float | None = None

    @classmethod
    def from_config(cls, table: Mapping[str, Any]) -> Byzantine:
        """The checked table (one-line ``ValueError``/``TypeError`` for a bad key or value)."""
        table = check_table(table, "byzantine", _KEYS)
        if "attack" not in table:
            raise ValueError(f"byzantine needs an attack, one of {', '.join(ATTACKS)}")
        attack = table["attack"]
        if not isinstance(attack, str) or attack not in ATTACKS:
            raise ValueError(f"byzantine attack must be one of {', '.join(ATTACKS)}, got "
                             f"{attack!r}")
        for key in ("scale", "z", "eps"):
            if table.get(key) is not None and key not in ATTACKS[attack]:
                raise ValueError(f"byzantine {key} is a parameter of "
                                 f"{_takes(key)}, not of attack {attack!r}")
        share, nodes = table.get("share"), table.get("nodes")
        choose = check_choice(table.get("choose", "random"), "byzantine choose", CHOICES)
        seed = check_int(table.get("seed", 0), "byzantine seed", low=0)
        if attack == "label_flip":
            if share is not None or nodes is not None or "choose" in table:
                raise ValueError("byzantine attack 'label_flip' takes its nodes from the data "
                                 "(flip_labels=<share>): set no share, nodes or choose")
        elif (share is None) == (nodes is None):
            raise ValueError("byzantine needs exactly one of share (with choose) or nodes")
        if share is not None:
            share = check_real(share, "byzantine share", low=0)
            if not share < 0.5:
                raise ValueError(f"byzantine share must be in [0, 0.5) (robust aggregation "
                                 f"needs an honest majority), got {share!r}: "
                                 "floor(share * n + 1/2) >= n/2 of any n nodes would be "
                                 "Byzantine")
        if nodes is not None:
            if isinstance(nodes, (str, bytes)) or not hasattr(nodes, "__iter__"):
                raise TypeError(f"byzantine nodes must be a list of node ids, got "
                                f"{type(nodes).__name__} {nodes!r}")
            nodes = tuple(check_int(v, "byzantine node", low=0) for v in nodes)
            if len(set(nodes)) != len(nodes):
                raise ValueError(f"byzantine nodes must be distinct, got {list(nodes)}")
            nodes = tuple(sorted(nodes))
            if "choose" in table:
                raise ValueError("byzantine choose picks among a share: set share, not nodes")
        scale = z = eps = None
        if attack == "gaussian":
            scale = check_real(table.get("scale", 1.0), "byzantine scale", low=0)
            if not scale > 0:
                raise ValueError(f"byzantine scale must be > 0, got {scale!r}")
        if attack == "alie" and table.get("z") is not None:
            z = check_real(table["z"], "byzantine z")
        if attack in _DEFAULT_EPS:
            eps = check_real(table.get("eps", _DEFAULT_EPS[attack]), "byzantine eps", low=0)
        return cls(attack, None if share is None else float(share), nodes, choose, seed,
                   scale, z, eps)

    def to_config(self) -> dict[str, Any]:
        """The canonical table (what the records header holds)."""
        out: dict[str, Any] = {"attack": self.attack}
        if self.share is not None:
            out.update(share=self.share, choose=self.choose)
        if self.nodes is not None:
            out["nodes"] = list(self.nodes)
        out["seed"] = self.seed
        for key in ATTACKS[self.attack]:
            value = getattr(self, key)
            if value is not None:
                out[key] = value
        return out

    def nodes_of(self, topology: Any, n: int, flipped: np.ndarray | None = None
                 ) -> np.ndarray:
        """``(f,)`` sorted int64: the Byzantine nodes of a run of ``n`` nodes on
        ``topology`` (its round-0 graph; used by ``choose="degree"/"betweenness"``),
        ``flipped`` the data's label-flipping clients (``label_flip``).

        Raises
        ------
        ValueError
            If a listed node is not one of the ``n``, ``label_flip`` finds no flipped
            client, or ``2 f >= n`` (no honest majority; the message names ``f`` and ``n``).

        Examples
        --------
        >>> from topofl.engine.byzantine import Byzantine
        >>> Byzantine.from_config({"attack": "ipm", "nodes": [1, 4]}).nodes_of(None, 5).tolist()
        [1, 4]
        >>> Byzantine.from_config({"attack": "ipm", "share": 0.45}).nodes_of(None, 2)
        ... # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ValueError: byzantine: 1 of the n=2 nodes would be Byzantine (share=0.45: ...
        """
        if self.attack == "label_flip":
            if flipped is None or not bool(np.asarray(flipped).any()):
                raise ValueError("byzantine attack 'label_flip' takes its nodes from the data: "
                                 "federate it with flip_labels > 0")
            out = np.flatnonzero(np.asarray(flipped, dtype=bool)).astype(np.int64)
        elif self.nodes is not None:
            bad = [v for v in self.nodes if v >= n]
            if bad:
                raise ValueError(f"byzantine node {bad[0]} does not exist: the run has n={n} "
                                 f"nodes (0..{n - 1})")
            out = np.asarray(self.nodes, dtype=np.int64)
        elif self.share is None:
            raise ValueError(f"byzantine attack {self.attack!r} needs its nodes: a share "
                             "(share=0.2) or the node ids (nodes=(1, 4)), got neither")
        else:
            k = math.floor(self.share * n + 0.5)
            out = self._choose(topology, n, k)
        if out.size >= n:
            raise ValueError(f"byzantine: all {n} nodes would be Byzantine; at least one "
                             "must stay honest")
        if 2 * out.size >= n:
            raise ValueError(
                f"byzantine: {out.size} of the n={n} nodes would be Byzantine "
                f"({self._how(n, out.size)}), "
                f"half or more; robust aggregation needs an honest majority: at most "
                f"{(n - 1) // 2} Byzantine node(s) among {n}")
        return out

    def _how(self, n: int, count: int) -> str:
        """How the ``count`` Byzantine nodes of ``n`` were counted, for the messages."""
        if self.attack == "label_flip":
            return "the data's label-flipping clients, flip_labels"
        if self.nodes is not None:
            return f"nodes={list(self.nodes)}"[:120]
        return f"share={self.share:g}: floor({self.share:g} * {n} + 1/2) = {count}"

    def _choose(self, topology: Any, n: int, k: int) -> np.ndarray:
        ids = np.arange(n)
        if self.choose == "random":
            rng = np.random.default_rng(self.seed)
            return np.sort(rng.choice(n, size=k, replace=False)).astype(np.int64)
        if topology is None:
            raise ValueError(f"byzantine choose={self.choose!r} reads the graph: the run has "
                             "none")
        if self.choose == "degree":
            score = np.array([topology.graph.in_degree(v) for v in range(n)], dtype=np.float64)
        else:
            import networkx as nx

            bc = nx.betweenness_centrality(topology.graph)
            score = np.array([bc[v] for v in range(n)], dtype=np.float64)
        order = np.lexsort((ids, -score))
        return np.sort(order[:k]).astype(np.int64)


def _takes(key: str) -> str:
    return " and ".join(repr(a) for a, ps in ATTACKS.items() if key in ps)


class Attack(NamedTuple):
    """One round's attack, given to ``communicate`` as ``rnd.byzantine``.

    Attributes
    ----------
    attack : str
    byzantine : numpy.ndarray
        ``(n,)`` bool: the Byzantine nodes.
    t : int
        The round.
    seed : int
    scale, z, eps : float
        The attack's parameters (those it does not take are 0).
    """

    attack: str
    byzantine: np.ndarray
    t: int
    seed: int = 0
    scale: float = 0.0
    z: float = 0.0
    eps: float = 0.0

    @classmethod
    def of(cls, spec: Byzantine, byzantine: np.ndarray, t: int) -> Attack:
        """Round ``t``'s attack of ``spec`` by the nodes ``byzantine`` (``(n,)`` bool)."""
        n, f = byzantine.size, int(byzantine.sum())
        z = spec.z if spec.z is not None else (alie_z(n, f) if spec.attack == "alie" else 0.0)
        return cls(spec.attack, byzantine, t, spec.seed, spec.scale or 0.0, float(z),
                   spec.eps or 0.0)

    def noise(self, width: int, device: torch.device, dtype: torch.dtype) -> Tensor:
        """``[n, width]``: the Gaussian attack's vectors of round ``t`` (rows of the honest
        nodes 0), drawn on the CPU in float64 from ``(seed, t)``, Byzantine nodes in id
        order."""
        n = self.byzantine.size
        key = int(np.random.SeedSequence([self.seed, GAUSSIAN_TAG, self.t]).generate_state(1)[0])
        g = torch.Generator().manual_seed(key)
        ids = np.flatnonzero(self.byzantine)
        draw = torch.randn(ids.size, width, generator=g, dtype=torch.float64) * self.scale
        out = torch.zeros(n, width, dtype=dtype, device=device)
        out[torch.as_tensor(ids, device=device)] = draw.to(device=device, dtype=dtype)
        return out


def attack_messages(M: Tensor, index: Tensor, weight: Tensor, valid: Tensor, attack: Attack,
                    noise: Tensor | None = None) -> Tensor:
    """The messages receivers get under ``attack``: ``M`` ``[r, K, P]`` holds, for each of
    ``r`` receivers, its own model (slot 0) and its in-neighbours' models (slots ``1..``,
    ``valid`` ``[r, K]`` marks the real ones, ``index`` ``[r, K]`` their ids, ``weight``
    ``[r, K]`` their weights ``W_ij``); a Byzantine sender's slot is replaced by the attack's
    vector (module docstring). ``noise``: :meth:`Attack.noise` (``gaussian``). A new tensor.
    """
    byz = torch.as_tensor(attack.byzantine, device=M.device)[index] & valid
    byz[:, 0] = False  # the receiver's own model is its own
    if attack.attack == "label_flip" or not bool(byz.any()):
        return M
    if attack.attack == "sign_flip":
        return torch.where(byz.unsqueeze(2), -M, M)
    if attack.attack == "gaussian":
        assert noise is not None
        return torch.where(byz.unsqueeze(2), noise[index], M)
    honest = (valid & ~byz).unsqueeze(2).to(M.dtype)
    if attack.attack in ("alie", "ipm"):
        count = honest.sum(dim=1)  # >= 1: the receiver itself
        mean = (M * honest).sum(dim=1) / count
        if attack.attack == "ipm":
            vec = -attack.eps * mean
        else:
            var = (((M - mean.unsqueeze(1)) ** 2) * honest).sum(dim=1) / (count - 1).clamp_min(1)
            vec = mean - attack.z * var.sqrt()
    else:  # dissensus
        own = M[:, 0]
        w = weight.unsqueeze(2)
        pull = (w * honest * (M - own.unsqueeze(1))).sum(dim=1)
        wb = (weight * byz.to(weight.dtype)).sum(dim=1, keepdim=True)
        vec = own - attack.eps * pull / torch.where(wb > 0, wb, torch.ones_like(wb))
    return torch.where(byz.unsqueeze(2), vec.unsqueeze(1), M)


def no_attacker(spec: Byzantine, n: int) -> str:
    """The warning of a ``[byzantine]`` run none of whose ``n`` nodes is Byzantine although its
    share is positive (it rounds to 0 nodes): it runs as without the table.

    Examples
    --------
    >>> from topofl.engine.byzantine import Byzantine, no_attacker
    >>> print(no_attacker(Byzantine.from_config({"attack": "ipm", "share": 0.04}), 10))
    ... # doctest: +ELLIPSIS
    byzantine: the run has no attacker: 0 of the n=10 nodes are Byzantine (share=0.04: ...
    """
    return (f"byzantine: the run has no attacker: 0 of the n={n} nodes are Byzantine "
            f"({spec._how(n, 0)}), so attack {spec.attack!r} never acts and the run equals "
            "one without [byzantine] (its honest_* records are every node's); for one "
            f"attacker set share >= 1/(2n) = 1/{2 * n}, or list its id in nodes")


def check_byzantine(algorithm: Any, byzantine: Any, network: Any = None) -> None:
    """A one-line ``ValueError`` when a run with the ``[byzantine]`` table ``byzantine``
    (``None``: nothing to check) cannot run: its algorithm does not declare
    ``Algorithm.byzantine`` (its messages would not carry the attack), or messages are lost
    (``network``'s ``drop > 0``).

    Examples
    --------
    >>> from topofl.engine.byzantine import check_byzantine
    >>> check_byzantine(tf.algorithms.dsgd(), {"attack": "ipm", "share": 0.1})
    >>> check_byzantine(tf.algorithms.sgp(), {"attack": "ipm", "share": 0.1})
    ... # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: sgp does not send its models through gossip or robust_gossip ...
    >>> check_byzantine(tf.algorithms.dsgd(compressor="topk"), {"attack": "ipm", "share": 0.1})
    ... # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: dsgd with compressor='topk' sends compressed differences ...; drop compressor ...
    """
    if byzantine is None:
        return
    compressor = (getattr(algorithm, "hparams", None) or {}).get("compressor")
    if not getattr(algorithm, "byzantine", False) and compressor is not None:
        fix = ("drop compressor (dsgd without it runs with [byzantine], with any aggregator)"
               if algorithm.name == "dsgd" else "use dsgd without compressor (with any "
               "aggregator)")
        raise ValueError(f"{algorithm.name} with compressor={compressor!r} sends compressed "
                         "differences of its model (CHOCO-Gossip), not the model, so an "
                         f"attack has no message to corrupt: it cannot run with [byzantine]; "
                         f"{fix}")
    if not getattr(algorithm, "byzantine", False):
        raise ValueError(f"{algorithm.name} does not send its models through gossip or "
                         "robust_gossip (Algorithm.byzantine is False): it cannot run with "
                         "[byzantine]; use dsgd (with any aggregator)")
    if network is not None and float(network.get("drop", 0.0) or 0.0) > 0:
        raise ValueError("[byzantine] does not combine with lost messages ([network] drop > 0)")
