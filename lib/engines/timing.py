"""Per-phase wall time, work counters and peak GPU memory of the society loop.

A :class:`PhaseTimer` accumulates, per named phase, the number of calls, the *exclusive* wall
seconds (a phase entered inside another pauses the outer one, so the phases add up to the time
tracked), work counters (tokens, training steps) and, on CUDA, the peak allocated memory. On CUDA
every phase boundary synchronises the device, so the seconds are the device's, not the launch
queue's.

The timer is explicit: the society loop is handed one (``run_experiment(cfg, timer=timer)``) and
opens its phases through it — founders, load, evaluate, screen, inherit, train — and the model
calls report their work to it (``timer.count(gen_tokens=…)``: prompt and generated tokens of every
generate call, training steps and tokens). Nothing is patched and nothing is global.

Tokens: generation counts prompt tokens (prefill) and generated tokens separately
(``gen_tokens`` = new tokens up to and including EOS, summed over rows); training counts the
tokens of every sequence of every step (``train_tokens``, prompt + answer).

    timer = PhaseTimer()
    society.run_experiment(cfg, base=base, timer=timer)
    print(timer.report())
"""
from __future__ import annotations

import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Callable

from lib.core.device import cuda_available


@dataclass
class _Stat:
    calls: int = 0
    wall_s: float = 0.0
    counts: dict = field(default_factory=dict)
    peak_bytes: int = 0


class PhaseTimer:
    """Exclusive wall seconds, call counts, work counters and peak CUDA memory per phase.

    ``clock`` returns seconds (default ``time.perf_counter``; tests inject a fake one);
    ``cuda``: synchronise and read peak memory at phase boundaries (default: whether CUDA is visible).
    """

    def __init__(self, cuda: bool | None = None, clock: Callable[[], float] = time.perf_counter):
        self.cuda = cuda_available() if cuda is None else cuda
        self.clock = clock
        self.stats: dict[str, _Stat] = {}
        self._stack: list[list] = []  # [name, started_at]

    # --------------------------------------------------------------- clock
    def _sync(self) -> None:
        if self.cuda:
            import torch
            torch.cuda.synchronize()

    def _peak_reset(self) -> None:
        if self.cuda:
            import torch
            torch.cuda.reset_peak_memory_stats()

    def _peak_read(self, st: _Stat) -> None:
        if self.cuda:
            import torch
            st.peak_bytes = max(st.peak_bytes, int(torch.cuda.max_memory_allocated()))

    def _pause_top(self, now: float) -> None:
        name, start = self._stack[-1]
        st = self.stats.setdefault(name, _Stat())
        st.wall_s += now - start
        self._peak_read(st)

    @contextmanager
    def phase(self, name: str):
        """Time the block as phase ``name`` (exclusive of phases nested inside it)."""
        self._sync()
        now = self.clock()
        if self._stack:
            self._pause_top(now)
        self.stats.setdefault(name, _Stat()).calls += 1
        self._peak_reset()
        self._stack.append([name, self.clock()])
        try:
            yield self
        finally:
            self._sync()
            self._pause_top(self.clock())
            self._stack.pop()
            if self._stack:
                self._peak_reset()
                self._stack[-1][1] = self.clock()

    def count(self, **counts: int) -> None:
        """Add work counters (e.g. ``gen_tokens=…``) to the innermost running phase (none: dropped)."""
        if not self._stack:
            return
        st = self.stats[self._stack[-1][0]]
        for k, v in counts.items():
            st.counts[k] = st.counts.get(k, 0) + int(v)

    @property
    def current(self) -> str | None:
        return self._stack[-1][0] if self._stack else None

    # --------------------------------------------------------------- results
    def rows(self) -> list[dict]:
        """One dict per phase: ``phase, calls, wall_s, share`` (of the tracked time), the counters,
        ``gen_tok_per_s`` / ``train_tok_per_s`` where tokens were counted, ``peak_gib`` on CUDA."""
        total = sum(s.wall_s for s in self.stats.values()) or float("nan")
        out = []
        for name, s in self.stats.items():
            r = {"phase": name, "calls": s.calls, "wall_s": round(s.wall_s, 3),
                 "share": round(s.wall_s / total, 3), **s.counts}
            for k in ("gen_tokens", "train_tokens"):
                if s.counts.get(k) and s.wall_s > 0:
                    r[k.replace("tokens", "tok_per_s")] = round(s.counts[k] / s.wall_s, 1)
            if self.cuda:
                r["peak_gib"] = round(s.peak_bytes / 2**30, 2)
            out.append(r)
        return out

    def total_s(self) -> float:
        return sum(s.wall_s for s in self.stats.values())

    def report(self) -> str:
        """A fixed-width table of :meth:`rows`."""
        lines = [f"{'phase':<10} {'calls':>5} {'wall s':>8} {'share':>6} {'tok/s':>10}"
                 + ("  peak GiB" if self.cuda else "")]
        for r in self.rows():
            tps = r.get("gen_tok_per_s", r.get("train_tok_per_s", ""))
            lines.append(f"{r['phase']:<10} {r['calls']:>5} {r['wall_s']:>8.1f} {r['share']:>6.2f} {tps!s:>10}"
                         + (f"  {r['peak_gib']:>8.2f}" if self.cuda else ""))
        lines.append(f"{'total':<10} {'':>5} {self.total_s():>8.1f}")
        return "\n".join(lines)


class PhaseClock:
    """Wall seconds per named phase of one generation (what the progress files record):
    ``with clock("train"): ...``. Each phase is also opened on ``timer`` when one is given."""

    def __init__(self, timer: PhaseTimer | None = None, clock: Callable[[], float] = time.perf_counter):
        self.s: dict[str, float] = {}
        self.work: dict[str, dict[str, int]] = {}  # {phase: {counter: total}}: the generation's work by phase
        self._open: list[str] = []
        self.timer = timer
        self.clock = clock

    @contextmanager
    def __call__(self, phase: str):
        t0 = self.clock()
        self._open.append(phase)
        try:
            if self.timer is None:
                yield
            else:
                with self.timer.phase(phase):
                    yield
        finally:
            self._open.pop()
            self.s[phase] = self.s.get(phase, 0.0) + self.clock() - t0

    def count(self, **counts: int) -> None:
        """Work counters: summed per open phase in :attr:`work` (``"other"`` outside any), and given to the timer's
        running phase (if a timer runs)."""
        w = self.work.setdefault(self._open[-1] if self._open else "other", {})
        for k, v in counts.items():
            w[k] = w.get(k, 0) + int(v)
        if self.timer is not None:
            self.timer.count(**counts)

    def rounded(self) -> dict:
        return {k: round(v, 3) for k, v in self.s.items()}
