"""`seqlab prepare`: BPE on the train text, both splits encoded, token files and meta written."""

from __future__ import annotations

import json

import numpy as np
import pytest

from seqlab.lm.data import PreparedData, prepare
from seqlab.lm.stories import END_OF_TEXT, write_corpus
from seqlab.tokenizer import Tokenizer
from seqlab.tokenizer.token_array import token_dtype


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    folder = tmp_path_factory.mktemp("corpus")
    return write_corpus(folder / "train.txt", 120, seed=3), write_corpus(folder / "valid.txt", 20, seed=4)


def test_prepare_writes_tokenizer_tokens_and_meta(corpus, tmp_path):
    train_txt, valid_txt = corpus
    meta = prepare(train_txt, valid_txt, 400, tmp_path / "data", progress=False, workers=1)
    tokenizer = Tokenizer.load(tmp_path / "data" / "tokenizer")
    assert tokenizer.vocab_size == meta["vocab_size"] == 400
    data = PreparedData.open(tmp_path / "data")
    for split, path in (("train", train_txt), ("valid", valid_txt)):
        ids = getattr(data, split)
        assert isinstance(ids, np.memmap) and ids.dtype == np.uint16
        text = path.read_text(encoding="utf-8")
        assert ids.tolist() == tokenizer.encode(text)  # the same ids as encoding the whole text
        assert tokenizer.decode(ids.tolist()) == text
        info = meta["splits"][split]
        assert info["tokens"] == len(ids) and info["bytes"] == len(text.encode())
        assert info["bytes_per_token"] == pytest.approx(len(text.encode()) / len(ids), abs=1e-3)
    assert tokenizer.encode(END_OF_TEXT) == [tokenizer.eot_id] and tokenizer.eot_id == 0
    assert json.loads((tmp_path / "data" / "meta.json").read_text()) == meta
    assert token_dtype(65536) == np.uint16 and token_dtype(65537) == np.uint32


def test_prepare_cli_and_missing_input(corpus, tmp_path, capsys):
    from seqlab.cli import main

    train_txt, valid_txt = corpus
    out = tmp_path / "data"
    assert main(["prepare", "--train", str(train_txt), "--valid", str(valid_txt), "--vocab-size", "300",
                 "--out", str(out), "--special-token", "<|endoftext|>", "--no-progress", "--workers", "1"]) == 0
    assert "train:" in capsys.readouterr().out
    assert json.loads((out / "meta.json").read_text())["vocab_size"] == 300
    assert main(["prepare", "--train", str(tmp_path / "none.txt"), "--valid", str(valid_txt),
                 "--vocab-size", "300", "--out", str(out)]) == 1
    assert "none.txt does not exist" in capsys.readouterr().err
    with pytest.raises(FileNotFoundError, match="seqlab prepare"):
        PreparedData.open(tmp_path / "nowhere")


def test_story_corpus_is_seeded_and_consistent():
    from seqlab.lm.stories import generate_stories

    assert generate_stories(5, seed=1) == generate_stories(5, seed=1)
    assert generate_stories(5, seed=1) != generate_stories(5, seed=2)
    for story in generate_stories(50, seed=0):
        hero = story.split(" named ")[1].split(".")[0]
        assert story.count(hero) >= 5  # the story keeps talking about its hero
        assert END_OF_TEXT not in story


def test_token_files_that_are_not_token_ids_are_named(tmp_path):
    from seqlab.tokenizer.token_array import open_tokens

    text = tmp_path / "valid.txt"
    text.write_text("once upon a time")
    with pytest.raises(ValueError, match=r"valid\.txt: expected token ids in a \.npy file"):
        open_tokens(text)
    fake = tmp_path / "fake.npy"
    fake.write_text("once upon a time")
    with pytest.raises(ValueError, match=r"fake\.npy: not a token file: a \.npy file starts with"):
        open_tokens(fake)
    np.save(tmp_path / "floats.npy", np.zeros(4))
    with pytest.raises(ValueError, match="must be integers"):
        open_tokens(tmp_path / "floats.npy")
    np.arange(5, dtype=np.uint16).tofile(tmp_path / "raw.bin")  # raw uint16 is accepted
    assert open_tokens(tmp_path / "raw.bin").tolist() == [0, 1, 2, 3, 4]


def test_a_corrupt_meta_json_is_named(tmp_path):
    (tmp_path / "meta.json").write_text("{\n  vocab_size: 300}")
    with pytest.raises(ValueError, match=r"meta\.json, line 2: invalid JSON"):
        PreparedData.open(tmp_path)
    (tmp_path / "meta.json").write_text('{"dtype": "uint16"}')
    with pytest.raises(ValueError, match=r"meta\.json: expected a JSON object with an integer \"vocab_size\""):
        PreparedData.open(tmp_path)
