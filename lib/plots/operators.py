"""Fig. 1 and S1: the population operators on synthetic populations (data of notebook 01)."""
from __future__ import annotations

import numpy as np
import pandas as pd
import matplotlib.pyplot as plt
import seaborn as sns

from .. import stats
from ..figures import colour, save_figure, use_style
from ..paths import config_path, data_dir

EXPERIMENT = "operators"
NOTEBOOK = "01_operators.ipynb"
TABLES = ("agents", "selection", "pairs", "distance")


def load_data(scale: str) -> dict[str, pd.DataFrame]:
    """The tables of ``data/<scale>/operators/``; a missing file names the command that makes it."""
    folder = data_dir(scale, EXPERIMENT)
    out = {}
    for t in TABLES:
        p = folder / f"{t}.csv"
        if not p.is_file():
            raise FileNotFoundError(
                f"{p} is missing: run `python -m lib.experiment configs/{EXPERIMENT}/{scale}.yaml` "
                f"or notebook {NOTEBOOK} at scale {scale!r}")
        out[t] = pd.read_csv(p)
    return out


def conformity_vs_fitness(agents: pd.DataFrame):
    """Fig. 1a: each agent's conformity against its verifier fitness, all populations."""
    fig, ax = plt.subplots(figsize=(3.4, 3.0))
    ax.scatter(agents["fitness"], agents["conformity"], s=10, alpha=0.6, color=colour("full"), lw=0)
    r = np.corrcoef(agents["fitness"], agents["conformity"])[0, 1]
    ax.set(xlabel="verifier fitness", ylabel="conformity (agreement with consensus)",
           title=f"Conformity tracks fitness (r = {r:.2f})")
    lim = [0, 1]
    ax.plot(lim, lim, color="0.7", lw=0.8, ls="--")
    return fig


def distance_matrix(distance: pd.DataFrame, agents: pd.DataFrame, seed: int):
    """Fig. 1b: behavioural distance between agents of one population, ordered by score."""
    d = distance[distance["seed"] == seed].pivot(index="i", columns="j", values="distance")
    order = agents[agents["seed"] == seed].sort_values("score", ascending=False)["agent"].to_numpy()
    fig, ax = plt.subplots(figsize=(3.6, 3.0))
    sns.heatmap(d.loc[order, order], ax=ax, cmap="viridis", vmin=0, vmax=1, square=True,
                cbar_kws={"label": "disagreement rate"}, xticklabels=False, yticklabels=False)
    ax.set(xlabel="agent (by score)", ylabel="agent (by score)", title=f"Behavioural distance (seed {seed})")
    return fig


def selection_vs_lambda(selection: pd.DataFrame, metric: str, ylabel: str):
    """Fig. 1c/d: a property of the selected parents as λ grows, QD against top-P (CI over seeds)."""
    fig, ax = plt.subplots(figsize=(3.4, 3.0))
    table = stats.mean_ci_table(selection, ["method", "lam"], value=metric)
    for method, label in (("top_p", "top-P"), ("qd", "QD")):
        t = table[table["method"] == method]
        ax.plot(t["lam"], t["mean"], marker="o", ms=3, color=colour(method), label=label)
        ax.fill_between(t["lam"], t["lo"], t["hi"], color=colour(method), alpha=0.25, lw=0)
    ax.set(xlabel="λ (similarity penalty)", ylabel=ylabel)
    ax.legend()
    return fig


def pairs_panel(pairs: pd.DataFrame, distance: pd.DataFrame, seed: int):
    """Fig. 1e: complementary pairs of one population's QD parents, most distant first."""
    p = pairs[pairs["seed"] == seed].sort_values("rank")
    parents = list(dict.fromkeys(p["a"].tolist() + p["b"].tolist()))
    d = distance[distance["seed"] == seed].pivot(index="i", columns="j", values="distance").loc[parents, parents]
    fig, ax = plt.subplots(figsize=(3.6, 3.0))
    sns.heatmap(d, ax=ax, cmap="viridis", vmin=0, vmax=1, square=True, annot=True, fmt=".2f",
                annot_kws={"size": 6}, cbar_kws={"label": "disagreement rate"})
    for _, r in p.iterrows():
        i, j = parents.index(r["a"]), parents.index(r["b"])
        ax.text(j + 0.5, i + 0.85, f"#{int(r['rank']) + 1}", ha="center", va="center", color="w", fontsize=6)
    ax.set(xlabel="parent", ylabel="parent", title=f"Complementary pairs (seed {seed}); #k = pair rank")
    return fig


def consensus_vs_mean(agents: pd.DataFrame):
    """S1a: accuracy of the population's consensus against its mean agent fitness, per population."""
    per = agents.groupby("seed").agg(mean_fitness=("fitness", "mean"), consensus_acc=("consensus_acc", "first"))
    fig, ax = plt.subplots(figsize=(3.4, 3.0))
    ax.scatter(per["mean_fitness"], per["consensus_acc"], color=colour("full"), s=16)
    ax.plot([0, 1], [0, 1], color="0.7", lw=0.8, ls="--")
    ax.set(xlabel="mean agent fitness", ylabel="consensus accuracy", title="Consensus vs the average agent")
    return fig


def tradeoff(selection: pd.DataFrame):
    """S1b: mean fitness against mean distance of the selected set along λ (QD), top-P as one point."""
    m = selection.groupby(["method", "lam"])[["mean_fitness", "mean_distance"]].mean().reset_index()
    fig, ax = plt.subplots(figsize=(3.4, 3.0))
    q = m[m["method"] == "qd"]
    ax.plot(q["mean_distance"], q["mean_fitness"], marker="o", ms=3, color=colour("qd"), label="QD (λ ↑ →)")
    t = m[m["method"] == "top_p"].iloc[0]
    ax.scatter([t["mean_distance"]], [t["mean_fitness"]], color=colour("top_p"), zorder=3, label="top-P")
    ax.set(xlabel="mean pairwise distance of parents", ylabel="mean fitness of parents", title="Quality-diversity trade-off")
    ax.legend()
    return fig


def panels(data: dict[str, pd.DataFrame]) -> list[tuple[str, str, object]]:
    """``(name, caption, figure)`` for every Fig. 1 and S1 panel."""
    seed = int(data["agents"]["seed"].min())
    return [
        ("fig1a_conformity_vs_fitness", "Conformity against verifier fitness for every synthetic agent",
         conformity_vs_fitness(data["agents"])),
        ("fig1b_behavioural_distance", "Behavioural distance matrix of one population, agents ordered by score",
         distance_matrix(data["distance"], data["agents"], seed)),
        ("fig1c_selection_score", "Mean selection score of the parents, QD vs top-P, as λ varies (95% CI over populations)",
         selection_vs_lambda(data["selection"], "mean_score", "mean score of parents")),
        ("fig1d_selection_diversity", "Mean pairwise behavioural distance of the parents, QD vs top-P, as λ varies",
         selection_vs_lambda(data["selection"], "mean_distance", "mean pairwise distance of parents")),
        ("fig1e_complementary_pairs", "Complementary pairs among one population's QD parents, ranked by distance",
         pairs_panel(data["pairs"], data["distance"], seed)),
        ("S1a_consensus_vs_mean", "Consensus accuracy against mean agent fitness, one point per population",
         consensus_vs_mean(data["agents"])),
        ("S1b_quality_diversity_tradeoff", "Fitness against diversity of the parents along the λ sweep",
         tradeoff(data["selection"])),
    ]


def draw_all(scale: str) -> list[str]:
    """Draw and save every Fig. 1 / S1 panel of ``scale`` from its data; return the panel names."""
    use_style()
    data = load_data(scale)
    files = [str(data_dir(scale, EXPERIMENT) / f"{t}.csv") for t in TABLES]
    names = []
    for name, caption, fig in panels(data):
        save_figure(fig, name, scale=scale, caption=caption, data=files,
                    config=str(config_path(EXPERIMENT, scale)), notebook=NOTEBOOK)
        plt.close(fig)
        names.append(name)
    return names


def stats_table(scale: str) -> pd.DataFrame:
    """Fig. 1 statistics: QD against top-P at every λ > 0, paired on the population (seed).

    One row per (λ, metric): n populations, the mean QD − top-P difference and its paired
    permutation p-value, plus each rule's mean with a 95 % bootstrap CI.
    """
    sel = load_data(scale)["selection"]
    rows = []
    for lam in sorted(sel["lam"].unique()):
        if lam == 0:
            continue  # identical sets by construction
        part = sel[sel["lam"] == lam]
        for metric in ("mean_score", "mean_distance"):
            cmp = stats.compare_to(part, group="method", reference="top_p", value=metric).iloc[0]
            qd = stats.bootstrap_ci(part.loc[part["method"] == "qd", metric])
            rows.append({"figure": "fig1c" if metric == "mean_score" else "fig1d", "lam": lam, "metric": metric,
                         "n": int(cmp["n"]), "qd_mean": qd[0], "qd_ci": f"[{qd[1]:.3f}, {qd[2]:.3f}]",
                         "effect (qd - top_p)": cmp["effect"], "p": cmp["p"], "test": cmp["test"]})
    return pd.DataFrame(rows)
