"""Generation 0: the founders, per-family LoRA specialists shared by every arm of a seed.

Founder ``i`` specialises in family ``families[i mod F]`` (:func:`lib.operators.ops.founder_family`)
and is trained on ``spec_train`` tasks of it (:func:`lib.society.pools.founder_tasks`) for
``spec_epochs``. The founders of a seed live in ``<adapters>/s<seed>/founders-<hash>/``, the hash of
everything they depend on (:func:`founder_settings`, written beside them as ``settings.json``):
changing the base, the LoRA or the founders' training never reuses stale founders, and every arm
and every experiment with the same founder settings shares them.
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

from lib.core.config import config_hash
from lib.core.locks import work_lock
from lib.operators.ops import founder_family
from lib.engines.batched import Job, train_loras
from lib.engines.lora import check_adapter_dir
from lib.society.pools import founder_seed, founder_tasks
from lib.society.config import SocietyConfig


def base_named_parameters(base):
    """The base's own parameters (no LoRA), whether or not the peft wrapper is in place."""
    return [(n.replace("base_model.model.", "").replace(".base_layer", ""), p)
            for n, p in base.model.named_parameters() if "lora_" not in n]


def base_fingerprint(base) -> str:
    """A short hash of the base's weights (founders trained on another base are never reused)."""
    fp = getattr(base, "_fingerprint", None)
    if fp is None:
        h = hashlib.sha256()
        for n, p in sorted(base_named_parameters(base)):
            h.update(n.encode())
            h.update(p.detach().float().cpu().numpy().tobytes())
        fp = h.hexdigest()[:16]
        base._fingerprint = fp
    return fp


def founder_settings(base, s: SocietyConfig, seed: int) -> dict:
    """Everything a founder adapter depends on; founders are reused only when this matches."""
    return {"base_model": s.base_model, "base": base_fingerprint(base), "families": list(s.families),
            "agents": s.agents, "spec_train": s.spec_train, "spec_epochs": s.spec_epochs, "hard": s.hard,
            "seed": seed, **{k: (list(v) if isinstance(v, tuple) else v) for k, v in s.lora_kw().items()}}


def founders_dir(base, cfg: SocietyConfig, seed: int) -> Path:
    """``<adapters>/s<seed>/founders-<hash>/``: one folder per distinct founder setting."""
    return cfg.adapters_root() / f"s{seed}" / f"founders-{config_hash(founder_settings(base, cfg, seed))[:10]}"


def ensure_founders(base, s: SocietyConfig, seed: int, *, counter=None, trainer: str = "batched") -> list[Path]:
    """The founders' adapter folders of ``seed`` under the checked config ``s``; those not yet on disk (checked)
    are trained, all at once (``trainer``: :func:`lib.engines.batched.train_loras`), under the folder's work lock
    (:func:`lib.core.locks.work_lock`): a second process on the seed waits and reuses them."""
    root = founders_dir(base, s, seed)
    with work_lock(root / ".lock"):
        return _ensure(base, s, seed, root, counter, trainer)


def _ensure(base, s: SocietyConfig, seed: int, root: Path, counter, trainer: str) -> list[Path]:
    (root / "settings.json").write_text(json.dumps(founder_settings(base, s, seed), indent=2) + "\n")
    out, todo = [], []
    for i in range(s.agents):
        fam = founder_family(s.families, i)
        d = root / f"agent{i}_{fam}"
        if d.exists():
            check_adapter_dir(d)
        else:
            fs = founder_seed(seed, i)
            todo.append((Job(founder_tasks(s, fam, fs), fs, s.spec_epochs), d))
        out.append(d)
    train_loras(base, [j for j, _ in todo], [d for _, d in todo], trainer=trainer, counter=counter, **s.lora_kw())
    return out
