"""Per-experiment figure panels: pure drawing functions over tidy rows, shared by notebooks 01-05.

:data:`MODULES` (the registry, :mod:`lib.panels`) names each experiment's figures module: the operators', tool
mutation's and the program search's, and between them the society's studies' (``society``, ``society_study``,
``society_crossover``, ``society_lineage``: every figures module of :mod:`lib.society.studies`,
:func:`lib.society.studies.figures`).
Each exposes ``load_data(scale)`` (a missing file is a ``FileNotFoundError`` naming the command that makes it),
``draw_all(scale) -> list[panel names]`` and ``stats_table(scale) -> DataFrame`` (n seeds, test,
effect and p-value of every comparison a figure makes).

``python -m lib.figures NAME [--scale S]`` redraws one panel (its full name or its figure id, ``fig3j``, ``S3o``)
from the committed data of ``S`` (default ``cpu``), saves it as ``draw_all`` does and rewrites
``figures/<S>/INDEX.md``; an unknown name or missing data is one line on stderr and exit status 2.
"""
from __future__ import annotations

import argparse
import sys
from typing import Sequence

from lib import provenance, style
from lib.core.errors import MissingDataError, UserError, cli_main, one_line
from lib.core.paths import check_scale
from lib.core.stats import format_p  # noqa: F401  (notebook 05 writes every p with it)
from lib.panels import EXPERIMENTS, MODULES, command, figure_id, module, panels  # noqa: F401  (the registry)


def resolve(name: str) -> tuple[str, str]:
    """``(panel name, experiment)`` of ``name``, a panel's full name or its figure id; a :class:`UserError`
    naming the known ids otherwise."""
    known = dict(panels())
    if name in known:
        return name, known[name]
    hits = [n for n in known if figure_id(n) == name]
    if len(hits) == 1:
        return hits[0], known[hits[0]]
    raise UserError(f"unknown figure {name!r}: use a panel's name or id ({', '.join(figure_id(n) for n in known)}); "
                    "figures/<scale>/INDEX.md lists them")


def redraw(name: str, scale: str) -> list[str]:
    """Redraw the panel ``name`` (:func:`resolve`) from the data of ``scale``, save it and its index entry as
    ``draw_all`` does, and rewrite ``INDEX.md``; returns the files written. Missing data: :class:`MissingDataError`."""
    try:
        check_scale(scale)
    except ValueError as e:
        raise UserError(str(e)) from None
    panel, experiment = resolve(name)
    try:
        with style.only_panels([panel]):
            saved = module(experiment).draw_all(scale)
    except FileNotFoundError as e:
        raise MissingDataError(f"{panel} at {scale}: {one_line(e)}") from None
    if panel not in saved:
        raise MissingDataError(f"{panel} at {scale}: its data are absent (the panel draws nothing)")
    entry = style.read_index(scale)[panel]
    return [*entry["files"], str(style.rel(provenance.write_index(scale)))]


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m lib.figures", description=__doc__.split("\n\n")[-1])
    ap.add_argument("name", help="a panel's name or figure id (fig3j, S3o); figures/<scale>/INDEX.md lists them")
    ap.add_argument("--scale", default="cpu", help="smoke | cpu | paper (default: cpu)")
    args = ap.parse_args(argv)
    for f in redraw(args.name, args.scale):
        print(f)
    return 0


if __name__ == "__main__":
    sys.exit(cli_main(main))
