"""What several PyTorch exercises' ``check.py`` share: tensor case makers, the verifies of the dtype and
batching sentences, the recognisers of the families several exercises share, and the mutants' plain
softmax and Transformer block. torch is imported inside each function, never here: the checker's own
process imports it while the child runs the student's code, not before (tests/learn/test_child_imports.py).

    randn(2, 3, seed=1, scale=3)                  # float64, from torch.Generator().manual_seed(1)
    CHECKS = {"dtype": Check(lambda: [Case("float32 x", f32(randn(3, 4, seed=34)))], same_dtype_and_values)}
    RECOGNISERS = {"dtype": dtype(), "leading_dims": leading_dims()}
"""

from __future__ import annotations

import math

from seqlab.learn import compare
from seqlab.learn import diagnosis as D
from seqlab.learn.exercise import Case, same_dtypes, same_values
from seqlab.learn.words import Said, said


# --- case makers -----------------------------------------------------------------------------------------
def gen(seed):
    import torch

    from seqlab.learn.kit import mixed
    return torch.Generator().manual_seed(mixed(seed))      # grade --seed draws it again (kit.drawn_with)


def randn(*shape, seed, scale=1.0):
    import torch
    return torch.randn(*shape, generator=gen(seed), dtype=torch.float64) * scale


def tensor(data, dtype="float64"):
    import torch
    return torch.tensor(data, dtype=getattr(torch, dtype))


def f32(*values):
    """float32 copies of the tensors among ``values`` (dicts of tensors too); the rest as they are."""
    import torch
    if len(values) == 1 and isinstance(values[0], dict):
        return {k: f32(v)[0] for k, v in values[0].items()}
    return tuple(v.to(torch.float32) if torch.is_tensor(v) and v.is_floating_point() else v for v in values)


# --- verifies of the sentences several exercises have ------------------------------------------------------
def _tensors(value, name="output"):
    if isinstance(value, (tuple, list)):
        return [(f"{name}[{i}]", v) for i, v in enumerate(value)]
    return [(name, value)]


_SAME_DTYPES, _SAME_VALUES = same_dtypes(), same_values()


def same_dtype_and_values(case, out, ref, extra) -> str | None:
    """A verify: the output has the reference's dtypes (here the input's float32, or int64) and its values,
    float32 ones to float32's precision (seqlab.learn.compare.tolerance)."""
    return _SAME_DTYPES(case, out, ref, extra) or _SAME_VALUES(case, out, ref, extra)


def counted(n: int, what: str) -> Said:
    """A case's label "N heads" or "N positions" (``what``: "heads" or "positions")."""
    return said(f"torch.n_{what}", n=n)


def grown(n: int, what: str, args) -> Case:
    """The case that ``ops_do_not_grow`` compares with the one before it: 4 times as many heads or positions,
    labelled "N heads (4 times as many)"."""
    return Case(said("torch.grown", count=counted(n, what)), args)


def ops_do_not_grow(case, out, ref, extra):
    """A verify: on a case labelled "N heads (4 times as many)" (or positions, :func:`grown`), the call
    dispatched no more tensor operations than the call just before it, the same inputs with a quarter of
    them (rules.call's extra["ops_before"])."""
    label = case.label
    if not (isinstance(label, Said) and label.key == "torch.grown") or extra.get("ops") is None \
            or extra.get("ops_before") is None:
        return None
    if extra["ops"] <= extra["ops_before"]:
        return None
    what = said("torch." + label.values["count"].key.removeprefix("torch.n_"))
    return said("torch.ops_grow", ops=extra["ops"], before=extra["ops_before"], what=what)


# --- recognisers of the families several exercises share ---------------------------------------------------
def dtype() -> D.Recogniser:
    """"the output's dtype is not the input's": the dtype sentence's check failed."""
    return D.failed_check("dtype", raises=True)


def leading_dims() -> D.Recogniser:
    """"right only for one number of leading dimensions": the leading dims sentence's check failed."""
    return D.failed_check("leading dims", raises=True)


def non_finite_on(spec_id: str, what) -> D.Recogniser:
    """Fits when the sentence ``spec_id`` failed and the student's output holds NaN or inf on one of its
    cases where the reference is finite; says which case, where, and ``what`` it means (words said later)."""
    def recognise(ev):
        if spec_id not in ev.failed:
            return None
        import numpy as np
        for i, case in enumerate(ev.cases):
            if case.spec != spec_id or ev.raw[i] is None or not isinstance(ev.expected[i], type(ev.raw[i])):
                continue
            for (name, out), (_, ref) in zip(_tensors(ev.raw[i]), _tensors(ev.expected[i])):
                try:
                    a, e = D.array(out), D.array(ref)
                except Exception:  # noqa: BLE001 - not an array
                    continue
                if a.shape == e.shape and a.dtype.kind == "f" and not np.isfinite(a).all() and np.isfinite(e).all():
                    return said("torch.non_finite", name=name, how=D.relation(e, a), case=case.label, what=what)
        return None
    return recognise


def matches_any(*mutants, text="") -> D.Recogniser:
    """Fits when one of the ``mutants`` gives the student's values on every case (D.matches); ``text``: what
    that is, in words said later (an exercise's ``say(...)``)."""
    return D.any_of(*(D.matches(m, text=text) for m in mutants))


def in_float64(mutant):
    """``mutant`` computed on float64 copies of its floating tensors, its result cast back to the first one's
    dtype: the same mistake written by a student who widens first (where float32 would overflow or
    underflow, the two differ)."""
    def widened(*args, **kwargs):
        import torch
        dtype = next((a.dtype for a in args if torch.is_tensor(a) and a.is_floating_point()), None)
        wide = [a.to(torch.float64) if torch.is_tensor(a) and a.is_floating_point() else a for a in args]
        out = mutant(*wide, **kwargs)
        return out.to(dtype) if torch.is_tensor(out) and dtype is not None else out
    widened.__name__ = widened.__qualname__ = f"{mutant.__name__}_in_float64"
    return widened


def matches_where_finite(mutant) -> D.Recogniser:
    """Fits when ``mutant`` gives the student's values wherever the student's are finite, on every
    wrong case: the same mistake, with NaN where a row was left with no visible key (the mutant gives 0).
    The finite values differ from the reference's somewhere: NaN alone (an overflow) is not this mistake."""
    def recognise(ev):
        import numpy as np
        theirs = ev.implementation_outputs(mutant)
        seen, differs = [], False
        for i in ev.usable("all"):
            if not ev.wrong(i, ()) or theirs[i] is None:
                continue
            a, e, r = D.array(ev.outputs[i]), D.array(theirs[i]), D.array(ev.expected[i])
            rtol, atol = compare.tolerance(ev.outputs[i], theirs[i], ev.rtol, ev.atol)
            finite = np.isfinite(a)
            if a.shape != e.shape or not finite.any() or not np.allclose(a[finite], e[finite], rtol=rtol, atol=atol):
                return None
            differs = differs or not np.allclose(a[finite], r[finite], rtol=rtol, atol=atol)
            label = ev.cases[i].label
            seen.append(label if finite.all() else said("torch.nan_no_key", case=label))
        return said("torch.mistakes_outputs", cases=D.listed(seen[:3])) if seen and differs else None
    return recognise


# --- the Transformer block's and LM's cases, causality and references' RoPE tables ----------------------------

def block_weights(d_model, d_ff, seed, prefix=""):
    """A Transformer block's weights by their state-dict names (``prefix`` + "ln1.weight", ...)."""
    shapes = {"ln1.weight": (d_model,), "attn.q_proj.weight": (d_model, d_model), "attn.k_proj.weight": (d_model, d_model),
              "attn.v_proj.weight": (d_model, d_model), "attn.output_proj.weight": (d_model, d_model),
              "ln2.weight": (d_model,), "ffn.w1.weight": (d_ff, d_model), "ffn.w2.weight": (d_model, d_ff),
              "ffn.w3.weight": (d_ff, d_model)}
    weights = {}
    for i, (name, shape) in enumerate(shapes.items()):
        if len(shape) == 1:                                # a norm's gain: near 1, not 1, so a missing one shows
            weights[prefix + name] = 1 + randn(*shape, seed=seed + i, scale=0.2)
        else:
            weights[prefix + name] = randn(*shape, seed=seed + i, scale=shape[1] ** -0.5)
    return weights


def changed_last(case, change):
    """The case again with its last position changed ("random inputs 2 (its last position changed)"): a
    causal model's earlier outputs stay the same."""
    args = list(case.args)
    args[0] = change(args[0].clone())
    return Case(said("torch.changed_last", case=case.label), tuple(args), dict(case.kwargs))


def causality(cases, outputs):
    """Changing the last position of the input changes no earlier position of the output (words said later)."""
    import torch
    by_label = dict(zip((str(c.label) for c in cases), outputs))
    for case, out in zip(cases, outputs):
        label = case.label
        if not (isinstance(label, Said) and label.key == "torch.changed_last"):
            continue
        if str(label.values["case"]) not in by_label:
            continue
        before = by_label[str(label.values["case"])]
        earlier = (before[..., :-1, :] - out[..., :-1, :]).abs().amax(dim=(0, -1))
        moved = torch.nonzero(earlier > 1e-9).flatten().tolist()
        if moved:
            return said("torch.causality", case=label, position=moved[0])
    return None


def exact_rope(model) -> None:
    """Rebuild every RoPE table of ``model`` in float64: seqlab.model stores them in float32 (ample for
    training), which would put the reference 1e-8 away from a student's float64 angles."""
    import torch

    from seqlab.model import RotaryPositionalEmbedding
    from seqlab.model.rope import rope_angles
    for rope in (m for m in model.modules() if isinstance(m, RotaryPositionalEmbedding)):
        angles = rope_angles(rope.theta, rope.d_k, rope.max_seq_len, dtype=torch.float64)
        rope.cos, rope.sin = angles.cos(), angles.sin()


# --- what the mutants share ---------------------------------------------------------------------------------
def plain_softmax(x, dim=-1):
    e = (x - x.amax(dim, keepdim=True)).exp()
    return e / e.sum(dim, keepdim=True)


def rms(x, weight, eps):
    """RMSNorm, the mutants' own."""
    return x / (x.pow(2).mean(-1, keepdim=True) + eps).sqrt() * weight


def _rope(t, theta, *, half_split=False):
    """t (..., heads, seq, w): pair (2k, 2k+1) at position i rotated by i * theta^(-2k/w)."""
    import torch

    from seqlab.model.rope import rope_angles
    seq, width = t.shape[-2], t.shape[-1]
    angles = rope_angles(theta, width, seq, dtype=t.dtype)
    cos, sin = angles.cos(), angles.sin()
    if half_split:
        a, b = t[..., :width // 2], t[..., width // 2:]
        return torch.cat((a * cos - b * sin, a * sin + b * cos), dim=-1)
    even, odd = t[..., 0::2], t[..., 1::2]
    return torch.stack((even * cos - odd * sin, even * sin + odd * cos), dim=-1).flatten(-2)


def block(x, weights, num_heads, theta, eps, prefix="", *, post_norm=False, attention_residual=True,
          ffn_residual=True, shift=0, rope=True, half_split=False, scale_width=True, norms_swapped=False, relu=False):
    """The Transformer block written plainly, with the slips its mutants (and the LM's) make as options."""
    import torch
    w = {k[len(prefix):]: v for k, v in weights.items() if k.startswith(prefix)}
    *batch, seq, d_model = x.shape
    width = d_model // num_heads
    ln1, ln2 = (w["ln2.weight"], w["ln1.weight"]) if norms_swapped else (w["ln1.weight"], w["ln2.weight"])

    def norm(h, gain):
        return rms(h, gain, eps)

    def attend(h):
        def heads(t):
            return t.view(*batch, seq, num_heads, width).transpose(-3, -2)
        q, k, v = (heads(h @ w[f"attn.{n}_proj.weight"].T) for n in "qkv")
        if rope:
            q, k = (_rope(t, theta, half_split=half_split) for t in (q, k))
        scores = q @ k.transpose(-2, -1) / math.sqrt(width if scale_width else d_model)
        scores = scores.masked_fill(~torch.ones(seq, seq, dtype=torch.bool).tril(shift), float("-inf"))
        probs = torch.nan_to_num(plain_softmax(scores, -1), nan=0.0)   # a row with no visible key: 0
        out = (probs @ v).transpose(-3, -2).reshape(*batch, seq, d_model)
        return out @ w["attn.output_proj.weight"].T

    def ffn(h):
        a = h @ w["ffn.w1.weight"].T
        gate = a.clamp_min(0) if relu else a * torch.sigmoid(a)
        return (gate * (h @ w["ffn.w3.weight"].T)) @ w["ffn.w2.weight"].T

    if post_norm:                                          # norm(x + sublayer(x)), the 2017 Transformer's order
        z = norm(x + attend(x), ln1)
        return norm(z + ffn(z), ln2)
    a = attend(norm(x, ln1))
    z = x + a if attention_residual else a
    f = ffn(norm(z, ln2))
    return z + f if ffn_residual else f
