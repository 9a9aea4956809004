"""Fig. 1 and S1: the population operators on synthetic populations (data of notebook 01)."""
from __future__ import annotations

import numpy as np
import pandas as pd
import matplotlib.pyplot as plt
import seaborn as sns

from ..analysis import stats
from .style import REFERENCE_GREY, colour, line_kw, paired_difference_panel, save_figure, use_style
from ..core.paths import config_path, data_dir

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
    ax.scatter(agents["fitness"], agents["conformity"], s=10, alpha=0.5, color=REFERENCE_GREY, lw=0)
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


METHOD_LABEL = {"qd": "QD", "top_p": "top-P"}


def selection_vs_lambda(selection: pd.DataFrame, metric: str, ylabel: str):
    """Fig. 1c/d: a property of the selected parents as λ grows. (a) QD and top-P, mean over
    populations with a 95 % bootstrap band; (b) QD − top-P on the same population (dots), the mean
    difference and its bootstrap 95 % CI (band). At λ = 0 the two rules pick the same set."""
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(7.0, 3.0))
    table = stats.mean_ci_table(selection, ["method", "lam"], value=metric)
    for method in ("top_p", "qd"):
        t = table[table["method"] == method]
        a1.plot(t["lam"], t["mean"], **line_kw(method, ms=3.5, label=METHOD_LABEL[method]))
        if (t["n"] >= stats.MIN_CI_N).all():
            a1.fill_between(t["lam"], t["lo"], t["hi"], color=colour(method), alpha=0.2, lw=0)
    n = int(selection.groupby(["method", "lam"])["seed"].nunique().min())
    a1.set(xlabel="λ (similarity penalty of QD)", ylabel=ylabel)
    a1.set_title(f"(a) mean over populations (n = {n})" + (", 95 % CI" if n >= stats.MIN_CI_N else ""),
                 fontsize=8, loc="left")
    a1.legend()
    pts, summ = stats.paired_differences(selection, group="method", reference="top_p", value=metric, by=["lam"])
    pts["method"] = summ["method"] = "qd"
    paired_difference_panel(a2, pts, summ, group="method", order=["qd"], reference="top-P", x="lam",
                            ylabel=f"QD {ylabel}", xlabel="λ (similarity penalty of QD)", unit="population")
    a2.get_legend() and a2.get_legend().remove()
    a2.set_title("(b) " + a2.get_title(loc="left"), fontsize=7, loc="left")
    fig.tight_layout()
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
    ax.set(xlabel="parent", ylabel="parent")
    ax.set_title(f"Complementary pairs, population {seed}\n#k: pair rank (1 = most distant)", fontsize=8, loc="left")
    return fig


def consensus_vs_mean(agents: pd.DataFrame):
    """S1a: accuracy of the population's consensus against its mean agent fitness, per population."""
    per = agents.groupby("seed").agg(mean_fitness=("fitness", "mean"), consensus_acc=("consensus_acc", "first"))
    fig, ax = plt.subplots(figsize=(3.4, 3.0))
    ax.scatter(per["mean_fitness"], per["consensus_acc"], color=REFERENCE_GREY, s=16)
    ax.plot([0, 1], [0, 1], color="0.7", lw=0.8, ls="--")
    ax.set(xlabel="mean agent fitness", ylabel="consensus accuracy", title="Consensus vs the average agent")
    return fig


def tradeoff(selection: pd.DataFrame):
    """S1b: mean fitness against mean distance of the selected set along λ (QD, each point labelled
    with its λ), top-P as one point (mean over populations)."""
    m = selection.groupby(["method", "lam"])[["mean_fitness", "mean_distance"]].mean().reset_index()
    fig, ax = plt.subplots(figsize=(3.6, 3.0))
    q = m[m["method"] == "qd"].sort_values("lam")
    ax.plot(q["mean_distance"], q["mean_fitness"], **line_kw("qd", ms=3.5, label="QD, one point per λ"))
    # one label per cluster of points closer than 6 % of the axis ranges (small λ change nothing)
    span = np.array([np.ptp(m["mean_distance"]) or 1.0, np.ptp(m["mean_fitness"]) or 1.0])
    groups: list[list] = []
    for r in q.itertuples():
        xy = np.array([r.mean_distance, r.mean_fitness])
        if groups and np.all(np.abs(xy - groups[-1][0][1]) / span < 0.06):
            groups[-1].append((r.lam, xy))
        else:
            groups.append([(r.lam, xy)])
    for g in groups:
        lams = [l for l, _ in g]
        text = f"λ={lams[0]:g}" if len(lams) == 1 else f"λ={lams[0]:g}–{lams[-1]:g}"
        ax.annotate(text, g[-1][1], xytext=(5, -1), textcoords="offset points", fontsize=6, va="top", color=colour("qd"))
    t = m[m["method"] == "top_p"].iloc[0]
    ax.plot([t["mean_distance"]], [t["mean_fitness"]], **line_kw("top_p", ls="", ms=6, label="top-P (= QD at λ = 0)"), zorder=3)
    ax.set(xlabel="mean pairwise distance of parents", ylabel="mean fitness of parents", title="Quality-diversity trade-off")
    ax.legend(fontsize=7)
    return fig


def panels(data: dict[str, pd.DataFrame]) -> list[tuple[str, str, object]]:
    """``(name, caption, figure)`` for every Fig. 1 and S1 panel."""
    seed = int(data["agents"]["seed"].min())
    return [
        ("fig1a_conformity_vs_fitness", "Conformity against verifier fitness for every synthetic agent",
         conformity_vs_fitness(data["agents"])),
        ("fig1b_behavioural_distance", "Behavioural distance matrix of one population, agents ordered by score",
         distance_matrix(data["distance"], data["agents"], seed)),
        ("fig1c_selection_score", "Mean selection score of the parents as λ varies: (a) QD and top-P; (b) QD − top-P per population, mean and 95% CI",
         selection_vs_lambda(data["selection"], "mean_score", "mean score of parents")),
        ("fig1d_selection_diversity", "Mean pairwise behavioural distance of the parents as λ varies: (a) QD and top-P; (b) QD − top-P per population, mean and 95% CI",
         selection_vs_lambda(data["selection"], "mean_distance", "mean pairwise distance of parents")),
        ("fig1e_complementary_pairs", "Complementary pairs among one population's QD parents, ranked by distance",
         pairs_panel(data["pairs"], data["distance"], seed)),
        ("S1a_consensus_vs_mean", "Consensus accuracy against mean agent fitness, one point per population",
         consensus_vs_mean(data["agents"])),
        ("S1b_quality_diversity_tradeoff", "Mean fitness against mean pairwise distance of the parents: QD at each λ (labelled), top-P",
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
    """Fig. 1c/d statistics: QD against top-P at every λ > 0, paired on the population (seed).

    One row per (λ, metric): n populations, each rule's mean (QD with a 95 % bootstrap CI), the mean
    QD − top-P difference with its 95 % bootstrap CI and its paired sign-flip permutation p-value.
    """
    sel = load_data(scale)["selection"]
    sel = sel[sel["lam"] > 0]  # λ = 0: identical sets by construction
    rows = []
    for metric, fig in (("mean_score", "fig1c"), ("mean_distance", "fig1d")):
        _, summ = stats.paired_differences(sel, group="method", reference="top_p", value=metric, by=["lam"])
        for r in summ.itertuples():
            part = sel[sel["lam"] == r.lam]
            qd = stats.bootstrap_ci(part.loc[part["method"] == "qd", metric])
            ok = r.n >= stats.MIN_CI_N
            rows.append({"figure": fig, "lam": r.lam, "metric": metric, "n": int(r.n),
                         "qd_mean": qd[0], "qd_ci95": f"[{qd[1]:.3f}, {qd[2]:.3f}]" if ok else f"none (n = {r.n})",
                         "top_p_mean": float(part.loc[part["method"] == "top_p", metric].mean()),
                         "effect (qd - top_p)": r.mean,
                         "effect ci95": f"[{r.lo:.4f}, {r.hi:.4f}]" if ok else f"none (n = {r.n})",
                         "p": r.p, "test": r.test})
    return pd.DataFrame(rows)
