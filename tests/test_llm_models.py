"""The tiny character-level base: tokenizer, deterministic build, loading errors."""
from __future__ import annotations


import pytest
import torch

from lib.llm import models


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
    a = models.build_tiny(steps=3, save=False, progress=False).model.state_dict()
    b = models.build_tiny(steps=3, save=False, progress=False).model.state_dict()
    assert a.keys() == b.keys()
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert sum(v.numel() for k, v in a.items() if "lm_head" not in k) == 1_062_400


@pytest.mark.slow
def test_rebuild_gives_committed_weights(tmp_path):
    from safetensors.torch import load_file
    import json
    info = json.loads((models.TINY_DIR / "build_info.json").read_text())
    models.build_tiny(tmp_path, steps=info["steps"], seed=info["seed"], progress=False)
    a, b = load_file(models.TINY_DIR / "model.safetensors"), load_file(tmp_path / "model.safetensors")
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def test_committed_tiny_base_loads_and_knows_the_format():
    from lib.llm.generate import generate
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
        with pytest.raises(models.BaseModelError, match="build-tiny"):
            models.load_base("tiny")
    finally:
        models.TINY_DIR = old
