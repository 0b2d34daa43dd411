"""The check of a student's file against an :class:`~seqlab.learn.exercise.Exercise`, and its Report.

:func:`run_checks` (one file) and :func:`check_many` (several, one warm child for all) send the cases
to the student's code in a separate process (``seqlab.learn.runner``, in the sandbox), compute the
reference's side (:class:`Expected`) meanwhile, then judge what came back: the values, the forms and
dtypes, the gradients, each sentence of the contract, and, where something failed, the diagnosis
(``seqlab.learn.diagnosis``).
"""

from __future__ import annotations

import copy
import dataclasses
import warnings
from collections.abc import Callable

import numpy as np

from seqlab.learn import compare, diagnosis
from seqlab.learn.exercise import _GENERIC_SPLIT, GENERIC_CHECKS, Case, Differs, Exercise, OtherForm, Spec, _words
from seqlab.learn.runner import CallResult, StudentRun, run_students, student_text


@dataclasses.dataclass
class Report:
    exercise: str
    file: str
    checks: list[dict] = dataclasses.field(default_factory=list)
    diagnosis: dict | None = None
    printed: str = ""
    printed_chars: int = 0
    notes: list[str] = dataclasses.field(default_factory=list)   # accepted conventions, in English
    conventions: list[tuple[str, str]] = dataclasses.field(default_factory=list)  # (mistake id, "passes" | "against")
    note: str = ""                      # for the teacher, not the student (the runner's StudentRun.note)
    sandbox_note: str = ""              # why the code ran without a sandbox, when the student is to be told
    timed_out: bool = False             # the code ran past its time limit (the runner's StudentRun.timed_out)
    not_implemented: bool = False       # the function still raises NotImplementedError (the stub as handed out)

    @property
    def passed(self) -> bool:
        return bool(self.checks) and all(c["passed"] for c in self.checks)

    def add(self, name: str, passed: bool, message="") -> None:
        self.checks.append(check_record(name, passed, message))

    def as_dict(self) -> dict:
        return {"exercise": self.exercise, "file": self.file, "passed": self.passed, "checks": self.checks,
                "diagnosis": self.diagnosis, "notes": self.notes, "conventions": self.conventions, "printed_chars": self.printed_chars,
                "printed": self.printed[:1000]}


def check_record(name: str, passed: bool, message="", cause: str = "") -> dict:
    """One check as the report keeps it: its name, whether it passed, the message in English and, where
    the message is words said later (words.Said), those words ("said") for the student's language."""
    from seqlab.learn.words import Said
    return {"name": name, "passed": passed, "message": str(message),
            **({"said": message.as_json()} if isinstance(message, Said) else {}),
            **({"cause": cause} if cause else {})}


def _call(function: Callable, case: Case):
    return function(*copy.deepcopy(case.args), **copy.deepcopy(case.kwargs))


def _compared(exercise: Exercise, output):
    from seqlab.learn.words import said
    try:
        return exercise.compared(output), None
    except Exception:  # noqa: BLE001 - the student's output has another form
        return None, said("check.must_be", returns=exercise.returns or said("check.like_reference"),
                          kind=type(output).__name__)


class Expected:
    """The reference's side of an exercise's check, computed once for every file checked against it:
    its outputs on the cases, the finite-difference gradients, the per-step terms, and the outputs of
    any implementation a diagnosis runs (a mistake's mutant, an accepted convention)."""

    def __init__(self, exercise: Exercise, cases: list[Case]):
        self.exercise, self.cases = exercise, cases
        self.raw, self.checked = self.outputs_of(exercise.reference())
        self._gradients: dict[int, tuple] = {}
        self._terms: dict[int, dict | None] = {}

    def outputs_of(self, implementation: Callable) -> tuple[list, list]:
        """(as returned, checked form) on every case; None where it raises."""
        cache = self.__dict__.setdefault("_runs", {})
        key = id(implementation)
        if key not in cache:
            raw, checked = [], []
            for case in self.cases:
                try:
                    with np.errstate(all="ignore"), warnings.catch_warnings():
                        warnings.simplefilter("ignore")       # a mutant's overflow is part of its output
                        out = _call(implementation, case)
                    raw.append(out)
                    checked.append(self.exercise.compared(out))
                except Exception:  # noqa: BLE001 - a mutant that cannot run on a case agrees with nothing there
                    raw.append(None)
                    checked.append(None)
            cache[key] = (raw, checked, implementation)     # the implementation kept: its id stays its own
        return cache[key][:2]

    def gradients(self, i: int) -> tuple:
        if i not in self._gradients:
            self._gradients[i] = self.exercise.gradients(self.cases[i])
        return self._gradients[i]

    def terms(self, i: int) -> dict | None:
        if i not in self._terms:
            ex = self.exercise
            self._terms[i] = None if ex.step_terms is None or self.cases[i].spec else ex.step_terms(self.cases[i])
        return self._terms[i]


def run_checks(exercise: Exercise, path, time_limit: float | None = None, cases: list[Case] | None = None,
               launcher=None) -> Report:
    """Run the student's ``path`` on the exercise's cases and check everything the exercise names.
    (``seqlab.learn.check`` is the notebook's check by exercise name; this one takes the record.)"""
    return check_many([(exercise, path)], time_limit, cases, launcher)[0]


def check_many(items: list[tuple[Exercise, object]], time_limit: float | None = None,
               cases: list[Case] | None = None, launcher=None) -> list[Report]:
    """:func:`run_checks` of several (exercise, file) pairs with one warm child process for all of them.
    ``time_limit`` (default: each exercise's own) is for each check; ``launcher``: how the child starts
    (default: a bubblewrap sandbox where one runs, ``seqlab.learn.sandbox.for_check``). A check whose
    report cannot be made (an output the comparison cannot read) fails alone, saying why."""
    # The cases are made here and sent to the child as plain data; the reference's outputs are
    # computed here while the child works.
    made: dict[str, list[Case]] = {}
    for ex, _ in items:
        if ex.name not in made:
            made[ex.name] = ex.cases() if cases is None else cases
    jobs = [ex.job(path, [(c.args, c.kwargs) for c in made[ex.name]], time_limit) for ex, path in items]
    expected: dict[str, Expected] = {}

    def references():
        for ex, _ in items:
            if ex.name not in expected:
                expected[ex.name] = Expected(ex, made[ex.name])

    if launcher is None:
        from seqlab.learn.sandbox import for_check
        launcher = for_check().launcher()
    runs = run_students(jobs, meanwhile=references, launcher=launcher)
    reports = []
    for (ex, path), run in zip(items, runs):
        try:
            reports.append(_report(ex, path, run, expected[ex.name]))
        except Exception as error:  # noqa: BLE001 - one output the checker cannot read fails that check alone
            report = Report(exercise=ex.name, file=str(path), note=run.note)
            report.add("runs", False, f"seqlab could not compare what {ex.name}() returned: {type(error).__name__}: "
                                      f"{student_text(error, 300)}")
            reports.append(report)
    return reports


def _report(exercise: Exercise, path, run: StudentRun, ref: Expected) -> Report:
    from seqlab.learn.words import said
    report = Report(exercise=exercise.name, file=str(path), note=run.note)
    report.printed, report.printed_chars = run.printed, run.printed_chars
    cases = ref.cases
    if run.refused:                     # a static rule: nothing ran
        report.add("rules", False, run.failure_said or run.failure)
        refused = [CallResult(error=run.failure, broke_rule=run.failure) for _ in cases]
        report.diagnosis = diagnosis.diagnose(_evidence(exercise, cases, refused, [None] * len(cases), ref, report),
                                              *_GENERIC_SPLIT)
        return report
    if run.failure:
        report.add("runs", False, run.failure_said or run.failure)
        report.timed_out = run.timed_out
        return report
    first = run.calls[0] if run.calls else None
    if first is not None and first.not_implemented:
        report.add("runs", False, said("check.not_implemented", name=exercise.name, path=str(path)))
        report.not_implemented = True
        return report
    calls = list(run.calls)
    if len(calls) < len(cases):
        report.add("runs", False, said("check.not_called", name=exercise.name, case=cases[len(calls)].label))
        return report
    own = [i for i, c in enumerate(cases) if not c.spec]
    raised = [i for i in own if calls[i].error and not getattr(calls[i], "broke_rule", None)]
    if raised:
        first_raise = said("check.raised_on", name=exercise.name, case=cases[raised[0]].label,
                           error=calls[raised[0]].error)
        report.add("runs", False, first_raise if len(raised) == 1 else
                   said("check.raised_more", first=first_raise, n=len(raised) - 1, m=len(own)))
    else:
        report.add("runs", True)
    if len(raised) == len(own):           # nothing ran: the other checks would only repeat it
        report.diagnosis = diagnosis.diagnose(_evidence(exercise, cases, calls, [None] * len(cases), ref, report),
                                              *_GENERIC_SPLIT)
        return report
    checks, outputs = _judge(exercise, cases, calls, ref.raw, ref.checked, ref)
    report.checks += checks
    expected = ref.checked
    if not report.passed:
        # An accepted convention (a reading the stub allows): the code that follows it passes with a
        # note; code that follows it and has another mistake is judged and diagnosed against it.
        own = [i for i, c in enumerate(cases) if not c.spec and outputs[i] is not None]
        agree = lambda checked: sum(_agreeing_elements(checked[i], outputs[i], exercise.rtol, exercise.atol)
                                    for i in own if checked[i] is not None)
        best = agree(ref.checked)
        for mistake in (m for m in exercise.mistakes if m.accepted and m.implementation is not None):
            raw, checked = ref.outputs_of(mistake.implementation)
            if any(c is None for c in checked):
                continue
            again, theirs = _judge(exercise, cases, calls, raw, checked, ref)
            if all(c["passed"] for c in again):
                report.checks = report.checks[:1] + again
                report.notes.append(f"{mistake.title}: {mistake.explanation}")
                report.conventions.append((mistake.id, "passes"))
                return report
            if agree(checked) > best:
                best, expected, outputs = agree(checked), checked, theirs
                report.checks = report.checks[:1] + again
                report.notes = [f"{mistake.title}: checked against that reading ({mistake.explanation})"]
                report.conventions = [(mistake.id, "against")]
    if not report.passed:
        report.diagnosis = diagnosis.diagnose(_evidence(exercise, cases, calls, outputs, ref, report, expected),
                                              *_GENERIC_SPLIT)
    return report


def _agreeing_elements(expected, actual, rtol: float, atol: float) -> int:
    """How many elements of ``actual`` (the forms agree) equal ``expected``'s (-inf where -inf agrees)."""
    count = 0
    for _, e, a in compare.leaf_pairs(expected, actual, "x"):
        if isinstance(e, (bytes, str)):
            count += e == a
            continue
        x, y = compare._array(e), compare._array(a)
        if x.shape == y.shape:
            same = (x == y) if x.dtype.kind in "biuSUO" else np.isclose(y.astype(np.float64), x, rtol=rtol, atol=atol,
                                                                        equal_nan=True)
            count += int(np.sum(same))
    return count


def _evidence(exercise: Exercise, cases, calls, outputs, ref: Expected, report: Report,
              expected: list | None = None) -> diagnosis.Evidence:
    from seqlab.learn.words import from_json
    return diagnosis.Evidence(
        exercise, cases, outputs, ref.checked if expected is None else expected, [c.output for c in calls],
        [dict(getattr(c, "extra", None) or {}) for c in calls],
        {c["name"]: c["message"] for c in report.checks if not c["passed"]},
        lambda implementation: ref.outputs_of(implementation)[1], ref.terms,
        [c.error for c in calls],
        {c["name"]: from_json(c["said"]) for c in report.checks if not c["passed"] and "said" in c})


def _judge(exercise: Exercise, cases: list[Case], calls: list, raw_expected: list, expected: list,
           ref: Expected) -> tuple[list[dict], list]:
    """Every check after "runs", against ``expected`` (the reference's outputs, or an accepted
    convention's). Returns (checks, the student's outputs in the checked form, None where unusable)."""
    from seqlab.learn.words import said
    checks: list[dict] = []

    def add(name, passed, message="", cause=""):
        checks.append(check_record(name, passed, message, cause))

    own = [i for i, c in enumerate(cases) if not c.spec]
    mutated = sorted({name for call in calls for name in call.mutated if name not in exercise.may_change})
    names = ", ".join(mutated[:3])
    add("inputs unchanged", not mutated, "" if not mutated else said(
        "check.changed_input", name=exercise.name,
        names=said("check.and_more", names=names, n=len(mutated) - 3) if len(mutated) > 3 else names))
    outputs: list = []
    shape_error = ""
    for i, (case, call) in enumerate(zip(cases, calls)):
        if call.error:          # a sentence's case (its check says so) or a broken rule (the rules check)
            outputs.append(None)
            continue
        out, error = _compared(exercise, call.output)
        error = error or (compare.structure_error(expected[i], out, "output") if expected[i] is not None else None)
        if error and not case.spec and not shape_error:
            shape_error = said("check.on_case", case=case.label, what=error)
        outputs.append(None if error else out)
    add("shapes and types", not shape_error, shape_error)
    own = [i for i in own if outputs[i] is not None]
    if not shape_error:
        for kind in ("worked example", "random inputs"):
            selected = [i for i in own if cases[i].worked == (kind == "worked example")]
            bad = next((i for i in selected if compare.first_difference(
                expected[i], outputs[i], "output", exercise.rtol, exercise.atol)), None)
            if selected:
                message = ""
                if bad is not None:
                    where, e, a = compare.first_difference(expected[bad], outputs[bad], "output",
                                                           exercise.rtol, exercise.atol)
                    message = said("check.on_case", case=cases[bad].label, what=said(
                        "check.value_is", where=where, got=compare.show(a), expected=compare.show(e)))
                add(f"values ({kind})", bad is None, message)
        if exercise.gradients is not None:
            add("gradients vs finite differences", *_gradient_check(exercise, cases, calls, own, ref))
        if exercise.invariants is not None or exercise.relations is not None:
            message = ""
            try:
                if exercise.invariants is not None:
                    message = next((said("check.on_case", case=cases[i].label, what=m) for i in own
                                    if (m := exercise.invariants(cases[i], calls[i].output))), "")
                if not message and exercise.relations is not None:
                    message = exercise.relations([cases[i] for i in own], [calls[i].output for i in own]) or ""
            except Exception as error:  # noqa: BLE001 - an output the invariant cannot read
                message = said("check.unreadable_as", returns=exercise.returns or said("check.like_reference"),
                               error=repr(error))
            add("invariants", not message, message)
    for spec in exercise.spec:
        if spec.id in GENERIC_CHECKS:
            continue
        chosen = [i for i, c in enumerate(cases) if c.spec == spec.id] if spec.cases is not None else \
            [i for i, c in enumerate(cases) if not c.spec]
        add(spec.id, *_spec_check(exercise, spec, cases, calls, chosen, raw_expected, expected, outputs))
    broken = next((c.broke_rule for c in calls if getattr(c, "broke_rule", None)), None)
    if broken or exercise.rules:
        from seqlab.learn.static_rules import broken_rule_words
        add("rules", not broken, broken_rule_words(broken) if broken else "")
    return checks, outputs


def _gradient_check(exercise: Exercise, cases, calls, own, ref: Expected) -> tuple[bool, str]:
    from seqlab.learn.words import said
    for i in own:
        if not cases[i].gradcheck:
            continue
        numeric, pick = ref.gradients(i)
        try:
            got = pick(calls[i].output)
        except Exception:  # noqa: BLE001 - the shapes check said what is missing
            return False, said("check.no_gradients", case=cases[i].label)
        for key, value in numeric.items():
            found = compare.first_difference(value, got[key], repr(key), 1e-5, 1e-7)
            if found:
                where, e, a = found
                return False, said("check.gradient_vs_fd", case=cases[i].label, where=said("check.gradient", where=where),
                                   got=compare.show(a), expected=compare.show(e))
    return True, ""


def _spec_check(exercise: Exercise, spec: Spec, cases, calls, chosen, raw_expected, expected,
                outputs) -> tuple[bool, object, str]:
    """(passed, message, cause): why it failed, when that is not the sentence's own business: "values"
    (the values on its cases differ from the reference's), "form" (the output has another form),
    "raised" (the code raised on its cases); "" otherwise (a dtype, a count, anything a verify says)."""
    from seqlab.learn.words import Both, said
    sentence = Both(_words(spec.sentence), _words(spec.sentence_zh or spec.sentence))

    def quoted(message):
        return said("check.contract", message=message, sentence=sentence)
    for i in chosen:
        case, call = cases[i], calls[i]
        if getattr(call, "broke_rule", None):
            continue                    # the rules check says so
        if call.error:
            return False, quoted(said("check.raised_on", name=exercise.name, case=case.label, error=call.error)), "raised"
        if spec.verify is not None:
            try:
                message = spec.verify(case, call.output, raw_expected[i], dict(getattr(call, "extra", None) or {}))
            except Exception as error:  # noqa: BLE001 - an output of another form
                message = OtherForm(f"the output could not be read: {type(error).__name__}: {error}")
                message.said = said("check.unreadable", error=f"{type(error).__name__}: {error}")
            if message:
                cause = "values" if isinstance(message, Differs) else "form" if isinstance(message, OtherForm) else ""
                return False, quoted(said("check.on_case", case=case.label,
                                          what=getattr(message, "said", None) or message)), cause
            continue
        if outputs[i] is None:
            out, error = _compared(exercise, call.output)
            error = error or compare.structure_error(expected[i], out, "output")
            return False, quoted(said("check.on_case", case=case.label, what=error)), "form"
        found = compare.first_difference(expected[i], outputs[i], "output", exercise.rtol, exercise.atol)
        if found:
            where, e, a = found
            return False, quoted(said("check.on_case", case=case.label, what=said(
                "check.value_is", where=where, got=compare.show(a), expected=compare.show(e)))), "values"
    return True, "", ""
