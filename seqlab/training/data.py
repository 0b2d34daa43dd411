"""Data preparation (text -> BPE tokenizer + token files) and checked, memory-mapped loading.

A prepared data directory holds::

    DIR/tokenizer/      vocab.json, merges.txt, special_tokens.json (Tokenizer.load)
    DIR/train.npy       1-D token ids (uint16 when the vocabulary fits, else uint32)
    DIR/valid.npy
    DIR/meta.json       vocab size, dtype, token counts, bytes per token
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from seqlab.atomic import atomic_path

DEFAULT_SPECIAL_TOKENS = ("<|endoftext|>",)
NPY_MAGIC = b"\x93NUMPY"  # the first bytes of every .npy file
# Scan ids for validation in chunks so a multi-GB memmap is never loaded whole.
VALIDATION_CHUNK = 1 << 24


def token_dtype(vocab_size: int) -> np.dtype:
    return np.dtype(np.uint16) if vocab_size <= np.iinfo(np.uint16).max + 1 else np.dtype(np.uint32)


def save_tokens(ids: np.ndarray, path: str | Path, vocab_size: int) -> Path:
    """Write ``ids`` as a .npy file of the smallest fitting dtype, atomically."""
    path = Path(path)
    ids = np.asarray(ids)
    dtype = token_dtype(vocab_size)
    if ids.size and (int(ids.min()) < 0 or int(ids.max()) >= vocab_size):
        raise ValueError(f"{path}: token ids must lie in [0, {vocab_size}), got range "
                         f"[{int(ids.min())}, {int(ids.max())}]")
    with atomic_path(path) as tmp, tmp.open("wb") as fh:
        np.save(fh, ids.astype(dtype, copy=False))
    return path


def open_tokens(path: str | Path) -> np.ndarray:
    """Memory-map a 1-D token file (.npy, or raw .bin/.dat of uint16) -> (num_tokens,) integer array.

    Nothing is read into memory. Raises FileNotFoundError or ValueError naming the file.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"token file {path} does not exist")
    if path.suffix == ".npy":
        with path.open("rb") as handle:
            start = handle.read(len(NPY_MAGIC))
        if start != NPY_MAGIC:  # numpy would guess "pickled data" for any such file
            found = f"with {start!r}" if start else "is empty"
            raise ValueError(f"{path}: not a token file: a .npy file starts with {NPY_MAGIC!r}, this one {found}; "
                             f"write token files with `seqlab tokenize` or `seqlab prepare`")
        try:
            tokens = np.load(path, mmap_mode="r", allow_pickle=False)
        except (ValueError, EOFError, OSError) as exc:
            raise ValueError(f"{path}: not a .npy array of token ids (damaged, truncated or not ids: {exc}); "
                             f"write it again with `seqlab tokenize` or `seqlab prepare`") from None
    elif path.suffix in (".bin", ".dat"):
        tokens = np.memmap(path, dtype=np.uint16, mode="r")
    else:
        raise ValueError(f"{path}: expected token ids in a .npy file (or raw uint16 .bin/.dat), "
                         f"not a {path.suffix or 'suffix-less'} file")
    if tokens.ndim != 1:
        raise ValueError(f"{path}: token file must be 1-D, got shape {tokens.shape}")
    if not np.issubdtype(tokens.dtype, np.integer):
        raise ValueError(f"{path}: token ids must be integers, got dtype {tokens.dtype}")
    return tokens


def check_token_ids(tokens: np.ndarray, vocab_size: int, name: str) -> None:
    """Raise ValueError naming ``name``, the first position and the id of a token outside
    [0, vocab_size). tokens: (num_tokens,) integers, scanned in chunks (a memmap is never read whole)."""
    for start in range(0, len(tokens), VALIDATION_CHUNK):
        chunk = tokens[start:start + VALIDATION_CHUNK]
        bad = (chunk >= vocab_size) | (chunk < 0) if np.issubdtype(chunk.dtype, np.signedinteger) \
            else chunk >= vocab_size
        if bad.any():
            where = start + int(np.argmax(bad))
            raise ValueError(f"{name}: token id {int(tokens[where])} at position {where} is outside the "
                             f"vocabulary [0, {vocab_size}); was the file made with another tokenizer?")


def load_tokens(path: str | Path, vocab_size: int) -> np.ndarray:
    """:func:`open_tokens` then :func:`check_token_ids`: a memory-mapped (num_tokens,) array whose
    every id is < vocab_size; errors name the file, the first offending position and the id."""
    tokens = open_tokens(path)
    check_token_ids(tokens, vocab_size, str(path))
    return tokens


def read_meta(data_dir: str | Path) -> dict:
    path = Path(data_dir) / "meta.json"
    if not path.is_file():
        raise FileNotFoundError(f"{path} does not exist; create the data directory with `seqlab prepare`")
    try:
        meta = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}, line {exc.lineno}: invalid JSON ({exc.msg})") from None
    if not isinstance(meta, dict) or not isinstance(meta.get("vocab_size"), int):
        raise ValueError(f"{path}: expected a JSON object with an integer \"vocab_size\"")
    return meta


@dataclass
class PreparedData:
    """The splits of a prepared data directory, memory-mapped and validated."""

    directory: Path
    vocab_size: int
    train: np.ndarray
    valid: np.ndarray
    meta: dict

    @classmethod
    def open(cls, data_dir: str | Path, vocab_size: int | None = None) -> "PreparedData":
        directory = Path(data_dir)
        meta = read_meta(directory)
        vocab = int(meta["vocab_size"])
        if vocab_size is not None and vocab_size < vocab:
            raise ValueError(f"config vocab_size={vocab_size} is smaller than the data's vocabulary ({vocab}, "
                             f"{directory / 'meta.json'})")
        limit = vocab_size or vocab
        return cls(directory, limit, load_tokens(directory / "train.npy", limit),
                   load_tokens(directory / "valid.npy", limit), meta)


PREPARED_FILES = ("tokenizer", "train.npy", "valid.npy", "meta.json")


def prepare(train_path: str | Path, valid_path: str | Path, vocab_size: int, out_dir: str | Path,
            special_tokens: tuple[str, ...] | list[str] = DEFAULT_SPECIAL_TOKENS, *,
            workers: int | None = None, progress: bool = True) -> dict:
    """Train BPE on the train text, encode both splits, write the data directory; returns meta.

    Every input is checked first (both texts exist, are not empty and are UTF-8; the special
    tokens can be saved; ``out_dir`` holds nothing but an earlier prepared directory). The new
    directory is built beside ``out_dir`` and swapped in whole, so a failure at any point leaves
    an existing ``out_dir`` exactly as it was: never one dataset's tokenizer beside another's ids.
    """
    from seqlab.atomic import atomic_directory, atomic_write_text, check_replaceable, remove_stale_temporaries
    from seqlab.tokenizer import Tokenizer, train_bpe
    from seqlab.tokenizer.corpus import check_text_file
    from seqlab.tokenizer.files import check_special_tokens

    out_dir = Path(out_dir)
    special_tokens = list(special_tokens)
    for name, path in (("train", train_path), ("valid", valid_path)):
        check_text_file(path, f"{name} text")
    check_special_tokens(special_tokens)
    check_replaceable(out_dir, PREPARED_FILES)
    remove_stale_temporaries(out_dir.parent)
    remove_stale_temporaries(out_dir)
    with atomic_directory(out_dir, PREPARED_FILES) as building:
        started = time.perf_counter()
        vocab, merges = train_bpe(str(train_path), vocab_size, special_tokens, num_workers=workers,
                                  progress=progress)
        tokenizer = Tokenizer(vocab, merges, special_tokens)
        tokenizer.save(building / "tokenizer")
        bpe_seconds = time.perf_counter() - started
        meta: dict = {"vocab_size": len(vocab), "dtype": token_dtype(len(vocab)).name,
                      "special_tokens": special_tokens, "bpe_seconds": round(bpe_seconds, 2), "splits": {}}
        for split, path in (("train", train_path), ("valid", valid_path)):
            started = time.perf_counter()
            ids = np.asarray(tokenizer.encode_file(str(path), workers=workers, progress=progress))
            save_tokens(ids, building / f"{split}.npy", len(vocab))
            num_bytes = Path(path).stat().st_size
            meta["splits"][split] = {
                "source": str(path), "tokens": int(ids.size), "bytes": num_bytes,
                "bytes_per_token": round(num_bytes / max(1, ids.size), 3),
                "encode_seconds": round(time.perf_counter() - started, 2),
            }
        atomic_write_text(building / "meta.json", json.dumps(meta, indent=2) + "\n")
    return meta
