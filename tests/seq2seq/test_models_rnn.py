"""RNN encoder-decoders: the attention model against a naive per-step loop, no leaks, padding,
config validation and parameter sizing."""

import math
from dataclasses import asdict

import pytest
import torch

from seqlab.model.taps import attention_patterns
from seqlab.seq2seq.build import build_model, num_parameters, size_for_parameters
from seqlab.seq2seq.config import PAD_ID, Seq2SeqConfig
from seqlab.seq2seq.rnn import RNNSeq2Seq

pytestmark = pytest.mark.usefixtures("one_thread")


def _model(arch, cell="gru", score="dot", **kw):
    torch.manual_seed(0)
    config = Seq2SeqConfig(arch, src_vocab_size=13, tgt_vocab_size=11, d_model=8, cell=cell,
                           attention_score=score, **kw)
    return build_model(config, dtype=torch.float64)


def _batch():
    g = torch.Generator().manual_seed(5)
    src = torch.randint(4, 13, (3, 6), generator=g)
    tgt = torch.randint(4, 11, (3, 5), generator=g)
    src_mask = torch.arange(6)[None, :] < torch.tensor([6, 4, 2])[:, None]
    return src.masked_fill(~src_mask, PAD_ID), tgt, src_mask


def _naive_attention_logits(model, src, tgt, src_mask):
    """One sequence, one step at a time, scores summed in Python over source positions."""
    att, cells = model.attention, None
    out = torch.zeros(src.shape[0], tgt.shape[1], model.config.tgt_vocab_size, dtype=torch.float64)
    for b in range(src.shape[0]):
        n = int(src_mask[b].sum())
        memory, final = model.encoder(model.src_embeddings(src[b:b + 1, :n]))
        hidden = final
        for t in range(tgt.shape[1]):
            x = model.tgt_embeddings(tgt[b, t:t + 1])
            states = []
            for i, cell in enumerate(model.decoder.cells):
                prev = (hidden[0][i], hidden[1][i]) if isinstance(hidden, tuple) else hidden[i]
                new = cell(x, prev)
                states.append(new)
                x = new[0] if isinstance(new, tuple) else new
            if isinstance(hidden, tuple):
                hidden = (torch.stack([s[0] for s in states]), torch.stack([s[1] for s in states]))
            else:
                hidden = torch.stack(states)
            s_t = x[0]
            scores = []
            for j in range(n):
                h_j = memory[0, j]
                if att.score == "dot":
                    scores.append((s_t * h_j).sum() / math.sqrt(s_t.numel()))
                else:
                    e = torch.tanh(att.query_proj.weight @ s_t + att.key_proj.weight @ h_j)
                    scores.append((att.score_vector * e).sum())
            a = torch.softmax(torch.stack(scores), 0)
            context = sum(a[j] * memory[0, j] for j in range(n))
            o = torch.tanh(att.combine.weight @ torch.cat((context, s_t)))
            out[b, t] = model.lm_head.weight @ o
    return out


@pytest.mark.parametrize("cell,score", [("gru", "dot"), ("gru", "additive"), ("lstm", "dot"), ("rnn", "additive")])
def test_attention_rnn_matches_a_naive_per_step_loop(cell, score):
    model = _model("rnn-attention", cell, score)
    src, tgt, src_mask = _batch()
    logits = model(src, tgt, src_mask)
    assert logits.shape == (3, 5, 11)
    torch.testing.assert_close(logits, _naive_attention_logits(model, src, tgt, src_mask))


@pytest.mark.parametrize("arch", ["rnn", "rnn-attention"])
def test_decode_steps_equal_teacher_forced_forward(arch):
    model = _model(arch, "lstm")
    src, tgt, src_mask = _batch()
    want = model(src, tgt, src_mask)
    state = model.encode(src, src_mask)
    for t in range(tgt.shape[1]):
        logits, state = model.decode_step(state, tgt[:, t])
        torch.testing.assert_close(logits, want[:, t])


def test_plain_rnn_sees_the_source_only_through_the_final_state():
    model = _model("rnn")
    src, tgt, src_mask = _batch()
    state = model.encode(src, src_mask)
    assert attention_patterns(model, src, tgt, src_mask).shape == (0,)
    # replacing the encoder states (but not the final state) changes nothing
    state.memory = torch.randn_like(state.memory)
    logits, _ = model.decode_step(state, tgt[:, 0])
    torch.testing.assert_close(logits, model(src, tgt, src_mask)[:, 0])


@pytest.mark.parametrize("arch", ["rnn", "rnn-attention"])
def test_no_leaks_future_targets_and_padded_sources(arch):
    model = _model(arch)
    src, tgt, src_mask = _batch()
    base = model(src, tgt, src_mask)
    changed_tgt = tgt.clone()
    changed_tgt[:, 3] = (tgt[:, 3] - 3) % 7 + 4
    after = model(src, changed_tgt, src_mask)
    torch.testing.assert_close(after[:, :3], base[:, :3])
    assert (after[:, 3:] - base[:, 3:]).abs().max() > 1e-6
    padded = src.clone()
    padded[1, 4:] = 7
    padded[2, 2:] = 9
    torch.testing.assert_close(model(padded, tgt, src_mask), base)
    real = src.clone()
    real[1, 0] = (src[1, 0] - 3) % 9 + 4
    assert (model(real, tgt, src_mask)[1] - base[1]).abs().max() > 1e-6


def test_attention_patterns_are_distributions_over_real_source_positions():
    model = _model("rnn-attention", score="additive")
    src, tgt, src_mask = _batch()
    (maps,) = attention_patterns(model, src, tgt, src_mask)
    assert maps.shape == (3, 1, 5, 6)
    torch.testing.assert_close(maps.sum(-1), torch.ones(3, 1, 5, dtype=torch.float64))
    assert maps[1, :, :, 4:].abs().max() == 0 and maps[2, :, :, 2:].abs().max() == 0
    dot = _model("rnn-attention")
    (dot_maps,) = attention_patterns(dot, src, tgt, src_mask)
    # weights recomputed from the naive formula
    state = dot.encode(src, src_mask)
    query, _ = dot.decoder(dot.tgt_embeddings(tgt), None, state.hidden)
    scores = query @ state.memory.transpose(1, 2) / math.sqrt(8)
    want = torch.softmax(scores.masked_fill(~src_mask[:, None], -math.inf), -1)
    torch.testing.assert_close(dot_maps[:, 0], want)


def test_shared_embeddings_and_tied_output_share_one_tensor():
    config = Seq2SeqConfig("rnn-attention", 12, 12, d_model=8, shared_embeddings=True, tie_embeddings=True)
    model = build_model(config)
    assert model.src_embeddings.weight is model.tgt_embeddings.weight is model.lm_head.weight
    keys = set(model.state_dict())
    assert {"src_embeddings.weight", "tgt_embeddings.weight", "lm_head.weight"} <= keys
    separate = build_model(Seq2SeqConfig("rnn-attention", 12, 12, d_model=8))
    assert num_parameters(separate) - num_parameters(model) == 2 * 12 * 8


def test_gru_reset_before_is_selectable():
    config = Seq2SeqConfig("rnn", 12, 12, d_model=8, gru_reset="before")
    model = RNNSeq2Seq(config)
    assert all(cell.reset == "before" for cell in model.encoder.cells)
    # a config field, so a checkpoint's model_config rebuilds the same cells
    rebuilt = build_model(Seq2SeqConfig(**asdict(config)))
    assert all(cell.reset == "before" for cell in [*rebuilt.encoder.cells, *rebuilt.decoder.cells])


def test_config_validation_names_the_field_and_round_trips():
    config = Seq2SeqConfig("transformer", 20, 30, d_model=32, num_heads=4, ffn="swiglu")
    assert Seq2SeqConfig(**asdict(config)) == config
    assert config.resolved_d_ff == 64 and Seq2SeqConfig("rnn", 20, 20, d_model=32).resolved_d_ff == 128
    with pytest.raises(ValueError, match=r"Seq2SeqConfig.cell must be one of"):
        Seq2SeqConfig("rnn", 20, 20, cell="transformer")
    with pytest.raises(ValueError, match=r"Seq2SeqConfig.d_model \(30\) must be divisible by num_heads \(4\)"):
        Seq2SeqConfig("transformer", 20, 20, d_model=30)
    with pytest.raises(ValueError, match=r"shared_embeddings needs src_vocab_size == tgt_vocab_size"):
        Seq2SeqConfig("rnn", 20, 21, shared_embeddings=True)
    with pytest.raises(ValueError, match=r"tgt_vocab_size = 4 leaves no room"):
        Seq2SeqConfig("rnn", 20, 4)
    with pytest.raises(ValueError, match=r"Seq2SeqConfig.context_length must be a positive integer"):
        Seq2SeqConfig("rnn", 20, 20, context_length=0)


def test_bad_inputs_name_the_shape():
    model = _model("rnn")
    src, tgt, src_mask = _batch()
    with pytest.raises(ValueError, match=r"src_ids must have shape \(batch, length\), got \(6,\)"):
        model(src[0], tgt)
    with pytest.raises(ValueError, match=r"src_ids has batch 3 but tgt_ids has batch 2"):
        model(src, tgt[:2])
    with pytest.raises(TypeError, match=r"src_padding_mask must be a bool tensor"):
        model(src, tgt, src_mask.long())
    with pytest.raises(ValueError, match=r"token id 13 at position 0 is outside the vocabulary \[0, 13\)"):
        model(torch.full((1, 2), 13), tgt[:1])


@pytest.mark.parametrize("target", [20_000, 60_000])
def test_size_for_parameters_matches_architectures_within_ten_percent(target):
    base = Seq2SeqConfig("rnn", 20, 20, num_heads=2)
    for arch in ("rnn", "rnn-attention", "transformer"):
        config = size_for_parameters(arch, target, base)
        assert config.arch == arch
        count = num_parameters(build_model(config))
        assert abs(count - target) <= 0.1 * target, (arch, config.d_model, count)
    with pytest.raises(ValueError, match="within 10%"):
        size_for_parameters("rnn", 10, base)
