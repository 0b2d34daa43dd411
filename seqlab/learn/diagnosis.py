"""Diagnoses from the structure of the difference between a student's outputs and the reference's.

A failed check gathers its :class:`Evidence` (the cases, both sides' outputs, the failed checks, the
per-time-step terms) and :func:`diagnose` names the mistake:

0. an input changed in place ("inputs unchanged" failed): the values then say nothing of the formula;
1. a catalogued mistake whose implementation gives the student's outputs on every case (exact);
2. a catalogued mistake whose ``recognise(evidence)`` fits: a FAMILY of wrong answers, found from the
   structure of the difference (a factor, a transpose, a shift, part of a sum over time, a failed
   sentence of the contract) and said where it fits. Its condition holds on every case it speaks of,
   the random cases included: one that holds on the worked example alone, where several mistakes
   give the same numbers, names nothing;
3. otherwise no mistake: :func:`describe` says which outputs are right, which differ, where and how,
   and the record keeps the CLOSEST mistake (the implementation that agrees with the most parts, when
   more than the reference) with how many checked values it explains. A partial match is never the
   headline: it would send the student to the wrong paragraph.

The recognisers below are building blocks for ``Mistake.recognise``: each takes the parts of the
output it looks at and returns a function of the evidence that gives a sentence or None.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from seqlab.learn import compare
from seqlab.learn.relations import (  # noqa: F401 - also the recognisers' building blocks as D.factor, D.relation
    _joined, array, axes_of, axis_said, close, differing, factor, is_transposed, leaf_name, leaves, listed,
    named_factor, pick, positions, relation, shift,
)

Recogniser = Callable[["Evidence"], "str | None"]
Path = tuple  # a leaf's place in an output: ("xs",), (1, "Wx"), ...


# --- the evidence --------------------------------------------------------------------------------------------
@dataclasses.dataclass
class Evidence:
    """What a check saw, for the recognisers. Outputs are in the checked form (``Exercise.compared``);
    ``outputs[i]`` is None where the student's call raised or returned another form."""
    exercise: Any
    cases: list
    outputs: list
    expected: list
    raw: list
    extras: list
    failed: dict                                   # failed check name -> its message
    implementation_outputs: Callable[[Callable], list]   # an implementation's checked outputs, cached
    step_terms: Callable[[int], dict | None]       # the exercise's per-time-step terms of case i, cached
    errors: list = dataclasses.field(default_factory=list)   # what each call raised (None: it returned)
    failed_said: dict = dataclasses.field(default_factory=dict)   # failed check name -> its message as words said later

    @property
    def rtol(self) -> float:
        return self.exercise.rtol

    @property
    def atol(self) -> float:
        return self.exercise.atol

    def own(self) -> list[int]:
        """Indices of the exercise's own cases (not a sentence's)."""
        return [i for i, c in enumerate(self.cases) if not c.spec]

    def usable(self, cases: str = "own") -> list[int]:
        """Indices of the cases (own, or "all") where the student's output has the reference's form."""
        indices = self.own() if cases == "own" else range(len(self.cases))
        return [i for i in indices if self.outputs[i] is not None]

    def leaf(self, i: int, path) -> tuple[Any, Any]:
        """(expected, actual) of the leaf at ``path`` (a key, an index or a tuple of them) in case i."""
        path = path if isinstance(path, tuple) else (path,)
        return pick(self.expected[i], path), pick(self.outputs[i], path)

    def close(self, expected, actual) -> bool:
        return close(expected, actual, self.rtol, self.atol)

    def wrong(self, i: int, path) -> bool:
        e, a = self.leaf(i, path)
        return not self.close(e, a)


# --- describing a difference nothing recognises ----------------------------------------------------------------
def describe(ev: Evidence) -> tuple:
    """(where, explanation) in words said later: which outputs are right, which differ, and where and how."""
    from seqlab.learn.words import said
    usable = ev.usable("all")
    if not usable:
        return "", said("describe.no_form")
    names: dict[Path, list[int]] = {}
    for i in usable:
        for path, _ in leaves(ev.expected[i]):
            names.setdefault(path, [])
            if ev.wrong(i, path):
                names[path].append(i)
    wrong = {p: cs for p, cs in names.items() if cs}
    right = [p for p, cs in names.items() if not cs]
    if not wrong:
        return "", said("describe.values_agree", failed=", ".join(ev.failed))
    lines = []
    for path, cs in wrong.items():
        first = cs[0]
        e, a = ev.leaf(first, path)
        how = relation(e, a, ev.rtol, ev.atol, axes_of(ev.exercise, path))
        having = [i for i in usable if path in dict(leaves(ev.expected[i]))]
        if len(cs) == len(having):
            on = said("describe.every_case")
        else:
            on = _joined([ev.cases[i].label for i in cs[:3]], "describe.listed")
            on = said("describe.and_so_on", first=on) if len(cs) > 3 else on
        lines.append(said("describe.leaf_wrong", leaf=leaf_name(path), how=how, on=on) if len(cs) == 1 else
                     said("describe.leaf_wrong_seen", leaf=leaf_name(path), how=how, on=on, seen=ev.cases[first].label))
    where = _joined(lines, "describe.joined")
    if len(names) > 1:
        right_text = ", ".join(leaf_name(p) for p in right) if right else said("describe.none")
        explanation = said("describe.right_wrong", right=right_text, wrong=where)
    else:
        explanation = said("describe.sentence", where=where)
    return where, explanation


# --- recognisers (building blocks of Mistake.recognise) -------------------------------------------------------
def failed_check(name: str, text: str = "", alone: bool = True, raises: bool = False) -> Recogniser:
    """Fits when the check ``name`` (a sentence's id) failed; says the check's message. ``alone``:
    only when the values are right on the exercise's own cases (every one that ran), so that a
    sentence's check that fails because everything is wrong does not name that sentence.
    ``raises``: the check may have failed by an error the code raised (a sentence about the form of
    the inputs: None, an empty sequence, other sizes); otherwise only by what the code returned."""
    def recognise(ev: Evidence) -> str | None:
        message = ev.failed.get(name)
        if message is None or not raises and "() raised on " in message:
            return None
        if alone and ("runs" in ev.failed or not own_values_right(ev)):
            return None
        return _lead(text, ev.failed_said.get(name) or message)
    return recognise


def _lead(text, words):
    """``words`` after "``text``: " (both words said later, or English), or ``words`` alone."""
    from seqlab.learn.words import said
    return said("recognised.lead", text=text, what=words) if text else words


def own_values_right(ev: Evidence) -> bool:
    """The student's outputs have the reference's form and values on every own case that ran (and
    one ran at least)."""
    usable = ev.usable()
    ran = [i for i in ev.own() if not ev.errors or not ev.errors[i]]
    return bool(usable) and len(usable) == len(ran) and all(ev.close(ev.expected[i], ev.outputs[i]) for i in usable)


def matches(implementation: Callable, parts: tuple | None = None, cases: str = "all",
            text: str = "", only: Callable[[Any], bool] | None = None) -> Recogniser:
    """Fits when ``implementation`` (a version with the mistake) gives the student's values for the
    output ``parts`` (paths; None: all) on every usable case (own, or "all"), and the student is wrong
    there on one case at least. The rest of the output may hold other slips. A part the student has
    right where the mistake gives another value is evidence against it: a look-alike does not fit.
    ``only(case)``: the cases the mistake speaks of (where it is defined), when not all. Says which
    wrong parts agree."""
    def recognise(ev: Evidence) -> str | None:
        theirs = ev.implementation_outputs(implementation)
        seen = []
        for i in ev.usable(cases):
            if only is not None and not only(ev.cases[i]):
                continue
            paths = [p for p, _ in leaves(ev.expected[i])] if parts is None else \
                [p if isinstance(p, tuple) else (p,) for p in parts]
            if theirs[i] is None:
                if any(ev.wrong(i, path) for path in paths):
                    return None           # the mistake cannot run where the student's values differ
                continue
            for path in paths:
                try:
                    mutant = pick(theirs[i], path)
                except (KeyError, IndexError, TypeError):
                    return None
                if not close(mutant, pick(ev.outputs[i], path), ev.rtol, ev.atol):
                    return None
                if ev.wrong(i, path):
                    seen.append((path, i))
        if not seen:
            return None
        shown = ", ".join(sorted({leaf_name(p) for p, _ in seen}))
        from seqlab.learn.words import said
        return said("feedback.as_the_mistake_gives_after", text=text, parts=shown) if text else \
            said("feedback.as_the_mistake_gives", parts=shown)
    return recognise


def factor_of(parts: tuple, known: Callable[[Any], dict[str, float]], text: str = "",
              every_part: bool = False) -> Recogniser:
    """Fits when each wrong part among ``parts`` is the reference times one of the case's ``known``
    factors ({"1/T": 1 / T, ...}), the same name on every case. ``every_part``: each of ``parts`` is
    wrong so on every case whose factors are not 1 (a mistake that scales them all: the loss and its
    gradient). Says which factor, where."""
    def recognise(ev: Evidence) -> str | None:
        names, found = set(), []
        for i in ev.usable():
            for p in parts:
                path = p if isinstance(p, tuple) else (p,)
                if not ev.wrong(i, path):
                    if every_part and any(not math.isclose(v, 1.0, rel_tol=1e-9) for v in known(ev.cases[i]).values()):
                        return None
                    continue
                e, a = ev.leaf(i, path)
                c = factor(e, a, max(ev.rtol, 1e-6), ev.atol)
                name = None if c is None else named_factor(c, known(ev.cases[i]))
                if name is None:
                    return None
                names.add(name)
                found.append(leaf_name(path))
        if len(names) != 1:
            return None
        from seqlab.learn.words import said
        return _lead(text, said("recognised.factor", parts=", ".join(sorted(set(found))), name=names.pop()))
    return recognise


def transposed(part, text: str = "") -> Recogniser:
    """Fits when the wrong output ``part`` is the reference's transposed on every case."""
    path = part if isinstance(part, tuple) else (part,)

    def recognise(ev: Evidence) -> str | None:
        found = [i for i in ev.usable() if ev.wrong(i, path)]
        if not found or not all(is_transposed(*ev.leaf(i, path), ev.rtol, ev.atol) for i in found):
            return None
        from seqlab.learn.words import said
        return _lead(text, said("recognised.transposed", leaf=leaf_name(path)))
    return recognise


def shifted(part, axis: int = 0, axis_name: str = "position", text: str = "") -> Recogniser:
    """Fits when the wrong ``part`` is the reference shifted by one along ``axis`` on every case."""
    path = part if isinstance(part, tuple) else (part,)

    def recognise(ev: Evidence) -> str | None:
        found = [i for i in ev.usable() if ev.wrong(i, path)]
        if not found:
            return None
        shifts = {shift(*ev.leaf(i, path), axis, ev.rtol, ev.atol) for i in found}
        if len(shifts) != 1 or None in shifts:
            return None
        from seqlab.learn.words import said
        late = shifts.pop() > 0
        along = axis_said(axis_name) if isinstance(axis_name, str) else axis_name
        return _lead(text, said("recognised.shifted_late" if late else "recognised.shifted_early",
                                leaf=leaf_name(path), axis=along))
    return recognise


def normalised_along(part, axis: int, axis_name: str, text: str = "") -> Recogniser:
    """Fits when the wrong ``part`` (probabilities) sums to 1 along ``axis`` instead of the last axis."""
    path = part if isinstance(part, tuple) else (part,)

    def recognise(ev: Evidence) -> str | None:
        found = [i for i in ev.usable() if ev.wrong(i, path)]
        if not found:
            return None
        for i in found:
            _, a = ev.leaf(i, path)
            a = array(a)
            if a.ndim < 2 or not np.all(np.isfinite(a)):
                return None
            sums = a.sum(axis=axis)
            nonzero = sums[np.abs(sums) > 1e-12]
            if nonzero.size == 0 or not np.allclose(nonzero, 1.0, atol=1e-9):
                return None
        from seqlab.learn.words import said
        return _lead(text, said("recognised.normalised_along", leaf=leaf_name(path),
                                axis=axis_said(axis_name) if isinstance(axis_name, str) else axis_name))
    return recognise


def diagonal_offset(part, text: str = "") -> Recogniser:
    """Fits when a wrong (n, n) bool ``part`` differs from the reference on exactly one diagonal
    j - i = k (an off-by-one window); says which diagonal and how."""
    path = part if isinstance(part, tuple) else (part,)

    def recognise(ev: Evidence) -> str | None:
        found = [i for i in ev.usable() if ev.wrong(i, path)]
        if not found:
            return None
        offsets, how = set(), set()
        for i in found:
            e, a = (np.asarray(x) for x in ev.leaf(i, path))
            if e.ndim != 2 or e.dtype != bool:
                return None
            bad = np.argwhere(e != a)
            offsets |= {int(j - r) for r, j in bad}
            how |= {bool(a[r, j]) for r, j in bad}
        if len(offsets) != 1 or len(how) != 1:
            return None
        from seqlab.learn.words import said
        k = offsets.pop()
        which = said("recognised.diagonal_itself") if k == 0 else \
            said("recognised.diagonal", sign="+" if k > 0 else "-", k=abs(k))
        return _lead(text, said("recognised.on_diagonal", leaf=leaf_name(path), value="True" if how.pop() else "False",
                                which=which))
    return recognise


def summed_over_time(parts: tuple, text: str = "") -> Recogniser:
    """Fits when each wrong shared-weight gradient among ``parts`` is a PART of its sum over time: one
    step's term, the terms of a run of steps, or the mean over the steps, read from the exercise's
    per-time-step terms (``Exercise.step_terms``, {name: (T, ...)}). Says which steps it holds."""
    def recognise(ev: Evidence) -> str | None:
        found = []
        for i in ev.usable():
            terms = ev.step_terms(i)
            if not terms:
                continue
            for p in parts:
                path = p if isinstance(p, tuple) else (p,)
                if p not in terms or not ev.wrong(i, path):
                    continue
                said = partial_sum(terms[p], ev.leaf(i, path)[1], ev.rtol, ev.atol)
                if said is None:
                    return None
                found.append((leaf_name(path), said, i))
        if not found:
            return None
        from seqlab.learn.words import said as say
        kinds = _joined(sorted({said for _, said, _ in found}, key=str), "recognised.or")
        names = ", ".join(sorted({n for n, _, _ in found}))
        return _lead(text, say("recognised.summed_part", names=names, kinds=kinds, case=ev.cases[found[0][2]].label))
    return recognise


def partial_sum(terms, actual, rtol: float = 1e-6, atol: float = 1e-8):
    """How ``actual`` is part of terms.sum(0) over the steps (axis 0), in words said later, or None."""
    from seqlab.learn.words import said
    terms, actual = array(terms), array(actual)
    T = terms.shape[0]
    if actual.shape != terms.shape[1:]:
        return None
    if T > 1 and close(terms.sum(0) / T, actual, rtol, atol):
        return said("recognised.mean_not_sum")
    for t in range(T):
        if close(terms[t], actual, rtol, atol):
            if T > 1 and t == T - 1:
                return said("recognised.last_step_only")
            return said("recognised.first_step_only") if t == 0 else said("recognised.step_only", t=t)
    for start in range(T):
        for stop in range(start + 2, T + 1):
            if (start, stop) != (0, T) and close(terms[start:stop].sum(0), actual, rtol, atol):
                return said("recognised.steps_only", start=start, last=stop - 1)
    return None


def raised(pattern: str, text: str = "", cases: Callable[[Any], bool] | None = None, alone: bool = True) -> Recogniser:
    """Fits when a call raised an error whose text matches the regular expression ``pattern`` (on a
    case for which ``cases(case)`` holds, when given); says on which cases it raised and what.
    ``alone``: only when the values are right on every own case where the code returned (an error on
    a sentence's case does not explain values that differ where nothing was raised)."""
    import re
    compiled = re.compile(pattern, re.IGNORECASE)

    def recognise(ev: Evidence) -> str | None:
        hit = [i for i, error in enumerate(ev.errors) if error and compiled.search(error)
               and (cases is None or cases(ev.cases[i]))]
        if not hit:
            return None
        if alone and any(not ev.close(ev.expected[i], ev.outputs[i]) for i in ev.usable()):
            return None
        from seqlab.learn.words import said as say
        ran = [i for i, error in enumerate(ev.errors) if not error]
        said = say("recognised.raised_on", cases=_cases_listed(ev, hit), error=ev.errors[hit[0]].splitlines()[-1])
        if ran:
            said = say("recognised.ran_on", text=said, cases=_cases_listed(ev, ran))
        return _lead(text, said)
    return recognise


def _cases_listed(ev: Evidence, indices: list[int]):
    """The labels of the first three of the cases ``indices``, "..." after them when there are more."""
    from seqlab.learn.words import said
    labels = _joined([ev.cases[i].label for i in indices[:3]], "describe.listed")
    return said("recognised.and_more", first=labels) if len(indices) > 3 else labels


def any_of(*recognisers: Recogniser) -> Recogniser:
    """The first of ``recognisers`` that fits."""
    def recognise(ev: Evidence) -> str | None:
        return next((said for r in recognisers if (said := r(ev))), None)
    return recognise


# --- the diagnosis ---------------------------------------------------------------------------------------------
def _agreement(ev: Evidence, theirs: list) -> tuple[int, int]:
    """(parts of the outputs where ``theirs`` agrees with the student's, all parts), over usable cases."""
    agree = total = 0
    for i in ev.usable("all"):
        if theirs[i] is None or compare.structure_error(theirs[i], ev.outputs[i], "x"):
            total += sum(1 for _ in leaves(ev.expected[i]))
            continue
        for _, a, b in compare.leaf_pairs(theirs[i], ev.outputs[i], "x"):
            total += 1
            agree += compare.agrees(a, b, ev.rtol, ev.atol)
    return agree, total


def right_and_wrong(ev: Evidence) -> str:
    """'right: Wy, by; wrong: Wx, Wh, b, xs, h0': the outputs (gradients) right on every usable case and
    the ones wrong on some, by their last key; "" when no output has the reference's form."""
    usable = ev.usable("all")
    if not usable:
        return ""
    wrong: dict[str, bool] = {}
    for i in usable:
        for path, _ in leaves(ev.expected[i]):
            name = str(path[-1]) if path else "output"
            wrong[name] = wrong.get(name, False) or ev.wrong(i, path)
    right = [n for n, w in wrong.items() if not w]
    bad = [n for n, w in wrong.items() if w]
    if len(wrong) < 2:
        return ""
    from seqlab.learn.words import said
    nothing = said("feedback.none")
    return said("feedback.right_wrong", right=", ".join(right) or nothing, wrong=", ".join(bad) or nothing)


def _record(ev: Evidence, mistake, exact: bool, where, anchor: bool = True) -> dict:
    """The facts of a diagnosis: the mistake, where (English, and ``where_said``: its words to say in
    the student's language, where the recogniser gave them). ``anchor``: the mistake is one of the
    lesson's (its "Common mistakes" section has mistake-<id>). For a backward pass ``where`` also says
    which gradients are right."""
    from seqlab.learn.words import Said, said
    ex = ev.exercise
    if getattr(ex, "gradients", None) is not None and (summary := right_and_wrong(ev)):
        where = said("feedback.where_and_summary", where=where, summary=summary) if where else summary
    return {"mistake": mistake.id, "title": mistake.title, "explanation": mistake.explanation,
            "exact": exact, "where": str(where), **({"where_said": where.as_json()} if isinstance(where, Said) else {}),
            "convention": mistake.convention,
            "read": {"step": ex.step, "anchor": f"mistake-{mistake.id}" if anchor else "", "widget": ex.widget}}


def closest(ev: Evidence, mutants) -> dict | None:
    """{"mistake": id, "explains": [agree, total]}: the one catalogued mistake among ``mutants`` whose
    implementation agrees with the most parts of the student's outputs, when it agrees with more of
    them than the reference does; None when none does, or two tie. Never a diagnosis: what it does
    not explain is a slip the catalogue does not know, or another mistake."""
    scored = [(*_agreement(ev, ev.implementation_outputs(m.implementation)), m) for m in mutants]
    if not scored:
        return None
    reference_agree, _ = _agreement(ev, ev.expected)
    best = max(agree for agree, _, _ in scored)
    winners = [(agree, total, m) for agree, total, m in scored if agree == best]
    if best <= reference_agree or len(winners) != 1:
        return None
    agree, total, m = winners[0]
    return {"mistake": m.id, "explains": [agree, total]}


def diagnose(ev: Evidence, generic: tuple = (), last: tuple = (), first: tuple = ()) -> dict | None:
    """The diagnosis record of INTERFACES.md B, or None when every check passed. ``generic``: mistakes
    any exercise can show whatever its values (a broken rule): tried first when the values are right
    on the exercise's own cases (the check that failed is then likely theirs), late otherwise.
    ``last``: mistakes any exercise can show, tried after everything else (arrays whose shapes do not
    fit). ``first``: mistakes tried before everything, whatever the values (an input changed in
    place: values computed after an input was written into, one another argument may share, are no
    evidence of a mistake in the formula)."""
    if not ev.failed:
        return None
    from seqlab.learn.words import said
    ex = ev.exercise
    for m in first:
        words = _said(m, ev)
        if words:
            return _record(ev, m, False, words, anchor=False)
    candidates = [m for m in ex.mistakes if not m.accepted]
    usable = ev.usable("all")
    differs = [i for i in usable if not ev.close(ev.expected[i], ev.outputs[i])]
    mutants = [m for m in candidates if m.implementation is not None] if differs else []
    for m in mutants:     # a mutant can only explain values that differ from the reference's
        theirs = ev.implementation_outputs(m.implementation)
        if all(theirs[i] is not None and close(theirs[i], ev.outputs[i], ev.rtol, ev.atol) for i in usable):
            where = _said(m, ev) or ""
            return _record(ev, m, True, where or said("describe.every_value"))
    first_generic = own_values_right(ev)
    for m in [*(generic if first_generic else ()), *candidates]:
        words = _said(m, ev)
        if words:
            return _record(ev, m, False, words, anchor=m in candidates)
    for m in (*(() if first_generic else generic), *last):
        words = _said(m, ev)
        if words:
            return _record(ev, m, False, words, anchor=False)
    where, explanation = describe(ev)
    found = _first_difference(ev)
    if found:
        case, leaf, e, a = found
        explanation = said("describe.first_difference", explanation=explanation, case=case, where=leaf,
                           expected=compare.show(e), got=compare.show(a))
    from seqlab.learn.words import Said
    return {"mistake": None, "title": "no catalogued mistake matches", "explanation": str(explanation),
            **({"explanation_said": explanation.as_json()} if isinstance(explanation, Said) else {}),
            "exact": False, "where": str(where), **({"where_said": where.as_json()} if isinstance(where, Said) else {}),
            "convention": None, "closest": closest(ev, mutants),
            "read": {"step": ex.step, "anchor": "", "widget": ex.widget}}


def _said(mistake, ev: Evidence) -> str | None:
    if mistake.recognise is None:
        return None
    try:
        return mistake.recognise(ev)
    except Exception:  # noqa: BLE001 - a recogniser that cannot read this output does not fit
        return None


def _first_difference(ev: Evidence):
    """(the case's label, the element, expected, got) of the first difference, or None."""
    for i in ev.usable("all"):
        found = compare.first_difference(ev.expected[i], ev.outputs[i], "output", ev.rtol, ev.atol)
        if found:
            where, e, a = found
            return ev.cases[i].label, where, e, a
    return None
