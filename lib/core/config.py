"""Configs: one YAML per (experiment, scale), validated against a schema before any work starts.

A config is a flat mapping (one level of nesting is allowed for small groups such as ``lora``).
Each experiment declares its schema as ``{key: Field(...)}``; :func:`validate` fills defaults and
raises one :class:`ConfigError` that names every bad key, its value and what is allowed.

The same YAML files are papermill parameter files (``papermill -f configs/<exp>/<scale>.yaml``):
the notebooks collect their parameters back into a config with :func:`from_namespace`.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping

import yaml

from lib.core.errors import UserError


class ConfigError(UserError, ValueError):
    """A config that cannot be run: the message names the key(s) and the allowed values."""


_MISSING = object()


@dataclass(frozen=True)
class Field:
    """One config key.

    Args:
        type: the Python type (``int``, ``float``, ``str``, ``bool``, ``list``, ``dict``);
            ints are accepted where floats are expected.
        default: the value when the key is absent; omit for a required key.
        choices: allowed values (for ``list`` fields: allowed items).
        min, max: inclusive numeric bounds (for ``list`` fields: bounds on the items).
        item: the item type of a ``list`` field.
        doc: one line on what the key means (shown in errors).
    """

    type: type
    default: Any = _MISSING
    choices: tuple | None = None
    min: float | None = None
    max: float | None = None
    item: type | None = None
    doc: str = ""

    @property
    def required(self) -> bool:
        return self.default is _MISSING


def _type_ok(value: Any, t: type) -> bool:
    if t is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if t is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, t)


def _check_value(key: str, value: Any, f: Field) -> list[str]:
    errs = []
    if not _type_ok(value, f.type):
        return [f"{key}: expected {f.type.__name__}, got {type(value).__name__} {value!r}"]
    values = value if f.type is list else [value]
    if f.type is list and f.item is not None:
        bad = [v for v in values if not _type_ok(v, f.item)]
        if bad:
            errs.append(f"{key}: items must be {f.item.__name__}, got {bad!r}")
            return errs
    for v in values:
        if f.choices is not None and v not in f.choices:
            errs.append(f"{key}: {v!r} is not allowed; choose from {list(f.choices)}")
        if f.min is not None and isinstance(v, (int, float)) and v < f.min:
            errs.append(f"{key}: {v!r} is below the minimum {f.min}")
        if f.max is not None and isinstance(v, (int, float)) and v > f.max:
            errs.append(f"{key}: {v!r} is above the maximum {f.max}")
    return errs


COMMON = {
    "experiment": Field(str, doc="name of the experiment (folder under data/<scale>/)"),
    "kind": Field(str, doc="which runner executes the config"),
    "scale": Field(str, choices=("smoke", "cpu", "paper"), doc="size class of the run"),
}


def validate(cfg: Mapping[str, Any], schema: Mapping[str, Field],
             checks: Callable[[dict], list[str]] | None = None) -> dict:
    """Return a complete config: ``cfg`` with defaults filled in, checked against ``schema``.

    ``checks(cfg) -> list[str]`` adds cross-key rules (e.g. more parents than agents).
    Raises :class:`ConfigError` listing every problem, before any expensive work.
    """
    if not isinstance(cfg, Mapping):
        raise ConfigError(f"a config must be a mapping of keys to values, got {type(cfg).__name__}")
    full = {**COMMON, **schema}
    errs = []
    unknown = sorted(set(cfg) - set(full))
    if unknown:
        errs.append(f"unknown key(s) {unknown}; allowed keys are {sorted(full)}")
    out: dict[str, Any] = {}
    for key, f in full.items():
        if key in cfg:
            errs += _check_value(key, cfg[key], f)
            out[key] = cfg[key]
        elif f.required:
            errs.append(f"{key}: required ({f.doc or f.type.__name__})")
        else:
            out[key] = f.default
    if not errs and checks is not None:
        errs += checks(out)
    if errs:
        name = cfg.get("experiment", "?") if isinstance(cfg, Mapping) else "?"
        raise ConfigError(f"invalid config for {name!r}:\n  - " + "\n  - ".join(errs))
    return out


def load_yaml(path: str | Path) -> dict:
    """Read a YAML config file; a missing or malformed file is a :class:`ConfigError`."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"config file {path} does not exist; configs live in configs/<experiment>/<scale>.yaml")
    try:
        cfg = yaml.safe_load(path.read_text())
    except yaml.YAMLError as e:
        raise ConfigError(f"config file {path} is not valid YAML: {e}") from None
    if not isinstance(cfg, dict):
        raise ConfigError(f"config file {path} must hold a mapping of keys to values")
    return cfg


def from_namespace(namespace: Mapping[str, Any], keys: list[str] | tuple[str, ...]) -> dict:
    """Collect a notebook's parameters (``globals()``) back into a config dict.

    Only the given keys are taken, so the notebook's other variables never leak into a config.
    """
    return {k: namespace[k] for k in keys if k in namespace}


def config_hash(cfg: Mapping[str, Any]) -> str:
    """SHA-256 (first 16 hex digits) of the canonical JSON of ``cfg`` — identifies a run's config. A
    :class:`Frozen` config carries its hash, computed once when it was frozen."""
    if isinstance(cfg, Frozen):
        return cfg.hash
    blob = json.dumps(cfg, sort_keys=True, default=str).encode()
    return hashlib.sha256(blob).hexdigest()[:16]


class Frozen(Mapping):
    """A checked config that can no longer change: a read-only mapping (``dict(frozen)`` gives a
    copy) whose :func:`config_hash` is computed once, here. Made at a runner's door, so the code
    below it never re-validates or re-hashes the config it was given."""

    def __init__(self, cfg: Mapping[str, Any]):
        self._d = dict(cfg)
        self.hash = config_hash(self._d)

    def __getitem__(self, key):
        return self._d[key]

    def __iter__(self):
        return iter(self._d)

    def __len__(self) -> int:
        return len(self._d)

    def __repr__(self) -> str:
        return f"Frozen({self._d!r})"
