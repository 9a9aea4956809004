"""Tidy long-form result rows, written as they are produced so that nothing is lost.

Every experiment writes rows with the seed's keys (``experiment, arm, seed, generation`` or
``step``, ``agent`` or ``tool``, ``metric, value``, ...). A run of one (arm, seed) appends to its
own *shard*, ``<arm>_s<seed>.csv``, one block per generation (or evaluation step), and records the
last completed block in ``<arm>_s<seed>.progress.json``. A killed run resumes from that block:
:func:`resume_shard` drops any rows written after it (a block half-written when the process died)
and returns where to continue.
"""
from __future__ import annotations

import csv
import json
import os
from pathlib import Path
from typing import Iterable, Mapping, Sequence

import pandas as pd


def shard_path(folder: str | Path, arm: str, seed: int) -> Path:
    return Path(folder) / f"{arm}_s{seed}.csv"


def progress_path(shard: str | Path) -> Path:
    shard = Path(shard)
    return shard.with_name(shard.stem + ".progress.json")


def append_rows(path: str | Path, rows: Iterable[Mapping], columns: Sequence[str]) -> None:
    """Append ``rows`` to the CSV at ``path`` (header written first if the file is new), then fsync.

    Rows must have exactly ``columns`` as keys; a missing or extra key is a ``KeyError``/``ValueError``.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    new = not path.exists() or path.stat().st_size == 0
    with path.open("a", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(columns), extrasaction="raise")
        if new:
            w.writeheader()
        for r in rows:
            missing = set(columns) - set(r)
            if missing:
                raise KeyError(f"row lacks keys {sorted(missing)}: {dict(r)}")
            w.writerow(r)
        fh.flush()
        os.fsync(fh.fileno())


def mark_done(shard: str | Path, block: int, **info) -> None:
    """Record that all rows of ``block`` (a generation or step) are in ``shard``."""
    p = progress_path(shard)
    tmp = p.with_suffix(".tmp")
    tmp.write_text(json.dumps({"last_done": int(block), **info}, default=str))
    tmp.replace(p)


def last_done(shard: str | Path) -> int | None:
    """The last completed block of ``shard``, or ``None`` when nothing was completed."""
    p = progress_path(shard)
    if not p.is_file():
        return None
    return int(json.loads(p.read_text())["last_done"])


def resume_shard(shard: str | Path, block_key: str) -> int | None:
    """Prepare ``shard`` for a resumed run; return its last completed block (``None``: start anew).

    Rows whose ``block_key`` is beyond the last completed block (written by a run killed mid-block)
    are removed, so the resumed run's rows equal an uninterrupted run's.
    """
    shard = Path(shard)
    done = last_done(shard)
    if done is None:
        shard.unlink(missing_ok=True)
        return None
    if shard.exists():
        df = pd.read_csv(shard)
        kept = df[df[block_key] <= done]
        if len(kept) != len(df):
            tmp = shard.with_suffix(".tmp")
            kept.to_csv(tmp, index=False)
            tmp.replace(shard)
    return done


def read_rows(folder: str | Path, pattern: str = "*_s*.csv") -> pd.DataFrame:
    """All shards of ``folder`` in one table (sorted by file name, so the order is stable).

    A missing folder or one without shards is a ``FileNotFoundError`` naming the folder.
    """
    folder = Path(folder)
    files = sorted(folder.glob(pattern))
    if not files:
        raise FileNotFoundError(f"no result shards ({pattern}) in {folder}: run the experiment first")
    return pd.concat([pd.read_csv(f) for f in files], ignore_index=True)
