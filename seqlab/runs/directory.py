"""A run directory's files other than config.json (:mod:`seqlab.runs.config`), checkpoints and
the log: the tokenizer/ or vocab.json, and the temporaries killed runs leave behind.

Two kinds of run share the layout (see :mod:`seqlab.runs`): an LM run holds tokenizer/, a seq2seq
run vocab.json. Standard library only::

    write_vocab_json(run, {"source": ..., "target": ...})   # RUN/vocab.json, atomically
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from seqlab.atomic import atomic_directory, atomic_write_text, remove_stale_temporaries
from seqlab.jsonfile import read_json
from seqlab.runs.kinds import KINDS, TOKENIZER_DIR, VOCAB_FILE



def read_json_object(path: str | Path, expected: str = "a JSON object") -> dict[str, Any] | None:
    """The JSON object in ``path``, None when the file is missing: the one reader of the JSON files
    of runs and of the commands that make them (config.json, sweep.json, sweep_outcome.json, the
    paths experiment's results.json). Damage is a ValueError naming the file: the line of invalid
    JSON, bytes that are not UTF-8, JSON nested too deeply to parse, or a value that is not
    ``expected`` (:func:`seqlab.jsonfile.parse_json`).

    Example: a file holding ``[1, 2]`` raises "FILE: expected a JSON object, found list".
    """
    try:
        return read_json(path, expected=dict, expected_text=expected)
    except FileNotFoundError:
        return None


def write_vocab_json(run: str | Path, vocabularies: dict[str, Any]) -> Path:
    """Write RUN/vocab.json (``{"source": ..., "target": ...}``) atomically."""
    path = Path(run) / VOCAB_FILE
    atomic_write_text(path, json.dumps(vocabularies) + "\n")
    return path


def read_vocab_json(run: str | Path) -> dict[str, Any]:
    """RUN/vocab.json as {"source": dict, "target": dict}; errors name the file."""
    path = Path(run) / VOCAB_FILE
    if not path.is_file():
        raise FileNotFoundError(f"{path} does not exist: is {path.parent} a run of `seqlab seq2seq train`?")
    try:
        data = read_json(path)
    except ValueError as error:
        raise ValueError(f"{path} is not a seq2seq vocabulary file ({error})") from None
    if not isinstance(data, dict) or not isinstance(data.get("source"), dict) or not isinstance(data.get("target"), dict):
        raise ValueError(f"{path} is not a seq2seq vocabulary file (expected {{\"source\": ..., \"target\": ...}})")
    return data


def copy_tokenizer(source: str | Path, run: str | Path, names: tuple[str, ...]) -> Path:
    """Copy the tokenizer files ``names`` of ``source`` into RUN/tokenizer, replacing it whole
    (a new folder is built beside it and swapped in: never a moment without a tokenizer or with a
    mix of two)."""
    source, target = Path(source), Path(run) / TOKENIZER_DIR
    with atomic_directory(target, names) as tmp:
        for name in names:
            if (source / name).is_file():
                shutil.copyfile(source / name, tmp / name)
    return target


def remove_foreign_files(run: str | Path, kind: str) -> list[Path]:
    """Remove what only a run of the *other* kind has (a seq2seq run written over an LM run must
    not keep its tokenizer/, nor an LM run a vocab.json); returns the paths removed."""
    removed = []
    for other, text in KINDS.items():
        if other == kind:
            continue
        for name in text.files:
            path = Path(run) / name
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
            elif path.exists() or path.is_symlink():
                path.unlink()
            else:
                continue
            removed.append(path)
    return removed


def remove_run_temporaries(run: str | Path) -> list[Path]:
    """Remove what killed runs left half-written in RUN and RUN/checkpoints (their process is gone)."""
    run = Path(run)
    return [*remove_stale_temporaries(run), *remove_stale_temporaries(run / "checkpoints")]


def check_out_dir(run: str | Path, *, resume: bool, flag: str = "--out", command: str = "seqlab train") -> None:
    """Clear errors for an output directory that is a file, or a ``--resume`` where no run is."""
    run = Path(run)
    if run.exists() and not run.is_dir():
        raise NotADirectoryError(f"{flag} {run} is a file; give a directory for the run (it is created if missing)")
    if resume and not run.is_dir():
        raise FileNotFoundError(f"--resume: no run at {run}, nothing to resume (give the {flag} of an earlier "
                                f"`{command}`, or drop --resume to start a new run)")
