"""An Implement exercise and the check of a student's file against it.

An :class:`Exercise` names the reference function (the exercise's name is the function's name),
the calls to check it on (:class:`Case`: the lesson's worked example, random inputs), what part of
the output is compared, finite-difference gradients where the exercise is a backward pass,
invariants, and a catalogue of :class:`Mistake` mutants. :func:`check` runs the student's file in a
separate process (``seqlab.learn.runner``) and returns a :class:`Report`.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable
from typing import Any

from seqlab.learn import compare
from seqlab.learn.runner import StudentRun, run_students


@dataclasses.dataclass
class Case:
    label: str                         # "the worked example", "random inputs 1", ...
    args: tuple
    kwargs: dict = dataclasses.field(default_factory=dict)
    gradcheck: bool = False            # compare the gradients with central finite differences


def numbered_cases(make: Callable[..., tuple[tuple, dict]], settings, gradcheck: bool = False) -> list[Case]:
    """One Case per setting, made by make(k, *setting) -> (args, kwargs); the first (k = 0) is
    labelled "the worked example", the next "random inputs 1", "random inputs 2", ...
    A setting that is not a tuple is one argument: numbered_cases(lambda k, n: ((n,), {}), (3, 6))
    -> [Case("the worked example", (3,)), Case("random inputs 1", (6,))]."""
    return [Case("the worked example" if k == 0 else f"random inputs {k}",
                 *make(k, *(setting if isinstance(setting, tuple) else (setting,))), gradcheck=gradcheck)
            for k, setting in enumerate(settings)]


@dataclasses.dataclass(frozen=True)
class Mistake:
    id: str
    title: str                          # what the mistake is
    explanation: str                    # what it does to the output, and the fix
    implementation: Callable


@dataclasses.dataclass
class Exercise:
    name: str
    title: str
    title_zh: str
    signature: str                      # "rnn_bptt(params, xs, h0, dys, dh_last=None)"
    doc: str                            # shapes and conventions, for the stub's docstring
    reference: Callable[[], Callable]   # returns the reference function (imported on use)
    cases: Callable[[], list[Case]]
    mistakes: tuple[Mistake, ...] = ()
    compared: Callable[[Any], Any] = lambda out: out      # the part of the output that is checked
    returns: str = ""                   # the form of the output, said when the student's has another
    gradients: Callable[[Case], tuple[dict, Callable[[Any], dict]]] | None = None
    invariants: Callable[[Case, Any], str | None] | None = None
    relations: Callable[[list[Case], list], str | None] | None = None   # invariants across cases (causality)
    rtol: float = compare.RTOL
    atol: float = compare.ATOL
    time_limit: float = 10.0
    imports: str = "import numpy as np"
    stub_test: str = ""                 # the body of the student's own test in the stub
    kind: str = "numpy"
    may_change: tuple[str, ...] = ()    # arguments the function may change (a random generator's state)

    @property
    def arg_names(self) -> list[str]:
        inner = self.signature[self.signature.index("(") + 1:self.signature.rindex(")")]
        return [part.split("=")[0].strip() for part in inner.split(",") if part.strip() not in ("", "*")]


@dataclasses.dataclass
class Report:
    exercise: str
    file: str
    checks: list[dict] = dataclasses.field(default_factory=list)
    diagnosis: dict | None = None
    printed: str = ""
    printed_chars: int = 0

    @property
    def passed(self) -> bool:
        return bool(self.checks) and all(c["passed"] for c in self.checks)

    def add(self, name: str, passed: bool, message: str = "") -> None:
        self.checks.append({"name": name, "passed": passed, "message": message})

    def as_dict(self) -> dict:
        return {"exercise": self.exercise, "file": self.file, "passed": self.passed, "checks": self.checks,
                "diagnosis": self.diagnosis, "printed_chars": self.printed_chars,
                "printed": self.printed[:1000]}


def _call(function: Callable, case: Case):
    return function(*copy.deepcopy(case.args), **copy.deepcopy(case.kwargs))


def _compared(exercise: Exercise, output):
    try:
        return exercise.compared(output), None
    except Exception:  # noqa: BLE001 - the student's output has another form
        return None, f"the output must be {exercise.returns or 'like the reference'}; got a {type(output).__name__}"


def _agreeing_leaves(exercise: Exercise, implementation: Callable, cases: list[Case], outputs: list) -> int:
    """How many (case, output part) pairs of ``implementation`` agree with the student's outputs."""
    count = 0
    for case, out in zip(cases, outputs):
        try:
            theirs = exercise.compared(_call(implementation, case))
        except Exception:  # noqa: BLE001 - a mutant that cannot run on a case agrees with nothing there
            continue
        if compare.structure_error(theirs, out, "x"):
            continue
        for _, a, b in compare.leaf_pairs(theirs, out, "x"):
            count += compare.agrees(a, b, exercise.rtol, exercise.atol)
    return count


def diagnose(exercise: Exercise, cases: list[Case], student_outputs: list, expected: list) -> dict | None:
    """The catalogued mistake that best explains the student's outputs, or None.

    A mistake whose outputs match the student's on every case is the diagnosis. Otherwise the
    mistake that agrees with the most parts of the outputs (each case's weights, scores, ...) is the
    likely one, if it agrees with more of them than the reference does: a student's code often has
    one catalogued mistake plus a slip of its own (e.g. the wrong softmax axis and no care for
    fully masked rows).
    """
    if all(compare.agrees(r, o, exercise.rtol, exercise.atol) for r, o in zip(expected, student_outputs)):
        return None
    total = sum(len(list(compare.leaf_pairs(r, r, "x"))) for r in expected)
    reference_score = sum(compare.agrees(a, b, exercise.rtol, exercise.atol)
                          for r, o in zip(expected, student_outputs) for _, a, b in compare.leaf_pairs(r, o, "x"))
    scored = [(_agreeing_leaves(exercise, m.implementation, cases, student_outputs), m) for m in exercise.mistakes]
    if not scored:
        return None
    best = max(score for score, _ in scored)
    winners = [m for score, m in scored if score == best]
    if best <= reference_score or len(winners) != 1:
        return None
    mistake = winners[0]
    likely = "" if best == total else f" (it explains {best} of {total} checked values)"
    return {"mistake": mistake.id, "title": mistake.title + likely, "explanation": mistake.explanation,
            "exact": best == total}


def check(exercise: Exercise, path, time_limit: float | None = None, cases: list[Case] | None = None) -> Report:
    """Run the student's ``path`` on the exercise's cases and check everything the exercise names."""
    return check_many([(exercise, path)], time_limit, cases)[0]


def check_many(items: list[tuple[Exercise, object]], time_limit: float | None = None,
               cases: list[Case] | None = None) -> list[Report]:
    """:func:`check` of several (exercise, file) pairs with one warm child process for all of them.
    ``time_limit`` (default: each exercise's own) is for each check."""
    # The child makes the exercises' cases itself (they are deterministic), so this process can
    # import numpy or torch and compute the reference's outputs while the child works.
    jobs = [{"file": path, "function": ex.name, "arg_names": ex.arg_names, "time_limit": time_limit or ex.time_limit,
             **({"cases_of": ex.name, "catalog": "seqlab.learn.catalog"} if cases is None
                else {"calls": [(c.args, c.kwargs) for c in cases]})}
            for ex, path in items]
    all_cases: list[list[Case]] = []
    expected: dict[str, list] = {}

    def references():
        made: dict[str, list[Case]] = {}
        for ex, _ in items:
            if ex.name not in made:
                made[ex.name] = ex.cases() if cases is None else cases
                function = ex.reference()
                expected[ex.name] = [ex.compared(_call(function, case)) for case in made[ex.name]]
            all_cases.append(made[ex.name])

    runs = run_students(jobs, meanwhile=references)
    return [_report(ex, path, cs, run, expected[ex.name])
            for (ex, path), cs, run in zip(items, all_cases, runs)]


def _report(exercise: Exercise, path, cases: list[Case], run: StudentRun, expected: list) -> Report:
    report = Report(exercise=exercise.name, file=str(path))
    report.printed, report.printed_chars = run.printed, run.printed_chars
    if run.failure:
        report.add("runs", False, run.failure)
        return report
    first = run.calls[0] if run.calls else None
    if first is not None and first.not_implemented:
        report.add("runs", False, f"not implemented yet: {exercise.name}() in {path} still raises "
                                  "NotImplementedError; write its body")
        return report
    for case, call in zip(cases, run.calls):
        if call.error:
            report.add("runs", False, f"{exercise.name}() raised on {case.label}: {call.error}")
            return report
    report.add("runs", True)
    mutated = sorted({name for call in run.calls for name in call.mutated if name not in exercise.may_change})
    report.add("inputs unchanged", not mutated, "" if not mutated else (
        f"{exercise.name}() changed its input {', '.join(mutated)} in place; the caller still needs it: "
        "work on a copy (x = x.copy(), or build new arrays) instead of assigning into it"))
    outputs = []
    for case, call, ref in zip(cases, run.calls, expected):
        out, error = _compared(exercise, call.output)
        error = error or compare.structure_error(ref, out, "output")
        if error:
            report.add("shapes and types", False, f"on {case.label}: {error}")
            return report
        outputs.append(out)
    report.add("shapes and types", True)
    first_bad = None
    for kind in ("worked example", "random inputs"):
        selected = [i for i, c in enumerate(cases) if (c.label == "the worked example") == (kind == "worked example")]
        bad = next((i for i in selected if compare.first_difference(
            expected[i], outputs[i], "output", exercise.rtol, exercise.atol)), None)
        if selected:
            message = ""
            if bad is not None:
                first_bad = first_bad if first_bad is not None else bad
                where, e, a = compare.first_difference(expected[bad], outputs[bad], "output", exercise.rtol, exercise.atol)
                message = f"on {cases[bad].label}: {where} is {compare.show(a)}, expected {compare.show(e)}"
            report.add(f"values ({kind})", bad is None, message)
    if exercise.gradients is not None:
        message = ""
        for case, out in zip(cases, (c.output for c in run.calls)):
            if not case.gradcheck:
                continue
            numeric, pick = exercise.gradients(case)
            got = pick(out)
            for key, value in numeric.items():
                found = compare.first_difference(value, got[key], f"gradient {key!r}", 1e-5, 1e-7)
                if found:
                    where, e, a = found
                    message = (f"on {case.label}: {where} is {compare.show(a)} but the central finite "
                               f"difference of the loss gives {compare.show(e)}")
                    break
            if message:
                break
        report.add("gradients vs finite differences", not message, message)
    if exercise.invariants is not None or exercise.relations is not None:
        message = ""
        if exercise.invariants is not None:
            message = next((f"on {case.label}: {m}" for case, call in zip(cases, run.calls)
                            if (m := exercise.invariants(case, call.output))), "")
        if not message and exercise.relations is not None:
            message = exercise.relations(cases, [call.output for call in run.calls]) or ""
        report.add("invariants", not message, message)
    if not report.passed and first_bad is not None:
        report.diagnosis = diagnose(exercise, cases, outputs, expected)
        if report.diagnosis is None:
            where, e, a = compare.first_difference(expected[first_bad], outputs[first_bad], "output",
                                                   exercise.rtol, exercise.atol)
            report.diagnosis = {"mistake": None, "title": "no catalogued mistake matches",
                                "explanation": f"first difference on {cases[first_bad].label}: {where}: "
                                               f"expected {compare.show(e)}, got {compare.show(a)}"}
    return report


def central_differences(loss: Callable[[], float], arrays: dict[str, Any], eps: float = 1e-6) -> dict:
    """d loss / d each entry of each array (changed in place and restored), by central differences.
    A scalar is given as a 0-d array."""
    import numpy as np
    grads = {}
    for name, array in arrays.items():
        g = np.zeros(array.shape)
        for index in np.ndindex(array.shape):
            old = array[index]
            array[index] = old + eps
            up = loss()
            array[index] = old - eps
            down = loss()
            array[index] = old
            g[index] = (up - down) / (2 * eps)
        grads[name] = g
    return grads
