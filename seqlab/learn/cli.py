"""`seqlab learn`: the learning path, its exercises and their checks.

    seqlab learn                       the path, each step todo / started / passed / changed: check again
    seqlab learn next [--show]         the current step: its lesson, then what to do (a Trace question in full)
    seqlab learn show NAME [--show]    one step's lesson and task (--show: the answers; --json: as data)
    seqlab learn start NAME            write WORKSPACE/NAME.py (never over an existing file)
    seqlab learn check [NAME] [--json] exit 0 when every check passes, 1 when one fails, 2 on usage;
                                       no NAME: the current step; a command step: what its command wrote
    seqlab learn hint NAME             one more graded hint each time (the idea, the shapes, the key line)
    seqlab learn reset NAME            a fresh stub; the old file is kept as NAME.py.TIME.bak
    seqlab learn answer NAME VALUE     a Trace question (--show: the worked solution)
    seqlab learn card NAME             an Explain / Derive card: your answer first (a prompt, or
                                       --answer TEXT), then the worked one, then --mark same|partly|missed
    seqlab learn solution NAME         the reference implementation's source
    seqlab learn grade SUBMISSIONS --out REPORT    a class's workspaces graded (or --gradescope)
    seqlab learn notebook [PART ...] --out DIR     the course as Jupyter notebooks (--list: the parts)
    seqlab learn site --out DIR                    the course as a static site, both languages, to host

The workspace (--workspace, default ./seqlab-learn) holds the student's files and progress.json.
"""

from __future__ import annotations

import argparse
import difflib
import json
import shlex
import sys
from pathlib import Path

DEFAULT_WORKSPACE = "seqlab-learn"     # = seqlab.learn.workspace.DEFAULT_WORKSPACE (no import at the top)

_LANGS = {"en": 0, "zh": 1}


def register(subparsers) -> None:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--workspace", type=Path, default=argparse.SUPPRESS,
                        help=f"the student's folder: exercise files and progress.json (default: ./{DEFAULT_WORKSPACE})")
    common.add_argument("--lang", choices=sorted(_LANGS), default=argparse.SUPPRESS, help="en (default) or zh (Chinese)")
    common.add_argument("--course", type=Path, default=argparse.SUPPRESS, metavar="DIR",
                        help="a teacher's course folder (path.toml and step folders; docs/learn.md); also "
                             "SEQLAB_COURSE; the workspace remembers it")
    parser = subparsers.add_parser(
        "learn", parents=[common], help="the learning path: exercises checked by seqlab, with diagnoses",
        description="The course as a path of steps: read, look at the explorer widget, do an exercise. "
                    "Implement exercises are checked (shapes, values, gradients, invariants) with a diagnosis "
                    "of the most likely mistake.")
    parser.set_defaults(func=_in_course(show_path))
    sub = parser.add_subparsers(dest="learn_command", metavar="COMMAND")

    def command(name, func, help, *, step=True):
        """A subcommand with the common options; step: it takes the NAME of a step of the path."""
        p = sub.add_parser(name, parents=[common], help=help)
        if step:
            p.add_argument("name")
        p.set_defaults(func=_in_course(func))
        return p

    for name, func, help in (("next", show_next, "the current step: its lesson and what to do"),
                             ("show", show_step, "one step: its lesson (maths, figures, questions) and what to do")):
        p = command(name, func, help, step=name == "show")
        p.add_argument("--show", action="store_true", help="with the questions' answers and the worked solution")
        p.add_argument("--json", action="store_true", help="print the step as JSON (name, title, kind, sections, "
                       "questions, figures, reading, task)")
    command("start", start_exercise, "write WORKSPACE/NAME.py for an Implement exercise")
    p = command("check", check_exercise, "check WORKSPACE/NAME.py, or a command step's results "
                                         "(no NAME: the current step; exit 0 pass, 1 fail, 2 usage)", step=False)
    p.add_argument("name", nargs="?", default=None, help="a step of the path (default: the current step)")
    p.add_argument("--json", action="store_true", help="print the checks and the diagnosis as JSON")
    p.add_argument("--time-limit", type=float, default=None, metavar="S",
                   help="seconds the student's code may run for the check (default: the exercise's, 10 s for NumPy)")
    p.add_argument("--out", type=Path, default=None, metavar="DIR",
                   help="a command step: the folder its command wrote (default: the command's --out)")
    p.add_argument("--lesson-url", default=None, metavar="URL",
                   help="a hosted copy of the lessons (seqlab learn site): the diagnosis links to "
                        "URL/LANG/STEP.html#mistake-ID instead of the explorer")
    command("hint", show_hint, "one more hint for a step each time: the idea, then the shapes, then the key line")
    command("reset", reset_exercise, "write a fresh stub for NAME; the old file is kept as NAME.py.TIME.bak")
    command("solution", show_solution, "show the reference implementation")
    p = command("answer", answer_question, "answer a Trace question: numbers separated by commas")
    p.add_argument("value", nargs="?", default=None, help='e.g. "0.4" or "0.6698, 0.3302"')
    p.add_argument("--show", action="store_true", help="show the worked solution")
    p = command("notebook", write_notebooks, "write the course as Jupyter notebooks, one per part", step=False)
    p.add_argument("parts", nargs="*", metavar="PART", help="the parts to write (default: all; --list names them)")
    p.add_argument("--out", type=Path, default=None, metavar="DIR", help="the folder to write them into")
    p.add_argument("--list", action="store_true", help="list the parts and their steps")
    p.add_argument("--repo", default=None, metavar="URL", help="the git URL the first cell installs seqlab from "
                   "(default: the Repository of pyproject.toml's [project.urls]; never a local path)")
    p = command("site", write_site, "write the course as a static site (HTML, both languages) to host", step=False)
    p.add_argument("--out", type=Path, default=None, metavar="DIR", help="the folder to write the site into "
                   "(replaced whole; an existing one may hold only a site's files)")
    p = command("card", show_card, "an Explain / Derive card: write your answer, see the worked one, mark it")
    p.add_argument("--answer", default=None, metavar="TEXT", help="your answer, in your own words (then the "
                   "worked answer is shown)")
    p.add_argument("--mark", choices=("same", "partly", "missed"), default=None,
                   help="how your answer compares with the worked one (\"same\" passes the card)")
    p.add_argument("--reveal", action="store_true", help="show the worked answer again (after you wrote yours)")
    p = sub.add_parser("grade", help="grade a class: one workspace folder (or zip) per student",
                       description="Check every student's workspace the way `seqlab learn check` does; write "
                                   "grades.csv, grades.json, totals.csv, summary.md and summary.png (or Gradescope's results.json).")
    p.set_defaults(func=_in_course(grade_class, workspace=False))
    p.add_argument("--course", type=Path, default=None, metavar="DIR",
                   help="a teacher's course folder whose exercises are graded (also SEQLAB_COURSE)")
    p.add_argument("submissions", nargs="?", type=Path, default=None, metavar="SUBMISSIONS",
                   help="a folder holding one workspace folder or .zip per student (the name is the student)")
    p.add_argument("--out", type=Path, default=None, metavar="REPORT",
                   help="where grades.csv, grades.json, totals.csv, summary.md and summary.png go")
    p.add_argument("--gradescope", action="store_true",
                   help="Gradescope's autograder: read /autograder/submission, write /autograder/results/results.json")
    p.add_argument("--points", type=Path, default=None, metavar="FILE",
                   help="a TOML table of exercise = points (default: 1 point per exercise)")
    p.add_argument("--lang", choices=sorted(_LANGS), default=argparse.SUPPRESS,
                   help="the language of the feedback students read on Gradescope: en (default) or zh")
    p.add_argument("--lesson-url", default=None, metavar="URL",
                   help="Gradescope: a hosted copy of the lessons (seqlab learn site); the feedback links to "
                        "URL/LANG/STEP.html#mistake-ID (without it, no link: the lesson's paragraph is inline)")
    p.add_argument("--workers", type=int, default=None, metavar="N",
                   help="submissions graded at once (default: the machine's cores)")
    p.add_argument("--time-limit", type=float, default=None, metavar="S",
                   help="seconds each check may run (default: each exercise's own)")
    p.add_argument("--seed", type=int, default=None, metavar="S",
                   help="draw every exercise's cases again from S for the whole class (the worked examples are "
                        "kept): no file can have looked up the course's own cases; recorded in the report")
    p.add_argument("--exercises", default=None, metavar="NAMES",
                   help="comma-separated exercises to grade (default: every Implement exercise)")
    p.add_argument("--submission", type=Path, default=Path("/autograder/submission"), help=argparse.SUPPRESS)
    p.add_argument("--results", type=Path, default=Path("/autograder/results/results.json"), help=argparse.SUPPRESS)
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--no-sandbox", action="store_true",
                   help="grade even where neither bubblewrap nor a user of its own per submission can keep the "
                        "students apart (a student's code could then reach the others' and the report)")


def _in_course(func, workspace: bool = True):
    """``func`` run in the course chosen by --course, SEQLAB_COURSE or the workspace (seqlab's own
    otherwise); a course given is remembered by the workspace (``workspace``: the command has one)."""
    def run(args) -> int:
        import os

        from seqlab.learn.courses import CourseError, use
        given = getattr(args, "course", None) or os.environ.get("SEQLAB_COURSE") or None
        try:
            if workspace:
                from seqlab.learn.workspace import ProgressError, remember_course, remembered_course
                use(given or remembered_course(_workspace(args)))
                if given:
                    try:
                        remember_course(_workspace(args), Path(given))
                    except (OSError, ProgressError) as error:
                        print(f"warning: the workspace cannot remember the course: {error}", file=sys.stderr)
            else:
                use(given)
        except CourseError as error:
            return _usage(str(error))
        return func(args)
    run.__name__, run.__doc__ = func.__name__, func.__doc__
    return run


def _workspace(args) -> Path:
    return getattr(args, "workspace", None) or Path(DEFAULT_WORKSPACE)


def _q(path) -> str:
    """A path as it can be pasted into a shell."""
    return shlex.quote(str(path))


def _with_workspace(args) -> str:
    """" --workspace DIR" and " --lang zh" when the command was given them (to repeat in the commands it
    suggests)."""
    return (f" --workspace {_q(args.workspace)}" if getattr(args, "workspace", None) else "") + \
        (" --lang zh" if getattr(args, "lang", None) == "zh" else "")


def _pad(text: str, width: int) -> str:
    """``text`` padded to ``width`` terminal columns (a Chinese character takes two)."""
    from seqlab.learn.views import width_of
    return text + " " * max(0, width - width_of(text))


def _kind(kind: str, lang) -> str:
    from seqlab.learn.words import say
    return say(f"kinds.{kind}", "zh" if lang in (1, "zh") else "en")


def _state(status: str, lang) -> str:
    from seqlab.learn.words import say
    return say(f"states.{status}", "zh" if lang in (1, "zh") else "en")


def _say(key: str, lang, **values) -> str:
    """seqlab learn's line ``key`` (words.toml, [cli]) in the language ``lang`` (0 or 1, False or True, "en" or "zh")."""
    from seqlab.learn.words import say
    return say(f"cli.{key}", "zh" if lang in (1, "zh") else "en", **values)


def _lang(args) -> int:
    return _LANGS[getattr(args, "lang", "en")]


def _progress(args):
    from seqlab.learn.workspace import ProgressError, read_progress
    try:
        return read_progress(_workspace(args))
    except ProgressError as error:
        print(f"error: {error}", file=sys.stderr)
        return None


def _save(args, function, *values, **options):
    """Record progress through ``function``; a progress.json that cannot be read or written is a
    warning, not a failure of the step."""
    from seqlab.learn.workspace import ProgressError
    try:
        return function(_workspace(args), *values, **options)
    except (OSError, ProgressError) as error:
        print(f"warning: progress not saved: {error}", file=sys.stderr)
        return None


def _set_state(args, step_id: str, state: str, **extra) -> None:
    from seqlab.learn.workspace import set_state
    _save(args, set_state, step_id, state, **extra)


def _usage(message: str) -> int:
    print(f"error: {message}", file=sys.stderr)
    return 2


def _no_such(args, what: str, name: str, known: list[str]) -> int:
    """A usage error for an unknown NAME, with the closest names ("did you mean rnn_step?"); ``what``:
    the kind of name, a key of words.toml's [cli.what] (step, implement, implement_or_command, trace, card)."""
    lang = _lang(args)
    close = difflib.get_close_matches(name, known, n=3, cutoff=0.6)
    if close:
        return _usage(_say("no_such_close", lang, what=_say(f"what.{what}", lang), name=repr(name),
                           close=_say("or", lang).join(close)))
    return _usage(_say("no_such_list", lang, what=_say(f"what.{what}", lang), name=repr(name),
                       whats=_say(f"whats.{what}", lang), known=", ".join(known)))


def _exercise(name: str):
    from seqlab.learn.catalog import exercise
    return exercise(name)


def _known(kind: str) -> list[str]:
    from seqlab.learn.path import STEPS
    return [s.id for s in STEPS if s.kind == kind]


def _all_steps() -> list[str]:
    from seqlab.learn.path import STEPS
    return [s.id for s in STEPS]


def _status(args, progress, step) -> str:
    from seqlab.learn.workspace import step_status
    return step_status(progress, step.id, step.kind, _workspace(args))


def _current(args, progress):
    """(number, step) of the first step not passed, or None when every step is."""
    from seqlab.learn.path import STEPS
    from seqlab.learn.workspace import DONE
    return next(((n, s) for n, s in enumerate(STEPS, 1) if _status(args, progress, s) not in DONE), None)


def show_path(args) -> int:
    from seqlab.learn.path import STEPS
    from seqlab.learn.workspace import CHANGED, DONE, UNCONFIRMED
    progress = _progress(args)
    if progress is None:  # progress.json cannot be read
        return 1
    lang = _lang(args)
    marks = {"todo": " ", "started": "~", "passed": "x", UNCONFIRMED: "x", CHANGED: "!"}
    print(_say("path_head", lang, ws=_q(_workspace(args))))
    statuses = [_status(args, progress, step) for step in STEPS]
    for number, (step, status) in enumerate(zip(STEPS, statuses), 1):
        print(f"  [{marks[status]}] {number:2d}. {_pad(step.title[lang], 46)} {_pad(_kind(step.kind, lang), 9)} "
              f"{step.id:<28} {_state(status, lang)}")
    done = sum(status in DONE for status in statuses)
    print(_say("passed_count", lang, done=done, n=len(STEPS), ws=_with_workspace(args)))
    return 0


def _open_step(args, step_id: str, status: str, progress: dict) -> int:
    """Print the step as `learn show` and `learn next` do: its lesson, then its task (or --json). A
    Trace step's worked numbers only once its question is answered or its answer asked for."""
    from seqlab.learn.questions import answer_seen
    from seqlab.learn.views import step_view, text, trace_question
    lang = "zh" if _lang(args) else "en"
    asked = trace_question(step_id)
    revealed = args.show or (asked is not None and answer_seen(progress, asked))
    view = step_view(step_id, lang, show=args.show, workspace=_with_workspace(args), revealed=revealed)
    view["status"] = status
    if args.json:
        print(json.dumps(view, indent=2, ensure_ascii=False))
    else:
        print(text(view), end="")
    return 0


def show_next(args) -> int:
    progress = _progress(args)
    if progress is None:  # progress.json cannot be read
        return 1
    current = _current(args, progress)
    if current is None:
        if args.json:
            print(json.dumps(None))
            return 0
        print(_say("all_passed", _lang(args)))
        return 0
    number, step = current
    return _open_step(args, step.id, _status(args, progress, step), progress)


def show_step(args) -> int:
    from seqlab.learn.path import STEP_BY_ID
    progress = _progress(args)
    if progress is None:
        return 1
    if args.name not in STEP_BY_ID:
        return _no_such(args, "step", args.name, _all_steps())
    return _open_step(args, args.name, _status(args, progress, STEP_BY_ID[args.name]), progress)


def write_notebooks(args) -> int:
    from seqlab.learn.path import PART_BY_ID, PARTS, STEPS
    lang = "zh" if _lang(args) else "en"
    if args.list:
        for part in PARTS:
            first, last = STEPS.index(part.steps[0]) + 1, STEPS.index(part.steps[-1]) + 1
            print(f"{part.id:<12} {part.title[_lang(args)]}  (steps {first}-{last}: "
                  f"{', '.join(s.id for s in part.steps)})")
        return 0
    unknown = [p for p in args.parts if p not in PART_BY_ID]
    if unknown:
        return _usage(f"no part {unknown[0]!r}; the parts are: {', '.join(PART_BY_ID)} (seqlab learn notebook --list)")
    if args.out is None:
        return _usage("--out DIR is required: the folder to write the notebooks into")
    from seqlab.learn.notebooks import write_notebooks as write
    try:
        paths = write(args.parts, args.out, lang, args.repo)
    except ValueError as error:                   # a local path for --repo
        return _usage(str(error))
    except OSError as error:
        print(f"error: cannot write into {args.out}: {error}", file=sys.stderr)
        return 1
    for path in paths:
        print(f"wrote {path}")
    print(_say("notebooks_written", lang, out=args.out))
    return 0


def write_site(args) -> int:
    """The course (--course DIR for a teacher's) as a static site: DIR/LANG/STEP.html."""
    from seqlab.learn.site import write_site as write
    if args.out is None:
        return _usage("--out DIR is required: the folder to write the site into")
    try:
        pages = write(args.out)
    except (OSError, ValueError) as error:
        print(f"error: cannot write the site into {_q(args.out)}: {error}", file=sys.stderr)
        return 1
    print(f"wrote {len(pages)} pages into {_q(args.out)} (both languages): open {_q(args.out / 'index.html')}, "
          f"or host the folder; point diagnoses at it with seqlab learn check NAME --lesson-url URL")
    return 0


def start_exercise(args) -> int:
    from seqlab.learn.workspace import WorkspaceError, start
    ex = _exercise(args.name)
    if ex is None:
        return _no_such(args, "implement", args.name, _known("implement"))
    try:
        path, written = start(_workspace(args), ex, ("en", "zh")[_lang(args)])
    except WorkspaceError as error:           # NAME.py is a folder, or another thing that is not a file
        print(f"error: {error}", file=sys.stderr)
        return 1
    except OSError as error:  # the workspace cannot hold the file
        print(f"error: cannot write {_q(_workspace(args) / (ex.name + '.py'))}: {error}", file=sys.stderr)
        return 1
    if written:
        _set_state(args, ex.name, "started")
        print(_say("started", _lang(args), path=_q(path), signature=ex.signature, name=ex.name, ws=_with_workspace(args)))
    else:
        print(_say("exists", _lang(args), path=_q(path), name=ex.name, ws=_with_workspace(args)))
    return 0


def check_exercise(args) -> int:
    from seqlab.learn.path import STEP_BY_ID
    name = args.name
    if name is None:
        progress = _progress(args)
        if progress is None:
            return 1
        current = _current(args, progress)
        if current is None:
            print(_say("nothing_left", _lang(args)))
            return 0
        step = current[1]
        if step.kind not in ("implement", "command"):
            what = ("a Trace question: seqlab learn answer {id} VALUE" if step.kind == "trace"
                    else "a card: seqlab learn card {id}").format(id=step.id) + _with_workspace(args)
            return _usage(f"the current step, {step.id}, is {what}")
        name = step.id
        print(_say("current_step", _lang(args), name=name))
    step = STEP_BY_ID.get(name)
    if step is not None and step.kind == "command":
        return _check_command_step(args, step)
    if step is not None and step.kind in ("trace", "card"):
        how = "answer" if step.kind == "trace" else "card"
        return _usage(f"{name} is {'a Trace question' if step.kind == 'trace' else 'a card'}, not checked: "
                      f"seqlab learn {how} {name}{' VALUE' if how == 'answer' else ''}{_with_workspace(args)}")
    if args.out is not None:
        return _usage("--out is for a command step's results (e.g. seqlab learn check train_small --out demo_out)")
    ex = _exercise(name)
    if ex is None:
        known = _known("implement") + _known("command")
        return _no_such(args, "implement_or_command", name, known)
    if args.time_limit is not None and not args.time_limit > 0:
        return _usage(_say("time_limit", _lang(args), got=args.time_limit))
    return _check_implement(args, ex)


def _check_implement(args, ex) -> int:
    from seqlab.learn.checking import check_file
    from seqlab.learn.feedback import report_lines
    from seqlab.learn.workspace import WorkspaceError, exercise_file
    workspace = _workspace(args)
    try:
        path = exercise_file(workspace, ex.name)
    except WorkspaceError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    if not path.is_file():
        print(f"error: {_q(path)} does not exist; write it first with: seqlab learn start {ex.name}{_with_workspace(args)}",
              file=sys.stderr)
        return 1
    report, warning = check_file(workspace, ex.name, time_limit=args.time_limit)   # recorded, as in the explorer
    if warning:
        print(f"warning: {warning}", file=sys.stderr)
    if args.json:
        out = report.as_dict()
        if args.lesson_url and report.diagnosis:          # where to read, on the course's site
            from seqlab.learn.feedback import reading
            out["read_url"] = reading(report.diagnosis, ex.name, "zh" if _lang(args) else "en", args.lesson_url)["url"]
        print(json.dumps(out, indent=2, ensure_ascii=False, default=str))
        return 0 if report.passed else 1
    zh = _lang(args) == 1
    print(f"{ex.name}: {ex.title_zh if zh and ex.title_zh else ex.title}  ({_q(path)})")
    print("\n".join(report_lines(report, "zh" if zh else "en", args.lesson_url)))
    ws = _with_workspace(args)
    if report.sandbox_note:                    # once per workspace: the code ran without a sandbox
        print(_say("no_sandbox", zh, why=report.sandbox_note))
    if report.passed:
        print(_say("check_passed", zh, ws=ws))
    else:
        print(_say("check_not_yet", zh, name=ex.name, ws=ws))
    return 0 if report.passed else 1


def _check_command_step(args, step) -> int:
    from seqlab.learn.command_steps import check_command_step
    from seqlab.learn.words import render
    from seqlab.learn.workspace import record_check
    if args.time_limit is not None:
        return _usage("--time-limit is for Implement exercises; a command step's results are only read")
    evidence = check_command_step(step, _workspace(args), args.out)
    _save(args, record_check, step.id, evidence.passed, results=str(evidence.folder))
    if args.json:
        print(json.dumps({"step": step.id, "passed": evidence.passed, "folder": str(evidence.folder),
                          "message": str(evidence.message)}, indent=2, ensure_ascii=False))
        return 0 if evidence.passed else 1
    print(f"{step.id}: {step.title[_lang(args)]}  ({_q(evidence.folder)})")
    print(f"  {'PASS' if evidence.passed else 'FAIL'}  {render(evidence.message, 'zh' if _lang(args) else 'en')}")
    if evidence.passed:
        print(_say("command_passed", _lang(args), ws=_with_workspace(args)))
    return 0 if evidence.passed else 1


def show_hint(args) -> int:
    from seqlab.learn.lessons import LessonError, lesson
    from seqlab.learn.path import STEP_BY_ID
    from seqlab.learn.questions import QUESTION_BY_ID
    from seqlab.learn.workspace import note_hint
    name, lang = args.name, _lang(args)
    if name not in STEP_BY_ID and name not in QUESTION_BY_ID:
        return _no_such(args, "step", name, _all_steps())
    try:
        hints = list(lesson(name, ("en", "zh")[lang]).hints)
    except LessonError:
        hints = []
    if not hints and name in QUESTION_BY_ID:
        hints = [QUESTION_BY_ID[name].hint[lang]]
    if not hints:
        print(_say("no_hints", lang, name=name, ws=_with_workspace(args)))
        return 1
    asked = _save(args, note_hint, name) or 1
    shown = min(asked, len(hints))
    for k in range(shown):
        print(_say("hint_k", lang, k=k + 1, n=len(hints), hint=hints[k]))
    if shown < len(hints):
        print(_say("next_hint", lang, name=name, ws=_with_workspace(args)))
    elif name in STEP_BY_ID and STEP_BY_ID[name].kind == "implement":
        print(_say("every_hint", lang, name=name))
    return 0


def reset_exercise(args) -> int:
    from seqlab.learn.workspace import WorkspaceError, record_check, reset
    ex = _exercise(args.name)
    if ex is None:
        return _no_such(args, "implement", args.name, _known("implement"))
    try:
        path, backup = reset(_workspace(args), ex, ("en", "zh")[_lang(args)])
    except (OSError, WorkspaceError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    _save(args, record_check, ex.name, False)
    print(_say("fresh_stub_kept", _lang(args), path=_q(path), backup=_q(backup)) if backup else
          _say("fresh_stub", _lang(args), path=_q(path)))
    return 0


def show_solution(args) -> int:
    import importlib
    import inspect

    from seqlab.learn.catalog import exercise
    ex = exercise(args.name)
    if ex is None:
        return _no_such(args, "implement", args.name, _known("implement"))
    shown = [ex.reference()]
    if ex.solution:                                 # a wrapper's reference: the model code it calls too
        owner, name = ex.solution.rsplit(".", 1)
        shown.append(getattr(importlib.import_module(owner), name))
    for function in shown:
        print(f"# {inspect.getsourcefile(function)}\n")
        print(inspect.getsource(function))
    return 0


def answer_question(args) -> int:
    from seqlab.learn.questions import QUESTION_BY_ID, grade, parse_numbers, verdict_words
    q = QUESTION_BY_ID.get(args.name)
    if q is None:
        return _no_such(args, "trace", args.name, list(QUESTION_BY_ID))
    lang = _lang(args)
    code = "zh" if lang else "en"
    if args.value is None:
        print(f"{q.title[lang]}: {q.asks(code)}")
        if args.show:
            _set_state(args, q.id, "started", revealed=True)     # asked for: the lesson shows its worked numbers
            print(_say("solution", lang) + q.solution[lang])
        else:
            print(f"answer with: seqlab learn answer {q.id} VALUE{_with_workspace(args)}")
        return 0
    try:
        given = parse_numbers(args.value)
    except ValueError as error:
        from seqlab.learn.words import render
        return _usage(render(error.args[0], code))
    verdict = grade(q, given)
    _set_state(args, q.id, "passed" if verdict.correct else "started",
               **({"answered": True} if verdict.correct else {}), **({"revealed": True} if args.show else {}))
    print("\n".join(verdict_words(q, verdict, code)))
    if args.show:
        print(_say("solution", lang) + q.solution[lang])
    elif not verdict.correct:
        from seqlab.learn.words import say
        print(say("questions.show_solution", code, id=q.id, ws=_with_workspace(args)))
    return 0 if verdict.correct else 1


def show_card(args) -> int:
    """A card: the student's answer first (a prompt, or --answer), then the worked answer, then the
    student's mark (--mark, or a prompt); only "same" passes it (seqlab.learn.cards)."""
    from seqlab.learn.cards import MARKS, CardError, record_mark, refusal, write, written_answer
    from seqlab.learn.words import render
    from seqlab.learn.path import STEP_BY_ID
    from seqlab.learn.workspace import ProgressError
    from seqlab.learn.questions import CARD_BY_ID
    lang = _lang(args)
    code = "zh" if lang else "en"
    card = CARD_BY_ID.get(args.name)
    step = STEP_BY_ID.get(args.name)
    if card is None and (step is None or step.kind != "command"):
        return _no_such(args, "card", args.name, list(CARD_BY_ID))
    if card is None:                       # a command step: checked from what its command wrote
        print(f"{step.title[lang]}: {step.command}")
        print(_say("command_then_check", lang, id=step.id, ws=_with_workspace(args)))
        return 0
    ws, workspace = _with_workspace(args), _workspace(args)
    print(f"{_kind(card.kind, lang).capitalize()}{'：' if lang else ': '}{card.title[lang]}\n  {card.question[lang]}")
    written = args.answer
    if written is None and args.mark is None and written_answer(workspace, card.id) is None and sys.stdin.isatty():
        print(_say_card("prompt", code))
        lines = []
        for line in sys.stdin:
            if not line.strip():
                break
            lines.append(line.strip())
        written = " ".join(lines)
    if written is not None:
        why = refusal(written)
        if why:
            return _usage(f"{card.id}: {render(why, code)}")
        try:
            write(workspace, card.id, written)
        except (OSError, ProgressError) as error:
            print(_say_card("not_saved", code, error=error), file=sys.stderr)
    kept = written if written is not None else written_answer(workspace, card.id)
    if kept is None:
        if args.mark is not None or args.reveal:
            return _usage(f"{card.id}: " + _say_card("write_before_reveal", code, id=card.id, ws=ws))
        _set_state(args, card.id, "started")
        print("  " + _say_card("answer_with", code, id=card.id, ws=ws))
        return 0
    print(_say_card("yours", code, text=" ".join(kept.split())))
    print(_say("card_answer", lang) + card.answer[lang])
    mark = args.mark
    if mark is None and args.answer is None and sys.stdin.isatty():
        typed = input(_say_card("mark_prompt", code)).strip().lower()
        mark = next((m for m in MARKS if typed and m.startswith(typed)), None)
    if mark is None:
        print("  " + _say_card("mark_with", code, id=card.id, ws=ws))
        return 0
    try:
        state = record_mark(workspace, card.id, mark, kept)
    except CardError as error:
        return _usage(error.words(code))
    except (OSError, ProgressError) as error:
        print(_say_card("progress_not_saved", code, error=error), file=sys.stderr)
        return 1
    print(_say_card("passed" if state == "passed" else "again", code, id=card.id))
    return 0


def _say_card(key: str, lang: str, **values) -> str:
    from seqlab.learn.words import say
    return say(f"cards.{key}", lang, **values)


def grade_class(args) -> int:
    from seqlab.learn.grade import run_grade_command
    return run_grade_command(args)
