"""Fast agents for a float32 base: each agent's LoRA update folded into the weights, one agent at a time.

:class:`PeftAgents` (:mod:`lib.engines.agents`) answers a mixed batch through peft, whose every LoRA
layer loops over the adapters present (gather the rows of each, two small matmuls, scatter back),
and merges by creating a new peft adapter. :class:`FoldedAgents` computes the same answers another
way:

- an agent is its update ``ΔW = s · B A`` per adapted module, read straight from its adapter folder;
- a merge is computed on the factors — exact: ``A = [w₁s₁A₁; w₂s₂A₂]``, ``B = [B₁ B₂]``
  (``ΔW = Σ wᵢ sᵢ BᵢAᵢ``, peft's ``cat``); linear: ``A = Σ √(wᵢsᵢ) Aᵢ``, ``B = Σ √(wᵢsᵢ) Bᵢ``
  (peft's ``linear``); ties: TIES of the dense updates (peft's ``ties`` of ``merge_utils``, kept
  dense) — no peft adapter is created;
- to answer, ``W + ΔW`` is written into the base weights (restored afterwards), and the bare model
  decodes greedily with :func:`greedy_decode`, which drops each row from the batch once it has
  emitted EOS (HF ``generate`` keeps computing finished rows until the whole batch is done) and
  computes each group of prompts' shared prefix once (:func:`shared_prefill`);
- what does not change is not computed twice: a merge identical to an earlier one (the same parents,
  weights and method — the plain average of a pair that is bred twice) is the same agent, and an
  agent asked the same prompts again gets its earlier answers.

Only for float32 bases: in bf16, ``W + ΔW`` would round away most of a small update. The answers
equal the peft path's up to float rounding (a different order of the same sums); the benchmark
``benchmarks/society_phases.py`` runs both on the same generation and counts identical answers and
rows, and ``tests/test_folded.py`` checks the agreement on the tiny base.
"""
from __future__ import annotations

import json
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Callable, Sequence

from lib.engines.generate import BASE_ROW, Counter, decode_new
from lib.engines.lora import FILES, check_adapter_dir, publish_factors
from lib.engines.merge import TIES_DENSITY

PREFIX = "base_model.model."  # peft's key prefix in adapter files


def _lcp(seqs: list[list[int]]) -> int:
    """Length of the longest common prefix of token lists."""
    n = min(map(len, seqs))
    for k in range(n):
        if any(q[k] != seqs[0][k] for q in seqs):
            return k
    return n


def shared_prefill(model, enc: list[list[int]], *, pad: int, min_group: int = 8, keys: Sequence | None = None,
                   route: Callable | None = None):
    """Prefill of ``enc`` left-padded to the longest prompt ``L``, as one batch would compute it, but
    with each group's shared part computed once: prompts of equal length whose first tokens agree
    (a task family's ``<bos>sort `` …) share their padding and their longest common prefix, which
    is run for one row and repeated; only the rest runs for every row. Groups smaller than
    ``min_group`` rows are prefilled together, plainly (fewer, larger calls). Returns
    ``(cache, last logits, attention mask)``, rows in the order of ``enc``.

    Rows whose ``keys`` differ (a mixed-adapter batch: the row's adapter) never share a prefix;
    ``route(rows)``, when given, is called before every model call with the indices (into ``enc``,
    a ``LongTensor``) of the rows that call computes, in its batch order. Inputs go to the model's device;
    the output head runs on the last position only (``logits_to_keep=1``: a prefill of ``rows × L`` tokens
    would otherwise hold ``rows × L × vocabulary`` logits)."""
    import torch
    from transformers import DynamicCache
    dev = next(model.parameters()).device

    def ids(x):
        return torch.tensor(x, dtype=torch.long, device=dev)
    L = max(map(len, enc))
    groups: dict[tuple, list[int]] = {}
    for i, p in enumerate(enc):
        groups.setdefault((len(p), tuple(p[:3]), None if keys is None else keys[i]), []).append(i)
    rest = [i for idx in groups.values() if len(idx) < min_group for i in idx]
    groups = [idx for idx in groups.values() if len(idx) >= min_group] + ([rest] if rest else [])
    parts, rows = [], []
    for idx in groups:
        seqs = [enc[i] for i in idx]
        shared = len({len(q) for q in seqs}) == 1 and len(idx) >= min_group
        cache = DynamicCache()
        if shared:  # [padding | common prefix] once, then the rest of each prompt
            n = len(seqs[0])
            c = min(_lcp(seqs), n - 1)  # at least one token left per row for its logits
            head = ids([[pad] * (L - n) + seqs[0][:c]])
            head_att = ids([[0] * (L - n) + [1] * c])
            tail = ids([q[c:] for q in seqs])
            att = torch.cat([head_att.expand(len(idx), -1), torch.ones_like(tail)], 1)
            if route is not None:  # the group's rows share their key: the head is the first row's
                route(torch.tensor(idx[:1]))
            model(input_ids=head, attention_mask=head_att, cache=cache, use_cache=True, logits_to_keep=1)
            cache.batch_repeat_interleave(len(idx))
        else:  # plain left-padded prefill
            tail = ids([[pad] * (L - len(q)) + q for q in seqs])
            att = ids([[0] * (L - len(q)) + [1] * len(q) for q in seqs])
        if route is not None:
            route(torch.tensor(idx))
        logits = model(input_ids=tail, attention_mask=att, cache=cache, use_cache=True, logits_to_keep=1).logits[:, -1]
        parts.append((cache, logits, att))
        rows += idx
    merged = DynamicCache()
    for layer in range(len(parts[0][0].layers)):
        merged.update(torch.cat([c.layers[layer].keys for c, _, _ in parts]),
                      torch.cat([c.layers[layer].values for c, _, _ in parts]), layer)
    back = torch.empty(len(rows), dtype=torch.long, device=dev)
    back[ids(rows)] = torch.arange(len(rows), device=dev)
    merged.batch_select_indices(back)
    return merged, torch.cat([lg for _, lg, _ in parts])[back], torch.cat([a for _, _, a in parts])[back]


def greedy_decode(model, enc: list[list[int]], *, max_new_tokens: int, eos: int, pad: int,
                  counter: Counter | None = None, keys: Sequence | None = None, route: Callable | None = None):
    """Greedy continuations of the prompts ``enc`` (token lists), shape ``(rows, max_new_tokens)`` on the
    CPU, ``pad`` after EOS. The prompts are prefilled by :func:`shared_prefill` (left-padded, as HF
    ``generate`` sees them, each group's shared prefix computed once); the model is then called as
    ``generate`` calls it (a growing attention mask, a ``DynamicCache``), and rows leave the batch once
    they emitted EOS (``generate`` keeps computing finished rows until the whole batch is done).
    ``keys`` and ``route``: a mixed batch's rows (:func:`shared_prefill`); ``route(rows)`` is also called
    before every decode step with the rows still in the batch."""
    prefill = shared_prefill(model, enc, pad=pad, keys=keys, route=route)
    out, steps = decode_loop(model, prefill, lambda logits, alive, step: logits.argmax(-1),
                             max_new_tokens=max_new_tokens, eos=eos, pad=pad, route=route)
    count_decode(counter, enc, out, eos, steps)
    return out.cpu()


def decode_loop(model, prefill: tuple, choose: Callable, *, max_new_tokens: int, eos: int, pad: int,
                route: Callable | None = None):
    """The KV-cached decode after ``prefill`` (``(cache, last logits, attention mask)`` of
    :func:`shared_prefill`): at step ``t`` the rows still in the batch (``alive``, their indices in ``enc``) take
    the token ``choose(logits, alive, t)``; a row is done at EOS, and the done rows leave the batch once they are
    1/8 of it. Returns the tokens ``(rows, max_new_tokens)`` (``pad`` after EOS) and the row-steps decoded."""
    import torch
    cache, logits, att = prefill
    rows, dev = len(logits), logits.device
    out = torch.full((rows, max_new_tokens), pad, dtype=torch.long, device=dev)
    alive = torch.arange(rows, device=dev)
    steps, finished = 0, torch.zeros(rows, dtype=torch.bool, device=dev)
    for step in range(max_new_tokens):
        nxt = choose(logits, alive, step)
        live = ~finished
        out[alive[live], step] = nxt[live]
        steps += int(live.sum())
        finished = finished | (nxt == eos)
        if step == max_new_tokens - 1 or bool(finished.all()):
            break
        if int(finished.sum()) * 8 >= len(finished):  # drop the finished rows once they are 1/8 of the batch
            idx = (~finished).nonzero().squeeze(1)
            alive, nxt, att, finished = alive[idx], nxt[idx], att[idx], finished[idx]
            cache.batch_select_indices(idx)
        att = torch.cat([att, att.new_ones((att.shape[0], 1))], 1)
        if route is not None:
            route(alive)
        logits = model(input_ids=nxt[:, None], attention_mask=att, cache=cache, use_cache=True).logits[:, -1]
    return out, steps


def count_decode(counter: Counter | None, enc: list[list[int]], out, eos: int, steps: int, **more) -> None:
    """Report a decode's work to ``counter``: prompt tokens, new tokens (through the first EOS), one call, the
    row-steps decoded, and ``more``."""
    if counter is None:
        return
    import torch
    done = out == eos
    n_new = torch.where(done.any(1), done.int().argmax(1) + 1, out.shape[1])
    counter(prompt_tokens=sum(map(len, enc)), gen_tokens=int(n_new.sum()), gen_calls=1, decode_row_steps=steps, **more)


def base_linears(model, names) -> dict:
    """``{module path: its Linear}`` in ``model`` (peft-wrapped or not; under a peft wrapper, the base layer)."""
    inner = model.get_base_model() if hasattr(model, "get_base_model") else model
    mods = dict(inner.named_modules())
    return {m: getattr(mods[m], "base_layer", mods[m]) for m in names}


@contextmanager
def linear_hooks(model, hooks: dict):
    """Forward hooks ``{module path: hook}`` on the Linear layers of ``model`` (:func:`base_linears`: the
    frozen base's own output), removed on exit."""
    handles = [lin.register_forward_hook(hooks[m]) for m, lin in base_linears(model, hooks).items()]
    try:
        yield
    finally:
        for h in handles:
            h.remove()


def dense_update(a, b, s):
    """An agent's update of one module: ``s · B A``, or ``A`` itself when it is kept dense (``B`` None)."""
    return a if b is None else s * (b @ a)


class FactorAgents:
    """What :class:`FoldedAgents` and :class:`lib.engines.multilora.MultiLoraAgents` share: agents as their
    LoRA factors per module (loaded, merged on the factors, saved), identical merges made once, and the
    answers already computed (see the module docstring); a subclass answers."""

    BASE = BASE_ROW

    def __init__(self, base, *, hard: bool, batch_size: int, counter: Counter | None = None):
        self.base, self.hard, self.batch_size, self.counter = base, hard, batch_size, counter
        self.factors: dict[str, dict[str, tuple]] = {}  # agent -> module -> (A, B, scaling)
        self.same: dict[str, str] = {}                   # agent -> the identical agent made first
        self._merges: dict[tuple, str] = {}              # (parents, weights, method) -> agent
        self._answers: dict[tuple, list[str]] = {}       # (agent, prompts) -> outputs

    # ------------------------------------------------------------------ agents
    def load(self, name: str, path: str | Path) -> None:
        """Read the adapter folder ``path`` as agent ``name`` (checked first; replaces ``name``)."""
        self.same.pop(name, None)
        self._answers = {k: v for k, v in self._answers.items() if k[0] != name}
        self._merges = {k: v for k, v in self._merges.items() if name not in k[0]}
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
        key = (tuple(self.same.get(p, p) for p in parents), tuple(float(w) for w in weights), method)
        if key in self._merges:  # the very same merge: the same agent under another name
            self.factors[name], self.same[name] = self.factors[self._merges[key]], self._merges[key]
            return name
        self._merges[key] = name
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
            elif method == "ties":  # TIES of the dense updates (kept dense: B is None)
                from peft.utils.merge_utils import ties
                A = ties([dense_update(a, b, s) for a, b, s, _ in parts], torch.tensor([w for *_, w in parts]),
                         TIES_DENSITY, "total")
                B = None
            else:
                raise ValueError(f"FoldedAgents merges exact, linear or ties, not {method!r}")
            out[m] = (A, B, 1.0)
        self.factors[name] = out
        return name

    def forget(self) -> None:
        for d in (self.factors, self.same, self._merges, self._answers):
            d.clear()

    def save(self, name: str, path: str | Path) -> Path:
        """Write agent ``name`` as a LoRA adapter folder (rank of its factors, scaling folded into A; a
        dense update by its SVD at full rank, which reproduces it)."""
        import torch
        f = {}
        for m, (a, b, s) in self.factors[name].items():
            if b is None:
                u, sv, vh = torch.linalg.svd(a, full_matrices=False)
                f[m] = (vh, u * sv)
            else:
                f[m] = (a * s, b)
        ranks = {a.shape[0] for a, _ in f.values()}
        r = min(ranks)
        return publish_factors({m: (a[:r], b[:, :r]) for m, (a, b) in f.items()}, path, r=r, alpha=r)

    def _bare(self):
        """The base without its peft adapters (none attached: the base itself)."""
        model = self.base.model
        return model.disable_adapter() if hasattr(model, "disable_adapter") else nullcontext()


class FoldedAgents(FactorAgents):
    """:class:`lib.society.generation.Agents` on a float32 base, by folding (see the module docstring)."""

    def __init__(self, base, *, hard: bool, batch_size: int, counter: Counter | None = None):
        import torch
        if next(base.model.parameters()).dtype != torch.float32:
            raise ValueError("FoldedAgents needs a float32 base (bf16 would round away the updates); use PeftAgents")
        super().__init__(base, hard=hard, batch_size=batch_size, counter=counter)

    # ------------------------------------------------------------------ answering
    def _weights(self):
        """``{module path: the Linear's weight}`` of the underlying model (peft-wrapped or not)."""
        return {m: lin.weight for m, lin in base_linears(self.base.model, next(iter(self.factors.values()))).items()}

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
                for m, (a, b, s) in self.factors[name].items():  # ΔW computed on the weights' device
                    dev = ws[m].device
                    ws[m].add_(dense_update(a.to(dev), None if b is None else b.to(dev), s))
            yield
        finally:
            with torch.no_grad():
                for m, w in ws.items():
                    w.copy_(saved[m])

    def answer(self, names: Sequence[str], prompts: Sequence[str]) -> list[list[str]]:
        """``outs[i][j]``: agent ``names[i]`` on ``prompts[j]``; prompts sorted by length and batched."""
        import torch
        base = self.base
        mnt = base.max_new_tokens(self.hard)
        enc = [base.prompt_ids(p) for p in prompts]
        order = sorted(range(len(enc)), key=lambda k: (len(enc[k]), k))
        chunks = [order[s:s + self.batch_size] for s in range(0, len(order), self.batch_size)]
        outs = []
        for name in names:
            key = (self.same.get(name, name), tuple(prompts))
            if key in self._answers:
                outs.append(list(self._answers[key]))
                continue
            texts = [""] * len(prompts)
            with self.folded(name), self._bare(), torch.inference_mode():
                for idx in chunks:
                    new = greedy_decode(base.model, [enc[k] for k in idx], max_new_tokens=mnt,
                                        eos=base.tok.eos_token_id, pad=base.tok.pad_token_id, counter=self.counter)
                    for k, t in zip(idx, decode_new(base, new)):
                        texts[k] = t
            self._answers[key] = texts
            outs.append(list(texts))
        return outs
