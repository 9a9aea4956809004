"""The society's data, read in one place: every folder's rows through :func:`society_rows`, its configs
through :func:`config_of`.

The society's results live in one folder per experiment (:data:`STUDIES`): ``data/<scale>/society/``
(the first verdict), ``society_recombination/`` (the breeding arms beside their own ``full``),
``society_study/``, ``society_lexicase/``, ``society_crossover/`` (the skill-combining study) and
``society_lineage/`` (the lineage study). :func:`society_rows` reads the shards each folder's config
lists, in its order (arms, then seeds), each checked (:func:`lib.core.rows.read_shard`), into one tidy
frame (:data:`COLUMNS`): ``study`` is the folder's experiment, ``code_path`` what made the shard (the
folder's commit, its float path or device, and the shard's trainer where recorded). It is the one place
where folders are joined and arms named: the recombination folder's own ``full``, read beside another
folder, is :data:`lib.society.arms.BESIDE` (``full@breeding``); :func:`grounding_sweep` names the study's
``full`` as the knob's g of its config. Figures and tables take their frames from here and never read a
folder or rename an arm. The wall seconds of the same shards (:func:`society_walls`), the files behind a
frame (:func:`files_of`), a folder's manifest and its sweeps' ledger are read here too.

Rows come in each folder's config order (arms, then seeds: the tables') or, with ``order="name"``, by shard
file name (the figures'; :data:`ORDERS`). Frames are cached per folder state (a shard written, removed or
changed is read anew) and shared: callers never modify them in place.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np
import pandas as pd

from lib.core.errors import DataMismatchError
from lib.core.manifest import read_manifest
from lib.core.paths import config_path, data_dir
from lib.core.rows import progress_path, read_progress, read_shard, shard_keys, shard_path
from lib.society import run as society
from lib.society.arms import BESIDE, REFERENCE, SEED_ARMS, SPECS
from lib.society.config import config_of, load_file  # noqa: F401  (config_of: the readers' one config entry)
from lib.society.config import arm_runs
from lib.sweep import LEDGER

MAIN, RECOMBINATION, STUDY, LEXICASE, CROSSOVER, LINEAGE = ("society", "society_recombination", "society_study",
                                                           "society_lexicase", "society_crossover", "society_lineage")
CLIMB = "society_climb"  # the climb's folder (its own runner and reader: lib.society.climb, lib.society.studies.climb)
STUDIES = (MAIN, RECOMBINATION, STUDY, LEXICASE, CROSSOVER, LINEAGE, CLIMB)
# Each re-run folder of issue 53: a study's registered comparisons re-decided with the seat-fair operators, the same
# keys and seeds in a folder of its own (configs/<folder>/); the folders not named here were not re-run
FAIR = {MAIN: MAIN + "_fair", RECOMBINATION: RECOMBINATION + "_fair", STUDY: STUDY + "_fair", CLIMB: CLIMB + "_fair"}
OWN_REFERENCE = {RECOMBINATION: BESIDE, FAIR[RECOMBINATION]: BESIDE}  # a folder's own full, read beside another: its name
COLUMNS = ["study", "arm", "seed", "generation", "agent", "metric", "value", "code_path", "selected", "conformity",
           "score"]
WALL_COLUMNS = ["arm", "seed", "generation", "wall_s"]
# The order of a frame's rows: "config", each folder's config's (arms, then seeds: the tables'), or "name", its
# shards' file names (the figures'). It decides where baselines stand among the arms (lib.society.arms.order
# keeps them in their order of first appearance) and fig3g's legend, so each side keeps the order it was
# drawn or tabled in.
ORDERS = ("config", "name")


def complete_runs(rows: pd.DataFrame, generations: int) -> pd.DataFrame:
    """The rows of the (arm, seed) runs that reached their last generation (``generations − 1``): a
    run still in progress (a sweep that stopped mid-run and will resume) is left out of every
    comparison, not read as if its last generation so far were the last."""
    last = rows.groupby(["arm", "seed"])["generation"].transform("max")
    return rows[last == generations - 1]


# ----------------------------------------------------------------------------- one folder


def shard_walls(files) -> pd.DataFrame:
    """Wall seconds of every generation of each shard in ``files`` (``<arm>_s<seed>.csv``), from its
    progress file: ``arm, seed, generation, wall_s`` and the recorded phases (a baseline: one entry,
    phase ``baseline``). A shard without a progress file contributes nothing."""
    out = []
    for f in files:
        arm, seed = shard_keys(f)
        info = read_progress(f) if arm is not None else None
        if info is None:
            continue
        phases = info.get("gen_phase_s", [])
        out += [{"arm": arm, "seed": int(seed), "generation": t, "wall_s": float(w),
                 **(phases[t] if t < len(phases) else {})} for t, w in enumerate(info.get("gen_wall_s", []))]
    return pd.DataFrame(out, columns=None if out else WALL_COLUMNS)


WORK = ("train_steps", "train_tokens", "prompt_tokens", "gen_tokens")  # the work counters a generation records


def shard_work(files) -> pd.DataFrame:
    """The work each shard in ``files`` recorded (its progress file's ``gen_counts``, summed over generations):
    ``arm, seed`` and, apart for the ``founders`` phase (the seed's founders, trained by whichever shard of the
    seed came first) and for the rest, each of :data:`WORK` (``founders_<counter>``, ``<counter>``), and
    ``verifier_calls``. Shards from before the counters were recorded contribute nothing."""
    out = []
    for f in files:
        arm, seed = shard_keys(f)
        counts = (read_progress(f) or {}).get("gen_counts") if arm is not None else None
        if not counts:
            continue
        line = {"arm": arm, "seed": int(seed), "verifier_calls": 0, **{k: 0 for k in WORK},
                **{f"founders_{k}": 0 for k in WORK}}
        for gen in counts:
            line["verifier_calls"] += gen.get("verifier_calls", 0)
            for phase, work in gen.items():
                if isinstance(work, dict):
                    for k in WORK:
                        line[("founders_" if phase == "founders" else "") + k] += work.get(k, 0)
        out.append(line)
    return pd.DataFrame(out)


def shard_float_path(manifest: dict | None, progress: dict | None) -> dict:
    """The float path (:func:`lib.core.device.float_path`) that made a shard: its progress file's, else its
    folder's manifest's, else ``{}`` (folders from before it was recorded)."""
    return (progress or {}).get("float_path") or (manifest or {}).get("float_path") or {}


def code_path(manifest: dict | None, progress: dict | None) -> str:
    """What made a shard, in short: ``<commit7>/<float path or device>[/<trainer>]``: the commit its progress
    file records, else its folder manifest's when one commit made the folder (``?`` when several did); torch's CPU kernel level
    (:func:`shard_float_path`), else the manifest's device; the trainer where recorded."""
    m, progress = manifest or {}, progress or {}
    git = m.get("git") or {}
    folder_commit = git.get("commit") if len(git.get("commits", [])) <= 1 else None  # several: not this shard's
    commit = str(progress.get("commit") or folder_commit or "?")[:7]
    where = shard_float_path(m, progress).get("torch_cpu_capability") or m.get("device") or "?"
    trainer = progress.get("trainer")
    return "/".join([commit, str(where)] + ([str(trainer)] if trainer else []))


@dataclass(frozen=True)
class Folder:
    """One folder as read: ``rows`` (its config's shards, in its order, arms as the folder names them;
    :data:`COLUMNS`; ``spans``: each shard's file name and its rows' ``[start, stop)`` there), their
    ``walls`` (:func:`shard_walls`), the ``shards`` read, the ``done`` runs (``(arm, seed)`` at their last
    generation), the shards on disk its config does not list (``unlisted``) and every shard on disk
    (``on_disk``)."""

    study: str
    rows: pd.DataFrame
    spans: tuple[tuple[str, int, int], ...]
    walls: pd.DataFrame
    shards: tuple[Path, ...]
    done: frozenset
    unlisted: tuple[Path, ...]
    on_disk: tuple[Path, ...]

    def rows_in(self, order: str) -> pd.DataFrame:
        """``rows`` in :data:`ORDERS` ``order``: ``"config"`` as read, ``"name"`` by shard file name."""
        if order == "config":
            return self.rows
        if order != "name":
            raise ValueError(f"unknown row order {order!r}; known: {list(ORDERS)}")
        take = [np.arange(a, b) for _, a, b in sorted(self.spans)]
        return self.rows.take(np.concatenate(take) if take else []).reset_index(drop=True)


def _stamp(study: str, scale: str) -> tuple:
    """The state of the folder of ``study``: its path and every file's name, size and change time."""
    folder = data_dir(scale, study)
    if not folder.is_dir():
        return (str(folder),)
    return (str(folder), *sorted((e.name, e.stat().st_size, e.stat().st_mtime_ns) for e in os.scandir(folder)))


def folder_states(scale: str, *studies: str) -> tuple:
    """The state of each folder of ``studies`` at ``scale`` (its path, every file's name, size and change time): the
    key under which what is read from them may be cached."""
    return tuple(_stamp(s, scale) for s in studies)


def _shard_rows(f: Path, study: str, manifest: dict | None) -> pd.DataFrame:
    """The checked rows of shard ``f`` in :data:`COLUMNS` (its ``experiment`` must be its folder's)."""
    part = read_shard(f, "generation", society.COLUMNS)
    if len(part) and set(part["experiment"]) != {study}:
        raise DataMismatchError(f"{f} holds rows of {sorted(set(part['experiment']))}, not of its folder's "
                                f"{study!r}: move it to the folder of its experiment")
    return part.assign(study=study, code_path=code_path(manifest, read_progress(f)))[COLUMNS]


@lru_cache(maxsize=16)
def _folder(study: str, scale: str, stamp: tuple) -> Folder | None:
    """:class:`Folder` of ``study`` at ``scale`` in the state ``stamp`` (``None`` without config or folder)."""
    cfg, folder = config_of(study, scale), Path(stamp[0])
    if cfg is None or not folder.is_dir():
        return None
    on_disk = tuple(sorted(folder.glob("*_s*.csv")))
    listed = [shard_path(folder, a, s) for a, s in arm_runs(cfg)]
    shards = tuple(p for p in listed if p.exists())
    manifest = read_manifest(folder)
    parts = [(f.name, p) for f, p in ((f, _shard_rows(f, study, manifest)) for f in shards) if len(p)]
    rows = pd.concat([p for _, p in parts], ignore_index=True) if parts else pd.DataFrame(columns=COLUMNS)
    stops = np.cumsum([len(p) for _, p in parts]).tolist()
    spans = tuple((name, stop - len(p), stop) for (name, p), stop in zip(parts, stops))
    done = frozenset(society.finished_runs(cfg, folder))
    return Folder(study, rows, spans, shard_walls(shards), shards, done, tuple(sorted(set(on_disk) - set(listed))),
                  on_disk)


# ----------------------------------------------------------------------------- folders joined


def _named(arm: str, study: str, joined: bool) -> str:
    """``arm`` of ``study``'s folder as the frame names it: the folder's own reference, read beside
    another folder, is :data:`OWN_REFERENCE` of it (``full@breeding``)."""
    return OWN_REFERENCE[study] if joined and arm == REFERENCE and study in OWN_REFERENCE else arm


def _names(frame: pd.DataFrame, study: str, joined: bool) -> pd.DataFrame:
    """``frame`` (rows or walls of ``study``'s folder) with its arms named by :func:`_named`."""
    if not (joined and study in OWN_REFERENCE and len(frame)):
        return frame
    return frame.assign(arm=frame["arm"].where(frame["arm"] != REFERENCE, _named(REFERENCE, study, joined)))


def _check_folders(folders: list[Folder], joined: bool) -> None:
    """A shard held by two folders (it would count twice in every mean) or one its folder's config does
    not list (a run in the wrong folder) is a :class:`DataMismatchError` naming it and the fix."""
    seen: dict[tuple, Path] = {}
    for fo in folders:
        for f in fo.on_disk:
            arm, seed = shard_keys(f)
            key = (_named(arm, fo.study, joined), seed)
            if key in seen:
                raise DataMismatchError(f"{f} and {seen[key]} hold the same shard: keep the one whose "
                                        f"folder's config lists its arm and move the other aside")
            seen[key] = f
    for fo in folders:
        if fo.unlisted:
            raise DataMismatchError(f"{fo.unlisted[0]} is no run of configs/{fo.study}/ (its config lists no "
                                    f"such arm and seed): move it to the folder of its config, or aside")


def _finished(fo: Folder, rows: pd.DataFrame, scale: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``rows`` (of ``fo``) and the walls of ``fo``, of the runs that reached their last generation."""
    rows = complete_runs(rows, config_of(fo.study, scale)["generations"])
    w = fo.walls
    if len(w):
        w = w[[(a, s) in fo.done for a, s in zip(w["arm"], w["seed"])]]
    return rows, w


@lru_cache(maxsize=32)
def _joined(scale: str, stamps: tuple, finished: bool, order: str) -> tuple[pd.DataFrame, pd.DataFrame] | None:
    """``(rows, walls)`` of the folders of ``stamps`` (``((study, stamp), ...)``), joined and named, each
    folder's rows in ``order``; ``None`` when the first holds no rows."""
    folders = [fo for fo in (_folder(st, scale, stamp) for st, stamp in stamps) if fo is not None]
    joined = len(stamps) > 1
    _check_folders(folders, joined)
    rows, walls = [], []
    for fo in folders:
        r, w = _finished(fo, fo.rows_in(order), scale) if finished else (fo.rows_in(order), fo.walls)
        if not len(r):
            continue
        r, w = _names(r, fo.study, joined), _names(w, fo.study, joined)
        rows.append(r)
        walls += [w] if len(w) else []
    if not rows or rows[0]["study"].iloc[0] != stamps[0][0]:
        return None
    return (pd.concat(rows, ignore_index=True),
            pd.concat(walls, ignore_index=True) if walls else pd.DataFrame(columns=WALL_COLUMNS))


def _read(scale: str, studies: tuple, finished: bool, required: bool, order: str):
    got = _joined(scale, tuple((s, _stamp(s, scale)) for s in studies), finished, order)
    if got is None and required:
        folder = data_dir(scale, studies[0])
        raise FileNotFoundError(f"no {'finished ' if finished else ''}{studies[0]} rows in {folder}: run "
                                f"`python -m lib.experiment configs/{studies[0]}/{scale}.yaml`")
    return got


def society_rows(scale: str, study: str = MAIN, *beside: str, finished: bool = False, required: bool = True,
                 order: str = "config") -> pd.DataFrame | None:
    """The rows of ``study``'s folder at ``scale`` with those of the ``beside`` folders that hold rows
    joined after them: one tidy frame of :data:`COLUMNS` (``study``: the folder's experiment;
    ``code_path``: :func:`code_path`), each folder's shards in ``order`` (:data:`ORDERS`).

    Arms are named as the frame joins them: read beside another folder, the recombination folder's own
    ``full`` is ``full@breeding`` (:data:`lib.society.arms.BESIDE`), its breeding arms' reference; read
    alone, it is that folder's ``full``. ``finished``: the runs that reached their last generation only
    (:func:`complete_runs`). A shard in two of the folders, or one its folder's config does not list, is a
    :class:`lib.core.errors.DataMismatchError`. Without rows of ``study``: ``FileNotFoundError`` naming
    the folder and the command that fills it (``required``), else ``None``."""
    got = _read(scale, (study, *beside), finished, required, order)
    return None if got is None else got[0]


def society_walls(scale: str, study: str = MAIN, *beside: str, finished: bool = False,
                  required: bool = True) -> pd.DataFrame | None:
    """The wall seconds per generation (:func:`shard_walls`) of the shards of :func:`society_rows` with
    the same arguments, its arms named as there."""
    got = _read(scale, (study, *beside), finished, required, "config")
    return None if got is None else got[1]


def files_of(scale: str, study: str = MAIN, *beside: str) -> dict:
    """What :func:`society_rows` of these folders reads: ``{"files": shards (each folder's by name),
    "progress": their progress files, "configs": the configs of the folders with rows}`` (paths as text)."""
    folders = [fo for fo in (_folder(s, scale, _stamp(s, scale)) for s in (study, *beside)) if fo is not None]
    shards = [f for fo in folders for f in sorted(fo.shards)]
    return {"files": [str(f) for f in shards],
            "progress": [str(progress_path(f)) for f in shards if progress_path(f).is_file()],
            "configs": [str(config_path(fo.study, scale)) for fo in folders if fo.shards]}


def shard_paths(folder, runs) -> pd.DataFrame:
    """Per ``(arm, seed)`` of ``runs`` (a frame with those columns) in ``folder``: the float path its progress file
    records, in short (vendor, torch's CPU capability, BLAS: ``"?"`` where none is recorded)."""
    out = []
    for arm, seed in runs[["arm", "seed"]].drop_duplicates().itertuples(index=False):
        fp = (read_progress(shard_path(folder, arm, int(seed))) or {}).get("float_path") or {}
        key = "/".join(str(fp.get(k, "?")) for k in ("vendor", "torch_cpu_capability", "blas"))
        out.append({"arm": arm, "seed": int(seed), "float_path": key})
    return pd.DataFrame(out, columns=["arm", "seed", "float_path"])


def mixed_seeds(folder, runs) -> list[int]:
    """The seeds of ``runs`` in ``folder`` whose arms ran on more than one float path (:func:`shard_paths`): a paired
    comparison pairs runs of one float path, so the studies drop them (each must be re-run whole on one machine)."""
    paths = shard_paths(folder, runs)
    return sorted(int(s) for s, g in paths.groupby("seed") if g["float_path"].nunique() > 1)


def fair_rows(scale: str, study: str) -> tuple[pd.DataFrame | None, list[int]]:
    """The finished rows of ``study``'s seat-fair re-run (:data:`FAIR`) at ``scale`` and the seeds dropped from them
    because their arms ran on two float paths (:func:`mixed_seeds`); ``(None, [])`` without a finished run."""
    rows = society_rows(scale, FAIR[study], finished=True, required=False)
    if rows is None:
        return None, []
    mixed = mixed_seeds(data_dir(scale, FAIR[study]), rows)
    rows = rows[~rows["seed"].isin(mixed)]
    return (rows if len(rows) else None), mixed


# Re-runs read only together: the first verdict's ablation reads its recombination arms (full and the arm that breeds
# without merging, no_sex) from the recombination folder, so the two switch as one
_BREEDING = (REFERENCE, *(a for a in SEED_ARMS if SPECS[a].merge is None))
TOGETHER = {MAIN: (RECOMBINATION, _BREEDING), RECOMBINATION: (MAIN, None)}


def reading(study: str, scale: str, arms: tuple[str, ...] | None = None) -> str:
    """The folder that ``study``'s tables and figures read at ``scale`` (of its ``arms`` only, where given): its
    seat-fair re-run (:data:`FAIR`) once that holds every run of ``study``'s config (of those arms), each finished and
    every seed on one float path (:func:`mixed_seeds`), and its partner's likewise (:data:`TOGETHER`), else the
    committed folder. The climb decides its own
    (:func:`lib.society.studies.climb.comparisons.current`)."""
    if study not in FAIR or not _replaces(study, scale, arms, folder_states(scale, study, FAIR[study])):
        return study
    if study in TOGETHER:  # read only together with its partner's re-run
        other, other_arms = TOGETHER[study]
        if not _replaces(other, scale, other_arms, folder_states(scale, other, FAIR[other])):
            return study
    return FAIR[study]


@lru_cache(maxsize=32)
def _replaces(study: str, scale: str, arms: tuple[str, ...] | None, _states: tuple) -> bool:
    cfg, new = config_of(study, scale), config_of(FAIR[study], scale)
    if cfg is None or new is None:
        return False
    wanted = {(a, s) for a, s in arm_runs(cfg) if arms is None or a in arms}
    folder = data_dir(scale, FAIR[study])
    done = society.finished_runs(new, folder)
    if not wanted or not wanted <= done:
        return False
    return not mixed_seeds(folder, pd.DataFrame(sorted(wanted), columns=["arm", "seed"]))


def first_verdict_folders(scale: str) -> tuple[str, str]:
    """The two folders the first verdict reads at ``scale``: its own and the recombination folder beside it (``full``
    as ``full@breeding`` and ``no_sex``), each :func:`reading`'s choice; :data:`TOGETHER` makes it the committed pair
    or the two seat-fair re-runs, never one of each."""
    return reading(MAIN, scale), reading(RECOMBINATION, scale, _BREEDING)


def manifest_of(study: str, scale: str) -> dict:
    """The manifest of ``study``'s folder at ``scale`` (``{}`` without one)."""
    return read_manifest(data_dir(scale, study)) or {}


def ledger_of(study: str, scale: str) -> list[dict] | None:
    """The sweeps' ledger of ``study``'s folder (:data:`lib.sweep.LEDGER`, one record a sweep; ``[]``
    without one); ``None`` without the folder."""
    folder = data_dir(scale, study)
    if not folder.is_dir():
        return None
    f = folder / LEDGER
    return [json.loads(x) for x in f.read_text().splitlines() if x.strip()] if f.exists() else []


# ----------------------------------------------------------------------------- arms named for an analysis


def grounding_sweep(rows: pd.DataFrame, g: float) -> pd.DataFrame | None:
    """The grounding-knob sweep (S3b) in ``rows`` (the study's): its ``full@g<g>`` arms, plus ``full``
    itself on their seeds named ``full@g<g>`` at the config's ``g`` (the same runs: full *is* the knob at
    that value). Column ``borrowed`` marks ``full``'s rows. ``None`` without knob arms."""
    knob = rows[rows["arm"].str.match(rf"^{REFERENCE}@g[0-9.]+$")]
    if knob.empty:
        return None
    main = rows[(rows["arm"] == REFERENCE) & rows["seed"].isin(set(knob["seed"]))]
    return pd.concat([knob.assign(borrowed=False), main.assign(arm=f"{REFERENCE}@g{g:g}", borrowed=True)],
                     ignore_index=True)
