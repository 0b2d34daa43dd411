"""Issue 21, the run-directory families shared by ``seqlab train`` and ``seqlab seq2seq train``: each
fault injected (a kill before the first checkpoint, a second process, a full disk, a run of the
other kind, changed inputs on resume, bad optimiser values, a giant model) and the outcome asserted."""

from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from seqlab.cli import main
from seqlab.lm.settings import TrainConfig
from seqlab.lm.task import train as train_lm
from seqlab.runs.checkpoint import read_checkpoint
from seqlab.runs.lock import RunLock
from seqlab.runs.log import read_jsonl
from seqlab.seq2seq.settings import Seq2SeqTrainConfig
from seqlab.seq2seq.task import train as train_seq2seq
from tests.conftest import wait_until

pytestmark = pytest.mark.usefixtures("one_thread")
REPO = Path(__file__).resolve().parents[2]
S2S = ["--task", "reverse", "--min-len", "2", "--max-len", "5", "--train-size", "500", "--valid-size", "30",
       "--eval-batches", "1", "--arch", "rnn-attention", "--d-model", "16", "--num-layers", "1", "--batch-size", "16",
       "--lr", "0.01", "--warmup-steps", "2", "--no-progress", "--threads", "1"]
LM = ["--context-length", "16", "--d-model", "16", "--num-layers", "1", "--num-heads", "2", "--batch-size", "4",
      "--threads", "1", "--no-progress", "--eval-batches", "1", "--warmup-steps", "2"]
S2S_TINY = dict(task="reverse", min_len=2, max_len=5, train_size=500, valid_size=30, eval_batches=1,
                arch="rnn-attention", d_model=16, num_layers=1, batch_size=16, lr=1e-2, warmup_steps=2,
                progress=False, threads=1)
LM_TINY = dict(context_length=16, d_model=16, num_layers=1, num_heads=2, batch_size=4, threads=1, progress=False,
               eval_batches=1, warmup_steps=2)


def _env() -> dict:
    return {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}


def _files(run: Path) -> dict[str, bytes]:
    """Every file of a run directory (folders walked), by relative path."""
    return {str(p.relative_to(run)): p.read_bytes() for p in sorted(run.rglob("*")) if p.is_file()}


def _lm(byte_data, run, **overrides) -> TrainConfig:
    return TrainConfig(**{"data_dir": str(byte_data), "out_dir": str(run), **LM_TINY, **overrides})


def _s2s(run, **overrides) -> Seq2SeqTrainConfig:
    return Seq2SeqTrainConfig(**{"out_dir": str(run), **S2S_TINY, **overrides})


def _quiet(message: str) -> None:
    pass


# -- --overwrite killed before its first checkpoint --------------------------------------------------


def test_seq2seq_overwrite_that_fails_before_its_first_checkpoint_leaves_the_old_run_whole(tmp_path):
    run = tmp_path / "run"
    train_seq2seq(_s2s(run, max_steps=6, eval_interval=3, checkpoint_interval=3), say=_quiet)
    before = _files(run)
    assert {"config.json", "log.jsonl", "vocab.json", "loss_curve.png", "checkpoints/latest.pt"} <= set(before)

    def fail_at_step_4(engine, step):
        if step == 4:
            raise RuntimeError("new run failed (simulated)")

    new = dict(task="dates", min_len=None, max_len=None, overwrite=True, max_steps=50, eval_interval=2,
               checkpoint_interval=10, log_interval=1)
    with pytest.raises(RuntimeError, match="simulated"):
        train_seq2seq(_s2s(run, **new), step_callbacks=[fail_at_step_4], say=_quiet)
    assert _files(run) == before  # config.json, log.jsonl, vocab.json, the plot and the checkpoint: untouched
    assert main(["seq2seq", "train", "--out", str(run), "--resume", "--max-steps", "8", "--no-progress"]) == 0


def test_seq2seq_overwrite_killed_before_its_first_checkpoint_leaves_the_old_run_whole(tmp_path):
    """A real SIGKILL while the new run trains (and logs, and holds the lock): the old run resumes."""
    run = tmp_path / "run"
    assert main(["seq2seq", "train", *S2S, "--max-steps", "4", "--eval-interval", "2", "--out", str(run)]) == 0
    before = _files(run)
    process = subprocess.Popen([sys.executable, "-m", "seqlab", "seq2seq", "train", *S2S, "--task", "dates",
                                "--min-len", "none", "--max-len", "none", "--overwrite", "--max-steps", "100000",
                                "--log-interval", "1", "--checkpoint-interval", "100000", "--eval-interval", "2",
                                "--out", str(run)], env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        wait_until(process, lambda: any(p.name.startswith(".log.tmp") and p.stat().st_size > 200 for p in run.iterdir()),
                   poll_s=0.05)
        assert (run / ".lock").is_file()
        process.kill()
        process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    leftovers = set(_files(run)) - set(before)
    assert all(name == ".lock" or Path(name).name.startswith(".log.tmp") for name in leftovers), leftovers
    assert {name: data for name, data in _files(run).items() if name in before} == before
    # the dead process's lock is gone with it, its staged log is cleaned up, the old run goes on
    assert main(["seq2seq", "train", "--out", str(run), "--resume", "--max-steps", "6", "--no-progress"]) == 0
    assert not any(p.name.startswith(".log.tmp") for p in run.iterdir())
    assert read_checkpoint(run / "checkpoints" / "latest.pt")["iteration"] == 6


def test_lm_overwrite_keeps_the_old_log_until_the_first_checkpoint(byte_data, tmp_path):
    run = tmp_path / "run"
    train_lm(_lm(byte_data, run, max_steps=4, eval_interval=2, checkpoint_interval=2))
    before = _files(run)

    def fail_at_step_3(engine, step):
        if step == 3:
            raise RuntimeError("new run failed (simulated)")

    with pytest.raises(RuntimeError, match="simulated"):
        train_lm(_lm(byte_data, run, max_steps=20, overwrite=True, eval_interval=1, checkpoint_interval=10,
                     log_interval=1), step_callbacks=[fail_at_step_3])
    assert _files(run) == before


# -- two processes, one run directory ---------------------------------------------------------------


def test_a_run_directory_in_use_is_refused_naming_the_process(byte_data, tmp_path, capsys):
    s2s_run, lm_run = tmp_path / "s2s", tmp_path / "lm"
    with RunLock(s2s_run, "seqlab seq2seq train"), RunLock(lm_run, "seqlab train"):
        assert main(["seq2seq", "train", *S2S, "--max-steps", "2", "--out", str(s2s_run)]) == 1
        err = capsys.readouterr().err
        assert f"{s2s_run} is in use: process {os.getpid()} (`seqlab seq2seq train`, since" in err
        assert main(["train", "--data-dir", str(byte_data), *LM, "--max-steps", "2", "--out", str(lm_run)]) == 1
        assert f"{lm_run} is in use: process {os.getpid()} (`seqlab train`" in capsys.readouterr().err
        assert not (s2s_run / "checkpoints").exists() and not (lm_run / "log.jsonl").exists()  # nothing written
    # released: both train now, and each leaves no lock behind
    assert main(["seq2seq", "train", *S2S, "--max-steps", "2", "--out", str(s2s_run)]) == 0
    assert main(["train", "--data-dir", str(byte_data), *LM, "--max-steps", "2", "--out", str(lm_run)]) == 0
    assert not (s2s_run / ".lock").exists() and not (lm_run / ".lock").exists()


def test_a_second_training_process_is_refused_while_the_first_runs(tmp_path, capsys):
    run = tmp_path / "run"
    first = subprocess.Popen([sys.executable, "-m", "seqlab", "seq2seq", "train", *S2S, "--max-steps", "100000",
                              "--eval-interval", "100000", "--checkpoint-interval", "100000", "--out", str(run)],
                             env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_until(first, lambda: (run / "log.jsonl").is_file() and (run / "log.jsonl").read_text().strip(),
                   poll_s=0.05)
        log_before = (run / "log.jsonl").read_text()
        assert main(["seq2seq", "train", *S2S, "--overwrite", "--max-steps", "3", "--out", str(run)]) == 1
        assert f"is in use: process {first.pid} (`seqlab seq2seq train`" in capsys.readouterr().err
        assert main(["seq2seq", "train", "--resume", "--max-steps", "100001", "--out", str(run), "--no-progress"]) == 1
        assert f"is in use: process {first.pid}" in capsys.readouterr().err
        assert (run / "log.jsonl").read_text().startswith(log_before)  # not rewritten by the refused runs
        first.send_signal(signal.SIGTERM)
        out, err = first.communicate(timeout=120)
    finally:
        if first.poll() is None:
            first.kill()
    assert first.returncode == 143, err
    steps = [r["step"] for r in read_jsonl(run / "log.jsonl")]
    assert steps == sorted(steps) and len(steps) == len(set(steps))  # one run's records, in order


# -- optimiser and schedule values ------------------------------------------------------------------


@pytest.mark.parametrize("flags, message", [
    (["--min-lr", "-0.001"], r"min_lr=-0.001: must be >= 0"),
    (["--lr", "0.01", "--min-lr", "0.1"], r"min_lr=0.1 is above lr=0.01"),
    (["--grad-clip", "-1"], r"grad_clip=-1.0: must be >= 0"),
    (["--weight-decay", "-0.1"], r"weight_decay=-0.1: must be >= 0"),
    (["--time-budget-s", "0"], r"time_budget_s=0.0: must be > 0"),
])
def test_seq2seq_refuses_bad_optimiser_and_schedule_values(tmp_path, capsys, flags, message):
    assert main(["seq2seq", "train", *S2S, *flags, "--out", str(tmp_path / "r")]) == 2
    import re

    assert re.search(message, capsys.readouterr().err)
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize("name", ["grad_clip", "weight_decay", "min_lr", "lr"])
def test_seq2seq_refuses_nan_as_a_flag_a_toml_value_and_in_python(tmp_path, capsys, name):
    flag = "--" + name.replace("_", "-")
    with pytest.raises(SystemExit) as exited:
        main(["seq2seq", "train", *S2S, flag, "nan", "--out", str(tmp_path / "r")])
    assert exited.value.code == 2 and "'nan' is not a finite number" in capsys.readouterr().err
    toml = tmp_path / "run.toml"
    toml.write_text(f"[optimizer]\n{name} = nan\n")
    without_lr = [f for i, f in enumerate(S2S) if "--lr" not in S2S[max(0, i - 1):i + 1]]
    assert main(["seq2seq", "train", *without_lr, "--config", str(toml), "--max-steps", "1",
                 "--out", str(tmp_path / "r")]) == 2
    assert f"config {name}=nan: must be a finite number" in capsys.readouterr().err
    with pytest.raises(ValueError, match=f"config {name}=nan: must be a finite number"):
        Seq2SeqTrainConfig(**{name: float("nan")})


@pytest.mark.parametrize("flags, message", [
    (["--eps", "0"], r"config eps=0.0: must be > 0"),  # was: NaN at step 2, blamed on the learning rate
    (["--eps", "-0.5"], r"config eps=-0.5: must be > 0"),
    (["--beta1", "1"], r"config beta1=1.0: must be in \[0, 1\)"),
    (["--beta2", "1.5"], r"config beta2=1.5: must be in \[0, 1\)"),
    (["--beta1", "-0.1"], r"config beta1=-0.1: must be in \[0, 1\)"),
])
@pytest.mark.parametrize("command", ["seq2seq", "lm"])
def test_both_commands_refuse_adamw_values_that_cannot_train(byte_data, tmp_path, capsys, flags, message, command):
    """The family of the seq2seq optimiser values: AdamW's eps and betas, in both training commands,
    as flags, TOML values and in Python, before anything is written."""
    import re

    run = tmp_path / "r"
    argv = (["seq2seq", "train", *S2S] if command == "seq2seq" else ["train", "--data-dir", str(byte_data), *LM])
    assert main([*argv, *flags, "--max-steps", "3", "--out", str(run)]) == 2
    assert re.search(message, capsys.readouterr().err)
    assert not run.exists()
    name, value = flags[0][2:], float(flags[1])
    toml = tmp_path / "run.toml"
    toml.write_text(f"[optimizer]\n{name} = {value!r}\n")
    assert main([*argv, "--config", str(toml), "--max-steps", "3", "--out", str(run)]) == 2
    assert re.search(message, capsys.readouterr().err) and not run.exists()
    with pytest.raises(ValueError, match=message):
        _s2s(run, **{name: value}) if command == "seq2seq" else _lm(byte_data, run, **{name: value})


# -- resuming with changed inputs ---------------------------------------------------------------------


def _pairs(path: Path, pairs: list[tuple[str, str]]) -> Path:
    path.write_text("".join(f"{s}\t{t}\n" for s, t in pairs), encoding="utf-8")
    return path


def test_resume_refuses_characters_the_vocabulary_never_saw(tmp_path, capsys):
    from seqlab.seq2seq.builtin_tasks import make_pairs

    pairs = make_pairs("fr-en", 200, seed=0)
    path = _pairs(tmp_path / "pairs.tsv", pairs)
    run = tmp_path / "run"
    flags = ["--pairs", str(path), "--arch", "rnn", "--d-model", "16", "--num-layers", "1", "--batch-size", "8",
             "--no-progress", "--threads", "1", "--eval-batches", "1"]
    assert main(["seq2seq", "train", *flags, "--max-steps", "2", "--out", str(run)]) == 0
    config_before = (run / "config.json").read_bytes()
    _pairs(path, [*pairs[:-1], ("le quiz noir", "the black quiz")])  # no 'q' nor 'z' in the vocabulary
    capsys.readouterr()
    assert main(["seq2seq", "train", "--resume", "--max-steps", "4", "--out", str(run), "--no-progress"]) == 1
    err = capsys.readouterr().err
    assert "2 pair text(s) hold characters the run's vocabulary" in err  # its source and its target and "'qz' in the source 'le quiz noir'" in err
    assert (run / "config.json").read_bytes() == config_before
    assert read_checkpoint(run / "checkpoints" / "latest.pt")["iteration"] == 2
    # known characters in changed pairs: the resume goes on, saying the data changed
    _pairs(path, [*pairs[:-1], ("le chat", "the cat")])
    assert main(["seq2seq", "train", "--resume", "--max-steps", "4", "--out", str(run), "--no-progress"]) == 0
    assert "resume: the pairs differ from those the run started with" in capsys.readouterr().err


def test_resume_refuses_a_changed_tokenizer_setting(tmp_path, capsys):
    run = tmp_path / "run"
    assert main(["seq2seq", "train", *S2S, "--max-steps", "2", "--out", str(run)]) == 0
    config_before = (run / "config.json").read_bytes()
    capsys.readouterr()
    assert main(["seq2seq", "train", "--resume", "--tokenize", "bpe", "--max-steps", "4", "--out", str(run)]) == 1
    err = capsys.readouterr().err
    assert "the run was trained with tokenize='char'" in err and "asks for tokenize='bpe'" in err
    assert main(["seq2seq", "train", "--resume", "--d-model", "32", "--max-steps", "4", "--out", str(run)]) == 1
    assert "trained with d_model=16" in capsys.readouterr().err
    assert (run / "config.json").read_bytes() == config_before


@pytest.mark.parametrize("command", ["seq2seq", "lm"])
def test_resume_at_or_past_max_steps_is_refused_without_touching_the_run(byte_data, tmp_path, capsys, command):
    run = tmp_path / "run"
    base = ["seq2seq", "train", *S2S] if command == "seq2seq" else ["train", "--data-dir", str(byte_data), *LM]
    resume = ["seq2seq", "train"] if command == "seq2seq" else ["train"]
    assert main([*base, "--max-steps", "3", "--out", str(run)]) == 0
    before = _files(run)
    capsys.readouterr()
    for steps in ("3", "2"):
        assert main([*resume, "--resume", "--max-steps", steps, "--out", str(run), "--no-progress"]) == 1
        captured = capsys.readouterr()
        assert f"nothing to do: the run is at step 3 and --max-steps is {steps}" in captured.err
        assert "completed" not in captured.out
        assert "resume: continuing" not in captured.out + captured.err  # decided before it is announced
    assert _files(run) == before  # config.json not rewritten, nothing else touched
    # --resume with --overwrite: the run was resumed and --overwrite silently ignored
    assert main([*resume, "--resume", "--overwrite", "--max-steps", "5", "--out", str(run), "--no-progress"]) == 2
    assert "--resume continues the run in --out and --overwrite starts a new one there; give one of them" in \
        capsys.readouterr().err
    assert _files(run) == before


def test_a_tokenizer_directory_without_bpe_is_refused(tmp_path, capsys):
    assert main(["seq2seq", "train", *S2S, "--tokenizer", str(tmp_path), "--out", str(tmp_path / "r")]) == 2
    assert "is a BPE tokenizer, used only with --tokenize bpe" in capsys.readouterr().err


@pytest.mark.parametrize("flags, message", [
    (["--arch", "rnn-attention", "--num-heads", "8"], "--num-heads 8 is read only with --arch transformer (with "
                                                      "--arch rnn-attention it would be ignored)"),
    (["--arch", "rnn", "--d-ff", "64"], "--d-ff 64 is read only with --arch transformer"),
    (["--arch", "rnn", "--positional", "rope"], "--positional rope is read only with --arch transformer"),
    (["--arch", "rnn-attention", "--attention", "sdpa"], "--attention sdpa is read only with --arch transformer"),
    (["--arch", "transformer", "--cell", "lstm"], "--cell lstm is read only with --arch rnn or rnn-attention"),
    (["--arch", "rnn", "--attention-score", "additive"], "--attention-score additive is read only with --arch "
                                                          "rnn-attention (with --arch rnn it would be ignored)"),
    (["--bpe-vocab-size", "300"], "--bpe-vocab-size 300 is read only with --tokenize bpe (with --tokenize char"),
])
def test_a_setting_the_chosen_model_never_reads_is_refused(tmp_path, capsys, flags, message):
    """The --tokenizer family: a flag (or TOML key) the chosen architecture or tokenizer ignores was
    silently dropped; the run trained without it."""
    run = tmp_path / "r"
    assert main(["seq2seq", "train", *S2S, *flags, "--max-steps", "2", "--out", str(run)]) == 2
    assert message in capsys.readouterr().err and not run.exists()
    toml = tmp_path / "run.toml"
    key, value = flags[-2][2:].replace("-", "_"), flags[-1]
    toml.write_text(f"[model]\n{key} = {value if value.isdigit() else repr(value)}\n".replace("'", '"'))
    assert main(["seq2seq", "train", *S2S, *flags[:-2], "--config", str(toml), "--max-steps", "2",
                 "--out", str(run)]) == 2
    assert f"{key} (in the --config file) {value} is read only with" in capsys.readouterr().err


def test_settings_every_model_reads_still_train_and_a_resume_is_not_asked_again(tmp_path, capsys):
    run = tmp_path / "r"
    assert main(["seq2seq", "train", *S2S, "--cell", "lstm", "--attention-score", "additive", "--max-steps", "2",
                 "--out", str(run)]) == 0
    assert main(["seq2seq", "train", "--resume", "--max-steps", "3", "--out", str(run), "--no-progress"]) == 0
    saved = json.loads((run / "config.json").read_text())["settings"]
    assert (saved["cell"], saved["attention_score"], saved["arch"]) == ("lstm", "additive", "rnn-attention")


# -- one kind of run written over another -----------------------------------------------------------


def test_a_seq2seq_run_written_over_an_lm_run_keeps_none_of_its_files(byte_data, tmp_path):
    from seqlab.explorer.runs import describe_run
    from seqlab.runs.kinds import run_kind

    run = tmp_path / "run"
    train_lm(_lm(byte_data, run, max_steps=2, checkpoint_interval=1))
    (run / "tokenizer").mkdir()  # the byte-level test data has no tokenizer to copy: give the run one
    (run / "tokenizer" / "vocab.json").write_text("{}")
    train_seq2seq(_s2s(run, max_steps=2, eval_interval=2, overwrite=True), say=_quiet)
    assert not (run / "tokenizer").exists()
    assert sorted(p.name for p in (run / "checkpoints").iterdir()) == ["latest.pt"]
    assert run_kind(run) == "seq2seq" and describe_run(str(run)).kind == "seq2seq"
    assert json.loads((run / "config.json").read_text())["kind"] == "seq2seq"
    # and back: an LM run over the seq2seq run drops vocab.json
    train_lm(_lm(byte_data, run, max_steps=2, overwrite=True))
    assert not (run / "vocab.json").exists() and run_kind(run) == "lm"
    assert sorted(p.name for p in (run / "checkpoints").iterdir()) == ["latest.pt", "step_0000002.pt"]


def test_a_run_of_the_other_kind_is_named_with_the_command_that_reads_it(byte_data, tmp_path, capsys):
    lm_run, s2s_run = tmp_path / "lm", tmp_path / "s2s"
    assert main(["train", "--data-dir", str(byte_data), *LM, "--max-steps", "2", "--out", str(lm_run)]) == 0
    assert main(["seq2seq", "train", *S2S, "--max-steps", "2", "--out", str(s2s_run)]) == 0
    capsys.readouterr()
    assert main(["seq2seq", "train", "--resume", "--out", str(lm_run)]) == 2
    assert (f"{lm_run} is a language-model run (written by `seqlab train`), not a seq2seq run; continue it with "
            f"`seqlab train --resume --out {lm_run}`") in capsys.readouterr().err
    assert main(["train", "--resume", "--out", str(s2s_run)]) == 2
    assert f"continue it with `seqlab seq2seq train --resume --out {s2s_run}`" in capsys.readouterr().err
    assert main(["seq2seq", "translate", "--run", str(lm_run), "abc"]) == 2  # a usage error, as for generate below
    assert f"use `seqlab generate --run {lm_run}`" in capsys.readouterr().err
    assert main(["generate", "--run", str(s2s_run), "--prompt", "a"]) == 2
    assert f"use `seqlab seq2seq translate --run {s2s_run}`" in capsys.readouterr().err
    assert main(["seq2seq", "train", *S2S, "--max-steps", "2", "--out", str(lm_run)]) == 1  # no --overwrite
    err = capsys.readouterr().err
    assert f"already holds a language-model run (written by `seqlab train`) ({lm_run / 'checkpoints'}" in err
    assert f"continue it with `seqlab train --resume --out {lm_run}`, start over with --overwrite" in err


# -- config.json of the wrong shape, and invalid JSON --------------------------------------------------


@pytest.mark.parametrize("text, message", [
    ("[1, 2]", "config.json: expected a JSON object of settings, found list"),
    ('{"kind": "seq2seq", "train": 3, "model_config": {}}', "config.json: field 'train' must be a JSON object"),
    ('{"kind": "seq2seq", "model_config": {}}', "config.json: field 'train' must be a JSON object"),
    ('{"kind": "seq2seq", "train": {"d_model": "big"}, "model_config": {}}',
     "config.json: key 'train.d_model' is 'big'; expected int"),
    ('{"kind": "seq2seq", "train": {"max_steps": 0}, "model_config": {}}', "config.json: config max_steps=0"),
    ('{"kind": "seq2seq",\n "train": {oops}}', "config.json, line 2: invalid JSON"),
])
def test_seq2seq_resume_on_a_config_json_of_the_wrong_shape_names_file_and_field(tmp_path, capsys, text, message):
    run = tmp_path / "run"
    assert main(["seq2seq", "train", *S2S, "--max-steps", "2", "--out", str(run)]) == 0
    (run / "config.json").write_text(text)
    capsys.readouterr()
    assert main(["seq2seq", "train", "--resume", "--max-steps", "4", "--out", str(run)]) == 2
    assert message in capsys.readouterr().err


# -- logged values after a resume = an uninterrupted run ------------------------------------------------


def _records(run: Path) -> list[dict]:
    fields = ("step", "train_loss", "lr", "grad_norm", "tokens")
    return [{k: r[k] for k in fields} for r in read_jsonl(run / "log.jsonl") if "train_loss" in r]


@pytest.mark.parametrize("kind", ["lm", "seq2seq"])
def test_logged_values_after_a_resume_equal_an_uninterrupted_run(byte_data, tmp_path, kind):
    """Log every 5 steps, stop at 7 and resume: the record at step 10 averages steps 6-10 as in the
    uninterrupted run (not only 8-10); the interrupted run's summary averages the steps it names."""
    def config(run, **extra):
        settings = {**dict(max_steps=12, log_interval=5, eval_interval=100, checkpoint_interval=100), **extra}
        return _lm(byte_data, run, **settings) if kind == "lm" else _s2s(run, **settings)

    train = train_lm if kind == "lm" else (lambda cfg, **kw: train_seq2seq(cfg, say=_quiet, **kw))
    whole = train(config(tmp_path / "whole"))
    every_step = train(config(tmp_path / "steps", log_interval=1))

    def stop_at_7(engine, step):
        if step == 7:
            engine.request_stop("test interruption")

    first = train(config(tmp_path / "parts"), step_callbacks=[stop_at_7])
    losses = [r["train_loss"] for r in _records(tmp_path / "steps")]
    assert (first.status, first.steps, first.train_loss_steps) == ("interrupted", 7, 2)
    assert first.train_loss == pytest.approx((losses[5] + losses[6]) / 2)  # steps 6 and 7
    second = train(config(tmp_path / "parts", resume=True))
    assert _records(tmp_path / "parts") == _records(tmp_path / "whole")
    assert [r["step"] for r in _records(tmp_path / "whole")] == [5, 10, 12]
    assert _records(tmp_path / "whole")[1]["train_loss"] == pytest.approx(sum(losses[5:10]) / 5)
    assert (second.train_loss, second.train_loss_steps) == (whole.train_loss, whole.train_loss_steps) == \
        (pytest.approx(sum(losses[10:12]) / 2), 2)
    assert every_step.steps == 12


@pytest.mark.parametrize("kind", ["lm", "seq2seq"])
def test_a_resume_with_other_optimizer_values_uses_them_and_says_so(byte_data, tmp_path, kind):
    """Resuming with another --weight-decay (or betas, eps) wrote the new value into config.json, but
    the optimizer state loaded from the checkpoint brought the old one back: silently. Oracle: one
    step from the same weights, moments and batch differs only by the decoupled decay, so the
    weights of the two resumed runs differ by exactly lr * (0.5 - wd) * p for every decayed matrix."""
    import shutil

    def config(run, **extra):
        settings = {**dict(max_steps=4, log_interval=1, eval_interval=100, checkpoint_interval=100), **extra}
        return _lm(byte_data, run, **settings) if kind == "lm" else _s2s(run, **settings)

    train = train_lm if kind == "lm" else (lambda cfg, **kw: train_seq2seq(cfg, **kw))
    train(config(tmp_path / "same"), **({} if kind == "lm" else {"say": _quiet}))
    shutil.copytree(tmp_path / "same", tmp_path / "decayed")
    shutil.copytree(tmp_path / "same", tmp_path / "tuned")
    before = read_checkpoint(tmp_path / "same" / "checkpoints" / "latest.pt")["model"]
    wd, beta2 = config(tmp_path / "x").weight_decay, config(tmp_path / "x").beta2
    train(config(tmp_path / "same", max_steps=5, resume=True), say=_quiet)
    notes: list[str] = []
    train(config(tmp_path / "decayed", max_steps=5, resume=True, weight_decay=0.5), say=notes.append)
    assert any(f"resume: weight_decay {wd:g} -> 0.5 now (the run trained with the old values up to step 4" in n
               for n in notes), notes
    train(config(tmp_path / "tuned", max_steps=5, resume=True, beta2=0.5, eps=1e-6), say=notes.append)
    assert any(f"resume: beta2 {beta2:g} -> 0.5, eps 1e-08 -> 1e-06 now" in n for n in notes), notes
    lr = _records(tmp_path / "decayed")[-1]["lr"]
    assert _records(tmp_path / "decayed")[-1]["step"] == 5 and lr == _records(tmp_path / "same")[-1]["lr"] > 0
    same = read_checkpoint(tmp_path / "same" / "checkpoints" / "latest.pt")
    decayed = read_checkpoint(tmp_path / "decayed" / "checkpoints" / "latest.pt")
    matrices = [name for name, value in before.items() if value.dim() >= 2]
    assert matrices
    for name in matrices:
        expected = -lr * (0.5 - wd) * before[name].double()
        torch.testing.assert_close((decayed["model"][name] - same["model"][name]).double(), expected,
                                   atol=1e-6, rtol=1e-4)
    assert [g["weight_decay"] for g in decayed["optimizer"]["param_groups"]] == [0.5, 0.0]
    assert [g["weight_decay"] for g in same["optimizer"]["param_groups"]] == [wd, 0.0]
    tuned = read_checkpoint(tmp_path / "tuned" / "checkpoints" / "latest.pt")
    assert [(g["betas"][1], g["eps"]) for g in tuned["optimizer"]["param_groups"]] == [(0.5, 1e-6)] * 2
    assert not torch.equal(tuned["model"][matrices[0]], same["model"][matrices[0]])  # and the step used them


def test_a_resume_on_other_data_says_so(byte_data, tmp_path, monkeypatch):
    """`seqlab train --resume --data-dir OTHER` went on silently with other batches and another
    validation set (seq2seq says when its pairs changed); the same data by another path says nothing."""
    import shutil

    from tests.training.conftest import write_byte_data

    run = tmp_path / "run"
    train_lm(_lm(byte_data, run, max_steps=3))
    other = write_byte_data(tmp_path / "other", num_train=60, num_valid=20)
    shutil.copytree(run, tmp_path / "again")
    notes: list[str] = []
    train_lm(_lm(other, run, max_steps=4, resume=True), say=notes.append)
    assert f"resume: --data-dir {other} now (the run trained on {byte_data} up to step 3); its batches and its " \
           "val loss come from the new data from here" in notes, notes
    monkeypatch.chdir(byte_data.parent)
    notes.clear()
    train_lm(_lm(os.path.join(".", byte_data.name, ""), tmp_path / "again", max_steps=4, resume=True),
             say=notes.append)
    assert notes and not any("--data-dir" in n for n in notes), notes


# -- a full disk during a checkpoint save ------------------------------------------------------------


@pytest.mark.parametrize("failure", [OSError(errno.ENOSPC, "No space left on device"),
                                     RuntimeError("[enforce fail at inline_container.cc:664] . unexpected pos 1728 "
                                                  "vs 1600; PytorchStreamWriter failed writing file data/3: file "
                                                  "write failed")])
@pytest.mark.parametrize("command", ["seq2seq", "lm"])
def test_a_full_disk_during_a_save_says_so_and_the_previous_checkpoint_is_intact(byte_data, tmp_path, monkeypatch,
                                                                                 capsys, failure, command):
    run = tmp_path / "run"
    real_save, calls = torch.save, {"n": 0}

    def fill_the_disk(obj, handle, *args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 2:
            handle.write(b"PK\x03\x04 part of a checkpoint")
            raise failure
        return real_save(obj, handle, *args, **kwargs)

    monkeypatch.setattr(torch, "save", fill_the_disk)
    base = ["seq2seq", "train", *S2S] if command == "seq2seq" else ["train", "--data-dir", str(byte_data), *LM]
    assert main([*base, "--max-steps", "6", "--checkpoint-interval", "2", "--out", str(run)]) == 1
    err = capsys.readouterr().err
    latest = run / "checkpoints" / "latest.pt"
    assert "error: the disk is full" in err and "could not write the checkpoint" in err
    assert f"the previous checkpoint {latest} (step 2) is intact: free some space, then continue with --resume" in err
    assert "inline_container" not in err
    monkeypatch.undo()
    assert read_checkpoint(latest)["iteration"] == 2
    assert not [p for p in run.rglob(".*tmp*")]  # no half-written file left


class SmallDisk:
    """``open`` for seqlab.runs.checkpoint on a disk with ``free`` bytes: a file opened for writing
    is real, but its writes past the free space fail with ENOSPC, as the kernel fails them; torch's
    own zip writer then raises what it raises on a full disk."""

    def __init__(self, free: int):
        self.free = free

    def __call__(self, path, mode="r", *args, **kwargs):
        handle = open(path, mode, *args, **kwargs)
        if "w" not in mode:
            return handle
        disk, write = self, handle.write

        def limited(data):
            if len(data) > disk.free:
                raise OSError(errno.ENOSPC, "No space left on device")
            disk.free -= len(data)
            return write(data)

        handle.write = limited
        return handle


@pytest.mark.parametrize("command", ["seq2seq", "lm"])
def test_a_disk_that_fills_up_inside_torchs_writer_says_the_disk_is_full(byte_data, tmp_path, monkeypatch, capsys,
                                                                         command):
    """Room for one checkpoint and a half: the second save fails inside torch.save's zip writer (its
    RuntimeError "unexpected pos ..." carries the file's ENOSPC). The message says the disk is full,
    where, and that the last good checkpoint is kept; it is, and nothing half-written is left."""
    import seqlab.runs.checkpoint as checkpoint

    run = tmp_path / "run"
    base = ["seq2seq", "train", *S2S] if command == "seq2seq" else ["train", "--data-dir", str(byte_data), *LM]
    assert main([*base, "--max-steps", "2", "--out", str(tmp_path / "size")]) == 0
    size = (tmp_path / "size" / "checkpoints" / "latest.pt").stat().st_size
    monkeypatch.setattr(checkpoint, "open", SmallDisk(int(size * 1.5)), raising=False)
    assert main([*base, "--max-steps", "6", "--checkpoint-interval", "2", "--out", str(run)]) == 1
    err = capsys.readouterr().err
    latest = run / "checkpoints" / "latest.pt"
    assert "error: the disk is full" in err and f"could not write the checkpoint {run / 'checkpoints'}" in err
    assert f"the previous checkpoint {latest} (step 2) is intact: free some space, then continue with --resume" in err
    assert "inline_container" not in err and "Traceback" not in err
    monkeypatch.undo()
    assert read_checkpoint(latest)["iteration"] == 2
    assert not [p for p in run.rglob(".*tmp*")]


# -- a model too large for the machine ----------------------------------------------------------------


@pytest.mark.parametrize("command", ["seq2seq", "lm"])
def test_a_huge_d_model_is_a_sentence_not_an_allocator_error(byte_data, tmp_path, capsys, command):
    base = ["seq2seq", "train", *S2S] if command == "seq2seq" else ["train", "--data-dir", str(byte_data), *LM]
    assert main([*base, "--d-model", "400000", "--max-steps", "2", "--out", str(tmp_path / "r")]) == 1
    err = capsys.readouterr().err
    assert "error: the model is too large:" in err and "parameters need about" in err
    assert "TB to train (weights, gradients, AdamW state)" in err and "choose a smaller --d-model" in err
    assert "DefaultCPUAllocator" not in err


def test_an_engine_set_up_by_hand_holds_the_lock_until_closed(byte_data, tmp_path):
    """A probe of the step time (the demo's) sets an engine up and runs steps without `run`: it
    holds the run directory until `close`, then the real run can have it."""
    from seqlab.lm.task import Trainer
    from seqlab.runs.lock import RunLockedError

    run = tmp_path / "run"
    probe = Trainer(_lm(byte_data, run, max_steps=10))
    probe.prepare()
    probe.train_step(0)
    with pytest.raises(RunLockedError, match=f"process {os.getpid()}"):
        train_lm(_lm(byte_data, run, max_steps=2))
    probe.close()
    assert train_lm(_lm(byte_data, run, max_steps=2)).status == "completed"
    assert not (run / ".lock").exists()
