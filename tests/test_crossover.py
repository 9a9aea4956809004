"""The data crossover and the archive of elites (lib.society.crossover), on fake answers."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from lib.core.tasks import FAMILIES, Task, make_tasks, region, verify
from lib.society.crossover import (BASE, Archive, archive_teachers, cell_scores, cells_of, gold_data,
                                   verified_union)

TASKS = [t for f in FAMILIES for t in make_tasks(f, 12, seed=7)]


def _teacher(right: set[int], wrong_text: str = "zzz") -> list[str]:
    """A teacher that answers the tasks of ``right`` correctly and the others wrongly."""
    return [x.answer if j in right else wrong_text for j, x in enumerate(TASKS)]


def test_the_union_is_each_teachers_verified_answers_and_nothing_else():
    a, b = set(range(0, 20)), set(range(10, 30))
    data = verified_union(TASKS, [_teacher(a), _teacher(b)], verify)
    assert [d.prompt for d in data] == [TASKS[j].prompt for j in sorted(a | b)]  # each verified pair once
    assert all(d.answer == TASKS[j].answer for d, j in zip(data, sorted(a | b)))
    assert verified_union(TASKS, [_teacher(set())], verify) == []  # nothing verified: nothing to learn


def test_the_union_keeps_what_a_teacher_said_and_drops_unparsed_answers():
    wrong = [""] * len(TASKS)  # no answer at all
    assert verified_union(TASKS, [wrong], lambda o, x: True) == []
    said = ["Answer: " + x.answer for x in TASKS]  # a chat-style answer: the label is the parsed answer
    data = verified_union(TASKS, [said], verify)
    assert [d.answer for d in data] == [x.answer for x in TASKS]
    # a lenient verifier lets a wrong answer in, labelled with what the teacher said (never the gold)
    data = verified_union(TASKS[:3], [["7", "7", "7"]], lambda o, x: True)
    assert [d.answer for d in data] == ["7", "7", "7"]


@settings(max_examples=40, deadline=None)
@given(st.lists(st.sets(st.integers(0, len(TASKS) - 1)), min_size=1, max_size=5))
def test_the_union_equals_the_set_union_of_the_teachers_solved_prompts(solved):
    data = verified_union(TASKS, [_teacher(s) for s in solved], verify)
    assert {d.prompt for d in data} == {TASKS[j].prompt for s in solved for j in s}
    assert len(data) == len({d.prompt for d in data})  # the right answer is one answer: each prompt once


def test_gold_data_is_every_prompt_with_its_gold_answer():
    assert gold_data(TASKS) == list(TASKS)


def test_cells_and_cell_scores():
    cells = cells_of(TASKS, FAMILIES)
    assert set(cells) == {f"{x.family}_{region(x)}" for x in TASKS}
    v = np.zeros((2, len(TASKS)))
    v[1] = 1.0
    s = cell_scores(v, TASKS, cells)
    assert s.shape == (2, len(cells)) and np.all(s[0] == 0) and np.all(s[1] == 1)


def test_the_archive_always_holds_each_cells_best_ever_with_the_base_as_the_first_elite():
    rng = np.random.default_rng(0)
    cells = ("lists_familiar", "lists_novel", "arith_familiar")
    base = [0.9, 0.0, 0.8]
    arc = Archive.start(cells, base)
    assert arc.elite == {c: BASE for c in cells}
    best = dict(zip(cells, base))
    holder = {c: BASE for c in cells}
    for t in range(6):
        names = [f"t{t}a{i}" for i in range(4)]
        scores = rng.uniform(0, 1, size=(4, 3)).round(2)
        keys = [f"{(5 * i) % 4}" for i in range(4)]  # ties: the smaller key, not the first seat
        arc.update(names, scores, keys=keys)
        for k, c in enumerate(cells):
            i = min(range(4), key=lambda a: (-scores[a, k], keys[a]))
            if scores[i, k] > best[c]:
                best[c], holder[c] = scores[i, k], names[i]
        assert arc.score == best and arc.elite == holder  # the best ever, never lost
    assert Archive.from_json(arc.to_json()) == arc


def test_archive_teachers_are_the_elites_of_cells_no_parent_is_above_the_base_on():
    cells = ("lists_novel", "strings_novel", "arith_familiar")
    arc = Archive(cells, base={"lists_novel": 0.0, "strings_novel": 0.0, "arith_familiar": 0.8},
                  elite={"lists_novel": "L", "strings_novel": "S", "arith_familiar": BASE},
                  score={"lists_novel": 0.9, "strings_novel": 0.95, "arith_familiar": 0.8})
    # parents hold lists (one of them), neither strings nor the base's familiar arithmetic
    parents = np.array([[0.7, 0.0, 0.3], [0.0, 0.0, 0.5]])
    assert archive_teachers(arc, parents) == ["S", BASE]
    parents = np.array([[0.7, 0.6, 0.9], [0.0, 0.0, 0.5]])
    assert archive_teachers(arc, parents) == []
    arc.elite["strings_novel"] = "L"  # one agent holding two cells teaches once
    assert archive_teachers(arc, np.zeros((2, 3))) == ["L", BASE]


def test_verified_union_refuses_a_teacher_that_skipped_prompts():
    with pytest.raises(ValueError, match="every teacher"):
        verified_union(TASKS, [["1"]], verify)
