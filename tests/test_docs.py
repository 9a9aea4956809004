"""The README and docs/ pages: every command, module, file and link they name exists; the citation is valid."""
from __future__ import annotations

import importlib
import importlib.util
import re
from pathlib import Path

import numpy as np
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


def _sweep_numbers(manifest: Path) -> dict:
    """What docs/cluster.md says of the cpu society's sweep, from its manifest: runs listed, run, skipped, the
    longest run and a society arm's (not a baseline's) range, in whole seconds."""
    import json

    runs = json.loads(manifest.read_text())["sweep"]["runs"]
    ran = [r for r in runs if r["status"] == "ok"]
    arms = [r["wall_s"] for r in ran if not r["arm"].startswith("baseline_")]
    return {"listed": len(runs), "ran": len(ran), "skipped": sum(r["status"] == "skipped" for r in runs),
            "longest": round(max(r["wall_s"] for r in ran)), "arm_lo": round(min(arms)), "arm_hi": round(max(arms))}


SWEEP_SENTENCE = re.compile(r"`(data/cpu/society/manifest\.json)` lists (\d+) runs: (\d+) ran, the longest\s+(\d+)\s+s, "
                            r"a society arm's (\d+)–(\d+) s, and (\d+) were skipped")


def _sweep_claims(text: str) -> tuple[Path, dict]:
    m = SWEEP_SENTENCE.search(text)
    assert m, "docs/cluster.md no longer quotes the cpu society sweep's runs"
    listed, ran, longest, lo, hi, skipped = map(int, m.groups()[1:])
    return REPO_ROOT / m[1], {"listed": listed, "ran": ran, "skipped": skipped, "longest": longest, "arm_lo": lo,
                              "arm_hi": hi}


def test_cluster_md_quotes_the_committed_sweep_manifest(tmp_path):
    manifest, claims = _sweep_claims(TEXT[REPO_ROOT / "docs" / "cluster.md"])
    assert claims == _sweep_numbers(manifest)
    # planted: the numbers of an older sweep (30 runs, 80–371 s) against this manifest are caught
    old = ("`data/cpu/society/manifest.json` lists 30 runs: 30 ran, the longest 371 s, a society arm's 80–371 s, "
           "and 0 were skipped")
    assert _sweep_claims(old)[1] != _sweep_numbers(manifest)


def test_the_citation_names_the_committed_tiny_base_size():
    """CITATION.cff's abstract names the cpu scale's base by its parameter count, read from its weights' header."""
    import json
    import struct

    raw = (REPO_ROOT / "data" / "base" / "tiny" / "model.safetensors").open("rb")
    with raw:
        n = struct.unpack("<Q", raw.read(8))[0]
        header = json.loads(raw.read(n))
    count = sum(int(np.prod(v["shape"])) for k, v in header.items() if k != "__metadata__")
    abstract = " ".join(yaml.safe_load((REPO_ROOT / "CITATION.cff").read_text())["abstract"].split())
    assert f"{count / 1e6:.2f} M-parameter" in abstract, (count, abstract)
    cff = yaml.safe_load((REPO_ROOT / "CITATION.cff").read_text())
    assert cff["preferred-citation"]["year"] == 2026
    assert not any("authors of" in a["name"] for a in cff["authors"] + cff["preferred-citation"]["authors"])


README_MAX_LINES = 250  # the front door: the studies' detail lives on their pages (issue 50)


def test_the_readme_is_a_front_door_of_at_most_250_lines():
    lines = len(TEXT[REPO_ROOT / "README.md"].splitlines())
    assert lines <= README_MAX_LINES, f"README.md has {lines} lines: move a study's detail to its docs/ page"
