"""Which figures there are: each experiment's figures module (:data:`MODULES`) and their panels, by name and by
figure id, with the command that redraws one. Read by :mod:`lib.figures` (which draws) and :mod:`lib.provenance`
(which checks and indexes), so neither imports the other for it.
"""
from __future__ import annotations

import functools
import importlib

from lib.society import studies

MODULES = {"operators": "lib.operators.figures", "tool_mutation": "lib.tool_mutation.figures", **studies.figures(),
           "program_search": "lib.program_search.figures"}
EXPERIMENTS = tuple(MODULES)


def module(experiment: str):
    """The plotting module of ``experiment``."""
    if experiment not in EXPERIMENTS:
        raise ValueError(f"unknown experiment {experiment!r}; known: {list(EXPERIMENTS)}")
    return importlib.import_module(MODULES[experiment])


@functools.lru_cache(maxsize=1)
def panels() -> dict[str, str]:
    """``{panel name: experiment}`` of every panel of every figures module, in :data:`EXPERIMENTS` order."""
    return {p.name: e for e in EXPERIMENTS for p in module(e).PANELS}


def figure_id(name: str) -> str:
    """The short name a panel is cited by: its name up to the first ``_`` (``fig3j_climb`` → ``fig3j``)."""
    return name.split("_", 1)[0]


def command(name: str, scale: str) -> str:
    """The command that redraws panel ``name`` at ``scale``: by its figure id where that names one panel."""
    ids = [figure_id(n) for n in panels()]
    short = figure_id(name) if ids.count(figure_id(name)) == 1 else name
    return f"python -m lib.figures {short} --scale {scale}"
