"""Per-experiment figure panels: pure drawing functions over tidy rows, shared by notebooks 01-05.

:data:`MODULES` names each experiment's figures module: the operators', tool mutation's and the program search's,
and between them the society's studies' (``society``, ``society_study``, ``society_crossover``,
``society_lineage``: every figures module of :mod:`lib.society.studies`, :func:`lib.society.studies.figures`).
Each exposes ``load_data(scale)`` (a missing file is a ``FileNotFoundError`` naming the command that makes it),
``draw_all(scale) -> list[panel names]`` and ``stats_table(scale) -> DataFrame`` (n seeds, test,
effect and p-value of every comparison a figure makes).
"""
from __future__ import annotations

import importlib

from lib.core.stats import format_p  # noqa: F401  (notebook 05 writes every p with it)
from lib.society import studies

MODULES = {"operators": "lib.operators.figures", "tool_mutation": "lib.tool_mutation.figures", **studies.figures(),
           "program_search": "lib.program_search.figures"}
EXPERIMENTS = tuple(MODULES)


def module(experiment: str):
    """The plotting module of ``experiment``."""
    if experiment not in EXPERIMENTS:
        raise ValueError(f"unknown experiment {experiment!r}; known: {list(EXPERIMENTS)}")
    return importlib.import_module(MODULES[experiment])
