from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from lib.analysis import stats


def test_bootstrap_ci_brackets_mean_and_is_seeded():
    x = np.random.default_rng(0).normal(1.0, 1.0, size=30)
    m, lo, hi = stats.bootstrap_ci(x, seed=3)
    assert lo < m < hi and m == pytest.approx(x.mean())
    assert stats.bootstrap_ci(x, seed=3) == (m, lo, hi)
    assert stats.bootstrap_ci([2.0]) == (2.0, 2.0, 2.0)
    with pytest.raises(ValueError):
        stats.bootstrap_ci([np.nan])


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


def test_compare_to_pairs_on_seed():
    df = pd.DataFrame({"arm": ["a"] * 4 + ["b"] * 4, "seed": [0, 1, 2, 3] * 2,
                       "value": [1, 2, 3, 4, 2, 3, 4, 5]})
    out = stats.compare_to(df, group="arm", reference="a")
    assert list(out["arm"]) == ["b"] and out["effect"].iloc[0] == pytest.approx(1.0)
    assert out["p"].iloc[0] == pytest.approx(2 / 16)
    table = stats.mean_ci_table(df, ["arm"])
    assert list(table["n"]) == [4, 4] and table["mean"].tolist() == [2.5, 3.5]


def test_paired_differences_per_seed_and_summary():
    df = pd.DataFrame({"arm": ["ref"] * 4 + ["b"] * 4 + ["c"] * 4, "seed": [0, 1, 2, 3] * 3,
                       "value": [1, 2, 3, 4, 2, 3, 5, 5, 1, 2, 3, 4]})
    pts, summ = stats.paired_differences(df, group="arm", reference="ref")
    b = pts[pts.arm == "b"].sort_values("seed")
    assert b["diff"].tolist() == [1.0, 1.0, 2.0, 1.0]
    row = summ.set_index("arm").loc["b"]
    assert row["n"] == 4 and row["mean"] == pytest.approx(1.25) and row["lo"] <= 1.25 <= row["hi"]
    assert row["p"] == pytest.approx(2 / 16)
    assert summ.set_index("arm").loc["c", "p"] == 1.0  # identical to the reference
    # fewer than 3 pairs: no CI; one pair: no p
    two, s2 = stats.paired_differences(df[df.seed < 2], group="arm", reference="ref")
    assert s2[["lo", "hi"]].isna().all().all() and s2["p"].notna().all()
    _, s1 = stats.paired_differences(df[df.seed == 0], group="arm", reference="ref")
    assert s1["p"].isna().all() and (s1["n"] == 1).all()
    # grouped by another column; an unknown reference is named
    df2 = pd.concat([df.assign(lam=0.5), df.assign(lam=1.0, value=df.value * 2)])
    _, sg = stats.paired_differences(df2, group="arm", reference="ref", by=["lam"])
    assert sg.set_index(["lam", "arm"]).loc[(1.0, "b"), "mean"] == pytest.approx(2.5)
    with pytest.raises(ValueError, match="nope"):
        stats.paired_differences(df, group="arm", reference="nope")
