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
import torch

from seqlab.tokenizer.token_array import load_tokens, save_tokens, token_dtype

DEFAULT_SPECIAL_TOKENS = ("<|endoftext|>",)

def read_meta(data_dir: str | Path) -> dict:
    path = Path(data_dir) / "meta.json"
    if not path.is_file():
        raise FileNotFoundError(f"{path} does not exist; create the data directory with `seqlab prepare`")
    from seqlab.jsonfile import read_json

    meta = read_json(path)
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

    def check_context_length(self, context_length: int) -> None:
        """Each split must hold at least one window of ``context_length`` + 1 tokens."""
        for split in ("train", "valid"):
            tokens = len(getattr(self, split))
            if tokens <= context_length:
                raise ValueError(f"{self.directory / (split + '.npy')} has {tokens} tokens; context_length "
                                 f"{context_length} needs at least {context_length + 1}")


PREPARED_FILES = ("tokenizer", "train.npy", "valid.npy", "meta.json")


def prepare(train_path: str | Path, valid_path: str | Path, vocab_size: int | None, out_dir: str | Path,
            special_tokens: tuple[str, ...] | list[str] = DEFAULT_SPECIAL_TOKENS, *,
            workers: int | None = None, progress: bool = True, tokenizer_dir: str | Path | None = None,
            overwrite: bool = False) -> dict:
    """Train BPE on the train text, encode both splits, write the data directory; returns meta.

    With ``tokenizer_dir`` (a tokenizer directory, or a run holding ``tokenizer/``) no BPE is
    trained: that tokenizer encodes both splits and is copied in, e.g. to fine-tune a run imported
    with ``seqlab import --from hf`` on data in its own ids (give ``vocab_size=None`` then; the
    special tokens are the tokenizer's). meta's ``vocab_size`` is then one past the largest id.

    Every input is checked first (both texts exist, are not empty and are UTF-8; the special
    tokens can be saved; ``out_dir`` is new, empty, an earlier prepared directory, or ``overwrite``). The new
    directory is built beside ``out_dir`` and swapped in whole, so a failure at any point leaves
    an existing ``out_dir`` exactly as it was: never one dataset's tokenizer beside another's ids.
    """
    from seqlab.atomic import atomic_write_text, remove_stale_temporaries
    from seqlab.outdir import check_out_folder, holds_only, output_folder
    from seqlab.tokenizer import Tokenizer, train_bpe
    from seqlab.tokenizer.corpus import check_text_file
    from seqlab.tokenizer.files import check_special_tokens, tokenizer_dir_of

    if (vocab_size is None) == (tokenizer_dir is None):
        raise ValueError("prepare: give either a vocab_size (to train BPE) or a tokenizer_dir (to reuse one)")
    out_dir = Path(out_dir)
    given = Tokenizer.load(tokenizer_dir_of(tokenizer_dir)) if tokenizer_dir is not None else None
    special_tokens = list(given.special_tokens) if given is not None else list(special_tokens)
    for name, path in (("train", train_path), ("valid", valid_path)):
        check_text_file(path, f"{name} text")
    check_special_tokens(special_tokens)
    # a prepared folder from before the marker is recognised by its files (meta.json among them)
    rule = dict(overwrite=overwrite, recognise=holds_only(PREPARED_FILES, ["meta.json"]), flag="--out")
    check_out_folder(out_dir, "seqlab prepare", **rule)
    remove_stale_temporaries(out_dir)
    with output_folder(out_dir, "seqlab prepare", **rule) as building:
        started = time.perf_counter()
        if given is None:
            vocab, merges = train_bpe(str(train_path), vocab_size, special_tokens, num_workers=workers,
                                      progress=progress)
            tokenizer = Tokenizer(vocab, merges, special_tokens)
        else:
            tokenizer = given
        tokenizer.save(building / "tokenizer")
        bpe_seconds = time.perf_counter() - started
        ids_limit = max(tokenizer.vocab) + 1
        meta: dict = {"vocab_size": ids_limit, "dtype": token_dtype(ids_limit).name,
                      "special_tokens": special_tokens, "bpe_seconds": round(bpe_seconds, 2), "splits": {}}
        if given is not None:
            meta["tokenizer"] = str(tokenizer_dir)
        for split, path in (("train", train_path), ("valid", valid_path)):
            started = time.perf_counter()
            ids = np.asarray(tokenizer.encode_file(str(path), workers=workers, progress=progress))
            save_tokens(ids, building / f"{split}.npy", ids_limit)
            num_bytes = Path(path).stat().st_size
            meta["splits"][split] = {
                "source": str(path), "tokens": int(ids.size), "bytes": num_bytes,
                "bytes_per_token": round(num_bytes / max(1, ids.size), 3),
                "encode_seconds": round(time.perf_counter() - started, 2),
            }
        atomic_write_text(building / "meta.json", json.dumps(meta, indent=2) + "\n")
    return meta




def get_batch(dataset, batch_size: int, context_length: int, device, *,
              generator: np.random.Generator | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Sample `batch_size` windows uniformly from a 1-D integer array.

    dataset: 1-D array of token ids (an np.memmap is read lazily: only the sampled windows are
    loaded). Returns (inputs, targets), both (batch_size, context_length) int64 on `device`, with
    targets[i, j] = dataset[start_i + j + 1] (the next token). generator: a NumPy Generator for
    reproducible draws; None uses NumPy's global random state (so np.random.seed applies).
    """
    device = torch.device(device)
    windows = sample_windows(dataset, batch_size, context_length, generator=generator,
                             pin_memory=device.type == "cuda")
    windows = windows.to(device, non_blocking=True)  # pinned for CUDA: the copy does not wait
    return windows[:, :-1].contiguous(), windows[:, 1:].contiguous()


def sample_windows(dataset, batch_size: int, context_length: int, *, generator: np.random.Generator | None = None,
                   pin_memory: bool = False) -> torch.Tensor:
    """`batch_size` windows of `context_length` + 1 consecutive tokens at uniform random starts:
    one (batch_size, context_length + 1) int64 CPU tensor, whose row i is inputs[i] followed by
    the last target (inputs = windows[:, :-1], targets = windows[:, 1:]). pin_memory: in
    page-locked memory, so one ``.to("cuda", non_blocking=True)`` moves the whole batch without
    making the host wait. Draws the same starts as :func:`get_batch` with the same generator.

    Example: dataset [10, 11, 12, 13, 14], context_length 2, a start drawn at 1 -> row [11, 12, 13].
    """
    if getattr(dataset, "ndim", 1) != 1:
        raise ValueError(f"dataset must be a 1-D array of token ids, got shape {np.shape(dataset)}")
    if batch_size <= 0 or context_length <= 0:
        raise ValueError(f"batch_size and context_length must be positive, got {batch_size}, {context_length}")
    num_tokens = len(dataset)
    num_starts = num_tokens - context_length  # a window needs context_length + 1 tokens
    if num_starts <= 0:
        raise ValueError(
            f"dataset has {num_tokens} tokens; a batch with context_length {context_length} needs at "
            f"least {context_length + 1}"
        )
    if generator is None:
        starts = np.random.randint(0, num_starts, size=batch_size)
    else:
        starts = generator.integers(0, num_starts, size=batch_size)
    offsets = starts[:, None] + np.arange(context_length + 1)[None, :]
    windows = torch.from_numpy(np.asarray(dataset[offsets]).astype(np.int64))
    return windows.pin_memory() if pin_memory else windows
