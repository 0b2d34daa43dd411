"""One adapter per model family: what the measurements of seqlab.interpret need to know of a model,
so that lens, attribution, patching, knockout and dependencies are each written once, over these.

:func:`family` wraps a model and one input: :class:`LanguageModel` reads a prompt; an encoder-decoder
reads a source and a target (by default its own greedy output, :func:`greedy_target`), which the
decoder reads after BOS: :class:`TransformerEncoderDecoder`, and :class:`RecurrentEncoderDecoder`
for the RNN, LSTM and GRU with and without attention. Each adapter names

- its positions (the prompt's tokens, the decoder's steps) and the token scored at each;
- its tap points: the residual stream the lens reads (``lens_points``, ``lens_stack``), the parts
  attribution sums (``attribution``), the attention scores knockout cuts (``scores``, ``attentions``),
  what patching replaces (``patch_points``), what dependencies differentiate (``depends_points``);
- its readout, the final norm and the unembedding (``readout``; ``frozen_readout`` for attribution);
- how rows of a batch run (``run_rows``): an encoder-decoder runs each row whole; a language model
  starts a row at its layer over a cached prefix (``grow_prefix``), as a decoding step does.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from seqlab.interpret.inputs import as_batch, check_position, check_token, choose_target, model_device
from seqlab.model import TransformerLM
from seqlab.model.embedding import check_token_ids
from seqlab.model.kv_cache import KVCache
from seqlab.model.taps import ActivationCache, Taps
from seqlab.runs import unwrap_model
from seqlab.seq2seq.config import BOS_ID, EOS_ID

# tokens (rows x positions) one forward pass of a language model's patching batch may carry
TOKENS_PER_PASS = 1 << 14


def family(model, ids, target=None) -> "Family":
    """The adapter of ``model`` (plain, or inside torch.compile / DDP wrappers) reading ``ids``: a
    language model's prompt, with target one token id or None (each measurement then picks the
    model's top token); an encoder-decoder's source (S,), with target its output tokens (default:
    the greedy output)."""
    model = unwrap_model(model)
    if isinstance(model, TransformerLM):
        return LanguageModel(model, ids, target)
    arch = getattr(getattr(model, "config", None), "arch", None)
    if arch in ("transformer", "rnn", "rnn-attention"):
        return (TransformerEncoderDecoder if arch == "transformer" else RecurrentEncoderDecoder)(model, ids, target)
    raise TypeError(f"seqlab.interpret reads a seqlab TransformerLM or encoder-decoder, got {type(model).__name__}")


@dataclass
class Base:
    """A run other rows build on: its ids, logits (positions, vocab) and tap cache; a language
    model's also its KV cache and the residual stream entering each layer (layers, positions, d)."""

    ids: torch.Tensor
    logits: torch.Tensor
    cache: ActivationCache
    kv: KVCache | None = None
    resid: torch.Tensor | None = None


class Family:
    """What every adapter shares; the subclasses set ``model``, ``ids``, ``vocab``, ``layers``,
    ``positions``, the points above, and define ``run(taps, rows, ids, hidden)`` (logits (rows,
    positions, vocab) of ``rows`` copies of the input or of ``ids``, another input of its length),
    ``prompt(ids, name)`` (another input, checked), ``readout(x, cache)`` and ``patch_points(where)``."""

    seq2seq = False
    predicted: torch.Tensor | None = None  # an encoder-decoder's scored token at each step
    where = ("resid_pre", "head_out", "mlp_out")  # what patching may replace
    default_where, default_position = "resid_pre", -1
    paths: tuple[str, ...] = ("all",)  # the routes dependencies can separate (depends_edits)

    def position(self, position: int | None, default: int) -> int:
        return check_position(default if position is None else position, self.positions,
                              "step" if self.seq2seq else "position")

    def target_at(self, position: int, logits: torch.Tensor) -> int:
        """The token scored at ``position``: an encoder-decoder's target token there, else the given
        target or the top token of ``logits`` (vocab,)."""
        if self.predicted is not None:
            return int(self.predicted[position])
        return choose_target(logits, self.target, self.vocab)

    def lens_targets(self) -> torch.Tensor:
        """The token the lens scores at each position (-1: none)."""
        return self.predicted

    def base(self, ids: torch.Tensor | None = None, read=(), upto: int | None = None) -> Base:
        """A run of the input (or ``ids``) keeping the points ``read``, which :meth:`run_rows` builds on."""
        ids = self.ids if ids is None else ids
        taps = Taps(read=read)
        with torch.no_grad():
            return Base(ids, self.run(taps, ids=ids)[0], taps.cache)

    def run_rows(self, base: Base, groups: int, per_group: int, start: int, edits: dict) -> torch.Tensor:
        """Logits of ``groups * per_group`` rows of ``base``, group g's rows (``g * per_group + j``)
        changed by the edits at its points; here every row runs whole: (rows, positions, vocab)."""
        with torch.no_grad():
            return self.run(Taps(edit=edits), groups * per_group, base.ids)

    def measured(self, logits: torch.Tensor, position: int) -> torch.Tensor:
        """The rows of :meth:`run_rows`'s logits at ``position``: (rows, vocab)."""
        return logits[:, position]

    def patch_chunks(self, columns: int, per_column: int):
        """(start, columns) of each batch of patching rows: here all columns in one, rows run whole."""
        yield 0, torch.arange(columns, device=model_device(self.model))

    def state_layer(self, name: str, row: int) -> int | None:
        """The layer patching row ``row`` replaces in a point holding every layer (the RNN's initial state)."""
        return None

    def writable(self, name: str) -> bool:
        """Whether an edit in :meth:`run_rows` may write into the value at ``name`` instead of a copy
        (nothing else holds it)."""
        return False

    def frozen_readout(self, scale: torch.Tensor, direction: torch.Tensor):
        """(part -> its contribution to the logit ``direction`` reads, through the final norm with its
        divisor frozen at ``scale``; the norm's bias's contribution)."""
        norm = self.final_norm
        bias = getattr(norm, "bias", None)
        return (lambda part: norm.frozen(part, scale) @ direction), (0.0 if bias is None else float(bias @ direction))

    def depends_edits(self, path: str) -> dict:
        return {}


class LanguageModel(Family):
    """A TransformerLM reading one prompt."""

    def __init__(self, model: TransformerLM, ids, target: int | None):
        self.model, self.ids = model, as_batch(model, ids)
        if self.ids.shape[0] != 1:
            raise ValueError(f"a measurement reads one prompt, got a batch of {self.ids.shape[0]}")
        self.vocab, self.layers, self.positions = model.config.vocab_size, len(model.layers), self.ids.shape[1]
        self.target = None if target is None else check_token(self.vocab, target, "target")
        self.final_norm = model.ln_final
        self.lens_points = ["layers.*.resid_pre", f"layers.{self.layers - 1}.resid_post"]
        self.attribution = "direct logit attribution needs a pre-norm model: with norm_position='post' the residual " \
                           "stream is renormalised in every block and is not a sum of the parts" \
            if model.config.norm_position != "pre" else \
            {"embed": "embed", "heads": "layers.*.attn.head_out", "cross_heads": None, "scale": "ln_final.scale",
             "mlps": None if model.layers[0].attention_only else "layers.*.mlp_out"}
        self.scores, self.attentions = "layers.{}.attn.scores", [f"L{i}" for i in range(self.layers)]
        self.depends_points = ("embed", *(f"layers.{i}.resid_post" for i in range(self.layers)))
        self.depends_measure = "gradient x input of log p(target)"

    def prompt(self, ids, name: str) -> torch.Tensor:
        return as_batch(self.model, ids, name)

    def run(self, taps=None, rows=1, ids=None, hidden=False):
        return self.model((self.ids if ids is None else ids).expand(rows, -1), return_hidden=hidden, taps=taps)

    def readout(self, x, cache):
        return self.model.lm_head(self.model.ln_final(x))

    def lens_stack(self, cache):
        return cache.accumulated_resid()[:, 0]

    def lens_targets(self):
        if self.target is not None:
            return self.ids.new_full((self.positions,), self.target)
        return torch.cat((self.ids[0, 1:], self.ids.new_full((1,), -1)))  # the actual next token

    def patch_points(self, where):
        point = {"resid_pre": "resid_pre", "mlp_out": "mlp_out", "head_out": "attn.head_out"}[where]
        return [f"L{i}" for i in range(self.layers)], [[f"layers.{i}.{point}"] for i in range(self.layers)], \
            "position", self.positions

    def base(self, ids=None, read=(), upto=None):
        """The run of positions 0..upto, keeping its KV cache and the residual entering each layer."""
        ids = (self.ids if ids is None else ids)[:, :None if upto is None else upto + 1]
        taps, kv = Taps(read=[*read, "layers.*.resid_pre"]), self.model.new_kv_cache()
        with torch.no_grad():
            logits = self.model(ids, kv_cache=kv, taps=taps)[0]
        return Base(ids, logits, taps.cache, kv, taps.cache.stack("layers.*.resid_pre")[:, 0])

    def grow_prefix(self, kv: KVCache, start: int, per_group: int) -> KVCache:
        """The cache of positions 0..start-1 under the rows present at each layer: at layer l the groups
        0..l, ``per_group`` rows each, every row reading the base run's keys and values."""
        prefix = KVCache(self.layers)
        if start:
            for layer in range(self.layers):
                present = per_group * (layer + 1)
                prefix.keys[layer] = kv.keys[layer][:, :, :start].expand(present, -1, -1, -1)
                prefix.values[layer] = kv.values[layer][:, :, :start].expand(present, -1, -1, -1)
        return prefix

    def run_rows(self, base, groups, per_group, start, edits):
        """Group g's rows join the batch at layer g with the base run's residual there, carrying only
        the positions from ``start`` on, over the base run's cache of the earlier ones (attention is
        causal: those are the base run's in every row); the last layer keeps only the last position,
        where the logits are read: (rows, 1, vocab)."""
        n, last = base.ids.shape[1] - start, self.layers - 1
        enter = {g: base.resid[g, start:].expand(per_group, n, -1) for g in range(groups)}
        if n > 1:
            edits = {**edits, f"layers.{last}.attn.q": lambda q, point: q[..., -1:, :],
                     f"layers.{last}.resid_mid": lambda x, point: x[:, -1:]}
        with torch.no_grad():
            hidden = self.model(base.ids[:0, start:], kv_cache=self.grow_prefix(base.kv, start, per_group),
                                return_hidden=True, taps=Taps(enter=enter, edit=edits))
            return self.model.lm_head(hidden[:, -1:])

    def measured(self, logits, position):
        return logits[:, -1]

    def writable(self, name):
        """A layer's entering residual: in :meth:`run_rows` rows join every layer's batch, which the
        join (a concatenation) makes a new tensor there."""
        return name.endswith(".resid_pre")

    def patch_chunks(self, columns, per_column):
        """Consecutive positions a.. per batch, few enough that rows x carried positions stay under
        TOKENS_PER_PASS; a row carries only the positions from its batch's first on (:meth:`run_rows`)."""
        chunk = max(1, min(max(1, columns // 8), TOKENS_PER_PASS // max(1, per_column * columns)))
        for start in range(0, columns, chunk):
            yield start, torch.arange(start, min(columns, start + chunk), device=self.ids.device)


class EncoderDecoder(Family):
    """An encoder-decoder reading one source and its target: the positions are the decoder's steps,
    BOS + target read, target + EOS predicted."""

    seq2seq = True
    where = ("source", "encoder", "decoder", "context")
    default_where, default_position = "encoder", 0

    def __init__(self, model, src_ids, target):
        self.model, self.config, self.vocab = model, model.config, model.config.tgt_vocab_size
        self.ids, self.layers = source_ids(model, src_ids), model.config.num_decoder_layers
        target = greedy_target(model, self.ids) if target is None else target
        target = [check_token(self.vocab, t, "target token") for t in
                  (target.tolist() if isinstance(target, torch.Tensor) else list(target))]
        if model.max_target_length is not None and len(target) + 1 > model.max_target_length:
            raise ValueError(f"the target has {len(target)} tokens; this model reads at most "
                             f"{model.max_target_length - 1}")
        self.tgt_in = torch.tensor([BOS_ID, *target], device=self.ids.device)
        self.predicted = torch.tensor([*target, EOS_ID], device=self.ids.device)
        self.positions = len(self.tgt_in)
        self.depends_points, self.depends_measure = ("encoder.embed",), "||d log p(y_t) / d e_s||_2"

    def prompt(self, ids, name: str) -> torch.Tensor:
        return source_ids(self.model, ids, name)

    def run(self, taps=None, rows=1, ids=None, hidden=False):
        ids = self.ids if ids is None else ids
        return self.model(ids[None].expand(rows, -1), self.tgt_in[None].expand(rows, -1), return_hidden=hidden,
                          taps=taps)

    def _patch_rows(self, where: str, encoder: list[list[str]], decoder: list[list[str]]):
        layers = lambda rows: [f"L{i}" for i in range(len(rows))]
        if where == "source":
            return ["embedding"], [["encoder.embed"]], "source", len(self.ids)
        if where == "encoder":
            return layers(encoder), encoder, "source", len(self.ids)
        return layers(decoder), decoder, "decoder", self.positions


class TransformerEncoderDecoder(EncoderDecoder):
    def __init__(self, model, src_ids, target):
        super().__init__(model, src_ids, target)
        self.final_norm = model.decoder.ln_final
        self.lens_points = ["decoder.layers.*.resid_pre", f"decoder.layers.{self.layers - 1}.resid_post"]
        self.attribution = "direct logit attribution needs a pre-norm Transformer decoder (a sum of parts); this " \
                           "model is transformer, post-norm: use lens, patch or knockout instead" \
            if self.config.norm_position != "pre" else \
            {"embed": "decoder.layers.0.resid_pre", "heads": "decoder.layers.*.self_attn.head_out",
             "cross_heads": "decoder.layers.*.cross_attn.head_out", "mlps": "decoder.layers.*.mlp_out",
             "scale": "decoder.ln_final.scale"}
        self.scores, self.attentions = "decoder.layers.{}.cross_attn.scores", [f"L{i}" for i in range(self.layers)]

    def readout(self, x, cache):
        return self.model.lm_head(self.model.decoder.final_norm(x))

    def lens_stack(self, cache):
        pre = cache.stack("decoder.layers.*.resid_pre")[:, 0]
        return torch.cat((pre, cache[f"decoder.layers.{self.layers - 1}.resid_post"]))

    def patch_points(self, where):
        point = "resid_pre" if where == "decoder" else "cross_attn_out"
        encoder = [[f"encoder.layers.{i}.resid_pre"] for i in range(self.config.num_encoder_layers)]
        return self._patch_rows(where, encoder, [[f"decoder.layers.{i}.{point}"] for i in range(self.layers)])


class RecurrentEncoderDecoder(EncoderDecoder):
    """The RNN, LSTM and GRU encoder-decoders; with attention, one attention reads the top decoder
    layer's states (the plain RNN's decoder sees the source only through its initial state)."""

    def __init__(self, model, src_ids, target):
        super().__init__(model, src_ids, target)
        self.lens_points = ["decoder.embed", "decoder.layers.*.state", "encoder.output"]
        self.attribution = f"direct logit attribution needs a pre-norm Transformer decoder (a sum of parts); this " \
                           f"model is {self.config.arch}: its recurrence is not a sum of parts; use lens, patch " \
                           "or knockout instead"
        self.scores, self.attentions = "decoder.cross_attn.scores", ["attention"] if model.attention is not None else []
        if model.attention is not None:
            self.paths = ("all", "attention", "state")

    def readout(self, x, cache):
        if self.model.attention is not None:  # the model's own attention and combination, then the output layer
            memory = cache["encoder.output"].expand(x.shape[0], -1, -1)
            x = self.model.attention(x, memory, self.model.attention.prepare_keys(memory))
        return self.model.lm_head(x)

    def lens_stack(self, cache):
        return torch.cat((cache["decoder.embed"], cache.stack("decoder.layers.*.state")[:, 0]))

    def patch_points(self, where):
        states = lambda side, n: [[f"{side}.layers.{i}.state"] + ([f"{side}.layers.{i}.cell"] if
                                                                  self.config.cell == "lstm" else []) for i in range(n)]
        if where != "context":
            return self._patch_rows(where, states("encoder", self.config.num_encoder_layers),
                                    states("decoder", self.layers))
        if self.model.attention is not None:
            return ["context"], [["decoder.context"]], "decoder", self.positions
        return [f"L{i}" for i in range(self.layers)], [["decoder.initial"]] * self.layers, "initial", 1

    def state_layer(self, name, row):
        return row if name == "decoder.initial" else None

    def depends_edits(self, path):
        """An RNN with attention's two routes: "attention" cuts the decoder's starting state from the
        graph, "state" the encoder states the attention reads."""
        cut = {"attention": "decoder.initial", "state": "encoder.output"}.get(path)
        detach = lambda value, point: tuple(x.detach() for x in value) if isinstance(value, tuple) else value.detach()
        return {} if cut is None else {cut: detach}


def source_ids(model, ids, name: str = "source") -> torch.Tensor:
    """A source (S,) of an encoder-decoder's source vocabulary, checked."""
    ids = torch.as_tensor(ids, device=model_device(model))
    if ids.dim() == 2 and ids.shape[0] == 1:
        ids = ids[0]
    if ids.dim() != 1 or ids.numel() == 0:
        raise ValueError(f"the {name} must be one non-empty sequence of ids, got shape {tuple(ids.shape)}")
    check_token_ids(ids, model.config.src_vocab_size, name)
    return ids.long()


def greedy_target(model, src_ids) -> list[int]:
    """An encoder-decoder's own output for the source (greedy, without EOS): the default target of
    every measurement."""
    from seqlab.seq2seq.decoding import decode_limit, translate_ids

    model = unwrap_model(model)
    src = source_ids(model, src_ids)
    limit = decode_limit(model, [len(src) + 1])
    if model.max_target_length is not None:  # the decoder then reads BOS + the output: one position more
        limit = min(limit, model.max_target_length - 1)
    (out,) = translate_ids(model, [src.tolist()], max_len=limit, device=src.device)
    return [t for t in out if t != EOS_ID]
