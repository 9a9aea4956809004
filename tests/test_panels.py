"""One way to save panels (lib.style.Panel / save_panels), no import circle in lib/plots, an
INDEX.md whose every link works, and the figure defects fixed in the drawing code."""
from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from pathlib import Path

import matplotlib
import numpy as np
import pandas as pd
import pytest

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402

from lib import provenance  # noqa: E402
from lib.core import stats  # noqa: E402
from lib.core.paths import REPO_ROOT  # noqa: E402
from lib.operators import figures as operators
from lib.program_search import figures as program_search
from lib.society.studies.verdict import figures as society
from lib.society.studies.diagnostics import figures as society_diagnostics
from lib import style
from lib.tool_mutation import figures as tool_mutation  # noqa: E402

COLS = ["experiment", "arm", "seed", "generation", "agent", "selected", "conformity", "score", "metric", "value"]


def test_society_diagnostics_never_imports_society():
    tree = ast.parse((REPO_ROOT / "lib/society/studies/diagnostics/figures.py").read_text())
    bad = [ast.unparse(n) for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)
           and ((n.module or "") == "lib.society.studies.verdict.figures"
                or (n.module == "lib.society.studies.verdict" and any(a.name == "figures" for a in n.names)))]
    assert not bad, bad
    code = ("import sys, lib.society.studies.diagnostics.figures; "
            "print('lib.society.studies.verdict.figures' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
    # plots.society appends the diagnostics' panels after its own
    names = [p.name for p in society.PANELS]
    assert names[-len(society_diagnostics.PANELS):] == [p.name for p in society_diagnostics.PANELS]


@pytest.mark.parametrize("mod", [operators, tool_mutation, program_search, society])
def test_every_plots_module_declares_its_panels_once(mod):
    assert mod.PANELS and all(isinstance(p, style.Panel) for p in mod.PANELS)
    names = [p.name for p in mod.PANELS]
    assert len(names) == len(set(names))
    src = Path(mod.__file__).read_text()
    assert src.count("save_figure(") == 0 and "save_panels(" in src, "draw_all must be one save_panels call"


@pytest.fixture(scope="module")
def smoke_index(tmp_path_factory):
    """operators, tool mutation and program search drawn at the smoke scale into a scratch figures/."""
    root = tmp_path_factory.mktemp("figs")
    mp = pytest.MonkeyPatch()
    mp.setenv("GE_FIGURES_DIR", str(root))
    saved = {m.EXPERIMENT: m.draw_all("smoke") for m in (operators, tool_mutation, program_search)}
    index = provenance.write_index("smoke")
    yield {"root": root / "smoke", "saved": saved, "index": index,
           "json": json.loads((root / "smoke" / "index.json").read_text())}
    mp.undo()


def test_index_records_data_and_configs_relative_to_the_repository(smoke_index):
    idx = smoke_index["json"]
    assert set(idx) == {n for names in smoke_index["saved"].values() for n in names}
    for name, e in idx.items():
        configs = [e["config"]] if isinstance(e["config"], str) else e["config"]
        assert e["data"] and configs, name
        for p in e["data"] + configs:
            assert not Path(p).is_absolute() and (REPO_ROOT / p).is_file(), (name, p)


def test_every_link_of_index_md_works_from_its_folder(smoke_index):
    index = smoke_index["index"]
    text = index.read_text()
    targets = re.findall(r"\]\(([^)]+)\)", text) + re.findall(r'(?:href|src)="([^"]+)"', text)
    assert len(targets) > 5 * len(smoke_index["json"])  # files, data, config, manifest, notebook per panel
    missing = sorted({t for t in targets if not (index.parent / t).exists()})
    assert not missing, missing
    rows = [ln for ln in text.splitlines() if ln.startswith("| `")]
    assert len(rows) == len(smoke_index["json"])
    for ln in rows:
        name = ln.split("`")[1]
        assert f'<img src="{name}.png"' in ln, name  # a thumbnail of the panel
        assert "configs/" in ln.split(" | ")[4], name  # the panel's config, linked


def test_stats_tables_print_p_through_format_p(smoke_index):
    for mod in (operators, tool_mutation, program_search):
        t = mod.stats_table("smoke")
        for p in t["p"]:
            assert isinstance(p, str) and (p == "n/a" or stats.format_p(float(p)) == p), (mod.EXPERIMENT, p)


def _summary(refs, n):
    rows = [{"arm": a, "reference": r, "n": n, "mean": 0.1 * k, "p": 0.5} for k, (a, r) in enumerate(refs.items())]
    pts = pd.DataFrame([{"arm": a, "seed": s, "diff": 0.1 * k + 0.01 * s} for k, a in enumerate(refs) for s in range(n)])
    summ = pd.DataFrame(rows)
    for i, a in enumerate(summ["arm"]):
        lo, hi = stats.sign_flip_ci(pts.loc[pts.arm == a, "diff"].to_numpy())
        summ.loc[i, ["lo", "hi"]] = lo, hi
    return pts, summ


def test_paired_panel_names_each_columns_reference_and_draws_an_interval_only_from_six_pairs():
    refs = {"full@e1": "full", "no_sex": "full", "no_sex@e1": "full@e1"}
    for n in (4, 8):
        pts, summ = _summary(refs, n)
        fig, ax = plt.subplots()
        style.paired_difference_panel(ax, pts, summ, group="arm", order=list(refs), ylabel="acc")
        ticks = [t.get_text() for t in ax.get_xticklabels()]
        assert [t.splitlines()[-1] for t in ticks] == ["− full", "− full", "− full@e1"]
        bars = [ln for ln in ax.get_lines() if len(ln.get_xdata()) == 2 and ln.get_xdata()[0] == ln.get_xdata()[1]]
        if n < 6:
            assert not bars and "no 95 % interval with n < 6" in ax.get_title(loc="left")
        else:
            assert len(bars) == 3 and stats.SIGN_FLIP_CI in ax.get_title(loc="left")
            lo, hi = summ.loc[0, ["lo", "hi"]]
            assert any(np.allclose(b.get_ydata(), [lo, hi]) for b in bars)
        annotations = [t.get_text() for t in ax.texts]
        assert all(a.startswith("p=0.5") for a in annotations)
        plt.close(fig)


def test_fig1e_shows_every_qd_parent_of_the_population():
    data = operators.load_data("smoke")
    cfg = data["config"]
    seed = int(data["agents"]["seed"].min())
    parents = operators.qd_parents(data["agents"], data["distance"], seed, n_parents=cfg["n_parents"], lam=cfg["lam"])
    assert len(parents) == cfg["n_parents"] == len(set(parents))
    paired = data["pairs"][data["pairs"].seed == seed]
    assert set(paired.a) | set(paired.b) <= set(parents)
    fig = operators.pairs_panel(data["pairs"], data["distance"], seed, data["agents"],
                                n_parents=cfg["n_parents"], lam=cfg["lam"])
    assert [int(t.get_text()) for t in fig.axes[0].get_yticklabels()] == parents
    plt.close(fig)


def _run(arm, seeds, gens=3, shift=0.0):
    rows = []
    for s in seeds:
        for t in range(gens):
            for a in range(3):
                v = 0.4 + 0.05 * t + 0.1 * s + shift + 0.01 * a
                rows.append(dict(zip(COLS, ("society", arm, s, t, a, a == 0, 0.5, 0.5, "test_overall", v))))
                rows.append(dict(zip(COLS, ("society", arm, s, t, a, a == 0, 0.5, 0.5, "val_overall", v))))
                rows.append(dict(zip(COLS, ("society", arm, s, t, a, a == 0, 0.5, 0.5, "val_half_a", v))))
    return rows


def test_a_variant_is_compared_with_its_reference_on_its_own_seeds():
    # full on seeds 0-3, full@e1 on seeds 0-1: the seed effect (+0.1 per seed) must not pass for an effect
    df = pd.DataFrame(_run("full", range(4)) + _run("full@e1", range(2), shift=0.02), columns=COLS)
    fig = society.draw_metric_paired(df, "test_overall", ylabel="test accuracy")
    lines = {ln.get_label(): ln for ln in fig.axes[0].get_lines()}
    same = [k for k in lines if k.startswith("full, seeds 0, 1")]
    assert same, list(lines)
    want = df[(df.arm == "full") & (df.seed < 2) & (df.metric == "test_overall")].groupby("generation")["value"].mean()
    np.testing.assert_allclose(lines[same[0]].get_ydata(), want.to_numpy())
    plt.close(fig)
    fig = society_diagnostics.draw_elitism(df)
    full = {ln.get_label(): ln for ln in fig.axes[0].get_lines()}["full"]
    np.testing.assert_allclose(full.get_ydata(), want.to_numpy())  # S3g(a): full on full@e1's seeds
    plt.close(fig)


def test_trajectory_panels_leave_out_baseline_arms():
    df = pd.DataFrame(_run("full", range(2)) + _run("no_sex", range(2), shift=-0.05), columns=COLS)
    base = df[(df.arm == "full") & (df.generation == 0)].assign(arm="baseline_base")
    df = pd.concat([df, base], ignore_index=True)
    assert society.is_baseline("baseline_base") and not society.is_baseline("full")
    assert society.arms_in(df)[-1] == "baseline_base"
    for fig in (society.draw_metric(df, "test_overall", ylabel="acc"),
                society.draw_metric_paired(df, "test_overall", ylabel="acc"),
                society.draw_metric_multiples(df, "test_overall", ylabel="acc", what="acc")):
        labels = [ln.get_label() for ax in fig.axes for ln in ax.get_lines()]
        assert "full" in labels and not any("baseline" in lb for lb in labels)
        plt.close(fig)


def test_corrected_is_drawn_under_its_equivalent_methods_with_its_band():
    rows = program_search.load_data("smoke")["rows"]
    fig = program_search.heldout_by_generation(rows)
    lines = {ln.get_label(): ln for ln in fig.axes[0].get_lines()}
    ref = lines["corrected"]
    for m in program_search.EQUIVALENT:
        eq = lines[f"{m} (= corrected)"]
        assert ref.get_linewidth() > eq.get_linewidth() and ref.get_zorder() < eq.get_zorder()
    assert fig.axes[0].collections, "no 95 % CI (t) band for corrected"
    assert "span only" in " ".join(fig.axes[0].get_title(loc="left").split())  # the title is wrapped
    plt.close(fig)


def test_every_baseline_the_seed_grid_tuned_is_marked_as_such():
    """The first verdict's panels name task arithmetic, TIES and DARE-TIES "(seed grid)": each chose its
    hyperparameters on the seed grid (lib.society.baselines.grid_of). Planted: the old list (TIES and DARE-TIES
    only) leaves task arithmetic unmarked."""
    from lib.society.baselines import grid_of
    from lib.society.studies.verdict import panels as vp
    tuned, old_list = set(grid_of("seed")), {"baseline_ties", "baseline_dare_ties"}
    assert "baseline_task_arithmetic" in tuned and not tuned <= old_list  # the planted gap
    assert tuned <= set(vp.SEED_GRID)
    for arm in tuned:
        assert vp.seed_grid_name(vp.short_name(arm)).endswith(vp.SEED_GRID_NOTE), arm
