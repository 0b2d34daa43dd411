"""The checker's words in English and Chinese: one data file (``words.toml``), each key once with both
languages side by side. A step's own words are in its folder's ``step.toml``.

    say("feedback.diagnosis", "en")            # "diagnosis: "
    say("feedback.explains", "en", a=5, b=18)  # " (it explains 5 of 18 checked values)"
    pair("mistakes.square_only.title")         # (the English, the Chinese)
"""

from __future__ import annotations

import dataclasses
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
        raise KeyError(f"{WORDS}: {key!r} is not a text in English and Chinese")
    return node


def pair(key: str, **values) -> tuple[str, str]:
    node = entry(key)
    en = node["en"].format(**values) if values else node["en"]
    zh = node.get("zh", node["en"])
    return en, zh.format(**values) if values else zh


def say(key: str, lang: str = "en", **values) -> str:
    """The text ``key`` in ``lang`` (English where Chinese has none), its {names} filled from ``values``."""
    return pair(key, **values)[1 if lang == "zh" else 0]


# --- words said later, in the student's language ------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class Said:
    """Words to say in the student's language, when the language is known: ``key`` names a text of
    the step's own ``[words]`` table (``step``: the folder's name) or of ``words.toml``, and
    ``values`` fill its {names}: numbers, names from code (said as they are) and other Said. A
    recogniser or a check returns one instead of an English sentence; ``str()`` is the English."""
    key: str
    values: dict = dataclasses.field(default_factory=dict)
    step: str = ""

    def __str__(self) -> str:
        return render(self, "en")

    def __contains__(self, text: str) -> bool:      # "minus" in said: in the English
        return text in str(self)

    def __eq__(self, other) -> bool:               # equal to its English, and to the same words
        if isinstance(other, str):
            return str(self) == other
        return isinstance(other, Said) and (self.key, self.values, self.step) == (other.key, other.values, other.step)

    def __hash__(self) -> int:
        return hash(str(self))

    def __add__(self, other: str) -> str:          # "..." + said, said + "...": English, as before
        return str(self) + other

    def __radd__(self, other: str) -> str:
        return other + str(self)

    def as_json(self) -> dict:
        return {"said": self.key, "step": self.step,
                "values": {k: v.as_json() if isinstance(v, (Said, Both)) else v for k, v in self.values.items()}}


@dataclasses.dataclass(frozen=True)
class Both:
    """A text given in both languages where it is said (a contract's sentence quoted in a check)."""
    en: str
    zh: str = ""

    def __str__(self) -> str:
        return self.en

    def as_json(self) -> dict:
        return {"en": self.en, "zh": self.zh or self.en}


def speaker(step: str):
    """``say(key, **values) -> Said`` for the step folder ``step`` (a check.py: ``say = speaker(__file__)``,
    the folder being the file's)."""
    name = Path(step).parent.name if step.endswith(".py") else step

    def say_later(key: str, **values) -> Said:
        return Said(key, values, name)
    return say_later


def said(key: str, **values) -> Said:
    """Words of ``words.toml`` said later."""
    return Said(key, values)


def from_json(value):
    """A Said (or Both) from its ``as_json`` form (anything else as it is)."""
    if isinstance(value, dict) and set(value) == {"said", "step", "values"} and isinstance(value["values"], dict):
        return Said(str(value["said"]), {k: from_json(v) for k, v in value["values"].items()}, str(value["step"]))
    if isinstance(value, dict) and set(value) == {"en", "zh"}:
        return Both(str(value["en"]), str(value["zh"]))
    return value


def _step_words(step: str) -> dict:
    from seqlab.learn.courses import active
    try:
        return active().folder(step).record.get("words", {})
    except KeyError:
        return {}


def render(value, lang: str = "en") -> str:
    """``value`` in ``lang``: a Said's text with its values rendered, a number as it is shown, text as it is."""
    if isinstance(value, dict):
        value = from_json(value)
    if isinstance(value, Both):
        return value.zh or value.en if lang == "zh" else value.en
    if not isinstance(value, Said):
        return value if isinstance(value, str) else f"{value:.6g}" if isinstance(value, float) else str(value)
    node = _step_words(value.step).get(value.key) if value.step else None
    if node is None:
        try:
            node = entry(value.key)
        except KeyError:
            where = f"the step {value.step!r}'s [words] nor " if value.step else ""
            raise KeyError(f"no words {value.key!r} in {where}{WORDS}") from None
    text = node.get(lang) or node["en"] if lang != "en" else node["en"]
    return text.format(**{k: render(v, lang) for k, v in value.values.items()})
