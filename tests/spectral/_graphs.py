"""Small graphs shared by the spectral tests."""

from __future__ import annotations

import topofl as tf


def two_halves() -> tuple[tf.Topology, tf.Topology]:
    """Two graphs on 4 nodes, each disconnected, whose union is connected."""
    a = tf.Topology.from_matrix(
        [[0.5, 0.5, 0, 0], [0.5, 0.5, 0, 0], [0, 0, 0.5, 0.5], [0, 0, 0.5, 0.5]]
    )
    b = tf.Topology.from_matrix([[1, 0, 0, 0], [0, 0.5, 0.5, 0], [0, 0.5, 0.5, 0], [0, 0, 0, 1]])
    return a, b
