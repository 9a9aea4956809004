"""Per-phase wall time, token throughput and peak GPU memory of the society loop.

A :class:`PhaseTimer` accumulates, per named phase, the number of calls, the *exclusive* wall
seconds (a phase entered inside another pauses the outer one, so the phases add up to the time
tracked), the tokens processed and, on CUDA, the peak allocated memory. On CUDA every phase
boundary synchronises the device, so the seconds are the device's, not the launch queue's.

Two ways to feed it:

- ``with timing.phase("evaluate"): ...`` anywhere in the code: a no-op unless a timer is active
  (``with timer.active(): ...``), so the loop can be annotated at no cost (e.g. from
  ``lib.llm.society.PhaseClock.__call__``, which then feeds both its own per-generation seconds
  and this timer's tokens and GPU memory);
- ``timer.active(instrument=True)`` additionally wraps the society's building blocks
  (``ensure_founders``, ``generate_rows``, ``merge_adapters``, ``train_adapter``, ``load_adapter``)
  and names each call's phase from the adapters it touches: ``founders`` (gen-0 specialists),
  ``evaluate`` (all agents on test + val + conformity), ``merge``, ``screen`` (every merge
  candidate on the screening pool), ``inherit`` (sources answering the inheritance pool), ``train``
  (child SFT), ``load``. Explicit ``phase(...)`` blocks take precedence over the inferred names.

Tokens: generation counts prompt tokens (prefill) and generated tokens separately
(``gen_tokens`` = new tokens up to and including EOS, summed over rows); training counts the
tokens of every sequence of every step (``train_tokens``, prompt + answer).

    timer = PhaseTimer()
    with timer.active(instrument=True):
        society.run_experiment(cfg, base=base)
    print(timer.report())
"""
from __future__ import annotations

import re
import time
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field

_ACTIVE: "PhaseTimer | None" = None
_AGENT = re.compile(r"^t\d+a\d+$")


def _cuda() -> bool:
    try:
        import torch
        return bool(torch.cuda.is_available())
    except ImportError:
        return False


@dataclass
class _Stat:
    calls: int = 0
    wall_s: float = 0.0
    counts: dict = field(default_factory=dict)
    peak_bytes: int = 0


class PhaseTimer:
    """Exclusive wall seconds, call counts, token counts and peak CUDA memory per phase."""

    def __init__(self, cuda: bool | None = None):
        self.cuda = _cuda() if cuda is None else cuda
        self.stats: dict[str, _Stat] = {}
        self._stack: list[list] = []  # [name, started_at, inferred]
        self.t0 = time.perf_counter()
        # inference state of the instrumented loop (see module docstring)
        self._cands: set[str] = set()
        self._screened = False
        self._evaluated = False

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
        name, start, _ = self._stack[-1]
        st = self.stats.setdefault(name, _Stat())
        st.wall_s += now - start
        self._peak_read(st)

    @contextmanager
    def phase(self, name: str, _inferred: bool = False):
        """Time the block as phase ``name`` (exclusive of phases nested inside it)."""
        self._sync()
        now = time.perf_counter()
        if self._stack:
            self._pause_top(now)
        self.stats.setdefault(name, _Stat()).calls += 1
        self._peak_reset()
        self._stack.append([name, time.perf_counter(), _inferred])
        try:
            yield self
        finally:
            self._sync()
            now = time.perf_counter()
            self._pause_top(now)
            self._stack.pop()
            if self._stack:
                self._peak_reset()
                self._stack[-1][1] = time.perf_counter()

    def count(self, **counts: int) -> None:
        """Add work counters (e.g. ``gen_tokens=…``) to the innermost running phase."""
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

    # --------------------------------------------------------------- activation
    @contextmanager
    def active(self, instrument: bool = False):
        """Make this the timer that :func:`phase` and :func:`count` report to (and, with
        ``instrument``, wrap the society's building blocks; they are restored on exit)."""
        global _ACTIVE
        prev, _ACTIVE = _ACTIVE, self
        patches = _instrument(self) if instrument else []
        try:
            yield self
        finally:
            for mod, attr, orig in reversed(patches):
                setattr(mod, attr, orig)
            _ACTIVE = prev


def phase(name: str):
    """``with phase("screen"):`` — timed when a timer is active, else a no-op."""
    return _ACTIVE.phase(name) if _ACTIVE is not None else nullcontext()


def count(**counts: int) -> None:
    """Add counters to the active timer's running phase (no-op without one)."""
    if _ACTIVE is not None:
        _ACTIVE.count(**counts)


# ----------------------------------------------------------------------------- instrumentation


def _instrument(timer: PhaseTimer) -> list[tuple]:
    """Wrap the building blocks of :mod:`lib.llm.society` with phase names; returns the patches."""
    from . import generate as G
    from . import lora as L
    from . import merge as M
    from . import society as S

    patches = []

    def wrap(mod, attr, fn):
        patches.append((mod, attr, getattr(mod, attr)))
        setattr(mod, attr, fn)

    def explicit() -> bool:  # a phase opened by the code itself (not by this instrumentation) is running
        return any(not e[2] for e in timer._stack)

    def inferred(name):
        return timer.phase(name, _inferred=True)

    orig_founders, orig_rows = S.ensure_founders, G.generate_rows
    orig_merge, orig_train, orig_load = M.merge_adapters, L.train_adapter, L.load_adapter

    def founders(*a, **k):
        if explicit():
            return orig_founders(*a, **k)
        with inferred("founders"):
            return orig_founders(*a, **k)

    def rows(base, prompts, adapter_names, **k):
        if explicit():
            return orig_rows(base, prompts, adapter_names, **k)
        names = set(adapter_names)
        if names and names <= timer._cands:
            label = "inherit" if timer._screened or names != timer._cands else "screen"
            timer._screened = timer._screened or label == "screen"
        elif names == {G.BASE_ROW}:  # the bare base, evaluated alongside the agents
            label = "evaluate"
        elif names and all(_AGENT.match(n) for n in names) and not timer._evaluated:
            label, timer._evaluated = "evaluate", True
        else:
            label = "inherit" if timer._evaluated else "generate"
        with inferred(label):
            return orig_rows(base, prompts, adapter_names, **k)

    def merge(base, parents, weights, name, method="exact"):
        timer._cands.add(name)
        if explicit():
            return orig_merge(base, parents, weights, name, method)
        with inferred("merge"):
            return orig_merge(base, parents, weights, name, method)

    def train(base, name, tasks, **k):
        tasks = list(tasks)
        ctx = nullcontext() if timer.current == "founders" or explicit() else inferred("train")
        with ctx:
            out = orig_train(base, name, tasks, **k)
            ntok = sum(len(base.prompt_ids(t.prompt)) + len(base.answer_ids(t.answer)) for t in tasks)
            timer.count(train_tokens=ntok * k.get("epochs", 2), train_steps=out.get("steps", 0))
        return out

    def load(base, name, path):
        if _AGENT.match(name):  # a new generation's agents are attached: a new round of phases
            timer._cands, timer._screened, timer._evaluated = set(), False, False
        if explicit():
            return orig_load(base, name, path)
        with inferred("load"):
            return orig_load(base, name, path)

    wrap(S, "ensure_founders", founders)
    wrap(G, "generate_rows", rows)
    wrap(M, "merge_adapters", merge)
    wrap(L, "train_adapter", train)
    wrap(L, "load_adapter", load)
    return patches

