"""One (arm, seed) of the society, generation by generation, and its resume.

:func:`run_shard` runs a :class:`~lib.society.shard_job.ShardJob`: a baseline arm is measured once
(:mod:`lib.society.baseline_shard`); an evolving arm loads each generation's adapters, runs the steps of
:mod:`lib.society.generation` (evaluate → select → breed → reproduce), trains the children
(:mod:`lib.society.children`), and writes the generation's rows and progress before the next starts.

Nothing is lost: after each generation its rows are appended to ``<folder>/<arm>_s<seed>.csv`` and the
next generation's adapters are saved under ``<adapters root>/s<seed>/<arm>/gen<t+1>/`` before the
generation is marked done (:class:`~lib.society.shard_job.ShardState` is what the progress file
records); re-running resumes from the last completed generation (:func:`start_or_resume`), and every
random draw comes from :mod:`lib.society.streams`, so a resumed run equals an uninterrupted one.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, replace
from pathlib import Path

from lib.core.device import float_path
from lib.core.manifest import code_state
from lib.core.rows import append_rows, mark_done, read_progress, resume_shard
from lib.engines.agents import make_agents
from lib.engines.timing import PhaseClock
from lib.operators.ops import fitness_of
from lib.society import generation as step
from lib.society.arms import is_baseline
from lib.society.baseline_shard import run_baseline_shard
from lib.society.children import (candidate_dir, drop_generation, keep_candidate, lora_steps, save_inherited_merges,
                                  save_merged_sources, train_children)
from lib.society.config import Arm
from lib.society.crossover import Archive
from lib.society.elites import attach_elites, start_archive, update_archive
from lib.society.founders import ensure_founders
from lib.society.generation import Agents, Generation
from lib.society.pools import Pools, pools_for
from lib.society.rows import COLUMNS
from lib.society.shard_job import CountingVerifier, Interrupted, ShardJob, ShardState
from lib.society.streams import candidate_rng, child_seed, generation_rng, selection_rng


@dataclass(frozen=True)
class Evolving:
    """An evolving shard as it runs: its job, its arm resolved (switches and children's budget), the
    agents that answer on the base, and its seed's pools (inheritance pools of the arm's size)."""

    job: ShardJob
    arm: Arm
    agents: Agents
    pools: Pools


def run_shard(job: ShardJob) -> list[float]:
    """Run (or resume) the shard ``job``; returns the wall seconds of each generation run.

    The verifier is the grounded signal; reporting uses it in every arm, the loop only where ``g > 0``.
    Besides the seed's metrics, each generation writes the diagnostics of the operators
    (:data:`lib.society.rows.DIAGNOSTICS`). A baseline arm (``baseline_*``) runs
    :func:`lib.society.baseline_shard.run_baseline_shard` instead. The rows do not depend on the
    job's engine up to float rounding (:mod:`lib.engines.folded`).
    """
    job = replace(job, verifier=CountingVerifier(job.verifier))
    if is_baseline(job.arm):
        return run_baseline_shard(job)
    cfg = job.cfg
    arm = cfg.resolve_arm(job.arm)
    pools = pools_for(cfg, job.seed, n_inherit=arm.n_inherit)  # the arm's children's budget
    first = PhaseClock(job.timer)  # generation 0 also times the founders
    agents = make_agents(job.base, engine=job.engine, hard=cfg.hard, batch_size=cfg.gen_batch, counter=first.count)
    run = Evolving(job, arm, agents, pools)
    state = start_or_resume(job, first)
    if state is None:
        return []
    ran = len(state.walls)
    while state.t < cfg.generations:
        t = state.t
        state = run_generation(run, state, first if t == 0 else PhaseClock(job.timer))
        if job.progress is not None:
            job.progress.update(1)
        if job.interrupt_after is not None and t == job.interrupt_after:
            raise Interrupted(f"interrupted after generation {t} (test hook)")
    return state.walls[ran:]


def start_or_resume(job: ShardJob, clock: PhaseClock) -> ShardState | None:
    """Where a shard starts: the state carried over from its progress file, or ``None`` when it is
    finished. A new shard starts at generation 0 from the founders (trained here, under the clock's
    ``founders`` phase, unless another arm of the seed already trained them)."""
    cfg = job.cfg
    done = resume_shard(job.path, "generation")
    if done is None:
        with clock("founders"):  # trained once per seed (0 s when another arm already did)
            dirs = ensure_founders(job.base, cfg, job.seed, counter=clock.count, trainer=job.trainer)
        founders = cfg.agents * lora_steps(cfg.spec_train, cfg.spec_epochs, cfg.batch_size)
        return ShardState(t=0, dirs=dirs, cost={"train_steps": founders, "val_evals": 0})
    if done >= cfg.generations - 1:
        return None
    info = read_progress(job.path)
    return ShardState(t=done + 1, dirs=[job.root / p for p in info["agents"]], pending=info["pending_rows"],
                      walls=info.get("gen_wall_s", []), phases=info.get("gen_phase_s", []), cost=info["cost"],
                      archive=info.get("archive"), counts=info.get("gen_counts", []))


def run_generation(run: Evolving, state: ShardState, clock: PhaseClock) -> ShardState:
    """Generation ``state.t``: evaluate and select (:func:`evaluate_generation`), breed the next one
    (but at the last), then write its rows and mark it done; returns the state before the next."""
    job, cfg = run.job, run.job.cfg
    t, tic, verified = state.t, time.time(), job.verifier.calls
    gen, out_rows, cost = evaluate_generation(run, state, clock)
    new_dirs, pending = [], []
    if t < cfg.generations - 1:
        new_dirs, pending = next_generation(run, gen, state.dirs, cost, clock)
    else:
        run.agents.forget()
        out_rows += job.rows.costs(t, cost)
    walls = state.walls + [time.time() - tic]
    append_rows(job.path, out_rows, COLUMNS)
    phases = state.phases + [clock.rounded()]
    counts = state.counts + [{**clock.work, "verifier_calls": job.verifier.calls - verified}]
    archive = None if gen.archive is None else gen.archive.to_json()
    mark_done(job.path, t, agents=[str(Path(d).relative_to(job.root)) for d in new_dirs],
              pending_rows=pending, gen_wall_s=walls, gen_phase_s=phases, gen_counts=counts, cost=cost,
              trainer=job.trainer,
              float_path=float_path(), commit=code_state()["commit"],
              **({} if archive is None else {"archive": archive}))
    if not cfg.keep_all_adapters and 0 < t < cfg.generations - 1:  # founders and the last population are kept
        drop_generation(state.dirs)
    return replace(state, t=t + 1, dirs=new_dirs, pending=pending, walls=walls, phases=phases, cost=cost,
                   archive=archive, counts=counts)


def evaluate_generation(run: Evolving, state: ShardState, clock: PhaseClock) -> tuple[Generation, list[dict], dict]:
    """Steps 1 and 2 of generation ``state.t``: its agents loaded, evaluated (the bare base too at
    generation 0; the selection pool once, at the last) and selected. Returns the generation, its rows
    (after the birth rows pending from the last) and the cost so far (selection's val evaluations added)."""
    job, cfg, arm, agents, verifier = run.job, run.job.cfg, run.arm, run.agents, run.job.verifier
    t, last, selection = state.t, state.t == cfg.generations - 1, run.pools.selection
    agents.counter = clock.count
    names = [f"t{t}a{i}" for i in range(cfg.agents)]
    with clock("load"):
        for n, d in zip(names, state.dirs):
            agents.load(n, d)
    gp = run.pools.at(t)
    with clock("evaluate"):
        ev = step.evaluate(agents, names, gp, verifier=verifier, families=cfg.families)
        base_test = step.base_accuracy(agents, gp.test, verifier=verifier, families=cfg.families) if t == 0 else None
        if last and selection:  # the selection pool, scored once at the end
            picked = step.answer_pools(agents, names, {"selection": selection})["selection"]
            chosen = [fitness_of(o, selection, cfg.families, verifier)["overall"] for o in picked]
    sel = step.select(ev, arm, n_parents=cfg.resolved_n_parents, lam=cfg.lam, rng=selection_rng(job.seed, job.arm, t))
    out_rows = list(state.pending) + job.rows.generation(t, ev, sel, base_test)
    if last and selection:
        out_rows += [job.rows.row(t, i, "select_overall", v) for i, v in enumerate(chosen)]
    cost = dict(state.cost)
    cost["val_evals"] += cfg.agents if arm.grounded else 0  # selection read val
    archive = None
    if arm.archive:
        with clock("archive"):
            archive = keep_archive(run, state, names, ev, gp)
        cost["val_evals"] += 1 if t == 0 else 0  # the bare base on val, once
        out_rows += [job.rows.row(t, -1, f"archive_val_{c}", archive.score[c]) for c in archive.cells]
    return Generation(t=t, names=names, pools=gp, ev=ev, sel=sel, archive=archive), out_rows, cost


def keep_archive(run: Evolving, state: ShardState, names: list[str], ev, gp) -> Archive:
    """The archive after generation ``state.t`` was offered to it (started from the bare base at generation 0,
    read back from the progress file on a resume), its elites attached as agents for the breeding to come."""
    folder = run.job.root / run.job.arm / "archive"
    archive = (start_archive(run.agents, gp, families=run.job.cfg.families, verifier=run.job.verifier)
               if state.archive is None else Archive.from_json(state.archive))
    update_archive(archive, names, state.dirs, ev, gp, folder)
    attach_elites(run.agents, archive, folder, names)
    return archive


def next_generation(run: Evolving, gen: Generation, dirs: list[Path], cost: dict,
                    clock: PhaseClock) -> tuple[list[Path], list[dict]]:
    """Generation ``gen.t`` breeds generation ``t + 1`` under ``<seed's adapters>/<arm>/gen<t+1>/``: parents'
    pairs are merged and screened (:func:`lib.society.generation.breed`), each child gets its source and
    inheritance data (:func:`~lib.society.generation.reproduce`; verified answers only for ``inherit:
    verified``), then either distils its merged source's answers (``arm.distills``) or *is* that merge
    brought back to rank r (parameter inheritance), and is trained
    (:func:`lib.society.children.train_children`). ``cost`` gains the children's train steps and the
    screening's val evaluations. Returns the children's folders and their birth rows (written with
    generation ``t + 1``)."""
    job, cfg, a, agents, t = run.job, run.job.cfg, run.arm, run.agents, gen.t
    out = job.root / job.arm / f"gen{t + 1}"
    N = cfg.agents
    sources = step.breed(agents, gen, a, rng=generation_rng(job.seed, job.arm, t), n_children=N - a.elitism,
                         verifier=job.verifier, families=cfg.families, clock=clock)
    children = step.reproduce(sources, gen.sel.elites, gen.pools.inheritance,
                              child_seed=lambda c: child_seed(job.seed, job.arm, t, c),
                              verifier=job.verifier if a.inherit == "verified" else None)
    if a.from_merge:
        energy = save_inherited_merges(agents, children, out, rank=cfg.lora_r)
    else:
        save_merged_sources(agents, children, out)
        energy = {}
    agents.forget()
    starts = step.continue_starts(children, gen.sel.scores, a.candidates) if a.continues else {}
    children = [replace(ch, starts=starts[ch.index]) if ch.index in starts else ch for ch in children]
    with clock("train"):
        new_dirs = train_children(job.base, children, dirs, out, arm=a, cfg=cfg, counter=clock.count,
                                  trainer=job.trainer)
    cost["train_steps"] += sum(lora_steps(len(ch.data), a.epochs, cfg.batch_size) * len(starts.get(ch.index, (0,)))
                               for ch in children if a.trains and not ch.elite and not ch.degenerate)
    cost["val_evals"] += (N - a.elitism) * a.n_candidates if a.grounded and a.merge else 0  # screening
    continued = screen_candidates(run, gen, starts, out, cost, clock) if a.continues else {}
    return new_dirs, job.rows.births(t + 1, children, energy, continued)


def screen_candidates(run: Evolving, gen: Generation, starts: dict[int, tuple[int, ...]], out: Path, cost: dict,
                      clock: PhaseClock) -> dict[int, dict]:
    """``continue``: each child's candidates (one per parent it started from) answer the screening pool, the one
    with the best verifier accuracy there becomes the child (:func:`lib.society.generation.pick_candidates`; ties
    drawn from :func:`lib.society.streams.candidate_rng`), as merge candidates are screened. A child with one
    candidate takes it unscreened. ``cost`` gains one val evaluation per screened candidate. Returns, per child,
    ``{"from": the parent it continues, "scores": {parent: screening accuracy}, "tied": candidates tied}``."""
    job, agents, cfg = run.job, run.agents, run.job.cfg
    screened = {c: ps for c, ps in starts.items() if len(ps) > 1}
    names = {(c, p): f"t{gen.t}c{c}p{p}" for c, ps in screened.items() for p in ps}
    with clock("screen"):
        for (c, p), n in names.items():
            agents.load(n, candidate_dir(out, c, p))
        outs = dict(zip(names, agents.answer(list(names.values()), step.prompts(gen.pools.screen)) if names else []))
        agents.forget()
    scores = {c: [fitness_of(outs[c, p], gen.pools.screen, cfg.families, job.verifier)["overall"] for p in ps]
              for c, ps in screened.items()}
    picks = dict(zip(scores, step.pick_candidates(list(scores.values()), candidate_rng(job.seed, job.arm, gen.t))))
    cost["val_evals"] += len(names)
    out_info = {}
    for c, ps in starts.items():
        winner, tied = picks.get(c, (0, 1))
        keep_candidate(out, c, ps, winner)
        out_info[c] = {"from": ps[winner], "scores": dict(zip(ps, scores.get(c, []))), "tied": tied}
    return out_info
