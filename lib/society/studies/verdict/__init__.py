"""The first verdict (``configs/society/``, with the breeding arms of ``configs/society_recombination/``): does
grounded selection help the society, and how does it fare against the field's merge methods?
:mod:`.comparisons` (the statistics), :mod:`.tables` (``docs/results.md``), :mod:`.figures` (Fig. 3 and its SI
panels, with :mod:`.panels`: Fig. 3f and S3h–S3m)."""
from lib.core.lazy import submodules

__getattr__ = submodules(__name__)  # `studies.verdict.figures` imports it on first use
