"""The society's task pools, by name: test, val (and its screening part), conformity, inheritance,
and the founders' training tasks.

- **test** (``n_test`` per family): reporting only; never seen by the loop.
- **val** (``n_val`` per family): the grounded selection signal; the first ``n_screen`` of each
  family's val tasks (**screen**) also screen the candidate merges.
- **conformity** (``n_conf`` per generation, split over families): fresh each generation; consensus,
  conformity and behavioural distance are measured on it.
- **inheritance** (``n_inherit`` per generation): the prompts whose answers a child is distilled
  from; none of its prompts is in that generation's conformity pool.
- **founders' training** (``spec_train`` per founder): the specialist's family.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..methods.tasks import Task, make_pool, make_tasks
from .settings import Settings

TEST_SEED, VAL_SEED = 1000, 3000  # the seed's fixed pools
FOUNDER_SEED = 50_000              # founders' training draws: make_tasks(family, n, 50_000 + seed)


def _pool_seed(seed: int, t: int, i: int, tag: int) -> int:
    return int(np.random.SeedSequence([seed, t, i, tag]).generate_state(1)[0] % (2**31 - 1))


def conformity_pool(s: Settings, seed: int, t: int) -> list[Task]:
    """Conformity pool of generation ``t`` (fresh each generation, ``n_conf`` split over families)."""
    return sum([make_tasks(f, s.n_conf // len(s.families), seed=_pool_seed(seed, t, i, 1), hard=s.hard)
                for i, f in enumerate(s.families)], [])


def inheritance_pool(s: Settings, seed: int, t: int) -> list[Task]:
    """Inheritance pool of generation ``t``: ``n_inherit`` tasks split over families, none of whose
    prompts is in that generation's conformity pool.

    Deviation from the seed (seeds ``seed*7919 + t*13 + i`` and ``seed*104729 + t*17 + i``, equal
    for seed 0 at t = 0, so the two pools started with the same tasks): independent streams, and
    prompts of the conformity pool are skipped (the easy task space is small enough for chance
    repeats). Repeats within a pool are kept, as in the seed.
    """
    k = s.n_inherit // len(s.families)
    taken = {x.prompt for x in conformity_pool(s, seed, t)}
    out = []
    for i, f in enumerate(s.families):
        m = k
        while True:  # draw more until k tasks outside the conformity pool are found (a prefix grows)
            cand = [x for x in make_tasks(f, m, seed=_pool_seed(seed, t, i, 2), hard=s.hard)
                    if x.prompt not in taken]
            if len(cand) >= k or m > 50 * k:
                break
            m *= 2
        out += cand[:k]
    return out


def founder_tasks(s: Settings, family: str, seed: int) -> list[Task]:
    """Training data of a founder specialist of ``family`` (``spec_train`` tasks)."""
    return make_tasks(family, s.spec_train, seed=FOUNDER_SEED + seed, hard=s.hard)


@dataclass(frozen=True)
class GenerationPools:
    """The pools generation ``t`` of one seed uses, by name."""

    test: list[Task]
    val: list[Task]
    screen_in_val: list[int]   # indices into ``val`` of the screening tasks
    conformity: list[Task]
    inheritance: list[Task]

    @property
    def screen(self) -> list[Task]:
        return [self.val[k] for k in self.screen_in_val]


@dataclass(frozen=True)
class Pools:
    """The pools of one seed: the fixed ones, and :meth:`at` for a generation's."""

    settings: Settings
    seed: int
    test: list[Task]
    val: list[Task]
    screen_in_val: list[int]

    def at(self, t: int) -> GenerationPools:
        return GenerationPools(test=self.test, val=self.val, screen_in_val=self.screen_in_val,
                               conformity=conformity_pool(self.settings, self.seed, t),
                               inheritance=inheritance_pool(self.settings, self.seed, t))

    def founder_training(self, family: str, founder_seed: int) -> list[Task]:
        return founder_tasks(self.settings, family, founder_seed)


def pools_for(s: Settings, seed: int) -> Pools:
    """The fixed pools of ``seed``: test, val and the screening part of val."""
    val = make_pool(s.families, s.n_val, VAL_SEED, hard=s.hard)
    return Pools(settings=s, seed=seed, test=make_pool(s.families, s.n_test, TEST_SEED, hard=s.hard), val=val,
                 screen_in_val=[k for k in range(len(val)) if k % s.n_val < s.n_screen])
