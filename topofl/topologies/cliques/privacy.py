"""Differentially private label histograms for Greedy Swap (Remark 2 of D-Cliques)."""

from __future__ import annotations

import math

import numpy as np

from topofl.topologies.cliques._input import _normalised


def _private_histograms(
    counts: np.ndarray, epsilon: float, rng: np.random.Generator
) -> np.ndarray:
    """Remark 2: normalised histograms plus Laplace noise of std ``1 / (m_i epsilon)``."""
    sigma = 1.0 / (counts.sum(axis=1) * epsilon)
    # Laplace(0, b) has standard deviation b * sqrt(2).
    noise = rng.laplace(0.0, 1.0, size=counts.shape) * (sigma / math.sqrt(2.0))[:, None]
    out: np.ndarray = _normalised(counts) + noise
    return out
