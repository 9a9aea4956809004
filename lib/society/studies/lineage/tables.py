"""The lineage study's tables (:mod:`lib.society.studies.lineage.comparisons`), written into the README and
``docs/lineage.md``.

- ``lineage-primary``: the four pre-registered comparisons, Holm, each verdict *interim* until its seeds are in;
- ``lineage-secondary``: the secondary comparisons, raw p;
- ``lineage-compute``: every design and baseline with a chosen agent (this study's, the skill-combining and the
  society study's): accuracy, skills held and what its run cost per seed;
- ``lineage-placement``: each society design against the one-shot frontier at its own compute;
- ``lineage-skills``: the study's models, their skills per family and cost;
- ``lineage-founder-selection``: the founders selected as parents of generation 1, by family;
- ``society-answer``: the README summary's answer in one small table (:func:`answer`): the bare base, the best
  society design by the pre-registered rule and the best overall, distill-all and multitask at a founder's budget
  and at their best k, each with its compute.
"""
from __future__ import annotations

import re
from typing import Callable

import numpy as np
import pandas as pd

from lib.society.arms import BASE_MODEL, CONTINUE, CONTINUE_ARCHIVE, FRONTIER, frontier_k, label, spec
from lib.society.data import LINEAGE, config_of
from lib.society.studies.lineage import comparisons as lineage
from lib.society.studies.verdict.tables import founder_selection_markdown
from lib.society.studies.skills.tables import ranked_designs, references
from lib.society.studies.skills.tables import (preregistered_seeds, primary_markdown, primary_verdict, secondary_markdown,
                                              summary_markdown)
from lib.core.format import NO_DATA, ci, fmt, markdown, p_text, seed_ranges, signed
from lib.core.stats import bounded_t_ci


def _data(scale: str) -> dict | None:
    return lineage.load_data(scale)


def lineage_primary(scale: str) -> str:
    d = _data(scale)
    return NO_DATA if d is None or d["rows"] is None else primary_markdown(lineage.primary(d["rows"], d["families"]),
                                                      config_of(LINEAGE, scale))


def lineage_verdicts(scale: str) -> str:
    """The four primary comparisons by verdict in one phrase (wins, ties, losses at Holm p < 0.05), or, while one has
    fewer seeds than pre-registered, that the verdicts are not in yet."""
    d = _data(scale)
    if d is None or d["rows"] is None:
        return "no data yet"
    t, cfg = lineage.primary(d["rows"], d["families"]), config_of(LINEAGE, scale)
    said = pd.Series([primary_verdict(r, cfg) for _, r in t.iterrows()], index=t.index)
    if said.str.startswith("none yet").any():
        target = max(preregistered_seeds(r, cfg) for _, r in t.iterrows())
        return f"no verdict yet ({int(t['n'].min())} of {target} seeds in)"
    parts = [f"{name}: " + (", ".join(f"{k + 1} ({t.comparison[k]})" for k in said.index[said == w]) or "none")
             for w, name in VERDICT_WORDS.items()]
    return "; ".join(parts) + f" (Holm p < 0.05, on {int(t['n'].min())} seeds)"


VERDICT_WORDS = {"win": "wins", "tie": "ties", "loss": "losses"}  # a verdict and its group in :func:`lineage_verdicts`


def verdict_groups(said: str) -> dict[str, set[int]]:
    """The primary comparisons' numbers under each verdict of a :func:`lineage_verdicts` phrase (``{"win": {..},
    "tie": {..}, "loss": {..}}``), for the checks that read words against it."""
    groups = dict(re.findall(r"(wins|ties|losses): ([^;]*?)(?:;| \(Holm)", said))
    return {v: {int(n) for n in re.findall(r"(\d+) \(", groups.get(w, ""))} for v, w in VERDICT_WORDS.items()}


def lineage_held(scale: str, arm: str = CONTINUE) -> str:
    """On how many seeds ``arm``'s chosen agent holds at least two of the three skills."""
    d = _data(scale)
    if d is None or d["rows"] is None:
        return "not measured yet"
    k, n = lineage.held_by_one(d["rows"], d["families"], arm)
    return f"{k} of {n} seeds" if n else "not measured yet"


def lineage_secondary(scale: str) -> str:
    d = _data(scale)
    return NO_DATA if d is None or d["rows"] is None else secondary_markdown(lineage.secondary(d["rows"], d["families"]))


def lineage_secondary_said(scale: str) -> str:
    """The secondary comparisons in one phrase (README): each Δ = a − b with its sign-flip interval and raw p, and
    the seeds they pair; while one is short of the pre-registered 8 seeds, how many are in."""
    d = _data(scale)
    t = None if d is None or d["rows"] is None else lineage.secondary(d["rows"], d["families"])
    if t is None or t.empty:
        return "not measured yet"
    cfg = config_of(LINEAGE, scale)
    lo, hi, target = int(t["n"].min()), int(t["n"].max()), min(preregistered_seeds(r, cfg) for _, r in t.iterrows())
    if lo < target:
        return f"not in yet ({lo}–{hi} of {target} seeds)"
    said = [f"`{r.arm_a}` − `{r.arm_b}` {signed(r['diff'])} " + ("(one seed)" if r.n < 2 else f"{ci(r.lo, r.hi)}, "
                                                                 f"p {p_text(r.p)}") for _, r in t.iterrows()]
    return "; ".join(said) + f" (raw p, on {lo if lo == hi else f'{lo}–{hi}'} seed{'s' if hi > 1 else ''})"


def lineage_skills(scale: str) -> str:
    """The study's own models beside the bare base: the chosen agent's test accuracy, each family's novel region,
    skills held and the run's cost (:func:`lib.society.studies.skills.comparisons.arm_summary`)."""
    d = _data(scale)
    return NO_DATA if d is None or d["rows"] is None else summary_markdown(d["rows"], d["families"])


def lineage_founder_selection(scale: str) -> str:
    """Which founders grounded selection makes parents of generation 1 in each society design of the study
    (:func:`lib.society.studies.verdict.comparisons.founder_selection`): a child can continue only a parent's LoRA."""
    d = _data(scale)
    return NO_DATA if d is None or d["rows"] is None else founder_selection_markdown(d["rows"], d["families"])


def _count(x) -> str:
    return "—" if not np.isfinite(x) else f"{x / 1e6:,.2f} M" if x >= 1e5 else f"{x:,.0f}"


def lineage_compute(scale: str) -> str:
    """Per design and baseline (by LoRA steps): seeds, the chosen agent's test accuracy, skills held, and per seed
    the LoRA steps, val evaluations, tokens trained and generated and verifier calls (where recorded: n)."""
    d = _data(scale)
    if d is None:
        return NO_DATA
    t = lineage.compute_table(d["everything"], d["families"], d["work"])
    study = d["everything"].drop_duplicates("arm").set_index("arm")["study"]
    lines = [f"| {'`' + r.arm + '`'} | {'one-shot' if r.baseline else 'society'} | `{study[r.arm]}` | {int(r.n)} | "
             + (f"{fmt(r.test)} [{fmt(r.lo)}, {fmt(r.hi)}]" if np.isfinite(r.lo) else fmt(r.test))
             + f" | {fmt(r.held, 2)} | {r.steps:,.0f} | {r.val_evals:,.0f} | {_count(r.train_tokens)} | "
             f"{_count(r.gen_tokens)} | {_count(r.verifier_calls)} | {r.n_counted} |" for _, r in t.iterrows()]
    return markdown(["model", "kind", "study", "seeds", "chosen agent: test [95 % CI (t, within [0, 1])]", "skills held (of 3)",
                     "LoRA steps per seed", "val evaluations", "tokens trained", "tokens generated", "verifier calls",
                     "seeds with recorded work"], lines)


def lineage_placement(scale: str) -> str:
    """Each society design against the best one-shot model (chosen on the selection pool) at most as costly."""
    d = _data(scale)
    if d is None:
        return NO_DATA
    p = lineage.placements(d["groups"], d["families"])
    lines = [f"| `{r.arm}` | {r.runs} | {r.steps:,.0f} | " + (f"`{r.rival}` | {r.rival_steps:,.0f} | {int(r.n)} | "
                                                   f"{signed(r['diff'])} {ci(r.lo, r.hi)} | {p_text(r.p)} | "
                                                   f"{r['where'] if isinstance(r['where'], str) else '— (not placed: no interval below 6 seeds)'} |" if r.rival else
                                                   "none as cheap | — | — | — | — | — |") for _, r in p.iterrows()]
    return markdown(["society design", "its runs (folders)", "LoRA steps per seed", "one-shot rival (best on the selection pool at ≤ its "
                     "steps)", "its steps", "seeds", "Δ = design − rival [95 % CI (sign-flip)]", "p", "where"], lines)


def lineage_frontier(scale: str) -> str:
    """How many society designs sit above, on and below the one-shot frontier at their compute, and the closest one
    (README summary; Fig. 3i)."""
    d = _data(scale)
    if d is None:
        return "not measured yet"
    t = lineage.compute_table(d["everything"], d["families"], d["work"])
    p = lineage.placements(d["groups"], d["families"]).dropna(subset=["where"])
    if p.empty:
        return "not measured yet"
    n = p["where"].value_counts()
    best = p.sort_values("diff", ascending=False).iloc[0]
    cheapest = t[~t["baseline"]]["steps"].min()
    counts = ", ".join(f"{int(n.get(w, 0))} {w} it" for w in (lineage.ABOVE, lineage.ON, lineage.BELOW))
    return (f"of {len(p)} society designs, {counts}: the closest, `{best.arm}`, ends {signed(best['diff'])} "
            f"{ci(best.lo, best.hi)} from `{best.rival}` while spending {best.steps:,.0f} LoRA steps per seed to its "
            f"{best.rival_steps:,.0f} (the cheapest society design spends {cheapest:,.0f})")


def lineage_commits(scale: str) -> str:
    """At which commits the study's finished shards were made (each shard's recorded code path, its first part),
    oldest first by the shards' seeds: per commit the shards, the seeds and, where it made only a few, which arms."""
    d = _data(scale)
    if d is None or d["rows"] is None:
        return "not measured yet"
    x = d["rows"][["arm", "seed", "code_path"]].drop_duplicates(["arm", "seed"])
    x = x.assign(commit=x["code_path"].astype(str).str.split("/").str[0])
    parts = []
    for commit, g in sorted(x.groupby("commit"), key=lambda kv: (len(kv[1]), kv[0])):
        arms = f": {', '.join(f'`{a}`' for a in g['arm'])}" if len(g) <= 3 else ""
        parts.append(f"`{commit}` {len(g)} shard{'s' if len(g) > 1 else ''} (seed{'s' if g['seed'].nunique() > 1 else ''} "
                     f"{seed_ranges(g['seed'])}{arms})")
    return ", ".join(parts)


# the one-shot models at a founder's budget, as their records say (lib.society.arms: "at a founder's budget"; "a
# founder's budget of its gold tasks"), and at six founders' budgets (multitask as the studies compare with it)
AT_A_FOUNDERS_BUDGET = {FRONTIER[0]: FRONTIER[0], FRONTIER[1]: f"{FRONTIER[1]}@steps"}
ANSWER_ROLES = ("the bare base", "best society design by the pre-registered rule", "best society design overall",
                "distill-all at a founder's budget", "distill-all at its best k", "multitask at a founder's budget",
                "multitask at six founders' budgets", "multitask at its best k")


def answer(scale: str) -> pd.DataFrame | None:
    """The society's answer in one table (README summary), one line per :data:`ANSWER_ROLES`: ``role, arm, study,
    n, test, lo, hi`` (the chosen agent's test accuracy, 95 % t-interval within [0, 1]), ``held`` (skills, of the
    families), ``steps`` (LoRA optimizer steps per seed, the founders' included where a run starts from them) and
    ``kind`` (``preregistered``, ``secondary`` or ``one-shot``).

    The best design *by the pre-registered rule* is the studies' own: the pre-registered designs (no secondary
    control, nothing added after its pre-registration) of finished studies on 8 seeds or more, ranked by the chosen
    agents' accuracy on the selection pool (:func:`lib.society.studies.skills.tables.ranked_designs`); the best *overall*
    is every such design's, secondary ones included, with the highest mean test accuracy (a description, not a
    choice). A baseline's *best k* is its frontier point (``<baseline>@k<k>``) with the highest mean selection-pool
    accuracy, never chosen on test. Every number comes from the compute table (:func:`lineage.compute_table`), the
    bare base's from the skill-combining study's references. ``None``: no lineage data."""
    d = _data(scale)
    if d is None or d["rows"] is None:
        return None
    t = lineage.compute_table(d["everything"], d["families"], d["work"]).set_index("arm")
    study = d["everything"].drop_duplicates("arm").set_index("arm")["study"]
    rule, _ = ranked_designs(scale, headline=True)
    overall, refs = ranked_designs(scale)
    if not rule or not overall:  # no finished study on enough seeds (the smoke scale): nothing to answer with
        return None
    _, base, base_held = refs[BASE_MODEL]

    def best_k(baseline: str) -> str:
        points = t[[frontier_k(a) is not None and a.startswith(baseline + "@") for a in t.index]]
        return None if points.empty else str(points["select"].idxmax())

    arms = [None, rule[0]["arm"], overall[0]["arm"], AT_A_FOUNDERS_BUDGET[FRONTIER[0]], best_k(FRONTIER[0]),
            AT_A_FOUNDERS_BUDGET[FRONTIER[1]], FRONTIER[1], best_k(FRONTIER[1])]
    lines = []
    for role, arm in zip(ANSWER_ROLES, arms):
        if role != ANSWER_ROLES[0] and arm not in t.index:  # not run at this scale
            continue
        if arm is None:  # the bare base: no LoRA, so no steps
            m, lo, hi = bounded_t_ci(base.dropna())
            lines.append({"role": role, "arm": None, "study": None, "n": int(base.notna().sum()), "test": m, "lo": lo,
                          "hi": hi, "held": base_held, "steps": 0.0, "kind": "—"})
            continue
        r = t.loc[arm]
        kind = "one-shot" if r["baseline"] else ("secondary" if spec(arm).role == "secondary" or spec(arm).added
                                                 else "pre-registered")
        lines.append({"role": role, "arm": arm, "study": study[arm], "n": int(r["n"]), "test": r["test"], "lo": r["lo"],
                      "hi": r["hi"], "held": r["held"], "steps": r["steps"], "kind": kind})
    return pd.DataFrame(lines)


def society_answer(scale: str) -> str:
    """:func:`answer` as the README's table."""
    a = answer(scale)
    if a is None:
        return NO_DATA
    lines = [f"| {r.role} | {f'`{r.arm}`' if isinstance(r.arm, str) else label(BASE_MODEL)} | {r.kind} | "
             f"{f'`{r.study}`' if isinstance(r.study, str) else '—'} | {r.n} | {fmt(r.test)} [{fmt(r.lo)}, {fmt(r.hi)}] | "
             f"{fmt(r.held, 2)} | {r.steps:,.0f} |" for r in a.itertuples()]
    return markdown(["what", "model", "design", "study", "seeds", "chosen agent: test [95 % CI (t)]",
                     "skills held (of 3)", "LoRA steps per seed (founders' included where it starts from them)"], lines)


TABLES: dict[str, Callable[[str], str]] = {"lineage-primary": lineage_primary, "lineage-secondary": lineage_secondary,
                                           "lineage-compute": lineage_compute, "lineage-placement": lineage_placement,
                                           "lineage-founder-selection": lineage_founder_selection,
                                           "lineage-skills": lineage_skills, "society-answer": society_answer}
VALUES: dict[str, Callable[[str], str]] = {"lineage-frontier": lineage_frontier,
                                           "lineage-verdicts": lineage_verdicts, "lineage-commits": lineage_commits, "lineage-held": lineage_held,
                                           "lineage-secondary-said": lineage_secondary_said,
                                           "lineage-archive-held": lambda scale: lineage_held(scale, CONTINUE_ARCHIVE)}
