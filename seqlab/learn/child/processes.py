"""Ending every process below a process (Linux /proc; nothing elsewhere): the child ends what the
student's code started after each check, and the checker ends the child's whole tree. Standard
library only (the child runs it without seqlab)."""

from __future__ import annotations

import os
import signal
import time


def children(pid: int) -> list[int]:
    """The direct children of ``pid`` (Linux /proc; [] elsewhere)."""
    found = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return found
    for task in tasks:
        try:
            with open(f"/proc/{pid}/task/{task}/children", "rb") as f:
                found += [int(p) for p in f.read().split()]
        except FileNotFoundError:
            if os.path.isdir(f"/proc/{pid}/task/{task}"):   # a kernel without the children file
                return _children_by_scan(pid)
        except OSError:
            continue
    return found


def _children_by_scan(pid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", "rb") as f:
                    stat = f.read()
            except OSError:
                continue
            if int(stat[stat.rindex(b")") + 2:].split()[1]) == pid:   # the field after the state
                found.append(int(entry))
    return found


def descendants(pid: int) -> list[int]:
    found, todo = [], [pid]
    while todo:
        kids = children(todo.pop())
        found += kids
        todo += kids
    return found


def signal_all(pids, signum) -> None:
    for pid in pids:
        try:
            os.kill(pid, signum)
        except (ProcessLookupError, PermissionError):
            pass


def end_processes_below(pid: int) -> None:
    """Stop, then kill, every process below ``pid``; reap the ones that are ours."""
    for _ in range(10):
        below = descendants(pid)
        if not below:
            break
        signal_all(below, signal.SIGSTOP)          # none of them forks again while we look
        below = sorted(set(below) | set(descendants(pid)))
        signal_all(below, signal.SIGKILL)
        if pid == os.getpid():
            deadline = time.monotonic() + 1.0
            while time.monotonic() < deadline:
                try:
                    reaped, _ = os.waitpid(-1, os.WNOHANG)
                except ChildProcessError:
                    break
                if reaped == 0:
                    time.sleep(0.001)
        else:
            time.sleep(0.01)
