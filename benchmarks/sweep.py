"""Wall time of one sweep run serially in one process vs fanned out on a local Ray with 2 workers.

    python benchmarks/sweep.py [--config configs/tool_mutation/cpu.yaml] [--seeds 2] [--workers 2]

Both write to fresh temporary folders (GE_DATA_DIR / GE_RUNS_DIR) and must merge to identical rows.
Each run gets one CPU and one torch thread in both modes (``--cpus-per-run 1``), so the ratio
measures the fan-out, not a change of threading. The Ray column excludes Ray's own start-up, which
is printed apart (on a 2-core VM it is ~20-30 s: the GCS, raylet, agents and the first workers
importing torch all share the two cores). Expect a ratio near ``workers`` for CPU-bound runs of
several seconds each, less when runs are short (a worker's first task pays the torch import) or
when there are fewer runs than a multiple of the workers (the last wave runs half empty).
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from functools import partial
from pathlib import Path

import pandas as pd

from lib import experiment, sweep
from lib.core.paths import REPO_ROOT


def _in(root: Path):
    os.environ["GE_DATA_DIR"] = str(root / "data")
    os.environ["GE_RUNS_DIR"] = str(root / "runs")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", default=str(REPO_ROOT / "configs/tool_mutation/cpu.yaml"))
    ap.add_argument("--seeds", type=int, default=2, help="keep the first this many seeds of the config")
    ap.add_argument("--n-steps", type=int, default=None, help="override n_steps (tool mutation)")
    ap.add_argument("--workers", type=int, default=2, help="CPUs of the local Ray (= parallel runs)")
    args = ap.parse_args(argv)

    cfg = dict(experiment.load(args.config))  # a copy to change (the society's config is read-only)
    if isinstance(cfg.get("seeds"), list):
        cfg["seeds"] = cfg["seeds"][:args.seeds]
    else:
        cfg["seeds"] = min(cfg["seeds"], args.seeds)
    if args.n_steps:
        cfg["n_steps"] = args.n_steps
    cfg = experiment.runner(cfg["kind"]).validate_config(cfg)
    n_runs = len(experiment.runner(cfg["kind"]).shards(cfg))
    print(f"{cfg['experiment']} ({cfg['scale']}): {n_runs} runs, {os.cpu_count()} cores, "
          f"{args.workers} Ray workers, 1 CPU and 1 torch thread per run")

    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        _in(tmp / "serial")
        t0 = time.perf_counter()
        serial = sweep.run_sweep(cfg, serial=True, resources=sweep.Resources(cpus_per_run=1), progress=False)
        t_serial = time.perf_counter() - t0

        # control: the same runs on `workers` plain processes (no Ray): the ceiling this machine allows
        _in(tmp / "pool")
        from concurrent.futures import ProcessPoolExecutor
        import multiprocessing as mp
        env = {k: os.environ[k] for k in ("GE_DATA_DIR", "GE_RUNS_DIR")}
        shards = experiment.runner(cfg["kind"]).shards(cfg)
        t0 = time.perf_counter()
        with ProcessPoolExecutor(args.workers, mp_context=mp.get_context("spawn")) as ex:
            pool_runs = list(ex.map(partial(sweep.run_shard, env=env, threads=1), shards))
        t_pool = time.perf_counter() - t0
        assert all(r["status"] == "ok" for r in pool_runs)

        import ray
        t0 = time.perf_counter()
        ray.init(num_cpus=args.workers, include_dashboard=False, log_to_driver=False)
        t_init = time.perf_counter() - t0
        walls, results = {}, {}
        for name in ("cold", "warm"):          # cold: workers start and import torch; warm: reused
            _in(tmp / name)
            t0 = time.perf_counter()
            results[name] = sweep.run_sweep(cfg, resources=sweep.Resources(cpus_per_run=1), progress=False)
            walls[name] = time.perf_counter() - t0
        ray.shutdown()

        for name, res in results.items():
            assert serial.exit_code == 0 and res.exit_code == 0, "a run failed"
            pd.testing.assert_frame_equal(serial.rows, res.rows)

        def med(res):
            w = sorted(r["wall_s"] for r in res.runs)
            return f"{w[len(w) // 2]:.1f}"

        print(f"{'mode':<34}{'wall s':>8}{'median run s':>14}")
        print(f"{'serial, one process':<34}{t_serial:>8.1f}{med(serial):>14}")
        w = sorted(r["wall_s"] for r in pool_runs)
        print(f"{str(args.workers) + ' plain processes (no Ray)':<34}{t_pool:>8.1f}{w[len(w) // 2]:>14.1f}")
        for name in ("cold", "warm"):
            pids = len({r.get("pid") for r in results[name].runs})
            label = f"Ray, {args.workers} workers, {name} ({pids} procs)"
            print(f"{label:<34}{walls[name]:>8.1f}{med(results[name]):>14}")
        print(f"{'Ray start-up (once per sweep)':<34}{t_init:>8.1f}")
        print(f"speed-up serial / Ray: warm workers {t_serial / walls['warm']:.2f}x, cold workers "
              f"{t_serial / walls['cold']:.2f}x, cold incl. Ray start-up {t_serial / (walls['cold'] + t_init):.2f}x; "
              f"merged rows identical in all modes")
        print(f"ceiling without Ray (plain processes): {t_serial / t_pool:.2f}x; "
              f"load average now {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores (other jobs slow every mode)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
