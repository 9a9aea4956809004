"""Fig. 3f and SI panels S3h–S3m: the society's central question (:mod:`lib.society.studies.verdict.comparisons`).

S3h: is the founders' skill on each family's novel region kept over the generations; S3i: which step
of breeding loses it (the merge or the distillation), at the first bred generation; S3j: how many agents
beat the bare base on several families; Fig. 3f: every arm and the field's merge methods against
``full`` on the same seeds, with S3k (each arm's val-selected agent against ``full``), S3l (the same
per family) and S3m (what each method cost) — four figures, each legible on its own, that were one.
Declared in :data:`PANELS` and :data:`COMPARISON_PANELS`, which :mod:`lib.society.studies.verdict.figures` adds to its
own; this module never imports :mod:`lib.society.studies.verdict.figures`. Means over seeds carry a 95 % CI (t) cut to
[0, 1] (every quantity here is an accuracy or a share; none with one seed), a baseline's share of seeds
a Wilson interval; paired differences a 95 % CI (sign-flip inversion), unbounded (not drawn) with
fewer than 6 seeds, and the exact sign-flip p.
"""
from __future__ import annotations

import textwrap

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.lines import Line2D

from lib.society.studies import frames
from lib.society.studies.verdict import comparisons as sr
from lib.core.stats import BOUNDED_T_CI, SIGN_FLIP_CI, format_p
from lib.society.arms import BASELINE_PREFIX, BESIDE, is_baseline, label
from lib.society.baselines import grid_of
from lib import style
from lib.society import arms
from lib.style import (DiffLayout, P_LABEL_PAD, REFERENCE_GREY, WILSON_CI, Panel, arm_style, ci_note, dodges, interval_bar,
                       mean_curve, paired_difference_panel, use_style, within_bounds)

style.register_looks(arms.LOOKS)  # the society's arms draw in the looks of their table

REFERENCE_LOOK = {"best founder": ("black", "--"), "specialists' mean": ("black", ":"), "base": (REFERENCE_GREY, "-")}
FAMILY_MARKERS = "os^DvP"
BASELINE_STEP = 0.8  # generations between two baselines' marks right of the last generation


def short_name(arm: str) -> str:
    """A baseline's name on an axis: ``baseline_task_arithmetic`` → ``task arith.``."""
    return label(arm).removeprefix(BASELINE_PREFIX)


def _n_text(summ: pd.DataFrame) -> str:
    n = sorted(set(int(v) for v in summ["n"])) or [0]
    return (f"n = {n[0]} seed" + ("s" if n[0] != 1 else "")) if len(n) == 1 else f"n = {n[0]}–{n[-1]} seeds"


def _look(method: str) -> str:
    """The look ``method`` is drawn in (:func:`lib.style.arm_style`): its own; a val-best agent
    its arm's colour and marker, hollow (written as a variant of the arm)."""
    return method.removesuffix(sr.VAL_BEST) + "@val-best" if method.endswith(sr.VAL_BEST) else method


def _baseline_marks(ax, table: pd.DataFrame, x0: float, value: str = "mean") -> list[tuple[float, str]]:
    """Each baseline (rows of ``table``: ``arm, mean, lo, hi``) as a mark at its own x right of ``x0``
    (the last generation: ``x0 + 1``, then every :data:`BASELINE_STEP`), behind a dotted divider, its
    interval as a bar where it exists; returns ``(x, short name)`` for the axis' tick labels."""
    ticks = []
    for i, r in enumerate(table.itertuples()):
        st = arm_style(r.arm)
        x = x0 + 1 + BASELINE_STEP * i
        interval_bar(ax, x, r.lo, r.hi, st["color"], lw=0.9)
        ax.plot([x], [getattr(r, value)], marker=st["marker"], color=st["color"], ms=4.5, ls="", zorder=4)
        ticks.append((x, short_name(r.arm)))
    if ticks:
        ax.axvline(x0 + 0.5, color="0.7", lw=0.8, ls=":", zorder=0)
    return ticks


def _around_zero(ax, half: float = 0.05) -> None:
    """Let a difference axis span at least ±``half`` (accuracy units), so that differences that are all
    (nearly) 0 show as 0 on a readable scale instead of as float noise magnified."""
    lo, hi = ax.get_ylim()
    ax.set_ylim(min(lo, -half), max(hi, half))
    ax.ticklabel_format(axis="y", style="plain", useOffset=False)


def _generation_axis(ax, gens, baselines=()) -> None:
    """Integer generation ticks, then each baseline's tick (``(x, name)``, rotated) right of them."""
    gens = sorted(set(int(g) for g in gens))
    ax.set_xticks(gens + [x for x, _ in baselines], [str(g) for g in gens] + [n for _, n in baselines])
    for lab in ax.get_xticklabels()[len(gens):]:
        lab.set_rotation(90)
        lab.set_fontsize(6.5)
    ax.set_xlabel("generation" + ("  |  baselines (one model each)" if baselines else ""))


# ----------------------------------------------------------------------------- S3h retention


def draw_skill_retention(df: pd.DataFrame, families):
    """S3h. Accuracy on each family's novel region (one column per family): (top) the population
    mean, (bottom) the best agent (picked on test: an oracle), per generation, one line per arm (mean
    over seeds, band: 95 % CI (t) cut to [0, 1]); against the family's best founder (dashed), its
    specialists' mean (dotted) and the bare base (grey); the baselines as marks at their own labelled
    positions right of the last generation."""
    use_style()
    fams = list(families)
    pts, refs = sr.skill_retention(df, fams)
    summ = within_bounds(frames.ci_over_seeds(pts, ["arm", "family", "statistic", "generation"], "value"))
    rsum = frames.ci_over_seeds(refs, ["family", "reference"], "value")
    arms = [a for a in frames.arms_in(pts) if not is_baseline(a) and a != BESIDE]  # full's re-run: Fig. 3a
    nb = len([a for a in frames.arms_in(pts) if is_baseline(a)])
    fig, axes = plt.subplots(2, len(fams), figsize=(2.9 * len(fams) + 1.6 + 0.25 * nb, 5.6), sharex=True, sharey=True,
                             squeeze=False)
    last = int(summ.loc[summ["arm"].isin(arms), "generation"].max())
    for row, (stat, what) in enumerate((("mean", "population mean"), ("best", "best agent (oracle)"))):
        for ax, f in zip(axes[row], fams):
            s = summ[(summ["family"] == f) & (summ["statistic"] == stat)]
            for a, dx in zip(arms, dodges(len(arms))):
                x = s[s["arm"] == a]
                if len(x):
                    mean_curve(ax, x, "generation", a, band_alpha=0.12, lw=1.2, ms=3, dodge=dx)
            for ref, (col, ls) in REFERENCE_LOOK.items():
                r = rsum[(rsum["family"] == f) & (rsum["reference"] == ref)]
                if len(r):
                    ax.axhline(float(r["mean"].iloc[0]), color=col, ls=ls, lw=1.0, zorder=1, label=ref)
            ticks = _baseline_marks(ax, s[s["arm"].map(is_baseline)], last)
            ax.set_title(f"{f}, {what}", fontsize=8)
            ax.set_ylim(-0.03, 1.03)
            _generation_axis(ax, s.loc[s["arm"].isin(arms), "generation"], ticks)
        axes[row][0].set_ylabel(f"novel-region accuracy\n{what}", fontsize=8)
    for ax in axes[0]:
        ax.set_xlabel("")
    h, lab = axes[0][0].get_legend_handles_labels()
    axes[0][-1].legend(h, lab, fontsize=6.5, loc="upper left", bbox_to_anchor=(1.02, 1.0), frameon=False)
    fig.suptitle(f"Skill on the novel region (never pre-trained), {_n_text(summ)}; band and bars: {BOUNDED_T_CI}\n"
                 "lines: best founder (dashed), specialists' mean (dotted), base (grey); right of the divider: "
                 "the baselines, one model each", fontsize=8)
    fig.tight_layout()
    return fig


# ----------------------------------------------------------------------------- S3i skill loss


def skill_loss_at(df: pd.DataFrame, families, generation=None) -> tuple[pd.DataFrame, pd.DataFrame, str]:
    """:func:`lib.society.studies.verdict.comparisons.skill_loss` for the children born at ``generation``
    (``"first"``: the first bred generation, the founders' children; ``None``: every bred generation
    pooled, as the analysis does), the summary recomputed over those children alike (per seed, then
    :func:`lib.society.studies.frames.paired_over_seeds`). Returns ``(points, summary, which)``, ``which``
    saying in words which generations they are."""
    pts, summ = sr.skill_loss(df, families)
    gens = sorted(set(int(g) for g in pts["generation"]))
    if generation is None or pts.empty:
        return pts, summ, ("every bred generation pooled" + (f" ({gens[0]}–{gens[-1]})" if len(gens) > 1 else ""))
    g = gens[0] if generation == "first" else int(generation)
    pts = pts[pts["generation"] == g]
    long = pts.melt(id_vars=frames.AGENT + ["family"], value_vars=list(sr.STEPS), var_name="step", value_name="diff")
    summ = frames.paired_over_seeds(long, ["arm", "family", "step"])
    return pts, summ, f"generation {g}" + (" (the first bred: children of the founders)" if g == gens[0] else "")


SKILL_FLOOR = 0.01  # below this mean accuracy of the parents on a family's novel region there is no skill to lose


def skill_free_families(pts: pd.DataFrame, families, floor: float = SKILL_FLOOR) -> dict[str, str]:
    """The families of ``pts`` (:func:`skill_loss_at`) whose children's parents hold (almost) none of the
    family's novel skill — their mean accuracy on its novel region, over every parent of every child
    of every arm, below ``floor`` — so that every step difference is (nearly) 0 by construction, with
    the numbers that say so (``"the children's parents score 0.002 on the novel region, …"``)."""
    out = {}
    for f in families:
        d = pts[pts["family"] == f]
        if d.empty:
            continue
        parents = float(np.nanmean(d[["parent_a", "parent_b"]].to_numpy(float)))
        if parents < floor:
            per_arm = d.groupby(["arm", "seed"])[list(sr.STEPS)].mean().groupby("arm").mean()
            out[f] = (f"the children's parents score {parents:.3f} on the novel region, no skill to lose "
                      f"(largest mean step over arms: {float(np.nanmax(per_arm.abs().to_numpy())):.3f})")
    return out


def _horizontal_differences(ax, points: pd.DataFrame, summary: pd.DataFrame, arms_: list[str], *,
                            fontsize: float = 7, with_n: bool = True) -> None:
    """One row per arm (top to bottom in ``arms_``'s order): its paired differences as dots (seeds), their mean as
    the arm's marker with its 95 % CI (sign-flip inversion) as a bar (none with < 6 seeds), and its exact p (and n,
    ``with_n``) written right of the axes at ``fontsize``, level with the arm; a line at 0 marks no difference."""
    ax.axvline(0.0, color=REFERENCE_GREY, lw=0.8, zorder=0)
    for k, a in enumerate(arms_):
        y = len(arms_) - 1 - k
        st = arm_style(a)
        v = points.loc[points["arm"] == a, "diff"].to_numpy(float)
        r = summary[summary["arm"] == a]
        jit = np.linspace(-0.1, 0.1, len(v)) if len(v) > 1 else np.zeros(len(v))
        ax.scatter(v, y + 0.14 + jit, s=8, color=st["color"], alpha=0.55, lw=0, zorder=2)
        if r.empty:
            continue
        r = r.iloc[0]
        if np.isfinite(r["lo"]) and np.isfinite(r["hi"]):
            ax.plot([r["lo"], r["hi"]], [y - 0.2] * 2, color=st["color"], lw=1.2, marker="|", ms=5, zorder=3)
        ax.plot([r["mean"]], [y - 0.2], marker=st["marker"], ms=4.5, color=st["color"], mfc=st["mfc"], ls="", zorder=4)
        ax.annotate(f"p={format_p(r['p'])}" + (f", n={int(r['n'])}" if with_n else ""), (1.0, y),
                    xycoords=("axes fraction", "data"), xytext=(3, 0), textcoords="offset points", ha="left",
                    va="center", fontsize=fontsize)
    ax.set_ylim(-0.6, len(arms_) - 0.4)


def _n_per_arm(summ: pd.DataFrame, arms_: list[str]) -> dict[str, str]:
    """Each arm's n seeds over every panel of :func:`draw_skill_loss` as text (``"32"``; a range ``"8–16"`` where
    the panels differ)."""
    out = {}
    for a in arms_:
        n = sorted({int(v) for v in summ.loc[summ["arm"] == a, "n"].dropna()})
        out[a] = "–".join(map(str, [n[0], n[-1]] if len(n) > 1 else n)) if n else "0"
    return out


def draw_skill_loss(df: pd.DataFrame, families, generation=None, *, compact: bool = False):
    """S3i. Where a bred child's novel-region skill goes: one row of panels per family and all families pooled
    (their mean), one column per step (merge − parents' mean, merge − the better parent, child − merge); in each,
    one row per arm: dots = seeds (mean over children), marker = mean over seeds with its 95 % CI (sign-flip
    inversion; none with < 6 seeds) and, right of the panel, the exact p and n. ``generation``: the children born
    then (``"first"``: the first bred generation) or, with ``None``, every bred generation pooled
    (:func:`skill_loss_at`); the title says which. A family whose children's parents hold none of its skill
    (:func:`skill_free_families`) is left out and the title says so, with the numbers (it still counts in the
    pooled row). ``no_sex`` copies a parent, so its merge − parent is 0 by construction.

    ``compact`` (S3o: ten arms, legible at the README's 830 px): every text at 8 pt in narrower columns, each
    arm's n once, in its row's label (``full (n=32)``), and only the p right of each panel."""
    use_style()
    pts, summ, which = skill_loss_at(df, families, generation)
    dropped = skill_free_families(pts, families)
    cols = [f for f in families if f not in dropped] + [sr.ALL]
    arms_ = [a for a in frames.arms_in(pts) if not is_baseline(a)]
    n_steps = len(sr.STEPS)
    pt = 8.0 if compact else 7.0  # the p labels, tick labels; titles and axis labels at 8
    row_h = 0.2 * len(arms_) + 0.55
    col_w, extra = (2.35, 1.4) if compact else (3.15, 1.3)
    fig, axes = plt.subplots(len(cols), n_steps, figsize=(col_w * n_steps + extra, row_h * len(cols) + 1.3),
                             sharey=True, sharex="col", squeeze=False)
    n = _n_per_arm(summ, arms_)
    names = [f"{a} (n={n[a]})" for a in arms_] if compact else arms_
    for i, f in enumerate(cols):
        for j, step in enumerate(sr.STEPS):
            ax = axes[i][j]
            p = pts.loc[pts["family"] == f, ["arm", "seed", step]].rename(columns={step: "diff"})
            p = p.groupby(["arm", "seed"], as_index=False)["diff"].mean()
            s = summ[(summ["family"] == f) & (summ["step"] == step)]
            _horizontal_differences(ax, p, s, arms_, fontsize=pt, with_n=not compact)
            pooled = sr.ALL if compact else sr.ALL + " (their mean)"  # compact: the title says it, the column is narrow
            ax.set_title(f"{f if f != sr.ALL else pooled}: {step}", fontsize=8, loc="left")
            if i == len(cols) - 1:
                ax.set_xlabel(f"{step}\n(test accuracy, novel region)", fontsize=8)
            ax.tick_params(axis="x", labelsize=pt)
        axes[i][0].set_yticks(range(len(arms_)), list(reversed(names)), fontsize=pt)
    by_why: dict[str, list[str]] = {}
    for f, why in dropped.items():
        by_why.setdefault(why, []).append(f)
    note = "; ".join(f"{', '.join(fs)} not drawn: {why}" for why, fs in by_why.items())
    note += " (it counts in the pooled row)" if len(dropped) == 1 else " (they count in the pooled row)" if dropped else ""
    where = (f"n seeds beside each arm; right of each panel: exact sign-flip p; {sr.ALL}: their mean" if compact else
             "right of each panel: exact sign-flip p, n seeds")
    lines = [f"Where skill on the novel region is lost, per bred child (elites excluded), {which}",
             f"dots: seeds (mean over children); marker: {ci_note(summ)} (over seeds); {where}"]
    lines += [note] if note else []
    chars = int(fig.get_size_inches()[0] * 14)  # each part wrapped at the figure's width, never mid-part if it fits
    fig.suptitle("\n".join(w for ln in lines for w in style.wrap_phrases(ln, chars)), fontsize=8)
    fig.tight_layout(w_pad=1.5 if compact else 5.5)  # it makes room for the title, and no more: no empty band under it
    return fig


# ----------------------------------------------------------------------------- S3j generalists


def draw_generalists(df: pd.DataFrame, families):
    """S3j. Share of the population beating the bare base (strictly) on (a) at least two families
    and (b) at least one, per generation and arm (mean over seeds, band: 95 % CI (t) cut to [0, 1]);
    baselines (one model each: 0 or 1 per seed) as marks at their own labelled positions right of the
    last generation, the share of seeds with its Wilson 95 % interval."""
    use_style()
    pts = sr.generalists(df, families, min_families=(2, 1))
    shares = sr.generalist_shares(df, families)
    summ, base = shares[~shares["arm"].map(is_baseline)], shares[shares["arm"].map(is_baseline)]
    arms = [a for a in frames.arms_in(pts) if not is_baseline(a)]
    last = int(summ.loc[summ["arm"].isin(arms), "generation"].max())
    fig, axes = plt.subplots(1, 2, figsize=(9.4, 3.6), sharey=True)
    for ax, (k, what) in zip(axes, ((2, "(a) ≥ 2 families"), (1, "(b) ≥ 1 family"))):
        s = summ[(summ["k"] == k) & summ["arm"].isin(arms)]
        for a, dx in zip(arms, dodges(len(arms))):
            x = s[s["arm"] == a]
            if len(x):
                mean_curve(ax, x, "generation", a, band_alpha=0.12, lw=1.2, ms=3, dodge=dx)
        ticks = _baseline_marks(ax, base[base["k"] == k], last)
        _generation_axis(ax, s["generation"], ticks)
        ax.set_ylim(-0.05, 1.05)
        ax.set_title(f"{what} above the bare base; arms: {_n_text(s)}", fontsize=8, loc="left")
    axes[0].set_ylabel("share of agents above the base")
    fig.suptitle(f"Generalists: arms, mean over seeds, band {BOUNDED_T_CI}"
                 + (f"; baselines (one model: 0 or 1 per seed), share of seeds, {WILSON_CI}" if len(base) else ""),
                 fontsize=8)
    h, lab = axes[1].get_legend_handles_labels()
    axes[1].legend(h, lab, fontsize=6.5, loc="upper left", bbox_to_anchor=(1.02, 1.0), frameon=False)
    fig.tight_layout()
    return fig


# ----------------------------------------------------------------------------- Fig. 3f comparison


def _family_differences(ax, pts: pd.DataFrame, summ: pd.DataFrame, order, families) -> None:
    """Per method column: each family's mean difference (one marker per family, offset), dots =
    seeds, bar = 95 % CI (sign-flip inversion) where bounded."""
    off = np.linspace(-0.27, 0.27, len(families))
    for i, m in enumerate(order):
        col = arm_style(_look(m))["color"]
        for dx, f, mk in zip(off, families, FAMILY_MARKERS):
            d = pts[(pts["method"] == m) & (pts["metric"] == f)]["diff"]
            ax.scatter(np.full(len(d), i + dx), d, s=7, color=col, alpha=0.45, lw=0, zorder=2)
            r = summ[(summ["method"] == m) & (summ["metric"] == f)]
            if len(r):
                r = r.iloc[0]
                interval_bar(ax, i + dx, r["lo"], r["hi"], col, lw=0.9)
                ax.plot([i + dx], [r["mean"]], marker=mk, ms=4, color=col, mfc="white", mew=1.0, ls="", zorder=4)
    ax.axhline(0.0, color=REFERENCE_GREY, lw=0.8, zorder=0)
    ax.set_xticks(range(len(order)), order, rotation=40, ha="right", fontsize=6.5)
    ax.set_xlim(-0.6, len(order) - 0.4)
    ax.legend(handles=[Line2D([], [], marker=mk, color="black", mfc="white", ls="", ms=4, label=f)
                       for f, mk in zip(families, FAMILY_MARKERS)], fontsize=6.2, ncol=len(families),
              loc="lower right", bbox_to_anchor=(1.0, 1.0), frameon=False)


COST_WHAT = {"train_steps": "LoRA training steps\n(founders' included; multitask: its own only)",
             "val_evals": "val evaluations\n(selection and screening)",
             "wall_s": "wall seconds of the run\n(founders' training not timed)"}


def _cost_bars(ax, cost: pd.DataFrame, methods, column: str, *, labels: bool = True) -> None:
    """Horizontal bars of ``cost[column]`` (mean over seeds), one per method in its colour, the value
    written as a plain number (``1,760``) in black just right of the bar's end, where every bar colour
    leaves it legible; ``—`` for a method without that cost."""
    y = np.arange(len(methods))
    v = cost.reindex(methods)[column].to_numpy(float)
    ax.barh(y, np.nan_to_num(v), color=[arm_style(_look(m))["color"] for m in methods], height=0.7)
    top = np.nanmax(v) if np.isfinite(v).any() else 1.0
    for yi, vi in zip(y, v):
        ok = np.isfinite(vi)
        ax.text((vi if ok else 0) + 0.015 * (top or 1.0), yi, f"{vi:,.0f}" if ok else "—", va="center", ha="left",
                fontsize=6.5, color="black" if ok else "0.35")
    ax.set_xlim(0, 1.3 * (top or 1.0))
    if labels:  # the others share (or need not repeat) these labels
        ax.set_yticks(y, methods, fontsize=7)
    else:
        ax.tick_params(labelleft=False)
    ax.set_ylim(len(methods) - 0.5, -0.5)
    ax.tick_params(axis="x", labelsize=6.5)
    ax.grid(axis="y", visible=False)


def draw_comparison(df: pd.DataFrame, families, walls: pd.DataFrame | None = None):
    """All of Fig. 3f's parts in one figure, for a quick look in a notebook (not saved: the saved panels
    are :func:`draw_comparison_methods`, :func:`draw_comparison_val_best`, :func:`draw_comparison_families`
    and :func:`draw_method_costs`, each legible at ~900 px). At the last generation, every method minus
    ``full`` (population mean) on the same seed: (a) overall — the society arms, each arm's val-selected
    agent, the baselines, the founders' mean and the bare base; (b) the same per family; (c) each
    method's cost, mean over seeds."""
    use_style()
    fams = list(families)
    pts, summ = sr.comparison(df, fams, walls)
    order = [m for m in dict.fromkeys(summ["method"]) if m != sr.REFERENCE]
    fig = plt.figure(figsize=(13.0, 8.2))
    outer = fig.add_gridspec(1, 2, width_ratios=[3.0, 2.1], wspace=0.42, top=0.84)  # room for the rotated p
    left = outer[0].subgridspec(2, 1, height_ratios=[1.25, 1.0], hspace=0.75)
    right = outer[1].subgridspec(1, 3, wspace=0.12)
    a1, a2 = fig.add_subplot(left[0]), fig.add_subplot(left[1])
    over = summ[summ["metric"] == "overall"]
    paired_difference_panel(a1, pts[pts["metric"] == "overall"], over[over["method"] != sr.REFERENCE], group="method",
                            order=order, reference=sr.REFERENCE, ylabel="test accuracy, last generation",
                            layout=DiffLayout(look={m: _look(m) for m in order}))
    a1.set_xticks(a1.get_xticks(), [t.get_text().replace("\n", " ") for t in a1.get_xticklabels()], rotation=40,
                  ha="right", fontsize=6.5)
    a1.set_title("(a) overall; " + a1.get_title(loc="left"), fontsize=7, loc="left", pad=56)
    _around_zero(a1)
    _family_differences(a2, pts, summ, order, fams)
    _around_zero(a2)
    a2.set_ylabel(f"per-family test accuracy\nminus {sr.REFERENCE}")
    a2.set_title(f"(b) per family; dots: seeds; marker: mean,\n{SIGN_FLIP_CI} where n ≥ 6", fontsize=7,
                 loc="left")
    methods = [sr.REFERENCE] + order
    cost = over.set_index("method")
    for k, c in enumerate(("train_steps", "val_evals", "wall_s")):
        ax = fig.add_subplot(right[k])
        _cost_bars(ax, cost, methods, c, labels=k == 0)
        ax.set_title(("(c) cost: " if k == 0 else "") + COST_WHAT[c], fontsize=7, loc="left")
    fig.suptitle("The society against the field's merge methods: each minus full (population mean) on the "
                 "same seed, last generation; cost: mean over seeds (—: a reference, not a method)", fontsize=8.5, y=0.995)
    return fig


def _split(summ: pd.DataFrame) -> tuple[list[str], list[str]]:
    """The methods of a :func:`lib.society.studies.verdict.comparisons.comparison` summary other than ``full``:
    ``(methods, val_best)`` — the arms' populations, baselines, founders and base; each arm's val-best agent."""
    order = [m for m in dict.fromkeys(summ["method"]) if m != sr.REFERENCE]
    return [m for m in order if not m.endswith(sr.VAL_BEST)], [m for m in order if m.endswith(sr.VAL_BEST)]


def _overall_panel(ax, pts, summ, order, what: str) -> None:
    """Each method of ``order`` minus ``full`` on the same seed, overall: p and n written flat above each column
    (two short lines), the tick labels broken before a parenthesis and tilted when there are many."""
    over = summ[(summ["metric"] == "overall") & summ["method"].isin(order)]
    paired_difference_panel(ax, pts[pts["metric"] == "overall"], over, group="method", order=order,
                            reference=sr.REFERENCE, ylabel="test accuracy, last generation",
                            layout=DiffLayout(look={m: _look(m) for m in order}, crowded=False))
    labels = [t.get_text().split("\n−")[0].replace("\n", "").replace(" (", "\n(") for t in ax.get_xticklabels()]
    tilt = len(order) > 4
    ax.set_xticks(ax.get_xticks(), labels, rotation=35 if tilt else 0, ha="right" if tilt else "center", fontsize=7)
    ax.set_xlabel(textwrap.fill(f"{what}, each minus {sr.REFERENCE} (population mean) on the same seed", 70),
                  fontsize=7.5)
    _around_zero(ax)


def _wrapped_title(ax, head: str, width: float) -> None:
    """``head`` and the panel's own title (its n and interval) as one left title, wrapped to ``width`` characters."""
    text = head + "; " + ax.get_title(loc="left").replace("\n", "; ")
    ax.set_title(textwrap.fill(text, int(width)), fontsize=7.5, loc="left", pad=26)  # above the p and n lines


def draw_comparison_methods(df: pd.DataFrame, families, walls: pd.DataFrame | None = None):
    """Fig. 3f. At the last generation, overall test accuracy of every society arm (population mean),
    every baseline of the field (one model), the founders' mean and the bare base, each minus ``full``
    (population mean) on the same seed: dots: seeds; marker: mean difference, 95 % CI (sign-flip
    inversion; none with < 6 seeds); exact p and n above each column. The arms' val-selected agents are
    :func:`draw_comparison_val_best`, the families :func:`draw_comparison_families`, the costs
    :func:`draw_method_costs`."""
    use_style()
    pts, summ = sr.comparison(df, list(families), walls)
    order, _ = _split(summ)
    fig, ax = plt.subplots(figsize=(0.62 * len(order) + 1.6, 4.4))
    _overall_panel(ax, pts, summ, order, "arms (population), baselines (one model), founders, base")
    _wrapped_title(ax, "The society against the field's merge methods, last generation", 12 * len(order))
    fig.tight_layout()
    return fig


def draw_comparison_val_best(df: pd.DataFrame, families, walls: pd.DataFrame | None = None):
    """S3k. What a user would deploy: each arm's val-selected agent (the last generation's agent with the
    highest val accuracy; hollow marker) minus ``full``'s population mean on the same seed, overall test
    accuracy; dots: seeds; marker: mean, 95 % CI (sign-flip inversion); exact p and n above."""
    use_style()
    pts, summ = sr.comparison(df, list(families), walls)
    _, order = _split(summ)
    if not order:
        return None
    fig, ax = plt.subplots(figsize=(max(5.2, 0.9 * len(order) + 1.6), 4.0))
    _overall_panel(ax, pts, summ, order, "each arm's val-selected agent")
    # title and x label broken between phrases, never inside one
    ax.set_title("Each arm's val-selected agent (what a user would deploy), last generation\n"
                 + ax.get_title(loc="left"), fontsize=7.5, loc="left", pad=26)
    ax.set_xlabel(f"each arm's val-selected agent,\neach minus {sr.REFERENCE} (population mean) on the same seed",
                  fontsize=7.5)
    fig.tight_layout()
    return fig


def draw_comparison_families(df: pd.DataFrame, families, walls: pd.DataFrame | None = None):
    """S3l. Fig. 3f per family: one panel per family, one row per method (the arms' populations, the
    baselines, the founders' mean, the base: Fig. 3f's), its test accuracy on the family minus
    ``full``'s on the same seed at the last generation: dots: seeds; marker: mean, 95 % CI (sign-flip
    inversion; none with < 6 seeds) as a horizontal bar; the exact p right of each row."""
    use_style()
    fams = list(families)
    pts, summ = sr.comparison(df, fams, walls)
    order, _ = _split(summ)
    fig, axes = plt.subplots(1, len(fams), figsize=(2.6 * len(fams) + 1.8, 0.27 * len(order) + 1.6), sharey=True,
                             squeeze=False)
    y = np.arange(len(order))
    for ax, f in zip(axes[0], fams):
        for i, m in enumerate(order):
            st = arm_style(_look(m))
            d = pts[(pts["method"] == m) & (pts["metric"] == f)]["diff"].to_numpy()
            ax.scatter(d, np.full(len(d), i - 0.18), s=7, color=st["color"], alpha=0.45, lw=0, zorder=2)
            r = summ[(summ["method"] == m) & (summ["metric"] == f)]
            if r.empty:
                continue
            r = r.iloc[0]
            if np.isfinite(r["lo"]) and np.isfinite(r["hi"]):
                ax.plot([r["lo"], r["hi"]], [i + 0.12, i + 0.12], color=st["color"], lw=1.1, marker="|", ms=5,
                        zorder=3)
            ax.plot([r["mean"]], [i + 0.12], marker=st["marker"], ms=4.5, color=st["color"], mfc=st["mfc"], ls="",
                    zorder=4)
            ax.annotate(f"p={format_p(r['p'])}", (1.01, i), xycoords=("axes fraction", "data"), va="center",
                        ha="left", fontsize=6.2)
        ax.axvline(0.0, color=REFERENCE_GREY, lw=0.8, zorder=0)
        ax.set_yticks(y, order, fontsize=7)
        ax.set_ylim(len(order) - 0.5, -0.6)
        ax.set_title(f, fontsize=8.5)
        ax.set_xlabel(f"test accuracy on {f}\nminus {sr.REFERENCE}", fontsize=7.5)
        ax.tick_params(axis="x", labelsize=7)
        ax.grid(axis="y", visible=False)
    fam = summ[summ["metric"].isin(fams) & summ["method"].isin(order)]
    fig.suptitle(f"Fig. 3f per family, last generation, paired by seed ({_n_text(fam)}): dots: seeds; "
                 f"marker: {ci_note(fam)}; right: exact sign-flip p", fontsize=8)
    fig.tight_layout()
    return fig


def draw_method_costs(df: pd.DataFrame, families, walls: pd.DataFrame | None = None):
    """S3m. What each method of Fig. 3f cost, mean over seeds: LoRA training steps (the founders'
    included, but for multitask, trained from the base on their union), val evaluations and wall
    seconds of the method's own run (from the progress files; machine-dependent). The founders are
    trained once per seed and shared, so their training is counted in the steps but not timed in any
    run's wall seconds; a val-selected agent costs its arm's run; the founders and the base are where
    every method starts (no cost)."""
    use_style()
    pts, summ = sr.comparison(df, list(families), walls)
    order, _ = _split(summ)
    methods = [sr.REFERENCE] + [m for m in order if m not in (sr.FOUNDERS, sr.BASE)]
    cost = summ[summ["metric"] == "overall"].set_index("method")
    fig, axes = plt.subplots(1, 3, figsize=(9.0, 0.27 * len(methods) + 1.5), sharey=True)
    for k, (ax, c) in enumerate(zip(axes, ("train_steps", "val_evals", "wall_s"))):
        _cost_bars(ax, cost, methods, c, labels=k == 0)
        ax.set_title(COST_WHAT[c], fontsize=7.5, loc="left")
    n = cost.reindex(methods).dropna(subset=["n"])
    fig.suptitle(f"Cost of each method, mean over seeds ({_n_text(n)}); not drawn: the val-selected agents (each "
                 "costs its arm's run) and the founders and base (where every method starts)", fontsize=8)
    fig.tight_layout()
    return fig


# ----------------------------------------------------------------------------- registry

# The first verdict's task arithmetic, TIES and DARE-TIES chose their hyperparameters on its seed grid only
# (under-tuned there; the society study's re-run, S3n and Fig. 3g, is the number to use: docs/results.md): its panels
# name them so, never as the tuned ones: every baseline the seed grid tunes, as lib.society.baselines.grid_of declares
# them (a second list, TIES and DARE-TIES only, once left task arithmetic unmarked).
SEED_GRID = tuple(grid_of("seed"))
SEED_GRID_NOTE = " (seed grid)"


def seed_grid_name(text: str) -> str:
    """``text`` with a seed-grid baseline's name (``TIES``, ``baseline_ties``) marked as the first verdict's."""
    names = {n for a in SEED_GRID for n in (a, label(a), short_name(a))}
    return text + SEED_GRID_NOTE if text in names else text


def mark_seed_grid(fig):
    """Rename the seed-grid baselines in every tick label, legend entry and text of ``fig`` (the first verdict's
    panels): ``TIES`` → ``TIES (seed grid)``. Returns ``fig`` (``None`` stays ``None``)."""
    from matplotlib.ticker import FixedFormatter, FuncFormatter

    if fig is None:
        return None
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            fmt = axis.get_major_formatter()
            if isinstance(fmt, FixedFormatter):
                fmt.seq = [seed_grid_name(s) for s in fmt.seq]
            elif isinstance(fmt, FuncFormatter) and not getattr(fmt, "_seed_grid", False):
                new = FuncFormatter(lambda x, pos, old=fmt: seed_grid_name(old(x, pos)))
                new._seed_grid = True
                axis.set_major_formatter(new)
        texts = list(ax.texts) + (list(ax.get_legend().get_texts()) if ax.get_legend() else [])
        for txt in texts:
            txt.set_text(seed_grid_name(txt.get_text()))
    for leg in fig.legends:
        for txt in leg.get_texts():
            txt.set_text(seed_grid_name(txt.get_text()))
    fig.canvas.draw()  # the tick labels written by the new formatters (get_ticklabels reads them at once)
    return fig


def _first_verdict(draw):
    """``draw`` for a panel of the first verdict's folder: its seed-grid baselines named so (:func:`mark_seed_grid`)."""
    return lambda data: mark_seed_grid(draw(data))


def _with(metrics, fn, *, walls: bool = False):
    """``draw(data)`` for a :class:`lib.style.Panel`: ``fn(rows, families[, walls])``, or None
    unless every one of ``metrics`` is in the rows."""
    def draw(data):
        rows = data["rows"]
        if not set(metrics) <= set(rows["metric"]):
            return None
        return fn(rows, data["families"], data.get("walls")) if walls else fn(rows, data["families"])
    return draw


def _novel(data) -> list[str]:
    return [f"test_{f}_{sr.REGION}" for f in data["families"]]


def _comparison_caption(data) -> str:
    base = [a for a in frames.arms_in(data["rows"]) if is_baseline(a)]
    return ("The first verdict against the field's merge methods, last generation: every method minus full's "
            "population mean on the same seed — the first run's arms (population mean; the breeding arms are "
            "compared with the full run beside them, Fig. 3a), "
            f"the baselines ({', '.join(base) if base else 'none in these data'}; the first verdict's, on the seed "
            "grids: task arithmetic, TIES and DARE-TIES are under-tuned there, the society study's re-run is the "
            "number to use, docs/results.md), the founders' mean and the bare "
            f"base, overall test accuracy (dots: seeds; mean, {SIGN_FLIP_CI}, none with < 6 seeds; exact sign-flip "
            "p). Each arm's val-selected agent: S3k; per family: S3l; cost: S3m.")


PANELS = [
    Panel("fig3f_society_vs_merge_methods", _first_verdict(_with(["test_overall"], draw_comparison_methods)),
          _comparison_caption,
          source="comparison"),
    Panel("S3h_society_skill_retention",
          _first_verdict(lambda data: _with(_novel(data), draw_skill_retention)(data)),
          "Skill retention on each family's novel region (never pre-trained; full@breeding, full's re-run beside "
          "the breeding arms, is compared in Fig. 3a): population mean (top) and best agent "
          f"(bottom, an oracle pick) per generation and arm, mean over seeds with its {BOUNDED_T_CI}; lines: the "
          "family's best founder, its specialists' mean and the bare base; the baselines (one model each) at their "
          "labelled positions right of the last generation; TIES and DARE-TIES (seed grid): the first verdict's, "
          "tuned on its seed grid only (under-tuned; S3n has the society study's tuned ones)."),
    Panel("S3i_society_skill_loss",
          lambda data: _with(_novel(data) + [f"source_{m}" for m in _novel(data)],
                             lambda rows, fams: draw_skill_loss(rows, fams, generation="first"))(data),
          "Where novel-region skill is lost, per bred child of the first bred generation (the founders' children; "
          "elites excluded): merge − parents' mean, merge − the better parent and child − merge (distillation), per "
          f"family and pooled, per arm; dots: seeds; mean, {SIGN_FLIP_CI} (none with < 6 seeds), exact p. A family "
          "whose children's parents hold none of its novel skill (mean below 0.01: nothing to lose) is left out, the "
          "title says so with its numbers. no_sex copies a parent: its merge − parent is 0."),
    Panel("S3j_society_generalists", _first_verdict(_with(["base_test_overall"], draw_generalists)),
          "Generalists: share of the population strictly above the bare base on at least two families (a) and at "
          f"least one (b), per generation and arm, mean over seeds with its {BOUNDED_T_CI}; the baselines (one "
          "model each) at their labelled positions: the share of seeds, 95 % CI (Wilson); TIES and DARE-TIES (seed "
          "grid): the first verdict's, tuned on its seed grid only (under-tuned)."),
]

COMPARISON_PANELS = [  # Fig. 3f's other parts, each its own figure (lib.society.studies.verdict.figures adds them
                       # after PANELS)
    Panel("S3k_society_val_best", _with(["test_overall", "val_overall"], draw_comparison_val_best),
          "Each arm's val-selected agent (the last generation's agent with the highest val accuracy: what a user "
          "would deploy) minus full's population mean on the same seed, overall test accuracy; dots: seeds; mean, "
          f"{SIGN_FLIP_CI} (none with < 6 seeds), exact p."),
    Panel("S3l_society_vs_merge_by_family", _first_verdict(_with(["test_overall"], draw_comparison_families)),
          "Fig. 3f per family: every arm (population mean), baseline, the founders' mean and the bare base minus "
          f"full on the same seed, last generation; dots: seeds; mean, {SIGN_FLIP_CI} (none with < 6 seeds); exact "
          "sign-flip p at the right; baseline_ties and baseline_dare_ties (seed grid): the first verdict's, tuned on "
          "its seed grid only (under-tuned)."),
    Panel("S3m_society_method_costs", _first_verdict(_with(["test_overall"], draw_method_costs, walls=True)),
          "Cost of each method of Fig. 3f, mean over seeds: LoRA training steps (the founders' included; multitask "
          "trains from the base, its own steps only), val evaluations, and wall seconds of the method's own run "
          "(machine-dependent; the founders, trained once per seed and shared, are not timed in it); "
          "baseline_ties and baseline_dare_ties (seed grid): the first verdict's, tuned on its seed grid only.",
          source="comparison"),
]


def comparison_rows(rows: pd.DataFrame, families, walls: pd.DataFrame | None = None) -> pd.DataFrame:
    """:func:`lib.society.studies.verdict.comparisons.comparison`'s summary as a table: ``metric, method,
    reference, n, accuracy, mean`` (method − full), ``lo, hi`` (95 % CI, sign-flip inversion), ``p``
    (text, :func:`lib.core.stats.format_p`; n/a for full itself and with one seed) and the cost
    columns ``train_steps, val_evals, wall_s``."""
    _, summ = sr.comparison(rows, families, walls)
    out = summ.assign(n=summ["n"].astype("Int64"), p=[format_p(float(p)) for p in summ["p"]])
    return out[["metric", "method", "reference", "n", "accuracy", "mean", "lo", "hi", "p", "train_steps",
                "val_evals", "wall_s"]]
