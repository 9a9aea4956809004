"""Notebook 03, the society: LoRA agents on one frozen base evolving under grounded evaluation. Two rooms. The
loop that makes the rows: :mod:`.arms` (every arm, declared once), :mod:`.config`, :mod:`.pools`,
:mod:`.founders`, :mod:`.generation`, :mod:`.children`, :mod:`.crossover`, :mod:`.shard`, :mod:`.run` (and the
commands :mod:`.gpu_run`, :mod:`.paper_testbed`, :mod:`.tiny_base`), with :mod:`.data`, the one reader of the
rows; the studies that read them, :mod:`lib.society.studies` (one folder a study: its comparisons, its tables
and its panels), which the loop never imports.
Notebook 03 reads two doors: :mod:`.run` (configs, runs, rows) and :mod:`lib.society.studies` (every study's
comparisons, tables and figures, with the statistics they print).
"""
from __future__ import annotations
