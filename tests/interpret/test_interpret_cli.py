"""`seqlab interpret` on a run directory: tables, PNG and JSON files holding the library's numbers,
and bad input answered with one line naming it."""

from __future__ import annotations

import json

import pytest
import torch

from seqlab.cli import main
from seqlab.interpret import head_scores, knockout, logit_lens, patch
from tests.interpret.conftest import small_model


@pytest.fixture(scope="module")
def loaded(byte_run):
    from seqlab.lm import load_model

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
    (["attribute", "--text", "hello", "--target", "id:999"], "target: token id 999 is outside the vocabulary [0, 256)"),
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


def test_json_prints_the_result_on_standard_output(byte_run, loaded, capsys):
    assert main(["interpret", "knockout", "--run", str(byte_run), "--text", "hello", "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)  # nothing but the JSON
    expected = knockout(loaded, list(b"hello"))
    assert printed["target"] == expected.target and printed["position"] == 4
    torch.testing.assert_close(torch.tensor(printed["drop"]), expected.drops)


def test_a_run_with_nan_weights_is_refused_and_no_json_holds_nan(byte_run, tmp_path, capsys):
    import shutil

    from seqlab.runs import save_checkpoint

    broken = tmp_path / "broken"
    shutil.copytree(byte_run / "tokenizer", broken / "tokenizer")
    model = small_model(3)
    with torch.no_grad():
        model.layers[0].attn.q_proj.weight[0, 0] = float("nan")
    save_checkpoint(model, None, 1, broken / "checkpoints" / "latest.pt")
    for analysis in ("lens", "knockout", "depends"):
        code = main(["interpret", analysis, "--run", str(broken), "--text", "hello", "--out", str(tmp_path / "out")])
        err = capsys.readouterr().err
        assert code != 0 and "weights are damaged: layers.0.attn.q_proj.weight holds NaN" in err, err
    assert not (tmp_path / "out").exists()


def test_a_saturated_prediction_is_noted_in_the_table_the_json_and_the_picture(tmp_path, capsys, monkeypatch):
    from seqlab.interpret import figures
    from seqlab.runs import save_checkpoint
    from seqlab.tokenizer import Tokenizer
    from tests.interpret.conftest import saturated_model

    run = tmp_path / "run"
    Tokenizer({i: bytes([i]) for i in range(256)}, []).save(run / "tokenizer")
    save_checkpoint(saturated_model(), None, 1, run / "checkpoints" / "latest.pt")
    titles = []
    real = figures.heatmap
    monkeypatch.setattr(figures, "heatmap", lambda **kw: (titles.append((kw["title"], kw["notes"], kw["bound"])),
                                                          real(**kw)))
    assert main(["interpret", "knockout", "--run", str(run), "--text", "hello", "--out", str(tmp_path / "out")]) == 0
    printed = capsys.readouterr().out
    assert "note: the prediction is saturated" in printed and "--target" in printed
    written = json.loads((tmp_path / "out" / "knockout.json").read_text())
    assert written["notes"][0]["code"] == "saturated" and written["p"] > 0.999
    (title, notes, bound), = titles
    assert notes and "saturated" in notes[0]
    assert bound >= 0.05 and "values" in title  # the floor keeps rounding noise pale; the title gives the range


def test_a_seq2seq_run_answers_every_analysis(s2s_run, capsys):
    from seqlab.interpret import greedy_target, token_dependencies
    from seqlab.seq2seq.loading import load_run

    run = load_run(s2s_run, device="cpu")
    src = run.src_vocab.encode("abca")
    base = ["--run", str(s2s_run), "--json"]
    assert main(["interpret", "depends", *base, "--text", "abca"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["arch"] == "rnn-attention" and printed["predicted"][:-1] == greedy_target(run.model, src)
    torch.testing.assert_close(torch.tensor(printed["dependency"]), token_dependencies(run.model, src).values)
    assert main(["interpret", "depends", *base, "--text", "abca", "--path", "state", "--target", "abca"]) == 0
    printed = json.loads(capsys.readouterr().out)
    torch.testing.assert_close(torch.tensor(printed["dependency"]),
                               token_dependencies(run.model, src, target=run.tgt_vocab.encode("abca"),
                                                  path="state").values)
    assert main(["interpret", "knockout", *base, "--text", "abca"]) == 0
    torch.testing.assert_close(torch.tensor(json.loads(capsys.readouterr().out)["drop"]), knockout(run.model, src).drops)
    assert main(["interpret", "lens", *base, "--text", "abca"]) == 0
    torch.testing.assert_close(torch.tensor(json.loads(capsys.readouterr().out)["top_probs"]),
                               logit_lens(run.model, src).top_probs)
    assert main(["interpret", "patch", *base, "--clean", "abca", "--corrupt", "abcb", "--where", "source",
                 "--step", "3", "--target", "abca"]) == 0
    printed = json.loads(capsys.readouterr().out)
    expected = patch(run.model, src, run.src_vocab.encode("abcb"), target=run.tgt_vocab.encode("abca"), where="source",
                     position=3)
    torch.testing.assert_close(torch.tensor(printed["recovery"]), expected.recovery)
    assert printed["step"] == 3 and printed["axis"] == "source" and printed["rows"] == ["embedding"]
    for argv, message in ((["attribute", "--text", "abca"], "pre-norm Transformer decoder"),
                          (["heads"], "head roles are scored on a language model"),
                          (["patch", "--clean", "abca", "--corrupt", "abcb", "--where", "mlp_out"],
                           "--where mlp_out: a seq2seq model patches source, encoder, decoder, context")):
        assert main(["interpret", argv[0], "--run", str(s2s_run), *argv[1:]]) == 2
        assert message in capsys.readouterr().err


def test_patching_shows_a_progress_bar_on_standard_error(byte_run, capsys):
    assert main(["interpret", "patch", "--run", str(byte_run), "--clean", "hello there", "--corrupt",
                 "hallo there", "--target", "e", "--baseline", "a"]) == 0
    err = capsys.readouterr().err
    assert "seqlab interpret patch" in err and "100%" in err and "11/11" in err  # positions done / all


def test_the_cost_estimate_counts_the_rows_each_measurement_runs():
    from seqlab.interpret.cost import CostLimitError, check_cost, estimate

    model = small_model(0)
    patch_cost = estimate(model, "patch", seq=40)
    assert patch_cost.rows == 2 * 40 and estimate(model, "patch", seq=40, heads_rows=True).rows == 2 * 4 * 40
    assert estimate(model, "knockout", seq=40, position=9).rows == 2 * 10
    bigger = estimate(model, "patch", seq=64)
    assert bigger.flops > 2 * patch_cost.flops  # patching grows with the square of the prompt
    with pytest.raises(CostLimitError, match="over this explorer's limit of 0.001 s .* seqlab interpret patch") as error:
        check_cost(bigger, 0.001, "seqlab interpret patch --run R --clean A --corrupt B")
    assert error.value.cost is bigger
    check_cost(bigger, 1e9, "never shown")
