"""The program-search results of the README (Fig. 4, S4), from ``data/<scale>/program_search/``: each
method against ``corrected`` at the last generation, paired on seed, for the best program's held-out loss
ratio (4a/4b) and the mean proposed one (S4a) (:func:`lib.core.stats.paired_differences`), the bracket
errors (4c, :func:`lib.program_search.figures.bracket_table`) and the order accuracy (4d,
:func:`lib.program_search.figures.order_accuracy_by_seed`); the setup and the prose's judgements as inline
values, each decided by an interval."""
from __future__ import annotations

from typing import Callable

import numpy as np
import pandas as pd

from lib.core.paths import data_dir
from lib.core.stats import mean_ci_table, paired_differences
from lib.program_search.figures import METHODS, bracket_table, load_data, order_accuracy_by_seed
from lib.core.effects import contains_zero, delta, from_data, mean_ci, plain, results_table, sci, verdict
from lib.core.format import NO_DATA, p_text

EXPERIMENT = "program_search"
REFERENCE = "corrected"
BEST, PROPOSED = "heldout_loss_ratio", "mean_proposed_heldout_loss_ratio"  # 4a/4b, S4a
CHANCE = 0.5  # order accuracy of a coin
ALTERNATIVES = ("gate_blind", "random_order")  # the search with an inexact order predictor, and with none


def vs_corrected(rows: pd.DataFrame, column: str) -> pd.DataFrame:
    """Every method − ``corrected`` at the last generation, paired on seed, in the figures' method order
    (index: method): the summary of :func:`lib.core.stats.paired_differences`, with ``exact`` (every
    seed's difference is 0 exactly: an equivalent bracket, the same search) and ``method_mean`` (the
    method's own mean over seeds)."""
    last = rows[rows["generation"] == rows["generation"].max()]
    pts, summ = paired_differences(last, group="method", reference=REFERENCE, value=column)
    exact = pts.groupby("method")["diff"].apply(lambda d: bool((d == 0).all()))
    means = last.groupby("method")[column].mean()
    order = {m: i for i, m in enumerate(METHODS)}
    summ = summ.assign(exact=summ["method"].map(exact), method_mean=summ["method"].map(means))
    return summ.sort_values("method", key=lambda c: c.map(order)).set_index("method")


def load(scale: str) -> dict | None:
    """:func:`lib.program_search.figures.load_data` with ``best`` and ``proposed`` (:func:`vs_corrected` of
    4a/4b and S4a) and ``accuracy`` (4d over all depths, by predictor); ``None`` without data."""
    if not (data_dir(scale, EXPERIMENT) / "manifest.json").is_file():
        return None
    data = load_data(scale)
    acc = order_accuracy_by_seed(data["diagnostics"])[1]
    return {**data, "best": vs_corrected(data["rows"], BEST), "proposed": vs_corrected(data["rows"], PROPOSED),
            "accuracy": acc[acc["depth"] == "all"].set_index("predictor")}


def _note(r, best: str) -> str:
    """What the interval of ``method − corrected`` (lower is better) says: (null), a reversal (the method
    better), and whether it is the nominally best method of all; nothing for an unbounded interval."""
    if not (np.isfinite(r.lo) and np.isfinite(r.hi)):
        return ""
    if not contains_zero(r.lo, r.hi):
        return " (reversal)" if r.hi < 0 else ""
    if r["mean"] >= 0:
        return " (null)"
    nominal = f": nominally the best method, {plain(r.method_mean, 4)}" if r.name == best else ""
    return f" (reversal, not significant{nominal})"


def _rows(summ: pd.DataFrame, what: str, first: str, *, equal_row: bool = True) -> list[str]:
    """The table rows of one comparison: the exactly equal methods in one (none without ``equal_row``:
    another comparison showed them), every other its own."""
    same = [m for m in summ.index if summ.loc[m, "exact"]]
    lines = []
    if same and equal_row:
        r = summ.loc[same[0]]
        lines.append(f"| {what} | {first}{', '.join(f'`{m}`' for m in same)} − `{REFERENCE}` | 0 exactly (equivalent "
                     f"brackets: the same search, a self-check) | {p_text(r.p)} | {int(r.n)} |")
    best = summ["method_mean"].idxmin() if summ["method_mean"].min() < summ["method_mean"].max() else None
    for m in summ.index.difference(same, sort=False):
        r = summ.loc[m]
        head = first if not lines else ("… " if first else "")
        lines.append(f"| {what} | {head}`{m}` − `{REFERENCE}` | {delta(r['mean'], r.lo, r.hi)}{_note(r, best)} | "
                     f"{p_text(r.p)} | {int(r.n)} |")
    return lines


@from_data(load, NO_DATA)
def program_search_results(data: dict) -> str:
    """4a/4b and S4a: every method − ``corrected``; 4c: the bracket errors; 4d: the order accuracy."""
    best, proposed = data["best"], data["proposed"]
    shown = proposed["exact"].equals(best["exact"])  # the same methods equal in both: one row says so
    lines = _rows(best, "4a/4b", "") + _rows(proposed, "S4a", "mean *proposed* held-out ratio, ", equal_row=not shown)
    compiled, jet, blind = (r for _, r in bracket_table(data["diagnostics"]).iterrows())
    lines.append(f"| 4c | \\|compiled bracket − exact bracket\\|, max over {int(compiled.probes)} probes | "
                 f"{sci(compiled.max_abs_error)} (first jet {sci(jet.max_abs_error)}; gate-blind up to "
                 f"{sci(blind.max_abs_error)}, median {sci(blind.median_abs_error)}) | — | "
                 f"{int(compiled.probes)} probes |")
    c, g = data["accuracy"].loc["compiled"], data["accuracy"].loc["gate-blind"]
    chance = verdict(g.lo - CHANCE, g.hi - CHANCE, below="below", above="above", tie="not distinguishable from")
    lines.append(f"| 4d | order accuracy (bracket sign predicts the faster order), mean of the per-seed rates, "
                 f"95 % CI (t) | compiled {mean_ci(c['mean'], c.lo, c.hi)}; "
                 f"gate-blind {mean_ci(g['mean'], g.lo, g.hi)}, "
                 f"{chance} chance ({CHANCE:g}) | — | {int(c.n)} |")
    return results_table(lines)


@from_data(load, "no data yet")
def program_search_setup(data: dict) -> str:
    """The heading's setup: seeds (one random quadratic task each) and generations."""
    n = data["rows"]["seed"].nunique()
    return f"{n} seeds ({n} random quadratic tasks), {int(data['rows']['generation'].max())} generations"


@from_data(load, "—")
def program_search_last_generation(data: dict) -> str:
    return f"{int(data['rows']['generation'].max())}"


@from_data(load, "—")
def program_search_corrected(data: dict) -> str:
    """``corrected``'s held-out loss ratio at the last generation, its 95 % CI (t), and at the first."""
    rows = data["rows"]
    t = mean_ci_table(rows[rows["method"] == REFERENCE], ["generation"], BEST).set_index("generation")
    last, first = t.loc[t.index.max()], t.loc[t.index.min()]
    return (f"{mean_ci(last['mean'], last.lo, last.hi)} (95 % CI (t); {plain(first['mean'], 4)} at generation "
            f"{int(t.index.min())})")


@from_data(load, "—")
def program_search_proposals(data: dict) -> str:
    """Whether ``corrected`` proposes better programs (S4a) than ``frozen_proposer`` and ``no_feedback``."""
    s = data["proposed"]
    words = {verdict(s.loc[m, "lo"], s.loc[m, "hi"], below="worse", above="better", tie="tie")
             for m in ("frozen_proposer", "no_feedback")}
    return {"better": "proposes better programs than", "worse": "proposes worse programs than"}.get(
        words.pop() if len(words) == 1 else "", "does not propose distinguishably better programs than")


@from_data(load, "—")
def program_search_best_found(data: dict) -> str:
    """Whether the best program found (4a/4b) tells ``corrected`` from ``frozen_proposer``."""
    r = data["best"].loc["frozen_proposer"]
    return "not distinguishable" if contains_zero(r.lo, r.hi) else "distinguishable"


@from_data(load, "—")
def program_search_order(data: dict) -> str:
    """Whether the exact bracket's order accuracy (4d) lies above the gate-blind one's (disjoint 95 % CIs)."""
    acc = data["accuracy"]
    return ("predicts operator order better than" if acc.loc["compiled", "lo"] > acc.loc["gate-blind", "hi"]
            else "predicts operator order no better than")


@from_data(load, "—")
def program_search_gate_blind(data: dict) -> str:
    """What the gate-blind bracket does to the search (4a/4b): ``gate_blind`` − ``corrected``."""
    r = data["best"].loc["gate_blind"]
    return verdict(r.lo, r.hi, below="without making the search better (`gate_blind` is better)",
                   above="and makes the search better (`gate_blind` is worse)",
                   tie="without making the search better (`gate_blind` ties)")


def predictor_effect(best: pd.DataFrame) -> str:
    """What the exact order predictor (``corrected``) does to the best program found (4a/4b), from the
    intervals of each of :data:`ALTERNATIVES` − ``corrected`` in ``best`` (:func:`vs_corrected`; lower is
    better): better when every alternative ends worse, worse when one ends better, else no better."""
    words = [verdict(best.loc[m, "lo"], best.loc[m, "hi"], below="worse", above="better", tie="tie")
             for m in ALTERNATIVES]
    if "worse" in words:
        return "makes the search worse"
    return "makes the search better" if set(words) == {"better"} else "does not make the search better"


@from_data(load, "—")
def program_search_predictor(data: dict) -> str:
    """The README summary's verdict on the exact order predictor (:func:`predictor_effect`)."""
    return predictor_effect(data["best"])


TABLES: dict[str, Callable[[str], str]] = {"program-search-results": program_search_results}
VALUES: dict[str, Callable[[str], str]] = {
    "program-search-setup": program_search_setup, "program-search-last-generation": program_search_last_generation,
    "program-search-corrected": program_search_corrected, "program-search-proposals": program_search_proposals,
    "program-search-best-found": program_search_best_found, "program-search-order": program_search_order,
    "program-search-gate-blind": program_search_gate_blind, "program-search-predictor": program_search_predictor}
