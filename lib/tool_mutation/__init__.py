"""Notebook 02, tool mutation during training: :mod:`.mutator` (``ToolMutator``, the training loop and its
runner), :mod:`.tables` and :mod:`.figures` (Fig. 2, S2). The statistics notebook 02 prints are named here, so
it reads this package only.
"""
from __future__ import annotations

from lib.core.stats import compare_to, format_p, mean_ci_table, paired_permutation_test  # noqa: F401
