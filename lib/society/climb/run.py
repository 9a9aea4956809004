"""The climb's runner (kind ``llm_climb``), the contract :mod:`lib.experiment` and :mod:`lib.sweep` call:
:func:`validate_config`, :func:`run_experiment` (every (arm, seed) shard, each by
:func:`lib.society.climb.loop.run_climb_shard`, resuming finished rounds); :func:`shards`, :func:`shard_done`,
:func:`manifest_config`, :func:`refresh_manifest` and the readers of a data folder (:func:`shard_status`,
:func:`load_rows`, :func:`data_complete`) are the society's (:mod:`lib.society.run`), which serve a climb config
as they are.
``python -m lib.experiment configs/society_climb/smoke.yaml``.
"""
from __future__ import annotations

import time
from pathlib import Path

import pandas as pd
from tqdm.auto import tqdm

from lib.core.locks import shard_locks
from lib.core.manifest import check_resumable, now, read_manifest, write_manifest
from lib.core.paths import data_dir
from lib.core.rows import shard_path
from lib.core.tasks import verify
from lib.engines.batched import check_trainer
from lib.engines.models import base_identity, load_base
from lib.engines.timing import PhaseTimer
from lib.society.climb.config import ClimbConfig, validate_config
from lib.society.climb.loop import ClimbJob, run_climb_shard
from lib.society.config import check_device
# a climb shard is finished at its last round (ClimbConfig.last_step)
from lib.society.run import (data_complete, gather, load_rows, manifest_config, refresh_manifest,  # noqa: F401
                             shard_done, shard_status, shards)

__all__ = ["validate_config", "run_experiment", "shards", "shard_done", "manifest_config", "refresh_manifest",
           "shard_status", "load_rows", "data_complete", "gather"]


def manifest_extra(cfg: ClimbConfig, folder: Path) -> dict:
    return {"run_config": dict(cfg), "shards": shard_status(cfg, folder), "seeds": cfg.seed_list(),
            "base_model": base_identity(cfg.base_model), "dtype": "fp32",
            "note": "config/config_hash describe the data (arms and seeds excluded); shards lists the (arm, seed) "
                    "runs present and their last completed round"}


def run_experiment(cfg, *, folder: str | Path | None = None, verifier=verify, interrupt_after: int | None = None,
                   base=None, timer: PhaseTimer | None = None, trainer: str = "batched",
                   agents=None) -> pd.DataFrame:
    """Run every (arm, seed) of ``cfg`` (resuming finished rounds); return its rows. ``folder`` overrides
    ``data/<scale>/<experiment>/``; ``verifier`` (the loop's), ``interrupt_after`` and ``agents`` (the engine's
    factory) are test hooks; ``base`` reuses a loaded base."""
    cfg = validate_config(cfg)  # the door: checked and frozen once
    check_device(cfg)
    check_trainer(trainer)
    folder = Path(folder or data_dir(cfg.scale, cfg.experiment))
    check_resumable(folder, cfg.core)
    m = read_manifest(folder)
    started = m["started"] if m else now()
    status = shard_status(cfg, folder)
    todo = [(a, s) for a, s in cfg.runs() if status[f"{a}_s{s}"] is None or status[f"{a}_s{s}"] < cfg.last_step]
    prev_wall = float((m or {}).get("wall_s") or 0.0)
    if not todo:
        if m is None or m.get("status") != "complete" or m.get("shards") != status:
            write_manifest(folder, cfg.core, started=started, wall_s=prev_wall, status="complete",
                           extra=manifest_extra(cfg, folder))
        return load_rows(cfg, folder)
    with shard_locks([shard_path(folder, a, s) for a, s in todo]):
        t0 = time.time()

        def stamp(state: str) -> None:
            write_manifest(folder, cfg.core, started=started, status=state, extra=manifest_extra(cfg, folder),
                           wall_s=prev_wall + time.time() - t0)
        stamp("running")
        if base is None:
            base = load_base(cfg.base_model, dtype="fp32")
        extra = {} if agents is None else {"agents": agents}
        with tqdm(total=len(todo) * (cfg.rounds + 1), desc=f"{cfg.experiment} ({cfg.scale})", unit="round") as bar:
            for arm, seed in todo:
                run_climb_shard(ClimbJob(base, cfg, arm, seed, folder, verifier=verifier,
                                         interrupt_after=interrupt_after, progress=bar, timer=timer, trainer=trainer,
                                         **extra))
                stamp("running")
        stamp("complete" if data_complete(cfg, folder) else "running")
    return load_rows(cfg, folder)
