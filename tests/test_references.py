"""Every in-repo reference a reader can follow leads somewhere: the relative links (and their anchors), the
backticked repository paths and the named sections ("the README's *Results*", "[study.md](study.md), *Cost*") of
the README, docs/*.md and the notebooks' Markdown cells."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from lib.core.paths import REPO_ROOT

# the folders and files a reader can open in a clone; build/, runs/ and .venv are made by the commands
TOP = ("lib", "docs", "configs", "data", "figures", "notebooks", "tests", "benchmarks", ".ci")
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
HREF = re.compile(r"<a\s[^>]*href=\"([^\"]+)\"")
TICKED = re.compile(r"`([^`\s]+)`")
# a section named in prose: "the README's *Results*", "docs/development.md's *Layout*", "[x](study.md), *Cost*"
SECTION = re.compile(r"(?:\b(README|[\w./-]+\.md)'s|\]\(([\w./-]+\.md)\),?)\s+\*([^*\n]+)\*")


def slug(heading: str) -> str:
    """GitHub's anchor of a Markdown heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"<[^>]+>", "", heading).strip().lower()
    text = re.sub(r"[`*_]", "", text)
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def headings(markdown: str) -> list[str]:
    """The text of every Markdown heading (outside code blocks)."""
    out, fenced = [], False
    for line in markdown.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
        elif not fenced and re.match(r"#{1,6}\s", line):
            out.append(line.lstrip("#").strip())
    return out


def _markdown_of(path: Path) -> str:
    if path.suffix == ".ipynb":
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        return "\n\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")
    return path.read_text(encoding="utf-8")


def _without_code_blocks(text: str) -> str:
    return re.sub(r"```.*?```", "", text, flags=re.S)


def _looks_like_path(token: str) -> bool:
    """A backticked token that names a repository file or folder: it starts at a top-level folder, names no
    placeholder (``<scale>``), glob or elision, and is not a module, option or command."""
    if any(c in token for c in "<>*{}…$|,()[]=") or token.startswith(("-", "/")) or "::" in token:
        return False
    first = token.split("/", 1)[0]
    return "/" in token and first in TOP


SCALES = ("smoke", "cpu", "paper")


def _made_by_a_run(path: str) -> bool:
    """A scale's figures or data folder (``figures/paper/``, ``data/paper/society/``) that no run of it has made
    yet: the commands write it. A file inside a folder that exists must exist."""
    parts = path.rstrip("/").split("/")
    if parts[0] not in ("data", "figures") or len(parts) < 2 or parts[1] not in SCALES:
        return False
    if len(parts) == 2:
        return True
    return parts[0] == "data" and (REPO_ROOT / "configs" / parts[2]).is_dir() and not (
        REPO_ROOT / "/".join(parts[:3])).exists()


def _target(source: Path, ref: str) -> Path:
    """The file a reference of ``source`` names: a relative link is relative to ``source``'s folder (a notebook's
    backticked path to the repository root)."""
    return (source.parent / ref).resolve()


def dead_references(source: Path, text: str | None = None) -> list[str]:
    """The references of ``source`` (its text, or ``text`` in its place) that lead nowhere: a relative link to a
    missing file or to an anchor no heading of the target has, a backticked repository path that does not exist, a
    section named in prose that its file lacks."""
    text = _markdown_of(source) if text is None else text
    dead = []
    body = _without_code_blocks(text)
    for ref in LINK.findall(body) + HREF.findall(body):
        if re.match(r"[a-z][\w+.-]*:", ref) or ref.startswith("//"):
            continue  # a URL: outside the repository
        file, _, anchor = ref.partition("#")
        target = _target(source, file) if file else source
        if not target.exists():
            dead.append(f"link {ref}: no file {file}")
            continue
        if anchor and target.suffix in (".md", ".ipynb"):
            if anchor not in {slug(h) for h in headings(_markdown_of(target))}:
                dead.append(f"link {ref}: {target.name} has no heading #{anchor}")
    for token in TICKED.findall(body):
        path = token.rstrip(".:;")
        if _looks_like_path(path) and not (REPO_ROOT / path).exists() and not _target(source, path).exists() \
                and not _made_by_a_run(path):
            dead.append(f"path `{token}`: no such file or folder")
    for readme, linked, name in SECTION.findall(body):
        file = "README.md" if readme == "README" else (readme or linked)
        target = REPO_ROOT / file if readme == "README" else _target(source, file)
        if not target.exists() and (REPO_ROOT / file).exists():
            target = REPO_ROOT / file
        if not target.exists():
            dead.append(f"section *{name}* of {file}: no such file")
            continue
        if slug(name) not in {slug(h) for h in headings(_markdown_of(target))} and not any(
                slug(h).startswith(slug(name)) for h in headings(_markdown_of(target))):
            dead.append(f"section *{name}* of {file}: it has no such heading")
    return dead


SOURCES = [REPO_ROOT / "README.md", *sorted((REPO_ROOT / "docs").glob("*.md")),
           *sorted((REPO_ROOT / "notebooks").glob("0*.ipynb"))]


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.name)
def test_every_reference_leads_somewhere(source):
    dead = dead_references(source)
    assert not dead, f"{source.relative_to(REPO_ROOT)}: {dead}"


def test_the_check_finds_the_dead_references_it_names():
    """Planted: the references this check was written after (a README section that moved to
    docs/development.md, a glossary that left the README, a package that was renamed) and their repairs."""
    doc = REPO_ROOT / "docs" / "paper-scale.md"
    assert dead_references(doc, "the README's\n  *Reproducibility* gives") == [
        "section *Reproducibility* of README.md: it has no such heading"]
    assert dead_references(doc, "[Reproducibility](development.md#reproducibility)") == []
    assert dead_references(doc, "[x](development.md#no-such-part)") == [
        "link development.md#no-such-part: development.md has no heading #no-such-part"]
    assert dead_references(doc, "[x](nothing.md)") == ["link nothing.md: no file nothing.md"]
    nb = REPO_ROOT / "notebooks" / "05_figures.ipynb"
    assert dead_references(nb, "see the README's *Words used here*") == [
        "section *Words used here* of README.md: it has no such heading"]
    assert dead_references(nb, "through `lib/plots/`, with") == ["path `lib/plots/`: no such file or folder"]
    assert dead_references(nb, "through `lib/figures.py`, [glossary](../docs/glossary.md)") == []
    assert dead_references(nb, "`data/<scale>/…` and `lib.society.arms`") == []  # a placeholder, a module
    assert dead_references(doc, "[study.md](study.md), *Cost*") == []
    assert dead_references(doc, "goes to `data/paper/society/`") == []  # a run of that scale makes it
    assert dead_references(doc, "`data/cpu/society/manifesto.json`") == [
        "path `data/cpu/society/manifesto.json`: no such file or folder"]
    assert dead_references(doc, "[study.md](study.md), *Price*") == [
        "section *Price* of study.md: it has no such heading"]
    assert slug("What is (and is not) reproducible at this scale") == "what-is-and-is-not-reproducible-at-this-scale"
