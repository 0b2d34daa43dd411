"""Package attributes that import their module on first use (PEP 562).

A package's __init__ lists {name: module} and gets __getattr__/__dir__ from `lazy_exports`, so
importing one light submodule (e.g. a CLI's argument definitions) does not import torch.

    __getattr__, __dir__ = lazy_exports(__name__, {"TransformerLM": "seqlab.model.transformer"})
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from typing import Any


def lazy_exports(package: str, exports: dict[str, str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """(__getattr__, __dir__) for the package named `package` exporting `exports` lazily."""

    def __getattr__(name: str) -> Any:
        if name not in exports:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(exports[name]), name)
        setattr(sys.modules[package], name, value)  # later lookups skip __getattr__
        return value

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | set(exports))

    return __getattr__, __dir__
