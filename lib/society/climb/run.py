"""The climb's runner (kind ``llm_climb``), the contract :mod:`lib.experiment` and :mod:`lib.sweep` call:
:func:`validate_config`, :func:`run_experiment` (every (arm, seed) shard, each by
:func:`lib.society.climb.loop.run_climb_shard`, resuming finished rounds), :func:`shards`, :func:`shard_done`,
:func:`manifest_config`; and the readers of a data folder (:func:`shard_status`, :func:`load_rows`).
``python -m lib.experiment configs/society_climb/smoke.yaml``.
"""
from __future__ import annotations

import time
from pathlib import Path

import pandas as pd
from tqdm.auto import tqdm

from lib.core.config import Frozen
from lib.core.locks import shard_locks
from lib.core.manifest import check_resumable, now, read_manifest, write_manifest
from lib.core.paths import data_dir
from lib.core.rows import last_done, shard_path
from lib.core.tasks import verify
from lib.engines.batched import check_trainer
from lib.engines.models import base_identity, load_base
from lib.engines.timing import PhaseTimer
from lib.society.climb.config import ClimbConfig, validate_config
from lib.society.climb.loop import ClimbJob, run_climb_shard
from lib.society.config import check_device
from lib.society.run import load_rows  # noqa: F401  (the society's reader serves a climb config as it is)

__all__ = ["validate_config", "run_experiment", "shards", "shard_done", "manifest_config", "shard_status",
           "load_rows", "data_complete"]


def manifest_config(cfg: ClimbConfig) -> Frozen:
    """What the data means (the config without the keys that choose shards): the folder's identity."""
    return cfg.core


def shards(cfg: ClimbConfig) -> list[ClimbConfig]:
    """One config per (arm, seed), seed by seed (a sweep finishes every arm of its first seeds first)."""
    return [cfg.shard(a, s) for a, s in cfg.runs()]


def shard_status(cfg: ClimbConfig, folder: Path | None = None) -> dict:
    """``{"<arm>_s<seed>": last completed round or None}`` for every shard of ``cfg``."""
    folder = Path(folder or data_dir(cfg.scale, cfg.experiment))
    return {f"{a}_s{s}": last_done(shard_path(folder, a, s)) for a, s in cfg.arm_runs()}


def shard_done(cfg: ClimbConfig) -> bool:
    """True when every (arm, seed) shard of ``cfg`` has its last round on disk."""
    return all(v is not None and v >= cfg.rounds for v in shard_status(cfg).values())


def data_complete(cfg: ClimbConfig, folder: Path | None = None) -> bool:
    folder = Path(folder or data_dir(cfg.scale, cfg.experiment))
    m = read_manifest(folder)
    return m is not None and m.get("config_hash") == cfg.hash and all(
        v == cfg.rounds for v in shard_status(cfg, folder).values())


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
    todo = [(a, s) for a, s in cfg.runs() if status[f"{a}_s{s}"] is None or status[f"{a}_s{s}"] < cfg.rounds]
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
        stamp("complete" if all(v == cfg.rounds for v in shard_status(cfg, folder).values()) else "running")
    return load_rows(cfg, folder)
