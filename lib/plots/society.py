"""Fig. 3 (the society at LLM scale) and its SI panels, drawn from the tidy society rows.

Rows (``lib.llm.society.COLUMNS``): one per (arm, seed, generation, agent, metric). The population's
accuracy at a generation is the mean over its agents; bands are bootstrap 95 % CIs over seeds.
"""
from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
from matplotlib.ticker import MaxNLocator
import numpy as np
import pandas as pd

from ..figures import palette, save_figure, use_style
from ..paths import config_path, data_dir
from ..stats import mean_ci_table

EXPERIMENT = "society"
SWEEP = "society_g_sweep"
NOTEBOOK = "03_society_arms.ipynb"
ARM_ORDER = ["full", "no_grounding", "no_sex", "no_diversity", "sex_linear"]


def _shards(folder: Path) -> list[Path]:
    return sorted(p for p in folder.glob("*_s*.csv"))


def load_data(scale: str) -> dict:
    """``{"rows", "files", "sweep", "sweep_files"}`` from ``data/<scale>/society[_g_sweep]/``.

    Raises ``FileNotFoundError`` naming the folder and the command that fills it.
    """
    folder = data_dir(scale, EXPERIMENT)
    files = _shards(folder)
    if not files:
        raise FileNotFoundError(f"no society rows in {folder}: run "
                                f"`python -m lib.experiment configs/society/{scale}.yaml`")
    rows = pd.concat([pd.read_csv(f) for f in files], ignore_index=True)
    sfolder = data_dir(scale, SWEEP)
    sfiles = _shards(sfolder)
    sweep = pd.concat([pd.read_csv(f) for f in sfiles], ignore_index=True) if sfiles else None
    return {"rows": rows, "files": [str(f) for f in files], "sweep": sweep, "sweep_files": [str(f) for f in sfiles]}


def arms_in(df: pd.DataFrame) -> list[str]:
    present = list(dict.fromkeys(df["arm"]))
    return [a for a in ARM_ORDER if a in present] + [a for a in present if a not in ARM_ORDER]


def population_metric(df: pd.DataFrame, metric: str) -> pd.DataFrame:
    """Per (arm, seed, generation): the mean over agents of ``metric`` (column ``value``)."""
    d = df[df["metric"] == metric]
    return d.groupby(["arm", "seed", "generation"], as_index=False)["value"].mean()


def selected_conformity(df: pd.DataFrame) -> pd.DataFrame:
    """Per (arm, seed, generation): mean conformity of the agents selected as parents."""
    d = df[(df["metric"] == "val_overall") & (df["selected"].astype(str) == "True")]
    return d.groupby(["arm", "seed", "generation"], as_index=False)["conformity"].mean().rename(
        columns={"conformity": "value"})


def last_generation_table(df: pd.DataFrame, metric: str = "test_overall") -> pd.DataFrame:
    """Per (arm, seed): the population's ``metric`` at the last generation."""
    d = population_metric(df, metric)
    last = d.groupby(["arm", "seed"])["generation"].transform("max")
    return d[d["generation"] == last].drop(columns="generation").reset_index(drop=True)


def _band(ax, d: pd.DataFrame, arms, ylabel: str, title: str):
    cols = palette(arms)
    t = mean_ci_table(d, ["arm", "generation"])
    for a in arms:
        x = t[t["arm"] == a]
        if x.empty:
            continue
        ax.plot(x["generation"], x["mean"], marker="o", ms=3, color=cols[a], label=a)
        if (x["n"] > 1).any():
            ax.fill_between(x["generation"], x["lo"], x["hi"], color=cols[a], alpha=0.2, lw=0)
    ax.set_xlabel("generation")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_ylabel(ylabel)
    ax.set_title(title)


def draw_metric(df: pd.DataFrame, metric: str, *, ylabel: str, title: str):
    """One panel: the population mean of ``metric`` per generation, one line (CI band) per arm."""
    use_style()
    fig, ax = plt.subplots(figsize=(4.2, 3.2))
    d = selected_conformity(df) if metric == "selected_conformity" else population_metric(df, metric)
    _band(ax, d, arms_in(df), ylabel, title)
    ax.legend(fontsize=7, frameon=False)
    fig.tight_layout()
    return fig


def draw_families(df: pd.DataFrame):
    """Test accuracy per task family (one sub-panel each), one line per arm."""
    use_style()
    fams = [m[5:] for m in dict.fromkeys(df["metric"]) if m.startswith("test_") and m != "test_overall"]
    fig, axes = plt.subplots(1, len(fams), figsize=(3.3 * len(fams), 3.0), sharey=True, squeeze=False)
    for ax, f in zip(axes[0], fams):
        _band(ax, population_metric(df, f"test_{f}"), arms_in(df), "test accuracy", f)
    axes[0][0].legend(fontsize=7, frameon=False)
    fig.tight_layout()
    return fig


def draw_lineage(df: pd.DataFrame, seed: int | None = None):
    """The parents of each child: one sub-panel per arm (one seed); an edge per parent → child."""
    use_style()
    arms = arms_in(df)
    seed = int(df["seed"].min()) if seed is None else seed
    fig, axes = plt.subplots(1, len(arms), figsize=(2.6 * len(arms), 2.9), sharey=True, squeeze=False)
    cols = palette(arms)
    for ax, a in zip(axes[0], arms):
        d = df[(df["arm"] == a) & (df["seed"] == seed)]
        par = d[d["metric"] == "parents"]
        for _, r in par.iterrows():
            pa, pb = divmod(int(round(r["value"])), 100)
            for p in {pa, pb}:
                ax.plot([r["generation"] - 1, r["generation"]], [p, r["agent"]], color=cols[a], lw=0.8, alpha=0.7)
        sel = d[(d["metric"] == "val_overall")]
        ax.scatter(sel["generation"], sel["agent"], s=12, c=np.where(sel["selected"].astype(str) == "True",
                                                                       "black", "lightgrey"), zorder=3)
        ax.set_title(a, fontsize=9)
        ax.set_xlabel("generation")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    axes[0][0].set_ylabel(f"agent (seed {seed}; black = selected)")
    fig.tight_layout()
    return fig


def draw_g_sweep(sweep: pd.DataFrame):
    """Final test accuracy of the ``full`` arm against the grounding knob g (CI over seeds)."""
    use_style()
    d = last_generation_table(sweep)
    d["g"] = d["arm"].str.extract(r"g([0-9.]+)$")[0].astype(float)
    t = mean_ci_table(d, ["g"])
    fig, ax = plt.subplots(figsize=(3.8, 3.0))
    ax.errorbar(t["g"], t["mean"], yerr=[t["mean"] - t["lo"], t["hi"] - t["mean"]], marker="o", capsize=3,
                color=palette(["full"])["full"])
    ax.set_xlabel("grounding knob g")
    ax.set_ylabel("test accuracy, last generation")
    fig.tight_layout()
    return fig


PANELS = [
    ("fig3a_society_test_accuracy", "test_overall", "test accuracy (population mean)",
     "Held-out test accuracy per generation for each arm (mean over agents; band: 95 % CI over seeds)."),
    ("fig3c_society_consensus", "consensus_acc", "consensus accuracy",
     "Accuracy of the population's modal answer on the conformity pool, per generation and arm."),
    ("fig3d_society_diversity", "diversity_behav", "behavioural diversity",
     "Mean pairwise behavioural distance between agents, per generation and arm."),
    ("fig3e_society_selected_conformity", "selected_conformity", "conformity of parents",
     "Mean conformity (agreement with the consensus) of the agents selected as parents."),
]


def draw_all(scale: str) -> list[str]:
    """Draw and save every Fig. 3 / S3 panel from ``data/<scale>/society*``; returns the names saved."""
    data = load_data(scale)
    df, files, cfgp = data["rows"], data["files"], str(config_path(EXPERIMENT, scale))
    saved = []
    for name, metric, ylabel, caption in PANELS:
        fig = draw_metric(df, metric, ylabel=ylabel, title="")
        save_figure(fig, name, scale=scale, caption=caption, data=files, config=cfgp, notebook=NOTEBOOK)
        plt.close(fig)
        saved.append(name)
        if name.startswith("fig3a"):
            fig = draw_families(df)
            save_figure(fig, "fig3b_society_test_by_family", scale=scale, data=files, config=cfgp,
                        notebook=NOTEBOOK, caption="Held-out test accuracy per task family, per arm "
                                                   "(mean over agents; band: 95 % CI over seeds).")
            plt.close(fig)
            saved.append("fig3b_society_test_by_family")
    fig = draw_lineage(df)
    save_figure(fig, "S3a_society_lineage", scale=scale, data=files, config=cfgp, notebook=NOTEBOOK,
                caption="Parents of each child per arm (first seed): edges parent → child, black = selected.")
    plt.close(fig)
    saved.append("S3a_society_lineage")
    if data["sweep"] is not None:
        fig = draw_g_sweep(data["sweep"])
        save_figure(fig, "S3b_society_g_sweep", scale=scale, data=data["sweep_files"],
                    config=str(config_path(SWEEP, scale)), notebook=NOTEBOOK,
                    caption="Grounding-knob sweep: last-generation test accuracy of the full arm against g.")
        plt.close(fig)
        saved.append("S3b_society_g_sweep")
    return saved


def stats_table(scale: str) -> pd.DataFrame:
    """Fig. 3 statistics at the last generation: every arm against ``full``, paired on seed.

    One row per (metric, arm): n seeds, the arm's mean with a 95 % bootstrap CI, the mean paired
    difference arm − full and its permutation p-value.
    """
    from ..stats import bootstrap_ci, compare_to

    df = load_data(scale)["rows"]
    out = []
    for fig, metric in (("fig3a", "test_overall"), ("fig3c", "consensus_acc"), ("fig3d", "diversity_behav")):
        last = last_generation_table(df, metric)
        cmp = compare_to(last, group="arm", reference="full") if "full" in set(last["arm"]) else pd.DataFrame()
        for arm in arms_in(last):
            m, lo, hi = bootstrap_ci(last.loc[last["arm"] == arm, "value"])
            row = {"figure": fig, "metric": metric, "arm": arm, "n": int((last["arm"] == arm).sum()),
                   "mean": m, "ci95": f"[{lo:.3f}, {hi:.3f}]"}
            c = cmp[cmp["arm"] == arm] if len(cmp) else cmp
            if len(c):
                row.update({"effect (arm - full)": float(c["effect"].iloc[0]), "p": float(c["p"].iloc[0]),
                            "test": c["test"].iloc[0]})
            out.append(row)
    return pd.DataFrame(out)
