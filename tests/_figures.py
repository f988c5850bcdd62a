"""Readability checks shared by the figure tests: labelled axes, legends that cover no axes."""

from __future__ import annotations

from typing import Any


def assert_readable(fig: Any) -> None:
    """Every visible axes has both labels; no legend overlaps the area of any axes."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    axes = [ax for ax in fig.axes if ax.get_visible() and ax.axison]
    assert axes, "the figure has no visible axes"
    boxes = [ax.get_window_extent(renderer) for ax in axes]
    for ax in axes:
        assert ax.get_xlabel().strip(), f"unlabelled x axis in {ax.get_title()!r}"
        assert ax.get_ylabel().strip(), f"unlabelled y axis in {ax.get_title()!r}"
    legends = [ax.get_legend() for ax in axes] + list(fig.legends)
    for leg in legends:
        if leg is None:
            continue
        lb = leg.get_window_extent(renderer)
        for ax, ab in zip(axes, boxes):
            assert not lb.overlaps(ab), f"a legend covers the axes {ax.get_title()!r}"
