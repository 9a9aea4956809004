"""Grounded evolution of model populations — the paper companion's library.

One package per experiment, each a notebook's: :mod:`lib.operators` (the pure population operators,
:mod:`lib.operators.ops`, and their loop, :mod:`lib.operators.population`), :mod:`lib.tool_mutation`
(:mod:`lib.tool_mutation.mutator`), :mod:`lib.society` (the LLM society) and :mod:`lib.program_search`
(:mod:`lib.program_search.search`). They share :mod:`lib.core` (config, data folders, rows, tasks,
statistics, the tables' formatting), :mod:`lib.engines` (base models and LoRA agents) and :mod:`lib.style`
(figures); :mod:`lib.tables` (the README's results tables) gathers their tables from above. Notebooks import
from here; ``python -m lib.experiment CFG`` runs any experiment from its config.
"""
__version__ = "0.1.0"
