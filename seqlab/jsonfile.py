"""JSON in and out. In: the one parser of JSON that comes from outside (config.json,
model.safetensors.index.json, tokenizer.json, a log.jsonl line): every way it can be wrong is a
ValueError naming the file (and line), never a traceback. Out: :func:`to_json`, the one converter
of results (arrays, tensors, dataclasses, tuples) to plain JSON types, and :func:`dumps`, the one
writer of the project's JSON files, which never refuses a value. Standard library only.

A non-finite number, which JSON has no word for, is written as one of the strings "NaN", "inf"
and "-inf" in the place of the number (:data:`NON_FINITE_TEXT`; Python's ``float`` reads each
back). Those places hold numbers only, so the strings mean nothing else; :func:`from_json` turns
them back into floats, as ``read_jsonl`` does for every log.jsonl record. Files written before
this form may hold the bare tokens NaN and Infinity, which ``json.loads`` still reads.

Example: a config.json of 100,000 nested brackets raises "config.json: too deeply nested (JSON
nested deeper than Python can parse; a damaged or hostile file)", and ``[1, 2]`` where an object is
expected raises "config.json: expected a JSON object, found list".
"""

from __future__ import annotations

import json
import math
import numbers
import os
from dataclasses import fields, is_dataclass
from pathlib import Path
from typing import Any, Literal

_KINDS = {dict: "an object", list: "a list", str: "a string", int: "a number", float: "a number",
          bool: "true or false", type(None): "null"}


def kind_of(value: Any) -> str:
    """A JSON value's kind in words: "an object", "a list", "a string", ..."""
    return _KINDS.get(type(value), type(value).__name__)


def parse_json(text: str | bytes, source: str | os.PathLike, *, line: int | None = None,
               expected: type | None = None, expected_text: str | None = None) -> Any:
    """``text`` parsed; ``source`` (and ``line``, for one line of a JSONL file) starts every error.

    ``expected`` (dict or list) refuses another kind of value: "SOURCE: expected a JSON object,
    found list" (``expected_text`` replaces "a JSON object").
    """
    where = f"{os.fspath(source)}, line {line}" if line is not None else os.fspath(source)
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ValueError(f"{where}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        at = f"{os.fspath(source)}, line {exc.lineno if line is None else line}"
        raise ValueError(f"{at}: invalid JSON ({exc.msg})") from None
    except RecursionError:
        raise ValueError(f"{where}: too deeply nested (JSON nested deeper than Python can parse; a damaged "
                         "or hostile file)") from None
    if expected is not None and not isinstance(data, expected):
        wanted = expected_text or ("a JSON object" if expected is dict else f"JSON {kind_of(expected())}")
        raise ValueError(f"{where}: expected {wanted}, found {type(data).__name__}")
    return data


def read_json(path: str | os.PathLike, *, expected: type | None = None, expected_text: str | None = None) -> Any:
    """The JSON value in the file ``path`` (:func:`parse_json`'s checks); FileNotFoundError when missing."""
    path = Path(path)
    return parse_json(path.read_bytes(), path, expected=expected, expected_text=expected_text)


# the project's one form of a non-finite number in JSON (module docstring): str(float) -> its string
NON_FINITE_TEXT = {"nan": "NaN", "inf": "inf", "-inf": "-inf"}
_NON_FINITE_VALUE = {text: float(text) for text in NON_FINITE_TEXT.values()}


def to_json(value: Any, *, non_finite: Literal["text", "keep", "raise", "null"] = "text",
            unknown: Literal["keep", "repr"] = "keep") -> Any:
    """``value`` as plain JSON types (dicts with str keys, lists, str, int, float, bool, None).

    Dataclasses become dicts of their fields, tuples lists, bytes latin-1 text (one character per
    byte); a NumPy array or scalar or a torch tensor becomes its ``tolist()`` (read duck-typed, so
    this module imports neither). ``non_finite`` says what a NaN or infinity becomes: "text" (the
    default: the project's form, "NaN", "inf" or "-inf"), "keep" (the float, which ``json.dump``
    writes as the non-JSON NaN), "raise" (ValueError) or "null" (None). ``unknown``: an object of
    no JSON type is kept, or with "repr" becomes its repr cut at 200 characters (e.g. what a
    student's function returned).

    Example: ``to_json({"w": np.array([1.5, np.nan]), 2: (1, b"\xff")}, non_finite="text")`` is
    ``{"w": [1.5, "NaN"], "2": [1, "\xff"]}``.
    """
    def convert(item: Any) -> Any:
        if isinstance(item, dict):
            return {str(k): convert(v) for k, v in item.items()}
        if isinstance(item, (list, tuple)):
            return [convert(v) for v in item]
        if item is None or isinstance(item, (str, bool, int)):
            return item
        if isinstance(item, float):
            if math.isfinite(item) or non_finite == "keep":
                return item
            if non_finite == "raise":
                raise ValueError("the result is not finite (NaN or infinity)")
            return None if non_finite == "null" else NON_FINITE_TEXT[str(item)]
        if isinstance(item, (bytes, bytearray)):
            return bytes(item).decode("latin-1")
        if is_dataclass(item) and not isinstance(item, type):
            return {f.name: convert(getattr(item, f.name)) for f in fields(item)}
        if hasattr(item, "tolist"):  # numpy arrays and scalars, torch tensors
            return convert(item.detach().tolist() if hasattr(item, "detach") else item.tolist())
        if unknown == "repr":
            if isinstance(item, numbers.Number):  # Fraction, Decimal: as a float
                try:
                    return convert(float(item))
                except (TypeError, ValueError):  # complex
                    pass
            return repr(item)[:200]
        return item

    return convert(value)


def dumps(value: Any, **options: Any) -> str:
    """``value`` as JSON text through :func:`to_json` (a non-finite number in the project's form),
    so it never refuses a number; ``options`` go to ``json.dumps`` (``indent``, ``ensure_ascii``)."""
    return json.dumps(to_json(value), allow_nan=False, **options)


def from_json(value: Any) -> Any:
    """``value`` with the strings "NaN", "inf" and "-inf" turned back into floats, at any depth: for a
    document whose strings in those places can only be numbers (a log.jsonl record, results.json)."""
    if isinstance(value, dict):
        return {key: from_json(item) for key, item in value.items()}
    if isinstance(value, list):
        return [from_json(item) for item in value]
    if isinstance(value, str):
        return _NON_FINITE_VALUE.get(value, value)
    return value


NUMBER = (int, float)  # a JSON number (a bool is not one)


def check_shape(value: Any, shape: Any, source: str | os.PathLike, path: str = "") -> None:
    """Raise ValueError "SOURCE: PATH ..." naming the first place where the JSON ``value`` lacks
    what ``shape`` asks for. A shape is: a type or tuple of types (``int``, ``NUMBER``, ``str``,
    ``list``, ``dict``; a bool matches only ``bool``; ``None`` among them allows null); a dict of
    key -> shape (every key required; the key ``"*"`` gives the shape of every value); a one-item
    list ``[shape]`` (a list whose items all match); ``None`` (anything).

    Example: ``check_shape({"models": {"attn1": {}}}, {"models": {"*": {"curve": dict}}}, "r.json")``
    raises 'r.json: models.attn1 has no "curve"'.
    """
    where = f"{os.fspath(source)}: {path}" if path else os.fspath(source)
    if shape is None:
        return
    if isinstance(shape, dict):
        if not isinstance(value, dict):
            raise ValueError(f"{where} should be an object, found {kind_of(value)}")
        for key, inner in shape.items():
            if key == "*":
                for name, item in value.items():
                    check_shape(item, inner, source, f"{path}.{name}" if path else str(name))
            elif key not in value:
                raise ValueError(f"{where} has no {json.dumps(key)}" if path else f"{where}: no {json.dumps(key)}")
            else:
                check_shape(value[key], inner, source, f"{path}.{key}" if path else key)
        return
    if isinstance(shape, list):
        if not isinstance(value, list):
            raise ValueError(f"{where} should be a list, found {kind_of(value)}")
        for index, item in enumerate(value):
            check_shape(item, shape[0], source, f"{path}[{index}]")
        return
    kinds = shape if isinstance(shape, tuple) else (shape,)
    allowed = tuple(type(None) if kind is None else kind for kind in kinds)
    if isinstance(value, bool) and bool not in allowed or not isinstance(value, allowed):
        wanted = " or ".join(dict.fromkeys(kind_of(kind()) if kind is not type(None) else "null" for kind in allowed))
        raise ValueError(f"{where} should be {wanted}, found {kind_of(value)}")
