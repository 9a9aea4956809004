"""The society's agents on a real base: LoRA adapters attached to one frozen model, by name.

:class:`PeftAgents` is the reference :class:`lib.society.generation.Agents`: ``answer`` is one
mixed-adapter batched generation through peft (:func:`lib.engines.generate.generate_agents`), ``merge``
a peft merge (:func:`lib.engines.merge.merge_adapters`). :class:`lib.engines.folded.FoldedAgents` answers
the same on a float32 base by folding each update into the weights (faster);
:class:`lib.engines.multilora.MultiLoraAgents` in mixed batches whose adapted modules apply every row's
update in two batched matmuls (any dtype and device); :func:`make_agents` picks one. Tests run the same steps with fake agents.
"""
from __future__ import annotations

from pathlib import Path
from typing import Sequence

from lib.engines.folded import FoldedAgents
from lib.engines.generate import BASE_ROW, Counter, generate_agents
from lib.engines.lora import load_adapter, remove_all, save_adapter
from lib.engines.merge import TIES_DENSITY, full_rank, merge_adapters
from lib.engines.multilora import MultiLoraAgents

ENGINES = ("auto", "folded", "peft", "multilora")


class PeftAgents:
    """Agents = adapters attached to ``base`` under their names; ``BASE`` = no adapter."""

    BASE = BASE_ROW

    def __init__(self, base, *, hard: bool, batch_size: int, counter: Counter | None = None):
        self.base, self.hard, self.batch_size, self.counter = base, hard, batch_size, counter

    def answer(self, names: Sequence[str], prompts: Sequence[str]) -> list[list[str]]:
        return generate_agents(self.base, prompts, names, hard=self.hard, batch_size=self.batch_size,
                               counter=self.counter)

    def merge(self, parents: Sequence[str], weights: Sequence[float], name: str, method: str) -> str:
        if method == "ties":  # TIES of the updates, back to a LoRA at full rank (exact)
            return merge_adapters(self.base, parents, weights, name, "ties", density=TIES_DENSITY,
                                  svd_rank=full_rank(self.base, parents))
        return merge_adapters(self.base, parents, weights, name, method)

    def load(self, name: str, path: str | Path) -> None:
        load_adapter(self.base, name, path)

    def save(self, name: str, path: str | Path) -> Path:
        return save_adapter(self.base, name, path)

    def forget(self) -> None:
        remove_all(self.base)


def make_agents(base, *, engine: str, hard: bool, batch_size: int, counter: Counter | None = None):
    """The agents of a run: ``"folded"`` (:class:`lib.engines.folded.FoldedAgents`, float32 bases),
    ``"peft"`` (:class:`PeftAgents`, the reference) or ``"multilora"``
    (:class:`lib.engines.multilora.MultiLoraAgents`, any dtype); ``"auto"``: folded for a float32 base,
    peft otherwise — the choice the committed rows were made with. On a GPU the fast choice is
    ``multilora`` in bf16 (the base's dtype at paper scale): one mixed batch per call instead of one
    decode per agent (folded) or one small matmul pair per adapter and module (peft); pass it
    explicitly (``python -m lib.society.gpu_run --engine multilora``)."""
    import torch
    if engine not in ENGINES:
        raise ValueError(f"unknown agents engine {engine!r}; use one of {', '.join(ENGINES)}")
    if engine == "auto":
        engine = "folded" if next(base.model.parameters()).dtype == torch.float32 else "peft"
    cls = {"folded": FoldedAgents, "peft": PeftAgents, "multilora": MultiLoraAgents}[engine]
    return cls(base, hard=hard, batch_size=batch_size, counter=counter)
