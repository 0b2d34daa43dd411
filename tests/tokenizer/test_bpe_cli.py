"""`seqlab bpe train` and `seqlab tokenize` end to end."""

from __future__ import annotations

import json

import numpy as np

from seqlab.cli import main
from seqlab.tokenizer import Tokenizer, train_bpe

EOT = "<|endoftext|>"


def test_bpe_train_and_tokenize(cs336_dir, tmp_path, capsys):
    corpus = cs336_dir / "corpus.en"
    out = tmp_path / "tok"
    assert main(["bpe", "train", "--input", str(corpus), "--vocab-size", "500", "--special-token", EOT,
                 "--out", str(out), "--no-progress"]) == 0
    printed = capsys.readouterr().out
    assert "243 merges" in printed and "peak memory" in printed and "longest token" in printed
    vocab, merges = train_bpe(corpus, 500, [EOT])
    loaded = Tokenizer.load(out)
    assert loaded.vocab == vocab and loaded.merges == merges
    assert json.loads((out / "special_tokens.json").read_text()) == [EOT]

    ids_path = tmp_path / "ids.npy"
    assert main(["tokenize", "--tokenizer", str(out), "--input", str(corpus), "--out", str(ids_path),
                 "--workers", "2", "--no-progress"]) == 0
    ids = np.load(ids_path)
    assert ids.dtype == np.uint16
    assert ids.tolist() == loaded.encode(corpus.read_text(encoding="utf-8"))
    assert "bytes/token" in capsys.readouterr().out


def test_tokenize_uses_uint32_for_large_vocabularies(tmp_path):
    vocab = {i: bytes([i]) for i in range(256)}
    vocab[70_000] = b"ab"
    tokenizer = Tokenizer(vocab, [(b"a", b"b")])
    tokenizer.save(tmp_path / "tok")
    text = tmp_path / "t.txt"
    text.write_text("abc ab")
    assert main(["tokenize", "--tokenizer", str(tmp_path / "tok"), "--input", str(text),
                 "--out", str(tmp_path / "ids.npy"), "--no-progress"]) == 0
    ids = np.load(tmp_path / "ids.npy")
    assert ids.dtype == np.uint32 and ids.tolist() == [70_000, ord("c"), ord(" "), 70_000]


def test_cli_errors(tmp_path, capsys):
    assert main(["bpe", "train", "--input", str(tmp_path / "missing.txt"), "--vocab-size", "300",
                 "--out", str(tmp_path / "o"), "--no-progress"]) == 1
    assert "missing.txt" in capsys.readouterr().err
    text = tmp_path / "t.txt"
    text.write_text("hello")
    assert main(["bpe", "train", "--input", str(text), "--vocab-size", "100", "--out", str(tmp_path / "o"),
                 "--no-progress"]) == 2  # a usage error
    assert "too small" in capsys.readouterr().err
    assert main(["tokenize", "--tokenizer", str(tmp_path / "nope"), "--input", str(text),
                 "--out", str(tmp_path / "ids.npy"), "--no-progress"]) == 1
    assert "nope" in capsys.readouterr().err
    assert main(["bpe", "train", "--input", str(text), "--vocab-size", "300", "--out", str(text),
                 "--no-progress"]) == 2  # a usage error: a file given as the folder
    assert "t.txt exists and is not a directory" in capsys.readouterr().err
    assert main(["tokenize", "--tokenizer", str(tmp_path / "nope"), "--input", str(text),
                 "--out", str(tmp_path), "--no-progress"]) == 2
    assert "is a directory" in capsys.readouterr().err
    assert main(["tokenize", "--tokenizer", str(tmp_path / "nope"), "--input", str(text),
                 "--out", str(tmp_path / "missing" / "ids.npy"), "--no-progress"]) == 1
    assert "missing' does not exist" in capsys.readouterr().err
