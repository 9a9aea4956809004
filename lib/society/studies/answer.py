"""The society's answer, study by study, in words written from the data: each study's verdict with its numbers.

- :func:`said`: one study's verdict in words (its pre-registered comparisons grouped by what they found, each with
  its Δ and interval), the sentence that ends the study's cell in notebook 03;
- ``society-front`` (:func:`front`): the README's first screen and notebook 03's first cell, one line a study, each
  its verdict in words and one number, with the folder it is read from; ``society-front-scope`` (:func:`front_scope`),
  the scope of that answer in one clause; ``said-<study>``, a study's verdict in words inside a sentence.

Every phrase follows a verdict computed here from the studies' own tables (win, tie or loss at Holm p < 0.05; an
interval that excludes 0 or holds it), so a new run rewrites the words with the numbers (``python -m lib.tables``).
A study with no verdict at a scale (one seed at ``smoke``, or a study whose pre-registered seeds are not all in) says
so instead. The climb's words are the climb's own (:mod:`lib.society.studies.climb.tables`).
"""
from __future__ import annotations

from typing import Callable

import numpy as np
import pandas as pd

from lib.core.format import ci, num, signed
from lib.society.arms import LINEAGE_PRIMARY, OPERATOR_OFF, REFERENCE
from lib.society.data import (CROSSOVER, LINEAGE, MAIN, STUDY, config_of, first_verdict_folders, reading,
                               society_rows)
from lib.society.studies.climb import tables as climb
from lib.society.studies.frames import interval_word  # noqa: F401  (read from here too)
from lib.society.studies.lineage import comparisons as lineage
from lib.society.studies.skills import comparisons as skills
from lib.society.studies.skills.tables import primary_verdict, skill_rows
from lib.society.studies.study import comparisons as study
from lib.society.studies.study.tables import study_rows
from lib.society.studies.verdict.comparisons import primary_comparisons
from lib.society.studies.verdict.tables import ablation

VERB = {"win": "beats", "tie": "ties", "loss": "loses to"}  # a verdict of a − b as a verb between them
OPERATOR = OPERATOR_OFF  # what switching off each arm of the paper's ablation removes


def number(r) -> str:
    """A comparison's Δ with its 95 % interval (``r``: a line with ``diff, lo, hi``)."""
    return f"{signed(r['diff'])} {ci(r['lo'], r['hi'])}"


def _pairs(t: pd.DataFrame, said: list[str], skip=()) -> str:
    """The comparisons of ``t`` (``arm_a``, ``arm_b``) not in ``skip``, each as "`a` beats `b`", in table order."""
    return ", ".join(f"`{r.arm_a}` {VERB[v]} `{r.arm_b}`" for k, (r, v) in enumerate(zip(t.itertuples(), said))
                     if k not in skip)


def _no_verdict(said: list[str], t: pd.DataFrame) -> str | None:
    """Why a study has no verdict yet, or ``None``: a comparison not decided (its pre-registered seeds not all in, or
    no test at this scale), or one without an interval (under 6 seeds, at ``smoke``)."""
    interim = [s for s in said if s.startswith("none yet")]
    if interim:
        return f"no verdict yet: {interim[0]}"
    bounded = np.isfinite(t["lo"].map(num)) & np.isfinite(t["hi"].map(num))
    if any(s not in VERB for s in said) or not bounded.all():
        return f"no verdict at this scale ({int(t['n'].min())} seed(s): too few for an interval)"
    return None


# ----------------------------------------------------------------------------- one study each


def first_verdict(scale: str, short: bool = False) -> str:
    """The first verdict (``configs/society/``): the seed's society against the bare base and its three pre-registered
    comparisons (Holm), and the paper's ablation inside it."""
    rows, cfg = society_rows(scale, first_verdict_folders(scale)[0], required=False), config_of(MAIN, scale)
    if rows is None or cfg is None:
        return "no data yet"
    ab = ablation(scale).set_index("arm")
    full = ab.loc[REFERENCE]
    base = interval_word(full.base_lo, full.base_hi, ("below", "level with", "above"))
    if base is None:
        return f"no verdict at this scale ({int(full.n)} seed(s): too few for an interval)"
    inside = {}
    for arm, r in ab.drop(index=REFERENCE).iterrows():
        w = interval_word(r.lo, r.hi, ("lowers its accuracy", "does not measurably change it", "raises its accuracy"))
        inside.setdefault(w or "cannot be measured", []).append(OPERATOR.get(arm, f"`{arm}`"))
    ops = "; ".join(f"switching off {' or '.join(v)} {w}" for w, v in inside.items())
    head = (f"the seed's society ends {base} the bare base it starts from (`full` − bare base "
            f"{signed(full.base_mean)} {ci(full.base_lo, full.base_hi)})")
    if short:
        return f"{head}; {ops}"
    t = primary_comparisons(rows, cfg.families)
    said = [study.verdict(num(r["diff"]), num(r.p_holm)) for _, r in t.iterrows()]
    why = _no_verdict(said, t)
    if why:
        return f"{head}; {ops}; its pre-registered comparisons: {why}"
    pre = ", ".join(f"`full` {VERB[v]} `{r.other}` ({number(r)})" for (_, r), v in zip(t.iterrows(), said))
    return (f"{head}; pre-registered, Holm over three: {pre}; in the paper's ablation (each arm − the `full` of its "
            f"folder, raw p), {ops}")


def society_study(scale: str, short: bool = False) -> str:
    """The society study (``configs/society_study/``): its best arm against the best one-shot merge (comparison 1)
    and the five one-switch comparisons, Holm over six."""
    rows = study_rows(scale)
    if rows is None:
        return "no data yet"
    t = study.primary_table(rows)
    said = [study.verdict(num(r["diff"]), num(r.p_holm)) for _, r in t.iterrows()]
    why = _no_verdict(said, t)
    if why:
        return why
    best = t.iloc[0]
    head = (f"its best arm, `{best.arm_a}`, {VERB[said[0]]} the best one-shot merge, `{best.arm_b}` "
            f"({number(best)})")
    wins = [r for (_, r), v in zip(t.iterrows(), said) if v == "win"]
    if short:
        lifts = [f"`{r.arm_a}`" for r in wins if r.arm_a != REFERENCE]
        return (f"{', '.join(lifts[:-1])} and {lifts[-1]} each beat the design one switch from them; " if len(lifts) > 1
                else "") + head
    return f"{head}; {_pairs(t, said, skip=(0,))} (Holm over six)"


def skill_combining(scale: str, short: bool = False) -> str:
    """The skill-combining study (``configs/society_crossover/``): its best new design against the bare base and
    the best one-shot model, and its other comparisons, Holm over five."""
    rows, cfg = skill_rows(scale), config_of(CROSSOVER, scale)
    if rows is None:
        return "no data yet"
    t = skills.primary_table(rows, list(cfg.families))
    said = [primary_verdict(r, cfg) for _, r in t.iterrows()]
    why = _no_verdict(said, t)
    if why:
        return why
    base, one = t.iloc[0], t.iloc[1]
    head = (f"its best design, `{base.arm_a}`, {VERB[said[0]]} the bare base ({number(base)}) and {VERB[said[1]]} the "
            f"best one-shot model, `{one.arm_b}`, one LoRA trained once on the same answers ({number(one)})")
    return head if short else f"{head}; {_pairs(t, said, skip=(0, 1))} (Holm over five)"


def lineage_study(scale: str, short: bool = False) -> str:
    """The lineage study (``configs/society_lineage/``): ``continue`` against one-shot training at a lineage's steps
    (comparison 3), its other comparisons (Holm over four), and every society design against the one-shot frontier."""
    d, cfg = lineage.load_data(scale), config_of(LINEAGE, scale)
    if d is None or d["rows"] is None:
        return "no data yet"
    t = lineage.primary(d["rows"], d["families"])
    said = [primary_verdict(r, cfg) for _, r in t.iterrows()]
    why = _no_verdict(said, t)
    if why:
        return why
    k = next(i for i, (_, a, b) in enumerate(LINEAGE_PRIMARY) if b.endswith("@lineage"))
    r = t.iloc[k]
    head = f"`{r.arm_a}` {VERB[said[k]]} one-shot training at a lineage's LoRA steps, `{r.arm_b}` ({number(r)})"
    p = lineage.placements(d["groups"], d["families"]).dropna(subset=["where"])
    if len(p):
        n = p["where"].value_counts()
        head += (f"; of {len(p)} society designs, {int(n.get(lineage.ABOVE, 0)) or 'none'} "
                 f"{'sits' if n.get(lineage.ABOVE, 0) <= 1 else 'sit'} above the one-shot frontier at its own compute")
    return head if short else f"{head}; {_pairs(t, said, skip=(k,))} (Holm over four)"


def climb_study(scale: str, short: bool = False) -> str:
    """The climb (``configs/society_climb/``): :func:`lib.society.studies.climb.tables.climb_front` (``short``) or
    :func:`~lib.society.studies.climb.tables.climb_said`."""
    return climb.climb_front(scale) if short else climb.climb_said(scale)


def _listed(folders) -> str:
    return ", ".join(f"`{f}/`" for f in folders)


def _read_from(*folders: str) -> Callable[[str], str]:
    """The folders a study's words are read from at a scale, as the README names them: each its seat-fair re-run
    once that replaces it (:func:`lib.society.data.reading`)."""
    return lambda scale: _listed(reading(f, scale) for f in folders)


# (name, the folder(s) it is read from at a scale, writer), in the order the studies ran; the climb names its own
STUDIES: tuple[tuple[str, Callable[[str], str], Callable[..., str]], ...] = (
    ("first verdict", lambda scale: _listed(first_verdict_folders(scale)), first_verdict),
    ("society study", _read_from(STUDY), society_study),
    ("skill-combining study", _read_from(CROSSOVER), skill_combining),
    ("lineage study", _read_from(LINEAGE), lineage_study),
    ("the climb", lambda scale: "", climb_study),
)


def seeds(scale: str) -> list[int]:
    """The seeds each study's comparisons pair (their ``n``), every study at ``scale`` together."""
    out = [int(n) for n in ablation(scale)["n"]] if society_rows(scale, first_verdict_folders(scale)[0], required=False) is not None \
        else []
    if (rows := study_rows(scale)) is not None:
        out += [int(n) for n in study.primary_table(rows)["n"]]
    if (rows := skill_rows(scale)) is not None:
        out += [int(n) for n in skills.primary_table(rows, list(config_of(CROSSOVER, scale).families))["n"]]
    if (d := lineage.load_data(scale)) is not None and d["rows"] is not None:
        out += [int(n) for n in lineage.primary(d["rows"], d["families"])["n"]]
    if (d := climb.said_data(scale)[0]) is not None:
        out += [int(n) for n in climb.climb.primary(d["rows"], d["cfg"].rung)["n"]]
    return out


def front_scope(scale: str) -> str:
    """The scope of the answer in one clause: the model, the tasks, the seeds a comparison pairs."""
    n = seeds(scale)
    span = "no seeds yet" if not n else f"{min(n)} seeds a comparison" if min(n) == max(n) else \
        f"{min(n)}–{max(n)} seeds a comparison"
    return (f"LoRA agents on {climb.base_size()} character-level model on a CPU, three synthetic task families a "
            f"program verifies, {span}; no language model tested")


def said(study: str, scale: str) -> str:
    """Study ``study``'s verdict in words (a name of :data:`STUDIES`), with the folder(s) it is read from: the
    sentence that ends the study's cell in notebook 03."""
    name, folders, fn = next(s for s in STUDIES if s[0] == study)
    where = folders(scale)
    return f"**The verdict in words**{f' ({where})' if where else ''}: {fn(scale)}."


def front(scale: str) -> str:
    """One line a study: its verdict in words and one number (the README's first screen, notebook 03's first
    cell)."""
    return "".join(f"- **{name[0].upper()}{name[1:]}**" + (f" ({folders(scale)})" if folders(scale) else "")
                   + f": {fn(scale, short=True)}.\n" for name, folders, fn in STUDIES)


TABLES: dict[str, Callable[[str], str]] = {"society-front": front}
VALUES: dict[str, Callable[[str], str]] = {"society-front-scope": front_scope, "said-first-verdict": first_verdict,
                                           "said-society-study": society_study, "said-skills": skill_combining,
                                           "said-lineage": lineage_study}
