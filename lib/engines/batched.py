"""Train K LoRA adapters on one frozen base at once: one forward and one backward per step.

:func:`lib.engines.lora.train_adapter` (the *sequential* trainer, kept as the reference) trains one
peft adapter at a time: each step is a full forward and backward through the frozen base for
``B`` rows of one adapter. :func:`train_many` trains ``K`` adapters in the same number of steps as
the longest of them, each step one forward and one backward for all the rows of the adapters that
still have data:

- the batch is the adapters' own batches, as the reference encodes them (right-padded to their own
  longest sequence, :func:`lib.engines.models.encode_batch`), stacked in blocks and padded to the longest
  block; the frozen base runs once over all rows;
- at every adapted ``Linear`` a forward hook adds each adapter's update to its own block only, on
  exactly the block's own shape: ``y[k] = W x[k] + s · B_k (A_k x[k])`` for the rows and positions
  of block ``k`` (peft's ``result + lora_B(lora_A(x)) * scaling``);
- the loss of adapter ``k`` is the reference's, :func:`transformers.loss.loss_utils.ForCausalLMLoss`
  on its own block's logits (the mean over its own answer tokens); the step's objective is the sum
  ``Σ_k L_k``, so adapter ``k``'s gradient is ``∂L_k/∂θ_k`` (no parameter is shared);
- each adapter keeps its own AdamW (``torch.optim.AdamW``, as the reference), its own data order
  (``numpy.random.default_rng(seed)`` permutations per epoch) and its own initialisation (peft's,
  drawn under ``seeded(seed)``); an adapter whose data has run out is left out of the batch and
  takes **no** optimizer step (AdamW would still move its weights on a zero gradient);
- where the rows of one step exceed ``max_rows``, the adapters are split into chunks of whole
  blocks, each chunk its own forward and backward before the steps: an adapter's gradient depends
  only on its own rows, so the result is the same. On CUDA every adapter goes in one pass; on a CPU
  one adapter per pass was measured fastest (:func:`rows_per_pass`).

The base's computation of a row does not depend on the other rows in the batch nor on extra padding
after it (causal attention, the padding masked), so trained factors equal the reference's up to the
float rounding of differently shaped matrix products; ``benchmarks/society_phases.py`` and
``tests/test_batched.py`` measure how far (on the tiny base: identical on AVX-512 CPUs, within 2e-5
on an AVX2 CPU after 10 steps).
"""
from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Sequence

import numpy as np

from lib.core.errors import UserError
from lib.core.tasks import Task
from lib.engines.lora import (IDLE, LoraSpec, ensure_peft, new_adapter, publish_factors, read_factors, remove_adapter,
                              train_lora_on_tasks)
from lib.engines.folded import linear_hooks
from lib.engines.models import encode_batch

TRAINERS = ("batched", "sequential")


@dataclass(frozen=True)
class Job:
    """One adapter to train: its tasks, its seed (initialisation and data order) and its epochs; ``init``: an
    adapter folder to start from (its factors, :func:`lib.engines.lora.read_factors`) instead of a fresh LoRA;
    ``steps``: exactly this many optimizer steps instead (the epochs' batches, as many epochs as needed, cut
    there: a budget counted in steps)."""

    tasks: Sequence[Task]
    seed: int
    epochs: int
    init: Path | None = None
    steps: int | None = None


def schedule(n: int, *, epochs: int, seed: int, batch_size: int, steps: int | None = None) -> list[np.ndarray]:
    """The reference's batches of task indices: per epoch a permutation of ``range(n)`` drawn from
    ``default_rng(seed)``, cut into batches of ``batch_size`` (the last one smaller). ``steps``: the first
    ``steps`` batches of as many epochs as they need (``epochs`` is then ignored)."""
    if steps is not None:
        epochs = -(-int(steps) // -(-n // batch_size))
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(epochs):
        order = rng.permutation(n)
        out += [order[s:s + batch_size] for s in range(0, n, batch_size)]
    return out if steps is None else out[:int(steps)]


def initial_factors(base, seed: int, *, r: int, alpha: int, targets) -> dict[str, list]:
    """``{module path: [A (r × in), B (out × r)]}``: the initialisation peft gives a new adapter under
    ``seeded(seed)`` (:func:`lib.engines.lora.new_adapter`), read off a scratch adapter and detached."""
    name = "_init"
    new_adapter(base, name, r=r, alpha=alpha, seed=seed, targets=targets)
    out = {}
    inner = base.model.get_base_model()
    for m, mod in inner.named_modules():
        if hasattr(mod, "lora_A") and name in mod.lora_A:
            out[m] = [mod.lora_A[name].weight.detach().clone(), mod.lora_B[name].weight.detach().clone()]
    remove_adapter(base, name)
    return out


@contextmanager
def lora_hooks(base, factors: list[dict], blocks: list[tuple[int, int]], scaling: float):
    """Forward hooks on every adapted ``Linear``: block ``k`` (the next ``rows`` rows of the batch,
    their first ``length`` positions) gets ``s · B_k (A_k x)`` added, peft's expression, on its own shape."""
    import torch
    import torch.nn.functional as F
    sizes = [rows for rows, _ in blocks]

    def hook_for(m):
        def hook(module, inputs, out):
            x = inputs[0]
            T = x.shape[1]
            parts = []
            # split (not slices): its backward assembles the input's gradient once, where K slices
            # would each materialise a zero tensor of the whole batch
            for xk, (_, length), f in zip(x.split(sizes, 0), blocks, factors):
                a, b = f[m]
                d = F.linear(F.linear(xk[:, :length].to(a.dtype), a), b) * scaling
                parts.append(F.pad(d, (0, 0, 0, T - length)) if length < T else d)
            delta = torch.cat(parts, 0) if len(parts) > 1 else parts[0]
            if delta.dtype == out.dtype:
                return out.add_(delta)
            return (out + delta).to(out.dtype)  # a bf16 base, float32 factors: peft's casts
        return hook

    with linear_hooks(base.model, {m: hook_for(m) for m in factors[0]}):
        yield


def _stack(blocks: list[tuple], pad: int):
    """Stack right-padded blocks ``(ids, att, lab)`` row-wise, padding each to the longest."""
    import torch
    T = max(ids.shape[1] for ids, _, _ in blocks)

    def right(x, v):
        return torch.nn.functional.pad(x, (0, T - x.shape[1]), value=v)
    return (torch.cat([right(i, pad) for i, _, _ in blocks]), torch.cat([right(a, 0) for _, a, _ in blocks]),
            torch.cat([right(l, -100) for _, _, l in blocks]))


def _chunks(jobs: list[int], sizes: list[int], max_rows: int | None) -> list[list[int]]:
    """``jobs`` cut into consecutive groups whose rows (``sizes``) add up to at most ``max_rows`` (a
    job larger than that alone); ``None``: one group."""
    if not max_rows:
        return [list(jobs)]
    out, cur, rows = [], [], 0
    for k, n in zip(jobs, sizes):
        if cur and rows + n > max_rows:
            out.append(cur)
            cur, rows = [], 0
        cur.append(k)
        rows += n
    return out + ([cur] if cur else [])


ROWS_ENV = "GE_TRAIN_ROWS"  # most rows per forward of the batched trainer; 0 = every adapter in one pass


def rows_per_pass(base, batch_size: int) -> int | None:
    """How many rows one forward takes (``None``: all): :data:`ROWS_ENV` if set (a GPU short of
    memory), else on CUDA every adapter at once, and on a CPU one adapter's batch per pass, which
    ``benchmarks/society_phases.py`` measured fastest there (the base is compute-bound at a batch of
    16 already; one pass over all K adapters' rows only streams K times larger activations through
    the cache). The trained factors do not depend on it."""
    import os
    v = os.environ.get(ROWS_ENV, "").strip()
    if v:
        try:
            n = int(v)
        except ValueError:
            raise UserError(f"{ROWS_ENV}={v!r}: expected a number of rows (0 = every adapter in one pass)") from None
        return n or None
    return None if str(base.device).startswith("cuda") else batch_size


def train_many(base, jobs: Sequence[Job], *, spec: LoraSpec = LoraSpec(), max_rows: int | None | str = "auto",
               counter=None) -> list[tuple[dict, dict]]:
    """Train one LoRA (``spec``; fresh, or from the job's ``init``) per job, all at once; returns per job ``(factors, info)``: the trained
    ``{module path: (A, B)}`` (``ΔW = alpha/r · B A``) and ``{"steps", "loss"}`` (mean loss of its last
    epoch), as :func:`lib.engines.lora.train_adapter` would.

    Step ``i`` trains every job that has an ``i``-th batch: the rows of at most ``max_rows`` per
    forward (whole adapters; ``"auto"``: :func:`rows_per_pass`; ``None``: all in one), one backward
    per forward, then one AdamW step per job that was in the step. ``counter(train_steps=…,
    train_tokens=…, train_padded_tokens=…)`` receives the work as the reference counts it: optimizer
    steps summed over jobs, the tokens of every row, and each job's batch as padded to its own longest.
    """
    import torch
    jobs = list(jobs)
    for k, j in enumerate(jobs):
        if not j.tasks:
            raise ValueError(f"job {k}: nothing to train on")
    if max_rows == "auto":
        max_rows = rows_per_pass(base, spec.batch_size)
    ensure_peft(base)
    factors = [initial_factors(base, j.seed, r=spec.r, alpha=spec.alpha, targets=spec.targets) if j.init is None
               else read_factors(j.init, r=spec.r, alpha=spec.alpha) for j in jobs]
    for f in factors:
        for ab in f.values():
            for p in ab:
                p.requires_grad_(True)
    opts = [torch.optim.AdamW([p for ab in f.values() for p in ab], lr=spec.lr, weight_decay=0.0) for f in factors]
    plans = [schedule(len(j.tasks), epochs=j.epochs, seed=j.seed, batch_size=spec.batch_size, steps=j.steps)
             for j in jobs]
    losses, tokens, padded = _train_steps(base, jobs, plans, factors, opts, spec, max_rows)
    if counter is not None:
        counter(train_steps=sum(map(len, plans)), train_tokens=tokens, train_padded_tokens=padded)
    return [({m: (a.detach(), b.detach()) for m, (a, b) in f.items()},
             {"steps": len(plan), "loss": float(np.mean(ls)) if ls else float("nan")})
            for f, plan, ls in zip(factors, plans, losses)]


def _train_steps(base, jobs: list[Job], plans: list[list[np.ndarray]], factors: list[dict], opts: list,
                 spec: LoraSpec, max_rows: int | None) -> tuple[list[list[float]], int, int]:
    """The steps of :func:`train_many`: at step ``i`` the jobs with an ``i``-th batch (a finished job takes
    no step) are encoded, passed forward and backward in chunks of at most ``max_rows`` rows
    (:func:`_pass`), and each takes one AdamW step. Returns each job's losses of its last epoch, and the
    tokens and padded tokens trained on."""
    # each job's first step of its last epoch
    last_epoch = [len(p) - -(-len(j.tasks) // spec.batch_size) for p, j in zip(plans, jobs)]
    losses: list[list[float]] = [[] for _ in jobs]
    model, scaling = base.model, spec.alpha / spec.r
    tokens = padded = 0
    try:
        model.train()
        with model.disable_adapter():
            for step in range(max(map(len, plans))):
                live = [k for k in range(len(jobs)) if step < len(plans[k])]
                enc = {k: encode_batch(base, [jobs[k].tasks[i] for i in plans[k][step]], base.device) for k in live}
                for k in live:
                    opts[k].zero_grad(set_to_none=True)
                for ks in _chunks(live, [enc[k][0].shape[0] for k in live], max_rows):
                    for k, loss in zip(ks, _pass(base, [enc[k] for k in ks], [factors[k] for k in ks], scaling)):
                        tokens += int(enc[k][1].sum())
                        padded += enc[k][0].numel()
                        if step >= last_epoch[k]:
                            losses[k].append(float(loss.item()))
                for k in live:
                    opts[k].step()
    finally:
        model.eval()
        model.set_adapter(IDLE)
    return losses, tokens, padded


def _pass(base, batches: list[tuple], factors: list[dict], scaling: float) -> list:
    """One forward and one backward of the frozen base over the jobs' ``batches`` stacked, each job's
    update added to its own block only (:func:`lora_hooks`); returns each job's loss, the reference's
    (:func:`transformers.loss.loss_utils.ForCausalLMLoss` on its own block's logits). The backward is
    of ``Σ_k L_k``: ``∂(Σ L_k)/∂θ_k = ∂L_k/∂θ_k``, no parameter is shared."""
    from transformers.loss.loss_utils import ForCausalLMLoss
    ids, att, _ = _stack(batches, base.tok.pad_token_id)
    blocks = [tuple(b[0].shape) for b in batches]  # (rows, length) of each job's own batch
    with lora_hooks(base, factors, blocks, scaling):
        logits = base.model(input_ids=ids, attention_mask=att).logits
    total, out = 0, []
    for b, lg, (_, T) in zip(batches, logits.split([n for n, _ in blocks], 0), blocks):
        loss = ForCausalLMLoss(lg[:, :T].contiguous(), b[2], base.model.config.vocab_size)
        total = total + loss
        out.append(loss)
    total.backward()
    return out


def train_loras(base, jobs: Sequence[Job], paths: Sequence[str | Path], *, trainer: str = "batched",
                spec: LoraSpec | None = None, max_rows: int | None | str = "auto", counter=None,
                **spec_fields) -> list[Path]:
    """Train one fresh LoRA per job and write each to its folder (peft's format, atomically).

    ``trainer``: ``"batched"`` (:func:`train_many`) or ``"sequential"`` (the reference: one peft
    adapter after another, :func:`lib.engines.lora.train_lora_on_tasks`); the folders hold the same factors.
    ``spec``: the LoRAs' settings, or instead its fields as keywords (``r=…, lr=…``, as :mod:`lib.society`
    passes them); neither: :class:`LoraSpec`'s defaults.
    """
    check_trainer(trainer)
    if spec is not None and spec_fields:
        raise TypeError(f"train_loras: pass spec or its fields, not both (got spec and {sorted(spec_fields)})")
    spec = LoraSpec(**spec_fields) if spec is None else spec
    jobs, paths = list(jobs), [Path(p) for p in paths]
    if len(jobs) != len(paths):
        raise ValueError(f"{len(jobs)} jobs for {len(paths)} folders")
    if not jobs:
        return []
    if trainer == "sequential":
        return [train_lora_on_tasks(base, j.tasks, p, epochs=j.epochs, seed=j.seed, spec=replace(spec, steps=j.steps),
                                    counter=counter, init=j.init) for j, p in zip(jobs, paths)]
    trained = train_many(base, jobs, spec=spec, max_rows=max_rows, counter=counter)
    return [publish_factors(f, p, r=spec.r, alpha=spec.alpha) for (f, _), p in zip(trained, paths)]


def check_trainer(trainer: str) -> str:
    if trainer not in TRAINERS:
        raise ValueError(f"unknown trainer {trainer!r}; use one of {list(TRAINERS)}")
    return trainer
