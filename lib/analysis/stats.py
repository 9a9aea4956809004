"""Statistics for the figures: bootstrap confidence intervals across seeds and paired tests.

Seeds are the unit of replication: a figure's band is the bootstrap CI of the mean over seeds,
and two arms are compared on the same seeds with a paired sign-flip permutation test.
"""
from __future__ import annotations

from itertools import product

import numpy as np
import pandas as pd


def bootstrap_ci(values, *, n_boot: int = 2000, level: float = 0.95, seed: int = 0) -> tuple[float, float, float]:
    """Mean of ``values`` and its percentile bootstrap CI.

    Draws ``n_boot`` resamples (with replacement, same size) with ``numpy.random.default_rng(seed)``;
    the CI is the ``(1-level)/2`` and ``(1+level)/2`` quantiles of the resampled means.
    One value gives a zero-width interval; NaNs are dropped; no values → ``ValueError``.

    Returns:
        ``(mean, lo, hi)``.
    """
    x = np.asarray(values, dtype=float)
    x = x[~np.isnan(x)]
    if x.size == 0:
        raise ValueError("bootstrap_ci needs at least one non-NaN value")
    m = float(x.mean())
    if x.size == 1:
        return m, m, m
    rng = np.random.default_rng(seed)
    means = x[rng.integers(0, x.size, size=(n_boot, x.size))].mean(axis=1)
    a = (1.0 - level) / 2.0
    lo, hi = np.quantile(means, [a, 1.0 - a])
    return m, float(lo), float(hi)


def paired_permutation_test(a, b, *, n_perm: int = 10000, seed: int = 0) -> dict:
    """Two-sided paired permutation test of ``mean(a - b) == 0``.

    Under H0 each paired difference dᵢ = aᵢ - bᵢ is equally likely to have either sign. With
    n ≤ 16 pairs all 2ⁿ sign patterns are enumerated (exact p); otherwise ``n_perm`` random sign
    flips are drawn with ``default_rng(seed)`` and p = (1 + #{|mean(±d)| ≥ |mean(d)|}) / (1 + n_perm),
    which never reports an impossible p = 0. Exact: p = P(|mean(±d)| ≥ |mean(d)|).
    One pair admits no test (its two sign patterns always tie): p is NaN, not 1.

    Returns:
        ``{"n", "effect" (mean difference a - b), "p", "test", "exact"}``.
    """
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError(f"paired samples must be 1-d of equal length, got {a.shape} and {b.shape}")
    if a.size == 0:
        raise ValueError("paired_permutation_test needs at least one pair")
    d = a - b
    obs = abs(d.mean())
    n = d.size
    if n == 1:
        return {"n": 1, "effect": float(d[0]), "p": float("nan"), "test": "none (one pair: no test)",
                "exact": True}
    if n <= 16:
        signs = np.array(list(product((1.0, -1.0), repeat=n)))
        exact = True
    else:
        signs = np.random.default_rng(seed).choice((1.0, -1.0), size=(n_perm, n))
        exact = False
    null = np.abs((signs * d).mean(axis=1))
    hits = int(np.sum(null >= obs - 1e-12))
    p = hits / len(signs) if exact else (hits + 1) / (len(signs) + 1)
    return {"n": int(n), "effect": float(d.mean()), "p": p,
            "test": "paired sign-flip permutation" + (" (exact)" if exact else f" ({n_perm} draws)"),
            "exact": exact}


def mean_ci_table(df: pd.DataFrame, by: list[str], value: str = "value", *, seed: int = 0,
                  level: float = 0.95) -> pd.DataFrame:
    """Per group of ``by``: n, mean and bootstrap CI of ``value`` (rows are seeds)."""
    out = []
    for key, g in df.groupby(by, sort=True):
        key = key if isinstance(key, tuple) else (key,)
        m, lo, hi = bootstrap_ci(g[value].to_numpy(), seed=seed, level=level)
        out.append({**dict(zip(by, key)), "n": int(g[value].notna().sum()), "mean": m, "lo": lo, "hi": hi})
    return pd.DataFrame(out)


def compare_to(df: pd.DataFrame, *, group: str, reference: str, pair_on: str = "seed",
               value: str = "value", seed: int = 0) -> pd.DataFrame:
    """Paired test of every level of ``group`` against ``reference``, paired on ``pair_on``.

    ``df`` holds one row per (group, pair_on). Only pairs present in both are used.
    Returns one row per comparison: ``group, reference, n, effect, p, test`` (the summary of
    :func:`paired_differences`, ``effect`` = its mean difference).
    """
    _, summ = paired_differences(df, group=group, reference=reference, pair_on=pair_on, value=value, seed=seed)
    return summ.rename(columns={"mean": "effect"})[[group, "reference", "n", "effect", "p", "test"]]


MIN_CI_N = 3  # fewer values than this: figures show the points, not a "95 % CI"


def paired_differences(df: pd.DataFrame, *, group: str, reference: str, pair_on: str = "seed",
                       value: str = "value", by: list[str] | None = None, seed: int = 0,
                       level: float = 0.95) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per-pair differences ``value[level] - value[reference]`` and their summary.

    ``df`` holds one row per (``by``…, group, pair_on); only pairs present in both levels are used.

    Returns:
        ``(points, summary)``: ``points`` has one row per (``by``…, group, pair_on) with the difference in
        ``diff``; ``summary`` one row per (``by``…, group) with ``n``, ``mean`` (mean difference), the
        bootstrap CI ``lo, hi`` of that mean (NaN when n < :data:`MIN_CI_N`), the paired permutation
        ``p`` (NaN when n = 1) and the ``test`` used.
    """
    by = list(by or [])
    pts, summ = [], []
    groups = df.groupby(by, sort=True) if by else [((), df)]
    for key, part in groups:
        key = key if isinstance(key, tuple) else (key,)
        wide = part.pivot_table(index=pair_on, columns=group, values=value, aggfunc="mean")
        if reference not in wide:
            raise ValueError(f"reference {reference!r} not among {list(wide.columns)}")
        for lvl in wide.columns:
            if lvl == reference:
                continue
            both = wide[[lvl, reference]].dropna()
            if both.empty:
                continue
            d = both[lvl] - both[reference]
            for k, v in d.items():
                pts.append({**dict(zip(by, key)), group: lvl, pair_on: k, "diff": float(v)})
            t = paired_permutation_test(both[lvl].to_numpy(), both[reference].to_numpy(), seed=seed)
            m, lo, hi = bootstrap_ci(d.to_numpy(), seed=seed, level=level)
            if len(d) < MIN_CI_N:
                lo = hi = float("nan")
            summ.append({**dict(zip(by, key)), group: lvl, "reference": reference, "n": int(len(d)),
                         "mean": m, "lo": lo, "hi": hi, "p": t["p"], "test": t["test"]})
    cols_p = [*by, group, pair_on, "diff"]
    cols_s = [*by, group, "reference", "n", "mean", "lo", "hi", "p", "test"]
    return pd.DataFrame(pts, columns=cols_p), pd.DataFrame(summ, columns=cols_s)
