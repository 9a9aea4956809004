"""Time a climb round's sampling, the round's largest phase, three ways on the tiny base (one thread).

The population's ``P`` agents each sample ``k`` answers to every climb prompt (cpu scale: 4 agents, 8 samples,
600 prompts: 19,200 rows), at T = 1, on the same adapters:

- **batched** (the loop's, :meth:`lib.engines.sample.SamplingAgents.sample`): each agent's ``k`` samples of every
  prompt in shared batches of ``gen_batch`` rows, a prompt's samples side by side (its prefix computed once);
- **one at a time**: each agent, each sample index ``j`` on its own, the prompts in one batch per call
  (:func:`lib.engines.sample.sample_decode` called ``P · k`` times): the same rows, by construction of the keys;
- **greedy**: the engine's own greedy decode (:func:`lib.engines.folded.greedy_decode`) of the same rows, once each
  (the prefill + decode rate the sampler is held against: the same prompts repeated ``k`` times).

It prints the wall times, the ratios measured side by side, the rows that differ between the first two (must be 0)
and each way's prompt + generated tokens per second.

    python benchmarks/climb_round.py [--agents 4] [--samples 8] [--prompts 200] [--repeats 2]
"""
from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import torch

from lib.core.tasks import FAMILIES, make_tasks, rung_tasks
from lib.engines import lora
from lib.engines.folded import greedy_decode
from lib.engines.generate import decode_new
from lib.engines.models import load_base
from lib.engines.sample import SamplingAgents, row_key, sample_decode

SEED = 7


def counted():
    work = {"prompt_tokens": 0, "gen_tokens": 0}

    def count(**kw):
        for k in work:
            work[k] += int(kw.get(k, 0))
    return work, count


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--agents", type=int, default=4)
    ap.add_argument("--samples", type=int, default=8)
    ap.add_argument("--prompts", type=int, default=200, help="climb prompts per family")
    ap.add_argument("--batch", type=int, default=2048, help="rows per decode call (the cpu config's gen_batch)")
    ap.add_argument("--repeats", type=int, default=2)
    args = ap.parse_args()
    torch.set_num_threads(1)
    base = load_base("tiny", dtype="fp32")
    prompts = [x.prompt for f in FAMILIES for x in rung_tasks(f, 1, args.prompts, seed=11)]
    names = [f"a{i}" for i in range(args.agents)]
    tmp = tempfile.TemporaryDirectory()
    for i, n in enumerate(names):  # agents that answer differently: a LoRA each on its family's easy tasks
        lora.train_lora_on_tasks(base, make_tasks(FAMILIES[i % 3], 96, seed=50_000 + i), Path(tmp.name) / n,
                                 epochs=1, seed=i)
    k, T = args.samples, 1.0
    enc = [base.prompt_ids(p) for p in prompts]
    mnt = base.max_new_tokens(True)

    def batched():
        work, count = counted()
        agents = SamplingAgents(base, hard=True, batch_size=args.batch, counter=count)
        for n in names:
            agents.load(n, Path(tmp.name) / n)
        return agents.sample(names, prompts, k, temperature=T, seed=SEED), work

    def one_at_a_time():
        work, count = counted()
        agents = SamplingAgents(base, hard=True, batch_size=args.batch)
        outs = []
        for n in names:
            agents.load(n, Path(tmp.name) / n)
            texts = [[""] * k for _ in prompts]
            with agents.folded(n), agents._bare(), torch.inference_mode():
                for j in range(k):
                    new = sample_decode(base.model, enc, [row_key(SEED, n, p, j) for p in prompts], temperature=T,
                                        max_new_tokens=mnt, eos=base.tok.eos_token_id, pad=base.tok.pad_token_id,
                                        counter=count)
                    for q, t in enumerate(decode_new(base, new)):
                        texts[q][j] = t
            outs.append(texts)
        return outs, work

    def greedy():
        work, count = counted()
        agents = SamplingAgents(base, hard=True, batch_size=args.batch)
        rows = [e for e in enc for _ in range(k)]
        for n in names:
            agents.load(n, Path(tmp.name) / n)
            with agents.folded(n), agents._bare(), torch.inference_mode():
                for s in range(0, len(rows), args.batch):
                    greedy_decode(base.model, rows[s:s + args.batch], max_new_tokens=mnt, eos=base.tok.eos_token_id,
                                  pad=base.tok.pad_token_id, counter=count)
        return None, work

    ways = {"batched": batched, "one at a time": one_at_a_time, "greedy, same rows": greedy}
    times = {w: [] for w in ways}
    got, work = {}, {}
    for _ in range(args.repeats):
        for w, f in ways.items():
            t0 = time.perf_counter()
            got[w], work[w] = f()
            times[w].append(time.perf_counter() - t0)
    a, b = got["batched"], got["one at a time"]
    differ = sum(x != y for ra, rb in zip(a, b) for pa, pb in zip(ra, rb) for x, y in zip(pa, pb))
    rows = args.agents * len(prompts) * k
    print(f"a climb round's sampling: {args.agents} agents x {len(prompts)} prompts x {k} samples = {rows:,} rows, "
          f"T = {T}, one thread, best of {args.repeats}")
    best = {w: min(t) for w, t in times.items()}
    row_prompt_tokens = args.agents * k * sum(map(len, enc))  # every row's prompt, as the same tokens for all ways
    for w in ways:
        tok = row_prompt_tokens + work[w]["gen_tokens"]
        print(f"  {w:18s} {best[w]:7.2f} s   {tok / best[w]:9,.0f} rows' prompt+generated tok/s   "
              f"(generated {work[w]['gen_tokens']:,}; prefilled {work[w]['prompt_tokens']:,})")
    print(f"  one at a time / batched: {best['one at a time'] / best['batched']:.2f}x")
    print(f"  batched / greedy on the same rows: {best['batched'] / best['greedy, same rows']:.2f}x")
    print(f"  rows that differ between batched and one at a time: {differ} of {rows:,}")
    tmp.cleanup()


if __name__ == "__main__":
    main()
