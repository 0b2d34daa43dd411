"""The course's lessons: one Markdown file per step of the path, in English and Chinese.

``STEP/lesson.en.md`` and ``STEP/lesson.zh.md`` in the course folder (``seqlab.learn.courses``) hold
the lesson of the step ``STEP``. :func:`lesson` parses one into a :class:`Lesson`; the
terminal, the JSON, the notebooks and the explorer render that structure (``seqlab.learn.views``,
``seqlab.learn.notebooks``), never the file.

The format (docs/lessons.md) is Markdown with sections ``## Heading {#id}``, the lines
``[[figure NAME | caption]]``, ``[[widget ANCHOR]]`` and ``[[mistakes]]``, and the blocks
``:::question ID kind=...`` (with ``:::answer``) and ``:::mistake ID Title``, each closed by ``:::``.
``:::reveal`` ... ``:::`` holds the part of a Trace step's lesson that gives its question's answer
away (the worked numbers, a figure that draws them): every view shows it only once the question is
answered or its answer asked for.
The English file's front matter ``numbers:`` ties each printed worked number to an expression over
seqlab's own code; ``seqlab.learn.lesson_checks.problems`` recomputes them and checks both languages' text.
"""

from __future__ import annotations

import dataclasses
import functools
import re
import unicodedata
from pathlib import Path

from seqlab.learn.courses import BUILT_IN

LESSON_DIR = BUILT_IN           # the course folder: STEP/lesson.LANG.md
LANGS = ("en", "zh")
REQUIRED = ("idea", "maths", "worked", "predict", "mistakes", "reading")
QUESTION_KINDS = ("predict", "explain", "derive", "trace", "extend")

def glossary() -> tuple[tuple[str, str], ...]:
    """The course's glossary (words.toml): where an English lesson uses a term, its Chinese lesson uses
    the glossary's word for it (the glossary's "key" and "value" are everyday English words too, so
    they are not enforced)."""
    from seqlab.learn.words import table
    return tuple(table()["glossary"].items())


class LessonError(ValueError):
    """A lesson file that does not follow the format; the message names the file and line."""


@dataclasses.dataclass
class Block:
    """One piece of a section. ``kind`` is paragraph | list | olist | code | table | heading |
    figure | widget | mistakes | question | mistake | reveal; ``text`` the Markdown of a paragraph, heading,
    code block or table (rows joined by newlines), ``items`` a list's items; a figure's ``name`` and
    ``caption``; a widget's ``name`` (its anchor); a question's ``name`` (id), ``kind_of`` (predict,
    ...), ``text`` and ``answer``; a mistake's ``name`` (id), ``title`` and ``text``."""
    kind: str
    text: str = ""
    items: list[str] = dataclasses.field(default_factory=list)
    name: str = ""
    caption: str = ""
    answer: str = ""
    title: str = ""
    kind_of: str = ""
    line: int = 0
    blocks: list["Block"] = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class Section:
    id: str
    heading: str
    blocks: list[Block]


@dataclasses.dataclass
class Lesson:
    step: str
    lang: str
    title: str
    sections: list[Section]
    numbers: list[tuple[str, str]]      # (the numbers as printed, the expression), English file only
    path: Path

    def section(self, id: str) -> Section | None:
        return next((s for s in self.sections if s.id == id), None)

    def blocks(self, kind: str) -> list[Block]:
        """The blocks of ``kind`` in the lesson, also those inside a :::reveal."""
        return [b for s in self.sections for b in _every(s.blocks) if b.kind == kind]

    @property
    def questions(self) -> list[Block]:
        return self.blocks("question")

    @property
    def figures(self) -> list[Block]:
        return self.blocks("figure")

    @property
    def widgets(self) -> list[str]:
        return [b.name for b in self.blocks("widget")]

    @property
    def hints(self) -> list[str]:
        """The graded hints of an Implement step, in order (empty for other steps)."""
        section = self.section("hints")
        return [item for b in (section.blocks if section else []) if b.kind == "olist" for item in b.items]

    @property
    def reading(self) -> list[str]:
        section = self.section("reading")
        return [item for b in (section.blocks if section else []) if b.kind in ("list", "olist") for item in b.items]

    def text(self) -> str:
        """Every word of the lesson (titles, paragraphs, questions, answers), for searches and checks."""
        parts = [self.title]
        for s in self.sections:
            parts.append(s.heading)
            for b in _every(s.blocks):
                parts += [b.text, b.caption, b.answer, b.title, *b.items]
        return "\n".join(p for p in parts if p)


def _every(blocks: list[Block]) -> list[Block]:
    """The blocks and, after a :::reveal, the blocks inside it."""
    return [x for b in blocks for x in ([b, *b.blocks] if b.kind == "reveal" else [b])]


def lesson_path(step: str, lang: str = "en") -> Path:
    """STEP/lesson.LANG.md in the course this process follows (or under LESSON_DIR, where a test put its own)."""
    from seqlab.learn.courses import active
    if LESSON_DIR == BUILT_IN and step in active().folders:
        return active().folder(step).lesson_path(lang)
    return Path(LESSON_DIR) / step / f"lesson.{lang}.md"


@functools.lru_cache(maxsize=256)
def _parse_cached(path: str, mtime_ns: int, step: str, lang: str) -> Lesson:
    return parse(Path(path).read_text(encoding="utf-8"), step, lang, Path(path))


def lesson(step: str, lang: str = "en") -> Lesson:
    """The lesson of ``step`` in ``lang`` ("en" or "zh"). LessonError when the file is missing or malformed."""
    if lang not in LANGS:
        raise LessonError(f"no language {lang!r}; the lessons are in {', '.join(LANGS)}")
    path = lesson_path(step, lang)
    if not path.is_file():
        raise LessonError(f"no lesson for step {step!r} in {lang}: {path} does not exist")
    return _parse_cached(str(path), path.stat().st_mtime_ns, step, lang)


def has_lesson(step: str, lang: str = "en") -> bool:
    return lesson_path(step, lang).is_file()


_SECTION = re.compile(r"^##\s+(.+?)\s*\{#([a-z0-9-]+)\}\s*$")
_DIRECTIVE = re.compile(r"^\[\[(figure|widget|mistakes)(?:\s+([A-Za-z0-9_.-]+))?\s*(?:\|\s*(.*?))?\s*\]\]$")
_OPEN = re.compile(r"^:::(question|mistake)\s+([a-z0-9][a-z0-9_-]*)\s*(.*)$")
_REVEAL = ":::reveal"


def parse(text: str, step: str, lang: str, path: Path | None = None) -> Lesson:
    """A lesson from its file's text; LessonError names the file and line of anything malformed."""
    where = path or Path(f"<{lang}/{step}.md>")
    lines = text.splitlines()

    def fail(line_no: int, message: str):
        raise LessonError(f"{where}, line {line_no}: {message}")

    numbers: list[tuple[str, str]] = []
    i = 0
    if lines and lines[0].strip() == "---":
        end = next((k for k in range(1, len(lines)) if lines[k].strip() == "---"), None)
        if end is None:
            fail(1, "the front matter opened by --- is never closed")
        key = None
        for k in range(1, end):
            raw = lines[k]
            if not raw.strip():
                continue
            if not raw.startswith(" "):
                key = raw.strip().rstrip(":")
                if key != "numbers":
                    fail(k + 1, f"unknown front-matter key {key!r} (only 'numbers')")
                continue
            if "=" not in raw:
                fail(k + 1, "a numbers line is 'the numbers as printed = expression'")
            shown, expression = raw.split("=", 1)
            numbers.append((shown.strip(), expression.strip()))
        i = end + 1
    while i < len(lines) and not lines[i].strip():
        i += 1
    if i >= len(lines) or not lines[i].startswith("# "):
        fail(i + 1, "a lesson starts with its title: '# Title'")
    title = lines[i][2:].strip()
    i += 1
    sections: list[Section] = []
    current: Section | None = None
    paragraph: list[str] = []

    def flush():
        if paragraph:
            current.blocks.append(Block("paragraph", text=join_lines(paragraph), line=i))
            paragraph.clear()

    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        number = i + 1
        match = _SECTION.match(line)
        if match:
            if current is not None:
                flush()
            current = Section(match.group(2), match.group(1), [])
            if any(s.id == current.id for s in sections):
                fail(number, f"a second section {{#{current.id}}}")
            sections.append(current)
            i += 1
            continue
        if line.startswith("## "):
            fail(number, "a section heading ends with its id, e.g. '## The idea {#idea}'")
        if current is None:
            if stripped:
                fail(number, "text before the first section ('## Heading {#id}')")
            i += 1
            continue
        if not stripped:
            flush()
            i += 1
            continue
        if stripped.startswith("[["):
            flush()
            match = _DIRECTIVE.match(stripped)
            if not match:
                fail(number, "a directive is [[figure NAME | caption]], [[widget ANCHOR]] or [[mistakes]]")
            kind, name, caption = match.group(1), match.group(2) or "", match.group(3) or ""
            if kind in ("figure", "widget") and not name:
                fail(number, f"[[{kind}]] needs a name")
            current.blocks.append(Block(kind, name=name, caption=caption, line=number))
            i += 1
            continue
        if stripped == _REVEAL:
            flush()
            end = next((k for k in range(i + 1, len(lines)) if lines[k].strip() == ":::"), None)
            if end is None:
                fail(number, "the :::reveal block is never closed by a line ':::'")
            if any(b.strip().startswith(":::") for b in lines[i + 1:end]):
                fail(number, "a :::reveal block holds paragraphs, tables, lists, code, figures and widgets, "
                             "not another ::: block")
            inner = _blocks(lines[i + 1:end], fail, i + 1, directives=True)
            if not inner:
                fail(number, "the :::reveal block is empty")
            current.blocks.append(Block("reveal", blocks=inner, line=number))
            i = end + 1
            continue
        if stripped.startswith(":::"):
            flush()
            match = _OPEN.match(stripped)
            if not match:
                fail(number, "a block opens with ':::question ID [kind=...]' or ':::mistake ID Title'")
            kind, name, rest = match.groups()
            end = next((k for k in range(i + 1, len(lines)) if lines[k].strip() == ":::"), None)
            if end is None:
                fail(number, f"the :::{kind} block is never closed by a line ':::'")
            body = lines[i + 1:end]
            if any(b.strip().startswith(":::") and b.strip() not in (":::answer",) for b in body):
                fail(number, f"the :::{kind} block holds another block; close it with ':::' first")
            if kind == "question":
                attrs = dict(part.split("=", 1) for part in rest.split() if "=" in part)
                kind_of = attrs.get("kind", "predict" if current.id == "predict" else "")
                if kind_of not in QUESTION_KINDS:
                    fail(number, f"a question's kind is one of {', '.join(QUESTION_KINDS)} (kind=...), got {kind_of!r}")
                split = next((k for k, b in enumerate(body) if b.strip() == ":::answer"), None)
                question = body if split is None else body[:split]
                answer = [] if split is None else body[split + 1:]
                block = Block("question", name=name, kind_of=kind_of, text=_join(question), answer=_join(answer),
                              line=number)
                if not block.text:
                    fail(number, f"the question {name!r} has no text")
            else:
                if ":::answer" in (b.strip() for b in body):
                    fail(number, "a :::mistake block has no :::answer")
                if not rest.strip():
                    fail(number, f"the mistake {name!r} needs a title after its id")
                block = Block("mistake", name=name, title=rest.strip(), text=_join(body), line=number)
            current.blocks.append(block)
            i = end + 1
            continue
        found = _markdown_block(lines, i, fail)
        if found is not None:
            flush()
            block, i = found
            current.blocks.append(block)
            continue
        paragraph.append(line)
        i += 1
    if current is not None:
        flush()
    return Lesson(step, lang, title, sections, numbers, where)


def _wide(c: str) -> bool:
    return unicodedata.east_asian_width(c) in "WFA"      # Chinese, full-width and quote marks


def join_lines(lines: list[str]) -> str:
    """A paragraph's lines as one line: joined by a space, except between two Chinese characters
    (Chinese text has no spaces between its words; beside a Latin word it keeps the space)."""
    out = ""
    for line in (x.strip() for x in lines):
        if out and line:
            left, right = out.rstrip("*`")[-1:], line.lstrip("*`")[:1]     # past **bold** and `code` marks
            out += line if left and right and _wide(left) and _wide(right) else " " + line
        else:
            out += line
    return out


def _separator_row(line: str) -> bool:
    """Whether ``line`` is a Markdown table's separator row, "| --- | ---: |"."""
    cells = line.strip().strip("|").split("|")
    return line.strip().startswith("|") and all(re.fullmatch(r"\s*:?-{3,}:?\s*", c) for c in cells)


def _markdown_block(lines: list[str], i: int, fail) -> tuple[Block, int] | None:
    """The code block, table, list or ### heading that starts at ``lines[i]`` and the index after it,
    or None when the line starts none of them (it is a paragraph's)."""
    stripped = lines[i].strip()
    number = i + 1
    if stripped.startswith("```"):
        end = next((k for k in range(i + 1, len(lines)) if lines[k].strip().startswith("```")), None)
        if end is None:
            fail(number, "a ``` code block is never closed")
        return Block("code", text="\n".join(lines[i + 1:end]), line=number), end + 1
    if stripped.startswith("|") and i + 1 < len(lines) and _separator_row(lines[i + 1]):
        end = i                             # a table: a header row, then | --- | (a "|x| > 1" line is prose)
        while end < len(lines) and lines[end].strip().startswith("|"):
            end += 1
        return Block("table", text="\n".join(line.strip() for line in lines[i:end]), line=number), end
    bullet = re.match(r"^(- |\d+\. )", stripped)
    if bullet:
        ordered = bullet.group(1) != "- "
        items: list[str] = []
        while i < len(lines):
            s = lines[i].strip()
            m = re.match(r"^(- |\d+\. )", s)
            if m and (m.group(1) != "- ") == ordered:
                items.append(s[len(m.group(1)):].strip())
            elif s and lines[i].startswith((" ", "\t")) and items:
                items[-1] = join_lines([items[-1], s])          # a list item's continuation line
            else:
                break
            i += 1
        return Block("olist" if ordered else "list", items=items, line=number), i
    if stripped.startswith("### "):
        return Block("heading", text=stripped[4:].strip(), line=number), i + 1
    return None


def _blocks(lines: list[str], fail, offset: int = 0, directives: bool = False) -> list[Block]:
    """The blocks of ``lines``: paragraphs and Markdown blocks, and with ``directives`` (a :::reveal's
    lines) the [[figure]] and [[widget]] directives too; ``offset``: the index of the first line in the
    file, for the line numbers that ``fail`` names."""
    blocks: list[Block] = []
    paragraph: list[str] = []

    def flush():
        if paragraph:
            blocks.append(Block("paragraph", text=join_lines(paragraph)))
            paragraph.clear()

    i = 0
    while i < len(lines):
        stripped = lines[i].strip()
        if not stripped:
            flush()
            i += 1
            continue
        if directives and stripped.startswith("[["):
            flush()
            match = _DIRECTIVE.match(stripped)
            if not match or match.group(1) == "mistakes" or not match.group(2):
                fail(offset + i + 1, "inside :::reveal a directive is [[figure NAME | caption]] or [[widget ANCHOR]]")
            blocks.append(Block(match.group(1), name=match.group(2), caption=match.group(3) or "", line=offset + i + 1))
            i += 1
            continue
        found = _markdown_block(lines, i, lambda n, m: fail(offset + n, m))
        if found is None:
            paragraph.append(lines[i])
            i += 1
            continue
        flush()
        block, i = found
        block.line += offset
        blocks.append(block)
    flush()
    return blocks


def body_blocks(text: str) -> list[Block]:
    """The Markdown of a question's text or answer, or a mistake's paragraph, as blocks: paragraphs,
    lists, code, tables and ### headings (no directives), for the renderers."""
    def fail(line_no: int, message: str):
        raise LessonError(f"line {line_no} of a block's text: {message}")

    return _blocks(text.splitlines(), fail)


def _join(lines: list[str]) -> str:
    """A block's lines as Markdown: blank lines keep paragraphs apart."""
    return "\n".join(lines).strip()


FOLD_AFTER = 5      # at most this many mistakes before the fold


def top_mistakes(step: str) -> tuple[str, ...] | None:
    """The ids of the mistakes the step's lesson shows before its fold (step.toml's ``top``, the most
    common first), or None when the step names none (then the first FOLD_AFTER in the lesson's order)."""
    from seqlab.learn.courses import active
    folder = active().folders.get(step)
    top = folder.record.get("top") if folder is not None else None
    return None if top is None else tuple(str(t) for t in top)
