"""No operator reads an agent's seat (issue 53): on random populations with coarse answers and scores, so that ties
are common, relabelling the agents leaves the consensus unchanged and relabels conformity, distances, parents,
niches, elites, lexicase's parents, complementary pairs and the archive's elites. The same property check, run on a
planted lowest-index tie-break (the rule the project had), fails: the check has teeth."""
from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from lib.operators import ops as op
from lib.society.crossover import Archive

N_POPULATIONS = 250


def population(rng: np.random.Generator):
    """``(outputs, scores, val_family, items, dist, keys)`` of 3-7 agents on 6-12 prompts with 2-3 distinct answers
    per prompt (ties in the modal answer on many prompts) and scores on a grid of quarters (ties in every rule)."""
    n, m = int(rng.integers(3, 8)), int(rng.integers(6, 13))
    outs = [[str(rng.integers(0, int(rng.integers(2, 4)))) for _ in range(m)] for _ in range(n)]
    scores = rng.integers(0, 5, n) / 4
    val_family = rng.integers(0, 3, (n, 3)) / 2
    items = (rng.random((n, 3)) < 0.5).astype(float)  # few cases: survivors often tie
    return outs, scores, val_family, items, op.behavioural_distance(outs), op.answer_keys(outs)


def relabel(perm, outs, scores, val_family, items, dist, keys):
    """The same population with agent ``perm[i]`` in seat ``i``."""
    return ([outs[i] for i in perm], scores[perm], val_family[perm], items[perm], dist[np.ix_(perm, perm)],
            [keys[i] for i in perm])


def lowest_seat_consensus(outputs):
    """The rule the project had: a tie goes to the answer of the lowest-indexed agent among the tied."""
    A = op.answers_matrix(outputs)
    out = []
    for j in range(len(A[0])):
        votes = Counter(a for a in (row[j] for row in A) if a)
        out.append(max(votes, key=votes.__getitem__) if votes else "")
    return out


def lowest_seat_parents(scores, dist, n_parents, *, keys, diversity=True, lam=0.3):
    """The rule the project had: ties → lower index (``keys`` ignored)."""
    return op.select_parents(scores, dist, n_parents, keys=[f"{i:04d}" for i in range(len(scores))],
                             diversity=diversity, lam=lam)


def lowest_seat_elites(scores, k, *, keys):
    return [int(i) for i in np.argsort(-np.asarray(scores, dtype=float), kind="stable")[:k]]


def rules(consensus=op.consensus_answers, parents=op.select_parents, elites=op.elite_indices, seat_keys=False):
    """Every rule as ``f(population) -> result in agent labels``: a list of agents, or per-agent arrays. With
    ``seat_keys`` every tie key is the agent's seat number (a lowest-index tie-break planted in every rule)."""
    def conformity(outs, s, V, items, D, keys):
        return op.conformity_scores(outs, consensus(outs))

    found = {
        "consensus": lambda outs, *_: consensus(outs),
        "conformity": conformity,
        "distance": lambda outs, *_: op.behavioural_distance(outs),
        "qd parents": lambda outs, s, V, items, D, keys: parents(s, D, 3, keys=keys, diversity=True, lam=0.3),
        "top-P parents": lambda outs, s, V, items, D, keys: parents(s, D, 3, keys=keys, diversity=False),
        "niches": lambda outs, s, V, items, D, keys: op.niche_parents(V, s, D, 3, keys=keys, lam=0.3),
        "elites": lambda outs, s, V, items, D, keys: elites(s, 2, keys=keys),
        "lexicase": lambda outs, s, V, items, D, keys: op.lexicase_parents(items, 2, np.random.default_rng(5),
                                                                           keys=keys),
        "pairs": lambda outs, s, V, items, D, keys: op.complementary_pairs(
            parents(s, D, 3, keys=keys, diversity=True, lam=0.3), D, 3),
        "archive": lambda outs, s, V, items, D, keys: archive_elites(V, keys),
    }
    if not seat_keys:
        return found
    return {name: (lambda rule: lambda *pop: rule(*pop[:-1], [f"{i:04d}" for i in range(len(pop[-1]))]))(rule)
            for name, rule in found.items()}


def archive_elites(V, keys):
    arc = Archive.start(("a", "b", "c"), [0.0, 0.0, 0.0])
    arc.update([f"agent{i}" for i in range(len(V))], V, keys=keys)
    return [arc.elite[c] for c in arc.cells]


def equivariant(rule, pop, perm) -> bool:
    """``rule`` on the relabelled population equals its result on the original, relabelled."""
    got, moved = rule(*pop), rule(*relabel(perm, *pop))
    new_of = {int(old): new for new, old in enumerate(perm)}  # seat of agent `old` after relabelling
    if isinstance(got, np.ndarray) and got.ndim == 2:
        return np.array_equal(got[np.ix_(perm, perm)], moved)
    if isinstance(got, np.ndarray):
        return np.array_equal(got[perm], moved)
    if got and isinstance(got[0], tuple):
        return [(new_of[a], new_of[b]) for a, b in got] == [tuple(p) for p in moved]
    if any(isinstance(x, str) and x.startswith("agent") for x in got):  # the archive's elites, by name
        return [f"agent{new_of[int(x[5:])]}" if x.startswith("agent") else x for x in got] == moved
    if got and isinstance(got[0], (int, np.integer)):
        return [new_of[int(i)] for i in got] == [int(i) for i in moved]
    return got == moved  # the consensus: unchanged


def failures(rule, n=N_POPULATIONS, seed=0) -> int:
    """How many of ``n`` random populations and relabellings break the rule's equivariance (identical agents aside:
    populations where two agents said exactly the same are skipped)."""
    rng = np.random.default_rng(seed)
    bad = 0
    for _ in range(n):
        pop = population(rng)
        if len(set(pop[-1])) < len(pop[-1]):
            continue
        perm = rng.permutation(len(pop[0]))
        bad += not equivariant(rule, pop, perm)
    return bad


@pytest.mark.parametrize("name", list(rules()))
def test_relabelling_the_agents_relabels_every_operators_result(name):
    assert failures(rules()[name]) == 0


@pytest.mark.parametrize("name, planted", [
    ("consensus", {"consensus": lowest_seat_consensus}),
    ("conformity", {"consensus": lowest_seat_consensus}),
    ("qd parents", {"parents": lowest_seat_parents}),
    ("top-P parents", {"parents": lowest_seat_parents}),
    ("pairs", {"parents": lowest_seat_parents}),
    ("elites", {"elites": lowest_seat_elites}),
    *((name, {"seat_keys": True}) for name in ("qd parents", "top-P parents", "niches", "elites", "lexicase",
                                                 "pairs", "archive")),
])
def test_a_planted_lowest_index_tie_break_fails_the_same_check(name, planted):
    assert failures(rules(**planted)[name]) > 10


def test_ties_are_common_in_the_random_populations():
    """The check means something only where ties occur: most populations have a prompt without a consensus and a
    tied top score."""
    rng = np.random.default_rng(0)
    pops = [population(rng) for _ in range(N_POPULATIONS)]
    tied_prompt = np.mean([op.consensus_share(op.consensus_answers(p[0])) < 1 for p in pops])
    tied_top = np.mean([np.sum(p[1] == p[1].max()) > 1 for p in pops])
    assert tied_prompt > 0.8 and tied_top > 0.3, (tied_prompt, tied_top)


def test_four_different_answers_give_no_agent_conformity():
    outs = [["a"], ["b"], ["c"], ["d"]]
    assert op.consensus_answers(outs) == [""]
    assert op.conformity_scores(outs, op.consensus_answers(outs)).tolist() == [0.0] * 4
    assert op.conformity_scores(outs, lowest_seat_consensus(outs)).tolist() == [1.0, 0.0, 0.0, 0.0]


def test_an_answer_key_is_what_the_agent_said():
    assert op.answer_key(["a", "b"]) == op.answer_key(["a", "b"]) != op.answer_key(["b", "a"])
    assert op.answer_key(["ab"], ["c"]) != op.answer_key(["a"], ["bc"])  # pools and outputs are delimited
    assert op.answer_keys([["a"], ["b"]], [["x"], ["y"]]) == [op.answer_key(["a"], ["x"]), op.answer_key(["b"], ["y"])]
