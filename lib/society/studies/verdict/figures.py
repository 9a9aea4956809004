"""Fig. 3 (the society at LLM scale) and its SI panels, drawn from the tidy society rows.

Rows (``lib.society.run.COLUMNS``): one per (arm, seed, generation, agent, metric). The population's
accuracy at a generation is the mean over its agents; seeds are the unit of replication: bands and
error bars of a mean over seeds are its 95 % CI (t) cut to [0, 1] (every metric here is a rate), those
of a paired difference arm − reference on the same seeds its 95 % CI (sign-flip inversion) (unbounded,
so not drawn, with fewer than 6 seeds). The reference ``full`` is drawn last, on top and thicker; the
bare base's accuracy, where recorded, as a grey dash-dotted line. Baseline arms (``baseline_…``: one
model, no generations) are left out of every trajectory. The society against the field's merge methods
(Fig. 3f, with S3k–S3m), skill retention, skill loss and generalists (S3h–S3j) live in
:mod:`lib.society.studies.verdict.panels`, the operators' diagnostics (S3c–S3f) in
:mod:`lib.society.studies.diagnostics.figures`; their panels follow this module's in :data:`PANELS`. The
grounding knob (S3b) and elitism (S3g) are the society study's (:mod:`lib.society.studies.study.figures`). The
rows come from :mod:`lib.society.data`, which reads and joins the folders and names the arms.
:func:`draw_panel` draws any saved panel by name, as notebook 03 shows it.
"""
from __future__ import annotations

import matplotlib.patheffects as pe
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.lines import Line2D
from matplotlib.ticker import MaxNLocator

from lib.society.arms import BESIDE, REFERENCE, SEED_V2_ARMS, is_baseline
from lib.society.data import MAIN, config_of, files_of, first_verdict_folders, society_rows, society_walls
from lib.society.studies.diagnostics.comparisons import own_reference
from lib.society.studies.frames import (PARENT_CODE_BASE, arms_in, base_scores, decode_parents,  # noqa: F401
                                        parents_table, population_metric)
from lib.core.stats import (BOUNDED_T_CI, SIGN_FLIP_CI, T_CI, format_ci, format_p, mean_ci_table, paired_differences,
                              t_ci)
from lib.society.studies.diagnostics import figures as society_diagnostics
from lib.society.studies.verdict import panels as society_results
from lib import style
from lib.society import arms
from lib.style import (REFERENCE_GREY, DiffLayout, Panel, arm_style, finish_panel_grid, mean_curve,
                       paired_difference_panel, panel_grid, repo_path, save_panels, use_style, within_bounds)

style.register_looks(arms.LOOKS)  # the society's arms draw in the looks of their table

EXPERIMENT = MAIN
NOTEBOOK = "03_society_arms.ipynb"
ARM_ORDER = list(SEED_V2_ARMS)


def load_data(scale: str) -> dict:
    """``{"rows", "walls", "families", "files", "progress", "configs"}`` of the first run with the other
    breeding arms beside it (:func:`lib.society.data.society_rows` of :func:`lib.society.data.first_verdict_folders`:
    ``society/`` and ``society_recombination/``, or their seat-fair re-runs once both are whole, which hold
    ``full`` and ``no_sex`` of the breeding arms only; the recombination folder's own ``full`` is :data:`BESIDE`,
    ``full@breeding``, their reference, :func:`arm_reference`); ``walls``: their wall seconds per generation
    (:func:`lib.society.data.society_walls`); ``families``: the config's task families, in its order;
    ``files``, ``progress``, ``configs``: what they were read from (:func:`lib.society.data.files_of`).

    Raises ``FileNotFoundError`` naming the folder and the command that fills it.
    """
    folders = first_verdict_folders(scale)  # the committed pair, or both seat-fair re-runs
    rows = society_rows(scale, *folders, order="name")  # shards by name: the order drawn since Fig. 3
    return {"rows": rows, "walls": society_walls(scale, *folders),
            "families": list(config_of(MAIN, scale)["families"]), **files_of(scale, *folders)}


def parents_wide(df: pd.DataFrame) -> pd.DataFrame:
    """The parents of every child as text ``"a+b"`` (``"a"`` for a copy), one row per
    (arm, seed, generation), one column per child agent."""
    t = parents_table(df)
    t["parents"] = [str(a) if c else f"{a}+{b}" for a, b, c in zip(t["parent_a"], t["parent_b"], t["copy"])]
    return t.pivot_table(index=["arm", "seed", "generation"], columns="agent", values="parents", aggfunc="first")


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


def arm_reference(arm: str, arms) -> str | None:
    """The arm ``arm`` is compared with: ``full`` for a plain arm, but a breeding arm with the ``full``
    run beside it (``full@breeding``, :func:`lib.society.studies.diagnostics.comparisons.own_reference`) when present;
    for a variant ``<arm>@<tag>`` (e.g. ``no_grounding@e1``) the reference run with the same tag
    (``full@e1``) when present, else ``full``; ``full@<tag>`` itself is compared with ``full``.
    ``None`` for ``full``."""
    if arm == REFERENCE:
        return None
    if (own := own_reference(arm, arms)) is not None:
        return own
    base, sep, tag = arm.partition("@")
    if sep and base != REFERENCE and f"{REFERENCE}@{tag}" in set(arms):
        return f"{REFERENCE}@{tag}"
    return REFERENCE


def paired_vs_reference(last: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per-seed differences of every arm from its :func:`arm_reference` and their summary
    (:func:`lib.core.stats.paired_differences`): ``(points, summary)`` with a ``reference`` column."""
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


def trajectory_arms(df: pd.DataFrame) -> list[str]:
    """The arms with generations, in :func:`lib.society.studies.frames.arms_in` order (no baselines)."""
    return [a for a in arms_in(df) if not is_baseline(a)]


REFERENCE_LW = 2.4  # the reference arm's line: drawn first, thicker, with a white halo
SAME_CURVE = 1e-3   # two mean curves this close at every generation are one line (a second would lie hidden under it)


def _curves(ax, d: pd.DataFrame, arms, ylabel: str, title: str = "", band: bool = False):
    """Mean over seeds per generation, one line per arm in its fixed style (band: 95 % CI (t) cut to
    [0, 1], every society metric being a rate); the reference ``full`` drawn first, thicker, under the others."""
    t = within_bounds(mean_ci_table(d, ["arm", "generation"]))
    for a in [a for a in arms if a == REFERENCE] + [a for a in arms if a != REFERENCE]:
        x = t[t["arm"] == a]
        if not len(x):
            continue
        if a == REFERENCE:  # drawn first and thick: the arms near it stay visible on top of it
            mean_curve(ax, x, "generation", a, band=band, band_alpha=0.12, lw=REFERENCE_LW, ms=5, zorder=2,
                       path_effects=[pe.Stroke(linewidth=REFERENCE_LW + 2, foreground="white"), pe.Normal()])
        else:
            mean_curve(ax, x, "generation", a, band=band, band_alpha=0.12, zorder=4)
    ax.set_xlabel("generation")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title, fontsize=9)


def _n_seeds(d: pd.DataFrame) -> str:
    n = sorted(set(d.groupby("arm")["seed"].nunique()))
    return (f"n = {n[0]} seed" + ("s" if n[0] != 1 else "")) if len(n) == 1 else f"n = {n[0]}–{n[-1]} seeds"


def _seeds_text(seeds) -> str:
    seeds = sorted(int(s) for s in seeds)
    if seeds and seeds == list(range(seeds[0], seeds[-1] + 1)) and len(seeds) > 2:
        return f"seeds {seeds[0]}–{seeds[-1]}"
    return "seeds " + ", ".join(map(str, seeds))


def _in_order(ax, arms):
    """``ax``'s legend handles and labels, the arms in ``arms`` order first (the reference is drawn last
    but listed where it belongs), everything else after in drawing order."""
    h, lab = ax.get_legend_handles_labels()
    rank = {a: i for i, a in enumerate(arms)}
    order = sorted(range(len(lab)), key=lambda i: (rank.get(lab[i], len(rank)), i))
    return [h[i] for i in order], [lab[i] for i in order]


def _legend_right(ax, arms=(), **kw) -> None:
    h, lab = _in_order(ax, list(arms))
    ax.legend(h, lab, fontsize=kw.pop("fontsize", 6.5), loc="upper left", bbox_to_anchor=(1.01, 1.0),
              frameon=False, **kw)


BASE_METRIC = {"test_overall": "overall"}  # a population metric -> its bare-base key (base_test_<key>)


def base_level(df: pd.DataFrame, metric: str) -> tuple[float, int] | None:
    """The bare base's mean over seeds of ``metric`` (``test_overall`` or ``test_<family>``), read from its
    ``base_test_<key>`` rows (generation 0, agent −1: :func:`lib.society.studies.frames.base_scores`),
    and the number of seeds; ``None`` where the rows do not record it (consensus, diversity, …)."""
    key = BASE_METRIC.get(metric) or (metric[5:] if metric.startswith("test_") else None)
    if key is None or f"base_test_{key}" not in set(df["metric"]):
        return None
    v = base_scores(df, [key])[key].dropna()
    return (float(v.mean()), int(len(v))) if len(v) else None


def _base_line(ax, df: pd.DataFrame, metric: str) -> None:
    """The bare base's accuracy as a grey dash-dotted line (its legend entry names n seeds)."""
    b = base_level(df, metric)
    if b is not None:
        ax.axhline(b[0], color=REFERENCE_GREY, ls="-.", lw=1.1, zorder=2,
                   label=f"bare base (mean of {b[1]} seed{'s' if b[1] != 1 else ''})")


def _metric_table(df: pd.DataFrame, metric: str) -> pd.DataFrame:
    d = selected_conformity(df) if metric == "selected_conformity" else population_metric(df, metric)
    return d[~d["arm"].map(is_baseline)]


def draw_metric(df: pd.DataFrame, metric: str, *, ylabel: str, title: str = "", band: bool = True):
    """One panel: the population mean of ``metric`` per generation, one line per arm (mean over
    seeds; band: 95 % CI (t) over seeds), the legend outside the axes."""
    use_style()
    fig, ax = plt.subplots(figsize=(5.2, 3.2))
    d = _metric_table(df, metric)
    arms = trajectory_arms(d)
    _curves(ax, d, arms, ylabel, title or f"{_n_seeds(d)}; band: {BOUNDED_T_CI}", band=band)
    _base_line(ax, df, metric)
    _legend_right(ax, arms, fontsize=7)
    fig.tight_layout()
    return fig


def draw_metric_multiples(df: pd.DataFrame, metric: str, *, ylabel: str, what: str):
    """Small multiples: one sub-panel per arm, its population mean of ``metric`` per generation (mean
    over seeds, band: 95 % CI (t)) against its reference (:func:`arm_reference`; ``full`` for a plain
    arm) on the *same seeds* in grey; ``full``'s own sub-panel comes first. Shared y-axis."""
    use_style()
    d = _metric_table(df, metric)
    arms = trajectory_arms(d)
    fig, axes = panel_grid(len(arms), width=2.35, height=2.1, pad=0.5)
    for ax, a in zip(axes.flat, arms):
        mine = d[d["arm"] == a]
        seeds = set(mine["seed"])
        ref = arm_reference(a, arms)
        if ref is not None and ref in arms:
            r = mean_ci_table(d[(d["arm"] == ref) & d["seed"].isin(seeds)], ["generation"])
            ax.plot(r["generation"], r["mean"], color="0.6", lw=1.6, zorder=1, label=f"{ref}, same seeds")
        mean_curve(ax, within_bounds(mean_ci_table(mine, ["generation"])), "generation", a, band_alpha=0.2, ms=3)
        ax.set_title(f"{a} (n = {len(seeds)})", fontsize=8)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.tick_params(labelsize=7)
        if ref is not None:
            ax.legend(handles=[Line2D([], [], color="0.6", lw=1.6, label=f"{ref}, same seeds")], fontsize=6.2,
                      loc="best")
    finish_panel_grid(axes, len(arms))
    for ax in axes[:, 0]:
        ax.set_ylabel(ylabel, fontsize=8)
    for ax in axes[-1, :]:
        ax.set_xlabel("generation", fontsize=8)
    fig.suptitle(f"{what}: mean over seeds per arm (n in each title), band: {BOUNDED_T_CI}; grey: the arm's "
                 "reference on its seeds", fontsize=8.5)
    fig.tight_layout()
    return fig


def draw_metric_paired(df: pd.DataFrame, metric: str, *, ylabel: str, zoom: float | None = None,
                       text_pt: float | None = None):
    """Two panels. Left: the population mean of ``metric`` per generation, one line per arm (mean
    over seeds); an arm run on fewer seeds than its reference (the elitism variants ``<arm>@e1``) is
    shown beside that reference on the same seeds (thin line). Right: at the last generation, each
    arm minus its reference (:func:`arm_reference`) on the same seed (dots), the mean difference with
    its 95 % CI (sign-flip inversion) and the paired sign-flip p; each column names its reference.

    ``zoom``: below the left panel, the arms whose last generation lies within ``zoom`` of ``full``'s again, on a y
    axis that spans only them (on the first, drawn down to 0, their small differences lay one line over another);
    none where every arm lies that close.
    ``text_pt``: the size of every note, title and label of the columns (for a figure shown narrower than it is)."""
    use_style()
    d = population_metric(df, metric)
    d = d[~d["arm"].map(is_baseline)]
    arms = trajectory_arms(d)
    near = _near_reference(d, arms, zoom) if zoom is not None else []
    fig, a1, a2, az = _paired_axes(len(near) in (0, len(arms)))
    _curves(a1, d, arms, ylabel)
    if az is not None:
        _curves(az, d[d["arm"].isin(near)], near, ylabel)
    merged = _draw_fewer_seed_references(a1, az, d, arms, near)
    _base_line(a1, df, metric)
    pt = text_pt or 7
    _title_trajectories(a1, d, arms, merged, pt)
    if az is not None:
        _title_zoom(a1, az, len(near), zoom, pt)
    h, lab = _in_order(a1, arms)
    rows_ = -(-len(lab) // 5)  # below both panels, 8.5 pt: the README shows Fig. 3a at its column's width
    fig.legend(h, lab, fontsize=8.5, loc="lower center", bbox_to_anchor=(0.5, 0.0), ncol=5, frameon=False)
    _draw_last_generation_differences(a2, df, metric, ylabel, text_pt)
    fig.set_figheight(fig.get_figheight() + 0.3 * rows_)
    fig.tight_layout(rect=(0, (0.3 * rows_ + 0.15) / fig.get_figheight(), 1, 1))
    return fig


def _paired_axes(flat: bool):
    """The figure and its axes (trajectories, differences, zoom or None); ``flat``: no zoom panel below."""
    if flat:  # nothing to zoom on, or every arm close: the first panel shows them apart
        fig, (a1, a2) = plt.subplots(1, 2, figsize=(9.6, 4.4), gridspec_kw={"width_ratios": [1.0, 1.3]})
        return fig, a1, a2, None
    fig = plt.figure(figsize=(9.6, 6.6))
    grid = fig.add_gridspec(2, 2, width_ratios=[1.0, 1.3], height_ratios=[1.0, 1.15])
    a1 = fig.add_subplot(grid[0, 0])
    a2 = fig.add_subplot(grid[:, 1])
    az = fig.add_subplot(grid[1, 0], sharex=a1)
    return fig, a1, a2, az


def _fewer_seed_groups(d: pd.DataFrame, arms) -> dict[tuple[str, frozenset], list[str]]:
    """The arms run on fewer seeds than their reference, grouped by (reference, seeds)."""
    seeds_of = d.groupby("arm")["seed"].apply(set)
    fewer: dict[tuple[str, frozenset], list[str]] = {}
    for a in arms:
        ref = arm_reference(a, arms)
        if ref is None or ref not in seeds_of or seeds_of[a] >= seeds_of[ref]:
            continue
        fewer.setdefault((ref, frozenset(seeds_of[a])), []).append(a)
    return fewer


def _draw_fewer_seed_references(a1, az, d: pd.DataFrame, arms, near) -> float | None:
    """Draws each reference again (dotted) on the seeds of its arms run on fewer; returns full's merged gap."""
    merged = None  # how far apart full and its rerun lie, where drawn as one line
    for (ref, seeds), who in _fewer_seed_groups(d, arms).items():  # the reference drawn again, once, on those seeds
        r = d[(d["arm"] == ref) & d["seed"].isin(seeds)].groupby("generation")["value"].mean()
        mine = d[d["arm"] == BESIDE].groupby("generation")["value"].mean()
        gap = float(np.nanmax(np.abs(mine.reindex(r.index).to_numpy(float) - r.to_numpy(float)))) if len(r) else np.inf
        if BESIDE in who and gap <= SAME_CURVE:
            merged = gap  # full's own rerun on these seeds (the same curve as full there): drawn once, not twice
            continue
        for ax in [a1] + ([az] if az is not None and ref in near else []):
            ax.plot(r.index, r.to_numpy(), color=arm_style(ref)["color"], lw=1.0 if ax is a1 else 1.4, ls=":",
                    zorder=2 if ax is a1 else 5, label=f"{ref}, {_seeds_text(seeds)}\n(the seeds of {_wrap_names(who)})"
                    if ax is a1 else None)
    return merged


def _title_trajectories(a1, d: pd.DataFrame, arms, merged, pt: float) -> None:
    """Titles the left panel (a): the seeds it averages and what its dotted lines and the rerun show."""
    a1.set_title(f"(a) mean over seeds, {_n_seeds(d)}; no band ((b): the intervals)"
                 + ("\ndotted: full on the seeds of the arms run on fewer" if a1.get_lines() and any(
                     ln.get_linestyle() == ":" for ln in a1.get_lines()) else "")
                 + (f"\n{BESIDE}: full rerun on the breeding arms' seeds" if BESIDE in arms else "")
                 + (f"\n(the same curve as full on them, within {SAME_CURVE:g}: drawn once)" if merged else ""),
                 fontsize=pt, loc="left", pad=16 * pt / 7)


def _title_zoom(a1, az, n_near: int, zoom: float, pt: float) -> None:
    """Shades the zoomed range on panel (a) and titles the zoom panel below it."""
    lo, hi = az.get_ylim()
    a1.axhspan(lo, hi, color="0.9", zorder=0, lw=0)
    az.set_title(f"(a) zoomed (grey above): the {n_near} arms within {zoom:g} of full\nat the last generation, "
                 f"their y axis from {lo:.2f}", fontsize=pt, loc="left")
    a1.set_xlabel("")


def _draw_last_generation_differences(a2, df: pd.DataFrame, metric: str, ylabel: str, text_pt) -> None:
    """Draws panel (b): each arm minus its reference at the last generation, paired by seed."""
    pt = text_pt or 7
    last = last_generation_table(df, metric)
    last = last[~last["arm"].map(is_baseline)]
    pts, summ = paired_vs_reference(last)
    # full@breeding is full run again beside the breeding arms: a reproduction check, not a comparison
    check = pts[pts["arm"] == BESIDE]
    same = int((check["diff"] == 0).sum())
    pts, summ = pts[pts["arm"] != BESIDE], summ[summ["arm"] != BESIDE]
    if len(summ):
        paired_difference_panel(a2, pts, summ, group="arm", order=[a for a in arms_in(last) if a in set(summ["arm"])],
                                ylabel=f"{ylabel} at the last generation",
                                layout=DiffLayout(fontsize=text_pt, xlabel="arm − its reference" if text_pt else None))
        note = (f"\n{BESIDE} (full rerun beside the breeding arms)\nequals full at the last generation on "
                + (f"all {len(check)} of its seeds" if same == len(check) else f"{same} of its {len(check)} seeds")
                if len(check) else "")
        a2.set_title("(b) " + a2.get_title(loc="left") + note, fontsize=pt, loc="left",
                     pad=(31 if note else 21) * pt / 7)
    else:
        a2.text(0.5, 0.5, "no reference arm 'full' in the data", ha="center", va="center", transform=a2.transAxes)
        a2.set_axis_off()


def _near_reference(d: pd.DataFrame, arms, within: float) -> list[str]:
    """The arms (in ``arms`` order) whose mean at the last generation lies within ``within`` of ``full``'s."""
    last = d[d["generation"] == d["generation"].max()].groupby("arm")["value"].mean()
    return [a for a in arms if a in last and abs(last[a] - last.get(REFERENCE, np.nan)) <= within]


def _wrap_names(names, per_line: int = 2) -> str:
    """``a, b,\nc, d``: names joined, a line break every ``per_line`` names (legend entries stay narrow)."""
    names = list(names)
    return ",\n".join(", ".join(names[i:i + per_line]) for i in range(0, len(names), per_line))


def draw_families(df: pd.DataFrame, families=None):
    """Test accuracy per task family (one sub-panel each, in the order of ``families``, the config's;
    default: the order the rows name them), one line per arm (mean over seeds; ``full`` on top), the
    bare base on the family as a grey dash-dotted line."""
    use_style()
    fams = list(families) if families is not None else [
        m[5:] for m in dict.fromkeys(df["metric"])
        if m.startswith("test_") and m != "test_overall" and not m.endswith(("_familiar", "_novel"))]
    arms = trajectory_arms(df)
    fig, axes = plt.subplots(1, len(fams), figsize=(2.6 * len(fams) + 1.2, 3.2), sharey=True, squeeze=False)
    for ax, f in zip(axes[0], fams):
        _curves(ax, population_metric(df, f"test_{f}"), arms, "test accuracy", f)
        _base_line(ax, df, f"test_{f}")
    _legend_right(axes[0][-1], arms)
    fig.suptitle(f"Test accuracy per family: mean over seeds ({_n_seeds(df[df['arm'].isin(arms)])}), no interval "
                 "(Fig. 3a, panel (b), pairs the arms by seed); grey dash-dotted: the bare base", fontsize=8)
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
    arms = trajectory_arms(df)
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
    handles = [
        Line2D([], [], ls="", marker="o", mfc="black", mec="black", ms=4.5, label="selected as parent"),
        Line2D([], [], ls="", marker="o", mfc="white", mec="0.45", ms=4.5, label="not selected"),
        Line2D([], [], color="0.75", lw=0.7, label="merge: child of two parents"),
        Line2D([], [], color="0.75", lw=0.7, ls=":", label="copy: retrained from one"),
        Line2D([], [], ls="", marker="*", ms=9, mfc=st["color"], mec="black",
               label="top-scoring agent,\nlast generation"),
        Line2D([], [], color=st["color"], lw=1.0, alpha=0.45, label="all its ancestors"),
        Line2D([], [], color=st["color"], lw=2.8, label="its best-scoring\nancestor line")]
    ax.legend(handles=handles, fontsize=6.2, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    ax.set(xlabel="generation", ylabel="agent index", title=f"{arm}, seed {seed}")
    ax.title.set_fontsize(9)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.invert_yaxis()
    fig.tight_layout()
    return fig


def _if_metric(metric: str, fn):
    return lambda data: fn(data["rows"]) if metric in set(data["rows"]["metric"]) else None


_B = f"mean difference, {SIGN_FLIP_CI} (none with < 6 seeds), paired sign-flip p"
FIG3A_ZOOM = 0.1  # Fig. 3a zooms on the arms this close to full at the last generation (the ablation's 0.007-0.041)
PANELS: list[Panel] = [
    Panel("fig3a_society_test_accuracy",
          _if_metric("test_overall", lambda df: draw_metric_paired(df, "test_overall", ylabel="test accuracy",
                                                                   zoom=FIG3A_ZOOM, text_pt=8)),
          "The first verdict: held-out test accuracy (population mean): (a) per generation and arm, mean over seeds (no band), full on "
          f"top, and below it, where some arm ends further from full, the arms within {FIG3A_ZOOM:g} of full at the "
          "last generation again on a y axis of their own; dotted, where it is not full@breeding's own curve: full on the seeds of the arms run on fewer "
          "seeds; grey dash-dotted: the bare base; (b) last "
          "generation, each arm minus its reference (full; a variant X@tag: full@tag where that was run; a breeding arm: "
          f"full@breeding, the full run beside it at one commit) on the same seed (dots), {_B}."),
    Panel("fig3b_society_test_by_family", lambda data: draw_families(data["rows"], data.get("families")),
          "Held-out test accuracy per task family, per generation and arm (mean over agents, then over seeds; no "
          "interval), full on top; grey dash-dotted: the bare base on the family."),
    Panel("fig3c_society_consensus",
          _if_metric("consensus_acc", lambda df: draw_metric_paired(df, "consensus_acc", ylabel="consensus accuracy")),
          "Accuracy of the population's modal answer on the conformity pool: (a) per generation and arm; "
          f"(b) last generation, each arm minus its reference on the same seed, {_B}."),
    Panel("fig3d_society_diversity",
          _if_metric("diversity_behav", lambda df: draw_metric_multiples(
              df, "diversity_behav", ylabel="behavioural diversity", what="Behavioural diversity")),
          "Mean pairwise behavioural distance between agents per generation: one panel per arm, mean over seeds "
          f"with its {BOUNDED_T_CI} band, the arm's reference (grey) on the same seeds."),
    Panel("fig3e_society_selected_conformity",
          lambda data: draw_metric_multiples(data["rows"], "selected_conformity", ylabel="conformity of parents",
                                             what="Conformity of the selected parents"),
          "Mean conformity (agreement with the consensus) of the agents selected as parents, per generation: one "
          f"panel per arm, mean over seeds with its {BOUNDED_T_CI} band, the arm's reference (grey) on the same seeds."),
    Panel("S3a_society_lineage", lambda data: draw_lineage(data["rows"]),
          "Who bred in one run (full arm, first seed): parent → child edges, selected agents in black, the "
          "ancestry of the last generation's top-scoring agent in colour."),
] + society_results.PANELS + society_results.COMPARISON_PANELS + society_diagnostics.PANELS


def sources(data: dict) -> dict:
    """The data files and configs of each panel source, relative to the repository."""
    rows, configs = [repo_path(f) for f in data["files"]], [repo_path(c) for c in data["configs"]]
    return {"rows": (rows, configs), "comparison": (rows + [repo_path(f) for f in data["progress"]], configs)}


def draw_panel(name: str, data: dict):
    """The saved panel ``name`` of :data:`PANELS` drawn from ``data`` (:func:`load_data`) exactly as
    :func:`draw_all` saves it (``None`` where its data is absent): what notebook 03 shows under that name."""
    return style.draw_panel(PANELS, name, data)


def draw_all(scale: str) -> list[str]:
    """Draw and save every panel of :data:`PANELS` from :func:`load_data`; returns the names saved.
    To add a panel, append a :class:`lib.style.Panel` to ``PANELS``."""
    data = load_data(scale)
    return save_panels(PANELS, data, scale=scale, sources=sources(data), notebook=NOTEBOOK)


def stats_table(scale: str) -> pd.DataFrame:
    """Fig. 3 statistics at the last generation: every arm against its reference (``full``; a
    variant ``<arm>@<tag>`` against ``full@<tag>`` when present), paired on seed.

    One row per (metric, arm): n seeds, the arm's mean with its 95 % CI (t), the mean paired
    difference arm − reference with its 95 % CI (sign-flip inversion; unbounded with < 6 seeds), and
    the sign-flip p (text; n/a with one seed).
    """
    df = load_data(scale)["rows"]
    out = []
    for fig, metric in (("fig3a", "test_overall"), ("fig3c", "consensus_acc"), ("fig3d", "diversity_behav")):
        last = last_generation_table(df, metric)
        _, summ = paired_vs_reference(last)
        summ = summ.set_index("arm")
        for arm in arms_in(last):
            v = last.loc[last["arm"] == arm, "value"]
            m, lo, hi = t_ci(v)
            n = int(v.notna().sum())
            row = {"figure": fig, "metric": metric, "arm": arm, "n": n, "mean": m, T_CI: format_ci(lo, hi, n, digits=3)}
            if arm in summ.index:
                c = summ.loc[arm]
                row.update({"reference": c["reference"], "effect (arm - ref)": float(c["mean"]),
                            f"effect {SIGN_FLIP_CI}": format_ci(c["lo"], c["hi"], int(c["n"]), digits=3),
                            "p": format_p(float(c["p"]))})
            out.append(row)
    return pd.DataFrame(out)


def comparison_table(scale: str) -> pd.DataFrame:
    """Fig. 3f statistics: at the last generation, every society arm (population mean), each arm's
    val-selected agent, every baseline, the founders' mean and the bare base, each minus ``full`` on
    the same seed, overall and per family (:func:`lib.society.studies.verdict.panels.comparison_rows`): ``metric,
    method, reference, n, accuracy, mean, lo, hi`` (95 % CI, sign-flip inversion; unbounded with
    < 6 seeds), ``p`` (text) and the cost ``train_steps, val_evals, wall_s`` (mean over seeds)."""
    data = load_data(scale)
    return society_results.comparison_rows(data["rows"], data["families"], data["walls"])
