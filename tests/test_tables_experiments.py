"""The README's operators, tool-mutation and program-search results are written from the data by
``lib.operators.tables``, ``.tool_mutation`` and ``.program_search``: every table names its rows, every
inline value is made from the data, and a number recomputed from the CSVs with pandas alone is in the table."""
from __future__ import annotations

import glob

import numpy as np
import pandas as pd
import pytest

from lib.operators.analysis import parents_changed
from lib.core.paths import data_dir
from lib.tables import effects
from lib.operators import tables as op
from lib.program_search import tables as ps
from lib.tool_mutation import tables as tm

HEADER = "| figure | comparison | Δ [95 % CI (sign-flip inversion)] | p | n |"


def _rows(md: str) -> list[str]:
    """The body rows of a generated table (header and rule dropped)."""
    lines = md.strip().splitlines()
    assert lines[0] == HEADER and lines[1].startswith("| --- |")
    return lines[2:]


def test_operators_table_at_smoke_has_fig1a_s1a_and_one_row_per_lambda():
    rows = _rows(op.operators_results("smoke"))
    lams = sorted(set(pd.read_csv(data_dir("smoke", "operators") / "selection.csv")["lam"]) - {0.0})
    assert [r.split(" | ")[0] for r in rows] == ["| 1a", "| S1a"] + ["| 1c / 1d"] * len(lams)
    for r, lam in zip(rows[2:], lams):
        assert f"λ = {lam:g}" in r


def test_tool_mutation_table_at_smoke_names_the_three_comparisons():
    rows = _rows(tm.tool_mutation_results("smoke"))
    assert [r.split(" | ")[1] for r in rows] == ["`mutate_promote` − `sgd`", "`random_promote` − `sgd`",
                                                 "`mutate_promote` − `random_promote`"]


def test_program_search_table_at_smoke_names_every_method_and_the_bracket_rows():
    rows = _rows(ps.program_search_results("smoke"))
    figures = [r.split(" | ")[0].lstrip("| ") for r in rows]
    assert figures[-2:] == ["4c", "4d"] and set(figures[:-2]) == {"4a/4b", "S4a"}
    best = "\n".join(r for r in rows if r.startswith("| 4a/4b"))
    for m in ("generic_first_jet", "full_jacobian", "gate_blind", "random_order", "no_feedback",
              "frozen_proposer", "direct_tournament"):
        assert f"`{m}`" in best


@pytest.mark.parametrize("values", [op.VALUES, tm.VALUES, ps.VALUES], ids=["operators", "tool_mutation", "program_search"])
def test_every_inline_value_at_smoke_is_made_from_the_data(values):
    for name, f in values.items():
        text = f("smoke")
        assert text and text not in ("—", "no data yet") and "\n" not in text, (name, text)


@pytest.mark.parametrize("table", [op.operators_results, tm.tool_mutation_results, ps.program_search_results])
def test_a_scale_without_data_says_so(table):
    if any((data_dir("paper", e) / "manifest.json").is_file() for e in ("operators", "tool_mutation", "program_search")):
        pytest.skip("this checkout holds paper-scale data")
    assert table("paper").startswith("No data yet")


@pytest.mark.parametrize("scale", ["smoke", "cpu"])
def test_mutate_promote_minus_sgd_recomputed_from_the_csvs_is_in_the_table(scale):
    files = glob.glob(str(data_dir(scale, "tool_mutation") / "*_s*.csv"))
    rows = pd.concat([pd.read_csv(f) for f in files])
    h = rows[rows["metric"] == "heldout_loss"]
    fin = h[h["step"] == h["step"].max()].pivot_table(index="seed", columns="arm", values="value")
    d = (fin["mutate_promote"] - fin["sgd"]).mean()
    row = next(r for r in _rows(tm.tool_mutation_results(scale)) if "`mutate_promote` − `sgd`" in r)
    assert f"{d:+.4f}".replace("-", "−") in row
    assert tm.arm_mse("sgd")(scale).startswith(f"{fin['sgd'].mean():.4f}")


def test_consensus_gain_recomputed_from_agents_csv_is_in_the_table():
    agents = pd.read_csv(data_dir("cpu", "operators") / "agents.csv")
    per = agents.groupby("seed").agg(f=("fitness", "mean"), c=("consensus_acc", "first"))
    d = per["c"] - per["f"]
    row = next(r for r in _rows(op.operators_results("cpu")) if r.startswith("| S1a"))
    assert f"{d.mean():+.3f}" in row and f"consensus better in {(d > 0).sum()} of {len(d)}" in row
    r = np.corrcoef(agents["fitness"], agents["conformity"])[0, 1]
    assert f"r = {r:.2f}" in op.operators_results("cpu")


def test_frozen_proposer_minus_corrected_recomputed_from_the_csv_is_in_the_table():
    rows = pd.read_csv(data_dir("cpu", "program_search") / "v2_program_search.csv")
    last = rows[rows["generation"] == rows["generation"].max()]
    wide = last.pivot_table(index="seed", columns="method", values="heldout_loss_ratio")
    d = (wide["frozen_proposer"] - wide["corrected"]).mean()
    row = next(r for r in _rows(ps.program_search_results("cpu")) if r.startswith("| 4a/4b | `frozen_proposer`"))
    assert f"{d:+.4f}".replace("-", "−") in row
    assert "(reversal, not significant" in row  # below 0, its interval holding 0
    diags = pd.read_csv(data_dir("cpu", "program_search") / "v2_bracket_diagnostics.csv")
    assert effects.sci(diags["compiled_error"].max()) in ps.program_search_results("cpu")


def test_parents_changed_counts_sets_not_orders():
    sel = pd.DataFrame({"seed": [0, 0, 1, 1], "lam": 0.5, "method": ["top_p", "qd"] * 2,
                        "selected": ["1 2 3", "2 1 3", "1 2 3", "1 2 4"]})
    assert parents_changed(sel).to_dict("records") == [{"lam": 0.5, "changed": 1, "n": 2}]


def test_the_interval_decides_the_words():
    assert effects.delta_null(0.0006, -0.0007, 0.0018) == "+0.0006 [−0.0007, 0.0018] (null)"
    assert effects.delta_null(-0.038, -0.051, -0.024) == "−0.038 [−0.051, −0.024]"
    assert "(null)" not in effects.delta_null(0.1, -np.inf, np.inf)  # unbounded: says so instead
    assert effects.verdict(-0.0007, 0.0018) == "ties" and effects.verdict(0.01, 0.02) == "loses to"
    assert effects.verdict(-0.02, -0.01) == "beats"


def test_numbers_read_as_written():
    assert effects.plain(-0.00001, 4) == "0.0000" and effects.signed(-0.0356, 4) == "−0.0356"
    assert effects.sci(2.220446049250313e-15) == "2.2·10⁻¹⁵" and effects.sci(1.056878) == "1.06"
    assert effects.sci(0.004619725) == "4.6·10⁻³" and effects.sci(0.0) == "0"
    assert effects.sci(9.96e-5) == "1.0·10⁻⁴"
