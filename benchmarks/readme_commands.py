"""Run the guide's commands (README.md, then the pages of docs/ it links, in GUIDE's order) in their
written order on a fresh copy of the repository, CPU-sized.

    python benchmarks/readme_commands.py [--keep DIR] [--clone] [--as-written] [--list]

Every fenced block of README.md carries a marker, an HTML comment on the line before it that the
rendered page does not show::

    <!-- readme-test: run -->                         run the block's commands
    <!-- readme-test: run; "--max-steps 1000" -> "--max-steps 30" -->
                                                      ... with a shorter budget (text replaced first)
    <!-- readme-test: skip: needs a GPU -->           do not run it, for the reason given
    <!-- readme-test: file ts.toml -->                the block is the file ts.toml: write it
    <!-- readme-test: run; given fra.tsv: your own pairs file -->
                                                      a path the reader brings (from here on); the run
                                                      leaves out the commands that read it
    <!-- readme-test: skip: a server; later runs/small -->
                                                      a path a block further down makes
    <!-- readme-test: run; needs /usr/bin/chromium --> skipped where that path is missing

The static part (:func:`check`, run by ``tests/test_readme.py`` in the default suite) parses every
command: each ``seqlab ...`` line (also after ``torchrun ... -m seqlab``) with seqlab's own argparse
parser, so every subcommand and flag must exist, and follows the paths: a path a command reads
(``--data-dir``, ``--run``, ``--config``, ``--resume``'s run, a TOML's ``data_dir``, ...) must be
shipped in the repository, written by an earlier command (or inside what it wrote), a ``file``
block, ``given`` or ``later``.

The run (:func:`run`, this script; ``tests/test_readme.py -m slow``) copies the repository's
tracked files (their working-tree contents; ``--clone`` takes a ``git clone`` of HEAD instead) into
a temporary directory and runs each ``run`` block there, command by command, with ``PYTHONPATH``
pointing at the copy. ``pip install`` commands are left out (this environment is installed);
a command that reads a path only a skipped command makes is skipped too, with the reason. Any
other failure stops the run and prints the command's output. It prints one line per block and the
total wall time.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# the guide: the README, then its reference pages, read (and run) in this order
GUIDE = ("README.md", "docs/learn.md", "docs/labs-and-explorer.md", "docs/tokenizer.md", "docs/training.md",
         "docs/experiments.md", "docs/interop.md", "docs/seq2seq.md", "docs/interpret.md")
MARKER = re.compile(r"<!--\s*readme-test:(.*?)-->", re.S)
REPLACEMENT = re.compile(r'"([^"]*)"\s*->\s*"([^"]*)"')
FENCE = re.compile(r"^```(\w*)\s*$")
SHELL_OPERATORS = {"|", "||", ";", "&", ">", ">>", "<", "2>", "2>&1"}

# argparse destinations of seqlab commands that name paths they read, or write
READ_DESTS = ("data_dir", "run", "runs", "input", "train", "valid", "config", "tokenizer", "tokenizer_dir",
              "data", "from_run", "pairs", "paths", "src")
WRITE_DESTS = ("out", "out_dir", "output", "screenshot")
# other programs the README runs: python -m MODULE -> (paths read, paths written) from its argv
OTHER_MODULES = {
    "pytest": lambda argv: ([], []),
}


@dataclass
class Block:
    """A fenced block of the README and what its marker says to do with it."""

    number: int  # 1-based, in README order
    line: int  # line of the opening fence
    lang: str
    text: str
    action: str = ""  # run | skip | file
    reason: str = ""  # why it is skipped
    file: str = ""  # the path of a file block
    replacements: list[tuple[str, str]] = field(default_factory=list)
    given: dict[str, str] = field(default_factory=dict)  # path -> what it is
    later: list[str] = field(default_factory=list)
    needs: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    source: str = "README.md"  # the file of the guide it is in

    def where(self) -> str:
        return f"{self.source}:{self.line} (block {self.number}, {self.lang or 'no language'})"

    def text_to_run(self, as_written: bool = False) -> str:
        text = self.text
        for old, new in [] if as_written else self.replacements:
            if old not in text:
                self.problems.append(f"{self.where()}: the replacement {old!r} is not in the block")
            text = text.replace(old, new)
        return text


@dataclass
class Command:
    """One command of a block: a logical line (continuations joined) or one part of an ``&&`` chain."""

    block: Block
    line: int
    argv: list[str]
    reads: list[str] = field(default_factory=list)
    writes: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        return shlex.join(self.argv)

    def where(self) -> str:
        return f"{self.block.source}:{self.line}: {self}"


def read_guide(root: Path = ROOT) -> list[Block]:
    """The blocks of every file of :data:`GUIDE` that exists under ``root``, numbered in reading order."""
    blocks: list[Block] = []
    for name in GUIDE:
        if (root / name).is_file():
            blocks += read_blocks((root / name).read_text(encoding="utf-8"), name, first=len(blocks) + 1)
    return blocks


def read_blocks(readme: str, source: str = "README.md", *, first: int = 1) -> list[Block]:
    """The fenced blocks of one file of the guide with their markers parsed (problems noted on each
    block), numbered from ``first``."""
    lines = readme.splitlines()
    blocks: list[Block] = []
    i = 0
    while i < len(lines):
        opened = FENCE.match(lines[i])
        if not opened:
            i += 1
            continue
        end = next((j for j in range(i + 1, len(lines)) if lines[j].startswith("```")), len(lines))
        block = Block(first + len(blocks), i + 1, opened.group(1), "\n".join(lines[i + 1:end]) + "\n", source=source)
        before = i - 1
        while before >= 0 and not lines[before].strip():
            before -= 1
        marker = MARKER.fullmatch(lines[before].strip()) if before >= 0 else None
        if marker is None:
            block.problems.append(f"{block.where()}: no <!-- readme-test: ... --> marker on the line before it")
        else:
            _parse_marker(block, marker.group(1))
        blocks.append(block)
        i = end + 1
    return blocks


def _parse_marker(block: Block, text: str) -> None:
    block.replacements = REPLACEMENT.findall(text)
    rest = REPLACEMENT.sub("", text)
    for part in (p.strip() for p in rest.split(";")):
        if not part:
            continue
        word, _, tail = part.partition(" ")
        if part in ("run",):
            block.action = "run"
        elif part.startswith("skip:") and part[5:].strip():
            block.action, block.reason = "skip", part[5:].strip()
        elif word == "file" and tail.strip():
            block.action, block.file = "file", tail.strip()
        elif word == "given" and ":" in tail:
            paths, why = tail.split(":", 1)
            block.given.update({p.strip(): why.strip() for p in paths.split(",") if p.strip()})
        elif word == "later" and tail.strip():
            block.later += [p.strip() for p in tail.split(",") if p.strip()]
        elif word == "needs" and tail.strip():
            block.needs.append(tail.strip())
        else:
            block.problems.append(f"{block.where()}: unknown marker part {part!r} (run | skip: REASON | file PATH | "
                                  '"OLD" -> "NEW" | given PATH: WHAT | later PATH | needs PATH)')
    if not block.action:
        block.problems.append(f"{block.where()}: the marker says neither run, skip: REASON nor file PATH")
    if block.action == "file" and block.lang in ("bash", "sh", ""):
        block.problems.append(f"{block.where()}: a file block must be a file's contents (toml, json, ...), not commands")
    if block.action == "run" and block.lang not in ("bash", "python"):
        block.problems.append(f"{block.where()}: only bash and python blocks can run")


def commands(block: Block, as_written: bool = False) -> list[Command]:
    """The commands of a bash block, with the marker's replacements applied unless ``as_written``."""
    if block.lang != "bash":
        return []
    found: list[Command] = []
    pending, start = "", 0
    for number, line in enumerate(block.text_to_run(as_written).splitlines(), block.line + 1):
        if not pending:
            start = number
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        logical, pending = pending + line, ""
        try:
            words = shlex.split(logical, comments=True)
        except ValueError as error:
            block.problems.append(f"{block.source}:{start}: cannot split {logical.strip()!r}: {error}")
            continue
        part: list[str] = []
        for word in [*words, "&&"]:
            if word != "&&":
                part.append(word)
            elif part:
                found.append(Command(block, start, part))
                part = []
    return found


def _parse_seqlab(argv: list[str]) -> argparse.Namespace:
    """argv after ``seqlab`` parsed by seqlab's parser; an error raises ValueError with argparse's words."""
    from seqlab.cli import build_parser

    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            return build_parser().parse_args(argv)
    except SystemExit:
        raise ValueError(err.getvalue().strip().splitlines()[-1] if err.getvalue().strip() else "argparse refused it")


def _paths(value) -> list[str]:
    values = value if isinstance(value, (list, tuple)) else [value]
    return [str(v) for v in values if isinstance(v, (str, os.PathLike))]


def _toml_paths(text: str) -> tuple[list[str], list[str]]:
    """data_dir and out_dir of a training config (flat or in sections)."""
    data = tomllib.loads(text)
    tables = [data, *(v for v in data.values() if isinstance(v, dict))]
    pick = lambda key: [t[key] for t in tables if isinstance(t.get(key), str)]  # noqa: E731
    return pick("data_dir"), pick("out_dir")


def analyse(command: Command, files: dict[str, str]) -> None:
    """Fill ``command.reads`` and ``writes``; a command seqlab's parser refuses raises ValueError.

    ``files``: the README's file blocks so far (path -> contents), for ``--config FILE``."""
    argv = command.argv
    if any(word in SHELL_OPERATORS for word in argv):
        raise ValueError("pipes and redirections are not run by the README test; write one command per line")
    program = argv[0]
    if program == "pip":
        return
    if program == "torchrun" or (program == "python" and argv[1:2] == ["-m"]):
        at = argv.index("-m") if "-m" in argv else -1
        if at < 0 or at + 1 >= len(argv):
            raise ValueError("torchrun without -m MODULE")
        module, rest = argv[at + 1], argv[at + 2:]
        if module != "seqlab":
            if module not in OTHER_MODULES:
                raise ValueError(f"python -m {module} is not known to benchmarks/readme_commands.py (OTHER_MODULES)")
            import importlib.util

            if importlib.util.find_spec(module) is None:
                raise ValueError(f"no module named {module}")
            command.reads, command.writes = OTHER_MODULES[module](rest)
            return
        argv = ["seqlab", *rest]
    elif program != "seqlab":
        raise ValueError(f"{program} is not a command the README test knows (seqlab, torchrun, python -m, pip)")
    args = _parse_seqlab(argv[1:])
    for dest in READ_DESTS:
        command.reads += _paths(getattr(args, dest, None))
    for dest in WRITE_DESTS:
        command.writes += _paths(getattr(args, dest, None))
    if getattr(args, "resume", False):
        command.reads += _paths(getattr(args, "out_dir", None))
    config = getattr(args, "config", None)
    if config and str(config).endswith(".toml") and str(config) in files:
        data_dirs, out_dirs = _toml_paths(files[str(config)])
        if getattr(args, "data_dir", None) is None:
            command.reads += data_dirs
        if not any(getattr(args, d, None) for d in WRITE_DESTS):
            command.writes += out_dirs


def _norm(path: str) -> str:
    return os.path.normpath(path.rstrip("/")) if path else path


def _inside(path: str, roots) -> bool:
    path = _norm(path)
    return any(path == _norm(r) or path.startswith(_norm(r) + "/") for r in roots)


def shipped_paths(root: Path = ROOT) -> set[str]:
    """Tracked files and every folder above one (``git ls-files``)."""
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=root, capture_output=True, check=True).stdout
    paths = set()
    for name in listed.decode().split("\0"):
        parts = name.split("/")
        paths.update("/".join(parts[:i]) for i in range(1, len(parts) + 1) if name)
    return paths


def check(readme: str, shipped: set[str]) -> list[str]:
    """Every problem of one text's blocks and commands, as "README.md:LINE: ..." sentences."""
    return check_blocks(read_blocks(readme), shipped)


def check_guide(root: Path = ROOT) -> list[str]:
    """Every problem of the whole guide (README.md and its docs/ pages, read in order)."""
    return check_blocks(read_guide(root), shipped_paths(root))


def check_blocks(blocks: list[Block], shipped: set[str]) -> list[str]:
    """Every problem of ``blocks`` (in reading order) and their commands, as "FILE:LINE: ..." sentences."""
    file_blocks = {b.file: b.text for b in blocks if b.action == "file"}
    problems: list[str] = []
    as_written: dict[int, list[Command]] = {}
    for block in blocks:
        for written_so in (True, False):  # as the reader types them, and as the run shortens them
            cmds = commands(block, as_written=written_so)
            for cmd in cmds:
                try:
                    analyse(cmd, file_blocks)
                except ValueError as error:
                    problems.append(f"{cmd.where()}: {error}")
            if written_so:
                as_written[block.number] = cmds
    everything_written = [path for cmds in as_written.values() for cmd in cmds for path in cmd.writes]
    written: list[str] = []
    given: list[str] = []  # the reader's from the block that names them on
    for block in blocks:
        problems += block.problems
        given += block.given
        if block.action == "file":
            if block.file.endswith(".toml"):
                try:
                    _toml_paths(block.text)
                except tomllib.TOMLDecodeError as error:
                    problems.append(f"{block.where()}: {block.file} is not valid TOML: {error}")
            written.append(block.file)
        if block.lang == "python":
            try:
                compile(block.text, block.where(), "exec")
            except SyntaxError as error:
                problems.append(f"{block.where()}: {error}")
        for path in block.later:
            if not _inside(path, everything_written):
                problems.append(f"{block.where()}: 'later {path}', but no command of the guide writes it")
        for cmd in as_written[block.number]:
            for path in cmd.reads:
                if not (_norm(path) in shipped or _inside(path, [*written, *given, *block.later])):
                    problems.append(f"{cmd.where()}: reads {path}, which no earlier command writes, the repository "
                                    "does not ship, and the marker does not list as given or later")
            written += cmd.writes
    return list(dict.fromkeys(problems))


def analysed_commands(blocks: list[Block], as_written: bool = True) -> list[Command]:
    """Every command of ``blocks`` in order, with what it reads and writes (unparsable ones without)."""
    files = {b.file: b.text for b in blocks if b.action == "file"}
    found = [cmd for block in blocks for cmd in commands(block, as_written)]
    for cmd in found:
        analyse_quietly(cmd, files)
    return found


def analyse_quietly(cmd: Command, files: dict[str, str]) -> None:
    """:func:`analyse`, for a command :func:`check` has already passed (errors ignored)."""
    with contextlib.suppress(ValueError):
        analyse(cmd, files)


# -- running ------------------------------------------------------------------------------------


def fresh_copy(target: Path, clone: bool) -> None:
    """The repository's tracked files (working-tree contents), or a ``git clone`` of HEAD, at ``target``."""
    if clone:
        subprocess.run(["git", "clone", "--quiet", str(ROOT), str(target)], check=True)
        return
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    for name in filter(None, listed.decode().split("\0")):
        source = ROOT / name
        if source.is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)


def run(work: Path, *, as_written: bool = False, seqlab_from: Path | None = None, timeout_s: float = 1800,
        say=print) -> float:
    """Run the blocks of the guide in ``work`` (a fresh copy: its README.md, then its docs/ pages), with
    the seqlab package of ``seqlab_from`` (default: ``work``); returns the wall time. A failing command
    raises RuntimeError naming it, with the end of its output."""
    blocks = read_guide(work)
    package = (seqlab_from or work).resolve()
    env = {**os.environ, "PYTHONPATH": str(package), "PYTHONUNBUFFERED": "1"}
    where = subprocess.run([sys.executable, "-c", "import seqlab; print(seqlab.__file__)"], cwd=work, env=env,
                           capture_output=True, text=True, check=True).stdout.strip()
    if not where.startswith(str(package)):
        raise RuntimeError(f"seqlab is imported from {where}, not from {package}")
    files: dict[str, str] = {}
    missing: dict[str, str] = {}  # path -> why it is not there (made by a skipped command, or the reader's)
    started = time.perf_counter()
    for block in blocks:
        label = f"block {block.number:2d} ({block.source}:{block.line})"
        if block.action == "file":
            (work / block.file).parent.mkdir(parents=True, exist_ok=True)
            (work / block.file).write_text(block.text, encoding="utf-8")
            files[block.file] = block.text
            say(f"{label}: wrote {block.file}")
            continue
        absent = [p for p in block.needs if not Path(p).exists()]
        skip_all = block.reason if block.action == "skip" else (f"needs {', '.join(absent)}" if absent else "")
        missing.update({_norm(p): f"the reader brings it: {why}" for p, why in block.given.items()})
        cmds = commands(block, as_written)
        for cmd in cmds:
            analyse_quietly(cmd, files)
        if skip_all:
            missing.update({_norm(p): f"block {block.number} is skipped: {skip_all}" for c in cmds for p in c.writes})
            say(f"{label}: skipped ({skip_all})")
            continue
        t0, ran, notes = time.perf_counter(), 0, []
        if block.lang == "python":
            _execute([sys.executable, "-c", block.text_to_run(as_written)], f"{block.where()}", work, env, timeout_s)
            ran = 1
        for cmd in cmds:
            why = "pip: this environment is installed" if cmd.argv[0] == "pip" else next(
                (f"it reads {p}; {why}" for p in cmd.reads for m, why in missing.items() if _inside(p, [m])), "")
            if why:
                notes.append(f"left out `{' '.join(cmd.argv[:3])} ...` ({why})")
                missing.update({_norm(p): f"{block.source}:{cmd.line} is left out" for p in cmd.writes})
                continue
            _execute(["bash", "-c", str(cmd)], cmd.where(), work, env, timeout_s)
            for path in cmd.writes:
                missing.pop(_norm(path), None)
            ran += 1
        say(f"{label}: ran {ran} command(s) in {time.perf_counter() - t0:.1f} s" + "".join(f"; {n}" for n in notes))
    return time.perf_counter() - started


def _execute(argv: list[str], what: str, cwd: Path, env: dict, timeout_s: float) -> None:
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout_s)
    if done.returncode != 0:
        output = (done.stdout + done.stderr)[-4000:]
        raise RuntimeError(f"{what} exited with status {done.returncode}:\n{output}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", type=Path, metavar="DIR", help="run in DIR (a new directory) and keep it")
    parser.add_argument("--clone", action="store_true", help="a git clone of HEAD instead of the working tree's files")
    parser.add_argument("--as-written", action="store_true", help="ignore the markers' shorter budgets")
    parser.add_argument("--list", action="store_true", help="print the static check's problems and the blocks; run nothing")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    problems = check_guide(ROOT)
    for problem in problems:
        print(problem, file=sys.stderr)
    if args.list:
        for block in read_guide(ROOT):
            print(f"block {block.number:2d} {block.source}:{block.line} {block.lang:7s} {block.action} "
                  f"{block.reason or block.file}")
        return 1 if problems else 0
    if problems:
        return 1
    with contextlib.ExitStack() as stack:
        if args.keep:
            args.keep.mkdir(parents=True)
            work = args.keep.resolve()
        else:
            work = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="readme-"))) / "seqlab"
            work.mkdir()
        fresh_copy(work, args.clone)
        try:
            seconds = run(work, as_written=args.as_written)
        except RuntimeError as error:
            print(f"FAILED: {error}", file=sys.stderr)
            return 1
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"the guide's commands ran in order in {seconds:.0f} s (load average {load:.1f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
