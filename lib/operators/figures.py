"""Fig. 1 and S1: the population operators on synthetic populations (data of notebook 01).

Populations (``seed``) are the unit of replication: (a)-panels show each rule's mean over populations
with its 95 % CI (t); (b)-panels QD − top-P on the same population with the 95 % CI (sign-flip
inversion) and the paired sign-flip p.
"""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns

from lib.core import stats
from lib.core.config import load_yaml
from lib.core.paths import config_path, data_dir
from lib.operators.ops import select_parents
from lib import style
from lib.style import (DiffLayout, REFERENCE_GREY, Panel, colour, line_kw, mean_curve, paired_difference_panel, repo_path,
                    save_panels)

EXPERIMENT = "operators"
NOTEBOOK = "01_operators.ipynb"
TABLES = ("agents", "selection", "pairs", "distance")


def load_data(scale: str) -> dict:
    """The tables of ``data/<scale>/operators/`` and ``"config"`` (its settings: ``lam``,
    ``n_parents``); a missing file names the command that makes it."""
    folder = data_dir(scale, EXPERIMENT)
    out = {}
    for t in TABLES:
        p = folder / f"{t}.csv"
        if not p.is_file():
            raise FileNotFoundError(
                f"{p} is missing: run `python -m lib.experiment configs/{EXPERIMENT}/{scale}.yaml` "
                f"or notebook {NOTEBOOK} at scale {scale!r}")
        out[t] = pd.read_csv(p)
    out["config"] = load_yaml(config_path(EXPERIMENT, scale))
    return out


def conformity_vs_fitness(agents: pd.DataFrame):
    """Fig. 1a: each agent's conformity against its verifier fitness, all populations."""
    fig, ax = plt.subplots(figsize=(3.4, 3.0))
    ax.scatter(agents["fitness"], agents["conformity"], s=10, alpha=0.5, color=REFERENCE_GREY, lw=0)
    r = np.corrcoef(agents["fitness"], agents["conformity"])[0, 1]
    n, pops = len(agents), agents["seed"].nunique()
    ax.set(xlabel="verifier fitness", ylabel="conformity\n(agreement with consensus)")
    ax.set_title(f"Conformity tracks fitness: Pearson r = {r:.2f}\nn = {n} agents of {pops} populations "
                 "(one dot each; no interval)", fontsize=8)
    lim = [0, 1]
    ax.plot(lim, lim, color="0.7", lw=0.8, ls="--")
    return fig


def distance_matrix(distance: pd.DataFrame, agents: pd.DataFrame, seed: int):
    """Fig. 1b: behavioural distance between the agents of one population, ordered by selection
    score, the best-scoring agent first (top row, left column); tick labels are agent indices (every other
    agent's, so that they stay legible)."""
    d = distance[distance["seed"] == seed].pivot(index="i", columns="j", values="distance")
    order = agents[agents["seed"] == seed].sort_values(["score", "agent"], ascending=[False, True])["agent"].to_numpy()
    fig, ax = plt.subplots(figsize=(4.0, 3.5))
    sns.heatmap(d.loc[order, order], ax=ax, cmap="viridis", vmin=0, vmax=1, square=True,
                cbar_kws={"label": "disagreement rate"}, xticklabels=2, yticklabels=2)
    ax.tick_params(labelsize=6.2, length=0)
    ax.set_xlabel("agent, by score: best left → worst right", fontsize=8)
    ax.set_ylabel("agent, by score: best top → worst bottom", fontsize=8)
    ax.set_title(f"Behavioural distance, population {seed}", fontsize=9)
    return fig


METHOD_LABEL = {"qd": "QD", "top_p": "top-P"}


def selection_vs_lambda(selection: pd.DataFrame, metric: str, ylabel: str):
    """Fig. 1c/d: a property of the selected parents as λ grows. (a) QD and top-P, mean over
    populations with a 95 % CI (t) band; (b) QD − top-P on the same population (dots), the mean
    difference and its 95 % CI (sign-flip inversion, band). At λ = 0 the two rules pick the same set."""
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(7.0, 3.0))
    table = stats.mean_ci_table(selection, ["method", "lam"], value=metric, bounds=(0.0, 1.0))  # scores, distances
    for method in ("top_p", "qd"):
        mean_curve(a1, table[table["method"] == method], "lam", method, band_alpha=0.2, label=METHOD_LABEL[method])
    n = int(selection.groupby(["method", "lam"])["seed"].nunique().min())
    a1.set(xlabel="λ (similarity penalty of QD)", ylabel=ylabel)
    a1.set_title(f"(a) mean over populations (n = {n})" + (f",\n{stats.BOUNDED_T_CI}" if n >= stats.MIN_T_N else ""),
                 fontsize=8, loc="left")
    a1.legend()
    pts, summ = stats.paired_differences(selection, group="method", reference="top_p", value=metric, by=["lam"])
    pts["method"] = summ["method"] = "qd"
    paired_difference_panel(a2, pts, summ, group="method", order=["qd"], reference="top-P", ylabel=f"QD {ylabel}",
                            layout=DiffLayout(x="lam", xlabel="λ (similarity penalty of QD)", unit="population"))
    a2.get_legend() and a2.get_legend().remove()
    a2.set_title("(b) " + a2.get_title(loc="left"), fontsize=7, loc="left")
    fig.tight_layout()
    return fig


def qd_parents(agents: pd.DataFrame, distance: pd.DataFrame, seed: int, *, n_parents: int, lam: float) -> list[int]:
    """The QD parents of population ``seed`` at ``lam``, in selection order, recomputed from its
    scores and distances with :func:`lib.operators.ops.select_parents` (the pairs table keeps only
    the pairs, in which a parent may not appear)."""
    a = agents[agents["seed"] == seed].sort_values("agent")
    d = distance[distance["seed"] == seed].pivot(index="i", columns="j", values="distance")
    d = d.loc[a["agent"], a["agent"]].to_numpy()
    idx = select_parents(a["score"].to_numpy(), d, n_parents, keys=a["answer_key"].tolist(), diversity=True, lam=lam)
    return [int(a["agent"].iloc[i]) for i in idx]


def pairs_panel(pairs: pd.DataFrame, distance: pd.DataFrame, seed: int, agents: pd.DataFrame | None = None, *,
                n_parents: int | None = None, lam: float | None = None):
    """Fig. 1e: all QD parents of one population (λ = ``lam``, recomputed with :func:`qd_parents`
    from ``agents``) and their pairwise distances; the complementary pairs are numbered, most distant
    first, and a parent in no pair is named in the title. Without ``agents``, ``n_parents`` and ``lam``
    only the parents that appear in a pair can be shown, and the title says so."""
    p = pairs[pairs["seed"] == seed].sort_values("rank")
    paired_order = list(dict.fromkeys(p["a"].tolist() + p["b"].tolist()))
    whole = agents is not None and n_parents is not None and lam is not None
    parents = qd_parents(agents, distance, seed, n_parents=n_parents, lam=lam) if whole else paired_order
    paired = set(paired_order)
    if not paired <= set(parents):
        raise ValueError(f"pairs of population {seed} ({sorted(paired)}) are not among its QD parents "
                         f"{parents} at λ = {lam}: the data and the config disagree")
    d = distance[distance["seed"] == seed].pivot(index="i", columns="j", values="distance").loc[parents, parents]
    fig, ax = plt.subplots(figsize=(3.8, 3.2))
    sns.heatmap(d, ax=ax, cmap="viridis", vmin=0, vmax=1, square=True, annot=True, fmt=".2f",
                annot_kws={"size": 6.2}, cbar_kws={"label": "disagreement rate"})
    for _, r in p.iterrows():
        i, j = parents.index(r["a"]), parents.index(r["b"])
        ax.text(j + 0.5, i + 0.85, f"#{int(r['rank']) + 1}", ha="center", va="center", color="w", fontsize=6.2)
    ax.set(xlabel="parent (selection order)", ylabel="parent (selection order)")
    unpaired = [a for a in parents if a not in paired]
    note = f"; in no pair: {', '.join(map(str, unpaired))}" if unpaired else ""
    head = (f"Population {seed}: its {len(parents)} QD parents (λ = {lam:g}){note}" if whole
            else f"Population {seed}: the QD parents in a pair")
    ax.set_title(f"{head}\n#k: the k-th most distant of {len(p)} pairs", fontsize=8, loc="left")
    return fig


def consensus_vs_mean(agents: pd.DataFrame):
    """S1a: accuracy of the population's consensus against its mean agent fitness, per population."""
    per = agents.groupby("seed").agg(mean_fitness=("fitness", "mean"), consensus_acc=("consensus_acc", "first"))
    fig, ax = plt.subplots(figsize=(3.4, 3.0))
    ax.scatter(per["mean_fitness"], per["consensus_acc"], color=REFERENCE_GREY, s=16)
    ax.plot([0, 1], [0, 1], color="0.7", lw=0.8, ls="--")
    ax.set(xlabel="mean agent fitness", ylabel="consensus accuracy")
    ax.set_title(f"Consensus vs the average agent\nn = {len(per)} populations (one dot each; no interval; "
                 "dashed: equal)", fontsize=8)
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
        ax.annotate(text, g[-1][1], xytext=(5, -1), textcoords="offset points", fontsize=6.2, va="top", color=colour("qd"))
    t = m[m["method"] == "top_p"].iloc[0]
    ax.plot([t["mean_distance"]], [t["mean_fitness"]], **line_kw("top_p", ls="", ms=6, label="top-P (= QD at λ = 0)"), zorder=3)
    ax.set(xlabel="mean pairwise distance of parents", ylabel="mean fitness of parents", title="Quality-diversity trade-off")
    ax.legend(fontsize=7)
    return fig


def _first_seed(data) -> int:
    return int(data["agents"]["seed"].min())


def _pairs(data):
    cfg = data["config"]
    return pairs_panel(data["pairs"], data["distance"], _first_seed(data), data["agents"],
                       n_parents=int(cfg["n_parents"]), lam=float(cfg["lam"]))


_PAIRED = f"(b) QD − top-P on the same population, mean and {stats.SIGN_FLIP_CI} (band; none with n < 6)"
PANELS = [
    Panel("fig1a_conformity_vs_fitness", lambda d: conformity_vs_fitness(d["agents"]),
          "Conformity against verifier fitness for every synthetic agent"),
    Panel("fig1b_behavioural_distance", lambda d: distance_matrix(d["distance"], d["agents"], _first_seed(d)),
          "Behavioural distance matrix of the first population, agents ordered by selection score (best first)"),
    Panel("fig1c_selection_score",
          lambda d: selection_vs_lambda(d["selection"], "mean_score", "mean score of parents"),
          f"Mean selection score of the parents as λ varies: (a) QD and top-P, mean over populations and "
          f"{stats.BOUNDED_T_CI}; {_PAIRED}"),
    Panel("fig1d_selection_diversity",
          lambda d: selection_vs_lambda(d["selection"], "mean_distance", "mean pairwise distance of parents"),
          f"Mean pairwise behavioural distance of the parents as λ varies: (a) QD and top-P, mean over "
          f"populations and {stats.BOUNDED_T_CI}; {_PAIRED}"),
    Panel("fig1e_complementary_pairs", _pairs,
          "All QD parents of the first population (at the config's λ) with their pairwise distances; the "
          "complementary pairs numbered, most distant first"),
    Panel("S1a_consensus_vs_mean", lambda d: consensus_vs_mean(d["agents"]),
          "Consensus accuracy against mean agent fitness, one point per population"),
    Panel("S1b_quality_diversity_tradeoff", lambda d: tradeoff(d["selection"]),
          "Mean fitness against mean pairwise distance of the parents: QD at each λ (labelled), top-P"),
]


def draw_panel(name: str, data: dict):
    """The saved panel ``name`` of :data:`PANELS` drawn from ``data`` (:func:`load_data`) exactly as
    :func:`draw_all` saves it: what notebook 01 shows under that name."""
    return style.draw_panel(PANELS, name, data)


def draw_all(scale: str) -> list[str]:
    """Draw and save every Fig. 1 / S1 panel of ``scale`` from its data; return the panel names."""
    files = [repo_path(data_dir(scale, EXPERIMENT) / f"{t}.csv") for t in TABLES]
    return save_panels(PANELS, load_data(scale), scale=scale, notebook=NOTEBOOK,
                       sources={"rows": (files, config_path(EXPERIMENT, scale))})


def stats_table(scale: str) -> pd.DataFrame:
    """Fig. 1c/d statistics: QD against top-P at every λ > 0, paired on the population (seed).

    One row per (λ, metric): n populations, each rule's mean (QD with its 95 % CI (t)), the mean
    QD − top-P difference with its 95 % CI (sign-flip inversion) and the paired sign-flip p (text,
    :func:`lib.core.stats.format_p`). A last row (S1a): the consensus's accuracy minus the mean
    agent fitness, paired on the population, in the same columns (``qd_mean``: the consensus).
    """
    data = load_data(scale)
    sel = data["selection"]
    sel = sel[sel["lam"] > 0]  # λ = 0: identical sets by construction
    rows = []
    for metric, fig in (("mean_score", "fig1c"), ("mean_distance", "fig1d")):
        _, summ = stats.paired_differences(sel, group="method", reference="top_p", value=metric, by=["lam"])
        for r in summ.itertuples():
            part = sel[sel["lam"] == r.lam]
            qd = part.loc[part["method"] == "qd", metric]
            m, lo, hi = stats.bounded_t_ci(qd)  # a score or a distance: in [0, 1]
            rows.append({"figure": fig, "lam": r.lam, "metric": metric, "n": int(r.n),
                         "qd_mean": m, f"qd {stats.BOUNDED_T_CI}": stats.format_ci(lo, hi, int(qd.notna().sum())),
                         "top_p_mean": float(part.loc[part["method"] == "top_p", metric].mean()),
                         "effect (qd - top_p)": r.mean,
                         f"effect {stats.SIGN_FLIP_CI}": stats.format_ci(r.lo, r.hi, int(r.n)),
                         "p": stats.format_p(r.p), "test": r.test})
    per = data["agents"].groupby("seed").agg(fitness=("fitness", "mean"), consensus=("consensus_acc", "first"))
    long = pd.concat([pd.DataFrame({"seed": per.index, "who": w, "value": per[c].to_numpy()})
                      for w, c in (("consensus", "consensus"), ("agents", "fitness"))])
    _, s1 = stats.paired_differences(long, group="who", reference="agents")
    r = s1.iloc[0]
    m, lo, hi = stats.bounded_t_ci(per["consensus"])  # an accuracy
    rows.append({"figure": "S1a", "lam": np.nan, "metric": "consensus_acc - mean fitness", "n": int(r.n),
                 "qd_mean": m, f"qd {stats.BOUNDED_T_CI}": stats.format_ci(lo, hi, len(per)),
                 "top_p_mean": float(per["fitness"].mean()), "effect (qd - top_p)": r["mean"],
                 f"effect {stats.SIGN_FLIP_CI}": stats.format_ci(r.lo, r.hi, int(r.n)),
                 "p": stats.format_p(r.p), "test": r.test})
    return pd.DataFrame(rows)
