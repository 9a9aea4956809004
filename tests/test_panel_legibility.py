"""What a reader can check on the saved figures: one drawing per figure name (notebooks show the saved
panel), labels that do not overwrite each other, intervals inside what is possible, one legend entry
per line, Fig. 3f split into parts with few categories each, titles that state n and the interval,
pages whose images carry an alt text, the society study's S3h / S3i, and for every saved panel: tick labels that
overwrite each other, an empty canvas share, text below 7 pt as shown, lines hidden under others."""
from __future__ import annotations

import functools
import itertools
import json
import re
import textwrap

import matplotlib
import numpy as np
import pandas as pd
import pytest

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import nbformat  # noqa: E402
from matplotlib.collections import PolyCollection  # noqa: E402

import legibility  # noqa: E402  (tests/legibility.py: the measures)
from lib import figures as plots  # noqa: E402
from lib import pages  # noqa: E402
from lib.society.studies import frames  # noqa: E402
from lib.society.studies.verdict import comparisons as sr  # noqa: E402
from lib.core import stats  # noqa: E402
from lib.core.paths import REPO_ROOT, data_dir  # noqa: E402
from lib.operators import figures as operators
from lib.program_search import figures as program_search
from lib.society.studies.verdict import figures as society
from lib.society.studies.diagnostics import figures as society_diagnostics
from lib.society.studies.verdict import panels as society_results
from lib.society.studies.study import figures as society_study
from lib import style
from lib.tool_mutation import figures as tool_mutation
from lib.society.studies.lineage import figures as lineage_figures
from lib.society.arms import is_baseline
from lib.society import data as society_data

NAMED = re.compile(r"^#+\s*(?:SI\s+)?(Fig\.\s*\d[a-z]|S\d[a-z])\b")


@pytest.fixture(scope="module")
def smoke():
    return society.load_data("smoke")


@pytest.fixture(scope="module")
def cpu():
    if not any(data_dir("cpu", "society").glob("full_s*.csv")):
        pytest.skip("no cpu society data")
    return society.load_data("cpu")


def _texts_overlap(fig, texts) -> list[tuple[str, str]]:
    """Pairs of the given text artists (non-empty) whose drawn boxes intersect."""
    fig.canvas.draw()
    r = fig.canvas.get_renderer()
    boxes = [(t.get_text(), t.get_window_extent(r)) for t in texts if t.get_text().strip() and t.get_visible()]
    return [(a, b) for (a, ba), (b, bb) in itertools.combinations(boxes, 2) if ba.overlaps(bb)]


def _band_and_bar_values(ax) -> np.ndarray:
    """Every y of the shaded bands and of the vertical interval bars (two-point lines at one x) of ``ax``."""
    ys = [c.get_paths()[0].vertices[:, 1] for c in ax.collections if isinstance(c, PolyCollection) and c.get_paths()]
    ys += [np.asarray(ln.get_ydata(), float) for ln in ax.get_lines()
           if len(ln.get_xdata()) == 2 and np.ptp(np.asarray(ln.get_xdata(), float)) == 0]
    return np.concatenate(ys) if ys else np.zeros(0)


# ----------------------------------------------------------------------------- 1. one drawing per name


@pytest.mark.parametrize("name", ["01_operators", "03_society_arms"])
def test_a_notebook_figure_under_a_saved_name_is_the_saved_panel(name):
    """A figure cell under a heading that names a saved panel (``## Fig. 1e — …``, ``## S3c — …``)
    draws it with draw_panel (the saved panel, as draw_all saves it), never by another call; quick
    looks have headings of their own."""
    nb = json.loads((REPO_ROOT / "notebooks" / f"{name}.ipynb").read_text())
    heading, checked = None, 0
    for cell in nb["cells"]:
        src = "".join(cell["source"])
        if cell["cell_type"] == "markdown":
            first = next((ln for ln in src.splitlines() if ln.startswith("#")), None)
            heading = first if first is not None else heading
            continue
        d, s = pages.figures_expected(src)
        if not (d or s) or heading is None:
            continue
        if NAMED.match(heading):
            assert "draw_panel(" in src, f"{name}: the figure under {heading!r} is not drawn by draw_panel"
            checked += 1
    assert checked >= (5 if name.startswith("01") else 10)


def test_fig1e_in_notebook_01_is_the_committed_drawing():
    data = operators.load_data("smoke")
    fig = operators.draw_panel("fig1e_complementary_pairs", data)
    cfg = data["config"]
    seed = int(data["agents"]["seed"].min())
    want = operators.qd_parents(data["agents"], data["distance"], seed, n_parents=cfg["n_parents"], lam=cfg["lam"])
    assert [int(t.get_text()) for t in fig.axes[0].get_yticklabels()] == want  # every parent, in selection order
    plt.close(fig)
    with pytest.raises(KeyError, match="known"):
        operators.draw_panel("fig1z_nothing", data)


# ----------------------------------------------------------------------------- 2. S3i


def test_s3i_draws_the_first_bred_generation_and_its_labels_do_not_overlap(cpu):
    fig = society_results.draw_skill_loss(cpu["rows"], cpu["families"], generation="first")
    assert "generation 1 (the first bred" in fig._suptitle.get_text()
    pts, summ, _ = society_results.skill_loss_at(cpu["rows"], cpu["families"], "first")
    assert set(pts["generation"]) == {1}
    dropped = society_results.skill_free_families(pts, cpu["families"])
    assert "strings" in dropped and "strings not drawn" in fig._suptitle.get_text()  # its parents hold no skill
    titles = [ax.get_title(loc="left") for ax in fig.axes if ax.get_title(loc="left")]
    shown = [ax for ax in fig.axes if ax.get_visible()]  # a row of panels per family and pooled, a column per step
    assert not any(t.startswith("strings") for t in titles)
    assert len(shown) == len(sr.STEPS) * (len(cpu["families"]) - len(dropped) + 1)
    ax = shown[-1]  # child − merge, pooled: the per-seed means of generation 1's children, along x
    per_seed = pts[pts.family == sr.ALL].groupby(["arm", "seed"])[sr.STEPS[2]].mean()
    drawn = np.concatenate([np.asarray(c.get_offsets())[:, 0] for c in ax.collections if len(c.get_offsets())])
    np.testing.assert_allclose(np.sort(drawn), np.sort(per_seed.to_numpy()))
    for ax in shown:  # one horizontal "p=…, n=…" per arm, beside it, overwriting nothing
        labels = [t for t in ax.texts if t.get_text().startswith("p=")]
        assert labels and all(t.get_rotation() == 0 for t in labels)
        assert not _texts_overlap(fig, labels + [ax.title, ax._left_title]), ax.get_title(loc="left")
    every = [t for ax in shown for t in ax.texts]
    assert not _texts_overlap(fig, every + [a.yaxis.label for a in shown])  # nor a neighbouring panel's
    assert legibility.saved_height_px(fig) <= legibility.MAX_TALL_PX
    plt.close(fig)


def test_s3i_pools_every_generation_only_when_asked(smoke):
    _, _, which = society_results.skill_loss_at(smoke["rows"], smoke["families"], None)
    assert which.startswith("every bred generation pooled")
    panel = style.panel_named(society.PANELS, "S3i_society_skill_loss")
    assert "first bred generation" in panel.caption


# ----------------------------------------------------------------------------- 3. Fig. 3a / 3b


def test_fig3a_draws_full_under_the_arms_no_line_twice_and_the_bare_base(cpu):
    fig = society.draw_panel("fig3a_society_test_accuracy", cpu)
    ax = fig.axes[0]
    lines = {ln.get_label(): ln for ln in ax.get_lines()}
    full = lines["full"]
    others = [lines[a] for a in society.trajectory_arms(cpu["rows"]) if a != "full"]
    # full is thick and drawn first: the arms near it stay visible on top of it
    assert full.get_zorder() < min(o.get_zorder() for o in others)
    assert full.get_linewidth() > max(o.get_linewidth() for o in others)
    labels = [t.get_text() for t in (ax.get_legend() or fig.legends[0]).get_texts()]  # below both panels
    assert len(labels) == len(set(labels))  # one entry per line
    # full on the breeding arms' seeds, dotted, unless full@breeding (its rerun) is that very line
    dotted = [ln for ln in ax.get_lines() if ln.get_linestyle() == ":"]
    assert "full@breeding" in labels and len(dotted) <= 1 and "full@breeding: full rerun" in ax.get_title(loc="left")
    # (b): the rerun is a reproduction check, said in the title, not a column: on how many of its seeds it is full
    last = society.last_generation_table(cpu["rows"], "test_overall")
    wide = last[last["arm"].isin(["full", "full@breeding"])].pivot_table(index="seed", columns="arm", values="value")
    equal, n = int((wide["full@breeding"] == wide["full"]).sum()), len(wide["full@breeding"].dropna())
    said = f"all {n} of its seeds" if equal == n else f"{equal} of its {n} seeds"
    assert f"equals full at the last generation on {said}" in fig.axes[1].get_title(loc="left")
    base = [ln for lab, ln in lines.items() if lab.startswith("bare base")]
    want = frames.base_scores(cpu["rows"], ["overall"])["overall"].mean()
    assert len(base) == 1 and base[0].get_ydata()[0] == pytest.approx(want)
    plt.close(fig)
    for name in ("fig3a_society_test_accuracy", "fig3c_society_consensus"):
        cap = style.panel_named(society.PANELS, name).caption
        assert "elitism" not in cap, name


def test_fig3a_draws_apart_the_differences_its_table_reports(cpu):
    """Fig. 3a (a) drew every arm on one axis from 0 to 0.6, where the ablation's differences (0.007–0.041 below full
    at the last generation) lay within a few pixels: no_diversity 0.007 below full and 0.006 below sex_linear, under
    4 px apart. The arms within 0.1 of full are drawn again below on an axis of their own, every difference of 0.005
    or more at least 4 px apart there. The old drawing of those rows (the committed folders) is caught
    (draw_metric_paired without the zoom)."""
    fig = society.draw_panel("fig3a_society_test_accuracy", cpu)
    committed = society_data.society_rows("cpu", society_data.MAIN, society_data.RECOMBINATION, order="name")
    old = society.draw_metric_paired(committed, "test_overall", ylabel="test accuracy")
    try:
        assert legibility.lines_drawn_together(fig, 0.005) == []
        together = legibility.lines_drawn_together(old, 0.005)
        assert together == [("full", "no_diversity", 0.007), ("no_diversity", "sex_linear", 0.006)]
    finally:
        plt.close(fig)
        plt.close(old)


def test_fig3b_has_the_base_per_family_and_says_n_and_no_interval(smoke):
    fig = society.draw_panel("fig3b_society_test_by_family", smoke)
    title = fig._suptitle.get_text()
    assert "n = " in title and "no interval" in title
    for ax, f in zip(fig.axes, smoke["families"]):
        base = [ln for ln in ax.get_lines() if ln.get_label().startswith("bare base")]
        assert base and base[0].get_ydata()[0] == pytest.approx(frames.base_scores(smoke["rows"], [f])[f].mean())
    plt.close(fig)


# ----------------------------------------------------------------------------- 4. Fig. 3f split


SPLIT = ["fig3f_society_vs_merge_methods", "S3k_society_val_best", "S3l_society_vs_merge_by_family",
         "S3m_society_method_costs"]


def test_fig3f_is_four_figures_with_few_categories_and_plain_cost_labels(cpu):
    names = [p.name for p in society.PANELS]
    assert set(SPLIT) <= set(names) and names[-len(society_diagnostics.PANELS):] == [
        p.name for p in society_diagnostics.PANELS]
    for name in SPLIT:
        fig = society.draw_panel(name, cpu)
        for ax in fig.axes:
            cats = [t.get_text() for t in (ax.get_yticklabels() if name.startswith(("S3l", "S3m"))
                                           else ax.get_xticklabels()) if t.get_text()]
            assert len(cats) <= 15, (name, len(cats))
            assert fig.get_size_inches()[0] <= 10.0, name  # legible at ~900 px
        texts = [t.get_text() for ax in fig.axes for t in ax.texts]
        assert not any(re.search(r"\de[+-]\d", t) and not t.startswith("p=") for t in texts), name
        if name.startswith("fig3f"):
            assert not any(t.get_text().endswith(sr.VAL_BEST) for t in fig.axes[0].get_xticklabels())
            assert not _texts_overlap(fig, [t for t in fig.axes[0].texts])
        if name.startswith("S3m"):
            fig.canvas.draw()
            for ax in fig.axes:
                for bar, t in zip(ax.patches, [t for t in ax.texts if t.get_text() != "—"]):
                    assert t.get_color() == "black" and t.get_position()[0] >= bar.get_width()  # beside, not on
            assert "not timed" in " ".join(ax.get_title(loc="left") for ax in fig.axes)
        if name.startswith("S3l"):  # one panel per family: no markers of several families side by side
            assert [ax.get_title() for ax in fig.axes] == list(cpu["families"])
        plt.close(fig)


# ----------------------------------------------------------------------------- 5. bounded intervals


@pytest.mark.parametrize("name", ["fig3d_society_diversity", "fig3e_society_selected_conformity",
                                  "S3h_society_skill_retention", "S3j_society_generalists"])
def test_bands_and_bars_of_rates_stay_within_0_and_1(cpu, name):
    fig = society.draw_panel(name, cpu)
    ys = np.concatenate([_band_and_bar_values(ax) for ax in fig.axes])
    assert len(ys) and ys.min() >= -1e-12 and ys.max() <= 1 + 1e-12, (name, ys.min(), ys.max())
    words = fig._suptitle.get_text() if fig._suptitle else " ".join(ax.get_title(loc="left") for ax in fig.axes)
    assert stats.BOUNDED_T_CI in words, name
    plt.close(fig)


def test_wilson_interval_is_inside_0_1_and_not_empty_at_the_ends():
    assert style.wilson_ci(0, 16)[1:] == pytest.approx((0.0, 0.194), abs=1e-3)
    p, lo, hi = style.wilson_ci(16, 16)
    assert p == 1 and hi == 1 and lo == pytest.approx(0.806, abs=1e-3)
    t = style.within_bounds(pd.DataFrame({"lo": [-0.2, 0.1], "hi": [0.5, 1.3]}))
    assert t["lo"].tolist() == [0.0, 0.1] and t["hi"].tolist() == [0.5, 1.0]


# ----------------------------------------------------------------------------- 6. S3d, S3h, S3j


def test_s3d_is_small_multiples_with_two_bands_each_and_says_the_interval(cpu):
    fig = society.draw_panel("S3d_society_selection_differential", cpu)
    drawn = [ax for ax in fig.axes if ax.axison]
    arms = society.trajectory_arms(cpu["rows"])
    assert len([ax for ax in drawn if ax.get_lines()]) >= len(arms)
    for ax in drawn:
        assert sum(isinstance(c, PolyCollection) for c in ax.collections) <= 2
    assert stats.T_CI in fig._suptitle.get_text()
    plt.close(fig)


@pytest.mark.parametrize("name", ["S3h_society_skill_retention", "S3j_society_generalists"])
def test_baselines_sit_at_labelled_positions_and_the_legend_is_short(cpu, name):
    fig = society.draw_panel(name, cpu)
    ticks = {t.get_text() for t in fig.axes[-1].get_xticklabels()}
    assert {"soup", "LoraHub", "multitask", "TIES (seed grid)", "DARE-TIES (seed grid)"} <= ticks  # the first verdict's
    assert "TIES" not in ticks  # under-tuned on its seed grid: never under the tuned ones' name (S3n)
    legend = next(ax.get_legend() for ax in fig.axes if ax.get_legend())
    assert len(legend.get_texts()) <= 10
    assert not any(t.get_text().startswith("baseline_") for t in legend.get_texts())
    plt.close(fig)


# ----------------------------------------------------------------------------- 7. titles


def _words(fig) -> str:
    parts = [fig._suptitle.get_text()] if fig._suptitle else []
    return " ".join(parts + [ax.get_title(loc=k) for ax in fig.axes for k in ("left", "center")]
                    + [ax.get_ylabel() for ax in fig.axes])


def test_titles_say_n_the_interval_and_the_better_direction(smoke):
    op = operators.load_data("smoke")
    tm = tool_mutation.load_data("smoke")
    ps = program_search.load_data("smoke")
    figs = {"fig1a": operators.draw_panel("fig1a_conformity_vs_fitness", op),
            "S1a": operators.draw_panel("S1a_consensus_vs_mean", op),
            "S2a": tool_mutation.draw_promotions(tm["rows"]), "S2b": tool_mutation.draw_selection(tm["rows"]),
            "3b": society.draw_panel("fig3b_society_test_by_family", smoke),
            "S3e": society.draw_panel("S3e_society_recombination_gain", smoke),
            "S3f": society.draw_panel("S3f_society_inheritance_fidelity", smoke),
            "4b": program_search.final_by_seed(ps["rows"])}
    for k, fig in figs.items():
        w = _words(fig)
        assert "n = " in w, (k, w)
        assert re.search(r"95 % CI|no interval", w), (k, w)
        plt.close(fig)
    assert "lower is better" in _words(program_search.final_by_seed(ps["rows"]))
    plt.close("all")


# ----------------------------------------------------------------------------- 8. pages


def test_every_image_of_a_page_gets_a_real_alt_text(tmp_path):
    fig, ax = plt.subplots(figsize=(1, 1))
    ax.set_title("Held-out accuracy")
    alt = style.figure_alt(fig)
    assert alt.startswith("Held-out accuracy")
    plt.close(fig)
    node = nbformat.read(REPO_ROOT / "notebooks" / "01_operators.ipynb", as_version=4)
    html = pages.render_node(node, tmp_path / "p.html", "p").read_text()
    alts = pages.IMG_ALT.findall(html)
    assert len(alts) == len(pages.PNG_IMG.findall(html)) >= 5
    assert all(a.strip() and a != pages.DEFAULT_ALT for a in alts)
    assert pages.page_problems('<img src="data:image/png;base64,xx">') == ["1 image(s) without an alt text"]


def test_committed_pages_carry_alt_texts_and_notebook_03_prints_p_as_text():
    for page in sorted((REPO_ROOT / "figures" / "cpu" / "notebooks").glob("*.html")):
        text = page.read_text(encoding="utf-8")
        assert pages.DEFAULT_ALT not in text, page.name
    t = pd.DataFrame({"arm": ["a"], "p": [3e-5], "p_holm": [0.0001], "mean": [0.12345]})
    out = style.table_text(t)
    assert "3.0e-05" in out and "1.0e-04" in out and "0.123" in out and "0.000" not in out
    nb = json.loads((REPO_ROOT / "notebooks" / "03_society_arms.ipynb").read_text())
    prose = " ".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")
    assert "within run-to-run noise" not in prose
    assert "the elitism pair\nand the g sweep on seeds 0–7: committed data" not in prose


# ----------------------------------------------------------------------------- 9. the study's S3h, S3i


def test_the_study_draws_s3h_and_s3i_on_its_designs():
    names = [p.name for p in society_study.PANELS]
    assert {"S3n_study_skill_retention", "S3o_study_skill_loss"} <= set(names)
    data = society_study.load_data("smoke")
    for name in ("S3n_study_skill_retention", "S3o_study_skill_loss"):
        fig = society_study.draw_panel(name, data)
        assert fig is not None, name
        drawn = {ln.get_label() for ax in fig.axes for ln in ax.get_lines()}
        assert not any("@g" in d or "@e" in d for d in drawn), name  # S3b and S3g draw those
        plt.close(fig)
    looks = [style.arm_style(a) for a in ("full", "no_grounding", "full@matched", "verified", "niche",
                                         "inherit_merge", "niche_inherit_merge", "niche_verified",
                                         "full@inherit1000x1", "full@seed_budget", "lexicase")]
    assert len({(lk["color"], lk["marker"]) for lk in looks}) == len(looks)
    assert style.arm_style("full@matched")["ls"] == "-" and style.colour("full@matched@e1") == style.colour(
        "full@matched")


# ----------------------------------------------------------------------------- 10. every saved panel reads


@functools.lru_cache(maxsize=None)
def _panel_data(experiment: str, scale: str):
    try:
        return plots.module(experiment).load_data(scale)
    except FileNotFoundError:
        return None


EVERY_PANEL = [(e, p.name) for e in plots.EXPERIMENTS for p in plots.module(e).PANELS]


@pytest.mark.parametrize("scale", ["smoke", "cpu"])
@pytest.mark.parametrize("experiment,name", EVERY_PANEL, ids=[n for _, n in EVERY_PANEL])
def test_every_saved_panel_reads_at_the_size_it_is_shown(experiment, name, scale):
    """No tick label overwrites another, the canvas right of the plots is at most 15 % empty (a title running past
    them), no text is below 7 pt as a page shows it, no axis label crosses or touches a title (its own axes', another
    axes' or the figure's), no text lies over a title, the saved PNG is at most 2,500 px tall, no two arms shown
    together have colours closer than ΔE 25, and (cpu data) no labelled line lies hidden under another
    unless its label says so ("(= corrected)"); smoke data coincide by construction (a 2-generation run keeps no
    skill anywhere), so hidden lines are checked on the cpu data only."""
    data = _panel_data(experiment, scale)
    if data is None:
        pytest.skip(f"no {experiment} data at {scale} scale")
    fig = style.draw_panel(plots.module(experiment).PANELS, name, data)
    if fig is None:
        pytest.skip(f"{name}: its data are absent at {scale} scale")
    try:
        assert not legibility.tick_overlaps(fig), (name, legibility.tick_overlaps(fig)[:3])
        assert legibility.right_gap(fig) <= 0.15, (name, f"{legibility.right_gap(fig):.0%} of the canvas empty")
        assert not legibility.small_texts(fig), (name, legibility.small_texts(fig)[:3])
        assert not legibility.title_crossings(fig), (name, legibility.title_crossings(fig)[:3])
        over = [c for ax in fig.axes for c in legibility.text_collisions(fig, ax)]
        assert not over, (name, over[:3])
        assert legibility.saved_height_px(fig) <= legibility.MAX_TALL_PX, (name, legibility.saved_height_px(fig))
        assert not legibility.similar_colours(fig), (name, legibility.similar_colours(fig)[:3])
        if scale == "cpu":
            hidden = [(a, b) for a, b in legibility.hidden_lines(fig) if "(= " not in a]
            assert not hidden, (name, hidden[:3])
    finally:
        plt.close(fig)


def test_the_legibility_measures_catch_what_they_name():
    fig, ax = plt.subplots(figsize=(3, 2))
    ax.set_xticks([0, 1, 2], ["a long label here", "another long one", "and a third"], fontsize=9)
    ax.plot([0, 1, 2], [0, 0, 0], label="hidden", lw=1)
    ax.plot([0, 1, 2], [0, 0, 0], label="on top", lw=2)
    ax.set_title("a title far longer than the plot it belongs to, running past it to the right " * 2, loc="left")
    ax.text(0, 0.5, "tiny", fontsize=4)
    assert legibility.tick_overlaps(fig) and legibility.right_gap(fig) > 0.15
    assert ("tiny", pytest.approx(4 * legibility.shown_scale(fig), abs=0.1)) in legibility.small_texts(fig)
    assert legibility.hidden_lines(fig) == [("hidden", "on top")]
    plt.close(fig)


def test_the_new_measures_catch_what_they_name():
    """Planted: a right panel's y label running into the left panel's long title, a y label longer than its axes
    reaching its own title, "p=…" labels over a title, a figure 14 in tall, and Tol's orange beside its red."""
    fig, (a, b) = plt.subplots(1, 2, figsize=(7, 3))
    b.set_ylabel("QD mean pairwise distance of parents\nminus top-P", fontsize=10)  # Fig. 1d's, once
    fig.tight_layout()
    a.set_title("(a) a left title long enough to run over the right panel's y label, far", loc="left", fontsize=8)
    assert ("QD mean pairwise distance of parents\nmin", "(a) a left title long enough to run over") in \
        legibility.title_crossings(fig)
    plt.close(fig)
    fig, ax = plt.subplots(figsize=(3.4, 3.0))  # Fig. 1a as it was
    ax.scatter([0, 1], [0, 1])
    ax.set(xlabel="verifier fitness", ylabel="conformity (agreement with consensus)")
    ax.set_title("Conformity tracks fitness: Pearson r = 0.95\nn = 480 agents of 20 populations "
                 "(one dot each; no interval)", fontsize=8)
    assert legibility.title_crossings(fig), "a y label taller than its axes reaches the title"
    ax.set_ylabel("conformity\n(agreement with consensus)")  # as it is now
    assert not legibility.title_crossings(fig)
    plt.close(fig)
    fig, ax = plt.subplots(figsize=(3, 2))
    ax.set_title("a title close above", loc="left", pad=2)
    ax.annotate("p=0.05\nn=8", (0.0, 1.0), xycoords="axes fraction", va="bottom")
    assert legibility.text_collisions(fig, ax) == [("p=0.05\nn=8", "a title close above")]
    plt.close(fig)
    fig, ax = plt.subplots(figsize=(4, 18))
    assert legibility.saved_height_px(fig) > legibility.MAX_TALL_PX
    plt.close(fig)
    fig, ax = plt.subplots(figsize=(3, 2))
    ax.plot([0, 1], [0, 1], color="#CC3311", label="full@inherit1000x1")  # Tol's vibrant red and orange
    ax.plot([0, 1], [1, 0], color="#EE7733", label="inherit_merge")
    ax.plot([0, 1], [0.5, 0.5], color="#4477AA", label="full")
    ax.plot([0, 1], [0.2, 0.2], color="#4477AA", ls="--", label="full@e1")  # a variant shares its arm's colour
    ax.plot([0, 1], [0.3, 0.3], color="black", ls=":", label="best founder")  # a reference line, not an arm
    ax.legend()
    assert legibility.similar_colours(fig) == [("full@inherit1000x1", "inherit_merge", 24.0)]
    plt.close(fig)


def test_the_arms_shown_together_look_apart():
    """The society's looks: every pair of arms that one figure shows together (the first verdict's, the study's,
    the three that shared one teal) differs in colour by ΔE 25 or more, and in colour and marker."""
    groups = [["full", "no_grounding", "no_sex", "no_diversity", "sex_linear", "sex_sum", "sex_ties", "full@breeding"],
              ["full", "no_grounding", "full@matched", "verified", "niche", "inherit_merge", "niche_inherit_merge",
               "niche_verified", "full@inherit1000x1", "full@seed_budget"],
              ["merge_repair", "full@seed_budget", "full@breeding"],
              ["corrected", "generic_first_jet", "full_jacobian", "gate_blind", "random_order", "no_feedback",
               "frozen_proposer", "direct_tournament"]]
    for g in groups:
        for a, b in itertools.combinations(g, 2):
            d = legibility.colour_delta(style.colour(a), style.colour(b))
            assert d >= legibility.MIN_COLOUR_DELTA, (a, b, round(d, 1))
    for a, b in itertools.combinations(groups[1], 2):  # the society study's (S3n, S3o, Fig. 3g), in CIEDE2000 too
        d = legibility.colour_delta_2000(style.colour(a), style.colour(b))
        assert d >= legibility.MIN_COLOUR_DELTA_2000, (a, b, round(d, 1))


def test_ciede2000_catches_s3ns_green_and_teal_that_cie76_and_the_variant_rule_let_pass():
    """Planted: S3n's old full@matched (Tol's bright green) and full@seed_budget (his vibrant teal), which read as one
    colour. S3n passed the similar-colour check twice over: CIE76 puts them 39.1 apart (above 25), and any two
    labels sharing a base ("full") counted as one arm's variants. CIEDE2000 puts them 19.2 apart (below 20: caught),
    and a named variant with a look of its own is an arm of its own; full@seed_budget's brown passes. Tol's vibrant
    orange and red (CIE76's planted pair) are caught too. The formula is checked on Sharma, Wu & Dalal's (2005) test
    pairs."""
    for lab1, lab2, want in [((50, 2.6772, -79.7751), (50, 0, -82.7485), 2.0425), ((50, 0, 0), (50, -1, 2), 2.3669),
                             ((50, 2.5, 0), (73, 25, -18), 27.1492),
                             ((60.2574, -34.0099, 36.2677), (60.4626, -34.1751, 39.4387), 1.2644),
                             ((2.0776, 0.0795, -1.1350), (0.9033, -0.0636, -0.5514), 0.9082)]:
        assert legibility.delta_e_2000(lab1, lab2) == pytest.approx(want, abs=1e-4)
    assert legibility._same_arm("full", "full@e1 (n = 8)") and legibility._same_arm("full@matched", "full@matched@e1")
    assert not legibility._same_arm("full@matched (n = 16)", "full@seed_budget (n = 8)")
    fig, ax = plt.subplots(figsize=(3, 2))
    ax.plot([0, 1], [0, 1], color="#228833", label="full@matched")
    teal = ax.plot([0, 1], [1, 0], color="#009988", label="full@seed_budget")[0]
    ax.plot([0, 1], [0.5, 0.5], color="#4477AA", label="full")
    ax.plot([0, 1], [0.2, 0.2], color="#4477AA", ls="--", label="full@e1")  # a variant shares its arm's colour
    ax.legend()
    assert legibility.similar_colours(fig) == []  # CIE76: 39.1
    assert legibility.similar_colours_2000(fig) == [("full@matched", "full@seed_budget", 19.2)]
    teal.set_color(style.colour("full@seed_budget"))  # as the arm table has it now
    ax.legend()
    assert legibility.similar_colours_2000(fig) == []
    plt.close(fig)
    assert legibility.colour_delta_2000("#CC3311", "#EE7733") < legibility.MIN_COLOUR_DELTA_2000


STUDY_PANELS = [p.name for p in society_study.PANELS]


@pytest.mark.parametrize("scale", ["smoke", "cpu"])
@pytest.mark.parametrize("name", STUDY_PANELS)
def test_the_society_studys_panels_tell_its_arms_apart_in_ciede2000(name, scale):
    """Every panel of the society study (its ten arms, the most one figure shows): no two arms shown together closer
    than ΔE00 20 (S3n and Fig. 3g drew full@matched and full@seed_budget 19.2 apart). The other experiments' panels are
    held to CIE76 (test_every_saved_panel_reads_at_the_size_it_is_shown)."""
    data = _panel_data(society_study.EXPERIMENT, scale)
    if data is None:
        pytest.skip(f"no society study data at {scale} scale")
    fig = society_study.draw_panel(name, data)
    if fig is None:
        pytest.skip(f"{name}: its data are absent at {scale} scale")
    try:
        assert not legibility.similar_colours_2000(fig), (name, legibility.similar_colours_2000(fig))
    finally:
        plt.close(fig)


@pytest.mark.parametrize("scale", ["smoke", "cpu"])
def test_the_climbs_panel_tells_its_arms_apart_in_ciede2000(scale):
    """Fig. 3j: its six arms at least ΔE00 20 apart (climb_single's ochre, climb_single_vote's pear and the gold
    ceiling's sand were 19.0, 12.4 and 10.9 apart)."""
    from lib.society.studies.climb import figures as climb_figures
    try:
        data = climb_figures.load_data(scale)
    except FileNotFoundError:
        pytest.skip(f"no climb data at {scale} scale")
    fig = climb_figures.draw_panel("fig3j_climb", data)
    try:
        assert not legibility.similar_colours_2000(fig), legibility.similar_colours_2000(fig)
    finally:
        plt.close(fig)


def test_a_reference_to_another_figures_panel_names_the_panel():
    """One scheme: "Fig. 3a, panel (b)"; "Fig. 3a (b)" reads as Fig. 3b. Planted: the old form is caught."""
    bad = re.compile(r"\b(?:Fig\.\s*\d[a-z]|S\d[a-z])\s+\([a-h]\)")
    assert bad.search("no interval (Fig. 3a (b) pairs the arms by seed)")
    assert not bad.search("no interval (Fig. 3a, panel (b), pairs the arms by seed)")
    files = [*REPO_ROOT.glob("lib/**/*.py"), REPO_ROOT / "README.md", *REPO_ROOT.glob("docs/*.md"),
             *REPO_ROOT.glob("figures/*/INDEX.md")]
    hits = [f"{f.relative_to(REPO_ROOT)}: {m.group(0)}" for f in files for m in bad.finditer(f.read_text())]
    for nb in REPO_ROOT.glob("notebooks/0*.ipynb"):
        for c in json.loads(nb.read_text())["cells"]:
            hits += [f"{nb.name}: {m.group(0)}" for m in bad.finditer("".join(c["source"]))]
    assert not hits, hits


def test_captions_say_which_axes_do_not_start_at_0():
    fig, (a, b) = plt.subplots(1, 2)
    a.plot([0, 1], [0.45, 0.7])
    a.set_title("(a) zoomed", loc="left")
    b.plot([0, 1], [0.0, 1.0])
    b.set_title("(b) from 0", loc="left")
    assert style.axes_from_zero_note(fig) == "(a)'s y axis does not start at 0"
    assert style.with_zero_note("A caption.", fig) == "A caption. (a)'s y axis does not start at 0."
    b.set_ylim(0.2, 1)
    assert style.axes_from_zero_note(fig) == "(a)'s y axis, (b)'s y axis do not start at 0"
    plt.close(fig)
    index = (REPO_ROOT / "figures" / "cpu" / "INDEX.md").read_text()
    for name in ("fig1c_selection_score", "fig1d_selection_diversity", "fig3e_society_selected_conformity",
                 "S3b_study_g_sweep", "S3g_study_elitism", "fig4b_program_final", "S1b_quality_diversity_tradeoff"):
        row = next(ln for ln in index.splitlines() if ln.startswith(f"| `{name}`"))
        assert "not start at 0" in row, name


def test_named_points_get_labels_beside_them_that_do_not_overlap():
    """lib.style.place_labels: four names of one marker take four of its sides and a name at the right edge a side
    within the axes, beside their markers, inside the axes and clear of each other; once every side is taken, a
    name goes further off, joined to its marker by a leader line, still clear of the others."""
    fig, ax = plt.subplots(figsize=(4, 3))
    ax.set_xlim(0, 10)
    ax.set_ylim(0, 10)
    ax.plot([5, 9.9], [5, 5], marker="o", ms=7, ls="")
    fig.canvas.draw()
    style.place_labels(ax, [(5, 5, f"design {k}", "black") for k in range(4)] + [(9.9, 5, "at the edge", "black")])
    boxes, frame = style._PLACED[fig], ax.get_window_extent(fig.canvas.get_renderer())
    assert len(boxes) == 5 and len(ax.texts) == 5 and all(t.arrow_patch is None for t in ax.texts)
    assert all(frame.x0 <= b.x0 and b.x1 <= frame.x1 for b in boxes)
    assert not any(a.overlaps(b) for a, b in itertools.combinations(boxes, 2))
    assert legibility.labels_away_from_their_markers(fig, ax) == [] and legibility.labels_over_markers(fig, ax) == []
    style.place_labels(ax, [(5, 5, f"crowded {k}", "black") for k in range(len(style.LABEL_SIDES))])
    led = [t for t in ax.texts if t.arrow_patch is not None]
    assert led and all(t.get_text().startswith("crowded") for t in led)
    assert not any(a.overlaps(b) for a, b in itertools.combinations(style._PLACED[fig], 2))
    assert legibility.labels_away_from_their_markers(fig, ax) == [] and legibility.text_overlaps(fig) == []
    plt.close(fig)


# ----------------------------------------------------------------------------- 12. Fig. 3i: no marker or name hidden


def test_the_checks_catch_a_label_over_a_marker_and_two_markers_at_one_point():
    """Planted: the defects a reader found in Fig. 3i (a design's name printed over another's marker; two designs
    drawn at one point with no offset; the legend's "n=8–8"), each caught, and their mends pass."""
    fig, ax = plt.subplots(figsize=(5, 4))
    ax.set_xscale("log")
    ax.plot([1000], [0.64], marker="s", ms=7, ls="", gid="crossover_archive")
    ax.plot([1000], [0.64], marker="*", ms=7, ls="", gid="continue")
    ax.plot([3000], [0.5], marker="o", ms=7, ls="", gid="full")
    ax.annotate("crossover (16)", (900, 0.64))
    ax.set_xlim(100, 10000)
    ax.set_ylim(0.4, 0.8)
    assert legibility.stacked_markers(fig, ax) == [("continue", "crossover_archive")]
    assert legibility.labels_over_markers(fig, ax)
    plt.close(fig)
    fig, ax = plt.subplots(figsize=(5, 4))
    ax.set_xscale("log")
    xs = lineage_figures.dodged([1000, 1000, 3000], [0.64, 0.64, 0.5], 0.4)
    for x, y, m, g in zip(xs, [0.64, 0.64, 0.5], "s*o", ("crossover_archive", "continue", "full")):
        ax.plot([x], [y], marker=m, ms=7, ls="", gid=g)
    ax.set_xlim(100, 10000)
    ax.set_ylim(0.4, 0.8)
    fig.canvas.draw()
    style.place_labels(ax, [(xs[0], 0.64, "crossover_archive (16)", "k"), (xs[1], 0.64, "continue (16)", "k")],
                       avoid_markers=True)
    assert legibility.stacked_markers(fig, ax) == [] and legibility.labels_over_markers(fig, ax) == []
    plt.close(fig)
    assert lineage_figures._seeds(8, 8) == "8" and lineage_figures._seeds(8, 16) == "8–16"


def test_fig3i_hides_no_marker_and_no_name_and_says_n_once():
    d = lineage_figures.lineage.load_data("cpu")
    if d is None:
        pytest.skip("no lineage data at cpu scale")
    fig = lineage_figures.draw_accuracy_compute(d["everything"], d["families"], d["work"])
    try:
        for ax in fig.axes:
            assert legibility.stacked_markers(fig, ax) == []
            assert legibility.labels_over_markers(fig, ax) == []
        legend = fig.legends[0]
        assert not [t.get_text() for t in legend.get_texts() if re.search(r"(\d+)–\1\b", t.get_text())]
        assert legibility.small_texts(fig) == []
        colours = {h.get_gid(): h.get_color() for h in fig.axes[0].get_lines() if h.get_gid()}
        one_shot = [a for a in colours if a.startswith("baseline_") and "@k" not in a]
        assert len({str(colours[a]) for a in one_shot}) > 1, "every one-shot model in one colour"
    finally:
        plt.close(fig)


def test_fig3h_draws_the_design_that_holds_two_skills():
    """The README's lead figure asks which design holds several skills: it draws the lineage study's designs, the
    only one that holds two among them (``continue_archive``). Planted: the skill-combining study's rows alone lack it."""
    from lib.society.studies.skills import figures as skills_figures
    d = skills_figures.load_data("cpu")
    if d.get("lineage") is None:
        pytest.skip("no lineage data at cpu scale")

    def rows_drawn(fig) -> set[str]:
        return {t.get_text().split(" (n=")[0] for t in fig.axes[0].get_yticklabels()}
    fig = skills_figures.draw_panel("fig3h_skills_chosen_agent", d)
    old = skills_figures.draw_chosen_agent(d["rows"], d["families"])
    try:
        assert {"continue", "continue_archive", "continue@higher"} <= rows_drawn(fig)
        assert "continue_archive" not in rows_drawn(old)
        assert legibility.small_texts(fig) == []
    finally:
        plt.close(fig)
        plt.close(old)
    files = " ".join(d["files"])
    assert "society_lineage/continue_archive_s" in files and "society_lineage/baseline_" not in files


def test_the_check_catches_a_title_wrapped_inside_a_phrase_and_s3i_has_none(cpu):
    """Planted: S3i's title as textwrap broke it ("... (it counts in the" / "pooled row)"); style.wrap_phrases
    breaks between phrases, and the drawn S3i has no line that opens a bracket it does not close."""
    note = ("strings not drawn: the children's parents score 0.001 on the novel region, no skill to lose (largest "
            "mean step over arms: 0.002) (it counts in the pooled row)")
    fig = plt.figure()
    fig.suptitle("\n".join(textwrap.wrap(note, 150, break_long_words=False)))  # as S3i was drawn (150 characters)
    assert legibility.titles_broken_inside_a_phrase(fig) == ["strings not drawn: the children's parents score 0.",
                                                            "pooled row)"]
    fig.suptitle("\n".join(style.wrap_phrases(note, 150)))
    assert legibility.titles_broken_inside_a_phrase(fig) == []
    plt.close(fig)
    assert all(len(line) <= 40 for line in style.wrap_phrases(note, 40)[:-1] if "(" not in line)
    # planted: a phrase that starts a line keeps its "; ", so the next one joined to it follows a space (S3o's title
    # read "n seeds beside each arm;right of each panel")
    assert style.wrap_phrases("aaa; bbb; ccc", 9) == ["aaa;", "bbb; ccc"]
    fig = society_results.draw_skill_loss(cpu["rows"], cpu["families"], generation="first")
    try:
        assert legibility.titles_broken_inside_a_phrase(fig) == []
    finally:
        plt.close(fig)




def test_a_legend_under_7_pt_at_the_readme_width_is_caught():
    """Planted: fig3g's old legend (7 pt beside three panels, ~8 px at the README's width) is caught, the same legend
    at 8.5 pt below the panels is not."""
    fig, axes = plt.subplots(1, 3, figsize=(12.4, 3.8))
    for k in range(16):
        axes[0].plot([0, 1], [k, k], label=f"design {k} (n = 16)")
    fig.legend(*axes[0].get_legend_handles_labels(), loc="center left", bbox_to_anchor=(1.0, 0.5), fontsize=7)
    assert legibility.readme_legend_sizes(fig)[0][1] < 7
    plt.close(fig)
    fig, axes = plt.subplots(1, 3, figsize=(10.6, 5.4))
    for k in range(16):
        axes[0].plot([0, 1], [k, k], label=f"design {k} (n = 16)")
    fig.legend(*axes[0].get_legend_handles_labels(), loc="lower center", ncol=4, fontsize=8.5)
    assert legibility.readme_legend_sizes(fig)[0][1] >= 7
    plt.close(fig)


def test_text_under_7_pt_at_the_readme_width_is_caught_where_the_page_check_lets_it_pass():
    """Planted: S3o as it was, ten rows of "p=…, n=…" at 7 pt beside each of three panels, 10.75 in wide. The page
    check (small_texts: 110 dpi in a 1200 px column) shows it at 8.0 pt and lets it pass, which is why S3o passed; at
    the README's 830 px it reads at 5.8 pt (~8 px) and readme_small_texts catches it. The same rows at 8 pt in a figure
    8.4 in wide (S3o now: n beside each arm, only p right of each panel) pass both."""
    def s3o_like(width: float, pt: float, text: str):
        fig, axes = plt.subplots(1, 3, figsize=(width, 3.0), sharey=True)
        for ax in axes:
            for k in range(10):
                ax.annotate(text, (1.0, k), xycoords=("axes fraction", "data"), xytext=(3, 0),
                            textcoords="offset points", va="center", fontsize=pt)
            ax.set_ylim(-0.6, 9.6)
            ax.tick_params(labelsize=pt)
        axes[0].set_yticks(range(10), [f"arm {k}" for k in range(10)], fontsize=pt)
        fig.tight_layout(w_pad=5.5)
        return fig
    old = s3o_like(10.75, 7, "p=1.0e-04, n=32")
    assert legibility.small_texts(old) == []
    assert ("p=1.0e-04, n=32", pytest.approx(5.8, abs=0.15)) in legibility.readme_small_texts(old)
    plt.close(old)
    new = s3o_like(8.4, 8, "p=1.0e-04")
    assert legibility.small_texts(new) == [] and legibility.readme_small_texts(new) == []
    plt.close(new)


README_WIDTH_PANELS = ["S3o_study_skill_loss"]  # besides the README's own panels, whose legends are checked below


@pytest.mark.parametrize("scale", ["smoke", "cpu"])
@pytest.mark.parametrize("name", README_WIDTH_PANELS)
def test_s3o_reads_at_the_readme_width(name, scale):
    """S3o's every text (its "p=…" beside each of its 120 rows, tick labels, titles) is 7 pt or more where the saved
    PNG is shown 830 px wide; it was 5.8 pt (p, n and tick labels) and 6.6 pt (titles)."""
    data = _panel_data(society_study.EXPERIMENT, scale)
    if data is None:
        pytest.skip(f"no society study data at {scale} scale")
    fig = society_study.draw_panel(name, data)
    try:
        small = legibility.readme_small_texts(fig)
        assert small == [], (name, len(small), small[:3])
    finally:
        plt.close(fig)


# ----------------------------------------------------------------------------- 13. every panel the README or a page shows


SHOWN_PANELS = sorted({n for f in (REPO_ROOT / "README.md", *sorted((REPO_ROOT / "docs").glob("*.md")))
                       for n in re.findall(r"figures/cpu/(\w+)\.png", f.read_text())})


@pytest.mark.parametrize("scale", ["smoke", "cpu"])
@pytest.mark.parametrize("name", SHOWN_PANELS)
def test_every_panel_the_readme_or_a_page_shows_reads_in_its_column(name, scale):
    """Every panel whose PNG the README or a page of docs/ shows (~830 px wide): every text 7 pt or more there (Fig. 3a's
    and 3i's were 5.2–6.5 pt), no two texts' boxes overlapping, every axis that shows tick labels labelled (its own or
    a shared axis's label: Fig. 3a (b) and S3g (b, c) had no x label), and every name placed beside a marker within
    6 pt of its marker's edge, nearer it than any other marker and over none (Fig. 3i's "continue_archive (8)" lay over
    three other markers, "crossover_archive (16)" 21 pt off its own)."""
    data = _panel_data(plots.panels()[name], scale)
    if data is None:
        pytest.skip(f"no data for {name} at {scale} scale")
    fig = style.draw_panel(plots.module(plots.panels()[name]).PANELS, name, data)
    if fig is None:
        pytest.skip(f"{name}: its data are absent at {scale} scale")
    try:
        small = legibility.readme_small_texts(fig)
        assert small == [], (name, len(small), small[:3])
        assert legibility.text_overlaps(fig) == [], (name, legibility.text_overlaps(fig)[:3])
        assert legibility.unlabelled_axes(fig) == [], (name, legibility.unlabelled_axes(fig))
        for ax in fig.axes:
            assert legibility.labels_away_from_their_markers(fig, ax) == [], (name, ax.get_title())
            assert legibility.labels_over_markers(fig, ax) == [], (name, ax.get_title())
    finally:
        plt.close(fig)


def _fig3i_old_name(ax, fig):
    """Fig. 3i (b)'s old defect, planted: continue_archive's name ended 5 pt left of its marker (1.3e4 steps, two
    skills), its text running back over the markers of two one-shot models at 2e3 (their edges, not their centres)."""
    ax.set_xscale("log")
    ax.set_xlim(30, 5e4)
    ax.set_ylim(-0.1, 3.1)
    ax.plot([13416], [2.0], marker="P", ms=8, ls="", gid="continue_archive")
    ax.plot([2100], [2.0], marker="<", ms=8, ls="", gid="baseline_continue_all")
    ax.plot([2300], [2.0], marker="h", ms=8, ls="", gid="baseline_distill_all@lineage")
    fig.canvas.draw()
    return ax.annotate("continue_archive (8)", (13416, 2.0), xytext=(-5, 3), textcoords="offset points",
                       ha="right", fontsize=9)


def test_the_label_checks_catch_a_name_away_from_or_over_a_marker():
    """Planted, each caught: a name whose text runs over two other markers but not their centres (the old check,
    centres only, let Fig. 3i (b) pass), a name 27 pt off its marker (Fig. 3i's "crossover_archive (16)", 21 pt), a
    name anchored where no marker is; their mends pass, and a name far off but joined to its marker by a leader line."""
    fig, ax = plt.subplots(figsize=(5.5, 4.5))
    name = _fig3i_old_name(ax, fig)
    over = ["continue_archive (8) over baseline_continue_all", "continue_archive (8) over baseline_distill_all@lineage"]
    assert legibility.labels_over_markers(fig, ax) == over
    away = legibility.labels_away_from_their_markers(fig, ax)
    assert [a.split(":")[1].split(" pt from ")[1] for a in away] == [
        "baseline_continue_all's marker (its own", "baseline_distill_all@lineage's marker (its own"], away
    name.remove()
    ax.annotate("continue_archive (8)", (13416, 2.0), xytext=(5, 27), textcoords="offset points", fontsize=9)
    assert legibility.labels_away_from_their_markers(fig, ax) == ["continue_archive (8): 21 pt from its marker"]
    ax.texts[-1].remove()
    ax.annotate("continue_archive (8)", (13416, 2.0), xytext=(0, 7), textcoords="offset points", ha="center",
                fontsize=9)
    ax.annotate("niche (16)", (1000, 0.6), fontsize=9)
    assert legibility.labels_away_from_their_markers(fig, ax) == ["niche (16): anchored on no marker"]
    ax.texts[-1].remove()
    assert legibility.labels_away_from_their_markers(fig, ax) == [] and legibility.labels_over_markers(fig, ax) == []
    ax.texts[-1].remove()
    ax.annotate("continue_archive (8)", (13416, 2.0), xytext=(0, 30), textcoords="offset points", ha="center",
                fontsize=9, arrowprops={"arrowstyle": "-"})
    assert legibility.labels_away_from_their_markers(fig, ax) == []
    plt.close(fig)


def test_the_text_and_axis_checks_catch_an_overlap_and_an_unlabelled_axis():
    """Planted: two names overwriting each other; a y axis with tick labels and no label (Fig. 3j (b)'s); a row
    of panels sharing y labelled once passes, and the labels of ticks outside the view are not read (S3b's −0.2)."""
    fig, (a, b) = plt.subplots(1, 2, figsize=(6, 3), sharey=True)
    a.set(xlabel="round", ylabel="accuracy")
    b.set_xlabel("round")
    a.text(0.2, 0.5, "no_grounding (32)")
    a.text(0.25, 0.5, "soup (16)")
    assert legibility.text_overlaps(fig) == [("no_grounding (32)", "soup (16)")]
    assert legibility.unlabelled_axes(fig) == []
    plt.close(fig)
    fig, (a, b) = plt.subplots(1, 2, figsize=(6, 3))
    a.set(xlabel="round", ylabel="accuracy", yticks=[-0.2, 0.4], ylim=(0, 1))
    b.set_xlabel("round")
    b.set_title("(b) answers kept", loc="left")
    assert legibility.unlabelled_axes(fig) == ["(b) answers kept: y"]
    assert legibility.text_overlaps(fig) == []
    plt.close(fig)


@pytest.mark.parametrize("scale", ["smoke", "cpu"])
def test_fig3g_draws_every_marker_at_its_value_and_none_on_another(scale):
    """Fig. 3g stacked 3–6 markers on one spot at x = 0 (strings: inherit_merge, verified and DARE-TIES) and set its
    references "side by side" by shifting them, which drew the bare base (0 in every family) at a skill of ~0.004 on
    the symlog axis. Now no two markers lie on one spot, each is drawn at its value (no shift), the symlog axes hold no
    point at 0, and every point at exactly 0, the bare base among them, stands in the column at 0 left of its panel."""
    data = _panel_data(society_study.EXPERIMENT, scale)
    if data is None:
        pytest.skip(f"no society study data at {scale} scale")
    fig = society_study.draw_panel("fig3g_study_skill_vs_accuracy", data)
    families = data["families"]
    pts = society_study.skill_points(data["rows"], families)
    one_shot = pts["arm"].map(is_baseline)
    drawn = pts[(~one_shot & pts["arm"].map(society_study.is_design) & pts["when"].isin(["generation 1", "last"]))
                | (one_shot & (pts["when"] == "last"))]
    base = data["rows"][(data["rows"]["agent"] == -1) & (data["rows"]["generation"] == 0)]
    try:
        for ax in fig.axes:
            assert legibility.stacked_markers(fig, ax) == [], (ax.get_label(), legibility.stacked_markers(fig, ax))
        assert legibility.markers_off_their_values(fig) == []
        zero = [ax for ax in fig.axes if ax.get_label().endswith("kept none")]
        main = [ax for ax in fig.axes if ax.get_xscale() == "symlog"]
        assert len(zero) == len(main) == len(families)
        for z, ax, fam in zip(zero, main, families):
            xs = np.concatenate([np.asarray(c.get_offsets(), float)[:, 0] for c in ax.collections] or [np.zeros(0)])
            assert np.all(xs > 0), fam
            base_zero = base[base["metric"] == f"base_test_{fam}_novel"]["value"].mean() == 0
            founders_zero = float(pts.loc[pts["when"] == "founders", fam].mean()) == 0
            want = int((drawn[fam] == 0).sum()) + base_zero + founders_zero
            assert sum(len(c.get_offsets()) for c in z.collections) == want, fam
            assert ("bare base" in [c.get_label() for c in z.collections]) == base_zero, fam
    finally:
        plt.close(fig)
