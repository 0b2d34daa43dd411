"""The course as Jupyter notebooks, one per part of the path (``seqlab learn notebook``).

A part's notebook holds, in order: a cell that installs seqlab with pip from its git repository
(``SEQLAB_GIT`` at its top, for a teacher to change; by default the Repository of pyproject.toml's
[project.urls], never a local path; Colab has no seqlab), the imports, then for
each step its lesson as Markdown (figures as attachments, drawn by ``seqlab.learn.figures``; the
questions' worked answers and a Trace step's worked numbers folded in ``<details>``), the widget as
a ``widget(...)`` cell (a Trace step's after its question), and its task: an exercise's stub as a
code cell and a ``check(...)`` cell, a Trace question as a ``!seqlab learn answer`` cell, a card's
answer cell (``card(...)``, the worked answer once the student has written one) and mark cell
(``mark(...)``: "Run All" passes no card), a command step's
``!seqlab ...`` cell and its ``!seqlab learn check STEP`` cell. The notebook is plain nbformat 4 JSON; nothing here imports Jupyter.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from seqlab.atomic import atomic_write_text
from seqlab.learn.path import PART_BY_ID, PARTS
from seqlab.learn.views import plain, step_view
from seqlab.learn.words import say

def _l(key: str, lang: str, **values) -> str:
    return say(f"notebooks.{key}", lang, **values)


PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"


def repository_url() -> str:
    """The URL the install cell installs from by default: the "Repository" of ``[project.urls]`` in the
    pyproject.toml of the source tree seqlab runs from, else of the installed package's metadata,
    else "" (the cell then asks for one). Never a local path: a notebook travels to other machines."""
    import tomllib
    try:
        with open(PYPROJECT, "rb") as f:
            url = tomllib.load(f).get("project", {}).get("urls", {}).get("Repository", "")
        if url:
            return url
    except (OSError, tomllib.TOMLDecodeError):
        pass
    try:
        from importlib.metadata import PackageNotFoundError, metadata
        for entry in metadata("seqlab").get_all("Project-URL") or []:
            label, _, url = entry.partition(",")
            if label.strip().lower() == "repository":
                return url.strip()
    except PackageNotFoundError:
        pass
    return ""


def check_url(url: str) -> str:
    """``url`` when pip can install from it on another machine (https://, http://, ssh://, git@...);
    ValueError for a local path."""
    if not url.startswith(("https://", "http://", "ssh://", "git@", "git://")):
        raise ValueError(f"the install cell installs seqlab from a repository URL (https://...), not {url!r}: "
                         "a notebook travels to machines that do not have this path")
    return url


INSTALL = '''{comment}
SEQLAB_GIT = {url!r}

import importlib.util, subprocess, sys
if importlib.util.find_spec("seqlab") is None:
    if not SEQLAB_GIT:
        raise RuntimeError("seqlab is not installed here: set SEQLAB_GIT to the git URL of seqlab")
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "git+" + SEQLAB_GIT], check=True)'''
IMPORTS = "from seqlab.learn import check\nfrom seqlab.learn.cards import card, mark\nfrom seqlab.explorer.notebook import widget"


# --- Markdown --------------------------------------------------------------------------------------------
def _table(block: dict) -> str:
    rows = ([block["header"], ["---"] * len(block["header"])] if block["header"] else []) + block["rows"]
    return "\n".join("| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in rows)


class _Cells:
    """Cells being built: Markdown runs until a code cell interrupts them."""

    def __init__(self):
        self.cells: list[dict] = []
        self.text: list[str] = []
        self.attachments: dict[str, dict] = {}

    def md(self, text: str) -> None:
        self.text.append(text)

    def flush(self) -> None:
        if self.text:
            cell = {"cell_type": "markdown", "metadata": {}, "source": "\n\n".join(self.text)}
            if self.attachments:
                cell["attachments"] = self.attachments
            self.cells.append(cell)
        self.text, self.attachments = [], {}

    def code(self, source: str) -> None:
        self.flush()
        self.cells.append({"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [],
                           "source": source})


def _markdown(blocks: list[dict], cells: _Cells, lang: str) -> None:
    for b in blocks:
        kind = b["type"]
        if kind == "paragraph":
            cells.md(b["text"])
        elif kind == "heading":
            cells.md(f"#### {b['text']}")
        elif kind == "list":
            cells.md("\n".join((f"{k}. " if b["ordered"] else "- ") + item for k, item in enumerate(b["items"], 1)))
        elif kind == "code":
            cells.md(f"```\n{b['text']}\n```")
        elif kind == "table":
            cells.md(_table(b))
        elif kind == "figure":
            name = f"{b['name']}.svg"
            cells.attachments[name] = {"image/svg+xml": b["svg"]}
            cells.md(f"![{plain(b['caption'])}](attachment:{name})\n\n*{b['caption']}*")
        elif kind == "widget":
            cells.code(f'widget("{b["anchor"]}"' + (', lang="zh")' if lang == "zh" else ")"))
        elif kind == "question":
            label = say(f"notebook_kinds.{b['kind']}", lang)
            cells.md(f"**{label}** (`{b['id']}`)")
            _markdown(b["blocks"], cells, lang)
            cells.md(f"<details><summary>{_l('answer', lang)}</summary>")
            _markdown(b.get("answer", []), cells, lang)
            cells.md("</details>")
        elif kind == "mistake":
            cells.md(f"<a id=\"{b['anchor']}\"></a>**{_l('mistake', lang)}: {b['title']}**")
            _markdown(b["blocks"], cells, lang)
        elif kind == "fold":                    # the less common mistakes, closed until clicked
            cells.md(f"<details><summary>{b['title']}</summary>")
            _markdown(b["blocks"], cells, lang)
            cells.md("</details>")
        elif kind == "reveal":              # a Trace step's worked numbers: folded until answered
            cells.md(f"<details><summary>{_l('reveal', lang)}</summary>")
            _markdown(b.get("blocks", []), cells, lang)
            cells.md("</details>")


def _task(task: dict, cells: _Cells, lang: str) -> None:
    from seqlab.learn.catalog import exercise
    from seqlab.learn.workspace import stub_function
    kind = task["type"]
    if kind == "implement":
        cells.md(f"### {_l('task', lang)}\n\n" + _l("implement", lang, signature=task["signature"]))
        cells.code(stub_function(exercise(task["id"]), lang).rstrip("\n"))
        cells.code(f'check("{task["id"]}", {task["id"]}' + (', lang="zh")' if lang == "zh" else ")"))
    elif kind == "trace":
        cells.md(f"### {_l('task', lang)}\n\n**{task['title']}**: {task['question']}\n\n" + _l("trace", lang))
        cells.code(f'my_answer = "..."   # {_l("your_numbers", lang)}\n!seqlab learn answer {task["id"]} "{{my_answer}}"'
                   + (" --lang zh" if lang == "zh" else ""))
    elif kind == "card":
        label = say(f"notebook_kinds.{task['kind']}", lang)
        lang_arg = ', lang="zh"' if lang == "zh" else ""
        cells.md(f"### {_l('task', lang)}\n\n**{label}: {task['title']}**\n\n{task['question']}\n\n" + _l("card", lang))
        cells.code(f'my_answer = """..."""   # {_l("your_words", lang)}\ncard("{task["id"]}", my_answer{lang_arg})')
        cells.code(f'mark("{task["id"]}", ""{lang_arg})   # {_l("your_mark", lang)}')
    else:
        cells.md(f"### {_l('task', lang)}\n\n" + _l("command", lang))
        cells.code(f"!{task['command']}")
        cells.code(f"!{task['check_with']}" + (" --lang zh" if lang == "zh" else "") + f"   # {_l('reads_results', lang)}")
        _task(task["then"], cells, lang)


def part_notebook(part_id: str, lang: str = "en", repository: str | None = None) -> dict:
    """The notebook of one part of the path, as nbformat 4 JSON data."""
    part = PART_BY_ID[part_id]
    k = [p.id for p in PARTS].index(part_id) + 1
    cells = _Cells()
    views = [step_view(s.id, lang, show=True, svg=True, revealed=False, folded=True) for s in part.steps]
    cells.md(f"# {views[0]['part']['title']}\n\n" + _l("intro", lang, k=k, n=len(PARTS), first=views[0]["number"],
                                                        last=views[-1]["number"]))
    cells.code(INSTALL.format(comment=_l("install_comment", lang),
                              url=check_url(repository_url() if repository is None else repository)))
    cells.code(IMPORTS)
    for view in views:
        cells.md(f"## {_l('step', lang, n=view['number'], title=view['title'])}")
        for section in view["sections"]:
            if section["id"] == "hints":
                continue                    # graded hints: `seqlab learn hint`, one at a time
            cells.md(f"### {section['heading']}")
            _markdown(section["blocks"], cells, lang)
        _task(view["task"], cells, lang)
        if view["below_task"]:            # the widget computes the Trace answer: after the answer cell
            cells.md(_l("widget_after", lang))
            _markdown(view["below_task"], cells, lang)
    cells.flush()
    for n, cell in enumerate(cells.cells):
        cell["id"] = f"{part_id}-{n}"
    return {"nbformat": 4, "nbformat_minor": 5, "cells": cells.cells,
            "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
                         "language_info": {"name": "python"}, "seqlab": {"part": part_id, "lang": lang}}}


def notebook_name(part_id: str) -> str:
    return f"{[p.id for p in PARTS].index(part_id) + 1:02d}-{part_id}.ipynb"


def write_notebooks(part_ids: list[str], out: str | os.PathLike, lang: str = "en",
                    repository: str | None = None) -> list[Path]:
    """Write the notebooks of ``part_ids`` (all parts when empty) into ``out``; returns their paths."""
    from seqlab.atomic import remove_stale_temporaries
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    remove_stale_temporaries(out)
    url = check_url(repository_url() if repository is None else repository)
    written = []
    for part_id in part_ids or [p.id for p in PARTS]:
        path = out / notebook_name(part_id)
        atomic_write_text(path, json.dumps(part_notebook(part_id, lang, url), indent=1, ensure_ascii=False) + "\n")
        written.append(path)
    return written
