"""The lineage study's panel (:mod:`lib.society.studies.lineage.comparisons`): every design and baseline on one
accuracy–compute chart.

- ``fig3i_accuracy_compute`` — (a) the chosen agent's test accuracy (mean and 95 % CI, t within [0, 1]) against the
  LoRA optimizer steps of a seed's run (log axis; founders included where a run starts from them) for every model of
  the study and, of the earlier studies with a selection pool, every one-shot model and each pre-registered design
  (:func:`shown`; the rest are in the compute table): society designs filled and named, one-shot models hollow; the one-shot frontier's two lines (distill-all
  and multitask trained for k founders' steps) and the bare base's mean (dotted). (b) the skills the chosen agent
  holds (novel-region accuracy ≥ 0.5; of 3) against the same axis.
"""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from lib import style
from lib.core.stats import BOUNDED_T_CI
from lib.society import arms
from lib.society.arms import BASE_MODEL, FRONTIER
from lib.society.studies.frames import base_scores
from lib.society.studies.lineage import comparisons as lineage
from lib.society.studies.skills.comparisons import HELD
from lib.style import Panel, save_rows_panels

style.register_looks(arms.LOOKS)
style.register_looks({BASE_MODEL: (style.REFERENCE_GREY, "o")})

EXPERIMENT = "society_lineage"
NOTEBOOK = "03_society_arms"


def load_data(scale: str) -> dict:
    """The study's data (:func:`lib.society.studies.lineage.comparisons.load_data`); ``FileNotFoundError`` naming the
    command without it."""
    d = lineage.load_data(scale)
    if d is None:
        raise FileNotFoundError(f"no finished {EXPERIMENT} runs at {scale}: run `python -m lib.experiment "
                                f"configs/{EXPERIMENT}/{scale}.yaml` (or its sweep, `python -m lib.sweep`)")
    return d


def shown(arm: str, own: set) -> bool:
    """A model Fig. 3i draws: every model of this study's own folder, and of the earlier studies every one-shot model
    and each design a study pre-registered as its own (its secondary variants are in the compute table)."""
    a = arms.SPECS.get(arm)
    return arm in own or arms.frontier_k(arm) is not None or (
        a is not None and (a.is_baseline or (a.role in ("primary", "reference") and not a.added)))


NAME_PT = 9           # a design's name: 7.3 pt where the README shows the figure (~830 px for its 10.7 in)
DODGE = 1.15          # the factor that moves a marker right, off another at (nearly) the same point
NEAR_DECADES = 0.06   # two markers closer than this on the log x axis (about a marker's width as drawn) ...
NEAR_SHARE = 0.022    # ... and than this share of the y axis's range (about its height) are moved apart


def dodged(x, y, y_span: float) -> np.ndarray:
    """``x`` with each point that would sit on an earlier one (within :data:`NEAR_DECADES` on the log axis and
    :data:`NEAR_SHARE` of ``y_span``) moved right by :data:`DODGE` until it sits on none: two designs at one point
    (``full`` and ``niche``, ``crossover`` and ``continue@higher``) are both seen. In the order given."""
    x, y = np.asarray(x, dtype=float).copy(), np.asarray(y, dtype=float)
    for i in range(len(x)):
        while any(abs(np.log10(x[i] / x[j])) < NEAR_DECADES and abs(y[i] - y[j]) < NEAR_SHARE * y_span
                  for j in range(i)):
            x[i] *= DODGE
    return x


def _seeds(n_lo: int, n_hi: int) -> str:
    return f"{n_lo}" if n_lo == n_hi else f"{n_lo}–{n_hi}"


def draw_accuracy_compute(rows, families, work):
    """Panels (a) and (b) of the module's docstring: every model in its arm's colour and marker (one-shot models
    hollow, in the legend; society designs filled, each named beside its marker or, where no side of it is free,
    joined to its name by a leader line, no name over or near another marker: :func:`lib.style.place_labels`);
    markers that would overlap moved apart along x (:func:`dodged`); the frontier's lines grey."""
    own = set(rows.loc[rows["study"] == EXPERIMENT, "arm"])
    t = lineage.compute_table(rows, families, work)
    t = t[t["arm"].map(lambda a: shown(a, own))].reset_index(drop=True)
    base = float(base_scores(rows, ["overall"])["overall"].mean())
    fig, axes = plt.subplots(1, 2, figsize=(11.0, 8.0))
    for ax, col in zip(axes, ("test", "held")):
        span = (np.nanmax(t["hi"]) - np.nanmin(t["lo"])) if col == "test" else len(families) + 0.2
        x = dodged(t["steps"], t[col], span)
        for line, ls in zip(FRONTIER, ("--", "-.")):
            on = t["arm"].str.startswith(line + "@k")
            pts = pd.DataFrame({"x": x[on], "y": t.loc[on, col], "n": t.loc[on, "n"]}).sort_values("x")
            if len(pts) > 1:
                ax.plot(pts["x"], pts["y"], color=style.REFERENCE_GREY, lw=1.0, ls=ls, zorder=1,
                        label=f"{arms.label(line)}, k founders' steps ({_seeds(int(pts['n'].min()), int(pts['n'].max()))})"
                        if col == "test" else None)
        for i, r in t.iterrows():
            st = style.arm_style(r["arm"])
            colour = st["color"]
            if col == "test" and np.isfinite(r["lo"]):
                ax.plot([x[i]] * 2, [r["lo"], r["hi"]], color=colour, lw=1.0, zorder=2, alpha=0.8)
            on_line = pd.notna(r["k"])  # k: NaN off the frontier (a float column)
            ax.plot([x[i]], [r[col]], marker=st["marker"], ms=4 if on_line else 7, color=colour, mew=1.3,
                    mfc="white" if r["baseline"] else colour, ls="", zorder=3, gid=r["arm"],
                    label=f"{arms.label(r['arm'])} ({r['n']})" if r["baseline"] and not on_line and col == "test"
                    else None)
        if col == "test":
            ax.axhline(base, color=style.REFERENCE_GREY, ls=":", lw=0.9, zorder=0, label="bare base (mean)")
        ax.set_xscale("log")
        ax.set_xlim(right=t["steps"].max() * 12)  # room for the names right of the costliest designs
        ax.set_xlabel("LoRA optimizer steps per seed (log; founders included)")
        ax.grid(alpha=0.3)
        t[f"x_{col}"] = x
    axes[0].set_ylabel("chosen agent: test accuracy")
    axes[0].set_title("(a) accuracy against compute", fontsize=10)
    axes[1].set_ylabel(f"skills held (novel accuracy ≥ {HELD}; of {len(families)})")
    axes[1].set_title("(b) skills held against compute", fontsize=10)
    axes[1].set_ylim(-0.45, len(families) + 0.1)  # room below the row at 0 for its names
    handles, labels = axes[0].get_legend_handles_labels()
    fig.suptitle("Every design and one-shot model at its compute: filled and named, a society; hollow, one model",
                 fontsize=11)
    fig.tight_layout(rect=(0, 0.2, 1, 1))
    for ax, col in zip(axes, ("test", "held")):  # the societies named once the layout is set, over no marker
        style.place_labels(ax, [(r[f"x_{col}"], r[col], f"{r['arm']} ({r['n']})", style.arm_style(r["arm"])["color"])
                                for _, r in t[~t["baseline"].astype(bool)].iterrows()], fontsize=NAME_PT)
    fig.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, 0.19), ncol=3, fontsize=9, frameon=False,
               title="one-shot models and references (seeds)", title_fontsize=9)
    return fig


PANELS = [
    Panel("fig3i_accuracy_compute", lambda d: draw_accuracy_compute(d["everything"], d["families"], d["work"]),
          "The lineage study: every society design (filled) and one-shot model (hollow) with a selection pool, "
          f"(a) the chosen agent's test accuracy (mean, {BOUNDED_T_CI}) and (b) the skills it holds, against the "
          "LoRA optimizer steps of a seed's run (log axis; founders included where a run starts from them; markers "
          f"that would overlap are moved apart to the right by {(DODGE - 1) * 100:.0f} % steps at a time). Grey "
          "lines: the one-shot frontier (distill-all dashed, multitask dash-dotted, trained for k founders' steps); "
          "dotted: the bare base. "
          "The y axis of (a) does not start at 0."),
]


def draw_panel(name: str, data: dict):
    return style.draw_panel(PANELS, name, data)


def draw_all(scale: str) -> list[str]:
    """Draw and save every panel of :data:`PANELS` from the study's folders at ``scale``."""
    return save_rows_panels(PANELS, load_data(scale), scale=scale, notebook=NOTEBOOK)


def stats_table(scale: str):
    """The four pre-registered comparisons (:func:`lib.society.studies.lineage.comparisons.primary`);
    ``FileNotFoundError`` before the study's first run has finished."""
    d = load_data(scale)
    if d["rows"] is None:
        raise FileNotFoundError(f"no finished {EXPERIMENT} run at {scale} yet: its comparisons need one")
    return lineage.primary(d["rows"], d["families"])
