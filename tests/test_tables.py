"""Results tables are written from the data by code (lib.tables), and the committed ones are current."""
from __future__ import annotations

import pytest

from lib.society.data import config_of, society_rows
from lib.society.studies.skills import tables as skills_tables
from lib.society.studies.study import tables as study_tables
from lib.tables import registry as tables


def test_committed_tables_equal_what_the_committed_data_gives():
    assert tables.stale() == [], "run python -m lib.tables (make reproduce does) and commit the README"


def test_render_rewrites_a_marked_block_and_only_it(monkeypatch):
    monkeypatch.setitem(tables.TABLES, "demo", lambda scale: f"| made at {scale} |\n")
    text = "before\n<!-- table:demo smoke -->\nold body\n<!-- /table:demo -->\nafter\n"
    assert tables.render(text) == "before\n<!-- table:demo smoke -->\n| made at smoke |\n<!-- /table:demo -->\nafter\n"
    with pytest.raises(ValueError, match="unknown table"):
        tables.render("<!-- table:nonesuch cpu -->\n<!-- /table:nonesuch -->")


def test_study_tables_at_smoke_name_every_primary_comparison():
    md = study_tables.study_primary("smoke")
    if md.startswith("No data yet"):
        pytest.skip("no smoke study data in this checkout")
    for label in ("full@matched − full", "verified − full@matched", "niche − full", "inherit_merge − full",
                  "full − no_grounding", "best one-shot merge"):
        assert label in md
    assert md.count("\n") == 2 + 6


def test_render_rewrites_an_inline_value_inside_its_sentence(monkeypatch):
    monkeypatch.setitem(tables.VALUES, "demo-n", lambda scale: "42" if scale == "cpu" else "7")
    text = "we ran <!-- value:demo-n cpu -->3<!-- /value --> seeds and <!-- value:demo-n smoke -->x<!-- /value -->.\n"
    assert tables.render(text) == ("we ran <!-- value:demo-n cpu -->42<!-- /value --> seeds and "
                                   "<!-- value:demo-n smoke -->7<!-- /value -->.\n")
    with pytest.raises(ValueError, match="unknown value"):
        tables.render("<!-- value:nonesuch cpu -->1<!-- /value -->")


def test_every_table_and_value_name_is_used_by_a_committed_file():
    """A registered table nobody shows is dead code; a marker nobody registered fails in render."""
    from lib.core.paths import REPO_ROOT
    text = "".join((REPO_ROOT / f).read_text() for f in tables.FILES)
    used = set(tables.marked_names(text))
    assert set(tables.TABLES) | set(tables.VALUES) <= used, sorted((set(tables.TABLES) | set(tables.VALUES)) - used)


def test_verdict_words_follow_holm_p_and_sign():
    from lib.society.studies.study.comparisons import verdict
    assert verdict(+0.05, 0.01) == "win" and verdict(-0.05, 0.01) == "loss"
    assert verdict(+0.20, 0.05) == "tie" and verdict(-0.2, 0.3) == "tie"
    assert verdict(float("nan"), 0.01) == "—" and verdict(0.1, float("nan")) == "—"


def test_study_primary_marks_comparisons_short_of_their_preregistered_seeds_interim():
    md = study_tables.study_primary("smoke")
    if md.startswith("No data yet"):
        pytest.skip("no smoke study data in this checkout")
    body = md.splitlines()[2:]
    assert all(line.split("|")[-2].strip().split(" ")[0] in ("win", "loss", "tie", "—") for line in body)


def test_study_verdicts_name_each_primary_comparison_once():
    text = tables.VALUES["study-verdicts"]("smoke")
    if text == "no data yet":
        pytest.skip("no smoke study data in this checkout")
    assert text.startswith("wins: ") and "; ties: " in text and "; losses: " in text
    for k in range(1, 7):
        assert text.count(f"{k} (") == 1, (k, text)



@pytest.fixture
def smoke_copies(tmp_path, monkeypatch):
    """``copy(*experiments)``: the tables read copies of those smoke data folders (under ``tmp_path``),
    which a test may then damage; returns the copies' root."""
    import shutil

    from lib.core.paths import REPO_ROOT
    from lib.society import data as table_data

    def copy(*experiments):
        for exp in experiments:
            shutil.copytree(REPO_ROOT / "data" / "smoke" / exp, tmp_path / exp)
        monkeypatch.setattr(table_data, "data_dir", lambda scale, exp: tmp_path / exp)
        return tmp_path  # the reader's cache is keyed by each folder's state: nothing to clear
    yield copy


def test_breeding_arms_are_tabled_against_the_full_of_their_own_folder(smoke_copies):
    from lib.society.studies.verdict import tables as sr
    rows = sr._breeding_rows.__wrapped__("smoke")
    assert set(rows.loc[rows["arm"] == "full", "study"]) == {"society_recombination"}  # read alone: its own full
    assert set(rows["arm"]) == {"full", "no_sex", "sex_linear", "sex_sum", "sex_ties"}
    # a recombination folder without its own full (the older layout) gives no breeding table, never the
    # main run's full of another commit
    root = smoke_copies("society", "society_recombination")
    (root / "society_recombination" / "full_s0.csv").unlink()
    assert sr._breeding_rows.__wrapped__("smoke") is None


def test_lexicase_is_tabled_against_the_full_and_niche_of_its_own_folder(smoke_copies):
    from lib.society.studies.study import tables as st
    rows = st.lexicase_rows("smoke")
    assert set(rows["study"]) == {"society_lexicase"} and set(rows["arm"]) == {"full", "niche", "lexicase"}
    # without its own full, the lexicase − full line is not run yet: never the study's full of another folder
    root = smoke_copies("society_study", "society_lexicase")
    (root / "society_lexicase" / "full_s0.csv").unlink()
    lines = st.study_lexicase("smoke").splitlines()
    assert "not run yet" in lines[2] and "`lexicase` − `full`" in lines[2]
    assert "not run yet" not in lines[3]  # lexicase − niche still has both arms


def test_seed_ranges_join_consecutive_seeds():
    from lib.core.format import seed_ranges
    assert seed_ranges([12, 0, 1, 2, 3, 8, 9, 3]) == "0–3, 8–9, 12"
    assert seed_ranges([5]) == "5" and seed_ranges([]) == ""


def test_skills_pilot_has_one_line_per_population_and_its_mean_from_the_csv():
    """The pilot table (every generation on disk, finished or not) read against the shards themselves."""
    import pandas as pd

    from lib.core.paths import data_dir
    from lib.society.studies.skills.tables import skills_pilot

    folder = data_dir("smoke", "society_crossover")
    shards = sorted(folder.glob("*_s[0-9]*.csv"))
    if not shards:
        pytest.skip("no smoke skill-combining data in this checkout")
    rows = pd.concat(pd.read_csv(f) for f in shards)
    pops = rows[(rows["agent"] >= 0) & (rows["metric"] == "test_overall")]
    means = pops.groupby(["arm", "seed", "generation"])["value"].mean()
    lines = skills_pilot("smoke").splitlines()[2:]
    assert lines[0].startswith("| bare base |") and len(lines) == 1 + len(means)
    for line in lines[1:]:
        cells = [c.strip() for c in line.strip("|").split("|")]
        arm, seed, gen, overall = cells[0].strip("`"), int(cells[1]), int(cells[2]), float(cells[3])
        assert overall == pytest.approx(means[(arm, seed, gen)], abs=5e-4), line


def test_skills_machines_counts_each_shards_commit_from_its_progress_file():
    """The commits column: per folder (one float path at smoke), the shards made at each commit, as the progress
    files record them (else the folder manifest's one commit), adding up to the folder's shards."""
    import collections
    import json
    import re

    from lib.core.manifest import read_manifest
    from lib.core.paths import data_dir
    from lib.society.studies.skills.tables import skill_rows, skills_machines

    rows = skill_rows("smoke")
    if rows is None:
        pytest.skip("no smoke skill-combining data in this checkout")
    lines = skills_machines("smoke").splitlines()[2:]
    assert len(lines) == rows["study"].nunique()
    for line in lines:
        cells = [c.strip() for c in line.strip("|").split("|")]
        study, shards = cells[0].strip("`"), int(cells[2])
        made = {c: int(n) for c, n in re.findall(r"`([^`]+)` \((\d+)\)", cells[5])}
        folder = data_dir("smoke", study)
        git = (read_manifest(folder) or {}).get("git") or {}
        one = git.get("commit") if len(git.get("commits", [])) <= 1 else None
        runs = rows.loc[rows["study"] == study, ["arm", "seed"]].drop_duplicates().itertuples(index=False)
        recorded = collections.Counter(
            str(json.loads((folder / f"{a}_s{s}.progress.json").read_text()).get("commit") or one or "?")[:7]
            for a, s in runs)
        assert made == dict(recorded) and sum(made.values()) == shards, line


def test_the_society_table_reads_each_design_from_its_fullest_folder_and_marks_only_short_arms_interim():
    """Each design's line is from the folder with the most seeds of it (on a tie, a finished study's before a
    running one's); it is interim only while its study is running and its arm is short of the seeds that study
    pre-registered for it (a design whose seeds are all in is not interim for a secondary arm still running)."""
    lines, _ = skills_tables._design_lines("cpu")
    if not lines:
        pytest.skip("no society data at cpu scale")

    def running(folder):
        return folder in skills_tables.RUNNING and not skills_tables.study_finished(folder, "cpu")

    for x in lines:
        short = x["n"] < len(config_of(x["study"], "cpu").seeds_of(x["arm"]))
        assert x["interim"] == (running(x["study"]) and short), x["arm"]
        for folder in skills_tables.FOLDERS:
            rows = society_rows("cpu", folder, finished=True, required=False)
            if rows is None or folder == x["study"] or x["arm"] not in set(rows["arm"]):
                continue
            n = rows[rows["arm"] == x["arm"]]["seed"].nunique()
            assert n <= x["n"], (x["arm"], folder)
            if n == x["n"] and running(x["study"]):
                assert running(folder), (x["arm"], "a finished study's runs come before a running one's")
