"""Issue 13, part A: each data-safety defect, injected or fed as bad input, and the outcome asserted.

One test (or a few) per item of the issue; the numbers in the names are the issue's items.
"""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

from seqlab.cli import main
from seqlab.lm.stories import write_corpus
from seqlab.tokenizer import Tokenizer, TokenizerFileError, train_bpe
from seqlab.tokenizer.files import UndeclaredSpecialTokenWarning, write_merges_txt

EOT = "<|endoftext|>"


def snapshot(directory: Path) -> dict[str, bytes]:
    """Every file under ``directory`` (relative path -> bytes): equal snapshots = untouched."""
    return {p.relative_to(directory).as_posix(): p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file()}


def dead_pid() -> int:
    """The id of a process that has exited (and been reaped)."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


@pytest.fixture(scope="module")
def texts(tmp_path_factory):
    folder = tmp_path_factory.mktemp("texts")
    stories = write_corpus(folder / "stories.txt", 60, seed=1)
    valid = write_corpus(folder / "valid.txt", 10, seed=2)
    bad = folder / "bad_utf8.txt"
    bad.write_bytes("Once upon a time.\nThe café\n".encode() + b"caf\xe9 in Latin-1\n")
    empty = folder / "empty.txt"
    empty.write_bytes(b"")
    return {"stories": stories, "valid": valid, "bad": bad, "empty": empty}


def prepare_cli(train, valid, vocab, out) -> int:
    return main(["prepare", "--train", str(train), "--valid", str(valid), "--vocab-size", str(vocab),
                 "--out", str(out), "--no-progress", "--workers", "1"])


# -- 1. prepare into an existing directory ---------------------------------------------------


def test_1_prepare_with_a_bad_input_leaves_the_old_directory_untouched(texts, tmp_path, capsys, monkeypatch):
    import seqlab.tokenizer

    out = tmp_path / "data"
    assert prepare_cli(texts["stories"], texts["valid"], 400, out) == 0
    before = snapshot(out)

    def no_training(*args, **kwargs):
        raise AssertionError("BPE training started before the inputs were checked")

    monkeypatch.setattr(seqlab.tokenizer, "train_bpe", no_training)
    assert prepare_cli(texts["stories"], texts["bad"], 300, out) == 1
    err = capsys.readouterr().err
    offset = texts["bad"].read_bytes().index(b"\xe9 in")  # the Latin-1 byte, on line 3
    assert "valid text" in err and f"bad_utf8.txt, line 3 (byte offset {offset}): not UTF-8" in err
    assert prepare_cli(texts["stories"], texts["empty"], 300, out) == 1
    assert "valid text" in (err := capsys.readouterr().err) and "empty.txt is empty" in err
    assert prepare_cli(texts["empty"], texts["valid"], 300, out) == 1
    assert "train text" in capsys.readouterr().err
    assert snapshot(out) == before and sorted(os.listdir(tmp_path)) == ["data"]


def test_1_prepare_failing_midway_leaves_the_old_directory_untouched(texts, tmp_path, capsys, monkeypatch):
    import seqlab.lm.data as data

    out = tmp_path / "data"
    assert prepare_cli(texts["stories"], texts["valid"], 400, out) == 0
    before = snapshot(out)
    real_save = data.save_tokens

    def full_disk_on_valid(ids, path, vocab_size):
        if Path(path).name == "valid.npy":  # the tokenizer and train.npy are written by now
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real_save(ids, path, vocab_size)

    monkeypatch.setattr(data, "save_tokens", full_disk_on_valid)
    assert prepare_cli(texts["stories"], texts["valid"], 300, out) == 1
    assert f"No space left on device: '{out}'" in capsys.readouterr().err
    assert snapshot(out) == before and sorted(os.listdir(tmp_path)) == ["data"]
    monkeypatch.undo()
    # the new dataset replaces the old one whole: tokenizer, both splits and meta agree
    assert prepare_cli(texts["stories"], texts["valid"], 300, out) == 0
    assert sorted(os.listdir(out)) == [".seqlab-out.json", "meta.json", "tokenizer", "train.npy", "valid.npy"]
    tokenizer = Tokenizer.load(out / "tokenizer")
    assert json.loads((out / "meta.json").read_text())["vocab_size"] == tokenizer.vocab_size == 300
    for split in ("train", "valid"):
        text = texts["stories" if split == "train" else "valid"].read_text(encoding="utf-8")
        assert np.load(out / f"{split}.npy").tolist() == tokenizer.encode(text)


def test_1_prepare_refuses_to_replace_a_directory_holding_other_files(texts, tmp_path, capsys):
    out = tmp_path / "data"
    out.mkdir()
    (out / "TinyStories-train.txt").write_text("the user's text")
    assert prepare_cli(texts["stories"], texts["valid"], 300, out) == 1
    assert "TinyStories-train.txt" in capsys.readouterr().err
    assert snapshot(out) == {"TinyStories-train.txt": b"the user's text"}


# -- 2. a tokenizer directory is written as a unit -------------------------------------------


def test_2_bpe_train_with_a_full_disk_keeps_the_old_tokenizer_and_names_the_file(texts, tmp_path, capsys,
                                                                                  monkeypatch):
    out = tmp_path / "tok"
    args = ["bpe", "train", "--input", str(texts["stories"]), "--special-token", EOT, "--out", str(out),
            "--no-progress", "--workers", "1"]
    assert main(args + ["--vocab-size", "400"]) == 0
    before = snapshot(out)
    real_write_text = Path.write_text

    def disk_full_at_merges(self, text, *args, **kwargs):
        if "merges" in self.name:  # vocab.json has been written by now
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real_write_text(self, text, *args, **kwargs)

    monkeypatch.setattr(Path, "write_text", disk_full_at_merges)
    assert main(args + ["--vocab-size", "300"]) == 1
    assert f"[Errno 28] No space left on device: '{out / 'merges.txt'}'" in capsys.readouterr().err
    monkeypatch.undo()
    assert snapshot(out) == before and os.listdir(tmp_path) == ["tok"]
    assert Tokenizer.load(out).vocab_size == 400


# -- 3. stale temporary files ------------------------------------------------------------------


def test_3_tokenize_and_bpe_train_remove_temporaries_of_dead_processes(texts, tmp_path, capsys):
    dead = dead_pid()
    stale = [f".ids.tmp{dead}.npy", f".loss_curve.tmp{dead}.png", f".tok.tmp{dead}"]
    kept = ["notes.txt", f".ids.tmp{os.getppid()}.npy", ".hidden"]
    for name in stale + kept:
        (tmp_path / name).write_bytes(b"x" * 1000)
    assert main(["bpe", "train", "--input", str(texts["stories"]), "--vocab-size", "300", "--out",
                 str(tmp_path / "tok"), "--no-progress", "--workers", "1"]) == 0
    assert sorted(os.listdir(tmp_path)) == sorted(kept + ["tok"])
    (tmp_path / stale[0]).write_bytes(b"x" * 1000)
    assert main(["tokenize", "--tokenizer", str(tmp_path / "tok"), "--input", str(texts["valid"]),
                 "--out", str(tmp_path / "ids.npy"), "--no-progress"]) == 0
    assert sorted(os.listdir(tmp_path)) == sorted(kept + ["tok", "ids.npy"])


def test_3_prepare_removes_temporaries_of_dead_processes(texts, tmp_path):
    dead = dead_pid()
    out = tmp_path / "data"
    out.mkdir()
    (out / f".train.tmp{dead}.npy").write_bytes(b"x" * 1000)  # a killed run's half-written split
    (tmp_path / f".data.tmp{dead}").mkdir()  # a killed run's half-built directory
    assert prepare_cli(texts["stories"], texts["valid"], 300, out) == 0
    assert sorted(os.listdir(tmp_path)) == ["data"]
    assert sorted(os.listdir(out)) == [".seqlab-out.json", "meta.json", "tokenizer", "train.npy", "valid.npy"]


# -- 4. tokenize --out ------------------------------------------------------------------------


def test_4_tokenize_refuses_to_overwrite_its_input_or_write_a_non_npy(texts, tmp_path, capsys):
    assert main(["bpe", "train", "--input", str(texts["stories"]), "--vocab-size", "300", "--out",
                 str(tmp_path / "tok"), "--no-progress", "--workers", "1"]) == 0
    source = tmp_path / "corpus.npy"  # an input that happens to end in .npy
    source.write_text("Once upon a time")
    link = tmp_path / "same.npy"
    os.link(source, link)
    for out in (source, tmp_path / "." / "corpus.npy", link):
        assert main(["tokenize", "--tokenizer", str(tmp_path / "tok"), "--input", str(source),
                     "--out", str(out), "--no-progress"]) == 2  # a usage error
        assert "is the --input file" in capsys.readouterr().err
    assert source.read_text() == "Once upon a time"
    assert main(["tokenize", "--tokenizer", str(tmp_path / "tok"), "--input", str(texts["valid"]),
                 "--out", str(tmp_path / "valid.txt"), "--no-progress"]) == 2
    assert "does not end in .npy" in capsys.readouterr().err and not (tmp_path / "valid.txt").exists()


# -- 5. special tokens that collide with a byte ----------------------------------------------


def test_5_a_one_byte_special_token_is_refused_before_training(texts, tmp_path, capsys, monkeypatch):
    import seqlab.tokenizer

    monkeypatch.setattr(seqlab.tokenizer, "train_bpe", lambda *a, **k: pytest.fail("trained anyway"))
    assert main(["bpe", "train", "--input", str(texts["stories"]), "--vocab-size", "300", "--special-token",
                 EOT, "--special-token", "(", "--out", str(tmp_path / "tok"), "--no-progress"]) == 2
    assert "special token '(' is the single byte b'('" in capsys.readouterr().err
    assert main(["prepare", "--train", str(texts["stories"]), "--valid", str(texts["valid"]), "--vocab-size",
                 "300", "--special-token", "\n", "--out", str(tmp_path / "data"), "--no-progress"]) == 2
    assert "special token '\\n' is the single byte b'\\n'" in capsys.readouterr().err
    assert os.listdir(tmp_path) == []
    monkeypatch.undo()
    # a two-byte special token cannot share a key: every occurrence is cut out before merging
    assert main(["bpe", "train", "--input", str(texts["stories"]), "--vocab-size", "300", "--special-token",
                 "é", "--out", str(tmp_path / "tok"), "--no-progress", "--workers", "1"]) == 0
    assert Tokenizer.load(tmp_path / "tok").encode("aéb") == [ord("a") - 32, 0, ord("b") - 32]


def test_5_saving_two_ids_with_one_vocab_key_is_refused(tmp_path):
    vocab, merges = train_bpe(Path(__file__), 300, ["("], num_workers=1)  # the library: no CLI check
    tokenizer = Tokenizer(vocab, merges, ["("])
    with pytest.raises(TokenizerFileError, match=r"ids 0 and \d+ are both the token '\('"):
        tokenizer.save(tmp_path / "tok")
    assert not (tmp_path / "tok").exists() and os.listdir(tmp_path) == []


# -- 6. tokenizer files that disagree --------------------------------------------------------


@pytest.fixture
def saved_tokenizer(texts, tmp_path):
    vocab, merges = train_bpe(texts["stories"], 400, [EOT], num_workers=1)
    Tokenizer(vocab, merges, [EOT]).save(tmp_path / "tok")
    return tmp_path / "tok", vocab, merges


def test_6_an_empty_merges_txt_beside_a_full_vocabulary_is_refused(saved_tokenizer):
    directory, vocab, merges = saved_tokenizer
    (directory / "merges.txt").write_text("#version: 0.2\n")
    with pytest.raises(TokenizerFileError) as caught:
        Tokenizer.load(directory)
    message = str(caught.value)
    assert "vocab.json" in message and "merges.txt do not belong together" in message
    # the oracle: every merged token is unexplained, and the first one is the first merge's result
    assert f"{len(merges)} of {len(vocab)} tokens" in message and "0 merges" in message
    first = min(index for index, token in vocab.items() if token == merges[0][0] + merges[0][1])
    assert f"id {first})" in message
    write_merges_txt(directory / "merges.txt", merges[:-1])  # one line short: the last token is unexplained
    with pytest.raises(TokenizerFileError, match=f"1 of {len(vocab)} tokens"):
        Tokenizer.load(directory)


def test_6_a_special_looking_token_that_is_not_declared_warns(saved_tokenizer, cs336_dir):
    directory, vocab, merges = saved_tokenizer
    (directory / "special_tokens.json").unlink()
    with pytest.warns(UndeclaredSpecialTokenWarning, match=r"'<\|endoftext\|>' \(id 0\) looks like a special"):
        tokenizer = Tokenizer.load(directory)
    assert len(tokenizer.encode(EOT)) > 1  # what the warning is about: it is split into pieces
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # declared: no warning, one id
        assert Tokenizer.from_files(directory / "vocab.json", directory / "merges.txt", [EOT]).encode(EOT) == [0]
        # GPT-2's own files agree: its 50,000 merges make every non-byte token
        gpt2 = Tokenizer.from_files(cs336_dir / "gpt2_vocab.json", cs336_dir / "gpt2_merges.txt", [EOT])
    assert gpt2.vocab_size == 50257
    with pytest.warns(UndeclaredSpecialTokenWarning, match="id 50256"):
        Tokenizer.from_files(cs336_dir / "gpt2_vocab.json", cs336_dir / "gpt2_merges.txt")


# -- 7. messages instead of tracebacks (data side) -------------------------------------------


def test_7_a_garbage_npy_is_not_a_token_file(tmp_path):
    from seqlab.tokenizer.token_array import open_tokens

    garbage = tmp_path / "train.npy"
    garbage.write_bytes(bytes(range(256)) * 4)
    with pytest.raises(ValueError, match=r"train\.npy: not a token file: a \.npy file starts with") as caught:
        open_tokens(garbage)
    assert "pickle" not in str(caught.value)
    np.save(tmp_path / "ok.npy", np.arange(10, dtype=np.uint16))
    (tmp_path / "cut.npy").write_bytes((tmp_path / "ok.npy").read_bytes()[:-6])
    with pytest.raises(ValueError, match=r"cut\.npy: not a \.npy array of token ids \(damaged, truncated"):
        open_tokens(tmp_path / "cut.npy")


def test_7_bpe_train_that_stops_short_says_why(tmp_path, capsys):
    corpus = tmp_path / "tiny.txt"
    corpus.write_text("hello hello world")
    vocab, merges = train_bpe(corpus, 1000, [], num_workers=1)  # the oracle: what training can reach
    assert len(vocab) < 1000
    assert main(["bpe", "train", "--input", str(corpus), "--vocab-size", "1000", "--out", str(tmp_path / "tok"),
                 "--no-progress"]) == 0
    err = capsys.readouterr().err
    assert f"the vocabulary has {len(vocab)} tokens, not the requested 1000: after {len(merges)} merges" in err
    assert "17-byte corpus" in err and f"--vocab-size {len(vocab)}" in err


def test_1_the_tinystories_hint_never_prepares_into_the_folder_holding_the_texts(texts, tmp_path, capsys,
                                                                                monkeypatch):
    for case, (folder, expected) in enumerate((("data/tinystories", "data/tinystories_tokens"),
                                               ("data/raw", "data/tinystories"))):
        (tmp_path / str(case)).mkdir()
        monkeypatch.chdir(tmp_path / str(case))
        assert main(["data", "tinystories", "--out", folder, "--input", str(texts["stories"]),
                     str(texts["valid"])]) == 0
        hint = capsys.readouterr().out.splitlines()[-1]
        assert hint.startswith("next: seqlab prepare") and hint.endswith(f"--out {expected}")
        train, valid = hint.split("--train ")[1].split(" --vocab-size")[0].split(" --valid ")
        # following the hint works (a smaller vocabulary than suggested keeps the test fast)
        assert prepare_cli(train, valid, 300, expected) == 0
        assert sorted(os.listdir(folder)) == ["TinyStoriesV2-GPT4-train.txt", "TinyStoriesV2-GPT4-valid.txt"]


def test_7_prepare_that_stops_short_says_why(tmp_path, capsys):
    corpus = tmp_path / "tiny.txt"
    corpus.write_text("hello hello world")
    vocab, merges = train_bpe(corpus, 1000, [EOT], num_workers=1)
    assert prepare_cli(corpus, corpus, 1000, tmp_path / "data") == 0
    err = capsys.readouterr().err
    assert f"the vocabulary has {len(vocab)} tokens, not the requested 1000: after {len(merges)} merges" in err
