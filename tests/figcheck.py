"""What a drawn matplotlib figure shows, read back for tests: labelled lines, scatter points, legend
entries, and whether a saved PNG holds a drawing (not a blank canvas)."""
from __future__ import annotations

import matplotlib.colors as mcolors
import matplotlib.image as mpimg
import numpy as np
from matplotlib.collections import PathCollection


def lines(ax) -> dict:
    """``{label: Line2D}`` of the labelled lines of ``ax`` (matplotlib names unlabelled ones ``_child…``)."""
    return {ln.get_label(): ln for ln in ax.get_lines() if not ln.get_label().startswith("_")}


def legend_labels(ax) -> list[str]:
    """The entries of ``ax``'s legend, or of its figure's when the figure holds the one legend (Fig. 3a's, below
    both panels)."""
    leg = ax.get_legend() or (ax.figure.legends[0] if len(ax.figure.legends) == 1 else None)
    assert leg is not None, f"axes {ax.get_title()!r} has no legend"
    return [t.get_text() for t in leg.get_texts()]


def points(ax) -> np.ndarray:
    """Every scatter point of ``ax`` (the offsets of its ``scatter`` collections), shape ``(n, 2)``."""
    parts = [np.asarray(c.get_offsets(), dtype=float).reshape(-1, 2) for c in ax.collections
             if isinstance(c, PathCollection)]
    parts = [p for p in parts if len(p)]
    return np.concatenate(parts) if parts else np.zeros((0, 2))


def same_colour(a, b) -> bool:
    return np.allclose(mcolors.to_rgba(a)[:3], mcolors.to_rgba(b)[:3], atol=1e-3)


def assert_png_drawn(path, *, min_ink: float = 0.002, colour=None) -> None:
    """``path`` is a PNG in which at least ``min_ink`` of the pixels differ from the background (the
    most common pixel) and, when ``colour`` is given, some pixels are that colour (within 4/255)."""
    img = mpimg.imread(path)
    assert img.ndim == 3 and img.shape[0] > 10 and img.shape[1] > 10, f"{path}: not an image {img.shape}"
    rgb = img[..., :3].reshape(-1, 3)
    values, counts = np.unique(np.round(rgb, 3), axis=0, return_counts=True)
    background = values[np.argmax(counts)]
    ink = np.mean(np.abs(rgb - background).max(axis=1) > 0.1)
    assert ink >= min_ink, f"{path}: only {ink:.4%} of the pixels are drawn"
    if colour is not None:
        want = np.array(mcolors.to_rgb(colour))
        assert np.any(np.abs(rgb - want).max(axis=1) < 4 / 255), f"{path}: nothing drawn in {colour}"
