"""The society study (``configs/society_study/``, with ``configs/society_lexicase/`` beside it): its six
pre-registered comparisons. :mod:`.comparisons` (the statistics), :mod:`.tables` (``docs/study.md``),
:mod:`.figures` (Fig. 3g, S3b, S3g, S3n, S3o)."""
from lib.core.lazy import submodules

__getattr__ = submodules(__name__)  # `studies.study.figures` imports it on first use
