"""Figures: one style, stable panel names, and an index whose every entry exists after notebook 05."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import matplotlib.colors as mcolors
import matplotlib.pyplot as plt
import pytest

from figcheck import assert_png_drawn
from lib import figures as plots, provenance, reproduce
from lib.core import paths
from lib import style as figures
from lib.core.paths import REPO_ROOT, figures_dir


def test_every_experiment_has_a_plot_module_with_the_contract():
    for exp in plots.EXPERIMENTS:
        mod = plots.module(exp)
        for fn in ("load_data", "draw_all", "stats_table"):
            assert callable(getattr(mod, fn, None)), f"lib.figures.{exp} lacks {fn}"
    with pytest.raises(ValueError, match="known"):
        plots.module("nope")


def test_missing_data_names_the_file_and_the_command(tmp_path, monkeypatch):
    monkeypatch.setenv("GE_DATA_DIR", str(tmp_path))
    for exp in plots.EXPERIMENTS:
        with pytest.raises(FileNotFoundError, match=r"python -m lib\.experiment configs/"):
            plots.module(exp).load_data("smoke")


UNKNOWN = ["unheard-of", "qd_v2", "my_arm", "baseline", "zz", "ablation-7"]


def test_every_colour_is_a_colour_blind_safe_one_and_a_variant_keeps_its_arms():
    safe = {c.lower() for c in [*figures.TOL_BRIGHT.values(), *figures.TOL_MUTED.values(), *figures.TOL_VIBRANT.values(),
                                *figures.TOL_EXTRA.values(),
                                figures.REFERENCE_GREY]}
    for name in [*figures.COLOURS, *UNKNOWN]:
        assert mcolors.is_color_like(figures.colour(name)), name
        assert figures.colour(name).lower() in safe, f"{name}: {figures.colour(name)} is not a Tol colour"
        assert figures.colour(f"{name}@e1") == figures.colour(name)
    assert figures.colour("full") != figures.colour("no_grounding")


def test_looks_of_unknown_names_are_the_same_in_every_process():
    """String hashing is salted per interpreter (PYTHONHASHSEED): a look derived from ``hash`` would
    give an unknown arm another colour in the next notebook run."""
    code = f"from lib.style import arm_style; print([arm_style(n) for n in {UNKNOWN!r}])"
    procs = [subprocess.Popen([sys.executable, "-c", code], cwd=REPO_ROOT, stdout=subprocess.PIPE, text=True,
                              env={**os.environ, "PYTHONHASHSEED": h}) for h in ("1", "2")]
    seen = {p.communicate(timeout=300)[0].strip() for p in procs}
    assert all(p.returncode == 0 for p in procs)
    assert seen == {str([figures.arm_style(n) for n in UNKNOWN])}


@pytest.mark.parametrize("names", [
    ["full", "no_grounding", "no_sex", "no_diversity", "sex_linear"],
    ["sgd", "mutate_promote", "random_promote"],
    ["corrected", "generic_first_jet", "full_jacobian", "gate_blind", "random_order", "no_feedback",
     "frozen_proposer", "direct_tournament"],
    ["qd", "top_p"]])
def test_within_an_experiment_every_arm_differs_in_colour_and_marker(names):
    looks = [figures.arm_style(n) for n in names]
    assert len({lk["color"] for lk in looks}) == len(names)
    assert len({lk["marker"] for lk in looks}) == len(names)


def test_a_variant_keeps_its_arms_colour_and_is_drawn_dashed_hollow_hatched():
    base, var = figures.arm_style("no_grounding"), figures.arm_style("no_grounding@e1")
    assert var["color"] == base["color"] and var["marker"] == base["marker"]
    assert base["ls"] == "-" and var["ls"] == "--" and var["mfc"] == "white" and var["hatch"] == "//"
    assert base["hatch"] is None and figures.base_arm("full@g0.25") == "full"
    assert figures.bar_kw("full@e1")["hatch"] == "//" and figures.line_kw("full@e1")["label"] == "full@e1"


def test_figures_root_follows_GE_FIGURES_DIR(tmp_path, monkeypatch):
    monkeypatch.setenv("GE_FIGURES_DIR", str(tmp_path / "figs"))
    assert figures_dir("cpu") == tmp_path / "figs" / "cpu" and (tmp_path / "figs" / "cpu").is_dir()
    monkeypatch.delenv("GE_FIGURES_DIR")
    assert paths.figures_root() == REPO_ROOT / "figures"
    with pytest.raises(ValueError, match="unknown scale 'huge'"):
        figures_dir("huge")


def test_save_figure_writes_the_drawing_as_pdf_and_png_and_indexes_every_panel(tmp_path, monkeypatch):
    monkeypatch.setenv("GE_FIGURES_DIR", str(tmp_path))
    red = figures.TOL_BRIGHT["red"]
    fig, ax = plt.subplots()
    ax.plot([0, 1], [0, 1], color=red, lw=4)
    pdf, png = figures.save_figure(fig, "figX_test", scale="smoke", caption="a line", data=["data/x.csv"],
                                   config="configs/x/smoke.yaml", notebook="nb.ipynb")
    plt.close(fig)
    assert (pdf, png) == (tmp_path / "smoke" / "figX_test.pdf", tmp_path / "smoke" / "figX_test.png")
    assert_png_drawn(png, colour=red)  # the figure's red line, not a blank canvas
    head = pdf.read_bytes()
    assert head.startswith(b"%PDF") and b"CreationDate" not in head  # no time stamp: byte-stable re-runs
    fig2, ax2 = plt.subplots()
    ax2.bar([0], [1])
    figures.save_figure(fig2, "S9_other", scale="smoke", caption="a bar")
    plt.close(fig2)
    idx = figures.read_index("smoke")
    assert set(idx) == {"figX_test", "S9_other"}, "saving a panel dropped another from the index"
    e = idx["figX_test"]
    assert e["caption"] == "a line" and e["data"] == ["data/x.csv"] and e["notebook"] == "nb.ipynb"
    assert e["config"] == "configs/x/smoke.yaml"
    assert sorted(Path(f).name for f in e["files"]) == ["figX_test.pdf", "figX_test.png"]
    assert all(Path(f).is_file() for f in e["files"])


def _tree(folder: Path) -> dict:
    return {p: (p.stat().st_size, p.stat().st_mtime_ns) for p in folder.rglob("*") if p.is_file()}


@pytest.mark.slow
def test_smoke_reproduction_of_notebook_05_writes_an_index_of_existing_unique_panels(tmp_path, monkeypatch):
    monkeypatch.setenv("GE_FIGURES_DIR", str(tmp_path))  # reaches papermill's kernel: nothing in figures/
    committed = _tree(REPO_ROOT / "figures")
    assert reproduce.main(["--scale", "smoke", "--only", "05"]) == 0
    assert _tree(REPO_ROOT / "figures") == committed, "the reproduction wrote into the tracked figures/"
    index = (tmp_path / "smoke" / "INDEX.md").read_text()
    rows = re.findall(r"^\| `([^`]+)` \| [^|]* \| ([^|]*) \|", index, flags=re.M)
    names = [n for n, _ in rows]
    assert names, "INDEX.md lists no panels"
    assert len(names) == len(set(names)), "two panels share a name"
    for exp_prefix in ("fig1", "fig2", "fig3", "fig4"):
        assert any(n.startswith(exp_prefix) for n in names), f"no {exp_prefix} panel in the index"
    for name, files in rows:
        listed = [REPO_ROOT / f for f in re.findall(r"`([^`]+)`", files)]  # absolute paths stay absolute
        assert sorted(p.name for p in listed) == [f"{name}.pdf", f"{name}.png"], name
        assert all(p.parent == tmp_path / "smoke" and p.is_file() for p in listed), f"{name}: {listed}"
        assert_png_drawn(tmp_path / "smoke" / f"{name}.png", min_ink=0.01)
    assert set(names) == set(provenance.index_entries("smoke"))


def test_an_executed_notebook_renders_to_one_self_contained_page(tmp_path, monkeypatch):
    monkeypatch.setenv("GE_FIGURES_DIR", str(tmp_path))
    page = reproduce.render_html(REPO_ROOT / "notebooks" / "01_operators.ipynb", "smoke")
    html = page.read_text()
    assert page == tmp_path / "smoke" / "notebooks" / "01_operators.html"
    assert "data:image/png;base64" in html  # figures inside the page
    assert not re.search(r'<img[^>]+src="(?!data:)', html), "an image the page does not embed"
    assert "Fig. 1a" in html and page.stat().st_size < 3_000_000


def test_html_only_without_executed_notebooks_is_a_user_error(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(reproduce, "BUILD", tmp_path)
    assert reproduce.main(["--scale", "cpu", "--html-only", "--only", "01"]) == 2
    assert "run `python -m lib.reproduce --scale cpu` first" in capsys.readouterr().err
