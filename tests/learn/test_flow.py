"""The student's flow through `seqlab learn`: hints, Trace questions printed in full, `check` of the
current step, did-you-mean, reset with a backup, command steps checked from what the command wrote,
paths that can be pasted, and progress that follows the file that passed."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest

from seqlab.cli import main
from seqlab.learn.path import STEP_BY_ID, STEPS
from seqlab.learn.questions import QUESTION_BY_ID

MASK = "import numpy as np\ndef causal_mask(n):\n    return np.tril(np.ones((n, n), dtype=bool))\n"


def _cli(*args):
    return main(["learn", *map(str, args)])


def _unwrapped(out: str) -> str:
    """The output with `learn show`'s line wrapping undone (a break between words, or between 中文 characters)."""
    return re.sub(r"(?<=[\u3000-\u9fff\uff00-\uffef])\n *(?=[\u3000-\u9fff\uff00-\uffef])", "",
                  re.sub(r"(?<=[^\s\u3000-\u9fff\uff00-\uffef])\n *(?=[^\s\u3000-\u9fff\uff00-\uffef])", " ", out))


def test_next_and_show_print_a_trace_question_in_full_and_its_answer_only_with_show(tmp_path, capsys):
    ws = tmp_path / "ws"
    first = STEPS[0]
    assert first.kind == "trace"
    question = QUESTION_BY_ID[first.id]
    assert _cli("next", "--workspace", ws) == 0
    out = _unwrapped(capsys.readouterr().out)
    assert question.text[0] in out and f"seqlab learn answer {first.id} VALUE" in out
    assert question.solution[0] not in out
    assert _cli("show", "trace_clipping", "--show", "--workspace", ws) == 0
    out = _unwrapped(capsys.readouterr().out)
    assert QUESTION_BY_ID["trace_clipping"].text[0] in out and QUESTION_BY_ID["trace_clipping"].solution[0] in out
    assert _cli("show", "trace_clipping", "--lang", "zh", "--workspace", ws) == 0
    out = _unwrapped(capsys.readouterr().out)
    assert QUESTION_BY_ID["trace_clipping"].text[1] in out and QUESTION_BY_ID["trace_clipping"].solution[1] not in out
    # a command step prints the question that follows it
    assert _cli("show", "train_small", "--workspace", ws) == 0
    out = _unwrapped(capsys.readouterr().out)
    assert QUESTION_BY_ID["trace_perplexity"].text[0] in out and "seqlab learn check train_small" in out


def test_check_without_a_name_checks_the_current_step(tmp_path, capsys):
    ws = tmp_path / "ws"
    assert _cli("check", "--workspace", ws) == 2                      # the first step is a Trace question
    assert "the current step, trace_recurrence, is a Trace question: seqlab learn answer" in capsys.readouterr().err
    progress = {"steps": {s.id: {"state": "passed"} for s in STEPS[:STEPS.index(STEP_BY_ID["causal_mask"])]}}
    ws.mkdir()
    (ws / "progress.json").write_text(json.dumps(progress))
    (ws / "causal_mask.py").write_text(MASK)
    assert _cli("check", "--workspace", ws) == 0
    out = capsys.readouterr().out
    assert "the current step: causal_mask" in out and "passed: well done" in out
    assert json.loads((ws / "progress.json").read_text())["steps"]["causal_mask"]["state"] == "passed"


@pytest.mark.parametrize(("command", "typo", "suggestion"), [
    ("check", "rnn_stpe", "did you mean rnn_step"),
    ("start", "atention", "did you mean attention"),
    ("show", "trace_clipin", "did you mean trace_clipping"),
    ("hint", "causal_msk", "did you mean causal_mask"),
    ("reset", "sofmax", "did you mean softmax"),
    ("solution", "rnn_bpt", "did you mean rnn_bptt"),
    ("answer", "trace_recurence", "did you mean trace_recurrence"),
    ("card", "explain_scal", "did you mean explain_scale"),
])
def test_every_name_gets_a_did_you_mean(tmp_path, capsys, command, typo, suggestion):
    assert _cli(command, typo, "--workspace", tmp_path / "ws") == 2
    assert suggestion in capsys.readouterr().err


@pytest.mark.parametrize(("argv", "suggestion"), [
    (["learn", "chek", "rnn_step"], "did you mean check?"),
    (["learn", "hnit", "rnn_step"], "did you mean hint?"),
    (["learn", "check", "rnn_step", "--lang", "zhh"], "did you mean zh?"),
    (["lern", "check"], "did you mean learn?"),
])
def test_a_typo_in_a_subcommand_gets_a_did_you_mean(capsys, argv, suggestion):
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "invalid choice" in err and suggestion in err, err


def test_hints_come_one_more_each_time_from_the_lesson(tmp_path, capsys, monkeypatch):
    import seqlab.learn.lessons as lessons

    hints = ["The idea: a lower triangle.", "The shapes: (n, n) of bool.", "The key line: keep j <= i."]

    class Lesson:
        def __init__(self, step, lang):
            self.hints = [f"{h} ({step}, {lang})" for h in hints]

    monkeypatch.setattr(lessons, "lesson", lambda step, lang="en": Lesson(step, lang))
    ws = tmp_path / "ws"
    for asked in (1, 2, 3, 4):
        assert _cli("hint", "causal_mask", "--workspace", ws) == 0
        out = capsys.readouterr().out
        for k, hint in enumerate(hints, 1):
            assert (f"hint {k} of 3: {hint} (causal_mask, en)" in out) == (k <= asked)
        assert ("the next hint: seqlab learn hint causal_mask" in out) == (asked < 3)
        assert ("that is every hint" in out) == (asked >= 3)
    assert json.loads((ws / "progress.json").read_text())["steps"]["causal_mask"]["hints"] == 4
    assert _cli("hint", "rnn_step", "--lang", "zh", "--workspace", ws) == 0
    assert "提示 1/3：The idea: a lower triangle. (rnn_step, zh)" in capsys.readouterr().out


def test_a_trace_question_s_hint_is_its_lesson_s_or_its_own(tmp_path, capsys):
    assert _cli("hint", "trace_clipping", "--workspace", tmp_path / "ws") == 0
    assert f"hint 1 of 1: {QUESTION_BY_ID['trace_clipping'].hint[0]}" in capsys.readouterr().out


def test_reset_writes_a_fresh_stub_and_keeps_the_old_file(tmp_path, capsys):
    ws = tmp_path / "my ws"
    ws.mkdir()
    (ws / "causal_mask.py").write_text(MASK)
    assert _cli("check", "causal_mask", "--workspace", ws) == 0
    capsys.readouterr()
    assert _cli("reset", "causal_mask", "--workspace", ws) == 0
    out = capsys.readouterr().out
    (backup,) = ws.glob("causal_mask.py.*.bak")
    assert backup.read_text() == MASK and f"kept as {shlex.quote(str(backup))}" in out
    assert 'raise NotImplementedError("causal_mask: write this function")' in (ws / "causal_mask.py").read_text()
    assert json.loads((ws / "progress.json").read_text())["steps"]["causal_mask"]["state"] == "started"
    assert _cli("reset", "causal_mask", "--workspace", ws) == 0
    assert len(list(ws.glob("causal_mask.py.*.bak"))) == 2           # a second reset keeps both


def test_paths_with_a_space_are_printed_so_they_can_be_pasted(tmp_path, capsys):
    ws = tmp_path / "my workspace"
    assert _cli("start", "rnn_step", "--workspace", ws) == 0
    out = capsys.readouterr().out
    quoted = shlex.quote(str(ws))
    assert f"wrote {shlex.quote(str(ws / 'rnn_step.py'))}" in out
    assert f"seqlab learn check rnn_step --workspace {quoted}" in out
    command = out.split("then run: ")[1].strip()
    assert shlex.split(command)[-1] == str(ws)                        # pasted into a shell: one argument
    assert _cli("--workspace", ws) == 0
    assert quoted in capsys.readouterr().out


def test_a_pass_recorded_before_hashes_is_kept_and_asks_to_be_confirmed(tmp_path, capsys):
    ws = tmp_path / "ws"
    ws.mkdir()
    old = {"steps": {"causal_mask": {"state": "passed", "updated": "2026-11-01T10:00:00"},
                     "train_small": {"state": "passed"}, "trace_recurrence": {"state": "passed"}}}
    (ws / "progress.json").write_text(json.dumps(old))
    assert _cli("--workspace", ws) == 0
    lines = capsys.readouterr().out.splitlines()
    rows = {name: next(line for line in lines if f" {name} " in line)
            for name in ("causal_mask", "train_small", "trace_recurrence")}
    assert rows["causal_mask"].rstrip().endswith("passed (check again to confirm)")
    assert rows["train_small"].rstrip().endswith("passed (check again to confirm)")
    assert rows["trace_recurrence"].rstrip().endswith("passed")
    assert _cli("--workspace", ws) == 0
    assert "3 of" in capsys.readouterr().out                            # never dropped


def _labs(out: Path) -> None:
    assert main(["labs", "--only", "stacked", "--out", str(out)]) == 0


def test_a_command_step_is_checked_from_what_its_command_wrote(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    ws = tmp_path / "seqlab-learn"
    assert "--out labs_out" in STEP_BY_ID["stacked"].command
    assert _cli("check", "stacked", "--workspace", ws) == 1            # not run yet
    assert "labs_out does not exist: run  seqlab labs --only stacked --out labs_out  first" in capsys.readouterr().out
    assert _cli("card", "stacked", "--reveal", "--workspace", ws) == 0  # a card no longer marks it
    assert json.loads((ws / "progress.json").read_text())["steps"]["stacked"]["state"] == "started"
    _labs(tmp_path / "labs_out")
    capsys.readouterr()
    assert _cli("check", "stacked", "--workspace", ws) == 0
    out = capsys.readouterr().out
    results = json.loads((tmp_path / "labs_out" / "results.json").read_text())
    worst = max(results["gradient_check_details"][n][p] for n in ("stacked_rnn", "bidirectional_rnn")
                for p in results["gradient_check_details"][n])
    assert f"gradient checks passed (largest relative error {worst:.1e})" in out
    entry = json.loads((ws / "progress.json").read_text())["steps"]["stacked"]
    assert entry["state"] == "passed" and Path(entry["results"]) == Path("labs_out")
    # a damaged results file fails, naming it
    (tmp_path / "labs_out" / "results.json").write_text('{"stacked": {}, "gradient_checks": {}, "failures": ["x"]}')
    assert _cli("check", "stacked", "--workspace", ws) == 1
    assert "the lab reports failures" in capsys.readouterr().out


def test_the_demo_s_run_folder_decides_the_train_small_step(tmp_path, capsys):
    from seqlab.learn.command_steps import check_command_step

    out = tmp_path / "demo_out"
    (out / "run").mkdir(parents=True)
    (out / "run" / "config.json").write_text(json.dumps({"kind": "lm", "settings": {"max_steps": 40}}))
    log = [{"step": s, "wallclock": 0.1 * s, "train_loss": 3.0} for s in (10, 20)]
    (out / "run" / "log.jsonl").write_text("\n".join(map(json.dumps, log)) + "\n")
    step = STEP_BY_ID["train_small"]
    evidence = check_command_step(step, tmp_path / "ws", out)
    assert not evidence.passed and "demo_out has no report.md" in evidence.message
    (out / "report.md").write_text("# demo\n")
    evidence = check_command_step(step, tmp_path / "ws", out)
    assert not evidence.passed and "stopped at step 20 of 40" in evidence.message
    log += [{"step": 40, "wallclock": 4.0, "train_loss": 2.5}, {"step": 40, "wallclock": 4.1, "val_loss": 2.0}]
    (out / "run" / "log.jsonl").write_text("\n".join(map(json.dumps, log)) + "\n")
    evidence = check_command_step(step, tmp_path / "ws", out)
    assert evidence.passed and "trained 40 steps; validation loss 2.000 nats per token, perplexity 7.4" in evidence.message


@pytest.mark.slow
def test_every_command_step_passes_on_what_its_own_command_writes(tmp_path, capsys, monkeypatch):
    """The real commands of the path, run as a student runs them (about a minute on 2 cores)."""
    monkeypatch.chdir(tmp_path)
    ws = tmp_path / "seqlab-learn"
    for step in (s for s in STEPS if s.kind == "command"):
        words = shlex.split(step.command)
        assert words[0] == "seqlab"
        assert main(words[1:]) == 0, step.command
        capsys.readouterr()
        assert _cli("check", step.id, "--workspace", ws) == 0, capsys.readouterr().out
        assert "PASS" in capsys.readouterr().out


def test_a_written_lesson_s_hints_are_the_ones_given(tmp_path, capsys):
    from seqlab.learn.lessons import has_lesson, lesson
    name = next(s.id for s in STEPS if s.kind == "implement" and has_lesson(s.id) and lesson(s.id).hints)
    hints = lesson(name).hints
    assert len(hints) >= 3                                # the idea, the shapes, the key line
    assert _cli("hint", name, "--workspace", tmp_path / "ws") == 0
    out = capsys.readouterr().out
    assert f"hint 1 of {len(hints)}: {hints[0]}" in out and hints[1] not in out
