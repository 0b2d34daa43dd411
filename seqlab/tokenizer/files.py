"""GPT-2 tokenizer files: ``vocab.json`` (token text -> id) and ``merges.txt`` (one ``left right`` a line).

Tokens are written with GPT-2's byte-to-unicode map (a space byte is ``Ġ``). Special tokens may
appear verbatim (Hugging Face style) when they contain characters outside that map. Writes go
through :func:`seqlab.atomic.atomic_write_text` (a temporary file renamed into place).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path

from seqlab.atomic import atomic_write_text
from seqlab.tokenizer.bytes_unicode import text_to_token, token_to_text

MERGES_HEADER = "#version: 0.2"


class TokenizerFileError(ValueError):
    """A malformed vocab.json / merges.txt; the message names the file and line."""


def _read_text(path: Path, what: str) -> str:
    """The UTF-8 text of ``path`` with universal newlines; a missing file or bytes that are not
    UTF-8 give an error naming the file (and line)."""
    if not path.is_file():
        raise FileNotFoundError(f"{what} file {str(path)!r} does not exist")
    data = path.read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        raise TokenizerFileError(f"{path}, line {line}: not UTF-8 text ({error.reason})") from None
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _parse_json(path: Path, raw: str):
    try:
        return json.loads(raw)
    except json.JSONDecodeError as error:
        raise TokenizerFileError(f"{path}, line {error.lineno}: invalid JSON ({error.msg})") from None


def _entry_line(path: Path, raw: str, text: str) -> str:
    """``"FILE, line N"`` of the vocab.json entry for token ``text`` (for error messages only)."""
    key = json.dumps(text, ensure_ascii=False)[:-1]  # the opening quote and text, as written
    position = raw.find(key)
    line = raw.count("\n", 0, position) + 1 if position >= 0 else 1
    return f"{path}, line {line}"


def read_vocab_json(path: str | os.PathLike, special_tokens: Iterable[str] = ()) -> dict[int, bytes]:
    """``vocab.json`` -> ``{id: token bytes}``; malformed content raises :class:`TokenizerFileError`."""
    path = Path(path)
    raw = _read_text(path, "vocabulary")
    table = _parse_json(path, raw)
    if not isinstance(table, dict):
        raise TokenizerFileError(f"{path}, line 1: expected a JSON object mapping token -> id")
    specials = set(special_tokens)
    vocab: dict[int, bytes] = {}
    for text, index in table.items():
        if not isinstance(index, int) or isinstance(index, bool) or index < 0:
            raise TokenizerFileError(f"{_entry_line(path, raw, text)}: id of token {text!r} must be a non-negative integer, got {index!r}")
        if index in vocab:
            raise TokenizerFileError(f"{_entry_line(path, raw, text)}: id {index} is used twice (token {text!r})")
        try:
            vocab[index] = text_to_token(text)
        except KeyError as error:
            if text not in specials:
                raise TokenizerFileError(f"{_entry_line(path, raw, text)}: token {text!r}: {error.args[0]}") from None
            vocab[index] = text.encode("utf-8")  # a special token written verbatim
    return vocab


def read_merges_txt(path: str | os.PathLike) -> list[tuple[bytes, bytes]]:
    """``merges.txt`` -> ``[(left bytes, right bytes), ...]`` in rank order."""
    path = Path(path)
    merges: list[tuple[bytes, bytes]] = []
    for number, line in enumerate(_read_text(path, "merges").split("\n"), start=1):
        if not line or (number == 1 and line.startswith("#version")):
            continue
        parts = line.split(" ")
        if len(parts) != 2 or not parts[0] or not parts[1]:
            raise TokenizerFileError(f"{path}, line {number}: expected 'left right', got {line!r}")
        try:
            merges.append((text_to_token(parts[0]), text_to_token(parts[1])))
        except KeyError as error:
            raise TokenizerFileError(f"{path}, line {number}: {error.args[0]}") from None
    return merges


def write_vocab_json(path: str | os.PathLike, vocab: dict[int, bytes]) -> None:
    table = {token_to_text(vocab[index]): index for index in sorted(vocab)}
    atomic_write_text(path, json.dumps(table, ensure_ascii=False, indent=2) + "\n")


def write_merges_txt(path: str | os.PathLike, merges: Iterable[tuple[bytes, bytes]]) -> None:
    lines = [MERGES_HEADER] + [f"{token_to_text(left)} {token_to_text(right)}" for left, right in merges]
    atomic_write_text(path, "\n".join(lines) + "\n")


def read_special_tokens_json(path: str | os.PathLike) -> list[str]:
    path = Path(path)
    tokens = _parse_json(path, _read_text(path, "special tokens"))
    if not isinstance(tokens, list) or not all(isinstance(token, str) for token in tokens):
        raise TokenizerFileError(f"{path}, line 1: expected a JSON list of strings")
    return tokens


def write_special_tokens_json(path: str | os.PathLike, special_tokens: Iterable[str]) -> None:
    atomic_write_text(path, json.dumps(list(special_tokens), ensure_ascii=False) + "\n")
