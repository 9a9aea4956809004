"""The society's configs and rows as the tables read them: each read once per (experiment, scale) in a
process (a README render asks for the same rows from many tables)."""
from __future__ import annotations

from functools import lru_cache

import pandas as pd

from lib.core.paths import config_path, data_dir


@lru_cache(maxsize=None)
def config_of(experiment: str, scale: str) -> dict | None:
    from lib.society import run as society
    p = config_path(experiment, scale)
    return society.load_file(p) if p.is_file() else None


@lru_cache(maxsize=None)
def rows_of(experiment: str, scale: str) -> pd.DataFrame | None:
    """The rows of ``configs/<experiment>/<scale>.yaml`` (``None`` without config or data)."""
    from lib.society import run as society
    cfg = config_of(experiment, scale)
    folder = data_dir(scale, experiment)
    if cfg is None or not folder.is_dir():
        return None
    rows = society.load_rows(cfg, folder)
    return rows if len(rows) else None
