"""One (arm, seed) of the climb, round by round, and its resume.

Every arm starts from the same **generalists** of its seed (:func:`ensure_generalists`): ``population`` LoRAs,
each trained (its own seed, a founder's epochs) on distill-all's data — every founder's and the bare base's
verified answers to generation 0's inheritance prompts — plus the ``n_hints`` gold tasks per family of the climbed
rung. Their data is also every learner's replay. Then, for rounds ``t = 0 … R − 1``:

1. **evaluate** the learners (greedy): test at the easy level and on every rung, the selection pools; a grounded
   population also val (the society's and the rung's), its selection signal;
2. **sample** ``k`` answers of every learner to round ``t``'s fresh climb prompts at the temperature
   (:meth:`lib.engines.sample.SamplingAgents.sample`; a single learner draws ``population × k``);
3. **keep** answers (:mod:`lib.society.climb.keep`): the verifier's (``climb``, ``climb_single``), the
   population's vote (``climb_vote``) or the learner's self-consistency (``climb_single_vote``); kept answers
   join the run's pool, which only grows;
4. **select** (a population): score ``g·val + (1 − g)·κ`` (grounded, the society's ``g``) or ``κ`` alone (the
   vote: conformity with the consensus of the agents' modal answers), quality-diversity parents
   (:func:`lib.operators.ops.select_parents`); child ``c`` continues parent ``parents[c mod n_parents]``;
5. **train**: each child continues its parent's LoRA for ``round_steps`` optimizer steps (a single learner
   ``population × round_steps``) on a mix of ``n_mix`` examples, the pool's answers and replay
   (:func:`lib.society.climb.keep.training_mix`).

After the last round the learners are evaluated once more (generation ``R``). Rows use the society's schema
(:data:`lib.society.rows.COLUMNS`; generation = round). The loop's verifier (``job.verifier``) is called only by
the verifier arms' keep and by grounded selection; the rows' accuracies are measured with ``job.report`` (the
same exact check, kept apart so that a test can prove a vote arm never calls the loop's verifier).

The one-shot baselines (``baseline_hints``, ``baseline_gold_climb``) train one fresh LoRA on the generalists' data
(plus every round's climb prompts with their gold answers) for a climbing population's optimizer steps.

Nothing is lost: each round's rows are appended and the round marked done (the learners' adapter folders, the
kept pool and the cost in the progress file) before the next starts; every random draw is seeded by (seed, arm,
round, learner), so a resumed run equals an uninterrupted one.
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable

import numpy as np

from lib.core.config import config_hash
from lib.core.device import float_path
from lib.core.jsonfile import write_json
from lib.core.manifest import code_state
from lib.core.rows import append_rows, mark_done, read_progress, resume_shard
from lib.core.tasks import RUNGS, Task, verify
from lib.engines.batched import Job, train_loras
from lib.engines.lora import check_adapter_dir
from lib.engines.sample import make_sampling_agents
from lib.engines.timing import PhaseClock, PhaseTimer
from lib.operators.ops import answer_key, best, consensus_answers, consensus_share, fitness_of, select_parents
from lib.society.arms import SPECS
from lib.society.children import lora_steps
from lib.society.climb import keep
from lib.society.climb.config import ClimbConfig
from lib.society.climb.ladder import Ladder, ladder_for
from lib.society.crossover import verified_union
from lib.society.founders import ensure_founders, founder_settings
from lib.society.generation import prompts
from lib.society.rows import COLUMNS
from lib.society.shard_job import CountingVerifier, Interrupted, ShardPlace
from lib.society.streams import child_seed

Verifier = Callable[[str, Task], bool]


@dataclass(frozen=True)
class ClimbJob(ShardPlace):
    """The (``arm``, ``seed``) shard of ``cfg``, its rows in ``folder``, run on ``base``; ``verifier``: the loop's
    grounded signal, ``report``: the check the rows' accuracies are measured with; ``agents``: the engine's
    factory (:func:`lib.engines.sample.make_sampling_agents`; tests pass fakes); the rest as :class:`lib.society.shard_job.ShardJob`."""

    base: Any
    cfg: ClimbConfig
    arm: str
    seed: int
    folder: Path
    verifier: Verifier = verify
    report: Verifier = verify
    interrupt_after: int | None = None
    progress: Any = None
    timer: PhaseTimer | None = None
    trainer: str = "batched"
    agents: Callable = make_sampling_agents


@dataclass(frozen=True)
class ClimbState:
    """Where a shard stands before round ``t``: its learners' adapter folders, the kept pool (each answer with the
    round that kept it), the cost so far and the wall seconds, phases and work of every round run so far."""

    t: int
    dirs: list[Path]
    pool: list[tuple[str, str, str, int]] = field(default_factory=list)  # (family, prompt, answer, round)
    cost: dict = field(default_factory=dict)
    walls: list[float] = field(default_factory=list)
    phases: list[dict] = field(default_factory=list)
    counts: list[dict] = field(default_factory=list)
    learner: int | None = None  # a single arm: the generalist it continues


# ----------------------------------------------------------------------------- the generalists


def generalist_settings(base, cfg: ClimbConfig, seed: int) -> dict:
    """Everything the generalists of ``seed`` depend on: the founders' settings and the climb's keys they read."""
    return {**founder_settings(base, cfg, seed), "population": cfg.population, "n_hints": cfg.n_hints,
            "rung": cfg.rung, "task_form": cfg.task_form, "n_val": cfg.n_val, "n_select": cfg.n_select}


def generalists_dir(base, cfg: ClimbConfig, seed: int) -> Path:
    return cfg.adapters_root() / f"s{seed}" / f"generalists-{config_hash(generalist_settings(base, cfg, seed))[:10]}"


def generalist_seed(seed: int, i: int) -> int:
    return child_seed(seed, "generalist", 0, i)


def ensure_generalists(job: ClimbJob, lad: Ladder, clock: PhaseClock) -> tuple[list[Path], list[Task], int]:
    """The generalists' adapter folders of the job's seed, their data (distill-all's and the hints) and each one's
    optimizer steps; those not on disk are trained (the founders first, if they are not either)."""
    cfg, base = job.cfg, job.base
    root = generalists_dir(base, cfg, job.seed)
    root.mkdir(parents=True, exist_ok=True)
    data_file = root / "data.json"
    if data_file.is_file():
        data = [Task(*x) for x in json.loads(data_file.read_text())]
    else:
        with clock("founders"):
            founders = ensure_founders(base, cfg, job.seed, counter=clock.count, trainer=job.trainer)
        with clock("generalists"):
            agents = job.agents(base, engine="folded", hard=True, batch_size=cfg.gen_batch, counter=clock.count)
            names = [f"f{i}" for i in range(len(founders))]
            for n, d in zip(names, founders):
                agents.load(n, d)
            answers = agents.answer([*names, agents.BASE], prompts(lad.inheritance))
            agents.forget()
        data = verified_union(lad.inheritance, answers, job.verifier) + list(lad.hints)
        write_json(data_file, [[x.family, x.prompt, x.answer] for x in data])
    (root / "settings.json").write_text(json.dumps(generalist_settings(base, cfg, job.seed), indent=2) + "\n")
    dirs = [root / f"g{i}" for i in range(cfg.population)]
    todo = []
    for i, d in enumerate(dirs):
        if d.exists():
            check_adapter_dir(d)
        else:
            todo.append((Job(data, generalist_seed(job.seed, i), cfg.spec_epochs), d))
    with clock("generalists"):
        train_loras(base, [j for j, _ in todo], [d for _, d in todo], trainer=job.trainer, counter=clock.count,
                    **cfg.lora_kw())
    return dirs, data, lora_steps(len(data), cfg.spec_epochs, cfg.batch_size)


def starting_cost(cfg: ClimbConfig, generalist_steps: int) -> dict:
    """What every arm has spent before its first round: the founders' and the generalists' optimizer steps."""
    founders = cfg.agents * lora_steps(cfg.spec_train, cfg.spec_epochs, cfg.batch_size)
    return {"train_steps": founders + cfg.population * generalist_steps, "samples": 0, "verifier_calls": 0}


def population_steps(cfg: ClimbConfig, generalist_steps: int) -> int:
    """A climbing population's optimizer steps after the founders: its generalists' and ``rounds`` rounds'."""
    return cfg.population * (generalist_steps + cfg.rounds * cfg.round_steps)


# ----------------------------------------------------------------------------- evaluation


def accuracy_rows(job: ClimbJob, t: int, names: list[str], agents, lad: Ladder, *, val: bool) -> tuple[list[dict], dict]:
    """Every learner's rows at round ``t`` (greedy answers, measured with ``job.report``): the easy level's test
    (``test_<family>``, ``test_overall``), every rung's (``test_<family>_rung<r>``, ``test_rung<r>``), the selection
    pools (``select_overall``, ``select_rung``) and, with ``val``, the grounded signal (``val_overall``, read with
    the loop's verifier). Returns the rows and, per learner, ``{"select_rung": [...], "val": [...], "keys": [...],
    "rung": [...]}``: its answer key on the selection pools (the tie-break of a pick) and its greedy outputs on the
    climbed rung's test pool."""
    cfg, fams = job.cfg, job.cfg.families
    pools = {"test": lad.test, "select": lad.selection, "select_rung": lad.rung_select,
             **{f"rung{r}": lad.rung_test[r] for r in RUNGS}}
    if val:
        pools["val"] = lad.val + lad.rung_val
    outs = agents.answer(names, [p for pool in pools.values() for p in prompts(pool)])
    rows, out = [], {"select_rung": [], "val": [], "keys": [], "rung": []}
    for i, o in enumerate(outs):
        k, got = 0, {}
        for name, pool in pools.items():
            got[name] = o[k:k + len(pool)]
            k += len(pool)
        acc = fitness_of(got["test"], lad.test, fams, job.report)
        rows += [job.rows.row(t, i, f"test_{f}", acc[f]) for f in fams] + [job.rows.row(t, i, "test_overall",
                                                                                     acc["overall"])]
        for r in RUNGS:
            acc = fitness_of(got[f"rung{r}"], lad.rung_test[r], fams, job.report)
            rows += [job.rows.row(t, i, f"test_{f}_rung{r}", acc[f]) for f in fams]
            rows.append(job.rows.row(t, i, f"test_rung{r}", acc["overall"]))
        sel = fitness_of(got["select"], lad.selection, fams, job.report)["overall"]
        sel_rung = fitness_of(got["select_rung"], lad.rung_select, fams, job.report)["overall"]
        rows += [job.rows.row(t, i, "select_overall", sel), job.rows.row(t, i, "select_rung", sel_rung)]
        out["select_rung"].append(sel_rung)
        out["keys"].append(answer_key(got["select"], got["select_rung"]))
        out["rung"].append(got[f"rung{cfg.rung}"])
        if val:
            v = fitness_of(got["val"], pools["val"], fams, job.verifier)["overall"]
            rows.append(job.rows.row(t, i, "val_overall", v))
            out["val"].append(v)
    return rows, out


def chosen(select_rung, keys) -> int:
    """The learner a reader takes away: the best on the climbed rung's selection pool (an exact tie: the smaller
    answer key on the selection pools, never the lower seat)."""
    return best(select_rung, keys)


def ensemble_rows(job: ClimbJob, t: int, lad: Ladder, rung_outputs) -> list[dict]:
    """The population's ensemble read-out (evaluation only, agent −1): on the climbed rung's test pool, the
    consensus of the learners' greedy answers (:func:`lib.operators.ops.consensus_answers`: the answer strictly
    more learners give than any other; a tie gives no answer, so it counts as wrong), scored with ``job.report``
    per family (``ensemble_<family>_rung<r>``) and overall (``ensemble_rung<r>``), and the share of its prompts
    that have a consensus (``ensemble_share_rung<r>``)."""
    r, tasks = job.cfg.rung, lad.rung_test[job.cfg.rung]
    consensus = consensus_answers(rung_outputs)
    acc = fitness_of(consensus, tasks, job.cfg.families, job.report)
    return ([job.rows.row(t, -1, f"ensemble_{f}_rung{r}", acc[f]) for f in job.cfg.families]
            + [job.rows.row(t, -1, f"ensemble_rung{r}", acc["overall"]),
               job.rows.row(t, -1, f"ensemble_share_rung{r}", consensus_share(consensus))])


# ----------------------------------------------------------------------------- one round


def keep_answers(job: ClimbJob, climb: list[Task], samples) -> list[Task]:
    """Step 3: the kept answers of this round's samples, by the arm's filter."""
    spec, cfg = SPECS[job.arm], job.cfg
    if spec.climb == "verifier":
        return keep.verified_kept(climb, samples, job.verifier)
    if spec.single:
        return keep.self_consistent_kept(climb, samples[0], cfg.vote_m / cfg.population)
    return keep.vote_kept(climb, samples, cfg.vote_m)


def kept_rows(job: ClimbJob, t: int, climb: list[Task], kept: list[Task], samples) -> list[dict]:
    """Diagnostics of step 3 (agent −1; ``job.report`` against the gold answers, never seen by the loop): answers
    kept, per family, the share of them that is wrong, and each learner's pass@k on the climb prompts."""
    gold = {x.prompt: x for x in climb}
    wrong = [not job.report(x.answer, gold[x.prompt]) for x in kept]
    out = [job.rows.row(t, -1, "kept_n", len(kept)),
           job.rows.row(t, -1, "kept_wrong_share", float(np.mean(wrong)) if kept else float("nan"))]
    out += [job.rows.row(t, -1, f"kept_n_{f}", sum(x.family == f for x in kept)) for f in job.cfg.families]
    out += [job.rows.row(t, i, "pass_at_k", keep.pass_at_k(climb, s, job.report)) for i, s in enumerate(samples)]
    return out


def parents_of(job: ClimbJob, t: int, samples, val: list[float]) -> tuple[list[int], list[dict]]:
    """Step 4 for a population: the parent each child continues (child ``c``: ``parents[c mod n_parents]``; at
    ``@lineages`` no selection, child ``c`` continues learner ``c``) and the rows of the selection (each learner's
    conformity κ and score; ``selected`` for the parents; the share of prompts with a consensus)."""
    cfg, spec = job.cfg, SPECS[job.arm]
    consensus, kappa, dist = keep.agreement(samples)
    if spec.selection == "lineages":
        rows = [job.rows.row(t, i, "conformity", kappa[i], conformity=kappa[i]) for i in range(len(kappa))]
        return list(range(cfg.population)), rows + [job.rows.row(t, -1, "consensus_share", consensus_share(consensus))]
    scores = cfg.g * np.asarray(val) + (1.0 - cfg.g) * kappa if spec.grounded else kappa
    keys = [answer_key(*agent) for agent in samples]
    parents = select_parents(scores, dist, cfg.climb_parents, keys=keys, diversity=True, lam=cfg.lam)
    rows = [job.rows.row(t, i, "conformity", kappa[i], selected=i in parents, conformity=kappa[i], score=scores[i])
            for i in range(len(scores))]
    rows.append(job.rows.row(t, -1, "consensus_share", consensus_share(consensus)))
    return [parents[c % len(parents)] for c in range(cfg.population)], rows


def learner_scale(job: ClimbJob) -> int:
    """How many children's samples and steps one learner of the arm takes per round: a single learner the
    population's (``population``), at ``@child`` one child's (1); a population's child 1."""
    spec = SPECS[job.arm]
    return job.cfg.population if spec.single and spec.budget != "child" else 1


def round_jobs(job: ClimbJob, t: int, starts: list[Path], pool: list[Task], replay: list[Task]) -> list[Job]:
    """Step 5: one training job per child (a single learner: one, :func:`learner_scale` times as long)."""
    cfg = job.cfg
    steps = cfg.round_steps * learner_scale(job)
    out = []
    for c, start in enumerate(starts):
        s = child_seed(job.seed, job.arm, t, c)
        mix = keep.training_mix(pool, replay, n_mix=cfg.n_mix, replay_share=cfg.replay_share,
                                rng=np.random.default_rng(s))
        out.append(Job(mix, s, 1, init=start, steps=steps))
    return out


def run_round(job: ClimbJob, state: ClimbState, lad: Ladder, replay: list[Task], agents,
              clock: PhaseClock) -> tuple[ClimbState, list[dict]]:
    """Round ``state.t`` (steps 1–5), or, after the last round, the learners' last evaluation; returns the next
    state and the round's rows."""
    cfg, spec, t = job.cfg, SPECS[job.arm], state.t
    single, calls = spec.single, getattr(job.verifier, "calls", 0)
    names = [f"t{t}a{i}" for i in range(len(state.dirs))]
    with clock("load"):
        for n, d in zip(names, state.dirs):
            agents.load(n, d)
    last = t == cfg.rounds
    grounded_population = spec.grounded and not single and not last and spec.selection != "lineages"
    with clock("evaluate"):
        rows, got = accuracy_rows(job, t, names, agents, lad, val=grounded_population)
    learner = state.learner
    if single and t == 0:  # the generalist best on the selection pool is the one learner
        learner = chosen(got["select_rung"], got["keys"])
        rows.append(job.rows.row(t, -1, "learner", learner))
        names, dirs = [names[learner]], [state.dirs[learner]]
    else:
        dirs = state.dirs
    cost = dict(state.cost)
    if last:
        agents.forget()
        if not single:
            rows += ensemble_rows(job, t, lad, got["rung"])
        return replace(state, t=t + 1, learner=learner), rows + job.rows.costs(t, cost)
    climb = lad.climb[t]
    k = cfg.climb_samples * learner_scale(job)
    with clock("sample"):
        samples = agents.sample(names, prompts(climb), k, temperature=cfg.temperature, seed=job.seed)
    agents.forget()
    with clock("keep"):
        kept = keep_answers(job, climb, samples)
    rows += kept_rows(job, t, climb, kept, samples)
    pool = state.pool + [(x.family, x.prompt, x.answer, t) for x in kept]
    rows.append(job.rows.row(t, -1, "pool_n", len(pool)))
    if single:
        starts, out = dirs, [job.root / job.arm / f"round{t + 1}" / "a0"]
    else:
        parent, sel_rows = parents_of(job, t, samples, got["val"])
        rows += sel_rows
        starts = [dirs[p] for p in parent]
        out = [job.root / job.arm / f"round{t + 1}" / f"a{c}" for c in range(cfg.population)]
        rows += [job.rows.row(t, c, "next_parent", p) for c, p in enumerate(parent)]
    jobs = round_jobs(job, t, starts, [Task(f, p, a) for f, p, a, _ in pool], replay)
    with clock("train"):
        train_loras(job.base, jobs, out, trainer=job.trainer, counter=clock.count, **cfg.lora_kw())
    cost["train_steps"] += sum(j.steps for j in jobs)
    cost["samples"] += len(climb) * k * len(names)
    cost["verifier_calls"] += getattr(job.verifier, "calls", 0) - calls
    return replace(state, t=t + 1, dirs=out, pool=pool, cost=cost, learner=learner), rows


# ----------------------------------------------------------------------------- the shard


def run_climb_shard(job: ClimbJob) -> list[float]:
    """Run (or resume) the shard ``job``; returns the wall seconds of each round run (``[]``: it was done)."""
    job = replace(job, verifier=CountingVerifier(job.verifier))
    if SPECS[job.arm].climb in ("hints", "gold"):
        return run_one_shot(job)
    cfg = job.cfg
    lad = ladder_for(cfg, job.seed)
    first = PhaseClock(job.timer)
    done = resume_shard(job.path, "generation")
    if done is not None and done >= cfg.rounds:
        return []
    dirs, replay, g_steps = ensure_generalists(job, lad, first)
    if done is None:
        state = ClimbState(t=0, dirs=dirs, cost=starting_cost(cfg, g_steps))
    else:
        info = read_progress(job.path)
        state = ClimbState(t=done + 1, dirs=[job.root / p for p in info["agents"]],
                           pool=[tuple(x) for x in info["pool"]], cost=info["cost"], walls=info["gen_wall_s"],
                           phases=info["gen_phase_s"], counts=info["gen_counts"], learner=info.get("learner"))
    agents = job.agents(job.base, engine="folded", hard=True, batch_size=cfg.gen_batch)
    ran = len(state.walls)
    clock = first
    while state.t <= cfg.rounds:
        t, tic, work0 = state.t, time.time(), getattr(job.verifier, "calls", 0)
        agents.counter = clock.count
        state, rows = run_round(job, state, lad, replay, agents, clock)
        append_rows(job.path, rows, COLUMNS)
        state = replace(state, walls=state.walls + [time.time() - tic], phases=state.phases + [clock.rounded()],
                        counts=state.counts + [{**clock.work, "verifier_calls": job.verifier.calls - work0}])
        mark_done(job.path, t, agents=[str(Path(d).relative_to(job.root)) for d in state.dirs],
                  pool=[list(x) for x in state.pool], cost=state.cost, learner=state.learner,
                  gen_wall_s=state.walls, gen_phase_s=state.phases, gen_counts=state.counts, trainer=job.trainer,
                  float_path=float_path(), commit=code_state()["commit"])
        if job.progress is not None:
            job.progress.update(1)
        if job.interrupt_after is not None and t == job.interrupt_after:
            raise Interrupted(f"interrupted after round {t} (test hook)")
        clock = PhaseClock(job.timer)
    return state.walls[ran:]


def run_one_shot(job: ClimbJob) -> list[float]:
    """A one-shot baseline: one fresh LoRA on the generalists' data (``baseline_gold_climb``: plus every round's
    climb prompts with their gold answers) for a climbing population's optimizer steps, measured once (its rows at
    generation ``R``, agent 0)."""
    cfg = job.cfg
    if resume_shard(job.path, "generation") is not None:
        return []
    lad = ladder_for(cfg, job.seed)
    clock = PhaseClock(job.timer)
    _, data, g_steps = ensure_generalists(job, lad, clock)
    tic = time.time()
    if SPECS[job.arm].climb == "gold":
        data = data + [x for pool in lad.climb for x in pool]
    steps = population_steps(cfg, g_steps)
    d = job.root / job.arm / "model"
    with clock("train"):
        train_loras(job.base, [Job(data, child_seed(job.seed, job.arm, 0, 0), 1, steps=steps)], [d],
                    trainer=job.trainer, counter=clock.count, **cfg.lora_kw())
    agents = job.agents(job.base, engine="folded", hard=True, batch_size=cfg.gen_batch, counter=clock.count)
    agents.load("model", d)
    t = cfg.rounds
    with clock("evaluate"):
        rows, _ = accuracy_rows(job, t, ["model"], agents, lad, val=False)
    agents.forget()
    founders = cfg.agents * lora_steps(cfg.spec_train, cfg.spec_epochs, cfg.batch_size)
    cost = {"train_steps": founders + steps, "samples": 0, "verifier_calls": 0}  # no loop: nothing sampled or kept
    rows += [job.rows.row(t, -1, "train_n", len(data))] + job.rows.costs(t, cost)
    append_rows(job.path, rows, COLUMNS)
    wall = time.time() - tic
    mark_done(job.path, t, agents=[], pool=[], cost=cost, gen_wall_s=[wall], gen_phase_s=[clock.rounded()],
              gen_counts=[{**clock.work, "verifier_calls": job.verifier.calls}], trainer=job.trainer,
              float_path=float_path(), commit=code_state()["commit"])
    if job.progress is not None:
        job.progress.update(cfg.rounds + 1)
    return [wall]
