"""Fig. 4 (program search) and its SI panels, drawn from data/<scale>/program_search/.

Panels: fig4a held-out loss ratio per generation (mean and bootstrap CI across seeds), fig4b the
final generation per method and seed, fig4c compiled / first-jet / gate-blind bracket error
against the exact bracket, fig4d order accuracy of compiled vs gate-blind brackets; S4a mean
proposed held-out ratio per generation, S4b proposal-distribution state (mean norm, std),
S4c the execution budget per method.
"""
from __future__ import annotations

import json
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from .style import line_kw, paired_difference_panel, palette, save_figure, use_style
from ..core.paths import REPO_ROOT, config_path, data_dir
from ..analysis.stats import MIN_CI_N, bootstrap_ci, compare_to, mean_ci_table, paired_differences

EXPERIMENT = "program_search"
METHODS = ("corrected", "generic_first_jet", "full_jacobian", "gate_blind", "random_order",
           "no_feedback", "frozen_proposer", "direct_tournament")
FILES = {"rows": "v2_program_search.csv", "diagnostics": "v2_bracket_diagnostics.csv",
         "costs": "v2_program_costs.csv", "summary": "v2_program_summary.json"}
NOTEBOOK = "04_program_search.ipynb"


def load_data(scale: str) -> dict:
    """``{"rows", "diagnostics", "costs": DataFrame, "summary": dict, "files": [paths]}``."""
    folder = data_dir(scale, EXPERIMENT)
    out, files = {}, []
    for key, name in FILES.items():
        p = folder / name
        if not p.is_file():
            raise FileNotFoundError(
                f"{p} is missing: run `python -m lib.experiment configs/{EXPERIMENT}/{scale}.yaml` "
                f"(or notebook 04) first")
        out[key] = json.loads(p.read_text()) if p.suffix == ".json" else pd.read_csv(p)
        files.append(p)
    out["files"] = files
    return out


def _methods(df):
    return [m for m in METHODS if m in set(df["method"])]


# ----------------------------------------------------------------------------- tables
def final_table(rows: pd.DataFrame) -> pd.DataFrame:
    """Final generation per method: held-out ratio mean [95% bootstrap CI] over seeds, train best,
    mean proposed held-out ratio, best program depth."""
    last = rows[rows.generation == rows.generation.max()]
    out = []
    for m in _methods(last):
        g = last[last.method == m]
        mean, lo, hi = bootstrap_ci(g.heldout_loss_ratio.to_numpy())
        out.append({"method": m, "n_seeds": len(g), "heldout_mean": mean, "heldout_lo": lo, "heldout_hi": hi,
                    "train_best": g.train_best_loss_ratio.mean(),
                    "proposed_heldout": g.mean_proposed_heldout_loss_ratio.mean(),
                    "best_depth": g.best_program_depth.mean()})
    return pd.DataFrame(out)


def bracket_table(diags: pd.DataFrame) -> pd.DataFrame:
    """Per predictor: max and median |bracket - exact bracket| over probes, and order accuracy
    (prediction 'reverse' vs the actual loss order) on non-tie probes."""
    nt = diags[diags.non_tie == 1]
    rows = [{"predictor": "compiled (minimal signature)", "max_abs_error": diags.compiled_error.max(),
             "median_abs_error": diags.compiled_error.median(),
             "order_accuracy": nt.compiled_correct_actual_order.mean()},
            {"predictor": "first jet", "max_abs_error": diags.first_jet_error.max(),
             "median_abs_error": diags.first_jet_error.median(), "order_accuracy": np.nan},
            {"predictor": "gate-blind", "max_abs_error": diags.blind_error.max(),
             "median_abs_error": diags.blind_error.median(),
             "order_accuracy": nt.blind_correct_actual_order.mean()}]
    return pd.DataFrame(rows).assign(probes=len(diags), non_tie=len(nt))


def budget_table(costs: pd.DataFrame) -> pd.DataFrame:
    """Per method (mean over seeds): training executions, primitive field evaluations, bracket
    predictions, held-out executions over all checkpoints, diagnostic executions."""
    cols = ["training_program_executions", "training_primitive_field_evaluations",
            "prediction_score_count", "test_program_executions_all_checkpoints", "diagnostic_program_executions"]
    t = costs.groupby("method")[cols].mean()
    return t.loc[_methods(costs)].reset_index()


def paired_vs_corrected(rows: pd.DataFrame) -> pd.DataFrame:
    """Final held-out ratio: each method against ``corrected``, paired on seed (effect = method -
    corrected; positive means worse than corrected)."""
    last = rows[rows.generation == rows.generation.max()]
    return compare_to(last, group="method", reference="corrected", pair_on="seed", value="heldout_loss_ratio")


# ----------------------------------------------------------------------------- panels
def _band(ax, t: pd.DataFrame, x: str, methods, band: bool = True):
    """One line per method in its fixed style (mean over seeds); band: 95 % CI when n ≥ 3."""
    for m in methods:
        g = t[t.method == m].sort_values(x)
        ax.plot(g[x], g["mean"], **line_kw(m, ms=3.5, lw=1.2))
        if band and (g["n"] >= MIN_CI_N).all():
            ax.fill_between(g[x], g["lo"], g["hi"], color=line_kw(m)["color"], alpha=.12, lw=0)


def _curves_and_paired(rows: pd.DataFrame, column: str, ylabel: str, short: str, what: str):
    """(a) mean over seeds of ``column`` per generation, one line per method; (b) at the last
    generation, each method minus ``corrected`` on the same seed (dots), mean difference, 95 % CI, p."""
    methods = _methods(rows)
    t = mean_ci_table(rows, ["method", "generation"], column)
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(8.4, 3.9), gridspec_kw={"width_ratios": [1, 1.1]})
    _band(a1, t, "generation", methods, band=False)
    a1.set(xlabel="generation", ylabel=ylabel, xticks=sorted(rows.generation.unique()))
    a1.set_title(f"(a) {what}, mean over {rows.seed.nunique()} seeds", fontsize=8, loc="left", pad=16)
    last = rows[rows.generation == rows.generation.max()]
    pts, summ = paired_differences(last, group="method", reference="corrected", value=column)
    paired_difference_panel(a2, pts, summ, group="method", order=methods, reference="corrected",
                            ylabel=f"{short}, last generation")
    a2.set_title("(b) " + a2.get_title(loc="left") + "; > 0: worse than corrected", fontsize=7, loc="left", pad=16)
    fig.legend(*a1.get_legend_handles_labels(), loc="lower center", ncol=4, fontsize=7, frameon=False)
    fig.tight_layout(rect=(0, 0.1, 1, 1))
    return fig


def heldout_by_generation(rows: pd.DataFrame):
    """fig4a: held-out loss ratio of the best-so-far program. (a) per generation, mean over seeds;
    (b) last generation, each method minus ``corrected`` per seed, mean difference, 95 % CI, paired p."""
    use_style()
    return _curves_and_paired(rows, "heldout_loss_ratio", "held-out loss ratio L(z)/L(x)",
                              "held-out ratio", "best program on held-out states")


def final_by_seed(rows: pd.DataFrame):
    """fig4b: final-generation held-out ratio per method: one dot per seed, mean and 95% CI."""
    use_style()
    last = rows[rows.generation == rows.generation.max()]
    methods = _methods(last)
    pal = palette(methods)
    fig, ax = plt.subplots(figsize=(5.2, 3.2))
    for i, m in enumerate(methods):
        st = line_kw(m)
        v = last[last.method == m].heldout_loss_ratio.to_numpy()
        jitter = np.linspace(-.15, .15, len(v)) if len(v) > 1 else np.zeros(1)
        ax.scatter(i + jitter, v, s=10, color=pal[m], marker=st["marker"], alpha=.6)
        mean, lo, hi = bootstrap_ci(v)
        ci = len(v) >= MIN_CI_N
        ax.errorbar(i + .3, mean, yerr=[[mean - lo], [hi - mean]] if ci else None, fmt="D", ms=4, color=pal[m],
                    capsize=2, label=("mean, 95 % CI" if ci else "mean (n < 3: no CI)") if i == 0 else None)
    ax.set_xticks(range(len(methods)), methods, rotation=35, ha="right", fontsize=7)
    ax.set_ylabel("final held-out loss ratio")
    ax.set_title(f"dots: seeds (n = {last.seed.nunique()})", fontsize=8)
    ax.legend(fontsize=7)
    return fig


def bracket_errors(diags: pd.DataFrame):
    """fig4c: |predicted bracket - exact bracket| per probe for the compiled signature, the first
    jet and the gate-blind bracket (log scale; zeros shown at 1e-18)."""
    use_style()
    series = {"compiled": diags.compiled_error, "first jet": diags.first_jet_error, "gate-blind": diags.blind_error}
    fig, ax = plt.subplots(figsize=(4.2, 3.2))
    data = [np.maximum(v.to_numpy(), 1e-18) for v in series.values()]
    ax.boxplot(data, showfliers=True, flierprops={"ms": 2}, medianprops={"color": "k"})
    ax.set_xticks(range(1, 4), list(series))
    ax.set_yscale("log")
    ax.axhline(1e-9, color="k", lw=.6, ls="--", label="self-check tolerance (1e-9)")
    ax.set_ylabel("|bracket - exact bracket|")
    ax.legend(fontsize=6, loc="upper left")
    ax.set_title(f"{len(diags)} probes (test states 1-4)", fontsize=8)
    return fig


def order_accuracy(diags: pd.DataFrame):
    """fig4d: fraction of non-tie probes whose actual faster order the bracket sign predicts,
    compiled vs gate-blind, by program depth (mean ± 95% CI over probes)."""
    use_style()
    nt = diags[diags.non_tie == 1]
    fig, ax = plt.subplots(figsize=(4.2, 3.2))
    depths = sorted(nt.depth.unique())
    for k, (col, name, c) in enumerate((("compiled_correct_actual_order", "compiled", "corrected"),
                                        ("blind_correct_actual_order", "gate-blind", "gate_blind"))):
        stats = [bootstrap_ci(nt[nt.depth == d][col].to_numpy()) for d in depths]
        m = np.array([s[0] for s in stats])
        err = np.array([[s[0] - s[1], s[2] - s[0]] for s in stats]).T
        kw = line_kw(c)
        ax.errorbar(np.array(depths) + (k - .5) * .15, m, yerr=err, ms=4, capsize=2, color=kw["color"],
                    marker=kw["marker"], ls="-", label=f"{name} ({nt[col].mean():.3f} overall)")
    ax.axhline(.5, color="k", lw=.6, ls=":", label="chance (0.5)")
    ax.set(xlabel="program depth", ylabel="order accuracy (non-tie probes)", xticks=depths, ylim=(0, 1.05))
    ax.set_title(f"mean and 95 % bootstrap CI over the probes of each depth ({len(nt)} non-tie probes)", fontsize=7)
    ax.legend(fontsize=6.5, loc="lower left")
    return fig


def proposals_by_generation(rows: pd.DataFrame):
    """S4a: mean held-out loss ratio of all proposals of each generation (what the proposer
    learns). (a) per generation, mean over seeds; (b) last generation, each method minus
    ``corrected`` per seed, mean difference, 95 % CI, paired p."""
    use_style()
    return _curves_and_paired(rows, "mean_proposed_heldout_loss_ratio", "mean proposed held-out loss ratio",
                              "proposed held-out ratio", "all proposals of a generation")


def proposal_state(rows: pd.DataFrame):
    """S4b: the proposal distribution after each generation: |mean| and mean std (frozen_proposer
    stays at its start; no_feedback moves like the learners but from random candidates)."""
    use_style()
    fig, axes = plt.subplots(1, 2, figsize=(7.2, 3.5))
    for ax, col, lab in ((axes[0], "proposal_mean_change_norm", "‖proposal mean‖"),
                         (axes[1], "proposal_std_mean", "mean proposal std")):
        t = mean_ci_table(rows, ["method", "generation"], col)
        _band(ax, t, "generation", _methods(rows), band=False)
        ax.set(xlabel="generation", ylabel=lab, xticks=sorted(rows.generation.unique()))
    fig.legend(*axes[0].get_legend_handles_labels(), loc="lower center", ncol=4, fontsize=7, frameon=False)
    fig.tight_layout(rect=(0, 0.12, 1, 1))
    return fig


def budget(costs: pd.DataFrame):
    """S4c: executions per seed and method: training programs, held-out programs (all
    checkpoints), bracket predictions, diagnostic probes."""
    use_style()
    t = budget_table(costs).set_index("method")
    cols = {"training_program_executions": "training executions",
            "test_program_executions_all_checkpoints": "held-out executions",
            "prediction_score_count": "bracket predictions",
            "diagnostic_program_executions": "diagnostic executions"}
    fig, ax = plt.subplots(figsize=(7.4, 3.2))
    # kinds of execution, not methods: greys with hatches, so no method colour is reused here
    looks = [("0.25", None), ("0.55", None), ("0.85", "//"), ("white", "xx")]
    w = .8 / len(cols)
    x = np.arange(len(t))
    for k, ((col, label), (fc, hatch)) in enumerate(zip(cols.items(), looks)):
        ax.bar(x + (k - (len(cols) - 1) / 2) * w, t[col], w, color=fc, edgecolor="0.2", lw=.5, hatch=hatch, label=label)
    ax.set_xticks(x, t.index, rotation=35, ha="right", fontsize=7)
    ax.set(xlabel="", ylabel="count per seed (mean over seeds)")
    ax.legend(fontsize=6.5, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    return fig


PANELS = [
    ("fig4a_program_heldout", heldout_by_generation, "rows",
     "Held-out loss ratio of the best program: (a) per generation, mean over seeds; (b) last generation, "
     "each method minus corrected on the same seed, mean difference, 95% bootstrap CI, paired p."),
    ("fig4b_program_final", final_by_seed, "rows",
     "Final-generation held-out loss ratio per method: seeds (dots), mean and 95% bootstrap CI."),
    ("fig4c_program_bracket_error", bracket_errors, "diagnostics",
     "Compiled, first-jet and gate-blind bracket error against the exact (full-Jacobian) bracket."),
    ("fig4d_program_order_accuracy", order_accuracy, "diagnostics",
     "Order accuracy of the compiled vs gate-blind bracket on non-tie probes, by program depth."),
    ("S4a_program_proposals", proposals_by_generation, "rows",
     "Mean held-out loss ratio of each generation's proposals: (a) per generation; (b) last generation, "
     "each method minus corrected per seed, mean difference, 95% CI, paired p."),
    ("S4b_program_proposal_state", proposal_state, "rows",
     "Proposal distribution per generation: norm of the mean and mean std (frozen_proposer fixed)."),
    ("S4c_program_budget", budget, "costs",
     "Executions per seed and method: training, held-out, bracket predictions, diagnostics."),
]


def draw_all(scale: str) -> list[str]:
    """Draw and save every Fig. 4 and S4 panel of ``scale``; returns the panel names."""
    d = load_data(scale)
    rel = [str(Path(p).resolve().relative_to(REPO_ROOT)) for p in d["files"]]
    by_key = {"rows": rel[0], "diagnostics": rel[1], "costs": rel[2]}
    cfg = str(config_path(EXPERIMENT, scale).relative_to(REPO_ROOT))
    names = []
    for name, draw, key, caption in PANELS:
        fig = draw(d[key])
        save_figure(fig, name, scale=scale, caption=caption, data=[by_key[key]], config=cfg, notebook=NOTEBOOK)
        plt.close(fig)
        names.append(name)
    return names


def stats_table(scale: str) -> pd.DataFrame:
    """Fig. 4a/4b statistics: final held-out loss ratio of every method against ``corrected``, paired
    on seed: n, the method's mean and 95 % bootstrap CI over seeds, the mean difference method −
    corrected (> 0: worse) with its 95 % bootstrap CI, and the sign-flip permutation p-value."""
    rows = load_data(scale)["rows"]
    last = rows[rows.generation == rows.generation.max()]
    cis = {m: bootstrap_ci(g["heldout_loss_ratio"]) for m, g in last.groupby("method")}
    _, t = paired_differences(last, group="method", reference="corrected", value="heldout_loss_ratio")
    order = {m: i for i, m in enumerate(METHODS)}
    t = t.sort_values("method", key=lambda c: c.map(order)).reset_index(drop=True)
    ok = t["n"] >= MIN_CI_N
    return pd.DataFrame({
        "figure": "fig4a/4b", "method": t["method"], "reference": "corrected", "n": t["n"],
        "mean": t["method"].map(lambda m: cis[m][0]),
        "ci95": [f"[{cis[m][1]:.4f}, {cis[m][2]:.4f}]" if k else f"none (n = {n})" for m, k, n in zip(t["method"], ok, t["n"])],
        "effect (method - corrected)": t["mean"],
        "effect ci95": [f"[{lo:.4f}, {hi:.4f}]" if k else f"none (n = {n})" for lo, hi, k, n in zip(t["lo"], t["hi"], ok, t["n"])],
        "p": t["p"], "test": t["test"]})
