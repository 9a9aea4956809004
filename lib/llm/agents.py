"""The society's agents on a real base: LoRA adapters attached to one frozen model, by name.

:class:`PeftAgents` is the :class:`lib.llm.generation.Agents` the loop runs with: ``answer`` is one
mixed-adapter batched generation (:func:`lib.llm.generate.generate_agents`), ``merge`` a peft merge
(:func:`lib.llm.merge.merge_adapters`). Tests run the same steps with fake agents.
"""
from __future__ import annotations

from typing import Sequence

from .generate import BASE_ROW, Counter, generate_agents
from .merge import merge_adapters


class PeftAgents:
    """Agents = adapters attached to ``base`` under their names; ``BASE`` = no adapter."""

    BASE = BASE_ROW

    def __init__(self, base, *, hard: bool, batch_size: int, counter: Counter | None = None):
        self.base, self.hard, self.batch_size, self.counter = base, hard, batch_size, counter

    def answer(self, names: Sequence[str], prompts: Sequence[str]) -> list[list[str]]:
        return generate_agents(self.base, prompts, names, hard=self.hard, batch_size=self.batch_size,
                               counter=self.counter)

    def merge(self, parents: Sequence[str], weights: Sequence[float], name: str, method: str) -> str:
        return merge_adapters(self.base, parents, weights, name, method)
