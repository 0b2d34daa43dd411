"""GPT-2 tokenizer files: ``vocab.json`` (token text -> id) and ``merges.txt`` (one ``left right`` a line).

Beside them, ``special_tokens.json`` lists the special tokens, and ``pre_tokenizer.json``
(``{"pattern": "..."}``) holds the pre-tokenizer's regex when it is not GPT-2's (a Llama 3
tokenizer brought in with ``seqlab import``); without that file the pattern is GPT-2's.

Tokens are written with GPT-2's byte-to-unicode map (a space byte is ``Ġ``). Special tokens may
appear verbatim (Hugging Face style) when they contain characters outside that map. A tokenizer
directory is written as a unit (:func:`write_tokenizer_dir`: built beside the target, swapped in
whole), so a failure never leaves a new ``vocab.json`` beside an old ``merges.txt``.

The files must agree (:func:`check_files_agree`): every token that is not a single byte or a
special token is the result of a merge; a ``vocab.json`` with an empty or foreign ``merges.txt``
would otherwise load and silently give other ids.
"""

from __future__ import annotations

import json
import os
import re
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import regex

from seqlab.atomic import atomic_directory, atomic_write_text
from seqlab.jsonfile import parse_json
from seqlab.tokenizer.bytes_unicode import text_to_token, token_to_text

MERGES_HEADER = "#version: 0.2"
PRE_TOKENIZER_FILE = "pre_tokenizer.json"
TOKENIZER_FILES = ("vocab.json", "merges.txt", "special_tokens.json", PRE_TOKENIZER_FILE)
# "<|endoftext|>", "<pad>", "</s>", "[CLS]": names that tokenizers use for special tokens
_SPECIAL_LOOKING = re.compile(r"<\|?[^\s<>]+\|?>|\[[A-Z][A-Z_]*\]")


class TokenizerFileError(ValueError):
    """A malformed vocab.json / merges.txt; the message names the file and line."""


class UndeclaredSpecialTokenWarning(UserWarning):
    """vocab.json holds a token that looks special but is not declared special (it would be split)."""


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
        return parse_json(raw, path)
    except ValueError as error:
        raise TokenizerFileError(str(error)) from None


def _entry_line(path: Path, raw: str, text: str) -> str:
    """``"FILE, line N"`` of the vocab.json entry for token ``text`` (for error messages only)."""
    key = json.dumps(text, ensure_ascii=False)[:-1]  # the opening quote and text, as written
    position = raw.find(key)
    line = raw.count("\n", 0, position) + 1 if position >= 0 else 1
    return f"{path}, line {line}"


def tokenizer_dir_of(path: str | os.PathLike) -> str:
    """``path`` itself when it is a tokenizer directory, ``path/tokenizer`` when it is a run (or a
    prepared data directory) holding one::

        runs/ts/tokenizer -> runs/ts/tokenizer;   runs/ts -> runs/ts/tokenizer
    """
    path = os.fspath(path)
    if not os.path.isfile(os.path.join(path, "vocab.json")) and os.path.isdir(os.path.join(path, "tokenizer")):
        return os.path.join(path, "tokenizer")
    return path


def read_vocab_json(path: str | os.PathLike, special_tokens: Iterable[str] = ()) -> dict[int, bytes]:
    """``vocab.json`` -> ``{id: token bytes}``; malformed content raises :class:`TokenizerFileError`."""
    path = Path(path)
    raw = _read_text(path, "vocabulary")
    table = _parse_json(path, raw)
    if not isinstance(table, dict):
        raise TokenizerFileError(f"{path}, line 1: expected a JSON object mapping token -> id")
    return parse_vocab(table, special_tokens, lambda text: _entry_line(path, raw, text))


def parse_vocab(table: Mapping[str, Any], special_tokens: Iterable[str],
                where: Callable[[str], str]) -> dict[int, bytes]:
    """``{token text: id}`` (GPT-2's byte-to-unicode text; special tokens may be written verbatim)
    -> ``{id: token bytes}``. A bad entry raises :class:`TokenizerFileError` starting with
    ``where(text)`` (the file and line, or the field, of the entry)."""
    specials = set(special_tokens)
    vocab: dict[int, bytes] = {}
    for text, index in table.items():
        if not isinstance(index, int) or isinstance(index, bool) or index < 0:
            raise TokenizerFileError(f"{where(text)}: id of token {text!r} must be a non-negative integer, got {index!r}")
        if index in vocab:
            raise TokenizerFileError(f"{where(text)}: id {index} is used twice (token {text!r})")
        try:
            vocab[index] = text_to_token(text)
        except KeyError as error:
            if text not in specials:
                raise TokenizerFileError(f"{where(text)}: token {text!r}: {error.args[0]}") from None
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
    """Write ``{token text: id}``; two ids with the same bytes (one key) raise :class:`TokenizerFileError`."""
    table: dict[str, int] = {}
    for index in sorted(vocab):
        text = token_to_text(vocab[index])
        if text in table:
            raise TokenizerFileError(
                f"{path}: ids {table[text]} and {index} are both the token {text!r}; vocab.json can hold it "
                f"once (is a special token equal to an ordinary token? see check_special_tokens)")
        table[text] = index
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


def read_pre_tokenizer_json(path: str | os.PathLike) -> str:
    """The pattern of a ``pre_tokenizer.json`` (``{"pattern": "..."}``)."""
    path = Path(path)
    table = _parse_json(path, _read_text(path, "pre-tokenizer"))
    if not isinstance(table, dict) or not isinstance(table.get("pattern"), str) or not table["pattern"]:
        raise TokenizerFileError(f"{path}, line 1: expected a JSON object with a non-empty string \"pattern\"")
    try:
        regex.compile(table["pattern"])
    except regex.error as error:
        raise TokenizerFileError(f"{path}: pattern {table['pattern']!r} is not a valid regular expression: "
                                 f"{error}") from None
    return table["pattern"]


def write_tokenizer_dir(directory: str | os.PathLike, vocab: Mapping[int, bytes],
                        merges: Iterable[tuple[bytes, bytes]], special_tokens: Iterable[str], *,
                        pattern: str | None = None) -> None:
    """Write ``vocab.json``, ``merges.txt`` and ``special_tokens.json`` (and ``pre_tokenizer.json``
    when ``pattern``, the pre-tokenizer's regex, is given: None means GPT-2's) to ``directory`` as a unit.

    The files are written to a new folder beside ``directory`` that then replaces it whole; on any
    error (a full disk names the file) the old directory is left exactly as it was. An existing
    ``directory`` may hold only :data:`TOKENIZER_FILES` (else ``FileExistsError``, before writing).
    """
    with atomic_directory(directory, TOKENIZER_FILES) as tmp:
        write_vocab_json(tmp / "vocab.json", dict(vocab))
        write_merges_txt(tmp / "merges.txt", merges)
        write_special_tokens_json(tmp / "special_tokens.json", special_tokens)
        if pattern is not None:
            atomic_write_text(tmp / PRE_TOKENIZER_FILE, json.dumps({"pattern": pattern}, ensure_ascii=False) + "\n")


def check_special_tokens(special_tokens: Sequence[str]) -> None:
    """Refuse special tokens that would share a vocab.json key with a byte token, before training.

    A one-byte special token such as ``"("`` is written as the key ``"("``, which is also the key
    of the byte ``(``: the saved directory would lose one of them and no longer load.
    """
    for token in special_tokens:
        encoded = token.encode("utf-8") if isinstance(token, str) else b""
        if len(encoded) == 1:
            raise ValueError(
                f"special token {token!r} is the single byte {encoded!r}, which is already the byte token "
                f"{token_to_text(encoded)!r} in vocab.json; use a longer special token such as '<|{token}|>'")


def check_files_agree(vocab: Mapping[int, bytes], merges: Sequence[tuple[bytes, bytes]],
                      special_tokens: Sequence[str], vocab_path: str | os.PathLike,
                      merges_path: str | os.PathLike) -> None:
    """Raise :class:`TokenizerFileError` unless every vocabulary token is a single byte, a declared
    special token or the result of a merge; warn about special-looking tokens not declared special.

    Example: a full ``vocab.json`` beside an empty ``merges.txt`` would encode "the" as three byte
    ids instead of one; ``<|endoftext|>`` without ``special_tokens.json`` would become 13 byte ids.
    """
    specials = {token.encode("utf-8") for token in special_tokens}
    merged = {left + right for left, right in merges}
    unexplained = [(index, token) for index, token in sorted(vocab.items())
                   if len(token) > 1 and token not in specials and token not in merged]
    undeclared = [(index, token) for index, token in unexplained
                  if _SPECIAL_LOOKING.fullmatch(token.decode("utf-8", errors="replace"))]
    for index, token in undeclared:
        text = token.decode("utf-8")
        warnings.warn(
            f"{vocab_path}: token {text!r} (id {index}) looks like a special token but is not declared "
            f"special, so it is encoded as {len(token)} byte-level ids; declare it (special_tokens.json "
            f"beside vocab.json, or special_tokens=[{text!r}])", UndeclaredSpecialTokenWarning, stacklevel=3)
    undeclared_ids = {index for index, _ in undeclared}
    unexplained = [(index, token) for index, token in unexplained if index not in undeclared_ids]
    if unexplained:
        index, token = unexplained[0]
        raise TokenizerFileError(
            f"{vocab_path} and {merges_path} do not belong together: {len(unexplained)} of {len(vocab)} tokens "
            f"are neither single bytes, special tokens nor made by any of the {len(merges)} merges "
            f"(first: {token_to_text(token)!r}, id {index}); write both files with the same tokenizer "
            f"(is merges.txt empty or truncated?)")
