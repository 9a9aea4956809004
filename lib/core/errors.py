"""User errors: mistakes the user can fix, reported as one line and exit status 2, never a traceback.

Every error class that describes bad input (a config, a base model, a data folder, a missing
optional dependency) derives from :class:`UserError`; anything else is a bug and keeps its
traceback. The command-line entry points run their ``main`` through :func:`cli_main`.
"""
from __future__ import annotations

import sys
from typing import Callable, Sequence

EXIT_USER_ERROR = 2


class UserError(Exception):
    """A problem in the user's input or set-up; the message names it and says how to fix it."""


class DataMismatchError(UserError, ValueError):
    """A data folder already holds the data of another config."""


class MissingDataError(UserError, FileNotFoundError):
    """A data file that should have been produced by a run is not there."""


class DirtyTreeError(UserError, RuntimeError):
    """``cpu``/``paper`` data would be written from a git tree with uncommitted changes."""


class MissingDependencyError(UserError, ImportError):
    """An optional package (e.g. Ray) is needed and not installed."""


class DamagedFileError(UserError, ValueError):
    """A file the project wrote (a JSON record, a shard of rows) is unreadable or incomplete; the
    message names the file, where it is damaged and what to do."""


class DeviceError(UserError, RuntimeError):
    """The config needs a device (a CUDA GPU) that this machine does not have."""


class BusyError(UserError, RuntimeError):
    """Another run holds the lock of a data folder (or of one of its shards)."""


def one_line(err: BaseException) -> str:
    """The message of ``err`` on one line: a multi-line list (``"head:\\n  - a\\n  - b"``) becomes ``"head: a; b"``."""
    lines = [ln.strip() for ln in str(err).splitlines() if ln.strip()]
    if not lines:
        return type(err).__name__
    head, items = lines[0], [ln.removeprefix("- ").strip() for ln in lines[1:]]
    if not items:
        return head
    return head + (" " if head.endswith(":") else "; ") + "; ".join(items)


def cli_main(main: Callable[[Sequence[str] | None], int], argv: Sequence[str] | None = None) -> int:
    """Run a command's ``main(argv)``; a :class:`UserError` prints ``error: <one line>`` and returns 2."""
    try:
        return main(argv)
    except UserError as e:
        print(f"error: {one_line(e)}", file=sys.stderr)
        return EXIT_USER_ERROR
