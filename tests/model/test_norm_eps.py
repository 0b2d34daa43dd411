"""ModelConfig.norm_eps: every RMSNorm of the LM uses it; configs and checkpoints without it keep 1e-5."""

from __future__ import annotations

import pytest
import torch

from seqlab.model import ModelConfig, TransformerLM

SMALL = dict(vocab_size=50, context_length=8, d_model=16, num_layers=2, num_heads=2)


def test_every_norm_uses_norm_eps_and_matches_the_formula():
    model = TransformerLM(**SMALL, norm_eps=0.25)
    norms = [model.ln_final] + [layer.ln1 for layer in model.layers] + [layer.ln2 for layer in model.layers]
    assert [norm.eps for norm in norms] == [0.25] * 5
    x = torch.randn(3, 16, dtype=torch.float64) * 0.1  # small rows, where eps matters
    weight = torch.randn(16, dtype=torch.float64)
    model.ln_final.weight.data = weight.float()
    expected = torch.nn.functional.rms_norm(x, (16,), weight, eps=0.25)
    torch.testing.assert_close(model.ln_final(x.float()).double(), expected, rtol=1e-5, atol=1e-6)


def test_configs_without_norm_eps_load_with_the_old_value():
    old = {key: value for key, value in ModelConfig(**SMALL).__dict__.items() if key != "norm_eps"}
    assert ModelConfig.from_dict(old).norm_eps == 1e-5 == TransformerLM(**SMALL).ln_final.eps
    assert TransformerLM.from_config(ModelConfig(**SMALL, norm_eps=1e-6)).layers[1].ln2.eps == 1e-6


@pytest.mark.parametrize("bad", [0, -1e-5, 1.5, "1e-5", True])
def test_a_bad_norm_eps_is_refused_by_name(bad):
    with pytest.raises(ValueError, match="norm_eps"):
        ModelConfig(**SMALL, norm_eps=bad)
