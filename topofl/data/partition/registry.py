"""The partition schemes by name."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from topofl.data.partition.grouped import natural
from topofl.data.partition.label_skew import dirichlet, dpfl_pathological, pathological
from topofl.data.partition.sharding import iid, shards

#: The schemes by name, as :func:`topofl.data.federate` and configs refer to them.
PARTITIONS: Mapping[str, Any] = MappingProxyType(
    {
        "iid": iid,
        "shards": shards,
        "dirichlet": dirichlet,
        "pathological": pathological,
        "dpfl_pathological": dpfl_pathological,
        "natural": natural,
    }
)
