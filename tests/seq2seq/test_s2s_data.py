"""Seq2seq vocabularies, TSV pairs, batching and metrics (oracles: naive loops and a hand BLEU)."""

from __future__ import annotations

import math
from collections import Counter

import pytest
import torch

from seqlab.seq2seq.builtin_tasks import make_pairs
from seqlab.seq2seq.config import BOS_ID, EOS_ID, PAD_ID, UNK_ID
from seqlab.seq2seq.data import (
    PairsFileError,
    collate,
    encode_pairs,
    pad_sequences,
    read_pairs_tsv,
    split_by_length,
)
from seqlab.seq2seq.metrics import (
    accuracy_by_length,
    bleu,
    exact_match,
    teacher_forced_accuracy,
    token_accuracy,
)
from seqlab.seq2seq.vocab import BpeVocab, CharVocab, train_bpe_vocab, vocab_from_dict

# -- vocabularies --------------------------------------------------------------------------------


def test_char_vocab_round_trip_and_unknown():
    pairs = make_pairs("dates", 500, seed=0)
    vocab = CharVocab.from_texts(s for s, _ in pairs)
    assert vocab.size == 4 + len({c for s, _ in pairs for c in s})
    for source, _ in pairs[:50]:
        ids = vocab.encode(source)
        assert min(ids) >= 4 and vocab.decode(ids) == source
        assert vocab.decode([BOS_ID, *ids, EOS_ID, PAD_ID]) == source
    assert vocab.encode("§") == [UNK_ID] and vocab.decode([UNK_ID]) == "\u2047"
    again = vocab_from_dict(vocab.to_dict())
    assert again.encode("29 November 2026") == vocab.encode("29 November 2026")
    with pytest.raises(ValueError, match="unknown vocabulary kind"):
        vocab_from_dict({"kind": "words"}, source="run/vocab.json")


def test_bpe_vocab_trained_here_keeps_special_ids_and_round_trips():
    texts = [t for pair in make_pairs("fr-en", 400, seed=0) for t in pair]
    vocab = train_bpe_vocab(texts, 300)
    assert vocab.offset == 0 and vocab.size == 300
    assert [vocab.tokenizer.vocab[i] for i in range(4)] == [b"<pad>", b"<bos>", b"<eos>", b"<unk>"]
    for text in texts[:40]:
        ids = vocab.encode(text)
        assert min(ids) >= 4 and vocab.decode(ids) == text
        assert len(ids) < len(text.encode())  # merges shorten the sequence
    again = vocab_from_dict(vocab.to_dict())
    assert again.encode(texts[0]) == vocab.encode(texts[0]) and again.size == vocab.size


def test_bpe_vocab_of_another_tokenizer_is_shifted(tmp_path):
    from seqlab.tokenizer import Tokenizer, train_bpe

    corpus = tmp_path / "c.txt"
    corpus.write_text("the cat sleeps\nthe dog runs\n" * 20, encoding="utf-8")
    vocab, merges = train_bpe(corpus, 270, ["<|endoftext|>"])
    tokenizer = Tokenizer(vocab, merges, ["<|endoftext|>"])
    wrapped = BpeVocab(tokenizer)
    assert wrapped.offset == 4 and wrapped.size == tokenizer.vocab_size + 4
    assert wrapped.encode("the cat") == [i + 4 for i in tokenizer.encode("the cat")]
    assert wrapped.decode([BOS_ID, *wrapped.encode("the cat"), EOS_ID]) == "the cat"


# -- TSV pairs -------------------------------------------------------------------------------------


def test_read_pairs_tsv_anki_format(tmp_path):
    path = tmp_path / "fra.txt"
    path.write_bytes("\ufeffGo.\tVa !\tCC-BY 2.0 (France) Attribution: tatoeba.org #2877272\r\n"
                     "\n"
                     "Hi.\tSalut !\n".encode("utf-8"))
    pairs, problems = read_pairs_tsv(path)
    assert pairs == [("Go.", "Va !"), ("Hi.", "Salut !")] and problems == []


def test_read_pairs_tsv_reports_bad_lines_with_numbers(tmp_path):
    path = tmp_path / "bad.tsv"
    path.write_bytes(b"a\tb\nno tab here\n\tonly target\nsource only\t \nok\tfine\n\xff\xfe\tx\n")
    with pytest.raises(PairsFileError) as info:
        read_pairs_tsv(path)
    message = str(info.value)
    assert f"{path}:2: no tab" in message
    assert f"{path}:3: empty source" in message
    assert f"{path}:4: empty target" in message
    assert f"{path}:6: not UTF-8" in message
    assert "--skip-bad-lines" in message and "4 bad line(s)" in message
    pairs, problems = read_pairs_tsv(path, skip_bad_lines=True)
    assert pairs == [("a", "b"), ("ok", "fine")] and len(problems) == 4
    with pytest.raises(FileNotFoundError, match="missing.tsv"):
        read_pairs_tsv(tmp_path / "missing.tsv")
    empty = tmp_path / "empty.tsv"
    empty.write_text("\n\n")
    with pytest.raises(ValueError, match="holds no source<TAB>target pairs"):
        read_pairs_tsv(empty)


# -- batches ---------------------------------------------------------------------------------------


def test_collate_matches_a_naive_loop():
    examples = [([5, 6, 7], [8]), ([9], [10, 11, 12]), ([4, 4], [])]
    batch = collate(examples)
    for row, (src, tgt) in enumerate(examples):
        S, T = batch.src.shape[1], batch.tgt_in.shape[1]
        assert batch.src[row].tolist() == src + [PAD_ID] * (S - len(src))
        assert batch.src_mask[row].tolist() == [True] * len(src) + [False] * (S - len(src))
        assert batch.tgt_in[row].tolist() == [BOS_ID] + tgt + [PAD_ID] * (T - len(tgt) - 1)
        assert batch.tgt_out[row].tolist() == tgt + [EOS_ID] + [PAD_ID] * (T - len(tgt) - 1)
        assert batch.tgt_mask[row].tolist() == [True] * (len(tgt) + 1) + [False] * (T - len(tgt) - 1)
    assert batch.src.dtype == torch.long and batch.src_mask.dtype == torch.bool
    assert batch.target_tokens == int(batch.tgt_mask.sum()) == 2 + 4 + 1
    with pytest.raises(ValueError, match="no sequences"):
        pad_sequences([])


def test_split_by_length():
    vocab = CharVocab.from_texts("abc")
    examples = encode_pairs([("ab", "abc"), ("abcabc", "a"), ("a", "abcab")], vocab, vocab)
    assert split_by_length(examples, 5) == ([0], [1, 2])  # target + EOS must fit as well


# -- metrics ---------------------------------------------------------------------------------------


def test_exact_and_token_accuracy_worked_example():
    hyps = ["2026-11-29", "1999-01-02", "abc"]
    refs = ["2026-11-29", "1999-01-20", "abcd"]
    assert exact_match(hyps, refs) == pytest.approx(1 / 3)
    assert token_accuracy(hyps, refs) == pytest.approx((10 + 8 + 3) / (10 + 10 + 4))
    by_len = accuracy_by_length(hyps, refs, [10, 10, 3])
    assert by_len == {3: {"exact_match": 0.0, "count": 1}, 10: {"exact_match": 0.5, "count": 2}}
    with pytest.raises(ValueError, match="2 hypotheses but 1 references"):
        exact_match(["a", "b"], ["a"])


def test_teacher_forced_accuracy_ignores_padding():
    torch.manual_seed(0)
    logits = torch.randn(3, 5, 9)
    targets = torch.randint(4, 9, (3, 5))
    targets[1, 3:] = PAD_ID
    correct, counted = teacher_forced_accuracy(logits, targets)
    naive_correct = sum(int(logits[b, t].argmax() == targets[b, t]) for b in range(3) for t in range(5)
                        if targets[b, t] != PAD_ID)
    assert int(correct) == naive_correct and int(counted) == 13


def _hand_bleu(hyps: list[str], refs: list[str]) -> float:
    """Papineni et al. 2002 corpus BLEU on whitespace tokens: clipped n-gram precisions (n = 1..4),
    geometric mean, brevity penalty exp(1 - r/c) when c < r."""
    matches, totals = [0] * 4, [0] * 4
    hyp_len = ref_len = 0
    for h, r in zip(hyps, refs):
        hw, rw = h.split(), r.split()
        hyp_len, ref_len = hyp_len + len(hw), ref_len + len(rw)
        for n in range(1, 5):
            hc = Counter(tuple(hw[i:i + n]) for i in range(len(hw) - n + 1))
            rc = Counter(tuple(rw[i:i + n]) for i in range(len(rw) - n + 1))
            matches[n - 1] += sum(min(c, rc[g]) for g, c in hc.items())
            totals[n - 1] += max(0, len(hw) - n + 1)
    log_precision = sum(math.log(m / t) for m, t in zip(matches, totals)) / 4
    brevity = 1.0 if hyp_len >= ref_len else math.exp(1 - ref_len / hyp_len)
    return 100 * brevity * math.exp(log_precision)


def test_bleu_equals_a_hand_computation():
    refs = ["the black cat sleeps on the red mat today", "some grey dogs will see the white mice now"]
    hyps = ["the black cat sleeps on a red mat today", "some grey dogs will see white mice now"]
    assert bleu(hyps, refs) == pytest.approx(_hand_bleu(hyps, refs), abs=1e-6)
    assert bleu(refs, refs) == pytest.approx(100.0)
