"""The climb (``configs/society_climb/``): can a population make verified knowledge that no founder holds, and does
grounding matter there?

Outcome (pre-registered in the config): per (arm, seed) the test accuracy on the climbed rung (``test_rung<r>``: the
three families' test items of that rung, equal counts) of the **chosen agent** — after the last round, the learner
with the highest accuracy on the rung's selection pool (``select_rung``; an exact tie: the mean of the tied learners,
where the registration said the lowest index, a seat: issue 53); a single learner's or a one-shot baseline's one
model — paired by seed; the exact sign-flip p and its inverted interval
(:func:`lib.society.studies.study.comparisons.paired`), Holm's correction over the four comparisons of
:data:`lib.society.arms.CLIMB_PRIMARY`.

The curve (:func:`curve`): the chosen agent of every round (chosen the same way among that round's learners). The
compute (:func:`compute_table`): per arm and seed, samples drawn, loop verifier calls, LoRA optimizer steps (founders
and generalists included) from the cost rows, tokens trained and generated from the progress files.
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np
import pandas as pd

from lib.core.paths import config_path, data_dir
from lib.core.rows import read_progress, read_shard, shard_path
from lib.core.stats import bounded_t_ci
from lib.society.arms import (CLIMB as CLIMB_ARM, CLIMB_ENSEMBLE, CLIMB_POPULATIONS, CLIMB_PRIMARY, CLIMB_SECONDARY,
                              CLIMB_WHY, order)
from lib.society.climb.config import config_of
from lib.society.climb.run import load_rows
from lib.society.data import CLIMB, FAIR as FAIR_OF, folder_states, mixed_seeds
from lib.society.rows import COLUMNS
from lib.society.studies.frames import tied_pick
from lib.society.studies.study.comparisons import paired, with_holm


FAIR = FAIR_OF[CLIMB]  # the seat-fair re-run (configs/society_climb_fair/, issue 53)


def load_data(scale: str, experiment: str = FAIR) -> dict | None:
    """``{"rows", "cfg", "work", "experiment"}``: the finished runs (every round on disk) of the study at ``scale``,
    its config, each shard's recorded work; ``None`` without a config or a finished run. ``experiment``: the
    seat-fair re-run (:data:`FAIR`, the default; without its config, the committed folder) or the committed folder
    (:data:`CLIMB`, the seat-biased *before*). Read once per state of the folder (every table, value and panel of
    the study reads it: :func:`lib.society.data.folder_states`)."""
    if experiment == FAIR and not config_path(FAIR, scale).is_file():
        experiment = CLIMB
    if not config_path(experiment, scale).is_file():
        return None
    got = _load(scale, experiment, folder_states(scale, experiment))
    return None if got is None else dict(got)


def current(scale: str) -> str:
    """The folder the study's tables read: the seat-fair re-run (:data:`FAIR`) once every pre-registered seed of the
    primary comparisons' arms has finished there, else the committed folder (:data:`CLIMB`); the before/after table
    shows the re-run as it comes."""
    d = load_data(scale, FAIR)
    if d is None or d["experiment"] != FAIR:
        return CLIMB
    cfg, done = d["cfg"], d["rows"][["arm", "seed"]].drop_duplicates()
    arms = {x for _, a, b in CLIMB_PRIMARY for x in (a, b)}
    planned = {(a, s) for a, s in cfg.runs() if a in arms}
    return FAIR if planned <= set(map(tuple, done.itertuples(index=False))) else CLIMB


@lru_cache(maxsize=8)
def _load(scale: str, experiment: str, _states: tuple) -> dict | None:
    cfg = config_of(experiment, scale)
    rows = load_rows(cfg, data_dir(scale, experiment))
    if rows.empty:
        return None
    last = rows.groupby(["arm", "seed"])["generation"].transform("max")
    rows = rows[last == cfg.rounds]
    if rows.empty:
        return None
    mixed = mixed_seeds(data_dir(scale, experiment), rows)
    rows = rows[~rows["seed"].isin(mixed)]  # a paired comparison pairs runs of one float path
    if rows.empty:
        return None
    return {"rows": rows, "cfg": cfg, "work": shard_work(cfg, data_dir(scale, experiment), rows),
            "experiment": experiment, "mixed_seeds": mixed}


def pilot_folders(scale: str) -> list:
    """The pilot's folders (``data/<scale>/society_climb_pilot/n_hints<h>/``), one per setting tried."""
    root = data_dir(scale, CLIMB + "_pilot")
    return [f for f in root.glob("n_hints*") if f.is_dir()] if root.is_dir() else []


def pilot_rows(folder) -> pd.DataFrame:
    """The rows of a pilot folder's ``climb`` shard (seed 100)."""
    return pd.concat([read_shard(f, "generation", COLUMNS) for f in sorted(folder.glob("climb_s*.csv"))],
                     ignore_index=True)


def learners(rows: pd.DataFrame) -> pd.DataFrame:
    """One row per (arm, seed, round, learner) with its metrics as columns."""
    d = rows[rows["agent"] >= 0]
    w = d.pivot_table(index=["arm", "seed", "generation", "agent"], columns="metric", values="value", aggfunc="first")
    w.columns.name = None
    return w.reset_index()


def chosen(rows: pd.DataFrame, *, every_round: bool = False) -> pd.DataFrame:
    """The chosen learner per (arm, seed) at the last round (``every_round``: at every round): the highest
    ``select_rung`` (:func:`lib.society.studies.frames.tied_pick`: an exact tie is the mean of the tied learners,
    never the lowest seat; ``tied`` counts them), one row with every metric a learner carries."""
    w = learners(rows)
    if not every_round:
        w = w[w["generation"] == w.groupby(["arm", "seed"])["generation"].transform("max")]
    metrics = [c for c in w.columns if c not in ("arm", "seed", "generation", "agent")]
    return tied_pick(w, ["arm", "seed", "generation"], "select_rung", metrics)


def outcome(rows: pd.DataFrame, rung: int) -> pd.DataFrame:
    """Index ``seed``, a column per arm: the chosen agent's test accuracy on the climbed rung."""
    return chosen(rows).pivot(index="seed", columns="arm", values=f"test_rung{rung}")


def primary(rows: pd.DataFrame, rung: int) -> pd.DataFrame:
    """The four pre-registered comparisons (a − b on the outcome): ``comparison, arm_a, arm_b, n, a_acc, b_acc,
    diff, lo, hi, p, p_holm``."""
    out = outcome(rows, rung)
    none = pd.Series(dtype=float)
    lines = [{"comparison": label, **_line(a, b, paired(out.get(a, none), out.get(b, none)))}
             for label, a, b in CLIMB_PRIMARY]
    return with_holm(pd.DataFrame(lines))


def ensemble(rows: pd.DataFrame, rung: int) -> pd.Series:
    """Index ``seed``: ``climb``'s ensemble read-out after the last round (the consensus of its last population's
    greedy answers on the climbed rung's test pool, :func:`lib.society.climb.loop.ensemble_rows`)."""
    d = rows[(rows["arm"] == CLIMB_ARM) & (rows["metric"] == f"ensemble_rung{rung}") & (rows["agent"] == -1)]
    d = d[d["generation"] == d.groupby("seed")["generation"].transform("max")]
    return d.set_index("seed")["value"].rename(CLIMB_ENSEMBLE)


def why(rows: pd.DataFrame, rung: int) -> pd.DataFrame:
    """The comparisons of :data:`lib.society.arms.CLIMB_WHY` (a − b, raw p), then, not tested, each population arm's
    pick gain: its chosen learner − the mean of its last population (``comparison, arm_a, arm_b, n, a_acc, b_acc,
    diff, lo, hi, p``)."""
    out = outcome(rows, rung).join(ensemble(rows, rung), how="outer")
    none = pd.Series(dtype=float)
    lines = [{"comparison": label, **_line(a, b, paired(out.get(a, none), out.get(b, none)))}
             for label, a, b in CLIMB_WHY]
    w = learners(rows)
    w = w[w["generation"] == w.groupby(["arm", "seed"])["generation"].transform("max")]
    mean = w.groupby(["arm", "seed"])[f"test_rung{rung}"].mean().unstack("arm")
    for arm in CLIMB_POPULATIONS:
        if arm in out and arm in mean:
            r = paired(out[arm], mean[arm])
            lines.append({"comparison": f"{arm}: chosen − its population's mean (not tested)",
                          **_line(arm, arm, {**r, "p": np.nan})})
    return pd.DataFrame(lines)


def _line(a: str, b: str, r: dict) -> dict:
    """A comparison's row from :func:`paired`'s result ``r`` of ``a − b``."""
    return {"arm_a": a, "arm_b": b, "n": r["n"], "a_acc": r["a"], "b_acc": r["b"], "diff": r["diff"], "lo": r["lo"],
            "hi": r["hi"], "p": r["p"]}


def secondary_measures(rows: pd.DataFrame, rung: int) -> dict[str, pd.DataFrame]:
    """``{measure: index seed, a column per arm}`` for the secondary comparisons (:data:`lib.society.arms.
    CLIMB_SECONDARY`): the chosen agent's climbed rung (``rung``), next rung (``next``) and easy level (``easy``)
    after the last round; the share of the last round's kept answers that is wrong (``wrong``) and the learners' mean
    pass@k on its prompts (``pass``). Beside them, one Series, index seed: the easy level at the start (``easy_start``:
    the round-0 chosen learner, one of the seed's generalists, shared by every arm; a one-shot baseline, which has no
    round 0, is held against it too)."""
    ch, every = chosen(rows), chosen(rows, every_round=True)
    end = lambda col: ch.pivot(index="seed", columns="arm", values=col)  # noqa: E731
    last = rows["generation"] == rows.groupby(["arm", "seed"])["generation"].transform("max") - 1
    wrong = rows[last & (rows["metric"] == "kept_wrong_share")].pivot(index="seed", columns="arm", values="value")
    passes = rows[last & (rows["metric"] == "pass_at_k")].groupby(["seed", "arm"])["value"].mean().unstack()
    return {"rung": end(f"test_rung{rung}"), "next": end(f"test_rung{rung + 1}"), "easy": end("test_overall"),
            "easy_start": every[every["generation"] == 0].groupby("seed")["test_overall"].first(),
            "wrong": wrong, "pass": passes}


def secondary(rows: pd.DataFrame, rung: int) -> pd.DataFrame:
    """The secondary comparisons, raw p: ``measure, arm_a, arm_b, n, a_acc, b_acc, diff, lo, hi, p``; a
    ``forgetting`` line holds one arm's easy level after the last round (``a_acc``) against the start (``b_acc``)."""
    m = secondary_measures(rows, rung)
    none = pd.Series(dtype=float)
    lines = []
    for measure, a, b in CLIMB_SECONDARY:
        if measure == "forgetting":
            r = paired(m["easy"].get(a, none), m["easy_start"])
        else:
            r = paired(m[measure].get(a, none), m[measure].get(b, none))
        lines.append({"measure": measure, **_line(a, b, r)})
    return pd.DataFrame(lines)


def arm_table(rows: pd.DataFrame, rung: int, families) -> pd.DataFrame:
    """Per arm: seeds, the chosen agent's climbed-rung accuracy (mean, 95 % t-interval within [0, 1]), per family,
    the next rung's, the easy level's (forgetting: ``test_overall``) and the start's (round 0's chosen learner)."""
    ch = chosen(rows)
    start = chosen(rows, every_round=True)
    start = start[start["generation"] == 0].set_index(["arm", "seed"])[f"test_rung{rung}"]
    lines = []
    for arm in order(ch["arm"].unique()):
        g = ch[ch["arm"] == arm]
        m, lo, hi = bounded_t_ci(g[f"test_rung{rung}"]) if len(g) > 1 else (float(g[f"test_rung{rung}"].mean()),
                                                                              np.nan, np.nan)
        s0 = start.reindex(list(zip(g["arm"], g["seed"])))
        lines.append({"arm": arm, "n": len(g), "rung": m, "lo": lo, "hi": hi,
                      **{f: float(g[f"test_{f}_rung{rung}"].mean()) for f in families},
                      "next": float(g.get(f"test_rung{rung + 1}", pd.Series(dtype=float)).mean()),
                      "easy": float(g["test_overall"].mean()), "start": float(s0.mean())})
    return pd.DataFrame(lines)


def curve(rows: pd.DataFrame, rung: int) -> pd.DataFrame:
    """Per arm and round: the chosen agent's climbed-rung test accuracy over seeds (mean, 95 % t-interval, n)."""
    ch = chosen(rows, every_round=True)
    out = []
    for (arm, t), g in ch.groupby(["arm", "generation"]):
        v = g[f"test_rung{rung}"].dropna()
        m, lo, hi = bounded_t_ci(v) if len(v) > 1 else (float(v.mean()), np.nan, np.nan)
        out.append({"arm": arm, "round": int(t), "n": len(v), "mean": m, "lo": lo, "hi": hi})
    return pd.DataFrame(out)


def kept(rows: pd.DataFrame) -> pd.DataFrame:
    """Per arm and round: answers kept (mean over seeds) and the share of them that is wrong (mean over seeds)."""
    d = rows[rows["metric"].isin(["kept_n", "kept_wrong_share"])]
    return d.pivot_table(index=["arm", "generation"], columns="metric", values="value", aggfunc="mean").reset_index()


def shard_work(cfg, folder, rows: pd.DataFrame) -> pd.DataFrame:
    """Per (arm, seed) of ``rows``: its wall seconds (every round's, founders and generalists included where this shard
    trained them) and tokens trained and generated as the progress file recorded them (every phase,
    the founders' and generalists' where this shard trained them: they are the seed's, counted once per seed
    below)."""
    out = []
    for (arm, seed) in rows[["arm", "seed"]].drop_duplicates().itertuples(index=False):
        info = read_progress(shard_path(folder, arm, int(seed))) or {}
        line = {"arm": arm, "seed": int(seed), "train_tokens": 0, "gen_tokens": 0, "start_train_tokens": 0,
                "wall_s": float(sum(info.get("gen_wall_s", [])))}
        for gen in info.get("gen_counts", []):
            for phase, work in gen.items():
                if isinstance(work, dict):
                    key = "start_train_tokens" if phase in ("founders", "generalists") else "train_tokens"
                    line[key] += work.get("train_tokens", 0)
                    line["gen_tokens"] += work.get("gen_tokens", 0) if phase not in ("founders", "generalists") else 0
        out.append(line)
    return pd.DataFrame(out)


def compute_table(rows: pd.DataFrame, work: pd.DataFrame) -> pd.DataFrame:
    """Per arm, the mean per seed of: samples drawn, loop verifier calls, LoRA optimizer steps (founders and
    generalists included), tokens trained in the rounds and tokens generated (evaluation and sampling)."""
    cost = rows[rows["metric"].str.startswith("cost_")].pivot_table(index=["arm", "seed"], columns="metric",
                                                                  values="value", aggfunc="first")
    w = cost.join(work.set_index(["arm", "seed"]), how="left") if not work.empty else cost
    lines = []
    for arm in order(w.index.get_level_values("arm").unique()):
        g = w.loc[arm]
        lines.append({"arm": arm, "n": len(g), **{k.removeprefix("cost_"): float(g[k].mean()) for k in
                                                 ("cost_samples", "cost_verifier_calls", "cost_train_steps")},
                      **{k: float(g[k].mean()) for k in ("train_tokens", "gen_tokens") if k in g}})
    return pd.DataFrame(lines)


__all__ = ["CLIMB", "arm_table", "chosen", "compute_table", "curve", "kept", "load_data", "outcome", "primary"]
