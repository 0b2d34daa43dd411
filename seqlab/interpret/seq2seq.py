"""The course's questions asked of every encoder-decoder: the RNN, LSTM and GRU encoder-decoders with
and without attention, and the Transformer, through their taps (seqlab.model.taps).

Every measurement reads one source (ids (S,)) and a target, by default the model's own greedy
output (:func:`greedy_target`, decided here once). The decoder reads BOS + target and predicts the
target then EOS: T = len(target) + 1 steps, predicted[t] the token scored at step t.

- :func:`connectivity`: D[t, s] = ||d logits[t] / d e_s||, how much output step t depends on source
  position s (seqlab.seq2seq.inspection.dependency_map, the code the paths experiment measures
  with); for an RNN with attention, also through the attention alone or the recurrent state alone.
- :func:`seq2seq_patch`: recovery of the logit difference at one step when one clean activation
  goes into the run of a corrupted source: a source embedding, an encoder state, a decoder
  position, or the context (the attention's context vector; for the plain RNN, the final encoder
  state the decoder starts from).
- :func:`cross_knockout`: the drop in log p of each step's token when the decoder (each layer of
  it) may not attend to a source position (models with attention).
- :func:`decoder_lens`: the logit lens on the decoder (every model), :func:`decoder_attribution`:
  direct logit attribution on a pre-norm Transformer decoder (the only one whose output is a sum).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from seqlab.interpret.inputs import SATURATED, check_token, model_device
from seqlab.interpret.lens import LogitLens, check_top_k, lens_table
from seqlab.interpret.notes import Note, collect, resolution_note
from seqlab.model.activations import log_softmax
from seqlab.model.taps import Taps
from seqlab.runs import unwrap_model
from seqlab.seq2seq.base import Seq2SeqModel
from seqlab.seq2seq.config import BOS_ID, EOS_ID
from seqlab.seq2seq.inspection import available_paths, dependency_map

S2S_WHERE = ("source", "encoder", "decoder", "context")


def check_seq2seq(model) -> Seq2SeqModel:
    model = unwrap_model(model)
    if not isinstance(model, Seq2SeqModel):
        raise TypeError(f"this measurement reads an encoder-decoder (seqlab.seq2seq), got {type(model).__name__}; "
                        "for a language model use seqlab.interpret's language-model functions")
    return model


def _source(model: Seq2SeqModel, ids, name: str = "source") -> torch.Tensor:
    ids = torch.as_tensor(ids, device=model_device(model))
    if ids.dim() == 2 and ids.shape[0] == 1:
        ids = ids[0]
    if ids.dim() != 1 or ids.numel() == 0:
        raise ValueError(f"the {name} must be one non-empty sequence of ids, got shape {tuple(ids.shape)}")
    from seqlab.model.embedding import check_token_ids

    check_token_ids(ids, model.config.src_vocab_size, name)
    return ids.long()


def greedy_target(model: Seq2SeqModel, src_ids) -> list[int]:
    """The model's own output for the source (greedy, without EOS): the default target of every
    measurement here."""
    from seqlab.seq2seq.decoding import decode_limit, translate_ids

    model = check_seq2seq(model)
    src = _source(model, src_ids)
    limit = decode_limit(model, [len(src) + 1])
    if model.max_target_length is not None:  # the decoder then reads BOS + the output: one position more
        limit = min(limit, model.max_target_length - 1)
    (out,) = translate_ids(model, [src.tolist()], max_len=limit, device=src.device)
    return [t for t in out if t != EOS_ID]


def _pair(model: Seq2SeqModel, src_ids, target) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(source (S,), decoder input BOS + target (T,), predicted tokens target + EOS (T,))."""
    src = _source(model, src_ids)
    if target is None:
        target = greedy_target(model, src)
    target = [check_token(model.config.tgt_vocab_size, t, "target token") for t in
              (target.tolist() if isinstance(target, torch.Tensor) else list(target))]
    limit = model.max_target_length
    if limit is not None and len(target) + 1 > limit:
        raise ValueError(f"the target has {len(target)} tokens; this model reads at most {limit - 1}")
    device = src.device
    return (src, torch.tensor([BOS_ID, *target], device=device), torch.tensor([*target, EOS_ID], device=device))


def _logits(model, src: torch.Tensor, tgt_in: torch.Tensor, taps: Taps | None = None) -> torch.Tensor:
    with torch.no_grad():
        return model(src[None], tgt_in[None], taps=taps)[0]


def _rnn(model) -> bool:
    return model.config.arch != "transformer"


# --- connectivity -------------------------------------------------------------------------------
@dataclass
class Connectivity:
    """values (T, S): ||d logits[t] / d e_s||; path ("all", "attention" or "state"); the paths this
    architecture has; the predicted tokens (T,)."""

    values: torch.Tensor
    path: str
    paths: tuple[str, ...]
    predicted: list[int]
    notes: list[Note] = field(default_factory=list)


def connectivity(model: Seq2SeqModel, src_ids, target=None, *, path: str = "all") -> Connectivity:
    """How much each output step depends on each source position (module docstring)."""
    model = check_seq2seq(model)
    src, tgt_in, predicted = _pair(model, src_ids, target)
    values = dependency_map(model, src, tgt_in, path=path).float()
    return Connectivity(values, path, available_paths(model), predicted.tolist())


# --- patching -------------------------------------------------------------------------------------
@dataclass
class Seq2SeqPatching:
    """recovery (rows, columns): rows are layers (labels in ``rows``), columns source positions
    (where "source" or "encoder") or decoder steps ("decoder", "context"; one column, "initial
    state", for the plain RNN's context); metric = logit[target] - logit[baseline] at ``step``."""

    recovery: torch.Tensor
    where: str
    rows: list[str]
    axis: str
    step: int
    target: int
    baseline: int
    clean_metric: float
    corrupt_metric: float
    predicted: list[int]
    notes: list[Note] = field(default_factory=list)


def _patch_points(model: Seq2SeqModel, where: str, S: int, T: int) -> tuple[list[str], list[list[str]], str, int]:
    """(row labels, per row the tap names it replaces, the column axis, columns)."""
    cfg, rnn = model.config, _rnn(model)
    layer_names = lambda n, fmt: [[fmt.format(i)] for i in range(n)]
    cell = lambda names: [[n, n.replace(".state", ".cell")] for n, in names] if cfg.cell == "lstm" else names
    if where == "source":
        return ["embedding"], [["encoder.embed"]], "source", S
    if where == "encoder":
        names = layer_names(cfg.num_encoder_layers, "encoder.layers.{}." + ("state" if rnn else "resid_pre"))
        return [f"L{i}" for i in range(cfg.num_encoder_layers)], cell(names) if rnn else names, "source", S
    if where == "decoder":
        names = layer_names(cfg.num_decoder_layers, "decoder.layers.{}." + ("state" if rnn else "resid_pre"))
        return [f"L{i}" for i in range(cfg.num_decoder_layers)], cell(names) if rnn else names, "decoder", T
    if cfg.arch == "transformer":
        return ([f"L{i}" for i in range(cfg.num_decoder_layers)],
                layer_names(cfg.num_decoder_layers, "decoder.layers.{}.cross_attn_out"), "decoder", T)
    if cfg.arch == "rnn-attention":
        return ["context"], [["decoder.context"]], "decoder", T
    return [f"L{i}" for i in range(cfg.num_decoder_layers)], [["decoder.initial"]] * cfg.num_decoder_layers, "initial", 1


def _replacing(rows: torch.Tensor, columns: torch.Tensor, clean, layer: int | None):
    """An edit putting the clean value at each row's column: positions of a (B, n, ...) point,
    the time step of a per-step state (B, H), or, for the decoder's initial state (layers, B, H),
    layer ``layer``."""
    def put(value: torch.Tensor, clean_value: torch.Tensor, point) -> torch.Tensor:
        value = value.clone()
        if layer is not None:  # decoder.initial: (layers, B, H); clean_value (layers, 1, H)
            value[layer, rows] = clean_value[layer, 0]
        elif point.step is not None:  # one step of a recurrent state: (B, H); clean (1, steps, H)
            hit = columns == point.step
            value[rows[hit]] = clean_value[0, point.step]
        else:
            value[rows, columns] = clean_value[0, columns]
        return value

    def edit(value, point):
        if isinstance(value, tuple):  # the LSTM's (h, c) initial state
            return tuple(put(v, c, point) for v, c in zip(value, clean))
        return put(value, clean[point.name] if isinstance(clean, dict) else clean, point)
    return edit


def seq2seq_patch(model: Seq2SeqModel, clean_src, corrupt_src, target=None, *, where: str = "encoder",
                  step: int | None = None, baseline: int | None = None) -> Seq2SeqPatching:
    """Recovery of logit[target] - logit[baseline] at decoder ``step`` when one clean activation is put
    into the corrupted source's run (both read the same decoder input, BOS + the clean target).

    where: "source" (a source embedding), "encoder" (an encoder layer's state at a source position:
    the RNN's state after that step, which the later steps read; the Transformer's residual entering
    the layer), "decoder" (a decoder layer's state or residual at a step), "context" (the attention's
    context vector at a step; each decoder layer's cross-attention output for the Transformer; the
    decoder's initial state, the final encoder state, for the plain RNN). Defaults: the clean
    source's greedy output as target tokens; the first step where the corrupted source predicts
    another token; target the clean token there, baseline the corrupted one. Every patch is one row
    of one batched forward pass.
    """
    model = check_seq2seq(model)
    if where not in S2S_WHERE:
        raise ValueError(f"where must be one of {S2S_WHERE} for an encoder-decoder, got {where!r}")
    src, tgt_in, predicted = _pair(model, clean_src, target)
    bad_src = _source(model, corrupt_src, "corrupted source")
    if bad_src.shape != src.shape:
        raise ValueError(f"the clean source has {src.shape[0]} tokens and the corrupted one {bad_src.shape[0]}: "
                         "patching swaps activations position by position; give sources of the same length")
    T, S = tgt_in.shape[0], src.shape[0]
    labels, names, axis, columns = _patch_points(model, where, S, T)
    every = sorted({name for row in names for name in row})
    good, bad = Taps(read=every), Taps(read=every)
    clean_logits, corrupt_logits = _logits(model, src, tgt_in, good), _logits(model, bad_src, tgt_in, bad)
    vocab = model.config.tgt_vocab_size
    if step is None:
        differs = (corrupt_logits.argmax(-1) != clean_logits.argmax(-1)).nonzero()
        if not len(differs):
            raise ValueError("the corrupted source gives the same prediction at every step: there is nothing to "
                             "recover; change the source where it matters (or give --step and --baseline)")
        step = int(differs[0, 0])
    if not -T <= step < T:
        raise ValueError(f"step {step} is out of range for {T} decoder steps (valid: {-T}..{T - 1})")
    step %= T
    tgt = int(predicted[step])
    if baseline is None:
        baseline = int(corrupt_logits[step].argmax())
        if baseline == tgt:
            baseline = int(clean_logits[step].topk(2).indices[1])
    baseline = check_token(vocab, baseline, "baseline")
    metric = lambda logits: logits[..., step, tgt] - logits[..., step, baseline]
    m_clean, m_corrupt = float(metric(clean_logits)), float(metric(corrupt_logits))
    if m_clean == m_corrupt:
        raise ValueError(f"the logit difference is {m_clean:.6g} with both sources: there is nothing to recover")
    count = len(labels) * columns
    all_rows = torch.arange(count, device=src.device)
    edits = {}
    for r, row_names in enumerate(names):
        rows, cols = all_rows[r * columns:(r + 1) * columns], torch.arange(columns, device=src.device)
        for name in row_names:
            if name == "decoder.initial":
                clean_state = good.cache[name]
                edit = _replacing(rows, cols, clean_state if isinstance(clean_state, tuple) else clean_state, r)
                edits.setdefault(name, []).append(edit)
            else:
                edits.setdefault(name, []).append(_replacing(rows, cols, good.cache[name], None))
    chained = {name: _chain(fns) for name, fns in edits.items()}
    patched = _logits_batch(model, bad_src, tgt_in, count, Taps(edit=chained))
    recovery = ((metric(patched) - m_corrupt) / (m_clean - m_corrupt)).reshape(len(labels), columns)
    notes = collect(resolution_note(torch.tensor([m_clean - m_corrupt]), float(clean_logits[step].abs().max())))
    return Seq2SeqPatching(recovery, where, labels, axis, step, tgt, baseline, m_clean, m_corrupt,
                           predicted.tolist(), notes)


def _chain(fns):
    if len(fns) == 1:
        return fns[0]

    def edit(value, point):
        for fn in fns:
            value = fn(value, point)
        return value
    return edit


def _logits_batch(model, src: torch.Tensor, tgt_in: torch.Tensor, rows: int, taps: Taps) -> torch.Tensor:
    with torch.no_grad():
        return model(src[None].expand(rows, -1), tgt_in[None].expand(rows, -1), taps=taps)


# --- knockout of cross-attention ------------------------------------------------------------------
@dataclass
class CrossKnockout:
    """drops (layers, T, S): the fall in log p(predicted[t]) at step t when that decoder layer may not
    attend to source position s (one layer for an RNN with attention); p (T,) of each predicted token."""

    drops: torch.Tensor
    predicted: list[int]
    p: torch.Tensor
    notes: list[Note] = field(default_factory=list)


def cross_knockout(model: Seq2SeqModel, src_ids, target=None) -> CrossKnockout:
    """Cut cross-attention to one source position (its score set to -inf before the softmax, for every
    decoder query) in one decoder layer at a time; all cuts run as one batch."""
    model = check_seq2seq(model)
    if model.config.arch == "rnn":
        raise ValueError("the plain RNN has no attention to cut: its decoder reads the source only through the "
                         "encoder's final state; patch that instead (seqlab interpret patch --where context)")
    src, tgt_in, predicted = _pair(model, src_ids, target)
    S, T = src.shape[0], tgt_in.shape[0]
    transformer = model.config.arch == "transformer"
    layers = model.config.num_decoder_layers if transformer else 1
    base = log_softmax(_logits(model, src, tgt_in))
    picked = base.gather(-1, predicted[:, None])[:, 0]  # (T,)
    sources = torch.arange(S, device=src.device)
    edits = {}
    for layer in range(layers):
        rows = layer * S + sources

        def cut(value, point, rows=rows):  # row (layer, s) may not read source s
            value = value.clone()
            value[rows, :, :, sources] = float("-inf")
            return value
        edits[f"decoder.layers.{layer}.cross_attn.scores" if transformer else "decoder.cross_attn.scores"] = cut
    logp = log_softmax(_logits_batch(model, src, tgt_in, layers * S, Taps(edit=edits)))  # (rows, T, V)
    after = logp.gather(-1, predicted[None, :, None].expand(layers * S, -1, -1))[..., 0]  # (rows, T)
    drops = (picked[None] - after).reshape(layers, S, T).transpose(1, 2)  # (layers, T, S)
    p = picked.exp()
    notes = []
    if bool((p > SATURATED).all()):
        notes.append(Note("saturated", f"every step's prediction is saturated (p >= {float(p.min()):.6f}): a cut "
                                       "cannot lower log p measurably.", "Give a target the model is less sure of "
                                                                         "(--target), or a longer or unusual source.",
                          {"p": float(p.min())}))
    notes += collect(resolution_note(drops, float(base.abs().max())))
    return CrossKnockout(drops, predicted.tolist(), p, notes)


# --- the decoder's lens and attribution ----------------------------------------------------------
@dataclass
class DecoderLens:
    """The logit lens of the decoder: rows "embed" and each decoder layer (the last is the model's
    output), over the decoder's steps; ``lens`` holds the numbers (seqlab.interpret.lens.LogitLens,
    target = the predicted token of each step)."""

    rows: list[str]
    lens: LogitLens
    predicted: list[int]
    notes: list[Note] = field(default_factory=list)


def decoder_lens(model: Seq2SeqModel, src_ids, target=None, *, top_k: int = 5) -> DecoderLens:
    """Each decoder layer's output read as if it were the last: the Transformer's residual through the
    decoder's final norm (pre-norm) and the output layer; an RNN's layer state through the output
    layer (after the model's own attention and combination, for an RNN with attention)."""
    model = check_seq2seq(model)
    top_k = check_top_k(top_k, model.config.tgt_vocab_size)
    src, tgt_in, predicted = _pair(model, src_ids, target)
    cfg = model.config
    with torch.no_grad():
        if cfg.arch == "transformer":
            taps = Taps(read=["decoder.layers.*.resid_pre", f"decoder.layers.{cfg.num_decoder_layers - 1}.resid_post"])
            _logits(model, src, tgt_in, taps)
            pre = taps.cache.stack("decoder.layers.*.resid_pre")[:, 0]
            post = taps.cache[f"decoder.layers.{cfg.num_decoder_layers - 1}.resid_post"]
            logits = model.lm_head(model.decoder.final_norm(torch.cat((pre, post))))
        else:
            taps = Taps(read=["decoder.embed", "decoder.layers.*.state", "encoder.output"])
            _logits(model, src, tgt_in, taps)
            states = torch.cat((taps.cache["decoder.embed"], taps.cache.stack("decoder.layers.*.state")[:, 0]))
            if model.attention is not None:
                memory = taps.cache["encoder.output"].expand(states.shape[0], -1, -1)
                states = model.attention(states, memory, model.attention.prepare_keys(memory))
            logits = model.lm_head(states)
    rows = ["embed"] + [f"L{i}" for i in range(cfg.num_decoder_layers)]
    return DecoderLens(rows, lens_table(logits, predicted, top_k), predicted.tolist())


@dataclass
class DecoderAttribution:
    """Direct contributions to logit[target] (- logit[baseline]) at decoder ``step``: embed (the
    decoder's input residual: embedding and positions), self_heads and cross_heads (L, H), mlps (L,),
    bias (the final LayerNorm's shift, 0 for RMSNorm) and total, which they sum to."""

    embed: float
    self_heads: torch.Tensor
    cross_heads: torch.Tensor
    mlps: torch.Tensor
    bias: float
    total: float
    step: int
    target: int
    baseline: int | None
    predicted: list[int]
    notes: list[Note] = field(default_factory=list)


def decoder_attribution(model: Seq2SeqModel, src_ids, target=None, *, step: int = 0,
                        baseline: int | None = None) -> DecoderAttribution:
    """Direct logit attribution at one decoder step of a pre-norm Transformer (its decoder's output
    is a sum of the embedding, every head and every feed-forward; the final norm's divisor frozen at
    that sum, tap ``decoder.ln_final.scale``). The RNNs' recurrence and a post-norm Transformer's
    renormalised residual are not sums of parts: ValueError."""
    model = check_seq2seq(model)
    cfg = model.config
    if cfg.arch != "transformer" or cfg.norm_position != "pre":
        raise ValueError(f"direct logit attribution needs a pre-norm Transformer decoder (a sum of parts); this model "
                         f"is {cfg.arch}{', post-norm' if cfg.arch == 'transformer' else ''}: use lens, patch or "
                         "knockout instead")
    src, tgt_in, predicted = _pair(model, src_ids, target)
    T = tgt_in.shape[0]
    if not -T <= step < T:
        raise ValueError(f"step {step} is out of range for {T} decoder steps (valid: {-T}..{T - 1})")
    step %= T
    tgt = int(predicted[step])
    if baseline is not None:
        baseline = check_token(cfg.tgt_vocab_size, baseline, "baseline")
    taps = Taps(read=["decoder.layers.0.resid_pre", "decoder.layers.*.self_attn.head_out",
                      "decoder.layers.*.cross_attn.head_out", "decoder.layers.*.mlp_out", "decoder.ln_final.scale"])
    logits = _logits(model, src, tgt_in, taps)[step]
    with torch.no_grad():
        cache, norm = taps.cache, model.decoder.ln_final
        weight = model.lm_head.weight
        direction = weight[tgt] - (weight[baseline] if baseline is not None else 0)
        scale = cache["decoder.ln_final.scale"][0, step]
        readout = lambda part: norm.frozen(part, scale) @ direction
        self_heads = readout(cache.stack("decoder.layers.*.self_attn.head_out")[:, 0, step])
        cross_heads = readout(cache.stack("decoder.layers.*.cross_attn.head_out")[:, 0, step])
        mlps = readout(cache.stack("decoder.layers.*.mlp_out")[:, 0, step])
        embed = readout(cache["decoder.layers.0.resid_pre"][0, step])
        bias = float(norm.bias @ direction) if getattr(norm, "bias", None) is not None else 0.0
        total = logits[tgt] - (logits[baseline] if baseline is not None else 0)
    return DecoderAttribution(float(embed), self_heads, cross_heads, mlps, bias, float(total), step, tgt, baseline,
                              predicted.tolist())
