"""The society study's panels (``data/<scale>/society_study/``): does keeping the founders' skill make the
society better, and which mechanism keeps it? Plus the study's grounding knob (S3b) and elitism (S3g).

- ``fig3g_study_skill_vs_accuracy`` — per family, each society arm's novel-region skill (x: the
  population's accuracy on the family's *novel* region, which only its founders learned) against its
  population test accuracy (y), at generation 1 (open) and at the last generation (filled), joined by
  an arrow; the baselines (one model each, ×), the founders (generation 0, ★) and the bare base (●), each at its
  value; the points at exactly 0 side by side in a grey column left of the family's symlog axis. Means over each
  arm's seeds.
- ``S3b_study_g_sweep`` — :func:`draw_g_sweep` on the study's ``full@g<g>`` arms, ``full`` as g = 0.5 (the
  same seeds; :func:`lib.society.data.grounding_sweep` names it).
- ``S3g_study_elitism`` — :func:`lib.society.studies.diagnostics.figures.draw_elitism` on ``full@e1`` /
  ``no_grounding@e1`` and their references.
- ``S3n_study_skill_retention``, ``S3o_study_skill_loss`` — the society's S3h and S3i (letters of their own: one
  drawing per panel letter)
  (:func:`lib.society.studies.verdict.panels.draw_skill_retention`,
  :func:`~lib.society.studies.verdict.panels.draw_skill_loss` at the first bred generation) on the study's designs
  (:func:`design_rows`: every arm but the knob and elitism variants, which have their own panels) and its baselines.

Every arm is drawn in its fixed look (:func:`lib.style.arm_style`), the same as in every other figure.
"""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from lib.society.arms import BASELINE_PREFIX, REFERENCE, is_baseline
from lib.society.data import STUDY, config_of, files_of, grounding_sweep, society_rows
from lib.society.studies.diagnostics.comparisons import elitism_pairs
from lib.society.studies.diagnostics.figures import draw_elitism
from lib.society.studies.frames import agents_wide, last_generation
from lib.society.studies.study.comparisons import primary_table
from lib.society.studies.verdict.figures import last_generation_table
from lib.society.studies.verdict.panels import draw_skill_loss, draw_skill_retention
from lib.core.stats import BOUNDED_T_CI, mean_ci_table
from lib import style
from lib.society import arms
from lib.style import Panel, arm_style, interval_bar, save_rows_panels, use_style

style.register_looks(arms.LOOKS)  # the society's arms draw in the looks of their table

EXPERIMENT = STUDY
NOTEBOOK = "03_society_arms"


def load_data(scale: str) -> dict:
    """``{"rows", "families", "g", "files", "progress", "configs"}`` of the study at ``scale``: its rows
    (:func:`lib.society.data.society_rows`, the runs that reached their last generation only), its
    config's families and grounding weight ``g``, and what they were read from.
    Raises ``FileNotFoundError`` naming the command that makes them."""
    rows = society_rows(scale, STUDY, finished=True, order="name")  # a run in progress is not drawn
    cfg = config_of(STUDY, scale)
    return {"rows": rows, "families": list(cfg["families"]), "g": float(cfg["g"]), **files_of(scale, STUDY)}


def skill_points(rows: pd.DataFrame, families) -> pd.DataFrame:
    """Per (arm, generation) with generation ∈ {0, 1, last}: ``n`` seeds, ``overall`` (population
    test accuracy) and ``<family>`` (novel-region accuracy), means over seeds of population means."""
    cols = ["test_overall"] + [f"test_{f}_novel" for f in families]
    w = agents_wide(rows, cols)
    last = last_generation(w)
    pick = pd.concat([w[w["generation"].isin([0, 1])], last]).drop_duplicates(["arm", "seed", "generation", "agent"])
    pick = pick.assign(when=np.where(pick["generation"] == 0, "founders",
                                     np.where(pick.index.isin(last.index), "last", "generation 1")))
    per_seed = pick.groupby(["arm", "when", "seed"])[cols].mean().reset_index()
    out = per_seed.groupby(["arm", "when"])[cols].mean()
    out["n"] = per_seed.groupby(["arm", "when"])["seed"].nunique()
    out = out.rename(columns={"test_overall": "overall", **{f"test_{f}_novel": f for f in families}})
    return out.reset_index()


def is_design(arm: str) -> bool:
    """A design arm of the study (or a baseline): not a grounding-knob (``@g``) or elitism (``@e``)
    variant, which S3b and S3g draw."""
    return "@g" not in arm and "@e" not in arm


def design_rows(rows: pd.DataFrame) -> pd.DataFrame:
    """The rows of the study's designs and baselines (:func:`is_design`)."""
    return rows[rows["arm"].map(is_design)]


def _y_range(pts: pd.DataFrame, base: pd.DataFrame) -> tuple[float, float]:
    """The y limits of Fig. 3g: every drawn accuracy with a 4 % margin (set before the markers are placed)."""
    ys = list(pts["overall"].astype(float))
    b = base[base["metric"] == "base_test_overall"]["value"]
    ys += [float(b.mean())] if len(b) else []
    lo, hi = min(ys), max(ys)
    pad = 0.04 * (hi - lo or 1.0)
    return lo - pad, hi + pad


def arms_label(arm: str) -> str:
    """An arm's legend name, as every figure writes it (``baseline_dare_ties`` → ``DARE-TIES``)."""
    return arms.label(arm)


MARKER_S = 30          # a marker's area (pt²) in Fig. 3g
LEGEND_PT = 9         # Fig. 3g's legend and title: 7 pt or more where the README shows it (830 px for ~10.4 in)
ZERO_LANE_IN = 0.1    # the width of one lane of Fig. 3g's column at 0 (inches): a marker and a gap


def _lanes(ys, span: float, axes_in: float, s: float = MARKER_S) -> list[int]:
    """A lane for each of the values ``ys`` drawn at one x: the first in which it lies no nearer than a marker's
    height (``s`` pt², on an axes ``axes_in`` inches tall showing ``span`` of y) to a value already there."""
    tall = (np.sqrt(s) + 1.5) / 72 / axes_in * span
    lanes: list[list[float]] = []
    out = []
    for y in ys:
        k = next((i for i, ln in enumerate(lanes) if all(abs(y - v) >= tall for v in ln)), len(lanes))
        lanes += [[]] if k == len(lanes) else []
        lanes[k].append(y)
        out.append(k)
    return out


def _arrow(fig, a, b, colour) -> None:
    """An arrow from the point ``a`` to ``b``, each ``(axes, (x, y))``; across two axes where they differ."""
    from matplotlib.patches import ConnectionPatch

    (ax0, p0), (ax1, p1) = a, b
    kw = {"arrowstyle": "->", "color": colour, "lw": 0.9, "alpha": 0.7}
    if ax0 is ax1:
        ax0.annotate("", xy=p1, xytext=p0, arrowprops=kw)
    else:
        fig.add_artist(ConnectionPatch(xyA=p0, coordsA=ax0.transData, xyB=p1, coordsB=ax1.transData, **kw))


def draw_skill_vs_accuracy(rows: pd.DataFrame, families):
    """Fig. 3g: per family, each design's generation 1 (open) and last generation (filled), joined by an arrow, with
    the baselines, the founders and the bare base, each drawn at its value: x on a symmetric-log axis, except the
    points at exactly 0 (none of the family's novel skill), which a narrow column left of the axis holds side by side
    in lanes (a lane is no value; on the axis they lay on one another, and a point set beside them read as a skill)."""
    use_style()
    pts = skill_points(rows, families)
    # the designs (the knob and elitism variants have their own panels), each in its fixed look
    arms = [a for a in dict.fromkeys(rows["arm"]) if not is_baseline(a) and is_design(a)]
    baselines = [a for a in dict.fromkeys(rows["arm"]) if is_baseline(a)]
    base = rows[(rows["agent"] == -1) & (rows["generation"] == 0)]
    founders = pts[(pts["when"] == "founders")].groupby("when")[["overall", *families]].mean()
    ylo, yhi = _y_range(pts, base)
    marks = {fam: _marks(pts, arms, baselines, founders, base, fam) for fam in families}
    ncol = 4
    fig, outer, lanes, n_lanes, main_in = _skill_figure(marks, families, ylo, yhi, ncol)
    first = None
    axes = []
    for i, fam in enumerate(families):
        zero, ax = _skill_panel(fig, outer[i], first, n_lanes, main_in, fam, i)
        first = first or zero
        axes.append((zero, ax))
        _skill_marks(fig, zero, ax, marks[fam], lanes[fam])
    first.set_ylim(ylo, yhi)
    first.set_ylabel("test accuracy, all families (population)")
    _skill_legend(fig, axes[0], marks[families[0]], ncol)
    return fig


def _skill_figure(marks: dict, families, ylo: float, yhi: float, ncol: int):
    """Fig. 3g's figure and outer grid, sized for its panels, zero lanes and legend: ``(fig, outer, lanes, n_lanes,
    main_in)``."""
    rows_ = -(-sum(1 for ms in marks.values() for m in ms if m["kw"].get("label")) // len(families) // ncol)
    axes_in, top_in, bottom_in = 3.9, 0.95, 0.62 + 0.19 * rows_ + 0.1  # the legend below the axes' labels
    height = axes_in + top_in + bottom_in
    lanes = {fam: _lanes([m["y"] for m in ms if m["x"] <= 0], yhi - ylo, axes_in) for fam, ms in marks.items()}
    n_lanes = max([1] + [max(k) + 1 for k in lanes.values() if k])
    main_in, left_in, right_in = 2.3, 0.65, 0.1
    width = len(families) * (main_in + n_lanes * ZERO_LANE_IN) + (len(families) - 1) * 0.3 + left_in + right_in
    fig = plt.figure(figsize=(width, height))
    outer = fig.add_gridspec(1, len(families), left=left_in / width, right=1 - right_in / width,
                             wspace=0.3 / (main_in + n_lanes * ZERO_LANE_IN), top=1 - top_in / height,
                             bottom=bottom_in / height)
    return fig, outer, lanes, n_lanes, main_in


def _skill_panel(fig, cell, first, n_lanes: int, main_in: float, fam: str, i: int):
    """One family's pair of Fig. 3g axes in grid cell ``cell``: the grey zero column and the symlog main axis."""
    inner = cell.subgridspec(1, 2, width_ratios=[n_lanes * ZERO_LANE_IN, main_in], wspace=0.04)
    zero = fig.add_subplot(inner[0], sharey=first)
    ax = fig.add_subplot(inner[1], sharey=zero)
    # most arms keep almost none of a family's novel skill: a symmetric-log axis (linear below 0.01) spreads
    # the points that a linear axis piles near 0
    ax.set_xscale("symlog", linthresh=0.01, linscale=0.6)
    ax.set_xlim(0, 1.05)
    ax.set_xticks([0.01, 0.03, 0.1, 0.3, 1.0], ["0.01", "0.03", "0.1", "0.3", "1"])
    ax.tick_params(labelleft=False)
    zero.set_xlim(-0.6, n_lanes - 0.4)
    zero.set_xticks([(n_lanes - 1) / 2], ["0"])
    zero.set_facecolor("0.95")
    zero.set_label(f"{fam}: kept none")
    zero.set_xlabel("none")
    zero.tick_params(axis="x", length=0)
    zero.grid(False, axis="x")
    if i:
        zero.tick_params(labelleft=False)
    ax.set_xlabel(f"{fam}: novel-region accuracy")
    ax.set_title(f"{fam}", fontsize=LEGEND_PT)
    return zero, ax


def _skill_marks(fig, zero, ax, marks: list[dict], lanes) -> None:
    """Draws one family's Fig. 3g markers (those at 0 in their zero-column lanes) and each design's arrow."""
    where = {}
    lane = iter(lanes)
    for m in marks:
        at = (zero, (next(lane), m["y"])) if m["x"] <= 0 else (ax, (m["x"], m["y"]))
        at[0].scatter([at[1][0]], [at[1][1]], clip_on=False, **m["kw"])
        where[m["key"]] = at
    for m in marks:
        if m["key"][1] == "last" and (m["key"][0], "generation 1") in where:
            _arrow(fig, where[(m["key"][0], "generation 1")], where[m["key"]], m["kw"]["edgecolor"])


def _skill_legend(fig, first_axes, first_marks: list[dict], ncol: int) -> None:
    """Draws Fig. 3g's legend below the panels, in the first family's marker order, and its title."""
    seen: dict[str, object] = {}
    for a in first_axes:
        for h, lab in zip(*a.get_legend_handles_labels()):
            seen.setdefault(lab, h)
    order = [m["kw"]["label"] for m in first_marks if m["kw"].get("label")]
    labels = [lab for lab in order if lab in seen]
    # below the panels, in columns: beside them it made the figure so wide that the README's width shrank it to ~8 px
    fig.legend([seen[lab] for lab in labels], labels, loc="lower center", bbox_to_anchor=(0.5, 0.0), ncol=ncol,
               fontsize=LEGEND_PT, frameon=False)
    fig.suptitle("Skill kept and accuracy: open = generation 1, filled = last generation (means over seeds);\n"
                 "x on a symmetric-log scale, linear below 0.01; black, hollow: the baselines (one model each);\n"
                 "grey, left of each panel: the points at exactly 0 (none kept), side by side", fontsize=LEGEND_PT)


def _marks(pts: pd.DataFrame, arms, baselines, founders: pd.DataFrame, base: pd.DataFrame, fam: str) -> list[dict]:
    """Every marker of Fig. 3g in family ``fam``'s panel, in drawing order: ``{"key", "x", "y", "kw"}`` (``kw``: scatter
    keywords): each design at generation 1 (open) and the last generation (filled, in the legend), then the baselines
    (one model each; black, hollow, each in its own marker, so that their colours do not crowd the arms'), the
    founders and the bare base."""
    out = []
    for arm in arms:
        st = arm_style(arm)
        end = pts[(pts["arm"] == arm) & (pts["when"] == "last")]
        if end.empty:
            continue
        g1 = pts[(pts["arm"] == arm) & (pts["when"] == "generation 1")]
        if not g1.empty:
            out.append({"key": (arm, "generation 1"), "x": float(g1[fam].iloc[0]), "y": float(g1["overall"].iloc[0]),
                        "kw": {"s": MARKER_S * 0.75, "marker": st["marker"], "facecolor": "white",
                               "edgecolor": st["color"], "lw": 1.0, "zorder": 3}})
        out.append({"key": (arm, "last"), "x": float(end[fam].iloc[0]), "y": float(end["overall"].iloc[0]),
                    "kw": {"s": MARKER_S * 0.87, "marker": st["marker"], "facecolor": st["color"],
                           "edgecolor": st["color"], "zorder": 4,
                           "label": f"{arms_label(arm)} (n = {int(end['n'].iloc[0])})"}})
    for b in baselines:
        e = pts[(pts["arm"] == b) & (pts["when"] == "last")]
        if not e.empty:
            out.append({"key": (b, "last"), "x": float(e[fam].iloc[0]), "y": float(e["overall"].iloc[0]),
                        "kw": {"marker": arm_style(b)["marker"], "s": MARKER_S, "facecolor": "white",
                               "edgecolor": "black", "lw": 0.9, "zorder": 4,
                               "label": f"{arms_label(b)} (n = {int(e['n'].iloc[0])})"}})
    if len(founders):
        out.append({"key": ("founders", "generation 0"), "x": float(founders[fam].iloc[0]),
                    "y": float(founders["overall"].iloc[0]),
                    "kw": {"marker": "*", "s": 80, "facecolor": "black", "edgecolor": "black", "zorder": 5,
                           "label": "founders (generation 0)"}})
    b = base.groupby("metric")["value"].mean()
    if "base_test_overall" in b:
        out.append({"key": ("bare base", "generation 0"), "x": float(b.get(f"base_test_{fam}_novel", 0.0)),
                    "y": float(b["base_test_overall"]),
                    "kw": {"marker": "o", "s": MARKER_S, "facecolor": "grey", "edgecolor": "grey", "zorder": 5,
                           "label": "bare base"}})
    return out


def draw_g_sweep(sweep: pd.DataFrame):
    """S3b: the grounding-knob sweep: last-generation test accuracy of the ``full`` arm against g: one
    dot per seed (lines join a seed), the mean over seeds and its 95 % CI (t, within [0, 1]). ``sweep``:
    :func:`lib.society.data.grounding_sweep`, whose ``borrowed`` rows (``full`` itself, at the config's g)
    the title names."""
    use_style()
    d = last_generation_table(sweep)
    d["g"] = d["arm"].str.extract(r"@g([0-9.]+)$")[0].astype(float)
    t = mean_ci_table(d, ["g"], bounds=(0.0, 1.0))
    st = arm_style(REFERENCE)
    fig, ax = plt.subplots(figsize=(4.0, 3.3))
    for sd, part in d.groupby("seed"):
        part = part.sort_values("g")
        ax.plot(part["g"], part["value"], color=st["color"], lw=0.6, alpha=0.35, zorder=1)
        ax.scatter(part["g"], part["value"], s=12, color=st["color"], alpha=0.5, lw=0, zorder=2)
    ci = np.isfinite(t["lo"]).all()
    ax.plot(t["g"], t["mean"], marker="D", ms=5, color="black", lw=1.2, zorder=3,
            label=f"mean, {BOUNDED_T_CI}" if ci else "mean over seeds")
    for r in t.itertuples():
        interval_bar(ax, r.g, r.lo, r.hi, "black")
    n = sorted(set(t["n"]))
    borrowed = sorted(set(sweep.loc[sweep["borrowed"].astype(bool), "arm"])) if "borrowed" in sweep else []
    ax.set_xlabel("grounding knob g (0: conformity only, 1: verifier only)")
    ax.set_ylabel("test accuracy, last generation")
    run = sorted(set(d["g"]) - {float(a.rsplit("@g", 1)[1]) for a in borrowed if "@g" in a})
    ax.set_title(f"Grounding-knob sweep of the full arm (n = {'–'.join(map(str, n))} seed{'s' if max(n) > 1 else ''})\n"
                 f"g = {', '.join(f'{g:g}' for g in run)}: the sweep's runs; g = "
                 f"{', '.join(sorted({a.rsplit('@g', 1)[1] for a in borrowed if '@g' in a}))}: the study's own full, run at the config's g on the same seeds",
                 fontsize=7.5)
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def _g_sweep(data):
    d = grounding_sweep(data["rows"], data["g"])
    return None if d is None else draw_g_sweep(d)


def _elitism(data):
    rows = data["rows"]
    pairs = elitism_pairs(rows["arm"])
    if not pairs:
        return None
    return draw_elitism(rows[rows["arm"].isin(list(pairs) + list(pairs.values()))])


def _retention(data):
    rows = design_rows(data["rows"])
    need = {f"test_{f}_novel" for f in data["families"]}
    return draw_skill_retention(rows, data["families"]) if need <= set(rows["metric"]) else None


def _skill_loss(data):
    rows = design_rows(data["rows"])
    need = {f"{p}test_{f}_novel" for f in data["families"] for p in ("", "source_")}
    if not need <= set(rows["metric"]):
        return None
    return draw_skill_loss(rows, data["families"], generation="first", compact=True)  # ten arms: legible at 830 px


PANELS = [
    Panel("fig3g_study_skill_vs_accuracy", lambda data: draw_skill_vs_accuracy(data["rows"], data["families"]),
          "The society study: per family, each society arm's novel-region accuracy (the skill only its founders "
          "learned) against its population test accuracy, at generation 1 (open) and the last generation "
          "(filled), beside the baselines (one model each: black, hollow, each in its own marker), the founders (★) "
          "and the bare base (●); means over each arm's or baseline's seeds (n in the legend). The x axis is "
          "symmetric-log (linear below 0.01); the points at exactly 0 (none of the novel skill kept) stand side by side "
          "in a grey column left of each panel, each at its accuracy."),
    Panel("S3b_study_g_sweep", _g_sweep,
          "The study's grounding knob: last-generation test accuracy of full at g = 0, 0.25, 0.75, 1 and full "
          "itself (g = 0.5) on the same seeds (dots: seeds; mean, 95 % CI (t, within [0, 1]))."),
    Panel("S3g_study_elitism", _elitism,
          "The study's elitism pair (X@e1 vs X, same seeds): (a) test accuracy per generation; last-generation "
          "paired differences of (b) the population mean and (c) the top-scoring agent; mean, 95 % CI "
          "(sign-flip inversion; none with < 6 seeds), paired sign-flip p."),
    Panel("S3n_study_skill_retention", _retention,
          "S3h's measure on the study's designs: accuracy on each family's novel region, population mean (top) "
          "and best agent (bottom, an oracle pick) per generation and arm, mean over seeds with its 95 % CI (t, "
          "within [0, 1]); lines: the family's best founder, its specialists' mean and the bare base; the baselines "
          "(one model each) at their labelled positions right of the last generation."),
    Panel("S3o_study_skill_loss", _skill_loss,
          "S3i's measure on the study's designs: where novel-region skill is lost, per bred child of the first "
          "bred generation (elites excluded): merge − parents' mean, merge − the better parent, child − merge, per "
          "family and pooled, per arm (n seeds beside it); dots: seeds; mean, 95 % CI (sign-flip inversion; none "
          "with < 6 seeds), exact p. inherit_merge's child is its merge, mutated (no distillation); a family whose "
          "children's parents hold none of its novel skill is left out, the title says so."),
]


def draw_panel(name: str, data: dict):
    """The saved panel ``name`` of :data:`PANELS` drawn from ``data`` (:func:`load_data`) exactly as
    :func:`draw_all` saves it (``None`` where its data is absent)."""
    return style.draw_panel(PANELS, name, data)


def draw_all(scale: str) -> list[str]:
    """Draw and save every panel of :data:`PANELS` from ``data/<scale>/society_study/``."""
    return save_rows_panels(PANELS, load_data(scale), scale=scale, notebook=NOTEBOOK)


def stats_table(scale: str) -> pd.DataFrame:
    """The six pre-registered comparisons (:func:`lib.society.studies.study.comparisons.primary_table`)."""
    return primary_table(load_data(scale)["rows"])
