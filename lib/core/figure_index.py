"""The figure index ``figures/<scale>/index.json`` (each panel's caption, data and config), read without
matplotlib: :mod:`lib.provenance` and ``python -m lib.reproduce`` read it before any figure is drawn."""
from __future__ import annotations

from pathlib import Path

from lib.core.jsonfile import read_json
from lib.core.paths import figures_dir


def index_path(scale: str) -> Path:
    return figures_dir(scale) / "index.json"


def read_index(scale: str) -> dict:
    """``figures/<scale>/index.json`` (``{}`` when absent); unreadable, a one-line error naming it."""
    p = index_path(scale)
    return read_json(p, fix=f"delete it and run notebook 05 (make reproduce SCALE={scale}), which redraws "
                            f"every panel and rebuilds the index") if p.is_file() else {}
