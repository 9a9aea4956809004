"""Where things live: every path the project writes is derived here from the repository root.

Paths never depend on the working directory, so a notebook opened in JupyterLab (cwd
``notebooks/``), a papermill run and the CLI all read and write the same folders.
"""
from __future__ import annotations

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]  # lib/core/paths.py -> the repository
CONFIGS = REPO_ROOT / "configs"
DATA = REPO_ROOT / "data"
FIGURES = REPO_ROOT / "figures"
BUILD = REPO_ROOT / "build"
RUNS = REPO_ROOT / "runs"  # git-ignored: adapters and checkpoints of runs (weights are never committed)

SCALES = ("smoke", "cpu", "paper")


def check_scale(scale: str) -> str:
    """Return ``scale`` if it is one of :data:`SCALES`, else raise a ``ValueError`` naming them."""
    if scale not in SCALES:
        raise ValueError(f"unknown scale {scale!r}: use one of {', '.join(SCALES)}")
    return scale


def data_root() -> Path:
    """Root of result data: ``$GE_DATA_DIR`` when set (e.g. a folder every cluster node can reach), else ``data/``."""
    return Path(os.environ["GE_DATA_DIR"]) if os.environ.get("GE_DATA_DIR") else DATA


def runs_root() -> Path:
    """Root of weights of runs: ``$GE_RUNS_DIR`` when set, else ``runs/`` (git-ignored)."""
    return Path(os.environ["GE_RUNS_DIR"]) if os.environ.get("GE_RUNS_DIR") else RUNS


def figures_root() -> Path:
    """Root of regenerated figures: ``$GE_FIGURES_DIR`` when set (tests, a scratch rebuild), else ``figures/``."""
    return Path(os.environ["GE_FIGURES_DIR"]) if os.environ.get("GE_FIGURES_DIR") else FIGURES


def data_dir(scale: str, experiment: str) -> Path:
    """``<data root>/<scale>/<experiment>/`` — results (CSV/JSON rows + manifest.json) of real runs."""
    return data_root() / check_scale(scale) / experiment


def figures_dir(scale: str) -> Path:
    """``<figures root>/<scale>/`` — regenerated figures; created on demand."""
    d = figures_root() / check_scale(scale)
    d.mkdir(parents=True, exist_ok=True)
    return d


def runs_dir(scale: str, experiment: str) -> Path:
    """``runs/<scale>/<experiment>/`` — weights of runs (adapters, checkpoints); git-ignored."""
    return runs_root() / check_scale(scale) / experiment


def config_path(experiment: str, scale: str) -> Path:
    """``configs/<experiment>/<scale>.yaml``."""
    return CONFIGS / experiment / f"{check_scale(scale)}.yaml"


def recorded_root(p, var: str) -> str:
    """How a manifest records root ``p`` that ``$var`` may have moved: relative to the repository when
    it lies inside it (:func:`rel`), else ``"$var"`` — never one machine's absolute path."""
    p = Path(p)
    inside = not p.is_absolute() or p.resolve().is_relative_to(REPO_ROOT)
    return rel(p) if inside else f"${var}"


def rel(p) -> str:
    """``p`` relative to the repository when it lies inside it, else as given (manifests and indexes
    must not carry one machine's absolute paths)."""
    p = Path(p)
    try:
        return str(p.resolve().relative_to(REPO_ROOT)) if p.is_absolute() else str(p)
    except ValueError:
        return str(p)
