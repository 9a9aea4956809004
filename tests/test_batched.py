"""The batched trainer (lib.engines.batched) against the sequential reference (lib.engines.lora), on the tiny base.

Tolerance: the trained factors agree within ``ATOL`` (absolute, float32; the factors' entries are of
order 0.01-0.1). On AVX-512 machines they are bit-identical (the tiny base's rows do not depend on the
other rows of a batch nor on padding after them); on an AVX2 CPU (torch's CPU capability AVX2, measured
2026-12-02) the differently shaped products of one forward over several adapters round differently, and
after 10 AdamW steps the factors differ by up to 1.9e-5, which is what the tolerance allows (a different
seed moves them by more than 1e-3: ``test_seeds_are_respected``).
"""
from __future__ import annotations

import pytest
import torch

from lib.core.errors import UserError
from lib.engines import lora
from lib.engines.batched import ROWS_ENV, Job, rows_per_pass, schedule, train_loras, train_many
from lib.engines.models import load_base
from lib.core.tasks import make_tasks

ATOL = 1e-4
SPEC = lora.LoraSpec(r=8, alpha=16, targets=lora.ALL_LINEAR, lr=2e-3, batch_size=8)


@pytest.fixture(scope="module")
def base():
    return load_base("tiny", device="cpu")


@pytest.fixture(scope="module")
def jobs():
    """Three adapters of unequal data (40, 12 and 28 tasks: 5, 2 and 4 batches per epoch) and epochs."""
    return [Job(make_tasks("lists", 40, seed=1), 11, 2), Job(make_tasks("strings", 12, seed=2), 12, 1),
            Job(make_tasks("arith", 28, seed=3), 13, 2)]


def sequential(base, job: Job) -> tuple[dict, dict]:
    """The reference: one peft adapter trained alone, its factors read back."""
    lora.new_adapter(base, "ref", seed=job.seed, r=SPEC.r, alpha=SPEC.alpha, targets=SPEC.targets)
    info = lora.train_adapter(base, "ref", job.tasks, epochs=job.epochs, seed=job.seed, spec=SPEC)
    inner = base.model.get_base_model()
    f = {m: (mod.lora_A["ref"].weight.detach().clone(), mod.lora_B["ref"].weight.detach().clone())
         for m, mod in inner.named_modules() if hasattr(mod, "lora_A") and "ref" in mod.lora_A}
    lora.remove_adapter(base, "ref")
    return f, info


def max_diff(f: dict, g: dict) -> float:
    assert f.keys() == g.keys()
    return max(float((f[m][i] - g[m][i]).abs().max()) for m in f for i in (0, 1))


@pytest.fixture(scope="module")
def reference(base, jobs):
    return [sequential(base, j) for j in jobs]


def test_batched_equals_sequential_factors_steps_and_loss(base, jobs, reference):
    out = train_many(base, jobs, max_rows=None, spec=SPEC)  # every adapter in one forward per step
    for (fr, ir), (fb, ib) in zip(reference, out):
        assert ib["steps"] == ir["steps"]
        assert max_diff(fr, fb) <= ATOL
        assert ib["loss"] == pytest.approx(ir["loss"], abs=1e-5)
    # and it trained something: B starts at zero
    assert all(float(b.abs().max()) > 0 for _, b in out[0][0].values())


def test_an_adapter_whose_data_runs_out_stops_at_its_own_last_step(base, jobs, reference):
    """The 12-task adapter has 2 steps of 10: in the group it ends as trained alone (AdamW would move
    it on a zero gradient if it kept stepping), and as the reference."""
    alone = train_many(base, [jobs[1]], max_rows=None, spec=SPEC)[0]
    grouped = train_many(base, jobs, max_rows=None, spec=SPEC)[1]
    assert grouped[1]["steps"] == alone[1]["steps"] == len(schedule(12, epochs=1, seed=12, batch_size=8)) == 2
    assert max_diff(alone[0], grouped[0]) <= ATOL
    assert max_diff(reference[1][0], grouped[0]) <= ATOL


def test_chunked_steps_equal_one_pass(base, jobs):
    one = train_many(base, jobs, max_rows=None, spec=SPEC)
    for rows in (8, 16):  # one adapter per pass; two adapters' rows per pass
        chunked = train_many(base, jobs, max_rows=rows, spec=SPEC)
        for (fa, _), (fb, _) in zip(one, chunked):
            assert max_diff(fa, fb) <= ATOL


def test_seeds_are_respected(base, jobs):
    a = train_many(base, [jobs[1]], spec=SPEC)[0][0]
    b = train_many(base, [Job(jobs[1].tasks, 99, 1)], spec=SPEC)[0][0]
    assert max_diff(a, b) > 1e-3  # another initialisation and data order: another adapter
    assert max_diff(a, train_many(base, [jobs[1]], spec=SPEC)[0][0]) == 0.0  # the same seed: the same adapter


def test_folders_of_both_trainers_hold_the_same_factors(base, jobs, tmp_path):
    from safetensors.torch import load_file
    got = {}
    for trainer in ("sequential", "batched"):
        dirs = train_loras(base, jobs[:2], [tmp_path / trainer / f"a{k}" for k in range(2)], trainer=trainer, spec=SPEC)
        got[trainer] = [load_file(str(lora.check_adapter_dir(d) / lora.FILES[1])) for d in dirs]
    for s, b in zip(got["sequential"], got["batched"]):
        assert s.keys() == b.keys()
        assert max(float((s[k] - b[k]).abs().max()) for k in s) <= ATOL
    with pytest.raises(ValueError, match="unknown trainer"):
        train_loras(base, jobs[:1], [tmp_path / "x"], trainer="parallel", spec=SPEC)
    with pytest.raises(TypeError, match="spec or its fields"):
        train_loras(base, jobs[:1], [tmp_path / "x"], spec=SPEC, r=8)


def test_rows_per_pass_setting(base, monkeypatch):
    monkeypatch.delenv(ROWS_ENV, raising=False)
    assert rows_per_pass(base, 16) == 16  # a CPU: one adapter per pass
    monkeypatch.setenv(ROWS_ENV, "0")
    assert rows_per_pass(base, 16) is None
    monkeypatch.setenv(ROWS_ENV, "48")
    assert rows_per_pass(base, 16) == 48
    monkeypatch.setenv(ROWS_ENV, "many")
    with pytest.raises(UserError, match=ROWS_ENV):
        rows_per_pass(base, 16)


def test_bf16_base_trains_float32_factors_as_peft_does(jobs):
    """A bf16 base (the GPU path's dtype, on the CPU): the factors stay float32 and match peft's."""
    b16 = load_base("tiny", device="cpu", dtype="bf16")
    ref, _ = sequential(b16, jobs[1])
    (got, _), = train_many(b16, [jobs[1]], spec=SPEC)
    assert {a.dtype for a, _ in got.values()} == {torch.float32}
    assert max_diff(ref, got) <= 1e-4  # bf16 activations: a looser tolerance than float32's
