"""ffn="none": attention-only blocks, y = x + attn(ln1(x)), with no feed-forward parameters."""

from __future__ import annotations

import pytest
import torch

from seqlab.model import ModelConfig, TransformerLM
from seqlab.model.block import TransformerBlock
from seqlab.model.taps import attention_patterns


@pytest.mark.parametrize("norm_position", ["pre", "post"])
def test_an_attention_only_block_is_attention_plus_the_residual(norm_position):
    torch.manual_seed(0)
    block = TransformerBlock(16, 2, None, 8, 10000.0, ffn="none", norm_position=norm_position)
    x = torch.randn(3, 8, 16)
    attention = block.attn(block.ln1(x) if norm_position == "pre" else x)
    expected = x + attention if norm_position == "pre" else block.ln1(x + attention)
    torch.testing.assert_close(block(x), expected)
    from seqlab.model.taps import Taps

    taps = Taps(read=["attn.pattern", "resid_mid", "resid_post"])
    torch.testing.assert_close(block(x, taps=taps), expected)
    assert taps.cache["attn.pattern"].shape == (3, 2, 8, 8)
    assert taps.cache["resid_mid"] is taps.cache["resid_post"]  # no feed-forward between them
    names = {name for name, _ in block.named_parameters()}
    assert not any(name.startswith(("ffn.", "ln2.")) for name in names), names


def test_an_attention_only_model_has_only_attention_and_embedding_parameters():
    config = ModelConfig(vocab_size=50, context_length=16, d_model=16, num_layers=2, num_heads=2, ffn="none")
    assert config.d_ff == 0
    model = TransformerLM.from_config(config)
    with_mlp = TransformerLM.from_config(ModelConfig(vocab_size=50, context_length=16, d_model=16, num_layers=2,
                                                     num_heads=2, ffn="silu", d_ff=32))
    # per layer: 4 attention matrices 16x16 and ln1 (16); the MLP model adds 2 x 16 x 32 and ln2
    assert with_mlp.num_parameters() - model.num_parameters() == 2 * (2 * 16 * 32 + 16)
    logits = model(torch.randint(0, 50, (2, 16)))
    assert logits.shape == (2, 16, 50) and torch.isfinite(logits).all()
    with pytest.raises(ValueError, match="attention-only model has no feed-forward"):
        ModelConfig(vocab_size=50, context_length=16, d_model=16, num_layers=2, num_heads=2, ffn="none", d_ff=64)


def test_attention_patterns_are_the_attention_weights_of_each_layer():
    torch.manual_seed(1)
    model = TransformerLM.from_config(ModelConfig(vocab_size=20, context_length=12, d_model=16, num_layers=2,
                                                  num_heads=2, ffn="none"))
    ids = torch.randint(0, 20, (2, 12))
    patterns = attention_patterns(model, ids)
    # the oracle: each layer's softmax(q k^T / sqrt(d) + causal mask), with torch's own softmax
    x = model.token_embeddings(ids)
    for index, block in enumerate(model.layers):
        h = block.ln1(x)
        attn = block.attn
        q = attn.q_proj(h).view(2, 12, 2, 8).transpose(1, 2)
        k = attn.k_proj(h).view(2, 12, 2, 8).transpose(1, 2)
        q, k = attn.rope(q), attn.rope(k)
        scores = (q @ k.transpose(-2, -1)) / 8 ** 0.5
        scores = scores.masked_fill(torch.ones(12, 12, dtype=torch.bool).triu(1), float("-inf"))
        torch.testing.assert_close(patterns[index], torch.softmax(scores, -1), atol=1e-5, rtol=1e-5)
        x = block(x)
