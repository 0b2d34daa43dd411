"""The Jacobian dependency map against torch.autograd.functional.jacobian, for every architecture."""

import pytest
import torch

from seqlab.seq2seq import inspection as s2s_inspect
from seqlab.seq2seq.build import build_model
from seqlab.seq2seq.config import BOS_ID, Seq2SeqConfig
from seqlab.seq2seq.inspection import dependency_map

pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.mark.parametrize("arch", ["rnn", "rnn-attention", "transformer"])
def test_dependency_map_equals_the_full_jacobian_norms(arch, monkeypatch):
    torch.manual_seed(0)
    model = build_model(Seq2SeqConfig(arch, 10, 7, d_model=8, num_heads=2), dtype=torch.float64)
    src = torch.tensor([4, 7, 9, 5, 6])
    tgt = torch.tensor([BOS_ID, 4, 6, 5])
    monkeypatch.setattr(s2s_inspect, "DEPENDENCY_ROWS_PER_PASS", 5)  # several chunks
    got = dependency_map(model, src, tgt)
    emb = model.embed_source(src[None]).detach()
    jac = torch.autograd.functional.jacobian(lambda e: model.forward_embedded(e, tgt[None])[0], emb)
    want = jac.pow(2).sum(dim=(1, 2, 4)).sqrt()  # (T, V, 1, S, d) -> (T, S)
    assert got.shape == (4, 5)
    torch.testing.assert_close(got, want)
    assert (got > 0).all()  # every output depends on every source position here (all real)
    torch.testing.assert_close(dependency_map(model, src[None], tgt[None]), got)


def test_dependency_map_rejects_batches():
    model = build_model(Seq2SeqConfig("rnn", 10, 7, d_model=8))
    with pytest.raises(ValueError, match=r"src_ids must be one sequence .* got \(2, 3\)"):
        dependency_map(model, torch.full((2, 3), 4), torch.tensor([1, 4]))
