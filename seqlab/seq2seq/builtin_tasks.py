"""Built-in sequence-to-sequence tasks: seeded generators of (source, target) text pairs, no download.

``copy``, ``reverse``, ``sort`` (symbol strings, length drawn uniformly from ``lengths``, so a
model can be tested on unseen lengths), ``dates`` (a human-written date -> ISO 8601) and ``fr-en``
(a small French grammar -> English; adjectives move, so the model must reorder words). Each is a
pure function of the seed::

    >>> make_pairs("reverse", 2, seed=0, lengths=(3, 5))
    [('afiei', 'ieifa'), ('ccijf', 'fjicc')]
    >>> make_pairs("dates", 1, seed=1)
    [('Jan 15, 2020', '2020-01-15')]
"""

from __future__ import annotations

import datetime
import functools
import random

TASKS: tuple[str, ...] = ("copy", "reverse", "sort", "dates", "fr-en")
SYMBOL_TASKS: tuple[str, ...] = ("copy", "reverse", "sort")
TEXT_TASKS: tuple[str, ...] = ("dates", "fr-en")  # natural-language-like: BLEU is meaningful
SYMBOLS = "abcdefghij"  # the alphabet of the symbol tasks
DEFAULT_LENGTHS = (1, 12)

# -- dates ------------------------------------------------------------------------------------

MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September",
          "October", "November", "December")
WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
FIRST_DATE = datetime.date(1900, 1, 1)
LAST_DATE = datetime.date(2099, 12, 31)


def _ordinal(day: int) -> str:
    """1 -> '1st', 2 -> '2nd', 11 -> '11th', 22 -> '22nd'."""
    if day in (11, 12, 13):
        return f"{day}th"
    return f"{day}{ {1: 'st', 2: 'nd', 3: 'rd'}.get(day % 10, 'th') }"


def _date_formats(d: datetime.date) -> list[str]:
    """Every human spelling of ``d`` that this task uses (written without the locale, so the same
    on every machine). Two-digit years appear only for 2000-2099, where "26" can only mean 2026."""
    month, mon = MONTHS[d.month - 1], MONTHS[d.month - 1][:3]
    weekday = WEEKDAYS[d.weekday()]
    spellings = [
        f"{d.day} {month} {d.year}",                        # 29 November 2026
        f"{weekday} {_ordinal(d.day)} of {month} {d.year}",  # Sunday 29th of November 2026
        f"{month} {d.day}, {d.year}",                       # November 29, 2026
        f"{mon} {d.day}, {d.year}",                         # Nov 29, 2026
        f"{d.day:02d}/{d.month:02d}/{d.year}",              # 29/11/2026
        f"{d.day}.{d.month}.{d.year}",                      # 29.11.2026
        f"{d.day} {mon.lower()} {d.year}",                  # 29 nov 2026
        f"{weekday[:3]}, {d.day} {mon} {d.year}",           # Sun, 29 Nov 2026
        f"the {_ordinal(d.day)} of {month}, {d.year}",      # the 29th of November, 2026
        f"{d.year}/{d.month:02d}/{d.day:02d}",              # 2026/11/29
        f"{month.upper()} {d.day} {d.year}",                # NOVEMBER 29 2026
    ]
    if d.year >= 2000:
        short = d.year % 100
        spellings += [
            f"{mon} {d.day}, {short:02d}",                  # Nov 29, 26
            f"{d.day:02d}.{d.month:02d}.{short:02d}",       # 29.11.26
            f"{d.day} {mon} '{short:02d}",                  # 29 Nov '26
        ]
    return spellings


DATE_EXAMPLE = datetime.date(2026, 11, 29)
# strptime patterns that read each spelling of _date_formats back (ordinal suffixes removed first);
# a pattern only proposes a date: date_in_task checks that the text is exactly one of its spellings
_DATE_PATTERNS = ("%d %B %Y", "%A %d of %B %Y", "%B %d, %Y", "%b %d, %Y", "%d/%m/%Y", "%d.%m.%Y", "%d %b %Y",
                  "%a, %d %b %Y", "the %d of %B, %Y", "%Y/%m/%d", "%B %d %Y")
_SHORT_YEAR_PATTERNS = ("%b %d, %y", "%d.%m.%y", "%d %b '%y")


def date_formats() -> list[str]:
    """The spellings the ``dates`` task uses, each shown for 29 November 2026 (the last three, with a
    two-digit year, only for 2000-2099)."""
    return _date_formats(DATE_EXAMPLE)


def date_in_task(text: str) -> datetime.date | None:
    """The date ``text`` spells if it is exactly one of the ``dates`` task's spellings of a date in
    1900-2099 (weekday, ordinal and capitals included), else None::

        >>> date_in_task("Sunday 29th of November 2026"), date_in_task("Monday 29th of November 2026")
        (datetime.date(2026, 11, 29), None)
        >>> date_in_task("2026-11-29") is None   # ISO is the target, not a source format
        True
    """
    import re

    plain = re.sub(r"\b(\d{1,2})(st|nd|rd|th)\b", r"\1", text)
    for pattern in _DATE_PATTERNS + _SHORT_YEAR_PATTERNS:
        try:
            parsed = datetime.datetime.strptime(plain, pattern).date()
        except ValueError:
            continue
        if pattern in _SHORT_YEAR_PATTERNS:  # the task's two-digit years are 2000-2099
            parsed = parsed.replace(year=2000 + parsed.year % 100)
        if FIRST_DATE <= parsed <= LAST_DATE and text in _date_formats(parsed):
            return parsed
    return None


def date_pair(rng: random.Random) -> tuple[str, str]:
    """One random date between 1900-01-01 and 2099-12-31 in a random format, and its ISO form."""
    d = FIRST_DATE + datetime.timedelta(days=rng.randrange((LAST_DATE - FIRST_DATE).days + 1))
    return rng.choice(_date_formats(d)), d.isoformat()


# -- fr-en ------------------------------------------------------------------------------------

# French noun: (singular, plural, gender, English singular, English plural)
NOUNS = (
    ("chat", "chats", "m", "cat", "cats"),
    ("chien", "chiens", "m", "dog", "dogs"),
    ("oiseau", "oiseaux", "m", "bird", "birds"),
    ("garçon", "garçons", "m", "boy", "boys"),
    ("homme", "hommes", "m", "man", "men"),
    ("cheval", "chevaux", "m", "horse", "horses"),
    ("femme", "femmes", "f", "woman", "women"),
    ("fille", "filles", "f", "girl", "girls"),
    ("souris", "souris", "f", "mouse", "mice"),
    ("vache", "vaches", "f", "cow", "cows"),
)
# French adjective (placed after the noun): (m. sg, f. sg, m. pl, f. pl, English)
ADJECTIVES = (
    ("noir", "noire", "noirs", "noires", "black"),
    ("blanc", "blanche", "blancs", "blanches", "white"),
    ("gris", "grise", "gris", "grises", "grey"),
    ("rouge", "rouge", "rouges", "rouges", "red"),
    ("vert", "verte", "verts", "vertes", "green"),
    ("content", "contente", "contents", "contentes", "happy"),
    ("fatigué", "fatiguée", "fatigués", "fatiguées", "tired"),
    ("rapide", "rapide", "rapides", "rapides", "fast"),
)
# French verb: {tense: (3rd sg, 3rd pl)}, English {tense: (3rd sg, 3rd pl)}, transitive?
VERBS = (
    ({"present": ("dort", "dorment"), "past": ("a dormi", "ont dormi"), "future": ("dormira", "dormiront")},
     {"present": ("sleeps", "sleep"), "past": ("slept", "slept"), "future": ("will sleep", "will sleep")}, False),
    ({"present": ("mange", "mangent"), "past": ("a mangé", "ont mangé"), "future": ("mangera", "mangeront")},
     {"present": ("eats", "eat"), "past": ("ate", "ate"), "future": ("will eat", "will eat")}, False),
    ({"present": ("court", "courent"), "past": ("a couru", "ont couru"), "future": ("courra", "courront")},
     {"present": ("runs", "run"), "past": ("ran", "ran"), "future": ("will run", "will run")}, False),
    ({"present": ("chante", "chantent"), "past": ("a chanté", "ont chanté"),
      "future": ("chantera", "chanteront")},
     {"present": ("sings", "sing"), "past": ("sang", "sang"), "future": ("will sing", "will sing")}, False),
    ({"present": ("joue", "jouent"), "past": ("a joué", "ont joué"), "future": ("jouera", "joueront")},
     {"present": ("plays", "play"), "past": ("played", "played"), "future": ("will play", "will play")}, False),
    ({"present": ("voit", "voient"), "past": ("a vu", "ont vu"), "future": ("verra", "verront")},
     {"present": ("sees", "see"), "past": ("saw", "saw"), "future": ("will see", "will see")}, True),
    ({"present": ("aime", "aiment"), "past": ("a aimé", "ont aimé"), "future": ("aimera", "aimeront")},
     {"present": ("likes", "like"), "past": ("liked", "liked"), "future": ("will like", "will like")}, True),
    ({"present": ("suit", "suivent"), "past": ("a suivi", "ont suivi"), "future": ("suivra", "suivront")},
     {"present": ("follows", "follow"), "past": ("followed", "followed"),
      "future": ("will follow", "will follow")}, True),
)
TENSES = ("present", "past", "future")


def noun_phrase(noun: tuple, plural: bool, definite: bool, adjective: tuple | None) -> tuple[str, str]:
    """A French noun phrase and its English translation: determiner (gender, number, elision) + noun
    + optional adjective (agreeing) in French; determiner + optional adjective + noun in English::

        >>> noun_phrase(NOUNS[0], False, True, ADJECTIVES[0])
        ('le chat noir', 'the black cat')
        >>> noun_phrase(NOUNS[2], False, True, None), noun_phrase(NOUNS[6], True, False, ADJECTIVES[1])
        (("l'oiseau", 'the bird'), ('des femmes blanches', 'some white women'))
    """
    fr_sg, fr_pl, gender, en_sg, en_pl = noun
    noun_fr = fr_pl if plural else fr_sg
    if definite:
        if plural:
            fr_det = "les "
        elif noun_fr[0] in "aeiouhé":
            fr_det = "l'"
        else:
            fr_det = "le " if gender == "m" else "la "
    else:
        fr_det = "des " if plural else ("un " if gender == "m" else "une ")
    fr = fr_det + noun_fr
    en_words = [en_pl if plural else en_sg]
    if adjective is not None:
        fr += " " + adjective[(2 if plural else 0) + (1 if gender == "f" else 0)]
        en_words.insert(0, adjective[4])
    if definite:
        en_det = "the"
    elif plural:
        en_det = "some"
    else:
        en_det = "an" if en_words[0][0] in "aeiou" else "a"
    return fr, " ".join([en_det, *en_words])


def _noun_phrase(rng: random.Random) -> tuple[str, str, bool]:
    """A random French noun phrase, its English translation, and whether it is plural."""
    noun = rng.choice(NOUNS)
    plural = rng.random() < 0.4
    definite = rng.random() < 0.6
    adjective = rng.choice(ADJECTIVES) if rng.random() < 0.6 else None
    return (*noun_phrase(noun, plural, definite, adjective), plural)


def fr_en_pair(rng: random.Random) -> tuple[str, str]:
    """One sentence of the toy grammar: subject, verb (present, past or future), and for transitive
    verbs an object: ``"la vache blanche a vu un chien"`` -> ``"the white cow saw a dog"``."""
    subject_fr, subject_en, plural = _noun_phrase(rng)
    fr_forms, en_forms, transitive = rng.choice(VERBS)
    tense = rng.choice(TENSES)
    fr = f"{subject_fr} {fr_forms[tense][plural]}"
    en = f"{subject_en} {en_forms[tense][plural]}"
    if transitive:
        object_fr, object_en, _ = _noun_phrase(rng)
        fr, en = f"{fr} {object_fr}", f"{en} {object_en}"
    return fr, en


@functools.lru_cache(maxsize=1)
def _fr_en_tables() -> tuple[dict[str, list[tuple[str, bool]]], dict[str, list[tuple[str, bool, bool]]]]:
    """Every noun phrase of the grammar (French -> [(English, plural)]) and every verb form
    (French -> [(English, plural, transitive)]), from the functions that generate the sentences."""
    phrases: dict[str, list[tuple[str, bool]]] = {}
    for noun in NOUNS:
        for plural in (False, True):
            for definite in (False, True):
                for adjective in (None, *ADJECTIVES):
                    fr, en = noun_phrase(noun, plural, definite, adjective)
                    phrases.setdefault(fr, []).append((en, plural))
    verbs: dict[str, list[tuple[str, bool, bool]]] = {}
    for fr_forms, en_forms, transitive in VERBS:
        for tense in TENSES:
            for plural in (False, True):
                verbs.setdefault(fr_forms[tense][plural], []).append((en_forms[tense][plural], plural, transitive))
    return phrases, verbs


def fr_en_translation(text: str) -> str | None:
    """The grammar's English for a French sentence of the ``fr-en`` task, or None when the sentence
    is not one the task can generate (an unknown word, a wrong agreement or word order)::

        >>> fr_en_translation("la vache blanche a vu un chien")
        'the white cow saw a dog'
        >>> fr_en_translation("le petit chien mange") is None   # "petit" is not in the grammar
        True
    """
    phrases, verbs = _fr_en_tables()
    for subject, subject_readings in phrases.items():
        if not text.startswith(subject + " "):
            continue
        rest = text[len(subject) + 1:]
        for verb, verb_readings in verbs.items():
            if rest != verb and not rest.startswith(verb + " "):
                continue
            obj = rest[len(verb) + 1:]
            for subject_en, plural in subject_readings:
                for verb_en, verb_plural, transitive in verb_readings:
                    if verb_plural != plural:
                        continue
                    if not transitive and rest == verb:
                        return f"{subject_en} {verb_en}"
                    if transitive and obj in phrases:
                        return f"{subject_en} {verb_en} {phrases[obj][0][0]}"
    return None


FR_DETERMINERS = {"le": "the", "la": "the", "l'": "the", "les": "the", "un": "a, an", "une": "a, an",
                  "des": "some"}


def fr_en_words() -> dict[str, str]:
    """Every French word of the grammar -> its English (for ``seqlab seq2seq vocab`` and for telling
    which input words the model never saw). Compound tenses give two words: "a" / "ont" (the
    auxiliary, English "has"/"have" before the participle, as in "a mangé" = "ate")."""
    words = dict(FR_DETERMINERS)
    for fr_sg, fr_pl, _, en_sg, en_pl in NOUNS:
        words[fr_sg] = en_sg
        words[fr_pl] = en_pl if fr_pl != fr_sg else f"{en_sg}, {en_pl}"
    for *forms, english in ADJECTIVES:
        for form in forms:
            words[form] = english
    for fr_forms, en_forms, _ in VERBS:
        for tense in TENSES:
            for plural in (False, True):
                fr_words = fr_forms[tense][plural].split()
                words[fr_words[-1]] = en_forms[tense][plural]
                if len(fr_words) == 2:
                    words[fr_words[0]] = "has" if fr_words[0] == "a" else "have"
    return words


def french_words(text: str) -> list[str]:
    """The words of a French sentence as the grammar counts them: "l'oiseau" is "l'" + "oiseau"."""
    words = []
    for word in text.split():
        if word.startswith("l'") and len(word) > 2:
            words += ["l'", word[2:]]
        else:
            words.append(word)
    return words


# -- symbol tasks -------------------------------------------------------------------------------


def symbol_pair(task: str, rng: random.Random, lengths: tuple[int, int]) -> tuple[str, str]:
    """A random string over :data:`SYMBOLS` with length in ``lengths`` (inclusive) and its copy,
    reversal or sorted form."""
    source = "".join(rng.choice(SYMBOLS) for _ in range(rng.randint(*lengths)))
    if task == "copy":
        return source, source
    if task == "reverse":
        return source, source[::-1]
    if task == "sort":
        return source, "".join(sorted(source))
    raise ValueError(f"unknown symbol task {task!r}; choose one of {', '.join(SYMBOL_TASKS)}")


# -- the public entry point ---------------------------------------------------------------------


def check_task(task: str) -> None:
    if task not in TASKS:
        raise ValueError(f"unknown task {task!r}; choose one of {', '.join(TASKS)} (or give --pairs FILE.tsv)")


def check_lengths(lengths: tuple[int, int]) -> tuple[int, int]:
    low, high = (int(v) for v in lengths)
    if not 1 <= low <= high:
        raise ValueError(f"lengths must satisfy 1 <= min <= max, got ({low}, {high})")
    return low, high


def make_pairs(task: str, count: int, *, seed: int, lengths: tuple[int, int] | None = None,
               exclude: set[str] | frozenset[str] = frozenset()) -> list[tuple[str, str]]:
    """``count`` (source, target) pairs of ``task``, a pure function of the arguments.

    ``lengths`` (min, max) applies to the symbol tasks only (default :data:`DEFAULT_LENGTHS`).
    Sources in ``exclude`` are skipped (use the training sources to get an unseen test set); when
    the task has too few distinct sources left, a ValueError says so.
    """
    check_task(task)
    if count < 0:
        raise ValueError(f"count must be >= 0, got {count}")
    if lengths is not None and task not in SYMBOL_TASKS:
        raise ValueError(f"lengths apply to the symbol tasks ({', '.join(SYMBOL_TASKS)}), not to {task!r}")
    span = check_lengths(lengths or DEFAULT_LENGTHS)
    rng = random.Random(f"seqlab-seq2seq-{task}-{seed}")  # str seeds hash the same on every run
    pairs: list[tuple[str, str]] = []
    misses = 0
    while len(pairs) < count:
        if task in SYMBOL_TASKS:
            pair = symbol_pair(task, rng, span)
        elif task == "dates":
            pair = date_pair(rng)
        else:
            pair = fr_en_pair(rng)
        if pair[0] in exclude:
            misses += 1
            if misses > 100 * count + 1000:
                raise ValueError(f"task {task!r}: could not draw {count} pairs outside the {len(exclude)} "
                                 f"excluded sources (found {len(pairs)}); ask for fewer pairs or wider lengths")
            continue
        pairs.append(pair)
    return pairs
