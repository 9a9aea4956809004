"""The README's and docs' generated tables: the marker machinery (:mod:`lib.tables.registry`, ``python -m
lib.tables``) and the formatting every experiment's ``tables`` module shares (:mod:`.format`, :mod:`.effects`)."""
