"""`seqlab learn`: the learning path, its exercises and their checks.

    seqlab learn                      the path, each step todo / started / passed
    seqlab learn next                 the current step: its lesson, then what to do
    seqlab learn show NAME            one step's lesson and task (--show: answers, --json: as data)
    seqlab learn start NAME           write WORKSPACE/NAME.py (never over an existing file)
    seqlab learn check NAME [--json]  exit 0 when every check passes, 1 when one fails, 2 on usage
    seqlab learn answer NAME VALUE    a Trace question (--show: the worked solution)
    seqlab learn card NAME [--reveal] an Explain / Derive card
    seqlab learn solution NAME        the reference implementation's source
    seqlab learn notebook [PART ...] --out DIR   the course as Jupyter notebooks (--list: the parts)

The workspace (--workspace, default ./seqlab-learn) holds the student's files and progress.json.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

DEFAULT_WORKSPACE = "seqlab-learn"     # = seqlab.learn.workspace.DEFAULT_WORKSPACE (no import at the top)

_LANGS = {"en": 0, "zh": 1}


def register(subparsers) -> None:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--workspace", type=Path, default=argparse.SUPPRESS,
                        help=f"the student's folder: exercise files and progress.json (default: ./{DEFAULT_WORKSPACE})")
    common.add_argument("--lang", choices=sorted(_LANGS), default=argparse.SUPPRESS, help="en (default) or zh (中文)")
    parser = subparsers.add_parser(
        "learn", parents=[common], help="the learning path: exercises checked by seqlab, with diagnoses",
        description="The course as a path of steps: read, look at the explorer widget, do an exercise. "
                    "Implement exercises are checked (shapes, values, gradients, invariants) with a diagnosis "
                    "of the most likely mistake.")
    parser.set_defaults(func=show_path)
    sub = parser.add_subparsers(dest="learn_command", metavar="COMMAND")

    def command(name, func, help, *, step=True):
        """A subcommand with the common options; step: it takes the NAME of a step of the path."""
        p = sub.add_parser(name, parents=[common], help=help)
        if step:
            p.add_argument("name")
        p.set_defaults(func=func)
        return p

    for name, func, help in (("next", show_next, "the current step: its lesson and what to do"),
                             ("show", show_step, "one step: its lesson (maths, figures, questions) and what to do")):
        p = command(name, func, help, step=name == "show")
        p.add_argument("--show", action="store_true", help="with the questions' answers and the worked solution")
        p.add_argument("--json", action="store_true", help="print the step as JSON (name, title, kind, sections, "
                       "questions, figures, reading, task)")
    command("start", start_exercise, "write WORKSPACE/NAME.py for an Implement exercise")
    p = command("check", check_exercise, "check WORKSPACE/NAME.py (exit 0 pass, 1 fail, 2 usage)")
    p.add_argument("--json", action="store_true", help="print the checks and the diagnosis as JSON")
    p.add_argument("--time-limit", type=float, default=None, metavar="S",
                   help="seconds the student's code may run (default: the exercise's, 10 s for NumPy)")
    command("solution", show_solution, "show the reference implementation")
    p = command("answer", answer_question, "answer a Trace question: numbers separated by commas")
    p.add_argument("value", nargs="?", default=None, help='e.g. "0.4" or "0.6698, 0.3302"')
    p.add_argument("--show", action="store_true", help="show the worked solution")
    p = command("notebook", write_notebooks, "write the course as Jupyter notebooks, one per part", step=False)
    p.add_argument("parts", nargs="*", metavar="PART", help="the parts to write (default: all; --list names them)")
    p.add_argument("--out", type=Path, default=None, metavar="DIR", help="the folder to write them into")
    p.add_argument("--list", action="store_true", help="list the parts and their steps")
    p.add_argument("--repo", default=None, metavar="URL", help="the git URL the first cell installs seqlab from "
                   "(default: the package's Repository URL, else this checkout's origin)")
    p = command("card", show_card, "an Explain / Derive self-check card")
    p.add_argument("--reveal", action="store_true", help="show the answer (and mark the card done)")


def _workspace(args) -> Path:
    return getattr(args, "workspace", None) or Path(DEFAULT_WORKSPACE)


def _lang(args) -> int:
    return _LANGS[getattr(args, "lang", "en")]


def _progress(args):
    from seqlab.learn.workspace import ProgressError, read_progress
    try:
        return read_progress(_workspace(args))
    except ProgressError as error:
        print(f"error: {error}", file=sys.stderr)
        return None


def _set_state(args, step_id: str, state: str) -> None:
    """Record progress; a progress.json that cannot be read or written is a warning, not a failure of the
    step (as in `check`)."""
    from seqlab.learn.workspace import ProgressError, set_state
    try:
        set_state(_workspace(args), step_id, state)
    except (OSError, ProgressError) as error:
        print(f"warning: progress not saved: {error}", file=sys.stderr)


def _usage(message: str) -> int:
    print(f"error: {message}", file=sys.stderr)
    return 2


def _exercise(name: str):
    from seqlab.learn.catalog import exercise
    return exercise(name)


def _known(kind: str) -> str:
    from seqlab.learn.path import STEPS
    return ", ".join(s.id for s in STEPS if s.kind == kind)


def _state(progress, step) -> str:
    """A command step is passed when its own card is, or when the question or card after it is."""
    from seqlab.learn.workspace import state_of
    state = state_of(progress, step.id)
    if step.kind == "command" and state != "passed":
        after = state_of(progress, step.then)
        return "passed" if after == "passed" else state
    return state


def show_path(args) -> int:
    from seqlab.learn.path import STEPS
    progress = _progress(args)
    if progress is None:  # progress.json cannot be read
        return 1
    lang = _lang(args)
    marks = {"todo": " ", "started": "~", "passed": "x"}
    print(("The path (workspace: {ws})" if lang == 0 else "学习路径（工作区：{ws}）").format(ws=_workspace(args)))
    for number, step in enumerate(STEPS, 1):
        state = _state(progress, step)
        print(f"  [{marks[state]}] {number:2d}. {step.title[lang]:<46} {step.kind:<9} {step.id:<28} {state}")
    done = sum(_state(progress, s) == "passed" for s in STEPS)
    print(f"{done} of {len(STEPS)} passed. " + ("Next: seqlab learn next" if lang == 0 else "下一步：seqlab learn next"))
    return 0


def _open_step(args, step_id: str) -> int:
    """Print the step as `learn show` and `learn next` do: its lesson, then its task (or --json)."""
    from seqlab.learn.views import step_view, text
    lang = "zh" if _lang(args) else "en"
    view = step_view(step_id, lang, show=args.show)
    if args.json:
        print(json.dumps(view, indent=2, ensure_ascii=False))
    else:
        print(text(view), end="")
    return 0


def show_next(args) -> int:
    from seqlab.learn.path import STEPS
    progress = _progress(args)
    if progress is None:  # progress.json cannot be read
        return 1
    for step in STEPS:
        if _state(progress, step) != "passed":
            return _open_step(args, step.id)
    if args.json:
        print(json.dumps(None))
        return 0
    print("Every step is passed. Well done." if _lang(args) == 0 else "所有步骤都已通过。做得好。")
    return 0


def show_step(args) -> int:
    from seqlab.learn.path import STEP_BY_ID
    if args.name not in STEP_BY_ID:
        return _usage(f"no step {args.name!r}; `seqlab learn` lists them")
    return _open_step(args, args.name)


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
    except OSError as error:
        print(f"error: cannot write into {args.out}: {error}", file=sys.stderr)
        return 1
    for path in paths:
        print(f"wrote {path}")
    print("open them with Jupyter (jupyter lab " + str(args.out) + ") or upload one to Colab; the first cell installs "
          "seqlab where it is missing" if lang == "en" else
          f"用 Jupyter 打开（jupyter lab {args.out}）或上传到 Colab；第一个单元格会在缺少 seqlab 时安装它")
    return 0


def start_exercise(args) -> int:
    from seqlab.learn.workspace import start
    ex = _exercise(args.name)
    if ex is None:
        return _usage(f"no Implement exercise {args.name!r}; the exercises are: {_known('implement')}")
    try:
        path, written = start(_workspace(args), ex)
    except OSError as error:  # the workspace cannot hold the file
        print(f"error: cannot write {_workspace(args) / (ex.name + '.py')}: {error}", file=sys.stderr)
        return 1
    _set_state(args, ex.name, "started")
    if written:
        print(f"wrote {path}: fill in {ex.signature}, then run: seqlab learn check {ex.name}"
              + (f" --workspace {_workspace(args)}" if getattr(args, "workspace", None) else ""))
    else:
        print(f"{path} exists already: it is yours and was left as it is. Check it with: seqlab learn check {ex.name}")
    return 0


def check_exercise(args) -> int:
    from seqlab.learn.exercise import check
    from seqlab.learn.workspace import ProgressError, set_state
    ex = _exercise(args.name)
    if ex is None:
        return _usage(f"no Implement exercise {args.name!r}; the exercises are: {_known('implement')}")
    if args.time_limit is not None and not args.time_limit > 0:
        return _usage(f"--time-limit must be > 0, got {args.time_limit}")
    path = _workspace(args) / f"{ex.name}.py"
    if not path.is_file():
        print(f"error: {path} does not exist; write it first with: seqlab learn start {ex.name}", file=sys.stderr)
        return 1
    report = check(ex, path, time_limit=args.time_limit)
    try:
        set_state(_workspace(args), ex.name, "passed" if report.passed else "started")
    except (OSError, ProgressError) as error:
        print(f"warning: progress not saved: {error}", file=sys.stderr)
    if args.json:
        print(json.dumps(report.as_dict(), indent=2, ensure_ascii=False, default=str))
        return 0 if report.passed else 1
    print(f"{ex.name}: {ex.title}  ({path})")
    for c in report.checks:
        print(f"  {'PASS' if c['passed'] else 'FAIL'}  {c['name']}" + (f": {c['message']}" if c["message"] else ""))
    if report.printed_chars:
        head = report.printed[:300].rstrip()
        print(f"  note: your code printed {report.printed_chars} characters; the first ones: {head!r}")
    if report.diagnosis:
        d = report.diagnosis
        if d["mistake"]:
            print(f"  diagnosis: {d['title']}: {d['explanation']}")
        else:
            print(f"  diagnosis: {d['title']}; {d['explanation']}")
    print("passed: well done. Next: seqlab learn next" if report.passed else
          f"not yet. (`seqlab learn solution {ex.name}` shows the reference, when you want it.)")
    return 0 if report.passed else 1


def show_solution(args) -> int:
    import inspect

    from seqlab.learn.references import (
        REFERENCE_MODULES,
        SOLUTION_SOURCES,
        helper,
        reference,
    )
    if args.name not in REFERENCE_MODULES:
        return _usage(f"no Implement exercise {args.name!r}; the exercises are: {_known('implement')}")
    shown = [reference(args.name)]
    if args.name in SOLUTION_SOURCES:
        shown.append(helper(*SOLUTION_SOURCES[args.name]))
    for function in shown:
        print(f"# {inspect.getsourcefile(function)}\n")
        print(inspect.getsource(function))
    return 0


def answer_question(args) -> int:
    from seqlab.learn.questions import QUESTION_BY_ID, grade, parse_numbers
    q = QUESTION_BY_ID.get(args.name)
    if q is None:
        return _usage(f"no Trace question {args.name!r}; the questions are: {', '.join(QUESTION_BY_ID)}")
    lang = _lang(args)
    if args.value is None:
        print(f"{q.title[lang]}: {q.text[lang]}")
        if args.show:
            print(("solution: " if lang == 0 else "解答：") + q.solution[lang])
        else:
            print(f"answer with: seqlab learn answer {q.id} VALUE")
        return 0
    try:
        given = parse_numbers(args.value)
    except ValueError as error:
        return _usage(str(error))
    correct, what = grade(q, given)
    _set_state(args, q.id, "passed" if correct else "started")
    if correct:
        print("right." if lang == 0 else "正确。")
        if args.show:
            print(("solution: " if lang == 0 else "解答：") + q.solution[lang])
        return 0
    print((f"not yet: {what}. hint: " if lang == 0 else f"还不对：{what}。提示：") + q.hint[lang])
    if args.show:
        print(("solution: " if lang == 0 else "解答：") + q.solution[lang])
    else:
        print(f"(to see the worked answer: seqlab learn answer {q.id} --show)")
    return 1


def show_card(args) -> int:
    from seqlab.learn.path import STEP_BY_ID
    from seqlab.learn.questions import CARD_BY_ID
    lang = _lang(args)
    card = CARD_BY_ID.get(args.name)
    step = STEP_BY_ID.get(args.name)
    if card is None and (step is None or step.kind != "command"):
        return _usage(f"no card {args.name!r}; the cards are: {', '.join(CARD_BY_ID)}")
    if card is None:                       # a command step: done when the student says so
        print(f"{step.title[lang]}: {step.command}")
        if args.reveal:
            _set_state(args, step.id, "passed")
            print("marked done." if lang == 0 else "已标记完成。")
        return 0
    print(f"{card.kind.capitalize()}: {card.title[lang]}\n  {card.question[lang]}")
    if args.reveal:
        print(("  answer: " if lang == 0 else "  答案：") + card.answer[lang])
        _set_state(args, card.id, "passed")
    else:
        _set_state(args, card.id, "started")
        print(f"  (think it through, then: seqlab learn card {card.id} --reveal)")
    return 0
