"""The skill-combining study (``configs/society_crossover/``): the one model a reader takes away, and its
pre-registered comparisons.

Outcome (pre-registered): per (arm, seed), the test accuracy of **the chosen agent**, the last generation's agent
with the highest accuracy on the selection pool (``select_overall``); a baseline is its one model. An exact tie
was pre-registered to go to the lowest agent index, a seat; since issue 53 it is the mean of the tied agents
(:func:`lib.society.studies.frames.tied_pick`), and the pages say in how many runs that changed the pick. Secondary outcomes: the population mean (the earlier studies' outcome) and, per family, the chosen
agent's novel-region test accuracy; a family's skill counts as *held* at :data:`HELD` or more, so ``held`` counts
the families (0–3) whose skill one agent holds. The bare base is every shard's ``base_test_*`` (one per seed).
Comparisons are paired by seed (:func:`lib.society.studies.study.comparisons.paired`: mean difference, its sign-flip
interval and the exact sign-flip p), Holm's correction over the five of :data:`lib.society.arms.CROSSOVER_PRIMARY`;
"the best new society arm" and "the best one-shot model" are the candidates with the highest mean
``select_overall`` of their chosen agents.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from lib.core.stats import bounded_t_ci
from lib.society.arms import (BASE_MODEL, BEST_NEW, BEST_ONE_SHOT, CROSSOVER_CANDIDATES, CROSSOVER_PRIMARY,
                              CROSSOVER_SECONDARY, ONE_SHOT_MODELS, is_baseline, order)
from lib.society.studies.frames import agents_wide, base_scores, last_generation, tied_pick
from lib.society.studies.study.comparisons import NO_ARM, founders_of, paired, seeds_on_other_founders, with_holm

HELD = 0.5  # novel-region test accuracy at which a family's skill counts as held by one agent


def chosen_agents(rows: pd.DataFrame, families) -> pd.DataFrame:
    """Per (arm, seed): the chosen agent, the best on the selection pool (:func:`lib.society.studies.frames.
    tied_pick`: an exact tie is the mean of the tied agents, never the lowest seat; ``tied`` counts them) — its
    ``select_overall``, ``test_overall``, ``test_<family>_novel`` and ``held`` (families with novel accuracy ≥
    :data:`HELD`; a tie's mean) — and ``population`` (the last generation's mean ``test_overall``), in the arm
    table's order."""
    novel = [f"test_{f}_novel" for f in families]
    keys = ["select_overall", "test_overall", *novel]
    w = last_generation(agents_wide(rows, keys))
    if w["select_overall"].isna().any():
        raise ValueError("the chosen agent is picked on the selection pool: its config needs n_select > 0")
    w = w.assign(held=(w[novel] >= HELD).sum(axis=1).astype(float))
    pick = tied_pick(w, ["arm", "seed"], "select_overall", [*keys, "held"])
    pop = w.groupby(["arm", "seed"])["test_overall"].mean().rename("population")
    out = pick.join(pop, on=["arm", "seed"])
    rank = {a: i for i, a in enumerate(order(out["arm"]))}
    return out.sort_values(["arm", "seed"], key=lambda c: c.map(rank) if c.name == "arm" else c).reset_index(drop=True)


def outcome(chosen: pd.DataFrame, metric: str = "test_overall") -> pd.DataFrame:
    """Index ``seed``, one column per arm: ``metric`` of the chosen agents (NaN where an arm has not run a seed)."""
    return chosen.pivot(index="seed", columns="arm", values=metric)


def best_of(chosen: pd.DataFrame, candidates) -> str | None:
    """The candidate with the highest mean ``select_overall`` of its chosen agents (``None``: none has rows)."""
    sel = outcome(chosen, "select_overall").mean()
    sel = sel[[a for a in candidates if a in sel.index]]
    return None if sel.empty else str(sel.sort_values(ascending=False, kind="stable").index[0])


def _series(name: str, out: pd.DataFrame, base: pd.Series) -> pd.Series:
    return base if name == BASE_MODEL else out.get(name, NO_ARM)


def primary_table(rows: pd.DataFrame, families, comparisons=CROSSOVER_PRIMARY) -> pd.DataFrame:
    """The pre-registered ``comparisons`` ((label, a, b), a − b; the skill-combining study's five by default):
    ``comparison, arm_a, arm_b`` (the chosen names resolved), ``n, a_acc,
    b_acc, diff, lo, hi, p, p_holm`` and ``other_founders`` (seeds whose two society arms start from other founders:
    another float path; a baseline or the bare base has none to compare). A comparison without rows yet has ``n = 0`` and NaNs; Holm runs over those
    with a p."""
    ch = chosen_agents(rows, families)
    out, base, founders = outcome(ch), base_scores(rows, ["overall"])["overall"], founders_of(rows)
    names = {BEST_NEW: best_of(ch, CROSSOVER_CANDIDATES), BEST_ONE_SHOT: best_of(ch, ONE_SHOT_MODELS)}
    lines = []
    for label, a, b in comparisons:
        a, b = names.get(a, a), names.get(b, b)
        r = paired(_series(a, out, base), _series(b, out, base)) if a and b else paired(NO_ARM, NO_ARM)
        lines.append({"comparison": label, "arm_a": a, "arm_b": b, "n": r["n"], "a_acc": r["a"], "b_acc": r["b"],
                      "diff": r["diff"], "lo": r["lo"], "hi": r["hi"], "p": r["p"],
                      "other_founders": seeds_on_other_founders(founders, a, b, r["seeds"])})
    return with_holm(pd.DataFrame(lines))


def secondary_table(rows: pd.DataFrame, families, comparisons=CROSSOVER_SECONDARY) -> pd.DataFrame:
    """The secondary ``comparisons`` ((a, b, what a − b isolates); :data:`lib.society.arms.CROSSOVER_SECONDARY` by
    default) on the chosen agents, raw p."""
    out = outcome(chosen_agents(rows, families))
    return pd.DataFrame([{"arm_a": a, "arm_b": b, "isolates": what,
                          **paired(out.get(a, NO_ARM), out.get(b, NO_ARM))} for a, b, what in comparisons])


def arm_summary(rows: pd.DataFrame, families) -> pd.DataFrame:
    """Per arm and baseline, and the bare base first: seeds, the chosen agent's test accuracy (mean, 95 % t-interval
    within [0, 1]), the population mean, the mean novel accuracy per family, the mean number of skills held and
    the mean cost (``cost_train_steps``, ``cost_val_evals`` of the run)."""
    ch = chosen_agents(rows, families)
    cost = rows[rows["metric"].isin(["cost_train_steps", "cost_val_evals"])].pivot_table(
        index=["arm", "seed"], columns="metric", values="value", aggfunc="first")
    base = base_scores(rows, ["overall", *(f"{f}_novel" for f in families)])
    lines = [_summary_line(BASE_MODEL, base["overall"], base["overall"], base[[f"{f}_novel" for f in families]],
                           families, cost=None)]
    for arm, d in ch.groupby("arm", sort=False):
        lines.append(_summary_line(arm, d["test_overall"], d["population"], d[[f"test_{f}_novel" for f in families]],
                                   families, cost=cost.loc[arm] if arm in cost.index.get_level_values(0) else None))
    return pd.DataFrame(lines)


def _summary_line(arm: str, test: pd.Series, pop: pd.Series, novel: pd.DataFrame, families, cost) -> dict:
    v = test.dropna()
    m, lo, hi = bounded_t_ci(v) if len(v) else (np.nan, np.nan, np.nan)
    held = (novel.to_numpy() >= HELD).sum(axis=1)
    return {"arm": arm, "baseline": is_baseline(arm) or arm == BASE_MODEL, "n": len(v), "test": m, "lo": lo,
            "hi": hi, "population": float(pop.mean()), "held": float(held.mean()) if len(held) else np.nan,
            **{f: float(novel.iloc[:, k].mean()) for k, f in enumerate(families)},
            "train_steps": float(cost["cost_train_steps"].mean()) if cost is not None else 0.0,
            "val_evals": float(cost["cost_val_evals"].mean()) if cost is not None else 0.0}
