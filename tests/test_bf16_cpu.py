"""The GPU path's dtype handling, run on the CPU: the tiny society in bf16.

The paper scale runs the society on a bf16 base on CUDA, where ``make_agents`` picks peft's mixed
adapter batches (:class:`lib.engines.agents.PeftAgents`) and peft keeps the LoRA factors in float32
beside the bf16 weights. This module runs that same code on the CPU (``dtype: bf16`` with the
opt-in ``GE_CPU_BF16=1``) on the tiny base: founders trained in bf16, exact (``full``) and linear
(``sex_linear``) merges, mixed-adapter generation, child training, an interrupted run resumed —
so a dtype mismatch between base, adapters and merges fails here, not in the first GPU hour.
It does not show that CUDA kernels give the same numbers, nor anything about memory or speed.
"""
from __future__ import annotations

import json

import pandas as pd
import pytest
import torch
from safetensors import safe_open

from lib.core.errors import DataMismatchError, DeviceError
from lib.society import run as society, shard
from lib.engines.models import load_base
from lib.society.config import CPU_BF16_ENV

CFG = {"experiment": "society_bf16", "kind": "llm_society_v2", "scale": "smoke", "base_model": "tiny",
       "dtype": "bf16", "families": ["lists", "strings"], "agents": 3, "generations": 2,
       "arms": ["full", "sex_linear"], "n_test": 4, "n_val": 4, "n_conf": 6, "n_inherit": 24, "n_candidates": 2,
       "epochs": 1, "n_parents": 2, "spec_train": 16, "spec_epochs": 1, "seed": 0, "lora": {"r": 8, "alpha": 16}}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """One adapter root for the module: the bf16 founders are trained once."""
    return tmp_path_factory.mktemp("bf16_runs")


def _cfg(runs, **kw):
    return society.validate_config({**CFG, "adapters_dir": str(runs), **kw})


def _dtypes(folder) -> set[str]:
    with safe_open(str(folder / "adapter_model.safetensors"), framework="pt") as fh:
        return {str(fh.get_tensor(k).dtype) for k in fh.keys()}


@pytest.mark.skipif(torch.cuda.is_available(), reason="a GPU is visible: the bf16 path runs there for real")
def test_bf16_society_on_the_cpu_runs_every_phase_and_resumes(runs, tmp_path, monkeypatch):
    cfg = _cfg(runs)
    monkeypatch.delenv(CPU_BF16_ENV, raising=False)
    with pytest.raises(DeviceError, match=CPU_BF16_ENV):  # bf16 without CUDA only on request
        society.run_experiment(cfg, folder=tmp_path / "refused")
    assert not (tmp_path / "refused").exists()
    monkeypatch.setenv(CPU_BF16_ENV, "1")
    engines = []
    real = shard.make_agents

    def spy(base, **kw):
        agents = real(base, **kw)
        engines.append((type(agents).__name__, next(base.model.parameters()).dtype))
        return agents
    monkeypatch.setattr(shard, "make_agents", spy)  # where a shard makes its agents

    whole = society.run_experiment(cfg, folder=tmp_path / "a")
    one = _cfg(runs, arms=["full"])
    with pytest.raises(society.Interrupted):
        society.run_experiment(one, folder=tmp_path / "b", interrupt_after=0)
    resumed = society.run_experiment(one, folder=tmp_path / "b")
    pd.testing.assert_frame_equal(whole[whole.arm == "full"], resumed)  # resumed in bf16 = run through

    assert {e[0] for e in engines} == {"PeftAgents"}  # the GPU path's engine, on a bf16 base
    assert json.loads((tmp_path / "a" / "manifest.json").read_text())["dtype"] == "bf16"
    # founders and children were trained by the batched trainer, the default
    assert json.loads((tmp_path / "a" / "manifest.json").read_text())["trainers"] == {"batched": 2}
    assert json.loads((tmp_path / "a" / "full_s0.progress.json").read_text())["trainer"] == "batched"
    # the base stays bf16; the adapters peft trains, merges and saves are float32 factors
    for arm in ("full", "sex_linear"):
        for child in sorted((runs / "s0" / arm / "gen1").iterdir()):
            assert _dtypes(child) == {"torch.float32"}, child
    founders = next((runs / "s0").glob("founders-*"))
    assert json.loads((founders / "settings.json").read_text())["base"]  # trained on the bf16 base
    for arm in ("full", "sex_linear"):
        r = whole[whole.arm == arm]
        assert set(r.generation) == {0, 1} and r.value.notna().all()
        assert len(r[r.metric == "merge_winner"]) == cfg["agents"]  # every child came from a screened merge
        assert (r[r.metric == "inherit_n"].value >= 8).all()  # ... and was trained (not copied)
        founders_steps = cfg["agents"] * -(-cfg["spec_train"] // cfg["batch_size"])
        assert r[r.metric == "cost_train_steps"].value.item() > founders_steps
        acc = r[r.metric.str.match(r"^(test_|val_)")]
        assert acc.value.between(0, 1).all() and acc.value.max() > 0


def test_auto_dtype_resolved_differently_cannot_resume_a_shard(runs, tmp_path):
    """``dtype: auto`` hashes the same everywhere: a shard begun with a bf16 base (``auto`` on a GPU)
    must not be continued with an fp32 base (``auto`` on a CPU), appending rows of another dtype."""
    cfg = _cfg(runs, dtype="auto", arms=["full"])
    bf16 = load_base("tiny", device="cpu", dtype="bf16")
    folder = tmp_path / "data"
    with pytest.raises(society.Interrupted):
        society.run_experiment(cfg, folder=folder, base=bf16, interrupt_after=0)
    assert json.loads((folder / "manifest.json").read_text())["dtype"] == "bf16"
    before = (folder / "full_s0.csv").read_bytes()
    with pytest.raises(DataMismatchError, match="in bf16, and this run would add rows in fp32"):
        society.run_experiment(cfg, folder=folder)  # auto -> fp32 for the tiny base here
    assert (folder / "full_s0.csv").read_bytes() == before
    rows = society.run_experiment(cfg, folder=folder, base=bf16)  # the same dtype resumes
    assert set(rows.generation) == {0, 1}
