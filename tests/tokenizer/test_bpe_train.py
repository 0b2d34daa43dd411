"""train_bpe: the CS336 reference, the textbook example, a naive oracle, determinism, errors."""

from __future__ import annotations

import json
import random
from collections import Counter

import pytest
import regex

from seqlab.tokenizer import merge_trace, train_bpe, whitespace_pretokenize
from seqlab.tokenizer.bytes_unicode import (
    bytes_to_unicode,
    text_to_token,
    token_to_text,
)
from seqlab.tokenizer.pretokenize import GPT2_PATTERN

EOT = "<|endoftext|>"
HANDOUT = "low low low low low lower lower widest widest widest newest newest newest newest newest newest"
HANDOUT_MERGES = [(b"s", b"t"), (b"e", b"st"), (b"o", b"w"), (b"l", b"ow"), (b"w", b"est"), (b"n", b"e")]


def naive_bpe(text: str, vocab_size: int, special_tokens: list[str]) -> list[tuple[bytes, bytes]]:
    """Textbook BPE: recount every pair before every merge (the oracle for the incremental trainer)."""
    pieces = regex.split("|".join(regex.escape(t) for t in special_tokens), text) if special_tokens else [text]
    words = Counter()
    for piece in pieces:
        for pretoken in regex.findall(GPT2_PATTERN, piece):
            words[tuple(bytes([b]) for b in pretoken.encode("utf-8"))] += 1
    merges = []
    while 256 + len(special_tokens) + len(merges) < vocab_size:
        pairs = Counter()
        for word, count in words.items():
            for pair in zip(word, word[1:]):
                pairs[pair] += count
        if not pairs:
            break
        best = max(pairs, key=lambda pair: (pairs[pair], pair))
        merges.append(best)
        merged = Counter()
        for word, count in words.items():
            out, i = [], 0
            while i < len(word):
                if i + 1 < len(word) and (word[i], word[i + 1]) == best:
                    out.append(word[i] + word[i + 1])
                    i += 2
                else:
                    out.append(word[i])
                    i += 1
            merged[tuple(out)] += count
        words = merged
    return merges


def test_reproduces_cs336_reference_exactly(cs336_dir):
    vocab, merges = train_bpe(cs336_dir / "corpus.en", 500, [EOT])
    reference_merges = [
        tuple(text_to_token(part) for part in line.rstrip("\n").split(" "))
        for line in (cs336_dir / "train-bpe-reference-merges.txt").read_text(encoding="utf-8").splitlines()
    ]
    assert merges == reference_merges
    reference_vocab = json.loads((cs336_dir / "train-bpe-reference-vocab.json").read_text(encoding="utf-8"))
    # id for id: special first, 256 bytes in GPT-2 order, then merges
    assert {token_to_text(token): index for index, token in vocab.items()} == reference_vocab


def test_id_layout():
    from seqlab.tokenizer.trainer import train_bpe_from_counts

    vocab, merges = train_bpe_from_counts({"hello": 3, "help": 2}, 262, ["<a>", "<b>"])
    assert vocab[0] == b"<a>" and vocab[1] == b"<b>"
    assert [vocab[2 + i] for i in range(256)] == [bytes([b]) for b in bytes_to_unicode()]
    assert sorted(vocab[i] for i in range(2, 258)) == [bytes([b]) for b in range(256)]
    assert [vocab[258 + i] for i in range(len(merges))] == [a + b for a, b in merges]
    # h-e and e-l both occur 5 times: the greater pair (h, e) wins, then (he, l) occurs 5 times
    assert merges[:2] == [(b"h", b"e"), (b"he", b"l")]


def test_handout_example_with_whitespace_pretokenizer(tmp_path):
    corpus = tmp_path / "handout.txt"
    corpus.write_text(HANDOUT)
    vocab, merges = train_bpe(corpus, 256 + 1 + 6, [EOT], pretokenizer=whitespace_pretokenize)
    assert merges == HANDOUT_MERGES
    assert vocab[257 + 5] == b"ne"


def test_pluggable_pretokenizer_in_worker_processes(tmp_path):
    corpus = tmp_path / "handout.txt"
    corpus.write_text((HANDOUT + "\n") * 40)
    split_words = lambda text: text.split()  # noqa: E731  (a lambda: workers must not need to pickle it)
    _, merges = train_bpe(corpus, 256 + 6, [], pretokenizer=split_words, num_workers=2, chunk_bytes=500)
    assert merges == HANDOUT_MERGES


def test_merge_trace_handout():
    steps = merge_trace({"low": 5, "lower": 2, "widest": 3, "newest": 6}, 6)
    assert [tuple(step["chosen"]) for step in steps] == [(a.decode(), b.decode()) for a, b in HANDOUT_MERGES]
    first = steps[0]
    assert first["best_count"] == 9
    assert first["tied"] == [["s", "t"], ["e", "s"]]  # tie: ('s','t') > ('e','s')
    assert first["pair_counts"][:2] == [["s", "t", 9], ["e", "s", 9]]
    # naive recount of the first step's table
    naive = Counter()
    for word, count in {"low": 5, "lower": 2, "widest": 3, "newest": 6}.items():
        for pair in zip(word, word[1:]):
            naive[pair] += count
    assert {(a, b): c for a, b, c in first["pair_counts"]} == naive
    assert steps[-1]["words"]["newest"] == ["ne", "west"]
    assert steps[-1]["words"]["lower"] == ["low", "e", "r"]


def test_merge_trace_stops_when_no_pair_left():
    steps = merge_trace({"ab": 1}, 5)
    assert len(steps) == 1 and steps[0]["words"] == {"ab": ["ab"]}


@pytest.mark.parametrize("vocab_size", [300, 420])
def test_incremental_trainer_matches_naive_recount(cs336_dir, tmp_path, vocab_size):
    text = (cs336_dir / "corpus.en").read_text(encoding="utf-8")[:20_000] + f"{EOT}ünïcödé 日本語 {EOT} aaaa"
    path = tmp_path / "small.txt"
    path.write_text(text, encoding="utf-8")
    _, merges = train_bpe(path, vocab_size, [EOT])
    assert merges == naive_bpe(text, vocab_size, [EOT])


def _check_against_recount_at_every_step(counts: dict[str, int], max_merges: int) -> int:
    """Run PairCounts, recounting every pair from the current segmentations before each merge;
    returns the number of merges done (stops early when no pair is left)."""
    from seqlab.tokenizer.merges import PairCounts, choose_merge

    names = list(counts)
    token_bytes = [bytes([b]) for b in range(256)]
    state = PairCounts([list(n.encode()) for n in names], [counts[n] for n in names], token_bytes)
    for step in range(max_merges):
        recount = Counter()
        for index, name in enumerate(names):
            word = state.segmentation(index)
            assert b"".join(token_bytes[t] for t in word) == name.encode()
            for pair in zip(word, word[1:]):
                recount[pair] += counts[name]
        assert state.pair_counts() == recount
        best = state.best_pair()
        if not recount:
            assert best is None
            return step
        assert best == choose_merge(recount, token_bytes)
        state.merge(best, state.add_token(token_bytes[best[0]] + token_bytes[best[1]]))
    return max_merges


def test_heap_choice_and_incremental_counts_match_recount_at_every_step(cs336_dir):
    from seqlab.tokenizer.pretokenize import gpt2_pretokenize

    counts = Counter(gpt2_pretokenize((cs336_dir / "corpus.en").read_text(encoding="utf-8")[:15_000] + " aaaaaa"))
    assert _check_against_recount_at_every_step(counts, 150) == 150


def test_words_holding_a_pair_several_times_match_recount_at_every_step():
    """A two-letter alphabet gives words like ``abab`` and ``aaaaa`` in which one merge hits a word
    several times (the whole-word recount path) and new tokens end up next to each other."""
    rng = random.Random(0)
    names = {"".join(rng.choice("ab") for _ in range(rng.randint(1, 10))) for _ in range(80)}
    names |= {"aaaaaaa", "abababab", "aabaabaab", "bbbb"}
    counts = {name: rng.randint(1, 6) for name in sorted(names)}
    merges = _check_against_recount_at_every_step(counts, 200)
    assert 10 < merges < 200  # ran until every word was a single token


def test_same_merges_whatever_workers_and_chunking(cs336_dir, tmp_path):
    documents = (cs336_dir / "corpus.en").read_text(encoding="utf-8").split("\n\n")
    path = tmp_path / "docs.txt"
    path.write_text(EOT.join(documents), encoding="utf-8")
    reference = train_bpe(path, 600, [EOT], num_workers=1, chunk_bytes=1 << 30)
    from seqlab.tokenizer.chunking import find_chunk_boundaries

    assert len(find_chunk_boundaries(path, 4096, [EOT])) > 10
    for workers, chunk_bytes in [(2, 4096), (1, 777), (2, None)]:
        assert train_bpe(path, 600, [EOT], num_workers=workers, chunk_bytes=chunk_bytes) == reference


def test_same_merges_without_special_tokens_in_file(cs336_dir, tmp_path):
    path = tmp_path / "plain.txt"
    path.write_text((cs336_dir / "corpus.en").read_text(encoding="utf-8"), encoding="utf-8")
    reference = train_bpe(path, 400, [], num_workers=1, chunk_bytes=1 << 30)
    assert train_bpe(path, 400, [], num_workers=2, chunk_bytes=3000) == reference


def test_no_pair_crosses_a_special_token(tmp_path):
    path = tmp_path / "c.txt"
    path.write_text(f"ab{EOT}cd{EOT}ab", encoding="utf-8")
    vocab, merges = train_bpe(path, 300, [EOT])
    assert merges == [(b"a", b"b"), (b"c", b"d")]  # stops when no pair is left
    assert len(vocab) == 257 + 2


def test_errors(tmp_path):
    good = tmp_path / "good.txt"
    good.write_text("hello world")
    with pytest.raises(ValueError, match="vocab_size=257 is too small.*258"):
        train_bpe(good, 257, [EOT, "<pad>"])
    with pytest.raises(FileNotFoundError, match="missing.txt"):
        train_bpe(tmp_path / "missing.txt", 300, [EOT])
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    with pytest.raises(ValueError, match="empty"):
        train_bpe(empty, 300, [EOT])
    only_special = tmp_path / "special.txt"
    only_special.write_text(EOT * 3)
    with pytest.raises(ValueError, match="empty"):
        train_bpe(only_special, 300, [EOT])
    with pytest.raises(ValueError, match="non-empty"):
        train_bpe(good, 300, [""])
    with pytest.raises(ValueError, match="distinct"):
        train_bpe(good, 300, [EOT, EOT])
    with pytest.raises(ValueError, match="num_merges"):
        merge_trace({"ab": 1}, -1)


def test_merge_loop_restores_the_cycle_collector_state():
    import gc

    from seqlab.tokenizer.trainer import train_bpe_from_counts

    assert gc.isenabled()
    _, merges = train_bpe_from_counts({"low": 5, "lower": 2}, 258)
    assert merges == [(b"o", b"w"), (b"l", b"ow")] and gc.isenabled()  # tie (l,o)=(o,w)=7: greater first
    gc.disable()
    try:
        with pytest.raises(ValueError, match="too small"):
            train_bpe_from_counts({"low": 1}, 10)
        train_bpe_from_counts({"low": 1}, 257)
        assert not gc.isenabled()  # a caller's choice to keep it off is kept
    finally:
        gc.enable()


def test_descending_bytes_key_reverses_byte_string_order():
    from seqlab.tokenizer.merges import descending_bytes_key

    rng = random.Random(1)
    tokens = {bytes(rng.randrange(256) for _ in range(rng.randint(1, 4))) for _ in range(3000)}
    tokens |= {b"a", b"ab", b"abc", b"\xff", b"\xff\xff", b"\x00", b"\x00\x00"}  # prefixes, extremes
    assert sorted(tokens, key=descending_bytes_key) == sorted(tokens, reverse=True)
