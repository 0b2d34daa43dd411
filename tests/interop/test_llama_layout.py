"""The RoPE row permutation between seqlab's adjacent pairs and Llama's halves, against index loops."""

from __future__ import annotations

import pytest
import torch

from seqlab.interop.llama_layout import (
    halves_to_pairs,
    llama_names,
    pairs_to_halves,
    pairs_to_halves_order,
)


@pytest.mark.parametrize("heads, d_head", [(1, 2), (2, 4), (3, 8), (4, 16)])
def test_pairs_to_halves_moves_each_rows_by_the_order_and_back(heads, d_head):
    weight = torch.randn(heads * d_head, 5)
    order = pairs_to_halves_order(d_head)
    expected = torch.stack([weight[h * d_head + order[i]] for h in range(heads) for i in range(d_head)])
    assert torch.equal(pairs_to_halves(weight, heads), expected)
    assert torch.equal(halves_to_pairs(pairs_to_halves(weight, heads), heads), weight)
    assert pairs_to_halves_order(4) == [0, 2, 1, 3]


def test_the_permutation_turns_seqlabs_rope_into_rotate_half():
    """Rotating permuted rows with Llama's rotate_half equals permuting seqlab's rotated rows."""
    from seqlab.model.rope import RotaryPositionalEmbedding

    d, seq = 8, 6
    rope = RotaryPositionalEmbedding(10000.0, d, seq)
    x = torch.randn(seq, d)
    ours = rope(x)
    cos, sin = torch.cat([rope.cos] * 2, -1), torch.cat([rope.sin] * 2, -1)  # Llama's tables (seq, d)
    permuted = pairs_to_halves(x.T, 1).T
    rotate_half = torch.cat([-permuted[:, d // 2:], permuted[:, :d // 2]], -1)
    torch.testing.assert_close(permuted * cos + rotate_half * sin, pairs_to_halves(ours.T, 1).T)


def test_names_cover_a_layer_once_and_drop_the_head_when_tied():
    untied = list(llama_names(2, tied=False))
    assert len(untied) == 1 + 2 * 9 + 2 and untied[-1] == ("lm_head.weight", "lm_head.weight", None)
    assert len({theirs for _, theirs, _ in untied}) == len(untied)
    assert [rope for ours, _, rope in untied if rope] == ["q", "k", "q", "k"]
    assert list(llama_names(2, tied=True)) == untied[:-1]
    with pytest.raises(ValueError, match="do not split into 3 heads of an even size"):
        pairs_to_halves(torch.zeros(9, 2), 3)
