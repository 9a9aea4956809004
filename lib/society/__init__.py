"""Notebook 03, the society: LoRA agents on one frozen base evolving under grounded evaluation. The run:
:mod:`.arms` (every arm, declared once), :mod:`.config`, :mod:`.pools`, :mod:`.founders`, :mod:`.generation`,
:mod:`.crossover`, :mod:`.shard`, :mod:`.run`; the reading: :mod:`.data` (the one rows reader),
:mod:`.diagnostics`, :mod:`.results`, :mod:`.study`, the tables and the figures. The statistics notebook 03
prints are named here, so it reads this package only.
"""
from __future__ import annotations

from lib.core.stats import compare_to, format_p, mean_ci_table, paired_permutation_test  # noqa: F401
