"""Grounded evolution of model populations — the paper companion's library.

Pure operators (:mod:`lib.operators`, :mod:`lib.tasks`, :mod:`lib.stats`) and the loops that use
them (:mod:`lib.tool_mutation`, :mod:`lib.program_search`, :mod:`lib.llm`). Notebooks import from
here; ``python -m lib.experiment CFG`` runs any experiment from its config.
"""
__version__ = "0.1.0"
