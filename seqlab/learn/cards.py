"""An Explain or Derive card, answered before its worked answer is seen, then marked by the student.

The flow is one in the terminal (``seqlab learn card NAME``: a prompt, or ``--answer TEXT`` and then
``--mark``), the explorer (a box, then three buttons) and a notebook::

    card("explain_order", my_answer)     # my_answer written first; shows the worked answer
    mark("explain_order", "same")        # same | partly | missed

The written answer is kept in progress.json (``"written"``). The card passes only when the student,
having written an answer and read the worked one, marks it "same"; "partly" and "missed" leave it
started (write it again in your own words). Revealing alone passes nothing, and neither does a
notebook's "Run All": its answer cell holds ``"..."`` until the student writes.
"""

from __future__ import annotations

import dataclasses
import html
import os
import unicodedata
from pathlib import Path

from seqlab.learn.words import Said, render, said
from seqlab.learn.workspace import DEFAULT_WORKSPACE, ProgressError, read_progress, set_state

MARKS = ("same", "partly", "missed")
PLACEHOLDER = "..."
MIN_CHARACTERS = 12     # letters of an answer at least; a wide character (a CJK ideograph) counts as two


class CardError(ValueError):
    """A card answered out of order (marked before it is written) or written as nothing; ``why`` is
    in words said later (``str()``: the English), :meth:`words` in the student's language."""

    def __init__(self, card_id: str, why: Said):
        super().__init__(f"{card_id}: {why}")
        self.card_id, self.why = card_id, why

    def words(self, lang: str = "en") -> str:
        return f"{self.card_id}: {render(self.why, lang)}"


def _letters(text: str) -> int:
    """How much an answer says, in letters: a wide character (a CJK ideograph, as a terminal draws it) counts as two,
    so that a short sentence in Chinese is as long as its English."""
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text if not c.isspace())


def refusal(written: str) -> Said | None:
    """Why ``written`` is not an answer (empty, the notebook's placeholder, a few characters), in words
    said later, or None."""
    text = " ".join(str(written).split())
    if not text or text.strip(".… ") == "":
        return said("cards.refused_placeholder")
    if _letters(text) < MIN_CHARACTERS:
        return said("cards.refused_short", text=repr(text))
    return None


def written_answer(workspace: Path | None, card_id: str) -> str | None:
    """The answer the student wrote for the card, kept in progress.json (None: none yet)."""
    if workspace is None:
        return None
    try:
        entry = read_progress(Path(workspace))["steps"].get(card_id)
    except (OSError, ProgressError):
        return None
    written = entry.get("written") if isinstance(entry, dict) else None
    return written if isinstance(written, str) and refusal(written) is None else None


def write(workspace: Path, card_id: str, written: str) -> None:
    """Keep the student's answer (CardError when it is none); the card is started, not passed."""
    why = refusal(written)
    if why:
        raise CardError(card_id, why)
    set_state(Path(workspace), card_id, "started", written=" ".join(str(written).split()), drop=("mark",))


def record_mark(workspace: Path | None, card_id: str, mark: str, written: str | None = None) -> str:
    """Record the student's comparison of their answer with the worked one; returns the card's state
    ("passed" for "same"). CardError when nothing was written first or the mark is not one of MARKS."""
    if mark not in MARKS:
        raise CardError(card_id, said("cards.mark_how", marks=", ".join(MARKS), mark=repr(mark)))
    if written is None:
        written = written_answer(workspace, card_id)
    if written is None or refusal(written):
        raise CardError(card_id, said("cards.write_before_mark"))
    state = "passed" if mark == "same" else "started"
    if workspace is not None:
        set_state(Path(workspace), card_id, state, keep_passed=False, mark=mark, written=" ".join(written.split()))
    return state


# --- in a notebook -------------------------------------------------------------------------------------
@dataclasses.dataclass
class Shown:
    """What a notebook cell shows: text in a terminal, HTML in a notebook."""
    lines: list[str]
    ok: bool

    def __str__(self) -> str:
        return "\n".join(self.lines)

    __repr__ = __str__

    def _repr_html_(self) -> str:
        color = "#15803d" if self.ok else "#b91c1c"
        return "".join(f"<p style='color:{color if k == 0 else 'inherit'}'>{html.escape(line)}</p>"
                       for k, line in enumerate(self.lines))


def _card(card_id: str):
    from seqlab.learn.questions import CARD_BY_ID
    if card_id not in CARD_BY_ID:
        raise ValueError(f"no card {card_id!r}; the cards are: {', '.join(CARD_BY_ID)}")
    return CARD_BY_ID[card_id]


def card(card_id: str, written: str, workspace: str | os.PathLike = DEFAULT_WORKSPACE, lang: str = "en") -> Shown:
    """The notebook's card cell: ``written`` (the student's answer) is kept, then the worked answer is
    shown. The placeholder or an empty answer shows nothing of the worked answer and passes nothing."""
    from seqlab.learn.words import say
    c = _card(card_id)
    k = 1 if lang == "zh" else 0
    why = refusal(written)
    if why:
        return Shown([say("cards.write_first", lang)], False)
    write(Path(workspace), card_id, written)
    return Shown([say("cards.written", lang), say("cards.worked", lang, answer=c.answer[k]),
                  say("cards.mark_in_notebook", lang, id=card_id)], True)


def mark(card_id: str, how: str, workspace: str | os.PathLike = DEFAULT_WORKSPACE, lang: str = "en") -> Shown:
    """The notebook's mark cell: ``how`` is same, partly or missed ("" until the student marks it)."""
    from seqlab.learn.words import say
    _card(card_id)
    if not how:
        return Shown([say("cards.mark_first", lang, marks=" / ".join(MARKS))], False)
    try:
        state = record_mark(Path(workspace), card_id, how)
    except CardError as error:
        return Shown([error.words(lang)], False)
    return Shown([say("cards.passed" if state == "passed" else "cards.again", lang, id=card_id)], state == "passed")
