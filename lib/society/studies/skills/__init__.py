"""The skill-combining study (``configs/society_crossover/``): which design makes one agent hold several skills?
:mod:`.comparisons` (the chosen agent and the five pre-registered comparisons), :mod:`.tables` (``docs/skills.md``
and the README's table of every design), :mod:`.figures` (Fig. 3h)."""
from lib.core.lazy import submodules

__getattr__ = submodules(__name__)  # `studies.skills.figures` imports it on first use
