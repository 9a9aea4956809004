"""The society study's secondary comparisons and grid table (docs/study.md), recomputed from the CSVs."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from lib.society.studies.study.comparisons import SECONDARY, grid_choices, secondary_table
from lib.core.paths import data_dir
from lib.society.baselines import grid_of, grid_key
from lib.society.studies.study import tables as ts

SMOKE = data_dir("smoke", "society_study")
needs_smoke = pytest.mark.skipif(not SMOKE.is_dir(), reason="no smoke study data in this checkout")


def _last_population(arm: str, seed: int, folder=SMOKE) -> float:
    """Mean test_overall of the last generation's agents, straight from one shard's CSV."""
    df = pd.read_csv(folder / f"{arm}_s{seed}.csv")
    df = df[(df.metric == "test_overall") & (df.agent >= 0)]
    return float(df[df.generation == df.generation.max()].value.mean())


def test_secondary_table_is_paired_by_seed_and_counts_every_comparison():
    rows = pd.DataFrame([{"arm": a, "seed": s, "generation": 7, "agent": k, "metric": "test_overall",
                          "value": v + 0.01 * k, "selected": False, "conformity": 0.0, "score": 0.0}
                         for s in range(6) for k in range(2)
                         for a, v in (("full", 0.5), ("full@e1", 0.5 + 0.02 * (s + 1)), ("verified", 0.6))])
    t = secondary_table(rows).set_index(["arm_a", "arm_b"])
    assert len(t) == len(SECONDARY)
    e = t.loc[("full@e1", "full")]
    assert e.n == 6 and e["diff"] == pytest.approx(0.07) and e.p == pytest.approx(2 / 2 ** 6)
    assert e.lo <= e["diff"] <= e.hi
    assert t.loc[("verified@g0", "verified")].n == 0 and np.isnan(t.loc[("verified@g0", "verified")].p)


def test_pairs_whose_founders_differ_are_counted_per_seed():
    # founders (generation 0) identical in full and full@e1 on seeds 0-4; seed 5's full@e1 founders were
    # trained where the floats differ (one agent's val 0.51 instead of 0.5)
    def run(arm, s):
        f0 = [{"arm": arm, "seed": s, "generation": 0, "agent": k, "metric": m, "selected": True, "conformity": 0.0,
               "score": 0.0, "value": 0.5 + 0.1 * k + (0.01 if (arm, s, k, m) == ("full@e1", 5, 1, "val_overall") else 0)}
              for k in range(2) for m in ("val_overall", "test_overall")]
        return f0 + [{**r, "generation": 7, "value": r["value"] + (0.1 if arm == "full@e1" else 0)} for r in f0]
    rows = pd.DataFrame([r for s in range(6) for a in ("full", "full@e1") for r in run(a, s)])
    from lib.society.studies.study.comparisons import founders_of, seeds_on_other_founders
    f = founders_of(rows)
    assert seeds_on_other_founders(f, "full@e1", "full", range(6)) == 1
    assert seeds_on_other_founders(f, "full@e1", "full", range(5)) == 0
    assert seeds_on_other_founders(f, "full@e1", "baseline_soup", range(6)) == 0  # no founders' rows: not counted
    t = secondary_table(rows).set_index(["arm_a", "arm_b"])
    assert t.loc[("full@e1", "full"), "other_founders"] == 1 and t.loc[("full@e1", "full"), "n"] == 6


@needs_smoke
def test_secondary_table_at_smoke_holds_the_pandas_means():
    md = ts.study_secondary("smoke")
    for a, b, _ in SECONDARY:
        assert f"`{a}` − `{b}`" in md
    both = sorted({int(f.stem.rsplit("_s", 1)[1]) for f in SMOKE.glob("full@e1_s*.csv")}
                  & {int(f.stem.rsplit("_s", 1)[1]) for f in SMOKE.glob("full_s*.csv")})
    t = secondary_table(ts.study_rows("smoke")).set_index(["arm_a", "arm_b"])
    r = t.loc[("full@e1", "full")]
    assert r.n == len(both)
    assert r.a_acc == pytest.approx(np.mean([_last_population("full@e1", s) for s in both]))
    assert r.b_acc == pytest.approx(np.mean([_last_population("full", s) for s in both]))


@needs_smoke
def test_grid_choices_at_smoke_read_the_chosen_values_and_the_grid_from_the_rows():
    rows = ts.study_rows("smoke")
    t = grid_choices(rows, grid_of("wide")).set_index(["baseline", "key"])
    df = pd.read_csv(SMOKE / "baseline_ties_s0.csv").set_index("metric")["value"]
    grid = grid_of("wide")["baseline_ties"]
    scores = {(d, lam): df[grid_key({"density": d, "lambda": lam})] for d in grid["density"] for lam in grid["lambda"]}
    best = max(scores.values())
    assert df["baseline_density"] in {d for (d, _), v in scores.items() if v == best}
    r = t.loc[("baseline_ties", "density")]
    assert r.seeds_with_grid == len(list(SMOKE.glob("baseline_ties_s*.csv")))
    assert 0 <= r.seeds_edge_optimum + r.seeds_tied <= r.seeds_with_grid
    assert "baseline_ties" in ts.study_grids("smoke")


CPU = data_dir("cpu", "society_study")


@pytest.mark.skipif(not CPU.is_dir(), reason="no cpu study data in this checkout")
def test_no_baseline_of_the_committed_study_chose_an_open_end_of_its_grid():
    """§2 of the study: every baseline's most chosen value lies inside its grid, at a natural bound, or
    at an end only by a val tie (read from the committed rows)."""
    rows = ts.study_rows("cpu")
    t = grid_choices(rows, grid_of("wide"))
    assert len(t) == 5
    assert not t["at_open_edge"].any(), t[t["at_open_edge"]].to_string()


def test_best_arm_is_chosen_on_the_selection_pool_among_the_preregistered_arms():
    from lib.society.studies.study.comparisons import ADDED_AFTER_PREREGISTRATION, chosen_on_selection, primary_table
    sel = {"full": 0.5, "inherit_merge": 0.6, "full@seed_budget": 0.9, "baseline_lorahub": 0.55, "baseline_soup": 0.5}
    test = {"full": 0.45, "inherit_merge": 0.58, "full@seed_budget": 0.3, "baseline_lorahub": 0.6, "baseline_soup": 0.5}
    rows = pd.DataFrame([{"arm": a, "seed": s, "generation": 7, "agent": k, "metric": m, "value": v[a] + 0.01 * s,
                          "selected": False, "conformity": 0.0, "score": 0.0}
                         for s in range(6) for a in sel for k in ((0,) if a.startswith("baseline") else (0, 1))
                         for m, v in (("select_overall", sel), ("test_overall", test))])
    assert "full@seed_budget" in ADDED_AFTER_PREREGISTRATION
    arm, merge, means = chosen_on_selection(rows)
    assert (arm, merge) == ("inherit_merge", "baseline_lorahub")  # not the post-hoc arm with the top select
    assert means["full@seed_budget"] == pytest.approx(0.925)  # still reported
    t = primary_table(rows).set_index("comparison")
    first = t.iloc[0]
    assert (first.arm_a, first.arm_b, first.n) == ("inherit_merge", "baseline_lorahub", 6)
    assert first["diff"] == pytest.approx(0.58 - 0.6)  # on test, never on the pool it was chosen on
