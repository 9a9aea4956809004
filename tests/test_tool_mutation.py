"""Tool mutation: one test per defect of the seed (V6), vmap == loop, errors, configs, resume."""
from __future__ import annotations

import copy
import math

import numpy as np
import pandas as pd
import pytest
import torch
import torch.nn as nn

import figcheck
import lib.tool_mutation.mutator as tm
from lib.core.config import ConfigError
from lib.core.rows import last_done, read_rows, shard_path
from lib.tool_mutation.mutator import ToolMutator, UnknownToolError, UnknownVariantError, variant_losses


def _host(seed=0):
    torch.manual_seed(seed)
    return tm.Host(4, 8)


def _flat(module):
    return torch.cat([p.detach().flatten() for p in module.parameters()])


def _mutator(**kw):
    return ToolMutator(**{"mutation_rate": 0.5, "mutation_scale": 0.1, "max_variants": 4, "rng": 0, **kw})


# --- defect: variants addressed by list position -------------------------------------------------

def test_ids_stay_stable_after_eviction_and_scoring():
    m = _mutator(max_variants=3)
    m.register("enc", nn.Linear(3, 3))
    a, b = m.mutate("enc"), m.mutate("enc")
    m.update_score("enc", "enc_v0", 1.0)
    m.update_score("enc", a, 5.0)
    m.update_score("enc", b, 0.0)
    weights_a = _flat(m.variant("enc", a).module)
    m.promote_best("enc")                      # a becomes current; new round
    c = m.mutate("enc")                        # pool full: evicts an old one (b, the worst... or v0)
    assert (a, c) == ("enc_v1", "enc_v3")
    assert torch.equal(_flat(m.variant("enc", a).module), weights_a)  # same id -> same variant, whatever the order
    m.update_score("enc", a, 1.0)
    assert m.variant("enc", a).score == pytest.approx(3.0)  # running mean of 5 and 1
    assert m.variant("enc", a).n_evaluations == 2


# --- defect: unseeded module-level random --------------------------------------------------------

def test_same_seed_same_mutants_different_seed_different():
    def mutants(seed):
        m = _mutator(rng=seed)
        torch.manual_seed(123)
        m.register("enc", nn.Linear(5, 5))
        ids = [m.mutate("enc") for _ in range(3)]
        return [_flat(m.variant("enc", i).module) for i in ids]

    torch.manual_seed(999)                     # the global generator must not matter
    a = mutants(7)
    torch.manual_seed(0)
    b = mutants(7)
    c = mutants(8)
    assert all(torch.equal(x, y) for x, y in zip(a, b))
    assert not all(torch.equal(x, y) for x, y in zip(a, c))


def test_generator_argument_is_the_only_randomness():
    g1, g2 = np.random.default_rng(3), np.random.default_rng(3)
    m1, m2 = ToolMutator(0.5, 0.1, 4, rng=g1), ToolMutator(0.5, 0.1, 4, rng=g2)
    torch.manual_seed(0)
    base = nn.Linear(4, 4)
    m1.register("t", copy.deepcopy(base))
    m2.register("t", copy.deepcopy(base))
    assert torch.equal(_flat(m1.variant("t", m1.mutate("t")).module), _flat(m2.variant("t", m2.mutate("t")).module))


def test_every_mutant_differs_from_its_parent():
    m = _mutator(mutation_rate=0.0)            # seed would copy unchanged; at least one tensor moves
    m.register("enc", nn.Linear(3, 3))
    v = m.mutate("enc")
    assert not torch.equal(_flat(m.variant("enc", v).module), _flat(m.current("enc").module))
    assert len(m.variant("enc", v).mutated) == 1


# --- defect: promote_best installs nothing ---------------------------------------------------------

def test_promote_installs_into_host_and_changes_its_output():
    host = _host()
    m = _mutator()
    m.register("encoder", host, attr="encoder")
    x = torch.randn(16, 4)
    before = host(x).detach()
    v = m.mutate("encoder")
    m.update_score("encoder", "encoder_v0", -1.0)
    m.update_score("encoder", v, 1.0)
    installed = m.promote_best("encoder")
    assert installed is m.variant("encoder", v).module
    assert host.encoder is installed
    assert not torch.allclose(host(x), before)
    assert m.current("encoder").id == v


def test_promote_installs_dotted_path():
    outer = nn.Sequential()
    outer.body = _host()
    m = _mutator()
    m.register("enc", outer, attr="body.encoder")
    v = m.mutate("enc")
    m.promote("enc", v)
    assert outer.body.encoder is m.variant("enc", v).module


def test_seed_call_shape_installs_the_winner_in_place():
    """The seed's own calls (000: ``register("encoder", encoder_module)``, ``mutate``,
    ``update_score``, ``promote_best``): the registered module itself now holds the winner's
    weights and buffers, so a host that holds it runs the winner."""
    torch.manual_seed(0)
    encoder_module = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4))
    host = nn.Sequential(encoder_module, nn.Linear(4, 1))           # a holder of the module
    before = copy.deepcopy(encoder_module.state_dict())
    mutator = tm.ToolMutator(mutation_rate=1.0, mutation_scale=0.5, rng=0)
    mutator.register("encoder", encoder_module)
    ids = [mutator.mutate("encoder") for _ in range(3)]
    for k, variant_id in enumerate(ids):
        mutator.update_score("encoder", variant_id, float(k == 1))   # the second mutant wins
    with torch.no_grad():                                            # a winner's buffer differs too
        mutator.variant("encoder", ids[1]).module[1].running_mean.fill_(0.25)
    winner = copy.deepcopy(mutator.variant("encoder", ids[1]).module.state_dict())
    returned = mutator.promote_best("encoder")
    assert returned is encoder_module and host[0] is encoder_module  # same object, new values
    after = encoder_module.state_dict()
    assert all(torch.equal(after[k], winner[k]) for k in winner)
    assert not torch.equal(after["0.weight"], before["0.weight"])
    assert torch.equal(after["1.running_mean"], torch.full((4,), 0.25))
    x = torch.randn(5, 3)
    host.eval()
    ref = nn.Sequential(copy.deepcopy(mutator.variant("encoder", ids[1]).module), host[1]).eval()
    assert torch.equal(host(x), ref(x))                              # the holder runs the winner
    assert mutator.current("encoder").id == ids[1]
    old = mutator.variant("encoder", "encoder_v0").module            # the old version kept its values
    assert old is not encoder_module
    assert all(torch.equal(old.state_dict()[k], before[k]) for k in before)
    assert encoder_module[0].weight.requires_grad                   # still trainable in place


def test_free_standing_promotion_back_and_forth_keeps_values():
    m = _mutator()
    lin = nn.Linear(2, 2)
    v0 = {k: t.clone() for k, t in lin.state_dict().items()}
    m.register("t", lin)
    v1 = m.mutate("t")
    w1 = {k: t.clone() for k, t in m.variant("t", v1).module.state_dict().items()}
    m.promote("t", v1)
    assert all(torch.equal(lin.state_dict()[k], w1[k]) for k in w1)
    m.promote("t", "t_v0")                                           # back to the registered values
    assert m.variant("t", "t_v0").module is lin
    assert all(torch.equal(lin.state_dict()[k], v0[k]) for k in v0)
    assert all(torch.equal(m.variant("t", v1).module.state_dict()[k], w1[k]) for k in w1)


# --- defect: unevaluated variants ranked as score 0 ------------------------------------------------

def test_unevaluated_variant_is_not_ranked_as_zero():
    m = _mutator()
    m.register("t", nn.Linear(2, 2))
    v1, v2 = m.mutate("t"), m.mutate("t")
    m.update_score("t", v1, -3.0)              # seed: unevaluated v0/v2 (score 0) would beat this
    assert math.isnan(m.variant("t", v2).score)
    assert m.best("t").id == v1
    assert m.promote_best("t") is m.variant("t", v1).module


def test_promote_best_with_nothing_evaluated_raises():
    m = _mutator()
    m.register("t", nn.Linear(2, 2))
    m.mutate("t")
    with pytest.raises(ValueError, match="evaluated"):
        m.promote_best("t")


def test_unevaluated_variant_cannot_be_parent():
    m = _mutator()
    m.register("t", nn.Linear(2, 2))
    v = m.mutate("t")
    with pytest.raises(ValueError, match="never been evaluated"):
        m.mutate("t", parent_id=v)
    m.update_score("t", v, 1.0)
    child = m.mutate("t", parent_id=v)
    assert m.variant("t", child).parent_id == v


# --- defect: eviction drops arbitrary variants -----------------------------------------------------

def test_eviction_keeps_current_and_this_round():
    m = _mutator(max_variants=4)
    m.register("t", nn.Linear(2, 2))
    ids = [m.mutate("t") for _ in range(3)]    # pool full: v0 + 3 of round 0
    with pytest.raises(RuntimeError, match="promote first"):
        m.mutate("t")                          # nothing evictable: all current or this round
    for i, s in zip(["t_v0", *ids], [-5.0, 2.0, -1.0, 0.0]):
        m.update_score("t", i, s)              # the current v0 scores worst of all
    m.promote("t", ids[2])                     # round 1; current = v3 (not the best)
    new = m.mutate("t")                        # evicts the lowest-scoring old variant that is not current
    pool = m.variant_ids("t")
    assert new in pool and ids[2] in pool
    assert "t_v0" not in pool                  # lowest score among old, non-current variants
    m.mutate("t")
    assert ids[1] not in m.variant_ids("t")    # next lowest
    assert ids[2] in m.variant_ids("t")        # current survives although it is not the best
    with pytest.raises(UnknownVariantError, match="evicted"):
        m.variant("t", "t_v0")


def test_eviction_prefers_unevaluated_old_variants():
    m = _mutator(max_variants=4)
    m.register("t", nn.Linear(2, 2))
    a, b, c = (m.mutate("t") for _ in range(3))
    for i, score in (("t_v0", -8.0), (a, 1.0), (c, -9.0)):
        m.update_score("t", i, score)          # b stays unevaluated
    m.promote("t", a)
    m.mutate("t")
    assert b not in m.variant_ids("t") and c in m.variant_ids("t")


# --- lineage ---------------------------------------------------------------------------------------

def test_lineage_table_records_parents_and_generations():
    m = _mutator(max_variants=3)
    m.register("t", nn.Linear(2, 2))
    a = m.mutate("t")
    m.update_score("t", a, 1.0)
    m.promote_best("t")
    b = m.mutate("t")
    m.update_score("t", b, 2.0)
    m.promote_best("t")
    c = m.mutate("t")                          # evicts v0
    lin = m.lineage_table("t")
    assert isinstance(lin, pd.DataFrame)
    assert list(lin.id) == ["t_v0", a, b, c]
    assert list(lin.parent_id.fillna("root")) == ["root", "t_v0", a, b]
    assert list(lin.generation) == [0, 1, 2, 3]
    assert lin.set_index("id").loc["t_v0", "evicted"]
    assert lin.set_index("id").loc[b, "current"]
    assert list(lin.ever_current) == [True, True, True, False]


def test_status_table_lists_the_pool():
    m = _mutator()
    m.register("t", nn.Linear(2, 2))
    m.mutate("t")
    st = m.status_table()
    assert list(st.id) == ["t_v0", "t_v1"] and list(st.current) == [True, False]
    assert set(m.get_status()) == {"t"}


# --- errors ----------------------------------------------------------------------------------------

def test_errors_are_clear():
    m = _mutator()
    with pytest.raises(UnknownToolError, match="unknown tool 'nope'"):
        m.mutate("nope")
    with pytest.raises(UnknownToolError):
        m.update_score("nope", "nope_v0", 1.0)
    with pytest.raises(UnknownToolError):
        m.promote_best("nope")
    with pytest.raises(ValueError, match="no parameters"):
        m.register("relu", nn.ReLU())
    with pytest.raises(AttributeError, match="no submodule"):
        m.register("x", _host(), attr="decoder")
    m.register("t", nn.Linear(2, 2))
    with pytest.raises(ValueError, match="already registered"):
        m.register("t", nn.Linear(2, 2))
    with pytest.raises(UnknownVariantError, match="no such variant"):
        m.update_score("t", "t_v7", 1.0)
    with pytest.raises(ValueError, match="finite"):
        m.update_score("t", "t_v0", float("nan"))
    with pytest.raises(ValueError, match="max_variants"):
        ToolMutator(max_variants=1)


# --- vectorised scoring ----------------------------------------------------------------------------

@pytest.mark.parametrize("with_host", [True, False], ids=["host", "free"])
def test_vmap_scores_equal_loop(with_host):
    host = _host()
    m = _mutator(max_variants=9)
    if with_host:
        m.register("encoder", host, attr="encoder")
    else:
        m.register("encoder", host.encoder)
    for _ in range(8):
        m.mutate("encoder")
    x = torch.randn(64, 4)
    y = torch.randn(64) if with_host else torch.randn(64, 8)
    fast = m.evaluate("encoder", x, y, vectorised=True, record=False)
    slow = m.evaluate("encoder", x, y, vectorised=False, record=False)
    assert list(fast) == list(slow) == m.variant_ids("encoder")
    np.testing.assert_allclose(list(fast.values()), list(slow.values()), rtol=1e-5, atol=1e-6)
    if with_host:                               # the loop puts the original back
        assert host.encoder is m.current("encoder").module
        mods = [m.variant("encoder", i).module for i in m.variant_ids("encoder")]
        with torch.no_grad():
            direct = [float(nn.functional.mse_loss(host.head(mm(x)).squeeze(-1), y)) for mm in mods]
        np.testing.assert_allclose(list(fast.values()), direct, rtol=1e-5)


def test_evaluate_records_negative_loss():
    m = _mutator()
    m.register("t", nn.Linear(2, 1))
    x, y = torch.randn(8, 2), torch.randn(8, 1)
    losses = m.evaluate("t", x, y)
    assert m.variant("t", "t_v0").score == pytest.approx(-losses["t_v0"])
    with pytest.raises(ValueError):
        variant_losses([], x, y)


# --- config ----------------------------------------------------------------------------------------

def _cfg(**kw):
    base = dict(experiment="tool_mutation", kind="tool_mutation", scale="smoke", seeds=[0, 1], n_steps=40,
                mutate_every=10, log_every=10, n_variants=3, max_variants=4, n_val=64, n_test=128)
    return {**base, **kw}


@pytest.mark.parametrize("bad, match", [
    ({"arms": ["sgd", "evolve"]}, "arms: 'evolve' is not allowed"),
    ({"max_variants": 3}, "max_variants"),
    ({"mutate_every": 15}, "multiple of log_every"),
    ({"n_steps": 45}, "n_steps"),
    ({"mutation_rate": 1.5}, "mutation_rate"),
    ({"seeds": []}, "seeds: needs at least one"),
    ({"tools": ["decoder"]}, "tools"),
    ({"lr": "fast"}, "lr: expected float"),
    ({"unknown_key": 1}, "unknown key"),
], ids=["arm", "pool", "mutate_every", "n_steps", "rate", "seeds", "tool", "type", "unknown"])
def test_config_validation_errors(bad, match):
    with pytest.raises(ConfigError, match=match):
        tm.validate_config(_cfg(**bad))


@pytest.mark.parametrize("scale", ["smoke", "cpu", "paper"])
def test_shipped_configs_validate(scale):
    from lib.experiment import load
    from lib.core.paths import config_path
    cfg = load(config_path("tool_mutation", scale))
    assert cfg["scale"] == scale and cfg["kind"] == "tool_mutation"


def test_shards_cover_arms_by_seeds():
    sh = tm.shards(_cfg())
    assert [(s["arms"], s["seeds"]) for s in sh] == [([a], [s]) for a in tm.ARMS for s in (0, 1)]
    assert all(tm.validate_config(s) == s for s in sh)


# --- the experiment: determinism and resume ----------------------------------------------------------

@pytest.fixture
def datadir(tmp_path, monkeypatch):
    monkeypatch.setattr(tm, "data_dir", lambda scale, exp: tmp_path / scale / exp)
    return tmp_path


def test_experiment_rows_deterministic_and_complete(datadir):
    cfg = _cfg(seeds=[0])
    df = tm.run_experiment(cfg, progress=False)
    assert list(df.columns) == tm.COLUMNS
    assert set(df.arm) == set(tm.ARMS)
    prom = df[(df.metric == "promoted")]
    assert set(prom.arm) == {"mutate_promote", "random_promote"} and len(prom) == 2 * 4
    # all arms share teacher, data and initial host: identical loss at step 0 and before the first round
    first = df[df.metric.isin(["heldout_loss", "train_loss"]) & (df.step <= 10) & ~((df.step == 10) & (df.metric == "heldout_loss"))].pivot_table(index=["step", "metric"], columns="arm", values="value")
    assert len(first) == 2 and np.allclose(first.to_numpy(), first.to_numpy()[:, :1])
    # selection never installs a variant worse (on the validation batch) than the current one
    mp = df[(df.arm == "mutate_promote") & (df.tool == "encoder")].pivot_table(index="step", columns="metric", values="value")
    assert (mp.chosen_val_loss <= mp.current_val_loss + 1e-12).all()
    # a re-run reuses the data; a fresh folder reproduces it bit for bit
    again = tm.run_experiment(cfg, progress=False)
    pd.testing.assert_frame_equal(df, again)
    lin = pd.read_csv(datadir / "smoke" / "tool_mutation" / "lineage" / "mutate_promote_s0.csv")
    assert {"id", "parent_id", "generation"} <= set(lin.columns)


def test_resume_after_interruption_gives_identical_rows(datadir, monkeypatch):
    cfg = _cfg(seeds=[0], arms=["mutate_promote"])
    ref = tm.run_experiment(cfg, progress=False)
    folder = datadir / "smoke" / "tool_mutation"
    ref_csv = shard_path(folder, "mutate_promote", 0).read_text()
    # a fresh folder, killed during step 25 (blocks 0..20 done, half a block written)
    monkeypatch.setattr(tm, "data_dir", lambda scale, exp: datadir / "second" / exp)
    folder2 = datadir / "second" / "tool_mutation"
    real_sample = tm.Task.sample
    calls = {"n": 0}

    def dying(self, n):
        calls["n"] += 1
        if calls["n"] == 2 + 25:                # 2 fixed sets, then one per step
            raise KeyboardInterrupt
        return real_sample(self, n)

    monkeypatch.setattr(tm.Task, "sample", dying)
    with pytest.raises(KeyboardInterrupt):
        tm.run_experiment(cfg, progress=False)
    shard = shard_path(folder2, "mutate_promote", 0)
    assert last_done(shard) == 20
    tm.append_rows(shard, [{c: 0 for c in tm.COLUMNS} | {"step": 30, "arm": "x"}], tm.COLUMNS)  # torn block
    monkeypatch.setattr(tm.Task, "sample", real_sample)
    resumed = tm.run_experiment(cfg, progress=False)
    assert shard.read_text() == ref_csv
    pd.testing.assert_frame_equal(resumed, ref)


def test_folder_of_another_config_is_refused(datadir):
    tm.run_experiment(_cfg(seeds=[0], arms=["sgd"]), progress=False)
    with pytest.raises(ValueError, match="another config"):
        tm.run_experiment(_cfg(seeds=[0], arms=["sgd"], lr=0.01), progress=False)
    # another arm/seed of the same config shares the folder (shards)
    df = tm.run_experiment(_cfg(seeds=[1], arms=["sgd"]), progress=False)
    assert set(df.seed) == {1}
    folder = datadir / "smoke" / "tool_mutation"
    assert set(read_rows(folder).seed) == {0, 1}
    from lib.core.manifest import read_manifest
    m = read_manifest(folder)
    assert m["status"] == "complete" and m["seeds"] == [0, 1] and m["arms"] == ["sgd"]


def _seed_mean(d, arm):
    """step -> mean over seeds of ``value`` (one row per seed and step)."""
    return d[d.arm == arm].groupby("step")["value"].mean()


def _check_arm_lines(ax, d, arms):
    from lib.style import colour
    drawn = figcheck.lines(ax)
    assert set(arms) <= set(figcheck.legend_labels(ax))
    for arm in arms:
        want = _seed_mean(d, arm)
        np.testing.assert_allclose(drawn[arm].get_xdata(), want.index, err_msg=arm)
        np.testing.assert_allclose(drawn[arm].get_ydata(), want.to_numpy(), rtol=1e-9, err_msg=arm)
        assert figcheck.same_colour(drawn[arm].get_color(), colour(arm)), arm


def test_plots_draw_from_data(datadir, monkeypatch):
    import matplotlib.pyplot as plt
    from lib.tool_mutation import figures as plots
    monkeypatch.setattr(plots, "data_dir", tm.data_dir)
    with pytest.raises(FileNotFoundError, match="python -m lib.experiment"):
        plots.load_data("smoke")
    tm.run_experiment(_cfg(seeds=[0, 1]), progress=False)
    data = plots.load_data("smoke")
    rows = data["rows"]
    arms = ["sgd", "mutate_promote", "random_promote"]
    assert set(rows.arm) == set(arms)

    h = rows[(rows.metric == "heldout_loss") & (rows.step > 0)]
    fig = plots.draw_heldout(rows)
    _check_arm_lines(fig.axes[0], h, arms)
    assert fig.axes[0].get_yscale() == "log" and fig.axes[0].get_ylabel() == "held-out MSE"
    plt.close(fig)

    fig = plots.draw_promotions(rows)
    _check_arm_lines(fig.axes[0], rows[rows.metric == "promotions"], [a for a in arms if a != "sgd"])
    plt.close(fig)

    w = rows[rows.metric.isin(["current_val_loss", "best_variant_val_loss"])].pivot_table(
        index=["arm", "seed", "step"], columns="metric", values="value").reset_index()
    w["value"] = 1 - w.best_variant_val_loss / w.current_val_loss
    fig = plots.draw_selection(rows)
    _check_arm_lines(fig.axes[0], w, [a for a in arms if a != "sgd"])
    plt.close(fig)

    # final loss: one dot per (arm, seed) at the arm's column, one grey line joining each seed's dots
    fin = h[h.step == h.step.max()]
    fig = plots.draw_final(rows)
    ax = fig.axes[0]
    want = sorted((float(arms.index(r.arm)), r.value) for r in fin.itertuples())
    np.testing.assert_allclose(sorted(map(tuple, figcheck.points(ax))), want, rtol=1e-12)
    for sd in (0, 1):
        per_arm = [fin[(fin.arm == a) & (fin.seed == sd)].value.item() for a in arms]
        assert any(len(ln.get_ydata()) == len(arms) and np.allclose(ln.get_ydata(), per_arm)
                   for ln in ax.get_lines()), f"seed {sd} not joined"
    assert [t.get_text().split("\n")[0] for t in ax.get_xticklabels()] == arms
    plt.close(fig)

    # lineage: one panel per arm; the installed chain is the variants that were ever current
    lin = data["lineage"]
    fig = plots.draw_lineage(lin)
    assert [ax.get_title() for ax in fig.axes] == [f"{a}, seed 0" for a in ("mutate_promote", "random_promote")]
    for ax, arm in zip(fig.axes, ("mutate_promote", "random_promote")):
        d = lin[(lin.arm == arm) & (lin.seed == 0)]
        chain = d[d.ever_current.astype(str) == "True"]
        pts = figcheck.points(ax)
        assert len(pts) == len(d) + len(chain)  # every variant in grey, the installed ones again in colour
        assert sorted(map(tuple, pts)) == sorted([*zip(d.created_round, d.generation), *zip(chain.created_round, chain.generation)])
    plt.close(fig)
    t = plots.stats_table("smoke")
    assert set(t.reference) == {"sgd", "random_promote"} and (t.n == 2).all()
