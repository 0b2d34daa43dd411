"""The explorer's widgets in a Jupyter notebook: ``widget("attention")``.

With ``anywidget`` installed, the widget is the explorer's own: its section of ``index.html`` and
the page's scripts (``charts.js``, ``i18n.js``, ``app.js``) run in the notebook's output, and every
request they make to ``/api/<name>`` goes through the widget's channel to this kernel, which
answers it with ``seqlab.explorer.api.run_endpoint`` (the lab code, as the server does). No server
and no network are needed, so it works in Colab too (``pip install "seqlab[notebook]"`` installs
anywidget, whose wheel ships its JupyterLab extension). Without anywidget, or for the panels over
trained runs (``w-model``, ``w-translate``, ...), :func:`widget` shows a link to the explorer at the
widget's own anchor (``seqlab explore`` serves it at http://127.0.0.1:8000/).

It lives in the explorer (above ``seqlab.learn``), which owns the widgets.
"""

from __future__ import annotations

import html
import re
from functools import cache
from typing import Any

from seqlab.explorer.server import LESSON_STATIC, STATIC_DIR

EXPLORER_URL = "http://127.0.0.1:8000/"
SCRIPTS = ("lesson.js", "charts.js", "i18n.js", "app.js")     # lesson.js: seqlab/learn/static (el)
# section id -> how app.js builds it from /api/defaults (d); the others need the server's runs
SETUPS: dict[str, str] = {
    "w-recurrence": "setupRecurrence(d.recurrence)",
    "w-charlm": "setupCharLM(d.char_lm)",
    "w-gradient": "setupGradient(d.repeated_factor, d.clipping, d.tbptt)",
    "w-lstm": "setupLSTM(d.lstm)",
    "w-gru": "setupGRU(d.gru)",
    "w-attention": "setupAttention(d.attention, d.cross_attention)",
    "w-mask": "setupMask(d.causal_mask)",
    "w-multihead": "setupMultihead(d.multihead)",
    "w-bpe": "setupBPE(d.bpe)",
    "w-selfcheck": "setupSelfCheck()",
    "w-dependency": "setupDependency(d.dependency)",
}
_API = "async function api(name, body) {"
# app.js finds its elements in the document; a widget's output may not be in the document yet when
# anywidget renders it, so in the notebook they are found in the widget's own element first
_LOOKUP = "const $ = (id) => document.getElementById(id);"


@cache
def sections() -> dict[str, str]:
    """Every widget section of index.html (id -> its HTML), and each panel id -> its section's id."""
    page = (STATIC_DIR / "index.html").read_text(encoding="utf-8")
    found = {}
    for match in re.finditer(r'<section class="widget[^"]*" id="(w-[a-z0-9-]+)">.*?</section>', page, re.S):
        found[match.group(1)] = match.group(0)
    return found


def section_of(name: str) -> str:
    """The section a widget name stands for: "attention" and "w-attention" -> "w-attention"; a panel's
    anchor ("clip-panel") -> its section ("w-gradient"). ValueError names the widgets there are."""
    known = sections()
    for candidate in (name, f"w-{name}"):
        if candidate in known:
            return candidate
    for section, text in known.items():
        if re.search(rf'\bid="{re.escape(name)}"', text):
            return section
    raise ValueError(f"no widget {name!r}; the widgets are: {', '.join(k[2:] for k in known)}")


class ExplorerLink:
    """The explorer's widget as a link (no anywidget here, or a panel over trained runs)."""

    def __init__(self, anchor: str):
        self.anchor = anchor
        self.url = f"{EXPLORER_URL}?view=widgets#{anchor}"

    def __repr__(self) -> str:
        return f"the explorer's widget #{self.anchor}: run `seqlab explore` in a terminal, then open {self.url}"

    def _repr_html_(self) -> str:
        return (f"<p>The explorer's widget <code>#{html.escape(self.anchor)}</code>: run <code>seqlab explore</code> "
                f"in a terminal, then open <a href=\"{html.escape(self.url)}\" target=\"_blank\" rel=\"noopener\">"
                f"{html.escape(self.url)}</a>.</p>")


def esm(section: str) -> str:
    """The widget's JavaScript module: the page's scripts, its section, and requests over the channel."""
    sources = {name: ((LESSON_STATIC if (LESSON_STATIC / name).is_file() else STATIC_DIR) / name).read_text(encoding="utf-8")
               for name in SCRIPTS}
    if _API not in sources["app.js"]:
        raise RuntimeError(f"app.js no longer defines {_API!r}: update seqlab.explorer.notebook")
    sources["app.js"] = sources["app.js"].replace(_API, "async function apiOverHttp(name, body) {", 1)
    if _LOOKUP not in sources["app.js"]:
        raise RuntimeError(f"app.js no longer defines {_LOOKUP!r}: update seqlab.explorer.notebook")
    sources["app.js"] = sources["app.js"].replace(
        _LOOKUP, "let root = null;\nconst $ = (id) => (root && root.querySelector('#' + CSS.escape(id))) || "
                 "document.getElementById(id);", 1)
    scripts = "\n".join(sources[name].replace('"use strict";', "") for name in SCRIPTS)
    return f"""{scripts}
// --- seqlab.explorer.notebook: the requests go to the kernel over the widget's channel ---
let channel = null;
async function api(name, body) {{ return channel(name, body); }}
const seqlabWidget = {{
  render({{ model, el }}) {{
    const waiting = new Map();
    let serial = 0;
    model.on("msg:custom", (message) => {{
      const wait = waiting.get(message.id);
      if (!wait) return;
      waiting.delete(message.id);
      if (message.error) wait.reject(apiError(message, {{ statusText: message.error }})); else wait.resolve(message.data);
    }});
    channel = (name, body) => new Promise((resolve, reject) => {{
      serial += 1;
      waiting.set(serial, {{ resolve, reject }});
      model.send({{ id: serial, name, body }});
    }});
    I18N.lang = model.get("lang");
    el.classList.add("seqlab-explorer");
    el.innerHTML = model.get("section_html");
    root = el;
    const d = model.get("defaults");
    {SETUPS[section]};
    I18N.apply(el);
    widgets.forEach((w) => w.refresh());
  }},
}};
export default seqlabWidget;
"""


def scoped_css(css: str, scope: str = ".seqlab-explorer") -> str:
    """The page's style sheet with every rule inside ``scope`` (a notebook's output must not restyle
    the notebook): ``:root``, ``html``, ``body`` and ``*`` become the scope itself; @media blocks
    are scoped within; @keyframes stay as they are."""
    css = re.sub(r"/\*.*?\*/", "", css, flags=re.S)
    out, i = [], 0
    while i < len(css):
        brace = css.find("{", i)
        if brace < 0:
            break
        head = css[i:brace].strip()
        depth, k = 1, brace + 1
        while depth and k < len(css):
            depth += {"{": 1, "}": -1}.get(css[k], 0)
            k += 1
        body = css[brace + 1:k - 1]
        if head.startswith("@media"):
            out.append(f"{head} {{{scoped_css(body, scope)}}}")
        elif head.startswith("@"):
            out.append(f"{head} {{{body}}}")
        else:
            selectors = []
            for selector in head.split(","):
                selector = selector.strip()
                root = re.match(r"^(:root|html|body)\b", selector)
                if root:
                    selectors.append(scope + selector[root.end():])
                elif selector == "*":
                    selectors += [scope, f"{scope} *"]
                else:
                    selectors.append(f"{scope} {selector}")
            out.append(f"{', '.join(selectors)} {{{body}}}")
        i = k
    return "\n".join(out)


def answer(message: dict[str, Any]) -> dict[str, Any]:
    """The kernel's reply to one request of the widget: {"id", "data"} or {"id", "error", "code", "params"}."""
    from seqlab.explorer.api import run_endpoint
    from seqlab.explorer.validation import RequestError
    reply: dict[str, Any] = {"id": message.get("id")}
    try:
        reply["data"] = run_endpoint(str(message.get("name")), message.get("body") or {})
    except KeyError:
        reply["error"] = f"unknown API endpoint {str(message.get('name'))[:60]!r}"
    except RequestError as error:
        reply.update(error.body())
    except ValueError as error:                 # the labs name the value they reject
        reply["error"] = str(error)
    return reply


def anchor_of(name: str) -> str:
    """The page's anchor for ``name``: a panel keeps its own ("clip-panel", "tb-panel"), a widget's
    short name becomes its section's ("attention" -> "w-attention")."""
    section = section_of(name)
    return name if name != section and re.search(rf'\bid="{re.escape(name)}"', sections()[section]) else section


def widget(name: str, lang: str = "en"):
    """The explorer's widget ``name`` ("attention", "w-attention", "clip-panel", ...) for a notebook cell:
    drawn inline with anywidget (``pip install "seqlab[notebook]"``), else a link to its own anchor."""
    section = section_of(name)
    if section not in SETUPS:
        return ExplorerLink(anchor_of(name))
    try:
        import anywidget
        import traitlets
    except ImportError:
        return ExplorerLink(anchor_of(name))
    from seqlab.explorer.api import widget_defaults

    class ExplorerWidget(anywidget.AnyWidget):
        _esm = esm(section)
        _css = scoped_css((STATIC_DIR / "style.css").read_text(encoding="utf-8"))
        section_html = traitlets.Unicode().tag(sync=True)
        defaults = traitlets.Dict().tag(sync=True)
        lang = traitlets.Unicode().tag(sync=True)

    shown = ExplorerWidget(section_html=sections()[section], defaults=widget_defaults(),
                           lang="zh" if lang == "zh" else "en")
    shown.on_msg(lambda w, content, buffers: w.send(answer(content)))
    return shown
