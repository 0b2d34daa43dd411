"""Built-in seq2seq tasks: deterministic by seed, and every pair checked against an independent oracle."""

from __future__ import annotations

import datetime
import re

import pytest

from seqlab.seq2seq.builtin_tasks import SYMBOLS, TASKS, make_pairs

MONTHS = {m: i for i, m in enumerate(
    ["january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
     "november", "december"], 1)}


@pytest.mark.parametrize("task", TASKS)
def test_same_seed_same_pairs_other_seed_other_pairs(task):
    first = make_pairs(task, 200, seed=7)
    assert first == make_pairs(task, 200, seed=7)
    assert first != make_pairs(task, 200, seed=8)
    assert make_pairs(task, 50, seed=7) == first[:50]  # a prefix does not depend on the count
    assert all(isinstance(s, str) and isinstance(t, str) and s and t for s, t in first)


@pytest.mark.parametrize("task", ["copy", "reverse", "sort"])
def test_symbol_tasks_against_python(task):
    pairs = make_pairs(task, 500, seed=1, lengths=(3, 9))
    oracle = {"copy": lambda s: s, "reverse": lambda s: "".join(reversed(s)),
              "sort": lambda s: "".join(sorted(s, key=SYMBOLS.index))}[task]
    for source, target in pairs:
        assert 3 <= len(source) <= 9 and set(source) <= set(SYMBOLS)
        assert target == oracle(source)
    assert {len(s) for s, _ in pairs} == set(range(3, 10))  # every length of the range is drawn


def _parse_human_date(text: str) -> datetime.date:
    """An independent reader of the formats: numbers and month names found by regex, not by the
    generator's table."""
    words = re.findall(r"[A-Za-z]+", text)
    month = next((MONTHS[w.lower()] for w in words if w.lower() in MONTHS), None)
    if month is None:
        month = next((i for name, i in MONTHS.items() for w in words if w.lower() == name[:3]), None)
    numbers = [n for n in re.findall(r"\d+", text)]
    if month is None:  # numeric: d/m/y, d.m.y or y/m/d
        if len(numbers[0]) == 4:
            year, month, day = (int(n) for n in numbers)
        else:
            day, month, year = (int(n) for n in numbers)
    else:
        day, year = int(numbers[0]), int(numbers[1])
    if year < 100:
        year += 2000
    return datetime.date(year, month, day)


def test_dates_are_right_and_varied():
    pairs = make_pairs("dates", 3000, seed=3)
    sources = [s for s, _ in pairs]
    for source, target in pairs:
        date = datetime.date.fromisoformat(target)
        assert datetime.date(1900, 1, 1) <= date <= datetime.date(2099, 12, 31)
        assert _parse_human_date(source) == date, source
        weekday = re.match(r"(Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday|Mon|Tue|Wed|Thu|Fri|Sat|Sun)\b",
                           source)
        if weekday:
            weekdays = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
            assert weekdays[date.weekday()].startswith(weekday.group(1))
    years = [int(t[:4]) for _, t in pairs]
    assert min(years) < 1910 and max(years) > 2090
    # many formats: with and without month names, slashes, dots, ordinals, two-digit years
    assert any("/" in s for s in sources) and any("." in s for s in sources)
    assert any(re.search(r"\d(st|nd|rd|th) of", s) for s in sources)
    assert any(re.search(r"[A-Z][a-z]{2} \d+, \d\d$", s) for s in sources)


def test_dates_two_digit_years_only_for_2000s():
    seen = 0
    for source, target in make_pairs("dates", 3000, seed=4):
        if re.search(r"(, \d\d|\.\d\d\.\d\d|'\d\d)$", source):  # ends in a two-digit year
            assert target.startswith("20") and target[2:4] == source[-2:], (source, target)
            seen += 1
    assert seen > 50


def test_fr_en_reorders_adjectives_and_agrees():
    pairs = dict(make_pairs("fr-en", 3000, seed=5))
    # a French adjective follows its noun; the English one precedes it
    examples = [(s, t) for s, t in pairs.items() if re.match(r"^(le|la|l') ?chat noir (dort|court)$", s)]
    for source, target in examples:
        assert target.startswith("the black cat ")
    found = {s: t for s, t in pairs.items() if s.startswith("les vaches blanches ")}
    assert found, "expected feminine plural agreement to be drawn"
    assert all(t.startswith("the white cows ") for t in found.values())
    for source, target in pairs.items():
        words = source.split()
        assert words[0] in ("le", "la", "les", "un", "une", "des") or words[0].startswith("l'")
        assert target.split()[0] in ("the", "a", "an", "some")
        # number agreement: a plural French subject -> a plural English verb form
        if words[0] in ("les", "des"):
            assert not re.search(r"\b(sleeps|eats|runs|sings|plays|sees|likes|follows)\b", target), source


def test_lengths_and_exclusion():
    train = make_pairs("copy", 200, seed=0, lengths=(2, 4))
    unseen = make_pairs("copy", 100, seed=1, lengths=(2, 4), exclude={s for s, _ in train})
    assert not {s for s, _ in unseen} & {s for s, _ in train}
    long = make_pairs("reverse", 50, seed=0, lengths=(15, 20))
    assert all(15 <= len(s) <= 20 for s, _ in long)


def test_bad_arguments_name_the_problem():
    with pytest.raises(ValueError, match="unknown task 'frobnicate'"):
        make_pairs("frobnicate", 3, seed=0)
    with pytest.raises(ValueError, match="lengths apply to the symbol tasks"):
        make_pairs("dates", 3, seed=0, lengths=(1, 3))
    with pytest.raises(ValueError, match="1 <= min <= max"):
        make_pairs("copy", 3, seed=0, lengths=(5, 2))
    with pytest.raises(ValueError, match="could not draw"):
        make_pairs("copy", 20, seed=0, lengths=(1, 1), exclude=set(SYMBOLS))
