"""The README's and docs' generated tables: the marker machinery that writes them from the data
(:mod:`lib.tables.registry`, ``python -m lib.tables``). It stands above the experiments and gathers their
tables; the formatting their tables share lives below them (:mod:`lib.core.format`, :mod:`lib.core.effects`)."""
