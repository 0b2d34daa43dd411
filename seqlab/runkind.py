"""The command that fits each kind of run, for messages: a run of the wrong kind names the command
for it, a missing run says how to make one. The kind itself is the run format's
(:func:`seqlab.runs.directory.run_kind`).

No torch (the ``cli.py`` modules call it before importing torch). Two kinds::

    "lm"       seqlab train / seqlab demo   config.json with a "model" table, tokenizer/
    "seq2seq"  seqlab seq2seq train         config.json with "train" and "model_config", vocab.json

``config.json`` decides when it is readable (it is rewritten by every run, so it names the newest
kind even in a directory that still holds files of another); otherwise ``tokenizer/`` means a
language model and ``vocab.json`` a seq2seq model. Worked example::

    >>> import json, tempfile, pathlib
    >>> run = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (run / "config.json").write_text(json.dumps({"train": {}, "model_config": {}}))
    >>> run_kind(run), run_kind(run / "config.json"), run_kind(run / "checkpoints" / "latest.pt")
    ('seq2seq', 'seq2seq', 'seq2seq')
    >>> check_run_kind(run, "lm", "seqlab generate")
    Traceback (most recent call last):
    ...
    ValueError: ... is a seq2seq run (written by `seqlab seq2seq train`), not a language model: `seqlab generate` needs a run of `seqlab train` or `seqlab demo`; for this run use `seqlab seq2seq translate --run ...` with TEXT (or `seqlab seq2seq eval --run ...`)
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

from seqlab.runs.directory import DESCRIPTIONS, config_kind, run_kind  # noqa: F401 (one kind detection: the run format's)

RunKind = Literal["lm", "seq2seq"]

KIND_NAMES = {"lm": "a language model", "seq2seq": "a seq2seq model"}
KIND_SOURCES = {"lm": "`seqlab train` or `seqlab demo`", "seq2seq": "`seqlab seq2seq train`"}


def commands_for(kind: RunKind, run: str) -> str:
    """The commands that use a run of ``kind``, for messages."""
    if kind == "lm":
        return (f"`seqlab generate --run {run}` with --prompt TEXT (or `seqlab eval --run {run} --data FILE.npy`, "
                f"`seqlab explore --run {run}`)")
    return f"`seqlab seq2seq translate --run {run}` with TEXT (or `seqlab seq2seq eval --run {run}`)"


def check_run_kind(path: str | os.PathLike, expected: RunKind, command: str, *, run_dir: bool = True) -> None:
    """Raise ValueError when ``path`` is a run of the other kind, naming the command for it, and
    (``run_dir``: ``path`` was given as a run directory) FileNotFoundError when it does not exist,
    saying how to make it (:func:`how_to_make`). A path whose kind cannot be told is left to the
    loader (its own errors name the file)."""
    if run_dir and not os.path.exists(path):
        checkpoint = os.path.join(path, "checkpoints", "latest.pt")
        raise FileNotFoundError(f"run directory {path} does not exist (so there is no {checkpoint}); "
                                f"{how_to_make(path, expected)}")
    kind = run_kind(path)
    if kind is None or kind == expected:
        return
    raise ValueError(f"{path} is {DESCRIPTIONS[kind]}, not {KIND_NAMES[expected]}: "
                     f"`{command}` needs a run of {KIND_SOURCES[expected]}; for this run use "
                     f"{commands_for(kind, str(path))}")


def how_to_make(path: str | os.PathLike, kind: RunKind | None = None) -> str:
    """How to make the run a missing ``path`` was meant to be: the ``kind`` the command needs, else a
    directory named after a built-in seq2seq task (runs/dates, runs/fr-en) suggests ``seqlab seq2seq
    train``, others both kinds.

    >>> how_to_make("runs/small", "seq2seq")
    'train it with `seqlab seq2seq train --task TASK --out runs/small` (a seq2seq model; TASK: copy, reverse, sort, dates, fr-en, or --pairs FILE.tsv)'
    """
    from seqlab.seq2seq.builtin_tasks import TASKS

    name = Path(path).name.lower()
    task = next((t for t in TASKS if t in name), None)
    if kind == "seq2seq" and task is None:
        return (f"train it with `seqlab seq2seq train --task TASK --out {path}` (a seq2seq model; TASK: "
                f"{', '.join(TASKS)}, or --pairs FILE.tsv)")
    if kind == "lm" and task is None:
        return f"make it with `seqlab train --out {path}` (or `seqlab demo --fast`, which writes demo_out/run)"
    if task is not None:
        return (f"train it with `seqlab seq2seq train --task {task} --out {path}` (a seq2seq model), or "
                f"make a language model with `seqlab demo --fast` or `seqlab train`")
    return (f"make a language model with `seqlab demo --fast` (writes demo_out/run) or `seqlab train`, or a "
            f"seq2seq model with `seqlab seq2seq train --out {path}`")
