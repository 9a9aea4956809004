"""The lineage study's placement of every society design against the one-shot frontier at its compute
(lib.society.studies.lineage.comparisons.placement; Fig. 3i, the README's words on compute)."""
from __future__ import annotations

import numpy as np
import pytest

from lib.core.paths import REPO_ROOT
from lib.core.stats import MIN_PAIRED_N
from lib.society.arms import LINEAGE_PRIMARY
from lib.society.studies.lineage import comparisons as lineage, tables
from lib.society.studies.skills.comparisons import chosen_agents
from lib.society.studies.verdict.comparisons import founder_selection


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
        if not isinstance(r["rival"], str) or not bounded:
            assert not isinstance(r["where"], str), r["arm"]  # None (NaN once the groups are joined): not placed
            continue
        want = lineage.ABOVE if r["lo"] > 0 else lineage.BELOW if r["hi"] < 0 else lineage.ON
        assert r["where"] == want, r["arm"]
    few = placed[placed["n"] < 6]
    assert few["where"].isna().all()


@pytest.mark.parametrize("scale", ["smoke", "cpu"])
def test_the_verdict_phrase_says_what_the_primary_table_says(scale):
    """The README's one-phrase verdict lists each primary comparison under the verdict of its table line, and says
    none while any comparison is short of its pre-registered seeds."""
    table = tables.lineage_primary(scale)
    if table == tables.NO_DATA:
        pytest.skip(f"no lineage data at {scale} scale")
    lines = [[c.strip() for c in line.strip("|").split("|")] for line in table.splitlines()[2:]]
    said = tables.lineage_verdicts(scale)
    if any(cells[9].startswith("none yet") for cells in lines):
        assert said.startswith("no verdict yet"), said
        return
    groups = tables.verdict_groups(said)
    for cells in lines:
        assert int(cells[0]) in groups[cells[9]] and f"{cells[0]} ({cells[1]})" in said, (cells[1], said)


LINEAGE_DOC = " ".join((REPO_ROOT / "docs" / "lineage.md").read_text().split())  # words, not line breaks


def test_the_page_says_of_strings_what_the_runs_show():
    """docs/lineage.md explains `continue`'s missing strings skill by selection: no strings founder is a parent of
    generation 1, and no agent of the two society designs after generation 0 scores above 0.1 on strings' novel
    region; its chosen agent's lists novel accuracy is the highest of the primary comparisons' five models. The
    runs must bear each claim out."""
    d = lineage.load_data("cpu")
    if d is None or d["rows"] is None:
        pytest.skip("no lineage data at cpu scale")
    rows, fams = d["rows"], d["families"]
    assert "selection never makes one a parent of generation 1" in LINEAGE_DOC
    chosen = founder_selection(rows, fams)
    assert (chosen.loc[chosen["family"] == "strings", "selected"] == 0).all()
    assert "no agent of `continue` or `crossover` scores above 0.1 on strings' novel region" in LINEAGE_DOC
    later = rows[rows["arm"].isin(["continue", "crossover"]) & (rows["generation"] >= 1)
                 & (rows["metric"] == "test_strings_novel")]
    assert len(later) and later["value"].max() <= 0.1
    assert ("its chosen agent's lists novel accuracy is the highest of the five models the primary comparisons pair"
            in LINEAGE_DOC)
    paired = {arm for _, a, b in LINEAGE_PRIMARY for arm in (a, b)}
    lists = chosen_agents(rows[rows["arm"].isin(paired)], fams).groupby("arm")["test_lists_novel"].mean()
    assert lists.idxmax() == "continue", lists.to_dict()


def test_a_rival_shares_enough_of_the_designs_seeds_to_place_it(placed):
    """A one-shot model run on a seed or two (a frontier point still running) is no rival for a design on 16: the
    rival shares at least as many seeds with the design as a bounded interval needs, or all the design has."""
    d = lineage.load_data("cpu")
    seeds = d["everything"].groupby("arm")["seed"].nunique()
    for _, r in placed[placed["rival"].notna()].iterrows():
        assert r["n"] >= min(seeds[r["arm"]], MIN_PAIRED_N), (r["arm"], r["rival"], r["n"])
