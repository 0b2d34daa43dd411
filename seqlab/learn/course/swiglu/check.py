"""swiglu: the reference (seqlab.model.SwiGLU with the given weights), the cases, the checks of its sentences,
its mutants and recognisers (the words are in step.toml)."""

from __future__ import annotations

from seqlab.learn.exercise import Case, Check, numbered_cases
from seqlab.learn.kit_torch import dtype, f32, leading_dims, randn, same_dtype_and_values


def reference(x, w1_weight, w2_weight, w3_weight):
    """seqlab.model.SwiGLU with the given (out, in) weights: w1, w3 (d_ff, d_model), w2 (d_model, d_ff)."""
    import torch

    from seqlab.model import SwiGLU
    layer = SwiGLU(x.shape[-1], w1_weight.shape[0], dtype=x.dtype)
    with torch.no_grad():
        for linear, weight in ((layer.w1, w1_weight), (layer.w2, w2_weight), (layer.w3, w3_weight)):
            linear.weight.copy_(weight)
        return layer(x)


def _args(shape, d_ff, seed):
    d = shape[-1]
    return (randn(*shape, seed=seed), randn(d_ff, d, seed=seed + 10, scale=d ** -0.5),
            randn(d, d_ff, seed=seed + 20, scale=d_ff ** -0.5), randn(d_ff, d, seed=seed + 30, scale=d ** -0.5))


def cases() -> list[Case]:
    return numbered_cases(lambda k, seed, shape, d_ff: (_args(shape, d_ff, seed), {}),
                          ((0, (2, 4), 6), (1, (2, 3, 8), 16), (2, (5, 6), 12)))


CHECKS = {
    "leading dims": Check(lambda: [Case("x (d_model,)", _args((4,), 6, 150)),
                                   Case("x with three leading dims", _args((2, 2, 3, 4), 10, 151))]),
    "dtype": Check(lambda: [Case("float32 x and weights", f32(*_args((3, 4), 8, 152)))], same_dtype_and_values),
}


# --- mistakes -----------------------------------------------------------------------------------------
def sigmoid_instead_of_silu(x, w1_weight, w2_weight, w3_weight):
    a, b = x @ w1_weight.T, x @ w3_weight.T
    return (a.sigmoid() * b) @ w2_weight.T                 # GLU's gate, not SiLU(a) = a * sigmoid(a)


def gate_on_the_other_branch(x, w1_weight, w2_weight, w3_weight):
    a, b = x @ w1_weight.T, x @ w3_weight.T
    return (a * (b * b.sigmoid())) @ w2_weight.T


def no_gate(x, w1_weight, w2_weight, w3_weight):
    a = x @ w1_weight.T
    return (a * a.sigmoid()) @ w2_weight.T


def silu_after_the_product(x, w1_weight, w2_weight, w3_weight):
    h = (x @ w1_weight.T) * (x @ w3_weight.T)
    return (h * h.sigmoid()) @ w2_weight.T


MUTANTS = {"sigmoid_instead_of_silu": sigmoid_instead_of_silu, "gate_on_the_other_branch": gate_on_the_other_branch,
           "no_gate": no_gate, "silu_after_the_product": silu_after_the_product}
RECOGNISERS = {"leading_dims": leading_dims(), "dtype": dtype()}
