"""Hugging Face ``tokenizer.json``: reading a byte-level BPE into a :class:`Tokenizer`, and writing one.

Read: a BPE model (no dropout, subword affixes or byte fallback), no normalizer, a ByteLevel
pre-tokenizer with GPT-2's regex or Split(Regex, "Isolated") + ByteLevel (Llama 3 style: the regex
becomes ``pattern``), a ByteLevel decoder, added tokens as special tokens; anything else is
refused by name. The post-processor is ignored (``encode`` adds no BOS/EOS). A written file sets
``ignore_merges: true`` (a pre-token that is a whole token is that token, as in seqlab), so
Hugging Face gives the same ids and ``AutoTokenizer.from_pretrained(out)`` loads it::

    tok = read_tokenizer_json("gpt2/tokenizer.json")
    tok.encode("Hello world")           # [15496, 995], as tokenizers.Tokenizer.encode(...).ids
    write_hf_tokenizer(tok, "out/")     # out/tokenizer.json, tokenizer_config.json, special_tokens_map.json
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from seqlab.atomic import atomic_write_text
from seqlab.tokenizer.bytes_unicode import text_to_token, token_to_text
from seqlab.tokenizer.files import (
    TokenizerFileError,
    _parse_json,
    _read_text,
    parse_vocab,
)
from seqlab.tokenizer.pretokenize import GPT2_PATTERN
from seqlab.tokenizer.tokenizer import EOT, Tokenizer

HF_TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json")
_BYTE_LEVEL = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}


def _refuse(path: Path, field: str, value: Any, fix: str) -> TokenizerFileError:
    return TokenizerFileError(f"{path}: {field} {value!r} is not supported; {fix}")


def _tokenizer_json_path(path: str | os.PathLike) -> Path:
    path = Path(path)
    if path.is_dir():
        path = path / "tokenizer.json"
    if not path.is_file():
        raise FileNotFoundError(f"tokenizer file {str(path)!r} does not exist (a Hugging Face tokenizer.json, "
                                f"or the folder holding it)")
    return path


def _pre_tokenizer_pattern(path: Path, spec: Any) -> str:
    """The regex a byte-level ``pre_tokenizer`` entry splits with; refuses every other kind by name."""
    fix = ("seqlab reads byte-level BPE: a ByteLevel pre-tokenizer, or a regex Split (behavior 'Isolated') "
           "followed by ByteLevel with use_regex false")
    if spec is None:
        raise TokenizerFileError(f"{path}: pre_tokenizer is null; {fix}")
    if not isinstance(spec, dict):
        raise TokenizerFileError(f"{path}: pre_tokenizer must be a JSON object, got {spec!r}")
    steps = spec.get("pretokenizers") if spec.get("type") == "Sequence" else [spec]
    if not isinstance(steps, list) or not all(isinstance(step, dict) for step in steps):
        raise TokenizerFileError(f"{path}: pre_tokenizer.pretokenizers must be a list of objects")
    for index, step in enumerate(steps):
        where = f"pre_tokenizer{f'.pretokenizers[{index}]' if spec.get('type') == 'Sequence' else ''}"
        kind = step.get("type")
        if kind not in ("ByteLevel", "Split"):
            raise _refuse(path, f"{where}.type", kind, fix)
        if kind == "ByteLevel" and step.get("add_prefix_space"):
            raise _refuse(path, f"{where}.add_prefix_space", True, "seqlab never adds a space before the text")
        if kind == "Split":
            if step.get("behavior") != "Isolated":
                raise _refuse(path, f"{where}.behavior", step.get("behavior"), "only 'Isolated' splits are read")
            if step.get("invert"):
                raise _refuse(path, f"{where}.invert", True, "only splits on the pattern's matches are read")
            pattern = step.get("pattern")
            if not isinstance(pattern, dict) or not isinstance(pattern.get("Regex"), str):
                raise _refuse(path, f"{where}.pattern", pattern, "only {'Regex': ...} patterns are read")
    kinds = [step["type"] for step in steps]
    if kinds == ["ByteLevel"] and steps[0].get("use_regex", True):
        return GPT2_PATTERN
    if kinds == ["Split", "ByteLevel"] and not steps[1].get("use_regex", True):
        return steps[0]["pattern"]["Regex"]
    raise _refuse(path, "pre_tokenizer", " -> ".join(
        f"{kind}{'(use_regex)' if kind == 'ByteLevel' and step.get('use_regex', True) else ''}"
        for kind, step in zip(kinds, steps)), fix)


def _check_model(path: Path, model: Any) -> None:
    if not isinstance(model, dict):
        raise TokenizerFileError(f"{path}: model must be a JSON object")
    if model.get("type", "BPE") != "BPE":
        raise _refuse(path, "model.type", model.get("type"), "seqlab reads byte-level BPE tokenizers (model.type 'BPE')")
    for field, harmless in (("dropout", (None, 0, 0.0)), ("continuing_subword_prefix", (None, "")),
                            ("end_of_word_suffix", (None, "")), ("byte_fallback", (None, False))):
        if model.get(field) not in harmless:
            raise _refuse(path, f"model.{field}", model.get(field), "seqlab reads plain byte-level BPE")
    if not isinstance(model.get("vocab"), dict):
        raise TokenizerFileError(f"{path}: model.vocab must be a JSON object mapping token -> id")
    if not isinstance(model.get("merges"), list):
        raise TokenizerFileError(f"{path}: model.merges must be a JSON list")


def _merge_pair(path: Path, index: int, entry: Any) -> tuple[bytes, bytes]:
    """``"left right"`` (older files) or ``["left", "right"]`` -> the two tokens' bytes."""
    parts = entry.split(" ") if isinstance(entry, str) else entry
    if not isinstance(parts, list) or len(parts) != 2 or not all(isinstance(p, str) and p for p in parts):
        raise TokenizerFileError(f"{path}: model.merges[{index}] must be 'left right' or [left, right], got {entry!r}")
    try:
        return text_to_token(parts[0]), text_to_token(parts[1])
    except KeyError as error:
        raise TokenizerFileError(f"{path}: model.merges[{index}]: {error.args[0]}") from None


def _special_tokens(path: Path, added: Any) -> dict[int, str]:
    """``added_tokens`` -> {id: content}, refusing options seqlab does not apply."""
    if added is None:
        return {}
    if not isinstance(added, list):
        raise TokenizerFileError(f"{path}: added_tokens must be a JSON list")
    specials: dict[int, str] = {}
    for index, entry in enumerate(added):
        if not isinstance(entry, dict) or not isinstance(entry.get("id"), int) or \
                not isinstance(entry.get("content"), str) or not entry["content"]:
            raise TokenizerFileError(f"{path}: added_tokens[{index}] needs an integer 'id' and a non-empty 'content'")
        for option in ("lstrip", "rstrip", "single_word"):
            if entry.get(option):
                raise _refuse(path, f"added_tokens[{index}].{option} ({entry['content']!r})", True,
                              "seqlab matches added tokens exactly where they occur")
        if entry["id"] in specials:
            raise TokenizerFileError(f"{path}: added_tokens[{index}]: id {entry['id']} is used twice")
        specials[entry["id"]] = entry["content"]
    return specials


def read_tokenizer_json(path: str | os.PathLike) -> Tokenizer:
    """A Hugging Face byte-level BPE ``tokenizer.json`` (or a folder holding one) as a :class:`Tokenizer`.

    Ids are the file's ids; the pre-tokenizer's regex becomes ``Tokenizer.pattern``. Anything the
    module docstring does not list is refused with a :class:`TokenizerFileError` naming the file
    and the field (``normalizer.type 'NFC' is not supported ...``).
    """
    path = _tokenizer_json_path(path)
    raw = _read_text(path, "tokenizer")
    table = _parse_json(path, raw)
    if not isinstance(table, dict) or "model" not in table:
        raise TokenizerFileError(f"{path}, line 1: expected a Hugging Face tokenizer.json (an object with 'model')")
    model = table["model"]
    _check_model(path, model)
    normalizer = table.get("normalizer")
    if normalizer is not None and not (isinstance(normalizer, dict) and normalizer.get("type") == "Sequence"
                                       and not normalizer.get("normalizers")):
        kind = normalizer.get("type") if isinstance(normalizer, dict) else normalizer
        raise _refuse(path, "normalizer.type", kind, "seqlab reads tokenizers without a normalizer")
    pattern = _pre_tokenizer_pattern(path, table.get("pre_tokenizer"))
    decoder = table.get("decoder")
    if decoder is not None and (not isinstance(decoder, dict) or decoder.get("type") != "ByteLevel"):
        kind = decoder.get("type") if isinstance(decoder, dict) else decoder
        raise _refuse(path, "decoder.type", kind, "seqlab decodes byte-level tokens (decoder 'ByteLevel')")
    specials = _special_tokens(path, table.get("added_tokens"))

    vocab = parse_vocab(model["vocab"], specials.values(), lambda text: f"{path}: model.vocab")
    for index, content in specials.items():
        if index in vocab and vocab[index] != content.encode("utf-8"):
            raise TokenizerFileError(f"{path}: added token {content!r} has id {index}, which model.vocab gives to "
                                     f"{token_to_text(vocab[index])!r}")
        vocab[index] = content.encode("utf-8")
    merges = [_merge_pair(path, index, entry) for index, entry in enumerate(model["merges"])]
    ordered = [specials[index] for index in sorted(specials)]
    try:
        return Tokenizer(vocab, merges, ordered, pattern=pattern)
    except ValueError as error:
        raise TokenizerFileError(f"{path}: {error}") from None


def tokenizer_json(tokenizer: Tokenizer) -> dict[str, Any]:
    """The ``tokenizer.json`` content of ``tokenizer`` (a plain dict; see :func:`write_hf_tokenizer`)."""
    special_ids = set(tokenizer.special_token_ids.values())
    added = [{"id": index, "content": token, "single_word": False, "lstrip": False, "rstrip": False,
              "normalized": False, "special": True}
             for token, index in sorted(tokenizer.special_token_ids.items(), key=lambda item: item[1])]
    vocab = {token_to_text(tokenizer.vocab[index]): index for index in sorted(tokenizer.vocab)
             if index not in special_ids}
    # Special tokens are in model.vocab too, under their own text (as in GPT-2's file): Hugging Face
    # gives an added token that is not in model.vocab the next free id, whatever its "id" says.
    for token, index in tokenizer.special_token_ids.items():
        if vocab.setdefault(token, index) != index:
            raise ValueError(f"special token {token!r} (id {index}) has the text of the ordinary token id "
                             f"{vocab[token]}; tokenizer.json cannot hold both under one key")
    if tokenizer.pattern == GPT2_PATTERN:
        pre_tokenizer: dict[str, Any] = dict(_BYTE_LEVEL)
    else:
        pre_tokenizer = {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": tokenizer.pattern}, "behavior": "Isolated", "invert": False},
            {**_BYTE_LEVEL, "use_regex": False}]}
    return {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": added,
        "normalizer": None, "pre_tokenizer": pre_tokenizer, "post_processor": None,
        "decoder": {**_BYTE_LEVEL, "add_prefix_space": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False, "ignore_merges": True,
                  "vocab": vocab,
                  # "left right": a byte-level token never holds a space (it is written "Ġ")
                  "merges": [f"{token_to_text(left)} {token_to_text(right)}" for left, right in tokenizer.merges]},
    }


def write_hf_tokenizer(tokenizer: Tokenizer, directory: str | os.PathLike, *,
                       model_max_length: int | None = None) -> None:
    """Write ``tokenizer.json``, ``tokenizer_config.json`` and ``special_tokens_map.json`` into the
    existing folder ``directory`` (each file atomically; build the folder with
    :func:`seqlab.atomic.atomic_directory` to swap all three in at once).

    ``<|endoftext|>``, when it is a special token, is the BOS, EOS and padding token (as in GPT-2);
    ``model_max_length`` is the model's context length, when known.
    """
    directory = Path(directory)
    specials = list(tokenizer.special_token_ids)
    roles = {name: EOT for name in ("bos_token", "eos_token", "pad_token")} if EOT in specials else {}
    others = [token for token in specials if token != EOT]
    special_map: dict[str, Any] = dict(roles)
    if others:
        special_map["additional_special_tokens"] = others
    config: dict[str, Any] = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "model_max_length": model_max_length if model_max_length is not None else int(1e30),
        "clean_up_tokenization_spaces": False,
        "add_prefix_space": False,
        **special_map,
        "added_tokens_decoder": {
            str(index): {"content": token, "lstrip": False, "normalized": False, "rstrip": False,
                         "single_word": False, "special": True}
            for token, index in sorted(tokenizer.special_token_ids.items(), key=lambda item: item[1])},
    }
    atomic_write_text(directory / "tokenizer.json", json.dumps(tokenizer_json(tokenizer), ensure_ascii=False) + "\n")
    atomic_write_text(directory / "tokenizer_config.json", json.dumps(config, indent=2, ensure_ascii=False) + "\n")
    atomic_write_text(directory / "special_tokens_map.json", json.dumps(special_map, indent=2, ensure_ascii=False) + "\n")
