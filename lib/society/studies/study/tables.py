"""The society study's tables: its six primary comparisons and its arms, its secondary comparisons, the lexicase
folder beside it, where the baselines' grids put their hyperparameters, and what the study cost."""
from __future__ import annotations

from typing import Callable

import numpy as np
import pandas as pd

from lib.society.arms import BESIDE, LEXICASE as LEXICASE_LINES, NO_GROUNDING, REFERENCE, SEED_BUDGET_ARM
from lib.society.baselines import grid_of
from lib.society.config import arm_seeds
from lib.society.data import CROSSOVER, LEXICASE, LINEAGE, RECOMBINATION, STUDY, config_of, ledger_of, society_rows, society_walls
from lib.society.studies.study.comparisons import (arm_table, founders_of, grid_choices, is_primary_arm, paired,
                                                   population_scores, primary_table, secondary_table,
                                                   seeds_on_other_founders, study_cost, verdict,
                                                   without_most_extreme)
from lib.society.studies.verdict.comparisons import full_reproduction
from lib.society.studies.verdict.tables import founder_selection_markdown
from lib.core.format import NO_DATA, ci, fmt, markdown, num, p_text, signed


def study_rows(scale: str, experiment: str = STUDY) -> pd.DataFrame | None:
    """The society study's (or ``experiment``'s) rows at ``scale``, finished runs only (``None`` when
    none has finished)."""
    return society_rows(scale, experiment, finished=True, required=False)


def preregistered_seeds(cfg: dict, r) -> int:
    """The seeds a primary comparison's row ``r`` is pre-registered on: the fewer of its two arms'."""
    return min(len(arm_seeds(cfg, a)) for a in (r.arm_a, r.arm_b)) if r.arm_a and r.arm_b else 0


def study_primary(scale: str) -> str:
    """The six pre-registered comparisons (:func:`lib.society.studies.study.comparisons.primary_table`) with their
    verdict (:func:`lib.society.studies.study.comparisons.verdict`), marked *interim* while a comparison has fewer
    seeds than its config pre-registers."""
    rows = study_rows(scale)
    if rows is None:
        return NO_DATA
    cfg = config_of(STUDY, scale)

    def word(r) -> str:
        target = preregistered_seeds(cfg, r)
        w = verdict(num(r["diff"]), num(r.p_holm))
        return w if w == "—" or r.n >= target else f"{w} (interim: {int(r.n)} of {target} seeds)"
    lines = [f"| {k + 1} | {r.comparison} | " + (f"`{r.arm_a}` − `{r.arm_b}`" if r.arm_a and r.arm_b else "—")
             + f" | {int(r.n)} | {fmt(r.a_acc)} | {fmt(r.b_acc)} | {signed(r['diff'])} {ci(r.lo, r.hi)} | "
             f"{p_text(r.p)} | {p_text(r.p_holm)} | {word(r)} |" for k, r in primary_table(rows).iterrows()]
    return markdown(["#", "comparison", "arms compared", "seeds", "a", "b", "Δ = a − b [95 % CI (sign-flip)]",
                     "p", "Holm p", "verdict (Holm p < 0.05)"], lines)


def _arms_table(scale: str, primary: bool) -> str:
    """Arms of the study (:func:`lib.society.studies.study.comparisons.arm_table`): population accuracy, selection-pool
    accuracy, difference to ``full``; ``primary``: the arms of the six comparisons and the baselines, else
    the secondary arms."""
    rows = study_rows(scale)
    if rows is None:
        return NO_DATA
    t = arm_table(rows)
    t = t[t["arm"].map(is_primary_arm) == primary]
    if t.empty:
        return NO_DATA
    lines = [f"| `{r.arm}` | {r.borrows or '—'} | {int(r.n)} | {fmt(r.test)} "
             + (f"[{fmt(r.lo)}, {fmt(r.hi)}]" if np.isfinite(num(r.lo)) else "(n < 2)")
             + f" | {fmt(r.select)} | {signed(r.vs_full)} | {p_text(r.p_vs_full)} |" for _, r in t.iterrows()]
    return markdown(["arm", "borrows", "seeds", "test [95 % CI (t, within [0, 1])]", "selection pool",
                      "− `full` (secondary)", "p"], lines)


def study_arms(scale: str) -> str:
    """The primary arms and the baselines (README)."""
    return _arms_table(scale, primary=True)


def study_arms_secondary(scale: str) -> str:
    """The secondary arms (docs/study.md)."""
    return _arms_table(scale, primary=False)


def _comparisons(t: pd.DataFrame) -> str:
    """Paired comparisons (:func:`lib.society.studies.study.comparisons.secondary_table`) as a markdown table, raw p."""
    lines = []
    for k, r in t.iterrows():
        diff = (f"{signed(r['diff'])} {ci(r.lo, r.hi)}" if r.n >= 2 else
                f"{signed(r['diff'])} (one seed: no interval, no test)" if r.n == 1 else "not run yet")
        lines.append(f"| {k + 1} | `{r.arm_a}` − `{r.arm_b}` | {r.isolates} | {int(r.n)} | {int(r.other_founders)} | "
                     f"{fmt(r.a_acc)} | {fmt(r.b_acc)} | {diff} | {p_text(r.p) if r.n >= 2 else '—'} |")
    return markdown(["#", "comparison", "what it isolates", "seeds", "of them on other founders", "a", "b",
                     "Δ = a − b [95 % CI (sign-flip)]", "p (uncorrected)"], lines)


def study_secondary(scale: str) -> str:
    """The study's secondary comparisons (:func:`lib.society.studies.study.comparisons.secondary_table`), raw p."""
    rows = study_rows(scale)
    return NO_DATA if rows is None else _comparisons(secondary_table(rows))


def lexicase_rows(scale: str) -> pd.DataFrame | None:
    """The rows of configs/society_lexicase/<scale>.yaml, finished runs only (:func:`study_rows`)."""
    return study_rows(scale, LEXICASE)


def study_lexicase(scale: str) -> str:
    """Lexicase against the ``full`` and ``niche`` run beside it
    (:data:`lib.society.studies.study.comparisons.LEXICASE`), paired by seed within its own folder, raw p."""
    rows = lexicase_rows(scale)
    return NO_DATA if rows is None else _comparisons(secondary_table(rows, LEXICASE_LINES))


def study_lexicase_slots(scale: str) -> str:
    """Which founders become parents at generation 0 in the lexicase folder's arms, by family
    (:func:`lib.society.studies.verdict.comparisons.founder_selection`): the specialists lexicase is meant to keep."""
    rows = lexicase_rows(scale)
    return NO_DATA if rows is None else founder_selection_markdown(rows, config_of(LEXICASE, scale)["families"])


def study_lexicase_summary(scale: str) -> str:
    """The lexicase folder's comparisons in one sentence (``Δ [CI], p`` each; secondary, raw p)."""
    rows = lexicase_rows(scale)
    if rows is None:
        return "no data yet"
    t = secondary_table(rows, LEXICASE_LINES)
    return "; ".join(f"{r.arm_a} − {r.arm_b} {signed(r['diff'])} {ci(r.lo, r.hi)}, p = {p_text(r.p)}"
                     if r.n >= 2 else f"{r.arm_a} − {r.arm_b}: fewer than 2 seeds" for _, r in t.iterrows()) \
        + f" (over {int(t['n'].min())} seeds)"


def study_lexicase_beside(scale: str) -> str:
    """The lexicase folder's ``full`` against the study's ``full`` on the same seeds: how many seeds give
    the same rows (:func:`lib.society.studies.verdict.comparisons.full_reproduction`), and how many the same founders
    (generation 0; :func:`lib.society.studies.study.comparisons.founders_of`)."""
    mine, study = lexicase_rows(scale), study_rows(scale)
    if mine is None or study is None:
        return "no data yet"
    r = full_reproduction(study, mine)
    fa, fb = founders_of(mine), founders_of(study)
    same_founders = sum(int(fa.get((REFERENCE, s)) == fb.get((REFERENCE, s))) for s in r["seeds"])
    return (f"{r['same']} of {r['n']} seeds give the study's rows, and {same_founders} of {r['n']} "
            f"start from the study's founders")


def study_grids(scale: str) -> str:
    """Where the baselines' chosen hyperparameters fall in their grids
    (:func:`lib.society.studies.study.comparisons.grid_choices`), with the seeds whose val optimum was a tie."""
    rows = study_rows(scale)
    if rows is None:
        return NO_DATA
    t = grid_choices(rows, grid_of(config_of(STUDY, scale)["grids"]))
    lines = [f"| `{r.baseline}` | {r.key} | {fmt(r.grid_lo, 2)}–{fmt(r.grid_hi, 2)} | {fmt(r['mode'], 2)} | "
             f"{int(r.seeds_at_mode)} of {int(r.seeds)} | "
             + (f"{int(r.seeds_tied)} of {int(r.seeds_with_grid)} | {int(r.seeds_edge_optimum)} | "
                if r.seeds_with_grid else "— | — | ")
             + ("**yes**" if r.at_open_edge else "no") + " |" for _, r in t.iterrows()]
    return markdown(["baseline", "hyperparameter", "grid", "chosen most often", "on seeds",
                     "seeds whose val optimum is a tie in it", "seeds where that value alone is best",
                     "at an open end of the grid"], lines)


def study_grid_near_base(scale: str) -> str:
    """On how many seeds each λ-tuned baseline chose λ ≤ 0.05: a merge that is nearly the bare base."""
    rows = study_rows(scale)
    if rows is None:
        return "no data yet"
    d = rows[rows["metric"] == "baseline_lambda"]
    parts = [f"`{arm}` on {int((g['value'] <= 0.05).sum())} of {len(g)} seeds" for arm, g in d.groupby("arm", sort=False)]
    return ", ".join(parts) if parts else "no data yet"


def study_verdicts(scale: str) -> str:
    """The six primary comparisons by verdict, in one phrase (wins, ties, losses; interim or final)."""
    rows = study_rows(scale)
    if rows is None:
        return "no data yet"
    t = primary_table(rows)
    words = {"win": [], "tie": [], "loss": []}
    for k, r in t.iterrows():
        w = verdict(num(r["diff"]), num(r.p_holm))
        if w in words:
            words[w].append(f"{k + 1} ({r.comparison})")
    n = t["n"]
    seeds = f"{int(n.min())}" if n.min() == n.max() else f"{int(n.min())}-{int(n.max())}"
    parts = [f"{label}: " + (", ".join(words[w]) if words[w] else "none")
             for w, label in (("win", "wins"), ("tie", "ties"), ("loss", "losses"))]
    return "; ".join(parts) + f" (Holm p < 0.05, on {seeds} seeds)"


def _grounding_pair(scale: str) -> tuple[pd.Series, pd.Series] | None:
    """Primary comparison 6's two arms, ``full`` and ``no_grounding``, per seed (``None`` without both)."""
    rows = study_rows(scale)
    pop = None if rows is None else population_scores(rows)
    return None if pop is None or REFERENCE not in pop or NO_GROUNDING not in pop else (pop[REFERENCE],
                                                                                        pop[NO_GROUNDING])


def study_grounding_one_seed(scale: str) -> str:
    """Primary comparison 6 (``full`` − ``no_grounding``) again without its most extreme seed."""
    pair = _grounding_pair(scale)
    if pair is None:
        return "no data yet"
    r = without_most_extreme(*pair)
    if r["seed"] is None:
        return "fewer than 3 seeds"
    return (f"without seed {r['seed']} of `{STUDY}/` (its difference there {signed(r['its_diff'])}, the largest), "
            f"{signed(r['diff'])} {ci(r['lo'], r['hi'])}, p = {p_text(r['p'])} over {r['n']} seeds")


def study_grounding_margin(scale: str) -> str:
    """Primary comparison 6 (``full`` − ``no_grounding``), and again without its most extreme seed."""
    pair = _grounding_pair(scale)
    if pair is None:
        return "no data yet"
    r, w = paired(*pair), without_most_extreme(*pair)
    text = f"{signed(r['diff'])} {ci(r['lo'], r['hi'])}, p = {p_text(r['p'])} over {r['n']} seeds"
    return text if w["seed"] is None else (f"{text}; the margin without seed {w['seed']} of `{STUDY}/` (whose own "
                                           f"difference there, {signed(w['its_diff'])}, is the largest) is "
                                           f"{signed(w['diff'])}, p = {p_text(w['p'])}")


def study_primary_founders(scale: str) -> str:
    """Over the six primary comparisons, the paired seeds whose two runs started from different founders
    (:func:`lib.society.studies.study.comparisons.seeds_on_other_founders`; baselines carry no founders' rows)."""
    rows = study_rows(scale)
    if rows is None:
        return "no data yet"
    t = primary_table(rows)
    return f"{int(t['other_founders'].sum())} of {int(t['n'].sum())}"


def study_seed_budget_beside(scale: str) -> str:
    """``full@seed_budget`` − the ``full`` of the same machine: the recombination folder's own ``full``
    (``full@breeding`` when read beside the study, configs/society_recombination/: the study's settings but
    the selection pool, which changes no other pool), paired by seed, with the seeds whose founders differ
    (:func:`seeds_on_other_founders`)."""
    rows = society_rows(scale, STUDY, RECOMBINATION, finished=True, required=False)
    arm, ref = SEED_BUDGET_ARM, BESIDE
    if rows is None or not {arm, ref} <= set(rows["arm"]):
        return "no data yet"
    both = rows[rows["arm"].isin([arm, ref])]
    pop = population_scores(both)
    r = paired(pop[arm], pop[ref])
    other = seeds_on_other_founders(founders_of(both), arm, ref, r["seeds"])
    test = (f"{ci(r['lo'], r['hi'])}, p = {p_text(r['p'])} over {r['n']} seeds" if r["n"] >= 2 else
            "over one seed (no interval, no test)")
    return f"{signed(r['diff'])} {test} ({other} of them on other founders)"


def study_cost_text(scale: str, experiment: str = STUDY) -> str:
    """The study's (or ``experiment``'s) wall time and load so far
    (:func:`lib.society.studies.study.comparisons.study_cost`): its finished runs' walls (a baseline records one wall
    for its whole run) and its sweeps' ledger."""
    ledger = ledger_of(experiment, scale)
    if ledger is None:
        return "no data yet"
    walls = society_walls(scale, experiment, finished=True, required=False)
    c = study_cost(walls if walls is not None else pd.DataFrame(), ledger)
    spent = f"{c['core_h']:.1f} core-hours" if c["core_h"] >= 1 else f"{c['core_h'] * 60:.0f} core-minutes"
    text = f"{spent} in {c['runs']} finished runs (one thread each)"
    if c["ledger_sweeps"]:
        text += (f"; the {c['ledger_sweeps']} sweeps logged since {c['ledger_since'][:10]} ran at a 1-minute "
                 f"load average of {c['load_lo']:.1f}–{c['load_hi']:.1f} on {c['cpus']} CPUs")
    return text


TABLES: dict[str, Callable[[str], str]] = {"study-primary": study_primary, "study-arms": study_arms,
                                           "study-secondary": study_secondary,
                                           "study-lexicase": study_lexicase, "study-lexicase-slots": study_lexicase_slots,
                                           "study-arms-secondary": study_arms_secondary, "study-grids": study_grids,
}
VALUES: dict[str, Callable[[str], str]] = {"study-verdicts": study_verdicts,
                                           "study-grid-near-base": study_grid_near_base,
                                           "study-grounding-one-seed": study_grounding_one_seed,
                                           "society-grounding-margin": study_grounding_margin,
                                           "study-primary-founders": study_primary_founders,
                                           "study-seed-budget-beside": study_seed_budget_beside,
                                           "study-lexicase-beside": study_lexicase_beside,
                                           "study-lexicase-summary": study_lexicase_summary,
                                           "study-cost": study_cost_text,
                                           "crossover-cost": lambda scale: study_cost_text(scale, CROSSOVER),
                                           "lineage-cost": lambda scale: study_cost_text(scale, LINEAGE),
                                           "study-lexicase-cost": lambda scale: study_cost_text(scale, LEXICASE)}
