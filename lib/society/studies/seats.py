"""The seat table (issue 53 §2): does an agent's seat earn it conformity or selection? One table for every society
study, before (the committed folder, made with the consensus that gave tied prompts to the lowest seat) and after
(the seat-fair re-run, where one exists).

Per arm that selects (its rows carry conformity), over every run and every generation whose agents were scored:

- per seat, the mean conformity κ, the mean val accuracy and the share of generations in which that seat was
  selected as a parent;
- **seat 0 against its same-role twin**: the agents born of the same parents as seat 0 in that generation (society:
  the same ``parents`` code, elites excluded; the climb: the other children continuing the same parent,
  ``next_parent``), their mean. Per run, the mean over generations of seat 0 − twin; over runs, the mean, its 95 %
  sign-flip interval and the exact sign-flip p (:func:`lib.core.stats.paired_permutation_test`). A seat that earns
  nothing for its seat differs from its twin by chance only. Generation 0 (founders or generalists, no parents) has
  no twin.
"""
from __future__ import annotations

from typing import Callable

import numpy as np
import pandas as pd

from lib.core.format import NO_DATA, ci, fmt, markdown, p_text, signed
from lib.core.stats import paired_permutation_test, sign_flip_ci
from lib.society import data
from lib.society.arms import is_baseline, order
from lib.society.config import config_of
from lib.society.studies.climb import comparisons as climb
from lib.society.studies.skills.comparisons import chosen_agents

RUN = ["arm", "seed"]
MEASURES = {"conformity": "conformity κ", "selected": "selected", "val": "val"}


def seat_frame(rows: pd.DataFrame) -> pd.DataFrame:
    """One row per (arm, seed, generation, agent ≥ 0) that selection scored: ``conformity``, ``selected`` (0/1),
    ``val`` (its ``val_overall``; NaN where the arm reads no val) and ``parent`` (the code of the agent's parents:
    society ``pa·100 + pb``, the climb the parent it continues; NaN for an elite or a generation-0 agent)."""
    d = rows[rows["agent"] >= 0]
    scored = d.dropna(subset=["conformity"])
    if scored.empty:
        return pd.DataFrame(columns=[*RUN, "generation", "agent", "conformity", "selected", "val", "parent"])
    key = [*RUN, "generation", "agent"]
    sel = scored.assign(selected=scored["selected"].astype(str).str.lower().isin(["true", "1", "1.0"]))
    out = sel.groupby(key).agg(conformity=("conformity", "first"), selected=("selected", "max")).astype(float)
    val = d[d["metric"] == "val_overall"].groupby(key)["value"].first().rename("val")
    births = d[(d["metric"] == "parents")].set_index(key)["value"]
    elite = d[d["metric"] == "elite"].set_index(key).index
    births = births[~births.index.isin(elite)]
    nxt = d[d["metric"] == "next_parent"]
    nxt = nxt.assign(generation=nxt["generation"] + 1).set_index(key)["value"]
    parent = pd.concat([births, nxt]).rename("parent")
    parent = parent[~parent.index.duplicated()]
    return out.join(val).join(parent).reset_index()


def per_seat(frame: pd.DataFrame) -> pd.DataFrame:
    """Per (arm, seat): mean conformity, val and selected share, and the runs."""
    g = frame.groupby(["arm", "agent"])
    return g.agg(conformity=("conformity", "mean"), val=("val", "mean"), selected=("selected", "mean"),
                 runs=("seed", "nunique")).reset_index()


def twin_differences(frame: pd.DataFrame) -> pd.DataFrame:
    """Per run (arm, seed): the mean over generations of seat 0 − the mean of its same-role twins, per measure."""
    lines = []
    for (arm, seed, t), g in frame.dropna(subset=["parent"]).groupby([*RUN, "generation"]):
        zero = g[g["agent"] == 0]
        if zero.empty:
            continue
        twins = g[(g["agent"] != 0) & (g["parent"] == zero["parent"].iloc[0])]
        if twins.empty:
            continue
        lines.append({"arm": arm, "seed": seed, "generation": t,
                      **{m: float(zero[m].iloc[0] - twins[m].mean()) for m in MEASURES}})
    if not lines:
        return pd.DataFrame(columns=[*RUN, *MEASURES])
    return pd.DataFrame(lines).groupby(RUN, as_index=False)[list(MEASURES)].mean()


def twin_test(frame: pd.DataFrame) -> pd.DataFrame:
    """Per arm and measure: seat 0 − twin over runs (mean, 95 % sign-flip interval, exact sign-flip p, runs)."""
    diffs = twin_differences(frame)
    out = []
    for arm, g in diffs.groupby("arm"):
        for m in MEASURES:
            x = g[m].dropna().to_numpy()
            if len(x) < 2:
                out.append({"arm": arm, "measure": m, "n": len(x), "diff": float(np.mean(x)) if len(x) else np.nan,
                            "lo": np.nan, "hi": np.nan, "p": np.nan})
                continue
            lo, hi = sign_flip_ci(x)
            p = paired_permutation_test(x, np.zeros_like(x))["p"]
            out.append({"arm": arm, "measure": m, "n": len(x), "diff": float(x.mean()), "lo": lo, "hi": hi, "p": p})
    return pd.DataFrame(out)


def seat_table(rows: pd.DataFrame, when: str) -> list[str]:
    """The table's lines for one folder's ``rows`` (``when``: before or after): per selecting arm, the seats'
    conformity and selected share, and seat 0 − twin on conformity, selected and val."""
    frame = seat_frame(rows)
    if frame.empty:
        return []
    selecting = frame.groupby("arm")["selected"].max()
    frame = frame[frame["arm"].isin(selecting[selecting > 0].index)]  # an arm that selects nothing has no seat bias
    seats, test = per_seat(frame), twin_test(frame).set_index(["arm", "measure"])
    lines = []
    for arm in order(seats["arm"].unique()):
        s = seats[seats["arm"] == arm].sort_values("agent")
        cells = []
        for m in MEASURES:
            r = test.loc[(arm, m)] if (arm, m) in test.index else None
            if r is None or not np.isfinite(r["diff"]):
                cells.append("— (not measured)" if m == "val" else "—")
            else:
                cells.append(f"{signed(r['diff'])} {ci(r['lo'], r['hi'])}, p {p_text(r['p'])}")
        n = int(test.loc[(arm, "conformity"), "n"]) if (arm, "conformity") in test.index else 0
        lines.append(f"| {when} | `{arm}` | {int(s['runs'].max())} | {' '.join(fmt(v, 2) for v in s['conformity'])} | "
                     f"{' '.join(fmt(v, 2) for v in s['selected'])} | {n} | " + " | ".join(cells) + " |")
    return lines


HEADER = ["data", "arm", "runs", "conformity by seat (0, 1, …)", "share selected by seat", "runs with a twin",
          "seat 0 − twin: conformity [95 % CI], p", "seat 0 − twin: selected", "seat 0 − twin: val"]
def _rows(study: str, scale: str) -> pd.DataFrame | None:
    if study in (data.CLIMB, climb.FAIR):
        d = climb.load_data(scale, study)
        return None if d is None or d["experiment"] != study else d["rows"]
    return data.society_rows(scale, study, finished=True, required=False)


def _after(study: str, scale: str) -> pd.DataFrame | None:
    """The rows of ``study``'s seat-fair re-run (:data:`lib.society.data.FAIR`), seeds of one float path; ``None``
    where it has none."""
    if study not in data.FAIR:
        return None
    return _rows(climb.FAIR, scale) if study == data.CLIMB else data.fair_rows(scale, study)[0]


def seats(study: str) -> Callable[[str], str]:
    """The seat table of ``study``'s folder: before, and after where the folder has a seat-fair re-run."""
    def table(scale: str) -> str:
        lines = []
        before = _rows(study, scale)
        if before is not None:
            lines += seat_table(before, "before (seat-biased consensus)")
        after = _after(study, scale)
        if after is not None:
            lines += seat_table(after, "after (seat-fair)")
        return markdown(HEADER, lines) if lines else NO_DATA
    return table


TABLES: dict[str, Callable[[str], str]] = {f"seats-{s.removeprefix('society_') or 'society'}": seats(s)
                                           for s in data.STUDIES}


def tie_picks(study: str) -> Callable[[str], str]:
    """How many of ``study``'s society runs had an exact tie for its chosen agent (the selection pool's best): the
    pre-registered rule gave it to the lowest seat, the outcome is now the tied agents' mean
    (:func:`lib.society.studies.skills.comparisons.chosen_agents`)."""
    def value(scale: str) -> str:
        rows = data.society_rows(scale, study, finished=True, required=False)
        cfg = config_of(study, scale)
        if rows is None or cfg is None or "select_overall" not in set(rows["metric"]):
            return "no data yet"
        ch = chosen_agents(rows, cfg.families)
        runs = ch[~ch["arm"].map(is_baseline)]
        return f"{int((runs['tied'] > 1).sum())} of {len(runs)} society runs"
    return value


VALUES = {f"tie-picks-{s.removeprefix('society_')}": tie_picks(s) for s in (data.CROSSOVER, data.LINEAGE)}
