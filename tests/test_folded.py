"""The folded engine (lib.engines.folded) answers as the peft path does, on the tiny base.

Both compute the same updates in another order of the same sums, so answers may differ where two
tokens' logits tie to the last bit; the stated tolerance is at most 1 % of the answers (measured here:
all identical, and the phase benchmark finds identical rows).
"""
from __future__ import annotations

import pytest
import torch

from lib.engines import lora
from lib.engines.agents import PeftAgents, make_agents
from lib.engines.folded import FoldedAgents, greedy_decode
from lib.engines.generate import generate, left_pad
from lib.engines.merge import delta_weights
from lib.society.pools import draw
from lib.core.tasks import FAMILIES, make_tasks

TOLERANCE = 0.01


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    from lib.engines.models import load_base
    base = load_base("tiny", device="cpu")
    root = tmp_path_factory.mktemp("folded")
    dirs = []
    for i, f in enumerate(FAMILIES):
        d = root / f
        lora.train_lora_on_tasks(base, make_tasks(f, 64, seed=50_000 + i), d, epochs=1, seed=i,
                                 spec=lora.LoraSpec(targets=lora.ALL_LINEAR, lr=2e-3))
        dirs.append(d)
    prompts = [t.prompt for f in FAMILIES for t in draw(f, "test", 25, 3, distinct=True)]
    return base, dirs, prompts


def agree(a, b) -> float:
    pairs = [(x, y) for xa, xb in zip(a, b) for x, y in zip(xa, xb)]
    return sum(x == y for x, y in pairs) / len(pairs)


def test_greedy_decode_equals_generate_on_the_bare_base(setup):
    base, _, prompts = setup
    enc = [base.prompt_ids(p) for p in prompts]
    with torch.inference_mode(), base.model.disable_adapter() if hasattr(base.model, "disable_adapter") else torch.no_grad():
        new = greedy_decode(base.model, enc, max_new_tokens=base.max_new_tokens(False), eos=base.tok.eos_token_id,
                            pad=base.tok.pad_token_id)
    mine = base.tok.batch_decode(new, skip_special_tokens=True)
    ids, att = left_pad(base, enc)
    assert ids.shape[0] == len(prompts) and att.sum() == sum(map(len, enc))
    with base.model.disable_adapter() if hasattr(base.model, "disable_adapter") else torch.no_grad():
        ref = generate(base, prompts, batch_size=len(prompts))
    assert mine == ref


@pytest.mark.parametrize("method", ["exact", "linear", "ties"])
def test_folded_answers_as_peft_for_agents_and_merges(setup, method):
    base, dirs, prompts = setup
    peft, folded = PeftAgents(base, hard=False, batch_size=512), FoldedAgents(base, hard=False, batch_size=512)
    names = ["ag0", "ag1", "ag2"]
    for n, d in zip(names, dirs):
        peft.load(n, d)
        folded.load(n, d)
    for agents in (peft, folded):
        agents.merge(["ag0", "ag1"], [0.7, 0.6] if method == "ties" else [0.3, 0.7], "m", method)
    a, b = peft.answer(names + ["m", PeftAgents.BASE], prompts), folded.answer(names + ["m", FoldedAgents.BASE], prompts)
    assert agree(a, b) >= 1 - TOLERANCE
    assert len({tuple(x) for x in b}) >= 3  # the agents really differ
    peft.forget()
    assert lora.adapters(base) == []
    # the base's weights are restored after folding
    w0 = {n: p.detach().clone() for n, p in base.model.named_parameters() if "lora_" not in n}
    folded.answer(["m"], prompts[:4])
    assert all(torch.equal(w0[n], p) for n, p in base.model.named_parameters() if "lora_" not in n)


def test_a_saved_merge_is_the_same_update(setup, tmp_path):
    base, dirs, _ = setup
    folded = FoldedAgents(base, hard=False, batch_size=512)
    folded.load("a", dirs[0])
    folded.load("b", dirs[1])
    for method in ("exact", "ties"):
        folded.merge(["a", "b"], [0.4, 0.6], f"m{method}", method)
        folded.save(f"m{method}", tmp_path / method)
        lora.load_adapter(base, "back", tmp_path / method)
        got = delta_weights(base, "back")
        for mod, (a, b, s) in folded.factors[f"m{method}"].items():
            want = a if b is None else s * (b @ a)
            key = next(k for k in got if k.endswith(mod))
            assert torch.allclose(got[key], want, atol=1e-5), (method, mod)
        lora.remove_adapter(base, "back")


def test_identical_merges_and_questions_are_computed_once(setup):
    base, dirs, prompts = setup
    folded = FoldedAgents(base, hard=False, batch_size=512)
    folded.load("a", dirs[0])
    folded.load("b", dirs[1])
    folded.merge(["a", "b"], [0.5, 0.5], "m1", "exact")
    folded.merge(["a", "b"], [0.5, 0.5], "m2", "exact")
    folded.merge(["a", "b"], [0.2, 0.8], "m3", "exact")
    assert folded.same == {"m2": "m1"} and folded.factors["m2"] is folded.factors["m1"]
    calls = []
    real = folded.folded
    folded.folded = lambda name: calls.append(name) or real(name)
    first = folded.answer(["m1", "m2", "m3"], prompts)
    again = folded.answer(["m2"], prompts)
    assert calls == ["m1", "m3"] and first[0] == first[1] == again[0]
    folded.load("a", dirs[2])  # a new 'a': merges of the old one are no longer the same
    folded.merge(["a", "b"], [0.5, 0.5], "m4", "exact")
    assert "m4" not in folded.same


def test_the_engine_is_chosen_by_dtype(setup):
    base, _, _ = setup
    assert isinstance(make_agents(base, engine="auto", hard=False, batch_size=8), FoldedAgents)
    assert isinstance(make_agents(base, engine="peft", hard=False, batch_size=8), PeftAgents)
    with pytest.raises(ValueError, match="engine"):
        make_agents(base, engine="fast", hard=False, batch_size=8)
