"""One baseline (``baseline_<method>``) on one seed's founders: one model measured once, its rows written
at the last generation (agent 0) at once (:mod:`lib.society.baselines` builds it)."""
from __future__ import annotations

import time

from lib.core.device import float_path
from lib.core.manifest import code_state
from lib.core.rows import append_rows, mark_done, resume_shard
from lib.engines.batched import Job, train_loras
from lib.engines.generate import generate
from lib.engines.lora import load_adapter, remove_all
from lib.engines.timing import PhaseClock
from lib.operators.ops import founder_family
from lib.society.arms import MULTITASK, spec
from lib.society.baselines import Founders, Result, baseline_metrics, run_baseline
from lib.society.children import lora_steps
from lib.society.founders import ensure_founders
from lib.society.pools import founder_seed, founder_tasks, inheritance_pool, pools_for
from lib.society.rows import COLUMNS
from lib.society.shard_job import ShardJob
from lib.society.streams import child_seed


def run_baseline_shard(job: ShardJob) -> list[float]:
    """Run the baseline shard ``job`` unless its rows are on disk; returns its wall seconds (``[]``
    when it was done). The founders' training is timed apart (phase ``founders``), not in the wall."""
    cfg, arm, seed = job.cfg, job.arm, job.seed
    if resume_shard(job.path, "generation") is not None:
        return []
    clock = PhaseClock(job.timer)
    with clock("founders"):
        dirs = ensure_founders(job.base, cfg, seed, counter=clock.count, trainer=job.trainer)
    tic = time.time()
    names = [f"f{i}" for i in range(cfg.agents)]
    with clock("load"):
        for n, d in zip(names, dirs):
            load_adapter(job.base, n, d)
    res, metrics = _measure(job, names, dirs, clock)
    remove_all(job.base)
    gold = spec(arm).base == MULTITASK  # trained on the founders' gold tasks, not from the founders
    founders_steps = 0 if gold else cfg.agents * lora_steps(cfg.spec_train, cfg.spec_epochs, cfg.batch_size)
    cost = {"train_steps": founders_steps + res.train_steps, "val_evals": res.val_evals}
    rows = job.rows
    t = cfg.generations - 1
    append_rows(job.path, [rows.row(t, 0, k, v) for k, v in metrics.items()] + rows.costs(t, cost), COLUMNS)
    wall = time.time() - tic
    counts = {**clock.work, "verifier_calls": getattr(job.verifier, "calls", 0)}
    mark_done(job.path, t, agents=[], pending_rows=[], gen_wall_s=[wall], gen_phase_s=[clock.rounded()],
              gen_counts=[counts], cost=cost,
              trainer=job.trainer, float_path=float_path(), commit=code_state()["commit"])
    if job.progress is not None:
        job.progress.update(cfg.generations)
    return [wall]


def _measure(job: ShardJob, names: list[str], dirs: list, clock: PhaseClock) -> tuple[Result, dict]:
    """Build the baseline from the founders attached as ``names`` (their folders ``dirs``; hyperparameters chosen
    on val) and measure it, under the clock's ``baseline`` phase: ``(its result, its metrics)``."""
    base, cfg, arm, seed = job.base, job.cfg, job.arm, job.seed
    p = pools_for(cfg, seed)

    def answer(name, prompts):
        return generate(base, prompts, adapter=name, hard=cfg.hard, batch_size=cfg.gen_batch, counter=clock.count)

    def train(tasks, round_, steps=None, init=None):  # round 0: the seed's multitask stream, as before the iterated baseline
        d = cfg.adapters_root() / f"s{seed}" / arm / "multitask"
        train_loras(base, [Job(tasks, child_seed(seed, arm, round_, 0), cfg.spec_epochs, init=init, steps=steps)], [d],
                    trainer=job.trainer, counter=clock.count, **cfg.lora_kw())
        load_adapter(base, "multitask", d)
        return "multitask", steps if steps is not None else lora_steps(len(tasks), cfg.spec_epochs, cfg.batch_size)

    union = [x for i in range(cfg.agents)
             for x in founder_tasks(cfg, founder_family(cfg.families, i), founder_seed(seed, i))]
    with clock("baseline"):
        res = run_baseline(arm, Founders(base, names, cfg, val=p.val, seed=seed, tasks=union, verifier=job.verifier,
                                         answer=answer, train=train,
                                         inherit=lambda t: inheritance_pool(cfg, seed, t, n_inherit=cfg.spec_train),
                                         dirs=dirs, selection=p.selection))
        metrics = baseline_metrics(res, answer, test=p.test, val=p.val, s=cfg, verifier=job.verifier,
                                   selection=p.selection)
    return res, metrics
