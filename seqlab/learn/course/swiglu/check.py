"""swiglu: the reference (seqlab.model.SwiGLU with the given weights), the cases, the checks of its sentences,
its mutants and recognisers (the words are in step.toml)."""

from __future__ import annotations

from seqlab.learn import diagnosis as D
from seqlab.learn.exercise import Case, Check, numbered_cases
from seqlab.learn.kit_torch import dtype, f32, leading_dims, randn, same_dtype_and_values
from seqlab.learn.words import speaker

say = speaker(__file__)


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
                          # the last has d_ff = d_model: weights used the wrong way round run there, and show
                          ((0, (2, 4), 6), (1, (2, 3, 8), 16), (2, (5, 6), 6)))


CHECKS = {
    "leading dims": Check(lambda: [Case("x (d_model,)", _args((4,), 6, 150)),
                                   Case(say("case_3_leading"), _args((2, 2, 3, 4), 10, 151))]),
    "dtype": Check(lambda: [Case(say("case_f32"), f32(*_args((3, 4), 8, 152)))], same_dtype_and_values),
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


def relu_instead_of_silu(x, w1_weight, w2_weight, w3_weight):
    return ((x @ w1_weight.T).clamp_min(0) * (x @ w3_weight.T)) @ w2_weight.T


def _layouts(transposed: str):
    """SwiGLU with the weights named in ``transposed`` (of "123") used as (in, out): x @ w, not x @ w.T."""
    def swiglu(x, w1_weight, w2_weight, w3_weight):
        w1, w2, w3 = (w if str(k) in transposed else w.T for k, w in ((1, w1_weight), (2, w2_weight), (3, w3_weight)))
        a = x @ w1
        return (a * a.sigmoid() * (x @ w3)) @ w2
    swiglu.transposed = transposed
    return swiglu


def weights_transposed(x, w1_weight, w2_weight, w3_weight):
    return _layouts("123")(x, w1_weight, w2_weight, w3_weight)


weights_transposed.transposed = "123"
_SOME_TRANSPOSED = [_layouts(which) for which in ("1", "2", "3", "12", "13", "23")]


def _weights_transposed(ev):
    """Some of w1, w2, w3 used as (in, out): the values of that layout wherever the code ran (d_ff = d_model),
    and an error where the shapes do not allow it."""
    for mutant in (weights_transposed, *_SOME_TRANSPOSED):
        said = D.matches(mutant, None, "own")(ev)
        if said is None:
            continue
        theirs = ev.implementation_outputs(mutant)
        raised_alike = all((ev.errors[i] is not None) == (theirs[i] is None) for i in ev.own())
        if raised_alike:
            which = mutant.transposed
            return say("layout", which=", ".join(f"w{k}" for k in which))
    return None


MUTANTS = {"sigmoid_instead_of_silu": sigmoid_instead_of_silu, "gate_on_the_other_branch": gate_on_the_other_branch,
           "no_gate": no_gate, "silu_after_the_product": silu_after_the_product,
           "relu_instead_of_silu": relu_instead_of_silu, "weights_transposed": weights_transposed}
RECOGNISERS = {"weights_transposed": _weights_transposed, "leading_dims": leading_dims(), "dtype": dtype()}
