"""Fig. 3 (the society at LLM scale) and its SI panels, drawn from the tidy society rows.

Rows (``lib.llm.society.COLUMNS``): one per (arm, seed, generation, agent, metric). The population's
accuracy at a generation is the mean over its agents; bands are bootstrap 95 % CIs over seeds.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import matplotlib.pyplot as plt
from matplotlib.ticker import MaxNLocator
import numpy as np
import pandas as pd

from .style import arm_style, line_kw, paired_difference_panel, save_figure, use_style
from ..core.paths import config_path, data_dir
from ..analysis.stats import MIN_CI_N, mean_ci_table, paired_differences

EXPERIMENT = "society"
SWEEP = "society_g_sweep"
ELITISM = "society_elitism"  # the elitism comparison's runs (<arm>@e1), read together with the main rows
NOTEBOOK = "03_society_arms.ipynb"
ARM_ORDER = ["full", "no_grounding", "no_sex", "no_diversity", "sex_linear"]


def _shards(folder: Path) -> list[Path]:
    return sorted(p for p in folder.glob("*_s*.csv"))


def load_data(scale: str) -> dict:
    """``{"rows", "files", "sweep", "sweep_files"}`` from ``data/<scale>/society[_elitism|_g_sweep]/``
    (``rows``: the main run and the elitism comparison's runs; ``sweep``: the grounding-knob sweep).

    Raises ``FileNotFoundError`` naming the folder and the command that fills it.
    """
    folder = data_dir(scale, EXPERIMENT)
    files = _shards(folder)
    if not files:
        raise FileNotFoundError(f"no society rows in {folder}: run "
                                f"`python -m lib.experiment configs/society/{scale}.yaml`")
    files += _shards(data_dir(scale, ELITISM))  # its <arm>@e1 runs pair with the main run's arms
    rows = pd.concat([pd.read_csv(f) for f in files], ignore_index=True)
    sfolder = data_dir(scale, SWEEP)
    sfiles = _shards(sfolder)
    sweep = pd.concat([pd.read_csv(f) for f in sfiles], ignore_index=True) if sfiles else None
    if sweep is not None:
        sweep, borrowed = _with_main_g(sweep, rows, folder, scale)
        sfiles = list(sfiles) + borrowed
    return {"rows": rows, "files": [str(f) for f in files], "sweep": sweep, "sweep_files": [str(f) for f in sfiles]}


def _with_main_g(sweep: pd.DataFrame, rows: pd.DataFrame, folder, scale: str):
    """The sweep plus, for every knob value it leaves out, the main run's arm that *is* ``full`` at
    that g, on the sweep's seeds, renamed ``full@g<g>``: ``full`` itself (g = the config's g) and
    ``no_grounding`` (g = 0: the same switches as ``full@g0``, lib.methods.operators.arm_settings).

    ``full`` is the very same run (same settings, founders and random numbers); ``no_grounding`` runs
    on its own random stream, so its pairing with the sweep's runs is by seed only.
    configs/society_g_sweep/ relies on this instead of running these points twice.
    """
    from ..core.config import load_yaml
    from ..methods.operators import arm_settings
    g = float(load_yaml(config_path(SWEEP, scale)).get("g", 0.5))
    have = set(sweep["arm"].str.extract(r"@g([0-9.]+)$")[0].astype(float))
    seeds = sorted(set(sweep["seed"]))
    parts, borrowed = [sweep], []
    for arm in (REFERENCE, "no_grounding"):
        st = arm_settings(arm, g)
        if st != arm_settings(REFERENCE, st["g"]) or st["g"] in have:
            continue
        main = rows[(rows["arm"] == arm) & rows["seed"].isin(seeds)]
        if main.empty:
            continue
        parts.append(main.assign(arm=f"{REFERENCE}@g{st['g']:g}", experiment=sweep["experiment"].iloc[0]))
        borrowed += [str(folder / f"{arm}_s{sd}.csv") for sd in sorted(set(main["seed"]))]
        have.add(st["g"])
    return pd.concat(parts, ignore_index=True), borrowed


def arms_in(df: pd.DataFrame) -> list[str]:
    """The arms present, in :data:`ARM_ORDER`; a variant ``<arm>@<tag>`` right after its base arm."""
    present = list(dict.fromkeys(df["arm"]))
    bases = list(dict.fromkeys(a.split("@", 1)[0] for a in present))
    bases = [b for b in ARM_ORDER if b in bases] + [b for b in bases if b not in ARM_ORDER]
    return [a for b in bases for a in ([b] if b in present else []) + sorted(
        x for x in present if x.split("@", 1)[0] == b and x != b)]


PARENT_CODE_BASE = 100  # a "parents" row's value is a * 100 + b (lib.llm.society writes it)


def decode_parents(code) -> tuple[int, int]:
    """A ``parents`` row's value ``100·a + b`` → ``(a, b)``: the indices, in the previous
    generation, of the child's two parents (``a == b``: a retrained copy of one parent, or an elite)."""
    a, b = divmod(int(round(float(code))), PARENT_CODE_BASE)
    return a, b


def parents_table(df: pd.DataFrame) -> pd.DataFrame:
    """One row per child: ``arm, seed, generation, agent, parent_a, parent_b, copy`` (``copy``: one
    source, ``parent_a == parent_b``). Parents are agents of ``generation - 1`` of the same arm and seed."""
    par = df[df["metric"] == "parents"]
    ab = [decode_parents(v) for v in par["value"]]
    out = par[["arm", "seed", "generation", "agent"]].copy()
    out["parent_a"] = [a for a, _ in ab]
    out["parent_b"] = [b for _, b in ab]
    out["copy"] = out["parent_a"] == out["parent_b"]
    return out.sort_values(["arm", "seed", "generation", "agent"]).reset_index(drop=True)


def parents_wide(df: pd.DataFrame) -> pd.DataFrame:
    """The parents of every child as text ``"a+b"`` (``"a"`` for a copy), one row per
    (arm, seed, generation), one column per child agent."""
    t = parents_table(df)
    t["parents"] = [str(a) if c else f"{a}+{b}" for a, b, c in zip(t["parent_a"], t["parent_b"], t["copy"])]
    return t.pivot_table(index=["arm", "seed", "generation"], columns="agent", values="parents", aggfunc="first")


def population_metric(df: pd.DataFrame, metric: str) -> pd.DataFrame:
    """Per (arm, seed, generation): the mean over agents of ``metric`` (column ``value``)."""
    d = df[df["metric"] == metric]
    return d.groupby(["arm", "seed", "generation"], as_index=False)["value"].mean()


def selected_conformity(df: pd.DataFrame) -> pd.DataFrame:
    """Per (arm, seed, generation): mean conformity of the agents selected as parents."""
    d = df[(df["metric"] == "val_overall") & (df["selected"].astype(str) == "True")]
    return d.groupby(["arm", "seed", "generation"], as_index=False)["conformity"].mean().rename(
        columns={"conformity": "value"})


def last_generation_table(df: pd.DataFrame, metric: str = "test_overall") -> pd.DataFrame:
    """Per (arm, seed): the population's ``metric`` at the last generation."""
    d = population_metric(df, metric)
    last = d.groupby(["arm", "seed"])["generation"].transform("max")
    return d[d["generation"] == last].drop(columns="generation").reset_index(drop=True)


REFERENCE = "full"


def arm_reference(arm: str, arms) -> str | None:
    """The arm ``arm`` is compared with: ``full`` for a plain arm; for a variant ``<arm>@<tag>``
    (e.g. ``no_grounding@e1``) the reference run with the same tag (``full@e1``) when present, else
    ``full``; ``full@<tag>`` itself is compared with ``full``. ``None`` for ``full``."""
    if arm == REFERENCE:
        return None
    base, sep, tag = arm.partition("@")
    if sep and base != REFERENCE and f"{REFERENCE}@{tag}" in set(arms):
        return f"{REFERENCE}@{tag}"
    return REFERENCE


def paired_vs_reference(last: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per-seed differences of every arm from its :func:`arm_reference` and their summary
    (:func:`lib.analysis.stats.paired_differences`): ``(points, summary)`` with a ``reference`` column."""
    arms = arms_in(last)
    pts, summ = [], []
    for ref in dict.fromkeys(r for r in (arm_reference(a, arms) for a in arms) if r is not None):
        if ref not in arms:
            continue
        mine = [a for a in arms if arm_reference(a, arms) == ref]
        p, s_ = paired_differences(last[last["arm"].isin(mine + [ref])], group="arm", reference=ref)
        pts.append(p.assign(reference=ref))
        summ.append(s_)
    if not summ:
        return (pd.DataFrame(columns=["arm", "seed", "diff", "reference"]),
                pd.DataFrame(columns=["arm", "reference", "n", "mean", "lo", "hi", "p", "test"]))
    return pd.concat(pts, ignore_index=True), pd.concat(summ, ignore_index=True)


def _curves(ax, d: pd.DataFrame, arms, ylabel: str, title: str = "", band: bool = False):
    """Mean over seeds per generation, one line per arm in its fixed style (band: 95 % CI, n ≥ 3)."""
    t = mean_ci_table(d, ["arm", "generation"])
    for a in arms:
        x = t[t["arm"] == a]
        if x.empty:
            continue
        ax.plot(x["generation"], x["mean"], **line_kw(a, ms=3.5, lw=1.3))
        if band and (x["n"] >= MIN_CI_N).all():
            ax.fill_between(x["generation"], x["lo"], x["hi"], color=arm_style(a)["color"], alpha=0.12, lw=0)
    ax.set_xlabel("generation")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title, fontsize=9)


def _n_seeds(d: pd.DataFrame) -> str:
    n = sorted(set(d.groupby("arm")["seed"].nunique()))
    return (f"n = {n[0]} seed" + ("s" if n[0] != 1 else "")) if len(n) == 1 else f"n = {n[0]}–{n[-1]} seeds"


def draw_metric(df: pd.DataFrame, metric: str, *, ylabel: str, title: str = "", band: bool = True):
    """One panel: the population mean of ``metric`` per generation, one line per arm (mean over
    seeds; band: bootstrap 95 % CI over seeds when every point has ≥ 3 seeds)."""
    use_style()
    fig, ax = plt.subplots(figsize=(4.2, 3.2))
    d = selected_conformity(df) if metric == "selected_conformity" else population_metric(df, metric)
    _curves(ax, d, arms_in(df), ylabel, title or _n_seeds(d), band=band)
    ax.legend(fontsize=7, frameon=False)
    fig.tight_layout()
    return fig


def draw_metric_paired(df: pd.DataFrame, metric: str, *, ylabel: str):
    """Two panels. Left: the population mean of ``metric`` per generation, one line per arm (mean
    over seeds). Right: at the last generation, each arm minus ``full`` on the same seed (dots), the
    mean difference with its bootstrap 95 % CI and the paired permutation p."""
    use_style()
    d = population_metric(df, metric)
    arms = arms_in(df)
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(7.6, 3.3), gridspec_kw={"width_ratios": [1.05, 1]})
    _curves(a1, d, arms, ylabel, f"(a) mean over seeds, {_n_seeds(d)}")
    a1.legend(fontsize=6.5, frameon=False)
    last = last_generation_table(df, metric)
    pts, summ = paired_vs_reference(last)
    if len(summ):
        refs = sorted(set(summ["reference"]))
        paired_difference_panel(a2, pts, summ, group="arm", order=[a for a in arms if a in set(summ["arm"])],
                                reference=" / ".join(refs), ylabel=f"{ylabel} at the last generation")
        a2.set_title("(b) " + a2.get_title(loc="left"), fontsize=7, loc="left", pad=16)
    else:
        a2.text(0.5, 0.5, "no reference arm 'full' in the data", ha="center", va="center", transform=a2.transAxes)
        a2.set_axis_off()
    fig.tight_layout()
    return fig


def draw_families(df: pd.DataFrame):
    """Test accuracy per task family (one sub-panel each), one line per arm (mean over seeds)."""
    use_style()
    fams = [m[5:] for m in dict.fromkeys(df["metric"]) if m.startswith("test_") and m != "test_overall"]
    fig, axes = plt.subplots(1, len(fams), figsize=(2.6 * len(fams), 2.9), sharey=True, squeeze=False)
    for ax, f in zip(axes[0], fams):
        _curves(ax, population_metric(df, f"test_{f}"), arms_in(df), "test accuracy", f)
    axes[0][-1].legend(fontsize=6.5, frameon=False)
    fig.tight_layout()
    return fig


def ancestry(parents: pd.DataFrame, generation: int, agent: int) -> set[tuple[int, int, int, int]]:
    """Edges ``(t-1, parent, t, child)`` of every ancestor of ``agent`` at ``generation``
    (``parents``: :func:`parents_table` of one arm and seed)."""
    by = {(int(r.generation), int(r.agent)): (int(r.parent_a), int(r.parent_b)) for r in parents.itertuples()}
    edges, todo = set(), [(generation, agent)]
    while todo:
        t, a = todo.pop()
        if (t, a) not in by:
            continue
        for p in set(by[(t, a)]):
            e = (t - 1, p, t, a)
            if e not in edges:
                edges.add(e)
                todo.append((t - 1, p))
    return edges


def top_chain(parents: pd.DataFrame, agents: pd.DataFrame, generation: int, agent: int) -> list[tuple[int, int]]:
    """The line of best ancestors of ``agent`` at ``generation``: from it, step to whichever of its
    two parents had the higher selection score (``agents``: the ``val_overall`` rows of one arm and
    seed, which carry ``score``; ties: the lower index). Returns ``[(generation, agent), ...]``
    back to generation 0 (or to the first agent without a recorded parent)."""
    by = {(int(r.generation), int(r.agent)): (int(r.parent_a), int(r.parent_b)) for r in parents.itertuples()}
    score = {(int(r.generation), int(r.agent)): float(r.score) for r in agents.itertuples()}
    chain = [(generation, agent)]
    while chain[-1] in by:
        t, a = chain[-1]
        ps = sorted(set(by[(t, a)]), key=lambda p: (-score.get((t - 1, p), float("-inf")), p))
        chain.append((t - 1, ps[0]))
    return chain


def draw_lineage(df: pd.DataFrame, arm: str | None = None, seed: int | None = None):
    """S3a: who bred in one run (one arm, one seed). Agents are dots (x: generation, y: index);
    filled black: selected as parents. Grey edges: parent → child (solid: a merge of two parents;
    dotted: a retrained copy of one). Coloured: the ancestry of the last generation's top-scoring
    agent (thin) and its line of best ancestors (:func:`top_chain`, thick)."""
    use_style()
    arms = arms_in(df)
    arm = arm or (REFERENCE if REFERENCE in arms else arms[0])
    d = df[df["arm"] == arm]
    seed = int(d["seed"].min()) if seed is None else int(seed)
    d = d[d["seed"] == seed]
    par = parents_table(d)
    agents = d[d["metric"] == "val_overall"]
    fig, ax = plt.subplots(figsize=(5.4, 3.2))
    for r in par.itertuples():
        for p in {r.parent_a, r.parent_b}:
            ax.plot([r.generation - 1, r.generation], [p, r.agent], color="0.75", lw=0.7,
                    ls=":" if r.copy else "-", zorder=1)
    last_t = int(agents["generation"].max())
    final = agents[agents["generation"] == last_t]
    top = final.sort_values(["score", "agent"], ascending=[False, True]).iloc[0]
    st = arm_style(arm)
    for t0, p, t1, c in ancestry(par, last_t, int(top["agent"])):
        ax.plot([t0, t1], [p, c], color=st["color"], lw=1.0, alpha=0.45, zorder=2)
    chain = top_chain(par, agents, last_t, int(top["agent"]))
    ax.plot([t for t, _ in chain], [a for _, a in chain], color=st["color"], lw=2.8, zorder=2,
            solid_capstyle="round", solid_joinstyle="round")
    sel = agents["selected"].astype(str) == "True"
    ax.scatter(agents.loc[~sel, "generation"], agents.loc[~sel, "agent"], s=22, facecolor="white",
               edgecolor="0.45", lw=0.8, zorder=3)
    ax.scatter(agents.loc[sel, "generation"], agents.loc[sel, "agent"], s=22, color="black", zorder=3)
    ax.scatter([last_t], [top["agent"]], s=110, marker="*", color=st["color"], edgecolor="black", lw=0.6, zorder=4)
    from matplotlib.lines import Line2D
    handles = [
        Line2D([], [], ls="", marker="o", mfc="black", mec="black", ms=4.5, label="selected as parent"),
        Line2D([], [], ls="", marker="o", mfc="white", mec="0.45", ms=4.5, label="not selected"),
        Line2D([], [], color="0.75", lw=0.7, label="merge: child of two parents"),
        Line2D([], [], color="0.75", lw=0.7, ls=":", label="copy: retrained from one"),
        Line2D([], [], ls="", marker="*", ms=9, mfc=st["color"], mec="black",
               label="top-scoring agent,\nlast generation"),
        Line2D([], [], color=st["color"], lw=1.0, alpha=0.45, label="all its ancestors"),
        Line2D([], [], color=st["color"], lw=2.8, label="its best-scoring\nancestor line")]
    ax.legend(handles=handles, fontsize=6, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    ax.set(xlabel="generation", ylabel="agent index", title=f"{arm}, seed {seed}")
    ax.title.set_fontsize(9)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.invert_yaxis()
    fig.tight_layout()
    return fig


def draw_g_sweep(sweep: pd.DataFrame):
    """S3b: last-generation test accuracy of the ``full`` arm against the grounding knob g: one dot
    per seed, the mean over seeds, and its bootstrap 95 % CI only where there are ≥ 3 seeds."""
    use_style()
    d = last_generation_table(sweep)
    d["g"] = d["arm"].str.extract(r"@g([0-9.]+)$")[0].astype(float)
    t = mean_ci_table(d, ["g"])
    st = arm_style(REFERENCE)
    fig, ax = plt.subplots(figsize=(3.8, 3.0))
    for sd, part in d.groupby("seed"):
        part = part.sort_values("g")
        ax.plot(part["g"], part["value"], color=st["color"], lw=0.6, alpha=0.35, zorder=1)
        ax.scatter(part["g"], part["value"], s=12, color=st["color"], alpha=0.5, lw=0, zorder=2)
    ci = (t["n"] >= MIN_CI_N).all()
    ax.errorbar(t["g"], t["mean"], yerr=[t["mean"] - t["lo"], t["hi"] - t["mean"]] if ci else None,
                marker="D", ms=5, capsize=3, color="black", lw=1.2, zorder=3,
                label="mean, 95 % CI" if ci else "mean over seeds")
    n = sorted(set(t["n"]))
    ax.set_xlabel("grounding knob g (0: conformity only, 1: verifier only)")
    ax.set_ylabel("test accuracy, last generation")
    ax.set_title(f"full arm; dots/lines: seeds (n = {'–'.join(map(str, n))})"
                 + ("" if ci else "; no CI with n < 3"), fontsize=8)
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


@dataclass(frozen=True)
class Panel:
    """One saved Fig. 3 / S3 panel. ``draw(data)`` gets :func:`load_data`'s dict and returns a figure,
    or ``None`` when its data is absent (the panel is then skipped). ``source`` names the data it is
    drawn from: ``"rows"`` (``data/<scale>/society/``) or ``"sweep"`` (``.../society_g_sweep/``)."""
    name: str
    draw: Callable[[dict], object]
    caption: str
    source: str = "rows"


def _if_metric(metric: str, fn: Callable[[pd.DataFrame], object]) -> Callable[[dict], object]:
    return lambda data: fn(data["rows"]) if metric in set(data["rows"]["metric"]) else None


PANELS: list[Panel] = [
    Panel("fig3a_society_test_accuracy",
          _if_metric("test_overall", lambda df: draw_metric_paired(df, "test_overall", ylabel="test accuracy")),
          "Held-out test accuracy (population mean): (a) per generation and arm, mean over seeds; (b) last "
          "generation, each arm minus full on the same seed (dots), mean difference, bootstrap 95 % CI, paired p."),
    Panel("fig3b_society_test_by_family", lambda data: draw_families(data["rows"]),
          "Held-out test accuracy per task family, per generation and arm (mean over agents and seeds)."),
    Panel("fig3c_society_consensus",
          _if_metric("consensus_acc", lambda df: draw_metric_paired(df, "consensus_acc", ylabel="consensus accuracy")),
          "Accuracy of the population's modal answer on the conformity pool: (a) per generation and arm; "
          "(b) last generation, each arm minus full on the same seed, mean difference, 95 % CI, paired p."),
    Panel("fig3d_society_diversity",
          _if_metric("diversity_behav", lambda df: draw_metric(df, "diversity_behav", ylabel="behavioural diversity")),
          "Mean pairwise behavioural distance between agents, per generation and arm (band: 95 % CI over seeds)."),
    Panel("fig3e_society_selected_conformity",
          lambda data: draw_metric(data["rows"], "selected_conformity", ylabel="conformity of parents"),
          "Mean conformity (agreement with the consensus) of the agents selected as parents (band: 95 % CI over seeds)."),
    Panel("S3a_society_lineage", lambda data: draw_lineage(data["rows"]),
          "Who bred in one run (full arm, first seed): parent → child edges, selected agents in black, the "
          "ancestry of the last generation's top-scoring agent in colour."),
    Panel("S3b_society_g_sweep", lambda data: None if data["sweep"] is None else draw_g_sweep(data["sweep"]),
          "Grounding-knob sweep: last-generation test accuracy of the full arm against g (dots: seeds; mean). "
          "Points the sweep leaves out come from the main run on the same seeds: g = 0.5 is its full arm, "
          "g = 0 its no_grounding arm (the same switches as full at g = 0, on its own random stream).",
          source="sweep"),
]


def draw_all(scale: str) -> list[str]:
    """Draw and save every panel of :data:`PANELS` from ``data/<scale>/society*``; returns the names saved.

    To add a panel, append a :class:`Panel` to ``PANELS`` (e.g. from another module:
    ``PANELS += society_diagnostics.PANELS`` at the end of this file)."""
    data = load_data(scale)
    where = {"rows": (data["files"], str(config_path(EXPERIMENT, scale))),
             "sweep": (data["sweep_files"], str(config_path(SWEEP, scale)))}
    saved = []
    for panel in PANELS:
        fig = panel.draw(data)
        if fig is None:
            continue
        files, cfgp = where[panel.source]
        save_figure(fig, panel.name, scale=scale, caption=panel.caption, data=files, config=cfgp, notebook=NOTEBOOK)
        plt.close(fig)
        saved.append(panel.name)
    return saved


def _ci_text(lo, hi, n) -> str:
    return f"[{lo:.3f}, {hi:.3f}]" if n >= MIN_CI_N and np.isfinite(lo) else f"none (n = {n})"


def stats_table(scale: str) -> pd.DataFrame:
    """Fig. 3 statistics at the last generation: every arm against its reference (``full``; a
    variant ``<arm>@<tag>`` against ``full@<tag>`` when present), paired on seed.

    One row per (metric, arm): n seeds, the arm's mean with a 95 % bootstrap CI, the mean paired
    difference arm − reference with its 95 % bootstrap CI, and the sign-flip permutation p-value
    (NaN with one seed; CIs only with ≥ 3 seeds).
    """
    from ..analysis.stats import bootstrap_ci

    df = load_data(scale)["rows"]
    out = []
    for fig, metric in (("fig3a", "test_overall"), ("fig3c", "consensus_acc"), ("fig3d", "diversity_behav")):
        last = last_generation_table(df, metric)
        _, summ = paired_vs_reference(last)
        summ = summ.set_index("arm")
        for arm in arms_in(last):
            v = last.loc[last["arm"] == arm, "value"]
            m, lo, hi = bootstrap_ci(v)
            row = {"figure": fig, "metric": metric, "arm": arm, "n": int(v.notna().sum()),
                   "mean": m, "ci95": _ci_text(lo, hi, int(v.notna().sum()))}
            if arm in summ.index:
                c = summ.loc[arm]
                row.update({"reference": c["reference"], "effect (arm - ref)": float(c["mean"]),
                            "effect ci95": _ci_text(c["lo"], c["hi"], int(c["n"])), "p": float(c["p"])})
            out.append(row)
    return pd.DataFrame(out)


from . import society_diagnostics as _diagnostics  # noqa: E402  SI S3c–S3g, the operators' diagnostics
PANELS += _diagnostics.panels()
