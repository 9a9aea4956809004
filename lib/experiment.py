"""Run any experiment from its config: ``python -m lib.experiment configs/<exp>/<scale>.yaml``.

The config's ``kind`` names the runner. Every runner module exposes the same three things:

- ``validate_config(cfg) -> dict``: the complete, checked config (raises ``ConfigError``);
- ``run_experiment(cfg) -> pandas.DataFrame``: runs it, writing rows and a manifest under
  ``data/<scale>/<experiment>/`` as it goes; re-running resumes;
- ``shards(cfg) -> list[dict]``: the independent runs it is made of (one per arm × seed, or per
  seed), each a config that ``run_experiment`` accepts — what ``lib.sweep`` fans out;
- ``shard_done(cfg) -> bool``: whether such a run's rows are all on disk (a sweep skips it);
- optionally ``manifest_config(cfg) -> dict``: the config that identifies the data folder when the
  runs of several shards share it (without the keys that only choose shards).
"""
from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path
from types import ModuleType

from .config import ConfigError, load_yaml

RUNNERS = {
    "operators": "lib.population",
    "program_search": "lib.program_search",
    "tool_mutation": "lib.tool_mutation",
    "llm_society": "lib.llm.society",
    "llm_society_v2": "lib.llm.society",
}


def runner(kind: str) -> ModuleType:
    """The module that runs configs of ``kind``."""
    if kind not in RUNNERS:
        raise ConfigError(f"unknown kind {kind!r}; known kinds are {sorted(RUNNERS)}")
    return importlib.import_module(RUNNERS[kind])


def load(path: str | Path) -> dict:
    """Read and validate a config file; nothing expensive happens here."""
    cfg = load_yaml(path)
    if "kind" not in cfg:
        raise ConfigError(f"{path}: the config has no 'kind'; known kinds are {sorted(RUNNERS)}")
    return runner(cfg["kind"]).validate_config(cfg)


def run(cfg: dict):
    """Validate ``cfg`` and run it; returns the experiment's tidy rows."""
    mod = runner(cfg.get("kind", "?"))
    return mod.run_experiment(mod.validate_config(cfg))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m lib.experiment", description=__doc__.splitlines()[0])
    ap.add_argument("config", help="configs/<experiment>/<scale>.yaml")
    args = ap.parse_args(argv)
    try:
        cfg = load(args.config)
    except ConfigError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    out = runner(cfg["kind"]).run_experiment(cfg)
    n = sum(map(len, out.values())) if isinstance(out, dict) else len(out)
    print(f"{cfg['experiment']} ({cfg['scale']}): {n} rows")
    return 0


if __name__ == "__main__":
    sys.exit(main())
