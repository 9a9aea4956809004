"""The climb's panel (:mod:`lib.society.studies.climb.comparisons`).

- ``fig3j_climb`` — (a) the climb curve: the chosen agent's test accuracy on the climbed rung (mean over seeds and
  95 % t-interval within [0, 1]) after each round, one line per climbing arm (a secondary variant dashed, hollow), the
  one-shot baselines as hollow markers at the last round; (b) the answers each arm keeps per round (mean over seeds)
  and (c) the share of them that is wrong (the verifier's arms keep none wrong by construction).

The data are the folder the study's tables read (:func:`lib.society.studies.climb.comparisons.current`: the seat-fair
re-run once its primary arms have every seed, else the committed folder).
"""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from lib import style
from lib.core.paths import config_path, data_dir
from lib.core.rows import progress_path, shard_path
from lib.core.stats import BOUNDED_T_CI
from lib.society import arms
from lib.society.studies.climb import comparisons as climb
from lib.style import Panel, save_rows_panels

style.register_looks(arms.LOOKS)

EXPERIMENT = climb.CLIMB
NOTEBOOK = "03_society_arms"


def load_data(scale: str) -> dict:
    """The study's finished runs and config, and the files behind them; ``FileNotFoundError`` naming the command
    without them."""
    experiment = climb.current(scale)
    d = climb.load_data(scale, experiment)
    if d is None:
        raise FileNotFoundError(f"no finished {experiment} runs at {scale}: run `python -m lib.experiment "
                                f"configs/{experiment}/{scale}.yaml` (or its sweep, `python -m lib.sweep`)")
    folder = data_dir(scale, experiment)
    runs = d["rows"][["arm", "seed"]].drop_duplicates().itertuples(index=False)
    files = [shard_path(folder, a, int(s)) for a, s in runs]
    return {**d, "files": [str(f) for f in files], "progress": [str(progress_path(f)) for f in files],
            "configs": [str(config_path(experiment, scale))]}


def draw_climb(rows, cfg):
    """The three panels of the module's docstring."""
    c = climb.curve(rows, cfg.rung)
    k = climb.kept(rows)
    fig, axes = plt.subplots(1, 3, figsize=(10.5, 4.8), gridspec_kw={"width_ratios": [1.4, 1, 1]})
    ax = axes[0]
    for arm in arms.order(c["arm"].unique()):
        g = c[c["arm"] == arm].sort_values("round")
        st = style.arm_style(arm)
        one_shot = arms.SPECS[arm].is_baseline
        lab = f"{arms.label(arm)} (n={int(g['n'].max())})"
        if one_shot:
            x = g["round"] + (0.08 if arm == arms.CLIMB_HINTS else 0.16)  # the two one-shot models side by side
            ax.errorbar(x, g["mean"], yerr=[g["mean"] - g["lo"], g["hi"] - g["mean"]], fmt=st["marker"],
                        color=st["color"], mfc="white", ms=8, capsize=3, label=lab)
        else:
            ax.plot(g["round"], g["mean"], marker=st["marker"], color=st["color"], ls=st["ls"], mfc=st["mfc"],
                    label=lab)
            ax.fill_between(g["round"], g["lo"], g["hi"], color=st["color"], alpha=0.15 if st["ls"] == "-" else 0.07,
                            lw=0)
    ax.set_xticks(range(cfg.rounds + 1))
    ax.set_xlabel("round (0: the generalists)")
    ax.set_ylabel(f"chosen agent: rung-{cfg.rung} test accuracy")
    ax.set_ylim(0, 1)
    ax.grid(alpha=0.3)
    ax.set_title("(a) the climb", fontsize=10)
    for ax, col, title, ylabel in ((axes[1], "kept_n", "(b) answers kept per round", "answers kept (mean over seeds)"),
                                   (axes[2], "kept_wrong_share", "(c) share of kept answers wrong",
                                    "share of kept answers wrong")):
        for arm in arms.order(k["arm"].unique()):
            g = k[k["arm"] == arm].sort_values("generation")
            checked = col == "kept_wrong_share" and arms.SPECS[arm].climb == "verifier"  # 0 by construction
            if g[col].notna().any() and not checked:
                st = style.arm_style(arm)
                ax.plot(g["generation"] + 1, g[col], marker=st["marker"], color=st["color"], ls=st["ls"],
                        mfc=st["mfc"])
        ax.set_xticks(range(1, cfg.rounds + 1))
        ax.set_xlabel("round")
        ax.set_ylabel(ylabel)
        ax.grid(alpha=0.3)
        ax.set_title(title, fontsize=10)
    axes[2].set_ylim(-0.02, 1.02)
    if any(arms.SPECS[a].climb == "verifier" for a in k["arm"].unique()):  # drawn, they would lie on 0, one over another
        axes[2].set_title("(c) share of kept answers wrong\n(the verifier's arms: 0 every round, not drawn)", fontsize=10)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.tight_layout(rect=(0, 0.14, 1, 1))
    fig.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, 0.13), ncol=3, fontsize=9, frameon=False)
    return fig


PANELS = [
    Panel("fig3j_climb", lambda d: draw_climb(d["rows"], d["cfg"]),
          "The climb: (a) the chosen agent's test accuracy on rung 1 (one step past every founder's reach; mean, "
          f"{BOUNDED_T_CI}) after each round of sampling, keeping and training, per climbing arm (filled; a secondary "
          "variant of an arm dashed and hollow in its colour), and the "
          "one-shot baselines at the same steps (hollow, at the last round); (b) answers kept per round and (c) the "
          "share of them that is wrong (mean over seeds; the verifier's arms keep none wrong, so only the vote arms are "
          "drawn there)."),
]


def draw_panel(name: str, data: dict):
    return style.draw_panel(PANELS, name, data)


def draw_all(scale: str) -> list[str]:
    """Draw and save every panel of :data:`PANELS` from the study's folder at ``scale``."""
    return save_rows_panels(PANELS, load_data(scale), scale=scale, notebook=NOTEBOOK)


def stats_table(scale: str):
    """The four pre-registered comparisons (:func:`lib.society.studies.climb.comparisons.primary`)."""
    d = load_data(scale)
    return climb.primary(d["rows"], d["cfg"].rung)


__all__ = ["EXPERIMENT", "PANELS", "draw_all", "draw_climb", "load_data", "stats_table"]
