"""The README's operators, tool-mutation and program-search results are written from the data by
``lib.operators.tables``, ``.tool_mutation`` and ``.program_search``: every table names its rows, every
inline value is made from the data, and a number recomputed from the CSVs with pandas alone is in the table."""
from __future__ import annotations

import glob
import itertools

import numpy as np
import pandas as pd
import pytest

from lib.operators.analysis import parents_changed, trade_grows_with_lam
from lib.core.paths import REPO_ROOT, data_dir
from lib.core import effects
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


def _readme_value(name: str) -> str:
    """The text between the README's markers of the cpu value ``name``."""
    text = (REPO_ROOT / "README.md").read_text()
    start = f"<!-- value:{name} cpu -->"
    assert start in text, name
    return text.split(start, 1)[1].split("<!-- /value -->", 1)[0]


def _exact_sign_flip_p(d: np.ndarray) -> float:
    """The two-sided paired sign-flip p over all 2ⁿ sign patterns, recomputed with numpy alone."""
    signs = np.array(list(itertools.product([1, -1], repeat=len(d))))
    return float(np.mean(np.abs(signs @ d) >= abs(d.sum()) * (1 - 1e-12)))


def test_operators_trend_recomputed_from_selection_csv_is_in_the_readme():
    sel = pd.read_csv(data_dir("cpu", "operators") / "selection.csv")
    wide = sel[sel["lam"] > 0].pivot_table(index=["lam", "seed"], columns="method",
                                           values=["mean_score", "mean_distance"])
    d = (wide.xs("qd", axis=1, level=1) - wide.xs("top_p", axis=1, level=1)).groupby(level="lam").mean()
    steady = bool((d["mean_score"].diff().dropna() <= 0).all() and (d["mean_distance"].diff().dropna() >= 0).all())
    summary = "more so the larger the penalty" if steady else "though not steadily more so the larger the penalty"
    assert op.operators_trend_summary("cpu") == summary == _readme_value("operators-trend-summary")
    assert _readme_value("operators-trend") == ("monotonically in λ" if steady else "though not monotonically in λ")


def test_a_trade_that_shrinks_at_one_lambda_is_not_steady():
    rows = [{"seed": s, "lam": lam, "method": m, "mean_score": 0.5 - (m == "qd") * q,
             "mean_distance": 0.2 + (m == "qd") * q}
            for s in range(3) for lam, q in [(0.5, 0.01), (1.0, 0.03)] for m in ("top_p", "qd")]
    sel = pd.DataFrame(rows)
    assert trade_grows_with_lam(sel)
    qd_at_1 = (sel["lam"] == 1.0) & (sel["method"] == "qd")
    shrinks = sel.assign(mean_distance=np.where(qd_at_1, 0.2, sel["mean_distance"]))
    assert not trade_grows_with_lam(shrinks)  # diversity gained at λ = 0.5 is lost again at λ = 1


def test_order_predictor_verdict_recomputed_from_the_csv_is_in_the_readme():
    rows = pd.read_csv(data_dir("cpu", "program_search") / "v2_program_search.csv")
    last = rows[rows["generation"] == rows["generation"].max()]
    wide = last.pivot_table(index="seed", columns="method", values="heldout_loss_ratio")
    words = []
    for m in ps.ALTERNATIVES:  # alternative − corrected: lower is better; its CI excludes 0 exactly when p <= 0.05
        d = (wide[m] - wide["corrected"]).to_numpy()
        words.append("tie" if _exact_sign_flip_p(d) > 0.05 else "better" if d.mean() > 0 else "worse")
        row = next(r for r in _rows(ps.program_search_results("cpu")) if r.startswith(f"| 4a/4b | `{m}`"))
        assert f"{d.mean():+.4f}".replace("-", "−") in row
    want = ("makes the search worse" if "worse" in words else "makes the search better" if set(words) == {"better"}
            else "does not make the search better")
    assert ps.program_search_predictor("cpu") == want == _readme_value("program-search-predictor")


def test_order_predictor_verdict_follows_every_alternatives_interval():
    def best(**intervals):
        return pd.DataFrame(intervals, index=["lo", "hi"]).T
    assert ps.predictor_effect(best(gate_blind=(0.01, 0.02), random_order=(0.001, 0.03))) == "makes the search better"
    no_better = ps.predictor_effect(best(gate_blind=(0.01, 0.02), random_order=(-0.01, 0.03)))
    assert no_better == "does not make the search better"  # one alternative ties
    assert ps.predictor_effect(best(gate_blind=(-0.02, -0.01), random_order=(0.01, 0.03))) == "makes the search worse"


def test_the_readme_summary_uses_the_results_verdicts():
    assert _readme_value("tool-mutation-verdict") == tm.tool_mutation_verdict("cpu")
    assert _readme_value("program-search-proposals") == ps.program_search_proposals("cpu")
    assert _readme_value("program-search-best-found") == ps.program_search_best_found("cpu")
    summary = (REPO_ROOT / "README.md").read_text().split("## Results")[0]  # the summary of what each one found
    for name in ("operators-trend-summary", "tool-mutation-verdict", "program-search-proposals",
                 "program-search-best-found", "program-search-predictor"):
        assert f"<!-- value:{name} cpu -->" in summary, name


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
