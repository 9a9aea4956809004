"""Fig. 4 (program search) and its SI panels, drawn from data/<scale>/program_search/.

Panels: fig4a held-out loss ratio per generation (mean over seeds; band: 95 % CI (t) of the reference
``corrected``) and each method minus ``corrected`` at the last generation (95 % CI (sign-flip
inversion), paired p), fig4b the final generation per method and seed (mean, 95 % CI (t)), fig4c
compiled / first-jet / gate-blind bracket error against the exact bracket, fig4d order accuracy of
compiled vs gate-blind brackets (per-seed rates, mean and 95 % CI (t)); S4a mean proposed held-out
ratio per generation, S4b proposal-distribution state (mean norm, std), S4c the execution budget
per method. ``generic_first_jet`` and ``full_jacobian`` compute the same bracket as ``corrected``:
their lines lie on it, so ``corrected`` is drawn wide underneath and they thin on top.
"""
from __future__ import annotations

import textwrap


import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from lib.core.stats import (SIGN_FLIP_CI, T_CI, compare_to, format_ci, format_p, mean_ci_table,
                              paired_differences, t_ci)
from lib.core.jsonfile import read_json
from lib.core.paths import config_path, data_dir
from lib.style import (Panel, dots_with_mean, line_kw, mean_curve, paired_difference_panel, repo_path, save_panels,
                    use_style)

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
        out[key] = read_json(p, fix=f"restore it (committed data: git checkout -- {p}) or run the search again "
                                    f"(move {folder} aside first)") if p.suffix == ".json" else pd.read_csv(p)
        files.append(p)
    out["files"] = files
    return out


def _methods(df):
    return [m for m in METHODS if m in set(df["method"])]


# ----------------------------------------------------------------------------- tables
def final_table(rows: pd.DataFrame) -> pd.DataFrame:
    """Final generation per method: held-out ratio mean and 95 % CI (t) over seeds, train best,
    mean proposed held-out ratio, best program depth."""
    last = rows[rows.generation == rows.generation.max()]
    out = []
    for m in _methods(last):
        g = last[last.method == m]
        mean, lo, hi = t_ci(g.heldout_loss_ratio.to_numpy())
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


def order_accuracy_by_seed(diags: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Order accuracy (the bracket's sign predicts the faster operator order) on non-tie probes, per
    seed first: ``(points, summary)``; ``points``: ``predictor, seed, depth, rate`` (per seed and
    depth) plus ``depth = "all"`` rows (per seed over all depths); ``summary``: per predictor and depth,
    ``n`` seeds, ``mean`` of the per-seed rates and its 95 % CI (t) ``lo, hi``."""
    nt = diags[diags.non_tie == 1]
    pts = []
    for col, name in (("compiled_correct_actual_order", "compiled"), ("blind_correct_actual_order", "gate-blind")):
        by_depth = nt.groupby(["seed", "depth"])[col].mean().rename("rate").reset_index()
        overall = nt.groupby("seed")[col].mean().rename("rate").reset_index().assign(depth="all")
        pts.append(pd.concat([by_depth, overall], ignore_index=True).assign(predictor=name))
    pts = pd.concat(pts, ignore_index=True)[["predictor", "seed", "depth", "rate"]]
    pts["depth"] = pts["depth"].astype(str)
    summ = mean_ci_table(pts, ["predictor", "depth"], "rate")
    return pts, summ


# ----------------------------------------------------------------------------- panels
EQUIVALENT = ("generic_first_jet", "full_jacobian")  # the same bracket as corrected, computed another way


def _lines(ax, t: pd.DataFrame, x: str, methods, band_for=()):
    """One line per method in its fixed style (mean over seeds). ``corrected`` is drawn wide and pale
    underneath, so the equivalent methods, whose lines coincide with it, stay visible on top; a 95 %
    CI (t) band for the methods in ``band_for``."""
    for m in methods:
        g = t[t.method == m]
        extra = {"lw": 4.0, "alpha": 0.45, "ms": 7, "zorder": 2} if m == "corrected" else {"lw": 1.2, "zorder": 3}
        if m in EQUIVALENT:
            extra["label"] = f"{m} (= corrected)"
        mean_curve(ax, g, x, m, band=m in band_for, band_alpha=0.15, **extra)


def _span(t: pd.DataFrame) -> str:
    return f"{t['mean'].min():.3f}–{t['mean'].max():.3f}"


def _curves_and_paired(rows: pd.DataFrame, column: str, ylabel: str, short: str, what: str):
    """(a) mean over seeds of ``column`` per generation, one line per method, with the 95 % CI (t)
    band of ``corrected`` (the reference) and the span of the means in the title; (b) at the last
    generation, each method minus ``corrected`` on the same seed (dots), mean difference, 95 % CI
    (sign-flip inversion), paired p."""
    methods = _methods(rows)
    t = mean_ci_table(rows, ["method", "generation"], column)
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(8.4, 3.9), gridspec_kw={"width_ratios": [1, 1.1]})
    _lines(a1, t, "generation", methods, band_for=("corrected",))
    a1.set(xlabel="generation", ylabel=ylabel, xticks=sorted(rows.generation.unique()))
    a1.set_title(textwrap.fill(f"(a) {what}, mean over {rows.seed.nunique()} seeds; band: corrected, {T_CI}; "
                               f"the means span only {_span(t)}", 52), fontsize=7.5, loc="left", pad=16)
    last = rows[rows.generation == rows.generation.max()]
    pts, summ = paired_differences(last, group="method", reference="corrected", value=column)
    paired_difference_panel(a2, pts, summ, group="method", order=methods, reference="corrected",
                            ylabel=f"{short}, last generation")
    a2.set_title(textwrap.fill("(b) " + a2.get_title(loc="left").replace("\n", "; ") + "; > 0: worse than corrected", 60),
                 fontsize=7, loc="left", pad=18)
    fig.legend(*a1.get_legend_handles_labels(), loc="lower center", ncol=4, fontsize=7, frameon=False)
    fig.tight_layout(rect=(0, 0.1, 1, 1))
    return fig


def heldout_by_generation(rows: pd.DataFrame):
    """fig4a: held-out loss ratio of the best-so-far program. (a) per generation, mean over seeds;
    (b) last generation, each method minus ``corrected`` per seed, mean difference, 95 % CI
    (sign-flip inversion), paired p."""
    use_style()
    return _curves_and_paired(rows, "heldout_loss_ratio", "held-out loss ratio L(z)/L(x)",
                              "held-out ratio", "best program on held-out states")


def final_by_seed(rows: pd.DataFrame):
    """fig4b: final-generation held-out ratio per method: one dot per seed, mean and 95 % CI (t)."""
    use_style()
    last = rows[rows.generation == rows.generation.max()]
    methods = _methods(last)
    fig, ax = plt.subplots(figsize=(5.2, 3.2))
    for i, m in enumerate(methods):
        v = last[last.method == m].heldout_loss_ratio.to_numpy()
        dots_with_mean(ax, i, v, m, t_ci(v))
    ax.set_xticks(range(len(methods)), methods, rotation=35, ha="right", fontsize=7)
    ax.set_ylabel("final held-out loss ratio (lower is better)")
    ax.set_title(f"Final generation, lower is better; dots: seeds (n = {last.seed.nunique()}); marker: mean, {T_CI}",
                 fontsize=8)
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
    ax.legend(fontsize=6.2, loc="upper left")
    ax.set_title(f"{len(diags)} probes (test states 1-4)", fontsize=8)
    return fig


def order_accuracy(diags: pd.DataFrame):
    """fig4d: fraction of non-tie probes whose actual faster order the bracket sign predicts,
    compiled vs gate-blind, by program depth: per seed first, then the mean of the per-seed rates
    and its 95 % CI (t) over seeds."""
    use_style()
    pts, summ = order_accuracy_by_seed(diags)
    fig, ax = plt.subplots(figsize=(4.2, 3.2))
    depths = sorted(int(d) for d in set(pts["depth"]) if d != "all")
    for k, (name, look) in enumerate((("compiled", "corrected"), ("gate-blind", "gate_blind"))):
        s = summ[summ.predictor == name].set_index("depth")
        m = np.array([s.loc[str(d), "mean"] for d in depths])
        err = np.array([[s.loc[str(d), "mean"] - s.loc[str(d), "lo"], s.loc[str(d), "hi"] - s.loc[str(d), "mean"]]
                        for d in depths]).T
        kw = line_kw(look)
        allr = s.loc["all"]
        ax.errorbar(np.array(depths) + (k - .5) * .15, m, yerr=err, ms=4, capsize=2, color=kw["color"],
                    marker=kw["marker"], ls="-", label=f"{name} ({allr['mean']:.3f} over all depths)")
    ax.axhline(.5, color="k", lw=.6, ls=":", label="chance (0.5)")
    ax.set(xlabel="program depth", ylabel="order accuracy (non-tie probes)", xticks=depths, ylim=(0, 1.05))
    n = int(summ["n"].max())
    ax.set_title(f"per-seed rates: mean and {T_CI} over {n} seeds\n"
                 f"({int(diags.non_tie.sum())} non-tie probes)", fontsize=7)
    ax.legend(fontsize=6.5, loc="lower left")
    return fig


def proposals_by_generation(rows: pd.DataFrame):
    """S4a: mean held-out loss ratio of all proposals of each generation (what the proposer
    learns). (a) per generation, mean over seeds; (b) last generation, each method minus
    ``corrected`` per seed, mean difference, 95 % CI (sign-flip inversion), paired p."""
    use_style()
    return _curves_and_paired(rows, "mean_proposed_heldout_loss_ratio", "mean proposed held-out loss ratio",
                              "proposed held-out ratio", "all proposals of a generation")


def proposal_state(rows: pd.DataFrame):
    """S4b: the proposal distribution after each generation: (a) |mean| and (b) mean std, mean over
    seeds (frozen_proposer stays at its start; no_feedback moves like the learners but from random
    candidates)."""
    use_style()
    fig, axes = plt.subplots(1, 2, figsize=(7.2, 3.7))
    for ax, col, lab, letter in ((axes[0], "proposal_mean_change_norm", "‖proposal mean‖", "a"),
                                 (axes[1], "proposal_std_mean", "mean proposal std", "b")):
        t = mean_ci_table(rows, ["method", "generation"], col)
        _lines(ax, t, "generation", _methods(rows))
        ax.set(xlabel="generation", ylabel=lab, xticks=sorted(rows.generation.unique()))
        ax.set_title(f"({letter}) {lab} after each generation", fontsize=8, loc="left")
    fig.suptitle(f"Proposal distribution per generation, mean over {rows.seed.nunique()} seeds", fontsize=9)
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
    ax.set_title(f"Execution budget per method: mean over {costs.seed.nunique()} seeds",
                 fontsize=9, loc="left")
    ax.legend(fontsize=6.5, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    return fig


def _range_note(column: str):
    def caption(data: dict) -> str:
        t = mean_ci_table(data["rows"], ["method", "generation"], column)
        return (f"(a)'s means span only {_span(t)}: its y-axis is zoomed to the lines and corrected's band, "
                f"it does not start at 0.")
    return caption


_B = f"mean difference, {SIGN_FLIP_CI}, paired sign-flip p"
PANELS = [
    Panel("fig4a_program_heldout", lambda d: heldout_by_generation(d["rows"]),
          lambda d: ("Held-out loss ratio of the best program: (a) per generation, mean over seeds, the reference "
                     f"corrected with its {T_CI} band (generic_first_jet and full_jacobian lie on it); (b) last "
                     f"generation, each method minus corrected on the same seed, {_B}. "
                     + _range_note("heldout_loss_ratio")(d))),
    Panel("fig4b_program_final", lambda d: final_by_seed(d["rows"]),
          f"Final-generation held-out loss ratio per method: seeds (dots), mean and {T_CI}."),
    Panel("fig4c_program_bracket_error", lambda d: bracket_errors(d["diagnostics"]),
          "Compiled, first-jet and gate-blind bracket error against the exact (full-Jacobian) bracket.",
          source="diagnostics"),
    Panel("fig4d_program_order_accuracy", lambda d: order_accuracy(d["diagnostics"]),
          f"Order accuracy of the compiled vs gate-blind bracket on non-tie probes, by program depth: "
          f"mean of the per-seed rates, {T_CI}.", source="diagnostics"),
    Panel("S4a_program_proposals", lambda d: proposals_by_generation(d["rows"]),
          lambda d: ("Mean held-out loss ratio of each generation's proposals: (a) per generation, mean over seeds, "
                     f"corrected with its {T_CI} band; (b) last generation, each method minus corrected per seed, "
                     f"{_B}. " + _range_note("mean_proposed_heldout_loss_ratio")(d))),
    Panel("S4b_program_proposal_state", lambda d: proposal_state(d["rows"]),
          "Proposal distribution per generation, mean over seeds: (a) norm of the mean, (b) mean std "
          "(frozen_proposer fixed)."),
    Panel("S4c_program_budget", lambda d: budget(d["costs"]),
          "Executions per seed and method: training, held-out, bracket predictions, diagnostics.", source="costs"),
]


def draw_all(scale: str) -> list[str]:
    """Draw and save every Fig. 4 and S4 panel of ``scale``; returns the panel names."""
    d = load_data(scale)
    cfg = config_path(EXPERIMENT, scale)
    sources = {k: ([repo_path(data_dir(scale, EXPERIMENT) / FILES[k])], cfg) for k in ("rows", "diagnostics", "costs")}
    return save_panels(PANELS, d, scale=scale, sources=sources, notebook=NOTEBOOK)


def stats_table(scale: str) -> pd.DataFrame:
    """Fig. 4a/4b and S4a statistics at the last generation: every method against ``corrected``,
    paired on seed, for the best program's held-out loss ratio (4a/4b) and the mean proposed one
    (S4a): n, the method's mean and 95 % CI (t) over seeds, the mean difference method − corrected
    (> 0: worse) with its 95 % CI (sign-flip inversion), and the sign-flip p (text)."""
    rows = load_data(scale)["rows"]
    last = rows[rows.generation == rows.generation.max()]
    order = {m: i for i, m in enumerate(METHODS)}
    out = []
    for fig, column in (("fig4a/4b", "heldout_loss_ratio"), ("S4a", "mean_proposed_heldout_loss_ratio")):
        cis = {m: (*t_ci(g[column]), int(g[column].notna().sum())) for m, g in last.groupby("method")}
        _, t = paired_differences(last, group="method", reference="corrected", value=column)
        t = t.sort_values("method", key=lambda c: c.map(order)).reset_index(drop=True)
        out.append(pd.DataFrame({
            "figure": fig, "metric": column, "method": t["method"], "reference": "corrected", "n": t["n"],
            "mean": [cis[m][0] for m in t["method"]],
            T_CI: [format_ci(*cis[m][1:]) for m in t["method"]],
            "effect (method - corrected)": t["mean"],
            f"effect {SIGN_FLIP_CI}": [format_ci(lo, hi, n) for lo, hi, n in zip(t["lo"], t["hi"], t["n"])],
            "p": t["p"].map(format_p), "test": t["test"]}))
    return pd.concat(out, ignore_index=True)
