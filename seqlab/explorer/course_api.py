"""The explorer's course: the learning path as the home page (``static/course.js``).

    POST /api/learn/path {}                         the steps with their state, the parts, the current step
    POST /api/learn/lesson {"step", "lang"}         the step's lesson (seqlab.learn.views, figures as SVG), an
                                                    Implement step's latest check; a Trace step's worked
                                                    numbers once answered or asked for ("revealed": true)
    POST /api/learn/answer {"question", "value"}    a Trace question answered: right, right so far, the
                                                    known wrong answer it is, or what is wrong and one
                                                    hint; {"question", "solution": true}: the worked solution
    POST /api/learn/card {"card", "written"}        a card: the student's answer, then the worked one; with
                                                    "mark": the student's comparison ("same" passes it)
    POST /api/learn/check {"step"}                  the check of WORKSPACE/STEP.py, as `seqlab learn check`
                                                    (its "latest" check has "rows": the checks as
                                                    `seqlab learn check` lists them, {"en", "zh"})
    POST /api/learn/hint {"step"}                   one more graded hint asked for (as `seqlab learn hint`)

Answers and checks go into the workspace's progress.json (``seqlab explore --workspace DIR``,
default ./seqlab-learn), the same progress as the ``seqlab learn`` commands'. A check runs the
student's code in a child process with the exercise's time limit (``seqlab.learn.runner``).
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from seqlab.explorer.validation import Payload, RequestError

# a check runs the student's code for up to the exercise's time limit: a few at a time (here and
# for the "yours" panels' diagnoses, learn_api.full_check)
CHECKING = threading.BoundedSemaphore(2)


def _step(p: Payload, name: str = "step"):
    from seqlab.learn.path import STEP_BY_ID
    step_id = p.string(name, "", 60)
    if step_id not in STEP_BY_ID:
        raise RequestError(f"no step {step_id[:60]!r} in the path; POST /api/learn/path lists them")
    return STEP_BY_ID[step_id]


def _progress(folder: str | None) -> dict:
    from seqlab.learn.workspace import ProgressError, read_progress
    if folder is None:
        return {"steps": {}}
    try:
        return read_progress(Path(folder))
    except ProgressError as error:
        raise RequestError(str(error), "learn_progress", detail=str(error)) from None


def _state(progress: dict, step, folder: str | None) -> str:
    """todo, started, passed, changed (the file is not the one that passed: check again) or
    unconfirmed (passed before passes were recorded with their evidence), as `seqlab learn` says."""
    from seqlab.learn.workspace import CHANGED, UNCONFIRMED, step_status
    status = step_status(progress, step.id, step.kind, Path(folder or "."))
    return {CHANGED: "changed", UNCONFIRMED: "unconfirmed"}.get(status, status)


DONE = ("passed", "unconfirmed")


def _with_rows(latest: dict | None) -> dict | None:
    """A check's summary with "rows": {"en": [...], "zh": [...]}, each [passed, name, message] as
    `seqlab learn check` lists the checks (seqlab.learn.feedback.check_rows: the sentences' checks
    that fail only with the values, the form or a crash on the exercise's own cases as one row)."""
    if not latest or not isinstance(latest.get("checks"), list):
        return latest
    from seqlab.learn.feedback import check_rows
    named = bool((latest.get("diagnosis") or {}).get("mistake"))
    name = str(latest.get("exercise") or "")
    return {**latest, "rows": {lang: [list(row[:3]) for row in check_rows(latest["checks"], lang, named, name)]
                               for lang in ("en", "zh")}}


def path(data: dict[str, Any], folder: str | None) -> dict:
    from seqlab.learn import lessons
    from seqlab.learn.path import PART_OF, PARTS, STEPS
    Payload(data).finish()
    progress = _progress(folder)
    steps = [{"id": s.id, "kind": s.kind, "title": list(s.title), "part": PART_OF[s.id].id, "number": k,
              "state": _state(progress, s, folder), "lesson": lessons.has_lesson(s.id, "en"), "look": s.look}
             for k, s in enumerate(STEPS, 1)]
    current = next((s["id"] for s in steps if s["state"] not in DONE), None)
    return {"workspace": folder, "parts": [{"id": p.id, "title": list(p.title)} for p in PARTS],
            "steps": steps, "current": current}


def lesson(data: dict[str, Any], folder: str | None) -> dict:
    from seqlab.learn.checking import latest_check
    from seqlab.learn.views import step_view
    p = Payload(data)
    step = _step(p)
    lang = p.choice("lang", "en", ("en", "zh"))
    asked_for = p.boolean("revealed", False)
    p.finish()
    from seqlab.learn.questions import answer_seen
    from seqlab.learn.views import trace_question
    progress = _progress(folder)
    asked = trace_question(step.id)
    revealed = asked_for or (asked is not None and answer_seen(progress, asked))
    view = step_view(step.id, lang, show=True, svg=True, workspace=f" --workspace {folder}" if folder else "",
                     revealed=revealed)
    view["revealed"] = revealed
    asked = view["task"]["then"] if view["task"]["type"] == "command" else view["task"]
    for key in ("solution", "answer"):      # the task's answer comes on request (learn/answer, learn/card)
        asked.pop(key, None)
    view["questions"] = [q for q in view["questions"] if not q.get("task")]
    view["figures"] = [{"name": f["name"], "caption": f["caption"]} for f in view["figures"]]   # the SVG is in its block
    for section in view["sections"]:
        section.pop("text")                 # the page renders the blocks
    hints = next((s for s in view["sections"] if s["id"] == "hints"), None)
    if hints is not None:                   # one at a time, on request
        view["sections"].remove(hints)
        view["hints"] = [item for b in hints["blocks"] if b["type"] == "list" for item in b["items"]]
    view["state"] = _state(progress, step, folder)
    view["workspace"] = folder
    entry = progress["steps"].get(step.id)
    asked = entry.get("hints") if isinstance(entry, dict) else 0
    view["hints_shown"] = min(asked, len(view.get("hints", []))) if isinstance(asked, int) and asked > 0 else 0
    if step.kind == "implement":
        file = Path(folder) / f"{step.id}.py" if folder else None
        view["file"] = str(file) if file else None
        view["present"] = bool(file and file.is_file())
        view["latest"] = _with_rows(latest_check(Path(folder), step.id)) if folder else None
    return view


def _record(folder: str | None, step_id: str, state: str, **extra) -> bool:
    from seqlab.learn.workspace import ProgressError, set_state
    if folder is None:
        return False
    try:
        set_state(Path(folder), step_id, state, **extra)
    except (OSError, ProgressError):
        return False
    return True


def answer(data: dict[str, Any], folder: str | None) -> dict:
    from seqlab.learn.questions import QUESTION_BY_ID, grade, parse_numbers
    p = Payload(data)
    qid = p.string("question", "", 60)
    if qid not in QUESTION_BY_ID:
        raise RequestError(f"no Trace question {qid[:60]!r}; the questions are: {', '.join(QUESTION_BY_ID)}")
    q = QUESTION_BY_ID[qid]
    if p.boolean("solution", False):
        p.finish()
        recorded = _record(folder, qid, "started", revealed=True)      # asked for: the lesson shows its numbers
        return {"question": qid, "solution": list(q.solution), "recorded": recorded}
    value = p.string("value", "", 200)
    p.finish()
    try:
        given = parse_numbers(value)
    except ValueError as error:
        raise RequestError(str(error), "learn_not_numbers", value=value[:40]) from None
    verdict = grade(q, given)
    recorded = _record(folder, qid, "passed" if verdict.correct else "started")
    out = {"question": qid, "correct": verdict.correct, "what": list(verdict.what), "short": verdict.short,
           "recorded": recorded}
    if verdict.wrong is not None:
        out["wrong"] = {"title": list(verdict.wrong.title), "mistake": verdict.wrong.mistake,
                        "anchor": f"mistake-{verdict.wrong.mistake}" if verdict.wrong.mistake else ""}
    elif not verdict.correct and not verdict.short:
        out["hint"] = list(q.hint)
    return out


def card(data: dict[str, Any], folder: str | None) -> dict:
    """A card: {"card", "written"} keeps the student's answer and gives the worked one; with "mark"
    too, the student's comparison ("same" passes it). Nothing is shown before an answer is written."""
    from seqlab.learn.cards import CardError, record_mark, refusal, write
    from seqlab.learn.questions import CARD_BY_ID
    from seqlab.learn.workspace import ProgressError
    p = Payload(data)
    cid = p.string("card", "", 60)
    written = p.string("written", "", 4000)
    mark = p.string("mark", "", 10) or None
    p.finish()
    if cid not in CARD_BY_ID:
        raise RequestError(f"no card {cid[:60]!r}; the cards are: {', '.join(CARD_BY_ID)}")
    why = refusal(written)
    if why:
        raise RequestError(f"{cid}: {why}", "learn_write_first", card=cid)
    try:
        if mark is None:
            recorded = folder is not None
            if recorded:
                write(Path(folder), cid, written)
            return {"card": cid, "answer": list(CARD_BY_ID[cid].answer), "recorded": recorded}
        state = record_mark(Path(folder) if folder else None, cid, mark, written)
    except CardError as error:
        raise RequestError(str(error), "learn_card_mark", card=cid) from None
    except (OSError, ProgressError):
        return {"card": cid, "state": None, "recorded": False}
    return {"card": cid, "state": state, "recorded": folder is not None}


def check(data: dict[str, Any], folder: str | None) -> dict:
    from seqlab.learn.checking import check_file, latest_check, summary
    from seqlab.learn.workspace import WorkspaceError
    p = Payload(data)
    step = _step(p)
    p.finish()
    if step.kind != "implement":
        raise RequestError(f"{step.id} is a {step.kind} step, not an Implement exercise: nothing to check")
    if folder is None:
        raise RequestError("no workspace is open: start the explorer with `seqlab explore --workspace DIR` "
                           "(DIR holds your exercises, e.g. seqlab-learn)", "learn_no_workspace")
    with CHECKING:
        try:
            report, warning = check_file(Path(folder), step.id)
        except WorkspaceError as error:
            raise RequestError(str(error)) from None
        except FileNotFoundError:
            file = Path(folder) / f"{step.id}.py"
            raise RequestError(f"{file} does not exist; write it first with: seqlab learn start {step.id} "
                               f"--workspace {folder}", "learn_no_file", file=str(file), name=step.id,
                               workspace=folder) from None
    return {"step": step.id, "latest": _with_rows(latest_check(Path(folder), step.id) or summary(report)), "warning": warning,
            "state": _state(_progress(folder), step, folder)}


def hint(data: dict[str, Any], folder: str | None) -> dict:
    """One more of the step's graded hints asked for (counted in progress.json, as `seqlab learn hint`)."""
    from seqlab.learn.workspace import ProgressError, note_hint
    p = Payload(data)
    step = _step(p)
    p.finish()
    if folder is None:
        return {"step": step.id, "asked": None}
    try:
        return {"step": step.id, "asked": note_hint(Path(folder), step.id)}
    except (OSError, ProgressError):
        return {"step": step.id, "asked": None}


COURSE_ENDPOINTS = {
    "learn/path": path,
    "learn/lesson": lesson,
    "learn/answer": answer,
    "learn/card": card,
    "learn/check": check,
    "learn/hint": hint,
}
