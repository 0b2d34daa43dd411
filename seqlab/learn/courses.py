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


@dataclasses.dataclass(frozen=True, eq=False)
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


def _load(root: Path, prefix: str, also: dict | None = None) -> Course:
    """The course in ``root``; its parts may name the folders of ``also`` too (seqlab's own steps)."""
    spec = _read_toml(root / "path.toml")
    folders = {p.name: _folder(p, prefix) for p in sorted(root.iterdir()) if (p / "step.toml").is_file()}
    reachable = {**(also or {}), **folders}
    parts = []
    for k, part in enumerate(spec.get("part", [])):
        steps = tuple(part.get("steps", ()))
        missing = [s for s in steps if s not in reachable]
        if missing:
            raise CourseError(f"{root / 'path.toml'}: part {k + 1} names {', '.join(missing)}, "
                              f"which {'has' if len(missing) == 1 else 'have'} no folder with a step.toml in {root}"
                              + (" nor in seqlab's course" if also else ""))
        parts.append(Part(str(part.get("id", f"part{k + 1}")), dict(part.get("title", {})), steps))
    return Course(root, tuple(parts), folders)


@functools.cache
def builtin() -> Course:
    """seqlab's own course."""
    return _load(BUILT_IN, "seqlab.learn.course")


_ACTIVE: list[Course] = []


def active() -> Course:
    """The course this process follows: the one :func:`use` chose, else seqlab's own."""
    return _ACTIVE[0] if _ACTIVE else builtin()


def use(root: str | Path | None) -> Course:
    """Follow the course folder ``root`` (None: seqlab's own) in this process. The course is chosen once,
    before the path is read (``seqlab learn --course DIR`` does it first); choosing another after that
    is a CourseError."""
    course = builtin() if root is None else load(root)
    if _ACTIVE and _ACTIVE[0].root != course.root:
        raise CourseError(f"this process follows the course in {_ACTIVE[0].root} already; it cannot switch to "
                          f"{course.root} (run another command)")
    if not _ACTIVE and course.root != BUILT_IN and "seqlab.learn.path" in sys.modules:
        raise CourseError("the course must be chosen before seqlab.learn.path is imported")
    _ACTIVE[:] = [course]
    return course


@functools.cache
def load(root: str | Path) -> Course:
    """A teacher's course folder: its ``path.toml`` and step folders of seqlab's layout (its modules get
    names of their own, so it cannot change seqlab's). The path.toml says which of seqlab's own steps
    the course keeps (``keep = "all"``, the default, ``"none"`` or a list of steps; ``hide = [...]``
    leaves some out) and lists its own parts (``[[part]]``: ``id``, ``title``, ``steps``, and ``after``,
    the id of one of seqlab's parts to follow; by default they come last). A folder of the course
    named like one of seqlab's steps replaces it, where it stands."""
    root = Path(root).resolve()
    if not (root / "path.toml").is_file():
        raise CourseError(f"{root} is not a course folder: it has no path.toml (docs/learn.md, \"Write an exercise\")")
    digest = hashlib.sha1(str(root).encode()).hexdigest()[:10]
    own = _load(root, f"seqlab_course_{digest}", builtin().folders)
    spec = _read_toml(root / "path.toml")
    base = builtin()
    keep, hide = spec.get("keep", "all"), set(spec.get("hide", ()))
    kept = set(base.order) if keep == "all" else set() if keep == "none" else set(keep)
    unknown = sorted((kept | hide) - set(base.folders))
    if unknown:
        raise CourseError(f"{root / 'path.toml'}: keep and hide name steps seqlab's course does not have: "
                          f"{', '.join(unknown)}")
    kept -= hide
    parts = [Part(p.id, p.title, tuple(s for s in p.steps if s in kept)) for p in base.parts]
    for part in own.parts:
        after = next((p for p in spec.get("part", []) if p.get("id") == part.id), {}).get("after")
        at = next((k + 1 for k, p in enumerate(parts) if p.id == after), len(parts))
        parts.insert(at, part)
    folders = {**base.folders, **own.folders}
    return Course(root, tuple(p for p in parts if p.steps), folders)
