"""Notebook 03, the society: LoRA agents on one frozen base evolving under grounded evaluation. Two rooms. The
loop that makes the rows: :mod:`.arms` (every arm, declared once), :mod:`.config`, :mod:`.pools`,
:mod:`.founders`, :mod:`.generation`, :mod:`.children`, :mod:`.crossover`, :mod:`.shard`, :mod:`.run` (and the
commands :mod:`.gpu_run`, :mod:`.paper_testbed`, :mod:`.tiny_base`), with :mod:`.data`, the one reader of the
rows; the studies that read them, :mod:`lib.society.studies` (one folder a study: its comparisons, its tables
and its panels), which the loop never imports. The statistics notebook 03 prints are named here, so it reads
this package only.
"""
from __future__ import annotations

from lib.core.stats import compare_to, format_p, mean_ci_table, paired_permutation_test  # noqa: F401
