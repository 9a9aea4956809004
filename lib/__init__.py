"""Grounded evolution of model populations — the paper companion's library.

Pure operators (:mod:`lib.methods.operators`, :mod:`lib.methods.tasks`, :mod:`lib.analysis.stats`) and the loops that use
them (:mod:`lib.methods.tool_mutation`, :mod:`lib.methods.program_search`, :mod:`lib.llm`). Notebooks import from
here; ``python -m lib.experiment CFG`` runs any experiment from its config.
"""
__version__ = "0.1.0"
