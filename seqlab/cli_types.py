"""Argument types shared by every ``cli.py`` (standard library only, so ``seqlab --help`` stays fast).

``float("nan")`` and ``float("inf")`` parse without complaint, and a NaN then slips through every
range check (``nan > 0`` and ``nan < 0`` are both False). :func:`finite_float` refuses them when the
command line is parsed::

    >>> finite_float("3e-4")
    0.0003
    >>> finite_float("nan")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: 'nan' is not a finite number; give a value such as 0.5 or 3e-4
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
