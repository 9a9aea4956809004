"""The climb's config: the society's keys (founders, pools, LoRA; :class:`lib.society.config.SocietyConfig`) and the
climb's own, one typed frozen object built once at the door (:func:`validate_config`).

``agents`` is the society's: the number of founders (one per family, twice over) whose verified answers are
distill-all's data. The climb's population is ``population`` generalists (:mod:`lib.society.climb.loop`).
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from lib.core.config import Field, key, load_layers
from lib.core.paths import config_path
from lib.core.tasks import RUNGS
from lib.society.arms import CLIMB_ARMS
from lib.society.config import SocietyConfig, _lora_checks, _place_checks, n_parents

KIND = "llm_climb"


def _climb_arm(a: str) -> bool:
    return a in CLIMB_ARMS


@dataclass(frozen=True)
class ClimbConfig(SocietyConfig):
    """One climb config, complete and checked. The society's keys keep their meaning; ``generations`` is
    unused (a climb runs ``rounds``), ``n_inherit``, ``n_conf``, ``n_candidates``, ``epochs``, ``elitism`` too."""

    population: int = key(Field(int, 4, min=2, doc="the climb's population P: generalists, each a LoRA on "
                                                     "distill-all's data and the hints, its own seed"))
    rounds: int = key(Field(int, 3, min=1, doc="climb rounds R: sample, keep, select, train"))
    rung: int = key(Field(int, 1, choices=RUNGS, doc="the rung climbed (1: one step past the novel region)"))
    n_hints: int = key(Field(int, 64, min=0, doc="gold tasks of the climbed rung per family in every generalist's "
                                                  "data (the hints): the same in every arm"))
    n_climb: int = key(Field(int, 200, min=1, doc="fresh climb prompts per family and round (no answer shown)"))
    climb_samples: int = key(Field(int, 8, min=1, doc="k: samples per agent and climb prompt (a single learner "
                                                       "draws population x k)"))
    temperature: float = key(Field(float, 1.0, min=0.01, doc="sampling temperature of the climb"))
    vote_m: int = key(Field(int, 3, min=1, doc="climb_vote keeps an answer that at least vote_m agents give (each "
                                                "agent's most frequent sample); climb_single_vote one whose share "
                                                "of the learner's samples is at least vote_m / population"))
    n_mix: int = key(Field(int, 480, min=1, doc="examples in each learner's training mix of a round: the kept "
                                                 "answers (at most (1 - replay_share) of it), replay filling the rest"))
    replay_share: float = key(Field(float, 0.5, min=0.0, max=1.0, doc="the least share of a round's mix replayed "
                                                                        "from the generalists' own data"))
    round_steps: int = key(Field(int, 60, min=1, doc="LoRA optimizer steps of one child in one round (a single "
                                                      "learner takes population x round_steps)"))
    n_rung_test: int = key(Field(int, 100, min=1, doc="test tasks per family and rung (reporting only)"))
    n_rung_val: int = key(Field(int, 60, min=1, doc="val tasks per family of the climbed rung (grounded selection "
                                                     "reads them with the society's val)"))
    n_rung_select: int = key(Field(int, 60, min=1, doc="selection tasks per family of the climbed rung: the "
                                                        "reported agent and climb_single's learner are chosen on them"))

    @staticmethod
    def checks(cfg: dict) -> list[str]:
        return _climb_checks(cfg)

    @property
    def last_step(self) -> int:
        """A finished climb shard's last done step: round ``rounds`` (round 0 is the generalists)."""
        return self.rounds

    @property
    def climb_parents(self) -> int:
        """Parents per round of a population arm: ``n_parents`` (0: max(2, population // 2))."""
        return self.n_parents or max(2, self.population // 2)


def _climb_checks(cfg: dict) -> list[str]:
    errs = []
    if cfg["kind"] != KIND:
        errs.append(f"kind: {cfg['kind']!r}; a climb config has kind {KIND}")
    bad = [a for a in cfg["arms"] if not _climb_arm(a)]
    if bad or not cfg["arms"]:
        errs.append(f"arms: {bad or 'none given'} are not climb arms; choose from {list(CLIMB_ARMS)}")
    if len(set(cfg["arms"])) != len(cfg["arms"]):
        errs.append(f"arms: duplicates in {cfg['arms']}")
    stray = sorted(set(cfg["arm_seeds"]) - set(cfg["arms"]))
    if stray:
        errs.append(f"arm_seeds: {stray} are not in arms {cfg['arms']}")
    if not cfg["families"] or len(set(cfg["families"])) != len(cfg["families"]):
        errs.append(f"families: need distinct families, got {cfg['families']}")
    if cfg["agents"] < len(cfg["families"]):
        errs.append(f"agents ({cfg['agents']}): the founders, at least one per family ({len(cfg['families'])})")
    P = cfg["population"]
    if cfg["vote_m"] > P:
        errs.append(f"vote_m ({cfg['vote_m']}) must be <= population ({P}): a vote of more agents than there are")
    if 2 * cfg["vote_m"] <= P:
        errs.append(f"vote_m ({cfg['vote_m']}) must be a majority of population ({P}), so at most one answer per "
                    f"prompt is kept")
    parents = cfg["n_parents"] or max(2, P // 2)
    if parents > P:
        errs.append(f"n_parents ({parents}) > population ({P})")
    if cfg["n_select"] < 1:
        errs.append("n_select: the climb reports the agent best on the selection pool; set n_select > 0")
    if cfg["hard"]:
        errs.append("hard: the ladder climbs from the easy level; set hard: false")
    return errs + _lora_checks(cfg) + _place_checks(cfg)


def validate_config(cfg) -> ClimbConfig:
    """The complete, checked, frozen climb config (a ``ConfigError`` names every problem)."""
    return ClimbConfig.of(cfg)


def load_file(path: str | Path) -> ClimbConfig:
    return validate_config(load_layers(path))


@lru_cache(maxsize=None)
def config_of(experiment: str, scale: str) -> ClimbConfig | None:
    p = config_path(experiment, scale)
    return load_file(p) if p.is_file() else None


__all__ = ["KIND", "ClimbConfig", "validate_config", "load_file", "config_of", "n_parents"]
