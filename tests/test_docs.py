"""The README and docs/ pages: every command, module, file and link they name exists; the citation is valid."""
from __future__ import annotations

import importlib
import importlib.util
import re
from pathlib import Path

import pytest
import yaml

from lib.core.paths import REPO_ROOT

DOCS = [REPO_ROOT / "README.md", *sorted((REPO_ROOT / "docs").glob("*.md"))]
TEXT = {p: p.read_text(encoding="utf-8") for p in DOCS}
# files a fresh clone has (runs/, build/ and data of a scale not yet run are made by the commands)
TRACKED = ("configs/", "benchmarks/", "notebooks/", "lib/", "tests/", "docs/", ".ci/")


def _resolves(dotted: str) -> bool:
    """``lib.a.b.c`` names a module, or an attribute chain of the longest importable module prefix."""
    parts = dotted.split(".")
    for k in range(len(parts), 0, -1):
        name = ".".join(parts[:k])
        try:
            if importlib.util.find_spec(name) is None:
                continue
        except ModuleNotFoundError:
            continue
        obj = importlib.import_module(name)
        for attr in parts[k:]:
            if not hasattr(obj, attr):
                return False
            obj = getattr(obj, attr)
        return True
    return False


def test_the_docs_exist_and_are_linked_from_the_readme():
    assert {p.name for p in DOCS[1:]} >= {"cluster.md", "paper-scale.md"}
    for p in DOCS[1:]:
        assert f"](docs/{p.name})" in TEXT[REPO_ROOT / "README.md"], f"README does not link docs/{p.name}"


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_every_module_command_and_name_of_lib_exists(doc):
    names = set(re.findall(r"python -m ([\w.]+)", TEXT[doc])) | set(re.findall(r"\blib(?:\.[A-Za-z_]\w*)+", TEXT[doc]))
    missing = sorted(n for n in names if not _resolves(n))
    assert not missing, f"{doc.name} names what does not exist: {missing}"


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_every_module_run_with_python_m_is_a_command(doc):
    for name in set(re.findall(r"python -m (lib[\w.]*)", TEXT[doc])):
        spec = importlib.util.find_spec(name)
        assert spec is not None and spec.origin, f"{doc.name}: python -m {name}: no such module"
        if spec.submodule_search_locations:  # a package runs its __main__.py
            main = Path(spec.submodule_search_locations[0]) / "__main__.py"
            assert main.exists(), f"{doc.name}: python -m {name}: the package has no __main__.py"
            continue
        assert '__name__ == "__main__"' in open(spec.origin).read(), f"{doc.name}: {name} runs nothing"


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_every_make_target_file_and_link_exists(doc):
    targets = set(re.findall(r"^([\w-]+):", (REPO_ROOT / "Makefile").read_text(), flags=re.M))
    used = set(re.findall(r"(?:^|`)make ([a-z][\w-]*)", TEXT[doc], flags=re.M))  # in code, not prose
    assert used <= targets, f"{doc.name}: no make target {sorted(used - targets)}"
    paths = {p.rstrip("/") for p in re.findall(r"`((?:%s)[^`<>*\s]*)`" % "|".join(map(re.escape, TRACKED)), TEXT[doc])}
    assert not [p for p in paths if not (REPO_ROOT / p).exists()], f"{doc.name} names missing files"
    links = [u for u in re.findall(r"\]\(([^)\s]+)\)", TEXT[doc]) if not re.match(r"[a-z]+:|#", u)]
    broken = [u for u in links if not (doc.parent / u.split("#")[0]).exists()]
    assert links and not broken, f"{doc.name}: broken links {broken}"


def test_the_citation_file_is_valid_cff_and_names_the_licence():
    cff = yaml.safe_load((REPO_ROOT / "CITATION.cff").read_text())
    assert cff["cff-version"] == "1.2.0" and cff["message"] and cff["title"]
    for who in [*cff["authors"], *cff["preferred-citation"]["authors"]]:
        assert who.get("name") or who.get("family-names"), who
    assert cff["preferred-citation"]["type"] and cff["preferred-citation"]["title"]
    licence = (REPO_ROOT / "LICENSE").read_text().splitlines()[0]
    assert licence == f"{cff['license']} License", (licence, cff["license"])
