"""Figures: one style, stable panel names, and an index whose every entry exists after notebook 05."""
from __future__ import annotations

import re

import matplotlib.pyplot as plt
import pytest

from lib import plots, provenance, reproduce
from lib.plots import style as figures
from lib.core.paths import REPO_ROOT, figures_dir


def test_every_experiment_has_a_plot_module_with_the_contract():
    for exp in plots.EXPERIMENTS:
        mod = plots.module(exp)
        for fn in ("load_data", "draw_all", "stats_table"):
            assert callable(getattr(mod, fn, None)), f"lib.plots.{exp} lacks {fn}"
    with pytest.raises(ValueError, match="known"):
        plots.module("nope")


def test_missing_data_names_the_file_and_the_command(tmp_path, monkeypatch):
    monkeypatch.setenv("GE_DATA_DIR", str(tmp_path))
    for exp in plots.EXPERIMENTS:
        with pytest.raises(FileNotFoundError, match=r"python -m lib\.experiment configs/"):
            plots.module(exp).load_data("smoke")


def test_colours_are_fixed_per_arm():
    assert figures.colour("full") == figures.colour("full")
    assert figures.colour("full") != figures.colour("no_grounding")
    assert figures.colour("unheard-of") == figures.colour("unheard-of")


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


def test_save_figure_writes_pdf_png_and_index(tmp_path, monkeypatch):
    monkeypatch.setattr(figures, "figures_dir", lambda scale: tmp_path)
    fig, ax = plt.subplots()
    ax.plot([0, 1], [0, 1])
    paths = figures.save_figure(fig, "figX_test", scale="smoke", caption="a line", data=["data/x.csv"])
    plt.close(fig)
    assert all(p.is_file() and p.stat().st_size > 0 for p in paths)
    assert figures.read_index("smoke")["figX_test"]["caption"] == "a line"


def test_smoke_reproduction_of_notebook_05_writes_an_index_of_existing_unique_panels():
    assert reproduce.main(["--scale", "smoke", "--only", "05"]) == 0
    index = (figures_dir("smoke") / "INDEX.md").read_text()
    names = re.findall(r"^\| `([^`]+)` \|", index, flags=re.M)
    assert names, "INDEX.md lists no panels"
    assert len(names) == len(set(names)), "two panels share a name"
    for exp_prefix in ("fig1", "fig2", "fig3", "fig4"):
        assert any(n.startswith(exp_prefix) for n in names), f"no {exp_prefix} panel in the index"
    for f in re.findall(r"`(figures/smoke/[^`]+)`", index):
        assert (REPO_ROOT / f).is_file(), f"{f} is listed in INDEX.md but missing"
    assert set(names) == set(provenance.index_entries("smoke"))


def test_an_executed_notebook_renders_to_one_self_contained_page(tmp_path, monkeypatch):
    monkeypatch.setattr(reproduce, "html_dir", lambda scale: tmp_path / scale)
    page = reproduce.render_html(REPO_ROOT / "notebooks" / "01_operators.ipynb", "smoke")
    html = page.read_text()
    assert page == tmp_path / "smoke" / "01_operators.html"
    assert "data:image/png;base64" in html  # figures inside the page
    assert not re.search(r'<img[^>]+src="(?!data:)', html), "an image the page does not embed"
    assert "Fig. 1a" in html and page.stat().st_size < 3_000_000


def test_html_only_without_executed_notebooks_is_a_user_error(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(reproduce, "BUILD", tmp_path)
    assert reproduce.main(["--scale", "cpu", "--html-only", "--only", "01"]) == 2
    assert "run `python -m lib.reproduce --scale cpu` first" in capsys.readouterr().err
