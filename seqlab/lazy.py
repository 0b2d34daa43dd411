"""Package attributes that load on first use (PEP 562), so importing a package's ``cli`` module
(which ``seqlab --help`` does for every area) does not import torch.

Worked example, in ``seqlab/inference/__init__.py``::

    __all__, __getattr__, __dir__ = lazy_exports(__name__, {
        "seqlab.inference.generate": ("generate", "generate_stream"),
    })

``seqlab.inference.generate`` then imports ``seqlab.inference.generate`` (the module) on first
access and returns its ``generate`` (the function); later lookups find it in the package directly.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from typing import Any


def lazy_exports(package: str, modules: dict[str, tuple[str, ...]]
                 ) -> tuple[list[str], Callable[[str], Any], Callable[[], list[str]]]:
    """(``__all__``, ``__getattr__``, ``__dir__``) for ``package``, serving the names each module
    of ``modules`` (module -> the names it defines) exports."""
    exports = {name: module for module, names in modules.items() for name in names}

    def __getattr__(name: str) -> Any:
        if name not in exports:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(exports[name]), name)
        setattr(sys.modules[package], name, value)  # later lookups skip __getattr__
        return value

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | set(exports))

    return sorted(exports), __getattr__, __dir__
