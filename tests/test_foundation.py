"""Configs, manifests, resumable shards, and the environment files kept in step."""
from __future__ import annotations

import json
import re
import tomllib

import pytest
import yaml

from lib.core import config as C
from lib.core import manifest, rows
from lib.experiment import RUNNERS, load, runner
from lib.core.paths import CONFIGS, REPO_ROOT

SCHEMA = {
    "agents": C.Field(int, 6, min=2, doc="population size"),
    "g": C.Field(float, 0.5, min=0.0, max=1.0),
    "arms": C.Field(list, ["full"], item=str, choices=("full", "no_sex")),
}
BASE = {"experiment": "x", "kind": "k", "scale": "smoke"}


def test_validate_fills_defaults_and_accepts_ints_for_floats():
    cfg = C.validate({**BASE, "g": 1}, SCHEMA)
    assert cfg["agents"] == 6 and cfg["g"] == 1 and cfg["arms"] == ["full"]


@pytest.mark.parametrize("bad, words", [
    ({"agnets": 3}, "unknown key"),
    ({"agents": "six"}, "agents: expected int"),
    ({"agents": True}, "agents: expected int"),
    ({"agents": 1}, "below the minimum"),
    ({"g": 2.0}, "above the maximum"),
    ({"arms": ["full", "nope"]}, "'nope' is not allowed"),
    ({"scale": "huge"}, "scale"),
], ids=["unknown", "type", "bool-is-not-int", "min", "max", "choice", "scale"])
def test_validate_names_the_bad_key(bad, words):
    with pytest.raises(C.ConfigError, match=words):
        C.validate({**BASE, **bad}, SCHEMA)


def test_validate_cross_key_checks_and_required_keys():
    check = lambda c: [] if c["agents"] > 2 else ["agents: need more than 2"]  # noqa: E731
    with pytest.raises(C.ConfigError, match="need more than 2"):
        C.validate({**BASE, "agents": 2}, SCHEMA, check)
    with pytest.raises(C.ConfigError, match="experiment: required"):
        C.validate({"kind": "k", "scale": "smoke"}, SCHEMA)


def test_load_yaml_errors(tmp_path):
    with pytest.raises(C.ConfigError, match="does not exist"):
        C.load_yaml(tmp_path / "nope.yaml")
    (tmp_path / "bad.yaml").write_text("a: [1, 2\n")
    with pytest.raises(C.ConfigError, match="not valid YAML"):
        C.load_yaml(tmp_path / "bad.yaml")
    (tmp_path / "list.yaml").write_text("- 1\n")
    with pytest.raises(C.ConfigError, match="mapping"):
        C.load_yaml(tmp_path / "list.yaml")


def test_unknown_kind_is_refused(tmp_path):
    (tmp_path / "c.yaml").write_text("experiment: x\nkind: nonsense\nscale: smoke\n")
    with pytest.raises(C.ConfigError, match="known kinds"):
        load(tmp_path / "c.yaml")


def test_every_committed_config_validates():
    files = sorted(CONFIGS.glob("*/*.yaml"))
    assert files, "no configs found"
    for f in files:
        raw = yaml.safe_load(f.read_text())
        assert raw["scale"] == f.stem, f"{f}: scale key disagrees with the file name"
        if raw["kind"] in RUNNERS:
            cfg = load(f)
            assert cfg["experiment"] == raw["experiment"]


def test_manifest_records_provenance_and_detects_other_configs(tmp_path):
    cfg = {**BASE, "agents": 3, "seeds": [0, 1]}
    manifest.write_manifest(tmp_path, cfg, started=manifest.now(), wall_s=1.5, status="running")
    m = manifest.read_manifest(tmp_path)
    for key in ("config", "config_hash", "git", "versions", "device", "seeds", "started", "wall_s"):
        assert key in m
    assert m["seeds"] == [0, 1] and m["versions"]["numpy"]
    assert not manifest.manifest_matches(tmp_path, cfg)  # still running
    assert manifest.manifest_matches(tmp_path, cfg, complete=False)
    manifest.check_resumable(tmp_path, cfg)  # same config: fine
    with pytest.raises(ValueError, match=r"keys that differ: \['agents'\]"):
        manifest.check_resumable(tmp_path, {**cfg, "agents": 4})
    json.loads((tmp_path / "manifest.json").read_text())  # strict JSON


def test_shards_resume_drops_half_written_blocks(tmp_path):
    shard = rows.shard_path(tmp_path, "full", 0)
    cols = ["arm", "generation", "metric", "value"]
    assert rows.resume_shard(shard, "generation") is None
    rows.append_rows(shard, [{"arm": "full", "generation": 0, "metric": "m", "value": 1.0}], cols)
    rows.mark_done(shard, 0)
    rows.append_rows(shard, [{"arm": "full", "generation": 1, "metric": "m", "value": 2.0}], cols)  # killed here
    assert rows.resume_shard(shard, "generation") == 0
    df = rows.read_rows(tmp_path)
    assert df["generation"].tolist() == [0]
    with pytest.raises(KeyError):
        rows.append_rows(shard, [{"arm": "full"}], cols)
    with pytest.raises(FileNotFoundError, match="run the experiment first"):
        rows.read_rows(tmp_path / "empty")


def _names(specs):
    return {re.split(r"[<>=!~\[ ]", s, maxsplit=1)[0].lower().replace("_", "-") for s in specs}


def test_environment_yml_matches_pyproject():
    py = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]
    want = set(py["dependencies"]) | set(py["optional-dependencies"]["test"])
    env = yaml.safe_load((REPO_ROOT / "environment.yml").read_text())
    pip = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
    got = {p for p in pip if not p.startswith("-e")}
    assert got == want, f"environment.yml and pyproject.toml differ: only env {got - want}, only pyproject {want - got}"
    assert "python=3.11" in env["dependencies"] and "-e .[test]" in pip
    assert any(s.startswith("torch==2.13") for s in py["dependencies"])


def test_runner_registry_names_importable_modules():
    for kind in ("program_search", "tool_mutation", "llm_society"):
        assert RUNNERS[kind].startswith("lib.")
    for kind in RUNNERS:
        mod = runner(kind)
        for fn in ("validate_config", "run_experiment", "shards", "shard_done"):
            assert callable(getattr(mod, fn, None)), f"runner {kind} lacks {fn}"
    with pytest.raises(C.ConfigError):
        runner("bogus")
