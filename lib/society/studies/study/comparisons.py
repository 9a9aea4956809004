"""The society study (``configs/society_study/``): its pre-registered comparisons, from the tidy rows.

Outcome: *population accuracy* on the unseen test at the last generation — per (arm, seed) the mean
``test_overall`` of the last generation's agents; a baseline is its one model (agent 0). Seeds are
the unit; comparisons are paired by seed: the mean difference, its 95 % CI (sign-flip inversion) and
the exact sign-flip p (:func:`lib.core.stats.paired_permutation_test`), Holm's adjustment over
the six primary comparisons (:data:`PRIMARY`). The best society arm and the best one-shot merge are
chosen on the *selection pool* (``select_overall``), which nothing was tuned on
(:func:`lib.society.pools.selection_pool`).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from lib.society.arms import (ADDED_AFTER_PREREGISTRATION, BEST_ARM, BEST_MERGE, LEXICASE, ONE_SHOT, REFERENCE, STUDY_PRIMARY,  # noqa: F401
                              STUDY_SECONDARY, borrows, is_baseline, is_primary_arm)
from lib.society.baselines import parse_grid_key
from lib.society.data import complete_runs  # noqa: F401  (the finished runs: read with the rows, lib.society.data)
from lib.society.studies.frames import agents_wide, last_generation, verdict  # noqa: F401  (read from here too)
from lib.core.stats import bounded_t_ci, holm, paired_permutation_test, sign_flip_ci

PRIMARY, SECONDARY = STUDY_PRIMARY, STUDY_SECONDARY  # the comparisons, declared with the arms (lib.society.arms)


def population_scores(rows: pd.DataFrame, metric: str = "test_overall") -> pd.DataFrame:
    """Index ``seed``, one column per arm: the last generation's population mean of ``metric`` (a
    baseline: its one model). NaN where an arm did not run a seed (or has no such metric)."""
    w = agents_wide(rows, [metric])
    last = last_generation(w)
    last = last[last["agent"] >= 0]
    out = last.groupby(["arm", "seed"])[metric].mean().unstack("arm")
    order = list(dict.fromkeys(rows["arm"]))
    return out[[a for a in order if a in out]]


def society_arms(columns) -> list[str]:
    return [a for a in columns if not is_baseline(a)]


def chosen_on_selection(rows: pd.DataFrame) -> tuple[str, str, pd.Series]:
    """The best society arm and the best one-shot merge (:data:`ONE_SHOT`), each the one with the
    highest mean ``select_overall`` over its seeds; the society arms are the pre-registered ones (not
    :data:`ADDED_AFTER_PREREGISTRATION`). Returns ``(arm, merge, mean select per arm)``."""
    sel = population_scores(rows, "select_overall").mean().dropna()
    if sel.empty:
        raise ValueError("no select_overall rows: the study's configs score the selection pool (n_select > 0)")
    arms = sel[[a for a in sel.index if not is_baseline(a) and a not in ADDED_AFTER_PREREGISTRATION]
               ].sort_values(ascending=False)
    merges = sel[[a for a in sel.index if a in ONE_SHOT]].sort_values(ascending=False)
    if arms.empty or merges.empty:
        raise ValueError("the selection needs society arms and one-shot merges with select_overall rows")
    return str(arms.index[0]), str(merges.index[0]), sel.sort_values(ascending=False)


def paired(a: pd.Series, b: pd.Series) -> dict:
    """Paired comparison of ``a − b`` over the seeds both have (``seeds``: those seeds)."""
    both = pd.concat([a, b], axis=1).dropna()
    if both.empty:
        return {"n": 0, "seeds": [], **dict.fromkeys(("a", "b", "diff", "lo", "hi", "p"), np.nan)}
    x, y = both.iloc[:, 0].to_numpy(), both.iloc[:, 1].to_numpy()
    out = {"n": len(both), "seeds": list(both.index), "a": float(x.mean()), "b": float(y.mean()),
           "diff": float((x - y).mean())}
    if len(both) < 2:  # the means of one seed, but no interval and no test
        return {**out, "lo": np.nan, "hi": np.nan, "p": np.nan}
    lo, hi = sign_flip_ci(x - y)
    return {**out, "lo": lo, "hi": hi, "p": paired_permutation_test(x, y)["p"]}


NO_ARM = pd.Series(dtype=float)  # an arm without finished runs: :func:`paired` gives n = 0 and NaNs


def founders_of(rows: pd.DataFrame) -> pd.Series:
    """Per (arm, seed) of the society arms: the founders' fingerprint, the tuple of every generation-0
    agent's test and val metrics (rounded to 1e-9). Every arm of a seed starts from the same founders,
    so on one float path the fingerprints of a seed agree; founders trained on a machine whose floats
    differ (another CPU's kernels) give another fingerprint, and the pair is then paired by seed (the
    same pools and random streams) but not by founders."""
    d = rows[(rows["generation"] == 0) & (rows["agent"] >= 0)
             & rows["metric"].str.match(r"(test|val)_") & ~rows["arm"].map(is_baseline)]
    d = d.sort_values(["agent", "metric"])
    return d.groupby(["arm", "seed"])["value"].agg(lambda v: tuple(np.round(v.to_numpy(), 9)))


def seeds_on_other_founders(founders: pd.Series, a: str, b: str, seeds) -> int:
    """How many of ``seeds`` have different founders in arms ``a`` and ``b`` (:func:`founders_of`;
    a seed where either has no generation-0 rows, a baseline, does not count)."""
    return sum(founders.get((a, s)) != founders.get((b, s)) for s in seeds
               if (a, s) in founders.index and (b, s) in founders.index)


def primary_table(rows: pd.DataFrame) -> pd.DataFrame:
    """The six pre-registered comparisons (:data:`PRIMARY`): ``comparison, a, b`` (the arms, the
    chosen ones resolved), ``n, a_acc, b_acc, diff, lo, hi, p, p_holm`` and ``other_founders``
    (:func:`seeds_on_other_founders`, as in :func:`secondary_table`). A comparison whose arms
    have no rows yet has ``n = 0`` and NaNs (reported as missing, not dropped); Holm runs over the
    comparisons that have a p."""
    pop, founders = population_scores(rows), founders_of(rows)
    try:
        best_arm, best_merge, _ = chosen_on_selection(rows)
    except ValueError:
        best_arm = best_merge = None
    out = []
    for label, a, b in PRIMARY:
        a = best_arm if a == BEST_ARM else a
        b = best_merge if b == BEST_MERGE else b
        r = paired(pop.get(a, NO_ARM), pop.get(b, NO_ARM))
        out.append({"comparison": label, "arm_a": a, "arm_b": b, "n": r["n"], "a_acc": r["a"], "b_acc": r["b"],
                    "diff": r["diff"], "lo": r["lo"], "hi": r["hi"], "p": r["p"],
                    "other_founders": seeds_on_other_founders(founders, a, b, r["seeds"])})
    return with_holm(pd.DataFrame(out))


def with_holm(t: pd.DataFrame) -> pd.DataFrame:
    """``t`` (one primary comparison a row, column ``p``) with ``p_holm``: Holm's adjustment over the rows that
    have a p (NaN for a comparison without one yet)."""
    t = t.assign(p_holm=np.nan)
    have = t["p"].notna()
    if have.any():
        t.loc[have, "p_holm"] = holm(t.loc[have, "p"].to_numpy())
    return t


def without_most_extreme(a: pd.Series, b: pd.Series) -> dict:
    """How much ``a − b`` rests on one seed: the paired comparison (:func:`paired`) again without the
    seed whose difference is largest in magnitude; ``seed`` and ``its_diff`` name it."""
    d = (a - b).dropna()
    if len(d) < 3:
        return {"seed": None, "its_diff": np.nan, **paired(a.iloc[:0], b.iloc[:0])}
    worst = d.abs().idxmax()
    keep = d.index.drop(worst)
    return {"seed": int(worst), "its_diff": float(d[worst]), **paired(a[keep], b[keep])}


def study_cost(walls: pd.DataFrame, ledger: list[dict]) -> dict:
    """What the study cost: ``core_h`` (the finished runs' wall seconds summed, in hours: each run uses
    one thread on one core), ``runs``, per-arm median wall seconds of one run (``arm_s``), and from the
    sweeps' ledger (:data:`lib.sweep.LEDGER`, logged since ``ledger_since``) the range of the 1-minute
    load average at the sweeps' starts and ends (``load_lo``, ``load_hi``) on ``cpus`` CPUs (NaN without
    a ledger). ``walls``: :func:`lib.society.run.generation_walls`."""
    if walls.empty:
        return {"core_h": 0.0, "runs": 0, "arm_s": {}, "ledger_sweeps": 0, "ledger_since": None,
                "load_lo": np.nan, "load_hi": np.nan, "cpus": None}
    per_run = walls.groupby(["arm", "seed"])["wall_s"].sum()
    loads = [x[0] for e in ledger for x in (e.get("load_start"), e.get("load_end")) if x]
    return {"core_h": float(per_run.sum() / 3600), "runs": int(len(per_run)),
            "arm_s": per_run.groupby("arm").median().round(0).to_dict(),
            "ledger_sweeps": len(ledger), "ledger_since": min((e["finished"] for e in ledger), default=None),
            "load_lo": float(min(loads)) if loads else np.nan, "load_hi": float(max(loads)) if loads else np.nan,
            "cpus": max((e.get("cpus") or 0 for e in ledger), default=None) or None}


def arm_table(rows: pd.DataFrame) -> pd.DataFrame:
    """Every arm and baseline: ``arm, n, test`` (mean population accuracy), ``lo, hi`` (95 % CI (t),
    within [0, 1]), ``select`` (mean selection-pool accuracy) and ``vs_full`` / ``p_vs_full`` (paired
    difference to ``full`` and its exact p: secondary, uncorrected), in the rows' arm order."""
    pop, sel = population_scores(rows), population_scores(rows, "select_overall")
    out = []
    for a in pop:
        v = pop[a].dropna()
        m, lo, hi = bounded_t_ci(v) if len(v) else (np.nan, np.nan, np.nan)
        r = paired(pop[a], pop[REFERENCE]) if REFERENCE in pop and a != REFERENCE else {"diff": np.nan, "p": np.nan}
        out.append({"arm": a, "n": len(v), "test": m, "lo": lo, "hi": hi,
                    "select": float(sel[a].mean()) if a in sel else np.nan,
                    "vs_full": r["diff"], "p_vs_full": r["p"], "borrows": borrows(a)})
    return pd.DataFrame(out)


def secondary_table(rows: pd.DataFrame, lines=SECONDARY) -> pd.DataFrame:
    """The secondary comparisons ``lines`` (:data:`SECONDARY`; :data:`LEXICASE` on that folder's rows):
    ``arm_a, arm_b, isolates, n, a_acc, b_acc, diff, lo, hi, p`` (paired by seed as :func:`paired`;
    ``n = 0`` and NaNs while an arm has no finished run) and ``other_founders``, the paired seeds whose two runs started from different founders
    (:func:`seeds_on_other_founders`). Their p is uncorrected: a reader counts them (the table's
    length) rather than trusting one."""
    pop, founders = population_scores(rows), founders_of(rows)
    out = []
    for a, b, what in lines:
        r = paired(pop.get(a, NO_ARM), pop.get(b, NO_ARM))
        out.append({"arm_a": a, "arm_b": b, "isolates": what, "n": r["n"], "a_acc": r["a"], "b_acc": r["b"],
                    "diff": r["diff"], "lo": r["lo"], "hi": r["hi"], "p": r["p"],
                    "other_founders": seeds_on_other_founders(founders, a, b, r["seeds"])})
    return pd.DataFrame(out)


def grid_optima(rows: pd.DataFrame, arm: str, key: str) -> pd.Series:
    """Per seed of baseline ``arm``: the set of ``key`` values among the grid settings with the highest
    val accuracy (the ``val_grid_*`` rows, :func:`lib.society.baselines.grid_key`). More than one value: the
    choice of ``key`` was a tie, broken by grid order. Empty where the rows hold no grid."""
    d = rows[(rows["arm"] == arm) & rows["metric"].str.startswith("val_grid_")]
    out = {}
    for seed, g in d.groupby("seed"):
        best = g["value"].max()
        out[int(seed)] = frozenset(parse_grid_key(m)[key] for m in g.loc[g["value"] == best, "metric"])
    return pd.Series(out, dtype=object)


def grid_choices(rows: pd.DataFrame, grids: dict) -> pd.DataFrame:
    """Where each baseline's chosen hyperparameters fall in its grid: per (baseline, key) the modal
    chosen value, on how many seeds of how many, the grid's ends, and whether the mode is at an end
    that is not a natural bound (density 1; λ's lower end is bounded by λ = 0, the bare base, only
    when the end is within a factor 5 of 0 — else the grid was not widened far enough).

    Where the rows hold the whole grid's val accuracies (:func:`grid_optima`), ``seeds_tied`` counts
    the seeds whose best val accuracy is reached at several values of ``key`` (the choice is the grid
    order's), and the mode is ``at_open_edge`` only when it is the *sole* optimum on most seeds with a
    grid (``seeds_edge_optimum``): a tie is not a sign that the optimum lies beyond the grid.

    ``grids``: ``{baseline: {key: grid values}}`` (:func:`lib.society.baselines.grid_of`)."""
    out = []
    for arm, keys in grids.items():
        for key, grid in keys.items():
            d = rows[(rows["arm"] == arm) & (rows["metric"] == f"baseline_{key}")]
            if d.empty:
                continue
            counts = d.groupby("value")["seed"].nunique().sort_values(ascending=False)
            mode = float(counts.index[0])
            lo, hi = min(grid), max(grid)
            natural = (key == "density" and mode == 1.0) or (key == "lambda" and mode == lo and lo <= 0.05)
            optima = grid_optima(rows, arm, key)
            sole = int(sum(o == {mode} for o in optima))
            edge = mode in (lo, hi) and not natural and (sole * 2 > len(optima) if len(optima) else True)
            out.append({"baseline": arm, "key": key, "mode": mode, "seeds_at_mode": int(counts.iloc[0]),
                        "seeds": int(d["seed"].nunique()), "grid_lo": lo, "grid_hi": hi,
                        "seeds_with_grid": len(optima), "seeds_tied": int(sum(len(o) > 1 for o in optima)),
                        "seeds_edge_optimum": sole, "at_open_edge": edge})
    return pd.DataFrame(out)
