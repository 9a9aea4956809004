"""The society's first verdict in full (docs/results.md) is written from the data by
lib.society.studies.verdict.tables."""
from __future__ import annotations

import glob
import re

import pandas as pd
import pytest

from lib.core.paths import REPO_ROOT, data_dir
from lib.society.studies.verdict import tables as sr

SMOKE = data_dir("smoke", "society")
needs_smoke = pytest.mark.skipif(not SMOKE.is_dir(), reason="no smoke society data in this checkout")


def _rows(md: str) -> list[list[str]]:
    """The body cells of a generated Markdown table."""
    return [[c.strip() for c in line.strip("|").split("|")] for line in md.splitlines()[2:]]


def _first_cells(md: str) -> list[str]:
    return [r[0] for r in _rows(md)]


@needs_smoke
def test_every_table_at_smoke_has_the_expected_rows():
    fams = ["lists", "strings", "arith"]
    assert _first_cells(sr.testbed_table("smoke")) == [*fams, "overall"]
    pre = _first_cells(sr.preconditions_table("smoke"))
    assert pre[:4] == [f"specialist gap, {f}" for f in fams] + ["specialist gap, mean over families"]
    assert any(c.startswith("val–test r within generation") for c in pre)
    methods = _first_cells(sr.methods_table("smoke"))
    for m in ("`full`", "`no_grounding`", "`no_diversity`", "`full` (val-best)", "`baseline_lorahub`",
              "`baseline_multitask`", "the founders (generation 0, mean)", "the bare base"):
        assert m in methods
    assert _first_cells(sr.retention_table("smoke")) == fams
    assert _first_cells(sr.skill_loss_table("smoke")) == [*fams, "all families"]
    sel = _rows(sr.founder_selection_table("smoke"))
    assert [r[0].split(":")[0] for r in sel[1:]] == ["`full`", "`no_grounding`", "`no_diversity`"]
    assert all(int(r[-1]) == sum(int(x) for x in r[2:5]) for r in sel[1:])  # every parent slot has a family
    gen = _first_cells(sr.generalists_table("smoke"))
    assert gen[0] == "the founders (generation 0, mean)" and "`baseline_multitask`" in gen
    assert _first_cells(sr.operators_table("smoke")) == ["`full`", "`no_grounding`", "`no_diversity`"]
    rec = [c.split(" ")[0] for c in _first_cells(sr.recombination_table("smoke"))]
    assert rec == ["`full`", "`no_sex`", "`sex_linear`", "`sex_sum`", "`sex_ties`"]
    assert _first_cells(sr.recombination_skill_table("smoke")) == rec
    assert "`full@e1`" in [r[1] for r in _rows(sr.secondary_table("smoke"))]


@needs_smoke
def test_every_value_at_smoke_is_written():
    for name, fn in sr.VALUES.items():
        v = fn("smoke")
        assert v and "\n" not in v and "nan" not in v.lower(), (name, v)


@needs_smoke
def test_numbers_recomputed_with_pandas_from_the_smoke_csv_are_in_the_tables():
    df = pd.read_csv(SMOKE / "full_s0.csv")
    last = df["generation"].max()
    pop = df[(df["generation"] == last) & (df["agent"] >= 0) & (df["metric"] == "test_overall")]["value"].mean()
    full = next(r for r in _rows(sr.methods_table("smoke")) if r[0] == "`full`")
    assert full[2].startswith(f"{pop:.3f} ")
    base = df[(df["generation"] == 0) & (df["agent"] == -1) & (df["metric"] == "base_test_overall")]["value"].mean()
    assert sr.VALUES["society-base-test"]("smoke") == f"{base:.3f}"
    sel = df[(df["generation"] == 0) & (df["metric"] == "val_overall") & (df["selected"].astype(str) == "True")]
    row = next(r for r in _rows(sr.founder_selection_table("smoke")) if r[0].startswith("`full`"))
    assert int(row[-1]) == len(sel)  # the parent slots of generation 0


def test_the_committed_page_holds_the_base_and_the_runs_the_cpu_csvs_give():
    """Independent of lib: the bare base's test accuracy and the count of runs, read with pandas."""
    files = sorted(glob.glob(str(data_dir("cpu", "society") / "*_s*.csv")))
    if not files:
        pytest.skip("no cpu society data in this checkout")
    page = (REPO_ROOT / "docs" / "results.md").read_text()
    full = pd.concat([pd.read_csv(f) for f in files if re.search(r"/full_s\d+\.csv$", f)])
    base = full[(full["generation"] == 0) & (full["agent"] == -1) & (full["metric"] == "base_test_overall")]
    assert f"<!-- value:society-base-test cpu -->{base.groupby('seed')['value'].mean().mean():.3f}<!-- /value -->" in page
    assert f"<!-- value:society-runs cpu -->{len(files)}<!-- /value -->" in page
    seeds = full["seed"].nunique()
    assert f"<!-- value:society-seeds cpu -->{seeds}<!-- /value -->" in page
