"""The archive of elites of a ``crossover_archive`` run, kept across generations and resumes.

The archive itself (:class:`lib.society.crossover.Archive`: which agent holds each cell, and its val score) is
pure; this module keeps its elites' adapters on disk under ``<seed's adapters>/<arm>/archive/<agent>/`` (the
generations' own folders are deleted as the run moves on), attaches them as agents under their own names
(``t3a2``), and records the archive in the progress file, so a resumed run has the same teachers.
"""
from __future__ import annotations

import shutil
from pathlib import Path
from typing import Sequence

from lib.engines.lora import copy_adapter
from lib.society.crossover import BASE, Archive, cell_scores, cells_of
from lib.society.generation import Agents, Evaluation, prompts
from lib.society.pools import GenerationPools


def start_archive(agents: Agents, pools: GenerationPools, *, families: Sequence[str], verifier) -> Archive:
    """An archive whose every cell (family × region of the val pool) is held by the bare base, at its val score."""
    cells = cells_of(pools.val, families)
    said = agents.answer([agents.BASE], prompts(pools.val))[0]
    verdicts = [[float(bool(verifier(a, x))) for a, x in zip(said, pools.val)]]
    return Archive.start(cells, cell_scores(verdicts, pools.val, cells)[0])


def update_archive(archive: Archive, names: Sequence[str], dirs: Sequence[Path], ev: Evaluation,
                   pools: GenerationPools, folder: Path) -> list[str]:
    """Offer generation's agents ``names`` (adapters ``dirs``) to the archive on their val verdicts; a new
    elite's adapter is copied to ``folder/<name>``, and the folders of agents that hold no cell any more are
    deleted. Returns the cells whose elite changed."""
    changed = archive.update(names, cell_scores(ev.val_items, pools.val, archive.cells), keys=ev.keys)
    where = dict(zip(names, dirs))
    for name in {archive.elite[c] for c in changed}:
        copy_adapter(where[name], folder / name)
    keep = set(archive.elite.values())
    if folder.is_dir():
        for d in folder.iterdir():
            if d.name not in keep:
                shutil.rmtree(d, ignore_errors=True)
    return changed


def attach_elites(agents: Agents, archive: Archive, folder: Path, attached: Sequence[str]) -> None:
    """Attach every elite that is neither the bare base nor among the ``attached`` agents, under its own name."""
    for name in sorted(set(archive.elite.values()) - {BASE} - set(attached)):
        agents.load(name, folder / name)
