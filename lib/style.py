"""One style and one ``save_figure`` for every figure and SI panel.

Every arm and method has one fixed look, the same in every figure (:func:`arm_style`): a colour from
Paul Tol's colour-blind-safe schemes ("bright" for the society, tool-mutation and operator arms,
"muted" for the eight program-search methods) *and* a marker, so lines stay apart in greyscale print.
A variant of an arm, written ``<arm>@<tag>`` (``full@e1``: the arm with elitism 1, ``full@g0.25``: at
grounding 0.25), keeps its base arm's colour and marker and is told apart by a dashed line, a hollow
marker and a hatch on bars. Each saved panel is recorded in ``figures/<scale>/index.json`` with its
caption, data files and config(s), paths relative to the repository; notebook 05 turns that into
``figures/<scale>/INDEX.md``.

Every plots module declares its panels once, as a list of :class:`Panel` (``PANELS``), and saves them
with one call of :func:`save_panels`; :func:`draw_panel` draws one of them by name, so a notebook
that shows a figure under a saved name shows that very drawing. Intervals are named where they are
drawn: a single mean over seeds carries a 95 % CI (t) (:func:`mean_curve`, :func:`dots_with_mean`),
cut to [0, 1] for a rate (:func:`within_bounds`), a share of seeds a Wilson interval
(:func:`wilson_ci`), a paired difference a 95 % CI (sign-flip inversion)
(:func:`paired_difference_panel`; unbounded, so not drawn, with n < 6).
"""
from __future__ import annotations

import contextlib
import os
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Mapping

import matplotlib

matplotlib.use("Agg") if not matplotlib.get_backend().lower().startswith(("module://", "nbagg", "widget", "ipympl")) else None
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import seaborn as sns  # noqa: E402

from lib.core.stats import MIN_PAIRED_N, SIGN_FLIP_CI, WILSON_CI, format_p, wilson_ci  # noqa: E402,F401  (re-exported)
from lib.core.jsonfile import write_json  # noqa: E402
from lib.core.rows import sha256_of  # noqa: E402
from lib.core.figure_index import index_lock, index_path, read_index  # noqa: E402,F401  (read_index: re-exported)
from lib.core.paths import REPO_ROOT, figures_dir, rel  # noqa: E402,F401  (rel: re-exported)
from lib.core.pdffonts import stable_font_subsets  # noqa: E402

from lib.core.palette import REFERENCE_GREY, TOL_BRIGHT, TOL_EXTRA, TOL_MUTED, TOL_VIBRANT  # noqa: E402,F401  (re-exported)

# name -> (colour, marker). Within one experiment every pair differs in colour AND marker. The society's arms
# register their looks from their one table (lib.society.arms, :func:`register_looks`).
_LOOKS = {
    # the society's references that are not arms
    "base": (REFERENCE_GREY, "_"), "founders (mean)": (TOL_BRIGHT["grey"], "|"),
    # tool-mutation arms (reference: sgd)
    "sgd": (REFERENCE_GREY, "o"), "mutate_promote": (TOL_BRIGHT["blue"], "s"),
    "random_promote": (TOL_BRIGHT["red"], "^"),
    # program-search methods (reference: corrected); the two equivalents of corrected get a line style
    "corrected": (TOL_MUTED["indigo"], "o"), "generic_first_jet": (TOL_MUTED["cyan"], "s"),
    "full_jacobian": (TOL_MUTED["teal"], "^"), "gate_blind": (TOL_MUTED["rose"], "D"),
    "random_order": (TOL_VIBRANT["blue"], "v"), "no_feedback": (TOL_MUTED["wine"], "P"),
    "frozen_proposer": (TOL_MUTED["olive"], "X"), "direct_tournament": (TOL_MUTED["green"], "*"),
    # operators: selection rules
    "qd": (TOL_BRIGHT["blue"], "o"), "top_p": (TOL_BRIGHT["red"], "s"),
}
_LINESTYLE = {"generic_first_jet": (0, (5, 2)), "full_jacobian": (0, (1, 1.5))}

_FALLBACK = list(TOL_MUTED.values())
_MARKERS = "osD^vPX*<>hp"
COLOURS = {k: v[0] for k, v in _LOOKS.items()}


def register_looks(looks: dict[str, tuple[str, str]]) -> None:
    """Add an experiment's ``{name: (colour, marker)}`` to the fixed looks (a name keeps the look it has)."""
    clash = {k for k in looks if k in _LOOKS and _LOOKS[k] != looks[k]}
    if clash:
        raise ValueError(f"looks registered twice with different values: {sorted(clash)}")
    _LOOKS.update(looks)
    COLOURS.update({k: v[0] for k, v in looks.items()})


def base_arm(name: str) -> str:
    """``"full@e1"`` → ``"full"``: the arm a variant belongs to (the part before ``@``)."""
    return str(name).split("@", 1)[0]


def _look_key(name: str) -> str:
    """The name whose look ``name`` takes: itself when it has its own look (``full@matched``), else the
    longest ``@``-prefix that has one (``full@matched@e1`` → ``full@matched``), else its base arm."""
    name = str(name)
    parts = name.split("@")
    for k in range(len(parts), 1, -1):
        if "@".join(parts[:k]) in _LOOKS:
            return "@".join(parts[:k])
    return parts[0]


def arm_style(name: str) -> dict:
    """The fixed look of an arm or method: ``{"color", "marker", "ls", "mfc", "hatch"}``.

    A plain arm: solid line, filled marker, no hatch. A variant ``<arm>@<tag>``: the base arm's colour
    and marker (the look of the longest prefix that has one, :func:`_look_key`), dashed line, hollow
    marker (``mfc="white"``), hatch ``"//"`` on bars. Unknown names get a stable colour and marker from
    their characters.
    """
    base = _look_key(name)
    if base in _LOOKS:
        col, mk = _LOOKS[base]
    else:
        h = sum(map(ord, base))
        col, mk = _FALLBACK[h % len(_FALLBACK)], _MARKERS[h % len(_MARKERS)]
    variant = base != name
    return {"color": col, "marker": mk, "ls": "--" if variant else _LINESTYLE.get(base, "-"),
            "mfc": "white" if variant else col, "hatch": "//" if variant else None}


def line_kw(name: str, **extra) -> dict:
    """Keyword arguments for ``ax.plot`` / ``ax.errorbar`` drawing ``name`` in its style (label = name)."""
    st = arm_style(name)
    kw = {"color": st["color"], "marker": st["marker"], "ls": st["ls"], "mfc": st["mfc"],
          "mec": st["color"], "label": name}
    kw.update(extra)
    return kw


def bar_kw(name: str, **extra) -> dict:
    """Keyword arguments for ``ax.bar`` drawing ``name`` in its style (hatched when a variant)."""
    st = arm_style(name)
    variant = st["hatch"] is not None
    kw = {"color": "white" if variant else st["color"], "edgecolor": st["color"], "hatch": st["hatch"],
          "label": name}
    kw.update(extra)
    return kw


def colour(name: str):
    """The fixed colour of an arm or method (a variant ``<arm>@<tag>`` shares its base arm's)."""
    return arm_style(name)["color"]


def palette(names: Iterable[str]) -> dict:
    return {n: colour(n) for n in names}


def mean_curve(ax, table, x: str, name: str, *, band: bool = True, band_alpha: float = 0.15, dodge: float = 0.0,
               **extra) -> None:
    """One line through ``table["mean"]`` along ``table[x]`` in the look of ``name`` and, with ``band``,
    its 95 % CI (t) ``lo, hi`` shaded where it exists (n ≥ 2). ``dodge`` shifts it along x (lines that
    coincide stay visible side by side: :func:`dodges`). ``extra`` overrides :func:`line_kw`."""
    t = table.sort_values(x)
    kw = line_kw(name, **{"ms": 3.5, "lw": 1.3, **extra})
    ax.plot(t[x] + dodge, t["mean"], **kw)
    if band:
        ok = t[np.isfinite(t["lo"].astype(float)) & np.isfinite(t["hi"].astype(float))]
        if len(ok):
            ax.fill_between(ok[x] + dodge, ok["lo"], ok["hi"], color=kw["color"], alpha=band_alpha, lw=0, zorder=1)


def dodges(n: int, step: float = 0.06) -> list[float]:
    """Offsets along x for ``n`` lines drawn over one integer axis (generations), centred on 0: lines whose values
    coincide (every arm at 0 on a family) are drawn side by side instead of one under the other."""
    return [(k - (n - 1) / 2) * step for k in range(n)]


def within_bounds(table, lo: float = 0.0, hi: float = 1.0, *, columns=("lo", "hi")):
    """``table`` with its interval ``columns`` cut to ``[lo, hi]``, the quantity's possible range (an
    accuracy, a share, a rate: [0, 1]): a t-interval so cut is
    :func:`lib.core.stats.bounded_t_ci` (:data:`lib.core.stats.BOUNDED_T_CI`). NaN stays NaN."""
    t = table.copy()
    for c in columns:
        if c in t:
            t[c] = t[c].astype(float).clip(lower=lo, upper=hi)
    return t


def interval_bar(ax, x: float, lo: float, hi: float, color, *, lw: float = 1.2, zorder: float = 3) -> None:
    """A vertical error bar from ``lo`` to ``hi`` at ``x`` with caps, drawn as one line (so it adds no
    collection to ``ax``, whose scatter points stay the data); nothing unless both ends are finite."""
    if np.isfinite(lo) and np.isfinite(hi):
        ax.plot([x, x], [lo, hi], color=color, lw=lw, marker="_", ms=7, mew=lw, zorder=zorder)


LABEL_GAP_PT = 2.5     # a name beside its marker: this far from the marker's edge
LABEL_CLEAR_PT = 3.0   # ... at least this far from every other marker's edge
LABEL_SPACE_PT = 1.5   # ... and this far from the other names
# where a name is tried beside its marker, in order: (dx, dy) unit direction, horizontal and vertical alignment
LABEL_SIDES = ((1, 0, "left", "center"), (0, 1, "center", "bottom"), (0, -1, "center", "top"),
               (-1, 0, "right", "center"), (0.7, 0.7, "left", "bottom"), (0.7, -0.7, "left", "top"),
               (-0.7, 0.7, "right", "bottom"), (-0.7, -0.7, "right", "top"))
LEADER_PT = (14, 20, 28, 38, 50, 64, 80)  # where none is free beside it: this far off, joined to it by a leader line


def place_labels(ax, items, fontsize: float = 8, *, avoid_markers: bool = True) -> None:
    """Name points beside their markers: each ``(x, y, text, colour)`` of ``items``, the most crowded first (the most
    markers within 30 pt), goes to the first side
    of :data:`LABEL_SIDES` where its box stays inside the axes, :data:`LABEL_GAP_PT` from its marker's edge and
    :data:`LABEL_CLEAR_PT` clear of every other marker (with ``avoid_markers``) and :data:`LABEL_SPACE_PT` of the
    names placed on this figure before it. Where no side is free it goes further off (:data:`LEADER_PT`, in any of 24 directions) to the
    nearest free place, joined to its marker by a thin leader line; where none is free either, to the place that
    breaks the fewest of those rules. Call it after the figure's layout is set (boxes are measured where drawn)."""
    ctx = _label_context(ax, avoid_markers)
    for x, y, text, colour in sorted(items, key=lambda item: _label_crowd(ctx, item)):
        _place_label(ctx, x, y, text, colour, fontsize)


def _label_context(ax, avoid_markers: bool):
    """The state :func:`place_labels` measures once per call: renderer, axes frame, boxes and leaders placed on the
    figure before, points per display unit, marker discs, drawn line segments and whether upright bars are drawn."""
    from types import SimpleNamespace

    renderer = ax.figure.canvas.get_renderer()
    discs = _marker_discs(ax) if avoid_markers else []
    drawn = [seg for line in ax.get_lines() for seg in _segments(line)]  # the lines a name had better not cross
    bars = any(abs(a[0] - b[0]) < 0.5 and abs(a[1] - b[1]) > 0.5 for a, b in drawn)  # upright interval bars drawn
    return SimpleNamespace(ax=ax, renderer=renderer, frame=ax.get_window_extent(renderer),
                           boxes=_PLACED.setdefault(ax.figure, []), leaders=_LEADERS.setdefault(ax.figure, []),
                           pt=ax.figure.dpi / 72, discs=discs, drawn=drawn, bars=bars)


def _label_crowd(ctx, item) -> int:
    """Minus the markers within 30 pt of ``item``: the most crowded point is named first, while room is left."""
    cx, cy = ctx.ax.transData.transform(item[:2])
    return -sum(np.hypot(mx - cx, my - cy) < 30 * ctx.pt for mx, my, _ in ctx.discs)


def _label_box(px: float, py: float, w: float, h: float, ox: float, oy: float, ha: str, va: str):
    """The display box of a ``w`` x ``h`` name offset ``(ox, oy)`` from ``(px, py)`` with alignment ``ha``/``va``."""
    from matplotlib.transforms import Bbox

    x0 = px + ox - {"left": 0, "center": w / 2, "right": w}[ha]
    y0 = py + oy - {"bottom": 0, "center": h / 2, "top": h}[va]
    return Bbox.from_extents(x0, y0, x0 + w, y0 + h)


def _label_cost(ctx, b, far: bool, px: float, py: float, own: float, others) -> tuple:
    """(outside the axes, rules the name's box breaks, rules its leader line breaks, lines its box crosses
    (a leader counts as one), area of names overlapped)."""
    frame, pt, boxes, leaders = ctx.frame, ctx.pt, ctx.boxes, ctx.leaders
    inside = frame.x0 <= b.x0 and b.x1 <= frame.x1 and frame.y0 <= b.y0 and b.y1 <= frame.y1
    grown = _grow(b, LABEL_SPACE_PT * pt)
    crowd = sum(_overlap(grown, o) for o in boxes)
    box = sum(_box_gap(b, mx, my) - r < LABEL_CLEAR_PT * pt for mx, my, r in others) + (crowd > 0)
    box += sum(_crosses(seg, grown) for seg in leaders)  # over a leader drawn before
    line, crossed = 0, sum(_crosses(seg, b) for seg in ctx.drawn)
    if far:  # a leader's name clears its own marker; its line crosses no name, marker or leader drawn before
        seg = _leader(b, px, py, own + pt)
        box += _box_gap(b, px, py) - own < LABEL_CLEAR_PT * pt
        line = (sum(_crosses(seg, _grow(o, LABEL_SPACE_PT * pt)) for o in boxes)
                + sum(_near_segment(seg, mx, my) < r + pt for mx, my, r in others)
                + sum(_segments_cross(seg, other) for other in leaders))
        crossed += 1 + sum(_segments_cross(seg, other) for other in ctx.drawn)
    return (not inside, box, line, crossed, crowd)


def _label_tries(ctx, px: float, py: float, own: float, others, w: float, h: float) -> list:
    """The places tried for one name, ``(cost, leader distance, (ox, oy, ha, va), box)`` each: the sides beside its
    marker up to the first free one, and where none is free, every leader place of :data:`LEADER_PT`."""
    pt, tried = ctx.pt, []
    for dx, dy, ha, va in LABEL_SIDES:
        d = own + LABEL_GAP_PT * pt
        ox, oy = dx * d, dy * d
        b = _label_box(px, py, w, h, ox, oy, ha, va)
        tried.append((_label_cost(ctx, b, False, px, py, own, others), 0, (ox, oy, ha, va), b))
        if tried[-1][0] == (False, 0, 0, 0, 0):
            return tried
    for dist in LEADER_PT:
        for k in (k for k in range(24) if not (ctx.bars and k % 12 in (5, 6, 7))):  # upright, it reads as a bar
            a = np.pi * k / 12
            ox, oy = np.cos(a) * dist * pt, np.sin(a) * dist * pt
            ha = "left" if ox > 1 else "right" if ox < -1 else "center"
            va = "bottom" if oy > 1 else "top" if oy < -1 else "center"
            b = _label_box(px, py, w, h, ox, oy, ha, va)
            tried.append((_label_cost(ctx, b, True, px, py, own, others), dist, (ox, oy, ha, va), b))
    return tried


def _place_label(ctx, x: float, y: float, text: str, colour, fontsize: float) -> None:
    """Draws one name at the cheapest place :func:`_label_tries` finds, with a leader line where it is far off."""
    ax, pt, discs = ctx.ax, ctx.pt, ctx.discs
    px, py = ax.transData.transform((x, y))
    own = max((r for mx, my, r in discs if abs(mx - px) <= 1.5 and abs(my - py) <= 1.5), default=0.0)
    others = [(mx, my, r) for mx, my, r in discs if abs(mx - px) > 1.5 or abs(my - py) > 1.5]
    probe = ax.annotate(text, (x, y), fontsize=fontsize)
    w, h = probe.get_window_extent(ctx.renderer).width, probe.get_window_extent(ctx.renderer).height
    probe.remove()
    tried = _label_tries(ctx, px, py, own, others, w, h)
    (c, dist, (ox, oy, ha, va), b) = min(tried, key=lambda t: (t[0], t[1]))
    leader = {"arrowprops": {"arrowstyle": "-", "color": colour, "lw": 0.6, "alpha": 0.8, "shrinkA": 0,
                             "shrinkB": own / pt + 0.5}} if dist else {}
    ax.annotate(text, (x, y), xytext=(ox / pt, oy / pt), textcoords="offset points", fontsize=fontsize,
                color=colour, ha=ha, va=va, **leader)
    ctx.boxes.append(b)
    if dist:
        ctx.leaders.append(_leader(b, px, py, own))


def _leader(b, x: float, y: float, shrink: float) -> tuple[tuple[float, float], tuple[float, float]]:
    """The leader line from the box ``b`` (its edge, on the way from its centre) to the point ``(x, y)``, stopping
    ``shrink`` short of it: ``((x0, y0), (x1, y1))`` in display units."""
    cx, cy = (b.x0 + b.x1) / 2, (b.y0 + b.y1) / 2
    dx, dy = x - cx, y - cy
    n = float(np.hypot(dx, dy)) or 1.0
    t0 = min(b.width / 2 / abs(dx) if dx else np.inf, b.height / 2 / abs(dy) if dy else np.inf)
    t1 = max(t0, 1 - shrink / n)
    return (cx + t0 * dx, cy + t0 * dy), (cx + t1 * dx, cy + t1 * dy)


def _segments(line) -> list:
    """The segments of ``line`` (a Line2D drawn with a line style) in display units."""
    if line.get_linestyle() in ("None", "", " ") or not line.get_visible():
        return []
    xy = line.get_transform().transform(np.asarray(line.get_xydata(), dtype=float))
    return [(tuple(a), tuple(b)) for a, b in zip(xy[:-1], xy[1:]) if np.all(np.isfinite([*a, *b]))]


def _near_segment(seg, x: float, y: float) -> float:
    """Display units from the point ``(x, y)`` to the segment ``seg``."""
    (x0, y0), (x1, y1) = seg
    dx, dy = x1 - x0, y1 - y0
    t = 0.0 if dx == dy == 0 else min(1.0, max(0.0, ((x - x0) * dx + (y - y0) * dy) / (dx * dx + dy * dy)))
    return float(np.hypot(x - x0 - t * dx, y - y0 - t * dy))


def _crosses(seg, b) -> bool:
    """Whether the segment ``seg`` passes through the box ``b`` (tested at 24 points along it)."""
    (x0, y0), (x1, y1) = seg
    return any(b.contains(x0 + t * (x1 - x0), y0 + t * (y1 - y0)) for t in np.linspace(0, 1, 24))


def _segments_cross(a, b) -> bool:
    """Whether two segments cross (their ends on opposite sides of each other)."""
    def side(p, q, r):
        return np.sign((q[0] - p[0]) * (r[1] - p[1]) - (q[1] - p[1]) * (r[0] - p[0]))
    return side(*a, b[0]) * side(*a, b[1]) < 0 and side(*b, a[0]) * side(*b, a[1]) < 0


def _box_gap(b, x: float, y: float) -> float:
    """Display units from the point ``(x, y)`` to the box ``b`` (0 inside it)."""
    return float(np.hypot(max(b.x0 - x, 0.0, x - b.x1), max(b.y0 - y, 0.0, y - b.y1)))


def _grow(b, d: float):
    from matplotlib.transforms import Bbox

    return Bbox.from_extents(b.x0 - d, b.y0 - d, b.x1 + d, b.y1 + d)


def wrap_phrases(text: str, width: int) -> list[str]:
    """``text`` in lines of at most ``width`` characters, broken only between its phrases (after ``"; "``, or before
    a bracketed aside ``" ("``), never inside one; a phrase longer than ``width`` is wrapped at its spaces, keeping a
    bracket's words together where they fit (a title that breaks "(it counts in the / pooled row)" reads as two)."""
    import re
    import textwrap
    phrases = [p for p in re.split(r"(?<=; )|(?= \()", text) if p]
    lines: list[str] = []
    for ph in phrases:
        if lines and len(lines[-1]) + len(ph) <= width:
            lines[-1] += ph
        elif len(ph.strip()) <= width:
            lines.append(ph.lstrip())  # its "; " kept: a phrase joined to this line follows a space ("a; b", not "a;b")
        else:
            lines += textwrap.wrap(ph.strip(), width, break_long_words=False)
            lines[-1] += ph[len(ph.rstrip()):]
    return [ln.rstrip() for ln in lines]


def _marker_discs(ax) -> list[tuple[float, float, float]]:
    """Every marker drawn on ``ax`` (lines with a marker) as ``(x, y, radius)`` in display units."""
    out = []
    for line in ax.get_lines():
        if line.get_visible() and line.get_marker() not in (None, "", "None", " "):
            r = (line.get_markersize() + line.get_markeredgewidth()) / 2 * ax.figure.dpi / 72
            xy = ax.transData.transform(np.column_stack([line.get_xdata(), line.get_ydata()]).astype(float))
            out += [(float(a), float(b), r) for a, b in xy if np.isfinite(a) and np.isfinite(b)]
    return out


def _overlap(a, b) -> float:
    """The area (display units²) two boxes share."""
    return max(0.0, min(a.x1, b.x1) - max(a.x0, b.x0)) * max(0.0, min(a.y1, b.y1) - max(a.y0, b.y0))


_PLACED = weakref.WeakKeyDictionary()  # figure -> the label boxes placed on it
_LEADERS = weakref.WeakKeyDictionary()  # figure -> the leader lines drawn on it (display segments)


def dots_with_mean(ax, pos: float, values, name: str, interval: tuple[float, float, float], *,
                   s: float = 11, marker: str | None = None, jitter: float = 0.12) -> None:
    """At x = ``pos``: the ``values`` as small dots (one per seed or pair; spread over ±``jitter`` left of
    ``pos``, or all at ``pos`` with ``jitter=0``) and, beside them, a large marker at the mean of
    ``interval = (mean, lo, hi)`` with ``lo, hi`` as an error bar when both are finite."""
    mean, lo, hi = interval
    st = arm_style(name)
    v = np.asarray(values, dtype=float)
    jit = np.linspace(-jitter, jitter, len(v)) if len(v) > 1 and jitter else np.zeros(len(v))
    ax.scatter(pos - jitter + jit, v, s=s, color=st["color"], alpha=0.55, lw=0, zorder=2)
    x = pos + max(jitter, 0.12) + 0.02
    interval_bar(ax, x, lo, hi, st["color"])
    ax.plot([x], [mean], marker=marker or st["marker"], ms=5, color=st["color"], mfc=st["mfc"], ls="", zorder=4)


def ci_note(summary, kind: str = SIGN_FLIP_CI) -> str:
    """What the error bars of ``summary`` (columns ``n, lo, hi``) are: ``"mean, 95 % CI (…)"``, or, where
    the interval is unbounded or undefined, that none is drawn and why."""
    bounded = np.isfinite(summary["lo"].astype(float)) & np.isfinite(summary["hi"].astype(float))
    limit = f"n < {MIN_PAIRED_N}" if kind == SIGN_FLIP_CI else "n < 2"
    if bounded.all():
        return f"mean, {kind}"
    if not bounded.any():
        return f"mean; no 95 % interval with {limit}"
    return f"mean, {kind}; none where {limit}"


def _tick(level, reference: str | None) -> str:
    """A column's tick label: ``"no_sex\n− full"`` (a variant breaks before its ``@``:
    ``"no_grounding\n@e1\n− full@e1"``); without ``reference`` a level ``"a − b"`` is written
    ``"a\n− b"``."""
    level = str(level)
    if reference is None:
        return level.replace(" − ", "\n− ")
    ref = f"− {reference}"
    if len(ref) > 12:  # a long variant reference breaks before its @ too ("− full\n@breeding")
        ref = ref.replace("@", "\n@", 1)
    return level.replace("@", "\n@", 1) + f"\n{ref}"


@dataclass(frozen=True)
class DiffLayout:
    """How :func:`paired_difference_panel` lays its differences out: along the numeric column ``x`` (else one
    column per level), ``xlabel``, whether p and n are written above the columns, the unit of a dot, the arm
    whose look each level takes, ``crowded`` (p and n as one rotated line; default: > 8 columns) and ``fontsize``
    (of p and n, the columns' labels and the title; default: 6.2–7 pt, for a panel shown at its own size)."""

    x: str | None = None
    xlabel: str | None = None
    annotate: bool = True
    unit: str = "seed"
    look: Mapping[str, str] | None = None
    crowded: bool | None = None
    fontsize: float | None = None


def paired_difference_panel(ax, points, summary, *, group: str, order: Iterable[str], reference: str | None = None,
                            ylabel: str, layout: DiffLayout = DiffLayout()) -> None:
    """Draw paired differences ``level − reference`` (from :func:`lib.core.stats.paired_differences`).

    One column per level of ``group`` (or, with ``x``, one line per level along the numeric column
    ``x``): a small dot per pair (``unit``: a seed; in Fig. 1 a population), a large marker for the mean
    difference and its 95 % CI (sign-flip inversion) as an error bar (a band along ``x``). With fewer
    than 6 pairs that interval is unbounded: none is drawn and the title says so; the dots are the
    data. Above each column: the paired sign-flip p (:func:`lib.core.stats.format_p`) and n. A
    line at 0 marks "no difference". The reference is ``reference`` or, when ``summary`` has a
    ``reference`` column naming several, each column's own, written under its tick label. ``look``:
    the arm whose colour and marker a level is drawn in (default: the level itself). ``crowded``: write
    each column's p and n as one rotated line (default: when there are more than 8 columns), so that
    neighbouring columns of a narrow panel do not overwrite each other.
    """
    x, xlabel, annotate, unit, crowded = layout.x, layout.xlabel, layout.annotate, layout.unit, layout.crowded
    pt = layout.fontsize
    look = dict(layout.look or {})
    order = [o for o in order if o in set(summary[group])]
    refs = dict(zip(summary[group], summary["reference"])) if "reference" in summary else {}
    own = reference is None and len(set(refs.values())) > 1  # then each tick names its own reference
    if reference is None:
        reference = "its reference" if own or not refs else next(iter(refs.values()))
    ax.axhline(0.0, color=REFERENCE_GREY, lw=0.8, ls="-", zorder=0)
    crowded = len(order) > 8 if crowded is None else crowded
    if x is None:
        for i, lvl in enumerate(order):
            r = summary[summary[group] == lvl].iloc[0]
            dots_with_mean(ax, i, points[points[group] == lvl]["diff"], look.get(lvl, lvl), (r["mean"], r["lo"], r["hi"]))
            if annotate:  # many columns: one rotated line each, so neighbours do not overwrite each other
                ax.annotate(f"p={format_p(r['p'])}" + (f", n={int(r['n'])}" if crowded else f"\nn={int(r['n'])}"),
                            (i, 1.0), xycoords=("data", "axes fraction"), ha="center", va="bottom",
                            fontsize=pt or (6.2 if crowded else 6.5), rotation=90 if crowded else 0)
        labels = [_tick(o, refs[o] if own else None) for o in order]
        two_line = any("\n" in lb for lb in labels)  # written flat: rotated, they would collide
        tilt = len(order) > (7 if two_line else 3)
        ax.set_xticks(range(len(order)), labels, rotation=30 if tilt else 0, ha="right" if tilt else "center",
                      fontsize=pt or (6.2 if two_line else 7))
        ax.set_xlim(-0.6, len(order) - 0.4)
        if xlabel:
            ax.set_xlabel(xlabel)
    else:
        for lvl in order:
            st = arm_style(look.get(lvl, lvl))
            pts = points[points[group] == lvl]
            ax.scatter(pts[x], pts["diff"], s=9, color=st["color"], alpha=0.45, lw=0, zorder=2)
            s = summary[summary[group] == lvl]
            mean_curve(ax, s, x, look.get(lvl, lvl), band_alpha=0.2, ms=4, label=f"{lvl} − {reference}", zorder=3)
        if xlabel:
            ax.set_xlabel(xlabel)
    n = sorted(set(int(v) for v in summary["n"]))
    n_txt = f"n = {n[0]}" if len(n) == 1 else f"n = {n[0]}–{n[-1]}"
    ax.set_ylabel(f"{ylabel}\nminus {reference}")
    what = f"dots: {unit}s; " + ("marker: " if x is None else "line: ")
    ax.set_title(f"paired by {unit}, {n_txt}\n{what}{ci_note(summary)}", fontsize=pt or 7, loc="left",
                 pad=((P_LABEL_PAD if crowded else 21) * (pt or 7) / 7) if (annotate and x is None) else 4)


P_LABEL_PAD = 54  # points above the axes that a column's rotated "p=…, n=…" takes (6.2 pt text)


def panel_grid(n: int, *, width: float, height: float, pad: float, max_cols: int = 4):
    """Small multiples: ``n`` panels on a grid of at most ``max_cols`` columns, x and y shared; each
    panel ``width`` x ``height`` inches, ``pad`` inches for the title. Returns ``(fig, axes[nrow, ncol])``;
    :func:`finish_panel_grid` hides the spare cells."""
    ncol = min(max_cols, n)
    nrow = int(np.ceil(n / ncol))
    return plt.subplots(nrow, ncol, figsize=(width * ncol, height * nrow + pad), sharex=True, sharey=True,
                        squeeze=False)


def finish_panel_grid(axes, n: int, xlabel: str | None = None) -> None:
    """Hide the cells of :func:`panel_grid` past the ``n``-th; a panel with nothing below it carries its
    own x ticks (and ``xlabel``, when given)."""
    ncol = axes.shape[1]
    for k, ax in enumerate(axes.flat):
        if k >= n:
            ax.set_axis_off()
        elif k + ncol >= n:
            ax.tick_params(labelbottom=True)
            if xlabel is not None:
                ax.set_xlabel(xlabel, fontsize=8)


def use_style() -> None:
    """The shared look: white grid, paper context, small fonts, no top/right spines. In a notebook,
    a displayed figure's PNG also carries an alt text (:func:`figure_alt`) for its page."""
    sns.set_theme(context="paper", style="whitegrid", font_scale=1.0)
    plt.rcParams.update({
        "figure.dpi": 110, "savefig.dpi": 200, "savefig.bbox": "tight",
        "axes.spines.top": False, "axes.spines.right": False,
        "legend.frameon": False, "pdf.fonttype": 42,
    })
    _describe_figures()


def figure_alt(fig, limit: int = 600) -> str:
    """A figure described by its own words: its suptitle, then each axes' titles and axis labels
    (``"Held-out accuracy. (a) per generation: test accuracy against generation; …"``), at most
    ``limit`` characters; ``"a figure"`` when it has none."""
    parts = []
    if getattr(fig, "_suptitle", None) is not None and fig._suptitle.get_text().strip():
        parts.append(fig._suptitle.get_text().strip())
    for ax in fig.axes:
        if not ax.get_visible() or not ax.axison:
            continue
        title = " ".join(t for t in (ax.get_title(loc=k).strip() for k in ("left", "center", "right")) if t)
        axes = " against ".join(t for t in (ax.get_ylabel().strip(), ax.get_xlabel().strip()) if t)
        text = ": ".join(t for t in (title, axes) if t)
        if text and text not in parts:
            parts.append(text)
    alt = "; ".join(" ".join(p.split()) for p in parts) or "a figure"
    return alt if len(alt) <= limit else alt[: limit - 1].rstrip() + "…"


def figure_png(fig) -> bytes:
    """The PNG of ``fig`` as :func:`save_figure` writes it (``savefig.dpi``, tight box, no software tag): a
    notebook's inline figure and its page carry the saved panel's pixels, not a coarser redraw."""
    import io

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=plt.rcParams["savefig.dpi"], bbox_inches="tight", metadata={"Software": None})
    return buf.getvalue()


def shown_width(fig, png: bytes | None = None) -> int:
    """The width (px) a page shows ``fig``'s PNG at: as large as if drawn at ``figure.dpi`` (the PNG holds
    ``savefig.dpi / figure.dpi`` times as many pixels, which a page's high-density screen uses)."""
    import struct

    png = figure_png(fig) if png is None else png
    px = struct.unpack(">I", png[16:20])[0]
    saved = plt.rcParams["savefig.dpi"]
    return px if saved == "figure" else round(px * plt.rcParams["figure.dpi"] / float(saved))


def _describe_figures() -> None:
    """In IPython, wrap the PNG formatter of matplotlib figures (set by ``%matplotlib inline``) so that
    the output's metadata carries ``alt`` = :func:`figure_alt` (:mod:`lib.pages` writes it into the page)."""
    try:
        from IPython import get_ipython
    except ImportError:
        return
    ip = get_ipython()
    if ip is None:
        return
    from matplotlib.figure import Figure

    fmt = ip.display_formatter.formatters["image/png"]
    try:
        inner = fmt.lookup_by_type(Figure)
    except KeyError:
        return
    if getattr(inner, "_adds_alt", False):
        return

    def png_with_alt(fig):
        if not fig.axes and not fig.texts:
            return inner(fig)  # nothing drawn: the inline backend's own (empty) answer
        png = figure_png(fig)
        return png, {"alt": figure_alt(fig), "width": shown_width(fig, png)}

    png_with_alt._adds_alt = True
    fmt.for_type(Figure, png_with_alt)


def table_text(table, digits: int = 3, **kw) -> str:
    """``table`` as printed text, rounded to ``digits`` by the rule the README's and docs' tables use
    (:func:`lib.core.format.fmt`: the float's exact decimal value, so 0.6225000000000001 is 0.623 on a page and in a
    doc alike, where ``DataFrame.round`` gives 0.622), every column named ``p`` or ``p_…`` written by
    :func:`lib.core.stats.format_p` (never ``0.000``)."""
    import pandas as pd

    t = table.copy()
    for c in t.columns:
        if (c == "p" or str(c).startswith("p_")) and pd.api.types.is_numeric_dtype(t[c]):
            t[c] = [format_p(float(v)) for v in t[c]]
        elif pd.api.types.is_float_dtype(t[c]):
            t[c] = [float(f"{v:.{digits}f}") if pd.notna(v) and np.isfinite(v) else v for v in t[c]]
    return t.to_string(**{"index": False, **kw})


def repo_path(p) -> str:
    """``p`` relative to the repository root, never absolute (outside it: with ``..`` parts)."""
    p = Path(p)
    if not p.is_absolute():
        return p.as_posix()
    return Path(os.path.relpath(p.resolve(), Path(REPO_ROOT).resolve())).as_posix()


def _abs(p: str) -> Path:
    return Path(p) if Path(p).is_absolute() else REPO_ROOT / p


def save_figure(fig, name: str, *, scale: str, caption: str, data: str | Iterable[str] = (),
                config: str | Iterable[str] | None = None, notebook: str | None = None) -> list[Path]:
    """Save ``fig`` as ``figures/<scale>/<name>.pdf`` and ``.png`` and record it in the index.

    Args:
        name: stable file name, e.g. ``"fig3a_society_test_acc"`` or ``"S2c_program_budget"``.
        caption: one line on what the panel shows.
        data: the data file(s) it was drawn from (recorded relative to the repository).
        config: the config file(s) of the run(s) behind the data (recorded likewise; one: a string).
        notebook: the notebook that draws it.
    """
    out = figures_dir(scale)
    paths = [out / f"{name}.pdf", out / f"{name}.png"]
    for p in paths:
        # Fixed metadata keeps the files byte-stable across re-runs, and the fonts' subsets keep the
        # same name records under any fontTools release (lib.core.pdffonts).
        meta = {"CreationDate": None} if p.suffix == ".pdf" else {"Software": None}
        with stable_font_subsets():
            fig.savefig(p, metadata=meta)
    data = [data] if isinstance(data, (str, Path)) else list(data)
    configs = [config] if isinstance(config, (str, Path)) else list(config or [])
    configs = [repo_path(c) for c in dict.fromkeys(configs)]
    data = [repo_path(d) for d in data]
    entry = {"caption": caption, "files": [rel(p) for p in paths], "data": data,
             "data_sha256": {d: sha256_of(_abs(d)) for d in data if _abs(d).is_file()},
             "config": (configs[0] if len(configs) == 1 else configs) or None, "notebook": notebook}
    with index_lock(scale):  # notebooks saving at once each keep the other's entries
        idx = read_index(scale)
        idx[name] = entry
        write_json(index_path(scale), idx)
    return paths


@dataclass(frozen=True)
class Panel:
    """One saved figure panel. ``draw(data)`` gets the module's ``load_data`` dict and returns a
    figure, or ``None`` when its data is absent (the panel is then skipped); ``source`` names the
    entry of :func:`save_panels`' ``sources`` it is drawn from."""
    name: str
    draw: Callable[[dict], object]
    caption: str | Callable[[dict], str]  # a callable gets the data (a caption that states a measured range)
    source: str = "rows"


def panel_named(panels: Iterable[Panel], name: str) -> Panel:
    """The panel called ``name`` in ``panels`` (``KeyError`` naming the known ones)."""
    panels = list(panels)
    for p in panels:
        if p.name == name:
            return p
    raise KeyError(f"no panel {name!r}; known: {[p.name for p in panels]}")


def draw_panel(panels: Iterable[Panel], name: str, data: dict):
    """The figure of the saved panel ``name`` drawn from ``data`` exactly as :func:`save_panels` draws it
    (``None`` where its data is absent): a notebook that shows a figure under a saved name shows this."""
    use_style()
    return panel_named(panels, name).draw(data)


ZERO_NOTE = "does not start at 0"


def _panel_letter(ax) -> str:
    """``"(b)"`` when the axes' title starts with a sub-panel letter, else ``""``."""
    import re

    m = re.match(r"\s*(\([a-h]\))", " ".join(ax.get_title(loc=k) for k in ("left", "center")).strip())
    return m.group(1) if m else ""


def _counts_along_x(ax) -> bool:
    """The x of every line and point of ``ax`` is a whole number (a generation, a seed, a category): an x axis
    that starts at 1 there is a count, not a zoomed quantity."""
    xs = [np.asarray(ln.get_xdata(), float) for ln in ax.get_lines()]
    xs += [np.asarray(c.get_offsets(), float).reshape(-1, 2)[:, 0] for c in ax.collections if hasattr(c, "get_offsets")]
    xs = np.concatenate([x[np.isfinite(x)] for x in xs]) if xs else np.zeros(0)
    return len(xs) > 0 and bool(np.all(np.abs(xs - np.round(xs)) < 1e-9))


def axes_from_zero_note(fig) -> str:
    """What a caption must say of ``fig``'s linear axes whose range starts above 0 (a zoomed axis makes small
    differences look large): ``"(a)'s y axis does not start at 0"``, ``"the x and y axes do not start at 0"``;
    ``""`` when every axis starts at or below 0 (log and symlog axes say their scale in their label)."""
    parts = []
    for ax in fig.axes:
        if not ax.get_visible() or not ax.axison:
            continue
        which = [k for k, scale, lim in (("x", ax.get_xscale(), ax.get_xlim()), ("y", ax.get_yscale(), ax.get_ylim()))
                 if scale == "linear" and min(lim) > 0 and not (k == "x" and _counts_along_x(ax))]
        if which:
            parts.append((_panel_letter(ax), " and ".join(which)))
    parts = list(dict.fromkeys(parts))
    if not parts:
        return ""
    if len(parts) == 1 and not parts[0][0]:
        axes = parts[0][1]
        return f"the {axes} ax{'es' if ' and ' in axes else 'is'} {ZERO_NOTE if ' and ' not in axes else 'do not start at 0'}"
    said = [f"{letter or 'a panel'}'s {axes} ax{'es' if ' and ' in axes else 'is'}" for letter, axes in parts]
    both = len(parts) > 1 or " and " in parts[0][1]
    return ", ".join(said) + (" do not start at 0" if both else f" {ZERO_NOTE}")


def with_zero_note(caption: str, fig) -> str:
    """``caption`` with :func:`axes_from_zero_note` appended, unless it already says an axis does not start at 0."""
    note = axes_from_zero_note(fig)
    if not note or "not start at 0" in caption:
        return caption
    return f"{caption.rstrip()}{'' if caption.rstrip().endswith('.') else '.'} {note[0].upper()}{note[1:]}."


_ONLY: set[str] | None = None  # the panels save_panels draws; None: every one (set by only_panels)


@contextlib.contextmanager
def only_panels(names: Iterable[str]):
    """Within it, :func:`save_panels` draws and saves only the panels called ``names`` (a module's ``draw_all``
    redraws one panel: ``python -m lib.figures NAME``)."""
    global _ONLY
    before, _ONLY = _ONLY, set(names)
    try:
        yield
    finally:
        _ONLY = before


def save_panels(panels: Iterable[Panel], data: dict, *, scale: str,
                sources: Mapping[str, tuple[Iterable[str], str | Iterable[str]]], notebook: str) -> list[str]:
    """Draw every panel from ``data`` (within :func:`only_panels`, those it names), save it (:func:`save_figure`)
    with the data files and config(s) of its ``source`` (``sources``: key → (data files, config path or paths))
    and return the names saved."""
    use_style()
    saved = []
    for panel in (p for p in panels if _ONLY is None or p.name in _ONLY):
        fig = panel.draw(data)
        if fig is None:
            continue
        files, config = sources[panel.source]
        caption = with_zero_note(panel.caption(data) if callable(panel.caption) else panel.caption, fig)
        save_figure(fig, panel.name, scale=scale, caption=caption, data=list(files), config=config, notebook=notebook)
        plt.close(fig)
        saved.append(panel.name)
    return saved


def save_rows_panels(panels: Iterable[Panel], data: dict, *, scale: str, notebook: str) -> list[str]:
    """:func:`save_panels` for panels drawn from one ``"rows"`` source: ``data``'s ``files`` and ``progress`` (the
    shards read) and ``configs`` (their configs), as :func:`lib.society.data.files_of` lists them."""
    files = [repo_path(f) for f in data["files"] + data["progress"]]
    return save_panels(panels, data, scale=scale, sources={"rows": (files, [repo_path(c) for c in data["configs"]])},
                       notebook=notebook)


def publish(fig, name: str, **kwargs) -> None:
    """:func:`save_figure`, then show the figure once in a notebook and close it (no stray repr)."""
    save_figure(fig, name, **kwargs)
    try:
        from IPython.display import display
        from IPython import get_ipython
        if get_ipython() is not None:
            display(fig)
    except ImportError:
        pass
    plt.close(fig)


def show_saved(names: Iterable[str], scale: str, width: int | None = None) -> None:
    """Display the PNGs of saved panels in a notebook, each under its caption (no-op outside IPython).

    A panel is shown as large as when drawn inline: its PNG width (px, saved at ``savefig.dpi``) times
    ``figure.dpi / savefig.dpi``, so a wide multi-panel figure keeps its text legible; a narrower window
    shrinks it (the page's CSS caps images at 100 % width). ``width`` (px) sets one width for all.
    """
    try:
        from IPython import get_ipython
        from IPython.display import Image, Markdown, display
    except ImportError:
        return
    if get_ipython() is None:
        return
    from PIL import Image as PILImage

    saved_dpi = plt.rcParams["savefig.dpi"]
    ratio = 1.0 if saved_dpi == "figure" else plt.rcParams["figure.dpi"] / float(saved_dpi)
    idx = read_index(scale)
    for n in names:
        png = figures_dir(scale) / f"{n}.png"
        with PILImage.open(png) as im:
            px = im.size[0]
        caption = idx.get(n, {}).get("caption", "")
        display(Markdown(f"**{n}** — {caption}"))
        display(Image(filename=str(png), width=width or round(px * ratio), alt=f"{n}: {caption}"))
