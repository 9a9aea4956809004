"""Tidy long-form result rows, written as they are produced so that nothing is lost, checked when read.

Every experiment writes rows with the seed's keys (``experiment, arm, seed, generation`` or
``step``, ``agent`` or ``tool``, ``metric, value``, ...). A run of one (arm, seed) appends to its
own *shard*, ``<arm>_s<seed>.csv``, one block per generation (or evaluation step), and records the
last completed block, and how many rows the shard then held, in ``<arm>_s<seed>.progress.json``.

Reading a shard (:func:`read_shard`, :func:`read_rows`) returns the rows of its completed blocks
after checking them: every line whole (a line end, as many fields as the header), the key fields,
``metric`` and ``value`` present, ``value`` a number, ``arm``/``seed`` those of the file name, no
block beyond the last completed one, and exactly the number of rows recorded when that block was
marked done, with the SHA-256 recorded then (a shard altered later, even into well-formed rows, is
named). A damaged shard is a :class:`lib.core.errors.DamagedFileError` naming the file, the
line and what to do — never a shorter or NaN-padded table. Rows after the last completed block
of an unfinished shard (a block in flight, or half-written when the process died) are not part
of the data: a reader leaves them out and :func:`resume_shard` cuts them off, so a resumed run's
rows equal an uninterrupted run's, byte for byte. A *finished* shard (its last completed block is
the run's last: :func:`final_block`, from the folder's manifest) has no block in flight, so any
byte after its completed rows (a half row appended later) is damage, for a reader and a resume
alike. (Shards whose progress file predates the row count are checked line by line only.)
"""
from __future__ import annotations

import csv
import hashlib
import io
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Mapping, Sequence

import pandas as pd

from lib.core.errors import DamagedFileError
from lib.core.jsonfile import read_json, write_json
from lib.core.manifest import read_manifest

BLOCK_KEYS = ("generation", "step")  # the block column of the society and of tool mutation
REQUIRED = ("arm", "seed", "metric", "value")  # never empty where the header has them
ROWS_KEY = "csv_rows"  # progress-file key: data rows in the shard when its last block was marked done
SHA_KEY = "csv_sha256"  # progress-file key: SHA-256 of the shard's bytes when its last block was marked done
# per block column, the folder's manifest config key that fixes a run's last block, and its offset:
# the society's last generation is generations - 1, tool mutation's last logging step is n_steps
FINAL_BLOCK = {"generation": ("generations", -1), "step": ("n_steps", 0)}


def shard_path(folder: str | Path, arm: str, seed: int) -> Path:
    return Path(folder) / f"{arm}_s{seed}.csv"


def progress_path(shard: str | Path) -> Path:
    shard = Path(shard)
    return shard.with_name(shard.stem + ".progress.json")


def _recompute_fix(shard: Path) -> str:
    return (f"delete {progress_path(shard).name} (and {shard.name}) in {shard.parent} to recompute this "
            f"shard from its start, or restore both files from a copy")


def append_rows(path: str | Path, rows: Iterable[Mapping], columns: Sequence[str]) -> None:
    """Append ``rows`` to the CSV at ``path`` (header written first if the file is new), then fsync.

    Rows must have exactly ``columns`` as keys; a missing or extra key is a ``KeyError``/``ValueError``.
    A file that does not end in a line end (a torn row nobody cut off) is refused, not glued to.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    new = not path.exists() or path.stat().st_size == 0
    if not new:
        with path.open("rb") as fh:
            fh.seek(-1, os.SEEK_END)
            if fh.read(1) != b"\n":
                raise DamagedFileError(f"{path} ends inside a row (no line end): resume the run through "
                                       f"lib.core.rows.resume_shard, which cuts it off, or {_recompute_fix(path)}")
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


def count_rows(shard: str | Path) -> int:
    """Whole data rows (line ends after the header's) in the CSV ``shard``; 0 when it is absent."""
    shard = Path(shard)
    if not shard.is_file():
        return 0
    return max(0, shard.read_bytes().count(b"\n") - 1)


def sha256_of(path: str | Path, upto: int | None = None) -> str:
    """SHA-256 (hex) of the bytes of ``path`` (its first ``upto`` bytes)."""
    data = Path(path).read_bytes()
    return hashlib.sha256(data if upto is None else data[:upto]).hexdigest()


def mark_done(shard: str | Path, block: int, **info) -> None:
    """Record (atomically) that all rows of ``block`` (a generation or step) are in ``shard``, with
    the number of rows the shard holds now (:data:`ROWS_KEY`), the SHA-256 of its bytes
    (:data:`SHA_KEY`: a later change to the completed rows is named when they are read) and the
    runner's ``info``."""
    shard = Path(shard)
    sha = sha256_of(shard) if shard.is_file() else None
    write_json(progress_path(shard), {"last_done": int(block), ROWS_KEY: count_rows(shard), SHA_KEY: sha, **info},
               indent=None, sort_keys=False, allow_nan=True)


def read_progress(shard: str | Path) -> dict | None:
    """The progress record of ``shard`` (``None``: no block completed); an unreadable one is a
    :class:`DamagedFileError` naming it and the fix."""
    shard = Path(shard)
    p = progress_path(shard)
    if not p.is_file():
        return None
    fix = f"delete it to recompute the shard {shard.name} from its start"
    info = read_json(p, fix=fix)
    if not isinstance(info, dict) or not isinstance(info.get("last_done"), int) or (
            ROWS_KEY in info and not isinstance(info[ROWS_KEY], int)):
        raise DamagedFileError(f"{p} lacks an integer last_done (or {ROWS_KEY}): {fix}")
    return info


def last_done(shard: str | Path) -> int | None:
    """The last completed block of ``shard``, or ``None`` when nothing was completed."""
    info = read_progress(shard)
    return None if info is None else info["last_done"]


# ----------------------------------------------------------------------------- checking a shard


@dataclass(frozen=True)
class Scan:
    """What :func:`scan_shard` found: the header, where the completed rows end (bytes, rows), and
    the first damage among them (``None``: intact)."""

    header: list[str]
    good_end: int
    good_rows: int
    problem: str | None


def shard_keys(shard: str | Path) -> tuple[str | None, str | None]:
    """``(arm, seed)`` from ``<arm>_s<seed>.csv`` (``None`` where the name has another form)."""
    arm, sep, seed = Path(shard).stem.rpartition("_s")
    return (arm, seed) if sep and seed.isdigit() else (None, None)


def _row_problem(fields: list[str], header: list[str], block_key: str | None, names) -> tuple[str | None, int | None]:
    """``(problem or None, block or None)`` of one parsed row."""
    if len(fields) != len(header):
        return f"{len(fields)} fields where the header has {len(header)} (the row is cut off or garbled)", None
    row = dict(zip(header, fields))
    block = None
    if block_key is not None:
        try:
            block = int(row[block_key])
        except ValueError:
            return f"{block_key} {row[block_key]!r} is no integer", None
    for c in REQUIRED:
        if c in row and row[c] == "":
            return f"{c} is missing", block
    if "value" in row:
        try:
            float(row["value"])
        except ValueError:
            return f"value {row['value']!r} is no number", block
    arm, seed = names
    if arm is not None and "arm" in row and row["arm"] != arm:
        return f"arm {row['arm']!r} in the shard of arm {arm!r}", block
    if seed is not None and "seed" in row and row["seed"] != seed:
        return f"seed {row['seed']!r} in the shard of seed {seed}", block
    return None, block


def scan_shard(shard: str | Path, done: int | None, expected_rows: int | None,
               block_key: str | None = None, columns: Sequence[str] | None = None) -> Scan:
    """Check the rows of ``shard`` whose blocks are completed (``<= done``).

    ``expected_rows``: how many there must be (the progress file's count; ``None`` for an old
    progress file: then the completed rows are those up to the first row beyond ``done``, and a
    torn or garbled row before it is damage). ``columns``: the header it must have. A missing file
    is damage when a block was completed.
    """
    shard = Path(shard)
    if not shard.is_file():
        if done is None:
            return Scan(list(columns or []), 0, 0, None)
        return Scan(list(columns or []), 0, 0, f"is missing ({progress_path(shard).name} says "
                                               f"block {done} is done)")
    data = shard.read_bytes()
    end = data.find(b"\n")
    if end < 0:
        return Scan(list(columns or []), 0, 0, "line 1: the header is cut off" if done is not None else None)
    try:
        header = next(csv.reader([data[:end].rstrip(b"\r").decode()]))
    except (UnicodeDecodeError, csv.Error, StopIteration):
        header = []
    block_key = block_key or next((k for k in BLOCK_KEYS if k in header), None)
    if not header or (columns is not None and header != list(columns)) or (block_key and block_key not in header):
        want = list(columns) if columns is not None else f"a header with {block_key}"
        return Scan(header, end + 1, 0, f"line 1: header {header} where {want} is expected")
    names = shard_keys(shard)
    pos, good, problem = end + 1, 0, None
    while pos < len(data) and (expected_rows is None or good < expected_rows):
        nl = data.find(b"\n", pos)
        whole = nl >= 0
        line = data[pos:nl if whole else len(data)]
        try:
            fields = next(csv.reader([line.rstrip(b"\r").decode()]), [])
        except (UnicodeDecodeError, csv.Error) as e:
            fields, why = None, f"unreadable ({type(e).__name__})"
        if fields is not None:
            why, block = _row_problem(fields, header, block_key, names)
        else:
            block = None
        if not whole:  # the root cause, whatever the fields left look like
            why = "the row is cut off (no line end)"
        beyond = block is not None and done is not None and block > done
        if expected_rows is None and (done is None or beyond):
            break  # an old progress file: the rows of the block in flight start here
        if why is None and beyond:
            why = f"{block_key} {block} among the rows of the completed {block_key}s (up to {done}): rows were lost"
        if why is not None:
            problem = f"line {good + 2}: {why}"
            break
        good += 1
        pos = nl + 1
    if problem is None and expected_rows is not None and good < expected_rows:
        problem = (f"line {good + 2}: the file ends after {good} of the {expected_rows} rows of the completed "
                   f"{block_key or 'block'}s (up to {done}): rows were lost")
    return Scan(header, pos, good, problem)


def final_block(shard: str | Path, block_key: str | None) -> int | None:
    """The last block of the run that writes ``shard``: :data:`FINAL_BLOCK` of the config in its folder's
    ``manifest.json`` (``None`` without a manifest, that key or a known ``block_key``)."""
    if block_key not in FINAL_BLOCK:
        return None
    config = (read_manifest(Path(shard).parent) or {}).get("config")
    key, offset = FINAL_BLOCK[block_key]
    value = config.get(key) if isinstance(config, dict) else None
    return value + offset if isinstance(value, int) else None


def _check_tail(shard: Path, done: int, scan: Scan, block_key: str | None) -> None:
    """Raise :class:`DamagedFileError` when ``shard`` is finished (block ``done`` is its run's last) and
    holds bytes after its completed rows: no block can be in flight there."""
    extra = shard.stat().st_size - scan.good_end
    if extra <= 0:
        return
    key = block_key or next((k for k in BLOCK_KEYS if k in scan.header), None)
    last = final_block(shard, key)
    if last is None or done < last:  # unfinished: a block in flight, or half-written when a run stopped
        return
    raise DamagedFileError(
        f"{shard} line {scan.good_rows + 2}: {extra} byte{'s' if extra > 1 else ''} after the {scan.good_rows} "
        f"rows of its finished run ({key} {last}, the last, is done per {progress_path(shard).name}): rows "
        f"appended after the run finished; cut them off (truncate -s {scan.good_end} {shard} keeps exactly "
        f"the rows the run wrote), restore it from a copy (git checkout -- {shard.name} where it is committed), or "
        f"{_recompute_fix(shard).split(', or ')[0]}")


def _check(shard: Path, block_key: str | None, columns: Sequence[str] | None) -> tuple[dict | None, Scan]:
    info = read_progress(shard)
    done = None if info is None else info["last_done"]
    scan = scan_shard(shard, done, None if info is None else info.get(ROWS_KEY, None), block_key, columns)
    if scan.problem is not None:
        raise DamagedFileError(f"{shard} {scan.problem}; {_recompute_fix(shard)}")
    want = None if info is None else info.get(SHA_KEY)
    if want and sha256_of(shard, scan.good_end) != want:  # well-formed, but not the rows the run wrote
        raise DamagedFileError(f"{shard} was changed after its rows were written (its SHA-256 differs from the one "
                               f"in {progress_path(shard).name}): restore it from a copy (git checkout -- "
                               f"{shard.name} where it is committed), or {_recompute_fix(shard).split(', or ')[0]}")
    if done is not None:
        _check_tail(shard, done, scan, block_key)
    return info, scan


def read_shard(shard: str | Path, block_key: str | None = None,
               columns: Sequence[str] | None = None) -> pd.DataFrame:
    """The checked rows of the completed blocks of ``shard`` (see the module doc; an empty table when
    no block was completed). Raises :class:`DamagedFileError` naming the file and line."""
    shard = Path(shard)
    _, scan = _check(shard, block_key, columns)
    if scan.good_rows == 0:
        return pd.DataFrame(columns=scan.header or list(columns or []))
    with shard.open("rb") as fh:
        return pd.read_csv(io.BytesIO(fh.read(scan.good_end)))


def resume_shard(shard: str | Path, block_key: str) -> int | None:
    """Prepare ``shard`` for a resumed run; return its last completed block (``None``: start anew).

    The rows after the last completed block (a block half-written when the process died) are cut
    off, so the resumed run's rows equal an uninterrupted run's. Damage among the completed rows, and
    bytes after the rows of a finished shard (no block was in flight), are a :class:`DamagedFileError`
    (they cannot be recomputed from the progress of a later block).
    """
    shard = Path(shard)
    info, scan = _check(shard, block_key, None)
    if info is None:
        shard.unlink(missing_ok=True)
        return None
    if shard.stat().st_size > scan.good_end:
        with shard.open("r+b") as fh:
            fh.truncate(scan.good_end)
            fh.flush()
            os.fsync(fh.fileno())
    return info["last_done"]


def damaged_shards(folder: str | Path, pattern: str = "*_s*.csv") -> list[str]:
    """One line per damaged shard (or progress file) of ``folder``; ``[]`` when all are intact."""
    out = []
    for f in sorted(Path(folder).glob(pattern)):
        try:
            _check(f, None, None)
        except DamagedFileError as e:
            out.append(str(e))
    return out


def read_rows(folder: str | Path, pattern: str = "*_s*.csv") -> pd.DataFrame:
    """All shards of ``folder`` in one table (sorted by file name, so the order is stable), each
    checked by :func:`read_shard`.

    A missing folder or one without shards is a ``FileNotFoundError`` naming the folder.
    """
    folder = Path(folder)
    files = sorted(folder.glob(pattern))
    if not files:
        raise FileNotFoundError(f"no result shards ({pattern}) in {folder}: run the experiment first")
    parts = [read_shard(f) for f in files]
    full = [p for p in parts if len(p)]
    return pd.concat(full, ignore_index=True) if full else parts[0]
