"""Results tables and numbers in the README and ``docs/``, written from the data by code: ``python -m lib.tables``.

A table (or any block) lives between two markers in a Markdown file::

    <!-- table:study-primary cpu -->
    ...generated...
    <!-- /table:study-primary -->

and a number inside a sentence between two inline ones, ``<!-- value:society-base-test cpu -->0.593<!-- /value -->``
(HTML comments: a rendered page shows only the number). :data:`TABLES` and :data:`VALUES` map a name to the
function that writes it from the data of one scale; each experiment's tables module holds its own
(``lib.operators.tables``, ``lib.tool_mutation.tables``, ``lib.program_search.tables``, and every study of the
society that declares them, :func:`lib.society.studies.tables`), gathered here with what every data folder cost
(:mod:`lib.tables.costs`), each name once. The registry
stands above the experiments: none of them imports it. ``make reproduce`` (:mod:`lib.reproduce`) rewrites every
marked block of :data:`FILES`; ``tests/test_tables.py`` fails when a committed one differs from what the committed
data gives, so every such number has its source. ``--check`` only compares (exit status 1 when one is stale).
"""
from __future__ import annotations

import argparse
import re
import sys
from typing import Callable

from lib.core.errors import cli_main
from lib.core.paths import REPO_ROOT
from lib.operators import tables as operators
from lib.program_search import tables as program_search
from lib.society import studies
from lib.tables import costs
from lib.tool_mutation import tables as tool_mutation

MODULES = (*studies.tables(), operators, tool_mutation, program_search, costs)


def gathered(kind: str, modules=MODULES) -> dict[str, Callable[[str], str]]:
    """``{name: writer}`` of every module's ``kind`` (``"TABLES"`` or ``"VALUES"``); a name two modules declare is
    refused."""
    out: dict[str, Callable[[str], str]] = {}
    for m in modules:
        twice = sorted(set(out) & set(getattr(m, kind)))
        if twice:
            raise RuntimeError(f"lib.tables: {m.__name__} declares {kind} {twice} that another module declares too")
        out.update(getattr(m, kind))
    return out


TABLES = gathered("TABLES")
VALUES = gathered("VALUES")

# the README and every page of docs/ (a page without markers is left as it is): a study's new page needs no entry here
FILES = ("README.md", *sorted(str(p.relative_to(REPO_ROOT)) for p in (REPO_ROOT / "docs").glob("*.md")))
MARK = re.compile(r"(<!-- table:(?P<name>[\w-]+) (?P<scale>\w+) -->\n)(?P<body>.*?)(<!-- /table:(?P=name) -->)", re.S)
INLINE = re.compile(r"(<!-- value:(?P<name>[\w.-]+) (?P<scale>\w+) -->)(?P<body>[^\n]*?)(<!-- /value -->)")


def render(text: str) -> str:
    """``text`` with every marked block and inline value rewritten from the data."""
    def block(m: re.Match) -> str:
        name, scale = m["name"], m["scale"]
        if name not in TABLES:
            raise ValueError(f"unknown table {name!r} (known: {sorted(TABLES)})")
        return m.group(1) + TABLES[name](scale) + m.group(5)

    def inline(m: re.Match) -> str:
        name, scale = m["name"], m["scale"]
        if name not in VALUES:
            raise ValueError(f"unknown value {name!r} (known: {sorted(VALUES)})")
        return m.group(1) + VALUES[name](scale) + m.group(5)
    return INLINE.sub(inline, MARK.sub(block, text))


def marked_names(text: str) -> list[str]:
    """The names of every marked block and inline value in ``text``."""
    return [m["name"] for m in MARK.finditer(text)] + [m["name"] for m in INLINE.finditer(text)]


def stale(files=FILES) -> list[str]:
    """The files whose marked tables differ from what the data gives."""
    return [f for f in files if render((REPO_ROOT / f).read_text()) != (REPO_ROOT / f).read_text()]


def update(files=FILES) -> list[str]:
    """Rewrite the marked tables of ``files``; returns the files that changed."""
    changed = []
    for f in files:
        p = REPO_ROOT / f
        old = p.read_text()
        new = render(old)
        if new != old:
            p.write_text(new)
            changed.append(f)
    return changed


def _main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m lib.tables", description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="only compare; exit 1 when a table is stale")
    args = ap.parse_args(argv)
    if args.check:
        bad = stale()
        for f in bad:
            print(f"{f}: a results table differs from the data (python -m lib.tables rewrites it)")
        return 1 if bad else 0
    for f in update():
        print(f"rewrote the results tables of {f}")
    return 0


def main(argv=None) -> int:
    return cli_main(_main, argv)


if __name__ == "__main__":
    sys.exit(main())
