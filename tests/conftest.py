"""Shared fixtures: a seeded generator, every test's figures in a temporary folder, and SmolLM2 loaded once.

``make test`` runs this suite on two cores (pytest-xdist, ``-n 2 --dist loadfile``): each test file runs
whole on one worker, so a module-scoped fixture (a tiny base loaded, adapters trained) is built once,
and each worker keeps one intra-op thread (two workers × two OpenMP threads on two cores spin against
each other; :func:`lib.engines.models._one_thread` says the same for the models' own runs). The files in
:data:`SHARED` form one unit of work on one worker, so the session fixture they share (SmolLM2, the
slowest thing to build) is loaded once, not once per file. Tests write only under pytest's per-worker
temporary folders (``GE_FIGURES_DIR`` below; ``GE_DATA_DIR`` / ``GE_RUNS_DIR`` / ``adapters_dir`` where a
test runs an experiment); ``build/<scale>/`` (git-ignored) gets one notebook each from test_reproduce.py
(01) and test_figures.py (05), never the same file."""
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


@pytest.fixture(autouse=True)
def _readme_tables_untouched(monkeypatch):
    """No test rewrites the README's and docs' tables: ``python -m lib.reproduce`` ends by rewriting them
    (``lib.tables.registry.update``), which a test of the runner (test_reproduce.py, test_figures.py) would do
    in the tracked tree — while a test on the other worker reads the README — and at the cost of every table
    computed again. Here it writes nothing and says nothing changed; test_tables.py checks the tables
    (``stale``) and the rewriting (``render``)."""
    try:
        from lib.tables import registry
    except Exception:  # a tree that cannot import the tables fails in the tests that use them, not in every test
        return
    monkeypatch.setattr(registry, "update", lambda files=registry.FILES: [])


# ----------------------------------------------------------------------------- SmolLM2, loaded once a worker

# test files that share a session fixture: one unit of work for xdist, run in this order on one worker
SHARED = {"test_smollm2.py": ("smollm2", 0), "test_multilora.py": ("smollm2", 1)}


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """Within :data:`SHARED`, test_smollm2.py first: it sees SmolLM2 as freshly loaded (as when each file
    loaded its own), test_multilora.py's one SmolLM2 test after it."""
    rank = {name: k for name, (_, k) in SHARED.items()}
    shared = [i for i in items if i.path.name in rank]
    if shared:
        first = items.index(shared[0])
        rest = [i for i in items if i.path.name not in rank]
        shared.sort(key=lambda i: rank[i.path.name])  # stable: each file keeps its own order
        items[:] = rest[:first] + shared + rest[first:]


try:
    from xdist.scheduler import LoadFileScheduling
except ImportError:  # without pytest-xdist the suite runs serially; nothing to schedule
    LoadFileScheduling = None
else:
    class _SharedFileScheduling(LoadFileScheduling):
        """``--dist loadfile``, with the files of :data:`SHARED` as one unit of work."""

        def _split_scope(self, nodeid: str) -> str:
            scope = super()._split_scope(nodeid)
            group = SHARED.get(scope.rsplit("/", 1)[-1])
            return f"shared:{group[0]}" if group else scope

    @pytest.hookimpl(tryfirst=True)
    def pytest_xdist_make_scheduler(config, log):
        return _SharedFileScheduling(config, log) if config.getvalue("dist") == "loadfile" else None


@pytest.fixture(scope="session")
def smol():
    """SmolLM2-135M-Instruct (fp32) on the CPU, for the whole session (~25-50 s to load on 2 cores); a
    test that adds adapters removes them or leaves them to :func:`two_adapters`, which makes its own anew."""
    import time

    from lib.engines import models

    t0 = time.perf_counter()
    base = models.load_base(models.SMOLLM2, device="cpu", dtype="fp32")
    print(f"\nSmolLM2 loaded in {time.perf_counter() - t0:.1f} s")
    return base


@pytest.fixture
def two_adapters(smol):
    """Two distinct rank-4 adapters ``ad0``, ``ad1`` without training: peft's init (A random, B = 0), then B
    drawn from a seeded normal so each adapter moves the model (cheaper than training on a CPU). Made anew
    for each test that asks (seeded: the same weights every time), so no test depends on another's leftovers."""
    import torch

    from lib.engines import lora

    for k, name in enumerate(("ad0", "ad1")):
        lora.new_adapter(smol, name, r=4, alpha=8, seed=100 + k)
        g = torch.Generator().manual_seed(200 + k)
        with torch.no_grad():
            for p in lora.adapter_params(smol, name):
                if p.dim() == 2 and p.shape[1] == 4:  # lora_B: (out, r)
                    p.copy_(torch.randn(p.shape, generator=g) * 0.05)
    smol.model.set_adapter(lora.IDLE)
    return ["ad0", "ad1"]
