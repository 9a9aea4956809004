"""A society generation, phase by phase, two ways side by side: the trainers, or the engines.

``--compare trainers`` (the default): the founders and one (arm, seed) of a society config run for
``--generations`` generations (default 2: generation 0 breeds, generation 1 only evaluates) under
three trainers (:mod:`lib.engines.batched`): ``sequential`` (the reference: one peft adapter after
another), ``batched`` (all adapters of a step in lock-step, one adapter's rows per forward: the CPU
default) and ``batched-1pass`` (every adapter's rows in one forward and one backward: the CUDA
default), alternating their order per repeat so that load on the machine hits all alike; the agents
answer through the folded engine. The founders are trained once per trainer and timed; every
generation run starts from the sequential trainer's founders, so the rows compare the children's
training alone. Prints the founders' seconds and ratio, per phase the median seconds of the
breeding generation and the ratio to the reference, whether the rows are identical, max |ΔA| and
|ΔB| of the trained factors (founders and children) against the reference, and the train phase's
FLOP floor.

``--compare engines``: the same generation with ``engine="peft"`` (peft mixed-adapter batches and
peft merges, HF ``generate``) against ``engine="folded"`` (:mod:`lib.engines.folded`).

Floors: FLOPs at the machine's matmul throughput (measured here, best of 5, a one-thread float32
matmul of the model's own MLP shape). FLOPs: 2 per weight of every Linear layer (the output head
included) per token the phase must process — prompt tokens and generated tokens (counted by the
run), and ×2 for a training token (the forward, and the backward through the frozen base to the
LoRA factors), once for the tokens of the rows and once for the rows as padded to their batch's
longest (what a batch computes). Attention scores and the LoRA factors are left out, so a floor is
a lower bound.

    python benchmarks/society_phases.py configs/society/cpu.yaml [--arm full] [--repeats 3]
    python benchmarks/society_phases.py configs/society/cpu.yaml --set n_inherit=1000 --set epochs=3
    python benchmarks/society_phases.py configs/society/cpu.yaml --compare engines
    python benchmarks/society_phases.py configs/society/cpu.yaml --from-data   # the committed run's own times
"""
from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from lib.society import run as society
from lib.engines.batched import ROWS_ENV
from lib.society.config import load_file
from lib.society.founders import ensure_founders
from lib.engines.models import load_base
from lib.engines.timing import PhaseTimer

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


def one_run(base, cfg: dict, root: Path, tag: str, *, engine: str = "folded", trainer: str = "batched",
            runs: Path | None = None) -> tuple[pd.DataFrame, pd.DataFrame, dict]:
    """The run under ``engine`` and ``trainer`` (adapters under ``runs``); the work (tokens, steps)
    is counted over generation 0 alone (the breeding generation), then the run resumes to the end."""
    run = society.validate_config({**cfg, "adapters_dir": str(runs or root / "runs")})
    folder = root / f"data_{tag}"
    timer = PhaseTimer(cuda=False)
    try:
        society.run_experiment(run, folder=folder, base=base, engine=engine, trainer=trainer, timer=timer,
                               interrupt_after=0)
    except society.Interrupted:
        pass
    society.run_experiment(run, folder=folder, base=base, engine=engine, trainer=trainer)
    w = society.generation_walls(run, folder)
    return society.load_rows(run, folder), w, {r["phase"]: r for r in timer.rows()}


TRAINERS = {"sequential": ("sequential", None), "batched": ("batched", None), "batched-1pass": ("batched", "0")}


@contextmanager
def rows_env(value: str | None):
    """:data:`lib.engines.batched.ROWS_ENV` set to ``value`` (None: unset) inside the block."""
    old = os.environ.pop(ROWS_ENV, None)
    if value is not None:
        os.environ[ROWS_ENV] = value
    try:
        yield
    finally:
        os.environ.pop(ROWS_ENV, None)
        if old is not None:
            os.environ[ROWS_ENV] = old


def factors_of(folder: Path) -> dict:
    from safetensors.torch import load_file
    return load_file(str(folder / "adapter_model.safetensors"))


def max_delta(a: list[Path], b: list[Path]) -> tuple[float, float]:
    """max |ΔA| and max |ΔB| between the adapters of the folders ``a`` and ``b`` (pairwise)."""
    da = db = 0.0
    for x, y in zip(a, b):
        fx, fy = factors_of(x), factors_of(y)
        for k in fx:
            d = float((fx[k] - fy[k]).abs().max())
            if ".lora_A." in k:
                da = max(da, d)
            else:
                db = max(db, d)
    return da, db


def floors(wk: dict, fpt: float, gf: float) -> str:
    """The train phase's floors (real and padded tokens) in seconds."""
    tok, pad = wk.get("train_tokens", 0), wk.get("train_padded_tokens", 0)
    return f"{2 * tok * fpt / gf / 1e9:.2f} / {2 * pad * fpt / gf / 1e9:.2f}"


def compare_trainers(base, cfg: dict, args, root: Path) -> None:
    names = list(TRAINERS)
    founders_s: dict[str, list] = {n: [] for n in names}
    founder_dirs, founder_work = {}, {}
    for k in range(args.repeats):
        for n in (names if k % 2 == 0 else names[::-1]):
            runs = root / f"founders_{n}"
            shutil.rmtree(runs, ignore_errors=True)
            timer = PhaseTimer(cuda=False)
            trainer, rows = TRAINERS[n]
            with rows_env(rows), timer.phase("founders"):
                at = society.validate_config({**cfg, "adapters_dir": str(runs)})
                founder_dirs[n] = ensure_founders(base, at, args.seed, trainer=trainer, counter=timer.count)
            founders_s[n].append(timer.rows()[0]["wall_s"])
            founder_work[n] = timer.rows()[0]
    shutil.copytree(root / "founders_sequential", root / "runs")  # every generation run starts from these
    walls: dict[str, list] = {n: [] for n in names}
    rows, work, children = {}, {}, {}
    for k in range(args.repeats):
        for n in (names if k % 2 == 0 else names[::-1]):
            trainer, env = TRAINERS[n]
            with rows_env(env):
                r, w, phases = one_run(base, cfg, root, f"{n}{k}", trainer=trainer)
            walls[n].append(w.assign(repeat=k))
            rows.setdefault(n, r)
            work.setdefault(n, phases)
            last = sorted((root / "runs" / f"s{args.seed}" / args.arm).glob(f"gen{args.generations - 1}/agent*"))
            if n not in children:
                children[n] = root / f"children_{n}"
                shutil.rmtree(children[n], ignore_errors=True)
                children[n].mkdir()
                for d in last:
                    shutil.copytree(d, children[n] / d.name)
            shutil.rmtree(root / "runs" / f"s{args.seed}" / args.arm)  # children, not founders
    load = os.getloadavg()
    gf, fpt = header(base, cfg, args, load, "trainer")
    ref = "sequential"
    print(f"\nfounders ({cfg['agents']} x {cfg['spec_train']} tasks x {cfg['spec_epochs']} epochs, "
          f"{founder_work[ref].get('train_steps', 0)} steps), median over repeats (seconds):")
    print(f"{'trainer':<14} {'seconds':>8} {'ratio':>7}   {'FLOP floor (tokens / padded)':>28}")
    for n in names:
        a, b = np.median(founders_s[ref]), np.median(founders_s[n])
        print(f"{n:<14} {b:>8.2f} {a / b:>6.2f}x   {floors(founder_work[n], fpt, gf):>28}")
    breeding = {n: (lambda d: d[d.generation < args.generations - 1])(pd.concat(v)) for n, v in walls.items()}
    med = {n: b[[c for c in PHASES if c in b] + ["wall_s"]].median() for n, b in breeding.items()}
    print(f"\nbreeding generation (generation 0; children {cfg['n_inherit']} answers x {cfg['epochs']} epochs), "
          f"median over repeats (seconds; ratio = sequential / trainer):")
    print(f"{'phase':<10} " + " ".join(f"{n:>14} {'ratio':>6}" for n in names))
    for ph in [c for c in PHASES if c in med[ref]] + ["wall_s"]:
        a = float(med[ref][ph])
        label = "generation" if ph == "wall_s" else ph
        print(f"{label:<10} " + " ".join(f"{float(med[n][ph]):>14.2f} {a / float(med[n][ph]) if float(med[n][ph]) else float('nan'):>5.2f}x"
                                         for n in names))
    wk = work[ref].get("train", {})
    print(f"train phase: {wk.get('train_steps', 0)} steps, {wk.get('train_tokens', 0)} tokens "
          f"({wk.get('train_padded_tokens', 0)} padded); FLOP floor {floors(wk, fpt, gf)} s (tokens / padded)")
    key = ["arm", "seed", "generation", "agent", "metric"]
    ra = rows[ref].sort_values(key).reset_index(drop=True)
    for n in names[1:]:
        rb = rows[n].sort_values(key).reset_index(drop=True)
        same = (ra[key].equals(rb[key]) and (ra.value.to_numpy() == rb.value.to_numpy()).all())
        share = float((ra.value.to_numpy() == rb.value.to_numpy()).mean()) if ra[key].equals(rb[key]) else float("nan")
        fa, fb = max_delta(founder_dirs[ref], founder_dirs[n])
        ca, cb = max_delta(sorted(children[ref].iterdir()), sorted(children[n].iterdir()))
        print(f"{n} against sequential: rows {len(rb)} = {len(ra)}, identical: {same} (share of equal values "
              f"{share:.3f}); founders max |dA| {fa:.2g}, |dB| {fb:.2g}; last generation's children "
              f"max |dA| {ca:.2g}, |dB| {cb:.2g}")


def header(base, cfg: dict, args, load, what: str) -> tuple[float, float]:
    gf = matmul_gflops(base.model.config.hidden_size, base.model.config.intermediate_size)
    fpt = flops_per_token(base.model.get_base_model() if hasattr(base.model, "get_base_model") else base.model)
    print(f"{args.config}{''.join(' --set ' + x for x in args.set)}: arm {args.arm}, seed {args.seed}, "
          f"{args.generations} generations x {args.repeats} repeats per {what}, torch threads 1; load average "
          f"{load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} (1 / 5 / 15 min) on {os.cpu_count()} cores")
    print(f"matmul throughput (1 thread, float32, 2048 x {base.model.config.hidden_size} @ "
          f"{base.model.config.hidden_size} x {base.model.config.intermediate_size}): {gf:.1f} GFLOP/s; "
          f"{fpt / 1e6:.2f} MFLOP per token through the model")
    return gf, fpt


def compare_engines(base, cfg: dict, args, root: Path) -> None:
    t0 = time.perf_counter()
    shared = society.validate_config({**cfg, "adapters_dir": str(root / "runs")})
    ensure_founders(base, shared, args.seed)  # shared by both engines
    founders_s = time.perf_counter() - t0
    walls = {"peft": [], "folded": []}
    rows, work = {}, {}
    for k in range(args.repeats):
        for engine in (("peft", "folded") if k % 2 == 0 else ("folded", "peft")):
            r, w, phases = one_run(base, cfg, root, f"{engine}{k}", engine=engine)
            walls[engine].append(w.assign(repeat=k))
            rows.setdefault(engine, r)
            work.setdefault(engine, phases)
            for d in root.joinpath("runs").glob(f"s{args.seed}/{args.arm}"):  # children, not founders
                shutil.rmtree(d)
    load = os.getloadavg()
    breeding = {e: (lambda d: d[d.generation < args.generations - 1])(pd.concat(v)) for e, v in walls.items()}
    med = {e: b[[c for c in PHASES if c in b] + ["wall_s"]].median() for e, b in breeding.items()}
    gf, fpt = header(base, cfg, args, load, "engine")
    print(f"founders {founders_s:.0f} s (once)")
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
            floor, what = floors(wk, fpt, gf), f"{wk.get('train_tokens', 0)} training tokens, {wk.get('train_steps', 0)} steps"
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


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("config")
    ap.add_argument("--compare", choices=("trainers", "engines"), default="trainers")
    ap.add_argument("--arm", default="full")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--generations", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="override a config value (YAML), e.g. --set n_inherit=1000 --set epochs=3")
    ap.add_argument("--from-data", action="store_true",
                    help="summarise the phase times recorded by the committed run instead of running")
    args = ap.parse_args()
    cfg = dict(load_file(args.config))  # every key, its overlays resolved
    for kv in args.set:
        k, sep, v = kv.partition("=")
        if not sep or k not in cfg:
            raise SystemExit(f"--set {kv!r}: expected KEY=VALUE with a key of {args.config}")
        cfg[k] = yaml.safe_load(v)
    cfg = society.validate_config(cfg)
    if args.from_data:
        return from_data(cfg)
    cfg = society.validate_config({**cfg, "arms": [args.arm], "seeds": [args.seed], "generations": args.generations})
    base = load_base(cfg["base_model"])
    with tempfile.TemporaryDirectory() as tmp:
        (compare_trainers if args.compare == "trainers" else compare_engines)(base, cfg, args, Path(tmp))


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
