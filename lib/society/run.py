"""The society at LLM scale: LoRA agents on one frozen base, the ablation over arms — the driver.

A population of ``N`` agents (LoRA adapters on a shared frozen base) evolves for ``G``
non-overlapping generations under four operators: grounded evaluation, directed recombination
(sex), diversity-preserving selection and retraining. One generation is four steps,
:mod:`lib.society.generation` (evaluate → select → breed → reproduce); this module runs them:
:func:`run_shard` loads a generation's adapters, calls the steps, trains the children, writes the
rows and the progress, resumes, and cleans up.

Arms: ``full``, ``no_grounding``, ``no_sex``, ``no_diversity`` (kind ``llm_society``, v1: every
sexual arm merges with peft's ``linear`` combination, as the seed) and, for kind
``llm_society_v2``, the same arms with the *exact* merge ``Σ wᵢ BᵢAᵢ`` plus ``sex_linear`` (the
linear merge kept as the control). See :mod:`lib.engines.merge` and :mod:`lib.society.config`.

Nothing is lost: after each generation its rows are appended to
``data/<scale>/<experiment>/<arm>_s<seed>.csv`` and the next generation's adapters are saved under
``runs/<scale>/<experiment>/`` before the generation is marked done; re-running resumes each
(arm, seed) from its last completed generation. Every random draw of generation ``t`` comes from
``SeedSequence([seed, crc32(arm), t])`` or fixed task/torch seeds, so a resumed run equals an
uninterrupted one. ``python -m lib.experiment configs/society/smoke.yaml``.
"""
from __future__ import annotations

import shutil
import time
import zlib
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pandas as pd

from lib.core.manifest import check_resumable, now, read_manifest, write_manifest
from lib.core.paths import data_dir
from lib.core.locks import shard_locks
from lib.core.rows import (append_rows, last_done, mark_done, progress_path, read_progress, read_shard,  # noqa: F401
                        resume_shard, shard_path)
from lib.operators.ops import fitness_of, founder_family
from lib.core.tasks import verify
from lib.society import generation as step
from lib.engines.agents import make_agents
from lib.society.founders import ensure_founders
from lib.society.generation import Child, Evaluation, Selection, Verifier
from lib.society.arms import MULTITASK, is_baseline
from lib.society.baselines import Founders, baseline_metrics, run_baseline
from lib.engines.generate import generate
from lib.engines.batched import Job, check_trainer, train_loras
from lib.engines.lora import copy_adapter, load_adapter, remove_all
from lib.engines.merge import inherit_merge
from lib.society.pools import founder_seed, founder_tasks, pools_for
from lib.society.config import (SCHEMA, RunConfig, Settings, adapters_root, arm_settings, base_dtype, check_device, check_dtype,  # noqa: F401
                       arm_runs, core_config, loaded_dtype, merge_method, parse_arm, resolve_arm, runs_of, seed_list,
                       validate_config)
from lib.engines.timing import PhaseClock, PhaseTimer

COLUMNS = ["experiment", "arm", "seed", "generation", "agent", "selected", "conformity", "score",
           "metric", "value"]

# Metrics written besides the seed's (test_<family>, test_overall, val_overall, consensus_acc,
# diversity_behav, parents); rows about a child's birth carry the child's generation t+1.
DIAGNOSTICS = {
    "val_half_a": "val accuracy on the even-indexed val tasks (split-half reliability of the signal)",
    "val_half_b": "val accuracy on the odd-indexed val tasks",
    "base_test_<family>": "the bare base on the test pool (agent -1, generation 0 only)",
    "elite": "1 for an agent copied unchanged from the previous generation (its parents row is e*100+e)",
    "inherit_n": "usable (parsed) answers the child was trained on (< 8: the child is a copy)",
    "source_val_overall": "accuracy of the child's source at t on the screening pool (val's first n_screen per family)",
    "merge_winner": "index of the screened winner among the n_candidates merges (0 = plain average)",
    "merge_tied": "candidates tied at the top screening score (1 = no tie; ties are broken by a seeded draw)",
    "merge_gain_val": "winner's screening-pool accuracy minus its two parents' mean on the same tasks",
    "test_<family>_<region>": "test accuracy on the family's familiar region (the base's pre-training "
                              "kind of task) or novel region (never pre-trained: where founders can teach)",
    "source_test_<key>": "the child's source at t on the test pool, per family, overall and region",
    "cost_train_steps": "LoRA optimizer steps of the run so far: founders + trained children (last generation)",
    "cost_val_evals": "model evaluations on val (selection) or its screening part (screening), last generation",
    "select_overall": "accuracy on the selection pool (n_select > 0; last generation, and each baseline): the "
                      "best society arm and the best one-shot merge are chosen on it",
    "inherit_energy": "inherit_merge arms: share of the merge's update energy (sum of squared singular values) "
                      "kept by its truncation to rank r",
}


class Interrupted(RuntimeError):
    """Raised by the test hook ``interrupt_after`` once that generation is on disk."""


# ----------------------------------------------------------------------------- random streams


def _stream(seed: int, arm: str, *keys: int) -> np.random.SeedSequence:
    """The seed sequence of one (seed, arm, ...) draw. Modifiers (``@g``, ``@e``) are dropped, so
    the variants of one arm share their random numbers (common random numbers: paired contrasts)."""
    name = arm.split("@")[0]
    return np.random.SeedSequence([seed, zlib.crc32(name.encode()), *keys])


def generation_rng(seed: int, arm: str, t: int) -> np.random.Generator:
    """The rng of generation ``t`` of one (arm, seed): reconstructible on resume."""
    return np.random.default_rng(_stream(seed, arm, t))


def selection_rng(seed: int, arm: str, t: int) -> np.random.Generator:
    """The rng of generation ``t``'s parent selection (lexicase's case orders), a stream of its own so
    that the arms that draw nothing at selection keep :func:`generation_rng`'s numbers."""
    return np.random.default_rng(_stream(seed, arm, t, 1))


def child_seed(seed: int, arm: str, t: int, c: int) -> int:
    """Training seed of child ``c`` born at generation ``t`` (its LoRA init and data order).

    Deviation from the seed (``seed*31 + t*N + c``, which collides across replicates: seed 0 at
    t=5, c=1 equals seed 1 at t=0, c=0): a hash of ``(seed, arm, t, c)``, so replicates are
    independent while the variants of one arm share it.
    """
    return int(_stream(seed, arm, t, c, 1).generate_state(1)[0] % (2**31 - 1))


# ----------------------------------------------------------------------------- rows


@dataclass(frozen=True)
class RowWriter:
    """Rows of one (experiment, arm, seed) in the society's schema (:data:`COLUMNS`)."""

    experiment: str
    arm: str
    seed: int

    def row(self, t: int, agent: int, metric: str, value, *, selected: bool = False,
            conformity: float = float("nan"), score: float = float("nan")) -> dict:
        return {"experiment": self.experiment, "arm": self.arm, "seed": self.seed, "generation": t,
                "agent": agent, "selected": bool(selected), "conformity": conformity, "score": score,
                "metric": metric, "value": float(value)}

    def generation(self, t: int, ev: Evaluation, sel: Selection, base_test: dict | None) -> list[dict]:
        """Generation ``t``'s rows: each agent's accuracies (with its selection, conformity and
        score), then the population's consensus accuracy and diversity, then (t = 0) the bare base."""
        out = []
        for i, test in enumerate(ev.test):
            mine = {"selected": i in sel.parents, "conformity": float(ev.conformity[i]),
                    "score": float(sel.scores[i])}
            out += [self.row(t, i, f"test_{k}", v, **mine) for k, v in test.items()]
            out += [self.row(t, i, "val_overall", ev.val[i], **mine),
                    self.row(t, i, "val_half_a", ev.val_halves[i][0], **mine),
                    self.row(t, i, "val_half_b", ev.val_halves[i][1], **mine)]
        out += [self.row(t, -1, "consensus_acc", ev.consensus_acc), self.row(t, -1, "diversity_behav", ev.diversity)]
        if base_test is not None:  # the bare base on the test pool: the founders' reference
            out += [self.row(t, -1, f"base_test_{k}", v) for k, v in base_test.items()]
        return out

    def births(self, t: int, children: list[Child], energy: dict | None = None) -> list[dict]:
        """How each agent of generation ``t`` was born (written with generation ``t``); ``energy``:
        per child of an ``inherit_merge`` arm, the update energy its truncation kept."""
        out = []
        energy = energy or {}
        for ch in children:
            pa, pb = ch.parents
            out.append(self.row(t, ch.index, "parents", pa * 100 + pb))
            if ch.elite:
                out.append(self.row(t, ch.index, "elite", 1.0))
                continue
            src = ch.source
            if ch.index in energy:  # inherit_merge: nothing distilled, the merge truncated
                out.append(self.row(t, ch.index, "inherit_energy", energy[ch.index]))
            else:
                out.append(self.row(t, ch.index, "inherit_n", len(ch.data)))
            out += [self.row(t, ch.index, f"source_test_{k}", v) for k, v in src.test.items()]
            out.append(self.row(t, ch.index, "source_val_overall", src.screen))
            if src.merge_winner is not None:
                out += [self.row(t, ch.index, "merge_winner", src.merge_winner),
                        self.row(t, ch.index, "merge_tied", src.merge_tied),
                        self.row(t, ch.index, "merge_gain_val", src.merge_gain)]
        return out

    def costs(self, t: int, cost: dict) -> list[dict]:
        """The run's cost so far (written at its last generation): LoRA optimizer steps and model
        evaluations on val (selection) or its screening part (screening)."""
        return [self.row(t, -1, f"cost_{k}", v) for k, v in cost.items()]


# ----------------------------------------------------------------------------- one (arm, seed)


def lora_steps(n_tasks: int, epochs: int, batch_size: int) -> int:
    """Optimizer steps of a LoRA trained on ``n_tasks`` for ``epochs`` in batches of ``batch_size``."""
    return epochs * -(-n_tasks // batch_size)


def save_merged_sources(agents, children: list[Child], out: Path) -> None:
    """A degenerate child whose source is a merge inherits the merge itself: save it now, while the
    merged agent still exists (the folder is then the child's, see :func:`train_children`)."""
    for ch in children:
        if ch.degenerate and ch.source.merge_winner is not None:
            agents.save(ch.source.agent, out / f"agent{ch.index}")


def save_inherited_merges(agents, children: list[Child], out: Path, *, rank: int) -> dict[int, float]:
    """``inherit_merge``: each bred child is its source merge itself, truncated to ``rank`` and mutated
    (:func:`lib.engines.merge.inherit_merge`, seeded by the child's seed), written to ``out/agent<c>``;
    returns the update energy each truncation kept."""
    energy = {}
    for ch in children:
        if ch.elite:
            continue
        tmp = out / f"merge{ch.index}"
        agents.save(ch.source.agent, tmp)
        energy[ch.index] = inherit_merge(tmp, out / f"agent{ch.index}", rank=rank, seed=ch.seed)
        shutil.rmtree(tmp, ignore_errors=True)
    return energy


def train_children(base, children: list[Child], parents: list[Path], out: Path, s: Settings, counter=None,
                   trainer: str = "batched", distill: bool = True) -> list[Path]:
    """The next generation's adapter folders under ``out``: elites copied, children trained on their
    data (all at once, :func:`lib.engines.batched.train_loras`); a degenerate child (too few usable
    answers) is a copy of its source — the merge saved by :func:`save_merged_sources`, or the copied
    parent. ``distill=False`` (``inherit_merge``): the children are already on disk
    (:func:`save_inherited_merges`); nothing is trained."""
    dirs, jobs, todo = [], [], []
    for ch in children:
        if ch.elite:
            dirs.append(copy_adapter(parents[ch.parents[0]], out / f"elite{ch.index}"))
            continue
        d = out / f"agent{ch.index}"
        if distill and ch.degenerate and ch.source.merge_winner is None:
            copy_adapter(parents[ch.parents[0]], d)
        elif distill and not ch.degenerate:
            jobs.append(Job(ch.data, ch.seed, s.epochs))
            todo.append(d)
        dirs.append(d)
    train_loras(base, jobs, todo, trainer=trainer, counter=counter, **s.lora_kw())
    return dirs


def _drop_generation(dirs: list[Path]) -> None:
    """Disk hygiene: delete a generation's adapters (and their emptied folders)."""
    for d in dirs:
        shutil.rmtree(d, ignore_errors=True)
    for d in {Path(a).parent for a in dirs}:
        if d.is_dir() and not any(d.iterdir()):
            d.rmdir()


def run_baseline_shard(base, cfg: dict | RunConfig, arm: str, seed: int, *, folder: Path, verifier: Verifier = verify,
                       progress=None, timer: PhaseTimer | None = None, trainer: str = "batched") -> list[float]:
    """One baseline on one seed's founders (:mod:`lib.society.baselines`): its rows at the last
    generation (agent 0), written at once; its wall seconds go to the progress file."""
    rc = RunConfig.of(cfg)
    cfg, s = rc.cfg, rc.settings
    shard = shard_path(folder, arm, seed)
    done = resume_shard(shard, "generation")
    if done is not None:
        return []
    clock = PhaseClock(timer)
    with clock("founders"):
        dirs = ensure_founders(base, cfg, seed, counter=clock.count, trainer=trainer)
    tic = time.time()
    names = [f"f{i}" for i in range(s.agents)]
    with clock("load"):
        for n, d in zip(names, dirs):
            load_adapter(base, n, d)
    p = pools_for(s, seed)

    def answer(name, prompts):
        return generate(base, prompts, adapter=name, hard=s.hard, batch_size=s.gen_batch, counter=clock.count)

    def train(tasks, train_seed):
        d = adapters_root(cfg) / f"s{seed}" / arm / "multitask"
        train_loras(base, [Job(tasks, train_seed, s.spec_epochs)], [d], trainer=trainer, counter=clock.count,
                    **s.lora_kw())
        load_adapter(base, "multitask", d)
        return "multitask", lora_steps(len(tasks), s.spec_epochs, s.batch_size)

    union = [x for i in range(s.agents)
             for x in founder_tasks(s, founder_family(s.families, i), founder_seed(seed, i))]
    with clock("baseline"):
        res = run_baseline(arm, Founders(base, names, s, val=p.val, seed=seed, tasks=union, verifier=verifier,
                                         answer=answer, train=lambda tasks, _: train(tasks, child_seed(seed, arm, 0, 0))))
        metrics = baseline_metrics(res, answer, test=p.test, val=p.val, s=s, verifier=verifier, selection=p.selection)
    remove_all(base)
    founders_steps = 0 if arm == MULTITASK else s.agents * lora_steps(s.spec_train, s.spec_epochs, s.batch_size)
    cost = {"train_steps": founders_steps + res.train_steps, "val_evals": res.val_evals}
    rows = RowWriter(s.experiment, arm, seed)
    t = s.generations - 1
    append_rows(shard, [rows.row(t, 0, k, v) for k, v in metrics.items()] + rows.costs(t, cost), COLUMNS)
    wall = time.time() - tic
    mark_done(shard, t, agents=[], pending_rows=[], gen_wall_s=[wall], gen_phase_s=[clock.rounded()], cost=cost,
              trainer=trainer)
    if progress is not None:
        progress.update(s.generations)
    return [wall]


def next_generation(base, agents, names: list[str], dirs: list[Path], ev: Evaluation, sel: Selection, gp, s: Settings,
                    a, *, arm: str, seed: int, t: int, out: Path, rows: RowWriter, cost: dict, verifier: Verifier,
                    clock: PhaseClock, trainer: str) -> tuple[list[Path], list[dict]]:
    """Generation ``t`` breeds generation ``t + 1`` into ``out``: parents' pairs are merged and screened
    (:func:`lib.society.generation.breed`), each child gets its source and inheritance data
    (:func:`~lib.society.generation.reproduce`; verified answers only for ``inherit: verified``), then either
    distils its merged source's answers (``a.distills``) or *is* that merge brought back to rank r
    (parameter inheritance), and is trained (:func:`train_children`). ``cost`` gains the children's
    train steps and the screening's val evaluations. Returns the children's folders and their birth
    rows (written with generation ``t + 1``)."""
    N = s.agents
    sources = step.breed(agents, names, ev, sel, a, gp, rng=generation_rng(seed, arm, t),
                         n_children=N - a.elitism, n_candidates=s.n_candidates, tag=f"t{t}",
                         verifier=verifier, families=s.families, clock=clock)
    children = step.reproduce(sources, sel.elites, gp.inheritance,
                              child_seed=lambda c: child_seed(seed, arm, t, c),
                              verifier=verifier if a.inherit == "verified" else None)
    if a.distills:
        save_merged_sources(agents, children, out)
        energy = {}
    else:
        energy = save_inherited_merges(agents, children, out, rank=s.lora_r)
    agents.forget()
    with clock("train"):
        new_dirs = train_children(base, children, dirs, out, s, clock.count, trainer=trainer, distill=a.distills)
    cost["train_steps"] += sum(lora_steps(len(ch.data), s.epochs, s.batch_size) for ch in children
                               if a.distills and not ch.elite and not ch.degenerate)
    cost["val_evals"] += (N - a.elitism) * s.n_candidates if a.grounded and a.merge else 0  # screening
    return new_dirs, rows.births(t + 1, children, energy)


def start_or_resume(base, cfg, s: Settings, shard: Path, root: Path, seed: int, clock: PhaseClock, trainer: str):
    """Where a shard starts: ``(first generation to run, the population's adapter folders, pending
    birth rows, walls, phases, cost)`` carried over from its progress file, or ``None`` when it is
    finished. A new shard starts at generation 0 from the founders (trained here, under the clock's
    ``founders`` phase, unless another arm of the seed already trained them)."""
    done = resume_shard(shard, "generation")
    if done is None:
        with clock("founders"):  # trained once per seed (0 s when another arm already did)
            dirs = ensure_founders(base, cfg, seed, counter=clock.count, trainer=trainer)
        return 0, dirs, [], [], [], {"train_steps": s.agents * lora_steps(s.spec_train, s.spec_epochs, s.batch_size),
                                      "val_evals": 0}
    if done >= s.generations - 1:
        return None
    info = read_progress(shard)
    return (done + 1, [root / p for p in info["agents"]], info["pending_rows"], info.get("gen_wall_s", []),
            info.get("gen_phase_s", []), info["cost"])


def run_shard(base, cfg: dict | RunConfig, arm: str, seed: int, *, folder: Path, verifier: Verifier = verify,
              interrupt_after: int | None = None, progress=None, timer: PhaseTimer | None = None,
              engine: str = "auto", trainer: str = "batched") -> list[float]:
    """Run (or resume) one (arm, seed) of the society; returns the wall seconds of each generation run.

    ``verifier(output, task) -> bool`` is the grounded signal; reporting uses it in every arm, the
    loop only where ``g > 0``. ``timer`` receives every phase and the work done in it. Besides the
    seed's metrics, each generation writes the diagnostics of the operators (:data:`DIAGNOSTICS`).
    A baseline arm (``baseline_*``) runs :func:`run_baseline_shard` instead. ``engine``: how agents
    answer and merge (:func:`lib.engines.agents.make_agents`; the rows do not depend on it up to float
    rounding, see :mod:`lib.engines.folded`); ``trainer``: how founders and children are trained
    (:func:`lib.engines.batched.train_loras`, recorded in the progress file).
    """
    rc = RunConfig.of(cfg)  # checked and hashed once, here or at run_experiment
    if is_baseline(arm):
        return run_baseline_shard(base, rc, arm, seed, folder=folder, verifier=verifier, progress=progress,
                                  timer=timer, trainer=trainer)
    cfg, s, a = rc.cfg, rc.settings, resolve_arm(rc.cfg, arm)
    s = replace(s, n_inherit=a.n_inherit, epochs=a.epochs, n_candidates=a.n_candidates)  # the arm's children's budget
    pools = pools_for(s, seed)
    rows = RowWriter(s.experiment, arm, seed)
    shard = shard_path(folder, arm, seed)
    root = adapters_root(cfg) / f"s{seed}"
    G, N = s.generations, s.agents

    first = PhaseClock(timer)  # generation 0 also times the founders
    agents = make_agents(base, engine=engine, hard=s.hard, batch_size=s.gen_batch, counter=first.count)
    start = start_or_resume(base, cfg, s, shard, root, seed, first, trainer)
    if start is None:
        return []
    t_first, dirs, pending, walls, phases, cost = start

    new_walls = []
    for t in range(t_first, G):
        tic, clock = time.time(), first if t == 0 else PhaseClock(timer)
        agents.counter = clock.count
        names = [f"t{t}a{i}" for i in range(N)]
        with clock("load"):
            for n, d in zip(names, dirs):
                agents.load(n, d)
        gp = pools.at(t)

        with clock("evaluate"):
            ev = step.evaluate(agents, names, gp, verifier=verifier, families=s.families)
            base_test = step.base_accuracy(agents, gp.test, verifier=verifier, families=s.families) if t == 0 else None
            if t == G - 1 and pools.selection:  # the selection pool, scored once at the end
                picked = step.answer_pools(agents, names, {"selection": pools.selection})["selection"]
                chosen = [fitness_of(o, pools.selection, s.families, verifier)["overall"] for o in picked]
        sel = step.select(ev, a, n_parents=s.n_parents, lam=s.lam, rng=selection_rng(seed, arm, t))
        out_rows = list(pending) + rows.generation(t, ev, sel, base_test)
        if t == G - 1 and pools.selection:
            out_rows += [rows.row(t, i, "select_overall", v) for i, v in enumerate(chosen)]
        cost["val_evals"] += N if a.grounded else 0  # selection read val

        new_dirs, pending = [], []
        if t < G - 1:
            new_dirs, pending = next_generation(base, agents, names, dirs, ev, sel, gp, s, a, arm=arm, seed=seed,
                                                t=t, out=root / arm / f"gen{t + 1}", rows=rows, cost=cost,
                                                verifier=verifier, clock=clock, trainer=trainer)
        else:
            agents.forget()
            out_rows += rows.costs(t, cost)

        new_walls.append(time.time() - tic)
        append_rows(shard, out_rows, COLUMNS)
        phases = phases + [clock.rounded()]
        mark_done(shard, t, agents=[str(Path(d).relative_to(root)) for d in new_dirs],
                  pending_rows=pending, gen_wall_s=walls + new_walls, gen_phase_s=phases, cost=cost,
                  trainer=trainer)
        if not s.keep_all_adapters and 0 < t < G - 1:  # founders and the last population are kept
            _drop_generation(dirs)
        dirs = new_dirs
        if progress is not None:
            progress.update(1)
        if interrupt_after is not None and t == interrupt_after:
            raise Interrupted(f"interrupted after generation {t} (test hook)")
    return new_walls


# ----------------------------------------------------------------------------- the runner contract


# the folder-identifying config, under the name lib.provenance and lib.sweep look for
manifest_config = core_config


def shards(cfg: dict) -> list[dict]:
    """One config per (arm, seed); each writes only its own shard of the same data folder."""
    cfg = validate_config(cfg)
    return [{**cfg, "arms": [a], "seeds": [s], "arm_seeds": {}} for a, s in arm_runs(cfg)]


def shard_status(cfg: dict, folder: Path | None = None) -> dict:
    """``{"<arm>_s<seed>": last completed generation or None}`` for every shard of ``cfg``."""
    folder = folder or data_dir(cfg["scale"], cfg["experiment"])
    return {f"{a}_s{s}": last_done(shard_path(folder, a, s)) for a, s in arm_runs(cfg)}


def shard_trainers(cfg: dict, folder: Path) -> dict:
    """``{trainer: number of shards}`` over the shards of ``cfg`` on disk; a shard written before the
    trainer was recorded counts as ``sequential`` (the only trainer there was)."""
    out: dict[str, int] = {}
    for a, s in runs_of(cfg):
        info = read_progress(shard_path(folder, a, s))
        if info is not None:
            t = info.get("trainer", "sequential")
            out[t] = out.get(t, 0) + 1
    return out


def refresh_manifest(cfg: dict, folder: Path) -> dict:
    """The manifest of ``folder`` with its shard table, trainers and status recomputed from the disk
    for the whole of ``cfg`` (a sweep's runs each write the manifest for their own shard only, so the
    last writer would otherwise say ``complete`` for a folder whose other shards are still to run).
    Written atomically under the folder lock; returns it."""
    from lib.core.jsonfile import write_json
    from lib.core.locks import folder_lock
    from lib.core.manifest import MANIFEST
    cfg = validate_config(cfg)
    with folder_lock(folder):
        m = read_manifest(folder)
        if m is None:
            return {}
        m["shards"] = shard_status(cfg, folder)
        m["trainers"] = shard_trainers(cfg, folder)
        m["status"] = "complete" if data_complete(cfg, folder) else "running"
        write_json(Path(folder) / MANIFEST, m)
    return m


def shard_done(cfg: dict) -> bool:
    """True when every (arm, seed) shard of ``cfg`` has its last generation on disk."""
    cfg = validate_config(cfg)
    return all(v is not None and v >= cfg["generations"] - 1 for v in shard_status(cfg).values())


def data_complete(cfg: dict | RunConfig, folder: Path | None = None) -> bool:
    """True when ``folder`` holds this config's data (same core config) with every shard finished."""
    rc = RunConfig.of(cfg)
    cfg = rc.cfg
    folder = Path(folder or data_dir(cfg["scale"], cfg["experiment"]))
    m = read_manifest(folder)
    if m is None or m.get("config_hash") != rc.hash:
        return False
    return all(v == cfg["generations"] - 1 for v in shard_status(cfg, folder).values())


def load_rows(cfg: dict, folder: Path | None = None) -> pd.DataFrame:
    """The rows of ``cfg``'s shards (in arm, seed order)."""
    folder = Path(folder or data_dir(cfg["scale"], cfg["experiment"]))
    parts = [read_shard(shard_path(folder, a, s), "generation", COLUMNS) for a, s in arm_runs(cfg)
             if shard_path(folder, a, s).exists()]
    parts = [p for p in parts if len(p)]
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=COLUMNS)


def run_experiment(cfg: dict | RunConfig, *, folder: str | Path | None = None, verifier: Verifier = verify,
                   interrupt_after: int | None = None, base=None, timer: PhaseTimer | None = None,
                   engine: str = "auto", trainer: str = "batched") -> pd.DataFrame:
    """Run every (arm, seed) of ``cfg`` (resuming finished generations); return its tidy rows.

    ``folder`` overrides ``data/<scale>/<experiment>/``; ``verifier`` and ``interrupt_after`` are
    test hooks; ``base`` reuses an already loaded base (it must be ``cfg['base_model']``); ``timer``
    receives every phase of every generation (:mod:`lib.engines.timing`); ``engine`` and ``trainer`` as
    :func:`run_shard` (the manifest records the trainers that wrote the folder's shards).
    """
    from tqdm.auto import tqdm
    from lib.engines.models import base_identity, load_base
    rc = RunConfig.of(cfg)  # the door: checked and hashed once; everything below gets rc (or rc.cfg)
    cfg, core = rc.cfg, rc.core
    check_device(cfg)
    check_trainer(trainer)
    folder = Path(folder or data_dir(cfg["scale"], cfg["experiment"]))
    check_resumable(folder, core)
    m = read_manifest(folder)
    started = m["started"] if m else now()
    status = shard_status(cfg, folder)
    todo = sum(cfg["generations"] - 1 - (v if v is not None else -1) for v in status.values())

    dtype = (m or {}).get("dtype")  # the base's dtype as resolved by the runs that wrote the rows

    def extra() -> dict:
        return {"run_config": dict(cfg), "shards": shard_status(cfg, folder), "seeds": seed_list(cfg),
                "trainers": shard_trainers(cfg, folder),
                "base_model": base_identity(cfg["base_model"]), **({"dtype": dtype} if dtype else {}),
                "note": "config/config_hash describe the data (arms and seeds excluded); "
                        "shards lists the (arm, seed) runs present; dtype: the base's, as resolved"}

    if todo == 0:  # nothing to run; (re)write the manifest if it does not yet list these shards as done
        if m is None or m.get("status") != "complete" or any(
                (m.get("shards") or {}).get(k) != v for k, v in status.items()):
            write_manifest(folder, core, started=started, wall_s=(m or {}).get("wall_s"), status="complete",
                           extra=extra())
        return load_rows(cfg, folder)
    if base is not None and base.name != cfg["base_model"]:
        raise ValueError(f"base {base.name!r} given for a config of base_model {cfg['base_model']!r}")
    resolved = base_dtype(cfg) if base is None else loaded_dtype(base)
    check_dtype(cfg, folder, dtype, resolved)  # rows of one folder come from one dtype
    dtype = resolved
    unfinished = [shard_path(folder, a, s) for a, s in runs_of(cfg)
                  if status[f"{a}_s{s}"] is None or status[f"{a}_s{s}"] < cfg["generations"] - 1]
    with shard_locks(unfinished):  # a second run on these shards is refused before anything is written
        t0 = time.time()
        prev_wall = float((m or {}).get("wall_s") or 0.0)
        write_manifest(folder, core, started=started, wall_s=prev_wall, status="running", extra=extra())
        if base is None:
            base = load_base(cfg["base_model"], dtype=resolved)
        with tqdm(total=todo, desc=f"{cfg['experiment']} ({cfg['scale']})", unit="gen") as bar:
            for arm, seed in runs_of(cfg):
                run_shard(base, rc, arm, seed, folder=folder, verifier=verifier, interrupt_after=interrupt_after,
                          progress=bar, timer=timer, engine=engine, trainer=trainer)
                write_manifest(folder, core, started=started, wall_s=prev_wall + time.time() - t0,
                               status="running", extra=extra())
        write_manifest(folder, core, started=started, wall_s=prev_wall + time.time() - t0, status="complete",
                       extra=extra())
    return load_rows(cfg, folder)


def generation_walls(cfg: dict, folder: Path | None = None) -> pd.DataFrame:
    """Wall seconds of every generation of every shard, with its phases (load, evaluate, screen,
    inherit, train; founders at generation 0) where recorded (from the progress files)."""
    folder = Path(folder or data_dir(cfg["scale"], cfg["experiment"]))
    out = []
    for a, s in arm_runs(cfg):
        info = read_progress(shard_path(folder, a, s))
        if info is not None:
            ph = info.get("gen_phase_s", [])
            for t, w in enumerate(info.get("gen_wall_s", [])):
                out.append({"arm": a, "seed": s, "generation": t, "wall_s": w, **(ph[t] if t < len(ph) else {})})
    return pd.DataFrame(out)
