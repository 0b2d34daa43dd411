"""Work on a file in chunks, in worker processes when it is large: the one pool helper behind BPE
training (counting pre-tokens) and :func:`encode_file` (encoding text to ids).

A file is cut into chunks on safe boundaries (:mod:`seqlab.tokenizer.chunking`); each chunk is one
task; results come back in file order. Worked example: a 6 MB file on 2 cores with ``workers=None``
is at least :data:`PARALLEL_MIN_BYTES`, so 2 forked workers each take chunks of it; a 1 MB file is
done in this process, since starting workers would cost more than it saves.
"""

from __future__ import annotations

import gc
import multiprocessing
import os
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Protocol, TypeVar

import numpy as np
from seqlab.progressbar import progress_bar as tqdm

from seqlab.tokenizer.chunking import find_chunk_boundaries, read_chunk



class Tokenizer(Protocol):
    """What the workers need of a tokenizer (:class:`seqlab.tokenizer.Tokenizer` is one)."""

    def encode(self, text: str) -> list[int]: ...

    def id_dtype(self) -> np.dtype: ...

# ``workers=None`` uses all cores from this file size on, one process below it. Measured by
# benchmarks/bpe_encode.py (2 idle cores, GPT-2 vocabulary): encoding 2 MB took 0.20-0.22 s with one or two processes, 4 MB
# 0.37 s with one and 0.24-0.25 s with two; for BPE training pool start-up and result transfer
# cost ~0.03 s while pre-tokenizing runs at ~0.05 s/MB, so below 4 MB a pool gains little either way.
PARALLEL_MIN_BYTES = 1 << 22
FILE_CHUNK_BYTES = 1 << 20  # encode_file's chunk (512 KB tied on Brown; 2 MB was slower)

State = TypeVar("State")
Task = TypeVar("Task")
Result = TypeVar("Result")


def resolve_workers(size: int, workers: int | None, name: str = "workers") -> int:
    """Processes for a file of ``size`` bytes: ``workers`` as given (>= 1; ``name`` is the argument
    an error names), or for None all cores when size >= PARALLEL_MIN_BYTES, else 1."""
    if workers is None:
        return (os.cpu_count() or 1) if size >= PARALLEL_MIN_BYTES else 1
    if workers < 1:
        raise ValueError(f"{name} must be >= 1, got {workers}")
    return workers


_WORKER_FUNCTION: Callable[[Any, Any], Any] | None = None
_WORKER_STATE: Any = None


def _set_worker(function: Callable[[Any, Any], Any], state: Any) -> None:
    global _WORKER_FUNCTION, _WORKER_STATE
    _WORKER_FUNCTION, _WORKER_STATE = function, state


def _run_in_worker(task: Any) -> Any:
    return _WORKER_FUNCTION(_WORKER_STATE, task)


def map_in_workers(function: Callable[[State, Task], Result], state: State, tasks: Sequence[Task],
                   workers: int) -> Iterator[Result]:
    """Yield ``function(state, task)`` for each task in order: in this process when workers == 1 or
    there is one task, else in a pool of min(workers, len(tasks)) processes.

    ``function`` must be a module-level function. Workers are forked where the platform allows, so
    ``state`` (a tokenizer, a pre-tokenizer) reaches them without pickling; ``gc.freeze`` keeps the
    collector from touching, and so copying, the parent's pages in the workers.
    """
    if workers == 1 or len(tasks) <= 1:
        yield from (function(state, task) for task in tasks)
        return
    context = multiprocessing.get_context("fork" if "fork" in multiprocessing.get_all_start_methods() else None)
    gc.freeze()
    try:
        with context.Pool(min(workers, len(tasks)), initializer=_set_worker, initargs=(function, state)) as pool:
            yield from pool.imap(_run_in_worker, tasks)
    finally:
        gc.unfreeze()


def _encode_chunk(tokenizer: Tokenizer, task: tuple[str, int, int]) -> np.ndarray:
    path, start, end = task
    return np.array(tokenizer.encode(read_chunk(path, start, end)), dtype=tokenizer.id_dtype())


def iter_encode_file(tokenizer: Tokenizer, path: str | os.PathLike, workers: int | None = None, *,
                     progress: bool = False, chunk_bytes: int = FILE_CHUNK_BYTES) -> Iterator[np.ndarray]:
    """Yield the ids of ``path`` as numpy arrays, chunk by chunk in file order (bounded memory)."""
    if not os.path.isfile(path):
        raise FileNotFoundError(f"input file {os.fspath(path)!r} does not exist or is not a file")
    size = os.path.getsize(path)
    workers = resolve_workers(size, workers)
    boundaries = find_chunk_boundaries(path, chunk_bytes, tokenizer.special_tokens, pattern=tokenizer.pattern)
    tasks = [(os.fspath(path), a, b) for a, b in zip(boundaries, boundaries[1:])]
    # Workers start at once. Encoding the first chunk here first, so that forked workers inherit its
    # pre-tokens' BPE results, was measured slower on 2 idle cores (4-25 MB of Brown): one core idles
    # meanwhile, and each worker still meets most new words itself.
    with tqdm(total=size, unit="B", unit_scale=True, desc="tokenizing", disable=not progress) as bar:
        for task, ids in zip(tasks, map_in_workers(_encode_chunk, tokenizer, tasks, workers)):
            yield ids
            bar.update(task[2] - task[1])


def encode_file(tokenizer: Tokenizer, path: str | os.PathLike, workers: int | None = None, *,
                progress: bool = False) -> np.ndarray:
    """Encode a UTF-8 file in parallel chunks; same ids as ``tokenizer.encode(text)``.

    ``workers=None``: all cores for files of PARALLEL_MIN_BYTES (4 MB) and more, else one process.
    Returns a 1-D numpy array: ``uint16`` when every id fits, else ``uint32``.
    """
    arrays = list(iter_encode_file(tokenizer, path, workers, progress=progress))
    return np.concatenate(arrays) if arrays else np.zeros(0, dtype=tokenizer.id_dtype())
