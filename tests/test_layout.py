"""The layout's rules (docs/development.md, *Layout*): one package per notebook, clean edges in lib/."""
from __future__ import annotations

import ast
import importlib.util
import json
import re

from lib.core.paths import REPO_ROOT

LIB = REPO_ROOT / "lib"
FROZEN = {("lib/program_search/reference.py", "one_run")}  # the seed's per-state oracle, kept verbatim
# each notebook reads its own experiment's package and the common style (05 draws every package's figures)
OWN = {"01": ("lib.operators",), "02": ("lib.tool_mutation",), "03": ("lib.society",), "04": ("lib.program_search",),
       "05": ("lib.figures", "lib.provenance", "lib.society")}


def _functions():
    for p in sorted(LIB.rglob("*.py")):
        for n in ast.walk(ast.parse(p.read_text())):
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)):
                yield str(p.relative_to(REPO_ROOT)), n


def test_no_function_imports_the_project_and_none_is_too_long_or_too_wide():
    local, long, wide = [], [], []
    for f, n in _functions():
        local += [f"{f}:{m.lineno}" for m in ast.walk(n) if isinstance(m, ast.ImportFrom)
                  and (m.level > 0 or (m.module or "").split(".")[0] == "lib")]
        if n.end_lineno - n.lineno + 1 > 60 and (f, n.name) not in FROZEN:
            long.append(f"{f}:{n.name}")
        a = n.args
        k = len(a.posonlyargs) + len(a.args) + len(a.kwonlyargs) + (a.vararg is not None) + (a.kwarg is not None)
        k -= bool(a.args) and a.args[0].arg in ("self", "cls")
        if k > 8:
            wide.append(f"{f}:{n.name} ({k})")
    assert not local, f"imports of the project inside functions: {local}"
    assert not long, f"functions over 60 lines: {long}"
    assert not wide, f"functions with more than 8 parameters: {wide}"


def test_each_notebook_imports_its_own_package_and_the_style_only():
    for nb in sorted((REPO_ROOT / "notebooks").glob("0*.ipynb")):
        src = "\n".join("".join(c["source"]) for c in json.loads(nb.read_text())["cells"] if c["cell_type"] == "code")
        mods = set(re.findall(r"^\s*from (lib[\w.]*) import", src, re.M)) | set(re.findall(r"^\s*import (lib[\w.]*)", src, re.M))
        own = OWN[nb.name[:2]] + ("lib.style",)
        stray = sorted(m for m in mods if not any(m == o or m.startswith(o + ".") for o in own)
                       and not (m == "lib" and nb.name.startswith("05")))
        assert not stray, f"{nb.name} imports {stray}: a notebook reads its own package ({own})"


def _notebook_lib_modules(nb) -> set[str]:
    """The modules of ``lib`` a notebook's code imports (``from lib.a import b`` counts ``lib.a.b`` when ``b`` is a
    module, else ``lib.a``); IPython's magics (``%...``) are left out of the parse."""
    cells = [c for c in json.loads(nb.read_text())["cells"] if c["cell_type"] == "code"]
    src = "\n".join(ln for c in cells for ln in "".join(c["source"]).splitlines() if not ln.lstrip().startswith("%"))
    out = set()
    for n in ast.walk(ast.parse(src)):
        if isinstance(n, ast.ImportFrom) and (n.module or "").split(".")[0] == "lib":
            subs = {f"{n.module}.{a.name}" for a in n.names if importlib.util.find_spec(f"{n.module}.{a.name}")}
            out |= subs if len(subs) == len(n.names) else subs | {n.module}
        elif isinstance(n, ast.Import):
            out |= {a.name for a in n.names if a.name.split(".")[0] == "lib"}
    return out


def test_notebook_03_reads_the_society_through_at_most_three_modules():
    mods = _notebook_lib_modules(REPO_ROOT / "notebooks" / "03_society_arms.ipynb")
    assert mods == {"lib.society.run", "lib.society.studies"}, mods  # the loop's door and the studies' door
    assert len(mods) <= 3


def test_the_notebook_import_count_sees_every_module(tmp_path):
    nb = tmp_path / "x.ipynb"  # a planted notebook of the old form: 4 modules, one of them by a from-import
    cell = "%matplotlib inline\nfrom lib.society import run as s, format_p\nimport lib.style\nfrom lib.society.studies.verdict import figures"
    nb.write_text(json.dumps({"cells": [{"cell_type": "code", "source": cell}]}))
    assert _notebook_lib_modules(nb) == {"lib.society", "lib.society.run", "lib.style", "lib.society.studies.verdict.figures"}


SOCIETY = LIB / "society"
COMMANDS = {"lib/society/gpu_run.py"}  # a GPU run, then the first verdict's figures: a command over both rooms
STUDIES = ("frames", "diagnostics", "verdict", "study", "skills", "lineage", "climb")  # each reads only those before it


def _project_imports(p) -> set[str]:
    """The modules of ``lib`` that file ``p`` imports (``from lib.x import y`` counts ``lib.x`` and ``lib.x.y``)."""
    out = set()
    for n in ast.walk(ast.parse(p.read_text())):
        if isinstance(n, ast.ImportFrom) and (n.module or "").startswith("lib"):
            out |= {n.module} | {f"{n.module}.{a.name}" for a in n.names}
        elif isinstance(n, ast.Import):
            out |= {a.name for a in n.names if a.name.startswith("lib")}
    return out


def test_the_society_loop_never_imports_a_study():
    stray = sorted(str(p.relative_to(REPO_ROOT)) for p in SOCIETY.glob("*.py")
                   if str(p.relative_to(REPO_ROOT)) not in COMMANDS
                   and any(m.startswith("lib.society.studies") for m in _project_imports(p)))
    assert not stray, f"the loop that makes the rows imports a study: {stray}"


def test_a_study_reads_only_the_studies_before_it():
    rank = lambda name: STUDIES.index(name) if name in STUDIES else len(STUDIES)  # noqa: E731  (a new study: last)
    late = []
    for p in sorted((SOCIETY / "studies").rglob("*.py")):
        mine = p.relative_to(SOCIETY / "studies").parts[0].removesuffix(".py")
        for m in _project_imports(p):
            other = m.split(".")[3].removesuffix(".py") if m.startswith("lib.society.studies.") else None
            if other is not None and other != mine and rank(other) >= rank(mine):
                late.append(f"{p.relative_to(REPO_ROOT)} -> {m}")
    assert not late, f"a study imports one after it (or one beside it): {late}"
