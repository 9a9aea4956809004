"""The lineage study's tables (:mod:`lib.society.studies.lineage.comparisons`), written into the README and
``docs/lineage.md``.

- ``lineage-primary``: the four pre-registered comparisons, Holm, each verdict *interim* until its seeds are in;
- ``lineage-secondary``: the secondary comparisons, raw p;
- ``lineage-compute``: every design and baseline with a chosen agent (this study's, the skill-combining and the
  society study's): accuracy, skills held and what its run cost per seed;
- ``lineage-placement``: each society design against the one-shot frontier at its own compute;
- ``lineage-skills``: the study's models, their skills per family and cost;
- ``lineage-founder-selection``: the founders selected as parents of generation 1, by family.
"""
from __future__ import annotations

import re
from typing import Callable

import numpy as np
import pandas as pd

from lib.society.arms import CONTINUE, CONTINUE_ARCHIVE, label
from lib.society.data import LINEAGE, config_of
from lib.society.studies.lineage import comparisons as lineage
from lib.society.studies.verdict.tables import founder_selection_markdown
from lib.society.studies.skills.tables import (preregistered_seeds, primary_markdown, primary_verdict, secondary_markdown,
                                              summary_markdown)
from lib.core.format import NO_DATA, ci, fmt, markdown, p_text, signed


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
    lines = [f"| `{r.arm}` | {r.steps:,.0f} | " + (f"`{r.rival}` | {r.rival_steps:,.0f} | {int(r.n)} | "
                                                   f"{signed(r['diff'])} {ci(r.lo, r.hi)} | {p_text(r.p)} | "
                                                   f"{r['where'] if isinstance(r['where'], str) else '— (not placed: no interval below 6 seeds)'} |" if r.rival else
                                                   "none as cheap | — | — | — | — | — |") for _, r in p.iterrows()]
    return markdown(["society design", "LoRA steps per seed", "one-shot rival (best on the selection pool at ≤ its "
                     "steps)", "its steps", "seeds", "Δ = design − rival [95 % CI (sign-flip)]", "p", "where"], lines)


def lineage_where(scale: str) -> str:
    """Where ``continue`` sits against the one-shot frontier at its compute, in words (README)."""
    d = _data(scale)
    if d is None:
        return "not measured yet"
    p = lineage.placements(d["groups"], d["families"]).set_index("arm")
    if CONTINUE not in p.index:
        return "not measured yet"
    r = p.loc[CONTINUE]
    if not isinstance(r["where"], str):
        return f"not placed yet ({int(r['n'])} seeds; an interval needs 6)"
    return (f"{r['where']} the one-shot frontier at its compute ({signed(r['diff'])} {ci(r['lo'], r['hi'])} against "
            f"{label(r['rival'])}, {int(r['n'])} seeds)")


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


TABLES: dict[str, Callable[[str], str]] = {"lineage-primary": lineage_primary, "lineage-secondary": lineage_secondary,
                                           "lineage-compute": lineage_compute, "lineage-placement": lineage_placement,
                                           "lineage-founder-selection": lineage_founder_selection,
                                           "lineage-skills": lineage_skills}
VALUES: dict[str, Callable[[str], str]] = {"lineage-continue-where": lineage_where, "lineage-frontier": lineage_frontier,
                                           "lineage-verdicts": lineage_verdicts, "lineage-held": lineage_held,
                                           "lineage-secondary-said": lineage_secondary_said,
                                           "lineage-archive-held": lambda scale: lineage_held(scale, CONTINUE_ARCHIVE)}
