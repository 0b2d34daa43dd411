"""The course as folders: ``path.toml`` (the order, in parts) and one folder per step.

A step's folder holds ``step.toml`` (its record: kind, title, what to read and, by kind, the
exercise's contract and mistakes, the Trace question, the card, the command), ``lesson.en.md`` and
``lesson.zh.md``, and for an Implement or Trace step ``check.py`` (the code: the reference, the
cases, the recognisers and mutants; a Trace step's ``answer()``). seqlab's own course is
``seqlab/learn/course``; a teacher's course folder has the same layout (:func:`load`). Nothing
outside a folder names its exercise except the path's one list.

    course = builtin()
    course.order                     # ("trace_recurrence", "scalar_recurrence", ...)
    course.folder("rnn_step").words("title", "zh")
    course.folder("rnn_step").module()   # its check.py, imported on first use
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import importlib.util
import sys
import tomllib
from pathlib import Path
from types import ModuleType

BUILT_IN = Path(__file__).resolve().parent / "course"
KINDS = ("implement", "trace", "card", "command")


class CourseError(ValueError):
    """A course folder that does not follow the layout; the message names the file."""


@dataclasses.dataclass(frozen=True)
class Folder:
    """One step's folder and its record (``step.toml``, read as it is)."""
    id: str
    path: Path
    record: dict
    module_prefix: str

    @property
    def kind(self) -> str:
        return self.record["kind"]

    def words(self, key: str, lang: str = "en", table: dict | None = None) -> str:
        """The text ``key`` of the record (or of ``table`` in it) in ``lang``; English where the
        language has none."""
        value = (self.record if table is None else table).get(key, "")
        if isinstance(value, dict):
            return value.get(lang) or value.get("en", "")
        return str(value)

    def lesson_path(self, lang: str) -> Path:
        return self.path / f"lesson.{lang}.md"

    def module(self) -> ModuleType | None:
        """The folder's ``check.py``, imported once (None when it has none)."""
        return _module(self.path / "check.py", f"{self.module_prefix}.{self.id}.check")


@functools.cache
def _module(path: Path, name: str) -> ModuleType | None:
    if not path.is_file():
        return None
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return module


@dataclasses.dataclass(frozen=True)
class Part:
    id: str
    title: dict
    steps: tuple[str, ...]


@dataclasses.dataclass(frozen=True)
class Course:
    """The steps of a course in order (``order``), in ``parts``, and every step folder it can reach
    (``folders``: also the cards and questions a command step asks, which are not on the path)."""
    root: Path
    parts: tuple[Part, ...]
    folders: dict[str, Folder]

    @property
    def order(self) -> tuple[str, ...]:
        return tuple(s for p in self.parts for s in p.steps)

    def folder(self, step: str) -> Folder:
        try:
            return self.folders[step]
        except KeyError:
            raise KeyError(f"{step!r} is not a step of the course in {self.root}") from None


def _read_toml(path: Path) -> dict:
    try:
        with open(path, "rb") as f:
            return tomllib.load(f)
    except OSError as error:
        raise CourseError(f"{path} cannot be read: {error}") from None
    except tomllib.TOMLDecodeError as error:
        raise CourseError(f"{path}: {error}") from None


def _folder(path: Path, prefix: str) -> Folder:
    record = _read_toml(path / "step.toml")
    if record.get("kind") not in KINDS:
        raise CourseError(f"{path / 'step.toml'}: kind must be one of {', '.join(KINDS)}, not {record.get('kind')!r}")
    if not isinstance(record.get("title"), dict) or not record["title"].get("en"):
        raise CourseError(f"{path / 'step.toml'}: needs a title, at least title.en = \"...\"")
    return Folder(path.name, path, record, prefix)


def _load(root: Path, prefix: str) -> Course:
    spec = _read_toml(root / "path.toml")
    folders = {p.name: _folder(p, prefix) for p in sorted(root.iterdir()) if (p / "step.toml").is_file()}
    parts = []
    for k, part in enumerate(spec.get("part", [])):
        steps = tuple(part.get("steps", ()))
        missing = [s for s in steps if s not in folders]
        if missing:
            raise CourseError(f"{root / 'path.toml'}: part {k + 1} names {', '.join(missing)}, "
                              f"which {'has' if len(missing) == 1 else 'have'} no folder with a step.toml in {root}")
        parts.append(Part(str(part.get("id", f"part{k + 1}")), dict(part.get("title", {})), steps))
    return Course(root, tuple(parts), folders)


@functools.cache
def builtin() -> Course:
    """seqlab's own course."""
    return _load(BUILT_IN, "seqlab.learn.course")


def active() -> Course:
    """The course being followed: seqlab's own (a teacher's course folder, once chosen, later)."""
    return builtin()


def load(root: str | Path) -> Course:
    """A course folder of the same layout as seqlab's (its modules get names of their own)."""
    root = Path(root).resolve()
    digest = hashlib.sha1(str(root).encode()).hexdigest()[:10]
    return _load(root, f"seqlab_course_{digest}")
