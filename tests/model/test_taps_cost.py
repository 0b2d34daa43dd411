"""With no taps nothing runs: the training step of every model family (forward to the fused loss's
input, the loss, the backward) dispatches exactly the aten operations it dispatched before taps
existed.

The oracle is ``tests/fixtures/taps/step_ops.json``: each step's operations by name, counted by
``benchmarks/instruments/op_count.py`` (a TorchDispatchMode, below autograd) at commit f4e1fe1, the
last commit without taps; "s2s-attention-rnn" was re-recorded when the RNN attention's forward became
one path with or without taps (issue 45): its dot-product scores are the same numbers (bitwise), one
dtype query (aten.promote_types) fewer. A later change that deliberately changes a step's work re-records it:
``PYTHONPATH=. python tests/model/test_taps_cost.py --record`` (and says why in its commit).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "fixtures" / "taps" / "step_ops.json"

LM_SHAPES = {
    "lm": {},
    "lm-post-gqa": {"norm_position": "post", "num_kv_heads": 2},
    "lm-attention-only": {"ffn": "none"},
}
S2S_SHAPES = {
    "s2s-transformer": {"arch": "transformer", "norm_position": "pre", "positional": "rope"},
    "s2s-transformer-post": {"arch": "transformer"},
    "s2s-rnn-gru": {"arch": "rnn", "cell": "gru"},
    "s2s-rnn-lstm": {"arch": "rnn", "cell": "lstm"},
    "s2s-attention-rnn": {"arch": "rnn-attention", "cell": "rnn"},
    "s2s-attention-additive": {"arch": "rnn-attention", "cell": "gru", "attention_score": "additive"},
}


def step_ops(name: str) -> dict[str, int]:
    """{aten op: count} of one training step's tensor work for model ``name`` (fixed seeds and shapes)."""
    sys.path.insert(0, str(ROOT))
    from benchmarks.instruments.op_count import OpCounter
    from seqlab.model import TransformerLM
    from seqlab.model.loss import cross_entropy

    torch.manual_seed(0)
    generator = torch.Generator().manual_seed(1)
    if name in LM_SHAPES:
        model = TransformerLM(37, 16, 16, 2, 4, **LM_SHAPES[name])
        ids = torch.randint(0, 37, (3, 13), generator=generator)
        with OpCounter() as counter:
            hidden = model(ids[:, :-1], return_hidden=True)
            cross_entropy(hidden @ model.lm_head.weight.t(), ids[:, 1:]).backward()
        return dict(counter.ops)
    from seqlab.seq2seq.build import build_model
    from seqlab.seq2seq.config import Seq2SeqConfig

    model = build_model(Seq2SeqConfig(src_vocab_size=23, tgt_vocab_size=19, d_model=16, num_heads=2,
                                      num_encoder_layers=2, num_decoder_layers=2, context_length=16,
                                      **S2S_SHAPES[name]))
    src = torch.randint(4, 23, (3, 7), generator=generator)
    tgt = torch.randint(4, 19, (3, 6), generator=generator)
    src_mask = torch.ones(3, 7, dtype=torch.bool)
    src_mask[0, 5:] = False
    with OpCounter() as counter:
        hidden = model(src, tgt[:, :-1], src_mask, None, return_hidden=True)
        cross_entropy(hidden @ model.lm_head.weight.t(), tgt[:, 1:]).backward()
    return dict(counter.ops)


@pytest.mark.usefixtures("one_thread")
@pytest.mark.parametrize("name", [*LM_SHAPES, *S2S_SHAPES])
def test_a_step_without_taps_dispatches_the_same_operations_as_before_taps(name):
    recorded = json.loads(FIXTURE.read_text(encoding="utf-8"))[name]
    now = step_ops(name)
    assert now == recorded, {op: (recorded.get(op), now.get(op)) for op in set(now) | set(recorded)
                             if recorded.get(op) != now.get(op)}


if __name__ == "__main__" and "--record" in sys.argv:
    torch.set_num_threads(1)
    FIXTURE.write_text(json.dumps({name: dict(sorted(step_ops(name).items())) for name in [*LM_SHAPES, *S2S_SHAPES]},
                                  indent=1) + "\n", encoding="utf-8")
    print(f"wrote {FIXTURE}")
