"""Per-experiment figure panels: pure drawing functions over tidy rows, shared by notebooks 01-05.

Each module (``operators``, ``tool_mutation``, ``society``, ``society_study``, ``program_search``) exposes
``load_data(scale)`` (a missing file is a ``FileNotFoundError`` naming the command that makes it),
``draw_all(scale) -> list[panel names]`` and ``stats_table(scale) -> DataFrame`` (n seeds, test,
effect and p-value of every comparison a figure makes).
"""
from __future__ import annotations

import importlib

from lib.core.stats import format_p  # noqa: F401  (notebook 05 writes every p with it)

MODULES = {"operators": "lib.operators.figures", "tool_mutation": "lib.tool_mutation.figures",
           "society": "lib.society.figures", "society_study": "lib.society.figures_study",
           "society_crossover": "lib.society.figures_skills", "society_lineage": "lib.society.figures_lineage",
           "program_search": "lib.program_search.figures"}
EXPERIMENTS = tuple(MODULES)


def module(experiment: str):
    """The plotting module of ``experiment``."""
    if experiment not in EXPERIMENTS:
        raise ValueError(f"unknown experiment {experiment!r}; known: {list(EXPERIMENTS)}")
    return importlib.import_module(MODULES[experiment])
