"""The operators' diagnostics: how selection, breeding and inheritance behave, computed from the society's
tidy rows (no torch; pandas/numpy only), read through :mod:`lib.society.studies.frames`.

Seeds are the unit of replication: a statistic is first reduced to one number per seed (a mean over
agents, children and/or generations within that seed, or a correlation within it), then summarised
by the mean over seeds with its 95 % CI (t) (:func:`lib.core.stats.t_ci`; NaN with one seed) and,
for paired comparisons, the sign-flip p with its 95 % CI (sign-flip inversion)
(:func:`lib.core.stats.paired_differences`). Every arm of a seed starts from the same founders
(identical generation-0 agents), so founders are read from one arm (:func:`founders_arm`) and
counted once. Functions that need the task families take them (the config's ``families``): a
founder's family is :func:`lib.operators.ops.founder_family`.
"""
from __future__ import annotations

import re

import numpy as np
import pandas as pd

from lib.operators.ops import founder_family
from lib.society.arms import BESIDE, BREEDING_ARMS, REFERENCE, is_baseline
from lib.core.stats import paired_differences, t_ci
from lib.society.studies.frames import AGENT, RUN, agents_wide, arms_in, ci_over_seeds

GAP_EACH, GAP_MEAN, SIGNAL_R = 0.10, 0.15, 0.5  # the preconditions stated in configs/society/cpu.yaml


# ----------------------------------------------------------------------------- references run beside other arms


def own_reference(arm: str, arms) -> str | None:
    """The reference run beside ``arm`` at the same commit, in the same folder: :data:`BESIDE` for a
    breeding arm when it is among ``arms``; else ``None`` (the arm is compared with the main ``full``).
    A breeding arm is never paired with a ``full`` of another folder when its own is there."""
    return BESIDE if arm in BREEDING_ARMS and BESIDE in set(arms) else None


# ----------------------------------------------------------------------------- founders


def founders_arm(rows: pd.DataFrame) -> str:
    """The arm the founders are read from: ``full`` when present, else the first arm in the rows
    that is not a baseline. Every arm of a seed starts from the same founders (its generation-0
    agents are identical across arms), so one arm counts each founder once."""
    arms = [a for a in dict.fromkeys(rows["arm"]) if not is_baseline(a)]
    return REFERENCE if REFERENCE in arms else str(arms[0])


def _founder_rows(rows: pd.DataFrame) -> pd.DataFrame:
    return rows[(rows["arm"] == founders_arm(rows)) & (rows["generation"] == 0)]


def founders_matrix(rows: pd.DataFrame, families) -> pd.DataFrame:
    """Generation-0 test accuracy, agent × family, mean over seeds, read from :func:`founders_arm`.

    Index: ``agent`` (−1 = the bare base, from its ``base_test_<family>`` rows; 0… = founders);
    columns: ``role`` ("base" or the founder's family, :func:`founder_family`), one column per family
    (test accuracy on that family), ``overall`` (``test_overall``/``base_test_overall``) and ``n`` (seeds).
    """
    d = _founder_rows(rows)
    out = []
    base = d[d["agent"] == -1]
    if len(base):
        r = {"agent": -1, "role": "base", "n": int(base["seed"].nunique())}
        for f in list(families) + ["overall"]:
            v = base.loc[base["metric"] == f"base_test_{f}", "value"]
            r[f] = float(v.mean()) if len(v) else np.nan
        out.append(r)
    ag = d[d["agent"] >= 0]
    for a in sorted(ag["agent"].unique()):
        x = ag[ag["agent"] == a]
        r = {"agent": int(a), "role": founder_family(families, a), "n": int(x["seed"].nunique())}
        for f in list(families) + ["overall"]:
            v = x.loc[x["metric"] == f"test_{f}", "value"]
            r[f] = float(v.mean()) if len(v) else np.nan
        out.append(r)
    return pd.DataFrame(out, columns=["agent", "role", *families, "overall", "n"]).set_index("agent")


def _founder_family_points(rows: pd.DataFrame, families) -> pd.DataFrame:
    """Per (seed, family f) at generation 0: ``specialists`` = mean test_f over every founder
    specialising in f (agents a with a mod F = f's index), ``others`` = mean test_f over the other
    founders, ``base`` = the bare base's test_f (NaN without ``base_test_f``)."""
    d = _founder_rows(rows)
    out = []
    for s, x in d.groupby("seed", sort=True):
        for f in families:
            v = x[(x["metric"] == f"test_{f}") & (x["agent"] >= 0)]
            spec = pd.Series([founder_family(families, a) == f for a in v["agent"]], index=v.index, dtype=bool)
            b = x.loc[(x["agent"] == -1) & (x["metric"] == f"base_test_{f}"), "value"]
            out.append({"seed": int(s), "family": f,
                        "specialists": float(v.loc[spec, "value"].mean()) if spec.any() else np.nan,
                        "others": float(v.loc[~spec, "value"].mean()) if (~spec).any() else np.nan,
                        "base": float(b.mean()) if len(b) else np.nan})
    return pd.DataFrame(out, columns=["seed", "family", "specialists", "others", "base"])


def own_family_scores(rows: pd.DataFrame, families) -> pd.DataFrame:
    """Founders on their own family against the bare base, generation 0 (read from
    :func:`founders_arm`).

    Per seed and family f: the mean test_f of *all* founders specialising in f, of the other
    founders and of the base; then per family ``n`` seeds, the means over seeds and the 95 % CI (t)
    of the specialists' score ``lo, hi``.
    """
    pts = _founder_family_points(rows, families)
    out = []
    for f in families:
        g = pts[pts["family"] == f]
        m, lo, hi = t_ci(g["specialists"]) if g["specialists"].notna().any() else (np.nan, np.nan, np.nan)
        out.append({"family": f, "n": int(g["specialists"].notna().sum()), "specialists": m, "lo": lo,
                    "hi": hi, "others": float(g["others"].mean()), "base": float(g["base"].mean())})
    return pd.DataFrame(out, columns=["family", "n", "specialists", "lo", "hi", "others", "base"])


def specialist_gaps(rows: pd.DataFrame, families, *, per_seed: bool = False) -> pd.DataFrame:
    """How much each family's specialists beat the other founders on that family, at generation 0.

    Per seed and family f: gap_f = mean(test_f over every founder specialising in f) − mean(test_f
    over the other founders); ``"mean"`` is the mean of gap_f over families, per seed. Read from
    :func:`founders_arm`. ``per_seed``: the per-seed gaps (``family, seed, gap``); else per family
    (and ``"mean"``): ``n`` seeds, the mean over seeds and its 95 % CI (t) ``lo, hi``.
    """
    fp = _founder_family_points(rows, families)
    fp = fp.assign(gap=fp["specialists"] - fp["others"]).dropna(subset=["gap"])
    pts = fp[["family", "seed", "gap"]]
    full = pts.groupby("seed").filter(lambda g: len(g) == len(families))
    means = full.groupby("seed", as_index=False)["gap"].mean().assign(family="mean")
    pts = pd.concat([pts, means[["family", "seed", "gap"]]], ignore_index=True)
    pts = pts.sort_values(["seed"], kind="stable").reset_index(drop=True)
    if per_seed:
        return pts
    summ = ci_over_seeds(pts, ["family"], "gap")
    order = {f: i for i, f in enumerate(list(families) + ["mean"])}
    return summ.sort_values("family", key=lambda c: c.map(order)).reset_index(drop=True)


# ----------------------------------------------------------------------------- selection signal


def _centre(w: pd.DataFrame, cols) -> pd.DataFrame:
    return w[cols] - w.groupby(RUN)[cols].transform("mean")


def _pearson(x, y) -> float:
    x, y = np.asarray(x, float), np.asarray(y, float)
    ok = ~(np.isnan(x) | np.isnan(y))
    x, y = x[ok], y[ok]
    if x.size < 2 or x.std() == 0 or y.std() == 0:
        return float("nan")
    return float(np.corrcoef(x, y)[0, 1])


SIGNALS = (("val ~ test", "val_overall", "test_overall"),
           ("val half a ~ half b", "val_half_a", "val_half_b"),
           ("score ~ val", "score", "val_overall"),
           ("score ~ conformity", "score", "conformity"))
BREEDING, FOUNDERS = "breeding generations", "founders"


def _signal_agents(rows: pd.DataFrame, scope: str) -> pd.DataFrame:
    """The agents a within-generation correlation is taken over: :data:`BREEDING` = the children
    (generation ≥ 1) of every arm; :data:`FOUNDERS` = generation 0 of :func:`founders_arm` only, so
    each founder counts once (not once per arm)."""
    w = agents_wide(rows[~rows["arm"].map(is_baseline)],
                    ["val_overall", "test_overall", "val_half_a", "val_half_b"])
    if scope == BREEDING:
        return w[w["generation"] >= 1].reset_index(drop=True)
    if scope == FOUNDERS:
        return w[(w["generation"] == 0) & (w["arm"] == founders_arm(rows))].reset_index(drop=True)
    raise ValueError(f"scope must be {BREEDING!r} or {FOUNDERS!r}, got {scope!r}")


def selection_signal(rows: pd.DataFrame, *, by_arm: bool = True) -> pd.DataFrame:
    """Within-generation correlations among agents, per seed, then across seeds.

    Each variable is centred on its (arm, seed, generation) mean (x − x̄ within the population); per
    seed, Pearson r is taken over that seed's agents pooled (``arm = "all"``) and, with ``by_arm``,
    within each arm; ``r`` is the mean of the per-seed r over seeds, ``lo, hi`` its 95 % CI (t) (NaN
    with one seed), ``r_pooled`` the r of all seeds' agents pooled. Two scopes (column ``scope``):
    :data:`BREEDING` (generations ≥ 1: the children selection acts on) and :data:`FOUNDERS`
    (generation 0, from one arm: each founder once; no ``by_arm`` rows).

    Quantities: ``val ~ test`` (does the selection signal predict held-out accuracy?), ``val half a
    ~ half b`` (split-half reliability of val; ``spearman_brown`` = 2r/(1+r), the reliability of the
    full val pool), ``score ~ val`` and ``score ~ conformity`` (what the selection score follows).
    ``n``: agents; ``seeds``: seeds with an r.
    """
    cols = ["val_overall", "test_overall", "val_half_a", "val_half_b", "score", "conformity"]
    out = []
    for scope in (BREEDING, FOUNDERS):
        w = _signal_agents(rows, scope)
        w[cols] = w[cols].astype(float)
        c = _centre(w, cols) if len(w) else w[cols]
        groups = [("all", np.ones(len(w), bool))]
        if by_arm and scope == BREEDING:
            groups += [(a, (w["arm"] == a).to_numpy()) for a in arms_in(w)]
        for arm, m in groups:
            for name, a, b in SIGNALS:
                ok = m & c[a].notna().to_numpy() & c[b].notna().to_numpy()
                per_seed = [_pearson(c.loc[ok & (w["seed"] == s).to_numpy(), a], c.loc[ok & (w["seed"] == s).to_numpy(), b])
                            for s in sorted(set(w.loc[ok, "seed"]))]
                per_seed = [r for r in per_seed if np.isfinite(r)]
                r, lo, hi = t_ci(per_seed) if per_seed else (np.nan, np.nan, np.nan)
                row = {"scope": scope, "arm": arm, "quantity": name, "r": r, "lo": lo, "hi": hi,
                       "seeds": len(per_seed), "n": int(ok.sum()), "r_pooled": _pearson(c.loc[ok, a], c.loc[ok, b]),
                       "spearman_brown": np.nan}
                if a == "val_half_a":
                    row["spearman_brown"] = 2 * r / (1 + r) if np.isfinite(r) and r > -1 else np.nan
                out.append(row)
    return pd.DataFrame(out, columns=["scope", "arm", "quantity", "r", "lo", "hi", "seeds", "n", "r_pooled",
                                      "spearman_brown"])


def preconditions(rows: pd.DataFrame, families) -> pd.DataFrame:
    """The two preconditions stated in configs/society/cpu.yaml, measured: each family's specialist gap ≥ 0.10 and their
    mean ≥ 0.15 (:func:`specialist_gaps`, generation 0), and the within-generation val–test r ≥ 0.5
    over the breeding generations (:func:`selection_signal`, mean of the per-seed r); plus, without
    a threshold, the same r among the founders alone and the split-half reliability of val.
    ``measured`` is the point estimate (mean over seeds), ``lo, hi`` its 95 % CI (t), ``pass``
    compares the point estimate with the threshold (None: no threshold or nothing measured).
    """
    gaps = specialist_gaps(rows, families).set_index("family")
    sig = selection_signal(rows, by_arm=False)
    sig = sig[sig["arm"] == "all"].set_index(["scope", "quantity"])
    out = []

    def add(name, measured, lo, hi, n, threshold):
        ok = None if not np.isfinite(threshold) or not np.isfinite(measured) else bool(measured >= threshold)
        out.append({"precondition": name, "measured": measured, "lo": lo, "hi": hi, "n": n,
                    "threshold": threshold, "pass": ok})

    for f in list(families) + ["mean"]:
        thr = GAP_MEAN if f == "mean" else GAP_EACH
        label = "specialist gap, mean over families" if f == "mean" else f"specialist gap, {f}"
        if f in gaps.index:
            g = gaps.loc[f]
            add(label, float(g["mean"]), float(g["lo"]), float(g["hi"]), f"{int(g['n'])} seeds", thr)
        else:
            add(label, np.nan, np.nan, np.nan, "0 seeds", thr)
    for scope, label, thr in ((BREEDING, "val–test r within generation (breeding generations)", SIGNAL_R),
                              (FOUNDERS, "val–test r among the founders (generation 0, once each)", np.nan)):
        v = sig.loc[(scope, "val ~ test")]
        add(label, float(v["r"]), float(v["lo"]), float(v["hi"]), f"{int(v['n'])} agents, {int(v['seeds'])} seeds", thr)
    h = sig.loc[(BREEDING, "val half a ~ half b")]
    add("val split-half r (breeding generations)", float(h["r"]), float(h["lo"]), float(h["hi"]),
        f"{int(h['n'])} agents", np.nan)
    add("val reliability (Spearman–Brown 2r/(1+r))", float(h["spearman_brown"]), np.nan, np.nan,
        f"{int(h['n'])} agents", np.nan)
    return pd.DataFrame(out)


# ----------------------------------------------------------------------------- operators


def breeding_generations(rows: pd.DataFrame) -> pd.DataFrame:
    """The (arm, seed, generation) whose selected parents have children: every generation t of an
    arm and seed for which generation t+1 has agents (so not the last, which breeds nothing)."""
    ag = rows.loc[rows["agent"] >= 0, RUN].drop_duplicates()
    nxt = ag.assign(generation=ag["generation"] - 1)
    return ag.merge(nxt, on=RUN).sort_values(RUN).reset_index(drop=True)


def selection_differential(rows: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Selection differential: per (arm, seed, generation), mean of the selected agents minus mean of
    the not-selected ones, on ``val_overall`` (what selection saw, through the score) and on
    ``test_overall`` (data it never saw). Only breeding generations count
    (:func:`breeding_generations`: the selected agents are parents of children; the last generation
    is not); populations where all or none were selected are skipped.

    Returns ``(points, summary)``: ``points`` has ``arm, seed, generation, metric ("val" | "test"),
    diff``; ``summary`` per (arm, metric), pooled over breeding generations: the per-seed mean over
    generations, then n seeds, mean and 95 % CI (t). Per generation:
    ``ci_over_seeds(points, ["arm", "metric", "generation"], "diff")``.
    """
    w = agents_wide(rows, ["val_overall", "test_overall"])
    w = w.merge(breeding_generations(rows), on=RUN)
    pts = []
    for key, g in w.groupby(RUN, sort=True):
        sel = g["selected"].fillna(False).astype(bool)
        if not sel.any() or sel.all():
            continue
        for m, col in (("val", "val_overall"), ("test", "test_overall")):
            pts.append({**dict(zip(RUN, key)), "metric": m,
                        "diff": float(g.loc[sel, col].mean() - g.loc[~sel, col].mean())})
    pts = pd.DataFrame(pts, columns=RUN + ["metric", "diff"])
    return pts, ci_over_seeds(pts, ["arm", "metric"], "diff")


def _children(rows: pd.DataFrame) -> pd.DataFrame:
    """One row per child (generation ≥ 1) with its birth metrics as columns and ``elite`` (0/1)."""
    birth = ["parents", "elite", "inherit_n", "source_test_overall", "source_val_overall",
             "merge_winner", "merge_tied", "merge_gain_val"]
    d = rows[(rows["agent"] >= 0) & rows["metric"].isin(birth)]
    if d.empty:
        return pd.DataFrame(columns=AGENT + birth)
    w = d.pivot_table(index=AGENT, columns="metric", values="value", aggfunc="first")
    w.columns.name = None
    for b in birth:
        if b not in w:
            w[b] = np.nan
    w["elite"] = w["elite"].fillna(0.0)
    return w.reset_index()


def recombination_gain(rows: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Recombination gain of the sexual arms (children with a ``merge_gain_val`` row; elites excluded).

    Per child: gain = val(screened winner) − mean(val of its two parents), ``plain`` = 1 when the
    winner is candidate 0, the plain average (chance: 1 / n_candidates), and ``tied`` = 1 when more
    than one candidate tied at the top screening score (``merge_tied`` > 1: the winner was a seeded
    draw among them; NaN without ``merge_tied`` rows). Returns ``(points, summary)``: ``points`` has
    ``arm, seed, generation, agent, gain, plain, tied``; ``summary`` per arm: ``n`` seeds, ``gain``
    mean over seeds of the per-seed mean with 95 % CI (t) ``gain_lo, gain_hi``, ``plain_share`` and
    ``tie_share`` likewise (``plain_lo, plain_hi``, ``tie_lo, tie_hi``), ``children`` pooled.
    """
    ch = _children(rows)
    ch = ch[(ch["elite"] != 1) & ch["merge_gain_val"].notna()]
    pts = ch[AGENT].copy()
    pts["gain"] = ch["merge_gain_val"].astype(float).to_numpy()
    pts["plain"] = (ch["merge_winner"].round() == 0).astype(float).to_numpy()
    tied = ch["merge_tied"].astype(float).to_numpy()
    pts["tied"] = np.where(np.isnan(tied), np.nan, (tied > 1).astype(float))
    pts = pts.reset_index(drop=True)
    cols = ["arm", "n", "children", "gain", "gain_lo", "gain_hi", "plain_share", "plain_lo", "plain_hi",
            "tie_share", "tie_lo", "tie_hi"]
    if pts.empty:
        return pts, pd.DataFrame(columns=cols)
    summ = pd.DataFrame({"n": pts.groupby("arm")["seed"].nunique(), "children": pts.groupby("arm").size()})
    for value, (m, lo, hi) in (("gain", ("gain", "gain_lo", "gain_hi")),
                               ("plain", ("plain_share", "plain_lo", "plain_hi")),
                               ("tied", ("tie_share", "tie_lo", "tie_hi"))):
        c = ci_over_seeds(pts, ["arm"], value).set_index("arm")
        summ[m], summ[lo], summ[hi] = c["mean"], c["lo"], c["hi"]
    return pts, summ.reset_index().rename(columns={"index": "arm"})[cols]


def inheritance_fidelity(rows: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Inheritance fidelity (mutation load): per child at generation t+1 that is not an elite,
    Δ = test_overall(child, t+1) − test_overall(its source at t) (``source_test_overall``: the
    winning merge, or the copied parent). Negative: retraining on the source's answers loses accuracy.

    Returns ``(points, summary)``: ``points`` has ``arm, seed, generation, agent, child, source,
    diff``; ``summary`` per (arm, generation): n seeds, mean over seeds of the per-seed mean Δ, 95 % CI (t).
    """
    ch = _children(rows)
    ch = ch[(ch["elite"] != 1) & ch["source_test_overall"].notna()]
    test = rows[(rows["metric"] == "test_overall") & (rows["agent"] >= 0)].set_index(AGENT)["value"]
    pts = ch[AGENT].copy()
    pts["child"] = test.reindex(pd.MultiIndex.from_frame(ch[AGENT])).to_numpy()
    pts["source"] = ch["source_test_overall"].astype(float).to_numpy()
    pts["diff"] = pts["child"] - pts["source"]
    pts = pts.dropna(subset=["diff"]).reset_index(drop=True)
    return pts, ci_over_seeds(pts, ["arm", "generation"], "diff")


# ----------------------------------------------------------------------------- elitism

_ELITE = re.compile(r"@e(\d+)")


def elitism_pairs(arms) -> dict[str, str]:
    """``{variant: reference}`` for every arm with an elitism modifier whose plain arm is present:
    ``"full@e1"`` → ``"full"``, ``"full@g0.25@e1"`` → ``"full@g0.25"``."""
    arms = list(dict.fromkeys(arms))
    out = {}
    for a in arms:
        if _ELITE.search(a):
            ref = _ELITE.sub("", a)
            if ref in arms:
                out[a] = ref
    return out


def last_generation_agents(rows: pd.DataFrame) -> pd.DataFrame:
    """Per (arm, seed) at its last generation: ``mean`` (population mean test_overall), ``best`` (the
    highest test_overall of any agent: an oracle pick) and ``top_scored`` (test_overall of the agent
    with the highest selection score, lowest index on ties: the one the loop would keep)."""
    w = agents_wide(rows, ["test_overall"])
    w = w[w["generation"] == w.groupby(["arm", "seed"])["generation"].transform("max")]
    out = []
    for (a, s), g in w.groupby(["arm", "seed"], sort=True):
        top = g.sort_values(["score", "agent"], ascending=[False, True], na_position="last").iloc[0]
        out.append({"arm": a, "seed": s, "generation": int(g["generation"].iloc[0]),
                    "mean": float(g["test_overall"].mean()), "best": float(g["test_overall"].max()),
                    "top_scored": float(top["test_overall"])})
    return pd.DataFrame(out, columns=["arm", "seed", "generation", "mean", "best", "top_scored"])


def elitism_comparison(rows: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Elites against none: for each pair of :func:`elitism_pairs` (``X@e1`` vs ``X``), paired by
    seed at the last generation, d = stat(X@e1) − stat(X) for stat in ``mean``, ``best``,
    ``top_scored`` (:func:`last_generation_agents`).

    Returns ``(points, summary)``: ``points``: ``statistic, arm, reference, seed, diff``; ``summary``:
    ``statistic, arm, reference, n, mean`` (mean d), its 95 % CI (sign-flip inversion) ``lo, hi``
    (unbounded with n < 6), the paired sign-flip ``p`` (NaN with one pair) and ``test``. Empty when
    no pair is present.
    """
    pairs = elitism_pairs(rows["arm"])
    cp = ["statistic", "arm", "reference", "seed", "diff"]
    cs = ["statistic", "arm", "reference", "n", "mean", "lo", "hi", "p", "test"]
    if not pairs:
        return pd.DataFrame(columns=cp), pd.DataFrame(columns=cs)
    last = last_generation_agents(rows[rows["arm"].isin(list(pairs) + list(pairs.values()))])
    pts, summ = [], []
    for var, ref in pairs.items():
        part = last[last["arm"].isin([var, ref])]
        for stat in ("mean", "best", "top_scored"):
            p, s_ = paired_differences(part, group="arm", reference=ref, value=stat)
            pts.append(p.assign(statistic=stat, reference=ref))
            summ.append(s_.assign(statistic=stat))
    pts = pd.concat(pts, ignore_index=True)[cp]
    summ = pd.concat(summ, ignore_index=True)[cs]
    return pts, summ
