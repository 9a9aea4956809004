"""The lineage study (``configs/society_lineage/``): does a society accumulate when a child continues one parent's
LoRA, and where does every design sit against one-shot training at its own compute?

Outcome (pre-registered, the skill-combining study's): per (arm, seed) the test accuracy of the chosen agent
(:func:`lib.society.studies.skills.comparisons.chosen_agents`; a baseline's one model), paired by seed; the four
primary comparisons of :data:`lib.society.arms.LINEAGE_PRIMARY` with Holm's correction, the secondary of
:data:`lib.society.arms.LINEAGE_SECONDARY` with their raw p.

Compute (:func:`compute_table`): per design and baseline, the LoRA optimizer steps of a seed's run
(``cost_train_steps``: the founders' included where a run starts from them), its val evaluations and, where the
progress files recorded them (:func:`lib.society.data.shard_work`), the tokens trained and generated and the verifier
calls, the seed's founders' training added once to every run that starts from them.

Placement (:func:`placement`): a society design against the one-shot frontier at its own compute. Its rival is the
one-shot model (a baseline: one model, no population) of the same group of runs with the highest mean
selection-pool accuracy among those whose mean steps per seed are at most the design's and that share enough of its
seeds to place it (``MIN_PAIRED_N``, or all the design has; never chosen on test); the
paired difference of the chosen agents' test accuracy places it *above* (the sign-flip interval above 0), *below*
(under 0) or *on* the frontier (the interval holds 0: not equivalence). The rule for the rival, the 6 shared seeds
included, was fixed after the study's pre-registration, which named only "the frontier".

What is paired with what (:func:`load_data`'s ``groups``): this study's own folder, one float path (AVX2, one thread,
recorded per shard), its designs with its one-shot models; and the earlier studies' folders joined as they paired
them, the skill-combining study's (AVX-512, recorded) with the society study's (AMD EPYC; its manifest records no
kernel level): there a design of either folder may be paired with a one-shot model of the other, by seed, as those
studies did.
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np
import pandas as pd

from lib.society.arms import FRONTIER, LINEAGE_PRIMARY, LINEAGE_SECONDARY, frontier_k, is_baseline
from lib.society.data import CROSSOVER, LINEAGE, WORK, config_of, files_of, folder_states, shard_work, society_rows
from lib.society.studies.skills.comparisons import chosen_agents, outcome, primary_table, secondary_table
from lib.society.studies.skills.figures import studies
from lib.society.studies.study.comparisons import paired
from lib.core.stats import MIN_PAIRED_N, bounded_t_ci

BELOW, ON, ABOVE = "below", "on", "above"


def load_data(scale: str) -> dict | None:
    """``{"rows", "everything", "groups", "families", "work", "files"}``: ``rows``, the study's own finished runs (its
    comparisons read only these: one float path per seed; ``None`` before the first has finished); ``groups``, those
    and the earlier studies' (the skill-combining study's folders,
    :func:`lib.society.studies.skills.figures.studies`), each paired only within itself; ``everything``, one set of
    runs per arm (where both hold it, the one with more seeds), for
    the compute table and chart (``study`` names each row's folder, ``pairing`` the folders that pair by seed: the
    study's own, or the earlier studies' joined as they paired them); the config's families; every shard's recorded
    work (:func:`shard_work`). ``None``: no finished run at ``scale`` at all. Read once per state of the folders
    (every table and value of the study reads it)."""
    if config_of(LINEAGE, scale) is None:
        return None
    before = studies(scale) if config_of(CROSSOVER, scale) else ()
    got = _load(scale, before, folder_states(scale, LINEAGE, *before))
    return None if got is None else dict(got)


@lru_cache(maxsize=4)
def _load(scale: str, before: tuple, _states: tuple) -> dict | None:
    own = society_rows(scale, LINEAGE, finished=True, required=False)
    earlier = society_rows(scale, *before, finished=True, required=False) if before else None
    groups = [r.assign(pairing=" + ".join(fo)) for r, fo in ((own, (LINEAGE,)), (earlier, before)) if r is not None]
    if not groups:
        return None
    seeds = [g.groupby("arm")["seed"].nunique() for g in groups]  # an arm in both: the runs with more seeds are shown
    parts = [g[g["arm"].map(lambda a, k=k: all(s.get(a, 0) < seeds[k][a] or (s.get(a, 0) == seeds[k][a] and j >= k)
                                                for j, s in enumerate(seeds) if j != k))]
             for k, g in enumerate(groups)]
    read = [fo for fo, r in (((LINEAGE,), own), (before, earlier)) if r is not None]
    files = {k: sum((files_of(scale, *fo)[k] for fo in read), []) for k in ("files", "progress", "configs")}
    return {"rows": own, "everything": pd.concat(parts, ignore_index=True), "groups": groups,
            "families": list(config_of(LINEAGE, scale).families), "work": shard_work(files["files"]), **files}


def primary(rows: pd.DataFrame, families) -> pd.DataFrame:
    """The four pre-registered comparisons (:func:`lib.society.studies.skills.comparisons.primary_table` of
    :data:`LINEAGE_PRIMARY`)."""
    return primary_table(rows, families, LINEAGE_PRIMARY)


def secondary(rows: pd.DataFrame, families) -> pd.DataFrame:
    """The secondary comparisons on the chosen agents, raw p."""
    return secondary_table(rows, families, LINEAGE_SECONDARY)


def runs_from_founders(arm: str) -> bool:
    """A run that starts from (or is taught by) the seed's founders: every society design and every baseline but
    multitask's, which trains on the founders' gold tasks."""
    return not arm.startswith(FRONTIER[1])


def seed_work(rows: pd.DataFrame, work: pd.DataFrame) -> pd.DataFrame:
    """Per (arm, seed) of ``rows``' chosen agents: ``steps`` and ``val_evals`` (cost rows), and where recorded the
    work counters with the seed's founders' training added for a run that starts from them (``NaN`` elsewhere)."""
    cost = rows[rows["metric"].isin(["cost_train_steps", "cost_val_evals"])].pivot_table(
        index=["arm", "seed"], columns="metric", values="value", aggfunc="first").rename(
        columns={"cost_train_steps": "steps", "cost_val_evals": "val_evals"})
    if work is None or work.empty:
        return cost.assign(**{k: np.nan for k in (*WORK, "verifier_calls")})
    w = work.set_index(["arm", "seed"])
    founders = w[[f"founders_{k}" for k in WORK]].groupby(level="seed").max()
    own = w[[*WORK, "verifier_calls"]].astype(float)
    for k in WORK:
        add = pd.Series([founders.loc[s, f"founders_{k}"] if runs_from_founders(a) and s in founders.index else 0
                         for a, s in own.index], index=own.index)
        own[k] = own[k] + add
    return cost.join(own, how="left")


def compute_table(rows: pd.DataFrame, families, work: pd.DataFrame | None) -> pd.DataFrame:
    """Per design and baseline: ``n``, the chosen agent's test accuracy (``test``, 95 % t-interval ``lo``, ``hi``
    within [0, 1]), ``select`` (its mean selection-pool accuracy), ``held`` (mean skills held), the mean per seed of
    ``steps``, ``val_evals`` and of each counter with ``n_counted`` seeds that recorded it, ``baseline``, ``k``
    (a frontier point's), sorted by steps."""
    ch = chosen_agents(rows, families).set_index(["arm", "seed"])
    d = ch.join(seed_work(rows, work), how="left")
    out = []
    for arm, g in d.groupby(level="arm", sort=False):
        v = g["test_overall"].dropna()
        m, lo, hi = bounded_t_ci(v) if len(v) > 1 else (float(v.mean()), np.nan, np.nan)
        counted = g["train_tokens"].notna()
        out.append({"arm": arm, "baseline": is_baseline(arm), "k": frontier_k(arm), "n": len(v), "test": m, "lo": lo,
                    "hi": hi, "select": float(g["select_overall"].mean()), "held": float(g["held"].mean()),
                    "steps": float(g["steps"].mean()), "val_evals": float(g["val_evals"].mean()),
                    "n_counted": int(counted.sum()),
                    **{k: float(g.loc[counted, k].mean()) if counted.any() else np.nan
                       for k in (*WORK, "verifier_calls")}})
    return pd.DataFrame(out).sort_values(["steps", "arm"], kind="stable").reset_index(drop=True)


def placement(rows: pd.DataFrame, families, table: pd.DataFrame | None = None) -> pd.DataFrame:
    """Each society design of ``table`` (:func:`compute_table`) against the one-shot frontier at its compute (see
    the module's docstring): ``arm, steps, rival`` (the one-shot model, ``None`` when none is as cheap), ``rival_steps``,
    the paired ``n, a, b, diff, lo, hi, p`` and ``where`` (:data:`ABOVE`, :data:`ON`, :data:`BELOW`; ``None``
    without a rival or while the interval is unbounded: fewer than 6 paired seeds)."""
    table = compute_table(rows, families, None) if table is None else table
    out = outcome(chosen_agents(rows, families))
    col = "pairing" if "pairing" in rows else "study"
    study = rows.drop_duplicates("arm").set_index("arm")[col]  # pairs only within one study's runs (float path)
    one_shot = table[table["baseline"]]
    lines = []
    for _, r in table[~table["baseline"]].iterrows():
        own = out[r["arm"]].dropna().index
        need = min(len(own), MIN_PAIRED_N)  # a rival shares the design's seeds: as many as place it, or all it has
        cheaper = one_shot[(one_shot["steps"] <= r["steps"]) & (one_shot["arm"].map(study) == study[r["arm"]])
                           & one_shot["arm"].map(lambda a: a in out and len(out[a].dropna().index.intersection(own)) >= need)]
        rival = None if cheaper.empty else str(cheaper.sort_values("select", ascending=False, kind="stable")["arm"].iloc[0])
        res = paired(out[r["arm"]], out[rival]) if rival else {"n": 0, **dict.fromkeys(("a", "b", "diff", "lo", "hi",
                                                                                          "p"), np.nan)}
        where = None
        if rival and np.isfinite(res["lo"]) and np.isfinite(res["hi"]):  # an unbounded interval places nothing
            where = ABOVE if res["lo"] > 0 else BELOW if res["hi"] < 0 else ON
        lines.append({"arm": r["arm"], "steps": r["steps"], "rival": rival,
                      "rival_steps": float(cheaper.set_index("arm").loc[rival, "steps"]) if rival else np.nan,
                      **{k: res[k] for k in ("n", "a", "b", "diff", "lo", "hi", "p")}, "where": where})
    return pd.DataFrame(lines)


def placements(groups: list[pd.DataFrame], families) -> pd.DataFrame:
    """:func:`placement` within each group of runs paired by seed (``load_data``'s ``groups``), one line per design:
    where two groups place it, the one with more seeds. ``runs``: the folders of the group that placed it (its
    ``pairing``), so that a design run in two folders (``crossover``) says whose steps and seeds these are."""
    p = pd.concat([placement(g, families).assign(runs=g["pairing"].iloc[0] if "pairing" in g and len(g) else None)
                   for g in groups], ignore_index=True)
    return p.sort_values("n", ascending=False, kind="stable").drop_duplicates("arm").sort_values(
        ["steps", "arm"], kind="stable").reset_index(drop=True)


def held_by_one(rows: pd.DataFrame, families, arm: str, at_least: int = 2) -> tuple[int, int]:
    """``(seeds whose chosen agent of arm holds at least at_least skills, seeds)``: does one agent hold several?"""
    ch = chosen_agents(rows, families)
    h = ch.loc[ch["arm"] == arm, "held"]
    return int((h >= at_least).sum()), len(h)


__all__ = ["ABOVE", "BELOW", "ON", "compute_table", "held_by_one", "placements", "load_data", "placement",
           "primary", "secondary", "seed_work"]
