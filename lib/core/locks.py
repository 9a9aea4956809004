"""Locks on data folders, so that two runs never interleave their rows or their manifest writes.

Two kinds, both operating-system file locks (``filelock``: released when the process dies, so a
killed run never leaves a folder locked):

- a *shard lock*, ``<folder>/.<arm>_s<seed>.lock``, held while a run writes that shard (for a
  whole-experiment run: every shard it will write, taken before anything is written). A second
  run on a held shard is refused at once (:class:`lib.core.errors.BusyError`, naming the folder),
  while the workers of a sweep, which write different shards of one folder, run side by side;
- the *folder lock*, ``<folder>/.lock``, held only for the moment a process reads, changes and
  rewrites the folder's ``manifest.json``; others wait for it (seconds at most).

And a *work lock* (:func:`work_lock`) around work two processes would otherwise do twice at once: a seed's
founders, which every arm of the seed trains before its first generation (two sweep workers on one seed).
"""
from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Iterable, Iterator

from lib.core.errors import BusyError

FOLDER_LOCK = ".lock"
FOLDER_WAIT_S = 120.0  # a manifest update takes milliseconds; longer means a stuck process


def shard_lock_path(shard: str | Path) -> Path:
    """``<folder>/.<arm>_s<seed>.lock`` of the shard ``<folder>/<arm>_s<seed>.csv``."""
    shard = Path(shard)
    return shard.with_name(f".{shard.stem}.lock")


@contextlib.contextmanager
def shard_locks(shards: Iterable[str | Path]) -> Iterator[None]:
    """Hold the lock of every shard in ``shards`` (taken in sorted order; released on exit).

    Raises :class:`BusyError` at once when another run holds one of them (releasing those taken).
    """
    from filelock import FileLock, Timeout
    with contextlib.ExitStack() as stack:
        for shard in sorted({Path(s) for s in shards}):
            lock_file = shard_lock_path(shard)
            lock_file.parent.mkdir(parents=True, exist_ok=True)
            lock = FileLock(str(lock_file))
            try:
                lock.acquire(timeout=0)
            except Timeout:
                raise BusyError(
                    f"another run is writing {shard.name} in the data folder {shard.parent} (it holds "
                    f"{lock_file.name}): wait for it to finish, or stop it, then run again") from None
            stack.callback(lock.release)
        yield


@contextlib.contextmanager
def folder_lock(folder: str | Path, *, timeout: float = FOLDER_WAIT_S) -> Iterator[None]:
    """Hold ``<folder>/.lock`` (waiting up to ``timeout`` seconds); re-entrant within a process."""
    from filelock import FileLock, Timeout
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    lock = FileLock(str(folder / FOLDER_LOCK), is_singleton=True)
    try:
        lock.acquire(timeout=timeout)
    except Timeout:
        raise BusyError(f"the data folder {folder} stayed locked ({FOLDER_LOCK}) for {timeout:.0f} s by "
                        f"another process updating its manifest: check for a stuck run") from None
    try:
        yield
    finally:
        lock.release()


@contextlib.contextmanager
def work_lock(path: str | Path) -> Iterator[None]:
    """Hold the lock file ``path`` for as long as the work takes (others wait, however long: training minutes)."""
    from filelock import FileLock
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(path)):
        yield
