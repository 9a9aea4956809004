"""Measures of a drawn figure that a reader meets (tests/test_panel_legibility.py): tick labels that overwrite each
other, a canvas whose right part is empty, text too small at the size a page or the README shows it, texts that
overlap, axes without a label, names away from (or over) the markers they name, markers on one another or shifted off
their values, and differences drawn too close to see."""
from __future__ import annotations

import itertools
import math

import matplotlib
import numpy as np

from lib.style import _box_gap  # pixels from a point to a box: the placement's measure, the checks' too

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


MAX_TALL_PX = 2500       # the tallest saved panel a reader scrolls through whole
SAVED_DPI = 200          # lib.style.use_style's savefig.dpi: the PNG's pixels
MIN_COLOUR_DELTA = 25.0  # CIE76 ΔE below which two arms' colours read as one (Tol's orange and red: 24)
# CIEDE2000 ΔE below which two arms' colours read as one where CIE76 overstates the difference (saturated greens and
# blues): Tol's vibrant orange and red 18.3, S3n's bright green and vibrant teal (full@matched, full@seed_budget) 19.2,
# which CIE76 puts at 39. The society study's other arms are 21.0 (niche and niche_verified) or more apart.
MIN_COLOUR_DELTA_2000 = 20.0


def _pad(bb, px: float):
    from matplotlib.transforms import Bbox

    return Bbox.from_extents(bb.x0 - px, bb.y0 - px, bb.x1 + px, bb.y1 + px)


def _titles(fig) -> list:
    out = [fig._suptitle] if getattr(fig, "_suptitle", None) is not None else []
    for ax in fig.axes:
        if ax.get_visible():
            out += [ax.title, ax._left_title, ax._right_title]
    return [t for t in out if t.get_visible() and t.get_text().strip()]


def title_crossings(fig, touch_px: float = 1.0) -> list[tuple[str, str]]:
    """Axis labels that cross or touch (within ``touch_px`` pixels) a title: their own axes',
    another axes' or the figure's: ``(label, title)``. A y-label of a right panel running into the left panel's
    title, or a long y-label reaching up into its own title, reads as one text."""
    fig.canvas.draw()
    r = fig.canvas.get_renderer()
    titles = [(t, t.get_window_extent(r)) for t in _titles(fig)]
    out = []
    for ax in fig.axes:
        if not ax.get_visible() or not ax.axison:
            continue
        for lab in (ax.xaxis.label, ax.yaxis.label):
            if not (lab.get_visible() and lab.get_text().strip()):
                continue
            bb = _pad(lab.get_window_extent(r), touch_px)
            out += [(lab.get_text()[:40], t.get_text()[:40]) for t, tb in titles if bb.overlaps(tb)]
    return out


def text_collisions(fig, ax) -> list[tuple[str, str]]:
    """Texts of ``ax`` (annotations such as "p=…, n=…") that overlap its titles: ``(text, title)``."""
    fig.canvas.draw()
    r = fig.canvas.get_renderer()
    titles = [(t, t.get_window_extent(r)) for t in (ax.title, ax._left_title, ax._right_title)
              if t.get_visible() and t.get_text().strip()]
    return [(t.get_text()[:30], s.get_text()[:30]) for t in ax.texts if t.get_visible() and t.get_text().strip()
            for s, sb in titles if t.get_window_extent(r).overlaps(sb)]


def saved_height_px(fig, dpi: float = SAVED_DPI) -> float:
    """The height of the saved PNG (tight box at ``dpi``) in pixels."""
    fig.canvas.draw()
    return fig.get_tightbbox(fig.canvas.get_renderer()).height * dpi


def _lab(colour) -> "np.ndarray":
    import numpy as np
    from matplotlib import colors as mcolors

    rgb = np.array(mcolors.to_rgb(colour))
    rgb = np.where(rgb > 0.04045, ((rgb + 0.055) / 1.055) ** 2.4, rgb / 12.92)
    m = np.array([[0.4124, 0.3576, 0.1805], [0.2126, 0.7152, 0.0722], [0.0193, 0.1192, 0.9505]])
    xyz = m @ rgb / np.array([0.95047, 1.0, 1.08883])
    f = np.where(xyz > 0.008856, np.cbrt(xyz), 7.787 * xyz + 16 / 116)
    return np.array([116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])])


def colour_delta(a, b) -> float:
    """CIE76 ΔE between two colours (0: the same; below ~25 two qualitative colours read as one)."""
    import numpy as np

    return float(np.linalg.norm(_lab(a) - _lab(b)))


def colour_delta_2000(a, b) -> float:
    """CIEDE2000 ΔE between two colours (:func:`delta_e_2000` of their CIELAB): CIE76 corrected for the eye's lower
    sensitivity to chroma differences of saturated colours (a green and a teal CIE76 puts 39 apart are 19 here)."""
    return delta_e_2000(_lab(a), _lab(b))


def delta_e_2000(lab1, lab2) -> float:
    """CIEDE2000 ΔE between two CIELAB colours ``(L, a, b)`` (Sharma, Wu & Dalal 2005, with their test pairs)."""
    (l1, a1, b1), (l2, a2, b2) = (tuple(map(float, lab1)), tuple(map(float, lab2)))
    cbar = (math.hypot(a1, b1) + math.hypot(a2, b2)) / 2
    g = 0.5 * (1 - math.sqrt(cbar ** 7 / (cbar ** 7 + 25.0 ** 7)))
    a1, a2 = (1 + g) * a1, (1 + g) * a2
    c1, c2 = math.hypot(a1, b1), math.hypot(a2, b2)
    h1 = math.degrees(math.atan2(b1, a1)) % 360 if c1 else 0.0
    h2 = math.degrees(math.atan2(b2, a2)) % 360 if c2 else 0.0
    dh = 0.0 if c1 * c2 == 0 else (h2 - h1 - 360 if h2 - h1 > 180 else h2 - h1 + 360 if h2 - h1 < -180 else h2 - h1)
    dl, dc, dhh = l2 - l1, c2 - c1, 2 * math.sqrt(c1 * c2) * math.sin(math.radians(dh / 2))
    lbar, cbar = (l1 + l2) / 2, (c1 + c2) / 2
    if c1 * c2 == 0:
        hbar = h1 + h2
    elif abs(h1 - h2) <= 180:
        hbar = (h1 + h2) / 2
    else:
        hbar = (h1 + h2 + 360) / 2 if h1 + h2 < 360 else (h1 + h2 - 360) / 2
    t = (1 - 0.17 * math.cos(math.radians(hbar - 30)) + 0.24 * math.cos(math.radians(2 * hbar))
         + 0.32 * math.cos(math.radians(3 * hbar + 6)) - 0.20 * math.cos(math.radians(4 * hbar - 63)))
    sl = 1 + 0.015 * (lbar - 50) ** 2 / math.sqrt(20 + (lbar - 50) ** 2)
    sc, sh = 1 + 0.045 * cbar, 1 + 0.015 * cbar * t
    rt = (-math.sin(math.radians(60 * math.exp(-(((hbar - 275) / 25) ** 2))))
          * 2 * math.sqrt(cbar ** 7 / (cbar ** 7 + 25.0 ** 7)))
    return float(math.sqrt((dl / sl) ** 2 + (dc / sc) ** 2 + (dhh / sh) ** 2 + rt * (dc / sc) * (dhh / sh)))


def _handle_colour(h):
    from matplotlib import colors as mcolors

    if hasattr(h, "get_color") and not hasattr(h, "get_facecolor"):
        return mcolors.to_hex(h.get_color())
    if hasattr(h, "get_facecolor"):
        fc = h.get_facecolor()
        fc = fc[0] if getattr(fc, "ndim", 1) == 2 and len(fc) else fc
        if len(fc) == 0 or (mcolors.to_hex(fc) == "#ffffff" and hasattr(h, "get_edgecolor")):
            ec = h.get_edgecolor()
            fc = ec[0] if getattr(ec, "ndim", 1) == 2 and len(ec) else ec
        return mcolors.to_hex(fc)
    return None


def _is_grey(colour) -> bool:
    from matplotlib import colors as mcolors

    r, g, b = mcolors.to_rgb(colour)
    return max(r, g, b) - min(r, g, b) < 0.08


def _base(label: str) -> str:
    """The arm a legend label names: its first word, before any ``@`` (``"full@e1 (n = 8)"`` → ``full``)."""
    import re

    return re.split(r"[\s,(@]", label.strip(), maxsplit=1)[0].lower()


def _same_arm(a: str, b: str) -> bool:
    """Two labels of one look: a variant (``full@e1``) and its arm (``full``) share a colour by design. A named
    variant with a look of its own (``full@matched``, ``full@seed_budget``: :func:`lib.style._look_key`) is an arm
    of its own, told apart from its base arm and its base's other variants by its colour."""
    import re

    from lib import style

    _arm_names()  # the society's looks registered
    def key(label: str) -> str:
        return style._look_key(re.split(r"[\s,(]", label.strip(), maxsplit=1)[0]).lower()
    return key(a) == key(b)


def _arm_names() -> set[str]:
    """Every arm and method name with a fixed look, and every legend label a society arm has (``TIES``)."""
    from lib import style
    from lib.society import arms

    style.register_looks(arms.LOOKS)
    return {k.lower() for k in style._LOOKS} | {arms.label(a).lower() for a in arms.SPECS} | {
        a.removeprefix(arms.BASELINE_PREFIX).lower() for a in arms.SPECS}


def is_arm_label(label: str) -> bool:
    """A legend label that names an arm or method (whole, or as its first word), not a reference line."""
    names = _arm_names()
    return label.strip().lower() in names or _base(label) in names or label.split(" (n")[0].strip().lower() in names


def _shown_arm_colours(fig) -> dict[str, str]:
    """``{legend label: colour}`` of the labelled arms ``fig`` shows (every legend entry of the figure, and the
    labelled lines and collections of its axes), greys (reference lines, told apart by their line style) left out."""
    seen: dict[str, str] = {}
    for ax in fig.axes:
        handles, labels = ax.get_legend_handles_labels()
        leg = ax.get_legend()
        if leg is not None:
            handles += list(leg.legend_handles)
            labels += [t.get_text() for t in leg.get_texts()]
        for h, lab in zip(handles, labels):
            c = _handle_colour(h)
            if c and lab and not lab.startswith("_") and not _is_grey(c) and is_arm_label(lab):
                seen.setdefault(lab, c)
    for leg in fig.legends:
        for h, t in zip(leg.legend_handles, leg.get_texts()):
            c = _handle_colour(h)
            if c and t.get_text() and not _is_grey(c) and is_arm_label(t.get_text()):
                seen.setdefault(t.get_text(), c)
    return seen


def similar_colours(fig, min_delta: float = MIN_COLOUR_DELTA, delta=colour_delta) -> list[tuple[str, str, float]]:
    """Pairs of labelled arms shown together (every legend entry of the figure, and the labelled lines and
    collections of its axes) whose colours are closer than ``min_delta`` (``delta``: CIE76 ΔE unless told):
    ``(a, b, ΔE)``. Greys (reference lines, told apart by their line style) and an arm's own variants are left out."""
    seen = _shown_arm_colours(fig)
    out = []
    for a, b in itertools.combinations(sorted(seen), 2):
        d = delta(seen[a], seen[b])
        if d < min_delta and not _same_arm(a, b):
            out.append((a, b, round(d, 1)))
    return out


def similar_colours_2000(fig, min_delta: float = MIN_COLOUR_DELTA_2000) -> list[tuple[str, str, float]]:
    """:func:`similar_colours` in CIEDE2000 (:func:`colour_delta_2000`), below :data:`MIN_COLOUR_DELTA_2000`."""
    return similar_colours(fig, min_delta, delta=colour_delta_2000)


MARKER_PX = 4.0  # half a marker's width as drawn (ms 7-8 at the figure's dpi): closer points read as one


def _marker_points(ax) -> list[tuple[object, float, float, float]]:
    """Every marker drawn on ``ax``, in display pixels: ``(artist, x, y, radius)``: lines with a marker and scatter
    points, each where it is drawn (a scatter's offset transform included: a marker shifted off its value is seen
    where it is)."""
    from matplotlib.collections import PathCollection

    px = ax.figure.dpi / 72
    out = []
    for line in ax.get_lines():
        if not line.get_visible() or line.get_marker() in (None, "", "None", " "):
            continue
        xy = line.get_transform().transform(np.column_stack([line.get_xdata(), line.get_ydata()]).astype(float))
        r = (line.get_markersize() + line.get_markeredgewidth()) / 2 * px
        out += [(line, float(x), float(y), r) for x, y in xy if np.isfinite(x) and np.isfinite(y)]
    for c in ax.collections:
        if not (isinstance(c, PathCollection) and c.get_visible()) or not len(c.get_offsets()):
            continue
        xy = c.get_offset_transform().transform(np.asarray(c.get_offsets(), dtype=float))
        sizes = np.resize(np.asarray(c.get_sizes(), dtype=float), len(xy)) if len(c.get_sizes()) else np.full(len(xy), 36.0)
        out += [(c, float(x), float(y), float(np.sqrt(s) / 2 * px)) for (x, y), s in zip(xy, sizes)
                if np.isfinite(x) and np.isfinite(y)]
    return out


def _name(artist) -> str:
    return str(artist.get_gid() or artist.get_label())[:30]


def _marker_labels(fig, ax):
    """The names placed on ``ax`` beside a marker: ``(text, box, own marker, the other markers)``, one per annotation
    whose anchor (``xy``) lies on a marker of ``ax``; a name whose anchor lies on no marker names ``None``."""
    fig.canvas.draw()
    r = fig.canvas.get_renderer()
    pts = _marker_points(ax)
    out = []
    for t in ax.texts:
        if not (t.get_visible() and t.get_text().strip() and hasattr(t, "xy")) or t.xycoords != "data":
            continue
        ax_, ay = ax.transData.transform(t.xy)
        own = [p for p in pts if abs(p[1] - ax_) <= 1.5 and abs(p[2] - ay) <= 1.5]
        mine = max(own, key=lambda p: p[3]) if own else None
        others = [p for p in pts if abs(p[1] - ax_) > 1.5 or abs(p[2] - ay) > 1.5]
        out.append((t, _text_box(t, r), mine, others))
    return out


def _text_box(t, renderer):
    """The box of the text ``t`` alone (an annotation's own extent also holds its leader line)."""
    return matplotlib.text.Text.get_window_extent(t, renderer)


def labels_over_markers(fig, ax, pad_px: float = 1.0) -> list[str]:
    """Texts placed on ``ax`` (annotations: a design's name) whose box covers a marker of ``ax``, its centre or, for
    a name placed beside a marker, any part of another marker: the name of one design printed over another design's
    marker (or its own)."""
    fig.canvas.draw()
    r = fig.canvas.get_renderer()
    out = []
    for t in ax.texts:
        if t.get_visible() and t.get_text().strip():
            bb = _pad(_text_box(t, r), pad_px)
            out += [f"{t.get_text()[:30]} over {_name(a)}" for a, x, y, _ in _marker_points(ax) if bb.contains(x, y)]
    for t, bb, mine, others in _marker_labels(fig, ax):
        out += [f"{t.get_text()[:30]} over {_name(a)}" for a, x, y, rad in others + ([mine] if mine else [])
                if _box_gap(bb, x, y) < rad]
    return sorted(set(out))


MAX_LABEL_GAP_PT = 6.0  # the widest gap between a name and its marker's edge that still reads as beside it
MIN_CLEAR_PT = 2.5      # the narrowest gap between a name and another marker's edge that does not read as its name


def labels_away_from_their_markers(fig, ax, max_gap_pt: float = MAX_LABEL_GAP_PT,
                                   min_clear_pt: float = MIN_CLEAR_PT) -> list[str]:
    """Names placed beside a marker (annotations anchored on one) that do not read as its name: anchored on no marker;
    further than ``max_gap_pt`` points from its marker's edge (a name floating off it) unless joined to it by a leader
    line (``arrowprops``); nearer another marker's edge than its own, or within ``min_clear_pt`` of it (a name that
    runs over or past another model's marker reads as that one's)."""
    out = []
    pt = fig.dpi / 72
    for t, bb, mine, others in _marker_labels(fig, ax):
        name = t.get_text()[:30]
        if mine is None:
            out.append(f"{name}: anchored on no marker")
            continue
        gap = _box_gap(bb, mine[1], mine[2]) - mine[3]
        if gap > max_gap_pt * pt and t.arrow_patch is None:
            out.append(f"{name}: {gap / pt:.0f} pt from its marker")
        near = sorted({(round((_box_gap(bb, x, y) - rad) / pt, 1), _name(a)) for a, x, y, rad in others
                       if _box_gap(bb, x, y) - rad < (min_clear_pt * pt if t.arrow_patch is not None
                                                            else max(min_clear_pt * pt, gap + 0.5))})
        out += [f"{name}: {g:g} pt from {other}'s marker (its own: {gap / pt:.1f} pt)" for g, other in near]
    return out


def markers_off_their_values(fig) -> list[str]:
    """Markers drawn away from their values: a scatter point or a line's marker whose drawn position differs by more
    than half a pixel from where its axes' data transform puts its value (shifted "side by side" by an offset
    transform, which moves a point to another value on the axis): ``"<name> at (x, y)"``."""
    fig.canvas.draw()
    out = []
    for ax in fig.axes:
        for artist, x, y, _ in _marker_points(ax):
            data = (artist.get_xydata() if hasattr(artist, "get_xydata") else np.asarray(artist.get_offsets(), float))
            at = ax.transData.transform(np.asarray(data, dtype=float))
            if not np.any(np.hypot(at[:, 0] - x, at[:, 1] - y) <= 0.5):
                vx, vy = ax.transData.inverted().transform((x, y))
                out.append(f"{_name(artist)} drawn at ({vx:.3g}, {vy:.3g})")
    return sorted(set(out))


def lines_drawn_together(fig, min_diff: float, px: float = MARKER_PX) -> list[tuple[str, str, float]]:
    """Pairs of labelled lines whose last values differ by ``min_diff`` or more but which no axes of ``fig`` draws
    ``px`` pixels apart there: a difference the figure reports that the reader cannot see (``(a, b, difference)``)."""
    fig.canvas.draw()
    ends: dict[str, list[tuple[float, float]]] = {}
    for ax in fig.axes:
        for line in ax.get_lines():
            lab = line.get_label()
            if lab.startswith("_") or not line.get_visible() or len(line.get_xdata()) < 2:
                continue
            x, y = float(line.get_xdata()[-1]), float(line.get_ydata()[-1])
            ends.setdefault(lab, []).append((ax, x, y))
    out = []
    for a, b in itertools.combinations(sorted(ends), 2):
        diff = abs(ends[a][0][2] - ends[b][0][2])
        if diff < min_diff:
            continue
        apart = [abs(ax.transData.transform((xa, ya))[1] - ax.transData.transform((xb, yb))[1])
                 for ax, xa, ya in ends[a] for ax2, xb, yb in ends[b] if ax2 is ax and xa == xb]
        if apart and max(apart) < px:
            out.append((a, b, round(diff, 3)))
    return out


def stacked_markers(fig, ax, px: float = MARKER_PX) -> list[tuple[str, str]]:
    """Markers of two different artists drawn within ``px`` pixels of each other: one hides the other."""
    fig.canvas.draw()
    pts = _marker_points(ax)
    out = set()
    for i, (a, xa, ya, _) in enumerate(pts):
        for b, xb, yb, _ in pts[i + 1:]:
            if a is not b and abs(xa - xb) < px and abs(ya - yb) < px:
                out.add(tuple(sorted((_name(a), _name(b)))))
    return sorted(out)


def text_overlaps(fig, pad_px: float = 0.5) -> list[tuple[str, str]]:
    """Pairs of visible texts of ``fig`` (titles, axis and tick labels, names, notes, legend entries) whose boxes
    overlap by more than ``pad_px`` pixels each way: one overwrites the other. Tick labels written at a slant are
    left to :func:`tick_overlaps` (their boxes overlap where their letters do not)."""
    fig.canvas.draw()
    r = fig.canvas.get_renderer()
    texts = [t for t in shown_texts(fig) if t.get_rotation() % 90 == 0]
    boxes = [(t, _pad(_text_box(t, r), -pad_px)) for t in texts]
    return sorted({tuple(sorted((a.get_text()[:30], b.get_text()[:30])))
                   for (a, ba), (b, bb) in itertools.combinations(boxes, 2) if ba.overlaps(bb)})


def shown_texts(fig) -> list:
    """Every text ``fig`` shows: its own and its suptitle, and of each visible axes its titles, axis labels, the tick
    labels in view, its texts and its legend's; the figure's legends'. (``findobj`` also finds the labels of ticks
    outside the view, which are not drawn.)"""
    fig.canvas.draw()
    out = [*fig.texts, *([fig._suptitle] if getattr(fig, "_suptitle", None) is not None else [])]
    legends = list(fig.legends)
    for ax in fig.axes:
        if not (ax.get_visible() and ax.axison) and not ax.texts:
            continue
        out += [ax.title, ax._left_title, ax._right_title, *ax.texts]
        if ax.axison:
            for axis in (ax.xaxis, ax.yaxis):
                lo, hi = sorted(axis.get_view_interval())
                ticks = [t for t in axis.get_major_ticks() + axis.get_minor_ticks()
                         if lo - 1e-9 * (hi - lo) <= t.get_loc() <= hi + 1e-9 * (hi - lo)]
                out += [axis.label] + [lab for t in ticks for lab in (t.label1, t.label2)]
        legends += [ax.get_legend()] if ax.get_legend() is not None else []
    for lg in legends:
        out += [*lg.get_texts(), lg.get_title()]
    return [t for t in dict.fromkeys(out) if t.get_visible() and t.get_text().strip()]


def unlabelled_axes(fig) -> list[str]:
    """Axes of ``fig`` whose x or y axis shows tick labels but has no label, neither its own nor one of an axes it
    shares that axis with (a row of panels sharing y labels it once): ``"<title>: y"``."""
    fig.canvas.draw()
    out = []
    for ax in fig.axes:
        if not (ax.get_visible() and ax.axison):
            continue
        for k, axis, shared in (("x", ax.xaxis, ax.get_shared_x_axes()), ("y", ax.yaxis, ax.get_shared_y_axes())):
            ticks = [t for t in axis.get_ticklabels() if t.get_visible() and t.get_text().strip()]
            named = [getattr(a, f"get_{k}label")().strip() for a in shared.get_siblings(ax)]
            if ticks and axis.get_visible() and not any(named):
                title = " ".join(" ".join(ax.get_title(loc=w) for w in ("left", "center")).split())
                out.append(f"{title[:30] or 'axes'}: {k}")
    return out


def titles_broken_inside_a_phrase(fig) -> list[str]:
    """Lines of a multi-line title (the figure's or an axes') that open a bracket they do not close or close one they
    did not open: the title was wrapped inside a phrase ("(it counts in the" / "pooled row)")."""
    out = []
    for t in _titles(fig):
        lines = t.get_text().split("\n")
        if len(lines) > 1:
            out += [ln[:50] for ln in lines if ln.count("(") != ln.count(")")]
    return out


README_PX = 830  # the README's column on GitHub at a desktop width (CSS px): a wider PNG is scaled down to it


def readme_legend_sizes(fig, readme_px: float = README_PX, dpi: float = SAVED_DPI) -> list[tuple[str, float]]:
    """Each legend text of ``fig`` with its size in points as the README shows the saved PNG (tight box at ``dpi``,
    scaled to ``readme_px`` CSS pixels when wider): ``(text, shown pt)``, smallest first."""
    fig.canvas.draw()
    width_px = fig.get_tightbbox(fig.canvas.get_renderer()).width * dpi
    k = min(1.0, readme_px / width_px) * dpi / CSS_DPI  # shown CSS px per point drawn, then in CSS points (x 72/96)
    legends = [*fig.legends, *[ax.get_legend() for ax in fig.axes if ax.get_legend() is not None]]
    texts = [t for lg in legends for t in [*lg.get_texts(), lg.get_title()] if t.get_text().strip()]
    return sorted(((t.get_text()[:40], round(t.get_fontsize() * k * 72 / 96 * 96 / 72, 2)) for t in texts),
                  key=lambda x: x[1])


def readme_scale(fig, readme_px: float = README_PX, dpi: float = SAVED_DPI) -> float:
    """Points as shown per point as drawn where a page shows the saved PNG (tight box at ``dpi``) at ``readme_px``
    CSS pixels wide, as the README does (a narrower PNG at its own size): ``min(1, readme_px / width) · dpi / 96``."""
    fig.canvas.draw()
    width_px = fig.get_tightbbox(fig.canvas.get_renderer()).width * dpi
    return min(1.0, readme_px / width_px) * dpi / CSS_DPI


def readme_small_texts(fig, limit: float = MIN_SHOWN_PT, readme_px: float = README_PX) -> list[tuple[str, float]]:
    """Every visible text (tick labels, titles, annotations such as "p=…, n=…", legends) smaller than ``limit``
    points where the saved PNG is shown at the README's width (:func:`readme_scale`): ``(text, shown pt)``.
    :func:`small_texts` measures a page's inline size (110 dpi, a 1200 px column), where a wide figure keeps its
    text; at the README's 830 px the same 7 pt reads as ~5.8 pt in a figure 10.5 in wide."""
    k = readme_scale(fig, readme_px)
    return sorted({(t.get_text()[:40], round(t.get_fontsize() * k, 2)) for t in shown_texts(fig)
                   if t.get_fontsize() * k < limit - 1e-9}, key=lambda x: (x[1], x[0]))
