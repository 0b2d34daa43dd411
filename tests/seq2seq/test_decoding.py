"""Greedy decoding and beam search against naive full-recompute loops."""

import pytest
import torch

from seqlab.seq2seq.build import build_model
from seqlab.seq2seq.config import BOS_ID, EOS_ID, PAD_ID, Seq2SeqConfig
from seqlab.seq2seq.decoding import greedy_decode

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
