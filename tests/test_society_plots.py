"""Fig. 3 panels show what the smoke rows hold (per-arm means, paired differences, edges, sweep); missing data is a clear error."""
from __future__ import annotations

import matplotlib
import numpy as np
import pandas as pd
import pytest

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402

import figcheck  # noqa: E402
from figcheck import assert_png_drawn  # noqa: E402
from lib.core.paths import REPO_ROOT, figures_dir  # noqa: E402
from lib.society import data as society_data  # noqa: E402
from lib.society.studies.verdict import figures as plots  # noqa: E402
from lib.society.studies.study import figures as study_plots  # noqa: E402
from lib import style  # noqa: E402


def _two_seeds(df: pd.DataFrame) -> pd.DataFrame:
    """The smoke rows (one seed) plus a second seed whose values and conformities are halved."""
    other = df.assign(seed=df["seed"] + 1, value=df["value"] * 0.5, conformity=df["conformity"] * 0.5)
    return pd.concat([df, other], ignore_index=True)


def _population_mean(df: pd.DataFrame, metric: str, arm: str) -> pd.Series:
    """Mean over agents per (seed, generation), then over seeds: generation -> value."""
    d = df[(df["metric"] == metric) & (df["arm"] == arm)]
    return d.groupby(["seed", "generation"])["value"].mean().groupby("generation").mean()


def _last_generation(df: pd.DataFrame, metric: str) -> pd.Series:
    """(arm, seed) -> mean over agents of ``metric`` at that run's last generation."""
    pm = df[df["metric"] == metric].groupby(["arm", "seed", "generation"])["value"].mean().reset_index()
    last = pm[pm["generation"] == pm.groupby(["arm", "seed"])["generation"].transform("max")]
    return last.set_index(["arm", "seed"])["value"]


def _check_curves(ax, df, metric, expected=_population_mean):
    drawn = figcheck.lines(ax)
    arms = plots.trajectory_arms(df)  # the baselines (one model each, no generations) have no curve
    assert set(arms) <= set(figcheck.legend_labels(ax)), metric
    assert not set(plots.arms_in(df)) - set(arms) & set(figcheck.legend_labels(ax)), metric
    for arm in arms:
        want = expected(df, metric, arm)
        ln = drawn[arm]
        np.testing.assert_allclose(ln.get_xdata(), want.index, err_msg=f"{metric} {arm}")
        np.testing.assert_allclose(ln.get_ydata(), want.to_numpy(), rtol=1e-9, err_msg=f"{metric} {arm}")
        assert figcheck.same_colour(ln.get_color(), style.colour(arm)), arm


def _selected_conformity(df, metric, arm):
    d = df[(df["metric"] == "val_overall") & (df["arm"] == arm) & (df["selected"].astype(str) == "True")]
    return d.groupby(["seed", "generation"])["conformity"].mean().groupby("generation").mean()


@pytest.fixture(scope="module")
def smoke():
    return plots.load_data("smoke")


def test_metric_panels_plot_the_population_mean_over_seeds_per_arm(smoke):
    df = _two_seeds(smoke["rows"])
    assert set(plots.trajectory_arms(df)) >= {"full", "no_grounding", "no_sex", "no_diversity"}
    assert {a for a in plots.arms_in(df) if a.startswith("baseline_")}  # present in the rows, left out of the curves
    for metric in ("test_overall", "consensus_acc", "diversity_behav"):
        fig = plots.draw_metric(df, metric, ylabel=metric)
        _check_curves(fig.axes[0], df, metric)
        assert fig.axes[0].get_ylabel() == metric and "n = 2 seeds" in fig.axes[0].get_title()
        plt.close(fig)
    fig = plots.draw_metric(df, "selected_conformity", ylabel="conformity of parents")
    _check_curves(fig.axes[0], df, "selected_conformity", _selected_conformity)
    plt.close(fig)


def test_families_panel_has_one_axes_per_family(smoke):
    df = _two_seeds(smoke["rows"])
    fig = plots.draw_families(df)
    assert sorted(ax.get_title() for ax in fig.axes) == ["arith", "lists", "strings"]  # not the regions
    for ax in fig.axes:
        drawn = figcheck.lines(ax)
        for arm in plots.trajectory_arms(df):
            want = _population_mean(df, f"test_{ax.get_title()}", arm)
            np.testing.assert_allclose(drawn[arm].get_ydata(), want.to_numpy(), rtol=1e-9)
    plt.close(fig)


def test_paired_panel_draws_each_seeds_difference_from_its_reference(smoke):
    df = _two_seeds(smoke["rows"])
    for metric in ("test_overall", "consensus_acc"):
        fig = plots.draw_metric_paired(df, metric, ylabel=metric)
        assert len(fig.axes) == 2
        _check_curves(fig.axes[0], df, metric)
        last = _last_generation(df, metric)
        arms = plots.trajectory_arms(df)
        # full@breeding, full run again beside the breeding arms, is a reproduction check said in (b)'s title,
        # not a column
        want = sorted(last[(a, sd)] - last[(plots.arm_reference(a, arms), sd)]
                      for a in arms if plots.arm_reference(a, arms) and a != plots.BESIDE for sd in (0, 1))
        dots = np.sort(figcheck.points(fig.axes[1])[:, 1])
        assert len(want) == 2 * (len(arms) - 1 - (plots.BESIDE in arms)) == len(dots), metric
        assert plots.BESIDE not in arms or plots.BESIDE in fig.axes[1].get_title(loc="left")
        np.testing.assert_allclose(dots, want, atol=1e-12, err_msg=metric)
        plt.close(fig)
    last = plots.last_generation_table(smoke["rows"])
    assert set(last.columns) == {"arm", "seed", "value"} and last.value.between(0, 1).all()


def test_lineage_draws_every_parent_edge_and_marks_the_selected(smoke):
    df = smoke["rows"]
    fig = plots.draw_lineage(df)
    ax = fig.axes[0]
    seed = int(df.seed.min())
    assert ax.get_title() == f"full, seed {seed}"
    run = df[(df.arm == "full") & (df.seed == seed)]
    par = plots.parents_table(run)
    edges = {((r.generation - 1, p), (r.generation, r.agent)) for r in par.itertuples() for p in {r.parent_a, r.parent_b}}
    assert edges, "the smoke run has no recorded parents"
    segs = {tuple(map(tuple, np.column_stack([ln.get_xdata(), ln.get_ydata()]).astype(float)))
            for ln in ax.get_lines() if len(ln.get_xdata()) == 2}
    missing = {e for e in edges if (tuple(map(float, e[0])), tuple(map(float, e[1]))) not in segs}
    assert not missing, f"parent -> child edges not drawn: {sorted(missing)}"
    agents = run[run.metric == "val_overall"]
    black = [c for c in ax.collections
             if len(c.get_facecolors()) and figcheck.same_colour(c.get_facecolors()[0], "black")]
    sel = agents[agents.selected.astype(str) == "True"]
    assert len(black) == 1 and sorted(map(tuple, black[0].get_offsets())) == sorted(zip(sel.generation, sel.agent))
    plt.close(fig)


def test_g_sweep_plots_each_seed_and_the_mean_per_knob_value():
    study = study_plots.load_data("smoke")
    sweep = society_data.grounding_sweep(study["rows"], study["g"])
    assert sweep is not None, "the smoke study has a grounding-knob arm"
    assert set(sweep.loc[sweep["borrowed"], "arm"]) == {"full@g0.5"}  # full itself, named by the reader
    fig = study_plots.draw_g_sweep(sweep)
    ax = fig.axes[0]
    last = _last_generation(sweep, "test_overall").reset_index()
    last["g"] = [float(a.rpartition("@g")[2]) for a in last["arm"]]
    mean = last.groupby("g")["value"].mean()
    knob = sorted(float(a.rpartition("@g")[2]) for a in set(study["rows"]["arm"]) if a.startswith("full@g"))
    assert knob and list(mean.index) == sorted(knob + [0.5])  # 0.5 is the study's full arm on the knob's seeds
    assert (f"g = {', '.join(f'{g:g}' for g in knob)}: the sweep's runs; g = 0.5: the study's own full, run at the "
            "config's g on the same seeds") in ax.get_title()
    means = [ln for ln in ax.get_lines() if len(ln.get_xdata()) == len(mean) and np.allclose(ln.get_xdata(), mean.index)]
    assert any(np.allclose(ln.get_ydata(), mean.to_numpy()) for ln in means), "no line through the means"
    dots = figcheck.points(ax)
    assert sorted(map(tuple, dots)) == sorted(zip(last.g, last.value))
    assert "mean" in " ".join(figcheck.legend_labels(ax)) and ax.get_xlabel().startswith("grounding knob g")
    plt.close(fig)


def test_a_saved_panel_is_a_drawn_png_in_the_arms_colours(smoke):
    fig = plots.draw_metric(smoke["rows"], "test_overall", ylabel="test accuracy")
    png = [f for f in style.save_figure(fig, "fig3x_test", scale="smoke", caption="c") if f.suffix == ".png"][0]
    plt.close(fig)
    assert png.parent == figures_dir("smoke") and not png.is_relative_to(REPO_ROOT)  # conftest: a tmp folder
    for arm in ("full", "no_grounding"):
        assert_png_drawn(png, min_ink=0.01, colour=style.colour(arm))


def test_missing_data_names_the_command(monkeypatch, tmp_path):
    monkeypatch.setattr(society_data, "data_dir", lambda scale, exp: tmp_path / scale / exp)
    with pytest.raises(FileNotFoundError, match="configs/society/cpu.yaml"):
        plots.load_data("cpu")


def _rows(records):
    cols = ["experiment", "arm", "seed", "generation", "agent", "selected", "conformity", "score", "metric", "value"]
    return pd.DataFrame([dict(zip(cols, r)) for r in records])


def test_parents_are_decoded_in_lib():
    assert plots.decode_parents(403.0) == (4, 3) and plots.decode_parents(5) == (0, 5)
    df = _rows([("society", "full", 0, 1, 0, False, None, None, "parents", 102.0),
                ("society", "full", 0, 1, 1, False, None, None, "parents", 303.0),
                ("society", "full", 0, 1, 2, False, None, None, "test_overall", 0.5)])
    t = plots.parents_table(df)
    assert t[["parent_a", "parent_b", "copy"]].values.tolist() == [[1, 2, False], [3, 3, True]]
    assert plots.parents_wide(df).loc[("full", 0, 1)].tolist() == ["1+2", "3"]


def test_top_chain_follows_the_better_scoring_parent():
    # gen 2 agent 0 <- (0, 1) of gen 1; gen 1 agent 1 (score .9) <- (2, 2) of gen 0
    rec = [("society", "full", 0, 2, 0, False, None, None, "parents", 1.0),
           ("society", "full", 0, 1, 0, False, None, None, "parents", 1.0),
           ("society", "full", 0, 1, 1, False, None, None, "parents", 202.0)]
    sc = {(1, 0): 0.2, (1, 1): 0.9, (0, 0): 0.5, (0, 1): 0.1, (0, 2): 0.3}
    rec += [("society", "full", 0, t, a, True, 0.5, v, "val_overall", 0.5) for (t, a), v in sc.items()]
    df = _rows(rec)
    par = plots.parents_table(df)
    agents = df[df.metric == "val_overall"]
    assert plots.top_chain(par, agents, 2, 0) == [(2, 0), (1, 1), (0, 2)]
    assert plots.ancestry(par, 2, 0) == {(1, 0, 2, 0), (1, 1, 2, 0), (0, 0, 1, 0), (0, 1, 1, 0), (0, 2, 1, 1)}


def test_variants_are_compared_with_the_reference_of_their_tag():
    arms = ["full", "no_sex", "full@e1", "no_sex@e1", "no_grounding@e1"]
    assert plots.arm_reference("full", arms) is None
    assert plots.arm_reference("no_sex", arms) == "full"
    assert plots.arm_reference("full@e1", arms) == "full"
    assert plots.arm_reference("no_sex@e1", arms) == "full@e1"
    assert plots.arm_reference("no_sex@e2", arms) == "full"
    last = pd.DataFrame({"arm": [a for a in arms for _ in range(3)], "seed": [0, 1, 2] * len(arms),
                         "value": [0.5, 0.6, 0.7, 0.4, 0.5, 0.6, 0.6, 0.7, 0.8, 0.7, 0.8, 0.9, 0.6, 0.7, 0.8]})
    assert plots.arms_in(last) == ["full", "full@e1", "no_grounding@e1", "no_sex", "no_sex@e1"]
    _, summ = plots.paired_vs_reference(last)
    s = summ.set_index("arm")
    assert s.loc["no_sex", "mean"] == pytest.approx(-0.1) and s.loc["no_sex", "reference"] == "full"
    assert s.loc["no_sex@e1", "mean"] == pytest.approx(0.1) and s.loc["no_sex@e1", "reference"] == "full@e1"
    assert s.loc["full@e1", "reference"] == "full"


def test_breeding_arms_are_compared_with_the_full_run_beside_them():
    arms = ["full", "no_grounding", "no_sex", "sex_ties", "full@breeding"]
    assert plots.arm_reference("no_sex", arms) == "full@breeding"
    assert plots.arm_reference("sex_ties", arms) == "full@breeding"
    assert plots.arm_reference("no_grounding", arms) == "full"  # not a breeding arm: the main full
    assert plots.arm_reference("full@breeding", arms) == "full"  # the re-run against the main run
    assert plots.arm_reference("no_sex", ["full", "no_sex"]) == "full"  # no own full: the main one
    # no_sex is 0.1 below the full beside it and 0.2 above the main full: the pairing decides the sign
    last = pd.DataFrame({"arm": [a for a in ("full", "full@breeding", "no_sex") for _ in range(3)],
                         "seed": [0, 1, 2] * 3, "value": [0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.5, 0.6, 0.7]})
    s = plots.paired_vs_reference(last)[1].set_index("arm")
    assert s.loc["no_sex", "mean"] == pytest.approx(-0.1) and s.loc["no_sex", "reference"] == "full@breeding"
    assert s.loc["full@breeding", "mean"] == pytest.approx(0.3)
    from lib import style  # drawn beside full@e1 in Fig. 3a: a look of its own, not full's dashed
    looks = {a: (style.arm_style(a)["color"], style.arm_style(a)["marker"]) for a in ("full", "full@e1", "full@breeding")}
    assert looks["full@breeding"] not in (looks["full"], looks["full@e1"])


def test_the_recombination_folders_own_full_is_read_as_full_at_breeding():
    data = plots.load_data("smoke")
    rows, walls = data["rows"], data["walls"]
    first, beside = society_data.first_verdict_folders("smoke")  # the committed pair, or both re-runs once whole
    own = pd.read_csv(REPO_ROOT / "data" / "smoke" / beside / "full_s0.csv")
    got = rows[rows["arm"] == "full@breeding"]
    assert len(got) == len(own) and set(got["study"]) == {beside}
    assert set(rows.loc[rows["arm"] == "full", "study"]) == {first}  # the main full is not mixed
    main = society_data.shard_walls(sorted((REPO_ROOT / "data" / "smoke" / first).glob("full_s*.csv")))
    assert len(walls[walls["arm"] == "full"]) == len(main)  # the main full's walls alone, not the re-run's too
    assert set(walls.loc[walls["arm"] == "full@breeding", "seed"]) == set(own["seed"])
    # Fig. 3f compares the main run's arms; a breeding arm is compared with its own full in Fig. 3a
    from lib.society.studies.verdict.comparisons import method_scores
    methods = set(method_scores(rows, data["families"])["method"])
    assert "full" in methods and not methods & {"no_sex", "sex_linear", "sex_sum", "sex_ties", "full@breeding"}


def test_a_shard_in_two_folders_is_refused_not_counted_twice(tmp_path, monkeypatch):
    # the main run and the recombination runs both holding no_sex_s0 (a config's arm run in the wrong folder)
    src = REPO_ROOT / "data" / "smoke"
    for exp in ("society", "society_recombination"):
        (tmp_path / exp).mkdir()
        for f in (src / exp).glob("*"):
            (tmp_path / exp / f.name).write_bytes(f.read_bytes())
    (tmp_path / "society" / "no_sex_s0.csv").write_bytes((src / "society_recombination" / "no_sex_s0.csv").read_bytes())
    monkeypatch.setattr(society_data, "data_dir", lambda scale, exp: tmp_path / exp)
    from lib.core.errors import DataMismatchError
    with pytest.raises(DataMismatchError, match="no_sex_s0.csv .* hold the same shard"):
        plots.load_data("smoke")
