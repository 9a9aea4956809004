"""Invariants of the pure population operators (property tests with hypothesis)."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from lib.operators import ops as op
from lib.core.tasks import Task

ANSWERS = st.sampled_from(["", "a", "b", "c", "Answer: a", " B ", "1, 2"])


@st.composite
def populations(draw, max_agents=6, max_prompts=8):
    n = draw(st.integers(1, max_agents))
    m = draw(st.integers(0, max_prompts))
    return [[draw(ANSWERS) for _ in range(m)] for _ in range(n)]


def test_answer_of_formats():
    assert op.answer_of("Answer: 1 2 3") == "1 2 3"
    assert op.answer_of("blah\nanswer = 7\nAnswer: 8\n") == "8"
    assert op.answer_of("  cba  \nmore") == "cba"
    assert op.answer_of("") == "" and op.answer_of("\n  \n") == ""
    assert op.answer_of(None) == ""
    # a chat reply that shows its working: only what follows the last "=" of the tagged answer
    assert op.answer_of("Answer: 38 + 21 = 59") == "59"
    assert op.answer_of("Answer: 7 3 9 = 3 7 9\n") == "3 7 9"
    assert op.answer_of("38 + 21 = 59") == "38 + 21 = 59"  # untagged (tiny base): the line as it is


def test_a_tie_has_no_consensus():
    outs = [["x", "", "q", "a"], ["y", "", "q", "b"], ["y", "", "r", "c"], ["x", "", "", "d"]]
    # prompt 0: x and y tie 2-2 (no consensus, whoever spoke first); nobody answered prompt 1; prompt 3: all differ
    assert op.consensus_answers(outs) == ["", "", "q", ""]
    assert op.consensus_share(op.consensus_answers(outs)) == 0.25
    # four different answers give no agent any conformity (the lowest-seat rule gave agent 0 conformity 1)
    four = [["a"], ["b"], ["c"], ["d"]]
    assert op.conformity_scores(four, op.consensus_answers(four)).tolist() == [0.0] * 4


def test_conformity_and_distance_on_known_population():
    outs = [["1", "2", "3"], ["1", "2", "4"], ["1", "5", "4"]]
    cons = op.consensus_answers(outs)
    assert cons == ["1", "2", "4"]
    np.testing.assert_allclose(op.conformity_scores(outs, cons), [2 / 3, 1.0, 2 / 3])
    D = op.behavioural_distance(outs)
    np.testing.assert_allclose(D, [[0, 1 / 3, 2 / 3], [1 / 3, 0, 1 / 3], [2 / 3, 1 / 3, 0]])


def test_mismatched_lengths_raise():
    with pytest.raises(ValueError, match="same prompts"):
        op.behavioural_distance([["a"], ["a", "b"]])
    with pytest.raises(ValueError):
        op.agreement(["a"], ["a", "b"])


@settings(max_examples=150, deadline=None)
@given(populations())
def test_distance_matrix_invariants(outs):
    D = op.behavioural_distance(outs)
    n = len(outs)
    assert D.shape == (n, n)
    assert np.all(D >= 0) and np.all(D <= 1)
    np.testing.assert_array_equal(D, D.T)
    np.testing.assert_array_equal(np.diag(D), 0)
    # it reads only the final answers: the normalised answers give the same distances
    np.testing.assert_array_equal(D, op.behavioural_distance(op.answers_matrix(outs)))
    # equivariant: relabelling the agents relabels the matrix
    perm = np.random.default_rng(len(outs)).permutation(n)
    np.testing.assert_array_equal(op.behavioural_distance([outs[i] for i in perm]), D[np.ix_(perm, perm)])
    # a Hamming metric: the triangle inequality holds (up to rounding)
    assert np.all(D[:, None, :] <= D[:, :, None] + D[None, :, :] + 1e-12)


@settings(max_examples=150, deadline=None)
@given(populations())
def test_consensus_is_the_strict_modal_answer_and_bounds_conformity(outs):
    cons = op.consensus_answers(outs)
    kappa = op.conformity_scores(outs, cons)
    assert kappa.shape == (len(outs),)
    assert np.all((kappa >= 0) & (kappa <= 1))
    A = op.answers_matrix(outs)
    for j, c in enumerate(cons):
        given = [A[i][j] for i in range(len(outs)) if A[i][j]]
        if not given:
            assert c == ""
            continue
        # the answer strictly more agents give than any other; none where two tie for the most
        count = sorted((given.count(a) for a in set(given)), reverse=True)
        if len(count) > 1 and count[0] == count[1]:
            assert c == ""
        else:
            assert given.count(c) == count[0]
    # κ_i counts agreement with a non-empty consensus: the consensus itself, as an agent, scores highest
    best = np.mean([c != "" for c in cons]) if cons else 0.0
    assert np.all(kappa <= best + 1e-12)
    assert op.conformity_scores([cons], cons)[0] == pytest.approx(best)


def test_fitness_of_per_family():
    tasks = [Task("lists", "sort 2 1 =", "1 2"), Task("lists", "sort 3 1 =", "1 3"), Task("arith", "add 1+1 =", "2")]
    f = op.fitness_of(["1 2", "3 1", "Answer: 2"], tasks, ["lists", "arith", "strings"])
    assert f["lists"] == 0.5 and f["arith"] == 1.0 and np.isnan(f["strings"])
    assert f["overall"] == pytest.approx(2 / 3)


@st.composite
def scored_population(draw):
    n = draw(st.integers(1, 8))
    s = np.array(draw(st.lists(st.floats(0, 1), min_size=n, max_size=n)))
    raw = np.array(draw(st.lists(st.floats(0, 1), min_size=n * n, max_size=n * n))).reshape(n, n)
    D = np.triu(raw, 1)
    D = D + D.T
    p = draw(st.integers(1, n))
    lam = draw(st.floats(0, 2))
    return s, D, p, lam


@settings(max_examples=200, deadline=None)
@given(scored_population())
def test_select_parents_invariants(args):
    s, D, p, lam = args
    keys = [f"k{(7 * i) % 11:02d}" for i in range(len(s))]
    top = op.select_parents(s, D, p, keys=keys, diversity=False, lam=lam)
    qd = op.select_parents(s, D, p, keys=keys, diversity=True, lam=lam)
    for sel in (top, qd):
        assert len(sel) == p and len(set(sel)) == p
        assert all(0 <= i < len(s) for i in sel)
    assert qd[0] == top[0]  # the best agent is always chosen first
    assert op.select_parents(s, D, p, keys=keys, diversity=True, lam=0.0) == top  # lam = 0 is top-P
    # greedy MMR: each next parent maximises s_i - lam * max_{k chosen} (1 - D_ik) (ties: the smaller key)
    for step in range(1, p):
        chosen, rest = qd[:step], [i for i in range(len(s)) if i not in qd[:step]]
        gain = {i: s[i] - lam * max(1.0 - D[i, k] for k in chosen) for i in rest}
        pick = qd[step]
        assert all(gain[pick] > gain[i] or (gain[pick] == gain[i] and keys[pick] < keys[i]) for i in rest if i != pick)


def test_qd_prefers_a_distant_agent():
    s = np.array([1.0, 0.95, 0.6])
    D = np.array([[0, 0.0, 1.0], [0.0, 0, 1.0], [1.0, 1.0, 0]])  # 0 and 1 behave identically
    keys = ["a", "b", "c"]
    assert op.select_parents(s, D, 2, keys=keys, diversity=False) == [0, 1]
    assert op.select_parents(s, D, 2, keys=keys, diversity=True, lam=0.5) == [0, 2]


def test_select_parents_errors():
    with pytest.raises(ValueError, match="n_parents"):
        op.select_parents([1, 2], np.zeros((2, 2)), 3, keys=["a", "b"])
    with pytest.raises(ValueError, match="shape"):
        op.select_parents([1, 2], np.zeros((3, 3)), 1, keys=["a", "b"])
    with pytest.raises(ValueError, match="tie keys"):
        op.select_parents([1, 2], np.zeros((2, 2)), 1, keys=["a"])


@settings(max_examples=150, deadline=None)
@given(scored_population(), st.integers(1, 12))
def test_complementary_pairs_invariants(args, n_pairs):
    s, D, p, _ = args
    parents = op.select_parents(s, D, p, keys=[str(i) for i in range(len(s))], diversity=False)
    if len(parents) < 2:
        with pytest.raises(ValueError):
            op.complementary_pairs(parents, D, n_pairs)
        return
    pairs = op.complementary_pairs(parents, D, n_pairs)
    assert len(pairs) == n_pairs
    for a, b in pairs:
        assert a != b and a in parents and b in parents
    K = len(parents) * (len(parents) - 1) // 2
    d = [D[a, b] for a, b in pairs[:K]]
    assert d == sorted(d, reverse=True)  # most distant first
    assert pairs[K:] == pairs[:max(0, n_pairs - K)]  # reused in turn


@settings(max_examples=50, deadline=None)
@given(st.integers(1, 5), st.integers(1, 10), st.integers(0, 2**31))
def test_merge_weights_on_simplex_and_seeded(n, k, seed):
    w = op.sample_merge_weights(n, k, np.random.default_rng(seed))
    assert w.shape == (k, n)
    assert np.all(w >= 0)
    np.testing.assert_allclose(w.sum(axis=1), 1.0)
    np.testing.assert_allclose(w[0], 1.0 / n)
    np.testing.assert_array_equal(w, op.sample_merge_weights(n, k, np.random.default_rng(seed)))
