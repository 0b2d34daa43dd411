"""Taps (seqlab.model.taps) in every model, against oracles written here: forward hooks and
pre-hooks on the models' own modules, a wrapper around a recurrent cell's step, and the model's
forward without taps."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

from seqlab.model import TransformerLM
from seqlab.model.taps import POINTS, ActivationCache, Taps, tl_name
from seqlab.seq2seq.build import build_model
from seqlab.seq2seq.config import Seq2SeqConfig

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
pytestmark = pytest.mark.usefixtures("one_thread")


def lm(**extra) -> TransformerLM:
    torch.manual_seed(0)
    return TransformerLM(50, 16, 16, 3, 4, **extra).eval()


IDS = torch.randint(0, 50, (2, 12), generator=torch.Generator().manual_seed(1))


def test_an_empty_taps_object_dispatches_the_same_operations_as_none():
    from benchmarks.instruments.op_count import OpCounter

    model = lm()
    with OpCounter() as plain:
        expected = model(IDS)
    with OpCounter() as tapped:
        got = model(IDS, taps=Taps())
    assert torch.equal(got, expected) and tapped.ops == plain.ops


def test_an_edit_of_a_layers_input_is_a_forward_pre_hook():
    model = lm(num_kv_heads=2)
    replacement = torch.randn(2, 12, 16, generator=torch.Generator().manual_seed(2))
    hook = model.layers[1].register_forward_pre_hook(lambda m, a: (replacement,) + a[1:])
    with torch.no_grad():
        expected = model(IDS)
    hook.remove()
    seen = []
    taps = Taps(read=["layers.1.resid_pre"], edit={"layers.1.resid_pre": lambda x, point: seen.append(point) or replacement})
    with torch.no_grad():
        got = model(IDS, taps=taps)
    torch.testing.assert_close(got, expected)
    assert seen[0].name == "layers.1.resid_pre" and seen[0].step is None
    assert taps.cache["layers.1.resid_pre"] is replacement


def test_rows_entering_at_a_layer_skip_the_blocks_before_it():
    model = lm()
    rows = torch.randn(3, 12, 16, generator=torch.Generator().manual_seed(3))
    hook = model.layers[2].register_forward_pre_hook(lambda m, a: (rows,) + a[1:])
    with torch.no_grad():
        expected = model(IDS[:1].expand(3, -1))  # any ids: layer 2's input is replaced whole
    hook.remove()
    calls = []
    early = model.layers[0].register_forward_hook(lambda m, a, out: calls.append(out.shape[0]))
    with torch.no_grad():
        got = model(IDS[:0], taps=Taps(enter={2: rows}))
        mixed = model(IDS[:1], taps=Taps(enter={2: rows}))  # one row from the embedding, three joining
    early.remove()
    torch.testing.assert_close(got, expected)
    torch.testing.assert_close(mixed[1:], expected)
    assert calls == [0, 1]  # block 0 ran on the rows already there only
    with pytest.raises(ValueError, match="rows entering layer 1 have shape"):
        model(IDS, taps=Taps(enter={1: rows[:, :5]}))


def test_keeping_only_the_last_query_in_the_last_layer_gives_the_last_positions_output():
    model = lm()
    with torch.no_grad():
        expected = model(IDS)[:, -1]
        taps = Taps(edit={"layers.2.attn.q": lambda q, point: q[..., -1:, :],
                          "layers.2.resid_mid": lambda x, point: x[:, -1:]})
        got = model(IDS, taps=taps)
    assert got.shape == (2, 1, 50)
    torch.testing.assert_close(got[:, 0], expected)


def test_attention_points_are_the_modules_own_numbers():
    """q, k, v from the projections by hand; the pattern's rows sum to 1; z times the output
    projection is the attention module's output (a forward hook)."""
    model = lm(num_kv_heads=2, positional="nope")
    inputs, outputs = [], []
    def keep(module, args, out):
        inputs.append(args[0])
        outputs.append(out)
    hooks = [model.layers[0].attn.register_forward_hook(keep)]
    taps = Taps(read=["layers.0.attn.*"])
    with torch.no_grad():
        model(IDS, taps=taps)
    hooks[0].remove()
    attn, x = model.layers[0].attn, inputs[-1]
    cache = taps.cache
    torch.testing.assert_close(cache["layers.0.attn.q"], (x @ attn.q_proj.weight.T).view(2, 12, 4, 4).transpose(1, 2))
    torch.testing.assert_close(cache["layers.0.attn.k"], (x @ attn.k_proj.weight.T).view(2, 12, 2, 4).transpose(1, 2))
    assert cache["layers.0.attn.pattern"].shape == (2, 4, 12, 12)
    torch.testing.assert_close(cache["layers.0.attn.pattern"].sum(-1), torch.ones(2, 4, 12))
    assert torch.equal(cache["layers.0.attn.scores"].isinf(), torch.ones(12, 12, dtype=torch.bool).triu(1).expand(2, 4, -1, -1))
    z = cache["layers.0.attn.z"].transpose(1, 2).reshape(2, 12, 16)
    torch.testing.assert_close(z @ attn.output_proj.weight.T, outputs[-1], rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(cache["layers.0.attn.head_out"].sum(2), outputs[-1], rtol=1e-5, atol=1e-6)


def test_transformerlens_names_read_and_edit_with_transformerlens_shapes():
    model = lm()
    taps = Taps(read=["blocks.1.attn.hook_z", "blocks.0.hook_resid_post"])
    with torch.no_grad():
        model(IDS, taps=taps)
    assert set(taps.cache) == {"layers.1.attn.z", "layers.0.resid_post"}
    assert taps.cache["blocks.1.attn.hook_z"].shape == (2, 12, 4, 4)  # (batch, pos, head, d_head)
    shapes = []
    edit = Taps(edit={"blocks.1.attn.hook_z": lambda z, point: shapes.append(z.shape) or z * 0})
    with torch.no_grad():
        model(IDS, taps=edit)
        zeroed = Taps(read=["layers.1.attn_out"], edit={"layers.1.attn.z": lambda z, point: z * 0})
        model(IDS, taps=zeroed)
    assert shapes == [(2, 12, 4, 4)] and float(zeroed.cache["layers.1.attn_out"].abs().max()) == 0
    assert tl_name("blocks.3.attn.hook_pattern") == "layers.3.attn.pattern" and tl_name("hook_pos_embed") is None


def test_bad_requests_are_named():
    with pytest.raises(TypeError, match="write \\['layers.0.resid_pre'\\]"):
        Taps(read="layers.0.resid_pre")
    with pytest.raises(TypeError, match="must be a function"):
        Taps(edit={"embed": 3})
    taps = Taps(edit={"layers.*.resid_pre": lambda x, p: x, "layers.1.*": lambda x, p: x})
    with pytest.raises(ValueError, match="2 edits match the tap point 'layers.1.resid_pre'"):
        lm()(IDS, taps=taps)
    with pytest.raises(KeyError, match="no tap point 'layers.0.mlp_out'"):
        ActivationCache({"embed": torch.zeros(1)})["layers.0.mlp_out"]


@pytest.mark.parametrize("arch, cell", [("rnn", "gru"), ("rnn", "lstm"), ("rnn-attention", "rnn"), ("transformer", None)])
def test_every_seq2seq_model_offers_its_points(arch, cell):
    torch.manual_seed(0)
    model = build_model(Seq2SeqConfig(arch, 12, 10, d_model=8, num_heads=2, context_length=12,
                                      **({"cell": cell} if cell else {}))).eval()
    src, tgt = torch.randint(4, 12, (2, 5)), torch.randint(4, 10, (2, 4))
    taps = Taps(read=True)
    with torch.no_grad():
        expected = model(src, tgt)
        got = model(src, tgt, taps=taps)
    torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-6)
    names = POINTS["TransformerSeq2Seq" if arch == "transformer" else "RNNSeq2Seq"]
    expected_names = {n.replace("{i}", str(i)) for n in names for i in range(2)}
    if cell != "lstm":
        expected_names -= {n for n in expected_names if n.endswith(".cell")}
    if arch == "rnn":
        expected_names -= {n for n in expected_names if "cross_attn" in n or n == "decoder.context"}
    if arch == "transformer":  # the decoder's final norm exists only before pre-norm outputs
        expected_names -= {"decoder.ln_final.scale"}
    present = {n for n in taps.cache if not n.endswith((".q", ".k", ".v", ".z", ".scores", ".head_out"))}
    assert expected_names - {n for n in expected_names if n.endswith((".scores", ".head_out"))} <= set(taps.cache)
    assert present <= expected_names | {n for n in taps.cache if ".self_attn." in n or ".attn." in n}
    if arch != "transformer":  # the encoder's top layer's states are its output (the memory)
        torch.testing.assert_close(taps.cache["encoder.layers.1.state"], taps.cache["encoder.output"])
        assert taps.cache["decoder.layers.0.state"].shape == (2, 4, 8)


def test_a_recurrent_state_replaced_at_one_step_is_what_the_next_step_reads():
    """Oracle: a wrapper around the encoder cell's step that replaces its state after step 2."""
    torch.manual_seed(0)
    model = build_model(Seq2SeqConfig("rnn", 12, 10, d_model=8, num_encoder_layers=1, num_decoder_layers=1,
                                      cell="gru")).eval()
    src, tgt = torch.randint(4, 12, (1, 5)), torch.randint(4, 10, (1, 3))
    value = torch.randn(1, 8)
    cell = model.encoder.cells[0]
    original, count = type(cell).recur.__get__(cell), []

    def step(gx, state):
        count.append(1)
        return value if len(count) == 3 else original(gx, state)
    cell.recur = step
    with torch.no_grad():
        expected = model(src, tgt)
    del cell.recur
    steps = []
    taps = Taps(edit={"encoder.layers.0.state": lambda h, point: steps.append(point.step) or (value if point.step == 2 else h)})
    with torch.no_grad():
        got = model(src, tgt, taps=taps)
    torch.testing.assert_close(got, expected)
    assert steps == [0, 1, 2, 3, 4]
