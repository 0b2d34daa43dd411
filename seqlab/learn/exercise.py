"""An Implement exercise's record: what its check compares, and the building blocks of its check.py.

An :class:`Exercise` names the reference function (the exercise's name is the function's name),
the calls to check it on (:class:`Case`: the lesson's worked example, random inputs), what part of
the output is compared, finite-difference gradients where the exercise is a backward pass,
invariants, and a catalogue of :class:`Mistake` mutants. ``seqlab.learn.judge.run_checks`` runs a
student's file against it and returns a ``Report``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from seqlab.learn import compare, diagnosis
from seqlab.learn.runner import Job


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
