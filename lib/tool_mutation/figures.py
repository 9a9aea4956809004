"""Fig. 2 (tool mutation) and its SI panels, drawn from ``data/<scale>/tool_mutation/`` alone.

Panels: ``fig2a`` held-out loss over training per arm (mean over seeds, 95 % CI (t)), ``fig2b`` the
final held-out loss: raw values per seed and the paired differences between arms (95 % CI (sign-flip
inversion), paired sign-flip p), ``S2a`` cumulative promotions, ``S2b`` what the best mutant offered
over the current version each round, ``S2c`` the lineage of one seed's variants.
"""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from lib.core import stats
from lib.core.paths import config_path, data_dir
from lib.core.rows import read_rows
from lib.style import (DiffLayout, Panel, colour, dots_with_mean, line_kw, mean_curve, paired_difference_panel, repo_path,
                    save_panels, use_style)

EXPERIMENT = "tool_mutation"
NOTEBOOK = "02_tool_mutation.ipynb"
ARM_ORDER = ["sgd", "mutate_promote", "random_promote"]


def _arms(df: pd.DataFrame) -> list[str]:
    present = set(df.arm)
    return [a for a in ARM_ORDER if a in present] + sorted(present - set(ARM_ORDER))


def load_data(scale: str) -> dict[str, pd.DataFrame]:
    """``{"rows": tidy rows, "lineage": lineage tables}`` of the run at ``scale``."""
    folder = data_dir(scale, EXPERIMENT)
    cmd = f"python -m lib.experiment configs/{EXPERIMENT}/{scale}.yaml"
    if not (folder / "manifest.json").is_file():
        raise FileNotFoundError(f"{folder / 'manifest.json'} is missing: run `{cmd}` first")
    rows = read_rows(folder)
    lin_files = sorted((folder / "lineage").glob("*_s*.csv"))
    if not lin_files:
        raise FileNotFoundError(f"no lineage tables in {folder / 'lineage'}: run `{cmd}` first")
    lineage = pd.concat([pd.read_csv(f) for f in lin_files], ignore_index=True)
    return {"rows": rows, "lineage": lineage}


def final_heldout(rows: pd.DataFrame) -> pd.DataFrame:
    """One row per (arm, seed): the held-out loss at the last step."""
    h = rows[rows.metric == "heldout_loss"]
    return h[h.step == h.step.max()][["arm", "seed", "value"]].reset_index(drop=True)


def _band(ax, df: pd.DataFrame, arm: str, label: str | None = None) -> None:
    """Mean over seeds per step of ``df``'s ``value``, with its 95 % CI (t) band."""
    t = stats.mean_ci_table(df, ["step"])
    mean_curve(ax, t, "step", arm, band_alpha=0.2, label=label or arm, lw=1.4, markevery=max(1, len(t) // 8))


def draw_heldout(rows: pd.DataFrame) -> plt.Figure:
    """Held-out MSE over SGD steps: mean over seeds, 95 % CI (t) band, log scale."""
    use_style()
    fig, ax = plt.subplots(figsize=(4.2, 3.0))
    h = rows[(rows.metric == "heldout_loss") & (rows.step > 0)]
    for arm in _arms(h):
        _band(ax, h[h.arm == arm], arm)
    ax.set(xlabel="SGD step", ylabel="held-out MSE", yscale="log")
    ax.set_title(f"Held-out loss during training\nmean over {h.seed.nunique()} seeds, band: {stats.T_CI}", fontsize=8)
    ax.legend()
    return fig


COMPARISONS = (("mutate_promote", "sgd"), ("random_promote", "sgd"), ("mutate_promote", "random_promote"))


def final_comparisons(fin: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The Fig. 2b comparisons of :data:`COMPARISONS` present in ``fin`` (one row per arm and seed),
    paired on seed: ``(points, summary)`` of :func:`lib.core.stats.paired_differences` with a
    ``comparison`` column ``"<arm> − <reference>"``."""
    pts, summ = [], []
    arms = set(fin["arm"])
    for arm, ref in COMPARISONS:
        if not {arm, ref} <= arms:
            continue
        p, s_ = stats.paired_differences(fin[fin["arm"].isin([arm, ref])], group="arm", reference=ref)
        pts.append(p.assign(comparison=f"{arm} − {ref}"))
        summ.append(s_.assign(comparison=f"{arm} − {ref}"))
    if not summ:
        return pd.DataFrame(columns=["arm", "seed", "diff", "comparison"]), pd.DataFrame(
            columns=["arm", "reference", "n", "mean", "lo", "hi", "p", "test", "comparison"])
    return pd.concat(pts, ignore_index=True), pd.concat(summ, ignore_index=True)


def draw_final(rows: pd.DataFrame) -> plt.Figure:
    """Final held-out MSE. (a) Per arm, one dot per seed (grey lines join a seed's arms), the mean and
    its 95 % CI (t). (b) The paired differences on the same seed (dots), their mean, 95 % CI
    (sign-flip inversion) and paired sign-flip p: each arm minus ``sgd``, and ``mutate_promote`` minus
    ``random_promote``. < 0: lower loss than the reference."""
    use_style()
    fin = final_heldout(rows)
    arms = _arms(fin)
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(7.4, 3.3), gridspec_kw={"width_ratios": [0.8, 1.2]})
    wide = fin.pivot_table(index="seed", columns="arm", values="value")[arms]
    for _, r in wide.iterrows():
        a1.plot(np.arange(len(arms)), r.to_numpy(), color="0.8", lw=0.5, zorder=1)
    for i, arm in enumerate(arms):
        m, lo, hi = stats.t_ci(wide[arm])
        dots_with_mean(a1, i, wide[arm], arm, (m, lo, hi), s=9, jitter=0)
    a1.set_xticks(range(len(arms)), arms, rotation=25, ha="right", fontsize=7)
    a1.set_ylabel("final held-out MSE")
    a1.set_title(f"(a) per seed (n = {len(wide)});\nmean, {stats.T_CI}", fontsize=7, loc="left", pad=16)
    pts, summ = final_comparisons(fin)
    order = list(dict.fromkeys(summ["comparison"]))
    paired_difference_panel(a2, pts, summ.drop(columns="reference"), group="comparison", order=order,
                            reference="reference", ylabel="final held-out MSE",
                            layout=DiffLayout(look=dict(zip(summ["comparison"], summ["arm"]))))
    a2.set_ylabel("final held-out MSE, arm − reference\n(< 0: lower loss than the reference)")
    a2.set_title("(b) " + a2.get_title(loc="left"), fontsize=7, loc="left", pad=21)
    fig.tight_layout()
    return fig


def draw_promotions(rows: pd.DataFrame) -> plt.Figure:
    """Cumulative promotions of a mutant (not the current version) per mutation round."""
    use_style()
    p = rows[rows.metric == "promotions"]
    fig, ax = plt.subplots(figsize=(4.2, 3.0))
    for arm in _arms(p):
        _band(ax, p[p.arm == arm], arm)
    ax.set(xlabel="SGD step", ylabel="cumulative promotions")
    ax.set_title(f"Mutants installed; mean over n = {p.seed.nunique()} seeds, band: {stats.T_CI}", fontsize=8)
    ax.legend()
    return fig


def draw_selection(rows: pd.DataFrame) -> plt.Figure:
    """Relative validation-loss gain of the best of the round's mutants over the current version,
    (current − best) / current: > 0 means the best mutant has the lower loss. Mean over seeds, 95 % CI (t)."""
    use_style()
    w = rows[rows.metric.isin(["current_val_loss", "best_variant_val_loss"])].pivot_table(
        index=["arm", "seed", "step", "tool"], columns="metric", values="value").reset_index()
    w["value"] = (w.current_val_loss - w.best_variant_val_loss) / w.current_val_loss
    fig, ax = plt.subplots(figsize=(4.2, 3.0))
    for arm in _arms(w):
        _band(ax, w[w.arm == arm], arm)
    ax.axhline(0, color="k", lw=0.6)
    ax.set(xlabel="SGD step", ylabel="(current − best mutant) / current\nvalidation loss")
    ax.set_title(f"What the best mutant offers (validation batch), n = {w.seed.nunique()} seeds\n"
                 f"> 0: the best mutant has the lower loss; mean, band: {stats.T_CI}", fontsize=8)
    ax.legend()
    return fig


def draw_lineage(lineage: pd.DataFrame, seed: int | None = None) -> plt.Figure:
    """Lineage of one seed: every variant (grey dots, drawn on top) by the round it was created in and its
    depth; the installed chain in colour (hollow markers joined parent → child), so the variants behind
    an installed one stay visible."""
    use_style()
    seed = int(lineage.seed.min()) if seed is None else seed
    lin = lineage[lineage.seed == seed]
    arms = _arms(lin)
    fig, axes = plt.subplots(1, len(arms), figsize=(4.0 * len(arms), 3.2), sharey=True, squeeze=False)
    for ax, arm in zip(axes[0], arms):
        d = lin[lin.arm == arm].set_index("id")
        chain = d[d.ever_current].sort_values("generation")
        for vid, r in chain.iterrows():
            if isinstance(r.parent_id, str) and r.parent_id in d.index:
                par = d.loc[r.parent_id]
                ax.plot([par.created_round, r.created_round], [par.generation, r.generation],
                        color=colour(arm), lw=1.0, zorder=1)
        ax.scatter(chain.created_round, chain.generation, s=30, facecolor="none", edgecolor=colour(arm),
                   marker=line_kw(arm)["marker"], lw=1.0, zorder=2, label="installed")
        ax.scatter(d.created_round, d.generation, s=5, color="0.4", lw=0, zorder=3,
                   label=f"variants ({len(d)} in all; a round's share one dot)")
        ax.set(xlabel="round created", title=f"{arm}, seed {seed}")
        ax.legend(loc="upper left", fontsize=7)
    axes[0][0].set_ylabel("generation (lineage depth)")
    fig.tight_layout()
    return fig


PANELS = [
    Panel("fig2a_tool_mutation_heldout", lambda d: draw_heldout(d["rows"]),
          f"Held-out MSE over SGD steps per arm (mean over seeds, {stats.T_CI})."),
    Panel("fig2b_tool_mutation_final", lambda d: draw_final(d["rows"]),
          f"Final held-out MSE: (a) per arm and seed, mean and {stats.T_CI}; (b) paired by seed, each arm minus "
          f"sgd and mutate_promote minus random_promote, mean difference, {stats.SIGN_FLIP_CI}, paired sign-flip p."),
    Panel("S2a_tool_mutation_promotions", lambda d: draw_promotions(d["rows"]),
          f"Cumulative number of mutants installed in place of the current encoder (mean over seeds, {stats.T_CI})."),
    Panel("S2b_tool_mutation_selection", lambda d: draw_selection(d["rows"]),
          "Relative validation-loss gain of each round's best mutant over the current encoder, "
          f"(current − best) / current: > 0 means the mutant is better (mean over seeds, {stats.T_CI})."),
    Panel("S2c_tool_mutation_lineage", lambda d: draw_lineage(d["lineage"]),
          "Lineage of one seed's encoder variants (grey dots, on top); coloured, hollow: the chain that was "
          "installed.", source="lineage"),
]


def draw_all(scale: str) -> list[str]:
    """Draw and save every Fig. 2 and S2 panel of ``scale``; returns their names."""
    folder = data_dir(scale, EXPERIMENT)
    cfg = config_path(EXPERIMENT, scale)
    sources = {"rows": ([repo_path(f) for f in sorted(folder.glob("*_s*.csv"))], cfg),
               "lineage": ([repo_path(f) for f in sorted((folder / "lineage").glob("*_s*.csv"))], cfg)}
    return save_panels(PANELS, load_data(scale), scale=scale, sources=sources, notebook=NOTEBOOK)


def stats_table(scale: str) -> pd.DataFrame:
    """Fig. 2b statistics: final held-out MSE of every arm against ``sgd`` and ``random_promote``,
    paired on seed: n, the arm's mean and 95 % CI (t), the mean difference arm − reference with its
    95 % CI (sign-flip inversion), and the sign-flip p (text, :func:`lib.core.stats.format_p`;
    n/a with one seed)."""
    fin = final_heldout(load_data(scale)["rows"])
    cis = {a: (*stats.t_ci(g["value"]), int(g["value"].notna().sum())) for a, g in fin.groupby("arm")}
    parts = [stats.paired_differences(fin, group="arm", reference=r)[1] for r in ("sgd", "random_promote") if r in cis]
    t = pd.concat(parts, ignore_index=True)
    return pd.DataFrame({
        "figure": "fig2b", "metric": "final held-out MSE", "arm": t["arm"], "reference": t["reference"],
        "n": t["n"], "mean": t["arm"].map(lambda a: cis[a][0]),
        stats.T_CI: t["arm"].map(lambda a: stats.format_ci(cis[a][1], cis[a][2], cis[a][3])),
        "effect (arm - ref)": t["mean"],
        f"effect {stats.SIGN_FLIP_CI}": [stats.format_ci(lo, hi, n) for lo, hi, n in zip(t["lo"], t["hi"], t["n"])],
        "p": t["p"].map(stats.format_p), "test": t["test"]})
