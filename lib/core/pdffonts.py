"""PDF font subsets whose bytes do not depend on the fontTools release.

matplotlib embeds each font of a PDF as a subset made by fontTools (``pdf.fonttype`` 42). Which records
of the font's ``name`` table a subset keeps is fontTools's default, and that default changed: the
committed figures' fonts keep records 0–6 (copyright, family, style, unique id, full name, version,
PostScript name), while fontTools 4.69 (the lock's, ``constraints.txt``) keeps every record 0–255,
DejaVu Sans's licence text among them — about 10 kB more per font. The same figure, drawn the same,
then differs in bytes, and a fresh clone's ``make reproduce SCALE=smoke`` rewrote every committed PDF.
:func:`stable_font_subsets` asks for records 0–6 explicitly, whatever the release's default.
"""
from __future__ import annotations

import contextlib

NAME_IDS = [0, 1, 2, 3, 4, 5, 6]


@contextlib.contextmanager
def stable_font_subsets():
    """Within it, matplotlib's PDF (and PS) backend subsets fonts keeping the ``name`` records
    :data:`NAME_IDS` only (a caller's own ``name_IDs`` still wins). A no-op when matplotlib no longer
    subsets through ``matplotlib.backends._backend_pdf_ps.subset``."""
    try:
        from matplotlib.backends import _backend_pdf_ps as pdfps
    except ImportError:  # pragma: no cover - a matplotlib without the module
        yield
        return
    real = getattr(pdfps, "subset", None)
    if real is None or not hasattr(real, "Options"):
        yield
        return

    class Options(real.Options):
        def __init__(self, **kw):
            super().__init__(**{"name_IDs": list(NAME_IDS), **kw})

    class Subset:
        """fontTools.subset as the backend sees it, with :class:`Options` in place of its own."""

        def __getattr__(self, name):
            return Options if name == "Options" else getattr(real, name)

    pdfps.subset = Subset()
    try:
        yield
    finally:
        pdfps.subset = real
