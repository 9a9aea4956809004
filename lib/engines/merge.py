"""Directed recombination: a child adapter as a weighted merge of its parents' adapters.

Two merges, named by what they compute on each adapted weight matrix ``W`` (LoRA update
``ΔW_i = s_i · B_i A_i``, ``s_i = alpha_i / r_i``):

- ``exact`` (peft ``combination_type="cat"``): ``ΔW = Σ_i w_i · s_i B_i A_i`` — the weighted mean
  of the parents' updates; rank ``Σ r_i``. Used by the v2 sexual arms.
- ``linear`` (peft ``combination_type="linear"``): ``A = Σ_i √w_i · s_i A_i``,
  ``B = Σ_i √w_i · B_i`` and ``ΔW = B A``, which has cross terms ``√(w_i w_j) s_j B_i A_j``; it is
  not a weighted mean of the updates and needs equal ranks. The seed (v1) merges with it, and the
  v2 arm ``sex_linear`` keeps it as the control.
- ``ties`` / ``dare_ties`` (peft ``ties_svd`` / ``dare_ties_svd``): TIES-merging of the updates
  ``ΔW_i`` themselves (trim each to its top ``density`` magnitudes, elect a sign per entry, mean of
  the agreeing entries, weighted by ``w_i``), DARE first dropping entries at random (seeded) and
  rescaling; the result is written back as a LoRA by an SVD at ``svd_rank`` (the module's full rank
  reproduces it exactly). Used by the baselines (:mod:`lib.society.baselines`).

peft's ``add_weighted_adapter`` silently does nothing when the name exists: the old one is removed first.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Sequence

import numpy as np

from lib.engines.lora import FILES, check_adapter_dir, publish_factors, remove_adapter

COMBINATION = {"exact": "cat", "linear": "linear", "ties": "ties_svd", "dare_ties": "dare_ties_svd"}
TIES_DENSITY = 0.5  # the sex_ties arm's TIES density (the baselines choose theirs on val)


def merge_adapters(base, parents: Sequence[str], weights: Sequence[float], name: str,
                   method: str = "exact", *, density: float | None = None, svd_rank: int | None = None,
                   seed: int = 0) -> str:
    """Attach adapter ``name`` = merge of ``parents`` with ``weights`` (``method``: exact | linear |
    ties | dare_ties; the last two need ``density`` and ``svd_rank``; DARE's drops use ``seed``)."""
    import torch
    if method not in COMBINATION:
        raise ValueError(f"unknown merge method {method!r}; use one of {list(COMBINATION)}")
    if len(parents) != len(weights):
        raise ValueError(f"{len(parents)} parents but {len(weights)} weights")
    if name in base.model.peft_config:
        remove_adapter(base, name)
    kw = {} if method in ("exact", "linear") else {"density": density, "svd_rank": svd_rank}
    with torch.random.fork_rng(devices=[]):  # DARE's random drops: seeded, the caller's RNG untouched
        torch.manual_seed(seed)
        base.model.add_weighted_adapter(list(parents), [float(w) for w in weights], name,
                                        combination_type=COMBINATION[method], **kw)
    if name not in base.model.peft_config:
        raise RuntimeError(f"peft did not create merged adapter {name!r}")
    for n, p in base.model.named_parameters():
        if "lora_" in n and n.split(".")[-2] == name:
            p.requires_grad_(False)
    return name


def full_rank(base, names: Sequence[str]) -> int:
    """The smallest full rank of any adapted module (an SVD at this rank reproduces a merged update exactly)."""
    ranks = []
    for _, mod in base.model.named_modules():
        if hasattr(mod, "lora_A") and names[0] in mod.lora_A:
            w = mod.get_base_layer().weight
            ranks.append(min(w.shape))
    return min(ranks)


def delta_weights(base, name: str) -> dict:
    """``{module: s · B A}`` of adapter ``name`` for every adapted module (for tests and diagnostics)."""
    out = {}
    for mname, mod in base.model.named_modules():
        if hasattr(mod, "lora_A") and name in mod.lora_A:
            A = mod.lora_A[name].weight.detach()
            B = mod.lora_B[name].weight.detach()
            out[mname] = mod.scaling[name] * (B @ A)
    return out


# ----------------------------------------------------------------------------- parameter inheritance

MUTATION_SCALE = 0.05  # η: GENOME's Gaussian σ (0.05), here acting on log singular values (CycleQD-style)


def inherit_merge(src, dst, *, rank: int, seed: int, eta: float = MUTATION_SCALE) -> float:
    """A child that *is* its source merge (no distillation), brought back to rank ``rank`` and mutated.

    Per adapted module, ``ΔW = s · B A`` of the adapter folder ``src`` (an exact merge of two parents
    has rank ``2r``) is truncated to its top ``rank`` singular triplets, ``ΔW_r = U_r Σ_r V_rᵀ`` (the
    best rank-``rank`` approximation, Eckart–Young), and each kept singular value is mutated
    multiplicatively, ``σ_i ← σ_i · exp(η ξ_i)``, ``ξ_i ~ N(0, 1)`` from ``default_rng(seed)``: the
    update moves along the parents' own singular directions (CycleQD's SVD-based mutation) by a
    relative amount ``η`` (GENOME's σ = 0.05, :data:`MUTATION_SCALE`), fixed before any run. Writes
    ``dst`` (``A = V_rᵀ``, ``B = U_r Σ_r``, ``alpha = rank``: scaling 1) and returns the energy kept by
    the truncation, ``Σ_kept σ² / Σ_all σ²`` summed over modules (before the mutation).
    """
    import torch
    from safetensors import safe_open

    src = check_adapter_dir(src)
    cfg = json.loads((Path(src) / FILES[0]).read_text())
    s = cfg["lora_alpha"] / cfg["r"]
    ab: dict[str, dict] = {}
    with safe_open(str(Path(src) / FILES[1]), framework="pt") as fh:
        for k in fh.keys():
            mod, _, which = k.removeprefix("base_model.model.").rpartition(".lora_")
            ab.setdefault(mod, {})[which.split(".")[0]] = fh.get_tensor(k).double()
    rng = np.random.default_rng(seed)
    kept = total = 0.0
    out = {}
    for m in sorted(ab):
        u, sv, vh = torch.linalg.svd(s * ab[m]["B"] @ ab[m]["A"], full_matrices=False)
        kept += float((sv[:rank] ** 2).sum())
        total += float((sv ** 2).sum())
        sig = sv[:rank] * torch.from_numpy(np.exp(eta * rng.standard_normal(rank)))
        out[m] = (vh[:rank].float(), (u[:, :rank] * sig).float())
    publish_factors(out, dst, r=rank, alpha=rank)
    return kept / total if total > 0 else 1.0
