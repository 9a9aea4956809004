"""Every task the society touches, by pool — drawn from disjoint parts of each family's task space.

Each family's task space is partitioned deterministically by a hash of the task's prompt
(:func:`part_of`) into five disjoint **parts**, and every pool draws only from its part:

=============  ======  ===========================================================================
part           share   pools
=============  ======  ===========================================================================
``pretrain``   50 %    the tiny base's pre-training (its familiar region only, :func:`lib.core.tasks.region`)
``founders``   20 %    each founder specialist's training tasks (``spec_train``), the multitask baseline's
``children``   15 %    each generation's conformity pool and inheritance pool (disjoint within a generation)
``val``        7.5 %   val (the grounded selection signal); screening = its first ``n_screen`` per family;
                       the selection pool (choosing the best arm and the best one-shot merge), disjoint from val
``test``       7.5 %   test (reporting only)
=============  ======  ===========================================================================

Tasks are drawn and partitioned as plain tasks, then written in the config's ``task_form`` (:func:`written`;
``spaced``: strings with their letters separated by spaces, the paper scale's), a one-to-one rewriting, so
the pools stay disjoint. So no evaluation item was ever trained on — by the base, a founder or a child — and a test
(``tests/test_pools.py``) proves it for every seed of every committed config. Test and val are drawn
*per seed* (distinct tasks within a pool), so intervals over seeds include item sampling.
``python -m lib.society.pools CONFIG --seed S`` prints every pool's prompts as JSON.

- **test** (``n_test`` per family): reporting only; never seen by the loop.
- **val** (``n_val`` per family): the grounded selection signal; the first ``n_screen`` of each
  family's val tasks (**screen**) also screen the candidate merges.
- **selection** (``n_select`` per family, none when 0): from the val part, no prompt of val;
  nothing is tuned on it: the last generation's agents and each baseline are scored on it once, and
  the pre-registered comparison chooses the best society arm and the best one-shot merge by it.
- **conformity** (``n_conf`` per generation, split over families): consensus, conformity and
  behavioural distance are measured on it.
- **inheritance** (``n_inherit`` per generation): the prompts whose answers a child is distilled
  from; none of its prompts is in that generation's conformity pool.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import sys
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from lib.core.errors import cli_main
from lib.core.tasks import FAMILIES, Task, in_form, iter_tasks, region
from lib.engines.models import TINY_STEPS
from lib.operators.ops import founder_family
from lib.society.arms import CLIMB_ARMS, is_baseline
from lib.society.config import SocietyConfig, load_file, validate_config

PARTS = {"pretrain": (0.0, 0.50), "founders": (0.50, 0.70), "children": (0.70, 0.85),
         "val": (0.85, 0.925), "test": (0.925, 1.0)}
FOUNDER_SEED = 50_000  # founders' training draws: make_tasks(family, ·, 50_000 + founder seed)
PRETRAIN_SEED = 10_000_000
TAGS = {"conformity": 1, "inheritance": 2, "val": 3, "test": 4, "selection": 5}


@lru_cache(maxsize=1 << 20)
def _unit(prompt: str) -> float:
    """A prompt's hash as a number in [0, 1): BLAKE2b-64 of the prompt text (machine-independent)."""
    return int.from_bytes(hashlib.blake2b(prompt.encode(), digest_size=8).digest(), "big") / 2.0**64


def part_of(task: Task) -> str:
    """The part of its family's task space ``task`` belongs to (by the hash of its prompt)."""
    u = _unit(task.prompt)
    return next(p for p, (lo, hi) in PARTS.items() if lo <= u < hi)


def draw(family: str, part: str, n: int, seed: int, *, hard: bool = False, distinct: bool = False,
         familiar_only: bool = False, exclude: frozenset[str] = frozenset()) -> list[Task]:
    """The first ``n`` tasks of ``make_tasks(family, ·, seed)`` that lie in ``part`` (and, with
    ``familiar_only``, in the familiar region; never a prompt in ``exclude``); ``distinct``: no
    prompt twice. Prefix-stable: the first ``k`` of ``n`` equal a draw of ``k``."""
    return _first_in_part(iter_tasks(family, seed, hard), family, part, n, distinct=distinct,
                          familiar_only=familiar_only, exclude=exclude)


def draw_rung(family: str, part: str, n: int, seed: int, rung: int, *, distinct: bool = False,
              exclude: frozenset[str] = frozenset()) -> list[Task]:
    """:func:`draw` from the stream of rung ``rung`` of the ladder (:func:`lib.core.tasks.rung_tasks`)."""
    return _first_in_part(iter_tasks(family, seed, rung=rung), family, part, n, distinct=distinct, exclude=exclude)


def _first_in_part(stream, family: str, part: str, n: int, *, distinct: bool, familiar_only: bool = False,
                   exclude: frozenset[str] = frozenset()) -> list[Task]:
    if part not in PARTS:
        raise ValueError(f"unknown part {part!r}; parts are {list(PARTS)}")
    out, seen, since = [], set(), 0
    if n <= 0:
        return out
    for k, t in enumerate(stream):
        # a part with no new task in this many draws holds fewer than n that fit
        if k >= 1000 * n or since > max(20_000, 50 * n):
            raise ValueError(f"the {part} part of {family} has fewer than {n} tasks that fit "
                             f"(found {len(out)}): enlarge the family, or ask for fewer")
        since += 1
        if part_of(t) != part or t.prompt in exclude or (familiar_only and region(t) != "familiar"):
            continue
        if distinct:
            if t.prompt in seen:
                continue
            seen.add(t.prompt)
        out.append(t)
        since = 0
        if len(out) == n:
            return out


def _pool_seed(seed: int, t: int, i: int, tag: int) -> int:
    return int(np.random.SeedSequence([seed, t, i, tag]).generate_state(1)[0] % (2**31 - 1))


def pretrain_tasks(step: int, batch: int = 64) -> list[Task]:
    """The tasks of the tiny base's pre-training step ``step``: an even mixture of the easy families
    from their ``pretrain`` part, familiar region only (fixed seeds)."""
    k = len(FAMILIES)
    sizes = [batch // k + (1 if i < batch % k else 0) for i in range(k)]
    return sum((draw(f, "pretrain", n, PRETRAIN_SEED + step * k + i, familiar_only=True)
                for i, (f, n) in enumerate(zip(FAMILIES, sizes))), [])


def written(s: SocietyConfig, tasks: list[Task]) -> list[Task]:
    """``tasks`` in the config's ``task_form`` (:func:`lib.core.tasks.in_form`; ``plain``: as drawn). Every pool
    of the loop is drawn, partitioned and kept disjoint as plain tasks, then written in the form."""
    return tasks if s.task_form == "plain" else [in_form(x, s.task_form) for x in tasks]


def unwritten(task: Task) -> Task:
    """The plain task a written one stands for (a ``spaced`` strings task without its spaces)."""
    if task.family != "strings":
        return task
    word = task.prompt.removeprefix("rev ").removesuffix(" =").replace(" ", "")
    return Task(task.family, f"rev {word} =", task.answer.replace(" ", ""))


def conformity_pool(s: SocietyConfig, seed: int, t: int) -> list[Task]:
    """Conformity pool of generation ``t`` (fresh each generation, ``n_conf`` split over families)."""
    return written(s, sum((draw(f, "children", s.n_conf // len(s.families), _pool_seed(seed, t, i, TAGS["conformity"]),
                     hard=s.hard) for i, f in enumerate(s.families)), []))


def inheritance_pool(s: SocietyConfig, seed: int, t: int, *, n_inherit: int | None = None) -> list[Task]:
    """Inheritance pool of generation ``t``: ``n_inherit`` tasks (default: the config's; an arm's budget
    may ask for more, :attr:`lib.society.config.Arm.n_inherit`) split over families, from the
    children's part, none of whose prompts is in that generation's conformity pool.

    Deviation from the seed (seeds ``seed*7919 + t*13 + i`` and ``seed*104729 + t*17 + i``, equal
    for seed 0 at t = 0, so the two pools started with the same tasks): independent streams, and
    the conformity pool's prompts are skipped. Repeats within a pool are kept, as in the seed.
    """
    taken = frozenset(unwritten(x).prompt for x in conformity_pool(s, seed, t))
    n = s.n_inherit if n_inherit is None else n_inherit
    return written(s, sum((draw(f, "children", n // len(s.families), _pool_seed(seed, t, i, TAGS["inheritance"]),
                                hard=s.hard, exclude=taken) for i, f in enumerate(s.families)), []))


def founder_seed(seed: int, agent: int) -> int:
    """The training seed (tasks, LoRA init, data order) of founder ``agent`` of ``seed``."""
    return seed * 100 + agent


def founder_tasks(s: SocietyConfig, family: str, founder_seed: int) -> list[Task]:
    """Training data of a founder specialist of ``family``: ``spec_train`` tasks of its founders' part."""
    return written(s, draw(family, "founders", s.spec_train, FOUNDER_SEED + founder_seed, hard=s.hard))


def evaluation_pool(s: SocietyConfig, seed: int, which: str) -> list[Task]:
    """``test`` or ``val`` of ``seed``: ``n_test`` / ``n_val`` distinct tasks per family from its part."""
    n = s.n_test if which == "test" else s.n_val
    return written(s, sum((draw(f, which, n, _pool_seed(seed, 0, i, TAGS[which]), hard=s.hard, distinct=True)
                           for i, f in enumerate(s.families)), []))


def selection_pool(s: SocietyConfig, seed: int, val: list[Task]) -> list[Task]:
    """The selection pool of ``seed``: ``n_select`` distinct tasks per family from the val part, none
    of whose prompts is in ``val`` (a stream of its own, so adding it changes no other pool)."""
    taken = frozenset(unwritten(x).prompt for x in val)
    return written(s, sum((draw(f, "val", s.n_select, _pool_seed(seed, 0, i, TAGS["selection"]), hard=s.hard,
                                distinct=True, exclude=taken) for i, f in enumerate(s.families)), []))


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
    """The pools of one seed: the fixed ones, and :meth:`at` for a generation's (its inheritance pool
    ``n_inherit`` tasks: the arm's budget)."""

    cfg: SocietyConfig
    seed: int
    n_inherit: int
    test: list[Task]
    val: list[Task]
    screen_in_val: list[int]
    selection: list[Task]

    @property
    def screen(self) -> list[Task]:
        return [self.val[k] for k in self.screen_in_val]

    def at(self, t: int) -> GenerationPools:
        return GenerationPools(test=self.test, val=self.val, screen_in_val=self.screen_in_val,
                               conformity=conformity_pool(self.cfg, self.seed, t),
                               inheritance=inheritance_pool(self.cfg, self.seed, t, n_inherit=self.n_inherit))


def pools_for(s: SocietyConfig, seed: int, *, n_inherit: int | None = None) -> Pools:
    """The pools of ``seed`` under config ``cfg``: test, val, the screening part of val and the selection
    pool; each generation's inheritance pool holds ``n_inherit`` tasks (default: the config's; a run
    passes its arm's, :attr:`lib.society.config.Arm.n_inherit`)."""
    val = evaluation_pool(s, seed, "val")
    return Pools(cfg=s, seed=seed, n_inherit=s.n_inherit if n_inherit is None else n_inherit,
                 test=evaluation_pool(s, seed, "test"), val=val,
                 screen_in_val=[k for k in range(len(val)) if k % s.n_val < s.resolved_n_screen],
                 selection=selection_pool(s, seed, val) if s.n_select else [])


# ----------------------------------------------------------------------------- audit


def audit(cfg, seed: int, *, pretraining: bool = True) -> dict[str, list[str]]:
    """Every pool of one seed as ``{pool name: [prompts]}``, the same lists the loop uses:
    ``pretraining`` (the tiny base's, when ``base_model`` is tiny), ``founder<i>_<family>``,
    ``conformity_t<t>`` and ``inheritance_t<t>`` for every generation, ``val``, ``screening``, ``test``."""
    s = validate_config(cfg)
    p = pools_for(s, seed)
    out: dict[str, list[str]] = {}
    if pretraining and s.base_model == "tiny":
        out["pretraining"] = [x.prompt for step in range(TINY_STEPS) for x in pretrain_tasks(step)]
    for i in range(s.agents):
        fam = founder_family(s.families, i)
        out[f"founder{i}_{fam}"] = [x.prompt for x in founder_tasks(s, fam, founder_seed(seed, i))]
    for t in range(s.generations):
        g = p.at(t)
        out[f"conformity_t{t}"] = [x.prompt for x in g.conformity]
        if t < s.generations - 1:
            out[f"inheritance_t{t}"] = [x.prompt for x in g.inheritance]
    for n in sorted(inheritance_sizes(s) - {s.n_inherit}):  # the arms whose children learn from more answers
        q = pools_for(s, seed, n_inherit=n)
        for t in range(s.generations - 1):
            out[f"inheritance{n}_t{t}"] = [x.prompt for x in q.at(t).inheritance]
    out["val"] = [x.prompt for x in p.val]
    out["screening"] = [x.prompt for x in p.screen]
    if p.selection:
        out["selection"] = [x.prompt for x in p.selection]
    out["test"] = [x.prompt for x in p.test]
    return out


def inheritance_sizes(cfg: SocietyConfig) -> set[int]:
    """The inheritance-pool sizes the arms of ``cfg`` use (a budget modifier changes it; a climb arm breeds no
    children from the inheritance pool: its generalists read ``n_inherit`` of generation 0)."""
    return {cfg.n_inherit} | {cfg.resolve_arm(a).n_inherit for a in cfg.arms
                              if not is_baseline(a) and a not in CLIMB_ARMS}


def pool_part(name: str) -> str:
    """The part a pool of :func:`audit` draws from."""
    if name == "pretraining":
        return "pretrain"
    if name.startswith("founder"):
        return "founders"
    if name.startswith(("conformity", "inheritance")):
        return "children"
    return "val" if name in ("val", "screening", "selection") else "test"


def audit_command(argv, *, prog: str, what: str, load, audit, check=None) -> int:
    """The audit command of a config kind: print every pool's prompts of one seed as JSON (``{pool name:
    [prompts]}``), read by ``load(path)`` and ``audit(cfg, seed, pretraining=...)``; with ``--check`` (where the
    kind has ``check(pools, seed) -> (message, ok)``) print the check's message instead, exit status 1 if not ok."""
    ap = argparse.ArgumentParser(prog=prog, description=f"Print every pool's prompts of one seed of {what} as JSON "
                                 "({pool name: [prompts]})" + (", or with --check the overlaps between training "
                                                               "and evaluation pools." if check else "."))
    ap.add_argument("config", help=f"the config file ({what})")
    ap.add_argument("--seed", type=int, default=None, help="the seed (default: the config's first)")
    ap.add_argument("--no-pretraining", action="store_true", help="leave out the base's 64,000 pre-training prompts")
    if check:
        ap.add_argument("--check", action="store_true", help="print the overlaps instead (exit 1 if any)")
    args = ap.parse_args(argv)
    cfg = load(args.config)
    seed = cfg.seed_list()[0] if args.seed is None else args.seed
    pools = audit(cfg, seed, pretraining=not args.no_pretraining)
    if check and args.check:
        message, ok = check(pools, seed)
        print(message)
        return 0 if ok else 1
    json.dump(pools, sys.stdout, indent=1)
    sys.stdout.write("\n")
    return 0


def _main(argv=None) -> int:
    return audit_command(argv, prog="python -m lib.society.pools",
                         what="a society config (configs/society*/<scale>.yaml)", load=load_file, audit=audit)


def main(argv=None) -> int:
    return cli_main(_main, argv)


if __name__ == "__main__":
    sys.exit(main())
