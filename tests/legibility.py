"""Measures of a drawn figure that a reader meets (tests/test_panel_legibility.py): tick labels that overwrite each
other, a canvas whose right part is empty, and text too small at the size a page shows it."""
from __future__ import annotations

import itertools
import math

import matplotlib

SHOWN_DPI = 110        # a page shows a panel as drawn inline: at figure.dpi (lib.style.show_saved)
CSS_DPI = 96           # a browser's points: 96 CSS pixels per inch
COLUMN_PX = 1200       # a page's reading column: wider figures are scaled down to it
MIN_SHOWN_PT = 7.0     # the smallest text a reader should have to read, in points as shown


def tick_overlaps(fig) -> list[tuple[str, str]]:
    """Pairs of tick labels of one axis that overwrite each other: horizontal ones whose boxes intersect;
    rotated ones (parallel lines) whose anchors are closer across the text's direction than a line is high."""
    fig.canvas.draw()
    r, out = fig.canvas.get_renderer(), []
    for ax in fig.axes:
        for axis, labels in (("x", ax.get_xticklabels()), ("y", ax.get_yticklabels())):
            labs = [t for t in labels if t.get_text().strip() and t.get_visible()]
            for a, b in itertools.combinations(labs, 2):
                rot = a.get_rotation() % 180
                ba, bb = a.get_window_extent(r), b.get_window_extent(r)
                if rot in (0, 90):
                    hit = ba.overlaps(bb)
                else:
                    d = abs(ba.x1 - bb.x1) if axis == "x" else abs(ba.y1 - bb.y1)
                    hit = d * math.sin(math.radians(rot)) < 0.9 * a.get_fontsize() * fig.dpi / 72
                if hit:
                    out.append((a.get_text(), b.get_text()))
    return out


def right_gap(fig) -> float:
    """The share of the saved canvas's width right of every axes, its tick labels, legends and texts (what is left
    there is a title running past the plots)."""
    fig.canvas.draw()
    r = fig.canvas.get_renderer()
    tight = fig.get_tightbbox(r)
    x0, x1 = tight.x0 * fig.dpi, tight.x1 * fig.dpi
    right = 0.0
    for ax in (a for a in fig.axes if a.get_visible()):
        parts = [ax] + [t for t in ax.get_xticklabels() + ax.get_yticklabels() + ax.texts
                        if t.get_visible() and t.get_text().strip()]
        parts += [ax.get_legend()] if ax.get_legend() is not None else []
        right = max([right] + [p.get_window_extent(r).x1 for p in parts])
    right = max([right] + [lg.get_window_extent(r).x1 for lg in fig.legends])
    return (x1 - right) / (x1 - x0)


def shown_scale(fig) -> float:
    """Points as shown per point as drawn: drawn at :data:`SHOWN_DPI`, read at :data:`CSS_DPI`, a figure wider
    than :data:`COLUMN_PX` scaled down to it."""
    fig.canvas.draw()
    width = fig.get_tightbbox(fig.canvas.get_renderer()).width * SHOWN_DPI
    return min(1.0, COLUMN_PX / width) * SHOWN_DPI / CSS_DPI


def small_texts(fig, limit: float = MIN_SHOWN_PT) -> list[tuple[str, float]]:
    """Visible texts smaller than ``limit`` points as shown: ``(text, shown size)``."""
    k = shown_scale(fig)
    return sorted({(t.get_text()[:40], round(t.get_fontsize() * k, 1)) for t in fig.findobj(matplotlib.text.Text)
                   if t.get_visible() and t.get_text().strip() and t.get_fontsize() * k < limit - 1e-9})


def hidden_lines(fig) -> list[tuple[str, str]]:
    """Labelled lines drawn exactly under another line of the same axes (every point the same, the other on top:
    a higher zorder, or the same and drawn later, at least as wide): ``(hidden, by)``. Its legend entry names a
    line the reader cannot see."""
    out = []
    for ax in fig.axes:
        lines = [ln for ln in ax.get_lines() if ln.get_visible() and len(ln.get_xdata()) > 1]
        for i, a in enumerate(lines):
            if a.get_label().startswith("_"):
                continue
            xy = (tuple(map(float, a.get_xdata())), tuple(round(float(v), 9) for v in a.get_ydata()))
            for j, b in enumerate(lines):
                if b is a:
                    continue
                on_top = b.get_zorder() > a.get_zorder() or (b.get_zorder() == a.get_zorder() and j > i)
                same = (tuple(map(float, b.get_xdata())), tuple(round(float(v), 9) for v in b.get_ydata())) == xy
                if same and on_top and b.get_linewidth() >= a.get_linewidth():
                    out.append((a.get_label(), b.get_label()))
    return out
