"""scaled_dot_product_attention: the cases, the checks of its sentences, its mutants and recognisers (the words
are in step.toml)."""

from __future__ import annotations

import math

from seqlab.learn import diagnosis as D
from seqlab.learn.exercise import Case, Check
from seqlab.learn.kit_torch import (dtype, f32, leading_dims, matches_where_finite, non_finite_on, plain_softmax, randn,
                                    same_dtype_and_values, tensor)
from seqlab.learn.words import said, speaker

say = speaker(__file__)


def cases() -> list[Case]:
    import torch
    eye = torch.eye(2, dtype=torch.float64)
    made = [Case(said("cases.worked"), (eye, eye, tensor([[1.0, 2.0], [3.0, 4.0]])), {"causal": True})]
    made.append(Case(said("cases.random", k=1), (randn(2, 3, 4, 8, seed=9), randn(2, 3, 4, 8, seed=10),
                                                  randn(2, 3, 4, 5, seed=11))))
    made.append(Case(say("case_causal"), (randn(2, 5, 4, seed=12, scale=2), randn(2, 5, 4, seed=13, scale=2),
                                          randn(2, 5, 3, seed=14)), {"causal": True}))
    mask = tensor([[True, False, True, True, False]] * 3, "bool")
    made.append(Case(say("case_mask"), (randn(3, 6, seed=15), randn(5, 6, seed=16), randn(5, 2, seed=17)),
                     {"mask": mask}))
    return made


def _qkv(n, m, d_k, d_v, seed, lead=(), scale=1.0):
    return (randn(*lead, n, d_k, seed=seed, scale=scale), randn(*lead, m, d_k, seed=seed + 1, scale=scale),
            randn(*lead, m, d_v, seed=seed + 2))


def _visible(*shape, seed):
    """A random bool mask with every row's first key visible (no row fully hidden)."""
    mask = randn(*shape, seed=seed) > 0
    mask[..., 0] = True
    return mask


def _fully_masked_cases():
    mask = _visible(3, 4, seed=74)
    mask[1] = False                                        # query 1 may attend no key
    causal_mask = _visible(4, 4, seed=75)
    causal_mask[0, 0] = False                              # with causal=True, query 0 has no key left
    return [Case(say("case_row_masked"), _qkv(3, 4, 5, 2, seed=70), {"mask": mask}),
            Case(say("case_causal_key0"), _qkv(4, 4, 3, 3, seed=71), {"mask": causal_mask, "causal": True})]


CHECKS = {
    "n m differ": Check(lambda: [Case("n 4, m 7, d_k 6, d_v 3", _qkv(4, 7, 6, 3, seed=80)),
                                 Case(say("case_mask_3_5"), _qkv(3, 5, 4, 2, seed=81),
                                      {"mask": _visible(3, 5, seed=82)})]),
    "leading dims": Check(lambda: [Case("Q, K, V (batch, heads, n, d)", _qkv(4, 6, 5, 2, seed=83, lead=(2, 3))),
                                   Case(say("case_kv_broadcast"),
                                        (randn(2, 3, 4, 5, seed=84), randn(3, 6, 5, seed=85), randn(3, 6, 2, seed=86)))]),
    "mask broadcast": Check(lambda: [Case(say("case_mask_broadcast"),
                                          _qkv(4, 6, 5, 2, seed=87, lead=(2, 3)), {"mask": _visible(2, 1, 4, 6, seed=88)})]),
    "causal": Check(lambda: [Case(say("case_causal_square"), _qkv(5, 5, 4, 3, seed=89, lead=(3,)), {"causal": True})]),
    "cached keys": Check(lambda: [Case(say("case_cached"), _qkv(3, 6, 4, 3, seed=90, lead=(2,)), {"causal": True}),
                                  Case(say("case_one_query"), _qkv(1, 5, 4, 2, seed=91), {"causal": True})]),
    "causal and mask": Check(lambda: [Case(say("case_causal_and_mask"), _qkv(5, 5, 4, 3, seed=92, lead=(2,)),
                                           {"mask": _visible(5, 5, seed=93) | tensor([[i == j for j in range(5)]
                                                                                       for i in range(5)], "bool"),
                                            "causal": True})]),
    "fully masked": Check(_fully_masked_cases),
    "large scores": Check(lambda: [Case(say("case_thousands"), _qkv(3, 4, 4, 2, seed=94, scale=30.0)),
                                   Case(say("case_thousands_causal"), _qkv(4, 4, 4, 2, seed=95, scale=30.0),
                                        {"causal": True})]),
    "dtype": Check(lambda: [Case(say("case_f32"), f32(*_qkv(4, 4, 6, 3, seed=96, lead=(2,))), {"causal": True})],
                   same_dtype_and_values),
}


# --- mistakes -----------------------------------------------------------------------------------------
def _sdpa(Q, K, V, mask, causal, *, scale=None, dim=-1, shift=0, invert=False, combine="and", top_left=False,
          nan_rows=False):
    import torch
    d_k = Q.shape[-1]
    scores = Q @ K.transpose(-2, -1) / (math.sqrt(d_k) if scale is None else scale(d_k))
    n, m = Q.shape[-2], K.shape[-2]
    causal_visible = torch.arange(m)[None, :] <= torch.arange(n)[:, None] + (0 if top_left else m - n) + shift
    if mask is None:
        visible = causal_visible if causal else torch.ones(n, m, dtype=torch.bool)
    else:
        given = ~mask if invert else mask
        if causal and combine == "and":
            visible = given & causal_visible
        elif causal and combine == "causal":
            visible = causal_visible & torch.ones_like(given)
        else:
            visible = given
    scores = scores.masked_fill(~visible, float("-inf"))
    if nan_rows:                                           # the plain softmax: a row of -inf gives 0/0
        return plain_softmax(scores, dim) @ V
    top = scores.amax(dim, keepdim=True)
    top = torch.where(torch.isfinite(top), top, torch.zeros_like(top))
    e = (scores - top).exp()
    total = e.sum(dim, keepdim=True)
    weights = torch.where(total > 0, e / total.clamp_min(1e-300), torch.zeros_like(e))
    return weights @ V


def missing_scale(Q, K, V, mask=None, *, causal=False):
    return _sdpa(Q, K, V, mask, causal, scale=lambda d: 1.0)


def scaled_by_d_k(Q, K, V, mask=None, *, causal=False):
    return _sdpa(Q, K, V, mask, causal, scale=lambda d: d)


def softmax_over_queries(Q, K, V, mask=None, *, causal=False):
    return _sdpa(Q, K, V, mask, causal, dim=-2)


def causal_mask_excludes_current(Q, K, V, mask=None, *, causal=False):
    return _sdpa(Q, K, V, mask, causal, shift=-1)


def causal_mask_includes_next(Q, K, V, mask=None, *, causal=False):
    return _sdpa(Q, K, V, mask, causal, shift=1)


def mask_inverted(Q, K, V, mask=None, *, causal=False):
    return _sdpa(Q, K, V, mask, causal, invert=True)


def causal_ignored_with_a_mask(Q, K, V, mask=None, *, causal=False):
    return _sdpa(Q, K, V, mask, causal, combine="mask")


def mask_ignored_when_causal(Q, K, V, mask=None, *, causal=False):
    return _sdpa(Q, K, V, mask, causal, combine="causal")


def causal_from_the_first_key(Q, K, V, mask=None, *, causal=False):
    return _sdpa(Q, K, V, mask, causal, top_left=True)     # query i sees keys 0..i even when m > n


def nan_on_fully_masked_rows(Q, K, V, mask=None, *, causal=False):
    return _sdpa(Q, K, V, mask, causal, nan_rows=True)


def _wrong_scale(ev):
    """The student's output is softmax(Q K^T / c) V for a named constant c other than sqrt(d_k)."""
    from seqlab.model import scaled_dot_product_attention as attend
    found_first = None
    for i in ev.usable("all"):
        if not ev.wrong(i, ()):
            continue
        Q, K, V = ev.cases[i].args[:3]
        d_k, m, d_v = Q.shape[-1], K.shape[-2], V.shape[-1]
        names = {say("no_scale"): 1.0, "d_k": float(d_k), say("sqrt_m"): math.sqrt(m), say("sqrt_d_v"): math.sqrt(d_v)}
        found = [name for name, c in names.items() if not math.isclose(c, math.sqrt(d_k)) and D.close(
            attend(Q * (math.sqrt(d_k) / c), K, V, *ev.cases[i].args[3:], **ev.cases[i].kwargs), ev.outputs[i],
            ev.rtol, ev.atol)]
        if not found or (found_first is not None and found_first not in found):
            return None
        found_first = found_first or found[0]
    return say("divided_by", scale=found_first) if found_first else None


MUTANTS = {"missing_scale": missing_scale, "scaled_by_d_k": scaled_by_d_k, "softmax_over_queries": softmax_over_queries,
           "causal_mask_excludes_current": causal_mask_excludes_current,
           "causal_mask_includes_next": causal_mask_includes_next, "mask_inverted": mask_inverted,
           "causal_ignored_with_a_mask": causal_ignored_with_a_mask, "mask_ignored_when_causal": mask_ignored_when_causal,
           "causal_from_the_first_key": causal_from_the_first_key, "nan_on_fully_masked_rows": nan_on_fully_masked_rows}
RECOGNISERS = {
    "wrong_scale": _wrong_scale, "causal_mask_excludes_current": matches_where_finite(causal_mask_excludes_current),
    "nan_on_fully_masked_rows": non_finite_on("fully masked", say("row_zero_not_nan")),
    "max_not_subtracted": non_finite_on("large scores", say("row_max")),
    "n_m_differ": D.failed_check("n m differ", raises=True), "leading_dims": leading_dims(),
    "mask_broadcast": D.failed_check("mask broadcast", raises=True), "dtype": dtype()}
