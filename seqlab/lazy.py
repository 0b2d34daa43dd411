"""Package attributes that load on first use (PEP 562), so importing a package's ``cli`` module
(which ``seqlab --help`` does for every area) does not import torch.

Worked example, in ``seqlab/inference/__init__.py``::

    __getattr__, __dir__ = lazy_exports(__name__, {"generate": "seqlab.inference.generate"})

``seqlab.inference.generate`` then imports ``seqlab.inference.generate`` (the module) on first
access and returns its ``generate`` (the function); later lookups find it in the package directly.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from typing import Any


def lazy_exports(package: str, exports: dict[str, str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """(``__getattr__``, ``__dir__``) for ``package`` serving each name of ``exports`` (name ->
    module that defines it)."""

    def __getattr__(name: str) -> Any:
        if name not in exports:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(exports[name]), name)
        setattr(sys.modules[package], name, value)  # later lookups skip __getattr__
        return value

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | set(exports))

    return __getattr__, __dir__
