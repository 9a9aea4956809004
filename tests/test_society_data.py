"""The society's one reader (lib.society.data): one tidy frame per request, folders joined and arms named there,
reading checked, a missing folder a clear error naming the command that fills it."""
from __future__ import annotations

import shutil

import pandas as pd
import pytest

from lib.core.errors import DataMismatchError
from lib.core.paths import REPO_ROOT
from lib.society import arms
from lib.society import data
from lib.society.config import arm_runs

SMOKE = REPO_ROOT / "data" / "smoke"


@pytest.fixture
def copies(tmp_path, monkeypatch):
    """``copy(*studies)``: the reader reads copies of those smoke folders (under ``tmp_path``); returns the root."""
    def copy(*studies):
        for s in studies:
            shutil.copytree(SMOKE / s, tmp_path / s)
        monkeypatch.setattr(data, "data_dir", lambda scale, exp: tmp_path / exp)
        return tmp_path
    return copy


def test_one_tidy_frame_with_the_study_and_the_code_path_of_every_row():
    rows = data.society_rows("smoke", data.STUDY)
    assert rows.columns.tolist() == data.COLUMNS
    assert set(rows["study"]) == {data.STUDY}
    m = data.manifest_of(data.STUDY, "smoke")
    assert {p.split("/")[0] for p in set(rows["code_path"])} == {m["git"]["commit"][:7]}
    assert set(rows["code_path"]) == {data.code_path(m, {"trainer": "batched"})}  # every study shard: batched
    # the config's order: its arms, then seeds; "name": the shards' file names, the same rows
    cfg = data.config_of(data.STUDY, "smoke")
    runs = list(dict.fromkeys(zip(rows["arm"], rows["seed"])))
    assert runs == [r for r in arm_runs(cfg) if r in set(runs)]
    by_name = data.society_rows("smoke", data.STUDY, order="name")
    assert [f"{a}_s{s}.csv" for a, s in dict.fromkeys(zip(by_name["arm"], by_name["seed"]))] == sorted(
        f"{a}_s{s}.csv" for a, s in runs)
    key = ["arm", "seed", "generation", "agent", "metric"]
    pd.testing.assert_frame_equal(rows.sort_values(key).reset_index(drop=True),
                                  by_name.sort_values(key).reset_index(drop=True))
    with pytest.raises(ValueError, match="unknown row order"):
        data.society_rows("smoke", data.STUDY, order="alphabet")


def test_code_path_names_the_commit_the_float_path_or_device_and_the_trainer():
    m = {"git": {"commit": "0123456789abcdef"}, "device": "cpu:X", "float_path": {"torch_cpu_capability": "AVX2"}}
    assert data.code_path(m, {"trainer": "batched"}) == "0123456/AVX2/batched"
    assert data.code_path({**m, "float_path": {}}, None) == "0123456/cpu:X"
    assert data.code_path(None, None) == "?/?"
    # a folder filled over several commits: each shard's own commit, "?" where its progress file has none
    several = {**m, "git": {"commit": "0123456789abcdef", "commits": ["fedcba9876543210", "0123456789abcdef"]}}
    assert data.code_path(several, {"commit": "fedcba9876543210", "trainer": "batched"}) == "fedcba9/AVX2/batched"
    assert data.code_path(several, {"trainer": "batched"}) == "?/AVX2/batched"
    assert data.code_path(m, {"commit": "fedcba9876543210"}) == "fedcba9/AVX2"


def test_the_recombination_folders_full_is_named_apart_only_beside_another_folder():
    alone = data.society_rows("smoke", data.RECOMBINATION)
    assert arms.REFERENCE in set(alone["arm"]) and arms.BESIDE not in set(alone["arm"])
    both = data.society_rows("smoke", data.MAIN, data.RECOMBINATION)
    mine = both[both["study"] == data.RECOMBINATION]
    assert arms.BESIDE in set(mine["arm"]) and arms.REFERENCE not in set(mine["arm"])
    assert len(mine) == len(alone)
    assert set(mine["arm"]) - {arms.BESIDE} == set(alone["arm"]) - {arms.REFERENCE}  # no other arm renamed
    walls = data.society_walls("smoke", data.MAIN, data.RECOMBINATION)
    assert set(walls.loc[walls["arm"] == arms.BESIDE, "seed"]) == set(alone.loc[alone["arm"] == arms.REFERENCE, "seed"])
    files = data.files_of("smoke", data.MAIN, data.RECOMBINATION)
    assert len(files["files"]) == len(both[["study", "arm", "seed"]].drop_duplicates())
    assert [c.rsplit("/", 2)[-2] for c in files["configs"]] == [data.MAIN, data.RECOMBINATION]


def test_the_study_knob_borrows_full_as_its_config_g():
    rows = data.society_rows("smoke", data.STUDY, finished=True)
    sweep = data.grounding_sweep(rows, 0.5)
    knob = {a for a in set(rows["arm"]) if a.startswith(f"{arms.REFERENCE}@g")}
    assert set(sweep["arm"]) == knob | {f"{arms.REFERENCE}@g0.5"}
    borrowed = sweep[sweep["borrowed"]]
    assert set(borrowed["arm"]) == {f"{arms.REFERENCE}@g0.5"}
    assert set(borrowed["seed"]) == set(sweep.loc[~sweep["borrowed"], "seed"])
    assert len(borrowed) == len(rows[(rows["arm"] == arms.REFERENCE) & rows["seed"].isin(set(borrowed["seed"]))])
    assert data.grounding_sweep(rows[~rows["arm"].isin(knob)], 0.5) is None


def test_a_missing_folder_names_the_command_that_fills_it(copies):
    copies()
    with pytest.raises(FileNotFoundError, match=r"python -m lib\.experiment configs/society_lexicase/smoke\.yaml"):
        data.society_rows("smoke", data.LEXICASE)
    assert data.society_rows("smoke", data.LEXICASE, required=False) is None
    assert data.ledger_of(data.LEXICASE, "smoke") is None


def test_a_shard_its_config_does_not_list_or_of_another_experiment_is_refused(copies):
    root = copies(data.LEXICASE)
    assert len(data.society_rows("smoke", data.LEXICASE))
    stray = root / data.LEXICASE / "no_sex_s0.csv"
    shutil.copy(SMOKE / data.RECOMBINATION / "no_sex_s0.csv", stray)
    with pytest.raises(DataMismatchError, match="no_sex_s0.csv is no run of configs/society_lexicase/"):
        data.society_rows("smoke", data.LEXICASE)
    stray.unlink()
    assert len(data.society_rows("smoke", data.LEXICASE))  # read anew: the folder changed
    # a listed shard whose rows are another experiment's (moved between folders, progress file and all)
    for f in ("full_s0.csv", "full_s0.progress.json"):
        shutil.copy(SMOKE / data.RECOMBINATION / f, root / data.LEXICASE / f)
    with pytest.raises(DataMismatchError, match="not of its folder's 'society_lexicase'"):
        data.society_rows("smoke", data.LEXICASE)
