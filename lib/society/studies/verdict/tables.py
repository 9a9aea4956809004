"""The society's first verdict in full (``docs/results.md``): its tables and the numbers inside its sentences.

Everything is computed by :mod:`lib.society.studies.verdict.comparisons` and
:mod:`lib.society.studies.diagnostics.comparisons` from the rows of ``configs/society/<scale>.yaml`` (the main
run), ``configs/society_recombination/`` (the other breeding arms, compared with the ``full`` run beside them in
that folder, each folder read on its own) and the manifest of the main run's folder, all read by
:mod:`lib.society.data`; this module only formats. Accuracies carry a 95 % CI (t, within [0, 1]); paired
differences a 95 % CI (sign-flip inversion), which stays within [−1, 1].
"""
from __future__ import annotations

import re
from functools import lru_cache, wraps
from typing import Callable

import numpy as np
import pandas as pd

from lib.core.stats import paired_permutation_test, sign_flip_ci
from lib.society import arms
from lib.society.arms import NO_GROUNDING, REFERENCE, is_baseline, what
from lib.society.config import arm_seeds
from lib.society.data import (MAIN, RECOMBINATION, STUDY, config_of as _config, first_verdict_folders, manifest_of,
                               society_rows, society_walls)
from lib.society.studies.diagnostics.comparisons import preconditions
from lib.society.studies.frames import base_scores, interval_word, verdict
from lib.society.studies.verdict.comparisons import (BASE, FOUNDERS, STEPS, VAL_BEST, breeding_skill,
                                                     first_generation_loss, founder_selection, full_reproduction,
                                                     generalist_summary, method_scores, method_summary,
                                                     operator_summary, population_difference, primary_comparisons,
                                                     retention_summary, testbed_families)
from lib.core.format import NO_DATA, ci, fmt, markdown, num, p_text, signed

SKILL_FAMILY = "lists"  # the family whose novel skill the recombination arms are followed on


# ----------------------------------------------------------------------------- data (read once per scale)


def _rows(experiment: str, scale: str) -> pd.DataFrame | None:
    """The rows of ``experiment``'s folder read on their own (:func:`lib.society.data.society_rows`); the first
    verdict's (:data:`MAIN`) from its seat-fair re-run once that replaces it
    (:func:`lib.society.data.first_verdict_folders`)."""
    return society_rows(scale, first_verdict_folders(scale)[0] if experiment == MAIN else experiment, required=False)


def _walls(scale: str) -> pd.DataFrame:
    return society_walls(scale, first_verdict_folders(scale)[0])


def _ablation_breeding(scale: str) -> tuple[pd.DataFrame | None, str]:
    """The rows the ablation reads ``no_sex`` from, and their folder: the recombination folder's seat-fair re-run
    once that and the first verdict's re-run are whole (:func:`lib.society.data.first_verdict_folders`), else the
    folder itself."""
    folder = first_verdict_folders(scale)[1]
    return (_breeding_rows(scale) if folder == RECOMBINATION else _rows(folder, scale)), folder


@lru_cache(maxsize=None)
def _breeding_rows(scale: str) -> pd.DataFrame | None:
    """The recombination arms with the ``full`` run beside them in their own folder, on the same seeds, at
    the same commit (``None`` without them, or when the folder holds no ``full``: an older layout)."""
    if _rows(MAIN, scale) is None or (more := _rows(RECOMBINATION, scale)) is None or REFERENCE not in set(more["arm"]):
        return None
    return more


def _families(scale: str) -> list[str]:
    return list(_config(MAIN, scale)["families"])


def _has(experiment: str, scale: str) -> bool:
    return (_breeding_rows(scale) if experiment == RECOMBINATION else _rows(experiment, scale)) is not None


def _needs(experiment: str = MAIN):
    """A table of ``scale`` that is :data:`NO_DATA` where ``experiment`` has no rows at that scale."""
    def wrap(fn):
        @wraps(fn)
        def run(scale: str) -> str:
            return fn(scale) if _has(experiment, scale) else NO_DATA
        return run
    return wrap


def _with_data(fn, experiment: str = MAIN):
    """A value of ``scale`` that is ``—`` where ``experiment`` has no rows at that scale."""
    return lambda scale: fn(scale) if _has(experiment, scale) else "—"


@lru_cache(maxsize=None)
def _methods(scale: str) -> pd.DataFrame:
    return method_summary(_rows(MAIN, scale), _families(scale), _walls(scale)).set_index("method")


@lru_cache(maxsize=None)
def _loss(scale: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    return first_generation_loss(_rows(MAIN, scale), _families(scale))


@lru_cache(maxsize=None)
def _breeding(scale: str) -> pd.DataFrame:
    return breeding_skill(_breeding_rows(scale), _families(scale), SKILL_FAMILY).set_index("arm")


@lru_cache(maxsize=None)
def _primary(scale: str) -> pd.DataFrame:
    return primary_comparisons(_rows(MAIN, scale), _families(scale)).set_index("other")


# ----------------------------------------------------------------------------- formatting


def _acc(m, lo, hi) -> str:
    """An accuracy and its 95 % CI (t, within [0, 1]); ``(n < 2)`` without an interval."""
    return f"{fmt(m)} " + (f"[{fmt(lo)}, {fmt(hi)}]" if np.isfinite(num(lo)) else "(n < 2)")


def _diff(m, lo, hi) -> str:
    return f"{signed(m)} {ci(lo, hi)}"


def _t_diff(m, lo, hi) -> str:
    """A mean difference with its 95 % CI (t); ``(n < 2)`` without one, ``—`` without the mean."""
    if not np.isfinite(num(m)):
        return "—"
    return f"{signed(m)} " + (ci(lo, hi) if np.isfinite(num(lo)) else "(n < 2)")


def _share(x) -> str:
    return "—" if not np.isfinite(num(x)) else f"{100 * num(x):.0f} %"


def _count(x) -> str:
    x = num(x)
    return "—" if not np.isfinite(x) else f"{x:,.0f}"


def _method(name: str) -> str:
    """A method of :func:`lib.society.studies.verdict.comparisons.method_scores` as the tables name it."""
    if name in (FOUNDERS, BASE):
        return {FOUNDERS: "the founders (generation 0, mean)", BASE: "the bare base"}[name]
    return f"`{name.removesuffix(VAL_BEST)}`" + (VAL_BEST if name.endswith(VAL_BEST) else "")


# ----------------------------------------------------------------------------- tables


@_needs()
def testbed_table(scale: str) -> str:
    """The bare base and the founders on each family's test at generation 0 (:func:`testbed_families`)."""
    t = testbed_families(_rows(MAIN, scale), _families(scale))
    lines = [f"| {r.family} | {int(r.n)} | {fmt(r.base)} | {fmt(r.base_region)} | {_acc(r.specialists, r.lo, r.hi) if np.isfinite(num(r.specialists)) else '—'} "
             f"| {fmt(r.others)} |" for r in t.itertuples()]
    return markdown(["family", "seeds", "bare base, test", "bare base, novel region",
                     "specialists on their family [95 % CI (t, within [0, 1])]", "the other founders on it"], lines)


@_needs()
def preconditions_table(scale: str) -> str:
    """The preconditions, measured (:func:`lib.society.studies.diagnostics.comparisons.preconditions`)."""
    t = preconditions(_rows(MAIN, scale), _families(scale))
    lines = []
    for _, r in t.iterrows():
        interval = f"[{fmt(r.lo)}, {fmt(r.hi)}]" if np.isfinite(num(r.lo)) else "—"
        req = f"≥ {num(r.threshold):.2f}" if np.isfinite(num(r.threshold)) else "—"
        held = "—" if r["pass"] is None else ("yes" if r["pass"] else "**no**")
        lines.append(f"| {r.precondition} | {fmt(r.measured)} | {interval} | {req} | {held} | {r.n} |")
    return markdown(["quantity", "measured", "95 % CI (t)", "required", "holds", "n"], lines)


@_needs()
def methods_table(scale: str) -> str:
    """Fig. 3f: every method at the last generation, − ``full`` and − the base, with its cost
    (:func:`lib.society.studies.verdict.comparisons.method_summary`)."""
    t = _methods(scale)
    def vs(m, lo, hi, p):
        return f"{_diff(m, lo, hi)} | {p_text(p)}" if np.isfinite(num(m)) else "— | —"
    lines = [f"| {_method(m)} | {int(r.n)} | {_acc(r.accuracy, r.acc_lo, r.acc_hi)} | {vs(r['mean'], r.lo, r.hi, r.p)} | "
             f"{vs(r.base_mean, r.base_lo, r.base_hi, r.base_p)} | {fmt(r.val)} | {_count(r.train_steps)} | "
             f"{_count(r.val_evals)} | {_count(r.wall_s)} |" for m, r in t.iterrows()]
    return markdown(["method (last generation)", "seeds", "test [95 % CI (t, within [0, 1])]",
                     "− `full` [95 % CI (sign-flip)]", "p", "− the bare base [95 % CI (sign-flip)]", "p",
                     "val (chooses the one-shot merge)", "LoRA steps (founders included)", "val evaluations",
                     "wall s (the founders' training excluded)"], lines)


@_needs()
def retention_table(scale: str) -> str:
    """S3h: each family's novel skill over the generations (:func:`retention_summary`)."""
    t = retention_summary(_rows(MAIN, scale), _families(scale))
    lines = [f"| {r.family} | {fmt(r.founders)} | {fmt(r.first)} | {fmt(r['last'])} | {fmt(r['best founder'])} | "
             f"{_diff(r.gap, r.lo, r.hi)} | {p_text(r.p)} | {signed(r.multitask_gap)} |" for _, r in t.iterrows()]
    return markdown(["novel region of", "founders (all six, mean)", "`full`, generation 1", "`full`, last generation",
                     "best founder", "`full`'s best agent − best founder, last generation [95 % CI (sign-flip)]", "p",
                     "`baseline_multitask` − best founder"], lines)


@_needs()
def founder_selection_table(scale: str) -> str:
    """S3i, selection: the founders' val accuracy by family and the parent slots of generation 0 they
    fill in each arm (:func:`lib.society.studies.verdict.comparisons.founder_selection`)."""
    return founder_selection_markdown(_rows(MAIN, scale), _families(scale))


def founder_selection_markdown(rows: pd.DataFrame, fams) -> str:
    """:func:`lib.society.studies.verdict.comparisons.founder_selection` of ``rows`` as a markdown table."""
    t = founder_selection(rows, fams)
    val = t.groupby("family")["val"].first()
    lines = ["| the family's founders' overall val accuracy (mean over seeds) | — | "
             + " | ".join(fmt(val[f]) for f in fams) + " | — |"]
    for arm, g in t.groupby("arm", sort=False):
        g = g.set_index("family")
        lines.append(f"| `{arm}`: founders of the family selected as parents of generation 1 | {int(g['n'].iloc[0])} | "
                     + " | ".join(f"{int(g.loc[f, 'selected'])}" for f in fams) + f" | {int(g['slots'].iloc[0])} |")
    return markdown(["", "seeds", *fams, "parent slots of generation 0 (all seeds)"], lines)


@_needs()
def skill_loss_table(scale: str) -> str:
    """S3i, the merge and the distillation at the first bred generation, ``full``
    (:func:`lib.society.studies.verdict.comparisons.first_generation_loss`)."""
    levels, steps = _loss(scale)
    levels = levels[levels["arm"] == REFERENCE].set_index("family")
    steps = steps[steps["arm"] == REFERENCE].set_index(["family", "step"])
    lines = []
    for f in [*_families(scale), *(x for x in levels.index if x not in _families(scale))]:
        if f not in levels.index:
            continue
        r = levels.loc[f]
        d = [_diff(*steps.loc[(f, s), ["mean", "lo", "hi"]]) if (f, s) in steps.index else "—" for s in STEPS]
        lines.append(f"| {f} | {int(r.n)} | {fmt(r.parent_a)} / {fmt(r.parent_b)} | {fmt(r.better)} / {fmt(r.worse)} | "
                     f"{fmt(r.merge)} | {fmt(r.child)} | " + " | ".join(d) + " |")
    return markdown(["novel region of", "seeds", "parent a / parent b (pair order)", "better / worse parent", "merge",
                     "child", *(f"{s} [95 % CI (sign-flip)]" for s in STEPS)], lines)


@_needs()
def generalists_table(scale: str) -> str:
    """S3j: agents above the bare base on one and on two families (:func:`generalist_summary`)."""
    t = generalist_summary(_rows(MAIN, scale), _families(scale))
    lines = [f"| {_method(r.arm)} | {r.n} | {fmt(r.agents, 0)} | {fmt(r.one, 2)} | {fmt(r.two, 2)} | {r.seeds_two} of {r.n} | "
             + ("—" if r.arm == FOUNDERS else fmt(r.most_two, 0)) + " |" for r in t.itertuples()]
    return markdown(["arm (last generation; the founders: generation 0)", "seeds", "agents", "above the base on ≥ 1 family (mean per population)",
                     "on ≥ 2 families (mean)", "seeds with one on ≥ 2", "most on ≥ 2 in one population, any generation after the founders"], lines)


@_needs()
def operators_table(scale: str) -> str:
    """S3d–S3f over the breeding generations (:func:`lib.society.studies.verdict.comparisons.operator_summary`)."""
    t = operator_summary(_rows(MAIN, scale))
    lines = [f"| `{r.arm}` | {r.n} | {_t_diff(r.sel_test, r.sel_test_lo, r.sel_test_hi)} | {_t_diff(r.sel_val, r.sel_val_lo, r.sel_val_hi)} | "
             f"{_t_diff(r.gain, r.gain_lo, r.gain_hi)} | {_share(r.plain_share)} | {_share(r.tie_share)} | "
             f"{_t_diff(r.load, r.load_lo, r.load_hi)} |" for r in t.itertuples()]
    return markdown(["arm", "seeds", "selected − not selected, test [95 % CI (t)]", "… val", "screened merge − its parents' mean, val",
                     "plain average wins", "screenings tied (seeded draw)", "child − its source, test (mutation load)"], lines)


@_needs(RECOMBINATION)
def recombination_table(scale: str) -> str:
    """How children are bred: each recombination arm and ``full`` on the same seeds (:func:`method_summary`,
    :func:`operator_summary` of the breeding rows)."""
    rows = _breeding_rows(scale)
    t = method_summary(rows, _families(scale)).set_index("method")
    op = operator_summary(rows).set_index("arm")
    lines = []
    for arm in [a for a in op.index if a in t.index]:
        r = t.loc[arm]
        vs = "—" if arm == REFERENCE else f"{_diff(r['mean'], r.lo, r.hi)}" + (" (null)" if num(r.p) >= 0.05 else "")
        lines.append(f"| `{arm}` ({what(arm)}) | {int(r.n)} | {_acc(r.accuracy, r.acc_lo, r.acc_hi)} | {vs} | "
                     f"{'—' if arm == REFERENCE else p_text(r.p)} | {_t_diff(*op.loc[arm, ['gain', 'gain_lo', 'gain_hi']])} |")
    return markdown(["arm", "seeds", "test, last generation [95 % CI (t, within [0, 1])]", "− `full` [95 % CI (sign-flip)]", "p",
                     "screened merge − its parents' mean, val [95 % CI (t)]"], lines)


@_needs(RECOMBINATION)
def recombination_skill_table(scale: str) -> str:
    """The recombination arms and the novel skill of :data:`SKILL_FAMILY` (:func:`breeding_skill`)."""
    t = _breeding(scale)
    lines = [f"| `{a}` | {int(r.n)} | {fmt(r.parents)} | {fmt(r.merge)} | {_diff(r.gain, r.gain_lo, r.gain_hi)} | {fmt(r.child)} | "
             f"{_diff(r.loss, r.loss_lo, r.loss_hi)} | {fmt(r.pop_1)} | {fmt(r.pop_2)} | {fmt(r.pop_last)} | {fmt(r.above, 2)} |"
             for a, r in t.iterrows()]
    f = SKILL_FAMILY
    return markdown(["arm", "seeds", f"generation 1, {f} novel: parents' mean", "merge", "merge − parents' mean [95 % CI (sign-flip)]",
                     "child", "child − merge [95 % CI (sign-flip)]", f"population on {f} novel, generation 1", "generation 2",
                     "last generation", "agents above the base on ≥ 1 family, last generation (mean)"], lines)


_SECONDARY = re.compile(rf"^({REFERENCE}|{NO_GROUNDING})@(e\d+|g[0-9.]+)$")  # S3g: @e<k>; S3b: full@g<g>


def secondary_table(scale: str) -> str:
    """The elitism (S3g) and grounding-knob (S3b) arms of the society study: how many seeds each is planned
    on, and how many of its runs have finished (:func:`lib.society.data.complete_runs`)."""
    cfg = _config(STUDY, scale)
    if cfg is None:
        return markdown(["config", "arm", "", "seeds planned", "finished runs"], [])
    rows = society_rows(scale, STUDY, finished=True, required=False)
    done = rows.groupby("arm")["seed"].nunique() if rows is not None else pd.Series(dtype=int)
    lines = []
    for arm in cfg["arms"]:
        m = _SECONDARY.search(arm)
        if m:
            kind = "S3g (elitism)" if m.group(2).startswith("e") else "S3b (grounding knob)"
            lines.append(f"| `configs/{STUDY}/{scale}.yaml` | `{arm}` | {kind} | {len(arm_seeds(cfg, arm))} | "
                         f"{int(done.get(arm, 0))} |")
    return markdown(["config", "arm", "", "seeds planned", "finished runs"], lines)


def society_primary(scale: str) -> str:
    """The first society run's three pre-registered comparisons (``configs/society``,
    :func:`lib.society.studies.verdict.comparisons.primary_comparisons`), and how much the grounding comparison
    rests on its most extreme seed (the comparison again without it)."""
    cfg, rows = _config(MAIN, scale), _rows(MAIN, scale)
    if rows is None:
        return NO_DATA
    t = primary_comparisons(rows, cfg["families"])
    lines = [f"| {r.comparison} | {int(r.n)} | {fmt(r.full)} | {fmt(r.other_acc)} | {signed(r['diff'])} "
             f"{ci(r.lo, r.hi)} | {p_text(r.p)} | {p_text(r.p_holm)} |" for _, r in t.iterrows()]
    sc = method_scores(rows, cfg["families"])
    wide = sc[sc["metric"] == "overall"].pivot_table(index="seed", columns="method", values="value")
    d = (wide[REFERENCE] - wide[NO_GROUNDING]).dropna()
    worst = d.abs().idxmax()
    rest = d.drop(worst)
    lo, hi = sign_flip_ci(rest.to_numpy())
    p = paired_permutation_test(wide.loc[rest.index, REFERENCE].to_numpy(), wide.loc[rest.index, NO_GROUNDING].to_numpy())["p"]
    lines.append(f"| `full` − `no_grounding` without seed {worst} of `{first_verdict_folders(scale)[0]}/` (its difference there {signed(d[worst])}, the "
                 f"largest) | "
                 f"{len(rest)} | — | — | {signed(rest.mean())} {ci(lo, hi)} | {p_text(p)} | — |")
    return markdown(["comparison (`full` − other)", "seeds", "`full`", "other", "Δ [95 % CI (sign-flip)]", "p",
                      "Holm p"], lines)


# the paper's four arms but full (the seed's v1 arms); no_sex ran in the recombination folder, the others in the first
ABLATION = tuple((a, RECOMBINATION if arms.SPECS[a].merge is None else MAIN) for a in arms.SEED_ARMS if a != arms.REFERENCE)


def ablation(scale: str) -> pd.DataFrame:
    """The paper's four-arm ablation (``full`` and each arm of :data:`ABLATION`, one operator switched off): per arm
    its folder, ``n`` seeds, the population's test accuracy at the last generation (``accuracy, acc_lo, acc_hi``),
    the arm − the ``full`` run of its own folder paired by seed (``mean, lo, hi``, sign-flip; ``p``) and − the bare
    base (``base_mean, base_lo, base_hi, base_p``; NaN where the folder lacks it) (:func:`method_summary`)."""
    breeding, folder = _ablation_breeding(scale)
    return ablation_of(_methods(scale),
                       None if breeding is None else method_summary(breeding, _families(scale)).set_index("method"),
                       (first_verdict_folders(scale)[0], folder))


def ablation_of(main: pd.DataFrame, breeding: pd.DataFrame | None,
                folders: tuple[str, str] = (MAIN, RECOMBINATION)) -> pd.DataFrame:
    """:func:`ablation` from the :func:`method_summary` tables (indexed by method) of the first verdict's folder
    (``main``) and of the recombination folder (``breeding``; ``None`` without it), named ``folders``."""
    out = [{**main.loc[REFERENCE].to_dict(), "arm": REFERENCE, "folder": folders[0]}]
    for arm, folder in ABLATION:
        t, name = (main, folders[0]) if folder == MAIN else (breeding, folders[1])
        if t is not None and arm in t.index:
            out.append({**t.loc[arm].to_dict(), "arm": arm, "folder": name})
    return pd.DataFrame(out).reset_index(drop=True)


@_needs()
def ablation_table(scale: str) -> str:
    """:func:`ablation` as the README shows it."""
    lines = [f"| `{r.arm}` | {'nothing: grounded, recombining, diverse' if r.arm == REFERENCE else what(r.arm)} | "
             f"`{r.folder}` | {int(r.n)} | {_acc(r.accuracy, r.acc_lo, r.acc_hi)} | "
             + ("— | — |" if r.arm == REFERENCE else f"{_diff(r['mean'], r.lo, r.hi)} | {p_text(r.p)} |")
             + f" {_diff(r.base_mean, r.base_lo, r.base_hi) if np.isfinite(num(r.base_mean)) else '—'} |"
             for _, r in ablation(scale).iterrows()]
    return markdown(["arm", "what it changes", "folder", "seeds", "test, last generation [95 % CI (t, within [0, 1])]",
                     "− `full` of its folder [95 % CI (sign-flip)]", "p", "− the bare base [95 % CI (sign-flip)]"], lines)


# ----------------------------------------------------------------------------- values inside sentences


def _n_seeds(scale: str) -> str:
    return str(int(_rows(MAIN, scale)["seed"].nunique()))


def _n_arms(scale: str, baselines: bool) -> str:
    return str(sum(is_baseline(a) == baselines for a in set(_rows(MAIN, scale)["arm"])))


def _n_runs(scale: str) -> str:
    return str(len(_rows(MAIN, scale)[["arm", "seed"]].drop_duplicates()))


def _recombination_seeds(scale: str) -> str:
    s = sorted(set(_rows(RECOMBINATION, scale)["seed"]))
    return f"{s[0]}–{s[-1]}" if s == list(range(s[0], s[-1] + 1)) and len(s) > 1 else ", ".join(map(str, s))


def _base_test(scale: str) -> str:
    return fmt(base_scores(_rows(MAIN, scale), ["overall"])["overall"].mean())


def _build(scale: str) -> dict:
    return manifest_of(MAIN, scale).get("base_model", {}).get("build", {})


def _build_overall(scale: str) -> str:
    return fmt(_build(scale).get("test_accuracy", {}).get("overall"), 2)


def _build_pool(scale: str) -> str:
    t = _build(scale).get("test_tasks", {})
    return f"{t['n_per_family']} tasks per family, seed {t['seed']}" if {"n_per_family", "seed"} <= set(t) else "—"


def _consensus(scale: str) -> str:
    d = population_difference(_rows(MAIN, scale), "consensus_acc", REFERENCE, NO_GROUNDING)
    return f"{_diff(d['mean'], d['lo'], d['hi'])}, p = {p_text(d['p'])}"


def _bred_generations(scale: str) -> str:
    rows = _rows(MAIN, scale)
    return str(int(rows.loc[rows["arm"] == REFERENCE, "generation"].max()))


def _lists_merge(scale: str) -> str:
    levels, _ = _loss(scale)
    x = levels.loc[(levels["arm"] == REFERENCE) & (levels["family"] == SKILL_FAMILY), "merge"]
    return _share(x.iloc[0]) if len(x) else "—"


def _floor_p(scale: str) -> str:
    n = int(_rows(RECOMBINATION, scale)["seed"].nunique())
    return p_text(paired_permutation_test([1.0] * n, [0.0] * n)["p"])


def _recombination_max(column: str):
    def value(scale: str) -> str:
        t = _breeding(scale)
        return fmt(t.drop(index=REFERENCE, errors="ignore")[column].max())
    return value


def _recombination_reproduces(scale: str) -> str:
    """How the recombination folder's own ``full`` compares with the main run's ``full`` on the same
    seeds (:func:`full_reproduction`): the committed pair, whose breeding arms the recombination tables read."""
    r = full_reproduction(society_rows(scale, MAIN, required=False), _breeding_rows(scale))
    text = f"{r['same']} of {r['n']} seeds row for row"
    if r["gen0"]:
        text += (f"; on {r['gen0']} more only generation 0 differs ({r['rows0']} of its rows, the founders' scores), "
                 f"every bred generation being the same")
    return text + (f"; on {r['other']} the bred generations differ too" if r["other"] else "")


VERBS = {"win": "beats", "tie": "is not distinguishable from", "loss": "loses to"}  # a verdict of a − b, a verb


def _grounding_said(scale: str) -> str:
    """Pre-registered comparison 1 in words: selection on the verifier against selection by conformity alone (Holm
    over three)."""
    r = _primary(scale).loc[NO_GROUNDING]
    word = VERBS.get(verdict(num(r["diff"]), num(r.p_holm)), "cannot yet be compared with")
    return (f"{word} selection by conformity alone (`full` − `no_grounding` {signed(r['diff'])} {ci(r.lo, r.hi)}, "
            f"Holm p {p_text(r.p_holm)}, {int(r.n)} seeds)")


def _ablation_said(scale: str) -> str:
    """The paper's ablation in words: each arm against the ``full`` of its folder (raw p), with the folder."""
    parts = []
    for _, r in ablation(scale).iloc[1:].iterrows():
        verb = interval_word(r.lo, r.hi, ("ends below", "ties", "ends above")) or "ties"  # no interval: not told apart
        parts.append(f"`{r.arm}` {verb} `full` ({what(r.arm)}: {signed(r['mean'])} {ci(r.lo, r.hi)}, p "
                     f"{p_text(r.p)}; `{r.folder}/`)")
    return "; ".join(parts)


def _reading(scale: str) -> str:
    """Which folders the first verdict's tables read (:func:`lib.society.data.first_verdict_folders`), in words."""
    main, breeding = first_verdict_folders(scale)
    fair = "the seat-fair re-run" if main != MAIN else "the committed folder, made with the seat-biased consensus"
    return f"`{main}/` ({fair}), with `{breeding}/` for `no_sex`"


def _config_value(key: str):
    return lambda scale: f"{_config(MAIN, scale)[key]:g}"


TABLES: dict[str, Callable[[str], str]] = {
    "society-primary": society_primary, "society-testbed": testbed_table, "society-preconditions": preconditions_table,
    "society-methods": methods_table, "society-retention": retention_table,
    "society-founder-selection": founder_selection_table, "society-skill-loss": skill_loss_table,
    "society-generalists": generalists_table, "society-operators": operators_table,
    "society-recombination": recombination_table, "society-recombination-skill": recombination_skill_table,
    "society-secondary": secondary_table, "society-ablation": ablation_table}
VALUES: dict[str, Callable[[str], str]] = {
    "society-seeds": _with_data(_n_seeds), "society-arms": _with_data(lambda s: _n_arms(s, False)),
    "society-baselines": _with_data(lambda s: _n_arms(s, True)), "society-runs": _with_data(_n_runs),
    "society-recombination-seeds": _with_data(lambda s: str(int(_rows(RECOMBINATION, s)["seed"].nunique())), RECOMBINATION),
    "society-recombination-seed-range": _with_data(_recombination_seeds, RECOMBINATION),
    "society-base-test": _with_data(_base_test), "society-base-build": _build_overall, "society-base-build-pool": _build_pool,
    "society-consensus": _with_data(_consensus), "society-bred-generations": _with_data(_bred_generations),
    "society-g": _config_value("g"), "society-n-inherit": _config_value("n_inherit"),
    "society-child-epochs": _config_value("epochs"), "society-lists-merge": _with_data(_lists_merge),
    "society-recombination-floor-p": _with_data(_floor_p, RECOMBINATION),
    "society-recombination-first-max": _with_data(_recombination_max("pop_1"), RECOMBINATION),
    "society-recombination-last-max": _with_data(_recombination_max("pop_last"), RECOMBINATION),
    "society-recombination-reproduces": _with_data(_recombination_reproduces, RECOMBINATION),
    "society-reading": _reading, "society-grounding-said": _with_data(_grounding_said),
    "society-ablation-said": _with_data(_ablation_said)}
