"""An Implement exercise and the check of a student's file against it.

An :class:`Exercise` names the reference function (the exercise's name is the function's name),
the calls to check it on (:class:`Case`: the lesson's worked example, random inputs), what part of
the output is compared, finite-difference gradients where the exercise is a backward pass,
invariants, and a catalogue of :class:`Mistake` mutants. :func:`run_checks` runs the student's file in a
separate process (``seqlab.learn.runner``) and returns a :class:`Report`.
"""

from __future__ import annotations

import copy
import dataclasses
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from seqlab.learn import compare, diagnosis
from seqlab.learn.runner import CallResult, Job, StudentRun, run_students, student_text


@dataclasses.dataclass
class Case:
    label: Any                         # "the worked example", "random inputs 1", ... (a str or words.Said)
    args: tuple
    kwargs: dict = dataclasses.field(default_factory=dict)
    gradcheck: bool = False            # compare the gradients with central finite differences
    spec: str = ""                     # the id of the Spec (sentence) this case checks; "" for the exercise's own

    @property
    def worked(self) -> bool:
        """The lesson's worked example (the first of the exercise's own cases)."""
        return str(self.label) == "the worked example"


def numbered_cases(make: Callable[..., tuple[tuple, dict]], settings, gradcheck: bool = False) -> list[Case]:
    """One Case per setting, made by make(k, *setting) -> (args, kwargs); the first (k = 0) is
    labelled "the worked example", the next "random inputs 1", "random inputs 2", ...
    A setting that is not a tuple is one argument: numbered_cases(lambda k, n: ((n,), {}), (3, 6))
    -> [Case("the worked example", (3,)), Case("random inputs 1", (6,))]."""
    from seqlab.learn.words import said
    return [Case(said("cases.worked") if k == 0 else said("cases.random", k=k),
                 *make(k, *(setting if isinstance(setting, tuple) else (setting,))), gradcheck=gradcheck)
            for k, setting in enumerate(settings)]


@dataclasses.dataclass(frozen=True)
class Check:
    """The code of a contract sentence's named check (a step's ``check.py``, ``CHECKS``): the cases
    that exercise the sentence (None: the exercise's own) and ``verify`` (see :class:`Spec`)."""
    cases: Callable[[], list[Case]] | None = None
    verify: Callable[[Case, Any, Any, dict], str | None] | None = None


# The checks every exercise has, by name. A Spec with one of these ids documents the sentence that
# check enforces (it has no cases or verify of its own).
GENERIC_CHECKS = ("runs", "inputs unchanged", "shapes and types", "values (worked example)",
                  "values (random inputs)", "gradients vs finite differences", "invariants", "rules")


@dataclasses.dataclass(frozen=True)
class Spec:
    """One sentence of a stub's contract and its check (named ``id`` in the Report).

    ``sentence`` appears in ``Exercise.doc`` word for word (line breaks aside). ``cases()`` gives the
    calls that exercise the sentence (None: the exercise's own cases). ``verify(case, output,
    reference_output, extra)`` returns what is wrong, or None; the outputs are as returned (not the
    checked form) and ``extra`` is what the exercise's rules module returned for the call (INTERFACES.md
    A). Without ``verify``, the checked values are compared with the reference's. A version ignoring
    the sentence must fail this check."""
    id: str
    sentence: str
    cases: Callable[[], list[Case]] | None = None
    verify: Callable[[Case, Any, Any, dict], str | None] | None = None
    sentence_zh: str = ""


@dataclasses.dataclass(frozen=True)
class Mistake:
    """A common mistake: a mutant (``implementation``, the exercise's signature) and/or a recogniser
    of its whole family (``recognise(evidence) -> str | None``, seqlab.learn.diagnosis), with what
    it is (``title``), what it does and the fix (``explanation``), and ``why`` (en, zh): a teacher's
    short paragraph on why it is wrong, which the lesson's "Common mistakes" section shows.
    ``convention`` names a valid other convention (e.g. "the update gate read as the fraction of
    the NEW state"): ``accepted`` ones pass with a note, the others fail, the explanation saying
    "this exercise uses X; your code uses Y"."""
    id: str
    title: str
    explanation: str
    implementation: Callable | None = None
    recognise: Callable | None = None
    title_zh: str = ""
    explanation_zh: str = ""
    why: tuple[str, str] = ("", "")
    convention: str | None = None
    accepted: bool = False


class Differs(str):
    """A verify's message that says the VALUES differ from the reference's (not their form, dtype or a
    rule): where the exercise's own values differ too, what the student reads groups such checks
    (seqlab.learn.feedback) instead of quoting each sentence as broken. ``said``: the same in words
    said later (words.Said), where the verify gives them."""
    said = None


class OtherForm(str):
    """A verify's message that says the output has another form than the reference's (a part
    missing, another shape): grouped like :class:`Differs` when the "shapes and types" check failed."""
    said = None


def same_values(*paths, part: Callable[[Any], Any] | None = None, rtol: float = compare.RTOL,
                atol: float = compare.ATOL) -> Callable:
    """A Spec's verify: the output's leaves at ``paths`` (a key, an index or a tuple of them; none:
    the whole output), after ``part(output)`` when given, agree with the reference's (a difference
    is said as a :class:`Differs`)."""
    from seqlab.learn.words import said

    def verify(case, output, reference_output, extra):
        got, want = (part(output), part(reference_output)) if part else (output, reference_output)
        for path in paths or ((),):
            path = path if isinstance(path, tuple) else (path,)
            name = diagnosis.leaf_name(path)
            try:
                actual = diagnosis.pick(got, path)
            except (KeyError, IndexError, TypeError):
                return _with_said(OtherForm(f"{name} is missing"), said("check.missing", name=name))
            expected = diagnosis.pick(want, path)
            error = compare.structure_error(expected, actual, name)
            if error:
                return _with_said(OtherForm(error), error)
            found = compare.first_difference(expected, actual, name, rtol, atol)
            if found:
                where, e, a = found
                return _with_said(Differs(f"{where} is {compare.show(a)}, expected {compare.show(e)}"),
                                  said("check.value_is", where=where, got=compare.show(a), expected=compare.show(e)))
        return None
    return verify


def _with_said(message: str, words):
    """A verify's English message with its words said later (``message.said``)."""
    message.said = words
    return message


def differs(words) -> Differs:
    """A verify's "the values differ" message from words said later (a words.Said)."""
    return _with_said(Differs(str(words)), words)


def other_form(words) -> OtherForm:
    """A verify's "another form" message from words said later (a words.Said)."""
    return _with_said(OtherForm(str(words)), words)


def _dtype(x) -> str | None:
    return str(x.dtype) if compare._is_tensor(x) or isinstance(x, np.ndarray) else None


def same_dtypes(part: Callable[[Any], Any] | None = None) -> Callable:
    """A Spec's verify: every array (or tensor) in the output, after ``part(output)`` when given, has
    the dtype of the reference's, and every number the reference gives as a float is a float64 one
    (a Python float or numpy.float64, not a float32 or an array)."""
    from seqlab.learn.words import said

    def verify(case, output, reference_output, extra):
        got, want = (part(output), part(reference_output)) if part else (output, reference_output)
        for path, expected in diagnosis.leaves(want):
            name = diagnosis.leaf_name(path)
            try:
                actual = diagnosis.pick(got, path)
            except (KeyError, IndexError, TypeError):
                return said("check.missing", name=name)
            wanted = _dtype(expected)
            if wanted is not None and _dtype(actual) != wanted:
                return said("check.dtype_is", name=name, got=_dtype(actual) or type(actual).__name__, expected=wanted)
            if isinstance(expected, float) and type(actual).__name__ not in ("float", "float64"):
                return said("check.float64_number", name=name, kind=f"{type(actual).__module__}.{type(actual).__name__}")
        return None
    return verify


def shared_mistake(key: str, recognise: Callable | None = None, implementation: Callable | None = None,
                   mistake_id: str | None = None, **values) -> Mistake:
    """A mistake whose words several exercises share (``words.toml``, ``mistakes.KEY``, its {names}
    filled from ``values``: a text, or {"en": ..., "zh": ...}), under the id ``mistake_id`` (default: the
    key); the entry's ``convention`` and ``accepted``, where it has them, name a valid other convention
    (see :class:`Mistake`)."""
    from seqlab.learn.words import say, table
    given = {lang: {k: v if isinstance(v, str) else v.get(lang) or v["en"] for k, v in values.items()}
             for lang in ("en", "zh")}
    title, fix, why = (tuple(say(f"mistakes.{key}.{field}", lang, **given[lang]) for lang in ("en", "zh"))
                       for field in ("title", "fix", "why"))
    other = table()["mistakes"][key]
    return Mistake(mistake_id or key, title[0], fix[0], implementation, recognise, title[1], fix[1], why,
                   other.get("convention"), bool(other.get("accepted", False)))


# Mistakes any exercise can show, after its own: recognised from the check that failed.
GENERIC_MISTAKES = (
    shared_mistake("inputs_changed_in_place", diagnosis.failed_check("inputs unchanged", alone=False)),
    shared_mistake("shape_mismatch", diagnosis.raised(r"ValueError.*(shape|align|broadcast|mismatch)")),
    shared_mistake("output_form", diagnosis.failed_check("shapes and types", alone=False)),
    shared_mistake("rule_broken", diagnosis.failed_check("rules", alone=False)),
)


_LAST = ("output_form", "shape_mismatch")     # tried after the exercise's own mistakes
_FIRST = ("inputs_changed_in_place",)          # tried before them: the values are then no evidence
# diagnosis.diagnose's (generic, last, first)
_GENERIC_SPLIT = (tuple(m for m in GENERIC_MISTAKES if m.id not in _LAST + _FIRST),
                  tuple(m for m in GENERIC_MISTAKES if m.id in _LAST),
                  tuple(m for m in GENERIC_MISTAKES if m.id in _FIRST))


def _words(text: str) -> str:
    return " ".join(text.split())


@dataclasses.dataclass
class Exercise:
    name: str
    title: str
    title_zh: str
    signature: str                      # "rnn_bptt(params, xs, h0, dys, dh_last=None)"
    doc: str                            # the contract, for the stub's docstring
    reference: Callable[[], Callable]   # returns the reference function (imported on use)
    cases: Callable[[], list[Case]]     # the calls checked: the exercise's own, then every Spec's (see below)
    mistakes: tuple[Mistake, ...] = ()
    compared: Callable[[Any], Any] = lambda out: out      # the part of the output that is checked
    returns: Any = ""                   # the form of the output (a str or words.Both), said when it has another
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
    spec: tuple[Spec, ...] = ()         # one per sentence of the contract
    rules: dict | None = None           # job["rules"] for the child's rules module (INTERFACES.md A)
    step: str = ""                      # the path's step that teaches it (default: the name)
    widget: str = ""                    # the explorer anchor (default: the step's `look`)
    step_terms: Callable[[Case], dict] | None = None   # the reference's per-time-step terms {name: (T, ...)}
    axes: dict = dataclasses.field(default_factory=dict)   # output key -> names of its axes, for diagnoses
    packages: tuple[str, ...] = ()      # third-party packages the student's code may import (default: by kind)
    helpers: dict[str, str] = dataclasses.field(default_factory=dict)  # import name -> module whose source is given
    solution: str = ""                  # what `seqlab learn solution` shows beside the reference ("seqlab.model.SwiGLU")
    doc_zh: str = ""                    # the contract in Chinese (English where a sentence has none)
    check_names: dict = dataclasses.field(default_factory=dict)   # a sentence's check id -> its Chinese name

    def __post_init__(self):
        if not self.step:
            self.step = self.name
        if not self.widget:
            from seqlab.learn.path import STEP_BY_ID
            step = STEP_BY_ID.get(self.step)
            self.widget = step.look if step is not None else ""
        doc = _words(self.doc)
        for spec in self.spec:
            if _words(spec.sentence) not in doc:
                raise ValueError(f"{self.name}: the sentence of spec {spec.id!r} is not in the docstring: "
                                 f"{spec.sentence!r}")
            generic = spec.id in GENERIC_CHECKS
            if generic == (spec.cases is not None or spec.verify is not None):
                raise ValueError(f"{self.name}: spec {spec.id!r} " + (
                    "names a check every exercise has; it takes no cases or verify" if generic else
                    "needs cases or a verify (or the id of a check every exercise has)"))
        if not getattr(self.cases, "with_specs", False):
            own, specs = self.cases, self.spec

            def cases() -> list[Case]:
                made = list(own())
                for spec in specs:
                    if spec.cases is not None:
                        made += [dataclasses.replace(c, spec=spec.id) for c in spec.cases()]
                return made
            cases.with_specs = True
            cases.own = own
            self.cases = cases

    def job(self, path, calls: list[tuple[tuple, dict]], time_limit: float | None = None) -> Job:
        """The runner's job that calls the function of the file ``path`` on each ``(args, kwargs)`` of
        ``calls`` (seqlab.learn.runner's interface)."""
        import importlib
        packages = self.packages or (("numpy", "torch") if self.kind == "torch" else ("numpy",))
        helpers = {name: Path(importlib.import_module(module).__file__).read_text(encoding="utf-8")
                   for name, module in self.helpers.items()}
        return Job(path, self.name, list(calls), time_limit or self.time_limit,
                   self.rules, packages, helpers, self.arg_names)

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


def central_differences(loss: Callable[[], float], arrays: dict[str, Any], eps: float = 1e-6) -> dict:
    """d loss / d each entry of each array (changed in place and restored), by central differences.
    A scalar is given as a 0-d array."""
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
