"""One shard of a society config to run — an (arm, seed) with where its rows go and how it runs — and
what one generation hands the next (and a resume reads back from the progress file)."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lib.core.rows import shard_path
from lib.core.tasks import verify
from lib.engines.timing import PhaseTimer
from lib.society.config import SocietyConfig
from lib.society.generation import Verifier
from lib.society.rows import RowWriter


class Interrupted(RuntimeError):
    """Raised by the test hook ``interrupt_after`` once that generation is on disk."""


class ShardPlace:
    """Where the (``arm``, ``seed``) shard of ``cfg`` lives (a job's ``cfg``, ``arm``, ``seed`` and ``folder``):
    its rows, its seed's adapters and the writer of its rows."""

    @property
    def path(self) -> Path:
        """The shard's rows: ``<folder>/<arm>_s<seed>.csv`` (its progress file beside it)."""
        return shard_path(self.folder, self.arm, self.seed)

    @property
    def root(self) -> Path:
        """The seed's adapters: ``<adapters root>/s<seed>/`` (founders, and each arm's generations)."""
        return self.cfg.adapters_root() / f"s{self.seed}"

    @property
    def rows(self) -> RowWriter:
        return RowWriter(self.cfg.experiment, self.arm, self.seed)


@dataclass(frozen=True)
class ShardJob(ShardPlace):
    """The (``arm``, ``seed``) shard of ``cfg``, its rows in ``folder``, run on ``base``.

    ``verifier(output, task) -> bool`` is the grounded signal; ``interrupt_after`` a test hook (raise
    :class:`Interrupted` once that generation is on disk); ``progress`` a bar updated per generation;
    ``timer`` receives every phase and the work done in it (the progress file records each generation's work:
    tokens generated and prompted, LoRA steps and tokens trained, verifier calls); ``engine``: how agents answer and merge
    (:func:`lib.engines.agents.make_agents`); ``trainer``: how founders and children are trained
    (:func:`lib.engines.batched.train_loras`, recorded in the progress file).
    """

    base: Any
    cfg: SocietyConfig
    arm: str
    seed: int
    folder: Path
    verifier: Verifier = verify
    interrupt_after: int | None = None
    progress: Any = None
    timer: PhaseTimer | None = None
    engine: str = "auto"
    trainer: str = "batched"


@dataclass(frozen=True)
class ShardState:
    """Where a shard stands before generation ``t``: the population's adapter folders, the birth rows
    still to be written (with generation ``t``), the wall seconds and phases of every generation run so
    far, the run's cost so far (LoRA steps, val evaluations) and its archive of elites, if it keeps one — what
    the progress file records."""

    t: int
    dirs: list[Path]
    pending: list[dict] = field(default_factory=list)
    walls: list[float] = field(default_factory=list)
    phases: list[dict] = field(default_factory=list)
    cost: dict = field(default_factory=dict)
    archive: dict | None = None   # an arm with an archive: lib.society.crossover.Archive.to_json()
    counts: list[dict] = field(default_factory=list)  # per generation: {phase: work counters}, and verifier_calls


class CountingVerifier:
    """A verifier that counts its calls (``calls``): the verifier calls a run spends, recorded per generation."""

    def __init__(self, verify: Verifier):
        self.verify, self.calls = verify, 0

    def __call__(self, output: str, task) -> bool:
        self.calls += 1
        return self.verify(output, task)
