"""Benchmark: the batched program search against the seed's per-state way, same work, one run.

    python benchmarks/program_search.py [--seeds 8]

Runs all 8 methods on every seed twice — batched (``lib.program_search.search``) and state by state
(``lib.program_search.reference``, the seed's recursion) — checks that every number agrees to
1e-9 (timing columns excepted) and prints both wall times and their ratio.
"""
from __future__ import annotations

import argparse
import time


import lib.program_search.search as ps
import lib.program_search.reference as reference

TIMING = {"seconds_including_diagnostics", "setup_seconds_including_task_and_anchor_construction"}


def max_difference(a: list[dict], b: list[dict]) -> float:
    """Largest |a - b| over every numeric field of two row lists (raises if they disagree in shape)."""
    if len(a) != len(b):
        raise AssertionError(f"{len(a)} rows vs {len(b)}")
    worst = 0.0
    for x, y in zip(a, b):
        if x.keys() != y.keys():
            raise AssertionError(f"columns differ: {set(x) ^ set(y)}")
        for k in x:
            if k in TIMING:
                continue
            if isinstance(y[k], str):
                if x[k] != y[k]:
                    raise AssertionError(f"{k}: {x[k]!r} != {y[k]!r}")
            else:
                worst = max(worst, abs(float(x[k]) - float(y[k])))
    return worst


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=8)
    args = ap.parse_args()
    cfg = ps.SearchConfig(seeds=args.seeds)
    timings, cpu, results = {}, {}, {}
    for label, search in (("batched (lib.program_search.search)", None), ("per-state (seed's way)", reference.one_run)):
        t0, c0 = time.perf_counter(), time.process_time()
        results[label] = ps.run_all(cfg, search=search)
        timings[label], cpu[label] = time.perf_counter() - t0, time.process_time() - c0
    (fast, slow) = results.values()
    diffs = {name: max_difference(fast[i], slow[i]) for i, name in enumerate(("rows", "diagnostics", "costs"))}
    fa = fast[3]["aggregate"]
    sa = slow[3]["aggregate"]
    diffs["summary"] = max_difference(fa, sa)
    print(f"program search, {args.seeds} seeds x {len(ps.METHODS)} methods x {cfg.generations} generations")
    for label, t in timings.items():
        print(f"  {label:32s} {t:8.2f} s wall  {cpu[label]:8.2f} s CPU")
    slow_l, fast_l = "per-state (seed's way)", "batched (lib.program_search.search)"
    print(f"  speed-up (per-state / batched)   {timings[slow_l] / timings[fast_l]:8.1f} x wall  "
          f"{cpu[slow_l] / cpu[fast_l]:8.1f} x CPU")
    print("  max |difference|: " + ", ".join(f"{k} {v:.2e}" for k, v in diffs.items()))
    ok = max(diffs.values()) <= 1e-9
    print("  same numbers (<= 1e-9):", "yes" if ok else "NO")
    if not ok:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
