"""Flags for the teacher in a graded class: what to look at, never a change of grade.

A submission's exercise is flagged when its file imports seqlab (the static rules refuse it, and the
teacher sees why), and when what its function can reach (``static_rules.reachable``: the function,
what it calls, the module's top level; not the student's own tests) is the same as, or nearly the
same as, another student's after normalising names: every name is renamed by its order of first
use, docstrings and string texts dropped, so renaming variables hides nothing. Nearly: at least
:data:`NEAR` of the two files' token 5-grams are shared (Jaccard). Short files are not compared
(:data:`MIN_TOKENS`: causal_mask's few lines converge). Matching seqlab's published solution
(``seqlab learn solution NAME`` shows it to students) is a softer note of its own.

    flag_grades(grades, exercises)      # fills each Grade's ``flags``
"""

from __future__ import annotations

import ast
import inspect
import textwrap
from collections import defaultdict
from pathlib import Path

from seqlab.learn import static_rules

MIN_TOKENS = 120        # tokens a function's reach must have to be compared with another's
NEAR = 0.9              # share of token 5-grams that makes two files nearly the same
GRAM = 5


def tokens(source: str, function: str) -> list[str] | None:
    """The normalised tokens of what ``function`` of ``source`` reaches; None if it does not parse."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    names: dict[str, str] = {}

    def name(text: str) -> str:
        return names.setdefault(text, f"n{len(names)}")

    out: list[str] = []
    for node in static_rules.reachable(tree, {function}):
        for sub in ast.walk(node):
            if isinstance(sub, ast.Expr) and isinstance(sub.value, ast.Constant) and isinstance(sub.value.value, str):
                continue                                   # a docstring
            out.append(type(sub).__name__)
            if isinstance(sub, ast.Name):
                out.append(name(sub.id))
            elif isinstance(sub, ast.arg):
                out.append(name(sub.arg))
            elif isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                out.append(name(sub.name))
            elif isinstance(sub, ast.Attribute):
                out.append(f".{sub.attr}")
            elif isinstance(sub, ast.alias):
                out.append(f"{sub.name}")
            elif isinstance(sub, ast.Constant):
                out.append(repr(sub.value) if not isinstance(sub.value, (str, bytes)) else "text")
    return out


def _grams(toks: list[str]) -> set[tuple[str, ...]]:
    return {tuple(toks[i:i + GRAM]) for i in range(max(1, len(toks) - GRAM + 1))}


def alike(a: list[str], b: list[str]) -> float:
    """The share of 5-grams two token lists have in common (1.0: the same)."""
    if a == b:
        return 1.0
    x, y = _grams(a), _grams(b)
    return len(x & y) / len(x | y) if x | y else 0.0


def seqlab_imports(path, helpers=()) -> list[str]:
    """"line 3: seqlab.labs.rnn" for each import of seqlab in the file (anywhere), the allowed helpers aside."""
    return [f"line {line}: {name}" for line, name in static_rules.imports(path)
            if name.split(".")[0] == "seqlab" and not any(name == h or name.startswith(h + ".") for h in helpers)]


def _published(name: str) -> list[list[str]]:
    """The normalised tokens of seqlab's published solution of the exercise (``seqlab learn solution``
    shows its reference, and for a wrapper the model code it calls)."""
    import importlib

    from seqlab.learn.catalog import exercise
    ex = exercise(name)
    if ex is None:
        return []
    shown = [ex.reference()]
    if ex.solution:
        owner, attribute = ex.solution.rsplit(".", 1)
        shown.append(getattr(importlib.import_module(owner), attribute))
    found = []
    for obj in shown:
        try:
            source = textwrap.dedent(inspect.getsource(obj))
        except (OSError, TypeError):
            continue
        toks = tokens(source, obj.__name__)
        if toks:
            found.append(toks)
    return found


def flag_grades(grades, exercises) -> None:
    """Fill ``flags`` of each grade whose ``file`` is set (see the module's docstring)."""
    helpers = {ex.name: tuple(ex.helpers) for ex in exercises}
    by_exercise: dict[str, list] = defaultdict(list)
    for g in grades:
        if not g.file:
            continue
        try:
            source = Path(g.file).read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        imported = seqlab_imports(g.file, helpers.get(g.exercise, ()))
        if imported:
            g.flags.append("imports seqlab (" + ", ".join(imported[:3]) + ")")
        toks = tokens(source, g.exercise)
        if toks and len(toks) >= MIN_TOKENS:
            by_exercise[g.exercise].append((g, toks))
    for name, entries in by_exercise.items():
        try:
            published = _published(name)
        except (ImportError, AttributeError, KeyError):
            published = []
        for g, toks in entries:
            if any(alike(toks, p) >= NEAR for p in published):
                g.flags.append(f"like seqlab's published solution (seqlab learn solution {name}): a note, not a finding")
        grams = [(g, toks, _grams(toks)) for g, toks in entries]
        for i, (a, ta, ga) in enumerate(grams):
            for b, tb, gb in grams[i + 1:]:
                share = 1.0 if ta == tb else len(ga & gb) / len(ga | gb)
                if share < NEAR:
                    continue
                for one, other in ((a, b), (b, a)):
                    one.flags.append(f"the same as {other.student}'s file, names aside" if share == 1.0 else
                                     f"nearly the same as {other.student}'s file ({share:.0%} alike, names aside)")
