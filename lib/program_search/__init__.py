"""Notebook 04, the search over two-step optimizer programs: :mod:`.search` (the batched search and its
runner), :mod:`.reference` (the seed's per-state version), :mod:`.tables`, :mod:`.figures` (Fig. 4, S4) and
``python -m lib.program_search`` (the seed's command line). The statistics and data paths notebook 04 reads
are named here, so it reads this package only.
"""
from __future__ import annotations

from lib.core.manifest import read_manifest  # noqa: F401
from lib.core.paths import data_dir  # noqa: F401
from lib.core.stats import paired_permutation_test  # noqa: F401
