"""Tool mutation (seed V6): a model mutates its "tools" — sub-modules — while it trains.

Each registered tool keeps a *pool*: its current version (the module installed in the host) and
mutant variants. A mutant is a deep copy of a parent whose parameter tensors are, each with
probability ``mutation_rate`` (at least one tensor always), perturbed by Gaussian noise

    θ' = θ + σ·ε,   ε ~ N(0, I),   σ = mutation_scale            (``scale_mode="absolute"``)
                                    σ = mutation_scale · rms(θ)    (``scale_mode="relative"``).

Variants are scored (higher is better; :meth:`ToolMutator.evaluate` uses ``score = -loss``) with a
running mean, and :meth:`ToolMutator.promote_best` installs the best-scoring one into the host.

Defects of the seed fixed here (each pinned by a test in ``tests/test_tool_mutation.py``):

- variants are addressed by a stable id (``"encoder_v3"``), never by list position;
- all randomness comes from the mutator's own ``numpy.random.Generator``; torch noise is drawn from
  a ``torch.Generator`` seeded from it, so the same seed gives the same mutants;
- ``promote_best`` *installs* the winner, in both call shapes: registered from a host
  (``register(name, host, attr="encoder")``) the winner replaces ``host.encoder``; registered
  free-standing, as the seed does (``register("encoder", encoder_module)``), the winner's parameters
  and buffers are copied in place into ``encoder_module``, so every holder of that module (a host,
  an optimiser) sees the new weights. Either way it returns the installed module;
- a variant never evaluated has no score (``nan``), not 0: it is not eligible for promotion by
  ``promote_best`` nor ranked above a scored one; ``promote_best`` with no evaluated variant raises;
- eviction (pool full) never drops the current version or a variant created in this round (a
  *round* ends with each promotion); it drops unevaluated old variants first (oldest first), then
  the lowest-scoring old one;
- lineage is kept: every variant records ``parent_id`` and ``generation`` (= parent's generation
  + 1, i.e. depth in the lineage tree); :meth:`ToolMutator.lineage_table` exports it;
- an unknown tool, an unknown variant id or a module without parameters raises a clear error.

The experiment (:func:`run_experiment`) trains a small MLP host on a teacher-regression task and
compares three arms: ``sgd`` (no mutation), ``mutate_promote`` (the seed's system) and
``random_promote`` (same mutants, a uniformly random candidate installed: is selection doing the
work?).
"""
from __future__ import annotations

import contextlib
import copy
import time
from dataclasses import dataclass, field
from typing import Callable, Iterable

import numpy as np
import pandas as pd
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.func import functional_call, stack_module_state, vmap

from lib.core.config import namespace_config
from lib.core import config as _config
from lib.core.config import Field
from lib.core.manifest import check_resumable, now, write_manifest
from lib.core.paths import REPO_ROOT, config_path, data_dir
from lib.core.locks import shard_locks
from lib.core.rows import append_rows, last_done, mark_done, read_rows, resume_shard, shard_path

__all__ = ["ToolVariant", "ToolMutator", "UnknownToolError", "UnknownVariantError",
           "variant_losses", "SCHEMA", "ARMS", "validate_config", "run_experiment", "shards"]


# ---------------------------------------------------------------------------------------------
# The mutator
# ---------------------------------------------------------------------------------------------

class UnknownToolError(KeyError):
    """A tool name that was never registered."""

    def __str__(self) -> str:  # KeyError would print the message in quotes
        return str(self.args[0])


class UnknownVariantError(KeyError):
    """A variant id that is not (or no longer) in the tool's pool."""

    def __str__(self) -> str:
        return str(self.args[0])


@dataclass
class ToolVariant:
    """One version of a tool.

    ``score`` is the running mean of the scores given to it (``nan`` until the first one);
    ``generation`` is its depth in the lineage tree (the registered root has 0).
    """

    id: str
    tool: str
    parent_id: str | None
    generation: int
    module: nn.Module | None
    created_round: int
    mutated: tuple[str, ...] = ()
    score: float = float("nan")
    n_evaluations: int = 0
    promoted_rounds: list[int] = field(default_factory=list)
    evicted: bool = False

    @property
    def evaluated(self) -> bool:
        return self.n_evaluations > 0


@dataclass
class _Tool:
    name: str
    host: nn.Module | None
    attr: str | None
    pool: dict[str, ToolVariant]          # id -> variant, insertion (creation) order
    current_id: str
    round: int = 0
    next_version: int = 1


def _split_attr(attr: str) -> tuple[str, str]:
    parent, _, leaf = attr.rpartition(".")
    return parent, leaf


def _copy_into(dst: nn.Module, src: nn.Module) -> None:
    """Copy ``src``'s parameters and buffers into ``dst`` in place (same names and shapes), under no_grad."""
    with torch.no_grad():
        for kind, a, b in (("parameter", dict(dst.named_parameters()), dict(src.named_parameters())),
                           ("buffer", dict(dst.named_buffers()), dict(src.named_buffers()))):
            if a.keys() != b.keys():
                raise ValueError(f"cannot install: the {kind}s differ ({sorted(a.keys() ^ b.keys())})")
            for k, t in a.items():
                t.copy_(b[k])


def _install(host: nn.Module, attr: str, module: nn.Module) -> None:
    """Replace the submodule ``host.<attr>`` (dotted path) by ``module``."""
    parent, leaf = _split_attr(attr)
    setattr(host.get_submodule(parent) if parent else host, leaf, module)


class ToolMutator:
    """Keeps, mutates, scores and promotes variants of registered tools.

    Args:
        mutation_rate: probability that a parameter tensor is perturbed (at least one always is).
        mutation_scale: σ of the Gaussian noise (absolute), or relative to the tensor's RMS.
        max_variants: pool size per tool, the current version included (≥ 2).
        rng: a seed or a ``numpy.random.Generator``; the only source of randomness.
        scale_mode: ``"absolute"`` (the seed's) or ``"relative"`` (σ = scale · rms(θ)).

    Usage::

        mutator = ToolMutator(mutation_rate=0.5, mutation_scale=0.05, rng=0)
        mutator.register("encoder", model, attr="encoder")
        ids = [mutator.mutate("encoder") for _ in range(4)]
        mutator.evaluate("encoder", x_val, y_val)          # or update_score(name, id, score)
        mutator.promote_best("encoder")                     # installs into model.encoder
    """

    def __init__(self, mutation_rate: float = 0.1, mutation_scale: float = 0.02,
                 max_variants: int = 4, rng: int | np.random.Generator | None = 0,
                 *, scale_mode: str = "absolute"):
        if not 0.0 <= mutation_rate <= 1.0:
            raise ValueError(f"mutation_rate must be in [0, 1], got {mutation_rate}")
        if mutation_scale < 0:
            raise ValueError(f"mutation_scale must be >= 0, got {mutation_scale}")
        if max_variants < 2:
            raise ValueError(f"max_variants must be >= 2 (current version + one mutant), got {max_variants}")
        if scale_mode not in ("absolute", "relative"):
            raise ValueError(f"scale_mode must be 'absolute' or 'relative', got {scale_mode!r}")
        self.mutation_rate = float(mutation_rate)
        self.mutation_scale = float(mutation_scale)
        self.max_variants = int(max_variants)
        self.scale_mode = scale_mode
        self._rng = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
        self.tools: dict[str, _Tool] = {}
        self._lineage: dict[str, list[ToolVariant]] = {}   # every variant ever made, per tool

    # -- look-ups -------------------------------------------------------------------------------
    def _tool(self, name: str) -> _Tool:
        if name not in self.tools:
            raise UnknownToolError(f"unknown tool {name!r}; registered tools are {sorted(self.tools)}")
        return self.tools[name]

    def variant(self, name: str, variant_id: str) -> ToolVariant:
        """The variant ``variant_id`` of tool ``name`` (must still be in the pool)."""
        t = self._tool(name)
        if variant_id not in t.pool:
            gone = any(v.id == variant_id for v in self._lineage[name])
            why = "it was evicted from the pool" if gone else "no such variant was ever created"
            raise UnknownVariantError(f"variant {variant_id!r} of tool {name!r} is not in the pool "
                                      f"({why}); the pool holds {list(t.pool)}")
        return t.pool[variant_id]

    def current(self, name: str) -> ToolVariant:
        t = self._tool(name)
        return t.pool[t.current_id]

    def variant_ids(self, name: str) -> list[str]:
        """Ids in the pool of ``name``, in creation order."""
        return list(self._tool(name).pool)

    def round(self, name: str) -> int:
        """The current round of ``name`` (starts at 0; each promotion starts a new one)."""
        return self._tool(name).round

    # -- the seed's verbs -----------------------------------------------------------------------
    def register(self, name: str, module: nn.Module, attr: str | None = None) -> str:
        """Register a tool; returns the id of its first version, ``"<name>_v0"``.

        ``register(name, host, attr="encoder")``: the tool is ``host.encoder`` (a dotted path is
        allowed) and promotions replace that submodule in ``host``. ``register(name, module)`` (the
        seed's form): promotions copy the winner's parameters and buffers into ``module`` in place.
        """
        if name in self.tools:
            raise ValueError(f"tool {name!r} is already registered")
        host = module if attr is not None else None
        try:
            tool_module = module.get_submodule(attr) if attr is not None else module
        except AttributeError as e:
            raise AttributeError(f"cannot register tool {name!r}: {type(module).__name__} has no "
                                 f"submodule {attr!r} ({e})") from None
        if not isinstance(tool_module, nn.Module):
            raise TypeError(f"tool {name!r} must be an nn.Module, got {type(tool_module).__name__}")
        if not any(True for _ in tool_module.parameters()):
            raise ValueError(f"tool {name!r} ({type(tool_module).__name__}) has no parameters: "
                             f"there is nothing to mutate")
        root = ToolVariant(id=f"{name}_v0", tool=name, parent_id=None, generation=0,
                           module=tool_module, created_round=0, promoted_rounds=[0])
        self.tools[name] = _Tool(name=name, host=host, attr=attr, pool={root.id: root}, current_id=root.id)
        self._lineage[name] = [root]
        return root.id

    def mutate(self, name: str, parent_id: str | None = None) -> str:
        """Create a mutant of ``parent_id`` (default: the current version); returns its id.

        An explicit parent must be the current version or an evaluated variant. When the pool is
        full, one old-round variant is evicted first (see :meth:`_evict`).
        """
        t = self._tool(name)
        parent = self.variant(name, parent_id) if parent_id is not None else t.pool[t.current_id]
        if parent.id != t.current_id and not parent.evaluated:
            raise ValueError(f"variant {parent.id!r} has never been evaluated, so it cannot be a parent; "
                             f"score it first or mutate the current version {t.current_id!r}")
        if len(t.pool) >= self.max_variants:
            self._evict(t)
        child = copy.deepcopy(parent.module)
        mutated = self._perturb(child)
        vid = f"{name}_v{t.next_version}"
        t.next_version += 1
        v = ToolVariant(id=vid, tool=name, parent_id=parent.id, generation=parent.generation + 1,
                        module=child, created_round=t.round, mutated=mutated)
        t.pool[vid] = v
        self._lineage[name].append(v)
        return vid

    def _perturb(self, module: nn.Module) -> tuple[str, ...]:
        """Add σ·ε to a random non-empty subset of ``module``'s parameter tensors (in place)."""
        named = list(module.named_parameters())
        pick = self._rng.random(len(named)) < self.mutation_rate
        if not pick.any():
            pick[self._rng.integers(len(named))] = True
        gen = torch.Generator().manual_seed(int(self._rng.integers(2**63 - 1)))
        with torch.no_grad():
            for (pname, p), on in zip(named, pick):
                if not on:
                    continue
                sigma = self.mutation_scale
                if self.scale_mode == "relative":
                    sigma *= float(p.detach().pow(2).mean().sqrt())
                eps = torch.randn(p.shape, generator=gen, dtype=p.dtype).to(p.device)
                p.add_(sigma * eps)
        return tuple(n for (n, _), on in zip(named, pick) if on)

    def _evict(self, t: _Tool) -> None:
        """Drop one variant that is neither current nor created in this round.

        Unevaluated ones go first (oldest first), then the lowest running-mean score.
        """
        old = [v for v in t.pool.values() if v.id != t.current_id and v.created_round < t.round]
        if not old:
            raise RuntimeError(
                f"the pool of {t.name!r} is full (max_variants={self.max_variants}) with the current version "
                f"and variants of this round only; promote first or raise max_variants")
        unevaluated = [v for v in old if not v.evaluated]
        victim = unevaluated[0] if unevaluated else min(old, key=lambda v: v.score)
        victim.evicted = True
        victim.module = None
        del t.pool[victim.id]

    def update_score(self, name: str, variant_id: str, score: float) -> float:
        """Fold ``score`` into the running mean of ``variant_id``; returns the new mean."""
        v = self.variant(name, variant_id)
        score = float(score)
        if not np.isfinite(score):
            raise ValueError(f"score of {variant_id!r} must be finite, got {score}")
        v.score = score if v.n_evaluations == 0 else (v.score * v.n_evaluations + score) / (v.n_evaluations + 1)
        v.n_evaluations += 1
        return v.score

    def reset_scores(self, name: str) -> None:
        """Mark every variant in the pool unevaluated (e.g. after the host trained on: scores are stale)."""
        for v in self._tool(name).pool.values():
            v.score, v.n_evaluations = float("nan"), 0

    def best(self, name: str) -> ToolVariant:
        """The evaluated variant with the highest mean score (ties: the current version, then the oldest)."""
        t = self._tool(name)
        scored = [v for v in t.pool.values() if v.evaluated]
        if not scored:
            raise ValueError(f"no variant of tool {name!r} has been evaluated; score some with "
                             f"update_score or evaluate before promoting")
        return max(scored, key=lambda v: (v.score, v.id == t.current_id))

    def promote(self, name: str, variant_id: str) -> nn.Module:
        """Make ``variant_id`` the current version and install it; starts a new round; returns the installed module.

        With a host: ``host.<attr>`` becomes the variant's module. Free-standing: the registered
        module keeps its identity and receives the variant's values (:func:`_copy_into`); the
        outgoing version keeps a snapshot of its old values, and the winner's record now points at
        the registered module (the current version is always the module in use).
        """
        t = self._tool(name)
        v = self.variant(name, variant_id)
        if t.host is not None:
            _install(t.host, t.attr, v.module)
        elif v.id != t.current_id:
            old = t.pool[t.current_id]
            slot = old.module                       # the registered module: always the current one's
            old.module = copy.deepcopy(slot)        # the outgoing version keeps its values
            _copy_into(slot, v.module)
            v.module = slot
        t.current_id = v.id
        t.round += 1
        v.promoted_rounds.append(t.round)
        return v.module

    def promote_best(self, name: str) -> nn.Module:
        """Promote the best evaluated variant (:meth:`best`); returns its module, now installed."""
        return self.promote(name, self.best(name).id)

    def get_status(self) -> dict[str, list[dict]]:
        """Per tool, one dict per pooled variant: id, parent, generation, score, n_eval, current."""
        return {name: [{"id": v.id, "parent_id": v.parent_id, "gen": v.generation, "score": v.score,
                        "n_eval": v.n_evaluations, "round": v.created_round, "current": v.id == t.current_id}
                       for v in t.pool.values()]
                for name, t in self.tools.items()}

    def status_table(self) -> pd.DataFrame:
        """:meth:`get_status` as one DataFrame (column ``tool`` added)."""
        rows = [{"tool": name, **r} for name, rs in self.get_status().items() for r in rs]
        return pd.DataFrame(rows, columns=["tool", "id", "parent_id", "gen", "score", "n_eval", "round", "current"])

    def lineage_table(self, name: str | None = None) -> pd.DataFrame:
        """Every variant ever created (evicted ones included): the parent → child tree as a table."""
        names = [name] if name is not None else list(self.tools)
        rows = []
        for n in names:
            t = self._tool(n)
            for v in self._lineage[n]:
                rows.append({"tool": n, "id": v.id, "parent_id": v.parent_id, "generation": v.generation,
                             "created_round": v.created_round, "n_mutated": len(v.mutated),
                             "score": v.score, "n_evaluations": v.n_evaluations,
                             "promoted_rounds": ",".join(map(str, v.promoted_rounds)),
                             "ever_current": bool(v.promoted_rounds), "current": v.id == t.current_id,
                             "evicted": v.evicted})
        return pd.DataFrame(rows, columns=["tool", "id", "parent_id", "generation", "created_round", "n_mutated",
                                           "score", "n_evaluations", "promoted_rounds", "ever_current",
                                           "current", "evicted"])

    # -- scoring --------------------------------------------------------------------------------
    def evaluate(self, name: str, inputs: torch.Tensor, targets: torch.Tensor,
                 loss_fn: Callable = F.mse_loss, ids: Iterable[str] | None = None, *,
                 vectorised: bool = True, record: bool = True) -> dict[str, float]:
        """Loss of the host with each variant in place (or of the free tool), on one batch.

        ``loss_fn(output, targets)`` must return a scalar. With ``record`` each variant gets
        ``update_score(name, id, -loss)``. Returns ``{id: loss}`` (ids default to the whole pool).
        """
        t = self._tool(name)
        ids = list(t.pool) if ids is None else list(ids)
        modules = [self.variant(name, i).module for i in ids]
        losses = variant_losses(modules, inputs, targets, loss_fn, host=t.host, attr=t.attr, vectorised=vectorised)
        out = dict(zip(ids, losses.tolist()))
        if record:
            for i, loss in out.items():
                self.update_score(name, i, -loss)
        return out


@contextlib.contextmanager
def swapped(host: nn.Module, attr: str, module: nn.Module):
    """Temporarily install ``module`` as ``host.<attr>``."""
    parent, leaf = _split_attr(attr)
    owner = host.get_submodule(parent) if parent else host
    old = getattr(owner, leaf)
    setattr(owner, leaf, module)
    try:
        yield host
    finally:
        setattr(owner, leaf, old)


def variant_losses(modules: list[nn.Module], inputs: torch.Tensor, targets: torch.Tensor,
                   loss_fn: Callable = F.mse_loss, *, host: nn.Module | None = None, attr: str | None = None,
                   vectorised: bool = True) -> torch.Tensor:
    """``loss_fn(host_with_variant_i(inputs), targets)`` for every variant i, as a tensor of shape (n,).

    ``vectorised``: all variants in one call — their parameters are stacked along a new leading
    axis (``torch.func.stack_module_state``) and ``torch.func.vmap`` maps
    ``functional_call(host, params_i)`` over it. Otherwise: a plain loop that installs each
    variant in turn (the reference). Without a host the variants themselves are called.
    """
    if not modules:
        raise ValueError("variant_losses needs at least one module")
    with torch.no_grad():
        if not vectorised:
            out = []
            for m in modules:
                if host is None:
                    out.append(loss_fn(m(inputs), targets))
                else:
                    with swapped(host, attr, m):
                        out.append(loss_fn(host(inputs), targets))
            return torch.stack(out).detach()
        params, buffers = stack_module_state(modules)          # name -> (n, *shape)
        prefix = "" if host is None else attr + "."
        stacked = {prefix + k: v for k, v in {**params, **buffers}.items()}
        base = modules[0] if host is None else host

        def one(p):
            return loss_fn(functional_call(base, p, (inputs,)), targets)

        return vmap(one)(stacked).detach()


# ---------------------------------------------------------------------------------------------
# The experiment
# ---------------------------------------------------------------------------------------------

ARMS = ("sgd", "mutate_promote", "random_promote")
TOOLS = ("encoder", "head")
COLUMNS = ["experiment", "arm", "seed", "step", "tool", "metric", "value"]

SCHEMA = {
    "arms": Field(list, list(ARMS), choices=ARMS, item=str, doc="arms to run"),
    "seeds": Field(list, [0, 1], item=int, min=0, doc="seeds; each gives its own teacher, data and host init"),
    "tools": Field(list, ["encoder"], choices=TOOLS, item=str, doc="host submodules registered as tools"),
    "n_steps": Field(int, 200, min=1, doc="SGD steps per run"),
    "mutate_every": Field(int, 20, min=1, doc="k: a mutation round every k steps"),
    "log_every": Field(int, 10, min=1, doc="held-out loss logged every this many steps (a resumable block)"),
    "n_variants": Field(int, 8, min=1, doc="mutants created per tool per round"),
    "max_variants": Field(int, 9, min=2, doc="pool size per tool incl. the current version"),
    "mutation_rate": Field(float, 0.5, min=0.0, max=1.0, doc="probability each parameter tensor is perturbed"),
    "mutation_scale": Field(float, 0.05, min=0.0, doc="noise σ (relative to the tensor's RMS if scale_mode=relative)"),
    "scale_mode": Field(str, "relative", choices=("absolute", "relative"), doc="how mutation_scale is read"),
    "d_in": Field(int, 16, min=1, doc="input dimension of the teacher task"),
    "teacher_hidden": Field(int, 32, min=1, doc="hidden units of the random teacher"),
    "hidden": Field(int, 64, min=1, doc="hidden units of the host's encoder"),
    "noise_std": Field(float, 0.1, min=0.0, doc="label noise σ (targets have unit variance)"),
    "batch_size": Field(int, 32, min=1, doc="SGD minibatch size"),
    "lr": Field(float, 0.05, min=0.0, doc="SGD learning rate (plain SGD: stateless, so promotion loses nothing)"),
    "n_val": Field(int, 256, min=1, doc="fixed validation batch used to score variants"),
    "n_test": Field(int, 2048, min=1, doc="held-out set for the reported loss (never used for selection)"),
    "threads": Field(int, 1, min=1, doc="torch threads during the run"),
}


def _checks(cfg: dict) -> list[str]:
    errs = []
    if cfg["max_variants"] < cfg["n_variants"] + 1:
        errs.append(f"max_variants ({cfg['max_variants']}) must be >= n_variants + 1 ({cfg['n_variants'] + 1}): "
                    f"the pool holds the current version and all mutants of a round")
    if cfg["mutate_every"] % cfg["log_every"]:
        errs.append(f"mutate_every ({cfg['mutate_every']}) must be a multiple of log_every ({cfg['log_every']})")
    if cfg["n_steps"] % cfg["log_every"]:
        errs.append(f"n_steps ({cfg['n_steps']}) must be a multiple of log_every ({cfg['log_every']})")
    for key in ("arms", "seeds", "tools"):
        if not cfg[key]:
            errs.append(f"{key}: needs at least one entry")
        elif len(set(cfg[key])) != len(cfg[key]):
            errs.append(f"{key}: duplicate entries in {cfg[key]}")
    return errs


def validate_config(cfg: dict) -> dict:
    """The complete, checked config (raises :class:`lib.core.config.ConfigError`)."""
    return _config.validate(cfg, SCHEMA, _checks)


def shards(cfg: dict) -> list[dict]:
    """One config per (arm, seed); each writes only its own shard of the shared folder."""
    cfg = validate_config(cfg)
    return [{**cfg, "arms": [a], "seeds": [s]} for a in cfg["arms"] for s in cfg["seeds"]]


class Host(nn.Module):
    """The host network: ``head(encoder(x))``, encoder = two tanh layers."""

    def __init__(self, d_in: int, hidden: int):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(d_in, hidden), nn.Tanh(), nn.Linear(hidden, hidden), nn.Tanh())
        self.head = nn.Linear(hidden, 1)

    def forward(self, x):                                       # (B, d_in) -> (B,)
        return self.head(self.encoder(x)).squeeze(-1)


@dataclass
class Task:
    """Regression from a random tanh teacher: y = f(x)/std(f) + noise_std·ε, x ~ N(0, I)."""

    w1: torch.Tensor
    w2: torch.Tensor
    scale: float
    noise_std: float
    gen: torch.Generator

    @classmethod
    def make(cls, seed: int, d_in: int, hidden: int, noise_std: float) -> "Task":
        g = torch.Generator().manual_seed(int(np.random.default_rng([seed, 11]).integers(2**62)))
        w1 = torch.randn(d_in, hidden, generator=g) / d_in ** 0.5
        w2 = torch.randn(hidden, generator=g) / hidden ** 0.5
        probe = torch.tanh(torch.randn(4096, d_in, generator=g) @ w1) @ w2
        return cls(w1, w2, float(probe.std()), noise_std, g)

    def sample(self, n: int) -> tuple[torch.Tensor, torch.Tensor]:
        x = torch.randn(n, self.w1.shape[0], generator=self.gen)
        y = torch.tanh(x @ self.w1) @ self.w2 / self.scale
        return x, y + self.noise_std * torch.randn(n, generator=self.gen)


def _run_one(cfg: dict, arm: str, seed: int, shard, done: int | None, bar=None) -> None:
    """Train one (arm, seed); append its rows to ``shard`` block by block.

    Blocks already recorded (steps ≤ ``done``) are replayed without writing: everything is
    deterministic, so a resumed run writes exactly the rows an uninterrupted one would.
    """
    exp = cfg["experiment"]
    task = Task.make(seed, cfg["d_in"], cfg["teacher_hidden"], cfg["noise_std"])
    val = task.sample(cfg["n_val"])                            # scores variants
    x_test, y_test = task.sample(cfg["n_test"])                # reported only
    torch.manual_seed(seed)
    host = Host(cfg["d_in"], cfg["hidden"])
    opt = torch.optim.SGD(host.parameters(), lr=cfg["lr"])
    mutating = arm != "sgd"
    mutator = ToolMutator(cfg["mutation_rate"], cfg["mutation_scale"], cfg["max_variants"],
                          rng=np.random.default_rng([seed, 1]), scale_mode=cfg["scale_mode"])
    chooser = np.random.default_rng([seed, 2])                 # random_promote's choice
    for name in cfg["tools"]:
        mutator.register(name, host, attr=name)
    promotions = dict.fromkeys(cfg["tools"], 0)

    def row(step, tool, metric, value):
        return {"experiment": exp, "arm": arm, "seed": seed, "step": step, "tool": tool,
                "metric": metric, "value": float(value)}

    def heldout():
        with torch.no_grad():
            return float(F.mse_loss(host(x_test), y_test))

    block = [] if done is not None else [row(0, "host", "heldout_loss", heldout())]
    train_losses = []
    for step in range(1, cfg["n_steps"] + 1):
        train_losses.append(_sgd_step(host, opt, *task.sample(cfg["batch_size"])))
        if mutating and step % cfg["mutate_every"] == 0:
            for name in cfg["tools"]:
                block += [row(step, name, metric, value) for metric, value in
                          _mutation_round(mutator, name, val, arm=arm, n_variants=cfg["n_variants"],
                                          chooser=chooser, promotions=promotions)]
            opt = torch.optim.SGD(host.parameters(), lr=cfg["lr"])  # the host may hold new modules
        if step % cfg["log_every"] == 0:  # log a block
            block += [row(step, "host", "train_loss", np.mean(train_losses)),
                      row(step, "host", "heldout_loss", heldout())]
            train_losses = []
            if done is None or step > done:
                append_rows(shard, block, COLUMNS)
                mark_done(shard, step)
            block = []
        if bar is not None:
            bar.update(1)
    if mutating:
        _write_lineage(mutator, arm, seed, shard)


def _sgd_step(host: Host, opt, x, y) -> float:
    """Train: one SGD step on the minibatch ``(x, y)``; returns its loss."""
    loss = F.mse_loss(host(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    return loss.item()


def _mutation_round(mutator: ToolMutator, name: str, val, *, arm: str, n_variants: int, chooser,
                    promotions: dict[str, int]) -> list[tuple[str, float]]:
    """Mutate, score on the validation batch ``val``, promote: ``n_variants`` mutants of tool ``name``
    scored beside its current version; ``mutate_promote`` promotes the best, ``random_promote`` one drawn
    by ``chooser`` (the current version included). Counts a promotion in ``promotions``; returns the
    round's ``(metric, value)`` rows."""
    mutator.reset_scores(name)                                 # the host trained on: old scores are stale
    cur = mutator.current(name).id
    ids = [mutator.mutate(name) for _ in range(n_variants)]
    losses = mutator.evaluate(name, *val, ids=[cur, *ids])
    if arm == "mutate_promote":
        chosen = mutator.best(name).id
    else:
        chosen = [cur, *ids][int(chooser.integers(len(ids) + 1))]
    mutator.promote(name, chosen)
    promotions[name] += chosen != cur
    return [("current_val_loss", losses[cur]), ("best_variant_val_loss", min(losses[i] for i in ids)),
            ("chosen_val_loss", losses[chosen]), ("promoted", chosen != cur),
            ("promotions", promotions[name]), ("lineage_depth", mutator.current(name).generation)]


def _write_lineage(mutator: ToolMutator, arm: str, seed: int, shard) -> None:
    """The run's lineage table (:meth:`ToolMutator.lineage_table`) beside its shard, under ``lineage/``."""
    lin = mutator.lineage_table().assign(arm=arm, seed=seed)
    path = shard.parent / "lineage" / shard.name
    path.parent.mkdir(parents=True, exist_ok=True)
    lin.to_csv(path, index=False)


def manifest_config(cfg: dict) -> dict:
    """The config that identifies the folder: arms and seeds excluded, so shards share it."""
    return {k: v for k, v in cfg.items() if k not in ("arms", "seeds")}


def shard_done(cfg: dict) -> bool:
    """True when every (arm, seed) shard of ``cfg`` has its final block (``n_steps``) on disk."""
    cfg = validate_config(cfg)
    folder = data_dir(cfg["scale"], cfg["experiment"])
    done = [last_done(shard_path(folder, a, s)) for a in cfg["arms"] for s in cfg["seeds"]]
    return all(d is not None and d >= cfg["n_steps"] for d in done)


def _complete_shards(folder, n_steps: int) -> list[tuple[str, int]]:
    """(arm, seed) of every shard in ``folder`` whose final block is recorded."""
    out = []
    for arm in ARMS:
        for f in folder.glob(f"{arm}_s*.csv"):
            seed = f.stem[len(arm) + 2:]
            if seed.isdigit() and last_done(f) == n_steps:
                out.append((arm, int(seed)))
    return sorted(out, key=lambda t: (ARMS.index(t[0]), t[1]))


def run_experiment(cfg: dict, *, progress: bool = True) -> pd.DataFrame:
    """Run every (arm, seed) of ``cfg`` into ``data/<scale>/<experiment>/``; returns their rows.

    Completed shards are reused, interrupted ones resumed; a folder holding another config's
    data is refused.
    """
    from tqdm.auto import tqdm

    cfg = validate_config(cfg)
    folder = data_dir(cfg["scale"], cfg["experiment"])
    key = manifest_config(cfg)
    check_resumable(folder, key)
    started, t0 = now(), time.perf_counter()
    extra = {"arms": cfg["arms"], "seeds": cfg["seeds"], "columns": COLUMNS,
             "config_file": str(config_path(cfg["experiment"], cfg["scale"]).relative_to(REPO_ROOT)),
             "command": f"python -m lib.experiment configs/{cfg['experiment']}/{cfg['scale']}.yaml"}
    runs = [(a, s) for a in cfg["arms"] for s in cfg["seeds"]]
    todo = [(a, s) for a, s in runs if (last_done(shard_path(folder, a, s)) or 0) < cfg["n_steps"]]
    if todo:
        with shard_locks([shard_path(folder, a, s) for a, s in todo]):  # a second run on them is refused
            write_manifest(folder, key, started=started, status="running", extra=extra)
            threads = torch.get_num_threads()
            torch.set_num_threads(cfg["threads"])
            try:
                with tqdm(total=len(todo) * cfg["n_steps"], desc="tool_mutation", disable=not progress) as bar:
                    for arm, seed in todo:
                        bar.set_postfix_str(f"{arm} s{seed}")
                        shard = shard_path(folder, arm, seed)
                        _run_one(cfg, arm, seed, shard, resume_shard(shard, "step"), bar)
            finally:
                torch.set_num_threads(threads)
        on_disk = _complete_shards(folder, cfg["n_steps"])     # shards of a sweep share the folder
        extra |= {"arms": sorted({a for a, _ in on_disk}, key=ARMS.index), "seeds": sorted({s for _, s in on_disk}),
                  "shards_complete": len(on_disk)}
        write_manifest(folder, key, started=started, wall_s=time.perf_counter() - t0, status="complete", extra=extra)
    df = read_rows(folder)
    return df[df.arm.isin(cfg["arms"]) & df.seed.isin(cfg["seeds"])].reset_index(drop=True)


def notebook_config(namespace) -> dict:
    """notebook 02's parameter cell (``globals()``, papermill's injected values included) as its checked config."""
    return namespace_config(namespace, SCHEMA, validate_config)
