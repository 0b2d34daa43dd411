"""Every Implement exercise by name, each built from its step's folder (``seqlab.learn.courses``):
the words from ``step.toml`` (the title, the contract's sentences and their checks, the mistakes'
titles, fixes and paragraphs, the settings) and the code from ``check.py`` (``cases()``,
``CHECKS``, ``MUTANTS``, ``RECOGNISERS`` and, where the exercise has them, ``compared``,
``gradients``, ``invariants``, ``relations``, ``step_terms``, ``axes``).

``NUMPY_NAMES`` and ``TORCH_NAMES`` are found, not kept: the course's exercises of each library.
"""

from __future__ import annotations

import functools
import importlib

from seqlab.learn.courses import CourseError, Folder, active

# the optional code of an exercise, by the name check.py gives it
_CODE = ("compared", "gradients", "invariants", "relations", "step_terms", "axes")


def _pair(value) -> tuple[str, str]:
    if isinstance(value, dict):
        return value.get("en", ""), value.get("zh", "")
    return str(value or ""), ""


def _reference(folder: Folder, module):
    dotted = folder.record.get("reference")
    if dotted:
        owner, name = dotted.rsplit(".", 1)
        return lambda: getattr(importlib.import_module(owner), name)
    if not callable(getattr(module, "reference", None)):
        raise CourseError(f"{folder.path / 'step.toml'}: name the reference (reference = \"package.module.function\") "
                          "or define reference() in check.py")
    return lambda: module.reference


def _own(folder: Folder, value):
    """A mistake's ``why`` or ``convention`` given as the key of the step's ``[words]``: the words several
    of its mistakes share, written once there."""
    table = folder.record.get("words", {})
    return table[value] if isinstance(value, str) and value in table else value


def _mistakes(folder: Folder, module) -> tuple:
    from seqlab.learn.exercise import Mistake, shared_mistake
    mutants, recognisers = getattr(module, "MUTANTS", {}), getattr(module, "RECOGNISERS", {})
    listed = folder.record.get("mistakes", {})
    unknown = sorted((set(mutants) | set(recognisers)) - set(listed))
    if unknown:
        raise CourseError(f"{folder.path / 'check.py'}: the mistakes {', '.join(unknown)} have no words in step.toml "
                          "([mistakes.ID] with a title, a fix and why)")
    found = []
    for key, words in listed.items():
        implementation, recognise = mutants.get(key), recognisers.get(key)
        if implementation is None and recognise is None:
            raise CourseError(f"{folder.path / 'step.toml'}: the mistake {key!r} has neither a mutant (MUTANTS) nor "
                              "a recogniser (RECOGNISERS) in check.py: nothing could name it")
        shared = words.get("shared")
        if shared:                        # words.toml's: shared = true (the same key) or the key, with {names} here
            values = {k: v for k, v in words.items()
                      if k != "shared" and (isinstance(v, str) or isinstance(v, dict) and "en" in v)}
            found.append(shared_mistake(key if shared is True else shared, recognise, implementation, key, **values))
            continue
        (title, title_zh), (fix, fix_zh) = _pair(words.get("title")), _pair(words.get("fix"))
        convention = _own(folder, words.get("convention"))
        found.append(Mistake(key, title, fix, implementation, recognise, title_zh, fix_zh,
                             _pair(_own(folder, words.get("why"))), _pair(convention)[0] if convention else None,
                             bool(words.get("accepted", False))))
    return tuple(found)


def _contract(folder: Folder, module) -> tuple[str, str, tuple]:
    """(the docstring, in English and in Chinese (English where a sentence has none), the Spec of each
    sentence that names a check)."""
    from seqlab.learn.exercise import GENERIC_CHECKS, Check, Spec
    checks = getattr(module, "CHECKS", {})
    lines, lines_zh, specs = [], [], []
    for entry in folder.record.get("contract", []):
        text, text_zh = _pair(entry.get("text"))
        lines.append(text)
        lines_zh.append(text_zh or text)
        for check in entry.get("checks", []):
            code = checks.get(check, Check())
            if check not in GENERIC_CHECKS and check not in checks:
                raise CourseError(f"{folder.path / 'check.py'}: the sentence {text!r} names the check {check!r}, which "
                                  "CHECKS does not define (its cases, its verify or both)")
            specs.append(Spec(check, text, code.cases, code.verify, text_zh))
    return "\n    ".join(lines), "\n    ".join(lines_zh), tuple(specs)


def from_folder(folder: Folder):
    """The :class:`~seqlab.learn.exercise.Exercise` of an Implement step's folder."""
    from seqlab.learn import compare
    from seqlab.learn.exercise import Exercise
    r, module = folder.record, folder.module()
    if module is None or not callable(getattr(module, "cases", None)):
        raise CourseError(f"{folder.path}: an Implement step needs check.py with cases()")
    doc, doc_zh, spec = _contract(folder, module)
    title, title_zh = _pair(r["title"])
    library = r.get("library", "numpy")
    code = {name: getattr(module, name) for name in _CODE if hasattr(module, name)}
    options = {"rtol": r.get("rtol", compare.RTOL), "atol": r.get("atol", compare.ATOL),
               "imports": r.get("imports") or ("import math\n\nimport torch" if library == "torch" else "import numpy as np"),
               "time_limit": float(r.get("time_limit", 30.0 if library == "torch" else 10.0)),
               "stub_test": r.get("stub_test", ""), "kind": library, "may_change": tuple(r.get("may_change", ())),
               "rules": {"forbid": list(r["forbid"])} if r.get("forbid") else None,
               "widget": r.get("widget", ""), "packages": tuple(r.get("packages", ())),
               "helpers": dict(r.get("helpers", {})), "solution": r.get("solution", ""), "doc_zh": doc_zh,
               "check_names": dict(r.get("check_names", {}))}
    return Exercise(folder.id, title, title_zh, r["signature"], doc, _reference(folder, module), module.cases,
                    _mistakes(folder, module), returns=_returns(r.get("returns", "")), spec=spec, **code, **options)


def _returns(value):
    """The form of the output (``returns``): a text, or one in English and Chinese (``returns.en``, ``returns.zh``)."""
    from seqlab.learn.words import Both
    return Both(*_pair(value)) if isinstance(value, dict) else value


@functools.cache
def _folder_exercises(course) -> dict:
    return {name: from_folder(f) for name, f in course.folders.items()
            if f.kind == "implement" and "contract" in f.record}


def exercise(name: str):
    """The exercise called ``name`` in the course this process follows, or None."""
    return _folder_exercises(active()).get(name)


def reference(name: str):
    """The reference function of the exercise ``name`` (lessons, figures and benchmarks run it)."""
    found = exercise(name)
    if found is None:
        raise KeyError(f"no Implement exercise {name!r}")
    return found.reference()


def reference_import(name: str) -> str:
    """A student's file that is the reference of the exercise ``name``: one line that imports it under that
    name (the right answer the tests and benchmarks check)."""
    function = reference(name)
    alias = "" if function.__name__ == name else f" as {name}"
    return f"from {function.__module__} import {function.__name__}{alias}\n"


def mutant(name: str, mistake_id: str):
    """The mutant of the catalogued mistake ``mistake_id`` of the exercise ``name`` (lessons and
    figures show what a mistake computes with it)."""
    found = next((m.implementation for m in exercise(name).mistakes if m.id == mistake_id), None)
    if found is None:
        raise KeyError(f"the exercise {name!r} has no mistake {mistake_id!r} with a mutant")
    return found


def all_exercises() -> list:
    """Every exercise, in the order of the path."""
    from seqlab.learn.path import STEPS
    return [exercise(s.id) for s in STEPS if s.kind == "implement"]


def __getattr__(name: str):
    """NUMPY_NAMES and TORCH_NAMES: the course's Implement exercises of each library, in the path's order."""
    if name in ("NUMPY_NAMES", "TORCH_NAMES"):
        kind = "numpy" if name == "NUMPY_NAMES" else "torch"
        return tuple(e.name for e in all_exercises() if e.kind == kind)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
