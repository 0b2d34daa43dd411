"""Issues 21 and 22 on `seqlab seq2seq translate|eval` and the pairs reader: each test injects the
bad input (flags with slice semantics, text with tabs and newlines, empty text, UTF-16 files,
byte-order marks inside a file, duplicate pairs, runs of the wrong kind) and checks the outcome."""

from __future__ import annotations

import json

import pytest
import torch

from seqlab.cli import main
from seqlab.seq2seq.data import PairsFileError, read_pairs_tsv

pytestmark = pytest.mark.usefixtures("one_thread")


def greedy_oracle(loaded, text: str, limit: int = 30) -> str:
    """Greedy decoding as a loop of full forward passes (no cache), PAD and BOS never chosen."""
    from seqlab.seq2seq.config import BOS_ID, EOS_ID, PAD_ID

    src = torch.tensor([loaded.src_vocab.encode(text)])
    out = [BOS_ID]
    with torch.no_grad():
        for _ in range(limit):
            logits = loaded.model(src, torch.tensor([out]))[0, -1].clone()
            logits[[PAD_ID, BOS_ID]] = float("-inf")
            token = int(logits.argmax())
            if token == EOS_ID:
                break
            out.append(token)
    return loaded.tgt_vocab.decode(out[1:])


def unescape(field: str) -> str:
    """Undo the documented escapes: \\\\ \\t \\n \\r."""
    out, i = [], 0
    while i < len(field):
        if field[i] == "\\":
            out.append({"\\": "\\", "t": "\t", "n": "\n", "r": "\r"}[field[i + 1]])
            i += 2
        else:
            out.append(field[i])
            i += 1
    return "".join(out)


# -- eval flags ------------------------------------------------------------------------------------

@pytest.mark.parametrize("flags, named", [
    (["--limit", "0"], "--limit"), (["--limit", "-1"], "--limit"), (["--show-errors", "-1"], "--show-errors"),
    (["--beam", "0"], "--beam"),
])
def test_seq2seq_eval_refuses_counts_with_slice_semantics(tiny_s2s_run, capsys, flags, named):
    """--limit -1 evaluated all pairs but the last, --limit 0 none; --show-errors -1 all but one."""
    with pytest.raises(SystemExit) as exit_info:
        main(["seq2seq", "eval", "--run", str(tiny_s2s_run), *flags])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert f"argument {named}" in err and ("positive integer" in err or "negative" in err)


@pytest.mark.parametrize("flags, named", [(["--batch-size", "0"], "--batch-size"),
                                          (["--context-length", "-4"], "--context-length")])
def test_seqlab_eval_refuses_the_same_family(tmp_path, capsys, flags, named):
    with pytest.raises(SystemExit) as exit_info:
        main(["eval", "--run", str(tmp_path), "--data", "x.npy", *flags])
    assert exit_info.value.code == 2 and f"argument {named}" in capsys.readouterr().err


def test_seq2seq_eval_limit_and_show_errors_count_what_they_say(tiny_s2s_run, capsys):
    from seqlab.seq2seq.data import load_pairs
    from seqlab.seq2seq.loading import load_run

    loaded = load_run(tiny_s2s_run, device="cpu")
    pairs = load_pairs(loaded.train_config)[1]
    assert main(["seq2seq", "eval", "--run", str(tiny_s2s_run), "--limit", "7", "--show-errors", "0"]) == 0
    out = capsys.readouterr().out
    assert ": 7 pairs," in out and " -> " not in out
    wrong = sum(greedy_oracle(loaded, s) != t for s, t in pairs[:7])
    assert main(["seq2seq", "eval", "--run", str(tiny_s2s_run), "--limit", "7", "--show-errors", "100"]) == 0
    assert capsys.readouterr().out.count(" -> ") == wrong


# -- translate ---------------------------------------------------------------------------------------

def test_translate_output_escapes_tabs_and_newlines(tiny_s2s_run, capsys):
    """A tab or newline in the text made the source<TAB>translation lines ambiguous."""
    from seqlab.seq2seq.loading import load_run

    loaded = load_run(tiny_s2s_run, device="cpu")
    texts = ["ab\tc", "de\nf", "a\\tb", "abc"]
    assert main(["seq2seq", "translate", "--run", str(tiny_s2s_run), *texts]) == 0
    lines = capsys.readouterr().out.split("\n")
    assert lines[-1] == "" and len(lines) == len(texts) + 1
    for text, line in zip(texts, lines):
        assert line.count("\t") == 1
        source, output = line.split("\t")
        assert unescape(source) == text and unescape(output) == greedy_oracle(loaded, text)
    assert lines[0].startswith("ab\\tc\t") and lines[2].startswith("a\\\\tb\t")


@pytest.mark.parametrize("extra", [[], ["--show-attention"]])
def test_translate_refuses_empty_text_like_the_explorer(tiny_s2s_run, capsys, extra):
    """`translate ""` printed a line with an empty source; with --show-attention, a traceback."""
    assert main(["seq2seq", "translate", "--run", str(tiny_s2s_run), "abc", "", *extra]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and "TEXT 2 is empty" in captured.err and "Traceback" not in captured.err


def test_translate_text_that_is_not_utf8(tiny_s2s_run, capsys):
    assert main(["seq2seq", "translate", "--run", str(tiny_s2s_run), "ab\udcffc"]) == 2
    assert "TEXT 1 is not valid UTF-8: byte 0xff at character 3" in capsys.readouterr().err


def test_show_attention_prints_a_legend_of_its_shades(tiny_s2s_run, capsys):
    from seqlab.seq2seq.cli import SHADES, heatmap_legend, heatmap_text

    assert main(["seq2seq", "translate", "--run", str(tiny_s2s_run), "abcd", "--show-attention"]) == 0
    legend = [line for line in capsys.readouterr().out.splitlines() if "shading" in line]
    assert len(legend) == 1 and all(repr(c) in legend[0] for c in SHADES)
    # the legend's ranges are the heatmap's own: every weight falls in the range of its character
    text = heatmap_legend(0.8)
    import re

    ranges = {char: (float(low), float(high)) for char, low, high in re.findall(r"'(.)' ([\d.]+)-([\d.]+)", text)}
    assert sorted(ranges) == sorted(SHADES)
    for weight in torch.linspace(0, 0.8, 57).tolist():
        char = heatmap_text([[weight, 0.8]], ["x"], ["a", "b"]).splitlines()[1][2]  # "x " then the first cell
        low, high = ranges[char]
        assert low - 0.005 <= weight <= high + 0.005, (weight, char, low, high)


# -- runs of the wrong kind --------------------------------------------------------------------------

@pytest.fixture(scope="module")
def lm_run_dir(tmp_path_factory):
    from tests.test_faults_inference import write_run

    return write_run(tmp_path_factory.mktemp("lm"), vocab_size=257)


@pytest.mark.parametrize("command, words", [
    (["seq2seq", "translate", "abc"], ["is a language-model run (written by `seqlab train`)", "`seqlab seq2seq translate` needs a run of "
                                       "`seqlab seq2seq train`", "seqlab generate --run"]),
    (["seq2seq", "eval"], ["is a language-model run (written by `seqlab train`)", "`seqlab seq2seq eval` needs", "seqlab eval --run"]),
    (["seq2seq", "vocab"], ["is a language-model run (written by `seqlab train`)", "`seqlab seq2seq vocab` needs",
                            "seqlab generate --run"]),
])
def test_seq2seq_commands_on_a_language_model_run(lm_run_dir, capsys, command, words):
    """translate printed a Python TypeError text."""
    assert main([*command[:2], "--run", str(lm_run_dir), *command[2:]]) == 2
    err = capsys.readouterr().err
    for word in words:
        assert word in err, err
    assert "TypeError" not in err


@pytest.mark.parametrize("command, needs", [
    (["generate", "--prompt", "x"], "`seqlab generate` needs a run of `seqlab train` or `seqlab demo`"),
    (["eval", "--data", "valid.npy"], "`seqlab eval` needs a run of `seqlab train` or `seqlab demo`"),
])
def test_language_model_commands_on_a_seq2seq_run(tiny_s2s_run, capsys, command, needs):
    """These claimed the run 'may come from a newer seqlab (upgrade seqlab)'."""
    for source in (["--run", str(tiny_s2s_run)], ["--checkpoint", str(tiny_s2s_run / "checkpoints" / "latest.pt")]):
        assert main([*command, *source]) == 2
        err = capsys.readouterr().err
        assert "is a seq2seq run (written by `seqlab seq2seq train`)" in err and needs in err
        assert f"seqlab seq2seq translate --run {tiny_s2s_run}" in err and "newer seqlab" not in err


def test_export_of_a_seq2seq_run(tiny_s2s_run, tmp_path, capsys):
    """`seqlab export --to hf` claimed the run's model fields 'may come from a newer seqlab'."""
    out = tmp_path / "hf"
    assert main(["export", "--to", "hf", str(tiny_s2s_run), str(out)]) == 2  # the wrong kind of run: a usage error
    err = capsys.readouterr().err
    assert "is a seq2seq run (written by `seqlab seq2seq train`)" in err and "newer seqlab" not in err
    assert "`seqlab export --to hf` needs a run of `seqlab train` or `seqlab demo`" in err
    assert f"seqlab seq2seq translate --run {tiny_s2s_run}" in err and not out.exists()


def test_sweep_from_a_seq2seq_run(tiny_s2s_run, tmp_path, capsys):
    """`seqlab sweep --from` a seq2seq run said to continue it with `seqlab seq2seq train --resume`."""
    out = tmp_path / "sweep"
    assert main(["sweep", "--from", str(tiny_s2s_run), "--recipe", "lr", "--max-steps", "2", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "is a seq2seq run (written by `seqlab seq2seq train`)" in err, err
    assert "`seqlab sweep --from` needs a run of `seqlab train` or `seqlab demo`" in err and not out.exists()


def test_accounting_on_a_seq2seq_config(tiny_s2s_run, capsys):
    for given in (tiny_s2s_run / "config.json", tiny_s2s_run):
        assert main(["accounting", "--config", str(given)]) == 2
        err = capsys.readouterr().err
        assert "belongs to a seq2seq run" in err and "seqlab seq2seq translate" in err and "newer seqlab" not in err


def test_accounting_on_a_language_model_run_directory_names_its_config(tmp_path, capsys):
    run = tmp_path / "run"
    (run / "tokenizer").mkdir(parents=True)
    assert main(["accounting", "--config", str(run)]) == 2
    assert f"give --config {run / 'config.json'}" in capsys.readouterr().err


def test_run_kind_reads_the_files(tmp_path, tiny_s2s_run, lm_run_dir):
    from seqlab.runs.kinds import run_kind

    assert run_kind(tiny_s2s_run) == run_kind(tiny_s2s_run / "config.json") == "seq2seq"
    assert run_kind(tiny_s2s_run / "checkpoints" / "latest.pt") == "seq2seq"
    assert run_kind(lm_run_dir) == "lm"
    assert run_kind(tmp_path / "missing") is None and run_kind(tmp_path) is None
    # an LM run's config.json decides even beside a stale vocab.json of another run
    mixed = tmp_path / "mixed"
    mixed.mkdir()
    (mixed / "vocab.json").write_text("{}")
    assert run_kind(mixed) == "seq2seq"
    (mixed / "config.json").write_text(json.dumps({"model": {"d_model": 8}}))
    assert run_kind(mixed) == "lm"


@pytest.mark.parametrize("name, suggests", [("dates", "seqlab seq2seq train --task dates"),
                                            ("fr-en-big", "seqlab seq2seq train --task fr-en"),
                                            ("stories", "seqlab demo --fast")])
def test_a_missing_run_suggests_the_command_that_makes_it(tmp_path, capsys, name, suggests):
    """The explorer's warning for a missing --run runs/dates suggested only `seqlab demo`."""
    from seqlab.explorer.runs import RunRegistry

    missing = tmp_path / "runs" / name
    problem = RunRegistry([str(missing)]).runs[0].problem
    assert problem.code == "run_missing" and suggests in str(problem)
    assert "seqlab seq2seq train" in str(problem) and "seqlab demo" in str(problem)


@pytest.mark.parametrize("command, name, suggests", [
    (["seq2seq", "translate", "--run", "{run}", "abc"], "small", "`seqlab seq2seq train --task TASK --out {run}`"),
    (["seq2seq", "vocab", "--run", "{run}"], "small", "`seqlab seq2seq train --task TASK --out {run}`"),
    (["seq2seq", "eval", "--run", "{run}"], "dates", "`seqlab seq2seq train --task dates --out {run}`"),
    (["generate", "--run", "{run}", "--prompt", "a"], "small", "`seqlab train --out {run}`"),
    (["eval", "--run", "{run}", "--data", "valid.npy"], "small", "`seqlab train --out {run}`"),
    (["generate", "--run", "{run}", "--prompt", "a"], "dates", "`seqlab seq2seq train --task dates --out {run}`"),
])
def test_a_missing_run_is_made_by_the_command_that_reads_it(tmp_path, capsys, command, name, suggests):
    """`seqlab seq2seq vocab --run runs/small` (missing) suggested a language model first."""
    run = str(tmp_path / "runs" / name)
    assert main([part.format(run=run) for part in command]) in (1, 2)  # translate and eval: 1, as for a damaged run
    err = capsys.readouterr().err
    assert f"run directory {run} does not exist" in err and suggests.format(run=run) in err, err


# -- pairs files -------------------------------------------------------------------------------------

@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le", "utf-16-be", "utf-32"])
def test_a_utf16_file_is_refused_even_when_skipping_bad_lines(tmp_path, encoding):
    """Under --skip-bad-lines a UTF-16 file lost its first line and the rest became pairs full of
    NUL characters."""
    path = tmp_path / "pairs.tsv"
    path.write_bytes("Go.\tVa !\nHi.\tSalut !\nRun!\tCours !\n".encode(encoding))
    for skip in (False, True):
        with pytest.raises(PairsFileError) as info:
            read_pairs_tsv(path, skip_bad_lines=skip)
        message = str(info.value)
        assert str(path) in message and ("UTF-16" in message or "UTF-32" in message) and "not UTF-8" in message
        assert "iconv" in message


def test_a_file_whose_every_line_is_bad_says_why_even_when_skipping(tmp_path, capsys):
    """A Latin-1 file under --skip-bad-lines: every line was skipped, unlisted, and the error said
    only that the file 'holds no source<TAB>target pairs'."""
    path = tmp_path / "latin1.tsv"
    path.write_bytes("Café\tcoffee\n\nNoël\tChristmas\n".encode("latin-1"))
    with pytest.raises(PairsFileError) as info:
        read_pairs_tsv(path, skip_bad_lines=True)
    message = str(info.value)
    assert f"{path} holds no usable source<TAB>target pairs: all 2 non-blank line(s) are bad" in message
    assert f"{path}:1: not UTF-8 (byte 0xe9 at column 4)" in message and f"{path}:3: not UTF-8" in message
    assert main(["seq2seq", "train", "--pairs", str(path), "--skip-bad-lines", "--max-steps", "1",
                 "--out", str(tmp_path / "run")]) != 0
    assert "all 2 non-blank line(s) are bad" in capsys.readouterr().err and not (tmp_path / "run").exists()
    path.write_bytes(b"\n\n")  # an empty file is still only that
    with pytest.raises(ValueError, match="holds no source<TAB>target pairs"):
        read_pairs_tsv(path, skip_bad_lines=True)


def test_byte_order_marks_and_nul_bytes_inside_a_file(tmp_path):
    """`cat a.tsv b.tsv` of two files saved with a BOM put U+FEFF at the start of b's first line:
    read as part of the source, it became a character of the vocabulary."""
    a = "\ufeffGo.\tVa !\nHi.\tSalut !\n".encode("utf-8")
    b = "\ufeffRun!\tCours !\nWow!\tÇa alors !\n".encode("utf-8")
    path = tmp_path / "joined.tsv"
    path.write_bytes(a + b + b"Who?\tQui\x00 ?\n")
    with pytest.raises(PairsFileError) as info:
        read_pairs_tsv(path)
    message = str(info.value)
    assert f"{path}:3: byte-order mark (U+FEFF) at column 1" in message and "joined" in message
    assert f"{path}:5: NUL byte at column 9" in message and "2 bad line(s)" in message
    pairs, problems = read_pairs_tsv(path, skip_bad_lines=True)
    assert pairs == [("Go.", "Va !"), ("Hi.", "Salut !"), ("Wow!", "Ça alors !")] and len(problems) == 2
    assert all("\ufeff" not in s + t for s, t in pairs)


def test_the_skip_advice_names_only_a_flag_the_command_has(tmp_path, tiny_s2s_run, capsys):
    """`seqlab seq2seq eval --pairs` suggested --skip-bad-lines, which eval does not have."""
    path = tmp_path / "bad.tsv"
    path.write_text("abc\tcba\nno tab\n", encoding="utf-8")
    assert main(["seq2seq", "eval", "--run", str(tiny_s2s_run), "--pairs", str(path)]) == 1
    err = capsys.readouterr().err
    assert f"{path}:2: no tab" in err and "--skip-bad-lines" not in err and "fix them" in err
    with pytest.raises(PairsFileError, match="pass --skip-bad-lines to leave them out"):
        read_pairs_tsv(path)  # the train command's reader keeps its advice


def test_duplicate_pairs_never_land_in_both_training_and_validation(tmp_path):
    """A pairs file with repeated lines (Tatoeba has some) put copies of one pair on both sides of
    the split, so validation exact match counted memorised pairs."""
    from seqlab.seq2seq.data import load_pairs
    from seqlab.seq2seq.settings import Seq2SeqTrainConfig

    distinct = [(f"s{i}", f"t{i}") for i in range(40)]
    lines = [distinct[i % 40] for i in range(200)]  # every pair 5 times
    path = tmp_path / "dups.tsv"
    path.write_text("".join(f"{s}\t{t}\n" for s, t in lines), encoding="utf-8")
    pairs, problems = read_pairs_tsv(path, drop_duplicates=True)
    assert pairs == distinct
    assert len(problems) == 1 and "160 duplicate pair(s)" in problems[0] and "line 41 repeats line 1" in problems[0]
    assert read_pairs_tsv(path)[0] == lines  # without the option (seq2seq eval --pairs) every line counts
    config = Seq2SeqTrainConfig.from_dict({"task": None, "pairs": str(path), "valid_fraction": 0.25}, source="test")
    train, valid, reported = load_pairs(config)
    assert not set(train) & set(valid)
    assert sorted(train + valid) == sorted(distinct) and reported == problems


@pytest.mark.parametrize("command, code", [(["generate", "--prompt", "x"], 1), (["eval", "--data", "v.npy"], 1),
                                           (["seq2seq", "translate", "x"], 1), (["seq2seq", "eval"], 1),
                                           (["seq2seq", "vocab"], 1)])
def test_a_missing_run_directory_says_which_command_makes_it(tmp_path, capsys, command, code):
    """A missing --run runs/dates should suggest `seqlab seq2seq train` (it named only `seqlab train`)."""
    missing = tmp_path / "runs" / "dates"
    head, rest = (command[:2], command[2:]) if command[0] == "seq2seq" else (command[:1], command[1:])
    assert main([*head, "--run", str(missing), *rest]) == code
    err = capsys.readouterr().err
    assert f"run directory {missing} does not exist" in err
    assert f"seqlab seq2seq train --task dates --out {missing}" in err


@pytest.mark.parametrize("command", [["seq2seq", "translate", "x"], ["seq2seq", "eval"]])
def test_a_file_given_as_the_run_is_called_a_file(tmp_path, capsys, command):
    """--run config.json (a file) was reported as 'run directory ... does not exist'."""
    from seqlab.explorer.runs import describe_run

    path = tmp_path / "config.json"
    path.write_text("{}")
    assert main([*command[:2], "--run", str(path), *command[2:]]) == 1
    err = capsys.readouterr().err
    assert f"{path} is a file, not a run directory: give the folder that `seqlab seq2seq train --out` wrote" in err
    assert "does not exist" not in err
    run = describe_run(str(path))
    assert run.kind == "invalid" and f"{path} is a file, not a run directory" in str(run.problem)
