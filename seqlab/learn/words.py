"""The checker's words in English and 中文: one data file (``words.toml``), each key once with both
languages side by side. A step's own words are in its folder's ``step.toml``.

    say("feedback.diagnosis", "zh")            # "诊断："
    say("feedback.explains", "en", a=5, b=18)  # " (it explains 5 of 18 checked values)"
    pair("mistakes.square_only.title")         # ("right only when the sizes are equal", "只有尺寸相等时才正确")
"""

from __future__ import annotations

import functools
import tomllib
from pathlib import Path

WORDS = Path(__file__).resolve().parent / "words.toml"
LANGS = ("en", "zh")


@functools.cache
def table() -> dict:
    with open(WORDS, "rb") as f:
        return tomllib.load(f)


def entry(key: str) -> dict:
    """The {"en": ..., "zh": ...} of a dotted key; KeyError naming the key and the file."""
    node = table()
    for part in key.split("."):
        if not isinstance(node, dict) or part not in node:
            raise KeyError(f"{WORDS} has no words {key!r}")
        node = node[part]
    if not isinstance(node, dict) or "en" not in node:
        raise KeyError(f"{WORDS}: {key!r} is not a text in English and 中文")
    return node


def pair(key: str, **values) -> tuple[str, str]:
    node = entry(key)
    en = node["en"].format(**values) if values else node["en"]
    zh = node.get("zh", node["en"])
    return en, zh.format(**values) if values else zh


def say(key: str, lang: str = "en", **values) -> str:
    """The text ``key`` in ``lang`` (English where 中文 has none), its {names} filled from ``values``."""
    return pair(key, **values)[1 if lang == "zh" else 0]
