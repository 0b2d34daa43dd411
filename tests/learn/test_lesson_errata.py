"""Sentences of the lessons that were wrong once, each checked against seqlab's code (the printed
numbers are the numbers: lines, tests/learn/test_lessons.py): truncated_bptt's Extend answer, run
as the lesson prints it under every BLAS kernel this CPU has; the GRU's parameter count and its
formula; the gate orders of other libraries; the note that slide pages are the course's; and a
line with "|" in it that is prose, not a table row."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from seqlab.learn import lessons
from tests.learn.test_lesson_numbers_any_cpu import _settings

ROOT = Path(__file__).resolve().parents[2]
COURSE = ROOT / "seqlab" / "learn" / "course"

# the lesson's own code, each print() recorded: (chunk, final loss, the two hard predictions' probabilities)
_CHILD = """
import json, re, sys
source = open(sys.argv[1], encoding="utf-8").read()
code = re.search(r"```\\n(import numpy as np\\nfrom seqlab.labs import char_lm.*?)```", source, re.S).group(1)
code = code.replace("default_rng(7)", f"default_rng({int(sys.argv[2])})")
printed = []
exec(code, {"print": lambda chunk, loss, probs: printed.append([chunk, float(loss), [float(p) for p in probs]])})
print(json.dumps(printed))
"""


def _shorter_chunks(seed: int, setting: dict[str, str]) -> dict[int, tuple[float, list[float]]]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENBLAS_", "OMP_", "MKL_"))}
    env.update(setting, PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, "-c", _CHILD, str(COURSE / "truncated_bptt" / "lesson.en.md"), str(seed)],
                          env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    return {chunk: (loss, probs) for chunk, loss, probs in json.loads(done.stdout.strip().splitlines()[-1])}


@pytest.mark.parametrize(("seed", "setting"), [(7, s) for s in _settings()] + [(8, _settings()[0])],
                         ids=lambda v: v.get("OPENBLAS_CORETYPE", "one-thread") if isinstance(v, dict) else f"seed{v}")
def test_truncated_bptt_s_extend_answer_is_what_its_code_prints_on_any_cpu(seed, setting):
    """Full BPTT learns both hard predictions; chunks of 1 or 3 leave the loss tens to hundreds of times
    higher and never learn both (one of them may end nearly certain: that is chance, not a claim)."""
    runs = _shorter_chunks(seed, setting)
    assert sorted(runs) == [1, 3, 15]
    full_loss, full = runs[15]
    assert full_loss < 0.01 and min(full) > 0.99, runs
    for chunk in (1, 3):
        loss, probs = runs[chunk]
        assert loss > 20 * max(full_loss, 1e-4), runs
        assert min(probs) < 0.9, runs                   # never both hard predictions learned
    answer = " ".join(lessons.lesson("truncated_bptt", "en").text().split())
    assert "far from certain" not in answer and "never both learned" in answer


def _block_after(text: str, heading: str) -> str:
    """The first ``` block after ``heading`` in a lesson's source."""
    return re.search(r"```\n(.*?)```", text[text.index(heading):], re.S).group(1)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_gru_s_formula_has_the_two_biases_its_parameter_count_needs(lang):
    """1920 = 3 (H D + H H + 2H) at D = 10, H = 20: torch.nn.GRUCell's count and the lab's. Each map of
    the formula shows both of its biases (one bias per map would be 1860)."""
    torch = pytest.importorskip("torch")
    from seqlab.labs import gru
    assert gru.gru_parameter_count(10, 20) == sum(p.numel() for p in torch.nn.GRUCell(10, 20).parameters()) == 1920
    assert 3 * (20 * 10 + 20 * 20 + 20) == 1860
    source = (COURSE / "trace_gru_mix" / f"lesson.{lang}.md").read_text(encoding="utf-8")
    formula = _block_after(source, "{#maths}")
    for gate in ("r", "z", "n"):
        line = next(row for row in formula.splitlines() if row.startswith(f"{gate} = "))
        assert f"b_x{gate}" in line and f"b_h{gate}" in line, line
    assert "1920" in source and "3 · (200 + 400 + 40)" in source


def test_the_gate_orders_named_are_the_libraries_own():
    """The igfo mistake is TensorFlow 1's LSTMCell / BasicLSTMCell split (i, j, f, o: j the candidate);
    Keras's LSTM splits i, f, c, o, the order of PyTorch and of the exercise. Each cell is written here
    as the library's source computes it (forget_bias 0), on the exercise's stacked maps."""
    import numpy as np

    from seqlab.learn.catalog import mutant, reference
    sigmoid = lambda a: 1 / (1 + np.exp(-a))
    rng = np.random.default_rng(3)
    D, H = 3, 4
    params = {"Wx": rng.normal(size=(4 * H, D)), "Wh": rng.normal(size=(4 * H, H)), "bx": rng.normal(size=4 * H),
              "bh": rng.normal(size=4 * H)}
    x, h, c = rng.normal(size=D), rng.normal(size=H), rng.normal(size=H)
    gates = params["Wx"] @ x + params["bx"] + params["Wh"] @ h + params["bh"]

    def tf1(a):                               # rnn_cell_impl: i, j, f, o = split(gate_inputs, 4)
        i, j, f, o = np.split(a, 4)
        new_c = c * sigmoid(f) + sigmoid(i) * np.tanh(j)
        return np.tanh(new_c) * sigmoid(o), new_c

    def keras(a):                             # keras LSTMCell: z0, z1, z2, z3 = split(z, 4) as i, f, c, o
        z0, z1, z2, z3 = np.split(a, 4)
        new_c = sigmoid(z1) * c + sigmoid(z0) * np.tanh(z2)
        return sigmoid(z3) * np.tanh(new_c), new_c

    ours = reference("lstm_cell_forward")(params, x, h, c)
    theirs = mutant("lstm_cell_forward", "gate_order_igfo")(params, x, h, c)
    for got, want in ((theirs, tf1(gates)), (ours, keras(gates))):
        assert np.allclose(got[0], want[0]) and np.allclose(got[1], want[1])
    assert not np.allclose(ours[0], theirs[0])
    words = (COURSE / "lstm_cell_forward" / "step.toml").read_text(encoding="utf-8")
    block = words[words.index("[mistakes.gate_order_igfo]"):].split("\n[", 1)[0]
    assert "TensorFlow's" not in block and block.count("TensorFlow 1") >= 6 and "Keras" in block


PAGES = {"en": re.compile(r"\bpp?\. \d"), "zh": re.compile(r"第 \d+(–\d+)? 页")}
NOT_INCLUDED = {"en": "lecture slides (not included with seqlab)", "zh": "讲义幻灯片（不随 seqlab 提供）"}


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_every_lesson_that_cites_slide_pages_says_the_slides_are_not_seqlab_s(lang):
    """Page numbers are the course's lecture slides, which seqlab does not ship: each lesson that cites
    them says so once, in its reading section, and cites pages nowhere else; docs/learn.md says it too."""
    from seqlab.learn.path import STEPS
    citing = 0
    for step in STEPS:
        if not lessons.has_lesson(step.id, lang):
            continue
        lesson = lessons.lesson(step.id, lang)
        for section in lesson.sections:
            text = "\n".join(p for b in section.blocks for p in (b.text, *b.items) if p)
            if section.id != "reading":
                assert not PAGES[lang].search(text), (step.id, section.id)
            elif PAGES[lang].search(text):
                citing += 1
                assert " ".join(text.split()).count(NOT_INCLUDED[lang]) == 1, (step.id, text)
                assert "Lecture slides," not in text and "课程讲义第" not in text, step.id
    assert citing == 41
    docs = " ".join((ROOT / "docs" / "learn.md").read_text(encoding="utf-8").split())
    assert "the slides are not included with seqlab" in docs


def test_a_line_that_starts_with_a_bar_is_prose_unless_a_separator_row_follows():
    """Markdown's table is a header row and a separator row (| --- |): "|g_j| > τ" opening a line of a
    paragraph is the paragraph's, as a Markdown reader sees it, not a table of one garbled row."""
    blocks = lessons.body_blocks("The rule acts when some\n|g_j| > τ, for one j.\n\n| a | b |\n| --- | ---: |\n| 1 | 2 |")
    assert [b.kind for b in blocks] == ["paragraph", "table"]
    assert blocks[0].text == "The rule acts when some |g_j| > τ, for one j."
    assert blocks[1].text == "| a | b |\n| --- | ---: |\n| 1 | 2 |"
    assert [b.kind for b in lessons.body_blocks("|x| > 1\n| --- |")] == ["table"]


@pytest.mark.parametrize(("step", "lang", "line"), [("explain_clipping", "en", "when some |g_j| > τ. Since"),
                                                    ("explain_clipping", "zh", "在某个 |g_j| > τ 时起作用"),
                                                    ("trace_vanishing", "zh", "|a| > 1 时乘积可能增长")])
def test_the_terminal_prints_a_bar_formula_inside_its_sentence(capsys, tmp_path, step, lang, line):
    from seqlab.cli import main
    assert main(["learn", "show", step, "--show", "--lang", lang, "--workspace", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert line in " ".join(out.split()) or line in out.replace("\n", ""), out
    assert not re.search(r"^\s*g_j \|", out, re.M)                      # the old table row's cell
    for lesson in (lessons.lesson(step, lang),):
        for table in lesson.blocks("table"):
            assert table.text.splitlines()[1].startswith("| -"), table.text
