"""The synthetic population of notebook 01 (lib.operators.population): skills per seed, fitness that
follows skill, shared misconceptions, the selection sweep, its tables, reuse of data, config errors."""
from __future__ import annotations

from itertools import combinations

import numpy as np
import pandas as pd
import pytest

from lib import experiment
from lib.core.config import ConfigError
from lib.operators import ops as op
from lib.operators import population as pop
from lib.core.tasks import FAMILIES


def _cfg(**kw) -> dict:
    base = dict(experiment="operators", kind="operators", scale="smoke", seeds=[0, 1], agents=8,
                prompts_per_family=6, n_parents=3, lams=[0.0, 0.5, 2.0], lam=0.5, n_pairs=4)
    return pop.validate_config({**base, **kw})


def test_skills_are_drawn_per_seed_from_the_beta_prior():
    cfg = _cfg(agents=200, skill_a=2.0, skill_b=6.0)
    outs, tasks, skills = pop.synthetic_outputs(cfg, 0)
    again, _, skills_again = pop.synthetic_outputs(cfg, 0)
    _, _, other = pop.synthetic_outputs(cfg, 1)
    assert skills.shape == (200, len(cfg["families"])) and np.all((skills > 0) & (skills < 1))
    assert len(outs) == 200 and all(len(o) == len(tasks) == 3 * cfg["prompts_per_family"] for o in outs)
    np.testing.assert_array_equal(skills, skills_again)
    assert outs == again
    assert not np.allclose(skills, other)
    # Beta(2, 6): mean 2/8 = 0.25, sd = sqrt(ab / ((a+b)^2 (a+b+1))) = 0.144; 600 draws: SE 0.006
    assert skills.mean() == pytest.approx(0.25, abs=5 * 0.144 / np.sqrt(skills.size))


def test_a_more_skilled_agent_is_fitter_on_average():
    cfg = _cfg(agents=40, prompts_per_family=100)
    for seed in (0, 1):
        rows = pop.population_rows(cfg, seed)["agents"]
        skill = rows[[f"skill_{f}" for f in cfg["families"]]].to_numpy()
        # equal prompts per family: E[fitness_i] = mean_f p_if, Var = sum_f n p(1-p) / M^2
        n, M = cfg["prompts_per_family"], cfg["prompts_per_family"] * len(cfg["families"])
        sd = np.sqrt((n * skill * (1 - skill)).sum(axis=1)) / M
        err = rows["fitness"].to_numpy() - skill.mean(axis=1)
        assert np.all(np.abs(err) <= 4.5 * sd), f"seed {seed}: fitness strays from skill by {np.abs(err / sd).max():.1f} sd"
        assert np.corrcoef(skill.mean(axis=1), rows["fitness"])[0, 1] > 0.9


def _wrong_pairs_agree(outs, tasks) -> float:
    """Among pairs of agents both wrong on a prompt, the fraction giving the same wrong answer."""
    same = total = 0
    for j, t in enumerate(tasks):
        wrong = [o[j] for o in outs if o[j] != t.answer]
        for a, b in combinations(wrong, 2):
            same += a == b
            total += 1
    return same / total


@pytest.mark.parametrize("shared", [0.0, 0.6, 1.0])
def test_shared_misconceptions_make_wrong_answers_agree(shared):
    cfg = _cfg(agents=30, prompts_per_family=30, shared_error=shared, n_wrong=3, skill_a=1.0, skill_b=1.0)
    outs, tasks, _ = pop.synthetic_outputs(cfg, 4)
    wrong = {o[j] for o in outs for j, t in enumerate(tasks) if o[j] != t.answer}
    assert wrong <= {f"wrong{k}" for k in range(cfg["n_wrong"] + 1)}
    assert ("wrong0" in wrong) == (shared > 0) and (wrong == {"wrong0"}) == (shared == 1.0)
    # two wrong answers agree when both are the misconception (s^2) or the same idiosyncratic one
    expected = shared ** 2 + (1 - shared) ** 2 / cfg["n_wrong"]
    assert _wrong_pairs_agree(outs, tasks) == pytest.approx(expected, abs=0.03)


def test_selection_sweep_at_lambda_0_is_top_p_and_reports_its_selected_set():
    cfg = _cfg(agents=10)
    t = pop.population_rows(cfg, 2)
    agents, sel = t["agents"].set_index("agent"), t["selection"]
    D = t["distance"].pivot(index="i", columns="j", values="distance").to_numpy()
    ranked = sorted(agents.index, key=lambda i: (-agents.loc[i, "score"], i))
    top = " ".join(map(str, ranked[:cfg["n_parents"]]))
    at0 = sel[sel.lam == 0.0].set_index("method")["selected"]
    assert at0["qd"] == at0["top_p"] == top
    assert set(sel[sel.method == "top_p"].selected) == {top}  # top-P ignores λ
    for r in sel.itertuples():
        idx = [int(i) for i in r.selected.split()]
        assert len(set(idx)) == cfg["n_parents"]
        assert r.mean_score == pytest.approx(agents.loc[idx, "score"].mean())
        assert r.mean_fitness == pytest.approx(agents.loc[idx, "fitness"].mean())
        assert r.mean_distance == pytest.approx(np.mean([D[a, b] for a, b in combinations(idx, 2)]))


def test_tables_have_their_shapes_and_keys():
    cfg = _cfg(seeds=[3], agents=7, g=0.25, n_pairs=5)
    t = pop.population_rows(cfg, 3)
    assert set(t) == {"agents", "selection", "pairs", "distance"}
    a = t["agents"]
    assert list(a.columns) == ["seed", "agent", "fitness", "conformity", "score", "answer_key",
                               *[f"skill_{f}" for f in FAMILIES], "consensus_acc", "consensus_share"]
    assert len(a) == 7 and list(a.agent) == list(range(7)) and set(a.seed) == {3}
    np.testing.assert_allclose(a.score, 0.25 * a.fitness + 0.75 * a.conformity)
    assert a[["fitness", "conformity", "consensus_acc"]].stack().between(0, 1).all()
    assert a.consensus_acc.nunique() == 1
    s = t["selection"]
    assert list(s.columns) == ["seed", "lam", "method", "mean_score", "mean_fitness", "mean_distance", "selected"]
    assert len(s) == 2 * len(cfg["lams"]) and set(s.method) == {"top_p", "qd"} and set(s.lam) == set(cfg["lams"])
    d = t["distance"]
    assert list(d.columns) == ["seed", "i", "j", "distance"] and len(d) == 49
    D = d.pivot(index="i", columns="j", values="distance").to_numpy()
    np.testing.assert_array_equal(D, D.T)
    np.testing.assert_array_equal(np.diag(D), 0)
    p = t["pairs"]
    assert list(p.columns) == ["seed", "rank", "a", "b", "distance"] and list(p["rank"]) == list(range(5))
    parents = op.select_parents(a.score.to_numpy(), D, cfg["n_parents"], keys=a.answer_key.tolist(), diversity=True,
                               lam=cfg["lam"])
    assert all(x != y and {x, y} <= set(parents) for x, y in zip(p.a, p.b))
    np.testing.assert_allclose(p.distance, D[p.a, p.b])
    assert list(p.distance[:3]) == sorted(p.distance[:3], reverse=True)  # 3 parents: 3 pairs, most distant first


def test_matching_data_is_reused_and_another_config_recomputed(tmp_path, monkeypatch):
    monkeypatch.setenv("GE_DATA_DIR", str(tmp_path))
    cfg = _cfg()
    first = pop.run_experiment(cfg)
    folder = tmp_path / "smoke" / "operators"
    # the run's lock files (lib.core.locks: dot-files, git-ignored) aside, the folder holds the data only
    assert sorted(p.name for p in folder.iterdir() if not p.name.startswith(".")) == [
        "agents.csv", "distance.csv", "manifest.json", "pairs.csv", "selection.csv"]
    assert {k: len(v) for k, v in first.items()} == {"agents": 16, "selection": 12, "pairs": 8, "distance": 128}

    def no_work(cfg, seed):
        raise AssertionError("recomputed a population whose data was on disk")

    monkeypatch.setattr(pop, "population_rows", no_work)
    assert pop.shard_done(cfg)
    again = pop.run_experiment(cfg)
    for name, df in first.items():
        pd.testing.assert_frame_equal(again[name], df, check_exact=False, rtol=1e-9)
    assert not pop.shard_done({**cfg, "g": 0.9})
    with pytest.raises(AssertionError, match="recomputed"):
        pop.run_experiment({**cfg, "g": 0.9})


def test_a_bad_config_is_one_config_error_naming_every_problem(tmp_path, monkeypatch, capsys):
    with pytest.raises(ConfigError) as e:
        _cfg(agents=2, shared_error=1.5, familes=["lists"])
    msg = str(e.value)
    assert "agents: 2 is below the minimum 3" in msg and "shared_error: 1.5 is above the maximum 1.0" in msg
    assert "unknown key(s) ['familes']" in msg
    with pytest.raises(ConfigError, match=r"n_parents \(9\) cannot exceed agents \(8\)"):
        _cfg(n_parents=9)
    with pytest.raises(ConfigError, match="n_parents must be at least 2"):
        _cfg(n_parents=1)
    monkeypatch.setenv("GE_DATA_DIR", str(tmp_path / "data"))
    bad = tmp_path / "bad.yaml"
    bad.write_text("experiment: operators\nkind: operators\nscale: smoke\nagents: 2\nfamilies: [lists, poems]\n")
    assert experiment.main([str(bad)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: invalid config for 'operators'") and len(err.splitlines()) == 1
    assert "agents: 2" in err and "'poems' is not allowed" in err
    assert not (tmp_path / "data").exists()  # refused before any work
