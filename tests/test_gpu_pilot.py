"""The GPU pilot's path on the CPU: ``lib.society.gpu_run`` over the pilot's designs (``full``,
``crossover_archive``, ``baseline_distill_all``: configs/society_crossover/paper.yaml) on the tiny base
in bf16 (``GE_CPU_BF16=1``, tests/data/society_pilot_bf16.yaml), so that a dtype or ordering fault of the
new arms fails here before it costs device time. A call spreads its budget breadth first, a call cut
short resumes, the manifest speaks for the whole config, and the rows equal those of one plain run.
"""
from __future__ import annotations

import json

import pandas as pd
import pytest
import torch

from lib.core.paths import REPO_ROOT
from lib.engines.models import load_base
from lib.society import gpu_run, run as society
from lib.society.config import CPU_BF16_ENV, load_file, validate_config

PILOT = REPO_ROOT / "tests" / "data" / "society_pilot_bf16.yaml"
PAPER = REPO_ROOT / "configs" / "society_crossover" / "paper.yaml"


def test_the_micro_pilot_has_the_paper_pilots_designs():
    micro, paper = validate_config(load_file(PILOT)), validate_config(load_file(PAPER))
    assert micro.arms == paper.arms and paper.seed_list() == [0]
    assert paper.scale == "paper" and paper.base_model == "smollm2-135m" and paper.dtype == "bf16"
    assert micro.dtype == "bf16" and micro.base_model == "tiny"


@pytest.mark.slow
@pytest.mark.skipif(torch.cuda.is_available(), reason="a GPU is visible: the pilot runs there for real")
def test_gpu_run_times_every_design_breadth_first_and_resumes(tmp_path, monkeypatch):
    monkeypatch.setenv(CPU_BF16_ENV, "1")
    monkeypatch.setenv("GE_RUNS_DIR", str(tmp_path / "runs"))
    cfg = validate_config(load_file(PILOT))
    base = load_base("tiny", dtype="bf16")
    folder = tmp_path / "pilot"
    first = gpu_run.run_budgeted(cfg, base=base, folder=folder, budget_s=1e9, max_generations=2, log=lambda s: None)
    assert not first["done"] and [(r["arm"], r["generation"]) for r in first["timings"]] == [
        ("full", 0), ("crossover_archive", 0)]  # breadth first: every design's generation 0 before any's 1
    m = json.loads((folder / "manifest.json").read_text())
    assert m["status"] == "running" and m["run_config"]["arms"] == list(cfg.arms)  # the whole config's
    assert m["shards"] == {"full_s0": 0, "crossover_archive_s0": 0, "baseline_distill_all_s0": None}
    rest = gpu_run.run_budgeted(cfg, base=base, folder=folder, budget_s=1e9, log=lambda s: None)
    assert rest["done"] and [(r["arm"], r["generation"]) for r in rest["timings"]] == [
        ("baseline_distill_all", 0), ("full", 1), ("crossover_archive", 1)]
    m = json.loads((folder / "manifest.json").read_text())
    assert m["status"] == "complete" and m["dtype"] == "bf16" and m["wall_s"] > 0
    assert set(m["shards"].values()) == {cfg.generations - 1}
    lines = (folder / gpu_run.TIMINGS).read_text().splitlines()
    assert len(lines) == 5 and all(json.loads(x)["phases"] for x in lines)
    # the interleaved, interrupted calls wrote the rows one plain run writes
    plain = society.run_experiment(cfg, folder=tmp_path / "plain", base=base)
    pd.testing.assert_frame_equal(society.load_rows(cfg, folder), plain)
