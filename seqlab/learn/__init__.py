"""Learn by doing: the course as a path of steps, with Implement exercises that seqlab checks.

``seqlab learn`` (``seqlab.learn.cli``) prints the path; ``catalog`` holds the exercises,
``check(NAME, function_or_path)`` checks a student's function from a notebook (``checking``),
``judge.run_checks`` a student's file against an exercise record, ``runner.run_student`` /
``run_students`` run a student's function in a separate process with a time limit per check (for
the explorer too; ``runner``'s docstring is the interface), ``child`` is the program that runs
there (standard library, numpy and torch only) with ``child.plain_data``, what crosses between the
two, and ``child.rules``, the runtime rules; ``mistakes`` is the catalogue
of common mistakes, ``questions`` the Trace questions and Explain/Derive cards, ``path`` the steps
and parts, ``lessons`` and ``views`` the lessons and how they show, ``command_steps`` the checks of
the steps that run a command, ``workspace`` the student's folder and progress.json, ``grade`` a
class graded (``seqlab learn grade``).
"""

from __future__ import annotations

from seqlab.lazy import lazy_exports

__all__, __getattr__, __dir__ = lazy_exports(__name__, {
    "seqlab.learn.catalog": ("all_exercises", "exercise"),
    "seqlab.learn.checking": ("check", "CheckReport"),
    "seqlab.learn.runner": ("run_student", "run_student_json", "run_students"),
    "seqlab.learn.side_by_side": ("yours_and_reference",),
})
