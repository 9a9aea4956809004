"""Every random stream of one (arm, seed) of the society, reconstructible on resume.

Every random draw of generation ``t`` comes from ``SeedSequence([seed, crc32(arm), t, ...])``, so a
resumed run equals an uninterrupted one. An arm's modifiers (``@g``, ``@e``, a budget) are dropped from
the stream's key, so the variants of one arm share their random numbers (common random numbers: paired
contrasts).
"""
from __future__ import annotations

import zlib

import numpy as np


def _stream(seed: int, arm: str, *keys: int) -> np.random.SeedSequence:
    """The seed sequence of one (seed, arm, ...) draw. Modifiers (``@g``, ``@e``) are dropped, so
    the variants of one arm share their random numbers (common random numbers: paired contrasts)."""
    name = arm.split("@")[0]
    return np.random.SeedSequence([seed, zlib.crc32(name.encode()), *keys])


def generation_rng(seed: int, arm: str, t: int) -> np.random.Generator:
    """The rng of generation ``t`` of one (arm, seed): reconstructible on resume."""
    return np.random.default_rng(_stream(seed, arm, t))


def selection_rng(seed: int, arm: str, t: int) -> np.random.Generator:
    """The rng of generation ``t``'s parent selection (lexicase's case orders), a stream of its own so
    that the arms that draw nothing at selection keep :func:`generation_rng`'s numbers."""
    return np.random.default_rng(_stream(seed, arm, t, 1))


def candidate_rng(seed: int, arm: str, t: int) -> np.random.Generator:
    """The rng that breaks ties between a ``continue`` child's candidates at generation ``t`` (a stream of its
    own, so the other draws of the generation keep their numbers)."""
    return np.random.default_rng(_stream(seed, arm, t, 2))


def child_seed(seed: int, arm: str, t: int, c: int) -> int:
    """Training seed of child ``c`` born at generation ``t`` (its LoRA init and data order).

    Deviation from the seed (``seed*31 + t*N + c``, which collides across replicates: seed 0 at
    t=5, c=1 equals seed 1 at t=0, c=0): a hash of ``(seed, arm, t, c)``, so replicates are
    independent while the variants of one arm share it.
    """
    return int(_stream(seed, arm, t, c, 1).generate_state(1)[0] % (2**31 - 1))
