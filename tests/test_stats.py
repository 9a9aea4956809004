from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from lib import stats


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
