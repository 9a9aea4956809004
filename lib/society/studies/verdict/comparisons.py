"""The society's central question from its tidy rows: is the founders' skill kept, where is it lost,
does breeding make generalists, and how does the society fare against the field's merge methods.

Rows as in :mod:`lib.society.studies.frames` (``lib.society.run.COLUMNS``). A family's *novel* region
(``test_<family>_novel``, :func:`lib.core.tasks.region`) is the part the bare base never saw in
pre-training: only the founder specialist of that family was trained on it, so accuracy there is the
skill the society can keep or lose. Seeds are the unit: every statistic is first reduced to one number
per seed, then a single mean carries its 95 % CI (t) (:func:`lib.society.studies.frames.ci_over_seeds`)
and a paired difference its 95 % CI (sign-flip inversion) with the exact p
(:func:`lib.society.studies.frames.paired_over_seeds`, :func:`lib.core.stats.paired_differences`).
Baseline arms (``baseline_…``) are one model (agent 0) at the last generation.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from lib.operators.ops import founder_family
from lib.core.stats import (BOUNDED_T_CI, WILSON_CI, bounded_t_ci, holm, paired_permutation_test, sign_flip_ci,
                            paired_differences, wilson_ci)
from lib.society.arms import BEST_MERGE, FIRST_VERDICT, MULTITASK, ONE_SHOT, REFERENCE, is_baseline
from lib.society.studies.diagnostics.comparisons import (_founder_family_points, founders_arm, inheritance_fidelity,
                                                         own_reference, recombination_gain, selection_differential)
from lib.society.studies.frames import (AGENT, RUN, _over_seeds, tied_pick, agents_wide, arms_in, base_scores, ci_over_seeds,
                                        last_generation, paired_over_seeds, parents_table, population_metric)

REGION = "novel"
VAL_BEST = " (val-best)"  # the column of an arm's val-selected agent: "full (val-best)"
FOUNDERS, BASE = "founders (mean)", "base"
STEPS = ("merge − parents' mean", "merge − best parent", "child − merge")
ALL = "all families"


def _founders(w: pd.DataFrame, rows: pd.DataFrame) -> pd.DataFrame:
    """The generation-0 agents of :func:`lib.society.studies.diagnostics.comparisons.founders_arm` (each founder
    once)."""
    return w[(w["arm"] == founders_arm(rows)) & (w["generation"] == 0)]


def _ranks(*orders):
    """A ``sort_values`` key: each column's values ranked by their place in the orders given."""
    rank = {v: i for order in orders for i, v in enumerate(order)}
    return lambda c: c.map(rank)


# ----------------------------------------------------------------------------- S3h retention


def skill_retention(rows: pd.DataFrame, families, region: str = REGION) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Accuracy on each family's ``region`` over the generations, and what it is measured against.

    ``points``: per (arm, seed, generation, family): ``statistic`` ``"mean"`` (mean over the agents of
    ``test_<family>_<region>``) and ``"best"`` (their maximum: the best agent, picked on test, an
    oracle), in ``value``; a baseline's one model gives both. ``references`` per (seed, family):
    ``"best founder"`` (generation 0, the maximum over the founders specialising in the family),
    ``"specialists' mean"`` (their mean) and ``"base"`` (``base_test_<family>_<region>``).
    Summaries: ``ci_over_seeds(points, ["arm", "family", "statistic", "generation"])`` and
    ``ci_over_seeds(references, ["family", "reference"])``.
    """
    keys = [f"test_{f}_{region}" for f in families]
    w = agents_wide(rows, keys)
    pts = []
    for f, k in zip(families, keys):
        g = w.dropna(subset=[k]).groupby(RUN)[k].agg(mean="mean", best="max").reset_index()
        pts.append(g.melt(id_vars=RUN, value_vars=["mean", "best"], var_name="statistic").assign(family=f))
    pts = pd.concat(pts, ignore_index=True)[RUN + ["family", "statistic", "value"]]
    fo = _founders(w, rows)
    base = base_scores(rows, [f"{f}_{region}" for f in families])
    refs = []
    for f, k in zip(families, keys):
        spec = fo[[founder_family(families, a) == f for a in fo["agent"]]].dropna(subset=[k])
        for s, g in spec.groupby("seed"):
            refs += [{"seed": s, "family": f, "reference": "best founder", "value": float(g[k].max())},
                     {"seed": s, "family": f, "reference": "specialists' mean", "value": float(g[k].mean())}]
        refs += [{"seed": s, "family": f, "reference": "base", "value": float(v)}
                 for s, v in base[f"{f}_{region}"].dropna().items()]
    return pts, pd.DataFrame(refs, columns=["seed", "family", "reference", "value"])


def retention_gaps(rows: pd.DataFrame, families, region: str = REGION) -> pd.DataFrame:
    """At each arm's last generation, paired by seed, per family: ``best`` agent − best founder and
    population ``mean`` − the specialists' mean on the family's ``region`` (:func:`skill_retention`):
    ``arm, family, statistic, reference, n, mean, lo, hi`` (95 % CI, sign-flip inversion), ``p``.
    Below 0: the founders' skill was not kept."""
    pts, refs = skill_retention(rows, families, region)
    last = pts[pts["generation"] == pts.groupby(["arm", "seed"])["generation"].transform("max")]
    ref = refs.pivot_table(index=["seed", "family"], columns="reference", values="value", aggfunc="first")
    out = []
    for stat, r in (("best", "best founder"), ("mean", "specialists' mean")):
        d = last[last["statistic"] == stat].join(ref[r].rename("ref"), on=["seed", "family"])
        d = d.assign(diff=d["value"] - d["ref"], statistic=stat, reference=r)
        out.append(paired_over_seeds(d, ["arm", "family", "statistic", "reference"]))
    out = pd.concat(out, ignore_index=True)
    return out.sort_values(["arm", "family"], key=_ranks(arms_in(pts), families), kind="stable").reset_index(drop=True)


# ----------------------------------------------------------------------------- S3i skill loss


def skill_loss(rows: pd.DataFrame, families, region: str = REGION) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Where a child's skill on ``region`` goes, step by step, for every bred child (not an elite) with
    ``source_test_*`` rows.

    Per child at t+1 and family f (and :data:`ALL`, the mean over families): ``parent_a``,
    ``parent_b`` = its parents' ``test_f_<region>`` at t (one parent twice for a copy: ``no_sex``),
    ``merge`` = its source's (``source_test_f_<region>``: the screened winning merge, or the copied
    parent), ``child`` = its own at t+1; ``copy`` = one parent. Steps (:data:`STEPS`): merge − mean of
    the parents (does merging, which scales each update by its weight, lose skill?), merge − the better
    parent, child − merge (does distillation on the source's answers lose it?). For a copy, merge −
    parent is 0 by construction. ``inherit_n`` is kept: a degenerate child (too few usable answers) is
    a copy of its source, not distilled.

    Returns ``(points, summary)``: ``points``: ``arm, seed, generation, agent, family, parent_a,
    parent_b, merge, child, copy, inherit_n`` and one column per step; ``summary``: per (arm, family,
    step) the per-seed mean difference, ``n, mean, lo, hi`` (95 % CI, sign-flip inversion), ``p``.
    """
    keys = {f: f"test_{f}_{region}" for f in families}
    cols = ["parent_a", "parent_b", "merge", "child"]
    birth = rows[rows["agent"] >= 0].pivot_table(index=AGENT, columns="metric", values="value", aggfunc="first")
    if not {f"source_{k}" for k in keys.values()} <= set(birth.columns):
        return pd.DataFrame(columns=_LOSS_COLUMNS), pd.DataFrame(columns=_LOSS_SUMMARY)
    birth = birth.reindex(columns=["elite", "inherit_n", *(f"source_{k}" for k in keys.values())])
    ch = parents_table(rows).join(birth, on=AGENT)
    ch = ch[(ch["elite"] != 1) & ch[[f"source_{k}" for k in keys.values()]].notna().any(axis=1)]
    test = agents_wide(rows, list(keys.values())).set_index(AGENT)

    def test_of(k, generation, agent):
        idx = pd.MultiIndex.from_arrays([ch["arm"], ch["seed"], generation, agent])
        return test[k].reindex(idx).to_numpy(float)

    parts = [pd.DataFrame({**{c: ch[c].to_numpy() for c in AGENT}, "family": f,
                           "parent_a": test_of(k, ch["generation"] - 1, ch["parent_a"]),
                           "parent_b": test_of(k, ch["generation"] - 1, ch["parent_b"]),
                           "merge": ch[f"source_{k}"].to_numpy(float),
                           "child": test_of(k, ch["generation"], ch["agent"]),
                           "copy": ch["copy"].to_numpy(), "inherit_n": ch["inherit_n"].to_numpy(float)})
             for f, k in keys.items()]
    pts = pd.concat(parts, ignore_index=True)
    whole = pts.dropna(subset=cols).groupby(AGENT).filter(lambda g: len(g) == len(keys))
    pooled = whole.groupby(AGENT, as_index=False).agg(**{c: (c, "mean") for c in cols}, copy=("copy", "first"),
                                                    inherit_n=("inherit_n", "first"))
    pts = pd.concat([pts, pooled.assign(family=ALL)], ignore_index=True)
    pts[STEPS[0]] = pts["merge"] - (pts["parent_a"] + pts["parent_b"]) / 2
    pts[STEPS[1]] = pts["merge"] - np.fmax(pts["parent_a"], pts["parent_b"]).where(
        pts[["parent_a", "parent_b"]].notna().all(axis=1))
    pts[STEPS[2]] = pts["child"] - pts["merge"]
    pts = pts[_LOSS_COLUMNS]
    long = pts.melt(id_vars=AGENT + ["family"], value_vars=list(STEPS), var_name="step", value_name="diff")
    summ = paired_over_seeds(long, ["arm", "family", "step"])
    summ = summ.sort_values(["arm", "family", "step"], key=_ranks(arms_in(pts), list(families) + [ALL], STEPS))
    summ = summ.reset_index(drop=True)
    return pts, summ


_LOSS_COLUMNS = AGENT + ["family", "parent_a", "parent_b", "merge", "child", "copy", "inherit_n", *STEPS]
_LOSS_SUMMARY = ["arm", "family", "step", "n", "mean", "lo", "hi", "p"]


# ----------------------------------------------------------------------------- S3j generalists


def generalists(rows: pd.DataFrame, families, min_families=(1, 2)) -> pd.DataFrame:
    """Per (arm, seed, generation) and threshold k in ``min_families``: ``count`` = the agents whose
    ``test_f`` is strictly above the bare base's ``base_test_f`` (same seed) on at least k families,
    ``agents`` = the population size, ``share`` = count / agents. A baseline is one agent.
    Summaries: ``ci_over_seeds(points, ["arm", "k", "generation"], "count" | "share")``."""
    keys = [f"test_{f}" for f in families]
    w = agents_wide(rows, keys)
    base = base_scores(rows, families)
    above = np.zeros(len(w), int)
    for f, k in zip(families, keys):
        b = base[f].reindex(w["seed"]).to_numpy(float)
        above += (w[k].to_numpy(float) > b).astype(int)  # NaN compares False: no base, no win
    w = w.assign(above=above)
    out = []
    for k in min_families:
        g = w.assign(hit=(w["above"] >= k).astype(int)).groupby(RUN, as_index=False).agg(
            count=("hit", "sum"), agents=("hit", "size"))
        out.append(g.assign(k=int(k)))
    pts = pd.concat(out, ignore_index=True)
    pts["share"] = pts["count"] / pts["agents"]
    return pts[RUN + ["k", "count", "agents", "share"]]


def generalist_shares(rows: pd.DataFrame, families) -> pd.DataFrame:
    """S3j's summary, as drawn: per (arm, k, generation) the share of the population above the bare base on ≥ k
    families, ``n`` seeds, ``mean, lo, hi`` and ``interval``: a society arm's mean over seeds with its
    95 % CI (t) cut to [0, 1]; a baseline's (one model, 0 or 1 per seed) share of seeds with its Wilson interval."""
    pts = generalists(rows, families, min_families=(2, 1))
    base = pts["arm"].map(is_baseline)
    arms = ci_over_seeds(pts[~base], ["arm", "k", "generation"], "share")
    arms[["lo", "hi"]] = arms[["lo", "hi"]].astype(float).clip(0.0, 1.0)
    out = [arms.assign(interval=BOUNDED_T_CI)]
    for (arm, k, g), part in pts[base].groupby(["arm", "k", "generation"], sort=True):
        per_seed = part.groupby("seed")["share"].mean()
        m, lo, hi = wilson_ci(float(per_seed.sum()), int(len(per_seed)))
        out.append(pd.DataFrame([{"arm": arm, "k": k, "generation": g, "n": int(len(per_seed)), "mean": m, "lo": lo,
                                  "hi": hi, "interval": WILSON_CI}]))
    return pd.concat(out, ignore_index=True)[["arm", "k", "generation", "n", "mean", "lo", "hi", "interval"]]


# ----------------------------------------------------------------------------- Fig. 3f comparison


def method_scores(rows: pd.DataFrame, families) -> pd.DataFrame:
    """Per (method, seed, metric) at the last generation, ``value`` = test accuracy (``metric``:
    ``overall`` or a family). Methods, in this order: every plain society arm (its population mean;
    variants ``<arm>@…`` are compared in S3g; a breeding arm run beside its own ``full``, with it in
    Fig. 3a, :func:`lib.society.studies.diagnostics.comparisons.own_reference`), each one's val-selected agent ``<arm>
    (val-best)`` (the last generation's agent with the highest ``val_overall``, what a user would deploy; an exact tie is the
    tied agents' mean, :func:`lib.society.studies.frames.tied_pick`, not the lowest seat), every baseline (its one model), :data:`FOUNDERS` (generation 0's population mean, from
    :func:`lib.society.studies.diagnostics.comparisons.founders_arm`) and :data:`BASE` (the bare base)."""
    keys = ["overall"] + list(families)
    cols = [f"test_{k}" for k in keys]
    w = agents_wide(rows, cols)
    last = last_generation(w)
    arms = [a for a in arms_in(rows) if "@" not in a and own_reference(a, arms_in(rows)) is None]
    pop, best = [], []
    for arm in arms:
        for seed, g in last[last["arm"] == arm].groupby("seed"):
            pop += [(arm, seed, k, float(g[c].mean())) for k, c in zip(keys, cols)]
            if not is_baseline(arm) and g["val_overall"].notna().any():
                top = tied_pick(g.dropna(subset=["val_overall"]), ["arm", "seed"], "val_overall",
                                list(dict.fromkeys(cols))).iloc[0]
                best += [(arm + VAL_BEST, seed, k, float(top[c])) for k, c in zip(keys, cols)]
    lines = [r for r in pop if not is_baseline(r[0])] + best + [r for r in pop if is_baseline(r[0])]
    for seed, g in _founders(w, rows).groupby("seed"):
        lines += [(FOUNDERS, seed, k, float(g[c].mean())) for k, c in zip(keys, cols)]
    base = base_scores(rows, keys)
    lines += [(BASE, s, k, float(base.loc[s, k])) for s in base.index for k in keys if np.isfinite(base.loc[s, k])]
    return pd.DataFrame(lines, columns=["method", "seed", "metric", "value"])


def method_costs(rows: pd.DataFrame, walls: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per run (arm, seed): ``train_steps`` (LoRA optimizer steps, founders included) and ``val_evals``
    (model evaluations on val) from the ``cost_*`` rows at its last generation, and ``wall_s``, the sum
    of its generations' wall seconds (``walls``: ``arm, seed, generation, wall_s``, from the progress
    files; NaN without them). Machine-dependent: wall seconds compare runs made on one machine."""
    d = rows[(rows["agent"] == -1) & rows["metric"].isin(["cost_train_steps", "cost_val_evals"])]
    d = d[d["generation"] == d.groupby(["arm", "seed"])["generation"].transform("max")]
    out = d.pivot_table(index=["arm", "seed"], columns="metric", values="value", aggfunc="first")
    out = out.rename(columns={"cost_train_steps": "train_steps", "cost_val_evals": "val_evals"})
    for c in ("train_steps", "val_evals"):
        if c not in out:
            out[c] = np.nan
    out["wall_s"] = (walls.groupby(["arm", "seed"])["wall_s"].sum().reindex(out.index)
                     if walls is not None and len(walls) else np.nan)
    out.columns.name = None
    return out.reset_index()[["arm", "seed", "train_steps", "val_evals", "wall_s"]]


def comparison(rows: pd.DataFrame, families, walls: pd.DataFrame | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Fig. 3f: every method of :func:`method_scores` minus :data:`REFERENCE` (``full``'s population
    mean) on the same seed, per metric.

    Returns ``(points, summary)``: ``points``: ``metric, method, seed, diff``; ``summary`` per (metric,
    method), methods in :func:`method_scores` order and ``full`` itself first: ``reference, n, mean``
    (mean difference), ``lo, hi`` (95 % CI, sign-flip inversion; unbounded with n < 6), ``p`` (exact
    sign-flip; NaN with one seed), ``accuracy`` (the method's own mean over seeds) and its cost, the
    mean over seeds of :func:`method_costs` (``train_steps, val_evals, wall_s``; a val-best agent costs
    its arm's run; founders and base: NaN, they are where every method starts).
    """
    scores = method_scores(rows, families)
    cols = ["metric", "method", "reference", "n", "mean", "lo", "hi", "p", "accuracy", "train_steps",
            "val_evals", "wall_s"]
    if REFERENCE not in set(scores["method"]):
        return pd.DataFrame(columns=["metric", "method", "seed", "diff"]), pd.DataFrame(columns=cols)
    pts, summ = paired_differences(scores, group="method", reference=REFERENCE, by=["metric"])
    acc = scores.groupby(["metric", "method"], as_index=False)["value"].mean().rename(columns={"value": "accuracy"})
    summ = acc.merge(summ.drop(columns="test"), on=["metric", "method"], how="left")
    own = summ["method"] == REFERENCE
    summ.loc[own, "reference"] = REFERENCE
    summ.loc[own, "n"] = scores.loc[scores["method"] == REFERENCE].groupby("metric")["seed"].nunique().reindex(
        summ.loc[own, "metric"]).to_numpy()
    cost = method_costs(rows, walls).groupby("arm")[["train_steps", "val_evals", "wall_s"]].mean()
    summ = summ.assign(arm=summ["method"].str.removesuffix(VAL_BEST)).join(cost, on="arm").drop(columns="arm")
    summ = summ.sort_values(["metric", "method"], key=_ranks(dict.fromkeys(scores["metric"]),
                                                           dict.fromkeys(scores["method"])))
    return pts, summ.reset_index(drop=True)[cols]


# ----------------------------------------------------------------------------- pre-registered comparisons


def best_one_shot(rows: pd.DataFrame) -> tuple[str, pd.Series]:
    """The one-shot merge a practitioner would pick without seeing test: of :data:`ONE_SHOT`, the one
    with the highest mean ``val_overall`` over seeds. Returns ``(arm, mean val per arm)``."""
    d = rows[rows["arm"].isin(ONE_SHOT) & (rows["metric"] == "val_overall")]
    if d.empty:
        raise ValueError(f"no val_overall rows of the one-shot merges {list(ONE_SHOT)}")
    val = d.groupby(["arm", "seed"])["value"].mean().groupby("arm").mean().sort_values(ascending=False)
    return str(val.index[0]), val


def primary_comparisons(rows: pd.DataFrame, families) -> pd.DataFrame:
    """The three comparisons pre-registered in ``configs/society/cpu.yaml``: outcome = population
    accuracy on the unseen test at the last generation (``overall`` of :func:`method_scores`), per seed;
    ``full`` − ``no_grounding``, ``full`` − the best one-shot merge (:func:`best_one_shot`, chosen on
    val) and ``full`` − ``baseline_multitask``, paired over the seeds both have.

    Returns one row per comparison: ``comparison, other, n, full, other_acc`` (means over those seeds),
    ``diff`` (mean of full − other), ``lo, hi`` (95 % CI, sign-flip inversion), ``p`` (exact sign-flip)
    and ``p_holm`` (Holm's adjustment over the three)."""
    scores = method_scores(rows, families)
    wide = scores[scores["metric"] == "overall"].pivot_table(index="seed", columns="method", values="value")
    merge, _ = best_one_shot(rows)
    out = []
    for name, other in FIRST_VERDICT:
        other = merge if other == BEST_MERGE else other
        if REFERENCE not in wide or other not in wide:
            raise ValueError(f"the primary comparison needs rows of {REFERENCE!r} and {other!r}")
        both = wide[[REFERENCE, other]].dropna()
        d = (both[REFERENCE] - both[other]).to_numpy()
        t = paired_permutation_test(both[REFERENCE].to_numpy(), both[other].to_numpy())
        lo, hi = sign_flip_ci(d)
        out.append({"comparison": f"full − {name}", "other": other, "n": len(d), REFERENCE: both[REFERENCE].mean(),
                    "other_acc": both[other].mean(), "diff": float(d.mean()), "lo": lo, "hi": hi, "p": t["p"]})
    table = pd.DataFrame(out)
    table["p_holm"] = holm(table["p"].to_numpy())
    return table


# ----------------------------------------------------------------------------- the first run's account (docs/results.md)


def bounded_over_seeds(points: pd.DataFrame, by: list[str], value: str = "value") -> pd.DataFrame:
    """:func:`lib.society.studies.frames.ci_over_seeds` for accuracies: per group of ``by``, ``n`` seeds,
    the mean over seeds of the per-seed means and its 95 % CI (t, within [0, 1])
    (:func:`lib.core.stats.bounded_t_ci`) ``lo, hi``."""
    return _over_seeds(points, by, value, lambda x: dict(zip(("mean", "lo", "hi"), bounded_t_ci(x))),
                       ["mean", "lo", "hi"])


def testbed_families(rows: pd.DataFrame, families, region: str = REGION) -> pd.DataFrame:
    """The test-bed at generation 0, per family (and ``"overall"``, the base only): the bare base on
    test (``base``) and on the family's ``region`` (``base_region``), both means over seeds of the
    seed's test pool; the founders specialising in the family on it, ``specialists`` with its 95 % CI
    (t, within [0, 1]) ``lo, hi``; the other founders on it (``others``); ``n`` seeds."""
    base = base_scores(rows, ["overall", *families, *(f"{f}_{region}" for f in families)])
    pts = _founder_family_points(rows, families)
    out = []
    for f in families:
        g = pts[pts["family"] == f].dropna(subset=["specialists"])
        m, lo, hi = bounded_t_ci(g["specialists"]) if len(g) else (np.nan, np.nan, np.nan)
        out.append({"family": f, "n": len(g), "base": base[f].mean(), "base_region": base[f"{f}_{region}"].mean(),
                    "specialists": m, "lo": lo, "hi": hi, "others": float(g["others"].mean())})
    out.append({"family": "overall", "n": int(base["overall"].notna().sum()), "base": base["overall"].mean(),
                "base_region": np.nan, "specialists": np.nan, "lo": np.nan, "hi": np.nan, "others": np.nan})
    return pd.DataFrame(out, columns=["family", "n", "base", "base_region", "specialists", "lo", "hi", "others"])


def method_summary(rows: pd.DataFrame, families, walls: pd.DataFrame | None = None) -> pd.DataFrame:
    """Fig. 3f on the whole test (``overall``), one row per method of :func:`method_scores`: the
    summary of :func:`comparison` (``accuracy``; − ``full``: ``n, mean, lo, hi, p``; the cost), with
    the accuracy's 95 % CI (t, within [0, 1]) ``acc_lo, acc_hi``, the method − the bare base paired by
    seed (``base_mean, base_lo, base_hi`` (sign-flip inversion), ``base_p``) and, for the one-shot
    merges, ``val``: the mean val accuracy :func:`best_one_shot` picks the best merge on."""
    scores = method_scores(rows, families)
    overall = scores[scores["metric"] == "overall"]
    _, summ = comparison(rows, families, walls)
    summ = summ[summ["metric"] == "overall"].drop(columns="metric")
    acc = bounded_over_seeds(overall, ["method"]).set_index("method")
    summ = summ.join(acc[["lo", "hi"]].rename(columns={"lo": "acc_lo", "hi": "acc_hi"}), on="method")
    cols = ["base_mean", "base_lo", "base_hi", "base_p"]
    if BASE in set(overall["method"]):
        _, vb = paired_differences(overall, group="method", reference=BASE)
        summ = summ.join(vb.set_index("method")[["mean", "lo", "hi", "p"]].set_axis(cols, axis=1), on="method")
    else:
        summ = summ.assign(**dict.fromkeys(cols, np.nan))
    val = best_one_shot(rows)[1] if rows["arm"].isin(ONE_SHOT).any() else pd.Series(dtype=float)
    return summ.assign(val=summ["method"].map(val)).reset_index(drop=True)


def population_difference(rows: pd.DataFrame, metric: str, arm: str, reference: str) -> pd.Series:
    """``arm`` − ``reference`` on a population metric (``consensus_acc``, ...: the mean over its rows
    of an (arm, seed, generation)) at the last generation, paired by seed: ``n, mean, lo, hi``
    (95 % CI, sign-flip inversion), ``p`` (:func:`lib.core.stats.paired_differences`)."""
    last = last_generation(population_metric(rows, metric))
    _, s = paired_differences(last[last["arm"].isin([arm, reference])], group="arm", reference=reference)
    if s.empty:
        raise ValueError(f"no seed has {metric!r} of both {arm!r} and {reference!r}")
    return s.iloc[0][["n", "mean", "lo", "hi", "p"]]


def retention_summary(rows: pd.DataFrame, families, arm: str = REFERENCE, region: str = REGION) -> pd.DataFrame:
    """S3h in one row per family (:func:`skill_retention`, :func:`retention_gaps`): ``arm``'s
    population mean on the family's ``region`` at generation 0 (``founders``: all of them), 1 (the
    first bred generation, ``first``) and its last (``last``), means over seeds; the ``best founder``
    (mean over seeds); ``arm``'s best agent (an oracle pick on test) − the best founder at the last
    generation, paired by seed: ``n, gap, lo, hi`` (95 % CI, sign-flip inversion), ``p``; and the same
    gap of :data:`MULTITASK` (``multitask_gap``; NaN without it)."""
    pts, refs = skill_retention(rows, families, region)
    pop = ci_over_seeds(pts[(pts["arm"] == arm) & (pts["statistic"] == "mean")], ["family", "generation"])
    pop = pop.set_index(["family", "generation"])["mean"]
    last = int(pts.loc[pts["arm"] == arm, "generation"].max())
    best = ci_over_seeds(refs[refs["reference"] == "best founder"], ["family"]).set_index("family")["mean"]
    gaps = retention_gaps(rows, families, region)
    gaps = gaps[gaps["statistic"] == "best"].set_index(["arm", "family"])
    out = []
    for f in families:
        g = gaps.loc[(arm, f)] if (arm, f) in gaps.index else pd.Series(dtype=float)
        out.append({"family": f, "founders": pop.get((f, 0), np.nan), "first": pop.get((f, 1), np.nan),
                    "last": pop.get((f, last), np.nan), "best founder": best.get(f, np.nan),
                    "n": g.get("n", np.nan), "gap": g.get("mean", np.nan), "lo": g.get("lo", np.nan),
                    "hi": g.get("hi", np.nan), "p": g.get("p", np.nan),
                    "multitask_gap": gaps["mean"].get((MULTITASK, f), np.nan)})
    return pd.DataFrame(out)


def first_generation_loss(rows: pd.DataFrame, families, generation: int = 1,
                          region: str = REGION) -> tuple[pd.DataFrame, pd.DataFrame]:
    """:func:`skill_loss` at one ``generation`` (default: the first bred one, the founders' children).

    Returns ``(levels, steps)``: ``levels`` per (arm, family): ``n`` seeds and the means over seeds of
    the per-seed means of ``parent_a``, ``parent_b`` (the parents in pair order), ``better``,
    ``worse`` (the pair's higher and lower), ``parents`` (their mean), ``merge`` and ``child``;
    ``steps`` per (arm, family, step of :data:`STEPS`): ``n, mean, lo, hi`` (95 % CI, sign-flip
    inversion), ``p``."""
    pts, _ = skill_loss(rows, families, region)
    pts = pts[pts["generation"] == generation]
    pts = pts.assign(better=np.fmax(pts["parent_a"], pts["parent_b"]), worse=np.fmin(pts["parent_a"], pts["parent_b"]),
                     parents=(pts["parent_a"] + pts["parent_b"]) / 2)
    cols = ["parent_a", "parent_b", "better", "worse", "parents", "merge", "child"]
    per_seed = pts.groupby(["arm", "family", "seed"])[cols].mean()
    levels = per_seed.groupby(["arm", "family"]).mean().join(
        per_seed.groupby(["arm", "family"]).size().rename("n")).reset_index()
    long = pts.melt(id_vars=AGENT + ["family"], value_vars=list(STEPS), var_name="step", value_name="diff")
    return levels[["arm", "family", "n", *cols]], paired_over_seeds(long, ["arm", "family", "step"])


def founder_selection(rows: pd.DataFrame, families) -> pd.DataFrame:
    """Which founders become parents, per (arm, family) at generation 0 of every society arm (not a
    baseline): ``val`` (the family's founders' mean ``val_overall``: per seed, then the mean over
    seeds), ``selected`` (how many of the family's founders were selected as parents, over all seeds),
    ``slots`` (how many were selected in all: the arm's parent slots of generation 0) and ``n`` seeds."""
    w = agents_wide(rows, ["val_overall"])
    w = w[(w["generation"] == 0) & ~w["arm"].map(is_baseline)]
    w = w.assign(family=[founder_family(families, a) for a in w["agent"]], selected=w["selected"].astype(int))
    val = w.groupby(["arm", "family", "seed"])["val_overall"].mean().groupby(["arm", "family"]).mean()
    out = pd.DataFrame({"val": val, "selected": w.groupby(["arm", "family"])["selected"].sum()}).reset_index()
    out = out.join(w.groupby("arm")["selected"].sum().rename("slots"), on="arm")
    out = out.join(w.groupby("arm")["seed"].nunique().rename("n"), on="arm")
    out = out.sort_values(["arm", "family"], key=_ranks(arms_in(w), families))
    return out.reset_index(drop=True)[["arm", "family", "n", "val", "selected", "slots"]]


def generalist_summary(rows: pd.DataFrame, families) -> pd.DataFrame:
    """S3j per arm (:func:`generalists`) and, first, :data:`FOUNDERS` (generation 0 of
    :func:`lib.society.studies.diagnostics.comparisons.founders_arm`): ``n`` seeds, ``agents`` (population size), at the
    last generation the mean per population of the agents above the bare base on ≥ 1 family
    (``one``) and on ≥ 2 (``two``), ``seeds_two`` (the seeds with at least one agent above it on
    ≥ 2), and ``most_two`` (the most agents above it on ≥ 2 in one population of any generation
    after the founders; a baseline: its one model)."""
    pts = generalists(rows, families)
    last = last_generation(pts)
    f0 = pts[(pts["arm"] == founders_arm(rows)) & (pts["generation"] == 0)]
    parts = [(FOUNDERS, f0, pd.DataFrame(columns=pts.columns))]
    parts += [(a, last[last["arm"] == a], pts[(pts["arm"] == a) & ((pts["generation"] >= 1) | is_baseline(a))])
              for a in arms_in(pts)]
    out = []
    for name, x, later in parts:
        one, two = x[x["k"] == 1], x[x["k"] == 2]
        later = later[later["k"] == 2]
        out.append({"arm": name, "n": int(one["seed"].nunique()), "agents": float(one["agents"].mean()),
                    "one": float(one["count"].mean()), "two": float(two["count"].mean()),
                    "seeds_two": int((two["count"] > 0).sum()),
                    "most_two": float(later["count"].max()) if len(later) else np.nan})
    return pd.DataFrame(out)


def operator_summary(rows: pd.DataFrame) -> pd.DataFrame:
    """S3d–S3f per society arm, over the breeding generations, each a mean over seeds with its 95 % CI
    (t): the selection differential on test and val (``sel_test``, ``sel_val`` with ``_lo, _hi``:
    :func:`lib.society.studies.diagnostics.comparisons.selection_differential`); the recombination gain on val and the
    shares of screenings won by the plain average and tied (``gain``, ``plain_share``, ``tie_share``
    and their ``_lo, _hi``: :func:`lib.society.studies.diagnostics.comparisons.recombination_gain`); the mutation load,
    child − source on test (``load``, ``load_lo``, ``load_hi``:
    :func:`lib.society.studies.diagnostics.comparisons.inheritance_fidelity`, pooled over generations); ``n`` seeds."""
    _, sel = selection_differential(rows)
    _, gain = recombination_gain(rows)
    pts, _ = inheritance_fidelity(rows)
    load = ci_over_seeds(pts, ["arm"], "diff")
    arms = [a for a in arms_in(rows) if not is_baseline(a)]
    out = pd.DataFrame({"arm": arms})
    for m in ("test", "val"):
        s = sel[sel["metric"] == m].set_index("arm")[["mean", "lo", "hi"]]
        out = out.join(s.set_axis([f"sel_{m}", f"sel_{m}_lo", f"sel_{m}_hi"], axis=1), on="arm")
    out = out.join(gain.set_index("arm").drop(columns=["n", "children"]), on="arm")
    out = out.join(load.set_index("arm")[["mean", "lo", "hi"]].set_axis(["load", "load_lo", "load_hi"], axis=1), on="arm")
    n = rows[rows["arm"].isin(arms)].groupby("arm")["seed"].nunique()
    return out.assign(n=out["arm"].map(n))


def breeding_skill(rows: pd.DataFrame, families, family: str, region: str = REGION) -> pd.DataFrame:
    """How each society arm's way of breeding treats ``family``'s ``region`` skill: at the first bred
    generation (:func:`first_generation_loss`) the parents' mean, the merge, ``merge − parents'
    mean`` (``gain, gain_lo, gain_hi``: sign-flip), the child and ``child − merge`` (``loss, loss_lo,
    loss_hi``); the population mean on it at generations 1, 2 and the last (``pop_1``, ``pop_2``,
    ``pop_last``, :func:`skill_retention`); at the last generation the mean per population of the
    agents above the bare base on ≥ 1 family (``above``, :func:`generalists`); ``n`` seeds."""
    levels, steps = first_generation_loss(rows, families, region=region)
    levels = levels[levels["family"] == family].set_index("arm")
    steps = steps[steps["family"] == family].set_index(["arm", "step"])
    pts, _ = skill_retention(rows, families, region)
    mine = pts[(pts["family"] == family) & (pts["statistic"] == "mean")]
    pop = ci_over_seeds(mine, ["arm", "generation"]).set_index(["arm", "generation"])["mean"]
    pop_last = ci_over_seeds(last_generation(mine), ["arm"]).set_index("arm")["mean"]
    gen = generalists(rows, families)
    above = ci_over_seeds(last_generation(gen[gen["k"] == 1]), ["arm"], "count").set_index("arm")["mean"]
    out = []
    for a in [a for a in arms_in(rows) if not is_baseline(a)]:
        row = {"arm": a, "n": levels["n"].get(a, np.nan), "parents": levels["parents"].get(a, np.nan),
               "merge": levels["merge"].get(a, np.nan), "child": levels["child"].get(a, np.nan)}
        for name, step in (("gain", STEPS[0]), ("loss", STEPS[2])):
            s = steps.loc[(a, step)] if (a, step) in steps.index else pd.Series(dtype=float)
            row.update({name: s.get("mean", np.nan), f"{name}_lo": s.get("lo", np.nan), f"{name}_hi": s.get("hi", np.nan)})
        row.update({"pop_1": pop.get((a, 1), np.nan), "pop_2": pop.get((a, 2), np.nan),
                    "pop_last": pop_last.get(a, np.nan), "above": above.get(a, np.nan)})
        out.append(row)
    return pd.DataFrame(out)


# ----------------------------------------------------------------------------- the reference run again


def full_reproduction(ref: pd.DataFrame, own: pd.DataFrame) -> dict:
    """How ``own``'s ``full`` compares with ``ref``'s ``full`` on the seeds of ``own`` (every row the two
    share, to 1e-9): ``same`` seeds equal row for row, ``gen0`` seeds where only generation 0's rows
    differ (``rows0`` of them: the founders' evaluation; every bred generation the same), ``other`` the
    rest, of the ``n`` ``seeds``."""
    keys = ["generation", "agent", "metric"]
    same, gen0, other, rows0 = 0, 0, 0, 0
    seeds = sorted(set(own.loc[own["arm"] == REFERENCE, "seed"]))
    for seed in seeds:
        a = ref[(ref["arm"] == REFERENCE) & (ref["seed"] == seed)]
        b = own[(own["arm"] == REFERENCE) & (own["seed"] == seed)]
        m = a.merge(b, on=keys, suffixes=("_a", "_b"))
        off = ~np.isclose(m["value_a"], m["value_b"], rtol=0, atol=1e-9, equal_nan=True)
        if len(m) != len(a) or len(m) != len(b) or (off & (m["generation"] > 0).to_numpy()).any():
            other += 1
        elif off.any():
            gen0, rows0 = gen0 + 1, rows0 + int(off.sum())
        else:
            same += 1
    return {"same": same, "gen0": gen0, "rows0": rows0, "other": other, "n": len(seeds), "seeds": seeds}
