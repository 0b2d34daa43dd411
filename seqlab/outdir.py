"""The one rule for a command that writes a folder OUT whole (``seqlab export``, ``import``,
``bpe train``, ``bpe export``, ``prepare``, ``compare``, ``demo``).

OUT may be

- new, or an empty folder;
- a folder this same command wrote earlier, holding nothing else: the command leaves a marker,
  ``.seqlab-out.json`` (``{"command": "seqlab export --to hf", "files": [...]}``), and a folder
  from before the marker existed is recognised by its contents where the command can tell;
- anything else only with ``--overwrite``, which replaces it whole (never the working
  directory, one of its parents or the home folder).

The new folder is built beside OUT and swapped in whole (:func:`seqlab.atomic.atomic_directory`),
so a failure leaves the old OUT exactly as it was. Example::

    with output_folder("hf_out", "seqlab export --to hf", overwrite=args.overwrite) as building:
        (building / "config.json").write_text(...)
    # a transformers save_pretrained folder at hf_out raises FileExistsError before any work
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable, Collection, Iterator
from pathlib import Path

from seqlab.atomic import atomic_directory, atomic_write_text, is_temporary_name, remove_stale_temporaries

MARKER = ".seqlab-out.json"

# recognise(path, names) -> True when the folder's contents show the command wrote it (no marker)
Recognise = Callable[[Path, Collection[str]], bool]


def _listing(path: Path) -> list[str]:
    """The names in the folder ``path``, without seqlab's own temporaries."""
    return sorted(name for name in os.listdir(path) if not is_temporary_name(name))


def read_marker(path: str | os.PathLike) -> dict | None:
    """The marker of the folder ``path`` ({"command", "files"}), None when it has none or it is damaged."""
    try:
        data = json.loads((Path(path) / MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return None
    if not isinstance(data, dict) or not isinstance(data.get("command"), str):
        return None
    files = data.get("files")
    data["files"] = [f for f in files if isinstance(f, str)] if isinstance(files, list) else []
    return data


def _shown(names: Collection[str]) -> str:
    names = sorted(names)
    return ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")


def _refuse_precious(path: Path, flag: str) -> None:
    """--overwrite never replaces the working directory, a folder above it, or the home folder."""
    resolved = path.resolve()
    cwd = Path.cwd().resolve()
    if resolved == cwd or resolved in cwd.parents or resolved == Path.home().resolve():
        raise ValueError(f"{flag} {os.fspath(path)!r} is the working directory, a folder above it or the home "
                         "folder; --overwrite replaces OUT whole, so give a folder of its own")


def check_out_folder(path: str | os.PathLike, command: str, *, overwrite: bool = False,
                     recognise: Recognise | None = None, flag: str = "OUT") -> None:
    """Raise before any work unless ``command`` may replace the folder ``path`` whole (the rule in
    the module docstring). Errors name the folder, what is in it, and what to do."""
    path = Path(path)
    if not path.exists():
        return
    if not path.is_dir():
        raise NotADirectoryError(f"{flag} {os.fspath(path)!r} is a file; give a folder (it is created if missing)")
    names = _listing(path)
    if not names:
        return
    if overwrite:
        _refuse_precious(path, flag)
        return
    marker = read_marker(path)
    if marker is not None and marker["command"] == command:
        foreign = set(names) - set(marker["files"]) - {MARKER}
        if not foreign:
            return
        raise FileExistsError(
            f"{flag} {os.fspath(path)!r} was written by `{command}` but now also holds {_shown(foreign)}, which "
            f"replacing it would delete; move them away, give another {flag}, or --overwrite to replace it whole")
    if marker is None and recognise is not None and recognise(path, names):
        return
    by = f"written by `{marker['command']}`, not `{command}`" if marker is not None else f"not written by `{command}`"
    raise FileExistsError(
        f"{flag} {os.fspath(path)!r} is not empty and was {by} (it holds {_shown(names)}); give a new or empty "
        f"folder, or --overwrite to replace it and everything in it")


@contextlib.contextmanager
def output_folder(path: str | os.PathLike, command: str, *, overwrite: bool = False,
                  recognise: Recognise | None = None, flag: str = "OUT") -> Iterator[Path]:
    """Check ``path`` (:func:`check_out_folder`), then yield a new empty folder beside it; when the
    block ends normally the folder, with ``command``'s marker added, replaces ``path`` whole."""
    path = Path(path)
    check_out_folder(path, command, overwrite=overwrite, recognise=recognise, flag=flag)
    remove_stale_temporaries(path.absolute().parent)
    present = _listing(path) if path.is_dir() else []
    with atomic_directory(path, replaceable=present) as building:
        yield building
        written = _listing(building)
        atomic_write_text(building / MARKER, json.dumps({"command": command, "files": written}, indent=1) + "\n")


def holds_only(expected: Collection[str], required: Collection[str] = ()) -> Recognise:
    """A ``recognise`` for folders from before the marker: every name is one of ``expected`` and
    each of ``required`` (the files only this command writes) is there, e.g.
    ``holds_only(TOKENIZER_FILES, required=["special_tokens.json"])``."""
    allowed, needed = set(expected), set(required)

    def recognise(path: Path, names: Collection[str]) -> bool:
        return set(names) <= allowed and needed <= set(names)

    return recognise
