"""Provenance: every data folder carries ``manifest.json`` saying how its rows were obtained.

A manifest holds the resolved config and its hash, the git commit (and whether the tree was
dirty), the versions of the packages that shape the numbers, the device, the seeds, the start
time and the wall time. Long runs write it when they start (``status: running``) and again when
they finish (``status: complete``), so a half-finished folder says so.

Clean trees only: ``cpu`` and ``paper`` data (under the data root) are written only from a git tree
without uncommitted changes to its code and configs (:func:`check_clean_tree`, run on a process's
first manifest write to a folder and by the command-line runners before any work), unless the user
says ``--allow-dirty`` (environment ``GE_ALLOW_DIRTY=1``); the manifest then records
``allow_dirty: true`` and the changed files. The runs' own outputs (``data/<scale>/``, ``figures/``,
``build/``) do not count as changes. ``smoke`` data (tests, CI) is exempt.
"""
from __future__ import annotations

import datetime as _dt
import json
import os
import platform
import subprocess
from contextlib import contextmanager
from importlib import metadata
from pathlib import Path
from typing import Any, Mapping

from lib.core.config import config_hash
from lib.core.device import device_name, float_path
from lib.core.errors import DamagedFileError, DataMismatchError, DirtyTreeError
from lib.core.jsonfile import read_json, write_json
from lib.core.locks import folder_lock
from lib.core.paths import REPO_ROOT, data_root

MANIFEST = "manifest.json"
PACKAGES = ("numpy", "pandas", "torch", "transformers", "peft", "tokenizers")
ALLOW_DIRTY_ENV = "GE_ALLOW_DIRTY"
GUARDED_SCALES = ("cpu", "paper")
OUTPUTS = ("data/smoke", "data/cpu", "data/paper", "figures", "build")  # written by the runs themselves
SOURCES = ("lib", "configs", "notebooks", "benchmarks", "tests")        # untracked files here count as changes


def _git(*args: str) -> str:
    try:
        return subprocess.run(["git", *args], cwd=REPO_ROOT, capture_output=True, text=True,
                              timeout=10, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def changed_files() -> list[str]:
    """Paths whose content differs from HEAD: modified tracked files outside :data:`OUTPUTS`, and
    untracked (not ignored) files under :data:`SOURCES`. Empty outside a git checkout."""
    excl = [f":(exclude){p}" for p in OUTPUTS]
    tracked = _git("status", "--porcelain", "--untracked-files=no", "--", ".", *excl).splitlines()
    untracked = _git("status", "--porcelain", "--untracked-files=all", "--", *SOURCES).splitlines()
    lines = tracked + [ln for ln in untracked if ln.startswith("??")]
    return sorted({ln.split(maxsplit=1)[1] for ln in lines if len(ln.split(maxsplit=1)) == 2})  # "XY path"


def git_state() -> dict:
    """``{"commit": sha or "unknown", "dirty": bool}`` of the repository (dirty: :func:`changed_files`)."""
    commit = _git("rev-parse", "HEAD") or "unknown"
    changed = changed_files()
    out = {"commit": commit, "dirty": bool(changed)}
    if changed:
        out["changed_files"] = changed[:20] + ([f"... {len(changed) - 20} more"] if len(changed) > 20 else [])
    return out


CODE_STATE_ENV = "GE_CODE_STATE"  # the git state a long run's code was imported at (JSON), for its manifests


def code_state() -> dict:
    """The git state of the code this process runs: the one pinned when its run started
    (:func:`pinned_code_state`, also handed to a sweep's workers), else the tree's now (:func:`git_state`)."""
    pinned = os.environ.get(CODE_STATE_ENV)
    return json.loads(pinned) if pinned else git_state()


@contextmanager
def pinned_code_state():
    """Within: manifests record the git state taken on entry — the code the run imported — not the tree's state
    when its rows are written (a run of hours may see the tree edited and committed meanwhile). Nested runs keep
    the outermost pin."""
    outer = os.environ.get(CODE_STATE_ENV)
    if outer is None:
        os.environ[CODE_STATE_ENV] = json.dumps(git_state())
    try:
        yield json.loads(os.environ[CODE_STATE_ENV])
    finally:
        if outer is None:
            os.environ.pop(CODE_STATE_ENV, None)


def allow_dirty() -> bool:
    """True when the user allowed writing data from a dirty tree (``--allow-dirty`` / ``GE_ALLOW_DIRTY=1``)."""
    return os.environ.get(ALLOW_DIRTY_ENV, "").strip().lower() in ("1", "true", "yes")


def _guarded(folder: str | Path | None, scale: str | None) -> bool:
    if scale not in GUARDED_SCALES:
        return False
    if folder is None:
        return True
    try:
        Path(folder).resolve().relative_to(data_root().resolve())
        return True
    except ValueError:  # e.g. lib.program_search.search's own --output folder, or a test's tmp folder
        return False


def check_clean_tree(scale: str | None, folder: str | Path | None = None) -> None:
    """Refuse (:class:`DirtyTreeError`) to write ``cpu``/``paper`` data into ``folder`` (default: any
    folder under the data root) from a tree with uncommitted changes, unless :func:`allow_dirty`."""
    if not _guarded(folder, scale) or allow_dirty():
        return
    changed = code_state().get("changed_files", [])  # a long run: the tree its code was imported from
    if changed:
        shown = ", ".join(changed[:5]) + (f" and {len(changed) - 5} more" if len(changed) > 5 else "")
        raise DirtyTreeError(
            f"refusing to write {scale} data{' to ' + str(folder) if folder else ''} from a git tree with "
            f"uncommitted changes ({shown}): commit them first (the manifest records the commit), or "
            f"pass --allow-dirty (GE_ALLOW_DIRTY=1) to record the data as made from a dirty tree")


_checked: set[str] = set()  # folders this process already checked (and wrote) — see write_manifest


def package_versions() -> dict:
    out = {"python": platform.python_version()}
    for p in PACKAGES:
        try:
            out[p] = metadata.version(p)
        except metadata.PackageNotFoundError:
            out[p] = None
    return out


def now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def build_manifest(cfg: Mapping[str, Any], *, started: str, wall_s: float | None,
                   status: str, extra: Mapping[str, Any] | None = None) -> dict:
    seeds = cfg.get("seeds", [cfg["seed"]] if "seed" in cfg else None)
    return {
        "allow_dirty": allow_dirty(),
        "experiment": cfg.get("experiment"),
        "kind": cfg.get("kind"),
        "scale": cfg.get("scale"),
        "status": status,
        "config": dict(cfg),
        "config_hash": config_hash(cfg),
        "git": code_state(),
        "versions": package_versions(),
        "device": device_name(),
        "float_path": float_path(),
        "seeds": seeds,
        "started": started,
        "wall_s": None if wall_s is None else round(float(wall_s), 3),
        **(dict(extra) if extra else {}),
    }


def write_manifest(folder: str | Path, cfg: Mapping[str, Any], *, started: str,
                   wall_s: float | None = None, status: str = "complete",
                   extra: Mapping[str, Any] | None = None) -> Path:
    """Write ``folder/manifest.json`` (atomically, under the folder lock: the shards of a sweep
    update it concurrently).

    A process's first write to a folder checks the tree (:func:`check_clean_tree`), except a
    ``complete`` re-stamp of a folder whose manifest already records this config (reused data).
    A folder once written from a dirty tree stays marked so (its rows accumulate across runs).
    """
    folder = Path(folder)
    key = str(folder.resolve())
    if key not in _checked:  # before the lock creates the folder: a refused run writes nothing
        old = read_manifest(folder)
        if not (status == "complete" and old is not None and old.get("config_hash") == config_hash(cfg)):
            check_clean_tree(cfg.get("scale"), folder)
        _checked.add(key)
    with folder_lock(folder):
        old = read_manifest(folder)
        same = old is not None and old.get("config_hash") == config_hash(cfg)
        m = build_manifest(cfg, started=started, wall_s=wall_s, status=status, extra=extra)
        if same and (old.get("git") or {}).get("dirty") and not m["git"]["dirty"]:
            m["git"] = {**m["git"], "dirty": True, "changed_files": (old.get("git") or {}).get("changed_files", []),
                        "note": "earlier rows of this folder were written from a dirty tree"}
        if same:
            m["git"] = {**m["git"], **_commits_of(old.get("git") or {}, m["git"])}
            if "run_config" in m:  # the run config is an invocation's (its arms, seeds): keep every one
                m["invocations"] = _invocations_of(old, m)
        if same and old.get("allow_dirty"):
            m["allow_dirty"] = True
        return write_json(folder / MANIFEST, m)


def merge_from(ours: dict | None, theirs: dict) -> dict:
    """The manifest of a folder after another folder's shards of the same config joined it (``theirs``: that
    folder's manifest, the newer; ``ours``: this folder's, ``None`` without one): ``theirs`` with every commit
    (``commits``, oldest first) and every invocation (:func:`_invocation`) of both, dirty where either was."""
    if ours is None:
        return dict(theirs)
    mine, new = ours.get("git") or {}, theirs.get("git") or {}
    commits = [c for c in dict.fromkeys([*mine.get("commits", [mine.get("commit")]),
                                         *new.get("commits", [new.get("commit")])]) if c]
    m = {**theirs, "git": {**new, **({"commits": commits} if len(commits) > 1 else {})}}
    if mine.get("dirty"):
        m["git"].update(dirty=True, note="earlier rows of this folder were written from a dirty tree")
    invocations = list(ours.get("invocations") or [x for x in [_invocation(ours)] if x])
    for x in theirs.get("invocations") or [x for x in [_invocation(theirs)] if x]:
        invocations += [x] if x not in invocations else []
    if invocations:
        m["invocations"] = invocations
    if ours.get("allow_dirty"):
        m["allow_dirty"] = True
    return m


def _commits_of(old: dict, new: dict) -> dict:
    """A folder whose shards ran at several commits lists them all (``commits``, oldest first) and keeps an earlier
    manifest's ``note``: ``{}`` while one commit made everything."""
    commits = [c for c in dict.fromkeys([*old.get("commits", [old.get("commit")]), new.get("commit")]) if c]
    out = {"commits": commits} if len(commits) > 1 else {}
    if old.get("note") and "note" not in new:
        out["note"] = old["note"]
    return out


def _invocation(m: Mapping[str, Any]) -> dict | None:
    """One invocation of a runner that writes ``run_config``: its arms, seeds and commit (``None`` without one)."""
    rc = m.get("run_config")
    if not isinstance(rc, Mapping):
        return None
    return {"arms": rc.get("arms"), "seeds": rc.get("seeds"), "commit": (m.get("git") or {}).get("commit")}


def _invocations_of(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[dict]:
    """Every invocation that wrote a folder (:func:`_invocation`), oldest first, each once: ``run_config`` is only
    the last one's, so a folder filled by several calls (``--arms``, ``--seeds``) would otherwise forget the others."""
    seen = list(old.get("invocations") or [x for x in [_invocation(old)] if x])
    now_ = _invocation(new)
    return seen + ([now_] if now_ and now_ not in seen else [])


def manifest_fix(folder: str | Path) -> str:
    """What to do about an unreadable manifest of ``folder`` (it records provenance that cannot be
    rebuilt: the commit, the start, the wall time)."""
    return (f"restore it (committed data: git checkout -- {Path(folder) / MANIFEST}), or move the folder "
            f"{folder} aside and run the experiment again to recompute its data")


def read_manifest(folder: str | Path) -> dict | None:
    """The manifest of ``folder``, or ``None`` when there is none; an unreadable one is a
    :class:`lib.core.errors.DamagedFileError` naming it."""
    p = Path(folder) / MANIFEST
    if not p.is_file():
        return None
    m = read_json(p, fix=manifest_fix(folder))
    if not isinstance(m, dict):
        raise DamagedFileError(f"{p} holds no JSON object: {manifest_fix(folder)}")
    return m


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
        raise DataMismatchError(
            f"{folder} already holds data of another config (keys that differ: {diff}). "
            f"Move or delete that folder, or run with the config it was made with.")
