"""The operators results of the README (Fig. 1, S1), from ``data/<scale>/operators/``: QD against top-P at
every λ, the consensus against the mean agent, conformity against fitness; the setup and the prose's numbers
as inline values. Computed by :mod:`lib.operators.analysis` (paired sign-flip CI and p)."""
from __future__ import annotations

from typing import Callable

import numpy as np

from lib.core.manifest import read_manifest
from lib.core.paths import data_dir
from lib.operators.analysis import (conformity_fitness_r, consensus_gain, parents_changed, qd_minus_top_p,
                                    trade_grows_with_lam)
from lib.operators.figures import load_data
from lib.core.effects import delta_null, from_data, results_table
from lib.core.format import NO_DATA, p_text

EXPERIMENT = "operators"


def _manifest(scale: str, experiment: str) -> dict | None:
    folder = data_dir(scale, experiment)
    return read_manifest(folder) if folder.is_dir() else None


def load(scale: str) -> dict | None:
    """The operators tables of ``scale`` (:func:`lib.operators.figures.load_data`) with its manifest's
    ``config`` and ``society_lam``, the λ of the society's run at ``scale`` (NaN without one); ``None``
    without data."""
    manifest = _manifest(scale, EXPERIMENT)
    if manifest is None:
        return None
    society = _manifest(scale, "society")
    return {**load_data(scale), "config": manifest["config"],
            "society_lam": float(society["config"].get("lam", np.nan)) if society else np.nan}


def _lam(x: float) -> str:
    return f"{x:g}"


def _whose(data: dict, lam: float) -> str:
    """Whose λ this is: Fig. 1e's (the config's ``lam``) and, when equal, the society's; ``""`` otherwise."""
    if not np.isclose(lam, float(data["config"]["lam"])):
        return ""
    return "Fig. 1e's" + (" and the society's" if np.isclose(lam, data["society_lam"]) else "")


@from_data(load, NO_DATA)
def operators_results(data: dict) -> str:
    """Fig. 1a's correlation, S1a's consensus gain and one row per λ > 0 of QD − top-P on the same
    population for Fig. 1c (parents' mean score) and 1d (their mean pairwise distance)."""
    agents = data["agents"]
    s1 = consensus_gain(agents)
    lines = [f"| 1a | conformity vs verifier fitness, all {len(agents)} agents | correlation r = "
             f"{conformity_fitness_r(agents):.2f} | — | {len(agents)} agents |",
             f"| S1a | consensus accuracy − mean agent fitness | {delta_null(s1['mean'], s1['lo'], s1['hi'])}; "
             f"consensus better in {s1['better']} of {s1['n']} | {p_text(s1['p'])} | {s1['n']} |"]
    t = qd_minus_top_p(data["selection"])
    score, dist = (t[t["metric"] == m].set_index("lam") for m in ("mean_score", "mean_distance"))
    for k, lam in enumerate(score.index):
        a, b = score.loc[lam], dist.loc[lam]
        what = "parents' mean score / mean pairwise distance, QD − top-P, λ = " if k == 0 else "… λ = "
        whose = _whose(data, lam)
        n = f"{int(a.n)}" if a.n == b.n else f"{int(a.n)} / {int(b.n)}"
        lines.append(f"| 1c / 1d | {what}{_lam(lam)}{f' ({whose} λ)' if whose else ''} | "
                     f"{delta_null(a['mean'], a.lo, a.hi)} / {delta_null(b['mean'], b.lo, b.hi)} | "
                     f"{p_text(a.p)} / {p_text(b.p)} | {n} |")
    return results_table(lines)


@from_data(load, "—")
def operators_majority(data: dict) -> str:
    """What "the majority is mostly right" means here: the consensus's accuracy and the agents' mean fitness, means
    over the populations."""
    per = data["agents"].groupby("seed").agg(fitness=("fitness", "mean"), consensus=("consensus_acc", "first"))
    return (f"the majority answer is right on {per['consensus'].mean():.3f} of the prompts while the agents' mean "
            f"fitness is {per['fitness'].mean():.3f}")


@from_data(load, "no data yet")
def operators_setup(data: dict) -> str:
    """The heading's setup: populations, agents, prompts and parents."""
    agents, cfg = data["agents"], data["config"]
    per = agents.groupby("seed").size()
    size = f"{per.iloc[0]}" if per.nunique() == 1 else f"{per.min()}–{per.max()}"
    parents = data["selection"]["selected"].astype(str).str.split().map(len)
    return (f"{agents['seed'].nunique()} synthetic populations of {size} agents, "
            f"{int(cfg['prompts_per_family']) * len(cfg['families'])} prompts, {int(parents.max())} parents")


@from_data(load, "—")
def operators_trend(data: dict) -> str:
    """Whether QD's loss of score and gain of diversity over top-P grow with λ at every step
    (:func:`lib.operators.analysis.trade_grows_with_lam`)."""
    return "monotonically in λ" if trade_grows_with_lam(data["selection"]) else "though not monotonically in λ"


@from_data(load, "—")
def operators_trend_summary(data: dict) -> str:
    """:func:`operators_trend` in the README's summary, where λ is "the penalty"."""
    return ("more so the larger the penalty" if trade_grows_with_lam(data["selection"])
            else "though not steadily more so the larger the penalty")


@from_data(load, "—")
def operators_config_lam(data: dict) -> str:
    """The λ of Fig. 1e (the config's), and whether the society uses it."""
    lam = float(data["config"]["lam"])
    return f"λ = {_lam(lam)} ({_whose(data, lam)})"


@from_data(load, "—")
def operators_changed(data: dict) -> str:
    """In how many populations QD changes the parents at the config's λ, at the smallest λ > 0, and from
    which λ on in all."""
    t = parents_changed(data["selection"]).set_index("lam")
    t = t[t.index > 0]
    lam = float(data["config"]["lam"])
    here = (f"{int(t.loc[lam, 'changed'])} of the {int(t.loc[lam, 'n'])} populations" if lam in t.index
            else f"an unknown number of populations (λ = {_lam(lam)} is not swept)")
    rest = [f"λ = {_lam(t.index[0])}: {int(t['changed'].iloc[0])}"]
    full = (t["changed"] == t["n"]).astype(int)
    every = t.index[full[::-1].cummin()[::-1] == 1]  # the λ from which on every population changes
    if len(every):
        rest.append(f"all {int(t.loc[every[0], 'n'])} from λ = {_lam(every[0])}")
    return f"{here} ({'; '.join(rest)})"


TABLES: dict[str, Callable[[str], str]] = {"operators-results": operators_results}
VALUES: dict[str, Callable[[str], str]] = {"operators-setup": operators_setup, "operators-trend": operators_trend,
                                           "operators-trend-summary": operators_trend_summary,
                                           "operators-majority": operators_majority,
                                           "operators-config-lam": operators_config_lam,
                                           "operators-changed": operators_changed}
