from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lib.core import stats


def test_t_interval_is_mean_plus_minus_t_quantile_times_standard_error():
    # x = 1..4: mean 2.5, s = sqrt(5/3), t_{3, 0.975} = 3.182446 (printed tables)
    m, lo, hi = stats.t_ci([1.0, 2.0, 3.0, 4.0, np.nan])
    half = 3.182446 * math.sqrt(5 / 3) / 2
    assert m == 2.5 and lo == pytest.approx(2.5 - half, abs=1e-5) and hi == pytest.approx(2.5 + half, abs=1e-5)
    # two values: t_{1, 0.975} = 12.706; the interval is wide, not the range of the values
    _, lo2, hi2 = stats.t_ci([0.0, 1.0])
    assert hi2 - lo2 == pytest.approx(2 * 12.7062 * math.sqrt(0.5) / math.sqrt(2), rel=1e-4)
    one = stats.t_ci([2.0])
    assert one[0] == 2.0 and np.isnan(one[1]) and np.isnan(one[2])
    with pytest.raises(ValueError):
        stats.t_ci([np.nan])


def test_paired_permutation_exact_p_value():
    # 5 positive differences: only the all-plus and all-minus sign patterns reach |mean| -> p = 2/32
    t = stats.paired_permutation_test([2, 3, 4, 5, 6], [1, 1, 1, 1, 1])
    assert t["exact"] and t["p"] == pytest.approx(2 / 32) and t["effect"] == pytest.approx(3.0)
    assert stats.paired_permutation_test([1, 2, 3], [1, 2, 3])["p"] == 1.0
    # one pair: both sign patterns tie, so there is no test; p is undefined, not 1
    one = stats.paired_permutation_test([3.0], [1.0])
    assert np.isnan(one["p"]) and one["effect"] == pytest.approx(2.0) and one["n"] == 1
    big = stats.paired_permutation_test(np.arange(30) + 1.0, np.zeros(30), seed=1)
    assert not big["exact"] and big["p"] < 0.001
    with pytest.raises(ValueError):
        stats.paired_permutation_test([1, 2], [1])


def test_sign_flip_interval_by_hand():
    # d = 1..8: p(μ) > 0.05 needs 13 of the 256 patterns (13/256 = 0.051); below the mean a pattern
    # counts once μ reaches the smaller of its two subset means. The 2 constant patterns and the
    # subsets {1}, {1,2}, {2}, {1,3}, {1,2,3} (each with its mirror) make 12; the 13th is {1,2,4},
    # mean 7/3. By symmetry the upper end is 9 - 7/3 (a percentile bootstrap gives about [2.9, 6.1]).
    lo, hi = stats.sign_flip_ci(np.arange(1.0, 9.0))
    assert lo == pytest.approx(7 / 3, abs=1e-9) and hi == pytest.approx(20 / 3, abs=1e-9)
    # n = 6: 2/64 ≤ 0.05 < 4/64, so the interval runs from min(d) to max(d), ends included
    lo6, hi6 = stats.sign_flip_ci([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    assert lo6 == pytest.approx(1.0, abs=1e-9) and hi6 == pytest.approx(6.0, abs=1e-9)
    assert stats.sign_flip_p([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], 1.0) > 0.05
    assert stats.sign_flip_p([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], 0.999) == pytest.approx(2 / 64)


def test_fewer_than_six_pairs_have_no_bounded_95_interval():
    assert stats.MIN_PAIRED_N == 6 and stats.min_pairs_for_interval(0.9) == 5
    for n in range(1, 6):
        assert stats.sign_flip_ci(np.arange(1.0, n + 1.0)) == (-math.inf, math.inf)
    assert all(np.isfinite(stats.sign_flip_ci(np.arange(1.0, 7.0))))
    assert stats.format_ci(-math.inf, math.inf, 4) == "unbounded (n < 6)"
    assert stats.format_ci(float("nan"), float("nan"), 1) == "none (n = 1)"
    assert stats.format_ci(0.1, 0.25, 8, digits=2) == "[0.10, 0.25]"


# samples with ties (values on a coarse grid) and without; n = 6…16 exact, 17…20 Monte Carlo
_values = st.one_of(st.integers(-4, 4).map(lambda k: k / 4),
                    st.floats(-3, 3, allow_nan=False, allow_infinity=False))


@settings(max_examples=150, deadline=None)
@given(st.integers(6, 20).flatmap(lambda n: st.lists(_values, min_size=n, max_size=n)),
       st.floats(-1, 1, allow_nan=False))
def test_sign_flip_interval_excludes_zero_iff_the_test_rejects(d, shift):
    d = np.asarray(d) + round(shift, 2)
    p = stats.paired_permutation_test(d, np.zeros_like(d))["p"]
    lo, hi = stats.sign_flip_ci(d)
    assert lo <= d.mean() <= hi
    assert (not lo <= 0.0 <= hi) == (p <= 0.05), (lo, hi, p)


def test_compare_to_pairs_on_seed():
    df = pd.DataFrame({"arm": ["a"] * 4 + ["b"] * 4, "seed": [0, 1, 2, 3] * 2,
                       "value": [1, 2, 3, 4, 2, 3, 4, 5]})
    out = stats.compare_to(df, group="arm", reference="a")
    assert list(out["arm"]) == ["b"] and out["effect"].iloc[0] == pytest.approx(1.0)
    assert out["p"].iloc[0] == pytest.approx(2 / 16)
    assert np.isinf(out["lo"].iloc[0]) and np.isinf(out["hi"].iloc[0])  # 4 pairs: unbounded
    table = stats.mean_ci_table(df, ["arm"])
    assert list(table["n"]) == [4, 4] and table["mean"].tolist() == [2.5, 3.5]
    assert table["lo"].iloc[0] == pytest.approx(stats.t_ci([1, 2, 3, 4])[1])


def test_paired_differences_per_seed_and_summary():
    df = pd.DataFrame({"arm": ["ref"] * 8 + ["b"] * 8 + ["c"] * 8, "seed": list(range(8)) * 3,
                       "value": list(range(8)) + [v + d for v, d in zip(range(8), range(1, 9))] + list(range(8))})
    pts, summ = stats.paired_differences(df, group="arm", reference="ref")
    b = pts[pts.arm == "b"].sort_values("seed")
    assert b["diff"].tolist() == [float(k) for k in range(1, 9)]
    row = summ.set_index("arm").loc["b"]
    assert row["n"] == 8 and row["mean"] == pytest.approx(4.5) and row["p"] == pytest.approx(2 / 256)
    assert row["lo"] == pytest.approx(7 / 3, abs=1e-9) and row["hi"] == pytest.approx(20 / 3, abs=1e-9)
    c = summ.set_index("arm").loc["c"]
    assert c["p"] == 1.0 and c["lo"] <= 0 <= c["hi"]  # identical to the reference
    # fewer than 6 pairs: an unbounded interval; one pair: no p
    _, s2 = stats.paired_differences(df[df.seed < 5], group="arm", reference="ref")
    assert np.isinf(s2[["lo", "hi"]]).all().all() and s2["p"].notna().all()
    _, s1 = stats.paired_differences(df[df.seed == 0], group="arm", reference="ref")
    assert s1["p"].isna().all() and (s1["n"] == 1).all()
    # grouped by another column; an unknown reference is named
    df2 = pd.concat([df.assign(lam=0.5), df.assign(lam=1.0, value=df.value * 2)])
    _, sg = stats.paired_differences(df2, group="arm", reference="ref", by=["lam"])
    assert sg.set_index(["lam", "arm"]).loc[(1.0, "b"), "mean"] == pytest.approx(9.0)
    with pytest.raises(ValueError, match="nope"):
        stats.paired_differences(df, group="arm", reference="nope")


def test_format_p_never_prints_zero():
    assert stats.format_p(3.1e-05) == "3.1e-05"
    assert stats.format_p(2 / 64) == "0.031" and stats.format_p(0.19) == "0.19" and stats.format_p(1.0) == "1"
    assert stats.format_p(float("nan")) == "n/a" and stats.format_p(None) == "n/a"
    assert stats.format_p(1e-12) != "0" and float(stats.format_p(4.2e-7)) == pytest.approx(4.2e-7)
