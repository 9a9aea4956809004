"""Fast agents for a float32 base: each agent's LoRA update folded into the weights, one agent at a time.

:class:`PeftAgents` (:mod:`lib.llm.agents`) answers a mixed batch through peft, whose every LoRA
layer loops over the adapters present (gather the rows of each, two small matmuls, scatter back),
and merges by creating a new peft adapter. :class:`FoldedAgents` computes the same answers another
way:

- an agent is its update ``ΔW = s · B A`` per adapted module, read straight from its adapter folder;
- a merge is computed on the factors — exact: ``A = [w₁s₁A₁; w₂s₂A₂]``, ``B = [B₁ B₂]``
  (``ΔW = Σ wᵢ sᵢ BᵢAᵢ``, peft's ``cat``); linear: ``A = Σ √(wᵢsᵢ) Aᵢ``, ``B = Σ √(wᵢsᵢ) Bᵢ``
  (peft's ``linear``) — no peft adapter is created;
- to answer, ``W + ΔW`` is written into the base weights (restored afterwards), and the bare model
  decodes greedily with :func:`greedy_decode`, which drops each row from the batch once it has
  emitted EOS (HF ``generate`` keeps computing finished rows until the whole batch is done).

Only for float32 bases: in bf16, ``W + ΔW`` would round away most of a small update. The answers
equal the peft path's up to float rounding (a different order of the same sums); the benchmark
``benchmarks/society_phases.py`` runs both on the same generation and counts identical answers and
rows, and ``tests/test_folded.py`` checks the agreement on the tiny base.
"""
from __future__ import annotations

import json
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Sequence

from .generate import BASE_ROW, Counter, decode_new, encode_prompts
from .lora import FILES, check_adapter_dir

PREFIX = "base_model.model."  # peft's key prefix in adapter files


def greedy_decode(model, ids, att, *, max_new_tokens: int, eos: int, pad: int, counter: Counter | None = None):
    """Greedy continuation of left-padded ``ids`` (mask ``att``), shape ``(rows, max_new_tokens)``,
    ``pad`` after EOS. The model is called as HF ``generate`` calls it (a growing attention mask, a
    ``DynamicCache``); rows leave the batch once they emitted EOS."""
    import torch
    from transformers import DynamicCache
    rows, att_prompt_tokens = ids.shape[0], int(att.sum())
    out = torch.full((rows, max_new_tokens), pad, dtype=torch.long, device=ids.device)
    alive = torch.arange(rows, device=ids.device)
    cache = DynamicCache()
    logits = model(input_ids=ids, attention_mask=att, cache=cache, use_cache=True).logits[:, -1]
    steps = 0
    for step in range(max_new_tokens):
        nxt = logits.argmax(-1)
        out[alive, step] = nxt
        steps += len(alive)
        keep = nxt != eos
        if step == max_new_tokens - 1 or not bool(keep.any()):
            break
        if not bool(keep.all()):
            idx = keep.nonzero().squeeze(1)
            alive, nxt, att = alive[idx], nxt[idx], att[idx]
            cache.batch_select_indices(idx)
        att = torch.cat([att, att.new_ones((att.shape[0], 1))], 1)
        logits = model(input_ids=nxt[:, None], attention_mask=att, cache=cache, use_cache=True).logits[:, -1]
    if counter is not None:
        done = out == eos
        n_new = torch.where(done.any(1), done.int().argmax(1) + 1, out.shape[1])
        counter(prompt_tokens=int(att_prompt_tokens), gen_tokens=int(n_new.sum()), gen_calls=1,
                decode_row_steps=steps)
    return out


class FoldedAgents:
    """:class:`lib.llm.generation.Agents` on a float32 base, by folding (see the module docstring)."""

    BASE = BASE_ROW

    def __init__(self, base, *, hard: bool, batch_size: int, counter: Counter | None = None):
        import torch
        if next(base.model.parameters()).dtype != torch.float32:
            raise ValueError("FoldedAgents needs a float32 base (bf16 would round away the updates); use PeftAgents")
        self.base, self.hard, self.batch_size, self.counter = base, hard, batch_size, counter
        self.factors: dict[str, dict[str, tuple]] = {}  # agent -> module -> (A, B, scaling)

    # ------------------------------------------------------------------ agents
    def load(self, name: str, path: str | Path) -> None:
        """Read the adapter folder ``path`` as agent ``name`` (checked first)."""
        from safetensors import safe_open
        path = check_adapter_dir(path)
        cfg = json.loads((path / FILES[0]).read_text())
        s = cfg["lora_alpha"] / cfg["r"]
        ab: dict[str, dict] = {}
        with safe_open(str(path / FILES[1]), framework="pt") as fh:
            for k in fh.keys():
                mod, _, which = k.removeprefix(PREFIX).rpartition(".lora_")
                ab.setdefault(mod, {})[which.split(".")[0]] = fh.get_tensor(k)
        self.factors[name] = {m: (v["A"], v["B"], s) for m, v in ab.items()}

    def merge(self, parents: Sequence[str], weights: Sequence[float], name: str, method: str) -> str:
        import math
        import torch
        fs = [self.factors[p] for p in parents]
        out = {}
        for m in fs[0]:
            parts = [(f[m][0], f[m][1], f[m][2], float(w)) for f, w in zip(fs, weights)]
            if method == "exact":
                A = torch.cat([w * s * a for a, _, s, w in parts], 0)
                B = torch.cat([b for _, b, _, _ in parts], 1)
            elif method == "linear":
                A = sum(math.sqrt(w * s) * a for a, _, s, w in parts)
                B = sum(math.sqrt(w * s) * b for _, b, s, w in parts)
            else:
                raise ValueError(f"FoldedAgents merges exact or linear, not {method!r}")
            out[m] = (A, B, 1.0)
        self.factors[name] = out
        return name

    def forget(self) -> None:
        self.factors.clear()

    def save(self, name: str, path: str | Path) -> Path:
        """Write agent ``name`` as a LoRA adapter folder (rank of its factors, scaling folded into A)."""
        from .lora import publish_factors
        f = self.factors[name]
        r = next(iter(f.values()))[0].shape[0]
        return publish_factors({m: (a * s, b) for m, (a, b, s) in f.items()}, path, r=r, alpha=r)

    # ------------------------------------------------------------------ answering
    def _weights(self):
        """``{module path: the Linear's weight}`` of the underlying model (peft-wrapped or not)."""
        model = self.base.model
        inner = model.get_base_model() if hasattr(model, "get_base_model") else model
        mods = dict(inner.named_modules())
        return {m: getattr(mods[m], "base_layer", mods[m]).weight for m in next(iter(self.factors.values()))}

    @contextmanager
    def folded(self, name: str):
        """The base with agent ``name``'s update added to its weights (restored on exit)."""
        import torch
        if name == self.BASE:
            yield
            return
        ws = self._weights()
        saved = {m: w.detach().clone() for m, w in ws.items()}
        try:
            with torch.no_grad():
                for m, (a, b, s) in self.factors[name].items():
                    ws[m].add_(s * (b @ a))
            yield
        finally:
            with torch.no_grad():
                for m, w in ws.items():
                    w.copy_(saved[m])

    def _bare(self):
        model = self.base.model
        return model.disable_adapter() if hasattr(model, "disable_adapter") else nullcontext()

    def answer(self, names: Sequence[str], prompts: Sequence[str]) -> list[list[str]]:
        """``outs[i][j]``: agent ``names[i]`` on ``prompts[j]``; prompts sorted by length and batched."""
        import torch
        base = self.base
        mnt = base.max_new_tokens(self.hard)
        order, batches = encode_prompts(base, prompts, self.batch_size)
        outs = []
        for name in names:
            texts = [""] * len(prompts)
            with self.folded(name), self._bare(), torch.inference_mode():
                for idx, (ids, att) in zip(order, batches):
                    new = greedy_decode(base.model, ids, att, max_new_tokens=mnt, eos=base.tok.eos_token_id,
                                        pad=base.tok.pad_token_id, counter=self.counter)
                    for k, t in zip(idx, decode_new(base, new)):
                        texts[k] = t
            outs.append(texts)
        return outs
