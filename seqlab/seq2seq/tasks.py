"""Built-in sequence-to-sequence tasks: seeded generators of (source, target) text pairs, no download.

Five tasks, each a pure function of the seed (the same seed gives the same pairs on every machine):

* ``copy``    ``"cadb" -> "cadb"``    the target repeats the source;
* ``reverse`` ``"cadb" -> "bdac"``    the target is the source backwards (the first output depends on
  the last input: the hardest case for a model that squeezes the source into one vector);
* ``sort``    ``"cadb" -> "abcd"``    the target is the source's symbols in alphabetical order;
* ``dates``   ``"Sunday 29th of November 2026" -> "2026-11-29"``: one date written in one of many
  human formats, translated to ISO 8601 (the classic toy translation task);
* ``fr-en``   ``"le chat noir dort" -> "the black cat sleeps"``: a small French grammar and its English
  translation. French puts most adjectives after the noun and English before it, so a model
  must *reorder* words, which shows in its cross-attention.

Worked example::

    >>> make_pairs("reverse", 2, seed=0, lengths=(3, 5))
    [('afiei', 'ieifa'), ('ccijf', 'fjicc')]
    >>> make_pairs("dates", 1, seed=1)
    [('Jan 15, 2020', '2020-01-15')]

The symbol tasks (copy, reverse, sort) draw their length uniformly from ``lengths`` (inclusive),
so a model can be tested on lengths it never saw in training.
"""

from __future__ import annotations

import datetime
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


def _noun_phrase(rng: random.Random) -> tuple[str, str, bool]:
    """A random French noun phrase, its English translation, and whether it is plural.

    French: determiner (gender, number, elision) + noun + optional adjective (agreeing);
    English: determiner + optional adjective + noun."""
    fr_sg, fr_pl, gender, en_sg, en_pl = rng.choice(NOUNS)
    plural = rng.random() < 0.4
    definite = rng.random() < 0.6
    adjective = rng.choice(ADJECTIVES) if rng.random() < 0.6 else None
    noun = fr_pl if plural else fr_sg
    if definite:
        if plural:
            fr_det = "les "
        elif noun[0] in "aeiouhé":
            fr_det = "l'"
        else:
            fr_det = "le " if gender == "m" else "la "
    else:
        fr_det = "des " if plural else ("un " if gender == "m" else "une ")
    fr = fr_det + noun
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
    return fr, " ".join([en_det, *en_words]), plural


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
