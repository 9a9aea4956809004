"""The society's central question (lib.society.studies.verdict.comparisons) on hand-made rows with known answers —
skill retention on the novel region, where it is lost, generalists, the comparison with the field's
merge methods — and their panels (lib.society.studies.verdict.panels): drawn from what the rows hold, skipped
without their data."""
from __future__ import annotations

import json

import matplotlib
import numpy as np
import pandas as pd
import pytest

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402

import figcheck  # noqa: E402
from lib.society.data import first_verdict_folders  # noqa: E402
from lib.society.studies import frames  # noqa: E402
from lib.society.studies.diagnostics import comparisons as dg  # noqa: E402
from lib.society.studies.verdict import comparisons as sr  # noqa: E402
from lib.core import stats  # noqa: E402
from lib.society import data as society_data  # noqa: E402
from lib.society.studies.verdict import figures as plots  # noqa: E402
from lib.society.studies.verdict import panels as sp  # noqa: E402

COLS = ["experiment", "arm", "seed", "generation", "agent", "selected", "conformity", "score", "metric", "value"]
FAMS = ["lists", "strings", "arith"]
NAN = float("nan")


def agent_rows(arm, seed, t, agent, *, score=0.5, **metrics):
    return [dict(zip(COLS, ("society", arm, seed, t, agent, False, 0.5, score, m, v))) for m, v in metrics.items()]


def other_rows(arm, seed, t, agent, **metrics):
    """Rows without selection columns: births (agent ≥ 0) and population rows (agent −1)."""
    return [dict(zip(COLS, ("society", arm, seed, t, agent, False, NAN, NAN, m, v))) for m, v in metrics.items()]


def frame(rows) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=COLS)


# ----------------------------------------------------------------------------- S3h retention


def retention_rows(seeds=range(6)):
    """6 founders (agents 0, 3 specialise in lists; 1, 4 strings; 2, 5 arith); agent 1 (a strings
    specialist) is the best on lists' novel region, so a "best founder" over every founder is wrong."""
    rows = []
    for s in seeds:
        g0 = {0: [0.4, 0.0, 0.0], 1: [0.9, 0.3, 0.0], 2: [0.0, 0.0, 0.2],
              3: [0.6, 0.0, 0.1], 4: [0.0, 0.5, 0.0], 5: [0.0, 0.0, 0.4]}
        for a, v in g0.items():
            rows += agent_rows("full", s, 0, a, **{f"test_{f}_novel": x for f, x in zip(FAMS, v)}, val_overall=0.5)
        rows += other_rows("full", s, 0, -1, **{f"base_test_{f}_novel": 0.05 * s for f in FAMS})
        for a in range(6):  # generation 1: lists' novel skill halves; the best agent keeps 0.5 + 0.01 s
            v = [0.5 + 0.01 * s if a == 2 else 0.1, 0.2, 0.1]
            rows += agent_rows("full", s, 1, a, **{f"test_{f}_novel": x for f, x in zip(FAMS, v)}, val_overall=0.5)
        rows += agent_rows("baseline_soup", s, 1, 0, **{f"test_{f}_novel": 0.3 for f in FAMS}, val_overall=0.5)
    return frame(rows)


def test_skill_retention_reads_each_familys_specialists_and_the_base():
    pts, refs = sr.skill_retention(retention_rows(), FAMS)
    r = refs.set_index(["seed", "family", "reference"])["value"]
    assert r[(0, "lists", "best founder")] == pytest.approx(0.6)  # agents 0, 3 only: not agent 1's 0.9
    assert r[(0, "lists", "specialists' mean")] == pytest.approx(0.5)
    assert r[(2, "strings", "best founder")] == pytest.approx(0.5)
    assert r[(2, "strings", "specialists' mean")] == pytest.approx(0.4)
    assert r[(3, "arith", "base")] == pytest.approx(0.15)
    p = pts.set_index(["arm", "seed", "generation", "family", "statistic"])["value"]
    assert p[("full", 0, 0, "lists", "mean")] == pytest.approx((0.4 + 0.9 + 0.6 + 0.1 * 0) / 6 + 0.0)
    assert p[("full", 0, 0, "lists", "best")] == pytest.approx(0.9)  # the population's best: every agent
    assert p[("full", 4, 1, "lists", "best")] == pytest.approx(0.54)
    assert p[("full", 4, 1, "lists", "mean")] == pytest.approx((0.54 + 5 * 0.1) / 6)
    assert p[("baseline_soup", 1, 1, "arith", "mean")] == p[("baseline_soup", 1, 1, "arith", "best")] == 0.3
    summ = frames.ci_over_seeds(pts, ["arm", "family", "statistic", "generation"], "value")
    one = summ[(summ.arm == "full") & (summ.family == "lists") & (summ.statistic == "best") & (summ.generation == 1)]
    assert one["n"].item() == 6 and one["mean"].item() == pytest.approx(0.525)


def test_retention_gaps_are_paired_by_seed_against_the_right_founders():
    g = sr.retention_gaps(retention_rows(), FAMS)
    g = g.set_index(["arm", "family", "statistic"])
    best = g.loc[("full", "lists", "best")]  # 0.5 + 0.01 s − 0.6 for s = 0..5
    assert best["reference"] == "best founder" and best["n"] == 6
    assert best["mean"] == pytest.approx(np.mean([0.5 + 0.01 * s - 0.6 for s in range(6)]))
    assert best["p"] == pytest.approx(2 / 64)  # all six below 0: the exact sign-flip floor
    assert best["lo"] <= best["mean"] <= best["hi"] < 0
    mean = g.loc[("full", "strings", "mean")]  # 0.2 − (0.3 + 0.5) / 2
    assert mean["reference"] == "specialists' mean" and mean["mean"] == pytest.approx(-0.2)
    assert ("baseline_soup", "lists", "best") in g.index  # a baseline against the founders too


# ----------------------------------------------------------------------------- S3i skill loss


def loss_rows(seeds=range(6)):
    """Per seed, generation 0 → 1 of a sexual arm (children of 0+1 and 1+2, plus an elite) and of
    no_sex (copies). Generation-1 agents carry other values at the parents' indices, so reading the
    parents at the child's generation is wrong."""
    rows = []
    nov = lambda x: {f"test_{f}_novel": x[k] for k, f in enumerate(FAMS)}  # noqa: E731
    src = lambda x: {f"source_test_{f}_novel": x[k] for k, f in enumerate(FAMS)}  # noqa: E731
    for s in seeds:
        for arm in ("full@e1", "no_sex"):
            par = {0: [0.8, 0.0, 0.2], 1: [0.0, 0.6, 0.2], 2: [0.2, 0.2, 0.6]}
            for a, v in par.items():
                rows += agent_rows(arm, s, 0, a, **nov(v), val_overall=0.5)
            if arm == "full@e1":
                kids = {0: ((1, 1), None, [0.0, 0.6, 0.2]),  # the elite: excluded
                        1: ((0, 1), [0.3, 0.2, 0.1 + 0.01 * s], [0.2, 0.1, 0.1]),
                        2: ((1, 2), [0.1, 0.3, 0.3], [0.0, 0.3, 0.2])}
            else:
                kids = {a: ((a, a), par[a], [x - 0.1 for x in par[a]]) for a in range(3)}
            for a, ((pa, pb), merge, child) in kids.items():
                rows += agent_rows(arm, s, 1, a, **nov(child), val_overall=0.5)
                if merge is None:
                    rows += other_rows(arm, s, 1, a, parents=pa * 100 + pb, elite=1.0)
                else:
                    rows += other_rows(arm, s, 1, a, parents=pa * 100 + pb, inherit_n=30.0, **src(merge))
    return frame(rows)


def test_skill_loss_splits_the_merge_from_the_distillation():
    pts, summ = sr.skill_loss(loss_rows(), FAMS)
    assert set(pts.loc[pts.arm == "full@e1", "agent"]) == {1, 2}  # the elite is no bred child
    c = pts[(pts.arm == "full@e1") & (pts.seed == 3) & (pts.agent == 1)].set_index("family")
    assert c.loc["lists", ["parent_a", "parent_b", "merge", "child"]].tolist() == pytest.approx([0.8, 0.0, 0.3, 0.2])
    assert c.loc["lists", "merge − parents' mean"] == pytest.approx(0.3 - 0.4)
    assert c.loc["lists", "merge − best parent"] == pytest.approx(0.3 - 0.8)
    assert c.loc["lists", "child − merge"] == pytest.approx(-0.1)
    assert c.loc["arith", "child − merge"] == pytest.approx(0.1 - 0.13)
    assert c.loc[sr.ALL, "merge"] == pytest.approx(np.mean([0.3, 0.2, 0.13]))
    assert not c.loc["lists", "copy"]
    # no_sex copies: merge − parent is 0 by construction, the distillation loses 0.1 everywhere
    ns = pts[pts.arm == "no_sex"]
    assert ns["copy"].all() and len(ns) == 6 * 3 * (len(FAMS) + 1)
    np.testing.assert_allclose(ns["merge − parents' mean"], 0.0, atol=1e-12)
    np.testing.assert_allclose(ns["merge − best parent"], 0.0, atol=1e-12)
    np.testing.assert_allclose(ns["child − merge"], -0.1, atol=1e-12)
    s = summ.set_index(["arm", "family", "step"])
    arith = s.loc[("full@e1", "arith", "child − merge")]  # children 1, 2: (−0.01 s, −0.1) per seed
    assert arith["n"] == 6
    assert arith["mean"] == pytest.approx(np.mean([(-0.01 * k - 0.1) / 2 for k in range(6)]))
    assert arith["p"] == pytest.approx(2 / 64) and arith["hi"] < 0
    assert s.loc[("no_sex", "lists", "merge − parents' mean"), "p"] == pytest.approx(1.0)
    assert list(summ["step"][:3]) == list(sr.STEPS) and summ["arm"].iloc[0] == "full@e1"


def test_skill_loss_is_empty_without_source_rows():
    rows = loss_rows(range(2))
    rows = rows[~rows["metric"].str.startswith("source_")]
    pts, summ = sr.skill_loss(rows, FAMS)
    assert pts.empty and summ.empty


# ----------------------------------------------------------------------------- S3j generalists


def test_generalists_beat_the_base_strictly_on_at_least_k_families():
    rows = []
    for s in range(3):
        base = {"lists": 0.5, "strings": 0.4 + 0.1 * s, "arith": 0.3}
        rows += other_rows("full", s, 0, -1, **{f"base_test_{f}": v for f, v in base.items()})
        accs = [[0.6, base["strings"] + 0.1, 0.2],  # two families above: a generalist
                [0.6, base["strings"], 0.3],        # ties the base on two: one family only
                [0.4, 0.1, 0.2]]                    # none
        for t in (0, 1):
            for a, v in enumerate(accs[: 3 - t]):   # generation 1 loses agent 2
                rows += agent_rows("full", s, t, a, **{f"test_{f}": x for f, x in zip(FAMS, v)}, val_overall=0.5)
        rows += agent_rows("baseline_ties", s, 1, 0, **{f"test_{f}": 0.9 for f in FAMS}, val_overall=0.5)
    g = sr.generalists(frame(rows), FAMS).set_index(["arm", "seed", "generation", "k"])
    assert g.loc[("full", 1, 0, 2), ["count", "agents"]].tolist() == [1, 3]
    assert g.loc[("full", 1, 0, 1), "count"] == 2 and g.loc[("full", 2, 1, 1), "share"] == pytest.approx(1.0)
    assert g.loc[("baseline_ties", 0, 1, 2), "share"] == 1.0 and g.loc[("baseline_ties", 0, 1, 2), "agents"] == 1
    summ = frames.ci_over_seeds(g.reset_index(), ["arm", "k", "generation"], "share")
    assert summ.set_index(["arm", "k", "generation"]).loc[("full", 2, 1), "mean"] == pytest.approx(0.5)


# ----------------------------------------------------------------------------- Fig. 3f


def comparison_rows(seeds=range(6)):
    """full and no_sex over two generations, two baselines, the base and costs; no_sex's last
    generation ties on val between agents 1 and 2 (their mean is the val-best: no seat wins a tie)."""
    rows = []
    for s in seeds:
        for arm, shift in (("full", 0.0), ("no_sex", -0.05 - 0.01 * s)):
            for a in range(3):
                rows += agent_rows(arm, s, 0, a, val_overall=0.5, test_overall=0.3 + 0.1 * a,
                                   **{f"test_{f}": 0.3 + 0.1 * a for f in FAMS})
            vals = [0.4, 0.7, 0.7] if arm == "no_sex" else [0.9, 0.2, 0.1]
            for a in range(3):
                acc = 0.5 + 0.1 * a + shift
                rows += agent_rows(arm, s, 1, a, val_overall=vals[a], test_overall=acc,
                                   **{f"test_{f}": acc + (0.05 if f == "arith" else 0.0) for f in FAMS})
            rows += other_rows(arm, s, 0, -1, base_test_overall=0.35, **{f"base_test_{f}": 0.35 for f in FAMS})
            rows += other_rows(arm, s, 1, -1, cost_train_steps=100.0, cost_val_evals=40.0 if arm == "full" else 20.0)
        for b, acc in (("baseline_ties", 0.55 + 0.01 * s), ("baseline_soup", 0.6)):
            rows += agent_rows(b, s, 1, 0, val_overall=0.5, test_overall=acc, **{f"test_{f}": acc for f in FAMS})
            rows += other_rows(b, s, 1, -1, cost_train_steps=60.0, cost_val_evals=0.0 if b == "baseline_soup" else 9.0)
    return frame(rows)


def test_comparison_pairs_every_method_with_full_by_seed():
    walls = pd.DataFrame([{"arm": a, "seed": s, "generation": t, "wall_s": w}
                          for s in range(6) for a, ws in (("full", (2.0, 3.0)), ("baseline_ties", (4.0 + s,)))
                          for t, w in enumerate(ws)])
    rows = comparison_rows()
    scores = sr.method_scores(rows, FAMS)
    assert list(dict.fromkeys(scores["method"])) == [
        "full", "no_sex", "full (val-best)", "no_sex (val-best)", "baseline_ties", "baseline_soup",
        sr.FOUNDERS, sr.BASE]
    sc = scores.set_index(["method", "seed", "metric"])["value"]
    assert sc[("full (val-best)", 0, "overall")] == pytest.approx(0.5)        # agent 0: val 0.9
    # agents 1 and 2 tie on val: the val-best is their mean (0.6 and 0.7, less the shift), not the lower seat's 0.53
    assert sc[("no_sex (val-best)", 2, "overall")] == pytest.approx(0.65 - 0.07)
    assert sc[(sr.FOUNDERS, 3, "lists")] == pytest.approx(0.4) and sc[(sr.BASE, 3, "overall")] == 0.35
    assert sc[("full", 1, "arith")] == pytest.approx(0.65)
    pts, summ = sr.comparison(rows, FAMS, walls)
    s = summ.set_index(["metric", "method"])
    ns = s.loc[("overall", "no_sex")]
    assert ns["mean"] == pytest.approx(np.mean([-0.05 - 0.01 * k for k in range(6)]))
    assert ns["p"] == pytest.approx(2 / 64) and ns["hi"] < 0 and ns["n"] == 6
    assert ns["accuracy"] == pytest.approx(0.6 + ns["mean"])
    assert s.loc[("overall", "baseline_soup"), "mean"] == pytest.approx(0.0, abs=1e-12)
    assert s.loc[("arith", sr.BASE), "mean"] == pytest.approx(0.35 - 0.65)
    full = s.loc[("overall", "full")]
    assert full["reference"] == "full" and np.isnan(full["mean"]) and full["n"] == 6
    # cost: rows at the last generation, walls summed over generations, a val-best agent costs its arm's run
    assert full[["train_steps", "val_evals", "wall_s"]].tolist() == pytest.approx([100.0, 40.0, 5.0])
    assert s.loc[("overall", "full (val-best)"), "val_evals"] == 40.0
    assert s.loc[("overall", "baseline_ties"), "wall_s"] == pytest.approx(np.mean([4.0 + k for k in range(6)]))
    assert np.isnan(s.loc[("overall", "no_sex"), "wall_s"]) and np.isnan(s.loc[("overall", sr.BASE), "train_steps"])
    assert len(pts[(pts.metric == "overall") & (pts.method == "no_sex")]) == 6


def test_comparison_is_empty_without_full():
    rows = comparison_rows(range(2))
    pts, summ = sr.comparison(rows[rows["arm"] != "full"], FAMS)
    assert pts.empty and summ.empty


# ----------------------------------------------------------------------------- S3e ties, helpers


def test_recombination_gain_counts_tied_screenings():
    rows = []
    for s in range(3):
        for c, tied in enumerate([1.0, 2.0, 3.0 if s else 1.0]):
            rows += other_rows("full", s, 1, c, parents=1.0, merge_winner=0.0, merge_gain_val=0.0, merge_tied=tied)
    pts, summ = dg.recombination_gain(frame(rows))
    assert pts["tied"].tolist() == [0.0, 1.0, 0.0, 0.0, 1.0, 1.0, 0.0, 1.0, 1.0]
    assert summ.set_index("arm").loc["full", "tie_share"] == pytest.approx(np.mean([1 / 3, 2 / 3, 2 / 3]))


def test_paired_over_seeds_means_each_seed_first():
    pts = pd.DataFrame({"g": "x", "seed": [0, 0, 1, 2, 3, 4, 5], "diff": [1.0, 3.0, 1.0, 2.0, 3.0, 4.0, 5.0]})
    r = frames.paired_over_seeds(pts, ["g"]).iloc[0]
    assert r["n"] == 6 and r["mean"] == pytest.approx(17 / 6)  # seed 0 counts once, as 2
    assert (r["lo"], r["hi"]) == pytest.approx(stats.sign_flip_ci([2.0, 1.0, 2.0, 3.0, 4.0, 5.0]))
    assert r["p"] == pytest.approx(2 / 64)


def test_shard_walls_reads_each_progress_file(tmp_path):
    for arm, walls in (("full", [1.5, 2.5]), ("baseline_ties", [7.0])):
        (tmp_path / f"{arm}_s3.csv").write_text("x\n")
        (tmp_path / f"{arm}_s3.progress.json").write_text(json.dumps(
            {"last_done": 1, "gen_wall_s": walls, "gen_phase_s": [{"load": 0.5}] * len(walls)}))
    (tmp_path / "no_sex_s3.csv").write_text("x\n")  # no progress file: nothing
    w = society_data.shard_walls(sorted(tmp_path.glob("*.csv")))
    assert w.groupby("arm")["wall_s"].sum().to_dict() == {"baseline_ties": 7.0, "full": 4.0}
    assert set(w["seed"]) == {3} and w["load"].tolist() == [0.5] * 3
    assert society_data.shard_walls([]).columns.tolist() == ["arm", "seed", "generation", "wall_s"]


# ----------------------------------------------------------------------------- panels


def panel_rows(seeds=range(6)) -> pd.DataFrame:
    """Rows of every metric the panels read, shaped like the v2 loop's, seeded."""
    rows = []
    for s in seeds:
        for arm in ("full", "no_sex", "baseline_soup"):
            rng = np.random.default_rng([s, len(arm)])
            gens = [1] if arm == "baseline_soup" else [0, 1, 2]
            for t in gens:
                n = 1 if arm == "baseline_soup" else 3
                for a in range(n):
                    m = {f"test_{f}": rng.uniform(0.3, 0.9) for f in FAMS}
                    m.update({f"test_{f}_novel": rng.uniform(0, 0.6) for f in FAMS})
                    rows += agent_rows(arm, s, t, a, val_overall=rng.uniform(), test_overall=np.mean(
                        [m[f"test_{f}"] for f in FAMS]), **m)
                    if t > 0 and arm != "baseline_soup":
                        pb = a if arm == "no_sex" else (a + 1) % 3
                        rows += other_rows(arm, s, t, a, parents=a * 100 + pb, inherit_n=30.0,
                                           **{f"source_test_{f}_novel": rng.uniform(0, 0.6) for f in FAMS})
                if t == 0:
                    rows += other_rows(arm, s, 0, -1, base_test_overall=0.5, **{f"base_test_{f}": 0.5 for f in FAMS},
                                       **{f"base_test_{f}_novel": 0.0 for f in FAMS})
            rows += other_rows(arm, s, gens[-1], -1, cost_train_steps=10.0, cost_val_evals=5.0)
    return frame(rows)


@pytest.fixture(scope="module")
def synthetic():
    return {"rows": panel_rows(), "families": FAMS, "walls": None}


def test_panels_are_registered_with_fig3_and_skipped_without_their_data(synthetic):
    names = [p.name for p in plots.PANELS]
    mine = [p.name for p in sp.PANELS]
    assert mine == ["fig3f_society_vs_merge_methods", "S3h_society_skill_retention", "S3i_society_skill_loss",
                    "S3j_society_generalists"]
    assert set(mine) <= set(names) and len(set(names)) == len(names)
    old = synthetic["rows"]
    old = old[~old["metric"].str.contains("novel") & ~old["metric"].str.startswith("base_test")]
    drawn = {p.name: p.draw({**synthetic, "rows": old}) for p in sp.PANELS}
    assert [n for n, f in drawn.items() if f is not None] == ["fig3f_society_vs_merge_methods"]
    plt.close("all")


def test_fig3f_shows_each_seeds_difference_from_full_and_the_costs(synthetic):
    fig = sp.draw_comparison(synthetic["rows"], FAMS)
    pts, summ = sr.comparison(synthetic["rows"], FAMS)
    a1 = fig.axes[0]
    want = pts.loc[pts.metric == "overall", "diff"].to_numpy()
    np.testing.assert_allclose(np.sort(figcheck.points(a1)[:, 1]), np.sort(want))
    labels = [t.get_text() for t in a1.get_xticklabels()]
    assert labels == [m for m in dict.fromkeys(summ["method"]) if m != "full"]
    assert "no_sex (val-best)" in labels and "baseline_soup" in labels and sr.BASE in labels
    fam = figcheck.points(fig.axes[1])
    assert len(fam) == len(pts[pts.metric != "overall"])  # every family's dot per seed
    steps = fig.axes[2]  # LoRA training steps, one bar per method, full first
    assert [p.get_width() for p in steps.patches][:2] == [10.0, 10.0]
    assert [t.get_text() for t in steps.get_yticklabels()][0] == "full"
    plt.close(fig)


def test_skill_retention_panel_draws_each_arms_mean_and_the_founders(synthetic):
    fig = sp.draw_skill_retention(synthetic["rows"], FAMS)
    pts, refs = sr.skill_retention(synthetic["rows"], FAMS)
    ax = fig.axes[1]  # strings, population mean
    want = pts[(pts.arm == "full") & (pts.family == "strings") & (pts.statistic == "mean")]
    want = want.groupby("generation")["value"].mean()
    line = figcheck.lines(ax)["full"]
    np.testing.assert_allclose(line.get_ydata(), want.to_numpy())
    best = refs[(refs.family == "strings") & (refs.reference == "best founder")]["value"].mean()
    assert figcheck.lines(ax)["best founder"].get_ydata()[0] == pytest.approx(best)
    assert ax.collections  # a 95 % CI (t) band over six seeds
    plt.close(fig)


def test_skill_loss_panel_shows_the_per_seed_step_differences(synthetic):
    fig = sp.draw_skill_loss(synthetic["rows"], FAMS)
    pts, _ = sr.skill_loss(synthetic["rows"], FAMS)
    assert len(fig.axes) == len(sr.STEPS) * (len(FAMS) + 1)  # a row per family and the pooled row, a column per step
    ax = fig.axes[len(FAMS) * len(sr.STEPS) + 1]  # the pooled row, the second step's column
    per_seed = pts[pts.family == sr.ALL].groupby(["arm", "seed"])[sr.STEPS[1]].mean()
    np.testing.assert_allclose(np.sort(figcheck.points(ax)[:, 0]), np.sort(per_seed.to_numpy()))  # x: the step
    plt.close(fig)


def test_generalists_panel_draws_the_share_per_arm(synthetic):
    fig = sp.draw_generalists(synthetic["rows"], FAMS)
    g = sr.generalists(synthetic["rows"], FAMS)
    want = g[(g.arm == "no_sex") & (g.k == 2)].groupby("generation")["share"].mean()
    np.testing.assert_allclose(figcheck.lines(fig.axes[0])["no_sex"].get_ydata(), want.to_numpy())
    plt.close(fig)


def test_smoke_panels_are_saved_and_the_comparison_table_matches_the_progress_files(tmp_path, monkeypatch):
    monkeypatch.setenv("GE_FIGURES_DIR", str(tmp_path))
    data = plots.load_data("smoke")
    saved = plots.save_panels(sp.PANELS, data, scale="smoke", sources=plots.sources(data), notebook=plots.NOTEBOOK)
    assert saved == [p.name for p in sp.PANELS]
    for n in saved:
        figcheck.assert_png_drawn(tmp_path / "smoke" / f"{n}.png")
    idx = json.loads((tmp_path / "smoke" / "index.json").read_text())
    assert any(d.endswith(".progress.json") for d in idx["fig3f_society_vs_merge_methods"]["data"])
    t = plots.comparison_table("smoke")
    assert all(p == "n/a" or stats.format_p(float(p)) == p for p in t["p"])
    full = t[(t.metric == "overall") & (t.method == "full")].iloc[0]
    runs = [f for f in data["files"] if f"/{first_verdict_folders('smoke')[0]}/full_s" in f]  # its re-run once whole
    assert runs
    walls = [sum(json.loads(open(f.replace(".csv", ".progress.json")).read())["gen_wall_s"]) for f in runs]
    assert full["wall_s"] == pytest.approx(np.mean(walls))
    assert set(t["metric"]) == {"overall", *data["families"]}


# ----------------------------------------------------------------------------- pre-registered comparisons


def test_holm_adjusts_step_down_in_the_input_order():
    np.testing.assert_allclose(stats.holm([0.01, 0.04, 0.03]), [0.03, 0.06, 0.06])  # 3·.01, max(2·.03, .03), max(.06, .04)
    np.testing.assert_allclose(stats.holm([0.5, 0.001]), [0.5, 0.002])
    np.testing.assert_allclose(stats.holm([0.9, 0.8]), [1.0, 1.0])  # capped at 1
    out = stats.holm([0.02, float("nan"), 0.01])
    assert np.isnan(out[1]) and out[0] == pytest.approx(0.02) and out[2] == pytest.approx(0.02)  # m = 2


def primary_rows(seeds=range(8)):
    """full's population at 0.60 + 0.01 s; no_grounding 0.05 below; multitask 0.02 above with alternating
    signs; the one-shot merges: ties best on val but worst on test, soup the reverse."""
    rows = []
    for s in seeds:
        for a in range(2):
            rows += agent_rows("full", s, 2, a, test_overall=0.60 + 0.01 * s, val_overall=0.5)
            rows += agent_rows("no_grounding", s, 2, a, test_overall=0.55 + 0.01 * s, val_overall=0.5)
        rows += agent_rows("baseline_ties", s, 1, 0, test_overall=0.30, val_overall=0.70)
        rows += agent_rows("baseline_soup", s, 1, 0, test_overall=0.90, val_overall=0.40)
        rows += agent_rows("baseline_multitask", s, 1, 0, test_overall=0.60 + 0.01 * s + (0.02 if s % 2 else -0.01),
                           val_overall=0.9)
    return frame(rows)


def test_primary_comparisons_pick_the_merge_on_val_and_adjust_for_three():
    rows = primary_rows()
    arm, val = sr.best_one_shot(rows)
    assert arm == "baseline_ties" and list(val.index) == ["baseline_ties", "baseline_soup"]  # never multitask
    t = sr.primary_comparisons(rows, ["overall"]).set_index("other")
    assert list(t.index) == ["no_grounding", "baseline_ties", "baseline_multitask"]
    g = t.loc["no_grounding"]
    assert g["diff"] == pytest.approx(0.05) and g["n"] == 8 and g["p"] == pytest.approx(2 / 256)
    assert g["lo"] == pytest.approx(0.05) and g["hi"] == pytest.approx(0.05)  # every difference is 0.05
    assert t.loc["baseline_ties", "diff"] == pytest.approx(np.mean([0.30 + 0.01 * s for s in range(8)]))
    assert t.loc["baseline_multitask", "diff"] == pytest.approx(np.mean([0.01, -0.02] * 4))
    np.testing.assert_allclose(t["p_holm"], stats.holm(t["p"].to_numpy()))
    assert (t["p_holm"] >= t["p"]).all() and t.loc["no_grounding", "p_holm"] == pytest.approx(3 * 2 / 256)
    with pytest.raises(ValueError, match="baseline_multitask"):
        sr.primary_comparisons(rows[rows["arm"] != "baseline_multitask"], ["overall"])
