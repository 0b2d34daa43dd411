"""Token arrays on disk: the 1-D files of ids that ``seqlab prepare`` writes and training and
evaluation read, memory-mapped and checked against a vocabulary.

Worked example: a 300-token vocabulary fits uint16, so ``save_tokens([5, 299], "t.npy", 300)``
writes 4 bytes of ids; ``load_tokens("t.npy", 256)`` then fails with "t.npy: token id 299 at
position 1 is outside the vocabulary [0, 256)".
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from seqlab.atomic import atomic_path

NPY_MAGIC = b"\x93NUMPY"  # the first bytes of every .npy file
# Scan ids for validation in chunks so a multi-GB memmap is never loaded whole.
VALIDATION_CHUNK = 1 << 24


def token_dtype(vocab_size: int) -> np.dtype:
    """uint16 when every id fits (vocab_size <= 65536), else uint32."""
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


def check_token_array(tokens: np.ndarray, vocab_size: int, name: str) -> None:
    """Check a token array read from a file (``name``, e.g. its path): raise ValueError naming ``name``, the first position and the id of a token outside
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
    """:func:`open_tokens` then :func:`check_token_array`: a memory-mapped (num_tokens,) array whose
    every id is < vocab_size; errors name the file, the first offending position and the id."""
    tokens = open_tokens(path)
    check_token_array(tokens, vocab_size, str(path))
    return tokens
