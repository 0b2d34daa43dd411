"""Greedy decoding and beam search against naive full-recompute loops and exhaustive search."""

import itertools
import math

import pytest
import torch

from seqlab.seq2seq.build import build_model
from seqlab.seq2seq.config import BOS_ID, EOS_ID, PAD_ID, Seq2SeqConfig
from seqlab.seq2seq.decoding import beam_search, greedy_decode

pytestmark = pytest.mark.usefixtures("one_thread")

ARCH_KW = {
    "rnn": dict(cell="lstm"),
    "rnn-attention": dict(attention_score="additive"),
}


def _model(arch, vocab=9, **kw):
    torch.manual_seed(0)
    config = Seq2SeqConfig(arch, src_vocab_size=12, tgt_vocab_size=vocab, d_model=16, num_heads=2,
                           **{**ARCH_KW.get(arch, {}), **kw})
    model = build_model(config, dtype=torch.float64)
    with torch.no_grad():  # make EOS likely enough that some rows stop early
        model.lm_head.weight[EOS_ID] *= 3
    return model


def _sources():
    g = torch.Generator().manual_seed(1)
    src = torch.randint(4, 12, (4, 7), generator=g)
    mask = torch.arange(7)[None, :] < torch.tensor([7, 5, 3, 6])[:, None]
    return src.masked_fill(~mask, PAD_ID), mask


def _naive_greedy(model, src, mask, max_len):
    """Each source alone, the whole prefix re-run through forward() at every step; the best
    token other than PAD and BOS (never generated)."""
    out = []
    for b in range(src.shape[0]):
        n = int(mask[b].sum())
        prefix = [BOS_ID]
        for _ in range(max_len):
            logits = model(src[b:b + 1, :n], torch.tensor([prefix]))
            token = int(logits[0, -1, EOS_ID:].argmax()) + EOS_ID
            if token == EOS_ID:
                break
            prefix.append(token)
        out.append(prefix[1:])
    return out


@pytest.mark.parametrize("arch", sorted(ARCH_KW))
def test_greedy_equals_naive_recompute_one_source_at_a_time(arch):
    model = _model(arch)
    src, mask = _sources()
    got = greedy_decode(model, src, mask, max_len=8)
    assert got == _naive_greedy(model, src, mask, 8)
    assert all(EOS_ID not in row and BOS_ID not in row for row in got)
    assert any(len(row) < 8 for row in got)  # at least one row stopped at EOS


def test_decoding_rejects_bad_max_len():
    model = _model("rnn")
    src, mask = _sources()
    with pytest.raises(ValueError, match="max_len must be a positive integer"):
        greedy_decode(model, src, mask, max_len=0)


ARCHS = ["rnn", "rnn-attention", "transformer"]


@pytest.mark.parametrize("arch", ARCHS)
def test_beam_size_one_equals_greedy(arch):
    model = _model(arch)
    src, mask = _sources()
    assert beam_search(model, src, mask, beam_size=1, max_len=8) == greedy_decode(model, src, mask, max_len=8)


def _exhaustive_best(model, src, max_len, length_penalty):
    """Score every possible output (tokens from EOS.. upward) with forward() and rank them like
    beam search: sum of log-probs / length ** length_penalty, length counting EOS."""
    vocab = model.config.tgt_vocab_size
    choices = list(range(EOS_ID, vocab))
    best, best_score = None, -math.inf
    for n in range(1, max_len + 1):
        for seq in itertools.product(choices, repeat=n):
            if EOS_ID in seq[:-1]:
                continue
            with torch.no_grad():
                logits = model(src[None], torch.tensor([[BOS_ID, *seq[:-1]]]))[0]
            logits[:, [PAD_ID, BOS_ID]] = -math.inf
            logp = torch.log_softmax(logits, -1)
            total = sum(float(logp[i, tok]) for i, tok in enumerate(seq))
            if seq[-1] != EOS_ID and n < max_len:
                continue  # unfinished hypotheses count only at max_len
            score = total / n ** length_penalty
            if score > best_score:
                best, best_score = list(seq), score
    return [t for t in best if t != EOS_ID] if best[-1] == EOS_ID else best


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("length_penalty", [0.0, 1.0])
def test_wide_beam_finds_the_exhaustive_best_output(arch, length_penalty):
    model = _model(arch, vocab=6)  # outputs drawn from {EOS, UNK, 4, 5}
    src, mask = _sources()
    max_len = 3
    got = beam_search(model, src, mask, beam_size=4 ** max_len, max_len=max_len, length_penalty=length_penalty)
    for b in range(src.shape[0]):
        n = int(mask[b].sum())
        assert got[b] == _exhaustive_best(model, src[b, :n], max_len, length_penalty), b


@pytest.mark.parametrize("arch", ARCHS)
def test_beam_search_is_batched_with_padding(arch):
    model = _model(arch)
    src, mask = _sources()
    batched = beam_search(model, src, mask, beam_size=3, max_len=6, length_penalty=0.7)
    alone = [beam_search(model, src[b:b + 1, :int(mask[b].sum())], beam_size=3, max_len=6, length_penalty=0.7)[0]
             for b in range(src.shape[0])]
    assert batched == alone


def test_decoding_rejects_too_long_outputs_and_bad_beams():
    model = _model("transformer", context_length=8)
    src, mask = _sources()
    with pytest.raises(ValueError, match=r"max_len=9 exceeds the model's context_length=8"):
        greedy_decode(model, src, mask, max_len=9)
    with pytest.raises(ValueError, match="beam_size must be a positive integer"):
        beam_search(model, src, mask, beam_size=0, max_len=4)
    with pytest.raises(ValueError, match="length_penalty must be a number >= 0"):
        beam_search(model, src, mask, beam_size=2, max_len=4, length_penalty=-1)
