"""Children that learn from several verified teachers: the data crossover and the archive of elites.

Pure functions of answers, verdicts and scores (no model, no file), so they run on fake agents in the tests.

- **Data crossover** (:func:`verified_union`): a child is a fresh LoRA trained on the *union of its teachers'
  verified answers* over the inheritance prompts: each teacher answers every prompt, an answer enters when the
  verifier accepts it, and each (prompt, answer) pair enters once (teachers that agree add nothing twice).
  Rejection-sampling fine-tuning with several models' samples (Yuan et al. 2023, arXiv 2308.01825) is the
  field's evidence that the union carries what no single teacher has. :func:`gold_data` is the control: the
  gold answers on the same prompts (what verification loses by covering only what the teachers solve).
- **Archive of elites** (:class:`Archive`, MAP-Elites style): one cell per family and region (``lists_novel``,
  ``lists_familiar``, ...); each holds the best agent ever on that cell's val items, the bare base included as
  a candidate (so the base holds the familiar cells until an agent beats it). A child's teachers are its two
  parents plus the elite of every cell on which neither parent is above the base (:func:`archive_teachers`):
  a skill found once can then not leave the population's teachers.

Units: accuracies in [0, 1]; a cell's quality is the mean 0/1 verdict over its val items.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np

from lib.operators.ops import best

from lib.core.tasks import Task, answer_of, normalise, region

BASE = "base"  # the bare base's name in the archive


def verified_union(tasks: Sequence[Task], answers: Sequence[Sequence[str]], verifier: Callable[[str, Task], bool]
                   ) -> list[Task]:
    """The union of the teachers' verified answers: ``answers[k][j]`` is teacher ``k``'s output on ``tasks[j]``.

    A pair enters when its answer parses and the verifier accepts it; each (prompt, normalised answer) once, in
    prompt order and, within a prompt, teacher order. The label is what the teacher said (``answer_of``), never
    the gold answer, so a verifier that accepts a wrong answer lets that answer in.
    """
    if any(len(a) != len(tasks) for a in answers):
        raise ValueError(f"every teacher answers every one of the {len(tasks)} prompts")
    out, seen = [], set()
    for j, x in enumerate(tasks):
        for a in (teacher[j] for teacher in answers):
            said = answer_of(a)
            key = (x.prompt, normalise(said))
            if said and key not in seen and verifier(a, x):
                seen.add(key)
                out.append(Task(x.family, x.prompt, said))
    return out


def gold_data(tasks: Sequence[Task]) -> list[Task]:
    """The control of :func:`verified_union`: every prompt with its gold answer."""
    return [Task(x.family, x.prompt, x.answer) for x in tasks]


def cells_of(tasks: Sequence[Task], families: Sequence[str]) -> list[str]:
    """The archive's cells that ``tasks`` cover, in family order: ``<family>_<region>``."""
    have = {f"{x.family}_{region(x)}" for x in tasks}
    return [c for f in families for c in (f"{f}_familiar", f"{f}_novel") if c in have]


def cell_scores(verdicts: np.ndarray, tasks: Sequence[Task], cells: Sequence[str]) -> np.ndarray:
    """Per agent and cell, the mean 0/1 verdict over the cell's items: ``verdicts`` ``(N, len(tasks))`` →
    ``(N, len(cells))``."""
    key = np.array([f"{x.family}_{region(x)}" for x in tasks])
    v = np.asarray(verdicts, dtype=float)
    return np.stack([v[:, key == c].mean(axis=1) for c in cells], axis=1)


@dataclass
class Archive:
    """The best agent ever per cell: ``elite[cell]`` its name (an adapter the driver keeps; :data:`BASE` for the
    bare base), ``score[cell]`` its val accuracy there, ``base[cell]`` the bare base's (the bar a parent must
    clear). Ties keep the incumbent: an elite is replaced only by a strictly better agent; among a generation's agents
    tied for a cell's best, the one with the smaller answer key (:func:`lib.operators.ops.answer_key`) is offered."""

    cells: tuple[str, ...]
    base: dict[str, float]
    elite: dict[str, str] = field(default_factory=dict)
    score: dict[str, float] = field(default_factory=dict)

    @classmethod
    def start(cls, cells: Sequence[str], base_scores: Sequence[float]) -> "Archive":
        """An archive whose every cell is held by the bare base."""
        base = dict(zip(cells, map(float, base_scores)))
        return cls(tuple(cells), base, {c: BASE for c in cells}, dict(base))

    def update(self, names: Sequence[str], scores: np.ndarray, *, keys: Sequence[str]) -> list[str]:
        """Offer agents ``names`` with their ``(N, cells)`` ``scores`` and answer ``keys``; returns the cells whose
        elite changed."""
        changed = []
        for k, c in enumerate(self.cells):
            i = best(scores[:, k], keys)
            if scores[i, k] > self.score[c]:
                self.elite[c], self.score[c] = names[i], float(scores[i, k])
                changed.append(c)
        return changed

    def to_json(self) -> dict:
        return {"cells": list(self.cells), "base": self.base, "elite": self.elite, "score": self.score}

    @classmethod
    def from_json(cls, d: dict) -> "Archive":
        return cls(tuple(d["cells"]), dict(d["base"]), dict(d["elite"]), dict(d["score"]))


def archive_teachers(archive: Archive, parent_scores: np.ndarray) -> list[str]:
    """The archive's elites that join a child's two parents as teachers: for every cell on which neither parent
    (``parent_scores`` ``(2, cells)``) is above the base, that cell's elite (:data:`BASE` where nobody ever beat
    the base). Each elite once, in cell order."""
    out = []
    for k, c in enumerate(archive.cells):
        if np.all(parent_scores[:, k] <= archive.base[c]) and archive.elite[c] not in out:
            out.append(archive.elite[c])
    return out
