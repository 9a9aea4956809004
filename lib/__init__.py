"""Grounded evolution of model populations — the paper companion's library.

Pure operators (:mod:`lib.operators.ops`, :mod:`lib.core.tasks`, :mod:`lib.core.stats`) and the loops that use
them (:mod:`lib.tool_mutation.mutator`, :mod:`lib.program_search.search`, :mod:`lib.llm`). Notebooks import from
here; ``python -m lib.experiment CFG`` runs any experiment from its config.
"""
__version__ = "0.1.0"
