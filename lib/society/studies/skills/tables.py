"""The skill-combining study's tables, and the README's one society table of every design ever run.

- ``society-designs``: every society design run on the partitioned test-bed, one row each from the folder that
  ran it on the most seeds (its study named), with the pre-registered outcome of the skill-combining study (the
  chosen agent's test accuracy, where the folder has a selection pool) and the earlier studies' outcome (the
  population mean), beside the bare base, the best one-shot model and multitask.
- ``skills-primary``: the five pre-registered comparisons
  (:func:`lib.society.studies.skills.comparisons.primary_table`).
- ``skills-summary``: every design and baseline of the study: the chosen agent's accuracy overall and per family
  on the novel region, the skills it holds, and the cost of the run.
"""
from __future__ import annotations

from typing import Callable

import numpy as np
import pandas as pd

from lib.core.manifest import read_manifest
from lib.core.paths import data_dir
from lib.core.rows import read_progress
from lib.core.stats import bounded_t_ci
from lib.society.arms import BASE_MODEL, MULTITASK, ONE_SHOT_MODELS, REFERENCE, is_baseline, label, spec
from lib.society.baselines import grid_of
from lib.society.config import arm_seeds
from lib.society.data import (CROSSOVER, FAIR, LEXICASE, LINEAGE, MAIN, RECOMBINATION, STUDY, config_of,
                              shard_float_path, society_rows, society_walls)
from lib.society.studies.frames import agents_wide, base_scores
from lib.society.studies.skills.comparisons import (HELD, arm_summary, best_of, chosen_agents, primary_table,
                                                    secondary_table)
from lib.society.studies.skills.figures import study_rows
from lib.society.studies.study.comparisons import population_scores, verdict
from lib.core.format import NO_DATA, ci, fmt, markdown, num, p_text, seed_ranges, signed

FOLDERS = (LINEAGE, CROSSOVER, STUDY, LEXICASE, RECOMBINATION, MAIN)  # where a design is read first
RUNNING = (LINEAGE, CROSSOVER)  # studies whose rows are interim until their pre-registered seeds are in


def skill_rows(scale: str) -> pd.DataFrame | None:
    """The study's finished runs at ``scale`` (with the society study's where it re-uses them); ``None``: none."""
    return None if config_of(CROSSOVER, scale) is None else study_rows(scale)


def _families(scale: str) -> list[str]:
    return list(config_of(CROSSOVER, scale).families)


def _interval(values) -> str:
    v = pd.Series(values).dropna()
    if not len(v):
        return "—"
    m, lo, hi = bounded_t_ci(v) if len(v) > 1 else (float(v.mean()), np.nan, np.nan)
    return f"{fmt(m)} [{fmt(lo)}, {fmt(hi)}]" if np.isfinite(lo) else f"{fmt(m)} (one seed)"


def skills_primary(scale: str) -> str:
    """The five comparisons with their verdict, *interim* while one has fewer seeds than pre-registered."""
    rows = skill_rows(scale)
    if rows is None:
        return NO_DATA
    return primary_markdown(primary_table(rows, _families(scale)), config_of(CROSSOVER, scale))


def preregistered_seeds(r, cfg) -> int:
    """The seeds ``cfg`` pre-registered for comparison ``r`` (a line of ``primary_table``): its arms' fewer."""
    return min(len(arm_seeds(cfg, a)) if a in cfg.arms else len(cfg.seed_list()) for a in (r.arm_a, r.arm_b))


def primary_verdict(r, cfg) -> str:
    """Comparison ``r``'s verdict (win, tie, loss at Holm p < 0.05), or ``"none yet (interim: n of N seeds)"`` while
    it has fewer seeds than ``cfg`` pre-registered for it."""
    target = preregistered_seeds(r, cfg)
    if r.n < target:  # no verdict before the pre-registered seeds are in
        return f"none yet (interim: {int(r.n)} of {target} seeds)"
    return verdict(num(r["diff"]), num(r.p_holm))


def primary_markdown(table: pd.DataFrame, cfg) -> str:
    """A study's pre-registered comparisons (``table``: :func:`lib.society.studies.skills.comparisons.primary_table`)
    as the README shows them, each with its verdict (:func:`primary_verdict`)."""
    lines = [f"| {k + 1} | {r.comparison} | " + (f"`{r.arm_a}` − `{r.arm_b}`" if r.arm_a and r.arm_b else "—")
             + f" | {int(r.n)} | {fmt(r.a_acc)} | {fmt(r.b_acc)} | {signed(r['diff'])} {ci(r.lo, r.hi)} | "
             f"{p_text(r.p)} | {p_text(r.p_holm)} | {primary_verdict(r, cfg)} | {int(r.other_founders)} |"
             for k, r in table.iterrows()]
    return markdown(["#", "comparison", "models compared", "seeds", "a", "b", "Δ = a − b [95 % CI (sign-flip)]",
                     "p", "Holm p", "verdict (Holm p < 0.05)", "seeds on other founders"], lines)


def skills_summary(scale: str) -> str:
    """Every design and baseline of the study beside the bare base: the chosen agent, its skills, the run's cost."""
    rows = skill_rows(scale)
    return NO_DATA if rows is None else summary_markdown(rows, _families(scale))


def summary_markdown(rows: pd.DataFrame, fams) -> str:
    """:func:`lib.society.studies.skills.comparisons.arm_summary` of ``rows`` as a markdown table."""
    t = arm_summary(rows, fams)
    lines = [f"| {'`' + r.arm + '`' if r.arm != BASE_MODEL else r.arm} | {int(r.n)} | "
             + (f"{fmt(r.test)} [{fmt(r.lo)}, {fmt(r.hi)}]" if np.isfinite(num(r.lo)) else fmt(r.test))
             + f" | {fmt(r.population)} | " + " | ".join(fmt(r[f]) for f in fams)
             + f" | {fmt(r.held, 2)} | {r.train_steps:,.0f} | {r.val_evals:,.0f} |" for _, r in t.iterrows()]
    return markdown(["model", "seeds", "chosen agent: test [95 % CI (t, within [0, 1])]", "population mean",
                     *(f"{f} novel" for f in fams), "skills held (of 3)", "train steps", "val evaluations"], lines)


def skills_secondary(scale: str) -> str:
    """The study's secondary comparisons on the chosen agents, raw p."""
    rows = skill_rows(scale)
    if rows is None:
        return NO_DATA
    return secondary_markdown(secondary_table(rows, _families(scale)))


def secondary_markdown(t: pd.DataFrame) -> str:
    """A study's secondary comparisons (``t``: :func:`lib.society.studies.skills.comparisons.secondary_table`),
    raw p."""
    lines = [f"| `{r.arm_a}` − `{r.arm_b}` | {r.isolates} | {int(r.n)} | {fmt(r.a)} | {fmt(r.b)} | "
             + (f"{signed(r['diff'])} {ci(r.lo, r.hi)} | {p_text(r.p)} |" if r.n >= 2 else
                (f"{signed(r['diff'])} (one seed) | — |" if r.n == 1 else "not run yet | — |")) for _, r in t.iterrows()]
    return markdown(["comparison", "what it isolates", "seeds", "a", "b", "Δ = a − b [95 % CI (sign-flip)]",
                     "p (uncorrected)"], lines)


def _design_lines(scale: str) -> tuple[list[dict], dict]:
    """One line per society design (the folder that ran it on the most seeds; on a tie, a finished study's before a
    running one's, then the first of :data:`FOLDERS`), and the reference models. A line is *interim* while its
    arm has fewer seeds than its running study pre-registered for it."""
    fams, seen, lines = _families(scale), {}, []
    refs, finished = references(scale, fams), {f: study_finished(f, scale) for f in RUNNING}
    for folder in FOLDERS:
        rows = society_rows(scale, folder, finished=True, required=False)
        if rows is None:
            continue
        pop = population_scores(rows)
        ch = chosen_agents(rows, fams) if "select_overall" in set(rows["metric"]) else None
        for arm in pop:
            n, study_done = int(pop[arm].notna().sum()), finished.get(folder, True)
            done = study_done or n >= len(config_of(folder, scale).seeds_of(arm))
            if is_baseline(arm) or seen.get(arm, (0, False, False)) >= (n, done, study_done):
                continue
            seen[arm] = (n, done, study_done)
            lines = [x for x in lines if x["arm"] != arm] + [{
                "arm": arm, "study": folder, "n": n, "population": pop[arm],
                "interim": not done,
                "chosen": ch[ch.arm == arm]["test_overall"] if ch is not None else pd.Series(dtype=float),
                "select": ch[ch.arm == arm]["select_overall"].mean() if ch is not None else np.nan,
                "held": ch[ch.arm == arm]["held"].mean() if ch is not None else np.nan}]
    return lines, refs


def skills_finished(scale: str) -> bool:
    """Whether the skill-combining study has every primary arm and baseline on its pre-registered seeds (until then
    its rows are interim: listed, but no headline and no reference model is drawn from them)."""
    return study_finished(CROSSOVER, scale)


def study_finished(study: str, scale: str) -> bool:
    """Whether ``study``'s folder holds every primary arm and baseline of its config on its pre-registered seeds."""
    cfg = config_of(study, scale)
    rows = None if cfg is None else society_rows(scale, study, finished=True, required=False)
    if rows is None:
        return False
    done = rows.groupby("arm")["seed"].nunique()
    primary = [a for a in cfg.arms if spec(a) is not None and spec(a).role in ("primary", "baseline")]
    return all(done.get(a, 0) >= len(cfg.seeds_of(a)) for a in primary)


def references(scale: str, fams) -> dict:
    """The bare base, the best one-shot model (chosen on the selection pool) and multitask, from the finished
    studies: the skill-combining study's rows once it is finished (:func:`skills_finished`), else the society
    study's."""
    rows = skill_rows(scale) if skills_finished(scale) else society_rows(scale, STUDY, finished=True)
    ch = chosen_agents(rows, fams)
    one = best_of(ch, ONE_SHOT_MODELS)
    base = base_scores(rows, ["overall", *(f"{f}_novel" for f in fams)])
    held = float((base[[f"{f}_novel" for f in fams]] >= HELD).sum(axis=1).mean())
    return {BASE_MODEL: (None, base["overall"], held),
            **{name: (arm, ch[ch.arm == arm].set_index("seed")["test_overall"], float(ch[ch.arm == arm]["held"].mean()))
               for name, arm in (("best one-shot model", one), (label(MULTITASK), MULTITASK))}}


def reference_folders(scale: str) -> dict:
    """``{arm: its folder(s)}`` of the reference models' rows (:func:`references`; the bare base under ``None``): the
    same baseline re-run in another folder, on another float path, gives another number, so each line names its
    own."""
    rows = skill_rows(scale) if skills_finished(scale) else society_rows(scale, STUDY, finished=True)
    named = lambda d: ", ".join(f"`{s}`" for s in sorted(set(d["study"])))  # noqa: E731
    return {None: named(rows), **{a: named(g) for a, g in rows.groupby("arm")}}


def society_designs(scale: str) -> str:
    """The README's one society table (see the module's docstring)."""
    if config_of(CROSSOVER, scale) is None or society_rows(scale, STUDY, finished=True, required=False) is None:
        return NO_DATA
    lines, refs = _design_lines(scale)
    out, only, where = [], [], reference_folders(scale)
    for name, (arm, v, held) in refs.items():
        out.append(f"| **{name}**{f' (`{arm}`)' if arm and arm != MULTITASK else ''} | {where.get(arm, '—')} | "
                   f"{v.notna().sum()} | {_interval(v)} | — | {fmt(held, 2)} |")
    for x in sorted(lines, key=lambda x: -np.nanmean(x["chosen"]) if len(x["chosen"]) else 1.0):
        line = (f"| `{x['arm']}` | `{x['study']}`{' (interim)' if x['interim'] else ''} | {x['n']} | "
                f"{_interval(x['chosen'])} | {_interval(x['population'])} | {fmt(x['held'], 2)} |")
        if len(x["chosen"]):
            out.append(line)
        else:
            only.append(x)
    header = ["model", "study", "seeds", "chosen agent: test [95 % CI (t, within [0, 1])]",
              "population mean: test [95 % CI]", "skills held (of 3)"]
    table = markdown(header, out)
    if only:  # the folders without a selection pool: no chosen agent, so not ranked with the others
        table += ("\n*Population-only designs* (their folders have no selection pool, so no chosen agent: compare "
                  "them on the population mean only):\n\n" + markdown(["model", "study", "seeds", "population mean: test "
                                                                       "[95 % CI]"],
                                                                      [_population_only(x) for x in sorted(
                                                                          only, key=lambda x: -np.nanmean(x["population"]))]))
    return table


def _population_only(x: dict) -> str:
    return f"| `{x['arm']}` | `{x['study']}` | {x['n']} | {_interval(x['population'])} |"


SUMMARY_SEEDS = 8  # the summary's statements name designs run on at least this many seeds


def ranked_designs(scale: str, *, headline: bool = False) -> tuple[list[dict], dict]:
    """The designs of finished studies with a chosen agent on :data:`SUMMARY_SEEDS` or more seeds (a running study's
    interim rows make no headline), and the references. Best mean test first; ``headline``: only the designs a
    study pre-registered as its own (role ``primary`` or ``reference``: no secondary control such as ``@gold``),
    ranked as the studies rank their designs, by the chosen agents' mean accuracy on the selection pool."""
    lines, refs = _design_lines(scale)
    ok = [x for x in lines if x["chosen"].notna().sum() >= SUMMARY_SEEDS and not x["interim"]]
    if headline:
        ok = [x for x in ok if spec(x["arm"]) is not None and spec(x["arm"]).name == x["arm"]
              and spec(x["arm"]).role in ("primary", "reference") and not spec(x["arm"]).added]
        return sorted(ok, key=lambda x: -float(x["select"])), refs
    return sorted(ok, key=lambda x: -float(x["chosen"].mean())), refs


def skills_machines(scale: str) -> str:
    """Which float paths (the CPU's vendor, torch's kernel level, the BLAS: :func:`lib.society.data.shard_float_path`,
    else the manifest's device) made the finished shards the study reads: per folder and float path, the shards,
    arms and seeds, and the commits they were made at (:func:`lib.society.data.code_path`; ``?``: not recorded).
    The machine check the study plans (the same seeds on a second float path) needs a second row in one folder."""
    rows = skill_rows(scale)
    if rows is None:
        return NO_DATA
    lines = []
    for study, part in rows.groupby("study", sort=False):
        folder = data_dir(scale, study)
        m = read_manifest(folder) or {}
        seen: dict[str, list[tuple[str, int, str]]] = {}
        for arm, seed, path in part[["arm", "seed", "code_path"]].drop_duplicates().itertuples(index=False):
            fp = shard_float_path(m, read_progress(folder / f"{arm}_s{seed}.csv"))
            key = (" · ".join(str(fp.get(k, "?")) for k in ("vendor", "torch_cpu_capability", "blas")) if fp else
                   f"{str(m.get('device', '?')).removeprefix('cpu:')} (the folder's device; kernel level and BLAS "
                   f"not recorded)")
            seen.setdefault(key, []).append((arm, int(seed), path.split("/")[0]))
        for key, runs in seen.items():
            seeds = sorted({s for _, s, _ in runs})
            commits = pd.Series([c for _, _, c in runs]).value_counts(sort=False)
            made = ", ".join(f"`{c}` ({n})" for c, n in commits.items())
            lines.append(f"| `{study}` | {key} | {len(runs)} | {len({a for a, _, _ in runs})} | {seed_ranges(seeds)} | "
                         f"{made} |")
    return markdown(["folder", "float path (vendor · kernel level · BLAS)", "shards", "arms", "seeds",
                     "made at: commit (shards)"], lines)


def skills_pilot(scale: str) -> str:
    """Every generation on disk of the study's folder at ``scale`` (the GPU pilot is ``paper``), finished or
    not: per design and generation the population's mean test accuracy overall, per family and on its novel
    region (a baseline: its one model, a founder-budget run reported at the last generation), with the bare
    base first; and the generation's wall seconds with its costliest phase (from the progress files)."""
    rows = society_rows(scale, CROSSOVER, required=False)
    if rows is None:
        return NO_DATA
    fams = _families(scale)
    keys = ["test_overall", *[f"test_{f}" for f in fams], *[f"test_{f}_novel" for f in fams]]
    w = agents_wide(rows, keys)
    pop = w.groupby(["arm", "seed", "generation"], sort=False)[keys].mean()
    base = base_scores(rows, [k.removeprefix("test_") for k in keys]).mean()
    walls = society_walls(scale, CROSSOVER, required=False)
    phases = [c for c in walls.columns if c not in ("arm", "seed", "generation", "wall_s")]
    walls = walls.set_index(["arm", "seed", "generation"])
    lines = [f"| {label(BASE_MODEL)} | — | — | {' | '.join(fmt(v) for v in base.to_numpy())} | — | — |"]
    order = {a: i for i, a in enumerate(dict.fromkeys(rows["arm"]))}
    for (arm, seed, gen), v in sorted(pop.iterrows(), key=lambda kv: (order[kv[0][0]], *kv[0][1:])):
        at = (arm, seed, 0 if is_baseline(arm) else gen)  # a baseline's one entry is its run's
        t = walls.loc[at] if at in walls.index else None
        top = None if t is None else t[phases].astype(float).idxmax()
        lines.append(f"| `{arm}` | {seed} | {gen} | {' | '.join(fmt(x) for x in v.to_numpy())} | "
                     f"{'—' if t is None else fmt(t['wall_s'], 0)} | "
                     f"{'—' if top is None else f'{top} {fmt(t[top], 0)}'} |")
    return markdown(["design", "seed", "generation", "overall", *fams, *[f"{f} novel" for f in fams], "wall s",
                     "costliest phase (s)"], lines)


TABLES: dict[str, Callable[[str], str]] = {"skills-primary": skills_primary, "skills-summary": skills_summary,
                                           "skills-secondary": skills_secondary, "skills-machines": skills_machines,
                                           "skills-pilot": skills_pilot,
                                           "society-designs": society_designs}
VALUES: dict[str, Callable[[str], str]] = {}  # the summary's society numbers: lineage.tables' society-answer


# ----------------------------------------------------------------------------- one number per baseline and per arm

RECONCILED = (MAIN, STUDY)  # the first verdict's baselines, and the society study's that re-ran them


def _founders_differ(a: pd.DataFrame, b: pd.DataFrame) -> tuple[int, int]:
    """Of the seeds both folders ran ``full`` on: how many start from other founders (a generation-0 agent's test
    accuracy differs), and how many seeds there are."""
    def gen0(rows):
        d = rows[(rows["arm"] == REFERENCE) & (rows["generation"] == 0) & (rows["agent"] >= 0)
                 & (rows["metric"] == "test_overall")]
        return d.groupby("seed")["value"].apply(lambda v: tuple(np.round(v.to_numpy(), 9)))
    ga, gb = gen0(a), gen0(b)
    both = sorted(set(ga.index) & set(gb.index))
    return sum(ga[s] != gb[s] for s in both), len(both)


def society_baselines_both(scale: str) -> str:
    """Each baseline as the first verdict measured it (its grids) and as the society study re-measured it (grids to
    their natural bounds), on the same seeds, with the study's choice of grid: the study's is the number to use."""
    first, study = (society_rows(scale, f, finished=True, required=False) for f in RECONCILED)
    if first is None or study is None:
        return NO_DATA
    pa, pb = population_scores(first), population_scores(study)
    other, n = _founders_differ(first, study)
    lines = []
    for arm in [a for a in pa if is_baseline(a) and a in pb]:
        both = pd.concat([pa[arm], pb[arm]], axis=1).dropna()
        grids = "seed → wide" if arm in grid_of("wide") else "—"
        lines.append(f"| `{arm}` | {len(both)} | {fmt(both.iloc[:, 0].mean())} | {fmt(both.iloc[:, 1].mean())} | "
                     f"{signed(both.iloc[:, 1].mean() - both.iloc[:, 0].mean())} | {grids} |")
    lines.append(f"| founders | {n} | — | — | — | {other} of {n} seeds start from other founders |")
    return markdown(["baseline", "seeds", "first verdict", "society study (the number to use)", "study − first",
                     "grid"], lines)


def society_full_everywhere(scale: str) -> str:
    """``full`` in every folder that ran it (the seat-fair re-runs' included): seeds, its population accuracy at the last generation, what made it
    (commit, float path, trainer), and against the society study's ``full`` on the seeds both ran."""
    ref = society_rows(scale, STUDY, finished=True, required=False)
    if ref is None:
        return NO_DATA
    ref_pop = population_scores(ref)[REFERENCE]
    lines = []
    for folder in (MAIN, RECOMBINATION, STUDY, LEXICASE, *(FAIR[f] for f in (MAIN, RECOMBINATION, STUDY))):
        rows = society_rows(scale, folder, finished=True, required=False)
        if rows is None or REFERENCE not in set(rows["arm"]):
            continue
        pop = population_scores(rows)[REFERENCE].dropna()
        paths = ", ".join(sorted(set(rows.loc[rows["arm"] == REFERENCE, "code_path"])))
        both = pd.concat([pop, ref_pop], axis=1).dropna()
        diff = "—" if folder == STUDY else f"{signed((both.iloc[:, 0] - both.iloc[:, 1]).mean())} ({len(both)} seeds)"
        lines.append(f"| `{folder}` | {len(pop)} | {_interval(pop)} | `{paths}` | {diff} |")
    return markdown(["folder", "seeds", "`full`: population test [95 % CI (t, within [0, 1])]", "made by",
                     "− the study's `full`, same seeds"], lines)


TABLES.update({"society-baselines-both": society_baselines_both, "society-full-everywhere": society_full_everywhere})
