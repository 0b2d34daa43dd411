"""The Jacobian dependency map against torch.autograd.functional.jacobian through the model's own
forward (the source embedding rows replaced by a forward hook written here), for every
architecture; its path split against the same Jacobian with one route detached by a hook; and a
hand-built RNN whose state forgets everything after one step."""

import pytest
import torch

from seqlab.seq2seq import inspection as s2s_inspect
from seqlab.seq2seq.build import build_model
from seqlab.seq2seq.config import BOS_ID, Seq2SeqConfig
from seqlab.seq2seq.inspection import dependency_map

pytestmark = pytest.mark.usefixtures("one_thread")


def jacobian_norms(model, src, tgt, hooks=()):
    """||d logits[t] / d e_s||, e the source embedding rows, by torch.autograd.functional.jacobian."""
    emb = model.src_embeddings(src[None]).detach()

    def logits(e):
        handles = [model.src_embeddings.register_forward_hook(lambda m, a, out: e)]
        handles += [module.register_forward_hook(hook) for module, hook in hooks]
        try:
            return model(src[None], tgt[None])[0]
        finally:
            for handle in handles:
                handle.remove()
    jac = torch.autograd.functional.jacobian(logits, emb)
    return jac.pow(2).sum(dim=(1, 2, 4)).sqrt()  # (T, V, 1, S, d) -> (T, S)


@pytest.mark.parametrize("arch", ["rnn", "rnn-attention", "transformer"])
def test_dependency_map_equals_the_full_jacobian_norms(arch, monkeypatch):
    torch.manual_seed(0)
    model = build_model(Seq2SeqConfig(arch, 10, 7, d_model=8, num_heads=2), dtype=torch.float64)
    src = torch.tensor([4, 7, 9, 5, 6])
    tgt = torch.tensor([BOS_ID, 4, 6, 5])
    monkeypatch.setattr(s2s_inspect, "DEPENDENCY_ROWS_PER_PASS", 5)  # several chunks
    got = dependency_map(model, src, tgt)
    want = jacobian_norms(model, src, tgt)
    assert got.shape == (4, 5)
    torch.testing.assert_close(got, want)
    assert (got > 0).all()  # every output depends on every source position here (all real)
    torch.testing.assert_close(dependency_map(model, src[None], tgt[None]), got)


@pytest.mark.parametrize("cell", ["gru", "lstm"])
def test_the_two_paths_of_an_rnn_with_attention_are_the_jacobian_with_the_other_route_detached(cell):
    torch.manual_seed(3)
    model = build_model(Seq2SeqConfig("rnn-attention", 10, 7, d_model=8, cell=cell), dtype=torch.float64)
    src, tgt = torch.tensor([4, 7, 9, 5, 6]), torch.tensor([BOS_ID, 4, 6, 5])
    detach = lambda value: tuple(v.detach() for v in value) if isinstance(value, tuple) else value.detach()
    # the encoder returns (its states, the final state per layer): the attention reads the first,
    # the decoder starts from the second
    only_attention = [(model.encoder, lambda m, a, out: (out[0], detach(out[1])))]
    only_state = [(model.encoder, lambda m, a, out: (out[0].detach(), out[1]))]
    attention = dependency_map(model, src, tgt, path="attention")
    state = dependency_map(model, src, tgt, path="state")
    torch.testing.assert_close(attention, jacobian_norms(model, src, tgt, only_attention))
    torch.testing.assert_close(state, jacobian_norms(model, src, tgt, only_state))
    assert float(attention.min()) > 0 and float(state.min()) > 0
    with pytest.raises(ValueError, match="paths \\('all',\\)"):
        dependency_map(build_model(Seq2SeqConfig("transformer", 10, 7, d_model=8, num_heads=2)), src, tgt,
                       path="state")


def test_an_rnn_that_forgets_after_one_step_reaches_only_the_last_source_position():
    """Known answer: with the encoder's recurrent weights zero, h_t = tanh(W x_t + b) holds x_t
    alone, so the plain RNN's decoder (which reads only the final state) depends on the last
    source position only."""
    torch.manual_seed(4)
    model = build_model(Seq2SeqConfig("rnn", 10, 7, d_model=8, num_encoder_layers=1, num_decoder_layers=1,
                                      cell="rnn"), dtype=torch.float64)
    with torch.no_grad():
        model.encoder.cells[0].weight_hh.zero_()
    dep = dependency_map(model, torch.tensor([4, 7, 9, 5, 6]), torch.tensor([BOS_ID, 4, 6]))
    assert torch.equal(dep[:, :4], torch.zeros(3, 4, dtype=dep.dtype)) and float(dep[:, 4].min()) > 1e-3


def test_dependency_map_rejects_batches():
    model = build_model(Seq2SeqConfig("rnn", 10, 7, d_model=8))
    with pytest.raises(ValueError, match=r"src_ids must be one sequence .* got \(2, 3\)"):
        dependency_map(model, torch.full((2, 3), 4), torch.tensor([1, 4]))
