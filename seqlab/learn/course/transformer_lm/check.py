"""transformer_lm: the reference (seqlab.model.TransformerLM with the given weights), the cases, the checks of
its sentences, its mutants and recognisers (the words are in step.toml)."""

from __future__ import annotations

from seqlab.learn import diagnosis as D
from seqlab.learn.exercise import Case, Check, numbered_cases
from seqlab.learn.kit_torch import (block, block_weights, causality, changed_last, dtype, exact_rope, f32, gen,
                                    plain_softmax, randn, rms, same_dtype_and_values)
from seqlab.learn.words import speaker

say = speaker(__file__)


def reference(ids, weights, num_layers, num_heads, theta=10000.0, eps=1e-5):
    """seqlab.model.TransformerLM (untied output, final RMSNorm) with the given weights, named as in its
    state dict, on ids (batch, seq) -> logits (batch, seq, vocab)."""
    import torch

    from seqlab.model import TransformerLM
    vocab, d_model = weights["token_embeddings.weight"].shape
    model = TransformerLM(vocab, ids.shape[-1], d_model, num_layers, num_heads,
                          weights["layers.0.ffn.w1.weight"].shape[0], rope_theta=theta, norm_eps=eps,
                          attention="reference", dtype=weights["token_embeddings.weight"].dtype)
    model.load_state_dict(weights)
    exact_rope(model)
    with torch.no_grad():
        return model(ids)


def _weights(vocab, d_model, d_ff, num_layers, seed):
    weights = {"token_embeddings.weight": randn(vocab, d_model, seed=seed)}
    for i in range(num_layers):
        weights.update(block_weights(d_model, d_ff, seed + 50 * (i + 1), prefix=f"layers.{i}."))
    weights["ln_final.weight"] = 1 + randn(d_model, seed=seed + 1, scale=0.2)
    weights["lm_head.weight"] = randn(vocab, d_model, seed=seed + 2, scale=d_model ** -0.5)
    return weights


def _args(seed, batch, seq, vocab, d_model, layers, heads, d_ff):
    import torch
    return (torch.randint(0, vocab, (batch, seq), generator=gen(seed + 200)),
            _weights(vocab, d_model, d_ff, layers, seed * 1000), layers, heads)


def cases() -> list[Case]:
    made = numbered_cases(lambda k, *setting: (_args(*setting), {}),
                          ((0, 1, 4, 7, 4, 1, 2, 8), (1, 2, 6, 11, 8, 2, 2, 12), (2, 2, 5, 13, 12, 2, 3, 16)))
    vocab = made[-1].args[1]["token_embeddings.weight"].shape[0]

    def change(ids):
        ids[..., -1] = (ids[..., -1] + 1) % vocab
        return ids
    made.append(changed_last(made[-1], change))
    return made


def _float32_case():
    ids, weights, *rest = _args(4, 1, 4, 7, 8, 2, 2, 12)
    return Case(say("case_f32"), (ids, f32(weights), *rest))


CHECKS = {
    "as given": Check(lambda: [Case(say("case_as_given"), _args(3, 2, 4, 9, 8, 3, 2, 12),
                                    {"theta": 300.0, "eps": 0.05})]),
    "dtype": Check(lambda: [_float32_case()], same_dtype_and_values),
}
relations = causality
axes = {"": ("sequence", "position")}


# --- mistakes -----------------------------------------------------------------------------------------
def _lm(ids, weights, num_layers, num_heads, theta, eps, *, final_norm=True, tied=False, rope=True, probs=False,
        order=None, log_probs=False):
    h = weights["token_embeddings.weight"][ids]
    for i in (range(num_layers) if order is None else order(num_layers)):   # layers in sequence: a loop over depth
        h = block(h, weights, num_heads, theta, eps, f"layers.{i}.", rope=rope)
    if final_norm:
        h = rms(h, weights["ln_final.weight"], eps)
    out = weights["token_embeddings.weight" if tied else "lm_head.weight"]
    logits = h @ out.T
    if log_probs:
        from seqlab.model.activations import log_softmax
        return log_softmax(logits, -1)
    return plain_softmax(logits, -1) if probs else logits


def no_final_norm(ids, weights, num_layers, num_heads, theta=10000.0, eps=1e-5):
    return _lm(ids, weights, num_layers, num_heads, theta, eps, final_norm=False)


def tied_output(ids, weights, num_layers, num_heads, theta=10000.0, eps=1e-5):
    return _lm(ids, weights, num_layers, num_heads, theta, eps, tied=True)


def rope_not_applied(ids, weights, num_layers, num_heads, theta=10000.0, eps=1e-5):
    return _lm(ids, weights, num_layers, num_heads, theta, eps, rope=False)


def softmax_applied(ids, weights, num_layers, num_heads, theta=10000.0, eps=1e-5):
    return _lm(ids, weights, num_layers, num_heads, theta, eps, probs=True)


def log_probabilities_returned(ids, weights, num_layers, num_heads, theta=10000.0, eps=1e-5):
    return _lm(ids, weights, num_layers, num_heads, theta, eps, log_probs=True)


def layers_in_reverse_order(ids, weights, num_layers, num_heads, theta=10000.0, eps=1e-5):
    return _lm(ids, weights, num_layers, num_heads, theta, eps, order=lambda n: reversed(range(n)))


def only_the_first_layer(ids, weights, num_layers, num_heads, theta=10000.0, eps=1e-5):
    return _lm(ids, weights, num_layers, num_heads, theta, eps, order=lambda n: range(1))


def _normalised(kind: str):
    """Fits when, on every case where the output is wrong, it is log-softmax ("log") or softmax ("probs") of the
    reference's logits."""
    def recognise(ev):
        import torch
        seen = []
        for i in ev.usable("all"):
            if not ev.wrong(i, ()):
                continue
            logits, out = ev.expected[i].double(), ev.outputs[i].double()
            shifted = logits - logits.amax(-1, keepdim=True)
            log_p = shifted - shifted.exp().sum(-1, keepdim=True).log()
            if not torch.allclose(out, log_p if kind == "log" else log_p.exp(), rtol=1e-5, atol=1e-7):
                return None
            seen.append(ev.cases[i].label)
        if not seen:
            return None
        what = say("log_probabilities" if kind == "log" else "probabilities")
        return say("output_is", cases=D.listed(seen[:3]), what=what)
    return recognise


MUTANTS = {"no_final_norm": no_final_norm, "tied_output": tied_output, "rope_not_applied": rope_not_applied,
           "softmax_applied": softmax_applied, "log_probabilities_returned": log_probabilities_returned,
           "layers_in_reverse_order": layers_in_reverse_order, "only_the_first_layer": only_the_first_layer}
RECOGNISERS = {"softmax_applied": _normalised("probs"), "log_probabilities_returned": _normalised("log"),
               "as_given": D.failed_check("as given", raises=True), "dtype": dtype()}
