"""The society study's arms: niche and lexicase selection, verified inheritance, parameter inheritance, budgets, the
selection pool — each checked on fake agents or small tensors, and their configs checked before any work."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from lib.core.config import ConfigError, load_layers
from lib.core.paths import config_path
from lib.society import generation as step
from lib.society import pools, run as society
from lib.engines.merge import inherit_merge
from lib.engines.lora import publish_factors
from lib.society.config import Arm, arm_design, load_file, resolve_arm, runs_of, validate_config
from lib.operators.ops import lexicase_parents, niche_parents
from lib.core.tasks import Task
from tests.test_society_steps import INHERIT, POOLS, FakeAgents, right

STUDY = "configs/society_study/cpu.yaml"


def arm(name="full", **kw):
    base = {"label": name, "name": name, "g": 0.5, "merge": "exact", "diversity": True, "elitism": 0}
    return Arm(**{**base, **kw})


KEYS = [f"key{i}" for i in range(10)]  # tie keys (lib.operators.ops.answer_key) in seat order

# ----------------------------------------------------------------------------- niche


@pytest.mark.parametrize("seed", range(20))
def test_niche_parents_always_hold_each_familys_best(seed):
    rng = np.random.default_rng(seed)
    n, f = 6, 3
    val = rng.integers(0, 5, size=(n, f)) / 4  # ties are common
    scores = rng.random(n)
    dist = rng.random((n, n))
    dist = (dist + dist.T) / 2
    np.fill_diagonal(dist, 0)
    parents = niche_parents(val, scores, dist, 3, keys=KEYS[:n], lam=0.3)
    assert len(set(parents)) == 3
    for j in range(f):  # each family's top val score is held by a parent
        assert val[parents, j].max() == val[:, j].max()


def test_niche_fills_the_other_slots_by_score_and_breaks_ties_by_score():
    val = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 0.2], [0.5, 0.5]])
    scores = np.array([0.1, 0.9, 0.3, 0.8])
    parents = niche_parents(val, scores, np.ones((4, 4)) - np.eye(4), 3, keys=KEYS[:4], diversity=False)
    assert parents == [1, 3, 2]  # lists: agents 0 and 1 tie, the higher score wins; arith: agent 3; then by score
    assert niche_parents(val, scores, np.zeros((4, 4)), 2, keys=KEYS[:4], diversity=False) == [1, 3]


def test_niche_arm_selects_the_strings_specialist_that_top_p_leaves_out():
    ev = step.Evaluation(test=[{}] * 4, val=np.array([0.9, 0.8, 0.7, 0.3]), screen=np.zeros(4),
                         val_halves=[(0, 0)] * 4, consensus=[], conformity=np.array([0.9, 0.8, 0.7, 0.2]),
                         distance=np.ones((4, 4)) - np.eye(4), consensus_acc=0.0, keys=tuple(KEYS[:4]),
                         val_family=np.array([[0.9, 0.1], [0.8, 0.1], [0.7, 0.2], [0.0, 0.9]]))
    top = step.select(ev, arm(), n_parents=2, lam=0.0)
    niche = step.select(ev, arm("niche", selection="niche"), n_parents=2, lam=0.0)
    assert 3 not in top.parents and niche.parents == [0, 3]


# ----------------------------------------------------------------------------- lexicase


@pytest.mark.parametrize("seed", range(20))
def test_lexicase_picks_the_sole_solver_of_a_case_whatever_its_total(seed):
    rng = np.random.default_rng(seed)
    items = (rng.random((6, 40)) < 0.8).astype(float)
    items[:, 0], items[5] = 0.0, 0.0
    items[5, 0] = 1.0  # agent 5 is worst overall but alone right on item 0
    picks = [lexicase_parents(items, 3, np.random.default_rng([seed, k]), keys=KEYS[:len(items)]) for k in range(200)]
    assert all(len(set(p)) == 3 for p in picks)
    assert 5 not in sorted(range(6), key=lambda i: -items[i].sum())[:3]  # top-P never takes it
    # an event takes agent 5 when item 0 comes first (1 in 40): ~3 in 40 of the draws of 3 parents
    assert 0.02 < np.mean([5 in p for p in picks]) < 0.2


def test_lexicase_is_top_one_on_a_dominant_agent_and_reproducible():
    items = np.array([[1, 1, 1, 1], [1, 0, 1, 0], [0, 1, 0, 0], [0, 0, 0, 1]], dtype=float)
    for k in range(50):  # agent 0 is at least as good on every case: every first event ends on it
        assert lexicase_parents(items, 1, np.random.default_rng(k), keys=KEYS[:len(items)]) == [0]
    a = lexicase_parents(items, 3, np.random.default_rng(7), keys=KEYS[:len(items)])
    assert a == lexicase_parents(items, 3, np.random.default_rng(7), keys=KEYS[:len(items)]) and a[0] == 0 and len(set(a)) == 3


def test_lexicase_eps_keeps_the_near_best():
    scores = np.array([[0.9, 0.0], [0.85, 1.0], [0.1, 0.5]])
    # case 0 alone decides on eps 0 (agent 0); with eps 0.1 agent 1 survives it and wins case 1
    firsts = {tuple(lexicase_parents(scores, 1, np.random.default_rng(k), keys=KEYS[:len(scores)], eps=0.1)) for k in range(40)}
    assert firsts == {(1,)}
    with pytest.raises(ValueError, match="eps"):
        lexicase_parents(scores, 1, np.random.default_rng(0), keys=KEYS[:len(scores)], eps=-1)
    with pytest.raises(ValueError, match="n_parents"):
        lexicase_parents(scores, 4, np.random.default_rng(0), keys=KEYS[:len(scores)])


def test_lexicase_arm_reads_the_val_items_and_its_own_stream():
    ev = step.Evaluation(test=[{}] * 4, val=np.array([0.9, 0.8, 0.7, 0.3]), screen=np.zeros(4),
                         val_halves=[(0, 0)] * 4, consensus=[], conformity=np.array([0.9, 0.8, 0.7, 0.2]),
                         distance=np.ones((4, 4)) - np.eye(4), consensus_acc=0.0, keys=tuple(KEYS[:4]),
                         val_items=np.array([[1, 1, 0], [1, 1, 0], [1, 0, 0], [0, 0, 1]], dtype=float))
    lex = arm("lexicase", selection="lexicase")
    runs = [step.select(ev, lex, n_parents=2, lam=0.0, rng=society.selection_rng(s, "lexicase", 0)).parents
            for s in range(30)]
    assert sum(3 in p for p in runs) > 0  # the last agent overall, alone right on item 2
    assert runs[0] == step.select(ev, lex, n_parents=2, lam=0.0, rng=society.selection_rng(0, "lexicase", 0)).parents
    with pytest.raises(ValueError, match="rng"):
        step.select(ev, lex, n_parents=2, lam=0.0)
    assert arm_design("lexicase", 0.5)["selection"] == "lexicase"
    # its stream is not the breeding stream: the other arms' numbers are unchanged
    assert society.selection_rng(0, "full", 0).random() != society.generation_rng(0, "full", 0).random()


# ----------------------------------------------------------------------------- verified


def test_verified_children_train_on_verified_answers_only():
    wrong_half = {x.prompt: (x.answer if k % 2 == 0 else "9") for k, x in enumerate(INHERIT)}
    src = step.Source(parents=(0, 1), agent="m", answers=[wrong_half[x.prompt] for x in INHERIT], test={}, screen=0.5)
    plain = step.reproduce([src], [], INHERIT, child_seed=lambda c: c)[0]
    checked = step.reproduce([src], [], INHERIT, child_seed=lambda c: c, verifier=lambda o, t: o == t.answer)[0]
    assert len(plain.data) == len(INHERIT)  # the seed's: every parsed answer, right or wrong
    assert len(checked.data) == len(INHERIT) // 2
    assert all(t.answer == right(INHERIT)[t.prompt] for t in checked.data)


# ----------------------------------------------------------------------------- parameter inheritance


def _factors(rng, r, shapes):
    return {m: (torch.tensor(rng.standard_normal((r, i)), dtype=torch.float32),
                torch.tensor(rng.standard_normal((o, r)), dtype=torch.float32)) for m, (o, i) in shapes.items()}


def test_inherit_merge_is_the_merge_at_the_stated_rank(tmp_path):
    rng = np.random.default_rng(0)
    shapes = {"model.layers.0.self_attn.q_proj": (12, 10), "model.layers.0.mlp.up_proj": (20, 10)}
    merged = _factors(rng, 8, shapes)  # rank 2r = 8 (two parents of rank 4)
    publish_factors(merged, tmp_path / "merge", r=8, alpha=8)
    kept = inherit_merge(tmp_path / "merge", tmp_path / "child", rank=4, seed=1, eta=0.0)  # no mutation
    cfg = json.loads((tmp_path / "child" / "adapter_config.json").read_text())
    assert cfg["r"] == 4 and cfg["lora_alpha"] == 4
    from safetensors.torch import load_file
    sd = load_file(str(tmp_path / "child" / "adapter_model.safetensors"))
    num = den = 0.0
    for m, (a, b) in merged.items():
        dw = (b @ a).double()
        ca, cb = sd[f"base_model.model.{m}.lora_A.weight"], sd[f"base_model.model.{m}.lora_B.weight"]
        assert ca.shape == (4, shapes[m][1]) and cb.shape == (shapes[m][0], 4)
        u, s, vh = torch.linalg.svd(dw)
        best = (u[:, :4] * s[:4]) @ vh[:4]  # Eckart-Young: the best rank-4 approximation
        assert torch.allclose((cb @ ca).double(), best, atol=1e-4)
        num += float((s[:4] ** 2).sum())
        den += float((s ** 2).sum())
    assert kept == pytest.approx(num / den, rel=1e-6) and 0 < kept < 1
    # the mutation moves the kept singular values by exp(eta xi): seeded, and another seed differs
    a = inherit_merge(tmp_path / "merge", tmp_path / "m1", rank=4, seed=1)
    b = inherit_merge(tmp_path / "merge", tmp_path / "m2", rank=4, seed=1)
    c = inherit_merge(tmp_path / "merge", tmp_path / "m3", rank=4, seed=2)
    assert a == b == c == kept  # energy is measured before the mutation
    f1, f2, f3 = (load_file(str(tmp_path / d / "adapter_model.safetensors")) for d in ("m1", "m2", "m3"))
    assert all(torch.equal(f1[k], f2[k]) for k in f1)
    assert any(not torch.equal(f1[k], f3[k]) for k in f1 if ".lora_B." in k)  # sigma lives in B = U diag(sigma)


# ----------------------------------------------------------------------------- arms as config values


def test_budgets_and_designs_resolve_from_the_arm_name():
    cfg = load_file(STUDY)
    assert (resolve_arm(cfg, "full").n_inherit, resolve_arm(cfg, "full").epochs) == (240, 1)
    m = resolve_arm(cfg, "full@matched")
    assert (m.n_inherit, m.epochs, m.inherit) == (cfg["spec_train"], cfg["spec_epochs"], "distill")
    v = resolve_arm(cfg, "verified@g0")
    assert (v.g, v.inherit, v.n_inherit, v.epochs) == (0.0, "verified", 1000, 3)
    assert (resolve_arm(cfg, "full@inherit1000x1").n_inherit, resolve_arm(cfg, "full@inherit1000x1").epochs) == (1000, 1)
    sb = resolve_arm(cfg, "full@seed_budget")  # the seed's own budget: 6 merges screened, 2 epochs over 240
    assert (sb.n_inherit, sb.epochs, sb.n_candidates) == (cfg["n_inherit"], 2, 6)
    assert (cfg["epochs"], cfg["n_candidates"]) == (1, 2) and resolve_arm(cfg, "full").n_candidates == 2
    im = resolve_arm(cfg, "niche_inherit_merge")
    assert (im.selection, im.inherit, im.distills) == ("niche", "merge", False)
    assert arm_design("no_diversity", 0.5)["selection"] == "top"


def test_seed_budget_screens_six_merges_and_trains_two_epochs_in_a_run(tmp_path):
    from lib.engines.models import load_base
    from tests.test_baselines import MICRO
    cfg = validate_config({**MICRO, "experiment": "seed_budget_test", "arms": ["full", "full@seed_budget"],
                           "adapters_dir": str(tmp_path / "runs")})
    rows = society.run_experiment(cfg, folder=tmp_path / "data", base=load_base("tiny", device="cpu"))
    cost = rows[rows.metric.str.startswith("cost_") & (rows.generation == 1)].pivot_table(
        index="arm", columns="metric", values="value")
    s = cfg
    children = (s.generations - 1) * s.agents
    # screening: each child's pair is screened on 6 merges instead of 2 (val evaluations per merge: 1)
    assert cost.loc["full@seed_budget", "cost_val_evals"] - cost.loc["full", "cost_val_evals"] == children * (6 - 2)
    # training: 2 epochs over the same inherited answers instead of 1 (the founders' steps are shared)
    founders = s.agents * society.lora_steps(s.spec_train, s.spec_epochs, s.batch_size)
    child_steps = lambda a: cost.loc[a, "cost_train_steps"] - founders  # noqa: E731
    assert child_steps("full@seed_budget") == 2 * child_steps("full") > 0


@pytest.mark.parametrize("bad, says", [
    ("inherit_merge@matched", "trains no child"),
    ("niche@g0", "contradicts g = 0"),
    ("lexicase@g0", "contradicts g = 0"),
    ("full@matched@matched", "each modifier once"),
    ("full@matched@seed_budget", "each modifier once"),  # two budgets
    ("inherit_merge@seed_budget", "trains no child"),
    ("full@inherit2x1", "not allowed"),         # fewer answers than families
    ("full@inheritx3", "expected"),
    ("verifed", "not allowed"),
])
def test_unknown_or_contradictory_arms_are_refused_before_any_work(bad, says):
    cfg = load_layers(STUDY)
    with pytest.raises(ConfigError, match=says):
        validate_config({**cfg, "arms": [bad], "arm_seeds": {}})


def test_a_bad_arm_exits_2_with_one_line(tmp_path):
    import subprocess
    import sys
    cfg = load_layers(STUDY)
    path = tmp_path / "bad.yaml"
    import yaml
    path.write_text(yaml.safe_dump({**cfg, "arms": ["inherit_merge@matched"], "arm_seeds": {}}))
    p = subprocess.run([sys.executable, "-m", "lib.experiment", str(path)], capture_output=True, text=True)
    assert p.returncode == 2 and "trains no child" in p.stderr and "Traceback" not in p.stderr
    assert len(p.stderr.strip().splitlines()) == 1


def test_arm_seeds_give_some_arms_more_seeds():
    cfg = load_file(STUDY)
    runs = runs_of(cfg)
    assert sum(a == "full" for a, _ in runs) == 32 and sum(a == "verified" for a, _ in runs) == 16
    assert sum(a == "full@g1" for a, _ in runs) == 8
    with pytest.raises(ConfigError, match="arm_seeds"):
        validate_config({**load_file(STUDY), "arm_seeds": {"nonesuch": [1]}})


# ----------------------------------------------------------------------------- the selection pool


def test_selection_pool_is_disjoint_from_val_screening_and_test_and_changes_no_other_pool():
    cfg = s = load_file(STUDY)
    for seed in (0, 5):
        p = pools.pools_for(s, seed)
        sel = {x.prompt for x in p.selection}
        assert len(sel) == s.n_select * len(s.families)
        assert not sel & {x.prompt for x in p.val} and not sel & {x.prompt for x in p.test}
        assert all(pools.part_of(x) == "val" for x in p.selection)
        without = pools.pools_for(society.validate_config({**cfg, "n_select": 0}), seed)
        assert without.val == p.val and without.test == p.test and without.selection == []
    assert "selection" in pools.audit(cfg, 0, pretraining=False)


# ----------------------------------------------------------------------------- fair baselines


def _choice_rows(arm, key, values):
    import pandas as pd
    return pd.DataFrame({"arm": arm, "seed": range(len(values)), "metric": f"baseline_{key}", "value": values,
                         "generation": 7, "agent": 0})


def test_grid_choices_name_a_mode_at_an_open_edge():
    import pandas as pd
    from lib.society.studies.study.comparisons import grid_choices
    from lib.society.baselines import grid_of
    grids = grid_of("wide")
    rows = pd.concat([
        _choice_rows("baseline_task_arithmetic", "lambda", [1.0, 1.0, 1.0, 0.3]),  # the top of the grid: open
        _choice_rows("baseline_ties", "density", [1.0, 1.0, 0.8, 1.0]),            # density 1: a natural bound
        _choice_rows("baseline_ties", "lambda", [0.5, 0.5, 1.0, 0.25]),            # inside
        _choice_rows("baseline_dare_ties", "lambda", [1.5, 1.5, 1.5, 0.5]),        # the largest λ: open
        _choice_rows("baseline_dare_ties", "density", [0.2, 0.2, 0.5, 1.0]),       # the lowest density: open
    ])
    t = grid_choices(rows, grids).set_index(["baseline", "key"])
    assert t.loc[("baseline_task_arithmetic", "lambda"), "at_open_edge"]
    assert not t.loc[("baseline_ties", "density"), "at_open_edge"]
    assert not t.loc[("baseline_ties", "lambda"), "at_open_edge"]
    assert t.loc[("baseline_dare_ties", "lambda"), "mode"] == 1.5 and t.loc[("baseline_dare_ties", "lambda"), "at_open_edge"]
    assert t.loc[("baseline_dare_ties", "density"), "at_open_edge"]
    assert t.loc[("baseline_task_arithmetic", "lambda"), "seeds_at_mode"] == 3
    # the wide grids reach λ -> 0 (the bare base) and density 1, past the old grids' ends that were chosen
    assert min(grids["baseline_task_arithmetic"]["lambda"]) == min(grids["baseline_ties"]["lambda"]) == 0.02
    assert max(grids["baseline_ties"]["density"]) == 1.0
    low = pd.concat([_choice_rows("baseline_ties", "lambda", [0.02, 0.02, 0.05])])
    assert not grid_choices(low, grids)["at_open_edge"].any()  # λ's lowest, 0.02: the natural bound λ = 0


def _grid_rows(arm, seed, scores):
    """A baseline's ``val_grid_*`` rows: ``scores`` maps (density, λ) to a val accuracy."""
    import pandas as pd
    from lib.society.baselines import grid_key
    return pd.DataFrame([{"arm": arm, "seed": seed, "generation": 7, "agent": 0,
                          "metric": grid_key({"density": d, "lambda": lam}), "value": v}
                         for (d, lam), v in scores.items()])


def test_a_choice_at_a_grid_end_that_is_a_tie_is_not_an_open_edge():
    """Density 0.2 chosen on every seed: where the whole grid's val accuracies show 0.2 tied with
    inner densities (the merge at λ = 0.02 is nearly the base), the end is the grid order's tie break,
    not the optimum; where 0.2 alone is best on most seeds, it is an open edge."""
    import pandas as pd
    from lib.society.studies.study.comparisons import grid_choices, grid_optima
    from lib.society.baselines import grid_of, parse_grid_key, grid_key
    grids = {"baseline_ties": grid_of("wide")["baseline_ties"]}
    chosen = pd.concat([_choice_rows("baseline_ties", "density", [0.2] * 4),
                        _choice_rows("baseline_ties", "lambda", [0.02] * 4)])
    tied = {(d, 0.02): 0.6 for d in (0.2, 0.5, 0.8, 1.0)} | {(0.2, 1.5): 0.3}
    rows = pd.concat([chosen, *[_grid_rows("baseline_ties", s, tied) for s in range(4)]])
    t = grid_choices(rows, grids).set_index("key")
    assert t.loc["density", "mode"] == 0.2 and t.loc["density", "seeds_tied"] == 4
    assert t.loc["density", "seeds_edge_optimum"] == 0 and not t.loc["density", "at_open_edge"]
    assert grid_optima(rows, "baseline_ties", "density")[0] == {0.2, 0.5, 0.8, 1.0}
    strict = {(0.2, 0.02): 0.7, (0.5, 0.02): 0.6, (1.0, 0.02): 0.6}
    rows = pd.concat([chosen, *[_grid_rows("baseline_ties", s, strict if s < 3 else tied) for s in range(4)]])
    t = grid_choices(rows, grids).set_index("key")
    assert t.loc["density", "seeds_edge_optimum"] == 3 and t.loc["density", "at_open_edge"]
    assert parse_grid_key(grid_key({"density": 0.8, "lambda": 1.5})) == {"density": 0.8, "lambda": 1.5}
    assert parse_grid_key("val_overall") is None


def test_a_run_still_in_progress_enters_no_comparison():
    import pandas as pd
    from lib.society.studies.study.comparisons import complete_runs, population_scores
    rows = pd.DataFrame([{"arm": a, "seed": s, "generation": g, "agent": 0, "metric": m, "value": v,
                          "selected": False, "conformity": 0.0, "score": 0.0}
                         for a, s, last in (("full", 0, 7), ("full", 1, 3))
                         for g in range(last + 1) for m, v in (("test_overall", 0.1 * g), ("val_overall", 0.5))])
    done = complete_runs(rows, generations=8)
    assert set(zip(done.arm, done.seed)) == {("full", 0)}
    pop = population_scores(done)
    assert list(pop.index) == [0] and pop.loc[0, "full"] == pytest.approx(0.7)


def test_a_run_config_is_checked_and_hashed_once_at_the_door(monkeypatch):
    """run_experiment reads one SocietyConfig, checked and frozen at the door (load); below it nothing
    re-validates or re-hashes."""
    import dataclasses
    from lib.core import config as core_config_mod
    from lib.core.config import ConfigError, config_hash
    from lib.society.config import SocietyConfig, core_config, load
    cfg = load("society_study", "smoke")
    raw = dict(cfg)  # the plain, complete config
    assert cfg.hash == config_hash(core_config(raw)) == config_hash(dict(cfg.core))  # a plain dict's identity
    assert SocietyConfig.of(cfg) is cfg and validate_config(cfg) is cfg
    with pytest.raises(TypeError):
        cfg["agents"] = 3  # read-only
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.agents = 3
    cfg["arms"].append("nonesuch")  # a key's plain value is a copy
    assert "nonesuch" not in cfg.arms and isinstance(cfg.arms, tuple)
    calls = {"validate": 0, "hash": 0}
    real_validate, real_hash = core_config_mod.validate, core_config_mod.hashlib.sha256

    def counting_validate(*a, **k):
        calls["validate"] += 1
        return real_validate(*a, **k)

    def counting_hash(*a, **k):
        calls["hash"] += 1
        return real_hash(*a, **k)
    monkeypatch.setattr(core_config_mod, "validate", counting_validate)
    monkeypatch.setattr(core_config_mod.hashlib, "sha256", counting_hash)
    for _ in range(5):
        config_hash(cfg.core), validate_config(cfg), cfg.hash, society.data_complete(cfg, Path("/nonexistent"))
    assert calls == {"validate": 0, "hash": 0}
    assert dict(cfg) == raw and validate_config(raw) == cfg
    with pytest.raises(ConfigError, match="agents"):
        validate_config({**raw, "agents": "six"})
