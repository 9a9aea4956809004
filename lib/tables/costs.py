"""What the committed data of a scale cost, folder by folder (``docs/running.md``): ``reproduce-cost``, every data
folder's command and its core-hours with the total at the bottom, and ``reproduce-core-hours``, the total in words.

A folder's cost is read from what its runs recorded: the summed ``gen_wall_s`` of every progress file in it (one
thread a run: a society or climb shard's generations, its founders' training included in the shard that trained
them); where a folder has none, its manifest's ``wall_s`` (a number, or one per sub-run), the wall seconds of its
benchmark records or the stages of its trials. A folder's command is ``python -m lib.sweep`` on its config where its
runs are shards that record their walls (the sweep runs them side by side and resumes), ``python -m lib.experiment``
on its config otherwise,
or what its manifest names as its writer (:data:`WRITERS`). :data:`NOTEBOOK_EXPERIMENTS` are the folders that
``make reproduce FORCE=1`` recomputes: those of the experiments notebooks 01–04 run (``lib.reproduce.STEPS``, which
a test checks); every other folder is made only by its own command.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Callable

from lib.core.format import markdown
from lib.core.paths import check_scale, config_path, data_root

# the folders `make reproduce FORCE=1` moves aside and recomputes: the experiments of lib.reproduce.STEPS
NOTEBOOK_EXPERIMENTS = ("operators", "tool_mutation", "society", "program_search")
# folders without a config of their own: the command that wrote them (see each folder's manifest)
WRITERS = {
    "paper_testbed": "`python -m lib.society.paper_testbed` (one call per trial: [paper-scale.md](paper-scale.md))",
    "paper_engines": "`python benchmarks/gpu_society.py --out FILE` (one call per record)",
    "society_climb_pilot": "the climb's config with `rounds: 3`, `seeds: [100]` and each `n_hints` "
                           "([climb.md](climb.md), *The pilot*)",
}


def _json(p: Path) -> dict:
    try:
        return json.loads(p.read_text())
    except (OSError, ValueError):
        return {}


def folder_cost(folder: Path) -> tuple[int, float, str]:
    """``(runs, wall seconds, source)`` of one data folder: its progress files' ``gen_wall_s`` summed, else its
    manifest's wall time (``wall_s``; per record; per trial's stages); ``source`` says which was read."""
    walls = [sum(_json(p).get("gen_wall_s", [])) for p in sorted(folder.rglob("*.progress.json"))]
    walls = [w for w in walls if w]
    if walls:
        return len(walls), float(sum(walls)), "progress files"
    m = _json(folder / "manifest.json")
    if isinstance(m.get("wall_s"), (int, float)):
        return 1, float(m["wall_s"]), "manifest"
    if isinstance(m.get("wall_s"), dict):
        return len(m["wall_s"]), float(sum(m["wall_s"].values())), "manifest"
    if isinstance(m.get("records"), dict):
        return len(m["records"]), float(sum(r.get("wall_s") or 0 for r in m["records"].values())), "manifest"
    if isinstance(m.get("trials"), dict):
        return len(m["trials"]), float(sum(sum(t.get("stages_s", {}).values()) for t in m["trials"].values())), \
            "manifest (each trial's stages)"
    return 0, 0.0, "—"


def command(folder: Path, scale: str) -> str:
    """The command that makes ``folder`` (see the module's docstring)."""
    name = folder.name
    if name in WRITERS:
        return WRITERS[name]
    if not config_path(name, scale).is_file():
        return "—"
    sharded = any(_json(p).get("gen_wall_s") for p in folder.glob("*.progress.json"))
    return f"`python -m lib.{'sweep' if sharded else 'experiment'} configs/{name}/{scale}.yaml`"


def hours(wall_s: float) -> str:
    """Wall seconds as core-hours, two decimals (``< 0.01`` below that)."""
    return f"{wall_s / 3600:.2f}" if wall_s >= 36 else "< 0.01"


def folders(scale: str) -> list[Path]:
    """Every data folder of ``scale`` (``data/<scale>/*/``), by name."""
    root = data_root() / check_scale(scale)
    return sorted(p for p in root.iterdir() if p.is_dir()) if root.is_dir() else []


def reproduce_cost(scale: str) -> str:
    """Every data folder of ``scale``: its command, runs, core-hours, whether ``make reproduce FORCE=1`` recomputes it;
    the total at the bottom."""
    lines, total, forced, n = [], 0.0, 0.0, 0
    for f in folders(scale):
        runs, wall, source = folder_cost(f)
        total += wall / 3600
        forced += wall / 3600 if f.name in NOTEBOOK_EXPERIMENTS else 0.0
        n += command(f, scale) != "—"
        lines.append(f"| `{f.name}/` | {command(f, scale)} | {runs:,} | {hours(wall)} | {source} | "
                     f"{'yes' if f.name in NOTEBOOK_EXPERIMENTS else 'no'} |")
    if not lines:
        return "*(no data at this scale yet)*\n"
    lines.append(f"| **total** | {n} commands | | **{total:.1f}** | | {forced:.1f} core-hours of it |")
    return markdown([f"`data/{scale}/` folder", "command", "runs", "core-hours", "read from",
                     "recomputed by `make reproduce FORCE=1`"], lines)


def reproduce_core_hours(scale: str) -> str:
    """The total of :func:`reproduce_cost` in words: all folders, and the part ``make reproduce FORCE=1`` recomputes."""
    got = [(f.name, folder_cost(f)[1] / 3600) for f in folders(scale)]
    if not got:
        return "no data yet"
    total, forced = sum(h for _, h in got), sum(h for name, h in got if name in NOTEBOOK_EXPERIMENTS)
    return (f"{total:.1f} core-hours in {len(got)} folders, of which `make reproduce FORCE=1` recomputes "
            f"{forced:.1f} ({', '.join(f'`{name}/`' for name, _ in got if name in NOTEBOOK_EXPERIMENTS)})")


TABLES: dict[str, Callable[[str], str]] = {"reproduce-cost": reproduce_cost}
VALUES: dict[str, Callable[[str], str]] = {"reproduce-core-hours": reproduce_core_hours}
