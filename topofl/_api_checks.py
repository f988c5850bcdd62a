"""The checks :func:`topofl.api.prepare` makes of a run call's graph, data and model before
anything is built (``topofl.api`` imports them back): a networkx graph or a PyG ``Data`` made
a :class:`~topofl.graph.Topology`, a graph spec parsed once, the graph's size against the
clients', the dataset name and the partition, and a table of keyword arguments
(``partition_params``, ``model_params``) against the signature it goes to.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping
from typing import Any

import networkx as nx
from torch.utils.data import Dataset as TorchDataset

from topofl import data as data_mod
from topofl import topologies
from topofl._utils.validation import check_int, check_type, did_you_mean_each
from topofl.data.datasets import DATASETS
from topofl.data.datasets.registry import check_dataset, unknown_dataset
from topofl.data.federated import federate
from topofl.graph import TimeVarying, Topology
from topofl.topologies import GraphFamily
from topofl.workflow.schema import partition_signature

#: The options of :func:`topofl.data.federate` that ``partition_params`` may also hold.
FEDERATE_OPTIONS = ("val", "test", "flip_labels")


def _graph_name(topology: Any) -> str:
    return topology if isinstance(topology, str) else str(getattr(topology, "name", topology))


def _as_topology(topology: Any) -> Any:
    """A networkx graph or a PyG ``Data`` as a :class:`Topology` (the rule of :func:`run`'s
    ``topology``); anything else as it is."""
    build: Callable[..., Topology]
    if isinstance(topology, nx.Graph):
        build, what, call = Topology.from_networkx, "networkx", "from_networkx(G"
    elif hasattr(topology, "edge_index") and not isinstance(topology, (Topology, TimeVarying)):
        build, what, call = Topology.from_pyg, "pyg", "from_pyg(data"
    else:
        return topology
    try:
        return build(topology, name=what)
    except ValueError as exc:
        if "undirected" not in str(exc):
            raise
        kind = "networkx" if what == "networkx" else "PyG"
        extra = "" if what == "networkx" else " without edge_weight"
        raise ValueError(f"topology (a {kind} {type(topology).__name__}{extra}, given Metropolis "
                         f"weights): {exc}; build tf.Topology.{call}, weights=\"push_sum\") "
                         "(for sgp, osgp, dfedpgp) or weights=\"uniform\" and pass that"
                         ) from None


def _check_topology(topology: Any) -> tuple[GraphFamily, Mapping[str, Any]] | None:
    """The checked spec of a ``topology`` string (the run's one parse of it), else ``None``."""
    if isinstance(topology, str):
        return topologies.check_spec(topology)
    if topology is not None and not isinstance(topology, (Topology, TimeVarying)):
        raise TypeError(f"topology must be a graph spec string, a Topology, a TimeVarying or "
                        f"None, got {type(topology).__name__} {topology!r}"[:300])
    return None


def _check_graph_size(topology: Any, graph: tuple[GraphFamily, Mapping[str, Any]] | None,
                      data: Any, n_clients: Any, partition: Any) -> None:
    """A graph whose number of nodes is known before the data is read (a Topology, a
    TimeVarying, a spec with ``n=``) against the clients' number when that is known too
    (``n_clients``, or FederatedData's): the engine's check, made before data and model are
    built."""
    if isinstance(topology, (Topology, TimeVarying)):
        nodes: Any = topology.n
    elif graph is not None and graph[0].from_labels is None:  # from_labels: the data decide
        family, kwargs = graph
        if family.missing({**kwargs, "n": None}):
            return  # a spec that misses a parameter: building it says which, first
        nodes = kwargs.get("n")
    else:
        return
    if isinstance(data, data_mod.FederatedData):
        clients: Any = data.num_clients
    elif partition == "natural":  # one client per group of the data: known once it is read
        return
    else:
        clients = n_clients
    if (isinstance(nodes, int) and isinstance(clients, int) and not isinstance(nodes, bool)
            and nodes != clients):
        raise ValueError(f"the topology has n={nodes} nodes but the data has {clients} clients"
                         f" (n_clients={clients}): make them equal, or leave n out of the "
                         "graph spec (it then takes the number of clients)")


def _check_data(data: Any, n_clients: Any, partition: Any, partition_params: Any) -> None:
    """What :func:`topofl.data.federate` will be given, checked without reading the data."""
    if isinstance(data, str):
        if data.partition(":")[0] not in DATASETS:
            raise ValueError(unknown_dataset(data.partition(":")[0], sort=False) + " (a spec "
                             "such as 'synthetic:n_samples=5000,seed=0' passes options)")
        check_dataset(data, required=False)  # its options, as load checks them (nothing read)
    elif not (isinstance(data, (data_mod.Dataset, TorchDataset)) or (
            isinstance(data, tuple) and len(data) == 2
            and all(isinstance(d, TorchDataset) for d in data))):
        raise TypeError(f"data must be a dataset name, a topofl Dataset or FederatedData, a "
                        f"torch.utils.data.Dataset or a (train, test) pair of them, got "
                        f"{type(data).__name__} {data!r}"[:300])
    if not (n_clients is None and partition == "natural"):  # natural: one client per group
        check_int(n_clients, "n_clients", low=1)
    check_type(partition, str, "partition")
    options = {**partition_signature(partition), **_federate_options()}
    _check_options(partition_params, "partition_params", options,
                   data_mod.PARTITIONS[partition], federate)


def _check_options(given: Any, what: str, params: Mapping[str, inspect.Parameter],
                   *functions: Callable[..., Any]) -> None:
    """A table of keyword arguments (``partition_params``, ``model_params``) checked against
    ``params`` (the signature they go to): unknown and missing keys, and the types the
    functions' annotations give."""
    if given is None:
        given = {}
    if not isinstance(given, Mapping):
        raise TypeError(f"{what} must be a mapping, got {type(given).__name__} {given!r}"[:300])
    unknown = sorted(set(given) - set(params), key=str)
    if unknown:
        raise TypeError(f"unknown key(s) {unknown} in {what}"
                        f"{did_you_mean_each(unknown, params)}; accepted: {sorted(params)}")
    for k, p in params.items():
        if k not in given and p.default is p.empty:
            raise ValueError(f"{what} needs {what}.{k}")
    hints: dict[str, Any] = {}
    for fn in reversed(functions):
        hints.update(_hints(fn))
    for k, value in given.items():
        check_type(value, hints.get(k, Any), f"{what}.{k}")


@functools.lru_cache(maxsize=128)
def _hints(fn: Callable[..., Any]) -> dict[str, Any]:
    """The evaluated annotations of ``fn``'s parameters (of a class: its constructor's);
    ``{}`` when they cannot be evaluated (then the types are not checked)."""
    try:  # eval_str: the strings of `from __future__ import annotations` as types
        params = inspect.signature(fn, eval_str=True).parameters.values()
    except Exception:  # noqa: BLE001 - a user's annotation we cannot read: no type check
        return {}
    return {p.name: p.annotation for p in params if p.annotation is not p.empty}


@functools.lru_cache(maxsize=1)
def _federate_options() -> dict[str, inspect.Parameter]:
    params = inspect.signature(federate).parameters
    return {k: params[k] for k in FEDERATE_OPTIONS}
