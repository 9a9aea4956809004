"""Configs: one YAML per (experiment, scale), validated against a schema before any work starts.

A config is a flat mapping (one level of nesting is allowed for small groups such as ``lora``).
Each experiment declares its schema as ``{key: Field(...)}``; :func:`validate` fills defaults and
raises one :class:`ConfigError` that names every bad key, its value and what is allowed.

A config file may name others it is an overlay of (``extends: base.yaml``, or a list; paths
relative to the file): :func:`load_layers` merges them in order, the file's own keys last, and drops
``extends`` (it never enters a config or its hash). A typed config is a frozen dataclass whose
fields carry their :class:`Field` (:func:`key`): :class:`TypedConfig` derives the schema from the
fields, validates at its door (:meth:`TypedConfig.of`) and reads as a read-only mapping too.

Papermill is given the resolved flat config (``lib.reproduce`` writes it), never an overlay file:
the notebooks collect their parameters back into a config with :func:`from_namespace`.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass
from functools import cached_property
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
        role: what the key is to the data it makes (:data:`ROLES`): ``core`` (part of what the data
            means, so of the folder's identity), ``shard`` (only chooses which shards run) or
            ``later`` (added after data was committed: part of the identity only where it differs
            from its default, so folders written before it keep their hash).
    """

    type: type
    default: Any = _MISSING
    choices: tuple | None = None
    min: float | None = None
    max: float | None = None
    item: type | None = None
    doc: str = ""
    role: str = "core"

    @property
    def required(self) -> bool:
        return self.default is _MISSING


ROLES = ("core", "shard", "later")


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
    """Read one YAML config file as written (no overlay resolved: :func:`load_layers` does that); a
    missing or malformed file is a :class:`ConfigError`."""
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


EXTENDS = "extends"  # the overlay key: never a config key, never hashed


def load_layers(path: str | Path) -> dict:
    """A config file with the files it ``extends`` merged in: each of them (one path or a list, relative
    to the file, themselves resolved the same way) in order, then the file's own keys, which win; a
    key's value is replaced whole (``lora: {r: 8}`` replaces the whole ``lora``). ``extends`` is dropped.
    A missing, malformed or circular overlay is a :class:`ConfigError` naming the file."""
    return _layers(Path(path), ())


def _layers(path: Path, chain: tuple[Path, ...]) -> dict:
    here = path.resolve()
    if here in chain:
        loop = " -> ".join(str(p) for p in (*chain, here))
        raise ConfigError(f"{path}: extends itself ({loop}); remove one of these extends")
    raw = load_yaml(path)
    parents = raw.pop(EXTENDS, [])
    parents = [parents] if isinstance(parents, str) else parents
    if not isinstance(parents, list) or not all(isinstance(p, str) and p for p in parents):
        raise ConfigError(f"{path}: extends must be a path or a list of paths relative to {path.parent}, "
                          f"got {parents!r}")
    out: dict = {}
    for p in parents:
        parent = path.parent / p
        if not parent.is_file():
            raise ConfigError(f"{path}: extends {p!r}, which does not exist ({parent}); give a path "
                              f"relative to {path.parent}")
        out.update(_layers(parent, (*chain, here)))
    out.update(raw)
    return out


def from_namespace(namespace: Mapping[str, Any], keys: list[str] | tuple[str, ...]) -> dict:
    """Collect a notebook's parameters (``globals()``) back into a config dict.

    Only the given keys are taken, so the notebook's other variables never leak into a config.
    """
    return {k: namespace[k] for k in keys if k in namespace}


def namespace_config(namespace: Mapping[str, Any], schema: Mapping[str, Any], validate: Callable[[dict], Any]):
    """A notebook's parameter cell (``globals()``) as its experiment's checked config: the common keys and
    ``schema``'s, collected by :func:`from_namespace`, then checked by ``validate``."""
    return validate(from_namespace(namespace, [*COMMON, *schema]))


def config_hash(cfg: Mapping[str, Any]) -> str:
    """SHA-256 (first 16 hex digits) of the canonical JSON of ``cfg`` — identifies a run's config. A
    :class:`Frozen` config carries its hash, computed once when it was frozen; another read-only
    mapping (a :class:`TypedConfig`) is hashed as the plain dict of its keys."""
    if isinstance(cfg, Frozen):
        return cfg.hash
    if isinstance(cfg, Mapping) and not isinstance(cfg, dict):
        cfg = thaw(cfg)
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

    def __hash__(self) -> int:
        return hash(self.hash)

    def __repr__(self) -> str:
        return f"Frozen({self._d!r})"


def freeze(value: Any) -> Any:
    """``value`` made read-only: lists become tuples and mappings :class:`Frozen`, all the way down."""
    if isinstance(value, Mapping):
        return Frozen({k: freeze(v) for k, v in value.items()})
    if isinstance(value, (list, tuple)):
        return tuple(freeze(v) for v in value)
    return value


def thaw(value: Any) -> Any:
    """The plain (JSON / YAML) form of a :func:`freeze` value: tuples become lists and mappings dicts."""
    if isinstance(value, Mapping):
        return {k: thaw(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [thaw(v) for v in value]
    return value


def key(spec: Field) -> Any:
    """A field of a :class:`TypedConfig` dataclass: the config key of the same name, checked by ``spec``."""
    return dataclasses.field(metadata={"spec": spec})


class TypedConfig(Mapping):
    """Base of a frozen config dataclass whose fields are its keys, each declared once with its
    :class:`Field` (:func:`key`); the schema is derived from them (:meth:`schema`).

    Made at the door by :meth:`of` (validated with :func:`validate` and the class's cross-key
    :meth:`checks`, then frozen: lists are tuples, mappings :class:`Frozen`). Read typed by attribute
    (``cfg.families`` is a tuple) or, as a read-only mapping, in plain form (``cfg["families"]`` is a
    fresh list; ``dict(cfg)`` the complete config). :attr:`core` is what the data means: every key but
    those of role ``shard``, and those of role ``later`` only where they differ from their default;
    :attr:`hash` its :func:`config_hash`, the data folder's identity.
    """

    @classmethod
    def schema(cls) -> dict[str, Field]:
        """``{key: Field}`` in the dataclass's field order."""
        return {f.name: f.metadata["spec"] for f in dataclasses.fields(cls) if "spec" in f.metadata}

    @staticmethod
    def checks(cfg: dict) -> list[str]:
        """Cross-key rules of a complete config (one message per problem); none by default."""
        return []

    @classmethod
    def of(cls, raw: Mapping[str, Any]):
        """Validate ``raw`` (:class:`ConfigError` naming every bad key) and freeze it; an instance of
        ``cls`` is returned as it is."""
        if isinstance(raw, cls):
            return raw
        cfg = validate(raw, cls.schema(), cls.checks)
        return cls(**{k: freeze(v) for k, v in cfg.items()})

    def __getitem__(self, name: str) -> Any:
        if name not in self.schema():
            raise KeyError(name)
        return thaw(getattr(self, name))

    def __iter__(self):
        return iter(self.schema())

    def __len__(self) -> int:
        return len(self.schema())

    @cached_property
    def core(self) -> Frozen:
        spec = self.schema()
        return Frozen({k: v for k, v in self.items() if spec[k].role != "shard"
                       and not (spec[k].role == "later" and v == spec[k].default)})

    @property
    def hash(self) -> str:
        return self.core.hash
