"""One config form: a society config is an overlay (``extends``) of configs/society/base.yaml, read once
into a frozen SocietyConfig; every committed data folder keeps its config hash under the overlays."""
from __future__ import annotations

import dataclasses
import json
import pickle
import subprocess
import sys

import pytest
import yaml

from lib import experiment
from lib.core.config import ConfigError, Frozen, config_hash, load_layers
from lib.core.paths import CONFIGS, REPO_ROOT
from lib.society.config import (LATER_KEYS, SCHEMA, SHARD_KEYS, SocietyConfig, load, load_file, resolve_arm,
                                validate_config)

ALL_MANIFESTS = sorted((REPO_ROOT / "data").glob("*/society*/manifest.json"))
# A folder made by one config keeps its hash; a folder of several settings (the climb's pilot) is an index of
# subfolders, each with the manifest its runner wrote.
MANIFESTS = [p for p in ALL_MANIFESTS if "config_hash" in json.loads(p.read_text())]
INDEXES = [p for p in ALL_MANIFESTS if p not in MANIFESTS]


@pytest.mark.parametrize("manifest", MANIFESTS, ids=lambda p: f"{p.parent.parent.name}/{p.parent.name}")
def test_every_committed_society_folder_keeps_its_config_hash(manifest):
    scale, exp = manifest.parent.parent.name, manifest.parent.name
    m = json.loads(manifest.read_text())
    cfg = experiment.load(CONFIGS / exp / f"{scale}.yaml")  # the config that made it, from the overlays (its kind's)
    assert cfg.hash == m["config_hash"], f"{manifest}: configs/{exp}/{scale}.yaml no longer makes this folder"
    assert dict(cfg.core) == m["config"]  # key for key, as the manifest records it


@pytest.mark.parametrize("index", INDEXES, ids=lambda p: f"{p.parent.parent.name}/{p.parent.name}")
def test_a_folder_without_one_config_is_an_index_of_folders_that_each_have_one(index):
    subfolders = [d for d in index.parent.iterdir() if d.is_dir()]
    assert subfolders, f"{index}: no config_hash and no subfolders; the runner writes one of the two"
    for d in subfolders:
        m = json.loads((d / "manifest.json").read_text())
        assert m["config_hash"] and m["config"], d


def test_every_society_config_is_an_overlay_of_the_base():
    files = sorted(p for p in CONFIGS.glob("society*/*.yaml") if p.stem != "base")
    assert {p.parent.name for p in files} == {"society", "society_climb", "society_climb_fair", "society_crossover",
                                              "society_fair", "society_lexicase", "society_lineage", "society_paper",
                                              "society_recombination", "society_recombination_fair",
                                              "society_study", "society_study_fair"}
    for p in files:
        raw = yaml.safe_load(p.read_text())
        assert "extends" in raw, p
        assert set(raw) - {"extends"} < set(experiment.load(p)), p  # it names only keys it changes
    base = yaml.safe_load((CONFIGS / "society" / "base.yaml").read_text())
    assert set(base) == set(SocietyConfig.schema()) - {"scale"} - set(LATER_KEYS) - {"arm_seeds"}


def test_extends_merges_in_order_the_file_last_and_never_enters_the_config(tmp_path):
    (tmp_path / "a.yaml").write_text("x: 1\ny: 1\nlora: {r: 8, alpha: 16, targets: [q_proj]}\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.yaml").write_text("extends: ../a.yaml\ny: 2\nz: 2\n")
    (tmp_path / "c.yaml").write_text("extends: [a.yaml, sub/b.yaml]\nz: 3\nlora: {r: 4}\n")
    assert load_layers(tmp_path / "sub" / "b.yaml") == {"x": 1, "y": 2, "z": 2, "lora": {"r": 8, "alpha": 16,
                                                                                          "targets": ["q_proj"]}}
    assert load_layers(tmp_path / "c.yaml") == {"x": 1, "y": 2, "z": 3, "lora": {"r": 4}}  # a value replaced whole
    (tmp_path / "loop.yaml").write_text("extends: loop2.yaml\n")
    (tmp_path / "loop2.yaml").write_text("extends: loop.yaml\n")
    with pytest.raises(ConfigError, match="extends itself"):
        load_layers(tmp_path / "loop.yaml")
    (tmp_path / "gone.yaml").write_text("extends: nowhere.yaml\n")
    with pytest.raises(ConfigError, match=r"extends 'nowhere.yaml', which does not exist"):
        load_layers(tmp_path / "gone.yaml")
    (tmp_path / "odd.yaml").write_text("extends: {a: 1}\n")
    with pytest.raises(ConfigError, match="extends must be a path or a list"):
        load_layers(tmp_path / "odd.yaml")


def test_a_bad_overlay_exits_2_with_one_line(tmp_path):
    (tmp_path / "smoke.yaml").write_text(f"extends: {CONFIGS / 'society' / 'smoke.yaml'}\nagents: six\n")
    (tmp_path / "gone.yaml").write_text("extends: nowhere.yaml\n")
    for path, says in ((tmp_path / "smoke.yaml", "agents"), (tmp_path / "gone.yaml", "nowhere.yaml")):
        p = subprocess.run([sys.executable, "-m", "lib.experiment", str(path)], cwd=REPO_ROOT, capture_output=True,
                           text=True, timeout=120)
        assert p.returncode == 2 and says in p.stderr and "Traceback" not in p.stderr, p.stderr
        assert len(p.stderr.strip().splitlines()) == 1


def test_the_config_reads_typed_by_attribute_and_plain_by_key():
    cfg = load("society_study", "cpu")
    assert experiment.load(CONFIGS / "society_study" / "cpu.yaml") == cfg  # the CLI's reader, the same object
    assert isinstance(cfg, SocietyConfig) and cfg.g == cfg["g"] == 0.5 and "extends" not in cfg
    assert cfg.families == ("lists", "strings", "arith") and cfg["families"] == ["lists", "strings", "arith"]
    assert cfg.get("n_select") == 60 and cfg.get("nonesuch") is None and "arm_seeds" in cfg
    assert isinstance(cfg.lora, Frozen) and cfg.lora_targets == tuple(cfg["lora"]["targets"])
    assert cfg.lora_kw() == {"r": 16, "alpha": 32, "targets": cfg.lora_targets, "lr": 0.002, "batch_size": 16}
    assert (cfg.resolved_n_parents, cfg.resolved_n_screen) == (3, 30)
    assert load("society", "smoke").resolved_n_screen == 8  # n_screen 0: all of val
    assert cfg.seed_list() == list(range(16)) and cfg.seeds_of("full") == list(range(32))
    assert len(cfg.arm_runs()) == len(cfg.runs()) and cfg.runs()[0] == (cfg.arms[0], 0)
    assert cfg.resolve_arm("full@matched") == resolve_arm(cfg, "full@matched")
    assert cfg.resolve_arm("full@matched").n_inherit == cfg.spec_train  # the arm carries its budget
    assert set(dict(cfg)) == set(SocietyConfig.schema()) and set(SCHEMA) == set(dict(cfg)) - {"experiment", "kind",
                                                                                             "scale"}
    assert set(SHARD_KEYS) == {"arms", "seeds", "seed", "arm_seeds"}
    assert LATER_KEYS == {"n_select": 0, "grids": "seed", "repair_share": 0.25, "lineage_steps": 0, "task_form": "plain",
                          "base_adapter": ""}
    assert not set(cfg.core) & set(SHARD_KEYS) and cfg.hash == config_hash(dict(cfg.core))


def test_the_config_is_frozen_pickles_and_splits_into_shards():
    cfg = load("society_study", "smoke")
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.g = 1.0
    with pytest.raises(TypeError):
        cfg.lora["r"] = 4
    again = pickle.loads(pickle.dumps(cfg))  # a sweep sends shard configs to Ray workers
    assert again == cfg and again.hash == cfg.hash
    from lib.society import run as society
    shards = society.shards(cfg)
    assert [(s.arms, s.seed_list()) for s in shards] == [((a,), [s]) for a, s in cfg.runs()]  # seed by seed
    assert all(s.hash == cfg.hash for s in shards)  # one data folder
    assert validate_config({**cfg, "n_select": 0}).n_select == 0 and cfg.n_select == 8
