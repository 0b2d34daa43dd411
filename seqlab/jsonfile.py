"""The one parser of JSON that comes from outside (config.json, model.safetensors.index.json,
tokenizer.json, a log.jsonl line): every way it can be wrong is a ValueError naming the file (and
line), never a traceback. Standard library only.

Example: a config.json of 100,000 nested brackets raises "config.json: too deeply nested (JSON
nested deeper than Python can parse; a damaged or hostile file)", and ``[1, 2]`` where an object is
expected raises "config.json: expected a JSON object, found list".
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

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
