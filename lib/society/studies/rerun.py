"""The seat-fair re-runs (issue 53 §3): each re-run study's registered comparisons before and after, side by side.

*Before* is the committed folder, selected with the seat-biased consensus (its rows read by today's code); *after* is
its re-run (:data:`lib.society.data.FAIR`: the same keys and seeds in a folder of its own, on the seat-fair
operators; a seed whose arms ran on two float paths is dropped, :func:`lib.society.data.fair_rows`). Every line gives
both sides' seeds, Δ = a − b with its 95 % CI (sign-flip inversion) and the raw sign-flip p it agrees with, the
corrected p the verdict reads where one is registered, and the verdict: ``win``
(a above b) or ``loss`` at that p < 0.05, else ``tie`` (:func:`lib.society.studies.study.comparisons.verdict`). An
after side short of its registered seeds shows its interim numbers and no verdict.

- ``rerun-society``: the first verdict's three primary comparisons (Holm over three, as registered in
  ``configs/society/cpu.yaml``) and the paper's ablation (each arm − the ``full`` of its folder, raw p), from
  ``society_fair/`` and ``society_recombination_fair/``;
- ``rerun-study``: the grounding effect, the society study's ``full`` − ``no_grounding`` (registered as one of six
  under Holm; only it is re-run, so its *after* p is Bonferroni's over the six, an upper bound on Holm's), with the
  grounding knob and elitism (raw p), from ``society_study_fair/``.

The climb's before/after is the climb's own (:mod:`lib.society.studies.climb.tables`, ``climb-before-after``).
"""
from __future__ import annotations

from typing import Callable

import pandas as pd

from lib.core.format import NO_DATA, ci, markdown, num, p_text, signed
from lib.society.arms import BEST_MERGE, NO_GROUNDING, REFERENCE
from lib.society.config import arm_seeds
from lib.society.data import FAIR, MAIN, RECOMBINATION, STUDY, config_of, fair_rows, society_rows
from lib.society.studies.study.comparisons import PRIMARY as STUDY_PRIMARY, SECONDARY, primary_table, \
    secondary_table, verdict
from lib.society.studies.verdict.comparisons import method_summary, primary_comparisons
from lib.society.studies.verdict.tables import ablation_of

# One comparison a line: ``comparison`` (its label, the same before and after), ``other`` (the arm b resolved: the best
# one-shot merge is chosen on val in each folder), ``correction``, ``planned`` (registered seeds), ``n`` (seeds in),
# Δ = a − b with its 95 % CI, ``p_raw``: the sign-flip p the CI agrees with, and ``p``: the p its verdict reads
LINE = ["comparison", "other", "correction", "planned", "n", "diff", "lo", "hi", "p_raw", "p"]
GROUNDING = f"{REFERENCE} − {NO_GROUNDING}"  # the society study's grounding comparison, as STUDY_PRIMARY labels it
if not any(label == GROUNDING for label, *_ in STUDY_PRIMARY):
    raise RuntimeError(f"lib.society.studies.rerun: the society study registers no comparison {GROUNDING!r}")


# ----------------------------------------------------------------------------- the lines of each study


def _quoted(label: str, other: str) -> str:
    """A first-verdict label ``a − b`` as the pages name it: arm a and the resolved arm b (``other``) in backticks,
    except the best one-shot merge, which each folder chooses on val (:data:`lib.society.arms.BEST_MERGE`)."""
    a, b = label.split(" − ", 1)
    return f"`{a}` − " + (f"the {b}" if b == BEST_MERGE else f"`{other}`")


def _summary(rows: pd.DataFrame | None, families) -> pd.DataFrame | None:
    return None if rows is None else method_summary(rows, families).set_index("method")


def society_lines(main: pd.DataFrame, breeding: pd.DataFrame | None, families, planned: Callable[[str], int]
                  ) -> pd.DataFrame:
    """The first verdict's registered comparisons on the rows ``main`` (``configs/society/``'s arms) and ``breeding``
    (the recombination folder's ``full`` and ``no_sex``; ``None`` without them): its three primary comparisons, the
    best one-shot merge chosen on val within ``main`` (Holm over three), then the ablation (raw p). ``planned``:
    an arm's registered seeds. Columns :data:`LINE`."""
    prim = primary_comparisons(main, families)
    lines = [{"comparison": _quoted(r.comparison, r.other), "other": r.other, "correction": "Holm over three",
              "planned": planned(MAIN),
              "n": r.n, "diff": r["diff"], "lo": r.lo, "hi": r.hi, "p_raw": r.p, "p": r.p_holm}
             for _, r in prim.iterrows()]
    ab = ablation_of(_summary(main, families), _summary(breeding, families))
    for _, r in ab[~ab["arm"].isin([REFERENCE, NO_GROUNDING])].iterrows():  # no_grounding: primary comparison 1
        lines.append({"comparison": f"`{r.arm}` − the `{REFERENCE}` of its folder", "other": REFERENCE,
                      "correction": "raw",
                      "planned": planned(RECOMBINATION if r.folder.startswith(RECOMBINATION) else MAIN), "n": r.n,
                      "diff": r["mean"], "lo": r.lo, "hi": r.hi, "p_raw": r.p, "p": r.p})
    return pd.DataFrame(lines, columns=LINE)


def study_lines(rows: pd.DataFrame, cfg, fair: bool) -> pd.DataFrame:
    """The grounding effect on the society study's rows: ``full`` − ``no_grounding`` (``fair``: Bonferroni over the
    study's six, the other five not re-run; else its registered Holm p over six), then the grounding knob's and
    elitism's secondary comparisons among the re-run's arms (raw p). ``cfg``: the re-run's config (the arms and
    registered seeds). Columns :data:`LINE`."""
    six = len(STUDY_PRIMARY)
    g = primary_table(rows).set_index("comparison").loc[GROUNDING]
    p = min(1.0, six * num(g.p)) if fair else num(g.p_holm)
    lines = [{"comparison": f"`{REFERENCE}` − `{NO_GROUNDING}`", "other": NO_GROUNDING, "correction": f"{'Bonferroni' if fair else 'Holm'}"
              f" over {six}", "planned": len(arm_seeds(cfg, REFERENCE)), "n": g.n, "diff": g["diff"], "lo": g.lo,
              "hi": g.hi, "p_raw": num(g.p), "p": p}]
    knob = [line for line in SECONDARY if {line[0], line[1]} <= set(cfg["arms"])]
    for _, r in secondary_table(rows, knob).iterrows():
        lines.append({"comparison": f"`{r.arm_a}` − `{r.arm_b}`", "other": r.arm_b, "correction": "raw",
                      "planned": min(len(arm_seeds(cfg, a)) for a in (r.arm_a, r.arm_b)), "n": r.n,
                      "diff": r["diff"], "lo": r.lo, "hi": r.hi, "p_raw": r.p, "p": r.p})
    return pd.DataFrame(lines, columns=LINE)


# ----------------------------------------------------------------------------- before and after


def word(r) -> str:
    """A line's verdict; ``none yet (n of N seeds)`` while it has fewer than its registered seeds."""
    if r.n < r.planned:
        return f"none yet ({int(r.n)} of {int(r.planned)} seeds)"
    return verdict(num(r["diff"]), num(r.p))


def _delta(r) -> str:
    """Δ [95 % CI], naming arm b where the label does not (the best one-shot merge: chosen in each folder)."""
    named = f"`{r.other}`" in r.comparison
    return f"{signed(r['diff'])} {ci(r.lo, r.hi)}" + ("" if named else f" (b: `{r.other}`)")


def _p(r) -> str:
    """The raw sign-flip p (the one the 95 % CI agrees with) and, where the line registers a correction, the corrected
    p its verdict reads."""
    raw = p_text(r.p_raw)
    return raw if r.correction == "raw" else f"{raw}; {r.correction.split()[0]} {p_text(r.p)}"


def side_by_side(before: pd.DataFrame, after: pd.DataFrame | None) -> str:
    """The lines of ``before`` and ``after`` (:data:`LINE`; ``None``: not started) matched by comparison, as the
    pages show them; ``moved?`` says whether a decided verdict changed."""
    after = (after if after is not None else pd.DataFrame(columns=LINE)).set_index("comparison", drop=False)
    out = []
    for _, b in before.iterrows():
        a = after.loc[b.comparison] if b.comparison in after.index else None
        bw = word(b)
        cells = [b.comparison, b.correction, str(int(b.n)), _delta(b), _p(b), bw]
        if a is None or not a.n:
            cells += ["0", "—", "—", "no run yet" if a is None else word(a), "—"]
        else:
            aw = word(a)
            moved = "—" if aw.startswith("none yet") or aw == "—" else "no" if aw == bw else f"yes: {bw} → {aw}"
            cells += [str(int(a.n)), _delta(a), _p(a), aw, moved]
        out.append("| " + " | ".join(cells) + " |")
    return markdown(["comparison (a − b)", "p read", "seeds before", "before: Δ [95 % CI]", "p (raw; corrected)",
                     "verdict", "seeds after", "after (seat-fair): Δ [95 % CI]", "p (raw; corrected)", "verdict",
                     "moved?"], out)


def standing(before: pd.DataFrame | None, after: pd.DataFrame | None, mixed: list[int], folder: str) -> str:
    """Where a re-run stands, in words: not started; how many seeds of its first comparison are in (and which seeds
    must be re-run whole on one float path); or, every line decided, which verdicts moved (``before``, ``after``:
    the lines of :func:`side_by_side`)."""
    if after is None:
        return f"`{folder}/` not started"
    first = after.iloc[0]
    text = f"`{folder}/` has {int(first.n)} of {int(first.planned)} seeds"
    if mixed:
        text += f" (seeds {', '.join(map(str, mixed))} ran on two float paths and must be re-run whole on one)"
    words = {r.comparison: word(r) for _, r in after.iterrows() if not word(r).startswith("none yet")}
    if before is None or not words:
        return text + ", no verdict re-decided yet"
    moved = [f"{r.comparison} ({word(r)} → {words[r.comparison]})" for _, r in before.iterrows()
             if r.comparison in words and words[r.comparison] != word(r)]
    pending = [r.comparison for _, r in before.iterrows() if r.comparison not in words]
    return (text + "; " + ("verdicts moved: " + ", ".join(moved) if moved else "no verdict moved")
            + (f" ({len(words)} of {len(before)} re-decided; not yet: {', '.join(pending)})" if pending else ""))


# ----------------------------------------------------------------------------- the studies' data


def _society(scale: str, fair: bool) -> pd.DataFrame | None:
    cfg = config_of(FAIR[MAIN] if fair else MAIN, scale)
    if cfg is None:
        return None
    if fair:
        main, _ = fair_rows(scale, MAIN)
        breeding, _ = fair_rows(scale, RECOMBINATION)
    else:
        main = society_rows(scale, MAIN, finished=True, required=False)
        breeding = society_rows(scale, RECOMBINATION, finished=True, required=False)
    if main is None:
        return None
    recombination = config_of(FAIR[RECOMBINATION] if fair else RECOMBINATION, scale)

    def planned(study: str) -> int:
        c = recombination if study == RECOMBINATION else cfg
        return len(arm_seeds(c, REFERENCE)) if c is not None else 0
    return society_lines(main, breeding, list(cfg.families), planned)


def _study(scale: str, fair: bool) -> pd.DataFrame | None:
    cfg = config_of(FAIR[STUDY], scale)
    rows = fair_rows(scale, STUDY)[0] if fair else society_rows(scale, STUDY, finished=True, required=False)
    if cfg is None or rows is None or not {REFERENCE, NO_GROUNDING} <= set(rows["arm"]):
        return None
    return study_lines(rows, cfg, fair)


def rerun_society(scale: str) -> str:
    """``rerun-society``: the first verdict's registered comparisons before and after (:func:`side_by_side`)."""
    before = _society(scale, fair=False)
    return NO_DATA if before is None else side_by_side(before, _society(scale, fair=True))


def rerun_study(scale: str) -> str:
    """``rerun-study``: the grounding effect before and after (:func:`side_by_side`)."""
    before = _study(scale, fair=False)
    return NO_DATA if before is None else side_by_side(before, _study(scale, fair=True))


def society_standing(scale: str) -> str:
    """``rerun-society`` (a value): where the first verdict's re-run stands (:func:`standing`)."""
    return standing(_society(scale, fair=False), _society(scale, fair=True), fair_rows(scale, MAIN)[1], FAIR[MAIN])


def study_standing(scale: str) -> str:
    """``rerun-study`` (a value): where the grounding effect's re-run stands (:func:`standing`)."""
    return standing(_study(scale, fair=False), _study(scale, fair=True), fair_rows(scale, STUDY)[1], FAIR[STUDY])


TABLES: dict[str, Callable[[str], str]] = {"rerun-society": rerun_society, "rerun-study": rerun_study}
VALUES: dict[str, Callable[[str], str]] = {"rerun-society": society_standing, "rerun-study": study_standing}
