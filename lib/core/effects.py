"""Formatting shared by the tables of the operators, tool-mutation and program-search experiments: a paired
difference with its interval, the word the interval decides ("null"), small magnitudes as m·10⁻ᵏ.

Numbers keep a unicode minus and never read ``−0.0000``; a difference shows 4 decimals when it is below
0.01 in size and 3 above, unless a table fixes ``digits``.
"""
from __future__ import annotations

import functools
import math
from typing import Any, Callable

import numpy as np

from lib.core.format import ci as _unbounded, markdown, num

SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")
HEADER = ["figure", "comparison", "Δ [95 % CI (sign-flip inversion)]", "p", "n"]


def results_table(lines: list[str]) -> str:
    """An experiment's results table: one row a comparison under :data:`HEADER`."""
    return markdown(HEADER, lines)


def digits_for(x) -> int:
    """4 decimals for a number below 0.01 in size, else 3."""
    return 4 if abs(num(x)) < 0.01 else 3


def plain(x, digits: int) -> str:
    """``x`` to ``digits`` decimals with a unicode minus; a value that rounds to 0 reads ``0.000…``."""
    x = round(num(x), digits) + 0.0  # + 0.0: no "-0.000"
    return f"{x:.{digits}f}".replace("-", "−")


def signed(x, digits: int) -> str:
    """``plain`` with a sign: ``+0.0006``, ``−0.0356``."""
    s = plain(x, digits)
    return s if s.startswith("−") else "+" + s


def contains_zero(lo, hi) -> bool:
    """Whether the interval ``[lo, hi]`` holds 0 (an unbounded one does)."""
    return num(lo) <= 0.0 <= num(hi)


def delta(mean, lo, hi, digits: int | None = None) -> str:
    """``+0.0006 [−0.0007, 0.0018]``: a mean difference and its interval (an unbounded one says so)."""
    d = digits_for(mean) if digits is None else digits
    if not (np.isfinite(num(lo)) and np.isfinite(num(hi))):
        return f"{signed(mean, d)} {_unbounded(lo, hi)}"
    return f"{signed(mean, d)} [{plain(lo, d)}, {plain(hi, d)}]"


def delta_null(mean, lo, hi, digits: int | None = None) -> str:
    """:func:`delta`, followed by ``(null)`` when the (bounded) interval holds 0."""
    bounded = np.isfinite(num(lo)) and np.isfinite(num(hi))
    return delta(mean, lo, hi, digits) + (" (null)" if bounded and contains_zero(lo, hi) else "")


def mean_ci(mean, lo, hi, digits: int = 4) -> str:
    """A single mean and its 95 % CI (t): ``0.0310 [0.0285, 0.0335]`` (``(n < 2)`` without one)."""
    if not (np.isfinite(num(lo)) and np.isfinite(num(hi))):
        return f"{plain(mean, digits)} (n < 2)"
    return f"{plain(mean, digits)} [{plain(lo, digits)}, {plain(hi, digits)}]"


def sci(x) -> str:
    """A magnitude: 3 significant digits from 0.01 up (``1.06``), else ``m·10⁻ᵏ`` with 2 (``2.2·10⁻¹⁵``;
    ``0`` exactly)."""
    x = num(x)
    if x == 0:
        return "0"
    if abs(x) >= 0.01:
        return f"{x:.3g}"
    k = math.floor(math.log10(abs(x)))
    m = round(x / 10 ** k, 1)
    if abs(m) >= 10:
        m, k = m / 10, k + 1
    return f"{m:.1f}·10{str(k).translate(SUPERSCRIPT)}"


def verdict(lo, hi, *, below: str = "beats", above: str = "loses to", tie: str = "ties") -> str:
    """The word a paired difference's interval decides: ``below`` when it lies under 0, ``above`` when
    over 0, ``tie`` when it holds 0 (lower is better by default: a difference below 0 *beats*)."""
    return below if num(hi) < 0 else above if num(lo) > 0 else tie


def from_data(load: Callable[[str], Any], missing: str):
    """Make ``f(data)`` a table or value function of a scale: ``load(scale)`` gives its data, ``None`` when
    the experiment has not run there, and then the function writes ``missing``."""
    def wrap(f: Callable[[Any], str]) -> Callable[[str], str]:
        @functools.wraps(f)
        def of_scale(scale: str) -> str:
            data = load(scale)
            return missing if data is None else f(data)
        return of_scale
    return wrap
