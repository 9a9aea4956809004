"""The paper-scale society on one CUDA GPU, in calls of at most ~10 minutes that resume each other.

    python -m lib.society.gpu_run [--config configs/society/paper.yaml] [--seed 0] [--budget-s 540] [--engine auto]

Each call (a) prints the environment (torch / CUDA versions, the GPU, its free memory); (b) runs
the config's (arm, seed) shards for one seed, all arms, *one generation at a time* and breadth
first (every arm's generation t before any arm's t + 1, so a short call times every arm), every
generation timed phase by phase (founders, evaluate, merge, screen, inherit, train, load) with
tokens per second and peak GPU memory; the first call's first generation is the per-phase
timing of one paper generation; (c) stops launching generations when the time left in the budget
is less than the longest generation measured so far (or, before any was measured, refuses none),
so re-running the same command continues where the last call stopped — the loop writes each
generation's rows and adapters before marking it done; ``--engine`` chooses how agents answer and merge
(:func:`lib.engines.agents.make_agents`: ``auto``, peft's mixed batches on a bf16 base, is the reference;
``multilora`` batches every agent's rows through two batched matmuls per adapted module); (d) draws ``figures/<scale>/`` from
whatever society data exists (the first verdict's figures, :func:`lib.society.studies.verdict.figures.draw_all`).

Timings of every call are appended to ``<data folder>/gpu_timings.jsonl`` (one JSON object per
generation: arm, seed, generation, per-phase rows, wall seconds) — small, committed with the data.

Without CUDA it prints one line and exits with status 2 (``--allow-cpu`` runs anyway, in fp32, for
configs that allow it: tests use it with a micro config).
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from lib.core.config import ConfigError
from lib.core.device import device_name
from lib.core.jsonfile import append_jsonl
from lib.core.manifest import read_manifest, write_manifest
from lib.core.paths import REPO_ROOT, data_dir
from lib.engines.agents import ENGINES
from lib.engines.models import base_adapter_path, load_base
from lib.engines.timing import PhaseTimer
from lib.society import run as society
from lib.society.config import SocietyConfig, base_dtype, load_file, validate_config
from lib.society.studies.verdict.figures import draw_all
from lib.society.shard_job import Interrupted

DEFAULT_CONFIG = REPO_ROOT / "configs" / "society" / "paper.yaml"
TIMINGS = "gpu_timings.jsonl"


def environment() -> dict:
    """torch / CUDA / GPU facts of this process (free and total memory in GiB)."""
    import platform
    import torch
    env = {"python": platform.python_version(), "torch": torch.__version__,
           "cuda_runtime": torch.version.cuda, "cuda_available": torch.cuda.is_available()}
    try:
        import peft
        import transformers
        env.update(transformers=transformers.__version__, peft=peft.__version__)
    except ImportError:
        pass
    if torch.cuda.is_available():
        free, total = torch.cuda.mem_get_info()
        p = torch.cuda.get_device_properties(0)
        env.update(gpu=torch.cuda.get_device_name(0), gpus_visible=torch.cuda.device_count(),
                   capability=f"{p.major}.{p.minor}", bf16=torch.cuda.is_bf16_supported(),
                   mem_free_gib=round(free / 2**30, 1), mem_total_gib=round(total / 2**30, 1),
                   cudnn=torch.backends.cudnn.version())
    return env


def next_work(cfg: SocietyConfig, folder: Path) -> tuple[str, int, int] | None:
    """``(arm, seed, generation)`` the loop would run next, or None when done: breadth first, the
    unfinished shard with the fewest generations on disk (ties in ``cfg.runs()`` order), so that a
    call too short for the whole config still times every arm's generations."""
    st = society.shard_status(cfg, folder)
    todo = [(0 if d is None else d + 1, k, arm, seed) for k, (arm, seed) in enumerate(cfg.runs())
            if (d := st[f"{arm}_s{seed}"]) is None or d < cfg["generations"] - 1]
    if not todo:
        return None
    t, _, arm, seed = min(todo)
    return arm, seed, t


def measured_gen_s(cfg: SocietyConfig, folder: Path) -> float | None:
    """The longest generation wall time on disk for ``cfg`` (progress files), or None."""
    w = society.generation_walls(cfg, folder)
    return float(w.wall_s.max()) if len(w) else None


def run_budgeted(cfg, *, base, folder: str | Path | None = None, budget_s: float = 540.0,
                 max_generations: int | None = None, engine: str = "auto", log=print) -> dict:
    """Run ``cfg`` generation by generation until it is complete, ``budget_s`` seconds (since
    this call began) cannot fit another generation, or ``max_generations`` were run.

    A generation is launched only if ``elapsed + estimate <= budget_s``, the estimate being the
    longest generation measured (on disk or in this call; a shard's generation 0 also pays for the
    founders the first time a seed runs). Returns ``{"done", "generations", "timings", "stopped"}``.
    Each generation is timed by a :class:`lib.engines.timing.PhaseTimer`; its rows are appended to
    ``<folder>/gpu_timings.jsonl`` (with the ``engine`` the agents answered through,
    :func:`lib.engines.agents.make_agents`).
    """
    t0 = time.perf_counter()
    cfg = validate_config(cfg)
    folder = Path(folder or data_dir(cfg["scale"], cfg["experiment"]))
    ran, timings, founders_s, stopped = 0, [], None, ""
    while True:
        work = next_work(cfg, folder)
        if work is None:
            society.run_experiment(cfg, folder=folder, base=base, engine=engine)  # rewrites the manifest: complete
            return {"done": True, "generations": ran, "timings": timings, "stopped": "complete"}
        arm, seed, t = work
        if max_generations is not None and ran >= max_generations:
            stopped = f"max_generations={max_generations}"
            break
        est = measured_gen_s(cfg, folder)
        no_founders = not any((cfg.adapters_root() / f"s{seed}").glob("founders*"))
        if est is not None and t == 0 and no_founders and founders_s is not None:
            est += founders_s
        elapsed = time.perf_counter() - t0
        if elapsed >= budget_s or (est is not None and elapsed + est > budget_s):
            need = "" if est is None else f" < {est:.0f} s measured for"
            stopped = (f"{max(0.0, budget_s - elapsed):.0f} s left in the budget{need} the next generation "
                       f"({arm}, seed {seed}, generation {t})")
            break
        timer = PhaseTimer()
        before = float((read_manifest(folder) or {}).get("wall_s") or 0.0)
        tic = time.perf_counter()
        try:  # the one shard's config: the same folder and core config, only this (arm, seed)
            society.run_experiment(cfg.shard(arm, seed), folder=folder, base=base, interrupt_after=t, timer=timer,
                                   engine=engine)
        except Interrupted:
            pass
        wall = time.perf_counter() - tic
        _account(cfg, folder, before + wall)
        ran += 1
        rec = {"arm": arm, "seed": seed, "generation": t, "wall_s": round(wall, 2),
               "phases": timer.rows(), "device": _device(base), "engine": engine,
               "at": time.strftime("%Y-%m-%dT%H:%M:%S")}
        if "founders" in timer.stats:
            founders_s = timer.stats["founders"].wall_s
        timings.append(rec)
        append_jsonl(folder / TIMINGS, rec, fix="it only logs timings: delete that line (or the file) and run again")
        log(f"[{arm} s{seed} gen {t}] {wall:.1f} s\n{timer.report()}")
    log(f"stopped: {stopped}; re-run the same command to continue")
    return {"done": False, "generations": ran, "timings": timings, "stopped": stopped}


def _account(cfg: SocietyConfig, folder: Path, wall_s: float) -> None:
    """After one shard's generation, run through that shard's own config: the manifest of the whole
    ``cfg`` again (its run config, shard table and status recomputed from the disk), ``wall_s`` the
    seconds of every generation run so far."""
    m = read_manifest(folder)
    done = all(v == cfg.generations - 1 for v in society.shard_status(cfg, folder).values())
    write_manifest(folder, cfg.core, started=m["started"], wall_s=wall_s, status="complete" if done else "running",
                   extra=society.manifest_extra(cfg, folder, m.get("dtype")))


def _device(base) -> str:
    return device_name() if str(base.device).startswith("cuda") else f"cpu ({base.device})"


def draw_figures(scale: str, log=print) -> list[str]:
    """Draw the society figures of ``scale`` from whatever data exists; [] (and a line) if none."""
    try:
        saved = draw_all(scale)
    except FileNotFoundError as e:
        log(f"figures: {e}")
        return []
    log(f"figures/{scale}/: {', '.join(saved)}")
    return saved


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m lib.society.gpu_run", description=__doc__.splitlines()[0])
    ap.add_argument("--config", default=str(DEFAULT_CONFIG), help="a society config (default: the paper scale)")
    ap.add_argument("--seed", type=int, default=0, help="the seed to run (all arms of it); default 0")
    ap.add_argument("--budget-s", type=float, default=540.0,
                    help="seconds this call may spend, model load included (default 540: fits a 10-minute "
                         "slot with the figures); 0 only draws the figures")
    ap.add_argument("--no-figures", action="store_true", help="skip drawing figures")
    ap.add_argument("--engine", default="auto", choices=ENGINES,
                    help="how agents answer and merge (default auto: peft on a bf16 base, the reference; "
                         "multilora: every agent's rows in shared batches, two batched matmuls per module)")
    ap.add_argument("--allow-cpu", action="store_true", help=argparse.SUPPRESS)  # tests: micro configs on a CPU
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    import torch
    if not torch.cuda.is_available() and not args.allow_cpu:
        print("gpu_run: no CUDA GPU is visible (torch.cuda.is_available() is False); run this on a machine "
              "with one, or the cpu scale here: python -m lib.experiment configs/society/cpu.yaml", file=sys.stderr)
        return 2
    try:
        cfg = validate_config({**load_file(args.config), "seeds": [args.seed]})
    except ConfigError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    env = environment()
    print("environment: " + json.dumps(env))
    base = None
    if args.budget_s > 0:
        tic = time.perf_counter()
        base = load_base(cfg["base_model"], dtype=base_dtype(cfg),  # as run_experiment resolves it
                         adapter=base_adapter_path(cfg["base_adapter"]))
        print(f"base {cfg['base_model']} ({base.info.get('dtype')}, {base.info['params'] / 1e6:.1f} M parameters) "
              f"loaded in {time.perf_counter() - tic:.1f} s on {base.device}")
    left = args.budget_s - (time.perf_counter() - t0)
    res = run_budgeted(cfg, base=base, budget_s=left, engine=args.engine)
    folder = data_dir(cfg["scale"], cfg["experiment"])
    print(f"{'complete' if res['done'] else 'partial'}: {res['generations']} generation(s) this call; "
          f"shards {society.shard_status(cfg, folder)}; data in {folder}")
    if not args.no_figures:
        draw_figures(cfg["scale"])
    print(f"call wall time {time.perf_counter() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
