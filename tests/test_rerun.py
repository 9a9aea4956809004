"""The seat-fair re-runs (issue 53 §3): a seed whose arms ran on two float paths is dropped, and the before/after
tables decide a verdict only once every registered seed is in, and say when it moved."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from lib.core.rows import progress_path, shard_path
from lib.society.data import FAIR, MAIN, STUDY, config_of, fair_rows, mixed_seeds, society_rows
from lib.society.studies import rerun, seats
from lib.society.studies.study.comparisons import PRIMARY, primary_table

AMD = {"vendor": "AMD EPYC", "torch_cpu_capability": "AVX512", "blas": "mkl"}
INTEL = {"vendor": "Intel(R) Xeon(R) Processor", "torch_cpu_capability": "AVX512", "blas": "mkl"}


def _progress(folder, arm, seed, fp):
    p = progress_path(shard_path(folder, arm, seed))
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(json.dumps({"last_done": 7, "float_path": fp}))


def test_a_seed_whose_arms_ran_on_two_float_paths_is_mixed(tmp_path):
    for arm in ("full", "no_grounding"):
        _progress(tmp_path, arm, 0, AMD)
        _progress(tmp_path, arm, 1, INTEL)
    _progress(tmp_path, "full", 2, AMD)
    _progress(tmp_path, "no_grounding", 2, INTEL)  # one seed, two machines
    runs = pd.DataFrame([(a, s) for a in ("full", "no_grounding") for s in (0, 1, 2)], columns=["arm", "seed"])
    assert mixed_seeds(tmp_path, runs) == [2]  # seeds from two machines may share a folder; a seed may not
    _progress(tmp_path, "no_grounding", 2, AMD)
    assert mixed_seeds(tmp_path, runs) == []


def _line(comparison, n, diff, p, planned=16, lo=None, hi=None, correction="raw", p_raw=None):
    lo = diff - 0.01 if lo is None else lo
    hi = diff + 0.01 if hi is None else hi
    return {"comparison": comparison, "other": "b", "correction": correction, "planned": planned, "n": n,
            "diff": diff, "lo": lo, "hi": hi, "p_raw": p if p_raw is None else p_raw, "p": p}


def test_a_corrected_line_shows_the_raw_p_its_interval_agrees_with_beside_the_corrected_one():
    """An interval that excludes 0 beside a corrected p above 0.05 read as a contradiction: the raw sign-flip p (the
    test the interval inverts) is shown first, the corrected p the verdict reads after it."""
    before = pd.DataFrame([_line("`a` − `b`", 32, 0.02, 0.0072, planned=32, lo=0.007, hi=0.031,
                                 correction="Holm over 6", p_raw=0.0024)])
    after = pd.DataFrame([_line("`a` − `b`", 32, 0.023, 0.24, planned=32, lo=0.001, hi=0.044,
                                correction="Bonferroni over 6", p_raw=0.04)])
    text = rerun.side_by_side(before, after)
    assert "| 0.0024; Holm 0.0072 | win |" in text and "| 0.04; Bonferroni 0.24 | tie |" in text


def test_a_verdict_is_decided_only_with_every_registered_seed_and_a_change_is_named():
    before = pd.DataFrame([_line("`a` − `b`", 16, 0.05, 0.001), _line("`c` − `b`", 16, 0.0, 0.8)])
    interim = pd.DataFrame([_line("`a` − `b`", 9, 0.01, 0.3), _line("`c` − `b`", 9, 0.0, 0.9)])
    text = rerun.side_by_side(before, interim)
    assert "none yet (9 of 16 seeds)" in text and "yes:" not in text
    assert rerun.standing(before, interim, [], "x") == "`x/` has 9 of 16 seeds, no verdict re-decided yet"
    after = pd.DataFrame([_line("`a` − `b`", 16, 0.01, 0.3), _line("`c` − `b`", 16, 0.0, 0.7)])
    text = rerun.side_by_side(before, after)
    assert "yes: win → tie" in text and "| no |" in text
    assert rerun.standing(before, after, [], "x") == "`x/` has 16 of 16 seeds; verdicts moved: `a` − `b` (win → tie)"
    assert "no verdict moved" in rerun.standing(before, before, [], "x")
    half = pd.DataFrame([_line("`a` − `b`", 16, 0.01, 0.3), _line("`c` − `b`", 5, 0.0, 0.7)])
    assert rerun.standing(before, half, [], "x") == ("`x/` has 16 of 16 seeds; verdicts moved: `a` − `b` (win → tie) "
                                                     "(1 of 2 re-decided; not yet: `c` − `b`)")
    assert "seeds 3 ran on two float paths" in rerun.standing(before, interim, [3], "x")
    assert "no run yet" in rerun.side_by_side(before, None)
    assert rerun.standing(before, None, [], "x") == "`x/` not started"


def test_the_best_merge_is_named_per_side_and_matched_by_its_label():
    b = _line("`full` − the best one-shot merge", 16, -0.1, 0.001)
    a = {**b, "other": "baseline_ties"}
    text = rerun.side_by_side(pd.DataFrame([{**b, "other": "baseline_lorahub"}]), pd.DataFrame([a]))
    assert "(b: `baseline_lorahub`)" in text and "(b: `baseline_ties`)" in text and "| no |" in text


def test_the_grounding_effects_after_p_is_bonferronis_over_the_six():
    rows = society_rows("smoke", STUDY, finished=True)
    cfg = config_of(FAIR[STUDY], "smoke")
    g = primary_table(rows).set_index("comparison").loc[rerun.GROUNDING]
    after, before = rerun.study_lines(rows, cfg, fair=True), rerun.study_lines(rows, cfg, fair=False)
    assert after.iloc[0]["p"] == pytest.approx(min(1.0, len(PRIMARY) * g.p))
    assert before.iloc[0]["p"] == pytest.approx(g.p_holm)
    assert after.iloc[0]["correction"] == "Bonferroni over 6"
    assert set(after["comparison"][1:]) <= {f"`{a}` − `{b}`" for a, b, _ in rerun.SECONDARY}


@pytest.mark.parametrize("study", [MAIN, STUDY])
def test_each_re_run_at_smoke_is_read_and_shown_beside_its_folder(study):
    rows, mixed = fair_rows("smoke", study)
    assert rows is not None and mixed == [] and set(rows["study"]) == {FAIR[study]}
    table = (rerun.rerun_society if study == MAIN else rerun.rerun_study)("smoke")
    lines = [ln for ln in table.splitlines()[2:] if ln]
    assert lines and all("no run yet" not in ln for ln in lines)  # every comparison has an after side
    after = rerun._society("smoke", fair=True) if study == MAIN else rerun._study("smoke", fair=True)
    assert after is not None and np.isfinite(after["diff"].astype(float)).all()
    seat = seats.seats(study)("smoke")
    assert "after (seat-fair)" in seat and "before (seat-biased consensus)" in seat


def test_gather_copies_finished_shards_and_keeps_every_commit(tmp_path):
    import shutil
    from lib.core.config import ConfigError
    from lib.core.manifest import read_manifest
    from lib.core.paths import data_dir
    from lib.society.run import gather
    from lib.sweep import main as sweep_main
    cfg = config_of(FAIR[MAIN], "smoke")
    src, dst = tmp_path / "src", tmp_path / "dst"
    shutil.copytree(data_dir("smoke", FAIR[MAIN]), src)
    unfinished = progress_path(shard_path(src, "no_diversity", 0))
    info = json.loads(unfinished.read_text())
    unfinished.write_text(json.dumps({**info, "last_done": 0}))  # a shard the sweep had not finished
    dst.mkdir()
    theirs = read_manifest(src)
    (dst / "manifest.json").write_text(json.dumps({**theirs, "git": {"commit": "a" * 40, "dirty": False}}))
    copied = gather(cfg, src, dst)
    assert "no_diversity_s0" not in copied and "full_s0" in copied and len(copied) == len(cfg.arm_runs()) - 1
    assert (dst / "full_s0.csv").read_bytes() == (src / "full_s0.csv").read_bytes()
    assert not (dst / "no_diversity_s0.csv").exists()
    git = read_manifest(dst)["git"]
    assert git["commits"] == ["a" * 40, theirs["git"]["commit"]]
    assert read_manifest(dst)["status"] == "running"  # one shard missing: not complete
    with pytest.raises(ConfigError, match="holds no data of society_fair"):
        gather(cfg, tmp_path / "nowhere", dst)
    assert sweep_main(["configs/society_fair/smoke.yaml", "--gather-from", str(tmp_path / "nowhere")]) == 2


def test_the_first_verdict_reads_its_re_run_only_once_that_is_whole_on_one_float_path(tmp_path, monkeypatch):
    import shutil
    from lib.core.paths import data_dir
    from lib.society.data import RECOMBINATION, reading
    for folder in (MAIN, FAIR[MAIN], RECOMBINATION, FAIR[RECOMBINATION]):
        shutil.copytree(data_dir("smoke", folder), tmp_path / "smoke" / folder)
    monkeypatch.setenv("GE_DATA_DIR", str(tmp_path))
    fair = tmp_path / "smoke" / FAIR[MAIN]
    assert reading(MAIN, "smoke") == FAIR[MAIN]  # every run of configs/society/smoke.yaml finished in the re-run
    assert reading(STUDY, "smoke") == STUDY  # its re-run holds some arms only
    assert reading(RECOMBINATION, "smoke", ("full", "no_sex")) == FAIR[RECOMBINATION]
    assert reading(RECOMBINATION, "smoke") == RECOMBINATION  # the other breeding arms are not re-run
    q = progress_path(shard_path(tmp_path / "smoke" / FAIR[RECOMBINATION], "no_sex", 0))
    kept = q.read_text()
    q.write_text(json.dumps({**json.loads(kept), "last_done": 0}))
    assert reading(MAIN, "smoke") == MAIN  # the first verdict switches only with its recombination arms
    q.write_text(kept)
    p = progress_path(shard_path(fair, "baseline_ties", 0))
    info = json.loads(p.read_text())
    p.write_text(json.dumps({**info, "float_path": {**info["float_path"], "vendor": "another CPU"}}))
    assert reading(MAIN, "smoke") == MAIN  # a seed on two float paths: the committed folder stands
    p.write_text(json.dumps({**info, "last_done": 0}))
    assert reading(MAIN, "smoke") == MAIN  # a run unfinished: likewise
    p.write_text(json.dumps(info))
    assert reading(MAIN, "smoke") == FAIR[MAIN]


def test_the_climbs_secondaries_on_part_of_their_seeds_say_so_and_the_ceiling_waits(tmp_path, monkeypatch):
    """A §4 arm or the gold ceiling run on some seeds of the re-run: the §4 table says "k of N so far", and the gold
    sentence keeps quoting the committed run (saying how many re-run seeds are in) until every registered seed is."""
    import shutil
    from lib.core.paths import data_dir
    from lib.society.studies.climb.tables import climb_gold, climb_why
    for folder in ("society_climb", "society_climb_fair"):
        shutil.copytree(data_dir("smoke", folder), tmp_path / "smoke" / folder)
    monkeypatch.setenv("GE_DATA_DIR", str(tmp_path))
    whole = climb_gold("smoke")
    assert "(data: `society_climb_fair/`)" in whole and "committed run" not in whole
    fair = tmp_path / "smoke" / "society_climb_fair"
    for arm in ("baseline_gold_climb", "climb_single@child"):
        for f in (shard_path(fair, arm, 1), progress_path(shard_path(fair, arm, 1))):
            f.unlink()
    part = climb_gold("smoke")
    assert "the committed run: `baseline_gold_climb` has 1 of 2 seeds in the re-run so far" in part
    assert "| climb_single@child − climb | 1 of 2 so far |" in climb_why("smoke")
    assert "| climb@lineages − climb | 2 |" in climb_why("smoke")
