"""The field's baselines (lib.society.baselines) on a micro config of the tiny base."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

from lib.society import baselines, run as society
from lib.engines import lora
from lib.engines.merge import delta_weights, full_rank, merge_adapters
from lib.society.config import BASELINES
from lib.core.tasks import make_tasks

MICRO = {
    "experiment": "baselines_test", "kind": "llm_society_v2", "scale": "smoke", "base_model": "tiny",
    "agents": 3, "generations": 2, "arms": list(BASELINES), "n_test": 4, "n_val": 4, "n_conf": 6,
    "n_inherit": 24, "n_candidates": 2, "epochs": 1, "n_parents": 2, "spec_train": 32, "spec_epochs": 1,
    "seed": 0, "lora": {"r": 8, "alpha": 16, "targets": ["q_proj", "v_proj"]},
    "lineage_steps": 3, "n_select": 4,  # the lineage baselines' steps; continue_all chooses its founder on the selection pool
}


@pytest.fixture(scope="module")
def tiny_base():
    from lib.engines.models import load_base
    return load_base("tiny", device="cpu")


@pytest.fixture(scope="module")
def two(tiny_base, tmp_path_factory):
    root = tmp_path_factory.mktemp("two")
    for i, f in enumerate(("lists", "strings")):
        lora.train_lora_on_tasks(tiny_base, make_tasks(f, 32, seed=50_000 + i), root / f, epochs=1, seed=i,
                                 spec=lora.LoraSpec(r=8, alpha=16))
        lora.load_adapter(tiny_base, f"sp{i}", root / f)
    yield ["sp0", "sp1"]
    for n in ("sp0", "sp1"):
        lora.remove_adapter(tiny_base, n)


def test_a_soup_of_identical_adapters_is_the_adapter(tiny_base, two):
    merge_adapters(tiny_base, [two[0]] * 3, [1 / 3] * 3, "soup3")
    got, want = delta_weights(tiny_base, "soup3"), delta_weights(tiny_base, two[0])
    assert all(torch.allclose(got[k], want[k], atol=1e-6) for k in want)
    lora.remove_adapter(tiny_base, "soup3")


def test_ties_at_density_one_of_one_adapter_is_the_adapter(tiny_base, two):
    rank = full_rank(tiny_base, [two[0]])
    assert rank == 128  # the tiny base's q_proj / v_proj are 128 x 128
    merge_adapters(tiny_base, [two[0]], [1.0], "t1", "ties", density=1.0, svd_rank=rank)
    got, want = delta_weights(tiny_base, "t1"), delta_weights(tiny_base, two[0])
    assert all(torch.allclose(got[k], want[k], atol=1e-5) for k in want)
    # and TIES is not a plain average: at density 0.5 of two different adapters it differs from the mean
    merge_adapters(tiny_base, two, [1.0, 1.0], "t2", "ties", density=0.5, svd_rank=rank)
    mean = {k: (delta_weights(tiny_base, two[0])[k] + delta_weights(tiny_base, two[1])[k]) / 2 for k in want}
    assert max((delta_weights(tiny_base, "t2")[k] - mean[k]).abs().max().item() for k in want) > 1e-4
    for n in ("t1", "t2"):
        lora.remove_adapter(tiny_base, n)


def test_lorahub_keeps_to_its_budget_and_returns_the_best_weights():
    calls = []

    def objective(w):
        calls.append(w.copy())
        return float(np.sum((w - np.array([0.9, -0.2, 0.1])) ** 2))

    w, used = baselines.lorahub_weights(3, 23, objective, seed=4)
    assert used == len(calls) <= 23
    assert objective(w) == min(objective(c) for c in calls[:used])
    w2, _ = baselines.lorahub_weights(3, 23, objective, seed=4)
    assert np.array_equal(w, w2)  # seeded
    assert np.all(np.abs(np.array(calls)) <= baselines.LORAHUB_BOUND + 1e-12)


def test_society_val_evals_counts_selection_and_screening():
    s = society.validate_config({**MICRO, "generations": 8, "agents": 6, "n_parents": 3})
    assert baselines.society_val_evals(s) == 8 * 6 + 7 * 6 * 2  # 132, the cpu config's grounded run


def test_every_baseline_writes_its_rows_and_cost(tiny_base, tmp_path):
    cfg = society.validate_config({**MICRO, "adapters_dir": str(tmp_path / "runs")})
    rows = society.run_experiment(cfg, folder=tmp_path / "data", base=tiny_base)
    assert set(rows.arm) == set(BASELINES) and set(rows.generation) == {cfg["generations"] - 1}
    wide = rows.pivot_table(index="arm", columns="metric", values="value")
    assert wide["test_overall"].between(0, 1).all() and wide["val_overall"].notna().all()
    s = society.validate_config(cfg)
    assert wide.loc["baseline_task_arithmetic", "cost_val_evals"] == len(baselines.TA_LAMBDAS)
    assert wide.loc["baseline_ties", "cost_val_evals"] == len(baselines.TIES_GRID)
    assert wide.loc["baseline_lorahub", "cost_val_evals"] <= baselines.society_val_evals(s)
    assert wide.loc["baseline_soup", "cost_val_evals"] == 0
    founders = s.agents * society.lora_steps(s.spec_train, s.spec_epochs, s.batch_size)
    assert wide.loc["baseline_soup", "cost_train_steps"] == founders
    assert wide.loc["baseline_multitask", "cost_train_steps"] == society.lora_steps(s.agents * s.spec_train, s.spec_epochs, s.batch_size)
    assert wide.loc["baseline_task_arithmetic", "baseline_lambda"] in baselines.TA_LAMBDAS
    # every grid setting's val accuracy is a row, and the chosen setting is the first with the best one
    for arm, grid in (("baseline_task_arithmetic", [{"lambda": x} for x in baselines.TA_LAMBDAS]),
                      ("baseline_ties", [{"density": d, "lambda": x} for d, x in baselines.TIES_GRID])):
        scores = [wide.loc[arm, baselines.grid_key(c)] for c in grid]
        first_best = grid[int(np.argmax(scores))]
        assert all(wide.loc[arm, f"baseline_{k}"] == v for k, v in first_best.items())
    assert not wide.loc["baseline_soup"].index[wide.loc["baseline_soup"].notna()].str.startswith("val_grid_").any()
    # done shards are skipped: a second run computes nothing and returns the same rows
    again = society.run_experiment(cfg, folder=tmp_path / "data", base=tiny_base)
    pd.testing.assert_frame_equal(rows, again)
    w = society.generation_walls(cfg, tmp_path / "data")
    assert (w.wall_s > 0).all() and "baseline" in w.columns
