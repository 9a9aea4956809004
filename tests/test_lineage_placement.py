"""The lineage study's placement of every society design against the one-shot frontier at its compute
(lib.society.studies.lineage.comparisons.placement; Fig. 3i, the README's words on compute)."""
from __future__ import annotations

import numpy as np
import pytest

from lib.society.studies.lineage import comparisons as lineage


@pytest.fixture(scope="module")
def placed():
    d = lineage.load_data("cpu")
    if d is None:
        pytest.skip("no lineage data at cpu scale")
    return lineage.placements(d["groups"], d["families"])


def test_a_design_is_placed_only_by_a_bounded_interval_and_as_it_says(placed):
    """Above: the paired interval above 0; below: under 0; on: across 0. With fewer than 6 paired seeds the
    sign-flip interval is unbounded, and the design is not placed (an unbounded interval is not "on" it)."""
    assert len(placed)
    for _, r in placed.iterrows():
        bounded = np.isfinite(r["lo"]) and np.isfinite(r["hi"])
        if r["rival"] is None or not bounded:
            assert r["where"] is None, r["arm"]
            continue
        want = lineage.ABOVE if r["lo"] > 0 else lineage.BELOW if r["hi"] < 0 else lineage.ON
        assert r["where"] == want, r["arm"]
    few = placed[placed["n"] < 6]
    assert few["where"].isna().all()
