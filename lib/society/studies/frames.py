"""The society's tidy rows in the shapes every study reads them in (no torch; pandas/numpy only).

Rows (``lib.society.rows.COLUMNS``, read by :mod:`lib.society.data`): one per (arm, seed, generation, agent,
metric). Agents' own rows (``test_<family>``, ``test_overall``, ``val_overall``, ``val_half_a/b``) carry
``selected``, ``conformity`` and ``score``; rows about how a child at generation t+1 was born (``parents``,
``elite``, ``inherit_n``, ``source_*``, ``merge_*``) and the population rows (agent −1: the base, consensus,
diversity) carry NaN there. ``selected`` at generation t marks the parents of t+1. See
``lib.society.rows.DIAGNOSTICS``.

Here: the arms in the arm table's order (:func:`arms_in`), a population's mean of a metric
(:func:`population_metric`), one row per agent (:func:`agents_wide`) and its last generation
(:func:`last_generation`), the bare base per seed (:func:`base_scores`), who bred whom (:func:`parents_table`),
and a statistic summarised over seeds, the unit of replication: reduced to one number per seed, then the mean
over seeds with its 95 % CI (t) (:func:`ci_over_seeds`) or, for paired differences, its 95 % CI (sign-flip
inversion) and the exact sign-flip p (:func:`paired_over_seeds`). Every study of :mod:`lib.society.studies`
reads the rows through these; this module imports no study.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from lib.core.format import num
from lib.core.stats import sign_flip_ci, sign_flip_p, t_ci
from lib.society.arms import order

RUN = ["arm", "seed", "generation"]
AGENT = RUN + ["agent"]


def _is_true(s: pd.Series) -> pd.Series:
    return s.astype(str) == "True"


def arms_in(df: pd.DataFrame) -> list[str]:
    """The arms present in the arm table's order (:func:`lib.society.arms.order`): full, no_grounding, no_sex,
    no_diversity, sex_linear, ..., other arms after them and baselines last; a variant ``<arm>@<tag>``
    right after its base arm."""
    return order(df["arm"])


def population_metric(df: pd.DataFrame, metric: str) -> pd.DataFrame:
    """Per (arm, seed, generation): the mean over agents of ``metric`` (column ``value``)."""
    d = df[df["metric"] == metric]
    return d.groupby(RUN, as_index=False)["value"].mean()


def agents_wide(rows: pd.DataFrame, metrics=None) -> pd.DataFrame:
    """One row per agent (agent ≥ 0) and (arm, seed, generation): ``selected``, ``conformity``,
    ``score`` (from its ``val_overall`` row) and one column per metric in ``metrics`` (default: all
    metrics agents carry). Missing metrics are NaN."""
    d = rows[rows["agent"] >= 0]
    if metrics is not None:
        d = d[d["metric"].isin(list(metrics) + ["val_overall"])]
    wide = d.pivot_table(index=AGENT, columns="metric", values="value", aggfunc="first")
    wide.columns.name = None
    own = d[d["metric"] == "val_overall"].set_index(AGENT)[["selected", "conformity", "score"]]
    own = own.assign(selected=_is_true(own["selected"]))
    out = own.join(wide, how="outer").reset_index()
    if metrics is not None:
        for m in metrics:
            if m not in out:
                out[m] = np.nan
    return out


def _over_seeds(points: pd.DataFrame, by: list[str], value: str, summarise, cols: list[str]) -> pd.DataFrame:
    """Per group of ``by``: ``points`` reduced to one mean of ``value`` per seed, then ``n`` (seeds) and
    ``summarise(per-seed means)`` (a dict of ``cols``)."""
    d = points.dropna(subset=[value])
    if d.empty:
        return pd.DataFrame(columns=list(by) + ["n"] + cols)
    per_seed = d.groupby(list(by) + ["seed"], as_index=False)[value].mean()
    out = []
    for key, g in per_seed.groupby(list(by), sort=True):
        key = key if isinstance(key, tuple) else (key,)
        out.append({**dict(zip(by, key)), "n": int(len(g)), **summarise(g[value].to_numpy(float))})
    return pd.DataFrame(out, columns=list(by) + ["n"] + cols)


def ci_over_seeds(points: pd.DataFrame, by: list[str], value: str = "value") -> pd.DataFrame:
    """Per group of ``by``: reduce ``points`` to one mean per seed, then ``n`` (seeds), ``mean`` over
    seeds and its 95 % CI (t) ``lo, hi`` (NaN with one seed)."""
    return _over_seeds(points, by, value, lambda x: dict(zip(("mean", "lo", "hi"), t_ci(x))), ["mean", "lo", "hi"])


def paired_over_seeds(points: pd.DataFrame, by: list[str], value: str = "diff") -> pd.DataFrame:
    """Per group of ``by``: reduce the paired differences in ``points`` to one mean per seed, then
    ``n`` (seeds), ``mean`` over seeds, its 95 % CI (sign-flip inversion) ``lo, hi`` (unbounded with
    n < 6) and the exact paired sign-flip ``p`` (NaN with one seed)
    (:func:`lib.core.stats.sign_flip_ci`, :func:`lib.core.stats.sign_flip_p`)."""
    def summarise(x):
        lo, hi = sign_flip_ci(x)
        return {"mean": float(x.mean()), "lo": lo, "hi": hi, "p": sign_flip_p(x)}
    return _over_seeds(points, by, value, summarise, ["mean", "lo", "hi", "p"])


PARENT_CODE_BASE = 100  # a "parents" row's value is a * 100 + b (lib.society.run writes it)


def decode_parents(code) -> tuple[int, int]:
    """A ``parents`` row's value ``100·a + b`` → ``(a, b)``: the indices, in the previous
    generation, of the child's two parents (``a == b``: a retrained copy of one parent, or an elite)."""
    a, b = divmod(int(round(float(code))), PARENT_CODE_BASE)
    return a, b


def parents_table(df: pd.DataFrame) -> pd.DataFrame:
    """One row per child: ``arm, seed, generation, agent, parent_a, parent_b, copy`` (``copy``: one
    source, ``parent_a == parent_b``). Parents are agents of ``generation - 1`` of the same arm and seed."""
    par = df[df["metric"] == "parents"]
    ab = [decode_parents(v) for v in par["value"]]
    out = par[["arm", "seed", "generation", "agent"]].copy()
    out["parent_a"] = [a for a, _ in ab]
    out["parent_b"] = [b for _, b in ab]
    out["copy"] = out["parent_a"] == out["parent_b"]
    return out.sort_values(["arm", "seed", "generation", "agent"]).reset_index(drop=True)


def base_scores(rows: pd.DataFrame, keys) -> pd.DataFrame:
    """The bare base per seed, from every shard that recorded it (``base_test_<key>``, generation 0, agent −1; the
    same on every arm of a seed): index ``seed``, one column per key, NaN where not recorded."""
    d = rows[(rows["generation"] == 0) & (rows["agent"] == -1) & rows["metric"].str.startswith("base_test_")]
    wide = d.pivot_table(index="seed", columns="metric", values="value", aggfunc="first")
    out = pd.DataFrame(index=pd.Index(sorted(set(rows["seed"])), name="seed"))
    for k in keys:
        out[k] = wide[f"base_test_{k}"] if f"base_test_{k}" in wide else np.nan
    return out


def last_generation(w: pd.DataFrame) -> pd.DataFrame:
    """The rows of ``w`` (one per agent) at each (arm, seed)'s last generation."""
    return w[w["generation"] == w.groupby(["arm", "seed"])["generation"].transform("max")]


def tied_pick(w: pd.DataFrame, group: list[str], by: str, columns: list[str]) -> pd.DataFrame:
    """Per ``group``, the picked agent's ``columns``: the agent with the highest ``by``; where several agents tie
    exactly at the top, the mean of their ``columns`` — the expected value of a uniform draw among them, which reads
    no seat (relabelling the agents changes nothing). ``tied``: how many agents shared the top (1: no tie)."""
    top = w[w[by] == w.groupby(group)[by].transform("max")]
    means = top.groupby(group, sort=False)[columns].mean()
    tied = top.groupby(group, sort=False).size().rename("tied")
    return means.join(tied).reset_index()


def verdict(diff: float, p_holm: float, alpha: float = 0.05) -> str:
    """A primary comparison's word: ``win`` (a above b) or ``loss`` when Holm's p < ``alpha``, else
    ``tie`` (not distinguishable at this n; a tie is not evidence of equality); ``—`` without data."""
    if not (np.isfinite(diff) and np.isfinite(p_holm)):
        return "—"
    if p_holm >= alpha:
        return "tie"
    return "win" if diff > 0 else "loss"


def interval_word(lo: float, hi: float, words=("below", "level with", "above")) -> str | None:
    """Where a paired interval puts a − b: ``words[0]`` (all below 0), ``words[1]`` (holds 0), ``words[2]``; ``None``
    without an interval."""
    lo, hi = num(lo), num(hi)
    if not (np.isfinite(lo) and np.isfinite(hi)):
        return None
    return words[0] if hi < 0 else words[2] if lo > 0 else words[1]
