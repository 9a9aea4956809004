"""The field's answers to "combine these specialists", on the society's own founders, val and test.

Each baseline takes the founders of a seed (the same LoRA specialists the society starts from) and
returns one adapter; its hyperparameters are chosen on val, never on test:

- ``baseline_soup`` — model soup: the exact uniform merge ``(1/N) Σ ΔWᵢ`` (no choice, 0 val evaluations);
- ``baseline_task_arithmetic`` — ``λ Σ ΔWᵢ``, λ chosen on val from :data:`TA_LAMBDAS` (config
  ``grids: wide``: :data:`WIDE_TA_LAMBDAS`);
- ``baseline_ties`` — TIES-merging of the updates ``ΔWᵢ`` (trim to the top ``density`` magnitudes,
  elect the sign, disjoint mean, times λ), density and λ chosen on val (:data:`TIES_GRID`, or
  :data:`WIDE_TIES_GRID`);
- ``baseline_dare_ties`` — DARE (random drop with rescaling, seeded) then TIES, likewise;
- ``baseline_lorahub`` — LoraHub: a gradient-free search (CMA-ES, the ``cma`` package, seeded) over
  the founders' combination weights ``w`` of ``Σ wᵢ ΔWᵢ``, minimising ``(1 − val accuracy) +
  0.05 · mean |w|`` (LoraHub's L1 term), with **as many val evaluations as the society's grounded
  run spends** on selection and screening (:func:`society_val_evals`);
- ``baseline_multitask`` — one fresh LoRA trained on the union of the founders' training tasks for
  ``spec_epochs`` epochs: the founders' own data and (up to batch rounding) their total number of
  training steps; ``baseline_multitask@steps`` the same at one child's budget (``spec_train`` of those
  tasks, an even share of each founder's, ``spec_epochs``);
- ``baseline_distill_all`` — one fresh LoRA trained, at a founder's budget, on the union of every founder's
  and the bare base's verified answers (:func:`lib.society.crossover.verified_union`) over the
  inheritance prompts (generation 0's pool of ``spec_train`` prompts): the one-shot twin of
  ``crossover_archive``; ``baseline_distill_all@iterated`` repeats it once per breeding generation ``t`` on
  generation ``t``'s prompts, the last round's model joining the founders and the base as a teacher (STaR);
- ``baseline_distill_all@lineage`` — one fresh LoRA on the union of every founder's and the base's verified
  answers to *every* generation's inheritance prompts (all the prompts a society's children see over the run),
  trained for ``lineage_steps`` optimizer steps: a ``continue`` lineage's, founder to last generation
  (:func:`lineage_data`); ``baseline_continue_all`` — the founder best on the selection pool, its LoRA trained
  further on the same data for the same steps (sequential fine-tuning: one model, continued);
- the one-shot frontier ``baseline_distill_all@k<k>`` and ``baseline_multitask@k<k>`` — distill-all's data
  (generation 0's union) and the founders' gold tasks, each trained for ``round(k · F)`` optimizer steps, ``F``
  one founder's (:func:`frontier_steps`); the modifier leaves the seed's random stream alone, so the points of
  one line share their initialisation and data order (each is a prefix of the longest).

TIES and DARE act on the updates ``ΔWᵢ = sᵢ BᵢAᵢ`` themselves (peft's ``ties_svd`` / ``dare_ties_svd``
with the full rank of each module, so the SVD back to a LoRA loses nothing), not on the A and B
factors separately (peft's ``ties``, an approximation). Rows: one agent (``agent`` 0) at the last
generation, with the society's test and val metrics, the chosen hyperparameters
(``baseline_lambda``, ``baseline_density``), every grid setting's val accuracy (``val_grid_lambda0.05``,
``val_grid_density0.2_lambda0.05``: :func:`grid_key`) and the cost (``cost_train_steps``, ``cost_val_evals``).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np

from lib.operators.ops import fitness_of
from lib.core.tasks import Task
from lib.society.generation import prompts, test_accuracy
from lib.engines.generate import BASE_ROW
from lib.engines.merge import full_rank, merge_adapters
from lib.society.arms import BASELINE_PREFIX, BASELINES, DISTILL_ALL, frontier_k, is_baseline  # noqa: F401  (is_baseline: re-exported)
from lib.society.config import SocietyConfig
from lib.society.crossover import verified_union

TA_LAMBDAS = (0.1, 0.2, 0.3, 0.5, 0.7, 1.0)
TIES_GRID = tuple((d, lam) for d in (0.2, 0.5, 0.8) for lam in (0.5, 1.0, 1.5))
# ``grids: wide`` (the society study): the grids above ended where the committed 16-seed run chose
# (task arithmetic λ = 0.1, its smallest, in 16 of 16 seeds; TIES density 0.8, its largest, in 15 of 16
# and λ 0.5, its smallest, in 12; DARE-TIES λ 0.5 in 15), so they extend to the natural bounds:
# density 1 (nothing trimmed) and λ towards 0 (λ = 0 is the bare base, reported already).
WIDE_TA_LAMBDAS = (0.02, 0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 1.0)
WIDE_TIES_GRID = tuple((d, lam) for d in (0.2, 0.5, 0.8, 1.0) for lam in (0.02, 0.05, 0.1, 0.25, 0.5, 1.0, 1.5))
# (λ 0.02 and 0.05 added after the study's first two seeds chose λ = 0.1, the grid's lowest, for TIES
# and DARE-TIES: a grid-coverage precondition, not an outcome; those shards were recomputed.)
GRIDS = {"seed": (TA_LAMBDAS, TIES_GRID), "wide": (WIDE_TA_LAMBDAS, WIDE_TIES_GRID)}
LORAHUB_L1 = 0.05
LORAHUB_BOUND = 1.5  # weights searched in [-1.5, 1.5], as LoraHub


def grid_of(grids: str) -> dict:
    """``{baseline: {key: grid values}}`` of the hyperparameters chosen on val (``grids``: a config's)."""
    ta, ties = GRIDS[grids]
    both = {"density": sorted({d for d, _ in ties}), "lambda": sorted({lam for _, lam in ties})}
    return {BASELINE_PREFIX + m: g for m, g in (("task_arithmetic", {"lambda": list(ta)}), ("ties", both),
                                                 ("dare_ties", both))}


def society_val_evals(s: SocietyConfig) -> int:
    """Model evaluations on val a grounded society run with sex spends: every agent at every
    generation (selection) and every candidate merge at every breeding generation (screening)."""
    return s.generations * s.agents + (s.generations - 1) * (s.agents - s.elitism) * s.n_candidates


@dataclass(frozen=True)
class Result:
    """A baseline's adapter (attached under ``name``) and what choosing it cost."""

    name: str
    val_evals: int
    train_steps: int
    chosen: dict
    grid_val: dict = field(default_factory=dict)  # {grid key (:func:`grid_key`): val accuracy} of every setting tried


def grid_key(setting: dict) -> str:
    """The row key of one grid setting's val accuracy: ``val_grid_density0.2_lambda0.05``."""
    return "val_grid_" + "_".join(f"{k}{v:g}" for k, v in setting.items())


def parse_grid_key(metric: str) -> dict | None:
    """The setting of a :func:`grid_key` row (``{"density": 0.2, "lambda": 0.05}``); None for another metric."""
    if not metric.startswith("val_grid_"):
        return None
    parts = (re.fullmatch(r"([A-Za-z]+)(.+)", part) for part in metric.removeprefix("val_grid_").split("_"))
    return {m[1]: float(m[2]) for m in parts}


def choose_on_val(candidates: Sequence[dict], make: Callable[[dict], str],
                  val_score: Callable[[str], float]) -> tuple[dict, str, dict]:
    """Build and score every candidate setting on val; the best wins (ties → the first in grid order).
    Returns ``(setting, adapter name, {grid key: val accuracy})``: the whole grid's scores, so a reader
    can tell a choice at a grid's end that is the optimum from one that is a tie broken by order."""
    best, best_v, scores = None, -np.inf, {}
    for c in candidates:
        name = make(c)
        v = val_score(name)
        scores[grid_key(c)] = float(v)
        if v > best_v:
            best, best_v = c, v
    return best, make(best), scores


def lorahub_weights(n: int, budget: int, objective: Callable[[np.ndarray], float], seed: int) -> tuple[np.ndarray, int]:
    """CMA-ES over ``n`` combination weights from the uniform start ``1/n`` (σ₀ = 0.5, bounds
    ±:data:`LORAHUB_BOUND`), at most ``budget`` objective evaluations; returns the best weights seen
    and the evaluations used."""
    import cma
    es = cma.CMAEvolutionStrategy(np.full(n, 1.0 / n), 0.5,
                                  {"seed": int(seed) + 1, "bounds": [-LORAHUB_BOUND, LORAHUB_BOUND],
                                   "maxfevals": budget, "verbose": -9})
    best_w, best_f, used = np.full(n, 1.0 / n), np.inf, 0
    while not es.stop() and used < budget:
        xs = es.ask()[:budget - used]
        fs = [objective(np.asarray(x)) for x in xs]
        used += len(xs)
        for x, f in zip(xs, fs):
            if f < best_f:
                best_w, best_f = np.asarray(x, float), f
        if len(xs) == es.popsize:
            es.tell(xs, fs)
    return best_w, used


@dataclass(frozen=True)
class Founders:
    """What a baseline is built from: the attached ``founders`` (adapter names) on ``base``, the run's settings,
    its ``val`` pool and seed, the union of the founders' training tasks, the verifier, ``answer(adapter,
    prompts)`` (generates with one adapter; :data:`BASE_ROW`: the bare base), ``train(tasks, round, steps=None,
    init=None) -> (name, steps)`` (trains, seeded by the round, and attaches a LoRA: fresh or from the adapter
    folder ``init``, at a founder's epochs or for exactly ``steps`` optimizer steps), ``inherit(t)``
    (generation ``t``'s inheritance prompts at a founder's budget), the founders' adapter folders ``dirs`` (in
    ``names``' order) and the ``selection`` pool."""

    base: object
    names: Sequence[str]
    s: SocietyConfig
    val: Sequence[Task]
    seed: int
    tasks: Sequence[Task]
    verifier: Callable
    answer: Callable[[str, Sequence[str]], list[str]]
    train: Callable[[Sequence[Task], int], tuple[str, int]]
    inherit: Callable[[int], list[Task]] = lambda t: []
    dirs: Sequence = ()
    selection: Sequence[Task] = ()

    def val_acc(self, name: str) -> float:
        return fitness_of(self.answer(name, prompts(self.val)), self.val, self.s.families, self.verifier)["overall"]

    def merge(self, weights, name: str, how: str = "exact", **kw) -> str:
        return merge_adapters(self.base, self.names, list(weights), name, how, **kw)


def _soup(f: Founders) -> Result:
    n = len(f.names)
    return Result(f.merge([1.0 / n] * n, "soup"), 0, 0, {})


def _task_arithmetic(f: Founders) -> Result:
    n = len(f.names)
    grid = [{"lambda": lam} for lam in GRIDS[f.s.grids][0]]
    c, name, scores = choose_on_val(grid, lambda c: f.merge([c["lambda"]] * n, "ta"), f.val_acc)
    return Result(name, len(scores), 0, c, scores)


def _ties_like(how: str) -> Callable[[Founders], Result]:
    def build(f: Founders) -> Result:
        n, rank = len(f.names), full_rank(f.base, f.names)
        grid = [{"density": d, "lambda": lam} for d, lam in GRIDS[f.s.grids][1]]
        c, name, scores = choose_on_val(grid, lambda c: f.merge([c["lambda"]] * n, how, how, density=c["density"],
                                                                svd_rank=rank, seed=f.seed), f.val_acc)
        return Result(name, len(scores), 0, c, scores)
    return build


def _lorahub(f: Founders) -> Result:
    def objective(w: np.ndarray) -> float:
        return 1.0 - f.val_acc(f.merge(w.tolist(), "hub")) + LORAHUB_L1 * float(np.mean(np.abs(w)))
    w, used = lorahub_weights(len(f.names), society_val_evals(f.s), objective, f.seed)
    return Result(f.merge(w.tolist(), "hub"), used, 0, {f"w{i}": float(x) for i, x in enumerate(w)})


def _multitask(f: Founders) -> Result:
    name, steps = f.train(list(f.tasks), 0)
    return Result(name, 0, steps, {})


def _multitask_steps(f: Founders) -> Result:
    """Multitask at one child's budget: the first ``spec_train // N`` tasks of each of the ``N`` founders' data
    (each a seeded draw already), ``spec_epochs``."""
    n, per = len(f.names), f.s.spec_train // len(f.names)
    tasks = [x for i in range(n) for x in f.tasks[i * f.s.spec_train:i * f.s.spec_train + per]]
    name, steps = f.train(tasks, 0)
    return Result(name, 0, steps, {"train_n": len(tasks)})


def _distill_all(f: Founders) -> Result:
    pool = f.inherit(0)
    data = verified_union(pool, [f.answer(n, prompts(pool)) for n in [*f.names, BASE_ROW]], f.verifier)
    name, steps = f.train(data, 0)
    return Result(name, 0, steps, {"inherit_n": len(data)})


def _distill_all_iterated(f: Founders) -> Result:
    """Round ``t`` (one per breeding generation) trains on the verified union of the founders', the base's and
    the last round's model's answers to generation ``t``'s prompts."""
    name, steps, chosen = None, 0, {}
    for t in range(f.s.generations - 1):
        pool = f.inherit(t)
        teachers = [*f.names, BASE_ROW] + ([name] if name else [])
        data = verified_union(pool, [f.answer(n, prompts(pool)) for n in teachers], f.verifier)
        name, k = f.train(data, t)
        steps, chosen[f"inherit_n_r{t}"] = steps + k, len(data)
    return Result(name, 0, steps, chosen)


def frontier_steps(s: SocietyConfig, k: float) -> int:
    """Optimizer steps of a frontier point: ``round(k · F)``, ``F`` = one founder's steps (``spec_train`` tasks x
    ``spec_epochs`` in batches of ``batch_size``); at least 1."""
    per = s.spec_epochs * -(-s.spec_train // s.batch_size)
    return max(1, round(k * per))


def lineage_data(f: Founders) -> list[Task]:
    """The verified union of every founder's and the bare base's answers to every breeding generation's
    inheritance prompts (``t = 0 … G − 2``), each (prompt, answer) once."""
    pool = [x for t in range(f.s.generations - 1) for x in f.inherit(t)]
    return verified_union(pool, [f.answer(n, prompts(pool)) for n in [*f.names, BASE_ROW]], f.verifier)


def _distill_all_lineage(f: Founders) -> Result:
    data = lineage_data(f)
    name, steps = f.train(data, 0, steps=f.s.lineage_steps)
    return Result(name, 0, steps, {"inherit_n": len(data)})


def _continue_all(f: Founders) -> Result:
    """The founder with the best selection-pool accuracy (ties: the first), trained further on
    :func:`lineage_data` for ``lineage_steps`` steps; its choice costs one evaluation per founder."""
    if not f.selection:
        raise ValueError("baseline_continue_all chooses its founder on the selection pool: set n_select > 0")
    acc = [fitness_of(f.answer(n, prompts(f.selection)), f.selection, f.s.families, f.verifier)["overall"]
           for n in f.names]
    best = int(np.argmax(acc))
    data = lineage_data(f)
    name, steps = f.train(data, 0, steps=f.s.lineage_steps, init=f.dirs[best])
    return Result(name, len(f.names), steps, {"founder": best, "inherit_n": len(data)})


def _frontier(arm: str, f: Founders) -> Result:
    """A frontier point: distill-all's data or the founders' gold tasks for :func:`frontier_steps` steps."""
    k = frontier_k(arm)
    if arm.split("@", 1)[0] == DISTILL_ALL:
        pool = f.inherit(0)
        data = verified_union(pool, [f.answer(n, prompts(pool)) for n in [*f.names, BASE_ROW]], f.verifier)
    else:
        data = list(f.tasks)
    name, steps = f.train(data, 0, steps=frontier_steps(f.s, k))
    return Result(name, 0, steps, {"k": k, "train_n": len(data)})


# each baseline's method (its arm is baseline_<method>, lib.society.arms)
BUILDERS: dict[str, Callable[[Founders], Result]] = {
    "soup": _soup, "task_arithmetic": _task_arithmetic, "ties": _ties_like("ties"), "dare_ties": _ties_like("dare_ties"),
    "lorahub": _lorahub, "multitask": _multitask, "multitask@steps": _multitask_steps, "distill_all": _distill_all,
    "distill_all@iterated": _distill_all_iterated, "distill_all@lineage": _distill_all_lineage,
    "continue_all": _continue_all}
if {BASELINE_PREFIX + m for m in BUILDERS} != set(BASELINES):
    raise RuntimeError("lib.society.baselines: every baseline of lib.society.arms needs exactly one builder")


def run_baseline(arm: str, founders: Founders) -> Result:
    """Build baseline ``arm`` (a frontier point ``<baseline>@k<k>`` too) from ``founders``; its hyperparameters are
    chosen on their val pool."""
    if frontier_k(arm) is not None:
        return _frontier(arm, founders)
    build = BUILDERS.get(arm.removeprefix(BASELINE_PREFIX)) if is_baseline(arm) else None
    if build is None:
        raise ValueError(f"unknown baseline {arm!r}; choose from {list(BASELINES)}")
    return build(founders)


def baseline_metrics(result: Result, base_answer: Callable[[str, Sequence[str]], list[str]], *, test: Sequence[Task],
                     val: Sequence[Task], s: SocietyConfig, verifier, selection: Sequence[Task] = ()) -> dict:
    """The baseline's test metrics (as the society's agents'), val accuracy, choice and cost, and its
    accuracy on the ``selection`` pool where there is one (``select_overall``)."""
    out = {f"test_{k}": v for k, v in test_accuracy(base_answer(result.name, prompts(test)), test,
                                                     families=s.families, verifier=verifier).items()}
    out["val_overall"] = fitness_of(base_answer(result.name, prompts(val)), val, s.families, verifier)["overall"]
    if selection:
        out["select_overall"] = fitness_of(base_answer(result.name, prompts(selection)), selection, s.families,
                                           verifier)["overall"]
    out.update({f"baseline_{k}": v for k, v in result.chosen.items()})
    out.update(result.grid_val)
    return out
