"""`seqlab interpret` on a run directory: tables, PNG and JSON files holding the library's numbers,
and bad input answered with one line naming it."""

from __future__ import annotations

import json

import pytest
import torch

from seqlab.cli import main
from seqlab.interpret import head_scores, knockout, logit_lens, patch


@pytest.fixture(scope="module")
def loaded(byte_run):
    from seqlab.inference import load_model

    return load_model(run=byte_run).model


def test_each_analysis_writes_a_png_and_its_numbers(byte_run, loaded, tmp_path, capsys):
    out = tmp_path / "out"
    for argv in (["lens", "--text", "hello hello"], ["attribute", "--text", "hello", "--target", "id:7"],
                 ["patch", "--clean", "hello", "--corrupt", "hallo", "--target", "e", "--baseline", "a"],
                 ["knockout", "--text", "hello", "--position", "3", "--target", "l"],
                 ["heads", "--seq-len", "8", "--batches", "2"], ["depends", "--text", "hello"]):
        assert main(["interpret", argv[0], "--run", str(byte_run), "--out", str(out), *argv[1:]]) == 0, argv
        png = (out / f"{argv[0]}.png").read_bytes()
        assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 5000
    printed = capsys.readouterr().out
    assert "recovery of logit[e] - logit[a]" in printed and "1:e/a" in printed
    lens = json.loads((out / "lens.json").read_text())
    torch.testing.assert_close(torch.tensor(lens["top_probs"]), logit_lens(loaded, list(b"hello hello")).top_probs)
    patched = json.loads((out / "patch.json").read_text())
    torch.testing.assert_close(torch.tensor(patched["recovery"]),
                               patch(loaded, list(b"hello"), list(b"hallo"), target=ord("e"), baseline=ord("a")).recovery)
    knocked = json.loads((out / "knockout.json").read_text())
    torch.testing.assert_close(torch.tensor(knocked["drop"]), knockout(loaded, list(b"hello"), position=3,
                                                                        target=ord("l")).drops)
    heads = json.loads((out / "heads.json").read_text())
    torch.testing.assert_close(torch.tensor(heads["scores"]["induction"]),
                               head_scores(loaded, seq_len=8, batches=2)["induction"])


@pytest.mark.parametrize("argv, message", [
    (["patch", "--clean", "hello", "--corrupt", "hell"], "--clean is 5 tokens and --corrupt 4"),
    (["knockout", "--text", "hello", "--position", "5"], "--position 5 is out of range for a prompt of 5 tokens"),
    (["attribute", "--text", "hello", "--target", "id:999"], "target id 999 is outside the vocabulary [0, 256)"),
    (["attribute", "--text", "hello", "--target", "ab"], "--target 'ab' is 2 tokens"),
])
def test_bad_input_is_one_line(byte_run, capsys, argv, message):
    assert main(["interpret", argv[0], "--run", str(byte_run), *argv[1:]]) == 2
    err = capsys.readouterr().err
    assert message in err and err.startswith(f"seqlab interpret {argv[0]}: error:")


def test_out_follows_the_one_out_rule(byte_run, tmp_path, capsys):
    """--out takes a new or empty folder or one of the analyses' own files; another program's folder
    is refused before anything is written, and --overwrite replaces it whole."""
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    (theirs / "report.md").write_text("mine\n")
    argv = ["interpret", "lens", "--run", str(byte_run), "--text", "hello", "--out", str(theirs)]
    assert main(argv) == 1  # as every command refuses another program's folder
    assert "report.md" in capsys.readouterr().err and (theirs / "report.md").read_text() == "mine\n"
    assert sorted(p.name for p in theirs.iterdir()) == ["report.md"]
    shared = tmp_path / "shared"  # two analyses of one prompt share a folder
    for analysis in ("lens", "depends"):
        assert main(["interpret", analysis, "--run", str(byte_run), "--text", "hello", "--out", str(shared)]) == 0
    assert sorted(p.name for p in shared.iterdir()) == ["depends.json", "depends.png", "lens.json", "lens.png"]
    assert main([*argv, "--overwrite"]) == 0
    assert sorted(p.name for p in theirs.iterdir()) == ["lens.json", "lens.png"]
