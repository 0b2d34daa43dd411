"""Tokenizer formats: Hugging Face tokenizer.json in and out, tiktoken out, and the Llama 3 pattern
(pre-tokens, chunking, streaming). Oracles: HF `tokenizers`, `transformers.AutoTokenizer`, `tiktoken`."""

from __future__ import annotations

import json

import pytest
from bpe_reference import EOT, FIXTURE_TEXTS
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_bpe_chunking import pieces

from seqlab.cli import main
from seqlab.tokenizer import LLAMA3_PATTERN, Tokenizer, TokenizerFileError, read_tokenizer_json
from seqlab.tokenizer.chunking import find_chunk_boundaries, read_chunk
from seqlab.tokenizer.pretokenize import make_pretokenizer

tokenizers = pytest.importorskip("tokenizers")
EXTRA = "<|extra|>"


def hf_fixture_tokenizer(cs336_dir, style: str):
    """HF tokenizers' own byte-level BPE over the fixture GPT-2 vocab and merges: GPT-2's ByteLevel
    pre-tokenizer, or Llama 3's (a regex Split, then ByteLevel without its regex)."""
    from tokenizers import Regex, decoders, models, pre_tokenizers

    bpe = models.BPE.from_file(str(cs336_dir / "gpt2_vocab.json"), str(cs336_dir / "gpt2_merges.txt"))
    hf = tokenizers.Tokenizer(bpe)
    if style == "gpt2":
        hf.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    else:
        hf.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(LLAMA3_PATTERN), "isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    hf.decoder = decoders.ByteLevel()
    hf.add_special_tokens([EOT, EXTRA])  # EOT is in the vocabulary; EXTRA gets the next id (50257)
    return hf


@pytest.fixture(scope="module", params=["gpt2", "llama3"])
def hf_pair(request, cs336_dir, tmp_path_factory):
    """(HF tokenizer, the same tokenizer.json read by seqlab)."""
    hf = hf_fixture_tokenizer(cs336_dir, request.param)
    path = tmp_path_factory.mktemp(request.param) / "tokenizer.json"
    hf.save(str(path))
    return hf, read_tokenizer_json(path)


def fixture_texts(cs336_dir) -> list[str]:
    texts = [(cs336_dir / name).read_text(encoding="utf-8") for name in FIXTURE_TEXTS]
    return texts + [f"a{EOT}b {EXTRA}{EXTRA}\n\n  c 1234567 it'S\r\n x", "  \n \n\t\n 'll 'LL ¡Olé! 日本語"]


def test_imported_tokenizer_json_gives_hf_ids_on_the_fixtures(cs336_dir, hf_pair):
    hf, ours = hf_pair
    assert ours.special_token_ids == {EOT: 50256, EXTRA: 50257}
    for text in fixture_texts(cs336_dir):
        ids = ours.encode(text)
        assert ids == hf.encode(text, add_special_tokens=False).ids
        assert ours.decode(ids) == text == hf.decode(ids, skip_special_tokens=False)


def test_the_two_styles_differ(hf_pair):
    """The pattern is really used: Llama 3 keeps at most three digits together, GPT-2 all of them."""
    _, ours = hf_pair
    digits = [ours.decode([i]) for i in ours.encode(" 1234567")]
    assert digits == ([" ", "123", "456", "7"] if ours.pattern == LLAMA3_PATTERN else [" 123", "45", "67"])


def test_pattern_survives_save_and_load(hf_pair, tmp_path, cs336_dir):
    _, ours = hf_pair
    ours.save(tmp_path / "tok")
    assert (tmp_path / "tok" / "pre_tokenizer.json").is_file() == (ours.pattern == LLAMA3_PATTERN)
    loaded = Tokenizer.load(tmp_path / "tok")
    assert loaded.pattern == ours.pattern and loaded.special_tokens == ours.special_tokens
    text = fixture_texts(cs336_dir)[-2]
    assert loaded.encode(text) == ours.encode(text)


def test_broken_pre_tokenizer_json_names_the_file(tmp_path, gpt2_tokenizer):
    Tokenizer(gpt2_tokenizer.vocab, gpt2_tokenizer.merges, [EOT], pattern=LLAMA3_PATTERN).save(tmp_path / "tok")
    path = tmp_path / "tok" / "pre_tokenizer.json"
    path.write_text(json.dumps({"pattern": "(unclosed"}))
    with pytest.raises(TokenizerFileError, match=r"pre_tokenizer\.json: .*not a valid regular expression"):
        Tokenizer.load(tmp_path / "tok")
    path.write_text(json.dumps(["x"]))
    with pytest.raises(TokenizerFileError, match=r"pre_tokenizer\.json, line 1: expected a JSON object"):
        Tokenizer.load(tmp_path / "tok")


@pytest.mark.parametrize("style", ["gpt2", "llama3"])
def test_hf_export_loads_in_tokenizers_and_transformers(cs336_dir, tmp_path, style):
    """seqlab tokenizer -> `seqlab bpe export --to hf` -> tokenizers and AutoTokenizer: same ids, same text."""
    transformers = pytest.importorskip("transformers")
    hf = hf_fixture_tokenizer(cs336_dir, style)
    hf.save(str(tmp_path / "tokenizer.json"))
    read_tokenizer_json(tmp_path / "tokenizer.json").save(tmp_path / "tok")  # the seqlab format
    ours = Tokenizer.load(tmp_path / "tok")
    assert main(["bpe", "export", "--to", "hf", str(tmp_path / "tok"), str(tmp_path / "hf")]) == 0
    assert sorted(p.name for p in (tmp_path / "hf").iterdir()) == [
        ".seqlab-out.json", "special_tokens_map.json", "tokenizer.json", "tokenizer_config.json"]
    back = tokenizers.Tokenizer.from_file(str(tmp_path / "hf" / "tokenizer.json"))
    auto = transformers.AutoTokenizer.from_pretrained(str(tmp_path / "hf"))
    assert auto.eos_token == EOT and auto.eos_token_id == 50256 and len(auto) == 50258
    for text in fixture_texts(cs336_dir):
        ids = ours.encode(text)
        assert back.encode(text).ids == ids
        assert auto(text, add_special_tokens=False)["input_ids"] == ids
        assert auto.decode(ids) == text


def test_hf_export_of_a_trained_tokenizer_with_leading_special_ids(cs336_dir, tmp_path):
    """seqlab's trainer numbers special tokens first (id 0): HF must keep every id."""
    from seqlab.tokenizer import train_bpe

    vocab, merges = train_bpe(cs336_dir / "corpus.en", 400, [EOT, EXTRA])
    Tokenizer(vocab, merges, [EOT, EXTRA]).save(tmp_path / "tok")
    ours = Tokenizer.load(tmp_path / "tok")
    assert main(["bpe", "export", "--to", "hf", str(tmp_path / "tok"), str(tmp_path / "hf")]) == 0
    back = tokenizers.Tokenizer.from_file(str(tmp_path / "hf" / "tokenizer.json"))
    assert back.token_to_id(EOT) == 0 and back.token_to_id(EXTRA) == 1
    for text in fixture_texts(cs336_dir):
        assert back.encode(text).ids == ours.encode(text)


@pytest.mark.parametrize("style", ["gpt2", "llama3"])
def test_tiktoken_export_round_trips(cs336_dir, tmp_path, style):
    tiktoken = pytest.importorskip("tiktoken")
    import tiktoken.load

    hf = hf_fixture_tokenizer(cs336_dir, style)
    hf.save(str(tmp_path / "tokenizer.json"))
    read_tokenizer_json(tmp_path / "tokenizer.json").save(tmp_path / "tok")
    ours = Tokenizer.load(tmp_path / "tok")
    assert main(["bpe", "export", "--to", "tiktoken", str(tmp_path / "tok"), str(tmp_path / "tt")]) == 0
    info = json.loads((tmp_path / "tt" / "tiktoken.json").read_text())
    assert info["special_tokens"] == {EOT: 50256, EXTRA: 50257} and info["pat_str"] == ours.pattern
    ranks = tiktoken.load.load_tiktoken_bpe(str(tmp_path / "tt" / "tokenizer.tiktoken"))
    assert len(ranks) == 50256
    encoding = tiktoken.Encoding(name="exported", pat_str=info["pat_str"], mergeable_ranks=ranks,
                                 special_tokens=info["special_tokens"])
    for text in fixture_texts(cs336_dir):
        ids = encoding.encode(text, allowed_special="all")
        assert ids == ours.encode(text)
        assert encoding.decode(ids) == text


def test_tiktoken_export_refuses_ids_out_of_merge_order(tmp_path, capsys):
    vocab = {i: bytes([i]) for i in range(256)}
    vocab[300], vocab[299] = b"ab", b"abc"  # the second merge makes a lower id than the first
    Tokenizer(vocab, [(b"a", b"b"), (b"ab", b"c")]).save(tmp_path / "tok")
    assert main(["bpe", "export", "--to", "tiktoken", str(tmp_path / "tok"), str(tmp_path / "tt")]) == 1
    assert "merge 1 (b'ab' + b'c') makes id 299, not above the id 300" in capsys.readouterr().err
    assert not (tmp_path / "tt").exists()


def test_export_takes_a_run_directory_and_refuses_a_foreign_out(tmp_path, gpt2_tokenizer, capsys):
    gpt2_tokenizer.save(tmp_path / "run" / "tokenizer")
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "notes.txt").write_text("keep me")
    assert main(["bpe", "export", "--to", "hf", str(tmp_path / "run"), str(tmp_path / "busy")]) == 1
    assert "notes.txt" in capsys.readouterr().err and (tmp_path / "busy" / "notes.txt").read_text() == "keep me"
    assert main(["bpe", "export", "--to", "hf", str(tmp_path / "run"), str(tmp_path / "hf")]) == 0
    assert "50257 ids" in capsys.readouterr().out
    assert main(["bpe", "export", "--to", "hf", str(tmp_path / "nothing"), str(tmp_path / "hf2")]) == 1
    assert "nothing" in capsys.readouterr().err


def _edited(cs336_dir, tmp_path, edit) -> str:
    table = json.loads(hf_fixture_tokenizer(cs336_dir, "gpt2").to_str())
    edit(table)
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(table))
    return str(path)


@pytest.mark.parametrize("edit, message", [
    (lambda t: t.update(normalizer={"type": "NFC"}), r"normalizer.type 'NFC' is not supported"),
    (lambda t: t["model"].update(type="WordPiece"), r"model.type 'WordPiece' is not supported"),
    (lambda t: t["model"].update(byte_fallback=True), r"model.byte_fallback True is not supported"),
    (lambda t: t["model"].update(continuing_subword_prefix="##"), r"model.continuing_subword_prefix '##'"),
    (lambda t: t.update(pre_tokenizer={"type": "Metaspace", "replacement": "▁"}),
     r"pre_tokenizer.type 'Metaspace' is not supported"),
    (lambda t: t.update(pre_tokenizer={"type": "Sequence", "pretokenizers": [
        {"type": "Digits", "individual_digits": True}, t["pre_tokenizer"]]}),
     r"pre_tokenizer.pretokenizers\[0\].type 'Digits' is not supported"),
    (lambda t: t["pre_tokenizer"].update(add_prefix_space=True), r"pre_tokenizer.add_prefix_space True"),
    (lambda t: t.update(pre_tokenizer={"type": "Sequence", "pretokenizers": [
        {"type": "Split", "pattern": {"String": " "}, "behavior": "Isolated", "invert": False}]}),
     r"pre_tokenizer.pretokenizers\[0\].pattern \{'String': ' '\} is not supported"),
    (lambda t: t.update(pre_tokenizer={"type": "Sequence", "pretokenizers": [
        {"type": "Split", "pattern": {"Regex": "a"}, "behavior": "Removed", "invert": False}]}),
     r"pre_tokenizer.pretokenizers\[0\].behavior 'Removed'"),
    (lambda t: t.update(decoder={"type": "Metaspace"}), r"decoder.type 'Metaspace' is not supported"),
    (lambda t: t["added_tokens"][0].update(lstrip=True), r"added_tokens\[0\].lstrip \('<\|endoftext\|>'\) True"),
    (lambda t: t["model"]["vocab"].update({"x y": 99_999}), r"model.vocab: token 'x y': character ' ' is not in GPT-2"),
    (lambda t: t["model"]["merges"].append(["Ġ", "nonexistent"]), r"merge 50000 .* is not in the vocabulary"),
])
def test_unsupported_tokenizer_json_is_refused_by_name(cs336_dir, tmp_path, edit, message):
    path = _edited(cs336_dir, tmp_path, edit)
    with pytest.raises(TokenizerFileError, match=message) as caught:
        read_tokenizer_json(path)
    assert str(caught.value).startswith(path)


def test_a_missing_tokenizer_json_says_what_it_wants(tmp_path):
    with pytest.raises(FileNotFoundError, match="tokenizer.json"):
        read_tokenizer_json(tmp_path)


# -- the Llama 3 pattern: pre-tokens against HF, safe cuts for file chunks and streams -------------

LLAMA_PARTS = st.sampled_from(["a", "B", "l", "s", "'", "'s", "'LL", "\n", "\n\n", " ", "  ", "\t", "\r\n", "\r",
                               "1", "12345", "é", "日本", "!", "?!", ".\n", " \n", "x\ny", EOT, "<|endo", "ftext|>"])


@settings(max_examples=300, deadline=None)
@given(parts=st.lists(LLAMA_PARTS, max_size=40))
def test_llama3_pretokens_equal_hf_split(parts):
    from tokenizers import Regex, pre_tokenizers

    text = "".join(parts)
    hf = pre_tokenizers.Split(Regex(LLAMA3_PATTERN), "isolated")
    assert make_pretokenizer(LLAMA3_PATTERN)(text) == [piece for piece, _ in hf.pre_tokenize_str(text)]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(parts=st.lists(LLAMA_PARTS, max_size=60), chunk_bytes=st.integers(1, 40), use_specials=st.booleans())
def test_llama3_chunked_pretokens_equal_whole_file(tmp_path, parts, chunk_bytes, use_specials):
    specials = [EOT] if use_specials else []
    text = "".join(parts)
    path = tmp_path / "t.txt"
    path.write_bytes(text.encode("utf-8"))
    boundaries = find_chunk_boundaries(path, chunk_bytes, specials, max_scan=16, pattern=LLAMA3_PATTERN)
    chunked = [p for a, b in zip(boundaries, boundaries[1:])
               for p in pieces(read_chunk(path, a, b), specials, LLAMA3_PATTERN)]
    assert chunked == pieces(text, specials, LLAMA3_PATTERN)


def test_chunks_of_a_pattern_with_no_known_cut_end_only_at_special_tokens(tmp_path):
    path = tmp_path / "t.txt"
    path.write_text(f"one line\nanother line\n{EOT}more\nlines\n" * 20)
    data = path.read_bytes()
    boundaries = find_chunk_boundaries(path, 10, [EOT], pattern=r"\w+|\s+|.")
    assert len(boundaries) > 5 and all(data[b:b + len(EOT)] == EOT.encode() for b in boundaries[1:-1])
    assert find_chunk_boundaries(path, 10, [], pattern=r"\w+|\s+|.") == [0, len(data)]
    llama = find_chunk_boundaries(path, 10, [], pattern=LLAMA3_PATTERN)
    assert len(llama) > 5 and all(data[b - 1:b + 1] in (b"e\n", b"s\n", b"\na", b"\nl", b"\n<", b"\nm")
                                  for b in llama[1:-1])


@pytest.fixture(scope="module")
def llama_style(gpt2_tokenizer):
    return Tokenizer(gpt2_tokenizer.vocab, gpt2_tokenizer.merges, [EOT], pattern=LLAMA3_PATTERN)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(parts=st.lists(LLAMA_PARTS, max_size=60), cuts=st.lists(st.integers(0, 200), max_size=8))
def test_llama3_encode_iterable_equals_encode_across_any_chunking(llama_style, monkeypatch, parts, cuts):
    import seqlab.tokenizer.tokenizer as module

    monkeypatch.setattr(module, "_STREAM_BUFFER_CHARS", 1)  # every piece is a chance to commit ids
    text = "".join(parts)
    positions = sorted({min(c, len(text)) for c in cuts} | {0, len(text)})
    pieces = [text[a:b] for a, b in zip(positions, positions[1:])]
    assert list(llama_style.encode_iterable(pieces)) == llama_style.encode(text)


def test_llama3_encode_iterable_and_encode_file_on_a_fixture(cs336_dir, llama_style, tmp_path):
    text = (cs336_dir / "corpus.en").read_text(encoding="utf-8")
    expected = llama_style.encode(text)
    lines = text.splitlines(keepends=True)
    assert list(llama_style.encode_iterable(lines)) == expected
    path = tmp_path / "corpus.txt"
    path.write_text(text, encoding="utf-8")
    chunks = list(llama_style.iter_encode_file(path, workers=2, chunk_bytes=3000))
    assert len(chunks) > 10 and [int(i) for chunk in chunks for i in chunk] == expected
