"""Files and folders that are never half-written: build beside the target, then rename.

``os.replace`` within one folder is atomic, so a reader (or a crash) sees either the old file or
the new one. The temporary file is created with ``open`` (normal umask permissions, unlike
``mkstemp``'s 0600) and removed when the write fails.

Temporary names follow one pattern, ``.<stem>.tmp<pid><suffix>`` (``.train.tmp4242.npy`` while
process 4242 writes ``train.npy``), so a later run can recognise what a killed run left behind and
remove it (:func:`remove_stale_temporaries`) without touching anything else.

A folder cannot be renamed over a non-empty folder, so :func:`atomic_directory` swaps in two
renames: the old folder steps aside as ``.<stem>.old<pid><suffix>``, the new one takes its name,
then the old one is deleted. Example::

    with atomic_directory("tok", replaceable={"vocab.json", "merges.txt"}) as tmp:
        (tmp / "vocab.json").write_text(...)    # tok/ is untouched until the block ends
        (tmp / "merges.txt").write_text(...)    # an error here leaves the old tok/ as it was
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
from collections.abc import Collection, Iterator
from pathlib import Path

# ".<stem>.tmp<pid><suffix>" (a file or folder being written) or ".<stem>.old<pid><suffix>" (a
# folder stepping aside during a swap); the suffix is Path.suffix: one dot and no other dot.
_TEMPORARY_NAME = re.compile(r"\.(?P<stem>.+)\.(?P<kind>tmp|old)(?P<pid>[0-9]+)(?P<suffix>\.[^.]*)?")


def is_temporary_name(name: str) -> bool:
    """Whether ``name`` is one of seqlab's temporaries (``.train.tmp4242.npy``, ``.tok.old4242``)."""
    return _TEMPORARY_NAME.fullmatch(name) is not None


def _temporary_name(path: Path, kind: str = "tmp") -> Path:
    return path.with_name(f".{path.stem}.{kind}{os.getpid()}{path.suffix}")


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


def _naming(error: BaseException, path: Path, tmp: Path) -> BaseException:
    """``error`` naming the file the user asked for: an ``OSError`` with no file name (a failed
    ``write`` on a full disk says only "[Errno 28] No space left on device") gets ``path``; one
    naming something inside the temporary ``tmp`` gets the matching name inside ``path``."""
    if not isinstance(error, OSError) or error.errno is None:
        return error
    if error.filename is None:
        filename = path
    else:
        try:
            filename = path / Path(error.filename).relative_to(tmp)
        except ValueError:
            return error  # names another file already
    try:
        return type(error)(error.errno, error.strerror or os.strerror(error.errno), os.fspath(filename))
    except TypeError:  # a subclass with its own constructor: keep it as it is
        return error


@contextlib.contextmanager
def _removed_on_error(tmp: Path, path: Path) -> Iterator[None]:
    """Remove ``tmp`` when the block raises; the error is re-raised naming ``path`` (:func:`_naming`)."""
    try:
        yield
    except BaseException as error:
        _remove(tmp)
        named = _naming(error, path, tmp)
        if named is not error:
            raise named from error
        raise


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path beside ``path`` to write (a file or an empty-or-new folder); when
    the block ends normally it is renamed to ``path``, when it raises it is removed.

    The temporary name keeps the suffix (``.loss_curve.tmp123.png``), so writers that pick a
    format from it (matplotlib, PIL) write the right one. An ``OSError`` that names no file
    (a full disk during ``write``) is re-raised naming ``path``.
    """
    path = Path(path)
    tmp = _temporary_name(path)
    with _removed_on_error(tmp, path):
        yield tmp
        os.replace(tmp, path)


def atomic_write_text(path: str | os.PathLike, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` through :func:`atomic_path`. A lone surrogate, which UTF-8
    cannot hold (a byte that was not UTF-8 in a file name or a student's message, e.g. ``\\udcff``),
    is written as that escape: inside a JSON string the escape reads back as the same character,
    so the write never fails on it."""
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8", errors="backslashreplace")


def link_or_copy(source: str | os.PathLike, dest: str | os.PathLike) -> Path:
    """Make ``dest`` hold the bytes of ``source``, atomically: a hard link (no second copy of a
    large file) where the file system allows one, else a copy."""
    dest = Path(dest)
    with atomic_path(dest) as tmp:
        try:
            os.link(source, tmp)
        except OSError:
            shutil.copyfile(source, tmp)
    return dest


def check_replaceable(path: str | os.PathLike, replaceable: Collection[str], what: str = "--out") -> None:
    """Raise before any work if replacing the folder ``path`` whole would lose something.

    ``path`` may be missing or a folder holding only names in ``replaceable`` (and seqlab's own
    temporaries); a file, or a folder with anything else in it, raises an error naming it.
    """
    path = Path(path)
    if not path.exists():
        return
    if not path.is_dir():
        raise NotADirectoryError(f"{what} {os.fspath(path)!r} is a file; it must be a directory (created if missing)")
    foreign = sorted(name for name in os.listdir(path)
                     if name not in replaceable and not _TEMPORARY_NAME.fullmatch(name))
    if foreign:
        shown = ", ".join(foreign[:5]) + (f" and {len(foreign) - 5} more" if len(foreign) > 5 else "")
        raise FileExistsError(
            f"{what} {os.fspath(path)!r} holds other files ({shown}); it is replaced as a whole, so give "
            f"a new or empty directory (it may only hold {', '.join(sorted(replaceable))})")


@contextlib.contextmanager
def atomic_directory(path: str | os.PathLike, replaceable: Collection[str] = ()) -> Iterator[Path]:
    """Yield a new empty folder beside ``path``; when the block ends normally it replaces ``path``
    whole (the old folder's files are all gone), when it raises it is removed and ``path`` is left
    exactly as it was.

    ``replaceable`` names what an existing ``path`` may hold; anything else (or ``path`` being a
    file) raises before the block runs (:func:`check_replaceable`), so ``--out .`` can never
    delete a working directory. Missing parent folders are created. OS errors that name no file
    are re-raised naming ``path``.
    """
    path = Path(path)
    check_replaceable(path, replaceable)
    tmp = _temporary_name(path)
    _remove(tmp)  # left by an earlier failure of this same process id
    tmp.parent.mkdir(parents=True, exist_ok=True)
    tmp.mkdir()
    with _removed_on_error(tmp, path):
        yield tmp
        _swap_in(tmp, path)


def _swap_in(new: Path, path: Path) -> None:
    """Rename the folder ``new`` to ``path``, whose old folder (if any) is then deleted."""
    if not path.exists():
        os.rename(new, path)
        return
    old = _temporary_name(path, "old")
    _remove(old)
    os.rename(path, old)
    try:
        os.rename(new, path)
    except BaseException:
        os.rename(old, path)  # put the old folder back
        raise
    _remove(old)


def _process_alive(pid: int) -> bool:
    if pid == os.getpid() or pid <= 0 or os.name == "nt":
        return True  # (on Windows os.kill(pid, 0) would stop the process: never clean up there)
    try:
        os.kill(pid, 0)  # signal 0: only asks whether the process exists
    except (ProcessLookupError, OverflowError):
        return False
    except (PermissionError, OSError):
        return True  # exists but belongs to someone else (or cannot tell): keep its files
    return True


def remove_stale_temporaries(directory: str | os.PathLike) -> list[Path]:
    """Remove what killed seqlab processes left in ``directory``; returns the paths removed.

    Only names of seqlab's temporary pattern (``.train.tmp4242.npy``, ``.tok.old4242``) whose
    process id is no longer running are touched; every other file is left alone. A folder that
    stepped aside during a swap (``.tok.old4242``) is put back when its target is missing (the
    process died between the two renames), else removed. A missing ``directory`` is fine.
    """
    directory = Path(directory)
    try:
        names = os.listdir(directory)
    except (FileNotFoundError, NotADirectoryError):
        return []
    removed: list[Path] = []
    for name in sorted(names):
        match = _TEMPORARY_NAME.fullmatch(name)
        if match is None or _process_alive(int(match["pid"])):
            continue
        path = directory / name
        target = directory / (match["stem"] + (match["suffix"] or ""))
        if match["kind"] == "old" and path.is_dir() and not target.exists():
            os.rename(path, target)
            continue
        _remove(path)
        removed.append(path)
    return removed
