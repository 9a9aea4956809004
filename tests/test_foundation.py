"""Configs, manifests, resumable shards, and the environment files kept in step."""
from __future__ import annotations

import json
import re
import tomllib

import pandas as pd
import pytest
import yaml

from lib.core import config as C
from lib.core import locks, manifest, rows
from lib.core.errors import BusyError, DamagedFileError
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
        if f.stem == "base":  # a layer the scales of its folder extend (it names no scale)
            assert "scale" not in yaml.safe_load(f.read_text()), f
            continue
        raw = C.load_layers(f)  # overlays (extends) resolved
        assert raw["scale"] == f.stem, f"{f}: scale key disagrees with the file name"
        if raw["kind"] in RUNNERS:
            cfg = load(f)
            assert cfg["experiment"] == raw["experiment"] == f.parent.name


def test_manifest_records_provenance_and_detects_other_configs(tmp_path):
    cfg = {**BASE, "agents": 3, "seeds": [0, 1]}
    manifest.write_manifest(tmp_path, cfg, started=manifest.now(), wall_s=1.5, status="running")
    m = manifest.read_manifest(tmp_path)
    for key in ("config", "config_hash", "git", "versions", "device", "seeds", "started", "wall_s"):
        assert key in m
    assert m["seeds"] == [0, 1] and m["versions"]["numpy"]
    import torch  # the kernel level that decides a CPU run's floats (founders differ across levels)
    assert m["float_path"]["torch_cpu_capability"] == torch.backends.cpu.get_cpu_capability()
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


COLS = ["arm", "seed", "generation", "metric", "value"]


def _row(g, v, metric="m", arm="full"):
    return {"arm": arm, "seed": 0, "generation": g, "metric": metric, "value": v}


def test_shard_reads_check_every_row_and_leave_out_the_block_in_flight(tmp_path):
    shard = rows.shard_path(tmp_path, "full", 0)
    rows.append_rows(shard, [_row(0, 1.0), _row(0, 2.0)], COLS)
    rows.mark_done(shard, 0, note="x")
    assert rows.read_progress(shard) == {"last_done": 0, "csv_rows": 2, "csv_sha256": rows.sha256_of(shard), "note": "x"}
    rows.append_rows(shard, [_row(1, 3.0)], COLS)  # generation 1 in flight
    assert rows.read_shard(shard, "generation", COLS).value.tolist() == [1.0, 2.0]
    rows.mark_done(shard, 1)
    good = shard.read_text()
    pd.testing.assert_frame_equal(rows.read_shard(shard, "generation", COLS), pd.read_csv(shard))
    for bad, words in [("full,0,1,,3.0", "metric is missing"), ("full,0,1,m,", "value is missing"),
                       ("full,0,1,m,x", "value 'x' is no number"), ("no_sex,0,1,m,3.0", "arm 'no_sex'"),
                       ("full,0,one,m,1", "generation 'one' is no integer"), ("full,0,1,m", "4 fields"),
                       ("full,0,2,m,3.0", "generation 2 among the rows of the completed")]:
        shard.write_text(good.rsplit("\n", 2)[0] + "\n" + bad + "\r\n")
        with pytest.raises(DamagedFileError, match=f"full_s0.csv line 4: {words}.*delete full_s0.progress.json"):
            rows.read_shard(shard)
    shard.write_text(good.replace("generation", "gen", 1))  # a header from elsewhere
    with pytest.raises(DamagedFileError, match=r"line 1: header \['arm', 'seed', 'gen'"):
        rows.read_shard(shard, "generation")
    shard.write_text(good[:-3])  # the last row's end cut off
    with pytest.raises(DamagedFileError, match="line 4: the row is cut off"):
        rows.read_rows(tmp_path)
    with pytest.raises(DamagedFileError, match="ends inside a row"):  # never glued onto a torn row
        rows.append_rows(shard, [_row(2, 4.0)], COLS)
    shard.unlink()
    with pytest.raises(DamagedFileError, match="is missing"):
        rows.resume_shard(shard, "generation")


def test_old_progress_files_without_a_row_count_are_checked_line_by_line(tmp_path):
    shard = rows.shard_path(tmp_path, "full", 0)
    rows.append_rows(shard, [_row(0, 1.0), _row(1, 2.0)], COLS)
    rows.progress_path(shard).write_text(json.dumps({"last_done": 0}))  # as written before the count
    assert rows.read_shard(shard).value.tolist() == [1.0]  # generation 1: the block in flight
    text = shard.read_text()
    shard.write_text(text[:-4])  # generation 1's row torn: a half-written block, cut off on resume
    assert rows.resume_shard(shard, "generation") == 0 and shard.read_text() == text.split("full,0,1")[0]
    shard.write_text(text.split("full,0,1")[0][:-4])  # now generation 0's own row is torn: damage
    with pytest.raises(DamagedFileError, match="line 2: the row is cut off"):
        rows.resume_shard(shard, "generation")


def test_json_records_name_the_damaged_file(tmp_path):
    rows.progress_path(tmp_path / "full_s0.csv").write_text('{"last_done": 1, "csv_')
    with pytest.raises(DamagedFileError, match=r"full_s0\.progress\.json is not readable JSON .*delete it"):
        rows.last_done(tmp_path / "full_s0.csv")
    assert rows.damaged_shards(tmp_path) == []  # no shard file: nothing to check
    (tmp_path / "full_s0.csv").write_text("")
    assert len(rows.damaged_shards(tmp_path)) == 1
    (tmp_path / "manifest.json").write_text("[1, 2")
    with pytest.raises(DamagedFileError, match="manifest.json is not readable JSON.*move the folder"):
        manifest.read_manifest(tmp_path)


def test_shard_locks_refuse_a_second_run_and_let_other_shards_go(tmp_path):
    a, b = rows.shard_path(tmp_path, "full", 0), rows.shard_path(tmp_path, "no_sex", 0)
    with locks.shard_locks([a]):
        with pytest.raises(BusyError, match=f"another run is writing full_s0.csv in the data folder {tmp_path}"):
            with locks.shard_locks([b, a]):
                pass
        with locks.shard_locks([b]):  # another shard of the folder: the workers of a sweep
            with locks.folder_lock(tmp_path):
                manifest.write_manifest(tmp_path, {**BASE, "agents": 3}, started="t")  # re-enters the folder lock
    with locks.shard_locks([a, b]):  # all released
        pass
    assert manifest.read_manifest(tmp_path)["config"]["agents"] == 3


def _names(specs):
    return {re.split(r"[<>=!~\[ ]", s, maxsplit=1)[0].lower().replace("_", "-") for s in specs}


def test_environment_yml_matches_pyproject():
    py = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]
    want = set(py["dependencies"]) | set(py["optional-dependencies"]["test"])
    env = yaml.safe_load((REPO_ROOT / "environment.yml").read_text())
    pip = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
    got = {p for p in pip if not p.startswith(("-e", "-c"))}  # -c: the lock (tests/test_lock.py)
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


def test_paths_in_manifests_are_relative_to_the_repository_when_inside_it(tmp_path):
    from lib.core.paths import REPO_ROOT, rel
    assert rel(REPO_ROOT / "data" / "cpu") == "data/cpu" and rel("data/cpu") == "data/cpu"
    assert rel(tmp_path / "elsewhere") == str(tmp_path / "elsewhere")  # outside: nothing to be relative to
    from lib.core.paths import recorded_root
    # a manifest records a root outside the repository by the variable that moved it, not the path
    assert recorded_root(tmp_path / "runs", "GE_RUNS_DIR") == "$GE_RUNS_DIR"
    assert recorded_root(REPO_ROOT / "runs", "GE_RUNS_DIR") == "runs" and recorded_root("data", "GE_DATA_DIR") == "data"
