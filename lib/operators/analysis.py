"""The operators experiment's numbers (Fig. 1, S1) from its tables (``data/<scale>/operators/``), as
pure functions: what the README states about QD against top-P, the consensus and conformity.

Populations (``seed``) are the unit of replication; a paired difference carries its 95 % CI
(sign-flip inversion) and the paired sign-flip p (:mod:`lib.core.stats`).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from lib.core.stats import paired_differences, sign_flip_ci, sign_flip_p

METRICS = ("mean_score", "mean_distance")  # Fig. 1c, Fig. 1d


def qd_minus_top_p(selection: pd.DataFrame, metrics=METRICS) -> pd.DataFrame:
    """QD − top-P on the same population at every λ > 0 (at λ = 0 the rules pick the same set), for each
    of ``metrics``: one row per (``metric``, ``lam``) with ``n``, ``mean`` (the mean difference), its
    95 % CI (sign-flip inversion) ``lo, hi`` and the paired sign-flip ``p``."""
    sel = selection[selection["lam"] > 0]
    parts = [paired_differences(sel, group="method", reference="top_p", value=m, by=["lam"])[1].assign(metric=m)
             for m in metrics]
    return pd.concat(parts, ignore_index=True)[["metric", "lam", "n", "mean", "lo", "hi", "p"]]


def trade_grows_with_lam(selection: pd.DataFrame) -> bool:
    """Whether QD's loss of score (Fig. 1c) and gain of diversity (Fig. 1d) over top-P grow with λ at
    every step of the sweep: the mean QD − top-P score never rises and the mean distance never falls."""
    t = qd_minus_top_p(selection).sort_values("lam")
    score = t.loc[t["metric"] == "mean_score", "mean"].to_numpy()
    dist = t.loc[t["metric"] == "mean_distance", "mean"].to_numpy()
    return bool(np.all(np.diff(score) <= 0) and np.all(np.diff(dist) >= 0))


def parents_changed(selection: pd.DataFrame) -> pd.DataFrame:
    """Per λ: in how many populations QD's parents are not top-P's (as sets: the order of selection
    does not count) — ``lam, changed, n``."""
    sets = selection.assign(parents=selection["selected"].astype(str).str.split().map(frozenset))
    wide = sets.pivot_table(index=["lam", "seed"], columns="method", values="parents", aggfunc="first")
    diff = (wide["qd"] != wide["top_p"]).groupby(level="lam")
    return pd.DataFrame({"changed": diff.sum().astype(int), "n": diff.size()}).reset_index()


def consensus_gain(agents: pd.DataFrame) -> dict:
    """S1a: per population, the consensus's accuracy minus its mean agent fitness: ``n``, ``mean``, its
    95 % CI (sign-flip inversion) ``lo, hi``, the paired sign-flip ``p`` and ``better``, the number of
    populations whose consensus beats the mean agent."""
    per = agents.groupby("seed").agg(fitness=("fitness", "mean"), consensus=("consensus_acc", "first"))
    d = (per["consensus"] - per["fitness"]).to_numpy()
    lo, hi = sign_flip_ci(d)
    return {"n": int(d.size), "mean": float(d.mean()), "lo": lo, "hi": hi, "p": sign_flip_p(d),
            "better": int((d > 0).sum())}


def conformity_fitness_r(agents: pd.DataFrame) -> float:
    """Fig. 1a: Pearson's r between every agent's verifier fitness and its conformity."""
    return float(np.corrcoef(agents["fitness"], agents["conformity"])[0, 1])
