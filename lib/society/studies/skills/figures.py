"""The skill-combining study's panels (``data/<scale>/society_crossover/``, beside the society study's ``verified``,
``inherit_merge`` and baselines where it re-uses them): which design makes one agent hold several skills?

- ``fig3h_skills_chosen_agent`` — the study's main panel. For the bare base, every society design and every
  baseline (rows), the model a reader would take away (:func:`lib.society.studies.skills.comparisons.chosen_agents`:
  the last generation's agent best on the selection pool; a baseline's one model): its test accuracy on each family's
  *novel* region (the skill only that family's founders learned; columns 1–3) and overall (column 4). Dots:
  seeds; the large marker and bar: mean and 95 % CI (t, within [0, 1]). Dotted lines: the bare base's and
  multitask's means; the dashed line in the novel columns: :data:`lib.society.studies.skills.comparisons.HELD`, where
  a skill counts as held.
"""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from lib import style
from lib.core.stats import BOUNDED_T_CI, bounded_t_ci
from lib.society import arms
from lib.society.arms import BASE_MODEL, BASELINES, CROSSOVER_PRIMARY, CROSSOVER_SECONDARY, MULTITASK
from lib.society.data import CROSSOVER, LINEAGE, STUDY, config_of, files_of, society_rows
from lib.society.studies.frames import base_scores
from lib.society.studies.skills.comparisons import HELD, arm_summary, chosen_agents, primary_table
from lib.style import Panel, save_rows_panels

style.register_looks(arms.LOOKS)  # the society's arms draw in the looks of their table
style.register_looks({BASE_MODEL: (style.REFERENCE_GREY, "o")})

EXPERIMENT = CROSSOVER
NOTEBOOK = "03_society_arms"


def studies(scale: str) -> tuple[str, ...]:
    """The folders the study reads at ``scale``: its own, and the society study's where its config does not run
    ``verified`` itself (it re-uses that study's ``verified``, ``inherit_merge`` and baselines)."""
    return (CROSSOVER,) if "verified" in config_of(CROSSOVER, scale).arms else (CROSSOVER, STUDY)


def study_arms(scale: str) -> set[str]:
    """The arms the study reads: its config's, those its comparisons name (``verified``, ``inherit_merge``), and every
    baseline; the society study's other arms (the knob, elitism, niches) have their own panels."""
    named = {x for _, a, b in CROSSOVER_PRIMARY for x in (a, b)} | {x for a, b, _ in CROSSOVER_SECONDARY for x in (a, b)}
    return set(config_of(CROSSOVER, scale).arms) | named | set(BASELINES)


def study_rows(scale: str) -> pd.DataFrame | None:
    """The finished runs of the study's arms (:func:`study_arms`) in its folders (:func:`studies`); ``None``: none."""
    rows = society_rows(scale, *studies(scale), finished=True, required=False)
    return None if rows is None else rows[rows["arm"].isin(study_arms(scale))]


def load_data(scale: str) -> dict:
    """``{"rows", "families", "files", "progress", "configs"}``: the finished runs of :func:`studies` at ``scale``
    (:func:`lib.society.data.society_rows`), the config's families and what they were read from. Raises
    ``FileNotFoundError`` naming the command that makes them."""
    if config_of(CROSSOVER, scale) is None:
        raise FileNotFoundError(f"no configs/{CROSSOVER}/{scale}.yaml: run `python -m lib.experiment "
                                f"configs/{CROSSOVER}/<scale>.yaml` at a scale that has one")
    folders = studies(scale)
    rows = society_rows(scale, *folders, finished=True, order="config")  # raises naming the command without rows
    rows = rows[rows["arm"].isin(study_arms(scale))]
    files = files_of(scale, *folders)
    later = lineage_designs(scale)
    if later is not None:  # Fig. 3h shows them too (their shards are listed with its data); no table reads them here
        drawn = {f"{a}_s" for a in set(later["arm"])}
        more = files_of(scale, LINEAGE)
        for k in ("files", "progress"):
            files[k] = files[k] + [f for f in more[k] if any(f.rsplit("/", 1)[-1].startswith(d) for d in drawn)]
        files["configs"] = files["configs"] + more["configs"]
    return {"rows": rows, "lineage": later, "families": list(config_of(CROSSOVER, scale).families), **files}


def lineage_designs(scale: str) -> pd.DataFrame | None:
    """The finished runs of the society designs the lineage study added (``continue`` and its variants: its folder's
    arms that are no baseline and not this study's), for Fig. 3h; ``None`` without them."""
    if config_of(LINEAGE, scale) is None:
        return None
    rows = society_rows(scale, LINEAGE, finished=True, required=False)
    if rows is None:
        return None
    new = [a for a in dict.fromkeys(rows["arm"]) if not arms.is_baseline(a) and a not in study_arms(scale)]
    return rows[rows["arm"].isin(new)] if new else None


def _with_lineage(data: dict) -> pd.DataFrame:
    return data["rows"] if data.get("lineage") is None else pd.concat([data["rows"], data["lineage"]], ignore_index=True)


def _points(rows: pd.DataFrame, families) -> pd.DataFrame:
    """Per (arm, seed) the chosen agent's columns ``<family>`` (novel accuracy) and ``overall``; the bare base's
    per seed as arm :data:`BASE_MODEL`."""
    ch = chosen_agents(rows, families).rename(columns={"test_overall": "overall",
                                                        **{f"test_{f}_novel": f for f in families}})
    base = base_scores(rows, ["overall", *(f"{f}_novel" for f in families)]).rename(
        columns={f"{f}_novel": f for f in families}).reset_index().assign(arm=BASE_MODEL)
    return pd.concat([base, ch[["arm", "seed", "overall", *families]]], ignore_index=True)


def draw_chosen_agent(rows: pd.DataFrame, families):
    """The main panel (see the module's docstring)."""
    pts = _points(rows, families)
    order = list(dict.fromkeys(pts["arm"]))
    cols = [*families, "overall"]
    fig, axes = plt.subplots(1, len(cols), figsize=(2.0 * len(cols) + 2.2, 0.34 * len(order) + 1.3), sharey=True)
    y = {a: len(order) - 1 - k for k, a in enumerate(order)}
    for ax, col in zip(axes, cols):
        for arm, d in pts.groupby("arm", sort=False):
            v = d[col].dropna().to_numpy()
            if not len(v):
                continue
            st = style.arm_style(arm)
            jit = np.linspace(-0.18, 0.18, len(v)) if len(v) > 1 else np.zeros(1)
            ax.scatter(v, y[arm] + jit, s=7, color=st["color"], alpha=0.45, lw=0, zorder=2)
            m, lo, hi = bounded_t_ci(v) if len(v) > 1 else (float(v.mean()), np.nan, np.nan)
            if np.isfinite(lo):
                ax.plot([lo, hi], [y[arm]] * 2, color=st["color"], lw=1.4, zorder=3)
            ax.plot([m], [y[arm]], marker=st["marker"], ms=5.5, color=st["color"], mfc=st["mfc"], ls="", zorder=4)
        for ref, ls, name in ((BASE_MODEL, ":", "the bare base's mean"), (MULTITASK, "-.", "multitask's mean")):
            v = pts.loc[pts["arm"] == ref, col].dropna()
            if len(v):
                ax.axvline(v.mean(), color=style.REFERENCE_GREY, ls=ls, lw=0.8, zorder=1, label=name)
        if col != "overall":
            ax.axvline(HELD, color="#999999", ls="--", lw=0.6, zorder=1, label=f"{HELD:g}: a skill is held from here")
        ax.set_xlim(-0.03, 1.03)
        ax.set_title(f"{col}: novel region" if col != "overall" else "overall (all regions)", fontsize=9)
        ax.set_xlabel("test accuracy")
        ax.grid(axis="x", alpha=0.3)
    axes[0].set_yticks([y[a] for a in order], [f"{arms.label(a)} (n={pts[pts.arm == a].seed.nunique()})"
                                               for a in order], fontsize=8.5)  # 7.4 pt in the README's column
    axes[0].set_ylim(-0.6, len(order) - 0.4)
    axes[0].set_ylabel("design, baseline or bare base (n seeds)")
    fig.suptitle("The model a reader takes away (best on the selection pool): which design holds several skills?",
                 fontsize=10)
    handles, labels = axes[0].get_legend_handles_labels()  # the three reference lines, once for every panel
    fig.legend(handles, labels, loc="lower center", ncol=len(labels), fontsize=8.5, frameon=False,
               bbox_to_anchor=(0.5, 0.0))
    fig.tight_layout(rect=(0, 0.035, 1, 1))
    return fig


PANELS = [
    Panel("fig3h_skills_chosen_agent", lambda data: draw_chosen_agent(_with_lineage(data), data["families"]),
          "The skill-combining study, with the lineage study's designs (continue and its variants): for the bare "
          "base, every society design and every baseline (rows, seeds in "
          "brackets), the model a reader would take away (the last generation's agent best on the selection pool; a "
          f"baseline's one model): its test accuracy on each family's novel region and overall. Dots: seeds; mean, "
          f"{BOUNDED_T_CI}. Dotted: the bare base's mean; dash-dotted: multitask's; dashed: {HELD}, where a skill "
          "counts as held."),
]


def draw_panel(name: str, data: dict):
    """The saved panel ``name`` of :data:`PANELS` drawn from ``data`` (:func:`load_data`) as :func:`draw_all` saves it."""
    return style.draw_panel(PANELS, name, data)


def draw_all(scale: str) -> list[str]:
    """Draw and save every panel of :data:`PANELS` from the study's folders at ``scale``."""
    return save_rows_panels(PANELS, load_data(scale), scale=scale, notebook=NOTEBOOK)


def stats_table(scale: str) -> pd.DataFrame:
    """The five pre-registered comparisons (:func:`lib.society.studies.skills.comparisons.primary_table`)."""
    data = load_data(scale)
    return primary_table(data["rows"], data["families"])


def summary_table(scale: str) -> pd.DataFrame:
    """Every design and baseline beside the bare base (:func:`lib.society.studies.skills.comparisons.arm_summary`)."""
    data = load_data(scale)
    return arm_summary(data["rows"], data["families"])
