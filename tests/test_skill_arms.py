"""The skill-combining study's arms (configs/society_crossover/): crossover, crossover_archive, merge_repair and
crossover@gold on fake agents; their budgets and checks from the config; distill-all and multitask at one child's
steps on fake founders; training from an adapter (merge_repair's start) on the tiny base; a run that resumes."""
from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from lib.core.tasks import Task
from lib.engines.batched import Job, train_loras
from lib.engines.lora import LoraSpec, publish_factors, read_factors
from lib.society import children as kids, generation as step
from lib.society import run as society_run
from lib.society.baselines import Founders, run_baseline
from lib.society.config import Arm, arm_design, load_file, resolve_arm, validate_config
from lib.society.crossover import BASE, Archive, verified_union
from lib.society.rows import RowWriter
from tests.test_baselines import MICRO
from tests.test_society_steps import INHERIT, POOLS, VAL, FakeAgents, right

CPU = "configs/society_crossover/cpu.yaml"


def verifier(o, t):
    return o == t.answer


def arm(name, **kw):
    base = {"label": name, "name": name, "g": 0.5, "merge": None, "diversity": True, "elitism": 0,
            "inherit": "crossover", "n_inherit": len(INHERIT), "epochs": 3}
    return Arm(**{**base, **kw})


def half(tasks, keep):
    """Right on the tasks whose index ``keep`` accepts, "9" elsewhere."""
    return {x.prompt: (x.answer if keep(k) else "9") for k, x in enumerate(tasks)}


@pytest.fixture
def society():
    """a0 solves the even inheritance prompts, a1 the first six, a2 all of them (but is never a parent)."""
    return FakeAgents({"a0": half(INHERIT, lambda k: k % 2 == 0), "a1": half(INHERIT, lambda k: k < 6),
                       "a2": right(INHERIT), FakeAgents.BASE: {}})


def generation(archive=None, parents=(0, 1)):
    n = 3
    ev = step.Evaluation(test=[{}] * n, val=np.zeros(n), screen=np.zeros(n), val_halves=[(0, 0)] * n, consensus=[],
                         conformity=np.zeros(n), distance=np.ones((n, n)) - np.eye(n), consensus_acc=0.0,
                         val_items=np.zeros((n, len(VAL))))
    sel = step.Selection(scores=np.zeros(n), parents=list(parents), elites=[])
    return step.Generation(t=0, names=["a0", "a1", "a2"], pools=POOLS, ev=ev, sel=sel, archive=archive)


def test_a_crossover_child_trains_on_the_union_of_its_parents_verified_answers_and_nothing_else(society):
    src = step.breed(society, generation(), arm("crossover"), rng=np.random.default_rng(0), n_children=2,
                     verifier=verifier, families=("lists", "arith"))
    assert society.merges == []  # no merge is made, none screened
    union = verified_union(INHERIT, [[society.table[n].get(x.prompt, "wrong") for x in INHERIT] for n in ("a0", "a1")],
                           verifier)
    solved = [k for k in range(len(INHERIT)) if k % 2 == 0 or k < 6]
    assert [x.prompt for x in union] == [INHERIT[k].prompt for k in solved]
    for s in src:
        assert s.parents == (0, 1) and s.teachers == ("a0", "a1") and s.data == union and s.agent == ""
    child = step.reproduce(src, [], INHERIT, child_seed=lambda c: c)[0]
    assert child.data == union and not child.degenerate
    # a2 knows every answer, but it is no parent: none of its answers (prompts 7 and 9) enters
    assert not {x.prompt for x in child.data} & {INHERIT[k].prompt for k in (7, 9)}
    # every teacher answered once, in one call
    assert len(society.calls) == 1 and society.calls[0][0] == ["a0", "a1"]


def test_the_gold_control_trains_on_the_gold_answers_of_the_same_prompts(society):
    src = step.breed(society, generation(), arm("crossover@gold", inherit="gold"), rng=np.random.default_rng(0),
                     n_children=1, verifier=verifier, families=("lists", "arith"))
    assert src[0].data == list(INHERIT) and society.calls == []


def test_archive_elites_teach_where_neither_parent_is_above_the_base(society):
    cells = ("lists_familiar", "arith_familiar")
    arc = Archive(cells, base={c: 0.5 for c in cells}, elite={"lists_familiar": "a2", "arith_familiar": BASE},
                  score={"lists_familiar": 1.0, "arith_familiar": 0.5})
    src = step.breed(society, generation(arc), arm("crossover_archive", archive=True), rng=np.random.default_rng(0),
                     n_children=1, verifier=verifier, families=("lists", "arith"))
    # both parents score 0 on every val cell, so both cells' elites join: a2 and the bare base
    assert src[0].teachers == ("a0", "a1", "a2", BASE)
    assert society.calls[0][0] == ["a0", "a1", "a2", FakeAgents.BASE]
    assert [x.prompt for x in src[0].data] == [x.prompt for x in INHERIT]  # a2's verified answers are in


def test_merge_repair_is_the_screened_merge_repaired_on_its_parents_verified_answers(society):
    repair = arm("merge_repair", merge="exact", inherit="repair", n_candidates=2)
    src = step.breed(society, generation(), repair, rng=np.random.default_rng(0), n_children=1, verifier=verifier,
                     families=("lists", "arith"))
    assert [m[2] for m in society.merges] == ["t0c0k0", "t0c0k1"]  # screened merges, as inherit_merge
    assert src[0].agent.startswith("t0c0k") and src[0].teachers == ("a0", "a1")
    parents = [[society.table[n].get(x.prompt, "wrong") for x in INHERIT] for n in ("a0", "a1")]
    assert src[0].data == verified_union(INHERIT, parents, verifier)  # the parents' answers, not the merge's


def test_merge_repair_trains_from_the_merge_on_disk(tmp_path, monkeypatch):
    out = tmp_path / "gen1"
    rng = np.random.default_rng(0)
    merged = {"model.layers.0.self_attn.q_proj": (torch.tensor(rng.standard_normal((4, 8)), dtype=torch.float32),
                                                   torch.tensor(rng.standard_normal((8, 4)), dtype=torch.float32))}
    publish_factors(merged, out / "agent0", r=4, alpha=4)  # as save_inherited_merges leaves it
    seen = {}

    def fake_train(base, jobs, paths, **kw):
        seen["jobs"], seen["paths"] = list(jobs), list(paths)
        seen["start"] = (jobs[0].init / "adapter_model.safetensors").read_bytes()
        return paths

    monkeypatch.setattr(kids, "train_loras", fake_train)
    data = [Task("lists", f"p{k}", "1") for k in range(10)]
    src = step.Source(parents=(0, 1), agent="m", answers=[], test={}, screen=0.5, data=data, teachers=("a", "b"))
    ch = step.reproduce([src], [], [], child_seed=lambda c: 7)
    before = (out / "agent0" / "adapter_model.safetensors").read_bytes()
    cfg = validate_config({**MICRO, "arms": ["merge_repair"], "lora": {"r": 4, "alpha": 8}})
    dirs = kids.train_children(None, ch, [tmp_path / "p0"], out, arm=resolve_arm(cfg, "merge_repair"), cfg=cfg)
    (job,) = seen["jobs"]
    assert job.init == out / "start0" and job.tasks == data and job.seed == 7
    assert seen["start"] == before and seen["paths"] == [out / "agent0"] and dirs == [out / "agent0"]
    assert not (out / "start0").exists()  # the start is dropped once trained


@pytest.mark.parametrize("trainer", ["batched", "sequential"])
def test_training_from_an_adapter_starts_from_its_update(tmp_path, trainer):
    from lib.engines.models import load_base
    from lib.engines.merge import delta_weights
    from lib.engines.lora import load_adapter, remove_adapter
    base = load_base("tiny", device="cpu")
    rng = np.random.default_rng(1)
    mods = {m: tuple(mod.weight.shape) for m, mod in base.model.named_modules()
            if m.endswith(("self_attn.q_proj", "self_attn.v_proj")) and isinstance(mod, torch.nn.Linear)}
    start = {m: (torch.tensor(rng.standard_normal((4, i)) * 0.05, dtype=torch.float32),
                 torch.tensor(rng.standard_normal((o, 4)) * 0.05, dtype=torch.float32)) for m, (o, i) in mods.items()}
    publish_factors(start, tmp_path / "start", r=4, alpha=4)  # scaling 1, as an inherited merge
    spec = LoraSpec(r=4, alpha=8, targets=("q_proj", "v_proj"), lr=0.0)  # lr 0: training moves nothing
    tasks = [Task("lists", "sort 3 1 2 =", "1 2 3")] * 4
    train_loras(base, [Job(tasks, 0, 1, init=tmp_path / "start")], [tmp_path / "out"], trainer=trainer, spec=spec)
    assert json.loads((tmp_path / "out" / "adapter_config.json").read_text())["lora_alpha"] == 8
    for name, folder in (("x1", "start"), ("x2", "out")):
        load_adapter(base, name, tmp_path / folder)
    da, db = delta_weights(base, "x1"), delta_weights(base, "x2")
    assert da and set(da) == set(db) and all(torch.allclose(da[m], db[m], atol=1e-6) for m in da)  # the same update
    for name in ("x1", "x2"):
        remove_adapter(base, name)
    with pytest.raises(Exception, match="rank 4"):
        read_factors(tmp_path / "start", r=8, alpha=16)


def test_the_new_arms_resolve_from_the_config():
    cfg = load_file(CPU)
    c = resolve_arm(cfg, "crossover")
    assert (c.inherit, c.merge, c.n_inherit, c.epochs, c.archive) == ("crossover", None, 1000, 3, False)
    assert c.from_teachers and not c.from_merge and c.trains and not c.distills
    assert resolve_arm(cfg, "crossover_archive").archive
    r = resolve_arm(cfg, "merge_repair")
    assert (r.inherit, r.merge, r.n_inherit, r.epochs) == ("repair", "exact", 250, 3) and r.from_merge and r.trains
    g = resolve_arm(cfg, "crossover@gold")
    assert (g.inherit, g.n_inherit, g.label) == ("gold", 1000, "crossover@gold")
    assert resolve_arm(cfg, "niche_crossover").selection == "niche"
    with pytest.raises(ValueError, match="@gold replaces"):
        arm_design("full@gold", 0.5)
    assert cfg.seeds_of("crossover") == list(range(16)) and cfg.seeds_of("crossover@gold") == list(range(8))


def test_a_repair_share_that_leaves_no_prompt_per_family_is_refused_before_any_work():
    from lib.core.config import ConfigError
    with pytest.raises(ConfigError, match="repair_share"):
        validate_config({**MICRO, "arms": ["merge_repair"], "repair_share": 0.01})


def _founders(table, tasks=(), pools=None):
    trained = []

    def train(data, round_):
        trained.append((list(data), round_))
        table[f"m{len(trained)}"] = {}
        return f"m{len(trained)}", len(data)

    cfg = validate_config({**MICRO, "arms": ["baseline_distill_all"], "agents": 2, "spec_train": 4})
    f = Founders(base=None, names=["f0", "f1"], s=cfg, val=[], seed=0, tasks=list(tasks), verifier=verifier,
                 answer=lambda n, ps: [table[n].get(p, "wrong") for p in ps], train=train,
                 inherit=lambda t: (pools or {}).get(t, INHERIT))
    return f, trained


def test_distill_all_trains_on_every_founders_and_the_bases_verified_answers():
    table = {"f0": half(INHERIT, lambda k: k == 0), "f1": half(INHERIT, lambda k: k == 1),
             "__base__": half(INHERIT, lambda k: k == 2)}
    f, trained = _founders(table)
    res = run_baseline("baseline_distill_all", f)
    (data, _), = trained
    assert [x.prompt for x in data] == [INHERIT[k].prompt for k in (0, 1, 2)] and res.chosen == {"inherit_n": 3}


def test_iterated_distill_all_adds_the_last_rounds_model_as_a_teacher():
    table = {"f0": half(INHERIT, lambda k: k == 0), "f1": {}, "__base__": {}}
    f, trained = _founders(table)
    original = f.train

    def train(data, round_):  # each round's model solves one more prompt
        name, n = original(data, round_)
        table[name] = half(INHERIT, lambda k: k <= round_ + 1)
        return name, n

    f = Founders(**{**f.__dict__, "train": train, "s": validate_config({**MICRO, "arms": ["baseline_distill_all"],
                                                                       "generations": 3})})
    res = run_baseline("baseline_distill_all@iterated", f)
    assert [len(d) for d, _ in trained] == [1, 2] and [r for _, r in trained] == [0, 1]  # 2 breeding generations
    assert res.chosen == {"inherit_n_r0": 1, "inherit_n_r1": 2} and res.train_steps == 3


def test_multitask_at_one_childs_steps_takes_an_even_share_of_each_founders_gold_tasks():
    tasks = [Task("lists", f"a{k}", "1") for k in range(4)] + [Task("arith", f"b{k}", "2") for k in range(4)]
    f, trained = _founders({}, tasks)
    run_baseline("baseline_multitask@steps", f)
    (data, _), = trained
    assert [x.prompt for x in data] == ["a0", "a1", "b0", "b1"]  # spec_train 4 = 2 founders x 2


def test_birth_rows_of_a_crossover_child_name_its_teachers_and_no_merge():
    data = [Task("lists", "sort 1 =", "1")] * 8
    src = step.Source(parents=(0, 1), agent="", answers=[], test={}, screen=float("nan"), data=data,
                      teachers=("a0", "a1", BASE))
    (ch,) = step.reproduce([src], [], [], child_seed=lambda c: 1)
    metrics = [r["metric"] for r in RowWriter("x", "crossover", 0).births(1, [ch])]
    assert metrics == ["parents", "pair_rank", "inherit_n", "teachers_n", "inherit_n_lists_familiar"]


def test_a_crossover_archive_run_resumes_to_the_same_rows(tmp_path):
    from lib.engines.models import load_base
    from lib.society.shard_job import Interrupted
    base = load_base("tiny", device="cpu")
    cfg = validate_config({**MICRO, "experiment": "archive_test", "arms": ["crossover_archive", "merge_repair"],
                           "generations": 3, "adapters_dir": str(tmp_path / "runs")})
    whole = society_run.run_experiment(cfg, folder=tmp_path / "a", base=base)
    cfg2 = validate_config({**cfg, "adapters_dir": str(tmp_path / "runs2")})
    with pytest.raises(Interrupted):
        society_run.run_experiment(cfg2, folder=tmp_path / "b", base=base, interrupt_after=1)
    resumed = society_run.run_experiment(cfg2, folder=tmp_path / "b", base=base)
    pd_cols = ["arm", "generation", "agent", "metric", "value"]
    assert whole[pd_cols].equals(resumed[pd_cols])
    progress = json.loads((tmp_path / "b" / "crossover_archive_s0.progress.json").read_text())
    assert set(progress["archive"]["cells"]) and progress["float_path"]["torch_cpu_capability"]
    assert (whole.metric == "teachers_n").any() and (whole.metric.str.startswith("archive_val_")).any()
