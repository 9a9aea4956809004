"""lib.sweep: a Ray sweep of shards gives the rows of a serial run; a failed run is reported and resumed.

One local Ray (2 CPUs) serves the whole module (its start-up is most of the runtime); every sweep
writes under tmp folders through GE_DATA_DIR / GE_RUNS_DIR, never into the committed data/.
"""
from __future__ import annotations

import json
import sys

import pandas as pd
import pytest
import yaml

from lib import sweep
from lib.program_search import search as program_search
from lib.tool_mutation import mutator as tool_mutation
from lib.core.config import load_yaml
from lib.core.paths import config_path
from lib.core.rows import last_done, read_rows

ray = pytest.importorskip("ray")

# the tool mutation smoke config, trimmed: 3 arms x 2 seeds x 60 SGD steps (blocks of 10, rounds every 20)
TM = {**load_yaml(config_path("tool_mutation", "smoke")), "n_steps": 60}
PS = {**load_yaml(config_path("program_search", "smoke")), "generations": 2}
FAULT = "mutate_promote:1:40"


@pytest.fixture(scope="module")
def local_ray():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


def _roots(mp: pytest.MonkeyPatch, base) -> None:
    mp.setenv("GE_DATA_DIR", str(base / "data"))
    mp.setenv("GE_RUNS_DIR", str(base / "runs"))


def _serial_rows(tmp_path_factory, runner, cfg) -> pd.DataFrame:
    """The reference: the full config run in this process by the runner itself, no sweep."""
    with pytest.MonkeyPatch.context() as mp:
        _roots(mp, tmp_path_factory.mktemp("serial"))
        return runner.run_experiment(runner.validate_config(cfg))


@pytest.fixture(scope="module")
def tm_serial(tmp_path_factory):
    return _serial_rows(tmp_path_factory, tool_mutation, TM)


# ----------------------------------------------------------------------------- no Ray needed


def test_shard_labels_and_fault_spec():
    tm = tool_mutation.shards(tool_mutation.validate_config(TM))
    assert [sweep.shard_label(s) for s in tm] == [(a, s) for a in TM["arms"] for s in TM["seeds"]]
    ps = program_search.shards(program_search.validate_config(PS))
    assert [sweep.shard_label(s) for s in ps] == [("all", 0), ("all", 1)]
    assert sweep.parse_fault("mutate_promote:1:40") == ("mutate_promote", 1, 40, "raise")
    assert sweep.parse_fault("*:0:20:exit") == ("*", 0, 20, "exit")
    assert sweep.parse_fault("") is None
    with pytest.raises(sweep.ConfigError, match="ARM:SEED:BLOCK"):
        sweep.parse_fault("mutate_promote:one")


def test_bad_config_exits_2(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump({**TM, "n_steps": 65}))       # not a multiple of log_every
    assert sweep.main([str(bad), "--serial"]) == 2
    assert "n_steps" in capsys.readouterr().err
    assert sweep.main([str(tmp_path / "missing.yaml")]) == 2


def test_missing_ray_is_a_clear_error(tmp_path, monkeypatch, capsys):
    cfg = tmp_path / "tm.yaml"
    cfg.write_text(yaml.safe_dump(TM))
    monkeypatch.setitem(sys.modules, "ray", None)                 # import ray -> ImportError
    assert sweep.main([str(cfg)]) == 2
    assert "pip install -e .[cluster]" in capsys.readouterr().err


def test_unreachable_cluster_fails_fast(tmp_path, monkeypatch, capsys):
    _roots(monkeypatch, tmp_path)
    cfg = tmp_path / "tm.yaml"
    cfg.write_text(yaml.safe_dump(TM))
    if ray.is_initialized():
        pytest.skip("a Ray is already running in this process")
    assert sweep.main([str(cfg), "--ray-address", "127.0.0.1:1"]) == 2   # nothing listens there
    assert "could not join the Ray cluster" in capsys.readouterr().err


def test_serial_sweep_equals_one_process_run(tmp_path, monkeypatch, tm_serial):
    _roots(monkeypatch, tmp_path)
    res = sweep.run_sweep(tool_mutation.validate_config(TM), serial=True, progress=False)
    assert res.exit_code == 0 and [r["status"] for r in res.runs] == ["ok"] * 6
    pd.testing.assert_frame_equal(res.rows, tm_serial)
    ledger = [json.loads(x) for x in (res.folder / sweep.LEDGER).read_text().splitlines()]
    assert len(ledger) == 1 and sorted((r["arm"], r["seed"]) for r in ledger[0]["runs"]) == sorted(
        (r["arm"], r["seed"]) for r in res.runs)
    assert len(ledger[0]["load_start"]) == 3 and ledger[0]["cpus"] >= 1 and "commit" in ledger[0]["git"]
    assert ledger[0]["float_path"]["torch_cpu_capability"] and ledger[0]["device"]
    again = sweep.run_sweep(tool_mutation.validate_config(TM), serial=True, progress=False)
    assert {r["status"] for r in again.runs} == {"skipped"}
    assert len((res.folder / sweep.LEDGER).read_text().splitlines()) == 1  # a sweep that ran nothing adds no line


# ----------------------------------------------------------------------------- on a local Ray
# all slow: the first test to ask for local_ray pays Ray's start-up (~35 s on 2 cores)


@pytest.mark.slow
def test_ray_sweep_equals_serial(local_ray, tmp_path, monkeypatch, tm_serial):
    _roots(monkeypatch, tmp_path)
    res = sweep.run_sweep(tool_mutation.validate_config(TM), resources=sweep.Resources(cpus_per_run=1), progress=False)
    assert res.exit_code == 0
    assert sorted((r["arm"], r["seed"], r["status"]) for r in res.runs) == \
        sorted((a, s, "ok") for a in TM["arms"] for s in TM["seeds"])
    pd.testing.assert_frame_equal(res.rows, tm_serial)
    pd.testing.assert_frame_equal(read_rows(res.folder), tm_serial)   # the shards on disk merge to it
    m = json.loads((res.folder / "manifest.json").read_text())
    assert m["status"] == "complete" and m["arms"] == TM["arms"] and m["seeds"] == TM["seeds"]
    assert m["sweep"]["backend"] == "ray" and len(m["sweep"]["runs"]) == 6
    assert (tmp_path / "runs" / "smoke" / "tool_mutation" / "logs" / "sgd_s0.log").is_file()


@pytest.mark.slow
def test_failed_run_is_reported_then_resumed(local_ray, tmp_path, monkeypatch, capsys, tm_serial):
    _roots(monkeypatch, tmp_path)
    cfg = tmp_path / "tm.yaml"
    cfg.write_text(yaml.safe_dump(TM))
    args = [str(cfg), "--data-root", str(tmp_path / "data"), "--runs-root", str(tmp_path / "runs")]

    assert sweep.main([*args, "--fault", FAULT]) == 1                 # one run raised mid-way
    out = capsys.readouterr().out
    assert "FAIL mutate_promote s1" in out and "InjectedFault" in out and "Traceback" in out
    assert out.count("ok   ") == 5                                    # the others went on
    folder = tmp_path / "data" / "smoke" / "tool_mutation"
    shard = folder / "mutate_promote_s1.csv"
    assert last_done(shard) == 30                                     # block 40 written, not marked
    assert pd.read_csv(shard).step.max() == 40

    assert sweep.main(args) == 0                                      # re-launch: only that run
    out = capsys.readouterr().out
    assert out.count("skip ") == 5 and "ok   mutate_promote s1" in out
    pd.testing.assert_frame_equal(read_rows(folder), tm_serial)      # = a clean sweep's rows


@pytest.mark.slow
def test_killed_worker_is_retried_and_resumes(local_ray, tmp_path, monkeypatch, tm_serial):
    """A worker dying mid-block (a preempted node) is re-run by Ray; the retry resumes the shard."""
    _roots(monkeypatch, tmp_path)
    res = sweep.run_sweep(tool_mutation.validate_config(TM), fault=FAULT + ":exit", progress=False)
    assert res.exit_code == 0
    pd.testing.assert_frame_equal(res.rows, tm_serial)
    log = (tmp_path / "runs" / "smoke" / "tool_mutation" / "logs" / "mutate_promote_s1.log").read_text()
    assert log.count("=== mutate_promote s1 on") == 2 and log.count("=== ok in") == 1   # died once, then ok


@pytest.mark.slow
def test_program_search_sweep_uses_its_own_merge(local_ray, tmp_path, monkeypatch, tmp_path_factory):
    serial = _serial_rows(tmp_path_factory, program_search, PS)
    _roots(monkeypatch, tmp_path)
    res = sweep.run_sweep(program_search.validate_config(PS), progress=False)
    assert res.exit_code == 0 and len(res.runs) == PS["seeds"]
    pd.testing.assert_frame_equal(res.rows, serial)
    again = sweep.run_sweep(program_search.validate_config(PS), progress=False)   # nothing left to run
    assert [r["status"] for r in again.runs] == ["skipped"] * PS["seeds"]
    pd.testing.assert_frame_equal(again.rows, serial)


def test_folder_of_another_config_is_refused(tmp_path, monkeypatch, tm_serial):
    _roots(monkeypatch, tmp_path)
    assert sweep.run_sweep(tool_mutation.validate_config(TM), serial=True, progress=False).exit_code == 0
    other = tmp_path / "other.yaml"
    other.write_text(yaml.safe_dump({**TM, "lr": 0.01}))
    assert sweep.main([str(other), "--serial", "--quiet"]) == 2   # not "all shards already complete"


def test_arms_and_seeds_select_shards_and_a_wrong_one_is_named(capsys):
    from lib import sweep as sw
    assert sw.parse_seeds("0-3") == [0, 1, 2, 3] and sw.parse_seeds("1,5") == [1, 5] and sw.parse_seeds(None) is None
    with pytest.raises(sw.ConfigError, match="--seeds"):
        sw.parse_seeds("a-b")
    code = sw.main(["configs/society_study/smoke.yaml", "--serial", "--arms", "full,nonesuch"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "nonesuch" in err[0]
    code = sw.main(["configs/society_study/smoke.yaml", "--serial", "--arms", "full", "--seeds", "99"])
    assert code == 2 and "select no shard" in capsys.readouterr().err
