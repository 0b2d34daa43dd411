"""The student's flow under --lang zh says no English sentence: seqlab learn, show, start, hint, check on a
wrong and a right file, answer on a Trace step. Code, identifiers, numbers, file paths, commands, quoted
titles and what the student's own code printed may stay as they are; three English words in a row may not."""

from __future__ import annotations

import math
import re

import pytest

from seqlab.cli import main
from tests.learn.students import write_student

# what may stay as it is: `code`, "quoted titles", “quoted”, commands, paths and addresses, identifiers,
# formulas and the authors of a citation
_KEPT = [re.compile(p) for p in (
    r"`[^`]*`", r'"[^"]*"', r"“[^”]*”", r"seqlab learn[^，。；：）\n]*", r"python -m pytest[^，。；：）\n]*",
    r"https?://\S+", r"\S*/\S*", r"\S+\.py\b", r"\b\w*_\w*\b", r"\b\w+\([^()]*\)",
    r"(?m)^ *[A-Za-z_']+ *= .*$",           # a formula's line in a maths block: visible = mask AND causal
    r"\b[A-Z][a-z]+ et al\.",               # a citation's authors: Vaswani et al.
)]
_SENTENCE = re.compile(r"\b[A-Za-z]{2,}(?: [A-Za-z]{2,}){2,}\b")


def english_sentences(text: str) -> list[str]:
    """Runs of three or more English words in ``text`` once code, titles, commands and names are set aside."""
    for kept in _KEPT:
        text = kept.sub(" ", text)
    return _SENTENCE.findall(text)


def test_the_detector_finds_an_english_line_added_to_a_chinese_message():
    said = "  诊断：Wh 被转置了\n    课程的约定是 Wh @ h_prev（Wh 的每一行产生新隐藏状态的一个分量），不是 Wh.T @ h_prev\n"
    assert english_sentences(said) == []
    mutant = said + "    every checked value is what this mistake gives\n"
    assert english_sentences(mutant) == ["every checked value is what this mistake gives"]
    assert english_sentences("运行：seqlab learn check rnn_step --lang zh，见 `np.tanh(z)` 与 seqlab-learn/rnn_step.py") == []
    assert english_sentences("    visible = mask AND causal      mask: 布尔 (n, m)\n  - Vaswani et al. (2017)，“Attention Is All You Need”") == []
    assert english_sentences("  只有两者都允许时 the key is visible，键才可见") == ["the key is visible"]


WRONG = "import numpy as np\n\n\ndef rnn_step(params, x, h_prev):\n    return np.tanh(params['Wh'].T @ h_prev + params['Wx'] @ x + params['b'])\n"
RIGHT = "import numpy as np\n\n\ndef rnn_step(params, x, h_prev):\n    return np.tanh(params['Wh'] @ h_prev + params['Wx'] @ x + params['b'])\n"


@pytest.fixture
def flow(tmp_path, capsys):
    ws = tmp_path / "ws"
    said: dict[str, str] = {}

    def run(label: str, *argv: str) -> int:
        code = main(["learn", *argv, "--lang", "zh", "--workspace", str(ws)])
        out = capsys.readouterr()
        said[label] = out.out + out.err
        return code
    return ws, run, said


def test_a_student_s_flow_in_chinese_holds_no_english_sentence(flow):
    ws, run, said = flow
    assert run("path") == 0
    assert run("show", "show", "rnn_step") == 0
    assert run("start", "start", "rnn_step") == 0
    stub = (ws / "rnn_step.py").read_text(encoding="utf-8")
    said["stub (its docstring and comments)"] = "\n".join(
        line for line in stub.splitlines() if line.lstrip().startswith(("#", '"""')) or not line.startswith(
            ("import", "def ", "    raise", "    return", "    pass", "    out", "    assert")))
    assert run("hint", "hint", "rnn_step") == 0
    write_student(ws, "rnn_step", WRONG)
    assert run("check (wrong)", "check", "rnn_step") == 1
    write_student(ws, "rnn_step", RIGHT)
    assert run("check (right)", "check", "rnn_step") == 0
    run("answer (wrong)", "answer", "trace_recurrence", "-0.75")          # a known wrong answer, named
    assert run("answer (right)", "answer", "trace_recurrence", "-0.674") == 0
    assert "漏掉了 tanh" in said["answer (wrong)"]
    found = {label: english_sentences(text) for label, text in said.items()}
    assert {label: runs for label, runs in found.items() if runs} == {}, said


def test_the_attention_half_in_chinese_holds_no_english_sentence(flow):
    """The same flow on the torch half: scaled_dot_product_attention (its stub, hint, a wrong and a right
    check, where the rules run too) and the Trace step on attention weights, whose answer the test
    computes itself: softmax([1/sqrt(2), 0])."""
    from tests.learn.torch_students import VECTORISED, WRONG as TORCH_WRONG
    ws, run, said = flow
    name = "scaled_dot_product_attention"
    assert run("show", "show", name) == 0
    assert run("start", "start", name) == 0
    stub = (ws / f"{name}.py").read_text(encoding="utf-8")
    docstring = stub.split('"""')[1]
    said["stub's docstring"] = docstring
    assert re.search(r"[\u4e00-\u9fff]", docstring), docstring      # the contract is in Chinese
    assert run("hint", "hint", name) == 0
    wrong, mistake = TORCH_WRONG[name]["no 1/sqrt(d_k)"]
    write_student(ws, name, wrong)
    assert run("check (wrong)", "check", name) == 1
    write_student(ws, name, VECTORISED[name])
    assert run("check (right)", "check", name) == 0
    e = math.exp(1 / math.sqrt(2))
    weights = f"{e / (e + 1):.4f},{1 / (e + 1):.4f}"
    run("answer (wrong)", "answer", "trace_attention_weights", "0.731059,0.268941")   # the scale left out
    assert run("answer (right)", "answer", "trace_attention_weights", weights) == 0
    assert "漏掉了缩放" in said["answer (wrong)"]
    found = {label: english_sentences(text) for label, text in said.items()}
    assert {label: runs for label, runs in found.items() if runs} == {}, said


def test_a_card_and_a_command_step_in_chinese_hold_no_english_sentence(flow, tmp_path, monkeypatch):
    """A card written too short, marked before it is written, written, then marked; a command step shown,
    then checked before its command ran; a mistyped name and an answer that is no number."""
    monkeypatch.chdir(tmp_path)
    ws, run, said = flow
    assert run("card (marked first)", "card", "explain_scale", "--mark", "same") == 2
    assert run("card (too short)", "card", "explain_scale", "--answer", "方差") == 2
    assert run("card (written)", "card", "explain_scale", "--answer", "点积的方差随维度增长") == 0
    assert run("card (marked)", "card", "explain_scale", "--mark", "same") == 0
    assert "已通过" in said["card (marked)"]
    assert run("command step", "card", "train_small") == 0
    assert run("command step (checked)", "check", "train_small") == 1
    assert "demo_out 不存在" in said["command step (checked)"]
    assert run("a name mistyped", "check", "rnn_stpe") == 2
    assert "rnn_step" in said["a name mistyped"]                  # did you mean
    assert run("an answer that is no number", "answer", "trace_head_shapes", "abc") == 2
    found = {label: english_sentences(text) for label, text in said.items()}
    assert {label: runs for label, runs in found.items() if runs} == {}, said


def test_a_short_answer_in_chinese_counts_its_characters_as_a_terminal_draws_them():
    """Ten 汉字 say as much as a short English sentence: each counts as two letters (the mutant, counting
    each as one, refuses the Chinese answer the English one matches)."""
    from seqlab.learn import cards
    english, chinese = "variance grows", "点积的方差随维度增长"
    assert cards.refusal(english) is None and cards.refusal(chinese) is None
    assert cards.refusal("方差") is not None and cards.refusal("ok") is not None
    one_each = len(chinese)                     # the mutant's count
    assert one_each < cards.MIN_CHARACTERS <= cards._letters(chinese)
