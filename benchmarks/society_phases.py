"""A society generation, phase by phase: today's path (peft) against the folded path, side by side.

Runs one (arm, seed) of a society config for ``--generations`` generations (default 2: generation 0
breeds, generation 1 only evaluates) twice per repeat — with ``engine="peft"`` (peft mixed-adapter
batches and peft merges, HF ``generate``) and ``engine="folded"`` (each update folded into the
weights, merges on the factors, a greedy decoder that drops finished rows; :mod:`lib.llm.folded`) —
from the same founders, alternating the two so that load on the machine hits both alike. Prints:

- per phase (load, evaluate, screen, inherit, train) the median seconds of the breeding generation
  under each engine and their ratio, and the whole breeding generation's ratio;
- whether the two engines wrote identical rows (every value of every row);
- each phase's floor: its FLOPs at the machine's matmul throughput (measured here, best of 5, with a
  one-thread float32 matmul of the model's own MLP shape). FLOPs: 2 per weight of every Linear layer
  (the output head included) per token the phase must process — prompt tokens and generated tokens
  of generation 0 (counted by the folded run), and ×2 for a training token (the forward, and the
  backward through the frozen base to the LoRA factors). Attention scores and the LoRA factors
  themselves are left out, so the floor is a lower bound.

    python benchmarks/society_phases.py configs/society/cpu.yaml [--arm full] [--repeats 3]
    python benchmarks/society_phases.py configs/society/cpu.yaml --from-data   # the committed run's own times
"""
from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from lib.core.config import load_yaml
from lib.llm import society
from lib.llm.founders import ensure_founders
from lib.llm.models import load_base
from lib.llm.timing import PhaseTimer

PHASES = ("load", "evaluate", "screen", "inherit", "train")


def matmul_gflops(hidden: int, inter: int, rows: int = 2048, reps: int = 30, tries: int = 5) -> float:
    """One-thread float32 matmul throughput (GFLOP/s, best of ``tries``) on the model's MLP shape
    (rows × hidden @ hidden × inter)."""
    import torch
    x, w = torch.randn(rows, hidden), torch.randn(inter, hidden)
    torch.nn.functional.linear(x, w)
    best = 0.0
    for _ in range(tries):
        t = time.perf_counter()
        for _ in range(reps):
            torch.nn.functional.linear(x, w)
        best = max(best, 2 * rows * hidden * inter * reps / (time.perf_counter() - t) / 1e9)
    return best


def flops_per_token(model) -> float:
    """2 × the parameters a token passes through (every Linear, the tied output head included)."""
    import torch
    return 2.0 * sum(m.weight.numel() for m in model.modules() if isinstance(m, torch.nn.Linear))


def one_run(base, cfg: dict, engine: str, root: Path, tag: str) -> tuple[pd.DataFrame, pd.DataFrame, dict]:
    """The run under ``engine``; the work (tokens, steps) is counted over generation 0 alone (the
    breeding generation), then the run resumes to the end."""
    run = {**cfg, "adapters_dir": str(root / "runs")}
    folder = root / f"data_{tag}"
    timer = PhaseTimer(cuda=False)
    try:
        society.run_experiment(run, folder=folder, base=base, engine=engine, timer=timer, interrupt_after=0)
    except society.Interrupted:
        pass
    society.run_experiment(run, folder=folder, base=base, engine=engine)
    w = society.generation_walls(run, folder)
    return society.load_rows(run, folder), w, {r["phase"]: r for r in timer.rows()}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("config")
    ap.add_argument("--arm", default="full")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--generations", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--from-data", action="store_true",
                    help="summarise the phase times recorded by the committed run instead of running")
    args = ap.parse_args()
    cfg = society.validate_config(load_yaml(args.config))
    if args.from_data:
        return from_data(cfg)
    cfg = {**cfg, "arms": [args.arm], "seeds": [args.seed], "generations": args.generations}
    base = load_base(cfg["base_model"])
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        t0 = time.perf_counter()
        ensure_founders(base, {**cfg, "adapters_dir": str(root / "runs")}, args.seed)  # shared by both engines
        founders_s = time.perf_counter() - t0
        walls = {"peft": [], "folded": []}
        rows, work = {}, {}
        for k in range(args.repeats):
            for engine in (("peft", "folded") if k % 2 == 0 else ("folded", "peft")):
                r, w, phases = one_run(base, cfg, engine, root, f"{engine}{k}")
                walls[engine].append(w.assign(repeat=k))
                rows.setdefault(engine, r)
                work.setdefault(engine, phases)
                for d in root.joinpath("runs").glob(f"s{args.seed}/{args.arm}"):  # children, not founders
                    import shutil
                    shutil.rmtree(d)
    load = os.getloadavg()
    breeding = {e: (lambda d: d[d.generation < args.generations - 1])(pd.concat(v)) for e, v in walls.items()}
    med = {e: b[[c for c in PHASES if c in b] + ["wall_s"]].median() for e, b in breeding.items()}
    gf = matmul_gflops(base.model.config.hidden_size, base.model.config.intermediate_size)
    fpt = flops_per_token(base.model.get_base_model() if hasattr(base.model, "get_base_model") else base.model)
    print(f"{args.config}: arm {args.arm}, seed {args.seed}, {args.generations} generations x {args.repeats} "
          f"repeats per engine, torch threads 1; founders {founders_s:.0f} s (once); load average "
          f"{load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} (1 / 5 / 15 min) on {os.cpu_count()} cores")
    print(f"matmul throughput (1 thread, float32, 2048 x {base.model.config.hidden_size} @ "
          f"{base.model.config.hidden_size} x {base.model.config.intermediate_size}): {gf:.1f} GFLOP/s; "
          f"{fpt / 1e6:.2f} MFLOP per token through the model")
    print("\nbreeding generation (generation 0), median over repeats (seconds):")
    print(f"{'phase':<10} {'peft':>8} {'folded':>8} {'ratio':>7}   {'FLOP floor':>10}  (work in the folded run)")
    for ph in [c for c in PHASES if c in med["peft"]] + ["wall_s"]:
        a, b = float(med["peft"][ph]), float(med["folded"][ph])
        floor, what = "", ""
        wk = work["folded"].get(ph, {})
        if ph in ("evaluate", "screen", "inherit") and wk:
            tok = wk.get("prompt_tokens", 0) + wk.get("decode_row_steps", 0)
            floor, what = f"{tok * fpt / gf / 1e9:.2f}", f"{wk.get('prompt_tokens', 0)} prompt + {wk.get('decode_row_steps', 0)} decode tokens"
        elif ph == "train" and wk:
            tok = wk.get("train_tokens", 0)
            floor, what = f"{2 * tok * fpt / gf / 1e9:.2f}", f"{tok} training tokens, {wk.get('train_steps', 0)} steps"
        label = "generation" if ph == "wall_s" else ph
        print(f"{label:<10} {a:>8.2f} {b:>8.2f} {a / b if b else float('nan'):>6.2f}x   {floor:>10}  {what}")
    key = ["arm", "seed", "generation", "agent", "metric"]
    ra, rb = (rows[e].sort_values(key).reset_index(drop=True) for e in ("peft", "folded"))
    same = ra.equals(rb)
    print(f"\nrows: peft {len(ra)}, folded {len(rb)}; identical: {same}")
    if not same:
        m = ra.merge(rb, on=key, suffixes=("_peft", "_folded"))
        diff = m[~np.isclose(m.value_peft, m.value_folded, equal_nan=True, rtol=0, atol=0)]
        print(f"{len(diff)} values differ, e.g.\n{diff.head(8).to_string()}")


def from_data(cfg: dict) -> None:
    """Per-phase seconds of every generation the config's run recorded, by arm (mean over seeds)."""
    w = society.generation_walls(cfg)
    if w.empty:
        raise SystemExit(f"no progress files for {cfg['experiment']} ({cfg['scale']}): run it first")
    w = w[~w.arm.str.startswith("baseline_")]
    cols = [c for c in PHASES if c in w]
    breeding = w[w.generation < cfg["generations"] - 1]
    pd.set_option("display.width", 140)
    print(f"{cfg['experiment']} ({cfg['scale']}), recorded by the run itself: seconds per breeding generation "
          f"(generations 0-{cfg['generations'] - 2}), mean over seeds and generations")
    t = breeding.groupby("arm")[["wall_s", *cols]].mean()
    t.loc["all arms"] = breeding[["wall_s", *cols]].mean()
    print(t.round(1).fillna(0).to_string())
    f = w["founders"].dropna() if "founders" in w else pd.Series(dtype=float)
    f = f[f > 1]  # the arm that trained a seed's founders (others found them on disk)
    print(f"founders: {f.mean():.0f} s per seed (n = {len(f)}); evaluation-only last generation "
          f"{w[w.generation == cfg['generations'] - 1].wall_s.mean():.1f} s; sum of all generations "
          f"{w.wall_s.sum() / 60:.0f} core-min + founders {f.sum() / 60:.0f} core-min")


if __name__ == "__main__":
    main()
