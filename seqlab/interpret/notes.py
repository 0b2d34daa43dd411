"""Honest answers: when a measurement cannot show anything, say so, and never let a colour scale
stretch noise into a signal.

Two things hide an effect:

- a saturated prediction: with p(target) > 0.999 the log-probability is already about 0, and no
  cut or patch can raise it; a drop stays tiny because the logits are far apart. The answer is
  another target (one the model is less sure of), a baseline (a logit difference does not
  saturate), or a prompt whose next token is not certain.
- float32 resolution: a difference of two numbers of size x is only known to about x * 2^-23;
  an effect below RESOLUTION_ULPS times that is rounding, not a signal.

Each result carries its :class:`Note` s (code, message, suggestion); the CLI prints them under the
table, writes them into the JSON and the picture's title, and the explorer shows them.
Colour scales (:func:`colour_scale`) have a floor per kind of number and report the absolute range.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import torch

from seqlab.interpret.inputs import SATURATED

FLOAT32_EPS = 2.0 ** -23
RESOLUTION_ULPS = 64  # an effect within 64 float32 rounding steps of its operands' size is noise
# the smallest half-range a colour scale may show, per kind of number (its unit in brackets)
FLOORS = {
    "drop": 0.05,         # knockout: drop in log p (nats)
    "saliency": 0.05,     # gradient x input of log p (nats)
    "recovery": 1.0,      # patching: 0 = corrupted, 1 = clean
    "attribution": 0.5,   # direct logit attribution (logits)
    "dependency": 1e-3,   # seq2seq Jacobian norms
    "probability": 1.0,   # lens: probabilities, 0..1
}


@dataclass(frozen=True)
class Note:
    """Something the reader must know to read a result: ``code`` (what the page translates),
    ``message`` and ``suggestion`` in words, ``params`` (numbers the message names)."""

    code: str
    message: str
    suggestion: str
    params: dict[str, Any] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        return asdict(self)

    def __str__(self) -> str:
        return f"note: {self.message} {self.suggestion}"


def saturation_note(p: float, what: str, flag_target: str = "--target") -> Note | None:
    """A note when the model gives ``what`` (the target, in words) a probability above 0.999."""
    if not p > SATURATED:
        return None
    return Note("saturated", f"the prediction is saturated: the model gives {what} p = {p:.6f}, so its "
                             "log-probability is about 0 and no cut or patch can move it measurably.",
                f"Choose a target the model is less sure of ({flag_target}), a baseline for a logit difference "
                "(--baseline), or a prompt whose next token is not certain.", {"p": p})


def resolution_note(effects: torch.Tensor, operand_size: float) -> Note | None:
    """A note when every effect is within float32 rounding of numbers of size ``operand_size``."""
    largest = float(effects.abs().max()) if effects.numel() else 0.0
    resolution = RESOLUTION_ULPS * FLOAT32_EPS * max(1.0, abs(operand_size))
    if largest > resolution:
        return None
    return Note("float32", f"every effect is at most {largest:.2g}, below what float32 resolves for numbers of "
                           f"size {abs(operand_size):.3g} (about {resolution:.1g}): the map is rounding noise.",
                "Pick a target or baseline whose probability is not saturated, or a prompt where the answer "
                "depends on the context.", {"largest": largest, "resolution": resolution})


def collect(*notes: Note | None) -> list[Note]:
    return [note for note in notes if note is not None]


def colour_scale(values, kind: str) -> dict[str, float]:
    """{"bound", "floor", "min", "max"}: a diverging scale's half-range is the largest |value| but
    never below the kind's floor (FLOORS), so a map of tiny numbers stays pale; min and max are the
    absolute range, for the title."""
    data = torch.as_tensor(values, dtype=torch.float64)
    finite = data[torch.isfinite(data)]
    low = float(finite.min()) if finite.numel() else 0.0
    high = float(finite.max()) if finite.numel() else 0.0
    floor = FLOORS[kind]
    return {"bound": max(abs(low), abs(high), floor), "floor": floor, "min": low, "max": high}


def range_words(scale: dict[str, float], diverging: bool = True) -> str:
    """'values -0.012 .. +0.31 (colour scale +-0.5)' for a title; a one-sided scale (not
    ``diverging``) runs '0 .. 0.5'."""
    colours = f"\u00b1{scale['bound']:.3g}" if diverging else f"0 .. {scale['bound']:.3g}"
    return f"values {scale['min']:+.3g} .. {scale['max']:+.3g} (colour scale {colours})"
