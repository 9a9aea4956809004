"""The society at LLM scale: LoRA agents on one frozen base, the ablation over arms — the experiment driver.

A population of ``N`` agents (LoRA adapters on a shared frozen base) evolves for ``G``
non-overlapping generations under four operators: grounded evaluation, directed recombination
(sex), diversity-preserving selection and retraining (:mod:`lib.society.generation`). This module is the
runner :mod:`lib.experiment` and :mod:`lib.sweep` call (kinds ``llm_society`` and ``llm_society_v2``):
:func:`validate_config`, :func:`run_experiment` (every (arm, seed) shard of a config, each run by
:func:`lib.society.shard.run_shard`, resuming finished generations), :func:`shards`, :func:`shard_done`
and :func:`manifest_config`, and the readers of a data folder (:func:`shard_status`, :func:`load_rows`,
:func:`generation_walls`, :func:`data_complete`).

Arms: ``full``, ``no_grounding``, ``no_sex``, ``no_diversity`` (kind ``llm_society``, v1: every
sexual arm merges with peft's ``linear`` combination, as the seed) and, for kind
``llm_society_v2``, the same arms with the *exact* merge ``Σ wᵢ BᵢAᵢ`` plus ``sex_linear`` (the
linear merge kept as the control) and the others of :mod:`lib.society.arms`. See
:mod:`lib.engines.merge` and :mod:`lib.society.config`. ``python -m lib.experiment configs/society/smoke.yaml``.
"""
from __future__ import annotations

import shutil
import time
from pathlib import Path

import pandas as pd
from tqdm.auto import tqdm

from lib.core.config import ConfigError, namespace_config
from lib.core.config import Frozen
from lib.core.jsonfile import write_json
from lib.core.locks import folder_lock, shard_locks
from lib.core.manifest import MANIFEST, check_resumable, merge_from, now, read_manifest, write_manifest
from lib.core.paths import data_dir
from lib.core.rows import last_done, progress_path, read_progress, read_shard, shard_path
from lib.core.tasks import verify
from lib.engines.batched import check_trainer
from lib.engines.models import base_adapter_path, base_identity, load_base
from lib.engines.timing import PhaseTimer
from lib.society import baseline_shard, shard
from lib.society.config import SocietyConfig, base_dtype, check_device, check_dtype, loaded_dtype, validate_config
from lib.society.generation import Verifier
from lib.society.shard import run_shard
from lib.society.shard_job import ShardJob

# Names the readers and tests of this runner import from it (kept importable here): the config's, the
# rows', the random streams' and the shard's.
from lib.society.config import (SCHEMA, config_of, arm_settings, load, load_file, parse_arm, resolve_arm,  # noqa: F401
                                runs_of, seed_list)
from lib.society.children import lora_steps  # noqa: F401
from lib.society.founders import ensure_founders  # noqa: F401
from lib.society.rows import COLUMNS, DIAGNOSTICS, RowWriter  # noqa: F401
from lib.society.shard_job import Interrupted  # noqa: F401
from lib.society.streams import child_seed, generation_rng, selection_rng  # noqa: F401

# where a shard marks a generation done (``mark_done``): lib.sweep's fault injection patches it there
BLOCK_MODULES = (shard, baseline_shard)


# ----------------------------------------------------------------------------- the runner contract


def manifest_config(cfg: SocietyConfig) -> Frozen:
    """The folder-identifying config (what the data means, without the keys that choose shards), under the
    name lib.provenance and lib.sweep look for: :attr:`lib.society.config.SocietyConfig.core`."""
    return cfg.core


def shards(cfg: SocietyConfig) -> list[SocietyConfig]:
    """One config per (arm, seed), seed by seed (a long sweep finishes every arm of its first seeds first, so its
    paired comparisons grow together); each writes only its own shard of the same data folder."""
    return [cfg.shard(a, s) for a, s in cfg.runs()]


def shard_status(cfg: SocietyConfig, folder: Path | None = None) -> dict:
    """``{"<arm>_s<seed>": last completed generation or None}`` for every shard of ``cfg``."""
    folder = folder or data_dir(cfg.scale, cfg.experiment)
    return {f"{a}_s{s}": last_done(shard_path(folder, a, s)) for a, s in cfg.arm_runs()}


def finished_runs(cfg: SocietyConfig, folder: Path | None = None) -> set[tuple[str, int]]:
    """The ``(arm, seed)`` runs of ``cfg`` whose shard in ``folder`` reached the last generation (:func:`shard_status`)."""
    status = shard_status(cfg, folder)
    return {(a, s) for a, s in cfg.arm_runs()
            if status[f"{a}_s{s}"] is not None and status[f"{a}_s{s}"] >= cfg.last_step}


def shard_trainers(cfg: SocietyConfig, folder: Path) -> dict:
    """``{trainer: number of shards}`` over the shards of ``cfg`` on disk; a shard written before the
    trainer was recorded counts as ``sequential`` (the only trainer there was)."""
    out: dict[str, int] = {}
    for a, s in cfg.runs():
        info = read_progress(shard_path(folder, a, s))
        if info is not None:
            t = info.get("trainer", "sequential")
            out[t] = out.get(t, 0) + 1
    return out


def refresh_manifest(cfg: SocietyConfig, folder: Path) -> dict:
    """The manifest of ``folder`` with its shard table, trainers and status recomputed from the disk
    for the whole of ``cfg`` (a sweep's runs each write the manifest for their own shard only, so the
    last writer would otherwise say ``complete`` for a folder whose other shards are still to run).
    Written atomically under the folder lock; returns it."""
    with folder_lock(folder):
        m = read_manifest(folder)
        if m is None:
            return {}
        m["shards"] = shard_status(cfg, folder)
        m["trainers"] = shard_trainers(cfg, folder)
        m["status"] = "complete" if data_complete(cfg, folder) else "running"
        write_json(Path(folder) / MANIFEST, m)
    return m


def gather(cfg: SocietyConfig, source: Path, folder: Path | None = None) -> list[str]:
    """Copy the finished shards of ``cfg`` (rows and progress file, at their last generation) from ``source`` (a
    sweep's scratch data folder of the same experiment: ``--data-root``) into ``folder`` (default: the repository's
    data folder of ``cfg``), replacing the shards of the same (arm, seed) there; unfinished ones stay behind (a later
    sweep resumes them). The folder's manifest keeps every commit that made its shards and every invocation
    (:func:`lib.core.manifest.merge_from`), and its shard table is recomputed (:func:`refresh_manifest`). Returns
    the shards copied, ``<arm>_s<seed>``. A source of another config is a :class:`lib.core.errors.ConfigError`."""
    folder, source = Path(folder or data_dir(cfg.scale, cfg.experiment)), Path(source)
    theirs = read_manifest(source)
    if theirs is None or theirs.get("config_hash") != cfg.hash:
        raise ConfigError(f"{source} holds no data of {cfg.experiment} at {cfg.scale} (its manifest is missing or "
                          f"describes another config): name the sweep's <data-root>/{cfg.scale}/{cfg.experiment}")
    finished = finished_runs(cfg, source)
    done = [(a, s) for a, s in cfg.arm_runs() if (a, s) in finished]
    folder.mkdir(parents=True, exist_ok=True)
    with folder_lock(folder):
        for a, s in done:
            for f in (shard_path(source, a, s), progress_path(shard_path(source, a, s))):
                shutil.copy2(f, folder / f.name)
        write_json(folder / MANIFEST, merge_from(read_manifest(folder), theirs))
    refresh_manifest(cfg, folder)
    return [f"{a}_s{s}" for a, s in done]


def shard_done(cfg: SocietyConfig) -> bool:
    """True when every (arm, seed) shard of ``cfg`` has its last generation on disk."""
    return finished_runs(cfg) == set(cfg.arm_runs())


def data_complete(cfg: SocietyConfig, folder: Path | None = None) -> bool:
    """True when ``folder`` holds this config's data (same core config) with every shard finished."""
    folder = Path(folder or data_dir(cfg.scale, cfg.experiment))
    m = read_manifest(folder)
    if m is None or m.get("config_hash") != cfg.hash:
        return False
    return finished_runs(cfg, folder) == set(cfg.arm_runs())


def load_rows(cfg: SocietyConfig, folder: Path | None = None) -> pd.DataFrame:
    """The rows of ``cfg``'s shards (in arm, seed order)."""
    folder = Path(folder or data_dir(cfg.scale, cfg.experiment))
    parts = [read_shard(shard_path(folder, a, s), "generation", COLUMNS) for a, s in cfg.arm_runs()
             if shard_path(folder, a, s).exists()]
    parts = [p for p in parts if len(p)]
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=COLUMNS)


def generation_walls(cfg: SocietyConfig, folder: Path | None = None) -> pd.DataFrame:
    """Wall seconds of every generation of every shard, with its phases (load, evaluate, screen,
    inherit, train; founders at generation 0) where recorded (from the progress files)."""
    folder = Path(folder or data_dir(cfg.scale, cfg.experiment))
    out = []
    for a, s in cfg.arm_runs():
        info = read_progress(shard_path(folder, a, s))
        if info is not None:
            ph = info.get("gen_phase_s", [])
            for t, w in enumerate(info.get("gen_wall_s", [])):
                out.append({"arm": a, "seed": s, "generation": t, "wall_s": w, **(ph[t] if t < len(ph) else {})})
    return pd.DataFrame(out)


# ----------------------------------------------------------------------------- the experiment


def run_experiment(cfg, *, folder: str | Path | None = None, verifier: Verifier = verify,
                   interrupt_after: int | None = None, base=None, timer: PhaseTimer | None = None,
                   engine: str = "auto", trainer: str = "batched") -> pd.DataFrame:
    """Run every (arm, seed) of ``cfg`` (resuming finished generations); return its tidy rows.

    ``folder`` overrides ``data/<scale>/<experiment>/``; ``verifier`` and ``interrupt_after`` are
    test hooks; ``base`` reuses an already loaded base (it must be ``cfg['base_model']``); ``timer``
    receives every phase of every generation (:mod:`lib.engines.timing`); ``engine`` and ``trainer`` as
    :class:`lib.society.shard_job.ShardJob` (the manifest records the trainers that wrote the folder's shards).
    """
    cfg = validate_config(cfg)  # the door: checked and frozen once; everything below reads this object
    check_device(cfg)
    check_trainer(trainer)
    folder = Path(folder or data_dir(cfg.scale, cfg.experiment))
    check_resumable(folder, cfg.core)
    m = read_manifest(folder)
    started = m["started"] if m else now()
    status = shard_status(cfg, folder)
    todo = sum(cfg.generations - 1 - (v if v is not None else -1) for v in status.values())
    dtype = (m or {}).get("dtype")  # the base's dtype as resolved by the runs that wrote the rows
    if todo == 0:  # nothing to run; (re)write the manifest if it does not yet list these shards as done
        if m is None or m.get("status") != "complete" or any(
                (m.get("shards") or {}).get(k) != v for k, v in status.items()):
            write_manifest(folder, cfg.core, started=started, wall_s=(m or {}).get("wall_s"), status="complete",
                           extra=manifest_extra(cfg, folder, dtype))
        return load_rows(cfg, folder)
    if base is not None and base.name != cfg.base_model:
        raise ValueError(f"base {base.name!r} given for a config of base_model {cfg.base_model!r}")
    resolved = base_dtype(cfg) if base is None else loaded_dtype(base)
    check_dtype(cfg, folder, dtype, resolved)  # rows of one folder come from one dtype
    unfinished = [shard_path(folder, a, s) for a, s in cfg.runs()
                  if status[f"{a}_s{s}"] is None or status[f"{a}_s{s}"] < cfg.generations - 1]
    with shard_locks(unfinished):  # a second run on these shards is refused before anything is written
        t0 = time.time()
        prev_wall = float((m or {}).get("wall_s") or 0.0)

        def stamp(state: str, wall_s: float | None = None) -> None:
            write_manifest(folder, cfg.core, started=started, status=state, extra=manifest_extra(cfg, folder, resolved),
                           wall_s=prev_wall + time.time() - t0 if wall_s is None else wall_s)
        stamp("running", prev_wall)
        if base is None:
            base = load_base(cfg.base_model, dtype=resolved, adapter=base_adapter_path(cfg.base_adapter))
        with tqdm(total=todo, desc=f"{cfg.experiment} ({cfg.scale})", unit="gen") as bar:
            for arm, seed in cfg.runs():
                run_shard(ShardJob(base, cfg, arm, seed, folder, verifier=verifier, interrupt_after=interrupt_after,
                                   progress=bar, timer=timer, engine=engine, trainer=trainer))
                stamp("running")
        stamp("complete")
    return load_rows(cfg, folder)


def manifest_extra(cfg: SocietyConfig, folder: Path, dtype: str | None) -> dict:
    """What a society manifest records besides the core config: the whole run config, the shards present
    and their trainers, the seeds, the base model's identity and (once resolved) the base's dtype."""
    return {"run_config": dict(cfg), "shards": shard_status(cfg, folder), "seeds": cfg.seed_list(),
            "trainers": shard_trainers(cfg, folder),
            "base_model": base_identity(cfg.base_model, base_adapter_path(cfg.base_adapter)),
            **({"dtype": dtype} if dtype else {}),
            "note": "config/config_hash describe the data (arms and seeds excluded); "
                    "shards lists the (arm, seed) runs present; dtype: the base's, as resolved"}


def notebook_config(namespace) -> dict:
    """notebook 03's parameter cell (``globals()``, papermill's injected values included) as its checked config."""
    return namespace_config(namespace, SCHEMA, validate_config)
