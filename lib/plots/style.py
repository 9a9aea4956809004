"""One style and one ``save_figure`` for every figure and SI panel.

Every arm and method has one fixed look, the same in every figure (:func:`arm_style`): a colour from
Paul Tol's colour-blind-safe schemes ("bright" for the society, tool-mutation and operator arms,
"muted" for the eight program-search methods) *and* a marker, so lines stay apart in greyscale print.
A variant of an arm, written ``<arm>@<tag>`` (``full@e1``: the arm with elitism 1, ``full@g0.25``: at
grounding 0.25), keeps its base arm's colour and marker and is told apart by a dashed line, a hollow
marker and a hatch on bars. Each saved panel is recorded in ``figures/<scale>/index.json`` with its
caption, data file and config; notebook 05 turns that into ``figures/<scale>/INDEX.md``.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Iterable

import matplotlib

matplotlib.use("Agg") if not matplotlib.get_backend().lower().startswith(("module://", "nbagg", "widget", "ipympl")) else None
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import seaborn as sns  # noqa: E402

from ..core.paths import REPO_ROOT, figures_dir  # noqa: E402

# Paul Tol's qualitative schemes (https://personal.sron.nl/~pault/): distinct for the common forms of
# colour blindness; "bright" has 6 hues + grey, "muted" 9.
TOL_BRIGHT = {"blue": "#4477AA", "cyan": "#66CCEE", "green": "#228833", "yellow": "#CCBB44",
              "red": "#EE6677", "purple": "#AA3377", "grey": "#BBBBBB"}
TOL_MUTED = {"indigo": "#332288", "cyan": "#88CCEE", "teal": "#44AA99", "green": "#117733",
             "olive": "#999933", "sand": "#DDCC77", "rose": "#CC6677", "wine": "#882255", "purple": "#AA4499"}
REFERENCE_GREY = "#555555"  # baselines drawn as a reference (sgd) and reference lines

# name -> (colour, marker). Within one experiment every pair differs in colour AND marker.
_LOOKS = {
    # society arms (reference: full)
    "full": (TOL_BRIGHT["blue"], "o"), "no_grounding": (TOL_BRIGHT["red"], "s"),
    "no_sex": (TOL_BRIGHT["green"], "^"), "no_diversity": (TOL_BRIGHT["purple"], "D"),
    "sex_linear": (TOL_BRIGHT["yellow"], "v"),
    # tool-mutation arms (reference: sgd)
    "sgd": (REFERENCE_GREY, "o"), "mutate_promote": (TOL_BRIGHT["blue"], "s"),
    "random_promote": (TOL_BRIGHT["red"], "^"),
    # program-search methods (reference: corrected); the two equivalents of corrected get a line style
    "corrected": (TOL_MUTED["indigo"], "o"), "generic_first_jet": (TOL_MUTED["cyan"], "s"),
    "full_jacobian": (TOL_MUTED["teal"], "^"), "gate_blind": (TOL_MUTED["rose"], "D"),
    "random_order": (TOL_MUTED["sand"], "v"), "no_feedback": (TOL_MUTED["wine"], "P"),
    "frozen_proposer": (TOL_MUTED["olive"], "X"), "direct_tournament": (TOL_MUTED["green"], "*"),
    # operators: selection rules
    "qd": (TOL_BRIGHT["blue"], "o"), "top_p": (TOL_BRIGHT["red"], "s"),
}
_LINESTYLE = {"generic_first_jet": (0, (5, 2)), "full_jacobian": (0, (1, 1.5))}
_FALLBACK = list(TOL_MUTED.values())
_MARKERS = "osD^vPX*<>hp"
COLOURS = {k: v[0] for k, v in _LOOKS.items()}


def base_arm(name: str) -> str:
    """``"full@e1"`` → ``"full"``: the arm a variant belongs to (the part before ``@``)."""
    return str(name).split("@", 1)[0]


def arm_style(name: str) -> dict:
    """The fixed look of an arm or method: ``{"color", "marker", "ls", "mfc", "hatch"}``.

    A plain arm: solid line, filled marker, no hatch. A variant ``<arm>@<tag>``: the base arm's colour
    and marker, dashed line, hollow marker (``mfc="white"``), hatch ``"//"`` on bars. Unknown names get
    a stable colour and marker from their characters.
    """
    base = base_arm(name)
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


def paired_difference_panel(ax, points, summary, *, group: str, order: Iterable[str], reference: str,
                            ylabel: str, x: str | None = None, xlabel: str | None = None,
                            annotate: bool = True, unit: str = "seed") -> None:
    """Draw paired differences ``level − reference`` (from :func:`lib.analysis.stats.paired_differences`).

    One column per level of ``group`` (or, with ``x``, one line per level along the numeric column
    ``x``): a small dot per pair (seed), a large marker for the mean difference and its bootstrap
    95 % CI as an error bar. With fewer than :data:`lib.analysis.stats.MIN_CI_N` pairs no CI is drawn; the
    annotation then says n. A line at 0 marks "no difference from the reference". ``unit``: what a
    pair is (a seed; in Fig. 1 a population).
    """
    from ..analysis.stats import MIN_CI_N

    order = [o for o in order if o in set(summary[group])]
    ax.axhline(0.0, color=REFERENCE_GREY, lw=0.8, ls="-", zorder=0)
    if x is None:
        for i, lvl in enumerate(order):
            st = arm_style(lvl)
            d = points[points[group] == lvl]["diff"].to_numpy()
            jit = np.linspace(-0.12, 0.12, len(d)) if len(d) > 1 else np.zeros(len(d))
            ax.scatter(i - 0.12 + jit, d, s=11, color=st["color"], alpha=0.55, lw=0, zorder=2)
            r = summary[summary[group] == lvl].iloc[0]
            has_ci = r["n"] >= MIN_CI_N and np.isfinite(r["lo"])
            yerr = [[r["mean"] - r["lo"]], [r["hi"] - r["mean"]]] if has_ci else None
            ax.errorbar(i + 0.14, r["mean"], yerr=yerr, fmt=st["marker"], ms=5, color=st["color"],
                        mfc=st["mfc"], capsize=3, lw=1.2, zorder=3)
            if annotate:
                p = "p n/a" if not np.isfinite(r["p"]) else f"p={r['p']:.2g}"
                ax.annotate(f"{p}\nn={int(r['n'])}", (i, 1.0), xycoords=("data", "axes fraction"),
                            ha="center", va="bottom", fontsize=6)
        ax.set_xticks(range(len(order)), order, rotation=30 if len(order) > 3 else 0,
                      ha="right" if len(order) > 3 else "center", fontsize=7)
        ax.set_xlim(-0.6, len(order) - 0.4)
    else:
        for lvl in order:
            st = arm_style(lvl)
            pts = points[points[group] == lvl]
            ax.scatter(pts[x], pts["diff"], s=9, color=st["color"], alpha=0.45, lw=0, zorder=2)
            s = summary[summary[group] == lvl].sort_values(x)
            ax.plot(s[x], s["mean"], **line_kw(lvl, ms=4, label=f"{lvl} − {reference}"), zorder=3)
            ci = s[(s["n"] >= MIN_CI_N) & np.isfinite(s["lo"])]
            if len(ci):
                ax.fill_between(ci[x], ci["lo"], ci["hi"], color=st["color"], alpha=0.2, lw=0, zorder=1)
        if xlabel:
            ax.set_xlabel(xlabel)
    n = sorted(set(int(v) for v in summary["n"]))
    n_txt = f"n = {n[0]}" if len(n) == 1 else f"n = {n[0]}–{n[-1]}"
    ci_txt = "mean, 95 % CI" if min(n) >= MIN_CI_N else "mean; no CI with n < 3"
    ax.set_ylabel(f"{ylabel}\nminus {reference}")
    what = f"dots: {unit}s; " + ("marker: " if x is None else "line: ")
    ax.set_title(f"paired by {unit}, {n_txt}\n{what}{ci_txt}", fontsize=7, loc="left",
                 pad=16 if (annotate and x is None) else 4)


def use_style() -> None:
    """The shared look: white grid, paper context, small fonts, no top/right spines."""
    sns.set_theme(context="paper", style="whitegrid", font_scale=1.0)
    plt.rcParams.update({
        "figure.dpi": 110, "savefig.dpi": 200, "savefig.bbox": "tight",
        "axes.spines.top": False, "axes.spines.right": False,
        "legend.frameon": False, "pdf.fonttype": 42,
    })


def rel(p) -> str:
    """``p`` relative to the repository when it lies inside it, else as given."""
    p = Path(p)
    try:
        return str(p.resolve().relative_to(REPO_ROOT)) if p.is_absolute() else str(p)
    except ValueError:
        return str(p)


def _index_path(scale: str) -> Path:
    return figures_dir(scale) / "index.json"


def read_index(scale: str) -> dict:
    p = _index_path(scale)
    return json.loads(p.read_text()) if p.is_file() else {}


def save_figure(fig, name: str, *, scale: str, caption: str, data: str | Iterable[str] = (),
                config: str | None = None, notebook: str | None = None) -> list[Path]:
    """Save ``fig`` as ``figures/<scale>/<name>.pdf`` and ``.png`` and record it in the index.

    Args:
        name: stable file name, e.g. ``"fig3a_society_test_acc"`` or ``"S2c_program_budget"``.
        caption: one line on what the panel shows.
        data: the data file(s) it was drawn from (paths relative to the repository).
        config: the config file of the run behind the data.
        notebook: the notebook that draws it.
    """
    out = figures_dir(scale)
    paths = [out / f"{name}.pdf", out / f"{name}.png"]
    for p in paths:
        # Fixed metadata keeps the files byte-stable across re-runs.
        meta = {"CreationDate": None} if p.suffix == ".pdf" else {"Software": None}
        fig.savefig(p, metadata=meta)
    data = [data] if isinstance(data, str) else list(data)
    idx = read_index(scale)
    idx[name] = {"caption": caption, "files": [rel(p) for p in paths], "data": [rel(d) for d in data],
                 "config": rel(config) if config else None, "notebook": notebook}
    _index_path(scale).write_text(json.dumps(idx, indent=2, sort_keys=True) + "\n")
    return paths


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


def show_saved(names: Iterable[str], scale: str, width: int = 420) -> None:
    """Display the PNGs of saved panels in a notebook (no-op outside IPython)."""
    try:
        from IPython import get_ipython
        from IPython.display import Image, Markdown, display
    except ImportError:
        return
    if get_ipython() is None:
        return
    idx = read_index(scale)
    for n in names:
        display(Markdown(f"**{n}** — {idx.get(n, {}).get('caption', '')}"))
        display(Image(filename=str(figures_dir(scale) / f"{n}.png"), width=width))
