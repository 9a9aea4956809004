"""A package whose submodules load on first use: ``package.name`` imports ``package.name`` when it is read."""
from __future__ import annotations

import importlib
import importlib.util
from types import ModuleType


def submodules(package: str):
    """A module ``__getattr__`` (PEP 562) for ``package``: reading ``package.name`` imports its submodule ``name``
    on first use (an unknown name is the usual ``AttributeError``)."""
    def __getattr__(name: str) -> ModuleType:
        if not name.startswith("_") and importlib.util.find_spec(f"{package}.{name}") is not None:
            return importlib.import_module(f"{package}.{name}")
        raise AttributeError(f"module {package!r} has no attribute or submodule {name!r}")
    return __getattr__
