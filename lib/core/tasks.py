"""Task families with exact verifiers: the grounded signal of the society.

Three families, each with an easy level sized for a ~1 M-parameter character-level model and a
``hard`` level:

============  =========================================  ===============================
family        easy (default)                             hard
============  =========================================  ===============================
``lists``     sort 3–5 digits 0–9: ``sort 7 3 9 =`` → ``3 7 9``   sort 5–8 numbers 0–99
``strings``   reverse 3–5 letters a–j: ``rev bgd =`` → ``dgb``    reverse 6–9 letters a–z
``arith``     add two numbers 0–99: ``add 23+41 =`` → ``64``      a+b-c with numbers 0–99
============  =========================================  ===============================

A prompt ends in ``" ="``; a model answers with the answer text (the tiny base then emits EOS;
chat models are asked for ``Answer: <answer>``). :func:`verify` compares the normalised final
answer (:func:`answer_of`, :func:`normalise`) with the task's answer.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from itertools import islice
from typing import Iterator

import numpy as np

FAMILIES = ("lists", "strings", "arith")


@dataclass(frozen=True)
class Task:
    family: str
    prompt: str
    answer: str


def check_family(family: str) -> str:
    if family not in FAMILIES:
        raise ValueError(f"unknown task family {family!r}; known families are {list(FAMILIES)}")
    return family


def _lists(rng: np.random.Generator, hard: bool) -> tuple[str, str]:
    k = int(rng.integers(5, 9) if hard else rng.integers(3, 6))
    xs = rng.integers(0, 100 if hard else 10, size=k).tolist()
    return "sort " + " ".join(map(str, xs)) + " =", " ".join(map(str, sorted(xs)))


def _strings(rng: np.random.Generator, hard: bool) -> tuple[str, str]:
    k = int(rng.integers(6, 10) if hard else rng.integers(3, 6))
    letters = "abcdefghijklmnopqrstuvwxyz" if hard else "abcdefghij"
    s = "".join(letters[j] for j in rng.integers(0, len(letters), size=k))  # = rng.choice(list(letters), k)
    return f"rev {s} =", s[::-1]


def _arith(rng: np.random.Generator, hard: bool) -> tuple[str, str]:
    if hard:
        a, b, c = (int(v) for v in rng.integers(0, 100, size=3))
        return f"add {a}+{b}-{c} =", str(a + b - c)
    a, b = (int(v) for v in rng.integers(0, 100, size=2))
    return f"add {a}+{b} =", str(a + b)


_MAKERS = {"lists": _lists, "strings": _strings, "arith": _arith}


def iter_tasks(family: str, seed: int, hard: bool = False, rung: int = 0) -> Iterator[Task]:
    """The endless task stream of ``(family, seed, hard)``: draws from ``numpy.random.default_rng(seed)``;
    ``rung`` > 0: the stream of that rung of the ladder (:func:`rung_task`) instead."""
    check_family(family)
    rng = np.random.default_rng(seed)
    if rung:
        check_rung(rung)
        while True:
            yield Task(family, *_RUNG_MAKERS[family](rng, rung))
    make = _MAKERS[family]
    while True:
        yield Task(family, *make(rng, hard))


def make_tasks(family: str, n: int, seed: int, hard: bool = False) -> list[Task]:
    """``n`` tasks of ``family``, a deterministic function of ``(family, n, seed, hard)``: the first
    ``n`` of :func:`iter_tasks` (so the first ``k`` tasks of a call with ``n > k`` equal the tasks of a
    call with ``n = k``)."""
    check_family(family)
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    return list(islice(iter_tasks(family, seed, hard), n))


def make_pool(families, n_per_family: int, seed: int, hard: bool = False) -> list[Task]:
    """Concatenate ``make_tasks(f, n_per_family, seed + i)`` over the families (the seed's pools)."""
    return sum((make_tasks(f, n_per_family, seed=seed + i, hard=hard) for i, f in enumerate(families)), [])


REGIONS = ("familiar", "novel")


def region(task: Task) -> str:
    """``"novel"`` for the third of each easy family that the tiny base never sees in pre-training —
    sorting 5 digits, reversing 5 letters, sums of 120 or more (3,160 of the 10,000 pairs) — else
    ``"familiar"``. The novel region is the founders' headroom: a specialist trained on its whole
    family can learn what the base was never shown. Defined for the easy level (the tiny base's).
    """
    if task.family == "lists":
        return "novel" if len(task.answer.split()) == 5 else "familiar"
    if task.family == "strings":  # letters, with or without spaces between them (the task forms)
        return "novel" if len(task.answer.replace(" ", "")) == 5 else "familiar"
    if task.family == "arith" and task.prompt.count("+") == 1 and "-" not in task.prompt:
        return "novel" if int(task.answer) >= 120 else "familiar"
    return "familiar"


# ----------------------------------------------------------------------------- the ladder past the novel region

RUNGS = (1, 2)  # rung 0 is the easy level itself (familiar + novel regions)


def check_rung(rung: int) -> int:
    if rung not in RUNGS:
        raise ValueError(f"unknown rung {rung!r}; the ladder's rungs are {list(RUNGS)} (0: the easy level)")
    return rung


def _lists_rung(rng: np.random.Generator, rung: int) -> tuple[str, str]:
    xs = rng.integers(0, 10, size=5 + rung).tolist()
    return "sort " + " ".join(map(str, xs)) + " =", " ".join(map(str, sorted(xs)))


def _strings_rung(rng: np.random.Generator, rung: int) -> tuple[str, str]:
    s = "".join("abcdefghij"[j] for j in rng.integers(0, 10, size=5 + rung))
    return f"rev {s} =", s[::-1]


def _arith_rung(rng: np.random.Generator, rung: int) -> tuple[str, str]:
    a = int(rng.integers(100 * rung, 100 * rung + 100))
    b = int(rng.integers(0, 100))
    return f"add {a}+{b} =", str(a + b)


_RUNG_MAKERS = {"lists": _lists_rung, "strings": _strings_rung, "arith": _arith_rung}


def rung_tasks(family: str, rung: int, n: int, seed: int) -> list[Task]:
    """``n`` tasks of rung ``rung`` of ``family`` (the first ``n`` of its stream; prefix-stable)."""
    return list(islice(iter_tasks(family, seed, rung=rung), n))


def rung_of(task: Task) -> int:
    """The rung of the ladder ``task`` sits on: 0 for the easy level (sorting 3–5 digits, reversing 3–5
    letters a–j, sums of two numbers 0–99), ``r`` for one ``r`` steps past its novel region — sorting
    ``5 + r`` digits, reversing ``5 + r`` letters a–j, ``a + b`` with ``a`` in ``[100 r, 100 r + 99]`` and
    ``b`` in 0–99. The base is pre-trained on none of it and no founder is trained on it: a rung is what a
    population must climb to. Written with or without spaces between letters (the task forms)."""
    if task.family == "lists":
        return max(0, len(task.prompt.removeprefix("sort ").removesuffix(" =").split()) - 5)
    if task.family == "strings":
        return max(0, len(task.prompt.removeprefix("rev ").removesuffix(" =").replace(" ", "")) - 5)
    if task.family == "arith" and task.prompt.count("+") == 1 and "-" not in task.prompt:
        a = int(task.prompt.removeprefix("add ").split("+")[0])
        return a // 100
    return 0


FORMS = ("plain", "spaced")


def check_form(form: str) -> str:
    if form not in FORMS:
        raise ValueError(f"unknown task form {form!r}; known forms are {list(FORMS)}")
    return form


def in_form(task: Task, form: str = "plain") -> Task:
    """``task`` as the form ``form`` writes it. ``plain`` (the default, the tiny base's): unchanged.
    ``spaced``: a ``strings`` task with its letters separated by spaces (``rev bgd =`` → ``d g b``
    becomes ``rev b g d =`` → ``d g b``), so that a BPE model sees one token per letter; other
    families unchanged. The task is the same task (its region too); only how it is written differs,
    and the mapping is one-to-one, so disjoint pools stay disjoint."""
    if check_form(form) == "plain" or task.family != "strings":
        return task
    word = task.prompt.removeprefix("rev ").removesuffix(" =")
    return Task(task.family, f"rev {' '.join(word)} =", " ".join(task.answer))


_SPACE = re.compile(r"\s+")


def normalise(text: str) -> str:
    """Canonical form of an answer: lower case, commas as spaces, single spaces, no edge punctuation."""
    s = str(text).lower().replace(",", " ")
    s = _SPACE.sub(" ", s).strip()
    return s.strip(" .;:!?\"'`")


_ANSWER = re.compile(r"answer\s*[:=]\s*(.*)", re.IGNORECASE)


def answer_of(text: str) -> str:
    """The final answer in a model output; ``""`` when there is none.

    If the output contains ``Answer: X`` (case-insensitive; the format chat models are asked for),
    the answer is ``X`` of the *last* such line, and of ``X`` only what follows its last ``=``
    (chat models often answer ``Answer: 38 + 21 = 59``); otherwise it is the first non-empty line
    (the tiny base answers with the bare answer, then EOS). Surrounding white space is stripped.
    """
    if not isinstance(text, str):
        return ""
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    if not lines:
        return ""
    tagged = [m.group(1).strip() for ln in lines if (m := _ANSWER.search(ln))]
    return tagged[-1].rpartition("=")[2].strip() if tagged else lines[0]


def verify(output: str, task: Task) -> bool:
    """True when the final answer in ``output`` equals ``task.answer`` after normalisation."""
    return normalise(answer_of(output)) == normalise(task.answer)
