"""Shared fixtures: seeded generators and small synthetic populations."""
from __future__ import annotations

import numpy as np
import pytest


@pytest.fixture
def rng():
    return np.random.default_rng(12345)


def random_outputs(rng: np.random.Generator, n_agents: int, n_prompts: int, vocab: int = 3) -> list[list[str]]:
    """Agents answering with one of ``vocab`` answers (or nothing) per prompt."""
    choices = [""] + [f"ans{k}" for k in range(vocab)]
    return [[choices[int(rng.integers(0, len(choices)))] for _ in range(n_prompts)] for _ in range(n_agents)]
