"""The next generation's adapters on disk: elites copied, children trained on their inherited answers
(or, for an arm that inherits parameters, the screened merge itself truncated and mutated; for a ``continue``
arm, each candidate a parent's LoRA trained further, :func:`candidate_dir`), and the previous generation's
adapters deleted once they are no longer needed."""
from __future__ import annotations

import shutil
from pathlib import Path

from lib.engines.batched import Job, train_loras
from lib.engines.lora import copy_adapter
from lib.engines.merge import inherit_merge
from lib.society.config import Arm, SocietyConfig
from lib.society.generation import Child


def lora_steps(n_tasks: int, epochs: int, batch_size: int) -> int:
    """Optimizer steps of a LoRA trained on ``n_tasks`` for ``epochs`` in batches of ``batch_size``."""
    return epochs * -(-n_tasks // batch_size)


def save_merged_sources(agents, children: list[Child], out: Path) -> None:
    """A degenerate child whose source is a merge inherits the merge itself: save it now, while the
    merged agent still exists (the folder is then the child's, see :func:`train_children`)."""
    for ch in children:
        if ch.degenerate and ch.source.merge_winner is not None:
            agents.save(ch.source.agent, out / f"agent{ch.index}")


def save_inherited_merges(agents, children: list[Child], out: Path, *, rank: int) -> dict[int, float]:
    """``inherit_merge``: each bred child is its source merge itself, truncated to ``rank`` and mutated
    (:func:`lib.engines.merge.inherit_merge`, seeded by the child's seed), written to ``out/agent<c>``;
    returns the update energy each truncation kept."""
    energy = {}
    for ch in children:
        if ch.elite:
            continue
        tmp = out / f"merge{ch.index}"
        agents.save(ch.source.agent, tmp)
        energy[ch.index] = inherit_merge(tmp, out / f"agent{ch.index}", rank=rank, seed=ch.seed)
        shutil.rmtree(tmp, ignore_errors=True)
    return energy


def candidate_dir(out: Path, child: int, parent: int) -> Path:
    """Where the ``continue`` candidate of child ``child`` that started from parent ``parent`` is trained."""
    return out / f"cand{child}p{parent}"


def keep_candidate(out: Path, child: int, starts: tuple[int, ...], winner: int) -> Path:
    """The winning candidate (``starts[winner]``) becomes ``out/agent<child>``; the others are deleted."""
    for k, p in enumerate(starts):
        if k != winner:
            shutil.rmtree(candidate_dir(out, child, p), ignore_errors=True)
    dst = out / f"agent{child}"
    shutil.rmtree(dst, ignore_errors=True)  # a generation re-run on resume: the child of the interrupted run
    return candidate_dir(out, child, starts[winner]).rename(dst)


def train_children(base, children: list[Child], parents: list[Path], out: Path, *, arm: Arm, cfg: SocietyConfig,
                   counter=None, trainer: str = "batched") -> list[Path]:
    """The next generation's adapter folders under ``out``: elites copied, children trained on their data for
    ``arm.epochs`` (the arm's budget; all at once, :func:`lib.engines.batched.train_loras`, with the config's
    LoRA) — fresh LoRAs, or, for ``merge_repair``, from the truncated merge on disk
    (:func:`save_inherited_merges`). A degenerate child (too few usable answers) is a copy of its source: the
    merge already on disk (:func:`save_merged_sources`, :func:`save_inherited_merges`) or its first parent.
    ``inherit_merge``: the children are already on disk; nothing is trained. ``continue``: each trained child's
    candidates, one per parent in ``ch.starts`` (:func:`lib.society.generation.continue_starts`), start from that
    parent's adapter and go to :func:`candidate_dir`; the child's own folder is filled by :func:`keep_candidate`."""
    dirs, jobs, todo, starts = [], [], [], []
    for ch in children:
        if ch.elite:
            dirs.append(copy_adapter(parents[ch.parents[0]], out / f"elite{ch.index}"))
            continue
        d = out / f"agent{ch.index}"
        dirs.append(d)
        if arm.from_merge:
            if arm.trains and not ch.degenerate:  # repair the merge: train from it
                start = d.rename(out / f"start{ch.index}")
                jobs.append(Job(ch.data, ch.seed, arm.epochs, init=start))
                todo.append(d)
                starts.append(start)
        elif ch.degenerate:
            if ch.source.merge_winner is None:
                copy_adapter(parents[ch.parents[0]], d)
        elif arm.continues:
            for p in ch.starts:
                jobs.append(Job(ch.data, ch.seed, arm.epochs, init=parents[p]))
                todo.append(candidate_dir(out, ch.index, p))
        else:
            jobs.append(Job(ch.data, ch.seed, arm.epochs))
            todo.append(d)
    train_loras(base, jobs, todo, trainer=trainer, counter=counter, **cfg.lora_kw())
    for start in starts:
        shutil.rmtree(start, ignore_errors=True)
    return dirs


def drop_generation(dirs: list[Path]) -> None:
    """Disk hygiene: delete a generation's adapters (and their emptied folders)."""
    for d in dirs:
        shutil.rmtree(d, ignore_errors=True)
    for d in {Path(a).parent for a in dirs}:
        if d.is_dir() and not any(d.iterdir()):
            d.rmdir()
