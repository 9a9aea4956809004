"""The lineage study's arms and baselines (configs/society_lineage/) on fake agents and fake founders: a
``continue`` child starts from one parent's LoRA (not a fresh one), trains only on its parents' verified union, and
is the candidate better on the screening pool; ``@higher`` continues the higher-scored parent only; the ``@lineage``
baseline trains for exactly the configured steps on every generation's verified union; the frontier's steps; the
checks of the config; and a small run on the tiny base whose rows say what happened."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from lib.core.config import ConfigError
from lib.core.tasks import Task
from lib.engines.batched import schedule
from lib.society import children as kids, generation as step
from lib.society.arms import frontier_k, known_baseline
from lib.society.baselines import Founders, frontier_steps, run_baseline
from lib.society.config import arm_design, load_file, resolve_arm, validate_config
from lib.society.crossover import verified_union
from tests.test_baselines import MICRO
from tests.test_skill_arms import arm, generation, half, society, verifier  # noqa: F401  (society: a fixture)
from tests.test_society_steps import INHERIT, FakeAgents

CPU = "configs/society_lineage/cpu.yaml"


def child(index, parents, n=8):
    data = [Task("lists", f"p{k}", "1") for k in range(n)]
    src = step.Source(parents=parents, agent="", answers=[], test={}, screen=float("nan"), data=data,
                      teachers=("a", "b"))
    return step.Child(index=index, parents=parents, elite=False, data=data, seed=10 + index, source=src)


def test_a_continue_child_is_taught_its_parents_verified_union_and_no_merge_is_made(society):  # noqa: F811
    src = step.breed(society, generation(), arm("continue", inherit="continue"), rng=np.random.default_rng(0),
                     n_children=2, verifier=verifier, families=("lists", "arith"))
    assert society.merges == []
    union = verified_union(INHERIT, [[society.table[n].get(x.prompt, "wrong") for x in INHERIT] for n in ("a0", "a1")],
                           verifier)
    assert all(s.data == union and s.teachers == ("a0", "a1") for s in src)
    # a2 solves every prompt but is no parent: nothing of its own enters
    assert not {x.prompt for x in src[0].data} & {INHERIT[k].prompt for k in (7, 9)}


def test_continue_starts_from_both_parents_or_from_the_higher_scored_one():
    kids_ = [child(0, (0, 1)), child(1, (2, 0)), child(2, (1, 1)),
             step.Child(index=3, parents=(1, 1), elite=True, data=[], seed=0),
             child(4, (0, 1), n=3)]  # degenerate: too few answers, a copy
    scores = np.array([0.2, 0.5, 0.5])
    assert step.continue_starts(kids_, scores, "both") == {0: (0, 1), 1: (2, 0), 2: (1,)}
    # higher: the parent with the higher score (1 over 0, 2 over 0); a tie keeps the pair's first parent
    assert step.continue_starts(kids_, scores, "higher") == {0: (1,), 1: (2,), 2: (1,)}
    assert step.continue_starts([child(0, (2, 1))], scores, "higher") == {0: (2,)}
    with pytest.raises(ValueError, match="both"):
        step.continue_starts(kids_, scores, "all")


def test_the_candidate_better_on_the_screening_pool_wins_and_ties_are_drawn():
    rng = np.random.default_rng(0)
    assert step.pick_candidates([[0.4, 0.6], [0.9, 0.1], [0.5]], rng) == [(1, 1), (0, 1), (0, 1)]
    draws = {step.pick_candidates([[0.5, 0.5]], np.random.default_rng(s))[0] for s in range(20)}
    assert draws == {(0, 2), (1, 2)}  # a tie is not always resolved towards the first parent


def test_continue_candidates_train_from_their_parents_adapters_on_the_union(tmp_path, monkeypatch):
    seen = {}

    def fake_train(base, jobs, paths, **kw):
        seen["jobs"], seen["paths"] = list(jobs), list(paths)
        for p in paths:
            p.mkdir(parents=True)
            (p / "who").write_text(p.name)
        return paths

    monkeypatch.setattr(kids, "train_loras", fake_train)
    parents = [tmp_path / f"gen0/agent{i}" for i in range(3)]
    cfg = validate_config({**MICRO, "arms": ["continue"]})
    a = resolve_arm(cfg, "continue")
    ch = [replace(child(0, (0, 2)), starts=(0, 2)), replace(child(1, (1, 1)), starts=(1,))]
    out = tmp_path / "gen1"
    dirs = kids.train_children(None, ch, parents, out, arm=a, cfg=cfg)
    assert dirs == [out / "agent0", out / "agent1"]
    # one job per candidate, each from its parent's folder (never a fresh LoRA), on the child's data and seed
    assert [j.init for j in seen["jobs"]] == [parents[0], parents[2], parents[1]]
    assert all(j.tasks == ch[0].data and j.seed == 10 for j in seen["jobs"][:2]) and seen["jobs"][2].seed == 11
    assert all(j.epochs == a.epochs == cfg.spec_epochs for j in seen["jobs"])
    assert seen["paths"] == [kids.candidate_dir(out, 0, 0), kids.candidate_dir(out, 0, 2), kids.candidate_dir(out, 1, 1)]
    # the winner becomes the child, the other candidate is deleted
    (out / "agent0").mkdir()  # left by an interrupted run of the same generation: replaced, not an error
    kids.keep_candidate(out, 0, (0, 2), 1)
    assert (out / "agent0" / "who").read_text() == "cand0p2" and not kids.candidate_dir(out, 0, 0).exists()


def test_the_new_arms_resolve_and_bad_ones_are_refused_before_any_work():
    cfg = load_file(CPU)
    c = resolve_arm(cfg, "continue")
    assert (c.inherit, c.merge, c.n_inherit, c.epochs, c.candidates) == ("continue", None, 1000, 3, "both")
    assert c.continues and c.from_teachers and not c.from_merge and c.trains and not c.distills
    assert resolve_arm(cfg, "continue@higher").candidates == "higher"
    assert resolve_arm(cfg, "continue_archive").archive
    assert cfg.lineage_steps == 1011 and cfg.seeds_of("continue") == list(range(16))
    assert cfg.seeds_of("baseline_multitask@k8") == list(range(8))
    with pytest.raises(ValueError, match="@higher"):
        arm_design("crossover@higher", 0.5)
    with pytest.raises(ConfigError, match="lineage_steps"):
        validate_config({**MICRO, "arms": ["baseline_distill_all@lineage"], "lineage_steps": 0})
    with pytest.raises(ConfigError, match="baseline_multitask@kx"):
        validate_config({**MICRO, "arms": ["baseline_multitask@kx"]})
    assert frontier_k("baseline_multitask@k0.25") == 0.25 and frontier_k("baseline_soup@k2") is None
    assert frontier_k("baseline_distill_all@k0") is None and known_baseline("baseline_distill_all@k8")


def test_a_step_budget_cuts_the_epochs_batches_there():
    full = schedule(10, epochs=3, seed=4, batch_size=4)
    cut = schedule(10, epochs=1, seed=4, batch_size=4, steps=7)
    assert len(cut) == 7 and all(np.array_equal(a, b) for a, b in zip(cut, full))  # a prefix of the same order
    assert len(schedule(10, epochs=1, seed=4, batch_size=4, steps=2)) == 2


def _founders(table, *, lineage_steps=5, generations=3, selection=()):
    trained = []

    def train(data, round_, steps=None, init=None):
        trained.append({"data": list(data), "steps": steps, "init": init})
        return "m", steps

    cfg = validate_config({**MICRO, "arms": ["baseline_distill_all@lineage"], "agents": 2, "spec_train": 32,
                           "spec_epochs": 3, "batch_size": 16, "generations": generations,
                           "lineage_steps": lineage_steps})
    pools = {t: INHERIT[4 * t:4 * t + 4] for t in range(generations - 1)}
    f = Founders(base=None, names=["f0", "f1"], s=cfg, val=[], seed=0, tasks=[Task("lists", "g", "1")] * 40,
                 verifier=verifier, answer=lambda n, ps: [table[n].get(p, "wrong") for p in ps], train=train,
                 inherit=lambda t: pools[t], dirs=["dir0", "dir1"], selection=list(selection))
    return f, trained


def test_the_lineage_baseline_trains_its_configured_steps_on_every_generations_verified_union():
    table = {"f0": half(INHERIT, lambda k: k in (0, 5)), "f1": half(INHERIT, lambda k: k == 6),
             "__base__": half(INHERIT, lambda k: k == 1)}
    f, trained = _founders(table, lineage_steps=7)
    res = run_baseline("baseline_distill_all@lineage", f)
    (t,) = trained
    # generation 0's prompts 0-3 and generation 1's 4-7: every teacher's verified answers, of both generations
    assert [x.prompt for x in t["data"]] == [INHERIT[k].prompt for k in (0, 1, 5, 6)]
    assert t["steps"] == 7 == res.train_steps and t["init"] is None and res.chosen == {"inherit_n": 4}


def test_continue_all_continues_the_founder_best_on_the_selection_pool():
    sel = INHERIT[8:10]
    table = {"f0": {}, "f1": half(INHERIT, lambda k: k == 8), "__base__": half(INHERIT, lambda k: k == 0)}
    f, trained = _founders(table, lineage_steps=9, selection=sel)
    res = run_baseline("baseline_continue_all", f)
    (t,) = trained
    assert t["init"] == "dir1" and t["steps"] == 9 and res.chosen["founder"] == 1 and res.val_evals == 2
    with pytest.raises(ValueError, match="selection pool"):
        run_baseline("baseline_continue_all", _founders(table)[0])


def test_a_frontier_point_trains_k_founders_steps():
    f, trained = _founders({"f0": {}, "f1": {}, "__base__": {}})
    assert frontier_steps(f.s, 1) == 3 * 2  # 32 tasks / 16 per batch x 3 epochs
    run_baseline("baseline_multitask@k0.5", f)
    run_baseline("baseline_distill_all@k4", f)
    assert [t["steps"] for t in trained] == [3, 24]
    assert len(trained[0]["data"]) == 40 and trained[1]["data"] == []  # the gold tasks; the (empty) verified union


@pytest.mark.slow
def test_a_small_lineage_run_on_the_tiny_base_writes_what_happened(tmp_path):
    from lib.engines.models import load_base
    from lib.society import run as society_run
    base = load_base("tiny", device="cpu")
    cfg = validate_config({**MICRO, "experiment": "lineage_test", "n_select": 4, "lineage_steps": 5,
                           "arms": ["continue", "continue@higher", "baseline_distill_all@lineage",
                                    "baseline_continue_all", "baseline_multitask@k0.5"],
                           "adapters_dir": str(tmp_path / "runs")})
    rows = society_run.run_experiment(cfg, folder=tmp_path / "data", base=base)
    born = rows[(rows.generation == 1) & (rows.agent >= 0)].pivot_table(index=["arm", "agent"], columns="metric",
                                                                         values="value")
    c = born.loc["continue"]
    assert c["continue_from"].notna().all()
    # the child is the candidate with the better screening accuracy (the first parent's on a tie is not forced)
    pa, pb = (c["parents"] // 100).astype(int), (c["parents"] % 100).astype(int)
    winner = np.where(c["continue_from"] == pa, c["continue_screen_a"], c["continue_screen_b"])
    assert (winner >= np.fmax(c["continue_screen_a"], c["continue_screen_b"])).all()
    assert set(c["continue_from"]) <= set(pa) | set(pb)
    assert "continue_screen_a" not in born.loc["continue@higher"].dropna(axis=1, how="all")
    last = rows[rows.generation == cfg.generations - 1].pivot_table(index="arm", columns="metric", values="value",
                                                                     aggfunc="first")
    founders = cfg.agents * kids.lora_steps(cfg.spec_train, cfg.spec_epochs, cfg.batch_size)
    children = c["inherit_n"].map(lambda n: kids.lora_steps(n, cfg.spec_epochs, cfg.batch_size))
    assert last.loc["continue", "cost_train_steps"] == founders + 2 * children.sum()  # both candidates count
    assert last.loc["baseline_distill_all@lineage", "cost_train_steps"] == founders + 5
    assert last.loc["baseline_continue_all", "cost_train_steps"] == founders + 5
    assert last.loc["baseline_multitask@k0.5", "cost_train_steps"] == frontier_steps(cfg, 0.5)
    # the progress file records each generation's work: verifier calls, tokens generated and trained, by phase
    import json
    work = json.loads((tmp_path / "data" / "continue_s0.progress.json").read_text())["gen_counts"]
    assert len(work) == cfg.generations and all(w["verifier_calls"] > 0 for w in work)
    assert work[0]["train"]["train_steps"] == 2 * children.sum() and work[0]["evaluate"]["gen_tokens"] > 0
    assert work[0]["screen"]["gen_tokens"] > 0  # the candidates answered the screening pool
