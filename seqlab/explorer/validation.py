"""Strict validation of the explorer's JSON requests.

Every API request is a JSON object. A :class:`Payload` hands out its fields one
by one, each checked for type, finiteness and a small size limit, and falls back
to the lesson's worked example when a field is absent. Anything wrong raises
:class:`RequestError`, which the server turns into HTTP 400 with the message.
"""

from __future__ import annotations

import json
import math
from typing import Any

from seqlab.cli_types import check_text

MAX_BODY_BYTES = 16_384  # every widget's request fits in a few hundred bytes


class RequestError(ValueError):
    """A client mistake; the message is sent back as the body of an HTTP 400.

    ``code`` and ``params`` (optional) name the mistake for the page, which shows its own
    translation of it (i18n key ``err.<code>`` filled with ``params``) instead of the English text.
    """

    def __init__(self, message: str, code: str | None = None, **params: Any):
        super().__init__(message)
        self.code, self.params = code, params

    def body(self) -> dict[str, Any]:
        """The JSON body of the 400 response."""
        body: dict[str, Any] = {"error": str(self)}
        if self.code:
            body.update(code=self.code, params=self.params)
        return body


def _reject_constant(name: str) -> float:
    raise RequestError(f"non-finite number {name} is not allowed")


def parse_json_object(body: bytes) -> dict[str, Any]:
    """Decode a request body into a dict, rejecting NaN/Infinity and non-objects."""
    if len(body) > MAX_BODY_BYTES:
        raise RequestError(f"request body is {len(body)} bytes; the limit is {MAX_BODY_BYTES}")
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise RequestError(f"request body is not UTF-8: {exc}") from None
    if not text.strip():
        return {}
    try:
        value = json.loads(text, parse_constant=_reject_constant)
    except RequestError:
        raise
    except RecursionError:
        raise RequestError("malformed JSON: nested too deeply") from None
    except ValueError as exc:  # JSONDecodeError, or an integer literal with too many digits
        raise RequestError(f"malformed JSON: {exc}") from None
    if not isinstance(value, dict):
        raise RequestError(f"request body must be a JSON object, got {type(value).__name__}")
    return value


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


class Payload:
    """Typed access to one request's fields; unknown fields are an error.

    Each accessor takes the field name, the worked-example default and the
    allowed range; call :meth:`finish` after reading every field.
    """

    def __init__(self, data: dict[str, Any]):
        self.data = data
        self.used: set[str] = set()

    def _get(self, name: str, default: Any) -> Any:
        self.used.add(name)
        return self.data.get(name, default)

    def finish(self) -> None:
        unknown = sorted(set(self.data) - self.used)
        if unknown:
            raise RequestError(f"unknown field(s): {', '.join(unknown)}; expected {', '.join(sorted(self.used))}")

    # --- scalars -------------------------------------------------------------------
    def number(self, name: str, default: float, lo: float, hi: float) -> float:
        return _check_number(self._get(name, default), name, lo, hi)

    def integer(self, name: str, default: int, lo: int, hi: int) -> int:
        value = self._get(name, default)
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if not isinstance(value, int) or isinstance(value, bool):
            raise RequestError(f"{name} must be an integer, got {_describe(value)}")
        if not lo <= value <= hi:
            raise RequestError(f"{name} must be between {lo} and {hi}, got {value}")
        return value

    def optional_integer(self, name: str, lo: int, hi: int) -> int | None:
        """An integer in [lo, hi], or None when the field is absent or null."""
        return None if self._get(name, None) is None else self.integer(name, 0, lo, hi)

    def string(self, name: str, default: str, max_chars: int) -> str:
        value = self._get(name, default)
        if not isinstance(value, str):
            raise RequestError(f"{name} must be a string, got {_describe(value)}")
        if len(value) > max_chars:
            raise RequestError(f"{name} is {len(value)} characters; the limit is {max_chars}",
                               "text_too_long", field=name, n=len(value), limit=max_chars)
        try:  # JSON can write a lone surrogate (\\ud800), which no encoder accepts
            check_text(value, name)
        except ValueError as exc:
            raise RequestError(str(exc), "text_not_unicode", field=name) from None
        return value

    def boolean(self, name: str, default: bool) -> bool:
        value = self._get(name, default)
        if not isinstance(value, bool):
            raise RequestError(f"{name} must be true or false, got {_describe(value)}")
        return value

    def choice(self, name: str, default: str, options: tuple[str, ...]) -> str:
        value = self._get(name, default)
        if not isinstance(value, str) or value not in options:
            raise RequestError(f"{name} must be one of {', '.join(options)}; got {_describe(value)}")
        return value

    # --- containers ----------------------------------------------------------------
    def vector(self, name: str, default: list, min_len: int, max_len: int, lo: float, hi: float) -> list[float]:
        value = self._get(name, default)
        return _check_vector(value, name, min_len, max_len, lo, hi)

    def matrix(
        self, name: str, default: list, rows: tuple[int, int], cols: tuple[int, int], lo: float, hi: float
    ) -> list[list[float]]:
        """A rectangular list of rows, rows[0] <= #rows <= rows[1], likewise columns."""
        value = self._get(name, default)
        if not isinstance(value, list):
            raise RequestError(f"{name} must be a list of rows, got {_describe(value)}")
        if not rows[0] <= len(value) <= rows[1]:
            raise RequestError(f"{name} must have {rows[0]} to {rows[1]} rows, got {len(value)}")
        checked = [_check_vector(row, f"{name}[{r}]", cols[0], cols[1], lo, hi) for r, row in enumerate(value)]
        widths = {len(row) for row in checked}
        if len(widths) > 1:
            raise RequestError(f"{name} rows must all have the same length, got lengths {sorted(widths)}")
        return checked

    def strings(self, name: str, default: list, min_len: int, max_len: int, max_chars: int) -> list[str]:
        value = self._get(name, default)
        if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
            raise RequestError(f"{name} must be a list of strings, got {_describe(value)}")
        if not min_len <= len(value) <= max_len:
            raise RequestError(f"{name} must have {min_len} to {max_len} entries, got {len(value)}")
        for item in value:
            if not 1 <= len(item) <= max_chars:
                raise RequestError(f"{name}: each entry must be 1 to {max_chars} characters, got {item[:40]!r}")
        return list(value)

    def word_counts(self, name: str, default: dict, max_words: int, max_len: int, max_count: int) -> dict[str, int]:
        value = self._get(name, default)
        if not isinstance(value, dict):
            raise RequestError(f"{name} must be an object mapping word -> count, got {_describe(value)}")
        if not 1 <= len(value) <= max_words:
            raise RequestError(f"{name} must hold 1 to {max_words} words, got {len(value)}")
        for word, count in value.items():
            if not word or len(word) > max_len or any(ch.isspace() for ch in word):
                raise RequestError(f"{name}: word {word!r} must be 1 to {max_len} characters without spaces")
            if not isinstance(count, int) or isinstance(count, bool) or not 1 <= count <= max_count:
                raise RequestError(f"{name}: count of {word!r} must be an integer from 1 to {max_count}")
        return dict(value)


def _check_number(value: Any, name: str, lo: float, hi: float) -> float:
    if not _is_number(value):
        raise RequestError(f"{name} must be a number, got {_describe(value)}")
    value = float(value)
    if not math.isfinite(value):
        raise RequestError(f"{name} must be finite")
    if not lo <= value <= hi:
        raise RequestError(f"{name} must be between {lo:g} and {hi:g}, got {value:g}")
    return value


def _check_vector(value: Any, name: str, min_len: int, max_len: int, lo: float, hi: float) -> list[float]:
    if not isinstance(value, list):
        raise RequestError(f"{name} must be a list of numbers, got {_describe(value)}")
    if not min_len <= len(value) <= max_len:
        raise RequestError(f"{name} must have {min_len} to {max_len} entries, got {len(value)}")
    return [_check_number(item, f"{name}[{k}]", lo, hi) for k, item in enumerate(value)]


def _describe(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, str):
        return f"the string {value[:40]!r}"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return f"{value!r}"[:40]
