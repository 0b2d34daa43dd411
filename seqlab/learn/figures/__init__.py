"""The lessons' figures, drawn by seqlab as SVG: ``FIGURES[name](lang) -> str``.

A lesson shows one with ``[[figure NAME | caption]]`` (``seqlab.learn.lessons``). Each module of
this package draws the figures of one part of the course and lists them in its own ``FIGURES``;
this table joins them. Figures are built with ``seqlab.learn.figures.svg`` (boxes, arrows, labels),
labelled with symbols where they can be, and in the lesson's language where words are needed: those
words are in the text layer, ``words.toml``'s ``[figures]`` table (``seqlab.learn.words.say``).
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable


def _collect() -> dict[str, Callable[[str], str]]:
    table: dict[str, Callable[[str], str]] = {}
    for info in pkgutil.iter_modules(__path__):
        if info.name == "svg":
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        for name, draw in getattr(module, "FIGURES", {}).items():
            if name in table:
                raise ValueError(f"the figure {name!r} is drawn twice (seqlab.learn.figures.{info.name})")
            table[name] = draw
    return table


FIGURES: dict[str, Callable[[str], str]] = _collect()


def figure(name: str, lang: str = "en") -> str:
    """The SVG text of the figure ``name``; KeyError names the figures there are."""
    if name not in FIGURES:
        raise KeyError(f"no figure {name!r}; the figures are: {', '.join(sorted(FIGURES))}")
    return FIGURES[name](lang)
