"""Files that are never half-written: write to a temporary name beside the target, then rename.

``os.replace`` within one folder is atomic, so a reader (or a crash) sees either the old file or
the new one. The temporary file is created with ``open`` (normal umask permissions, unlike
``mkstemp``'s 0600) and removed when the write fails.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path beside ``path`` to write (a file or a folder); when the block ends
    normally it is renamed to ``path``, when it raises it is removed.

    The temporary name keeps the suffix (``.loss_curve.tmp123.png``), so writers that pick a
    format from it (matplotlib, PIL) write the right one.
    """
    path = Path(path)
    tmp = path.with_name(f".{path.stem}.tmp{os.getpid()}{path.suffix}")
    try:
        yield tmp
        os.replace(tmp, path)
    except BaseException:
        if tmp.is_dir():
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            tmp.unlink(missing_ok=True)
        raise


def atomic_write_text(path: str | os.PathLike, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` through :func:`atomic_path`."""
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")


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
