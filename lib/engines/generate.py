"""Greedy generation for a population of adapters on one base: one batched call for all agents.

``generate_agents(base, prompts, names)`` answers ``prompts`` with every adapter in ``names`` in
batched ``generate`` calls whose rows carry their own adapter (peft mixed-adapter batches,
``adapter_names=[...]`` one name per row). ``generate_agents_loop`` is the seed's reference
(``set_adapter`` per agent); both give the same answers (tests/test_society.py on the tiny base, tests/test_smollm2.py on
SmolLM2).
Decoding: greedy, left padding, ``max_new_tokens`` sized to the task answers.
"""
from __future__ import annotations

from typing import Callable, Sequence

from lib.engines.models import PREFILL

Counter = Callable[..., None]  # counter(prompt_tokens=…, gen_tokens=…): work reported to a PhaseTimer

BASE_ROW = "__base__"  # peft's name for "no adapter" in a mixed batch


def left_pad(base, prompt_ids: list[list[int]]):
    """Token ids left-padded to the longest prompt, and the attention mask, on the base's device."""
    import torch
    pad = base.tok.pad_token_id
    L = max(map(len, prompt_ids))
    ids = torch.full((len(prompt_ids), L), pad, dtype=torch.long)
    att = torch.zeros((len(prompt_ids), L), dtype=torch.long)
    for i, p in enumerate(prompt_ids):
        ids[i, L - len(p):] = torch.tensor(p)
        att[i, L - len(p):] = 1
    return ids.to(base.device), att.to(base.device)


def decode_new(base, new) -> list[str]:
    """The generated tokens as text. A chat base's reply starts in the pre-filled "Answer:"
    (lib.engines.models.Base.prompt_ids): it is part of what the model said, so answer_of reads the
    reply as the tagged answer it is."""
    texts = base.tok.batch_decode(new, skip_special_tokens=True)
    return [PREFILL + t for t in texts] if base.chat else texts


def encode_prompts(base, prompts: Sequence[str], batch_size: int):
    """``prompts`` sorted by token length and cut into batches: ``(index lists, [(ids, att), ...])``."""
    enc = [base.prompt_ids(p) for p in prompts]
    order = sorted(range(len(enc)), key=lambda k: (len(enc[k]), k))
    chunks = [order[s:s + batch_size] for s in range(0, len(order), batch_size)]
    return chunks, [left_pad(base, [enc[k] for k in c]) for c in chunks]


def _batch_generate(base, prompt_ids: list[list[int]], adapter_names: list[str] | None,
                    max_new_tokens: int, counter: Counter | None = None) -> list[str]:
    import torch
    ids, att = left_pad(base, prompt_ids)
    kw = {"adapter_names": adapter_names} if adapter_names is not None else {}
    pad = base.tok.pad_token_id
    with torch.inference_mode():
        out = base.model.generate(input_ids=ids, attention_mask=att, do_sample=False, num_beams=1,
                                  max_new_tokens=max_new_tokens, pad_token_id=pad,
                                  eos_token_id=base.tok.eos_token_id, temperature=None, top_p=None,
                                  top_k=None, **kw)
    new = out[:, ids.shape[1]:]
    if counter is not None:  # work for the phase timer: prefill tokens, and new tokens up to EOS
        eos = new == base.tok.eos_token_id
        n_new = torch.where(eos.any(1), eos.int().argmax(1) + 1, new.shape[1])
        counter(prompt_tokens=int(att.sum()), gen_tokens=int(n_new.sum()), gen_calls=1,
                decode_row_steps=new.shape[0] * new.shape[1])
    return decode_new(base, new)


def generate(base, prompts: Sequence[str], *, adapter: str | None = None, hard: bool = False,
             batch_size: int = 512, max_new_tokens: int | None = None, counter: Counter | None = None) -> list[str]:
    """Greedy outputs of one model (the active adapter, ``adapter``, or the bare base) on ``prompts``."""
    if adapter is not None:
        return generate_agents(base, prompts, [adapter], hard=hard, batch_size=batch_size,
                               max_new_tokens=max_new_tokens, counter=counter)[0]
    mnt = max_new_tokens or base.max_new_tokens(hard)
    enc = [base.prompt_ids(p) for p in prompts]
    out: list[str] = []
    for s in range(0, len(enc), batch_size):
        out += _batch_generate(base, enc[s:s + batch_size], None, mnt, counter)
    return out


def generate_rows(base, prompts: Sequence[str], adapter_names: Sequence[str], *, hard: bool = False,
                  batch_size: int = 512, max_new_tokens: int | None = None, counter: Counter | None = None) -> list[str]:
    """Row-wise mixed batch: output ``k`` is adapter ``adapter_names[k]`` on ``prompts[k]``.

    Rows are sorted by prompt length before batching (less padding) and returned in input order.
    """
    if len(prompts) != len(adapter_names):
        raise ValueError(f"{len(prompts)} prompts for {len(adapter_names)} adapter names")
    mnt = max_new_tokens or base.max_new_tokens(hard)
    cache: dict[str, list[int]] = {}
    for p in prompts:
        if p not in cache:
            cache[p] = base.prompt_ids(p)
    enc = [cache[p] for p in prompts]
    order = sorted(range(len(enc)), key=lambda k: (len(enc[k]), k))
    out = [""] * len(enc)
    for s in range(0, len(order), batch_size):
        idx = order[s:s + batch_size]
        texts = _batch_generate(base, [enc[k] for k in idx], [adapter_names[k] for k in idx], mnt, counter)
        for k, t in zip(idx, texts):
            out[k] = t
    return out


def generate_agents(base, prompts: Sequence[str], names: Sequence[str], **kw) -> list[list[str]]:
    """``outs[i][j]``: adapter ``names[i]`` on ``prompts[j]``, all agents in shared batches."""
    prompts = list(prompts)
    flat = generate_rows(base, prompts * len(names), [n for n in names for _ in prompts], **kw)
    M = len(prompts)
    return [flat[i * M:(i + 1) * M] for i in range(len(names))]


def generate_agents_loop(base, prompts: Sequence[str], names: Sequence[str], *, hard: bool = False,
                         batch_size: int = 512, max_new_tokens: int | None = None) -> list[list[str]]:
    """The seed's way: ``set_adapter(name)`` then generate, one agent after another (reference)."""
    outs = []
    for n in names:
        base.model.set_adapter(n)
        outs.append(generate(base, prompts, hard=hard, batch_size=batch_size, max_new_tokens=max_new_tokens))
    return outs
