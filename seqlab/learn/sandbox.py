"""Where the student's code runs: a bubblewrap sandbox where ``bwrap`` runs, else a user of its own
(root only), else a plain child process. Each is a :class:`seqlab.learn.runner.Launcher`.

:class:`Bubblewrap`: new PID, network, IPC and UTS namespaces (and a user namespace: an unprivileged
uid inside, no capabilities), ``--die-with-parent``, ``--new-session``; read-only: the system
libraries, the interpreter's standard library, each allowed package bound alone under
``/check/site`` (:func:`package_entries`: what importing it loads, seqlab never), the child program
at ``/check/child``; the scratch folder at ``/check/root`` (student/, helpers/, inputs/ and the
request read-only; answers/, work/, tmp/ writable). Nothing else is there: no progress.json, no
other student, no home folder, no site-packages. :class:`OwnUser`: a uid of its own per submission
(``seqlab learn grade`` as root where bwrap fails), its scratch folder the only place it may write,
every process of that uid ended after each child. The child sets its own address-space limit
(``Launcher.memory``) before it reads the student's code.

Whether bwrap works is decided by trying it once per process (:func:`bubblewrap_failure`), never
by looking for the file: AppArmor ("setting up uid map: Permission denied") and Docker's seccomp
profile refuse it at run time. :func:`for_check` and :func:`for_grade` choose, and say in words what
isolation they give (:class:`Isolation`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import sysconfig
import tempfile
import threading
from pathlib import Path

from seqlab.learn.runner import CHILD, Launcher, Plain

INSIDE = "/check"                         # the sandbox's own folder: child/, root/, site/
NOBODY = 65534                            # the uid and gid inside a sandbox started by root
USER_BASE = 2_100_000                     # OwnUser's uids: USER_BASE + n, one per submission
TRIAL_SECONDS = 20.0
_SYSTEM = ("/usr", "/lib", "/lib64", "/lib32", "/libx32", "/bin", "/sbin")
_ETC = ("/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/localtime", "/etc/nsswitch.conf")
_TRIED: dict[str, object] = {}            # per process: what each trial found
_TRIED_LOCK = threading.Lock()


class NoIsolation(RuntimeError):
    """``seqlab learn grade`` cannot keep the students apart here; the message says why and what to do."""


def _bwrap() -> str | None:
    return shutil.which("bwrap")


def _python() -> str:
    return os.path.realpath(sys.executable)


def _seqlab_root() -> Path:
    """The folder that holds the seqlab package (a checkout or site-packages)."""
    return Path(__file__).resolve().parents[2]


def _stdlib_dirs() -> list[str]:
    paths = sysconfig.get_paths()
    return sorted({os.path.realpath(paths[k]) for k in ("stdlib", "platstdlib")})


def _site_dirs() -> list[str]:
    """Every folder of sys.path that is not the standard library's: where packages come from."""
    stdlib = _stdlib_dirs()
    found = []
    for entry in sys.path:
        if not entry or not os.path.isdir(entry):
            continue
        real = os.path.realpath(entry)
        if any(real == s or real.startswith(s + os.sep) and "-packages" not in real for s in stdlib):
            continue
        if real not in found:
            found.append(real)
    return found


# --- which files the allowed packages need -----------------------------------------------------------
_PROBE = r"""
import json, os, sys
sites, packages, excluded = json.loads(sys.argv[1])
sys.path += sites
for name in packages:
    __import__(name)
files = set()
for module in list(sys.modules.values()):
    path = getattr(module, "__file__", None)
    if path and getattr(module, "__name__", "") != "__main__":
        files.add(os.path.realpath(path))
with open("/proc/self/maps") as f:
    for line in f:
        parts = line.split(maxsplit=5)
        if len(parts) == 6 and parts[5].startswith("/"):
            files.add(os.path.realpath(parts[5].strip().removesuffix(" (deleted)")))
# what the packages import later (torch imports sympy on first use): their distributions' requirements
import importlib.metadata as metadata
import re
owners = metadata.packages_distributions()
todo = [d for name in packages for d in owners.get(name, [])]
seen = set()
while todo:
    name = re.split(r"[^A-Za-z0-9._-]", todo.pop())[0].lower().replace("_", "-")
    if name in seen:
        continue
    seen.add(name)
    try:
        dist = metadata.distribution(name)
    except metadata.PackageNotFoundError:
        continue
    for item in dist.files or ():
        path = os.path.realpath(dist.locate_file(item))
        if any(path.startswith(s + os.sep) for s in sites):      # not its scripts or manual pages
            files.add(path)
    todo += [r for r in (dist.requires or ()) if "extra ==" not in r and "extra==" not in r]
entries, loose = set(), set()
for path in files:
    home = max((s for s in sites if path.startswith(s + os.sep)), key=len, default=None)
    if home is not None:
        top = path[len(home) + 1:].split(os.sep)[0]
        if top.split(".")[0].split("-")[0] not in excluded and not top.startswith("__editable__") \
                and top != "__pycache__" and not top.endswith(".pth"):
            entries.add(os.path.join(home, top))
    else:
        loose.add(path)
print(json.dumps({"entries": sorted(entries), "loose": sorted(loose)}))
"""


def _homes(packages: tuple[str, ...], sites: list[str]) -> list[str]:
    """The site folders that hold ``packages`` (found without importing them). Only their times key the
    cache: the folder ``python -m`` puts first on sys.path is often the student's workspace, whose time
    changes with every check, and installing or removing a package changes its site folder's."""
    import importlib.util
    homes = []
    for name in packages:
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            spec = None
        where = spec.origin if spec is not None and spec.origin else None
        if spec is not None and spec.submodule_search_locations:
            where = next(iter(spec.submodule_search_locations), where)
        site = next((s for s in sites if where and _inside(os.path.realpath(where), [s])), None)
        if site is not None and site not in homes:
            homes.append(site)
    return homes or sites


def _cache_file(packages: tuple[str, ...], sites: list[str]) -> Path | None:
    stamp = ["5", _python(), sys.version, list(packages), str(_seqlab_root())]
    for site in _homes(packages, sites):
        try:
            stamp.append([site, os.stat(site).st_mtime_ns])
        except OSError:
            stamp.append([site, None])
    digest = hashlib.sha256(json.dumps(stamp).encode()).hexdigest()[:24]
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    if not os.path.isabs(base):
        return None                                   # no home folder to keep it in
    return Path(base) / "seqlab" / "sandbox" / f"packages-{digest}.json"


def package_entries(packages: tuple[str, ...]) -> dict[str, list[str]]:
    """What importing ``packages`` needs from outside the standard library, found by importing them in
    a fresh interpreter and reading its modules' files and /proc/self/maps, and by following their
    distributions' requirements (torch imports sympy only on first use): {"entries": the top-level
    files and folders of the site folders (``.../site-packages/numpy``, ``numpy.libs``), "loose":
    other files mapped}. seqlab is never among them. Kept per process and in the user's cache folder
    (keyed by the interpreter, the packages and the site folders' times)."""
    packages = tuple(sorted(set(packages)))
    key = f"packages {packages}"
    with _TRIED_LOCK:
        if key in _TRIED:
            return _TRIED[key]                                   # type: ignore[return-value]
    sites = _site_dirs()
    cache = _cache_file(packages, sites)
    found = None
    try:
        found = json.loads(cache.read_text(encoding="utf-8")) if cache is not None else None
        if found is not None and not (all(os.path.exists(p) and _inside(p, sites) for p in found["entries"])
                                      and all(os.path.isfile(p) for p in found["loose"])):
            found = None                                 # a package moved, or a file not of this form: probe again
    except (OSError, ValueError, KeyError, TypeError):
        found = None
    if found is None:
        excluded = ["seqlab", _seqlab_root().name]
        done = subprocess.run([_python(), "-I", "-S", "-c", _PROBE, json.dumps([sites, list(packages), excluded])],
                              capture_output=True, text=True, timeout=300, cwd="/")
        if done.returncode != 0:
            raise RuntimeError(f"importing {', '.join(packages)} failed: {done.stderr.strip()[-500:]}")
        found = json.loads(done.stdout)
        root = str(_seqlab_root())
        found["entries"] = [p for p in found["entries"] if not _inside(p, [root])]
        _, trees = _system_args()
        found["loose"] = [p for p in found["loose"] if os.path.isfile(p) and not _inside(p, trees + [root, _python()])]
        if cache is not None:
            try:
                from seqlab.atomic import atomic_write_text
                cache.parent.mkdir(parents=True, exist_ok=True)
                atomic_write_text(cache, json.dumps(found))
            except OSError:
                pass                                 # no cache folder: probe again next time
    with _TRIED_LOCK:
        _TRIED[key] = found
    return found


# --- bubblewrap ----------------------------------------------------------------------------------------
def _inside(path: str, trees) -> bool:
    return any(path == t or path.startswith(t.rstrip("/") + "/") for t in trees)


def _system_args() -> tuple[list[str], list[str]]:
    """bwrap's arguments for the system and the interpreter, and the trees they make visible."""
    args, trees = [], []
    for top in _SYSTEM:
        if os.path.islink(top):
            args += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            args += ["--ro-bind", top, top]
            trees.append(top)
    for name in _ETC:
        if os.path.exists(name):
            args += ["--ro-bind", name, name]
    python = _python()
    prefix = os.path.realpath(sys.base_prefix)
    for folder in (os.path.join(prefix, "lib"), os.path.join(prefix, "lib64"), *_stdlib_dirs()):
        if os.path.isdir(folder) and not _inside(folder, trees):
            args += ["--ro-bind", folder, folder]
            trees.append(folder)
    if not _inside(python, trees):
        args += ["--ro-bind", python, python]
    # hide every site folder and seqlab itself inside what is bound: only the allowed packages, one by one
    hidden = {os.path.realpath(p) for p in _site_dirs() + [str(_seqlab_root())]}
    for extra in ("/usr/lib/python3/dist-packages", "/usr/local/lib/python3/dist-packages"):
        hidden.add(extra)
    for folder in sorted(hidden):
        if os.path.isdir(folder) and _inside(folder, trees):
            args += ["--tmpfs", folder, "--remount-ro", folder]
    if os.path.isdir("/sys/devices/system/cpu"):
        args += ["--ro-bind", "/sys/devices/system/cpu", "/sys/devices/system/cpu"]   # torch reads the CPU's caches
    return args, trees


def _namespace_args() -> list[str]:
    # a user namespace of its own, nobody inside (as root too), and no further one from the student's code
    return ["--unshare-all", "--unshare-user", "--uid", str(NOBODY), "--gid", str(NOBODY), "--disable-userns",
            "--die-with-parent", "--new-session", "--cap-drop", "ALL", "--proc", "/proc", "--dev", "/dev"]


class Bubblewrap(Launcher):
    """The child inside a bubblewrap sandbox of its own (see the module's docstring)."""

    describe = ("each submission in a bubblewrap sandbox of its own: no network, its own processes only, "
                "a read-only view of Python, numpy and torch and its own files, "
                "writing only in its scratch folder")

    def __init__(self, bwrap: str | None = None):
        self.bwrap = bwrap or _bwrap() or "bwrap"

    def argv(self, root: str, packages: tuple[str, ...], program: list[str], fds: tuple[int, ...] = ()) -> list[str]:
        """bwrap's command line: the sandbox for the scratch folder ``root`` with ``packages``, running
        ``program`` (whose paths say /check/...)."""
        system, trees = _system_args()
        args = [self.bwrap, *_namespace_args(), *system]
        found = package_entries(packages) if packages else {"entries": [], "loose": []}
        for entry in found["entries"]:
            args += ["--ro-bind", entry, f"{INSIDE}/site/{os.path.basename(entry)}"]
        for path in found["loose"]:
            if not _inside(path, trees):
                args += ["--ro-bind", path, path]
        args += ["--ro-bind", str(CHILD), f"{INSIDE}/child", "--bind", root, f"{INSIDE}/root"]
        for name in ("student", "helpers", "inputs", "request.json", "request.bin"):
            if os.path.exists(os.path.join(root, name)):
                args += ["--ro-bind", os.path.join(root, name), f"{INSIDE}/root/{name}"]
        args += ["--chdir", f"{INSIDE}/root/work", "--"]
        return args + program

    def command(self, root, first, events, jobs):
        packages = tuple(sorted({p for job in jobs for p in job.packages} | {"numpy"}))
        env = {"PATH": "/usr/bin:/bin", "HOME": f"{INSIDE}/root/work", "TMPDIR": f"{INSIDE}/root/tmp",
               "LANG": "C.UTF-8", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
        program = [_python(), "-I", "-S", f"{INSIDE}/child/main.py", f"{INSIDE}/root", str(first), str(events),
                   f"{INSIDE}/site"]
        return self.argv(root, packages, program), env, "/"

    def signal_of(self, returncode):
        return -(returncode - 128) if returncode is not None and 128 < returncode < 128 + 65 else None


def bubblewrap_failure() -> str | None:
    """None when a bubblewrap sandbox starts here; else what went wrong (tried once per process:
    ``bwrap`` on PATH running Python inside the sandbox this module builds)."""
    with _TRIED_LOCK:
        if "bwrap" in _TRIED:
            return _TRIED["bwrap"]                       # type: ignore[return-value]
    found = _try_bubblewrap()
    with _TRIED_LOCK:
        _TRIED["bwrap"] = found
    return found


def _try_bubblewrap() -> str | None:
    bwrap = _bwrap()
    if bwrap is None:
        return "bubblewrap is not installed (no bwrap on PATH)"
    if not sys.platform.startswith("linux"):
        return f"bubblewrap runs only on Linux, not on {sys.platform}"
    root = tempfile.mkdtemp(prefix="seqlab-trial-")
    try:
        os.mkdir(os.path.join(root, "work"))
        argv = Bubblewrap(bwrap).argv(root, (), [_python(), "-I", "-S", "-c", "print('ok')"])
        done = subprocess.run(argv, capture_output=True, text=True, timeout=TRIAL_SECONDS, env={"PATH": "/usr/bin:/bin"},
                              stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError) as error:
        return f"{bwrap} could not be started ({type(error).__name__}: {error})"
    finally:
        shutil.rmtree(root, ignore_errors=True)
    if done.returncode != 0 or done.stdout.strip() != "ok":
        said = (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1]
        return f"{bwrap} fails here: {said[:300]}"
    return None


# --- a user of its own ---------------------------------------------------------------------------------
def _processes_of(uid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/status", "rb") as f:
                for line in f:
                    if line.startswith(b"Uid:"):
                        if int(line.split()[1]) == uid:
                            found.append(int(entry))
                        break
        except (OSError, ValueError, IndexError):
            continue
    return found


def end_user(uid: int) -> None:
    """Stop, then kill, every process whose real uid is ``uid`` (a double fork, a new session: all)."""
    for _ in range(20):
        pids = [p for p in _processes_of(uid) if p != os.getpid()]
        if not pids:
            return
        for signum in (signal.SIGSTOP, signal.SIGKILL):
            for pid in pids:
                try:
                    os.kill(pid, signum)
                except (ProcessLookupError, PermissionError):
                    pass


class OwnUser(Launcher):
    """The child as the uid ``uid`` (and gid), which owns nothing but the scratch folder's answers/,
    work/ and tmp/; every process of that uid is ended with the child (root only)."""

    describe = ("each submission as a user of its own (bubblewrap could not run): it cannot signal or write "
                "another student's checks or the report, but it can read what every user may read")

    def __init__(self, uid: int):
        self.uid = uid

    def options(self) -> dict:
        return {"user": self.uid, "group": self.uid, "extra_groups": []}

    def prepare(self, root: str) -> None:
        os.chown(root, 0, self.uid)
        os.chmod(root, 0o750)
        for name in ("answers", "work", "tmp"):
            os.chown(os.path.join(root, name), self.uid, self.uid)
            os.chmod(os.path.join(root, name), 0o700)
        for folder, dirs, files in os.walk(root):
            if os.path.basename(folder) in ("answers", "work", "tmp") and folder != root:
                continue
            for name in files:
                os.chmod(os.path.join(folder, name), 0o444)
            for name in dirs:
                if folder != root or name not in ("answers", "work", "tmp"):
                    os.chmod(os.path.join(folder, name), 0o755)

    def ended(self, root: str) -> None:
        end_user(self.uid)

    def command(self, root, first, events, jobs):
        argv, env, cwd = super().command(root, first, events, jobs)
        env = {k: v for k, v in env.items() if not k.startswith(("PYTHON", "SEQLAB"))}
        env["HOME"] = os.path.join(root, "work")
        return [_python(), "-I", *argv[1:]], env, cwd


def own_user_failure() -> str | None:
    """None when this process can run the child as a uid of its own (root, and an interpreter and
    numpy that uid can read); else why not. Tried once per process."""
    with _TRIED_LOCK:
        if "user" in _TRIED:
            return _TRIED["user"]                        # type: ignore[return-value]
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        found = "only root can run the checks as users of their own"
    else:
        try:
            done = subprocess.run([_python(), "-I", "-c", "import numpy"], user=USER_BASE, group=USER_BASE,
                                  extra_groups=[], capture_output=True, text=True, timeout=TRIAL_SECONDS, cwd="/",
                                  env={"PATH": "/usr/bin:/bin"}, stdin=subprocess.DEVNULL)
            said = (done.stderr.strip().splitlines() or [""])[-1]
            found = None if done.returncode == 0 else f"another user cannot run {_python()} with numpy: {said[:300]}"
        except (OSError, subprocess.SubprocessError) as error:
            found = f"another user cannot run {_python()}: {error}"
        finally:
            end_user(USER_BASE)
    with _TRIED_LOCK:
        _TRIED["user"] = found
    return found


def forget() -> None:
    """Try again on the next call (tests change PATH between cases)."""
    with _TRIED_LOCK:
        _TRIED.clear()


# --- choosing ------------------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class Isolation:
    """How the students' code is kept apart: ``kind`` "bubblewrap", "user" or "none"; ``words`` for
    the teacher's report; ``why_not``: why bubblewrap is not used (empty when it is)."""
    kind: str
    words: str
    why_not: str = ""

    def launcher(self, n: int = 0) -> Launcher:
        """The launcher of submission ``n`` (a uid of its own for each, with "user")."""
        if self.kind == "bubblewrap":
            return Bubblewrap()
        if self.kind == "user":
            return OwnUser(USER_BASE + 1 + n)
        return Plain()

    def report(self) -> str:
        return self.words + (f" ({self.why_not})" if self.why_not and self.kind != "bubblewrap" else "")


def for_check() -> Isolation:
    """`learn check`, the explorer and a notebook: bubblewrap where it runs, else a plain child."""
    failure = bubblewrap_failure()
    if failure is None:
        return Isolation("bubblewrap", Bubblewrap.describe)
    return Isolation("none", Plain.describe, failure)


def for_grade(no_sandbox: bool = False, gradescope: bool = False) -> Isolation:
    """`learn grade`: bubblewrap; else, as root, a user of its own per submission; else no isolation,
    which only ``no_sandbox`` or ``gradescope`` accept (NoIsolation otherwise)."""
    failure = bubblewrap_failure()
    if failure is None:
        return Isolation("bubblewrap", Bubblewrap.describe)
    user = own_user_failure()
    if user is None:
        return Isolation("user", OwnUser.describe, failure)
    if no_sandbox or gradescope:
        return Isolation("none", "no isolation: every submission ran as this user, able to read, write and signal "
                                 "what this user can", f"{failure}; {user}")
    raise NoIsolation(f"the students' code cannot be kept apart here: {failure}; {user}. Install bubblewrap "
                      "(apt-get install bubblewrap), or run the grader as root, or give --no-sandbox to grade "
                      "without isolation (a student's code could then read or change other submissions and the report)")
