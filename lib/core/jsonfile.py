"""JSON records the project writes and reads back: written atomically, read with one clear error.

A write goes to a temporary file next to the target (unique per process and call, so concurrent
writers never share one), is flushed to disk, then renamed over the target: a reader sees the old
file or the new one, never half of one. A file that is unreadable anyway (a full disk before this
module, a copy interrupted, a hand edit) is a :class:`lib.core.errors.DamagedFileError` naming the
file, where parsing failed and the caller's fix — one line and exit status 2 on the command line.
"""
from __future__ import annotations

import json
import os
import uuid
from pathlib import Path
from typing import Any

from lib.core.errors import DamagedFileError


def _atomic_write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp")
    try:
        with tmp.open("w") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        tmp.replace(path)
    finally:
        tmp.unlink(missing_ok=True)
    return path


def write_json(path: str | Path, obj: Any, *, indent: int | None = 2, sort_keys: bool = True,
               allow_nan: bool = False) -> Path:
    """Write ``obj`` as JSON to ``path`` atomically (strict, no NaN, unless ``allow_nan``); returns ``path``."""
    text = json.dumps(obj, indent=indent, sort_keys=sort_keys, allow_nan=allow_nan, default=str)
    return _atomic_write(Path(path), text + "\n")


def _damaged(path: Path, err: Exception, fix: str, line: int | None = None) -> DamagedFileError:
    where = f" line {line}" if line is not None else ""
    what = f"{err.msg} at line {err.lineno} column {err.colno}" if isinstance(err, json.JSONDecodeError) \
        else f"{type(err).__name__}: {err}"
    return DamagedFileError(f"{path}{where} is not readable JSON ({what}): {fix}")


def read_json(path: str | Path, *, fix: str) -> Any:
    """The JSON value in ``path``; :class:`DamagedFileError` (naming ``path`` and ``fix``) when the
    file cannot be read or parsed. A missing file is the caller's business (``FileNotFoundError``)."""
    path = Path(path)
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        raise
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise _damaged(path, e, fix) from None


def read_jsonl(path: str | Path, *, fix: str) -> list:
    """The records of a JSON-lines file (one value per line; blank lines ignored); a damaged line is
    a :class:`DamagedFileError` naming the file and the line."""
    path = Path(path)
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise
    except (OSError, UnicodeDecodeError) as e:
        raise _damaged(path, e, fix) from None
    out = []
    for i, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError as e:
            raise _damaged(path, e, fix, line=i) from None
    return out


def append_jsonl(path: str | Path, record: Any, *, fix: str) -> Path:
    """Append ``record`` as one line to the JSON-lines file ``path``: the whole file is checked
    (:func:`read_jsonl`) and rewritten atomically, so a crash leaves the old file or the new one."""
    path = Path(path)
    old = path.read_text() if path.is_file() else ""
    if old:
        read_jsonl(path, fix=fix)
        if not old.endswith("\n"):
            old += "\n"
    line = json.dumps(record, default=str)
    return _atomic_write(path, old + line + "\n")
