"""Argument types shared by every ``cli.py`` (standard library only, so ``seqlab --help`` stays fast).

:func:`finite_float` refuses NaN and infinities as the command line is parsed: a NaN would slip
through every range check (``nan > 0`` and ``nan < 0`` are both False)::

    >>> finite_float("nan")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: 'nan' is not a finite number; give a value such as 0.5 or 3e-4

:func:`check_text` names a byte that is not UTF-8 (a lone surrogate after ``surrogateescape``)
before it fails deep in an encoder with an internal message; the explorer uses it too.
"""

from __future__ import annotations

import argparse
import math


def finite_float(text: str) -> float:
    """``float(text)``, refusing text that is not a number and NaN / infinities."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"{text!r} is not a finite number; give a value such as 0.5 or 3e-4")
    return value


finite_float.__name__ = "float"  # argparse names the type in its messages


def check_text(text: str, name: str) -> str:
    """``text`` unchanged, or ValueError naming ``name`` and the first character that is not Unicode
    text: a byte that was not UTF-8 on the command line (U+DC80..U+DCFF from surrogateescape) or
    any other lone surrogate."""
    for index, char in enumerate(text):
        code = ord(char)
        if 0xDC80 <= code <= 0xDCFF:
            raise ValueError(f"{name} is not valid UTF-8: byte {code - 0xDC00:#04x} at character {index + 1} "
                             "(text in another encoding, e.g. Latin-1?); give UTF-8 text")
        if 0xD800 <= code <= 0xDFFF:
            raise ValueError(f"{name} holds a lone surrogate U+{code:04X} at character {index + 1}, which is "
                             "not a Unicode character; give plain text")
    return text


def file_given_as_folder(path: str, flag: str) -> int | None:
    """2 (the usage-error status), after saying why, when the folder ``path`` to write is an existing
    file; None otherwise. Checked by the handler so that every writing command answers alike."""
    import os
    import sys

    if os.path.exists(path) and not os.path.isdir(path):
        print(f"error: {flag} {path} exists and is not a directory; give a folder (it is created if missing)",
              file=sys.stderr)
        return 2
    return None


def positive_int(text: str) -> int:
    """``int(text)`` >= 1, for counts where 0 or a negative number would mean nothing (or, used as a
    slice bound, something else: ``pairs[:-1]``)."""
    value = _integer(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive integer (give 1 or more)")
    return value


def non_negative_int(text: str) -> int:
    """``int(text)`` >= 0."""
    value = _integer(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text!r} is negative (give 0 or more)")
    return value


def _integer(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None


positive_int.__name__ = non_negative_int.__name__ = "int"
