"""Program search (seed 004): the port reproduces the seed's numbers, its self-checks hold, the
frozen_proposer / no_feedback controls mean what they say, and the runner contract works.

The reference numbers in tests/data/program_search_ref_s{2,8}/ are the seed's own outputs
(re-indented, run with ``--seeds 2`` / ``--seeds 8``) under the sensible reading of its
frozen_proposer update; ``literal_reading_v2_program_search.csv`` holds the rows of the other
(defective) reading, kept to document the one difference. See that folder's README.md.
"""
from __future__ import annotations

import json
import math
from functools import lru_cache
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import lib.program_search.search as ps
from lib import experiment
from lib.core.config import ConfigError
from lib.core.manifest import read_manifest

DATA = Path(__file__).parent / "data"
TIMING = ("seconds_including_diagnostics", "setup_seconds_including_task_and_anchor_construction")


def ref_dir(n):
    return DATA / f"program_search_ref_s{n}"


@lru_cache(maxsize=None)
def port(n):
    return ps.run_all(ps.SearchConfig(seeds=n))


def assert_rows_match(got: list[dict], path: Path, tol=1e-9):
    """Every row and column of ``got`` equals the CSV at ``path`` to tol (timings excepted)."""
    a, b = pd.DataFrame(got), pd.read_csv(path)
    assert list(a.columns) == list(b.columns), path.name
    assert len(a) == len(b), f"{path.name}: {len(a)} rows, reference {len(b)}"
    for col in a.columns:
        if col in TIMING:
            continue
        if not pd.api.types.is_numeric_dtype(b[col]):
            assert (a[col].astype(str) == b[col].astype(str)).all(), f"{path.name}:{col}"
            continue
        x, y = a[col].to_numpy(float), b[col].to_numpy(float)
        assert not np.isnan(y).any(), f"{path.name}:{col} has NaN in the reference"
        bad = np.abs(x - y) > tol * np.maximum(1.0, np.abs(y))
        assert not bad.any(), f"{path.name}:{col} differs at rows {np.where(bad)[0][:10]}"


def assert_json_close(got, ref, tol=1e-9, where="summary"):
    if isinstance(ref, dict):
        assert set(got) == set(ref), f"{where}: keys {set(got) ^ set(ref)}"
        for k in ref:
            if k not in TIMING:
                assert_json_close(got[k], ref[k], tol, f"{where}.{k}")
    elif isinstance(ref, list):
        assert len(got) == len(ref), where
        for i, (g, r) in enumerate(zip(got, ref)):
            assert_json_close(g, r, tol, f"{where}[{i}]")
    elif isinstance(ref, float):
        assert abs(got - ref) <= tol * max(1.0, abs(ref)), f"{where}: {got} != {ref}"
    else:
        assert got == ref, f"{where}: {got!r} != {ref!r}"


def check_against_reference(n):
    rows, diags, costs, summary = port(n)
    assert_rows_match(rows, ref_dir(n) / ps.FILES["rows"])
    assert_rows_match(diags, ref_dir(n) / ps.FILES["diagnostics"])
    assert_rows_match(costs, ref_dir(n) / ps.FILES["costs"])
    ref = json.loads((ref_dir(n) / ps.FILES["summary"]).read_text())
    assert_json_close(json.loads(json.dumps(ps.strict_json(summary))), ref)


def test_matches_seed_outputs_2_seeds():
    check_against_reference(2)


@pytest.mark.slow
def test_matches_seed_outputs_8_seeds():
    check_against_reference(8)


def test_self_checks_hold_and_fail_loudly():
    diag = port(2)[3]["diagnostics"]
    assert diag["max_compiler_bracket_absolute_error"] < 1e-9
    assert max(diag["equivalent_compiler_search_trajectory_max_difference"].values()) < 1e-10
    assert diag["number_of_probes"] == 2 * 5 * 12 * 4
    with pytest.raises(AssertionError, match="compiled bracket"):
        ps.self_checks({**diag, "max_compiler_bracket_absolute_error": 1e-6})
    with pytest.raises(AssertionError, match="equivalent predictors"):
        ps.self_checks({**diag, "equivalent_compiler_search_trajectory_max_difference": {"x": 1e-6}})


def test_equivalent_predictors_agree_on_every_order_choice():
    """minimal, first_jet and full_jacobian brackets are equal per state, not only in sign."""
    setup = ps.SeedSetup(0, ps.SearchConfig(seeds=1))
    g = ps.Grammar(setup.task, setup.sets)
    rng = np.random.default_rng(0)
    left = g.add([1, 2], rng.normal(size=(2, 3)))
    right = g.add([left, 5], rng.normal(size=(2, 3)))
    exact = g.score(left, right, "test", "full_jacobian")
    assert np.abs(exact).max() > 1e-4
    np.testing.assert_allclose(g.score(left, right, "test", "minimal"), exact, atol=1e-12)
    np.testing.assert_allclose(g.score(left, right, "test", "first_jet"), exact, atol=1e-12)
    assert np.abs(g.score(left, right, "test", "gate_blind") - exact).max() > 1e-6


@pytest.mark.parametrize("method", ["corrected", "random_order", "direct_tournament", "no_feedback"])
def test_batched_equals_per_state_reference(method):
    from lib.program_search import reference as ref
    cfg = ps.SearchConfig(seeds=1, generations=3)
    a, da, _ = ps.one_run(0, method, cfg)
    b, db, _ = ref.one_run(0, method, cfg)
    assert len(a) == len(b) and len(da) == len(db)
    for x, y in zip(a + da, b + db):
        assert x.keys() == y.keys()
        for k in x:
            if isinstance(y[k], float):
                assert abs(x[k] - y[k]) <= 1e-9, (method, k)
            else:
                assert x[k] == y[k], (method, k)


def test_frozen_proposer_never_changes_and_no_feedback_does():
    rows = pd.DataFrame(port(2)[0])
    frozen = rows[rows.method == "frozen_proposer"]
    # mean stays 0, std stays its initial mean (0.8 and 2 over the 3 gate parameters), pool stays
    # the primitives (so every program it proposes has depth 1)
    assert (frozen.proposal_mean_change_norm == 0).all()
    assert np.allclose(frozen.proposal_std_mean, (0.8 + 2 + 2) / 3)
    assert (frozen.best_program_depth == 1).all()
    assert frozen.notna().all().all()
    nofb = rows[rows.method == "no_feedback"]
    assert (nofb.proposal_mean_change_norm > 0).all()
    assert nofb.proposal_std_mean.nunique() > 1
    assert nofb.best_program_depth.max() > 1 or nofb.nodes_generated.max() > 0


@pytest.mark.parametrize("n", [2, 8])
def test_literal_reading_difference_is_confined_to_frozen_proposer(n):
    """The seed's literal (defective) reading equals ours for every other method and turns
    frozen_proposer's proposal statistics into NaN from generation 1, its best program stuck."""
    lit = pd.read_csv(ref_dir(n) / "literal_reading_v2_program_search.csv")
    fixed = pd.read_csv(ref_dir(n) / ps.FILES["rows"])
    other = lit.method != "frozen_proposer"
    pd.testing.assert_frame_equal(lit[other].reset_index(drop=True), fixed[other].reset_index(drop=True))
    fl = lit[~other]
    assert fl.proposal_mean_change_norm.isna().all() and fl.proposal_std_mean.isna().all()
    assert fl[fl.generation > 1].mean_proposed_heldout_loss_ratio.isna().all()
    assert (fl.groupby("seed").heldout_loss_ratio.nunique() == 1).all()
    assert not fixed[~other].isna().any().any()


def test_strict_json_and_outputs(tmp_path):
    rows, diags, costs, summary = port(2)
    bad = {**summary, "extra": [float("nan"), np.float64("inf"), np.int64(3)]}
    files = ps.write_outputs(tmp_path, rows, diags, costs, bad)
    assert [f.name for f in files] == list(ps.FILES.values())

    def refuse(c):
        raise ValueError(c)
    loaded = json.loads(files[3].read_text(), parse_constant=refuse)
    assert loaded["extra"] == [None, None, 3]
    assert loaded["scope"] == ps.SCOPE
    assert_rows_match(rows, files[0])


def test_config_validation():
    cfg = experiment.load("configs/program_search/smoke.yaml")
    assert cfg["seeds"] == 2 and cfg["kind"] == "program_search"
    assert experiment.load("configs/program_search/cpu.yaml")["seeds"] == 8
    with pytest.raises(ConfigError, match="shard_seed"):
        ps.validate_config({**cfg, "shard_seed": 2})
    with pytest.raises(ConfigError, match="unknown key"):
        ps.validate_config({**cfg, "seed": 3})
    with pytest.raises(ConfigError, match="step_size"):
        ps.validate_config({**cfg, "step_size": -1.0})
    assert [s["shard_seed"] for s in ps.shards(cfg)] == [0, 1]


def test_run_experiment_shards_resume_and_refuse(tmp_path, monkeypatch):
    monkeypatch.setattr(ps, "data_dir", lambda scale, exp: tmp_path / scale / exp)
    cfg = ps.validate_config({"experiment": "program_search", "kind": "program_search", "scale": "smoke",
                              "seeds": 2, "generations": 2})
    folder = tmp_path / "smoke" / "program_search"
    part = ps.run_experiment(ps.shards(cfg)[1])  # one shard: only seed 1
    assert set(part.seed) == {1} and not (folder / ps.FILES["rows"]).exists()
    assert read_manifest(folder)["status"] == "running"
    assert ps.shard_done(ps.shards(cfg)[1]) and not ps.shard_done(ps.shards(cfg)[0])
    ran, run_seed = [], ps.run_seed
    monkeypatch.setattr(ps, "run_seed", lambda seed, *a, **k: ran.append(seed) or run_seed(seed, *a, **k))
    df = ps.run_experiment(cfg)  # runs seed 0, reuses seed 1, assembles, removes the shards
    assert ran == [0] and not (folder / "shards").exists()
    assert all(ps.shard_done(sh) for sh in ps.shards(cfg))
    assert len(df) == 2 * 8 * 2 and set(df.seed) == {0, 1}
    m = read_manifest(folder)
    assert m["status"] == "complete" and m["self_checks"]["max_compiler_bracket_absolute_error"] < 1e-9
    direct = pd.DataFrame(ps.run_all(ps.search_config(cfg))[0])
    np.testing.assert_allclose(df.heldout_loss_ratio, direct.heldout_loss_ratio, rtol=0, atol=1e-15)
    pd.testing.assert_frame_equal(ps.run_experiment(cfg), df)  # reuse
    with pytest.raises(ValueError, match="another config"):
        ps.run_experiment({**cfg, "generations": 3})


def test_cli_writes_seed_files(tmp_path, capsys):
    from lib.program_search import __main__ as cli
    assert cli.main(["--seeds", "1", "--output", str(tmp_path)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert len(out["final_results"]) == len(ps.METHODS)
    for name in ps.FILES.values():
        assert (tmp_path / name).is_file()
    assert read_manifest(tmp_path)["config"]["seeds"] == 1
    assert math.isfinite(out["diagnostics"]["max_compiler_bracket_absolute_error"])
