"""The words a student reads about a check: what `seqlab learn check` (and a notebook's check)
prints, and what a grade (grades.csv and grades.json, Gradescope's results.json) says about one
exercise.

The diagnosis is the headline: its title, where (which gradients, rows, positions or time steps are
right and which are wrong), what it means and how to fix it, where to read about it (the
`seqlab learn show` command and the heading of the mistake in the lesson, and the explorer's address
of the lesson at that mistake, or a hosted site's with ``lesson_url``; read away from the machine, as
on Gradescope, no explorer link and the lesson's paragraph inline), and the notes on conventions
accepted. Then the checks, one line each, except the checks of the contract's sentences that fail
only because the values differ everywhere: those are one line that says so, so that no sentence is
quoted as broken when it was not.

    report_lines(report, lang="en")  ->  ["  diagnosis: the tanh is missing", "    where: ...", ...,
                                          "  checks:", "    PASS  runs", "    FAIL  values (worked example): ...", ...]
    diagnosis_title(report) -> "the tanh is missing" ("" when no catalogued mistake fits)
"""

from __future__ import annotations

from seqlab.learn.words import say

WIDTH = 100      # the diagnosis's paragraphs are wrapped at this many columns (check lines are not)

def _say(key: str, lang: str, **values) -> str:
    return say(f"feedback.{key}", lang, **values)


def mistake_record(exercise_name: str, mistake_id: str | None):
    """The Mistake record ``mistake_id`` of the exercise (or a generic one), or None."""
    if not mistake_id:
        return None
    from seqlab.learn.catalog import exercise
    from seqlab.learn.exercise import GENERIC_MISTAKES
    ex = exercise(exercise_name)
    return next((m for m in (*(ex.mistakes if ex is not None else ()), *GENERIC_MISTAKES) if m.id == mistake_id), None)


def diagnosis_words(d: dict, exercise_name: str, lang: str = "en") -> tuple[str, str]:
    """(title, explanation) of the diagnosis ``d`` in ``lang``, from the facts it holds: the catalogued
    mistake's own words; when none matches, what differs, after the closest mistake and how many
    checked values it explains (a partial match is never the title). A record written before
    partial matches left the headline keeps its "explains" beside its title."""
    if not d.get("mistake"):
        from seqlab.learn.words import render
        said = d.get("explanation_said")
        explanation = render(said, lang) if isinstance(said, dict) else str(d.get("explanation", ""))
        return _say("no_mistake", lang), closest_words(d, exercise_name, lang) + explanation
    m = mistake_record(exercise_name, d["mistake"])
    if m is None:
        return str(d.get("title", "")), str(d.get("explanation", ""))
    title = m.title_zh if lang == "zh" and m.title_zh else m.title
    explains = d.get("explains")
    if isinstance(explains, list) and len(explains) == 2:
        title += _say("explains", lang, a=explains[0], b=explains[1])
    return title, (m.explanation_zh if lang == "zh" and m.explanation_zh else m.explanation)


def closest_words(d: dict, exercise_name: str, lang: str = "en") -> str:
    """"closest: TITLE, explains 5 of 18 checked values. " for a diagnosis that names no mistake but
    holds the closest one (``d["closest"]``); "" otherwise."""
    found = d.get("closest")
    if not isinstance(found, dict) or not isinstance(found.get("explains"), list) or len(found["explains"]) != 2:
        return ""
    m = mistake_record(exercise_name, found.get("mistake"))
    if m is None:
        return ""
    title = m.title_zh if lang == "zh" and m.title_zh else m.title
    return _say("closest", lang, title=title, a=found["explains"][0], b=found["explains"][1]) + " "


def where_words(d: dict, lang: str = "en") -> str:
    """The diagnosis's where in ``lang``: its words said later where the recogniser gave them."""
    from seqlab.learn.words import render
    said = d.get("where_said")
    return render(said, lang) if isinstance(said, dict) else str(d.get("where") or "")


def lesson_paragraph(d: dict, exercise_name: str, lang: str = "en") -> str:
    """The lesson's short paragraph on the diagnosed mistake (its ``why``) in ``lang``; "" when the
    diagnosis names no mistake or the mistake has none (its explanation is all the lesson says)."""
    m = mistake_record(exercise_name, d.get("mistake"))
    why = getattr(m, "why", None) or ("", "")
    return (why[1] or why[0]) if lang == "zh" else why[0]


def reading(d: dict, exercise_name: str, lang: str = "en", lesson_url: str | None = None) -> dict:
    """Where to read about the diagnosis ``d``: {"command": "seqlab learn show STEP", "heading": the
    mistake's heading in the lesson ("" for the lesson as a whole), "url": the explorer's address of
    the lesson at that mistake, "#step/STEP/mistake-ID", or with ``lesson_url`` (a hosted copy of
    ``seqlab learn site``) "URL/LANG/STEP.html#mistake-ID", "site": whether it is the site's}."""
    from seqlab.learn.views import _sentence, label, site_url, step_url
    read = d.get("read") or {}
    step = read.get("step") or exercise_name
    anchor = read.get("anchor") or ""
    command = f"seqlab learn show {step}" + (" --lang zh" if lang == "zh" else "")     # pasted as it is
    heading = ""
    if anchor:
        m = mistake_record(exercise_name, anchor.removeprefix("mistake-"))
        title = str(d.get("title", "")) if m is None else m.title_zh if lang == "zh" and m.title_zh else m.title
        heading = _sentence(title)
    return {"command": command, "heading": heading, "section": label("mistakes", lang) if heading else "",
            "url": site_url(lesson_url, lang, step, anchor) if lesson_url else step_url(step, anchor),
            "site": bool(lesson_url)}


def _wrapped(text: str, indent: str, lead: str) -> list[str]:
    """``text`` after ``lead``, wrapped at WIDTH columns (Chinese between characters), then indented."""
    from seqlab.learn.views import wrap
    return wrap(text, WIDTH, indent, lead)


def diagnosis_lines(report, lang: str = "en", lesson_url: str | None = None, away: bool = False) -> list[str]:
    """The diagnosis (title, where, explanation, what to read) and the notes, as report_lines starts;
    ``lesson_url``: what to read is on the course's site there, not in the explorer; ``away``: read
    away from the student's machine (Gradescope), so no explorer link, and the lesson's paragraph on
    the mistake inline."""
    lines: list[str] = []
    d = report.diagnosis
    if d:
        title, explanation = diagnosis_words(d, report.exercise, lang)
        lines += _wrapped(title, "      ", "  " + _say("diagnosis", lang))
        where = where_words(d, lang)
        if where and where not in explanation:
            lines += _wrapped(where, "      ", "    " + _say("where", lang))
        if explanation:
            lines += _wrapped(explanation, "      ", "    ")
        why = lesson_paragraph(d, report.exercise, lang) if away else ""
        if why:
            lines += _wrapped(why, "      ", "    " + _say("why", lang))
        r = reading(d, report.exercise, lang, lesson_url)
        said = (_say("read_mistake", lang, section=r["section"], heading=r["heading"]) if r["heading"]
                else _say("read_lesson", lang))
        lines += _wrapped(said, "      ", "    " + _say("read", lang))
        lines.append("        " + r["command"])
        if r["site"] or not away:
            lines.append("        " + _say("on_site" if r["site"] else "explorer", lang, url=r["url"]))
    for convention in report.conventions:
        lines += _wrapped(_note_words(report.exercise, convention, lang), "      ", "  " + _say("note", lang))
    return lines


def _note_words(exercise_name: str, convention: tuple[str, str], lang: str) -> str:
    """A note on an accepted convention the code follows: it passes ("passes") or is judged against
    that reading ("against"), in the mistake's own words."""
    m = mistake_record(exercise_name, convention[0])
    title = m.title_zh if lang == "zh" and m.title_zh else m.title
    fix = m.explanation_zh if lang == "zh" and m.explanation_zh else m.explanation
    return _say("note_passes" if convention[1] == "passes" else "note_against", lang, title=title, fix=fix)


def check_name(name: str, exercise_name: str = "", lang: str = "en") -> str:
    """A check's name in ``lang``: a check every exercise has from words.toml, a sentence's from its
    exercise's step.toml (``check_names``); the name itself where there is none."""
    if lang != "zh":
        return name
    from seqlab.learn.words import entry
    try:
        return entry(f"checks.{name}").get("zh") or name
    except KeyError:
        pass
    from seqlab.learn.catalog import exercise
    ex = exercise(exercise_name) if exercise_name else None
    return (ex.check_names.get(name) if ex is not None else None) or name


def check_message(check: dict, lang: str = "en") -> str:
    """A check's message in ``lang``: its words said later where it has them, else as it was said."""
    from seqlab.learn.words import render
    said = check.get("said")
    return render(said, lang) if lang == "zh" and isinstance(said, dict) else str(check.get("message", ""))


def check_rows(checks: list[dict], lang: str = "en", named: bool = False,
               exercise_name: str = "") -> list[tuple[bool, str, str, bool]]:
    """(passed, name, message, grouped) per check, except the sentences' checks that failed for a reason that is
    not theirs (their "cause"): one row for those whose values differ, when the values differ on the
    exercise's own cases too or a catalogued mistake (``named``) explains two or more; one for those
    whose output has another form, when "shapes and types" failed; one for those on which the code
    raised, when it raised on the exercise's own cases ("runs" failed). No such row (``grouped``)
    quotes a sentence as broken: it says why they fail (the names joined by ", ")."""
    failed = {c["name"] for c in checks if not c["passed"]}
    by_cause = {cause: [c["name"] for c in checks if not c["passed"] and c.get("cause") == cause]
                for cause in ("values", "form", "raised")}
    own_differ = any(name.startswith("values (") for name in failed)
    grouped = {"values": own_differ or named and len(by_cause["values"]) > 1,
               "form": "shapes and types" in failed, "raised": "runs" in failed}
    group_of = {name: cause for cause, names in by_cause.items() if grouped[cause] for name in names}
    rows = []
    comma = "、" if lang == "zh" else ", "
    for c in checks:
        cause = group_of.get(c["name"])
        if cause is None:
            rows.append((c["passed"], check_name(c["name"], exercise_name, lang), check_message(c, lang), False))
        elif c["name"] == by_cause[cause][0]:
            names = by_cause[cause]
            rows.append((False, comma.join(check_name(n, exercise_name, lang) for n in names),
                         _say(f"{cause}_too" + ("_one" if len(names) == 1 else ""), lang), True))
    return rows


def check_lines(checks: list[dict], lang: str = "en", indent: str = "    ", named: bool = False,
                exercise_name: str = "") -> list[str]:
    """One line per row of :func:`check_rows`: PASS / FAIL, the check's name and its message (a
    group's message wrapped, a check's as it is)."""
    lines = []
    for passed, name, message, grouped in check_rows(checks, lang, named, exercise_name):
        head = f"{indent}{'PASS' if passed else 'FAIL'}  {name}"
        colon = "：" if lang == "zh" else ": "
        if grouped:
            lines += _wrapped(message, indent + "      ", head + colon)
        else:
            lines.append(head + (f"{colon}{message}" if message else ""))
    return lines


def report_lines(report, lang: str = "en", lesson_url: str | None = None, away: bool = False) -> list[str]:
    """What a check says: the diagnosis first (diagnosis_lines, with ``lesson_url`` and ``away``), then
    the checks (check_lines), then a note on what the code printed."""
    lines = diagnosis_lines(report, lang, lesson_url, away)
    if lines:
        lines.append("  " + _say("checks", lang))
        lines += check_lines(report.checks, lang, named=bool((report.diagnosis or {}).get("mistake")),
                             exercise_name=report.exercise)
    else:
        lines += check_lines(report.checks, lang, "  ", exercise_name=report.exercise)
    if report.printed_chars:
        lines.append("  " + _say("printed", lang, n=report.printed_chars, head=report.printed[:300].rstrip()))
    return lines


def diagnosis_title(report) -> str:
    """The catalogued mistake's title, or "" (no diagnosis, or none of the catalogue fits)."""
    d = report.diagnosis
    return str(d["title"]) if d and d.get("mistake") else ""


def first_failure(report) -> str:
    """The message of the first check that failed ("" when all passed)."""
    return next((f"{c['name']}: {c['message']}" if c["message"] else c["name"]
                 for c in report.checks if not c["passed"]), "")
