"""The LLM society on the tiny base: batched generation, merges, adapters on disk, configs, the loop."""
from __future__ import annotations


import numpy as np
import pandas as pd
import pytest
import torch

from lib.core.config import ConfigError
from lib.engines import lora, merge
from lib.society import run as society
from lib.engines.generate import generate_agents, generate_agents_loop
from lib.society import pools
from lib.society.config import SocietyConfig
from lib.operators.ops import elite_indices
from lib.core.tasks import FAMILIES, make_pool, make_tasks

TINY = {
    "experiment": "society_test", "kind": "llm_society_v2", "scale": "smoke", "base_model": "tiny",
    "agents": 3, "generations": 2, "arms": ["full"], "n_test": 4, "n_val": 4, "n_conf": 6,
    "n_inherit": 24, "n_candidates": 2, "epochs": 1, "n_parents": 2, "spec_train": 32,
    "spec_epochs": 1, "seed": 0,
}


@pytest.fixture(scope="module")
def tiny_base():
    from lib.engines.models import load_base
    return load_base("tiny", device="cpu")


@pytest.fixture(scope="module")
def three(tiny_base, tmp_path_factory):
    """Three quick specialists attached as 'lists', 'strings', 'arith'."""
    root = tmp_path_factory.mktemp("spec")
    for i, f in enumerate(FAMILIES):
        lora.train_lora_on_tasks(tiny_base, make_tasks(f, 48, seed=50_000 + i), root / f, epochs=1, seed=i)
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
    assert [(s["arms"], s["seeds"]) for s in sh] == [(["full"], [0]), (["no_sex"], [0]), (["full"], [1]),
                                                           (["no_sex"], [1])]  # seed by seed
    v2, v1 = society.validate_config(cfg), society.validate_config({**cfg, "kind": "llm_society"})
    assert v2.merge_method("full") == "exact"
    assert v1.merge_method("full") == "linear"
    assert v2.merge_method("sex_linear") == "linear" and v2.merge_method("no_sex") is None


def test_paper_scale_refuses_on_cpu(tmp_path):
    if torch.cuda.is_available():
        pytest.skip("a GPU is visible")
    cfg = society.load("society", "paper")
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


# ----------------------------------------------------------------------------- review defects (issue 10)


def test_arm_modifiers_parse_and_share_random_numbers(tmp_path):
    assert society.parse_arm("full@e1", 0.5) == {"name": "full", "g": 0.5, "elitism": 1, "budget": None,
                                                 "gold": False, "higher": False}
    assert society.parse_arm("no_grounding@g0@e2", 0.5, 0) == {"name": "no_grounding", "g": 0.0, "elitism": 2,
                                                               "budget": None, "gold": False, "higher": False}
    assert society.parse_arm("crossover@gold", 0.5)["gold"]
    assert society.arm_settings("full@e1", 0.5)["elitism"] == 1
    with pytest.raises(ValueError, match="full@x1"):
        society.parse_arm("full@x1", 0.5)
    with pytest.raises(ConfigError, match=r"elitism \(3\)"):
        cfg_with(tmp_path, arms=["full@e3"])
    assert society.generation_rng(2, "full@e1", 4).random() == society.generation_rng(2, "full", 4).random()


def test_child_seeds_are_independent_across_replicates():
    # the seed's formula seed*31 + t*N + c collides: seed 0 at t=5, c=1 equals seed 1 at t=0, c=0 (N=6)
    assert society.child_seed(0, "full", 5, 1) != society.child_seed(1, "full", 0, 0)
    grid = {s: {society.child_seed(s, "full", t, c) for t in range(8) for c in range(6)} for s in range(6)}
    assert all(len(v) == 48 for v in grid.values())
    assert all(not (grid[a] & grid[b]) for a in grid for b in grid if a < b)
    assert society.child_seed(0, "full@e1", 3, 2) == society.child_seed(0, "full", 3, 2)
    assert society.child_seed(0, "full", 3, 2) != society.child_seed(0, "no_sex", 3, 2)


def test_conformity_and_inheritance_pools_are_disjoint(tmp_path):
    s = cfg_with(tmp_path, n_conf=60, n_inherit=240)
    for seed in (0, 1):
        for t in (0, 3):
            conf = {x.prompt for x in pools.conformity_pool(s, seed, t)}
            inh = pools.inheritance_pool(s, seed, t)
            assert len(inh) == 240 and not conf & {x.prompt for x in inh}
            assert all(x.family == f for f, k in zip(s.families, range(3)) for x in inh[80 * k:80 * (k + 1)])


def test_elites_are_the_top_scores_not_the_first_parents():
    assert elite_indices(np.array([0.1, 0.9, 0.5, 0.9]), 2, keys=["a", "b", "c", "d"]) == [1, 3]
    assert elite_indices(np.array([0.1, 0.9, 0.5, 0.9]), 1, keys=["a", "z", "c", "d"]) == [3]  # a tie: the smaller key
    assert elite_indices(np.array([0.3, 0.2]), 0, keys=["a", "b"]) == []


def test_tiny_base_runs_in_float32_unless_bf16_is_asked_for(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert society.base_dtype({"base_model": "tiny", "dtype": "auto"}) == "fp32"
    assert society.base_dtype({"base_model": "tiny", "dtype": "bf16"}) == "bf16"  # tests/test_bf16_cpu.py
    assert society.base_dtype({"base_model": "smollm2-135m", "dtype": "auto"}) == "bf16"
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert society.base_dtype({"base_model": "smollm2-135m", "dtype": "auto"}) == "fp32"


def test_founders_are_reused_only_with_the_same_settings(tiny_base, tmp_path):
    cfg = cfg_with(tmp_path, spec_train=16)
    a = society.ensure_founders(tiny_base, cfg, 0)
    stamp = [(d / "adapter_model.safetensors").stat().st_mtime_ns for d in a]
    assert society.ensure_founders(tiny_base, cfg, 0) == a  # same settings: reused, not retrained
    assert [(d / "adapter_model.safetensors").stat().st_mtime_ns for d in a] == stamp
    import json
    assert json.loads((a[0].parent / "settings.json").read_text())["spec_train"] == 16
    for change in ({"spec_train": 24}, {"lr": 0.002}, {"lora": {"r": 8, "alpha": 16}},
                   {"lora": {"r": 16, "alpha": 32, "targets": ["q_proj", "k_proj"]}}):
        b = society.ensure_founders(tiny_base, cfg_with(tmp_path, **{"spec_train": 16, **change}), 0)
        assert b[0].parent != a[0].parent, change  # another folder: stale founders never reused


def test_two_processes_on_one_seed_train_its_founders_once(tiny_base, tmp_path, monkeypatch):
    """Two sweep workers start two arms of one seed together: without the founders' work lock each trained the seed's
    founders (both recorded 1,134 founder steps), the second overwriting the first's adapters as it might read them."""
    import threading
    import time
    from lib.society import founders
    cfg, trained, real = cfg_with(tmp_path, spec_train=16), [], founders.train_loras

    def slow_train(base, jobs, dirs, **kw):  # long enough for the other thread to arrive while it trains
        trained.extend(dirs)
        time.sleep(0.5)
        return real(base, jobs, dirs, **kw)
    monkeypatch.setattr(founders, "train_loras", slow_train)
    got = [None, None]

    def arm(k):
        got[k] = founders.ensure_founders(tiny_base, cfg, 0)
    threads = [threading.Thread(target=arm, args=(k,)) for k in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert got[0] == got[1] and len(trained) == cfg.agents  # every founder trained once, by one of the two


def test_run_keeps_the_last_population_and_writes_the_diagnostics(tiny_base, tmp_path, monkeypatch):
    cfg = cfg_with(tmp_path, arms=["full@e1", "no_sex"], generations=3)
    rechecks, of = [], SocietyConfig.of.__func__

    def counting_of(cls, raw):  # a config checked again below the door: what the door is there to prevent
        rechecks.extend([type(raw).__name__] * isinstance(raw, SocietyConfig))
        return of(cls, raw)
    monkeypatch.setattr(SocietyConfig, "of", classmethod(counting_of))
    df = society.run_experiment(dict(cfg), folder=tmp_path / "data", base=tiny_base)  # a mapping: checked once
    assert rechecks == [], f"the run re-checked its config {len(rechecks)} times below the door"
    monkeypatch.undo()
    last = tmp_path / "runs" / "s0" / "full@e1" / "gen2"
    assert sorted(p.name for p in last.iterdir()) == ["agent1", "agent2", "elite0"]
    assert not (tmp_path / "runs" / "s0" / "full@e1" / "gen1").exists()  # intermediate ones dropped
    e = df[df.arm == "full@e1"]
    for t in (1, 2):  # the elite of generation t is a top scorer of t-1 (a tie: its answer key decides, no seat)
        prev = e[(e.generation == t - 1) & (e.metric == "val_overall")]
        top = set(prev[prev.score == prev.score.max()].agent.astype(int))
        code = e[(e.generation == t) & (e.agent == 0) & (e.metric == "parents")].value.item()
        assert code % 101 == 0 and int(code // 101) in top
    m = set(e.metric)
    assert {"val_half_a", "val_half_b", "base_test_lists", "elite", "inherit_n", "source_test_overall",
            "merge_winner", "merge_gain_val"} <= m
    assert "merge_winner" not in set(df[df.arm == "no_sex"].metric)
    w = society.generation_walls(cfg, tmp_path / "data")
    assert {"evaluate", "train"} <= set(w.columns) and (w.wall_s > 0).all()


def test_a_child_with_too_few_answers_is_a_copy_of_its_source(tiny_base, tmp_path):
    """n_inherit below the 8-answer minimum: every bred child is degenerate, and it inherits its
    source — the screened merge of its two parents (one candidate: the plain average) — not a parent."""
    import json
    from safetensors.torch import load_file

    def delta(folder):
        sd = load_file(str(folder / "adapter_model.safetensors"))
        c = json.loads((folder / "adapter_config.json").read_text())
        s = c["lora_alpha"] / c["r"]
        return {k.rsplit(".lora_A", 1)[0]: s * (sd[k.replace("lora_A", "lora_B")] @ sd[k]) for k in sd if ".lora_A." in k}

    cfg = cfg_with(tmp_path, arms=["full"], n_inherit=6, n_candidates=1, keep_all_adapters=True)
    df = society.run_experiment(cfg, folder=tmp_path / "data", base=tiny_base)
    born = df[df.generation == 1]
    assert (born[born.metric == "inherit_n"].value < 8).all()
    runs = tmp_path / "runs" / "s0"
    founders = {int(d.name[5:].split("_")[0]): d for d in runs.glob("founders-*/agent*")}
    checked = 0
    for child in sorted((runs / "full" / "gen1").iterdir()):
        c = int(child.name.removeprefix("agent"))
        a, b = divmod(int(born[(born.agent == c) & (born.metric == "parents")].value.item()), 100)
        got, da, db = delta(child), delta(founders[a]), delta(founders[b])
        for k in da:
            assert torch.allclose(got[k], 0.5 * da[k] + 0.5 * db[k], atol=1e-6), (c, k)
        checked += a != b
    assert checked > 0  # at least one child of two different parents
