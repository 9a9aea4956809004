"""One generation's steps (lib.society.generation) with fake agents whose answers are fixed lists: no model, no disk."""
from __future__ import annotations

import numpy as np
import pytest

from lib.society import generation as step
from lib.society.pools import GenerationPools
from lib.society.config import Arm
from lib.society.rows import RowWriter
from lib.core.tasks import Task

FAMS = ("lists", "arith")


def T(family, k):
    """Task k of a family: prompt 'f k =' with answer str(k)."""
    return Task(family, f"{family} {k} =", str(k))


TEST = [T("lists", 0), T("lists", 1), T("arith", 2), T("arith", 3)]
VAL = [T("lists", 10), T("lists", 11), T("arith", 12), T("arith", 13)]
CONF = [T("lists", 20), T("arith", 21), T("arith", 22)]
INHERIT = [T("lists", 30 + k) for k in range(10)]
POOLS = GenerationPools(test=TEST, val=VAL, screen_in_val=[0, 2], conformity=CONF, inheritance=INHERIT)


class FakeAgents:
    """Agents that answer from fixed tables: ``table[name][prompt]`` (missing: "wrong").

    A merge of two parents answers, on each prompt, as the parent with the larger weight (the first
    on a tie) — enough to make merges differ by their weights."""

    BASE = "__base__"

    def __init__(self, table: dict[str, dict[str, str]]):
        self.table = {n: dict(t) for n, t in table.items()}
        self.calls: list[tuple[list[str], list[str]]] = []
        self.merges: list[tuple[list[str], list[float], str, str]] = []

    def answer(self, names, prompts):
        self.calls.append((list(names), list(prompts)))
        return [[self.table[n].get(p, "wrong") for p in prompts] for n in names]

    def merge(self, parents, weights, name, method):
        self.merges.append((list(parents), list(weights), name, method))
        a, b = parents
        self.table[name] = dict(self.table[a] if weights[0] >= weights[1] else self.table[b])
        return name


def right(tasks):
    return {x.prompt: x.answer for x in tasks}


def arm(name="full", g=0.5, merge="exact", diversity=True, elitism=0, n_candidates=2):
    return Arm(label=name, name=name, g=g, merge=merge, diversity=diversity, elitism=elitism, n_candidates=n_candidates)


def gen(ev, sel, names=("a0", "a1", "a2")):
    """Generation 0 of three agents on :data:`POOLS`, evaluated and selected."""
    return step.Generation(t=0, names=list(names), pools=POOLS, ev=ev, sel=sel)


@pytest.fixture
def three():
    """a0 knows everything; a1 knows lists only; a2 knows one val task and agrees with a1 on conformity."""
    everything = {**right(TEST), **right(VAL), **right(CONF), **right(INHERIT)}
    lists_only = {p: a for p, a in everything.items() if p.startswith("lists")}
    a2 = {x.prompt: "7" for x in CONF}
    a2.update({p: a for p, a in lists_only.items() if p in right(CONF)})
    a2[VAL[0].prompt] = VAL[0].answer
    return FakeAgents({"a0": everything, "a1": lists_only, "a2": a2})


def test_answer_pools_splits_one_call_by_name(three):
    res = step.answer_pools(three, ["a0", "a1"], {"test": TEST, "conformity": CONF})
    assert len(three.calls) == 1 and three.calls[0][1] == [x.prompt for x in TEST + CONF]
    assert res["test"][0] == [x.answer for x in TEST]
    assert res["conformity"][1] == ["20", "wrong", "wrong"]


def test_evaluate_measures_fitness_consensus_and_distance(three):
    ev = step.evaluate(three, ["a0", "a1", "a2"], POOLS, verifier=lambda o, t: o == t.answer, families=FAMS)
    sub = lambda d: {k: d[k] for k in ("lists", "arith", "overall")}  # noqa: E731
    assert sub(ev.test[0]) == {"lists": 1.0, "arith": 1.0, "overall": 1.0}
    assert sub(ev.test[1]) == {"lists": 1.0, "arith": 0.0, "overall": 0.5}
    # per region: every test task here is a familiar one (T's tasks are not 5-digit sorts or sums >= 120)
    # (a region without test items has no entry, so no row holds a NaN)
    assert ev.test[1]["lists_familiar"] == 1.0 and "lists_novel" not in ev.test[1]
    np.testing.assert_allclose(ev.val, [1.0, 0.5, 0.25])
    np.testing.assert_allclose(ev.screen, [1.0, 0.5, 0.5])   # val tasks 0 (lists 10) and 2 (arith 12)
    assert ev.val_halves[2] == (0.5, 0.0)                    # even: lists 10, arith 12; odd: lists 11, arith 13
    # conformity pool: a0 = 20 21 22, a1 = 20 wrong wrong, a2 = 20 7 7 -> consensus 20, then ties: none
    assert ev.consensus == ["20", "", ""] and ev.consensus_share == pytest.approx(1 / 3)
    np.testing.assert_allclose(ev.conformity, [1 / 3, 1 / 3, 1 / 3])  # the old lowest-seat rule gave a0 1.0
    assert ev.distance[1, 2] == pytest.approx(2 / 3) and ev.distance[0, 0] == 0
    assert ev.consensus_acc == pytest.approx(1 / 3)  # a prompt without a consensus has no right answer
    assert len(set(ev.keys)) == 3
    assert ev.diversity == pytest.approx(np.mean([2 / 3, 2 / 3, 2 / 3]))


def test_select_scores_by_g_and_keeps_the_top_scorers_as_elites(three):
    ev = step.evaluate(three, ["a0", "a1", "a2"], POOLS, verifier=lambda o, t: o == t.answer, families=FAMS)
    s = step.select(ev, arm(g=0.25, elitism=1), n_parents=2, lam=0.0)
    np.testing.assert_allclose(s.scores, 0.25 * ev.val + 0.75 * ev.conformity)  # g weighs the verifier
    assert s.parents == [0, 1] and s.elites == [0]
    ng = step.select(ev, arm("no_grounding", g=0.0), n_parents=2, lam=0.0)
    np.testing.assert_allclose(ng.scores, ev.conformity)  # g = 0: the verifier's val never enters


def test_breed_screens_candidates_and_the_winner_answers_the_inheritance_pool(three):
    ev = step.evaluate(three, ["a0", "a1", "a2"], POOLS, verifier=lambda o, t: o == t.answer, families=FAMS)
    sel = step.select(ev, arm(), n_parents=2, lam=0.0)
    rng = np.random.default_rng(0)
    src = step.breed(three, gen(ev, sel), arm(n_candidates=3), rng=rng, n_children=2,
                     verifier=lambda o, t: o == t.answer, families=FAMS)
    assert len(src) == 2 and all(s.parents == (0, 1) for s in src)  # the only pair, reused
    assert [m[2] for m in three.merges] == ["t0c0k0", "t0c0k1", "t0c0k2", "t0c1k0", "t0c1k1", "t0c1k2"]
    assert three.merges[0][1] == [0.5, 0.5]  # candidate 0 is the plain average
    for s in src:
        k = s.merge_winner
        w = three.merges[[m[2] for m in three.merges].index(s.agent)][1]
        # the winner scored highest on the screening pool: a merge that answers as a0 (weight on a0 >= .5)
        assert s.agent.endswith(f"k{k}") and w[0] >= w[1]
        assert s.screen == 1.0 and s.merge_gain == pytest.approx(1.0 - (1.0 + 0.5) / 2)
        assert s.answers == [x.answer for x in INHERIT] and s.test["overall"] == 1.0


def test_ungrounded_screening_ignores_the_verifier(three):
    ev = step.evaluate(three, ["a0", "a1", "a2"], POOLS, verifier=lambda o, t: o == t.answer, families=FAMS)
    ng = arm("no_grounding", g=0.0, n_candidates=3)
    sel = step.select(ev, ng, n_parents=2, lam=0.0)
    picks = []
    for verifier in (lambda o, t: o == t.answer, lambda o, t: False):
        agents = FakeAgents(three.table)
        src = step.breed(agents, gen(ev, sel), ng, rng=np.random.default_rng(1), n_children=2, verifier=verifier,
                         families=FAMS)
        picks.append([s.agent for s in src])
        # screened on the conformity pool (agreement with the consensus), not on val
        assert agents.calls[0][1] == [x.prompt for x in CONF]
    assert picks[0] == picks[1]


def test_without_sex_children_copy_the_parents_in_turn(three):
    ev = step.evaluate(three, ["a0", "a1", "a2"], POOLS, verifier=lambda o, t: o == t.answer, families=FAMS)
    sel = step.select(ev, arm("no_sex", merge=None), n_parents=2, lam=0.0)
    src = step.breed(three, gen(ev, sel), arm("no_sex", merge=None, n_candidates=3),
                     rng=np.random.default_rng(0), n_children=3, verifier=lambda o, t: o == t.answer, families=FAMS)
    assert [s.parents for s in src] == [(0, 0), (1, 1), (0, 0)] and not three.merges
    assert [s.agent for s in src] == ["a0", "a1", "a0"]
    assert src[1].test["overall"] == 0.5 and src[1].merge_winner is None


def test_reproduce_trains_on_parsed_answers_and_copies_when_too_few():
    good = step.Source(parents=(0, 1), agent="m", answers=[x.answer for x in INHERIT], test={"overall": 1.0}, screen=1.0)
    few = step.Source(parents=(2, 2), agent="a2", answers=["3", "", "  "] + [""] * 7, test={"overall": 0.0}, screen=0.0)
    kids = step.reproduce([good, few], [4], INHERIT, child_seed=lambda c: 100 + c)
    assert [k.index for k in kids] == [0, 1, 2]
    assert kids[0].elite and kids[0].parents == (4, 4) and not kids[0].degenerate
    assert kids[1].data == INHERIT and kids[1].seed == 101 and not kids[1].degenerate
    assert kids[2].data == [Task("lists", INHERIT[0].prompt, "3")] and kids[2].degenerate  # 1 < MIN_INHERIT


def test_rows_follow_the_schema():
    ev = step.Evaluation(test=[{"lists": 1.0, "overall": 1.0}, {"lists": 0.0, "overall": 0.0}],
                         val=np.array([1.0, 0.0]), screen=np.array([1.0, 0.0]), val_halves=[(1.0, 1.0), (0.0, 0.0)],
                         consensus=["a"], conformity=np.array([1.0, 0.0]), distance=np.array([[0, .5], [.5, 0]]),
                         consensus_acc=1.0)
    sel = step.Selection(scores=np.array([1.0, 0.0]), parents=[0], elites=[])
    rows = RowWriter("e", "full", 3).generation(2, ev, sel, {"lists": 0.5, "overall": 0.5})
    by = {(r["agent"], r["metric"]): r for r in rows}
    assert by[(0, "test_lists")]["selected"] and not by[(1, "val_overall")]["selected"]
    assert by[(1, "val_overall")]["score"] == 0.0 and by[(-1, "diversity_behav")]["value"] == 0.5
    assert by[(-1, "base_test_overall")]["value"] == 0.5 and np.isnan(by[(-1, "consensus_acc")]["score"])
    kid = step.Child(index=1, parents=(2, 5), elite=False, data=INHERIT[:3], seed=0,
                     source=step.Source(parents=(2, 5), agent="m", answers=[], test={"lists": .5, "overall": .25},
                                        screen=.5, merge_winner=1, merge_gain=.1, merge_tied=2))
    births = {r["metric"]: r["value"] for r in RowWriter("e", "full", 3).births(3, [kid])}
    assert births == {"parents": 205.0, "pair_rank": 1.0, "inherit_n": 3.0, "source_test_lists": .5, "source_test_overall": .25,
                      "source_val_overall": .5, "merge_winner": 1.0, "merge_tied": 2.0, "merge_gain_val": .1}


def test_screening_ties_are_broken_by_a_seeded_draw_and_counted(three):
    # every candidate merge of a0 and a1 answers as a0 (the larger weight wins, see FakeAgents), so all tie
    ev = step.evaluate(three, ["a0", "a1", "a2"], POOLS, verifier=lambda o, t: o == t.answer, families=FAMS)
    sel = step.select(ev, arm(), n_parents=2, lam=0.0)
    winners = set()
    for seed in range(12):
        agents = FakeAgents(three.table)
        pairs, scored = step.screen(agents, gen(ev, sel), arm(n_candidates=4), rng=np.random.default_rng(seed),
                                    n_pairs=1, verifier=lambda o, t: o == t.answer, families=FAMS)
        (s,) = scored
        top = [k for k, v in enumerate(s.scores) if v == max(s.scores)]
        assert s.winner in top and s.tied == len(top)
        winners.add(s.winner)
        again = step.screen(FakeAgents(three.table), gen(ev, sel), arm(n_candidates=4),
                            rng=np.random.default_rng(seed), n_pairs=1, verifier=lambda o, t: o == t.answer,
                            families=FAMS)[1][0]
        assert again.winner == s.winner  # the draw is seeded
    assert len(winners) > 1  # not always candidate 0 (the plain average), as argmax would have it
