"""The climb's tables (:mod:`lib.society.studies.climb.comparisons`), written into the README and ``docs/climb.md``.

- ``climb-primary``: the four pre-registered comparisons, Holm, each verdict *interim* until its seeds are in;
- ``climb-arms``: every arm's chosen agent on the climbed rung (per family), the next rung, the easy level, and
  where its run started;
- ``climb-curve``: the chosen agent's climbed-rung accuracy after each round;
- ``climb-compute``: samples, verifier calls, optimizer steps and tokens per arm and seed;
- ``climb-kept``: answers kept per round, and the share of them that is wrong;
- ``climb-secondary``: the pre-registered secondary comparisons (raw p): the gold ceiling, the easy level against
  the start, the share kept wrong, pass@k, the next rung;
- ``climb-pilot``: the pilot that sized ``n_hints`` (``data/<scale>/society_climb_pilot/``): the generalists'
  start on the rung and what the population's samples let the verifier keep in round 1.
"""
from __future__ import annotations

import json
from typing import Callable

import numpy as np

from lib.core.format import NO_DATA, ci, fmt, markdown, p_text, signed
from lib.core.paths import config_path
from lib.engines.models import TINY_DIR
from lib.society.arms import (CLIMB, CLIMB_GOLD, CLIMB_HINTS, CLIMB_PRIMARY, CLIMB_SINGLE, CLIMB_SINGLE_VOTE, CLIMB_VOTE,
                              SPECS, label, order)
from lib.society.studies.study.comparisons import paired
from lib.society.studies.climb import comparisons as climb


def _data(scale: str, experiment: str | None = None) -> dict | None:
    """The study's data: ``experiment``'s folder, by default the one its tables read now (:func:`climb.current`)."""
    return climb.load_data(scale, experiment or climb.current(scale))


def seeds_planned(cfg, arm: str) -> int:
    return len(cfg.seeds_of(arm)) if arm in cfg.arms else 0


def _of_planned(n: int, cfg, *arms: str) -> str:
    """``n`` seeds, as ``n of N so far`` while fewer than the ``N`` its run arms register (the fewest of them)."""
    planned = min((seeds_planned(cfg, a) for a in arms if a in cfg.arms), default=0)
    return f"{n} of {planned} so far" if 0 < n < planned else str(n)


def verdict(r, cfg) -> str:
    """A primary comparison's verdict: *win*, *tie* or *loss* (Holm p < 0.05) once both arms have every
    pre-registered seed, else *none yet* with how many seeds are in."""
    need = min(seeds_planned(cfg, r["arm_a"]), seeds_planned(cfg, r["arm_b"]))
    if r["n"] < need or need == 0:
        return f"none yet ({int(r['n'])} of {need} seeds)"
    if not np.isfinite(r["p_holm"]) or r["p_holm"] >= 0.05:
        return "tie"
    return "win" if r["diff"] > 0 else "loss"


def climb_primary(scale: str) -> str:
    d = _data(scale)
    if d is None:
        return NO_DATA
    t = climb.primary(d["rows"], d["cfg"].rung)
    lines = [f"| {k + 1}. {r.comparison} | {int(r.n)} | {fmt(r.a_acc)} | {fmt(r.b_acc)} | {signed(r['diff'])} "
             f"{ci(r.lo, r.hi)} | {p_text(r.p)} | {p_text(r.p_holm)} | {verdict(r, d['cfg'])} |"
             for k, r in t.iterrows()]
    return markdown(["comparison (a − b)", "seeds", "a", "b", "Δ [95 % CI, sign-flip]", "p", "Holm p", "verdict"],
                    lines)


def _primary_cells(d) -> dict:
    """``{comparison: (Δ [CI], Holm p, verdict)}`` of one folder's data ``d``."""
    t = climb.primary(d["rows"], d["cfg"].rung)
    return {r.comparison: (f"{signed(r['diff'])} {ci(r.lo, r.hi)}", p_text(r.p_holm), verdict(r, d["cfg"]), int(r.n))
            for _, r in t.iterrows()}


def climb_before_after(scale: str) -> str:
    """The four primary comparisons before (the committed folder, selected with the seat-biased consensus; its rows
    read by today's code) and after (the seat-fair re-run), side by side, and whether the verdict moved."""
    before, after = _data(scale, climb.CLIMB), _data(scale, climb.FAIR)
    if before is None:
        return NO_DATA
    b = _primary_cells(before)
    a = _primary_cells(after) if after is not None and after["experiment"] == climb.FAIR else {}
    lines = []
    for k, (name, *_) in enumerate(CLIMB_PRIMARY):
        bd, bp, bv, bn = b[name]
        ad, ap, av, an = a.get(name, ("—", "—", "no run yet", 0))
        moved = ("—" if av.startswith(("none yet", "no run")) else "no" if av == bv else f"yes: {bv} → {av}")
        lines.append(f"| {k + 1}. {name} | {bn} | {bd} | {bp} | {bv} | {an} | {ad} | {ap} | {av} | {moved} |")
    return markdown(["comparison (a − b)", "seeds before", "before: Δ [95 % CI]", "Holm p", "verdict",
                     "seeds after", "after (seat-fair): Δ [95 % CI]", "Holm p", "verdict", "moved?"], lines)


def climb_tie_picks(scale: str) -> str:
    """How many of the committed population runs' chosen agents changed with the tie rule: an exact tie on the
    selection pool, which went to the lowest seat, is now the tied learners' mean."""
    d = _data(scale, climb.CLIMB)
    if d is None:
        return "no data yet"
    ch = climb.chosen(d["rows"])
    pop = ch[ch["arm"].isin([a for a in ch["arm"].unique() if not SPECS[a].single])]
    tied = pop[pop["tied"] > 1]
    runs = ", ".join(f"`{r.arm}` seed {int(r.seed)}" for r in tied.itertuples())
    return f"{len(tied)} of {len(pop)} population runs ({runs or 'none'})"


def climb_rerun(scale: str) -> str:
    """Where the seat-fair re-run stands: its seeds in (every primary arm finished) and, once all are in, which
    verdicts moved."""
    before, after = _data(scale, climb.CLIMB), _data(scale, climb.FAIR)
    if before is None or after is None or after["experiment"] != climb.FAIR:
        return "not started"
    b, a = _primary_cells(before), _primary_cells(after)
    n, need = min(c[3] for c in a.values()), len(after["cfg"].seed_list())
    if after["mixed_seeds"]:  # dropped by the study: their arms ran on different float paths
        return (f"{n} of {need} seeds re-run so far; seeds {after['mixed_seeds']} ran on two float paths and must be "
                f"re-run on one")
    if n < need:
        return f"{n} of {need} seeds re-run so far, no verdict re-decided yet"
    moved = [f"{k + 1} ({b[name][2]} → {a[name][2]})" for k, (name, *_) in enumerate(CLIMB_PRIMARY)
             if a[name][2] != b[name][2]]
    return f"all {need} seeds re-run; " + ("verdicts moved: " + ", ".join(moved) if moved else "no verdict moved")


def climb_moved(scale: str) -> str:
    """What the re-run changed, in words: which verdicts moved (none, or each) and the comparison whose Δ moved most,
    before → after."""
    before, after = _data(scale, climb.CLIMB), _data(scale, climb.FAIR)
    if before is None or after is None or after["experiment"] != climb.FAIR:
        return "nothing yet: the re-run has no finished seed"
    b = climb.primary(before["rows"], before["cfg"].rung).set_index("comparison")
    a = climb.primary(after["rows"], after["cfg"].rung).set_index("comparison")
    cells_b, cells_a = _primary_cells(before), _primary_cells(after)
    moved = [f"{k + 1} ({cells_b[n][2]} → {cells_a[n][2]})" for k, (n, *_) in enumerate(CLIMB_PRIMARY)
             if cells_a[n][2] != cells_b[n][2]]
    k, name = max(enumerate(b.index), key=lambda kn: abs(a.loc[kn[1], "diff"] - b.loc[kn[1], "diff"]))
    _, arm_a, arm_b = CLIMB_PRIMARY[k]
    return (("verdicts moved: " + ", ".join(moved) if moved else "no verdict moved")
            + f" (on {int(a['n'].min())} of {len(after['cfg'].seed_list())} seeds); the Δ that moved most is comparison "
            f"{k + 1}, {name}: {signed(b.loc[name, 'diff'])} before, {signed(a.loc[name, 'diff'])} "
            f"{ci(a.loc[name, 'lo'], a.loc[name, 'hi'])} after (Holm p {p_text(a.loc[name, 'p_holm'])}; `{arm_a}` "
            f"{fmt(b.loc[name, 'a_acc'])} → {fmt(a.loc[name, 'a_acc'])}, `{arm_b}` {fmt(b.loc[name, 'b_acc'])} → "
            f"{fmt(a.loc[name, 'b_acc'])})")


def climb_why(scale: str) -> str:
    """The pre-registered secondary comparisons of issue 53 §4 (raw p): what the population adds beyond its pick
    (``climb_single@child`` − ``climb``), what selection adds (``climb@lineages`` − ``climb``), and the last
    population's ensemble read-out against one learner (ensemble − ``climb_single``); beside them the pick's gain
    (the chosen learner − its population's mean) of each population arm."""
    d = _data(scale, climb.FAIR)
    if d is None or d["experiment"] != climb.FAIR:
        return NO_DATA
    t, cfg = climb.why(d["rows"], d["cfg"].rung), d["cfg"]
    lines = [f"| {r.comparison} | {_of_planned(int(r.n), cfg, r.arm_a, r.arm_b)} | {fmt(r.a_acc)} | {fmt(r.b_acc)} | "
             + (f"{signed(r['diff'])} {ci(r.lo, r.hi)} | {p_text(r.p)} |" if r.n else "no runs yet | — |")
             for _, r in t.iterrows()]
    return markdown(["comparison (a − b), rung-1 test after the last round", "seeds", "a", "b",
                     "Δ [95 % CI, sign-flip]", "p (raw)"], lines)


SECONDARY = {"rung": "rung {r} after the last round", "forgetting": "easy level: after the last round − start",
             "wrong": "share of the last round's kept answers that is wrong",
             "pass": "pass@k on the last round's climb prompts (learners' mean)", "next": "rung {n} (no hints there)"}


def climb_secondary(scale: str) -> str:
    """The pre-registered secondary comparisons (raw p; no verdicts)."""
    d = _data(scale)
    if d is None:
        return NO_DATA
    rung = d["cfg"].rung
    t = climb.secondary(d["rows"], rung)
    lines = [f"| {SECONDARY[r.measure].format(r=rung, n=rung + 1)} | "
             + (f"{label(r.arm_a)} | " if r.arm_a == r.arm_b else f"{label(r.arm_a)} − {label(r.arm_b)} | ")
             + f"{int(r.n)} | {fmt(r.a_acc)} | {fmt(r.b_acc)} | {signed(r.diff)} {ci(r.lo, r.hi)} | {p_text(r.p)} |"
             for r in t.itertuples()]
    return markdown(["measure", "arm(s) (a − b)", "seeds", "a", "b", "Δ [95 % CI, sign-flip]", "p (raw)"], lines)


def climb_arms(scale: str) -> str:
    d = _data(scale)
    if d is None:
        return NO_DATA
    cfg = d["cfg"]
    t = climb.arm_table(d["rows"], cfg.rung, cfg.families)
    lines = [f"| {label(r.arm)} | {int(r.n)} | {fmt(r.start)} | {fmt(r.rung)} {ci(r.lo, r.hi)} | "
             + " | ".join(fmt(getattr(r, f)) for f in cfg.families) + f" | {fmt(r.next)} | {fmt(r.easy)} |"
             for r in t.itertuples()]
    return markdown(["arm", "seeds", f"rung {cfg.rung}, start", f"rung {cfg.rung}, end [95 % CI (t)]",
                     *cfg.families, f"rung {cfg.rung + 1}", "easy level (forgetting)"], lines)


def climb_curve(scale: str) -> str:
    d = _data(scale)
    if d is None:
        return NO_DATA
    c = climb.curve(d["rows"], d["cfg"].rung)
    rounds = sorted(c["round"].unique())
    lines = []
    for arm in order(c["arm"].unique()):
        g = c[c["arm"] == arm].set_index("round")
        lines.append(f"| {label(arm)} | " + " | ".join(fmt(g.loc[t, "mean"]) if t in g.index else "—" for t in rounds)
                     + " |")
    return markdown(["arm", *(f"after round {t}" if t else "start" for t in rounds)], lines)


def climb_compute(scale: str) -> str:
    d = _data(scale)
    if d is None:
        return NO_DATA
    t = climb.compute_table(d["rows"], d["work"])
    lines = [f"| {label(r.arm)} | {int(r.n)} | {r.samples:,.0f} | {r.verifier_calls:,.0f} | {r.train_steps:,.0f} | "
             f"{getattr(r, 'train_tokens', float('nan')):,.0f} | {getattr(r, 'gen_tokens', float('nan')):,.0f} |"
             for r in t.itertuples()]
    return markdown(["arm", "seeds", "samples", "loop verifier calls", "LoRA steps (founders, generalists incl.)",
                     "tokens trained in rounds", "tokens generated"], lines)


def climb_kept(scale: str) -> str:
    d = _data(scale)
    if d is None:
        return NO_DATA
    k = climb.kept(d["rows"])
    lines = [f"| {label(r.arm)} | {int(r.generation) + 1} | {fmt(r.kept_n, 1)} | {fmt(r.kept_wrong_share)} |"
             for r in k.itertuples()]
    return markdown(["arm", "round", "answers kept (mean)", "share wrong"], lines)


def climb_verdicts(scale: str) -> str:
    """The four comparisons by verdict in one phrase, or how many seeds are in."""
    d = _data(scale)
    if d is None:
        return "no data yet"
    t, cfg = climb.primary(d["rows"], d["cfg"].rung), d["cfg"]
    said = [verdict(r, cfg) for _, r in t.iterrows()]
    if any(s.startswith("none yet") for s in said):
        need = max(min(seeds_planned(cfg, r["arm_a"]), seeds_planned(cfg, r["arm_b"])) for _, r in t.iterrows())
        return f"no verdict yet ({int(t['n'].min())} of {need} seeds in)"
    parts = [f"{name}: " + (", ".join(f"{k + 1} ({t.comparison[k]})" for k, s in enumerate(said) if s == w) or "none")
             for w, name in (("win", "wins"), ("tie", "ties"), ("loss", "losses"))]
    return "; ".join(parts) + f" (Holm p < 0.05, on {int(t['n'].min())} seeds)"


def climb_margins(scale: str) -> str:
    """Each primary comparison in words and numbers: its arms' means, Δ with its interval, Holm p."""
    d = _data(scale)
    if d is None:
        return "no data yet"
    t = climb.primary(d["rows"], d["cfg"].rung)
    return "; ".join(f"({k + 1}) {r.comparison}: {fmt(r.a_acc)} vs {fmt(r.b_acc)}, Δ {signed(r['diff'])} "
                     f"{ci(r.lo, r.hi)}, Holm p {p_text(r.p_holm)}" for k, r in t.iterrows())


def climb_cost(scale: str) -> str:
    """The study's wall time from its finished shards' progress files (one thread each)."""
    d = _data(scale)
    if d is None:
        return "no data yet"
    w = d["work"]
    return (f"{w['wall_s'].sum() / 3600:.1f} core-hours in {len(w)} finished runs (one thread each; a seed's founders "
            f"and generalists counted once, in the run that trained them)")


def climb_pilot(scale: str) -> str:
    """Per pilot setting (``n_hints``): the 4 generalists' rung-1 greedy test accuracy (range over them, overall and
    per family), their pass@8 on round 1's climb prompts (range) and the answers the verifier kept in round 1 per
    family (of the climb prompts per family)."""
    folders = sorted(climb.pilot_folders(scale), key=lambda f: int(f.name.removeprefix("n_hints")))
    if not folders:
        return NO_DATA
    lines, fams = [], None
    for f in folders:
        rows = climb.pilot_rows(f)
        fams = [m.removeprefix("kept_n_") for m in rows["metric"].unique() if m.startswith("kept_n_")]
        start = learners_at(rows, 0)
        span = lambda col: f"{start[col].min():.2f}–{start[col].max():.2f}"  # noqa: E731
        kept = rows[(rows["generation"] == 0) & rows["metric"].str.startswith("kept_n_")].set_index("metric")["value"]
        lines.append(f"| {f.name.removeprefix('n_hints')} | {span('test_rung1')} | "
                     + " | ".join(span(f"test_{x}_rung1") for x in fams) + f" | {span('pass_at_k')} | "
                     + " / ".join(f"{kept[f'kept_n_{x}']:.0f}" for x in fams) + " |")
    return markdown(["hints per family", "rung-1 greedy (4 generalists)", *fams, "pass@8 on round 1's prompts",
                     "kept in round 1 (" + " / ".join(fams) + ")"], lines)


def learners_at(rows, t: int):
    return climb.learners(rows[rows["generation"] == t])


TABLES: dict[str, Callable[[str], str]] = {"climb-pilot": climb_pilot, "climb-primary": climb_primary, "climb-arms": climb_arms,
                                           "climb-curve": climb_curve, "climb-compute": climb_compute,
                                           "climb-kept": climb_kept, "climb-secondary": climb_secondary,
                                           "climb-before-after": climb_before_after, "climb-why": climb_why}
VALUES: dict[str, Callable[[str], str]] = {"climb-verdicts": climb_verdicts, "climb-margins": climb_margins,
                                           "climb-tie-picks": climb_tie_picks, "climb-rerun": climb_rerun, "climb-moved": climb_moved,
                                           "climb-cost": climb_cost}




# ----------------------------------------------------------------------------- the climb in words (issue 54)
# The README's, docs/climb.md's and notebook 03's sentences on the climb, each written from the data: the verdicts
# in words with their numbers (climb-said, climb-front), the scope (climb-scope), the compute as counted
# (climb-matched), the gold ceiling as tested (climb-gold) and the vote arms against the hints, an unregistered
# secondary (climb-vote-stall). They read the seat-fair re-run (configs/society_climb_fair/) once its four verdicts
# are in, else the committed run, and name the folder they read.



def said_data(scale: str) -> tuple[dict | None, str]:
    """The data the climb's words speak of (the folder its tables read, :func:`climb.current`: the seat-fair re-run
    once every seed of its primary comparisons is in, else the committed folder), and how they name it: the committed
    folder as the run whose verdicts the re-run re-decides, with how many of its seeds are in."""
    d = climb.load_data(scale, climb.current(scale))
    if d is None:
        return None, ""
    if d["experiment"] == climb.FAIR:
        return d, f"`{climb.FAIR}/`, the seat-fair re-run"
    fair = climb.load_data(scale, climb.FAIR)
    if not config_path(climb.FAIR, scale).is_file():
        return d, f"`{climb.CLIMB}/`"
    n = 0 if fair is None or fair["experiment"] != climb.FAIR else int(
        climb.primary(fair["rows"], fair["cfg"].rung)["n"].min())
    planned = max(seeds_planned(d["cfg"], a) for _, a, _b in CLIMB_PRIMARY)
    return d, (f"`{climb.CLIMB}/`, the committed run; its seat-fair re-run, `{climb.FAIR}/`, which re-decides its "
               f"verdicts, has {n} of {planned} seeds in")


# each primary comparison in words: {verdict: phrase}; {d} is its Δ with the interval, {lo}/{hi} the interval's ends
SAID = (
    {"win": "the population climbs further than one learner given its samples and LoRA steps ({d})",
     "loss": "one learner given the population's samples and LoRA steps climbs further than the population ({d}), "
             "the reverse of the hypothesis",
     "tie": "the population and one learner given its samples and LoRA steps are not distinguishable ({d})"},
    {"win": "with a vote in place of the verifier the population beats one learner's self-agreement ({d})",
     "loss": "with a vote in place of the verifier one learner's self-agreement beats the population's vote ({d})",
     "tie": "with a vote in place of the verifier the population and one learner are not distinguishable ({d}: not "
            "an equivalence, the interval allows the population a loss of up to {lo} or a gain of up to {hi})"},
    {"win": "grounding matters: the verifier's population climbs further than the same population keeping what its "
            "agents agree on ({d})",
     "loss": "the vote's population climbs further than the verifier's ({d})",
     "tie": "the verifier's population and the vote's are not distinguishable ({d})"},
    {"win": "climbing beats one-shot training on the same hints at the same LoRA steps ({d})",
     "loss": "one-shot training on the same hints at the same LoRA steps beats climbing ({d})",
     "tie": "climbing and one-shot training on the same hints at the same LoRA steps are not distinguishable ({d})"},
)


def said_verdicts(d) -> tuple[object, list[str] | None, str]:
    """``d``'s primary table, each comparison's verdict (:func:`verdict`), and why there is none (``""``: there are
    four): a comparison whose pre-registered seeds are not all in, or without an interval (under 6 seeds)."""
    t = climb.primary(d["rows"], d["cfg"].rung)
    said = [verdict(r, d["cfg"]) for _, r in t.iterrows()]
    if any(s not in ("win", "tie", "loss") for s in said):
        return t, None, "no verdict yet"
    if not (np.isfinite(t["lo"].astype(float)) & np.isfinite(t["hi"].astype(float))).all():
        return t, None, f"no verdict at this scale ({int(t['n'].min())} seeds: too few for an interval)"
    return t, said, ""


def _said_parts(scale: str):
    """``(d, where, t, said, arms)`` of the climb's words (:func:`said_data`, :func:`said_verdicts`, the arm table
    indexed by arm), or the one sentence to print where there is no data or no verdict yet."""
    d, where = said_data(scale)
    if d is None:
        return "no data yet"
    t, said, why = said_verdicts(d)
    if said is None:
        return f"{why} (data: {where})"
    return d, where, t, said, climb.arm_table(d["rows"], d["cfg"].rung, d["cfg"].families).set_index("arm")


def climb_said(scale: str) -> str:
    """The climb's four verdicts in words (:data:`SAID`), each with its Δ, interval and Holm p, and the data they
    come from."""
    parts = _said_parts(scale)
    if isinstance(parts, str):
        return parts
    d, where, t, said, arms = parts
    lines = [SAID[k][v].format(d=f"{r.comparison} {signed(r['diff'])} {ci(r.lo, r.hi)}, Holm p {p_text(r.p_holm)}",
                               lo=fmt(max(-r.lo, 0)), hi=fmt(max(r.hi, 0))) for (k, r), v in zip(t.iterrows(), said)]
    return (f"{int(t['n'].min())} seeds, Holm over four: the grounded population climbs from "
            f"{fmt(arms.loc[CLIMB, 'start'])} (its generalists) to {fmt(arms.loc[CLIMB, 'rung'])} on rung "
            f"{d['cfg'].rung}; " + "; ".join(lines[k] for k in (2, 3, 0, 1)) + f" (data: {where})")


def climb_front(scale: str) -> str:
    """The climb's answer in one sentence (the README's first screen): where the population climbs to, against the
    vote, the hints and one learner, one number each."""
    parts = _said_parts(scale)
    if isinstance(parts, str):
        return parts
    d, where, t, said, arms = parts
    word = {"win": "beats", "tie": "is not distinguishable from", "loss": "loses to"}
    one = {"win": "climbs further than one learner given its samples and steps",
           "tie": "is not distinguishable from one learner given its samples and steps",
           "loss": "one learner given its samples and steps climbs further"}
    num = lambda k: f"{signed(t['diff'][k])} {ci(t['lo'][k], t['hi'][k])}"  # noqa: E731
    head = (f"a grounded population climbs from {fmt(arms.loc[CLIMB, 'start'])} to {fmt(arms.loc[CLIMB, 'rung'])} "
            f"on the rung past every founder's training; it {word[said[2]]} a vote ({num(2)}) and {word[said[3]]} "
            f"one-shot training on the hints ({num(3)}), ")
    tail = f"but {one[said[0]]} ({num(0)})" if said[0] == "loss" else f"and it {one[said[0]]} ({num(0)})"
    return head + tail + f" (data: {where})"


def climb_scope(scale: str) -> str:
    """What the climb establishes and what it does not, its settings read from its config and the base's weights."""
    d, _ = said_data(scale)
    if d is None:
        return NO_DATA
    cfg, n = d["cfg"], int(climb.primary(d["rows"], d["cfg"].rung)["n"].min())
    top = climb.arm_table(d["rows"], cfg.rung, cfg.families)["next"].max()
    nxt = (f"no arm gets off 0 on rung {cfg.rung + 1}" if top < 0.005 else
           f"rung {cfg.rung + 1} reaches at most {fmt(top)} in any arm")
    return (f"- **Establishes** what grounding, a population and one-shot training do when learners climb one rung "
            f"(rung {cfg.rung}) past every founder's reach, on {base_size()} character-level model on a CPU: "
            f"{cfg.population} learners, {cfg.rounds} rounds, {cfg.n_hints} gold hints per family, three synthetic "
            f"families a program verifies, {n} seeds, compute matched in total (a child trains {cfg.round_steps} "
            f"LoRA steps a round, the single learner {cfg.round_steps * cfg.population}; the same samples and steps, "
            f"not the same verifier calls).\n"
            f"- **Does not establish** a climb of more than one rung ({nxt}, where no hint was given), anything about "
            f"a language model, other tasks or verifiers, other population sizes, rounds or budgets, nor how a "
            f"population compares with one learner when a child's share of the steps is not 1/{cfg.population} of "
            f"the single learner's (data: `{d['experiment']}/`).\n")


def base_size() -> str:
    """The tiny base's size from its committed weights' header: ``a 1.06 M-parameter``."""
    raw = (TINY_DIR / "model.safetensors").read_bytes()
    n = int.from_bytes(raw[:8], "little")
    header = json.loads(raw[8:8 + n])
    count = sum(int(np.prod(v["shape"])) for k, v in header.items() if k != "__metadata__")
    return f"a {count / 1e6:.2f} M-parameter"


def climb_matched(scale: str) -> str:
    """What a population and a single learner spend per seed, as counted (:func:`climb_compute`): samples and LoRA
    steps, and the loop's verifier calls (a grounded population also reads val to select)."""
    d, _ = said_data(scale)
    if d is None:
        return "no data yet"
    t = climb.compute_table(d["rows"], d["work"]).set_index("arm")
    if not {CLIMB, CLIMB_SINGLE} <= set(t.index):
        return "no data yet"
    pop, one = t.loc[CLIMB], t.loc[CLIMB_SINGLE]
    same = lambda k: "the same" if round(pop[k]) == round(one[k]) else "not the same"  # noqa: E731
    return (f"{same('samples')} samples ({pop.samples:,.0f} and {one.samples:,.0f} per seed) and {same('train_steps')} "
            f"LoRA steps ({pop.train_steps:,.0f} and {one.train_steps:,.0f}), but {same('verifier_calls')} verifier "
            f"calls: `climb` {pop.verifier_calls:,.0f} per seed against `climb_single`'s {one.verifier_calls:,.0f} "
            f"(the verifier checks each distinct answer to a prompt once, and a grounded population also checks "
            f"its learners on val to select) (data: `{d['experiment']}/`)")


def climb_gold(scale: str) -> str:
    """The gold ceiling as tested: ``climb`` against training on the climb prompts' gold answers (the pre-registered
    secondary, raw p), and, untested, every other arm's mean and per family beside gold's; from the committed run
    (saying so) while the folder the study reads has no gold run yet."""
    d, _ = said_data(scale)
    if d is None:
        return "no data yet"
    have, planned = _gold_seeds(d), seeds_planned(d["cfg"], CLIMB_GOLD)
    text = _gold(d) if have >= planned else None  # a ceiling read on part of its seeds would not be the one registered
    if text is None and d["experiment"] != climb.CLIMB and (before := _data(scale, climb.CLIMB)) is not None:
        text = _gold(before)
        so_far = f"has {have} of {planned} seeds in the re-run so far" if have else "has not run in the re-run yet"
        return text and text.removesuffix(")") + f", the committed run: `{CLIMB_GOLD}` {so_far})"
    return text or f"`{CLIMB_GOLD}` has not run yet (data: `{d['experiment']}/`)"


def _gold_seeds(d: dict) -> int:
    """How many seeds of ``d``'s folder hold a finished gold run."""
    rows = d["rows"]
    return int(rows.loc[rows["arm"] == CLIMB_GOLD, "seed"].nunique())


def _gold(d: dict) -> str | None:
    """:func:`climb_gold`'s sentence from one folder's data ``d``; ``None`` where it holds no gold run."""
    s = climb.secondary(d["rows"], d["cfg"].rung)
    g = s[(s["measure"] == "rung") & (s["arm_b"] == CLIMB_GOLD)]
    t = climb.arm_table(d["rows"], d["cfg"].rung, d["cfg"].families).set_index("arm")
    if g.empty or CLIMB_GOLD not in t.index:
        return None
    r = g.iloc[0]
    fams = list(d["cfg"].families)
    gold = t.loc[CLIMB_GOLD]
    below = "ends below" if r.hi < 0 else "ends above" if r.lo > 0 else "is not distinguishable from"
    others = [a for a in t.index if a not in (CLIMB, CLIMB_GOLD)]
    near = lambda a: [f for f in fams if abs(t.loc[a, f] - gold[f]) < 0.01]  # noqa: E731
    untested = "; ".join(f"`{a}` {fmt(t.loc[a, 'rung'])}" + (f" (within 0.01 of gold on {' and '.join(near(a))})"
                                                            if near(a) else "") for a in others)
    return (f"`climb` {below} training on the climb prompts' gold answers ({fmt(r.a_acc)} against {fmt(r.b_acc)}, "
            f"{signed(r['diff'])} {ci(r.lo, r.hi)}, raw p {p_text(r.p)}: the one arm the pre-registration tests "
            f"against gold); the others were not tested against it (gold {fmt(gold['rung'])}: {untested}) "
            f"(data: `{d['experiment']}/`)")


VOTE_ARMS = (CLIMB_VOTE, CLIMB_SINGLE_VOTE)


def climb_vote_stall(scale: str) -> str:
    """The vote arms' gain over their start and their end against one-shot training on the hints, paired by seed,
    raw p: a secondary comparison the pre-registration does not name (added after the data)."""
    d, _ = said_data(scale)
    if d is None:
        return "no data yet"
    rung = d["cfg"].rung
    out = climb.outcome(d["rows"], rung)
    every = climb.chosen(d["rows"], every_round=True)
    start = every[every["generation"] == 0].pivot(index="seed", columns="arm", values=f"test_rung{rung}")
    parts = []
    for arm in VOTE_ARMS:
        if arm not in out or arm not in start or CLIMB_HINTS not in out:
            return "no data yet"
        gain, hints = paired(out[arm], start[arm]), paired(out[arm], out[CLIMB_HINTS])
        parts.append(f"`{arm}` gains {signed(gain['diff'])} {ci(gain['lo'], gain['hi'])} over its start and ends "
                     f"{'below' if hints['hi'] < 0 else 'above' if hints['lo'] > 0 else 'level with'} one-shot "
                     f"training on the hints ({signed(hints['diff'])} {ci(hints['lo'], hints['hi'])}, p "
                     f"{p_text(hints['p'])})")
    return "; ".join(parts) + f" (raw p, not pre-registered: added after the data; data: `{d['experiment']}/`)"


TABLES.update({"climb-scope": climb_scope})
VALUES.update({"climb-said": climb_said, "climb-matched": climb_matched, "climb-gold": climb_gold,
               "climb-vote-stall": climb_vote_stall})  # climb_front: a line of the society's answer (society-front)
