"""Where a text gives a Trace question's answer away (tests of every view: terminal, JSON, explorer,
notebook, site).

:func:`leaks` finds the answer written out: a number that equals an expected value at the digits it
shows (at least two significant digits, or all of them where the answer needs fewer: 0.4), a whole
number equal to a count (a number is also caught with its sign flipped: +0.674144 gives −0.674144 away), or a shape "3×2" / "3 x 2" / "(3, 2)" of a shapes answer. Numbers that
the question itself gives are not counted (g = 0.4 in the LSTM question is an input, not an answer).
"""

from __future__ import annotations

import math
import re

_NUMBER = re.compile(r"(?<![\w.])[-−]?\d+(?:\.\d+)?(?:e[-+]?\d+)?(?![\w])")


def _digits(token: str) -> int:
    mantissa = token.lstrip("-−").split("e")[0]
    return max(len(mantissa.replace(".", "").lstrip("0")), 1)


def _unit(value: float, digits: int) -> float:
    if value == 0:
        return 0.5 * 10 ** -digits
    return 0.5 * 10 ** (math.floor(math.log10(abs(value))) - digits + 1)


def _numbers(text: str) -> list[tuple[str, float, int]]:
    return [(m.group(0), float(m.group(0).replace("−", "-")), m.start()) for m in _NUMBER.finditer(text)]


def _needed(value: float) -> int:
    """The significant digits ``value`` needs (0.4: 1, 0.358149: 17)."""
    for d in range(1, 17):
        if abs(float(f"{value:.{d}g}") - value) <= 1e-12 * max(1.0, abs(value)):
            return d
    return 17


def leaks(text: str, question) -> list[str]:
    """The places in ``text`` that write out ``question``'s answer (empty: none)."""
    expected = [float(v) for v in question.answer()]
    given = {v for _, v, _ in _numbers(question.text[0])}
    found = []
    counts = all(v.is_integer() for v in expected)
    if counts and len(expected) > 1:                       # shapes: rows and columns in pairs
        for rows, cols in zip(expected[0::2], expected[1::2]):
            r, c = int(rows), int(cols)
            pattern = rf"(?<![\d.]){r}\s*[×x]\s*{c}(?![\d.])|\(\s*{r}\s*,\s*{c}\s*\)"
            found += [f"{m.group(0)!r} at {m.start()}: …{text[max(0, m.start() - 40):m.end() + 20]}…"
                      for m in re.finditer(pattern, text)]
        return found
    for token, value, at in _numbers(text):
        if value in given:
            continue
        digits = _digits(token)
        for e in expected:
            if counts:
                hit = value == e
            else:
                hit = (digits >= min(2, _needed(e)) and abs(abs(value) - abs(e)) <= _unit(e, digits) * (1 + 1e-9))
            if hit:
                found.append(f"{token} (the answer {e:g}): …{text[max(0, at - 60):at + 30]}…")
    return found
