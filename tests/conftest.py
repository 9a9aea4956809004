"""Shared fixtures: a seeded generator, and every test's figures in a temporary folder."""
from __future__ import annotations

import numpy as np
import pytest


@pytest.fixture
def rng():
    return np.random.default_rng(12345)


@pytest.fixture(autouse=True)
def _figures_in_tmp(tmp_path_factory, monkeypatch):
    """``GE_FIGURES_DIR`` points at a fresh temporary folder, so no test (nor a notebook kernel it
    starts) writes into the tracked ``figures/``; a test may set it again or unset it."""
    monkeypatch.setenv("GE_FIGURES_DIR", str(tmp_path_factory.mktemp("figures")))
