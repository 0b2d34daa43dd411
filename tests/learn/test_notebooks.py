"""`seqlab learn notebook`: one notebook per part of the path, and `check()` from a notebook. One
notebook runs in a real kernel (nbclient, ipykernel): its stubs' check cells say "not implemented",
a function filled in correctly passes, a mutant gets its diagnosis, and the progress is the CLI's."""

from __future__ import annotations

import json
import re
import os
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from seqlab.cli import main
from seqlab.learn import lessons
from seqlab.learn.catalog import exercise
from seqlab.learn.checking import check, source_file
from seqlab.learn.path import PARTS, STEP_BY_ID
from seqlab.learn.questions import QUESTION_BY_ID
from seqlab.learn.workspace import read_progress

ROOT = Path(__file__).resolve().parents[2]
REPO = "https://example.org/course/seqlab.git"

# written here, independently of the labs: the recurrence as a loop, and rnn_step with Wh transposed
RIGHT_RECURRENCE = '''import math
import numpy as np


def scalar_recurrence(a, xs, h0=0.0):
    h, states = float(h0), []
    for x in xs:
        h = math.tanh(a * h + float(x))
        states.append(h)
    return np.array(states)'''
TRANSPOSED_STEP = '''import numpy as np


def rnn_step(params, x, h_prev):
    return np.tanh(np.einsum("ji,j->i", params["Wh"], h_prev) + params["Wx"] @ x + params["b"])'''


def _source(cell) -> str:
    return cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])


def _text(cell) -> str:
    parts = []
    for out in cell.get("outputs", []):
        parts.append(out.get("text", ""))
        for kind in ("text/plain", "text/html"):
            value = out.get("data", {}).get(kind, "")
            parts.append(value if isinstance(value, str) else "".join(value))
    return "\n".join(parts)


@pytest.fixture(scope="module")
def notebooks(tmp_path_factory):
    out = tmp_path_factory.mktemp("notebooks")
    assert main(["learn", "notebook", "--out", str(out), "--repo", REPO]) == 0
    return out


def test_one_valid_notebook_per_part_with_its_install_cell_first(notebooks, capsys):
    import nbformat
    paths = sorted(notebooks.glob("*.ipynb"))
    assert [p.name for p in paths] == [f"{k:02d}-{p.id}.ipynb" for k, p in enumerate(PARTS, 1)]
    for path, part in zip(paths, PARTS):
        nb = nbformat.read(path, as_version=4)
        nbformat.validate(nb)
        code = [_source(c) for c in nb.cells if c.cell_type == "code"]
        assert code[0].splitlines()[2] == f"SEQLAB_GIT = {REPO!r}"        # named at the top, for a teacher
        assert "pip" in code[0] and code[1] == ("from seqlab.learn import check\nfrom seqlab.learn.cards import card, mark\n"
                                             "from seqlab.explorer.notebook import widget")
        for step in part.steps:
            if step.kind == "implement":
                ex = exercise(step.id)
                assert any(f"def {ex.signature}:" in c and "raise NotImplementedError" in c for c in code), step.id
                assert f'check("{step.id}", {step.id})' in code
            elif step.kind == "trace":
                assert any(f"!seqlab learn answer {step.id} " in c for c in code)
            elif step.kind == "command":
                at = code.index(f"!{step.command}")
                assert code[at + 1].startswith(f"!seqlab learn check {step.id}")
    assert main(["learn", "notebook", "--list"]) == 0
    assert capsys.readouterr().out.splitlines()[0].startswith("recurrence ")
    assert main(["learn", "notebook", "nowhere", "--out", str(notebooks)]) == 2


def test_the_lesson_is_markdown_with_its_figures_and_folded_answers(notebooks):
    nb = json.loads((notebooks / "01-recurrence.ipynb").read_text(encoding="utf-8"))
    markdown = "\n".join(_source(c) for c in nb["cells"] if c["cell_type"] == "markdown")
    ls = lessons.lesson("trace_recurrence", "en")
    assert f"## Step 1: {ls.title}" in markdown
    assert all(f"### {s.heading}" in markdown for s in ls.sections if s.id != "hints")
    for q in ls.questions:                                    # asked, the worked answer folded away
        assert q.text.splitlines()[0] in markdown
        answer_at, details_at = markdown.index(q.answer.splitlines()[0]), markdown.rindex("<details>", 0,
                                                                                          markdown.index(q.answer.splitlines()[0]))
        assert markdown.index(q.text.splitlines()[0]) < details_at < answer_at
    attachments = {name: data for c in nb["cells"] for name, data in c.get("attachments", {}).items()}
    for f in ls.figures:
        assert f"(attachment:{f.name}.svg)" in markdown
        assert ET.fromstring(attachments[f"{f.name}.svg"]["image/svg+xml"]).tag.endswith("svg")
    code = [_source(c) for c in nb["cells"]]
    # the step's own question before its worked numbers, which are folded, and before its widget
    asked = next(k for k, c in enumerate(code) if "!seqlab learn answer trace_recurrence" in c)
    assert code.index('widget("w-recurrence")') > asked
    table = "| 3 | 0.5 · 0.363399 − 1 | −0.674144 |"
    at = next(k for k, c in enumerate(code) if table in c)
    assert at < asked and code[at].rindex("<details>", 0, code[at].index(table)) > code[at].rfind("</details>", 0,
                                                                                                    code[at].index(table))


def test_a_notebook_function_reaches_the_checker_by_its_source(tmp_path, monkeypatch):
    from IPython.core.interactiveshell import InteractiveShell
    shell = InteractiveShell.instance()
    monkeypatch.chdir(tmp_path)
    for cell in ["from seqlab.learn import check\nimport numpy as np\nimport math\nSCALE = 1.0\n\ndef squash(v):\n    return math.tanh(SCALE * v)",
                 "def mine(a, xs, h0=0.0):\n    h, out = h0, []\n    for x in xs:\n        h = squash(a * h + x)\n"
                 "        out.append(h)\n    return np.array(out)",
                 "report = check('scalar_recurrence', mine, workspace='ws')"]:
        assert shell.run_cell(cell).success
    report = shell.user_ns["report"]
    assert report.passed and "passed." in str(report) and "PASS" in report._repr_html_()
    written = (tmp_path / "ws" / "scalar_recurrence.py").read_text()
    assert "def squash(v):" in written and "SCALE = 1.0" in written and "scalar_recurrence = mine" in written
    assert read_progress(tmp_path / "ws")["steps"]["scalar_recurrence"]["state"] == "passed"
    # a file works too; a function of a module is imported from it; a misspelt name is named
    assert check("scalar_recurrence", tmp_path / "ws" / "scalar_recurrence.py", workspace=tmp_path / "ws2").passed
    from seqlab.labs.recurrence import scalar_recurrence
    assert source_file("scalar_recurrence", scalar_recurrence).endswith("from seqlab.labs.recurrence import scalar_recurrence\n")
    with pytest.raises(ValueError, match="did you mean 'scalar_recurrence'"):
        check("scalar_recurence", shell.user_ns["mine"])


def test_the_recurrence_notebook_runs_in_a_kernel(notebooks, tmp_path):
    import nbformat
    from nbclient import NotebookClient
    nb = nbformat.read(notebooks / "01-recurrence.ipynb", as_version=4)
    cells = {_source(c): c for c in nb.cells if c.cell_type == "code"}
    stub = lambda name: next(c for s, c in cells.items() if f"def {exercise(name).signature}:" in s)  # noqa: E731
    stub("scalar_recurrence").source = RIGHT_RECURRENCE
    stub("rnn_step").source = TRANSPOSED_STEP
    answer = next(c for s, c in cells.items() if "!seqlab learn answer trace_recurrence" in s)
    clipping = next(c for s, c in cells.items() if 'card("explain_clipping"' in s)
    clipping.source = clipping.source.replace('"""..."""', '"""one factor for every entry keeps the direction; '
                                              'clamping each entry turns it"""')
    marked = next(c for s, c in cells.items() if 'mark("explain_clipping", "")' in s)
    marked.source = marked.source.replace('mark("explain_clipping", "")', 'mark("explain_clipping", "same")')
    answer.source = answer.source.replace('"..."', f'"{QUESTION_BY_ID["trace_recurrence"].answer()[0]:.4f}"')
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    NotebookClient(nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute(env=env)

    checks = {c.source.split('"')[1]: _text(c) for c in nb.cells if c.cell_type == "code" and c.source.startswith("check(")}
    implement = [s.id for s in PARTS[0].steps if s.kind == "implement"]
    assert sorted(checks) == sorted(implement)
    assert "passed." in checks["scalar_recurrence"] and "FAIL" not in checks["scalar_recurrence"]
    transposed = next(m for m in exercise("rnn_step").mistakes if "transpose" in m.id)
    assert "diagnosis: " in checks["rnn_step"] and transposed.title in checks["rnn_step"]
    for name in set(implement) - {"scalar_recurrence", "rnn_step"}:
        assert "not implemented yet" in checks[name] and "not yet." in checks[name], name
    assert "right." in _text(answer)
    widget = next(c for c in nb.cells if c.cell_type == "code" and c.source == 'widget("w-recurrence")')
    import importlib.util
    if importlib.util.find_spec("anywidget"):          # seqlab[notebook]: the widget itself, drawn by the front end
        assert any("application/vnd.jupyter.widget-view+json" in out.get("data", {}) for out in widget.outputs)
    else:                                               # else the link to the explorer, at the widget's anchor
        assert "seqlab explore" in _text(widget) and "#w-recurrence" in _text(widget)
    # the CLI's workspace and progress
    progress = read_progress(tmp_path / "seqlab-learn")["steps"]
    assert progress["scalar_recurrence"]["state"] == "passed" and progress["rnn_step"]["state"] == "started"
    assert progress["trace_recurrence"]["state"] == "passed"
    assert "def scalar_recurrence" in (tmp_path / "seqlab-learn" / "scalar_recurrence.py").read_text()
    # "Run All" passes no card: its answer cell holds the placeholder, its mark cell no mark
    assert STEP_BY_ID["explain_order"].kind == "card" and progress.get("explain_order", {}).get("state") != "passed"
    order = next(c for c in nb.cells if c.cell_type == "code" and c.source.startswith('my_answer = """..."""')
                 and 'card("explain_order"' in c.source)
    assert "Write your answer first" in _text(order) and "Worked answer" not in _text(order)
    # a card written and marked "same" passes
    assert progress["explain_clipping"]["state"] == "passed" and progress["explain_clipping"]["mark"] == "same"
    written = next(c for c in nb.cells if c.cell_type == "code" and 'card("explain_clipping"' in c.source)
    assert "Worked answer" in _text(written)


def test_check_refuses_a_lambda_and_an_unreadable_function_before_writing(tmp_path):
    import functools
    ws = tmp_path / "ws"
    ws.mkdir()
    mine = ws / "rnn_step.py"
    mine.write_text("# my passing version\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"was given a lambda: define it with def in a cell \(def rnn_step"):
        check("rnn_step", lambda params, x, h_prev: h_prev, workspace=ws)
    namespace: dict = {}
    exec("def rnn_step(params, x, h_prev):\n    return h_prev\n", namespace)     # no source to read
    with pytest.raises(ValueError, match="cannot read the source of 'rnn_step'"):
        check("rnn_step", namespace["rnn_step"], workspace=ws)
    with pytest.raises(ValueError, match="needs a function defined with def"):
        check("rnn_step", functools.partial(max, 0), workspace=ws)
    assert mine.read_text(encoding="utf-8") == "# my passing version\n"          # untouched
    assert sorted(p.name for p in ws.iterdir()) == ["rnn_step.py"]                # and no backup needed


def test_check_keeps_a_different_file_as_a_timed_backup(tmp_path, monkeypatch):
    from IPython.core.interactiveshell import InteractiveShell
    shell = InteractiveShell.instance()
    monkeypatch.chdir(tmp_path)
    ws = tmp_path / "ws"
    ws.mkdir()
    passing = RIGHT_RECURRENCE + "\n"
    (ws / "scalar_recurrence.py").write_text(passing, encoding="utf-8")
    assert check("scalar_recurrence", ws / "scalar_recurrence.py", workspace=ws).passed
    for cell in ["import numpy as np\n\ndef wrong(a, xs, h0=0.0):\n    return np.zeros(len(xs))",
                 "report = __import__('seqlab.learn', fromlist=['check']).check('scalar_recurrence', wrong, workspace='ws')"]:
        assert shell.run_cell(cell).success
    assert not shell.user_ns["report"].passed
    backups = sorted(ws.glob("scalar_recurrence.py.*.bak"))
    assert len(backups) == 1 and backups[0].read_text(encoding="utf-8") == passing       # the passing file, kept
    assert re.fullmatch(r"scalar_recurrence\.py\.\d{8}-\d{6}(-\d+)?\.bak", backups[0].name)
    # the same source again writes nothing new; another version keeps another backup
    assert shell.run_cell("report = __import__('seqlab.learn', fromlist=['check']).check('scalar_recurrence', wrong, "
                          "workspace='ws')").success
    assert len(list(ws.glob("scalar_recurrence.py.*.bak"))) == 1


def test_the_install_cell_installs_from_pyproject_s_repository_never_a_local_path(tmp_path, capsys):
    import tomllib

    from seqlab.learn.notebooks import part_notebook, repository_url
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["urls"]["Repository"]
    assert repository_url() == declared and declared.startswith("https://")
    first = part_notebook("recurrence", "en")["cells"][1]["source"]
    assert f"SEQLAB_GIT = {declared!r}" in first and str(ROOT) not in first
    for local in (str(ROOT), "file:///srv/seqlab", "./seqlab"):
        assert main(["learn", "notebook", "--out", str(tmp_path / "nb"), "--repo", local]) == 2
        assert "a notebook travels to machines that do not have this path" in capsys.readouterr().err
    assert not (tmp_path / "nb").exists() or not list((tmp_path / "nb").glob("*.ipynb"))


def test_a_chinese_notebook_speaks_chinese_in_its_frame_and_its_checks(tmp_path):
    from seqlab.learn.notebooks import part_notebook
    nb = part_notebook("recurrence", "zh", "https://example.org/seqlab.git")
    code = [c["source"] for c in nb["cells"] if c["cell_type"] == "code"]
    assert code[0].startswith("# Colab 或任何没有 seqlab 的 Jupyter")
    assert 'check("rnn_step", rnn_step, lang="zh")' in code and 'widget("w-recurrence", lang="zh")' in code
    assert any(c.startswith("my_answer") and c.endswith('"{my_answer}" --lang zh') for c in code)
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "mine.py").write_text(RIGHT_RECURRENCE.replace("math.tanh(a * h + float(x))", "a * h + float(x)"),
                                encoding="utf-8")
    report = check("scalar_recurrence", ws / "mine.py", workspace=ws, lang="zh")
    text, page = str(report), report._repr_html_()
    assert not report.passed and text.endswith("还没有通过。") and "诊断：" in text
    assert "诊断：" in page and "还没有通过。" in page and "not yet" not in page and "Diagnosis" not in page
    assert report.title == exercise("scalar_recurrence").title_zh
