"""The studies that read the society's rows, one folder (or module) a study, each holding its comparisons, its
tables and its panels; the loop that makes the rows (:mod:`lib.society`) never imports a study.

- :mod:`.frames` (no study): the rows in the shapes every study reads them in;
- :mod:`.diagnostics`: the operators' diagnostics, drawn with the first verdict (S3c–S3f) and the society study (S3g);
- :mod:`.verdict`: the first verdict (``configs/society/``, ``society_recombination/``; Fig. 3, ``docs/results.md``);
- :mod:`.study`: the society study (``configs/society_study/``, ``society_lexicase/``; ``docs/study.md``);
- :mod:`.skills`: the skill-combining study (``configs/society_crossover/``; ``docs/skills.md``);
- :mod:`.lineage`: the lineage study (``configs/society_lineage/``; ``docs/lineage.md``);
- :mod:`.paper_scale`: the paper scale's page (``docs/paper-scale.md``): its test-bed, its engines, its GPU cost;
- :mod:`.answer`: every study's verdict in words, from the studies' own tables (the README's first screen, each
  study's cell in notebook 03).

A study folder holds ``comparisons`` (its statistics, from the rows :mod:`lib.society.data` reads), ``tables``
(the README's and docs' tables and values: ``TABLES``, ``VALUES``) and ``figures`` (its panels; an experiment's
figures module declares ``EXPERIMENT`` and ``draw_all``). A study reads those before it in this list, never one
after it: the imports run one way, with no circle.

This package is notebook 03's one door to the studies: ``studies.lineage.figures`` imports a study's module on
first use (:func:`lib.core.lazy.submodules`), and the statistics and the table text the studies print with are named here
(:func:`~lib.core.stats.compare_to`, :func:`~lib.core.stats.format_p`, :func:`~lib.core.stats.mean_ci_table`,
:func:`~lib.core.stats.paired_permutation_test`, :func:`~lib.society.arms.is_baseline`, :func:`~lib.style.rel`,
:func:`~lib.style.table_text`).

A new study is one new module or folder here, nothing else: :func:`tables` hands its ``TABLES`` and ``VALUES`` to
``python -m lib.tables``, :func:`figures` its figures module to notebook 05 and the provenance check
(:mod:`lib.figures`).
"""
from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType

from lib.core.lazy import submodules
from lib.core.stats import compare_to, format_p, mean_ci_table, paired_permutation_test  # noqa: F401
from lib.society.arms import is_baseline  # noqa: F401
from lib.society.data import STUDIES as FOLDERS
from lib.style import rel, table_text  # noqa: F401


__getattr__ = submodules(__name__)


def modules() -> list[ModuleType]:
    """Every module of the studies, imported, in the order of their names."""
    return [importlib.import_module(m.name) for m in pkgutil.walk_packages(__path__, f"{__name__}.")]


def tables() -> list[ModuleType]:
    """The modules that write the README's and docs' tables: those that declare ``TABLES`` (and ``VALUES``)."""
    return [m for m in modules() if hasattr(m, "TABLES")]


def figures() -> dict[str, str]:
    """``{experiment: module name}`` of every figures module (one that declares ``EXPERIMENT`` and ``draw_all``),
    in the order of the society's data folders (:data:`lib.society.data.STUDIES`)."""
    mods = [m for m in modules() if hasattr(m, "EXPERIMENT") and hasattr(m, "draw_all")]
    stray = sorted(f"{m.__name__} ({m.EXPERIMENT})" for m in mods if m.EXPERIMENT not in FOLDERS)
    if stray or len({m.EXPERIMENT for m in mods}) < len(mods):
        raise RuntimeError(f"lib.society.studies: a figures module's EXPERIMENT is no data folder of "
                           f"lib.society.data.STUDIES, or two modules draw one: {stray or [m.__name__ for m in mods]}")
    return {m.EXPERIMENT: m.__name__ for m in sorted(mods, key=lambda m: FOLDERS.index(m.EXPERIMENT))}
