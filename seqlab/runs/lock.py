"""A run directory is locked while a process trains it: a second ``seqlab train`` or ``seqlab
seq2seq train`` into the same ``--out`` is refused, with the holder's process id, instead of both
running and interleaving two runs in one log.

The lock is ``fcntl.flock`` on RUN/.lock, which the operating system releases when the holder's
process ends in any way (exit, crash, kill -9), so a crashed run never leaves a stale lock behind;
the file only records who holds it, for the message. Example::

    with RunLock("runs/a", "seqlab train"):
        ...                                  # a second RunLock("runs/a") raises RunLockedError:
        # runs/a is in use: process 4242 (`seqlab train`, since 2026-12-01 10:15:02) is training it; ...

``RunLock(folder, command, wait=True)`` waits for the holder instead of refusing (the learn
workspace's progress.json: each read-modify-write holds it). Where ``fcntl`` is missing (Windows)
the lock does nothing.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None

LOCK_FILE = ".lock"


class RunLockedError(RuntimeError):
    """Another process holds the run directory's lock."""


class RunLock:
    """An exclusive lock on a run directory (created if missing); :meth:`acquire` / :meth:`release`,
    or a ``with`` block."""

    def __init__(self, run: str | Path, command: str = "seqlab train", wait: bool = False) -> None:
        self.run, self.command, self.wait = Path(run), command, wait
        self.path = self.run / LOCK_FILE
        self._file = None  # the open lock file while held (a file object: closing it, even by the
        #                    garbage collector, releases the lock)

    def acquire(self) -> "RunLock":
        if fcntl is None or self._file is not None:
            return self
        self.run.mkdir(parents=True, exist_ok=True)
        while True:
            handle = open(self.path, "a+", encoding="utf-8")
            try:
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX if self.wait else fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                handle.close()
                raise RunLockedError(self._held_message()) from None
            except OSError:
                handle.close()
                raise
            try:
                same_file = os.fstat(handle.fileno()).st_ino == os.stat(self.path).st_ino
            except FileNotFoundError:
                same_file = False
            if same_file:
                break
            handle.close()  # the holder released and removed the file between our open and lock: try again
        holder = {"pid": os.getpid(), "command": self.command,
                  "since": time.strftime("%Y-%m-%d %H:%M:%S", time.localtime())}
        handle.truncate(0)
        handle.write(json.dumps(holder) + "\n")
        handle.flush()
        self._file = handle
        return self

    def _held_message(self) -> str:
        try:
            holder = json.loads(self.path.read_text(encoding="utf-8"))
            who = f"process {int(holder['pid'])} (`{holder['command']}`, since {holder['since']})"
        except (OSError, ValueError, KeyError, TypeError, RecursionError):
            who = "another process"
        return (f"{self.run} is in use: {who} is training it; wait until it finishes, stop it, or give "
                "another --out (two runs in one directory would mix their checkpoints and logs)")

    @property
    def held(self) -> bool:
        return self._file is not None

    def release(self) -> None:
        if self._file is None:
            return
        try:
            self.path.unlink(missing_ok=True)  # while still holding it (see acquire's inode check)
        finally:
            self._file.close()  # closing releases the lock
            self._file = None

    def __del__(self) -> None:
        try:
            self.release()
        except Exception:  # noqa: BLE001 - at interpreter exit the file system may be gone
            pass

    def __enter__(self) -> "RunLock":
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()
