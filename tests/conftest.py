"""Shared fixtures: a seeded generator, and every test's figures in a temporary folder.

``make test`` runs this suite on two cores (pytest-xdist, ``-n 2 --dist loadfile``): each test file runs
whole on one worker, so a module-scoped fixture (a tiny base loaded, adapters trained) is built once,
and each worker keeps one intra-op thread (two workers × two OpenMP threads on two cores spin against
each other; :func:`lib.engines.models._one_thread` says the same for the models' own runs). Tests write
only under pytest's per-worker temporary folders (``GE_FIGURES_DIR`` below; ``GE_DATA_DIR`` /
``GE_RUNS_DIR`` / ``adapters_dir`` where a test runs an experiment), never into the tracked tree."""
from __future__ import annotations

import os

if os.environ.get("PYTEST_XDIST_WORKER"):  # set by xdist before this file is imported
    # before torch or numpy load their thread pools (also inherited by kernels and Ray workers started here)
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ.setdefault(var, "1")

import numpy as np  # noqa: E402
import pytest  # noqa: E402


def pytest_configure(config):
    if os.environ.get("PYTEST_XDIST_WORKER"):
        try:
            import torch
        except ImportError:
            return
        torch.set_num_threads(1)


@pytest.fixture
def rng():
    return np.random.default_rng(12345)


@pytest.fixture(autouse=True)
def _figures_in_tmp(tmp_path_factory, monkeypatch):
    """``GE_FIGURES_DIR`` points at a fresh temporary folder, so no test (nor a notebook kernel it
    starts) writes into the tracked ``figures/``; a test may set it again or unset it."""
    monkeypatch.setenv("GE_FIGURES_DIR", str(tmp_path_factory.mktemp("figures")))
