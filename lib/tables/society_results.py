"""The society_results tables of the README and docs/ (filled by the next commit)."""
from __future__ import annotations

from typing import Callable

TABLES: dict[str, Callable[[str], str]] = {}
VALUES: dict[str, Callable[[str], str]] = {}
