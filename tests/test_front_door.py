"""The front door's words are written from the data (issue 54): each study's verdict in words
(lib.society.studies.answer), the climb's sentences (lib.society.studies.climb.tables), and what every data folder cost
(lib.tables.costs). Each check is shown failing on a planted verdict or number."""
from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

from lib import reproduce
from lib.core.paths import REPO_ROOT
from lib.society.studies import answer
from lib.society.studies.climb import tables as climb
from lib.tables import costs

README = (REPO_ROOT / "README.md").read_text()


def test_force_recomputes_the_folders_of_the_notebooks_experiments():
    assert set(costs.NOTEBOOK_EXPERIMENTS) == {s.experiment for s in reproduce.STEPS if s.experiment}


def test_the_cost_table_totals_its_folders():
    """The total at the bottom is the sum of the folders' lines (each read from its progress files or manifest), and
    a society folder's line is the sum of its progress files' generation walls."""
    table = costs.reproduce_cost("cpu")
    if "no data" in table:
        pytest.skip("no cpu data")
    lines = [[c.strip() for c in ln.strip("|").split("|")] for ln in table.splitlines()[2:]]
    folders, total = lines[:-1], lines[-1]
    assert len(folders) == len(costs.folders("cpu"))
    hours = [costs.folder_cost(REPO_ROOT / "data" / "cpu" / c[0].strip("`/"))[1] / 3600 for c in folders]
    assert float(total[3].strip("*")) == pytest.approx(sum(hours), abs=0.05)
    import json
    walls = sum(sum(json.loads(p.read_text()).get("gen_wall_s", []))
                for p in (REPO_ROOT / "data" / "cpu" / "society_lineage").glob("*.progress.json"))
    line = next(c for c in folders if c[0] == "`society_lineage/`")
    assert float(line[3]) == pytest.approx(walls / 3600, abs=0.005)
    assert line[1] == "`python -m lib.sweep configs/society_lineage/cpu.yaml`"


def test_a_folder_without_progress_files_is_read_from_its_manifest(tmp_path):
    (tmp_path / "manifest.json").write_text('{"wall_s": 7200}')
    assert costs.folder_cost(tmp_path) == (1, 7200.0, "manifest")
    (tmp_path / "a_s0.progress.json").write_text('{"gen_wall_s": [1800, 1800]}')
    assert costs.folder_cost(tmp_path) == (1, 3600.0, "progress files")
    assert costs.hours(3600) == "1.00" and costs.hours(10) == "< 0.01"


def test_interval_words_follow_the_interval():
    assert answer.interval_word(-0.2, -0.1) == "below" and answer.interval_word(0.1, 0.2) == "above"
    assert answer.interval_word(-0.1, 0.2) == "level with" and answer.interval_word(-np.inf, np.inf) is None
    t = pd.DataFrame({"lo": [-0.1], "hi": [0.2], "n": [16]})
    assert answer._no_verdict(["tie"], t) is None
    assert answer._no_verdict(["none yet (interim: 8 of 16 seeds)"], t).startswith("no verdict yet")
    assert "too few" in answer._no_verdict(["tie"], t.assign(lo=-np.inf))


def test_the_front_answer_has_one_line_a_study_each_naming_its_data():
    text = answer.front("cpu")
    lines = text.splitlines()
    assert len(lines) == len(answer.STUDIES) and all(ln.startswith("- **") for ln in lines)
    assert all(re.search(r"`society[\w]*/`", ln) for ln in lines), "each line names the folder it is read from"


def test_the_climbs_words_follow_its_verdicts(monkeypatch):
    """Each primary comparison is said as its verdict on the data the words name; a planted verdict changes them."""
    d, where = climb.said_data("cpu")
    if d is None:
        pytest.skip("no climb data at cpu scale")
    t, said, why = climb.said_verdicts(d)
    if said is None:
        pytest.skip(why)
    words = climb.climb_said("cpu")
    for k, v in enumerate(said):
        assert climb.SAID[k][v].split(" ({d}")[0] in words
    assert where in words
    flipped = {"loss": "win", "win": "loss", "tie": "win"}
    real = climb.verdict
    monkeypatch.setattr(climb, "verdict", lambda r, cfg: flipped.get(real(r, cfg), real(r, cfg))
                        if r.comparison == t.comparison[0] else real(r, cfg))
    planted = climb.climb_said("cpu")
    assert climb.SAID[0][flipped[said[0]]].split(" ({d}")[0] in planted
    assert climb.SAID[0][said[0]].split(" ({d}")[0] not in planted


def test_the_climbs_compute_is_said_as_counted():
    """"the same verifier calls" only where the counts agree: they do not (a population checks more answers and
    reads val)."""
    d, _ = climb.said_data("cpu")
    if d is None:
        pytest.skip("no climb data at cpu scale")
    c = climb.climb.compute_table(d["rows"], d["work"]).set_index("arm")
    words = climb.climb_matched("cpu")
    same = round(c.loc["climb", "verifier_calls"]) == round(c.loc["climb_single", "verifier_calls"])
    assert ("but the same verifier calls" in words) == same and ("not the same verifier calls" in words) != same
    assert f"{c.loc['climb', 'verifier_calls']:,.0f}" in words


def test_the_readme_leads_with_the_answer_then_quick_start():
    """Under the claim, the answer (one generated line a study, its scope in one generated clause), then Quick start,
    then the tables."""
    first = README.split("## Quick start")[0]
    assert "<!-- table:society-front cpu -->" in first and "<!-- value:society-front-scope cpu -->" in first
    assert README.index("## Quick start") < README.index("<!-- table:society-answer cpu -->")
    block = first.split("<!-- table:society-front cpu -->\n")[1].split("<!-- /table:society-front -->")[0]
    assert 3 <= len(block.strip().splitlines()) <= 5


def test_a_page_and_a_doc_round_alike():
    """A notebook's printed table (lib.style.table_text) rounds as the generated docs do (lib.core.format.fmt): the
    issue's 0.622 on the page and 0.623 in docs/climb.md were one number under two rules."""
    from lib.core.format import fmt
    from lib.style import table_text
    x = 0.6225000000000001  # the climb's easy level of climb_single_vote, as the mean of its seeds gave it
    assert fmt(x) == "0.623" and "0.623" in table_text(pd.DataFrame({"v": [x]}))
    assert pd.DataFrame({"v": [x]}).round(3)["v"][0] == 0.622  # the old rule
