"""Provenance: every data folder carries ``manifest.json`` saying how its rows were obtained.

A manifest holds the resolved config and its hash, the git commit (and whether the tree was
dirty), the versions of the packages that shape the numbers, the device, the seeds, the start
time and the wall time. Long runs write it when they start (``status: running``) and again when
they finish (``status: complete``), so a half-finished folder says so.
"""
from __future__ import annotations

import datetime as _dt
import json
import os
import platform
import subprocess
import uuid
from importlib import metadata
from pathlib import Path
from typing import Any, Mapping

from .config import config_hash
from .paths import REPO_ROOT

MANIFEST = "manifest.json"
PACKAGES = ("numpy", "pandas", "torch", "transformers", "peft", "tokenizers")


def _git(*args: str) -> str:
    try:
        return subprocess.run(["git", *args], cwd=REPO_ROOT, capture_output=True, text=True,
                              timeout=10, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def git_state() -> dict:
    """``{"commit": sha or "unknown", "dirty": bool}`` of the repository."""
    commit = _git("rev-parse", "HEAD") or "unknown"
    dirty = bool(_git("status", "--porcelain", "--untracked-files=no"))
    return {"commit": commit, "dirty": dirty}


def package_versions() -> dict:
    out = {"python": platform.python_version()}
    for p in PACKAGES:
        try:
            out[p] = metadata.version(p)
        except metadata.PackageNotFoundError:
            out[p] = None
    return out


def device_name() -> str:
    """The GPU's name where torch sees CUDA, else the CPU model."""
    try:
        import torch
        if torch.cuda.is_available():
            return "cuda:" + torch.cuda.get_device_name(0)
    except ImportError:
        pass
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return "cpu:" + line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "cpu:" + (platform.processor() or platform.machine())


def now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def build_manifest(cfg: Mapping[str, Any], *, started: str, wall_s: float | None,
                   status: str, extra: Mapping[str, Any] | None = None) -> dict:
    seeds = cfg.get("seeds", [cfg["seed"]] if "seed" in cfg else None)
    return {
        "experiment": cfg.get("experiment"),
        "kind": cfg.get("kind"),
        "scale": cfg.get("scale"),
        "status": status,
        "config": dict(cfg),
        "config_hash": config_hash(cfg),
        "git": git_state(),
        "versions": package_versions(),
        "device": device_name(),
        "seeds": seeds,
        "started": started,
        "wall_s": None if wall_s is None else round(float(wall_s), 3),
        **(dict(extra) if extra else {}),
    }


def write_manifest(folder: str | Path, cfg: Mapping[str, Any], *, started: str,
                   wall_s: float | None = None, status: str = "complete",
                   extra: Mapping[str, Any] | None = None) -> Path:
    """Write ``folder/manifest.json`` (atomically: a temp file, then a rename)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    m = build_manifest(cfg, started=started, wall_s=wall_s, status=status, extra=extra)
    tmp = folder / f"{MANIFEST}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp"  # unique: shards of a sweep write concurrently
    tmp.write_text(json.dumps(m, indent=2, sort_keys=True, allow_nan=False, default=str) + "\n")
    tmp.replace(folder / MANIFEST)
    return folder / MANIFEST


def read_manifest(folder: str | Path) -> dict | None:
    """The manifest of ``folder``, or ``None`` when there is none."""
    p = Path(folder) / MANIFEST
    if not p.is_file():
        return None
    return json.loads(p.read_text())


def manifest_matches(folder: str | Path, cfg: Mapping[str, Any], *, complete: bool = True) -> bool:
    """True when ``folder`` holds a manifest of the same config (and, by default, a finished run)."""
    m = read_manifest(folder)
    if m is None or m.get("config_hash") != config_hash(cfg):
        return False
    return m.get("status") == "complete" or not complete


def check_resumable(folder: str | Path, cfg: Mapping[str, Any]) -> None:
    """Refuse to mix runs: raise when ``folder`` already holds data of a *different* config."""
    m = read_manifest(folder)
    if m is not None and m.get("config_hash") != config_hash(cfg):
        old, new = m.get("config", {}), dict(cfg)
        diff = sorted(k for k in set(old) | set(new) if old.get(k) != new.get(k))
        raise ValueError(
            f"{folder} already holds data of another config (keys that differ: {diff}). "
            f"Move or delete that folder, or run with the config it was made with.")
