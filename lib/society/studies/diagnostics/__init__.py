"""The operators' diagnostics: selection, breeding and inheritance measured on the rows. :mod:`.comparisons` (the
statistics: preconditions, selection signal and differential, recombination gain, inheritance fidelity, elitism),
:mod:`.figures` (S3c–S3f, drawn with the first verdict's figures, and the elitism panel the society study draws)."""
from lib.core.lazy import submodules

__getattr__ = submodules(__name__)  # `studies.diagnostics.figures` imports it on first use
