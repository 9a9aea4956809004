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

from typing import Callable

import numpy as np

from lib.core.format import NO_DATA, ci, fmt, markdown, p_text, signed
from lib.society.arms import label, order
from lib.society.studies.climb import comparisons as climb


def _data(scale: str) -> dict | None:
    return climb.load_data(scale)


def seeds_planned(cfg, arm: str) -> int:
    return len(cfg.seeds_of(arm)) if arm in cfg.arms else 0


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
                                           "climb-kept": climb_kept, "climb-secondary": climb_secondary}
VALUES: dict[str, Callable[[str], str]] = {"climb-verdicts": climb_verdicts, "climb-margins": climb_margins,
                                           "climb-cost": climb_cost}
