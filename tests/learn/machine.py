"""The machines the sandbox tests run on, made here: a ``bwrap`` that fails as Ubuntu's AppArmor makes it
fail, no ``bwrap`` at all, and (as root, which CI is) a command run as another user with this
interpreter and checkout readable to it.

    PATH=fake_bwrap(tmp_path) ...                    # bwrap: setting up uid map: Permission denied
    subprocess.run(as_user([sys.executable, ...], uid=65534))

:func:`as_user` needs root and util-linux's ``unshare`` and ``setpriv``: in a mount namespace of its own
it lays a tmpfs (mode 755) over each folder on the way to the interpreter and the checkout that
others may not enter (/root is 700) and binds back only that way, then drops to ``uid``; nothing
changes outside that namespace.
"""

from __future__ import annotations

import os
import shlex
import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
APPARMOR = "bwrap: setting up uid map: Permission denied"


def fake_bwrap(folder: Path) -> str:
    """A PATH whose ``bwrap`` fails as AppArmor makes it fail (and nothing else)."""
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / "bwrap"
    script.write_text(f"#!/bin/sh\necho '{APPARMOR}' >&2\nexit 1\n")
    script.chmod(0o755)
    return f"{folder}:/usr/bin:/bin"


def no_bwrap(folder: Path) -> str:
    """A PATH without ``bwrap``: an empty folder (the checker calls Python by its full path)."""
    folder.mkdir(parents=True, exist_ok=True)
    return str(folder)


def _blocked(path: Path) -> list[tuple[Path, str]]:
    """(folder, the next name on the way) for each folder on the way to ``path`` others may not enter."""
    found = []
    parts = path.resolve().parts
    for k in range(1, len(parts) - 1):
        folder = Path(*parts[:k + 1])
        if not os.stat(folder).st_mode & 0o001:
            found.append((folder, parts[k + 1]))
    return found


def as_user(argv: list[str], uid: int | None = None) -> list[str]:
    """``argv`` as a command run in a mount namespace where this interpreter and checkout can be read
    by every user, as ``uid`` (None: as root). Skips the test where that cannot be made."""
    if os.geteuid() != 0:
        pytest.skip("making the interpreter readable to another user needs root (CI runs as root)")
    tools = {tool: shutil.which(tool) for tool in ("unshare", "setpriv", "mount", "mkdir", "sh")}
    for tool, found in tools.items():
        if found is None:
            pytest.skip(f"{tool} (util-linux) is not installed")
    ways: dict[Path, set[str]] = {}
    for target in (Path(sys.executable).resolve(), ROOT):
        for folder, name in _blocked(target):
            ways.setdefault(folder, set()).add(name)
    if not os.path.isdir("/mnt"):
        pytest.skip("no /mnt to lay a tmpfs on for the bind mounts")
    mount, mkdir = tools["mount"], tools["mkdir"]                 # by full path: PATH may be the test's own
    lines = ["set -e", f"{mount} -t tmpfs tmpfs /mnt"]        # in this namespace only: nothing is left on the disk
    for n, (folder, names) in enumerate(sorted(ways.items())):
        for name in sorted(names):
            keep = f"/mnt/keep-{n}-{name}"
            lines += [f"{mkdir} -p {shlex.quote(keep)}", f"{mount} --bind {shlex.quote(str(folder / name))} {shlex.quote(keep)}"]
        lines.append(f"{mount} -t tmpfs -o mode=0755 tmpfs {shlex.quote(str(folder))}")
        for name in sorted(names):
            keep = f"/mnt/keep-{n}-{name}"
            target = shlex.quote(str(folder / name))
            lines += [f"{mkdir} -p {target}", f"{mount} --bind {shlex.quote(keep)} {target}"]
    drop = [] if uid is None else [tools["setpriv"], "--reuid", str(uid), "--regid", str(uid), "--clear-groups", "--"]
    lines.append('exec "$@"')
    return [tools["unshare"], "--mount", "--propagation", "private", "--", tools["sh"], "-c", "\n".join(lines), "sh",
            *drop, *argv]
