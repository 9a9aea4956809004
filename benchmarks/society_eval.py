"""Time the society's hot loop: N agents answering the test + val + conformity pools.

Two ways, on the tiny base at N = 6 (cpu-scale pools: 40 test, 30 val per family, 60 conformity):
- loop: the seed's way, ``set_adapter`` per agent and one generate call per pool (generate batch
  512, i.e. each pool in one call, and batch 32, a typical per-call evaluation batch);
- batched: one mixed-adapter batch for all agents and pools (``generate_agents``).
Both must give identical answers; prints the wall times and the ratios. On a CPU the tiny model's
generation is compute-bound (the prompt prefill dominates), so batching the agents together saves
mostly per-call overhead; on a GPU the one large batch is where the gain is.

    python benchmarks/society_eval.py [--agents 6] [--repeats 3]
"""
from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from lib.engines import lora
from lib.engines.generate import generate, generate_agents
from lib.engines.models import load_base
from lib.core.tasks import FAMILIES, make_pool, make_tasks


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--agents", type=int, default=6)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    base = load_base("tiny", device="cpu")
    test, val = make_pool(FAMILIES, 40, 1000), make_pool(FAMILIES, 30, 3000)
    conf = make_pool(FAMILIES, 20, 7919)
    pools = [[t.prompt for t in p] for p in (test, val, conf)]
    names = [f"a{i}" for i in range(args.agents)]
    with tempfile.TemporaryDirectory() as tmp:
        for i, n in enumerate(names):
            lora.train_lora_on_tasks(base, make_tasks(FAMILIES[i % 3], 64, seed=50_000 + i), Path(tmp) / n, epochs=1, seed=i)
            lora.load_adapter(base, n, Path(tmp) / n)

    def loop(bs=512):
        outs = []
        for n in names:
            base.model.set_adapter(n)
            outs.append(sum((generate(base, p, batch_size=bs) for p in pools), []))
        base.model.set_adapter(lora.IDLE)
        return outs

    def loop32():
        return loop(32)

    def batched():
        return generate_agents(base, sum(pools, []), names)

    times = {"loop": [], "loop32": [], "batched": []}
    for _ in range(args.repeats):
        for k, f in (("loop", loop), ("loop32", loop32), ("batched", batched)):
            t0 = time.perf_counter()
            out = f()
            times[k].append(time.perf_counter() - t0)
            if k == "loop":
                ref = out
            assert out == ref, f"{k} answers differ from the set_adapter loop"
    lo, l32, ba = min(times["loop"]), min(times["loop32"]), min(times["batched"])
    rows = args.agents * sum(map(len, pools))
    print(f"society eval, tiny base, N={args.agents}, {rows} (agent, prompt) rows; best of {args.repeats}")
    print(f"  set_adapter loop (seed), batch 512: {lo:6.2f} s")
    print(f"  set_adapter loop (seed), batch 32 : {l32:6.2f} s")
    print(f"  mixed-adapter batch (all agents)  : {ba:6.2f} s")
    print(f"  speed-up vs loop@512: {lo / ba:4.1f}x, vs loop@32: {l32 / ba:4.1f}x   (answers identical: True)")


if __name__ == "__main__":
    main()
