"""seqlab.interpret on every encoder-decoder, each measurement against an oracle written here: a
naive loop of one forward pass per patch or cut, the activation replaced by a forward hook (or, for
a recurrent state, by a wrapper around the cell's step); a naive loop of hooks and the model's own
modules for the lens; torch.autograd for dependencies; the sum rule and each part recomputed from
hooks for attribution; and hand-built models whose answer is known (attention that reads only
source position 0)."""

from __future__ import annotations

import pytest
import torch

from seqlab.interpret import (
    direct_logit_attribution,
    greedy_target,
    knockout,
    logit_lens,
    patch,
    token_dependencies,
)
from seqlab.model.taps import attention_patterns
from seqlab.seq2seq.build import build_model
from seqlab.seq2seq.config import BOS_ID, EOS_ID, Seq2SeqConfig

pytestmark = pytest.mark.usefixtures("one_thread")

SRC, TGT = 12, 10
CLEAN = torch.tensor([4, 7, 9, 5, 6, 11])
CORRUPT = torch.tensor([4, 8, 9, 5, 10, 11])
TARGET = [5, 7, 4, 9]
MODELS = {
    "rnn-gru": dict(arch="rnn", cell="gru"),
    "rnn-lstm": dict(arch="rnn", cell="lstm"),
    "attention-rnn": dict(arch="rnn-attention", cell="rnn"),
    "attention-lstm-additive": dict(arch="rnn-attention", cell="lstm", attention_score="additive"),
    "transformer": dict(arch="transformer", norm_position="pre", norm="rmsnorm", positional="rope"),
    "transformer-post": dict(arch="transformer"),
}


def make(name: str, seed: int = 0):
    torch.manual_seed(seed)
    model = build_model(Seq2SeqConfig(src_vocab_size=SRC, tgt_vocab_size=TGT, d_model=8, num_heads=2,
                                      context_length=16, **MODELS[name]), dtype=torch.float64).eval()
    with torch.no_grad():  # larger weights than the initialisation: predictions far from uniform
        for p in model.parameters():
            p.mul_(2.0)
    return model


def logits_of(model, src, tgt_in, hooks=()):
    handles = []
    for module, kind, hook in hooks:
        if kind == "pre":
            handles.append(module.register_forward_pre_hook(hook))
        else:
            handles.append(module.register_forward_hook(hook))
    try:
        with torch.no_grad():
            return model(src[None], tgt_in[None])[0]
    finally:
        for handle in handles:
            handle.remove()


class StepHook:
    """Wraps one recurrent cell's step (``cell.recur``): records the state after each step, and can
    replace the state after step ``at`` with ``value`` (a hook on the recurrence, written here)."""

    def __init__(self, cell, at=None, value=None):
        self.cell, self.at, self.value, self.seen = cell, at, value, []

    def __enter__(self):
        original = type(self.cell).recur.__get__(self.cell)

        def step(gx, state):
            new = original(gx, state)
            if len(self.seen) == self.at:
                new = self.value
            self.seen.append(new)
            return new
        self.cell.recur = step
        return self

    def __exit__(self, *exc):
        del self.cell.recur


def test_the_default_target_is_the_greedy_output():
    model = make("transformer")
    tokens, out = [BOS_ID], []
    for _ in range(15):  # a greedy loop of full forward passes, written here (the decoder reads 16 at most)
        step = int(logits_of(model, CLEAN, torch.tensor(tokens))[-1, 2:].argmax()) + 2  # PAD (0), BOS (1) never generated
        if step == EOS_ID:
            break
        out.append(step)
        tokens.append(step)
    assert greedy_target(model, CLEAN) == out
    assert logit_lens(model, CLEAN).predicted == out + [EOS_ID]


def naive_patch(model, name: str, where: str, step: int, target: int, baseline: int):
    """(rows, columns) recovery: one forward per patch, the clean value put in by a hook."""
    cfg = model.config
    tgt_in = torch.tensor([BOS_ID, *TARGET])
    metric = lambda logits: float(logits[step, target] - logits[step, baseline])
    m_clean, m_corrupt = metric(logits_of(model, CLEAN, tgt_in)), metric(logits_of(model, CORRUPT, tgt_in))
    recover = lambda value: (value - m_corrupt) / (m_clean - m_corrupt)
    rnn = cfg.arch != "transformer"
    rows = []

    def positions_patch(module, kind, count, select=lambda out: out):
        seen = []
        logits_of(model, CLEAN, tgt_in, [(module, kind, (lambda m, a: seen.append(a[0])) if kind == "pre"
                                          else (lambda m, a, out: seen.append(select(out))))])
        clean = seen[0]
        row = []
        for p in range(count):
            def swap(value, p=p):
                value = value.clone()
                value[:, p] = clean[:, p]
                return value
            hook = (lambda m, a: (swap(a[0]),) + a[1:]) if kind == "pre" else (lambda m, a, out: swap(out))
            row.append(recover(metric(logits_of(model, CORRUPT, tgt_in, [(module, kind, hook)]))))
        return row

    if where == "source":
        rows.append(positions_patch(model.src_embeddings, "post", len(CLEAN)))
    elif where in ("encoder", "decoder") and not rnn:
        stack = model.encoder.layers if where == "encoder" else model.decoder.layers
        for layer in stack:
            rows.append(positions_patch(layer, "pre", len(CLEAN) if where == "encoder" else len(tgt_in)))
    elif where in ("encoder", "decoder"):
        recurrent = model.encoder if where == "encoder" else model.decoder
        src_len = len(CLEAN) if where == "encoder" else len(tgt_in)
        for cell in recurrent.cells:
            with StepHook(cell) as clean_run:
                logits_of(model, CLEAN, tgt_in)
            row = []
            for s in range(src_len):
                with StepHook(cell, at=s, value=clean_run.seen[s]):
                    row.append(recover(metric(logits_of(model, CORRUPT, tgt_in))))
            rows.append(row)
    elif cfg.arch == "transformer":  # context: each decoder layer's cross-attention output
        for layer in model.decoder.layers:
            rows.append(positions_patch(layer.cross_attn, "post", len(tgt_in)))
    elif cfg.arch == "rnn-attention":  # context: c_t, the first half of what the combination layer reads
        seen = []
        logits_of(model, CLEAN, tgt_in, [(model.attention.combine, "pre", lambda m, a: seen.append(a[0]))])
        row = []
        for t in range(len(tgt_in)):
            def swap(m, a, t=t):
                value = a[0].clone()
                value[:, t, :cfg.d_model] = seen[0][:, t, :cfg.d_model]
                return (value,)
            row.append(recover(metric(logits_of(model, CORRUPT, tgt_in, [(model.attention.combine, "pre", swap)]))))
        rows.append(row)
    else:  # the plain RNN's context: the encoder's final state, layer by layer
        finals = []
        logits_of(model, CLEAN, tgt_in, [(model.encoder, "post", lambda m, a, out: finals.append(out[1]))])
        for layer in range(cfg.num_decoder_layers):
            def swap(m, a, out, layer=layer):
                final = tuple(x.clone() for x in out[1]) if isinstance(out[1], tuple) else out[1].clone()
                for x, c in zip(final if isinstance(final, tuple) else (final,),
                                finals[0] if isinstance(finals[0], tuple) else (finals[0],)):
                    x[layer] = c[layer]
                return out[0], final
            rows.append([recover(metric(logits_of(model, CORRUPT, tgt_in, [(model.encoder, "post", swap)])))])
    return torch.tensor(rows, dtype=torch.float64)


@pytest.mark.parametrize("name", list(MODELS))
@pytest.mark.parametrize("where", ["source", "encoder", "decoder", "context"])
def test_patching_matches_one_forward_per_patch(name, where):
    model = make(name)
    result = patch(model, CLEAN, CORRUPT, target=TARGET, where=where, position=2, baseline=3)
    expected = naive_patch(model, name, where, 2, result.target, 3)
    assert result.recovery.shape == expected.shape, (result.recovery.shape, expected.shape)
    torch.testing.assert_close(result.recovery.double(), expected, rtol=1e-6, atol=1e-6)
    assert result.target == TARGET[2] and float(result.recovery.abs().max()) > 1e-4  # not all zero


def test_patching_defaults_to_the_first_step_the_corruption_changes():
    model = make("attention-rnn", seed=3)
    tgt_in = torch.tensor([BOS_ID, *TARGET])
    differs = (logits_of(model, CLEAN, tgt_in).argmax(-1) != logits_of(model, CORRUPT, tgt_in).argmax(-1)).nonzero()
    result = patch(model, CLEAN, CORRUPT, target=TARGET, where="source")
    assert result.position == int(differs[0, 0])
    with pytest.raises(ValueError, match="nothing to recover"):
        patch(model, CLEAN, CLEAN, target=TARGET, where="source")
    with pytest.raises(ValueError, match="the clean source has 6 tokens and the corrupted one 5"):
        patch(model, CLEAN, CORRUPT[:5], target=TARGET)


def naive_cross_knockout(model, layers: int):
    """Each (layer, source s): that attention's key padding mask hides s (a pre-hook on the module)."""
    tgt_in = torch.tensor([BOS_ID, *TARGET])
    predicted = torch.tensor([*TARGET, EOS_ID])
    logp = lambda hooks=(): logits_of(model, CLEAN, tgt_in, hooks).log_softmax(-1).gather(-1, predicted[:, None])[:, 0]
    base = logp()
    out = torch.zeros(layers, len(tgt_in), len(CLEAN), dtype=torch.float64)
    for layer in range(layers):
        for s in range(len(CLEAN)):
            hidden = torch.ones(1, len(CLEAN), dtype=torch.bool)
            hidden[0, s] = False
            if model.config.arch == "transformer":
                module = model.decoder.layers[layer].cross_attn
                handle = module.register_forward_pre_hook(
                    lambda m, a, kw: (a, {**kw, "key_padding_mask": hidden}), with_kwargs=True)
            else:  # RNNAttention.forward(query, memory, keys, src_padding_mask)
                handle = model.attention.register_forward_pre_hook(lambda m, a: (a[0], a[1], a[2], hidden))
            try:
                out[layer, :, s] = base - logp()
            finally:
                handle.remove()
    return out


@pytest.mark.parametrize("name", ["attention-rnn", "attention-lstm-additive", "transformer", "transformer-post"])
def test_cross_attention_knockout_matches_a_padding_mask_per_cut(name):
    model = make(name)
    result = knockout(model, CLEAN, target=TARGET)
    layers = model.config.num_decoder_layers if model.config.arch == "transformer" else 1
    expected = naive_cross_knockout(model, layers)
    torch.testing.assert_close(result.drops.double(), expected, rtol=1e-6, atol=1e-6)
    assert float(result.drops.abs().max()) > 1e-3
    with pytest.raises(ValueError, match="plain RNN has no attention to cut"):
        knockout(make("rnn-gru"), CLEAN, target=TARGET)


def attention_on_position_0():
    """An RNN with additive attention that reads only source position 0: the encoder forgets after
    one step (recurrent weights 0, no biases), token 4's embedding is large and every other token's
    0, so h_0 is +-1 and every later state 0; the score v . tanh(W_k h_j) is +60 at j = 0 and 0 elsewhere."""
    torch.manual_seed(5)
    model = build_model(Seq2SeqConfig("rnn-attention", SRC, TGT, d_model=8, num_encoder_layers=1, num_decoder_layers=1,
                                      cell="rnn", attention_score="additive"), dtype=torch.float64).eval()
    with torch.no_grad():
        encoder = model.encoder.cells[0]
        encoder.weight_hh.zero_(), encoder.bias_ih.zero_(), encoder.bias_hh.zero_()
        model.src_embeddings.weight.zero_()
        model.src_embeddings.weight[4] = 10.0 * torch.randn(8, dtype=torch.float64).sign()
        model.attention.query_proj.weight.zero_()
        model.attention.key_proj.weight.copy_(20.0 * torch.eye(8, dtype=torch.float64))
        h0 = torch.tanh(encoder.weight_ih @ model.src_embeddings.weight[4])
        model.attention.score_vector.copy_(7.5 * torch.tanh(20.0 * h0).sign())
    return model


def test_attention_that_reads_only_position_0_loses_only_that_position():
    model = attention_on_position_0()
    src = torch.tensor([4, 5, 6, 7, 8])
    result = knockout(model, src, target=[5, 6, 7])
    assert torch.equal(result.drops[..., 1:], torch.zeros_like(result.drops[..., 1:]))
    assert float(result.drops[..., 0].abs().min()) > 1e-3
    pattern = attention_patterns(model, src[None], torch.tensor([[BOS_ID, 5, 6, 7]]))[0]
    assert float(pattern.detach()[..., 0].min()) > 1 - 1e-12
    # through attention the decoder reads position 0 (the other weights are e^-60); through the
    # recurrent state only the last position, which the forgetful encoder's final state holds
    attention = token_dependencies(model, src, target=[5, 6, 7], path="attention").values
    state = token_dependencies(model, src, target=[5, 6, 7], path="state").values
    assert float(attention[:, 1:].max()) < 1e-20 and float(attention[:, 0].min()) > 1e-3
    assert torch.equal(state[:, :-1], torch.zeros_like(state[:, :-1])) and float(state[:, -1].min()) > 1e-3


@pytest.mark.parametrize("name", list(MODELS))
def test_the_decoder_lens_ends_with_the_models_own_output(name):
    model = make(name)
    lens = logit_lens(model, CLEAN, target=TARGET, top_k=3)
    expected = logits_of(model, CLEAN, torch.tensor([BOS_ID, *TARGET]))
    assert lens.logits.shape == (model.config.num_decoder_layers + 1, len(TARGET) + 1, TGT)
    torch.testing.assert_close(lens.logits[-1], expected, rtol=1e-9, atol=1e-9)
    assert lens.rows == ["embed", "L0", "L1"] and lens.predicted == [*TARGET, EOS_ID]


def test_the_decoder_lens_reads_each_layer_through_the_models_readout():
    """The first decoder layer's state, captured by a hook on the cell's step, through the model's
    output layer (the plain RNN reads its top layer's state directly)."""
    model = make("rnn-gru")
    with StepHook(model.decoder.cells[0]) as run:
        logits_of(model, CLEAN, torch.tensor([BOS_ID, *TARGET]))
    expected = model.lm_head(torch.stack(run.seen, dim=1))[0]
    torch.testing.assert_close(logit_lens(model, CLEAN, target=TARGET).logits[1], expected)


def test_decoder_attribution_sums_to_the_logit_and_refuses_what_is_not_a_sum():
    model = make("transformer")
    tgt_in = torch.tensor([BOS_ID, *TARGET])
    logits = logits_of(model, CLEAN, tgt_in)
    for step, baseline in ((1, None), (3, 2)):
        result = direct_logit_attribution(model, CLEAN, target=TARGET, position=step, baseline=baseline)
        parts = result.embed + float(result.heads.sum() + result.cross_heads.sum() + result.mlps.sum()) + result.bias
        want = float(logits[step, result.target] - (logits[step, baseline] if baseline is not None else 0))
        assert abs(parts - want) < 1e-9 and abs(result.total - want) < 1e-9
        assert result.target == [*TARGET, EOS_ID][step] and result.heads.shape == (2, 2)
    for name in ("transformer-post", "rnn-lstm"):
        with pytest.raises(ValueError, match="pre-norm Transformer decoder"):
            direct_logit_attribution(make(name), CLEAN, target=TARGET)


def test_the_logits_measure_is_the_jacobian_and_the_paths_are_named():
    model = make("attention-lstm-additive")
    src, tgt_in = CLEAN, torch.tensor([BOS_ID, *TARGET])
    emb = model.src_embeddings(src[None]).detach()

    def logits(e):
        hook = model.src_embeddings.register_forward_hook(lambda m, a, out: e)
        try:
            return model(src[None], tgt_in[None])[0]
        finally:
            hook.remove()
    want = torch.autograd.functional.jacobian(logits, emb).pow(2).sum(dim=(1, 2, 4)).sqrt()
    result = token_dependencies(model, src, target=TARGET, measure="logits")
    torch.testing.assert_close(result.values.double(), want)
    assert result.paths == ("all", "attention", "state")
    assert token_dependencies(make("rnn-gru"), src, target=TARGET).paths == ("all",)


def naive_lens(model, src, tgt_in):
    """Every row of the decoder's lens, one hook per layer: the Transformer's residual entering each
    decoder layer and leaving the last, through the decoder's final norm and the output layer; an
    RNN's target embedding and each layer's states (a wrapper around the cell's step), through its
    attention over the encoder's states (captured by a hook) and the output layer."""
    seen = []
    if model.config.arch == "transformer":
        layers = model.decoder.layers
        hooks = [(layer, "pre", lambda m, a: seen.append(a[0])) for layer in layers]
        hooks.append((layers[-1], "post", lambda m, a, out: seen.append(out)))
        logits_of(model, src, tgt_in, hooks)
        return torch.stack([model.lm_head(model.decoder.final_norm(x))[0] for x in seen])
    memory = []
    hooks = [(model.tgt_embeddings, "post", lambda m, a, out: seen.append(out)),
             (model.encoder, "post", lambda m, a, out: memory.append(out[0]))]
    runs = [StepHook(cell) for cell in model.decoder.cells]
    for run in runs:
        run.__enter__()
    try:
        logits_of(model, src, tgt_in, hooks)
    finally:
        for run in runs:
            run.__exit__()
    h = lambda state: state[0] if isinstance(state, tuple) else state  # the LSTM's (h, c)
    states = [seen[0]] + [torch.stack([h(state) for state in run.seen], dim=1) for run in runs]
    if model.attention is not None:
        keys = model.attention.prepare_keys(memory[0])
        states = [model.attention(x, memory[0], keys) for x in states]
    return torch.stack([model.lm_head(x)[0] for x in states])


@pytest.mark.parametrize("name", list(MODELS))
def test_the_lens_matches_a_naive_loop_of_hooks_on_every_layer(name):
    model = make(name)
    lens = logit_lens(model, CLEAN, target=TARGET, top_k=3)
    expected = naive_lens(model, CLEAN, torch.tensor([BOS_ID, *TARGET]))
    torch.testing.assert_close(lens.logits, expected, rtol=1e-9, atol=1e-9)
    probs = expected.softmax(-1)
    predicted = torch.tensor([*TARGET, EOS_ID])
    torch.testing.assert_close(lens.target_prob.double(), probs.gather(-1, predicted.expand(3, -1)[..., None])[..., 0],
                               rtol=1e-6, atol=1e-7)  # probabilities in float32
    assert torch.equal(lens.top_ids[..., 0], expected.argmax(-1))
    assert lens.rows == ["embed", "L0", "L1"]


@pytest.mark.parametrize("norm", ["rmsnorm", "layernorm"])
def test_each_attributed_part_is_its_output_through_the_frozen_final_norm(norm):
    """The parts recomputed from hooks: the residual the first decoder layer reads, each head's share
    of its attention's output projection (the projection's input, head by head), each feed-forward's
    output; each through the decoder's final norm with the divisor of the final residual (a hook on
    the norm) and the output layer's row difference, written out here; LayerNorm's shift is its own part."""
    torch.manual_seed(1)
    model = build_model(Seq2SeqConfig(src_vocab_size=SRC, tgt_vocab_size=TGT, d_model=8, num_heads=2, context_length=16,
                                      arch="transformer", norm_position="pre", norm=norm), dtype=torch.float64).eval()
    with torch.no_grad():  # LayerNorms start with a zero shift: give them one, so that the final norm's counts
        for module in model.modules():
            if isinstance(getattr(module, "bias", None), torch.nn.Parameter):
                module.bias.normal_()
    tgt_in, step, baseline = torch.tensor([BOS_ID, *TARGET]), 2, 5
    seen: dict[str, list] = {}
    keep = lambda key, value: seen.setdefault(key, []).append(value[0, step])
    hooks = [(model.decoder.layers[0], "pre", lambda m, a: keep("embed", a[0])),
             (model.decoder.ln_final, "pre", lambda m, a: keep("final", a[0]))]
    for layer in model.decoder.layers:
        hooks += [(layer.self_attn.output_proj, "pre", lambda m, a: keep("self", a[0])),
                  (layer.cross_attn.output_proj, "pre", lambda m, a: keep("cross", a[0])),
                  (layer.ffn, "post", lambda m, a, out: keep("mlp", out))]
    logits = logits_of(model, CLEAN, tgt_in, hooks)
    model.requires_grad_(False)
    norm_module, weight = model.decoder.ln_final, model.lm_head.weight
    u = weight[TARGET[step]] - weight[baseline]
    final = seen["final"][0]
    if norm == "rmsnorm":
        readout = lambda part: float(part / (final.pow(2).mean() + norm_module.eps).sqrt() * norm_module.weight @ u)
        bias = 0.0
    else:
        centred = final - final.mean()
        readout = lambda part: float((part - part.mean()) / (centred.pow(2).mean() + norm_module.eps).sqrt()
                                     * norm_module.weight @ u)
        bias = float(norm_module.bias @ u)
    d_head, w_o = model.config.d_model // 2, lambda layer, kind: getattr(model.decoder.layers[layer], kind).output_proj.weight
    head = lambda z, layer, kind, h: z[h * d_head:(h + 1) * d_head] @ w_o(layer, kind)[:, h * d_head:(h + 1) * d_head].T
    result = direct_logit_attribution(model, CLEAN, target=TARGET, position=step, baseline=baseline)
    for kind, key, ours in (("self_attn", "self", result.heads), ("cross_attn", "cross", result.cross_heads)):
        want = [[readout(head(seen[key][layer], layer, kind, h)) for h in range(2)] for layer in range(2)]
        torch.testing.assert_close(ours, torch.tensor(want, dtype=torch.float64), rtol=1e-9, atol=1e-9)
    torch.testing.assert_close(result.mlps, torch.tensor([readout(m) for m in seen["mlp"]], dtype=torch.float64))
    assert abs(result.embed - readout(seen["embed"][0])) < 1e-9 and abs(result.bias - bias) < 1e-12
    assert abs(result.total - float(logits[step, TARGET[step]] - logits[step, baseline])) < 1e-9
    assert (norm == "layernorm") == (abs(bias) > 1e-6)  # the shift is a part only where the norm has one


@pytest.mark.parametrize("name", list(MODELS))
def test_dependencies_are_the_gradient_norm_of_each_predicted_tokens_log_probability(name):
    """D[t, s] = ||d log p(y_t) / d e_s||_2 by torch.autograd.functional.jacobian of the log-probabilities
    of the target tokens (read at their steps) with respect to the source embeddings."""
    model = make(name)
    tgt_in, predicted = torch.tensor([BOS_ID, *TARGET]), torch.tensor([*TARGET, EOS_ID])

    def log_p(e):
        hook = model.src_embeddings.register_forward_hook(lambda m, a, out: e)
        try:
            return model(CLEAN[None], tgt_in[None])[0].log_softmax(-1).gather(-1, predicted[:, None])[:, 0]
        finally:
            hook.remove()
    jacobian = torch.autograd.functional.jacobian(log_p, model.src_embeddings(CLEAN[None]).detach())  # (T, 1, S, d)
    result = token_dependencies(model, CLEAN, target=TARGET)
    torch.testing.assert_close(result.values.double(), jacobian[:, 0].norm(dim=-1))
    assert result.measure == "||d log p(y_t) / d e_s||_2" and result.predicted == predicted.tolist()
    torch.testing.assert_close(result.p.double(), log_p(model.src_embeddings(CLEAN[None])).exp().detach())
    with pytest.raises(ValueError, match="every output step"):
        token_dependencies(model, CLEAN, target=TARGET, position=1)
