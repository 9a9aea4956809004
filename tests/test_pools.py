"""No evaluation item is ever trained on: every pool of every seed of every committed society config
draws from its own part of the task space (lib.society.pools), and the parts are disjoint."""
from __future__ import annotations

import json
import subprocess
import sys
from functools import lru_cache
from itertools import combinations

import pytest

from lib.core.paths import CONFIGS, REPO_ROOT
from lib.society import pools
from lib.society.config import load_file, seed_list, validate_config
from lib.core.tasks import FAMILIES, Task, make_tasks, region

# base.yaml: a layer; the climb's pools are audited by its own test (tests/test_climb.py, its ladder's parts too)
CONFIG_FILES = sorted(p for p in CONFIGS.glob("society*/*.yaml")
                      if p.stem != "base" and not p.parent.name.startswith("society_climb")) + [
    REPO_ROOT / "tests" / "data" / "society_smollm2_micro.yaml"]


@lru_cache(maxsize=1)
def pretraining() -> frozenset[str]:
    """Every prompt the tiny base was pre-trained on (all 1,000 steps)."""
    from lib.engines.models import TINY_STEPS
    return frozenset(x.prompt for step in range(TINY_STEPS) for x in pools.pretrain_tasks(step))


def test_parts_partition_each_family_and_pretraining_stays_in_its_part():
    for f in FAMILIES:
        tasks = make_tasks(f, 4000, seed=123)
        parts = {pools.part_of(t) for t in tasks}
        assert parts == set(pools.PARTS), f  # every part is reached ...
        for t in tasks:
            assert sum(pools.part_of(t) == p for p in pools.PARTS) == 1  # ... and each task is in exactly one
    for step in (0, 1, 499, 999):
        for t in pools.pretrain_tasks(step):
            assert pools.part_of(t) == "pretrain" and region(t) == "familiar"


_AUDITS: dict = {}


def audit(cfg: dict, seed: int) -> dict:
    """pools.audit, once per (settings that shape the pools, seed): the variant configs of one run
    (elitism, g sweep, recombination) share their main run's pools."""
    s = validate_config(cfg)
    key = (s.families, s.agents, s.generations, s.n_test, s.n_val, s.resolved_n_screen, s.n_conf, s.n_inherit,
           s.spec_train, s.hard, s.base_model, seed)
    if key not in _AUDITS:
        _AUDITS[key] = pools.audit(cfg, seed, pretraining=False)
    return _AUDITS[key]


def plain(prompt: str) -> str:
    """The plain prompt a written one stands for (a ``spaced`` strings prompt without its spaces)."""
    return pools.unwritten(Task("strings", prompt, "")).prompt if prompt.startswith("rev ") else prompt


@pytest.mark.parametrize("path", CONFIG_FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_pool_of_every_seed_is_disjoint_from_every_other_part(path):
    cfg = s = load_file(path)
    for seed in seed_list(cfg):
        pool = dict(audit(cfg, seed))
        if s.base_model == "tiny":
            pool["pretraining"] = sorted(pretraining())
        by_part: dict[str, set[str]] = {}
        for name, prompts in pool.items():
            part = pools.pool_part(name)
            units = [pools._unit(plain(p)) for p in prompts]  # the parts partition the plain tasks
            stray = [p for p, u in zip(prompts, units) if u < pools.PARTS[part][0] or u >= pools.PARTS[part][1]]
            assert not stray, f"{path.name} seed {seed}: {name} has prompts outside its {part} part: {stray[:3]}"
            by_part.setdefault(part, set()).update(prompts)
        for a, b in combinations(sorted(by_part), 2):
            assert not by_part[a] & by_part[b], f"{path.name} seed {seed}: parts {a} and {b} share prompts"
        assert set(pool["screening"]) <= set(pool["val"])
        for t in range(s.generations - 1):
            assert not set(pool[f"conformity_t{t}"]) & set(pool[f"inheritance_t{t}"])
        for name in ("val", "test"):  # distinct items, the configured number per family
            n = s.n_val if name == "val" else s.n_test
            assert len(pool[name]) == len(set(pool[name])) == n * len(s.families)


def test_test_and_val_are_drawn_per_seed():
    cfg = load_file(CONFIGS / "society" / "cpu.yaml")
    a, b = pools.audit(cfg, 0, pretraining=False), pools.audit(cfg, 1, pretraining=False)
    assert set(a["test"]) != set(b["test"]) and set(a["val"]) != set(b["val"])
    assert len(a["test"]) >= 100 * len(cfg["families"])  # >= 100 unseen test items per family


def test_audit_command_prints_every_pool_as_json():
    out = subprocess.run([sys.executable, "-m", "lib.society.pools", "configs/society/smoke.yaml", "--seed", "0",
                          "--no-pretraining"], cwd=REPO_ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    cfg = load_file(CONFIGS / "society" / "smoke.yaml")
    assert got == pools.audit(cfg, 0, pretraining=False)
    assert {"val", "screening", "test", "conformity_t0", "inheritance_t0", "founder0_lists"} <= set(got)
    bad = subprocess.run([sys.executable, "-m", "lib.society.pools", "configs/society/nope.yaml"], cwd=REPO_ROOT,
                         capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1 and "nope.yaml" in bad.stderr


def test_a_part_too_small_is_a_clear_error():
    with pytest.raises(ValueError, match="fewer than"):
        pools.draw("arith", "test", 5_000, seed=0, distinct=True)  # the part holds ~750
