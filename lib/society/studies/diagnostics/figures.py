"""SI panels S3c–S3f: diagnostics of the society's operators (:mod:`lib.society.studies.diagnostics.comparisons`),
and the elitism comparison :func:`draw_elitism` that the society study's S3g draws
(:mod:`lib.society.studies.study.figures`).

Declared in :data:`PANELS`, which :mod:`lib.society.studies.verdict.figures` appends to its own (``draw_all`` saves
them with Fig. 3 / S3, notebook 05 lists them); this module never imports :mod:`lib.society.studies.verdict.figures`.
Each panel reduces a statistic to one number per seed, then shows the mean over seeds with its 95 %
CI (t) (dots: seeds); a paired difference carries its 95 % CI (sign-flip inversion), unbounded (not
drawn) with fewer than 6 seeds. A panel whose data is absent (rows written before the loop recorded
its diagnostics — no ``val_half_a``, ``base_test_*``, ``merge_*``, ``source_*`` rows) is skipped (``draw`` returns None), so older data keeps its panel set. The task
families come from the config (``data["families"]``), never from the rows.
"""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.ticker import MaxNLocator

from lib.society.arms import REFERENCE, is_baseline
from lib.society.studies import frames
from lib.society.studies.diagnostics import comparisons as dg
from matplotlib.lines import Line2D

from lib.core.stats import BOUNDED_T_CI, T_CI, mean_ci_table
from lib import style
from lib.society import arms
from lib.style import (REFERENCE_GREY, DiffLayout, Panel, arm_style, dots_with_mean, finish_panel_grid, interval_bar, mean_curve,
                    paired_difference_panel, panel_grid, use_style, within_bounds)

style.register_looks(arms.LOOKS)  # the society's arms draw in the looks of their table


def _n_text(summ: pd.DataFrame) -> str:
    n = sorted(set(int(v) for v in summ["n"])) or [0]
    return (f"n = {n[0]} seed" + ("s" if n[0] != 1 else "")) if len(n) == 1 else f"n = {n[0]}–{n[-1]} seeds"


def _arms(df: pd.DataFrame) -> list[str]:
    return [a for a in frames.arms_in(df) if not is_baseline(a)]


def _arm_points(ax, pts: pd.DataFrame, summ: pd.DataFrame, value: str, order, *, mean="mean", lo="lo", hi="hi"):
    """One column per arm: a small dot per seed (per-seed mean of ``value``), the mean over seeds and
    its 95 % CI (t) (error bar where it exists: ≥ 2 seeds)."""
    per_seed = pts.groupby(["arm", "seed"], as_index=False)[value].mean()
    for i, a in enumerate(order):
        r = summ[summ["arm"] == a].iloc[0]
        dots_with_mean(ax, i, per_seed.loc[per_seed["arm"] == a, value], a, (r[mean], r[lo], r[hi]))
    ax.set_xticks(range(len(order)), order, rotation=30 if len(order) > 3 else 0,
                  ha="right" if len(order) > 3 else "center", fontsize=7)
    ax.set_xlim(-0.6, len(order) - 0.4)


def _gen_lines(ax, summ: pd.DataFrame, order, ylabel: str, title: str, zero: bool = True):
    """Mean over seeds per generation, one line per arm in its style; band: 95 % CI (t);
    ``zero``: a line at 0 (for differences)."""
    for a in order:
        x = summ[summ["arm"] == a]
        if len(x):
            mean_curve(ax, x, "generation", a, band_alpha=0.12, lw=1.2)
    if zero:
        ax.axhline(0.0, color=REFERENCE_GREY, lw=0.8, zorder=0)
    ax.set_xlabel("generation")
    gens = sorted(set(int(g) for g in summ["generation"]))
    if len(gens) <= 2:  # a locator would invent fractional generations around one or two points
        ax.set_xticks(gens)
        ax.set_xlim(min(gens) - 0.5, max(gens) + 0.5) if gens else None
    else:
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=8)


# ----------------------------------------------------------------------------- S3c founders


def draw_founders(df: pd.DataFrame, families):
    """S3c. (a) Generation-0 test accuracy, agent × family (mean over seeds), the bare base on top,
    each founder labelled with its specialism (``families``: the config's, in its order); (b) per
    family, all its specialists minus the other founders on that family (dots: seeds; mean, 95 % CI
    (t)), with the preconditions' thresholds (0.10 each, 0.15 mean; configs/society/cpu.yaml)."""
    use_style()
    fams = list(families)
    mat = dg.founders_matrix(df, fams)
    gaps_pts = dg.specialist_gaps(df, fams, per_seed=True)
    gaps = dg.specialist_gaps(df, fams)
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(7.8, 0.32 * len(mat) + 2.0),
                                 gridspec_kw={"width_ratios": [1.1, 1]})
    vals = mat[fams].to_numpy(float)
    im = a1.imshow(vals, cmap="viridis", vmin=0, vmax=1, aspect="auto")
    for (i, j), v in np.ndenumerate(vals):
        if np.isfinite(v):
            a1.text(j, i, f"{v:.2f}", ha="center", va="center", fontsize=6.5,
                    color="black" if v > 0.55 else "white")
    labels = ["base" if a < 0 else f"{a} ({r})" for a, r in zip(mat.index, mat["role"])]
    a1.set_yticks(range(len(mat)), labels, fontsize=7)
    a1.set_xticks(range(len(fams)), fams, fontsize=7)
    a1.grid(False)
    for i, a in enumerate(mat.index):  # outline each founder's own family
        if a >= 0:
            j = fams.index(mat.loc[a, "role"])
            a1.add_patch(plt.Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, ec="white", lw=1.6))
    if (mat.index < 0).any():
        a1.axhline(0.5, color="white", lw=2.5)
    fig.colorbar(im, ax=a1, fraction=0.046, pad=0.03).set_label("test accuracy", fontsize=7)
    n = int(mat["n"].max()) if len(mat) else 0
    a1.set_title(f"(a) generation 0, arm {dg.founders_arm(df)!r}, mean of {n} seed{'s' if n != 1 else ''};"
                 "\nframed: the founder's own family", fontsize=7, loc="left")
    order = fams + ["mean"]
    st = arm_style(REFERENCE)
    for i, f in enumerate(order):
        d = gaps_pts.loc[gaps_pts["family"] == f, "gap"].to_numpy()
        jit = np.linspace(-0.12, 0.12, len(d)) if len(d) > 1 else np.zeros(len(d))
        a2.scatter(i - 0.12 + jit, d, s=11, color=st["color"], alpha=0.55, lw=0, zorder=2)
        r = gaps[gaps["family"] == f]
        if r.empty:
            continue
        r = r.iloc[0]
        interval_bar(a2, i + 0.14, r["lo"], r["hi"], "black")
        a2.plot([i + 0.14], [r["mean"]], marker="D", ms=5, color="black", ls="", zorder=4)
        thr = dg.GAP_MEAN if f == "mean" else dg.GAP_EACH
        a2.plot([i - 0.4, i + 0.4], [thr, thr], color=REFERENCE_GREY, ls="--", lw=0.9, zorder=1)
    a2.axhline(0.0, color=REFERENCE_GREY, lw=0.8, zorder=0)
    a2.set_xticks(range(len(order)), order, fontsize=7)
    a2.set_xlim(-0.6, len(order) - 0.4)
    a2.set_ylabel("specialists − other founders\n(test accuracy on the family)")
    a2.set_title(f"(b) specialist gap; {_n_text(gaps)}; dashed: threshold\n"
                 + (f"dots: seeds; mean, {T_CI}" if len(gaps) and np.isfinite(gaps["lo"]).all()
                    else "dots: seeds; mean (no interval with one seed)"), fontsize=7, loc="left")
    fig.tight_layout()
    return fig


# ----------------------------------------------------------------------------- S3d selection


def draw_selection_differential(df: pd.DataFrame):
    """S3d. Selected minus not-selected agents' mean accuracy per generation, on val (the grounded
    signal selection sees; solid, filled) and on test (data it never sees; dashed, hollow), over the
    breeding generations (those whose selected agents have children: not the last): small multiples,
    one panel per arm, mean over seeds, band: 95 % CI (t)."""
    use_style()
    pts, _ = dg.selection_differential(df)
    per_gen = frames.ci_over_seeds(pts, ["arm", "metric", "generation"], "diff")
    order = _arms(pts)
    fig, axes = panel_grid(len(order), width=2.35, height=2.0, pad=0.7)
    for ax, a in zip(axes.flat, order):
        mine = per_gen[per_gen["arm"] == a]
        for m, extra in (("val", {}), ("test", {"ls": "--", "mfc": "white"})):
            x = mine[mine["metric"] == m]
            if len(x):
                mean_curve(ax, x, "generation", a, band_alpha=0.15, lw=1.2, ms=3, **extra)
        ax.axhline(0.0, color=REFERENCE_GREY, lw=0.8, zorder=0)
        ax.set_title(f"{a} (n = {int(mine['n'].max()) if len(mine) else 0})", fontsize=8)
        ax.set_xticks(sorted(pts["generation"].unique()))  # the breeding generations (one at smoke scale)
        ax.yaxis.set_major_locator(MaxNLocator(nbins=5))
        ax.tick_params(labelsize=7)
    finish_panel_grid(axes, len(order), "generation")
    for ax in axes[:, 0]:
        ax.set_ylabel("selected − not selected", fontsize=8)
    key = [Line2D([], [], color="0.3", lw=1.2, marker="o", ms=3, label="val (seen by selection)"),
           Line2D([], [], color="0.3", lw=1.2, ls="--", marker="o", mfc="white", ms=3, label="test (never seen)")]
    spare = [ax for k, ax in enumerate(axes.flat) if k >= len(order)]
    (spare[0] if spare else axes.flat[0]).legend(handles=key, fontsize=7, loc="center" if spare else "best")
    fig.suptitle(f"Selection differential per breeding generation: mean over seeds (n per panel), band: {T_CI}",
                 fontsize=8.5)
    fig.tight_layout()
    return fig


# ----------------------------------------------------------------------------- S3e recombination


def draw_recombination_gain(df: pd.DataFrame):
    """S3e. Sexual arms: (a) the screened merge's val accuracy minus its parents' mean val accuracy;
    (b) the share of children whose winning merge is candidate 0, the plain average; (c) the share
    whose screening tied (more than one candidate at the top score: the winner was a seeded draw),
    when ``merge_tied`` is recorded. Dots: seeds (mean over children and generations); marker: mean
    over seeds, 95 % CI (t)."""
    use_style()
    pts, summ = dg.recombination_gain(df)
    order = _arms(pts)
    ties = pts["tied"].notna().any()
    fig, axes = plt.subplots(1, 3 if ties else 2, figsize=(10.8 if ties else 7.4, 3.1))
    a1, a2 = axes[0], axes[1]
    shares = within_bounds(summ, columns=("plain_lo", "plain_hi", "tie_lo", "tie_hi"))
    _arm_points(a1, pts, summ, "gain", order, mean="gain", lo="gain_lo", hi="gain_hi")
    a1.axhline(0.0, color=REFERENCE_GREY, lw=0.8, zorder=0)
    a1.set_ylabel("winner val − parents' mean val")
    a1.set_title(f"(a) recombination gain; {_n_text(summ)}\ndots: seeds; marker: mean, {T_CI}", fontsize=8, loc="left")
    _arm_points(a2, pts, shares, "plain", order, mean="plain_share", lo="plain_lo", hi="plain_hi")
    a2.set_ylim(-0.05, 1.05)
    a2.set_ylabel("share won by the plain average")
    a2.set_title(f"(b) candidate 0 (plain average) wins; {_n_text(summ)}\ndots: seeds; marker: mean, {BOUNDED_T_CI}",
                 fontsize=8, loc="left")
    if ties:
        _arm_points(axes[2], pts.dropna(subset=["tied"]), shares, "tied", order,
                    mean="tie_share", lo="tie_lo", hi="tie_hi")
        axes[2].set_ylim(-0.05, 1.05)
        axes[2].set_ylabel("share of tied screenings")
        axes[2].set_title(f"(c) screening tied (> 1 candidate at the top); {_n_text(summ)}\ndots: seeds; marker: mean, "
                          f"{BOUNDED_T_CI}", fontsize=8, loc="left")
    fig.tight_layout()
    return fig


# ----------------------------------------------------------------------------- S3f inheritance


def draw_inheritance_fidelity(df: pd.DataFrame):
    """S3f. Mutation load: a child's test accuracy at generation t+1 minus its source's at t (the
    winning merge or the copied parent; elites excluded). (a) per generation, one line per arm;
    (b) per arm over all generations (dots: seeds). Mean over seeds, 95 % CI (t)."""
    use_style()
    pts, per_gen = dg.inheritance_fidelity(df)
    order = _arms(pts)
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(7.8, 3.1), gridspec_kw={"width_ratios": [1.1, 1]})
    _gen_lines(a1, per_gen, order, "child − source (test accuracy)",
               f"(a) per generation; {_n_text(per_gen)}; band: {T_CI}")
    a1.legend(fontsize=6.2)
    summ = frames.ci_over_seeds(pts, ["arm"], "diff")
    _arm_points(a2, pts, summ, "diff", order)
    a2.axhline(0.0, color=REFERENCE_GREY, lw=0.8, zorder=0)
    a2.set_ylabel("child − source, all generations")
    a2.set_title(f"(b) per arm, {_n_text(summ)}; dots: seeds;\nmarker: mean, {T_CI}", fontsize=8, loc="left")
    fig.tight_layout()
    return fig


# ----------------------------------------------------------------------------- S3g elitism


def draw_elitism(df: pd.DataFrame):
    """S3g. Elitism 1 against 0 for each arm run both ways (``X@e1`` vs ``X``): (a) population test
    accuracy per generation, ``X`` drawn on the seeds of ``X@e1`` only (the same founders and seeds);
    (b) last generation, X@e1 − X on the same seed, population mean; (c) the same for the top-scoring
    agent (the one the loop keeps). Dots: seeds; mean, 95 % CI (sign-flip inversion; none with fewer
    than 6 seeds), paired p."""
    use_style()
    pairs = dg.elitism_pairs(df["arm"])
    arms = [a for a in _arms(df) if a in pairs or a in pairs.values()]
    pts, summ = dg.elitism_comparison(df)
    fig, (a1, a2, a3) = plt.subplots(1, 3, figsize=(9.4, 4.0), gridspec_kw={"width_ratios": [1.2, 1, 1]})
    d = frames.population_metric(df[df["arm"].isin(arms)], "test_overall")
    seeds_of = {v: set(d.loc[d["arm"] == v, "seed"]) for v in pairs}
    keep = pd.Series(True, index=d.index)
    for var, ref in pairs.items():  # the reference on its variant's seeds
        keep &= ~((d["arm"] == ref) & ~d["seed"].isin(seeds_of[var]))
    t = mean_ci_table(d[keep], ["arm", "generation"])
    _gen_lines(a1, t, arms, "test accuracy (population mean)",
               f"(a) per generation; {_n_text(t)};\nX on X@e1's seeds; band: {T_CI}", zero=False)
    a1.title.set_fontsize(ELITISM_PT)
    a1.legend(fontsize=ELITISM_PT)
    order = [a for a in arms if a in pairs]
    for ax, stat, what in ((a2, "mean", "population mean"), (a3, "top_scored", "top-scoring agent")):
        p, s = pts[pts["statistic"] == stat], summ[summ["statistic"] == stat]
        paired_difference_panel(ax, p, s, group="arm", order=order, reference="X (elitism 0)",
                                ylabel=f"X@e1: test acc., {what}",
                                layout=DiffLayout(fontsize=ELITISM_PT, xlabel="X@e1, paired with X"))
        ax.set_title(f"({'b' if stat == 'mean' else 'c'}) last generation; "
                     + ax.get_title(loc="left").replace("; ", ";\n", 1), fontsize=ELITISM_PT, loc="left",
                     pad=21 * ELITISM_PT / 7)
    fig.tight_layout()
    return fig


ELITISM_PT = 8    # S3g's notes, legend and columns: 7 pt or more where docs/study.md shows it (~830 px for 9.2 in)


# ----------------------------------------------------------------------------- registry


def _when(metrics, fn, *, families: bool = False):
    """``draw(data)`` for a :class:`lib.style.Panel`: ``fn(rows)`` (``fn(rows, families)`` with
    ``families``), or None unless every one of ``metrics`` is in the rows."""
    def draw(data):
        rows = data["rows"]
        if not set(metrics) <= set(rows["metric"]):
            return None
        return fn(rows, data["families"]) if families else fn(rows)
    return draw


PANELS = [
    Panel("S3c_society_founders", _when(["base_test_overall"], draw_founders, families=True),
          "Founders at generation 0: (a) test accuracy per agent and family (mean over seeds), the bare base "
          "on top, each founder's own family framed; (b) all specialists of a family minus the other founders on "
          f"it, per seed, mean and {T_CI}, with the thresholds 0.10 (each) and 0.15 (mean)."),
    Panel("S3d_society_selection_differential", _when(["val_half_a", "test_overall"], draw_selection_differential),
          "Selection differential: mean accuracy of the selected minus the not-selected agents, per breeding "
          "generation (its selected agents have children: not the last), one panel per arm, on val (seen by "
          f"selection; solid) and on test (never seen; dashed); mean over seeds, band: {T_CI}."),
    Panel("S3e_society_recombination_gain", _when(["merge_gain_val"], draw_recombination_gain),
          "Recombination gain of the sexual arms: (a) the screened merge's val accuracy minus its parents' "
          "mean; (b) share of children whose merge is the plain average (candidate 0); (c) share whose screening "
          "tied (more than one candidate at the top score; drawn when recorded). Dots: seeds; mean, (a) "
          f"{T_CI}, (b, c) {BOUNDED_T_CI}."),
    Panel("S3f_society_inheritance_fidelity", _when(["source_test_overall"], draw_inheritance_fidelity),
          "Inheritance fidelity (mutation load): a child's test accuracy at t+1 minus its source's at t (elites "
          f"excluded), (a) per generation and arm, (b) per arm; mean over seeds, {T_CI}."),
]
