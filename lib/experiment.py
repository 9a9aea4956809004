"""Run any experiment from its config: ``python -m lib.experiment configs/<exp>/<scale>.yaml``.

A config file may be an overlay of others (``extends:``, :func:`lib.core.config.load_layers`): it is
read with them resolved, then the config's ``kind`` names the runner. Every runner module exposes:

- ``validate_config(cfg) -> dict``: the complete, checked config (raises ``ConfigError``; the society's
  is a read-only :class:`lib.society.config.SocietyConfig`);
- ``run_experiment(cfg) -> pandas.DataFrame``: runs it, writing rows and a manifest under
  ``data/<scale>/<experiment>/`` as it goes; re-running resumes;
- ``shards(cfg) -> list[dict]``: the independent runs it is made of (one per arm × seed, or per
  seed), each a config that ``run_experiment`` accepts — what ``lib.sweep`` fans out;
- ``shard_done(cfg) -> bool``: whether such a run's rows are all on disk (a sweep skips it);
- optionally ``manifest_config(cfg) -> dict``: the config that identifies the data folder when the
  runs of several shards share it (without the keys that only choose shards).

Before any work, :func:`preflight` checks what the user can get wrong and can be checked cheaply:
the base model's files (first, and locally: a mistyped name is named as such, in a second), a data
folder holding another config's data or a damaged manifest or progress file, and (for
``cpu``/``paper`` data that still has to be computed) a git tree with uncommitted changes. The
runners check the rows they read (:mod:`lib.core.rows`) and lock the shards they write
(:mod:`lib.core.locks`): a second run on the same shards is refused. A user error is one line
on stderr and exit status 2 (:func:`lib.core.errors.cli_main`); ``--allow-dirty`` allows a dirty tree
and records ``allow_dirty: true`` in the manifest.
"""
from __future__ import annotations

import argparse
import importlib
import os
import sys
from pathlib import Path
from types import ModuleType

from lib.core.config import ConfigError, load_layers
from lib.core.errors import DataMismatchError, cli_main
from lib.core.manifest import ALLOW_DIRTY_ENV, check_clean_tree, pinned_code_state, read_manifest
from lib.core.paths import data_dir
from lib.engines.models import check_base_available

RUNNERS = {
    "operators": "lib.operators.population",
    "program_search": "lib.program_search.search",
    "tool_mutation": "lib.tool_mutation.mutator",
    "llm_society": "lib.society.run",
    "llm_society_v2": "lib.society.run",
    "llm_climb": "lib.society.climb.run",
}


def runner(kind: str) -> ModuleType:
    """The module that runs configs of ``kind``."""
    if kind not in RUNNERS:
        raise ConfigError(f"unknown kind {kind!r}; known kinds are {sorted(RUNNERS)}")
    return importlib.import_module(RUNNERS[kind])


def load(path: str | Path) -> dict:
    """Read a config file (its overlays resolved) and validate it; nothing expensive happens here."""
    cfg = load_layers(path)
    if "kind" not in cfg:
        raise ConfigError(f"{path}: the config has no 'kind'; known kinds are {sorted(RUNNERS)}")
    return runner(cfg["kind"]).validate_config(cfg)


def run(cfg: dict):
    """Validate ``cfg`` and run it; returns the experiment's tidy rows."""
    mod = runner(cfg.get("kind", "?"))
    return mod.run_experiment(mod.validate_config(cfg))


def folder_config(cfg: dict) -> dict:
    """The config that identifies ``cfg``'s data folder (the runner's ``manifest_config``, else ``cfg``)."""
    return getattr(runner(cfg["kind"]), "manifest_config", lambda c: c)(cfg)


def check_folder(cfg: dict) -> None:
    """Refuse (:class:`DataMismatchError`) a data folder whose manifest records another config.

    Compares the manifest's config with :func:`folder_config` on the keys they share (so a folder
    that shards of one sweep share is accepted for any of its shards).
    """
    folder = data_dir(cfg["scale"], cfg["experiment"])
    m = read_manifest(folder)
    if m is None:
        return
    old, new = m.get("config", {}), folder_config(cfg)
    diff = sorted(k for k in set(old) & set(new) if old[k] != new[k])
    if diff:
        raise DataMismatchError(
            f"{folder} already holds data of another config (keys that differ: {diff}). Move or delete "
            f"that folder, point --data-root (GE_DATA_DIR) elsewhere, or run the config it was made with.")


def preflight(cfg: dict, *, will_write: bool | None = None, replacing: bool = False) -> None:
    """Cheap checks of a validated config before any work (raise a :class:`lib.core.errors.UserError`).

    The base model's files exist locally (configs with ``base_model``; checked first, without the
    network, :func:`lib.engines.models.check_base_available`); the data folder holds no other config's
    data and its manifest and progress files are readable; and, where data is still to be written (``will_write``; default: the runner's
    ``shard_done`` is false), the tree is clean for ``cpu``/``paper`` data. ``replacing``: the
    folder's old data will be moved aside (``lib.reproduce --force``), so its config does not matter.
    """
    if "base_model" in cfg:
        check_base_available(cfg["base_model"])
    if not replacing:
        check_folder(cfg)
    if will_write is None:
        will_write = not runner(cfg["kind"]).shard_done(cfg)
    if will_write:
        check_clean_tree(cfg["scale"], data_dir(cfg["scale"], cfg["experiment"]))


def add_allow_dirty(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--allow-dirty", action="store_true",
                    help="write cpu/paper data from a git tree with uncommitted changes (recorded in the manifest)")


def apply_allow_dirty(args: argparse.Namespace) -> None:
    """``--allow-dirty`` -> ``GE_ALLOW_DIRTY=1`` (read by lib.core.manifest here and in Ray workers)."""
    if args.allow_dirty:
        os.environ[ALLOW_DIRTY_ENV] = "1"


def _main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m lib.experiment", description=__doc__.splitlines()[0])
    ap.add_argument("config", help="configs/<experiment>/<scale>.yaml")
    add_allow_dirty(ap)
    args = ap.parse_args(argv)
    apply_allow_dirty(args)
    cfg = load(args.config)
    preflight(cfg)
    with pinned_code_state():  # the manifests record the code this run imported, whatever the tree does meanwhile
        out = runner(cfg["kind"]).run_experiment(cfg)
    n = sum(map(len, out.values())) if isinstance(out, dict) else len(out)
    print(f"{cfg['experiment']} ({cfg['scale']}): {n} rows")
    return 0


def main(argv: list[str] | None = None) -> int:
    """``python -m lib.experiment``: user errors -> one line on stderr and exit status 2."""
    return cli_main(_main, argv)


if __name__ == "__main__":
    sys.exit(main())
