"""Results tables in the README and ``docs/``, written from the data by code: ``python -m lib.tables``.

A table lives between two markers in a Markdown file::

    <!-- table:study-primary cpu -->
    ...generated...
    <!-- /table:study-primary -->

:data:`TABLES` maps a table's name to the function that writes it from the rows of one scale. ``make
reproduce`` (:mod:`lib.reproduce`) rewrites every marked table; ``tests/test_tables.py`` fails when a
committed table differs from what the committed data gives, so a number in such a table always has
its source. ``--check`` only compares (exit status 1 when a table is stale).
"""
from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import Callable

import numpy as np
import pandas as pd

from .core.config import load_yaml
from .core.errors import cli_main
from .core.paths import REPO_ROOT, data_dir

FILES = ("README.md",)
MARK = re.compile(r"(<!-- table:(?P<name>[\w-]+) (?P<scale>\w+) -->\n)(?P<body>.*?)(<!-- /table:(?P=name) -->)", re.S)


def _num(x) -> float:
    try:
        return float(x)
    except (TypeError, ValueError):
        return float("nan")


def _fmt(x, digits: int = 3) -> str:
    x = _num(x)
    return "—" if not np.isfinite(x) else f"{x:.{digits}f}"


def _signed(x, digits: int = 3) -> str:
    x = _num(x)
    return "—" if not np.isfinite(x) else f"{x:+.{digits}f}".replace("-", "−")


def _ci(lo, hi) -> str:
    lo, hi = _num(lo), _num(hi)
    if not (np.isfinite(lo) and np.isfinite(hi)):
        return "(unbounded: < 6 seeds)" if (np.isinf(lo) or np.isinf(hi)) else "—"
    return f"[{_signed(lo)}, {_signed(hi)}]"


def _p(p) -> str:
    from .analysis.stats import format_p
    p = _num(p)
    return "—" if not np.isfinite(p) else format_p(p)


def study_rows(scale: str) -> pd.DataFrame | None:
    """The society study's rows at ``scale``, finished runs only (``None`` when none has finished)."""
    from .analysis.society_study import complete_runs
    from .llm import society
    cfg = society.validate_config(load_yaml(REPO_ROOT / "configs" / "society_study" / f"{scale}.yaml"))
    folder = data_dir(scale, cfg["experiment"])
    rows = complete_runs(society.load_rows(cfg, folder), cfg["generations"]) if folder.is_dir() else None
    return rows if rows is not None and len(rows) else None


def _markdown(header: list[str], lines: list[str]) -> str:
    return "\n".join(["| " + " | ".join(header) + " |", "|" + " --- |" * len(header), *lines]) + "\n"


NO_DATA = "No data yet: the study has not run at this scale.\n"


def study_primary(scale: str) -> str:
    """The six pre-registered comparisons (:func:`lib.analysis.society_study.primary_table`)."""
    from .analysis.society_study import primary_table
    rows = study_rows(scale)
    if rows is None:
        return NO_DATA
    lines = [f"| {k + 1} | {r.comparison} | " + (f"`{r.arm_a}` − `{r.arm_b}`" if r.arm_a and r.arm_b else "—")
             + f" | {int(r.n)} | {_fmt(r.a_acc)} | {_fmt(r.b_acc)} | {_signed(r['diff'])} {_ci(r.lo, r.hi)} | "
             f"{_p(r.p)} | {_p(r.p_holm)} |" for k, r in primary_table(rows).iterrows()]
    return _markdown(["#", "comparison", "arms compared", "seeds", "a", "b", "Δ = a − b [95 % CI (sign-flip)]",
                      "p", "Holm p"], lines)


def study_arms(scale: str) -> str:
    """Every arm of the study: population accuracy, selection-pool accuracy, difference to ``full``."""
    from .analysis.society_study import arm_table
    rows = study_rows(scale)
    if rows is None:
        return NO_DATA
    lines = [f"| `{r.arm}` | {r.borrows or '—'} | {int(r.n)} | {_fmt(r.test)} "
             + (f"[{_fmt(r.lo)}, {_fmt(r.hi)}]" if np.isfinite(_num(r.lo)) else "(n < 2)")
             + f" | {_fmt(r.select)} | {_signed(r.vs_full)} | {_p(r.p_vs_full)} |" for _, r in arm_table(rows).iterrows()]
    return _markdown(["arm", "borrows", "seeds", "test [95 % CI (t, within [0, 1])]", "selection pool",
                      "− `full` (secondary)", "p"], lines)


def society_primary(scale: str) -> str:
    """The first society run's three pre-registered comparisons (``configs/society``,
    :func:`lib.analysis.society_results.primary_comparisons`), and how much the grounding comparison
    rests on its most extreme seed (the comparison again without it)."""
    from .analysis.society_results import method_scores, primary_comparisons
    from .analysis.stats import paired_permutation_test, sign_flip_ci
    from .llm import society
    cfg = society.validate_config(load_yaml(REPO_ROOT / "configs" / "society" / f"{scale}.yaml"))
    folder = data_dir(scale, cfg["experiment"])
    if not folder.is_dir():
        return NO_DATA
    rows = society.load_rows(cfg, folder)
    t = primary_comparisons(rows, cfg["families"])
    lines = [f"| {r.comparison} | {int(r.n)} | {_fmt(r.full)} | {_fmt(r.other_acc)} | {_signed(r['diff'])} "
             f"{_ci(r.lo, r.hi)} | {_p(r.p)} | {_p(r.p_holm)} |" for _, r in t.iterrows()]
    sc = method_scores(rows, cfg["families"])
    wide = sc[sc["metric"] == "overall"].pivot_table(index="seed", columns="method", values="value")
    d = (wide["full"] - wide["no_grounding"]).dropna()
    worst = d.abs().idxmax()
    rest = d.drop(worst)
    lo, hi = sign_flip_ci(rest.to_numpy())
    p = paired_permutation_test(wide.loc[rest.index, "full"].to_numpy(), wide.loc[rest.index, "no_grounding"].to_numpy())["p"]
    lines.append(f"| `full` − `no_grounding` without seed {worst} (its difference {_signed(d[worst])}, the largest) | "
                 f"{len(rest)} | — | — | {_signed(rest.mean())} {_ci(lo, hi)} | {_p(p)} | — |")
    return _markdown(["comparison (`full` − other)", "seeds", "`full`", "other", "Δ [95 % CI (sign-flip)]", "p",
                      "Holm p"], lines)


TABLES: dict[str, Callable[[str], str]] = {"study-primary": study_primary, "study-arms": study_arms,
                                           "society-primary": society_primary}


def render(text: str) -> str:
    """``text`` with every marked table rewritten from the data."""
    def one(m: re.Match) -> str:
        name, scale = m["name"], m["scale"]
        if name not in TABLES:
            raise ValueError(f"unknown table {name!r} (known: {sorted(TABLES)})")
        return m.group(1) + TABLES[name](scale) + m.group(5)
    return MARK.sub(one, text)


def stale(files=FILES) -> list[str]:
    """The files whose marked tables differ from what the data gives."""
    return [f for f in files if render((REPO_ROOT / f).read_text()) != (REPO_ROOT / f).read_text()]


def update(files=FILES) -> list[str]:
    """Rewrite the marked tables of ``files``; returns the files that changed."""
    changed = []
    for f in files:
        p = REPO_ROOT / f
        old = p.read_text()
        new = render(old)
        if new != old:
            p.write_text(new)
            changed.append(f)
    return changed


def _main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m lib.tables", description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="only compare; exit 1 when a table is stale")
    args = ap.parse_args(argv)
    if args.check:
        bad = stale()
        for f in bad:
            print(f"{f}: a results table differs from the data (python -m lib.tables rewrites it)")
        return 1 if bad else 0
    for f in update():
        print(f"rewrote the results tables of {f}")
    return 0


def main(argv=None) -> int:
    return cli_main(_main, argv)


if __name__ == "__main__":
    sys.exit(main())
