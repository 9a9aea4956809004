"""The LLM society on the tiny base: batched generation, merges, adapters on disk, configs, the loop."""
from __future__ import annotations

import copy

import numpy as np
import pandas as pd
import pytest
import torch

from lib.config import ConfigError
from lib.llm import lora, merge, society
from lib.llm.generate import generate_agents, generate_agents_loop
from lib.tasks import FAMILIES, make_pool

TINY = {
    "experiment": "society_test", "kind": "llm_society_v2", "scale": "smoke", "base_model": "tiny",
    "agents": 3, "generations": 2, "arms": ["full"], "n_test": 4, "n_val": 4, "n_conf": 6,
    "n_inherit": 24, "n_candidates": 2, "epochs": 1, "n_parents": 2, "spec_train": 32,
    "spec_epochs": 1, "seed": 0,
}


@pytest.fixture(scope="module")
def tiny_base():
    from lib.llm.models import load_base
    return load_base("tiny", device="cpu")


@pytest.fixture(scope="module")
def three(tiny_base, tmp_path_factory):
    """Three quick specialists attached as 'lists', 'strings', 'arith'."""
    root = tmp_path_factory.mktemp("spec")
    for i, f in enumerate(FAMILIES):
        lora.train_specialist(tiny_base, f, root / f, n_train=48, epochs=1, seed=i)
        lora.load_adapter(tiny_base, f, root / f)
    return root


def cfg_with(tmp_path, **kw):
    return society.validate_config({**TINY, "adapters_dir": str(tmp_path / "runs"), **kw})


def test_batched_generation_equals_set_adapter_loop(tiny_base, three):
    prompts = [t.prompt for t in make_pool(FAMILIES, 8, 1000)]
    names = list(FAMILIES)
    a = generate_agents(tiny_base, prompts, names, batch_size=16)
    b = generate_agents_loop(tiny_base, prompts, names)
    assert a == b
    assert len({tuple(x) for x in a}) > 1  # the adapters really differ


def test_exact_merge_is_weighted_sum_of_updates_and_linear_is_not(tiny_base, three):
    w = [0.3, 0.7]
    merge.merge_adapters(tiny_base, ["lists", "strings"], w, "m_exact", "exact")
    merge.merge_adapters(tiny_base, ["lists", "strings"], w, "m_linear", "linear")
    da, db = merge.delta_weights(tiny_base, "lists"), merge.delta_weights(tiny_base, "strings")
    de, dl = merge.delta_weights(tiny_base, "m_exact"), merge.delta_weights(tiny_base, "m_linear")
    assert de.keys() == da.keys() and len(de) == 8  # q_proj, v_proj in 4 layers
    for k in de:
        assert torch.allclose(de[k], w[0] * da[k] + w[1] * db[k], atol=1e-6)
    assert max((dl[k] - (w[0] * da[k] + w[1] * db[k])).abs().max().item() for k in dl) > 1e-3
    # re-merging under an existing name replaces it (peft alone would silently keep the old one)
    merge.merge_adapters(tiny_base, ["lists", "strings"], [1.0, 0.0], "m_exact", "exact")
    assert torch.allclose(merge.delta_weights(tiny_base, "m_exact")[k], da[k], atol=1e-6)
    for n in ("m_exact", "m_linear"):
        lora.remove_adapter(tiny_base, n)


def test_saved_adapter_round_trips_and_corruption_is_named(tiny_base, three, tmp_path):
    lora.save_adapter(tiny_base, "lists", tmp_path / "a")
    lora.load_adapter(tiny_base, "copy", tmp_path / "a")
    x, y = merge.delta_weights(tiny_base, "lists"), merge.delta_weights(tiny_base, "copy")
    assert all(torch.equal(x[k], y[k]) for k in x)
    lora.remove_adapter(tiny_base, "copy")
    bad = lora.copy_adapter(tmp_path / "a", tmp_path / "b")
    (bad / "adapter_model.safetensors").unlink()
    with pytest.raises(lora.CorruptAdapterError, match="missing.*adapter_model.safetensors"):
        lora.load_adapter(tiny_base, "bad", bad)
    bad = lora.copy_adapter(tmp_path / "a", tmp_path / "c")
    (bad / "adapter_model.safetensors").write_bytes(b"\x00garbage")
    with pytest.raises(lora.CorruptAdapterError, match="unreadable adapter_model.safetensors"):
        lora.check_adapter_dir(bad)
    (bad / "adapter_config.json").write_text("{not json")
    with pytest.raises(lora.CorruptAdapterError, match="adapter_config.json"):
        lora.check_adapter_dir(bad)
    with pytest.raises(lora.CorruptAdapterError, match="does not exist"):
        lora.check_adapter_dir(tmp_path / "nothing")


def test_config_errors(tmp_path):
    with pytest.raises(ConfigError, match=r"choose from \['full', 'no_grounding'"):
        cfg_with(tmp_path, arms=["full", "bogus"])
    with pytest.raises(ConfigError, match="sex_linear"):  # v1 has no sex_linear arm
        cfg_with(tmp_path, kind="llm_society", arms=["sex_linear"])
    with pytest.raises(ConfigError, match=r"n_parents \(5\) > agents \(3\)"):
        cfg_with(tmp_path, n_parents=5)
    with pytest.raises(ConfigError, match="elitism"):
        cfg_with(tmp_path, elitism=3)
    with pytest.raises(ConfigError, match="under data/"):
        cfg_with(tmp_path, adapters_dir="data/smoke/society/adapters")
    with pytest.raises(ConfigError, match="unknown key"):
        cfg_with(tmp_path, agentz=3)
    with pytest.raises(ConfigError, match="full@gx"):
        cfg_with(tmp_path, arms=["full@gx"])
    with pytest.raises(ConfigError, match="full@g2"):
        cfg_with(tmp_path, arms=["full@g2"])
    sweep = cfg_with(tmp_path, arms=["full@g0", "full@g0.25"])
    assert society.arm_settings("full@g0.25", sweep["g"])["g"] == 0.25
    assert society.arm_settings("full@g0", sweep["g"])["g"] == 0.0
    assert society.generation_rng(0, "full@g0.25", 3).random() == society.generation_rng(0, "full", 3).random()
    cfg = cfg_with(tmp_path, arms=["full", "no_sex"], seeds=[0, 1])
    sh = society.shards(cfg)
    assert [(s["arms"], s["seeds"]) for s in sh] == [(["full"], [0]), (["full"], [1]), (["no_sex"], [0]), (["no_sex"], [1])]
    assert society.merge_method(cfg, "full") == "exact"
    assert society.merge_method({**cfg, "kind": "llm_society"}, "full") == "linear"
    assert society.merge_method(cfg, "sex_linear") == "linear" and society.merge_method(cfg, "no_sex") is None


def test_paper_scale_refuses_on_cpu(tmp_path):
    if torch.cuda.is_available():
        pytest.skip("a GPU is visible")
    from lib.config import load_yaml
    from lib.paths import config_path
    cfg = society.validate_config(load_yaml(config_path("society", "paper")))
    with pytest.raises(RuntimeError, match="needs a CUDA GPU"):
        society.run_experiment(cfg, folder=tmp_path / "data")
    assert not (tmp_path / "data").exists()  # refused before writing anything


def _rows(df):
    return df.sort_values(["arm", "seed", "generation", "agent", "metric"]).reset_index(drop=True)


def test_interrupted_run_resumes_to_the_same_rows(tiny_base, tmp_path):
    cfg = cfg_with(tmp_path / "a")
    full = society.run_experiment(cfg, folder=tmp_path / "a" / "data", base=tiny_base)
    assert set(full.generation) == {0, 1} and "parents" in set(full.metric)
    cfg_b = cfg_with(tmp_path / "b")
    with pytest.raises(society.Interrupted):
        society.run_experiment(cfg_b, folder=tmp_path / "b" / "data", base=tiny_base, interrupt_after=0)
    part = pd.read_csv(tmp_path / "b" / "data" / "full_s0.csv")
    assert set(part.generation) == {0}
    assert not society.data_complete(cfg_b, tmp_path / "b" / "data")
    resumed = society.run_experiment(cfg_b, folder=tmp_path / "b" / "data", base=tiny_base)
    pd.testing.assert_frame_equal(_rows(full), _rows(resumed))
    assert society.data_complete(cfg_b, tmp_path / "b" / "data")
    # a config that disagrees with the data on disk is refused, not mixed in
    with pytest.raises(ValueError, match="another config"):
        society.run_experiment({**cfg_b, "lam": 0.9}, folder=tmp_path / "b" / "data", base=tiny_base)
    # a corrupt adapter of the next generation is named when a resumed run needs it
    cfg_c = cfg_with(tmp_path / "c", generations=3)
    with pytest.raises(society.Interrupted):
        society.run_experiment(cfg_c, folder=tmp_path / "c" / "data", base=tiny_base, interrupt_after=0)
    gen1 = tmp_path / "c" / "runs" / "s0" / "full" / "gen1" / "agent1"
    (gen1 / "adapter_config.json").unlink()
    with pytest.raises(lora.CorruptAdapterError, match="agent1"):
        society.run_experiment(cfg_c, folder=tmp_path / "c" / "data", base=tiny_base)


def test_no_grounding_trajectory_ignores_the_verifier(tiny_base, tmp_path):
    from safetensors.torch import load_file
    kw = {"arms": ["no_grounding", "full"], "keep_all_adapters": True}
    cfg_a, cfg_b = cfg_with(tmp_path / "a", **kw), cfg_with(tmp_path / "b", **kw)
    a = society.run_experiment(cfg_a, folder=tmp_path / "a" / "data", base=tiny_base)
    b = society.run_experiment(cfg_b, folder=tmp_path / "b" / "data", base=tiny_base,
                               verifier=lambda output, task: False)
    a, b = _rows(a), _rows(b)
    ng = lambda d: d[(d.arm == "no_grounding") & d.metric.isin(["parents", "diversity_behav"])]  # noqa: E731
    pd.testing.assert_frame_equal(ng(a), ng(b))
    cols = ["generation", "agent", "selected", "conformity", "score"]
    pd.testing.assert_frame_equal(a[a.arm == "no_grounding"][cols], b[b.arm == "no_grounding"][cols])
    assert (b[b.metric.str.startswith("test_")].value == 0).all()  # the swapped verifier did report
    for d in sorted((tmp_path / "a" / "runs" / "s0" / "no_grounding").rglob("adapter_model.safetensors")):
        other = tmp_path / "b" / d.relative_to(tmp_path / "a")
        x, y = load_file(d), load_file(other)
        assert all(torch.equal(x[k], y[k]) for k in x), f"child {d.parent.name} differs"
    # the grounded arm, by contrast, does depend on its verifier
    sa, sb = a[a.arm == "full"].score.to_numpy(), b[b.arm == "full"].score.to_numpy()
    assert not np.allclose(np.nan_to_num(sa), np.nan_to_num(sb))
