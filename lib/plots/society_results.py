"""Fig. 3f and SI panels S3h–S3j: the society's central question (:mod:`lib.analysis.society_results`).

S3h: is the founders' skill on each family's novel region kept over the generations; S3i: which step
of breeding loses it (the merge or the distillation); S3j: how many agents beat the bare base on
several families; Fig. 3f: every arm, its val-selected agent and the field's merge methods against
``full`` on the same seeds, with each method's cost. Declared in :data:`PANELS`, which
:mod:`lib.plots.society` adds to its own; this module never imports :mod:`lib.plots.society`. Means
over seeds carry a 95 % CI (t) (none with one seed); paired differences a 95 % CI (sign-flip
inversion), unbounded (not drawn) with fewer than 6 seeds, and the exact sign-flip p.
"""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.lines import Line2D

from ..analysis import diagnostics as dg
from ..analysis import society_results as sr
from ..analysis.stats import SIGN_FLIP_CI, T_CI, format_p
from .style import (REFERENCE_GREY, Panel, arm_style, ci_note, interval_bar, mean_curve, paired_difference_panel,
                    use_style)

REFERENCE_LOOK = {"best founder": ("black", "--"), "specialists' mean": ("black", ":"), "base": (REFERENCE_GREY, "-")}
FAMILY_MARKERS = "os^DvP"


def _n_text(summ: pd.DataFrame) -> str:
    n = sorted(set(int(v) for v in summ["n"])) or [0]
    return (f"n = {n[0]} seed" + ("s" if n[0] != 1 else "")) if len(n) == 1 else f"n = {n[0]}–{n[-1]} seeds"


def _look(method: str) -> str:
    """The look ``method`` is drawn in (:func:`lib.plots.style.arm_style`): its own; a val-best agent
    its arm's colour and marker, hollow (written as a variant of the arm)."""
    return method.removesuffix(sr.VAL_BEST) + "@val-best" if method.endswith(sr.VAL_BEST) else method


def _baseline_marks(ax, table: pd.DataFrame, x0: float, value: str = "mean") -> list[Line2D]:
    """Each baseline (rows of ``table``: ``arm, mean, lo, hi``) as a mark right of ``x0`` (the last
    generation), its 95 % CI (t) as a bar where it exists; returns legend handles."""
    handles = []
    for i, r in enumerate(table.itertuples()):
        st = arm_style(r.arm)
        x = x0 + 0.25 + 0.12 * i
        interval_bar(ax, x, r.lo, r.hi, st["color"], lw=0.9)
        ax.plot([x], [getattr(r, value)], marker=st["marker"], color=st["color"], ms=4.5, ls="", zorder=4)
        handles.append(Line2D([], [], marker=st["marker"], color=st["color"], ls="", ms=4.5, label=r.arm))
    return handles


def _around_zero(ax, half: float = 0.05) -> None:
    """Let a difference axis span at least ±``half`` (accuracy units), so that differences that are all
    (nearly) 0 show as 0 on a readable scale instead of as float noise magnified."""
    lo, hi = ax.get_ylim()
    ax.set_ylim(min(lo, -half), max(hi, half))
    ax.ticklabel_format(axis="y", style="plain", useOffset=False)


def _generation_axis(ax, gens) -> None:
    gens = sorted(set(int(g) for g in gens))
    ax.set_xticks(gens)
    ax.set_xlabel("generation")


# ----------------------------------------------------------------------------- S3h retention


def draw_skill_retention(df: pd.DataFrame, families):
    """S3h. Accuracy on each family's novel region (one column per family): (top) the population
    mean, (bottom) the best agent (picked on test: an oracle), per generation, one line per arm (mean
    over seeds, band: 95 % CI (t)); against the family's best founder (dashed), its specialists' mean
    (dotted) and the bare base (grey); baselines as marks right of the last generation."""
    use_style()
    fams = list(families)
    pts, refs = sr.skill_retention(df, fams)
    summ = dg.ci_over_seeds(pts, ["arm", "family", "statistic", "generation"], "value")
    rsum = dg.ci_over_seeds(refs, ["family", "reference"], "value")
    arms = [a for a in dg.arms_in(pts) if not dg.is_baseline(a)]
    fig, axes = plt.subplots(2, len(fams), figsize=(2.7 * len(fams) + 1.6, 5.2), sharex=True, sharey=True,
                             squeeze=False)
    last = int(summ.loc[summ["arm"].isin(arms), "generation"].max())
    handles = []
    for row, (stat, what) in enumerate((("mean", "population mean"), ("best", "best agent (oracle)"))):
        for ax, f in zip(axes[row], fams):
            s = summ[(summ["family"] == f) & (summ["statistic"] == stat)]
            for a in arms:
                x = s[s["arm"] == a]
                if len(x):
                    mean_curve(ax, x, "generation", a, band_alpha=0.12, lw=1.2, ms=3)
            for ref, (col, ls) in REFERENCE_LOOK.items():
                r = rsum[(rsum["family"] == f) & (rsum["reference"] == ref)]
                if len(r):
                    ax.axhline(float(r["mean"].iloc[0]), color=col, ls=ls, lw=1.0, zorder=1, label=ref)
            hb = _baseline_marks(ax, s[s["arm"].map(dg.is_baseline)], last)
            handles = handles or hb
            ax.set_title(f"{f}, {what}", fontsize=8)
            ax.set_ylim(-0.03, 1.03)
            _generation_axis(ax, s["generation"])
        axes[row][0].set_ylabel(f"novel-region accuracy\n{what}", fontsize=8)
    for ax in axes[0]:
        ax.set_xlabel("")
    h, lab = axes[0][0].get_legend_handles_labels()
    axes[0][-1].legend(h + handles, lab + [x.get_label() for x in handles], fontsize=6, loc="upper left",
                       bbox_to_anchor=(1.02, 1.0), frameon=False)
    fig.suptitle(f"Skill on the novel region (never pre-trained), {_n_text(summ)}; band: {T_CI}; "
                 "lines: best founder (dashed), specialists' mean (dotted), base (grey)", fontsize=8)
    fig.tight_layout()
    return fig


# ----------------------------------------------------------------------------- S3i skill loss


def draw_skill_loss(df: pd.DataFrame, families):
    """S3i. Where a bred child's novel-region skill goes: one row per step (merge − parents' mean,
    merge − the better parent, child − merge), one column per family and all families pooled; in each,
    one column per arm: dots = seeds (mean over children and generations), marker = mean over seeds
    with its 95 % CI (sign-flip inversion; none with < 6 seeds) and the exact p. ``no_sex`` copies a
    parent, so its merge − parent is 0 by construction."""
    use_style()
    cols = list(families) + [sr.ALL]
    pts, summ = sr.skill_loss(df, families)
    arms = [a for a in dg.arms_in(pts) if not dg.is_baseline(a)]
    fig, axes = plt.subplots(len(sr.STEPS), len(cols), figsize=(2.5 * len(cols) + 0.6, 2.4 * len(sr.STEPS) + 0.8),
                             sharey="row", squeeze=False)
    for i, step in enumerate(sr.STEPS):
        for j, f in enumerate(cols):
            ax = axes[i][j]
            p = pts.loc[pts["family"] == f, ["arm", "seed", step]].rename(columns={step: "diff"})
            p = p.groupby(["arm", "seed"], as_index=False)["diff"].mean()
            s = summ[(summ["family"] == f) & (summ["step"] == step)]
            paired_difference_panel(ax, p, s, group="arm", order=arms, reference="x", ylabel=step)
            ax.set_ylabel(f"{step}\n(test accuracy)" if j == 0 else "", fontsize=8)
            ax.set_title(f if i == 0 else "", fontsize=8, loc="left", pad=18)
            if i < len(sr.STEPS) - 1:
                ax.tick_params(labelbottom=False)
        _around_zero(axes[i][0])  # once the whole row (one shared y-axis) is drawn
    fig.suptitle("Where skill on the novel region is lost, per bred child (elites excluded): dots: seeds (mean over "
                 f"children); marker: {ci_note(summ)} (over seeds); above: exact sign-flip p, n seeds",
                 fontsize=8)
    fig.tight_layout()
    return fig


# ----------------------------------------------------------------------------- S3j generalists


def draw_generalists(df: pd.DataFrame, families):
    """S3j. Share of the population beating the bare base (strictly) on (a) at least two families
    and (b) at least one, per generation and arm (mean over seeds, band: 95 % CI (t)); baselines (one
    model each: 0 or 1 per seed) as marks right of the last generation."""
    use_style()
    pts = sr.generalists(df, families, min_families=(2, 1))
    summ = dg.ci_over_seeds(pts, ["arm", "k", "generation"], "share")
    arms = [a for a in dg.arms_in(pts) if not dg.is_baseline(a)]
    last = int(summ.loc[summ["arm"].isin(arms), "generation"].max())
    fig, axes = plt.subplots(1, 2, figsize=(8.6, 3.2), sharey=True)
    handles = []
    for ax, (k, what) in zip(axes, ((2, "(a) ≥ 2 families"), (1, "(b) ≥ 1 family"))):
        s = summ[summ["k"] == k]
        for a in arms:
            x = s[s["arm"] == a]
            if len(x):
                mean_curve(ax, x, "generation", a, band_alpha=0.12, lw=1.2, ms=3)
        handles = _baseline_marks(ax, s[s["arm"].map(dg.is_baseline)], last) or handles
        _generation_axis(ax, s["generation"])
        ax.set_ylim(-0.05, 1.05)
        ax.set_title(f"{what} above the bare base; {_n_text(s)}\nband: {T_CI}", fontsize=8, loc="left")
    axes[0].set_ylabel("share of agents above the base")
    h, lab = axes[1].get_legend_handles_labels()
    axes[1].legend(h + handles, lab + [x.get_label() for x in handles], fontsize=6, loc="upper left",
                   bbox_to_anchor=(1.02, 1.0), frameon=False)
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
                       for f, mk in zip(families, FAMILY_MARKERS)], fontsize=6, ncol=len(families),
              loc="lower right", bbox_to_anchor=(1.0, 1.0), frameon=False)


def draw_comparison(df: pd.DataFrame, families, walls: pd.DataFrame | None = None):
    """Fig. 3f. At the last generation, every method minus ``full`` (population mean) on the same
    seed: (a) overall test accuracy — the society arms, each arm's val-selected agent, the field's merge
    methods (baselines), the founders' mean and the bare base; dots: seeds, marker: mean difference,
    95 % CI (sign-flip inversion; none with < 6 seeds), exact p; (b) the same per family; (c) each
    method's cost, mean over seeds: LoRA training steps, val evaluations and wall seconds."""
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
                            look={m: _look(m) for m in order})
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
    cost = over.set_index("method").reindex(methods)
    y = np.arange(len(methods))
    for k, (c, what) in enumerate((("train_steps", "(c) cost:\nLoRA training steps"),
                                   ("val_evals", "\nval evaluations"), ("wall_s", "\nwall seconds"))):
        ax = fig.add_subplot(right[k])
        v = cost[c].to_numpy(float)
        ax.barh(y, np.nan_to_num(v), color=[arm_style(_look(m))["color"] for m in methods], height=0.7)
        for yi, vi in zip(y, v):
            ax.text(0, yi, "  —" if not np.isfinite(vi) else f" {vi:.3g}", va="center", fontsize=5.5,
                    color="0.35" if not np.isfinite(vi) else "black")
        ax.set_yticks(y, methods if k == 0 else [""] * len(methods), fontsize=6.5)
        ax.invert_yaxis()
        ax.tick_params(axis="x", labelsize=6)
        ax.set_title(what, fontsize=7, loc="left")
        ax.grid(axis="y", visible=False)
    fig.suptitle("The society against the field's merge methods: each minus full (population mean) on the "
                 "same seed, last generation; cost: mean over seeds (—: a reference, not a method)", fontsize=8.5, y=0.995)
    return fig


# ----------------------------------------------------------------------------- registry


def _with(metrics, fn, *, walls: bool = False):
    """``draw(data)`` for a :class:`lib.plots.style.Panel`: ``fn(rows, families[, walls])``, or None
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
    base = [a for a in dg.arms_in(data["rows"]) if dg.is_baseline(a)]
    return ("The society against the field's merge methods, last generation: every method minus full's "
            "population mean on the same seed — the arms, each arm's val-selected agent (what a user would deploy), "
            f"the baselines ({', '.join(base) if base else 'none in these data'}), the founders' mean and the bare "
            f"base; (a) overall, (b) per family (dots: seeds; mean, {SIGN_FLIP_CI}, none with < 6 seeds; exact "
            "sign-flip p); (c) cost per method: LoRA training steps, val evaluations, wall seconds (mean over seeds).")


PANELS = [
    Panel("fig3f_society_vs_merge_methods", _with(["test_overall"], draw_comparison, walls=True), _comparison_caption,
          source="comparison"),
    Panel("S3h_society_skill_retention",
          lambda data: _with(_novel(data), draw_skill_retention)(data),
          "Skill retention on each family's novel region (never pre-trained): population mean (top) and best agent "
          f"(bottom, an oracle pick) per generation and arm, mean over seeds with its {T_CI}; lines: the family's "
          "best founder, its specialists' mean and the bare base; baselines as marks at the last generation."),
    Panel("S3i_society_skill_loss",
          lambda data: _with(_novel(data) + [f"source_{m}" for m in _novel(data)], draw_skill_loss)(data),
          "Where novel-region skill is lost, per bred child (elites excluded): merge − parents' mean, merge − the "
          "better parent and child − merge (distillation), per family and pooled, per arm; dots: seeds; mean, "
          f"{SIGN_FLIP_CI} (none with < 6 seeds), exact p. no_sex copies a parent: its merge − parent is 0."),
    Panel("S3j_society_generalists", _with(["base_test_overall"], draw_generalists),
          "Generalists: share of the population strictly above the bare base on at least two families (a) and at "
          f"least one (b), per generation and arm, mean over seeds with its {T_CI}; baselines as marks."),
]


def comparison_rows(rows: pd.DataFrame, families, walls: pd.DataFrame | None = None) -> pd.DataFrame:
    """:func:`lib.analysis.society_results.comparison`'s summary as a table: ``metric, method,
    reference, n, accuracy, mean`` (method − full), ``lo, hi`` (95 % CI, sign-flip inversion), ``p``
    (text, :func:`lib.analysis.stats.format_p`; n/a for full itself and with one seed) and the cost
    columns ``train_steps, val_evals, wall_s``."""
    _, summ = sr.comparison(rows, families, walls)
    out = summ.assign(n=summ["n"].astype("Int64"), p=[format_p(float(p)) for p in summ["p"]])
    return out[["metric", "method", "reference", "n", "accuracy", "mean", "lo", "hi", "p", "train_steps",
                "val_evals", "wall_s"]]
