"""Every task the climb touches, by pool: the society's pools (:mod:`lib.society.pools`) and the rungs' own,
drawn from the same disjoint parts of each family's task space (by the hash of the prompt).

===================  ========  =================================================================================
pool                 part      what it is
===================  ========  =================================================================================
``hints``            founders  ``n_hints`` gold tasks of the climbed rung per family, in every generalist's data
``climb_r<r>``       children  ``n_climb`` fresh prompts of the climbed rung per family for round ``r`` (no answer
                               is shown: the learners answer them); disjoint across rounds
``rung_val``         val       ``n_rung_val`` per family of the climbed rung: grounded selection reads them
``rung_select``      val       ``n_rung_select`` per family of the climbed rung, none in ``rung_val``: the reported
                               agent and climb_single's learner are chosen on them
``rung<r>_test``     test      ``n_rung_test`` per family of every rung: reporting only
===================  ========  =================================================================================

The generalists' data is distill-all's (every founder's and the bare base's verified answers to generation 0's
inheritance prompts, at a founder's budget: :func:`lib.society.baselines.lineage_data`'s sibling) plus the hints.
A rung's tasks have another shape than the easy level's (longer lists and words, a larger first operand), so no
rung task is ever an easy task; within a rung, the parts keep training and evaluation apart, and
``tests/test_climb.py`` proves it on the audit of every seed of the committed configs.
``python -m lib.society.climb.ladder CONFIG --seed S`` prints every pool's prompts as JSON.
"""
from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from functools import lru_cache

from lib.core.errors import cli_main
from lib.core.tasks import RUNGS, Task
from lib.society.climb.config import ClimbConfig, load_file, validate_config
from lib.society.pools import (_pool_seed, audit as society_audit, audit_command, draw_rung, inheritance_pool,
                                pools_for)

TAGS = {"hints": 11, "climb_prompts": 12, "rung_val": 13, "rung_select": 14, "rung_test": 15}
TRAINING = ("pretraining", "founder", "inheritance_t0", "hints", "climb_r")  # pool names (prefixes) trained on
EVALUATION = ("val", "screening", "selection", "test", "rung_val", "rung_select", "rung1_test", "rung2_test")


def _per_family(s: ClimbConfig, seed: int, tag: str, part: str, n: int, rung: int, *, distinct: bool = True,
                exclude: frozenset[str] = frozenset()) -> list[Task]:
    return sum((draw_rung(f, part, n, _pool_seed(seed, rung, i, TAGS[tag]), rung, distinct=distinct, exclude=exclude)
                for i, f in enumerate(s.families)), [])


@dataclass(frozen=True)
class Ladder:
    """The pools of one seed of a climb (see the module's docstring)."""

    hints: list[Task]
    climb: list[list[Task]]        # climb[r - 1]: round r's prompts
    rung_val: list[Task]
    rung_select: list[Task]
    rung_test: dict[int, list[Task]]
    test: list[Task]               # the society's pools at the easy level
    val: list[Task]
    selection: list[Task]
    inheritance: list[Task]        # generation 0's inheritance prompts at a founder's budget: distill-all's


@lru_cache(maxsize=64)
def ladder_for(cfg, seed: int) -> Ladder:
    """The pools of ``seed`` under climb config ``cfg``."""
    s = validate_config(cfg)
    p = pools_for(s, seed)
    stream = _per_family(s, seed, "climb_prompts", "children", s.rounds * s.n_climb, s.rung)
    F = len(s.families)
    per = [stream[i * s.rounds * s.n_climb:(i + 1) * s.rounds * s.n_climb] for i in range(F)]
    climb = [[x for fam in per for x in fam[r * s.n_climb:(r + 1) * s.n_climb]] for r in range(s.rounds)]
    rung_val = _per_family(s, seed, "rung_val", "val", s.n_rung_val, s.rung)
    taken = frozenset(x.prompt for x in rung_val)
    return Ladder(hints=_per_family(s, seed, "hints", "founders", s.n_hints, s.rung, distinct=True),
                  climb=climb, rung_val=rung_val,
                  rung_select=_per_family(s, seed, "rung_select", "val", s.n_rung_select, s.rung, exclude=taken),
                  rung_test={r: _per_family(s, seed, "rung_test", "test", s.n_rung_test, r) for r in RUNGS},
                  test=p.test, val=p.val, selection=p.selection,
                  inheritance=inheritance_pool(s, seed, 0, n_inherit=s.spec_train))


def audit(cfg, seed: int, *, pretraining: bool = True) -> dict[str, list[str]]:
    """Every pool of one seed as ``{pool name: [prompts]}``: the society's that the climb uses (pre-training,
    founders, generation 0's inheritance prompts, val, selection, test) and the ladder's."""
    s = validate_config(cfg)
    soc = society_audit(s, seed, pretraining=pretraining)
    keep = [k for k in soc if k.startswith(("pretraining", "founder")) or k in ("val", "screening", "selection", "test")]
    out = {k: soc[k] for k in keep}
    lad = ladder_for(s, seed)
    out["inheritance_t0"] = [x.prompt for x in lad.inheritance]
    out["hints"] = [x.prompt for x in lad.hints]
    for r, pool in enumerate(lad.climb, 1):
        out[f"climb_r{r}"] = [x.prompt for x in pool]
    out["rung_val"] = [x.prompt for x in lad.rung_val]
    out["rung_select"] = [x.prompt for x in lad.rung_select]
    for r, pool in lad.rung_test.items():
        out[f"rung{r}_test"] = [x.prompt for x in pool]
    return out


def overlaps(pools: dict[str, list[str]]) -> dict[tuple[str, str], int]:
    """``{(training pool, evaluation pool): prompts they share}`` for every pair that shares any (``{}``: none),
    and every pair of evaluation pools that must be disjoint (val / selection, rung_val / rung_select)."""
    train = [k for k in pools if k.startswith(TRAINING)]
    evals = [k for k in pools if k in EVALUATION]
    pairs = [(a, b) for a in train for b in evals] + [("val", "selection"), ("rung_val", "rung_select")]
    out = {}
    for a, b in pairs:
        if a in pools and b in pools:
            n = len(set(pools[a]) & set(pools[b]))
            if n:
                out[(a, b)] = n
    return out


def check(pools: dict[str, list[str]], seed: int) -> tuple[str, bool]:
    """The audit's ``--check``: the overlaps (:func:`overlaps`) as JSON, or the line saying there are none."""
    bad = overlaps(pools)
    if bad:
        return json.dumps({f"{a} & {b}": n for (a, b), n in bad.items()}), False
    return (f"seed {seed}: 0 prompts shared between {sum(k.startswith(TRAINING) for k in pools)} training and "
            f"{sum(k in EVALUATION for k in pools)} evaluation pools"), True


def _main(argv=None) -> int:
    return audit_command(argv, prog="python -m lib.society.climb.ladder",
                         what="a climb config (configs/society_climb/<scale>.yaml)", load=load_file, audit=audit,
                         check=check)


def main(argv=None) -> int:
    return cli_main(_main, argv)


if __name__ == "__main__":
    sys.exit(main())
