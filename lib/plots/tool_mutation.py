"""Fig. 2 (tool mutation) and its SI panels, drawn from ``data/<scale>/tool_mutation/`` alone.

Panels: ``fig2a`` held-out loss over training per arm (mean and 95 % bootstrap CI over seeds),
``fig2b`` final held-out loss paired by seed with permutation-test p-values, ``S2a`` cumulative
promotions, ``S2b`` what the best mutant offered over the current version each round, ``S2c`` the
lineage of one seed's variants.
"""
from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from ..analysis import stats
from .style import colour, line_kw, save_figure, use_style
from ..core.paths import REPO_ROOT, config_path, data_dir
from ..core.rows import read_rows

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
    t = stats.mean_ci_table(df, ["step"])
    c = colour(arm)
    ax.plot(t.step, t["mean"], **line_kw(arm, label=label or arm, lw=1.4, ms=3.5,
                                          markevery=max(1, len(t) // 8)))
    if (t["n"] >= stats.MIN_CI_N).all():
        ax.fill_between(t.step, t.lo, t.hi, color=c, alpha=0.2, lw=0)


def draw_heldout(rows: pd.DataFrame) -> plt.Figure:
    """Held-out MSE over SGD steps: mean over seeds, 95 % bootstrap band, log scale."""
    use_style()
    fig, ax = plt.subplots(figsize=(4.2, 3.0))
    h = rows[(rows.metric == "heldout_loss") & (rows.step > 0)]
    for arm in _arms(h):
        _band(ax, h[h.arm == arm], arm)
    ax.set(xlabel="SGD step", ylabel="held-out MSE", yscale="log", title="Held-out loss during training")
    ax.legend()
    return fig


def draw_final(rows: pd.DataFrame, reference: str = "sgd") -> plt.Figure:
    """Final held-out MSE per arm, one line per seed (pairs), p-values of the paired test vs ``reference``."""
    use_style()
    fin = final_heldout(rows)
    arms = _arms(fin)
    fig, ax = plt.subplots(figsize=(4.2, 3.0))
    wide = fin.pivot_table(index="seed", columns="arm", values="value")[arms]
    xs = np.arange(len(arms))
    for _, r in wide.iterrows():
        ax.plot(xs, r.to_numpy(), color="0.75", lw=0.7, zorder=1)
    for i, arm in enumerate(arms):
        st = line_kw(arm)
        ax.scatter(np.full(len(wide), i), wide[arm], color=st["color"], marker=st["marker"], s=14, zorder=2)
        m, lo, hi = stats.bootstrap_ci(wide[arm])
        ci = wide[arm].notna().sum() >= stats.MIN_CI_N
        ax.errorbar(i + 0.18, m, yerr=[[m - lo], [hi - m]] if ci else None, color="k", fmt="D", ms=4,
                    capsize=3, zorder=3, label=("mean, 95 % CI" if ci else "mean (n < 3: no CI)") if i == 0 else None)
    labels = list(arms)
    if reference in wide:
        cmp = stats.compare_to(fin, group="arm", reference=reference).set_index("arm")
        labels = [f"{a}\np={cmp.loc[a, 'p']:.3g}" if a in cmp.index else a for a in arms]
    ax.set_xticks(xs, labels)
    ax.set(ylabel="final held-out MSE", title=f"Final loss; grey lines join a seed (n={len(wide)})")
    ax.legend(fontsize=7, loc="upper left")
    return fig


def draw_promotions(rows: pd.DataFrame) -> plt.Figure:
    """Cumulative promotions of a mutant (not the current version) per mutation round."""
    use_style()
    p = rows[rows.metric == "promotions"]
    fig, ax = plt.subplots(figsize=(4.2, 3.0))
    for arm in _arms(p):
        _band(ax, p[p.arm == arm], arm)
    ax.set(xlabel="SGD step", ylabel="cumulative promotions", title="Mutants installed")
    ax.legend()
    return fig


def draw_selection(rows: pd.DataFrame) -> plt.Figure:
    """Relative validation-loss gain of the best of the round's mutants over the current version."""
    use_style()
    w = rows[rows.metric.isin(["current_val_loss", "best_variant_val_loss"])].pivot_table(
        index=["arm", "seed", "step", "tool"], columns="metric", values="value").reset_index()
    w["value"] = (w.current_val_loss - w.best_variant_val_loss) / w.current_val_loss
    fig, ax = plt.subplots(figsize=(4.2, 3.0))
    for arm in _arms(w):
        _band(ax, w[w.arm == arm], arm)
    ax.axhline(0, color="k", lw=0.6)
    ax.set(xlabel="SGD step", ylabel="(current - best mutant) / current",
           title="What the best mutant offers (validation batch)")
    ax.legend()
    return fig


def draw_lineage(lineage: pd.DataFrame, seed: int | None = None) -> plt.Figure:
    """Lineage of one seed: every variant (grey) by round and depth; the installed chain in colour."""
    use_style()
    seed = int(lineage.seed.min()) if seed is None else seed
    lin = lineage[lineage.seed == seed]
    arms = _arms(lin)
    fig, axes = plt.subplots(1, len(arms), figsize=(4.0 * len(arms), 3.0), sharey=True, squeeze=False)
    for ax, arm in zip(axes[0], arms):
        d = lin[lin.arm == arm].set_index("id")
        ax.scatter(d.created_round, d.generation, s=4, color="0.7", label="variant")
        chain = d[d.ever_current].sort_values("generation")
        for vid, r in chain.iterrows():
            if isinstance(r.parent_id, str) and r.parent_id in d.index:
                par = d.loc[r.parent_id]
                ax.plot([par.created_round, r.created_round], [par.generation, r.generation],
                        color=colour(arm), lw=1.0)
        ax.scatter(chain.created_round, chain.generation, s=12, color=colour(arm), marker=line_kw(arm)["marker"],
                   label="installed")
        ax.set(xlabel="round created", title=f"{arm}, seed {seed}")
        ax.legend(loc="upper left")
    axes[0][0].set_ylabel("generation (lineage depth)")
    return fig


def draw_all(scale: str) -> list[str]:
    """Draw and save every Fig. 2 and S2 panel of ``scale``; returns their names."""
    data = load_data(scale)
    rows, lineage = data["rows"], data["lineage"]
    folder = data_dir(scale, EXPERIMENT)
    rel = lambda p: str(Path(p).relative_to(REPO_ROOT))  # noqa: E731
    shards_ = [rel(f) for f in sorted(folder.glob("*_s*.csv"))]
    lin_files = [rel(f) for f in sorted((folder / "lineage").glob("*_s*.csv"))]
    cfg = rel(config_path(EXPERIMENT, scale))
    panels = [
        ("fig2a_tool_mutation_heldout", draw_heldout(rows), shards_,
         "Held-out MSE over SGD steps per arm (mean, 95% bootstrap CI over seeds)."),
        ("fig2b_tool_mutation_final", draw_final(rows), shards_,
         "Final held-out MSE per arm, paired by seed; p: paired permutation test vs sgd."),
        ("S2a_tool_mutation_promotions", draw_promotions(rows), shards_,
         "Cumulative number of mutants installed in place of the current encoder."),
        ("S2b_tool_mutation_selection", draw_selection(rows), shards_,
         "Relative validation-loss gain of each round's best mutant over the current encoder."),
        ("S2c_tool_mutation_lineage", draw_lineage(lineage), lin_files,
         "Lineage of one seed's encoder variants; coloured: the chain that was installed."),
    ]
    names = []
    for name, fig, files, caption in panels:
        save_figure(fig, name, scale=scale, caption=caption, data=files, config=cfg, notebook=NOTEBOOK)
        plt.close(fig)
        names.append(name)
    return names


def stats_table(scale: str) -> pd.DataFrame:
    """Fig. 2b statistics: final held-out MSE of every arm against ``sgd`` and ``random_promote``,
    paired on seed: n, the arm's mean and 95 % bootstrap CI, the mean difference arm − reference with
    its 95 % bootstrap CI, and the sign-flip permutation p-value (NaN with one seed)."""
    fin = final_heldout(load_data(scale)["rows"])
    cis = {a: stats.bootstrap_ci(g["value"]) for a, g in fin.groupby("arm")}
    ns = fin.groupby("arm")["value"].count().to_dict()
    ok = lambda n: n >= stats.MIN_CI_N  # noqa: E731
    parts = [stats.paired_differences(fin, group="arm", reference=r)[1] for r in ("sgd", "random_promote") if r in cis]
    t = pd.concat(parts, ignore_index=True)
    return pd.DataFrame({
        "figure": "fig2b", "metric": "final held-out MSE", "arm": t["arm"], "reference": t["reference"],
        "n": t["n"], "mean": t["arm"].map(lambda a: cis[a][0]),
        "ci95": t["arm"].map(lambda a: f"[{cis[a][1]:.4f}, {cis[a][2]:.4f}]" if ok(ns[a]) else f"none (n = {ns[a]})"),
        "effect (arm - ref)": t["mean"],
        "effect ci95": [f"[{lo:.4f}, {hi:.4f}]" if ok(n) else f"none (n = {n})" for lo, hi, n in zip(t["lo"], t["hi"], t["n"])],
        "p": t["p"], "test": t["test"]})
