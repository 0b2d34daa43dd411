"""The words a student reads about a check: what `seqlab learn check` prints, and what a grade
(grades.csv, Gradescope's results.json) says about one exercise.

    report_lines(report)   ->  ["  PASS  runs", "  FAIL  values (worked example): on ...", "  diagnosis: ..."]
    diagnosis_title(report) -> "the tanh is missing" ("" when no catalogued mistake fits)
"""

from __future__ import annotations


def report_lines(report) -> list[str]:
    """One line per check (PASS / FAIL with its message), a note on what the code printed, the diagnosis."""
    lines = [f"  {'PASS' if c['passed'] else 'FAIL'}  {c['name']}" + (f": {c['message']}" if c["message"] else "")
             for c in report.checks]
    if report.printed_chars:
        head = report.printed[:300].rstrip()
        lines.append(f"  note: your code printed {report.printed_chars} characters; the first ones: {head!r}")
    d = report.diagnosis
    if d:
        lines.append(f"  diagnosis: {d['title']}" + (": " if d.get("mistake") else "; ") + str(d.get("explanation", "")))
    return lines


def diagnosis_title(report) -> str:
    """The catalogued mistake's title, or "" (no diagnosis, or none of the catalogue fits)."""
    d = report.diagnosis
    return str(d["title"]) if d and d.get("mistake") else ""


def first_failure(report) -> str:
    """The message of the first check that failed ("" when all passed)."""
    return next((f"{c['name']}: {c['message']}" if c["message"] else c["name"]
                 for c in report.checks if not c["passed"]), "")
