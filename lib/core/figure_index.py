"""The figure index ``figures/<scale>/index.json`` (each panel's caption, data and config), read without
matplotlib: :mod:`lib.provenance` and ``python -m lib.reproduce`` read it before any figure is drawn."""
from __future__ import annotations

import hashlib
import tempfile
from pathlib import Path

from filelock import FileLock

from lib.core.jsonfile import read_json
from lib.core.paths import figures_dir


def index_path(scale: str) -> Path:
    return figures_dir(scale) / "index.json"


def read_index(scale: str) -> dict:
    """``figures/<scale>/index.json`` (``{}`` when absent); unreadable, a one-line error naming it."""
    p = index_path(scale)
    return read_json(p, fix=f"delete it and run notebook 05 (make reproduce SCALE={scale}), which redraws "
                            f"every panel and rebuilds the index") if p.is_file() else {}


def index_lock(scale: str) -> FileLock:
    """A lock held across a read, change and write of ``figures/<scale>/index.json``: two notebooks saving
    panels of one scale at once (``make test-notebooks`` runs two at a time) would otherwise each write back
    the index they read, without the other's entries. The lock file lies in the temporary folder, named by
    the index's path, so it never shows in ``git status``."""
    key = hashlib.sha256(str(index_path(scale).resolve()).encode()).hexdigest()[:16]
    return FileLock(Path(tempfile.gettempdir()) / f"grounded-evolution-index-{key}.lock")
