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
from pathlib import Path
from typing import Callable

import numpy as np
import pandas as pd

from ..config import Field, validate
from ..manifest import check_resumable, now, read_manifest, write_manifest
from ..operators import (V1_ARMS, V2_ARMS, agreement, answer_of, behavioural_distance,
                         complementary_pairs, conformity_scores, consensus_answers, sample_merge_weights,
                         select_parents)
from ..paths import DATA, REPO_ROOT, data_dir, runs_dir
from ..rows import append_rows, last_done, mark_done, progress_path, resume_shard, shard_path
from ..tasks import FAMILIES, Task, make_pool, make_tasks, verify

COLUMNS = ["experiment", "arm", "seed", "generation", "agent", "selected", "conformity", "score",
           "metric", "value"]
KINDS = {"llm_society": V1_ARMS, "llm_society_v2": V2_ARMS}
MIN_INHERIT = 8  # fewer usable answers than this: the child is a copy of its source

SCHEMA = {
    "base_model": Field(str, "tiny", doc="tiny | smollm2-135m | any from_pretrained id or folder"),
    "families": Field(list, list(FAMILIES), choices=FAMILIES, item=str, doc="task families"),
    "agents": Field(int, 6, min=2, doc="population size N"),
    "generations": Field(int, 8, min=1, doc="generations G"),
    "arms": Field(list, list(V1_ARMS), item=str, doc="ablation arms"),
    "g": Field(float, 0.5, min=0.0, max=1.0, doc="grounding knob: score = g*fitness + (1-g)*conformity"),
    "lam": Field(float, 0.3, min=0.0, doc="quality-diversity similarity weight"),
    "n_test": Field(int, 40, min=1, doc="test tasks per family (reporting only)"),
    "n_val": Field(int, 30, min=1, doc="validation tasks per family (grounded signal, screening)"),
    "n_conf": Field(int, 60, min=1, doc="conformity-pool tasks per generation (split over families)"),
    "n_inherit": Field(int, 240, min=1, doc="inheritance-pool tasks per generation (split over families)"),
    "n_candidates": Field(int, 6, min=1, doc="merge-weight candidates screened per pair"),
    "epochs": Field(int, 2, min=1, doc="child SFT epochs"),
    "elitism": Field(int, 0, min=0, doc="top parents copied unchanged into the next generation"),
    "n_parents": Field(int, 0, min=0, doc="parents per generation; 0 = max(2, agents // 2)"),
    "spec_train": Field(int, 300, min=1, doc="founder specialist training tasks"),
    "spec_epochs": Field(int, 2, min=1, doc="founder specialist epochs"),
    "hard": Field(bool, False, doc="hard task level"),
    "keep_all_adapters": Field(bool, False, doc="keep every generation's adapters (else only the latest)"),
    "seed": Field(int, 0, doc="seed (when seeds is empty)"),
    "seeds": Field(list, [], item=int, doc="several seeds: one shard per (arm, seed)"),
    "lora": Field(dict, {"r": 16, "alpha": 32}, doc="LoRA rank r and alpha"),
    "lr": Field(float, 3e-3, min=0.0, doc="LoRA learning rate (AdamW)"),
    "batch_size": Field(int, 16, min=1, doc="LoRA training batch"),
    "gen_batch": Field(int, 2048, min=1, doc="rows per generate call"),
    "dtype": Field(str, "auto", choices=("auto", "fp32", "bf16"), doc="base dtype (auto: bf16 on CUDA)"),
    "adapters_dir": Field(str, "", doc="adapter root; empty = runs/<scale>/<experiment>/ (never data/)"),
}
SHARD_KEYS = ("arms", "seeds", "seed")  # which shards to run; not part of what the data means


# ----------------------------------------------------------------------------- config


def split_arm(arm: str, g: float) -> tuple[str, float]:
    """``"full"`` → ``("full", g)``; ``"full@g0.25"`` → ``("full", 0.25)``: an arm run at its own
    grounding knob (used by the grounding-knob sweep, configs/society_g_sweep/)."""
    name, sep, rest = arm.partition("@g")
    if not sep:
        return arm, float(g)
    try:
        return name, float(rest)
    except ValueError:
        raise ValueError(f"arm {arm!r}: expected <arm>@g<number>, e.g. full@g0.25") from None


def arm_settings(arm: str, g: float) -> dict:
    """:func:`lib.operators.arm_settings` for ``arm`` or ``arm@g<value>``."""
    from ..operators import arm_settings as _settings
    name, g = split_arm(arm, g)
    return _settings(name, g)


def _checks(cfg: dict) -> list[str]:
    errs = []
    allowed = KINDS.get(cfg["kind"])
    if allowed is None:
        return [f"kind: {cfg['kind']!r} is not a society kind; use one of {list(KINDS)}"]
    def ok(a):
        try:
            name, g = split_arm(a, cfg["g"])
        except ValueError:
            return False
        return name in allowed and 0.0 <= g <= 1.0
    bad = [a for a in cfg["arms"] if not ok(a)]
    if bad or not cfg["arms"]:
        errs.append(f"arms: {bad or 'none given'} not allowed for kind {cfg['kind']}; choose from {list(allowed)} (or <arm>@g<value in [0, 1]>)")
    if len(set(cfg["arms"])) != len(cfg["arms"]):
        errs.append(f"arms: duplicates in {cfg['arms']}")
    if not cfg["families"] or len(set(cfg["families"])) != len(cfg["families"]):
        errs.append(f"families: need distinct families, got {cfg['families']}")
    N, P = cfg["agents"], n_parents(cfg)
    if P > N:
        errs.append(f"n_parents ({P}) > agents ({N})")
    if P < 2 and any(arm_settings(a, cfg["g"])["sex"] for a in cfg["arms"] if ok(a)):
        errs.append(f"n_parents ({P}) < 2: sexual arms need two parents per child")
    if cfg["elitism"] > min(P, N - 1):
        errs.append(f"elitism ({cfg['elitism']}) must be <= n_parents ({P}) and < agents ({N})")
    nf = len(cfg["families"])
    for k in ("n_conf", "n_inherit"):
        if cfg[k] < nf:
            errs.append(f"{k} ({cfg[k]}) must be >= the number of families ({nf})")
    extra = set(cfg["lora"]) - {"r", "alpha"}
    if extra or not all(isinstance(cfg["lora"].get(k, 1), int) and cfg["lora"].get(k, 1) > 0 for k in ("r", "alpha")):
        errs.append(f"lora: only positive ints r and alpha allowed, got {cfg['lora']}")
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


def generation_rng(seed: int, arm: str, t: int) -> np.random.Generator:
    """The rng of generation ``t`` of one (arm, seed): reconstructible on resume."""
    name = arm.partition("@g")[0]  # every g of one arm shares its stream (common random numbers)
    return np.random.default_rng(np.random.SeedSequence([seed, zlib.crc32(name.encode()), t]))


def conf_pool(cfg, seed: int, t: int) -> list[Task]:
    fams = cfg["families"]
    return sum([make_tasks(f, cfg["n_conf"] // len(fams), seed=seed * 7919 + t * 13 + i, hard=cfg["hard"])
                for i, f in enumerate(fams)], [])


def inherit_pool(cfg, seed: int, t: int) -> list[Task]:
    fams = cfg["families"]
    return sum([make_tasks(f, cfg["n_inherit"] // len(fams), seed=seed * 104729 + t * 17 + i, hard=cfg["hard"])
                for i, f in enumerate(fams)], [])


def ensure_founders(base, cfg: dict, seed: int) -> list[Path]:
    """Gen-0 founders: light per-family LoRA specialists, shared by all arms of ``seed``."""
    from .lora import check_adapter_dir, train_specialist
    fams, out = cfg["families"], []
    for i in range(cfg["agents"]):
        fam = fams[i % len(fams)]
        d = adapters_root(cfg) / f"s{seed}" / "founders" / f"agent{i}_{fam}"
        if d.exists():
            check_adapter_dir(d)
        else:
            train_specialist(base, fam, d, n_train=cfg["spec_train"], epochs=cfg["spec_epochs"],
                             seed=seed * 100 + i, hard=cfg["hard"], r=cfg["lora"].get("r", 16),
                             alpha=cfg["lora"].get("alpha", 32), lr=cfg["lr"], batch_size=cfg["batch_size"])
        out.append(d)
    return out


def _row(cfg, arm, seed, t, agent, selected, conformity, score, metric, value) -> dict:
    return {"experiment": cfg["experiment"], "arm": arm, "seed": seed, "generation": t, "agent": agent,
            "selected": bool(selected), "conformity": conformity, "score": score, "metric": metric,
            "value": float(value)}


class Interrupted(RuntimeError):
    """Raised by the test hook ``interrupt_after`` once that generation is on disk."""


# ----------------------------------------------------------------------------- the loop


def run_shard(base, cfg: dict, arm: str, seed: int, *, folder: Path, verifier: Verifier = verify,
              interrupt_after: int | None = None, progress=None) -> list[float]:
    """Run (or resume) one (arm, seed) of the society; returns the wall seconds of each generation run.

    ``verifier(output, task) -> bool`` is the grounded signal; reporting uses it in every arm, the
    loop only where ``g > 0``.
    """
    from .generate import generate_agents
    from .lora import copy_adapter, load_adapter, remove_all, train_lora_on_tasks
    from .merge import merge_adapters

    fams, N, G = cfg["families"], cfg["agents"], cfg["generations"]
    s = arm_settings(arm, cfg["g"])
    method = merge_method(cfg, arm)
    P, elitism, n_cand = n_parents(cfg), cfg["elitism"], cfg["n_candidates"]
    r, alpha = cfg["lora"].get("r", 16), cfg["lora"].get("alpha", 32)
    gkw = {"hard": cfg["hard"], "batch_size": cfg["gen_batch"]}
    root = adapters_root(cfg) / f"s{seed}"
    shard = shard_path(folder, arm, seed)

    # fixed pools: test (reporting only), val (grounded selection signal + offspring screening)
    test = make_pool(fams, cfg["n_test"], 1000, hard=cfg["hard"])
    val = make_pool(fams, cfg["n_val"], 3000, hard=cfg["hard"])

    done = resume_shard(shard, "generation")
    if done is None:
        agents, pending, walls = ensure_founders(base, cfg, seed), [], []
    else:
        info = json.loads(progress_path(shard).read_text())
        if done >= G - 1:
            return []
        agents = [root / p for p in info["agents"]]
        pending, walls = info["pending_rows"], info.get("gen_wall_s", [])
    new_walls = []

    for t in range(0 if done is None else done + 1, G):
        tic = time.time()
        names = [f"t{t}a{i}" for i in range(N)]
        for n, d in zip(names, agents):
            load_adapter(base, n, d)
        cpool = conf_pool(cfg, seed, t)
        conf_prompts = [x.prompt for x in cpool]

        # ---- produce & score: all agents answer test + val + conformity pool in shared batches
        allp = [x.prompt for x in test] + [x.prompt for x in val] + conf_prompts
        outs = generate_agents(base, allp, names, **gkw)
        nt, nv = len(test), len(val)
        fit_test = [fitness(o[:nt], test, fams, verifier) for o in outs]
        fit_val = np.array([fitness(o[nt:nt + nv], val, fams, verifier)["overall"] for o in outs])
        conf_outs = [o[nt + nv:] for o in outs]
        consensus = consensus_answers(conf_outs)
        conf = conformity_scores(conf_outs, consensus)
        dist = behavioural_distance(conf_outs)
        cons_acc = float(np.mean([verifier(c, x) for c, x in zip(consensus, cpool)]))
        scores = conf.copy() if s["g"] == 0 else s["g"] * fit_val + (1.0 - s["g"]) * conf
        parents = select_parents(scores, dist, P, diversity=s["diversity"], lam=cfg["lam"])

        rows = list(pending)  # "parents" rows of this generation (written with it)
        for i in range(N):
            sel, c_i, sc_i = i in parents, float(conf[i]), float(scores[i])
            rows += [_row(cfg, arm, seed, t, i, sel, c_i, sc_i, f"test_{k}", v) for k, v in fit_test[i].items()]
            rows.append(_row(cfg, arm, seed, t, i, sel, c_i, sc_i, "val_overall", fit_val[i]))
        nan = float("nan")
        rows.append(_row(cfg, arm, seed, t, -1, False, nan, nan, "consensus_acc", cons_acc))
        rows.append(_row(cfg, arm, seed, t, -1, False, nan, nan, "diversity_behav",
                         dist[np.triu_indices(N, 1)].mean()))

        new_agents, pending = [], []
        if t < G - 1:
            # ---- breed: each child's source (winning merged offspring, or a copied parent)
            rng = generation_rng(seed, arm, t)
            ipool = inherit_pool(cfg, seed, t)
            iprompts = [x.prompt for x in ipool]
            n_bred = N - elitism
            sources: list[dict] = []
            if method is not None:
                pairs = complementary_pairs(parents, dist, n_bred)
                weights = [sample_merge_weights(2, n_cand, rng) for _ in pairs]
                cands = []
                for c, (pa, pb) in enumerate(pairs):
                    for k in range(n_cand):
                        cands.append(merge_adapters(base, [names[pa], names[pb]], weights[c][k].tolist(),
                                                    f"t{t}c{c}k{k}", method))
                if s["g"] > 0:  # grounded screening: verifier on val
                    co = generate_agents(base, [x.prompt for x in val], cands, **gkw)
                    v = [fitness(o, val, fams, verifier)["overall"] for o in co]
                else:  # ungrounded screening: agreement with the consensus only
                    co = generate_agents(base, conf_prompts, cands, **gkw)
                    v = [agreement(o, consensus) for o in co]
                best = [int(np.argmax(v[c * n_cand:(c + 1) * n_cand])) for c in range(len(pairs))]
                winners = [f"t{t}c{c}k{b}" for c, b in enumerate(best)]
                answers = generate_agents(base, iprompts, winners, **gkw)
                sources = [{"parents": p, "answers": a} for p, a in zip(pairs, answers)]
            else:
                src = [parents[c % len(parents)] for c in range(n_bred)]
                uniq = sorted(set(src))
                ans = dict(zip(uniq, generate_agents(base, iprompts, [names[p] for p in uniq], **gkw)))
                sources = [{"parents": (p, p), "answers": ans[p]} for p in src]
            remove_all(base)

            # ---- reproduce: elites copied; a fresh LoRA per child trained on its source's answers
            out = root / arm / f"gen{t + 1}"
            for e in range(elitism):
                new_agents.append(copy_adapter(agents[parents[e]], out / f"elite{e}"))
                pending.append(_row(cfg, arm, seed, t + 1, e, False, nan, nan, "parents",
                                    parents[e] * 100 + parents[e]))
            for c, src in enumerate(sources, start=elitism):
                data = [Task(x.family, x.prompt, answer_of(a)) for x, a in zip(ipool, src["answers"]) if answer_of(a)]
                d = out / f"agent{c}"
                if len(data) >= MIN_INHERIT:
                    train_lora_on_tasks(base, data, d, epochs=cfg["epochs"], seed=seed * 31 + t * N + c,
                                        r=r, alpha=alpha, lr=cfg["lr"], batch_size=cfg["batch_size"])
                else:  # terminal degeneration: no usable answers, inherit the source unchanged
                    copy_adapter(agents[src["parents"][0]], d)
                new_agents.append(d)
                pa, pb = src["parents"]
                pending.append(_row(cfg, arm, seed, t + 1, c, False, nan, nan, "parents", pa * 100 + pb))
        else:
            remove_all(base)

        wall = time.time() - tic
        new_walls.append(wall)
        append_rows(shard, rows, COLUMNS)
        mark_done(shard, t, agents=[str(Path(a).relative_to(root)) for a in new_agents],
                  pending_rows=pending, gen_wall_s=walls + new_walls)
        if not cfg["keep_all_adapters"] and t > 0:  # disk hygiene: drop generation t (founders kept)
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
    from ..config import config_hash
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
    extra = lambda: {"run_config": cfg, "shards": shard_status(cfg, folder),  # noqa: E731
                     "note": "config/config_hash describe the data (arms and seeds excluded); "
                             "shards lists the (arm, seed) runs present"}
    if todo == 0:  # nothing to run; (re)write the manifest if it does not yet list these shards as done
        if m is None or m.get("status") != "complete" or any(
                (m.get("shards") or {}).get(k) != v for k, v in status.items()):
            write_manifest(folder, core, started=started, wall_s=(m or {}).get("wall_s"), status="complete",
                           extra=extra())
        return load_rows(cfg, folder)
    import torch
    t0 = time.time()
    prev_wall = float((m or {}).get("wall_s") or 0.0)
    write_manifest(folder, core, started=started, wall_s=prev_wall, status="running", extra=extra())
    if base is None:
        from .models import load_base
        dtype = ("bf16" if torch.cuda.is_available() else "fp32") if cfg["dtype"] == "auto" else cfg["dtype"]
        base = load_base(cfg["base_model"], dtype=dtype)
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
    """Wall seconds of every generation of every shard (from the progress files)."""
    folder = Path(folder or data_dir(cfg["scale"], cfg["experiment"]))
    out = []
    for a in cfg["arms"]:
        for s in seed_list(cfg):
            p = progress_path(shard_path(folder, a, s))
            if p.is_file():
                for t, w in enumerate(json.loads(p.read_text()).get("gen_wall_s", [])):
                    out.append({"arm": a, "seed": s, "generation": t, "wall_s": w})
    return pd.DataFrame(out)
