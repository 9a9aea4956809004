"""The lineage study (``configs/society_lineage/``): does a society accumulate when a child continues one parent's
LoRA, and where does every design sit against one-shot training at its own compute? :mod:`.comparisons`,
:mod:`.tables` (``docs/lineage.md``), :mod:`.figures` (Fig. 3i)."""
from lib.core.lazy import submodules

__getattr__ = submodules(__name__)  # `studies.lineage.figures` imports it on first use
