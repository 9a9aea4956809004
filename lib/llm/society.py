"""The composed society at LLM scale (C3): LoRA agents on one frozen base, the four-arm ablation.

A population of ``N`` agents (LoRA adapters on a shared frozen base) evolves for ``G``
non-overlapping generations under four operators: grounded evaluation, directed recombination
(sex), diversity-preserving selection and retraining (mutation). Each generation ``t``:

1. **Evaluate.** Every agent answers the fixed test pool (reporting only), the fixed validation
   pool and a fresh conformity pool, all agents in one batched generate call. Consensus ``c_j`` is
   the modal answer, conformity ``κ_i`` the agreement with it, ``D`` the behavioural distance.
2. **Select.** ``score_i = g · fitness_val,i + (1 − g) · κ_i`` (``g = 0`` for ``no_grounding``:
   the verifier never enters that arm's loop); parents by quality-diversity selection
   (``lam``) or plain top-P (``no_diversity``).
3. **Breed.** With sex: complementary parent pairs; ``n_candidates`` merge-weight vectors per pair;
   each candidate merge is screened on the validation pool by the verifier (``g > 0``) or by
   agreement with the consensus (``g = 0``); the winner answers the inheritance pool. Without
   sex: copies of the selected parents answer it.
4. **Reproduce.** Each child is a *fresh* LoRA trained on its source's own parsed answers (the
   inheritance channel is ungrounded in every arm); fewer than 8 usable answers → the source is
   copied (terminal degeneration); ``elitism`` top parents survive unchanged.

Arms: ``full``, ``no_grounding``, ``no_sex``, ``no_diversity`` (kind ``llm_society``, v1: every
sexual arm merges with peft's ``linear`` combination, as the seed) and, for kind
``llm_society_v2``, the same arms with the *exact* merge ``Σ wᵢ BᵢAᵢ`` plus ``sex_linear`` (the
linear merge kept as the control). See :mod:`lib.llm.merge`.

Nothing is lost: after each generation its rows are appended to
``data/<scale>/<experiment>/<arm>_s<seed>.csv`` and the next generation's adapters are saved under
``runs/<scale>/<experiment>/`` before the generation is marked done; re-running resumes each
(arm, seed) from its last completed generation. Every random draw of generation ``t`` comes from
``SeedSequence([seed, crc32(arm), t])`` or fixed task/torch seeds, so a resumed run equals an
uninterrupted one. ``python -m lib.experiment configs/society/smoke.yaml``.
"""
from __future__ import annotations

import json
import shutil
import time
import zlib
from contextlib import contextmanager
from pathlib import Path
from typing import Callable

import numpy as np
import pandas as pd

from ..core.config import Field, validate
from ..core.manifest import check_resumable, now, read_manifest, write_manifest
from ..methods.operators import (V1_ARMS, V2_ARMS, agreement, answer_of, behavioural_distance,
                         complementary_pairs, conformity_scores, consensus_answers, sample_merge_weights,
                         select_parents)
from ..core.paths import DATA, REPO_ROOT, data_dir, runs_dir
from ..core.rows import append_rows, last_done, mark_done, progress_path, resume_shard, shard_path
from ..methods.tasks import FAMILIES, Task, make_pool, make_tasks, verify

COLUMNS = ["experiment", "arm", "seed", "generation", "agent", "selected", "conformity", "score",
           "metric", "value"]
KINDS = {"llm_society": V1_ARMS, "llm_society_v2": V2_ARMS}
MIN_INHERIT = 8  # fewer usable answers than this: the child is a copy of its source

# Metrics written besides the seed's (test_<family>, test_overall, val_overall, consensus_acc,
# diversity_behav, parents); rows about a child's birth carry the child's generation t+1.
DIAGNOSTICS = {
    "val_half_a": "val accuracy on the even-indexed val tasks (split-half reliability of the signal)",
    "val_half_b": "val accuracy on the odd-indexed val tasks",
    "base_test_<family>": "the bare base on the test pool (agent -1, generation 0 only)",
    "elite": "1 for an agent copied unchanged from the previous generation (its parents row is e*100+e)",
    "inherit_n": "usable (parsed) answers the child was trained on (< 8: the child is a copy)",
    "source_test_overall": "test accuracy of the child's source at t: the winning merge, or the copied parent",
    "source_val_overall": "accuracy of the child's source at t on the screening pool (val's first n_screen per family)",
    "merge_winner": "index of the screened winner among the n_candidates merges (0 = plain average)",
    "merge_gain_val": "winner's screening-pool accuracy minus its two parents' mean on the same tasks",
}

SCHEMA = {
    "base_model": Field(str, "tiny", doc="tiny | smollm2-135m | any from_pretrained id or folder"),
    "families": Field(list, list(FAMILIES), choices=FAMILIES, item=str, doc="task families"),
    "agents": Field(int, 6, min=2, doc="population size N"),
    "generations": Field(int, 8, min=1, doc="generations G"),
    "arms": Field(list, list(V1_ARMS), item=str, doc="ablation arms"),
    "g": Field(float, 0.5, min=0.0, max=1.0, doc="grounding knob: score = g*fitness + (1-g)*conformity"),
    "lam": Field(float, 0.3, min=0.0, doc="quality-diversity similarity weight"),
    "n_test": Field(int, 40, min=1, doc="test tasks per family (reporting only)"),
    "n_val": Field(int, 30, min=1, doc="validation tasks per family (grounded selection signal)"),
    "n_screen": Field(int, 0, min=0, doc="val tasks per family that screen the candidate merges (the first "
                                          "n_screen of each family's val tasks); 0 = all n_val (seed)"),
    "n_conf": Field(int, 60, min=1, doc="conformity-pool tasks per generation (split over families)"),
    "n_inherit": Field(int, 240, min=1, doc="inheritance-pool tasks per generation (split over families)"),
    "n_candidates": Field(int, 6, min=1, doc="merge-weight candidates screened per pair"),
    "epochs": Field(int, 2, min=1, doc="child SFT epochs"),
    "elitism": Field(int, 0, min=0, doc="top-scoring agents copied unchanged into the next generation "
                                         "(an arm may override it: <arm>@e<count>)"),
    "n_parents": Field(int, 0, min=0, doc="parents per generation; 0 = max(2, agents // 2)"),
    "spec_train": Field(int, 300, min=1, doc="founder specialist training tasks"),
    "spec_epochs": Field(int, 2, min=1, doc="founder specialist epochs"),
    "hard": Field(bool, False, doc="hard task level"),
    "keep_all_adapters": Field(bool, False, doc="keep every generation's adapters (else only the latest)"),
    "seed": Field(int, 0, doc="seed (when seeds is empty)"),
    "seeds": Field(list, [], item=int, doc="several seeds: one shard per (arm, seed)"),
    "lora": Field(dict, {"r": 16, "alpha": 32}, doc="LoRA rank r, alpha and targets (default q_proj, v_proj)"),
    "lr": Field(float, 3e-3, min=0.0, doc="LoRA learning rate (AdamW)"),
    "batch_size": Field(int, 16, min=1, doc="LoRA training batch"),
    "gen_batch": Field(int, 2048, min=1, doc="rows per generate call"),
    "dtype": Field(str, "auto", choices=("auto", "fp32", "bf16"),
                   doc="base dtype (auto: bf16 on CUDA, else fp32; the tiny base always runs in fp32)"),
    "adapters_dir": Field(str, "", doc="adapter root; empty = runs/<scale>/<experiment>/ (never data/)"),
}
SHARD_KEYS = ("arms", "seeds", "seed")  # which shards to run; not part of what the data means


# ----------------------------------------------------------------------------- config


def parse_arm(arm: str, g: float, elitism: int = 0) -> dict:
    """An arm name with optional modifiers: ``<arm>[@g<value>][@e<count>]``.

    ``"full"`` → ``{"name": "full", "g": g, "elitism": elitism}``; ``"full@g0.25"`` runs the arm at
    its own grounding knob (the grounding-knob sweep, configs/society_g_sweep/); ``"full@e1"`` with
    its own number of elites (the elitism comparison). Raises ``ValueError`` on a malformed name.
    """
    name, *mods = arm.split("@")
    out = {"name": name, "g": float(g), "elitism": int(elitism)}
    for m in mods:
        try:
            if m[:1] == "g":
                out["g"] = float(m[1:])
            elif m[:1] == "e":
                out["elitism"] = int(m[1:])
            else:
                raise ValueError
        except ValueError:
            raise ValueError(f"arm {arm!r}: expected <arm>[@g<number>][@e<integer>], e.g. full@g0.25 "
                             f"or full@e1") from None
    return out


def arm_settings(arm: str, g: float, elitism: int = 0) -> dict:
    """:func:`lib.methods.operators.arm_settings` for ``arm`` with its modifiers, plus ``elitism``."""
    from ..methods.operators import arm_settings as _settings
    p = parse_arm(arm, g, elitism)
    return {**_settings(p["name"], p["g"]), "elitism": p["elitism"]}


def _checks(cfg: dict) -> list[str]:
    errs = []
    allowed = KINDS.get(cfg["kind"])
    if allowed is None:
        return [f"kind: {cfg['kind']!r} is not a society kind; use one of {list(KINDS)}"]
    def ok(a):
        try:
            p = parse_arm(a, cfg["g"], cfg["elitism"])
        except ValueError:
            return False
        return p["name"] in allowed and 0.0 <= p["g"] <= 1.0 and p["elitism"] >= 0
    bad = [a for a in cfg["arms"] if not ok(a)]
    if bad or not cfg["arms"]:
        errs.append(f"arms: {bad or 'none given'} not allowed for kind {cfg['kind']}; choose from {list(allowed)} "
                    f"(or <arm>@g<value in [0, 1]>, <arm>@e<elites>)")
    if len(set(cfg["arms"])) != len(cfg["arms"]):
        errs.append(f"arms: duplicates in {cfg['arms']}")
    if not cfg["families"] or len(set(cfg["families"])) != len(cfg["families"]):
        errs.append(f"families: need distinct families, got {cfg['families']}")
    N, P = cfg["agents"], n_parents(cfg)
    if P > N:
        errs.append(f"n_parents ({P}) > agents ({N})")
    if P < 2 and any(arm_settings(a, cfg["g"])["sex"] for a in cfg["arms"] if ok(a)):
        errs.append(f"n_parents ({P}) < 2: sexual arms need two parents per child")
    for e in sorted({parse_arm(a, cfg["g"], cfg["elitism"])["elitism"] for a in cfg["arms"] if ok(a)} | {cfg["elitism"]}):
        if e > min(P, N - 1):
            errs.append(f"elitism ({e}) must be <= n_parents ({P}) and < agents ({N})")
    if cfg["n_screen"] > cfg["n_val"]:
        errs.append(f"n_screen ({cfg['n_screen']}) must be <= n_val ({cfg['n_val']}): it screens on a part of val")
    nf = len(cfg["families"])
    for k in ("n_conf", "n_inherit"):
        if cfg[k] < nf:
            errs.append(f"{k} ({cfg[k]}) must be >= the number of families ({nf})")
    extra = set(cfg["lora"]) - {"r", "alpha", "targets"}
    if extra or not all(isinstance(cfg["lora"].get(k, 1), int) and cfg["lora"].get(k, 1) > 0 for k in ("r", "alpha")):
        errs.append(f"lora: only positive ints r and alpha (and a list targets) allowed, got {cfg['lora']}")
    from .lora import ALL_LINEAR
    tg = cfg["lora"].get("targets", ["q_proj", "v_proj"])
    if not isinstance(tg, list) or not tg or any(t not in ALL_LINEAR for t in tg):
        errs.append(f"lora.targets: {tg!r}; choose a non-empty list from {list(ALL_LINEAR)}")
    if cfg["adapters_dir"]:
        p = Path(cfg["adapters_dir"])
        p = (p if p.is_absolute() else REPO_ROOT / p).resolve()
        if p == DATA.resolve() or DATA.resolve() in p.parents:
            errs.append(f"adapters_dir {cfg['adapters_dir']!r} is under data/: adapters belong under runs/")
    if len(set(seed_list(cfg))) != len(seed_list(cfg)):
        errs.append(f"seeds: duplicates in {cfg['seeds']}")
    return errs


def validate_config(cfg: dict) -> dict:
    """The complete, checked config (raises ``ConfigError`` naming every problem)."""
    return validate(cfg, SCHEMA, _checks)


def n_parents(cfg: dict) -> int:
    return cfg["n_parents"] or max(2, cfg["agents"] // 2)


def seed_list(cfg: dict) -> list[int]:
    return list(cfg["seeds"]) if cfg["seeds"] else [int(cfg["seed"])]


def core_config(cfg: dict) -> dict:
    """What the data means: the config without which arms/seeds run (the folder's identity)."""
    return {k: v for k, v in cfg.items() if k not in SHARD_KEYS}


def shards(cfg: dict) -> list[dict]:
    """One config per (arm, seed); each writes only its own shard of the same data folder."""
    cfg = validate_config(cfg)
    return [{**cfg, "arms": [a], "seeds": [s]} for a in cfg["arms"] for s in seed_list(cfg)]


def adapters_root(cfg: dict) -> Path:
    if cfg["adapters_dir"]:
        p = Path(cfg["adapters_dir"])
        return p if p.is_absolute() else REPO_ROOT / p
    return runs_dir(cfg["scale"], cfg["experiment"])


def lora_kw(cfg: dict) -> dict:
    """Keyword arguments of every LoRA this config trains (founders and children)."""
    lo = cfg["lora"]
    return {"r": lo.get("r", 16), "alpha": lo.get("alpha", 32), "targets": tuple(lo.get("targets", ("q_proj", "v_proj"))),
            "lr": cfg["lr"], "batch_size": cfg["batch_size"]}


def base_dtype(cfg: dict) -> str:
    """The dtype the base runs in: ``tiny`` always fp32 (cpu-scale rows must not depend on whether
    a GPU is present); otherwise ``dtype``, with ``auto`` = bf16 on CUDA, fp32 elsewhere."""
    import torch
    if cfg["base_model"] == "tiny":
        return "fp32"
    if cfg["dtype"] == "auto":
        return "bf16" if torch.cuda.is_available() else "fp32"
    return cfg["dtype"]


def merge_method(cfg: dict, arm: str) -> str | None:
    """None (no sex), or the merge of that arm: v1 always ``linear`` (seed), v2 per arm."""
    sex = arm_settings(arm, cfg["g"])["sex"]
    if sex is None:
        return None
    return "linear" if cfg["kind"] == "llm_society" else sex


def check_device(cfg: dict) -> None:
    """The paper scale (and bf16) needs CUDA: refuse on a CPU before any expensive work."""
    import torch
    if (cfg["scale"] == "paper" or cfg["dtype"] == "bf16") and not torch.cuda.is_available():
        raise RuntimeError(f"{cfg['experiment']} at scale {cfg['scale']!r} (base {cfg['base_model']}, "
                           f"dtype {cfg['dtype']}) needs a CUDA GPU with bf16; none is visible. Run the "
                           f"cpu scale here (configs/society/cpu.yaml) or move to a GPU machine.")


# ----------------------------------------------------------------------------- pieces


Verifier = Callable[[str, Task], bool]


def fitness(outputs, tasks, families, verifier: Verifier = verify) -> dict:
    """Verifier accuracy per family and ``overall`` (same as operators.fitness_of, verifier injectable)."""
    ok = np.array([bool(verifier(o, t)) for o, t in zip(outputs, tasks)], dtype=float)
    fam = np.array([t.family for t in tasks])
    res = {f: float(ok[fam == f].mean()) if np.any(fam == f) else float("nan") for f in families}
    res["overall"] = float(ok.mean()) if ok.size else float("nan")
    return res


def _stream(seed: int, arm: str, *keys: int) -> np.random.SeedSequence:
    """The seed sequence of one (seed, arm, ...) draw. Modifiers (``@g``, ``@e``) are dropped, so
    the variants of one arm share their random numbers (common random numbers: paired contrasts)."""
    name = arm.split("@")[0]
    return np.random.SeedSequence([seed, zlib.crc32(name.encode()), *keys])


def generation_rng(seed: int, arm: str, t: int) -> np.random.Generator:
    """The rng of generation ``t`` of one (arm, seed): reconstructible on resume."""
    return np.random.default_rng(_stream(seed, arm, t))


def child_seed(seed: int, arm: str, t: int, c: int) -> int:
    """Training seed of child ``c`` born at generation ``t`` (its LoRA init and data order).

    Deviation from the seed (``seed*31 + t*N + c``, which collides across replicates: seed 0 at
    t=5, c=1 equals seed 1 at t=0, c=0): a hash of ``(seed, arm, t, c)``, so replicates are
    independent while the variants of one arm share it.
    """
    return int(_stream(seed, arm, t, c, 1).generate_state(1)[0] % (2**31 - 1))


def _pool_seed(seed: int, t: int, i: int, tag: int) -> int:
    return int(np.random.SeedSequence([seed, t, i, tag]).generate_state(1)[0] % (2**31 - 1))


def conf_pool(cfg, seed: int, t: int) -> list[Task]:
    """Conformity pool of generation ``t`` (fresh each generation, ``n_conf`` split over families)."""
    fams = cfg["families"]
    return sum([make_tasks(f, cfg["n_conf"] // len(fams), seed=_pool_seed(seed, t, i, 1), hard=cfg["hard"])
                for i, f in enumerate(fams)], [])


def inherit_pool(cfg, seed: int, t: int) -> list[Task]:
    """Inheritance pool of generation ``t``: ``n_inherit`` tasks split over families, none of whose
    prompts is in that generation's conformity pool.

    Deviation from the seed (seeds ``seed*7919 + t*13 + i`` and ``seed*104729 + t*17 + i``, equal
    for seed 0 at t = 0, so the two pools started with the same tasks): independent streams, and
    prompts of the conformity pool are skipped (the easy task space is small enough for chance
    repeats). Repeats within a pool are kept, as in the seed.
    """
    fams, k = cfg["families"], cfg["n_inherit"] // len(cfg["families"])
    taken = {x.prompt for x in conf_pool(cfg, seed, t)}
    out = []
    for i, f in enumerate(fams):
        m = k
        while True:  # draw more until k tasks outside the conformity pool are found (a prefix grows)
            cand = [x for x in make_tasks(f, m, seed=_pool_seed(seed, t, i, 2), hard=cfg["hard"])
                    if x.prompt not in taken]
            if len(cand) >= k or m > 50 * k:
                break
            m *= 2
        out += cand[:k]
    return out


def founder_settings(base, cfg: dict, seed: int) -> dict:
    """Everything a founder adapter depends on; founders are reused only when this matches."""
    return {"base_model": cfg["base_model"], "base": base_fingerprint(base), "families": cfg["families"],
            "agents": cfg["agents"], "spec_train": cfg["spec_train"], "spec_epochs": cfg["spec_epochs"],
            "hard": cfg["hard"], "seed": seed, **{k: (list(v) if isinstance(v, tuple) else v)
                                                   for k, v in lora_kw(cfg).items()}}


def base_fingerprint(base) -> str:
    """A short hash of the base's weights (founders trained on another base are never reused)."""
    import hashlib
    fp = getattr(base, "_fingerprint", None)
    if fp is None:
        h = hashlib.sha256()
        for n, p in sorted(base_named_parameters(base)):
            h.update(n.encode())
            h.update(p.detach().float().cpu().numpy().tobytes())
        fp = h.hexdigest()[:16]
        base._fingerprint = fp
    return fp


def base_named_parameters(base):
    """The base's own parameters (no LoRA), whether or not the peft wrapper is in place."""
    return [(n.replace("base_model.model.", "").replace(".base_layer", ""), p)
            for n, p in base.model.named_parameters() if "lora_" not in n]


def founders_dir(base, cfg: dict, seed: int) -> Path:
    """``<adapters>/s<seed>/founders-<hash>/``: one folder per distinct founder setting."""
    from ..core.config import config_hash
    return adapters_root(cfg) / f"s{seed}" / f"founders-{config_hash(founder_settings(base, cfg, seed))[:10]}"


def ensure_founders(base, cfg: dict, seed: int) -> list[Path]:
    """Gen-0 founders: per-family LoRA specialists (agent ``i`` on family ``i mod F``), shared by all
    arms of ``seed`` and by every experiment with the same founder settings.

    They live in a folder named by the hash of :func:`founder_settings`, which is also written
    beside them (``settings.json``): changing the base, the LoRA or the founders' training never
    reuses stale founders.
    """
    from .lora import check_adapter_dir, train_specialist
    fams, out = cfg["families"], []
    root = founders_dir(base, cfg, seed)
    root.mkdir(parents=True, exist_ok=True)
    (root / "settings.json").write_text(json.dumps(founder_settings(base, cfg, seed), indent=2) + "\n")
    for i in range(cfg["agents"]):
        fam = fams[i % len(fams)]
        d = root / f"agent{i}_{fam}"
        if d.exists():
            check_adapter_dir(d)
        else:
            train_specialist(base, fam, d, n_train=cfg["spec_train"], epochs=cfg["spec_epochs"],
                             seed=seed * 100 + i, hard=cfg["hard"], **lora_kw(cfg))
        out.append(d)
    return out


def founder_family(cfg: dict, agent: int) -> str:
    """The family founder ``agent`` specialises in."""
    return cfg["families"][agent % len(cfg["families"])]


def _row(cfg, arm, seed, t, agent, selected, conformity, score, metric, value) -> dict:
    return {"experiment": cfg["experiment"], "arm": arm, "seed": seed, "generation": t, "agent": agent,
            "selected": bool(selected), "conformity": conformity, "score": score, "metric": metric,
            "value": float(value)}


class Interrupted(RuntimeError):
    """Raised by the test hook ``interrupt_after`` once that generation is on disk."""


# ----------------------------------------------------------------------------- the loop


class PhaseClock:
    """Wall seconds per named phase of one generation: ``with clock("train"): ...``."""

    def __init__(self):
        self.s: dict[str, float] = {}

    @contextmanager
    def __call__(self, phase: str):
        from . import timing  # an active lib.llm.timing.PhaseTimer (GPU script) sees the same phases
        t0 = time.perf_counter()
        try:
            with timing.phase(phase):
                yield
        finally:
            self.s[phase] = self.s.get(phase, 0.0) + time.perf_counter() - t0

    def rounded(self) -> dict:
        return {k: round(v, 3) for k, v in self.s.items()}


def elite_indices(scores: np.ndarray, k: int) -> list[int]:
    """The ``k`` top-scoring agents (ties → lower index), as the seed's comment says: the elites are
    the best by score, not the first parents in quality-diversity order."""
    return [int(i) for i in np.argsort(-np.asarray(scores, dtype=float), kind="stable")[:k]]


def run_shard(base, cfg: dict, arm: str, seed: int, *, folder: Path, verifier: Verifier = verify,
              interrupt_after: int | None = None, progress=None) -> list[float]:
    """Run (or resume) one (arm, seed) of the society; returns the wall seconds of each generation run.

    ``verifier(output, task) -> bool`` is the grounded signal; reporting uses it in every arm, the
    loop only where ``g > 0``. Besides the seed's metrics, each generation writes the diagnostics of
    the operators (see :data:`DIAGNOSTICS`).
    """
    from .generate import BASE_ROW, generate_agents
    from .lora import copy_adapter, load_adapter, remove_all, train_lora_on_tasks
    from .merge import merge_adapters

    fams, N, G = cfg["families"], cfg["agents"], cfg["generations"]
    s = arm_settings(arm, cfg["g"], cfg["elitism"])
    method = merge_method(cfg, arm)
    P, elitism, n_cand = n_parents(cfg), s["elitism"], cfg["n_candidates"]
    lkw = lora_kw(cfg)
    gkw = {"hard": cfg["hard"], "batch_size": cfg["gen_batch"]}
    root = adapters_root(cfg) / f"s{seed}"
    shard = shard_path(folder, arm, seed)
    nan = float("nan")

    # fixed pools: test (reporting only), val (grounded selection signal + offspring screening)
    test = make_pool(fams, cfg["n_test"], 1000, hard=cfg["hard"])
    val = make_pool(fams, cfg["n_val"], 3000, hard=cfg["hard"])
    test_p, val_p = [x.prompt for x in test], [x.prompt for x in val]
    nt, nv = len(test), len(val)
    # the screening pool: the first n_screen val tasks of each family (all of val by default)
    ns = cfg["n_screen"] or cfg["n_val"]
    scr_idx = [k for k in range(nv) if k % cfg["n_val"] < ns]
    screen, screen_p = [val[k] for k in scr_idx], [val_p[k] for k in scr_idx]

    def acc(outputs, tasks) -> dict:
        return fitness(outputs, tasks, fams, verifier)

    done = resume_shard(shard, "generation")
    founders = PhaseClock()
    if done is None:
        with founders("founders"):  # trained once per seed (0 s when another arm already did)
            agents = ensure_founders(base, cfg, seed)
        pending, walls, phases = [], [], []
    else:
        info = json.loads(progress_path(shard).read_text())
        if done >= G - 1:
            return []
        agents = [root / p for p in info["agents"]]
        pending, walls, phases = info["pending_rows"], info.get("gen_wall_s", []), info.get("gen_phase_s", [])
    new_walls = []

    for t in range(0 if done is None else done + 1, G):
        tic, clock = time.time(), founders if t == 0 else PhaseClock()
        names = [f"t{t}a{i}" for i in range(N)]
        for n, d in zip(names, agents):
            load_adapter(base, n, d)
        cpool = conf_pool(cfg, seed, t)
        conf_prompts = [x.prompt for x in cpool]

        # ---- evaluate: all agents answer test + val + conformity pool in shared batches
        with clock("evaluate"):
            outs = generate_agents(base, test_p + val_p + conf_prompts, names, **gkw)
            fit_test = [acc(o[:nt], test) for o in outs]
            fit_val = np.array([acc(o[nt:nt + nv], val)["overall"] for o in outs])
            fit_screen = np.array([acc([o[nt + k] for k in scr_idx], screen)["overall"] for o in outs])
            halves = [(acc(o[nt:nt + nv:2], val[0::2])["overall"], acc(o[nt + 1:nt + nv:2], val[1::2])["overall"])
                      for o in outs]  # split-half reliability of the selection signal
            conf_outs = [o[nt + nv:] for o in outs]
            consensus = consensus_answers(conf_outs)
            conf = conformity_scores(conf_outs, consensus)
            dist = behavioural_distance(conf_outs)
            cons_acc = float(np.mean([verifier(c, x) for c, x in zip(consensus, cpool)]))
            base_test = acc(generate_agents(base, test_p, [BASE_ROW], **gkw)[0], test) if t == 0 else None

        # ---- select: score = g * fitness + (1 - g) * conformity; QD or top-P parents
        scores = conf.copy() if s["g"] == 0 else s["g"] * fit_val + (1.0 - s["g"]) * conf
        parents = select_parents(scores, dist, P, diversity=s["diversity"], lam=cfg["lam"])

        rows = list(pending)  # rows about how this generation's agents were born (written with it)
        for i in range(N):
            r = lambda metric, value, i=i: _row(cfg, arm, seed, t, i, i in parents, float(conf[i]),  # noqa: E731
                                                float(scores[i]), metric, value)
            rows += [r(f"test_{k}", v) for k, v in fit_test[i].items()]
            rows += [r("val_overall", fit_val[i]), r("val_half_a", halves[i][0]), r("val_half_b", halves[i][1])]
        rows.append(_row(cfg, arm, seed, t, -1, False, nan, nan, "consensus_acc", cons_acc))
        rows.append(_row(cfg, arm, seed, t, -1, False, nan, nan, "diversity_behav",
                         dist[np.triu_indices(N, 1)].mean()))
        if base_test is not None:  # the bare base on the test pool: the founders' reference
            rows += [_row(cfg, arm, seed, t, -1, False, nan, nan, f"base_test_{k}", v) for k, v in base_test.items()]

        new_agents, pending = [], []
        if t < G - 1:
            # ---- breed: each child's source (winning merged offspring, or a copied parent)
            rng = generation_rng(seed, arm, t)
            ipool = inherit_pool(cfg, seed, t)
            iprompts = [x.prompt for x in ipool]
            elites = elite_indices(scores, elitism)
            n_bred = N - elitism
            if method is not None:
                with clock("screen"):
                    pairs = complementary_pairs(parents, dist, n_bred)
                    weights = [sample_merge_weights(2, n_cand, rng) for _ in pairs]
                    cands = []
                    for c, (pa, pb) in enumerate(pairs):
                        for k in range(n_cand):
                            cands.append(merge_adapters(base, [names[pa], names[pb]], weights[c][k].tolist(),
                                                        f"t{t}c{c}k{k}", method))
                    if s["g"] > 0:  # grounded screening: verifier on (the screening part of) val
                        co = generate_agents(base, screen_p, cands, **gkw)
                        v = [acc(o, screen)["overall"] for o in co]
                    else:  # ungrounded screening: agreement with the consensus only
                        co = generate_agents(base, conf_prompts, cands, **gkw)
                        v = [agreement(o, consensus) for o in co]
                    best = [int(np.argmax(v[c * n_cand:(c + 1) * n_cand])) for c in range(len(pairs))]
                    winners = [f"t{t}c{c}k{b}" for c, b in enumerate(best)]
                with clock("inherit"):
                    # the winners answer the inheritance pool, and the test (and, where screening did
                    # not use it, the screening) pool for the diagnostics only
                    extra = test_p + (screen_p if s["g"] == 0 else [])
                    wo = generate_agents(base, iprompts + extra, winners, **gkw)
                sources = []
                for c, ((pa, pb), o) in enumerate(zip(pairs, wo)):
                    ni = len(iprompts)
                    w_val = v[c * n_cand + best[c]] if s["g"] > 0 else acc(o[ni + nt:], screen)["overall"]
                    sources.append({"parents": (pa, pb), "answers": o[:ni],
                                    "src_test": acc(o[ni:ni + nt], test)["overall"], "src_val": w_val,
                                    "merge_winner": best[c],
                                    "merge_gain_val": w_val - (fit_screen[pa] + fit_screen[pb]) / 2})
            else:
                src = [parents[c % len(parents)] for c in range(n_bred)]
                uniq = sorted(set(src))
                with clock("inherit"):
                    ans = dict(zip(uniq, generate_agents(base, iprompts, [names[p] for p in uniq], **gkw)))
                sources = [{"parents": (p, p), "answers": ans[p], "src_test": fit_test[p]["overall"],
                            "src_val": fit_screen[p]} for p in src]
            remove_all(base)

            # ---- reproduce: elites copied; a fresh LoRA per child trained on its source's answers
            out = root / arm / f"gen{t + 1}"
            child = lambda c, metric, value: pending.append(  # noqa: E731
                _row(cfg, arm, seed, t + 1, c, False, nan, nan, metric, value))
            with clock("train"):
                for j, e in enumerate(elites):
                    new_agents.append(copy_adapter(agents[e], out / f"elite{j}"))
                    child(j, "parents", e * 100 + e)
                    child(j, "elite", 1.0)
                for c, src in enumerate(sources, start=elitism):
                    data = [Task(x.family, x.prompt, answer_of(a)) for x, a in zip(ipool, src["answers"]) if answer_of(a)]
                    d = out / f"agent{c}"
                    if len(data) >= MIN_INHERIT:
                        train_lora_on_tasks(base, data, d, epochs=cfg["epochs"], seed=child_seed(seed, arm, t, c), **lkw)
                    else:  # terminal degeneration: no usable answers, inherit the source unchanged
                        copy_adapter(agents[src["parents"][0]], d)
                    new_agents.append(d)
                    pa, pb = src["parents"]
                    child(c, "parents", pa * 100 + pb)
                    child(c, "inherit_n", len(data))
                    child(c, "source_test_overall", src["src_test"])
                    child(c, "source_val_overall", src["src_val"])
                    for k in ("merge_winner", "merge_gain_val"):
                        if k in src:
                            child(c, k, src[k])
        else:
            remove_all(base)

        wall = time.time() - tic
        new_walls.append(wall)
        append_rows(shard, rows, COLUMNS)
        phases = phases + [clock.rounded()]
        mark_done(shard, t, agents=[str(Path(a).relative_to(root)) for a in new_agents],
                  pending_rows=pending, gen_wall_s=walls + new_walls, gen_phase_s=phases)
        # disk hygiene: drop generation t once t+1 is saved (founders and the last population are kept)
        if not cfg["keep_all_adapters"] and 0 < t < G - 1:
            for d in agents:
                shutil.rmtree(d, ignore_errors=True)
            for d in {Path(a).parent for a in agents}:
                if d.is_dir() and not any(d.iterdir()):
                    d.rmdir()
        agents = new_agents
        if progress is not None:
            progress.update(1)
        if interrupt_after is not None and t == interrupt_after:
            raise Interrupted(f"interrupted after generation {t} (test hook)")
    return new_walls


# the folder-identifying config, under the name lib.provenance and lib.sweep look for
manifest_config = core_config


def shard_status(cfg: dict, folder: Path | None = None) -> dict:
    """``{"<arm>_s<seed>": last completed generation or None}`` for every shard of ``cfg``."""
    folder = folder or data_dir(cfg["scale"], cfg["experiment"])
    return {f"{a}_s{s}": last_done(shard_path(folder, a, s)) for a in cfg["arms"] for s in seed_list(cfg)}


def shard_done(cfg: dict) -> bool:
    """True when every (arm, seed) shard of ``cfg`` has its last generation on disk."""
    cfg = validate_config(cfg)
    return all(v is not None and v >= cfg["generations"] - 1 for v in shard_status(cfg).values())


def data_complete(cfg: dict, folder: Path | None = None) -> bool:
    """True when ``folder`` holds this config's data (same core config) with every shard finished."""
    cfg = validate_config(cfg)
    folder = Path(folder or data_dir(cfg["scale"], cfg["experiment"]))
    m = read_manifest(folder)
    from ..core.config import config_hash
    if m is None or m.get("config_hash") != config_hash(core_config(cfg)):
        return False
    return all(v == cfg["generations"] - 1 for v in shard_status(cfg, folder).values())


def load_rows(cfg: dict, folder: Path | None = None) -> pd.DataFrame:
    """The rows of ``cfg``'s shards (in arm, seed order)."""
    folder = Path(folder or data_dir(cfg["scale"], cfg["experiment"]))
    parts = [pd.read_csv(shard_path(folder, a, s)) for a in cfg["arms"] for s in seed_list(cfg)
             if shard_path(folder, a, s).exists()]
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=COLUMNS)


def run_experiment(cfg: dict, *, folder: str | Path | None = None, verifier: Verifier = verify,
                   interrupt_after: int | None = None, base=None) -> pd.DataFrame:
    """Run every (arm, seed) of ``cfg`` (resuming finished generations); return its tidy rows.

    ``folder`` overrides ``data/<scale>/<experiment>/``; ``verifier`` and ``interrupt_after`` are
    test hooks; ``base`` reuses an already loaded base (it must be ``cfg['base_model']``).
    """
    from tqdm.auto import tqdm
    cfg = validate_config(cfg)
    check_device(cfg)
    folder = Path(folder or data_dir(cfg["scale"], cfg["experiment"]))
    core = core_config(cfg)
    check_resumable(folder, core)
    m = read_manifest(folder)
    started = m["started"] if m else now()
    status = shard_status(cfg, folder)
    todo = sum(cfg["generations"] - 1 - (v if v is not None else -1) for v in status.values())
    from .models import base_identity
    extra = lambda: {"run_config": cfg, "shards": shard_status(cfg, folder), "seeds": seed_list(cfg),  # noqa: E731
                     "base_model": base_identity(cfg["base_model"]),
                     "note": "config/config_hash describe the data (arms and seeds excluded); "
                             "shards lists the (arm, seed) runs present"}
    if todo == 0:  # nothing to run; (re)write the manifest if it does not yet list these shards as done
        if m is None or m.get("status") != "complete" or any(
                (m.get("shards") or {}).get(k) != v for k, v in status.items()):
            write_manifest(folder, core, started=started, wall_s=(m or {}).get("wall_s"), status="complete",
                           extra=extra())
        return load_rows(cfg, folder)
    t0 = time.time()
    prev_wall = float((m or {}).get("wall_s") or 0.0)
    write_manifest(folder, core, started=started, wall_s=prev_wall, status="running", extra=extra())
    if base is None:
        from .models import load_base
        base = load_base(cfg["base_model"], dtype=base_dtype(cfg))
    elif base.name != cfg["base_model"]:
        raise ValueError(f"base {base.name!r} given for a config of base_model {cfg['base_model']!r}")
    walls: dict[str, list[float]] = {}
    with tqdm(total=todo, desc=f"{cfg['experiment']} ({cfg['scale']})", unit="gen") as bar:
        for seed in seed_list(cfg):
            for arm in cfg["arms"]:
                walls[f"{arm}_s{seed}"] = run_shard(base, cfg, arm, seed, folder=folder, verifier=verifier,
                                                    interrupt_after=interrupt_after, progress=bar)
                write_manifest(folder, core, started=started, wall_s=prev_wall + time.time() - t0,
                               status="running", extra=extra())
    write_manifest(folder, core, started=started, wall_s=prev_wall + time.time() - t0, status="complete",
                   extra=extra())
    return load_rows(cfg, folder)


def generation_walls(cfg: dict, folder: Path | None = None) -> pd.DataFrame:
    """Wall seconds of every generation of every shard, with its phases (evaluate, screen, inherit,
    train) where recorded (from the progress files)."""
    folder = Path(folder or data_dir(cfg["scale"], cfg["experiment"]))
    out = []
    for a in cfg["arms"]:
        for s in seed_list(cfg):
            p = progress_path(shard_path(folder, a, s))
            if p.is_file():
                info = json.loads(p.read_text())
                ph = info.get("gen_phase_s", [])
                for t, w in enumerate(info.get("gen_wall_s", [])):
                    out.append({"arm": a, "seed": s, "generation": t, "wall_s": w,
                                **(ph[t] if t < len(ph) else {})})
    return pd.DataFrame(out)
