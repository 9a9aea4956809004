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
  reproduces it exactly). Used by the baselines (:mod:`lib.llm.baselines`).

peft's ``add_weighted_adapter`` silently does nothing when the name exists: the old one is removed first.
"""
from __future__ import annotations

from typing import Sequence

from .lora import remove_adapter

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
