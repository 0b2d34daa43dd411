"""Exit statuses of every `seqlab` subcommand: 2 for a usage error (a bad flag value, a contradictory
combination of flags, the wrong kind of run or path for the command), 1 for a runtime failure (a missing
or unreadable input). Each command gets one fault of each family, in-process, before any training; the
message must name the flag or file at fault."""

from __future__ import annotations

import json
import socket

import pytest

from seqlab.cli import build_parser, main


@pytest.fixture
def place(tmp_path, monkeypatch):
    """A working directory holding a file, a language-model run, a seq2seq run (their config.json only:
    each command refuses them before loading anything) and a workspace with a damaged progress.json."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "file").write_text("some text\n")
    for name, kind in (("lm", "lm"), ("s2s", "seq2seq")):
        (tmp_path / name).mkdir()
        (tmp_path / name / "config.json").write_text(json.dumps({"kind": kind}))
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "progress.json").write_text("{not json")
    return tmp_path


# (command, arguments with a usage error, text the message names)
USAGE = [
    ("labs", "labs --output file", "--output file"),
    ("explore", "explore --port 70000 --no-browser", "--port"),
    ("accounting", "accounting --preset tinystories --batch-size -1", "--batch-size"),
    ("data", "data tinystories --out d --input a b c", "--input"),
    ("prepare", "prepare --train t --valid v --tokenizer tok --special-token X --out p", "--special-token"),
    ("train", "train --lr -1 --out r", "lr"),
    ("generate", "generate --run lm --temperature -1", "temperature"),
    ("eval", "eval --run s2s --data d.npy", "s2s"),
    ("demo", "demo --minutes 0", "--minutes"),
    ("sweep", "sweep --grid lr=1e-3,2e-3 --out file", "--out file"),
    ("compare", "compare lm --out file", "--out file"),
    ("bpe train", "bpe train --input file --vocab-size 300 --out b --special-token a", "special token 'a'"),
    ("bpe export", "bpe export --to hf lm file", "OUT file"),
    ("tokenize", "tokenize --input file --tokenizer tok --out ids.txt", "--out 'ids.txt'"),
    ("seq2seq train", "seq2seq train --batch-size 0 --out q", "batch_size"),
    ("seq2seq translate", "seq2seq translate --run s2s --beam 0 hello", "--beam"),
    ("seq2seq eval", "seq2seq eval --run lm", "lm is a language-model run"),
    ("seq2seq vocab", "seq2seq vocab --run lm", "lm is a language-model run"),
    ("paths", "paths --tasks bogus --out pth", "--tasks"),
    ("induction", "induction --seed -1 --out ind", "--seed"),
    ("export", "export --to hf s2s ex", "s2s is a seq2seq run"),
    ("import", "import --from hf lm file", "OUT file"),
    ("learn", "learn --lang xx", "--lang"),
    ("learn next", "learn next --lang xx", "--lang"),
    ("learn show", "learn show bogus", "no step 'bogus'"),
    ("learn start", "learn start bogus", "no Implement exercise 'bogus'"),
    ("learn check", "learn check attention --time-limit 0", "--time-limit"),
    ("learn solution", "learn solution bogus", "no Implement exercise 'bogus'"),
    ("learn answer", "learn answer bogus 1", "no Trace question 'bogus'"),
    ("learn card", "learn card bogus", "no card 'bogus'"),
    ("learn hint", "learn hint bogus", "no step 'bogus'"),
    ("learn reset", "learn reset bogus", "no Implement exercise 'bogus'"),
    ("learn grade", "learn grade file --out r --time-limit 0", "--time-limit"),
    ("learn notebook", "learn notebook bogus --out nb", "no part 'bogus'"),
    ("learn site", "learn site", "--out DIR is required"),
    ("interpret", "interpret lens --run lm --device bogus --text hi", "bogus"),
]

# (command, arguments with a runtime failure, text the message names)
FAILURE = [
    ("labs", "labs --output file/sub", "file/sub"),
    ("explore", "explore --port {port} --no-browser", "{port}"),
    ("accounting", "accounting --config missing.toml", "missing.toml"),
    ("data", "data tinystories --out d --input missing", "missing"),
    ("prepare", "prepare --train missing.txt --valid missing.txt --vocab-size 300 --out p", "missing.txt"),
    ("train", "train --config missing.toml --out r", "missing.toml"),
    ("generate", "generate --run missing", "missing"),
    ("eval", "eval --run missing --data d.npy", "missing"),
    ("demo", "demo --fast --out file/sub", "file/"),
    ("sweep", "sweep --config missing.toml --grid lr=1e-3,2e-3 --out sw", "missing.toml"),
    ("compare", "compare missing --out c", "missing"),
    ("bpe train", "bpe train --input missing.txt --vocab-size 300 --out b", "missing.txt"),
    ("bpe export", "bpe export --to hf missing e", "missing"),
    ("tokenize", "tokenize --input file --tokenizer missing --out ids.npy", "missing"),
    ("seq2seq train", "seq2seq train --pairs missing.tsv --out q", "missing.tsv"),
    ("seq2seq translate", "seq2seq translate --run missing hello", "missing"),
    ("seq2seq eval", "seq2seq eval --run missing", "missing"),
    ("seq2seq vocab", "seq2seq vocab --run missing", "missing"),
    ("paths", "paths --fast --out file/sub", "file/sub"),
    ("induction", "induction --fast --out file/sub", "file/sub"),
    ("export", "export --to hf missing ex", "missing"),
    ("import", "import --from hf missing ex", "missing"),
    ("learn", "learn --workspace ws", "ws/progress.json"),
    ("learn next", "learn --workspace ws next", "ws/progress.json"),
    ("learn start", "learn --workspace file start attention", "file/attention.py"),
    ("learn check", "learn --workspace ws check attention", "ws/attention.py"),
    ("learn reset", "learn --workspace file reset attention", "file"),
    ("learn grade", "learn grade missing --out r", "missing is not a folder of submissions"),
    ("learn notebook", "learn notebook recurrence --out file/nb", "cannot write into file/nb"),
    ("learn site", "learn site --out file/site", "cannot write the site into file/site"),
    ("interpret", "interpret lens --run missing --text hi", "missing"),
]


def _run(argv: list[str], capsys) -> tuple[int, str]:
    try:
        status = main(argv)
    except SystemExit as exit_:  # argparse
        status = exit_.code
    return status, capsys.readouterr().err


@pytest.mark.parametrize("command, line, named", USAGE, ids=[case[0] for case in USAGE])
def test_usage_error_exits_2(command, line, named, place, capsys):
    status, err = _run(line.split(), capsys)
    assert status == 2, err
    assert named in err
    assert "Traceback" not in err


@pytest.mark.parametrize("command, line, named", FAILURE, ids=[case[0] for case in FAILURE])
def test_failure_exits_1(command, line, named, place, capsys):
    with socket.socket() as taken:  # a port someone else listens on: `explore` cannot bind it
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        status, err = _run(line.format(port=port).split(), capsys)
    assert status == 1, err
    assert named.format(port=port) in err
    assert "Traceback" not in err


def _leaf_commands(parser, prefix=()):
    """Every command line prefix with a handler: ("labs",), ("bpe", "train"), ("learn",), ("learn", "next"), ..."""
    import argparse

    if prefix and prefix[0] in ("data", "interpret") and len(prefix) == 2:  # one handler for all their choices
        yield prefix[0]
        return
    if prefix and "func" in parser._defaults:
        yield " ".join(prefix)
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _leaf_commands(sub, prefix + (name,))


# commands that read no input, so nothing there can fail at run time: a step's text, a reference
# solution, a question or a card (a progress.json that cannot be read is only a warning there)
READ_NOTHING = {"learn show", "learn solution", "learn answer", "learn card", "learn hint"}


def test_every_command_is_covered():
    """A command added later must get its two cases here."""
    commands = set(_leaf_commands(build_parser()))
    assert commands == {case[0] for case in USAGE}
    assert commands - READ_NOTHING == {case[0] for case in FAILURE}


@pytest.mark.parametrize("line", ["learn --workspace ws answer trace_perplexity 1",
                                  "learn --workspace ws card explain_order",
                                  "learn --workspace ws hint trace_clipping"])
def test_unreadable_progress_is_a_warning(line, place, capsys):
    """`answer` exits 1 for a wrong answer, `card` and `hint` 0; a damaged progress.json changes none."""
    status, err = _run(line.split(), capsys)
    assert status == (1 if "answer" in line else 0)
    assert "warning: progress not saved: ws/progress.json" in err
