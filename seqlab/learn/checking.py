"""Checking a student's exercise from wherever they work, into one workspace and one progress.

:func:`check` is the notebook's (``from seqlab.learn import check``)::

    check("rnn_bptt", rnn_bptt)          # a function of the notebook (def, not a lambda): its source -> seqlab-learn/rnn_bptt.py
    check("rnn_bptt", "my/rnn_bptt.py")  # a file

Either way the code is ``WORKSPACE/NAME.py`` (default ./seqlab-learn; a different file there is kept as
NAME.py.TIME.bak first, never overwritten), the file `seqlab learn check`
and the explorer check. :func:`check_file` checks it as `seqlab learn check` does (the student's code
runs in a child process with a time limit, ``seqlab.learn.runner``), records the step with the
check's summary (the explorer shows the latest check, :func:`latest_check`); :func:`check` returns
a :class:`CheckReport` (``.passed``; HTML in a notebook, text in a terminal).
"""

from __future__ import annotations

import dataclasses
import html
import inspect
import os
import textwrap
import time
import types
from pathlib import Path

from seqlab.atomic import atomic_path, atomic_write_text
from seqlab.learn.workspace import DEFAULT_WORKSPACE, ProgressError, read_progress

WRITTEN_BY = "# Written by seqlab.learn.check from your notebook"


def summary(report, sha256: str | None = None) -> dict:
    """What the explorer shows of a check: passed, each check, the diagnosis, the notes, when, and
    the hash of the file checked (``sha256``, when given: the explorer's "yours" panels reuse a check
    of the file as it is now)."""
    return {"passed": report.passed, "exercise": report.exercise, "checks": report.checks,
            "diagnosis": report.diagnosis, "notes": list(report.notes), "conventions": list(report.conventions),
            "file": report.file, "at": time.strftime("%Y-%m-%dT%H:%M:%S"), **({"sha256": sha256} if sha256 else {})}


def latest_check(workspace: Path, name: str) -> dict | None:
    """The summary of the latest recorded check of ``name`` (None: never checked, or unreadable)."""
    try:
        entry = read_progress(Path(workspace))["steps"].get(name)
    except (OSError, ProgressError):
        return None
    check = entry.get("check") if isinstance(entry, dict) else None
    return check if isinstance(check, dict) else None


def check_file(workspace: Path, name: str, time_limit: float | None = None):
    """Check ``WORKSPACE/NAME.py`` as ``seqlab learn check NAME`` does, in a bubblewrap sandbox where one
    runs (``seqlab.learn.sandbox.for_check``); without one, the workspace's lock is held while the
    student's code runs and what it writes to progress.json is undone, and a note says so once per
    workspace (``report.sandbox_note``: why, and the note's English in ``report.notes``). The step is recorded with the hash of the file checked and the
    check's summary. Returns (report, a warning when progress.json could not be written, or None).
    FileNotFoundError when the file is not there; WorkspaceError when it lies outside the workspace."""
    from seqlab.learn.catalog import exercise
    from seqlab.learn.judge import run_checks
    from seqlab.learn.sandbox import for_check
    from seqlab.learn.workspace import exercise_file, file_sha256, note_once, progress_kept, progress_lock, record_check
    ex = exercise(name)
    if ex is None:
        raise KeyError(f"no Implement exercise {name!r}")
    workspace = Path(workspace)
    path = exercise_file(workspace, name)
    if not path.is_file():
        raise FileNotFoundError(f"{path} does not exist; write it first with: seqlab learn start {name}")
    digest = file_sha256(path)                  # the file as it is checked
    isolation = for_check()
    if isolation.kind == "bubblewrap":          # the student's code cannot see progress.json
        report = run_checks(ex, path, time_limit=time_limit, launcher=isolation.launcher())
    else:
        with progress_lock(workspace), progress_kept(workspace):   # what the code writes there is undone
            report = run_checks(ex, path, time_limit=time_limit, launcher=isolation.launcher())
    try:
        if isolation.kind != "bubblewrap":
            from seqlab.learn.words import say
            text = say("cli.no_sandbox", "en", why=isolation.why_not).removeprefix("note: ")
            if note_once(workspace, "no sandbox", text):
                report.notes.append(text)
                report.sandbox_note = isolation.why_not
        record_check(workspace, name, report.passed, sha256=digest, check=summary(report, digest))
    except (OSError, ProgressError) as error:
        return report, f"progress not saved: {error}"
    return report, None


# --- the notebook's check ------------------------------------------------------------------------------
_MISSING = object()


def _code_objects(code: types.CodeType):
    yield code
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _code_objects(const)


def _source(obj) -> str:
    try:
        return textwrap.dedent(inspect.getsource(obj)).rstrip() + "\n"
    except (OSError, TypeError):
        raise ValueError(f"cannot read the source of {getattr(obj, '__name__', obj)!r}: define it in a notebook "
                         "cell or a file (not with exec), or pass the path of its file to check()") from None


def source_file(name: str, function) -> str:
    """A file that defines ``name`` as ``function`` does, for the child process to import: a function
    of an importable module is imported from it; one defined in a notebook (``__main__``) is written
    out with what it uses from the notebook: its modules as imports, the notebook's functions and
    classes it calls (their source, in turn), and its plain constants."""
    module = inspect.getmodule(function)
    alias = [] if function.__name__ == name else [f"\n{name} = {function.__name__}\n"]
    if module is not None and module.__name__ != "__main__" and getattr(module, "__file__", None):
        return f"{WRITTEN_BY}: its module's function.\nfrom {module.__name__} import {function.__name__}\n" + "".join(alias)
    imports: dict[str, str] = {}
    constants: dict[str, str] = {}
    definitions: dict[str, str] = {}

    def collect(fn) -> None:
        namespace = getattr(fn, "__globals__", {})
        codes = _code_objects(fn.__code__) if hasattr(fn, "__code__") else ()
        for code in codes:
            for n in code.co_names:
                value = namespace.get(n, _MISSING)
                if value is _MISSING or n in definitions or n in imports or n in constants:
                    continue
                if isinstance(value, types.ModuleType):
                    imports[n] = (f"import {value.__name__}" if value.__name__ == n
                                  else f"import {value.__name__} as {n}")
                elif (inspect.isfunction(value) or inspect.isclass(value)) and value.__module__ == fn.__module__:
                    definitions[n] = _source(value)
                    if inspect.isfunction(value):
                        collect(value)
                    else:
                        for member in vars(value).values():
                            if inspect.isfunction(member):
                                collect(member)
                elif callable(value) and getattr(value, "__module__", None) and getattr(value, "__name__", None):
                    imports[n] = f"from {value.__module__} import {value.__name__}" + (
                        "" if value.__name__ == n else f" as {n}")
                elif isinstance(value, (bool, int, float, str, type(None))) or (
                        isinstance(value, tuple) and all(isinstance(v, (bool, int, float, str)) for v in value)):
                    constants[n] = f"{n} = {value!r}"

    definitions[function.__name__] = _source(function)
    collect(function)
    own = definitions.pop(function.__name__)
    parts = [WRITTEN_BY + " (the function and what it uses); `seqlab learn check`,\n"
             "# the explorer and the notebook all check this file.\n"]
    if imports:
        parts.append("\n".join(sorted(imports.values())) + "\n")
    if constants:
        parts.append("\n".join(constants.values()) + "\n")
    parts += [f"\n{text}" for text in definitions.values()]
    parts += [f"\n{own}", *alias]
    return "\n".join(parts)


def _write_workspace_file(workspace: Path, name: str, text: str) -> Path | None:
    """``WORKSPACE/NAME.py`` with ``text``; a different file there is first kept as NAME.py.TIME.bak
    (as `seqlab learn reset` keeps it), never overwritten. Returns the backup, or None."""
    from seqlab.learn.workspace import backup_path, exercise_file
    workspace = Path(workspace)
    workspace.mkdir(parents=True, exist_ok=True)
    path = exercise_file(workspace, name)
    backup = None
    if path.is_file():
        old = path.read_bytes()
        if old != text.encode("utf-8"):
            backup = backup_path(workspace, name)
            with atomic_path(backup) as tmp:
                tmp.write_bytes(old)
    atomic_write_text(path, text)
    return backup


def _refuse_unreadable(name: str, function) -> None:
    """ValueError, before anything is written, for what check() cannot turn into a file: a lambda, a
    callable that is no function (a partial, a built-in, a class), a function whose source cannot be
    read (defined with exec)."""
    if not inspect.isfunction(function):
        raise ValueError(f"check({name!r}, ...) needs a function defined with def, or the path of its file; "
                         f"got {type(function).__name__} {function!r}")
    if function.__name__ == "<lambda>":
        raise ValueError(f"check({name!r}, ...) was given a lambda: define it with def in a cell "
                         f"(def {name}(...): ...) and pass that function, or pass the path of its file")
    try:
        inspect.getsource(function)
    except (OSError, TypeError):
        raise ValueError(f"check({name!r}, ...) cannot read the source of {function.__name__!r} (defined with exec, "
                         "or its file is gone): define it in a notebook cell or a file, or pass the path of its "
                         "file") from None


@dataclasses.dataclass
class CheckReport:
    """A check's outcome: ``passed``, the checks, the diagnosis; text in a terminal, HTML in a notebook."""
    report: object
    title: str
    warning: str | None = None
    lang: str = "en"

    @property
    def passed(self) -> bool:
        return self.report.passed

    @property
    def checks(self) -> list[dict]:
        return self.report.checks

    @property
    def diagnosis(self) -> dict | None:
        return self.report.diagnosis

    def _say(self, key: str, **values) -> str:
        from seqlab.learn.words import say
        return say(key, self.lang, **values)

    def __str__(self) -> str:
        from seqlab.learn.feedback import report_lines
        lines = [f"{self.report.exercise}: {self.title}  ({self.report.file})", *report_lines(self.report, self.lang)]
        if self.report.sandbox_note:
            lines.append("  " + self._say("cli.no_sandbox", why=self.report.sandbox_note))
        if self.warning:
            lines.append(f"  {self._say('notebooks.warning')}{self.warning}")
        lines.append(self._say("notebooks.check_passed" if self.passed else "notebooks.check_not_yet"))
        return "\n".join(lines)

    __repr__ = __str__

    def _repr_html_(self) -> str:
        """The diagnosis first (title, where, explanation, what to read), the notes, then the checks,
        in the notebook's language."""
        from seqlab.learn.feedback import check_rows, diagnosis_words, reading, where_words
        e = html.escape
        out = [f"<div class='seqlab-check'><p><b>{e(self.report.exercise)}</b>: {e(self.title)} "
               f"<code>{e(self.report.file)}</code></p>"]
        d = self.diagnosis
        if d:
            title, explanation = diagnosis_words(d, self.report.exercise, self.lang)
            said_where = where_words(d, self.lang)
            r = reading(d, self.report.exercise, self.lang)
            where = (f"<p><i>{e(self._say('feedback.where'))}{e(said_where)}</i></p>"
                     if said_where and said_where not in explanation else "")
            heading = f"“{e(r['heading'])}” " if r["heading"] else ""
            out.append(f"<p style='color:#b91c1c'><b>{e(self._say('feedback.diagnosis'))}{e(title)}</b></p>{where}"
                       f"<p>{e(explanation)}</p><p>{e(self._say('feedback.read'))}{heading}<code>{e(r['command'])}</code>"
                       f"{e(self._say('notebooks.in_explorer'))}<a href='{e(r['url'])}' target='_blank'>{e(r['url'])}</a></p>")
        out += [f"<p>{e(self._say('feedback.note'))}{e(note)}</p>" for note in self.report.notes]
        rows = check_rows(self.checks, self.lang, named=bool((d or {}).get("mistake")), exercise_name=self.report.exercise)
        out.append("<table>" + "".join(f"<tr><td style='color:{'#15803d' if passed else '#b91c1c'};font-weight:600'>"
                                       f"{'PASS' if passed else 'FAIL'}</td><td>{e(name)}</td><td>{e(message)}</td></tr>"
                                       for passed, name, message, _ in rows) + "</table>")
        if self.warning:
            out.append(f"<p>{e(self._say('notebooks.warning'))}{e(self.warning)}</p>")
        color = "#15803d" if self.passed else "#b91c1c"
        verdict = self._say("notebooks.check_passed" if self.passed else "notebooks.check_not_yet")
        out.append(f"<p style='color:{color};font-weight:600'>{e(verdict)}</p></div>")
        return "".join(out)


def check(name: str, target, workspace: str | os.PathLike = DEFAULT_WORKSPACE,
          time_limit: float | None = None, lang: str = "en") -> CheckReport:
    """Check the exercise ``name`` on ``target``: a function (written to ``WORKSPACE/NAME.py``) or the
    path of a file; record it in the workspace's progress, as ``seqlab learn check`` does. ``lang``:
    the report's language ("zh": Chinese)."""
    from seqlab.learn.catalog import exercise
    from seqlab.learn.path import STEPS
    ex = exercise(name)
    if ex is None:
        import difflib
        names = [s.id for s in STEPS if s.kind == "implement"]
        close = difflib.get_close_matches(str(name), names, n=1)
        raise ValueError(f"no Implement exercise {name!r}" + (f"; did you mean {close[0]!r}?" if close else "")
                         + f" The exercises are: {', '.join(names)}")
    workspace = Path(workspace)
    if callable(target):
        _refuse_unreadable(name, target)
        text = source_file(name, target)
        try:
            compile(text, f"{name}.py", "exec")
        except SyntaxError as error:
            raise ValueError(f"check({name!r}, ...): the source written from your function would not run "
                             f"(line {error.lineno}: {error.msg}); {workspace / (name + '.py')} is left as it was") from None
        _write_workspace_file(workspace, name, text)
    else:
        path = Path(target)
        if not path.is_file():
            raise FileNotFoundError(f"{path} does not exist: pass your function, or the path of its file")
        if path.resolve() != (workspace / f"{name}.py").resolve():      # the workspace holds the one copy
            _write_workspace_file(workspace, name, path.read_text(encoding="utf-8"))
    report, warning = check_file(workspace, name, time_limit)
    return CheckReport(report, ex.title_zh if lang == "zh" and ex.title_zh else ex.title, warning,
                       "zh" if lang == "zh" else "en")
