"""The tiny character-level base: tokenizer, deterministic build, loading errors."""
from __future__ import annotations


import pytest
import torch

from lib.engines import models
from lib.society import tiny_base


def test_tokenizer_round_trip_and_left_padding(tmp_path):
    tok = models.make_char_tokenizer()
    assert len(tok) == 99
    text = "sort 7 3 9 = 3 7 9 | rev bgd = dgb | add 23+41 = 64 ~!"
    ids = tok(text, add_special_tokens=False)["input_ids"]
    assert len(ids) == len(text)  # one token per character
    assert tok.decode(ids) == text
    batch = tok(["ab", "abcd"], padding=True, add_special_tokens=False)
    assert batch["input_ids"][0][:2] == [tok.pad_token_id] * 2  # left padding
    assert batch["attention_mask"][0] == [0, 0, 1, 1]
    tok.save_pretrained(tmp_path)
    from transformers import AutoTokenizer
    tok2 = AutoTokenizer.from_pretrained(tmp_path)
    assert tok2(text, add_special_tokens=False)["input_ids"] == ids
    assert tok2.decode([tok.bos_token_id] + ids + [tok.eos_token_id], skip_special_tokens=True) == text


def test_short_build_is_bit_identical():
    a = tiny_base.build_tiny(steps=3, save=False, progress=False).model.state_dict()
    b = tiny_base.build_tiny(steps=3, save=False, progress=False).model.state_dict()
    assert a.keys() == b.keys()
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert sum(v.numel() for k, v in a.items() if "lm_head" not in k) == 1_062_400


def _build_info() -> dict:
    return models.read_build_info(models.TINY_DIR)


def test_rebuild_is_bit_identical_on_this_machine(tmp_path):
    """Bit-identity is a same-machine property: two builds here, same (seed, batch, lr) as the
    committed base but 30 steps, give identical saved weights. (Another CPU runs other float
    kernels: e.g. ATEN_CPU_CAPABILITY=default vs avx2 changes every weight after 30 steps, so the
    committed weights are never compared bit for bit with a rebuild.)"""
    from safetensors.torch import load_file
    info = _build_info()
    kw = {k: info[k] for k in ("seed", "batch", "lr") if k in info}
    tiny_base.build_tiny(tmp_path / "a", steps=30, progress=False, **kw)
    tiny_base.build_tiny(tmp_path / "b", steps=30, progress=False, **kw)
    a, b = load_file(tmp_path / "a" / "model.safetensors"), load_file(tmp_path / "b" / "model.safetensors")
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


# Greedy answers of fixed weights flip on another CPU only where two logits are within float noise
# (~1e-6): the committed base must reproduce its recorded accuracy within 3 answers in 100 per family
# (measured here: identical under ATEN_CPU_CAPABILITY=avx2 and =default).
ACCURACY_MARGIN_ANSWERS = 3


def test_committed_base_reproduces_its_recorded_accuracy():
    """Cross-machine behaviour: the committed base's per-family accuracy on the held-out tasks of
    build_info.json is within ACCURACY_MARGIN_ANSWERS answers per family of what it records."""
    info = _build_info()
    rec, spec = info["test_accuracy"], {**models.TINY_TEST_TASKS, **info.get("test_tasks", {})}
    got = tiny_base.test_accuracy(models.load_base("tiny", device="cpu"), **spec)
    tol = ACCURACY_MARGIN_ANSWERS / spec["n_per_family"] + 1e-9
    assert set(got) == set(rec)
    off = {k: (round(got[k], 3), rec[k]) for k in rec if abs(got[k] - rec[k]) > tol}
    assert not off, f"accuracy (got, recorded) beyond ±{tol:.3f}: {off}"


def test_committed_tiny_base_loads_and_knows_the_format():
    from lib.engines.generate import generate
    base = models.load_base("tiny", device="cpu")
    assert base.info["params"] == 1_062_400 and not base.chat
    out = generate(base, ["sort 3 1 2 =", "add 1+2 ="])
    assert all(o and o.replace(" ", "").isalnum() for o in out)  # a bare answer, no prompt echo


def test_missing_base_is_a_clear_error(tmp_path):
    with pytest.raises(models.BaseModelError, match="could not load base_model"):
        models.load_base(str(tmp_path / "no_such_model"))
    old = models.TINY_DIR
    try:
        models.TINY_DIR = tmp_path / "absent"
        with pytest.raises(models.BaseModelError, match="make tiny-base"):
            models.load_base("tiny")
    finally:
        models.TINY_DIR = old


# ----------------------------------------------------------------------------- adapters (lib.engines.lora)


def test_adapters_are_seeded_without_touching_the_callers_rng():
    from lib.engines import lora
    base = models.load_base("tiny", device="cpu")
    torch.manual_seed(123)
    expected = torch.rand(4)
    torch.manual_seed(123)
    lora.new_adapter(base, "a", r=4, alpha=8, seed=5)  # wraps the base in peft first (ensure_peft)
    lora.new_adapter(base, "b", r=4, alpha=8, seed=5)
    lora.new_adapter(base, "c", r=4, alpha=8, seed=6)
    assert torch.equal(torch.rand(4), expected)  # the caller's random stream went on as if nothing happened
    A = {n: [p for p in lora.adapter_params(base, n) if p.shape[0] == 4] for n in "abc"}  # lora_A: (r, in)
    assert A["a"] and all(torch.equal(x, y) for x, y in zip(A["a"], A["b"]))  # the seed still fixes A
    assert not all(torch.equal(x, y) for x, y in zip(A["a"], A["c"]))


def test_failed_training_leaves_the_model_as_it_found_it(monkeypatch):
    from lib.engines import lora
    from lib.core.tasks import make_tasks
    base = models.load_base("tiny", device="cpu")
    lora.new_adapter(base, "t", r=4, alpha=8, seed=0)
    real, calls = lora.encode_batch, []

    def failing(*args, **kw):  # the second batch fails (e.g. out of memory)
        calls.append(1)
        if len(calls) > 1:
            raise RuntimeError("boom")
        return real(*args, **kw)
    monkeypatch.setattr(lora, "encode_batch", failing)
    with pytest.raises(RuntimeError, match="boom"):
        lora.train_adapter(base, "t", make_tasks("lists", 16, seed=1), spec=lora.LoraSpec(batch_size=8))
    assert len(calls) == 2 and not base.model.training
    assert not any(p.requires_grad for p in lora.adapter_params(base, "t"))
    assert base.model.active_adapter == lora.IDLE
