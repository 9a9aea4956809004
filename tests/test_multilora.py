"""The multi-LoRA engine (lib.engines.multilora) answers as the peft path does.

On the tiny base (float32), a mixed batch of three trained adapters, their exact, linear and TIES merges
(ranks 2r, r and dense) and the bare base gives peft's greedy answers (:class:`PeftAgents`, the
reference) — up to the folded engine's tolerance for last-bit ties of two tokens' logits (measured here:
all identical); the batched update equals the naive per-row ``s · B A x``; a bf16 base runs the same code.
On SmolLM2 (``slow``): two random adapters, an exact merge and the base on a few prompts, against peft.
"""
from __future__ import annotations

import pytest
import torch

from lib.engines import lora
from lib.engines.agents import ENGINES, PeftAgents, make_agents
from lib.engines.multilora import MultiLoraAgents, Stack
from test_folded import TOLERANCE, agree, setup  # noqa: F401 — the tiny base and three trained adapters
from test_smollm2 import needs_smollm2  # smol and two_adapters: conftest.py (SmolLM2 loaded once with test_smollm2.py)

MERGES = {"m_exact": ([0.3, 0.7], "exact"), "m_linear": ([0.6, 0.4], "linear"), "m_ties": ([0.7, 0.6], "ties")}


def _both(base, dirs, batch_size: int):
    """The reference and the new engine with the same agents: three adapters and their three merges."""
    peft = PeftAgents(base, hard=False, batch_size=batch_size)
    multi = MultiLoraAgents(base, hard=False, batch_size=batch_size)
    names = [f"ag{i}" for i in range(len(dirs))]
    for agents in (peft, multi):
        for n, d in zip(names, dirs):
            agents.load(n, d)
        for m, (w, method) in MERGES.items():
            agents.merge(["ag0", "ag1"], w, m, method)
    return peft, multi, names + list(MERGES) + [PeftAgents.BASE]


def test_mixed_batch_answers_as_peft(setup):  # noqa: F811
    base, dirs, prompts = setup
    peft, multi, names = _both(base, dirs, batch_size=64)  # several batches, each mixing agents
    a, b = peft.answer(names, prompts), multi.answer(names, prompts)
    assert agree(a, b) >= 1 - TOLERANCE, f"{agree(a, b):.3f} of {len(names) * len(prompts)} answers agree"
    assert len({tuple(x) for x in b}) >= 5  # the agents really differ
    assert b[-1] == peft.answer([PeftAgents.BASE], prompts)[0]  # the base rows are the bare base's
    peft.forget()
    assert lora.adapters(base) == []
    # the hooks are gone and the weights untouched: the bare model answers as before
    w0 = {n: p.detach().clone() for n, p in base.model.named_parameters()}
    assert multi.answer(["ag2"], prompts[:5]) == [b[2][:5]]
    assert all(torch.equal(w0[n], p) for n, p in base.model.named_parameters())
    assert all(not m._forward_hooks for m in base.model.modules())


def test_each_row_gets_its_own_update():
    """``Stack.delta`` against the naive sum: row ``i`` of agent ``k`` gets ``s_k B_k A_k x_i`` (ranks 2, 3
    and 5 padded to 5; a dense update; the bare base gets nothing)."""
    g = torch.Generator().manual_seed(0)
    n_in, n_out = 16, 12

    def f(r, s):
        return {"mod": (torch.randn(r, n_in, generator=g), torch.randn(n_out, r, generator=g), s)}
    agents = [f(2, 2.0), None, f(5, 1.0), {"mod": (torch.randn(n_out, n_in, generator=g), None, 1.0)}, f(3, 0.5)]
    stack = Stack(agents, device="cpu", dtype=torch.float64)
    assert set(stack.dense["mod"]) == {3} and stack.low["mod"][0].shape == (5, 5, n_in)
    who = torch.tensor([4, 0, 1, 3, 2, 0, 3])
    x = torch.randn(len(who), 3, n_in, generator=g, dtype=torch.float64)
    stack.use(who)
    got = stack.delta("mod", x)
    for i, k in enumerate(who.tolist()):
        if agents[k] is None:
            want = torch.zeros(3, n_out, dtype=torch.float64)
        else:
            a, b, s = agents[k]["mod"]
            w = a if b is None else s * (b @ a)
            want = x[i] @ w.double().T
        assert torch.allclose(got[i], want, atol=1e-12), (i, k)
    stack.use(torch.tensor([1, 1]))
    assert stack.delta("mod", x[:2]) is None  # only the bare base: no update computed
    stack.use(who)
    with pytest.raises(RuntimeError, match="routed"):
        stack.delta("mod", x[:3])


def test_merges_and_answers_are_computed_once(setup):  # noqa: F811
    base, dirs, prompts = setup
    multi = MultiLoraAgents(base, hard=False, batch_size=512)
    for name, d in zip("ab", dirs):
        multi.load(name, d)
    for name in ("m1", "m2"):  # the same merge twice: one agent
        multi.merge(["a", "b"], [0.5, 0.5], name, "exact")
    calls = []
    real = multi._generate
    multi._generate = lambda agents, ps: calls.append(list(agents)) or real(agents, ps)
    first = multi.answer(["m1", "m2", "a"], prompts[:6])
    again = multi.answer(["m2", "b"], prompts[:6])
    assert calls == [["m1", "a"], ["b"]] and first[0] == first[1] == again[0]


@pytest.mark.slow
def test_a_bf16_base_answers_as_peft_in_bf16(setup):  # noqa: F811
    """The GPU's dtype on the CPU: factors in float32, the update cast to bf16 and added (peft's rule)."""
    from lib.engines.models import load_base
    _, dirs, prompts = setup
    base = load_base("tiny", device="cpu", dtype="bf16")
    peft, multi, names = _both(base, dirs, batch_size=128)
    names = [n for n in names if n != "m_ties"]  # peft's TIES-SVD at full rank in bf16 is another update
    a, b = peft.answer(names, prompts), multi.answer(names, prompts)
    assert next(base.model.parameters()).dtype == torch.bfloat16
    assert agree(a, b) >= 0.95, f"{agree(a, b):.3f}"  # bf16 sums in another order: a few ties break apart
    assert len({tuple(x) for x in b}) >= 4


def test_the_engine_is_named_or_refused(setup):  # noqa: F811
    base, _, _ = setup
    assert "multilora" in ENGINES
    assert isinstance(make_agents(base, engine="multilora", hard=False, batch_size=8), MultiLoraAgents)
    with pytest.raises(ValueError, match="auto, folded, peft, multilora"):
        make_agents(base, engine="punica", hard=False, batch_size=8)


@needs_smollm2
@pytest.mark.slow
def test_smollm2_mixed_batch_answers_as_peft(smol, two_adapters, tmp_path, monkeypatch):
    """Two random rank-4 adapters, their exact merge (rank 8) and the base, 3 prompts, 8 new tokens."""
    from lib.core.tasks import FAMILIES, make_tasks
    monkeypatch.setattr(smol, "max_new_tokens", lambda hard: 8)
    dirs = [lora.save_adapter(smol, n, tmp_path / n) for n in two_adapters]
    prompts = [make_tasks(f, 1, seed=7)[0].prompt for f in FAMILIES]
    peft = PeftAgents(smol, hard=False, batch_size=64)
    multi = MultiLoraAgents(smol, hard=False, batch_size=64)
    for agents in (peft, multi):
        agents.load("s0", dirs[0])
        agents.load("s1", dirs[1])
        agents.merge(["s0", "s1"], [0.4, 0.6], "sm", "exact")
    names = ["s0", "s1", "sm", PeftAgents.BASE]
    a, b = peft.answer(names, prompts), multi.answer(names, prompts)
    peft.forget()
    assert a == b, (a, b)
    assert len({tuple(x) for x in b}) >= 2


@pytest.mark.slow
def test_the_gpu_benchmark_runs_its_micro_config(tmp_path, capsys):
    """``benchmarks/gpu_society.py --micro``: every run times every phase (train once per dtype), all answer
    the same questions, and the runs of one dtype agree with each other (the engines' answers)."""
    import importlib.util
    import json
    from lib.core.paths import REPO_ROOT
    spec = importlib.util.spec_from_file_location("gpu_society", REPO_ROOT / "benchmarks" / "gpu_society.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    with pytest.raises(ValueError, match="ENGINE:DTYPE"):
        bench.parse_runs("multilora:fp16")
    assert bench.parse_runs("peft:bf16,multilora:fp32:512") == [("peft", "bf16", None), ("multilora", "fp32", 512)]
    assert bench.main(["--micro", "--out", str(tmp_path / "micro.json"), "--device", "cpu"]) == 0
    rec = json.loads((tmp_path / "micro.json").read_text())
    runs = {(r["engine"], r["dtype"], r["batch"]): r for r in rec["runs"]}
    batch = bench.MICRO["gen_batch"]
    assert list(runs) == [("peft", "bf16", batch), ("multilora", "bf16", batch), ("multilora", "bf16", 2048),
                          ("multilora", "fp32", batch), ("folded", "fp32", batch)]
    assert len({r["answers"] for r in runs.values()}) == 1 and rec["runs"][0]["answers"] > 100
    for (engine, dtype, _), r in runs.items():
        phases = {p["phase"] for p in r["phases"]}
        assert {"load", "evaluate", "screen", "inherit"} <= phases
        assert ("train" in phases) == (r is rec["runs"][0] or r is rec["runs"][3])  # once per dtype
    for key, twin, share in ((("multilora", "bf16", batch), "peft bf16", 0.95), (("folded", "fp32", batch),
                             "multilora fp32", 0.99), (("multilora", "bf16", 2048), "peft bf16", 0.95)):
        same, total = runs[key]["same_as_dtype_twin"]["all"]
        assert runs[key]["same_as_dtype_twin"]["run"].startswith(twin) and same >= share * total, key
    assert "same as peft bf16" in capsys.readouterr().out


SOCIETY = {"experiment": "society_multilora", "kind": "llm_society_v2", "scale": "smoke", "base_model": "tiny",
           "dtype": "fp32", "families": ["lists", "strings"], "agents": 3, "generations": 2,
           "arms": ["full", "sex_linear"], "n_test": 4, "n_val": 4, "n_conf": 6, "n_inherit": 24, "n_candidates": 2,
           "epochs": 1, "n_parents": 2, "spec_train": 16, "spec_epochs": 1, "seed": 0, "seeds": [0],
           "lora": {"r": 8, "alpha": 16}}


@pytest.mark.slow
def test_gpu_run_with_multilora_writes_the_rows_of_the_folded_engine(tmp_path):
    """The society (exact and linear merges, two generations) through ``gpu_run --engine multilora`` writes the
    rows the folded engine writes (up to the tolerance; measured here: 224 of 224 values equal), and its timings
    name the engine."""
    import json
    from lib.engines.models import load_base
    from lib.society import gpu_run, run as society
    base = load_base("tiny", device="cpu", dtype="fp32")
    rows = {}
    for engine in ("folded", "multilora"):
        cfg = society.validate_config({**SOCIETY, "adapters_dir": str(tmp_path / f"runs_{engine}")})
        res = gpu_run.run_budgeted(cfg, base=base, folder=tmp_path / engine, budget_s=1e9, engine=engine,
                                   log=lambda s: None)
        assert res["done"] and res["generations"] == 4
        rows[engine] = society.load_rows(cfg, tmp_path / engine)
        timings = [json.loads(x) for x in (tmp_path / engine / gpu_run.TIMINGS).read_text().splitlines()]
        assert {t["engine"] for t in timings} == {engine}
    key = ["arm", "seed", "generation", "agent", "metric"]
    a, b = (rows[e].sort_values(key).reset_index(drop=True) for e in ("folded", "multilora"))
    assert len(a) > 50 and a[key].equals(b[key])
    assert (a.value.fillna(-1) == b.value.fillna(-1)).mean() >= 0.99


def test_gpu_run_refuses_an_unknown_engine(capsys):
    from lib.society import gpu_run
    with pytest.raises(SystemExit):
        gpu_run.main(["--engine", "punica", "--budget-s", "0"])
    assert "multilora" in capsys.readouterr().err
