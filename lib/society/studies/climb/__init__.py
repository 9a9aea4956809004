"""The climb (configs/society_climb/; docs/climb.md): comparisons, tables and panels."""
from lib.core.lazy import submodules

__getattr__ = submodules(__name__)  # `studies.climb.figures` imports it on first use
