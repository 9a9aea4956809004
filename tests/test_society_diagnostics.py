"""Operator diagnostics of the society (lib.society.studies.diagnostics.comparisons) on hand-made rows with known
answers, and their SI panels (lib.society.studies.diagnostics.figures): drawn when their data is there, skipped
when not."""
from __future__ import annotations

import matplotlib
import numpy as np
import pandas as pd
import pytest

matplotlib.use("Agg")

from lib.society.studies import frames  # noqa: E402
from lib.society.studies.diagnostics import comparisons as dg  # noqa: E402

COLS = ["experiment", "arm", "seed", "generation", "agent", "selected", "conformity", "score", "metric", "value"]
FAMS = ["lists", "strings", "arith"]
NAN = float("nan")


def agent_rows(arm, seed, t, agent, *, selected=False, conformity=0.5, score=0.5, **metrics):
    """Rows of one agent: its own metrics carry selected/conformity/score."""
    return [dict(zip(COLS, ("society", arm, seed, t, agent, selected, conformity, score, m, v))) for m, v in metrics.items()]


def birth_rows(arm, seed, t, agent, **metrics):
    """Rows about how a child at generation t was born (no selected/score)."""
    return [dict(zip(COLS, ("society", arm, seed, t, agent, False, NAN, NAN, m, v))) for m, v in metrics.items()]


def frame(rows) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=COLS)


# ----------------------------------------------------------------------------- selection


def test_selection_differential_is_selected_minus_not_selected_over_breeding_generations():
    rows = []
    rng = np.random.default_rng(0)
    for seed in range(3):
        for t in range(3):
            base_v, base_t = rng.uniform(0.2, 0.4, 4), rng.uniform(0.2, 0.4, 4)
            # generations 0 and 1 breed: selected agents are exactly 0.1 better on val and 0.05 worse on
            # test than the mean of the others; generation 2 is the last (its selection breeds nothing)
            # and carries a differential of 0.5 that must not enter
            dv, dt = (0.1, -0.05) if t < 2 else (0.5, 0.5)
            for a in range(4):
                sel = a in (1, 3)
                v = 0.3 + (dv if sel else 0.0) + (0.0 if sel else base_v[a] - base_v[[0, 2]].mean())
                te = 0.3 + (dt if sel else 0.0) + (0.0 if sel else base_t[a] - base_t[[0, 2]].mean())
                rows += agent_rows("full", seed, t, a, selected=sel, val_overall=v, test_overall=te)
    # a breeding population where everyone was selected carries no differential and is skipped
    rows = [r for r in rows if not (r["seed"] == 0 and r["generation"] == 1)]
    for a in range(2):
        rows += agent_rows("full", 0, 1, a, selected=True, val_overall=0.9, test_overall=0.9)
    pts, summ = dg.selection_differential(frame(rows))
    assert set(pts["generation"]) == {0, 1} and len(pts) == (3 * 2 - 1) * 2
    np.testing.assert_allclose(pts.loc[pts.metric == "val", "diff"], 0.1, atol=1e-12)
    np.testing.assert_allclose(pts.loc[pts.metric == "test", "diff"], -0.05, atol=1e-12)
    s = summ.set_index("metric")
    assert s.loc["val", "n"] == 3 and s.loc["val", "mean"] == pytest.approx(0.1)
    assert s.loc["test", "mean"] == pytest.approx(-0.05)
    per_gen = frames.ci_over_seeds(pts, ["arm", "metric", "generation"], "diff")
    assert len(per_gen) == 4 and sorted(per_gen["n"]) == [2, 2, 3, 3]
    assert dg.breeding_generations(frame(rows)).groupby("seed")["generation"].max().tolist() == [1, 1, 1]


def test_ci_over_seeds_is_a_t_interval_of_per_seed_means():
    # seed means 1, 2, 3 (seed 0 has two points averaging to 1): t_{2, .975} = 4.302653
    pts = pd.DataFrame({"arm": "full", "seed": [0, 0, 1, 2], "value": [0.5, 1.5, 2.0, 3.0]})
    r = frames.ci_over_seeds(pts, ["arm"]).iloc[0]
    assert r["n"] == 3 and r["mean"] == pytest.approx(2.0)
    assert r["hi"] - r["mean"] == pytest.approx(4.302653 * 1.0 / np.sqrt(3), rel=1e-6)
    one = frames.ci_over_seeds(pts[pts.seed == 1], ["arm"]).iloc[0]
    assert one["n"] == 1 and np.isnan(one["lo"]) and np.isnan(one["hi"])


def test_selection_signal_centres_within_population_and_counts_each_founder_once():
    # generation 1, one population per seed: val (.1,.2,.3), test (.2,.1,.6) -> centred r = .04/sqrt(.02*.14)
    # = 2/sqrt(7) in each seed; the second seed's shift (+.5 on val, -.1 on test) must not change r
    # (uncentred, the shift would dominate); split halves (.1,.2,.3) vs (0,.3,.3): r = sqrt(3)/2
    rows = []
    for seed, (dv, dt) in enumerate([(0.0, 0.0), (0.5, -0.1)]):
        for a, (v, te, hb, conf) in enumerate(zip([.1, .2, .3], [.2, .1, .6], [0, .3, .3], [.9, .5, .1])):
            rows += agent_rows("full", seed, 1, a, conformity=conf, score=0.5 * (v + dv) + 0.5 * conf,
                               val_overall=v + dv, test_overall=te + dt, val_half_a=v, val_half_b=hb)
        # the founders (generation 0), identical in both arms: val and test perfectly opposed
        for arm in ("full", "no_sex"):
            for a, v in enumerate([.1, .2, .3]):
                rows += agent_rows(arm, seed, 0, a, val_overall=v, test_overall=1 - v, val_half_a=v, val_half_b=v)
    sig = dg.selection_signal(frame(rows), by_arm=False).set_index(["scope", "quantity"])
    br = sig.loc[dg.BREEDING]
    assert br.loc["val ~ test", "r"] == pytest.approx(2 / np.sqrt(7))  # the founders do not enter
    assert br.loc["val ~ test", "n"] == 6 and br.loc["val ~ test", "seeds"] == 2
    r = np.sqrt(3) / 2
    assert br.loc["val half a ~ half b", "r"] == pytest.approx(r)
    assert br.loc["val half a ~ half b", "spearman_brown"] == pytest.approx(2 * r / (1 + r))
    # score = .5 val + .5 conf with conf = (.9,.5,.1) centred (.4,0,-.4), val centred (-.1,0,.1):
    # score centred (.15,0,-.15): r(score, val) = -1, r(score, conformity) = +1
    assert br.loc["score ~ val", "r"] == pytest.approx(-1.0)
    assert br.loc["score ~ conformity", "r"] == pytest.approx(1.0)
    # two seeds with the same r: a t-interval of zero width
    assert br.loc["val ~ test", "lo"] == pytest.approx(2 / np.sqrt(7))
    fo = sig.loc[dg.FOUNDERS]
    assert fo.loc["val ~ test", "r"] == pytest.approx(-1.0)
    assert fo.loc["val ~ test", "n"] == 6  # 3 founders x 2 seeds, read from one arm (not 12)


def test_selection_signal_is_per_seed_then_across_seeds():
    # seed 0: r = +1 over 3 agents; seed 1: r = -1 over 30 agents. Per seed first: mean r = 0, while
    # pooling all 33 agents would let seed 1 dominate (r_pooled < -0.5)
    rows = []
    for a, v in enumerate([.1, .2, .3]):
        rows += agent_rows("full", 0, 1, a, val_overall=v, test_overall=v)
    for a in range(30):
        v = a / 30
        rows += agent_rows("full", 1, 1, a, val_overall=v, test_overall=-v)
    s = dg.selection_signal(frame(rows), by_arm=False).set_index(["scope", "quantity"]).loc[(dg.BREEDING, "val ~ test")]
    assert s["r"] == pytest.approx(0.0, abs=1e-12) and s["r_pooled"] < -0.5 and s["seeds"] == 2


def founders_rows(arm="full", seeds=(0, 1, 2), junk=False):
    """6 founders (2 per family) whose specialists beat the others by lists .3, strings .2, arith .05
    (+ .01·seed); the base row; junk=True: another arm with different (wrong) generation-0 numbers."""
    base_gap = {"lists": 0.30, "strings": 0.20, "arith": 0.05}
    rows = []
    for s in seeds:
        for a in range(6):
            fam = FAMS[a % 3]
            m = {f"test_{f}": (0.2 + base_gap[f] + 0.01 * s if f == fam else 0.2 + 0.01 * a) for f in FAMS}
            if junk:
                m = {k: 0.99 for k in m}
            m["test_overall"] = float(np.mean(list(m.values())))
            # others on family f are agents a with a%3 != f: values .2+.01a; spec mean .2+gap+.01s
            rows += agent_rows(arm, s, 0, a, val_overall=m["test_overall"] / 2, **m)
        rows += birth_rows(arm, s, 0, -1, base_test_lists=0.4, base_test_strings=0.3, base_test_arith=0.1,
                           base_test_overall=0.8 / 3)
    return rows


def expected_gap(fam, s):
    i = FAMS.index(fam)
    others = [a for a in range(6) if a % 3 != i]
    return {"lists": .3, "strings": .2, "arith": .05}[fam] + .01 * s - .01 * np.mean(others)


def test_founders_matrix_and_specialist_gaps():
    rows = frame(founders_rows("no_sex", junk=True) + founders_rows())
    assert dg.founders_arm(rows) == "full"
    assert dg.founders_arm(rows[rows.arm == "no_sex"]) == "no_sex"
    mat = dg.founders_matrix(rows, FAMS)
    assert list(mat.index) == [-1, 0, 1, 2, 3, 4, 5]
    assert mat.loc[-1, "role"] == "base" and mat.loc[-1, "lists"] == pytest.approx(0.4)
    assert list(mat.loc[[0, 1, 2], "role"]) == FAMS
    assert mat.loc[4, "strings"] == pytest.approx(0.2 + 0.2 + 0.01)  # mean over seeds 0..2 of .4 + .01 s
    assert mat.loc[4, "lists"] == pytest.approx(0.24) and mat["n"].eq(3).all()
    per = dg.specialist_gaps(rows, FAMS, per_seed=True)
    for r in per.itertuples():
        if r.family != "mean":
            assert r.gap == pytest.approx(expected_gap(r.family, r.seed))
    g = dg.specialist_gaps(rows, FAMS).set_index("family")
    assert list(g.index) == FAMS + ["mean"]
    for f in FAMS:
        assert g.loc[f, "mean"] == pytest.approx(np.mean([expected_gap(f, s) for s in range(3)]))
        assert g.loc[f, "lo"] <= g.loc[f, "mean"] <= g.loc[f, "hi"]
    assert g.loc["mean", "mean"] == pytest.approx(np.mean([expected_gap(f, s) for f in FAMS for s in range(3)]))


def test_specialists_of_a_family_are_all_its_founders_whatever_the_row_order():
    rows = founders_rows()
    # agents 3..5 specialise like 0..2 (a mod 3) but score .1 lower on their own family
    for r in rows:
        if r["agent"] >= 3 and r["metric"] == f"test_{FAMS[r['agent'] % 3]}":
            r["value"] -= 0.1
    df = frame(rows)
    own = dg.own_family_scores(df, FAMS).set_index("family")
    for k, f in enumerate(FAMS):
        gap = {"lists": .3, "strings": .2, "arith": .05}[f]
        # specialists k and k+3 average to .2 + gap + .01 s - .05; mean over s = 0, 1, 2
        assert own.loc[f, "specialists"] == pytest.approx(0.2 + gap + 0.01 - 0.05)
        assert own.loc[f, "n"] == 3 and own.loc[f, "lo"] <= own.loc[f, "specialists"] <= own.loc[f, "hi"]
    assert own.loc["lists", "base"] == pytest.approx(0.4)
    # the families come from the config: shuffling the rows (metric order) changes nothing
    shuffled = df.sample(frac=1.0, random_state=3)
    pd.testing.assert_frame_equal(dg.specialist_gaps(shuffled, FAMS), dg.specialist_gaps(df, FAMS))
    pd.testing.assert_frame_equal(dg.own_family_scores(shuffled, FAMS), own.reset_index())


def test_preconditions_table_passes_and_fails_by_threshold():
    rows = founders_rows()
    # generation 1: test = 2 val + seed
    for s in range(3):
        for a in range(3):
            rows += agent_rows("full", s, 1, a, val_overall=0.1 * a, test_overall=0.2 * a + s,
                               val_half_a=0.1 * a, val_half_b=0.1 * a)
    pre = dg.preconditions(frame(rows), FAMS).set_index("precondition")
    # mean over seeds: lists .30+.01-.01*mean(1,2,4,5) = .28, strings .21-.01*mean(0,2,3,5) = .185,
    # arith .06-.01*mean(0,1,3,4) = .04; their mean .168
    assert pre.loc["specialist gap, lists", "measured"] == pytest.approx(0.28)
    assert pre.loc["specialist gap, lists", "pass"] is True
    assert pre.loc["specialist gap, strings", "measured"] == pytest.approx(0.185)
    assert pre.loc["specialist gap, arith", "measured"] == pytest.approx(0.04)
    assert pre.loc["specialist gap, arith", "pass"] is False
    assert pre.loc["specialist gap, mean over families", "measured"] == pytest.approx((0.28 + 0.185 + 0.04) / 3)
    assert pre.loc["specialist gap, mean over families", "pass"] is True
    r = pre.loc["val–test r within generation (breeding generations)"]
    # test = 2 val within every generation-1 population, so each seed's centred r is 1
    assert r["measured"] == pytest.approx(1.0) and r["pass"] is True and r["n"].startswith("9 agents, 3 seeds")
    f = pre.loc["val–test r among the founders (generation 0, once each)"]
    assert f["measured"] == pytest.approx(1.0) and f["pass"] is None  # founders: val = test / 2
    assert pre.loc["val split-half r (breeding generations)", "pass"] is None


# ----------------------------------------------------------------------------- breeding


def test_inheritance_fidelity_excludes_elites():
    rows = []
    for s in range(2):
        for a in range(3):
            rows += agent_rows("full@e1", s, 0, a, test_overall=0.5)
        rows += agent_rows("full@e1", s, 1, 0, test_overall=0.9)  # the elite: a copy, no mutation load
        rows += birth_rows("full@e1", s, 1, 0, parents=202.0, elite=1.0, source_test_overall=0.1)
        rows += agent_rows("full@e1", s, 1, 1, test_overall=0.45)
        rows += birth_rows("full@e1", s, 1, 1, parents=102.0, source_test_overall=0.5, inherit_n=30)
        rows += agent_rows("full@e1", s, 1, 2, test_overall=0.44 + 0.02 * s)
        rows += birth_rows("full@e1", s, 1, 2, parents=101.0, source_test_overall=0.4, inherit_n=30)
    pts, summ = dg.inheritance_fidelity(frame(rows))
    assert sorted(set(pts["agent"])) == [1, 2]
    np.testing.assert_allclose(sorted(pts["diff"]), sorted([-0.05, 0.04, -0.05, 0.06]), atol=1e-12)
    s = summ.set_index(["arm", "generation"]).loc[("full@e1", 1)]
    assert s["n"] == 2 and s["mean"] == pytest.approx(np.mean([-0.005, 0.005]))


def test_recombination_gain_and_plain_average_share():
    rows = []
    for s in range(3):
        for c, (win, gain) in enumerate([(0, 0.02), (1, -0.01), (0, 0.03 * s)]):
            rows += birth_rows("full", s, 1, c, parents=1.0, merge_winner=float(win), merge_gain_val=gain,
                               source_test_overall=0.3)
        rows += birth_rows("no_sex", s, 1, 0, parents=0.0, source_test_overall=0.3)  # asexual: no merges
    pts, summ = dg.recombination_gain(frame(rows))
    assert set(pts["arm"]) == {"full"} and len(pts) == 9
    s = summ.set_index("arm").loc["full"]
    assert s["plain_share"] == pytest.approx(2 / 3) and s["children"] == 9 and s["n"] == 3
    assert s["gain"] == pytest.approx(np.mean([(0.02 - 0.01 + 0.03 * k) / 3 for k in range(3)]))
    assert s["gain_lo"] <= s["gain"] <= s["gain_hi"]


# ----------------------------------------------------------------------------- elitism


def test_elitism_pairs():
    arms = ["full", "full@e1", "no_sex", "no_grounding@e1", "full@g0.25", "full@g0.25@e1"]
    assert dg.elitism_pairs(arms) == {"full@e1": "full", "full@g0.25@e1": "full@g0.25"}


def test_elitism_comparison_is_paired_by_seed():
    rows = []
    for s in range(4):
        for arm, shift in (("full", 0.0), ("full@e1", 0.02 + 0.01 * s), ("no_grounding", -0.1)):
            for t in (0, 3):
                for a, (acc, score) in enumerate([(0.3, 0.9), (0.5, 0.1), (0.4, 0.5)]):
                    extra = 0.1 if arm == "full@e1" and a == 0 else 0.0  # e1 keeps a better top-scorer
                    rows += agent_rows(arm, s, t, a, score=score, test_overall=acc + shift + extra + 0.05 * s)
    last = dg.last_generation_agents(frame(rows)).set_index(["arm", "seed"])
    assert last.loc[("full", 0), "mean"] == pytest.approx(0.4) and last.loc[("full", 0), "generation"] == 3
    assert last.loc[("full", 0), "best"] == pytest.approx(0.5) and last.loc[("full", 0), "top_scored"] == pytest.approx(0.3)
    pts, summ = dg.elitism_comparison(frame(rows))
    assert set(summ["arm"]) == {"full@e1"} and set(summ["reference"]) == {"full"}
    s = summ.set_index("statistic")
    d_mean = [0.02 + 0.01 * k + 0.1 / 3 for k in range(4)]
    assert s.loc["mean", "mean"] == pytest.approx(np.mean(d_mean)) and s.loc["mean", "n"] == 4
    assert s.loc["mean", "p"] == pytest.approx(2 / 16)  # exact sign-flip test, all four differences > 0
    assert s.loc["top_scored", "mean"] == pytest.approx(np.mean([0.12 + 0.01 * k for k in range(4)]))
    assert s.loc["best", "mean"] == pytest.approx(np.mean([0.02 + 0.01 * k for k in range(4)]))
    assert len(pts[pts.statistic == "mean"]) == 4


def test_elitism_comparison_empty_without_variants():
    rows = frame(agent_rows("full", 0, 0, 0, test_overall=0.5))
    pts, summ = dg.elitism_comparison(rows)
    assert pts.empty and summ.empty


# ----------------------------------------------------------------------------- SI panels S3c-S3f (and the study's S3g)


def synthetic_run(arms=("full", "full@e1", "no_sex"), seeds=(0, 1, 2), agents=4, generations=3) -> pd.DataFrame:
    """Rows shaped like lib.society.run's v2 loop with diagnostics (values random, seeded)."""
    rows = []
    for s in seeds:
        for arm in arms:
            for t in range(generations):
                rng = np.random.default_rng([s] if t == 0 else [s, t, sum(map(ord, arm))])  # founders shared
                acc = rng.uniform(0.1, 0.9, (agents, len(FAMS)))
                for a in range(agents):
                    m = {f"test_{f}": acc[a, k] for k, f in enumerate(FAMS)}
                    m["test_overall"] = acc[a].mean()
                    ha, hb = rng.uniform(0, 1, 2)
                    m.update(val_overall=(ha + hb) / 2, val_half_a=ha, val_half_b=hb)
                    rows += agent_rows(arm, s, t, a, selected=a < 2, conformity=rng.uniform(), score=rng.uniform(), **m)
                if t == 0:
                    rows += birth_rows(arm, s, 0, -1, **{f"base_test_{f}": 0.3 for f in FAMS + ["overall"]})
                else:
                    for a in range(agents):
                        if arm.endswith("@e1") and a == 0:
                            rows += birth_rows(arm, s, t, a, parents=0.0, elite=1.0)
                            continue
                        b = {"parents": 1.0, "inherit_n": 30.0, "source_test_overall": rng.uniform(),
                             "source_val_overall": rng.uniform()}
                        if arm != "no_sex":
                            b.update(merge_winner=float(rng.integers(0, 2)), merge_gain_val=rng.normal(0, 0.05))
                        rows += birth_rows(arm, s, t, a, **b)
    return frame(rows)


def test_si_panels_draw_with_ci_and_skip_without_their_data():
    import matplotlib.pyplot as plt
    from lib import style
    from lib.society.studies.verdict import figures as plots
    from lib.society.studies.diagnostics import figures as sd
    from lib.society.studies.study import figures as figures_study

    names = [p.name for p in plots.PANELS]
    mine = [p.name for p in sd.PANELS]
    assert mine == ["S3c_society_founders", "S3d_society_selection_differential", "S3e_society_recombination_gain",
                    "S3f_society_inheritance_fidelity"]
    assert names[-4:] == mine and len(set(names)) == len(names)
    assert not [n for n in names if n.startswith(("S3b_", "S3g_"))]  # the knob and elitism: the study's panels
    df = synthetic_run()
    for p in sd.PANELS:
        fig = p.draw({"rows": df, "families": FAMS})
        assert fig is not None, p.name
        if p.name in ("S3d_society_selection_differential", "S3f_society_inheritance_fidelity"):
            assert fig.axes[0].collections, p.name  # a CI band over 3 seeds
        plt.close(fig)
    s3g = style.panel_named(figures_study.PANELS, "S3g_study_elitism")  # draw_elitism, on the study's rows
    fig = s3g.draw({"rows": df, "families": FAMS})
    assert fig is not None and fig.axes[0].collections  # a CI band over 3 seeds
    plt.close(fig)
    # rows without the diagnostics metrics (written before them) and without @e1 arms: all skipped
    old = df[~df["metric"].isin([
        "val_half_a", "val_half_b", "base_test_overall", "merge_gain_val", "merge_winner",
        "source_test_overall", "source_val_overall", "elite", "inherit_n"])]
    assert all(p.draw({"rows": old, "families": FAMS}) is None for p in sd.PANELS)
    no_e1 = df[~df["arm"].str.contains("@e")]
    assert s3g.draw({"rows": no_e1, "families": FAMS}) is None
    assert sd.PANELS[2].draw({"rows": no_e1, "families": FAMS}) is not None
    plt.close("all")
