"""What a student reads after `seqlab learn check` (seqlab.learn.feedback), on real wrong versions
from tests/learn/numpy_students.py: the diagnosis is the headline (title, where, the explanation,
what to read as a command and an explorer address that can be pasted, the notes), then the checks;
a sentence's check that fails only because the values (or the form, or a crash) differ everywhere
is not quoted as a sentence broken. In English and 中文."""

from __future__ import annotations

import re

import pytest

from seqlab.cli import main
from seqlab.learn.catalog import exercise
from seqlab.learn.judge import Report, check_many
from seqlab.learn.feedback import report_lines
from seqlab.learn.views import EXPLORER, step_view, text
from tests.learn.numpy_students import WRONG
from tests.learn.students import write_student

VERSIONS = {   # key: (exercise, the label of its wrong version in numpy_students.WRONG)
    "no future term": ("rnn_bptt", "no future term"),
    "last step only": ("rnn_bptt", "weights from the last step only"),
    "dh_last dropped": ("rnn_bptt", "dh_last dropped"),
    "h0 kept in hs": ("rnn_forward", "h0 kept in hs"),
    "O taken as H": ("rnn_forward", "ys with O taken as H"),
}


def _source(name: str, label: str) -> str:
    return next(source for lab, _, source in WRONG[name] if lab == label)


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    root = tmp_path_factory.mktemp("feedback")
    items = [(exercise(name), write_student(root / key.replace(" ", "_"), name, _source(name, label)))
             for key, (name, label) in VERSIONS.items()]
    return dict(zip(VERSIONS, check_many(items)))


def _unwrapped(lines: list[str]) -> str:
    """The lines with the paragraphs' wrapping undone (a continuation line is indented deeper)."""
    return re.sub(r"\n {6,}(?=\S)", " ", "\n".join(lines))


def _failed(report, cause: str) -> list[str]:
    return [c["name"] for c in report.checks if not c["passed"] and c.get("cause") == cause]


def test_the_diagnosis_is_the_headline_with_where_the_explanation_and_what_to_read(reports):
    report = reports["no future term"]
    d = report.diagnosis
    mistake = next(m for m in exercise("rnn_bptt").mistakes if m.id == "no_future_gradient")
    lines = report_lines(report)
    assert lines[0] == f"  diagnosis: {mistake.title}"
    said = _unwrapped(lines)
    head = said[:said.index("\n  checks:")]              # everything said before the checks
    assert f"    where: {d['where']}" in head and "(right: Wy, by; wrong: Wx, Wh, b, xs, h0)" in d["where"]
    assert f"\n    {mistake.explanation}\n" in head
    # what to read: the command and the explorer's address each on a line of their own, to paste
    read = lines.index("        seqlab learn show rnn_bptt")
    assert lines[read + 1] == f"        {EXPLORER}#step/rnn_bptt/mistake-no_future_gradient  (in seqlab explore)"
    assert read + 1 < lines.index("  checks:")
    # ... which lead to that mistake: its heading under "Common mistakes" in `learn show`, its anchor in the explorer
    view = step_view("rnn_bptt", "en")
    heading = next(m["title"] for m in view["mistakes"] if m["anchor"] == "mistake-no_future_gradient")
    assert f'read: "{heading}", under "Common mistakes" in the lesson:' in head
    assert f"* {heading}  [mistake-no_future_gradient]" in text(view, width=None)
    assert any(s["heading"] == "Common mistakes" and any(b.get("anchor") == "mistake-no_future_gradient"
                                                         for b in s["blocks"]) for s in view["sections"])


def test_checks_that_fail_only_because_the_values_differ_are_not_quoted_as_sentences_broken(reports):
    report = reports["no future term"]           # it sums over time; it lacks the future term
    lines = report_lines(report)
    grouped = _failed(report, "values")
    assert {"future term", "summed over time"} <= set(grouped)
    assert not any('the contract: "The weights are shared by every step' in line for line in lines)
    assert not any("the contract:" in line for line in lines)
    said = _unwrapped(lines)
    assert f"    FAIL  {', '.join(grouped)}: the values on these sentences' cases differ from the reference's" in said
    # the checks of the exercise's own values still say where they differ
    assert any(line.startswith("    FAIL  values (worked example): on the worked example: output['Wx'][0, 0]")
               for line in lines)
    # summed over the last step only: "summed over time" fails with the values, "future term" passes
    last = report_lines(reports["last step only"])
    assert "    PASS  future term" in last and not any("the contract:" in line for line in last)
    # the values right on the exercise's own cases and one sentence broken: that sentence is quoted
    dropped = report_lines(reports["dh_last dropped"])
    assert any(line.startswith("    FAIL  dh_last: on the worked example:") and
               'the contract: "dh_last (H,) is an extra gradient on the final state h_T; None means none."' in line
               for line in dropped)


def test_a_wrong_form_or_a_crash_on_the_own_cases_is_said_once_for_the_sentences(reports):
    form = reports["h0 kept in hs"]
    said = _unwrapped(report_lines(form))
    names = _failed(form, "form")
    assert names and "    FAIL  shapes and types: on the worked example: output['hs'] has shape (4, 3)" in said
    assert f"    FAIL  {', '.join(names)}: the output has another form on these sentences' cases too" in said
    assert "the contract:" not in said
    crash = reports["O taken as H"]
    said = _unwrapped(report_lines(crash))
    names = _failed(crash, "raised")
    assert len(names) > 1 and said.count("ValueError: could not broadcast") == 2     # where, and runs
    assert f"    FAIL  {', '.join(names)}: your function raised on these sentences' cases too (see runs)" in said


def test_learn_check_in_chinese(tmp_path, capsys):
    ws = tmp_path / "ws"
    write_student(ws, "rnn_bptt", _source("rnn_bptt", "no future term"))
    assert main(["learn", "check", "rnn_bptt", "--lang", "zh", "--workspace", str(ws)]) == 1
    out = capsys.readouterr().out
    mistake = next(m for m in exercise("rnn_bptt").mistakes if m.id == "no_future_gradient")
    lines = out.splitlines()
    assert lines[0].startswith(f"rnn_bptt: {exercise('rnn_bptt').title_zh}")
    assert lines[1] == f"  诊断：{mistake.title_zh}"
    said = re.sub(r"\n {6,}", "", out)                     # 中文 wraps between characters
    assert f"\n    {mistake.explanation_zh}\n" in said and "    位置：" in said
    heading = next(m["title"] for m in step_view("rnn_bptt", "zh")["mistakes"] if m["id"] == "no_future_gradient")
    assert f"阅读：课文“常见错误”中的“{heading}”：" in said
    assert "\n        seqlab learn show rnn_bptt --lang zh\n" in out
    assert f"\n        {EXPLORER}#step/rnn_bptt/mistake-no_future_gradient  （在 seqlab explore 中）" in out
    assert out.index("诊断：") < out.index("\n  检查：") < out.index("    PASS  能运行")
    assert "这些句子的用例上数值与参考实现不同" in said and "the contract:" not in out
    assert lines[-1].startswith("还没有通过。")


def test_an_accepted_convention_s_note_comes_before_the_checks_in_both_languages():
    accepted = next(m for m in exercise("adamw_step").mistakes if m.accepted)
    report = Report("adamw_step", "adamw_step.py", checks=[{"name": "runs", "passed": True, "message": ""}],
                    notes=[f"{accepted.title}: {accepted.explanation}"], conventions=[(accepted.id, "passes")])
    assert _unwrapped(report_lines(report)) == f"  note: {accepted.title}: {accepted.explanation}\n  checks:\n    PASS  runs"
    zh = re.sub(r"\n {6,}", "", "\n".join(report_lines(report, "zh")))
    assert zh.startswith(f"  说明：{accepted.title_zh}：{accepted.explanation_zh}\n  检查：")
    report.notes = [f"{accepted.title}: checked against that reading ({accepted.explanation})"]
    report.conventions = [(accepted.id, "against")]
    zh = re.sub(r"\n {6,}", "", "\n".join(report_lines(report, "zh")))
    assert zh.startswith(f"  说明：{accepted.title_zh}：按这种读法检查（{accepted.explanation_zh}）")
