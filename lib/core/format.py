"""Formatting shared by the generated tables: numbers, signed differences, intervals, p-values, Markdown."""
from __future__ import annotations

import numpy as np

from lib.core.stats import format_p

NO_DATA = "No data yet: the study has not run at this scale.\n"


def num(x) -> float:
    try:
        return float(x)
    except (TypeError, ValueError):
        return float("nan")


def fmt(x, digits: int = 3) -> str:
    x = num(x)
    return "—" if not np.isfinite(x) else f"{x:.{digits}f}"


def signed(x, digits: int = 3) -> str:
    x = num(x)
    return "—" if not np.isfinite(x) else f"{x:+.{digits}f}".replace("-", "−")


def ci(lo, hi) -> str:
    lo, hi = num(lo), num(hi)
    if not (np.isfinite(lo) and np.isfinite(hi)):
        return "(unbounded: < 6 seeds)" if (np.isinf(lo) or np.isinf(hi)) else "—"
    return f"[{signed(lo)}, {signed(hi)}]"


def p_text(p) -> str:
    p = num(p)
    return "—" if not np.isfinite(p) else format_p(p)


def markdown(header: list[str], lines: list[str]) -> str:
    """A Markdown table: ``header`` and the already-formatted ``lines``."""
    return "\n".join(["| " + " | ".join(header) + " |", "|" + " --- |" * len(header), *lines]) + "\n"


def seed_ranges(seeds) -> str:
    """Seeds as runs of consecutive numbers: ``[0, 1, 2, 3, 8, 9, 12]`` -> ``"0–3, 8–9, 12"``."""
    out: list[list[int]] = []
    for s in sorted(set(int(x) for x in seeds)):
        if out and s == out[-1][1] + 1:
            out[-1][1] = s
        else:
            out.append([s, s])
    return ", ".join(str(a) if a == b else f"{a}–{b}" for a, b in out)
