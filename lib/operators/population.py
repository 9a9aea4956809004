"""A synthetic population that shows the operators at work (notebook 01, Fig. 1).

No model is trained here: each of ``N`` agents answers ``M`` verifiable prompts from a per-family
skill. Agent ``i`` answers a prompt of family ``f`` correctly with probability ``p_if``; otherwise it
gives one of ``n_wrong`` wrong answers, where wrong answer 0 is a *shared misconception* chosen with
probability ``shared_error`` (so that agents can agree on a wrong answer, as LLM populations do)
and the rest are idiosyncratic. Skills ``p_if`` are drawn per seed from Beta(a, b). The population
is then scored exactly as the society scores its agents (:mod:`lib.operators.ops`):
``score = g·fitness + (1−g)·conformity``, and parents are chosen by top-P and by QD selection for
each ``λ`` in ``lams``.

Outputs (``data/<scale>/operators/``): ``agents.csv`` (seed, agent, fitness, conformity, score,
answer key, skills, the consensus's accuracy and the share of prompts that have one), ``selection.csv`` (seed, lam, method, mean score and mean pairwise behavioural distance
of the selected set, the selected agents), ``distance.csv`` (the N×N matrices, long form) and
``pairs.csv`` (complementary pairs of the QD parents at ``lam``), plus ``manifest.json``.
"""
from __future__ import annotations

import time
from itertools import combinations

import numpy as np
import pandas as pd
from tqdm.auto import tqdm

from lib.core.config import namespace_config
from lib.operators import ops as op
from lib.core.config import Field, validate
from lib.core.manifest import check_clean_tree, manifest_matches, now, write_manifest
from lib.core.paths import data_dir
from lib.core.tasks import FAMILIES, make_pool

SCHEMA = {
    "seeds": Field(list, [0, 1, 2], item=int, min=0, doc="population draws (one population per seed)"),
    "agents": Field(int, 12, min=3, max=200, doc="population size N"),
    "prompts_per_family": Field(int, 20, min=1, max=2000, doc="prompts per task family"),
    "families": Field(list, list(FAMILIES), item=str, choices=FAMILIES, doc="task families"),
    "skill_a": Field(float, 2.0, min=0.01, doc="Beta(a, b) prior of per-family skill"),
    "skill_b": Field(float, 2.0, min=0.01, doc="Beta(a, b) prior of per-family skill"),
    "n_wrong": Field(int, 3, min=1, max=50, doc="distinct wrong answers per prompt"),
    "shared_error": Field(float, 0.6, min=0.0, max=1.0, doc="P(a wrong answer is the shared misconception)"),
    "g": Field(float, 0.5, min=0.0, max=1.0, doc="grounding weight in score = g*fitness + (1-g)*conformity"),
    "n_parents": Field(int, 4, min=1, doc="parents selected"),
    "lams": Field(list, [0.0, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0, 1.5, 2.0], item=float, min=0.0,
                  doc="QD similarity weights swept"),
    "lam": Field(float, 0.3, min=0.0, doc="the λ whose parents are paired for the pairs panel"),
    "n_pairs": Field(int, 4, min=1, doc="complementary pairs drawn"),
}


def _checks(cfg: dict) -> list[str]:
    errs = []
    if cfg["n_parents"] > cfg["agents"]:
        errs.append(f"n_parents ({cfg['n_parents']}) cannot exceed agents ({cfg['agents']})")
    if cfg["n_parents"] < 2:
        errs.append("n_parents must be at least 2 to form complementary pairs")
    if not cfg["seeds"]:
        errs.append("seeds: give at least one seed")
    return errs


def validate_config(cfg: dict) -> dict:
    return validate(cfg, SCHEMA, _checks)


def synthetic_outputs(cfg: dict, seed: int) -> tuple[list[list[str]], list, np.ndarray]:
    """Outputs of a synthetic population: ``(outputs_per_agent, tasks, skills[N, F])``."""
    rng = np.random.default_rng(seed)
    fams = cfg["families"]
    tasks = make_pool(fams, cfg["prompts_per_family"], seed=10_000 + seed)
    skills = rng.beta(cfg["skill_a"], cfg["skill_b"], size=(cfg["agents"], len(fams)))
    fam_index = np.array([fams.index(t.family) for t in tasks])
    outs = []
    for i in range(cfg["agents"]):
        correct = rng.random(len(tasks)) < skills[i, fam_index]
        shared = rng.random(len(tasks)) < cfg["shared_error"]
        idio = rng.integers(1, cfg["n_wrong"] + 1, size=len(tasks))
        outs.append([t.answer if c else f"wrong{0 if s else k}"
                     for t, c, s, k in zip(tasks, correct, shared, idio)])
    return outs, tasks, skills


def _mean_pairwise(D: np.ndarray, idx: list[int]) -> float:
    pairs = list(combinations(idx, 2))
    return float(np.mean([D[a, b] for a, b in pairs])) if pairs else 0.0


def population_rows(cfg: dict, seed: int) -> dict[str, pd.DataFrame]:
    """Score one synthetic population and sweep the selection operators over ``lams``."""
    outs, tasks, skills = synthetic_outputs(cfg, seed)
    fams = cfg["families"]
    cons = op.consensus_answers(outs)
    keys = op.answer_keys(outs)  # ties between agents: broken by what they said, never by their seat
    kappa = op.conformity_scores(outs, cons)
    D = op.behavioural_distance(outs)
    fit = np.array([op.fitness_of(o, tasks, fams)["overall"] for o in outs])
    score = cfg["g"] * fit + (1 - cfg["g"]) * kappa
    agents = pd.DataFrame({"seed": seed, "agent": np.arange(len(outs)), "fitness": fit,
                           "conformity": kappa, "score": score, "answer_key": keys,
                           **{f"skill_{f}": skills[:, k] for k, f in enumerate(fams)}})
    sel = []
    for lam in cfg["lams"]:
        for method, diversity in (("top_p", False), ("qd", True)):
            idx = op.select_parents(score, D, cfg["n_parents"], keys=keys, diversity=diversity, lam=lam)
            sel.append({"seed": seed, "lam": lam, "method": method,
                        "mean_score": float(score[idx].mean()), "mean_fitness": float(fit[idx].mean()),
                        "mean_distance": _mean_pairwise(D, idx), "selected": " ".join(map(str, idx))})
    parents = op.select_parents(score, D, cfg["n_parents"], keys=keys, diversity=True, lam=cfg["lam"])
    pairs = pd.DataFrame([{"seed": seed, "rank": k, "a": a, "b": b, "distance": D[a, b]}
                          for k, (a, b) in enumerate(op.complementary_pairs(parents, D, cfg["n_pairs"]))])
    agents["consensus_acc"] = float(np.mean([c == t.answer for c, t in zip(cons, tasks)]))  # a tie: no answer
    agents["consensus_share"] = op.consensus_share(cons)
    return {"agents": agents, "selection": pd.DataFrame(sel), "pairs": pairs,
            "distance": pd.DataFrame([{"seed": seed, "i": i, "j": j, "distance": D[i, j]}
                                      for i in range(len(D)) for j in range(len(D))])}


def run_experiment(cfg: dict) -> dict[str, pd.DataFrame]:
    """Run every seed; write the tables and the manifest. Reuses matching data already on disk."""
    cfg = validate_config(cfg)
    out = data_dir(cfg["scale"], cfg["experiment"])
    if manifest_matches(out, cfg):
        return load_tables(out)
    check_clean_tree(cfg["scale"], out)  # before the work, not at the manifest write after it
    started, t0 = now(), time.perf_counter()
    parts: dict[str, list[pd.DataFrame]] = {}
    for seed in tqdm(cfg["seeds"], desc="populations"):
        for name, df in population_rows(cfg, seed).items():
            parts.setdefault(name, []).append(df)
    out.mkdir(parents=True, exist_ok=True)
    tables = {name: pd.concat(dfs, ignore_index=True) for name, dfs in parts.items()}
    for name, df in tables.items():
        df.to_csv(out / f"{name}.csv", index=False, float_format="%.10g")
    write_manifest(out, cfg, started=started, wall_s=time.perf_counter() - t0)
    return tables


def load_tables(folder) -> dict[str, pd.DataFrame]:
    from pathlib import Path
    folder = Path(folder)
    return {p.stem: pd.read_csv(p) for p in sorted(folder.glob("*.csv"))}


def shard_done(cfg: dict) -> bool:
    """True when the folder already holds this config's finished tables."""
    cfg = validate_config(cfg)
    return manifest_matches(data_dir(cfg["scale"], cfg["experiment"]), cfg)


def shards(cfg: dict) -> list[dict]:
    """One population per seed; each is cheap, so the whole config is one run."""
    return [validate_config(cfg)]


def notebook_config(namespace) -> dict:
    """notebook 01's parameter cell (``globals()``, papermill's injected values included) as its checked config."""
    return namespace_config(namespace, SCHEMA, validate_config)
