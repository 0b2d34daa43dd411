"""Tokenizer: ids equal tiktoken / HF tokenizers, round trips, streaming, files, errors."""

from __future__ import annotations

import json
import os
import tracemalloc

import pytest
from bpe_reference import EOT, FIXTURE_TEXTS, tiktoken_from_ranks
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from seqlab.tokenizer import Tokenizer, TokenizerFileError, train_bpe

# Characters unassigned in Python's Unicode database ("Cn") are left out: the `regex` module and
# tiktoken's Rust regex follow newer Unicode versions of their own, so a letter added after it (e.g.
# U+323B0, Unicode 17) is \p{L} to one engine and not to the other, a difference of versions, not of code.
TEXT_PARTS = st.one_of(
    st.text(st.characters(blacklist_categories=("Cs", "Cn")), max_size=12),
    st.sampled_from([EOT, "<|endoftext", "|>", " ", "  ", "\n", "\n\n", " \n", "\t", "'s", "'ll", "123", "héllo", "日本", "😀", "!!"]),
)
TEXTS = st.lists(TEXT_PARTS, max_size=12).map("".join)


@pytest.mark.parametrize("name", FIXTURE_TEXTS)
def test_gpt2_matches_tiktoken_on_fixture_texts(cs336_dir, gpt2_tokenizer, gpt2_tiktoken, name):
    text = (cs336_dir / name).read_text(encoding="utf-8")
    ids = gpt2_tokenizer.encode(text)
    assert ids == gpt2_tiktoken.encode(text, allowed_special="all")
    assert gpt2_tokenizer.decode(ids) == text


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=TEXTS)
def test_gpt2_matches_tiktoken_on_generated_unicode(gpt2_tokenizer, gpt2_tiktoken, text):
    ids = gpt2_tokenizer.encode(text)
    assert ids == gpt2_tiktoken.encode(text, allowed_special="all")
    assert gpt2_tokenizer.decode(ids) == text


def test_special_token_example(gpt2_tokenizer, gpt2_tiktoken):
    text = f"Hello{EOT} world{EOT}{EOT}"
    ids = gpt2_tokenizer.encode(text)
    assert ids.count(50256) == 3
    assert ids == gpt2_tiktoken.encode(text, allowed_special="all")


@pytest.mark.parametrize(
    "text", ["a" * 100_000, "x" * 30_000 + " " + "😀" * 5_000, "ab" * 20_000], ids=["a*100k", "x+emoji", "ab*20k"]
)
def test_long_pretokens_match_tiktoken(gpt2_tokenizer, gpt2_tiktoken, text):
    assert gpt2_tokenizer.encode(text) == gpt2_tiktoken.encode(text)


def test_long_pretoken_heap_path_matches_textbook_loop(gpt2_tokenizer):
    from seqlab.tokenizer.bpe_apply import _apply_merges_heap, apply_merges

    ranks = {}  # (left id, right id) -> (rank, merged id), from the merges list itself
    by_bytes = {token: index for index, token in gpt2_tokenizer.vocab.items()}
    for rank, (left, right) in enumerate(gpt2_tokenizer.merges):
        ranks.setdefault((by_bytes[left], by_bytes[right]), (rank, by_bytes[left + right]))
    table = gpt2_tokenizer._merge_table
    for word in ["Supercalifragilisticexpialidocious" * 3, "the" * 40, "aaaaaaaaab" * 9, "ööööxö" * 20, "a" * 101]:
        ids = [gpt2_tokenizer._byte_ids[b] for b in word.encode()]
        simple = ids
        while True:  # textbook BPE: merge every occurrence of the best-ranked pair, repeat
            ranked = [(ranks[p][0], p) for p in zip(simple, simple[1:]) if p in ranks]
            if not ranked:
                break
            best = min(ranked)[1]
            merged, i = [], 0
            while i < len(simple):
                if i + 1 < len(simple) and (simple[i], simple[i + 1]) == best:
                    merged.append(ranks[best][1])
                    i += 2
                else:
                    merged.append(simple[i])
                    i += 1
            simple = merged
        assert _apply_merges_heap(ids, table) == simple == apply_merges(ids, table)


@pytest.fixture(scope="module")
def trained(cs336_dir, tmp_path_factory):
    """A tokenizer trained by seqlab on corpus.en (vocab 1000), saved in GPT-2 format."""
    vocab, merges = train_bpe(cs336_dir / "corpus.en", 1000, [EOT])
    tokenizer = Tokenizer(vocab, merges, [EOT])
    directory = tmp_path_factory.mktemp("trained")
    tokenizer.save(directory)
    return tokenizer, directory


@pytest.fixture(scope="module")
def trained_references(trained):
    """tiktoken from the trained ranks and HF tokenizers from the saved files."""
    from tokenizers import Tokenizer as HFTokenizer
    from tokenizers import decoders, models, pre_tokenizers

    tokenizer, directory = trained
    ranks = {token: index for index, token in tokenizer.vocab.items() if index != tokenizer.eot_id}
    hf = HFTokenizer(models.BPE.from_file(str(directory / "vocab.json"), str(directory / "merges.txt")))
    hf.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    hf.decoder = decoders.ByteLevel()
    hf.add_special_tokens([EOT])
    return tiktoken_from_ranks(ranks, {EOT: tokenizer.eot_id}, "seqlab-trained"), hf


def test_trained_matches_tiktoken_built_from_its_ranks(cs336_dir, trained, trained_references):
    tokenizer, _ = trained
    reference, _ = trained_references
    for name in FIXTURE_TEXTS:
        text = (cs336_dir / name).read_text(encoding="utf-8")
        assert tokenizer.encode(text) == reference.encode(text, allowed_special="all")


def test_trained_matches_hf_tokenizers_loaded_from_saved_files(cs336_dir, trained, trained_references):
    tokenizer, _ = trained
    _, hf = trained_references
    for name in FIXTURE_TEXTS:
        text = (cs336_dir / name).read_text(encoding="utf-8") + f"{EOT}tail  text"
        ids = tokenizer.encode(text)
        assert ids == hf.encode(text).ids
        assert hf.decode(ids, skip_special_tokens=False) == text == tokenizer.decode(ids)


@settings(max_examples=150, deadline=None)
@given(text=TEXTS)
def test_trained_matches_references_on_generated_unicode(trained, trained_references, text):
    tokenizer, _ = trained
    reference, hf = trained_references
    ids = tokenizer.encode(text)
    assert ids == reference.encode(text, allowed_special="all") == hf.encode(text).ids
    assert tokenizer.decode(ids) == text


def test_save_load_round_trip(trained, tmp_path):
    tokenizer, directory = trained
    assert sorted(p.name for p in directory.iterdir()) == ["merges.txt", "special_tokens.json", "vocab.json"]
    umask = os.umask(0)
    os.umask(umask)
    # temp files are created 0600; the saved files get what a plain open() would give
    assert all(p.stat().st_mode & 0o777 == 0o666 & ~umask for p in directory.iterdir())
    loaded = Tokenizer.load(directory)
    assert loaded.vocab == tokenizer.vocab and loaded.merges == tokenizer.merges
    assert loaded.special_tokens == [EOT] and loaded.eot_id == 0 and loaded.vocab_size == 1000
    text = "Round trip, naïve café 😀\n\n  done" + EOT
    assert loaded.encode(text) == tokenizer.encode(text)
    assert loaded.decode(loaded.encode(text)) == text


def test_gpt2_files_round_trip_through_save(cs336_dir, gpt2_tokenizer, tmp_path):
    gpt2_tokenizer.save(tmp_path)
    assert json.loads((tmp_path / "vocab.json").read_text(encoding="utf-8")) == json.loads(
        (cs336_dir / "gpt2_vocab.json").read_text(encoding="utf-8")
    )
    original = [line for line in (cs336_dir / "gpt2_merges.txt").read_text(encoding="utf-8").splitlines() if line]
    saved = (tmp_path / "merges.txt").read_text(encoding="utf-8").splitlines()
    assert saved[0].startswith("#version")
    assert saved[1:] == [line for line in original if not line.startswith("#version")]


def test_special_tokens_longest_first_and_added_when_missing(gpt2_tokenizer):
    double = EOT + EOT
    tokenizer = Tokenizer(gpt2_tokenizer.vocab, gpt2_tokenizer.merges, [EOT, double])
    double_id = tokenizer.special_token_ids[double]
    assert double_id == 50257 and tokenizer.vocab[double_id] == double.encode()
    assert tokenizer.special_token_ids[EOT] == 50256
    ids = tokenizer.encode(f"a{EOT}b{double}c{EOT}{EOT}{EOT}")
    a, b, c = (gpt2_tokenizer.encode(x)[0] for x in "abc")
    assert ids == [a, 50256, b, double_id, c, double_id, 50256]
    assert tokenizer.decode(ids) == f"a{EOT}b{double}c{EOT}{EOT}{EOT}"
    # without special tokens, the same text is ordinary text
    plain = Tokenizer(gpt2_tokenizer.vocab, gpt2_tokenizer.merges)
    assert 50256 not in plain.encode(EOT)


@pytest.fixture(scope="module")
def overlapping_specials(gpt2_tokenizer):
    """GPT-2 plus a special token that extends another (longest match must win)."""
    return Tokenizer(gpt2_tokenizer.vocab, gpt2_tokenizer.merges, [EOT, EOT + EOT])


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=TEXTS, cuts=st.lists(st.integers(0, 200), max_size=8))
def test_encode_iterable_equals_encode_across_any_chunking(overlapping_specials, monkeypatch, text, cuts):
    import seqlab.tokenizer.tokenizer as module

    # process after every piece, so every cut is a chunk boundary (a cut may split a special token)
    monkeypatch.setattr(module, "_STREAM_BUFFER_CHARS", 1)
    positions = sorted({min(c, len(text)) for c in cuts} | {0, len(text)})
    pieces = [text[a:b] for a, b in zip(positions, positions[1:])]
    assert list(overlapping_specials.encode_iterable(pieces)) == overlapping_specials.encode(text)


@pytest.mark.parametrize("pieces", [["'l", "l"], ["x'l", "l and"], ["it'v", "e"], ["'r", "e'", "s"]])
def test_encode_iterable_keeps_a_contraction_cut_after_its_first_letter(gpt2_tokenizer, gpt2_tiktoken, monkeypatch,
                                                                        pieces):
    import seqlab.tokenizer.tokenizer as module

    monkeypatch.setattr(module, "_STREAM_BUFFER_CHARS", 1)  # flush after every piece
    text = "".join(pieces)
    assert list(gpt2_tokenizer.encode_iterable(pieces)) == gpt2_tiktoken.encode(text)


def test_encode_iterable_is_lazy(gpt2_tokenizer):
    import itertools

    endless = itertools.repeat("hello world\n")  # never ends: only a lazy encoder can answer
    first = list(itertools.islice(gpt2_tokenizer.encode_iterable(endless), 3000))
    assert first == (gpt2_tokenizer.encode("hello world\n" * 1000))[:3000]


def test_encode_iterable_multi_megabyte_stream_bounded_memory(cs336_dir, gpt2_tokenizer):
    lines = (cs336_dir / "corpus.en").read_text(encoding="utf-8").splitlines(keepends=True)
    repeats = 16  # 16 x 133 KB = 2.1 MB of text, about 490k ids

    def stream():
        for _ in range(repeats):
            yield from lines

    expected = gpt2_tokenizer.encode("".join(lines) * repeats)  # also warms the pre-token cache
    tracemalloc.start()
    count = mismatches = 0
    for token in gpt2_tokenizer.encode_iterable(stream()):
        mismatches += token != expected[count]
        count += 1
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert count == len(expected) and mismatches == 0
    # the ids alone would take ~4 MB as a list; the text ~2 MB
    assert peak < 2_000_000, f"peak {peak / 1e6:.2f} MB for a {repeats * 0.133:.1f} MB stream"


def test_encode_file_parallel_equals_encode(cs336_dir, gpt2_tokenizer, tmp_path):
    text = (cs336_dir / "corpus.en").read_text(encoding="utf-8")
    path = tmp_path / "docs.txt"
    path.write_text(EOT.join(text.split("\n\n")) + "\n tail  ", encoding="utf-8")
    expected = gpt2_tokenizer.encode(path.read_text(encoding="utf-8"))
    ids = gpt2_tokenizer.encode_file(path, workers=2)
    assert ids.dtype.name == "uint16" and ids.tolist() == expected
    chunked = list(gpt2_tokenizer.iter_encode_file(path, workers=2, chunk_bytes=5000))
    assert len(chunked) > 10 and [int(i) for a in chunked for i in a] == expected
    plain = tmp_path / "plain.txt"
    plain.write_text(text, encoding="utf-8")  # no special tokens: cut at newlines
    chunks = list(gpt2_tokenizer.iter_encode_file(plain, workers=1, chunk_bytes=3000))
    assert len(chunks) > 10 and [int(i) for a in chunks for i in a] == gpt2_tokenizer.encode(text)


def test_encode_file_default_workers_fork_above_threshold(cs336_dir, gpt2_tokenizer, gpt2_tiktoken, tmp_path,
                                                          monkeypatch):
    """``workers=None`` forks a pool from PARALLEL_MIN_BYTES on (one process below); ids equal tiktoken."""
    import multiprocessing

    import seqlab.tokenizer.parallel as parallel_module

    text = EOT.join((cs336_dir / "corpus.en").read_text(encoding="utf-8").split("\n\n"))
    path = tmp_path / "docs.txt"
    path.write_text(text, encoding="utf-8")
    contexts = []
    real_get_context = multiprocessing.get_context
    monkeypatch.setattr(multiprocessing, "get_context", lambda *a: contexts.append(a) or real_get_context(*a))
    monkeypatch.setattr(parallel_module.os, "cpu_count", lambda: 2)
    expected = gpt2_tiktoken.encode(text, allowed_special="all")
    size = path.stat().st_size
    monkeypatch.setattr(parallel_module, "PARALLEL_MIN_BYTES", size + 1)
    assert gpt2_tokenizer.encode_file(path).tolist() == expected and contexts == []
    monkeypatch.setattr(parallel_module, "PARALLEL_MIN_BYTES", size)
    chunks = list(gpt2_tokenizer.iter_encode_file(path, chunk_bytes=20_000))
    assert len(chunks) > 3 and len(contexts) == 1
    assert [int(i) for a in chunks for i in a] == expected


def byte_token_ids(tokenizer, text):
    """Ids of the single-byte tokens spelling ``text`` (no merges applied)."""
    by_bytes = {token: index for index, token in tokenizer.vocab.items()}
    return [by_bytes[bytes([b])] for b in text.encode("utf-8")]


def test_decode_replaces_malformed_utf8_and_names_unknown_ids(gpt2_tokenizer):
    euro = byte_token_ids(gpt2_tokenizer, "€")  # 3 single-byte tokens
    assert gpt2_tokenizer.decode_bytes(euro) == "€".encode() and gpt2_tokenizer.decode(euro) == "€"
    assert gpt2_tokenizer.decode(euro[:2]) == "\ufffd"
    assert gpt2_tokenizer.decode(euro[1:] + euro) == "\ufffd\ufffd€"
    with pytest.raises(KeyError, match="99999"):
        gpt2_tokenizer.decode([15496, 99999])
    with pytest.raises(KeyError, match="-1"):
        gpt2_tokenizer.decode_bytes([-1])


def test_stream_decoder_never_splits_a_character(gpt2_tokenizer):
    text = "naïve 😀 日本語 € done"
    ids = gpt2_tokenizer.encode(text)
    decoder = gpt2_tokenizer.stream_decoder()
    pieces = [decoder.feed(i) for i in ids]
    assert "".join(pieces) + decoder.finish() == text
    assert all("\ufffd" not in piece for piece in pieces)
    # text comes out as soon as a character completes: after each id, the output so far is the
    # longest decodable prefix of the bytes so far
    done = b""
    for count, piece in enumerate(pieces, start=1):
        done += piece.encode()
        raw = gpt2_tokenizer.decode_bytes(ids[:count])
        assert raw.startswith(done) and len(raw) - len(done) < 4
    euro = byte_token_ids(gpt2_tokenizer, "€")
    split = gpt2_tokenizer.stream_decoder()
    assert [split.feed(i) for i in euro] == ["", "", "€"]
    assert split.feed(euro[0]) == "" and split.finish() == "\ufffd"  # unfinished tail at the end
    with pytest.raises(KeyError, match="70000"):
        gpt2_tokenizer.stream_decoder().feed(70000)


def _write(path, text):
    path.write_text(text, encoding="utf-8")
    return path


def test_malformed_files_name_file_and_line(tmp_path):
    good_vocab = _write(tmp_path / "v.json", json.dumps({"a": 0}))
    bad_json = _write(tmp_path / "bad.json", '{\n  "a": 0,\n  "b": \n}')
    with pytest.raises(TokenizerFileError, match=r"bad\.json, line 4"):
        Tokenizer.from_files(bad_json, _write(tmp_path / "m.txt", ""))
    bad_id = _write(tmp_path / "bad_id.json", '{\n  "a": 0,\n  "b": "x"\n}')
    with pytest.raises(TokenizerFileError, match=r"bad_id\.json, line 3.*'b'"):
        Tokenizer.from_files(bad_id, tmp_path / "m.txt")
    bad_char = _write(tmp_path / "bad_char.json", '{\n  "a": 0,\n  "a b": 1\n}')
    with pytest.raises(TokenizerFileError, match=r"bad_char\.json, line 3.*' '"):
        Tokenizer.from_files(bad_char, tmp_path / "m.txt")
    bad_merges = _write(tmp_path / "merges.txt", "#version: 0.2\nĠ t\nĠt he extra\n")
    with pytest.raises(TokenizerFileError, match=r"merges\.txt, line 3"):
        Tokenizer.from_files(good_vocab, bad_merges)
    with pytest.raises(FileNotFoundError, match="nope.json"):
        Tokenizer.from_files(tmp_path / "nope.json", bad_merges)
    with pytest.raises(FileNotFoundError, match="nope.txt"):
        Tokenizer.from_files(good_vocab, tmp_path / "nope.txt")
    latin1_merges = tmp_path / "latin1.txt"
    latin1_merges.write_bytes(b"#version: 0.2\r\n\xc4\xa0 t\r\ncaf\xe9 x\r\n")  # CRLF lines, then a Latin-1 byte
    with pytest.raises(TokenizerFileError, match=r"latin1\.txt, line 3: not UTF-8"):
        Tokenizer.from_files(good_vocab, latin1_merges)


def test_inconsistent_vocab_and_merges_are_rejected(gpt2_tokenizer):
    with pytest.raises(ValueError, match="lacks single-byte tokens"):
        Tokenizer({0: b"a"}, [])
    byte_vocab = {i: bytes([i]) for i in range(256)}
    with pytest.raises(ValueError, match="non-empty"):
        Tokenizer(byte_vocab, [], [""])
    with pytest.raises(ValueError, match=r"merge 0 .*b'ab'"):
        Tokenizer(byte_vocab, [(b"a", b"b")])


@pytest.mark.slow
def test_large_file_all_encoders_agree(cs336_dir, gpt2_tokenizer, gpt2_tiktoken, tmp_path):
    """4 MB with documents, CRLF lines and Unicode: encode_file (many chunks, 2 workers), encode,
    encode_iterable over the file's lines and tiktoken give the same ids."""
    text = (cs336_dir / "corpus.en").read_text(encoding="utf-8")
    german = (cs336_dir / "german.txt").read_text(encoding="utf-8")
    documents = [text, text.replace("\n", "\r\n"), german * 20] * 10
    path = tmp_path / "large.txt"
    path.write_text(EOT.join(documents), encoding="utf-8", newline="")
    full = path.read_bytes().decode("utf-8")
    expected = gpt2_tiktoken.encode(full, allowed_special="all")
    assert gpt2_tokenizer.encode(full) == expected
    chunks = list(gpt2_tokenizer.iter_encode_file(path, workers=2, chunk_bytes=1 << 16))
    assert len(chunks) > 15 and [int(i) for chunk in chunks for i in chunk] == expected
    with open(path, encoding="utf-8", newline="") as handle:
        assert list(gpt2_tokenizer.encode_iterable(handle)) == expected
