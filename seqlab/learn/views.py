"""What one step of the path shows, as one structure, and that structure as terminal text.

:func:`step_view` joins a step's lesson (``seqlab.learn.lessons``; until it is written, the step's
one-line ``read`` from ``seqlab.learn.path``), the catalogued mistakes of its exercise (the lesson's
``[[mistakes]]``) and its task (the Trace question in full, the card, the command, or the exercise's
commands) into plain data. ``seqlab learn show --json`` prints it, the explorer renders it, and
:func:`text` turns it into what ``seqlab learn show`` and ``seqlab learn next`` print::

    view = step_view("trace_recurrence", "en")          # answers left out
    view["sections"][0] == {"id": "idea", "heading": "The idea", "text": "A sentence, ...", "blocks": [...]}
    print(text(view))

A question's answer is in the structure only with ``show=True``. A Trace step's answer stays out of
it until the question is answered or its answer asked for (``revealed=True``): the lesson's
``:::reveal`` blocks come as ``{"type": "reveal", "shown": false}`` without what they hold, and its
widgets, which would compute the answer, sit below the task (``below_task``), closed. Blocks are plain data whose texts
keep the lesson's inline Markdown (``**bold**``, ``code``, ``[links](url)``); :func:`plain` strips it.
"""

from __future__ import annotations

import re
import textwrap
import unicodedata

from seqlab.learn import lessons
from seqlab.learn.lessons import FOLD_AFTER, top_mistakes
from seqlab.learn.path import PART_OF, STEP_BY_ID, STEPS
from seqlab.learn.words import say

EXPLORER = "http://127.0.0.1:8000/"

def label(key: str, lang: str, **values) -> str:
    return say(f"views.{key}", lang, **values)


def kind_word(kind: str, lang: str) -> str:
    return say(f"kinds.{kind}", lang)


def colon(lang: str) -> str:
    return "：" if lang == "zh" else ": "


def _pick(pair, lang: str) -> str:
    return pair[1] if lang == "zh" and pair[1] else pair[0]


def step_url(step: str, anchor: str = "") -> str:
    """The explorer's address of a step's lesson (and of an anchor in it, e.g. ``mistake-no_tanh``)."""
    return f"{EXPLORER}#step/{step}" + (f"/{anchor}" if anchor else "")


def site_url(base: str, lang: str, step: str, anchor: str = "") -> str:
    """A step's page on a hosted copy of ``seqlab learn site`` (``base``): "BASE/LANG/STEP.html#ANCHOR"."""
    return f"{base.rstrip('/')}/{lang}/{step}.html" + (f"#{anchor}" if anchor else "")


# --- the structure ------------------------------------------------------------------------------------
def _table(text: str) -> dict:
    rows = [[cell.strip() for cell in line.strip().strip("|").split("|")] for line in text.splitlines()]
    separator = [k for k, row in enumerate(rows) if row and all(re.fullmatch(r":?-{3,}:?", c) for c in row)]
    if separator and separator[0] == 1:
        return {"type": "table", "header": rows[0], "rows": rows[2:]}
    return {"type": "table", "header": [], "rows": [r for k, r in enumerate(rows) if k not in separator]}


def _body(text: str) -> list[dict]:
    return [_block(b) for b in lessons.body_blocks(text)]


def _block(b: lessons.Block) -> dict:
    if b.kind == "paragraph":
        return {"type": "paragraph", "text": b.text}
    if b.kind == "heading":
        return {"type": "heading", "text": b.text}
    if b.kind in ("list", "olist"):
        return {"type": "list", "ordered": b.kind == "olist", "items": list(b.items)}
    if b.kind == "code":
        return {"type": "code", "text": b.text}
    if b.kind == "table":
        return _table(b.text)
    raise ValueError(f"not a Markdown block: {b.kind}")


def _sentence(title: str) -> str:
    """A catalogue title as a heading: "the tanh is missing" -> "The tanh is missing"; a title that
    starts with a symbol ("h0 ...", "a is ...") keeps it as written."""
    first = title.split(" ", 1)[0]
    return title[:1].upper() + title[1:] if re.fullmatch(r"[a-z]{2,}", first) else title


def mistake_records(step: str, lang: str = "en") -> list[dict]:
    """The catalogued mistakes of the step's exercise (none for other steps), each a paragraph in
    ``lang``: the record's ``why`` where it has one, else its explanation, with anchor ``mistake-<id>``."""
    from seqlab.learn.catalog import exercise
    ex = exercise(step) if STEP_BY_ID.get(step) and STEP_BY_ID[step].kind == "implement" else None
    found = []
    for m in (ex.mistakes if ex is not None else ()):
        why = getattr(m, "why", ("", "")) or ("", "")
        title = _pick((m.title, getattr(m, "title_zh", "")), lang)
        text = _pick((why[0] or m.explanation, why[1] or getattr(m, "explanation_zh", "")), lang)
        found.append({"type": "mistake", "id": m.id, "anchor": f"mistake-{m.id}", "catalogued": True,
                      "title": _sentence(title), "blocks": _body(text),
                      "explanation": _pick((m.explanation, getattr(m, "explanation_zh", "")), lang)})
    return found


# --- the fold: a lesson shows its most common mistakes, the rest behind "More mistakes" -------------
def _by_top(records: list[dict], top: tuple[str, ...] | None) -> list[dict]:
    """The catalogued mistakes with those in ``top`` first, in its order; the others as catalogued."""
    if not top:
        return records
    rank = {mid: k for k, mid in enumerate(top)}
    return sorted(records, key=lambda r: rank.get(r["id"], len(top)))


def fold_mistakes(blocks: list[dict], step: str, lang: str) -> list[dict]:
    """The mistakes section's blocks with the mistakes not shown before the fold moved, in their order,
    into one block ``{"type": "fold", "id": "more-mistakes", "title": ..., "blocks": [...]}`` at the
    section's end. Shown: the ids of step.toml's ``top``, else the first FOLD_AFTER. Each mistake keeps its
    anchor (``mistake-ID``) and says whether it is ``folded``."""
    mistakes = [b for b in blocks if b["type"] == "mistake"]
    top = top_mistakes(step)
    shown = set(top) if top is not None else {b["id"] for b in mistakes[:FOLD_AFTER]}
    folded = [b for b in mistakes if b["id"] not in shown]
    for b in mistakes:
        b["folded"] = b["id"] not in shown
    if not folded:
        return blocks
    kept = [b for b in blocks if not (b["type"] == "mistake" and b["folded"])]
    return kept + [{"type": "fold", "id": "more-mistakes", "title": label("more_mistakes", lang, n=len(folded)),
                    "blocks": folded}]


def _unfolded(blocks: list[dict]) -> list[dict]:
    """``blocks`` with every fold replaced by the blocks inside it."""
    return [inner for b in blocks for inner in (b["blocks"] if b["type"] == "fold" else [b])]


def _figure_svg(name: str, lang: str) -> str:
    from seqlab.learn.figures import figure
    return figure(name, lang)


def _lesson_blocks(block: lessons.Block, step: str, lang: str, show: bool, svg: bool,
                   revealed: bool = True, folded: bool = False) -> list[dict]:
    if block.kind == "reveal":
        if not revealed and not folded:
            return [{"type": "reveal", "shown": False}]
        return [{"type": "reveal", "shown": revealed,
                 "blocks": [out for b in block.blocks for out in _lesson_blocks(b, step, lang, show, svg)]}]
    if block.kind == "figure":
        out = {"type": "figure", "name": block.name, "caption": block.caption}
        if svg:
            out["svg"] = _figure_svg(block.name, lang)
        return [out]
    if block.kind == "widget":
        return [{"type": "widget", "anchor": block.name}]
    if block.kind == "mistakes":
        return _by_top(mistake_records(step, lang), top_mistakes(step))
    if block.kind == "mistake":
        return [{"type": "mistake", "id": block.name, "anchor": f"mistake-{block.name}", "catalogued": False,
                 "title": block.title, "blocks": _body(block.text)}]
    if block.kind == "question":
        out = {"type": "question", "id": block.name, "kind": block.kind_of, "blocks": _body(block.text)}
        if show:
            out["answer"] = _body(block.answer)
        return [out]
    return [_block(block)]


def _task(step, lang: str, show: bool, ws: str = "") -> dict:
    """The step's own task: the Trace question in full, the card, the command, or the exercise."""
    from seqlab.learn.questions import CARD_BY_ID, QUESTION_BY_ID
    if step.kind == "implement":
        from seqlab.learn.catalog import exercise
        ex = exercise(step.id)
        first, _, rest = (ex.doc_zh if lang == "zh" and ex.doc_zh else ex.doc).strip("\n").partition("\n")
        doc = (first.strip() + "\n" + textwrap.dedent(rest)).strip("\n")     # the docstring as the stub shows it
        return {"type": "implement", "id": step.id, "signature": ex.signature, "doc": doc,
                "title": ex.title_zh if lang == "zh" else ex.title,
                "start": f"seqlab learn start {step.id}{ws}", "check": f"seqlab learn check {step.id}{ws}",
                "hint": f"seqlab learn hint {step.id}{ws}"}
    name = step.id if step.kind in ("trace", "card") else step.then
    if name in QUESTION_BY_ID:
        q = QUESTION_BY_ID[name]
        task = {"type": "trace", "id": q.id, "title": _pick(q.title, lang), "question": q.asks(lang),
                "precision": q.precision.words()[1 if lang == "zh" else 0],
                "answer_with": f"seqlab learn answer {q.id} VALUE{ws}"}
        if show:
            task.update(solution=_pick(q.solution, lang), answer=q.answer())
    else:
        card = CARD_BY_ID[name]
        task = {"type": "card", "id": card.id, "kind": card.kind, "title": _pick(card.title, lang),
                "question": _pick(card.question, lang), "answer_with": f"seqlab learn card {card.id}{ws}"}
        if show:
            task["answer"] = _pick(card.answer, lang)
    if step.kind == "command":
        return {"type": "command", "id": step.id, "command": step.command, "then": task,
                "check_with": f"seqlab learn check {step.id}{ws}"}
    return task


def trace_question(step_id: str) -> str | None:
    """The Trace question a step asks (its own, or the one after its command), or None."""
    from seqlab.learn.questions import QUESTION_BY_ID
    step = STEP_BY_ID.get(step_id)
    if step is None:
        return None
    asked = step.id if step.kind == "trace" else step.then if step.kind == "command" else ""
    return asked if asked in QUESTION_BY_ID else None


def step_view(step_id: str, lang: str = "en", *, show: bool = False, svg: bool = False, workspace: str = "",
              revealed: bool | None = None, folded: bool = False) -> dict:
    """Everything the step shows, as plain data (module docstring). ``show``: the questions' answers
    and the task's solution too; ``svg``: each figure's SVG text (for the explorer); ``workspace``:
    what the suggested commands end with (" --workspace DIR" when the student named one);
    ``revealed``: the step's Trace question is answered or its answer asked for (default: ``show``);
    ``folded``: for a page that cannot ask (a notebook, the static site), what waits for the answer
    comes with ``"shown": false`` and its blocks, to be put behind a click."""
    revealed = show if revealed is None else revealed
    step = STEP_BY_ID.get(step_id)
    if step is None:
        raise KeyError(f"no step {step_id!r}; `seqlab learn` lists them")
    part = PART_OF[step.id]
    written = next((lg for lg in (lang, "en") if lessons.has_lesson(step.id, lg)), None)
    view = {"name": step.id, "kind": step.kind, "lang": lang, "number": STEPS.index(step) + 1, "of": len(STEPS),
            "part": {"id": part.id, "title": _pick(part.title, lang)}, "look": step.look,
            "read": _pick(step.read, lang), "lesson": written is not None, "lesson_lang": written}
    if written is None:
        sections = [{"id": "read", "heading": label("read", lang), "blocks": [
            {"type": "paragraph", "text": label("being_written", lang)}, {"type": "paragraph", "text": view["read"]}]
            + ([{"type": "widget", "anchor": step.look}] if step.look else [])}]
        catalogued = _by_top(mistake_records(step.id, lang), top_mistakes(step.id))   # where a diagnosis's "read" link lands
        if catalogued:
            sections.append({"id": "mistakes", "heading": label("mistakes", lang),
                             "blocks": fold_mistakes(catalogued, step.id, lang)})
        view.update(title=_pick(step.title, lang), sections=sections, reading=[])
    else:
        ls = lessons.lesson(step.id, written)
        sections = []
        for s in ls.sections:
            blocks = [out for b in s.blocks for out in _lesson_blocks(b, step.id, written, show, svg, revealed, folded)]
            if s.id == "hints" and not show:
                continue   # graded hints come one at a time (seqlab learn hint), not all at once with the lesson
            if s.id == "mistakes":
                blocks = fold_mistakes(blocks, step.id, written)
            sections.append({"id": s.id, "heading": s.heading, "blocks": blocks})
        view.update(title=ls.title, sections=sections, reading=[plain(r) for r in ls.reading])
    view["below_task"] = []
    if trace_question(step.id):             # a widget would compute the answer: below the question, closed
        for s in view["sections"]:
            view["below_task"] += [dict(b, closed=not revealed) for b in _inner(s["blocks"]) if b["type"] == "widget"]
            s["blocks"] = _without_widgets(s["blocks"])
        if step.look and step.look not in [b["anchor"] for b in view["below_task"]]:
            view["below_task"].append({"type": "widget", "anchor": step.look, "closed": not revealed})
    for s in view["sections"]:
        s["text"] = blocks_text(s["blocks"], step.id, lang)
    every = [b for s in view["sections"] for b in _inner(_unfolded(s["blocks"]))]
    view["questions"] = [{"id": b["id"], "kind": b["kind"], "question": blocks_text(b["blocks"], step.id, lang),
                          **({"answer": blocks_text(b["answer"], step.id, lang)} if show else {})}
                         for b in every if b["type"] == "question"]
    view["figures"] = [{k: b[k] for k in ("name", "caption", "svg") if k in b} for b in every if b["type"] == "figure"]
    view["widgets"] = [b["anchor"] for b in every + view["below_task"] if b["type"] == "widget"]
    view["mistakes"] = [{"id": b["id"], "anchor": b["anchor"], "title": b["title"], "catalogued": b["catalogued"],
                         "folded": b.get("folded", False), "text": blocks_text(b["blocks"], step.id, lang),
                         **({"explanation": b["explanation"]} if "explanation" in b else {})}
                        for b in every if b["type"] == "mistake"]
    view["task"] = _task(step, lang, show, workspace)
    t = view["task"]
    asked = t["then"] if t["type"] == "command" else t
    if asked["type"] in ("trace", "card"):
        view["questions"].append({"id": asked["id"], "kind": "trace" if asked["type"] == "trace" else asked["kind"],
                                  "question": asked["question"], "task": True,
                                  **({"answer": asked.get("solution") or asked.get("answer")} if show else {})})
    return view


def _inner(blocks: list[dict]) -> list[dict]:
    """The blocks and, after a reveal, the blocks inside it (none where it is left out)."""
    return [x for b in blocks for x in ([b, *b.get("blocks", [])] if b["type"] == "reveal" else [b])]


def _without_widgets(blocks: list[dict]) -> list[dict]:
    out = []
    for b in blocks:
        if b["type"] == "widget":
            continue
        out.append(dict(b, blocks=_without_widgets(b["blocks"])) if b["type"] == "reveal" and "blocks" in b else b)
    return out


# --- plain text ---------------------------------------------------------------------------------------
_LINK = re.compile(r"\[([^\]]+)\]\(([^)\s]+)\)")


def plain(markdown: str) -> str:
    """Inline Markdown as plain text: **bold** and `code` lose their marks, [text](url) becomes "text (url)"."""
    text = _LINK.sub(lambda m: m.group(1) if m.group(1) == m.group(2) else f"{m.group(1)} ({m.group(2)})", markdown)
    return re.sub(r"\*\*(.+?)\*\*|`([^`]+)`", lambda m: m.group(1) or m.group(2), text)


def width_of(text: str) -> int:
    """Columns ``text`` takes in a terminal: Chinese characters take two."""
    return sum(0 if unicodedata.combining(c) else 2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


_NO_LINE_START = set("，。、；：？！）」』》】”’,.;:?!)]%")


def wrap(text: str, width: int | None, indent: str = "", first: str | None = None) -> list[str]:
    """``text`` in lines of at most ``width`` columns (None: one line), breaking at spaces and between
    Chinese characters (never before a closing punctuation mark); ``first`` indents the first line."""
    first = indent if first is None else first
    if width is None:
        return [first + text]
    tokens: list[str] = []
    for piece in re.findall(r"\s+|\S+", text):
        if piece.isspace():
            tokens.append(" ")
            continue
        word = ""
        for c in piece:                                  # a Chinese character is a token of its own
            if unicodedata.east_asian_width(c) in "WF" and c not in _NO_LINE_START:
                if word:
                    tokens.append(word)
                word = c
                tokens.append(word)
                word = ""
            else:
                word += c
        if word:
            tokens.append(word)
    lines: list[str] = []
    line: list[str] = []          # the tokens of the line being filled
    lead = first

    def used(parts):
        return width_of(lead + "".join(parts))

    for token in tokens:
        if token == " ":
            if line and line[-1] != " ":
                line.append(" ")
            continue
        if line and used(line + [token]) > width:
            carry: list[str] = []
            if token[0] in _NO_LINE_START and len(line) > 1 and line[-1] != " ":
                carry = [line.pop()]             # a closing mark never starts a line: take its word along
            lines.append((lead + "".join(line)).rstrip())
            lead, line = indent, carry
        line.append(token)
    lines.append((lead + "".join(line)).rstrip())
    return lines


def _table_lines(block: dict, width: int | None, indent: str) -> list[str]:
    rows = ([block["header"]] if block["header"] else []) + block["rows"]
    rows = [[plain(c) for c in row] for row in rows]
    n = max(len(r) for r in rows)
    rows = [r + [""] * (n - len(r)) for r in rows]
    widths = [max(width_of(r[k]) for r in rows) for k in range(n)]
    fmt = lambda row: indent + " | ".join(c + " " * (w - width_of(c)) for c, w in zip(row, widths)).rstrip()
    out = [fmt(r) for r in rows]
    if block["header"]:
        out.insert(1, indent + "-+-".join("-" * w for w in widths))
    return out


def blocks_text(blocks: list[dict], step: str, lang: str, width: int | None = None, indent: str = "") -> str:
    """Blocks as plain text, paragraphs apart; ``width``: wrap at that many columns (None: no wrapping)."""
    out: list[list[str]] = []
    for b in blocks:
        kind = b["type"]
        if kind == "paragraph":
            out.append(wrap(plain(b["text"]), width, indent))
        elif kind == "heading":
            out.append([indent + plain(b["text"]).upper() if lang == "en" else indent + plain(b["text"])])
        elif kind == "list":
            lines = []
            for k, item in enumerate(b["items"], 1):
                mark = f"{k}. " if b["ordered"] else "- "
                lines += wrap(plain(item), width, indent + " " * (len(mark) + 2), indent + "  " + mark)
            out.append(lines)
        elif kind == "code":
            out.append([indent + "    " + line for line in b["text"].splitlines()])
        elif kind == "table":
            out.append(_table_lines(b, width, indent + "  "))
        elif kind == "figure":
            head = f"[{label('figure', lang)}{colon(lang)}{plain(b['caption']) or b['name']}]"
            see = ("（{}）" if lang == "zh" else "({})").format(label("see_figure", lang, url=step_url(step)))
            out.append(wrap(head, width, indent) + wrap(see, width, indent + "  "))
        elif kind == "widget":
            line = label("widget", lang, url=EXPLORER + "#" + b["anchor"])
            if b.get("closed"):
                line += label("widget_closed", lang)
            out.append(wrap("[" + line + "]", width, indent))
        elif kind == "reveal":
            if b["shown"]:
                out.append([blocks_text(b["blocks"], step, lang, width, indent)])
            else:
                out.append(wrap("[" + label("reveal_hidden", lang) + "]", width, indent))
        elif kind == "question":
            kind = kind_word(b["kind"], lang)
            head = say("feedback.question_head", lang, kind=kind, id=b["id"])
            lines = [indent + head, blocks_text(b["blocks"], step, lang, width, indent + "  ")]
            if "answer" in b:
                lines += [indent + "  " + label("answer", lang) + colon(lang).rstrip(), blocks_text(b["answer"], step, lang, width,
                                                                                 indent + "    ")]
            else:
                lines += wrap(label("reveal", lang, name=step), width, indent + "  ")
            out.append(lines)
        elif kind == "mistake":
            out.append(wrap(f"* {plain(b['title'])}  [{b['anchor']}]", width, indent + "  ", indent)
                       + [blocks_text(b["blocks"], step, lang, width, indent + "  ")])
        elif kind == "fold":        # a terminal has no fold: the rest come under their own heading
            title = plain(b["title"])
            out.append([indent + (title.upper() if lang == "en" else title)]
                       + wrap(label("more_mistakes_note", lang), width, indent)
                       + ["", blocks_text(b["blocks"], step, lang, width, indent)])
    return "\n\n".join("\n".join(lines) for lines in out if lines)


def _heading(title: str, rule: str) -> list[str]:
    return [title, rule * width_of(title)]


def task_text(task: dict, lang: str, width: int | None = 88) -> list[str]:
    kind = task["type"]
    if kind == "trace":
        lines = wrap(f"{task['title']}{colon(lang)}{task['question']}", width)
        lines += wrap(label("trace_do", lang, id=task["id"]), width, "  ")
        if "solution" in task:
            lines += wrap(f"{label('solution', lang)}{colon(lang)}{task['solution']}", width, "  ")
        return lines
    if kind == "card":
        lines = wrap(f"{kind_word(task['kind'], lang).capitalize()}{colon(lang)}{task['title']}", width)
        lines += wrap(task["question"], width, "  ")
        if "answer" in task:
            lines += wrap(f"{label('answer', lang)}{colon(lang)}{task['answer']}", width, "  ")
        else:
            lines += wrap(label("card_do", lang, id=task["id"]), width, "  ")
        return lines
    if kind == "command":
        return ([f"{label('run', lang)}{colon(lang)}{task['command']}"]
                + wrap(label("command_check", lang, cmd=task["check_with"]), width)
                + [label("then", lang) + colon(lang).rstrip()]
                + ["  " + line for line in task_text(task["then"], lang, None if width is None else width - 2)])
    commands = [(task[key], label(key, lang)) for key in ("start", "check", "hint")]
    commands.append((f"seqlab learn solution {task['id']}", label("reference", lang)))
    column = max(len(cmd) for cmd, _ in commands) + 3
    return (wrap(label("implement", lang, signature=task["signature"]) + f" ({task['title']})", width)
            + ["    " + line if line.strip() else "" for line in task["doc"].splitlines()] + [""]
            + [f"  {cmd:<{column}}{what}" for cmd, what in commands])


def text(view: dict, width: int | None = 88) -> str:
    """The step as ``seqlab learn show`` prints it: a header, every section, then the step's task."""
    lang = view["lang"]
    kind = kind_word(view["kind"], lang)
    lines = wrap(label("step", lang, n=view["number"], of=view["of"], part=view["part"]["title"], kind=kind,
                       name=view["name"]) + (f" · {say('states.' + view['status'], lang)}" if view.get("status") else ""), width) + [""]
    lines += _heading(view["title"], "=")
    if view["lesson"] and view["lesson_lang"] != lang:
        lines += ["", label("english_only", lang)]
    for s in view["sections"]:
        lines += ["", *_heading(s["heading"], "-"), blocks_text(s["blocks"], view["name"], lang, width)]
    lines += ["", *_heading(label("task", lang), "-"), *task_text(view["task"], lang, width)]
    if view.get("below_task"):
        lines += ["", blocks_text(view["below_task"], view["name"], lang, width)]
    return "\n".join(lines).rstrip() + "\n"
