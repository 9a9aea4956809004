"""The one arm table (lib.society.arms): every arm declared once, everything else derived from it."""
from __future__ import annotations

import ast
import subprocess
import sys

import pytest
import yaml

from lib.core.config import load_layers
from lib.core.paths import REPO_ROOT
from lib import style
from lib.society import arms
from lib.society.studies.verdict import figures  # noqa: F401  (figures registers the arms' looks)


def test_switches_of_the_seeds_arms():
    assert arms.switches("full", 0.5) == {"g": 0.5, "sex": "exact", "diversity": True}
    assert arms.switches("no_grounding", 0.5)["g"] == 0.0
    assert arms.switches("no_sex", 0.5)["sex"] is None
    assert arms.switches("no_diversity", 0.5)["diversity"] is False
    assert arms.switches("sex_linear", 0.5)["sex"] == "linear"
    with pytest.raises(ValueError, match="known arms are"):
        arms.switches("no_such_arm", 0.5)
    with pytest.raises(ValueError):
        arms.switches("full", 1.5)


def test_every_arm_has_a_known_role_and_switches_and_one_look():
    for a in arms.ARMS:
        assert a.role in arms.ROLES, a
        assert a.merge in arms.MERGE_KINDS + (None,), a
        assert a.inherit in arms.INHERITS, a
        assert a.selection in arms.SELECTIONS + (None,), a
    looks = [(a.look.colour, a.look.marker) for a in arms.ARMS if a.look is not None]
    assert len(looks) == len(set(looks)), "two arms share a colour and a marker"
    assert style.arm_style("verified")["color"] == arms.SPECS["verified"].look.colour


def test_derived_names():
    assert arms.REFERENCE == "full" and arms.BESIDE == "full@breeding"
    assert arms.SEED_ARMS == ("full", "no_grounding", "no_sex", "no_diversity")
    assert arms.MULTITASK == "baseline_multitask" and "baseline_multitask" not in arms.ONE_SHOT
    assert set(arms.BREEDING_ARMS) == {"no_sex", "sex_linear", "sex_sum", "sex_ties"}
    assert arms.ADDED_AFTER_PREREGISTRATION == ("full@seed_budget",)
    assert arms.order(["baseline_soup", "niche", "full@e1", "no_grounding", "full"]) == [
        "full", "full@e1", "no_grounding", "niche", "baseline_soup"]
    for _, a, b in arms.STUDY_PRIMARY[1:]:
        assert arms.spec(a) is not None and arms.spec(b) is not None


def test_an_unknown_arm_exits_2_naming_the_known_ones(tmp_path):
    cfg = load_layers(REPO_ROOT / "configs/society/smoke.yaml")  # its overlays resolved
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump({**cfg, "arms": ["no_such_arm", *cfg["arms"]]}))
    out = subprocess.run([sys.executable, "-m", "lib.experiment", str(bad)], cwd=REPO_ROOT, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 2, out.stderr
    assert "no_such_arm" in out.stderr and "verified" in out.stderr and "baseline_lorahub" in out.stderr
    assert "Traceback" not in out.stderr and len(out.stderr.strip().splitlines()) == 1


def test_arm_names_are_written_in_one_module_of_lib():
    # a selection scheme or an inheritance that shares its arm's name ("niche", "lexicase", "verified") is a
    # design value the steps switch on, not the arm
    names = ({a.name for a in arms.ARMS} | set(arms.BASE_ARMS)) - set(arms.SELECTIONS) - set(arms.INHERITS)
    where = set()
    for p in (REPO_ROOT / "lib").rglob("*.py"):
        for n in ast.walk(ast.parse(p.read_text())):
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value in names:
                where.add(str(p.relative_to(REPO_ROOT)))
    assert where == {"lib/society/arms.py"}, sorted(where)
