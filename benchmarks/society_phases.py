"""Per-phase wall time of the society's generations at a given scale (one arm, one seed, real loop).

Runs ``generations`` generations of one (arm, seed) of a society config into a temporary folder
(adapters too) and prints, per generation, the seconds spent in each phase the loop records:

- ``founders``: training the gen-0 specialists (once per seed, shared by all arms);
- ``evaluate``: all agents answer the test + val + conformity pools (and the base, at t = 0);
- ``screen``: the candidate merges answer the val pool (or the conformity pool, g = 0);
- ``inherit``: the winners (or copied parents) answer the inheritance pool (+ diagnostics);
- ``train``: a fresh LoRA per child on its source's answers (elites copied).

The total of the whole sweep is estimated from these figures and printed with its assumptions.

    python benchmarks/society_phases.py configs/society/cpu.yaml [--arm full] [--generations 2]
    python benchmarks/society_phases.py configs/society/cpu.yaml --from-data   # the committed run's own times
"""
from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import pandas as pd

from lib.core.config import load_yaml
from lib.llm import society


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("config")
    ap.add_argument("--arm", default="full")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--generations", type=int, default=2)
    ap.add_argument("--from-data", action="store_true",
                    help="summarise the phase times recorded by the committed run instead of running")
    args = ap.parse_args()
    cfg = society.validate_config(load_yaml(args.config))
    if args.from_data:
        return from_data(cfg)
    with tempfile.TemporaryDirectory() as tmp:
        run = {**cfg, "arms": [args.arm], "seeds": [args.seed], "generations": args.generations,
               "adapters_dir": str(Path(tmp) / "runs")}
        t0 = time.time()
        society.run_experiment(run, folder=Path(tmp) / "data")
        total = time.time() - t0
        w = society.generation_walls(run, Path(tmp) / "data")
    cols = [c for c in ("founders", "evaluate", "screen", "inherit", "train") if c in w]
    pd.set_option("display.width", 140)
    print(f"{args.config}: arm {args.arm}, seed {args.seed}, {args.generations} generations, "
          f"torch threads 1, {os.cpu_count()} cores; {total:.1f} s in all (base load included)")
    print(w[["generation", "wall_s", *cols]].round(2).to_string(index=False))
    breeding = w[w.generation < args.generations - 1]
    last = w[w.generation == args.generations - 1]
    per_gen = float(breeding.wall_s.mean())  # a generation's wall time excludes the founders
    founders = float(w.get("founders", pd.Series([0.0])).fillna(0).sum())
    G, arms, seeds = cfg["generations"], len(cfg["arms"]), len(society.seed_list(cfg))
    est = seeds * founders + arms * seeds * ((G - 1) * per_gen + float(last.wall_s.mean()))
    print(f"breeding generation {per_gen:.1f} s ({', '.join(f'{c} {breeding[c].mean():.1f}' for c in cols if c != 'founders')}); "
          f"founders {founders:.1f} s per seed; evaluation-only last generation {float(last.wall_s.mean()):.1f} s")
    print(f"estimate for {args.config}: {arms} arms x {seeds} seeds x {G} generations = {est / 60:.0f} core-minutes "
          f"(~{est / 120:.0f} min on 2 cores with 2 sweep workers; arm '{args.arm}' costs stand for every arm)")


def from_data(cfg: dict) -> None:
    """Per-phase seconds of every generation the config's run recorded, by arm (mean over seeds)."""
    w = society.generation_walls(cfg)
    if w.empty:
        raise SystemExit(f"no progress files for {cfg['experiment']} ({cfg['scale']}): run it first")
    cols = [c for c in ("evaluate", "screen", "inherit", "train") if c in w]
    breeding = w[w.generation < cfg["generations"] - 1]
    pd.set_option("display.width", 140)
    print(f"{cfg['experiment']} ({cfg['scale']}), recorded by the run itself: seconds per breeding generation "
          f"(generations 0-{cfg['generations'] - 2}), mean over seeds and generations")
    t = breeding.groupby("arm")[["wall_s", *cols]].mean()
    t.loc["all arms"] = breeding[["wall_s", *cols]].mean()
    print(t.round(1).fillna(0).to_string())
    f = w["founders"].dropna() if "founders" in w else pd.Series(dtype=float)
    f = f[f > 1]  # the arm that trained a seed's founders (others found them on disk)
    print(f"founders: {f.mean():.0f} s per seed (6 LoRA specialists; n = {len(f)}); evaluation-only last "
          f"generation {w[w.generation == cfg['generations'] - 1].wall_s.mean():.1f} s; "
          f"sum of all generations {w.wall_s.sum() / 60:.0f} core-min + founders {f.sum() / 60:.0f} core-min")


if __name__ == "__main__":
    main()
