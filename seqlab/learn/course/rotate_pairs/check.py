"""rotate_pairs: the cases, the checks of its sentences, its mutants and recognisers (the words are in step.toml)."""

from __future__ import annotations

from seqlab.learn.exercise import Case, Check
from seqlab.learn.kit_torch import dtype, f32, leading_dims, randn, same_dtype_and_values, tensor
from seqlab.learn.words import said, speaker

say = speaker(__file__)


def _tables(seq, half, theta=10000.0):
    from seqlab.model.rope import rope_angles
    angles = rope_angles(theta, 2 * half, seq)  # float64
    return angles.cos(), angles.sin()


def cases() -> list[Case]:
    cos, sin = _tables(3, 2)
    made = [Case(said("cases.worked"), (tensor([[1.0, 0.0, 0.0, 1.0]] * 3), cos, sin))]
    cos, sin = _tables(5, 4)
    made.append(Case(said("cases.random", k=1), (randn(2, 5, 8, seed=7), cos, sin)))
    made.append(Case(said("cases.random", k=2), (randn(3, 2, 5, 8, seed=8), cos, sin)))
    return made


CHECKS = {
    "leading dims": Check(lambda: [
        Case(say("case_no_leading"), (randn(5, 8, seed=60), *_tables(5, 4))),
        Case("x (batch, heads, seq, d), seq != d/2", (randn(2, 3, 3, 12, seed=61), *_tables(3, 6))),
        Case("x (batch, seq, d), seq 7 > d/2", (randn(1, 7, 4, seed=62), *_tables(7, 2)))]),
    "dtype": Check(lambda: [Case(say("case_f32"), f32(randn(2, 4, 6, seed=63), *_tables(4, 3)))],
                   same_dtype_and_values),
}


# --- mistakes -----------------------------------------------------------------------------------------
def half_split_pairs(x, cos, sin):
    import torch
    half = x.shape[-1] // 2
    a, b = x[..., :half], x[..., half:]                    # pairs (k, k + d/2), the GPT-NeoX layout
    return torch.cat((a * cos - b * sin, a * sin + b * cos), dim=-1)


def rotated_backwards(x, cos, sin):
    import torch
    even, odd = x[..., 0::2], x[..., 1::2]
    return torch.stack((even * cos + odd * sin, -even * sin + odd * cos), dim=-1).flatten(-2)


def cos_and_sin_swapped(x, cos, sin):
    import torch
    even, odd = x[..., 0::2], x[..., 1::2]
    return torch.stack((even * sin - odd * cos, even * cos + odd * sin), dim=-1).flatten(-2)


def pairs_not_interleaved(x, cos, sin):
    import torch
    even, odd = x[..., 0::2], x[..., 1::2]
    return torch.cat((even * cos - odd * sin, even * sin + odd * cos), dim=-1)   # rotated evens, then odds


MUTANTS = {"half_split_pairs": half_split_pairs, "rotated_backwards": rotated_backwards,
           "cos_and_sin_swapped": cos_and_sin_swapped, "pairs_not_interleaved": pairs_not_interleaved}
RECOGNISERS = {"leading_dims": leading_dims(), "dtype": dtype()}
