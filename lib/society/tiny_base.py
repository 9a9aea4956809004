"""The project's tiny base: a character-level Llama pre-trained on the task families, built here.

``python -m lib.society.tiny_base [--out DIR] [--steps S]`` (``make tiny-base``) builds a ~1.06 M-parameter
LlamaForCausalLM (hidden 128, 4 layers, 4 heads, intermediate 512, tied embeddings, vocabulary 99)
pre-trained for 1,000 steps on an even mixture of the easy task families, drawn only from each
family's ``pretrain`` part (:mod:`lib.society.pools`: no founder, child, val or test task is ever
pre-trained on) and only from its *familiar* region (:func:`lib.core.tasks.region`: never a
5-digit sort, a 5-letter reversal or a sum of 120 or more), so a founder specialist trained on its
whole family has something to learn. Batch 64, AdamW lr 3e-3 with 10 % linear warm-up and cosine
decay, cross-entropy on the answer tokens only. Fixed steps and seeds make the build bit-identical
on one machine; another CPU's float kernels give another, statistically similar base. The result
is committed under ``data/base/tiny/`` with ``build_info.json`` (its accuracy on unseen test-part
tasks, per family and region).
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

from lib.core.jsonfile import write_json
from lib.operators.ops import fitness_of, region_accuracy
from lib.core.tasks import FAMILIES
from lib.engines.generate import generate
from lib.society.pools import draw, pretrain_tasks
from lib.engines.models import TINY_DIR, TINY_SEED, TINY_STEPS, TINY_TEST_TASKS, Base, _one_thread, encode_batch, \
    make_char_tokenizer, read_build_info, tiny_config


def build_tiny(out: str | Path | None = None, *, steps: int = TINY_STEPS, seed: int = TINY_SEED,
               batch: int = 64, lr: float = 3e-3, save: bool = True, progress: bool = True):
    """Pre-train the tiny base deterministically; save model + tokenizer to ``out`` (safetensors).

    Returns the :class:`Base`. Same ``(steps, seed, batch, lr)`` → bit-identical weights.
    """
    import torch
    from transformers import LlamaForCausalLM

    _one_thread()
    torch.manual_seed(seed)
    tok = make_char_tokenizer()
    model = LlamaForCausalLM(tiny_config(len(tok)))
    base = Base("tiny", model, tok, chat=False)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    warm = max(1, steps // 10)  # linear warm-up over 10 % of the steps, then cosine decay to 0
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: (s + 1) / warm if s < warm else 0.5 * (1 + np.cos(np.pi * (s - warm) / max(1, steps - warm))))
    model.train()
    t0 = time.time()
    for s in range(steps):
        ids, att, lab = encode_batch(base, pretrain_tasks(s, batch))
        loss = model(input_ids=ids, attention_mask=att, labels=lab).loss
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
        if progress and (s % 50 == 0 or s == steps - 1):
            print(f"step {s:4d} loss {loss.item():.4f} ({time.time() - t0:.0f} s)", file=sys.stderr)
    model.eval()
    base.info = {"steps": steps, "seed": seed, "batch": batch, "lr": lr, "train_s": round(time.time() - t0, 1)}
    if save:
        out = Path(out or TINY_DIR)
        out.mkdir(parents=True, exist_ok=True)
        model.save_pretrained(out, safe_serialization=True)
        tok.save_pretrained(out)
        write_json(out / "build_info.json", {**base.info, "command": f"python -m lib.society.tiny_base --steps {steps}"},
                   sort_keys=False)
    return base


def test_accuracy(base: Base, n_per_family: int = TINY_TEST_TASKS["n_per_family"],
                  seed: int = TINY_TEST_TASKS["seed"]) -> dict:
    """Exact-match accuracy of greedy answers on ``n_per_family`` distinct tasks of each family's
    test part (never pre-trained on; family i drawn with seed ``seed + i``): per family, ``overall``,
    and per family and region (``lists_novel``, …) — build_info.json's ``test_accuracy``."""
    tasks = sum((draw(f, "test", n_per_family, seed + i, distinct=True) for i, f in enumerate(FAMILIES)), [])
    outs = generate(base, [t.prompt for t in tasks])
    return {**fitness_of(outs, tasks, FAMILIES), **region_accuracy(outs, tasks, FAMILIES)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m lib.society.tiny_base")
    ap.add_argument("--out", default=str(TINY_DIR), help="folder of the built base (default data/base/tiny)")
    ap.add_argument("--steps", type=int, default=TINY_STEPS)
    ap.add_argument("--seed", type=int, default=TINY_SEED)
    args = ap.parse_args(argv)
    base = build_tiny(args.out, steps=args.steps, seed=args.seed)
    fit = test_accuracy(base)
    print(f"built {args.out} in {base.info['train_s']} s; test accuracy " +
          ", ".join(f"{k} {v:.2f}" for k, v in fit.items()))
    info = read_build_info(Path(args.out))
    info["test_accuracy"] = {k: round(v, 3) for k, v in fit.items()}
    info["test_tasks"] = dict(TINY_TEST_TASKS)
    info["test_tasks_note"] = "distinct tasks of each family's test part (lib.society.pools.draw), never pre-trained on"
    info["pretraining"] = "each family's pretrain part, familiar region only (lib.society.pools.pretrain_tasks)"
    write_json(Path(args.out) / "build_info.json", info, sort_keys=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
