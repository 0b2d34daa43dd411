"""The course as a static site (``seqlab learn site --out DIR``), in English and Chinese, to host anywhere.

    DIR/index.html                 the two languages
    DIR/LANG/index.html            the path: the parts and their steps
    DIR/LANG/STEP.html             a step: its lesson and its task; a mistake at #mistake-ID
    DIR/figures/NAME.LANG.svg      the lessons' figures
    DIR/assets/                    lesson.js and lesson.css (the renderer the explorer's course page
                                   uses too), site.js (the page: the task, the widgets' commands)

Each step page holds its view (``seqlab.learn.views.step_view``, folded: what waits for the Trace
answer, the questions' answers and the task's solution are in the page, behind a click) as JSON,
which lesson.js renders, so the site and the explorer show a lesson alike. A widget becomes the
command that shows it (``seqlab explore``, or ``widget(...)`` in a notebook): the site links to no
local server. The folder is built beside DIR and swapped in whole.
"""

from __future__ import annotations

import html
import json
import os
from pathlib import Path

from seqlab.learn.words import say

STATIC = Path(__file__).resolve().parent / "static"
ASSETS = ("lesson.js", "lesson.css", "site.js", "site.css")
LANGS = ("en", "zh")
# what an existing --out folder may hold for the site to replace it: the site's own files
SITE_FILES = ("index.html", "en", "zh", "figures", "assets")


def _w(key: str, lang: str, **values) -> str:
    return say(f"site.{key}", lang, **values)


def _json_for_html(data) -> str:
    """JSON inside a <script> element: "</" cannot close it."""
    return json.dumps(data, ensure_ascii=False).replace("</", "<\\/")


def _words(lang: str) -> dict[str, str]:
    """The words site.js and lesson.js say, in ``lang``."""
    from seqlab.learn.words import table
    words = {key: say(f"site.{key}", lang) for key in table()["site"]}
    words.update({f"qkind.{k}": say(f"kinds.{k}", lang) for k in ("predict", "explain", "derive", "trace", "extend")})
    words.update({f"kind.{k}": say(f"kinds.{k}", lang) for k in ("implement", "trace", "card", "command")})
    return words


def _page(lang: str, title: str, body: str, depth: int = 1, head: str = "") -> str:
    up = "../" * depth
    return (f'<!doctype html>\n<html lang="{"zh-Hans" if lang == "zh" else "en"}">\n<head>\n<meta charset="utf-8">\n'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">\n<title>{html.escape(title)}</title>\n'
            f'<link rel="stylesheet" href="{up}assets/site.css">\n<link rel="stylesheet" href="{up}assets/lesson.css">\n'
            f"{head}</head>\n<body class=\"seqlab-site\">\n{body}\n</body>\n</html>\n")


def _nav(lang: str, open_step: str | None) -> str:
    from seqlab.learn.path import PARTS, STEPS
    k = 1 if lang == "zh" else 0
    parts = []
    for part in PARTS:
        items = "".join(
            f'<li><a href="{s.id}.html" class="course-step{" open" if s.id == open_step else ""}" id="course-step-{s.id}">'
            f'<span class="course-num">{STEPS.index(s) + 1}</span> <span class="course-name">{html.escape(s.title[k])}</span></a></li>'
            for s in part.steps)
        parts.append(f'<div class="course-part"><h3>{html.escape(part.title[k])}</h3><ol class="course-steps">{items}</ol></div>')
    return f'<nav class="course-path" id="course-path">{"".join(parts)}</nav>'


def _header(lang: str, page: str) -> str:
    other = "zh" if lang == "en" else "en"
    return (f'<header class="site-top"><a class="site-home" href="index.html">{html.escape(_w("title", lang))}</a>'
            f'<a class="site-lang" id="site-lang" href="../{other}/{page}" hreflang="{other}">'
            f'{html.escape(_w("other_lang", lang))}</a></header>')


def _figure_files(view: dict, lang: str, figures: dict[str, str]) -> None:
    """Each figure block of ``view`` points at its file (figures/NAME.LANG.svg) instead of holding it."""
    def walk(blocks):
        for b in blocks:
            if b["type"] == "figure":
                figures[f"{b['name']}.{lang}.svg"] = b.pop("svg")
                b["src"] = f"../figures/{b['name']}.{lang}.svg"
            walk(b.get("blocks", []))
            walk(b.get("answer", []) if isinstance(b.get("answer"), list) else [])
    for section in view["sections"]:
        walk(section["blocks"])
    walk(view.get("below_task", []))
    view["figures"] = [{k: f[k] for k in ("name", "caption")} for f in view["figures"]]


def step_page(step_id: str, lang: str, figures: dict[str, str]) -> str:
    """The HTML of one step's page (its figures go into ``figures``: file name -> SVG)."""
    from seqlab.learn.views import step_view
    view = step_view(step_id, lang, show=True, svg=True, revealed=False, folded=True)
    _figure_files(view, lang, figures)
    for section in view["sections"]:
        section.pop("text", None)
    data = {"view": view, "words": _words(lang)}
    body = (f'{_header(lang, step_id + ".html")}\n<div class="course-cols">{_nav(lang, step_id)}'
            f'<article class="course-lesson" id="course-lesson" data-step="{step_id}">'
            f'<noscript><p>{html.escape(_w("noscript", lang))}</p></noscript></article></div>\n'
            f'<script type="application/json" id="lesson-data">{_json_for_html(data)}</script>\n'
            f'<script src="../assets/lesson.js"></script>\n<script src="../assets/site.js"></script>')
    return _page(lang, f"{view['title']} · {_w('title', lang)}", body)


def index_page(lang: str) -> str:
    body = (f"{_header(lang, 'index.html')}\n<main class=\"site-index\"><h1>{html.escape(_w('title', lang))}</h1>"
            f"<p>{html.escape(_w('intro', lang))}</p>{_nav(lang, None)}</main>")
    return _page(lang, _w("title", lang), body)


def root_page() -> str:
    links = "".join(f'<li><a href="{lang}/index.html" hreflang="{lang}">{html.escape(_w("title", lang))}</a></li>'
                    for lang in LANGS)
    return _page("en", _w("title", "en"), f'<main class="site-index"><ul>{links}</ul></main>', depth=0)


def write_site(out: str | os.PathLike) -> list[Path]:
    """Write the course (the one this process follows) as a static site into ``out``; returns the
    step pages written. ``out`` is replaced whole; an existing folder may hold only a site's files."""
    from seqlab.atomic import atomic_directory, remove_stale_temporaries
    from seqlab.learn.path import STEPS
    out = Path(out)
    if out.parent.is_dir():
        remove_stale_temporaries(out.parent)
    pages: list[Path] = []
    with atomic_directory(out, replaceable=SITE_FILES) as tmp:
        (tmp / "assets").mkdir()
        for name in ASSETS:
            (tmp / "assets" / name).write_bytes((STATIC / name).read_bytes())
        figures: dict[str, str] = {}
        (tmp / "index.html").write_text(root_page(), encoding="utf-8")
        for lang in LANGS:
            (tmp / lang).mkdir()
            (tmp / lang / "index.html").write_text(index_page(lang), encoding="utf-8")
            for step in STEPS:
                (tmp / lang / f"{step.id}.html").write_text(step_page(step.id, lang, figures), encoding="utf-8")
                pages.append(out / lang / f"{step.id}.html")
        (tmp / "figures").mkdir()
        for name, svg in sorted(figures.items()):
            (tmp / "figures" / name).write_text(svg, encoding="utf-8")
    return pages
