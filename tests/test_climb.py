"""The climb (lib.society.climb, configs/society_climb/): the ladder's rungs and pools (no evaluation prompt is in
any training pool), sampling that does not depend on the batch, the filters on hand-made samples, and the arms on
fake agents over the tiny base's training: a climb_vote run never calls the loop's verifier, climb_single spends the
population's samples and steps, the kept answers are exactly the verified or voted ones, and a resumed run equals an
uninterrupted one."""
from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from lib.core.config import ConfigError
from lib.core.tasks import FAMILIES, RUNGS, Task, make_tasks, normalise, rung_of, rung_tasks, verify
from lib.society.climb import keep
from lib.society.climb.config import load_file, validate_config
from lib.society.climb.ladder import EVALUATION, TRAINING, audit, ladder_for, overlaps
from lib.core.rows import shard_path
from lib.society.pools import part_of, pretrain_tasks

PART = {"hints": "founders", "climb": "children", "rung_val": "val", "rung_select": "val", "inheritance_t": "children"}

ROOT = Path(__file__).resolve().parents[1]
SMOKE, CPU = ROOT / "configs/society_climb/smoke.yaml", ROOT / "configs/society_climb/cpu.yaml"


# ----------------------------------------------------------------------------- the ladder


@pytest.mark.parametrize("family", FAMILIES)
def test_each_rung_is_one_step_past_the_novel_region_and_its_answers_are_right(family):
    for x in make_tasks(family, 300, seed=1):
        assert rung_of(x) == 0
    for r in RUNGS:
        tasks = rung_tasks(family, r, 300, seed=2)
        assert {rung_of(x) for x in tasks} == {r}
        assert all(verify(x.answer, x) for x in tasks)
    lists = rung_tasks("lists", 1, 5, seed=0)[0]
    assert len(lists.answer.split()) == 6 and lists.answer.split() == sorted(lists.answer.split())
    add = rung_tasks("arith", 2, 1, seed=0)[0]
    a, b = add.prompt.removeprefix("add ").removesuffix(" =").split("+")
    assert 200 <= int(a) < 300 and 0 <= int(b) < 100 and int(add.answer) == int(a) + int(b)


def test_the_base_is_pre_trained_on_no_rung():
    assert all(rung_of(x) == 0 for step in range(0, 2000, 97) for x in pretrain_tasks(step))


CLIMB_CONFIGS = sorted(ROOT.glob("configs/society_climb*/*.yaml"))  # the study's and its seat-fair re-run's


@pytest.mark.parametrize("path", CLIMB_CONFIGS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_no_evaluation_prompt_of_any_seed_is_in_a_training_pool(path):
    cfg = load_file(path)
    for seed in cfg.seed_list():
        pools = audit(cfg, seed, pretraining=False)  # pre-training holds rung 0 only (the test above)
        assert overlaps(pools) == {}, seed
        assert {k for k in pools if k.startswith(TRAINING)} >= {"hints", "inheritance_t0", "climb_r1"}
        assert {"rung_val", "rung_select", "rung1_test", "test", "val", "selection"} <= set(pools) & set(EVALUATION)
        for name, prompts in pools.items():  # each ladder pool lies in its part of the task space
            part = PART.get(name.rstrip("0123456789").removesuffix("_r"), "test" if name.endswith("_test") else None)
            if part and name not in ("val", "test", "selection", "screening"):
                assert {part_of(Task("x", p, "")) for p in prompts} == {part}, (seed, name)
        lad = ladder_for(cfg, seed)
        assert [len(p) for p in lad.climb] == [cfg.n_climb * len(cfg.families)] * cfg.rounds
        climbed = [x.prompt for p in lad.climb for x in p]
        assert len(set(climbed)) == len(climbed)  # fresh prompts every round
        assert {rung_of(x) for x in lad.hints + lad.rung_val + lad.rung_select} == {cfg.rung}


def test_the_overlap_check_finds_a_planted_overlap():
    pools = audit(load_file(SMOKE), 0, pretraining=False)
    pools["climb_r1"] = pools["climb_r1"] + pools["rung1_test"][:2]
    assert overlaps(pools) == {("climb_r1", "rung1_test"): 2}


def test_the_audit_command_says_zero_overlap_and_bad_input_gets_one_line(tmp_path):
    run = [sys.executable, "-m", "lib.society.climb.ladder"]
    ok = subprocess.run(run + [str(SMOKE), "--check", "--no-pretraining"], capture_output=True, text=True, cwd=ROOT)
    assert ok.returncode == 0 and "0 prompts shared" in ok.stdout
    bad = tmp_path / "bad.yaml"
    bad.write_text(SMOKE.read_text().replace("arms: [climb,", "arms: [climbb,").replace(
        "../society/smoke.yaml", str(ROOT / "configs/society/smoke.yaml")))
    out = subprocess.run(run + [str(bad), "--check"], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 2 and "climbb" in out.stderr and "Traceback" not in out.stderr


# ----------------------------------------------------------------------------- the config


@pytest.mark.parametrize("change, named", [
    ({"arms": ["climb", "full"]}, "full"), ({"vote_m": 1}, "majority"), ({"vote_m": 9}, "vote_m"),
    ({"n_select": 0}, "n_select"), ({"replay_share": 1.5}, "replay_share"), ({"rung": 3}, "rung"),
    ({"kind": "llm_society_v2"}, "kind")])
def test_a_bad_config_is_refused_at_the_door_naming_the_key(change, named):
    from lib.core.config import load_layers
    raw = {**load_layers(SMOKE), **change}
    with pytest.raises(ConfigError, match=named):
        validate_config(raw)


# ----------------------------------------------------------------------------- the filters


def T(prompt, answer="x", family="lists"):
    return Task(family, prompt, answer)


def test_the_verifier_keeps_every_distinct_accepted_answer_once_with_what_was_said():
    tasks = [T("p0", "1 2"), T("p1", "3"), T("p2", "4")]
    samples = [[["1 2", "9"], ["5", "5"], ["4", "4."]],
               [["1  2", "nope"], ["3", "3"], ["7", "8"]]]
    kept = keep.verified_kept(tasks, samples, lambda o, x: verify(o, x))
    assert [(x.prompt, normalise(x.answer)) for x in kept] == [("p0", "1 2"), ("p1", "3"), ("p2", "4")]
    said = {o for agent in samples for outs in agent for o in outs}
    assert all(x.answer in said for x in kept)
    assert keep.verified_kept(tasks, samples, lambda o, x: False) == []


def test_a_kept_answer_is_labelled_with_what_the_learner_said_not_with_the_gold_answer():
    """The label is the said surface form: "1, 2" and "Answer: 3." are accepted for "1 2" and "3", and kept as said
    (a filter that relabels with the gold answer fails here: its labels equal gold)."""
    tasks = [T("p0", "1 2"), T("p1", "3")]
    samples = [[["1, 2", "9"], ["Answer: 3.", "5"]]]
    kept = keep.verified_kept(tasks, samples, verify)
    assert [x.answer for x in kept] == ["1, 2", "3."]
    assert all(x.answer != t.answer and verify(x.answer, t) for x, t in zip(kept, tasks))
    voted = keep.vote_kept(tasks[:1], [[["1, 2"]], [["1,2"]], [["9"]]], 2)
    assert [x.answer for x in voted] in (["1, 2"], ["1,2"]) and voted[0].answer != tasks[0].answer


def test_the_filters_do_not_read_an_agents_seat():
    """Relabelling the agents leaves every filter's kept answers (labels and order) unchanged."""
    rng = np.random.default_rng(3)
    tasks = [T(f"p{j}", str(j % 3)) for j in range(12)]
    for _ in range(50):
        samples = [[[str(rng.integers(0, 4)) + (" " * int(rng.integers(0, 2))) for _ in range(3)] for _ in tasks]
                   for _ in range(4)]
        perm = rng.permutation(4)
        moved = [samples[i] for i in perm]
        assert keep.verified_kept(tasks, samples, verify) == keep.verified_kept(tasks, moved, verify)
        assert keep.vote_kept(tasks, samples, 3) == keep.vote_kept(tasks, moved, 3)
        c, k, d = keep.agreement(samples)
        c2, k2, d2 = keep.agreement(moved)
        assert c == c2 and np.array_equal(k[perm], k2) and np.array_equal(d[np.ix_(perm, perm)], d2)


def test_a_vote_keeps_what_m_agents_say_most_and_never_calls_a_verifier():
    tasks = [T("p0"), T("p1"), T("p2")]
    samples = [[["a", "a", "b"], ["c", "d", "d"], ["e", "f", "g"]],
               [["a", "b", "b"], ["d", "d", "d"], ["e", "", ""]],
               [["a", "a", "a"], ["c", "c", "d"], ["h", "h", "e"]]]
    # agents' votes: p0 a, b, a -> a (2 of 3); p1 d, d, c -> d; p2 e (tie: first sampled), e, h -> e
    assert [x.answer for x in keep.vote_kept(tasks, samples, 2)] == ["a", "d", "e"]
    assert [x.answer for x in keep.vote_kept(tasks, samples, 3)] == []
    with pytest.raises(ValueError, match="majority"):
        keep.vote_kept(tasks, samples, 1)


def test_self_consistency_keeps_an_answer_whose_share_of_the_samples_reaches_the_threshold():
    tasks = [T("p0"), T("p1")]
    outs = [["a", "a", "a", "b"], ["c", "d", "c", "d"]]
    assert [x.prompt for x in keep.self_consistent_kept(tasks, outs, 0.75)] == ["p0"]
    assert keep.self_consistent_kept(tasks, outs, 0.8) == []


def test_agreement_measures_conformity_with_the_consensus_of_modal_answers():
    samples = [[["a"], ["b"]], [["a"], ["c"]], [["z"], ["b"]]]
    consensus, kappa, dist = keep.agreement(samples)
    assert consensus == ["a", "b"]
    assert list(kappa) == [1.0, 0.5, 0.5]
    assert dist[0, 1] == 0.5 and dist[0, 2] == 0.5 and dist[1, 2] == 1.0 and dist[0, 0] == 0
    # four different answers: no consensus, nobody conforms (the seat-biased rule gave agent 0 conformity 1)
    consensus, kappa, _ = keep.agreement([[["a"]], [["b"]], [["c"]], [["d"]]])
    assert consensus == [""] and list(kappa) == [0.0] * 4


def test_a_rounds_mix_has_its_size_and_keeps_at_most_its_share_of_kept_answers(rng):
    kept = [T(f"k{i}") for i in range(100)]
    replay = [T(f"r{i}") for i in range(30)]
    mix = keep.training_mix(kept, replay, n_mix=80, replay_share=0.5, rng=rng)
    assert len(mix) == 80 and sum(x.prompt.startswith("k") for x in mix) == 40
    few = keep.training_mix(kept[:5], replay, n_mix=80, replay_share=0.5, rng=rng)
    assert len(few) == 80 and sum(x.prompt.startswith("k") for x in few) == 5  # replay fills what kept does not
    same = [keep.training_mix(kept[:5], replay, n_mix=20, replay_share=0.5, rng=np.random.default_rng(7))
            for _ in range(2)]
    assert same[0] == same[1]  # a function of its seed
    assert len({x.prompt for x in keep.training_mix([], replay, n_mix=30, replay_share=0.5, rng=rng)}) == 30
    assert len(keep.training_mix([], replay, n_mix=75, replay_share=0.5, rng=rng)) == 75  # replay repeats past its end


# ----------------------------------------------------------------------------- sampling on the tiny base


@pytest.fixture(scope="module")
def tiny():
    from lib.engines.models import load_base
    return load_base("tiny", dtype="fp32")


def test_a_sample_depends_on_seed_agent_prompt_and_index_only_not_on_the_batch(tiny):
    from lib.engines.sample import SamplingAgents
    prompts = [x.prompt for f in FAMILIES for x in rung_tasks(f, 1, 8, seed=3) + make_tasks(f, 4, seed=4)]
    small = SamplingAgents(tiny, hard=True, batch_size=7)
    big = SamplingAgents(tiny, hard=True, batch_size=4096)
    a = small.sample([small.BASE], prompts, 5, temperature=2.0, seed=1)[0]
    b = big.sample([big.BASE], prompts[::-1] + prompts[:9], 5, temperature=2.0, seed=1)[0][:len(prompts)][::-1]
    assert a == b
    assert sum(len(set(s)) > 1 for s in a) >= len(prompts) // 2, "samples at T = 2 should vary"
    again = SamplingAgents(tiny, hard=True, batch_size=64).sample([big.BASE], prompts, 5, temperature=2.0, seed=1)[0]
    assert again == a
    other = small.sample([small.BASE], prompts, 5, temperature=2.0, seed=2)[0]
    assert other != a
    with pytest.raises(ValueError, match="temperature"):
        small.sample([small.BASE], prompts, 1, temperature=0.0, seed=1)


# ----------------------------------------------------------------------------- the arms on fake agents


def solve(prompt: str) -> str:
    body = prompt.split(" ", 1)[1].removesuffix(" =")
    if prompt.startswith("sort"):
        return " ".join(sorted(body.split()))
    if prompt.startswith("rev"):
        return body[::-1]
    a, b = body.split("+")
    return str(int(a) + int(b))


def _u(*parts) -> float:
    return int.from_bytes(hashlib.blake2b("|".join(map(str, parts)).encode(), digest_size=8).digest(), "big") / 2**64


class FakeAgents:
    """Agents whose answers are a deterministic function of (adapter folder, prompt, sample): right with
    probability 0.4, else one of two wrong answers (so votes can agree on a wrong one)."""

    BASE = "__base__"

    def __init__(self, base=None, *, engine=None, hard=None, batch_size=None, counter=None):
        self.loaded, self.counter = {}, counter

    def load(self, name, path):
        self.loaded[name] = Path(path).name + Path(path).parent.name

    def forget(self):
        self.loaded.clear()

    def _say(self, name, prompt, j):
        u = _u(self.loaded.get(name, name), prompt, j)
        return solve(prompt) if u < 0.4 else ("0" if u < 0.8 else "1")

    def answer(self, names, prompts):
        return [[self._say(n, p, -1) for p in prompts] for n in names]

    def sample(self, names, prompts, k, *, temperature, seed):
        return [[[self._say(n, p, (seed, j)) for j in range(k)] for p in prompts] for n in names]


def never(output, task):
    raise AssertionError("the loop's verifier was called")


@pytest.fixture(scope="module")
def climbed(tiny, tmp_path_factory):
    """Every arm of the smoke config on seed 0 with fake agents (the tiny base trains): ``(rows, cfg, adapters)``;
    climb runs first with the real verifier (it builds the generalists), climb_vote with one that must not be
    called."""
    from lib.core.config import load_layers
    from lib.society.climb.run import run_experiment
    tmp = tmp_path_factory.mktemp("climb")
    raw = {**load_layers(SMOKE), "seeds": [0], "adapters_dir": str(tmp / "runs")}
    rows = []
    for arms, ver in ((["climb", "climb_single", "climb_single_vote", "baseline_hints", "baseline_gold_climb",
                        "climb_single@child", "climb@lineages"], verify), (["climb_vote"], never)):
        cfg = validate_config({**raw, "arms": arms})
        rows.append(run_experiment(cfg, folder=tmp / "data", verifier=ver, base=tiny, agents=FakeAgents))
    return pd.concat(rows, ignore_index=True), validate_config(raw), tmp


def value(rows, arm, metric, t=None, agent=-1):
    d = rows[(rows["arm"] == arm) & (rows["metric"] == metric) & (rows["agent"] == agent)]
    return d if t is None else d[d["generation"] == t]["value"].to_numpy()


def test_a_climb_vote_run_never_calls_the_verifier_and_counts_none(climbed):
    rows, cfg, _ = climbed
    assert value(rows, "climb_vote", "cost_verifier_calls", cfg.rounds).tolist() == [0.0]
    assert value(rows, "climb", "cost_verifier_calls", cfg.rounds)[0] > 0
    assert not (rows[rows["arm"] == "climb_vote"]["metric"] == "val_overall").any()


def test_climb_single_spends_the_populations_samples_and_steps(climbed):
    rows, cfg, _ = climbed
    last = {a: {m: value(rows, a, m, cfg.rounds)[0] for m in ("cost_samples", "cost_train_steps")}
            for a in ("climb", "climb_vote", "climb_single", "climb_single_vote")}
    assert len({tuple(v.values()) for v in last.values()}) == 1, last
    P, k, n = cfg.population, cfg.climb_samples, cfg.n_climb * len(cfg.families)
    assert last["climb"]["cost_samples"] == cfg.rounds * P * k * n
    one_shot = value(rows, "baseline_hints", "cost_train_steps", cfg.rounds)[0]
    assert one_shot == last["climb"]["cost_train_steps"]  # the one-shot baseline trains a population's steps
    learner_rows = rows[(rows["arm"] == "climb_single") & (rows["generation"] == 1) & (rows["agent"] >= 0)]
    assert set(learner_rows["agent"]) == {0}


def test_a_learner_at_one_childs_budget_spends_one_childs_samples_and_steps(climbed):
    rows, cfg, _ = climbed
    k, n = cfg.climb_samples, cfg.n_climb * len(cfg.families)
    assert value(rows, "climb_single@child", "cost_samples", cfg.rounds).tolist() == [cfg.rounds * k * n]
    start = value(rows, "climb", "cost_train_steps", cfg.rounds)[0] - cfg.rounds * cfg.population * cfg.round_steps
    assert value(rows, "climb_single@child", "cost_train_steps", cfg.rounds).tolist() == [
        start + cfg.rounds * cfg.round_steps]


def test_lineages_select_nothing_each_child_continues_its_own_parent(climbed):
    rows, cfg, _ = climbed
    nxt = rows[(rows["arm"] == "climb@lineages") & (rows["metric"] == "next_parent")]
    assert len(nxt) == cfg.rounds * cfg.population and (nxt["value"] == nxt["agent"]).all()
    mine = rows[rows["arm"] == "climb@lineages"]
    assert not (mine["metric"] == "val_overall").any() and not mine["selected"].any()
    assert value(rows, "climb@lineages", "cost_verifier_calls", cfg.rounds)[0] > 0  # the verifier still keeps


def test_the_pool_only_grows_every_rounds_kept_answers_stay_in_it(climbed):
    """pool_n at round t is every kept answer so far, and after the last round the pool still holds round 0's
    (a round that replaced the pool by its own kept answers fails both)."""
    rows, cfg, tmp = climbed
    from lib.core.rows import read_progress
    for arm in ("climb", "climb_vote", "climb_single"):
        kept = [value(rows, arm, "kept_n", t)[0] for t in range(cfg.rounds)]
        pool = [value(rows, arm, "pool_n", t)[0] for t in range(cfg.rounds)]
        assert pool == list(np.cumsum(kept)), (arm, kept, pool)
        info = read_progress(shard_path(tmp / "data", arm, 0))
        by_round = [sum(x[3] == t for x in info["pool"]) for t in range(cfg.rounds)]
        assert by_round == kept and kept[0] > 0, (arm, by_round, kept)


def test_the_ensemble_read_out_is_the_strict_majority_of_the_last_populations_greedy_answers(climbed):
    rows, cfg, tmp = climbed
    from lib.core.rows import read_progress
    lad = ladder_for(cfg, 0)
    tasks = lad.rung_test[cfg.rung]
    for arm in ("climb", "climb_vote", "climb@lineages"):
        info = read_progress(shard_path(tmp / "data", arm, 0))
        fake = FakeAgents()
        names = [f"a{i}" for i in range(cfg.population)]
        for n, d in zip(names, info["agents"]):
            fake.load(n, tmp / "runs" / d)
        said = fake.answer(names, [x.prompt for x in tasks])
        right = 0
        for j, x in enumerate(tasks):
            counts = pd.Series([a[j] for a in said]).value_counts()
            strict = len(counts) == 1 or counts.iloc[0] > counts.iloc[1]
            right += strict and counts.index[0] == x.answer
        got = value(rows, arm, f"ensemble_rung{cfg.rung}", cfg.rounds)
        assert got.tolist() == [pytest.approx(right / len(tasks))], arm
    assert len(value(rows, "climb_single", f"ensemble_rung{cfg.rung}")) == 0


def test_the_kept_answers_are_exactly_the_verified_or_the_voted_ones(climbed):
    rows, cfg, tmp = climbed
    lad = ladder_for(cfg, 0)
    fake = FakeAgents()
    gens = sorted((tmp / "runs" / "s0").glob("generalists-*"))[0]
    names = [f"t0a{i}" for i in range(cfg.population)]
    for n, i in zip(names, range(cfg.population)):
        fake.load(n, gens / f"g{i}")
    climb = lad.climb[0]
    s = fake.sample(names, [x.prompt for x in climb], cfg.climb_samples, temperature=1.0, seed=0)
    # independent counts: a prompt is kept by the verifier when any sample is right (one right answer per prompt)
    any_right = sum(any(solve(x.prompt) == o for agent in s for o in agent[j]) for j, x in enumerate(climb))
    assert value(rows, "climb", "kept_n", 0).tolist() == [any_right]
    assert value(rows, "climb", "kept_wrong_share", 0).tolist() == [0.0]
    votes = 0
    for j in range(len(climb)):
        modal = []
        for agent in s:
            c = pd.Series(agent[j]).value_counts()
            modal.append(next(o for o in agent[j] if c[o] == c.max()))
        top = pd.Series(modal).value_counts()
        votes += int(top.max() >= cfg.vote_m)
    assert value(rows, "climb_vote", "kept_n", 0).tolist() == [votes]
    assert value(rows, "climb_vote", "kept_wrong_share", 0)[0] > 0  # fake agents agree on wrong answers too


def test_a_resumed_climb_equals_an_uninterrupted_one(climbed, tiny, tmp_path):
    from lib.core.config import load_layers
    from lib.society.climb.run import run_experiment
    from lib.society.shard_job import Interrupted
    rows, cfg, tmp = climbed
    raw = {**load_layers(SMOKE), "seeds": [0], "arms": ["climb"], "adapters_dir": str(tmp_path / "runs")}
    c = validate_config(raw)
    with pytest.raises(Interrupted):
        run_experiment(c, folder=tmp_path / "data", base=tiny, agents=FakeAgents, interrupt_after=0)
    again = run_experiment(c, folder=tmp_path / "data", base=tiny, agents=FakeAgents)
    mine = rows[rows["arm"] == "climb"].reset_index(drop=True)
    assert len(again) == len(mine)
    pd.testing.assert_frame_equal(again.reset_index(drop=True)[["generation", "agent", "metric", "value"]],
                                  mine[["generation", "agent", "metric", "value"]], check_dtype=False)


def test_the_primary_table_prints_each_difference_as_a_minus_b():
    """climb-primary's Δ is the mean paired difference, a − b (a row's attribute ``.diff`` is pandas' method, which
    printed "—" there: the planted form is caught by the equality below)."""
    import re
    from lib.society.studies.climb import tables
    text = tables.climb_primary("smoke")
    rows = [ln.split("|")[1:-1] for ln in text.splitlines()[2:]]
    assert len(rows) == 4
    for cells in rows:
        a, b, delta = (float(c.strip().split()[0].replace("−", "-")) for c in (cells[2], cells[3], cells[4]))
        assert abs(delta - (a - b)) <= 0.0015, cells  # three printed digits each
        assert re.match(r"\s*[+−]\d\.\d{3} [\[(]", cells[4]), cells
