"""Statistics for the figures and tables: intervals over seeds and the paired sign-flip test.

Seeds are the unit of replication. Two kinds of 95 % interval, named wherever one is shown:

* a single mean over seeds (an arm's accuracy, a band around a curve), :data:`T_CI`: the Student
  t-interval x̄ ± t_{n−1, 0.975}·s/√n (s: the sample standard deviation); NaN with n < 2.
* a paired difference d = arm − reference on the same seeds, :data:`SIGN_FLIP_CI`: the interval
  obtained by inverting the paired sign-flip test of :func:`paired_permutation_test`,
  {μ : p(d − μ) > 1 − level}. It excludes 0 exactly when that test's p ≤ 1 − level, so an interval
  and the p printed beside it never disagree. Beyond min(d) or max(d) every sign pattern is at
  least as extreme as the observed one only for the two constant patterns, p = 2/2ⁿ; with n < 6
  (2/2ⁿ > 0.05) no μ is rejected and the 95 % interval is (−∞, ∞) (:func:`min_pairs_for_interval`).
"""
from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
import pandas as pd

LEVEL = 0.95
T_CI = "95 % CI (t)"
SIGN_FLIP_CI = "95 % CI (sign-flip inversion)"
EXACT_MAX_N = 16  # up to this many pairs all 2ⁿ sign patterns are enumerated
MIN_T_N = 2       # a t-interval needs two values


def t_ci(values, *, level: float = LEVEL) -> tuple[float, float, float]:
    """Mean of ``values`` and its Student t-interval: x̄ ± t_{n−1, (1+level)/2}·s/√n.

    NaNs are dropped; ``s`` is the sample standard deviation (ddof = 1). One value: ``(x, nan, nan)``;
    no values: ``ValueError``.

    Returns:
        ``(mean, lo, hi)``.
    """
    x = np.asarray(values, dtype=float)
    x = x[~np.isnan(x)]
    if x.size == 0:
        raise ValueError("t_ci needs at least one non-NaN value")
    m = float(x.mean())
    if x.size < MIN_T_N:
        return m, float("nan"), float("nan")
    from scipy import stats as _sp  # lazy: scipy.stats costs half a second at start-up (lib.reproduce, lib.tables)
    half = float(_sp.t.ppf((1.0 + level) / 2.0, x.size - 1) * x.std(ddof=1) / math.sqrt(x.size))
    return m, m - half, m + half


BOUNDED_T_CI = "95 % CI (t, within [0, 1])"


def bounded_t_ci(values, *, lo: float = 0.0, hi: float = 1.0, level: float = LEVEL) -> tuple[float, float, float]:
    """:func:`t_ci` intersected with ``[lo, hi]``, the values' possible range (an accuracy: [0, 1]).

    The mean of values in ``[lo, hi]`` lies in ``[lo, hi]``, so cutting the t-interval there loses no
    coverage, and an accuracy's interval never reaches below 0 or above 1 (:data:`BOUNDED_T_CI`)."""
    m, a, b = t_ci(values, level=level)
    if np.isnan(a):
        return m, a, b
    return m, max(a, lo), min(b, hi)


def min_pairs_for_interval(level: float = LEVEL) -> int:
    """The fewest pairs whose sign-flip interval at ``level`` is bounded: the smallest n with
    2/2ⁿ ≤ 1 − level (6 at 95 %)."""
    n = 1
    while 2.0 / 2.0 ** n > 1.0 - level:
        n += 1
    return n


MIN_PAIRED_N = min_pairs_for_interval()


def sign_patterns(n: int, *, n_perm: int = 10000, seed: int = 0) -> tuple[np.ndarray, bool]:
    """The null distribution's sign patterns, shape ``(m, n)`` of ±1, and whether they are exact.

    n ≤ :data:`EXACT_MAX_N`: all 2ⁿ patterns. Otherwise ``n_perm`` patterns drawn once with
    ``default_rng(seed)``; the test and its inverted interval use this same matrix for every μ, so
    they share one null.
    """
    return _sign_patterns(int(n), int(n_perm), int(seed))


@lru_cache(maxsize=32)
def _sign_patterns(n: int, n_perm: int, seed: int) -> tuple[np.ndarray, bool]:
    if n <= EXACT_MAX_N:
        bits = (np.arange(2 ** n)[:, None] >> np.arange(n)) & 1
        signs, exact = 1.0 - 2.0 * bits, True
    else:
        signs, exact = np.random.default_rng(seed).choice((1.0, -1.0), size=(n_perm, n)), False
    signs.flags.writeable = False  # cached: shared by every call with the same (n, n_perm, seed)
    return signs, exact


def _flip_ranges(d: np.ndarray, signs: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
    """For each sign pattern s, the shifts μ at which it is at least as extreme as the observed
    pattern: |Σ sᵢ(dᵢ − μ)| ≥ |Σ (dᵢ − μ)|.

    Expanding the squares, that holds exactly when μ lies between m₊ and m₋, the means of d over the
    indices s flips to + and to −, so each range is a closed interval containing the mean d̄ (a
    weighted average of m₊ and m₋). A constant pattern (all + or all −) ties the observed one for
    every μ: its range is (−∞, ∞). Ranges are widened by a relative 1e-12 so float ties count.

    Returns:
        ``(lo, hi, tol)``: lower and upper ends of each pattern's range, and the tolerance used.
    """
    plus = signs > 0
    n_plus = plus.sum(axis=1)
    n_minus = d.size - n_plus
    s_plus = plus.astype(float) @ d
    s_minus = d.sum() - s_plus
    const = (n_plus == 0) | (n_minus == 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        m_plus, m_minus = s_plus / n_plus, s_minus / n_minus
    tol = 1e-12 * max(1.0, float(np.max(np.abs(d))))
    lo = np.where(const, -np.inf, np.fmin(m_plus, m_minus) - tol)
    hi = np.where(const, np.inf, np.fmax(m_plus, m_minus) + tol)
    return lo, hi, tol


def _p_of_count(hits, m: int, exact: bool):
    """p from the number of patterns at least as extreme: exact hits/2ⁿ; Monte Carlo (hits+1)/(m+1),
    which never reports an impossible p = 0."""
    hits = np.asarray(hits, dtype=float)
    return hits / m if exact else (hits + 1.0) / (m + 1.0)


def sign_flip_p(d, mu: float = 0.0, *, n_perm: int = 10000, seed: int = 0) -> float:
    """Two-sided p of the paired sign-flip test of ``mean(d) == mu`` (NaN with one pair)."""
    d = np.asarray(d, dtype=float)
    if d.size < 2:
        return float("nan")
    signs, exact = sign_patterns(d.size, n_perm=n_perm, seed=seed)
    lo, hi, _ = _flip_ranges(d, signs)
    return float(_p_of_count(np.sum((lo <= mu) & (mu <= hi)), len(signs), exact))


def sign_flip_ci(d, *, level: float = LEVEL, n_perm: int = 10000, seed: int = 0) -> tuple[float, float]:
    """The paired sign-flip test inverted: ``(lo, hi)`` = the hull of {μ : p(d − μ) > 1 − level}.

    Every pattern's range contains d̄, so below d̄ the number of patterns counted at μ is the number
    whose range starts at or below μ, and p is non-decreasing up to d̄ and non-increasing after it:
    the set is one interval and its ends are range ends (means of subsets of d). ``lo`` is the c-th
    smallest range start, with c the fewest counted patterns whose p exceeds 1 − level; ``hi`` the
    c-th largest range end. (−∞, ∞) when even the constant patterns alone give p > 1 − level
    (n < :func:`min_pairs_for_interval`); NaNs are dropped; no values → ``ValueError``.
    """
    d = np.asarray(d, dtype=float)
    d = d[~np.isnan(d)]
    if d.size == 0:
        raise ValueError("sign_flip_ci needs at least one non-NaN difference")
    if d.size == 1:
        return -math.inf, math.inf
    signs, exact = sign_patterns(d.size, n_perm=n_perm, seed=seed)
    lo, hi, _ = _flip_ranges(d, signs)
    m = len(signs)
    p_by_count = _p_of_count(np.arange(m + 1), m, exact)
    c = int(np.argmax(p_by_count > 1.0 - level))  # p(m patterns) = 1 > 1 − level, so c exists
    if c == 0:
        return -math.inf, math.inf
    return float(np.sort(lo)[c - 1]), float(np.sort(hi)[::-1][c - 1])


def paired_permutation_test(a, b, *, n_perm: int = 10000, seed: int = 0) -> dict:
    """Two-sided paired sign-flip permutation test of ``mean(a - b) == 0``.

    Under H0 each paired difference dᵢ = aᵢ - bᵢ is equally likely to have either sign;
    p = P(|mean(±d)| ≥ |mean(d)|) over the patterns of :func:`sign_patterns` (exact with n ≤ 16
    pairs; else ``n_perm`` draws and p = (1 + hits) / (1 + n_perm)). One pair admits no test (its two
    sign patterns always tie): p is NaN, not 1.

    Returns:
        ``{"n", "effect" (mean difference a - b), "p", "test", "exact"}``.
    """
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError(f"paired samples must be 1-d of equal length, got {a.shape} and {b.shape}")
    if a.size == 0:
        raise ValueError("paired_permutation_test needs at least one pair")
    d = a - b
    n = d.size
    if n == 1:
        return {"n": 1, "effect": float(d[0]), "p": float("nan"), "test": "none (one pair: no test)",
                "exact": True}
    exact = n <= EXACT_MAX_N
    return {"n": int(n), "effect": float(d.mean()), "p": sign_flip_p(d, n_perm=n_perm, seed=seed),
            "test": "paired sign-flip permutation" + (" (exact)" if exact else f" ({n_perm} draws)"),
            "exact": exact}


def holm(pvalues) -> np.ndarray:
    """Holm's step-down adjustment of ``m`` p-values (family-wise error): sorted ascending,
    p̃₍ᵢ₎ = max_{j ≤ i} min(1, (m − j + 1) · p₍ⱼ₎), returned in the input order (NaN stays NaN and
    does not count in m)."""
    p = np.asarray(pvalues, dtype=float)
    out = np.full(p.shape, np.nan)
    ok = np.flatnonzero(~np.isnan(p))
    order = ok[np.argsort(p[ok], kind="stable")]
    m = len(order)
    running = 0.0
    for i, k in enumerate(order):
        running = max(running, min(1.0, (m - i) * p[k]))
        out[k] = running
    return out


WILSON_CI = "95 % CI (Wilson)"


def wilson_ci(successes: float, n: int, *, z: float = 1.959963984540054) -> tuple[float, float, float]:
    """A proportion ``successes / n`` and its Wilson score interval (always within [0, 1], not empty at
    0 or n successes): ``(p, lo, hi)``; NaN with ``n = 0``."""
    if n <= 0:
        return float("nan"), float("nan"), float("nan")
    p = successes / n
    den = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / den
    half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / den
    return float(p), float(max(0.0, centre - half)), float(min(1.0, centre + half))


def format_p(p) -> str:
    """A p-value as text: two significant digits, scientific below 0.001 (``3.1e-05``, never
    ``0.0000``); ``"n/a"`` when undefined (NaN)."""
    if p is None or not np.isfinite(p):
        return "n/a"
    return f"{p:.1e}" if p < 1e-3 else f"{p:.2g}"


def format_ci(lo, hi, n: int, *, digits: int = 4) -> str:
    """An interval as text: ``[lo, hi]``; ``"unbounded (n < 6)"`` for a sign-flip interval with too
    few pairs; ``"none (n = 1)"`` for a t-interval of one value."""
    if np.isfinite(lo) and np.isfinite(hi):
        lo, hi = round(lo, digits) + 0.0, round(hi, digits) + 0.0  # + 0.0: no "-0.0000"
        return f"[{lo:.{digits}f}, {hi:.{digits}f}]"
    if np.isinf(lo) or np.isinf(hi):
        return f"unbounded (n < {MIN_PAIRED_N})"
    return f"none (n = {n})"


def mean_ci_table(df: pd.DataFrame, by: list[str], value: str = "value", *, level: float = LEVEL,
                  bounds: tuple[float, float] | None = None) -> pd.DataFrame:
    """Per group of ``by``: n, mean and 95 % CI (t) ``lo, hi`` of ``value`` (rows are seeds; NaN CI
    with n < 2); with ``bounds``, the t-interval cut to them (:func:`bounded_t_ci`: an accuracy's (0, 1))."""
    out = []
    for key, g in df.groupby(by, sort=True):
        key = key if isinstance(key, tuple) else (key,)
        x = g[value].to_numpy()
        m, lo, hi = t_ci(x, level=level) if bounds is None else bounded_t_ci(x, lo=bounds[0], hi=bounds[1], level=level)
        out.append({**dict(zip(by, key)), "n": int(g[value].notna().sum()), "mean": m, "lo": lo, "hi": hi})
    return pd.DataFrame(out, columns=[*by, "n", "mean", "lo", "hi"])


def compare_to(df: pd.DataFrame, *, group: str, reference: str, pair_on: str = "seed",
               value: str = "value", seed: int = 0) -> pd.DataFrame:
    """Paired test of every level of ``group`` against ``reference``, paired on ``pair_on``.

    ``df`` holds one row per (group, pair_on). Only pairs present in both are used.
    Returns one row per comparison: ``group, reference, n, effect, lo, hi, p, test`` (the summary of
    :func:`paired_differences`: ``effect`` its mean difference, ``lo, hi`` its 95 % CI (sign-flip
    inversion)).
    """
    _, summ = paired_differences(df, group=group, reference=reference, pair_on=pair_on, value=value, seed=seed)
    return summ.rename(columns={"mean": "effect"})[[group, "reference", "n", "effect", "lo", "hi", "p", "test"]]


def paired_differences(df: pd.DataFrame, *, group: str, reference: str, pair_on: str = "seed",
                       value: str = "value", by: list[str] | None = None, seed: int = 0,
                       level: float = LEVEL) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per-pair differences ``value[level] - value[reference]`` and their summary.

    ``df`` holds one row per (``by``…, group, pair_on); only pairs present in both levels are used.

    Returns:
        ``(points, summary)``: ``points`` has one row per (``by``…, group, pair_on) with the difference in
        ``diff``; ``summary`` one row per (``by``…, group) with ``n``, ``mean`` (mean difference), its
        95 % CI (sign-flip inversion, :func:`sign_flip_ci`) ``lo, hi`` (−inf, inf with n < 6), the
        paired sign-flip ``p`` (NaN when n = 1) and the ``test`` used.
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
            lo, hi = sign_flip_ci(d.to_numpy(), level=level, seed=seed)
            summ.append({**dict(zip(by, key)), group: lvl, "reference": reference, "n": int(len(d)),
                         "mean": float(d.mean()), "lo": lo, "hi": hi, "p": t["p"], "test": t["test"]})
    cols_p = [*by, group, pair_on, "diff"]
    cols_s = [*by, group, "reference", "n", "mean", "lo", "hi", "p", "test"]
    return pd.DataFrame(pts, columns=cols_p), pd.DataFrame(summ, columns=cols_s)
